"""The sweep's report: report.html and its PNGs in the sweep's folder.

For each headline metric (Experiment.headlines; without any, every numeric
summary value that varies across the points) and each swept parameter: the
mean over a point's seeds with its 95 % confidence interval (Student t over
the seeds, stats.mean_ci), one line per combination of the other swept
parameters, the analysis' value dashed beside it where the experiment
declares one — and that metric against the analysis' value on its own
plot. Then the share of seeds whose verdicts all pass, per point, and the
table of points (failed ones with their error).
"""
from __future__ import annotations

import base64
import fnmatch
import html
import io
import math
import re
from pathlib import Path
from typing import NamedTuple

from .experiment import Headline
from .report import STYLE
from .stats import mean_ci
from .sweeppoint import write_whole

#: A report stops drawing after this many plots (the table has every number).
MAX_PLOTS = 40


def _num(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    try:
        return float(str(v))
    except ValueError:
        return None


def headlines(exp, rows: list[dict]) -> list[tuple]:
    """(column, label, theory column or None, theory label, the headline's
    label, arm or "") to plot: one figure per headline, a line per arm."""
    cols = [c for c in dict.fromkeys(k for r in rows for k in r) if c.startswith("summary.")]
    out = []
    for h in exp.headlines or []:
        # the point-wide value when there is one, else one per arm
        exact = f"summary.{h.metric}"
        pat = exact if exact in cols else f"summary.*.{h.metric}"
        for c in cols:
            if fnmatch.fnmatchcase(c, pat):
                prefix = c[: -len(h.metric)] if c.endswith(h.metric) else "summary."
                theory = f"{prefix}{h.theory}" if h.theory else None
                arm = prefix[len("summary."):].rstrip(".")
                label = f"{h.label} ({arm})" if arm else h.label
                out.append((c, label, theory if theory in cols else None, h.theory_label,
                            h.label, arm))
    if out or exp.headlines:
        return out
    for c in cols:
        vals = {r.get(c) for r in rows if r.get("status") == "done" and _num(r.get(c)) is not None}
        if len(vals) > 1:
            out.append((c, c[len("summary."):], None, "", c[len("summary."):], ""))
    return out


def groups(rows: list[dict], swept: list[str]) -> dict[tuple, list[dict]]:
    """The done rows of each grid point (its seeds)."""
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        key = tuple(r.get(f"grid.{k}") for k in swept)
        out.setdefault(key, [])
        if r.get("status") == "done":
            out[key].append(r)
    return out


def x_value(rows: list[dict], name: str, raw: str):
    """A swept value on a numeric axis: the plan's parameter when it is a
    number, else the value as given when it reads as one, else None."""
    for r in rows:
        v = _num(r.get(f"param.{name}"))
        if v is not None:
            return v
    return _num(raw)


class Plot(NamedTuple):
    """A plot written next to the report, and its PNG, which the report
    embeds as drawn (another sweep over the folder may be rewriting the
    file)."""
    path: Path
    png: bytes


def _save(fig, path: Path) -> Plot:
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    import matplotlib.pyplot as plt
    plt.close(fig)
    write_whole(path, buf.getvalue())
    return Plot(path, buf.getvalue())


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")[:80] or "plot"


def metric_plot(groups_, swept, name, cols, label, theory_label, outdir) -> Plot:
    """``cols``: (column, arm, theory column) of one headline, a line per
    arm and combination of the other swept parameters."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    i = swept.index(name)
    others = [k for k in swept if k != name]
    series: dict[tuple, list] = {}
    for key, rs in groups_.items():
        other = tuple(v for j, v in enumerate(key) if j != i)
        series.setdefault(other, []).append((key[i], rs))
    raws = list(dict.fromkeys(k[i] for k in groups_))
    xs_num = {raw: x_value([r for k, rs in groups_.items() if k[i] == raw for r in rs], name, raw)
              for raw in raws}
    numeric = all(v is not None for v in xs_num.values())
    pos = {raw: (xs_num[raw] if numeric else j) for j, raw in enumerate(raws)}
    fig, ax = plt.subplots(figsize=(7, 4.2))
    lines = [(col, arm, theory, other, pts) for col, arm, theory in cols
             for other, pts in sorted(series.items(), key=lambda kv: str(kv[0]))]
    for n, (col, arm, theory, other, pts) in enumerate(lines):
        pts = sorted(pts, key=lambda t: pos[t[0]])
        xs, ms, cis, th = [], [], [], []
        for raw, rs in pts:
            m, ci, k = mean_ci(_num(r.get(col)) for r in rs)
            if k == 0:
                continue
            xs.append(pos[raw])
            ms.append(m)
            cis.append(0.0 if math.isnan(ci) else ci)
            if theory:
                th.append(mean_ci(_num(r.get(theory)) for r in rs)[0])
        tag = ", ".join(([arm] if arm else []) + [f"{k}={v}" for k, v in zip(others, other)])
        color = f"C{n % 10}"
        ax.errorbar(xs, ms, yerr=cis, marker="o", capsize=4, color=color,
                    label=(tag or "measured") + " (mean, 95 % CI)")
        if theory and th:
            ax.plot(xs, th, "--", color=color, lw=1,
                    label=f"{theory_label or 'analysis'}" + (f", {tag}" if tag else ""))
    if not numeric:
        ax.set_xticks(list(pos.values()))
        ax.set_xticklabels(list(pos))
    ax.set_xlabel(name)
    ax.set_ylabel(label)
    ax.set_title(f"{label} against {name}", fontsize=10)
    ax.legend(fontsize=7)
    return _save(fig, outdir / f"sweep_{_slug(label)}_vs_{_slug(name)}.png")


def theory_plot(groups_, swept, col, label, theory, theory_label, outdir) -> Plot:
    """The measured mean (95 % CI) against the analysis' value, per point,
    with the line where they are equal."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(5.5, 5))
    xs, ms, cis, names = [], [], [], []
    for key, rs in groups_.items():
        m, ci, k = mean_ci(_num(r.get(col)) for r in rs)
        t = mean_ci(_num(r.get(theory)) for r in rs)[0]
        if k == 0 or math.isnan(t):
            continue
        xs.append(t)
        ms.append(m)
        cis.append(0.0 if math.isnan(ci) else ci)
        names.append(" ".join(f"{k}={v}" for k, v in zip(swept, key)))
    ax.errorbar(xs, ms, yerr=cis, fmt="o", capsize=4, label="measured (mean, 95 % CI)")
    for x, y, n in zip(xs, ms, names):
        ax.annotate(n, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    if xs:
        lo, hi = min(xs + ms), max(xs + ms)
        ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="equal")
    ax.set_xlabel(theory_label or "analysis")
    ax.set_ylabel(label)
    ax.set_title(f"{label} against {theory_label or 'the analysis'}", fontsize=10)
    ax.legend(fontsize=7)
    return _save(fig, outdir / f"sweep_{_slug(col)}_vs_theory.png")


def pass_plot(groups_, swept, name, outdir) -> Plot:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    i = swept.index(name)
    others = [k for k in swept if k != name]
    series: dict[tuple, list] = {}
    for key, rs in groups_.items():
        if rs:
            series.setdefault(tuple(v for j, v in enumerate(key) if j != i), []).append(
                (key[i], sum(bool(r.get("verdicts_pass")) for r in rs) / len(rs)))
    raws = list(dict.fromkeys(k[i] for k in groups_))
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for n, (other, pts) in enumerate(sorted(series.items(), key=lambda kv: str(kv[0]))):
        pts.sort(key=lambda t: raws.index(t[0]))
        ax.plot([raws.index(r) for r, _ in pts], [s * 100 for _, s in pts], marker="o",
                label=", ".join(f"{k}={v}" for k, v in zip(others, other)) or None)
    ax.set_xticks(range(len(raws)))
    ax.set_xticklabels(raws)
    ax.set_ylim(-5, 105)
    ax.set_xlabel(name)
    ax.set_ylabel("seeds whose verdicts all pass (%)")
    if others:
        ax.legend(fontsize=7)
    return _save(fig, outdir / f"sweep_verdicts_vs_{_slug(name)}.png")


def _img(p: Plot) -> str:
    data = base64.b64encode(p.png).decode()
    return f"<img alt='{html.escape(p.path.name)}' src='data:image/png;base64,{data}'>"


def _fmt_ci(m, ci, n) -> str:
    if n == 0 or math.isnan(m):
        return "–"
    return f"{m:.4g}" if math.isnan(ci) else f"{m:.4g} ± {ci:.2g}"


def write(outdir: Path, exp, request: dict, rows: list[dict]) -> Path:
    outdir = Path(outdir)
    swept = list(request["grid"])
    grp = groups(rows, swept)
    heads = headlines(exp, rows)
    plots: list[tuple[str, Plot]] = []
    figures: dict[str, list] = {}
    for col, label, theory, tlabel, head, arm in heads:
        figures.setdefault(head, []).append((col, arm, theory, tlabel))
    for head, cols in figures.items():
        for name in swept:
            if len(plots) < MAX_PLOTS:
                plots.append((f"{head} against {name}", metric_plot(
                    grp, swept, name, [c[:3] for c in cols], head, cols[0][3], outdir)))
    for col, label, theory, tlabel, _, _ in heads:
        if theory and len(plots) < MAX_PLOTS:
            plots.append((f"{label} against {tlabel or 'the analysis'}",
                          theory_plot(grp, swept, col, label, theory, tlabel, outdir)))
    for name in swept:
        plots.append((f"verdicts passed against {name}", pass_plot(grp, swept, name, outdir)))
    done = sum(r["status"] == "done" for r in rows)
    failed = [r for r in rows if r["status"] == "failed"]
    missing = sum(r["status"] == "missing" for r in rows)
    title = f"Sweep of {exp.id}: {exp.title}"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<p>{html.escape(exp.source)}. Grid: "
             + html.escape("; ".join(f"{k} = {', '.join(v)}" for k, v in request["grid"].items()))
             + f"; {request['seeds']} seed{'s' if request['seeds'] != 1 else ''} per point; target "
             f"{html.escape(request['target'])}; scale {html.escape(request['scale'])}"
             + (f"; --set {html.escape(' '.join(request['set']))}" if request.get("set") else "")
             + f".</p><p>{done} of {len(rows)} runs done, {len(failed)} failed, {missing} not run.</p>",
             "<p class='note'>Each point is the mean over its seeds; the bars are the 95 % "
             "confidence interval of that mean, t(0.975, n − 1)·s/√n with s the standard "
             "deviation over the n seeds (Student t: a few seeds are a small sample). A point "
             "with one seed has no interval. Dashed lines are the analysis' values where the "
             "experiment gives them. results.parquet holds every number of every run.</p>"]
    if not heads:
        parts.append("<p class='note'>No summary value varies across the points.</p>")
    for caption, p in plots:
        parts.append(f"<h2>{html.escape(caption)}</h2>{_img(p)}")
    head = "".join(f"<th>{html.escape(k)}</th>" for k in swept)
    head += "<th>seeds done</th>" + "".join(f"<th>{html.escape(h[1])}</th>" for h in heads[:12])
    head += "<th>verdicts pass</th>"
    body = []
    for key, rs in grp.items():
        all_rs = [r for r in rows if tuple(r.get(f"grid.{k}") for k in swept) == key]
        cells = "".join(f"<td>{html.escape(str(v))}</td>" for v in key)
        cells += f"<td>{len(rs)} / {len(all_rs)}</td>"
        cells += "".join(f"<td>{_fmt_ci(*mean_ci(_num(r.get(c)) for r in rs))}</td>"
                         for c, *_ in heads[:12])
        share = (f"{sum(bool(r.get('verdicts_pass')) for r in rs)} / {len(rs)}" if rs else "–")
        body.append(f"<tr>{cells}<td>{share}</td></tr>")
    parts.append(f"<h2>Points</h2><table><tr>{head}</tr>{''.join(body)}</table>")
    if failed:
        def where(r):
            grid = " ".join(f"{k}={r.get('grid.' + k)}" for k in swept)
            return html.escape(f"{grid} seed={r.get('seed')}")
        parts.append("<h2>Failed</h2><table><tr><th>point</th><th>folder</th><th>error</th></tr>"
                     + "".join(f"<tr><td>{where(r)}</td><td>failures/{r['point']}.json</td>"
                               f"<td>{html.escape(r.get('error') or '')}</td></tr>" for r in failed)
                     + "</table>")
    parts.append("</body></html>")
    path = outdir / "report.html"
    write_whole(path, "".join(parts).encode())
    # Plots of an earlier grid go; this report's stay. Only names this
    # write did not produce are removed, so a sweep writing the same
    # report at the same time loses none of its plots.
    produced = {p.path.name for _, p in plots}
    for old in outdir.glob("sweep_*.png"):
        if old.name not in produced:
            old.unlink(missing_ok=True)
    return path


__all__ = ["write", "headlines", "Headline"]
