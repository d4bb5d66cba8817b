"""dctcp-theory's analysis: the queue resampling and the period finder on
series whose answer is known, and the §3.3 formulas at the paper's point."""
import math

import pytest

from p4cc_exp.defs.dctcp_theory import dominant_period, queue_grid
from p4cc_exp.theory import dctcp_sawtooth


def sawtooth(period_s, lo, hi, secs, dt):
    """Postcards of a queue rising linearly from lo to hi, then dropping."""
    cards, t = [], 0.0
    while t < secs:
        phase = (t % period_s) / period_s
        cards.append({"t": t, "depth": round(lo + (hi - lo) * phase)})
        t += dt
    return cards


@pytest.mark.parametrize("period", [0.004, 0.012, 0.055])
def test_period_of_a_sawtooth(period):
    cards = sawtooth(period, 30, 80, 2.0, 0.00012)  # a postcard per 1500 B at 100 Mbps
    step = 0.0005
    xs = queue_grid(cards, 0.0, step)
    got = dominant_period(xs, step, period * 3)
    assert got == pytest.approx(period, rel=0.08)


def test_no_period_in_a_flat_or_short_series():
    assert dominant_period([20.0] * 500, 0.001, 0.05) is None
    assert dominant_period([1.0, 2.0, 3.0], 0.001, 0.002) is None
    # noise has no period
    import random
    rnd = random.Random(1)
    assert dominant_period([rnd.gauss(30, 3) for _ in range(4000)], 0.001, 0.2) is None


def test_grid_holds_the_last_postcard():
    cards = [{"t": 0.0, "depth": 1}, {"t": 0.25, "depth": 5}, {"t": 0.9, "depth": 7}]
    assert queue_grid(cards, 0.0, 0.5) == [1.0, 5.0]
    assert queue_grid([], 0.0, 0.5) == []


def test_paper_operating_point():
    # 10 Gbps, RTT 100 µs, K = 40, N = 2: C·RTT ≈ 83 packets of 1500 B.
    th = dctcp_sawtooth(2, 40, 10e9, 100e-6)
    assert th["bdp_pkts"] == pytest.approx(83.3, abs=0.1)
    assert th["q_max"] == 42
    assert th["amplitude"] == pytest.approx(0.5 * math.sqrt(4 * (83.33 + 40)), rel=1e-3)
    # the defaults of dctcp-theory keep the same product at 100 Mbps
    assert dctcp_sawtooth(2, 40, 100e6, 10e-3)["bdp_pkts"] == pytest.approx(th["bdp_pkts"])
