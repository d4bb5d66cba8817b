"""Readers for the files host agents and the collector write
(docs/hosts.md): each returns plain lists/dicts, no pandas needed."""
from __future__ import annotations

import csv
from pathlib import Path


def rows(path: Path) -> list[dict]:
    """A CSV file's rows as dicts (none if it does not exist)."""
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


_rows = rows


def postcards(path: Path, egress_port: int | None = None,
              switch_id: int | None = None) -> list[dict]:
    """Collector rows (queue reports), optionally of one egress port (of
    one switch, with several reporting), as numbers: t (unix s), depth,
    deq_depth, qdelay_us, ecn, len."""
    out = []
    for r in _rows(path):
        try:
            port = int(r["egress_port"])
            if egress_port is not None and port != egress_port:
                continue
            if switch_id is not None and int(r["switch_id"]) != switch_id:
                continue
            out.append({"t": int(r["recv_unix_ns"]) / 1e9, "port": port,
                        "depth": int(r["enq_qdepth"]), "deq_depth": int(r["deq_qdepth"]),
                        "qdelay_us": int(r["qdelay_us"]), "ecn": int(r["ecn"]),
                        "len": int(r["len"]), "src": r["src"], "dst": r["dst"]})
        except (KeyError, ValueError):
            continue  # a torn last line of a killed collector
    out.sort(key=lambda x: x["t"])
    return out


def flows(dirs: list[Path]) -> list[dict]:
    out = []
    for d in dirs:
        out += _rows(Path(d) / "flows.csv")
    return out


def throughput(dirs: list[Path]) -> dict[str, list[tuple[float, float]]]:
    """flow_id -> [(bin start unix s, Mbps)] from every agent's tput.csv."""
    series: dict[str, list[tuple[float, float]]] = {}
    for d in dirs:
        for r in _rows(Path(d) / "tput.csv"):
            try:
                series.setdefault(r["flow_id"], []).append(
                    (int(r["bin_start_unix_ns"]) / 1e9, float(r["mbps"])))
            except (KeyError, ValueError):
                continue
    for s in series.values():
        s.sort()
    return series


def rtts(dirs: list[Path]) -> dict[str, list[tuple[float, float, float | None]]]:
    """flow_id -> [(t unix s, rtt µs, echoed queue depth or None)]."""
    series: dict[str, list] = {}
    for d in dirs:
        for r in _rows(Path(d) / "rtt.csv"):
            try:
                q = r.get("qdepth_pkts") or ""
                series.setdefault(r["flow_id"], []).append(
                    (int(r["t_unix_ns"]) / 1e9, int(r["rtt_ns"]) / 1e3, float(q) if q else None))
            except (KeyError, ValueError):
                continue
    return series
