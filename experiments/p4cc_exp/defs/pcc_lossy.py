"""PCC's lossy-link figure: throughput against random loss on the
bottleneck, PCC vs Cubic (100 Mbps, 30 ms RTT, 375 KB buffer)."""
from __future__ import annotations

from p4cc_topo import load_topology
from p4cc_topo.plan import port_towards

from .. import blocks, metrics, pccplot
from ..blocks import EXTERNAL_PARAMS, PCC_PARAMS, cc_label
from ..experiment import Experiment
from ..params import Param, fraction, rate_bps, seconds, str_list
from ..theory import tcp_model_bps
from ..verdicts import RATE, against_reference, verdict


def bottleneck_sweep(p: dict, points: list, topology, name, label, setting: str) -> list:
    """One arm per (point, protocol): ``topology(point)`` a dumbbell whose
    bottleneck has the swept property, long flows of the protocol across
    it — p4cc's transport, or an external program (the user's, a
    reference implementation; skipped, with the plan's note saying why,
    where it is not given)."""
    out = []
    for cc in p["protocols"]:
        for x in points:
            topo = topology(x)
            flows = [(h, "rx", 0.0, p["duration"]) for h in topo.role("senders")]
            try:
                agents, settings = blocks.protocol_flows(cc, p, flows, p["seed"],
                                                         line_rate_bps=p["rate"])
            except blocks.SkipArm:
                break
            out.append(blocks.arm(name(cc, x), arm_label(settings, label(cc, x)), topo, agents,
                                  p["duration"], p["warmup"], port_towards(topo, "rx"),
                                  {**settings, setting: x}))
    return out


def reference_verdicts(summary: dict, key: str, where) -> list:
    """p4cc's PCC against its authors' code at each point both ran: the
    bottleneck's wire rate (what the switch counted for either)."""
    return [against_reference(
        f"{cc_label(r['cc'])} at {where(r[key])}: wire rate", r["wire_mbps"], rr["wire_mbps"],
        rr["label"].split(",")[0], [n, rn])
        for rn, rr, n, r in blocks.reference_pairs(summary, lambda a, b: a[key] == b[key])]


def arm_label(settings: dict, label: str) -> str:
    """An external arm's label names its program in place of p4cc's."""
    if settings.get("datapath") != "external":
        return label
    return f"{settings['external']}, {label.split(', ', 1)[-1]}"


class PccLossy(Experiment):
    id = "pcc-lossy"
    title = "Throughput on a lossy link"
    source = "PCC (NSDI 2015) lossy-link figure"
    description = ("One flow over a 100 Mbps bottleneck that drops packets at random "
                   "(the embedded target's link loss). Loss-based TCP collapses; PCC's "
                   "utility tolerates random loss below its 5 % threshold.")
    # PCC's lossy-link figure: 0-6 % random loss, 60 s per point.
    paper = ["losses=0,0.01,0.02,0.03,0.04,0.05,0.06", "duration=60", "warmup=5"]
    params = [
        Param("rate", "100Mbps", "bottleneck rate", rate_bps, 1e6, 1e11),
        Param("rtt", "30ms", "base round-trip time", seconds, 0, 2),
        Param("buffer", 250, "bottleneck buffer, packets (375 KB)", int, 1, 100_000),
        Param("losses", "0,0.01,0.02,0.04", "loss probabilities to sweep", str_list),
        Param("protocols", "pcc,pcc-vivace,cubic", "arms (user-space transport)", str_list),
        *EXTERNAL_PARAMS,
        *PCC_PARAMS,
        Param("senders", 1, "flows", int, 1, 10),
        Param("duration", 10, "seconds per point", seconds, 0.01, 3600),
        Param("warmup", 3, "seconds ignored at the start", seconds, 0, 600),
        Param("seed", 1, "random seed", int),
    ]

    def arms(self, p):
        def topology(loss):
            return load_topology("dumbbell", n_senders=p["senders"], bottleneck_bps=p["rate"],
                                 access_bps=p["rate"], delay_us=f"{p['rtt'] / 4 * 1e6:.0f}us",
                                 buffer_pkts=p["buffer"], ecn_k_pkts=None, loss=loss)
        return bottleneck_sweep(p, [fraction(x) for x in p["losses"]], topology,
                                lambda cc, x: f"{cc}-loss{x * 100:g}",
                                lambda cc, x: f"{cc_label(cc)}, {x * 100:g}% loss", "loss")

    def analyse(self, p, results):
        summary = {}
        for name, r in results.items():
            row = metrics.arm_summary(p, r)
            row["loss"] = r["settings"]["loss"]
            row["cc"] = r["settings"]["cc"]
            summary[name] = row
        verdicts = []
        rate_mbps = p["rate"] / 1e6
        for name, row in summary.items():
            if abs(row["loss"] - 0.02) > 1e-9:
                continue
            if row["cc"].startswith("pcc"):
                verdicts.append(verdict(
                    f"{row['label']}: throughput at 2 % random loss", row["throughput_mbps"],
                    row["throughput_mbps"] >= 0.8 * rate_mbps, f"most of {rate_mbps:g} Mb/s",
                    "≥ 80 % of the link", "PCC (NSDI 2015) lossy-link figure (random loss below "
                    "the utility's 5 % knee barely slows PCC)", RATE, [name]))
            elif row["cc"] in ("cubic", "reno"):
                model, what = tcp_model_bps(row["cc"], p["rtt"], row["loss"])
                verdicts.append(verdict(
                    f"{row['label']}: throughput at 2 % random loss", row["throughput_mbps"],
                    model / 2e6 <= row["throughput_mbps"] <= 2 * model / 1e6,
                    f"{what}: {model / 1e6:.2f} Mb/s", "within ×2",
                    "Mathis et al. 1997; RFC 9438; PCC lossy-link figure", RATE, [name]))
        verdicts += reference_verdicts(summary, "loss", lambda x: f"{x * 100:g} % loss")
        return summary, verdicts

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
        return [path] + pccplot.mi_rates(results, summary, p["rate"] / 1e6, outdir)
