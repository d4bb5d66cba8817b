"""Name resolution against the P4Info (the real one when built)."""
import pytest

from p4cc_control import entities
from p4cc_control.errors import NameNotFound, ValueOutOfRange
from p4cc_control.p4info import P4Info, parse_p4info_bytes


def test_full_alias_suffix(p4info):
    t = p4info.table("ipv4_lpm")
    assert t.name == "CcIngress.forwarding.ipv4_lpm"
    assert p4info.table("CcIngress.forwarding.ipv4_lpm") is t
    assert p4info.table("forwarding.ipv4_lpm") is t
    assert p4info.table("ecn_threshold").field("egress_port").bitwidth == 9
    assert p4info.table("ipv4_lpm").field("dst_addr").match_type == "lpm"


def test_counters_and_registers(p4info):
    assert p4info.counter("ce_marks").name == "CcEgress.ecn.ce_marks"
    assert p4info.counter("rx.port_packets").name == "CcIngress.rx.port_packets"
    assert p4info.counter("CcEgress.tx.port_packets").unit == "both"
    with pytest.raises(NameNotFound, match="ambiguous"):
        p4info.counter("port_packets")
    r = p4info.register("postcard_sample_count")
    assert (r.size, r.bitwidth) == (1, 32)


def test_unknown_names_are_one_line(p4info):
    for call in (lambda: p4info.table("nope"), lambda: p4info.counter("nope"),
                 lambda: p4info.table("ipv4_lpm").field("src_addr"),
                 lambda: p4info.action("forward").param("vlan")):
        with pytest.raises(NameNotFound) as e:
            call()
        assert "\n" not in str(e.value) and "'" in str(e.value)


def test_action_resolved_within_table(p4info):
    t = p4info.table("ecn_threshold")
    assert p4info.action("NoAction", t).name == "NoAction"
    assert p4info.action("set_threshold", t).name == "CcEgress.ecn.set_threshold"
    with pytest.raises(NameNotFound, match="has no action 'forward'"):
        p4info.action("forward", t)


def test_build_entry_bytes(p4info):
    te = entities.build_table_entry(p4info, "ipv4_lpm", {"dst_addr": "10.0.1.0/24"}, "forward",
                                    {"port": 1, "dst_mac": "00:00:0a:00:01:01"})
    assert te.table_id == p4info.table("ipv4_lpm").id
    assert te.match[0].lpm.value == b"\x0a\x00\x01\x00"
    params = {p.param_id: p.value for p in te.action.action.params}
    a = p4info.action("forward")
    assert params[a.param("port").id] == b"\x01"
    assert params[a.param("dst_mac").id] == b"\x0a\x00\x01\x01"  # canonical: no leading zeros
    back = entities.decode_table_entry(p4info, te)
    assert back.match == {"dst_addr": "10.0.1.0/24"}
    assert back.params == {"port": 1, "dst_mac": "00:00:0a:00:01:01"}


def test_build_entry_errors(p4info):
    with pytest.raises(ValueOutOfRange, match="bit<9>"):
        entities.build_table_entry(p4info, "ecn_threshold", {"egress_port": 512},
                                   "set_threshold", {"k_depth": 1})
    with pytest.raises(ValueOutOfRange, match="bit<32>"):
        entities.build_table_entry(p4info, "ecn_threshold", {"egress_port": 1},
                                   "set_threshold", {"k_depth": 2**32})
    with pytest.raises(NameNotFound, match="needs parameter 'dst_mac'"):
        entities.build_table_entry(p4info, "ipv4_lpm", {"dst_addr": "10.0.0.1"}, "forward",
                                   {"port": 1})
    with pytest.raises(NameNotFound, match="no parameter"):
        entities.build_table_entry(p4info, "ecn_threshold", {"egress_port": 1},
                                   "set_threshold", {"k_depth": 1, "extra": 2})
    with pytest.raises(NameNotFound, match="needs exact match"):
        entities.build_table_entry(p4info, "ecn_threshold", {}, "set_threshold", {"k_depth": 1})
    with pytest.raises(ValueOutOfRange, match="takes no priority"):
        entities.build_table_entry(p4info, "ecn_threshold", {"egress_port": 1},
                                   "set_threshold", {"k_depth": 1}, priority=3)


def test_default_entry(p4info):
    te = entities.build_table_entry(p4info, "switch_config", None, "set_switch_id",
                                    {"switch_id": 7}, is_default=True)
    assert te.is_default_action and not te.match
    assert entities.entry_key(te) == ("table-default", te.table_id)


def test_journal_key_is_stable(p4info):
    a = entities.build_table_entry(p4info, "ipv4_lpm", {"dst_addr": "10.0.1.0/24"}, "drop")
    b = entities.build_table_entry(p4info, "ipv4_lpm", {"dst_addr": ("10.0.1.0", 24)},
                                   "forward", {"port": 2, "dst_mac": 1})
    assert entities.entry_key(a) == entities.entry_key(b)


def test_structure_difference(p4info):
    same = parse_p4info_bytes(p4info.serialize())
    assert p4info.difference(same) is None
    other = parse_p4info_bytes(p4info.serialize())
    other.msg.tables[0].match_fields[0].bitwidth += 1
    changed = P4Info(other.msg)
    assert "differs" in p4info.difference(changed)


def test_real_p4info_is_what_the_controller_expects(real_p4info):
    # The names/widths the operations rely on, straight from p4c's output.
    p = real_p4info
    assert p.table("ipv4_lpm").field("dst_addr").bitwidth == 32
    assert p.action("forward").param("port").bitwidth == 9
    assert p.action("forward").param("dst_mac").bitwidth == 48
    assert p.action("set_threshold").param("k_depth").bitwidth == 32
    assert p.action("set_loss").param("threshold_16").bitwidth == 32
    assert {x.name for x in p.action("enable_postcards").params} == {
        "sample_one_in_n", "collector_mac_addr", "switch_ip_addr", "collector_ip_addr",
        "collector_udp_port"}
    assert p.action("set_switch_id").param("switch_id").bitwidth == 16
    for c in ("rx.port_packets", "tx.port_packets", "ce_marks", "ingress_drops", "loss_drops"):
        assert p.counter(c).size == 512
    assert p.register("postcard_sample_count").size == 1
