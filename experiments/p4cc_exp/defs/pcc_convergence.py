"""PCC Fig. 12: four flows join one by one, then leave, on a wishbone (two
switches, flow i from h_i to r_i across the shared s1–s2 link). The PCC
seed's table: Jain's index per window and each flow's throughput
standard deviation, averaged over the windows where the same flows run,
PCC against TCP Cubic."""
from __future__ import annotations

import math
import time
from pathlib import Path

from p4cc_topo import load_topology

from .. import series
from ..experiment import Arm
from ..params import Param, rate_bps, seconds, str_list
from ..stats import jain_index, mean
from .compare import TCP_PORT, cc_label
from .dctcp_convergence import START_DELAY_S, DctcpConvergence

KERNEL = {"cubic", "reno"}


def bottleneck(view: dict) -> tuple[str, int, int]:
    """(switch, port, switch_id) of s1's port towards s2."""
    sw = view["switches"]["s1"]
    for num, port in sw["ports"].items():
        if port.get("peer") == "s2":
            return "s1", int(num), int(sw["switch_id"])
    raise ValueError("the topology has no s1 -> s2 link")


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


class PccConvergence(DctcpConvergence):
    id = "pcc-convergence"
    title = "Convergence and stability: PCC vs TCP, flows joining and leaving"
    source = "PCC (NSDI 2015) Fig. 12; the PCC seed's Jain / std-dev table"
    description = ("N flows share one 100 Mbps link between two switches (wishbone). Flow i "
                   "starts at i·interval and the flows stop in reverse order. PCC's flows "
                   "should converge to equal shares and stay there (Jain's index near 1, "
                   "small throughput deviation); Cubic's oscillate more.")
    params = [
        Param("rate", "100Mbps", "the shared s1–s2 link", rate_bps, 1e6, 1e9),
        Param("rtt", "30ms", "base round-trip time", seconds, 0.001, 1),
        Param("buffer", 250, "buffer of the shared link, packets (seed: 250, ≈ 1 BDP)", int,
              1, 100_000),
        Param("senders", 4, "flows (paper: 4)", int, 2, 10),
        Param("interval", 20, "seconds between joins/leaves (paper: 500)", seconds, 4, 3600),
        Param("window", 2, "window of the Jain index and deviation (paper: 100 s)", seconds,
              0.2, 600),
        Param("settle", 2, "seconds after each join/leave left out", seconds, 0, 600),
        Param("protocols", "pcc,cubic", "pcc / pcc-vivace (p4cc transport), cubic / reno "
              "(kernel TCP)", str_list),
        Param("cc_params", "", "PCC parameters KEY=VALUE,... (p4cc-host --list-cc)", str_list),
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
        arms = []
        for kv in p["cc_params"]:
            if "=" not in kv:
                raise ValueError(f"cc_params: '{kv}' is not KEY=VALUE")
        for cc in p["protocols"]:
            if cc not in KERNEL | {"pcc", "pcc-allegro", "pcc-vivace"}:
                raise ValueError(f"protocols: unknown '{cc}' (pcc, pcc-vivace, cubic, reno)")
            kernel = cc in KERNEL
            arms.append(Arm(cc, f"{cc_label(cc)} ({'kernel TCP' if kernel else 'p4cc transport'})",
                            {"cc": cc, "datapath": "kernel" if kernel else "user"}))
        return arms

    def postcard_one_in_n(self, p):
        return max(1, round(p["rate"] / 100e6))

    def run_arm(self, lab, arm, p, progress, outdir: Path) -> dict:
        cc, kernel = arm.settings["cc"], arm.settings["datapath"] == "kernel"
        n, iv = p["senders"], p["interval"]
        switch, port, switch_id = bottleneck(lab.view)
        procs = [lab.start_collector(outdir / "queue.csv")]
        for i in range(1, n + 1):
            rx = (["tcp-recv", "--listen", f"0.0.0.0:{TCP_PORT}", "--cc", cc] if kernel
                  else ["recv"])
            procs.append(lab.start(f"r{i}", [*rx, "--out", str(outdir / f"r{i}")], log=f"r{i}.log"))
        if kernel:
            for i in range(1, n + 1):  # plain TCP: no ECN, as in the paper
                lab.net.run(f"h{i}", ["sysctl", "-qw", "net.ipv4.tcp_ecn=0"], check=True)
        progress.sleep(0.5)
        t0 = time.time_ns() + int(START_DELAY_S * 1e9)
        senders = [f"h{i}" for i in range(1, n + 1)]
        running = []
        for i, h in enumerate(senders):
            start, end = i * iv, (2 * n - 1 - i) * iv
            running.append(lab.start(h, [
                "gen", "--datapath", "tcp" if kernel else "udp", "--cc", cc,
                "--start-at-unix-ns", str(t0), "--flow-id-base", str(i + 1),
                "--seed", str(p["seed"] + i), "--out", str(outdir / h),
                *([] if kernel else [a for kv in p["cc_params"] for a in ("--cc-param", kv)]),
                "long",
                "--flow", f"{lab.ip(f'r{i + 1}')},{start:g},{end:g}"], log=f"{h}.log"))
        m = self.measure(lab, arm, p, progress, switch, port, running, procs)
        return {"outdir": str(outdir), "port": port, "switch_id": switch_id, "senders": senders,
                "label": arm.label, "settings": arm.settings, **m}

    def analyse(self, p, results):
        summary, checks = {}, {}
        for name, r in results.items():
            rates = self.rates(r, p)
            phases = []
            for start, end, active in self.phases(p):
                jain, sd = window_stats(rates, active, start + p["settle"], end, p["window"])
                phases.append({"from_s": start, "flows": active, "jain": jain, "stddev_mbps": sd})
            cards = series.postcards(Path(r["outdir"]) / "queue.csv", r["port"], r["switch_id"])
            depths = sorted(c["depth"] for c in cards)
            busy = r["tx_bytes"] * 8 / (p["rate"] * r["window_s"]) if r["window_s"] > 0 else 0
            summary[name] = {
                "label": r["label"], "phases": phases,
                "mean_jain": mean([ph["jain"] for ph in phases if ph["jain"] == ph["jain"]]),
                # Deviation of one flow alone says nothing about sharing.
                "mean_stddev_mbps": mean([ph["stddev_mbps"] for ph in phases
                                          if len(ph["flows"]) > 1 and ph["stddev_mbps"] == ph["stddev_mbps"]]),
                "utilisation": busy,
                "queue_median_pkts": depths[len(depths) // 2] if depths else 0,
            }
        for name, s in summary.items():
            if results[name]["settings"]["datapath"] == "user":
                checks[f"{s['label']}: fair shares (mean Jain index {s['mean_jain']:.3f} ≥ 0.9)"] = \
                    s["mean_jain"] >= 0.9
            checks[f"{s['label']}: link used (utilisation {s['utilisation'] * 100:.0f}% > 80%)"] = \
                s["utilisation"] > 0.8
        pcc = [s for n, s in summary.items() if results[n]["settings"]["datapath"] == "user"]
        tcp = [s for n, s in summary.items() if results[n]["settings"]["datapath"] == "kernel"]
        for a in pcc:
            for b in tcp:
                checks[f"{a['label']} steadier than {b['label']} (per-flow deviation "
                       f"{a['mean_stddev_mbps']:.1f} vs {b['mean_stddev_mbps']:.1f} Mbps)"] = \
                    a["mean_stddev_mbps"] < b["mean_stddev_mbps"]
        return summary, checks

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        paths = super().plot(p, results, summary, outdir)
        # The seed's table as bars: Jain's index and deviation per phase.
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.6))
        width = 0.8 / max(1, len(summary))
        for k, (name, s) in enumerate(summary.items()):
            xs = [i + k * width for i in range(len(s["phases"]))]
            ax1.bar(xs, [ph["jain"] for ph in s["phases"]], width, label=s["label"])
            ax2.bar(xs, [ph["stddev_mbps"] for ph in s["phases"]], width, label=s["label"])
        ticks = [i + 0.4 - width / 2 for i in range(len(self.phases(p)))]
        names = [f"{len(a)} flow{'s' if len(a) > 1 else ''}\n@{st:g}s" for st, _, a in self.phases(p)]
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
