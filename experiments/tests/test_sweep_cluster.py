"""`p4cc sweep --address` on a two-node Ray cluster on this machine (each
node with its own temp dir and one core): points run on both nodes, the
second node is killed mid-sweep, and the same command afterwards finishes
every point without running a finished one again.

Marked slow: 30–60 s here (two Ray nodes start, two sweeps run), more on
a loaded machine."""
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from p4cc_exp.simexec import find_sim

sys.path.insert(0, str(Path(__file__).parent))
from sweeputil import CHEAP, attempts, point_meta  # noqa: E402

pytestmark = pytest.mark.slow
RAY = Path(sys.executable).parent / "ray"
#: Ray's token authentication, on as docs/sweeps.md tells a cluster's user
#: to run it: every node and the driver present the same token. It is given
#: to each of them here (RAY_AUTH_TOKEN), not left in ~/.ray/auth_token: a
#: head wrote that file itself before Ray 2.60, and from 2.60 `ray start
#: --head` with token mode on and no token exits 1 (a fresh machine's CI).
RAY_ENV = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32),
           "RAY_USAGE_STATS_ENABLED": "0"}
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pids_of(temp_dir: Path) -> list[int]:
    """Our own node's processes: those whose command line names its temp dir."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit() or int(p.name) == os.getpid():
            continue
        try:
            if str(temp_dir) in (p / "cmdline").read_bytes().decode(errors="replace"):
                out.append(int(p.name))
        except OSError:
            continue
    return out


def descendants(pids: list[int]) -> list[int]:
    """``pids`` and every process below them (a node's workers, their simulators)."""
    parent = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                parent[int(p.name)] = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, todo = set(pids), list(pids)
    while todo:
        pid = todo.pop()
        kids = [c for c, pp in parent.items() if pp == pid and c not in out]
        out.update(kids)
        todo += kids
    return sorted(out)


def kill_node(temp_dir: Path) -> None:
    """The whole node at once, as a machine that is lost: its raylet and
    services, and the workers they started."""
    for pid in descendants(pids_of(temp_dir)):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def ray_start(make_args, temp_dir: Path, env: dict):
    """`ray start` with ``make_args()``, once more (with new arguments: a
    head takes a new port) after a failure: a fresh machine's first head
    once exited 1 in CI, and a second start passed. Both failures' output
    is in the test's failure. Returns the arguments that started."""
    errors = []
    for _ in range(2):
        args = make_args()
        r = subprocess.run([str(RAY), "start", *args], env=env, capture_output=True, text=True,
                           timeout=120)
        if r.returncode == 0:
            return args
        errors.append(f"exit {r.returncode}: {(r.stdout + r.stderr)[-1500:]}")
        kill_node(temp_dir)
        subprocess.run(["rm", "-rf", str(temp_dir)], check=False)
    pytest.fail(f"ray start {' '.join(args[:2])} failed twice:\n" + "\n".join(errors))


@pytest.fixture
def cluster(tmp_path):
    try:
        find_sim()
    except Exception as e:
        pytest.fail(f"{e} (make setup builds it)")
    # Short socket paths: a Unix socket's path is limited to 107 bytes.
    head_dir = Path(f"/tmp/p4cc-ray-h{os.getpid()}")
    node_dir = Path(f"/tmp/p4cc-ray-w{os.getpid()}")
    env = {**os.environ, **RAY_ENV}
    common = ["--num-cpus", "1", "--resources", '{"p4cc_realtime": 1}', "--disable-usage-stats",
              "--node-ip-address", "127.0.0.1"]
    head = ray_start(lambda: ["--head", "--port", str(free_port()), "--temp-dir", str(head_dir),
                              "--include-dashboard", "false", *common], head_dir, env)
    port = head[head.index("--port") + 1]
    try:
        ray_start(lambda: ["--address", f"127.0.0.1:{port}", "--temp-dir", str(node_dir),
                           *common], node_dir, env)
        yield f"127.0.0.1:{port}", head_dir, node_dir
    finally:
        kill_node(node_dir)
        kill_node(head_dir)
        for d in (head_dir, node_dir):
            subprocess.run(["rm", "-rf", str(d)], check=False)


def sweep_cmd(address: str, out: Path, retries: int) -> list[str]:
    return [sys.executable, "-m", "p4cc_exp.cli", "sweep", "dctcp-theory", "--target", "sim",
            "--grid", "k=20,25,30,35,40,45,50,55", *sum((["--set", s] for s in CHEAP), []),
            "--address", address, "--out", str(out), "--retries", str(retries)]


def test_two_nodes_one_killed_then_resumed(tmp_path, cluster):
    address, head_dir, node_dir = cluster
    out = tmp_path / "sw"
    env = {**os.environ, **RAY_ENV, "PYTHONPATH": os.pathsep.join(
        [str(ROOT / "experiments"), str(ROOT / "topologies"), str(ROOT / "control")]
        + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))}
    # No retries in the first command: the point the dead node was running
    # fails (Ray would otherwise run it again on the head at once), and it
    # is the rerun that completes it.
    proc = subprocess.Popen(sweep_cmd(address, out, 0), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    # Wait until both nodes have finished a point and both are running
    # another, then kill the second one. Killed between two points, it
    # would lose nothing: Ray gives the rest to the head and no point fails.
    deadline = time.monotonic() + 300
    killed_at = None
    while time.monotonic() < deadline and proc.poll() is None:
        done = point_meta(out) if out.exists() else {}
        nodes = {m["node"] for m in done.values()}
        running = {a["node"] for a in attempts(out) if a["key"] not in done} \
            if out.exists() else set()
        if len(nodes) >= 2 and nodes <= running:
            kill_node(node_dir)
            killed_at = len(point_meta(out))
            break
        time.sleep(0.05)
    log, _ = proc.communicate(timeout=600)
    assert killed_at is not None, f"points never ran on two nodes:\n{log[-3000:]}"
    before = point_meta(out)
    assert len({m["node"] for m in before.values()}) == 2, log[-3000:]
    assert len(before) < 8 and "failed" in log, log[-3000:]
    tries_before = {k: sum(a["key"] == k for a in attempts(out)) for k in before}

    # the same command again, on what is left of the cluster
    r = subprocess.run(sweep_cmd(address, out, 2), env=env, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    after = point_meta(out)
    assert len(after) == 8, r.stderr[-3000:]
    print(f"killed the second node with {killed_at} of 8 points finished; "
          f"{len(before)} finished by the first command; the rerun said: "
          + " | ".join(l for l in r.stderr.splitlines() if "finished" in l or "to run" in l))
    # every point finished before the rerun kept its run; none ran again
    assert {k: after[k]["run_id"] for k in before} == {k: v["run_id"] for k, v in before.items()}
    started = attempts(out)
    # no run of a finished point started in the rerun, nor after it finished
    assert {k: sum(a["key"] == k for a in started) for k in before} == tries_before
    for key, meta in after.items():
        runs = [a for a in started if a["key"] == key]
        assert runs and all(a["started"] <= meta["finished"] for a in runs), (key, runs)
    import pyarrow.parquet as pq
    rows = pq.read_table(out / "results.parquet").to_pylist()
    assert {r["status"] for r in rows} == {"done"} and len(rows) == 8
