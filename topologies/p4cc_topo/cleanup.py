"""Remove what runs left behind: processes, links, namespaces, state files.

Three layers make sure nothing outlives a run:

1. :class:`p4cc_topo.network.Network` tears down on exit, exception,
   Ctrl-C, SIGTERM and SIGHUP (its context manager and signal handlers).
2. Processes it starts die with it (PR_SET_PDEATHSIG), and a watchdog
   process (``python -m p4cc_topo.cleanup --watch RUN``) notices when the
   owner dies without tearing down (SIGKILL, a crash) and runs
   :func:`cleanup_run` for it within a second.
3. :func:`cleanup_all` (``p4cc clean``) removes everything of every run
   whose owner is dead — found from state files *and* by name, so it works
   even when the state file is gone.

Only names of :mod:`p4cc_topo.naming`'s scheme are ever touched
(``p4cc-<run>-*`` namespaces, ``p4cc<run>s<i>e<p>`` links, processes whose
environment has ``P4CC_RUN_ID=<run>``, processes inside those namespaces),
and a run whose owner is alive is left alone unless ``force=True``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .naming import ENV_RUN_ID, RUN_ID_FULL_RE, run_of_link, run_of_netns
from .state import owner_alive, proc_alive, proc_start_time, read_states

NETNS_DIR = Path("/run/netns")


# ------------------------------------------------------------------ discovery

def list_netns() -> list[str]:
    try:
        return sorted(os.listdir(NETNS_DIR))
    except OSError:
        return []


def list_links() -> list[str]:
    """Interface names in the current (root) namespace."""
    try:
        out = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True,
                             check=True).stdout
        return [l["ifname"] for l in json.loads(out or "[]")]
    except (OSError, subprocess.CalledProcessError, ValueError):
        names = []
        try:
            names = os.listdir("/sys/class/net")
        except OSError:
            pass
        return names


def _ancestors() -> set[int]:
    out = set()
    pid = os.getpid()
    while pid > 1 and pid not in out:
        out.add(pid)
        try:
            with open(f"/proc/{pid}/stat") as f:
                data = f.read()
            pid = int(data[data.rfind(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return out


def marked_processes() -> dict[str, list[int]]:
    """run id → pids whose environment carries ``P4CC_RUN_ID=<run>``."""
    out: dict[str, list[int]] = {}
    key = ENV_RUN_ID.encode() + b"="
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                env = f.read()
        except OSError:
            continue
        if key not in env:
            continue
        for item in env.split(b"\0"):
            if item.startswith(key):
                rid = item[len(key):].decode(errors="replace")
                if RUN_ID_FULL_RE.match(rid):
                    out.setdefault(rid, []).append(int(d))
                break
    return out


def netns_pids(ns: str) -> list[int]:
    try:
        r = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
        return [int(x) for x in r.stdout.split() if x.isdigit()]
    except OSError:
        return []


def find_leftovers(with_netns_pids: bool = False) -> dict[str, dict]:
    """Every run id seen anywhere (state files, namespaces, links, process
    markers), with what carries it and whether its owner lives.
    ``with_netns_pids`` also lists the processes inside each namespace
    (one ``ip netns pids`` per namespace; :func:`cleanup_run` does it anyway)."""
    runs: dict[str, dict] = {}
    all_ns = list_netns()

    def run(rid):
        return runs.setdefault(rid, {"netns": [], "links": [], "pids": [], "state": None,
                                     "owner_alive": False})

    for rid, (path, data) in read_states().items():
        r = run(rid)
        r["state"] = str(path)
        r["state_data"] = data
        if data is None:
            # unreadable: being written right now, or corrupt. Young = alive.
            try:
                r["owner_alive"] = time.time() - path.stat().st_mtime < 30
            except OSError:
                r["owner_alive"] = False
        else:
            r["owner_alive"] = owner_alive(data)
    for ns in all_ns:
        rid = run_of_netns(ns)
        if rid:
            run(rid)["netns"].append(ns)
    for ln in list_links():
        rid = run_of_link(ln)
        if rid:
            run(rid)["links"].append(ln)
    for rid, pids in marked_processes().items():
        run(rid)["pids"].extend(pids)
    for rid, r in runs.items():
        if with_netns_pids:
            for ns in r["netns"]:
                for pid in netns_pids(ns):
                    if pid not in r["pids"]:
                        r["pids"].append(pid)
        data = r.get("state_data") or {}
        for p in data.get("pids", []):
            if proc_alive(p.get("pid", -1), p.get("start")) and p["pid"] not in r["pids"]:
                r["pids"].append(p["pid"])
    return runs


# ------------------------------------------------------------------- removal

def kill_pids(pids: list[int], timeout: float = 3.0) -> list[int]:
    """SIGTERM, wait up to ``timeout``, SIGKILL. Never this process or its
    ancestors. Returns the pids that were signalled."""
    protect = _ancestors()
    targets = []
    for pid in set(pids):
        if pid in protect or pid <= 1:
            continue
        st = proc_start_time(pid)
        if st is None:
            continue
        targets.append((pid, st))
    for pid, _ in targets:
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(proc_alive(pid, st) for pid, st in targets):
            break
        time.sleep(0.05)
    for pid, st in targets:
        if proc_alive(pid, st):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline and any(proc_alive(pid, st) for pid, st in targets):
        time.sleep(0.05)
    return [pid for pid, _ in targets]


def _ip_batch(lines: list[str], netns: str | None = None) -> None:
    if not lines:
        return
    cmd = ["ip"] + (["-n", netns] if netns else []) + ["-force", "-batch", "-"]
    subprocess.run(cmd, input="\n".join(lines) + "\n", capture_output=True, text=True)


def delete_links(names: list[str]) -> None:
    _ip_batch([f"link del dev {n}" for n in names])


def delete_netns(names: list[str]) -> None:
    for ns in names:
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def cleanup_run(run_id: str, info: dict | None = None, timeout: float = 10.0) -> dict:
    """Remove everything of one run: its processes (by state file, marker and
    namespace), links, namespaces and state file. Returns what was removed."""
    if not RUN_ID_FULL_RE.match(run_id):
        raise ValueError(f"not a p4cc run id: {run_id!r}")
    if info is None:
        info = find_leftovers().get(run_id, {"netns": [], "links": [], "pids": [], "state": None})
    state_data = info.get("state_data") or {}
    # namespaces/links the state file planned, even if not (yet) seen
    netns = sorted(set(info.get("netns", [])) | {n for n in state_data.get("netns", [])
                                                  if run_of_netns(n) == run_id})
    links = sorted(set(info.get("links", [])) | {l for l in state_data.get("links", [])
                                                 if run_of_link(l) == run_id})
    pids = list(info.get("pids", []))
    for ns in netns:
        pids.extend(netns_pids(ns))
    killed = kill_pids(pids)
    # links first (deleting one veth end removes both, synchronously), then
    # the namespaces (their deletion is asynchronous in the kernel)
    present_links = set(list_links())
    delete_links([l for l in links if l in present_links])
    present_ns = set(list_netns())
    delete_netns([n for n in netns if n in present_ns])
    # late processes (a namespace exec racing us) and stragglers
    deadline = time.monotonic() + timeout
    while True:
        left_links = [l for l in list_links() if run_of_link(l) == run_id]
        left_ns = [n for n in list_netns() if run_of_netns(n) == run_id]
        if not left_links and not left_ns:
            break
        if time.monotonic() > deadline:
            break
        for ns in left_ns:
            killed += kill_pids(netns_pids(ns))
        delete_links(left_links)
        delete_netns(left_ns)
        time.sleep(0.1)
    if info.get("state"):
        sp = Path(info["state"])
        for p in [sp] + list(sp.parent.glob(sp.name + ".tmp*")):
            try:
                p.unlink()
            except FileNotFoundError:
                pass
    return {"netns": netns, "links": links, "pids": sorted(set(killed)),
            "left": {"links": [l for l in list_links() if run_of_link(l) == run_id],
                     "netns": [n for n in list_netns() if run_of_netns(n) == run_id]}}


def cleanup_all(force: bool = False, dry_run: bool = False, verbose: bool = False,
                min_age: float = 0.0, only: set[str] | None = None) -> dict:
    """Remove what every *dead* run left (``force``: live runs too).

    ``min_age``: leave dead runs whose state file changed less than this many
    seconds ago (a new run's opportunistic sweep uses it, so it never races a
    test that is inspecting a run it just killed). ``only``: these run ids.

    Returns ``{"cleaned": {run_id: {"netns": [...], "links": [...], "pids":
    [...]}}, "skipped": {run_id: reason}}``.
    """
    runs = find_leftovers(with_netns_pids=dry_run)
    report: dict = {"cleaned": {}, "skipped": {}, "dry_run": dry_run}
    now = time.time()
    for rid, info in sorted(runs.items()):
        if only is not None and rid not in only:
            continue
        if info.get("owner_alive") and not force:
            data = info.get("state_data") or {}
            report["skipped"][rid] = f"run is live (owner pid {data.get('owner_pid', '?')})"
            continue
        if min_age and info.get("state"):
            try:
                age = now - Path(info["state"]).stat().st_mtime
            except OSError:
                age = min_age
            if age < min_age:
                report["skipped"][rid] = f"dead for less than {min_age:.0f} s"
                continue
        if dry_run:
            report["cleaned"][rid] = {k: info.get(k) for k in ("netns", "links", "pids", "state")}
            continue
        res = cleanup_run(rid, info)
        report["cleaned"][rid] = res
        if verbose:
            print(f"p4cc clean: run {rid}: {len(res['pids'])} processes, {len(res['links'])} links, "
                  f"{len(res['netns'])} namespaces removed", file=sys.stderr)
    return report


def format_report(report: dict) -> str:
    lines = []
    for rid, r in report.get("cleaned", {}).items():
        parts = []
        for k in ("pids", "links", "netns"):
            v = r.get(k) or []
            if v:
                parts.append(f"{k} {', '.join(map(str, v))}")
        verb = "would remove" if report.get("dry_run") else "removed"
        lines.append(f"run {rid}: {verb} " + ("; ".join(parts) if parts else "its state file"))
        left = r.get("left") or {}
        if left.get("links") or left.get("netns"):
            lines.append(f"run {rid}: COULD NOT REMOVE {left}")
    for rid, why in report.get("skipped", {}).items():
        lines.append(f"run {rid}: left alone: {why}")
    return "\n".join(lines) if lines else "nothing to clean"


# ------------------------------------------------------------------ watchdog

def start_watchdog(run_id: str, state_path: Path, log_path: Path | None = None) -> subprocess.Popen:
    """A detached process that cleans the run up if this process dies first."""
    pkg_parent = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env[ENV_RUN_ID] = run_id
    out = open(log_path, "ab") if log_path else subprocess.DEVNULL
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "p4cc_topo.cleanup", "--watch", run_id,
             "--owner", str(os.getpid()), "--state", str(state_path)],
            env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True)
    finally:
        if log_path:
            out.close()


def _watch(run_id: str, owner: int, state: Path) -> int:
    """Wait for ``owner`` to exit; if its state file is still there, clean."""
    start = proc_start_time(owner)
    if start is None:
        return 0
    try:
        import select
        fd = os.pidfd_open(owner)
        poller = select.poll()
        poller.register(fd, select.POLLIN)
    except (AttributeError, OSError):
        poller = None
    # the owner's own teardown removes the state file: then there is nothing to do
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        if not state.exists():
            return 0
        if poller is not None:
            if poller.poll(500):
                break
        else:
            time.sleep(0.5)
            if not proc_alive(owner, start):
                break
        if not proc_alive(owner, start):
            break
    if not state.exists():
        return 0
    try:
        data = json.loads(state.read_text())
    except (OSError, ValueError):
        data = None
    if data and owner_alive(data):
        return 0
    time.sleep(0.2)  # let PR_SET_PDEATHSIG kills land first
    res = cleanup_run(run_id)
    print(f"p4cc watchdog: owner {owner} of run {run_id} died; cleaned up: {res}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m p4cc_topo.cleanup",
                                 description="remove what dead p4cc runs left behind")
    ap.add_argument("--force", action="store_true", help="also tear down runs whose owner is alive")
    ap.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    ap.add_argument("--watch", metavar="RUN", help=argparse.SUPPRESS)
    ap.add_argument("--owner", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--state", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.watch:
        return _watch(a.watch, a.owner, Path(a.state))
    rep = cleanup_all(force=a.force, dry_run=a.dry_run)
    print(format_report(rep))
    return 0


if __name__ == "__main__":
    sys.exit(main())
