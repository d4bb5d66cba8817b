"""TCP ports for the switches' gRPC, admin and Thrift servers.

A switch is told its port on the command line, so the port is chosen before
the switch binds it. Chosen from the kernel's ephemeral range (what binding
port 0 returns), a just-freed port is exactly what the kernel hands to the
next outgoing connection — any gRPC client on the machine can take it in that
gap, and the switch then fails with "Address already in use". Ports below the
ephemeral range are only ever taken by explicit binds, so choosing there
leaves only other explicit pickers to collide with, and those are spread at
random over several thousand ports.
"""
from __future__ import annotations

import random
import socket

EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
# Lowest port handed out: below the registered ports most daemons use.
LOWEST = 10000
_given: set[int] = set()


def ephemeral_range() -> tuple[int, int]:
    try:
        with open(EPHEMERAL_RANGE_FILE) as f:
            lo, hi = (int(x) for x in f.read().split())
        return lo, hi
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_tcp_port() -> int:
    """A TCP port on 127.0.0.1 that is free now, outside the ephemeral range,
    and never handed out before by this process."""
    lo, hi = ephemeral_range()
    # Below the range if there is room, else above it.
    pool = range(LOWEST, lo) if lo - LOWEST >= 1000 else range(hi + 1, 65536)
    if not pool:
        raise RuntimeError(f"no TCP ports outside the ephemeral range {lo}-{hi} ({EPHEMERAL_RANGE_FILE})")
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.choice(pool)
        if port in _given:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    raise RuntimeError(f"no free TCP port on 127.0.0.1 in {pool.start}-{pool.stop - 1}")
