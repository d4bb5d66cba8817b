"""Switch targets: which one to run, what each can apply, and launching it.

Targets
-------
``embedded``  p4cc's own software switch (``switch/`` → ``p4cc-switch``).
``bmv2``      ``simple_switch_grpc``.
``pyfwd``     a tiny Python forwarder for tests and debugging (no P4: it
              forwards by the routes of the plan); it applies no link property.
``auto``      bmv2 when asked for through ``P4CC_TARGET=bmv2`` and installed,
              else embedded.

Switches start bare: their ports and nothing else. The pipeline, the routes,
K and every port's link model (line rate, delay, loss, queue depth) reach a
switch through the controller only (p4cc_control.program), whatever the
target; what a target cannot apply is refused before anything is built
(p4cc_exp.executors checks the plan against the target).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .listen_ports import free_tcp_port
from .model import Topology
from .naming import ENV_RUN_ID, port_ifname

__all__ = [
    "TARGETS",
    "TargetUnavailable",
    "TargetCapabilityError",
    "SwitchStartError",
    "resolve_target",
    "find_embedded",
    "find_bmv2",
    "netem_available",
    "interfaces",
    "SwitchProcess",
    "EmbeddedSwitch",
    "Bmv2Switch",
    "PyFwdSwitch",
]

TARGETS = ("embedded", "bmv2", "pyfwd")
REPO_ROOT = Path(__file__).resolve().parents[2]


class TargetUnavailable(RuntimeError):
    """The switch binary for a target is not installed/built."""


class TargetCapabilityError(ValueError):
    """A plan asks for a link property the target cannot apply here. The
    first line says it all (what the CLIs print); the rest lists each."""

    def __init__(self, target: str, problems: list[str]):
        self.target = target
        self.problems = problems
        n = len(problems)
        head = (f"target {target} cannot apply {n} link propert{'y' if n == 1 else 'ies'}: "
                f"{problems[0]}" + (f" (and {n - 1} more)" if n > 1 else ""))
        super().__init__(head + ("" if n == 1 else "\n" + "\n".join(f"  - {p}" for p in problems)))


class SwitchStartError(RuntimeError):
    """A switch process died or never served its port; carries its log tail."""


# ----------------------------------------------------------------- discovery

def find_embedded() -> Path:
    """The p4cc-switch binary: $P4CC_SWITCH_BIN, the repo's release build,
    or p4cc-switch on PATH."""
    cands = []
    env = os.environ.get("P4CC_SWITCH_BIN")
    if env:
        cands.append(Path(env))
    cands.append(REPO_ROOT / "switch" / "target" / "release" / "p4cc-switch")
    w = shutil.which("p4cc-switch")
    if w:
        cands.append(Path(w))
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise TargetUnavailable(
        "the embedded target p4cc-switch is not built: run `make build` in the repository "
        f"(or `cargo build --release --manifest-path {REPO_ROOT / 'switch' / 'Cargo.toml'}`), "
        "or point P4CC_SWITCH_BIN at the binary")


def find_bmv2() -> Path:
    """simple_switch_grpc: $P4CC_BMV2_BIN or PATH."""
    env = os.environ.get("P4CC_BMV2_BIN")
    if env and os.access(env, os.X_OK):
        return Path(env)
    w = shutil.which("simple_switch_grpc")
    if w:
        return Path(w)
    raise TargetUnavailable(
        "bmv2 (simple_switch_grpc) is not installed: it is in no package registry; build "
        "p4lang/behavioral-model with PI/gRPC from source and put it on PATH "
        "(see docs/building-p4c.md), or use --target embedded")


def find_bmv2_cli() -> Path | None:
    env = os.environ.get("P4CC_SIMPLE_SWITCH_CLI")
    if env and os.path.exists(env):
        return Path(env)
    w = shutil.which("simple_switch_CLI")
    return Path(w) if w else None


def resolve_target(target: str | None = "auto") -> str:
    """``auto`` → bmv2 if ``P4CC_TARGET=bmv2`` and bmv2 is installed, else
    embedded. An explicit target is checked to be installed."""
    target = target or "auto"
    if target == "auto":
        want = os.environ.get("P4CC_TARGET", "")
        if want == "bmv2":
            try:
                find_bmv2()
                return "bmv2"
            except TargetUnavailable:
                pass
        elif want and want != "auto":
            return resolve_target(want)
        find_embedded()
        return "embedded"
    if target not in TARGETS:
        raise ValueError(f"unknown target {target!r} (known: auto, {', '.join(TARGETS)})")
    if target == "embedded":
        find_embedded()
    elif target == "bmv2":
        find_bmv2()
    return target


_netem_cache: bool | None = None


def netem_available() -> bool:
    """Whether ``tc qdisc add ... netem`` works here, tried once in an
    anonymous network namespace (``unshare -n``) that vanishes with the
    probe, so nothing is left to clean up."""
    global _netem_cache
    if _netem_cache is None:
        try:
            r = subprocess.run(["unshare", "-n", "tc", "qdisc", "add", "dev", "lo", "root",
                                "netem", "delay", "1ms"], capture_output=True, timeout=20)
            _netem_cache = r.returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            _netem_cache = False
    return _netem_cache


# ----------------------------------------------------------------- interfaces

def interfaces(topo: Topology, run_id: str) -> dict[str, dict[int, str]]:
    """Per switch, port number → the name of its veth end in the root
    namespace (``p4cc<run>s<switch index>e<port>``)."""
    out: dict[str, dict[int, str]] = {s: {} for s in topo.switches}
    for name, sw in topo.switches.items():
        for port, _ in topo.switch_links(name):
            out[name][port] = port_ifname(run_id, sw.index, port)
    return out


# ----------------------------------------------------------------- processes

def _listening_inodes(port: int) -> set[int]:
    inodes = set()
    for path in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(path) as f:
                next(f)
                for line in f:
                    parts = line.split()
                    local, st, inode = parts[1], parts[3], parts[9]
                    if st == "0A" and int(local.rsplit(":", 1)[1], 16) == port:
                        inodes.add(int(inode))
        except OSError:
            pass
    return inodes


def pid_listens_on(pid: int, port: int) -> bool:
    """Whether process ``pid`` (or a thread of it) holds a LISTEN socket on ``port``."""
    inodes = _listening_inodes(port)
    if not inodes:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:[") and int(target[8:-1]) in inodes:
            return True
    return False


def log_tail(path: Path, lines: int = 30) -> str:
    try:
        data = Path(path).read_bytes()[-16384:].decode(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(data.splitlines()[-lines:]) or "(empty log)"


_SETPRIV = shutil.which("setpriv")


def pdeathsig_prefix(enabled: bool) -> list[str]:
    """``setpriv --pdeathsig KILL --`` (util-linux): the command is SIGKILLed
    when the thread that started it dies. Used instead of a preexec_fn, which
    can deadlock in a process with threads (the controller has some)."""
    return [_SETPRIV, "--pdeathsig", "KILL", "--"] if enabled and _SETPRIV else []


def spawn(cmd: list[str], log_path: Path, run_id: str, env: dict | None = None,
          cwd: str | None = None, pdeathsig: bool | None = None, stdin=subprocess.DEVNULL,
          **popen_kw) -> subprocess.Popen:
    """Start ``cmd`` with the run marker in its environment, stdout+stderr
    appended to ``log_path``, in its own process group, killed with SIGKILL if
    the starting thread dies (PR_SET_PDEATHSIG through setpriv; only from the
    main thread, where "thread dies" means "process dies")."""
    import threading
    full_env = dict(os.environ)
    if env:
        full_env.update({k: str(v) for k, v in env.items()})
    full_env[ENV_RUN_ID] = run_id
    if pdeathsig is None:
        pdeathsig = threading.current_thread() is threading.main_thread()
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    logf = open(log_path, "ab", buffering=0)
    try:
        logf.write(f"# p4cc run {run_id}: {' '.join(cmd)}\n".encode())
        kw = dict(stdout=logf, stderr=subprocess.STDOUT, process_group=0)
        kw.update(popen_kw)
        return subprocess.Popen(pdeathsig_prefix(pdeathsig) + list(cmd), env=full_env, cwd=cwd,
                                stdin=stdin, **kw)
    finally:
        logf.close()


def terminate(procs: list[subprocess.Popen], timeout: float = 3.0) -> None:
    """SIGTERM each process group, wait, then SIGKILL what is left."""
    import signal
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + timeout
    for p in procs:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)  # stragglers in the group too
        except (ProcessLookupError, PermissionError):
            pass
        try:
            p.wait(2)
        except subprocess.TimeoutExpired:
            pass


@dataclass
class SwitchProcess:
    """A running switch of one topology switch."""
    name: str
    device_id: int
    ports: dict                      # port -> interface name
    run_id: str
    log_dir: Path
    grpc_port: int = 0
    proc: subprocess.Popen | None = None
    target: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def grpc_addr(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"switch-{self.name}.log"

    def command(self) -> list[str]:  # pragma: no cover - abstract
        raise NotImplementedError

    def prepare(self) -> None:
        """Write any files the command needs (called before :meth:`start`)."""

    def start(self) -> subprocess.Popen:
        if not self.grpc_port:
            self.grpc_port = free_tcp_port()
        self.prepare()
        self.proc = spawn(self.command(), self.log_path, self.run_id)
        return self.proc

    def wait_ready(self, timeout: float = 20.0) -> None:
        """Until the process listens on its gRPC port; a death or the deadline
        raises :class:`SwitchStartError` with the log tail."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise SwitchStartError(
                    f"{self.target} switch {self.name} exited with status {rc} while starting "
                    f"(command: {' '.join(self.command())}); last lines of {self.log_path}:\n"
                    f"{log_tail(self.log_path)}")
            if pid_listens_on(self.proc.pid, self.grpc_port):
                return
            if time.monotonic() > deadline:
                raise SwitchStartError(
                    f"{self.target} switch {self.name} did not listen on {self.grpc_addr} within "
                    f"{timeout:.0f} s; last lines of {self.log_path}:\n{log_tail(self.log_path)}")
            time.sleep(0.05)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def describe(self) -> dict:
        """Where it listens and what it is: what p4cc_control.Endpoint takes."""
        return {"name": self.name, "target": self.target, "grpc_addr": self.grpc_addr,
                "device_id": self.device_id, "port_ifaces": dict(self.ports),
                "pid": self.proc.pid if self.proc else None, "log": str(self.log_path)}


class EmbeddedSwitch(SwitchProcess):
    def __init__(self, *a, binary: Path | None = None, seed: int | None = None,
                 p4_json: str | None = None, p4info: str | None = None,
                 cpu_port: int | None = None, rt_prio: int | None = None, **kw):
        super().__init__(*a, **kw)
        self.target = "embedded"
        self.binary = binary or find_embedded()
        self.seed = seed
        self.p4_json = p4_json
        self.p4info = p4info
        self.cpu_port = cpu_port
        self.rt_prio = rt_prio
        self.admin_port = 0

    @property
    def admin_addr(self) -> str:
        return f"127.0.0.1:{self.admin_port}"

    def prepare(self) -> None:
        if not self.admin_port:
            self.admin_port = free_tcp_port()

    def command(self) -> list[str]:
        cmd = [str(self.binary), "--device-id", str(self.device_id),
               "--grpc-addr", self.grpc_addr, "--admin-addr", self.admin_addr]
        for port, iface in self.ports.items():
            cmd += ["--interface", f"{port}@{iface}"]
        if self.seed is not None:
            cmd += ["--seed", str(self.seed)]
        if self.p4_json:
            cmd += ["--json", str(self.p4_json)]
            if self.p4info:
                cmd += ["--p4info", str(self.p4info)]
        if self.cpu_port is not None:
            cmd += ["--cpu-port", str(self.cpu_port)]
        if self.rt_prio is not None:
            cmd += ["--rt-prio", str(self.rt_prio)]
        return cmd

    def describe(self) -> dict:
        d = super().describe()
        d["admin_addr"] = self.admin_addr
        return d


class Bmv2Switch(SwitchProcess):
    def __init__(self, *a, binary: Path | None = None, p4_json: str | None = None,
                 cpu_port: int | None = None, **kw):
        super().__init__(*a, **kw)
        self.target = "bmv2"
        self.binary = binary or find_bmv2()
        self.p4_json = p4_json
        self.cpu_port = cpu_port
        self.thrift_port = 0

    def prepare(self) -> None:
        if not self.thrift_port:
            self.thrift_port = free_tcp_port()

    def command(self) -> list[str]:
        cmd = [str(self.binary), "--device-id", str(self.device_id)]
        for port, iface in self.ports.items():
            cmd += ["-i", f"{port}@{iface}"]
        cmd += ["--thrift-port", str(self.thrift_port),
                "--log-file", str(self.log_dir / f"switch-{self.name}.bmv2"), "--log-flush",
                "--log-level", "warn"]  # per-packet logging would cost most of its speed
        cmd += [self.p4_json] if self.p4_json else ["--no-p4"]
        cmd += ["--", "--grpc-server-addr", self.grpc_addr]
        if self.cpu_port is not None:
            cmd += ["--cpu-port", str(self.cpu_port)]
        return cmd

    def describe(self) -> dict:
        d = super().describe()
        d["thrift_port"] = self.thrift_port
        return d


class PyFwdSwitch(SwitchProcess):
    """The test forwarder: ``python -m p4cc_topo.pyfwd CONFIG``."""

    def __init__(self, *a, routes: list | None = None, **kw):
        super().__init__(*a, **kw)
        self.target = "pyfwd"
        self.routes = routes or []

    @property
    def config_path(self) -> Path:
        return self.log_dir / f"switch-{self.name}.pyfwd.json"

    def prepare(self) -> None:
        self.config_path.parent.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps({
            "name": self.name,
            "listen": self.grpc_addr,
            "ports": {str(port): iface for port, iface in self.ports.items()},
            "routes": self.routes,
        }, indent=1))

    def command(self) -> list[str]:
        return [sys.executable, "-m", "p4cc_topo.pyfwd", str(self.config_path)]

    def start(self) -> subprocess.Popen:
        if not self.grpc_port:
            self.grpc_port = free_tcp_port()
        self.prepare()
        pkg_parent = str(Path(__file__).resolve().parents[1])
        pp = os.environ.get("PYTHONPATH", "")
        env = {"PYTHONPATH": pkg_parent + (os.pathsep + pp if pp else "")}
        self.proc = spawn(self.command(), self.log_path, self.run_id, env=env)
        return self.proc


def make_switch(target: str, name: str, device_id: int, ports: dict, run_id: str,
                log_dir: Path, routes: list, **opts) -> SwitchProcess:
    if target == "embedded":
        return EmbeddedSwitch(name, device_id, ports, run_id, log_dir, seed=opts.get("seed"),
                              p4_json=opts.get("p4_json"), p4info=opts.get("p4info"),
                              cpu_port=opts.get("cpu_port"), rt_prio=opts.get("rt_prio"))
    if target == "bmv2":
        return Bmv2Switch(name, device_id, ports, run_id, log_dir, p4_json=opts.get("p4_json"),
                          cpu_port=opts.get("cpu_port"))
    if target == "pyfwd":
        return PyFwdSwitch(name, device_id, ports, run_id, log_dir, routes=routes)
    raise ValueError(f"unknown target {target!r}")
