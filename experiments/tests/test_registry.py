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
