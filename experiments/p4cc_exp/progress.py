"""A one-line progress display: phase, bar, elapsed and time left.

Experiments know their schedule up front (phases with planned durations),
so time left is the planned remainder, less what the current phase has
used. In the namespace lab a phase takes about its planned time. In
virtual time it does not: an arm planned as its simulated duration takes
whatever the simulator needs, a small or large multiple of it, so with
``learn`` the remainder is scaled by what the finished phases took against
their plan. On a non-terminal (CI logs) it prints one line per phase
instead of redrawing.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field


def fmt_secs(s: float) -> str:
    s = max(0, int(round(s)))
    return f"{s // 60}:{s % 60:02d}"


@dataclass
class Progress:
    total_planned_s: float
    stream: object = field(default_factory=lambda: sys.stderr)
    width: int = 28
    #: Scale time left by the finished phases' actual/planned (virtual time).
    learn: bool = False
    _start: float = field(default_factory=time.monotonic)
    _done_planned: float = 0.0
    _done_actual: float = 0.0
    _phase: str = "starting"
    _phase_start: float = field(default_factory=time.monotonic)
    _phase_planned: float = 0.0
    _last_draw: float = 0.0

    @property
    def tty(self) -> bool:
        return hasattr(self.stream, "isatty") and self.stream.isatty()

    def phase(self, name: str, planned_s: float) -> None:
        """Start a phase; the previous one counts as done."""
        now = time.monotonic()
        self._done_planned += self._phase_planned
        if self._phase_planned > 0:  # (not the unplanned start)
            self._done_actual += now - self._phase_start
        self._phase, self._phase_planned = name, planned_s
        self._phase_start = now
        if not self.tty:
            print(f"[p4cc] {name} (~{fmt_secs(planned_s * self.scale())}, "
                  f"~{fmt_secs(self.left())} left)", file=self.stream, flush=True)
        self.draw(force=True)

    def note(self, message: str) -> None:
        """One line of the run log (what was set up, chosen, skipped)."""
        if self.tty:
            self.stream.write("\r" + " " * 100 + "\r")
        print(f"[p4cc] {message}", file=self.stream, flush=True)
        self.draw(force=True)

    def simulated(self, sim_s: float, until_s: float, events_per_s: float, wall_s: float) -> None:
        """Where a virtual-time run stands: simulated seconds done of the
        arm's, event rate, and the wall time that is likely left."""
        left = (until_s - sim_s) * wall_s / sim_s if sim_s > 0 else 0.0
        line = (f"{self._phase}: simulated {sim_s:.3f} of {until_s:.3f} s, "
                f"{events_per_s / 1e3:.0f}k events/s, ~{fmt_secs(left)} wall left")
        if self.tty:
            self.stream.write("\r" + line[:110].ljust(110))
            self.stream.flush()
        elif time.monotonic() - self._last_draw >= 10:
            print(f"[p4cc] {line}", file=self.stream, flush=True)
            self._last_draw = time.monotonic()

    def scale(self) -> float:
        """How long phases take for each second planned: 1 until a phase
        has finished, or without ``learn``."""
        if not self.learn or self._done_planned <= 0:
            return 1.0
        return self._done_actual / self._done_planned

    def left(self) -> float:
        k = self.scale()
        in_phase = max(0.0, self._phase_planned * k - (time.monotonic() - self._phase_start))
        after = max(0.0, self.total_planned_s - self._done_planned - self._phase_planned)
        return after * k + in_phase

    def fraction(self) -> float:
        k = self.scale()
        if self.total_planned_s <= 0 or k <= 0:
            return 1.0
        return min(1.0, max(0.0, 1.0 - self.left() / (self.total_planned_s * k)))

    def draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.tty or (not force and now - self._last_draw < 0.25):
            return
        self._last_draw = now
        filled = int(self.fraction() * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        line = (f"\r[{bar}] {self.fraction() * 100:3.0f}%  {self._phase:<28.28}"
                f" elapsed {fmt_secs(now - self._start)}  left {fmt_secs(self.left())} ")
        self.stream.write(line)
        self.stream.flush()

    def sleep(self, seconds: float, alive=None) -> None:
        """Sleep while redrawing; `alive()` returning an error string aborts."""
        end = time.monotonic() + seconds
        while (rest := end - time.monotonic()) > 0:
            time.sleep(min(0.25, rest))
            self.draw()
            if alive is not None and (err := alive()):
                raise RuntimeError(err)

    def finish(self, message: str = "done") -> None:
        if self.tty:
            self.stream.write("\r" + " " * 100 + "\r")
        print(f"[p4cc] {message} in {fmt_secs(time.monotonic() - self._start)}",
              file=self.stream, flush=True)


@dataclass
class SweepProgress:
    """A sweep's line: points done / running / failed of the total, and the
    time left from the points finished so far (their mean wall time, over
    how many run at once)."""
    total: int
    slots: int
    stream: object = field(default_factory=lambda: sys.stderr)
    done: int = 0
    failed: int = 0
    running: int = 0
    _start: float = field(default_factory=time.monotonic)
    _walls: list = field(default_factory=list)
    _last: float = 0.0
    _last_line: str = ""

    def update(self, done: int, running: int, failed: int, wall_s: float | None = None,
               force: bool = False) -> None:
        self.done, self.running, self.failed = done, running, failed
        if wall_s is not None:
            self._walls.append(wall_s)
        self.draw(force)

    def left(self) -> float | None:
        if not self._walls:
            return None
        rest = self.total - self.done - self.failed
        per = sum(self._walls) / len(self._walls)
        return per * rest / max(1, min(self.slots, rest or 1))

    def line(self) -> str:
        left = self.left()
        return (f"sweep: {self.done}/{self.total} done, {self.running} running, "
                f"{self.failed} failed, elapsed {fmt_secs(time.monotonic() - self._start)}, "
                + (f"~{fmt_secs(left)} left" if left is not None else "time left after the first point"))

    def draw(self, force: bool = False) -> None:
        now = time.monotonic()
        line = self.line()
        tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        if tty:
            if force or now - self._last >= 0.5:
                self.stream.write("\r" + line[:110].ljust(110))
                self.stream.flush()
                self._last = now
        elif force or now - self._last >= 30 or (line.split(", elapsed")[0] !=
                                                  self._last_line.split(", elapsed")[0]):
            print(f"[p4cc] {line}", file=self.stream, flush=True)
            self._last, self._last_line = now, line

    def note(self, message: str) -> None:
        if hasattr(self.stream, "isatty") and self.stream.isatty():
            self.stream.write("\r" + " " * 110 + "\r")
        print(f"[p4cc] {message}", file=self.stream, flush=True)

    def finish(self, message: str) -> None:
        self.note(f"{message} in {fmt_secs(time.monotonic() - self._start)}")
