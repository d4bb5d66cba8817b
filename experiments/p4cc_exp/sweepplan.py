"""A sweep's points: every combination of the grid's values × every seed,
each an ordinary scenario plan (what `p4cc run EXPERIMENT --plan-only`
writes with the same `--set` values, the point's grid values and its seed),
named by a hash of the plan and the target so that a finished point is
known again whoever asks."""
from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass

from .experiment import Experiment
from .params import ParamError
from .runner import make_plan


@dataclass(frozen=True)
class Point:
    key: str                    #: hash of the plan and the target: the point's folder name
    grid: dict                  #: swept parameter -> the value given on the command line
    seed: int | None
    overrides: tuple[str, ...]  #: the --set strings that make its plan
    plan: dict                  #: Plan.to_json()

    def label(self) -> str:
        parts = [f"{k}={v}" for k, v in self.grid.items()]
        if self.seed is not None:
            parts.append(f"seed={self.seed}")
        return " ".join(parts) or "defaults"


def parse_grid(items: list[str]) -> dict[str, list[str]]:
    """``NAME=V1,V2,…`` per item (values split at ';' instead when one
    holds ';', for parameters whose one value is itself a list)."""
    grid: dict[str, list[str]] = {}
    for item in items or []:
        name, sep, values = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            raise ParamError(f"--grid {item!r}: expected NAME=V1,V2,...")
        split = ";" if ";" in values else ","
        vals = [v.strip() for v in values.split(split) if v.strip()]
        if not vals:
            raise ParamError(f"--grid {item!r}: no values")
        if name in grid:
            raise ParamError(f"--grid {name}: given twice")
        if len(set(vals)) != len(vals):
            raise ParamError(f"--grid {name}: a value is given twice")
        grid[name] = vals
    return grid


def canonical(obj) -> str:
    """One JSON text per value: sorted keys, no spaces, no NaN."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def plan_key(plan_json: dict, target: str) -> str:
    """The point's name: 16 hex digits of the SHA-256 of the canonical plan
    and the target (the same plan in real and in virtual time are two
    results)."""
    return hashlib.sha256(canonical({"plan": plan_json, "target": target}).encode()).hexdigest()[:16]


def seeds_of(exp: Experiment, overrides: list[str], n: int) -> list[int | None]:
    """``n`` seeds from the experiment's seed (its default, or --set
    seed=S) on: S, S+1, …; [None] (the plan's own) for one."""
    if n < 1:
        raise ParamError("--seeds must be at least 1")
    names = {p.name for p in exp.params}
    if "seed" not in names:
        if n > 1:
            raise ParamError(f"{exp.id} has no seed parameter: --seeds does not apply")
        return [None]
    if n == 1:
        return [None]
    base = next((p.default for p in exp.params if p.name == "seed"), 1)
    for o in overrides:
        k, _, v = o.partition("=")
        if k.strip().replace("-", "_") == "seed":
            try:
                base = int(v)
            except ValueError:
                raise ParamError(f"--set seed={v}: not an integer") from None
    return [int(base) + i for i in range(n)]


def expand(exp: Experiment, grid: dict[str, list[str]], seeds: int, target: str,
           overrides: list[str] | None = None, scale: str = "default") -> list[Point]:
    """Every grid point × seed as a Point, in grid order (the first
    parameter slowest), seeds innermost."""
    overrides = list(overrides or [])
    names = {p.name for p in exp.params}
    set_names = {o.partition("=")[0].strip().replace("-", "_") for o in overrides}
    for name in grid:
        if name not in names:
            raise ParamError(f"--grid {name}: unknown parameter of {exp.id} "
                             f"(known: {', '.join(sorted(names))})")
        if name in set_names:
            raise ParamError(f"--grid {name}: also given with --set; give it once")
    seed_list = seeds_of(exp, overrides, seeds)
    if "seed" in grid and seed_list != [None]:
        raise ParamError("--grid seed and --seeds: use one of them")
    keys = list(grid)
    points, seen = [], set()
    for combo in itertools.product(*(grid[k] for k in keys)):
        values = dict(zip(keys, combo))
        for seed in seed_list:
            over = overrides + [f"{k}={v}" for k, v in values.items()]
            if seed is not None:
                over = [o for o in over if o.partition("=")[0].strip() != "seed"]
                over.append(f"seed={seed}")
            plan = make_plan(exp, over, scale).to_json()
            key = plan_key(plan, target)
            if key in seen:
                raise ParamError(f"--grid: {values} gives the same plan as another point")
            seen.add(key)
            points.append(Point(key, values, seed if seed is not None else plan.get("seed"),
                                tuple(over), plan))
    return points
