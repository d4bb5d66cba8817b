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
