"""TIMELY §6 as the seed ran it: 10 senders → 1 receiver through one
switch (star of 11 hosts), 50 Mbps, 10 µs links. TIMELY, oracle TIMELY
(a controller of the switch's queue depth, delivered in-band), the seed's
oracle (TIMELY's law on the queue depth), Vegas, DCTCP and Cubic:
throughput, mean and 95th-percentile queue and RTT."""
from __future__ import annotations

from p4cc_topo import load_topology
from p4cc_topo.plan import port_towards

from .. import blocks, metrics
from ..blocks import cc_label, kv_params
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..verdicts import QUEUE, RATE, verdict

# TIMELY (SIGCOMM 2015) §6: at near line rate, TIMELY's tail RTT is about
# 13× lower than DCTCP's; judged with a factor-2 margin for a different
# testbed and scale.
TAIL_RATIO, TAIL_MARGIN = 13.0, 2.0

#: TIMELY §4's minRTT at 10 Gb/s with NIC timestamps (the gradient's
#: normaliser): the floor of the path's empty-queue RTT.
PAPER_MIN_RTT_US = 20.0


def min_rtt_us(p) -> float:
    """minRTT: the path's RTT with empty queues, never below the paper's
    20 µs (a base of 0 means NIC timestamps, the paper preset)."""
    return max(p["base_rtt_us"], PAPER_MIN_RTT_US)


def timely_cc_params(p) -> dict:
    """TIMELY's parameters from an experiment's `delta_mbps`, `beta`,
    `base_rtt_us`, `thigh_us`, `tlow_us`: it sees the whole RTT, so its
    thresholds sit on top of the hosts' base RTT, which also normalises
    its gradient (the paper's 20 µs when there is none)."""
    return {"delta_mbps": p["delta_mbps"], "beta": p["beta"],
            "min_rtt_us": min_rtt_us(p),
            "thigh_us": p["base_rtt_us"] + p["thigh_us"], "tlow_us": p["base_rtt_us"] + p["tlow_us"]}


#: TIMELY's parameters as experiments take them (timely-incast, oracle-signal).
TIMELY_PARAMS = [
    Param("delta_mbps", 0.5, "TIMELY additive step δ (paper: 10 Mbps at 10 Gbps)", float),
    Param("beta", 0.8, "TIMELY β", float),
    Param("base_rtt_us", 450, "the path's RTT with empty queues, as the hosts measure it "
          "(the namespace lab at timely-incast's 50 Mb/s: ~450–500 µs; the paper's NIC "
          "timestamps: ~20 µs)", float),
    Param("thigh_us", 500, "TIMELY Thigh above the base RTT, µs (paper: 500)", float),
    Param("tlow_us", 50, "TIMELY Tlow above the base RTT, µs (paper: 50)", float),
]


class TimelyIncast(Experiment):
    id = "timely-incast"
    title = "TIMELY, oracle TIMELY and others under incast"
    source = "TIMELY (SIGCOMM 2015) §6 / seed table"
    description = ("N long flows into one receiver. TIMELY paces by the RTT gradient; oracle "
                   "TIMELY holds the bottleneck queue the P4 switch writes into every data "
                   "packet at a small target (XCP's gains on its change and its excess); the "
                   "seed's oracle runs TIMELY's law on that queue depth. Queue figures come "
                   "from postcards.")
    # TIMELY §6: 10 Gb/s, Tlow 50 µs, Thigh 500 µs on the measured RTT (NIC
    # timestamps: no host stack to subtract), β 0.8, δ 10 Mb/s, HAI after 5
    # completions (the algorithm's default); DCTCP's K = 65 at 10 Gb/s (DCTCP
    # paper); a buffer deep enough for Thigh's 416 packets.
    paper = ["rate=10Gbps", "delay=10us", "buffer=1000", "k=65", "base_rtt_us=0",
             "thigh_us=500", "tlow_us=50", "beta=0.8", "delta_mbps=10", "duration=1",
             "warmup=0.2"]
    params = [
        Param("rate", "50Mbps", "every link's rate", rate_bps, 1e6, 1e11),
        Param("delay", "10us", "every link's one-way delay", seconds, 0, 0.1),
        Param("senders", 10, "senders into the one receiver", int, 1, 40),
        Param("buffer", 200, "switch buffer per port, packets", int, 1, 100_000),
        Param("k", 20, "ECN K for the DCTCP arm, packets", int, 0, 10_000),
        Param("duration", 10, "seconds each protocol runs", seconds, 0.01, 3600),
        Param("warmup", 2, "seconds ignored at the start", seconds, 0, 600),
        Param("protocols", "timely,oracle-timely,oracle-timely-seed,vegas,dctcp,cubic", "arms",
              str_list),
        *TIMELY_PARAMS,
        Param("oracle_params", "", "oracle TIMELY's parameters KEY=VALUE,... (docs/algorithms.md; "
              "default: its own, a 1-packet target)", str_list),
        Param("oracle_thresholds", "seed", "the seed law's thresholds: 'seed' = the seed's 20/5 "
              "packets, or 'timely' = TIMELY's Thigh/Tlow as queue depths at the line rate", str),
        Param("seed", 1, "random seed", int),
    ]

    def topology(self, p):
        return load_topology("star", n_hosts=p["senders"] + 1, rate_bps=p["rate"],
                             delay_us=f"{p['delay'] * 1e6:.0f}us", buffer_pkts=p["buffer"],
                             ecn_k_pkts=p["k"])

    def oracle_thresholds(self, p) -> tuple[float, float]:
        """(thigh, tlow) in packets for the seed's oracle (TIMELY's law)."""
        if p["oracle_thresholds"] == "seed":
            return 20.0, 5.0
        if p["oracle_thresholds"] != "timely":
            raise ValueError("oracle_thresholds must be 'timely' or 'seed'")
        pkts_per_us = p["rate"] / (8 * 1500) / 1e6
        return p["thigh_us"] * pkts_per_us, p["tlow_us"] * pkts_per_us

    def arms(self, p):
        # TIMELY sees the whole RTT, so its thresholds sit on top of the
        # base RTT; the seed's oracle sees only the queue and runs the same
        # law on it, with thresholds in packets. Oracle TIMELY has its own
        # law and parameters (a queue target; it measures its loop delay).
        timely = {"delta_mbps": p["delta_mbps"], "beta": p["beta"],
                  "min_rtt_us": min_rtt_us(p)}
        thigh, tlow = self.oracle_thresholds(p)
        per_cc = {"timely": timely_cc_params(p),
                  "oracle-timely": kv_params(p["oracle_params"], "oracle_params"),
                  "oracle-timely-seed": {**timely, "thigh_pkts": f"{thigh:.3f}",
                                         "tlow_pkts": f"{tlow:.3f}"}}
        topo = self.topology(p)
        senders = topo.role("senders")
        return [blocks.arm(cc, cc_label(cc), topo,
                           blocks.long_flows(topo, senders, "h1", cc, "user", p["duration"],
                                             p["seed"], per_cc.get(cc, {}),
                                             line_rate_bps=p["rate"]),
                           p["duration"], p["warmup"], port_towards(topo, "h1"),
                           {"cc": cc, "datapath": "user", "cc_params": per_cc.get(cc, {})})
                for cc in p["protocols"]]

    def analyse(self, p, results):
        summary = {name: metrics.arm_summary(p, r) for name, r in results.items()}
        verdicts = []
        t, o, d = summary.get("timely"), summary.get("oracle-timely"), summary.get("dctcp")
        if t and d:
            share = t["throughput_mbps"] / d["throughput_mbps"] if d["throughput_mbps"] else 0.0
            verdicts.append(verdict(
                "TIMELY's throughput against DCTCP's", share, share >= 0.95,
                "near line rate, as DCTCP", "≥ 95 % of DCTCP's", "TIMELY §6 (throughput at near "
                "line rate)", RATE, ["timely", "dctcp"]))
            ratio = d["rtt_p95_us"] / t["rtt_p95_us"] if t["rtt_p95_us"] else float("nan")
            verdicts.append(verdict(
                "TIMELY's tail RTT below DCTCP's (DCTCP p95 / TIMELY p95)", ratio,
                ratio >= TAIL_RATIO / TAIL_MARGIN, f"~{TAIL_RATIO:g}× lower",
                f"≥ {TAIL_RATIO / TAIL_MARGIN:g}× (a factor {TAIL_MARGIN:g})",
                "TIMELY §6 (13× lower tail latency than DCTCP)", QUEUE, ["timely", "dctcp"]))
        if t and o:
            verdicts.append(verdict(
                "oracle TIMELY's throughput against TIMELY's", o["throughput_mbps"],
                o["throughput_mbps"] >= 0.98 * t["throughput_mbps"],
                f"≥ TIMELY's {t['throughput_mbps']:.1f} Mb/s", "−2 % (measurement noise)",
                "the seed's question: a sender that knows the queue does no worse", RATE,
                ["timely", "oracle-timely"]))
            verdicts.append(verdict(
                "oracle TIMELY's p95 queue against TIMELY's", o["queue_p95_pkts"],
                o["queue_p95_pkts"] <= t["queue_p95_pkts"] + 1,
                f"≤ TIMELY's {t['queue_p95_pkts']:.0f} pkts", "+1 pkt (whole packets)",
                "the seed's table (TIMELY 7 pkts, its ns-3 oracle 133)", QUEUE,
                ["timely", "oracle-timely"]))
        if o:
            verdicts.append(verdict(
                "oracle TIMELY keeps the bottleneck busy (utilisation)", o["utilisation"],
                o["utilisation"] >= 0.95, "≈ 1: a standing target of q* ≥ 1 packet means the "
                "link never idles", "≥ 95 %", "analysis (docs/algorithms.md, oracle-timely)",
                RATE, ["oracle-timely"]))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        paths = [metrics.queue_plot(results, outdir,
                                 f"Bottleneck queue, {p['senders']} senders → 1, "
                                 f"{p['rate'] / 1e6:.0f} Mbps")]
        names = list(summary)
        fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
        for ax, (key, label) in zip(axes, (("throughput_mbps", "throughput (Mbps)"),
                                           ("queue_p95_pkts", "p95 queue (packets)"),
                                           ("rtt_p95_us", "p95 RTT (µs)"))):
            ax.bar(range(len(names)), [summary[n][key] for n in names], color="tab:blue")
            ax.set_xticks(range(len(names)), [summary[n]["label"] for n in names],
                          rotation=30, ha="right", fontsize=8)
            ax.set_title(label, fontsize=10)
        axes[0].axhline(p["rate"] / 1e6, ls="--", color="k", lw=1, label="link rate")
        axes[0].legend(fontsize=7)
        fig.tight_layout()
        path = outdir / "table.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return paths + [path]
