"""dctcp-queue end to end at a small scale, on the embedded target: real
namespaces, the real switch, real agents. Asserts the paper's result."""
import json
import os

import pytest

from p4cc_exp.registry import get
from p4cc_exp.runner import run

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces)")


def test_dctcp_queue_small(tmp_path):
    report = run(get("dctcp-queue"), target="embedded", out=str(tmp_path / "run"),
                 overrides=["duration=8", "warmup=2"])
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    failed = [name for name, ok in summary["checks"].items() if not ok]
    assert summary["checks"], "no checks were evaluated"
    assert not failed, f"checks failed: {failed}\nsummary: {json.dumps(summary['summary'], indent=1)}"
    assert report.exists() and (tmp_path / "run" / "queue_cdf.png").exists()
    assert (tmp_path / "run" / "params.json").exists()
