"""The Poisson flow arrivals ``p4cc-host gen poisson`` draws, drawn again
here so that an external program's flows start when p4cc's would: the
same seed, load and sizes give the same start times (to the float
rounding of a nanosecond). It follows hosts/traffic's ``Rng``
(xoshiro256** seeded through splitmix64) and ``Poisson`` draw for draw:
the first gap, then per flow a destination, a size, the next gap."""
from __future__ import annotations

import math

_MASK = (1 << 64) - 1


def _rotl(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & _MASK


class Rng:
    """hosts/traffic/src/rng.rs's ``Rng``."""

    def __init__(self, seed: int):
        x, self.s = seed & _MASK, []
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & _MASK
            z = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
            self.s.append(z ^ (z >> 31))

    def next_u64(self) -> int:
        s = self.s
        result = (_rotl((s[1] * 5) & _MASK, 7) * 9) & _MASK
        t = (s[1] << 17) & _MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return result

    def unit_open0(self) -> float:
        return ((self.next_u64() >> 11) + 1) / (1 << 53)

    def below(self, n: int) -> int:
        return (self.next_u64() * n) >> 64 if n else 0

    def exp(self, mean: float) -> float:
        return -mean * math.log(self.unit_open0())


def poisson_starts(seed: int, load: float, link_bps: float, size_bytes: int,
                   max_flows: int, end_s: float, n_dsts: int = 1) -> list[float]:
    """Start times (s from the traffic start) of the fixed-size flows of
    one ``p4cc-host gen poisson`` sender: ``--seed seed --load load
    --link-mbps link_bps/1e6 --fixed-bytes size_bytes --flows max_flows
    --duration-s end_s`` with ``n_dsts`` destinations."""
    gap_ns = 1e9 / (load * link_bps / (8.0 * size_bytes))
    rng = Rng(seed)
    t, out = rng.exp(gap_ns), []
    while len(out) < max_flows and t <= end_s * 1e9:
        out.append(t / 1e9)
        rng.below(n_dsts)  # the destination; a fixed size draws nothing
        t += rng.exp(gap_ns)
    return out
