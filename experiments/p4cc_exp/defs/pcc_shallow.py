"""PCC Fig. 7: throughput against the bottleneck buffer, PCC vs Cubic, on
a 100 Mbps bottleneck behind 1 Gbps access links."""
from __future__ import annotations

from p4cc_topo import load_topology

from .. import metrics, pccplot
from ..blocks import EXTERNAL_PARAMS, PCC_PARAMS, cc_label
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..verdicts import RATE, verdict
from .pcc_lossy import bottleneck_sweep, reference_verdicts


def buffers(p: dict) -> list[int]:
    out = [int(b) for b in p["buffers"]]
    if min(out) < 1:
        raise ValueError("buffers must be at least 1 packet")
    return out


def buffer_sweep(p: dict, loss: float = 0.0) -> list:
    """One arm per (bottleneck buffer, protocol), 1 Gbps access links."""
    def topology(b):
        return load_topology("dumbbell", n_senders=p["senders"], bottleneck_bps=p["rate"],
                             access_bps=p["access"], delay_us=f"{p['rtt'] / 4 * 1e6:.0f}us",
                             buffer_pkts=b, ecn_k_pkts=None, loss=loss)
    return bottleneck_sweep(p, buffers(p), topology, lambda cc, b: f"{cc}-buf{b}",
                            lambda cc, b: f"{cc_label(cc)}, {b}-packet buffer", "depth_pkts")


def buffer_summary(p: dict, results: dict) -> dict:
    summary = {}
    for name, r in results.items():
        row = metrics.arm_summary(p, r)
        row.update(buffer=r["settings"]["depth_pkts"], cc=r["settings"]["cc"])
        summary[name] = row
    return summary


def buffer_plot(p: dict, summary: dict, outdir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for cc in p["protocols"]:
        rows = sorted((r["buffer"], r["throughput_mbps"]) for r in summary.values()
                      if r["cc"] == cc)
        ax.plot([b for b, _ in rows], [t for _, t in rows], marker="o", label=cc_label(cc))
    bdp = p["rate"] * p["rtt"] / (8 * 1500)
    ax.axvline(bdp, ls=":", color="gray", label=f"BDP ≈ {bdp:.0f} pkts")
    ax.axhline(p["rate"] / 1e6, ls="--", color="k", lw=1, label="link rate")
    ax.set_xscale("log")
    ax.set_xlabel("bottleneck buffer (packets)")
    ax.set_ylabel("throughput (Mbps)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    path = outdir / "throughput_vs_buffer.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


class PccShallow(Experiment):
    id = "pcc-shallow"
    title = "Throughput with shallow buffers"
    source = "PCC (NSDI 2015) Fig. 7"
    description = ("One flow from a 1 Gbps access link into a 100 Mbps bottleneck whose buffer "
                   "is swept from a few packets up. Loss-based TCP needs about a BDP of buffer; "
                   "PCC's utility keeps the link busy with far less.")
    # PCC Fig. 7: 60 s averages per point.
    paper = ["duration=60", "warmup=5", "buffers=5,10,20,40,75,150,275"]
    params = [
        Param("rate", "100Mbps", "bottleneck rate", rate_bps, 1e6, 1e11),
        Param("access", "1Gbps", "access link rate", rate_bps, 1e6, 1e11),
        Param("rtt", "30ms", "base round-trip time", seconds, 0, 2),
        Param("buffers", "5,20,75,275", "bottleneck buffers to sweep, packets (paper: 5-275)",
              str_list),
        Param("protocols", "pcc,pcc-vivace,cubic", "arms (user-space transport)", str_list),
        *EXTERNAL_PARAMS,
        *PCC_PARAMS,
        Param("senders", 1, "flows", int, 1, 10),
        Param("duration", 10, "seconds per point (paper: 60)", seconds, 0.01, 3600),
        Param("warmup", 3, "seconds ignored at the start", seconds, 0, 600),
        Param("seed", 1, "random seed", int),
    ]

    def arms(self, p):
        return buffer_sweep(p)

    def analyse(self, p, results):
        summary = buffer_summary(p, results)
        verdicts = []
        rate_mbps = p["rate"] / 1e6
        small = min(buffers(p))
        bdp = p["rate"] * p["rtt"] / (8 * 1500)
        for name, row in summary.items():
            if row["cc"].startswith("pcc") and row["buffer"] == small:
                verdicts.append(verdict(
                    f"{row['label']}: throughput", row["throughput_mbps"],
                    row["throughput_mbps"] >= 0.9 * rate_mbps, f"{rate_mbps:g} Mb/s (the link)",
                    "≥ 90 %", "PCC (NSDI 2015) Fig. 7 (PCC near capacity from a 5-packet buffer)",
                    RATE, [name]))
            if row["cc"] in ("cubic", "reno") and row["buffer"] >= bdp:
                verdicts.append(verdict(
                    f"{row['label']} (≥ 1 BDP = {bdp:.0f} pkts): throughput",
                    row["throughput_mbps"], row["throughput_mbps"] >= 0.9 * rate_mbps,
                    f"{rate_mbps:g} Mb/s (the link)", "≥ 90 %",
                    "the BDP rule of thumb (Villamizar & Song 1994); PCC Fig. 7's TCP at 1 BDP",
                    RATE, [name]))
        verdicts += reference_verdicts(summary, "buffer", lambda b: f"a {b}-packet buffer")
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        return [buffer_plot(p, summary, outdir)] + pccplot.mi_rates(results, summary, p["rate"] / 1e6,
                                                                    outdir)
