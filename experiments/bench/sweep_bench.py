"""What series in Parquet and `p4cc sweep` buy, in figures (nothing is
asserted):

  size      `make run`'s results folder (dctcp-queue at its defaults) as CSV,
            as Parquet, with --keep series and --keep summary. dctcp-queue's
            defaults run in real time (root, namespaces); this runs the same
            plan with --target sim, which writes the same files.
  paper     the 13 experiments at --scale paper: the disk estimate of each
            (from its plan, instantly), and with --run the disk each leaves
            after running (hours on a 2-core machine; pass names to run some)
  parallel  a 16-point virtual-time sweep against the same 16 plans run one
            after another: wall time of each and their ratio
  calibrate bytes per row of each series, CSV and Parquet (diskest's constants)

    python experiments/bench/sweep_bench.py [size|paper|parallel|calibrate ...]
    python experiments/bench/sweep_bench.py paper --run [EXPERIMENT ...]

Default: size, paper (estimates only), parallel. The simulator is
sim/target/release/p4cc-sim (P4CC_SIM_BIN to use another).
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parents[2] / "topologies"),
                str(HERE.parents[2] / "control")]

from p4cc_exp import diskest  # noqa: E402
from p4cc_exp.registry import EXPERIMENTS, get  # noqa: E402
from p4cc_exp.runner import make_plan, run  # noqa: E402


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


@contextlib.contextmanager
def env(**kw):
    old = {k: os.environ.get(k) for k in kw}
    os.environ.update({k: v for k, v in kw.items() if v is not None})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def quiet_run(**kw):
    with contextlib.redirect_stderr(io.StringIO()):
        return run(**kw)


def size(tmp: Path) -> None:
    print("== results folder of dctcp-queue at its defaults (make run's plan, --target sim)")
    exp = get("dctcp-queue")
    rows = []
    for name, keep, series in (("CSV (before)", "all", "csv"), ("Parquet, --keep all", "all", None),
                               ("Parquet, --keep series", "series", None),
                               ("--keep summary", "summary", None)):
        out = tmp / f"size-{keep}-{series}"
        t = time.monotonic()
        with env(P4CC_SERIES=series or "parquet"):
            quiet_run(exp=exp, target="sim", out=str(out), keep=keep)
        rows.append((name, du(out), time.monotonic() - t))
        if series == "csv":
            est = diskest.estimate(make_plan(exp), "all", csv=True)
            print(f"  (estimate from the plan: {diskest.human(est.kept)} as CSV)")
    base = rows[0][1]
    for name, n, wall in rows:
        print(f"  {name:24s} {diskest.human(n):>9s}  ({n / base:6.1%} of CSV; run {wall:.0f} s)")


def paper(tmp: Path, run_them: bool, names: list[str]) -> None:
    print("== the experiments at --scale paper: disk (estimate from each plan"
          + ("; measured after running" if run_them else "") + ")")
    total_est = total_csv = total_run = 0.0
    for eid, exp in EXPERIMENTS.items():
        if names and eid not in names:
            continue
        plan = make_plan(exp, scale="paper")
        est = diskest.estimate(plan)
        csv = diskest.estimate(plan, csv=True)
        total_est += est.kept
        total_csv += csv.kept
        line = (f"  {eid:18s} Parquet ~{diskest.human(est.kept):>9s} (CSV ~{diskest.human(csv.kept):>9s}),"
                f" peak ~{diskest.human(est.peak):>9s}")
        if run_them:
            out = tmp / f"paper-{eid}"
            t = time.monotonic()
            try:
                quiet_run(exp=exp, target="sim", scale="paper", out=str(out))
                n = du(out)
                total_run += n
                line += f" | ran: {diskest.human(n)} in {time.monotonic() - t:.0f} s"
            except Exception as e:  # a figure per experiment, whatever happens
                line += f" | failed: {str(e).splitlines()[0]}"
            shutil.rmtree(out, ignore_errors=True)
        print(line, flush=True)
    print(f"  total: Parquet ~{diskest.human(total_est)}, CSV ~{diskest.human(total_csv)}"
          + (f"; measured {diskest.human(total_run)}" if run_them else ""))


PARALLEL = dict(exp="dctcp-theory", grid=["k=20,24,28,32,36,40,44,48,52,56,60,64,68,72,76,80"],
                # 1 Gb/s, RTT 1 ms (C·RTT = 83 packets, as the paper's): a few
                # seconds of simulation per point, so that Ray's start (about
                # 6 s here) is a small part of the whole
                set=["ns=10", "rate=1Gbps", "rtt=1ms", "duration=8", "warmup=1"])


def parallel(tmp: Path) -> None:
    from p4cc_exp.sweep import sweep
    from p4cc_exp.sweepplan import expand, parse_grid
    exp = get(PARALLEL["exp"])
    points = expand(exp, parse_grid(PARALLEL["grid"]), 1, "sim", PARALLEL["set"])
    print(f"== {len(points)} virtual-time points of {exp.id} ({' '.join(PARALLEL['set'])}, "
          f"{PARALLEL['grid'][0]}) on {os.cpu_count()} cores")
    from p4cc_topo.plan import Plan
    # one after another as a user would: `p4cc run --plan` per plan
    t = time.monotonic()
    for i, p in enumerate(points):
        d = tmp / f"cli-{i}"
        d.mkdir()
        Plan.from_json(p.plan).write(d / "plan.json")
        subprocess.run([sys.executable, "-m", "p4cc_exp.cli", "run", "--plan", str(d / "plan.json"),
                        "--target", "sim", "--out", str(d), "--keep", "series"],
                       check=True, capture_output=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                           sys.path[:3] + [os.environ.get("PYTHONPATH", "")])})
    cli = time.monotonic() - t
    print(f"  one after another, `p4cc run --plan` each: {cli:.1f} s", flush=True)
    # and in one process (no interpreter start per plan): the harder baseline
    t = time.monotonic()
    for i, p in enumerate(points):
        quiet_run(plan=Plan.from_json(p.plan), target="sim", out=str(tmp / f"seq-{i}"),
                  keep="series")
    seq = time.monotonic() - t
    print(f"  one after another in one process: {seq:.1f} s", flush=True)
    load = open("/proc/loadavg").read().split()[0]
    t = time.monotonic()
    sweep(exp, PARALLEL["grid"], target="sim", overrides=PARALLEL["set"], out=str(tmp / "sweep"),
          stream=io.StringIO())
    par = time.monotonic() - t
    print(f"  p4cc sweep (local Ray, including its start): {par:.1f} s")
    print(f"  ratio sweep / `p4cc run --plan` each: {par / cli:.2f}; sweep / one process: "
          f"{par / seq:.2f} (load average before the "
          f"sweep {load}, after {open('/proc/loadavg').read().split()[0]}: other work on the "
          "machine takes cores the sweep would use)")


def calibrate(tmp: Path) -> None:
    print("== bytes per series row, CSV and Parquet (diskest.ROW_CSV / ROW_PARQUET)")
    from p4cc_exp import columnar
    out = tmp / "calibrate"
    with env(P4CC_SERIES="csv"):
        quiet_run(exp=get("dctcp-theory"), target="sim", out=str(out),
                  overrides=["ns=10", "duration=3", "warmup=1"])
    for name in ("queue", "rtt", "tput"):
        files = list(out.rglob(f"{name}.csv"))
        rows = sum(max(0, sum(1 for _ in open(f)) - 1) for f in files)
        csv_b = sum(f.stat().st_size for f in files)
        pq_b = sum(columnar.convert(f).stat().st_size for f in files)
        print(f"  {name:6s} {rows:8d} rows: CSV {csv_b / max(rows, 1):5.1f} B/row, "
              f"Parquet {pq_b / max(rows, 1):5.1f} B/row")


def main(argv: list[str]) -> int:
    what = [a for a in argv if not a.startswith("--") and a in ("size", "paper", "parallel",
                                                                   "calibrate")]
    names = [a for a in argv if a in EXPERIMENTS]
    what = what or ["size", "paper", "parallel"]
    tmp = Path(tempfile.mkdtemp(prefix="p4cc-sweep-bench-"))
    try:
        for w in what:
            if w == "paper":
                paper(tmp, "--run" in argv, names)
            else:
                globals()[w](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
