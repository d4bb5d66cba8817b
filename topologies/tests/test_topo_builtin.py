import pytest

from p4cc_topo.builtin import (BUILTIN_DIR, GENERATORS, MGMT_PORT, dumbbell, list_builtins,
                               load_topology, parking_lot, star, wishbone)
from p4cc_topo.model import Topology, TopologyError, port_mac


def network_part(t: Topology) -> dict:
    d = t.to_dict()
    for k in ("name", "description", "params"):
        d.pop(k, None)
    return d


@pytest.mark.parametrize("name", ["dumbbell", "star", "wishbone", "parking_lot"])
def test_builtin_yaml_equals_generator_defaults(name):
    from_yaml = Topology.load(BUILTIN_DIR / f"{name}.yaml")
    generated = GENERATORS[name]()
    assert network_part(from_yaml) == network_part(generated)
    assert from_yaml.name == generated.name


def test_all_builtin_files_check():
    files = sorted(BUILTIN_DIR.glob("*.yaml"))
    assert {f.stem for f in files} >= {"dumbbell", "star", "wishbone", "parking_lot", "two_hosts"}
    for f in files:
        Topology.load(f)


def test_dumbbell_defaults():
    t = dumbbell()
    assert sorted(t.hosts) == ["h1", "h2", "mon", "rx"]
    assert t.role("senders") == ["h1", "h2"] and t.role("receiver") == ["rx"]
    assert t.collector == "mon"
    rx = t.host_link("rx")
    assert rx.rate_bps == 100_000_000 and rx.buffer_pkts == {"s1": 120} and rx.ecn_k_pkts == {"s1": 20}
    # RTT between a sender and rx: 2 x (125 + 125) us = 500 us
    assert 2 * (t.host_link("h1").delay_us + rx.delay_us) == 500
    mon = t.host_link("mon")
    assert mon.rate_bps is None and mon.delay_us == 0
    assert t.params["generator"] == "dumbbell"


def test_dumbbell_parameters():
    t = dumbbell(n_senders=5, bottleneck_bps="100Mbps", access_bps="1Gbps", delay_us="1ms",
                 access_delay_us=["1ms", "2ms", "3ms", "4ms", "5ms"], buffer_pkts=50, ecn_k_pkts=None,
                 loss="1%", collector=False)
    assert len(t.hosts) == 6 and t.collector is None
    assert t.host_link("h3").delay_us == 3000 and t.host_link("h3").rate_bps == 10**9
    rx = t.host_link("rx")
    assert rx.loss == {"s1": 0.01} and rx.ecn_k_pkts == {} and rx.buffer_pkts == {"s1": 50}
    with pytest.raises(TopologyError, match="2 values given for 5 hosts"):
        dumbbell(n_senders=5, access_delay_us=[1, 2])
    with pytest.raises(TopologyError, match="n_senders: 0 is outside"):
        dumbbell(n_senders=0)
    with pytest.raises(TopologyError, match="100Mbit"):
        dumbbell(bottleneck_bps="100Mbit")


def test_star_and_incast():
    t = star()
    assert len(t.hosts) == 12 and len(t.switches) == 1
    assert all(l.rate_bps == 50_000_000 and l.delay_us == 10 for l in t.links if "mon" not in l.label())
    assert t.role("receiver") == ["h1"] and len(t.role("senders")) == 10
    t50 = load_topology("incast", n_hosts=50, rate_bps="100Mbps", buffer_pkts=100, ecn_k_pkts=20)
    assert len(t50.hosts) == 51
    assert t50.host_link("h50").buffer_pkts == {"s1": 100}


def test_wishbone_routes_cross_the_bottleneck():
    t = wishbone(n_pairs=2)
    b = t.links[0]
    assert (str(b.a), str(b.b)) == ("s1:1", "s2:1")
    assert b.rate_bps == 100_000_000 and b.buffer_pkts == {"s1": 250, "s2": 250} and b.delay_us == 15_000
    hops = t.next_hops("s1")
    assert hops["r1"] == (1, port_mac(2, 1)) and hops["r2"] == (1, port_mac(2, 1))
    assert hops["h1"][1] == t.hosts["h1"].mac
    assert t.next_hops("s2")["h2"] == (1, port_mac(1, 1))
    assert t.next_hops("s2")["mon"] == (1, port_mac(1, 1))


def test_load_topology_resolution(tmp_path):
    assert load_topology("two_hosts").name == "two_hosts"
    assert load_topology(str(BUILTIN_DIR / "star.yaml")).name == "star-11"
    assert load_topology("dumbbell", n_senders="3").role("senders") == ["h1", "h2", "h3"]
    assert load_topology("dumbbell", collector="false").collector is None
    assert load_topology("dumbbell", access_delay_us="1ms,2ms").host_link("h2").delay_us == 2000
    t = dumbbell()
    assert load_topology(t) is t
    assert load_topology(t.to_dict()) == t
    with pytest.raises(TopologyError, match="unknown parameter 'n_sender' \\(did you mean 'n_senders'"):
        load_topology("dumbbell", n_sender=3)
    with pytest.raises(TopologyError, match="neither a file nor a built-in"):
        load_topology("nonesuch")
    with pytest.raises(TopologyError, match="parameters apply to built-in generators only"):
        load_topology("two_hosts", n=2)
    p = tmp_path / "mine.yaml"
    p.write_text(t.to_yaml())
    assert load_topology(p) == t


def test_list_builtins():
    names = list_builtins()
    assert {"dumbbell", "star", "incast", "wishbone", "two_hosts"} <= set(names)


def test_parking_lot_chains_its_bottlenecks():
    t = parking_lot(n_hops=3, n_long=2, n_cross=2, bottleneck_bps="10Gbps", delay_us="5us",
                    buffer_pkts=1000, ecn_k_pkts=65)
    # three hops: no management switch (it would be a shortcut); mon on s1
    assert [s for s in t.switches] == ["s1", "s2", "s3", "s4"]
    assert t.attachment("mon").node == "s1"
    assert t.role("long_senders") == ["l1", "l2"] and t.role("long_receivers") == ["lr1", "lr2"]
    assert t.role("cross_senders_2") == ["c2_1", "c2_2"]
    assert t.role("cross_receivers_3") == ["cr3_1", "cr3_2"]
    assert len(t.role("cross_senders")) == 6
    for i in (1, 2, 3):
        b = t.links[i - 1]
        assert (str(b.a), str(b.b)) == (f"s{i}:1", f"s{i + 1}:2")
        assert b.rate_bps == 10**10 and b.delay_us == 5
        assert b.buffer_pkts == {f"s{i}": 1000, f"s{i + 1}": 1000}
        assert b.ecn_k_pkts == {f"s{i}": 65, f"s{i + 1}": 65}
    # access links default to the bottleneck's rate and delay, unqueued
    assert t.host_link("l1").rate_bps == 10**10 and t.host_link("c2_1").delay_us == 5
    assert t.host_link("l1").buffer_pkts == {}
    # a long flow crosses every bottleneck, a cross flow one
    assert t.next_hops("s1")["lr1"][0] == 1 and t.next_hops("s2")["lr1"][0] == 1
    assert t.next_hops("s3")["lr1"][0] == 1
    assert t.next_hops("s2")["cr2_1"][0] == 1
    assert t.attachment("cr2_1").node == "s3" and t.attachment("c2_1").node == "s2"


@pytest.mark.parametrize("hops", [1, 2])
def test_parking_lot_management_network(hops):
    t = parking_lot(n_hops=hops, n_long=1, n_cross=2)
    assert t.collector == "mon" and t.attachment("mon").node == "sm"
    assert all(l.rate_bps is None for l in t.links if "sm" in (l.a.node, l.b.node))
    # no data route takes the management network; postcards always do
    for sw in [f"s{i}" for i in range(1, hops + 2)]:
        routes = t.next_hops(sw)
        assert routes["mon"][0] == MGMT_PORT
        assert all(port != MGMT_PORT for h, (port, _) in routes.items() if h != "mon")


def test_parking_lot_without_collector_and_bad_parameters():
    t = parking_lot(collector=False, access_bps="1Gbps", access_delay_us="1us")
    assert "sm" not in t.switches and t.collector is None
    assert t.host_link("l1").rate_bps == 10**9 and t.host_link("l1").delay_us == 1
    # RTTs: long flows 2 x (2 x access + 2 x hop delay), cross flows one hop
    with pytest.raises(TopologyError, match="n_hops: 9 is outside"):
        parking_lot(n_hops=9)
    with pytest.raises(TopologyError, match="no flows"):
        parking_lot(n_long=0, n_cross=0)
    t = load_topology("parking_lot", n_hops="1", n_cross="0")
    assert t.role("long_senders") == ["l1"] and "cross_senders" not in t.roles
