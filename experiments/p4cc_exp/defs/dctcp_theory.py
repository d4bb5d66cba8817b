"""DCTCP Fig. 12: the bottleneck queue's sawtooth against the paper's
analysis (§3.3) for N = 2, 10 and 40 long flows.

The analysis assumes N synchronized flows with window W* = (C·RTT + K)/N
and predicts Qmax = K + N, an amplitude A = ½·sqrt(2N(C·RTT + K)) and a
period Tc = ½·sqrt(2(C·RTT + K)/N) RTTs. The paper checked it at 10 Gbps,
RTT 100 µs, K = 40 (C·RTT ≈ 83 packets). The defaults keep that product at
100 Mbps with a 10 ms RTT, so the flows' windows are the paper's."""
from __future__ import annotations

from p4cc_topo.plan import port_towards

from .. import blocks, metrics
from ..experiment import Experiment, Headline
from ..params import Param, rate_bps, seconds, str_list
from ..stats import percentile
from ..theory import dctcp_sawtooth
from ..verdicts import QUEUE, RATE, verdict, within

# ns-3.37 (TcpDctcp, marking at K on the instantaneous queue) at the paper's
# parameters, 10 Gb/s, RTT 100 µs, K = 40, C·RTT = 83 packets: per N, the
# queue's peak and swing (packets) and its period (RTTs). The analysis of
# §3.3 idealises (synchronized fluid flows), so amplitude and period are
# judged against this independent simulator instead. Packet counts and
# periods in RTTs depend only on K and C·RTT, so the reference applies at
# any rate with the same K and C·RTT.
NS3_REFERENCE = {2: (43, 17, 14.5), 10: (51, 35, 10.0), 40: (84, 77, 6.4)}
NS3_K, NS3_BDP = 40, 83.3
NS3_TOLERANCE = 0.25
from .dctcp_queue import DATAPATHS, dumbbell, postcard_sampling

# Resampling step of the queue series for the period, in RTTs: fine enough
# for the shortest predicted period (about one RTT at N = 40).
GRID_RTTS = 0.05
# Longest period looked for, in RTTs (the analysis predicts 1–6 here).
PERIOD_MAX_RTTS = 20


def queue_grid(cards: list[dict], t0: float, step: float) -> list[float]:
    """The queue depth on a uniform time grid from t0 (the last postcard
    at or before each grid point; postcards come one per sampled packet)."""
    out, i, last = [], 0, None
    t_end = cards[-1]["t"] if cards else t0
    t = t0
    while t <= t_end:
        while i < len(cards) and cards[i]["t"] <= t:
            last = cards[i]["depth"]
            i += 1
        if last is not None:
            out.append(float(last))
        t += step
    return out


def autocorrelation(xs: list[float], smooth: int = 1):
    """Normalized autocorrelation of xs by lag (numpy array; empty when xs
    is too short or flat), smoothed over `smooth` lags so that
    packet-scale jitter does not make peaks of its own."""
    import numpy as np

    x = np.asarray(xs, dtype=float)
    if len(x) < 8 or x.std() == 0:
        return np.zeros(0)
    x = x - x.mean()
    spec = np.fft.rfft(x, 2 * len(x))
    ac = np.fft.irfft(spec * np.conj(spec))[:len(x)]
    ac = ac / ac[0]
    if smooth > 1:
        ac = np.convolve(ac, np.ones(smooth) / smooth, mode="same")
    return ac


def dominant_period(xs: list[float], step: float, hi: float) -> float | None:
    """The period of the strongest oscillation of xs, up to hi seconds:
    the highest autocorrelation peak after the autocorrelation first
    crosses zero, or None when no peak reaches 0.2 (no clear period)."""
    ac = autocorrelation(xs, 3)
    n = len(ac)
    b = min(n - 2, int(hi / step) + 1)
    a = 1
    while a < b and ac[a] > 0:
        a += 1
    best, best_lag = 0.2, None
    for lag in range(a + 1, b + 1):
        if ac[lag] > best and ac[lag] >= ac[lag - 1] and ac[lag] >= ac[lag + 1]:
            best, best_lag = ac[lag], lag
    return None if best_lag is None else best_lag * step


class DctcpTheory(Experiment):
    id = "dctcp-theory"
    title = "DCTCP's queue sawtooth vs the paper's analysis"
    source = "DCTCP (SIGCOMM 2010) Fig. 12, §3.3"
    description = ("N long DCTCP flows to one receiver, one arm per N. The queue (from "
                   "postcards) is compared with the analysis: its peak near Qmax = K + N, "
                   "its swing near A = ½·sqrt(2N(C·RTT + K)), its period near "
                   "Tc = ½·sqrt(2(C·RTT + K)/N) RTTs. The swing grows with N while the "
                   "period shrinks.")
    # DCTCP Fig. 12 (ns-2): 10 Gb/s, RTT 100 µs (C·RTT = 83 packets), K = 40,
    # g = 1/16 (p4cc's DCTCP default), N = 2, 10, 40; periods are 0.1-0.6 ms.
    paper = ["rate=10Gbps", "rtt=100us", "k=40", "ns=2,10,40", "buffer=1000", "duration=0.3",
             "warmup=0.1", "sample=1"]
    params = [
        Param("rate", "100Mbps", "bottleneck (and access) line rate", rate_bps, 1e6, 1e11),
        Param("k", 40, "ECN marking threshold K, packets (paper: 40)", int, 1, 10_000),
        Param("buffer", 400, "bottleneck buffer, packets", int, 1, 100_000),
        Param("rtt", "10ms", "base round-trip time (C·RTT is 83 packets at 100 Mbps, as "
              "the paper's 10 Gbps × 100 µs)", seconds, 0, 1),
        Param("ns", "2,10,40", "numbers of flows, one arm each (paper: 2, 10, 40)", str_list),
        Param("duration", 20, "seconds each arm runs", seconds, 0.01, 3600),
        Param("warmup", 5, "seconds ignored at the start of each arm", seconds, 0, 600),
        Param("datapath", "kernel", "kernel (TCP sockets) or user (p4cc transport)", str),
        Param("sample", 0, "postcard 1-in-N sampling (0: 1 at 100 Mbps, more above)", int, 0,
              10_000),
        Param("seed", 1, "random seed", int),
    ]

    # A sweep (over ns, k, rate, rtt …) draws §3.3's two predictions
    # against what each point measured.
    headlines = [
        Headline("peak_pkts", "peak queue (p99, packets)", "k_plus_n", "K + N (§3.3's Qmax)"),
        Headline("swing_pkts", "swing p95 − p5 (packets)", "amplitude_theory_pkts",
                 "§3.3's amplitude A"),
        Headline("period_rtts", "period (RTTs)", "period_theory_rtts", "§3.3's Tc"),
        Headline("utilisation", "bottleneck utilisation"),
    ]

    def sweep_values(self, p, summary):
        """Per arm, the peak and swing beside §3.3's values under one name;
        without the arm's prefix too when the point has one arm (one N)."""
        out = {}
        arms = {k: v for k, v in summary.items() if isinstance(v, dict) and "theory" in v}
        for name, s in arms.items():
            th = s["theory"]
            vals = {"peak_pkts": s["queue_p99_pkts"], "k_plus_n": th["q_max"],
                    "swing_pkts": s["amplitude_pkts"], "amplitude_theory_pkts": th["amplitude"],
                    "period_rtts": s["period_ms"] / 1e3 / p["rtt"] if s["period_ms"] else None,
                    "period_theory_rtts": th["period_ms"] / 1e3 / p["rtt"],
                    "utilisation": s["utilisation"]}
            out.update({f"{name}.{k}": v for k, v in vals.items()})
            if len(arms) == 1:
                out.update(vals)
        return out

    def _ns(self, p) -> list[int]:
        try:
            ns = [int(n) for n in p["ns"]]
        except ValueError:
            raise ValueError(f"ns: '{','.join(p['ns'])}' is not a list of numbers") from None
        if not ns or min(ns) < 1 or max(ns) > 200:
            raise ValueError("ns: flow counts must be within 1..200")
        return ns

    def arms(self, p):
        if p["datapath"] not in DATAPATHS:
            raise ValueError(f"datapath: unknown '{p['datapath']}' (kernel, user)")
        out = []
        for n in self._ns(p):
            topo = dumbbell(p, n)
            agents = blocks.long_flows(topo, topo.role("senders"), "rx", "dctcp", p["datapath"],
                                       p["duration"], p["seed"], line_rate_bps=p["rate"])
            out.append(blocks.arm(f"n{n}", f"DCTCP, N = {n}", topo, agents, p["duration"],
                                  p["warmup"], port_towards(topo, "rx"),
                                  {"datapath": p["datapath"], "cc": "dctcp", "n": n},
                                  postcard_sampling(p)))
        return out

    def analyse(self, p, results):
        summary, verdicts = {}, []
        rtt = p["rtt"]
        for name, r in results.items():
            n = r["settings"]["n"]
            th = dctcp_sawtooth(n, p["k"], p["rate"], rtt)
            kept = metrics.queue_after(r, p["warmup"])
            t0 = kept[0]["t"] if kept else 0
            depths = [c["depth"] for c in kept]
            step = GRID_RTTS * rtt
            period = dominant_period(queue_grid(kept, t0, step), step, PERIOD_MAX_RTTS * rtt)
            q5, q95 = percentile(depths, 5), percentile(depths, 95)
            summary[name] = {
                "label": r["label"], "n": n,
                "queue_p5_pkts": q5, "queue_median_pkts": percentile(depths, 50),
                "queue_p95_pkts": q95, "queue_p99_pkts": percentile(depths, 99),
                "queue_max_pkts": max(depths, default=0),
                "amplitude_pkts": q95 - q5,
                "period_ms": period * 1e3 if period else None,
                "utilisation": metrics.utilisation(r, p["rate"]),
                "ce_marks": r["ce_marks"], "postcards": len(kept),
                "theory": {"q_max": th["q_max"], "q_min": th["q_min"],
                           "amplitude": th["amplitude"], "period_ms": th["period_s"] * 1e3,
                           "bdp_pkts": th["bdp_pkts"]},
            }
        rows = sorted(summary.values(), key=lambda s: s["n"])
        same_as_ns3 = p["k"] == NS3_K and abs(rows[0]["theory"]["bdp_pkts"] - NS3_BDP) < 2 if rows else False
        for s in rows:
            th, n, arm = s["theory"], s["n"], f"n{s['n']}"
            verdicts.append(verdict(
                f"N={n}: the queue's peak is K + N", s["queue_p99_pkts"],
                within(s["queue_p99_pkts"], th["q_max"], 0.10), f"K + N = {th['q_max']:.0f} pkts",
                "±10 % (peak = p99 of the queue)", "DCTCP §3.3 (Qmax = K + N), Fig. 12", QUEUE, [arm]))
            if same_as_ns3 and n in NS3_REFERENCE:
                peak, swing, period = NS3_REFERENCE[n]
                verdicts.append(verdict(
                    f"N={n}: the sawtooth's swing", s["amplitude_pkts"],
                    within(s["amplitude_pkts"], swing, NS3_TOLERANCE),
                    f"ns-3: {swing} pkts (§3.3's A = {th['amplitude']:.1f})",
                    "±25 % (swing = p95 − p5)", "ns-3.37 TcpDctcp at Fig. 12's parameters", QUEUE, [arm]))
                measured = s["period_ms"] / 1e3 / rtt if s["period_ms"] else float("nan")
                verdicts.append(verdict(
                    f"N={n}: the sawtooth's period", measured, within(measured, period, NS3_TOLERANCE),
                    f"ns-3: {period} RTTs (§3.3's Tc = {th['period_ms'] / 1e3 / rtt:.1f})",
                    "±25 % (period in RTTs)", "ns-3.37 TcpDctcp at Fig. 12's parameters", QUEUE, [arm]))
            verdicts.append(verdict(
                f"N={n}: the link stays busy", s["utilisation"], s["utilisation"] >= 0.95,
                "100 % of the bottleneck", "≥ 95 %", "DCTCP §3.3 (K > C·RTT/7: no idle link)", RATE,
                [arm]))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        names = sorted(results, key=lambda a: results[a]["settings"]["n"])
        # Fig. 12's view: a few periods of each queue against Qmin..Qmax.
        fig, axes = plt.subplots(len(names), 1, figsize=(8, 2.2 * len(names) + 0.6),
                                 squeeze=False)
        for ax, a in zip(axes[:, 0], names):
            r, s = results[a], summary[a]
            th = s["theory"]
            cards = metrics.postcards(r)
            t0 = min((c["t"] for c in cards), default=0) + p["warmup"]
            span = max(8 * th["period_ms"] / 1e3, 20 * p["rtt"])
            win = [c for c in cards if t0 <= c["t"] <= t0 + span]
            ax.plot([(c["t"] - t0) * 1e3 for c in win], [c["depth"] for c in win], lw=0.7,
                    label="measured")
            ax.axhline(th["q_max"], color="tab:red", ls="--", lw=1, label="Qmax = K + N")
            ax.axhline(th["q_min"], color="tab:green", ls="--", lw=1, label="Qmin = Qmax − A")
            ax.axhline(p["k"], color="k", ls=":", lw=1, label=f"K = {p['k']}")
            ax.set_title(f"{r['label']}: predicted period {th['period_ms']:.1f} ms, measured "
                         + (f"{s['period_ms']:.1f} ms" if s["period_ms"] else "none clear"),
                         fontsize=9, loc="left")
            ax.set_ylabel("queue (pkts)")
            ax.legend(loc="upper right", fontsize=7)
        axes[-1, 0].set_xlabel("time (ms)")
        fig.suptitle(f"DCTCP queue vs §3.3, {p['rate'] / 1e6:.0f} Mbps, RTT "
                     f"{p['rtt'] * 1e3:g} ms, K = {p['k']} (cf. DCTCP Fig. 12)")
        fig.tight_layout()
        trace = outdir / "sawtooth.png"
        fig.savefig(trace, dpi=110)
        plt.close(fig)

        # Measured against predicted, per N: the queue's range, and its
        # autocorrelation (peaks at the oscillation's period) against Tc.
        ns = [summary[a]["n"] for a in names]
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
        ax1.plot(ns, [summary[a]["theory"]["q_max"] for a in names], "r--o", label="Qmax (theory)")
        ax1.plot(ns, [summary[a]["queue_p95_pkts"] for a in names], "r-s", label="p95 (measured)")
        ax1.plot(ns, [summary[a]["theory"]["q_min"] for a in names], "g--o", label="Qmin (theory)")
        ax1.plot(ns, [summary[a]["queue_p5_pkts"] for a in names], "g-s", label="p5 (measured)")
        ax1.axhline(p["k"], color="k", ls=":", lw=1, label="K")
        ax1.set_xlabel("flows N")
        ax1.set_ylabel("queue (packets)")
        ax1.legend(fontsize=7)
        step = GRID_RTTS * p["rtt"]
        for i, a in enumerate(names):
            r, th = results[a], summary[a]["theory"]
            kept = metrics.queue_after(r, p["warmup"])
            t0 = kept[0]["t"] if kept else 0
            ac = autocorrelation(queue_grid(kept, t0, step))
            lags = int(min(len(ac), PERIOD_MAX_RTTS / GRID_RTTS))
            color = f"C{i}"
            ax2.plot([k * GRID_RTTS for k in range(lags)], ac[:lags], color=color, lw=1,
                     label=f"N = {summary[a]['n']}")
            ax2.axvline(th["period_ms"] / 1e3 / p["rtt"], color=color, ls="--", lw=1)
        ax2.axhline(0, color="gray", lw=0.5)
        ax2.set_xlabel("lag (RTTs); dashed: predicted period Tc")
        ax2.set_ylabel("autocorrelation of the queue")
        ax2.legend(fontsize=7)
        fig.tight_layout()
        cmp_path = outdir / "theory_vs_measured.png"
        fig.savefig(cmp_path, dpi=110)
        plt.close(fig)
        return [trace, cmp_path]
