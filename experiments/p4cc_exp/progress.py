"""A one-line progress display: phase, bar, elapsed and time left.

Experiments know their schedule up front (phases with planned durations),
so time left is the planned remainder, less what the current phase has
used. In the namespace lab a phase takes about its planned time. In
virtual time it does not: an arm takes whatever the simulator needs for
the packets it carries, not its simulated duration (pcc-fct's arms carry
the same flows over durations nine times apart), so there (``arms``) time
left is the arms still to run at the mean time the finished ones took,
and before the first has finished it is not guessed. On a non-terminal
(CI logs) it prints one line per phase instead of redrawing.
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
    #: Virtual time: the run's arms, whose mean time gives the time left
    #: (0: the planned remainder, as in the lab); `arm_done` counts them.
    arms: int = 0
    #: Planned time after the last arm (analysis).
    tail_s: float = 0.0
    _start: float = field(default_factory=time.monotonic)
    _done_planned: float = 0.0
    _arms_done: int = 0
    _arms_time: float = 0.0
    _arm_start: float | None = None
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
        self._phase, self._phase_planned = name, planned_s
        self._phase_start = now
        if self._arm_start is None:
            self._arm_start = now
        if not self.tty:
            left = self.left()
            print(f"[p4cc] {name} ("
                  + (f"~{fmt_secs(planned_s)}, " if not self.arms else "")
                  + (f"~{fmt_secs(left)} left)" if left is not None
                     else "time left after the first arm)"), file=self.stream, flush=True)
        self.draw(force=True)

    def arm_done(self) -> None:
        """An arm (its set-up and its run) is over (with ``arms``)."""
        now = time.monotonic()
        if self._arm_start is not None:
            self._arms_time += now - self._arm_start
        self._arms_done += 1
        self._arm_start = now

    def note(self, message: str) -> None:
        """One line of the run log (what was set up, chosen, skipped)."""
        if self.tty:
            self.stream.write("\r" + " " * 100 + "\r")
        print(f"[p4cc] {message}", file=self.stream, flush=True)
        self.draw(force=True)

    def simulated(self, sim_s: float, until_s: float, events_per_s: float, wall_s: float,
                  finishing: bool = False) -> None:
        """Where a virtual-time run stands: simulated seconds done of the
        arm's, event rate, and the wall time that is likely left. While
        ``finishing`` (the flows still running after the schedule ends)
        ``until_s`` is only a cap, so no wall time is extrapolated to it."""
        if finishing:
            line = (f"{self._phase}: simulated {sim_s:.3f} s, letting the flows still running "
                    f"finish (until {until_s:.3f} s at most), {events_per_s / 1e3:.0f}k events/s")
        else:
            left = (until_s - sim_s) * wall_s / sim_s if sim_s > 0 else 0.0
            line = (f"{self._phase}: simulated {sim_s:.3f} of {until_s:.3f} s, "
                    f"{events_per_s / 1e3:.0f}k events/s, ~{fmt_secs(left)} wall left")
        if self.tty:
            self.stream.write("\r" + line[:110].ljust(110))
            self.stream.flush()
        elif time.monotonic() - self._last_draw >= 10:
            print(f"[p4cc] {line}", file=self.stream, flush=True)
            self._last_draw = time.monotonic()

    def left(self) -> float | None:
        """Seconds left; None in virtual time before an arm has finished."""
        now = time.monotonic()
        if self.arms:
            if self._arms_done >= self.arms:  # the analysis
                return max(0.0, self.tail_s - (now - self._phase_start))
            if self._arms_done == 0:
                return None
            mean = self._arms_time / self._arms_done
            in_arm = now - self._arm_start if self._arm_start is not None else 0.0
            return max(0.0, (self.arms - self._arms_done) * mean - in_arm) + self.tail_s
        in_phase = min(now - self._phase_start, self._phase_planned)
        return max(0.0, self.total_planned_s - self._done_planned - in_phase)

    def fraction(self) -> float:
        left = self.left()
        if left is None:
            return 0.0
        if self.arms:
            elapsed = time.monotonic() - self._start
            return min(1.0, elapsed / (elapsed + left)) if elapsed + left > 0 else 1.0
        if self.total_planned_s <= 0:
            return 1.0
        return min(1.0, 1.0 - left / self.total_planned_s)

    def draw(self, force: bool = False) -> None:
        now = time.monotonic()
        if not self.tty or (not force and now - self._last_draw < 0.25):
            return
        self._last_draw = now
        left = self.left()
        left_text = fmt_secs(left) if left is not None else "after the first arm"
        done = self.fraction()
        filled = int(done * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        line = (f"\r[{bar}] {done * 100:3.0f}%  {self._phase:<28.28}"
                f" elapsed {fmt_secs(now - self._start)}  left {left_text} ")
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
