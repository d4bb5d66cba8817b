"""One point of a sweep, as a Ray task runs it on whichever node it lands:
an ordinary run of the point's plan into a temporary folder beside the
sweep's points, renamed into place when it is complete. So a point's
folder either is whole (summary.json and all) or is not there, and a task
that Ray runs again after its node died finds the point done and does
nothing.

    OUT/points/<key>/         a finished point: the run's results folder, and
        point.json            where and when it ran (node, host, attempt, wall time)
        run.log               its run log
    OUT/tmp/<key>.<id>/       a point being run (a crashed one's leftovers)
    OUT/failures/<key>.json   the last error of a point that failed every try
    OUT/attempts.log          a line per run started (key, node, attempt, time):
                              what ran where, and that no finished point ran again
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import time
import traceback
import uuid
from datetime import datetime
from pathlib import Path

POINTS, TMP, FAILURES, ATTEMPTS = "points", "tmp", "failures", "attempts.log"
OWNER = "owner.json"


class SweepError(RuntimeError):
    pass


def complete(folder: Path) -> bool:
    """A point's folder holds a finished result: the run wrote summary.json
    after everything else, and the folder got its name only after that."""
    return (Path(folder) / "summary.json").is_file()


def node_id() -> str:
    try:
        import ray
        if ray.is_initialized():
            return ray.get_runtime_context().get_node_id()
    except Exception:  # outside Ray (tests, a plain call)
        pass
    return "local"


def write_whole(path: Path, data: bytes) -> None:
    """``path`` appears whole or not at all, also while another sweep over
    the same folder writes it: each writer has a temporary name of its
    own, and a rename replaces atomically."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_json(path: Path, data: dict) -> None:
    write_whole(path, (json.dumps(data, indent=1, default=str) + "\n").encode())


def abandoned(tmp: Path) -> bool:
    """A run folder in tmp/ whose process is gone (on this host; one of
    another host's is never judged from here)."""
    try:
        owner = json.loads((tmp / OWNER).read_text())
    except (OSError, ValueError):
        return True  # no owner: left by a rename's loser, or older than owners
    if owner.get("host") != socket.gethostname():
        return False
    try:
        os.kill(int(owner["pid"]), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError, KeyError):
        return False
    return False


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def run_point(out: str, key: str, plan_json: dict, target: str, keep: str, links: str,
              retries: int, token: str) -> dict:
    """Runs one point unless it is done; up to ``retries`` more tries on an
    exception (a failing run, a missing binary). Returns its status."""
    from p4cc_topo.plan import Plan

    from .runner import run
    out = Path(out)
    final = out / POINTS / key
    if complete(final):
        return {"key": key, "status": "done", "ran": False}
    # Every node must see the same OUT (a shared filesystem on a cluster):
    # a point written where the driver cannot read it would be lost.
    try:
        seen = json.loads((out / "sweep.json").read_text()).get("token")
    except (OSError, ValueError):
        seen = None
    if seen != token:
        raise SweepError(f"{out} is not the sweep's folder on node {socket.gethostname()}: "
                         "--out must be a path every node of the cluster shares")
    error = ""
    for attempt in range(1, retries + 2):
        if complete(final):  # another sweep over the same folder finished it meanwhile
            return {"key": key, "status": "done", "ran": attempt > 1}
        tmp = out / TMP / f"{key}.{uuid.uuid4().hex[:8]}"
        tmp.mkdir(parents=True)
        # whose run this is: tidy() removes it only once this process is gone
        (tmp / OWNER).write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid()}))
        started, t0 = datetime.now().isoformat(timespec="milliseconds"), time.monotonic()
        # one write of one short line with O_APPEND: lines of parallel tasks do not interleave
        with open(out / ATTEMPTS, "a") as f:
            f.write(json.dumps({"key": key, "node": node_id(), "host": socket.gethostname(),
                                "attempt": attempt, "started": started, "tmp": tmp.name}) + "\n")
        try:
            with open(tmp / "run.log", "w") as log, contextlib.redirect_stderr(log), \
                    contextlib.redirect_stdout(log):
                run(plan=Plan.from_json(plan_json), target=target, out=str(tmp), keep=keep,
                    links=links)
            write_json(tmp / "point.json", {
                "key": key, "node": node_id(), "host": socket.gethostname(), "pid": os.getpid(),
                "attempt": attempt, "started": started,
                "finished": datetime.now().isoformat(timespec="milliseconds"),
                "wall_s": round(time.monotonic() - t0, 3), "run_id": uuid.uuid4().hex})
            (tmp / OWNER).unlink()
            try:
                os.rename(tmp, final)
            except OSError:
                # another sweep over the same OUT finished it first: keep theirs
                shutil.rmtree(tmp, ignore_errors=True)
                if not complete(final):
                    raise
            with contextlib.suppress(FileNotFoundError):
                (out / FAILURES / f"{key}.json").unlink()
            return {"key": key, "status": "done", "ran": True, "attempt": attempt}
        except Exception as e:  # noqa: BLE001 - every failure is the point's, reported
            error = one_line(e)
            log_tail = ""
            with contextlib.suppress(OSError):
                log_tail = (tmp / "run.log").read_text(errors="replace")[-2000:]
            last = {"key": key, "error": error, "attempts": attempt, "node": node_id(),
                    "host": socket.gethostname(), "at": datetime.now().isoformat(timespec="seconds"),
                    "traceback": traceback.format_exc()[-4000:], "log_tail": log_tail}
            with open(out / ATTEMPTS, "a") as f:
                f.write(json.dumps({"key": key, "attempt": attempt, "error": error,
                                    "log_tail": log_tail[-300:]}) + "\n")
            shutil.rmtree(tmp, ignore_errors=True)
    (out / FAILURES).mkdir(exist_ok=True)
    write_json(out / FAILURES / f"{key}.json", last)
    return {"key": key, "status": "failed", "ran": True, "error": error, "attempts": retries + 1}
