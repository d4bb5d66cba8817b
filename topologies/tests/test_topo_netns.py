"""Real network namespaces (root): build, forward, tear down, kill, clean.

Every test checks with the system's own tools (``ip netns``, ``ip link``,
/proc) that nothing of its run is left.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from topo_nshelpers import assert_clean, fresh_run_id, leftovers
from p4cc_topo import naming
from p4cc_topo.builtin import load_topology
from p4cc_topo.cleanup import cleanup_all
from p4cc_topo.model import GATEWAY_IP, Topology, port_mac
from p4cc_topo.network import Network
from p4cc_topo.targets import TargetUnavailable, find_bmv2, find_embedded, netem_available

pytestmark = pytest.mark.usefixtures("netns_ok")

TWO_SWITCHES = {
    "name": "chain",
    "hosts": [{"name": "a", "ip": "10.0.0.1"}, {"name": "b", "ip": "10.0.0.2"},
              {"name": "c", "ip": "10.0.0.3"}],
    "switches": [{"name": "s1", "id": 1}, {"name": "s2", "id": 2}],
    "links": [{"endpoints": ["a", "s1:1"]}, {"endpoints": ["s1:2", "s2:2"]},
              {"endpoints": ["b", "s2:1"]}, {"endpoints": ["c", "s2:3"]}],
}


def ns_sh(ns: str, cmd: str) -> str:
    return subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", cmd], capture_output=True,
                          text=True, check=True).stdout


def as_from_a_terminal() -> None:
    """A child's Ctrl-C as a terminal would give it: default SIGINT. A test
    run started in the background of a non-interactive shell inherits
    SIGINT ignored, and Python then keeps it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_up(rid: str, env, *extra, topology="two_hosts", target="pyfwd") -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-m", "p4cc_topo", "up", topology, "--target", target,
                          "--run-id", rid, *extra], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal)
    deadline = time.monotonic() + 30
    lines = []
    while time.monotonic() < deadline:
        line = p.stderr.readline()
        lines.append(line)
        if "is up" in line:
            return p
        if not line and p.poll() is not None:
            break
    p.kill()
    pytest.fail(f"`p4cc_topo up` did not come up: {''.join(lines)}")


TCP_SERVER = r"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5001)); s.listen(1); print("listening", flush=True)
c, _ = s.accept(); n = 0
while True:
    b = c.recv(65536)
    if not b: break
    n += len(b)
print("received", n, flush=True)
"""

TCP_CLIENT = r"""
import socket, sys, time
for _ in range(100):
    try:
        s = socket.create_connection((sys.argv[1], 5001), timeout=5); break
    except OSError: time.sleep(0.05)
s.sendall(b"x" * int(sys.argv[2])); s.close()
"""


# -------------------------------------------------------------------- tests

def test_two_hosts_forward_ping_tcp_and_tear_down():
    topo = load_topology("two_hosts")
    with Network(topo, target="pyfwd") as net:
        rid = net.run_id
        assert net.ping("h1", "h2", count=2) and net.ping("h2", "h1")
        # TTL 63: one routed hop through the switch
        out = net.run("h1", ["ping", "-c", "1", "-W", "2", net.ip("h2")]).stdout
        assert "ttl=63" in out
        # kernel TCP through the forwarder: checksums must be right (tx csum off)
        srv = net.popen("h2", [sys.executable, "-c", TCP_SERVER], log="srv.log")
        r = net.run("h1", [sys.executable, "-c", TCP_CLIENT, net.ip("h2"), str(2_000_000)],
                    timeout=60)
        assert r.returncode == 0, r.stderr
        srv.wait(30)
        assert "received 2000000" in (net.log_dir / "srv.log").read_text()

        ns = net.netns("h1")
        assert ns == f"p4cc-{rid}-h1"
        feats = ns_sh(ns, "ethtool -k eth0")
        for f in ("tcp-segmentation-offload: off", "generic-segmentation-offload: off",
                  "generic-receive-offload: off", "tx-checksumming: off"):
            assert f in feats
        root_feats = subprocess.run(["ethtool", "-k", f"p4cc{rid}s1e1"], capture_output=True,
                                    text=True).stdout
        assert "tcp-segmentation-offload: off" in root_feats and "tx-checksumming: off" in root_feats
        assert ns_sh(ns, "cat /proc/sys/net/ipv4/tcp_ecn").strip() == "1"
        assert ns_sh(ns, "cat /proc/sys/net/ipv6/conf/eth0/disable_ipv6").strip() == "1"
        neigh = ns_sh(ns, f"ip neigh show {GATEWAY_IP}")
        assert port_mac(1, 1) in neigh and "PERMANENT" in neigh
        assert "02:00:0a:00:00:01" in ns_sh(ns, "ip link show eth0")
        assert "state UP" in ns_sh(ns, "ip link show lo") or "UP" in ns_sh(ns, "ip link show lo")
        # the root end's own MAC is not the port MAC the host addresses
        root = subprocess.run(["ip", "link", "show", f"p4cc{rid}s1e1"], capture_output=True,
                              text=True).stdout
        assert port_mac(1, 1) not in root
        assert net.endpoints()["s1"]["port_ifaces"][1] == f"p4cc{rid}s1e1"
        assert leftovers(rid)["state"]
    assert_clean(rid)


def test_two_switches_route_across():
    topo = Topology.from_dict(TWO_SWITCHES)
    with Network(topo, target="pyfwd") as net:
        rid = net.run_id
        out = net.run("a", ["ping", "-c", "1", "-W", "2", net.ip("b")]).stdout
        assert "ttl=62" in out, out          # two routed hops
        assert net.ping("c", "a") and net.ping("b", "c")
        links = leftovers(rid)["links"]
        assert sorted(links) == sorted(f"p4cc{rid}s{i}e{p}" for i, p in
                                       [(1, 1), (1, 2), (2, 2), (2, 1), (2, 3)])
    assert_clean(rid)


def test_exception_inside_with_tears_down():
    topo = load_topology("two_hosts")
    with pytest.raises(RuntimeError, match="boom"):
        with Network(topo, target="pyfwd") as net:
            rid = net.run_id
            net.popen("h1", ["sleep", "300"])
            raise RuntimeError("boom")
    assert_clean(rid)


def test_failed_start_tears_down(monkeypatch):
    topo = load_topology("two_hosts")
    import p4cc_topo.network as network

    def broken(self):
        raise network.NetworkError("injected failure while configuring hosts")

    monkeypatch.setattr(network.Network, "_configure_hosts", broken)
    net = Network(topo, target="pyfwd")
    with pytest.raises(network.NetworkError, match="injected"):
        with net:
            pass
    assert net.run_id and leftovers(net.run_id)["state"] == []
    assert_clean(net.run_id)


def test_switch_that_dies_is_reported_with_its_log(monkeypatch, tmp_path):
    topo = load_topology("two_hosts")
    import p4cc_topo.targets as targets
    monkeypatch.setattr(targets.PyFwdSwitch, "command",
                        lambda self: ["sh", "-c", "echo 'cannot open port 7' >&2; exit 3"])
    net = Network(topo, target="pyfwd", log_dir=tmp_path)
    with pytest.raises(targets.SwitchStartError) as e:
        with net:
            pass
    assert "exited with status 3" in str(e.value) and "cannot open port 7" in str(e.value)
    assert_clean(net.run_id)


def test_popen_logs_marker_and_stop():
    topo = load_topology("two_hosts")
    with Network(topo, target="pyfwd", start_switches=False) as net:
        rid = net.run_id
        p = net.popen("h1", "echo hello from $(ip -o -4 addr show eth0 | awk '{print $4}'); sleep 300",
                      log="hello.log")
        time.sleep(0.5)
        assert "hello from 10.0.0.1/24" in (net.log_dir / "hello.log").read_text()
        env = Path(f"/proc/{p.pid}/environ").read_bytes()
        assert f"P4CC_RUN_ID={rid}".encode() in env
        # only namespaces and links: no switch process
        assert net.switches == {}
    assert p.poll() is not None
    assert_clean(rid)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signals_tear_down(env_with_pkg, sig):
    rid = fresh_run_id()
    p = start_up(rid, env_with_pkg)
    assert leftovers(rid)["netns"]
    p.send_signal(sig)
    p.wait(30)
    assert_clean(rid)


def test_sigkill_then_clean_removes_everything(env_with_pkg):
    """The owner is SIGKILLed (no teardown, no watchdog) while an agent that
    escaped its process group runs in a host namespace: `clean` must remove
    the namespaces, the links and every process."""
    rid = fresh_run_id()
    p = start_up(rid, env_with_pkg, "--no-watchdog")
    env = dict(env_with_pkg, P4CC_RUN_ID=rid)
    agent = subprocess.Popen(["ip", "netns", "exec", f"p4cc-{rid}-h1", "sleep", "300"], env=env,
                             start_new_session=True)
    unmarked = subprocess.Popen(["ip", "netns", "exec", f"p4cc-{rid}-h2", "sleep", "300"],
                                env={k: v for k, v in env.items() if k != "P4CC_RUN_ID"},
                                start_new_session=True)
    time.sleep(0.3)
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    time.sleep(0.3)
    left = leftovers(rid)
    assert len(left["netns"]) == 2 and len(left["links"]) == 2 and left["state"]
    # the switch died with its owner (PR_SET_PDEATHSIG); the escaped agent did not
    assert left["pids"] == [agent.pid]
    r = subprocess.run([sys.executable, "-m", "p4cc_topo", "clean"], env=env_with_pkg,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"run {rid}: removed" in r.stdout
    assert_clean(rid)
    # both agents are gone: the marked one and the one found in the namespace
    assert agent.wait(5) is not None and unmarked.wait(5) is not None
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    assert f"p4cc-{rid}-" not in ps


def test_sigkill_with_watchdog_cleans_by_itself(env_with_pkg):
    rid = fresh_run_id()
    p = start_up(rid, env_with_pkg)
    assert leftovers(rid)["netns"]
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    assert_clean(rid, timeout=15)


def test_clean_leaves_live_runs_and_other_names_alone():
    tag = os.urandom(2).hex()
    decoy_ns = f"p4ccbench-topodecoy{tag}"
    decoy_a, decoy_b = f"p4cctest{tag}", f"p4cctc{tag}x"
    odd_ns = f"p4cc-x{tag[:3]}-h1"          # p4cc- but not a run id of ours
    subprocess.run(["ip", "netns", "add", decoy_ns], check=True)
    subprocess.run(["ip", "netns", "add", odd_ns], check=True)
    subprocess.run(["ip", "link", "add", decoy_a, "type", "veth", "peer", "name", decoy_b], check=True)
    try:
        with Network(load_topology("two_hosts"), target="pyfwd") as net:
            rid = net.run_id
            rep = cleanup_all(only={rid})
            assert rid in rep["skipped"] and rid not in rep["cleaned"]
            # a machine-wide sweep (dry run: other people's runs may be dead
            # on purpose right now) plans nothing of the decoys or live runs
            plan = cleanup_all(dry_run=True)
            assert rid in plan["skipped"]
            planned = str(plan["cleaned"])
            for decoy in (decoy_ns, odd_ns, decoy_a, decoy_b):
                assert decoy not in planned
            assert net.ping("h1", "h2")
            names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
            assert decoy_ns in names and odd_ns in names
            links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
            assert decoy_a in links and decoy_b in links
            # --force takes the live run down too; the owner's stop copes
            rep = cleanup_all(force=True, only={rid})
            assert rid in rep["cleaned"]
            assert not leftovers(rid)["netns"]
        assert_clean(rid)
        names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert decoy_ns in names and odd_ns in names
    finally:
        subprocess.run(["ip", "netns", "del", decoy_ns])
        subprocess.run(["ip", "netns", "del", odd_ns])
        subprocess.run(["ip", "link", "del", decoy_a])


def test_netem_probe_leaves_nothing():
    before = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    import p4cc_topo.targets as targets
    targets._netem_cache = None
    res = netem_available()
    assert isinstance(res, bool)
    # an anonymous namespace: nothing named is created, nothing is left
    assert subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout == before


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def embedded_bin(monkeypatch):
    """The embedded switch: the release build (or P4CC_SWITCH_BIN); a debug
    build will do for these functional tests."""
    try:
        return find_embedded()
    except TargetUnavailable as e:
        debug = REPO / "switch" / "target" / "debug" / "p4cc-switch"
        if not (debug.is_file() and os.access(debug, os.X_OK)):
            pytest.skip(str(e))
        monkeypatch.setenv("P4CC_SWITCH_BIN", str(debug))
        return debug


def _program(net, topo):
    """The controller programs the running switches from the topology's plan."""
    sys.path.insert(0, str(REPO / "control"))
    try:
        ctl = pytest.importorskip("p4cc_control")
    finally:
        sys.path.remove(str(REPO / "control"))
    from p4cc_control.program import Endpoint, program
    from p4cc_topo.plan import switch_configs
    eps = {n: Endpoint.from_dict(d) for n, d in net.endpoints().items()}
    return program(switch_configs(topo), eps)


def test_embedded_switch_gets_the_port_settings_through_the_controller(embedded_bin):
    import json as _json
    import urllib.request
    topo = load_topology("dumbbell", loss="1%")
    with Network(topo, target="embedded", seed=5, ready_timeout=30) as net:
        rid = net.run_id
        with _program(net, topo):
            s1 = net.endpoints()["s1"]
            ports = {p["port"]: p for p in _json.loads(urllib.request.urlopen(
                f"http://{s1['admin_addr']}/ports", timeout=5).read())}
        assert ports[3]["iface"] == f"p4cc{rid}s1e3"
        assert ports[3]["rate_bps"] == 100_000_000 and ports[3]["depth_pkts"] == 120
        assert ports[3]["loss"] == 0.01 and ports[3]["delay_us"] == 250   # 2 x 125 us, folded
        assert ports[1]["depth_pkts"] == 64 and ports[4]["rate_bps"] == 0  # defaults, unshaped
        assert net.switches["s1"].alive()
    assert_clean(rid)


def test_embedded_forwards_with_the_controller(embedded_bin):
    """The whole chain: Network -> endpoints -> p4cc_control programs the
    pipeline, the plan's routes and link model -> hosts reach each other
    through P4."""
    build = REPO / "p4src" / "build"
    if not (build / "cc_switch.json").exists():
        pytest.skip(f"no compiled P4 program in {build} (p4c output)")
    import copy
    import re
    d = copy.deepcopy(TWO_SWITCHES)
    d["links"][0]["delay_us"] = "1ms"       # a -- s1
    d["links"][1]["delay_us"] = "2ms"       # s1 -- s2
    d["links"][2]["delay_us"] = "1ms"       # b -- s2
    topo = Topology.from_dict(d)
    with Network(topo, target="embedded", ready_timeout=30) as net:
        rid = net.run_id
        with _program(net, topo):
            out = net.run("a", ["ping", "-c", "3", "-i", "0.2", "-W", "2", net.ip("b")]).stdout
            assert "ttl=62" in out, out
            # RTT = 2 x (1 + 2 + 1) ms: host-link delays folded onto the switch
            # egress towards the host, the switch-switch delay on both egresses
            rtt_min = float(re.search(r"= ([\d.]+)/", out).group(1))
            assert 8.0 <= rtt_min < 8.0 + 5.0, out
            assert net.ping("c", "a")
    assert_clean(rid)


def test_bmv2_two_hosts():
    try:
        find_bmv2()
    except TargetUnavailable as e:
        pytest.skip(str(e))
    topo = load_topology("two_hosts")
    with Network(topo, target="bmv2", ready_timeout=30) as net:
        rid = net.run_id
        assert net.switches["s1"].alive()
    assert_clean(rid)


def test_link_emulators_give_their_ports_delay_and_are_torn_down():
    """p4cc-link spliced in front of three ports of a two-switch chain (as
    on bmv2; here in front of the test forwarder): each port's delay, set
    through the emulator's admin API, adds to the round trip, once per
    direction; a dead emulator is reported; nothing is left."""
    import json
    import re
    import urllib.request

    from p4cc_topo.links import find_link
    try:
        find_link()
    except TargetUnavailable as e:
        pytest.skip(str(e))
    topo = Topology.from_dict(TWO_SWITCHES)
    emulated = {"s1": [1, 2], "s2": [2]}
    with Network(topo, target="pyfwd", emulated=emulated) as net:
        rid = net.run_id
        assert net.emulated == emulated and set(net.link_procs) == {"s1", "s2"}
        eps = net.endpoints()
        assert eps["s1"]["link_ports"] == [1, 2] and eps["s2"]["link_ports"] == [2]

        def least_rtt() -> tuple[float, str]:
            out = net.run("a", ["ping", "-n", "-c", "5", "-i", "0.2", net.ip("b")]).stdout
            return float(re.search(r"= ([\d.]+)/", out).group(1)), out

        # The path's own RTT first: through the Python forwarder it is
        # milliseconds when the VM's host is busy (a CI run saw every ping
        # of a round take 10-20 ms), so the delays are judged against it.
        base, _ = least_rtt()
        for sw, port, delay_us in (("s1", 1, 2000), ("s1", 2, 3000), ("s2", 2, 1000)):
            req = urllib.request.Request(f"http://{eps[sw]['link_admin_addr']}/ports/{port}",
                                         data=json.dumps({"delay_us": delay_us}).encode(),
                                         method="PUT")
            urllib.request.urlopen(req, timeout=5).read()
        # a -> b: s1 port 2 (3 ms); b -> a: s2 port 2 (1 ms), s1 port 1 (2 ms):
        # never less than 6 ms, and at most a few ms more than the path
        # took without them (a delay applied twice is 6 ms more).
        rtt_min, out = least_rtt()
        assert 6.0 <= rtt_min < base + 6.0 + 4.0, f"without the delays {base} ms\n{out}"
        assert net.ping("c", "a")
        names = {l for l in subprocess.run(["ip", "-o", "link"], capture_output=True,
                                           text=True).stdout.split() if l.startswith(f"p4cc{rid}")}
        for end in ("w", "p"):
            assert any(n.startswith(naming.port_ifname(rid, 1, 2, end)) for n in names), names
        net.link_procs["s2"].proc.kill()
        net.link_procs["s2"].proc.wait()
        assert net.dead_switches() == ["link emulator of s2"]
    assert_clean(rid)


def test_start_without_with_is_torn_down_at_exit(env_with_pkg):
    rid = fresh_run_id()
    script = (
        "from p4cc_topo import Network, load_topology\n"
        f"net = Network(load_topology('two_hosts'), target='pyfwd', run_id='{rid}').start()\n"
        "net.popen('h1', ['sleep', '300'])\n"
        "assert net.ping('h1', 'h2')\n"
        "print('up', flush=True)\n"
    )
    r = subprocess.run([sys.executable, "-c", script], env=env_with_pkg, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and "up" in r.stdout, r.stderr
    assert_clean(rid)


def test_popen_from_a_thread_is_still_stopped():
    import threading
    with Network(load_topology("two_hosts"), target="pyfwd", start_switches=False) as net:
        rid = net.run_id
        out = {}
        t = threading.Thread(target=lambda: out.setdefault("p", net.popen("h2", ["sleep", "300"])))
        t.start()
        t.join()
        time.sleep(0.2)
        assert out["p"].poll() is None      # not killed when its thread ended
    assert out["p"].poll() is not None
    assert_clean(rid)


def test_check_alive_reports_a_dead_switch():
    from p4cc_topo.targets import SwitchStartError
    with Network(load_topology("two_hosts"), target="pyfwd") as net:
        rid = net.run_id
        net.check_alive()
        assert net.dead_switches() == []
        net.switches["s1"].proc.kill()
        net.switches["s1"].proc.wait()
        assert net.dead_switches() == ["s1"]
        with pytest.raises(SwitchStartError, match="pyfwd switch s1 exited"):
            net.check_alive()
    assert_clean(rid)


@pytest.mark.parametrize("sig,after", [(signal.SIGINT, 0.4), (signal.SIGTERM, 0.8),
                                       (signal.SIGINT, 1.5)])
def test_signal_while_building_tears_down(env_with_pkg, sig, after):
    """Ctrl-C/SIGTERM at any point of a (slow, 40-host) build removes it all."""
    rid = fresh_run_id()
    p = subprocess.Popen([sys.executable, "-m", "p4cc_topo", "up", "star", "-p", "n_hosts=40",
                          "-p", "rate_bps=none", "-p", "delay_us=0", "--target", "pyfwd",
                          "--run-id", rid], env=env_with_pkg, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, preexec_fn=as_from_a_terminal)
    time.sleep(after)
    p.send_signal(sig)
    try:
        p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("did not exit after the signal")
    assert p.returncode != 0
    assert_clean(rid, timeout=10)
