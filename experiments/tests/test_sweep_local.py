"""`p4cc sweep` on a local Ray runtime: a finished point is never run
again (a deleted one is, alone), a failing point is retried and then
reported with its error while every other point is kept, and the results
table and report are there. Each sweep starts Ray (a few seconds)."""
import json
import shutil
import sys

import pytest

from p4cc_exp.registry import get
from p4cc_exp.simexec import find_sim
from p4cc_exp.sweep import sweep

sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from sweeputil import CHEAP, attempts, point_meta  # noqa: E402


@pytest.fixture(scope="module")
def sim_bin():
    try:
        return find_sim()
    except Exception as e:
        pytest.fail(f"{e} (make setup builds it)")


def table(out):
    import pyarrow.parquet as pq
    return pq.read_table(out / "results.parquet").to_pylist()


def test_resume_runs_only_what_is_missing(tmp_path, sim_bin):
    out = tmp_path / "sw"
    exp = get("dctcp-theory")
    _, n = sweep(exp, ["k=20,40"], seeds=2, target="sim", overrides=CHEAP, out=str(out))
    assert n == {"done": 4, "failed": 0, "ran": 4, "total": 4}
    first = point_meta(out)
    assert len(first) == 4 and len(attempts(out)) == 4
    rows = table(out)
    assert len(rows) == 4 and {r["status"] for r in rows} == {"done"}
    assert {r["param.seed"] for r in rows} == {1, 2} and {r["grid.k"] for r in rows} == {"20", "40"}
    assert all(r["summary.peak_pkts"] > 0 and r["verdict.N=2: the queue's peak is K + N"]
               for r in rows)
    assert (out / "report.html").read_text().count("<img") >= 4
    request = json.loads((out / "sweep.json").read_text())
    assert request["grid"] == {"k": ["20", "40"]} and len(request["points"]) == 4

    # the same command again: nothing runs (Ray is not even started)
    _, n = sweep(exp, ["k=20,40"], seeds=2, target="sim", overrides=CHEAP, out=str(out))
    assert n["ran"] == 0 and n["done"] == 4 and len(attempts(out)) == 4

    # one point lost: only that one runs
    gone = sorted(first)[1]
    shutil.rmtree(out / "points" / gone)
    _, n = sweep(exp, ["k=20,40"], seeds=2, target="sim", overrides=CHEAP, out=str(out))
    assert n["ran"] == 1 and n["done"] == 4
    again = point_meta(out)
    assert [a["key"] for a in attempts(out)[4:]] == [gone]
    assert {k: v["run_id"] for k, v in again.items() if k != gone} == \
        {k: v["run_id"] for k, v in first.items() if k != gone}
    assert again[gone]["run_id"] != first[gone]["run_id"]


def test_a_failing_point_is_retried_then_reported(tmp_path, sim_bin, monkeypatch):
    out = tmp_path / "sw"
    exp = get("dctcp-theory")
    # a simulator that fails its first start for k=20 only, and always for k=30
    state = tmp_path / "state"
    state.mkdir()
    wrapper = tmp_path / "flaky-sim"
    wrapper.write_text(f"""#!/bin/sh
plan="$1"
if grep -q '"k": 30' "$plan"; then echo "sim: broken for k=30" >&2; exit 3; fi
if grep -q '"k": 20' "$plan" && [ ! -e {state}/tried ]; then
  touch {state}/tried; echo "sim: a passing failure" >&2; exit 3
fi
exec {sim_bin} "$@"
""")
    wrapper.chmod(0o755)
    monkeypatch.setenv("P4CC_SIM_BIN", str(wrapper))
    _, n = sweep(exp, ["k=20,30,40"], target="sim", overrides=CHEAP, out=str(out), retries=2)
    assert n["done"] == 2 and n["failed"] == 1
    rows = {r["grid.k"]: r for r in table(out)}
    assert rows["20"]["status"] == "done" and rows["20"]["attempt"] == 2
    assert rows["40"]["status"] == "done" and rows["40"]["attempt"] == 1
    bad = rows["30"]
    assert bad["status"] == "failed" and "p4cc-sim exited (3)" in bad["error"]
    assert bad["attempt"] == 3 and "\n" not in bad["error"]
    fail = json.loads((out / "failures" / f"{bad['point']}.json").read_text())
    assert fail["attempts"] == 3 and "broken for k=30" in fail["log_tail"] + fail["error"]
    assert "Failed" in (out / "report.html").read_text()
    assert not list((out / "tmp").iterdir())       # failed tries leave nothing behind
    # mended, the same command runs the failed point only
    monkeypatch.setenv("P4CC_SIM_BIN", str(sim_bin))
    before = point_meta(out)
    _, n = sweep(exp, ["k=20,30,40"], target="sim", overrides=CHEAP, out=str(out), retries=2)
    assert n == {"done": 3, "failed": 0, "ran": 1, "total": 3}
    assert {k: v["run_id"] for k, v in point_meta(out).items() if k in before} == \
        {k: v["run_id"] for k, v in before.items()}
    assert not (out / "failures" / f"{bad['point']}.json").exists()


def test_two_sweeps_over_one_folder(tmp_path, sim_bin):
    """Started together over the same --out: each point folder ends up
    whole and once, the table and report readable, nothing left in tmp/."""
    import os
    import subprocess
    out = tmp_path / "sw"
    cmd = [sys.executable, "-m", "p4cc_exp.cli", "sweep", "dctcp-theory", "--target", "sim",
           "--grid", "k=20,30,40,50", *sum((["--set", s] for s in CHEAP), []), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-2000:]
    metas = point_meta(out)
    assert len(metas) == 4
    assert all((out / "points" / k / "summary.json").exists() for k in metas)
    assert {r["status"] for r in table(out)} == {"done"}
    assert not list((out / "tmp").iterdir())
    assert (out / "report.html").read_text().endswith("</html>")


def test_the_folders_token_is_set_once(tmp_path):
    """Of two sweeps that claim one folder, the first's token stands and
    the second takes it (a hard link cannot replace a file)."""
    from p4cc_exp.sweep import claim_token
    assert claim_token(tmp_path, "first") == "first"
    assert claim_token(tmp_path, "second") == "first"
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.token"]


def test_the_report_keeps_its_plots_and_drops_an_earlier_grids(tmp_path, sim_bin):
    """The report removes only plots it did not draw (another grid's), so
    a sweep writing the same report at the same time loses none of its
    own; no temporary file is left behind."""
    out = tmp_path / "sw"
    exp = get("dctcp-theory")
    sweep(exp, ["k=20,40"], seeds=1, target="sim", overrides=CHEAP, out=str(out))
    mine = sorted(p.name for p in out.glob("sweep_*.png"))
    assert mine
    (out / "sweep_of_an_earlier_grid.png").write_bytes(b"stale")
    sweep(exp, ["k=20,40"], seeds=1, target="sim", overrides=CHEAP, out=str(out))
    assert sorted(p.name for p in out.glob("sweep_*.png")) == mine
    assert not list(out.glob(".*.tmp"))
