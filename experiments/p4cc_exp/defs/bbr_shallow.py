"""BBR in a shallow buffer: the loss rate BBRv1 and BBRv3 run at when the
bottleneck buffer is a fraction of a BDP. BBRv1 does not react to loss
(below its policer test), probes at 1.25 × its bandwidth estimate and
keeps up to 2 BDP in flight per flow, so in a shallow buffer several of
its flows keep the queue overflowing; bounding that loss is what BBRv2 and
BBRv3 set out to do (Cardwell et al., BBRv2 and BBRv3 presentations to the
IETF's ICCRG/CCWG): draft-ietf-ccwg-bbr's BBR.LossThresh stops a probe
once a round loses more than 2 % of its data."""
from __future__ import annotations

import math

from p4cc_topo.plan import port_towards

from .. import blocks, metrics
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..verdicts import RATE, fmt, verdict
from . import bbr_common as bc

#: draft-ietf-ccwg-bbr (BBR.LossThresh, §2.8): the loss rate per round trip
#: above which a BBRv3 probe counts as too high.
LOSS_THRESH = 0.02
#: "Well above": BBRv1's loss rate at least this many times BBRv3's. A
#: judgement, not a sourced number (the sources state the direction).
V1_OVER_V3 = 2.0
BOTTLENECK_ONE_WAY_S_SHARE = 0.25  # of the RTT: access and bottleneck delay alike
SOURCE_V3 = ("draft-ietf-ccwg-bbr-06 §2.8, §5.5.10 (BBR.LossThresh = 2 %: a probe whose round "
             "loses more is stopped and inflight_longterm cut)")
SOURCE_V1 = ("Cardwell et al., BBRv2/BBRv3 at IETF ICCRG/CCWG (BBRv1's loss in shallow buffers "
             "is the problem they address); Linux tcp_bbr.c (no loss response but the policer "
             "test at 20 % loss)")


class BbrShallow(Experiment):
    id = "bbr-shallow"
    title = "BBRv1's and BBRv3's loss rate in a shallow buffer"
    source = "draft-ietf-ccwg-bbr-06 (BBR.LossThresh); Cardwell et al., BBRv2/v3 at the IETF"
    description = ("A few flows of one BBR implementation share a bottleneck whose buffer is a "
                   "fraction of a BDP. BBRv1 ignores loss and keeps the small queue "
                   "overflowing; BBRv3 bounds its probing by the loss it causes (2 % per "
                   "round). The loss rate is the bottleneck's own: tail drops over the packets "
                   "offered to its queue after the warm-up. Arms: kernel BBRv1, p4cc's BBRv1 "
                   "and BBRv3 (user-space transport).")
    # 1 Gb/s in virtual time; kernel BBR would be p4cc's bbr again there.
    paper = ["rate=1Gbps", "buffers=0.1,0.25,0.5,1", "bbrs=bbr,bbr3", "duration=30", "warmup=10"]
    params = [
        Param("rate", "50Mbps", "bottleneck rate", rate_bps, 1e6, 1e11),
        Param("rtt", "20ms", "base RTT of every flow", seconds, 0.001, 1),
        Param("flows", 2, "flows, one per sender", int, 1, 16),
        Param("buffers", "0.1,0.5,1", "bottleneck buffers in BDPs", str_list),
        Param("bbrs", "kernel,bbr,bbr3", "BBR implementations: kernel (tcp_bbr), bbr, bbr3 "
              "(p4cc's, user-space transport)", str_list),
        Param("duration", 20, "seconds per arm", seconds, 0.01, 3600),
        Param("warmup", 5, "seconds left out at the start (Startup's own losses)", seconds, 0, 600),
        Param("seed", 1, "random seed", int),
    ]

    def arms(self, p):
        out = []
        for impl in bc.impls(p):
            cc, dp, lab = bc.IMPLS[impl]
            for x in bc.floats(p["buffers"], "buffers"):
                pkts = bc.buffer_pkts(x, p["rate"], p["rtt"])
                topo = bc.dumbbell(p, pkts, [p["rtt"]] * p["flows"],
                                   BOTTLENECK_ONE_WAY_S_SHARE * p["rtt"])
                agents = blocks.long_flows(topo, topo.role("senders"), "rx", cc, dp,
                                           p["duration"], p["seed"], line_rate_bps=p["rate"])
                out.append(blocks.arm(
                    f"{impl}-buf{x:g}", f"{lab}, {x:g} BDP ({pkts} pkts)", topo, agents,
                    p["duration"], p["warmup"], port_towards(topo, "rx"),
                    {"bbr": impl, "cc": cc, "datapath": dp, "buffer_bdp": x, "buffer_pkts": pkts}))
        return out

    def analyse(self, p, results):
        summary = {}
        for name, r in results.items():
            loss, how = bc.loss_rate(r)
            s = r["settings"]
            summary[name] = {"label": r["label"], "bbr": s["bbr"], "buffer_bdp": s["buffer_bdp"],
                             "buffer_pkts": s["buffer_pkts"], "loss_rate": loss,
                             "loss_measured_by": how,
                             "throughput_mbps": sum(metrics.steady_flow_mbps(r)),
                             "utilisation": metrics.utilisation(r, p["rate"]),
                             **bc.queue_stats(r)}
        rows = [v for v in summary.values()]
        summary["loss_table"] = {f"{v['bbr']} @ {v['buffer_bdp']:g} BDP": v["loss_rate"]
                                 for v in rows}
        verdicts = []
        for x in sorted({v["buffer_bdp"] for v in rows}):
            if x >= 1:
                continue  # a BDP or more is not shallow
            at = {v["bbr"]: (n, v) for n, v in summary.items()
                  if isinstance(v, dict) and v.get("buffer_bdp") == x}
            v3 = at.get("bbr3")
            if v3:
                n3, r3 = v3
                verdicts.append(verdict(
                    f"{r3['label']}: loss rate", r3["loss_rate"], r3["loss_rate"] <= LOSS_THRESH,
                    f"at most BBR.LossThresh = {LOSS_THRESH:.0%} per round (rounds that do not "
                    "probe lose less)", f"≤ {LOSS_THRESH:.0%}", SOURCE_V3, RATE, [n3]))
            for impl in bc.V1:
                if impl not in at:
                    continue
                n1, r1 = at[impl]
                if v3:
                    ok = (r1["loss_rate"] > LOSS_THRESH
                          and r1["loss_rate"] >= V1_OVER_V3 * r3["loss_rate"])
                    ratio = (r1["loss_rate"] / r3["loss_rate"] if r3["loss_rate"] > 0
                             else math.inf)
                    verdicts.append(verdict(
                        f"{r1['label']}: loss rate {fmt(r1['loss_rate'], 3)} against BBRv3's "
                        f"{fmt(r3['loss_rate'], 3)} (ratio)", ratio, ok,
                        f"well above BBRv3's, and above the {LOSS_THRESH:.0%} BBRv3 is held to",
                        f"≥ {V1_OVER_V3:g} × BBRv3's and > {LOSS_THRESH:.0%} (the factor a "
                        "judgement: the sources give the direction)", SOURCE_V1, RATE, [n1, n3]))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        rows = [v for v in summary.values() if isinstance(v, dict) and "loss_rate" in v]
        fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
        for impl in dict.fromkeys(v["bbr"] for v in rows):
            pts = sorted((v["buffer_bdp"], v["loss_rate"] * 100, v["utilisation"]) for v in rows
                         if v["bbr"] == impl)
            axes[0].plot([a for a, _, _ in pts], [b for _, b, _ in pts], marker="o",
                         label=bc.label(impl))
            axes[1].plot([a for a, _, _ in pts], [c for _, _, c in pts], marker="o",
                         label=bc.label(impl))
        axes[0].axhline(LOSS_THRESH * 100, ls="--", color="k", lw=1, label="BBR.LossThresh 2 %")
        axes[0].set_ylabel("bottleneck loss rate (%)")
        axes[1].set_ylabel("utilisation")
        axes[1].set_ylim(0, 1.05)
        for ax in axes:
            ax.set_xscale("log")
            ax.set_xlabel("bottleneck buffer (BDP)")
            ax.legend(fontsize=7)
        fig.tight_layout()
        path = outdir / "loss_vs_buffer.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]
