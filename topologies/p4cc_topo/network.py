"""Realise a topology: namespaces, veth links, addresses, ARP, switches.

    from p4cc_topo import Network, load_topology

    topo = load_topology("dumbbell", n_senders=2)
    with Network(topo, target="auto", log_dir="results/x/logs") as net:
        net.endpoints()                   # → p4cc_control.program(): pipeline, routes,
                                          #   K, link model, postcards
        rx = net.popen("rx", ["p4cc-host", "recv"], log="rx.log")
        net.run("h1", ["ping", "-c", "1", net.ip("rx")])

What each host gets (docs/topologies.md, "Addressing"):

- a namespace ``p4cc-<run>-<host>`` with ``lo`` up and one interface
  ``eth0`` (its MAC and address from the topology; TSO/GSO/GRO/LRO and tx
  checksum offload off so the switch sees MTU-sized, checksummed frames);
- every destination routed through a gateway: ``default via 169.254.0.1``,
  with a *permanent* ARP entry mapping 169.254.0.1 to the MAC of the switch
  port the host is cabled to (the P4 program rewrites the MACs per hop);
  hosts never ARP for each other and the switch never sees ARP;
- ``net.ipv4.tcp_ecn=1``, ``net.ipv4.tcp_no_metrics_save=1``, IPv6 off (no
  router/neighbour solicitations reach the switch).

The switch ends of the links stay in the root namespace, named
``p4cc<run>s<switch index>e<port>``, IPv6 off, offloads off; their own MAC
differs from the port MAC the hosts address, so the root namespace's kernel
ignores the frames the switch forwards. On bmv2, a port with a delay or a
loss gets p4cc's link emulator spliced in front of it (p4cc_topo.links):
two more root-namespace ends, ``…w<port>`` and ``…p<port>``.

The switches start bare (their ports only); everything else reaches them
through the controller.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

from . import cleanup as _cleanup
from .model import GATEWAY_IP, Topology, port_mac
from .naming import ENV_RUN_ID, check_run_id, netns_name
from .state import RunState
from .links import LINK_MODES, LinkProcess
from .naming import port_ifname
from .targets import (SwitchProcess, SwitchStartError, interfaces, log_tail, make_switch,
                      resolve_target, spawn, terminate)

__all__ = ["Network", "NetworkError", "HOST_IFACE", "OFFLOADS_OFF"]

HOST_IFACE = "eth0"
#: ethtool -K features turned off on both ends of every link.
OFFLOADS_OFF = ("tso", "gso", "gro", "lro", "tx")
LOG_ROOT = Path("/tmp/p4cc/runs")
#: A new run removes what dead runs left once their state is this old.
STALE_AFTER_S = 60.0


class NetworkError(RuntimeError):
    """A step of building the network failed (the message names the command)."""


def _run(cmd, input: str | None = None, what: str = "") -> str:
    r = subprocess.run(cmd, input=input, capture_output=True, text=True)
    if r.returncode != 0:
        detail = (r.stderr or r.stdout).strip()
        raise NetworkError(f"{what or 'command'} failed: {' '.join(map(str, cmd))}: {detail}")
    return r.stdout


class Network:
    """A running topology. Use as a context manager (or start()/stop()).

    Parameters
    ----------
    topo : Topology
    target : "auto" | "embedded" | "bmv2" | "pyfwd"
    run_id : 4 chars (digit + 3 hex); random when None
    log_dir : where switch and host logs go (default /tmp/p4cc/runs/<run>/)
    p4_json, p4info : start the switches with this program loaded (bmv2
        JSON; the embedded target also takes the binary P4Info) instead of
        waiting for the controller's SetForwardingPipelineConfig
    cpu_port : the switches' CPU port (packet-in/out), if any
    seed : embedded only: the switch's random seed (loss draws)
    routes : pyfwd only (it has no P4Runtime): per switch the plan's routes
    watchdog : start a watchdog process that cleans up if this process is
        killed (SIGKILL) before it can
    clean_stale : first remove what dead runs left behind
    start_switches : False builds only namespaces and links (tests, or a
        switch started by hand)
    keep_logs : logs in the default location (/tmp/p4cc/runs/<run>) are
        removed after a clean exit and kept after an error (None); True keeps
        them, False removes them. A ``log_dir`` you give is never removed.
    links : "p4cc" splices p4cc's link emulator in front of the ports in
        ``emulated``; "netem" leaves bmv2's delay and loss to netem on the
        port's interface (the controller applies them either way)
    emulated : per switch the ports that get a link emulator (bmv2's
        default: those whose link has a delay or a loss in ``topo``;
        p4cc_topo.links.emulated_ports computes them from a plan; other
        targets have a link model of their own and get one only when
        ``emulated`` names the ports)
    """

    def __init__(self, topo: Topology, target: str = "auto", run_id: str | None = None,
                 log_dir: str | Path | None = None, p4_json: str | None = None,
                 p4info: str | None = None, cpu_port: int | None = None,
                 seed: int | None = None, routes: dict | None = None, watchdog: bool = True,
                 clean_stale: bool = True, start_switches: bool = True,
                 ready_timeout: float = 20.0, handle_signals: bool = True,
                 keep_logs: bool | None = None, rt_prio: int | None = None,
                 links: str = "p4cc", emulated: dict[str, list[int]] | None = None):
        if links not in LINK_MODES:
            raise ValueError(f"links {links!r}: use {' or '.join(LINK_MODES)}")
        self.topo = topo
        self.links = links
        self._emulated_arg = emulated
        #: per switch, the ports with a link emulator (bmv2 with links="p4cc")
        self.emulated: dict[str, list[int]] = {}
        self.link_procs: dict[str, LinkProcess] = {}
        # SCHED_FIFO priority of the embedded switch's packet thread (realtime.py)
        self.rt_prio = rt_prio
        self.requested_target = target
        self.target: str | None = None
        self.run_id = check_run_id(run_id) if run_id else None
        self._log_dir_arg = Path(log_dir) if log_dir else None
        self.log_dir: Path | None = None
        self.p4_json = p4_json
        self.p4info = p4info
        self.cpu_port = cpu_port
        self.seed = seed
        self.routes = routes
        self.watchdog = watchdog
        self.clean_stale = clean_stale
        self.start_switches = start_switches
        self.ready_timeout = ready_timeout
        self.handle_signals = handle_signals
        self.keep_logs = keep_logs
        self.state: RunState | None = None
        self.ports: dict[str, dict[int, str]] = {}   # switch -> port -> interface
        self.switches: dict[str, SwitchProcess] = {}
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self._watchdog: subprocess.Popen | None = None
        self._old_handlers: dict = {}
        self._started = False
        self._stopping = False
        self._lock = threading.Lock()
        self._nlog = 0

    # ------------------------------------------------------------ lifecycle
    def __enter__(self) -> "Network":
        self._install_signal_handlers()
        try:
            self.start()
        except BaseException:
            self.stop(failed=True)
            self._restore_signal_handlers()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.stop(failed=exc_type is not None)
        finally:
            self._restore_signal_handlers()

    def _install_signal_handlers(self) -> None:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return

        def on_signal(signum, frame):
            # unwind through __exit__ (teardown), then exit like the signal would
            raise SystemExit(128 + signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            try:
                self._old_handlers[sig] = signal.signal(sig, on_signal)
            except (ValueError, OSError):
                pass

    def _restore_signal_handlers(self) -> None:
        for sig, h in self._old_handlers.items():
            try:
                signal.signal(sig, h)
            except (ValueError, OSError, TypeError):
                pass
        self._old_handlers.clear()

    def start(self) -> "Network":
        if self._started:
            return self
        topo = self.topo
        self.target = resolve_target(self.requested_target)
        if self.clean_stale:
            _cleanup.cleanup_all(min_age=STALE_AFTER_S)

        # reserve the run id and write down everything we are about to create
        plan_netns = []
        plan_links = []
        tmp_rid = self.run_id
        self.state = RunState.create(tmp_rid, topology=topo.name, target=self.target)
        self.run_id = self.state.run_id
        self._started = True
        atexit.register(self.stop)   # a start() without `with`: still torn down at exit
        rid = self.run_id
        self.log_dir = self._log_dir_arg or (LOG_ROOT / rid)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.ports = interfaces(topo, rid)
        self.emulated = self._emulated_ports()
        plan_netns = [netns_name(rid, h) for h in topo.hosts]
        plan_links = self._all_port_ifaces()
        self.state.set(netns=plan_netns, links=plan_links, log_dir=str(self.log_dir),
                       hosts=sorted(topo.hosts))
        if self.watchdog:
            self._watchdog = _cleanup.start_watchdog(rid, self.state.path,
                                                     self.log_dir / "watchdog.log")
            self.state.add_pid(self._watchdog.pid, "watchdog")

        self._create_netns()
        self._create_links()
        self._configure_switch_ends()
        self._configure_hosts()
        if self.start_switches:
            self._start_switches()
        self.state.set(status="up", switches={n: s.describe() for n, s in self.switches.items()})
        return self

    def stop(self, failed: bool = False) -> None:
        """Tear everything down; safe to call twice, from finally, after errors."""
        if not self._started or self._stopping:
            return
        self._stopping = True
        # no interruption half-way through teardown
        saved = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                try:
                    saved[sig] = signal.signal(sig, signal.SIG_IGN)
                except (ValueError, OSError):
                    pass
        try:
            if self.state is not None:
                try:
                    self.state.set(status="stopping")
                except OSError:
                    pass
            terminate([p for _, p in self.procs])
            terminate([s.proc for s in self.switches.values() if s.proc is not None])
            terminate([l.proc for l in self.link_procs.values() if l.proc is not None])
            if self.run_id:
                res = _cleanup.cleanup_run(self.run_id)
                left = res.get("left", {})
                if left.get("links") or left.get("netns"):
                    raise NetworkError(f"run {self.run_id}: could not remove {left}")
            if self.state is not None:
                self.state.remove()
            if self._watchdog is not None:
                try:
                    self._watchdog.wait(2)
                except subprocess.TimeoutExpired:
                    self._watchdog.kill()
                    self._watchdog.wait()
            keep = self.keep_logs if self.keep_logs is not None else failed
            if (not keep and self._log_dir_arg is None and self.log_dir is not None
                    and self.log_dir.parent == LOG_ROOT):
                shutil.rmtree(self.log_dir, ignore_errors=True)
        finally:
            atexit.unregister(self.stop)
            for sig, h in saved.items():
                try:
                    signal.signal(sig, h)
                except (ValueError, OSError, TypeError):
                    pass
            self._started = False
            self._stopping = False

    # --------------------------------------------------------------- build
    def _create_netns(self) -> None:
        names = [netns_name(self.run_id, h) for h in self.topo.hosts]
        _run(["ip", "-batch", "-"], input="\n".join(f"netns add {n}" for n in names) + "\n",
             what="creating host namespaces")

    def _emulated_ports(self) -> dict[str, list[int]]:
        if self.links != "p4cc":
            return {}
        if self._emulated_arg is not None:
            return {n: sorted(int(p) for p in ps) for n, ps in self._emulated_arg.items() if ps}
        if self.target != "bmv2":
            return {}
        out: dict[str, list[int]] = {}
        for name in self.topo.switches:
            for port, l in self.topo.switch_links(name):
                if l.delay_us or l.loss.get(name):
                    out.setdefault(name, []).append(port)
        return out

    def _link_end(self, switch: str, port: int, end: str) -> str:
        return port_ifname(self.run_id, self.topo.switches[switch].index, port, end)

    def _cable_end(self, switch: str, port: int) -> str:
        """The root-namespace end of the cable to a switch port's peer:
        the switch's own interface, or the link emulator's end facing the
        peer when one is spliced in."""
        if port in self.emulated.get(switch, ()):
            return self._link_end(switch, port, "p")
        return self.ports[switch][port]

    def _create_links(self) -> None:
        lines = []
        rid = self.run_id
        for l in self.topo.links:
            ends = [e for e in l.ends]
            sw_ends = [e for e in ends if e.node in self.topo.switches]
            host_ends = [e for e in ends if e.node in self.topo.hosts]
            if host_ends:
                h, s = host_ends[0], sw_ends[0]
                lines.append(f"link add {self._cable_end(s.node, s.port)} type veth peer name "
                             f"{HOST_IFACE} netns {netns_name(rid, h.node)}")
            else:
                a, b = sw_ends
                lines.append(f"link add {self._cable_end(a.node, a.port)} type veth "
                             f"peer name {self._cable_end(b.node, b.port)}")
        for sw, ports in self.emulated.items():
            for port in ports:
                lines.append(f"link add {self.ports[sw][port]} type veth "
                             f"peer name {self._link_end(sw, port, 'w')}")
        _run(["ip", "-batch", "-"], input="\n".join(lines) + "\n", what="creating veth links")

    def _all_port_ifaces(self) -> list[str]:
        out = [i for sw in self.ports.values() for i in sw.values()]
        for sw, ports in self.emulated.items():
            out += [self._link_end(sw, p, end) for p in ports for end in ("w", "p")]
        return out

    def _configure_switch_ends(self) -> None:
        ifaces = self._all_port_ifaces()
        for iface in ifaces:
            path = Path(f"/proc/sys/net/ipv6/conf/{iface}/disable_ipv6")
            if path.exists():
                path.write_text("1\n")
        ups = []
        for iface in ifaces:
            _ethtool_off(iface)
            ups.append(f"link set dev {iface} up")
        _run(["ip", "-batch", "-"], input="\n".join(ups) + "\n", what="bringing switch ports up")

    def host_script(self, host: str) -> str:
        """The shell script that configures a host's namespace."""
        h = self.topo.hosts[host]
        att = self.topo.attachment(host)
        gw_mac = port_mac(self.topo.switches[att.node].id, att.port)
        dev = HOST_IFACE
        lines = [
            "set -e",
            "for f in all default " + dev + "; do",
            "  p=/proc/sys/net/ipv6/conf/$f/disable_ipv6; [ -e $p ] && echo 1 > $p",
            "done",
            "echo 1 > /proc/sys/net/ipv4/tcp_ecn",
            "echo 1 > /proc/sys/net/ipv4/tcp_no_metrics_save",
            "ip link set dev lo up",
            f"ip link set dev {dev} address {h.mac}",
            f"ethtool -K {dev} {' '.join(f'{o} off' for o in OFFLOADS_OFF)} >/dev/null 2>&1 || "
            f"ethtool -K {dev} tso off gso off gro off tx off >/dev/null",
            f"ip addr add {h.cidr} dev {dev} noprefixroute",
            f"ip link set dev {dev} up",
            f"ip neigh replace {GATEWAY_IP} lladdr {gw_mac} dev {dev} nud permanent",
            f"ip route add {GATEWAY_IP}/32 dev {dev} scope link",
            f"ip route add default via {GATEWAY_IP} dev {dev}",
        ]
        return "\n".join(lines) + "\n"

    def _configure_hosts(self) -> None:
        for host in self.topo.hosts:
            ns = self.netns(host)
            _run(["ip", "netns", "exec", ns, "sh", "-c", self.host_script(host)],
                 what=f"configuring host {host} (namespace {ns})")

    def _pyfwd_routes(self) -> dict[str, list[dict]]:
        """pyfwd has no P4Runtime: it starts with the routes the controller
        would install (the plan's, computed from the topology by default)."""
        if self.routes is not None:
            return self.routes
        from .plan import switch_configs
        return {n: [{"prefix": r.prefix, "port": r.port, "dst_mac": r.dst_mac} for r in c.routes]
                for n, c in switch_configs(self.topo).items()}

    def _start_switches(self) -> None:
        routes = self._pyfwd_routes() if self.target == "pyfwd" else {}
        for name, sw in self.topo.switches.items():
            s = make_switch(self.target, name, sw.id, self.ports[name], self.run_id, self.log_dir,
                            routes.get(name, []), seed=self.seed, p4_json=self.p4_json,
                            p4info=self.p4info, cpu_port=self.cpu_port, rt_prio=self.rt_prio)
            self.switches[name] = s
            s.start()
            self.state.add_pid(s.proc.pid, f"switch {name} ({self.target})")
        for name, ports in self.emulated.items():
            lp = LinkProcess(name, {p: (self._link_end(name, p, "w"), self._link_end(name, p, "p"))
                                    for p in ports}, self.run_id, self.log_dir, seed=self.seed)
            self.link_procs[name] = lp
            lp.start()
            self.state.add_pid(lp.proc.pid, f"link emulator of {name}")
        for s in self.switches.values():
            s.wait_ready(self.ready_timeout)
        for lp in self.link_procs.values():
            lp.wait_ready(self.ready_timeout)

    # ------------------------------------------------------------ queries
    def netns(self, host: str) -> str:
        if host not in self.topo.hosts:
            raise KeyError(f"no host {host!r} in topology {self.topo.name}")
        return netns_name(self.run_id, host)

    def ip(self, host: str) -> str:
        return self.topo.hosts[host].ip

    def mac(self, host: str) -> str:
        return self.topo.hosts[host].mac

    def endpoints(self) -> dict[str, dict]:
        """Per switch where it listens and what it is (name, target,
        grpc_addr, device_id, port_ifaces, admin_addr/thrift_port, and the
        link emulator's link_admin_addr and link_ports where one serves
        it): what p4cc_control.program.Endpoint takes."""
        out = {}
        for n, s in self.switches.items():
            d = s.describe()
            if n in self.link_procs:
                d["link_admin_addr"] = self.link_procs[n].admin_addr
                d["link_ports"] = list(self.emulated[n])
            out[n] = d
        return out

    def dead_switches(self) -> list[str]:
        """Names of switches (or their link emulators) whose process has exited."""
        dead = [n for n, s in self.switches.items() if s.proc is not None and s.proc.poll() is not None]
        dead += [f"link emulator of {n}" for n, l in self.link_procs.items()
                 if l.proc is not None and l.proc.poll() is not None]
        return dead

    def check_alive(self) -> None:
        """Raise :class:`SwitchStartError` (with the log tail) if a switch died."""
        for name, s in self.switches.items():
            if s.proc is not None and s.proc.poll() is not None:
                raise SwitchStartError(f"{s.target} switch {name} exited with status "
                                       f"{s.proc.returncode}; last lines of {s.log_path}:\n"
                                       f"{log_tail(s.log_path)}")

    # ------------------------------------------------------------- hosts
    def host_command(self, host: str, cmd) -> list[str]:
        if isinstance(cmd, str):
            cmd = ["sh", "-c", cmd]
        return ["ip", "netns", "exec", self.netns(host)] + [str(c) for c in cmd]

    def popen(self, host: str, cmd, log: str | Path | None = None, env: dict | None = None,
              cwd: str | None = None, **popen_kw) -> subprocess.Popen:
        """Start ``cmd`` (list, or a string for ``sh -c``) in ``host``'s namespace.

        stdout+stderr go to ``log`` (relative paths are under the run's log
        dir; default ``<host>.<n>.log``) unless ``stdout=`` is given. The
        process gets ``P4CC_RUN_ID`` (found and killed by cleanup if anything
        goes wrong), its own process group, and is stopped (SIGTERM, then
        SIGKILL) when the network stops.
        """
        if not self._started:
            raise NetworkError("the network is not started")
        with self._lock:
            self._nlog += 1
            n = self._nlog
        if log is None:
            log = f"{host}.{n}.log"
        log = Path(log)
        if not log.is_absolute():
            log = self.log_dir / log
        p = spawn(self.host_command(host, cmd), log, self.run_id, env=env, cwd=cwd, **popen_kw)
        with self._lock:
            self.procs.append((host, p))
        try:
            self.state.add_pid(p.pid, f"host {host}: {cmd if isinstance(cmd, str) else ' '.join(map(str, cmd))}"[:200])
        except OSError:
            pass
        return p

    def run(self, host: str, cmd, timeout: float | None = 60, check: bool = False,
            env: dict | None = None, **kw) -> subprocess.CompletedProcess:
        """Run ``cmd`` in ``host``'s namespace to completion, output captured."""
        full_env = dict(os.environ)
        if env:
            full_env.update({k: str(v) for k, v in env.items()})
        full_env[ENV_RUN_ID] = self.run_id
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        return subprocess.run(self.host_command(host, cmd), timeout=timeout, check=check,
                              env=full_env, **kw)

    def ping(self, src: str, dst: str, count: int = 1, timeout_s: int = 2) -> bool:
        r = self.run(src, ["ping", "-n", "-q", "-c", str(count), "-W", str(timeout_s),
                           self.ip(dst)], timeout=count * timeout_s + 5)
        return r.returncode == 0

    def stop_process(self, p: subprocess.Popen, timeout: float = 3.0) -> int | None:
        """SIGTERM (then SIGKILL) a process started with :meth:`popen`."""
        terminate([p], timeout)
        return p.returncode


def _ethtool_off(iface: str, netns: str | None = None) -> None:
    pre = ["ip", "netns", "exec", netns] if netns else []
    args = []
    for o in OFFLOADS_OFF:
        args += [o, "off"]
    r = subprocess.run(pre + ["ethtool", "-K", iface] + args, capture_output=True, text=True)
    if r.returncode != 0:
        # some drivers refuse one feature (lro fixed): set the rest one by one
        for o in OFFLOADS_OFF:
            subprocess.run(pre + ["ethtool", "-K", iface, o, "off"], capture_output=True)
