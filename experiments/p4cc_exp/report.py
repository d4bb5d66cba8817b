"""One self-contained HTML report per run: parameters, summary table and
plots embedded as data URIs, so a browser opens it from disk without a
server and the file can be mailed on its own."""
from __future__ import annotations

import base64
import html
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

from .fidelity import summary_line


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
.verdict-pass{color:#176f2c}.verdict-fail{color:#b00020}.verdict-void{color:#8a6d00}
td.pass{background:#e8f5e9}td.fail{background:#fde7e9}td.void{background:#fff8e1}
.facts td,.facts th{font-size:90%}
"""


def _tool_version(cmd: str) -> str | None:
    path = shutil.which(cmd)
    if not path:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
        text = (out.stdout or out.stderr).strip().splitlines()
        return text[0] if text else path
    except (OSError, subprocess.TimeoutExpired):
        return path


def run_facts(meta: dict, plan, fidelity: dict[str, dict]) -> dict:
    """What a reader needs to trust a run, for the top of the report."""
    virtual = meta.get("time") == "virtual time"
    facts = {
        "commit": meta.get("git_commit"),
        "executor": meta.get("executor"),
        "time": "virtual time" if virtual else "real time",
        "target": meta.get("target"),
        "scale": plan.scale,
        "kernel": platform.release(),
        "cores": os.cpu_count(),
        "load average": " ".join(open("/proc/loadavg").read().split()[:3]),
    }
    if meta.get("executor") == "external":
        # Run elsewhere (hardware): this machine's facts say nothing of it.
        facts["time"] = "real time, run outside p4cc (p4cc analyse)"
        for k in ("kernel", "cores", "load average"):
            facts.pop(k)
    if virtual:
        vt = meta.get("virtual_time") or {}
        facts["simulated"] = (f"{vt.get('sim_s', 0):.3f} s, {vt.get('events', 0):,} events, "
                              f"{vt.get('wall_s', 0):.1f} s wall")
    if meta.get("target") == "bmv2":
        facts["bmv2"] = _tool_version("simple_switch_grpc")
    p4c = _tool_version("p4c-bm2-ss")
    if p4c:
        facts["p4c"] = p4c
    ext = external_programs(plan)
    if ext:
        facts["external programs"] = ext
    facts["fidelity"] = {a: summary_line(f) for a, f in fidelity.items()}
    return facts


def external_programs(plan) -> dict[str, str]:
    """Arm -> the programs its external agents ran (not p4cc's agents:
    what they measure of themselves is absent; the switch measured them)."""
    out = {}
    for arm in plan.arms:
        cmds = {a.role: " ".join(a.command) for a in arm.external()}
        if cmds:
            out[arm.name] = "; ".join(f"{role}: {c}" for role, c in sorted(cmds.items(),
                                                                          reverse=True))
    return out


def _verdict_table(verdicts) -> str:
    rows = "".join(
        f"<tr><td>{html.escape(v.name)}</td><td>{html.escape(v.expected)}</td>"
        f"<td>{_fmt(v.measured)}</td><td>{html.escape(v.tolerance)}</td>"
        f"<td class='{v.status}'>{v.status}{': ' + html.escape(v.reason) if v.reason else ''}</td>"
        f"<td>{html.escape(v.source)}</td></tr>" for v in verdicts)
    return ("<table><tr><th>check</th><th>paper / analysis</th><th>ours</th><th>tolerance</th>"
            f"<th>verdict</th><th>source</th></tr>{rows}</table>")


def write_report(outdir: Path, title: str, description: str, facts: dict, params: dict,
                 summary: dict, plots: list[Path], verdicts=(), notes: list[str] | None = None) -> Path:
    fid = facts.get("fidelity") or {}
    shown = {k: v for k, v in facts.items() if k != "fidelity"}
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p>{html.escape(description)}</p>",
             f"<div class='facts'>{_table(shown)}</div>"]
    if fid:
        parts.append("<div class='facts'><table><tr><th>arm</th><th>fidelity</th></tr>" + "".join(
            f"<tr><td>{html.escape(a)}</td><td>{html.escape(line)}</td></tr>"
            for a, line in fid.items()) + "</table></div>")
    if verdicts:
        from .verdicts import counts
        n = counts(list(verdicts))
        parts.append(f"<h2>The paper beside us: {n['pass']} pass, {n['fail']} fail, {n['void']} void"
                     f"</h2>{_verdict_table(verdicts)}")
    for p in plots:
        data = base64.b64encode(Path(p).read_bytes()).decode()
        parts.append(f"<h2>{html.escape(Path(p).stem.replace('_', ' '))}</h2>"
                     f"<img alt='{html.escape(Path(p).name)}' src='data:image/png;base64,{data}'>")
    parts.append(f"<h2>Summary</h2>{_summary_tables(summary)}")
    parts.append(f"<h2>Parameters</h2>{_table(params)}")
    if notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li class='note'>{html.escape(n)}</li>" for n in notes) + "</ul>")
    parts.append("<p class='note'>Raw series are the Parquet files in the arms' folders beside "
                 "this report (unless the run kept only its summary: --keep); "
                 "summary.json and params.json hold the numbers above.</p></body></html>")
    path = outdir / "report.html"
    path.write_text("".join(parts))
    return path
