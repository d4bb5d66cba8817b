"""Links for targets that have no link model of their own (bmv2).

bmv2 limits a port's rate and depth but has no propagation delay and no
random loss. p4cc gives them to it without the kernel's netem (which some
kernels, this project's test machines' among them, do not have): a link
emulator, ``p4cc-link`` (``switch/p4cc-link``, on the embedded target's
link model), is spliced between each such bmv2 port and its peer::

    bmv2 port P ─ p4cc<run>s<i>e<P> ═veth═ p4cc<run>s<i>w<P> ─[p4cc-link]─ p4cc<run>s<i>p<P> ═veth═ peer

A frame bmv2 sends out of port P leaves the link emulator towards the peer
after P's delay and loss; frames from the peer pass straight to bmv2.
bmv2 keeps its own queue, rate limit and ECN marking — the thing under
test. One ``p4cc-link`` per switch carries all its emulated ports; in it,
port P is the end facing the peer (so ``PUT /ports/P`` on its admin API
sets switch port P's delay and loss, as on the embedded target) and
``P + SWITCH_SIDE`` the end facing bmv2. The controller applies delay and
loss there (p4cc_control.targets.Bmv2Target); the fidelity monitor reads
its release slip and ring drops as it reads the embedded switch's.

``links="netem"`` instead puts delay and loss on the switch port's
interface with the kernel's netem, where it exists and the user asks for it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from .listen_ports import free_tcp_port
from .targets import (REPO_ROOT, SwitchStartError, TargetUnavailable, log_tail, pid_listens_on,
                      spawn)

__all__ = ["LINK_MODES", "SWITCH_SIDE", "find_link", "emulated_ports", "LinkProcess",
           "needs_emulation"]

#: How delay and loss reach a bmv2 port: p4cc's link emulator, or netem.
LINK_MODES = ("p4cc", "netem")
#: A link emulator's port facing the switch is the switch port's number
#: plus this (v1model ports are 9 bits; p4cc's topologies number from 1).
SWITCH_SIDE = 256


def find_link() -> Path:
    """The p4cc-link binary: $P4CC_LINK_BIN, the repo's release build, or
    p4cc-link on PATH."""
    cands = [Path(p) for p in (os.environ.get("P4CC_LINK_BIN"),) if p]
    cands.append(REPO_ROOT / "switch" / "target" / "release" / "p4cc-link")
    w = shutil.which("p4cc-link")
    if w:
        cands.append(Path(w))
    for c in cands:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    raise TargetUnavailable(
        "the link emulator p4cc-link is not built (bmv2 needs it for link delay and loss): run "
        "`make setup` (or `cargo build --release --manifest-path "
        f"{REPO_ROOT / 'switch' / 'Cargo.toml'} -p p4cc-link`), or point P4CC_LINK_BIN at it")


def needs_emulation(settings: dict) -> bool:
    """Whether a port's link model has something bmv2 cannot do itself."""
    return bool(settings.get("delay_us") or settings.get("loss"))


def emulated_ports(configs: dict, events=()) -> dict[str, list[int]]:
    """Per switch, the ports whose delay or loss is not zero at the start
    or becomes non-zero through an event (a link cannot be spliced in
    mid-run): ``configs`` are the plan's SwitchConfigs, ``events`` its
    Events. Loss the P4 program applies (``loss_in: "p4"``) does not count."""
    out: dict[str, set[int]] = {}
    for name, c in configs.items():
        for port, pc in c.ports.items():
            model = pc.link_model()
            if c.loss_in == "p4":
                model.pop("loss", None)
            if needs_emulation(model):
                out.setdefault(name, set()).add(int(port))
    for e in events:
        s = dict(e.set)
        if configs.get(e.switch) is not None and configs[e.switch].loss_in == "p4":
            s.pop("loss", None)
        if needs_emulation(s):
            out.setdefault(e.switch, set()).add(int(e.port))
    return {n: sorted(p) for n, p in sorted(out.items())}


class LinkProcess:
    """The link emulator of one switch's emulated ports: ``ports`` maps
    the switch port P to (the interface facing the switch, the interface
    facing the peer)."""

    def __init__(self, switch: str, ports: dict[int, tuple[str, str]], run_id: str,
                 log_dir: Path, seed: int | None = None, rt_prio: int | None = None,
                 binary: Path | None = None):
        for p in ports:
            if not 0 <= int(p) < SWITCH_SIDE:
                raise ValueError(f"switch {switch} port {p}: a link emulator serves ports "
                                 f"0..{SWITCH_SIDE - 1}")
        self.switch = switch
        self.ports = {int(p): ends for p, ends in sorted(ports.items())}
        self.run_id = run_id
        self.log_dir = Path(log_dir)
        self.seed = seed
        self.rt_prio = rt_prio
        self.binary = binary or find_link()
        self.admin_port = 0
        self.proc: subprocess.Popen | None = None

    @property
    def admin_addr(self) -> str:
        return f"127.0.0.1:{self.admin_port}"

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"link-{self.switch}.log"

    def command(self) -> list[str]:
        cmd = [str(self.binary), "--admin-addr", self.admin_addr]
        for p, (towards_switch, towards_peer) in self.ports.items():
            cmd += ["--pair", f"{p + SWITCH_SIDE}@{towards_switch},{p}@{towards_peer}"]
        if self.seed is not None:
            cmd += ["--seed", str(self.seed)]
        if self.rt_prio is not None:
            cmd += ["--rt-prio", str(self.rt_prio)]
        return cmd

    def start(self) -> subprocess.Popen:
        if not self.admin_port:
            self.admin_port = free_tcp_port()
        self.proc = spawn(self.command(), self.log_path, self.run_id)
        return self.proc

    def wait_ready(self, timeout: float = 20.0) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while not pid_listens_on(self.proc.pid, self.admin_port):
            rc = self.proc.poll()
            if rc is not None:
                raise SwitchStartError(
                    f"link emulator of {self.switch} exited with status {rc} while starting "
                    f"(command: {' '.join(self.command())}); last lines of {self.log_path}:\n"
                    f"{log_tail(self.log_path)}")
            if time.monotonic() > deadline:
                raise SwitchStartError(
                    f"link emulator of {self.switch} did not listen on {self.admin_addr} within "
                    f"{timeout:.0f} s; last lines of {self.log_path}:\n{log_tail(self.log_path)}")
            time.sleep(0.05)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def describe(self) -> dict:
        return {"switch": self.switch, "admin_addr": self.admin_addr,
                "ports": {p: list(ends) for p, ends in self.ports.items()},
                "pid": self.proc.pid if self.proc else None, "log": str(self.log_path)}
