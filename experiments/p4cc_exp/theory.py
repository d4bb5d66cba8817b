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
