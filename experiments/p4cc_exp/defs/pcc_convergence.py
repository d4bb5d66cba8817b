"""PCC Fig. 12: four flows join one by one, then leave, on a wishbone (two
switches, flow i from h_i to r_i across the shared s1–s2 link). The PCC
seed's table: Jain's index per window and each flow's throughput
standard deviation, averaged over the windows where the same flows run,
PCC against TCP Cubic."""
from __future__ import annotations

import math

from p4cc_topo import load_topology
from p4cc_topo.plan import port_between

from .. import blocks, metrics
from ..blocks import EXTERNAL_PARAMS, PCC_PARAMS, cc_label
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..stats import jain_index, mean
from ..verdicts import RATE, against_reference, verdict
from .dctcp_convergence import join_leave_plot

KERNEL = {"cubic", "reno"}
#: The PCC seed's Jain's indices (0.98–0.99, as PCC Fig. 12's) are over
#: 100 s windows within each flow count's phase.
PAPER_WINDOW_S = 100.0


def verdict_window(p: dict) -> float:
    """The window the fairness verdict measures in: the paper's 100 s, or
    the whole settled phase when phases are shorter. (The `window`
    parameter, 2 s by default, is for the per-phase table and plot: a
    Jain's index over 2 s windows is a stricter quantity than the paper's.)"""
    return min(PAPER_WINDOW_S, p["interval"] - p["settle"])


def window_stats(rates: dict[str, list[tuple[float, float]]], flows: list[int],
                 lo: float, hi: float, window: float) -> tuple[float, float]:
    """Over [lo, hi) cut into windows: the mean Jain index of the flows'
    window-average rates, and the mean over flows of the standard deviation
    of their window-average rates (Mbps). NaN where a flow has no data."""
    jains, per_flow = [], {f: [] for f in flows}
    t = lo
    while t + window <= hi + 1e-9:
        avgs = []
        for f in flows:
            xs = [m for s, m in rates.get(str(f), []) if t <= s < t + window]
            avgs.append(mean(xs) if xs else 0.0)
            per_flow[f].append(avgs[-1])
        jains.append(jain_index(avgs))
        t += window
    sds = []
    for xs in per_flow.values():
        if len(xs) >= 2:
            m = mean(xs)
            sds.append(math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)))
    return (mean(jains) if jains else float("nan"), mean(sds) if sds else float("nan"))


class PccConvergence(Experiment):
    id = "pcc-convergence"
    title = "Convergence and stability: PCC vs TCP, flows joining and leaving"
    source = "PCC (NSDI 2015) Fig. 12; the PCC seed's Jain / std-dev table"
    description = ("N flows share one 100 Mbps link between two switches (wishbone). Flow i "
                   "starts at i·interval and the flows stop in reverse order. PCC's flows "
                   "should converge to equal shares and stay there (Jain's index near 1, "
                   "small throughput deviation); Cubic's oscillate more.")
    # PCC Fig. 12: 500 s phases, Jain's index over 100 s windows.
    paper = ["interval=500", "window=100", "settle=20"]
    params = [
        Param("rate", "100Mbps", "the shared s1–s2 link", rate_bps, 1e6, 1e11),
        Param("rtt", "30ms", "base round-trip time", seconds, 0.001, 1),
        Param("buffer", 250, "buffer of the shared link, packets (seed: 250, ≈ 1 BDP)", int,
              1, 100_000),
        Param("senders", 4, "flows (paper: 4)", int, 2, 10),
        Param("interval", 20, "seconds between joins/leaves (paper: 500)", seconds, 4, 3600),
        Param("window", 2, "window of the Jain index and deviation (paper: 100 s)", seconds,
              0.2, 600),
        Param("settle", 2, "seconds after each join/leave left out", seconds, 0, 600),
        Param("protocols", "pcc,pcc-vivace,cubic", "pcc / pcc-vivace / pcc-vivace-loss (p4cc transport), cubic / reno "
              "(kernel TCP)", str_list),
        *EXTERNAL_PARAMS,
        *PCC_PARAMS,
        Param("warmup", 0.5, "seconds before the first counter reading", seconds, 0, 60),
        Param("seed", 1, "random seed", int),
    ]

    def topology(self, p):
        # RTT = 2 × (2 × access + shared): half of each one-way delay on
        # the shared link, a quarter on each access link.
        access = p["rtt"] / 8
        return load_topology("wishbone", n_pairs=p["senders"], bottleneck_bps=p["rate"],
                             access_bps="1Gbps", bottleneck_delay_us=f"{p['rtt'] / 4 * 1e6:.0f}us",
                             access_delay_us=f"{access * 1e6:.0f}us", buffer_pkts=p["buffer"])

    def arms(self, p):
        if p["settle"] >= p["interval"]:
            raise ValueError("settle must be shorter than interval")
        cc_params = blocks.kv_params(p["cc_params"])
        topo = self.topology(p)
        n, iv = p["senders"], p["interval"]
        # The shared link, where s1 sends towards s2 (a topology fact, not a name).
        shared = port_between(topo, "s1", "s2")
        out = []
        for cc in p["protocols"]:
            if cc not in KERNEL | set(blocks.PCC_VARIANTS) and not blocks.is_external(cc):
                raise ValueError(f"protocols: unknown '{cc}' (pcc, pcc-vivace, cubic, reno, "
                                 "external, " + ", ".join(blocks.REFERENCES) + ")")
            dp = "kernel" if cc in KERNEL else "user"
            flows = [(f"h{i + 1}", f"r{i + 1}", *blocks.join_leave_window(i, n, iv))
                     for i in range(n)]
            try:
                # Plain TCP: no ECN, as in the paper.
                agents, settings = blocks.protocol_flows(cc, p, flows, p["seed"], dp,
                                                         cc_params=cc_params, ecn=dp == "user")
            except blocks.SkipArm:
                continue
            where = {"kernel": "kernel TCP", "user": "p4cc transport"}.get(settings["datapath"])
            label = f"{cc_label(cc)} ({where})" if where else settings["external"]
            out.append(blocks.arm(cc, label, topo, agents, (2 * n - 1) * iv, p["warmup"], shared,
                                  settings))
        return out

    def analyse(self, p, results):
        summary, verdicts = {}, []
        for name, r in results.items():
            rates = metrics.flow_rates(r)
            phases = []
            for start, end, active in blocks.phases(p["senders"], p["interval"]):
                jain, sd = window_stats(rates, active, start + p["settle"], end, p["window"])
                jain_paper, _ = window_stats(rates, active, start + p["settle"], end,
                                             verdict_window(p))
                phases.append({"from_s": start, "flows": active, "jain": jain, "stddev_mbps": sd,
                               "jain_verdict_window": jain_paper})
            depths = sorted(c["depth"] for c in metrics.postcards(r))
            busy = metrics.utilisation(r, p["rate"])
            summary[name] = {
                "label": r["label"], "phases": phases,
                "mean_jain": mean([ph["jain"] for ph in phases if ph["jain"] == ph["jain"]]),
                # Deviation of one flow alone says nothing about sharing.
                "mean_stddev_mbps": mean([ph["stddev_mbps"] for ph in phases
                                          if len(ph["flows"]) > 1 and ph["stddev_mbps"] == ph["stddev_mbps"]]),
                "utilisation": busy,
                "queue_median_pkts": depths[len(depths) // 2] if depths else 0,
                "cc": r["settings"]["cc"],
            }
        for name, s in summary.items():
            multi = [ph for ph in s["phases"] if len(ph["flows"]) > 1]
            s["min_jain_multi_flow"] = min((ph["jain"] for ph in multi), default=float("nan"))
            worst = min((ph["jain_verdict_window"] for ph in multi), default=float("nan"))
            s["min_jain_multi_flow_verdict_window"] = worst
            if results[name]["settings"]["cc"].startswith("pcc"):
                vw = verdict_window(p)
                how = "the paper's" if vw == PAPER_WINDOW_S else "the settled phase; paper: 100 s"
                verdicts.append(verdict(
                    f"{s['label']}: fair in every multi-flow phase", worst, worst >= 0.98,
                    "Jain's index 0.98–0.99", f"≥ 0.98 (in {vw:g} s windows, {how})",
                    "PCC (NSDI 2015) Fig. 12; the PCC seed's table (100 s windows)", RATE, [name]))
            verdicts.append(verdict(
                f"{s['label']}: the shared link stays busy", s["utilisation"],
                s["utilisation"] >= 0.9, "100 % of the link", "≥ 90 %",
                "PCC (NSDI 2015) Fig. 12 (the flows' sum at capacity)", RATE, [name]))
        for rn, rs, n, s in blocks.reference_pairs(summary, lambda a, b: True):
            ref = rs["label"]
            verdicts.append(against_reference(
                f"{s['label']}: the shared link's utilisation", s["utilisation"],
                rs["utilisation"], ref, [n, rn]))
            verdicts.append(against_reference(
                f"{s['label']}: fairness in the worst multi-flow phase",
                s["min_jain_multi_flow_verdict_window"], rs["min_jain_multi_flow_verdict_window"],
                ref, [n, rn], below=0.02,
                source="0.02: the spread of the PCC seed's indices (0.98–0.99)"))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        paths = [join_leave_plot(results, p, self.source, outdir)]
        # The seed's table as bars: Jain's index and deviation per phase.
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6))
        width = 0.8 / max(1, len(summary))
        for k, (name, s) in enumerate(summary.items()):
            xs = [i + k * width for i in range(len(s["phases"]))]
            ax1.bar(xs, [ph["jain"] for ph in s["phases"]], width, label=s["label"])
            ax2.bar(xs, [ph["stddev_mbps"] for ph in s["phases"]], width, label=s["label"])
        phases = blocks.phases(p["senders"], p["interval"])
        ticks = [i + 0.4 - width / 2 for i in range(len(phases))]
        names = [f"{len(a)} flow{'s' if len(a) > 1 else ''}\n@{st:g}s" for st, _, a in phases]
        for ax in (ax1, ax2):
            ax.set_xticks(ticks)
            ax.set_xticklabels(names, fontsize=7)
            ax.legend(fontsize=7)
        ax1.set_ylim(0, 1.02)
        ax1.set_ylabel(f"Jain's index ({p['window']:g} s windows)")
        ax2.set_ylabel("per-flow throughput std-dev (Mbps)")
        fig.tight_layout()
        path = outdir / "fairness_stability.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [*paths, path]
