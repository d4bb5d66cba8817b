"""PCC's lossy-link figure: throughput against random loss on the
bottleneck, PCC vs Cubic (100 Mbps, 30 ms RTT, 375 KB buffer)."""
from __future__ import annotations

from p4cc_topo import load_topology

from ..experiment import Arm
from ..params import Param, fraction, rate_bps, seconds, str_list
from .compare import CompareProtocols, cc_label


class PccLossy(CompareProtocols):
    id = "pcc-lossy"
    title = "Throughput on a lossy link"
    source = "PCC (NSDI 2015) lossy-link figure"
    description = ("One flow over a 100 Mbps bottleneck that drops packets at random "
                   "(the embedded target's link loss). Loss-based TCP collapses; PCC's "
                   "utility tolerates random loss below its 5 % threshold.")
    params = [
        Param("rate", "100Mbps", "bottleneck rate", rate_bps, 1e6, 1e9),
        Param("rtt", "30ms", "base round-trip time", seconds, 0, 2),
        Param("buffer", 250, "bottleneck buffer, packets (375 KB)", int, 1, 100_000),
        Param("losses", "0,0.01,0.02,0.04", "loss probabilities to sweep", str_list),
        Param("protocols", "pcc,cubic", "arms (user-space transport)", str_list),
        Param("senders", 1, "flows", int, 1, 10),
        Param("duration", 10, "seconds per point", seconds, 2, 3600),
        Param("warmup", 3, "seconds ignored at the start", seconds, 0, 600),
        Param("seed", 1, "random seed", int),
    ]

    def topology(self, p):
        one_way = p["rtt"] / 4
        return load_topology("dumbbell", n_senders=p["senders"], bottleneck_bps=p["rate"],
                             access_bps=p["rate"], delay_us=f"{one_way * 1e6:.0f}us",
                             buffer_pkts=p["buffer"], ecn_k_pkts=None)

    def arms(self, p):
        losses = [fraction(x) for x in p["losses"]]
        return [Arm(f"{cc}-loss{loss * 100:g}", f"{cc_label(cc)}, {loss * 100:g}% loss",
                    {"cc": cc, "datapath": "user", "loss": loss, "cc_params": {}})
                for loss in losses for cc in p["protocols"]]

    def analyse(self, p, results):
        summary = {}
        for name, r in results.items():
            row = self.arm_summary(p, r)
            row["loss"] = r["settings"]["loss"]
            row["cc"] = r["settings"]["cc"]
            summary[name] = row
        checks = {}
        for name, row in summary.items():
            if row["cc"].startswith("pcc") and abs(row["loss"] - 0.02) < 1e-9:
                cubic = summary.get(f"cubic-loss{row['loss'] * 100:g}")
                if cubic:
                    checks[f"PCC at 2% loss well above Cubic ({row['throughput_mbps']:.1f} vs "
                           f"{cubic['throughput_mbps']:.1f} Mbps)"] = \
                        row["throughput_mbps"] >= 3 * cubic["throughput_mbps"]
        return summary, checks

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 3.6))
        for cc in p["protocols"]:
            rows = sorted((r["loss"], r["throughput_mbps"]) for r in summary.values() if r["cc"] == cc)
            ax.plot([x * 100 for x, _ in rows], [y for _, y in rows], marker="o", label=cc_label(cc))
        # Mathis et al.: TCP's loss-limited rate ≈ 1.22·MSS/(RTT·sqrt(p)).
        xs = [x / 10 for x in range(2, 61)]
        ax.plot(xs, [min(p["rate"] / 1e6, 1.22 * 1336 * 8 / (p["rtt"] * (x / 100) ** 0.5) / 1e6)
                     for x in xs], ls=":", color="gray", label="TCP model (Mathis)")
        ax.axhline(p["rate"] / 1e6, ls="--", color="k", lw=1, label="link rate")
        ax.set_xlabel("random loss (%)")
        ax.set_ylabel("throughput (Mbps)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = outdir / "throughput_vs_loss.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]
