"""Readers for the files host agents and the collector write
(docs/hosts.md): each returns plain lists/dicts, no pandas needed."""
from __future__ import annotations

import csv
from pathlib import Path


def _rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def postcards(path: Path, egress_port: int | None = None,
              switch_id: int | None = None) -> list[dict]:
    """Collector rows (queue reports), optionally of one egress port (of
    one switch, with several reporting), as numbers: t (unix s), port,
    depth, deq_depth, qdelay_us. Read row by row: paper-scale runs write
    millions."""
    out = []
    if not path.exists():
        return out
    with open(path, newline="") as f:
        rows = csv.reader(f)
        head = next(rows, None)
        if not head:
            return out
        col = {k: i for i, k in enumerate(head)}
        i_t, i_port, i_sw = col["recv_unix_ns"], col["egress_port"], col["switch_id"]
        i_d, i_dd, i_q = col["enq_qdepth"], col["deq_qdepth"], col["qdelay_us"]
        for r in rows:
            try:
                port = int(r[i_port])
                if egress_port is not None and port != egress_port:
                    continue
                if switch_id is not None and int(r[i_sw]) != switch_id:
                    continue
                out.append({"t": int(r[i_t]) / 1e9, "port": port, "depth": int(r[i_d]),
                            "deq_depth": int(r[i_dd]), "qdelay_us": int(r[i_q])})
            except (IndexError, ValueError):
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
