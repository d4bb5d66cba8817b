import os
import shutil
import sys
from pathlib import Path

import pytest

TOPO_DIR = Path(__file__).resolve().parents[1]
if str(TOPO_DIR) not in sys.path:
    sys.path.insert(0, str(TOPO_DIR))


def _can_netns() -> str | None:
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    for tool, pkg in (("ip", "iproute2"), ("ethtool", "ethtool"), ("ping", "iputils-ping"),
                      ("setpriv", "util-linux")):
        if not shutil.which(tool):
            return f"needs {tool} (apt-get install {pkg})"
    return None


@pytest.fixture
def netns_ok():
    why = _can_netns()
    if why:
        pytest.skip(why)


@pytest.fixture
def env_with_pkg():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(TOPO_DIR) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env
