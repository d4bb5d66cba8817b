"""Kernel TCP congestion controls a run needs, made available before any
host starts.

A kernel-TCP agent sets its algorithm on its sockets (``TCP_CONGESTION``);
the kernel accepts only an algorithm it has registered, and a receiver's
listening socket needs it as much as a sender. So a run collects every
kernel algorithm its agents use and calls :func:`ensure_kernel_ccs` before
it builds a single namespace: an algorithm that is missing is loaded as a
kernel module, and DCTCP, which this project's kernels often lack as a
module, falls back to p4cc's BPF DCTCP (``p4cc_dctcp``, registered through
struct_ops by ``p4cc-host bpf-dctcp load``). Registration is kernel-wide and
lasts until reboot; nothing here assumes an earlier run did it.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
BPF_DCTCP = "p4cc_dctcp"


class KernelCcError(RuntimeError):
    """A kernel congestion control cannot be made available (one line)."""


def available() -> list[str]:
    try:
        return AVAILABLE.read_text().split()
    except OSError:
        return []


def provides(name: str, have: list[str]) -> bool:
    """Whether the kernel can run ``name`` now (``dctcp`` through the BPF
    DCTCP counts)."""
    return name in have or (name == "dctcp" and BPF_DCTCP in have)


def _modprobe(name: str) -> None:
    try:
        subprocess.run(["modprobe", "-q", f"tcp_{name}"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        pass


def ensure_kernel_ccs(names, host_agent: str) -> list[str]:
    """Makes every algorithm in ``names`` available; returns what was done
    (one line each, for the run log). Raises :class:`KernelCcError` naming
    the missing piece (no module, no BTF, no struct_ops, not root)."""
    done = []
    for name in sorted(set(names)):
        if provides(name, available()):
            continue
        _modprobe(name)
        if provides(name, available()):
            done.append(f"loaded kernel module tcp_{name}")
            continue
        if name != "dctcp":
            raise KernelCcError(
                f"kernel TCP '{name}' is not available (available: {' '.join(available())}) "
                f"and no module tcp_{name} loads")
        try:
            r = subprocess.run([host_agent, "bpf-dctcp", "load"], capture_output=True, text=True,
                               timeout=300)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise KernelCcError(f"cannot run {host_agent} bpf-dctcp load: {e}") from None
        if r.returncode != 0 or not provides(name, available()):
            why = (r.stderr or r.stdout).strip().splitlines()
            first = next((l for l in why if l.strip()), "no output")
            raise KernelCcError("kernel DCTCP unavailable: no dctcp module, and the BPF DCTCP "
                                f"did not register: {first.removeprefix('p4cc-host: error: ')}")
        done.append(r.stdout.strip() or f"{BPF_DCTCP} registered")
    return done
