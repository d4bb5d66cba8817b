"""Switch configurations from a topology, switch command lines, naming: no
namespaces."""
import json
import re
from pathlib import Path

import pytest

from p4cc_topo import naming
from p4cc_topo.builtin import dumbbell, load_topology, wishbone
from p4cc_topo.model import GATEWAY_IP, port_mac
from p4cc_topo.network import Network
from p4cc_topo.plan import Postcards, Route, switch_configs
from p4cc_topo.targets import Bmv2Switch, EmbeddedSwitch, TargetUnavailable, interfaces, resolve_target

RID = "7f3a"


def test_switch_configs_delay_folding_routes_and_postcards():
    t = wishbone(n_pairs=2, access_delay_us="100us", ecn_k_pkts=30, loss="1%")
    cfg = switch_configs(t, postcard_one_in_n=4)
    assert set(cfg) == {"s1", "s2"}
    b1, b2 = cfg["s1"].ports[1], cfg["s2"].ports[1]
    assert b1.peer == "s2" and b1.peer_port == 1
    # switch-switch link: its one-way delay on both egresses
    assert b1.delay_us == b2.delay_us == 15_000
    # host link: folded, twice the one-way delay towards the host
    h = cfg["s1"].ports[2]
    assert h.peer == "h1" and h.delay_us == 200
    assert b1.depth_pkts == 250 and b1.rate_bps == 100_000_000
    assert b1.ecn_k_pkts == 30 and b1.loss == 0.01 and h.ecn_k_pkts is None
    s1 = cfg["s1"]
    assert s1.device_id == s1.switch_id == 1
    # the one routing: towards s2's hosts through the next switch's port MAC
    assert Route("10.0.0.101/32", 1, port_mac(2, 1), "r1") in s1.routes
    assert Route("10.0.0.1/32", 2, "02:00:0a:00:00:01", "h1") in s1.routes
    assert len(s1.routes) == len(t.hosts)
    assert s1.postcards == Postcards(port=4, collector_ip="10.0.0.254",
                                     collector_mac="02:00:0a:00:00:fe",
                                     switch_ip="169.254.128.1", one_in_n=4)
    assert cfg["s2"].postcards.port == 1    # towards s1, where the collector is
    assert cfg["s2"].postcards.collector_mac == port_mac(1, 1)


def test_interfaces_are_named_per_run_and_fit():
    t = wishbone(n_pairs=2)
    ifaces = interfaces(t, RID)
    assert ifaces["s1"][1] == "p4cc7f3as1e1" and ifaces["s2"][1] == "p4cc7f3as2e1"
    for sw in ifaces.values():
        for name in sw.values():
            assert len(name) <= 15 and naming.run_of_link(name) == RID


def test_interface_names_fit_at_the_limits():
    assert naming.port_ifname("9fff", 99, 510) == "p4cc9fffs99e510"
    assert len(naming.port_ifname("9fff", 99, 510)) == 15
    with pytest.raises(ValueError):
        naming.port_ifname("9fff", 100, 510)


def test_naming_never_matches_other_prefixes():
    others_ns = ["p4cctest-1", "p4cctest-abc-h1", "p4ccbench-0", "p4cctc0", "p4cc-x123-h1",
                 "p4cc-abcd-h1", "p4cc-12345-h1", "p4cc", "p4cc-"]
    others_links = ["p4cctest0s1e1", "p4ccbenchs1e1", "p4cctc1s1e1", "p4cctcs1e1", "p4ccabcds1e1",
                    "p4cc7f3a", "p4cc7f3as1", "p4cc7f3as1e1x", "p4cctest-veth", "p4ccbench-s1-e1",
                    "veth0", "eth0"]
    for n in others_ns:
        assert naming.run_of_netns(n) is None, n
    for n in others_links:
        assert naming.run_of_link(n) is None, n
    assert naming.run_of_netns("p4cc-7f3a-h1") == "7f3a"
    assert naming.run_of_link("p4cc7f3as1e1") == "7f3a"
    assert naming.run_of_link("p4cc7f3as1e1@if2") == "7f3a"
    for _ in range(200):
        rid = naming.new_run_id()
        assert re.fullmatch(naming.RUN_ID_RE, rid)
    with pytest.raises(ValueError):
        naming.check_run_id("test")


def test_resolve_target(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="unknown target"):
        resolve_target("tofino9")
    assert resolve_target("pyfwd") == "pyfwd"
    monkeypatch.setenv("P4CC_SWITCH_BIN", str(tmp_path / "nope"))
    monkeypatch.setenv("PATH", str(tmp_path))
    # A machine with bmv2 names it here; this test is about one without.
    monkeypatch.delenv("P4CC_BMV2_BIN", raising=False)
    monkeypatch.setattr("p4cc_topo.targets.REPO_ROOT", tmp_path)
    with pytest.raises(TargetUnavailable, match="make build"):
        resolve_target("embedded")
    with pytest.raises(TargetUnavailable, match="build .*from source"):
        resolve_target("bmv2")
    fake = tmp_path / "p4cc-switch"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("P4CC_SWITCH_BIN", str(fake))
    assert resolve_target("auto") == "embedded"
    monkeypatch.setenv("P4CC_TARGET", "bmv2")  # asked for, absent: falls back
    assert resolve_target("auto") == "embedded"
    bm = tmp_path / "simple_switch_grpc"
    bm.write_text("#!/bin/sh\n")
    bm.chmod(0o755)
    assert resolve_target("auto") == "bmv2"


def test_embedded_command_starts_bare(tmp_path):
    t = dumbbell(loss="1%")
    sw = EmbeddedSwitch("s1", 1, interfaces(t, RID)["s1"], RID, tmp_path,
                        binary=Path("/x/p4cc-switch"), seed=7)
    sw.grpc_port, sw.admin_port = 50001, 50002
    cmd = sw.command()
    assert cmd[:7] == ["/x/p4cc-switch", "--device-id", "1", "--grpc-addr", "127.0.0.1:50001",
                       "--admin-addr", "127.0.0.1:50002"]
    assert cmd.count("--interface") == 4 and "3@p4cc7f3as1e3" in cmd
    assert cmd[cmd.index("--seed") + 1] == "7"
    # no port settings on the command line: they come through the controller
    assert not any(a in cmd for a in ("--port-config", "--rate", "--delay", "--loss", "--depth"))
    d = sw.describe()
    assert d["admin_addr"] == "127.0.0.1:50002" and d["port_ifaces"][3] == "p4cc7f3as1e3"
    assert "--rt-prio" not in cmd


def test_embedded_command_with_a_realtime_packet_thread(tmp_path):
    t = dumbbell()
    sw = EmbeddedSwitch("s1", 1, interfaces(t, RID)["s1"], RID, tmp_path,
                        binary=Path("/x/p4cc-switch"), rt_prio=20)
    cmd = sw.command()
    assert cmd[cmd.index("--rt-prio") + 1] == "20"


def test_bmv2_command(tmp_path):
    t = dumbbell(delay_us=0)
    sw = Bmv2Switch("s1", 3, interfaces(t, RID)["s1"], RID, tmp_path,
                    binary=Path("/usr/bin/simple_switch_grpc"))
    sw.grpc_port, sw.thrift_port = 50051, 9091
    cmd = sw.command()
    assert cmd[:3] == ["/usr/bin/simple_switch_grpc", "--device-id", "3"]
    assert "1@p4cc7f3as1e1" in cmd and "--no-p4" in cmd and "--thrift-port" in cmd
    assert cmd[cmd.index("--") + 1:] == ["--grpc-server-addr", "127.0.0.1:50051"]
    assert sw.describe()["thrift_port"] == 9091


def test_host_script_contents():
    t = load_topology("two_hosts")
    net = Network(t, target="pyfwd")
    net.run_id, net.ports = RID, interfaces(t, RID)
    s = net.host_script("h2")
    assert "echo 1 > /proc/sys/net/ipv4/tcp_ecn" in s
    assert "ip addr add 10.0.0.2/24 dev eth0 noprefixroute" in s
    assert f"ip neigh replace {GATEWAY_IP} lladdr {port_mac(1, 2)} dev eth0 nud permanent" in s
    assert f"ip route add default via {GATEWAY_IP} dev eth0" in s
    assert "tso off gso off gro off lro off tx off" in s
