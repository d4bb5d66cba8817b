"""The fidelity monitor of real-time runs: did the machine keep up with
what the plan emulates? Measured by the parts that know:

- the embedded switch, per port: how late each frame left against its link
  model's ideal departure (p50/p99/max slip), frames the kernel dropped
  because the receive ring was full, departures more than 100 ms late;
- the user-space host agents: pacing error against their intended send
  times, and how late their sleeps ended (wake-up lateness);
- the machine: CPU busy share, load average, and the CPU time the run's
  processes got;
- bmv2 (seen from outside): whether its egress kept the configured rate
  while its queue was not empty;
- p4cc's link emulator in front of bmv2's ports (p4cc_topo.links), per
  port: how late each frame was handed on against its propagation delay
  (release slip), frames its receive ring dropped.

Bounds depend on what a verdict is sensitive to (verdicts.QUEUE or RATE);
τ is one MTU packet's time at the measured bottleneck's rate:

- queue figures: bottleneck p99 slip ≤ τ (a depth read is off by less than
  a packet), senders' p99 wake lateness ≤ τ;
- throughput figures: bottleneck p99 slip ≤ 10 τ, no departure clamped,
  senders' p99 wake lateness ≤ 10 τ and |mean pacing error| ≤ 5 %;
- both: ring drops ≤ 0.1 % of the frames a port received; bmv2's egress
  at ≥ 90 % of its rate while busy;
- link emulator ports: ring drops as above; p99 release slip ≤ τ (queue
  figures) and ≤ 10 τ (throughput figures), as the bottleneck's departures.

docs/fidelity.md explains each bound and what was measured with it.
"""
from __future__ import annotations

import json
import os
import re
import time
import urllib.request
from pathlib import Path

from .verdicts import QUEUE, RATE

MTU_BITS = 1500 * 8
RING_DROP_MAX = 0.001
PACING_ERROR_MAX_PCT = 5.0
QUEUE_TAUS, RATE_TAUS = 1.0, 10.0
BMV2_KEEPUP_MIN = 0.9
#: Pacing statistics need this many samples to mean something.
MIN_PACING_SAMPLES = 100


def _cpu_times() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [float(x) for x in f.readline().split()[1:]]
    idle = v[3] + (v[4] if len(v) > 4 else 0.0)
    return sum(v) - idle, sum(v)


def _proc_cpu_s(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
        fields = data[data.rfind(")") + 2:].split()
        return (float(fields[11]) + float(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class RunMonitor:
    """Samples the machine and the run's processes between the start and
    end counter readings, then gathers what the switch and agents measured."""

    def __init__(self):
        self.t0 = self.cpu0 = None
        self.proc0: dict[int, float] = {}
        self.record: dict = {"exact": False}

    def start(self, pids: list[int]) -> None:
        self.t0 = time.monotonic()
        self.cpu0 = _cpu_times()
        self.proc0 = {p: c for p in pids if (c := _proc_cpu_s(p)) is not None}

    def end(self) -> None:
        wall = time.monotonic() - self.t0
        busy, total = _cpu_times()
        run_cpu = sum(max(0.0, (_proc_cpu_s(p) or c) - c) for p, c in self.proc0.items())
        ncpu = os.cpu_count() or 1
        self.record["machine"] = {
            "cpus": ncpu,
            "busy_share": (busy - self.cpu0[0]) / max(1e-9, total - self.cpu0[1]),
            "run_cpu_share": run_cpu / max(1e-9, wall * ncpu),
            "loadavg": open("/proc/loadavg").read().split()[:3],
            "window_s": wall,
        }

    def switches(self, endpoints: dict) -> None:
        """Per port of every embedded switch: slip, ring drops, clamps."""
        out = {}
        for name, ep in endpoints.items():
            ports = admin_ports(ep)
            if ports is None:
                continue
            out[name] = {str(p["port"]): {k: p.get(k) for k in (
                "rx_pkts", "ring_drops", "lag_clamps", "slip_ns", "tx_pkts")} for p in ports}
        self.record["switches"] = out

    def links(self, addrs: dict[str, str], ports: dict[str, list[int]]) -> None:
        """Per link emulator (by the switch it serves) and port: slip,
        ring drops, losses. Port P faces switch port P's peer; P + 256
        faces the switch."""
        out = {}
        for name, addr in addrs.items():
            table = admin_ports(addr)
            if table is None:
                out[name] = None  # did not answer: judged as a violation
                continue
            out[name] = {str(p["port"]): {k: p.get(k) for k in (
                "rx_pkts", "ring_drops", "slip_ns", "tx_pkts", "link_loss_drops", "delay_us")}
                for p in table}
        self.record["links"] = out

    def agents(self, outdir: Path, arm) -> None:
        """What each user-space sender measured of itself."""
        out = {}
        for a in arm.senders():
            p = Path(outdir) / a.folder / "sender_summary.json"
            try:
                s = json.loads(p.read_text())
            except (OSError, ValueError):
                continue
            if s.get("datapath") == "udp":
                out[a.folder] = {"pacing": s.get("pacing", {}), "wake_late": s.get("wake_late", {})}
        self.record["agents"] = out


def admin_ports(ep) -> list[dict] | None:
    """GET /ports of an admin API (the embedded switch's, the simulator's,
    the link emulator's), given its address or an endpoint that has one:
    per port its counters and slip; None without one or when it does not
    answer."""
    addr = ep if isinstance(ep, str) else getattr(ep, "admin_addr", None)
    if not addr:
        return None
    try:
        with urllib.request.urlopen(f"http://{addr}/ports", timeout=5) as r:
            return json.loads(r.read())
    except (OSError, ValueError):
        return None


def judge_arm(record: dict, arm, target: str, bmv2_keepup: float | None = None) -> dict:
    """Adds ``ok`` {queue, rate} and ``violations`` {queue: [...], rate: [...]}
    to a fidelity record of ``arm``."""
    viol = {QUEUE: [], RATE: []}
    if record.get("exact"):
        record.update(ok={QUEUE: True, RATE: True}, violations=viol)
        return record
    q = arm.measure.queue
    rate = (arm.switches[q.switch].ports[q.port].rate_bps if q else None) or 0
    tau_us = MTU_BITS / rate * 1e6 if rate else None
    record["tau_us"] = tau_us

    def both(msg):
        viol[QUEUE].append(msg)
        viol[RATE].append(msg)

    def in_packet_times(what: str, us: float) -> None:
        """A lateness against each class's bound in packet times τ."""
        for cls, taus in ((QUEUE, QUEUE_TAUS), (RATE, RATE_TAUS)):
            if us > taus * tau_us:
                viol[cls].append(f"{what} {us:.0f} µs > {taus * tau_us:.0f} µs ({taus:g} packet"
                                 f"{'s' if taus != 1 else ''} at {rate / 1e6:g} Mb/s)")

    for sw, ports in (record.get("switches") or {}).items():
        for port, p in ports.items():
            rx, drops = p.get("rx_pkts") or 0, p.get("ring_drops") or 0
            if rx and drops > RING_DROP_MAX * rx:
                # rx counts only what the switch read; the ring's drops never reached it.
                both(f"{sw} port {port}: {drops} of {rx + drops} arriving frames "
                     f"({drops / (rx + drops):.1%}) dropped by the full receive ring")
            if q and sw == q.switch and int(port) == q.port and tau_us:
                in_packet_times("p99 departure slip", (p.get("slip_ns") or {}).get("p99", 0) / 1e3)
                if p.get("lag_clamps"):
                    viol[RATE].append(f"{p['lag_clamps']} departures more than 100 ms late")
    for sw, ports in (record.get("links") or {}).items():
        if ports is None:
            both(f"the link emulator of {sw} did not report its ports")
            continue
        for port, p in ports.items():
            rx, drops = p.get("rx_pkts") or 0, p.get("ring_drops") or 0
            if drops > RING_DROP_MAX * max(rx, 1):
                both(f"{sw}'s link emulator port {port}: {drops} of {rx + drops} arriving frames "
                     f"({drops / (rx + drops):.1%}) dropped by the full receive ring")
            if tau_us:
                in_packet_times(f"{sw}'s link emulator port {port}: p99 release slip",
                                (p.get("slip_ns") or {}).get("p99", 0) / 1e3)
    for folder, a in (record.get("agents") or {}).items():
        late = (a.get("wake_late") or {}).get("p99_us")
        if tau_us and late is not None and (a.get("wake_late") or {}).get("samples", 0):
            in_packet_times(f"sender {folder}: p99 wake-up lateness", late)
        pac = a.get("pacing") or {}
        if pac.get("samples", 0) >= MIN_PACING_SAMPLES and \
                abs(pac.get("mean_error_pct", 0.0)) > PACING_ERROR_MAX_PCT:
            viol[RATE].append(f"sender {folder}: mean pacing error {pac['mean_error_pct']:.1f} % "
                              f"(> {PACING_ERROR_MAX_PCT:g} %)")
    if target == "bmv2" and bmv2_keepup is not None and bmv2_keepup < BMV2_KEEPUP_MIN:
        both(f"bmv2 sent at {bmv2_keepup * 100:.0f} % of its rate while its queue was busy "
             f"(< {BMV2_KEEPUP_MIN * 100:.0f} %)")
    record["bmv2_keepup"] = bmv2_keepup
    record.update(ok={k: not v for k, v in viol.items()}, violations=viol)
    return record


def summary_line(record: dict) -> str:
    """One line for the report's head."""
    if record.get("exact"):
        return "virtual time: exact by construction"
    parts = []
    m = record.get("machine") or {}
    if m:
        parts.append(f"CPU busy {m['busy_share'] * 100:.0f} %, run's processes "
                     f"{m['run_cpu_share'] * 100:.0f} %, load {' '.join(m['loadavg'])}")
    bad = sorted(set(record.get("violations", {}).get(QUEUE, [])
                     + record.get("violations", {}).get(RATE, [])))
    parts.append("within bounds" if not bad else "; ".join(grouped(bad)))
    return "; ".join(parts)


#: A lateness violation at one place: "<where>: p99 <what> <µs> µs > <bound>".
_LATE_AT = re.compile(r"^(?P<where>.+?): (?P<what>p99 [a-z -]+?) (?P<us>\d+) µs > (?P<bound>.+)$")


def grouped(violations: list[str]) -> list[str]:
    """The same lateness over one bound at several places as one entry
    (how many places, the worst and where), so a run that lagged on every
    port reads in one line; fidelity.json keeps each place's."""
    groups: dict[tuple[str, str], list[tuple[int, str]]] = {}
    out = []
    for v in violations:
        m = _LATE_AT.match(v)
        if m:
            groups.setdefault((m["what"], m["bound"]), []).append((int(m["us"]), m["where"]))
        else:
            out.append(v)
    for (what, bound), places in groups.items():
        us, where = max(places)
        if len(places) == 1:
            out.append(f"{where}: {what} {us} µs > {bound}")
        else:
            out.append(f"{what} > {bound} at {len(places)} places, worst {us} µs ({where})")
    return out
