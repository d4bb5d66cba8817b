"""The scenario plan: one typed, versioned, JSON-serialisable description
of a run, made by an experiment definition and run by an executor (the
namespace lab in real time, ``p4cc-sim`` in virtual time).

A plan has one or more *arms* (the runs an experiment compares); each arm
is self-contained:

- ``topology``: hosts, switches and links (rate, propagation delay), as
  :class:`~p4cc_topo.model.Topology` writes it;
- ``switches``: per switch what the controller applies — the pipeline, the
  routes (computed once, here, by :meth:`Topology.next_hops`), per port the
  ECN threshold K, the target's link model (line rate, egress delay, random
  loss, queue depth), and postcards towards the collector;
- ``agents``: per host what runs there — postcard collector, receivers and
  senders with their datapath, congestion control, parameters and workload;
  times are seconds from the arm's traffic start;
- ``measure``: which switch ports' counters are read, after the warm-up and
  at the end, and which queue the analysis looks at;
- ``events``: switch settings that change at a time during the run;
- ``duration_s``, ``warmup_s``.

Units are in the field names (``_bps``, ``_ns``, ``_pkts``, ``_s``) and
values are numbers: the one place that parses a user's "500us" is the
experiment's ``--set``. docs/plans.md documents the schema.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from .model import Topology, TopologyError, port_mac

SCHEMA = "p4cc.plan"
VERSION = 1

REPO = Path(__file__).resolve().parents[2]
#: The v1model pipeline every software target runs (p4c output, committed).
P4INFO = "p4src/build/cc_switch.p4info.bin"
DEVICE_CONFIG = "p4src/build/cc_switch.json"
#: The flow-size tables p4cc-host and the simulator have built in.
CDF_DIR = REPO / "hosts" / "traffic" / "cdf"
#: The UDP port the postcard collector listens on.
COLLECTOR_UDP_PORT = 9999

DATAPATHS = ("user", "kernel", "external")
#: What an external agent's command may name (agents.external_command fills them).
EXTERNAL_FIELDS = ("dst", "self", "start", "stop", "duration", "rate_mbps", "out", "size", "file")
#: Fields only a one-flow external sender (workload "single") has.
SINGLE_FLOW_FIELDS = ("size", "file")
#: "feed" is a collector that also returns each transport data packet's
#: postcard to its sender (postcard-fed oracle TIMELY).
ROLES = ("sender", "receiver", "collector", "feed")
COLLECTOR_ROLES = ("collector", "feed")
#: Kernel TCP congestion controls a kernel-datapath agent may ask for.
KERNEL_CCS = ("reno", "cubic", "dctcp", "bbr")


class PlanError(ValueError):
    """A plan that does not check; the message names the field."""


def _fail(where: str, what: str):
    raise PlanError(f"{where}: {what}")


def _num(v, where: str, lo: float | None = None, hi: float | None = None,
         integer: bool = False, positive: bool = False):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        _fail(where, f"{v!r} is not a number")
    if integer and int(v) != v:
        _fail(where, f"{v!r} is not a whole number")
    if positive and v <= 0:
        _fail(where, f"{v!r} must be greater than 0")
    if lo is not None and v < lo or hi is not None and v > hi:
        _fail(where, f"{v!r} is outside {lo}..{hi}")
    return int(v) if integer else v


# ------------------------------------------------------------------ switches

#: A port's link-model knobs and their ranges (the one place they are
#: checked: plans, the controller's targets and `p4cc ctl queue` all call
#: :func:`check_link_model`). rate_pps is bmv2's own unit; a rate of 0 means
#: unlimited.
LINK_MODEL = {
    "rate_bps": (0, 10**12, True),
    "rate_pps": (0, 10**9, True),
    "delay_us": (0, 10_000_000, True),
    "loss": (0.0, 1.0, False),
    "depth_pkts": (1, 1 << 20, True),
}


def check_link_model(settings: dict, where: str = "port") -> dict:
    """Range-checks link-model knobs (None values are dropped); returns them."""
    out = {}
    for k, v in settings.items():
        if k not in LINK_MODEL:
            _fail(where, f"unknown port setting {k!r} (known: {', '.join(LINK_MODEL)})")
        if v is None:
            continue
        lo, hi, integer = LINK_MODEL[k]
        out[k] = _num(v, f"{where}.{k}", lo, hi, integer=integer)
    return out


@dataclass(frozen=True)
class Red:
    """A RED marking profile (DCQCN's switch): no mark up to Kmin, a
    probability rising linearly to Pmax at Kmax, every packet above."""
    kmin_pkts: int
    kmax_pkts: int
    pmax: float

    def check(self, where: str) -> None:
        _num(self.kmin_pkts, f"{where}.kmin_pkts", 0, 10**7, integer=True)
        _num(self.kmax_pkts, f"{where}.kmax_pkts", self.kmin_pkts, 10**7, integer=True)
        _num(self.pmax, f"{where}.pmax", 0.0, 1.0)
        if self.pmax <= 0:
            _fail(f"{where}.pmax", "must be above 0")


@dataclass(frozen=True)
class PortConfig:
    """One switch port: the target's link model and the P4 per-port state."""
    port: int
    peer: str                        #: host or switch on the other end
    peer_port: int | None = None     #: the other switch's port
    rate_bps: int | None = None      #: line rate of frames sent here (None: unshaped)
    delay_us: int = 0                #: delay the switch adds to frames sent here (µs)
    loss: float = 0.0                #: probability a frame sent here is dropped
    depth_pkts: int | None = None    #: egress queue depth (None: the target's default)
    ecn_k_pkts: int | None = None    #: ECN marking threshold K (None: never marks)
    ecn_red: Red | None = None       #: RED marking instead of a step at K

    def check(self, where: str) -> None:
        _num(self.port, f"{where}.port", 0, 510, integer=True)
        check_link_model(self.link_model(), where)
        if self.ecn_k_pkts is not None:
            _num(self.ecn_k_pkts, f"{where}.ecn_k_pkts", 0, 10**7, integer=True)
        if self.ecn_red is not None:
            self.ecn_red.check(f"{where}.ecn_red")
            if self.ecn_k_pkts is not None:
                _fail(where, "marks by a step at K (ecn_k_pkts) and by RED (ecn_red): give one")

    def link_model(self) -> dict:
        """The target's knobs (line rate, delay, loss, depth) that are set."""
        d: dict[str, Any] = {"delay_us": self.delay_us, "loss": self.loss}
        if self.rate_bps is not None:
            d["rate_bps"] = self.rate_bps
        if self.depth_pkts is not None:
            d["depth_pkts"] = self.depth_pkts
        return d


@dataclass(frozen=True)
class Route:
    prefix: str       #: e.g. "10.0.0.2/32"
    port: int         #: egress port (an ECMP route: its group's first member's)
    dst_mac: str      #: next hop's MAC (the host's own on its switch)
    host: str = ""    #: the host the route leads to (for humans)
    group_id: int | None = None   #: an ECMP group of the switch instead of one next hop


#: Buckets per ECMP group (constants.p4 ECMP_BUCKETS) and groups per switch.
ECMP_BUCKETS = 64
ECMP_GROUPS = 256


@dataclass(frozen=True)
class NextHop:
    port: int
    dst_mac: str


@dataclass(frozen=True)
class EcmpGroup:
    """Equal-cost next hops: a flow's hash picks one of ECMP_BUCKETS
    buckets, and ``buckets[b]`` is the index of the member bucket b sends
    to (round robin over the members unless given)."""
    group_id: int
    members: tuple[NextHop, ...]
    buckets: tuple[int, ...] = ()

    def bucket_members(self) -> tuple[int, ...]:
        return self.buckets or tuple(b % len(self.members) for b in range(ECMP_BUCKETS))

    def check(self, where: str, ports) -> None:
        _num(self.group_id, f"{where}.group_id", 0, ECMP_GROUPS - 1, integer=True)
        if len(self.members) < 2:
            _fail(f"{where}.members", "a group needs at least two next hops")
        for m in self.members:
            if m.port not in ports:
                _fail(f"{where}.members", f"port {m.port} is not a port of the switch")
        if self.buckets and (len(self.buckets) != ECMP_BUCKETS
                             or any(not 0 <= b < len(self.members) for b in self.buckets)):
            _fail(f"{where}.buckets", f"{ECMP_BUCKETS} member indexes are expected")


@dataclass(frozen=True)
class Postcards:
    """Sampled queue reports of every packet to the collector host."""
    port: int                 #: egress port towards the collector
    collector_ip: str
    collector_mac: str        #: next hop towards the collector
    switch_ip: str            #: source address of this switch's postcards
    udp_port: int = COLLECTOR_UDP_PORT
    one_in_n: int = 1

    def check(self, where: str) -> None:
        _num(self.one_in_n, f"{where}.one_in_n", 1, 2**16 - 1, integer=True)
        _num(self.udp_port, f"{where}.udp_port", 1, 65535, integer=True)


@dataclass(frozen=True)
class SwitchConfig:
    """Everything the controller applies to one switch."""
    name: str
    device_id: int
    switch_id: int
    p4info: str = P4INFO
    device_config: str = DEVICE_CONFIG
    routes: tuple[Route, ...] = ()
    ports: dict[int, PortConfig] = field(default_factory=dict)
    postcards: Postcards | None = None
    #: "target": the target's link model drops; "p4": the program's port_loss table
    loss_in: str = "target"
    #: ECMP groups the routes name (group_id -> group)
    ecmp_groups: dict[int, EcmpGroup] = field(default_factory=dict)

    def check(self) -> None:
        where = f"switches.{self.name}"
        if self.loss_in not in ("target", "p4"):
            _fail(f"{where}.loss_in", f"{self.loss_in!r} is not 'target' or 'p4'")
        for n, p in self.ports.items():
            if n != p.port:
                _fail(f"{where}.ports.{n}", f"holds port {p.port}")
            p.check(f"{where}.ports.{n}")
        for i, r in enumerate(self.routes):
            if r.port not in self.ports:
                _fail(f"{where}.routes[{i}]", f"port {r.port} is not a port of {self.name}")
            if r.group_id is not None and r.group_id not in self.ecmp_groups:
                _fail(f"{where}.routes[{i}]", f"ECMP group {r.group_id} is not defined")
        for g, grp in self.ecmp_groups.items():
            if g != grp.group_id:
                _fail(f"{where}.ecmp_groups.{g}", f"holds group {grp.group_id}")
            grp.check(f"{where}.ecmp_groups.{g}", self.ports)
        if self.postcards is not None:
            self.postcards.check(f"{where}.postcards")

    def path(self, which: str) -> Path:
        """p4info/device_config as a path (relative ones from the repository)."""
        p = Path(getattr(self, which))
        return p if p.is_absolute() else REPO / p


# -------------------------------------------------------------------- agents

@dataclass(frozen=True)
class FlowWindow:
    """A long flow to ``dst`` that sends from ``start_s`` until ``stop_s``."""
    dst: str
    start_s: float
    stop_s: float


@dataclass(frozen=True)
class Sizes:
    """Flow sizes: fixed, Pareto with a mean (and an optional cap), or an
    empirical table ``cdf`` (a name of hosts/traffic/cdf/: websearch,
    fb_hadoop, alistorage; sampled by inverse transform with linear
    interpolation, docs/hosts.md)."""
    fixed_bytes: int | None = None
    pareto_shape: float = 1.2
    mean_bytes: float = 30000.0
    max_bytes: int | None = None
    cdf: str | None = None


@dataclass(frozen=True)
class Workload:
    """What a sender sends (p4cc-host's workloads, docs/hosts.md).

    kind ``long``: ``flows`` (one FlowWindow each); ``poisson``: open-loop
    arrivals at ``load`` of ``link_bps`` to ``dsts`` (each flow to one of
    them, uniformly) with ``sizes``, at most ``count`` flows, no new flow
    after ``duration_s``; ``pattern`` says how ``dsts`` was chosen
    ("all-to-all": every other host; "pairs": one partner); ``single``: one
    flow of ``bytes`` to ``dsts[0]``; ``incast``: ``rounds`` flows of
    ``bytes`` to ``dsts[0]``, ``interval_s`` apart; ``closed``:
    ``concurrency`` flows at all times; ``incast-mix``: incast events as a
    Poisson process over the group ``dsts`` (the agent's own host among
    them) adding ``load`` of the group's ``link_bps`` capacity, each a
    receiver and ``fan_in`` senders drawn from the group sending ``bytes``
    each, on the schedule every member draws from ``schedule_seed``; at
    most ``count`` events, none after ``duration_s``.
    """
    kind: str
    flows: tuple[FlowWindow, ...] = ()
    dsts: tuple[str, ...] = ()
    load: float | None = None
    link_bps: int | None = None
    sizes: Sizes = field(default_factory=Sizes)
    count: int | None = None
    duration_s: float | None = None
    bytes: int | None = None
    rounds: int | None = None
    interval_s: float | None = None
    concurrency: int | None = None
    think_s: float = 0.0
    start_s: float = 0.0
    pattern: str | None = None
    fan_in: int | None = None
    schedule_seed: int | None = None

    KINDS = ("long", "poisson", "single", "incast", "closed", "incast-mix")
    PATTERNS = ("all-to-all", "pairs")

    def check(self, where: str, hosts) -> None:
        if self.kind not in self.KINDS:
            _fail(f"{where}.kind", f"unknown workload {self.kind!r} ({', '.join(self.KINDS)})")
        dsts = [f.dst for f in self.flows] + list(self.dsts)
        for d in dsts:
            if d not in hosts:
                _fail(where, f"destination {d!r} is not a host")
        if self.kind == "long":
            if not self.flows:
                _fail(f"{where}.flows", "a long workload needs at least one flow")
            for i, f in enumerate(self.flows):
                _num(f.start_s, f"{where}.flows[{i}].start_s", 0)
                if f.stop_s <= f.start_s:
                    _fail(f"{where}.flows[{i}]", f"stop_s {f.stop_s} is not after start_s {f.start_s}")
        else:
            if not self.dsts:
                _fail(f"{where}.dsts", f"a {self.kind} workload needs a destination")
        if self.kind in ("poisson", "incast-mix"):
            _num(self.load, f"{where}.load", 0, 1, positive=True)
            _num(self.link_bps, f"{where}.link_bps", integer=True, positive=True)
        if self.pattern is not None and self.pattern not in self.PATTERNS:
            _fail(f"{where}.pattern", f"{self.pattern!r} is not one of {', '.join(self.PATTERNS)}")
        if self.kind in ("single", "incast", "incast-mix"):
            _num(self.bytes, f"{where}.bytes", integer=True, positive=True)
        if self.kind == "incast-mix":
            if len(set(self.dsts)) != len(self.dsts) or len(self.dsts) < 2:
                _fail(f"{where}.dsts", "an incast mix needs a group of two or more distinct hosts")
            _num(self.fan_in, f"{where}.fan_in", 1, len(self.dsts) - 1, integer=True)
            _num(self.schedule_seed, f"{where}.schedule_seed", 0, 2**64 - 1, integer=True)
        if self.kind == "closed":
            _num(self.concurrency, f"{where}.concurrency", integer=True, positive=True)
        if self.sizes.cdf is not None:
            if self.sizes.fixed_bytes is not None:
                _fail(f"{where}.sizes", "give fixed_bytes or cdf, not both")
            if not isinstance(self.sizes.cdf, str) or not self.sizes.cdf:
                _fail(f"{where}.sizes.cdf", "a flow-size table's name is expected")
            if not ("/" in self.sizes.cdf or self.sizes.cdf.endswith(".txt")
                    or (CDF_DIR / f"{self.sizes.cdf}.txt").is_file()):
                known = sorted(p.stem for p in CDF_DIR.glob("*.txt"))
                _fail(f"{where}.sizes.cdf", f"unknown flow-size table {self.sizes.cdf!r} "
                      f"(built in: {', '.join(known)}; or a file path)")
        elif self.sizes.fixed_bytes is not None:
            _num(self.sizes.fixed_bytes, f"{where}.sizes.fixed_bytes", integer=True, positive=True)
        elif self.kind in ("poisson", "closed"):
            _num(self.sizes.pareto_shape, f"{where}.sizes.pareto_shape", 1.0 + 1e-9)
            _num(self.sizes.mean_bytes, f"{where}.sizes.mean_bytes", positive=True)

    def end_s(self) -> float | None:
        """When the last flow stops sending, where the workload fixes it
        (long flows); open-ended workloads end with the arm."""
        if self.kind == "long":
            return max(f.stop_s for f in self.flows)
        return None


@dataclass(frozen=True)
class Agent:
    """One program on a host: a postcard collector (role "feed": one that
    also returns data packets' postcards to their senders), a receiver or
    a sender."""
    host: str
    role: str
    #: "user": p4cc transport over UDP; "kernel": TCP sockets; "external":
    #: ``command``, a program p4cc only starts and stops (real time only)
    datapath: str = "user"
    cc: str | None = None             #: congestion control (senders; kernel receivers too)
    cc_params: dict = field(default_factory=dict)
    ecn: bool = True                  #: send ECT (user) / negotiate ECN (kernel)
    workload: Workload | None = None
    flow_id_base: int = 1
    seed: int = 1
    line_rate_bps: int | None = None  #: the bottleneck rate the algorithm is told
    init_cwnd_pkts: int | None = None
    out: str = ""                     #: folder in the arm's results (default: the host)
    rtt_every: int = 1                #: senders log one RTT sample in this many (rtt.csv)
    bin_ms: float = 10.0              #: senders' throughput bins (tput.csv), ms
    #: user-space receivers: DCQCN's notification point sends at most one
    #: CNP per flow per this many µs (0: the paper's N = 50 µs)
    cnp_interval_us: float = 0.0
    #: user-space receivers: acknowledge every N-th in-order packet (loss,
    #: CE changes and a flow's end at once) — 2 is Linux's delayed-ACK
    #: receiver (RFC 1122 §4.2.3.2) — and hold a delayed ACK at most this
    #: many µs (0: p4cc's 500 µs; Linux's floor is 40 ms, TCP_DELACK_MIN)
    ack_every: int = 1
    delayed_ack_us: float = 0.0
    #: user-space senders: the host's link rate, at which the sender stack
    #: arbitrates its flows as an RDMA NIC does — one packet of each in
    #: turn, never more than the link carries — where without it every
    #: flow sends when its own window and pacer allow and the host's
    #: transmit queue drops what overflows (docs/transport.md)
    nic_rate_bps: int | None = None
    #: an external agent's command line (argv); ``{dst}``, ``{self}`` (IP
    #: addresses), ``{start}``, ``{stop}``, ``{duration}`` (s), ``{rate_mbps}``
    #: and ``{out}`` (its folder, also its working directory) are filled in,
    #: and for a one-flow sender ``{size}`` (bytes) and ``{file}`` (a file of
    #: that many bytes)
    command: tuple[str, ...] = ()

    @property
    def folder(self) -> str:
        return self.out or self.host

    @property
    def one_flow(self) -> bool:
        """An external sender of one flow of a size (workload 'single'),
        timed from its start to its exit."""
        return (self.datapath == "external" and self.role == "sender"
                and self.workload is not None and self.workload.kind == "single")

    def _check_external(self, where: str) -> None:
        import string
        if self.role not in ("sender", "receiver"):
            _fail(f"{where}.role", "an external agent is a sender or a receiver")
        if not self.command or not all(isinstance(c, str) and c for c in self.command):
            _fail(f"{where}.command", "an external agent needs a command line (argv)")
        for c in self.command:
            try:
                names = [f for _, f, _, _ in string.Formatter().parse(c) if f is not None]
            except ValueError as e:
                _fail(f"{where}.command", f"{c!r}: {e}")
            bad = [n for n in names if n not in EXTERNAL_FIELDS]
            if bad:
                _fail(f"{where}.command", f"{c!r} names {{{bad[0]}}} (known: "
                      + ", ".join("{" + f + "}" for f in EXTERNAL_FIELDS) + ")")
            if not self.one_flow:
                own = [n for n in names if n in SINGLE_FLOW_FIELDS]
                if own:
                    _fail(f"{where}.command", f"{c!r} names {{{own[0]}}}, which only a one-flow "
                          "sender (workload 'single') has")
        if self.role != "sender":
            return
        w = self.workload
        if self.one_flow:
            _num(w.start_s, f"{where}.workload.start_s", 0)
            _num(w.duration_s, f"{where}.workload.duration_s", positive=True)
            return
        if w is None or w.kind != "long" or len(w.flows) != 1:
            _fail(f"{where}.workload", "an external sender runs one long flow window "
                  "(workload 'long' with one flow: p4cc starts it then and stops it after) or "
                  "one flow of a size (workload 'single' with start_s and duration_s: p4cc "
                  "starts it then, times it to its exit and stops it after duration_s)")

    def check(self, where: str, hosts) -> None:
        if self.host not in hosts:
            _fail(f"{where}.host", f"{self.host!r} is not a host of the topology")
        if self.role not in ROLES:
            _fail(f"{where}.role", f"{self.role!r} is not one of {', '.join(ROLES)}")
        if self.datapath not in DATAPATHS:
            _fail(f"{where}.datapath", f"{self.datapath!r} is not one of {', '.join(DATAPATHS)}")
        if self.role == "sender":
            if not self.cc and self.datapath != "external":
                _fail(f"{where}.cc", "a sender needs a congestion control")
            if self.workload is None:
                _fail(f"{where}.workload", "a sender needs a workload")
            self.workload.check(f"{where}.workload", hosts)
            if self.workload.kind == "incast-mix" and self.host not in self.workload.dsts:
                _fail(f"{where}.workload.dsts", f"the sender's host {self.host!r} is not in its "
                      "incast group")
        _num(self.bin_ms, f"{where}.bin_ms", 0.001, 60_000)
        _num(self.cnp_interval_us, f"{where}.cnp_interval_us", 0, 1e9)
        if self.cnp_interval_us and (self.role != "receiver" or self.datapath != "user"):
            _fail(f"{where}.cnp_interval_us", "only a user-space receiver sends CNPs")
        if not isinstance(self.ack_every, int) or isinstance(self.ack_every, bool) \
                or not 1 <= self.ack_every <= 64:
            _fail(f"{where}.ack_every", f"{self.ack_every!r} is not a whole number in 1..64")
        _num(self.delayed_ack_us, f"{where}.delayed_ack_us", 0, 1e7)
        for name, default in (("ack_every", 1), ("delayed_ack_us", 0.0)):
            if getattr(self, name) != default and (self.role != "receiver"
                                                    or self.datapath != "user"):
                _fail(f"{where}.{name}", "only a user-space receiver's ACK policy is p4cc's to "
                      "set (kernel TCP's is the kernel's)")
        if self.nic_rate_bps is not None:
            _num(self.nic_rate_bps, f"{where}.nic_rate_bps", 1e3, 1e13, integer=True)
            if self.role != "sender" or self.datapath != "user":
                _fail(f"{where}.nic_rate_bps", "only a user-space sender's flows are p4cc's to "
                      "arbitrate")
        if self.datapath == "external":
            self._check_external(where)
        elif self.command:
            _fail(f"{where}.command", "only an external agent (datapath 'external') has a command")
        if self.datapath == "kernel" and self.cc and self.cc not in KERNEL_CCS:
            _fail(f"{where}.cc", f"kernel TCP has no {self.cc!r} here (kernel: "
                  f"{', '.join(KERNEL_CCS)}; use datapath 'user' for p4cc's algorithms)")
        for k, v in self.cc_params.items():
            if not isinstance(k, str) or isinstance(v, (dict, list)):
                _fail(f"{where}.cc_params", f"{k!r}: parameters are names with scalar values")


# ------------------------------------------------------------ measurements

@dataclass(frozen=True)
class PortRef:
    switch: str
    port: int

    def key(self) -> str:
        return f"{self.switch}:{self.port}"


@dataclass(frozen=True)
class Measure:
    """Counters of ``ports`` are read after the warm-up and at the end, and
    at each instant of ``reads_at_s`` (seconds from the traffic start:
    the analysis splits the run there, e.g. before and after a burst);
    ``queue`` is the port whose postcards the analysis plots (the
    bottleneck), with the switch id the postcards carry."""
    ports: tuple[PortRef, ...] = ()
    queue: PortRef | None = None
    queue_switch_id: int | None = None
    reads_at_s: tuple[float, ...] = ()


@dataclass(frozen=True)
class Event:
    """A switch setting that changes ``at_s`` seconds into the traffic:
    ``set`` holds PortConfig fields (ecn_k_pkts, loss, rate_bps,
    depth_pkts, delay_us)."""
    at_s: float
    switch: str
    port: int
    set: dict = field(default_factory=dict)

    SETTABLE = ("ecn_k_pkts", "loss", "rate_bps", "depth_pkts", "delay_us")


# ----------------------------------------------------------------- the plan

@dataclass(frozen=True)
class ArmPlan:
    name: str
    label: str
    topology: dict                    #: Topology.to_dict(numeric=True)
    switches: dict[str, SwitchConfig]
    agents: tuple[Agent, ...]
    duration_s: float
    warmup_s: float = 0.0
    measure: Measure = field(default_factory=Measure)
    events: tuple[Event, ...] = ()
    #: facts about the arm the analysis uses (protocol, N, load...)
    settings: dict = field(default_factory=dict)

    def topo(self) -> Topology:
        return Topology.from_dict(self.topology, source=f"plan arm {self.name}")

    def kernel_ccs(self) -> set[str]:
        """Kernel congestion controls the arm's agents set on their sockets."""
        return {a.cc for a in self.agents if a.datapath == "kernel" and a.cc}

    def senders(self) -> list[Agent]:
        return [a for a in self.agents if a.role == "sender"]

    def external(self) -> list[Agent]:
        """Agents that are programs of the user's (datapath 'external')."""
        return [a for a in self.agents if a.datapath == "external"]

    def collector(self) -> Agent | None:
        return next((a for a in self.agents if a.role in COLLECTOR_ROLES), None)

    def end_s(self) -> float:
        """When the traffic is over: the duration, or later if a workload says."""
        ends = [a.workload.end_s() for a in self.senders() if a.workload]
        return max([self.duration_s] + [e for e in ends if e is not None])

    def check(self) -> None:
        where = f"arms.{self.name}"
        try:
            topo = self.topo()
        except TopologyError as e:
            raise PlanError(f"{where}.topology: {e}") from None
        _num(self.duration_s, f"{where}.duration_s", positive=True)
        _num(self.warmup_s, f"{where}.warmup_s", 0)
        if self.warmup_s >= self.duration_s:
            _fail(f"{where}.warmup_s", f"{self.warmup_s} is not shorter than the duration "
                  f"{self.duration_s}")
        if set(self.switches) != set(topo.switches):
            _fail(f"{where}.switches", f"configures {sorted(self.switches)} but the topology "
                  f"has {sorted(topo.switches)}")
        for sw in self.switches.values():
            sw.check()
        for i, a in enumerate(self.agents):
            a.check(f"{where}.agents[{i}]", topo.hosts)
        # A one-flow external sender's folder holds its exit record and
        # flows.csv: two sharing one would lose a flow.
        folders = Counter(a.folder for a in self.agents)
        for i, a in enumerate(self.agents):
            if a.one_flow and folders[a.folder] > 1:
                _fail(f"{where}.agents[{i}].out", f"folder {a.folder!r} is another agent's too: "
                      "give each one-flow external sender its own")
        for r in self.measure.ports + ((self.measure.queue,) if self.measure.queue else ()):
            if r.switch not in self.switches or r.port not in self.switches[r.switch].ports:
                _fail(f"{where}.measure", f"{r.key()} is not a switch port")
        for i, e in enumerate(self.events):
            _num(e.at_s, f"{where}.events[{i}].at_s", 0, self.end_s())
            if e.switch not in self.switches or e.port not in self.switches[e.switch].ports:
                _fail(f"{where}.events[{i}]", f"{e.switch}:{e.port} is not a switch port")
            bad = set(e.set) - set(Event.SETTABLE)
            if bad or not e.set:
                _fail(f"{where}.events[{i}].set", f"settable: {', '.join(Event.SETTABLE)}")


@dataclass(frozen=True)
class Plan:
    experiment: str
    title: str
    source: str
    description: str
    params: dict
    seed: int
    arms: tuple[ArmPlan, ...]
    scale: str = "default"
    #: what the experiment left out and why (arms it could not plan here)
    notes: tuple[str, ...] = ()

    def arm(self, name: str) -> ArmPlan:
        for a in self.arms:
            if a.name == name:
                return a
        raise PlanError(f"no arm {name!r} in the plan (arms: {', '.join(a.name for a in self.arms)})")

    def check(self) -> "Plan":
        if not self.arms:
            raise PlanError("arms: a plan needs at least one arm")
        names = [a.name for a in self.arms]
        if len(set(names)) != len(names):
            raise PlanError(f"arms: duplicate names in {names}")
        for a in self.arms:
            a.check()
        return self

    # -- JSON ---------------------------------------------------------------
    def to_json(self) -> dict:
        return {"schema": SCHEMA, "version": VERSION, **_plain(self)}

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1, sort_keys=False) + "\n"

    def write(self, path: Path) -> Path:
        path = Path(path)
        path.write_text(self.dumps())
        return path

    @classmethod
    def from_json(cls, data: Any, source: str = "plan") -> "Plan":
        if not isinstance(data, dict):
            raise PlanError(f"{source}: a plan is a JSON object")
        if data.get("schema") != SCHEMA:
            raise PlanError(f"{source}: not a p4cc plan (schema {data.get('schema')!r}, "
                            f"expected {SCHEMA!r})")
        if data.get("version") != VERSION:
            raise PlanError(f"{source}: plan version {data.get('version')!r}; this p4cc reads "
                            f"version {VERSION}")
        body = {k: v for k, v in data.items() if k not in ("schema", "version")}
        return _build(cls, body, "plan").check()

    @classmethod
    def load(cls, path) -> "Plan":
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except OSError as e:
            raise PlanError(f"cannot read {path}: {e.strerror}") from None
        except ValueError as e:
            raise PlanError(f"{path}: not JSON: {e}") from None
        return cls.from_json(data, str(path))


def _plain(obj):
    """Dataclasses → dicts with JSON keys (int dict keys become strings)."""
    if is_dataclass(obj):
        return {f.name: _plain(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    return obj


# Which field holds which nested type, for reading a plan back.
_NESTED: dict[type, dict[str, Any]] = {
    Plan: {"arms": ("tuple", ArmPlan), "notes": ("tuple", str)},
    ArmPlan: {"switches": ("dict_str", SwitchConfig), "agents": ("tuple", Agent),
              "measure": ("one", Measure), "events": ("tuple", Event)},
    SwitchConfig: {"routes": ("tuple", Route), "ports": ("dict_int", PortConfig),
                   "postcards": ("one", Postcards), "ecmp_groups": ("dict_int", EcmpGroup)},
    EcmpGroup: {"members": ("tuple", NextHop), "buckets": ("tuple", float)},
    PortConfig: {"ecn_red": ("one", Red)},
    Agent: {"workload": ("one", Workload), "command": ("tuple", str)},
    Workload: {"flows": ("tuple", FlowWindow), "sizes": ("one", Sizes), "dsts": ("tuple", str)},
    Measure: {"ports": ("tuple", PortRef), "queue": ("one", PortRef),
              "reads_at_s": ("tuple", float)},
}


def _build(cls, data, where: str):
    if not isinstance(data, dict):
        _fail(where, f"expected an object for {cls.__name__}")
    known = {f.name: f for f in fields(cls)}
    unknown = set(data) - set(known)
    if unknown:
        _fail(where, f"unknown field(s) {', '.join(sorted(unknown))} "
              f"(known: {', '.join(known)})")
    kw = {}
    nested = _NESTED.get(cls, {})
    for name, raw in data.items():
        spec = nested.get(name)
        sub = f"{where}.{name}"
        if spec is None or raw is None:
            kw[name] = raw
            continue
        how, typ = spec
        if how == "one":
            kw[name] = _build(typ, raw, sub)
        elif how == "tuple":
            if not isinstance(raw, list):
                _fail(sub, "expected a list")
            kw[name] = tuple(v if typ in (str, float) else _build(typ, v, f"{sub}[{i}]")
                             for i, v in enumerate(raw))
        elif how in ("dict_str", "dict_int"):
            if not isinstance(raw, dict):
                _fail(sub, "expected an object")
            out = {}
            for k, v in raw.items():
                key = k
                if how == "dict_int":
                    try:
                        key = int(k)
                    except ValueError:
                        _fail(f"{sub}.{k}", "a port number is expected as the key")
                out[key] = _build(typ, v, f"{sub}.{k}")
            kw[name] = out
    missing = [f.name for f in fields(cls) if f.name not in kw
               and f.default is MISSING and f.default_factory is MISSING]
    if missing:
        _fail(where, f"missing field(s) {', '.join(missing)}")
    try:
        return cls(**kw)
    except TypeError as e:
        _fail(where, str(e))


# ----------------------------------------------------- from a topology

def switch_ip(switch_id: int) -> str:
    """The source address of a switch's own packets (postcards):
    169.254.128.0 + id, outside every host's address and the gateway's."""
    import ipaddress
    return str(ipaddress.IPv4Address("169.254.128.0") + switch_id)


def _routes(topo: Topology, switch: str, ecmp: bool) -> tuple[tuple[Route, ...], dict]:
    """A /32 to every host: its one next hop, or with ``ecmp`` an ECMP group
    of every equal-cost next hop (one group per distinct set of them)."""
    if not ecmp:
        return tuple(Route(f"{topo.hosts[h].ip}/32", port, mac, h)
                     for h, (port, mac) in sorted(topo.next_hops(switch).items())), {}
    routes, groups, by_members = [], {}, {}
    for h, hops in sorted(topo.next_hop_groups(switch).items()):
        port, mac = hops[0]
        gid = None
        if len(hops) > 1:
            key = tuple(hops)
            if key not in by_members:
                gid = len(groups)
                if gid >= ECMP_GROUPS:
                    raise PlanError(f"switch {switch}: more than {ECMP_GROUPS} ECMP groups")
                groups[gid] = EcmpGroup(gid, tuple(NextHop(p, m) for p, m in hops))
                by_members[key] = gid
            gid = by_members[key]
        routes.append(Route(f"{topo.hosts[h].ip}/32", port, mac, h, gid))
    return tuple(routes), groups


def switch_configs(topo: Topology, postcard_one_in_n: int = 1,
                   loss_in: str = "target", ecmp: bool = True) -> dict[str, SwitchConfig]:
    """Per switch what the controller applies, from the topology alone.

    Delay: a switch can only delay what it sends. A switch-switch link gets
    its one-way delay on both ends' egress; a host link is folded onto the
    switch's egress towards the host as *twice* the one-way delay, so every
    round trip crosses exactly the sum of its links' delays both ways (the
    RTT is exact; one direction carries the whole host-link delay).
    """
    out = {}
    for name, sw in topo.switches.items():
        ports = {}
        for port, l in topo.switch_links(name):
            other = l.other(name)
            host_link = other.node in topo.hosts
            ports[port] = PortConfig(
                port=port, peer=other.node, peer_port=other.port, rate_bps=l.rate_bps,
                delay_us=(2 if host_link else 1) * l.delay_us,
                loss=l.loss.get(name, 0.0), depth_pkts=l.buffer_pkts.get(name),
                ecn_k_pkts=l.ecn_k_pkts.get(name),
                ecn_red=Red(*l.ecn_red[name]) if name in l.ecn_red else None)
        routes, groups = _routes(topo, name, ecmp)
        postcards = None
        if topo.collector:
            port, mac = topo.next_hops(name)[topo.collector]
            postcards = Postcards(port=port, collector_ip=topo.hosts[topo.collector].ip,
                                  collector_mac=mac, switch_ip=switch_ip(sw.id),
                                  one_in_n=postcard_one_in_n)
        out[name] = SwitchConfig(name=name, device_id=sw.id, switch_id=sw.id, routes=routes,
                                 ports=ports, postcards=postcards, loss_in=loss_in,
                                 ecmp_groups=groups)
    return out


def gateway_mac(topo: Topology, host: str) -> str:
    """The MAC a host addresses its frames to: its switch port's."""
    att = topo.attachment(host)
    return port_mac(topo.switches[att.node].id, att.port)


def port_towards(topo: Topology, host: str) -> PortRef:
    """The switch port that sends to ``host`` (its queue is ``host``'s)."""
    att = topo.attachment(host)
    return PortRef(att.node, att.port)


def port_between(topo: Topology, a: str, b: str) -> PortRef:
    """The port of switch ``a`` on its link to switch ``b``."""
    for port, l in topo.switch_links(a):
        if l.other(a).node == b:
            return PortRef(a, port)
    raise PlanError(f"no link between {a} and {b}")


def collector_agent(topo: Topology, feed: bool = False) -> list[Agent]:
    """The topology's postcard collector; with ``feed`` it also returns each
    transport data packet's postcard to the packet's sender."""
    return [Agent(topo.collector, "feed" if feed else "collector")] if topo.collector else []


def plain(obj) -> Any:
    """A dataclass of this module as JSON-able data."""
    return _plain(obj)


__all__ = ["SCHEMA", "VERSION", "PlanError", "Plan", "ArmPlan", "SwitchConfig", "PortConfig", "Red",
           "Route", "Postcards", "Agent", "Workload", "FlowWindow", "Sizes", "Measure",
           "PortRef", "Event", "switch_configs", "check_link_model", "LINK_MODEL", "switch_ip", "port_towards", "port_between",
           "collector_agent", "gateway_mac", "plain", "asdict", "COLLECTOR_UDP_PORT"]
