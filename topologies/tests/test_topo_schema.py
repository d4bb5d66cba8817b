import copy

import pytest

from p4cc_topo.model import Topology, TopologyError, default_mac, port_mac

BASE = {
    "name": "t",
    "hosts": [{"name": "h1", "ip": "10.0.0.1"}, {"name": "h2", "ip": "10.0.0.2/24"}],
    "switches": [{"name": "s1", "id": 1}],
    "links": [{"endpoints": ["h1", "s1"]}, {"endpoints": ["h2", "s1"]}],
}


def topo_with(**changes):
    d = copy.deepcopy(BASE)
    d.update(changes)
    return d


def errors_of(d) -> list[str]:
    with pytest.raises(TopologyError) as e:
        Topology.from_dict(d)
    return e.value.problems


def one_error(d) -> str:
    errs = errors_of(d)
    assert len(errs) == 1, errs
    return errs[0]


def test_minimal_topology():
    t = Topology.from_dict(BASE)
    assert list(t.hosts) == ["h1", "h2"]
    assert t.hosts["h1"].mac == "02:00:0a:00:00:01"
    assert t.hosts["h1"].prefix_len == 24
    assert [(str(l.a), str(l.b)) for l in t.links] == [("h1", "s1:1"), ("h2", "s1:2")]
    assert t.links[0].rate_bps is None and t.links[0].delay_us == 0
    assert t.attachment("h2").port == 2


def test_unknown_keys_are_named_with_suggestions():
    d = topo_with()
    d["link"] = []
    d["hosts"][0]["ipaddr"] = "x"
    d["links"][0]["rate"] = "1Gbps"
    d["links"][1]["dealy_us"] = "1ms"
    errs = errors_of(d)
    text = "\n".join(errs)
    assert "topology: unknown key 'link' (did you mean 'links'?)" in text
    assert "hosts[0]: unknown key 'ipaddr'" in text
    assert "links[0]: unknown key 'rate' (did you mean 'rate_bps'?)" in text
    assert "links[1]: unknown key 'dealy_us' (did you mean 'delay_us'?)" in text


def test_bad_rate_mbit():
    d = topo_with()
    d["links"][0]["rate_bps"] = "100Mbit"
    err = one_error(d)
    assert err.startswith("links[0].rate_bps: rate '100Mbit': unknown unit 'Mbit'")
    assert 'did you mean "100Mbps"' in err


def test_bad_values_in_defaults_are_located():
    d = topo_with(defaults={"delay_us": "5 parsecs"})
    errs = errors_of(d)
    assert all("defaults.delay_us (for links[" in e for e in errs)
    assert len(errs) == 2


def test_duplicate_ip_mac_name_id():
    d = topo_with()
    d["hosts"].append({"name": "h3", "ip": "10.0.0.1", "mac": "02:00:0a:00:00:02"})
    d["hosts"].append({"name": "h1", "ip": "10.0.0.9"})
    d["switches"].append({"name": "s2", "id": 1})
    d["links"] += [{"endpoints": ["h3", "s1"]}, {"endpoints": ["s1", "s2"]}]
    errs = errors_of(d)
    text = "\n".join(errs)
    assert "hosts[2] (h3).ip: duplicate ip 10.0.0.1 (also h1)" in text
    assert "hosts[2] (h3).mac: duplicate mac 02:00:0a:00:00:02 (also h2)" in text
    assert "hosts[3] (h1): duplicate name 'h1'" in text
    assert "switches[1] (s2).id: duplicate id 1 (also s1)" in text


def test_host_and_switch_share_a_name():
    d = topo_with()
    d["switches"].append({"name": "h1", "id": 2})
    assert "duplicate name 'h1'" in one_error(d)


@pytest.mark.parametrize("ip,frag", [
    ("10.0.0", "is not an IPv4 address"),
    ("10.0.0.0/24", "network or broadcast"),
    ("10.0.0.255/24", "network or broadcast"),
    ("169.254.0.1", "link-local"),
    ("127.0.0.1", "loopback"),
    ("224.0.0.1", "multicast"),
])
def test_bad_ips(ip, frag):
    d = topo_with()
    d["hosts"][0]["ip"] = ip
    assert frag in "\n".join(errors_of(d))


@pytest.mark.parametrize("mac,frag", [
    ("02:00:00:00:00", "not a MAC"),
    ("01:00:5e:00:00:01", "multicast MAC"),
    ("02:cc:00:01:00:01", "reserved for switch ports"),
])
def test_bad_macs(mac, frag):
    d = topo_with()
    d["hosts"][0]["mac"] = mac
    assert frag in one_error(d)


def test_mac_case_normalised():
    d = topo_with()
    d["hosts"][0]["mac"] = "02:AB:00:00:00:01"
    assert Topology.from_dict(d).hosts["h1"].mac == "02:ab:00:00:00:01"


@pytest.mark.parametrize("name", ["H1", "1h", "h-1", "a" * 17, "", None])
def test_bad_names(name):
    d = topo_with()
    d["hosts"][0]["name"] = name
    errs = errors_of(d)
    assert "hosts[0].name" in errs[0] and "not a valid name" in errs[0]


def test_link_endpoint_errors():
    d = topo_with()
    d["links"] = [
        {"endpoints": ["h1", "s9"]},             # unknown node
        {"endpoints": ["h2"]},                    # one end
        {"endpoints": ["h1", "h2"]},              # two hosts
        {"endpoints": ["s1", "s1"]},              # self loop
        {"endpoints": ["h1:3", "s1"]},            # port on a host
        {"endpoints": ["h2", "s1:999"]},          # port range
    ]
    text = "\n".join(errors_of(d))
    assert "links[0].endpoints[1]: unknown node 's9' (did you mean 's1'?)" in text
    assert "links[1].endpoints: must be a list of two nodes" in text
    assert "joins two hosts" in text
    assert "cannot connect s1 to itself" in text
    assert "a host end takes no port" in text
    assert "port '999' must be 1..510" in text


def test_port_conflict_and_auto_numbering():
    d = topo_with()
    d["links"] = [{"endpoints": ["h1", "s1:2"]}, {"endpoints": ["h2", "s1"]}]
    t = Topology.from_dict(d)
    assert t.attachment("h1").port == 2 and t.attachment("h2").port == 1
    d["links"] = [{"endpoints": ["h1", "s1:2"]}, {"endpoints": ["h2", "s1:2"]}]
    assert "port s1:2 already used by links[0] (h1--s1)" in one_error(d)


def test_each_host_needs_exactly_one_link():
    d = topo_with()
    d["hosts"].append({"name": "h3", "ip": "10.0.0.3"})
    d["links"].append({"endpoints": ["h1", "s1"]})
    text = "\n".join(errors_of(d))
    assert "host h3: not connected to any switch" in text
    assert "host h1: has 2 links" in text


def test_disconnected_switches():
    d = topo_with()
    d["switches"].append({"name": "s2", "id": 2})
    d["links"][1] = {"endpoints": ["h2", "s2"]}
    assert "switch s2 is not connected to switch s1" in one_error(d)


def test_per_end_properties():
    d = topo_with()
    d["switches"].append({"name": "s2", "id": 2})
    d["links"][1] = {"endpoints": ["h2", "s2"]}
    d["links"].append({"endpoints": ["s1", "s2"], "buffer_pkts": {"s1": 100, "s2": 50},
                       "ecn_k_pkts": 20, "loss": {"s2": "1%"}, "rate_bps": "10Mbps",
                       "delay_us": "1ms"})
    t = Topology.from_dict(d)
    l = t.links[2]
    assert l.buffer_pkts == {"s1": 100, "s2": 50}
    assert l.ecn_k_pkts == {"s1": 20, "s2": 20}
    assert l.loss == {"s2": 0.01}
    assert l.rate_bps == 10_000_000 and l.delay_us == 1000
    d["links"][2]["buffer_pkts"] = {"h2": 5}
    assert "'h2' is not a switch end of this link" in one_error(d)
    d["links"][2]["buffer_pkts"] = 10
    d["links"][2]["rate_bps"] = {"s1": "1Gbps"}
    assert "is a property of the whole link" in one_error(d)


def test_defaults_apply_and_links_override():
    d = topo_with(defaults={"rate_bps": "1Gbps", "delay_us": "10us", "buffer_pkts": 64})
    d["links"][1]["rate_bps"] = "100Mbps"
    t = Topology.from_dict(d)
    assert t.links[0].rate_bps == 10**9 and t.links[1].rate_bps == 10**8
    assert all(l.delay_us == 10 and l.buffer_pkts == {"s1": 64} for l in t.links)


@pytest.mark.parametrize("key,val,frag", [
    ("buffer_pkts", 0, "at least 1"),
    ("ecn_k_pkts", -1, "at least 0"),
    ("loss", "7 percent", "unknown unit"),
    ("buffer_pkts", "10KB", "unknown unit"),
])
def test_bad_queue_values(key, val, frag):
    d = topo_with()
    d["links"][0][key] = val
    assert frag in one_error(d)


def test_collector_and_roles():
    d = topo_with(collector="h3", roles={"senders": ["h1", "hx"], "receiver": "h2"})
    text = "\n".join(errors_of(d))
    assert "collector: 'h3' is not a host" in text
    assert "roles.senders: 'hx' is not a host" in text
    t = Topology.from_dict(topo_with(collector="h2", roles={"senders": ["h1"], "receiver": "h2"}))
    assert t.collector == "h2" and t.role("receiver") == ["h2"] and t.role("senders") == ["h1"]
    assert t.role("nobody") == []


def test_switch_id_checks():
    d = topo_with()
    d["switches"][0]["id"] = 70000
    assert "must be an integer 0..65535" in one_error(d)
    d["switches"][0]["id"] = "1"
    assert "must be an integer" in one_error(d)
    d["switches"][0].pop("id")
    assert Topology.from_dict(d).switches["s1"].id == 1


def test_not_a_mapping_and_empty():
    with pytest.raises(TopologyError):
        Topology.from_dict([1, 2])
    errs = errors_of({"hosts": [], "switches": [], "links": []})
    assert any("hosts: must be a non-empty list" in e for e in errs)


def test_all_problems_reported_at_once():
    d = topo_with()
    d["hosts"][1]["ip"] = "10.0.0.1"
    d["links"][0]["rate_bps"] = "1 Gbit"
    d["links"][1]["delay_us"] = "1 fortnight"
    e = pytest.raises(TopologyError, Topology.from_dict, d).value
    assert len(e.problems) == 3
    assert str(e).startswith("3 topology errors")


def test_yaml_file_errors(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("hosts: [\n")
    e = pytest.raises(TopologyError, Topology.load, p).value
    assert "not valid YAML" in str(e) and str(p) in str(e)
    e = pytest.raises(TopologyError, Topology.load, tmp_path / "missing.yaml").value
    assert "cannot read" in str(e)


def test_yaml_load_and_round_trip(tmp_path):
    p = tmp_path / "t.yaml"
    p.write_text("""
name: lab
collector: h2
defaults: {rate_bps: 100Mbps, delay_us: 250us}
hosts:
  - {name: h1, ip: 10.0.0.1}
  - {name: h2, ip: 10.0.0.2, mac: "02:00:00:00:00:aa"}
switches: [{name: s1, id: 7}]
links:
  - {endpoints: [h1, s1], loss: 2%}
  - {endpoints: [h2, "s1:9"], buffer_pkts: 120, ecn_k_pkts: 20}
""")
    t = Topology.load(p)
    assert t.name == "lab" and t.switches["s1"].id == 7
    assert t.links[0].loss == {"s1": 0.02}
    assert t.attachment("h2").port == 9
    again = Topology.from_dict(t.to_dict())
    assert again == t
    t2 = Topology.from_dict(__import__("yaml").safe_load(t.to_yaml()))
    assert t2 == t


def test_macs_helpers():
    assert default_mac("10.0.1.2") == "02:00:0a:00:01:02"
    assert port_mac(1, 3) == "02:cc:00:01:00:03"
    assert port_mac(0x1234, 0x1ff) == "02:cc:12:34:01:ff"


def test_next_hops_two_switches():
    d = {
        "hosts": [{"name": "a", "ip": "10.0.0.1"}, {"name": "b", "ip": "10.0.0.2"},
                  {"name": "c", "ip": "10.0.0.3"}],
        "switches": [{"name": "s1", "id": 1}, {"name": "s2", "id": 2}, {"name": "s3", "id": 3}],
        "links": [{"endpoints": ["a", "s1:1"]}, {"endpoints": ["s1:2", "s2:2"]},
                  {"endpoints": ["b", "s2:1"]}, {"endpoints": ["s2:3", "s3:3"]},
                  {"endpoints": ["c", "s3:1"]}],
    }
    t = Topology.from_dict(d)
    assert t.next_hops("s1") == {"a": (1, "02:00:0a:00:00:01"), "b": (2, port_mac(2, 2)),
                                 "c": (2, port_mac(2, 2))}
    assert t.next_hops("s2") == {"a": (2, port_mac(1, 2)), "b": (1, "02:00:0a:00:00:02"),
                                 "c": (3, port_mac(3, 3))}
    assert t.next_hops("s3")["a"] == (3, port_mac(2, 3))
