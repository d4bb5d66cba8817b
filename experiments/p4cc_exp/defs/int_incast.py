"""A burst onto one bottleneck: one long flow, then a burst of N more long
flows starting at once (PowerTCP's burst scenario, NSDI 2022 §5; HPCC's
incast, SIGCOMM 2019 §5), for the congestion controls built on the
switch's in-band telemetry and the baselines they are judged against:
HPCC, PowerTCP, θ-PowerTCP, Swift, DCQCN, TIMELY and DCTCP.

Per algorithm: the peak queue the burst builds, the time the queue takes
to come back down to its steady level, and the bottleneck's utilisation
before the burst (one flow) and after it has settled.
"""
from __future__ import annotations

from dataclasses import replace

from p4cc_topo import load_topology
from p4cc_topo.plan import port_towards

from .. import blocks, metrics, series
from ..arm_steps import read_name
from ..blocks import cc_label
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..stats import percentile
from ..verdicts import QUEUE, RATE, fmt, verdict

FRAME_BYTES = 1500
#: The queue is back to its steady level when within this share of the
#: burst's rise above it (or one packet, whichever is more).
DRAIN_SHARE = 0.1
#: HPCC §3.2: the target utilisation η the authors use.
HPCC_ETA = 0.95
#: "Within a few RTTs" (HPCC §5, §6.2: the queue built by an incast
#: is drained within a few base RTTs): judged as at most this many.
HPCC_DRAIN_RTTS = 10
#: PowerTCP §5: its peak queue and drain time at or below HPCC's; the
#: tolerance for two runs of one simulator.
POWER_VS_HPCC = 1.1
#: Swift's additive increase, packets per RTT per flow (hosts/cc swift.rs
#: default `ai`; int-incast does not change it).
SWIFT_AI = 1.0

# The reference simulator run here (inet-tub/ns3-datacenter @ 6ddb4a4,
# ns-3.39: the PowerTCP authors' own; docs/experiments.md, "int-incast",
# has the recipe and the commands), its burst program on a one-switch star
# of 12 hosts at p4cc's paper-scale parameters (25 Gb/s, 1 µs links,
# 1500-B frames, a 15 MiB lossless buffer; T = τ = the path's 4.93 µs),
# analysed with this module's definitions from its queue printed every
# 7.39 µs. HPCC, PowerTCP (median of 6 runs: it is not deterministic),
# θ-PowerTCP and DCTCP with the program's window (one BDP per flow);
# DCQCN and TIMELY without it, as p4cc's rate-only senders run. Per line
# rate and algorithm: peak and steady queue (KB), drain time (µs),
# utilisation before and after the burst.
REFERENCE_BASE_RTT_US = 4.93
REFERENCE: dict[float, dict[str, dict[str, float]]] = {
    25e9: {
        "hpcc": {"peak_queue_kb": 165, "steady_queue_kb": 1.5, "drain_us": 87,
                 "utilisation_before": 0.952, "utilisation_after": 0.916},
        "powertcp": {"peak_queue_kb": 150, "steady_queue_kb": 1.5, "drain_us": 72,
                     "utilisation_before": 0.956, "utilisation_after": 0.953},
        "theta-powertcp": {"peak_queue_kb": 153, "steady_queue_kb": 1.5, "drain_us": 102,
                           "utilisation_before": 1.001, "utilisation_after": 0.998},
        "dcqcn": {"peak_queue_kb": 2214, "steady_queue_kb": 1.5, "drain_us": 2445,
                  "utilisation_before": 1.000, "utilisation_after": 0.695},
        "timely": {"peak_queue_kb": 2641, "steady_queue_kb": 0.0, "drain_us": 915,
                   "utilisation_before": 1.001, "utilisation_after": 0.547},
        "dctcp": {"peak_queue_kb": 164, "steady_queue_kb": 120, "drain_us": 146,
                  "utilisation_before": 1.000, "utilisation_after": 1.000},
    },
}


def arrivals(cards: list[dict]) -> list[dict]:
    """Postcards placed at their packets' arrival at the queue (departure
    minus the queueing delay), in that order. A postcard leaves with its
    packet and reports the depth the packet found on arrival: plotted at
    the departure, a queue that jumps in a burst and then drains at line
    rate reads as one that grows steadily for as long as it drains (DCQCN
    at 25 Gb/s: a 3 200-packet queue built within ~0.2 ms of the burst
    looked like one growing 2 000 packets per ms for 1.75 ms)."""
    out = [dict(c, t=c["t"] - c.get("qdelay_us", 0) / 1e6) for c in cards]
    out.sort(key=lambda c: c["t"])
    return out


def idle_tail(r: dict, cards: list[dict], te: float) -> list[float]:
    """The steady level when no packet arrived in the run's last quarter
    (rate-based senders held at a floor): no arrival reports the queue, so
    it is the backlog the end reading's counters leave — packets admitted
    to the queue less those sent (`wire_enq_pkts` − `tx_packets`; the
    egress counter counts after the queue). Where a target has no
    admission counter, the depth the last arrival found. (The last
    arrival's depth alone read 4 295 packets for TIMELY at paper scale
    while the counters showed the queue empty from 4.96 ms.)"""
    try:
        end = r["reads"]["end"]["ports"][r["queue_key"]]
        return [float(end["wire_enq_pkts"] - end["tx_packets"])]
    except (KeyError, TypeError):
        return [c["depth"] for c in cards if c["t"] <= te][-1:]


#: DCQCN's α and rate-increase timers and its CNP interval, µs (DCQCN
#: paper: K, T and N), and the slowest NIC that HPCC's simulations run
#: them at unchanged (25 Gb/s).
DCQCN_TIMER_US, DCQCN_CNP_US, DCQCN_TIMERS_RATE = 55.0, 50.0, 25e9


def dcqcn_stretch(rate: float) -> float:
    """How much longer DCQCN's timers run on a fabric scaled down to
    ``rate``: its packets take that much longer, and the paper's timers
    (set in µs for 25–40 Gb/s NICs) would raise the rate many times per
    packet and cut it at every marked one. At 200 Mb/s with the paper's
    timers dc-fct's web search sat at the 1000-packet buffer and completed
    70 % of its flows; stretched, the control loop is the paper's in
    packets (docs/experiments.md, dc-fct)."""
    return max(1.0, DCQCN_TIMERS_RATE / rate)


def cnp_interval_us(p: dict, cc: str) -> float:
    """The receivers' CNP interval for arm ``cc`` (0: the paper's)."""
    s = dcqcn_stretch(p["rate"])
    return DCQCN_CNP_US * s if cc == "dcqcn" and s > 1 else 0.0


#: The rate floor of HPCC's simulations for every rate-based algorithm
#: (MIN_RATE 100Mb/s in its configurations, at 25 and 100 Gb/s NICs).
RATE_FLOOR_BPS, RATE_FLOOR_AT = 100e6, 25e9


def rate_floor_mbps(rate: float) -> float:
    """TIMELY's and DCQCN's rate floor, Mb/s: HPCC's 100 Mb/s, a share of
    the line rate below 25 Gb/s. Neither paper gives a floor; the
    algorithms' own 1 Mb/s is 1/25 000 of 25 Gb/s, where a TIMELY flow
    cut to it waits 131 ms for its next 16 KB completion event, i.e. its
    next update (int-incast's TIMELY went silent for 11 ms after the
    burst, docs/experiments.md)."""
    return RATE_FLOOR_BPS * min(1.0, rate / RATE_FLOOR_AT) / 1e6


def profile(rate: float) -> dict:
    """Thresholds that scale with the line rate (per 10 Gb/s): DCTCP's
    K = 65 packets (DCTCP paper at 10 Gb/s); DCQCN's RED 40/160 KB, Pmax
    0.2 (the reference simulator's 100/400 KB at 25 Gb/s)."""
    f = rate / 10e9
    k = max(4, round(65 * f))
    kmin = max(1, round(40e3 * f / FRAME_BYTES))
    kmax = max(kmin + 1, round(160e3 * f / FRAME_BYTES))
    return {"k": k, "red": f"{kmin}-{kmax}/20%"}


def cc_params(p: dict, cc: str) -> dict:
    """Each algorithm's parameters where the experiment sets them: the
    delay-based ones need the path's base RTT (the hosts' stacks add to it
    in real time: `base_rtt_us`), and so do HPCC's T and PowerTCP's τ. The
    papers' T and τ are the network's base RTT, configured (the authors'
    simulators: the longest path's); measured, a burst's flows would take
    their first RTT sample, which carries the queue their own first
    windows build (at int-incast's paper scale HPCC's peak was 238 KB
    with T measured, 180 KB with T configured)."""
    base = p["base_rtt_us"]
    pkt_us = FRAME_BYTES * 8 / p["rate"] * 1e6
    if cc in ("hpcc", "powertcp", "theta-powertcp"):
        return {"base_rtt_us": f"{base:.3f}"}
    if cc == "swift":
        # Swift's target: the base RTT plus a few packets of queue (its
        # paper's 25 µs at 100 Gb/s is ~200 packets; at low rates a packet
        # itself takes longer).
        return {"base_target_us": f"{base + max(p['swift_queue_us'], 4 * pkt_us):.1f}"}
    if cc == "dcqcn":
        out = {"min_rate_mbps": f"{rate_floor_mbps(p['rate']):.6g}"}
        if (s := dcqcn_stretch(p["rate"])) > 1:
            t = f"{DCQCN_TIMER_US * s:.6g}"
            out.update(alpha_timer_us=t, rate_timer_us=t)
        return out
    if cc == "timely":
        return {"tlow_us": f"{base + 50:.1f}", "thigh_us": f"{base + 500:.1f}",
                "min_rtt_us": f"{max(base, 20):.1f}",
                "min_rate_mbps": f"{rate_floor_mbps(p['rate']):.6g}"}
    return {}


def ref_ratio(ref: dict, key: str, unit: str) -> str:
    """The reference simulator's PowerTCP / HPCC for a verdict's source."""
    pw, h = ref.get("powertcp", {}).get(key), ref.get("hpcc", {}).get(key)
    if pw is None or not h:
        return ""
    return f"; ns3-datacenter run here: {fmt(pw)} / {fmt(h)} {unit} = {fmt(pw / h)}"


def add_reference(summary: dict, ref: dict, rate_bps: float) -> None:
    """The reference simulator's numbers in a summary: all of them under
    "reference", and each arm's beside its own row."""
    for name, row in summary.items():
        if name in ref:
            row["reference"] = ref[name]
    summary["reference"] = {"simulator": "ns3-datacenter (ns-3.39), one-switch star",
                            "rate_bps": rate_bps, "values": ref}


class IntIncast(Experiment):
    id = "int-incast"
    title = "A burst onto one bottleneck: INT-based congestion control and its baselines"
    source = "PowerTCP (NSDI 2022) burst scenario; HPCC (SIGCOMM 2019) §5"
    description = ("One long flow runs alone, then a burst of long flows starts at once "
                   "towards the same receiver. HPCC and PowerTCP read the queue, transmitted "
                   "bytes and line rate the P4 switch writes into every data packet "
                   "(version-2 shim); θ-PowerTCP, Swift and TIMELY the RTT; DCQCN the "
                   "switch's RED marks (as CNPs); DCTCP a step at K.")
    # PowerTCP's burst scenario at the reference simulator's scale: 25 Gb/s
    # hosts, 1 µs links, 10 flows joining one; 100 Gb/s with --set rate=100Gbps.
    paper = ["rate=25Gbps", "delay=1us", "burst=10", "buffer=10000", "base_rtt_us=0",
             "burst_at=0.002", "duration=0.006", "warmup=0.001", "settle=0.002",
             "sample=3"]
    rate_param = None
    params = [
        Param("rate", "200Mbps", "every link's rate", rate_bps, 1e6, 4e11),
        Param("delay", "50us", "every link's one-way delay", seconds, 0, 0.1),
        Param("burst", 10, "flows that start at once", int, 1, 60),
        Param("buffer", 1000, "switch buffer per port, packets (deep: these algorithms "
              "assume a lossless fabric)", int, 1, 1_000_000),
        Param("burst_at", 2, "when the burst starts, s", seconds, 0.0001, 600),
        Param("duration", 6, "seconds each algorithm runs", seconds, 0.001, 3600),
        Param("warmup", 1, "seconds before the one flow is measured", seconds, 0, 600),
        Param("settle", 2, "seconds after the burst before utilisation is measured again",
              seconds, 0, 600),
        Param("base_rtt_us", 450, "the path's RTT with empty queues as hosts measure it, µs "
              "(the namespace lab at its defaults: ~450–550, the topology's 320 and the user-space "
              "switch's and hosts' processing; 0: from the topology)", float, 0, 1e6),
        Param("swift_queue_us", 25, "Swift's target above the base RTT, µs (at least 4 "
              "packet times)", float, 0, 1e6),
        Param("protocols", "hpcc,powertcp,theta-powertcp,swift,dcqcn,timely,dctcp", "arms",
              str_list),
        Param("sample", 1, "postcard 1-in-N sampling (and Swift's RTT samples; 1: thinned "
              "by the rate)", int, 1, 10_000),
        Param("seed", 1, "random seed", int),
    ]

    def plan(self, p, scale="default"):
        if p["base_rtt_us"] == 0:
            # Two host links each way, each frame serialised twice.
            p = dict(p, base_rtt_us=4 * p["delay"] * 1e6 + 2 * FRAME_BYTES * 8 / p["rate"] * 1e6)
        if not p["warmup"] < p["burst_at"] < p["burst_at"] + p["settle"] < p["duration"]:
            raise ValueError("need warmup < burst_at < burst_at + settle < duration")
        return super().plan(p, scale)

    def topology(self, p, cc: str):
        prof = profile(p["rate"])
        return load_topology("star", n_hosts=p["burst"] + 2, rate_bps=p["rate"],
                             delay_us=f"{p['delay'] * 1e6:.3f}us", buffer_pkts=p["buffer"],
                             ecn_k_pkts=prof["k"] if cc == "dctcp" else None,
                             ecn_red=prof["red"] if cc == "dcqcn" else None)

    def arms(self, p):
        out = []
        for cc in p["protocols"]:
            topo = self.topology(p, cc)
            senders = topo.role("senders")
            params = cc_params(p, cc)
            agents = [blocks.receiver("h1", "user", cc, cnp_interval_us(p, cc))]
            for i, h in enumerate(senders):
                start = 0.0 if i == 0 else p["burst_at"]
                a = blocks.long_sender(h, "h1", cc, "user", start, p["duration"], i + 1,
                                       p["seed"] + i, params, line_rate_bps=p["rate"])
                # Swift's delay verdict reads its RTT samples: as many as the
                # postcards (a run of milliseconds would otherwise keep a
                # dozen).
                agents.append(replace(a, rtt_every=p["sample"]) if cc == "swift" else a)
            reads = (p["burst_at"], p["burst_at"] + p["settle"])
            arm = blocks.arm(cc, cc_label(cc), topo, agents, p["duration"], p["warmup"],
                             port_towards(topo, "h1"), {"cc": cc, "cc_params": params},
                             postcard_one_in_n=p["sample"])
            out.append(replace(arm, measure=replace(arm.measure, reads_at_s=reads)))
        return out

    # -- analysis -------------------------------------------------------------
    def burst_figures(self, p, r) -> dict:
        """Peak queue after the burst, when it came back to its steady
        level (the median of the last quarter of the run), utilisation
        before and after. Each report is placed at its packet's arrival
        (`arrivals`): the queue over time as arriving packets found it."""
        cards = arrivals(metrics.postcards(r))
        t0 = (r.get("t0_unix_ns") or 0) / 1e9
        tb, te = t0 + p["burst_at"], t0 + p["duration"]
        # Up to the end of the run: the flows stop then, and what their
        # last packets do while the simulator lets them finish is no
        # steady state.
        after = [c for c in cards if tb <= c["t"] <= te]
        tail = [c["depth"] for c in cards if t0 + p["duration"] * 0.75 <= c["t"] <= te]
        if not tail:
            tail = idle_tail(r, cards, te)
        steady = percentile(tail, 50) if tail else float("nan")
        peak = max(after, key=lambda c: c["depth"], default=None)
        drain_us = float("nan")
        if peak is not None:
            level = steady + max(1.0, DRAIN_SHARE * (peak["depth"] - steady))
            back = next((c for c in after if c["t"] >= peak["t"] and c["depth"] <= level), None)
            if back is not None:
                drain_us = (back["t"] - tb) * 1e6
        # The delay against the algorithm's own target (Swift logs it) once
        # the burst has settled.
        settled = [(d, g) for t, d, g in series.delay_targets(metrics.sender_dirs(r))
                   if tb + p["settle"] <= t <= te]
        before = metrics.utilisation_between(r, "start", read_name(p["burst_at"]), p["rate"])
        later = metrics.utilisation_between(r, read_name(p["burst_at"] + p["settle"]), "end",
                                            p["rate"])
        return {"label": r["label"],
                "peak_queue_pkts": peak["depth"] if peak else float("nan"),
                "peak_queue_kb": peak["depth"] * FRAME_BYTES / 1e3 if peak else float("nan"),
                "steady_queue_pkts": steady,
                "steady_queue_kb": steady * FRAME_BYTES / 1e3,
                "drain_us": drain_us,
                "drain_rtts": drain_us / p["base_rtt_us"] if p["base_rtt_us"] else float("nan"),
                "utilisation_before": before, "utilisation_after": later,
                "postcards": len(cards),
                **({"delay_us": percentile([d for d, _ in settled], 50),
                    "target_us": percentile([g for _, g in settled], 50),
                    "delay_samples": len(settled)} if settled else {})}

    def analyse(self, p, results):
        base = p["base_rtt_us"] or (4 * p["delay"] * 1e6 + 2 * FRAME_BYTES * 8 / p["rate"] * 1e6)
        p = dict(p, base_rtt_us=base)
        summary = {name: self.burst_figures(p, r) for name, r in results.items()}
        ref = REFERENCE.get(p["rate"], {})
        add_reference(summary, ref, p["rate"])

        def refs(cc, key, unit):
            v = ref.get(cc, {}).get(key)
            if v is None:
                return ""
            return f"; ns3-datacenter run here: {fmt(v)}" + (f" {unit}" if unit else "")

        verdicts = []
        h, pw = summary.get("hpcc"), summary.get("powertcp")
        if h:
            u = h["utilisation_before"]
            verdicts.append(verdict(
                "HPCC holds one flow near η of the line rate", u,
                abs(u - HPCC_ETA) <= 0.03, f"η = {HPCC_ETA}", "±0.03",
                "HPCC §3.3, §5 (η = 95 %)" + refs("hpcc", "utilisation_before", ""), RATE,
                ["hpcc"]))
            verdicts.append(verdict(
                "HPCC drains the burst's queue within a few RTTs (base RTTs)", h["drain_rtts"],
                h["drain_rtts"] <= HPCC_DRAIN_RTTS, "a few base RTTs",
                f"≤ {HPCC_DRAIN_RTTS} base RTTs ({base:.1f} µs each)",
                "HPCC §5 (incast)" + refs("hpcc", "drain_us", "µs")
                + (f" = {ref['hpcc']['drain_us'] / REFERENCE_BASE_RTT_US:.1f} of its base RTTs"
                   f" ({REFERENCE_BASE_RTT_US} µs)" if "hpcc" in ref else ""), QUEUE, ["hpcc"]))
        if h and pw:
            for key, what, unit in (("peak_queue_pkts", "peak queue", "pkts"),
                                    ("drain_us", "drain time", "µs")):
                ratio = pw[key] / h[key] if h[key] else float("nan")
                verdicts.append(verdict(
                    f"PowerTCP's {what} at or below HPCC's (PowerTCP / HPCC)", ratio,
                    ratio <= POWER_VS_HPCC, "≤ 1 (at or below HPCC's)",
                    f"≤ {POWER_VS_HPCC:g}", "PowerTCP §5 (burst)"
                    + ref_ratio(ref, key.replace("_pkts", "_kb"), "KB" if "queue" in key
                                else unit), QUEUE, ["powertcp", "hpcc"]))
        sw = summary.get("swift")
        if sw:
            verdicts.append(verdict(
                "Swift keeps the link busy after the burst", sw["utilisation_after"],
                sw["utilisation_after"] >= 0.9, "high utilisation", "≥ 0.9",
                "Swift (SIGCOMM 2020) §5", RATE, ["swift"]))
            if "delay_us" in sw:
                # N flows each add ai packets per RTT while below the target
                # and cut at most once per RTT above it: the queue swings by
                # about N·ai packets around the level where the delay meets
                # the target.
                band = (p["burst"] + 1) * SWIFT_AI * FRAME_BYTES * 8 / p["rate"] * 1e6
                dev = sw["delay_us"] - sw["target_us"]
                verdicts.append(verdict(
                    "Swift holds the delay near its target after the burst (median RTT − "
                    "median target, µs)", dev, abs(dev) <= band,
                    f"0 (target {sw['target_us']:.1f} µs: base + hop and flow scaling)",
                    f"±{band:.1f} µs (N·ai = {(p['burst'] + 1) * SWIFT_AI:g} packets at the "
                    "line rate)", "Swift (SIGCOMM 2020) §3.1, §5; the band: N flows add N·ai "
                    "packets per RTT between decreases (analysis)", QUEUE, ["swift"]))
        prof = profile(p["rate"])
        dq = summary.get("dcqcn")
        if dq:
            kmin, kmax = (int(x) for x in prof["red"].split("/")[0].split("-"))
            verdicts.append(verdict(
                "DCQCN's steady queue between Kmin and Kmax", dq["steady_queue_pkts"],
                kmin - 1 <= dq["steady_queue_pkts"] <= kmax + 1, f"[{kmin}, {kmax}] pkts",
                "±1 pkt", "DCQCN (SIGCOMM 2015) §3, RED-ECN"
                + refs("dcqcn", "steady_queue_kb", "KB steady"), QUEUE, ["dcqcn"]))
        dc = summary.get("dctcp")
        if dc:
            n = p["burst"] + 1
            verdicts.append(verdict(
                "DCTCP's steady queue near K", dc["steady_queue_pkts"],
                prof["k"] * 0.5 <= dc["steady_queue_pkts"] <= prof["k"] + n + 1,
                f"K = {prof['k']} pkts (Qmax = K + N = {prof['k'] + n})",
                "between K/2 and K + N + 1", "DCTCP (SIGCOMM 2010) §3.3"
                + refs("dctcp", "steady_queue_kb", "KB steady (RED marking there)"), QUEUE,
                ["dctcp"]))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(9, 4))
        for name, r in results.items():
            cards = arrivals(metrics.postcards(r))
            t0 = (r.get("t0_unix_ns") or 0) / 1e9 + p["burst_at"]
            pts = [((c["t"] - t0) * 1e6, c["depth"]) for c in cards
                   if -0.2 * p["settle"] <= c["t"] - t0 <= p["settle"]]
            ax.plot([x for x, _ in pts], [y for _, y in pts], lw=0.8, label=r["label"])
        ax.axvline(0, color="k", lw=0.5, ls=":")
        ax.set_xlabel("arrival at the queue, since the burst (µs)")
        ax.set_ylabel("bottleneck queue (pkts)")
        ax.set_title(f"burst of {p['burst']} onto one flow at {p['rate'] / 1e9:g} Gb/s")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = outdir / "burst_queue.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return [path, metrics.queue_plot(results, outdir, "bottleneck queue")]
