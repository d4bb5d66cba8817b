"""Flows joining and leaving one bottleneck (PowerTCP's fairness figure,
NSDI 2022 §5): N long flows start one per interval, then stop in reverse
order. Per algorithm and phase: Jain's index of the active flows'
throughput, the bottleneck's utilisation, and how long the flows took to
reach their fair shares after each join or leave.
"""
from __future__ import annotations

from p4cc_topo import load_topology
from p4cc_topo.plan import port_towards

from .. import blocks, metrics, series
from ..blocks import cc_label
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..stats import jain_index, mean
from ..verdicts import RATE, fmt, verdict
from .dctcp_convergence import join_leave_plot
from .int_incast import (FRAME_BYTES, add_reference, cc_params, cnp_interval_us, profile,
                         ref_ratio)

#: A phase has converged once the active flows' Jain index over a window
#: of throughput bins reaches this (and stays for the phase's second half).
CONVERGED_JAIN = 0.95
#: PowerTCP §5 (fairness): the flows share the bottleneck equally in
#: every phase, judged on the second half of each phase.
JAIN_MIN = 0.95
#: Throughput bins per phase: convergence is timed to one bin.
BINS_PER_PHASE = 200

# ns3-datacenter (inet-tub/ns3-datacenter @ 6ddb4a4, ns-3.39) run here at
# p4cc's paper-scale parameters (docs/experiments.md, "int-fairness"): its
# fairness program on a one-switch star (4 senders, 25 Gb/s, 1 µs links,
# 1500-B frames, T = τ = the path's 4.93 µs), joins every 10 ms from 1 ms
# and leaves in reverse order (a copy of the program with three lines
# changed to read each flow's stop time), analysed with this module's
# definitions from the senders' bytes printed every 2.46 µs. HPCC,
# PowerTCP, θ-PowerTCP and DCTCP with the program's window (one BDP per
# flow), DCQCN and TIMELY without it, as p4cc's rate-only senders run.
# Per line rate and algorithm, over the phases with two flows or more:
# mean and lowest Jain index, and the slowest convergence (µs).
REFERENCE: dict[float, dict[str, dict[str, float]]] = {
    25e9: {
        "hpcc": {"jain_mean": 0.973, "jain_min": 0.920, "converge_max_us": 7600},
        "powertcp": {"jain_mean": 0.995, "jain_min": 0.989, "converge_max_us": 5100},
        "theta-powertcp": {"jain_mean": 0.998, "jain_min": 0.996, "converge_max_us": 0},
        "dcqcn": {"jain_mean": 0.994, "jain_min": 0.973, "converge_max_us": 2300},
        "timely": {"jain_mean": 0.999, "jain_min": 0.996, "converge_max_us": 150},
        "dctcp": {"jain_mean": 1.000, "jain_min": 1.000, "converge_max_us": 0},
    },
}


class IntFairness(Experiment):
    id = "int-fairness"
    title = "Flows joining and leaving one bottleneck: fairness and convergence"
    source = "PowerTCP (NSDI 2022) fairness figure"
    description = ("N long flows to one receiver through one switch; flow i starts at "
                   "i·interval, and they stop in reverse order. Each phase should share the "
                   "bottleneck equally; the time from a join or leave to equal shares is the "
                   "convergence time.")
    # PowerTCP's fairness scenario at the reference simulator's scale: four
    # flows, 25 Gb/s hosts, 1 µs links, a join every 100 ms (shortened here
    # to 10 ms phases: its flows converge within a few ms).
    paper = ["rate=25Gbps", "delay=1us", "senders=4", "interval=0.01", "buffer=10000",
             "base_rtt_us=0", "warmup=0.001"]
    params = [
        Param("rate", "200Mbps", "every link's rate", rate_bps, 1e6, 4e11),
        Param("delay", "50us", "every link's one-way delay", seconds, 0, 0.1),
        Param("senders", 4, "flows", int, 2, 16),
        Param("interval", 2, "seconds between joins/leaves", seconds, 0.0005, 600),
        Param("buffer", 1000, "switch buffer per port, packets", int, 1, 1_000_000),
        Param("base_rtt_us", 450, "the path's RTT with empty queues as hosts measure it, µs "
              "(0: from the topology)", float, 0, 1e6),
        Param("swift_queue_us", 25, "Swift's target above the base RTT, µs", float, 0, 1e6),
        Param("protocols", "hpcc,powertcp,theta-powertcp,swift,dcqcn,timely,dctcp", "arms",
              str_list),
        Param("warmup", 0.5, "seconds before the first counter reading", seconds, 0, 60),
        Param("seed", 1, "random seed", int),
    ]

    def plan(self, p, scale="default"):
        if p["base_rtt_us"] == 0:
            p = dict(p, base_rtt_us=4 * p["delay"] * 1e6 + 2 * FRAME_BYTES * 8 / p["rate"] * 1e6)
        return super().plan(p, scale)

    def arms(self, p):
        n, iv = p["senders"], p["interval"]
        prof = profile(p["rate"])
        bin_ms = iv * 1e3 / BINS_PER_PHASE
        duration = (2 * n - 1) * iv
        out = []
        for cc in p["protocols"]:
            topo = load_topology("star", n_hosts=n + 1, rate_bps=p["rate"],
                                 delay_us=f"{p['delay'] * 1e6:.3f}us", buffer_pkts=p["buffer"],
                                 ecn_k_pkts=prof["k"] if cc == "dctcp" else None,
                                 ecn_red=prof["red"] if cc == "dcqcn" else None)
            params = cc_params(p, cc)
            agents = [blocks.receiver("h1", "user", cc, cnp_interval_us(p, cc))]
            for i, h in enumerate(topo.role("senders")):
                start, stop = blocks.join_leave_window(i, n, iv)
                agents.append(blocks.long_sender(h, "h1", cc, "user", start, stop, i + 1,
                                                 p["seed"] + i, params, line_rate_bps=p["rate"],
                                                 bin_ms=bin_ms))
            out.append(blocks.arm(cc, cc_label(cc), topo, agents, duration, p["warmup"],
                                  port_towards(topo, "h1"), {"cc": cc, "cc_params": params}))
        return out

    # -- analysis -------------------------------------------------------------
    def phase_figures(self, p, r) -> list[dict]:
        """Per phase: active flows, Jain's index and utilisation of its
        second half, and the convergence time from its start."""
        n, iv = p["senders"], p["interval"]
        t0 = (r.get("t0_unix_ns") or 0)
        bins: dict[str, dict[int, int]] = {}
        width = None
        for d in metrics.sender_dirs(r):
            for fid, rows in series.tput_bins(d).items():
                for start, ns, b in rows:
                    width = ns
                    bins.setdefault(fid, {})[start] = bins.setdefault(fid, {}).get(start, 0) + b
        if not bins or not width:
            return []
        fids = sorted(bins, key=lambda f: int(f))
        out = []
        for k, (start, end, active) in enumerate(blocks.phases(n, iv)):
            lo, hi = t0 + int(start * 1e9), t0 + int(end * 1e9)
            steps = list(range(lo - lo % width + width, hi - width + 1, width))
            # Gb/s per bin (bits per ns).
            rates = {i: [bins[fids[i - 1]].get(s, 0) * 8 / width for s in steps]
                     for i in active if i - 1 < len(fids)}
            half = len(steps) // 2
            per_flow = [mean(v[half:]) for v in rates.values()]
            jain = jain_index(per_flow) if len(per_flow) > 1 else 1.0
            util = sum(per_flow) * 1e9 / p["rate"] if per_flow else float("nan")
            # Converged: the first bin from which a sliding window of a
            # tenth of the phase keeps Jain's index at CONVERGED_JAIN or above.
            conv = float("nan")
            win = max(1, len(steps) // 10)
            if len(rates) > 1:
                for j in range(0, len(steps) - win + 1):
                    ok = all(jain_index([mean(v[x:x + win]) for v in rates.values()])
                             >= CONVERGED_JAIN for x in range(j, len(steps) - win + 1, win))
                    if ok:
                        conv = (steps[j] - lo) / 1e3
                        break
            else:
                conv = 0.0
            out.append({"phase": k, "active": active, "jain": jain, "utilisation": util,
                        "converge_us": conv, "per_flow_gbps": per_flow})
        return out

    def analyse(self, p, results):
        base = p["base_rtt_us"] or (4 * p["delay"] * 1e6 + 2 * FRAME_BYTES * 8 / p["rate"] * 1e6)
        summary = {}
        verdicts = []
        for name, r in results.items():
            phases = self.phase_figures(p, r)
            multi = [ph for ph in phases if len(ph["active"]) > 1]
            summary[name] = {
                "label": r["label"], "phases": phases,
                "jain_mean": mean([ph["jain"] for ph in multi]),
                "jain_min": min((ph["jain"] for ph in multi), default=float("nan")),
                # A phase that never converged makes the slowest one "never" (NaN).
                "converge_max_us": (float("nan") if any(ph["converge_us"] != ph["converge_us"]
                                                        for ph in multi)
                                    else max((ph["converge_us"] for ph in multi),
                                             default=float("nan"))),
                "utilisation": metrics.utilisation(r, p["rate"]),
            }
        ref = REFERENCE.get(p["rate"], {})
        add_reference(summary, ref, p["rate"])
        for cc in ("powertcp", "hpcc", "theta-powertcp"):
            s = summary.get(cc)
            if not s:
                continue
            extra = (f"; ns3-datacenter run here: lowest Jain {fmt(ref[cc]['jain_min'])}"
                     if cc in ref else "")
            verdicts.append(verdict(
                f"{cc_label(cc)} shares the bottleneck equally in every phase (lowest Jain)",
                s["jain_min"], s["jain_min"] >= JAIN_MIN, "equal shares (Jain 1)",
                f"≥ {JAIN_MIN}", "PowerTCP §5 (fairness)" + extra, RATE, [cc]))
        pw, h = summary.get("powertcp"), summary.get("hpcc")
        if pw and h:
            ratio = (pw["converge_max_us"] / h["converge_max_us"]
                     if h["converge_max_us"] else float("nan"))
            verdicts.append(verdict(
                "PowerTCP converges at least as fast as HPCC (slowest phase, PowerTCP / HPCC)",
                ratio, ratio <= 1.1, "≤ 1", "≤ 1.1", "PowerTCP §5 (fairness: faster "
                f"convergence than HPCC); base RTT {base:.1f} µs"
                + ref_ratio(ref, "converge_max_us", "µs"), RATE,
                ["powertcp", "hpcc"]))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        return [join_leave_plot(results, p, self.source, outdir)]
