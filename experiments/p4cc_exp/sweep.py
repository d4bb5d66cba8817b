"""`p4cc sweep`: every point of a grid × seeds as one run, each a Ray task,
on a local runtime (the machine's cores) or a cluster (--address /
RAY_ADDRESS); docs/sweeps.md.

    OUT/sweep.json       what was asked, and every point (key, grid values, seed)
    OUT/points/<key>/    each point's results folder (sweeppoint.py)
    OUT/results.parquet  a row per point and seed (sweeptable.py)
    OUT/report.html      headline metrics against each swept parameter (sweepreport.py)

A point whose folder is complete is not run again, so the same command
continues an interrupted sweep and a rerun of a finished one runs
nothing. Virtual-time points are CPU tasks (one core each); real-time
points need a machine to themselves: each asks for the custom resource
``p4cc_realtime``, of which every node declares one.
"""
from __future__ import annotations

import json
import os
import sys
import uuid
from datetime import datetime
from pathlib import Path

from . import diskest, outdirs, sweepreport, sweeptable
from .keep import KEEPS
from .params import ParamError
from .progress import SweepProgress
from .runner import ROOT, RunError
from .sweeppoint import (FAILURES, POINTS, TMP, SweepError, abandoned, complete, one_line,
                         run_point, write_json)
from .sweepplan import Point, expand, parse_grid

#: The Ray resource a real-time point takes whole; declare 1 per node.
REALTIME = "p4cc_realtime"
#: Environment a task needs on its node (the binaries' and packages' paths).
ENV_PREFIXES = ("P4CC_",)
ENV_NAMES = ("PYTHONPATH",)


class SweepInterrupted(KeyboardInterrupt):
    def __init__(self, outdir: Path, done: int, total: int):
        super().__init__(str(outdir))
        self.outdir, self.done, self.total = outdir, done, total


def task_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items()
            if k.startswith(ENV_PREFIXES) or k in ENV_NAMES}


def start_ray(address: str | None, realtime: bool):
    """Connects to the cluster at ``address`` (or RAY_ADDRESS), or starts a
    local runtime with the machine's cores and one p4cc_realtime."""
    import ray
    address = address or os.environ.get("RAY_ADDRESS") or None
    # A local runtime's workers inherit this process's environment; a
    # cluster's get the variables that matter through a runtime environment.
    env = task_env() if address else {}
    kw = dict(log_to_driver=False, logging_level="ERROR", configure_logging=True,
              runtime_env={"env_vars": env} if env else None)
    try:
        if address:
            ray.init(address=address, **kw)
        else:
            ray.init(num_cpus=os.cpu_count() or 1, resources={REALTIME: 1},
                     include_dashboard=False, **kw)
    except Exception as e:  # connection refused, a version mismatch…
        raise SweepError(f"Ray: {one_line(e)}"
                         + (f" (is a cluster running at {address}?)" if address else "")) from None
    res = ray.cluster_resources()
    if realtime:
        slots = int(res.get(REALTIME, 0))
        if slots < 1:
            ray.shutdown()
            raise SweepError(f"no node of the cluster declares the {REALTIME} resource that "
                             "real-time points need: start each node with ray start … "
                             f"--resources '{{\"{REALTIME}\": 1}}' (docs/sweeps.md)")
        return slots
    return max(1, int(res.get("CPU", 1)))


def claim_token(outdir: Path, proposed: str) -> str:
    """The folder's token, set once: the first sweep over the folder links
    its ``proposed`` one into place (a hard link fails where a file is, so
    of two sweeps started together exactly one wins), every other takes
    it. Read from sweep.json and written after it, two sweeps started at
    once each kept its own and the loser's runs found another's token."""
    path = outdir / "sweep.token"
    tmp = outdir / f".sweep.token.{uuid.uuid4().hex[:8]}"
    tmp.write_text(proposed)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return path.read_text().strip() or proposed


def prepare_out(outdir: Path, request: dict, points: list[Point]) -> str:
    """Writes sweep.json (keeping the folder's token, so that tasks of a
    sweep still running over the same folder keep finding it); returns
    the token."""
    (outdir / POINTS).mkdir(parents=True, exist_ok=True)
    (outdir / FAILURES).mkdir(exist_ok=True)
    token = uuid.uuid4().hex
    try:
        old = json.loads((outdir / "sweep.json").read_text())
        if old.get("experiment") != request["experiment"]:
            raise SweepError(f"{outdir} holds a sweep of {old.get('experiment')}: give another --out")
        token = old.get("token") or token
    except (OSError, ValueError):
        pass
    token = claim_token(outdir, token)
    write_json(outdir / "sweep.json", {**request, "token": token, "points": [
        {"key": p.key, "grid": p.grid, "seed": p.seed} for p in points]})
    return token


def check_disk(points: list[Point], outdir: Path, keep: str, slots: int) -> str:
    """The disk the points still to run will write: what each keeps, and
    the largest peak of as many as run at once on top."""
    ests = [diskest.estimate(_plan(p), keep) for p in points]
    if not ests:
        return "disk: nothing to run"
    kept = sum(e.kept for e in ests)
    peak = kept + sum(sorted((e.peak - e.kept for e in ests), reverse=True)[:slots])
    ok, free = diskest.fits(peak, outdir)
    line = (f"disk: about {diskest.human(kept)} kept for {len(points)} runs, "
            f"{diskest.human(peak)} at the peak; {diskest.human(free)} free")
    if not ok:
        raise SweepError(f"not enough disk in {outdir}: the sweep writes about "
                         f"{diskest.human(peak)} at its peak and {diskest.human(free)} is free; "
                         "use --keep summary, fewer points, shorter runs, or free space")
    return line


def tidy(outdir: Path) -> None:
    """Removes what interrupted runs left in tmp/: folders whose process is
    gone, of points that are complete by now. A run still under way (of
    another sweep over the same folder, or on another host) is left alone."""
    import shutil
    for d in (outdir / TMP).glob("*.*"):
        if complete(outdir / POINTS / d.name.split(".", 1)[0]) and abandoned(d):
            shutil.rmtree(d, ignore_errors=True)


def _plan(p: Point):
    from p4cc_topo.plan import Plan
    return Plan.from_json(p.plan)


def sweep(exp, grid_items: list[str], seeds: int = 1, target: str = "sim",
          scale: str = "default", overrides: list[str] | None = None, out: str | None = None,
          address: str | None = None, retries: int = 1, keep: str = "series",
          links: str = "p4cc", stream=None) -> tuple[Path, dict]:
    """Runs the sweep; returns the report's path and the counts of
    points done, failed and run now."""
    stream = stream or sys.stderr
    if keep not in KEEPS:
        raise ParamError(f"--keep {keep}: use {', '.join(KEEPS)}")
    if retries < 0:
        raise ParamError("--retries must be 0 or more")
    if scale == "paper":
        if target not in ("auto", "sim"):
            raise ParamError(f"the paper's scale runs in virtual time: drop --target {target} "
                             "(or give --target sim)")
        target = "sim"
    grid = parse_grid(grid_items)
    points = expand(exp, grid, seeds, target, overrides, scale)
    outdir = Path(out) if out else outdirs.new_dir(ROOT / "results", f"sweep-{exp.id}-{outdirs.stamp()}")
    request = {"experiment": exp.id, "grid": grid, "seeds": seeds, "target": target,
               "scale": scale, "set": list(overrides or []), "keep": keep, "retries": retries,
               "links": links, "asked": datetime.now().isoformat(timespec="seconds"),
               "command": "p4cc sweep " + " ".join(sys.argv[2:]) if sys.argv[1:2] == ["sweep"] else None}
    todo = [p for p in points if not complete(outdir / POINTS / p.key)]
    realtime = target != "sim"
    progress = SweepProgress(len(points), 1, stream=stream)
    n_seeds = len({p.seed for p in points})
    progress.note(f"{exp.id}: {len(points)} runs ({len(points) // max(1, n_seeds)} grid point"
                  f"{'s' if len(points) // max(1, n_seeds) != 1 else ''} × {n_seeds} seed"
                  f"{'s' if n_seeds != 1 else ''}); "
                  f"{len(points) - len(todo)} already complete, {len(todo)} to run; results in {outdir}")
    token = prepare_out(outdir, request, points)
    counts = {"done": len(points) - len(todo), "failed": 0, "ran": 0, "total": len(points)}
    if todo:
        counts = _run_on_ray(exp, outdir, todo, points, target, keep, links, retries, token,
                             address, realtime, progress, counts)
    tidy(outdir)
    rows = sweeptable.rows(outdir, exp, points)
    sweeptable.write(rows, outdir / "results.parquet")
    report = sweepreport.write(outdir, exp, request, rows)
    counts["failed"] = sum(r["status"] == "failed" for r in rows)
    counts["done"] = sum(r["status"] == "done" for r in rows)
    progress.finish(f"sweep of {exp.id} finished: {counts['done']} of {len(points)} runs done, "
                    f"{counts['failed']} failed, {counts['ran']} run now")
    return report, counts


def _run_on_ray(exp, outdir, todo, points, target, keep, links, retries, token, address,
                realtime, progress, counts) -> dict:
    import ray
    slots = start_ray(address, realtime)
    progress.slots = slots
    try:
        progress.note(check_disk(todo, outdir, keep, slots))
        progress.note(f"Ray: {slots} {'real-time slot' if realtime else 'core'}"
                      f"{'s' if slots != 1 else ''}"
                      + (f" ({REALTIME}: one real-time point per node at a time)" if realtime else ""))
        opts = {"num_cpus": 1, "max_retries": retries, "retry_exceptions": False}
        if realtime:
            opts["resources"] = {REALTIME: 1}
        task = ray.remote(run_point).options(**opts)
        pending = {task.remote(str(outdir), p.key, p.plan, target, keep, links, retries, token): p
                   for p in todo}
        done, failed = counts["done"], 0
        progress.update(done, min(len(pending), slots), failed, force=True)
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1, timeout=2.0)
                for ref in ready:
                    p = pending.pop(ref)
                    try:
                        res = ray.get(ref)
                    except Exception as e:  # the task's node or worker died past its retries
                        res = {"status": "failed", "error": one_line(e), "ran": True}
                        write_json(outdir / FAILURES / f"{p.key}.json",
                                    {"key": p.key, "error": res["error"], "attempts": retries + 1})
                    wall = None
                    if res.get("status") == "done":
                        done += 1
                        try:
                            wall = json.loads((outdir / POINTS / p.key / "point.json")
                                              .read_text()).get("wall_s")
                        except (OSError, ValueError):
                            pass
                    else:
                        failed += 1
                        progress.note(f"failed: {p.label()}: {res.get('error')}")
                    counts["ran"] += bool(res.get("ran"))
                    progress.update(done, min(len(pending), slots), failed,
                                    wall if res.get("ran") else None)
                progress.draw()
        except KeyboardInterrupt:
            for ref in pending:
                try:
                    ray.cancel(ref, force=True)
                except Exception:
                    pass
            rows = sweeptable.rows(outdir, exp, points)
            sweeptable.write(rows, outdir / "results.parquet")
            raise SweepInterrupted(outdir, sum(r["status"] == "done" for r in rows),
                                   len(points)) from None
        counts["done"], counts["failed"] = done, failed
        return counts
    finally:
        ray.shutdown()
