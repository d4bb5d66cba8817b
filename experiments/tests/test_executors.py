"""What the namespace lab decides before building anything: which target
`auto` picks and why, what a target cannot apply, and the rate a run bound
for bmv2 is slowed to."""
import json

import pytest

from p4cc_exp import bmv2_capacity, executors
from p4cc_exp.executors import auto_target, capability_problems, fit_rate
from p4cc_exp.registry import get
from p4cc_exp.runner import fit_to_bmv2, make_plan


@pytest.fixture
def fake_bmv2(tmp_path, monkeypatch):
    sw = tmp_path / "simple_switch_grpc"
    sw.write_text("#!/bin/sh\n")
    sw.chmod(0o755)
    monkeypatch.setenv("P4CC_BMV2_BIN", str(sw))
    monkeypatch.setenv("P4CC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("P4CC_BMV2_PPS", "20000")
    monkeypatch.setattr("p4cc_topo.targets._netem_cache", False)
    return sw


def test_bmv2_takes_delay_and_loss_through_the_link_emulator():
    plan = make_plan(get("pcc-lossy"), ["losses=0.02", "protocols=cubic"])
    assert capability_problems(plan, "bmv2") == []
    assert capability_problems(plan, "embedded") == []
    assert capability_problems(plan, "sim") == []


def test_bmv2_with_netem_asked_for_and_absent_names_the_property(monkeypatch):
    monkeypatch.setattr("p4cc_topo.targets._netem_cache", False)
    plan = make_plan(get("pcc-lossy"), ["losses=0.02", "protocols=cubic"])
    probs = capability_problems(plan, "bmv2", links="netem")
    assert any("delay_us=" in p and "needs netem" in p and "--links netem" in p for p in probs)
    assert any("loss=0.02 needs netem" in p for p in probs)
    assert not any("rate" in p or "depth" in p for p in probs)   # bmv2 has queue rate and depth


def test_bmv2_without_the_link_emulator_says_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setattr(executors, "find_link",
                        lambda: (_ for _ in ()).throw(executors.TargetUnavailable("not built")))
    plan = make_plan(get("dctcp-queue"))
    probs = capability_problems(plan, "bmv2")
    assert probs and all("p4cc-link" in p and "make setup" in p for p in probs)


def test_pyfwd_refuses_every_link_property():
    plan = make_plan(get("dctcp-queue"))
    assert capability_problems(plan, "pyfwd")


def test_auto_says_why_it_picks_the_embedded_target(fake_bmv2):
    # 100 Mb/s with ACKs and a postcard per packet: beyond 75 % of 20 kpps
    target, why = auto_target(make_plan(get("dctcp-queue")))
    assert target == "embedded" and "kpps" in why and "P4CC_BMV2_PPS" in why


def test_auto_picks_bmv2_when_it_can_carry_the_run(fake_bmv2):
    plan = make_plan(get("dctcp-queue"), ["rate=10Mbps"])
    assert executors.bmv2_load_pps(plan) < 0.75 * 20_000
    target, why = auto_target(plan)
    assert target == "bmv2" and "bmv2 is installed and can serve this run" in why


def test_auto_without_bmv2_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("P4CC_BMV2_BIN", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    target, why = auto_target(make_plan(get("dctcp-queue"), ["rate=10Mbps"]))
    assert target == "embedded" and "not installed" in why


def test_fit_rate_picks_the_largest_round_rate_bmv2_carries(fake_bmv2):
    plan = make_plan(get("dctcp-queue"))  # 100 Mb/s: 4 x 8.33 kpps = 33 kpps
    new, why = fit_rate(plan, 100e6)
    # 15 kpps usable: 33.3 kpps * r / 100 <= 15 -> r <= 45 Mb/s -> 40
    assert new == 40e6
    assert "20 kpps" in why and "33 kpps" in why
    assert fit_rate(make_plan(get("dctcp-queue"), ["rate=10Mbps"]), 10e6) is None


def test_a_run_bound_for_bmv2_is_slowed_unless_the_user_set_the_rate(fake_bmv2):
    exp = get("dctcp-queue")
    plan = make_plan(exp)
    fitted, note = fit_to_bmv2(exp, plan, "bmv2", [], "default")
    assert fitted.params["rate"] == 40e6 and "100 Mb/s → 40 Mb/s" in note
    assert all(c.rate_bps in (40e6, None) for a in fitted.arms for s in a.switches.values()
               for c in s.ports.values())
    same, note = fit_to_bmv2(exp, plan, "bmv2", ["rate=100Mbps"], "default")
    assert same is plan and note is None
    same, note = fit_to_bmv2(exp, plan, "embedded", [], "default")
    assert same is plan and note is None
    # auto on a machine with bmv2: slowed too, and then auto picks bmv2
    fitted, note = fit_to_bmv2(exp, plan, "auto", [], "default")
    assert note and auto_target(fitted)[0] == "bmv2"


def test_capacity_is_cached_with_what_it_depends_on(fake_bmv2, monkeypatch):
    monkeypatch.delenv("P4CC_BMV2_PPS")
    # Nothing measured yet and measuring not allowed: the fallback, said so.
    cap = bmv2_capacity.capacity(measure=False)
    assert cap.pps == bmv2_capacity.FALLBACK_PPS and cap.source.startswith("assumed")
    path = bmv2_capacity.cache_path()
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"pps": 31000, "measured": "2026-11-27T10:00:00",
                                "fingerprint": bmv2_capacity.fingerprint(fake_bmv2)}))
    cap = bmv2_capacity.capacity(measure=False)
    assert cap.pps == 31000 and "measured 2026-11-27" in cap.source
    # Another bmv2 build: the cached figure no longer applies.
    fake_bmv2.write_text("#!/bin/sh\n# rebuilt\n")
    assert bmv2_capacity.capacity(measure=False).source.startswith("assumed")


def test_measuring_a_binary_that_is_not_bmv2_falls_back_and_says_why(fake_bmv2, monkeypatch):
    monkeypatch.delenv("P4CC_BMV2_PPS")
    monkeypatch.setattr(bmv2_capacity, "measure_pps",
                        lambda b: (_ for _ in ()).throw(RuntimeError("switch s1 exited")))
    cap = bmv2_capacity.capacity(say=lambda *_: None)
    assert cap.pps == bmv2_capacity.FALLBACK_PPS
    assert cap.source == "assumed: measuring failed (switch s1 exited)"
    assert not bmv2_capacity.cache_path().exists()
