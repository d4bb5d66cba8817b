"""The virtual-time executor end to end: a plan run by p4cc-sim under the
controller, results byte-identical for the same plan and seed, bad input
refused in one line before anything runs."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from p4cc_exp.registry import get
from p4cc_exp.runner import RunError, make_plan, run
from p4cc_exp.simexec import find_sim

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim_bin():
    try:
        return find_sim()
    except Exception as e:
        pytest.fail(f"{e} (make setup builds it)")


def arm_files(folder: Path) -> dict[str, bytes]:
    """Every result file of every arm, except logs (ports, wall times)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "logs" not in p.parts and p.suffix in (".csv", ".parquet", ".json")
            and p.parent != folder}


def test_same_plan_same_seed_byte_identical(tmp_path, sim_bin):
    over = ["duration=2", "warmup=0.5", "datapaths=user"]
    a = run(get("dctcp-queue"), target="sim", overrides=over, out=str(tmp_path / "a"))
    plan = tmp_path / "a" / "plan.json"
    b = run(target="sim", plan=__import__("p4cc_topo.plan", fromlist=["Plan"]).Plan.load(plan),
            out=str(tmp_path / "b"))
    fa, fb = arm_files(tmp_path / "a"), arm_files(tmp_path / "b")
    assert fa.keys() == fb.keys() and len(fa) >= 10, sorted(fa)
    assert [k for k in fa if fa[k] != fb[k]] == []
    # each simulator ended by itself once done (a profiling build writes
    # its profile only then: make sim-pgo), not killed
    logs = sorted((tmp_path / "a").glob("*/logs/sim.log"))
    assert logs and all(p.read_text().rstrip().endswith("p4cc-sim exited with 0") for p in logs), \
        [p.read_text()[-200:] for p in logs]
    # and it is a real run: DCTCP's queue near K at full utilisation
    s = json.loads((tmp_path / "a" / "summary.json").read_text())["summary"]["user-dctcp"]
    assert s["utilisation"] > 0.95 and abs(s["queue_median_pkts"] - 20) <= 5, s
    assert a.exists() and b.exists()


def test_progress_names_the_arm_being_simulated():
    import io
    from p4cc_exp.progress import Progress
    from p4cc_exp.runner import _ArmProgress
    arm = make_plan(get("dctcp-queue"), ["datapaths=user"]).arms[0]
    out = io.StringIO()
    _ArmProgress(Progress(100, stream=out), arm).simulated(0.5, 2.0, 1e6, 1.0)
    last = out.getvalue().strip().splitlines()[-1]
    assert last.startswith(f"[p4cc] {arm.label}: simulated 0.500 of 2.000 s"), last


def test_progress_while_flows_finish_extrapolates_no_wall_time():
    # After the schedule the run goes on until the senders are done, with
    # a cap of seconds: a wall time extrapolated to the cap read hours.
    import io
    from p4cc_exp.progress import Progress
    out = io.StringIO()
    p = Progress(100, stream=out)
    p.phase("HPCC, hadoop50", 10)
    p.simulated(0.022, 15.016, 1.9e6, 60.0, True)
    last = out.getvalue().strip().splitlines()[-1]
    assert "finish (until 15.016 s at most)" in last and "wall left" not in last, last


def test_a_different_seed_gives_a_different_run(tmp_path, sim_bin):
    # Random loss is what the seed steers (the switch's loss draws).
    over = ["duration=2", "warmup=0.3", "losses=0.02", "protocols=cubic"]
    run(get("pcc-lossy"), target="sim", overrides=over + ["seed=1"], out=str(tmp_path / "a"))
    run(get("pcc-lossy"), target="sim", overrides=over + ["seed=2"], out=str(tmp_path / "b"))
    fa, fb = arm_files(tmp_path / "a"), arm_files(tmp_path / "b")
    assert any(fa[k] != fb[k] for k in fa if k.endswith("queue.parquet"))


def test_kernel_bbr_runs_as_p4ccs_bbr(sim_bin):
    from p4cc_exp.simexec import VirtualTime
    plan = make_plan(get("fct"), ["protocols=bbr", "flows=10"])
    notes = VirtualTime().prepare(plan)
    assert any("kernel TCP (bbr)" in n for n in notes), notes


def test_kernel_tcp_without_a_model_is_one_line(tmp_path, sim_bin):
    # Every kernel algorithm a plan may name has a model; the simulator still
    # refuses, in one line, one that does not (a plan edited by hand).
    plan = make_plan(get("fct"), ["protocols=cubic", "flows=10"]).to_json()
    bad = json.loads(json.dumps(plan))
    for a in bad["arms"][0]["agents"]:
        if a["datapath"] == "kernel" and a.get("cc"):
            a["cc"] = "vegas"
    p = tmp_path / "p.json"
    p.write_text(json.dumps(bad))
    r = subprocess.run([str(sim_bin), str(p), "--arm", bad["arms"][0]["name"], "--out",
                        str(tmp_path / "o")], capture_output=True, text=True, input="", timeout=60)
    assert r.returncode == 1 and "kernel TCP 'vegas' has no implementation" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_the_simulator_refuses_bad_plans_before_running(tmp_path, sim_bin):
    plan = make_plan(get("dctcp-queue")).to_json()
    bad = json.loads(json.dumps(plan))
    bad["arms"][0]["agents"][2]["cc"] = "nosuchcc"
    bad["arms"][0]["agents"][2]["datapath"] = "user"
    p = tmp_path / "p.json"
    p.write_text(json.dumps(bad))
    r = subprocess.run([str(sim_bin), str(p), "--arm", "kernel-dctcp", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, input="", timeout=60)
    assert r.returncode == 1 and "nosuchcc" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    bad = json.loads(json.dumps(plan))
    bad["arms"][0]["frobnicate"] = 1
    p.write_text(json.dumps(bad))
    r = subprocess.run([str(sim_bin), str(p), "--arm", "kernel-dctcp", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, input="", timeout=60)
    assert r.returncode == 1 and "frobnicate" in r.stderr
    bad = json.loads(json.dumps(plan))
    bad["arms"][0]["topology"]["links"][2]["buffer_pkts"] = 0
    p.write_text(json.dumps(bad))
    r = subprocess.run([str(sim_bin), str(p), "--arm", "kernel-dctcp", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, input="", timeout=60)
    assert r.returncode == 1 and "a buffer of 0 packets" in r.stderr, r.stderr


def test_time_left_in_virtual_time_counts_arms_not_simulated_seconds(monkeypatch):
    """pcc-fct's arms carry the same flows over simulated durations nine
    times apart and take about the same wall time: in virtual time, time
    left is the arms still to run at the finished arms' mean, and is not
    guessed before one has finished; in the lab it is the planned
    remainder."""
    import io
    from p4cc_exp import progress as prog
    clock = [0.0]
    monkeypatch.setattr(prog.time, "monotonic", lambda: clock[0])
    durations = [270, 90, 30]                       # simulated s, loads 0.1 / 0.3 / 0.9
    total = 8 + sum(d + 8 for d in durations) + 6
    sim = prog.Progress(total, stream=io.StringIO(), arms=3, tail_s=6)
    lab = prog.Progress(total, stream=io.StringIO())
    for p in (sim, lab):
        p.phase("setting up", 8)
    assert sim.left() is None and sim.fraction() == 0.0
    assert "time left after the first arm" in sim.stream.getvalue()
    clock[0] = 0.5
    for p in (sim, lab):
        p.phase("arm 1", durations[0])
    clock[0] = 2.0                                  # the first arm took 2 s in all
    for p in (sim, lab):
        p.arm_done()
        p.phase("setting up", 8)
    assert abs(sim.left() - (2 * 2.0 + 6)) < 1e-9, sim.left()
    assert abs(lab.left() - (total - 8 - durations[0])) < 1e-9, lab.left()
    clock[0] = 3.0                                  # halfway through the second arm
    assert abs(sim.left() - (2 * 2.0 - 1.0 + 6)) < 1e-9, sim.left()
    assert "(~0:10 left)" in sim.stream.getvalue().splitlines()[-1]
    for p in (sim, lab):
        p.arm_done()
        p.arm_done()
        p.phase("analysis and plots", 6)
    clock[0] = 5.0
    assert abs(sim.left() - 4.0) < 1e-9 and 0.0 < sim.fraction() <= 1.0
