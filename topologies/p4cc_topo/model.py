"""Topologies as data: hosts, switches, links and their properties.

A topology is a plain mapping (usually a YAML file, see docs/topologies.md)::

    name: dumbbell-2
    collector: mon                  # host that receives postcards (optional)
    defaults: {rate_bps: 1Gbps, delay_us: 50us, buffer_pkts: 100}
    hosts:
      - {name: h1, ip: 10.0.0.1}                       # mac derived from ip
      - {name: rx, ip: 10.0.0.100/24, mac: "02:00:0a:00:00:64"}
    switches:
      - {name: s1, id: 1}
    links:
      - {endpoints: [h1, s1]}
      - {endpoints: [rx, "s1:9"], rate_bps: 100Mbps, ecn_k_pkts: 20}

:func:`Topology.from_dict` checks it and collects *every* problem into one
:class:`TopologyError`, each located (``links[1].rate_bps: ...``).
"""

from __future__ import annotations

import copy
import difflib
import ipaddress
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .units import (UnitError, format_delay, format_loss, format_rate, format_red,
                    parse_delay, parse_loss, parse_pkts, parse_rate, parse_red)

__all__ = [
    "TopologyError",
    "Host",
    "Switch",
    "Endpoint",
    "Link",
    "Topology",
    "MAX_PORT",
    "MAX_SWITCHES",
    "GATEWAY_IP",
]

#: Highest switch port number a topology may use (v1model's 9-bit port;
#: 511 is bmv2's drop port).
MAX_PORT = 510
#: Interface names are ``p4cc<run><s><index>e<port>`` and must fit 15 chars.
MAX_SWITCHES = 99
#: The next hop every host routes through (a permanent ARP entry maps it to
#: the MAC of the switch port the host is cabled to); never a host address.
GATEWAY_IP = "169.254.0.1"

_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,15}$")
_MAC_RE = re.compile(r"^[0-9a-f]{2}(:[0-9a-f]{2}){5}$")

_TOP_KEYS = ("name", "description", "hosts", "switches", "links", "defaults",
             "collector", "roles", "params")
_HOST_KEYS = ("name", "ip", "mac")
_SWITCH_KEYS = ("name", "id")
_LINK_PROPS = ("rate_bps", "delay_us", "buffer_pkts", "loss", "ecn_k_pkts", "ecn_red")
_LINK_KEYS = ("endpoints",) + _LINK_PROPS
#: Properties that belong to a switch's egress port and may differ per end.
_PER_END = ("buffer_pkts", "ecn_k_pkts", "loss", "ecn_red")


class TopologyError(ValueError):
    """A topology that does not check; ``problems`` lists every finding."""

    def __init__(self, problems: list[str], source: str | None = None):
        self.problems = list(problems)
        self.source = source
        where = f" in {source}" if source else ""
        if len(problems) == 1:
            msg = f"topology error{where}: {problems[0]}"
        else:
            msg = f"{len(problems)} topology errors{where}:\n" + "\n".join(
                f"  - {p}" for p in problems)
        super().__init__(msg)


@dataclass(frozen=True)
class Host:
    name: str
    ip: str              #: address without prefix, e.g. "10.0.0.1"
    prefix_len: int      #: shown on the interface; routing always uses the switch
    mac: str             #: lower-case "02:00:0a:00:00:01"

    @property
    def cidr(self) -> str:
        return f"{self.ip}/{self.prefix_len}"


@dataclass(frozen=True)
class Switch:
    name: str
    id: int              #: device id (P4Runtime) and telemetry switch id
    index: int           #: 1-based position in the topology (interface names)


@dataclass(frozen=True)
class Endpoint:
    node: str
    port: int | None     #: switch port number; None on a host end

    def __str__(self) -> str:
        return self.node if self.port is None else f"{self.node}:{self.port}"


@dataclass(frozen=True)
class Link:
    """A full-duplex cable between two nodes (at least one a switch).

    ``rate_bps``/``delay_us`` are properties of the cable (both directions,
    ``None`` = unshaped); ``buffer_pkts``, ``ecn_k_pkts`` and ``loss`` belong to
    the egress port of each switch end and are keyed by switch name.
    """
    index: int
    a: Endpoint
    b: Endpoint
    rate_bps: int | None = None
    delay_us: int = 0
    buffer_pkts: dict = field(default_factory=dict)   # switch -> pkts
    ecn_k_pkts: dict = field(default_factory=dict)    # switch -> pkts
    ecn_red: dict = field(default_factory=dict)       # switch -> (kmin, kmax, pmax): RED instead of a step
    loss: dict = field(default_factory=dict)          # switch -> probability

    @property
    def ends(self) -> tuple[Endpoint, Endpoint]:
        return (self.a, self.b)

    def other(self, node: str) -> Endpoint:
        if self.a.node == node:
            return self.b
        if self.b.node == node:
            return self.a
        raise KeyError(node)

    def end(self, node: str) -> Endpoint:
        if self.a.node == node:
            return self.a
        if self.b.node == node:
            return self.b
        raise KeyError(node)

    def label(self) -> str:
        return f"{self.a}--{self.b}"


def _suggest(key: str, allowed: Iterable[str]) -> str:
    close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.5)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _named_entry(kind: str, i: int, entry, keys, shape: str, names_seen: dict,
                 problems: list) -> tuple[str, str] | None:
    """Checks the shape and the name of hosts[i] / switches[i]; returns
    (name, where) to go on with, or None (a problem was recorded)."""
    where = f"{kind}[{i}]"
    if not isinstance(entry, dict):
        problems.append(f"{where}: must be a mapping with {shape}")
        return None
    _unknown_keys(entry, keys, where, problems)
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME_RE.match(name):
        problems.append(f"{where}.name: {name!r} is not a valid name "
                        "(lower-case letter, then up to 15 of a-z 0-9 _)")
        return None
    if name in names_seen:
        problems.append(f"{where} ({name}): duplicate name {name!r} (also {names_seen[name]})")
        return None
    names_seen[name] = where
    return name, f"{where} ({name})"


def _unknown_keys(d: dict, allowed: tuple, where: str, problems: list[str]) -> None:
    for k in d:
        if k not in allowed:
            problems.append(f"{where}: unknown key {k!r}{_suggest(str(k), allowed)}; "
                            f"allowed: {', '.join(allowed)}")


def default_mac(ip: str) -> str:
    """``10.0.0.1`` → ``02:00:0a:00:00:01`` (locally administered, unique per IP)."""
    b = ipaddress.IPv4Address(ip).packed
    return "02:00:" + ":".join(f"{x:02x}" for x in b)


def port_mac(switch_id: int, port: int) -> str:
    """The fixed MAC of a switch port: ``02:cc:<id 16 bit>:<port 16 bit>``.

    Hosts use it as their gateway's MAC and switches as the next hop's MAC;
    it is never an interface's own MAC (so the root namespace's kernel
    ignores the frames the switch handles).
    """
    return "02:cc:{:02x}:{:02x}:{:02x}:{:02x}".format(
        (switch_id >> 8) & 0xFF, switch_id & 0xFF, (port >> 8) & 0xFF, port & 0xFF)


class Topology:
    """A checked topology. Build one with :meth:`from_dict`, :meth:`load`
    (YAML file) or a generator in :mod:`p4cc_topo.builtin`."""

    def __init__(self, name: str, hosts: list[Host], switches: list[Switch],
                 links: list[Link], collector: str | None = None,
                 roles: dict | None = None, description: str = "",
                 params: dict | None = None, source: str | None = None):
        self.name = name
        self.hosts = {h.name: h for h in hosts}
        self.switches = {s.name: s for s in switches}
        self.links = list(links)
        self.collector = collector
        self.roles = dict(roles or {})
        self.description = description
        self.params = dict(params or {})
        self.source = source

    # ------------------------------------------------------------------ load
    @classmethod
    def load(cls, path: str | Path) -> "Topology":
        import yaml  # PyYAML
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise TopologyError([f"cannot read {path}: {e.strerror}"], str(path)) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise TopologyError([f"not valid YAML: {e}"], str(path)) from None
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> "Topology":
        problems: list[str] = []
        if not isinstance(data, dict):
            raise TopologyError(["a topology is a mapping with hosts, switches and links"], source)
        _unknown_keys(data, _TOP_KEYS, "topology", problems)

        name = data.get("name", Path(source).stem if source else "topology")
        if not isinstance(name, str) or not name:
            problems.append("name: must be a non-empty string")
            name = "topology"
        description = data.get("description", "") or ""
        if not isinstance(description, str):
            problems.append("description: must be a string")
            description = ""
        params = data.get("params") or {}
        if not isinstance(params, dict):
            problems.append("params: must be a mapping (free-form, recorded with results)")
            params = {}

        # ---- hosts
        hosts: list[Host] = []
        names_seen: dict[str, str] = {}
        ips_seen: dict[str, str] = {}
        macs_seen: dict[str, str] = {}
        bad_host_names: set[str] = set()   # named hosts, even if otherwise broken
        raw_hosts = data.get("hosts")
        if not isinstance(raw_hosts, list) or not raw_hosts:
            problems.append("hosts: must be a non-empty list")
            raw_hosts = []
        for i, h in enumerate(raw_hosts):
            named = _named_entry("hosts", i, h, _HOST_KEYS, "name, ip (and optionally mac)",
                                 names_seen, problems)
            if named is None:
                continue
            hname, where = named
            bad_host_names.add(hname)
            ip_raw = h.get("ip")
            if not isinstance(ip_raw, str):
                problems.append(f"{where}.ip: required, an IPv4 address like 10.0.0.1 or 10.0.0.1/24")
                continue
            try:
                iface = ipaddress.IPv4Interface(ip_raw if "/" in ip_raw else ip_raw + "/24")
            except ValueError:
                problems.append(f"{where}.ip: {ip_raw!r} is not an IPv4 address (like 10.0.0.1 or 10.0.0.1/24)")
                continue
            ip = str(iface.ip)
            if (iface.ip.is_multicast or iface.ip.is_loopback or iface.ip.is_link_local
                    or iface.ip.is_unspecified or iface.ip == ipaddress.IPv4Address("255.255.255.255")):
                problems.append(f"{where}.ip: {ip} is a loopback/link-local/multicast/reserved address")
            elif iface.network.prefixlen < 31 and iface.ip in (iface.network.network_address,
                                                               iface.network.broadcast_address):
                problems.append(f"{where}.ip: {ip} is the network or broadcast address of {iface.network}")
            dup_ip = ip in ips_seen
            if dup_ip:
                problems.append(f"{where}.ip: duplicate ip {ip} (also {ips_seen[ip]})")
            ips_seen.setdefault(ip, hname)
            mac = h.get("mac")
            if mac is None:
                mac = default_mac(ip)
                if dup_ip:
                    continue  # its derived MAC clashes too: one error is enough
            elif not isinstance(mac, str) or not _MAC_RE.match(mac.lower()):
                problems.append(f"{where}.mac: {mac!r} is not a MAC address like 02:00:0a:00:00:01")
                continue
            mac = mac.lower()
            if int(mac[:2], 16) & 1:
                problems.append(f"{where}.mac: {mac} is a multicast MAC (first octet odd)")
            if mac.startswith("02:cc:"):
                problems.append(f"{where}.mac: {mac}: 02:cc:* is reserved for switch ports")
            if mac == "00:00:00:00:00:00":
                problems.append(f"{where}.mac: the zero MAC is not allowed")
            if mac in macs_seen:
                problems.append(f"{where}.mac: duplicate mac {mac} (also {macs_seen[mac]})")
            macs_seen.setdefault(mac, hname)
            hosts.append(Host(hname, ip, iface.network.prefixlen, mac))

        # ---- switches
        switches: list[Switch] = []
        ids_seen: dict[int, str] = {}
        bad_switch_names: set[str] = set()
        raw_sw = data.get("switches")
        if not isinstance(raw_sw, list) or not raw_sw:
            problems.append("switches: must be a non-empty list")
            raw_sw = []
        if len(raw_sw) > MAX_SWITCHES:
            problems.append(f"switches: at most {MAX_SWITCHES} switches (interface names must fit 15 characters)")
        for i, s in enumerate(raw_sw):
            named = _named_entry("switches", i, s, _SWITCH_KEYS, "name and id", names_seen, problems)
            if named is None:
                continue
            sname, where = named
            bad_switch_names.add(sname)
            sid = s.get("id", i + 1)
            if isinstance(sid, bool) or not isinstance(sid, int) or not 0 <= sid <= 0xFFFF:
                problems.append(f"{where}.id: {sid!r} must be an integer 0..65535 "
                                "(P4Runtime device id and telemetry switch id)")
                continue
            if sid in ids_seen:
                problems.append(f"{where}.id: duplicate id {sid} (also {ids_seen[sid]})")
            ids_seen.setdefault(sid, sname)
            switches.append(Switch(sname, sid, i + 1))

        # names of entries that are broken in other ways still count as nodes,
        # so one bad field does not cascade into "unknown node" errors
        host_names = {h.name for h in hosts} | bad_host_names
        switch_names = {s.name for s in switches} | bad_switch_names

        # ---- defaults
        defaults = data.get("defaults") or {}
        if not isinstance(defaults, dict):
            problems.append("defaults: must be a mapping of link properties")
            defaults = {}
        _unknown_keys(defaults, _LINK_PROPS, "defaults", problems)

        # ---- links
        links: list[Link] = []
        raw_links = data.get("links")
        if not isinstance(raw_links, list) or not raw_links:
            problems.append("links: must be a non-empty list")
            raw_links = []
        used_ports: dict[tuple[str, int], str] = {}
        host_links: dict[str, list[str]] = {h: [] for h in host_names}
        pending_auto: list[tuple[int, int, str]] = []  # (link idx, end idx, switch)
        parsed: list[dict] = []
        for i, l in enumerate(raw_links):
            where = f"links[{i}]"
            if not isinstance(l, dict):
                problems.append(f"{where}: must be a mapping with endpoints and properties")
                continue
            _unknown_keys(l, _LINK_KEYS, where, problems)
            eps = l.get("endpoints")
            if not isinstance(eps, list) or len(eps) != 2:
                problems.append(f"{where}.endpoints: must be a list of two nodes, e.g. [h1, s1] or [s1:3, s2:3]")
                continue
            ends: list[list] = []
            ok = True
            for j, ep in enumerate(eps):
                if not isinstance(ep, str):
                    problems.append(f"{where}.endpoints[{j}]: {ep!r} must be a node name, optionally with :port")
                    ok = False
                    continue
                node, _, port_s = ep.partition(":")
                port = None
                if node not in host_names and node not in switch_names:
                    sug = _suggest(node, sorted(host_names | switch_names))
                    problems.append(f"{where}.endpoints[{j}]: unknown node {node!r}{sug}")
                    ok = False
                    continue
                if port_s:
                    if node in host_names:
                        problems.append(f"{where}.endpoints[{j}]: {ep!r}: a host end takes no port")
                        ok = False
                        continue
                    if not port_s.isdigit() or not 1 <= int(port_s) <= MAX_PORT:
                        problems.append(f"{where}.endpoints[{j}]: port {port_s!r} must be 1..{MAX_PORT}")
                        ok = False
                        continue
                    port = int(port_s)
                ends.append([node, port])
            if not ok:
                continue
            (n0, _), (n1, _) = ends
            if n0 == n1:
                problems.append(f"{where}.endpoints: a link cannot connect {n0} to itself")
                continue
            if n0 in host_names and n1 in host_names:
                problems.append(f"{where}.endpoints: {n0}--{n1} joins two hosts; every link needs a switch end")
                continue
            label = f"{where} ({n0}--{n1})"
            for j, (node, port) in enumerate(ends):
                if node in host_names:
                    host_links[node].append(label)
                elif port is not None:
                    if (node, port) in used_ports:
                        problems.append(f"{label}: port {node}:{port} already used by {used_ports[(node, port)]}")
                    used_ports[(node, port)] = label
                else:
                    pending_auto.append((len(parsed), j, node))
            props, perr = _parse_props(l, defaults, where, [e[0] for e in ends if e[0] in switch_names])
            problems.extend(perr)
            for sw in sorted(set(props.get("ecn_k_pkts", {})) & set(props.get("ecn_red", {}))):
                problems.append(f"{where}: switch {sw}'s end has both ecn_k_pkts and ecn_red "
                                "(a port marks by a step at K or by RED, not both)")
            parsed.append({"index": i, "ends": ends, "props": props, "label": label})

        # auto-number ports: the lowest free port of the switch, in link order
        for li, j, sw in pending_auto:
            p = 1
            while (sw, p) in used_ports:
                p += 1
            if p > MAX_PORT:
                problems.append(f"{parsed[li]['label']}: switch {sw} has no free port")
                continue
            used_ports[(sw, p)] = parsed[li]["label"]
            parsed[li]["ends"][j][1] = p

        for pl in parsed:
            (n0, p0), (n1, p1) = pl["ends"]
            pr = pl["props"]
            links.append(Link(index=pl["index"], a=Endpoint(n0, p0), b=Endpoint(n1, p1),
                              rate_bps=pr.get("rate_bps"), delay_us=pr.get("delay_us", 0),
                              buffer_pkts=pr.get("buffer_pkts", {}),
                              ecn_k_pkts=pr.get("ecn_k_pkts", {}), loss=pr.get("loss", {}),
                              ecn_red=pr.get("ecn_red", {})))

        for h, ls in host_links.items():
            if len(ls) == 0:
                problems.append(f"host {h}: not connected to any switch (each host needs exactly one link)")
            elif len(ls) > 1:
                problems.append(f"host {h}: has {len(ls)} links ({'; '.join(ls)}); "
                                "each host needs exactly one link")

        # ---- collector, roles
        collector = data.get("collector")
        if collector is not None and collector not in host_names:
            problems.append(f"collector: {collector!r} is not a host{_suggest(str(collector), sorted(host_names))}")
        roles = data.get("roles") or {}
        if not isinstance(roles, dict):
            problems.append("roles: must map a role name to a host or a list of hosts")
            roles = {}
        for role, who in roles.items():
            lst = who if isinstance(who, list) else [who]
            for w in lst:
                if w not in host_names:
                    problems.append(f"roles.{role}: {w!r} is not a host{_suggest(str(w), sorted(host_names))}")

        if problems:
            raise TopologyError(problems, source)

        topo = cls(name, hosts, switches, links, collector, roles, description, params, source)
        # every host must reach every other through the switches
        unreachable = topo._unreachable()
        if unreachable:
            raise TopologyError(unreachable, source)
        return topo

    # ------------------------------------------------------------ queries
    def host_link(self, host: str) -> Link:
        for l in self.links:
            if host in (l.a.node, l.b.node):
                return l
        raise KeyError(host)

    def attachment(self, host: str) -> Endpoint:
        """The switch end (switch, port) a host is cabled to."""
        return self.host_link(host).other(host)

    def switch_links(self, switch: str) -> list[tuple[int, Link]]:
        """(port, link) for every port of ``switch``, by port number."""
        out = []
        for l in self.links:
            for e in l.ends:
                if e.node == switch:
                    out.append((e.port, l))
        return sorted(out, key=lambda t: t[0])

    def _neighbours(self, switch: str) -> list[tuple[int, str, int]]:
        """(own port, neighbour switch, neighbour port) for switch-switch links."""
        out = []
        for port, l in self.switch_links(switch):
            o = l.other(switch)
            if o.node in self.switches:
                out.append((port, o.node, o.port))
        return out

    def next_hops(self, switch: str) -> dict[str, tuple[int, str]]:
        """For every host: (egress port on ``switch``, next-hop MAC).

        Shortest path in switch hops; ties go to the lowest port number.
        """
        # BFS from this switch: first-hop port for every reachable switch
        first: dict[str, tuple[int, str]] = {switch: (0, "")}
        q = deque([switch])
        while q:
            cur = q.popleft()
            for port, nb, nb_port in sorted(self._neighbours(cur)):
                if nb in first:
                    continue
                if cur == switch:
                    first[nb] = (port, port_mac(self.switches[nb].id, nb_port))
                else:
                    first[nb] = first[cur]
                q.append(nb)
        out = {}
        for h in self.hosts.values():
            att = self.attachment(h.name)
            if att.node == switch:
                out[h.name] = (att.port, h.mac)
            elif att.node in first:
                out[h.name] = first[att.node]
        return out

    def _switch_distances(self, target: str) -> dict[str, int]:
        """Switch hops from every switch to ``target`` (BFS over switch links)."""
        dist = {target: 0}
        q = deque([target])
        while q:
            cur = q.popleft()
            for _, nb, _ in self._neighbours(cur):
                if nb not in dist:
                    dist[nb] = dist[cur] + 1
                    q.append(nb)
        return dist

    def next_hop_groups(self, switch: str) -> dict[str, list[tuple[int, str]]]:
        """For every host: every (egress port, next-hop MAC) of ``switch`` on
        a shortest path to it in switch hops, by port number — one for a
        host cabled to ``switch`` or a single shortest path, several where
        paths of equal length fan out (leaf-spine, fat-tree: ECMP)."""
        out: dict[str, list[tuple[int, str]]] = {}
        dists: dict[str, dict[str, int]] = {}
        for h in self.hosts.values():
            att = self.attachment(h.name)
            if att.node == switch:
                out[h.name] = [(att.port, h.mac)]
                continue
            dist = dists.get(att.node)
            if dist is None:
                dist = dists[att.node] = self._switch_distances(att.node)
            if switch not in dist:
                continue
            out[h.name] = [(port, port_mac(self.switches[nb].id, nb_port))
                           for port, nb, nb_port in sorted(self._neighbours(switch))
                           if dist.get(nb) == dist[switch] - 1]
        return out

    def _unreachable(self) -> list[str]:
        problems = []
        if not self.hosts:
            return problems
        first = next(iter(self.switches))
        seen = {first}
        q = deque([first])
        while q:
            cur = q.popleft()
            for _, nb, _ in self._neighbours(cur):
                if nb not in seen:
                    seen.add(nb)
                    q.append(nb)
        for s in self.switches:
            if s not in seen:
                problems.append(f"switch {s} is not connected to switch {first}: hosts on it cannot reach the others")
        return problems

    def role(self, name: str) -> list[str]:
        """Hosts in a role as a list (``roles: {receiver: h1}`` → ``["h1"]``)."""
        who = self.roles.get(name)
        if who is None:
            return []
        return list(who) if isinstance(who, list) else [who]

    # ------------------------------------------------------------ output
    def to_dict(self, numeric: bool = False) -> dict:
        """A canonical mapping that :meth:`from_dict` turns back into an equal
        topology (ports and MACs made explicit, units written out; with
        ``numeric``, bare numbers in each property's unit, as plans hold)."""
        d: dict[str, Any] = {"name": self.name}
        if self.description:
            d["description"] = self.description
        if self.params:
            d["params"] = copy.deepcopy(self.params)
        if self.collector:
            d["collector"] = self.collector
        if self.roles:
            d["roles"] = copy.deepcopy(self.roles)
        d["hosts"] = [{"name": h.name, "ip": h.cidr, "mac": h.mac} for h in self.hosts.values()]
        d["switches"] = [{"name": s.name, "id": s.id} for s in self.switches.values()]
        links = []
        for l in self.links:
            ld: dict[str, Any] = {"endpoints": [str(l.a), str(l.b)]}
            if l.rate_bps is not None:
                ld["rate_bps"] = l.rate_bps if numeric else format_rate(l.rate_bps)
            if l.delay_us:
                ld["delay_us"] = l.delay_us if numeric else format_delay(l.delay_us)
            for key, fmt in (("buffer_pkts", int), ("ecn_k_pkts", int),
                             ("loss", float if numeric else format_loss), ("ecn_red", format_red)):
                per = getattr(l, key)
                vals = set(per.values())
                if not per:
                    continue
                sw_ends = [e.node for e in l.ends if e.node in self.switches]
                if len(vals) == 1 and set(per) == set(sw_ends):
                    ld[key] = fmt(next(iter(vals)))
                else:
                    ld[key] = {k: fmt(v) for k, v in per.items()}
            links.append(ld)
        d["links"] = links
        return d

    def to_yaml(self) -> str:
        import yaml
        return yaml.safe_dump(self.to_dict(), sort_keys=False, default_flow_style=None, width=100)

    def __eq__(self, other) -> bool:
        return isinstance(other, Topology) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        return (f"Topology({self.name!r}, {len(self.hosts)} hosts, "
                f"{len(self.switches)} switches, {len(self.links)} links)")


def _parse_props(l: dict, defaults: dict, where: str, sw_ends: list[str]) -> tuple[dict, list[str]]:
    """Merge link properties over defaults, parse units, expand per-end values."""
    problems: list[str] = []
    out: dict[str, Any] = {}
    parsers = {
        "rate_bps": parse_rate,
        "delay_us": parse_delay,
        "loss": parse_loss,
        "buffer_pkts": lambda v: parse_pkts(v, "buffer", minimum=1),
        "ecn_k_pkts": lambda v: parse_pkts(v, "ECN threshold K", minimum=0),
        "ecn_red": parse_red,
    }
    for key in _LINK_PROPS:
        if key in l:
            raw, src = l[key], f"{where}.{key}"
        elif key in defaults:
            raw, src = defaults[key], f"defaults.{key} (for {where})"
        else:
            continue
        if raw is None:
            continue
        parse = parsers[key]
        if key in _PER_END:
            if isinstance(raw, dict):
                per = {}
                for sw, v in raw.items():
                    if sw not in sw_ends:
                        problems.append(f"{src}: {sw!r} is not a switch end of this link "
                                        f"(switch ends: {', '.join(sw_ends) or 'none'})")
                        continue
                    try:
                        per[sw] = parse(v)
                    except UnitError as e:
                        problems.append(f"{src}.{sw}: {e}")
                out[key] = per
            else:
                try:
                    v = parse(raw)
                except UnitError as e:
                    problems.append(f"{src}: {e}")
                    continue
                out[key] = {sw: v for sw in sw_ends}
        else:
            if isinstance(raw, dict):
                problems.append(f"{src}: {key} is a property of the whole link (one value, both directions)")
                continue
            try:
                out[key] = parse(raw)
            except UnitError as e:
                problems.append(f"{src}: {e}")
    return out, problems
