"""What an experiment definition provides: its parameters, the plan of a
run, and the analysis and plots of a results folder."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from p4cc_topo.plan import ArmPlan, Plan

from .params import Param


@dataclass(frozen=True)
class Headline:
    """A number a sweep's report draws against each swept parameter: a
    value of the summary (dotted: ``arm.name``; ``name`` alone also matches
    it under every arm, one line each), and optionally the analysis' value
    of the same point to draw beside it and against it."""
    metric: str
    label: str
    theory: str | None = None
    theory_label: str = ""


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
    #: Why the experiment cannot run in virtual time, if it cannot (e.g. it
    #: compares an implementation with the kernel's, and virtual time has no
    #: kernel): `--target sim` and `--scale paper` are refused with this.
    real_time_only: str | None = None
    #: Whether an external arm's senders each send one flow of a size and
    #: exit (a file sender), not a long flow over a window: references are
    #: then the programs the ``_FLOW`` variables name (blocks.external_commands).
    one_flow_senders: bool = False

    #: What `p4cc sweep`'s report plots (sweepreport.py); none: every
    #: numeric summary value that varies across the sweep's points.
    headlines: list[Headline] = []

    def sweep_values(self, p: dict, summary: dict) -> dict:
        """Numbers of one point for a sweep's table beside its summary's
        own (e.g. a peak and its predicted value under one name whichever
        arm the point has); dotted names, like the summary's."""
        return {}
    #: Where `p4cc run` runs it without --target: "auto" (the namespace
    #: lab), or "sim" for one the lab cannot carry at its default scale.
    default_target: str = "auto"

    def arms(self, p: dict) -> list[ArmPlan]:
        """The runs the experiment compares, each a self-contained arm plan."""
        raise NotImplementedError

    def plan(self, p: dict, scale: str = "default") -> Plan:
        """The scenario plan of a run with parameters ``p``."""
        if p.get("reference"):
            from .blocks import with_references
            p = dict(p, protocols=with_references(p["protocols"], p["reference"]))
        return Plan(experiment=self.id, title=self.title, source=self.source,
                    description=self.description, params=dict(p), seed=int(p.get("seed", 1)),
                    arms=tuple(self.arms(p)), scale=scale,
                    notes=tuple(self.skipped(p))).check()

    def skipped(self, p: dict) -> list[str]:
        """Why arms the parameters ask for are not in the plan (reference
        implementations this machine was not given), one line each."""
        from .blocks import SkipArm, external_commands, is_external
        out = []
        for cc in p.get("protocols") or []:
            if is_external(cc):
                try:
                    external_commands(cc, p, self.one_flow_senders)
                except SkipArm as e:
                    out.append(str(e))
        return out

    def analyse(self, p: dict, results: dict[str, dict]) -> tuple[dict, dict[str, bool]]:
        """(summary, named checks) from the arms' results (results.arm_result)."""
        raise NotImplementedError

    def plot(self, p: dict, results: dict[str, dict], summary: dict, outdir: Path) -> list[Path]:
        raise NotImplementedError
