"""Steps experiment definitions share to build their plans: an arm from a
topology and its agents, receivers, long-flow senders. Composition, not
inheritance: a definition calls these and stays a declaration."""
from __future__ import annotations

import os
import shlex
from dataclasses import replace

from p4cc_topo import Topology
from .arrivals import poisson_starts
from .params import Param, str_list
from p4cc_topo.plan import (Agent, ArmPlan, FlowWindow, Measure, PortRef, Workload,
                            collector_agent, switch_configs)

KERNEL_CCS = {"reno", "cubic", "bbr"}
#: Postcards and RTT samples: every packet up to this rate, thinned above.
RATE_PER_SAMPLE_BPS = 100e6
#: ... and thinned further past this many seconds of such traffic: a
#: 500 s-phase run at 100 Mb/s logs a postcard per packet per hop otherwise
#: (about 16 GB of queue.csv per arm), while its queue statistics need far
#: fewer samples.
SAMPLE_BUDGET_S = 120.0

LABELS = {"timely": "TIMELY", "oracle-timely": "oracle TIMELY",
          "oracle-timely-seed": "oracle TIMELY (seed law)", "vegas": "Vegas",
          "dctcp": "DCTCP", "cubic": "Cubic", "reno": "Reno", "pcc": "PCC Allegro",
          "pcc-allegro": "PCC Allegro", "pcc-vivace": "PCC Vivace",
          "pcc-vivace-loss": "PCC Vivace-Loss", "hpcc": "HPCC",
          "powertcp": "PowerTCP", "theta-powertcp": "θ-PowerTCP", "swift": "Swift",
          "dcqcn": "DCQCN", "bbr": "BBRv1", "bbr3": "BBRv3"}


def cc_label(cc: str) -> str:
    return LABELS.get(cc, cc)


def sample_every(rate_bps: float, duration_s: float = 0.0) -> int:
    """One sample in N: every packet up to 100 Mb/s, 1 in ~rate/100 Mb/s
    above (the collector's pace, and what analysis reads at paper scale),
    and as many times fewer again as the run is longer than
    SAMPLE_BUDGET_S seconds (0: no duration limit)."""
    by_rate = rate_bps / RATE_PER_SAMPLE_BPS
    by_volume = by_rate * duration_s / SAMPLE_BUDGET_S
    return max(1, round(by_rate), round(by_volume))


def postcard_sampling(rate_bps: float, asked: int = 0, duration_s: float = 0.0) -> int:
    """Postcards per packet (``sample_every``) unless ``asked``. The switch
    samples by counting packets: an odd N, so a strict alternation of data
    and ACKs (as in virtual time) cannot alias onto the ACKs only."""
    n = asked or sample_every(rate_bps, duration_s)
    return n + 1 if n > 1 and n % 2 == 0 else n


def arm(name: str, label: str, topo: Topology, agents: list[Agent], duration_s: float,
        warmup_s: float, queue: PortRef | None = None, settings: dict | None = None,
        postcard_one_in_n: int | None = None, events=(), feed: bool = False,
        more_ports: tuple[PortRef, ...] = ()) -> ArmPlan:
    """An arm on ``topo``: the switches configured from it, a postcard
    collector (when the topology has one) started first — with ``feed`` one
    that returns data packets' postcards to their senders — and the
    counters and postcards of ``queue`` (the bottleneck) measured, with the
    counters of ``more_ports`` (other bottlenecks) beside them. Postcards
    and RTT samples are thinned by the bottleneck's rate (the fastest
    link's without one) and by the run's length (``sample_every``) unless
    asked: the traffic is what the bottleneck carries. A ``feed`` arm's
    postcards are a sender's signal: every packet gets one."""
    rate = max((l.rate_bps or 0 for l in topo.links), default=0)
    if queue:
        link = next(l for p, l in topo.switch_links(queue.switch) if p == queue.port)
        rate = link.rate_bps or rate
    # A feed arm's postcards are its senders' signal: thinning them would be
    # the sampled-signal arm under another name.
    configs = switch_configs(topo, postcard_one_in_n or (1 if feed else postcard_sampling(
        rate, duration_s=duration_s)))
    sid = topo.switches[queue.switch].id if queue else None
    ports = ((queue,) if queue else ()) + tuple(p for p in more_ports if p != queue)
    # One RTT sample per ~100 Mb/s and SAMPLE_BUDGET_S: rtt.csv stays
    # readable at paper scale (a row per ACK at 10 Gb/s is a million a second).
    every = sample_every(rate, duration_s)
    agents = [replace(a, rtt_every=every) if a.role == "sender" and a.rtt_every == 1 else a
              for a in agents]
    return ArmPlan(name=name, label=label, topology=topo.to_dict(numeric=True),
                   switches=configs, agents=tuple(collector_agent(topo, feed) + list(agents)),
                   duration_s=float(duration_s), warmup_s=float(warmup_s),
                   measure=Measure(ports=ports, queue=queue, queue_switch_id=sid),
                   events=tuple(events), settings=dict(settings or {}))


#: An arm whose agents are the user's own programs: ``--set sender_cmd=…``
#: and ``--set receiver_cmd=…`` (agents.external_command's fields).
EXTERNAL = "external"
#: Reference implementations, run as external arms where the environment
#: names their command lines (docs/experiments.md, "Reference arms"):
#: arm name -> (sender variable, receiver variables, first set wins, label).
#: The authors' two code bases speak different UDT dialects (master's
#: pccserver does not acknowledge the NSDI-2018 branch's sender, nor its
#: appserver master's): a reference's own receiver variable wins over the
#: shared one, and both Vivaces (one binary) share Vivace's.
REFERENCES = {
    "ref-pcc-allegro": ("P4CC_REF_PCC_ALLEGRO", ("P4CC_REF_PCC_ALLEGRO_RECEIVER", "P4CC_REF_PCC_RECEIVER"),
                        "PCC Allegro (authors' code)"),
    "ref-pcc-vivace": ("P4CC_REF_PCC_VIVACE", ("P4CC_REF_PCC_VIVACE_RECEIVER", "P4CC_REF_PCC_RECEIVER"),
                       "PCC Vivace (authors' code)"),
    "ref-pcc-vivace-loss": ("P4CC_REF_PCC_VIVACE_LOSS",
                            ("P4CC_REF_PCC_VIVACE_LOSS_RECEIVER", "P4CC_REF_PCC_VIVACE_RECEIVER",
                             "P4CC_REF_PCC_RECEIVER"),
                            "PCC Vivace-Loss (authors' code)"),
}


#: The parameters of experiments that run external arms.
EXTERNAL_PARAMS = (
    Param("reference", "", "the authors' code beside p4cc's: allegro, vivace, vivace-loss or all (real time; "
          "P4CC_REF_* name the programs, docs/experiments.md \"Reference arms\")", str_list),
    Param("sender_cmd", "", "protocol 'external': the sender program's command line "
          "({dst}, {duration}, {rate_mbps}, {out}, … filled in)", str),
    Param("receiver_cmd", "", "protocol 'external': the receiver program's command line", str),
)

#: Parameters of p4cc's own PCC senders (not its Cubic's), for every PCC
#: experiment.
PCC_PARAMS = (
    Param("cc_params", "", "parameters of p4cc's PCC senders, KEY=VALUE,... "
          "(p4cc-host --list-cc; e.g. moving=nsdi2018 for pcc-vivace)", str_list),
)


def with_references(protocols, reference) -> list[str]:
    """``protocols`` and, after them, the reference arms ``reference``
    names ("allegro", "vivace", "all"; a full arm name too)."""
    out = list(protocols)
    for r in reference:
        names = list(REFERENCES) if r == "all" else [r if r in REFERENCES else f"ref-pcc-{r}"]
        for n in names:
            if n not in REFERENCES:
                raise ValueError(f"reference: no reference implementation {r!r} (known: all, "
                                 + ", ".join(k.removeprefix("ref-pcc-") for k in REFERENCES) + ")")
            if n not in out:
                out.append(n)
    return out


#: p4cc's PCC algorithms an experiment's PCC arms may name (user-space transport).
PCC_VARIANTS = ("pcc", "pcc-allegro", "pcc-vivace", "pcc-vivace-loss")

#: The p4cc arm a reference arm is held against.
REFERENCE_OF = {"ref-pcc-allegro": "pcc", "ref-pcc-vivace": "pcc-vivace",
                "ref-pcc-vivace-loss": "pcc-vivace-loss"}


def reference_pairs(summary: dict, same) -> list[tuple[str, dict, str, dict]]:
    """(reference arm, its row, p4cc arm, its row) for each reference arm
    of ``summary`` (rows with a ``cc``) and the arm of the p4cc algorithm it
    is held against at the same point (``same(row_a, row_b)``)."""
    out = []
    rows = {n: r for n, r in summary.items() if isinstance(r, dict) and "cc" in r}
    for rn, rr in rows.items():
        mine = REFERENCE_OF.get(rr["cc"])
        for n, r in rows.items():
            if mine and (r["cc"] == mine or cc_label(r["cc"]) == cc_label(mine)) and same(rr, r):
                out.append((rn, rr, n, r))
    return out


class SkipArm(Exception):
    """An arm that cannot be planned here (the reason, one line)."""


def is_external(cc: str) -> bool:
    return cc == EXTERNAL or cc in REFERENCES


def external_commands(cc: str, p: dict, one_flow: bool = False
                      ) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """(sender argv, receiver argv, label) of an external arm; SkipArm
    when what it needs is not given. ``one_flow``: the arm's senders each
    send one flow of a size and exit, so a reference is the program its
    ``_FLOW`` variables name (a file sender, beside the long-flow one)."""
    if cc == EXTERNAL:
        snd, rcv = p.get("sender_cmd") or "", p.get("receiver_cmd") or ""
        if not snd:
            raise ValueError("protocol 'external' needs --set sender_cmd='PROGRAM ARGS' "
                             "(and receiver_cmd= for a receiver of its own)")
        return tuple(shlex.split(snd)), tuple(shlex.split(rcv)), f"external: {snd}"
    s_var, r_vars, label = REFERENCES[cc]
    if one_flow:
        s_var, r_vars = f"{s_var}_FLOW", (f"{s_var}_FLOW_RECEIVER",)
    snd = os.environ.get(s_var, "")
    rcv = next((os.environ[v] for v in r_vars if os.environ.get(v)), "")
    if not snd or not rcv:
        raise SkipArm(f"{cc}: skipped, {s_var} and one of {', '.join(r_vars)} name the authors' "
                      "sender and receiver command lines (docs/experiments.md, "
                      "\"Reference arms\")")
    return tuple(shlex.split(snd)), tuple(shlex.split(rcv)), label


def external_flows(flows, sender_cmd, receiver_cmd,
                   line_rate_bps: int | None = None) -> list[Agent]:
    """``flows``: [(sender, receiver, start_s, stop_s)]. The receiver
    program on each receiver host (none if ``receiver_cmd`` is empty),
    then one sender program per flow, run over its window; flow ids 1, 2,
    … in order."""
    agents = []
    if receiver_cmd:
        for dst in dict.fromkeys(f[1] for f in flows):
            agents.append(Agent(dst, "receiver", datapath="external", command=tuple(receiver_cmd)))
    for i, (h, dst, start, stop) in enumerate(flows):
        agents.append(Agent(h, "sender", datapath="external", command=tuple(sender_cmd),
                            workload=Workload("long", flows=(FlowWindow(dst, start, stop),)),
                            flow_id_base=i + 1, line_rate_bps=line_rate_bps))
    return agents


def external_runs(senders: list[Agent], sender_cmd, receiver_cmd, run_s: float) -> list[Agent]:
    """The flows p4cc's Poisson senders ``senders`` would open (fixed
    sizes), each one run of the external sender program at the same
    arrival, with the same flow id, given until ``run_s`` to finish; the
    receiver program on each destination. Each run has its own folder
    (and log)."""
    dsts = dict.fromkeys(d for a in senders for d in a.workload.dsts)
    agents = [Agent(d, "receiver", datapath="external", command=tuple(receiver_cmd))
              for d in dsts] if receiver_cmd else []
    for a in senders:
        w = a.workload
        if w.kind != "poisson" or len(w.dsts) != 1 or w.sizes.fixed_bytes is None:
            raise ValueError("an external program runs once per flow only for Poisson "
                             "arrivals of one size to one destination")
        starts = poisson_starts(a.seed, w.load, w.link_bps, w.sizes.fixed_bytes, w.count,
                                w.duration_s)
        for k, t in enumerate(x for x in starts if x < run_s):
            agents.append(Agent(a.host, "sender", datapath="external", command=tuple(sender_cmd),
                                workload=Workload("single", dsts=w.dsts, bytes=w.sizes.fixed_bytes,
                                                  start_s=t, duration_s=run_s - t),
                                flow_id_base=a.flow_id_base + k, out=f"{a.host}-{k + 1}",
                                line_rate_bps=w.link_bps))
    return agents


def protocol_flows(cc: str, p: dict, flows, seed: int, datapath: str = "user",
                   line_rate_bps: int | None = None, cc_params: dict | None = None,
                   ecn: bool = True) -> tuple[list[Agent], dict]:
    """The agents of one arm's long flows ``flows`` ([(sender, receiver,
    start_s, stop_s)]) under protocol ``cc``: p4cc's own (a receiver per
    receiver host, a sender per flow, seeds ``seed``, ``seed``+1, …) or
    an external program's (``external_commands``; SkipArm when not given),
    and the settings that say which. ``cc_params`` defaults to the
    experiment's ``cc_params`` parameter (``PCC_PARAMS``) for a PCC arm."""
    if cc_params is None:
        cc_params = kv_params(p.get("cc_params") or []) if cc in PCC_VARIANTS else {}
    if is_external(cc):
        snd, rcv, label = external_commands(cc, p)
        return (external_flows(flows, snd, rcv, line_rate_bps),
                {"cc": cc, "datapath": "external", "external": label})
    agents = [receiver(dst, datapath, cc) for dst in dict.fromkeys(f[1] for f in flows)]
    for i, (h, dst, start, stop) in enumerate(flows):
        agents.append(long_sender(h, dst, cc, datapath, start, stop, i + 1, seed + i,
                                  cc_params, ecn=ecn, line_rate_bps=line_rate_bps))
    return agents, {"cc": cc, "datapath": datapath}


def receiver(host: str, datapath: str, cc: str | None = None,
             cnp_interval_us: float = 0.0, ack_every: int = 1,
             delayed_ack_us: float = 0.0) -> Agent:
    """A receiver; a kernel one sets the senders' algorithm on its sockets,
    a user-space one may be given DCQCN's CNP interval (0: the paper's) and
    an ACK ratio and delayed-ACK timeout."""
    return Agent(host, "receiver", datapath=datapath,
                 cc=cc if datapath == "kernel" else None, cnp_interval_us=cnp_interval_us,
                 ack_every=ack_every, delayed_ack_us=delayed_ack_us)


def long_sender(host: str, dst: str, cc: str, datapath: str, start_s: float, stop_s: float,
                flow_id: int, seed: int, cc_params: dict | None = None, ecn: bool = True,
                line_rate_bps: int | None = None, init_cwnd_pkts: int | None = None,
                bin_ms: float = 10.0) -> Agent:
    """One long flow from ``host`` to ``dst`` over [start_s, stop_s)."""
    return Agent(host, "sender", datapath=datapath, cc=cc,
                 cc_params=dict(cc_params or {}) if datapath == "user" else {}, ecn=ecn,
                 workload=Workload("long", flows=(FlowWindow(dst, start_s, stop_s),)),
                 flow_id_base=flow_id, seed=seed, line_rate_bps=line_rate_bps,
                 init_cwnd_pkts=init_cwnd_pkts, bin_ms=bin_ms)


def long_flows(topo: Topology, senders: list[str], dst: str, ccs, datapath: str,
               duration_s: float, seed: int, cc_params: dict | None = None, ecn: bool = True,
               line_rate_bps: int | None = None) -> list[Agent]:
    """A receiver on ``dst`` and one long flow from each sender for the whole
    run; ``ccs`` is one algorithm for all, or one per sender."""
    ccs = [ccs] * len(senders) if isinstance(ccs, str) else list(ccs)
    agents = [receiver(dst, datapath, ccs[0])]
    for i, (h, cc) in enumerate(zip(senders, ccs)):
        agents.append(long_sender(h, dst, cc, datapath, 0.0, duration_s, i + 1, seed + i,
                                  cc_params, ecn, line_rate_bps))
    return agents


def kv_params(items, name: str = "cc_params") -> dict[str, str]:
    """["KEY=VALUE", ...] (a str_list parameter) → {KEY: VALUE}."""
    out = {}
    for kv in items:
        k, sep, v = str(kv).partition("=")
        if not sep or not k.strip():
            raise ValueError(f"{name}: '{kv}' is not KEY=VALUE")
        out[k.strip()] = v.strip()
    return out


def datapath_of(cc: str) -> str:
    """Kernel TCP where the kernel runs the algorithm, else p4cc's transport."""
    return "kernel" if cc in KERNEL_CCS else "user"


def phases(n: int, interval: float) -> list[tuple[float, float, list[int]]]:
    """Flows 1..n join every ``interval`` then leave in reverse order:
    (start, end, active flow ids) of each phase, from the shared start."""
    out = []
    for k in range(2 * n - 1):
        active = [i + 1 for i in range(n)
                  if i * interval <= k * interval < (2 * n - 1 - i) * interval]
        out.append((k * interval, (k + 1) * interval, active))
    return out


def join_leave_window(i: int, n: int, interval: float) -> tuple[float, float]:
    """When flow i (0-based) of n sends in a join-then-leave schedule."""
    return i * interval, (2 * n - 1 - i) * interval
