"""dctcp-queue end to end at a small scale, on the embedded target: real
namespaces, the real switch, real agents — started, as on a machine fresh
from a reboot, with p4cc's BPF DCTCP *not* registered."""
import json
import os
import subprocess
import time

import pytest

from p4cc_exp.executors import host_agent
from p4cc_exp.registry import get
from p4cc_exp.runner import run
from p4cc_topo.kernel_cc import BPF_DCTCP, available

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces)")


@pytest.fixture
def no_bpf_dctcp():
    """The state of a freshly booted machine: p4cc_dctcp unregistered (a
    kernel with its own dctcp module never needs it)."""
    if "dctcp" in available():
        pytest.skip("this kernel has a dctcp module: the BPF DCTCP is never registered")
    subprocess.run([host_agent(), "bpf-dctcp", "unload"], capture_output=True, text=True)
    for _ in range(300):  # sockets that used it keep it listed until they close
        if BPF_DCTCP not in available():
            return
        time.sleep(0.1)
    pytest.fail(f"{BPF_DCTCP} stays registered after unload (sockets still use it?)")


def test_dctcp_queue_small_from_an_unregistered_kernel(tmp_path, no_bpf_dctcp):
    report = run(get("dctcp-queue"), target="embedded", out=str(tmp_path / "run"),
                 overrides=["duration=8", "warmup=2"])
    assert BPF_DCTCP in available(), "the run did not register the BPF DCTCP"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    verdicts = {v["name"]: v for v in summary["verdicts"]}
    assert len(verdicts) == 8 and sum(summary["counts"].values()) == 8, summary["counts"]
    # The paper's headline on both datapaths: DCTCP and TCP at line rate,
    # TCP's queue at the buffer. (The queue band is judged too, but an 8 s
    # run's percentiles are not the full run's: not asserted here.) A passing
    # verdict must meet the paper's value. A verdict the fidelity monitor
    # voided (this machine fell behind, docs/fidelity.md) measured the
    # machine, not DCTCP: its value is not judged, only its reason — how often
    # that happens is a benchmark figure (make bench).
    voided = []
    for d in ("kernel", "user"):
        for name in (f"{d}: DCTCP keeps the link busy", f"{d}: cubic keeps the link busy",
                     f"{d}: cubic's queue reaches the buffer"):
            v = verdicts[name]
            why = f"{name}: {v}\nsummary: {json.dumps(summary['summary'], indent=1)}"
            assert v["status"] in ("pass", "void"), why
            if v["status"] == "pass":
                assert v["ok"] is True, why
            else:
                assert v["reason"].startswith("emulation lagged"), why
                voided.append(f"{name}: {v['reason']}")
    # The embedded switch gives its ports their delay itself: no link
    # emulator relays its frames (that is bmv2's, test_bmv2_links.py).
    for arm in ("kernel-dctcp", "user-dctcp"):
        logs = tmp_path / "run" / arm / "logs"
        ep = json.loads((logs / "switches.json").read_text())["endpoints"]["s1"]
        assert ep["target"] == "embedded" and not ep["link_admin_addr"] and not ep["link_ports"], ep
        assert not list(logs.glob("link-*.log")), sorted(p.name for p in logs.iterdir())
    assert report.exists() and (tmp_path / "run" / "queue_cdf.png").exists()
    assert (tmp_path / "run" / "params.json").exists() and (tmp_path / "run" / "plan.json").exists()
    if len(voided) == 6:
        pytest.skip("every headline verdict void (this machine lagged the run): " + voided[0])
