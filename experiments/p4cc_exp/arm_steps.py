"""What every executor does in an arm at the same instants: the plan's
events applied through the controller, and the measured ports' counters
read after the warm-up and just before the end. The namespace lab
(executors) and virtual time (simexec) both take their steps from here,
so the two read the same counters at the same points of a run.
"""
from __future__ import annotations

from p4cc_topo.plan import ArmPlan

from .fidelity import admin_ports

#: The last counter reading is this long before the traffic ends (at most a
#: tenth of the measured span, for short runs).
END_MARGIN_S = 0.5


class ExecutorError(RuntimeError):
    """A run cannot start or went wrong (one line)."""


def read_name(at_s: float) -> str:
    """The key of a counter reading the plan asks for at ``at_s``."""
    return f"at_{at_s:g}s"


def schedule(arm: ArmPlan) -> list[tuple[float, str, object]]:
    """What happens when, in seconds from the traffic start: the plan's
    events, and the counter readings after the warm-up, at the plan's
    extra instants (Measure.reads_at_s) and just before the end."""
    margin = min(END_MARGIN_S, (arm.end_s() - arm.warmup_s) / 10)
    return sorted([(e.at_s, "event", e) for e in arm.events]
                  + [(arm.warmup_s, "read", "start")]
                  + [(t, "read", read_name(t)) for t in arm.measure.reads_at_s]
                  + [(arm.end_s() - margin, "read", "end")], key=lambda x: x[0])


def apply_event(sw, e) -> None:
    """A plan event (a setting that changes mid-run), through the controller."""
    ops = sw.ops[e.switch]
    s = dict(e.set)
    if "ecn_k_pkts" in s:
        k = s.pop("ecn_k_pkts")
        ops.clear_k(e.port) if k is None else ops.set_k(e.port, k)
    if s:
        ops.set_queue(e.port, **s)


def read_ports(arm: ArmPlan, sw, eps: dict, clock=None) -> dict:
    """The measured ports' P4 counters, and where the switch has an admin
    API (embedded, sim) the bytes it put on the wire (``wire_tx_bytes``) and
    the packets its egress queue admitted and dropped (``wire_enq_pkts``,
    ``wire_tail_drops``).
    P4 byte counters count a packet's length as it arrived, as bmv2's do,
    so they miss the hop record the switch pushes at egress (~1.4 % of a
    user-space transport's traffic). With ``clock`` (real time) each wire
    reading also gets the instant it was taken, the middle of its admin
    request (``wire_unix_ns``): a reading stamped before the P4Runtime reads
    that precede it counted bytes sent after its stamp, which read as more
    than the line rate."""
    out = {}
    wire = {}  # switch -> ({port: admin counters}, the reading's instant or None)
    for r in arm.measure.ports:
        row = dict(sw.ops[r.switch].port_counters([r.port])[r.port])
        if r.switch not in wire:
            t0 = clock() if clock else None
            sent = _admin_counters(eps.get(r.switch))
            wire[r.switch] = (sent, (t0 + clock()) // 2 if clock else None)
        sent, at = wire[r.switch]
        if r.port in sent:
            row.update(sent[r.port])
            if at is not None:
                row["wire_unix_ns"] = at
        out[r.key()] = row
    return out


#: Admin-API port counters kept with each reading, as wire_<name>: the bytes
#: put on the wire, and the packets the egress queue admitted and refused
#: (tail drops), from which the bottleneck's loss rate follows.
ADMIN_COUNTERS = ("tx_bytes", "enq_pkts", "tail_drops")


def _admin_counters(ep) -> dict[int, dict[str, int]]:
    """{port: {wire_tx_bytes, wire_enq_pkts, wire_tail_drops}} from a
    switch's admin API (those it reports); {} without one."""
    return {int(p["port"]): {f"wire_{k}": int(p[k]) for k in ADMIN_COUNTERS if k in p}
            for p in admin_ports(ep) or [] if "tx_bytes" in p}


__all__ = ["ExecutorError", "schedule", "apply_event", "read_ports", "END_MARGIN_S"]
