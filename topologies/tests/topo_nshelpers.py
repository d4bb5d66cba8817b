"""What the system shows of a run, found without p4cc_topo's own code."""
import os
import subprocess
import time
from pathlib import Path

import pytest

from p4cc_topo import naming
from p4cc_topo.state import STATE_DIRS


def leftovers(rid: str) -> dict:
    """What the system shows of run ``rid``, found without p4cc_topo's code."""
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    pids = []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            env = Path(f"/proc/{d}/environ").read_bytes()
        except OSError:
            continue
        if f"\0P4CC_RUN_ID={rid}\0".encode() in b"\0" + env + b"\0":
            try:
                stat = Path(f"/proc/{d}/stat").read_text()
                if stat[stat.rfind(")") + 2] == "Z":
                    continue
            except OSError:
                continue
            pids.append(int(d))
    state = [p for d in STATE_DIRS for p in [d / f"{rid}.json"] if p.exists()]
    return {
        "netns": [l.split()[0] for l in ns.splitlines() if l.startswith(f"p4cc-{rid}-")],
        "links": [n for n in (l.split(":")[1].strip().split("@")[0] for l in links.splitlines())
                  if n.startswith(f"p4cc{rid}s")],
        "pids": pids,
        "state": [str(p) for p in state],
    }


def assert_clean(rid: str, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while True:
        left = leftovers(rid)
        if not any(left.values()):
            return
        if time.monotonic() > deadline:
            pytest.fail(f"run {rid} left {left}")
        time.sleep(0.1)


def fresh_run_id() -> str:
    while True:
        rid = naming.new_run_id()
        if not any(leftovers(rid).values()):
            return rid


