"""Every registered experiment resolves its defaults and builds a checked
scenario plan without touching the network; the plan survives JSON."""
import json

import pytest

from p4cc_exp.registry import EXPERIMENTS, get
from p4cc_exp.runner import make_plan
from p4cc_topo.plan import Plan


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_experiment_definition_is_complete(name):
    exp = get(name)
    assert exp.title and exp.source and exp.description
    plan = make_plan(exp)
    assert plan.arms and len({a.name for a in plan.arms}) == len(plan.arms)
    for arm in plan.arms:
        assert arm.end_s() > arm.warmup_s >= 0
        assert arm.senders(), f"{arm.name} has no sender"
        assert arm.measure.queue is not None
    again = Plan.from_json(json.loads(plan.dumps()))
    assert again == plan


def test_unknown_experiment_names_the_known_ones():
    with pytest.raises(KeyError, match="dctcp-queue"):
        get("nope")


def test_pcc_fct_arms_last_as_long_as_their_arrivals():
    from p4cc_exp.params import resolve
    exp = get("pcc-fct")
    p = resolve(exp.params, ["loads=0.2,0.8"])
    arms = exp.arms(p)
    assert [a.settings["load"] for a in arms] == [0.2] * 3 + [0.8] * 3  # Allegro, Vivace, Cubic
    slow, fast = arms[0].end_s(), arms[-1].end_s()
    tail = 40 * p["rtt"]
    # 100 flows of 100 KB at 20 % of 15 Mbps take 4 times as long as at 80 %
    assert slow - tail == pytest.approx(4 * (fast - tail))
    assert slow - tail == pytest.approx(100 * 100_000 * 8 / (0.2 * 15e6))
    with pytest.raises(ValueError):
        exp.arms(resolve(exp.params, ["loads=0,0.5"]))


def test_pcc_convergence_measures_the_shared_link():
    plan = make_plan(get("pcc-convergence"))
    arm = plan.arms[0]
    q = arm.measure.queue
    assert q.switch == "s1" and arm.switches["s1"].ports[q.port].peer == "s2"
    assert arm.measure.queue_switch_id == 1
