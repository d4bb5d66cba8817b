"""Where a run or a sweep writes when not told (--out): a new folder under
results/ named for the experiment and the second it started. Two runs
started in the same second (two shells, a script, a benchmark beside a
run) get a folder each instead of writing into one another's."""
from __future__ import annotations

import itertools
from datetime import datetime
from pathlib import Path


def stamp() -> str:
    """The start time as folder names carry it."""
    return datetime.now().strftime("%Y%m%d-%H%M%S")


def new_dir(parent: Path, name: str) -> Path:
    """``parent/name``, created by this call; ``name-2``, ``name-3``, … when
    another run holds it."""
    parent.mkdir(parents=True, exist_ok=True)
    for n in itertools.count(1):
        d = parent / (name if n == 1 else f"{name}-{n}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
