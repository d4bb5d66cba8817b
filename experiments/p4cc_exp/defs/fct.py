"""Dukkipati & McKeown (CCR 2006) Fig. 2: flow-completion time against flow
size for Pareto-sized flows arriving as a Poisson process, beside the
processor-sharing ideal FCT = 1.5·RTT + size / (C·(1 − ρ))."""
from __future__ import annotations

import math

from p4cc_topo import load_topology
from p4cc_topo.plan import Agent, Sizes, Workload, port_towards

from .. import blocks, metrics, series
from ..blocks import cc_label
from ..experiment import Experiment, Headline
from ..params import Param, rate_bps, seconds, str_list
from ..stats import mean, percentile
from ..verdicts import RATE, verdict

SIZE_BINS = (0, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 1e7, 1e9)
# Flows PS finishes in a few RTTs but TCP's slow start stretches (10-1000 packets).
MEDIUM_BYTES = (10_000, 1_000_000)


def poisson_senders(senders: list[str], dst: str, cc: str, datapath: str, load: float,
                    link_bps: float, sizes: Sizes, flows: int, duration_s: float, seed: int,
                    init_cwnd_pkts: int | None = None) -> list[Agent]:
    """Each sender opens flows to ``dst`` as a Poisson process carrying an
    equal share of ``load``; flow ids are a million apart per sender."""
    n = len(senders)
    return [Agent(h, "sender", datapath=datapath, cc=cc,
                  workload=Workload("poisson", dsts=(dst,), load=load / n, link_bps=int(link_bps),
                                    sizes=sizes, count=max(1, flows // n), duration_s=duration_s),
                  flow_id_base=1 + i * 1_000_000, seed=seed * 1000 + i,
                  line_rate_bps=int(link_bps) if datapath == "user" else None,
                  init_cwnd_pkts=init_cwnd_pkts if datapath == "user" else None)
            for i, h in enumerate(senders)]


class Fct(Experiment):
    id = "fct"
    title = "Flow-completion time vs flow size"
    source = "Dukkipati & McKeown (CCR 2006) Fig. 2"
    description = ("Senders open flows to one receiver with Poisson arrivals at a target "
                   "load and Pareto sizes. The FCT of each flow is compared with what "
                   "processor sharing would give (1.5 RTT + size / (C(1 − ρ))).")
    # Dukkipati & McKeown Fig. 2 (ns-2): 2.4 Gb/s, RTT 100 ms, Pareto shape 1.2,
    # mean 25 packets of 1000 B, a one-BDP buffer (20 000 packets of 1500 B);
    # 50 senders and enough flows for the size buckets.
    paper = ["rate=2.4Gbps", "rtt=100ms", "shape=1.2", "mean_bytes=25000", "buffer=20000",
             "senders=50", "flows=20000", "duration=10"]
    params = [
        Param("rate", "100Mbps", "bottleneck rate", rate_bps, 1e6, 1e11),
        Param("rtt", "20ms", "base round-trip time (paper: 100 ms)", seconds, 0, 2),
        Param("buffer", 200, "bottleneck buffer, packets", int, 1, 100_000),
        Param("senders", 5, "hosts opening flows (paper seed: 50)", int, 1, 50),
        Param("load", 0.5, "offered load ρ", float, 0.05, 0.95),
        Param("flows", 300, "flows in all (seed: 500)", int, 10, 100_000),
        Param("shape", 1.2, "Pareto shape (paper: 1.2-1.4)", float, 1.01, 3),
        Param("mean_bytes", 25_000, "mean flow size, bytes (25 packets of 1000 B)", int, 1000, 10**8),
        Param("protocols", "cubic,reno", "kernel TCP algorithms", str_list),
        Param("duration", 20, "seconds of arrivals at most", seconds, 0.01, 3600),
        Param("warmup", 0, "seconds before the first counter reading", seconds, 0, 60),
        Param("seed", 1, "random seed (sizes, arrivals)", int),
    ]

    headlines = [
        Headline("mean_slowdown_vs_ps", "mean slowdown (FCT / processor sharing)"),
        Headline("median_slowdown_vs_ps", "median slowdown (FCT / processor sharing)"),
        Headline("medium_flows_slowdown_vs_ps", "slowdown of 10 KB–1 MB flows"),
        Headline("completed", "flows completed"),
    ]

    def arms(self, p):
        topo = load_topology("dumbbell", n_senders=p["senders"], bottleneck_bps=p["rate"],
                             access_bps=p["rate"], delay_us=f"{p['rtt'] / 4 * 1e6:.0f}us",
                             buffer_pkts=p["buffer"], ecn_k_pkts=None)
        sizes = Sizes(pareto_shape=p["shape"], mean_bytes=p["mean_bytes"])
        out = []
        for cc in p["protocols"]:
            agents = [blocks.receiver("rx", "kernel", cc)]
            agents += poisson_senders(topo.role("senders"), "rx", cc, "kernel", p["load"],
                                      p["rate"], sizes, p["flows"], p["duration"], p["seed"])
            out.append(blocks.arm(cc, f"{cc_label(cc)} (kernel TCP)", topo, agents,
                                  p["duration"], p["warmup"], port_towards(topo, "rx"),
                                  {"cc": cc, "datapath": "kernel"}))
        return out

    def ideal_fct(self, p, size):
        return 1.5 * p["rtt"] + size * 8 / (p["rate"] * (1 - p["load"]))

    def analyse(self, p, results):
        summary, verdicts = {}, []
        for name, r in results.items():
            flows = series.flows(metrics.sender_dirs(r))
            done = [f for f in flows if f["status"] == "complete" and f.get("fct_ns")]
            rows = []
            for lo, hi in zip(SIZE_BINS, SIZE_BINS[1:]):
                fcts = [int(f["fct_ns"]) / 1e9 for f in done if lo <= int(f["size_bytes"]) < hi]
                if fcts:
                    mid = math.sqrt(max(lo, 1000) * hi) if hi < 1e9 else lo * 2
                    rows.append({"size_from": lo, "size_to": hi, "flows": len(fcts),
                                 "fct_mean_s": mean(fcts), "fct_p99_s": percentile(fcts, 99),
                                 "ps_ideal_s": self.ideal_fct(p, mid)})
            slow = [int(f["fct_ns"]) / 1e9 / self.ideal_fct(p, int(f["size_bytes"])) for f in done]
            summary[name] = {"label": r["label"], "flows": len(flows), "completed": len(done),
                             "mean_slowdown_vs_ps": mean(slow),
                             "median_slowdown_vs_ps": percentile(slow, 50), "by_size": rows}
            frac = len(done) / len(flows) if flows else 0.0
            verdicts.append(verdict(
                f"{r['label']}: flows that completed", frac, frac >= 0.95, "every flow", "≥ 95 %",
                "the workload (each flow's bytes delivered)", RATE, [name]))
            # Fig. 2's point: medium flows, which processor sharing would
            # finish in a few RTTs, take many under TCP's slow start and AIMD.
            medium = [int(f["fct_ns"]) / 1e9 / self.ideal_fct(p, int(f["size_bytes"])) for f in done
                      if MEDIUM_BYTES[0] <= int(f["size_bytes"]) < MEDIUM_BYTES[1]]
            ms = mean(medium) if medium else float("nan")
            summary[name]["medium_flows_slowdown_vs_ps"] = ms
            verdicts.append(verdict(
                f"{r['label']}: flows of {MEDIUM_BYTES[0] // 1000}–{MEDIUM_BYTES[1] // 1000} KB "
                "against processor sharing (mean FCT ratio)", ms, ms > 1.0,
                "PS: 1.5·RTT + L/(C(1 − ρ))", "> 1 (TCP slower than PS)",
                "Dukkipati & McKeown (CCR 2006) Fig. 2", RATE, [name]))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4.2))
        sizes = []
        for name, r in results.items():
            flows = series.flows(metrics.sender_dirs(r))
            done = [f for f in flows if f["status"] == "complete" and f.get("fct_ns")]
            sizes += [int(f["size_bytes"]) for f in done]
            ax.scatter([int(f["size_bytes"]) for f in done], [int(f["fct_ns"]) / 1e9 for f in done],
                       s=4, alpha=0.4, label=f"{r['label']} (flows)")
            rows = summary[name]["by_size"]
            ax.plot([math.sqrt(max(x["size_from"], 1000) * x["size_to"]) for x in rows],
                    [x["fct_mean_s"] for x in rows], marker="o", label=f"{r['label']} (mean)")
        lo, hi = (min(sizes), max(sizes)) if sizes else (1e3, 1e6)
        xs = [lo * (hi / lo) ** (k / 50) for k in range(51)]
        ax.plot(xs, [self.ideal_fct(p, x) for x in xs], "k--", label="processor sharing")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("flow size (bytes)")
        ax.set_ylabel("flow-completion time (s)")
        ax.set_title(f"FCT at load {p['load']:g}, {p['rate'] / 1e6:.0f} Mbps, RTT "
                     f"{p['rtt'] * 1e3:g} ms (cf. Dukkipati & McKeown Fig. 2)", fontsize=9)
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = outdir / "fct_vs_size.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]
