"""The virtual-time executor: each arm runs in ``p4cc-sim`` (sim/), built
from the same pipeline, queue model, transport and algorithms as the
namespace lab. The simulator's switches serve P4Runtime and the admin API
while virtual time stands still, so the controller programs them exactly as
it programs the embedded target; counters are read and settings changed at
the plan's instants with time paused. The results folder is the lab's.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
from pathlib import Path

from p4cc_control.program import Endpoint, program
from p4cc_topo.plan import ArmPlan, Plan

from .arm_steps import ExecutorError, apply_event, read_ports, schedule

ROOT = Path(__file__).resolve().parents[2]
#: Kernel congestion controls and the transport algorithm that models each
#: in virtual time (there is no kernel there); sim/src/agent.rs has the same list.
#: Kernel BBR (tcp_bbr, BBRv1) is p4cc's `bbr`, written after tcp_bbr.c.
KERNEL_MODELS = {"reno": "reno", "cubic": "cubic", "dctcp": "dctcp", "bbr": "bbr"}
#: After the traffic ends, flows get this long (virtual) to finish.
GRACE_S = 15.0
READY_TIMEOUT_S = 60.0


#: How long a simulator that is done (or told so) gets to exit by itself.
EXIT_WAIT_S = 5.0


def find_sim() -> Path:
    env = os.environ.get("P4CC_SIM_BIN")
    built = Path(env) if env else ROOT / "sim/target/release/p4cc-sim"
    if not (built.is_file() and os.access(built, os.X_OK)):
        raise ExecutorError("the simulator p4cc-sim is not built: run `make setup` (or cargo build "
                            "--release --manifest-path sim/Cargo.toml)")
    return built


class SimProcess:
    """One p4cc-sim run: JSON lines in and out (sim/src/control.rs)."""

    def __init__(self, plan_path: Path, arm: str, outdir: Path, log: Path):
        self.log = open(log, "ab")
        self.proc = subprocess.Popen([str(find_sim()), str(plan_path), "--arm", arm,
                                      "--out", str(outdir)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, bufsize=1)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)

    def read(self, timeout: float | None = None) -> dict:
        """The next event line (waiting at most ``timeout`` seconds)."""
        if timeout is not None and not self.sel.select(timeout):
            raise ExecutorError(f"p4cc-sim said nothing for {timeout:.0f} s (see {self.log.name})")
        line = self.proc.stdout.readline()
        if not line:
            rc = self.proc.wait()
            tail = Path(self.log.name).read_text(errors="replace").strip().splitlines()[-1:] or [""]
            raise ExecutorError(f"p4cc-sim exited ({rc}): {tail[0]}")
        return json.loads(line)

    def send(self, **cmd) -> None:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def until(self, kind: str, progress) -> dict:
        """Reads events, showing progress, until one of ``kind``."""
        while True:
            ev = self.read()
            if ev.get("event") == "progress":
                progress.simulated(ev["sim_s"], ev["until_s"], ev["events_per_s"], ev["wall_s"],
                                   ev.get("finishing", False))
            elif ev.get("event") == kind:
                return ev
            elif ev.get("event") == "done":
                return ev

    def close(self) -> None:
        # After "done" the simulator exits by itself within moments, and a
        # profiling build (make sim-pgo) writes its profile only then; the
        # closed command channel ends one that is still waiting. Killed
        # only when it does neither in time.
        killed = False
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=EXIT_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                killed = True
        why = f" (killed: still running {EXIT_WAIT_S:.0f} s after its end)" if killed else ""
        self.log.write(f"[executor] p4cc-sim exited with {self.proc.returncode}{why}\n".encode())
        self.log.close()


def with_busy(ports: dict, busy: dict | None) -> dict:
    """Each measured port's reading gets ``wire_busy_ns``: how long its link
    had spent serializing frames by the paused instant, to the nanosecond
    (the simulator's ``paused`` event). The utilisation is taken from it:
    between two readings on whole nanoseconds it grows by at most the time
    between them, so a utilisation can never exceed 1 — which bytes counted
    as whole frames could (a frame on the wire at a reading is all in or
    all out)."""
    for key, row in ports.items():
        switch, _, port = key.rpartition(":")
        ns = (busy or {}).get(switch, {}).get(port)
        if ns is not None:
            row["wire_busy_ns"] = int(ns)
    return ports


class VirtualTime:
    """Runs plans in virtual time (docs/simulator.md)."""

    kind = "virtual time"

    def __init__(self):
        self.notes: list[str] = []
        self.target = "sim"
        self.totals = {"sim_s": 0.0, "events": 0, "wall_s": 0.0}

    def prepare(self, plan: Plan) -> list[str]:
        find_sim()
        for arm in plan.arms:
            ext = arm.external()
            if ext:
                raise ExecutorError(
                    f"arm {arm.name} runs an external program ({' '.join(ext[0].command)}): "
                    "only the namespace lab runs programs; drop --target sim")
            for cc in sorted(arm.kernel_ccs()):
                if cc not in KERNEL_MODELS:
                    raise ExecutorError(
                        f"arm {arm.name}: kernel TCP '{cc}' has no implementation in p4cc's "
                        f"transport, so it cannot run in virtual time (these can: "
                        f"{', '.join(KERNEL_MODELS)})")
        kernel = sorted(set().union(*(a.kernel_ccs() for a in plan.arms)))
        self.notes.append("virtual time: exact by construction (no real-time fidelity to watch)")
        if kernel:
            self.notes.append(f"kernel TCP ({', '.join(kernel)}) runs as p4cc's transport "
                              "implementation of the same algorithm in virtual time")
        return self.notes

    def finish(self) -> None:
        pass

    def describe(self) -> dict:
        return {"executor": self.kind, "time": "virtual time", "target": self.target,
                "notes": self.notes, "virtual_time": dict(self.totals)}

    def run_arm(self, plan: Plan, arm: ArmPlan, outdir: Path, progress) -> dict:
        outdir.mkdir(parents=True, exist_ok=True)
        logs = outdir / "logs"
        logs.mkdir(exist_ok=True)
        plan_path = outdir.parent / "plan.json"
        if not plan_path.exists():
            plan.write(plan_path)
        sim = SimProcess(plan_path, arm.name, outdir, logs / "sim.log")
        try:
            return self._run(arm, sim, outdir, logs, progress)
        except KeyboardInterrupt:
            # The simulator got the same SIGINT: it writes what it has.
            try:
                sim.proc.send_signal(signal.SIGINT)
                done = sim.until("done", progress)
                (outdir / "measure.json").write_text(json.dumps(
                    {"incomplete": True, "sim_s": done.get("sim_s")}, indent=1) + "\n")
            except Exception:
                pass
            raise
        finally:
            sim.close()

    def _run(self, arm: ArmPlan, sim: SimProcess, outdir: Path, logs: Path, progress) -> dict:
        ready = sim.read(READY_TIMEOUT_S)
        if ready.get("event") != "ready":
            raise ExecutorError(f"p4cc-sim: unexpected {ready}")
        eps = {n: Endpoint.from_dict(d) for n, d in ready["switches"].items()}
        with program(arm.switches, eps) as sw:
            (logs / "switches.json").write_text(json.dumps(
                {"endpoints": {n: e.to_dict() for n, e in eps.items()}, "applied": sw.applied},
                indent=1, default=str) + "\n")
            reads = {}
            progress.begin()
            for offset, what, item in schedule(arm):
                sim.send(cmd="run", until_s=offset)
                ev = sim.until("paused", progress)
                if ev.get("event") != "paused":
                    raise ExecutorError(f"p4cc-sim stopped at {ev.get('sim_s')} s")
                if what == "event":
                    apply_event(sw, item)
                else:
                    reads[item] = {"unix_ns": ev["unix_ns"],
                                   "ports": with_busy(read_ports(arm, sw, eps), ev.get("busy_ns"))}
        # The controller lets go first: the simulator exits once it is done,
        # and streams it closed under the controller would read as failures.
        sim.send(cmd="finish", grace_s=GRACE_S)
        done = sim.until("done", progress)
        measure = {"t0_unix_ns": ready["unix_base_ns"], "reads": reads,
                   "window_s": (reads["end"]["unix_ns"] - reads["start"]["unix_ns"]) / 1e9,
                   # wall time lives in logs/sim_done.json: results stay byte-identical
                   "virtual_time": {k: done.get(k) for k in ("sim_s", "events", "complete")},
                   # each host's drops: its NIC queue full (the agents sent
                   # faster than its link), its receive side full
                   "hosts": done.get("hosts") or {}}
        (outdir / "measure.json").write_text(json.dumps(measure, indent=1) + "\n")
        (logs / "sim_done.json").write_text(json.dumps(done, indent=1) + "\n")
        for k in ("sim_s", "events", "wall_s"):
            self.totals[k] += done.get(k) or 0
        fid = {"exact": True, "ok": {"queue": True, "rate": True},
               "violations": {"queue": [], "rate": []}}
        (outdir / "fidelity.json").write_text(json.dumps(fid, indent=1) + "\n")
        return {"target": "sim", **measure["virtual_time"], "wall_s": done.get("wall_s"),
                "fidelity": fid}


__all__ = ["VirtualTime", "find_sim", "KERNEL_MODELS"]
