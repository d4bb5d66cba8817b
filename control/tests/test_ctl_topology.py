import pytest

from p4cc_control.errors import NameNotFound, ValueOutOfRange
from p4cc_control.topology import Topology, load_topology

WISHBONE = {
    "switches": {"s1": {"switch_id": 1, "ports": {3: {"k": 20}}}, "s2": {"switch_id": 2}},
    "hosts": {
        "h1": {"ip": "10.0.1.1", "mac": "00:00:0a:00:01:01", "switch": "s1", "port": 1},
        "h2": {"ip": "10.0.1.2", "mac": "00:00:0a:00:01:02", "switch": "s1", "port": 2},
        "h3": {"ip": "10.0.2.1", "mac": "00:00:0a:00:02:01", "switch": "s2", "port": 1},
    },
    "links": [{"a": "s1", "a_port": 3, "b": "s2", "b_port": 2}],
}


def test_routes_per_switch():
    t = Topology(WISHBONE)
    s1 = {e["match"]["dst_addr"]: e["params"] for e in t.forwarding_entries("s1")}
    assert s1["10.0.1.1/32"] == {"port": 1, "dst_mac": "00:00:0a:00:01:01"}
    assert s1["10.0.2.1/32"] == {"port": 3, "dst_mac": "00:00:0a:00:02:01"}
    s2 = {e["match"]["dst_addr"]: e["params"] for e in t.forwarding_entries("s2")}
    assert s2["10.0.1.2/32"]["port"] == 2 and s2["10.0.2.1/32"]["port"] == 1
    assert t.switch("s1").ports[3] == {"k": 20}


def test_explicit_route_wins_and_single_switch_default():
    d = {"hosts": {"h1": {"ip": "10.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s", "port": 1}},
         "routes": [{"switch": "s", "prefix": "10.9.0.0/16", "port": 2,
                     "dst_mac": "00:00:00:00:00:02"}]}
    t = Topology(d)
    assert t.switch().name == "s"
    assert [e["match"]["dst_addr"] for e in t.forwarding_entries()] == ["10.0.0.1/32", "10.9.0.0/16"]


def test_three_switch_line_picks_first_hop():
    d = {"switches": {"a": {}, "b": {}, "c": {}},
         "hosts": {"hc": {"ip": "10.0.0.3", "mac": "00:00:00:00:00:03", "switch": "c", "port": 1}},
         "links": [["a", 2, "b", 1], ["b", 2, "c", 2]]}
    e = Topology(d).forwarding_entries("a")
    assert e[0]["params"]["port"] == 2


@pytest.mark.parametrize("bad,err", [
    ({"hosts": {"h": {"ip": "10.0.0.1", "mac": "zz", "switch": "s", "port": 1}}}, ValueOutOfRange),
    ({"hosts": {"h": {"ip": "10.0.0.300", "mac": "00:00:00:00:00:01", "switch": "s", "port": 1}}},
     ValueOutOfRange),
    ({"hosts": {"h": {"ip": "10.0.0.1", "mac": "00:00:00:00:00:01", "switch": "s", "port": 999}}},
     ValueOutOfRange),
    ({"switches": {"s1": {}}, "hosts": {"h": {"ip": "10.0.0.1", "mac": "00:00:00:00:00:01",
                                                "switch": "s9", "port": 1}}}, NameNotFound),
    ({"routes": [{"switch": "s", "prefix": "10.0.0.1/24", "port": 1, "dst_mac": "00:00:00:00:00:01"}]},
     ValueOutOfRange),
    ({"switches": {"s": {"ports": {1: {"kk": 3}}}}}, ValueOutOfRange),
])
def test_bad_topologies(bad, err):
    with pytest.raises(err):
        Topology(bad)


def test_load_yaml(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("hosts:\n  h1: {ip: 10.0.0.1, mac: '00:00:00:00:00:01', switch: s1, port: 1}\n")
    assert load_topology(str(p)).hosts["h1"].port == 1
    with pytest.raises(ValueOutOfRange, match="not found"):
        load_topology(str(tmp_path / "missing.yaml"))


def test_switch_view_from_topologies_package():
    # Shape of p4cc_topo.network.switch_view() (docs/topologies.md).
    view = {
        "run_id": "r1", "target": "embedded", "topology": "dumbbell", "collector": None,
        "hosts": {"h1": {"ip": "10.0.0.1", "prefix_len": 24, "mac": "02:00:0a:00:00:01",
                         "netns": "p4cc-r1-h1", "iface": "eth0", "switch": "s1", "port": 1,
                         "gateway_mac": "02:cc:00:01:00:01"}},
        "switches": {"s1": {
            "device_id": 1, "switch_id": 1, "grpc_addr": "127.0.0.1:50001",
            "admin_addr": "127.0.0.1:50002",
            "ports": {"1": {"iface": "p4ccr1s1e1", "mac": "02:cc:00:01:00:01", "loss": 0.0}},
            "routes": [{"prefix": "10.0.0.1/32", "port": 1, "dst_mac": "02:00:0a:00:00:01"},
                       {"prefix": "10.0.0.2/32", "port": 2, "dst_mac": "02:cc:00:02:00:01"}],
            "ecn_k_pkts": {"2": 20}, "p4_loss": {"2": 0.01}, "collector_port": None}},
    }
    t = Topology(view)
    assert t.is_view
    sw = t.switch()
    assert (sw.addr, sw.admin_addr, sw.target) == ("127.0.0.1:50001", "127.0.0.1:50002", "embedded")
    assert sw.ports == {2: {"k": 20, "loss": 0.01}}
    e = t.forwarding_entries()
    assert [x["params"] for x in e] == [{"port": 1, "dst_mac": "02:00:0a:00:00:01"},
                                       {"port": 2, "dst_mac": "02:cc:00:02:00:01"}]
