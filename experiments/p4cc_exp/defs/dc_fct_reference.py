"""The reference simulator's dc-fct: the PowerTCP authors' ns-3 code
(inet-tub/ns3-datacenter @ 6ddb4a4, ns-3.39), run here on dc-fct's paper
preset (docs/experiments.md, "dc-fct", has the recipe and what differs).

Its fabric is the preset's (4 leaves × 8 hosts at 100 Gb/s, 2 spines at
400 Gb/s, 1 µs links, a 15 MiB shared buffer, ECMP), its flows p4cc's own
(every arrival of the `seed=1` plan: the measured window, the tail and
the incast flows, at p4cc's start times), its K and RED profile p4cc's;
the reference is lossless (PFC) and its NIC arbitrates queue pairs.
Slowdown is its FCT over its own standalone FCT, summarised with p4cc's
`slowdown` over the same background flows (9 732, 2 058 and 2 058). Per
scenario and algorithm: the smallest and the largest 5 % bin's median and
p99, and the small (< 100 KB) and large (> 1 MB) classes' p50/p95/p99."""
from __future__ import annotations

from ..verdicts import fmt

#: The preset the reference ran (dc-fct's paper scale, seed 1).
PRESET = {"leaves": 4, "hosts_per_leaf": 8, "spines": 2, "rate": 100e9,
          "fabric_rate": 400e9, "delay": 1e-6, "flows": 2000, "seed": 1}

_KEYS = ("bin_first_p50", "bin_first_p99", "bin_last_p50", "bin_last_p99",
         "small_p50", "small_p95", "small_p99", "large_p50", "large_p95", "large_p99")


def _row(*v: float) -> dict[str, float]:
    return dict(zip(_KEYS, v))


REFERENCE: dict[str, dict[str, dict[str, float]]] = {
    "hadoop30-incast": {
        "hpcc": _row(0.99, 2.98, 2.20, 13.13, 1.00, 1.82, 7.26, 2.35, 8.28, 15.11),
        "powertcp": _row(0.99, 2.82, 2.35, 14.17, 1.00, 3.10, 7.86, 2.19, 7.31, 13.21),
        "theta-powertcp": _row(0.99, 4.14, 2.57, 18.26, 1.00, 1.75, 8.25, 3.52, 12.61, 17.61),
        "dctcp": _row(0.99, 21.12, 1.81, 12.68, 1.01, 7.93, 18.94, 1.84, 7.06, 10.79),
        "dcqcn": _row(3.74, 139, 3.57, 27.89, 3.60, 110, 147, 4.42, 13.70, 17.26),
        "timely": _row(11.32, 190, 3.82, 49.10, 11.68, 129, 176, 4.91, 19.56, 25.87),
    },
    "hadoop50": {
        "hpcc": _row(0.99, 2.79, 2.18, 8.12, 1.01, 1.84, 2.47, 2.38, 4.61, 9.03),
        "powertcp": _row(0.99, 1.87, 2.30, 6.91, 1.01, 2.74, 4.22, 2.13, 4.16, 5.37),
        "theta-powertcp": _row(0.99, 1.77, 3.05, 9.94, 1.00, 1.68, 2.13, 3.48, 7.50, 10.01),
        "dctcp": _row(0.99, 4.52, 1.85, 4.13, 1.02, 3.07, 4.35, 1.86, 3.62, 4.24),
        "dcqcn": _row(0.99, 9.24, 1.68, 11.85, 1.01, 5.90, 9.91, 2.58, 7.61, 11.81),
        "timely": _row(0.99, 11.61, 1.61, 12.94, 1.01, 7.58, 13.44, 1.91, 11.44, 14.72),
    },
    "websearch60": {
        "hpcc": _row(1.03, 1.73, 3.87, 12.81, 1.33, 2.71, 3.99, 3.33, 7.85, 10.99),
        "powertcp": _row(1.03, 1.32, 3.19, 11.06, 1.33, 6.24, 13.74, 3.40, 8.58, 11.66),
        "theta-powertcp": _row(1.03, 1.57, 5.62, 11.31, 1.29, 2.77, 4.02, 4.97, 10.21, 15.25),
        "dctcp": _row(1.42, 8.78, 3.24, 7.90, 1.93, 6.53, 9.53, 3.04, 6.96, 8.55),
        "dcqcn": _row(1.05, 20.1, 4.74, 22.1, 1.75, 11.4, 18.8, 4.67, 13.1, 19.3),
        "timely": _row(1.04, 21.2, 9.23, 22.0, 1.44, 15.5, 24.1, 5.41, 22.3, 31.9),
    },
}


def applies(p: dict) -> bool:
    """Whether a run's parameters are the preset the reference ran."""
    return all(abs(p.get(k, -1) - v) <= 1e-9 * max(1.0, abs(v)) for k, v in PRESET.items())


def reference(p: dict, scenario: str) -> dict[str, dict[str, float]]:
    """The reference's numbers for one scenario of this run, if it ran it."""
    return REFERENCE.get(scenario, {}) if applies(p) else {}


def ratio_text(ref: dict, a: tuple[str, str], b: tuple[str, str]) -> str:
    """A verdict source's note: the reference's own a / b (algorithm, key)."""
    x, y = ref.get(a[0], {}).get(a[1]), ref.get(b[0], {}).get(b[1])
    if x is None or not y:
        return ""
    return f"; ns3-datacenter run here: {fmt(x)} / {fmt(y)} = {fmt(x / y)}"
