"""DCTCP Fig. 16: five flows start one by one, then stop one by one;
per-flow throughput over time, DCTCP vs TCP (star, one receiver)."""
from __future__ import annotations

from p4cc_topo.plan import port_towards

from .. import blocks, metrics
from ..blocks import cc_label
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..stats import jain_index, mean
from ..verdicts import RATE, verdict
from .dctcp_queue import dumbbell


def join_leave_plot(results: dict, p: dict, source: str, outdir):
    """Per-flow throughput over time, one panel per arm, phases marked."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 3.6),
                             sharey=True, squeeze=False)
    for ax, (name, r) in zip(axes[0], results.items()):
        for fid, s in sorted(metrics.flow_rates(r).items()):
            ax.plot([t for t, _ in s], [m for _, m in s], lw=0.8, label=f"flow {fid}")
        for start, _, active in blocks.phases(p["senders"], p["interval"]):
            ax.axvline(start, color="gray", lw=0.3)
        ax.set_title(r["label"])
        ax.set_xlabel("time (s)")
        ax.legend(fontsize=6, loc="upper right")
    axes[0][0].set_ylabel("throughput (Mbps)")
    fig.suptitle(f"Flows joining every {p['interval']:g} s then leaving (cf. {source})")
    fig.tight_layout()
    path = outdir / "throughput_over_time.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


class DctcpConvergence(Experiment):
    id = "dctcp-convergence"
    title = "Convergence: flows joining and leaving, DCTCP vs TCP"
    source = "DCTCP (SIGCOMM 2010) Fig. 16"
    description = ("N senders to one receiver. Flow i starts at i·interval and the flows "
                   "stop in reverse order, one per interval. Each phase should share the "
                   "bottleneck fairly; DCTCP converges a little slower than TCP but keeps "
                   "the queue short.")
    # DCTCP Fig. 16: 1 Gb/s, 5 flows, a join or leave every 30 s.
    paper = ["rate=1Gbps", "rtt=100us", "buffer=466", "k=20", "senders=5", "interval=30",
             "warmup=1"]
    params = [
        Param("rate", "100Mbps", "every link's rate", rate_bps, 1e6, 1e11),
        Param("rtt", "500us", "base round-trip time", seconds, 0, 1),
        Param("buffer", 120, "bottleneck buffer, packets", int, 1, 100_000),
        Param("k", 20, "ECN threshold K, packets", int, 0, 10_000),
        Param("senders", 5, "flows (paper: 5)", int, 2, 20),
        Param("interval", 5, "seconds between joins/leaves (paper: 30)", seconds, 1, 600),
        Param("protocols", "dctcp,cubic", "kernel TCP algorithms compared", str_list),
        Param("warmup", 0.5, "seconds before the first counter reading", seconds, 0, 60),
        Param("seed", 1, "random seed", int),
    ]

    def arms(self, p):
        topo = dumbbell(p, p["senders"])
        n, iv = p["senders"], p["interval"]
        out = []
        for cc in p["protocols"]:
            # As in dctcp-queue: the TCP baseline sees a drop-tail queue.
            ecn = cc == "dctcp"
            agents = [blocks.receiver("rx", "kernel", cc)]
            for i, h in enumerate(topo.role("senders")):
                start, stop = blocks.join_leave_window(i, n, iv)
                agents.append(blocks.long_sender(h, "rx", cc, "kernel", start, stop, i + 1,
                                                 p["seed"] + i, ecn=ecn))
            out.append(blocks.arm(cc, f"{cc_label(cc)} (kernel TCP)", topo, agents,
                                  (2 * n - 1) * iv, p["warmup"], port_towards(topo, "rx"),
                                  {"cc": cc, "datapath": "kernel"}))
        return out

    def analyse(self, p, results):
        summary, verdicts = {}, []
        for name, r in results.items():
            rates = metrics.flow_rates(r)
            phases = []
            for start, end, active in blocks.phases(p["senders"], p["interval"]):
                # Skip the first second of a phase: that is convergence time.
                lo, hi = start + min(1.0, (end - start) / 2), end
                per = [mean([m for t, m in rates.get(str(f), []) if lo <= t < hi]) for f in active]
                per = [x for x in per if x == x]
                phases.append({"from_s": start, "flows": active, "jain": jain_index(per),
                               "total_mbps": sum(per)})
            summary[name] = {"label": r["label"], "phases": phases,
                             "mean_jain": mean([ph["jain"] for ph in phases if ph["jain"] == ph["jain"]]),
                             **{k: v for k, v in metrics.arm_summary(p, r).items()
                                if k in ("queue_mean_pkts", "queue_p95_pkts", "utilisation")}}
            multi = [ph["jain"] for ph in phases if len(ph["flows"]) > 1]
            worst = min(multi) if multi else float("nan")
            summary[name]["min_jain_multi_flow"] = worst
            verdicts.append(verdict(
                f"{r['label']}: every phase shares fairly", worst, worst >= 0.99,
                "Jain's index 1 (equal shares)", "≥ 0.99 in every multi-flow phase",
                "DCTCP Fig. 16 (flows converge to their fair share)", RATE, [name]))
            util = summary[name]["utilisation"]
            verdicts.append(verdict(
                f"{r['label']}: the link stays busy", util, util >= 0.95, "100 % of the bottleneck",
                "≥ 95 %", "DCTCP Fig. 16 (the flows' sum stays at line rate)", RATE, [name]))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        return [join_leave_plot(results, p, self.source, outdir)]
