"""Flow-completion-time slowdown: each flow's FCT over the FCT it would
have alone on its own path, in size bins, as the datacenter
congestion-control papers plot it (HPCC SIGCOMM 2019 Fig. 11, PowerTCP
NSDI 2022 Fig. 6).

**Ideal FCT.** A flow of S payload bytes from host a to host b crosses
the links h = 0 … H of its path (h = 0 the sender's host link, H the
receiver's), each with a line rate r_h and a one-way delay d_h, taken
from the plan's topology along the route its switches use (the first
member of an ECMP group: in leaf_spine and fat_tree every equal-cost path
has the same rates and delays). On link h a data frame carries h hop
records (each switch it crossed adds one), so a frame of payload p is
p + 98 + h·R bytes (Ethernet 14, IPv4 20, UDP 8, shim 8, transport header
48; R = 20, or 32 for an algorithm that reads INT, whose payload per
packet is 1288 instead of 1336: docs/transport.md), and the flow puts
W_h = S + n·(98 + h·R) bytes on link h (n = ⌈S / payload⌉ packets). The
last ACK is 110 + H'·R bytes (H' = H switches' records echoed, no SACK
block). Then

    base RTT  = Σ_h 2·d_h + Σ_h F_h·8/r_h + Σ_h A·8/r_h
    ideal FCT = base RTT + (W_b − F_b)·8/r_b

with F_h the first frame on link h, A the ACK, and b the link that takes
longest for the rest of the flow (the bottleneck: max (W_h − F_h)/r_h).
This is the store-and-forward FCT of the flow alone: the first frame
crosses every link, the rest follow it through the bottleneck, the ACK
comes back — the same construction as HPCC's simulator (base RTT plus the
bytes with headers at the bottleneck rate), without counting the first
frame twice. With the bottleneck last on the path (equal rates: the last
link's frames are the largest) no flow can beat it, so every slowdown is
at least 1 but for a nanosecond of rounding; it is not clamped at 1 (HPCC's
analysis clamps) and ``min_slowdown`` says how close flows came.

**Bins.** HPCC's: the flows sorted by size, cut into 20 bins of 5 % of the
flows each; a bin is named by its largest size (as HPCC's fct_analysis.py
does). And size classes: small < 100 KB (pFabric, SIGCOMM 2013: its small
flows are (0, 100 KB]), large > 1 MB (DCTCP, SIGCOMM 2010 §2: short
messages are 50 KB–1 MB, larger flows are background/update traffic),
medium in between (kB = 1000 bytes). Per bin: flows, median, p95 and p99
slowdown (linear interpolation between order statistics, stats.percentile).

Tables are written by ``write_table`` — Parquet when pyarrow is there,
compressed CSV otherwise — the one place that chooses the format.
"""
from __future__ import annotations

import csv
import gzip
import math
from dataclasses import dataclass
from pathlib import Path

from .stats import percentile

#: Ethernet 14 + IPv4 20 + UDP 8 + shim 8 + transport header 48.
DATA_OVERHEAD_BYTES = 98
#: Ethernet 14 + IPv4 20 + UDP 8 + ACK 68 (no SACK block).
ACK_BYTES = 110
#: A hop record: shim version 1, and version 2 (INT).
RECORD_BYTES = {False: 20, True: 32}
#: Payload per packet (transport::wire::max_payload_1500).
PAYLOAD_BYTES = {False: 1336, True: 1288}
#: Algorithms whose flows carry INT (cc::reads_int; `p4cc-host --list-cc`
#: marks them [reads INT]).
READS_INT = frozenset({"hpcc", "powertcp"})

#: Size classes: (name, lowest size, highest size or None), bytes, inclusive.
SMALL_MAX = 100_000 - 1
LARGE_MIN = 1_000_000 + 1
SIZE_CLASSES = (("small", 1, SMALL_MAX), ("medium", SMALL_MAX + 1, LARGE_MIN - 1),
                ("large", LARGE_MIN, None))
#: HPCC's bins: 5 % of the flows each.
HPCC_STEP_PERCENT = 5
PERCENTILES = (50, 95, 99)


@dataclass(frozen=True)
class Hop:
    rate_bps: float | None   #: None: unshaped (no serialization)
    delay_s: float


def path_hops(topo, src: str, dst: str) -> list[Hop]:
    """The links from host ``src`` to host ``dst`` along the plan's routes
    (``Topology.next_hops``: an ECMP group's first member)."""
    if src == dst:
        raise ValueError(f"no path from {src} to itself")
    att = topo.attachment(src)
    first = next(l for p, l in topo.switch_links(att.node) if p == att.port)
    hops = [Hop(first.rate_bps, first.delay_us / 1e6)]
    node, seen = att.node, set()
    while True:
        if node in seen:
            raise ValueError(f"routing loop from {src} to {dst} at {node}")
        seen.add(node)
        port, _ = topo.next_hops(node)[dst]
        link = next(l for p, l in topo.switch_links(node) if p == port)
        hops.append(Hop(link.rate_bps, link.delay_us / 1e6))
        node = link.other(node).node
        if node == dst:
            return hops
        if node in topo.hosts:
            raise ValueError(f"the route from {src} to {dst} ends at host {node}")


def _ser(nbytes: float, rate) -> float:
    return nbytes * 8 / rate if rate else 0.0


def wire(cc: str) -> tuple[int, int]:
    """(payload per packet, hop record bytes) of an algorithm's flows."""
    i = cc in READS_INT
    return PAYLOAD_BYTES[i], RECORD_BYTES[i]


def base_rtt_s(hops: list[Hop], cc: str = "dctcp", first_payload: int | None = None) -> float:
    """The path's round trip for one data frame (a full one unless
    ``first_payload``) and its ACK, queues empty."""
    payload, rec = wire(cc)
    p = payload if first_payload is None else first_payload
    switches = len(hops) - 1
    ack = ACK_BYTES + switches * rec
    return sum(2 * h.delay_s + _ser(p + DATA_OVERHEAD_BYTES + i * rec, h.rate_bps)
               + _ser(ack, h.rate_bps) for i, h in enumerate(hops))


def ideal_fct_s(size: int, hops: list[Hop], cc: str) -> float:
    """The flow's FCT alone on its path (module docstring)."""
    payload, rec = wire(cc)
    n = max(1, math.ceil(size / payload))
    first = min(size, payload)
    rest = 0.0
    for i, h in enumerate(hops):
        w = size + n * (DATA_OVERHEAD_BYTES + i * rec)
        f = first + DATA_OVERHEAD_BYTES + i * rec
        rest = max(rest, _ser(w - f, h.rate_bps))
    return base_rtt_s(hops, cc, first) + rest


class PathCache:
    """ideal FCTs of one arm: paths by (src, dst) host, computed once."""

    def __init__(self, topo, cc: str):
        self.topo, self.cc = topo, cc
        self.by_ip = {h.ip.split("/")[0]: n for n, h in topo.hosts.items()}
        self._paths: dict[tuple[str, str], list[Hop]] = {}

    def host(self, addr: str) -> str:
        return self.by_ip[addr.rsplit(":", 1)[0]]

    def hops(self, src: str, dst: str) -> list[Hop]:
        key = (src, dst)
        if key not in self._paths:
            self._paths[key] = path_hops(self.topo, src, dst)
        return self._paths[key]

    def ideal(self, src: str, dst: str, size: int) -> float:
        return ideal_fct_s(size, self.hops(src, dst), self.cc)


def flow_rows(flows: list[dict], topo, cc: str, workloads=("poisson",)) -> list[dict]:
    """One row per flow of ``flows`` (flows.csv rows) whose workload is in
    ``workloads`` (None: all): src, dst (hosts), size, start, status, fct_s
    (None unless complete), ideal_s, slowdown (None unless complete),
    workload, round."""
    paths = PathCache(topo, cc)
    out = []
    for f in flows:
        if workloads is not None and f.get("workload") not in workloads:
            continue
        try:
            size = int(f["size_bytes"])
        except (KeyError, ValueError):
            continue  # a long flow has no size
        src, dst = paths.host(f["src"]), paths.host(f["dst"])
        ideal = paths.ideal(src, dst, size)
        done = f.get("status") == "complete" and f.get("fct_ns")
        fct = int(f["fct_ns"]) / 1e9 if done else None
        out.append({"src": src, "dst": dst, "size_bytes": size,
                    "start_unix_ns": int(f["start_unix_ns"]), "status": f.get("status", ""),
                    "workload": f.get("workload", ""), "round": f.get("round") or None,
                    "fct_s": fct, "ideal_s": ideal,
                    "slowdown": fct / ideal if fct is not None else None})
    return out


def _stats(xs: list[float]) -> dict:
    d = {"flows": len(xs)}
    for q in PERCENTILES:
        d[f"p{q}"] = percentile(xs, q)
    return d


def hpcc_bins(rows: list[dict], step: int = HPCC_STEP_PERCENT) -> list[dict]:
    """Completed flows sorted by size, cut into bins of ``step`` % of them
    (bin i: sorted flows [i·step·n/100, (i+1)·step·n/100)), each with its
    smallest and largest size and the slowdown's percentiles."""
    done = sorted((r for r in rows if r["slowdown"] is not None), key=lambda r: r["size_bytes"])
    n = len(done)
    out = []
    for i in range(0, 100, step):
        part = done[i * n // 100:(i + step) * n // 100]
        if not part:
            continue
        out.append({"bin": f"{i}-{i + step}%", "size_min": part[0]["size_bytes"],
                    "size_max": part[-1]["size_bytes"],
                    **_stats([r["slowdown"] for r in part])})
    return out


def size_classes(rows: list[dict]) -> list[dict]:
    """small / medium / large (SIZE_CLASSES): completed flows' slowdown
    percentiles, and how many flows of the class did not complete."""
    out = []
    for name, lo, hi in SIZE_CLASSES:
        cls = [r for r in rows if lo <= r["size_bytes"] and (hi is None or r["size_bytes"] <= hi)]
        xs = [r["slowdown"] for r in cls if r["slowdown"] is not None]
        out.append({"class": name, "size_min": lo, "size_max": hi,
                    "incomplete": len(cls) - len(xs), **_stats(xs)})
    return out


def summarise(rows: list[dict]) -> dict:
    """Bins, classes and counts of one arm's flows (flow_rows)."""
    done = [r for r in rows if r["slowdown"] is not None]
    return {"flows": len(rows), "completed": len(done),
            "min_slowdown": min((r["slowdown"] for r in done), default=math.nan),
            "hpcc_bins": hpcc_bins(rows), "classes": size_classes(rows)}


# ------------------------------------------------------------------ tables

def table_format() -> str:
    """"parquet" when pyarrow can be imported, else "csv.gz"."""
    try:
        import pyarrow  # noqa: F401
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return "csv.gz"
    return "parquet"


def write_table(stem: Path, rows: list[dict], fmt: str | None = None) -> Path:
    """Writes ``rows`` (dicts with the same keys) as ``stem``.parquet
    (pyarrow, zstd) or ``stem``.csv.gz; returns the path. The one place
    the analysis picks a table format."""
    fmt = fmt or table_format()
    stem = Path(stem)
    cols = list(rows[0]) if rows else []
    if fmt == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq
        path = stem.with_name(stem.name + ".parquet")
        table = pa.table({c: [r.get(c) for r in rows] for c in cols})
        pq.write_table(table, path, compression="zstd")
        return path
    if fmt != "csv.gz":
        raise ValueError(f"unknown table format {fmt!r}")
    path = stem.with_name(stem.name + ".csv.gz")
    with gzip.open(path, "wt", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in r.items()})
    return path


def read_table(path: Path) -> list[dict]:
    """A table write_table wrote (CSV values come back as strings)."""
    path = Path(path)
    if path.name.endswith(".parquet"):
        import pyarrow.parquet as pq
        return pq.read_table(path).to_pylist()
    with gzip.open(path, "rt", newline="") as f:
        return list(csv.DictReader(f))


__all__ = ["Hop", "path_hops", "base_rtt_s", "ideal_fct_s", "flow_rows", "hpcc_bins",
           "size_classes", "summarise", "write_table", "read_table", "table_format",
           "SIZE_CLASSES", "READS_INT"]
