"""Small, dependency-light statistics used by every experiment."""
from __future__ import annotations

import math
from typing import Iterable, Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100); NaN for no values."""
    xs = sorted(values)
    if not xs:
        return math.nan
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def mean(values: Iterable[float]) -> float:
    xs = list(values)
    return sum(xs) / len(xs) if xs else math.nan


def jain_index(rates: Sequence[float]) -> float:
    """Jain's fairness index: 1 = perfectly fair, 1/n = one flow has all."""
    if not rates or sum(rates) == 0:
        return math.nan
    return sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates))

