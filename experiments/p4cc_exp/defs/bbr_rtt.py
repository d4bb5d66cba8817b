"""Two BBR flows with different RTTs share a bottleneck: who takes more?
BBRv1's in-flight cap is 2 × its bandwidth estimate × its min_rtt, so in
a queue both flows fill, the longer-RTT flow is allowed more data in
flight and takes more (Hock, Bless, Zitterbart, "Experimental Evaluation
of BBR Congestion Control", ICNP 2017; Ware et al., IMC 2019). The same
for BBRv3, whose loss and headroom bounds change how the queue is shared."""
from __future__ import annotations

import math

from p4cc_topo.plan import port_towards

from .. import blocks, metrics
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..verdicts import RATE, fmt, verdict
from . import bbr_common as bc

#: The bottleneck's own one-way delay; access links make up each RTT.
BOTTLENECK_ONE_WAY_S = 0.0005
SOURCE = ("Hock, Bless, Zitterbart, ICNP 2017 (RTT unfairness: the longer-RTT BBR flow gets "
          "more); Ware et al., IMC 2019 (the in-flight cap grows with the RTT estimate)")


class BbrRtt(Experiment):
    id = "bbr-rtt"
    title = "RTT unfairness: two BBR flows with different RTTs"
    source = "Hock et al., ICNP 2017; Ware et al., IMC 2019"
    description = ("Two flows of one BBR implementation share a bottleneck, one with a short "
                   "RTT and one with a longer one; the buffer is one BDP of the longer flow. "
                   "BBRv1 caps its data in flight at 2 × bandwidth × min_rtt, so the "
                   "longer-RTT flow, allowed more in flight, takes more of the link. Arms: "
                   "kernel BBRv1, p4cc's BBRv1 and BBRv3 (user-space transport).")
    # 1 Gb/s in virtual time; kernel BBR would be p4cc's bbr again there.
    paper = ["rate=1Gbps", "long_rtts=20ms,40ms,60ms,80ms", "bbrs=bbr,bbr3", "duration=60",
             "warmup=20"]
    params = [
        Param("rate", "50Mbps", "bottleneck rate", rate_bps, 1e6, 1e11),
        Param("short_rtt", "10ms", "RTT of the short flow", seconds, 0.002, 1),
        Param("long_rtts", "20ms,80ms", "RTTs of the long flow, an arm each (paper: 20-80 ms)",
              str_list),
        Param("buffer_bdp", 1.0, "bottleneck buffer in BDPs of the long flow", float, 0.01, 100),
        Param("bbrs", "kernel,bbr,bbr3", "BBR implementations: kernel (tcp_bbr), bbr, bbr3 "
              "(p4cc's, user-space transport)", str_list),
        Param("duration", 30, "seconds per arm", seconds, 0.01, 3600),
        Param("warmup", 10, "seconds left out at the start", seconds, 0, 600),
        Param("seed", 1, "random seed", int),
    ]

    def arms(self, p):
        longs = [seconds(x) for x in p["long_rtts"]]
        if not longs or min(longs) <= p["short_rtt"]:
            raise ValueError("long_rtts: every long RTT must exceed short_rtt")
        out = []
        for impl in bc.impls(p):
            cc, dp, lab = bc.IMPLS[impl]
            for rtt in longs:
                pkts = bc.buffer_pkts(p["buffer_bdp"], p["rate"], rtt)
                topo = bc.dumbbell(p, pkts, [p["short_rtt"], rtt], BOTTLENECK_ONE_WAY_S)
                agents = blocks.long_flows(topo, ["h1", "h2"], "rx", cc, dp, p["duration"],
                                           p["seed"], line_rate_bps=p["rate"])
                out.append(blocks.arm(
                    f"{impl}-rtt{rtt * 1e3:g}ms", f"{lab}, {p['short_rtt'] * 1e3:g} vs "
                    f"{rtt * 1e3:g} ms", topo, agents, p["duration"], p["warmup"],
                    port_towards(topo, "rx"),
                    {"bbr": impl, "cc": cc, "datapath": dp, "long_rtt": rtt, "buffer_pkts": pkts}))
        return out

    def arm_row(self, p, r) -> dict:
        g = bc.goodput_by_sender(r)
        short, long_ = sum(g.get("h1", [])), sum(g.get("h2", []))
        s = r["settings"]
        return {"label": r["label"], "bbr": s["bbr"], "long_rtt_ms": s["long_rtt"] * 1e3,
                "short_mbps": short, "long_mbps": long_,
                "long_over_short": long_ / short if short > 0 else math.inf,
                "long_share": bc.share(long_, short + long_),
                "utilisation": metrics.utilisation(r, p["rate"]),
                "loss_rate": bc.loss_rate(r)[0], **bc.queue_stats(r)}

    def analyse(self, p, results):
        summary = {name: self.arm_row(p, r) for name, r in results.items()}
        verdicts = []
        for name, v in summary.items():
            if v["bbr"] not in bc.V1:
                continue  # BBRv3: reported beside, no source gives a direction to judge
            ratio = v["long_over_short"]
            verdicts.append(verdict(
                f"{v['label']}: long-RTT flow's throughput over the short one's "
                f"({fmt(v['long_mbps'], 3)} vs {fmt(v['short_mbps'], 3)} Mb/s)", ratio, ratio > 1,
                "> 1: the longer-RTT flow takes more (no magnitude given by the sources)",
                "> 1", SOURCE, RATE, [name]))
        summary["long_over_short"] = {f"{v['bbr']} @ {v['long_rtt_ms']:g} ms": v["long_over_short"]
                                      for v in list(summary.values()) if isinstance(v, dict)}
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        rows = [v for v in summary.values() if isinstance(v, dict) and "long_share" in v]
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for impl in dict.fromkeys(v["bbr"] for v in rows):
            pts = sorted((v["long_rtt_ms"], v["long_share"]) for v in rows if v["bbr"] == impl)
            ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=bc.label(impl))
        ax.axhline(0.5, ls="--", color="k", lw=1, label="equal shares")
        ax.set_ylim(0, 1.05)
        ax.set_xlabel(f"RTT of the long flow (ms; the short one: {p['short_rtt'] * 1e3:g} ms)")
        ax.set_ylabel("long-RTT flow's share of the link")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = outdir / "long_rtt_share.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]
