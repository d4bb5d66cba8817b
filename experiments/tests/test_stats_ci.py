"""The confidence interval a sweep's report draws: Student t over a
point's seeds, against values computed by hand."""
import math

import pytest

from p4cc_exp.stats import mean_ci, student_t_cdf, student_t_quantile


@pytest.mark.parametrize("df,t", [(1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764),
                                  (9, 2.2622), (29, 2.0452), (120, 1.9799)])
def test_t_quantiles_of_the_tables(df, t):
    assert student_t_quantile(0.975, df) == pytest.approx(t, abs=1e-4)


def test_t_cdf_is_symmetric_and_centred():
    assert student_t_cdf(0.0, 5) == pytest.approx(0.5)
    assert student_t_cdf(-2.0, 7) == pytest.approx(1 - student_t_cdf(2.0, 7))
    assert student_t_quantile(0.025, 4) == pytest.approx(-2.7764, abs=1e-4)


def test_mean_ci_by_hand():
    # 2, 4, 6, 8, 10: mean 6, s = sqrt(40/4) = sqrt(10), t(0.975, 4) = 2.7764
    m, h, n = mean_ci([2, 4, 6, 8, 10])
    assert (m, n) == (6.0, 5)
    assert h == pytest.approx(2.7764 * math.sqrt(10) / math.sqrt(5), rel=1e-4)  # 3.9264
    assert h == pytest.approx(3.9264, abs=1e-3)
    # 1.0, 1.2: mean 1.1, s = 0.1414, t(0.975, 1) = 12.706: ± 1.2706
    m, h, n = mean_ci([1.0, 1.2])
    assert m == pytest.approx(1.1) and h == pytest.approx(1.2706, abs=1e-3)


def test_mean_ci_edges():
    m, h, n = mean_ci([3.0])
    assert (m, n) == (3.0, 1) and math.isnan(h)
    m, h, n = mean_ci([])
    assert n == 0 and math.isnan(m)
    # missing values (a failed seed, a period not found) are left out
    m, h, n = mean_ci([1.0, None, float("nan"), 3.0])
    assert (m, n) == (2.0, 2)
    assert mean_ci([5, 5, 5])[1] == 0.0
