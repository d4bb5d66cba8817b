"""Realtime scheduling, on request, for the parts of a real-time run that
keep time.

The embedded switch's packet thread sends each frame at its departure
instant, and the user-space senders pace and the receivers ACK on time. On
the ordinary scheduler any other load on the machine — a compiler, a
browser, two busy loops at nice 19 — delays their wake-ups by milliseconds
(measured: p99 departure slip 0.85–2.4 ms beside two nice-19 loops, against
a 120 µs packet time at 100 Mb/s), and the fidelity monitor voids the run.
As SCHED_FIFO (``P4CC_REALTIME=all``) they run as soon as they wake, ahead
of every ordinary task. It is not the default: with nothing else running it
makes runs with many senders worse (DEFAULT_MODE below).
They sleep between packets, and the kernel's realtime throttling
(kernel.sched_rt_runtime_us, 95 % by default) leaves the rest of the
machine its share even if one of them spun.

docs/fidelity.md has the measurements behind this.
"""
from __future__ import annotations

import os

# The switch above the agents: a departure is due at a fixed instant, a
# sender's next packet only after it.
SWITCH_PRIO = 20
AGENT_PRIO = 10
# Off unless asked: on an otherwise idle 2-core machine the switch's
# spin-waits as SCHED_FIFO take CPU the senders then lack (pcc-convergence's
# four senders: p99 wake-up lateness 120–150 µs ordinary, 194–267 µs with
# the switch realtime, 214–360 µs with everything realtime).
DEFAULT_MODE = "off"
MODES = ("all", "switch", "off")


def fifo_available() -> str | None:
    """None if this process may make threads SCHED_FIFO, else why not."""
    if not hasattr(os, "sched_setscheduler"):
        return "this platform has no sched_setscheduler"
    pid = os.fork()
    if pid == 0:  # the probe changes only the child
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            os._exit(0)
        except OSError:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) == 0:
        return None
    return "SCHED_FIFO is not permitted here (needs root or CAP_SYS_NICE, and realtime runtime for the cgroup)"


class Realtime:
    """Whether a run's switch and agents run as SCHED_FIFO, and the run-log
    line that says so. ``P4CC_REALTIME``: ``all`` (the switch and the
    user-space agents), ``switch`` (the switch alone) or ``0``/``off`` (the
    ordinary scheduler, for measuring the difference)."""

    def __init__(self, mode: str | None = None):
        if mode is None:
            mode = os.environ.get("P4CC_REALTIME", DEFAULT_MODE)
        mode = {"0": "off", "1": "all"}.get(mode, mode)
        if mode not in MODES:
            raise ValueError(f"P4CC_REALTIME={mode!r}: one of all, switch, off (or 1, 0)")
        why_not = fifo_available() if mode != "off" else None
        self.mode = mode if why_not is None else "off"
        if self.mode == "all":
            self.message = (f"realtime: the embedded switch's packet thread runs as SCHED_FIFO {SWITCH_PRIO}, "
                            f"the user-space senders' and receivers' loops as SCHED_FIFO "
                            f"{AGENT_PRIO}, so other load on the machine does not delay them "
                            f"(P4CC_REALTIME=switch|off changes it)")
        elif self.mode == "switch":
            self.message = (f"realtime: the embedded switch's packet thread runs as SCHED_FIFO {SWITCH_PRIO}, "
                            f"so other load on the machine does not delay its departures; the agents "
                            f"are ordinary tasks (P4CC_REALTIME=all|off changes it)")
        elif why_not is None:
            self.message = ("realtime: off: the switch and agents run on the ordinary scheduler "
                            "(P4CC_REALTIME=all if other load shares the machine; docs/fidelity.md)")
        else:
            self.message = f"realtime: unavailable ({why_not}): the switch and agents run on the ordinary scheduler"

    @property
    def on(self) -> bool:
        return self.mode != "off"

    @property
    def switch_prio(self) -> int | None:
        return SWITCH_PRIO if self.mode in ("all", "switch") else None

    @property
    def agent_prio(self) -> int | None:
        return AGENT_PRIO if self.mode == "all" else None
