"""Labs by hand: `p4cc mininet` reaches the Mininet prompt with the switch
programmed and leaves nothing behind; the quick start's commands, run word
for word, forward packets and show CE marks under load; `p4cc ctl` finds a
running lab by itself."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
P4CC = str(ROOT / ".venv/bin/p4cc")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (namespaces)")


def p4cc_links() -> list[str]:
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return re.findall(r"^\d+: (p4cc[^:@]+)", out, re.M)


def test_mininet_prompt_pings_and_leaves_nothing(tmp_path):
    pytest.importorskip("mininet.net", reason="Mininet not installed: `make setup` installs it")
    before = set(p4cc_links())
    script = tmp_path / "cmds"
    script.write_text("h1 ping -c 3 h2\nh2 ip route\n")
    r = subprocess.run([P4CC, "mininet", "two_hosts", "--script", str(script)],
                       capture_output=True, text=True, timeout=120)
    out = r.stdout + r.stderr  # Mininet prints what the prompt's commands print on stderr
    assert r.returncode == 0, out
    assert "3 packets transmitted, 3 received" in out, out
    assert "ttl=63" in out and "default via 169.254.0.1" in out
    assert set(p4cc_links()) == before
    assert subprocess.run(["pgrep", "-f", "p4cc-switch"], capture_output=True).returncode != 0


def test_the_mininet_prompt_reads_commands_from_stdin():
    pytest.importorskip("mininet.net", reason="Mininet not installed: `make setup` installs it")
    r = subprocess.run([P4CC, "mininet"], input="h1 ping -c 1 h2\nexit\n", capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and "1 received" in r.stdout + r.stderr, r.stdout + r.stderr


def quickstart_block() -> str:
    text = (ROOT / "docs/quickstart.md").read_text()
    m = re.search(r"<!-- tested: quickstart -->\s*```sh\n(.*?)```", text, re.S)
    assert m, "docs/quickstart.md lost its tested block"
    return m.group(1)


def test_the_quick_start_word_for_word(tmp_path):
    r = subprocess.run(["bash", "-c", "set -e\n" + quickstart_block() + "\nwait\n"], cwd=ROOT,
                       capture_output=True, text=True, timeout=180)
    out = r.stdout
    assert r.returncode == 0, out + r.stderr
    assert "3 packets transmitted, 3 received" in out, out
    assert re.search(r"10\.0\.0\.250/32 -> forward port=3", out), out
    row = re.search(r"^\s+3\s+(\d+)\s+\d+\s+\d+\s+\d+\s+(\d+)", out, re.M)
    assert row and int(row.group(2)) > 100, f"no CE marks on the bottleneck:\n{out}"
    assert "port 3: K = 40 packets" in out, f"the controller could not write to the lab:\n{out}"


def test_ctl_without_a_lab_and_with_two_is_one_line(tmp_path):
    r = subprocess.run([P4CC, "ctl", "show", "--timeout", "1"], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "P4CC_ADDR": "127.0.0.1:1"})
    assert r.returncode == 3 and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_exec_without_a_lab_says_how_to_start_one():
    r = subprocess.run([P4CC, "exec", "h1", "true"], capture_output=True, text=True, timeout=60)
    if "labs are up" in r.stderr or r.returncode == 0:
        pytest.skip("another lab is up on this machine")
    assert r.returncode == 1 and "p4cc up" in r.stderr
