"""The simulator's benchmark (make bench): a dumbbell with 2 DCTCP flows
at 100 Mb/s, 1, 10 and 100 Gb/s, RTT 100 µs, K per the DCTCP paper's
guideline for the rate — the same scenario ns-3.37 runs in
sim/bench/ns3/ (run.sh) and htsim in sim/bench/htsim/ (run.sh, when an
htsim built outside the repository is present) — printing simulated
seconds per wall second, events per second, peak memory and the queue
and utilisation beside theirs.

    .venv/bin/python sim/bench/bench.py [--rates 10G,100G] [--no-ns3] [--no-htsim] [--repeat N]
        [--baseline PATH]

It prints figures; it asserts nothing. Every simulator reports CPU time
beside wall time, since the machine may be shared: the CPU time of the
simulation proper (ns-3's Simulator::Run, htsim's event loop, p4cc-sim's
event loop), which the speed ratios compare, and for p4cc-sim also its
whole process's. With --repeat N they run N rounds, one after the other,
and the ratios are given per round and as the median of the rounds: one
round's ratio moves by a few percent with the machine. The load average
is printed at the start and the end. --baseline PATH also runs another
p4cc-sim build (say, the commit before a change) in each round, right
before this tree's, so a change is measured against it in one run.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / d) for d in ("experiments", "topologies", "control")]

from p4cc_exp.registry import get  # noqa: E402
from p4cc_exp.runner import make_plan, run  # noqa: E402

# rate: (K, buffer, simulated s, warm-up s). K: the DCTCP paper's 20 at
# 1 Gb/s and 65 at 10 Gb/s, the seed's 20 at 100 Mb/s, ×10 per decade above
# 10 Gb/s; the buffer never drops; the durations are ns-3's in run.sh.
SCENARIOS = {
    "100M": (20, 1000, 5.0, 1.0),
    "1G": (20, 1000, 2.0, 0.5),
    "10G": (65, 1000, 0.5, 0.1),
    "100G": (650, 6500, 0.06, 0.045),
}
RATE_BPS = {"100M": 100e6, "1G": 1e9, "10G": 10e9, "100G": 100e9}


def p4cc_run(rate: str, out: Path, binary: str | None = None) -> dict:
    """One p4cc-sim run of the scenario; `binary`: another p4cc-sim build
    than this tree's (P4CC_SIM_BIN)."""
    k, buf, dur, warm = SCENARIOS[rate]
    plan = make_plan(get("dctcp-queue"), [
        f"rate={rate}bps", "rtt=100us", f"k={k}", f"buffer={buf}", "datapaths=user",
        f"duration={dur}", f"warmup={warm}",
        # postcards sampled 1 in 999: the benchmark measures the packet path,
        # not the collector's CSV writing
        "sample=999"])
    plan = replace(plan, arms=tuple(a for a in plan.arms if a.name == "user-dctcp"))
    saved = os.environ.get("P4CC_SIM_BIN")
    try:
        if binary:
            os.environ["P4CC_SIM_BIN"] = binary
        run(plan=plan, target="sim", out=str(out))
    finally:
        if binary:
            if saved is None:
                os.environ.pop("P4CC_SIM_BIN", None)
            else:
                os.environ["P4CC_SIM_BIN"] = saved
    done = json.loads((out / "user-dctcp/logs/sim_done.json").read_text())
    s = json.loads((out / "summary.json").read_text())["summary"]["user-dctcp"]
    return {"simulator": "p4cc-sim", "rate": rate, "sim_s": done["sim_s"], "wall_s": done["wall_s"],
            "cpu_s": done.get("cpu_s"), "run_cpu_s": done.get("run_cpu_s"), "events": done["events"],
            "maxrss_kb": done.get("maxrss_kb"), "pgo": done.get("pgo"),
            "queue_median_pkts": s["queue_median_pkts"], "queue_p95_pkts": s["queue_p95_pkts"],
            "utilisation": s["utilisation"]}


def reference_runs(who: str, script: str, rates: list[str]) -> dict[str, dict]:
    """One JSON line per rate from a reference simulator's run.sh."""
    r = subprocess.run(["bash", str(ROOT / script), *rates], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("{") and '"simulator"' in line:
            d = json.loads(line)
            rate = next((k for k, v in RATE_BPS.items() if abs(v - d["rate_bps"]) < 1), None)
            if rate:
                out[rate] = d
    if not out:
        why = (r.stderr or r.stdout).strip().splitlines()
        print(f"# {who} did not run: {why[-1][-300:] if why else f'exit {r.returncode}'}", flush=True)
    return out


def ns3_runs(rates: list[str]) -> dict[str, dict]:
    return reference_runs("ns-3", "sim/bench/ns3/run.sh", rates)


def htsim_runs(rates: list[str]) -> dict[str, dict]:
    """htsim, built outside the repository (sim/bench/htsim/README.md);
    skipped with the reason when its binary is absent."""
    return reference_runs("htsim", "sim/bench/htsim/run.sh", rates)


def loadavg() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="100M,1G,10G,100G")
    ap.add_argument("--no-ns3", action="store_true", help="skip the ns-3 comparison")
    ap.add_argument("--no-htsim", action="store_true", help="skip the htsim comparison")
    ap.add_argument("--baseline", metavar="PATH", help="another p4cc-sim build to run beside this tree's")
    ap.add_argument("--repeat", type=int, default=1, metavar="N", help="rounds of both simulators (default 1)")
    a = ap.parse_args()
    if a.baseline and not os.access(a.baseline, os.X_OK):
        print(f"--baseline: {a.baseline} is not an executable", file=sys.stderr)
        return 2
    if a.repeat < 1:
        print("--repeat: at least 1 round", file=sys.stderr)
        return 2
    rates = [r for r in a.rates.split(",") if r]
    for r in rates:
        if r not in SCENARIOS:
            print(f"unknown rate {r} ({', '.join(SCENARIOS)})", file=sys.stderr)
            return 2
    print(f"# CPU: {cpu_model()}; dumbbell, 2 DCTCP flows, RTT 100 µs")
    print(f"# load average at the start: {loadavg()}", flush=True)
    head = (f"{'rate':>5} {'who':>8} {'sim s':>6} {'wall s':>7} {'CPU s':>7} {'sim/wall':>9} "
            f"{'wall/sim':>9} {'CPU/sim':>8} {'events':>10} {'ev/s CPU':>9} {'peak MB':>7} "
            f"{'q med':>6} {'q p95':>6} {'util':>6}")
    ratios: dict[str, list[float]] = {r: [] for r in rates}
    vs_htsim: dict[str, list[float]] = {r: [] for r in rates}
    for k in range(a.repeat):
        if a.repeat > 1:
            print(f"# round {k + 1} of {a.repeat}", flush=True)
        ours, base = {}, {}
        with tempfile.TemporaryDirectory() as tmp:
            for r in rates:
                if a.baseline:
                    base[r] = p4cc_run(r, Path(tmp) / f"base-{r}", a.baseline)
                ours[r] = p4cc_run(r, Path(tmp) / r)
        ns3 = {} if a.no_ns3 else ns3_runs(rates)
        hts = {} if a.no_htsim else htsim_runs(rates)
        print(head)
        for r in rates:
            for who, d in (("baseline", base.get(r)), ("p4cc", ours.get(r)), ("ns-3", ns3.get(r)),
                           ("htsim", hts.get(r))):
                if d:
                    print_row(r, who, d)
            if r in base and r in ours:
                x = cpu_per_sim_s(base[r]) / cpu_per_sim_s(ours[r])
                print(f"{r:>5}  p4cc is {x:.2f}× faster than the baseline build (CPU time; events "
                      f"{base[r]['events']} vs {ours[r]['events']})", flush=True)
            if r in ours and r in ns3:
                ratio = cpu_per_sim_s(ns3[r]) / cpu_per_sim_s(ours[r])
                ratios[r].append(ratio)
                print(f"{r:>5}  p4cc is {ratio:.1f}× faster than ns-3 per simulated second (CPU time)", flush=True)
            if r in ours and r in hts:
                x = cpu_per_sim_s(ours[r]) / cpu_per_sim_s(hts[r])
                vs_htsim[r].append(x)
                print(f"{r:>5}  p4cc takes {x:.1f}× htsim's time per simulated second (CPU time; htsim "
                      f"{hts[r].get('packet_bytes', '?')}-byte packets)", flush=True)
    if a.repeat > 1:
        for r, xs in ratios.items():
            if xs:
                each = ", ".join(f"{x:.1f}" for x in xs)
                print(f"{r:>5}  median of {len(xs)} rounds: p4cc is {statistics.median(xs):.1f}× faster "
                      f"than ns-3 (rounds: {each})")
        for r, xs in vs_htsim.items():
            if xs:
                each = ", ".join(f"{x:.1f}" for x in xs)
                print(f"{r:>5}  median of {len(xs)} rounds: p4cc takes {statistics.median(xs):.1f}× htsim's "
                      f"time (rounds: {each})")
    print(f"# load average at the end: {loadavg()}")
    return 0


def run_cpu(d: dict) -> float:
    """CPU seconds of the simulation proper: ns-3's cpu_s is its time in
    Simulator::Run, p4cc-sim's run_cpu_s its time in the event loop (both
    without setting up or writing results)."""
    return d.get("run_cpu_s") or d.get("cpu_s") or d["wall_s"]


def cpu_per_sim_s(d: dict) -> float:
    return run_cpu(d) / d["sim_s"]


def print_row(rate: str, who: str, d: dict) -> None:
    cpu = run_cpu(d)
    rss = d.get("maxrss_kb")
    peak = f"{rss / 1024:7.1f}" if rss else f"{'-':>7}"
    print(f"{rate:>5} {who:>8} {d['sim_s']:6.3g} {d['wall_s']:7.2f} {cpu:7.2f} "
          f"{d['sim_s'] / d['wall_s']:9.4f} {d['wall_s'] / d['sim_s']:9.2f} {cpu / d['sim_s']:8.3f} "
          f"{d.get('events', 0):10d} {d.get('events', 0) / cpu:9.0f} {peak} "
          f"{d['queue_median_pkts']:6.0f} {d['queue_p95_pkts']:6.0f} {d['utilisation']:6.3f}")
    if d.get("run_cpu_s") and d.get("cpu_s"):
        print(f"{'':>5} {'':>8} (the whole process, with loading, programming and writing results: "
              f"{d['cpu_s']:.2f} CPU s; {build_of(d)})")


def build_of(d: dict) -> str:
    """How the p4cc-sim that gave ``d`` was built (its "done" event)."""
    return "profile-guided build, make sim-pgo" if d.get("pgo") else "plain release build"


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip() + f" ×{__import__('os').cpu_count()}"
    except OSError:
        pass
    return "unknown"


if __name__ == "__main__":
    sys.exit(main())
