"""pcc-convergence's analysis: windowed Jain index and per-flow deviation."""
import math

import pytest

from p4cc_exp.defs.pcc_convergence import window_stats


def steady(rate, t0, t1, step=0.1):
    return [(t0 + i * step, rate) for i in range(int((t1 - t0) / step))]


def test_equal_steady_flows_are_fair_and_stable():
    rates = {"1": steady(50, 0, 10), "2": steady(50, 0, 10)}
    jain, sd = window_stats(rates, [1, 2], 0, 10, 2)
    assert jain == pytest.approx(1.0)
    assert sd == pytest.approx(0.0)


def test_a_starved_flow_halves_the_index_of_two():
    rates = {"1": steady(90, 0, 10), "2": steady(0.0, 0, 10)}
    jain, _ = window_stats(rates, [1, 2], 0, 10, 2)
    assert jain == pytest.approx(0.5)


def test_deviation_is_over_window_averages():
    # flow 1 alternates 40/60 every 2 s: window averages 40, 60, 40, 60, 40
    r1 = [(t / 10, 40.0 if int(t / 20) % 2 == 0 else 60.0) for t in range(100)]
    jain, sd = window_stats({"1": r1, "2": steady(50, 0, 10)}, [1, 2], 0, 10, 2)
    xs = [40, 60, 40, 60, 40]
    m = sum(xs) / 5
    expect = math.sqrt(sum((x - m) ** 2 for x in xs) / 4) / 2  # flow 2 has none
    assert sd == pytest.approx(expect)
    assert 0.9 < jain < 1.0


def test_the_paper_preset_logs_a_bounded_number_of_samples():
    """500 s phases at 100 Mb/s: 3500 s of traffic is thinned to about
    SAMPLE_BUDGET_S seconds' worth of postcards and RTT rows (it filled a
    disk with every packet's); the default 20 s phases keep every packet."""
    from p4cc_exp import blocks
    from p4cc_exp.params import resolve
    from p4cc_exp.registry import get
    exp = get("pcc-convergence")
    # 7 phases of 500 s at 100 Mb/s against a 120 s budget: 1 in 29.
    assert round(3500 / blocks.SAMPLE_BUDGET_S) == 29
    for over, n in ((exp.paper, 29), ([], 1)):
        for a in exp.arms(resolve(exp.params, list(over))):
            assert {s.postcards.one_in_n for s in a.switches.values()} == {n}
            assert {ag.rtt_every for ag in a.agents if ag.role == "sender"} == {n}


def test_the_fairness_verdict_measures_in_the_papers_windows():
    """The seed's Jain's indices are over 100 s windows: the verdict uses
    them, or the whole settled phase when phases are shorter, whatever the
    table's `window`; a flow pair that alternates fair shares every 2 s is
    fair over 18 s though not over 2 s."""
    from p4cc_exp.defs.pcc_convergence import PAPER_WINDOW_S, verdict_window
    assert verdict_window({"interval": 500, "settle": 20}) == PAPER_WINDOW_S == 100
    assert verdict_window({"interval": 60, "settle": 2}) == 58
    assert verdict_window({"interval": 20, "settle": 2}) == 18
    swing = [(t / 10, 30.0 if int(t / 20) % 2 == 0 else 70.0) for t in range(200)]
    other = [(s, 100.0 - r) for s, r in swing]
    short, _ = window_stats({"1": swing, "2": other}, [1, 2], 0, 18, 2)
    whole, _ = window_stats({"1": swing, "2": other}, [1, 2], 0, 18, 18)
    assert short == pytest.approx(100 ** 2 / (2 * (30 ** 2 + 70 ** 2)))
    assert whole > 0.99
