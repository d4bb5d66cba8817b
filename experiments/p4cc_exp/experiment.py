"""What an experiment definition provides: its parameters, the plan of a
run, and the analysis and plots of a results folder."""
from __future__ import annotations

from pathlib import Path

from p4cc_topo.plan import ArmPlan, Plan

from .params import Param


class Experiment:
    id: str = ""
    title: str = ""
    source: str = ""               # the paper figure it reproduces
    description: str = ""
    params: list[Param] = []
    #: `--scale paper`: the paper's own parameters (as `--set` strings); such
    #: runs go to the virtual-time executor (docs/experiments.md lists them).
    paper: list[str] = []
    #: The parameter that sets every link's rate in the plan (the packet
    #: load scales with it), if there is one: a run on bmv2 whose load is
    #: beyond what bmv2 forwards on the machine is slowed to a rate it can
    #: carry, unless the user set this parameter (runner.fit_to_bmv2).
    rate_param: str | None = None
    #: Where `p4cc run` runs it without --target: "auto" (the namespace
    #: lab), or "sim" for one the lab cannot carry at its default scale.
    default_target: str = "auto"

    def arms(self, p: dict) -> list[ArmPlan]:
        """The runs the experiment compares, each a self-contained arm plan."""
        raise NotImplementedError

    def plan(self, p: dict, scale: str = "default") -> Plan:
        """The scenario plan of a run with parameters ``p``."""
        return Plan(experiment=self.id, title=self.title, source=self.source,
                    description=self.description, params=dict(p), seed=int(p.get("seed", 1)),
                    arms=tuple(self.arms(p)), scale=scale).check()

    def analyse(self, p: dict, results: dict[str, dict]) -> tuple[dict, dict[str, bool]]:
        """(summary, named checks) from the arms' results (results.arm_result)."""
        raise NotImplementedError

    def plot(self, p: dict, results: dict[str, dict], summary: dict, outdir: Path) -> list[Path]:
        raise NotImplementedError
