"""Verdicts: each check of an experiment judges a measured number against
the paper's or the analysis' value, with a stated tolerance and source —
never only one arm against another, save against a reference
implementation's arm (the authors' own code, run beside p4cc's on the
same bottleneck in the same run: ``against_reference``).

A verdict is *pass* or *fail* on the numbers, and *void* when the run that
produced them was not faithful enough for what the verdict is sensitive to
(fidelity.py): a queue figure needs the switch to have kept its link
model's schedule to within a packet time, a throughput average tolerates
ten. Void verdicts are never counted as passing.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

#: What a verdict's numbers depend on (fidelity.py holds the bounds).
QUEUE = "queue"      # queue depths and anything timed by them (RTT, sawtooth)
RATE = "rate"        # throughput, utilisation, fairness, completion times
SENSITIVITIES = (QUEUE, RATE)


@dataclass
class Verdict:
    name: str                 #: what is judged, in words
    measured: object          #: our value (number or short text)
    expected: str             #: the paper's / analysis' value, e.g. "K + N = 42 pkts"
    tolerance: str            #: e.g. "±10 %", "≥", "1 packet"
    source: str               #: e.g. "DCTCP §3.3, Fig. 12"
    ok: bool                  #: the numbers alone
    sensitive: str = RATE
    arms: list[str] = field(default_factory=list)   #: arms whose data it uses (all if empty)
    status: str = ""          #: pass | fail | void (set by judge())
    reason: str = ""          #: why void

    def to_dict(self) -> dict:
        d = asdict(self)
        if isinstance(self.measured, float):
            d["measured"] = None if math.isnan(self.measured) else self.measured
        return d


def verdict(name: str, measured, ok, expected: str, tolerance: str, source: str,
            sensitive: str = RATE, arms: list[str] | None = None) -> Verdict:
    """A verdict; a measured NaN (nothing measured) always fails."""
    if sensitive not in SENSITIVITIES:
        raise ValueError(f"sensitivity {sensitive!r} is not one of {SENSITIVITIES}")
    if isinstance(measured, float) and math.isnan(measured):
        ok = False
    return Verdict(name, measured, expected, tolerance, source, bool(ok), sensitive,
                   list(arms or []))


def within(measured: float, target: float, rel: float) -> bool:
    return abs(measured - target) <= rel * abs(target)


#: How far p4cc's throughput may be from the authors' code on the same
#: bottleneck in the same run: the spread between the reference's own
#: runs at one point (docs/experiments.md, "Reference arms").
REFERENCE_RATE_TOLERANCE = 0.05


def against_reference(what: str, measured: float, ref: float, ref_label: str, arms: list[str],
                      rel: float | None = None, below: float | None = None,
                      source: str = "") -> Verdict:
    """p4cc's ``measured`` against a reference arm's ``ref``: within ``rel``
    of it (both ways), or — for a higher-is-better figure — no more than
    ``below`` under it."""
    if below is not None:
        ok, tol = measured >= ref - below, f"≥ reference − {below:g}"
    else:
        rel = REFERENCE_RATE_TOLERANCE if rel is None else rel
        ok, tol = within(measured, ref, rel), f"±{rel * 100:g} %"
    src = f"{ref_label} on the same bottleneck in this run"
    return verdict(what, measured, ok, f"{ref_label}: {ref:.4g}", tol,
                   f"{src}; {source}" if source else src, RATE, arms)


def judge(verdicts: list[Verdict], fidelity: dict[str, dict]) -> list[Verdict]:
    """Sets each verdict's status: void when an arm it uses was not
    faithful for its sensitivity (``fidelity[arm]["ok"][sensitivity]``
    false), else pass or fail."""
    for v in verdicts:
        arms = v.arms or list(fidelity)
        bad = [(a, fidelity[a]) for a in arms
               if a in fidelity and not fidelity[a].get("ok", {}).get(v.sensitive, True)]
        if bad:
            v.status = "void"
            a, f = bad[0]
            why = "; ".join(f.get("violations", {}).get(v.sensitive, [])) or "outside bounds"
            v.reason = (f"emulation lagged ({a}): {why}; see the run log, or use --target sim "
                        f"(beside other load: P4CC_REALTIME=all, docs/fidelity.md)")
        else:
            v.status = "pass" if v.ok else "fail"
    return verdicts


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    out = {"pass": 0, "fail": 0, "void": 0}
    for v in verdicts:
        out[v.status or ("pass" if v.ok else "fail")] += 1
    return out


def fmt(x, digits: int = 3) -> str:
    """A number for a verdict's text."""
    if isinstance(x, float):
        return "n/a" if math.isnan(x) else f"{x:.{digits}g}"
    return str(x)
