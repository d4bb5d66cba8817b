"""Datacenter workloads and FCT slowdown: the flow-size tables and their
means, the ideal FCT and the bins on hand-computed flows, the utilisation
that can never exceed 1, and dc-fct in virtual time (a few hundred flows)."""
import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from p4cc_exp import slowdown, workloads
from p4cc_exp.metrics import utilisation
from p4cc_exp.registry import get
from p4cc_exp.results import busy_between
from p4cc_exp.runner import make_plan, run
from p4cc_topo import load_topology

ROOT = Path(__file__).resolve().parents[2]
HOST_BIN = Path(os.environ.get("P4CC_HOST_BIN", ROOT / "hosts/target/release/p4cc-host"))


def _sim_or_skip():
    from p4cc_exp.simexec import find_sim
    try:
        return find_sim()
    except Exception as e:
        pytest.skip(f"{e}")


# ---------------------------------------------------------------- tables

@pytest.mark.parametrize("name, mean", [("websearch", 1_711_250.0), ("fb_hadoop", 120_420.75),
                                        ("alistorage", 40_869.8)])
def test_cdf_tables_load_with_the_mean_their_header_states(name, mean):
    pts = workloads.read_cdf(name)
    assert pts[0] == (0.0, 0.0) and pts[-1][1] == 100.0
    assert all(b[0] > a[0] and b[1] >= a[1] for a, b in zip(pts, pts[1:]))
    assert workloads.cdf_mean(name) == pytest.approx(mean, rel=1e-12)
    assert workloads.stated_mean(name) == pytest.approx(mean, rel=1e-12)
    text = workloads.cdf_path(name).read_text()
    assert "github.com/alibaba-edu/High-Precision-Congestion-Control" in text, "source named"


def _second_moment(name):
    """E[X²] of the interpolated distribution (uniform within segments)."""
    pts = workloads.read_cdf(name)
    return sum((y1 - y0) / 100 * (x0 * x0 + x0 * x1 + x1 * x1) / 3
               for (x0, y0), (x1, y1) in zip(pts, pts[1:]))


@pytest.mark.parametrize("name", ["websearch", "fb_hadoop", "alistorage"])
def test_the_generator_samples_each_table_at_its_mean(name):
    """p4cc-host's sampler (the one the lab and the simulator run): the
    mean of 200 000 sizes within 5 standard errors of the table's mean."""
    if not HOST_BIN.is_file():
        pytest.skip(f"{HOST_BIN} is not built (cd hosts && cargo build --release)")
    n = 200_000
    out = json.loads(subprocess.run([str(HOST_BIN), "cdf", name, "--samples", str(n), "--seed", "3"],
                                    capture_output=True, text=True, check=True).stdout)
    m = workloads.cdf_mean(name)
    assert out["mean"] == pytest.approx(m, rel=1e-9)
    sd = math.sqrt(_second_moment(name) - m * m)
    assert abs(out["sample_mean"] - m) < 5 * sd / math.sqrt(n), (out["sample_mean"], m)


def test_plans_name_tables_and_patterns_and_old_plans_still_load():
    from p4cc_topo.plan import PlanError, Plan, Sizes, Workload
    w = Workload("poisson", dsts=("h2",), load=0.3, link_bps=10**9, sizes=Sizes(cdf="fb_hadoop"),
                 pattern="all-to-all")
    w.check("w", {"h1", "h2"})
    with pytest.raises(PlanError, match="unknown flow-size table"):
        Workload("poisson", dsts=("h2",), load=0.3, link_bps=10**9,
                 sizes=Sizes(cdf="nonesuch")).check("w", {"h2"})
    with pytest.raises(PlanError, match="pattern"):
        Workload("poisson", dsts=("h2",), load=0.3, link_bps=10**9, pattern="ring").check("w", {"h2"})
    with pytest.raises(PlanError, match="fan_in"):
        Workload("incast-mix", dsts=("h1", "h2"), load=0.02, link_bps=10**9, bytes=500_000,
                 fan_in=2, schedule_seed=1).check("w", {"h1", "h2"})
    # A plan written before these fields existed reads as before.
    plan = make_plan(get("fct"), ["senders=2", "flows=20"])
    data = plan.to_json()
    for arm in data["arms"]:
        for ag in arm["agents"]:
            if ag["workload"]:
                for k in ("pattern", "fan_in", "schedule_seed"):
                    del ag["workload"][k]
                del ag["workload"]["sizes"]["cdf"]
    again = Plan.from_json(json.loads(json.dumps(data)))
    assert again.arms[0].senders()[0].workload.sizes.cdf is None


def test_pairs_are_a_derangement_and_all_to_all_is_every_other_host():
    hosts = [f"h{i}" for i in range(8)]
    d = workloads.derangement(hosts, 5)
    assert sorted(d.values()) == hosts and all(a != b for a, b in d.items())
    assert d == workloads.derangement(hosts, 5) and d != workloads.derangement(hosts, 6)
    plan = make_plan(get("dc-fct"), ["scenarios=hadoop50", "protocols=dctcp", "pattern=pairs"])
    senders = plan.arms[0].senders()
    assert all(len(a.workload.dsts) == 1 and a.workload.dsts[0] != a.host for a in senders)
    plan = make_plan(get("dc-fct"), ["scenarios=hadoop30-incast", "protocols=dctcp"])
    bg = [a for a in plan.arms[0].senders() if a.workload.kind == "poisson"]
    inc = [a for a in plan.arms[0].senders() if a.workload.kind == "incast-mix"]
    hosts = [a.host for a in bg]
    assert all(set(a.workload.dsts) == set(hosts) - {a.host} for a in bg)
    assert len(inc) == len(hosts) and len({a.workload.schedule_seed for a in inc}) == 1
    assert all(a.workload.fan_in == len(hosts) - 1 for a in inc)   # 60, capped by the group


# ------------------------------------------------------------- ideal FCT

def _fabric():
    # h1_1 -100M- l1 -1G- sp1 -1G- l2 -100M- h2_1, every link 10 µs.
    return load_topology("leaf_spine", leaves=2, spines=1, hosts_per_leaf=1,
                         host_bps="100Mbps", fabric_bps="1Gbps", delay_us="10us")


def test_ideal_fct_by_hand():
    hops = slowdown.path_hops(_fabric(), "h1_1", "h2_1")
    assert [(h.rate_bps, h.delay_s) for h in hops] == [
        (100e6, 10e-6), (1e9, 10e-6), (1e9, 10e-6), (100e6, 10e-6)]
    # One packet of 1000 B: frames 1098, 1118, 1138, 1158 B (a 20-byte hop
    # record per switch crossed); the ACK 110 + 3 × 20 = 170 B; 80 µs of
    # propagation.
    one = 80 + 1098 * .08 + 1118 * .008 + 1138 * .008 + 1158 * .08 + 2 * 170 * .08 + 2 * 170 * .008
    assert one == pytest.approx(308.448)
    assert slowdown.ideal_fct_s(1000, hops, "dctcp") * 1e6 == pytest.approx(one)
    # 10 000 B: 8 packets (7 × 1336 + 648); first frames 1434 … 1494 B; the
    # last link carries 10 000 + 8 × 158 = 11 264 B, 9 770 B after the first.
    base = 80 + 1434 * .08 + 1454 * .008 + 1474 * .008 + 1494 * .08 + 2 * 170 * .08 + 2 * 170 * .008
    assert slowdown.ideal_fct_s(10_000, hops, "dctcp") * 1e6 == pytest.approx(base + 9770 * .08)
    assert slowdown.ideal_fct_s(10_000, hops, "dctcp") * 1e6 == pytest.approx(1149.184)
    # HPCC reads INT: 32-byte records, the ACK echoes three of them.
    hp = 80 + 1098 * .08 + 1130 * .008 + 1162 * .008 + 1194 * .08 + 2 * 206 * .08 + 2 * 206 * .008
    assert slowdown.ideal_fct_s(1000, hops, "hpcc") * 1e6 == pytest.approx(hp)
    assert slowdown.base_rtt_s(hops) * 1e6 == pytest.approx(base)


def test_slowdown_bins_and_classes_by_hand():
    # 40 flows of sizes 1..40 KB (and one of 2 MB) with slowdown = size in KB.
    rows = [{"size_bytes": k * 1000, "slowdown": float(k)} for k in range(1, 41)]
    rows.append({"size_bytes": 2_000_000, "slowdown": None})            # did not complete
    rows.append({"size_bytes": 150_000, "slowdown": 3.0})
    bins = slowdown.hpcc_bins(rows)
    assert len(bins) == 20                                              # 41 done: 2 per bin, 3 in the last
    assert (bins[0]["size_min"], bins[0]["size_max"], bins[0]["flows"]) == (1000, 2000, 2)
    assert bins[0]["p50"] == 1.5 and bins[0]["p99"] == pytest.approx(1.99)
    assert (bins[-1]["size_min"], bins[-1]["size_max"], bins[-1]["flows"]) == (39000, 150_000, 3)
    assert bins[-1]["p50"] == 39.0                                      # of 39, 40 and 3
    cls = {c["class"]: c for c in slowdown.size_classes(rows)}
    assert cls["small"]["flows"] == 40 and cls["small"]["p50"] == 20.5
    assert cls["small"]["p95"] == pytest.approx(38.05)
    assert cls["medium"]["flows"] == 1 and cls["medium"]["p99"] == 3.0
    assert cls["large"]["flows"] == 0 and cls["large"]["incomplete"] == 1
    assert math.isnan(cls["large"]["p50"])
    # summary.json is strict JSON: a class without flows reads as null.
    from p4cc_exp.runner import json_safe
    text = json.dumps(json_safe({"classes": list(cls.values()), "ratio": math.inf}),
                      allow_nan=False)
    back = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))
    assert back["ratio"] is None and back["classes"][2]["p50"] is None
    assert back["classes"][0]["p50"] == 20.5


def test_tables_round_trip_in_either_format(tmp_path):
    rows = [{"arm": "a", "size_bytes": 10, "slowdown": 1.5}, {"arm": "b", "size_bytes": 20,
                                                              "slowdown": None}]
    for fmt in ("csv.gz", slowdown.table_format()):
        path = slowdown.write_table(tmp_path / f"t-{fmt}", rows, fmt)
        back = slowdown.read_table(path)
        assert [str(r["arm"]) for r in back] == ["a", "b"]
        assert float(back[0]["slowdown"]) == 1.5


# ----------------------------------------------------------- utilisation

def test_utilisation_from_busy_time_is_exact():
    a = {"unix_ns": 1_000, "ports": {"s1:3": {"wire_busy_ns": 500, "tx_bytes": 0}}}
    b = {"unix_ns": 3_001_000, "ports": {"s1:3": {"wire_busy_ns": 3_000_500, "tx_bytes": 0}}}
    busy = busy_between(a, b, "s1:3", 10_000_000_000)
    assert busy == {"busy_ns": 3_000_000, "window_ns": 3_000_000, "rate_bps": 10_000_000_000}
    # Whole bytes would have said more than 1 here (a frame counted whole).
    assert utilisation({"busy": busy, "window_s": 0.003, "tx_bytes": 3_751_454}, 10e9) == 1.0
    assert utilisation({"busy": busy, "window_s": 0.003, "tx_bytes": 0}, 20e9) == 0.5
    assert busy_between(a, b, "s1:3", None) is None
    assert utilisation({"busy": None, "window_s": 0.003, "tx_bytes": 3_750_000}, 10e9) == 1.0


def test_a_saturated_link_in_virtual_time_never_reads_above_one(tmp_path):
    """DCTCP Fig. 12's scenario at 10 Gb/s (the paper scale that read
    1.00017): frames of 1454 bytes take 1163.2 ns, and a link that rounded
    each down sent 1.7 in 10 000 more than its rate."""
    _sim_or_skip()
    over = ["rate=10Gbps", "rtt=100us", "k=40", "ns=2", "buffer=1000", "duration=0.05",
            "warmup=0.01", "datapath=user", "sample=1001"]
    run(get("dctcp-theory"), target="sim", overrides=over, out=str(tmp_path / "r"))
    s = json.loads((tmp_path / "r" / "summary.json").read_text())["summary"]
    arms = {k: v for k, v in s.items() if isinstance(v, dict) and "utilisation" in v}
    assert arms
    for name, v in arms.items():
        assert 0.99 < v["utilisation"] <= 1.0, (name, v["utilisation"])
        m = json.loads((tmp_path / "r" / name / "measure.json").read_text())
        a, b = (m["reads"][k]["ports"] for k in ("start", "end"))
        (key,) = a
        # The bytes on the wire agree: within the two frames at the window's edges.
        sent = b[key]["wire_tx_bytes"] - a[key]["wire_tx_bytes"]
        assert sent * 8 <= 10e9 * m["window_s"] + 2 * 1500 * 8, (sent, m["window_s"])


# ------------------------------------------------------ in virtual time

def test_a_lone_flow_takes_exactly_its_ideal_fct(tmp_path):
    """The ideal FCT is the simulator's own: one flow at a time on an idle
    fabric, each finishes in its ideal FCT to within the nanoseconds its
    frames' times are rounded up to."""
    _sim_or_skip()
    from p4cc_exp import blocks
    from p4cc_topo.plan import Agent, Plan, Workload, port_towards
    topo = _fabric()
    # Window-based DCTCP sends 10 packets at once; HPCC paces its window,
    # so only its one-packet flow is the ideal's.
    runs = [("dctcp", 1000), ("dctcp", 10_000), ("hpcc", 1000)]
    agents = [Agent("h2_1", "receiver")] + [
        Agent("h1_1", "sender", cc=cc, out=f"tx{k}", flow_id_base=1 + k,
              workload=Workload("single", dsts=("h2_1",), bytes=n, start_s=0.05 * k),
              line_rate_bps=100_000_000)
        for k, (cc, n) in enumerate(runs)]
    arm = blocks.arm("lone", "lone flows", topo, agents, 0.4, 0.01, port_towards(topo, "h2_1"))
    plan = Plan(experiment="fct", title="t", source="t", description="t", params={}, seed=1,
                arms=(arm,)).check()
    from p4cc_exp.simexec import VirtualTime

    class Quiet:
        def begin(self):
            pass

        def simulated(self, *a):
            pass

    (tmp_path / "r").mkdir()
    plan.write(tmp_path / "r" / "plan.json")
    VirtualTime().run_arm(plan, arm, tmp_path / "r" / "lone", Quiet())
    from p4cc_exp import series
    flows = series.flows([tmp_path / "r" / "lone" / a.folder for a in arm.senders()])
    assert len(flows) == len(runs)
    for f, a in zip(flows, arm.senders()):
        ideal = slowdown.ideal_fct_s(int(f["size_bytes"]), slowdown.path_hops(topo, "h1_1", "h2_1"),
                                     a.cc)
        assert f["status"] == "complete"
        # whole-ns rounding of each frame's arrival, a few per hop
        assert int(f["fct_ns"]) / 1e9 == pytest.approx(ideal, abs=20e-9), (a.cc, f["size_bytes"])


def test_a_nic_that_arbitrates_drops_nothing_of_its_own(tmp_path):
    """Twenty TIMELY flows of 300 KB leave one host at once onto a 100 Mb/s
    link, each starting at the line rate, as a rate-based NIC flow does:
    together they ask for 2 Gb/s and overflow the host's 1000-packet
    transmit queue (the control arm must drop, or this test proves
    nothing). With the stack arbitrating at the link rate (`nic_rate_bps`)
    no packet is dropped there, every flow completes, and holding packets
    back costs no time: the last flow ends no later than with the drops
    (measured 0.966 s against 1.010 s; TIMELY itself, slowed by the queue
    the hop records' growing frames build at the last 100 Mb/s hop, keeps
    both well above the 0.54 s the bytes take there)."""
    _sim_or_skip()
    from p4cc_exp import blocks, series
    from p4cc_exp.simexec import VirtualTime
    from p4cc_topo.plan import Agent, Plan, Workload, port_towards
    topo = _fabric()
    n, size = 20, 300_000

    def arm(name, nic):
        agents = [Agent("h2_1", "receiver")] + [
            Agent("h1_1", "sender", cc="timely", out=f"tx{k}", flow_id_base=1 + k,
                  workload=Workload("single", dsts=("h2_1",), bytes=size, start_s=0.0),
                  line_rate_bps=100_000_000, nic_rate_bps=nic)
            for k in range(n)]
        return blocks.arm(name, name, topo, agents, 2.0, 0.01, port_towards(topo, "h2_1"))

    arms = (arm("queue", None), arm("arbiter", 100_000_000))
    plan = Plan(experiment="fct", title="t", source="t", description="t", params={}, seed=1,
                arms=arms).check()

    class Quiet:
        def begin(self):
            pass

        def simulated(self, *a):
            pass

    (tmp_path / "r").mkdir()
    plan.write(tmp_path / "r" / "plan.json")
    drops, ends = {}, {}
    for a in arms:
        VirtualTime().run_arm(plan, a, tmp_path / "r" / a.name, Quiet())
        m = json.loads((tmp_path / "r" / a.name / "measure.json").read_text())
        drops[a.name] = m["hosts"]["h1_1"]["nic_drops"]
        flows = series.flows([tmp_path / "r" / a.name / s.folder for s in a.senders()])
        assert len(flows) == n and all(f["status"] == "complete" for f in flows), a.name
        ends[a.name] = (max(int(f["end_unix_ns"]) for f in flows)
                        - min(int(f["start_unix_ns"]) for f in flows)) / 1e9
    assert drops["queue"] > 0 and drops["arbiter"] == 0, drops
    # 1336 payload bytes per frame of 1494 bytes on the last hop (98 of
    # headers, a 20-byte record per switch crossed)
    wire_s = n * size / 1336 * 1494 * 8 / 100e6
    assert wire_s <= ends["arbiter"] <= ends["queue"], (ends, wire_s)


def test_dc_fct_in_virtual_time(tmp_path):
    """A few hundred flows of FB_Hadoop at 30 % plus the incast mix on a
    2 × 2 × 2 fabric: every flow completes, the offered load is the
    Poisson process's, slowdowns are at least 1, and the tables, bins,
    verdicts and plot are there."""
    _sim_or_skip()
    over = ["scenarios=hadoop30-incast", "protocols=dctcp,hpcc", "flows=200",
            "incast_share=5%"]
    exp = get("dc-fct")
    plan = make_plan(exp, over)
    run(exp, target="sim", overrides=over, out=str(tmp_path / "r"))
    out = tmp_path / "r"
    summary = json.loads((out / "summary.json").read_text(),
                         parse_constant=lambda c: pytest.fail(f"bare {c} in summary.json"))
    s, verdicts = summary["summary"], summary["verdicts"]
    assert (out / "slowdown_by_size.png").is_file()
    assert all((out / t).is_file() for t in s["tables"])
    for arm in plan.arms:
        a = s[arm.name]
        assert a["completed"] == a["flows"] and a["flows"] > 100, a
        assert a["min_slowdown"] >= 1 - 1e-6
        assert isinstance(a["host_nic_drops"], int) and a["host_nic_drops"] >= 0
        assert len(a["hpcc_bins"]) == 20 and a["incast"]["flows"] > 0
        # Offered load: the flows each host started (complete or not) are a
        # Poisson count of mean λT, their bytes a compound Poisson sum.
        from p4cc_exp import metrics, results, series
        r = results.arm_result(out / arm.name, arm)
        flows = [f for f in series.flows(metrics.sender_dirs(r)) if f["workload"] == "poisson"]
        n_hosts = 4
        lam_t = workloads.flows_per_s(n_hosts, 0.3, 200e6, workloads.cdf_mean("fb_hadoop")) \
            * arm.duration_s
        assert abs(len(flows) - lam_t) < 4 * math.sqrt(lam_t), (len(flows), lam_t)
        sent = sum(int(f["size_bytes"]) for f in flows)
        expect = 0.3 * 200e6 / 8 * n_hosts * arm.duration_s
        sd = math.sqrt(lam_t * _second_moment("fb_hadoop"))
        assert abs(sent - expect) < 4 * sd, (sent, expect, sd)
    names = [v["name"] for v in verdicts]
    assert any("HPCC's short flows" in n and "DCTCP" in n for n in names), names
    assert all(v["status"] in ("pass", "fail") for v in verdicts)


def test_the_reference_simulators_numbers_name_only_the_preset_it_ran():
    """ns3-datacenter ran dc-fct's paper preset with seed 1: its numbers go
    beside that run's verdicts (HPCC / DCTCP long-flow medians 2.38 / 1.86
    at hadoop50) and beside no other."""
    from p4cc_exp.defs import dc_fct_reference as ref
    exp = get("dc-fct")
    paper = make_plan(exp, list(exp.paper)).params
    assert ref.applies(paper)
    assert not ref.applies(make_plan(exp, []).params)
    assert not ref.applies(dict(paper, seed=2))
    r = ref.reference(paper, "hadoop50")
    assert ref.ratio_text(r, ("hpcc", "large_p50"), ("dctcp", "large_p50")) == \
        "; ns3-datacenter run here: 2.38 / 1.86 = 1.28"
    assert ref.ratio_text(r, ("swift", "large_p50"), ("dctcp", "large_p50")) == ""


def test_nic_arbitration_is_a_user_space_senders_and_reaches_its_command():
    from p4cc_exp.agents import command
    from p4cc_topo.plan import Agent, PlanError, Workload
    w = Workload("single", dsts=("h2_1",), bytes=1000)
    a = Agent("h1_1", "sender", cc="dctcp", workload=w, nic_rate_bps=100_000_000)
    a.check("a", ["h1_1", "h2_1"])
    ips = {"h2_1": "10.0.2.1", "h1_1": "10.0.1.1"}.get
    argv = command(a, ips, Path("/tmp/x"), 0)
    assert argv[argv.index("--nic-rate-mbps") + 1] == "100"
    assert "--nic-rate-mbps" not in command(Agent("h1_1", "sender", cc="dctcp", workload=w),
                                             ips, Path("/tmp/x"), 0)
    for bad in (Agent("h2_1", "receiver", nic_rate_bps=100_000_000),
                Agent("h1_1", "sender", datapath="kernel", cc="cubic", workload=w,
                      nic_rate_bps=100_000_000),
                Agent("h1_1", "sender", cc="dctcp", workload=w, nic_rate_bps=1.5e8 + 0.5)):
        with pytest.raises(PlanError, match="nic_rate_bps"):
            bad.check("a", ["h1_1", "h2_1"])
