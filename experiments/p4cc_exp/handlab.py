"""Labs by hand: a topology brought up *programmed* — pipeline, routes, K,
link model and postcards applied from the same switch configuration
experiments use — for a researcher to work in.

    p4cc up TOPOLOGY       network namespaces; stays until Ctrl-C or SIGTERM
    p4cc mininet TOPOLOGY  the same network at Mininet's prompt (mininet>)

Both record the lab in its run state (/run/p4cc/<run>.json), so `p4cc ctl`
finds the lab's switch and target without flags while exactly one lab is up.
"""
from __future__ import annotations

import signal
import sys
import time

from p4cc_control.program import Endpoint, program
from p4cc_topo import load_topology, resolve_target
from p4cc_topo.links import emulated_ports
from p4cc_topo.plan import ArmPlan, Plan, collector_agent, switch_configs

from .executors import auto_target, capability_problems


class LabError(RuntimeError):
    """A lab cannot be brought up (one line)."""


def _lab_plan(topo, configs) -> Plan:
    """The lab as a one-arm plan, for the checks experiments get."""
    arm = ArmPlan(name="lab", label=topo.name, topology=topo.to_dict(numeric=True),
                  switches=configs, agents=tuple(collector_agent(topo)), duration_s=1.0)
    return Plan(experiment="lab", title="", source="", description="", params={}, seed=1,
                arms=(arm,))


def _choose(topo, configs, target: str, links: str) -> str:
    """The target (auto: the same rule as `p4cc run`, said in one line)."""
    if target != "auto":
        return resolve_target(target)
    chosen, why = auto_target(_lab_plan(topo, configs), links)
    print(f"p4cc: target {chosen}: {why}", flush=True)
    return chosen


def _say_links(configs, target: str, links: str) -> dict[str, list[int]]:
    """On bmv2, which ports get p4cc's link emulator (said in one line)."""
    if target != "bmv2":
        return {}
    ports = emulated_ports(configs)
    if links == "netem":
        if ports:
            print("p4cc: links: delay and loss by the kernel's netem (--links netem)", flush=True)
        return {}
    if ports:
        where = ", ".join(f"{s} port{'s' if len(ps) > 1 else ''} {', '.join(map(str, ps))}"
                          for s, ps in ports.items())
        print(f"p4cc: links: delay and loss by p4cc's link emulator in front of {where}",
              flush=True)
    return ports


def _check(topo, configs, target: str, links: str) -> None:
    """Refuses what the target cannot apply, before anything is built."""
    problems = capability_problems(_lab_plan(topo, configs), target, links)
    if problems:
        n = len(problems)
        raise LabError(f"target {target} cannot apply {n} link propert{'y' if n == 1 else 'ies'}: "
                       f"{problems[0].removeprefix('arm lab: ')}"
                       + (f" (and {n - 1} more)" if n > 1 else ""))


def _endpoints(descs: dict) -> dict[str, Endpoint]:
    return {n: Endpoint.from_dict(d) for n, d in descs.items()}


def ctl_hints(run_id: str, eps: dict[str, Endpoint], topo) -> list[str]:
    """The exact commands that work against this lab."""
    one = len(eps) == 1
    sw = "" if one else f" --switch {next(iter(eps))}"
    port = next(iter(next(iter(eps.values())).port_ifaces), 1)
    hosts = list(topo.hosts.values())
    a, b = hosts[0], hosts[1 % len(hosts)]
    return [f"p4cc ctl{sw} show", f"p4cc ctl{sw} counters", f"p4cc ctl{sw} set-k {port} 20",
            f"p4cc ctl{sw} queue --show", f"p4cc exec {a.name} ping -c 3 {b.ip}"]


def _print_lab(run_id: str, target: str, topo, eps: dict[str, Endpoint], where: str) -> None:
    print(f"p4cc: lab {run_id} is up ({target} target, topology {topo.name}, {where})")
    for h in topo.hosts.values():
        att = topo.attachment(h.name)
        print(f"  host {h.name:8s} {h.ip:15s} on {att.node} port {att.port}")
    for n, e in eps.items():
        extra = f", admin {e.admin_addr}" if e.admin_addr else (
            f", thrift {e.thrift_port}" if e.thrift_port else "")
        print(f"  switch {n:6s} P4Runtime {e.grpc_addr} (device {e.device_id}){extra}")
    print("try:")
    for line in ctl_hints(run_id, eps, topo):
        print(f"  {line}")
    sys.stdout.flush()


def _terminate_on_sigterm() -> None:
    def on_term(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)


def up(topology: str, target: str = "auto", duration: float | None = None,
       links: str = "p4cc") -> int:
    """Brings the topology up in namespaces, programmed, until Ctrl-C."""
    from p4cc_topo import Network

    topo = load_topology(topology)
    configs = switch_configs(topo)
    target = _choose(topo, configs, target, links)
    _check(topo, configs, target, links)
    emulated = _say_links(configs, target, links)
    _terminate_on_sigterm()
    with Network(topo, target=target, keep_logs=False, links=links, emulated=emulated) as net:
        eps = _endpoints(net.endpoints())
        # The lab lets go of the switch once programmed: `p4cc ctl` is the
        # primary controller from then on.
        program(configs, eps).close()
        net.state.set(kind="up", programmed=True)
        _print_lab(net.run_id, target, topo, eps, "namespaces")
        print("Ctrl-C tears it down", flush=True)
        t0 = time.monotonic()
        try:
            while duration is None or time.monotonic() - t0 < duration:
                time.sleep(0.2)
                dead = net.dead_switches()
                if dead:
                    raise LabError(f"switch {', '.join(dead)} died (see {net.log_dir})")
        except KeyboardInterrupt:
            pass
    print("p4cc: lab torn down")
    return 0


def mininet(topology: str, target: str = "auto", script: str | None = None,
            links: str = "p4cc") -> int:
    """The topology at Mininet's prompt, programmed; everything is removed
    on exit (also on Ctrl-C at the shell and SIGTERM)."""
    try:
        from mininet.cli import CLI
        from mininet.log import setLogLevel
        from mininet.net import Mininet
    except ImportError:
        raise LabError("Mininet is not installed: run `make setup` (it installs Debian's "
                       "mininet package)") from None
    from p4cc_topo.cleanup import start_watchdog
    from p4cc_topo.mininet_switch import P4ccTopo, P4Switch, endpoints
    from p4cc_topo.state import RunState

    topo = load_topology(topology)
    configs = switch_configs(topo)
    target = _choose(topo, configs, target, links)
    if target == "pyfwd":
        raise LabError("the Mininet lab runs a P4 target (embedded or bmv2)")
    _check(topo, configs, target, links)
    emulated = _say_links(configs, target, links)
    _terminate_on_sigterm()
    setLogLevel("output")  # what the prompt's commands print; Mininet's chatter stays off
    state = RunState.create(topology=topo.name, target=target, kind="mininet")
    start_watchdog(state.run_id, state.path)
    net = None
    try:
        mtopo = P4ccTopo(topology=topo, target=target, run_id=state.run_id, emulated=emulated)
        state.set(links=mtopo.switch_ifaces())
        net = Mininet(topo=mtopo, switch=P4Switch, controller=None, autoSetMacs=False)
        net.start()
        for h in net.hosts:
            state.add_pid(h.pid, f"mininet host {h.name}")
        state.set(mininet_hosts={h.name: h.pid for h in net.hosts})
        for s in net.switches:
            if s.sw and s.sw.proc:
                state.add_pid(s.sw.proc.pid, f"switch {s.name} ({target})")
            if getattr(s, "link", None) is not None and s.link.proc:
                state.add_pid(s.link.proc.pid, f"link emulator of {s.name}")
        eps = _endpoints(endpoints(net))
        state.set(status="up", switches={n: e.to_dict() for n, e in eps.items()})
        program(configs, eps).close()  # `p4cc ctl` is the primary controller from then on
        _print_lab(state.run_id, target, topo, eps, "Mininet")
        if script:
            CLI(net, script=script)
        else:
            CLI(net)
    finally:
        if net is not None:
            net.stop()
        from p4cc_topo.cleanup import cleanup_run
        cleanup_run(state.run_id)
        state.remove()
    return 0


def host_command(host: str, cmd: list[str]) -> list[str]:
    """``cmd`` as run in ``host`` of the one running lab (`p4cc exec`)."""
    labs = running_labs()
    if not labs:
        raise LabError("no lab is up (start one with `p4cc up TOPOLOGY` or `p4cc mininet`)")
    if len(labs) > 1:
        raise LabError(f"{len(labs)} labs are up ({describe_labs(labs)}): stop the others")
    lab = labs[0]
    if cmd and cmd[0] == "p4cc-host":
        from .executors import host_agent
        cmd = [host_agent(), *cmd[1:]]
    if lab.get("mininet_hosts"):
        pid = lab["mininet_hosts"].get(host)
        if pid is None:
            raise LabError(f"no host {host} in lab {lab['run_id']} "
                           f"(hosts: {', '.join(lab['mininet_hosts'])})")
        return ["nsenter", "-t", str(pid), "-n", *cmd]
    from p4cc_topo.naming import netns_name
    if host not in lab.get("hosts", []):
        raise LabError(f"no host {host} in lab {lab['run_id']} (hosts: {', '.join(lab.get('hosts', []))})")
    return ["ip", "netns", "exec", netns_name(lab["run_id"], host), *cmd]


def running_labs() -> list[dict]:
    """Run states of labs that are up and whose owner lives (experiments'
    runs count: their switches are labs too while they run)."""
    from p4cc_topo.state import owner_alive, read_states
    out = []
    for _, st in read_states().values():
        if st and st.get("status") == "up" and st.get("switches") and owner_alive(st):
            out.append(st)
    return sorted(out, key=lambda s: s["run_id"])


def describe_labs(labs: list[dict]) -> str:
    return "; ".join(f"{s['run_id']} ({s.get('topology', '?')}: {', '.join(s['switches'])})"
                     for s in labs)


__all__ = ["up", "mininet", "running_labs", "host_command", "LabError", "ctl_hints"]
