"""Port plans, capability checks, switch command lines, naming: no namespaces."""
import json
import re
from pathlib import Path

import pytest

from p4cc_topo import naming
from p4cc_topo.builtin import dumbbell, load_topology, wishbone
from p4cc_topo.model import GATEWAY_IP, port_mac
from p4cc_topo.network import Network, switch_view
from p4cc_topo.targets import (Bmv2Switch, EmbeddedSwitch, TargetCapabilityError, TargetUnavailable,
                               check_capabilities, plan_ports, resolve_target)

RID = "7f3a"


def test_port_plan_names_macs_and_delay_folding():
    t = wishbone(n_pairs=2, access_delay_us="100us")
    plan = plan_ports(t, RID)
    assert set(plan) == {"s1", "s2"}
    b1, b2 = plan["s1"][1], plan["s2"][1]
    assert b1.iface == "p4cc7f3as1e1" and b2.iface == "p4cc7f3as2e1"
    assert b1.mac == port_mac(1, 1) and b1.peer == "s2" and b1.peer_port == 1
    # switch-switch link: its one-way delay on both egresses
    assert b1.egress_delay_us == b2.egress_delay_us == 15_000
    # host link: folded, twice the one-way delay towards the host
    h = plan["s1"][2]
    assert h.peer == "h1" and h.delay_us == 100 and h.egress_delay_us == 200
    assert b1.buffer_pkts == 250 and b1.rate_bps == 100_000_000
    for sw in plan.values():
        for p in sw.values():
            assert len(p.iface) <= 15
            assert naming.run_of_link(p.iface) == RID


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


def test_capabilities_embedded_applies_everything():
    t = dumbbell(loss="2%")
    check_capabilities(t, "embedded")


def test_capabilities_bmv2_without_netem_names_the_property():
    t = dumbbell(loss="2%")
    with pytest.raises(TargetCapabilityError) as e:
        check_capabilities(t, "bmv2", netem=False)
    text = str(e.value)
    assert "links[0] (h1--s1:1): delay_us=125 needs netem" in text
    assert "links[2] (rx--s1:3): loss={'s1': 0.02} needs netem" in text
    # rate and buffer are fine on bmv2 (queue rate / depth)
    assert "rate_bps" not in text and "buffer_pkts" not in text
    # loss through the P4 program instead: only the delays remain
    with pytest.raises(TargetCapabilityError) as e:
        check_capabilities(t, "bmv2", netem=False, loss_mode="p4")
    assert "loss" not in str(e.value)
    check_capabilities(dumbbell(delay_us=0), "bmv2", netem=False)
    check_capabilities(t, "bmv2", netem=True)


def test_capabilities_pyfwd_refuses_every_property():
    with pytest.raises(TargetCapabilityError) as e:
        check_capabilities(dumbbell(), "pyfwd")
    text = str(e.value)
    for frag in ("rate_bps=100000000", "delay_us=125", "buffer_pkts={'s1': 120}", "ecn_k_pkts={'s1': 20}"):
        assert frag in text
    check_capabilities(load_topology("two_hosts"), "pyfwd")


def test_resolve_target(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="unknown target"):
        resolve_target("tofino9")
    assert resolve_target("pyfwd") == "pyfwd"
    monkeypatch.setenv("P4CC_SWITCH_BIN", str(tmp_path / "nope"))
    monkeypatch.setenv("PATH", str(tmp_path))
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


def test_embedded_command_and_port_file(tmp_path):
    t = dumbbell(loss="1%")
    plan = plan_ports(t, RID)
    sw = EmbeddedSwitch("s1", 1, plan["s1"], RID, tmp_path, binary=Path("/x/p4cc-switch"), seed=7)
    sw.grpc_port, sw.admin_port = 50001, 50002
    sw.prepare()
    cmd = sw.command()
    assert cmd[:7] == ["/x/p4cc-switch", "--device-id", "1", "--grpc-addr", "127.0.0.1:50001",
                       "--admin-addr", "127.0.0.1:50002"]
    assert cmd.count("--interface") == 4 and "3@p4cc7f3as1e3" in cmd
    pf = json.loads(sw.port_config_path.read_text())
    assert pf["seed"] == 7
    p3 = next(p for p in pf["ports"] if p["port"] == 3)
    assert p3 == {"port": 3, "iface": "p4cc7f3as1e3", "delay_us": 250, "loss": 0.01,
                  "rate_bps": 100_000_000, "depth_pkts": 120}
    p4 = next(p for p in pf["ports"] if p["port"] == 4)   # collector: unshaped
    assert p4 == {"port": 4, "iface": "p4cc7f3as1e4", "delay_us": 0, "loss": 0.0}


def test_bmv2_command_and_queue_commands(tmp_path):
    t = dumbbell(delay_us=0)
    plan = plan_ports(t, RID)
    sw = Bmv2Switch("s1", 3, plan["s1"], RID, tmp_path, binary=Path("/usr/bin/simple_switch_grpc"))
    sw.grpc_port, sw.thrift_port = 50051, 9091
    cmd = sw.command()
    assert cmd[:3] == ["/usr/bin/simple_switch_grpc", "--device-id", "3"]
    assert "1@p4cc7f3as1e1" in cmd and "--no-p4" in cmd and "--thrift-port" in cmd
    assert cmd[cmd.index("--") + 1:] == ["--grpc-server-addr", "127.0.0.1:50051"]
    q = sw.queue_commands()
    # 100 Mbps at 1500-byte packets = 8333 packets/s
    assert "set_queue_rate 8333 3" in q and "set_queue_depth 120 3" in q
    assert "set_queue_rate 8333 1" in q
    assert not any(c.endswith(" 4") for c in q)   # the collector's port is unshaped


def test_switch_view_without_a_network():
    t = wishbone(n_pairs=2, ecn_k_pkts=30, loss="1%")
    plan = plan_ports(t, RID)
    net = Network(t, target="pyfwd")
    net.run_id, net.ports = RID, plan
    routes = net.routes()
    v = switch_view(t, RID, "embedded", plan, routes, {}, loss_mode="p4")
    assert v["collector"] == {"host": "mon", "ip": "10.0.0.254", "mac": "02:00:0a:00:00:fe"}
    assert v["gateway_ip"] == GATEWAY_IP
    assert v["hosts"]["r1"]["switch"] == "s2" and v["hosts"]["r1"]["netns"] == "p4cc-7f3a-r1"
    assert v["hosts"]["h1"]["gateway_mac"] == port_mac(1, 2)
    s1 = v["switches"]["s1"]
    assert s1["device_id"] == 1 and s1["ports"][1]["iface"] == "p4cc7f3as1e1"
    assert {"prefix": "10.0.0.101/32", "port": 1, "dst_mac": port_mac(2, 1)} in s1["routes"]
    assert {"prefix": "10.0.0.1/32", "port": 2, "dst_mac": "02:00:0a:00:00:01"} in s1["routes"]
    assert len(s1["routes"]) == len(t.hosts)
    assert s1["ecn_k_pkts"] == {1: 30}
    assert s1["p4_loss"] == {1: 0.01}
    assert s1["collector_port"] == 4 and v["switches"]["s2"]["collector_port"] == 1
    json.dumps(v)  # serialisable


def test_host_script_contents():
    t = load_topology("two_hosts")
    net = Network(t, target="pyfwd")
    net.run_id, net.ports = RID, plan_ports(t, RID)
    s = net.host_script("h2")
    assert "echo 1 > /proc/sys/net/ipv4/tcp_ecn" in s
    assert "ip addr add 10.0.0.2/24 dev eth0 noprefixroute" in s
    assert f"ip neigh replace {GATEWAY_IP} lladdr {port_mac(1, 2)} dev eth0 nud permanent" in s
    assert f"ip route add default via {GATEWAY_IP} dev eth0" in s
    assert "tso off gso off gro off lro off tx off" in s
