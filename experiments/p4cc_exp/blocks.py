"""Steps experiment definitions share to build their plans: an arm from a
topology and its agents, receivers, long-flow senders. Composition, not
inheritance: a definition calls these and stays a declaration."""
from __future__ import annotations

from dataclasses import replace

from p4cc_topo import Topology
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
          "pcc-allegro": "PCC Allegro", "pcc-vivace": "PCC Vivace", "hpcc": "HPCC",
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


def receiver(host: str, datapath: str, cc: str | None = None) -> Agent:
    """A receiver; a kernel one sets the senders' algorithm on its sockets."""
    return Agent(host, "receiver", datapath=datapath,
                 cc=cc if datapath == "kernel" else None)


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
