"""What of a results folder stays after the analysis (`--keep`):

    all      everything (the default of `p4cc run`)
    series   everything `p4cc analyse` needs to analyse the folder again:
             the run's files, each arm's series (Parquet), measure.json,
             fidelity.json and the agents' JSON summaries; not the logs/
             (switch, agent and simulator logs)
    summary  summary.json, report.html, the plots, plan.json and
             params.json only: the numbers, not the data behind them
"""
from __future__ import annotations

import shutil
from pathlib import Path

KEEPS = ("all", "series", "summary")
#: the run's own files `summary` keeps (and the plots, *.png)
SUMMARY_FILES = ("summary.json", "report.html", "plan.json", "params.json")


def prune(outdir: Path, keep: str, arms: list[str]) -> None:
    """Removes from ``outdir`` what ``keep`` does not keep; only the run's
    own files and its arms' folders are ever touched."""
    if keep not in KEEPS:
        raise ValueError(f"--keep {keep}: use {', '.join(KEEPS)}")
    if keep == "all":
        return
    outdir = Path(outdir)
    for name in arms:
        arm = outdir / name
        if not arm.is_dir():
            continue
        if keep == "summary":
            shutil.rmtree(arm)
        else:
            shutil.rmtree(arm / "logs", ignore_errors=True)
