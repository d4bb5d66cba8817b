"""Series files in Parquet: the CSVs host agents and the collector write
(queue.csv, flows.csv, tput.csv, rtt.csv, hops.csv, recv_flows.csv, any
other ``*.csv`` of an arm) become ``<name>.parquet`` with zstd after each
arm, and the CSV goes; the readers of series.py read either form.

The Parquet file has the CSV's columns in the CSV's order. A column is
int64 when every value is an integer that fits, float64 when every value
is a number (the agents write shortest round-trip decimals, so nothing is
lost), and text otherwise — an integer too large for int64 (a u64 seed)
stays text rather than become an inexact float. An empty numeric cell is
null. ``records`` hands back the typed values; ``text`` renders one back
exactly as the CSV had it (an int as its digits, a float as its shortest
round-trip decimal, a null as ""), so an analysis that parses either form
gets the same numbers.

``P4CC_SERIES=csv`` keeps the CSVs (for tools that want text).
"""
from __future__ import annotations

import csv
import os
import re
from pathlib import Path
from typing import Iterator

SUFFIX = ".parquet"
_INT = re.compile(r"-?\d+")


def keep_csv() -> bool:
    return os.environ.get("P4CC_SERIES", "parquet").lower() == "csv"


def source(path: Path) -> Path | None:
    """The file a reader asked for as ``X.csv``: X.csv if it is there, else
    X.parquet, else None."""
    path = Path(path)
    if path.exists():
        return path
    alt = path.with_suffix(SUFFIX)
    return alt if alt.exists() else None


def _typed_column(col):
    """A column of CSV text as int64, float64 or text (the module's rules),
    with empty cells null in the numeric ones."""
    import pyarrow as pa
    import pyarrow.compute as pc
    empty = pc.equal(col, "")
    if pc.all(empty).as_py() is not False:
        return col  # nothing but empty cells (or no rows): text
    nulled = pc.if_else(empty, pa.scalar(None, pa.string()), col)
    try:
        return pc.cast(nulled, pa.int64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    try:
        floats = pc.cast(nulled, pa.float64())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return col
    # integers that failed int64 only by their size (a u64): text keeps every digit
    if pc.all(pc.match_substring_regex(pc.drop_null(nulled), r"^-?[0-9]+$")).as_py():
        return col
    return floats


def read_csv_table(path: Path):
    """A CSV as an Arrow table with the types above. A row whose number of
    fields is not the header's (the torn last line of a killed collector)
    is dropped, as the readers drop it."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    with open(path, newline="") as f:
        head = next(csv.reader(f), None) or []
    if not head:
        return pa.table({})
    def read(skip_bad: bool):
        return pacsv.read_csv(
            path, read_options=pacsv.ReadOptions(block_size=1 << 24),
            parse_options=pacsv.ParseOptions(
                invalid_row_handler=(lambda row: "skip") if skip_bad else None),
            convert_options=pacsv.ConvertOptions(column_types={c: pa.string() for c in head},
                                                 strings_can_be_null=False,
                                                 quoted_strings_can_be_null=False))
    try:
        table = read(False)
    except pa.ArrowInvalid:
        table = read(True)  # slower: a Python call per bad row, and no parallel parse
    cols = [_typed_column(table.column(i).combine_chunks()) for i in range(table.num_columns)]
    return pa.Table.from_arrays(cols, names=table.column_names)


#: An integer column this much in order (consecutive rows not decreasing)
#: is a clock: stored as deltas.
RISING_SHARE = 0.9


def _rising(col) -> bool:
    """Whether an int64 column mostly counts up (timestamps): its deltas
    are small where its values are all distinct, which a dictionary
    cannot shrink — a postcard file's nanosecond times went from 5 bytes a
    row to under 1 stored as deltas."""
    import pyarrow as pa
    import pyarrow.compute as pc
    if col.type != pa.int64() or len(col) < 3 or col.null_count:
        return False
    up = pc.greater_equal(col.slice(1), col.slice(0, len(col) - 1))
    return pc.mean(pc.cast(up, pa.int8())).as_py() >= RISING_SHARE


def write_parquet(table, path: Path) -> None:
    """zstd, clocks as deltas (``_rising``), written to a temporary name
    and renamed: a reader never sees half a file."""
    import pyarrow.parquet as pq
    tmp = path.with_name(path.name + ".tmp")
    clocks = [n for n, c in zip(table.column_names, table.columns) if _rising(c.combine_chunks())]
    pq.write_table(table, tmp, compression="zstd", store_schema=False,
                   use_dictionary=[n for n in table.column_names if n not in clocks],
                   column_encoding={n: "DELTA_BINARY_PACKED" for n in clocks} or None,
                   # statistics only pay for themselves on large files
                   write_statistics=table.num_rows >= 10_000)
    os.replace(tmp, path)


def convert(path: Path) -> Path:
    """One CSV to Parquet beside it; the CSV is removed once the Parquet
    file is complete."""
    path = Path(path)
    out = path.with_suffix(SUFFIX)
    write_parquet(read_csv_table(path), out)
    path.unlink()
    return out


def convert_folder(folder: Path) -> list[Path]:
    """Every CSV under ``folder`` (an arm's results) to Parquet, except
    under logs/ (agents' and switches' own logs stay as written).
    Returns the Parquet files written; nothing with P4CC_SERIES=csv."""
    if keep_csv():
        return []
    out = []
    for p in sorted(Path(folder).rglob("*.csv")):
        if "logs" in p.relative_to(folder).parts:
            continue
        out.append(convert(p))
    return out


def records(path: Path) -> tuple[list[str], Iterator[list]]:
    """(columns, rows) of a series file asked for as ``X.csv``: rows are
    lists of text from a CSV and of typed values (None for empty) from
    Parquet. No file: no columns, no rows."""
    src = source(path)
    if src is None:
        return [], iter(())
    if src.suffix == SUFFIX:
        import pyarrow.parquet as pq
        table = pq.read_table(src)
        cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
        return list(table.column_names), (list(r) for r in zip(*cols))
    f = open(src, newline="")
    reader = csv.reader(f)
    head = next(reader, None)
    if not head:
        f.close()
        return [], iter(())

    def rows():
        with f:
            yield from reader
    return head, rows()


def text(v) -> str:
    """A typed value as the CSV wrote it (see the module's note)."""
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)  # shortest round-trip: float() gives the same number back
    return str(v)

