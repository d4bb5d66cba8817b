"""An external command line's real program (behind ``env``) and the
libraries it loads from outside the system: what a reference arm's run
notes name, so a library picked up from the wrong build shows in the
report (docs/experiments.md, "Reference arms")."""
import os
import shutil
import sys

import pytest

from p4cc_exp.programs import (environment_of, library_note, missing_program, own_libraries,
                               program_of, split_env)


def test_env_assignments_are_split_from_the_command():
    assert split_env(["env", "A=1", "LD_LIBRARY_PATH=/x", "prog", "B=2"]) == \
        ({"A": "1", "LD_LIBRARY_PATH": "/x"}, ["prog", "B=2"])
    assert split_env(["prog", "A=1"]) == ({}, ["prog", "A=1"])
    assert program_of(["env", "A=1", "/opt/x/sender", "{dst}"]) == "/opt/x/sender"
    # env's options: -i empties the environment; -u and -C take a word.
    assert split_env(["/usr/bin/env", "-i", "A=1", "-u", "B", "--chdir=/tmp", "prog", "-x"]) == \
        ({"": "", "A": "1"}, ["prog", "-x"])
    assert environment_of({"": "", "A": "1"}) == {"A": "1"}
    assert environment_of({"A": "1"})["PATH"] == os.environ["PATH"]
    # An option this does not know ends the prefix where it stands.
    assert split_env(["env", "-S", "prog a"]) == ({}, ["-S", "prog a"])


def test_a_missing_program_behind_env_is_the_one_named():
    assert "'no-such-sender' is not found on PATH" in missing_program(["env", "A=1", "no-such-sender"])
    assert missing_program(["env", "A=1", sys.executable]) is None


def _system_library_of(prog: str) -> tuple[str, str]:
    """A library ``prog`` loads from the system: (name, path)."""
    import subprocess
    for line in subprocess.run(["ldd", prog], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and parts[2].startswith("/"):
            return parts[0], parts[2]
    pytest.skip(f"{prog} loads no shared library")


def test_a_library_from_outside_the_system_is_named_with_its_file(tmp_path):
    prog = shutil.which("ls")
    if not shutil.which("ldd") or not prog:
        pytest.skip("needs ldd and ls")
    name, path = _system_library_of(prog)
    # A system program alone loads nothing worth a note.
    assert own_libraries([prog]) == {}
    assert library_note("sender", [prog]) is None
    # The same program with a copy of one of its libraries first on the
    # linker's path: that copy is what it loads, and what the note names.
    lib = tmp_path / "lib"
    lib.mkdir()
    shutil.copy(path, lib / name)
    argv = ["env", f"LD_LIBRARY_PATH={lib}", prog, "-l"]
    assert own_libraries(argv) == {name: str(lib / name)}
    assert library_note("sender", argv) == f"the sender program {prog} loads {name} from {lib / name}"
    # A program that loads none of that path's libraries: nothing to name.
    assert own_libraries(["env", f"LD_LIBRARY_PATH={lib}", sys.executable]) == {}


def test_scripts_and_unknown_programs_load_nothing_to_name(tmp_path):
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert own_libraries([str(script)]) == {}
    assert own_libraries(["no-such-program"]) == {}
