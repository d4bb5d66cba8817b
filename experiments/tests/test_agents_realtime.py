"""Realtime agents: the user-space transport's loops get --rt-prio where
p4cc-host takes it (udp gen before the workload, recv); kernel TCP and the
collector never do."""
import os
from pathlib import Path

import pytest

from p4cc_exp.agents import command
from p4cc_topo import realtime
from p4cc_topo.plan import Agent, Workload

OUT = Path("/r/arm/h1")


def ip(host):
    return {"rx": "10.0.0.250"}[host]


def single(dst="rx"):
    return Workload(kind="single", dsts=(dst,), bytes=1000)


def test_user_space_sender_and_receiver_run_realtime():
    gen = command(Agent("h1", "sender", cc="dctcp", workload=single()), ip, OUT, 5, rt_prio=10)
    assert gen[gen.index("--rt-prio") + 1] == "10"
    assert gen.index("--rt-prio") < gen.index("single"), "an option of gen, before its workload"
    recv = command(Agent("rx", "receiver"), ip, OUT, 0, rt_prio=10)
    assert recv[:1] == ["recv"] and recv[recv.index("--rt-prio") + 1] == "10"


@pytest.mark.parametrize("agent", [
    Agent("h1", "sender", datapath="kernel", cc="cubic", workload=single()),
    Agent("rx", "receiver", datapath="kernel", cc="cubic"),
    Agent("mon", "collector"),
])
def test_kernel_tcp_and_the_collector_stay_ordinary(agent):
    assert "--rt-prio" not in command(agent, ip, OUT, 5, rt_prio=10)


def test_without_a_priority_nothing_is_added():
    assert "--rt-prio" not in command(Agent("h1", "sender", cc="dctcp", workload=single()), ip, OUT, 5)


@pytest.mark.parametrize("value", ["0", "off"])
def test_off_says_so(monkeypatch, value):
    monkeypatch.setenv("P4CC_REALTIME", value)
    rt = realtime.Realtime()
    assert not rt.on and rt.switch_prio is None and rt.agent_prio is None
    assert rt.message.startswith("realtime: off")


def test_off_is_the_default(monkeypatch):
    monkeypatch.delenv("P4CC_REALTIME", raising=False)
    assert realtime.Realtime().mode == "off"


def test_a_bad_value_is_named(monkeypatch):
    monkeypatch.setenv("P4CC_REALTIME", "yes")
    with pytest.raises(ValueError, match="P4CC_REALTIME='yes': one of all, switch, off"):
        realtime.Realtime()


def test_unavailable_says_why(monkeypatch):
    monkeypatch.setattr(realtime, "fifo_available", lambda: "SCHED_FIFO is not permitted here")
    rt = realtime.Realtime("all")
    assert not rt.on and rt.agent_prio is None and rt.switch_prio is None
    assert rt.message.startswith("realtime: unavailable (SCHED_FIFO is not permitted here)")


@pytest.mark.skipif(os.geteuid() != 0, reason="SCHED_FIFO needs root")
@pytest.mark.parametrize("mode,switch,agents", [("all", realtime.SWITCH_PRIO, realtime.AGENT_PRIO),
                                                ("1", realtime.SWITCH_PRIO, realtime.AGENT_PRIO),
                                                ("switch", realtime.SWITCH_PRIO, None)])
def test_root_gets_it_and_the_probe_leaves_this_process_alone(mode, switch, agents):
    before = os.sched_getscheduler(0)
    rt = realtime.Realtime(mode)
    assert rt.on and (rt.switch_prio, rt.agent_prio) == (switch, agents)
    assert os.sched_getscheduler(0) == before
