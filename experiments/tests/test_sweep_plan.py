"""A sweep's points: the grid × seeds expansion, each point's plan exactly
what `p4cc run --plan-only` makes with the same values, and the key (hash)
that names its folder."""
import json

import pytest

from p4cc_exp.params import ParamError
from p4cc_exp.registry import get
from p4cc_exp.runner import make_plan
from p4cc_exp.sweepplan import canonical, expand, parse_grid, plan_key, seeds_of


def test_grid_times_seeds_in_order():
    exp = get("fct")
    pts = expand(exp, parse_grid(["load=0.3,0.5", "rtt=10ms,20ms"]), 3, "sim", ["flows=20"])
    assert len(pts) == 2 * 2 * 3
    assert [(p.grid["load"], p.grid["rtt"], p.seed) for p in pts[:4]] == [
        ("0.3", "10ms", 1), ("0.3", "10ms", 2), ("0.3", "10ms", 3), ("0.3", "20ms", 1)]
    # the seed goes into the experiment's seed parameter, and into the plan
    assert all(p.plan["params"]["seed"] == p.seed == p.plan["seed"] for p in pts)
    assert len({p.key for p in pts}) == len(pts)


def test_a_point_is_the_plan_run_would_write():
    exp = get("dctcp-theory")
    [p] = expand(exp, parse_grid(["k=65"]), 1, "sim", ["duration=1", "warmup=0.2", "ns=2"])
    plain = make_plan(exp, ["duration=1", "warmup=0.2", "ns=2", "k=65"]).to_json()
    assert p.plan == plain
    assert p.key == plan_key(plain, "sim")


def test_the_key_is_the_canonical_plan_and_target():
    exp = get("dctcp-theory")
    plan = make_plan(exp, ["ns=2"]).to_json()
    shuffled = json.loads(json.dumps(dict(reversed(list(plan.items())))))
    assert canonical(plan) == canonical(shuffled)
    assert plan_key(plan, "sim") == plan_key(shuffled, "sim")
    assert len(plan_key(plan, "sim")) == 16
    # real time and virtual time are different results of one plan
    assert plan_key(plan, "sim") != plan_key(plan, "embedded")
    # any change of the plan is a different point
    other = make_plan(exp, ["ns=2", "k=41"]).to_json()
    assert plan_key(other, "sim") != plan_key(plan, "sim")
    # and the same command gives the same keys again
    a = [p.key for p in expand(exp, parse_grid(["k=20,40"]), 2, "sim")]
    b = [p.key for p in expand(exp, parse_grid(["k=20,40"]), 2, "sim")]
    assert a == b


def test_seeds_start_at_the_experiments_seed():
    exp = get("fct")
    assert seeds_of(exp, [], 1) == [None]
    assert seeds_of(exp, [], 3) == [1, 2, 3]
    assert seeds_of(exp, ["seed=10"], 2) == [10, 11]


def test_list_values_and_bad_grids():
    assert parse_grid(["ns=2,10,40"]) == {"ns": ["2", "10", "40"]}
    assert parse_grid(["protocols=cubic,reno;dctcp"]) == {"protocols": ["cubic,reno", "dctcp"]}
    exp = get("dctcp-theory")
    with pytest.raises(ParamError, match="unknown parameter"):
        expand(exp, parse_grid(["nosuch=1,2"]), 1, "sim")
    with pytest.raises(ParamError, match="also given with --set"):
        expand(exp, parse_grid(["k=1,2"]), 1, "sim", ["k=3"])
    with pytest.raises(ParamError, match="NAME=V1"):
        parse_grid(["k"])
    with pytest.raises(ParamError, match="given twice"):
        parse_grid(["k=1,1"])
    with pytest.raises(ParamError, match="k=0"):
        expand(exp, parse_grid(["k=0,2"]), 1, "sim")


def test_the_command_refuses_bad_grids_in_one_line(capsys, tmp_path):
    from p4cc_exp.cli import main
    assert main(["sweep", "dctcp-theory", "--grid", "nosuch=1,2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown parameter" in err[0]
    assert main(["sweep", "fct", "--grid", "load=0.3", "--seeds", "0", "--out", str(tmp_path)]) == 2
    assert main(["sweep", "nosuch", "--grid", "k=1"]) == 2
    assert not (tmp_path / "sweep.json").exists()    # nothing written for a refused sweep
