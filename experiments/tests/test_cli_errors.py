"""Every user error of p4cc's command lines is one line on stderr and a
non-zero exit, never a traceback."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
P4CC = str(ROOT / ".venv/bin/p4cc")
PY = str(ROOT / ".venv/bin/python")


def one_line_error(args, env=None, code=None, needle=""):
    r = subprocess.run(args, capture_output=True, text=True, timeout=120,
                       env={**os.environ, **(env or {})}, cwd=ROOT)
    lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
    assert r.returncode != 0, f"{args}: exit 0\n{r.stdout}{r.stderr}"
    if code is not None:
        assert r.returncode == code, f"{args}: exit {r.returncode}: {r.stderr}"
    assert len(lines) == 1 and "Traceback" not in r.stderr, f"{args}:\n{r.stderr}"
    assert needle in lines[0], f"{args}: {lines[0]!r} lacks {needle!r}"
    return lines[0]


@pytest.mark.parametrize("args, needle", [
    (["run", "nope"], "unknown experiment"),
    (["run", "dctcp-queue", "--set", "rate=abc"], "not a number"),
    (["run", "dctcp-queue", "--set", "nope=1"], "unknown parameter"),
    (["run", "dctcp-queue", "--set", "rate=100Tbps"], "unknown rate unit"),
    (["run", "dctcp-queue", "--set", "warmup=20"], "warmup"),
    (["run", "dctcp-queue", "--scale", "paper", "--target", "embedded"], "virtual time"),
    (["run", "--plan", "/nonexistent/plan.json"], "cannot read"),
    (["run"], "give an experiment"),
    (["exec", "h1"], "needs a command"),
])
def test_run_errors(args, needle):
    one_line_error([P4CC, *args], needle=needle)


def _no_netem():
    from p4cc_topo.targets import netem_available
    if netem_available():
        pytest.skip("this kernel has netem: --links netem is not refused here")


def test_a_target_that_cannot_apply_a_property(tmp_path):
    _no_netem()
    fake = tmp_path / "simple_switch_grpc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    one_line_error([P4CC, "run", "dctcp-queue", "--target", "bmv2", "--links", "netem",
                    "--set", "rate=10Mbps", "--out", str(tmp_path / "o")],
                   env={"P4CC_BMV2_BIN": str(fake)}, needle="needs netem")


def test_a_missing_tool(tmp_path):
    one_line_error([P4CC, "run", "dctcp-queue", "--target", "bmv2", "--out", str(tmp_path / "o")],
                   env={"P4CC_BMV2_BIN": str(tmp_path / "none"), "PATH": "/usr/bin:/bin"},
                   needle="not installed")
    one_line_error([P4CC, "run", "dctcp-queue", "--target", "sim", "--out", str(tmp_path / "p")],
                   env={"P4CC_SIM_BIN": str(tmp_path / "none")}, needle="p4cc-sim is not built")


def test_a_bad_realtime_setting(tmp_path):
    one_line_error([P4CC, "run", "dctcp-queue", "--target", "embedded", "--out", str(tmp_path / "o")],
                   env={"P4CC_REALTIME": "yes"}, needle="P4CC_REALTIME='yes': one of all, switch, off")
    assert not (tmp_path / "o" / "kernel-dctcp").exists(), "nothing ran"


def test_a_bad_plan_file(tmp_path):
    p = tmp_path / "plan.json"
    p.write_text('{"schema": "p4cc.plan", "version": 99}')
    one_line_error([P4CC, "run", "--plan", str(p)], needle="version 99")


def test_lab_errors(tmp_path):
    one_line_error([P4CC, "up", "nosuchtopology"], needle="nosuchtopology")
    fake = tmp_path / "simple_switch_grpc"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    # Not bmv2 at all: it exits at once, and the error says so with its command.
    one_line_error([P4CC, "up", "dumbbell", "--target", "bmv2"],
                   env={"P4CC_BMV2_BIN": str(fake), "P4CC_BMV2_PPS": "20000"},
                   needle="bmv2 switch s1 exited with status 0 while starting")
    _no_netem()
    one_line_error([P4CC, "up", "dumbbell", "--target", "bmv2", "--links", "netem"],
                   env={"P4CC_BMV2_BIN": str(fake)}, needle="needs netem")


def test_ctl_errors():
    one_line_error([P4CC, "ctl", "set-k", "1"], env={"P4CC_ADDR": "127.0.0.1:1"}, needle="")
    one_line_error([P4CC, "ctl", "route", "--topology", "nosuch", "--addr", "127.0.0.1:1"],
                   needle="nosuch")


def test_ptf_without_the_target():
    one_line_error([PY, "ptf-tests/run.py", "--target", "bmv2"],
                   env={"P4CC_BMV2_BIN": "/nonexistent", "PATH": "/usr/bin:/bin"}, needle="bmv2")


def test_a_saved_paper_scale_plan_runs_in_virtual_time(tmp_path):
    """A plan keeps its scale: run with --plan it goes where `--scale paper`
    goes (virtual time), and a real-time target is refused."""
    out = tmp_path / "p"
    r = subprocess.run([P4CC, "run", "dctcp-queue", "--scale", "paper", "--plan-only",
                        "--out", str(out)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    plan = str(out / "plan.json")
    one_line_error([P4CC, "run", "--plan", plan, "--target", "embedded"], needle="virtual time")
    # no --target: the simulator is what it looks for (absent here on purpose)
    one_line_error([P4CC, "run", "--plan", plan, "--out", str(tmp_path / "r")],
                   env={"P4CC_SIM_BIN": str(tmp_path / "none")}, needle="p4cc-sim is not built")
