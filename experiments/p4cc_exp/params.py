"""Experiment parameters: typed, with units, overridable by `--set k=v`."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

_RATE = {"bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9,
         "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
_TIME = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


class ParamError(ValueError):
    pass


def _split(text: str) -> tuple[float, str]:
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?\d+)?)\s*([a-zA-Z%µ]*)\s*", str(text))
    if not m:
        raise ParamError(f"'{text}' is not a number with an optional unit")
    return float(m.group(1)), m.group(2).lower().replace("µ", "u")


def rate_bps(text) -> int:
    """'100Mbps', '1gbit', '5e7' -> bits/s."""
    if isinstance(text, (int, float)):
        return int(text)
    v, unit = _split(text)
    if unit not in _RATE and unit != "":
        raise ParamError(f"'{text}': unknown rate unit '{unit}' (use bps, Mbps, Gbps)")
    return int(v * _RATE.get(unit, 1))


def seconds(text) -> float:
    """'500us', '10ms', '2' (seconds) -> seconds."""
    if isinstance(text, (int, float)):
        return float(text)
    v, unit = _split(text)
    if unit not in _TIME and unit != "":
        raise ParamError(f"'{text}': unknown time unit '{unit}' (use us, ms, s)")
    return v * _TIME.get(unit, 1.0)


def fraction(text) -> float:
    """'2%' or '0.02' -> 0.02."""
    if isinstance(text, (int, float)):
        return float(text)
    v, unit = _split(text)
    if unit == "%":
        v /= 100
    elif unit:
        raise ParamError(f"'{text}': a fraction is '0.02' or '2%'")
    if not 0 <= v <= 1:
        raise ParamError(f"'{text}': a fraction must be within 0..1")
    return v


def str_list(text) -> list[str]:
    if isinstance(text, (list, tuple)):
        return [str(x) for x in text]
    return [s.strip() for s in str(text).split(",") if s.strip()]


@dataclass(frozen=True)
class Param:
    name: str
    default: Any
    help: str
    parse: Callable[[Any], Any] = str
    lo: float | None = None
    hi: float | None = None

    def value(self, raw: Any) -> Any:
        try:
            v = self.parse(raw)
        except (ValueError, TypeError) as e:
            raise ParamError(f"{self.name}: {e}") from None
        if self.lo is not None and v < self.lo or self.hi is not None and v > self.hi:
            raise ParamError(f"{self.name}={raw}: must be within {self.lo}..{self.hi}")
        return v


def resolve(params: list[Param], overrides: list[str]) -> dict[str, Any]:
    """Defaults overridden by 'name=value' strings; unknown names fail."""
    known = {p.name: p for p in params}
    out = {p.name: p.value(p.default) for p in params}
    for item in overrides:
        if "=" not in item:
            raise ParamError(f"--set {item!r}: expected name=value")
        name, raw = item.split("=", 1)
        name = name.strip().replace("-", "_")
        if name not in known:
            raise ParamError(f"unknown parameter '{name}' (known: {', '.join(sorted(known))})")
        out[name] = known[name].value(raw.strip())
    return out
