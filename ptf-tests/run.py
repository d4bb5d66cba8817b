#!/usr/bin/env python3
"""Run the PTF data-plane suite against one target.

    ptf-tests/run.py --target embedded|bmv2 [--skip-if-absent] [TEST ...]

Creates one veth pair per switch port (switch side p4ccptf-sN, test side
p4ccptf-tN), starts the switch on the switch sides, pushes cc_switch over
P4Runtime, runs PTF on the test sides, and removes everything afterwards,
also when interrupted. The tests are the same for every target.

Two runs on one machine take turns (a lock, /run/lock/p4cc-ptf.lock): the
interface names are fixed, so that what a run killed with SIGKILL leaves,
the next run removes. The switch's TCP ports are picked free each run.
"""
from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "control"))

PORTS = (1, 2, 3, 4)
LOCK = Path("/run/lock/p4cc-ptf.lock")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


GRPC_PORT, ADMIN_PORT, THRIFT_PORT = free_port(), free_port(), free_port()
P4INFO = ROOT / "p4src/build/cc_switch.p4info.bin"
DEVICE_CONFIG = ROOT / "p4src/build/cc_switch.json"


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def switch_side(p):
    return f"p4ccptf-s{p}"


def test_side(p):
    return f"p4ccptf-t{p}"


def create_links():
    for p in PORTS:
        a, b = switch_side(p), test_side(p)
        sh("ip", "link", "del", a, check=False)
        sh("ip", "link", "add", a, "type", "veth", "peer", "name", b)
        for ifc in (a, b):
            # No IPv6: the kernel's own ND/MLD frames would be "other packets".
            sh("sysctl", "-qw", f"net.ipv6.conf.{ifc}.disable_ipv6=1", check=False)
            sh("ethtool", "-K", ifc, "tso", "off", "gso", "off", "gro", "off", "tx", "off",
               check=False)
            sh("ip", "link", "set", ifc, "mtu", "1500", "up")


def delete_links():
    for p in PORTS:
        sh("ip", "link", "del", switch_side(p), check=False)


def find_switch(target: str) -> list[str] | None:
    ifaces = [x for p in PORTS for x in ("-i" if target == "bmv2" else "--interface",
                                          f"{p}@{switch_side(p)}")]
    if target == "embedded":
        binary = ROOT / "switch/target/release/p4cc-switch"
        if not binary.exists():
            binary = shutil.which("p4cc-switch")
        if not binary:
            return None
        return [str(binary), *ifaces, "--grpc-addr", f"127.0.0.1:{GRPC_PORT}",
                "--admin-addr", f"127.0.0.1:{ADMIN_PORT}", "--device-id", "1"]
    binary = shutil.which("simple_switch_grpc")
    if not binary:
        return None
    return [binary, "--device-id", "1", *ifaces, "--thrift-port", str(THRIFT_PORT), "--no-p4",
            "--", "--grpc-server-addr", f"127.0.0.1:{GRPC_PORT}"]


def wait_port(port: int, proc: subprocess.Popen, log: Path, deadline_s: float = 20):
    end = time.time() + deadline_s
    while time.time() < end:
        if proc.poll() is not None:
            sys.exit(f"switch exited ({proc.returncode}) before serving gRPC:\n"
                     f"{log.read_text()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"switch did not open 127.0.0.1:{port} within {deadline_s}s:\n{log.read_text()[-2000:]}")


def push_pipeline():
    from p4cc_control.switch import Switch
    with Switch.connect(f"127.0.0.1:{GRPC_PORT}", device_id=1, p4info=str(P4INFO),
                        device_config=str(DEVICE_CONFIG), push=True, reconnect=False):
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", choices=("embedded", "bmv2"), default="embedded")
    ap.add_argument("--skip-if-absent", action="store_true",
                    help="exit 0 with a message when the target is not installed")
    ap.add_argument("tests", nargs="*", help="PTF test names (default: all)")
    args = ap.parse_args()
    if args.target not in ("embedded", "bmv2"):
        sys.exit(f"unknown target {args.target}")
    if os.geteuid() != 0:
        sys.exit("the PTF suite needs root (veth pairs, raw sockets)")

    cmd = find_switch(args.target)
    if cmd is None:
        what = ("simple_switch_grpc not on PATH (bmv2 is in no package registry; "
                "see docs/building-p4c.md)" if args.target == "bmv2"
                else "p4cc-switch not built: run `make setup`")
        if args.skip_if_absent:
            print(f"SKIPPED ptf on {args.target}: {what}")
            return 0
        sys.exit(f"cannot run ptf on {args.target}: {what}")

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, on_signal)

    LOCK.parent.mkdir(parents=True, exist_ok=True)
    lock = open(LOCK, "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"another PTF run holds {LOCK}: waiting for it", flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)

    work = Path(tempfile.mkdtemp(prefix="p4cc-ptf-"))
    log = work / "switch.log"
    proc = None
    try:
        create_links()
        with open(log, "w") as lf:
            proc = subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        wait_port(GRPC_PORT, proc, log)
        push_pipeline()
        params = (f"target='{args.target}';grpc_addr='127.0.0.1:{GRPC_PORT}';device_id=1;"
                  f"admin_addr='127.0.0.1:{ADMIN_PORT}';thrift_port={THRIFT_PORT};"
                  f"p4info='{P4INFO}';device_config='{DEVICE_CONFIG}'")
        ptf = [str(Path(sys.executable).parent / "ptf"), "--test-dir", str(ROOT / "ptf-tests/tests"),
               "--pypath", str(ROOT / "control"), "--log-file", str(work / "ptf.log"),
               "--test-params", params, *[a for p in PORTS for a in ("--interface", f"{p}@{test_side(p)}")],
               *args.tests]
        print(f"ptf on {args.target}: logs in {work}", flush=True)
        env = dict(os.environ, PYTHONPATH=str(ROOT / "control"))
        res = subprocess.run(ptf, env=env)
        if proc.poll() is not None:
            print(f"the switch died during the tests ({proc.returncode}); log tail:\n"
                  f"{log.read_text()[-2000:]}", file=sys.stderr)
            return 1
        return res.returncode
    except KeyboardInterrupt:
        print("interrupted: cleaning up", file=sys.stderr)
        return 130
    finally:
        if proc and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        delete_links()


if __name__ == "__main__":
    sys.exit(main())
