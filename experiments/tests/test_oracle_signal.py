"""oracle-signal: the plan (arms per scenario and degradation, the feed
collector, the parking lot's two bottlenecks) and the analysis on
synthetic results folders (frontier rows, where the oracle stops beating
TIMELY, the verdicts)."""
import json
import math
from pathlib import Path

import pytest

from p4cc_exp.defs.oracle_signal import OracleSignal, beats, crossover, oracle_variants
from p4cc_exp.params import resolve
from p4cc_exp.registry import get
from p4cc_exp.results import arm_result
from p4cc_exp.runner import make_plan

T0 = 1_700_000_000  # unix s of the fake runs' start


def params(*over):
    return resolve(get("oracle-signal").params, list(over))


def test_registered_with_a_paper_preset():
    exp = get("oracle-signal")
    assert isinstance(exp, OracleSignal)
    p = resolve(exp.params, exp.paper)
    assert p["rate"] == 10**10 and p["base_rtt_us"] == 0 and p["k"] == 65
    plan = make_plan(exp, scale="paper")
    assert plan.scale == "paper"
    timely = next(a for a in plan.arms if a.name == "incast10-timely")
    assert timely.senders()[0].cc_params["min_rtt_us"] == 20.0
    # At 10 Gb/s postcards are thinned to the collector's pace, except where
    # they are the oracle's signal: the postcard-fed arm is not a sampled one.
    one_in = {a.name: {s.postcards.one_in_n for s in a.switches.values()} for a in plan.arms}
    assert one_in["incast10-oracle-exact"] == {101}
    assert one_in["incast10-oracle-postcard"] == {1} and one_in["parking-oracle-postcard"] == {1}


def test_plan_has_every_signal_per_scenario():
    plan = make_plan(get("oracle-signal"))
    names = [a.name for a in plan.arms]
    for sc in ("incast10", "incast40", "parking"):
        for suffix in ("timely", "dctcp", "oracle-exact", "oracle-every4", "oracle-every64",
                       "oracle-delay250", "oracle-delay8000", "oracle-levels256",
                       "oracle-levels2", "oracle-postcard"):
            assert f"{sc}-{suffix}" in names
    assert "parking-oracle-hop-last" in names and "parking-oracle-hop-max" in names
    assert "incast10-oracle-hop-last" not in names, "one hop: the views coincide"
    arm = plan.arm("incast40-oracle-delay1000")
    assert len(arm.senders()) == 40
    assert all(a.cc == "oracle-timely" and a.cc_params == {"delay_us": "1000"}
               for a in arm.senders())
    assert arm.settings["axis"] == "delay" and arm.settings["level"] == 1000
    lv = plan.arm("incast10-oracle-levels16").senders()[0].cc_params
    assert lv == {"levels": "16", "levels_max_pkts": "200"}, "top level: the buffer"
    # the postcard arm's collector returns postcards; no other arm's does
    assert plan.arm("incast10-oracle-postcard").collector().role == "feed"
    assert plan.arm("incast10-oracle-postcard").senders()[0].cc_params == {"source": "postcard"}
    assert plan.arm("incast10-oracle-exact").collector().role == "collector"
    assert all(a.line_rate_bps == 50_000_000 for a in arm.senders())


def test_parking_arms_measure_both_bottlenecks():
    plan = make_plan(get("oracle-signal"), ["scenarios=parking", "parking_long=2",
                                            "parking_cross=3"])
    arm = plan.arm("parking-oracle-exact")
    assert [p.key() for p in arm.measure.ports] == ["s1:1", "s2:1"]
    assert arm.measure.queue.key() == "s1:1"
    assert arm.settings["bottlenecks"] == {"s1:1": 1, "s2:1": 2}
    cr = arm.settings["crosses"]
    assert cr["l1"] == ["s1:1", "s2:1"] and cr["c1_3"] == ["s1:1"] and cr["c2_1"] == ["s2:1"]
    assert len(arm.senders()) == 2 + 2 * 3
    dsts = {a.host: a.workload.flows[0].dst for a in arm.senders()}
    assert dsts["l2"] == "lr2" and dsts["c2_3"] == "cr2_3"
    timely = plan.arm("parking-timely").senders()[0]
    assert timely.cc == "timely" and timely.cc_params["thigh_us"] == 950.0


@pytest.mark.parametrize("bad", ["every=1", "delays=0", "levels=1", "scenarios=incast0",
                                 "scenarios=ring", "hops=first", "baselines=bbr",
                                 "postcard=maybe", "oracle_params=alpha"])
def test_nonsense_is_refused(bad):
    with pytest.raises(ValueError):
        get("oracle-signal").arms(params(bad))


def test_variants_run_mildest_first():
    p = OracleSignal().check(params("every=64,4", "delays=500,100", "levels=4,64"))
    v = oracle_variants(p, "incast")
    assert [x[0] for x in v] == ["exact", "every4", "every64", "delay100", "delay500",
                                 "levels64", "levels4", "postcard"]


# ---------------------------------------------------------- synthetic runs

def fake_arm(outdir: Path, arm, thr_mbps: float, q: float, rtt_us: float, rate_bps: float,
             duration: float):
    """An arm's results folder: every sender at an equal share of
    `thr_mbps` (per bottleneck), every bottleneck's queue at `q` packets,
    every RTT `rtt_us`."""
    d = outdir / arm.name
    senders = arm.senders()
    crosses = arm.settings["crosses"]
    load = {k: sum(1 for s in senders if k in crosses[s.host]) for k in arm.settings["bottlenecks"]}
    for s in senders:
        # a sender's share of the tightest bottleneck it crosses
        share = min(thr_mbps / load[k] for k in crosses[s.host])
        sd = d / s.folder
        sd.mkdir(parents=True)
        rows = ["flow_id,bin_start_unix_ns,bin_ns,bytes,mbps"]
        for i in range(int(duration * 100)):
            rows.append(f"1,{(T0 + i / 100) * 1e9:.0f},10000000,{share * 1e6 / 8 / 100:.0f},{share}")
        (sd / "tput.csv").write_text("\n".join(rows) + "\n")
        rtts = ["flow_id,t_unix_ns,rtt_ns,qdepth_pkts,cwnd_bytes,pacing_bps,inflight_bytes"]
        rtts += [f"1,{(T0 + i / 10) * 1e9:.0f},{rtt_us * 1e3:.0f},{q},,," for i in range(int(duration * 10))]
        (sd / "rtt.csv").write_text("\n".join(rtts) + "\n")
        bytes_ = share * 1e6 / 8 * duration
        (sd / "flows.csv").write_text(
            "flow_id,start_unix_ns,end_unix_ns,bytes_acked,min_rtt_ns\n"
            f"1,{T0 * 10**9},{(T0 + duration) * 1e9:.0f},{bytes_:.0f},{rtt_us * 1e3:.0f}\n")
    cards = ["recv_unix_ns,switch_id,egress_port,enq_qdepth,deq_qdepth,qdelay_us,egress_ts_us,"
             "src,dst,proto,sport,dport,ecn,len"]
    for key, sid in arm.settings["bottlenecks"].items():
        port = key.split(":")[1]
        cards += [f"{(T0 + i / 100) * 1e9:.0f},{sid},{port},{q:.0f},{q:.0f},0,0,a,b,17,1,2,0,1500"
                  for i in range(int(duration * 100))]
    d.mkdir(parents=True, exist_ok=True)
    (d / "queue.csv").write_text("\n".join(cards) + "\n")
    util = thr_mbps * 1e6 / rate_bps
    reads = {"start": {"unix_ns": 0, "ports": {k: {"tx_bytes": 0, "ce_marks": 0}
                                                for k in arm.settings["bottlenecks"]}},
             "end": {"unix_ns": 0, "ports": {k: {"tx_bytes": util * rate_bps * (duration - 2) / 8,
                                                 "ce_marks": 0}
                                             for k in arm.settings["bottlenecks"]}}}
    (d / "measure.json").write_text(json.dumps({"t0_unix_ns": 0, "reads": reads,
                                                "window_s": duration - 2}))


#: (throughput Mb/s, p95 queue, p95 RTT µs) per arm suffix; the rest exact.
NUMBERS = {"timely": (41.0, 4, 1630), "dctcp": (45.9, 27, 7200), "oracle-exact": (45.8, 2, 1200),
           "oracle-every4": (45.7, 3, 1300), "oracle-every16": (44.0, 3, 1300),
           "oracle-every64": (45.8, 199, 47000), "oracle-delay250": (45.8, 2, 1200),
           "oracle-delay1000": (45.5, 5, 1400), "oracle-delay2000": (33.0, 8, 2000),
           "oracle-levels256": (45.8, 2, 1200), "oracle-levels16": (45.7, 3, 1300),
           "oracle-levels4": (41.8, 11, 3100), "oracle-postcard": (45.8, 2, 1200)}


@pytest.fixture
def synthetic(tmp_path):
    exp = get("oracle-signal")
    p = params("scenarios=incast10", "every=4,16,64", "delays=250,1000,2000",
               "levels=256,16,4", "duration=10", "warmup=2")
    plan = make_plan(exp, ["scenarios=incast10", "every=4,16,64", "delays=250,1000,2000",
                           "levels=256,16,4"])
    for arm in plan.arms:
        thr, q, rtt = NUMBERS[arm.name.removeprefix("incast10-")]
        fake_arm(tmp_path, arm, thr, q, rtt, p["rate"], p["duration"])
    results = {a.name: arm_result(tmp_path / a.name, a) for a in plan.arms}
    return exp, p, results


def test_analysis_finds_where_the_oracle_stops_beating_timely(synthetic):
    exp, p, results = synthetic
    summary, verdicts = exp.analyse(p, results)
    arms = summary["incast10"]["arms"]
    ex = arms["incast10-oracle-exact"]
    assert ex["throughput_mbps"] == pytest.approx(45.8, rel=1e-3)
    assert ex["queue_p95_pkts"] == 2 and ex["rtt_p95_us"] == pytest.approx(1200)
    assert ex["utilisation"] == pytest.approx(45.8 / 50, rel=1e-6)
    assert ex["base_rtt_us"] == pytest.approx(1200)
    assert ex["beats_timely"] and not arms["incast10-dctcp"]["beats_timely"]
    where = summary["incast10"]["where the oracle stops beating TIMELY"]
    assert where["every"]["holds_to"] == 16 and where["every"]["fails_at"] == 64
    assert where["delay"]["holds_to"] == 1000 and where["delay"]["fails_at"] == 2000
    assert where["levels"]["holds_to"] == 16 and where["levels"]["fails_at"] == 4
    assert where["postcard"]["fails_at"] is None
    assert where["delay"]["summary"].startswith("holds to 1000 µs, fails at 2000 µs")
    v = {x.name.split(": ", 1)[1]: x for x in verdicts}
    assert v["exact signal — oracle's throughput against TIMELY's"].ok
    assert v["exact signal — oracle's p95 queue against TIMELY's"].ok
    assert not v["exact signal — oracle keeps every bottleneck busy"].ok, "45.8/50 < 95 %"
    # the delay margin: 0.39 · (1200 µs + 10 packet times of 240 µs) = 1404 µs:
    # 250 and 1000 µs lie inside and beat TIMELY
    dv = v["delayed signal — where the oracle stops beating TIMELY"]
    assert dv.ok and "1404" in dv.expected
    assert v[f"256 levels (8 bits) as good as the exact depth"].ok
    assert not v["sampled signal — where the oracle stops beating TIMELY"].ok
    assert v["postcard-fed as good as in-band"].ok


def test_plots_are_written(synthetic, tmp_path):
    exp, p, results = synthetic
    summary, _ = exp.analyse(p, results)
    paths = exp.plot(p, results, summary, tmp_path)
    assert {x.name for x in paths} == {"frontier_incast10.png", "degradation_incast10.png"}
    assert all(x.stat().st_size > 10_000 for x in paths)


def test_beats_and_crossover_rules():
    t = {"throughput_mbps": 40.0, "queue_p95_pkts": 4.0}
    assert beats({"throughput_mbps": 39.3, "queue_p95_pkts": 5.0}, t), "within −2 % and +1 pkt"
    assert not beats({"throughput_mbps": 39.1, "queue_p95_pkts": 1.0}, t)
    assert not beats({"throughput_mbps": 45.0, "queue_p95_pkts": 5.5}, t)
    pts = [{"axis": "levels", "level": n, "beats_timely": b, "throughput_mbps": 1.0,
            "queue_p95_pkts": 2.0, "rtt_p95_us": 3.0} for n, b in ((4, False), (256, True),
                                                                  (16, True))]
    c = crossover("levels", pts, t, None)
    assert c["levels"] == [256, 16, 4] and (c["holds_to"], c["fails_at"]) == (16, 4)
    c = crossover("every", [{**pts[0], "axis": "every", "level": 2}], t, None)
    assert c["holds_to"] is None and c["summary"].startswith("never beats TIMELY")
    assert math.isnan(float("nan"))
