"""Fixtures of the controller tests: the P4Info (the real one when p4c has
produced it, else one shaped like it)."""
import pytest

from ctl_helpers import real_build, synthetic_p4info

from p4cc_control.p4info import P4Info, load_p4info


@pytest.fixture(scope="session")
def p4info() -> P4Info:
    path, _ = real_build()
    return load_p4info(path) if path else synthetic_p4info()


@pytest.fixture(scope="session")
def real_p4info() -> P4Info:
    path, _ = real_build()
    if not path:
        pytest.skip("no compiled P4Info: run p4c (see docs/controller.md) or commit p4src/build")
    return load_p4info(path)
