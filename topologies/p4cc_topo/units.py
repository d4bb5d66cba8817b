"""Units of link properties: rates, delays, loss probabilities, packet counts.

Every property has one canonical unit inside p4cc (the one its key is named
after) and accepts either a bare number in that unit or a string with a unit:

=============  ==========  =====================================================
key            canonical   accepted strings
=============  ==========  =====================================================
``rate_bps``   bits/s      ``"100Mbps"``, ``"1Gbps"``, ``"1.5 Gbps"``, ``"64kbps"``
``delay_us``   µs          ``"500us"``, ``"10ms"``, ``"1s"``, ``"250µs"``
``loss``       fraction    ``"2%"``, ``"0.5%"``, ``0.02``
``*_pkts``     packets     ``120``, ``"120"``, ``"120pkts"``
=============  ==========  =====================================================

Rates are decimal (1 Mbps = 10**6 bit/s), as on the wire. Units are
case-sensitive where the case carries meaning: ``Mbps`` is megabits and
``MBps`` (megabytes) is refused rather than guessed; tc's ``mbit`` spelling is
refused with a suggestion, so a rate always reads the same way in p4cc.
"""

from __future__ import annotations

import math
import re

__all__ = [
    "UnitError",
    "parse_rate",
    "parse_delay",
    "parse_loss",
    "parse_pkts",
    "format_rate",
    "format_delay",
    "format_loss",
]


class UnitError(ValueError):
    """A value that does not parse in its property's unit."""


_NUM = r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUM_RE = re.compile(r"^\s*(" + _NUM + r")\s*([A-Za-zµ%/]*)\s*$")

_RATE_UNITS = {
    "bps": 1,
    "kbps": 10**3,
    "Kbps": 10**3,
    "Mbps": 10**6,
    "Gbps": 10**9,
    "Tbps": 10**12,
}
_DELAY_UNITS = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "ms": 1e3, "s": 1e6}


def _split(value: str, what: str) -> tuple[float, str]:
    m = _NUM_RE.match(value)
    if not m:
        raise UnitError(f"{what} {value!r} is not a number with a unit")
    return float(m.group(1)), m.group(3)


def _check_number(x, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise UnitError(f"{what} {x!r} must be a number or a string with a unit")
    if not math.isfinite(x):
        raise UnitError(f"{what} {x!r} is not finite")
    return float(x)


def parse_rate(value) -> int:
    """A rate in bits/s. ``100Mbps`` → 100_000_000; a bare number is bits/s."""
    what = "rate"
    if isinstance(value, str):
        num, unit = _split(value, what)
        if unit == "":
            bps = num
        elif unit in _RATE_UNITS:
            bps = num * _RATE_UNITS[unit]
        else:
            low = unit.lower()
            hint = ""
            if unit.endswith("Bps") or unit.endswith("B/s"):
                hint = " (bytes per second are not accepted: rates are in bits, e.g. \"100Mbps\")"
            for prefix, name in (("", "bps"), ("k", "kbps"), ("m", "Mbps"),
                                 ("g", "Gbps"), ("t", "Tbps")):
                if not hint and low in (prefix + "bit", prefix + "bits", prefix + "bit/s",
                           prefix + "b/s", prefix + "bps"):
                    numtxt = value.strip()[: len(value.strip()) - len(unit)].strip()
                    hint = f"; did you mean \"{numtxt}{name}\"?"
                    break
            raise UnitError(
                f"rate {value!r}: unknown unit {unit!r}{hint} "
                "(accepted: bps, kbps, Mbps, Gbps, Tbps; decimal, bits per second)")
    else:
        bps = _check_number(value, what)
    if bps <= 0:
        raise UnitError(f"rate {value!r} must be positive")
    if abs(bps - round(bps)) > 1e-6 * max(1.0, bps):
        raise UnitError(f"rate {value!r} is not a whole number of bits/s")
    return int(round(bps))


def parse_delay(value) -> int:
    """A delay in whole microseconds. ``10ms`` → 10000; a bare number is µs."""
    what = "delay"
    if isinstance(value, str):
        num, unit = _split(value, what)
        if unit == "":
            us = num
        elif unit in _DELAY_UNITS:
            us = num * _DELAY_UNITS[unit]
        else:
            raise UnitError(f"delay {value!r}: unknown unit {unit!r} (accepted: ns, us, µs, ms, s)")
    else:
        us = _check_number(value, what)
    if us < 0:
        raise UnitError(f"delay {value!r} must not be negative")
    if abs(us - round(us)) > 1e-6:
        raise UnitError(f"delay {value!r} is not a whole number of microseconds")
    return int(round(us))


def parse_loss(value) -> float:
    """A loss probability in [0, 1]. ``"2%"`` → 0.02; a bare number is a fraction."""
    what = "loss"
    if isinstance(value, str):
        num, unit = _split(value, what)
        if unit == "%":
            p = num / 100.0
        elif unit == "":
            p = num
        else:
            raise UnitError(f"loss {value!r}: unknown unit {unit!r} (write a fraction like 0.02 or a percentage like \"2%\")")
    else:
        p = _check_number(value, what)
    if not 0.0 <= p <= 1.0:
        raise UnitError(f"loss {value!r} is outside [0, 1] (0%..100%)")
    return p


def parse_pkts(value, what: str = "packet count", minimum: int = 0) -> int:
    """A whole number of packets; ``"120pkts"`` and ``120`` both give 120."""
    if isinstance(value, str):
        num, unit = _split(value, what)
        if unit not in ("", "p", "pkt", "pkts", "packets"):
            raise UnitError(f"{what} {value!r}: unknown unit {unit!r} (packets: 120 or \"120pkts\")")
        n = num
    else:
        n = _check_number(value, what)
    if n != int(n):
        raise UnitError(f"{what} {value!r} is not a whole number of packets")
    if n < minimum:
        raise UnitError(f"{what} {value!r} must be at least {minimum}")
    return int(n)


def parse_red(value) -> tuple[int, int, float]:
    """A RED marking profile ``"KMIN-KMAX/PMAX"`` (depths in packets, Pmax
    a fraction or a percentage): ``"5-200/1%"`` → (5, 200, 0.01)."""
    what = "ECN RED profile"
    if not isinstance(value, str) or "/" not in value or "-" not in value.split("/")[0]:
        raise UnitError(f"{what} {value!r}: write KMIN-KMAX/PMAX, depths in packets, "
                        "e.g. \"5-200/1%\"")
    ks, p = value.split("/", 1)
    lo, hi = ks.split("-", 1)
    kmin, kmax = parse_pkts(lo.strip(), "RED Kmin"), parse_pkts(hi.strip(), "RED Kmax")
    if kmax < kmin:
        raise UnitError(f"{what} {value!r}: Kmax {kmax} is below Kmin {kmin}")
    pmax = parse_loss(p.strip())
    if pmax <= 0:
        raise UnitError(f"{what} {value!r}: Pmax must be above 0")
    return kmin, kmax, pmax


def format_red(red: tuple[int, int, float]) -> str:
    kmin, kmax, pmax = red
    return f"{kmin}-{kmax}/{format_loss(pmax)}"


def format_rate(bps: int) -> str:
    for unit, mult in (("Tbps", 10**12), ("Gbps", 10**9), ("Mbps", 10**6), ("kbps", 10**3)):
        if bps >= mult and bps % mult == 0:
            return f"{bps // mult}{unit}"
    for unit, mult in (("Gbps", 10**9), ("Mbps", 10**6), ("kbps", 10**3)):
        if bps >= mult:
            return f"{bps / mult:g}{unit}"
    return f"{bps}bps"


def format_delay(us: int) -> str:
    if us >= 1000 and us % 1000 == 0:
        return f"{us // 1000}ms"
    return f"{us}us"


def format_loss(p: float) -> str:
    return f"{p * 100:g}%"
