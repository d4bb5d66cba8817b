"""Real switch processes for the integration tests: the embedded target
(switch/p4cc-switch) and bmv2 (simple_switch_grpc), each on veth pairs named
p4cctc-* that are deleted afterwards."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from typing import List, Optional

from ctl_helpers import REPO, free_port

EMBEDDED_BIN_CANDIDATES = [
    os.environ.get("P4CC_SWITCH_BIN", ""),
    os.path.join(REPO, "switch", "target", "release", "p4cc-switch"),
    os.path.join(REPO, "switch", "target", "debug", "p4cc-switch"),
]


def embedded_bin() -> Optional[str]:
    for p in EMBEDDED_BIN_CANDIDATES:
        if p and os.access(p, os.X_OK):
            return p
    return shutil.which("p4cc-switch")


def bmv2_bin() -> Optional[str]:
    """As p4cc finds it (docs/building-p4c.md): $P4CC_BMV2_BIN, else PATH."""
    env = os.environ.get("P4CC_BMV2_BIN")
    if env and os.access(env, os.X_OK):
        return env
    return shutil.which("simple_switch_grpc")


def why_not(kind: str) -> Optional[str]:
    """None if a `kind` switch can run here, else the reason to skip."""
    if os.geteuid() != 0:
        return "integration tests need root (veth pairs)"
    if shutil.which("ip") is None:
        return "iproute2 'ip' missing"
    if kind == "embedded" and embedded_bin() is None:
        return ("p4cc-switch not built: cd switch && cargo build --release -p p4cc-switch "
                "(or set P4CC_SWITCH_BIN)")
    if kind == "bmv2" and bmv2_bin() is None:
        return "simple_switch_grpc not installed (bmv2 is built from source: docs/building-p4c.md)"
    return None


class Veths:
    """n veth pairs p4cctc-<tag><i>a <-> p4cctc-<tag><i>b; the switch owns the
    'a' ends, the tests send/receive on the 'b' ends."""

    def __init__(self, n: int):
        tag = f"{os.getpid() % 1000:03d}"
        self.pairs = [(f"p4cctc-{tag}{i}a", f"p4cctc-{tag}{i}b") for i in range(1, n + 1)]
        for a, b in self.pairs:
            subprocess.run(["ip", "link", "del", a], capture_output=True)
            subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
            for dev in (a, b):
                subprocess.run(["ip", "link", "set", dev, "up"], check=True)
                # Only our frames on these links: no IPv6 autoconf chatter.
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1"],
                               capture_output=True)

    def delete(self):
        for a, _ in self.pairs:
            subprocess.run(["ip", "link", "del", a], capture_output=True)


def wait_port(port: int, timeout: float = 20.0) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


class SwitchProcess:
    """start() / stop() / restart() one switch on the same ports each time."""

    def __init__(self, kind: str, veths: Veths, log_dir: str):
        self.kind = kind
        self.veths = veths
        self.grpc_port = free_port()
        self.aux_port = free_port()  # admin API (embedded) or Thrift (bmv2)
        self.addr = f"127.0.0.1:{self.grpc_port}"
        self.log_path = os.path.join(log_dir, f"{kind}-{self.grpc_port}.log")
        self.proc: Optional[subprocess.Popen] = None
        self.starts = 0

    def argv(self) -> List[str]:
        ifs = []
        for i, (a, _) in enumerate(self.veths.pairs, 1):
            ifs += ["--interface" if self.kind == "embedded" else "-i", f"{i}@{a}"]
        if self.kind == "embedded":
            return [embedded_bin()] + ifs + [
                "--grpc-addr", self.addr, "--admin-addr", f"127.0.0.1:{self.aux_port}",
                "--device-id", "1"]
        return [bmv2_bin(), "--device-id", "1"] + ifs + [
            "--thrift-port", str(self.aux_port), "--no-p4", "--",
            "--grpc-server-addr", self.addr]

    def start(self):
        self.starts += 1
        log = open(self.log_path, "a")
        log.write(f"\n=== start #{self.starts}: {' '.join(self.argv())}\n")
        log.flush()
        self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        if not wait_port(self.grpc_port) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError(f"{self.kind} switch did not start; log: {self.log_path}: "
                               + self.log_tail())
        if self.kind == "embedded":
            wait_port(self.aux_port, 5)

    def log_tail(self, n=15) -> str:
        try:
            with open(self.log_path) as f:
                return " | ".join(f.read().strip().splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, sig=signal.SIGKILL):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)  # our own process group only
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        self.proc = None

    def restart(self):
        self.stop()
        self.start()
