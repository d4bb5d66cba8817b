"""Every registered experiment resolves its defaults, builds its topology
and its arms without touching the network."""
import pytest

from p4cc_exp.params import resolve
from p4cc_exp.registry import EXPERIMENTS, get


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_experiment_definition_is_complete(name):
    exp = get(name)
    assert exp.title and exp.source and exp.description
    p = resolve(exp.params, [])
    topo = exp.topology(p)
    arms = exp.arms(p)
    assert arms and len({a.name for a in arms}) == len(arms)
    assert exp.arm_seconds(p) > 0
    assert topo is not None


def test_unknown_experiment_names_the_known_ones():
    with pytest.raises(KeyError, match="dctcp-queue"):
        get("nope")


def test_pcc_fct_arms_last_as_long_as_their_arrivals():
    from p4cc_exp.params import resolve
    exp = get("pcc-fct")
    p = resolve(exp.params, ["loads=0.2,0.8"])
    arms = exp.arms(p)
    assert [a.settings["load"] for a in arms] == [0.2, 0.2, 0.8, 0.8]
    slow, fast = exp.run_seconds(p, arms[0]), exp.run_seconds(p, arms[-1])
    tail = 40 * p["rtt"]
    # 100 flows of 100 KB at 20 % of 15 Mbps take 4 times as long as at 80 %
    assert slow - tail == pytest.approx(4 * (fast - tail))
    assert slow - tail == pytest.approx(100 * 100_000 * 8 / (0.2 * 15e6))
    with pytest.raises(ValueError):
        exp.arms(resolve(exp.params, ["loads=0,0.5"]))
