"""Closed-form values from the papers, drawn beside measurements."""
from __future__ import annotations

import math


def dctcp_sawtooth(n_flows: int, k_pkts: float, rate_bps: float, rtt_s: float,
                   mss_bytes: int = 1500) -> dict:
    """DCTCP §3.3 (Alizadeh et al., SIGCOMM 2010), N synchronized flows:
    Qmax = K + N, amplitude A = ½·sqrt(2N(C·RTT + K)),
    period Tc = ½·sqrt(2(C·RTT + K)/N) RTTs, Qmin = Qmax − A (packets)."""
    bdp = rate_bps * rtt_s / (8 * mss_bytes)
    q_max = k_pkts + n_flows
    amplitude = 0.5 * math.sqrt(2 * n_flows * (bdp + k_pkts))
    period_rtts = 0.5 * math.sqrt(2 * (bdp + k_pkts) / n_flows)
    return {"bdp_pkts": bdp, "q_max": q_max, "amplitude": amplitude,
            "q_min": max(0.0, q_max - amplitude), "period_s": period_rtts * rtt_s}


def mathis_bps(rtt_s: float, loss: float, mss_bytes: int = 1336) -> float:
    """Mathis et al. (CCR 1997): a loss-based TCP's rate at random loss p,
    ≈ 1.22·MSS/(RTT·√p) (bits/s); infinite at p = 0."""
    return float("inf") if loss <= 0 else 1.22 * mss_bytes * 8 / (rtt_s * math.sqrt(loss))


def cubic_bps(rtt_s: float, loss: float, mss_bytes: int = 1336, c: float = 0.4,
              beta: float = 0.7) -> float:
    """CUBIC's rate at random loss p (RFC 9438 §5.1): the average window
    (C·(3+β)/(4·(1−β)))^¼ · (RTT/p)^¾ segments, or Reno's rate where that is
    larger (CUBIC's Reno-friendly region)."""
    if loss <= 0:
        return float("inf")
    w = (c * (3 + beta) / (4 * (1 - beta))) ** 0.25 * (rtt_s / loss) ** 0.75
    return max(w * mss_bytes * 8 / rtt_s, mathis_bps(rtt_s, loss, mss_bytes))


def tcp_model_bps(cc: str, rtt_s: float, loss: float) -> tuple[float, str]:
    """A loss-based TCP's modelled rate at random loss, and the model's name."""
    if cc == "cubic":
        return cubic_bps(rtt_s, loss), "CUBIC's response function (RFC 9438 §5.1)"
    return mathis_bps(rtt_s, loss), "Mathis model, 1.22·MSS/(RTT·√p)"


#: BBRv1's ProbeRTT (Linux tcp_bbr.c): entered when min_rtt is 10 s old,
#: held 200 ms at 4 packets in flight.
BBR_PROBE_RTT_INTERVAL_S = 10.0
BBR_PROBE_RTT_S = 0.2
BBR_PROBE_RTT_PKTS = 4


def ware_bbr_share(buffer_bdp: float, rate_bps: float, rtt_s: float, n_bbr: int = 1,
                   pkt_bytes: int = 1500) -> dict:
    """BBRv1's aggregate share of a bottleneck it shares with loss-based
    flows (Cubic, Reno), whatever their number: Ware, Mukerjee, Seshan,
    Sherry, "Modeling BBR's Interactions with Loss-Based Congestion
    Control", IMC 2019, §4.

    With c the link in packets/s, l the base RTT, q = X·c·l the buffer in
    packets and N the BBR flows, BBR competes window-limited at its
    in-flight cap 2·BtlBw·RTT_est, where BtlBw = (1 − p)·c (p: the
    loss-based flows' share) and, as ProbeRTT drains only BBR's own packets,
    RTT_est = (p·q + 4N)/c + l (eq. 7). Setting the cap equal to BBR's part
    of the queue and pipe, (1 − p)(q + c·l), gives (eq. 9)

        p = 1/2 − 1/(2X) − 4N/q          (0 when negative: BBR takes all)

    and, as BBR sends next to nothing for the q/c + 200 ms + l of each
    ProbeRTT, entered every 10 s (eq. 11), BBR's fraction of the link (eq. 10)

        share = (1 − p) · (1 − (q/c + 0.2 s + l) / 10 s).

    Sources: Ware's own account of the simple model (q ≫ c·l: p = 1/2;
    blog post, CMU CSD 2024, and APNIC blog 2020-01-24) and equations
    (5)–(11) as a public reproduction of the paper transcribes them, with
    the paper's numbering; the paper's text itself was not at hand. The
    model's assumptions: flows synchronised, the queue typically full, all
    flows with the same base RTT."""
    if buffer_bdp <= 0 or rate_bps <= 0 or rtt_s <= 0 or n_bbr < 1:
        raise ValueError("need a positive buffer, rate and RTT and at least one BBR flow")
    c = rate_bps / (8 * pkt_bytes)
    q = buffer_bdp * c * rtt_s
    p = max(0.0, 0.5 - 1 / (2 * buffer_bdp) - BBR_PROBE_RTT_PKTS * n_bbr / q)
    probe_s = q / c + BBR_PROBE_RTT_S + rtt_s
    frac_probing = min(1.0, probe_s / BBR_PROBE_RTT_INTERVAL_S)
    return {"loss_based_share": p, "inflight_cap_share": 1 - p, "probe_rtt_s": probe_s,
            "share": (1 - p) * (1 - frac_probing), "buffer_pkts": q}
