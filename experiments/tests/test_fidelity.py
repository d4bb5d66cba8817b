"""The fidelity monitor under load: a short emulated run on the ordinary
scheduler with CPU hogs beside it (started and stopped here, at normal
priority) is reported as lagging and its sensitive verdicts void; without them, verdicts are void
exactly where the monitor saw lag. Bounded in time: two short runs."""
import json
import os
import subprocess
import sys
import time

import pytest

from p4cc_exp.fidelity import judge_arm
from p4cc_exp.registry import get
from p4cc_exp.runner import make_plan, run

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces)")

# Senders on p4cc's transport report their own pacing and wake-ups; kernel
# TCP's only the switch's. 4 s of traffic per arm.
SHORT = ["duration=4", "warmup=1", "datapaths=user"]


@pytest.fixture
def hogs():
    """One busy loop per CPU, at normal priority, for the test's duration."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(os.cpu_count() or 1)]
    time.sleep(0.5)
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def fidelity_of(folder):
    s = json.loads((folder / "summary.json").read_text())
    return s, s["fidelity"]


def test_a_run_beside_cpu_hogs_is_void_with_the_reason(tmp_path, hogs, monkeypatch):
    # On the ordinary scheduler, whatever the environment says: a realtime
    # switch and agents (p4cc_topo/realtime.py) are meant to keep up beside
    # the hogs, and this test is about the monitor seeing lag.
    monkeypatch.setenv("P4CC_REALTIME", "0")
    run(get("dctcp-queue"), target="embedded", overrides=SHORT, out=str(tmp_path / "r"))
    s, fid = fidelity_of(tmp_path / "r")
    violations = [v for f in fid.values() for k in ("queue", "rate") for v in f["violations"][k]]
    assert violations, f"the monitor saw no lag beside {len(hogs)} hogs: {json.dumps(fid, indent=1)}"
    assert s["counts"]["void"] > 0
    void = [v for v in s["verdicts"] if v["status"] == "void"]
    assert all(v["reason"].startswith("emulation lagged") for v in void)
    assert any(w in " ".join(violations) for w in ("slip", "wake-up", "pacing", "ring"))


def test_a_run_is_void_exactly_where_the_monitor_saw_lag(tmp_path):
    """Without hogs: whatever this machine manages, a verdict is void iff
    an arm it reads lagged on the sensitivity it has (how often a quiet
    machine lags is a figure of make bench, not a pass/fail here)."""
    run(get("dctcp-queue"), target="embedded", overrides=SHORT, out=str(tmp_path / "r"))
    s, fid = fidelity_of(tmp_path / "r")
    assert set(fid) == {"user-dctcp", "user-cubic"}
    for v in s["verdicts"]:
        lagged = [a for a in (v["arms"] or fid) if not fid[a]["ok"][v["sensitive"]]]
        assert (v["status"] == "void") == bool(lagged), (v, fid)
        if lagged:
            assert all(fid[a]["violations"][v["sensitive"]] for a in lagged)
            assert v["reason"].startswith(f"emulation lagged ({lagged[0]})"), v["reason"]


def test_bounds_follow_the_bottleneck_rate():
    arm = make_plan(get("dctcp-queue")).arms[0]      # 100 Mb/s: one packet is 120 µs
    rec = {"switches": {"s1": {"3": {"rx_pkts": 1000, "ring_drops": 0, "lag_clamps": 0,
                                     "slip_ns": {"p99": 200_000}}}}, "agents": {}}
    out = judge_arm(dict(rec), arm, "embedded")
    assert out["ok"] == {"queue": False, "rate": True} and abs(out["tau_us"] - 120) < 1e-9
    rec["switches"]["s1"]["3"]["slip_ns"]["p99"] = 2_000_000
    assert judge_arm(dict(rec), arm, "embedded")["ok"]["rate"] is False
    rec["switches"]["s1"]["3"].update(slip_ns={"p99": 10_000}, ring_drops=5)
    out = judge_arm(dict(rec), arm, "embedded")
    assert out["ok"] == {"queue": False, "rate": False}
    # the ring's drops never reached the switch: 5 of 1005 arrived frames
    assert "5 of 1005 arriving frames (0.5%) dropped by the full receive ring" in out["violations"]["rate"][0]
    rec = {"agents": {"h1": {"pacing": {"samples": 1000, "mean_error_pct": 12.0},
                             "wake_late": {"samples": 10, "p99_us": 50}}}, "switches": {}}
    out = judge_arm(rec, arm, "embedded")
    assert out["ok"] == {"queue": True, "rate": False} and "pacing error" in out["violations"]["rate"][0]
    assert judge_arm({"exact": True}, arm, "sim")["ok"] == {"queue": True, "rate": True}


def test_an_unfaithful_arm_runs_again_and_its_first_run_is_kept(tmp_path, hogs, monkeypatch):
    """--retry-void: the monitor, not the numbers, decides a rerun; the
    unfaithful run stays beside the judged one and the report names it."""
    from dataclasses import replace
    monkeypatch.setenv("P4CC_REALTIME", "0")
    plan = make_plan(get("dctcp-queue"), SHORT)
    plan = replace(plan, arms=tuple(a for a in plan.arms if a.name == "user-dctcp"))
    run(plan=plan, target="embedded", out=str(tmp_path / "r"), retry_void=1)
    out = tmp_path / "r"
    s, fid = fidelity_of(out)
    kept = out / "user-dctcp.void-1"
    first = json.loads((kept / "fidelity.json").read_text())
    assert first["violations"]["queue"] or first["violations"]["rate"], first
    # the unfaithful run's own results are all there, not only its record
    assert (kept / "measure.json").exists() and any(kept.rglob("*.parquet"))
    meta = json.loads((out / "params.json").read_text())
    assert [r["kept"] for r in meta["retried"]["user-dctcp"]] == ["user-dctcp.void-1"]
    assert any("user-dctcp: run 1 was not faithful" in n for n in meta["notes"])
    assert "run 1 was not faithful" in (out / "report.html").read_text()
    # what is judged is the last run's record
    last = json.loads((out / "user-dctcp" / "fidelity.json").read_text())
    assert fid["user-dctcp"]["violations"] == last["violations"]


def test_retry_void_must_not_be_negative(tmp_path):
    from p4cc_exp.params import ParamError
    with pytest.raises(ParamError, match="--retry-void"):
        run(get("dctcp-queue"), target="sim", out=str(tmp_path / "r"), retry_void=-1)
