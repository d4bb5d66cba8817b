"""The simulator's fabric benchmark (make bench): dc-fct's paper fabric
(4 leaves × 8 hosts at 100 Gb/s, 2 spines at 400 Gb/s, 1 µs links) under
DCTCP, at hadoop50 (50 % load) and hadoop30-incast (30 % load and HPCC's
incast mix), run by p4cc-sim and, in the same run, by the PowerTCP
authors' ns-3 simulator (inet-tub/ns3-datacenter, ns-3.39: its
powertcp-evaluation-burst program, DCTCP = algorithm 8 with its window)
on the very flows p4cc-sim ran, and by htsim (Broadcom/csg-htsim), the
speed anchor, on the same topology and flows.

    P4CC_NS3DC=/path/to/ns-3.39 .venv/bin/python sim/bench/fabric_bench.py
        [--scenarios hadoop50,hadoop30-incast] [--no-ns3] [--no-htsim] [--repeat N]

P4CC_NS3DC names the reference's ns-3.39 directory, built outside the
repository (docs/experiments.md, int-incast's recipe; docs/simulator.md).
HTSIM_FABRIC names an htsim program built outside the repository
(default /opt/htsim/bin/htsim_dctcp_fabric; sim/bench/htsim/README.md:
what it must read and print). Without either, one line says so and the
others' figures stand alone. It prints figures; it asserts nothing.

What is compared: the same flows (every arrival of p4cc's arm, measured
window, tail and incast), each simulator's whole process — CPU time
(user + system) and wall time. The two do not simulate the same span:
p4cc-sim stops when its flows have finished, the reference at a stop
time set past the last start (START_S + last start + MARGIN_S), so the
ratio is of CPU seconds for the flows, not per simulated second. p4cc's
event loop alone (run_cpu_s) is shown beside its process. The reference
is lossless (PFC, one shared buffer) and its DCTCP is a rate-based NIC
variant, so the two do not carry the same packets: docs/simulator.md.
htsim reads the reference's topology and flow files, marks at p4cc's K
on enqueue, gives every switch port p4cc's buffer and every host 1000
packets of transmit queue, and sends each flow with its DCTCP on one
shortest path chosen by a hash of the flow (ECMP). With --repeat N every
simulator runs N rounds, and each ratio is given per round and as the
median of the rounds.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import build_of, cpu_model, loadavg  # sim/bench/bench.py; it also puts experiments/ on the path
from p4cc_exp import series, slowdown
from p4cc_exp.registry import get
from p4cc_exp.runner import make_plan, run
from p4cc_exp.simexec import find_sim
from p4cc_topo.plan import ArmPlan

SCENARIOS = ("hadoop50", "hadoop30-incast")
NS3_BIN = "build/examples/PowerTCP/ns3.39-powertcp-evaluation-burst-optimized"
#: Unix time of p4cc-sim's virtual time 0 (sim/src/world.rs UNIX_BASE_NS).
T0_NS = 1_700_000_000 * 10**9
#: The reference's traffic starts START_S in (it routes statically: nothing
#: to settle, and its FCTs do not change with the offset) and it stops
#: MARGIN_S after the last start; its last flows finish 1.1–1.5 ms after
#: that start in these scenarios. Idle simulated time still costs it CPU
#: (its program prints the first leaf's ports every 1.5 minimum RTTs):
#: about 2 CPU s per simulated second.
START_S, MARGIN_S = 0.01, 0.01
#: 1500-byte frames (no INT header for DCTCP), as p4cc's MTU, in which
#: p4cc's K is counted; the reference's ECN thresholds are in KB.
PAYLOAD, FRAME = 1452, 1500
#: The reference's DCTCP: a step at K (KMIN = KMAX, PMAX 1) on every port
#: rate, as p4cc's plan marks the 400 Gb/s ports at the host rate's K.
#: Keys at the program's own defaults are left out (and HAS_WIN, VAR_WIN and
#: CC_MODE, which the command line sets); the rest is config-burst.txt's,
#: DCQCN's among them: the program reads them whatever the algorithm, and
#: RATE_AI, RATE_HAI and RP_TIMER have no usable default.
CONFIG = """PACKET_PAYLOAD_SIZE {payload}
TOPOLOGY_FILE {d}/topology.txt
FLOW_FILE {d}/flows.txt
FCT_OUTPUT_FILE {d}/fct.txt
PFC_OUTPUT_FILE {d}/pfc.txt
SIMULATOR_STOP_TIME {stop:.9f}
ALPHA_RESUME_INTERVAL 1
RP_TIMER 900
EWMA_GAIN 0.00390625
FAST_RECOVERY_TIMES 1
RATE_AI 50Mb/s
RATE_HAI 100Mb/s
L2_CHUNK_SIZE 4000
L2_ACK_INTERVAL 1
MULTI_RATE 0
KMAX_MAP {kmap}
KMIN_MAP {kmap}
PMAX_MAP {pmap}
BUFFER_SIZE 15
"""
ARGS = ["--algorithm=8", "--wien=false", "--delayWien=false", "--windowCheck=1"]
TIME = "/usr/bin/time"
#: htsim's fabric program (sim/bench/htsim/README.md) unless HTSIM_FABRIC names one.
HTSIM_DEFAULT = "/opt/htsim/bin/htsim_dctcp_fabric"
#: A host's transmit queue in p4cc-sim (sim/src/world.rs NIC_QUEUE_PKTS).
HOST_QUEUE_PKTS = 1000


def p4cc_run(scenario: str, out: Path) -> tuple[dict, ArmPlan]:
    """One p4cc-sim run of dc-fct's DCTCP arm at the paper scale; its
    figures and the arm (for the reference's inputs)."""
    plan = make_plan(get("dc-fct"), [f"scenarios={scenario}", "protocols=dctcp"], scale="paper")
    run(plan=plan, target="sim", out=str(out))
    arm = plan.arms[0]
    done = json.loads((out / arm.name / "logs/sim_done.json").read_text())
    senders = [a for a in done["agents"] if a["role"] == "sender"]
    return {"simulator": "p4cc-sim", "events": done["events"], "sim_s": done["sim_s"],
            "wall_s": done["wall_s"], "cpu_s": done["cpu_s"], "run_cpu_s": done["run_cpu_s"],
            "maxrss_kb": done["maxrss_kb"], "pgo": done.get("pgo"), "flows": sum(a["flows_started"] for a in senders),
            "flows_done": sum(a["flows_complete"] for a in senders)}, arm


def ns3_inputs(arm: ArmPlan, armdir: Path, d: Path) -> dict:
    """The reference's topology, flow and config files in ``d`` for p4cc's
    finished arm (its results in ``armdir``); the stop time, the flows,
    and p4cc's K and buffer on the fabric's ports (packets)."""
    topo = arm.topo()
    hosts = topo.role("hosts")
    ids = {n: i for i, n in enumerate(hosts + list(topo.switches))}
    links = []
    for ln in topo.links:
        a, b = ln.a.node, ln.b.node
        if topo.collector in (a, b):
            continue
        if b in hosts:
            a, b = b, a  # host first: only then is it its leaf's down port (what the program prints)
        links.append((a not in hosts, ids[a], ids[b], ln.rate_bps, ln.delay_us))
    # hosts' links before the fabric's, as the reference's topology files
    links.sort(key=lambda x: x[0])
    rates = sorted({x[3] for x in links})
    links = [f"{a} {b} {r}bps {us}us 0" for _, a, b, r, us in links]
    sw = [str(ids[s]) for s in topo.switches]
    (d / "topology.txt").write_text(f"{len(ids)} {len(sw)} {len(sw)} {len(links)}\n{' '.join(sw)}\n"
                                    + "\n".join(links) + "\n")
    paths = slowdown.PathCache(topo, "dctcp")
    flows = [f for f in series.flows([armdir / a.folder for a in arm.senders()]) if f["size_bytes"]]
    flows.sort(key=lambda f: (int(f["start_unix_ns"]), int(f["flow_id"])))
    # The program wants them by start time; pg 3 is its data class; each
    # flow its own destination port (16 bits), hence its own ECMP hash, as
    # p4cc's flows have their own ports.
    assert len(flows) < 64_000, "destination ports run out"
    starts = [START_S + (int(f["start_unix_ns"]) - T0_NS) / 1e9 for f in flows]
    lines = [f"{ids[paths.host(f['src'])]} {ids[paths.host(f['dst'])]} 3 {1000 + i} "
             f"{f['size_bytes']} {s:.9f}" for i, (f, s) in enumerate(zip(flows, starts))]
    (d / "flows.txt").write_text(f"{len(lines)}\n" + "\n".join(lines) + "\n")
    ks = {p.ecn_k_pkts for s in arm.switches.values() for p in s.ports.values()
          if p.peer != topo.collector}
    if len(ks) != 1 or None in ks:
        raise ValueError(f"{arm.name}: one K on every fabric port expected, not {sorted(map(str, ks))}")
    k = ks.pop()
    k_kb = round(k * FRAME / 1000)
    depths = {p.depth_pkts for s in arm.switches.values() for p in s.ports.values()
              if p.peer != topo.collector}
    if len(depths) != 1 or None in depths:
        raise ValueError(f"{arm.name}: one buffer on every fabric port expected, not "
                         f"{sorted(map(str, depths))}")
    stop = max(starts) + MARGIN_S
    (d / "config.txt").write_text(CONFIG.format(
        payload=PAYLOAD, d=d, stop=stop,
        kmap=" ".join([str(len(rates))] + [f"{r} {k_kb}" for r in rates]),
        pmap=" ".join([str(len(rates))] + [f"{r} 1" for r in rates])))
    return {"stop": stop, "flows": len(lines), "k_pkts": k, "buffer_pkts": depths.pop()}


def timed_run(cmd: list[str], d: Path, prefix: str) -> tuple[float, float]:
    """Runs ``cmd`` in ``d`` with its stdout and stderr in files there
    (``prefix`` + stdout.txt, stderr.txt): (wall s, CPU s of that child
    and what it waited for, from wait4); RuntimeError with the last line
    of its stderr if it fails."""
    with open(d / f"{prefix}stdout.txt", "w") as out, open(d / f"{prefix}stderr.txt", "w") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, cwd=d, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
    rc = os.waitstatus_to_exitcode(status)
    if rc != 0:
        why = (d / f"{prefix}stderr.txt").read_text(errors="replace").strip().splitlines()
        raise RuntimeError(f"exit {rc}: {why[-1][-300:] if why else 'no message'}")
    return wall, ru.ru_utime + ru.ru_stime


def ns3_run(binary: Path, d: Path, stop: float, flows: int, **_) -> dict:
    """The reference on the inputs in ``d``: its process's CPU time from
    wait4 (that child and what it waited for), its peak memory from
    /usr/bin/time, whose child it is (ru_maxrss survives execve: from this
    process it would be this process's peak); its stdout (tens of
    MB of port prints) and stderr go to files, as they would."""
    cmd = [str(binary), f"--conf={d}/config.txt", *ARGS]
    timed = os.access(TIME, os.X_OK)
    if timed:
        cmd = [TIME, "-f", "%M", "-o", str(d / "maxrss.txt"), *cmd]
    wall, cpu = timed_run(cmd, d, "")
    done = (d / "fct.txt").read_text().count("\n")
    return {"simulator": "ns3-datacenter", "events": None, "sim_s": stop, "wall_s": wall,
            "cpu_s": cpu, "flows": flows,
            "maxrss_kb": int((d / "maxrss.txt").read_text().split()[-1]) if timed else None,
            "flows_done": done}


def htsim_run(binary: Path, d: Path, stop: float, flows: int, k_pkts: int,
              buffer_pkts: int) -> dict:
    """htsim's fabric program on the reference's topology and flow files in
    ``d``: its process's CPU time from wait4, its loop's and its peak memory
    from the JSON it writes; its stdout (a line per flow) goes to a file."""
    cmd = [str(binary), "--topology", str(d / "topology.txt"), "--flows", str(d / "flows.txt"),
           "--K", str(k_pkts), "--buffer", str(buffer_pkts), "--host-buffer", str(HOST_QUEUE_PKTS),
           "--packet-bytes", str(FRAME), "--stop", f"{stop:.9f}", "--json", str(d / "htsim.json")]
    wall, cpu = timed_run(cmd, d, "htsim-")
    got = json.loads((d / "htsim.json").read_text())
    return {"simulator": "htsim", "events": got["events"], "sim_s": stop, "wall_s": wall,
            "cpu_s": cpu, "run_cpu_s": got["cpu_s"], "flows": flows,
            "maxrss_kb": got["maxrss_kb"], "flows_done": got["flows_done"]}


def htsim_binary() -> tuple[Path | None, str]:
    """htsim's fabric program, or why there is none."""
    binary = Path(os.environ.get("HTSIM_FABRIC") or HTSIM_DEFAULT)
    if not os.access(binary, os.X_OK):
        return None, (f"no executable at {binary} (build htsim outside the repository and point "
                      "HTSIM_FABRIC at its fabric program: sim/bench/htsim/README.md)")
    return binary, ""


def reference() -> tuple[Path | None, str]:
    """The reference's binary, or why there is none."""
    root = os.environ.get("P4CC_NS3DC")
    if not root:
        return None, ("P4CC_NS3DC is not set (the ns-3.39 directory of inet-tub/ns3-datacenter, "
                      "built outside the repository: docs/simulator.md)")
    binary = Path(root) / NS3_BIN
    if not os.access(binary, os.X_OK):
        return None, f"no {binary} (P4CC_NS3DC={root})"
    return binary, ""


HEAD = (f"{'scenario':>15} {'who':>5} {'events':>11} {'sim s':>8} {'wall s':>7} {'CPU s':>7} "
        f"{'loop s':>7} {'peak MB':>7} {'flows done/all':>14}")


def print_row(sc: str, who: str, d: dict) -> None:
    ev = f"{d['events']:11d}" if d.get("events") else f"{'-':>11}"
    loop = f"{d['run_cpu_s']:7.2f}" if d.get("run_cpu_s") else f"{'-':>7}"
    peak = f"{d['maxrss_kb'] / 1024:7.1f}" if d.get("maxrss_kb") else f"{'-':>7}"
    print(f"{sc:>15} {who:>5} {ev} {d['sim_s']:8.4f} {d['wall_s']:7.2f} {d['cpu_s']:7.2f} {loop} "
          f"{peak} {d['flows_done']:>7}/{d['flows']}", flush=True)
    if who == "p4cc":
        print(f"{'':>15} {'':>5} ({build_of(d)})")


def one_round(scenarios: list[str], binary: Path | None, htsim: Path | None) -> dict[str, tuple]:
    """Each scenario by p4cc-sim and then, given their binaries, by the
    reference and by htsim on the flows p4cc-sim ran: scenario -> (p4cc's
    figures, the reference's or None, htsim's or None)."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for s in scenarios:
            ours, arm = p4cc_run(s, Path(tmp) / s)
            out[s] = (ours, *others(s, arm, Path(tmp), {"ns-3": (binary, ns3_run),
                                                         "htsim": (htsim, htsim_run)}))
    return out


def others(s: str, arm: ArmPlan, tmp: Path, sims: dict) -> list[dict | None]:
    """Each of ``sims`` ({who: (binary or None, run function)}) on the
    reference's inputs for p4cc's finished arm: its figures, or None where
    it has no binary or did not run (a line says why)."""
    if not any(b for b, _ in sims.values()):
        return [None] * len(sims)
    d = tmp / f"ref-{s}"
    d.mkdir()
    try:
        inputs = ns3_inputs(arm, tmp / s / arm.name, d)
    except ValueError as e:
        print(f"# no reference inputs for {s}: {e}", flush=True)
        return [None] * len(sims)
    got = []
    for who, (b, fn) in sims.items():
        try:
            got.append(fn(b, d, **inputs) if b else None)
        except (RuntimeError, ValueError, OSError, KeyError) as e:
            print(f"# {who} did not run {s}: {e}", flush=True)
            got.append(None)
    return got


def report(s: str, o: dict, r: dict | None, h: dict | None) -> tuple[float | None, float | None]:
    """One scenario's rows and figures; ns-3's CPU over p4cc's and p4cc's
    over htsim's, where they ran."""
    print_row(s, "p4cc", o)
    if r:
        print_row(s, "ns-3", r)
    if h:
        print_row(s, "htsim", h)
    print(f"{s:>15}  p4cc: {o['events'] / o['wall_s']:,.0f} events per wall second, "
          f"{o['wall_s'] / (o['sim_s'] * 1e3):.2f} wall s per simulated ms", flush=True)
    x = y = None
    if r:
        x = r["cpu_s"] / o["cpu_s"]
        print(f"{s:>15}  ns-3 CPU / p4cc CPU = {x:.2f} for the same {o['flows']} flows, each simulator's "
              f"whole process (ns-3 simulates {r['sim_s']:.4f} s, to its stop time; p4cc "
              f"{o['sim_s']:.4f} s, until its flows finished)", flush=True)
    if h:
        y = o["cpu_s"] / h["cpu_s"]
        print(f"{s:>15}  p4cc CPU / htsim CPU = {y:.1f} for the same flows, each simulator's whole "
              f"process (htsim simulates {h['sim_s']:.4f} s, to the reference's stop time)", flush=True)
    return x, y


def scenario_list(text: str) -> list[str]:
    out = [s for s in text.split(",") if s]
    if not out or set(out) - set(SCENARIOS):
        raise argparse.ArgumentTypeError(f"{text}: from {', '.join(SCENARIOS)}")
    return out


def rounds(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError("at least 1 round")
    return int(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenarios", type=scenario_list, default=list(SCENARIOS))
    ap.add_argument("--no-ns3", action="store_true", help="skip the reference")
    ap.add_argument("--no-htsim", action="store_true", help="skip htsim")
    ap.add_argument("--repeat", type=rounds, default=1, metavar="N",
                    help="rounds of both simulators (default 1)")
    a = ap.parse_args()
    binary, why = (None, "--no-ns3") if a.no_ns3 else reference()
    htsim, why_h = (None, "--no-htsim") if a.no_htsim else htsim_binary()
    find_sim()  # fails early, naming what to build
    print(f"# CPU: {cpu_model()}; dc-fct paper fabric (32 hosts at 100 Gb/s, 2 spines at 400 Gb/s), DCTCP")
    if not binary:
        print(f"# ns-3 (ns3-datacenter) not run: {why}")
    if not htsim:
        print(f"# htsim not run: {why_h}")
    print(f"# load average at the start: {loadavg()}", flush=True)
    ratios = {s: ([], []) for s in a.scenarios}
    for k in range(a.repeat):
        if a.repeat > 1:
            print(f"# round {k + 1} of {a.repeat}", flush=True)
        runs = one_round(a.scenarios, binary, htsim)
        print(HEAD)
        for s, (o, r, h) in runs.items():
            for xs, x in zip(ratios[s], report(s, o, r, h)):
                xs += [] if x is None else [x]
    for s, (xs, ys) in ratios.items():
        for what, v, fmt in (("ns-3 CPU / p4cc CPU", xs, ".2f"), ("p4cc CPU / htsim CPU", ys, ".1f")):
            if len(v) > 1:
                print(f"{s:>15}  median of {len(v)} rounds: {what} = {statistics.median(v):{fmt}} "
                      f"(rounds: {', '.join(f'{x:{fmt}}' for x in v)})")
    print(f"# load average at the end: {loadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
