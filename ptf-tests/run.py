#!/usr/bin/env python3
"""Run the PTF data-plane suite against one target.

    ptf-tests/run.py --target embedded|bmv2|tofino [--skip-if-absent] [TEST ...]

Creates one veth pair per switch port (switch side p4ccptf-sN, test side
p4ccptf-tN), starts the switch on the switch sides, pushes cc_switch over
P4Runtime, runs PTF on the test sides, and removes everything afterwards,
also when interrupted. The tests are the same for every target; what
differs (the switch's port numbers, its queue unit) is passed to them as
test params.

Tofino runs the TNA program on the SDE's tofino-model driven by Stratum
(stratum_bfrt), exactly as a hardware switch is driven. It needs, from the
environment (docs/tofino.md, PTF on tofino-model):
    SDE_INSTALL          the SDE's install folder (bin/tofino-model)
    P4CC_STRATUM_BFRT    stratum_bfrt (default: on PATH)
    P4CC_TOFINO_CHIP     tofino (default) or tofino2
    P4CC_TOFINO_BUILD    bf-p4c's output for that chip (default
                         build/tofino/CHIP, from `make p4-tna`)
The model's device ports 0-3 are the PTF ports 1-4 (P4CC_TOFINO_PORTS
changes them); Stratum brings them up from a chassis config written here.

On bmv2, p4cc's link emulator (p4cc-link, p4cc_topo.links) is spliced in
front of every port when it is built, so that tests that need a link delay
or loss get it as experiments do (bmv2 has neither): the switch side
p4ccptf-sN is then cabled to p4ccptf-wN, and the emulator bridges it with
p4ccptf-pN, the test side's peer.

Two runs on one machine take turns (a lock, /run/lock/p4cc-ptf.lock): the
interface names are fixed, so that what a run killed with SIGKILL leaves,
the next run removes. The switch's TCP ports are picked free each run.
"""
from __future__ import annotations

import argparse
import fcntl
import json
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
sys.path.insert(0, str(ROOT / "topologies"))

PORTS = (1, 2, 3, 4)
LOCK = Path("/run/lock/p4cc-ptf.lock")


from p4cc_topo.listen_ports import free_tcp_port as free_port  # noqa: E402

GRPC_PORT, ADMIN_PORT, THRIFT_PORT, LINK_PORT = free_port(), free_port(), free_port(), free_port()
P4INFO = ROOT / "p4src/build/cc_switch.p4info.bin"
DEVICE_CONFIG = ROOT / "p4src/build/cc_switch.json"


def sh(*cmd, check=True):
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def switch_side(p):
    return f"p4ccptf-s{p}"


def test_side(p):
    return f"p4ccptf-t{p}"


def link_ends(p):
    """The link emulator's ends: facing the switch, facing the test side."""
    return f"p4ccptf-w{p}", f"p4ccptf-p{p}"


def create_links(emulate: bool = False):
    delete_links()
    pairs = []
    for p in PORTS:
        if emulate:
            w, q = link_ends(p)
            pairs += [(switch_side(p), w), (q, test_side(p))]
        else:
            pairs.append((switch_side(p), test_side(p)))
    for a, b in pairs:
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
        sh("ip", "link", "del", link_ends(p)[1], check=False)


def link_command():
    """The link emulator for bmv2's ports, or None when it is not built."""
    from p4cc_topo.links import SWITCH_SIDE, find_link
    from p4cc_topo.targets import TargetUnavailable
    try:
        binary = find_link()
    except TargetUnavailable:
        return None
    cmd = [str(binary), "--admin-addr", f"127.0.0.1:{LINK_PORT}"]
    for p in PORTS:
        w, q = link_ends(p)
        cmd += ["--pair", f"{p + SWITCH_SIDE}@{w},{p}@{q}"]
    return cmd


TOFINO_CHIP_TYPE = {"tofino": 2, "tofino2": 5}  # tofino-model --chip-type (SDE run_tofino_model.sh)
TOFINO_FAMILY = {"tofino": "Tofino", "tofino2": "Tofino2"}


def tofino_setup() -> tuple[dict | None, str]:
    """What a Tofino run needs, or (None, what is missing)."""
    from p4cc_control.tofino import committed_p4info, compile_dir

    chip = os.environ.get("P4CC_TOFINO_CHIP", "tofino")
    if chip not in TOFINO_CHIP_TYPE:
        return None, f"P4CC_TOFINO_CHIP={chip}: use tofino or tofino2"
    sde = os.environ.get("SDE_INSTALL")
    model = Path(sde, "bin", "tofino-model") if sde else None
    stratum = os.environ.get("P4CC_STRATUM_BFRT") or shutil.which("stratum_bfrt")
    build = Path(os.environ.get("P4CC_TOFINO_BUILD") or compile_dir(chip))
    p4info = Path(committed_p4info(chip))
    missing = []
    if not sde or not model.exists():
        missing.append("the Intel/open Tofino SDE (SDE_INSTALL with bin/tofino-model)")
    if not stratum:
        missing.append("stratum_bfrt (P4CC_STRATUM_BFRT or on PATH)")
    if not list(build.glob("*.conf")):
        missing.append(f"bf-p4c's output in {build} (make p4-tna)")
    if not p4info.exists():
        missing.append(f"the Tofino P4Info {p4info} (make p4-tna)")
    if missing:
        return None, "needs " + "; ".join(missing) + " (docs/tofino.md)"
    ports = [int(x) for x in os.environ.get("P4CC_TOFINO_PORTS", "0,1,2,3").split(",")]
    if len(ports) != len(PORTS):
        return None, f"P4CC_TOFINO_PORTS needs {len(PORTS)} device ports"
    return {"chip": chip, "sde": sde, "model": str(model), "stratum": stratum,
            "build": build, "p4info": p4info, "ports": ports}, ""


def tofino_files(t: dict, work: Path) -> dict:
    """tofino-model's port map and target config, Stratum's chassis config."""
    port_map = work / "ports.json"
    port_map.write_text(json.dumps({"PortToIf": [
        {"device_port": dev, "if": switch_side(p)} for p, dev in zip(PORTS, t["ports"])]}, indent=2))
    # The SDE's "skip p4" target config: the driver starts with no program;
    # Stratum loads ours when the controller pushes it.
    switchd = work / "tofino_skip_p4.conf"
    switchd.write_text(json.dumps({
        "chip_list": [{"id": "asic-0", "chip_family": TOFINO_FAMILY[t["chip"]], "instance": 0,
                       "pcie_sysfs_prefix": "/sys/devices/pci0000:00/0000:00:03.0/0000:05:00.0",
                       "pcie_domain": 0, "pcie_bus": 5, "pcie_fn": 0, "pcie_dev": 0,
                       "pcie_int_mode": 1, "sds_fw_path": "share/tofino_sds_fw/avago/firmware"}],
        "instance": 0,
        "p4_program_list": [{"id": "pgm-0", "instance": 0, "path": "dummy",
                             "program-name": "dummy", "pd": "", "pd-thrift": "",
                             "table-config": "", "tofino-bin": "",
                             "agent0": "lib/libpltfm_mgr.so"}]}, indent=2))
    # Stratum's chassis config: one node (P4Runtime device 1), the model's
    # front-panel port 1, channels 1-4 (device ports 0-3 on tofino-model).
    lines = ['description: "p4cc PTF on tofino-model"',
             'chassis { platform: PLT_GENERIC_BAREFOOT_TOFINO name: "tofino-model" }',
             "nodes { id: 1 slot: 1 index: 1 }"]
    for i, p in enumerate(PORTS, start=1):
        lines.append(f'singleton_ports {{ id: {p} name: "{switch_side(p)}" slot: 1 port: 1 '
                     f'channel: {i} speed_bps: 10000000000 '
                     "config_params { admin_state: ADMIN_STATE_ENABLED } node: 1 }")
    chassis = work / "chassis_config.pb.txt"
    chassis.write_text("\n".join(lines) + "\n")
    return {"port_map": port_map, "switchd": switchd, "chassis": chassis}


def tofino_commands(t: dict, work: Path) -> list[list[str]]:
    f = tofino_files(t, work)
    model = [t["model"], "-d", "1", "-f", str(f["port_map"]), "--p4-target-config",
             str(f["switchd"]), "--install-dir", t["sde"],
             "--chip-type", str(TOFINO_CHIP_TYPE[t["chip"]])]
    stratum = [t["stratum"], f"-chassis_config_file={f['chassis']}",
               f"-bf_sde_install={t['sde']}", f"-bf_switchd_cfg={f['switchd']}",
               "-bf_switchd_background=true", "-enable_onlp=false",
               f"-external_stratum_urls=127.0.0.1:{GRPC_PORT}",
               f"-local_stratum_url=127.0.0.1:{free_port()}",
               f"-persistent_config_dir={work}",
               f"-forwarding_pipeline_configs_file={work / 'pipeline_cfg.pb.txt'}",
               f"-write_req_log_file={work / 'p4_writes.pb.txt'}",
               f"-read_req_log_file={work / 'p4_reads.pb.txt'}",
               f"-log_dir={work}", "-logtostderr=true"]
    return [model, stratum]


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
    from p4cc_topo.targets import TargetUnavailable, find_bmv2

    try:
        binary = str(find_bmv2())   # $P4CC_BMV2_BIN, else PATH, as everywhere in p4cc
    except TargetUnavailable:
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


def push_pipeline(target, p4info, device_config):
    from p4cc_control.switch import Switch
    with Switch.connect(f"127.0.0.1:{GRPC_PORT}", device_id=1, p4info=str(p4info),
                        device_config=str(device_config), push=True, reconnect=False,
                        timeout=60 if target.name == "tofino" else 5,
                        device_config_loader=target.load_device_config):
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", choices=("embedded", "bmv2", "tofino"), default="embedded")
    ap.add_argument("--skip-if-absent", action="store_true",
                    help="exit 0 with a message when the target is not installed")
    ap.add_argument("tests", nargs="*", help="PTF test names (default: all)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("the PTF suite needs root (veth pairs, raw sockets)")

    from p4cc_control.targets import make_target

    tofino = None
    if args.target == "tofino":
        tofino, what = tofino_setup()
        cmds = None if tofino is None else ["tofino"]
    else:
        cmd = find_switch(args.target)
        cmds = None if cmd is None else [cmd]
        what = ("simple_switch_grpc not found ($P4CC_BMV2_BIN, else PATH; bmv2 is in no package registry: "
                "see docs/building-p4c.md)" if args.target == "bmv2"
                else "p4cc-switch not built: run `make setup`")
    if cmds is None:
        if args.skip_if_absent:
            print(f"SKIPPED ptf on {args.target}: {what}")
            return 0
        sys.exit(f"cannot run ptf on {args.target}: {what}")
    if tofino:
        target = make_target("tofino", chip=tofino["chip"], ports=tofino["ports"])
        p4info, device_config = tofino["p4info"], tofino["build"]
        switch_ports = ",".join(str(p) for p in tofino["ports"])
    else:
        target = make_target(args.target)
        p4info, device_config = P4INFO, DEVICE_CONFIG
        switch_ports = ",".join(str(p) for p in PORTS)

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
    procs: list[subprocess.Popen] = []
    proc = None
    link = link_command() if args.target == "bmv2" else None
    if args.target == "bmv2" and link is None:
        print("bmv2: p4cc-link not built, tests that need a link delay or loss skip "
              "(make setup builds it)", flush=True)
    try:
        create_links(emulate=link is not None)
        if link is not None:
            with open(work / "link.log", "w") as lf:
                lp = subprocess.Popen(link, stdout=lf, stderr=subprocess.STDOUT,
                                      start_new_session=True)
            procs.append(lp)
            wait_port(LINK_PORT, lp, work / "link.log")
        if tofino:
            cmds = tofino_commands(tofino, work)
        for i, cmd in enumerate(cmds):
            # The last process is the one serving P4Runtime; tofino-model
            # logs beside it.
            with open(log if i == len(cmds) - 1 else work / "tofino-model.log", "w") as lf:
                procs.append(subprocess.Popen(cmd, stdout=lf, stderr=subprocess.STDOUT,
                                              start_new_session=True))
        proc = procs[-1]
        # Stratum starts the SDE before it serves gRPC: give it time.
        wait_port(GRPC_PORT, proc, log, deadline_s=180 if tofino else 20)
        push_pipeline(target, p4info, device_config)
        params = (f"target='{args.target}';grpc_addr='127.0.0.1:{GRPC_PORT}';device_id=1;"
                  f"admin_addr='127.0.0.1:{ADMIN_PORT}';thrift_port={THRIFT_PORT};"
                  f"p4info='{p4info}';device_config='{device_config}';"
                  f"switch_ports='{switch_ports}'"
                  + (f";chip='{tofino['chip']}'" if tofino else "")
                  + (f";link_admin_addr='127.0.0.1:{LINK_PORT}';link_ports='{switch_ports}'"
                     if link else ""))
        ptf = [str(Path(sys.executable).parent / "ptf"), "--test-dir", str(ROOT / "ptf-tests/tests"),
               "--pypath", str(ROOT / "control"), "--log-file", str(work / "ptf.log"),
               "--test-params", params, *[a for p in PORTS for a in ("--interface", f"{p}@{test_side(p)}")],
               *args.tests]
        print(f"ptf on {args.target}: logs in {work}", flush=True)
        env = dict(os.environ, PYTHONPATH=str(ROOT / "control"))
        res = subprocess.run(ptf, env=env)
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            print(f"{Path(dead[0].args[0]).name} died during the tests ({dead[0].returncode}); "
                  f"switch log tail:\n{log.read_text()[-2000:]}", file=sys.stderr)
            return 1
        return res.returncode
    except KeyboardInterrupt:
        print("interrupted: cleaning up", file=sys.stderr)
        return 130
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
        delete_links()


if __name__ == "__main__":
    sys.exit(main())
