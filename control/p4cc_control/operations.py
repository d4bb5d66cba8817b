"""The congestion-control lab's operations, on top of the entity API.

Names of the P4 objects used here are those of p4src/v1model/cc_switch.p4
and p4src/tna/cc_switch.p4 alike (docs/data-plane.md); the short forms
resolve through the P4Info. CONTROLLER_NAMES lists every one of them, and
missing_names() says which a P4Info lacks.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, Dict, Iterable, List, Optional

from . import codec
from .errors import (NameNotFound, SwitchUnreachable, TargetError, UnknownPort, ValueOutOfRange,
                     WriteError)
from .targets import Target

log = logging.getLogger("p4cc.control")

POSTCARD_SESSION = 100      # constants.p4 POSTCARD_SESSION
POSTCARD_FRAME_LEN = 96     # constants.p4 POSTCARD_FRAME_LEN: what a postcard frame keeps
POSTCARD_UDP_PORT = 7361    # default collector UDP port (constants.p4 POSTCARD_UDP_SRC)
LOSS_SCALE = 65536          # constants.p4 LOSS_SCALE
MARK_SCALE = 65536          # constants.p4 MARK_SCALE
TIME_UNIT = {"us": 0, "ns": 1}   # constants.p4 TIME_UNIT_US, TIME_UNIT_NS
#: At most this many depth ranges per port in a RED profile (the program's
#: ecn_red table holds RED_ENTRIES = 4096 across ports): wider spans get
#: equal steps of probability, each within Pmax/64 of RED's line. 32 (it
#: was 256): a profile on every port of a 13-port star took 2 613 entries,
#: and programming them (each port's profile cleared first, which reads the
#: table) took 10 of the 13 s of a DCQCN arm at 25 Gb/s in virtual time.
RED_RANGES_PER_PORT = 32
#: The largest queue depth a range can name (v1model's and Tofino's
#: enq_qdepth are 19 bits).
MAX_DEPTH = (1 << 19) - 1
UNIMPLEMENTED = 12          # gRPC canonical code

# Per-port counters: (column, counter name, what it holds)
PORT_COUNTERS = [
    ("rx", "rx.port_packets", "both"),
    ("tx", "tx.port_packets", "both"),
    ("ce_marks", "ce_marks", "packets"),
    ("ingress_drops", "ingress_drops", "packets"),
    ("loss_drops", "loss_drops", "packets"),
]
COLUMNS = ["rx_packets", "rx_bytes", "tx_packets", "tx_bytes", "ce_marks",
           "ingress_drops", "loss_drops"]

#: Every P4 object the controller (these operations, the CLI, the PTF
#: suite) addresses, by the name it uses: table -> (match fields, {action:
#: parameters}), counters, registers. Each must resolve in the P4Info of
#: every program the controller drives (v1model, Tofino, Tofino 2).
CONTROLLER_NAMES = {
    "tables": {
        "ipv4_lpm": (["dst_addr"], {"forward": ["port", "dst_mac"], "drop": []}),
        "ecn_threshold": (["egress_port"], {"set_threshold": ["k_depth"], "NoAction": []}),
        "port_loss": (["egress_port"], {"set_loss": ["threshold_16"], "NoAction": []}),
        "switch_config": ([], {"set_switch_id": ["switch_id"]}),
        "postcard_config": ([], {"enable_postcards": ["sample_one_in_n", "collector_mac_addr",
                                                      "switch_ip_addr", "collector_ip_addr",
                                                      "collector_udp_port"],
                                 "NoAction": []}),
    },
    "counters": [name for _, name, _ in PORT_COUNTERS]
                + ["CcIngress.rx.port_packets", "CcEgress.tx.port_packets"],
    "registers": ["postcard_sample_count"],
}

#: What a program may have beyond CONTROLLER_NAMES, by feature: a program
#: without one (an older build, the Tofino program's clock) simply does not
#: offer it, and the operations that need it say so.
FEATURE_NAMES = {
    # Shim version 2: the line rate each INT record reports.
    "int": {"port_rate": (["egress_port"], {"set_port_rate": ["rate_kbps"], "NoAction": []})},
    # RED marking profiles (DCQCN's switch).
    "red": {"ecn_red": (["egress_port", "enq_qdepth"],
                        {"set_mark_probability": ["mark_16"], "NoAction": []})},
    # The unit of the switch's timestamps in its reports (v1model).
    "clock": {"clock_config": ([], {"set_time_unit": ["time_unit"]})},
    # ECMP: routes to a group, whose buckets name its members.
    "ecmp": {"ecmp_bucket": (["group_id", "bucket"], {"forward": ["port", "dst_mac"],
                                                      "drop": []})},
}


def features(p4info) -> set:
    """The features of FEATURE_NAMES whose tables `p4info` has."""
    out = set()
    for feature, tables in FEATURE_NAMES.items():
        try:
            for t in tables:
                p4info.table(t)
        except NameNotFound:
            continue
        out.add(feature)
    return out


def red_ranges(kmin: int, kmax: int, pmax: float,
               most: int = RED_RANGES_PER_PORT) -> List[tuple]:
    """RED between Kmin and Kmax up to Pmax as depth ranges and the
    16-bit mark probability of each ([lo, hi], mark_16), in the data
    plane's depth unit: 0 below Kmin (no entry), rising linearly to Pmax at
    Kmax, 1 above Kmax (the RED ECN profile DCQCN assumes: Zhu et al.,
    SIGCOMM 2015, §3.1). A span wider than `most` depths is cut into
    `most` equal ranges at the probability of their middle."""
    if not (0 <= kmin <= kmax <= MAX_DEPTH):
        raise ValueOutOfRange(f"RED needs 0 <= Kmin <= Kmax <= {MAX_DEPTH}: got Kmin {kmin}, "
                              f"Kmax {kmax}")
    if not 0.0 < float(pmax) <= 1.0:
        raise ValueOutOfRange(f"RED's Pmax {pmax} is not a probability in (0, 1]")
    out = []
    span = kmax - kmin
    if span:
        n = min(span, most)
        for i in range(n):
            lo = kmin + 1 + i * span // n
            hi = kmin + (i + 1) * span // n
            mid = (lo + hi) / 2
            p16 = int(round(pmax * (mid - kmin) / span * MARK_SCALE))
            out.append(((lo, hi), max(1, p16)))
    if kmax < MAX_DEPTH:
        out.append(((kmax + 1, MAX_DEPTH), MARK_SCALE))
    return out


def missing_names(p4info, wanted_features=()) -> List[str]:
    """What of CONTROLLER_NAMES (and of the FEATURE_NAMES of
    `wanted_features`) does not resolve in `p4info` (by the P4Info's own
    rules: full name, alias or unique suffix), one line each."""
    out = []
    tables = dict(CONTROLLER_NAMES["tables"])
    for f in wanted_features:
        tables.update(FEATURE_NAMES[f])
    for table, (fields, actions) in tables.items():
        try:
            t = p4info.table(table)
        except NameNotFound as e:
            out.append(str(e))
            continue
        have = sorted(f.name for f in t.match_fields)
        if have != sorted(fields):
            out.append(f"table {t.name} matches on {have}, the controller on {sorted(fields)}")
        for action, params in actions.items():
            try:
                a = p4info.action(action, t)
            except NameNotFound as e:
                out.append(str(e))
                continue
            if sorted(p.name for p in a.params) != sorted(params):
                out.append(f"action {a.name} takes {sorted(p.name for p in a.params)}, "
                           f"the controller gives {sorted(params)}")
    for kind, get in (("counters", p4info.counter), ("registers", p4info.register)):
        for name in CONTROLLER_NAMES[kind]:
            try:
                get(name)
            except NameNotFound as e:
                out.append(str(e))
    return out


def loss_threshold(p: float) -> int:
    """Drop probability -> the 16-bit threshold the data plane compares a
    uniform draw in [0, 65535] against: round(p * 65536)."""
    try:
        p = float(p)
    except (TypeError, ValueError):
        raise ValueOutOfRange(f"loss {p!r} is not a number") from None
    if not 0.0 <= p <= 1.0:
        raise ValueOutOfRange(f"loss {p} out of range: a probability in 0..1")
    return int(round(p * LOSS_SCALE))


def parse_probability(s: str) -> float:
    """'0.01', '1%', '1e-3' -> float."""
    s = str(s).strip()
    try:
        return float(s[:-1]) / 100.0 if s.endswith("%") else float(s)
    except ValueError:
        raise ValueOutOfRange(f"loss {s!r} is not a probability (e.g. 0.01 or 1%)") from None


class CcOps:
    """Operations on one switch. Async methods; Switch.ops() gives a sync view."""

    def __init__(self, sw, target: Optional[Target] = None):
        """`sw`: a connected p4cc_control.switch.AsyncSwitch."""
        self.sw = sw
        self.target = target or Target()
        if self._reapply_target not in sw.restore_hooks:
            sw.restore_hooks.append(self._reapply_target)

    async def _reapply_target(self):
        if self.target.applied:
            await asyncio.to_thread(self.target.reapply)
            log.warning("%s: re-applied %s port settings %s", self.sw.addr, self.target.name,
                        self.target.port_settings())

    # -- ports ----------------------------------------------------------------
    def port_width(self) -> int:
        return self.sw.p4info.table("ecn_threshold").field("egress_port").bitwidth

    async def check_port(self, port) -> int:
        try:
            port = int(port)
        except (TypeError, ValueError):
            raise UnknownPort(f"port {port!r} is not a number") from None
        width = self.port_width()
        if not 0 <= port < (1 << width):
            raise UnknownPort(f"port {port} out of range for bit<{width}> (0..{(1 << width) - 1})")
        try:
            known = await asyncio.to_thread(self.target.ports)
        except TargetError as e:  # cannot list ports: the range check stands
            log.debug("cannot list ports: %s", e)
            known = None
        if known is not None and port not in known:
            have = ", ".join(str(p) for p in sorted(known)) or "none"
            raise UnknownPort(f"unknown port {port}: the {self.target.name} switch at "
                              f"{self.sw.addr} has ports {have}")
        return port

    # -- ECN threshold K --------------------------------------------------------
    async def set_k(self, port, value: float, unit: str = "packets") -> dict:
        port = await self.check_port(port)
        depth = self.target.depth(value, unit)
        t = self.sw.tables["ecn_threshold"]
        await t.upsert({"egress_port": port}, "set_threshold", {"k_depth": depth})
        return {"port": port, "k": value, "unit": unit, "k_depth": depth,
                "depth_unit": self.target.depth_unit}

    async def clear_k(self, port) -> dict:
        port = await self.check_port(port)
        await self.sw.tables["ecn_threshold"].delete({"egress_port": port}, missing_ok=True)
        return {"port": port, "k": None}

    # -- RED marking (DCQCN's switch) -------------------------------------------
    def _need(self, feature: str, what: str) -> None:
        if feature not in features(self.sw.p4info):
            raise NameNotFound(f"{what}: the program on {self.sw.addr} has no "
                               f"{', '.join(FEATURE_NAMES[feature])} table (an older build of "
                               "cc_switch? `make p4`, or the committed p4src/build/)")

    async def set_red(self, port, kmin: float, kmax: float, pmax: float,
                      unit: str = "packets") -> dict:
        """Port `port` marks by RED between Kmin and Kmax (in `unit`) up
        to Pmax, instead of a step at K."""
        self._need("red", "RED marking")
        port = await self.check_port(port)
        lo, hi = self.target.depth(kmin, unit), self.target.depth(kmax, unit)
        ranges = red_ranges(lo, hi, pmax)
        await self.clear_red(port)
        await self.sw.tables["ecn_threshold"].delete({"egress_port": port}, missing_ok=True)
        from .entities import build_table_entry
        from p4.v1 import p4runtime_pb2

        t = self.sw.tables["ecn_red"]
        ents = [p4runtime_pb2.Entity(table_entry=build_table_entry(
            self.sw.p4info, t.name, {"egress_port": port, "enq_qdepth": (a, b)},
            "set_mark_probability", {"mark_16": p16}, priority=1))
            for (a, b), p16 in ranges]
        if ents:
            await self.sw.upsert(ents)  # one batch
        return {"port": port, "kmin": kmin, "kmax": kmax, "pmax": float(pmax), "unit": unit,
                "kmin_depth": lo, "kmax_depth": hi, "ranges": len(ranges),
                "depth_unit": self.target.depth_unit}

    async def clear_red(self, port) -> dict:
        port = await self.check_port(port)
        if "red" not in features(self.sw.p4info):
            return {"port": port, "red": None}
        from .entities import build_table_entry
        from p4.v1 import p4runtime_pb2

        t = self.sw.tables["ecn_red"]
        dels = [p4runtime_pb2.Update(type=p4runtime_pb2.Update.DELETE,
                                     entity=p4runtime_pb2.Entity(table_entry=build_table_entry(
                                         self.sw.p4info, t.name, e.match, None, None,
                                         priority=e.priority)))
                for e in await t.read() if int(e.match["egress_port"]) == port]
        if dels:
            await self.sw.write(dels, missing_ok=True)  # one batch
        return {"port": port, "red": None}

    async def read_red(self) -> Dict[int, List[tuple]]:
        """{port: [((lo, hi), mark_16), ...]} of every RED profile."""
        if "red" not in features(self.sw.p4info):
            return {}
        out: Dict[int, list] = {}
        for e in await self.sw.tables["ecn_red"].read():
            lo, hi = str(e.match["enq_qdepth"]).split("..")
            out.setdefault(int(e.match["egress_port"]), []).append(
                ((int(lo), int(hi)), int(e.params["mark_16"])))
        return {p: sorted(v) for p, v in sorted(out.items())}

    # -- what INT records report ------------------------------------------------
    async def set_port_rate(self, port, rate_bps: Optional[int]) -> dict:
        """The line rate a port's version-2 telemetry records report
        (kb/s in the data plane); None or 0 removes it (records say 0)."""
        self._need("int", "the INT line rate")
        port = await self.check_port(port)
        t = self.sw.tables["port_rate"]
        if not rate_bps:
            await t.delete({"egress_port": port}, missing_ok=True)
            return {"port": port, "rate_kbps": 0}
        kbps = int(round(int(rate_bps) / 1000))
        await t.upsert({"egress_port": port}, "set_port_rate", {"rate_kbps": kbps})
        return {"port": port, "rate_kbps": kbps}

    async def set_clock(self, unit: Optional[str] = None) -> dict:
        """The unit of the switch's timestamps and queue delays: the finest
        the target has (ns on the embedded target and in virtual time, µs
        on bmv2) unless `unit` is given; the target's clock and the
        program's reports (clock_config) are set together."""
        self._need("clock", "the clock unit")
        units = self.target.clock_units
        finest = unit is None
        unit = unit or units[-1]
        if unit not in units:
            raise ValueOutOfRange(f"the {self.target.name} target's clock counts "
                                  f"{' or '.join(units)}, not {unit}")
        if len(units) > 1:
            try:
                await asyncio.to_thread(self.target.set_clock, unit)
            except TargetError as e:
                if not finest:
                    raise
                # The finest clock is a refinement: without the target's
                # knob the switch keeps its default, and its reports say so.
                log.warning("%s: clock stays in %s: %s", self.sw.addr, units[0], e)
                unit = units[0]
        await self.sw.tables["clock_config"].set_default("set_time_unit",
                                                         {"time_unit": TIME_UNIT[unit]})
        return {"clock": unit}

    async def read_k(self) -> Dict[int, int]:
        out = {}
        for e in await self.sw.tables["ecn_threshold"].read():
            out[int(e.match["egress_port"])] = int(e.params.get("k_depth", 0))
        return dict(sorted(out.items()))

    # -- random loss ------------------------------------------------------------
    async def set_loss(self, port, p: float) -> dict:
        port = await self.check_port(port)
        thr = loss_threshold(p)
        t = self.sw.tables["port_loss"]
        if thr == 0:
            # No entry = no loss: cleaner than an entry that never drops.
            await t.delete({"egress_port": port}, missing_ok=True)
        else:
            await t.upsert({"egress_port": port}, "set_loss", {"threshold_16": thr})
        return {"port": port, "loss": float(p), "threshold_16": thr}

    async def read_loss(self) -> Dict[int, float]:
        out = {}
        for e in await self.sw.tables["port_loss"].read():
            if e.action and e.action.endswith("set_loss"):
                out[int(e.match["egress_port"])] = int(e.params["threshold_16"]) / LOSS_SCALE
        return dict(sorted(out.items()))

    # -- postcards --------------------------------------------------------------
    async def enable_postcards(self, collector_port, collector_ip: str, collector_mac: str,
                               switch_ip: str, sample_one_in_n: int = 1,
                               udp_port: int = POSTCARD_UDP_PORT,
                               truncate: Optional[int] = None) -> dict:
        """The clone session's truncation is the target's unless given:
        the v1model program truncates postcards itself (truncate() in
        egress), so 0 = none, which is also all bmv2's P4Runtime server
        accepts; on Tofino the mirror session cuts the copy to its mirror
        header and the reported packet's first bytes."""
        port = await self.check_port(collector_port)
        self.target.check_mirror_port(port)
        if truncate is None:
            truncate = self.target.postcard_truncate
        if int(sample_one_in_n) < 1:
            raise ValueOutOfRange(f"sample 1-in-{sample_one_in_n}: N must be >= 1")
        params = {"sample_one_in_n": int(sample_one_in_n), "collector_mac_addr": collector_mac,
                  "switch_ip_addr": switch_ip, "collector_ip_addr": collector_ip,
                  "collector_udp_port": udp_port}
        # Build (and so range-check) the action before touching the switch.
        from .entities import build_table_entry

        build_table_entry(self.sw.p4info, "postcard_config", None, "enable_postcards", params,
                          is_default=True)
        await self.sw.clone_sessions.upsert(POSTCARD_SESSION, [port],
                                            packet_length_bytes=int(truncate))
        await self.sw.tables["postcard_config"].set_default("enable_postcards", params)
        return {"clone_session": POSTCARD_SESSION, "collector_port": port,
                "truncate": int(truncate), **params}

    async def disable_postcards(self) -> dict:
        await self.sw.tables["postcard_config"].set_default("NoAction")
        await self.sw.clone_sessions.delete(POSTCARD_SESSION, missing_ok=True)
        return {"postcards": "off"}

    async def read_postcards(self) -> dict:
        d = await self.sw.tables["postcard_config"].read_default()
        sessions = await self.sw.clone_sessions.read(POSTCARD_SESSION)
        return {"action": d.action, "params": d.params,
                "clone_session": sessions[0] if sessions else None}

    # -- switch id --------------------------------------------------------------
    async def set_switch_id(self, switch_id: int) -> dict:
        await self.sw.tables["switch_config"].set_default("set_switch_id",
                                                          {"switch_id": switch_id})
        return {"switch_id": int(codec.parse_int(switch_id, 16, "switch_id"))}

    # -- a switch's whole configuration (the scenario plan's switch part) --------
    # -- ECMP ---------------------------------------------------------------------
    async def install_ecmp_group(self, group) -> dict:
        """A p4cc_topo.plan.EcmpGroup's buckets (ecmp_bucket), one batch:
        bucket b forwards to member ``group.bucket_members()[b]``."""
        self._need("ecmp", "ECMP")
        from .entities import build_table_entry
        from p4.v1 import p4runtime_pb2

        for m in group.members:
            await self.check_port(m.port)
        owners = group.bucket_members()
        ents = [p4runtime_pb2.Entity(table_entry=build_table_entry(
            self.sw.p4info, "ecmp_bucket", {"group_id": group.group_id, "bucket": b}, "forward",
            {"port": group.members[i].port, "dst_mac": group.members[i].dst_mac}))
            for b, i in enumerate(owners)]
        await self.sw.upsert(ents)
        return {"group_id": group.group_id,
                "members": [{"port": m.port, "dst_mac": m.dst_mac} for m in group.members],
                "buckets": len(owners)}

    async def read_ecmp(self) -> Dict[int, Dict[int, tuple]]:
        """{group: {bucket: (port, dst_mac)}} as the switch has them."""
        if "ecmp" not in features(self.sw.p4info):
            return {}
        out: Dict[int, Dict[int, tuple]] = {}
        for e in await self.sw.tables["ecmp_bucket"].read():
            out.setdefault(int(e.match["group_id"]), {})[int(e.match["bucket"])] = (
                int(e.params["port"]), e.params["dst_mac"])
        return {g: dict(sorted(b.items())) for g, b in sorted(out.items())}

    async def ecmp_remove_member(self, group_id: int, port: int) -> dict:
        """Takes the member on ``port`` out of ECMP group ``group_id``: its
        buckets go to the remaining members in turn; every other bucket,
        and so every other flow, stays where it is."""
        self._need("ecmp", "ECMP")
        port = await self.check_port(port)
        buckets = (await self.read_ecmp()).get(int(group_id))
        if not buckets:
            raise NameNotFound(f"no ECMP group {group_id} on {self.sw.addr}")
        rest = sorted({v for v in buckets.values() if v[0] != port})
        if len(rest) == len(set(buckets.values())):
            raise ValueOutOfRange(f"port {port} is not a member of ECMP group {group_id}")
        if not rest:
            raise ValueOutOfRange(f"port {port} is the last member of ECMP group {group_id}")
        moved = [b for b, v in buckets.items() if v[0] == port]
        t = self.sw.tables["ecmp_bucket"]
        for k, b in enumerate(moved):
            p, mac = rest[k % len(rest)]
            await t.upsert({"group_id": int(group_id), "bucket": b}, "forward",
                           {"port": p, "dst_mac": mac})
        return {"group_id": int(group_id), "removed_port": port, "moved_buckets": moved}

    async def install_routes(self, routes) -> List[dict]:
        """ipv4_lpm entries for plan routes (p4cc_topo.plan.Route), one
        batch: a route to one next hop forwards, one to an ECMP group sets
        the group (install_ecmp_group writes the group itself)."""
        from .entities import build_table_entry
        from p4.v1 import p4runtime_pb2

        entries = []
        for r in routes:
            gid = getattr(r, "group_id", None)
            if gid is None:
                entries.append({"match": {"dst_addr": r.prefix}, "action": "forward",
                                "params": {"port": r.port, "dst_mac": r.dst_mac}, "host": r.host})
            else:
                entries.append({"match": {"dst_addr": r.prefix}, "action": "set_ecmp_group",
                                "params": {"group_id": gid}, "host": r.host})
        for e in entries:
            if "port" in e["params"]:
                await self.check_port(e["params"]["port"])
        ents = [p4runtime_pb2.Entity(table_entry=build_table_entry(
            self.sw.p4info, "ipv4_lpm", e["match"], e["action"], e["params"])) for e in entries]
        if ents:
            await self.sw.upsert(ents)  # one batch
        return entries

    async def apply_port(self, cfg, loss_in: str = "target") -> dict:
        """One PortConfig: K (or none), the link model through the target,
        and random loss in the target's link model or the P4 port_loss table.
        A target whose ports are shaped outside P4Runtime (Tofino: Stratum's
        chassis config) takes loss in the P4 table and reports the rest of
        the link model as not applied, instead of failing half-way."""
        done: dict = {}
        red = getattr(cfg, "ecn_red", None)
        if red is not None:
            done["red"] = await self.set_red(cfg.port, red.kmin_pkts, red.kmax_pkts, red.pmax)
            done["k"] = {"port": cfg.port, "k": None}
        else:
            if "red" in features(self.sw.p4info):
                await self.clear_red(cfg.port)
            if cfg.ecn_k_pkts is None:
                done["k"] = await self.clear_k(cfg.port)
            else:
                done["k"] = await self.set_k(cfg.port, cfg.ecn_k_pkts, "packets")
        if "int" in features(self.sw.p4info):
            done["int_rate"] = await self.set_port_rate(cfg.port, cfg.rate_bps)
        knobs = cfg.link_model()
        if loss_in == "p4" or not self.target.shapes_ports:
            done["loss"] = await self.set_loss(cfg.port, knobs.pop("loss", 0.0) or 0.0)
        if any(knobs.get(k) for k in knobs):
            if self.target.shapes_ports:
                done["link"] = await self.set_queue(cfg.port, **knobs)
            else:
                done["link_not_applied"] = self.target.problems(knobs)
                log.warning("%s port %s: %s", self.sw.addr, cfg.port,
                            "; ".join(done["link_not_applied"]))
        return done

    async def apply_switch(self, cfg) -> dict:
        """Everything a p4cc_topo.plan.SwitchConfig says, in the order that
        keeps the switch consistent: switch id, routes, ports, postcards."""
        out = {"switch": cfg.name,
               "switch_id": (await self.set_switch_id(cfg.switch_id))["switch_id"],
               "clock": ((await self.set_clock())["clock"]
                         if "clock" in features(self.sw.p4info) else None),
               "ecmp_groups": [await self.install_ecmp_group(g)
                               for _, g in sorted(getattr(cfg, "ecmp_groups", {}).items())],
               "routes": await self.install_routes(cfg.routes),
               "ports": {p: await self.apply_port(c, cfg.loss_in)
                         for p, c in sorted(cfg.ports.items())}}
        if cfg.postcards is not None:
            pc = cfg.postcards
            out["postcards"] = await self.enable_postcards(
                pc.port, pc.collector_ip, pc.collector_mac, pc.switch_ip,
                sample_one_in_n=pc.one_in_n, udp_port=pc.udp_port)
        return out

    # -- target knobs -----------------------------------------------------------
    async def set_queue(self, port, **settings) -> dict:
        port = await self.check_port(port)
        return await asyncio.to_thread(self.target.set_port, port, **settings)

    async def queue_settings(self) -> Dict[int, dict]:
        if hasattr(self.target, "port_table"):
            return await asyncio.to_thread(self.target.port_table)
        return self.target.port_settings()

    # -- counters ---------------------------------------------------------------
    async def port_counters(self, ports: Optional[Iterable[int]] = None) -> Dict[int, dict]:
        """{port: {rx_packets, rx_bytes, tx_packets, tx_bytes, ce_marks,
        ingress_drops, loss_drops}}; all ports with any non-zero count when
        `ports` is None."""
        wanted = None if ports is None else sorted({int(p) for p in ports})
        table: Dict[int, dict] = {}
        for col, name, unit in PORT_COUNTERS:
            c = self.sw.counters[name]
            if wanted is None:
                data = await c.read()
            else:
                data = {}
                for p in wanted:
                    data.update(await c.read(p))
            for idx, (pk, by) in data.items():
                row = table.setdefault(idx, dict.fromkeys(COLUMNS, 0))
                if unit == "both":
                    row[f"{col}_packets"], row[f"{col}_bytes"] = pk, by
                else:
                    row[col] = pk
        if wanted is None:
            table = {p: r for p, r in table.items() if any(r.values())}
        else:
            table = {p: table.get(p, dict.fromkeys(COLUMNS, 0)) for p in wanted}
        return dict(sorted(table.items()))

    async def reset_port_counters(self, ports: Optional[Iterable[int]] = None) -> dict:
        idx = None if ports is None else [await self.check_port(p) for p in ports]
        for _, name, _ in PORT_COUNTERS:
            await self.sw.counters[name].reset(idx)
        return {"reset": "all ports" if idx is None else idx}

    async def read_register(self, name: str, index: Optional[int] = None) -> Dict[int, int]:
        """Through P4Runtime, or through the target when its P4Runtime server
        does not implement registers (bmv2: UNIMPLEMENTED -> Thrift)."""
        reg = self.sw.registers[name]
        try:
            return await reg.read(index)
        except WriteError as e:
            if e.codes() != {UNIMPLEMENTED}:
                raise
            try:
                return await asyncio.to_thread(self.target.read_register, reg.name, index)
            except TargetError as te:
                raise TargetError(f"{e} and {te}") from None

    async def write_register(self, name: str, index: int, value) -> None:
        reg = self.sw.registers[name]
        try:
            await reg.write(index, value)
        except WriteError as e:
            if e.codes() != {UNIMPLEMENTED}:
                raise
            n = codec.parse_int(value, reg.info.bitwidth, f"register {reg.name}[{index}]")
            try:
                await asyncio.to_thread(self.target.write_register, reg.name, index, n)
            except TargetError as te:
                raise TargetError(f"{e} and {te}") from None

    async def watch(self, interval: float = 1.0, count: Optional[int] = None,
                    ports: Optional[Iterable[int]] = None,
                    emit: Callable[[dict], None] = print):
        """Every `interval` s, emit {time, dt, rates: {p: {col: per second}},
        totals: {p: {col: count}}} until `count` samples (forever if None).
        While the switch is unreachable, emit {time, error} instead."""
        prev = await self.port_counters(ports)
        t_prev = time.monotonic()
        n = 0
        while count is None or n < count:
            await asyncio.sleep(interval)
            try:
                cur = await self.port_counters(ports)
            except SwitchUnreachable as e:
                # A restarting switch: say so and keep watching.
                emit({"time": time.time(), "error": str(e)})
                prev, n = None, n + 1
                continue
            now = time.monotonic()
            if prev is None:  # first sample after an outage: new baseline
                prev, t_prev = cur, now
                continue
            dt = max(now - t_prev, 1e-9)
            rates = {}
            for p, row in cur.items():
                before = prev.get(p, dict.fromkeys(COLUMNS, 0))
                rates[p] = {c: max(0, row[c] - before[c]) / dt for c in COLUMNS}
            emit({"time": time.time(), "dt": dt, "rates": rates, "totals": cur})
            prev, t_prev = cur, now
            n += 1
