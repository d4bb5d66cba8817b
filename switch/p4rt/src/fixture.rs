//! A small v1model program in the shape p4c-bm2-ss emits (bmv2 JSON) and its
//! P4Info, for tests and examples of the P4Runtime server and the switch
//! (the real cc_switch needs p4c, which a fresh machine may not have).
//!
//! Ingress: `CcIngress.ipv4_lpm` (lpm dst_addr → forward(port, dst_mac) |
//! drop), `CcIngress.acl` (ternary src_addr + exact protocol, direct
//! counter); egress: `CcEgress.ecn_threshold` (exact egress_port),
//! `CcEgress.switch_config` (keyless). Counter `CcIngress.rx.port_packets`
//! [512], register `CcEgress.sample_count` [4] of bit<32>.
#![allow(missing_docs)]

use crate::proto::p4::config::v1 as p4info;
use serde_json::{json, Value};

pub const T_LPM: u32 = 0x0200_0001;
pub const T_ACL: u32 = 0x0200_0002;
pub const T_ECN: u32 = 0x0200_0003;
pub const T_CFG: u32 = 0x0200_0004;
pub const A_NOACTION: u32 = 0x0100_0001;
pub const A_FORWARD: u32 = 0x0100_0002;
pub const A_DROP: u32 = 0x0100_0003;
pub const A_SET_K: u32 = 0x0100_0004;
pub const A_SET_CLASS: u32 = 0x0100_0005;
pub const A_SET_ID: u32 = 0x0100_0006;
pub const C_PORT: u32 = 0x1200_0001;
pub const DC_ACL: u32 = 0x1300_0001;
pub const R_SAMPLE: u32 = 0x1000_0001;

fn fld(h: &str, f: &str) -> Value {
    json!({"type": "field", "value": [h, f]})
}

fn std_meta_fields() -> Value {
    json!([
        ["ingress_port", 9, false], ["egress_spec", 9, false], ["egress_port", 9, false],
        ["instance_type", 32, false], ["packet_length", 32, false],
        ["enq_timestamp", 32, false], ["enq_qdepth", 19, false], ["deq_timedelta", 32, false],
        ["deq_qdepth", 19, false], ["ingress_global_timestamp", 48, false],
        ["egress_global_timestamp", 48, false], ["mcast_grp", 16, false], ["egress_rid", 16, false],
        ["checksum_error", 1, false], ["parser_error", 32, false], ["priority", 3, false],
        ["_padding", 3, false]
    ])
}

#[allow(clippy::too_many_arguments)]
fn table(name: &str, key: Value, match_type: &str, ids: &[u64], names: &[&str], default: (u64, Vec<&str>), size: u64, next: Value, counters: bool) -> Value {
    let mut nt = serde_json::Map::new();
    for n in names {
        nt.insert(n.to_string(), next.clone());
    }
    json!({
        "name": name, "id": 0, "key": key, "match_type": match_type, "type": "simple",
        "max_size": size, "with_counters": counters, "support_timeout": false, "direct_meters": null,
        "action_ids": ids, "actions": names, "base_default_next": next,
        "next_tables": Value::Object(nt),
        "default_entry": {"action_id": default.0, "action_const": false, "action_data": default.1, "action_entry_const": false}
    })
}

/// bmv2 JSON: Ethernet/IPv4; ingress: ipv4_lpm (lpm) then acl (ternary +
/// exact, direct counter); egress: ecn_threshold (exact on egress_port),
/// switch_config (keyless). Counter port_packets[512], register
/// sample_count[4] of bit<32>.
pub fn mini_json() -> String {
    let j = json!({
        "__meta__": {"version": [2, 23], "compiler": "hand-written test"},
        "header_types": [
            {"name": "scalars_0", "id": 0, "fields": [["k", 32, false], ["cls", 8, false], ["_padding", 0, false]]},
            {"name": "standard_metadata", "id": 1, "fields": std_meta_fields()},
            {"name": "ethernet_h", "id": 2, "fields": [["dst_addr", 48, false], ["src_addr", 48, false], ["ether_type", 16, false]]},
            {"name": "ipv4_h", "id": 3, "fields": [
                ["version", 4, false], ["ihl", 4, false], ["dscp", 6, false], ["ecn", 2, false], ["total_len", 16, false],
                ["identification", 16, false], ["flags", 3, false], ["frag_offset", 13, false],
                ["ttl", 8, false], ["protocol", 8, false], ["hdr_checksum", 16, false],
                ["src_addr", 32, false], ["dst_addr", 32, false]]}
        ],
        "headers": [
            {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": true, "pi_omit": true},
            {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata", "metadata": true, "pi_omit": true},
            {"name": "ethernet", "id": 2, "header_type": "ethernet_h", "metadata": false, "pi_omit": true},
            {"name": "ipv4", "id": 3, "header_type": "ipv4_h", "metadata": false, "pi_omit": true}
        ],
        "header_stacks": [], "header_union_types": [], "header_unions": [], "header_union_stacks": [],
        "field_lists": [],
        "errors": [["NoError", 0], ["PacketTooShort", 1], ["NoMatch", 2], ["StackOutOfBounds", 3],
                   ["HeaderTooShort", 4], ["ParserTimeout", 5], ["ParserInvalidArgument", 6]],
        "enums": [],
        "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
            {"name": "start", "id": 0,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ethernet"}]}],
             "transition_key": [fld("ethernet", "ether_type")],
             "transitions": [
                {"type": "hexstr", "value": "0x0800", "mask": null, "next_state": "parse_ipv4"},
                {"type": "default", "value": null, "mask": null, "next_state": null}]},
            {"name": "parse_ipv4", "id": 1,
             "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ipv4"}]}],
             "transition_key": [],
             "transitions": [{"type": "default", "value": null, "mask": null, "next_state": null}]}
        ]}],
        "parse_vsets": [],
        "deparsers": [{"name": "deparser", "id": 0, "order": ["ethernet", "ipv4"], "primitives": []}],
        "meter_arrays": [],
        "counter_arrays": [
            {"name": "CcIngress.rx.port_packets", "id": 0, "is_direct": false, "size": 512},
            {"name": "CcIngress.acl_counter", "id": 1, "is_direct": true, "binding": "CcIngress.acl"}
        ],
        "register_arrays": [{"name": "CcEgress.sample_count", "id": 0, "bitwidth": 32, "size": 4}],
        "calculations": [], "learn_lists": [],
        "actions": [
            {"name": "NoAction", "id": 0, "runtime_data": [], "primitives": []},
            {"name": "CcIngress.forward", "id": 1, "runtime_data": [{"name": "port", "bitwidth": 9}, {"name": "dst_mac", "bitwidth": 48}],
             "primitives": [
                {"op": "assign", "parameters": [fld("standard_metadata", "egress_spec"), {"type": "runtime_data", "value": 0}]},
                {"op": "assign", "parameters": [fld("ethernet", "dst_addr"), {"type": "runtime_data", "value": 1}]}]},
            {"name": "CcIngress.drop", "id": 2, "runtime_data": [],
             "primitives": [{"op": "mark_to_drop", "parameters": [{"type": "header", "value": "standard_metadata"}]}]},
            {"name": "CcEgress.set_threshold", "id": 3, "runtime_data": [{"name": "k_depth", "bitwidth": 32}],
             "primitives": [{"op": "assign", "parameters": [fld("scalars", "k"), {"type": "runtime_data", "value": 0}]}]},
            {"name": "NoAction", "id": 4, "runtime_data": [], "primitives": []},
            {"name": "CcIngress.set_class", "id": 5, "runtime_data": [{"name": "cls", "bitwidth": 8}],
             "primitives": [{"op": "assign", "parameters": [fld("scalars", "cls"), {"type": "runtime_data", "value": 0}]}]},
            {"name": "CcEgress.set_switch_id", "id": 6, "runtime_data": [{"name": "switch_id", "bitwidth": 16}], "primitives": []}
        ],
        "pipelines": [
            {"name": "ingress", "id": 0, "init_table": "CcIngress.ipv4_lpm", "action_profiles": [], "conditionals": [],
             "tables": [
                table("CcIngress.ipv4_lpm",
                      json!([{"match_type": "lpm", "name": "dst_addr", "target": ["ipv4", "dst_addr"], "mask": null}]),
                      "lpm", &[1, 2], &["CcIngress.forward", "CcIngress.drop"], (2, vec![]), 1024, json!("CcIngress.acl"), false),
                table("CcIngress.acl",
                      json!([{"match_type": "ternary", "name": "src_addr", "target": ["ipv4", "src_addr"], "mask": null},
                             {"match_type": "exact", "name": "protocol", "target": ["ipv4", "protocol"], "mask": null}]),
                      "ternary", &[5, 4], &["CcIngress.set_class", "NoAction"], (4, vec![]), 64, Value::Null, true)
             ]},
            {"name": "egress", "id": 1, "init_table": "CcEgress.ecn_threshold", "action_profiles": [], "conditionals": [],
             "tables": [
                table("CcEgress.ecn_threshold",
                      json!([{"match_type": "exact", "name": "egress_port", "target": ["standard_metadata", "egress_port"], "mask": null}]),
                      "exact", &[3, 0], &["CcEgress.set_threshold", "NoAction"], (0, vec![]), 512, json!("CcEgress.switch_config"), false),
                table("CcEgress.switch_config", json!([]), "exact", &[6], &["CcEgress.set_switch_id"], (6, vec!["0x0"]), 1024, Value::Null, false)
             ]}
        ],
        "checksums": [], "force_arith": [], "extern_instances": [],
        "field_aliases": [
            ["queueing_metadata.enq_timestamp", ["standard_metadata", "enq_timestamp"]],
            ["queueing_metadata.enq_qdepth", ["standard_metadata", "enq_qdepth"]],
            ["queueing_metadata.deq_timedelta", ["standard_metadata", "deq_timedelta"]],
            ["queueing_metadata.deq_qdepth", ["standard_metadata", "deq_qdepth"]],
            ["intrinsic_metadata.ingress_global_timestamp", ["standard_metadata", "ingress_global_timestamp"]],
            ["intrinsic_metadata.egress_global_timestamp", ["standard_metadata", "egress_global_timestamp"]],
            ["intrinsic_metadata.mcast_grp", ["standard_metadata", "mcast_grp"]],
            ["intrinsic_metadata.egress_rid", ["standard_metadata", "egress_rid"]],
            ["intrinsic_metadata.priority", ["standard_metadata", "priority"]]
        ]
    });
    j.to_string()
}

fn pre(id: u32, name: &str) -> Option<p4info::Preamble> {
    Some(p4info::Preamble { id, name: name.into(), alias: name.rsplit('.').next().unwrap().into(), ..Default::default() })
}

fn mf(id: u32, name: &str, bw: i32, t: p4info::match_field::MatchType) -> p4info::MatchField {
    p4info::MatchField {
        id,
        name: name.into(),
        bitwidth: bw,
        r#match: Some(p4info::match_field::Match::MatchType(t as i32)),
        ..Default::default()
    }
}

fn aref(id: u32, scope: i32) -> p4info::ActionRef {
    p4info::ActionRef { id, scope, ..Default::default() }
}

fn param(id: u32, name: &str, bw: i32) -> p4info::action::Param {
    p4info::action::Param { id, name: name.into(), bitwidth: bw, ..Default::default() }
}

/// The P4Info p4c would write for [`mini_json`].
pub fn mini_p4info() -> p4info::P4Info {
    use p4info::match_field::MatchType as M;
    p4info::P4Info {
        pkg_info: Some(p4info::PkgInfo { arch: "v1model".into(), ..Default::default() }),
        tables: vec![
            p4info::Table {
                preamble: pre(T_LPM, "CcIngress.ipv4_lpm"),
                match_fields: vec![mf(1, "dst_addr", 32, M::Lpm)],
                action_refs: vec![aref(A_FORWARD, 0), aref(A_DROP, 0)],
                size: 1024,
                ..Default::default()
            },
            p4info::Table {
                preamble: pre(T_ACL, "CcIngress.acl"),
                match_fields: vec![mf(1, "src_addr", 32, M::Ternary), mf(2, "protocol", 8, M::Exact)],
                action_refs: vec![aref(A_SET_CLASS, 1), aref(A_NOACTION, 0)],
                direct_resource_ids: vec![DC_ACL],
                size: 64,
                ..Default::default()
            },
            p4info::Table {
                preamble: pre(T_ECN, "CcEgress.ecn_threshold"),
                match_fields: vec![mf(1, "egress_port", 9, M::Exact)],
                action_refs: vec![aref(A_SET_K, 0), aref(A_NOACTION, 0)],
                size: 512,
                ..Default::default()
            },
            p4info::Table {
                preamble: pre(T_CFG, "CcEgress.switch_config"),
                action_refs: vec![aref(A_SET_ID, 0)],
                size: 1024,
                ..Default::default()
            },
        ],
        actions: vec![
            p4info::Action { preamble: pre(A_NOACTION, "NoAction"), params: vec![] },
            p4info::Action {
                preamble: pre(A_FORWARD, "CcIngress.forward"),
                params: vec![param(1, "port", 9), param(2, "dst_mac", 48)],
            },
            p4info::Action { preamble: pre(A_DROP, "CcIngress.drop"), params: vec![] },
            p4info::Action { preamble: pre(A_SET_K, "CcEgress.set_threshold"), params: vec![param(1, "k_depth", 32)] },
            p4info::Action { preamble: pre(A_SET_CLASS, "CcIngress.set_class"), params: vec![param(1, "cls", 8)] },
            p4info::Action { preamble: pre(A_SET_ID, "CcEgress.set_switch_id"), params: vec![param(1, "switch_id", 16)] },
        ],
        counters: vec![p4info::Counter {
            preamble: pre(C_PORT, "CcIngress.rx.port_packets"),
            spec: Some(p4info::CounterSpec { unit: 3 }),
            size: 512,
            ..Default::default()
        }],
        direct_counters: vec![p4info::DirectCounter {
            preamble: pre(DC_ACL, "CcIngress.acl_counter"),
            spec: Some(p4info::CounterSpec { unit: 3 }),
            direct_table_id: T_ACL,
        }],
        registers: vec![p4info::Register {
            preamble: pre(R_SAMPLE, "CcEgress.sample_count"),
            type_spec: Some(p4info::P4DataTypeSpec {
                type_spec: Some(p4info::p4_data_type_spec::TypeSpec::Bitstring(p4info::P4BitstringLikeTypeSpec {
                    type_spec: Some(p4info::p4_bitstring_like_type_spec::TypeSpec::Bit(p4info::P4BitTypeSpec {
                        bitwidth: 32,
                    })),
                    ..Default::default()
                })),
            }),
            size: 4,
            ..Default::default()
        }],
        ..Default::default()
    }
}

