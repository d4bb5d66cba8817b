"""What the namespace lab decides before building anything: which target
`auto` picks and why, and what a target cannot apply."""
import pytest

from p4cc_exp import executors
from p4cc_exp.executors import auto_target, capability_problems
from p4cc_exp.registry import get
from p4cc_exp.runner import make_plan


@pytest.fixture
def fake_bmv2(tmp_path, monkeypatch):
    sw = tmp_path / "simple_switch_grpc"
    sw.write_text("#!/bin/sh\n")
    sw.chmod(0o755)
    monkeypatch.setenv("P4CC_BMV2_BIN", str(sw))
    monkeypatch.setattr("p4cc_topo.targets._netem_cache", False)
    return sw


def test_bmv2_without_netem_names_the_property():
    plan = make_plan(get("pcc-lossy"), ["losses=0.02", "protocols=cubic"])
    import p4cc_topo.targets as t
    t._netem_cache = False
    probs = capability_problems(plan, "bmv2")
    assert any("delay_us=" in p and "needs netem" in p for p in probs)
    assert any("loss=0.02 needs netem" in p for p in probs)
    assert not any("rate" in p or "depth" in p for p in probs)   # bmv2 has queue rate and depth
    assert capability_problems(plan, "embedded") == []
    assert capability_problems(plan, "sim") == []


def test_pyfwd_refuses_every_link_property():
    plan = make_plan(get("dctcp-queue"))
    assert capability_problems(plan, "pyfwd")


def test_auto_says_why_it_picks_the_embedded_target(fake_bmv2):
    target, why = auto_target(make_plan(get("dctcp-queue")))
    assert target == "embedded" and "bmv2 cannot serve this run" in why and "netem" in why
    # no delay, but 100 Mb/s with ACKs and postcards: beyond bmv2's reach
    target, why = auto_target(make_plan(get("dctcp-queue"), ["rtt=0"]))
    assert target == "embedded" and "kpps" in why


def test_auto_picks_bmv2_when_it_can_serve_the_run(fake_bmv2):
    plan = make_plan(get("dctcp-queue"), ["rtt=0", "rate=10Mbps"])
    assert executors.bmv2_load_pps(plan) < executors.BMV2_MAX_PPS
    assert auto_target(plan) == ("bmv2", auto_target(plan)[1])
    assert "bmv2 is installed and can serve this run" in auto_target(plan)[1]


def test_auto_without_bmv2_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("P4CC_BMV2_BIN", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    target, why = auto_target(make_plan(get("dctcp-queue"), ["rtt=0", "rate=10Mbps"]))
    assert target == "embedded" and "not installed" in why
