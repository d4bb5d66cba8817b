"""One self-contained HTML report per run: parameters, summary table and
plots embedded as data URIs, so a browser opens it from disk without a
server and the file can be mailed on its own."""
from __future__ import annotations

import base64
import html
import json
from pathlib import Path


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (dict, list)):
        return html.escape(json.dumps(v))
    return html.escape(str(v))


def _table(rows: dict) -> str:
    body = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{_fmt(v)}</td></tr>"
                   for k, v in rows.items())
    return f"<table>{body}</table>"


def _summary_tables(summary: dict) -> str:
    """Nested dicts (e.g. per protocol) become one table each."""
    flat = {k: v for k, v in summary.items() if not isinstance(v, dict)}
    out = [_table(flat)] if flat else []
    for k, v in summary.items():
        if isinstance(v, dict):
            out.append(f"<h3>{html.escape(k)}</h3>{_summary_tables(v)}")
    return "".join(out)


STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #ccc;
padding:.25em .6em;text-align:left}th{background:#f4f4f4;font-weight:600}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}.note{color:#555}
.verdict-pass{color:#176f2c}.verdict-fail{color:#b00020}
"""


def write_report(outdir: Path, title: str, description: str, params: dict,
                 summary: dict, plots: list[Path], checks: dict[str, bool] | None = None,
                 notes: list[str] | None = None) -> Path:
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p>{html.escape(description)}</p>"]
    if checks:
        items = "".join(
            f"<li class='verdict-{'pass' if ok else 'fail'}'>{'✔' if ok else '✘'} {html.escape(name)}</li>"
            for name, ok in checks.items())
        parts.append(f"<h2>Expected behaviour</h2><ul>{items}</ul>")
    for p in plots:
        data = base64.b64encode(Path(p).read_bytes()).decode()
        parts.append(f"<h2>{html.escape(Path(p).stem.replace('_', ' '))}</h2>"
                     f"<img alt='{html.escape(Path(p).name)}' src='data:image/png;base64,{data}'>")
    parts.append(f"<h2>Summary</h2>{_summary_tables(summary)}")
    parts.append(f"<h2>Parameters</h2>{_table(params)}")
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li class='note'>{html.escape(n)}</li>" for n in notes) + "</ul>")
    parts.append("<p class='note'>Raw series are the CSV files beside this report; "
                 "summary.json and params.json hold the numbers above.</p></body></html>")
    path = outdir / "report.html"
    path.write_text("".join(parts))
    return path
