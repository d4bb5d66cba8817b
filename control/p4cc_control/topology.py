"""Topology description -> forwarding entries (and per-port settings).

Two inputs are accepted. The switch view the topologies package writes
(p4cc_topo.network.Network.switch_view(): per switch grpc_addr, device_id,
switch_id, routes [{prefix, port, dst_mac}], ecn_k_pkts {port: k}, p4_loss
{port: p}) is used as is: its routes are complete. Or a hand-written
description (YAML or JSON, or the same dict in Python); docs/controller.md
has the full schema:

    switches:
      s1: {device_id: 1, addr: "127.0.0.1:9559", switch_id: 1,
           target: embedded, admin_addr: "127.0.0.1:9560",
           ports: {3: {k: 20, k_unit: packets,      # ECN threshold
                       loss: 0.01,                  # P4 port_loss table
                       rate_bps: 100000000, delay_us: 250, depth_pkts: 100,
                       link_loss: 0.0}}}            # target knobs
      s2: {...}
    hosts:
      h1: {ip: 10.0.1.1, mac: "00:00:0a:00:01:01", switch: s1, port: 1}
    links:                       # switch-to-switch links
      - {a: s1, a_port: 3, b: s2, b_port: 1}
    routes:                      # optional explicit routes, win over computed ones
      - {switch: s1, prefix: 10.0.2.0/24, port: 3, dst_mac: "00:00:0a:00:02:01"}

Each switch gets a /32 route to every host: out of the host's own port when
the host is attached to it, else out of the first link of a shortest path
(fewest switch hops; ties broken by neighbour name) towards the host's
switch. The next-hop MAC written is the host's own MAC at every hop: the
P4 program rewrites the destination MAC per hop and no switch filters on
it, so the last hop delivers a correctly addressed frame.
"""
from __future__ import annotations

import ipaddress
import json
import os
import re
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .errors import NameNotFound, ValueOutOfRange

_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$")
PORT_KEYS = ("k", "k_unit", "loss", "link_loss", "rate_bps", "rate_pps", "delay_us", "depth_pkts")


def _port(v, where) -> int:
    try:
        p = int(v)
    except (TypeError, ValueError):
        raise ValueOutOfRange(f"{where}: port {v!r} is not a number") from None
    if not 0 <= p < 512:
        raise ValueOutOfRange(f"{where}: port {p} out of range (0..511)")
    return p


def _mac(v, where) -> str:
    if not isinstance(v, str) or not _MAC.match(v):
        raise ValueOutOfRange(f"{where}: {v!r} is not a MAC address like 00:11:22:33:44:55")
    return v.lower().replace("-", ":")


@dataclass
class Host:
    name: str
    ip: str
    mac: str
    switch: str
    port: int


@dataclass
class SwitchDesc:
    name: str
    device_id: int = 1
    addr: Optional[str] = None
    switch_id: Optional[int] = None
    target: Optional[str] = None
    admin_addr: Optional[str] = None
    thrift_port: Optional[int] = None
    ports: Dict[int, dict] = field(default_factory=dict)
    collector_port: Optional[int] = None


@dataclass
class Link:
    a: str
    a_port: int
    b: str
    b_port: int


class Topology:
    def __init__(self, data: Dict[str, Any], source: str = "<dict>"):
        if not isinstance(data, dict):
            raise ValueOutOfRange(f"topology {source}: expected a mapping at the top")
        self.source = source
        self.switches: Dict[str, SwitchDesc] = {}
        self.hosts: Dict[str, Host] = {}
        self.links: List[Link] = []
        self.routes: List[dict] = []
        # The topologies package's "switch view" (network.switch_view(): per
        # switch its routes, ecn_k_pkts, p4_loss, addresses) is read as is.
        sws = data.get("switches") or {}
        self.is_view = "run_id" in data or any(
            isinstance(v, dict) and ("routes" in v or "grpc_addr" in v) for v in sws.values())
        self.target = data.get("target")
        self.collector = data.get("collector")
        for i, (name, s) in enumerate(sws.items()):
            s = s or {}
            name = str(name)
            ports: Dict[int, dict] = {}
            if not self.is_view:
                for p, cfg in (s.get("ports") or {}).items():
                    where = f"switch {name} port {p}"
                    bad = set(cfg or {}) - set(PORT_KEYS)
                    if bad:
                        raise ValueOutOfRange(f"{where}: unknown setting(s) "
                                              f"{', '.join(sorted(bad))} (known: {', '.join(PORT_KEYS)})")
                    ports[_port(p, where)] = dict(cfg or {})
            for p, k in (s.get("ecn_k_pkts") or {}).items():
                ports.setdefault(_port(p, f"switch {name} ecn_k_pkts"), {})["k"] = k
            for p, loss in (s.get("p4_loss") or {}).items():
                ports.setdefault(_port(p, f"switch {name} p4_loss"), {})["loss"] = loss
            self.switches[name] = SwitchDesc(
                name=name, device_id=int(s.get("device_id", 1)),
                addr=s.get("addr", s.get("grpc_addr")),
                switch_id=s.get("switch_id", s.get("id", i + 1)), target=s.get("target", self.target),
                admin_addr=s.get("admin_addr"), thrift_port=s.get("thrift_port"), ports=ports,
                collector_port=s.get("collector_port"))
            for j, r in enumerate(s.get("routes") or []):
                self._add_route(dict(r, switch=name), f"switch {name} route #{j}")
        seen_ip = {}
        for name, h in (data.get("hosts") or {}).items():
            where = f"host {name}"
            h = h or {}
            for k in ("ip", "mac", "switch", "port"):
                if k not in h:
                    raise ValueOutOfRange(f"{where}: missing '{k}'")
            try:
                ip = str(ipaddress.IPv4Address(str(h["ip"]).split("/")[0]))
            except ValueError:
                raise ValueOutOfRange(f"{where}: {h['ip']!r} is not an IPv4 address") from None
            if ip in seen_ip:
                raise ValueOutOfRange(f"{where}: ip {ip} already used by host {seen_ip[ip]}")
            seen_ip[ip] = name
            sw = str(h["switch"])
            self._need_switch(sw, where)
            self.hosts[str(name)] = Host(str(name), ip, _mac(h["mac"], where), sw,
                                         _port(h["port"], where))
        for i, l in enumerate(data.get("links") or []):
            where = f"link #{i}"
            if isinstance(l, (list, tuple)) and len(l) == 4:
                l = dict(zip(("a", "a_port", "b", "b_port"), l))
            for k in ("a", "a_port", "b", "b_port"):
                if k not in l:
                    raise ValueOutOfRange(f"{where}: missing '{k}'")
            self._need_switch(str(l["a"]), where)
            self._need_switch(str(l["b"]), where)
            self.links.append(Link(str(l["a"]), _port(l["a_port"], where),
                                   str(l["b"]), _port(l["b_port"], where)))
        for i, r in enumerate(data.get("routes") or []):
            self._add_route(r, f"route #{i}")

    def _add_route(self, r: dict, where: str):
        for k in ("switch", "prefix", "port"):
            if k not in r:
                raise ValueOutOfRange(f"{where}: missing '{k}'")
        self._need_switch(str(r["switch"]), where)
        try:
            net = ipaddress.IPv4Network(str(r["prefix"]), strict=True)
        except ValueError as e:
            raise ValueOutOfRange(f"{where}: bad prefix {r['prefix']!r}: {e}") from None
        mac = r.get("dst_mac", r.get("next_hop_mac"))
        if mac is None:
            raise ValueOutOfRange(f"{where}: missing 'dst_mac' (the next hop's MAC)")
        self.routes.append({"switch": str(r["switch"]), "prefix": str(net),
                            "port": _port(r["port"], where), "dst_mac": _mac(mac, where)})

    def _need_switch(self, name, where):
        if name not in self.switches:
            if not self.switches:
                # Single-switch topologies may omit the switches section.
                self.switches[name] = SwitchDesc(name=name, switch_id=1)
                return
            raise NameNotFound(f"{where}: unknown switch '{name}' (known: "
                               f"{', '.join(self.switches)})")

    # -- queries ---------------------------------------------------------------
    def switch(self, name: Optional[str] = None) -> SwitchDesc:
        if name is None:
            if len(self.switches) == 1:
                return next(iter(self.switches.values()))
            raise NameNotFound(f"topology {self.source} has {len(self.switches)} switches: "
                               f"choose one with --switch ({', '.join(self.switches)})")
        try:
            return self.switches[name]
        except KeyError:
            raise NameNotFound(f"no switch '{name}' in topology {self.source} (known: "
                               f"{', '.join(self.switches)})") from None

    def _next_hops(self, src: str) -> Dict[str, int]:
        """For each switch reachable from src: the port src sends out of."""
        adj: Dict[str, List[tuple]] = {s: [] for s in self.switches}
        for l in self.links:
            adj[l.a].append((l.b, l.a_port))
            adj[l.b].append((l.a, l.b_port))
        first = {src: None}
        q = deque([src])
        while q:
            u = q.popleft()
            for v, port in sorted(adj[u]):
                if v not in first:
                    first[v] = port if u == src else first[u]
                    q.append(v)
        return first

    def forwarding_entries(self, switch: Optional[str] = None) -> List[dict]:
        """ipv4_lpm entries for one switch: [{match, action, params, why}]."""
        sw = self.switch(switch).name
        hops = self._next_hops(sw)
        out: Dict[str, dict] = {}
        for h in self.hosts.values():
            if self.is_view:
                break  # a switch view carries every route already
            prefix = f"{h.ip}/32"
            if h.switch == sw:
                port, why = h.port, f"host {h.name} attached"
            elif h.switch in hops:
                port, why = hops[h.switch], f"host {h.name} via {h.switch}"
            else:
                continue  # not reachable from here: no entry, the default drops
            out[prefix] = {"match": {"dst_addr": prefix}, "action": "forward",
                           "params": {"port": port, "dst_mac": h.mac}, "why": why}
        for r in self.routes:
            if r["switch"] == sw:
                out[r["prefix"]] = {"match": {"dst_addr": r["prefix"]}, "action": "forward",
                                    "params": {"port": r["port"], "dst_mac": r["dst_mac"]},
                                    "why": "explicit route"}
        return list(out.values())

    def unreachable_hosts(self, switch: Optional[str] = None) -> List[str]:
        sw = self.switch(switch).name
        if self.is_view:
            return []
        hops = self._next_hops(sw)
        return [h.name for h in self.hosts.values() if h.switch not in hops]


def load_topology(src) -> Topology:
    """A path to YAML/JSON, or an already-parsed dict."""
    if isinstance(src, dict):
        return Topology(src)
    if not os.path.exists(src):
        raise ValueOutOfRange(f"topology file not found: {src}")
    with open(src) as f:
        text = f.read()
    try:
        if src.endswith(".json"):
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as e:
        raise ValueOutOfRange(f"cannot parse topology {src}: {str(e).splitlines()[0]}") from None
    return Topology(data or {}, src)
