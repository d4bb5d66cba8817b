"""`p4cc analyse`: the analysis of arms that ran outside p4cc, e.g. on a
Tofino behind real servers (docs/tofino.md). The results of a simulated
run, handed over as hardware would hand them (plan.json and the arm
folders, the collector's depths in Tofino's 80-byte cells), give the same
numbers."""
import csv
import json
import shutil
from pathlib import Path

import pytest

from p4cc_exp import series
from p4cc_exp.cli import main as p4cc_main
from p4cc_exp.registry import get
from p4cc_exp.runner import RunError, analyse, run
from p4cc_exp.simexec import find_sim


def as_tofino(queue_csv: Path) -> None:
    """Rewrite a collector's postcards (our run's Parquet) as the CSV a
    Tofino's postcards would have made: depths in cells (a 1500-byte
    packet takes 19)."""
    rows = series.rows(queue_csv)
    queue_csv.with_suffix(".parquet").unlink(missing_ok=True)
    with open(queue_csv, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows:
            r["enq_qdepth"] = str(int(r["enq_qdepth"]) * 19)
            r["deq_qdepth"] = str(int(r["deq_qdepth"]) * 19)
            r["depth_unit"] = "cells80"
            w.writerow(r)


def test_external_tofino_results_analyse_like_ours(tmp_path):
    try:
        find_sim()
    except Exception as e:
        pytest.fail(f"{e} (make setup builds it)")
    ran = tmp_path / "ran"
    run(get("dctcp-queue"), target="sim", out=str(ran),
        overrides=["duration=2", "warmup=0.5", "datapaths=user"])
    hw = tmp_path / "hw"
    hw.mkdir()
    shutil.copy(ran / "plan.json", hw / "plan.json")
    arms = json.loads((ran / "plan.json").read_text())["arms"]
    for arm in arms:
        shutil.copytree(ran / arm["name"], hw / arm["name"])
        as_tofino(hw / arm["name"] / "queue.csv")
    assert p4cc_main(["analyse", str(hw), "--target", "tofino"]) == 0
    a = json.loads((ran / "summary.json").read_text())
    b = json.loads((hw / "summary.json").read_text())
    assert b["executor"] == "external" and b["target"] == "tofino"
    assert b["summary"] == a["summary"]
    assert [v["measured"] for v in b["verdicts"]] == [v["measured"] for v in a["verdicts"]]
    assert (hw / "report.html").exists()


def test_analyse_needs_a_plan_and_arms(tmp_path):
    with pytest.raises(RunError, match="plan.json"):
        analyse(tmp_path)
    run(get("dctcp-queue"), plan_only=True, out=str(tmp_path))
    with pytest.raises(RunError, match="arm folders"):
        analyse(tmp_path)


def test_analysing_again_keeps_what_the_monitor_voided(tmp_path):
    """A folder p4cc ran, analysed again (say after a change to the
    analysis): an arm its fidelity monitor found lagging keeps its void
    verdicts; a pass or fail from a run that could not keep up is never made."""
    run(get("dctcp-queue"), target="sim", out=str(tmp_path),
        overrides=["duration=1", "warmup=0.3", "datapaths=user"])
    first = json.loads((tmp_path / "summary.json").read_text())
    assert first["counts"]["void"] == 0
    lagging = {"exact": False, "ok": {"queue": False, "rate": True},
               "violations": {"queue": ["switch s1 port 2: p99 departure slip 900 µs > 120 µs"],
                              "rate": []}}
    (tmp_path / "user-dctcp" / "fidelity.json").write_text(json.dumps(lagging))
    assert p4cc_main(["analyse", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "summary.json").read_text())
    void = [v for v in again["verdicts"] if v["status"] == "void"]
    assert void and all(v["sensitive"] == "queue" and "user-dctcp" in v["arms"] for v in void)
    assert "p99 departure slip 900 µs" in void[0]["reason"]
    assert again["executor"] == first["executor"] == "virtual time"
    # an unreadable record stops the analysis rather than being dropped
    (tmp_path / "user-dctcp" / "fidelity.json").write_text("{not json")
    with pytest.raises(RunError, match="unreadable fidelity record"):
        analyse(tmp_path)
