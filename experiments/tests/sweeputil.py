"""What the sweep tests share: a cheap virtual-time experiment point and
reading what the runs themselves wrote."""
import json
from pathlib import Path

#: dctcp-theory with two flows for half a simulated second: a second or two a point
CHEAP = ["ns=2", "duration=0.5", "warmup=0.1"]


def attempts(out: Path) -> list[dict]:
    f = Path(out) / "attempts.log"
    lines = [json.loads(l) for l in f.read_text().splitlines()] if f.exists() else []
    return [a for a in lines if "started" in a]   # runs started (not their errors)


def point_meta(out: Path) -> dict[str, dict]:
    """key -> point.json of every finished point."""
    return {p.parent.name: json.loads(p.read_text())
            for p in (Path(out) / "points").glob("*/point.json")}
