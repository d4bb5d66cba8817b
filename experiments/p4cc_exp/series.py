"""Readers for the files host agents and the collector write
(docs/hosts.md): each returns plain lists/dicts, no pandas needed.

Each is asked for ``X.csv`` and reads X.csv or, once the run converted it,
X.parquet (columnar.py), with the same result: rows() gives the CSV's text
either way, the typed readers the same numbers."""
from __future__ import annotations

from pathlib import Path

from .columnar import SUFFIX, records, source, text


def rows(path: Path) -> list[dict]:
    """A series file's rows as dicts of the CSV's text (none if there is
    no such file)."""
    head, body = records(Path(path))
    n = len(head)
    # csv.DictReader's rules: a short row's missing fields are None
    return [{k: (text(v) if i < len(r) else None) for i, (k, v) in
             enumerate(zip(head, list(r) + [None] * (n - len(r))))} for r in body if r]


#: Bytes of a Tofino queue cell (constants.p4 DEPTH_UNIT_CELLS80).
CELL_BYTES = 80


def depth_in_packets(depth: int, unit: str, mtu: int = 1500) -> float:
    """A queue depth the collector wrote in `unit` (its depth_unit column:
    packets, or cells80 from a Tofino), in MTU-sized packets: a 1500-byte
    packet takes ceil(1500 / 80) = 19 cells (the controller converts K the
    same way, so depths and K compare)."""
    if unit in ("", "packets"):
        return depth
    if unit == "cells80":
        return depth / -(-mtu // CELL_BYTES)
    raise ValueError(f"unknown depth unit {unit!r}")



def postcards(path: Path, egress_port: int | None = None,
              switch_id: int | None = None, mtu: int = 1500) -> list[dict]:
    """Collector rows (queue reports), optionally of one egress port (of
    one switch, with several reporting), as numbers: t (unix s), port,
    depth and deq_depth (packets: Tofino's cells converted at `mtu`),
    depth_raw and depth_unit (as the switch reported), qdelay_us. Read row
    by row: paper-scale runs write millions."""
    src = source(Path(path))
    if src is not None and src.suffix == SUFFIX:
        fast = _postcards_parquet(src, egress_port, switch_id, mtu)
        if fast is not None:
            return fast
    out = []
    head, body = records(Path(path))
    if not head:
        return out
    col = {k: i for i, k in enumerate(head)}
    i_t, i_port, i_sw = col["recv_unix_ns"], col["egress_port"], col["switch_id"]
    i_d, i_dd, i_q = col["enq_qdepth"], col["deq_qdepth"], col["qdelay_us"]
    # Files written before the collector named the unit are packets.
    i_u = col.get("depth_unit")
    for r in body:
        try:
            port = int(r[i_port])
            if egress_port is not None and port != egress_port:
                continue
            if switch_id is not None and int(r[i_sw]) != switch_id:
                continue
            unit = (r[i_u] if i_u is not None else "") or "packets"
            raw, deq = int(r[i_d]), int(r[i_dd])
            out.append({"t": int(r[i_t]) / 1e9, "port": port,
                        "depth": depth_in_packets(raw, unit, mtu),
                        "deq_depth": depth_in_packets(deq, unit, mtu),
                        "depth_raw": raw, "depth_unit": unit, "qdelay_us": int(r[i_q])})
        except (IndexError, ValueError, TypeError):
            continue  # a torn last line of a killed collector (None: an empty cell)
    out.sort(key=lambda x: x["t"])
    return out


def _postcards_parquet(src: Path, egress_port, switch_id, mtu) -> list[dict]:
    """postcards() of a Parquet file: the port and switch picked by Arrow,
    the same rows as from the CSV (a row missing a number is left out)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    names = ["recv_unix_ns", "egress_port", "switch_id", "enq_qdepth", "deq_qdepth", "qdelay_us"]
    have = pq.read_schema(src).names
    t = pq.read_table(src, columns=names + (["depth_unit"] if "depth_unit" in have else []))
    if any(str(t.schema.field(n).type) != "int64" for n in names):
        return None  # text where numbers belong: the row-by-row reader decides
    t = t.filter(_valid(t, names))
    if egress_port is not None:
        t = t.filter(pc.equal(t.column("egress_port"), egress_port))
    if switch_id is not None:
        t = t.filter(pc.equal(t.column("switch_id"), switch_id))
    cols = {n: t.column(n).to_pylist() for n in t.column_names}
    units = cols.get("depth_unit") or [None] * t.num_rows
    out = []
    for ts, port, raw, deq, q, unit in zip(cols["recv_unix_ns"], cols["egress_port"],
                                           cols["enq_qdepth"], cols["deq_qdepth"],
                                           cols["qdelay_us"], units):
        unit = unit or "packets"
        try:
            out.append({"t": int(ts) / 1e9, "port": int(port),
                        "depth": depth_in_packets(int(raw), unit, mtu),
                        "deq_depth": depth_in_packets(int(deq), unit, mtu),
                        "depth_raw": int(raw), "depth_unit": unit, "qdelay_us": int(q)})
        except (ValueError, TypeError):
            continue  # as the CSV reader: a value that is not a number
    out.sort(key=lambda x: x["t"])
    return out


def _valid(t, names):
    """Rows where every one of ``names`` has a value."""
    import pyarrow.compute as pc
    mask = pc.is_valid(t.column(names[0]))
    for n in names[1:]:
        mask = pc.and_(mask, pc.is_valid(t.column(n)))
    return mask


#: Ethernet header bytes a postcard's IPv4 length leaves out.
ETH_HEADER = 14


def postcard_bytes(path: Path, egress_port: int, switch_id: int | None,
                   srcs: set[str]) -> list[tuple[int, str, int]]:
    """(unix ns, source address, frame bytes) of the postcards of packets
    from ``srcs`` that left ``egress_port``: what each sender put through
    the port, as the switch saw it (for senders that log nothing p4cc
    reads). Row by row, torn lines skipped, in time order."""
    out = []
    head, body = records(Path(path))
    if not head:
        return out
    col = {k: i for i, k in enumerate(head)}
    i_t, i_port, i_sw = col["recv_unix_ns"], col["egress_port"], col["switch_id"]
    i_src, i_len = col["src"], col["len"]
    for r in body:
        try:
            if int(r[i_port]) != egress_port or text(r[i_src]) not in srcs:
                continue
            if switch_id is not None and int(r[i_sw]) != switch_id:
                continue
            out.append((int(r[i_t]), text(r[i_src]), int(r[i_len]) + ETH_HEADER))
        except (IndexError, ValueError, TypeError):
            continue
    out.sort()
    return out


def flows(dirs: list[Path]) -> list[dict]:
    out = []
    for d in dirs:
        out += rows(Path(d) / "flows.csv")
    return out


def throughput(dirs: list[Path]) -> dict[str, list[tuple[float, float]]]:
    """flow_id -> [(bin start unix s, Mbps)] from every agent's tput.csv."""
    series: dict[str, list[tuple[float, float]]] = {}
    for d in dirs:
        for r in rows(Path(d) / "tput.csv"):
            try:
                series.setdefault(r["flow_id"], []).append(
                    (int(r["bin_start_unix_ns"]) / 1e9, float(r["mbps"])))
            except (KeyError, ValueError):
                continue
    for s in series.values():
        s.sort()
    return series


def tput_bins(d: Path) -> dict[str, list[tuple[int, int, int]]]:
    """flow_id -> [(bin start unix ns, bin length ns, bytes acked)] from one
    agent's tput.csv, in file order."""
    bins: dict[str, list[tuple[int, int, int]]] = {}
    for r in rows(Path(d) / "tput.csv"):
        try:
            bins.setdefault(r["flow_id"], []).append(
                (int(r["bin_start_unix_ns"]), int(r["bin_ns"]), int(r["bytes"])))
        except (KeyError, ValueError):
            continue
    return bins


def delay_targets(dirs: list[Path]) -> list[tuple[float, float, float]]:
    """[(t unix s, RTT µs, the algorithm's delay target µs)] for every
    logged RTT sample that carries a target (Swift's), all flows, in file
    order."""
    out = []
    for d in dirs:
        for r in rows(Path(d) / "rtt.csv"):
            try:
                if r.get("target_delay_ns"):
                    out.append((int(r["t_unix_ns"]) / 1e9, int(r["rtt_ns"]) / 1e3,
                                int(r["target_delay_ns"]) / 1e3))
            except (KeyError, ValueError):
                continue
    return out


def rtts(dirs: list[Path]) -> dict[str, list[tuple[float, float, float | None]]]:
    """flow_id -> [(t unix s, rtt µs, echoed queue depth or None)]."""
    series: dict[str, list] = {}
    for d in dirs:
        for r in rows(Path(d) / "rtt.csv"):
            try:
                q = r.get("qdepth_pkts") or ""
                series.setdefault(r["flow_id"], []).append(
                    (int(r["t_unix_ns"]) / 1e9, int(r["rtt_ns"]) / 1e3, float(q) if q else None))
            except (KeyError, ValueError):
                continue
    return series


def monitor_intervals(dirs: list[Path]) -> dict[str, list[tuple[float, float, float]]]:
    """flow_id -> [(t unix s, MI rate Mbit/s, rate chosen after it Mbit/s)]
    from PCC senders' mi.csv, in the order they were scored."""
    series: dict[str, list] = {}
    for d in dirs:
        for r in rows(Path(d) / "mi.csv"):
            try:
                series.setdefault(r["flow_id"], []).append(
                    (int(r["t_unix_ns"]) / 1e9, float(r["rate_bps"]) / 1e6,
                     float(r["next_rate_bps"]) / 1e6))
            except (KeyError, TypeError, ValueError):
                continue
    return series
