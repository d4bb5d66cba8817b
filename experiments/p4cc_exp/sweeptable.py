"""The sweep's results table, `results.parquet`: one row per point and seed.

    point            the point's key (its folder under points/)
    status           done | failed | missing (not run yet, or interrupted)
    error            the last error of a failed point (one line)
    seed             the seed its plan ran with
    grid.NAME        each swept parameter as given on the command line
    param.NAME       every parameter of its plan (lists as "a,b")
    summary.A.B      every numeric value of summary.json, nested keys joined by
                     dots (e.g. summary.n10.queue_p99_pkts), and the
                     experiment's sweep values (Experiment.sweep_values)
    verdict.NAME     each verdict's status: pass | fail | void
    verdicts_pass    every verdict passed (no fail, no void)
    n_pass, n_fail, n_void   the verdict counts
    node, host, wall_s, attempt   where the point ran and how long it took
"""
from __future__ import annotations

import json
import math
import os
import uuid
from pathlib import Path

from .sweepplan import Point
from .sweeppoint import FAILURES, POINTS, complete


def flatten(d: dict, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of nested dicts under dotted names (lists and text
    are left out: a table cell is one number)."""
    out = {}
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(flatten(v, name + "."))
        elif isinstance(v, bool):
            continue
        elif isinstance(v, (int, float)):
            out[name] = float(v)
    return out


def _param(v):
    if isinstance(v, (list, tuple)):
        return ",".join(str(x) for x in v)
    if isinstance(v, bool):
        return str(v).lower()
    return v


def row(out: Path, exp, p: Point) -> dict:
    folder = Path(out) / POINTS / p.key
    r = {"point": p.key, "status": "missing", "error": "", "seed": p.seed}
    r.update({f"grid.{k}": v for k, v in p.grid.items()})
    r.update({f"param.{k}": _param(v) for k, v in p.plan["params"].items()})
    if complete(folder):
        r["status"] = "done"
        s = json.loads((folder / "summary.json").read_text())
        summary = s.get("summary") or {}
        r.update({f"summary.{k}": v for k, v in flatten(summary).items()})
        try:
            extra = exp.sweep_values(p.plan["params"], summary) or {}
        except Exception as e:  # a point the definition cannot summarise stays in the table
            extra, r["error"] = {}, f"sweep values: {e}"
        r.update({f"summary.{k}": (float(v) if v is not None else math.nan)
                  for k, v in extra.items() if not isinstance(v, bool)})
        for v in s.get("verdicts") or []:
            r[f"verdict.{v['name']}"] = v.get("status") or ("pass" if v.get("ok") else "fail")
        n = s.get("counts") or {}
        r.update(n_pass=n.get("pass", 0), n_fail=n.get("fail", 0), n_void=n.get("void", 0))
        r["verdicts_pass"] = bool(s.get("verdicts")) and not n.get("fail") and not n.get("void")
        try:
            meta = json.loads((folder / "point.json").read_text())
            r.update(node=meta.get("node"), host=meta.get("host"), wall_s=meta.get("wall_s"),
                     attempt=meta.get("attempt"))
        except (OSError, ValueError):
            pass
    else:
        f = Path(out) / FAILURES / f"{p.key}.json"
        if f.exists():
            try:
                fail = json.loads(f.read_text())
                r.update(status="failed", error=fail.get("error", ""), node=fail.get("node"),
                         host=fail.get("host"), attempt=fail.get("attempts"))
            except (OSError, ValueError):
                r.update(status="failed", error="unreadable failure record")
    return r


def rows(out: Path, exp, points: list[Point]) -> list[dict]:
    return [row(out, exp, p) for p in points]


def write(rows_: list[dict], path: Path) -> Path:
    """results.parquet, written to a temporary name and renamed."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    cols: dict[str, None] = {}
    for r in rows_:
        cols.update(dict.fromkeys(r))
    fields = []
    for c in cols:
        vals = [r.get(c) for r in rows_]
        present = [v for v in vals if v is not None]
        if present and all(isinstance(v, bool) for v in present):
            kind = pa.bool_()
        elif present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
            kind = pa.int64()
        elif present and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                             for v in present):
            kind = pa.float64()
        else:
            kind = pa.string()
        fields.append(pa.field(c, kind))
    data = {}
    for f in fields:
        vals = [r.get(f.name) for r in rows_]
        if f.type == pa.string():
            vals = [None if v is None else str(v) for v in vals]
        elif f.type == pa.float64():
            vals = [None if v is None else float(v) for v in vals]
        data[f.name] = pa.array(vals, type=f.type)
    table = pa.table(data, schema=pa.schema(fields))
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    pq.write_table(table, tmp, compression="zstd")
    os.replace(tmp, path)
    return path
