"""The namespace lab: runs a scenario plan in real time and writes each
arm's results.

Every executor takes the same :class:`~p4cc_topo.plan.Plan` and writes the
same files per arm (docs/experiments.md, "The results folder"):

    <arm>/queue.csv        postcards the collector received
    <arm>/<agent folder>/  each agent's flow logs (flows.csv, tput.csv, rtt.csv)
    <arm>/measure.json     the measured ports' counters after the warm-up and at the end
    <arm>/logs/            switch and agent logs; switches.json (what the controller applied)

:class:`NamespaceLab` runs it in network namespaces and veth links, on the
embedded target or bmv2 (with p4cc's link emulator giving bmv2's ports
their delay and loss), kernel and user-space host agents. The virtual-time
executor is simexec's; both take their steps from arm_steps.
"""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from p4cc_control.program import Endpoint, program
from p4cc_topo import Network
from p4cc_topo.kernel_cc import KernelCcError, ensure_kernel_ccs
from p4cc_topo.links import LINK_MODES, emulated_ports, find_link
from p4cc_topo.plan import ArmPlan, Plan
from p4cc_topo.realtime import Realtime
from p4cc_topo.targets import (TargetCapabilityError, TargetUnavailable, find_bmv2,
                               netem_available, resolve_target, terminate)
from p4cc_topo.wakeup import KeepCpusAwake

from . import bmv2_capacity
from .agents import (command, external_command, external_flow_row, external_window,
                     kernel_ecn_sysctl, payload_file)
from .arm_steps import ExecutorError, apply_event, read_ports, schedule
from .fidelity import RunMonitor, judge_arm
from .programs import library_note, missing_program
from .results import sent_bytes

ROOT = Path(__file__).resolve().parents[2]
#: Receivers and the collector get this long to listen before traffic starts.
LISTEN_S = 0.5
#: Senders get this long from their launch to the shared start.
START_S = 1.0


def host_agent() -> str:
    """The p4cc-host binary built by `make setup`."""
    built = ROOT / "hosts/target/release/p4cc-host"
    if built.exists():
        return str(built)
    found = shutil.which("p4cc-host")
    if not found:
        raise ExecutorError("p4cc-host not built: run `make setup`")
    return found


def link_facts(links: str = "p4cc") -> dict:
    """What bmv2's delay and loss can be given with here (Bmv2Target.problems)."""
    try:
        find_link()
        emulator = True
    except TargetUnavailable:
        emulator = False
    return {"links": links, "link_emulator": emulator,
            "netem": netem_available() if links == "netem" else False}


def capability_problems(plan: Plan, target: str, links: str = "p4cc") -> list[str]:
    """What of the plan's link models ``target`` cannot apply, located."""
    from p4cc_control.targets import TARGETS

    if target == "pyfwd":
        return [f"arm {a.name}: {s.name} port {p}: pyfwd applies no link property"
                for a in plan.arms for s in a.switches.values() for p, c in s.ports.items()
                if c.rate_bps or c.delay_us or c.loss or c.depth_pkts or c.ecn_k_pkts is not None]
    cls = TARGETS["embedded" if target == "sim" else target]
    facts = link_facts(links) if target == "bmv2" else {}
    out = []
    for a in plan.arms:
        for s in a.switches.values():
            for p, c in s.ports.items():
                model = c.link_model()
                if s.loss_in == "p4":
                    model.pop("loss")
                out += [f"arm {a.name}: {s.name} port {p} (towards {c.peer}): {why}"
                        for why in cls.problems(model, **facts)]
    return out


class NamespaceLab:
    """Runs plans in real time in network namespaces (docs/experiments.md)."""

    kind = "namespace lab"

    def __init__(self, target: str = "auto", links: str = "p4cc"):
        if links not in LINK_MODES:
            raise ExecutorError(f"--links {links}: use {' or '.join(LINK_MODES)}")
        self.requested = target
        self.links = links
        self.target: str | None = None
        self.notes: list[str] = []
        self._awake: KeepCpusAwake | None = None
        self._realtime: Realtime | None = None

    # -- before any namespace ------------------------------------------------
    def prepare(self, plan: Plan) -> list[str]:
        """Chooses the target, checks it can apply the plan, makes every
        kernel congestion control the agents use available, keeps the CPUs
        awake, and sees whether the switch and agents can run realtime;
        returns what it did, one line each (for the run log)."""
        missing = missing_programs(plan)
        if missing:
            raise ExecutorError(missing)
        self.notes += library_notes(plan)
        self.target = self._choose_target(plan)
        problems = capability_problems(plan, self.target, self.links)
        if problems:
            raise TargetCapabilityError(self.target, problems)
        if self.target == "bmv2":
            self.notes.append(self._links_note(plan))
        ccs = set().union(*(a.kernel_ccs() for a in plan.arms))
        try:
            self.notes += ensure_kernel_ccs(ccs, host_agent())
        except KernelCcError as e:
            raise ExecutorError(str(e)) from None
        try:
            self._realtime = Realtime()
        except ValueError as e:
            raise ExecutorError(str(e)) from None
        self._awake = KeepCpusAwake().__enter__()
        self.notes.append(self._awake.message)
        self.notes.append(self._realtime.message)
        return self.notes

    def _links_note(self, plan: Plan) -> str:
        ports = {(a.name, s, p) for a in plan.arms
                 for s, ps in emulated_ports(a.switches, a.events).items() for p in ps}
        if not ports:
            return "links: no port of this plan has a delay or a loss"
        if self.links == "netem":
            return f"links: delay and loss by the kernel's netem on bmv2's port interfaces (--links netem)"
        n = len({(s, p) for _, s, p in ports})
        return (f"links: delay and loss by p4cc's link emulator (p4cc-link) in front of {n} bmv2 "
                f"port{'s' if n != 1 else ''}; bmv2 keeps its own queue, rate and marking")

    def _choose_target(self, plan: Plan) -> str:
        try:
            if self.requested != "auto":
                return resolve_target(self.requested)
            wanted = os.environ.get("P4CC_TARGET", "auto")
            if wanted != "auto":
                target = resolve_target(wanted)
                self.notes.append(f"target {target}: P4CC_TARGET={wanted} asks for it")
                return target
        except TargetUnavailable as e:
            raise ExecutorError(str(e).splitlines()[0]) from None
        target, why = auto_target(plan, self.links)
        self.notes.append(f"target {target}: {why}")
        return target

    def finish(self) -> None:
        if self._awake is not None:
            self._awake.__exit__(None, None, None)
            self._awake = None

    def describe(self) -> dict:
        return {"executor": self.kind, "time": "real time", "target": self.target,
                "links": self.links if self.target == "bmv2" else None, "notes": self.notes}

    # -- one arm ---------------------------------------------------------------
    def run_arm(self, plan: Plan, arm: ArmPlan, outdir: Path, progress) -> dict:
        """Builds the arm's network, programs its switches through the
        controller, runs its agents on the plan's schedule, reads the
        measured counters, tears everything down."""
        outdir.mkdir(parents=True, exist_ok=True)
        logs = outdir / "logs"
        topo = arm.topo()
        agent = host_agent()
        switch_prio = self._realtime.switch_prio if self._realtime and self.target == "embedded" else None
        # Only bmv2 lacks a link model: the embedded switch delays and drops
        # at its own ports, and an emulator spliced in front of them would
        # be a relay hop that nothing programs, costing CPU the run needs.
        emulated = emulated_ports(arm.switches, arm.events) if self.target == "bmv2" else None
        with Network(topo, target=self.target, log_dir=logs, seed=plan.seed, rt_prio=switch_prio,
                     links=self.links, emulated=emulated) as net:
            eps = {n: Endpoint.from_dict(d) for n, d in net.endpoints().items()}
            with program(arm.switches, eps) as sw:
                (logs / "switches.json").write_text(json.dumps(
                    {"endpoints": {n: e.to_dict() for n, e in eps.items()},
                     "applied": sw.applied}, indent=1, default=str) + "\n")
                return self._traffic(arm, net, sw, eps, agent, outdir, progress)

    def _traffic(self, arm, net, sw, eps, agent, outdir: Path, progress) -> dict:
        def alive():
            dead = net.dead_switches()
            return f"switch died: {', '.join(dead)} (see {outdir / 'logs'})" if dead else None

        def launch(a, start_ns):
            log = f"{a.role}-{a.folder}.log" if a.role not in ("collector", "feed") else "collector.log"
            if a.datapath == "external":
                # The user's program: started (a sender at its window's
                # start) and stopped on the plan's schedule; its output is
                # kept in logs/.
                # Run in its own folder: what it writes to its working
                # directory stays with the arm's results.
                folder = outdir / a.folder
                folder.mkdir(parents=True, exist_ok=True)
                if a.one_flow:
                    payload = payload_file(a, folder)
                    with open(payload, "wb") as f:
                        f.truncate(a.workload.bytes)  # zeros, and no disk
                delay = (start_ns - time.time_ns()) / 1e9 + (
                    external_window(a)[0] if a.role == "sender" else 0.0)
                return net.popen(a.host, external_command(a, net.ip, folder, delay),
                                 log=log, cwd=str(folder))
            cmd = command(a, net.ip, outdir / a.folder, start_ns,
                          self._realtime.agent_prio if self._realtime else None)
            return net.popen(a.host, [agent, *cmd], log=log)

        waiting = [launch(a, 0) for a in arm.agents if a.role != "sender"]
        for a in arm.senders():
            sysctl = kernel_ecn_sysctl(a)
            if sysctl:
                net.run(a.host, sysctl, check=True)
        progress.sleep(LISTEN_S, alive)
        t0 = time.time_ns() + int(START_S * 1e9)
        senders = [launch(a, t0) for a in arm.senders()]

        def at(offset_s):  # sleep until t0 + offset
            progress.sleep(max(0.0, (t0 - time.time_ns()) / 1e9 + offset_s), alive)

        reads: dict[str, dict] = {}
        monitor = RunMonitor()
        for offset, what, item in schedule(arm):
            at(offset)
            if what == "event":
                apply_event(sw, item)
                continue
            reads[item] = {"unix_ns": time.time_ns(), "ports": read_ports(arm, sw, eps, clock=time.time_ns)}
            if item == "start":
                monitor.start([p.pid for p in waiting + senders]
                              + [s.proc.pid for s in net.switches.values() if s.proc]
                              + [l.proc.pid for l in net.link_procs.values() if l.proc])
            elif item == "end":
                monitor.end()
                monitor.switches(eps)
                monitor.links({n: l.admin_addr for n, l in net.link_procs.items()},
                              {n: net.emulated[n] for n in net.link_procs})
        for p in senders:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
        terminate(waiting, timeout=10)  # SIGTERM: they flush their logs
        write_external_flows(arm, net.ip, outdir)
        measure = {"t0_unix_ns": t0, "reads": reads,
                   "window_s": (reads["end"]["unix_ns"] - reads["start"]["unix_ns"]) / 1e9}
        (outdir / "measure.json").write_text(json.dumps(measure, indent=1) + "\n")
        monitor.agents(outdir, arm)
        keepup = bmv2_keepup(arm, outdir, measure) if self.target == "bmv2" else None
        fid = judge_arm(monitor.record, arm, self.target, keepup)
        (outdir / "fidelity.json").write_text(json.dumps(fid, indent=1) + "\n")
        return {"target": self.target, "fidelity": fid}


def write_external_flows(arm, ip, outdir: Path) -> None:
    """flows.csv of each one-flow external sender, from its wrapper's
    record: the analyses read the program's flow as they read p4cc's. The
    payload it was given goes (it is only zeros)."""
    for a in arm.senders():
        if a.one_flow:
            payload_file(a, outdir / a.folder).unlink(missing_ok=True)
            row = external_flow_row(a, ip, outdir / a.folder)
            with open(outdir / a.folder / "flows.csv", "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(row))
                w.writeheader()
                w.writerow(row)


def missing_programs(plan: Plan) -> str | None:
    """What an external agent of the plan would run but cannot be found
    (hosts share this machine's file system), in one line; None when every
    program is there."""
    for arm in plan.arms:
        for a in arm.external():
            why = missing_program(a.command)
            if why:
                return f"arm {arm.name}: the {a.role} program {why}; give its full path in the command"
    return None


def library_notes(plan: Plan) -> list[str]:
    """Notes naming the libraries the plan's external programs load from
    outside the system's directories (programs.own_libraries), each once."""
    commands = {(a.role, tuple(a.command)): None for arm in plan.arms for a in arm.external()}
    notes = (library_note(role, cmd) for role, cmd in commands)
    return list(dict.fromkeys(n for n in notes if n))


def bmv2_load_pps(plan: Plan) -> float:
    """Packets per second a switch of the plan handles at most: the busiest
    port's line rate in MTU packets, its ACKs, and a postcard per packet."""
    worst = 0.0
    for arm in plan.arms:
        for sw in arm.switches.values():
            pps = max((c.rate_bps or 0) / (8 * 1500) for c in sw.ports.values())
            n = sw.postcards.one_in_n if sw.postcards else 0
            worst = max(worst, 2 * pps * (1 + (1 / n if n else 0)))
    return worst


def auto_target(plan: Plan, links: str = "p4cc", measure: bool = True) -> tuple[str, str]:
    """bmv2 when it is installed and can serve the plan as configured (every
    link property, and a packet rate within what it was measured to forward
    here), else the embedded target; with the reason, for the run log."""
    try:
        find_bmv2()
    except TargetUnavailable:
        resolve_target("embedded")
        return "embedded", "bmv2 is not installed (auto picks it when it is and can serve the run)"
    problems = capability_problems(plan, "bmv2", links)
    if problems:
        return "embedded", f"bmv2 cannot serve this run: {problems[0]}"
    cap = bmv2_capacity.capacity(measure=measure)
    load = bmv2_load_pps(plan)
    if load > cap.usable_pps:
        return "embedded", (f"bmv2 cannot serve this run: about {load / 1e3:.0f} kpps through a "
                            f"switch, and {cap.describe()}")
    return "bmv2", (f"bmv2 is installed and can serve this run (about {load / 1e3:.1f} kpps; "
                    f"{cap.describe()})")


#: Rates `fit_rate` chooses from, bits/s: round figures a reader recognises.
FIT_RATES = [r * 1e6 for r in (1000, 800, 500, 400, 300, 250, 200, 150, 100, 80, 60, 50, 40,
                               30, 25, 20, 15, 10, 5, 2, 1)]


def fit_rate(plan: Plan, rate: float, measure: bool = True) -> tuple[float, str] | None:
    """The largest round rate at which a plan whose packet load scales with
    its line rate fits within bmv2's measured capacity here: (rate, why),
    or None when the plan fits as it is."""
    cap = bmv2_capacity.capacity(measure=measure)
    load = bmv2_load_pps(plan)
    if load <= cap.usable_pps or rate <= 0:
        return None
    fits = [r for r in FIT_RATES if r < rate and load * r / rate <= cap.usable_pps]
    new = fits[0] if fits else FIT_RATES[-1]
    why = (f"{cap.describe()}; at {rate / 1e6:g} Mb/s this run needs about {load / 1e3:.0f} kpps "
           f"through a switch (data, ACKs and postcards), so it runs at {new / 1e6:g} Mb/s "
           f"(about {load * new / rate / 1e3:.1f} kpps, within the {bmv2_capacity.USABLE_SHARE:.0%} "
           "of bmv2's capacity a run may use)")
    return new, why


def bmv2_keepup(arm: ArmPlan, outdir: Path, measure: dict) -> float | None:
    """bmv2 shows no schedule of its own: its bottleneck's bytes sent over
    the measured window, against its rate times the share of that window
    its queue was busy (postcards with a non-empty queue)."""
    from . import series
    q = arm.measure.queue
    rate = arm.switches[q.switch].ports[q.port].rate_bps if q else None
    reads = measure["reads"]
    if not rate or measure["window_s"] <= 0:
        return None
    lo, hi = reads["start"]["unix_ns"] / 1e9, reads["end"]["unix_ns"] / 1e9
    cards = [c for c in series.postcards(outdir / "queue.csv", q.port, arm.measure.queue_switch_id)
             if lo <= c["t"] <= hi]
    if len(cards) < 100:
        return None
    busy = sum(1 for c in cards if c["depth"] > 0) / len(cards)
    a, b = reads["start"]["ports"][q.key()], reads["end"]["ports"][q.key()]
    sent = sent_bytes(a, b) * 8 / (rate * measure["window_s"])
    return sent / busy if busy > 0 else None


__all__ = ["NamespaceLab", "ExecutorError", "capability_problems", "host_agent", "find_bmv2",
           "auto_target", "fit_rate", "bmv2_load_pps", "link_facts"]
