"""Runs one experiment end to end and writes its results folder:

    params.json   every parameter, the target, seed, versions
    <arm>/        raw series per arm (queue.csv from postcards, flow logs)
    summary.json  the numbers, and the checks of the expected behaviour
    *.png         plots, paper/theory values drawn beside ours
    report.html   all of it in one file a browser opens from disk
"""
from __future__ import annotations

import json
import platform
import random
import subprocess
import time
from datetime import datetime
from pathlib import Path

from .experiment import Experiment
from .lab import Lab, LabError
from .params import resolve
from .progress import Progress
from .report import write_report

ROOT = Path(__file__).resolve().parents[2]
SETUP_S, ANALYSIS_S = 8.0, 6.0


class RunError(RuntimeError):
    pass


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run(exp: Experiment, target: str = "auto", overrides: list[str] | None = None,
        out: str | None = None, quiet: bool = False) -> Path:
    p = resolve(exp.params, overrides or [])
    random.seed(p.get("seed", 1))
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    outdir = Path(out) if out else ROOT / "results" / f"{exp.id}-{stamp}"
    outdir.mkdir(parents=True, exist_ok=True)
    arms = exp.arms(p)
    meta = {"experiment": exp.id, "title": exp.title, "source": exp.source,
            "target_requested": target, "params": p, "arms": [a.name for a in arms],
            "git_commit": _git_commit(), "host": platform.node(), "kernel": platform.release(),
            "started": datetime.now().isoformat(timespec="seconds")}
    (outdir / "params.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")

    progress = Progress(SETUP_S + sum(exp.arm_seconds(p, a) + SETUP_S for a in arms) + ANALYSIS_S)
    results: dict[str, dict] = {}
    try:
        for arm in arms:
            # A fresh network per arm: no queue, counter or socket state
            # leaks from one protocol's run into the next.
            progress.phase(f"setting up ({arm.label})", SETUP_S)
            with Lab(exp.arm_topology(p, arm), target, outdir / arm.name, seed=p.get("seed", 1),
                     postcard_one_in_n=exp.postcard_one_in_n(p)) as lab:
                meta["target"] = lab.net.target
                progress.phase(arm.label, exp.arm_seconds(p, arm))
                results[arm.name] = exp.run_arm(lab, arm, p, progress, outdir / arm.name)
    except (LabError, OSError, RuntimeError) as e:
        raise RunError(f"{exp.id}: {e}") from e
    meta["finished"] = datetime.now().isoformat(timespec="seconds")
    (outdir / "params.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")

    progress.phase("analysis and plots", ANALYSIS_S)
    summary, checks = exp.analyse(p, results)
    plots = exp.plot(p, results, summary, outdir)
    (outdir / "summary.json").write_text(json.dumps(
        {"experiment": exp.id, "target": meta.get("target"), "summary": summary,
         "checks": checks}, indent=2, default=str) + "\n")
    report = write_report(outdir, f"{exp.title} — {exp.source}",
                          exp.description + f" Target: {meta.get('target')}.",
                          {**p, "target": meta.get("target"), "git": meta["git_commit"]},
                          summary, plots, checks)
    progress.finish(f"{exp.id} finished: {sum(checks.values())}/{len(checks)} checks hold")
    return report
