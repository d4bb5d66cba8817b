"""How many packets per second bmv2 forwards on this machine, measured once.

bmv2 (simple_switch_grpc) is slow, and how slow depends on the machine,
the build and the program: 17–23 kpps on p4cc's 2-core test machines with
cc_switch, a few times that on a fast desktop. `--target auto` and the
rate `make run` picks for bmv2 rest on this figure, so it is measured here
rather than assumed: bmv2 runs p4cc's own program between two namespaces,
programmed by the controller with no rate limit and no link emulator, and
iperf (UDP, 1400-byte datagrams) offers more than it can take for a few
seconds; what reaches the receiver's interface per second is the capacity.

The figure is cached (``/var/cache/p4cc/bmv2-capacity.json``, or under
``$P4CC_CACHE``) with what it depends on — the binary (path, size, mtime),
the program's JSON, the CPU count and model — and measured again when any
of them changes. ``P4CC_BMV2_PPS=N`` sets it by hand; ``p4cc bmv2-capacity``
measures it now.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from p4cc_topo.targets import TargetUnavailable, find_bmv2

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "build" / "cc_switch.json"
#: What a run may ask of bmv2: this share of what it forwards at saturation
#: (its queue and the rest of the machine need the remainder).
USABLE_SHARE = 0.75
#: The figure used when no measurement is possible (the bmv2 binary does
#: not run, no root): the low end of what p4cc's 2-core machines measured
#: (17 kpps; docs/building-p4c.md).
FALLBACK_PPS = 17_000
MEASURE_S = 4.0
PAYLOAD_BYTES = 1400
OFFERED_BPS = 600_000_000


@dataclass(frozen=True)
class Capacity:
    pps: float
    #: how it is known: "measured <date>", "P4CC_BMV2_PPS", "assumed: <why>"
    source: str

    @property
    def usable_pps(self) -> float:
        return self.pps * USABLE_SHARE

    def describe(self) -> str:
        return f"bmv2 forwards about {self.pps / 1e3:.0f} kpps here ({self.source})"


def cache_path() -> Path:
    return Path(os.environ.get("P4CC_CACHE", "/var/cache/p4cc")) / "bmv2-capacity.json"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def fingerprint(binary: Path) -> dict:
    """What the figure depends on."""
    st = binary.stat()
    prog = hashlib.sha256(PROGRAM.read_bytes()).hexdigest()[:16] if PROGRAM.exists() else ""
    return {"binary": str(binary), "size": st.st_size, "mtime": int(st.st_mtime),
            "program": prog, "cpus": os.cpu_count(), "cpu_model": _cpu_model()}


def cached(binary: Path) -> Capacity | None:
    try:
        d = json.loads(cache_path().read_text())
    except (OSError, ValueError):
        return None
    if d.get("fingerprint") != fingerprint(binary) or not d.get("pps"):
        return None
    return Capacity(float(d["pps"]), f"measured {d.get('measured', '?')}, cached in {cache_path()}")


def capacity(measure: bool = True, say=print) -> Capacity:
    """bmv2's forwarding capacity here: P4CC_BMV2_PPS, else the cached
    measurement, else (``measure``) a new one, else the fallback. Raises
    TargetUnavailable when bmv2 is not installed."""
    env = os.environ.get("P4CC_BMV2_PPS")
    if env:
        try:
            return Capacity(float(env), "P4CC_BMV2_PPS")
        except ValueError:
            raise ValueError(f"P4CC_BMV2_PPS={env!r} is not a number of packets/s") from None
    binary = find_bmv2()
    hit = cached(binary)
    if hit is not None:
        return hit
    if not measure:
        return Capacity(FALLBACK_PPS, "assumed: not measured on this machine yet")
    say(f"measuring bmv2's forwarding capacity on this machine (once; about "
        f"{MEASURE_S + 8:.0f} s; cached in {cache_path()})")
    try:
        pps = measure_pps(binary)
    except (OSError, RuntimeError, subprocess.SubprocessError) as e:
        why = str(e).splitlines()[0] if str(e) else type(e).__name__
        return Capacity(FALLBACK_PPS, f"assumed: measuring failed ({why})")
    record = {"pps": pps, "measured": datetime.now().isoformat(timespec="seconds"),
              "how": f"cc_switch, iperf UDP {PAYLOAD_BYTES} B offered at {OFFERED_BPS / 1e6:.0f} "
                     f"Mb/s for {MEASURE_S:g} s, received packets/s",
              "fingerprint": fingerprint(binary)}
    try:
        cache_path().parent.mkdir(parents=True, exist_ok=True)
        cache_path().write_text(json.dumps(record, indent=1) + "\n")
    except OSError as e:
        say(f"could not cache bmv2's capacity in {cache_path()}: {e}")
    return Capacity(pps, f"measured {record['measured']}")


def measure_pps(binary: Path) -> float:
    """bmv2's forwarding rate at saturation, packets/s (needs root and iperf)."""
    from p4cc_control.program import Endpoint, program
    from p4cc_topo import Network, load_topology
    from p4cc_topo.plan import switch_configs

    if os.geteuid() != 0:
        raise RuntimeError("needs root (network namespaces)")
    iperf = shutil.which("iperf")
    if not iperf:
        raise RuntimeError("iperf is not installed (apt-get install iperf)")
    topo = load_topology("two_hosts")
    configs = switch_configs(topo)
    with Network(topo, target="bmv2", keep_logs=False, emulated={}) as net:
        eps = {n: Endpoint.from_dict(d) for n, d in net.endpoints().items()}
        a, b = sorted(topo.hosts)[:2]
        with program(configs, eps):
            server = net.popen(b, [iperf, "-s", "-u", "-l", str(PAYLOAD_BYTES + 100)], log="iperf-s.log")
            time.sleep(0.5)

            def rx() -> int:
                r = net.run(b, ["cat", "/sys/class/net/eth0/statistics/rx_packets"], check=True)
                return int(r.stdout.strip())

            client = net.popen(a, [iperf, "-c", net.ip(b), "-u", "-l", str(PAYLOAD_BYTES),
                                   "-b", str(OFFERED_BPS), "-t", str(MEASURE_S + 2)], log="iperf-c.log")
            time.sleep(1.0)  # past iperf's start and bmv2's first packets
            n0, t0 = rx(), time.monotonic()
            time.sleep(MEASURE_S)
            n1, t1 = rx(), time.monotonic()
            net.stop_process(client)
            net.stop_process(server)
    pps = (n1 - n0) / (t1 - t0)
    if pps <= 0:
        raise RuntimeError("no packet crossed bmv2")
    return pps


def command(say=print) -> int:
    """`p4cc bmv2-capacity`: measure now and cache."""
    try:
        binary = find_bmv2()
    except TargetUnavailable as e:
        say(f"p4cc: {str(e).splitlines()[0]}")
        return 1
    try:
        cache_path().unlink()
    except OSError:
        pass
    env = os.environ.pop("P4CC_BMV2_PPS", None)
    try:
        cap = capacity(say=say)
    finally:
        if env is not None:
            os.environ["P4CC_BMV2_PPS"] = env
    say(f"{binary}: {cap.describe()}; runs may ask for {cap.usable_pps / 1e3:.1f} kpps "
        f"({USABLE_SHARE:.0%} of it)")
    return 0 if not cap.source.startswith("assumed") else 1


__all__ = ["Capacity", "capacity", "measure_pps", "cache_path", "USABLE_SHARE", "command"]
