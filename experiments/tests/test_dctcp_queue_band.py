"""dctcp-queue's band: §3.3's peak, and below it ns-3's p5 where ns-3 was run
at the same operating point (§3.3's amplitude is too small at C·RTT ≪ K)."""
import pytest

from p4cc_exp.defs.dctcp_queue import NS3_FIG1, band
from p4cc_exp.theory import dctcp_sawtooth


def params(rate, rtt, k=20, senders=2):
    return {"rate": rate, "rtt": rtt, "k": k, "senders": senders}


@pytest.mark.parametrize("rate,rtt,p5", [(100e6, 500e-6, 13), (1e9, 100e-6, 12)])
def test_the_lower_edge_is_ns3s_where_it_was_run(rate, rtt, p5):
    p = params(rate, rtt)
    th = dctcp_sawtooth(2, 20, rate, rtt)
    lo, hi, why = band(p, th)
    assert (lo, hi) == (p5, 22)
    assert f"ns-3: p5 {p5}" in why and f"{th['q_max'] - th['amplitude']:.1f}" in why
    assert lo < th["q_max"] - th["amplitude"] - 3, "the finding: §3.3's A is too small here"


@pytest.mark.parametrize("p", [params(100e6, 1e-3), params(100e6, 500e-6, k=30), params(100e6, 500e-6, senders=3)])
def test_elsewhere_it_is_the_analysis(p):
    th = dctcp_sawtooth(p["senders"], p["k"], p["rate"], p["rtt"])
    lo, hi, why = band(p, th)
    assert (lo, hi) == (pytest.approx(th["q_max"] - th["amplitude"]), th["q_max"])
    assert why == "§3.3's Qmax − A"


@pytest.mark.parametrize("scale", ["default", "paper"])
def test_the_reference_is_keyed_by_the_experiments_parameters(scale):
    from p4cc_exp.defs.dctcp_queue import DctcpQueue
    from p4cc_exp.params import resolve
    p = resolve(DctcpQueue.params, DctcpQueue.paper if scale == "paper" else [])
    assert (round(p["rate"]), round(p["rtt"] * 1e6), p["k"]) in NS3_FIG1
