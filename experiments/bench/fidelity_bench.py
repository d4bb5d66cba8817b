"""How faithful real-time emulation is on this machine: RUNS short
dctcp-queue runs (user-space arms, 100 Mb/s, embedded target) back to
back, and per run the fidelity monitor's figures against its bounds
(docs/fidelity.md): the switch's p99 departure slip, the senders' p99
wake-up lateness, CPU busy, and how many verdicts came out void.

    python experiments/bench/fidelity_bench.py [RUNS]   (default 3; root)

Figures, not a pass/fail: a quiet 2-core VM lands near the 1-packet
bound (120 µs at 100 Mb/s), so some runs are void; --target sim never is.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]),
                str(Path(__file__).resolve().parents[2] / "topologies"),
                str(Path(__file__).resolve().parents[2] / "control")]

from p4cc_exp.registry import get  # noqa: E402
from p4cc_exp.runner import run  # noqa: E402

SHORT = ["duration=4", "warmup=1", "datapaths=user"]


def figures(folder: Path) -> list[str]:
    s = json.loads((folder / "summary.json").read_text())
    rows = []
    for arm in sorted(s["fidelity"]):
        f = json.loads((folder / arm / "fidelity.json").read_text())
        slip = max((p["slip_ns"]["p99"] for sw in f["switches"].values() for p in sw.values()
                    if p["slip_ns"]["samples"]), default=0) / 1e3
        wake = " ".join(f"{h} {a['wake_late']['p99_us']:.0f}" for h, a in sorted(f["agents"].items())
                        if a.get("wake_late", {}).get("samples"))
        rows.append(f"  {arm:11s} bound τ {f['tau_us']:.0f} µs | p99 slip {slip:.0f} µs | "
                    f"p99 wake-up lateness (µs) {wake or '-'} | CPU busy "
                    f"{100 * f['machine']['busy_share']:.0f} % | faithful for queue "
                    f"{f['ok']['queue']}, rate {f['ok']['rate']}")
    c = s["counts"]
    rows.append(f"  verdicts: {c['pass']} pass, {c['fail']} fail, {c['void']} void")
    return rows


def main() -> int:
    if os.geteuid() != 0:
        print("fidelity bench: needs root (namespaces); skipped")
        return 0
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    void_runs = 0
    with tempfile.TemporaryDirectory(prefix="p4cc-fidelity-bench-") as tmp:
        for i in range(runs):
            out = Path(tmp) / f"r{i}"
            run(get("dctcp-queue"), target="embedded", overrides=SHORT, out=str(out))
            rows = figures(out)
            void_runs += json.loads((out / "summary.json").read_text())["counts"]["void"] > 0
            print(f"run {i + 1}/{runs}:", *rows, sep="\n")
    print(f"fidelity bench: {void_runs}/{runs} quiet runs had a void verdict "
          f"(dctcp-queue, user-space arms, 100 Mb/s, embedded)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
