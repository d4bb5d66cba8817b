"""The PCC seeds' own friendliness test: five TCP flows share a
bottleneck; then one of them is replaced by PCC. How much do the four
remaining TCP flows keep? (100 Mbps, 30 ms RTT, 375 KB buffer.)"""
from __future__ import annotations

from p4cc_topo import load_topology
from p4cc_topo.plan import port_towards

from .. import blocks, metrics
from ..blocks import cc_label
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..verdicts import RATE, verdict


VARIANTS = set(blocks.PCC_VARIANTS)


def mixed_arm(variant: str) -> str:
    """The arm where sender 1 runs ``variant`` ("one-pcc" for Allegro, as before)."""
    return "one-pcc" if variant == "pcc" else f"one-{variant}"


class PccFriendliness(Experiment):
    id = "pcc-friendliness"
    title = "Friendliness: what TCP keeps next to PCC"
    source = "PCC seed 001 (CS244 '16), own test"
    description = ("Five senders share a 100 Mbps bottleneck. In the baseline all five run "
                   "TCP; in each further arm sender 1 runs a PCC variant instead (Allegro, "
                   "Vivace). The TCP flows' share "
                   "in both arms says how friendly PCC is to TCP.")
    # The seed's own test, at 60 s per arm.
    paper = ["duration=60", "warmup=10"]
    params = [
        Param("rate", "100Mbps", "bottleneck rate", rate_bps, 1e6, 1e11),
        Param("rtt", "30ms", "base round-trip time", seconds, 0, 2),
        Param("buffer", 250, "bottleneck buffer, packets (375 KB)", int, 1, 100_000),
        Param("senders", 5, "flows", int, 2, 20),
        Param("tcp", "cubic", "the TCP (user-space transport)", str),
        Param("pcc", "pcc,pcc-vivace", "the PCC variants, an arm each (pcc, pcc-vivace, pcc-vivace-loss)",
              str_list),
        Param("duration", 20, "seconds per arm", seconds, 0.01, 3600),
        Param("warmup", 5, "seconds ignored at the start", seconds, 0, 600),
        Param("seed", 1, "random seed", int),
    ]

    def arms(self, p):
        n = p["senders"]
        topo = load_topology("dumbbell", n_senders=n, bottleneck_bps=p["rate"],
                             access_bps=p["rate"], delay_us=f"{p['rtt'] / 4 * 1e6:.0f}us",
                             buffer_pkts=p["buffer"], ecn_k_pkts=None)
        for v in p["pcc"]:
            if v not in VARIANTS:
                raise ValueError(f"pcc: unknown variant '{v}' ({', '.join(sorted(VARIANTS))})")
        out = []
        for name, label, ccs in [("all-tcp", f"{n} × {cc_label(p['tcp'])}", [p["tcp"]] * n)] + [
                (mixed_arm(v), f"1 × {cc_label(v)} + {n - 1} × {cc_label(p['tcp'])}",
                 [v] + [p["tcp"]] * (n - 1)) for v in p["pcc"]]:
            agents = blocks.long_flows(topo, topo.role("senders"), "rx", ccs, "user",
                                       p["duration"], p["seed"], line_rate_bps=p["rate"])
            out.append(blocks.arm(name, label, topo, agents, p["duration"], p["warmup"],
                                  port_towards(topo, "rx"),
                                  {"ccs": ccs, "cc": p["tcp"], "datapath": "user"}))
        return out

    def analyse(self, p, results):
        summary = {}
        for name, r in results.items():
            row = metrics.arm_summary(p, r)
            ccs = r["settings"]["ccs"]
            flows = row["per_flow_mbps"]
            row["tcp_flows_mbps"] = sum(x for x, cc in zip(flows, ccs) if cc == p["tcp"])
            row["tcp_flows_of_4"] = sum(x for x, cc in zip(flows[1:], ccs[1:]) if cc == p["tcp"])
            summary[name] = row
        verdicts = []
        base = summary.get("all-tcp")
        for v in p["pcc"]:
            arm = mixed_arm(v)
            mixed = summary.get(arm)
            if not (base and mixed):
                continue
            kept = mixed["tcp_flows_of_4"] / base["tcp_flows_of_4"] if base["tcp_flows_of_4"] else 0
            total = sum(mixed["per_flow_mbps"])
            share = mixed["per_flow_mbps"][0] / total if total else float("nan")
            # "pcc_share"/"tcp_kept_fraction" stay Allegro's (the seed's test);
            # each variant's are beside them.
            suffix = "" if v == "pcc" else "_" + v.replace("-", "_")
            summary["tcp_kept_fraction" + suffix] = kept
            summary["pcc_share" + suffix] = share
            if v in ("pcc", "pcc-allegro"):
                # The seed measured Allegro; Vivace (NSDI 2018) claims to be
                # friendlier but gives no share for this setup, so its share
                # is reported, not judged.
                verdicts.append(verdict(
                    "PCC's share next to 4 TCP flows", share, share >= 0.5,
                    f"PCC dominates (a fair share would be 1/{p['senders']})",
                    "≥ 0.5 of the link",
                    "PCC seed 001, own test (PCC's default utility is not TCP-friendly)", RATE,
                    [arm]))
        for arm, row in summary.items():
            if isinstance(row, dict) and "utilisation" in row:
                verdicts.append(verdict(
                    f"{row['label']}: the link stays busy", row["utilisation"],
                    row["utilisation"] >= 0.9, "100 % of the bottleneck", "≥ 90 %",
                    "PCC seed 001 (both arms at line rate)", RATE, [arm]))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 3.6))
        names = [n for n in results if n in summary]
        for k, name in enumerate(names):
            bottom = 0.0
            for i, (mbps, cc) in enumerate(zip(summary[name]["per_flow_mbps"],
                                               results[name]["settings"]["ccs"])):
                ax.bar(k, mbps, bottom=bottom, color="tab:orange" if cc != p["tcp"] else "tab:blue",
                       edgecolor="white")
                bottom += mbps
        ax.set_xticks(range(len(names)), [summary[n]["label"] for n in names])
        ax.axhline(p["rate"] / 1e6, ls="--", color="k", lw=1)
        ax.set_ylabel("throughput (Mbps), one block per flow")
        ax.set_title("orange: PCC, blue: TCP", fontsize=9)
        fig.tight_layout()
        path = outdir / "shares.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return [path]
