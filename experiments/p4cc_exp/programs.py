"""What an external agent's command line really runs: the program behind an
``env NAME=VALUE …`` prefix, and the shared libraries the dynamic linker
gives it from outside the system's own directories.

Both matter for reference arms. PCC-Uspace's two branches each build a
``libudt.so`` of their own; with one branch's installed where the linker
looks first, the other branch's sender loads it, runs, and never calls its
own rate control. Naming the library each program loaded, in the run's
notes, shows that mix-up in the report instead of in the numbers.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

#: Where the system's own libraries live: not worth a note.
SYSTEM_LIB_DIRS = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/", "/usr/libexec/")
#: ``ldd`` output: ``libfoo.so.1 => /path/libfoo.so.1 (0x…)`` or ``=> not found``.
_LDD_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(not found|\S+)")


#: ``env``'s options: those that empty the environment, the other ones
#: without an argument, and those that take the next word.
_ENV_CLEAR = {"-i", "--ignore-environment", "-"}
_ENV_FLAGS = {"-0", "--null"}
_ENV_WITH_ARG = {"-u", "--unset", "-C", "--chdir"}


def split_env(argv) -> tuple[dict[str, str], list[str]]:
    """(variables set, the command) of an argv that may start with ``env``,
    its options and its ``NAME=VALUE`` assignments. ``-i`` shows as the
    variable ``""`` (the environment starts empty); an option ``env``
    has and this does not know ends the prefix there."""
    argv = list(argv)
    if not argv or os.path.basename(argv[0]) != "env":
        return {}, argv
    sets: dict[str, str] = {}
    i = 1
    while i < len(argv):
        w = argv[i]
        if w in _ENV_CLEAR:
            sets[""] = ""
        elif w in _ENV_WITH_ARG:
            i += 1
        elif w in _ENV_FLAGS or w.startswith(("--unset=", "--chdir=")):
            pass
        elif "=" in w and not w.startswith("-"):
            k, _, v = w.partition("=")
            sets[k] = v
        else:
            break
        i += 1
    return sets, argv[i:]


def environment_of(sets: dict[str, str]) -> dict[str, str]:
    """The environment ``env`` gives its program: this process's (or none,
    after ``-i``) with the assignments applied."""
    base = {} if "" in sets else dict(os.environ)
    return {**base, **{k: v for k, v in sets.items() if k}}


def program_of(argv) -> str:
    """The program a command line runs (after an ``env`` prefix)."""
    _, cmd = split_env(argv)
    return cmd[0] if cmd else (list(argv) or [""])[0]


def missing_program(argv) -> str | None:
    """Why the program of ``argv`` cannot run, in a few words; None if it can."""
    prog = program_of(argv)
    if shutil.which(prog):
        return None
    return f"{prog!r} is not found {'(not executable?)' if os.path.exists(prog) else 'on PATH'}"


def own_libraries(argv) -> dict[str, str]:
    """Library -> the file the dynamic linker resolves it to for ``argv``'s
    program, with the command's ``env`` variables applied, for libraries
    outside the system's directories (or not found). Empty for a static or
    non-ELF program, or where ``ldd`` is absent."""
    sets, cmd = split_env(argv)
    prog = shutil.which(cmd[0]) if cmd else None
    ldd = shutil.which("ldd")
    if not prog or not ldd:
        return {}
    try:
        with open(prog, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return {}
        # ldd of an untrusted program may run it; these are the user's own
        # programs, which the run is about to start anyway.
        r = subprocess.run([ldd, prog], capture_output=True, text=True, timeout=10,
                           env={"PATH": os.defpath, **environment_of(sets)})
    except (OSError, subprocess.SubprocessError):
        return {}
    out = {}
    for line in r.stdout.splitlines():
        m = _LDD_LINE.match(line)
        if not m:
            continue
        name, path = m.groups()
        if path == "not found" or not str(Path(path).resolve()).startswith(SYSTEM_LIB_DIRS):
            out[name] = path
    return out


def library_note(role: str, argv) -> str | None:
    """One line for the run's notes naming the non-system libraries the
    program loads; None when it loads none."""
    libs = own_libraries(argv)
    if not libs:
        return None
    return (f"the {role} program {program_of(argv)} loads "
            + ", ".join(f"{n} from {p}" for n, p in sorted(libs.items())))
