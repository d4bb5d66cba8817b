//! One test per construct, on hand-written bmv2 JSON (see common/mod.rs).

mod common;
use common::*;
use pipeline::*;
use serde_json::{json, Value};

const SM: &str = "standard_metadata";

fn reg_out(b: &mut B) {
    b.push("register_arrays", json!({"name": "out", "id": 0, "size": 32, "bitwidth": 128}));
}
fn out_w(i: u32, v: Value) -> Value {
    prim("register_write", vec![json!({"type": "register_array", "value": "out"}), hex(i as u128), v])
}
fn out_r(st: &State, i: u64) -> u128 {
    let r = st.program().register_by_name("out").unwrap();
    let b = st.register_read(r, i).unwrap();
    b.iter().fold(0u128, |a, &x| (a << 8) | x as u128)
}
fn fwd_drop(b: &mut B) -> (u64, u64) {
    let fwd = b.action("fwd", &[("port", 9)], vec![assign(fld(SM, "egress_spec"), rd(0))]);
    let drop = b.action("drop", &[], vec![prim("mark_to_drop", vec![hdr(SM)])]);
    (fwd, drop)
}

#[test]
fn exact_table_forward_drop_and_control_plane_errors() {
    let mut b = B::new();
    let (fwd, drop) = fwd_drop(&mut b);
    b.table(false, "t", &[("exact", "ethernet", "dst")], &[fwd, drop], (drop, vec![]), false, None, 2);
    let (st, mut e) = setup(b.program());
    let p = st.program().clone();
    let t = p.table_by_name("t").unwrap();
    let (fwd, drop) = (p.action_by_name("fwd").unwrap(), p.action_by_name("drop").unwrap());
    assert_eq!(p.tables()[t.0].keys[0], KeyInfo { name: "ethernet.dst".into(), match_kind: MatchKind::Exact, bitwidth: 48 });
    let entry = TableEntry { key: vec![ek(&[0, 0, 0, 0, 0, 0xaa])], priority: 0, action: call(fwd, &[&[3]]) };
    st.table_insert(t, entry.clone()).unwrap();
    assert_eq!(st.table_entries(t), vec![entry.clone()]);
    let f = ip_frame(0x0a000002, 64, b"hello");
    assert_eq!(run(&mut e, &f, 1, 0), vec![(3, f.clone())]);
    // miss -> default drop
    let mut g = f.clone();
    g[5] = 0xab;
    assert!(run(&mut e, &g, 1, 0).is_empty());
    // errors
    assert_eq!(st.table_insert(t, entry.clone()), Err(StateError::EntryExists));
    assert_eq!(st.table_insert(t, entry.clone()).unwrap_err().code(), ErrorCode::AlreadyExists);
    let too_wide = TableEntry { key: vec![ek(&[1, 0, 0, 0, 0, 0, 1])], ..entry.clone() };
    assert!(matches!(st.table_insert(t, too_wide), Err(StateError::ValueTooWide { .. })));
    let bad_port = TableEntry { key: vec![ek(&[1])], priority: 0, action: call(fwd, &[&[2, 0]]) };
    assert!(matches!(st.table_insert(t, bad_port), Err(StateError::ValueTooWide { .. })));
    let bad_arity = TableEntry { key: vec![ek(&[1])], priority: 0, action: call(fwd, &[]) };
    assert!(matches!(st.table_insert(t, bad_arity), Err(StateError::BadArg(_))));
    let noaction = TableEntry { key: vec![ek(&[1])], priority: 0, action: call(ActionId(0), &[]) };
    assert!(matches!(st.table_insert(t, noaction), Err(StateError::BadAction(_))));
    let tern = TableEntry { key: vec![MatchKey::Ternary { value: vec![1], mask: vec![1] }], ..entry.clone() };
    assert!(matches!(st.table_insert(t, tern), Err(StateError::BadKey(_))));
    st.table_insert(t, TableEntry { key: vec![ek(&[1])], priority: 0, action: call(drop, &[]) }).unwrap();
    let full = st.table_insert(t, TableEntry { key: vec![ek(&[2])], priority: 0, action: call(drop, &[]) });
    assert_eq!(full.unwrap_err().code(), ErrorCode::ResourceExhausted);
    // modify / delete
    let missing = TableEntry { key: vec![ek(&[9])], priority: 0, action: call(drop, &[]) };
    assert_eq!(st.table_modify(t, missing.clone()), Err(StateError::NoSuchEntry));
    st.table_modify(t, TableEntry { action: call(fwd, &[&[1, 0x00]]), ..entry.clone() }).unwrap();
    assert_eq!(run(&mut e, &f, 1, 0)[0].0, 256);
    st.table_modify(t, TableEntry { action: call(fwd, &[&[1, 0xff]]), ..entry.clone() }).unwrap();
    assert!(run(&mut e, &f, 1, 0).is_empty(), "egress_spec 511 drops");
    st.table_delete(t, &entry.key, 0).unwrap();
    assert_eq!(st.table_delete(t, &entry.key, 0).unwrap_err().code(), ErrorCode::NotFound);
    assert!(run(&mut e, &f, 1, 0).is_empty());
    // default action
    assert_eq!(st.table_get_default(t), call(drop, &[]));
    st.table_set_default(t, call(fwd, &[&[7]])).unwrap();
    assert_eq!(run(&mut e, &f, 1, 0)[0].0, 7);
    st.table_reset_default(t);
    assert!(run(&mut e, &f, 1, 0).is_empty());
    st.table_clear(t);
    assert!(st.table_entries(t).is_empty());
}

#[test]
fn const_default_is_refused() {
    let mut b = B::new();
    let (fwd, drop) = fwd_drop(&mut b);
    b.table(false, "t", &[("exact", "ethernet", "dst")], &[fwd, drop], (fwd, vec!["0x5"]), true, None, 16);
    let (st, mut e) = setup(b.program());
    let t = TableId(0);
    assert!(st.program().tables()[0].default_is_const);
    let err = st.table_set_default(t, call(ActionId(drop as usize), &[])).unwrap_err();
    assert_eq!(err.code(), ErrorCode::PermissionDenied);
    assert_eq!(run(&mut e, &ip_frame(1, 5, b""), 0, 0)[0].0, 5);
}

/// A table without a key holds only its default entry (P4Runtime): an
/// entry is refused, whether the default is const or not.
#[test]
fn keyless_table_refuses_entries() {
    for default_const in [true, false] {
        let mut b = B::new();
        let (fwd, _) = fwd_drop(&mut b);
        b.table(false, "t", &[], &[fwd], (fwd, vec!["0x3"]), default_const, None, 16);
        let (st, mut e) = setup(b.program());
        let err = st
            .table_insert(TableId(0), TableEntry { key: vec![], priority: 0, action: call(ActionId(fwd as usize), &[&[0, 4]]) })
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
        assert_eq!(run(&mut e, &ip_frame(1, 5, b""), 0, 0)[0].0, 3);
        if !default_const {
            st.table_set_default(TableId(0), call(ActionId(fwd as usize), &[&[0, 4]])).unwrap();
            assert_eq!(run(&mut e, &ip_frame(1, 5, b""), 0, 0)[0].0, 4, "a settable default is looked up, not fixed");
        }
    }
}

#[test]
fn lpm_longest_prefix_wins() {
    let mut b = B::new();
    let (fwd, drop) = fwd_drop(&mut b);
    b.table(false, "lpm", &[("lpm", "ipv4", "dst")], &[fwd, drop], (drop, vec![]), false, None, 64);
    let (st, mut e) = setup(b.program());
    let t = TableId(0);
    let fwd = ActionId(fwd as usize);
    let add = |v: [u8; 4], l: u32, port: u8| {
        st.table_insert(t, TableEntry { key: vec![MatchKey::Lpm { value: v.to_vec(), prefix_len: l }], priority: 0, action: call(fwd, &[&[port]]) })
            .unwrap()
    };
    add([10, 0, 0, 0], 8, 1);
    add([10, 1, 2, 0], 24, 2);
    add([0, 0, 0, 0], 0, 3);
    add([10, 1, 2, 3], 32, 4);
    let port = |e: &mut Engine, ip: u32| run(e, &ip_frame(ip, 9, b"x"), 0, 0)[0].0;
    assert_eq!(port(&mut e, 0x0a010203), 4);
    assert_eq!(port(&mut e, 0x0a010204), 2);
    assert_eq!(port(&mut e, 0x0a020204), 1);
    assert_eq!(port(&mut e, 0x0b020204), 3);
    let bad = TableEntry { key: vec![MatchKey::Lpm { value: vec![10, 0, 0, 1], prefix_len: 8 }], priority: 0, action: call(fwd, &[&[1]]) };
    assert!(matches!(st.table_insert(t, bad), Err(StateError::BadKey(_))));
    st.table_delete(t, &[MatchKey::Lpm { value: vec![10, 1, 2, 3], prefix_len: 32 }], 0).unwrap();
    assert_eq!(port(&mut e, 0x0a010203), 2);
}

#[test]
fn ternary_range_optional_priorities() {
    let mut b = B::new();
    let (fwd, drop) = fwd_drop(&mut b);
    b.table(
        false,
        "acl",
        &[("ternary", "ipv4", "dst"), ("range", "ipv4", "ttl"), ("optional", "ipv4", "protocol")],
        &[fwd, drop],
        (drop, vec![]),
        false,
        None,
        64,
    );
    let p = b.program();
    assert_eq!(p.tables()[0].keys[2].match_kind, MatchKind::Optional);
    assert!(p.tables()[0].needs_priority);
    let (st, mut e) = setup(p);
    let t = TableId(0);
    let fwd = ActionId(fwd as usize);
    let ent = |v: u32, m: u32, lo: u8, hi: u8, proto: Option<u8>, prio: i32, port: u8| TableEntry {
        key: vec![
            MatchKey::Ternary { value: v.to_be_bytes().to_vec(), mask: m.to_be_bytes().to_vec() },
            MatchKey::Range { low: vec![lo], high: vec![hi] },
            MatchKey::Optional(proto.map(|x| vec![x])),
        ],
        priority: prio,
        action: call(fwd, &[&[port]]),
    };
    st.table_insert(t, ent(0x0a000000, 0xff000000, 0, 255, None, 10, 1)).unwrap();
    st.table_insert(t, ent(0x0a010000, 0xffff0000, 10, 20, None, 20, 2)).unwrap();
    st.table_insert(t, ent(0x0a010000, 0xffff0000, 10, 20, Some(6), 30, 3)).unwrap();
    // same key, other priority: a different entry
    st.table_insert(t, ent(0x0a000000, 0xff000000, 0, 255, None, 5, 4)).unwrap();
    assert_eq!(st.table_insert(t, ent(0x0a000000, 0xff000000, 0, 255, None, 5, 4)), Err(StateError::EntryExists));
    let port = |e: &mut Engine, ip: u32, ttl: u8| {
        let r = run(e, &ip_frame(ip, ttl, b"x"), 0, 0);
        r.first().map(|x| x.0)
    };
    assert_eq!(port(&mut e, 0x0a010101, 15), Some(2)); // proto 17: optional entry misses
    assert_eq!(port(&mut e, 0x0a010101, 25), Some(1));
    assert_eq!(port(&mut e, 0x0b010101, 25), None);
    let bad = ent(0x0a000001, 0xff000000, 0, 255, None, 1, 1);
    assert!(matches!(st.table_insert(t, bad), Err(StateError::BadKey(_))));
    let bad = ent(0, 0, 30, 20, None, 1, 1);
    assert!(matches!(st.table_insert(t, bad), Err(StateError::BadKey(_))));
    st.table_delete(t, &ent(0x0a010000, 0xffff0000, 10, 20, None, 20, 0).key, 20).unwrap();
    assert_eq!(port(&mut e, 0x0a010101, 15), Some(1));
    // equal priorities: first inserted wins
    st.table_insert(t, ent(0x0a010000, 0xffff0000, 0, 255, None, 10, 6)).unwrap();
    assert_eq!(port(&mut e, 0x0a010101, 15), Some(1));
}

#[test]
fn expressions_follow_bmv2_width_semantics() {
    let mut b = B::new();
    reg_out(&mut b);
    let ttl = fld("ipv4", "ttl");
    let prims = vec![
        out_w(0, masked(ex("-", ttl.clone(), hex(1)), 8)),
        out_w(1, ex("two_comp_mod", hex(0x81), hex(8))),
        out_w(2, ex("usat_cast", ex("+", hex(200), hex(100)), hex(8))),
        out_w(3, ex("sat_cast", neg(200), hex(8))),
        out_w(4, ex(">>", ex("<<", hex(1), hex(70)), hex(68))),
        out_w(5, tern(ex("==", ttl.clone(), hex(0)), hex(7), hex(9))),
        out_w(6, un("b2d", ex("<", ttl.clone(), hex(5)))),
        out_w(7, masked(ex(">>", fld("ipv4", "dst"), hex(16)), 8)),
        out_w(8, masked(un("~", ttl.clone()), 8)),
        assign(fld("scalars", "s8"), neg(3)),
        out_w(9, fld("scalars", "s8")),
        out_w(10, un("b2d", ex("<", fld("scalars", "s8"), hex(0)))),
        out_w(11, ex("+", ex("*", ex("/", hex(17), hex(5)), hex(10)), ex("%", hex(17), hex(5)))),
        assign(fld("scalars", "m128"), hex(u128::MAX)),
        out_w(12, un("b2d", ex(">", fld("scalars", "m128"), hex(1)))),
        out_w(13, un("b2d", ex("and", un("d2b", hex(1)), un("not", ex("or", json!({"type": "bool", "value": false}), un("valid", hdr("tags[0]"))))))),
        out_w(14, ex("+", ex("<<", fld("ipv4", "$valid$"), hex(1)), fld("tags[0]", "$valid$"))),
        out_w(15, masked(ex("-", hex(0), hex(5)), 16)),
        assign(fld("scalars", "m8"), ex("+", hex(250), hex(10))),
        out_w(16, fld("scalars", "m8")),
        out_w(17, ex(">>", fld("scalars", "m128"), hex(120))),
        out_w(18, ex("^", ex("|", hex(0xf0), hex(0x0f)), hex(0x3c))),
    ];
    let a = b.action("a", &[], prims);
    b.call(false, "tbl_a", a, None);
    let (st, mut e) = setup(b.program());
    run(&mut e, &ip_frame(0x0a0b0c0d, 0, b""), 0, 0);
    let v = |i| out_r(&st, i);
    assert_eq!(v(0), 255);
    assert_eq!(v(1), (-127i128) as u128);
    assert_eq!(v(2), 255);
    assert_eq!(v(3), (-128i128) as u128);
    assert_eq!(v(4), 4);
    assert_eq!(v(5), 7);
    assert_eq!(v(6), 1);
    assert_eq!(v(7), 0x0b);
    assert_eq!(v(8), 255);
    assert_eq!(v(9), (-3i128) as u128);
    assert_eq!(v(10), 1);
    assert_eq!(v(11), 32);
    assert_eq!(v(12), 1, "128-bit values compare unsigned");
    assert_eq!(v(13), 1);
    assert_eq!(v(14), 2);
    assert_eq!(v(15), 0xfffb);
    assert_eq!(v(16), 4, "assignment wraps at the field width");
    assert_eq!(v(17), 0xff, "128-bit values shift right logically");
    assert_eq!(v(18), 0xc3);
}

/// The assignment forms the loader turns into direct instructions (a
/// constant, an action parameter, a field, a masked field, a folded b2d)
/// store what the general expression path stores, at every width.
#[test]
fn direct_assignment_forms() {
    let mut b = B::new();
    reg_out(&mut b);
    let prims = vec![
        assign(fld("scalars", "m8"), rd(0)),
        out_w(0, fld("scalars", "m8")),
        assign(fld("scalars", "m16"), rd(1)),
        out_w(1, fld("scalars", "m16")),
        assign(fld("scalars", "m8"), fld("ipv4", "dst")),
        out_w(2, fld("scalars", "m8")),
        assign(fld("scalars", "m16"), masked(fld("ipv4", "dst"), 12)),
        out_w(3, fld("scalars", "m16")),
        assign(fld("scalars", "m32"), ex("&", hex(0xff00), fld("ipv4", "dst"))),
        out_w(4, fld("scalars", "m32")),
        assign(fld("scalars", "s8"), hex(0xfe)),
        out_w(5, fld("scalars", "s8")),
        assign(fld("scalars", "m8"), neg(2)),
        out_w(6, fld("scalars", "m8")),
        assign(fld("scalars", "b"), un("b2d", json!({"type": "bool", "value": true}))),
        out_w(7, fld("scalars", "b")),
        assign(fld("scalars", "m8"), fld("scalars", "s8")),
        out_w(8, fld("scalars", "m8")),
        assign(fld("scalars", "s8"), rd(0)),
        out_w(9, fld("scalars", "s8")),
        assign(fld("scalars", "m128"), rd(2)),
        out_w(10, fld("scalars", "m128")),
        assign(fld("ipv4", "ttl"), masked(ex("+", fld("ipv4", "ttl"), hex(0xff)), 8)),
        out_w(11, fld("ipv4", "ttl")),
    ];
    let a = b.action("a", &[("p8", 8), ("p16", 16), ("p128", 128)], prims);
    // keyless with a const default: the action runs without a lookup
    b.table(false, "t", &[], &[a], (a, vec!["0x9c", "0x1234", "0xffffffffffffffffffffffffffffff01"]), true, None, 1);
    let (st, mut e) = setup(b.program());
    run(&mut e, &ip_frame(0x0a0b0c0d, 64, b""), 0, 0);
    let v = |i| out_r(&st, i);
    assert_eq!(v(0), 0x9c);
    assert_eq!(v(1), 0x1234);
    assert_eq!(v(2), 0x0d, "a field is truncated to the destination width");
    assert_eq!(v(3), 0xc0d);
    assert_eq!(v(4), 0x0c00);
    assert_eq!(v(5), (-2i128) as u128, "a signed destination reads back sign-extended");
    assert_eq!(v(6), 0xfe);
    assert_eq!(v(7), 1);
    assert_eq!(v(8), 0xfe);
    assert_eq!(v(9), (-100i128) as u128);
    assert_eq!(v(10), 0xffffffffffffffffffffffffffffff01);
    assert_eq!(v(11), 63);
}

#[test]
fn parser_errors_keep_what_was_extracted() {
    let mut b = B::new();
    reg_out(&mut b);
    let a = b.action(
        "a",
        &[],
        vec![
            out_w(0, fld(SM, "parser_error")),
            out_w(1, un("b2d", un("valid", hdr("tags[2]")))),
            out_w(2, un("last_stack_index", stack("tags"))),
            out_w(3, un("size_stack", stack("tags"))),
            assign(fld(SM, "egress_spec"), hex(2)),
        ],
    );
    b.call(false, "tbl_a", a, None);
    let (st, mut e) = setup(b.program());
    // too short for ethernet: continues with nothing valid
    let out = run(&mut e, &[1, 2, 3], 0, 0);
    assert_eq!(out, vec![(2, vec![1, 2, 3])]);
    assert_eq!(out_r(&st, 0), 1);
    // four tags with bos=0: StackOutOfBounds after three
    let mut f = eth(1, 2, 0x8100);
    for i in 0..4u8 {
        f.extend([i, 0]);
    }
    f.extend(b"tail");
    let out = run(&mut e, &f, 0, 0);
    assert_eq!(out, vec![(2, f.clone())]);
    assert_eq!(out_r(&st, 0), 3);
    assert_eq!(out_r(&st, 1), 1);
    assert_eq!(out_r(&st, 2), 2);
    assert_eq!(out_r(&st, 3), 3);
    // ipv4 truncated after the tags: PacketTooShort
    let mut f = eth(1, 2, 0x8100);
    f.extend([9, 1, 0x45, 0]);
    let out = run(&mut e, &f, 0, 0);
    assert_eq!(out[0].1, f);
    assert_eq!(out_r(&st, 0), 1);
    assert_eq!(out_r(&st, 3), 1);
}

fn ipv4_csum_calc(b: &mut B) {
    let fields: Vec<Value> = [
        "version", "ihl", "diffserv", "total_len", "identification", "flags", "frag_offset", "ttl", "protocol", "src", "dst",
    ]
    .iter()
    .map(|f| fld("ipv4", f))
    .collect();
    b.push("calculations", json!({"name": "calc", "id": 0, "algo": "csum16", "input": fields}));
}

#[test]
fn checksum_update_and_verify() {
    let mut b = B::new();
    reg_out(&mut b);
    ipv4_csum_calc(&mut b);
    b.push(
        "checksums",
        json!({"name": "ck", "id": 0, "target": ["ipv4", "hdr_checksum"], "type": "generic", "calculation": "calc",
               "verify": true, "update": true, "if_cond": un("valid", hdr("ipv4"))}),
    );
    let a = b.action(
        "dec",
        &[],
        vec![
            assign(fld("ipv4", "ttl"), masked(ex("+", fld("ipv4", "ttl"), hex(0xff)), 8)),
            out_w(0, fld(SM, "checksum_error")),
            assign(fld(SM, "egress_spec"), hex(1)),
        ],
    );
    b.call(false, "tbl_dec", a, None);
    let (st, mut e) = setup(b.program());
    let f = ip_frame(0x0a000002, 64, b"payload");
    let out = run(&mut e, &f, 0, 0);
    let o = &out[0].1;
    assert_eq!(o[22], 63);
    assert_eq!(csum(&o[14..34]), 0, "checksum recomputed");
    assert_eq!(out_r(&st, 0), 0);
    let mut bad = f.clone();
    bad[24] ^= 0xff;
    let out = run(&mut e, &bad, 0, 0);
    assert_eq!(out_r(&st, 0), 1, "checksum_error set");
    assert_eq!(csum(&out[0].1[14..34]), 0);
}

#[test]
fn counters_indirect_and_direct() {
    let mut b = B::new();
    b.push("counter_arrays", json!({"name": "ports", "id": 0, "size": 8, "is_direct": false}));
    b.push("counter_arrays", json!({"name": "t_ctr", "id": 1, "is_direct": true, "binding": "t"}));
    let (fwd, drop) = fwd_drop(&mut b);
    let cnt = b.action(
        "cnt",
        &[],
        vec![prim("count", vec![json!({"type": "counter_array", "value": "ports"}), fld(SM, "ingress_port")])],
    );
    b.call(false, "tbl_cnt", cnt, Some("t"));
    b.table(false, "t", &[("exact", "ethernet", "etype")], &[fwd, drop], (drop, vec![]), false, None, 16);
    b.j["pipelines"][0]["tables"][1]["with_counters"] = json!(true);
    let (st, mut e) = setup(b.program());
    let p = st.program().clone();
    let t = p.table_by_name("t").unwrap();
    let c = p.counter_by_name("ports").unwrap();
    assert_eq!(p.tables()[t.0].direct_counter, p.counter_by_name("t_ctr"));
    let key = vec![ek(&[0x08, 0x00])];
    st.table_insert(t, TableEntry { key: key.clone(), priority: 0, action: call(ActionId(fwd as usize), &[&[1]]) }).unwrap();
    let f = ip_frame(1, 1, b"abc");
    for _ in 0..3 {
        run(&mut e, &f, 5, 0);
    }
    run(&mut e, &eth(1, 2, 0x86dd), 5, 0);
    assert_eq!(st.counter_read(c, 5).unwrap(), CounterValue { packets: 4, bytes: 3 * f.len() as u64 + 14 });
    assert_eq!(st.direct_counter_read(t, &key, 0).unwrap(), CounterValue { packets: 3, bytes: 3 * f.len() as u64 });
    assert_eq!(st.counter_read(c, 8).unwrap_err().code(), ErrorCode::OutOfRange);
    st.counter_write(c, 5, CounterValue::default()).unwrap();
    assert_eq!(st.counter_read(c, 5).unwrap(), CounterValue::default());
    let dc = p.counter_by_name("t_ctr").unwrap();
    assert!(matches!(st.counter_read(dc, 0), Err(StateError::CounterIsDirect(_))));
}

#[test]
fn registers_read_modify_write() {
    let mut b = B::new();
    b.push("register_arrays", json!({"name": "seen", "id": 0, "size": 4, "bitwidth": 16}));
    let ra = json!({"type": "register_array", "value": "seen"});
    let a = b.action(
        "a",
        &[],
        vec![
            prim("register_read", vec![fld("scalars", "m16"), ra.clone(), hex(1)]),
            assign(fld("scalars", "m16"), masked(ex("+", fld("scalars", "m16"), hex(1)), 16)),
            prim("register_write", vec![ra.clone(), hex(1), fld("scalars", "m16")]),
            prim("register_write", vec![ra, hex(9), hex(1)]), // out of range: ignored
        ],
    );
    b.call(false, "tbl_a", a, None);
    let (st, mut e) = setup(b.program());
    let r = st.program().register_by_name("seen").unwrap();
    st.register_write(r, 1, &[0xff, 0xfe]).unwrap();
    for _ in 0..3 {
        run(&mut e, &ip_frame(1, 1, b""), 0, 0);
    }
    assert_eq!(st.register_read(r, 1).unwrap(), vec![0, 1]);
    assert_eq!(st.register_read(r, 4).unwrap_err().code(), ErrorCode::OutOfRange);
    assert!(matches!(st.register_write(r, 0, &[1, 0, 0]), Err(StateError::ValueTooWide { .. })));
}

/// Egress program for the clone tests: instance 0 sets a preserved and a
/// non-preserved field and clones E2E; the clone reports them.
fn clone_prog(session: u128) -> B {
    let mut b = B::new();
    reg_out(&mut b);
    b.push(
        "field_lists",
        json!({"id": 1, "name": "field_list1", "elements": [fld("scalars", "m32")]}),
    );
    let fwd = b.action("fwd", &[], vec![assign(fld(SM, "egress_spec"), hex(3))]);
    b.call(false, "tbl_fwd", fwd, None);
    let orig = b.action(
        "orig",
        &[],
        vec![
            assign(fld("scalars", "m32"), hex(77)),
            assign(fld("scalars", "m16"), hex(5)),
            prim("clone_egress_pkt_to_egress", vec![hex(session), hex(1)]),
        ],
    );
    let cl = b.action(
        "cl",
        &[],
        vec![
            out_w(0, fld("scalars", "m32")),
            out_w(1, fld("scalars", "m16")),
            out_w(2, fld(SM, "instance_type")),
            out_w(3, fld(SM, "egress_port")),
            out_w(4, fld(SM, "enq_qdepth")),
            assign(fld("ethernet", "etype"), hex(0x1234)),
            prim("truncate", vec![hex(20)]),
        ],
    );
    b.cond(true, "c", ex("==", fld(SM, "instance_type"), hex(0)), Some("tbl_orig"), Some("tbl_cl"));
    b.call(true, "tbl_orig", orig, None);
    b.call(true, "tbl_cl", cl, None);
    b.init(true, "c");
    b
}

#[test]
fn e2e_clone_preserves_field_list_and_truncates() {
    let (st, mut e) = setup(clone_prog(5).program());
    let f = ip_frame(1, 1, &[0u8; 40]);
    // no session configured: no clone
    assert_eq!(run(&mut e, &f, 0, 0).len(), 1);
    st.clone_session_set(5, vec![Replica { port: 9, rid: 0 }], None);
    assert_eq!(st.clone_session_get(5), Some((vec![Replica { port: 9, rid: 0 }], None)));
    let out = run(&mut e, &f, 0, 4);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0], (3, f.clone()));
    assert_eq!(out[1].0, 9);
    assert_eq!(out[1].1.len(), 20);
    assert_eq!(out[1].1[12..14], [0x12, 0x34]);
    assert_eq!(out[1].1[..12], f[..12]);
    assert_eq!(out_r(&st, 0), 77, "field list preserved");
    assert_eq!(out_r(&st, 1), 0, "other metadata reset");
    assert_eq!(out_r(&st, 2), 2, "E2E clone instance type");
    assert_eq!(out_r(&st, 3), 9);
    assert_eq!(out_r(&st, 4), 4);
    // the session's own truncation
    st.clone_session_set(5, vec![Replica { port: 9, rid: 0 }, Replica { port: 10, rid: 1 }], Some(16));
    let out = run(&mut e, &f, 0, 0);
    assert_eq!(out.iter().map(|(p, f)| (*p, f.len())).collect::<Vec<_>>(), vec![(3, f.len()), (9, 16), (10, 16)]);
    st.clone_session_delete(5).unwrap();
    assert_eq!(st.clone_session_delete(5).unwrap_err().code(), ErrorCode::NotFound);
}

#[test]
fn i2e_clone_multicast_and_resubmit() {
    // I2E clone
    let mut b = B::new();
    reg_out(&mut b);
    b.push("field_lists", json!({"id": 1, "name": "field_list1", "elements": [fld("scalars", "m8")]}));
    let ing = b.action(
        "ing",
        &[],
        vec![
            assign(fld("scalars", "m8"), hex(42)),
            assign(fld(SM, "egress_spec"), hex(1)),
            prim("clone_ingress_pkt_to_egress", vec![hex(7), hex(1)]),
            assign(fld("ethernet", "etype"), hex(0x9999)),
        ],
    );
    b.call(false, "tbl_ing", ing, None);
    let eg = b.action(
        "eg",
        &[],
        vec![out_w(0, fld(SM, "instance_type")), out_w(1, fld("scalars", "m8"))],
    );
    b.cond(true, "c", ex("!=", fld(SM, "instance_type"), hex(0)), Some("tbl_eg"), None);
    b.call(true, "tbl_eg", eg, None);
    b.init(true, "c");
    let (st, mut e) = setup(b.program());
    st.clone_session_set(7, vec![Replica { port: 4, rid: 0 }], None);
    let f = ip_frame(1, 1, b"xyz");
    let out = run(&mut e, &f, 0, 0);
    assert_eq!(out.len(), 2);
    let clone = out.iter().find(|o| o.0 == 4).unwrap();
    assert_eq!(clone.1, f, "I2E clone is the original packet");
    let orig = out.iter().find(|o| o.0 == 1).unwrap();
    assert_eq!(orig.1[12..14], [0x99, 0x99]);
    assert_eq!(out_r(&st, 0), 1);
    assert_eq!(out_r(&st, 1), 42);

    // multicast with rid
    let mut b = B::new();
    reg_out(&mut b);
    let mc = b.action("mc", &[], vec![assign(fld(SM, "mcast_grp"), hex(3))]);
    b.call(false, "tbl_mc", mc, None);
    let eg = b.action(
        "eg",
        &[],
        vec![out_w(1, fld(SM, "instance_type")), prim("register_write", vec![
            json!({"type": "register_array", "value": "out"}), fld(SM, "egress_port"), fld(SM, "egress_rid")])],
    );
    b.call(true, "tbl_eg", eg, None);
    let (st, mut e) = setup(b.program());
    let f = ip_frame(1, 1, b"m");
    assert!(run(&mut e, &f, 0, 0).is_empty(), "unknown group: nothing");
    st.mcast_group_set(3, vec![Replica { port: 5, rid: 10 }, Replica { port: 6, rid: 20 }]);
    let out = run(&mut e, &f, 0, 0);
    assert_eq!(out, vec![(5, f.clone()), (6, f.clone())]);
    assert_eq!(out_r(&st, 5), 10);
    assert_eq!(out_r(&st, 6), 20);
    assert_eq!(out_r(&st, 1), 5, "replication instance type");
    assert_eq!(st.mcast_group_get(3).unwrap().len(), 2);
    st.mcast_group_delete(3).unwrap();
    assert!(st.mcast_group_delete(3).is_err());

    // resubmit
    let mut b = B::new();
    b.push("field_lists", json!({"id": 1, "name": "field_list1", "elements": [fld("scalars", "m8")]}));
    let first = b.action(
        "first",
        &[],
        vec![assign(fld("scalars", "m8"), hex(9)), prim("resubmit", vec![hex(1)]), assign(fld(SM, "egress_spec"), hex(1))],
    );
    let second = b.action("second", &[], vec![assign(fld(SM, "egress_spec"), fld("scalars", "m8"))]);
    b.cond(false, "c", ex("==", fld(SM, "instance_type"), hex(6)), Some("tbl_second"), Some("tbl_first"));
    b.call(false, "tbl_first", first, None);
    b.call(false, "tbl_second", second, None);
    b.init(false, "c");
    let (_st, mut e) = setup(b.program());
    assert_eq!(run(&mut e, &f, 0, 0), vec![(9, f.clone())]);
}

#[test]
fn recirculate_runs_ingress_again() {
    let mut b = B::new();
    b.push("field_lists", json!({"id": 1, "name": "field_list1", "elements": [fld("scalars", "m8")]}));
    let a1 = b.action("to1", &[], vec![assign(fld(SM, "egress_spec"), hex(1))]);
    let a5 = b.action("to5", &[], vec![assign(fld(SM, "egress_spec"), fld("scalars", "m8"))]);
    b.cond(false, "c", ex("==", fld(SM, "instance_type"), hex(4)), Some("tbl_to5"), Some("tbl_to1"));
    b.call(false, "tbl_to1", a1, None);
    b.call(false, "tbl_to5", a5, None);
    b.init(false, "c");
    let rc = b.action(
        "rc",
        &[],
        vec![assign(fld("scalars", "m8"), hex(5)), assign(fld("ipv4", "ttl"), hex(3)), prim("recirculate", vec![hex(1)])],
    );
    // instance_type is NORMAL again after ingress (bmv2): use the preserved field
    b.cond(true, "ce", ex("==", fld("scalars", "m8"), hex(0)), Some("tbl_rc"), None);
    b.call(true, "tbl_rc", rc, None);
    b.init(true, "ce");
    let (_st, mut e) = setup(b.program());
    let f = ip_frame(1, 64, b"r");
    let out = run(&mut e, &f, 0, 0);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, 5);
    assert_eq!(out[0].1[22], 3, "recirculated packet is the deparsed one");
}

#[test]
fn stacks_push_pop_and_set_valid() {
    let mut b = B::new();
    let push = b.action(
        "push",
        &[],
        vec![
            prim("push", vec![stack("tags"), hex(1)]),
            prim("add_header", vec![hdr("tags[0]")]),
            assign(fld("tags[0]", "v"), hex(0x77)),
            assign(fld(SM, "egress_spec"), hex(1)),
        ],
    );
    let pop = b.action(
        "pop",
        &[],
        vec![prim("pop", vec![stack("tags"), hex(1)]), assign(fld(SM, "egress_spec"), hex(2)), prim("remove_header", vec![hdr("ipv4")])],
    );
    b.cond(false, "c", ex("==", fld("ethernet", "dst"), hex(1)), Some("tbl_push"), Some("tbl_pop"));
    b.call(false, "tbl_push", push, None);
    b.call(false, "tbl_pop", pop, None);
    b.init(false, "c");
    let (_st, mut e) = setup(b.program());
    let mut f = eth(1, 2, 0x8100);
    f.extend([5, 1]);
    f.extend(ipv4(1, 2, 3, 4, 0, 0));
    let out = run(&mut e, &f, 0, 0);
    let mut want = eth(1, 2, 0x8100);
    want.extend([0x77, 0, 5, 1]);
    want.extend(ipv4(1, 2, 3, 4, 0, 0));
    assert_eq!(out, vec![(1, want)]);
    let mut f = eth(2, 2, 0x8100);
    f.extend([5, 0, 6, 1]);
    f.extend(ipv4(1, 2, 3, 4, 0, 0));
    f.extend(b"pl");
    let out = run(&mut e, &f, 0, 0);
    let mut want = eth(2, 2, 0x8100);
    want.extend([6, 1]);
    want.extend(b"pl");
    assert_eq!(out, vec![(2, want)]);
}

#[test]
fn random_is_uniform_in_range_and_seeded() {
    let mut b = B::new();
    b.push("register_arrays", json!({"name": "hist", "id": 0, "size": 16, "bitwidth": 32}));
    let ra = json!({"type": "register_array", "value": "hist"});
    let a = b.action(
        "a",
        &[],
        vec![
            prim("modify_field_rng_uniform", vec![fld("scalars", "m16"), hex(3), hex(12)]),
            prim("register_read", vec![fld("scalars", "m32"), ra.clone(), fld("scalars", "m16")]),
            prim("register_write", vec![ra, fld("scalars", "m16"), masked(ex("+", fld("scalars", "m32"), hex(1)), 32)]),
            assign(fld(SM, "egress_spec"), fld("scalars", "m16")),
        ],
    );
    b.call(false, "tbl_a", a, None);
    let p = std::sync::Arc::new(b.program());
    let st = std::sync::Arc::new(State::new(p));
    let mut e = Engine::with_seed(st.clone(), 1);
    let f = ip_frame(1, 1, b"");
    let mut ports = vec![];
    for _ in 0..5000 {
        ports.push(run(&mut e, &f, 0, 0)[0].0);
    }
    let r = st.program().register_by_name("hist").unwrap();
    for i in 0..16u64 {
        let v = st.register_read(r, i).unwrap();
        let n = u32::from_be_bytes(v.try_into().unwrap());
        if (3..=12).contains(&i) {
            assert!((400..600).contains(&n), "bucket {i}: {n}");
        } else {
            assert_eq!(n, 0);
        }
    }
    let mut e2 = Engine::with_seed(st.clone(), 1);
    let again: Vec<u32> = (0..100).map(|_| run(&mut e2, &f, 0, 0)[0].0).collect();
    assert_eq!(again, ports[..100]);
}

#[test]
fn hash_with_crc16_and_identity() {
    let mut b = B::new();
    reg_out(&mut b);
    b.push("calculations", json!({"name": "h1", "id": 0, "algo": "crc16", "input": [fld("ipv4", "dst")]}));
    b.push("calculations", json!({"name": "h2", "id": 1, "algo": "identity",
        "input": [fld("ipv4", "ttl"), {"type": "hexstr", "value": "0x3", "bitwidth": 4}, fld("ipv4", "version")]}));
    let calc = |n: &str| json!({"type": "calculation", "value": n});
    let a = b.action(
        "a",
        &[],
        vec![
            prim("modify_field_with_hash_based_offset", vec![fld("scalars", "m32"), hex(0), calc("h1"), hex(0x10000)]),
            out_w(0, fld("scalars", "m32")),
            prim("modify_field_with_hash_based_offset", vec![fld("scalars", "m32"), hex(100), calc("h2"), hex(0x10000)]),
            out_w(1, fld("scalars", "m32")),
        ],
    );
    b.call(false, "tbl_a", a, None);
    let (st, mut e) = setup(b.program());
    run(&mut e, &ip_frame(u32::from_be_bytes(*b"1234"), 0x41, b""), 0, 0);
    // CRC-16/ARC of "1234"
    assert_eq!(out_r(&st, 0), 0x14ba);
    assert_eq!(out_r(&st, 1), 0x4134 + 100);
}

#[test]
fn value_sets_lookahead_verify_advance() {
    let mut b = B::new();
    reg_out(&mut b);
    b.push("parse_vsets", json!({"name": "types", "id": 0, "compressed_bitwidth": 16}));
    let states = json!([
        {"name": "start", "id": 0,
         "parser_ops": [
            {"op": "set", "parameters": [fld("scalars", "m16"), {"type": "lookahead", "value": [96, 16]}]},
            {"op": "extract", "parameters": [{"type": "regular", "value": "ethernet"}]}],
         "transition_key": [fld("ethernet", "etype")],
         "transitions": [
            {"type": "parse_vset", "value": "types", "mask": null, "next_state": "skip"},
            {"type": "default", "value": null, "mask": null, "next_state": null}]},
        {"name": "skip", "id": 1,
         "parser_ops": [
            {"op": "advance", "parameters": [hex(16)]},
            {"op": "extract", "parameters": [{"type": "regular", "value": "ipv4"}]},
            {"op": "verify", "parameters": [ex("!=", fld("ipv4", "ttl"), hex(0)), hex(6)]}],
         "transition_key": [{"type": "lookahead", "value": [0, 8]}],
         "transitions": [
            {"type": "hexstr", "value": "0x80", "mask": "0xf0", "next_state": "tag"},
            {"type": "default", "value": null, "mask": null, "next_state": null}]},
        {"name": "tag", "id": 2,
         "parser_ops": [{"op": "extract", "parameters": [{"type": "stack", "value": "tags"}]}],
         "transition_key": [], "transitions": [{"type": "default", "value": null, "mask": null, "next_state": null}]}
    ]);
    b.j["parsers"][0]["parse_states"] = states;
    b.j["deparsers"][0]["order"] = json!(["ethernet", "ipv4", "tags[0]", "tags[1]", "tags[2]"]);
    let a = b.action(
        "a",
        &[],
        vec![
            out_w(0, fld("scalars", "m16")),
            out_w(1, un("b2d", un("valid", hdr("ipv4")))),
            out_w(2, fld(SM, "parser_error")),
            out_w(3, un("b2d", un("valid", hdr("tags[0]")))),
            assign(fld(SM, "egress_spec"), hex(1)),
        ],
    );
    b.call(false, "tbl_a", a, None);
    let (st, mut e) = setup(b.program());
    let vs = st.program().value_set_by_name("types").unwrap();
    let mut f = eth(1, 2, 0x0888);
    f.extend([0xaa, 0xbb]);
    f.extend(ipv4(1, 2, 7, 0, 0, 2));
    f.extend([0x85, 0x01]);
    run(&mut e, &f, 0, 0);
    assert_eq!(out_r(&st, 0), 0x0888);
    assert_eq!(out_r(&st, 1), 0, "not in the value set yet");
    st.value_set_set(vs, vec![vec![0x08, 0x88]]).unwrap();
    assert_eq!(st.value_set_get(vs), vec![vec![0x08, 0x88]]);
    let out = run(&mut e, &f, 0, 0);
    assert_eq!(out_r(&st, 1), 1);
    assert_eq!(out_r(&st, 3), 1, "masked select on lookahead");
    assert_eq!(out_r(&st, 2), 0);
    // advanced bytes are dropped by the deparser (bmv2 behaviour)
    assert_eq!(out[0].1.len(), f.len() - 2);
    let mut g = f.clone();
    g[16 + 8] = 0; // ttl 0: verify fails with error 6
    run(&mut e, &g, 0, 0);
    assert_eq!(out_r(&st, 2), 6);
    assert_eq!(out_r(&st, 3), 0);
}

#[test]
fn header_union_members_exclude_each_other() {
    let mut b = B::new();
    reg_out(&mut b);
    b.push("headers", json!({"name": "u.a", "id": 7, "header_type": "tag_t", "metadata": false}));
    b.push("headers", json!({"name": "u.b", "id": 8, "header_type": "tag_t", "metadata": false}));
    b.push("header_union_types", json!({"name": "u_t", "id": 0, "headers": [["a", "tag_t"], ["b", "tag_t"]]}));
    b.push("header_unions", json!({"name": "u", "id": 0, "union_type": "u_t", "header_ids": [7, 8]}));
    let a = b.action(
        "a",
        &[],
        vec![
            prim("add_header", vec![hdr("u.a")]),
            out_w(0, un("b2d", un("valid_union", json!({"type": "header_union", "value": "u"})))),
            prim("add_header", vec![hdr("u.b")]),
            out_w(1, un("b2d", un("valid", hdr("u.a")))),
            out_w(2, un("b2d", un("valid", hdr("u.b")))),
        ],
    );
    b.call(false, "tbl_a", a, None);
    let (st, mut e) = setup(b.program());
    run(&mut e, &ip_frame(1, 1, b""), 0, 0);
    assert_eq!((out_r(&st, 0), out_r(&st, 1), out_r(&st, 2)), (1, 0, 1));
}

#[test]
fn exit_stops_the_pipeline_and_packet_length() {
    let mut b = B::new();
    reg_out(&mut b);
    let a = b.action("a", &[], vec![assign(fld(SM, "egress_spec"), hex(2)), prim("exit", vec![])]);
    let never = b.action("never", &[], vec![assign(fld(SM, "egress_spec"), hex(3))]);
    b.call(false, "tbl_a", a, Some("tbl_never"));
    b.call(false, "tbl_never", never, None);
    let eg = b.action(
        "eg",
        &[],
        vec![
            out_w(0, fld(SM, "packet_length")),
            out_w(1, fld(SM, "egress_spec")),
            out_w(2, fld(SM, "ingress_global_timestamp")),
            out_w(3, fld(SM, "egress_global_timestamp")),
            out_w(4, fld(SM, "deq_timedelta")),
            prim("mark_to_drop", vec![hdr(SM)]),
        ],
    );
    b.call(true, "tbl_eg", eg, None);
    let (st, mut e) = setup(b.program());
    let f = ip_frame(1, 1, b"12345");
    let mut q = vec![];
    e.ingress(&f, 0, 1000, &mut q);
    assert_eq!(q.len(), 1);
    assert_eq!(q[0].egress_port(), 2);
    assert_eq!(q[0].len(), f.len());
    let mut re = vec![];
    assert!(e.egress(q.pop().unwrap(), qm(0), 1010, &mut re).is_none(), "mark_to_drop in egress drops");
    assert_eq!(out_r(&st, 0), f.len() as u128);
    assert_eq!(out_r(&st, 1), 0, "egress_spec starts at 0 in egress (512 in 9 bits)");
    assert_eq!(out_r(&st, 2), 1000);
    assert_eq!(out_r(&st, 3), 1010);
    assert_eq!(out_r(&st, 4), 7);
}

#[test]
fn assert_failure_drops_and_counts() {
    let mut b = B::new();
    let a = b.action("a", &[], vec![prim("assert", vec![xp(ex("==", fld("ipv4", "ttl"), hex(1)))]), assign(fld(SM, "egress_spec"), hex(1))]);
    b.call(false, "tbl_a", a, None);
    let (st, mut e) = setup(b.program());
    assert_eq!(run(&mut e, &ip_frame(1, 1, b""), 0, 0).len(), 1);
    assert!(run(&mut e, &ip_frame(1, 2, b""), 0, 0).is_empty());
    assert_eq!(st.assert_failures(), 1);
}

#[test]
fn jumps_inside_actions() {
    let mut b = B::new();
    reg_out(&mut b);
    let a = b.action(
        "a",
        &[],
        vec![
            prim("_jump_if_zero", vec![ex("-", fld("ipv4", "ttl"), hex(5)), hex(3)]),
            out_w(0, hex(1)),
            prim("_jump", vec![hex(4)]),
            out_w(0, hex(2)),
            out_w(1, hex(9)),
        ],
    );
    b.call(false, "tbl_a", a, None);
    let (st, mut e) = setup(b.program());
    run(&mut e, &ip_frame(1, 5, b""), 0, 0);
    assert_eq!((out_r(&st, 0), out_r(&st, 1)), (2, 9));
    run(&mut e, &ip_frame(1, 6, b""), 0, 0);
    assert_eq!(out_r(&st, 0), 1);
}

#[test]
fn const_entries_are_read_only() {
    let mut b = B::new();
    let (fwd, drop) = fwd_drop(&mut b);
    b.table(false, "t", &[("ternary", "ipv4", "ttl")], &[fwd, drop], (drop, vec![]), false, None, 2);
    b.j["pipelines"][0]["tables"][0]["entries"] = json!([
        {"match_key": [{"match_type": "ternary", "key": "0x05", "mask": "0xff"}],
         "action_entry": {"action_id": fwd, "action_data": ["0x4"]}, "priority": 1},
        {"match_key": [{"match_type": "ternary", "key": "0x00", "mask": "0x00"}],
         "action_entry": {"action_id": fwd, "action_data": ["0x6"]}, "priority": 2}
    ]);
    let (st, mut e) = setup(b.program());
    assert!(st.program().tables()[0].has_const_entries);
    assert_eq!(st.table_entries(TableId(0)).len(), 2);
    assert_eq!(run(&mut e, &ip_frame(1, 5, b""), 0, 0)[0].0, 4);
    assert_eq!(run(&mut e, &ip_frame(1, 7, b""), 0, 0)[0].0, 6);
    let err = st.table_delete(TableId(0), &st.table_entries(TableId(0))[0].key, 2).unwrap_err();
    assert_eq!(err.code(), ErrorCode::PermissionDenied);
}

#[test]
fn hit_miss_next_tables() {
    let mut b = B::new();
    let (fwd, drop) = fwd_drop(&mut b);
    let hit = b.action("on_hit", &[], vec![assign(fld("ethernet", "etype"), hex(0xaaaa))]);
    let miss = b.action("on_miss", &[], vec![assign(fld("ethernet", "etype"), hex(0xbbbb)), assign(fld(SM, "egress_spec"), hex(8))]);
    b.table(false, "t", &[("exact", "ipv4", "ttl")], &[fwd, drop], (drop, vec![]), false, None, 8);
    b.j["pipelines"][0]["tables"][0]["next_tables"] = json!({"__HIT__": "tbl_hit", "__MISS__": "tbl_miss"});
    b.call(false, "tbl_hit", hit, None);
    b.call(false, "tbl_miss", miss, None);
    let (st, mut e) = setup(b.program());
    st.table_insert(TableId(0), TableEntry { key: vec![ek(&[5])], priority: 0, action: call(ActionId(fwd as usize), &[&[2]]) })
        .unwrap();
    let o = run(&mut e, &ip_frame(1, 5, b""), 0, 0);
    assert_eq!((o[0].0, o[0].1[12]), (2, 0xaa));
    let o = run(&mut e, &ip_frame(1, 6, b""), 0, 0);
    assert_eq!((o[0].0, o[0].1[12]), (8, 0xbb));
}

#[test]
fn unsupported_constructs_are_rejected_by_name() {
    let check = |b: B, needle: &str| {
        let e = b.load_err().to_string();
        assert!(e.contains(needle), "'{e}' should mention '{needle}'");
    };
    check(B::new().set("meter_arrays", json!([{"name": "m", "id": 0, "type": "packets", "size": 1, "rate_count": 2, "is_direct": false}])), "meters");
    let mut b = B::new();
    b.j["header_types"][4]["fields"] = json!([["v", "*"]]);
    check(b, "varbit");
    let mut b = B::new();
    b.j["header_types"][4]["fields"] = json!([["v", 200, false]]);
    check(b, "200 bits");
    let mut b = B::new();
    b.action("a", &[], vec![prim("frobnicate", vec![])]);
    check(b, "frobnicate");
    let mut b = B::new();
    b.action("a", &[], vec![prim("generate_digest", vec![hex(0), hex(1)])]);
    check(b, "digest");
    let mut b = B::new();
    b.action("a", &[], vec![prim("execute_meter", vec![])]);
    check(b, "meter");
    check(B::new().set("extern_instances", json!([{"name": "x", "id": 0, "type": "foo", "attribute_values": []}])), "extern");
    let mut b = B::new();
    b.push("calculations", json!({"name": "h", "id": 0, "algo": "xxh64", "input": []}));
    check(b, "xxh64");
    let mut b = B::new();
    let (fwd, _) = fwd_drop(&mut b);
    b.table(false, "t", &[], &[fwd], (fwd, vec!["0x1"]), false, None, 4);
    b.j["pipelines"][0]["tables"][0]["type"] = json!("indirect");
    check(b, "action profiles");
    let mut b = B::new();
    b.j["pipelines"][0]["conditionals"] = json!([{"name": "c", "id": 0, "expression": un("frob", hex(1)), "true_next": null, "false_next": null}]);
    check(b, "frob");
    let b = B::new().set("header_union_stacks", json!([{"name": "s"}]));
    check(b, "union stacks");
    assert!(matches!(Program::from_json("{nope"), Err(LoadError::Json(_))));
}

/// Selects on several fields at once (one of them narrower than a byte),
/// with and without masks, on the fast path (packed into one compare a
/// case, fast.rs) and on the general one.
#[test]
fn multi_field_masked_selects_on_both_paths() {
    let mut b = B::new();
    reg_out(&mut b);
    b.j["parsers"][0]["parse_states"][1] = json!(
        {"name": "parse_ipv4", "id": 1,
         "parser_ops": [{"op": "extract", "parameters": [{"type": "regular", "value": "ipv4"}]}],
         "transition_key": [fld("ipv4", "ihl"), fld("ipv4", "ttl"), fld("ipv4", "protocol")],
         "transitions": [
            // ihl 6: never here (the frames' ihl is 5)
            {"type": "hexstr", "value": "0x064011", "mask": null, "next_state": "parse_tags"},
            // ihl 5, ttl 0x4?, any protocol
            {"type": "hexstr", "value": "0x054000", "mask": "0x0ff000", "next_state": "parse_tags"},
            // ihl 5, ttl 7, protocol 6 exactly
            {"type": "hexstr", "value": "0x050706", "mask": null, "next_state": "parse_tags"},
            {"type": "default", "value": null, "mask": null, "next_state": null}]});
    // Tags after IPv4 end there (bos is not a select key any more).
    b.j["parsers"][0]["parse_states"][2]["transition_key"] = json!([]);
    b.j["parsers"][0]["parse_states"][2]["transitions"] =
        json!([{"type": "default", "value": null, "mask": null, "next_state": null}]);
    b.j["deparsers"][0]["order"] = json!(["ethernet", "ipv4", "tags[0]", "tags[1]", "tags[2]"]);
    let a = b.action(
        "a",
        &[],
        vec![out_w(0, un("b2d", un("valid", hdr("tags[0]")))), assign(fld(SM, "egress_spec"), hex(1))],
    );
    b.call(false, "tbl_a", a, None);
    let (st, mut e) = setup(b.program());
    let cases: [(u8, u8, u128); 7] = [
        (0x05, 0x11, 0),
        (0x40, 0x11, 1),
        (0x4f, 0x00, 1),
        (0x50, 0x06, 0),
        (0x07, 0x06, 1),
        (0x07, 0x11, 0),
        (0x06, 0x06, 0),
    ];
    for fast in [true, false] {
        e.set_fast_path(fast);
        for (ttl, proto, tagged) in cases {
            let mut f = eth(1, 2, 0x0800);
            f.extend(ipv4(1, 2, ttl, proto, 0, 4));
            f.extend([0x12, 0x34, 0x56, 0x78]);
            run(&mut e, &f, 0, 0);
            assert_eq!(out_r(&st, 0), tagged, "ttl {ttl:#x} protocol {proto:#x}, fast path {fast}");
        }
    }
}

/// A key of more fields than fit the engine's stack array (engine.rs,
/// SMALL_KEY) is built on the heap instead, and matches the same.
#[test]
fn exact_key_of_five_fields() {
    let mut b = B::new();
    let (fwd, drop) = fwd_drop(&mut b);
    let fields = [("exact", "ipv4", "src"), ("exact", "ipv4", "dst"), ("exact", "ipv4", "ttl"), ("exact", "ipv4", "protocol"), ("exact", "ethernet", "etype")];
    b.table(false, "five", &fields, &[fwd, drop], (drop, vec![]), false, None, 64);
    let (st, mut e) = setup(b.program());
    let key = |dst: u32| {
        vec![
            MatchKey::Exact(0x0a00_0001u32.to_be_bytes().to_vec()),
            MatchKey::Exact(dst.to_be_bytes().to_vec()),
            MatchKey::Exact(vec![9]),
            MatchKey::Exact(vec![17]),
            MatchKey::Exact(vec![0x08, 0x00]),
        ]
    };
    let fwd = ActionId(fwd as usize);
    st.table_insert(TableId(0), TableEntry { key: key(0x0a01_0203), priority: 0, action: call(fwd, &[&[5]]) }).unwrap();
    let port = |e: &mut Engine, ip: u32, ttl: u8| run(e, &ip_frame(ip, ttl, b"x"), 0, 0).first().map(|x| x.0);
    assert_eq!(port(&mut e, 0x0a01_0203, 9), Some(5));
    assert_eq!(port(&mut e, 0x0a01_0203, 8), None, "ttl is part of the key");
    assert_eq!(port(&mut e, 0x0a01_0204, 9), None);
}

/// A control graph that loops (p4c never emits one) is not compiled to
/// native code: it stays with the interpreter, which stops after its step
/// bound, so the packet still comes out.
#[test]
fn looping_control_graph_stays_interpreted() {
    let mut b = B::new();
    let fwd = b.action("fwd1", &[], vec![assign(fld(SM, "egress_spec"), hex(1))]);
    b.cond(false, "again", json!({"type": "bool", "value": true}), Some("tbl_fwd"), None);
    b.call(false, "tbl_fwd", fwd, Some("again"));
    b.init(false, "tbl_fwd");
    let (_, mut e) = setup(b.program());
    let code = e.native_code().expect("on by default").expect("a backend for this host");
    assert_eq!(code.pipelines, 1, "egress compiled, the looping ingress not: {code:?}");
    let mut f = eth(1, 2, 0x0800);
    f.extend(ipv4(1, 2, 64, 17, 0, 0));
    assert_eq!(run(&mut e, &f, 0, 0).len(), 1);
}

/// `exit` inside an action ends the pipeline after that action (the
/// action's own later primitives still run, as bmv2's do), on all three
/// paths.
#[test]
fn exit_ends_the_pipeline_after_its_action() {
    let mut b = B::new();
    reg_out(&mut b);
    let a = b.action("a", &[], vec![out_w(0, hex(1)), prim("exit", vec![]), out_w(1, hex(2)), assign(fld(SM, "egress_spec"), hex(1))]);
    let after = b.action("after", &[], vec![out_w(2, hex(3))]);
    b.call(false, "tbl_a", a, Some("tbl_after"));
    b.call(false, "tbl_after", after, None);
    b.init(false, "tbl_a");
    let (st, mut e) = setup(b.program());
    let mut f = eth(1, 2, 0x0800);
    f.extend(ipv4(1, 2, 64, 17, 0, 0));
    for path in ["native", "closures", "interpreter"] {
        match path {
            "native" => e.set_native(true),
            "closures" => e.set_native(false),
            _ => e.set_fast_path(false),
        }
        for i in 0..3 {
            st.register_write(st.program().register_by_name("out").unwrap(), i, &[0; 16]).unwrap();
        }
        assert_eq!(run(&mut e, &f, 0, 0).len(), 1, "{path}");
        assert_eq!((out_r(&st, 0), out_r(&st, 1), out_r(&st, 2)), (1, 2, 0), "{path}");
    }
}
