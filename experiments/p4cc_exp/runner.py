"""Runs one experiment end to end and writes its results folder:

    plan.json     the scenario plan that made the run (`p4cc run --plan` reruns it)
    params.json   every parameter, the executor and target, seed, versions
    <arm>/        raw series per arm (queue.parquet from postcards, flow logs as
                  Parquet, measure.json; columnar.py), as much as --keep keeps
    summary.json  the numbers, and the checks of the expected behaviour
    *.png         plots, paper/theory values drawn beside ours
    report.html   all of it in one file a browser opens from disk
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import random
import subprocess
from datetime import datetime
from pathlib import Path

from p4cc_control.errors import P4ccError
from p4cc_topo import NetworkError, SwitchStartError, TargetCapabilityError
from p4cc_topo.plan import Plan, PlanError

from . import columnar, diskest, outdirs
from .arm_steps import ExecutorError
from .experiment import Experiment
from .keep import KEEPS, prune
from .params import ParamError, resolve
from .progress import Progress
from .registry import get
from .fidelity import summary_line
from .report import run_facts, write_report
from .results import arm_result
from .verdicts import counts, judge

ROOT = Path(__file__).resolve().parents[2]
SETUP_S, ANALYSIS_S = 8.0, 6.0


class RunError(RuntimeError):
    pass


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C: the network is gone; what was written stays in ``outdir``."""

    def __init__(self, outdir: Path):
        super().__init__(str(outdir))
        self.outdir = outdir


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


SCALES = ("default", "paper")


def make_plan(exp: Experiment, overrides: list[str] | None = None, scale: str = "default") -> Plan:
    """The plan of ``exp`` with ``--set`` overrides (the one place user
    strings become typed values); ``scale="paper"`` starts from the paper's
    own parameters, which the overrides may still change."""
    if scale not in SCALES:
        raise ParamError(f"unknown scale '{scale}' ({', '.join(SCALES)})")
    base = list(exp.paper) if scale == "paper" else []
    p = resolve(exp.params, base + list(overrides or []))
    try:
        return exp.plan(p, scale)
    except (ValueError, PlanError) as e:
        raise ParamError(f"{exp.id}: {e}") from None


def arm_seconds(arm) -> float:
    return arm.end_s() + 2.0


def make_executor(target: str, links: str = "p4cc"):
    """``sim`` runs in virtual time; every other target in the namespace lab."""
    if target == "sim":
        from .simexec import VirtualTime
        return VirtualTime()
    from .executors import NamespaceLab
    return NamespaceLab(target, links)


def _set_by_user(name: str, overrides: list[str]) -> bool:
    return any(o.split("=", 1)[0].strip() == name for o in overrides)


def fit_to_bmv2(exp: Experiment, plan: Plan, target: str, overrides: list[str], scale: str,
                links: str = "p4cc") -> tuple[Plan, str | None]:
    """A run bound for bmv2 (``--target bmv2``, or ``auto`` with bmv2
    installed) whose packet load is beyond what bmv2 forwards on this
    machine runs at a rate it can carry, when the experiment has a rate
    parameter the user did not set; returns the plan and the line saying
    which rate and why (None when nothing changed)."""
    from p4cc_topo.targets import TargetUnavailable, find_bmv2

    from .executors import capability_problems, fit_rate
    name = exp.rate_param
    if not name or _set_by_user(name, overrides):
        return plan, None
    if target not in ("auto", "bmv2"):
        return plan, None
    if target == "auto" and os.environ.get("P4CC_TARGET", "auto") not in ("auto", "bmv2"):
        return plan, None
    try:
        find_bmv2()
    except TargetUnavailable:
        return plan, None
    if target == "auto" and capability_problems(plan, "bmv2", links):
        return plan, None
    rate = float(plan.params[name])
    fit = fit_rate(plan, rate)
    if fit is None:
        return plan, None
    new, why = fit
    return (make_plan(exp, list(overrides) + [f"{name}={int(new)}"], scale),
            f"{name} {rate / 1e6:g} Mb/s → {new / 1e6:g} Mb/s for bmv2: {why} "
            f"(--set {name}=… keeps a rate of your choice)")


def check_disk(plan: Plan, outdir: Path, keep: str = "all") -> str:
    """The run log's line on the disk the plan will write; a RunError when
    the disk under ``outdir`` cannot hold it (diskest.py)."""
    est = diskest.estimate(plan, keep, csv=columnar.keep_csv())
    ok, free = diskest.fits(est.peak, outdir)
    if not ok:
        raise RunError(f"{plan.experiment}: not enough disk in {outdir}: the run writes about "
                       f"{diskest.human(est.peak)} at its peak and {diskest.human(free)} is free "
                       f"(keeping {diskest.human(diskest.RESERVE_BYTES)}); shorten it, sample "
                       "less, or free space")
    return est.line(free)


def run(exp: Experiment | None = None, target: str = "auto", overrides: list[str] | None = None,
        out: str | None = None, plan: Plan | None = None, plan_only: bool = False,
        scale: str = "default", links: str = "p4cc", keep: str = "all", retry_void: int = 0) -> Path:
    """Runs ``exp`` (or a saved ``plan``) and returns the report's path
    (the plan's path with ``plan_only``); ``keep`` says what of the
    results folder stays (keep.py); ``retry_void``: how many more times an
    arm runs when the fidelity monitor finds its run unfaithful."""
    if keep not in KEEPS:
        raise ParamError(f"--keep {keep}: use {', '.join(KEEPS)}")
    if retry_void < 0:
        raise ParamError(f"--retry-void {retry_void}: use 0 or more")
    fitted = None
    if plan is None:
        plan = make_plan(exp, overrides, scale)
        if not plan_only:
            plan, fitted = fit_to_bmv2(exp, plan, target, list(overrides or []), scale, links)
    else:
        exp = get(plan.experiment)
    p = plan.params
    if target == "sim" and exp.real_time_only and not plan_only:
        raise RunError(exp.real_time_only)
    random.seed(plan.seed)
    name = f"{exp.id}-{outdirs.stamp()}"
    outdir = Path(out) if out else ROOT / "results" / name
    if not plan_only:
        disk_line = check_disk(plan, outdir, keep)  # before anything is written
    if out:
        outdir.mkdir(parents=True, exist_ok=True)
    else:
        outdir = outdirs.new_dir(outdir.parent, name)
    plan_path = plan.write(outdir / "plan.json")
    if plan_only:
        return plan_path

    executor = make_executor(target, links)
    meta = {"experiment": exp.id, "title": exp.title, "source": exp.source,
            "target_requested": target, "params": p, "arms": [a.name for a in plan.arms],
            "git_commit": _git_commit(), "host": platform.node(), "kernel": platform.release(),
            "started": datetime.now().isoformat(timespec="seconds")}
    progress = Progress(SETUP_S + sum(arm_seconds(a) + SETUP_S for a in plan.arms) + ANALYSIS_S,
                        arms=len(plan.arms) if target == "sim" else 0, tail_s=ANALYSIS_S)
    fidelity: dict[str, dict] = {}
    try:
        # The disk line after the target's own checks: a run the target
        # refuses ends with its one-line reason and nothing before it.
        prepared = list(executor.prepare(plan))
        progress.note(disk_line)
        if fitted:
            progress.note(fitted)
        for line in list(plan.notes) + prepared:
            progress.note(line)
        meta.update(executor.describe())
        meta["notes"] = ([fitted] if fitted else []) + list(plan.notes) + list(meta.get("notes") or [])
        (outdir / "params.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
        for arm in plan.arms:
            fidelity[arm.name] = _run_arm(executor, plan, arm, outdir, progress, retry_void, meta)
            progress.arm_done()
    except (ExecutorError, TargetCapabilityError, NetworkError, SwitchStartError, P4ccError,
            OSError, RuntimeError) as e:
        raise RunError(f"{exp.id}: {str(e).splitlines()[0]}") from e
    except KeyboardInterrupt:
        meta.update(interrupted=True, finished=None)
        (outdir / "params.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
        raise RunInterrupted(outdir) from None
    finally:
        executor.finish()
    meta["finished"] = datetime.now().isoformat(timespec="seconds")
    meta.update(executor.describe())
    meta["notes"] = ([fitted] if fitted else []) + list(plan.notes) + list(meta.get("notes") or []) \
        + retry_notes(meta.get("retried") or {}, keep)
    (outdir / "params.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")

    progress.phase("analysis and plots", ANALYSIS_S)
    report, n = analyse_results(exp, plan, outdir, meta, fidelity)
    prune(outdir, keep, [a.name for a in plan.arms]
          + [r["kept"] for runs in (meta.get("retried") or {}).values() for r in runs])
    progress.finish(f"{exp.id} finished: {n['pass']} pass, {n['fail']} fail, {n['void']} void")
    return report


def _unfaithful(record: dict) -> bool:
    v = record.get("violations") or {}
    return bool(v.get("rate") or v.get("queue"))


def _run_arm(executor, plan: Plan, arm, outdir: Path, progress: Progress, retry_void: int,
             meta: dict) -> dict:
    """Runs one arm, up to ``retry_void`` more times while the fidelity
    monitor finds the run unfaithful; returns the fidelity record of the
    run that is judged (the last). Each unfaithful run that is run again
    stays in ARM.void-K/ and is named in the report's notes: the decision
    to run again reads only the monitor, never the numbers, so no result
    is chosen for its value."""
    attempt = 1
    while True:
        # A fresh network per arm: no queue, counter or socket state
        # leaks from one protocol's run into the next.
        progress.phase(f"setting up ({arm.label})", SETUP_S)
        facts = executor.run_arm(plan, arm, outdir / arm.name, _ArmProgress(progress, arm))
        # Parquet before the next arm: only one arm's CSV is ever on disk.
        columnar.convert_folder(outdir / arm.name)
        record = (facts or {}).get("fidelity") or {}
        if not _unfaithful(record):
            return record
        line = summary_line(record)
        progress.note(f"{arm.name}: emulation fidelity: {line}")
        if attempt > retry_void:
            return record
        # The kept run's files stay, so another run needs its own room.
        est = diskest.estimate(dataclasses.replace(plan, arms=(arm,)), "all", csv=columnar.keep_csv())
        ok, free = diskest.fits(est.peak, outdir)
        if not ok:
            progress.note(f"{arm.name}: not run again: it writes about {diskest.human(est.peak)} "
                          f"and {diskest.human(free)} is free")
            return record
        kept = outdirs.new_dir(outdir, f"{arm.name}.void-{attempt}")
        kept.rmdir()
        (outdir / arm.name).rename(kept)
        meta.setdefault("retried", {}).setdefault(arm.name, []).append(
            {"run": attempt, "kept": kept.name, "fidelity": line})
        progress.note(f"{arm.name}: running it again ({attempt + 1} of at most {retry_void + 1}); "
                      f"the unfaithful run is kept in {kept.name}/")
        progress.total_planned_s += SETUP_S + arm_seconds(arm)
        attempt += 1


def retry_notes(retried: dict, keep: str = "all") -> list[str]:
    """The report's line for each unfaithful run that was run again."""
    where = "its folder was removed (--keep summary)" if keep == "summary" else "it is kept in {}/"
    return [f"{arm}: run {r['run']} was not faithful ({r['fidelity']}); "
            f"{where.format(r['kept'])}, not judged, and the arm ran again"
            for arm, runs in retried.items() for r in runs]


def json_safe(v):
    """``v`` with every non-finite float as null: summary.json is strict
    JSON (a "never converged" NaN or an infinite ratio would otherwise be
    a bare NaN / Infinity token, which JSON.parse and jq reject)."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_safe(x) for x in v]
    return v


def analyse_results(exp: Experiment, plan: Plan, outdir: Path, meta: dict,
                    fidelity: dict[str, dict]) -> tuple[Path, dict]:
    """The analysis of a results folder whose arms ran (by an executor, or
    on hardware, `analyse`): summary.json, plots, report.html. Returns the
    report's path and the verdict counts."""
    p = plan.params
    results = {a.name: arm_result(outdir / a.name, a) for a in plan.arms}
    summary, verdicts = exp.analyse(p, results)
    judge(verdicts, fidelity)
    n = counts(verdicts)
    plots = exp.plot(p, results, summary, outdir)
    facts = run_facts(meta, plan, fidelity)
    (outdir / "summary.json").write_text(json.dumps(json_safe(
        {"experiment": exp.id, "executor": meta.get("executor"), "target": meta.get("target"),
         "scale": plan.scale, "summary": summary, "verdicts": [v.to_dict() for v in verdicts],
         "counts": n, "fidelity": {a: {"ok": f.get("ok"), "violations": f.get("violations"),
                                        "summary": summary_line(f)} for a, f in fidelity.items()},
         "facts": facts}), indent=2, default=str, allow_nan=False) + "\n")
    report = write_report(outdir, f"{exp.title} — {exp.source}", exp.description, facts,
                          {**p, "target": meta.get("target"), "git": meta.get("git_commit")},
                          summary, plots, verdicts, notes=meta.get("notes"))
    return report, n


def analyse(outdir: str | Path, target: str | None = None) -> Path:
    """Analyses a results folder again, or one that p4cc did not run itself:
    plan.json (from `p4cc run EXPERIMENT --plan-only`) and, per arm, what the
    host agents and the collector wrote on real servers behind a real switch
    (docs/tofino.md). Its params.json is kept (or written with the executor
    `external`). An arm p4cc ran keeps its fidelity record (ARM/fidelity.json):
    what the monitor voided stays void; external arms have none."""
    outdir = Path(outdir)
    try:
        plan = Plan.load(outdir / "plan.json")
    except (OSError, PlanError) as e:
        raise RunError(f"{outdir}: no usable plan.json ({str(e).splitlines()[0]}); make one "
                       "with `p4cc run EXPERIMENT --plan-only --out DIR`") from None
    exp = get(plan.experiment)
    missing = [a.name for a in plan.arms if not (outdir / a.name).is_dir()]
    if len(missing) == len(plan.arms):
        raise RunError(f"{outdir}: none of the plan's arm folders is there "
                       f"({', '.join(missing)}): put each arm's results in DIR/ARM/")
    meta_path = outdir / "params.json"
    try:
        meta = json.loads(meta_path.read_text())
    except (OSError, ValueError):
        meta = {"experiment": exp.id, "title": exp.title, "source": exp.source,
                "params": plan.params, "arms": [a.name for a in plan.arms],
                "git_commit": _git_commit(), "executor": "external",
                "notes": ["analysed with `p4cc analyse` from results p4cc did not run"]}
    if target:
        meta["target"] = target
    meta.setdefault("executor", "external")
    meta_path.write_text(json.dumps(meta, indent=2, default=str) + "\n")
    if missing:
        meta.setdefault("notes", []).append(f"arms without results: {', '.join(missing)}")
    report, _ = analyse_results(exp, plan, outdir, meta, fidelity_records(outdir, plan))
    return report


def fidelity_records(outdir: Path, plan: Plan) -> dict[str, dict]:
    """Each arm's fidelity record as its run wrote it, for arms that have one."""
    out = {}
    for arm in plan.arms:
        f = outdir / arm.name / "fidelity.json"
        if not f.exists():
            continue
        try:
            out[arm.name] = json.loads(f.read_text())
        except (OSError, ValueError) as e:
            # Judging without it would turn what the monitor voided into
            # passes and fails.
            raise RunError(f"{f}: unreadable fidelity record ({e}); restore it, or remove it "
                           "to judge the arm as external results") from None
    return out


class _ArmProgress:
    """The progress display as an executor sees it: the arm's own phase."""

    def __init__(self, progress: Progress, arm):
        self._p, self._arm = progress, arm
        self._started = False

    def begin(self) -> None:
        """The arm's traffic starts: setting up is over."""
        if not self._started:
            self._p.phase(self._arm.label, arm_seconds(self._arm))
            self._started = True

    def sleep(self, seconds: float, alive=None) -> None:
        self.begin()
        self._p.sleep(seconds, alive)

    def simulated(self, *args) -> None:
        self.begin()
        self._p.simulated(*args)

    def __getattr__(self, name):
        return getattr(self._p, name)
