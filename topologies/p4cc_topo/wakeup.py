"""Keeping the CPUs a real-time run uses awake.

On a VM whose idle vCPUs halt (cpuidle driver ``haltpoll``: POLL, then
halt), waking a halted vCPU costs tens to hundreds of µs. Every sleep of
the switch's packet thread, of the host agents' pacers and of the kernel's
TCP timers pays that, and at 100 Mb/s (120 µs per packet) the queue drains
between bursts: a quiet machine is the worst case for emulation. Holding
``/dev/cpu_dma_latency`` at 0 is the kernel's PM-QoS request "no idle state
with any exit latency": idle CPUs then poll instead of halting, for as long
as the file stays open, and the kernel drops the request when it closes —
also when the process dies, so a killed run restores the machine.

docs/fidelity.md has the measurements behind this.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

DEV = Path("/dev/cpu_dma_latency")


def idle_states() -> list[str]:
    """Names of cpu0's idle states (e.g. ['POLL', 'halt'])."""
    base = Path("/sys/devices/system/cpu/cpu0/cpuidle")
    out = []
    for d in sorted(base.glob("state*")):
        try:
            out.append((d / "name").read_text().strip())
        except OSError:
            pass
    return out


def idle_driver() -> str:
    try:
        return Path("/sys/devices/system/cpu/cpuidle/current_driver").read_text().strip()
    except OSError:
        return "none"


class KeepCpusAwake:
    """Context manager: holds the PM-QoS CPU latency request at 0 µs while
    open. ``message`` says what was done, for the run log; ``held`` whether
    it took effect. ``enabled=False`` (``P4CC_KEEP_AWAKE=0``) does nothing,
    for measuring the difference."""

    def __init__(self, enabled: bool | None = None):
        if enabled is None:
            enabled = os.environ.get("P4CC_KEEP_AWAKE", "1") != "0"
        self.enabled = enabled
        self.held = False
        self.message = ""
        self._fd: int | None = None

    def __enter__(self) -> "KeepCpusAwake":
        where = f"cpuidle driver {idle_driver()}, states {', '.join(idle_states()) or 'none'}"
        if not self.enabled:
            self.message = f"CPUs left to idle as they like (P4CC_KEEP_AWAKE=0; {where})"
            return self
        try:
            self._fd = os.open(DEV, os.O_WRONLY)
            os.write(self._fd, struct.pack("i", 0))
            self.held = True
            self.message = (f"holding {DEV} at 0 µs for the run: idle CPUs poll instead of "
                            f"sleeping ({where})")
        except OSError as e:
            self.message = (f"cannot hold {DEV} ({e.strerror}): idle CPUs may wake slowly "
                            f"({where})")
            self._fd = None
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.close(self._fd)  # the kernel drops the request with the file
            self._fd = None
            self.held = False
