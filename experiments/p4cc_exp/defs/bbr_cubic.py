"""One BBR flow against 1…16 Cubic flows across bottleneck buffers of
0.5…16 BDP (Ware, Mukerjee, Seshan, Sherry, "Modeling BBR's Interactions
with Loss-Based Congestion Control", IMC 2019): BBR's share of the link
per (buffer, number of Cubic flows), for BBRv1 and BBRv3, beside the
paper's model of BBRv1 (theory.ware_bbr_share).

Their headline finding: against loss-based flows BBR is window-limited by
its in-flight cap, so its share is set by the buffer, not by how many
loss-based flows it competes with."""
from __future__ import annotations

import math

from .. import blocks, metrics
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..stats import percentile
from ..theory import ware_bbr_share
from ..verdicts import RATE, fmt, verdict
from . import bbr_common as bc

#: Ware et al.: the model predicts BBR's throughput against Cubic with a
#: median error of 5 % (read here as 5 % of the link).
MODEL_MEDIAN_ERROR = 0.05
#: BBR's share may vary this much across the number of Cubic flows at one
#: buffer and still be "independent of it": two shares, each within the
#: model's median error.
N_SPREAD = 2 * MODEL_MEDIAN_ERROR
SOURCE = "Ware, Mukerjee, Seshan, Sherry, IMC 2019 §4"
V3_NOTE = ("stated for BBRv1; BBRv3 judged against the same claim (Sarpkaya et al., "
           "IFIP Networking 2025, find BBRv3 departs from the BBRv1 models)")


class BbrCubic(Experiment):
    id = "bbr-cubic"
    title = "One BBR flow against N Cubic flows: BBR's share by buffer"
    source = "Ware et al., IMC 2019 (Modeling BBR's Interactions with Loss-Based CC)"
    description = ("One BBR flow and N Cubic flows (kernel TCP) share a bottleneck whose buffer "
                   "is swept in BDPs. Ware et al. model BBRv1 as limited by its in-flight cap "
                   "(2 × bandwidth estimate × RTT estimate) when it competes: its share then "
                   "depends on the buffer and not on N. Arms: kernel BBRv1 and p4cc's BBRv1 "
                   "and BBRv3 (user-space transport) against kernel Cubic.")
    # 1 Gb/s in virtual time, the paper's grid of buffers and Cubic counts;
    # kernel Cubic runs as p4cc's cubic there, and kernel BBR would be p4cc's
    # bbr again, so the paper scale runs p4cc's two BBRs.
    paper = ["rate=1Gbps", "rtt=10ms", "buffers=0.5,1,2,4,8,16", "cubics=1,2,4,8,16",
             "bbrs=bbr,bbr3", "duration=60", "warmup=20"]
    params = [
        Param("rate", "50Mbps", "bottleneck rate", rate_bps, 1e6, 1e11),
        Param("rtt", "20ms", "base RTT of every flow", seconds, 0.001, 1),
        Param("buffers", "1,4", "bottleneck buffers in BDPs (paper: 0.5-16)", str_list),
        Param("cubics", "1,4", "numbers of Cubic flows (paper: 1-16)", str_list),
        Param("bbrs", "kernel,bbr,bbr3", "BBR implementations: kernel (tcp_bbr), bbr, bbr3 "
              "(p4cc's, user-space transport)", str_list),
        Param("duration", 40, "seconds per arm", seconds, 0.01, 3600),
        Param("warmup", 10, "seconds left out at the start", seconds, 0, 600),
        bc.ACK_EVERY,
        Param("seed", 1, "random seed", int),
    ]

    def points(self, p):
        buffers = bc.floats(p["buffers"], "buffers")
        try:
            ns = [int(x) for x in p["cubics"]]
        except ValueError:
            raise ValueError(f"cubics: {p['cubics']} are not all whole numbers") from None
        if not ns or min(ns) < 1 or max(ns) > 64:
            raise ValueError("cubics: give numbers of Cubic flows in 1..64")
        return buffers, ns

    def arms(self, p):
        buffers, ns = self.points(p)
        out = []
        for impl in bc.impls(p):
            cc, dp, lab = bc.IMPLS[impl]
            for x in buffers:
                pkts = bc.buffer_pkts(x, p["rate"], p["rtt"])
                topo, queue = bc.wishbone(p, pkts)
                for n in ns:
                    agents = [bc.bbr_receiver("r1", impl, p), blocks.receiver("r2", "kernel", "cubic"),
                              bc.flows_sender("h1", "r1", cc, dp, 1, p["duration"], 1, p["seed"],
                                              p["rate"]),
                              bc.flows_sender("h2", "r2", "cubic", "kernel", n, p["duration"], 101,
                                              p["seed"] + 1)]
                    out.append(blocks.arm(f"{impl}-buf{x:g}-n{n}", f"{lab}, {x:g} BDP, {n} Cubic",
                                          topo, agents, p["duration"], p["warmup"], queue,
                                          {"bbr": impl, "cc": cc, "datapath": dp, "buffer_bdp": x,
                                           "buffer_pkts": pkts, "cubics": n}))
        return out

    # -- analysis -------------------------------------------------------------
    def arm_row(self, p, r) -> dict:
        s = r["settings"]
        g = bc.goodput_by_sender(r)
        bbr, cubic = sum(g.get("h1", [])), sum(g.get("h2", []))
        model = ware_bbr_share(s["buffer_pkts"] / bc.bdp_pkts(p["rate"], p["rtt"]), p["rate"],
                               p["rtt"])
        loss, how = bc.loss_rate(r)
        return {"label": r["label"], "bbr": s["bbr"], "buffer_bdp": s["buffer_bdp"],
                "cubics": s["cubics"], "bbr_mbps": bbr, "cubic_mbps": cubic,
                "cubic_per_flow_mbps": g.get("h2", []),
                "bbr_share": bc.share(bbr, bbr + cubic), "model_share": model["share"],
                "utilisation": metrics.utilisation(r, p["rate"]), "loss_rate": loss,
                "loss_measured_by": how, **bc.queue_stats(r)}

    def analyse(self, p, results):
        summary = {name: self.arm_row(p, r) for name, r in results.items()}
        rows = [v for v in summary.values()]
        table = {}
        for v in rows:
            table.setdefault(v["bbr"], {}).setdefault(f"{v['buffer_bdp']:g}", {})[
                str(v["cubics"])] = v["bbr_share"]
        summary["share_table"] = table
        summary["model"] = {f"{x:g}": ware_bbr_share(x, p["rate"], p["rtt"])["share"]
                            for x in sorted({v["buffer_bdp"] for v in rows})}
        verdicts = []
        for impl in dict.fromkeys(v["bbr"] for v in rows):
            for x in sorted({v["buffer_bdp"] for v in rows if v["bbr"] == impl}):
                pts = sorted((v["cubics"], v["bbr_share"]) for v in rows
                             if v["bbr"] == impl and v["buffer_bdp"] == x)
                arms = [n for n, v in summary.items() if isinstance(v, dict)
                        and v.get("bbr") == impl and v.get("buffer_bdp") == x]
                shares = [s for _, s in pts]
                if len(pts) >= 2:
                    spread = (max(shares) - min(shares)) if all(not math.isnan(s) for s in shares) \
                        else math.nan
                    verdicts.append(verdict(
                        f"{bc.label(impl)}, {x:g} BDP: BBR's share across {len(pts)} Cubic counts "
                        f"({', '.join(f'{n}: {fmt(s, 2)}' for n, s in pts)}), max − min", spread,
                        spread <= N_SPREAD, "the same share whatever the number of Cubic flows",
                        f"≤ {N_SPREAD:g} (twice the model's median error)",
                        SOURCE + ("" if impl in bc.V1 else "; " + V3_NOTE), RATE, arms))
                if impl in bc.V1:
                    model = summary["model"][f"{x:g}"]
                    err = percentile([abs(s - model) for s in shares], 50)
                    verdicts.append(verdict(
                        f"{bc.label(impl)}, {x:g} BDP: BBR's share against the model "
                        f"(median over N of |measured − model|; measured "
                        f"{fmt(percentile(shares, 50), 3)})", err, err <= MODEL_MEDIAN_ERROR,
                        f"model: {model:.3f} of the link", f"≤ {MODEL_MEDIAN_ERROR:g}",
                        SOURCE + ", eq. (9)-(11): share = (1 − p)(1 − (q/c + 0.2 s + l)/10 s), "
                        "p = max(0, 1/2 − 1/(2X) − 4N/q)", RATE, arms))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        rows = [v for v in summary.values() if isinstance(v, dict) and "bbr_share" in v]
        impls = list(dict.fromkeys(v["bbr"] for v in rows))
        fig, axes = plt.subplots(1, len(impls), figsize=(4.2 * len(impls), 3.6), squeeze=False,
                                 sharey=True)
        xs = sorted({v["buffer_bdp"] for v in rows})
        grid = [2 ** (k / 8) for k in range(int(8 * math.log2(min(xs))) - 1,
                                             int(8 * math.log2(max(xs))) + 2)]
        for ax, impl in zip(axes[0], impls):
            for n in sorted({v["cubics"] for v in rows}):
                pts = sorted((v["buffer_bdp"], v["bbr_share"]) for v in rows
                             if v["bbr"] == impl and v["cubics"] == n)
                ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=f"{n} Cubic")
            ax.plot(grid, [ware_bbr_share(g, p["rate"], p["rtt"])["share"] for g in grid], "k--",
                    lw=1, label="Ware et al. model (BBRv1)")
            ax.axhline(0.5, color="gray", lw=0.5, ls=":")
            ax.set_xscale("log", base=2)
            ax.set_ylim(0, 1.05)
            ax.set_xlabel("bottleneck buffer (BDP)")
            ax.set_title(bc.label(impl), fontsize=9)
        axes[0, 0].set_ylabel("BBR's share of the link")
        axes[0, -1].legend(fontsize=7)
        fig.tight_layout()
        path = outdir / "bbr_share_vs_buffer.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]
