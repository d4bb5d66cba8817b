"""Datacenter workloads as plans describe them: the flow-size tables
p4cc-host and the simulator have built in (hosts/traffic/cdf/, read here
for their means and shares), and how destinations are chosen.

The generator itself is hosts/traffic (Rust), the one both the namespace
lab's p4cc-host and the simulator run: Poisson arrivals at a load, sizes by
inverse transform with linear interpolation between a table's points
(traffic::cdf), the incast mix (traffic::workload::IncastMix).
"""
from __future__ import annotations

import random
import re
from pathlib import Path

from p4cc_topo.plan import CDF_DIR


def cdf_path(name: str) -> Path:
    """A table's file: a built-in name, or a path."""
    return Path(name) if ("/" in name or name.endswith(".txt")) else CDF_DIR / f"{name}.txt"


def builtin_cdfs() -> list[str]:
    return sorted(p.stem for p in CDF_DIR.glob("*.txt"))


def read_cdf(name: str) -> list[tuple[float, float]]:
    """A table's (size in bytes, cumulative share in percent) points."""
    pts = []
    for line in cdf_path(name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            x, y = line.split()
            pts.append((float(x), float(y)))
    return pts


def cdf_mean(name: str) -> float:
    """The mean of the linearly interpolated distribution (the first
    point's share at its size, each segment's at its midpoint)."""
    pts = read_cdf(name)
    return (pts[0][0] * pts[0][1]
            + sum((x0 + x1) / 2 * (y1 - y0) for (x0, y0), (x1, y1) in zip(pts, pts[1:]))) / 100


def cdf_share_below(name: str, size: float) -> float:
    """The share (0..1) of flows of at most ``size`` bytes."""
    pts = read_cdf(name)
    if size < pts[0][0]:
        return 0.0
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if size <= x1:
            return (y0 + (y1 - y0) * (size - x0) / (x1 - x0)) / 100
    return 1.0


def stated_mean(name: str) -> float | None:
    """The mean a table's header states ("Mean ...: 1 711 250 bytes")."""
    for line in cdf_path(name).read_text().splitlines():
        m = re.match(r"#.*Mean.*:\s*([0-9][0-9 .]*)\s*bytes", line)
        if m:
            return float(m.group(1).replace(" ", ""))
    return None


def flows_per_s(n_hosts: int, load: float, link_bps: float, mean_bytes: float) -> float:
    """Arrivals of the whole group when each of ``n_hosts`` opens flows at
    ``load`` of its link: n × load × rate / (8 × mean size)."""
    return n_hosts * load * link_bps / (8 * mean_bytes)


def derangement(hosts: list[str], seed: int) -> dict[str, str]:
    """Random pairs: each host's one partner, a random permutation without
    a fixed point (drawn again until it has none), from ``seed``."""
    if len(hosts) < 2:
        raise ValueError("pairs need at least two hosts")
    rng = random.Random(seed)
    while True:
        perm = hosts[:]
        rng.shuffle(perm)
        if all(a != b for a, b in zip(hosts, perm)):
            return dict(zip(hosts, perm))
