"""What an experiment definition provides to the runner."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .params import Param


@dataclass(frozen=True)
class Arm:
    """One configuration the experiment compares (e.g. DCTCP on kernel TCP)."""
    name: str                      # folder name, e.g. "kernel-dctcp"
    label: str                     # for plots, e.g. "DCTCP (kernel)"
    settings: dict = field(default_factory=dict)


class Experiment:
    id: str = ""
    title: str = ""
    source: str = ""               # the paper figure it reproduces
    description: str = ""
    params: list[Param] = []

    def topology(self, p: dict) -> Any:
        raise NotImplementedError

    def arms(self, p: dict) -> list[Arm]:
        raise NotImplementedError

    def arm_topology(self, p: dict, arm: Arm) -> Any:
        """The topology of one arm (a sweep over link properties changes it)."""
        return self.topology(p)

    def arm_seconds(self, p: dict, arm: Arm | None = None) -> float:
        """Planned wall time of an arm (for the progress display)."""
        raise NotImplementedError

    def postcard_one_in_n(self, p: dict) -> int:
        return 1

    def run_arm(self, lab, arm: Arm, p: dict, progress, outdir: Path) -> dict:
        raise NotImplementedError

    def analyse(self, p: dict, results: dict[str, dict]) -> tuple[dict, dict[str, bool]]:
        """(summary, named checks of the expected behaviour)."""
        raise NotImplementedError

    def plot(self, p: dict, results: dict[str, dict], summary: dict, outdir: Path) -> list[Path]:
        raise NotImplementedError
