"""The embedded target's P4Runtime server against a second, independent
client: finsy (an asyncio P4Runtime client with its own protos), in its own
venv, driving a real p4cc-switch. Every check is an exact comparison of what
was written with what was read back, or of an error code with the spec's.

The checks run in ctl_finsy_client.py under .venv-finsy/bin/python (finsy
needs a current protobuf; the p4runtime wheel of .venv cannot share a
process with it); this module starts the switch, runs that script once, and
turns each check it reports into a test. Skipped when .venv-finsy is absent
(`make setup` creates it), and, like every real-switch test, without root
or a built switch.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from ctl_helpers import HERE, REPO
from ctl_switches import SwitchProcess, Veths, why_not

FINSY_PYTHON = os.environ.get("P4CC_FINSY_PYTHON") or os.path.join(REPO, ".venv-finsy", "bin", "python")
CLIENT = os.path.join(HERE, "ctl_finsy_client.py")
# finsy reads a P4Info as text (its protobuf parses the type_info maps).
P4INFO_TXT = os.path.join(REPO, "p4src", "build", "cc_switch.p4info.txtpb")
DEVICE_CONFIG = os.path.join(REPO, "p4src", "build", "cc_switch.json")

# Every check the client runs, so one that silently did not run fails.
CHECKS = [
    "connect: primary, pipeline pushed by finsy",
    "pipeline: P4Info read back",
    "pipeline: device config read back",
    "pipeline: cookie read back",
    "pipeline: COOKIE_ONLY has only the cookie",
    "table: insert, read back (protobuf)",
    "table: insert, read back (finsy)",
    "table: modify, read back",
    "table: batch insert, wildcard read of the table",
    "table: default action, read back",
    "table: delete, read back nothing",
    "counter: write (bytes and packets), read back",
    "counter: write (packets), read back",
    "counter: read back (finsy)",
    "register: write, read back",
    "pre: finsy writes egress_port (uint32) to a 1.4 server",
    "pre: clone session, replicas as egress_port, read back",
    "pre: clone session, replicas as port bytes, read back",
    "pre: clone session, replicas as mixed, read back",
    "pre: clone session read back (finsy)",
    "pre: multicast group, replicas as egress_port, read back",
    "pre: multicast group, replicas as port bytes, read back",
    "pre: multicast group, replicas as mixed, read back",
    "pre: multicast group read back (finsy)",
    "pre: wildcard read, every entry in its forms",
    "pre: modify egress_port -> port bytes, read back",
    "pre: delete, read back nothing",
    "error: entry for an unknown table -> NOT_FOUND",
    "error: duplicate insert -> ALREADY_EXISTS",
    "error: key value wider than its field -> OUT_OF_RANGE",
    "error: action parameter wider than its field -> OUT_OF_RANGE",
    "error: modify of a missing entry -> NOT_FOUND",
    "error: delete of a missing entry -> NOT_FOUND",
    "error: batch, one code per failed update (CONTINUE_ON_ERROR)",
    "error: the batch's good update was applied",
    "error: counter index beyond the array -> OUT_OF_RANGE",
    "error: clone session class_of_service -> UNIMPLEMENTED",
    "error: read of an unknown table -> NOT_FOUND",
    "stream: undecodable message -> INVALID_ARGUMENT",
]


def finsy_env() -> dict:
    # This process may have chosen the pure-Python protobuf for the p4runtime
    # wheel; finsy's venv has its own protobuf and needs the fast one.
    return {k: v for k, v in os.environ.items()
            if k not in ("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "PYTHONPATH", "PYTHONHOME")}


@pytest.fixture(scope="module")
def finsy_run(tmp_path_factory):
    """Runs the finsy client once against a fresh p4cc-switch: (process, {check: result})."""
    if not os.access(FINSY_PYTHON, os.X_OK):
        pytest.skip(f"finsy venv absent ({FINSY_PYTHON}): `make setup` creates .venv-finsy "
                    "from requirements-finsy.txt")
    reason = why_not("embedded")
    if reason:
        pytest.skip(f"embedded: {reason}")
    for f in (P4INFO_TXT, DEVICE_CONFIG):
        assert os.path.exists(f), f"{f} missing: the compiled program is part of the repository"
    veths = Veths(1)  # the switch needs one port; no frame is sent
    sp = SwitchProcess("embedded", veths, str(tmp_path_factory.mktemp("finsy-logs")))
    try:
        sp.start()
        proc = subprocess.run([FINSY_PYTHON, CLIENT, sp.addr, P4INFO_TXT, DEVICE_CONFIG],
                              capture_output=True, text=True, timeout=180, env=finsy_env())
        results = {}
        for line in proc.stdout.splitlines():
            r = json.loads(line)
            results[r["check"]] = r
        yield proc, results, sp
    finally:
        sp.stop()
        veths.delete()


def test_finsy_client_ran_to_the_end(finsy_run):
    proc, results, sp = finsy_run
    assert proc.returncode in (0, 1), (
        f"the finsy client broke (exit {proc.returncode}): {proc.stderr[-3000:]}\n"
        f"switch log: {sp.log_tail()}")
    assert sorted(results) == sorted(CHECKS), "checks run differ from the list here"


@pytest.mark.parametrize("check", CHECKS)
def test_finsy(finsy_run, check):
    _, results, _ = finsy_run
    r = results.get(check)
    assert r is not None, f"'{check}' did not run (see test_finsy_client_ran_to_the_end)"
    assert r["ok"], r["detail"]
