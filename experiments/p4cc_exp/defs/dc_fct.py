"""Flow-completion-time slowdown on a two-tier fabric under datacenter
workloads, for DCTCP, TIMELY, oracle TIMELY and the INT-era algorithms
(HPCC, PowerTCP, θ-PowerTCP, Swift, DCQCN): HPCC (SIGCOMM 2019) §5.3 and
Fig. 11, scaled down, with PowerTCP's (NSDI 2022) claim beside it.

Every host of a leaf-spine fabric opens flows to uniformly random other
hosts (all-to-all) as a Poisson process at a share of its link's rate,
with sizes from an empirical distribution (FB_Hadoop, web search); one
scenario adds HPCC's incast mix (60 senders × 500 KB into one receiver,
as a Poisson process of events carrying a share of the capacity). Each
flow's FCT is divided by its FCT alone on its path (p4cc_exp.slowdown)
and the slowdowns are summarised in HPCC's bins (5 % of the flows each,
by size) and in small / medium / large classes.
"""
from __future__ import annotations

import math
from pathlib import Path

from p4cc_topo import load_topology
from p4cc_topo.plan import Agent, Sizes, Workload, port_towards

from .. import blocks, metrics, series, slowdown
from ..stats import percentile
from ..workloads import cdf_mean, derangement, flows_per_s
from ..blocks import cc_label
from ..experiment import Experiment
from ..params import Param, fraction, rate_bps, seconds, str_list
from ..verdicts import RATE, fmt, verdict
from .dc_fct_reference import ratio_text, reference
from .int_incast import cc_params as int_cc_params
from .int_incast import cnp_interval_us
from .int_incast import profile

#: scenario -> (flow-size table, load of the host links, with the incast mix)
SCENARIOS = {
    "hadoop30-incast": ("fb_hadoop", 0.3, True),   # HPCC §5.3, Fig. 11
    "hadoop50": ("fb_hadoop", 0.5, False),         # HPCC §5.3, Fig. 11 (the higher load)
    "websearch60": ("websearch", 0.6, False),      # web search at a high load (hpcc-group.github.io/results.html)
}
#: Flow ids: a million apart per host; incast flows half a million above.
ID_STRIDE, INCAST_ID_OFFSET = 1_000_000, 500_000
#: HPCC §5.3 compares short flows' 95th-percentile slowdown.
SHORT_PCT = 95
#: "Within a few %": HPCC-INT's long flows pay its ~5 % header overhead
#: (hpcc-group.github.io/results.html), judged with 5 % more for one run.
LONG_VS_DCTCP = 1.10
#: PowerTCP (NSDI 2022) §5: its short flows' tail at or below HPCC's; the
#: tolerance for two runs of one simulator (as int-incast's).
POWER_VS_HPCC = 1.1
#: Flows that must complete within the run's grace (15 s virtual).
COMPLETE_SHARE = 0.99


class DcFct(Experiment):
    id = "dc-fct"
    title = "FCT slowdown on a leaf-spine fabric under datacenter workloads"
    source = "HPCC (SIGCOMM 2019) §5.3, Fig. 11; PowerTCP (NSDI 2022) §5"
    description = ("Every host opens flows to random other hosts as a Poisson process at a "
                   "share of its link's rate, sizes from FB_Hadoop or web search; one scenario "
                   "adds HPCC's incast mix. Each flow's completion time over its completion "
                   "time alone on its path, in HPCC's size bins, per algorithm.")
    # HPCC §5.3's fabric is a fat-tree of 320 hosts at 100 Gb/s with
    # 400 Gb/s between switches, 1 µs links and deep (32 MB) buffers; here
    # 4 leaves × 8 hosts at 100 Gb/s and 2 spines at 400 Gb/s (non-blocking),
    # which virtual time runs in minutes.
    paper = ["leaves=4", "hosts_per_leaf=8", "spines=2", "rate=100Gbps", "fabric_rate=400Gbps",
             "delay=1us", "buffer=10000", "flows=2000", "sample=10001"]
    default_target = "sim"
    params = [
        Param("scenarios", ",".join(SCENARIOS), f"which of {', '.join(SCENARIOS)}", str_list),
        Param("protocols", "dctcp,timely,oracle-timely,hpcc,powertcp,theta-powertcp,swift,dcqcn",
              "arms (user-space transport)", str_list),
        Param("leaves", 2, "leaf switches", int, 1, 32),
        Param("spines", 2, "spine switches", int, 1, 16),
        Param("hosts_per_leaf", 2, "hosts on each leaf", int, 1, 64),
        Param("rate", "200Mbps", "host links' rate (paper: 100 Gb/s)", rate_bps, 1e6, 4e11),
        Param("fabric_rate", 0, "leaf-spine links' rate (0: what makes the fabric non-blocking)",
              rate_bps, 0, 1.6e12),
        Param("delay", "10us", "every link's one-way delay (paper: 1 µs)", seconds, 0, 0.01),
        Param("buffer", 1000, "switch buffer per port, packets (deep: these algorithms assume "
              "a lossless fabric)", int, 1, 1_000_000),
        Param("flows", 400, "background flows per scenario that the analysis counts (all hosts "
              "together): they arrive in the measured window, as long as that takes at the "
              "scenario's load", int, 20, 10**6),
        Param("tail", 0.25, "arrivals go on this share of the measured window longer, so the "
              "flows counted finish under the same load (HPCC's analysis likewise counts only "
              "flows started before a time)", float, 0, 10),
        Param("pattern", "all-to-all", "destinations: all-to-all (each flow to a uniformly "
              "random other host) or pairs (each host to one partner, a random derangement)", str),
        Param("incast_share", "2%", "the incast mix's share of the host links' capacity "
              "(HPCC §5.3)", fraction),
        Param("incast_fan_in", 60, "senders per incast event (HPCC: 60; at most hosts − 1)",
              int, 1, 1000),
        Param("incast_bytes", 500_000, "bytes per incast sender (HPCC: 500 KB)", int, 1, 10**9),
        Param("incast_events", 5, "the incast scenario's arrivals last at least as long as this "
              "many incast events take on average (more background flows then)", float, 0, 10**6),
        Param("base_rtt_us", 0, "the RTT with empty queues the delay-based algorithms are "
              "given, µs (0: the longest path's, from the topology; in the namespace lab the "
              "hosts measure more: the user-space switch and the hosts' send paths)", float, 0, 1e6),
        Param("swift_queue_us", 25, "Swift's target above the base RTT, µs (at least 4 packet "
              "times)", float, 0, 1e6),
        Param("sample", 101, "postcard 1-in-N sampling (the ToR queue towards the first host)",
              int, 1, 10**6),
        Param("nic_arbitration", 1, "1: each host serves its flows in turn at its link rate, as "
              "an RDMA NIC does (docs/transport.md); 0: every flow sends when its own window "
              "and pacer allow, and the host's transmit queue drops what overflows", int, 0, 1),
        Param("seed", 1, "random seed (arrivals, sizes, destinations, incast events)", int),
    ]

    # -- the plan -------------------------------------------------------------
    def topology(self, p, cc: str):
        prof = profile(p["rate"])
        return load_topology("leaf_spine", leaves=p["leaves"], spines=p["spines"],
                             hosts_per_leaf=p["hosts_per_leaf"], host_bps=p["rate"],
                             fabric_bps=p["fabric_rate"] or None,
                             delay_us=f"{p['delay'] * 1e6:.0f}us", buffer_pkts=p["buffer"],
                             ecn_k_pkts=prof["k"] if cc == "dctcp" else None,
                             ecn_red=prof["red"] if cc == "dcqcn" else None)

    def base_rtt_us(self, p) -> float:
        """The longest path's empty-queue RTT (a full frame and its ACK),
        or the parameter when set."""
        if p["base_rtt_us"]:
            return p["base_rtt_us"]
        topo = self.topology(p, "dctcp")
        hosts = topo.role("hosts")
        far = hosts[-1] if p["leaves"] > 1 else hosts[min(1, len(hosts) - 1)]
        if far == hosts[0]:
            return 0.0
        return slowdown.base_rtt_s(slowdown.path_hops(topo, hosts[0], far)) * 1e6

    def cc_params(self, p, cc: str) -> dict:
        """int-incast's choices (Swift's target, TIMELY's thresholds on top
        of the base RTT, HPCC's T and PowerTCP's τ: here the longest path's
        base RTT, as in HPCC's simulations), and oracle TIMELY's loop delay,
        which it would otherwise take from the smallest RTT a flow
        measures: a flow's first RTT sample often carries a queue."""
        out = int_cc_params(p, cc)
        if cc == "oracle-timely":
            out["rtt_us"] = f"{p['base_rtt_us']:.3f}"
        return out

    def window_s(self, p, scenario: str) -> float:
        """How long arrivals last: as long as ``flows`` background flows take
        at the scenario's load (flows / (hosts × load × rate / (8 × mean
        size))), and with the incast mix at least as long as
        ``incast_events`` events take (events / (share × hosts × rate /
        (8 × fan-in × bytes)))."""
        cdf, load, incast = SCENARIOS[scenario]
        n = p["leaves"] * p["hosts_per_leaf"]
        window = p["flows"] / flows_per_s(n, load, p["rate"], cdf_mean(cdf))
        if incast and p["incast_share"] > 0 and p["incast_events"] > 0:
            fan_in = min(p["incast_fan_in"], n - 1)
            per_s = p["incast_share"] * n * p["rate"] / (8 * fan_in * p["incast_bytes"])
            window = max(window, p["incast_events"] / per_s)
        return window

    def arms(self, p):
        unknown = [s for s in p["scenarios"] if s not in SCENARIOS]
        if unknown:
            raise ValueError(f"scenarios: unknown {', '.join(unknown)} (known: {', '.join(SCENARIOS)})")
        if p["pattern"] not in ("all-to-all", "pairs"):
            raise ValueError("pattern must be all-to-all or pairs")
        if p["leaves"] * p["hosts_per_leaf"] < 2:
            raise ValueError("the fabric needs at least two hosts")
        base = self.base_rtt_us(p)
        cp = dict(p, base_rtt_us=base)
        out = []
        for si, sc in enumerate(p["scenarios"]):
            cdf, load, incast = SCENARIOS[sc]
            window = self.window_s(p, sc)
            arrivals = window * (1 + p["tail"])
            for cc in p["protocols"]:
                topo = self.topology(p, cc)
                hosts = topo.role("hosts")
                partner = derangement(hosts, p["seed"] * 7919 + si) if p["pattern"] == "pairs" \
                    else None
                params = self.cc_params(cp, cc)
                nic = int(p["rate"]) if p["nic_arbitration"] else None
                agents: list[Agent] = []
                for i, h in enumerate(hosts):
                    agents.append(Agent(h, "receiver", datapath="user", out=f"{h}-rx",
                                        cnp_interval_us=cnp_interval_us(cp, cc)))
                    dsts = (partner[h],) if partner else tuple(x for x in hosts if x != h)
                    agents.append(Agent(
                        h, "sender", datapath="user", cc=cc, cc_params=dict(params),
                        workload=Workload("poisson", dsts=dsts, load=load,
                                          link_bps=int(p["rate"]), sizes=Sizes(cdf=cdf),
                                          duration_s=arrivals, pattern=p["pattern"]),
                        flow_id_base=1 + i * ID_STRIDE, seed=p["seed"] * 1000 + i,
                        line_rate_bps=int(p["rate"]), rtt_every=1000,
                        nic_rate_bps=nic))
                    if incast and p["incast_share"] > 0:
                        agents.append(Agent(
                            h, "sender", datapath="user", cc=cc, cc_params=dict(params),
                            workload=Workload("incast-mix", dsts=tuple(hosts),
                                              load=p["incast_share"], link_bps=int(p["rate"]),
                                              bytes=p["incast_bytes"],
                                              fan_in=min(p["incast_fan_in"], len(hosts) - 1),
                                              schedule_seed=p["seed"] * 104729 + si,
                                              duration_s=arrivals),
                            flow_id_base=1 + i * ID_STRIDE + INCAST_ID_OFFSET,
                            seed=p["seed"] * 1000 + 500 + i, line_rate_bps=int(p["rate"]),
                            out=f"{h}-incast", rtt_every=1000, nic_rate_bps=nic))
                out.append(blocks.arm(
                    f"{sc}-{cc}", f"{cc_label(cc)}, {sc}", topo, agents, arrivals,
                    min(window / 10, 1.0), port_towards(topo, hosts[0]),
                    {"scenario": sc, "cc": cc, "cdf": cdf, "load": load, "measured_s": window,
                     "incast_share": p["incast_share"] if incast else 0.0,
                     "cc_params": params, "base_rtt_us": base},
                    postcard_one_in_n=p["sample"]))
        return out

    # -- analysis -------------------------------------------------------------
    def analyse(self, p, results):
        from p4cc_topo.plan import Plan
        summary, verdicts, flow_table, bin_table = {}, [], [], []
        topos = {}
        if results:
            plan = Plan.load(Path(next(iter(results.values()))["outdir"]).parent / "plan.json")
            topos = {a.name: a.topo() for a in plan.arms}
        for name, r in results.items():
            st = r["settings"]
            flows = series.flows(metrics.sender_dirs(r))
            # The flows that started in the measured window (the arrivals
            # went on after it: the tail parameter).
            t0 = r.get("t0_unix_ns") or min((int(f["start_unix_ns"]) for f in flows), default=0)
            flows = [f for f in flows
                     if int(f["start_unix_ns"]) - t0 <= st.get("measured_s", math.inf) * 1e9]
            rows = slowdown.flow_rows(flows, topos[name], st["cc"], ("poisson",))
            inc = slowdown.flow_rows(flows, topos[name], st["cc"], ("incast-mix",))
            s = slowdown.summarise(rows)
            done_inc = [x["slowdown"] for x in inc if x["slowdown"] is not None]
            # Packets the hosts' own NIC queues dropped (virtual time counts
            # them; the switches' counters never see them).
            host_drops = sum(int(h.get("nic_drops", 0)) for h in r["hosts"].values()) \
                if r["hosts"] else None
            s.update(label=r["label"], scenario=st["scenario"], cc=st["cc"],
                     host_nic_drops=host_drops,
                     incast={"events": len({x["round"] for x in inc}), "flows": len(inc),
                             "completed": len(done_inc),
                             **({f"p{q}": percentile(done_inc, q) for q in (50, 99)}
                                if done_inc else {})})
            summary[name] = s
            for x in rows + inc:
                flow_table.append({"arm": name, "scenario": st["scenario"], "cc": st["cc"], **x})
            for kind, items in (("hpcc", s["hpcc_bins"]), ("class", s["classes"])):
                for b in items:
                    bin_table.append({"arm": name, "scenario": st["scenario"], "cc": st["cc"],
                                      "kind": kind, "bin": b.get("bin") or b.get("class"),
                                      "size_min": b["size_min"], "size_max": b["size_max"],
                                      "flows": b["flows"], "p50": b["p50"], "p95": b["p95"],
                                      "p99": b["p99"]})
        if results:
            run_dir = Path(next(iter(results.values()))["outdir"]).parent
            tables = [slowdown.write_table(run_dir / "fct_flows", flow_table),
                      slowdown.write_table(run_dir / "fct_bins", bin_table)]
            summary["tables"] = [t.name for t in tables]

        def cls(s, name, key):
            return next(c for c in s["classes"] if c["class"] == name)[key]

        for sc in p["scenarios"]:
            arms = {v["cc"]: v for k, v in summary.items()
                    if isinstance(v, dict) and v.get("scenario") == sc}
            if not arms:
                continue
            ref = reference(p, sc)
            for cc, v in arms.items():
                if cc in ref:
                    v["reference"] = ref[cc]
            worst = min(arms.values(), key=lambda v: v["completed"] / max(1, v["flows"]))
            frac = worst["completed"] / max(1, worst["flows"])
            verdicts.append(verdict(
                f"{sc}: every algorithm completes its flows (lowest: {worst['label']})", frac,
                frac >= COMPLETE_SHARE, "every flow", f"≥ {COMPLETE_SHARE:.0%}",
                "the workload (each flow's bytes delivered within the run's grace)", RATE,
                [f"{sc}-{cc}" for cc in arms]))
            h = arms.get("hpcc")
            for other in ("dctcp", "timely"):
                o = arms.get(other)
                if not (h and o):
                    continue
                a, b = cls(h, "small", f"p{SHORT_PCT}"), cls(o, "small", f"p{SHORT_PCT}")
                ratio = a / b if b else math.nan
                verdicts.append(verdict(
                    f"{sc}: HPCC's short flows (< 100 KB) p{SHORT_PCT} slowdown below "
                    f"{cc_label(other)}'s (HPCC / {cc_label(other)}; {fmt(a)} vs {fmt(b)})",
                    ratio, ratio < 1.0, "< 1 (HPCC lower)", "< 1",
                    "HPCC (SIGCOMM 2019) §5.3, Fig. 11"
                    + ratio_text(ref, ("hpcc", f"small_p{SHORT_PCT}"), (other, f"small_p{SHORT_PCT}")),
                    RATE, [f"{sc}-hpcc", f"{sc}-{other}"]))
            d = arms.get("dctcp")
            if h and d:
                a, b = cls(h, "large", "p50"), cls(d, "large", "p50")
                ratio = a / b if b else math.nan
                verdicts.append(verdict(
                    f"{sc}: HPCC's long flows (> 1 MB) median slowdown within a few % of "
                    f"DCTCP's (HPCC / DCTCP; {fmt(a)} vs {fmt(b)})", ratio,
                    ratio <= LONG_VS_DCTCP, "≈ 1 (a few % above: HPCC-INT's ~5 % header "
                    "overhead)", f"≤ {LONG_VS_DCTCP:g}",
                    "HPCC (SIGCOMM 2019) §5.3, Fig. 11; hpcc-group.github.io/results.html"
                    + ratio_text(ref, ("hpcc", "large_p50"), ("dctcp", "large_p50")),
                    RATE, [f"{sc}-hpcc", f"{sc}-dctcp"]))
            pw = arms.get("powertcp")
            if h and pw:
                a, b = cls(pw, "small", "p99"), cls(h, "small", "p99")
                ratio = a / b if b else math.nan
                verdicts.append(verdict(
                    f"{sc}: PowerTCP's short flows (< 100 KB) p99 slowdown at or below HPCC's "
                    f"(PowerTCP / HPCC; {fmt(a)} vs {fmt(b)})", ratio, ratio <= POWER_VS_HPCC,
                    "≤ 1 (at or below HPCC's)", f"≤ {POWER_VS_HPCC:g}",
                    "PowerTCP (NSDI 2022) §5 (FCT of short flows)"
                    + ratio_text(ref, ("powertcp", "small_p99"), ("hpcc", "small_p99")),
                    RATE, [f"{sc}-powertcp", f"{sc}-hpcc"]))
        return summary, verdicts

    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        scs = [sc for sc in p["scenarios"]
               if any(isinstance(v, dict) and v.get("scenario") == sc for v in summary.values())]
        if not scs:
            return []
        fig, axes = plt.subplots(len(scs), 2, figsize=(11, 3.4 * len(scs)), squeeze=False)
        for row, sc in zip(axes, scs):
            for ax, q in zip(row, ("p50", "p99")):
                for name, s in summary.items():
                    if not isinstance(s, dict) or s.get("scenario") != sc or not s["hpcc_bins"]:
                        continue
                    bins = s["hpcc_bins"]
                    ax.plot([b["size_max"] for b in bins], [b[q] for b in bins], marker=".",
                            lw=1, label=cc_label(s["cc"]))
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.axvline(100_000, color="grey", lw=0.5, ls=":")
                ax.axvline(1_000_000, color="grey", lw=0.5, ls=":")
                ax.set_xlabel("flow size (bytes; each point: 5 % of the flows, at its largest size)")
                ax.set_ylabel(f"FCT slowdown, {q}")
                cdf, load, incast = SCENARIOS[sc]
                ax.set_title(f"{sc}: {cdf} at {load:.0%}" + (" + incast" if incast else "")
                             + f", {q}", fontsize=9)
            row[0].legend(fontsize=7)
        rate = (f"{p['rate'] / 1e9:g} Gb/s" if p["rate"] >= 1e9 else f"{p['rate'] / 1e6:g} Mb/s")
        fig.suptitle(f"FCT slowdown by flow size: {p['leaves']} leaves × {p['hosts_per_leaf']} "
                     f"hosts at {rate}, {p['spines']} spines (cf. HPCC Fig. 11)", fontsize=10)
        fig.tight_layout()
        path = outdir / "slowdown_by_size.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return [path]
