"""How much of the switch's signal does oracle TIMELY need?

Oracle TIMELY (docs/algorithms.md) holds the bottleneck queue at a small
target from the depth the switch reports for each packet. This experiment
varies what it is told — the bottleneck's depth on every packet (in-band,
today's), only the path maximum or only the newest hop on a path with two
bottlenecks, one packet in N, a value d µs old, L quantisation levels (PINT),
or the postcards the collector saw, returned out of band — on the same
workloads as TIMELY (RTT) and DCTCP (ECN), and finds for each degradation
where the oracle stops beating TIMELY.

Workloads: incast of N senders into one receiver (star, `incastN`), and a
parking lot of two bottlenecks in a chain (`parking`: long flows cross both,
cross flows one each). The degradation is applied on the sender, where the
reports arrive (hosts/cc/src/signal.rs), so the namespace lab and the
simulator run the same code; the postcards come back through the collector
(`p4cc-host collect --feed`, the simulator's "feed" agent).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from p4cc_topo import load_topology
from p4cc_topo.plan import port_between, port_towards

from .. import blocks, metrics, series
from ..blocks import kv_params
from ..experiment import Experiment
from ..params import Param, rate_bps, seconds, str_list
from ..results import sent_bytes
from ..stats import jain_index, mean, percentile
from ..verdicts import QUEUE, RATE, fmt, verdict
from .timely_incast import TIMELY_PARAMS, timely_cc_params

#: "beats TIMELY": throughput within measurement noise of TIMELY's or above,
#: and a p95 queue no longer than TIMELY's (+1: depths are whole packets) —
#: the tolerances timely-incast judges the exact signal with.
THROUGHPUT_NOISE = 0.02
QUEUE_SLACK_PKTS = 1.0
#: The loop's delay margin: XCP's law with α = 0.4, β = α²√2 crosses over at
#: ω·d = 0.5655 with 45° of phase; a delay the law does not know about adds
#: ω·D of lag, so the loop loses stability once D > 0.785/0.5655 − 1 = 0.39 of
#: its own loop delay d (docs/algorithms.md, oracle-timely).
DELAY_MARGIN = 0.39
#: PINT (Ben Basat et al., SIGCOMM 2020): ≤ 2 bytes a packet carry the
#: congestion-control signal without losing HPCC's precision; one value in
#: 8 bits = 256 levels.
PINT_LEVELS = 256

AXES = ("every", "delay", "levels", "postcard", "hop")
AXIS_TITLES = {"every": "sampled: one packet in N", "delay": "delayed: d µs old",
               "levels": "quantised: L levels (PINT)", "postcard": "postcard-fed",
               "hop": "hop: path max / newest hop"}


def scenario_kind(s: str) -> tuple[str, int]:
    """'incast10' → ('incast', 10); 'parking' → ('parking', 0)."""
    if s == "parking":
        return "parking", 0
    if s.startswith("incast") and s[6:].isdigit() and 1 <= int(s[6:]) <= 60:
        return "incast", int(s[6:])
    raise ValueError(f"scenarios: {s!r} is neither incastN (N = 1..60) nor parking")


def oracle_variants(p: dict, kind: str) -> list[tuple[str, str, object, dict]]:
    """(arm suffix, axis, level, oracle cc_params) of every oracle arm, the
    exact signal first, each axis from its mildest level to its harshest."""
    out = [("exact", "exact", None, {})]
    out += [(f"every{n}", "every", n, {"sample_every": str(n)}) for n in sorted(p["every"])]
    out += [(f"delay{d:g}", "delay", d, {"delay_us": f"{d:g}"}) for d in sorted(p["delays"])]
    top = p["levels_max"] or p["buffer"]
    out += [(f"levels{n}", "levels", n, {"levels": str(n), "levels_max_pkts": str(top)})
            for n in sorted(p["levels"], reverse=True)]
    if p["postcard"]:
        out.append(("postcard", "postcard", "postcards", {"source": "postcard"}))
    if kind == "parking":
        out += [(f"hop-{h}", "hop", h, {"hop": h}) for h in p["hops"]]
    return out


class OracleSignal(Experiment):
    id = "oracle-signal"
    title = "Oracle TIMELY: how much of the switch's signal it needs"
    source = "TIMELY (SIGCOMM 2015) §6 workload; PINT (SIGCOMM 2020); XCP (SIGCOMM 2002)"
    description = ("Oracle TIMELY fed the switch's queue depth exactly, then sampled, delayed, "
                   "quantised, postcard-fed, or from the wrong hop, against TIMELY (RTT) and "
                   "DCTCP (ECN) on incast and a two-bottleneck parking lot: the throughput–tail "
                   "queue frontier of each signal, and where the oracle stops beating TIMELY.")
    paper = ["rate=10Gbps", "delay=10us", "buffer=1000", "k=65", "base_rtt_us=0",
             "thigh_us=500", "tlow_us=50", "beta=0.8", "delta_mbps=10", "duration=0.5",
             "warmup=0.15", "delays=5,10,20,40,80,160"]
    params = [
        Param("rate", "50Mbps", "every link's rate (the bottlenecks')", rate_bps, 1e6, 1e11),
        Param("delay", "10us", "every link's one-way delay", seconds, 0, 0.1),
        Param("buffer", 200, "switch buffer per port, packets", int, 1, 100_000),
        Param("k", 20, "ECN K for the DCTCP arms, packets", int, 0, 10_000),
        Param("duration", 10, "seconds each arm runs", seconds, 0.01, 3600),
        Param("warmup", 2, "seconds ignored at the start", seconds, 0, 600),
        Param("scenarios", "incast10,incast40,parking", "workloads: incastN (N senders → 1, star) "
              "and/or parking (two bottlenecks in a chain)", str_list),
        Param("parking_long", 2, "parking lot: long flows across both bottlenecks", int, 0, 9),
        Param("parking_cross", 2, "parking lot: cross flows per bottleneck", int, 0, 9),
        Param("baselines", "timely,dctcp", "the algorithms the oracle is compared with", str_list),
        Param("every", "4,16,64", "sampled: one packet in N carries its report", str_list),
        Param("delays", "250,1000,2000,4000,8000", "delayed: report ages d, µs", str_list),
        Param("levels", "256,16,4,2", "quantised: levels L (PINT's geometric levels)", str_list),
        Param("levels_max", 0, "the top quantisation level, packets (0: the buffer)", int, 0,
              1_000_000),
        Param("postcard", "on", "a postcard-fed arm (the collector returns postcards)", str),
        Param("hops", "max,last", "parking lot: in-band hop views besides every hop's record",
              str_list),
        Param("oracle_params", "", "oracle TIMELY's parameters for every oracle arm, "
              "KEY=VALUE,... (docs/algorithms.md)", str_list),
        *TIMELY_PARAMS,
        Param("seed", 1, "random seed", int),
    ]

    # -- the plan ---------------------------------------------------------
    def check(self, p: dict) -> dict:
        p = dict(p)
        p["every"] = [int(x) for x in p["every"]]
        p["delays"] = [float(x) for x in p["delays"]]
        p["levels"] = [int(x) for x in p["levels"]]
        if any(n < 2 for n in p["every"]):
            raise ValueError("every: one packet in N needs N ≥ 2 (N = 1 is the exact arm)")
        if any(d <= 0 for d in p["delays"]):
            raise ValueError("delays: ages must be > 0 µs (0 is the exact arm)")
        if any(n < 2 for n in p["levels"]):
            raise ValueError("levels: at least 2 levels")
        if str(p["postcard"]).lower() not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
            raise ValueError("postcard: on or off")
        p["postcard"] = str(p["postcard"]).lower() in ("on", "true", "1", "yes")
        for h in p["hops"]:
            if h not in ("max", "last", "each"):
                raise ValueError(f"hops: {h!r} is not max, last or each")
        for b in p["baselines"]:
            if b not in ("timely", "dctcp", "oracle-timely-seed", "vegas", "cubic"):
                raise ValueError(f"baselines: {b!r} is not timely, dctcp, oracle-timely-seed, "
                                 f"vegas or cubic")
        for s in p["scenarios"]:
            scenario_kind(s)
        return p

    def topology(self, p: dict, scenario: str):
        kind, n = scenario_kind(scenario)
        if kind == "incast":
            return load_topology("star", n_hosts=n + 1, rate_bps=p["rate"],
                                 delay_us=f"{p['delay'] * 1e6:.0f}us", buffer_pkts=p["buffer"],
                                 ecn_k_pkts=p["k"])
        return load_topology("parking_lot", n_hops=2, n_long=p["parking_long"],
                             n_cross=p["parking_cross"], bottleneck_bps=p["rate"],
                             delay_us=f"{p['delay'] * 1e6:.0f}us", buffer_pkts=p["buffer"],
                             ecn_k_pkts=p["k"])

    @staticmethod
    def flows(topo, kind: str) -> list[tuple[str, str]]:
        """(sender, receiver) of every long flow of the workload."""
        if kind == "incast":
            return [(h, "h1") for h in topo.role("senders")]
        pairs = list(zip(topo.role("long_senders"), topo.role("long_receivers")))
        return pairs + list(zip(topo.role("cross_senders"), topo.role("cross_receivers")))

    def agents(self, p: dict, topo, kind: str, cc: str, cc_params: dict) -> list:
        pairs = self.flows(topo, kind)
        out = [blocks.receiver(r, "user") for r in dict.fromkeys(r for _, r in pairs)]
        for i, (h, r) in enumerate(pairs):
            out.append(blocks.long_sender(h, r, cc, "user", 0.0, p["duration"], i + 1,
                                          p["seed"] + i, cc_params, line_rate_bps=p["rate"]))
        return out

    def arms(self, p: dict):
        p = self.check(p)
        extra = kv_params(p["oracle_params"], "oracle_params")
        out = []
        for scenario in p["scenarios"]:
            kind, n = scenario_kind(scenario)
            topo = self.topology(p, scenario)
            if kind == "incast":
                queue, more = port_towards(topo, "h1"), ()
            else:
                queue, more = port_between(topo, "s1", "s2"), (port_between(topo, "s2", "s3"),)
            keys = [q.key() for q in (queue, *more)]
            crosses = {h: keys if kind == "incast" or h in topo.role("long_senders")
                       else [keys[int(h[1]) - 1]] for h, _ in self.flows(topo, kind)}
            base = {"scenario": scenario, "kind": kind, "senders": n,
                    "bottlenecks": {q.key(): topo.switches[q.switch].id for q in (queue, *more)},
                    "crosses": crosses}
            for cc in p["baselines"]:
                params = timely_cc_params(p) if cc == "timely" else {}
                out.append(blocks.arm(f"{scenario}-{cc}", f"{scenario}: {blocks.cc_label(cc)}",
                                      topo, self.agents(p, topo, kind, cc, params), p["duration"],
                                      p["warmup"], queue, {**base, "cc": cc, "axis": "baseline",
                                                           "level": None, "cc_params": params},
                                      more_ports=more))
            for suffix, axis, level, params in oracle_variants(p, kind):
                params = {**extra, **params}
                out.append(blocks.arm(
                    f"{scenario}-oracle-{suffix}", f"{scenario}: oracle TIMELY ({suffix})", topo,
                    self.agents(p, topo, kind, "oracle-timely", params), p["duration"],
                    p["warmup"], queue, {**base, "cc": "oracle-timely", "axis": axis,
                                         "level": level, "cc_params": params},
                    feed=axis == "postcard", more_ports=more))
        return out

    # -- analysis -----------------------------------------------------------
    def arm_row(self, p: dict, name: str, r: dict) -> dict:
        s = metrics.arm_summary(p, r)
        st = r["settings"]
        outdir = Path(r["outdir"])
        try:
            m = json.loads((outdir / "measure.json").read_text())
        except (OSError, ValueError):
            m = {}
        reads = m.get("reads", {})
        window = float(m.get("window_s", 0.0))
        # Every bottleneck: queue (postcards) and utilisation (counters).
        ports = {}
        cards0 = metrics.postcards(r)
        t0 = min((c["t"] for c in cards0), default=0) + p["warmup"]
        for key, sid in st["bottlenecks"].items():
            cards = series.postcards(outdir / "queue.csv", int(key.split(":")[1]), sid)
            depths = [c["depth"] for c in cards if c["t"] >= t0]
            a, b = reads.get("start", {}).get("ports", {}).get(key), \
                reads.get("end", {}).get("ports", {}).get(key)
            util = (sent_bytes(a, b) * 8 / (p["rate"] * window)
                    if a and b and window > 0 else math.nan)
            ports[key] = {"queue_p95_pkts": percentile(depths, 95),
                          "queue_mean_pkts": mean(depths), "utilisation": util}
        # Goodput after the warm-up, per sender, and what each bottleneck
        # carried of it: throughput is the least any bottleneck carried.
        t1 = t0 - p["warmup"] + p["duration"]
        per_host = {Path(d).name: metrics.goodput_between(d, t0, t1) for d in metrics.sender_dirs(r)}
        per_flow = list(per_host.values())
        carried = {k: sum(v for h, v in per_host.items() if k in st["crosses"].get(h, ()))
                   for k in st["bottlenecks"]}
        row = {
            "label": s["label"], "scenario": st["scenario"], "cc": st["cc"],
            "axis": st["axis"], "level": st["level"],
            "throughput_mbps": min(carried.values(), default=math.nan),
            "lifetime_goodput_mbps": s["throughput_mbps"],
            "utilisation": min((v["utilisation"] for v in ports.values()), default=math.nan),
            "queue_p95_pkts": max((v["queue_p95_pkts"] for v in ports.values()), default=math.nan),
            "queue_mean_pkts": max((v["queue_mean_pkts"] for v in ports.values()),
                                   default=math.nan),
            "rtt_p95_us": s["rtt_p95_us"], "rtt_mean_us": s["rtt_mean_us"],
            "jain": jain_index(per_flow), "flows": s["flows"],
            "base_rtt_us": base_rtt_us(r, t0),
            "bottlenecks": ports,
        }
        for k, v in carried.items():
            ports[k]["goodput_mbps"] = v
        if st["kind"] == "parking":
            # Long flows (both bottlenecks) against cross flows (one each):
            # max-min fairness gives every flow the same.
            n_b = len(st["bottlenecks"])
            row["long_flow_mbps"] = mean([v for h, v in per_host.items()
                                          if len(st["crosses"][h]) == n_b])
            row["cross_flow_mbps"] = mean([v for h, v in per_host.items()
                                           if len(st["crosses"][h]) < n_b])
        return row

    def analyse(self, p, results):
        p = self.check(p)
        rows = {name: self.arm_row(p, name, r) for name, r in results.items()}
        summary, verdicts = {}, []
        for scenario in p["scenarios"]:
            kind, n = scenario_kind(scenario)
            mine = {k: v for k, v in rows.items() if v["scenario"] == scenario}
            t = mine.get(f"{scenario}-timely")
            exact = mine.get(f"{scenario}-oracle-exact")
            for v in mine.values():
                v["beats_timely"] = beats(v, t) if t else None
            per_axis = {}
            for axis in AXES:
                pts = [v for v in mine.values() if v["axis"] == axis]
                if pts and t:
                    per_axis[axis] = crossover(axis, pts, t, exact)
            summary[scenario] = {"arms": {k: _public(v) for k, v in mine.items()},
                                 "where the oracle stops beating TIMELY": per_axis}
            verdicts += self.verdicts(p, scenario, kind, n, mine, t, exact)
        return summary, verdicts

    def verdicts(self, p, scenario, kind, n, mine, t, exact):
        out = []
        name = lambda s: f"{scenario}-{s}"  # noqa: E731
        if exact and t:
            arms = [name("timely"), name("oracle-exact")]
            out.append(verdict(
                f"{scenario}: exact signal — oracle's throughput against TIMELY's",
                exact["throughput_mbps"],
                exact["throughput_mbps"] >= (1 - THROUGHPUT_NOISE) * t["throughput_mbps"],
                f"≥ TIMELY's {t['throughput_mbps']:.4g} Mb/s", "−2 % (measurement noise)",
                "the TIMELY seed (CS244 '16): an oracle that knows the queue "
                "performs at least as well as TIMELY", RATE, arms))
            out.append(verdict(
                f"{scenario}: exact signal — oracle's p95 queue against TIMELY's",
                exact["queue_p95_pkts"],
                exact["queue_p95_pkts"] <= t["queue_p95_pkts"] + QUEUE_SLACK_PKTS,
                f"≤ TIMELY's {t['queue_p95_pkts']:.3g} pkts", "+1 pkt (whole packets)",
                "the TIMELY seed's table (TIMELY 7 pkts, its ns-3 oracle 133)", QUEUE, arms))
        if exact:
            out.append(verdict(
                f"{scenario}: exact signal — oracle keeps every bottleneck busy",
                exact["utilisation"], exact["utilisation"] >= 0.95,
                "≈ 1: a standing target q* ≥ 1 packet never lets the link idle", "≥ 95 %",
                "analysis (docs/algorithms.md, oracle-timely)", RATE, [name("oracle-exact")]))
        if not (exact and t):
            return out
        delays = sorted((v for v in mine.values() if v["axis"] == "delay"),
                        key=lambda v: v["level"])
        if delays:
            # The law's loop delay at fair shares: base RTT + one packet per flow.
            share = n if kind == "incast" else p["parking_long"] + p["parking_cross"]
            t_pkt_us = 1500 * 8 / p["rate"] * 1e6
            d_us = exact["base_rtt_us"] + share * t_pkt_us
            margin = DELAY_MARGIN * d_us
            inside = [v for v in delays if v["level"] < margin]
            ok = all(v["beats_timely"] for v in inside)
            out.append(verdict(
                f"{scenario}: delayed signal — where the oracle stops beating TIMELY",
                _where(delays), ok,
                f"beats TIMELY at every delay below the loop's margin 0.39·d = {margin:.4g} µs "
                f"(d = {d_us:.4g} µs: RTT {exact['base_rtt_us']:.4g} + {share} packet times)",
                f"the grid's delays below the margin ({len(inside)} of {len(delays)})",
                "XCP's gains α = 0.4, β = 0.226: 45° phase margin at ω·d = 0.566 "
                "(docs/algorithms.md)", QUEUE, [name("timely")] + [_arm(scenario, v) for v in delays]))
        levels = [v for v in mine.values() if v["axis"] == "levels"]
        pint = next((v for v in levels if v["level"] == PINT_LEVELS), None)
        if pint:
            ok = (pint["queue_p95_pkts"] <= exact["queue_p95_pkts"] + QUEUE_SLACK_PKTS
                  and pint["throughput_mbps"] >= (1 - THROUGHPUT_NOISE) * exact["throughput_mbps"])
            out.append(verdict(
                f"{scenario}: {PINT_LEVELS} levels (8 bits) as good as the exact depth",
                f"p95 {fmt(pint['queue_p95_pkts'])} pkts, {fmt(pint['throughput_mbps'])} Mb/s",
                ok, f"exact: p95 {fmt(exact['queue_p95_pkts'])} pkts, "
                f"{fmt(exact['throughput_mbps'])} Mb/s",
                "+1 pkt, −2 % throughput", "PINT (SIGCOMM 2020): ≤ 2 bytes a packet keep "
                "HPCC's precision", QUEUE, [name("oracle-exact"), _arm(scenario, pint)]))
        if levels:
            lv = sorted(levels, key=lambda v: -v["level"])
            out.append(verdict(
                f"{scenario}: quantised signal — where the oracle stops beating TIMELY",
                _where(lv), bool(lv[0]["beats_timely"]),
                f"beats TIMELY with {lv[0]['level']} levels (the mildest tested)",
                "the grid", "PINT (SIGCOMM 2020)", QUEUE,
                [name("timely")] + [_arm(scenario, v) for v in lv]))
        every = sorted((v for v in mine.values() if v["axis"] == "every"),
                       key=lambda v: v["level"])
        if every:
            out.append(verdict(
                f"{scenario}: sampled signal — where the oracle stops beating TIMELY",
                _where(every), all(v["beats_timely"] for v in every),
                "beats TIMELY at every sampling rate tested: the law stretches its loop delay "
                "to its report interval, and XCP's loop is stable for any delay it knows",
                "the grid", "analysis (docs/algorithms.md, oracle-timely)", QUEUE,
                [name("timely")] + [_arm(scenario, v) for v in every]))
        pc = mine.get(name("oracle-postcard"))
        if pc:
            ok = (pc["queue_p95_pkts"] <= exact["queue_p95_pkts"] + QUEUE_SLACK_PKTS
                  and pc["throughput_mbps"] >= (1 - THROUGHPUT_NOISE) * exact["throughput_mbps"])
            out.append(verdict(
                f"{scenario}: postcard-fed as good as in-band",
                f"p95 {fmt(pc['queue_p95_pkts'])} pkts, {fmt(pc['throughput_mbps'])} Mb/s "
                f"({'beats' if pc['beats_timely'] else 'does not beat'} TIMELY)",
                ok, f"in-band: p95 {fmt(exact['queue_p95_pkts'])} pkts, "
                f"{fmt(exact['throughput_mbps'])} Mb/s", "+1 pkt, −2 % throughput",
                "analysis: the collector sits one link from the switch, as the receiver "
                "does, so its reports are as fresh", QUEUE,
                [name("oracle-exact"), name("oracle-postcard")]))
        for h in ("max", "last"):
            v = mine.get(name(f"oracle-hop-{h}"))
            if not v:
                continue
            if h == "max":
                ok = (abs(v["queue_p95_pkts"] - exact["queue_p95_pkts"]) <= QUEUE_SLACK_PKTS
                      and v["throughput_mbps"] >= (1 - THROUGHPUT_NOISE) * exact["throughput_mbps"])
                out.append(verdict(
                    f"{scenario}: path maximum as good as every hop's record",
                    f"p95 {fmt(v['queue_p95_pkts'])} pkts, {fmt(v['throughput_mbps'])} Mb/s",
                    ok, f"every hop: p95 {fmt(exact['queue_p95_pkts'])} pkts", "±1 pkt, −2 %",
                    "analysis: each packet carries every hop, so the shim's maximum is the "
                    "deepest hop", QUEUE, [name("oracle-exact"), _arm(scenario, v)]))
            else:
                out.append(verdict(
                    f"{scenario}: newest hop only — blind to the bottlenecks",
                    f"p95 {fmt(v['queue_p95_pkts'])} pkts "
                    f"({'beats' if v['beats_timely'] else 'does not beat'} TIMELY)",
                    not v["beats_timely"],
                    "does not beat TIMELY: the newest hop is the receiver's access port, "
                    "never congested, so the law sees no queue", "—",
                    "analysis (the parking lot's bottlenecks are switch-to-switch links)",
                    QUEUE, [name("timely"), _arm(scenario, v)]))
        return out

    # -- plots ----------------------------------------------------------------
    def plot(self, p, results, summary, outdir):
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        p = self.check(p)
        paths = []
        for scenario in p["scenarios"]:
            arms = summary.get(scenario, {}).get("arms", {})
            if not arms:
                continue
            fig, axes = plt.subplots(1, 2, figsize=(12, 4.6))
            t = arms.get(f"{scenario}-timely")
            for ax, xkey, xlabel in ((axes[0], "queue_p95_pkts", "p95 queue (packets)"),
                                     (axes[1], "rtt_p95_us", "p95 RTT (µs)")):
                x = lambda v: max(v[xkey], 0.5)  # noqa: E731 (log axis; an empty queue at ½)
                if t and xkey == "queue_p95_pkts":
                    # where an arm beats TIMELY: no less throughput, no longer queue
                    ax.fill_between([0.4, t[xkey] + QUEUE_SLACK_PKTS],
                                    (1 - THROUGHPUT_NOISE) * t["throughput_mbps"],
                                    p["rate"] / 1e6, color="tab:green", alpha=0.07,
                                    label="beats TIMELY")
                for name, v in arms.items():
                    if v["axis"] == "baseline":
                        ax.plot(x(v), v["throughput_mbps"], "s", ms=9,
                                label=blocks.cc_label(v["cc"]),
                                color={"timely": "tab:red", "dctcp": "k"}.get(v["cc"], "tab:gray"))
                ex = arms.get(f"{scenario}-oracle-exact")
                if ex:
                    ax.plot(x(ex), ex["throughput_mbps"], "*", ms=14, color="tab:green",
                            label="oracle, exact")
                colors = {"every": "tab:blue", "delay": "tab:orange", "levels": "tab:purple",
                          "postcard": "tab:olive", "hop": "tab:brown"}
                for axis in AXES:
                    pts = [v for v in arms.values() if v["axis"] == axis]
                    if axis == "levels":
                        pts.sort(key=lambda v: -v["level"])
                    elif axis in ("every", "delay"):
                        pts.sort(key=lambda v: v["level"])
                    if not pts:
                        continue
                    chain = ([ex] if ex and axis in ("every", "delay", "levels") else []) + pts
                    ax.plot([x(v) for v in chain], [v["throughput_mbps"] for v in chain],
                            "o-" if len(chain) > 1 else "o", color=colors[axis], lw=1, ms=5,
                            label=AXIS_TITLES[axis])
                    for v in pts:
                        ax.annotate(_short(v), (x(v), v["throughput_mbps"]), fontsize=7,
                                    xytext=(3, 3), textcoords="offset points")
                ax.set_xscale("log")
                ax.set_xlabel(xlabel)
                ax.set_ylabel("throughput (Mb/s; least-served bottleneck)")
                ax.axhline(p["rate"] / 1e6 * 0.95 * _goodput_share(), ls=":", color="gray", lw=1,
                           label="95 % of the link")
                ax.grid(alpha=0.3)
            axes[0].legend(fontsize=7, loc="lower right", ncol=2)
            fig.suptitle(f"{scenario}: throughput against tail queue and tail RTT, per signal "
                         f"(up and left is better)", fontsize=10)
            fig.tight_layout()
            path = outdir / f"frontier_{scenario}.png"
            fig.savefig(path, dpi=100)
            plt.close(fig)
            paths.append(path)
            paths.append(self.degradation_plot(p, scenario, arms, outdir))
        return paths

    @staticmethod
    def degradation_plot(p, scenario, arms, outdir):
        import matplotlib.pyplot as plt
        t = arms.get(f"{scenario}-timely")
        d = arms.get(f"{scenario}-dctcp")
        ex = arms.get(f"{scenario}-oracle-exact")
        axes_used = [a for a in ("every", "delay", "levels")
                     if any(v["axis"] == a for v in arms.values())]
        if not axes_used:
            return None
        fig, axes = plt.subplots(2, len(axes_used), figsize=(4.2 * len(axes_used), 6),
                                 squeeze=False)
        for j, axis in enumerate(axes_used):
            pts = sorted((v for v in arms.values() if v["axis"] == axis),
                         key=lambda v: v["level"])
            xs = [v["level"] for v in pts]
            for i, (key, label) in enumerate((("queue_p95_pkts", "p95 queue (pkts)"),
                                              ("throughput_mbps", "throughput (Mb/s)"))):
                ax = axes[i, j]
                y = (lambda v: max(v, 0.5)) if key == "queue_p95_pkts" else (lambda v: v)
                ax.plot(xs, [y(v[key]) for v in pts], "o-", color="tab:blue", label="oracle")
                for v in pts:
                    if not v.get("beats_timely"):
                        ax.plot(v["level"], y(v[key]), "x", color="tab:red", ms=10)
                if ex:
                    ax.axhline(y(ex[key]), color="tab:green", ls="--", lw=1, label="oracle, exact")
                if t:
                    ax.axhline(y(t[key]), color="tab:red", ls="-", lw=1, label="TIMELY")
                if d:
                    ax.axhline(y(d[key]), color="k", ls=":", lw=1, label="DCTCP")
                ax.set_xscale("log")
                ax.set_xticks(xs, [f"{x:g}" for x in xs])
                ax.minorticks_off()
                ax.set_ylabel(label)
                if i == 1:
                    ax.set_xlabel(AXIS_TITLES[axis])
                if key == "queue_p95_pkts":
                    ax.set_yscale("log")
        axes[0, 0].legend(fontsize=7)
        fig.suptitle(f"{scenario}: the oracle as its signal degrades (× = no longer beats "
                     f"TIMELY)", fontsize=10)
        fig.tight_layout()
        path = outdir / f"degradation_{scenario}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


def base_rtt_us(r: dict, t0: float) -> float:
    """The path's RTT with an empty queue: the 1st percentile of the RTT
    samples after t0 (a flow's smallest RTT is its final zero-length probe's)."""
    vals = [rtt for s in series.rtts(metrics.sender_dirs(r)).values() for t, rtt, _ in s
            if t >= t0]
    return percentile(vals, 1)


def beats(v: dict, t: dict) -> bool:
    """Whether an arm beats TIMELY: its throughput within noise of TIMELY's
    or above, and its p95 queue no longer (+1 packet)."""
    return bool(v["throughput_mbps"] >= (1 - THROUGHPUT_NOISE) * t["throughput_mbps"]
                and v["queue_p95_pkts"] <= t["queue_p95_pkts"] + QUEUE_SLACK_PKTS)


def crossover(axis: str, pts: list[dict], t: dict, exact: dict | None) -> dict:
    """The levels of one axis from mildest to harshest, which beat TIMELY,
    the last that does and the first that does not."""
    if axis == "levels":
        pts = sorted(pts, key=lambda v: -v["level"])
    elif axis in ("every", "delay"):
        pts = sorted(pts, key=lambda v: v["level"])
    first_fail = next((v for v in pts if not v["beats_timely"]), None)
    holds = None
    for v in pts:
        if v is first_fail:
            break
        holds = v
    out = {"levels": [v["level"] for v in pts],
           "beats_timely": [v["beats_timely"] for v in pts],
           "holds_to": holds["level"] if holds else None,
           "fails_at": first_fail["level"] if first_fail else None,
           "summary": _where(pts)}
    if first_fail:
        out["at_failure"] = {k: first_fail[k] for k in ("throughput_mbps", "queue_p95_pkts",
                                                        "rtt_p95_us")}
    return out


def _short(v: dict) -> str:
    """A level as the plots label it."""
    a, x = v["axis"], v["level"]
    if a == "every":
        return f"1/{x}"
    if a == "delay":
        return f"{x:g}µs"
    if a == "levels":
        return f"L{x}"
    return "pc" if a == "postcard" else str(x)


def _unit(v: dict) -> str:
    """A level in words."""
    a, x = v["axis"], v["level"]
    if a == "every":
        return f"1 in {x}"
    if a == "delay":
        return f"{x:g} µs"
    if a == "levels":
        return f"{x} levels"
    return "postcards" if a == "postcard" else f"hop={x}"


def _where(pts: list[dict]) -> str:
    """'holds to X, fails at Y (numbers)' along an axis, mildest first."""
    fail = next((v for v in pts if not v["beats_timely"]), None)
    if fail is None:
        return f"beats TIMELY at every level tested (to {_unit(pts[-1])})" if pts else "—"
    i = pts.index(fail)
    held = f"holds to {_unit(pts[i - 1])}, " if i > 0 else "never beats TIMELY: "
    return (f"{held}fails at {_unit(fail)} (p95 {fmt(fail['queue_p95_pkts'])} pkts, "
            f"{fmt(fail['throughput_mbps'])} Mb/s)")


def _arm(scenario: str, v: dict) -> str:
    """The arm name of an oracle arm's row."""
    a, x = v["axis"], v["level"]
    suffix = {"every": lambda: f"every{x}", "delay": lambda: f"delay{x:g}",
              "levels": lambda: f"levels{x}", "postcard": lambda: "postcard",
              "hop": lambda: f"hop-{x}"}[a]()
    return f"{scenario}-oracle-{suffix}"


def _public(v: dict) -> dict:
    return {k: x for k, x in v.items()}


def _goodput_share() -> float:
    """Payload bytes of a full data packet over its bytes on the wire (one
    hop record): what goodput a fully used link carries."""
    payload, wire = 1336, 1336 + 48 + 8 + 20 + 28 + 14
    return payload / wire
