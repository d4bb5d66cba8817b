//! Builders for hand-written bmv2 JSON programs (in the shape p4c-bm2-ss
//! emits for v1model) and test packets.
#![allow(dead_code)]

use pipeline::*;
use serde_json::{json, Value};
use std::sync::Arc;

pub fn std_meta_fields() -> Value {
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

pub fn aliases() -> Value {
    let mut v = vec![];
    for (a, f) in [
        ("queueing_metadata.enq_timestamp", "enq_timestamp"),
        ("queueing_metadata.enq_qdepth", "enq_qdepth"),
        ("queueing_metadata.deq_timedelta", "deq_timedelta"),
        ("queueing_metadata.deq_qdepth", "deq_qdepth"),
        ("intrinsic_metadata.ingress_global_timestamp", "ingress_global_timestamp"),
        ("intrinsic_metadata.egress_global_timestamp", "egress_global_timestamp"),
        ("intrinsic_metadata.mcast_grp", "mcast_grp"),
        ("intrinsic_metadata.egress_rid", "egress_rid"),
        ("intrinsic_metadata.priority", "priority"),
    ] {
        v.push(json!([a, ["standard_metadata", f]]));
    }
    Value::Array(v)
}

pub fn fld(h: &str, f: &str) -> Value {
    json!({"type": "field", "value": [h, f]})
}
pub fn hex(v: u128) -> Value {
    json!({"type": "hexstr", "value": format!("0x{v:x}")})
}
pub fn neg(v: u128) -> Value {
    json!({"type": "hexstr", "value": format!("-0x{v:x}")})
}
pub fn rd(i: u32) -> Value {
    json!({"type": "runtime_data", "value": i})
}
pub fn hdr(h: &str) -> Value {
    json!({"type": "header", "value": h})
}
pub fn stack(s: &str) -> Value {
    json!({"type": "header_stack", "value": s})
}
/// {"type": "expression", "value": {"op", "left", "right"}}
pub fn ex(op: &str, l: Value, r: Value) -> Value {
    json!({"type": "expression", "value": {"op": op, "left": l, "right": r}})
}
pub fn un(op: &str, r: Value) -> Value {
    ex(op, Value::Null, r)
}
pub fn tern(c: Value, a: Value, b: Value) -> Value {
    json!({"type": "expression", "value": {"op": "?", "left": a, "right": b, "cond": c}})
}
/// An expression parameter (p4c wraps expressions twice).
pub fn xp(e: Value) -> Value {
    json!({"type": "expression", "value": e})
}
pub fn prim(op: &str, params: Vec<Value>) -> Value {
    json!({"op": op, "parameters": params})
}
pub fn assign(dst: Value, src: Value) -> Value {
    prim("assign", vec![dst, src])
}
pub fn masked(e: Value, bits: u32) -> Value {
    ex("&", e, hex((1u128 << bits) - 1))
}

pub struct B {
    pub j: Value,
}

impl B {
    /// Ethernet / (802.1Q-like tag stack) / IPv4 program with scalars
    /// m8, m16, m32 (unsigned), s8 (signed), b (1 bit).
    pub fn new() -> B {
        let j = json!({
            "__meta__": {"version": [2, 23], "compiler": "hand-written test"},
            "header_types": [
                {"name": "scalars_0", "id": 0, "fields": [
                    ["m8", 8, false], ["m16", 16, false], ["m32", 32, false], ["s8", 8, true],
                    ["b", 1, false], ["m64", 64, false], ["m128", 128, false], ["_padding", 7, false]]},
                {"name": "standard_metadata", "id": 1, "fields": std_meta_fields()},
                {"name": "ethernet_t", "id": 2, "fields": [["dst", 48, false], ["src", 48, false], ["etype", 16, false]]},
                {"name": "ipv4_t", "id": 3, "fields": [
                    ["version", 4, false], ["ihl", 4, false], ["diffserv", 8, false], ["total_len", 16, false],
                    ["identification", 16, false], ["flags", 3, false], ["frag_offset", 13, false],
                    ["ttl", 8, false], ["protocol", 8, false], ["hdr_checksum", 16, false],
                    ["src", 32, false], ["dst", 32, false]]},
                {"name": "tag_t", "id": 4, "fields": [["v", 8, false], ["bos", 8, false]]}
            ],
            "headers": [
                {"name": "scalars", "id": 0, "header_type": "scalars_0", "metadata": true, "pi_omit": true},
                {"name": "standard_metadata", "id": 1, "header_type": "standard_metadata", "metadata": true, "pi_omit": true},
                {"name": "ethernet", "id": 2, "header_type": "ethernet_t", "metadata": false, "pi_omit": true},
                {"name": "ipv4", "id": 3, "header_type": "ipv4_t", "metadata": false, "pi_omit": true},
                {"name": "tags[0]", "id": 4, "header_type": "tag_t", "metadata": false, "pi_omit": true},
                {"name": "tags[1]", "id": 5, "header_type": "tag_t", "metadata": false, "pi_omit": true},
                {"name": "tags[2]", "id": 6, "header_type": "tag_t", "metadata": false, "pi_omit": true}
            ],
            "header_stacks": [{"name": "tags", "id": 0, "header_type": "tag_t", "size": 3, "header_ids": [4, 5, 6]}],
            "header_union_types": [], "header_unions": [], "header_union_stacks": [],
            "field_lists": [],
            "errors": [["NoError", 0], ["PacketTooShort", 1], ["NoMatch", 2], ["StackOutOfBounds", 3],
                       ["HeaderTooShort", 4], ["ParserTimeout", 5], ["ParserInvalidArgument", 6]],
            "enums": [],
            "parsers": [{"name": "parser", "id": 0, "init_state": "start", "parse_states": [
                {"name": "start", "id": 0,
                 "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ethernet"}]}],
                 "transition_key": [fld("ethernet", "etype")],
                 "transitions": [
                    {"type": "hexstr", "value": "0x0800", "mask": null, "next_state": "parse_ipv4"},
                    {"type": "hexstr", "value": "0x8100", "mask": null, "next_state": "parse_tags"},
                    {"type": "default", "value": null, "mask": null, "next_state": null}]},
                {"name": "parse_ipv4", "id": 1,
                 "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ipv4"}]}],
                 "transition_key": [],
                 "transitions": [{"type": "default", "value": null, "mask": null, "next_state": null}]},
                {"name": "parse_tags", "id": 2,
                 "parser_ops": [{"op": "extract", "parameters": [{"type": "stack", "value": "tags"}]}],
                 "transition_key": [{"type": "stack_field", "value": ["tags", "bos"]}],
                 "transitions": [
                    {"type": "hexstr", "value": "0x00", "mask": null, "next_state": "parse_tags"},
                    {"type": "default", "value": null, "mask": null, "next_state": "parse_ipv4"}]}
            ]}],
            "parse_vsets": [],
            "deparsers": [{"name": "deparser", "id": 0, "order": ["ethernet", "tags[0]", "tags[1]", "tags[2]", "ipv4"], "primitives": []}],
            "meter_arrays": [], "counter_arrays": [], "register_arrays": [], "calculations": [], "learn_lists": [],
            "actions": [{"name": "NoAction", "id": 0, "runtime_data": [], "primitives": []}],
            "pipelines": [
                {"name": "ingress", "id": 0, "init_table": null, "tables": [], "action_profiles": [], "conditionals": []},
                {"name": "egress", "id": 1, "init_table": null, "tables": [], "action_profiles": [], "conditionals": []}
            ],
            "checksums": [], "force_arith": [], "extern_instances": [],
            "field_aliases": aliases()
        });
        B { j }
    }

    pub fn set(mut self, key: &str, v: Value) -> B {
        self.j[key] = v;
        self
    }

    /// Adds an action; returns its id.
    pub fn action(&mut self, name: &str, params: &[(&str, u32)], prims: Vec<Value>) -> u64 {
        let acts = self.j["actions"].as_array_mut().unwrap();
        let id = acts.len() as u64;
        let rdata: Vec<Value> = params.iter().map(|(n, w)| json!({"name": n, "bitwidth": w})).collect();
        acts.push(json!({"name": name, "id": id, "runtime_data": rdata, "primitives": prims}));
        id
    }

    fn pipe(&mut self, egress: bool) -> &mut Value {
        &mut self.j["pipelines"][if egress { 1 } else { 0 }]
    }

    /// Adds a table to a pipeline. `keys`: (match_type, [hdr, field]).
    #[allow(clippy::too_many_arguments)]
    pub fn table(
        &mut self,
        egress: bool,
        name: &str,
        keys: &[(&str, &str, &str)],
        actions: &[u64],
        default: (u64, Vec<&str>),
        default_const: bool,
        next: Option<&str>,
        size: u64,
    ) {
        let names: Vec<String> =
            actions.iter().map(|a| self.j["actions"][*a as usize]["name"].as_str().unwrap().to_string()).collect();
        let mut nt = serde_json::Map::new();
        for n in &names {
            nt.insert(n.clone(), next.map(|s| json!(s)).unwrap_or(Value::Null));
        }
        let key: Vec<Value> = keys
            .iter()
            .map(|(mt, h, f)| json!({"match_type": mt, "name": format!("{h}.{f}"), "target": [h, f], "mask": null}))
            .collect();
        let mt = if keys.iter().any(|k| k.0 == "range") {
            "range"
        } else if keys.iter().any(|k| k.0 == "ternary" || k.0 == "optional") {
            "ternary"
        } else if keys.iter().any(|k| k.0 == "lpm") {
            "lpm"
        } else {
            "exact"
        };
        let t = json!({
            "name": name, "id": 0, "key": key, "match_type": mt, "type": "simple",
            "max_size": size, "with_counters": false, "support_timeout": false, "direct_meters": null,
            "action_ids": actions, "actions": names, "base_default_next": next,
            "next_tables": Value::Object(nt),
            "default_entry": {"action_id": default.0, "action_const": default_const,
                              "action_data": default.1, "action_entry_const": default_const}
        });
        let p = self.pipe(egress);
        p["tables"].as_array_mut().unwrap().push(t);
        if p["init_table"].is_null() {
            p["init_table"] = json!(name);
        }
    }

    /// A p4c-style "dummy table" running one action (no key, const default).
    pub fn call(&mut self, egress: bool, name: &str, action: u64, next: Option<&str>) {
        self.table(egress, name, &[], &[action], (action, vec![]), true, next, 1024);
    }

    pub fn cond(&mut self, egress: bool, name: &str, expr: Value, t: Option<&str>, f: Option<&str>) {
        let p = self.pipe(egress);
        p["conditionals"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": name, "id": 0, "expression": expr, "true_next": t, "false_next": f}));
    }

    pub fn init(&mut self, egress: bool, name: &str) {
        self.pipe(egress)["init_table"] = json!(name);
    }

    pub fn push(&mut self, key: &str, v: Value) {
        self.j[key].as_array_mut().unwrap().push(v);
    }

    pub fn program(&self) -> Program {
        Program::from_json(&self.j.to_string()).unwrap_or_else(|e| panic!("load: {e}"))
    }

    pub fn load_err(&self) -> LoadError {
        Program::from_json(&self.j.to_string()).expect_err("should not load")
    }
}

pub fn setup(p: Program) -> (Arc<State>, Engine) {
    let st = Arc::new(State::new(Arc::new(p)));
    let e = Engine::with_seed(st.clone(), 42);
    (st, e)
}

pub fn eth(dst: u64, src: u64, etype: u16) -> Vec<u8> {
    let mut v = dst.to_be_bytes()[2..].to_vec();
    v.extend_from_slice(&src.to_be_bytes()[2..]);
    v.extend_from_slice(&etype.to_be_bytes());
    v
}

pub fn csum(b: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in b.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// IPv4 header (20 bytes, correct checksum).
pub fn ipv4(src: u32, dst: u32, ttl: u8, proto: u8, tos: u8, payload_len: u16) -> Vec<u8> {
    let mut h = vec![0x45, tos];
    h.extend_from_slice(&(20 + payload_len).to_be_bytes());
    h.extend_from_slice(&[0x12, 0x34, 0x40, 0x00, ttl, proto, 0, 0]);
    h.extend_from_slice(&src.to_be_bytes());
    h.extend_from_slice(&dst.to_be_bytes());
    let c = csum(&h);
    h[10..12].copy_from_slice(&c.to_be_bytes());
    h
}

pub fn ip_frame(dst_ip: u32, ttl: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = eth(0x0000_0000_00aa, 0x0000_0000_00bb, 0x0800);
    f.extend(ipv4(0x0a00_0001, dst_ip, ttl, 17, 0, payload.len() as u16));
    f.extend_from_slice(payload);
    f
}

pub fn qm(depth: u32) -> QueueMeta {
    QueueMeta { enq_qdepth: depth, deq_qdepth: 0, deq_timedelta_us: 7, enq_timestamp_us: 1000 }
}

/// Ingress then egress of every queued packet; returns (port, frame) of
/// what is transmitted (clones included, recirculations run again).
pub fn run(e: &mut Engine, frame: &[u8], port: u32, depth: u32) -> Vec<(u32, Vec<u8>)> {
    let mut q = Vec::new();
    e.ingress(frame, port, 1000, &mut q);
    let mut out = Vec::new();
    let mut guard = 0;
    while let Some(p) = (!q.is_empty()).then(|| q.remove(0)) {
        guard += 1;
        assert!(guard < 100, "runaway");
        if p.is_recirculate() {
            e.ingress_recirculated(p, 2000, &mut q);
            continue;
        }
        let port = p.egress_port();
        let mut re = Vec::new();
        if let Some(f) = e.egress(p, qm(depth), 1010, &mut re) {
            out.push((port, f));
        }
        q.extend(re);
    }
    out
}

pub fn ek(b: &[u8]) -> MatchKey {
    MatchKey::Exact(b.to_vec())
}
pub fn call(a: ActionId, args: &[&[u8]]) -> ActionCall {
    ActionCall { action: a, args: args.iter().map(|x| x.to_vec()).collect() }
}
