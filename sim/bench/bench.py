"""The simulator's benchmark (make bench): a dumbbell with 2 DCTCP flows
at 100 Mb/s, 1, 10 and 100 Gb/s, RTT 100 µs, K per the DCTCP paper's
guideline for the rate — the same scenario ns-3.37 runs in
sim/bench/ns3/ (run.sh) — printing simulated seconds per wall second,
events per second and the queue and utilisation beside ns-3's.

    .venv/bin/python sim/bench/bench.py [--rates 10G,100G] [--no-ns3] [--repeat N]

It prints figures; it asserts nothing. Both simulators report CPU time
beside wall time, since the machine may be shared: the CPU time of the
simulation proper (ns-3's Simulator::Run, p4cc-sim's event loop), which
the speed ratio compares, and for p4cc-sim also its whole process's. With --repeat N both
run N rounds, one after the other, and the speed ratio is given per round
and as the median of the rounds: one round's ratio moves by a few percent
with the machine.
"""
from __future__ import annotations

import argparse
import json
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


def p4cc_run(rate: str, out: Path) -> dict:
    k, buf, dur, warm = SCENARIOS[rate]
    plan = make_plan(get("dctcp-queue"), [
        f"rate={rate}bps", "rtt=100us", f"k={k}", f"buffer={buf}", "datapaths=user",
        f"duration={dur}", f"warmup={warm}",
        # postcards sampled 1 in 999: the benchmark measures the packet path,
        # not the collector's CSV writing
        "sample=999"])
    plan = replace(plan, arms=tuple(a for a in plan.arms if a.name == "user-dctcp"))
    run(plan=plan, target="sim", out=str(out))
    done = json.loads((out / "user-dctcp/logs/sim_done.json").read_text())
    s = json.loads((out / "summary.json").read_text())["summary"]["user-dctcp"]
    return {"simulator": "p4cc-sim", "rate": rate, "sim_s": done["sim_s"], "wall_s": done["wall_s"],
            "cpu_s": done.get("cpu_s"), "run_cpu_s": done.get("run_cpu_s"), "events": done["events"],
            "queue_median_pkts": s["queue_median_pkts"], "queue_p95_pkts": s["queue_p95_pkts"],
            "utilisation": s["utilisation"]}


def ns3_runs(rates: list[str]) -> dict[str, dict]:
    r = subprocess.run(["bash", str(ROOT / "sim/bench/ns3/run.sh"), *rates], capture_output=True,
                       text=True)
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("{") and '"simulator"' in line:
            d = json.loads(line)
            rate = next((k for k, v in RATE_BPS.items() if abs(v - d["rate_bps"]) < 1), None)
            if rate:
                out[rate] = d
    if not out:
        print(f"ns-3 did not run: {(r.stderr or r.stdout).strip()[-300:]}", file=sys.stderr)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="100M,1G,10G,100G")
    ap.add_argument("--no-ns3", action="store_true", help="skip the ns-3 comparison")
    ap.add_argument("--repeat", type=int, default=1, metavar="N", help="rounds of both simulators (default 1)")
    a = ap.parse_args()
    if a.repeat < 1:
        print("--repeat: at least 1 round", file=sys.stderr)
        return 2
    rates = [r for r in a.rates.split(",") if r]
    for r in rates:
        if r not in SCENARIOS:
            print(f"unknown rate {r} ({', '.join(SCENARIOS)})", file=sys.stderr)
            return 2
    print(f"# CPU: {cpu_model()}; dumbbell, 2 DCTCP flows, RTT 100 µs")
    head = (f"{'rate':>5} {'who':>8} {'sim s':>6} {'wall s':>7} {'CPU s':>7} {'sim/wall':>9} "
            f"{'wall/sim':>9} {'events':>10} {'ev/s CPU':>9} {'q med':>6} {'q p95':>6} {'util':>6}")
    ratios: dict[str, list[float]] = {r: [] for r in rates}
    for k in range(a.repeat):
        if a.repeat > 1:
            print(f"# round {k + 1} of {a.repeat}", flush=True)
        ours = {}
        with tempfile.TemporaryDirectory() as tmp:
            for r in rates:
                ours[r] = p4cc_run(r, Path(tmp) / r)
        ns3 = {} if a.no_ns3 else ns3_runs(rates)
        print(head)
        for r in rates:
            for who, d in (("p4cc", ours.get(r)), ("ns-3", ns3.get(r))):
                if d:
                    print_row(r, who, d)
            if r in ours and r in ns3:
                ratio = cpu_per_sim_s(ns3[r]) / cpu_per_sim_s(ours[r])
                ratios[r].append(ratio)
                print(f"{r:>5}  p4cc is {ratio:.1f}× faster than ns-3 per simulated second (CPU time)", flush=True)
    if a.repeat > 1:
        for r, xs in ratios.items():
            if xs:
                each = ", ".join(f"{x:.1f}" for x in xs)
                print(f"{r:>5}  median of {len(xs)} rounds: p4cc is {statistics.median(xs):.1f}× faster "
                      f"than ns-3 (rounds: {each})")
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
    print(f"{rate:>5} {who:>8} {d['sim_s']:6.3g} {d['wall_s']:7.2f} {cpu:7.2f} "
          f"{d['sim_s'] / d['wall_s']:9.4f} {d['wall_s'] / d['sim_s']:9.2f} "
          f"{d.get('events', 0):10d} {d.get('events', 0) / cpu:9.0f} "
          f"{d['queue_median_pkts']:6.0f} {d['queue_p95_pkts']:6.0f} {d['utilisation']:6.3f}")
    if d.get("run_cpu_s") and d.get("cpu_s"):
        print(f"{'':>5} {'':>8} (the whole process, with loading, programming and writing results: "
              f"{d['cpu_s']:.2f} CPU s)")


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
