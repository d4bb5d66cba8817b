"""Analysis steps experiments share, each a function of an arm's results
(results.arm_result): the queue it measured, its flows' throughput and
RTT, utilisation."""
from __future__ import annotations

from pathlib import Path

from . import series
from .stats import mean, percentile


def postcards(r: dict) -> list[dict]:
    """The measured queue's postcards (that port, of that switch)."""
    return series.postcards(Path(r["outdir"]) / "queue.csv", r["port"], r.get("switch_id"))


def queue_after(r: dict, warmup_s: float) -> list[dict]:
    """Postcards from ``warmup_s`` after the first one on."""
    cards = postcards(r)
    t0 = min((c["t"] for c in cards), default=0) + warmup_s
    return [c for c in cards if c["t"] >= t0]


def sender_dirs(r: dict) -> list[Path]:
    return [Path(r["outdir"]) / h for h in r["senders"]]


def flow_mbps(f: dict) -> float:
    """A flow's goodput over its own lifetime (flows.csv row)."""
    secs = (int(f["end_unix_ns"]) - int(f["start_unix_ns"])) / 1e9
    return int(f["bytes_acked"]) * 8 / secs / 1e6 if secs > 0 else 0.0


def steady_flow_mbps(r: dict) -> list[float]:
    """Each flow's goodput (Mb/s; flows.csv rows in ``series.flows`` order)
    over the part of its life inside the arm's measurement window: after
    the warm-up and before the end, the span the utilisation is counted
    over. Whole 10 ms bins of tput.csv, so the start-up a warm-up leaves out
    is left out here too. A flow with no whole bin in the window (or an arm
    without both counter readings) keeps its lifetime goodput."""
    if is_external(r):
        return list(external_flow_mbps(r).values())
    out = []
    for d in sender_dirs(r):
        bins = series.tput_bins(d)
        for f in series.rows(d / "flows.csv"):
            out.append(_goodput_in_window(f, bins.get(f.get("flow_id"), []), r.get("window_unix_ns")))
    return out


def _goodput_in_window(f: dict, bins: list[tuple[int, int, int]], window) -> float:
    if window:
        t0 = max(int(f["start_unix_ns"]), window[0])
        t1 = min(int(f["end_unix_ns"]), window[1])
        inside = [(ns, b) for start, ns, b in bins if start >= t0 and start + ns <= t1]
        span = sum(ns for ns, _ in inside)
        if span > 0:
            return sum(b for _, b in inside) * 8 / (span / 1e9) / 1e6
    return flow_mbps(f)


def goodput_between(sender_dir, t0: float, t1: float) -> float:
    """A sender's goodput (Mb/s) between t0 and t1 (unix s): the bytes of
    its throughput bins (tput.csv) that start in that span."""
    total = sum(b for bins in series.tput_bins(sender_dir).values()
                for start, _, b in bins if t0 <= start / 1e9 < t1)
    return total * 8 / (t1 - t0) / 1e6 if t1 > t0 else float("nan")


def utilisation_between(r: dict, first: str, last: str, rate_bps: float) -> float:
    """How busy the measured port was between two of the arm's counter
    readings (names in measure.json: start, end, and arm_steps.read_name
    of the plan's extra instants), as utilisation() judges it."""
    reads = r.get("reads") or {}
    try:
        a, b = reads[first], reads[last]
        pa, pb = a["ports"][r["queue_key"]], b["ports"][r["queue_key"]]
    except (KeyError, TypeError):
        return float("nan")
    if "wire_unix_ns" in pa and "wire_unix_ns" in pb:
        window = (pb["wire_unix_ns"] - pa["wire_unix_ns"]) / 1e9
    else:
        window = (b["unix_ns"] - a["unix_ns"]) / 1e9
    from .results import busy_between, sent_bytes
    part = {"window_s": window, "tx_bytes": sent_bytes(pa, pb),
            "tx_packets": pb.get("tx_packets", 0) - pa.get("tx_packets", 0),
            "rate_pps": r.get("rate_pps"),
            "busy": busy_between(a, b, r["queue_key"], r.get("port_rate_bps"))}
    return utilisation(part, rate_bps)


def _external_packets(r: dict) -> list[tuple[int, str, int]]:
    if r.get("port") is None:
        return []
    return series.postcard_bytes(Path(r["outdir"]) / "queue.csv", r["port"], r.get("switch_id"),
                                 set(r["external_flows"].values()))


def external_flow_mbps(r: dict) -> dict[str, float]:
    """Flow id -> Mb/s on the wire through the measured port inside the
    measurement window, of each external sender: its postcards' frame
    bytes times the sampling (one in N), so an estimate where N > 1."""
    by_src = {ip: fid for fid, ip in r["external_flows"].items()}
    w = r.get("window_unix_ns")
    total = {fid: 0 for fid in r["external_flows"]}
    for t, src, n in _external_packets(r):
        if w is None or w[0] <= t < w[1]:
            total[by_src[src]] += n
    span = (w[1] - w[0]) / 1e9 if w else r["window_s"]
    k = r.get("postcard_one_in_n") or 1
    return {fid: b * k * 8 / span / 1e6 if span > 0 else 0.0 for fid, b in total.items()}


def external_flow_rates(r: dict, bin_s: float) -> dict[str, list[tuple[float, float]]]:
    """flow_rates() of external senders, from the postcards (wire Mb/s)."""
    by_src = {ip: fid for fid, ip in r["external_flows"].items()}
    pkts = _external_packets(r)
    if not pkts:
        return {fid: [] for fid in r["external_flows"]}
    t0, k = pkts[0][0], r.get("postcard_one_in_n") or 1
    bins: dict[str, dict[int, int]] = {fid: {} for fid in r["external_flows"]}
    for t, src, n in pkts:
        b = bins[by_src[src]]
        i = int((t - t0) / 1e9 / bin_s)
        b[i] = b.get(i, 0) + n
    return {fid: [(i * bin_s, b.get(i, 0) * k * 8 / bin_s / 1e6)
                  for i in range(min(b), max(b) + 1)] if b else []
            for fid, b in bins.items()}


def is_external(r: dict) -> bool:
    """An arm whose senders are programs of the user's (datapath 'external')."""
    return (r.get("settings") or {}).get("datapath") == "external"


def wire_mbps(r: dict) -> float:
    """What the measured port sent between the two counter readings, Mb/s
    on the wire (every byte of every frame)."""
    return r["tx_bytes"] * 8 / r["window_s"] / 1e6 if r["window_s"] > 0 else 0.0


def utilisation(r: dict, rate_bps: float) -> float:
    """How busy the measured port was between the two counter readings:
    where the executor measured the time its link spent serializing
    (virtual time: ``r["busy"]``), that time over the window, scaled from
    the port's rate to ``rate_bps`` — exact, in whole numbers, so never
    above 1 at the port's own rate; else the bytes it sent as a fraction of
    its line rate — or, where the target shapes in frames per second
    (bmv2), the frames it sent as a fraction of that rate, since frames
    shorter than the full-sized one the rate was converted at leave bits
    unused however busy the port is."""
    busy = r.get("busy")
    if busy and busy["window_ns"] > 0:
        num, den = busy["busy_ns"] * busy["rate_bps"], busy["window_ns"]
        if float(rate_bps).is_integer():
            return num / (den * int(rate_bps))   # integers: correctly rounded
        return num / den / rate_bps
    if r["window_s"] <= 0:
        return 0.0
    if r.get("rate_pps") and r.get("tx_packets"):
        return r["tx_packets"] / (r["rate_pps"] * r["window_s"])
    return r["tx_bytes"] * 8 / (rate_bps * r["window_s"])


def arm_summary(p: dict, r: dict) -> dict:
    """Throughput (each flow's goodput after the warm-up), utilisation, queue and
    RTT of one arm of long flows."""
    depths = [c["depth"] for c in queue_after(r, p["warmup"])]
    if is_external(r):
        # The user's program logs nothing p4cc reads: what crossed the
        # bottleneck is the switch's count (headers and retransmissions
        # included), and there is no RTT sample.
        return {"label": r["label"], "throughput_mbps": wire_mbps(r),
                "utilisation": utilisation(r, p["rate"]), "per_flow_mbps": steady_flow_mbps(r),
                "queue_mean_pkts": mean(depths), "queue_p95_pkts": percentile(depths, 95),
                "rtt_mean_us": float("nan"), "rtt_p95_us": float("nan"),
                "flows": len(r["senders"]), "wire_mbps": wire_mbps(r),
                "measured": "at the switch (external senders)"}
    cards = postcards(r)
    t0 = min((c["t"] for c in cards), default=0) + p["warmup"]
    rtts = [rtt for s in series.rtts(sender_dirs(r)).values() for (t, rtt, _) in s if t >= t0]
    flows = series.flows(sender_dirs(r))
    per_flow = steady_flow_mbps(r)
    return {
        "label": r["label"],
        "throughput_mbps": sum(per_flow),
        "utilisation": utilisation(r, p["rate"]),
        "per_flow_mbps": per_flow,
        "queue_mean_pkts": mean(depths),
        "queue_p95_pkts": percentile(depths, 95),
        "rtt_mean_us": mean(rtts),
        "rtt_p95_us": percentile(rtts, 95),
        "flows": len(flows),
        "wire_mbps": wire_mbps(r),
    }


def flow_rates(r: dict, bin_s: float = 0.1) -> dict[str, list[tuple[float, float]]]:
    """flow id -> [(t since the first bin, Mbps)], averaged into ``bin_s`` bins."""
    if is_external(r):
        return external_flow_rates(r, bin_s)
    raw = series.throughput(sender_dirs(r))
    t0 = min((s[0][0] for s in raw.values() if s), default=0)
    out = {}
    for fid, s in raw.items():
        bins: dict[int, list[float]] = {}
        for t, mbps in s:
            bins.setdefault(int((t - t0) / bin_s), []).append(mbps)
        out[fid] = sorted((k * bin_s, mean(v)) for k, v in bins.items())
    return out


def queue_plot(results: dict, outdir: Path, title: str) -> Path:
    """The measured queue over time, one panel per arm."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    n = len(results)
    fig, axes = plt.subplots(n, 1, figsize=(9, 1.9 * n + 0.6), sharex=True, squeeze=False)
    for ax, (name, r) in zip(axes[:, 0], results.items()):
        cards = postcards(r)
        t0 = cards[0]["t"] if cards else 0
        ax.plot([c["t"] - t0 for c in cards], [c["depth"] for c in cards], lw=0.5)
        ax.set_ylabel("pkts")
        ax.set_title(r["label"], fontsize=9, loc="left")
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(title)
    fig.tight_layout()
    path = outdir / "queue_over_time.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
