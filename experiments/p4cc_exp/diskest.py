"""How much disk a run will write, from its plan alone, so that a run the
disk cannot hold is refused before it starts rather than killed by ENOSPC
an hour in.

The series dominate. Per arm, with pps the measured bottleneck's line rate
in 1500-byte packets and T the arm's traffic time:

    postcards  2 · pps · T · switches / one_in_n   (a data packet and its ACK
                                                    at every switch that reports)
    RTT rows   pps · T / rtt_every                  (one per ACK, all senders)
    tput rows  T / 10 ms per flow                   (tput.csv's bins)
    MI rows    pps · T / 10 · PCC senders' share    (mi.csv: an interval
                                                    holds ≥ 10 packets)

times bytes per row, calibrated on runs of dctcp-theory and dctcp-queue
in virtual time (CSV as the agents write it, Parquet with zstd after the
arm; `python experiments/bench/sweep_bench.py --calibrate` measures them
again). The CSV of one arm exists at a time (it becomes Parquet before
the next arm starts), so the peak is the largest arm's CSV on top of what
the run keeps. Over-estimates are the safe side: a bottleneck that is not
busy the whole time writes less.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

#: bytes per row, CSV and Parquet (zstd): postcard, RTT sample, tput bin,
#: PCC monitor interval (mi.csv: 133 and 41 measured, pcc-lossy, 2026-11-29)
ROW_CSV = {"postcard": 90.0, "rtt": 48.0, "tput": 43.0, "mi": 140.0}
#: (Parquet measured 1.0, 2.3, 4.5 with clocks stored as deltas, 2026-11-27;
#: rounded up: other experiments' series are less regular)
ROW_PARQUET = {"postcard": 2.0, "rtt": 3.0, "tput": 5.0, "mi": 45.0}
#: per flow: its flows.csv / recv_flows.csv rows, and its cc_state.csv
#: rows (up to ~15 names of ~20 bytes: PCC's, BBR's)
FLOW_BYTES = 700.0
#: per arm: logs, measure.json, fidelity.json, Parquet footers
ARM_FIXED = 200e3
#: per run: plan.json, params.json, summary.json, plots, report.html
RUN_FIXED = 1.5e6
#: tput.csv's bin (hosts/traffic/src/log.rs)
TPUT_BIN_S = 0.01
#: packets a PCC monitor interval holds at least (pcc's mi_min_pkts)
MI_MIN_PKTS = 10
#: what a run leaves free on the disk at its peak
RESERVE_BYTES = 256e6


@dataclass
class Estimate:
    kept: float          #: bytes the results folder holds at the end
    peak: float          #: bytes at the worst moment (an arm's CSV before conversion)
    rows: int            #: series rows, all arms

    def line(self, free: float | None = None) -> str:
        out = (f"disk: about {human(self.kept)} kept, {human(self.peak)} at the peak "
               f"({self.rows:,} series rows)")
        return out + (f"; {human(free)} free" if free is not None else "")


def human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _arm_rows(arm) -> dict[str, float]:
    topo_links = arm.topology.get("links", [])
    rate = 0.0
    q = arm.measure.queue
    if q is not None:
        for sw in arm.switches.values():
            if sw.name == q.switch and q.port in sw.ports:
                rate = sw.ports[q.port].rate_bps or 0.0
    if not rate:
        rate = max((l.get("rate_bps") or 0 for l in topo_links), default=0.0)
    pps = rate / (8 * 1500)
    t = arm.end_s()
    reporting = [sw for sw in arm.switches.values() if sw.postcards is not None]
    postcards = sum(2 * pps * t / max(1, sw.postcards.one_in_n) for sw in reporting)
    senders = arm.senders()
    every = min((a.rtt_every for a in senders), default=1) or 1
    rtt = pps * t / every if senders else 0.0
    flows = 0
    busy = 0.0   # flows sending at once, summed over senders
    for a in senders:
        w = a.workload
        if w is None:
            continue
        if w.kind == "long":
            flows += len(w.flows)
            busy += len(w.flows)
        else:
            # open-loop and closed workloads: a few flows at a time per
            # sender (at load ρ, processor sharing has ρ/(1 − ρ) on average)
            flows += w.count or w.rounds or 1
            load = min(w.load or 0.5, 0.95)
            busy += max(1.0, load / (1 - load), float(w.concurrency or 0))
    tput = busy * t / TPUT_BIN_S
    pcc = sum(1 for a in senders if (a.cc or "").startswith("pcc"))
    mi = pps * t / MI_MIN_PKTS * pcc / len(senders) if senders else 0.0
    return {"postcard": postcards, "rtt": rtt, "tput": tput, "mi": mi, "flows": flows}


def estimate(plan, keep: str = "all", csv: bool = False) -> Estimate:
    """The disk ``plan`` writes with ``keep`` (keep.py); ``csv``: series
    stay CSV (P4CC_SERIES=csv)."""
    kept = RUN_FIXED
    peak_arm = 0.0
    rows = 0
    for arm in plan.arms:
        r = _arm_rows(arm)
        flows = r.pop("flows")
        as_csv = sum(ROW_CSV[k] * n for k, n in r.items()) + flows * FLOW_BYTES
        as_pq = sum(ROW_PARQUET[k] * n for k, n in r.items()) + flows * FLOW_BYTES / 4
        rows += int(sum(r.values()))
        peak_arm = max(peak_arm, as_csv)
        if keep != "summary":
            kept += (as_csv if csv else as_pq) + ARM_FIXED
    peak = kept + (0.0 if csv else peak_arm)
    return Estimate(kept=kept, peak=max(peak, kept), rows=rows)


def free_bytes(folder: Path) -> float:
    """Free bytes on the filesystem that holds ``folder`` (or its nearest
    existing parent)."""
    p = Path(folder).resolve()
    while not p.exists():
        p = p.parent
    return float(shutil.disk_usage(p).free)


def fits(need: float, folder: Path) -> tuple[bool, float]:
    free = free_bytes(folder)
    return need + RESERVE_BYTES <= free, free
