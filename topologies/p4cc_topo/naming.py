"""Names of everything a run creates, and how to recognise them later.

A run id is four characters: a digit then three lower-case hex digits
(``7f3a``). Everything the run creates carries it:

=================  ===============================  =========================
what               name                             example
=================  ===============================  =========================
host namespace     ``p4cc-<run>-<host>``            ``p4cc-7f3a-h1``
switch port (veth  ``p4cc<run>s<index>e<port>``     ``p4cc7f3as1e3``
end in the root
namespace)
link emulator      ``p4cc<run>s<index>w<port>``     ``p4cc7f3as1w3``
end facing the
switch port (bmv2,
docs/topologies.md)
link emulator      ``p4cc<run>s<index>p<port>``     ``p4cc7f3as1p3``
end facing the
port's peer
host interface     ``eth0`` inside its namespace    (gone with the namespace)
process marker     env ``P4CC_RUN_ID=<run>``        every process p4cc starts
state file         ``/run/p4cc/<run>.json``         ``/run/p4cc/7f3a.json``
=================  ===============================  =========================

The patterns below are the *only* names :mod:`p4cc_topo.cleanup` ever
touches. Because the run id starts with a digit, they can never match other
tools' ``p4cctest-*``, ``p4ccbench-*`` or ``p4cctc*`` names (nor anything else
that merely starts with ``p4cc``).
"""

from __future__ import annotations

import re
import secrets

RUN_ID_RE = r"[0-9][0-9a-f]{3}"
NETNS_RE = re.compile(rf"^p4cc-({RUN_ID_RE})-([a-z][a-z0-9_]*)$")
LINK_RE = re.compile(rf"^p4cc({RUN_ID_RE})s([0-9]{{1,2}})[ewp]([0-9]{{1,3}})$")
RUN_ID_FULL_RE = re.compile(rf"^{RUN_ID_RE}$")
ENV_RUN_ID = "P4CC_RUN_ID"
IFNAMSIZ = 15  # usable characters of a Linux interface name


def new_run_id() -> str:
    """A random run id (collisions are caught when the state file is created)."""
    return str(secrets.randbelow(10)) + secrets.token_hex(2)[:3]


def check_run_id(run_id: str) -> str:
    if not isinstance(run_id, str) or not RUN_ID_FULL_RE.match(run_id):
        raise ValueError(f"run id {run_id!r} must be a digit then three hex digits, like 7f3a")
    return run_id


def netns_name(run_id: str, host: str) -> str:
    return f"p4cc-{run_id}-{host}"


def port_ifname(run_id: str, switch_index: int, port: int, end: str = "e") -> str:
    """The root-namespace interface of a switch port: ``e``, the end the
    switch attaches to; with a link emulator spliced in (bmv2), ``w``, its
    end facing the switch, and ``p``, its end facing the port's peer."""
    if end not in ("e", "w", "p"):
        raise ValueError(f"interface end {end!r} is not e, w or p")
    name = f"p4cc{run_id}s{switch_index}{end}{port}"
    if len(name) > IFNAMSIZ:
        raise ValueError(f"interface name {name} is longer than {IFNAMSIZ} characters")
    return name


def run_of_netns(name: str) -> str | None:
    m = NETNS_RE.match(name)
    return m.group(1) if m else None


def run_of_link(name: str) -> str | None:
    m = LINK_RE.match(name.split("@", 1)[0])
    return m.group(1) if m else None
