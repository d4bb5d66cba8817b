"""Per-run state files: what a run created, and whether its owner still lives.

A run writes ``/run/p4cc/<run>.json`` (``/tmp/p4cc`` when ``/run`` is not
writable) *before* it creates anything, listing every namespace and link it
is about to create, and adds each process it starts. When the owner dies
without cleaning up (SIGKILL, a crash, a power cut of the Python process),
:func:`p4cc_topo.cleanup.cleanup_all` finds the file, sees the owner is gone
(pid + kernel start time, so a recycled pid does not fool it) and removes
what is listed, plus anything else carrying the run id.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from .naming import RUN_ID_FULL_RE, check_run_id, new_run_id

STATE_DIRS = (Path("/run/p4cc"), Path("/tmp/p4cc"))


def state_dir() -> Path:
    for d in STATE_DIRS:
        try:
            d.mkdir(parents=True, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            continue
    raise RuntimeError("no writable state directory (/run/p4cc or /tmp/p4cc)")


def proc_start_time(pid: int) -> int | None:
    """The kernel start time of a process (clock ticks since boot), or None."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read().decode(errors="replace")
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'
    rest = data[data.rfind(")") + 2:].split()
    try:
        return int(rest[19])  # field 22 overall; rest starts at field 3
    except (IndexError, ValueError):
        return None


def proc_alive(pid: int, start: int | None) -> bool:
    st = proc_start_time(pid)
    if st is None:
        return False
    if start is not None and st != start:
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().decode(errors="replace")
        state = fields[fields.rfind(")") + 2:].split()[0]
        if state in ("Z", "X"):
            return False
    except OSError:
        return False
    return True


class RunState:
    """The state file of one run (owned by the current process)."""

    def __init__(self, run_id: str, path: Path, data: dict):
        self.run_id = run_id
        self.path = path
        self.data = data
        self._lock = threading.RLock()

    @classmethod
    def create(cls, run_id: str | None = None, **info) -> "RunState":
        """Reserve a run id (atomically, O_EXCL) and write its first state."""
        d = state_dir()
        for attempt in range(200):
            rid = check_run_id(run_id) if run_id else new_run_id()
            path = d / f"{rid}.json"
            if not run_id and any((x / f"{rid}.json").exists() for x in STATE_DIRS):
                continue
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                if run_id:
                    raise RuntimeError(f"run id {run_id} is in use ({path} exists)") from None
                continue
            data = {
                "run_id": rid,
                "owner_pid": os.getpid(),
                "owner_start": proc_start_time(os.getpid()),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                "status": "building",
                "netns": [],
                "links": [],
                "pids": [],
                "files": [],
            }
            data.update(info)
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1)
            return cls(rid, path, data)
        raise RuntimeError(f"could not reserve a run id in {d}")

    def save(self) -> None:
        with self._lock:
            tmp = self.path.with_suffix(f".json.tmp{threading.get_ident()}")
            with open(tmp, "w") as f:
                json.dump(self.data, f, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)

    def add(self, key: str, items) -> None:
        with self._lock:
            lst = self.data.setdefault(key, [])
            for it in items:
                if it not in lst:
                    lst.append(it)
            self.save()

    def add_pid(self, pid: int, what: str) -> None:
        with self._lock:
            self.data.setdefault("pids", []).append(
                {"pid": pid, "start": proc_start_time(pid), "what": what})
            self.save()

    def set(self, **kv) -> None:
        with self._lock:
            self.data.update(kv)
            self.save()

    def remove(self) -> None:
        with self._lock:
            for p in [self.path] + list(self.path.parent.glob(self.path.name + ".tmp*")):
                try:
                    p.unlink()
                except FileNotFoundError:
                    pass


def read_states() -> dict[str, tuple[Path, dict | None]]:
    """Every run's state file: run id → (path, parsed data or None if unreadable)."""
    out: dict[str, tuple[Path, dict | None]] = {}
    for d in STATE_DIRS:
        if not d.is_dir():
            continue
        for p in d.glob("*.json"):
            rid = p.stem
            if not RUN_ID_FULL_RE.match(rid):
                continue
            try:
                data = json.loads(p.read_text())
            except (OSError, ValueError):
                data = None
            out[rid] = (p, data)
    return out


def owner_alive(data: dict | None) -> bool:
    if not data:
        return False
    pid = data.get("owner_pid")
    if not isinstance(pid, int):
        return False
    return proc_alive(pid, data.get("owner_start"))
