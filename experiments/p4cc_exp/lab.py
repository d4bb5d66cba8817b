"""A running lab: the topology's network, its switches under the
controller, and the host agents. Data flows one way: topology → network →
controller → switch → host agents → files in the results folder.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

from p4cc_control.switch import Switch
from p4cc_control.targets import make_target
from p4cc_control.topology import Topology as CtlTopology
from p4cc_topo import Network

ROOT = Path(__file__).resolve().parents[2]
P4INFO = ROOT / "p4src/build/cc_switch.p4info.bin"
DEVICE_CONFIG = ROOT / "p4src/build/cc_switch.json"
COLLECTOR_UDP_PORT = 9999


class LabError(RuntimeError):
    pass


def host_agent() -> str:
    """The p4cc-host binary built by `make setup`."""
    built = ROOT / "hosts/target/release/p4cc-host"
    if built.exists():
        return str(built)
    found = shutil.which("p4cc-host")
    if not found:
        raise LabError("p4cc-host not built: run `make setup`")
    return found


class Lab:
    """Context manager: builds the network, connects one controller per
    switch, installs routes, K, loss and postcards from the topology."""

    def __init__(self, topo, target: str, outdir: Path, seed: int, postcard_one_in_n: int = 1):
        self.topo = topo
        self.outdir = outdir
        self.logs = outdir / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.net = Network(topo, target=target, log_dir=self.logs, seed=seed)
        self.postcard_one_in_n = postcard_one_in_n
        self.switches: dict[str, Switch] = {}
        self.ops: dict = {}
        self.view: dict = {}
        self.agent = host_agent()

    # -- lifecycle -------------------------------------------------------
    def __enter__(self) -> "Lab":
        self.net.__enter__()
        try:
            self._configure()
        except BaseException as e:
            self.__exit__(type(e), e, None)
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        for sw in self.switches.values():
            try:
                sw.close()
            except Exception:
                pass
        self.net.__exit__(exc_type, exc, tb)

    def _configure(self) -> None:
        self.view = self.net.switch_view()
        (self.outdir / "switch_view.json").write_text(json.dumps(self.view, indent=1, default=str))
        ctl_topo = CtlTopology(self.view, source="switch view")
        for name, desc in self.view["switches"].items():
            sw = Switch.connect(desc["grpc_addr"], device_id=int(desc.get("device_id", 1)),
                                p4info=str(P4INFO), device_config=str(DEVICE_CONFIG), push=True)
            target = make_target(self.net.target, admin_addr=desc.get("admin_addr"),
                                 thrift_port=desc.get("thrift_port"))
            ops = sw.ops(target)
            ops.apply_topology(ctl_topo, name)
            self.switches[name], self.ops[name] = sw, ops
        self.net.apply_queue_config()
        collector = self.view.get("collector")
        if collector:
            for name, desc in self.view["switches"].items():
                port = desc.get("collector_port")
                if port is None:
                    continue
                # The next hop towards the collector, which is the collector
                # itself only on the switch it is cabled to.
                self.ops[name].enable_postcards(
                    collector_port=port, collector_ip=collector["ip"],
                    collector_mac=desc.get("collector_mac") or collector["mac"],
                    switch_ip=desc["switch_ip"],
                    sample_one_in_n=self.postcard_one_in_n, udp_port=COLLECTOR_UDP_PORT)

    # -- topology facts --------------------------------------------------
    def ip(self, host: str) -> str:
        return self.net.ip(host)

    def port_of(self, host: str) -> tuple[str, int]:
        """(switch, port) the host is cabled to."""
        h = self.view["hosts"][host]
        return h["switch"], int(h["port"])

    # -- host agents -----------------------------------------------------
    def start(self, host: str, args: list[str], log: str) -> subprocess.Popen:
        return self.net.popen(host, [self.agent, *args], log=log)

    def start_collector(self, out_csv: Path) -> subprocess.Popen | None:
        collector = self.view.get("collector")
        if not collector:
            return None
        return self.start(collector["host"], ["collect", "--listen", f"0.0.0.0:{COLLECTOR_UDP_PORT}",
                                              "--out", str(out_csv)], log="collector.log")

    def ensure_kernel_dctcp(self) -> None:
        """Kernel TCP DCTCP: the kernel's module, else p4cc's BPF DCTCP
        (registered kernel-wide, so every namespace sees it)."""
        avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
        if "dctcp" in avail or "p4cc_dctcp" in avail:
            return
        subprocess.run(["modprobe", "tcp_dctcp"], capture_output=True)
        avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
        if "dctcp" in avail:
            return
        res = subprocess.run([self.agent, "bpf-dctcp", "load"], capture_output=True, text=True)
        if res.returncode != 0:
            raise LabError("kernel DCTCP unavailable: no dctcp module and the BPF DCTCP did not "
                           f"load: {(res.stderr or res.stdout).strip()[-300:]}")

    def counters(self, switch: str, port: int) -> dict:
        """One port's counters: rx/tx packets and bytes, CE marks, drops."""
        return self.ops[switch].port_counters([port])[port]

    def reset_counters(self) -> None:
        for ops in self.ops.values():
            ops.reset_port_counters()

    def check_alive(self) -> str | None:
        """An error string when a switch died (for Progress.sleep)."""
        dead = self.net.dead_switches()
        return f"switch died: {', '.join(dead)} (see {self.logs})" if dead else None


def stop(procs: list[subprocess.Popen], timeout: float = 10.0) -> None:
    """SIGTERM the agents and wait, so they flush their logs."""
    for p in procs:
        if p and p.poll() is None:
            p.terminate()
    end = time.time() + timeout
    for p in procs:
        if p is None:
            continue
        try:
            p.wait(max(0.1, end - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
