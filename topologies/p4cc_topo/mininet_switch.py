"""Mininet integration (optional): a P4 switch node and p4cc topologies.

p4cc's own builder (:class:`p4cc_topo.network.Network`) is the default: on
machines like ours Mininet's Open vSwitch kernel datapath does not work and
its ``TCLink(delay=, loss=)`` silently does nothing where netem is missing.
For people who prefer Mininet's CLI, this module gives:

- :class:`P4Switch`, a ``mininet.node.Switch`` that runs the embedded target
  (``p4cc-switch``), bmv2 (``simple_switch_grpc``) or the ``pyfwd`` test
  forwarder on its Mininet interfaces, bare: the controller pushes the
  pipeline, routes, K and link model to it (p4cc_control.program) as to any
  switch; it also gives every host cabled to it p4cc's addressing (gateway
  169.254.0.1 with a permanent ARP entry for the port's MAC, offloads off,
  tcp_ecn=1);
- :class:`P4ccTopo`, a ``mininet.topo.Topo`` made from a p4cc topology.

From the shell (no OVS, no OpenFlow controller)::

    mn --custom topologies/p4cc_topo/mininet_switch.py \\
       --topo p4cc,dumbbell --switch p4cc --controller none --link default

``P4CC_TARGET`` picks the target (default embedded); :func:`endpoints` says
where each switch listens. On bmv2, a port with a delay or a loss gets p4cc's
link emulator (p4cc_topo.links) between bmv2 and Mininet's interface, as in
p4cc's own labs (``p4cc mininet`` sets that up; by hand, give the switch
``link_ends``). Mininet leftovers are Mininet's to clean
(``mn -c`` — which also tries to stop OVS).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# `mn --custom` exec()s this file without __file__/__package__: p4cc_topo must
# then be importable, e.g. PYTHONPATH=topologies (see docs/topologies.md).
from mininet.node import Switch  # noqa: E402
from mininet.topo import Topo  # noqa: E402

from p4cc_topo.builtin import load_topology  # noqa: E402
from p4cc_topo.links import LinkProcess  # noqa: E402
from p4cc_topo.model import GATEWAY_IP, Topology, port_mac  # noqa: E402
from p4cc_topo.naming import port_ifname  # noqa: E402
from p4cc_topo.network import OFFLOADS_OFF  # noqa: E402
from p4cc_topo.plan import switch_configs  # noqa: E402
from p4cc_topo.targets import (Bmv2Switch, EmbeddedSwitch, PyFwdSwitch,  # noqa: E402
                               resolve_target, terminate)

LOG_DIR = Path("/tmp/p4cc/mininet")
#: The P4CC_RUN_ID of processes Mininet's switches start. Deliberately not a
#: run id of p4cc's scheme: `p4cc clean` never touches a Mininet network (the
#: switch processes die with Mininet through PR_SET_PDEATHSIG).
MN_RUN_ID = "mnet"


class P4Switch(Switch):
    """A Mininet switch running a P4 target (see module docstring).

    device_id : P4Runtime device id and telemetry switch id (default: the
        number in the switch's name)
    target : "embedded" | "bmv2" | "pyfwd" | "auto" (default $P4CC_TARGET or auto)
    routes : [{"prefix", "port", "dst_mac"}] (pyfwd only; P4 targets get
        theirs from the controller)
    link_ends : bmv2 only: {port: (switch end, emulator end)}, the names of
        a veth pair to create per port: bmv2 attaches to the first, p4cc's
        link emulator bridges the second with Mininet's interface
    """

    def __init__(self, name, device_id=None, target=None, routes=None,
                 log_dir=None, p4_json=None, run_id=MN_RUN_ID, link_ends=None, **params):
        params.setdefault("inNamespace", False)
        Switch.__init__(self, name, **params)
        self.device_id = int(device_id) if device_id is not None else int(self.dpid, 16)
        self.target = resolve_target(target or os.environ.get("P4CC_TARGET") or "auto")
        self.routes = routes or []
        self.log_dir = Path(log_dir) if log_dir else LOG_DIR
        self.p4_json = p4_json
        self.run_id = run_id
        self.link_ends = {int(p): tuple(e) for p, e in (link_ends or {}).items()}
        self.sw = None
        self.link = None

    def _ifaces(self) -> dict[int, str]:
        return dict(sorted((port, intf.name) for intf, port in self.ports.items()
                           if intf.name != "lo" and port != 0))

    def _configure_neighbours(self) -> None:
        """p4cc addressing for every host cabled to this switch."""
        for intf, port in self.ports.items():
            link = intf.link
            if link is None or port == 0:
                continue
            other = link.intf2 if link.intf1 is intf else link.intf1
            node = other.node
            if isinstance(node, Switch):
                continue
            dev = other.name
            feats = " ".join(f"{o} off" for o in OFFLOADS_OFF)
            node.cmd(f"ethtool -K {dev} {feats} >/dev/null 2>&1")
            node.cmd("sysctl -qw net.ipv4.tcp_ecn=1 net.ipv4.tcp_no_metrics_save=1 "
                     "net.ipv6.conf.all.disable_ipv6=1")
            node.cmd(f"ip route flush dev {dev} proto kernel")
            node.cmd(f"ip neigh replace {GATEWAY_IP} lladdr {port_mac(self.device_id, port)} dev {dev} nud permanent")
            node.cmd(f"ip route replace {GATEWAY_IP}/32 dev {dev} scope link")
            node.cmd(f"ip route replace default via {GATEWAY_IP} dev {dev}")
            subprocess.run(["ethtool", "-K", intf.name] + [x for o in OFFLOADS_OFF for x in (o, "off")],
                           capture_output=True)

    def _splice_links(self, ifaces: dict[int, str]) -> dict[int, str]:
        """bmv2's ports with a link emulator: a veth pair each, bmv2 on one
        end; returns the interfaces bmv2 attaches to."""
        if self.target != "bmv2" or not self.link_ends:
            return ifaces
        out = dict(ifaces)
        bridges = {}
        for port, (sw_end, emu_end) in self.link_ends.items():
            if port not in ifaces:
                raise ValueError(f"{self.name}: no port {port} to put a link emulator in front of")
            subprocess.run(["ip", "link", "add", sw_end, "type", "veth", "peer", "name", emu_end],
                           check=True, capture_output=True)
            for i in (sw_end, emu_end):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{i}.disable_ipv6=1"], capture_output=True)
                subprocess.run(["ethtool", "-K", i] + [x for o in OFFLOADS_OFF for x in (o, "off")],
                               capture_output=True)
                subprocess.run(["ip", "link", "set", i, "up"], check=True, capture_output=True)
            out[port] = sw_end
            bridges[port] = (emu_end, ifaces[port])
        self.link = LinkProcess(self.name, bridges, self.run_id, self.log_dir)
        self.link.start()
        self.link.wait_ready()
        return out

    def start(self, controllers):
        self._configure_neighbours()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        common = dict(name=self.name, device_id=self.device_id,
                      ports=self._splice_links(self._ifaces()), run_id=self.run_id,
                      log_dir=self.log_dir)
        if self.target == "embedded":
            self.sw = EmbeddedSwitch(**common)
        elif self.target == "bmv2":
            self.sw = Bmv2Switch(**common, p4_json=self.p4_json)
        else:
            self.sw = PyFwdSwitch(**common, routes=self.routes)
        self.sw.start()
        self.sw.wait_ready()

    @property
    def grpc_addr(self) -> str | None:
        return self.sw.grpc_addr if self.sw else None

    def describe(self) -> dict:
        """Where it listens (as Network.endpoints()): what p4cc_control.program.Endpoint takes."""
        d = self.sw.describe()
        if self.link is not None:
            d["link_admin_addr"] = self.link.admin_addr
            d["link_ports"] = sorted(self.link_ends)
        return d

    def stop(self, deleteIntfs=True):
        if self.sw is not None and self.sw.proc is not None:
            terminate([self.sw.proc])
        if self.link is not None and self.link.proc is not None:
            terminate([self.link.proc])
        for sw_end, _ in self.link_ends.values():
            subprocess.run(["ip", "link", "del", sw_end], capture_output=True)
        Switch.stop(self, deleteIntfs)


class P4ccTopo(Topo):
    """A Mininet Topo from a p4cc topology (name, YAML path, or Topology)."""

    def build(self, topology="two_hosts", target=None, run_id=None, emulated=None, **params):
        """``emulated``: per switch the ports that get p4cc's link emulator
        (bmv2; needs a p4cc ``run_id`` for the interface names)."""
        topo = topology if isinstance(topology, Topology) else load_topology(topology, **params)
        emulated = emulated or {}
        if emulated and not run_id:
            raise ValueError("link emulators need a p4cc run id (their interfaces carry it)")
        self.p4cc = topo
        # With a p4cc run id, switch-side interfaces follow p4cc's naming, so
        # `p4cc clean` and the run's watchdog can remove them if Mininet cannot.
        self.run_id = run_id
        self._ifaces: list[str] = []
        tgt = resolve_target(target or os.environ.get("P4CC_TARGET") or "auto")
        routes = {n: [{"prefix": r.prefix, "port": r.port, "dst_mac": r.dst_mac} for r in c.routes]
                  for n, c in switch_configs(topo).items()}
        for h in topo.hosts.values():
            self.addHost(h.name, ip=h.cidr, mac=h.mac)
        for s in topo.switches.values():
            ends = {p: (port_ifname(run_id, s.index, p, "e"), port_ifname(run_id, s.index, p, "w"))
                    for p in emulated.get(s.name, [])}
            self._ifaces += [i for pair in ends.values() for i in pair]
            self.addSwitch(s.name, cls=P4Switch, dpid=f"{s.id:x}", device_id=s.id, target=tgt,
                           routes=routes[s.name], run_id=run_id or MN_RUN_ID, link_ends=ends)
        for l in topo.links:
            kw = {}
            for i, end in ((1, l.a), (2, l.b)):
                if end.port is None:
                    continue
                kw[f"port{i}"] = end.port
                if run_id:
                    # A port with a link emulator: Mininet's interface is the
                    # emulator's end facing the peer.
                    spliced = end.port in emulated.get(end.node, [])
                    name = port_ifname(run_id, topo.switches[end.node].index, end.port,
                                       "p" if spliced else "e")
                    kw[f"intfName{i}"] = name
                    self._ifaces.append(name)
            self.addLink(l.a.node, l.b.node, **kw)

    def switch_ifaces(self) -> list[str]:
        """Names of the switch-side interfaces (with a run id)."""
        return list(self._ifaces)


def endpoints(net) -> dict[str, dict]:
    """Per switch of a running Mininet net where it listens (as
    Network.endpoints()): what p4cc_control.program.Endpoint takes."""
    return {s: net.get(s).describe() for s in net.topo.p4cc.switches}


# `mn --custom this_file --topo p4cc,NAME[,key=value...] --switch p4cc`
topos = {"p4cc": lambda name="two_hosts", **kw: P4ccTopo(topology=name, **kw)}
switches = {"p4cc": P4Switch}
