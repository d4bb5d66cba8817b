"""Built-in topologies: parameterised generators and the YAML files beside them.

=============  ================================================================
``dumbbell``   N senders → 1 receiver through one switch; the bottleneck is
               the switch port towards the receiver (DCTCP Fig. 1/12/16, PCC
               shallow buffers, lossy, FCT). Roles: ``senders``, ``receiver``.
``star``       N hosts on one switch, all links alike (TIMELY incast, FCT).
               Roles: ``receiver`` (h1), ``senders`` (the others).
``wishbone``   senders on s1, receivers on s2, the flows share the s1–s2
               bottleneck (PCC convergence). Roles: ``senders``, ``receivers``.
``parking_lot`` a chain of switches s1…s(H+1) whose H links are bottlenecks;
               long flows cross all of them, cross flows one each (oracle
               signal on multi-bottleneck paths). Roles: ``long_senders``,
               ``long_receivers``, ``cross_senders``, ``cross_receivers`` and
               per hop ``cross_senders_<i>``, ``cross_receivers_<i>``.
=============  ================================================================

Each adds a postcard collector host ``mon`` on its own unshaped port
(``collector=False`` leaves it out), so postcards never share the bottleneck
with the traffic they report on. Every parameter takes a number in the
property's unit or a string with a unit ("100Mbps", "250us", "1%").
``topologies/builtin/<name>.yaml`` is each generator's output at its
defaults (a test keeps them equal); ``two_hosts.yaml`` is the smallest
topology (two hosts, one switch, no link properties).
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Callable

from .model import Topology, TopologyError
from .units import (UnitError, format_delay, format_loss, format_rate, format_red, parse_delay,
                    parse_loss, parse_pkts, parse_rate, parse_red)

__all__ = ["GENERATORS", "BUILTIN_DIR", "dumbbell", "star", "wishbone", "parking_lot",
           "leaf_spine", "fat_tree", "load_topology", "list_builtins"]

BUILTIN_DIR = Path(__file__).resolve().parent.parent / "builtin"
COLLECTOR_IP = "10.0.0.254"
#: The parking lot's management port on every chain switch (above any data port).
MGMT_PORT = 100


def _opt(parse, v):
    return None if v is None else parse(v)


def _per_host(value, n: int, parse, what: str) -> list:
    """A scalar for every host, or a list of exactly n values."""
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise TopologyError([f"{what}: {len(value)} values given for {n} hosts"])
        return [_opt(parse, v) for v in value]
    return [_opt(parse, value)] * n


def _link(a: str, b: str, rate=None, delay=None, buffer=None, k=None, loss=None,
          red=None) -> dict:
    d: dict[str, Any] = {"endpoints": [a, b]}
    if rate is not None:
        d["rate_bps"] = format_rate(rate)
    if delay:
        d["delay_us"] = format_delay(delay)
    if buffer is not None:
        d["buffer_pkts"] = buffer
    if k is not None:
        d["ecn_k_pkts"] = k
    if loss:
        d["loss"] = format_loss(loss)
    if red is not None:
        d["ecn_red"] = format_red(red)
    return d


def _wrap(fn_name: str, params: dict, build: Callable[[], dict]) -> Topology:
    try:
        d = build()
    except UnitError as e:
        raise TopologyError([f"{fn_name}: {e}"]) from None
    d["params"] = {"generator": fn_name, **{k: v for k, v in params.items()}}
    return Topology.from_dict(d, source=f"builtin:{fn_name}")


def _check_n(name: str, n, lo: int, hi: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        try:
            n = int(str(n))
        except ValueError:
            raise TopologyError([f"{name}: {n!r} is not a whole number"]) from None
    if not lo <= n <= hi:
        raise TopologyError([f"{name}: {n} is outside {lo}..{hi}"])
    return n


def dumbbell(n_senders: int = 2, bottleneck_bps="100Mbps", access_bps="100Mbps",
             delay_us="125us", access_delay_us=None, buffer_pkts=120, ecn_k_pkts=20,
             loss=0, access_buffer_pkts=None, collector: bool = True) -> Topology:
    """N senders (h1..hN) → one receiver (rx) through switch s1.

    The receiver's link is the bottleneck: ``bottleneck_bps``, ``buffer_pkts``,
    ``ecn_k_pkts`` and ``loss`` apply to s1's port towards rx. ``delay_us`` is
    the one-way delay of the receiver's link; ``access_delay_us`` (default:
    the same) that of each sender's link, a scalar or one value per sender
    (RTT-fairness runs). A sender's RTT is 2 × (its access delay + delay_us);
    the defaults give the DCTCP seed's 500 µs at 100 Mbps, 120-packet buffer,
    K = 20.
    """
    params = dict(locals())
    n = _check_n("n_senders", n_senders, 1, 200)

    def build():
        bw = parse_rate(bottleneck_bps)
        acc = _opt(parse_rate, access_bps)
        d = parse_delay(delay_us)
        acc_d = _per_host(access_delay_us if access_delay_us is not None else d, n, parse_delay,
                          "access_delay_us")
        hosts = [{"name": f"h{i}", "ip": f"10.0.0.{i}/24"} for i in range(1, n + 1)]
        hosts.append({"name": "rx", "ip": "10.0.0.250/24"})
        links = [_link(f"h{i}", "s1", acc, acc_d[i - 1],
                       _opt(lambda v: parse_pkts(v, "access_buffer_pkts", 1), access_buffer_pkts))
                 for i in range(1, n + 1)]
        links.append(_link("rx", "s1", bw, d, _opt(lambda v: parse_pkts(v, "buffer_pkts", 1), buffer_pkts),
                           _opt(lambda v: parse_pkts(v, "ecn_k_pkts"), ecn_k_pkts),
                           parse_loss(loss or 0)))
        topo = {"name": f"dumbbell-{n}",
                "description": f"{n} senders -> rx through s1; bottleneck s1 -> rx "
                               f"{format_rate(bw)}",
                "hosts": hosts, "switches": [{"name": "s1", "id": 1}], "links": links,
                "roles": {"senders": [f"h{i}" for i in range(1, n + 1)], "receiver": "rx"}}
        _add_collector(topo, "s1", collector)
        return topo

    return _wrap("dumbbell", params, build)


def star(n_hosts: int = 11, rate_bps="50Mbps", delay_us="10us", buffer_pkts=None,
         ecn_k_pkts=None, loss=0, collector: bool = True, ecn_red=None) -> Topology:
    """N hosts h1..hN on switch s1, every link alike (TIMELY incast: 11 hosts,
    50 Mbps, 10 µs). Role ``receiver`` is h1, ``senders`` the rest; the queue
    properties apply to every switch port (the incast queue is h1's);
    ``ecn_red`` ("KMIN-KMAX/PMAX") marks by RED instead of a step at K."""
    params = dict(locals())
    n = _check_n("n_hosts", n_hosts, 2, 250)

    def build():
        r = _opt(parse_rate, rate_bps)
        d = parse_delay(delay_us)
        b = _opt(lambda v: parse_pkts(v, "buffer_pkts", 1), buffer_pkts)
        k = _opt(lambda v: parse_pkts(v, "ecn_k_pkts"), ecn_k_pkts)
        p = parse_loss(loss or 0)
        red = _opt(parse_red, ecn_red)
        hosts = [{"name": f"h{i}", "ip": f"10.0.0.{i}/24"} for i in range(1, n + 1)]
        links = [_link(f"h{i}", "s1", r, d, b, k, p, red) for i in range(1, n + 1)]
        topo = {"name": f"star-{n}", "description": f"{n} hosts on s1",
                "hosts": hosts, "switches": [{"name": "s1", "id": 1}], "links": links,
                "roles": {"receiver": "h1", "senders": [f"h{i}" for i in range(2, n + 1)]}}
        _add_collector(topo, "s1", collector)
        return topo

    return _wrap("star", params, build)


def wishbone(n_pairs: int = 4, bottleneck_bps="100Mbps", access_bps="1Gbps",
             bottleneck_delay_us="15ms", access_delay_us=0, buffer_pkts=250, ecn_k_pkts=None,
             loss=0, collector: bool = True) -> Topology:
    """Senders h1..hN on s1, receivers r1..rN on s2; flow i goes hi → ri and
    all share the s1–s2 link (``bottleneck_*``, ``buffer_pkts`` and
    ``ecn_k_pkts`` on both of its ends). PCC convergence: 4 flows, 100 Mbps,
    250-packet buffer; RTT = 2 × (2 × access delay + bottleneck delay)."""
    params = dict(locals())
    n = _check_n("n_pairs", n_pairs, 1, 99)

    def build():
        bw = parse_rate(bottleneck_bps)
        acc = _opt(parse_rate, access_bps)
        bd = parse_delay(bottleneck_delay_us)
        ad = parse_delay(access_delay_us or 0)
        b = _opt(lambda v: parse_pkts(v, "buffer_pkts", 1), buffer_pkts)
        k = _opt(lambda v: parse_pkts(v, "ecn_k_pkts"), ecn_k_pkts)
        hosts = [{"name": f"h{i}", "ip": f"10.0.0.{i}/24"} for i in range(1, n + 1)]
        hosts += [{"name": f"r{i}", "ip": f"10.0.0.{100 + i}/24"} for i in range(1, n + 1)]
        links = [_link("s1:1", "s2:1", bw, bd, b, k, parse_loss(loss or 0))]
        links += [_link(f"h{i}", "s1", acc, ad) for i in range(1, n + 1)]
        links += [_link(f"r{i}", "s2", acc, ad) for i in range(1, n + 1)]
        topo = {"name": f"wishbone-{n}",
                "description": f"{n} flows h_i -> r_i sharing s1 -- s2 ({format_rate(bw)})",
                "hosts": hosts,
                "switches": [{"name": "s1", "id": 1}, {"name": "s2", "id": 2}],
                "links": links,
                "roles": {"senders": [f"h{i}" for i in range(1, n + 1)],
                          "receivers": [f"r{i}" for i in range(1, n + 1)]}}
        _add_collector(topo, "s1", collector)
        return topo

    return _wrap("wishbone", params, build)


def parking_lot(n_hops: int = 2, n_long: int = 1, n_cross: int = 1, bottleneck_bps="50Mbps",
                access_bps=None, delay_us="10us", access_delay_us=None, buffer_pkts=200,
                ecn_k_pkts=None, loss=0, collector: bool = True) -> Topology:
    """A parking lot: switches s1 … s(H+1) in a chain, H = ``n_hops``; the
    link s_i — s_(i+1) (port 1 of s_i, port 2 of s_(i+1)) is bottleneck i.
    ``n_long`` long flows go l_k (on s1) → lr_k (on s(H+1)) and cross every
    bottleneck; at each hop i, ``n_cross`` cross flows go c<i>_<j> (on s_i)
    → cr<i>_<j> (on s(i+1)) and cross bottleneck i only. With as many long
    as cross flows per hop, max-min fairness gives every flow
    C/(n_long + n_cross).

    ``bottleneck_bps``, ``delay_us``, ``buffer_pkts``, ``ecn_k_pkts`` and
    ``loss`` apply to the switch-to-switch links (both ends). Host links run
    at ``access_bps`` (default: the bottleneck rate — each carries part of one
    bottleneck's flows, so none is a bottleneck itself) with
    ``access_delay_us`` (default ``delay_us``). A long flow's RTT is
    2 × (2 × access delay + H × delay), a cross flow's 2 × (2 × access
    delay + delay).

    With up to two hops the collector ``mon`` sits on a management switch
    ``sm`` with an unshaped link to every chain switch (port 100 of each,
    above every data port): postcards, and postcards returned to senders,
    never queue behind the traffic they report on, and no data route takes
    the management network (through ``sm`` any two switches are two hops
    apart, no closer than on the chain, and ties go to the lower port).
    With more hops ``sm`` would be a shortcut, so ``mon`` sits on s1 and the
    postcards of the other switches travel the chain's reverse direction.
    """
    params = dict(locals())
    h = _check_n("n_hops", n_hops, 1, 8)
    nl = _check_n("n_long", n_long, 0, 9)
    nc = _check_n("n_cross", n_cross, 0, 9)
    if nl + nc == 0:
        raise TopologyError(["parking_lot: no flows (n_long and n_cross are both 0)"])

    def build():
        bw = parse_rate(bottleneck_bps)
        acc = parse_rate(access_bps) if access_bps is not None else bw
        d = parse_delay(delay_us)
        ad = parse_delay(access_delay_us) if access_delay_us is not None else d
        b = _opt(lambda v: parse_pkts(v, "buffer_pkts", 1), buffer_pkts)
        k = _opt(lambda v: parse_pkts(v, "ecn_k_pkts"), ecn_k_pkts)
        p = parse_loss(loss or 0)
        switches = [{"name": f"s{i}", "id": i} for i in range(1, h + 2)]
        links = [_link(f"s{i}:1", f"s{i + 1}:2", bw, d, b, k, p) for i in range(1, h + 1)]
        hosts, roles = [], {"long_senders": [], "long_receivers": [], "cross_senders": [],
                            "cross_receivers": []}

        def host(name, ip, sw, role):
            hosts.append({"name": name, "ip": f"10.0.0.{ip}/24"})
            links.append(_link(name, sw, acc, ad))
            roles[role].append(name)

        for j in range(1, nl + 1):
            host(f"l{j}", j, "s1", "long_senders")
            host(f"lr{j}", 100 + j, f"s{h + 1}", "long_receivers")
        for i in range(1, h + 1):
            for j in range(1, nc + 1):
                host(f"c{i}_{j}", 10 * i + j, f"s{i}", "cross_senders")
                host(f"cr{i}_{j}", 100 + 10 * i + j, f"s{i + 1}", "cross_receivers")
            roles[f"cross_senders_{i}"] = [f"c{i}_{j}" for j in range(1, nc + 1)]
            roles[f"cross_receivers_{i}"] = [f"cr{i}_{j}" for j in range(1, nc + 1)]
        topo = {"name": f"parking-lot-{h}",
                "description": f"{h} bottlenecks of {format_rate(bw)} in a chain; {nl} long "
                               f"flow(s) across all, {nc} cross flow(s) per hop",
                "hosts": hosts, "switches": switches, "links": links,
                "roles": {r: v for r, v in roles.items() if v}}
        if collector and h <= 2:
            switches.append({"name": "sm", "id": h + 2})
            links += [{"endpoints": [f"s{i}:{MGMT_PORT}", f"sm:{i}"]} for i in range(1, h + 2)]
            _add_collector(topo, "sm", True)
        else:
            _add_collector(topo, "s1", collector)
        return topo

    return _wrap("parking_lot", params, build)


def leaf_spine(leaves: int = 2, spines: int = 2, hosts_per_leaf: int = 2, host_bps="1Gbps",
               fabric_bps=None, oversubscription: float = 1.0, delay_us="1us",
               buffer_pkts=None, ecn_k_pkts=None, ecn_red=None,
               collector: bool = True) -> Topology:
    """A two-tier fabric: every leaf l1…lL has ``hosts_per_leaf`` hosts
    (h<leaf>_<j>, ports 1…H) and a link to every spine sp1…spS (ports
    H+1…H+S; a spine's port i is leaf i). Host links run at ``host_bps``;
    fabric links at ``fabric_bps``, by default what makes the leaves
    ``oversubscription``:1 (host capacity over uplink capacity). Every link
    has ``delay_us``; ``buffer_pkts``, ``ecn_k_pkts`` / ``ecn_red`` apply to
    every switch port. Traffic between leaves has ``spines`` equal-cost
    paths (ECMP, docs/data-plane.md). Roles: ``hosts``, ``leaf<i>``. The
    collector ``mon`` is on l1."""
    params = dict(locals())
    nl = _check_n("leaves", leaves, 1, 32)
    ns = _check_n("spines", spines, 1, 16)
    nh = _check_n("hosts_per_leaf", hosts_per_leaf, 1, 64)
    if not isinstance(oversubscription, (int, float)) or oversubscription <= 0:
        raise TopologyError([f"leaf_spine: oversubscription {oversubscription!r} must be > 0"])

    def build():
        hb = parse_rate(host_bps)
        fb = (parse_rate(fabric_bps) if fabric_bps is not None
              else int(round(hb * nh / (ns * oversubscription))))
        d = parse_delay(delay_us)
        b = _opt(lambda v: parse_pkts(v, "buffer_pkts", 1), buffer_pkts)
        k = _opt(lambda v: parse_pkts(v, "ecn_k_pkts"), ecn_k_pkts)
        red = _opt(parse_red, ecn_red)
        switches = ([{"name": f"l{i}", "id": i} for i in range(1, nl + 1)]
                    + [{"name": f"sp{j}", "id": 100 + j} for j in range(1, ns + 1)])
        hosts, links, roles = [], [], {"hosts": []}
        for i in range(1, nl + 1):
            roles[f"leaf{i}"] = []
            for j in range(1, nh + 1):
                name = f"h{i}_{j}"
                hosts.append({"name": name, "ip": f"10.0.{i}.{j}/16"})
                links.append(_link(name, f"l{i}:{j}", hb, d, b, k, None, red))
                roles["hosts"].append(name)
                roles[f"leaf{i}"].append(name)
            for j in range(1, ns + 1):
                links.append(_link(f"l{i}:{nh + j}", f"sp{j}:{i}", fb, d, b, k, None, red))
        topo = {"name": f"leaf-spine-{nl}x{ns}x{nh}",
                "description": f"{nl} leaves x {nh} hosts at {format_rate(hb)}, {ns} spines at "
                               f"{format_rate(fb)}",
                "hosts": hosts, "switches": switches, "links": links, "roles": roles}
        _add_collector(topo, "l1", collector)
        return topo

    return _wrap("leaf_spine", params, build)


def fat_tree(k: int = 4, host_bps="1Gbps", fabric_bps=None, delay_us="1us", buffer_pkts=None,
             ecn_k_pkts=None, ecn_red=None, collector: bool = True) -> Topology:
    """A k-ary fat-tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge
    switches e<p>_<i> and k/2 aggregation switches a<p>_<i>, (k/2)² core
    switches c<j>; every edge switch has k/2 hosts h<p>_<i>_<j> (ports
    1…k/2) and a link to every aggregation switch of its pod (ports
    k/2+1…k); aggregation switch i of a pod links to cores i·k/2 … i·k/2 +
    k/2 − 1 (its ports k/2+1…k; core c's port p+1 is pod p). Host links at
    ``host_bps``, fabric links at ``fabric_bps`` (default: the same, a
    non-blocking fabric). Paths between pods: (k/2)² equal-cost (ECMP).
    Roles: ``hosts``, ``pod<p>``. The collector ``mon`` is on e0_0."""
    params = dict(locals())
    kk = _check_n("k", k, 2, 16)
    if kk % 2:
        raise TopologyError([f"fat_tree: k={kk} must be even"])
    half = kk // 2

    def build():
        hb = parse_rate(host_bps)
        fb = parse_rate(fabric_bps) if fabric_bps is not None else hb
        d = parse_delay(delay_us)
        b = _opt(lambda v: parse_pkts(v, "buffer_pkts", 1), buffer_pkts)
        kq = _opt(lambda v: parse_pkts(v, "ecn_k_pkts"), ecn_k_pkts)
        red = _opt(parse_red, ecn_red)
        switches, hosts, links, roles = [], [], [], {"hosts": []}
        sid = 0

        def switch(name):
            nonlocal sid
            sid += 1
            switches.append({"name": name, "id": sid})

        for p in range(kk):
            for i in range(half):
                switch(f"e{p}_{i}")
            for i in range(half):
                switch(f"a{p}_{i}")
        for c in range(half * half):
            switch(f"c{c}")
        for p in range(kk):
            roles[f"pod{p}"] = []
            for i in range(half):
                for j in range(half):
                    name = f"h{p}_{i}_{j}"
                    hosts.append({"name": name, "ip": f"10.{p}.{i}.{j + 2}/8"})
                    links.append(_link(name, f"e{p}_{i}:{j + 1}", hb, d, b, kq, None, red))
                    roles["hosts"].append(name)
                    roles[f"pod{p}"].append(name)
                for a in range(half):
                    links.append(_link(f"e{p}_{i}:{half + a + 1}", f"a{p}_{a}:{i + 1}", fb, d, b,
                                       kq, None, red))
            for a in range(half):
                for c in range(half):
                    links.append(_link(f"a{p}_{a}:{half + c + 1}", f"c{a * half + c}:{p + 1}",
                                       fb, d, b, kq, None, red))
        topo = {"name": f"fat-tree-{kk}",
                "description": f"k={kk} fat-tree: {len(hosts)} hosts at {format_rate(hb)}, "
                               f"{len(switches)} switches",
                "hosts": hosts, "switches": switches, "links": links, "roles": roles}
        _add_collector(topo, "e0_0", collector)
        return topo

    return _wrap("fat_tree", params, build)


def _add_collector(topo: dict, switch: str, collector: bool) -> None:
    if not collector:
        return
    topo["hosts"].append({"name": "mon", "ip": f"{COLLECTOR_IP}/24"})
    topo["links"].append({"endpoints": ["mon", switch]})
    topo["collector"] = "mon"


GENERATORS: dict[str, Callable[..., Topology]] = {
    "dumbbell": dumbbell,
    "star": star,
    "incast": star,
    "wishbone": wishbone,
    "parking_lot": parking_lot,
    "leaf_spine": leaf_spine,
    "fat_tree": fat_tree,
}


def list_builtins() -> dict[str, str]:
    """name → one-line description, generators and YAML files."""
    out = {}
    for name, fn in GENERATORS.items():
        sig = ", ".join(f"{p.name}={p.default!r}" for p in inspect.signature(fn).parameters.values())
        out[name] = f"generator({sig})"
    if BUILTIN_DIR.is_dir():
        for p in sorted(BUILTIN_DIR.glob("*.yaml")):
            out.setdefault(p.stem, f"file {p}")
    return out


def _coerce(fn: Callable, params: dict) -> dict:
    """CLI strings → ints/bools/lists where the generator's defaults say so."""
    sig = inspect.signature(fn).parameters
    out = {}
    for k, v in params.items():
        if k not in sig:
            import difflib
            close = difflib.get_close_matches(k, list(sig), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TopologyError([f"{fn.__name__}: unknown parameter {k!r}{hint}; "
                                 f"parameters: {', '.join(sig)}"])
        default = sig[k].default
        if isinstance(v, str):
            if isinstance(default, bool):
                if v.lower() in ("1", "true", "yes", "on"):
                    v = True
                elif v.lower() in ("0", "false", "no", "off"):
                    v = False
                else:
                    raise TopologyError([f"{fn.__name__}: {k}={v!r} is not true/false"])
            elif "," in v:
                v = [x.strip() for x in v.split(",")]
            elif isinstance(default, int) and v.isdigit():
                v = int(v)
            elif v.lower() == "none":
                v = None
        out[k] = v
    return out


def load_topology(src, **params) -> Topology:
    """A topology from a built-in name (with generator parameters), a YAML
    path, a mapping, or a Topology (returned as is)."""
    if isinstance(src, Topology):
        if params:
            raise TopologyError(["parameters apply to built-in generators only"])
        return src
    if isinstance(src, dict):
        if params:
            raise TopologyError(["parameters apply to built-in generators only"])
        return Topology.from_dict(src)
    s = str(src)
    path = Path(s)
    if s in GENERATORS and not (path.suffix and path.exists()):
        fn = GENERATORS[s]
        return fn(**_coerce(fn, params))
    if not path.exists() and (BUILTIN_DIR / f"{s}.yaml").exists():
        path = BUILTIN_DIR / f"{s}.yaml"
    if path.exists():
        if params:
            raise TopologyError([f"{s}: parameters apply to built-in generators only "
                                 f"({', '.join(sorted(set(GENERATORS)))})"])
        return Topology.load(path)
    known = ", ".join(sorted(list_builtins()))
    raise TopologyError([f"{s!r} is neither a file nor a built-in topology (built-ins: {known})"])
