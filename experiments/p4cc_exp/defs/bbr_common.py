"""What the BBR experiments (bbr-kernel, bbr-cubic, bbr-rtt, bbr-shallow)
share: the BBR implementations an arm can run, the topologies, and the
measurements every one of them reads from an arm's results (each sender's
goodput, the bottleneck's loss rate, queue and RTT)."""
from __future__ import annotations

import math
from pathlib import Path

from p4cc_topo import load_topology
from p4cc_topo.plan import Agent, FlowWindow, PortRef, Workload

from .. import blocks, metrics, series
from ..params import Param
from ..stats import percentile

#: The packet a BDP is counted in (an Ethernet MTU).
PKT_BYTES = 1500

#: The BBR implementations an arm can run: key -> (algorithm, datapath,
#: label). `kernel` is Linux's tcp_bbr (in virtual time, p4cc's `bbr`
#: models it: docs/simulator.md); `bbr` and `bbr3` are p4cc's BBRv1 and
#: BBRv3 on its user-space transport.
IMPLS = {"kernel": ("bbr", "kernel", "kernel BBRv1"),
         "bbr": ("bbr", "user", "p4cc BBRv1"),
         "bbr3": ("bbr3", "user", "p4cc BBRv3")}
#: Which of them are BBRv1 (what Ware et al.'s model and Hock et al.
#: measured).
V1 = ("kernel", "bbr")


def impls(p: dict, name: str = "bbrs") -> list[str]:
    """The BBR implementations of parameter ``name``, checked."""
    out = list(p[name])
    for k in out:
        if k not in IMPLS:
            raise ValueError(f"{name}: unknown '{k}' ({', '.join(IMPLS)})")
    if not out:
        raise ValueError(f"{name}: name at least one of {', '.join(IMPLS)}")
    return out


def label(impl: str) -> str:
    return IMPLS[impl][2]


def bdp_pkts(rate_bps: float, rtt_s: float) -> float:
    """The bandwidth-delay product in MTU-sized packets."""
    return rate_bps * rtt_s / (8 * PKT_BYTES)


def buffer_pkts(bdps: float, rate_bps: float, rtt_s: float) -> int:
    """A buffer of ``bdps`` BDPs, in packets (at least 1)."""
    return max(1, round(bdps * bdp_pkts(rate_bps, rtt_s)))


def floats(items, name: str, lo: float = 0.0) -> list[float]:
    """A str_list parameter of positive numbers."""
    try:
        out = [float(x) for x in items]
    except ValueError:
        raise ValueError(f"{name}: {list(items)} are not all numbers") from None
    if not out or min(out) <= lo:
        raise ValueError(f"{name}: give numbers above {lo:g}")
    return out


#: p4cc BBR's receivers: Linux's receiver delays ACKs (one per two
#: segments, RFC 1122 §4.2.3.2) and GRO coalesces more; p4cc's receiver
#: acknowledges every packet unless told otherwise. BBR's cwnd grows with
#: the ACK aggregation it sees (tcp_bbr.c bbr_update_ack_aggregation).
ACK_EVERY = Param("ack_every", 1, "p4cc BBR's receivers acknowledge every N-th packet "
                  "(2: as Linux's delayed ACKs; above 1 a delayed ACK waits up to Linux's "
                  "40 ms)", int, 1, 64)
#: Linux's floor of the delayed-ACK timer (TCP_DELACK_MIN, HZ/25): with
#: ack_every above 1 p4cc's receiver waits as long, so that at low rates
#: the ratio is the one asked for, not the 500 µs timer's.
LINUX_DELACK_MIN_US = 40_000


def bbr_receiver(host: str, impl: str, p: dict) -> Agent:
    """The receiver of BBR implementation ``impl``: the kernel's own, or
    p4cc's acknowledging every ``ack_every``-th packet."""
    cc, dp, _ = IMPLS[impl]
    if dp == "kernel":
        return blocks.receiver(host, dp, cc)
    n = p["ack_every"]
    return blocks.receiver(host, dp, cc, ack_every=n,
                           delayed_ack_us=LINUX_DELACK_MIN_US if n > 1 else 0.0)


def access_bps(rate_bps: float) -> int:
    """Host links ten times the bottleneck: in virtual time a host's NIC
    serialises at its link's rate, so a slower one would hold the queue
    instead of the switch."""
    return int(10 * rate_bps)


def wishbone(p: dict, buffer: int, pairs: int = 2):
    """Senders h1…hN → receivers r1…rN across the s1–s2 link (the
    bottleneck: ``rate``, ``buffer`` packets, one-way delay ``rtt``/2, so
    every pair's base RTT is ``rtt``). Each receiver host runs one
    datapath, so a p4cc flow and kernel flows share the bottleneck with a
    receiver each. The measured queue is s1's port 1."""
    topo = load_topology("wishbone", n_pairs=pairs, bottleneck_bps=p["rate"],
                         access_bps=access_bps(p["rate"]),
                         bottleneck_delay_us=f"{p['rtt'] / 2 * 1e6:.0f}us", access_delay_us=0,
                         buffer_pkts=buffer, ecn_k_pkts=None)
    return topo, PortRef("s1", 1)


def dumbbell(p: dict, buffer: int, rtts: list[float], bottleneck_one_way_s: float):
    """Senders h1…hN (one per RTT of ``rtts``) → rx through s1; the
    bottleneck is s1's port towards rx (``rate``, ``buffer`` packets).
    Each sender's access delay makes up its RTT around the bottleneck's
    ``bottleneck_one_way_s``."""
    access = [f"{(rtt / 2 - bottleneck_one_way_s) * 1e6:.0f}us" for rtt in rtts]
    if any(rtt / 2 < bottleneck_one_way_s for rtt in rtts):
        raise ValueError(f"every RTT must be at least {2 * bottleneck_one_way_s * 1e3:g} ms")
    return load_topology("dumbbell", n_senders=len(rtts), bottleneck_bps=p["rate"],
                         access_bps=access_bps(p["rate"]),
                         delay_us=f"{bottleneck_one_way_s * 1e6:.0f}us", access_delay_us=access,
                         buffer_pkts=buffer, ecn_k_pkts=None)


def flows_sender(host: str, dst: str, cc: str, datapath: str, n: int, duration: float,
                 flow_id: int, seed: int, line_rate_bps: int | None = None) -> Agent:
    """``n`` long flows from ``host`` to ``dst`` over the whole run (one
    agent: they share the host's RTT)."""
    return Agent(host, "sender", datapath=datapath, cc=cc, ecn=True,
                 workload=Workload("long", flows=tuple(FlowWindow(dst, 0.0, duration)
                                                       for _ in range(n))),
                 flow_id_base=flow_id, seed=seed,
                 line_rate_bps=line_rate_bps if datapath == "user" else None)


# ------------------------------------------------------------- measurements

def goodput_by_sender(r: dict) -> dict[str, list[float]]:
    """Each sender's flows' goodput (Mb/s) in the arm's measurement window
    (metrics.steady_flow_mbps), by the sender's folder."""
    out = {}
    for d in metrics.sender_dirs(r):
        bins = series.tput_bins(d)
        out[d.name] = [metrics._goodput_in_window(f, bins.get(f.get("flow_id"), []),
                                                  r.get("window_unix_ns"))
                       for f in series.rows(d / "flows.csv")]
    return out


def share(mine: float, total: float) -> float:
    return mine / total if total > 0 else math.nan


def _window(r: dict) -> tuple[float, float]:
    w = r.get("window_unix_ns")
    return (w[0] / 1e9, w[1] / 1e9) if w else (-math.inf, math.inf)


def queue_stats(r: dict) -> dict:
    """The bottleneck's queue (postcards) in the measurement window:
    median and p95 depth (packets) and median queueing delay (µs)."""
    t0, t1 = _window(r)
    cards = [c for c in metrics.postcards(r) if t0 <= c["t"] <= t1]
    depths = [c["depth"] for c in cards]
    return {"queue_median_pkts": percentile(depths, 50), "queue_p95_pkts": percentile(depths, 95),
            "qdelay_median_us": percentile([c["qdelay_us"] for c in cards], 50),
            "postcards": len(cards)}


def rtt_stats(r: dict, base_rtt_s: float, folders: list[str] | None = None) -> dict:
    """RTT samples of the senders (all, or those in ``folders``) in the
    measurement window: median and p95 (ms) and the median over the base
    RTT (RTT inflation). The user-space transport logs a sample per ACK
    (1 in rtt_every), kernel TCP its smoothed RTT (tcpi_rtt) every bin."""
    t0, t1 = _window(r)
    dirs = [d for d in metrics.sender_dirs(r) if folders is None or d.name in folders]
    rtts = [rtt for s in series.rtts(dirs).values() for (t, rtt, _) in s if t0 <= t <= t1]
    med = percentile(rtts, 50) / 1e3
    return {"rtt_median_ms": med, "rtt_p95_ms": percentile(rtts, 95) / 1e3,
            "rtt_inflation": med / (base_rtt_s * 1e3) if base_rtt_s > 0 else math.nan,
            "rtt_samples": len(rtts)}


def loss_rate(r: dict) -> tuple[float, str]:
    """The bottleneck's loss rate in the measurement window, and how it was
    measured: the egress queue's tail drops over the packets offered to it
    (drops + admissions) where the switch counts them (embedded target,
    virtual time); else the senders' retransmissions over their packets
    sent, over the flows' lifetimes (start-up included)."""
    drops, enq = r.get("tail_drops"), r.get("enq_pkts")
    if drops is not None and enq is not None and drops + enq > 0:
        return drops / (drops + enq), "switch: tail drops / packets offered, after the warm-up"
    sent = retx = 0
    for d in metrics.sender_dirs(r):
        for f in series.rows(Path(d) / "flows.csv"):
            try:
                sent += int(f.get("pkts_sent") or 0)
                retx += int(f.get("retx_pkts") or 0)
            except ValueError:
                continue
    return (retx / sent if sent else math.nan), "senders: retransmissions / packets sent, whole run"
