"""make p4-tna names the known defects of bf-p4c's own driver (p4c
34b86e9b) with what to do, instead of ending on a Python traceback or a
missing .conf later (docs/tofino.md, "Building bf-p4c from source").
A fake bf-p4c stands in for the compiler: only its output matters here."""
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("p4build", ROOT / "tools" / "p4build.py")
p4build = importlib.util.module_from_spec(spec)
spec.loader.exec_module(p4build)


def fake_bf_p4c(tmp_path, body):
    script = tmp_path / "bf-p4c"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return str(script)


@pytest.mark.parametrize("said, hint", [
    ("AttributeError: 'PosixPath' object has no attribute 'find'", "str(...)"),
    ("TypeError: sequence item 0: expected str instance, PosixPath found", "str(...)"),
    ("ModuleNotFoundError: No module named 'jsl'", "p4c-build-logs"),
])
def test_driver_defects_are_named_with_the_fix(tmp_path, said, hint):
    bf = fake_bf_p4c(tmp_path, f'echo "{said}" >&2\nexit 1\n')
    with pytest.raises(SystemExit) as e:
        p4build.tna_compile(bf, "tofino", tmp_path / "out")
    msg = str(e.value.code)
    assert "bf-p4c failed for tofino (1)" in msg and said in msg
    assert "known bf-p4c driver defect" in msg and hint in msg


def test_other_failures_carry_no_hint(tmp_path):
    bf = fake_bf_p4c(tmp_path, 'echo "error: PHV allocation was not successful" >&2\nexit 2\n')
    with pytest.raises(SystemExit) as e:
        p4build.tna_compile(bf, "tofino", tmp_path / "out")
    assert "PHV allocation" in str(e.value.code)
    assert "driver defect" not in str(e.value.code)


def test_a_compile_without_its_conf_is_refused(tmp_path):
    bf = fake_bf_p4c(tmp_path, "exit 0\n")
    with pytest.raises(SystemExit) as e:
        p4build.tna_compile(bf, "tofino2", tmp_path / "out")
    assert "no cc_switch.conf" in str(e.value.code) and "p4c-gen-conf" in str(e.value.code)
