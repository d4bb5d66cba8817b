//! Seeded fuzzing: random and truncated frames, random control-plane
//! writes. Nothing may panic and the port counters must add up.
//!
//! Every run has twins fed the same writes and packets: one on the fast
//! path's closures without native code (`set_native(false)`) and one on
//! the general interpreter (`set_fast_path(false)`). The native pipelines
//! (given each frame to keep, `ingress_owned`, where the twins copy it)
//! must give the same frames, ports, counters and registers as both.

mod common;
use common::*;
use pipeline::*;
use std::sync::Arc;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

fn random_key(r: &mut Rng, info: &TableInfo) -> Vec<MatchKey> {
    info.keys
        .iter()
        .map(|k| {
            let nb = (k.bitwidth as usize).div_ceil(8);
            let len = if r.below(8) == 0 { r.below(nb as u64 + 3) as usize } else { nb };
            let mut v = r.bytes(len);
            if r.below(2) == 0 && !v.is_empty() {
                v[0] &= ((1u16 << (k.bitwidth % 8).max(if k.bitwidth % 8 == 0 { 8 } else { 0 })) - 1) as u8;
            }
            match r.below(6) {
                0 => MatchKey::Exact(v),
                1 => MatchKey::Lpm { value: v, prefix_len: r.below(k.bitwidth as u64 + 2) as u32 },
                2 => MatchKey::Ternary { mask: v.clone(), value: v },
                3 => MatchKey::Range { low: v.clone(), high: v },
                4 => MatchKey::Optional(Some(v)),
                _ => match k.match_kind {
                    MatchKind::Exact => MatchKey::Exact(v),
                    MatchKind::Lpm => MatchKey::Lpm { value: vec![0; nb], prefix_len: 0 },
                    _ => MatchKey::Ternary { value: vec![0; nb], mask: vec![0; nb] },
                },
            }
        })
        .collect()
}

fn random_call(r: &mut Rng, p: &Program, info: &TableInfo) -> ActionCall {
    let a = if r.below(10) == 0 { ActionId(r.below(p.actions().len() as u64) as usize) } else {
        info.action_ids[r.below(info.action_ids.len() as u64) as usize]
    };
    let n = p.actions()[a.0].params.len() + if r.below(10) == 0 { 1 } else { 0 };
    let args = (0..n)
        .map(|i| {
            let w = p.actions()[a.0].params.get(i).map_or(8, |x| x.bitwidth);
            let mut b = r.bytes((w as usize).div_ceil(8));
            if r.below(3) > 0 && !b.is_empty() && w % 8 != 0 {
                b[0] &= (1u8 << (w % 8)) - 1;
            }
            b
        })
        .collect();
    ActionCall { action: a, args }
}

fn frames(r: &mut Rng) -> Vec<u8> {
    let base = match r.below(5) {
        0 => {
            let n = r.below(120) as usize;
            r.bytes(n)
        }
        1 => {
            let (d, t, n) = (r.next() as u32, r.below(4) as u8, r.below(60) as usize);
            ip_frame(d, t, &r.bytes(n))
        }
        2 => {
            // UDP with a shim of random hop count
            let hops = r.below(7) as u8;
            let mut payload = vec![1, hops, 0, 0, 0, 0, 0, 0];
            let n = 20 * r.below(6) as usize;
            payload.extend(r.bytes(n));
            let mut udp = 1u16.to_be_bytes().to_vec();
            udp.extend(7360u16.to_be_bytes());
            udp.extend((8 + payload.len() as u16).to_be_bytes());
            udp.extend([0, 0]);
            udp.extend(payload);
            let mut f = eth(0xfe, 1, 0x0800);
            let mut ip = ipv4(1, 0x0a000201, 64, 17, r.below(4) as u8, udp.len() as u16);
            ip.extend(udp);
            f.extend(ip);
            f
        }
        3 => {
            let mut f = eth(r.next(), r.next(), 0x8100);
            let n = r.below(40) as usize;
            f.extend(r.bytes(n));
            f
        }
        _ => {
            let mut f = ip_frame(0x0a000201, 64, &r.bytes(30));
            f[23] = 6;
            f
        }
    };
    let cut = if r.below(3) == 0 { r.below(base.len() as u64 + 1) as usize } else { base.len() };
    base[..cut].to_vec()
}

/// The paths every run is made on, the first the reference: the default
/// (native pipelines), the fast path's closures alone, and the general
/// interpreter.
fn twins(p: &Arc<Program>, seed: u64) -> Vec<(Arc<State>, Engine)> {
    (0..3)
        .map(|i| {
            let st = Arc::new(State::new(p.clone()));
            let mut e = Engine::with_seed(st.clone(), seed);
            match i {
                0 => {
                    let code = e.native_code().expect("native code is on by default");
                    assert!(code.is_ok_and(|s| s.pipelines > 0), "the program runs as native code");
                }
                1 => e.set_native(false),
                _ => e.set_fast_path(false),
            }
            (st, e)
        })
        .collect()
}

fn fuzz(p: Program, seed: u64, rounds: usize, rx: Option<&str>, tx: Option<&str>) {
    let p = Arc::new(p);
    let mut tw = twins(&p, seed);
    let st = tw[0].0.clone();
    let mut r = Rng(seed | 1);
    let trunc = Some(r.below(200) as u32);
    for (s, _) in &tw {
        s.clone_session_set(100, vec![Replica { port: 9, rid: 0 }], trunc);
        s.mcast_group_set(1, vec![Replica { port: 1, rid: 1 }, Replica { port: 2, rid: 2 }]);
    }
    let mut sent_per_port = [0u64; 512];
    let mut transmitted = 0u64;
    for round in 0..rounds {
        // control plane
        for _ in 0..r.below(4) {
            let t = TableId(r.below(p.tables().len() as u64) as usize);
            let info = &p.tables()[t.0];
            let key = random_key(&mut r, info);
            let prio = r.below(5) as i32 - 1;
            let c = random_call(&mut r, &p, info);
            let op = r.below(6);
            let (clear, reset) = (r.below(50) == 0, r.below(30) == 0);
            let mut results = Vec::new();
            for (s, _) in &tw {
                let (key, c) = (key.clone(), c.clone());
                results.push(match op {
                    0..=2 => s.table_insert(t, TableEntry { key, priority: prio, action: c }),
                    3 => s.table_modify(t, TableEntry { key, priority: prio, action: c }),
                    4 => s.table_delete(t, &key, prio),
                    _ => s.table_set_default(t, c),
                });
                if clear {
                    s.table_clear(t);
                }
                if reset {
                    s.table_reset_default(t);
                }
            }
            for (i, (s, _)) in tw.iter().enumerate().skip(1) {
                assert_eq!(results[0].is_ok(), results[i].is_ok());
                assert_eq!(st.table_entries(t), s.table_entries(t));
            }
        }
        // packets
        let f = frames(&mut r);
        let port = r.below(8) as u32;
        sent_per_port[port as usize] += 1;
        let mut qs: Vec<Vec<Queued>> = vec![Vec::new(); tw.len()];
        // The reference takes the frame as its own (no copy), the twins
        // borrow it.
        for (i, ((_, e), q)) in tw.iter_mut().zip(&mut qs).enumerate() {
            match i {
                0 => e.ingress_owned(f.clone(), port, round as u64, q),
                _ => e.ingress(&f, port, round as u64, q),
            }
        }
        let mut guard = 0;
        while !qs[0].is_empty() {
            let pks: Vec<Queued> = qs.iter_mut().map(|q| q.remove(0)).collect();
            for (i, pk) in pks.iter().enumerate().skip(1) {
                assert_eq!((pks[0].len(), pks[0].egress_port()), (pk.len(), pk.egress_port()), "seed {seed} round {round} path {i}");
            }
            guard += 1;
            assert!(guard < 64);
            if pks[0].is_recirculate() {
                for (((_, e), q), pk) in tw.iter_mut().zip(&mut qs).zip(pks) {
                    e.ingress_recirculated(pk, round as u64, q);
                }
                continue;
            }
            let qmeta = QueueMeta {
                enq_qdepth: r.next() as u32,
                deq_qdepth: r.next() as u32,
                deq_timedelta_us: r.next() as u32,
                enq_timestamp_us: r.next(),
            };
            let mut outs = Vec::new();
            for (((_, e), q), pk) in tw.iter_mut().zip(&mut qs).zip(pks) {
                let mut re = Vec::new();
                outs.push(e.egress(pk, qmeta, round as u64 + 3, &mut re));
                q.extend(re);
            }
            for (i, out) in outs.iter().enumerate().skip(1) {
                assert_eq!(&outs[0], out, "seed {seed} round {round} path {i}");
            }
            if outs[0].is_some() {
                transmitted += 1;
            }
        }
        assert!(qs.iter().all(|q| q.is_empty()));
    }
    for (_, (s, _)) in tw.iter().enumerate().skip(1) {
        for c in p.counters().iter().filter(|c| !c.is_direct) {
            for i in 0..c.size {
                assert_eq!(st.counter_read(c.id, i).unwrap(), s.counter_read(c.id, i).unwrap(), "counter {}[{i}]", c.name);
            }
        }
        for reg in p.registers() {
            for i in 0..reg.size {
                assert_eq!(st.register_read(reg.id, i).unwrap(), s.register_read(reg.id, i).unwrap(), "register {}[{i}]", reg.name);
            }
        }
    }
    if let Some(rx) = rx {
        let c = p.counter_by_name(rx).unwrap();
        for (port, &n) in sent_per_port.iter().enumerate().take(8) {
            assert_eq!(st.counter_read(c, port as u64).unwrap().packets, n, "rx port {port}");
        }
    }
    if let Some(tx) = tx {
        let c = p.counter_by_name(tx).unwrap();
        let total: u64 = (0..512).map(|i| st.counter_read(c, i).unwrap().packets).sum();
        assert_eq!(total, transmitted);
    }
}

#[test]
fn fuzz_cc_switch() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../p4src/build/cc_switch.json");
    let text = std::fs::read_to_string(path).expect("fixture");
    for seed in [1u64, 2, 3, 0xdead_beef] {
        fuzz(Program::from_json(&text).unwrap(), seed, 3000, Some("rx.port_packets"), Some("tx.port_packets"));
    }
}

/// p4c's own output for the constructs fixture: switch and hit/miss
/// next tables, const entries, header stacks, field lists, checksums.
#[test]
fn fuzz_p4c_constructs() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/constructs.json");
    let text = std::fs::read_to_string(path).expect("fixture");
    for seed in [7u64, 8, 9] {
        fuzz(Program::from_json(&text).unwrap(), seed, 3000, None, None);
    }
}

#[test]
fn fuzz_hand_written_program() {
    use serde_json::json;
    let mut b = B::new();
    b.push("field_lists", json!({"id": 1, "name": "field_list1", "elements": [fld("scalars", "m8")]}));
    b.push("counter_arrays", json!({"name": "rx", "id": 0, "size": 8, "is_direct": false}));
    let fwd = b.action("fwd", &[("port", 9)], vec![assign(fld("standard_metadata", "egress_spec"), rd(0))]);
    let mc = b.action("mc", &[("g", 16)], vec![assign(fld("standard_metadata", "mcast_grp"), rd(0))]);
    let pushit = b.action(
        "pushit",
        &[("n", 8)],
        vec![prim("push", vec![stack("tags"), rd(0)]), prim("add_header", vec![hdr("tags[0]")]), prim("pop", vec![stack("tags"), hex(1)])],
    );
    let clone = b.action("cl", &[], vec![prim("clone_ingress_pkt_to_egress", vec![hex(100), hex(1)])]);
    let cnt = b.action(
        "cnt",
        &[],
        vec![prim("count", vec![json!({"type": "counter_array", "value": "rx"}), fld("standard_metadata", "ingress_port")])],
    );
    b.call(false, "tbl_cnt", cnt, Some("t1"));
    b.table(false, "t1", &[("exact", "ethernet", "etype")], &[fwd, mc, clone, pushit], (fwd, vec!["0x1"]), false, Some("t2"), 64);
    b.table(false, "t2", &[("lpm", "ipv4", "dst")], &[fwd, mc, pushit], (fwd, vec!["0x2"]), false, Some("t3"), 64);
    b.table(
        false,
        "t3",
        &[("ternary", "ipv4", "ttl"), ("range", "tags[0]", "v"), ("exact", "ipv4", "$valid$")],
        &[fwd, clone],
        (fwd, vec!["0x3"]),
        false,
        None,
        64,
    );
    for seed in [5u64, 6] {
        fuzz(b.program(), seed, 3000, Some("rx"), None);
    }
}

/// The primitives native code runs inline beside the fast path's closures
/// (and a parser `set` the native parser runs): register reads and writes (indices in and out of range, values wider
/// than the register), counters, shifts by constants (into and past 64
/// bits) and header additions and removals, with a 128-bit register that
/// stays on the closures. Egress writes what they left in metadata, and
/// the packet length they moved, into header fields, so that every
/// result shows in the frames compared.
#[test]
fn fuzz_registers_counters_shifts_headers() {
    use serde_json::json;
    let mut b = B::new();
    b.push("counter_arrays", json!({"name": "rx", "id": 0, "size": 8, "is_direct": false}));
    b.push("counter_arrays", json!({"name": "by_ttl", "id": 1, "size": 16, "is_direct": false}));
    b.push("register_arrays", json!({"name": "r16", "id": 0, "size": 4, "bitwidth": 16}));
    b.push("register_arrays", json!({"name": "r64", "id": 1, "size": 8, "bitwidth": 64}));
    b.push("register_arrays", json!({"name": "r128", "id": 2, "size": 2, "bitwidth": 128}));
    let reg = |n: &str| json!({"type": "register_array", "value": n});
    let ctr = |n: &str| json!({"type": "counter_array", "value": n});
    let regs = b.action(
        "regs",
        &[("i", 8)],
        vec![
            prim("register_read", vec![fld("scalars", "m16"), reg("r16"), fld("ipv4", "ttl")]),
            prim("register_write", vec![reg("r16"), fld("ipv4", "ttl"), ex("+", fld("ipv4", "total_len"), fld("ipv4", "src"))]),
            prim("register_read", vec![fld("scalars", "m8"), reg("r64"), rd(0)]),
            prim("register_write", vec![reg("r64"), rd(0), ex("<<", fld("ipv4", "total_len"), hex(40))]),
            prim("register_read", vec![fld("scalars", "m64"), reg("r64"), masked(fld("ipv4", "protocol"), 3)]),
            prim("register_write", vec![reg("r128"), masked(fld("ipv4", "ttl"), 1), ex("<<", fld("ipv4", "dst"), hex(90))]),
            prim("register_read", vec![fld("scalars", "m128"), reg("r128"), masked(fld("ipv4", "diffserv"), 2)]),
            prim("count", vec![ctr("by_ttl"), fld("ipv4", "ttl")]),
            // Into a wider field: what was written was cut to 16 bits.
            prim("register_read", vec![fld("scalars", "m32"), reg("r16"), masked(fld("ipv4", "ttl"), 2)]),
        ],
    );
    let shifts = b.action(
        "shifts",
        &[],
        vec![
            assign(fld("scalars", "m32"), masked(ex(">>", fld("ipv4", "src"), hex(3)), 32)),
            assign(fld("scalars", "m64"), masked(ex("<<", fld("ipv4", "dst"), hex(50)), 64)),
            assign(fld("scalars", "m128"), ex("<<", fld("ipv4", "src"), hex(100))),
            assign(fld("ipv4", "src"), masked(ex(">>", fld("scalars", "m128"), hex(70)), 32)),
            assign(fld("ipv4", "dst"), masked(ex(">>", fld("scalars", "m64"), hex(40)), 32)),
            assign(fld("ipv4", "identification"), masked(fld("scalars", "m32"), 16)),
            assign(fld("ipv4", "ttl"), masked(ex(">>", fld("ipv4", "dst"), hex(64)), 8)),
            assign(fld("ipv4", "flags"), masked(ex(">>", fld("ipv4", "total_len"), hex(13)), 3)),
        ],
    );
    let hdrs = b.action(
        "hdrs",
        &[],
        vec![
            prim("add_header", vec![hdr("tags[0]")]),
            assign(fld("tags[0]", "v"), fld("ipv4", "protocol")),
            prim("remove_header", vec![hdr("tags[1]")]),
            prim("remove_header", vec![hdr("ipv4")]),
            prim("add_header", vec![hdr("ipv4")]),
        ],
    );
    let fwd = b.action("fwd", &[("port", 9)], vec![assign(fld("standard_metadata", "egress_spec"), rd(0))]);
    let cnt = b.action("cnt", &[], vec![prim("count", vec![ctr("rx"), fld("standard_metadata", "ingress_port")])]);
    let out = b.action(
        "out",
        &[],
        vec![
            assign(fld("ipv4", "total_len"), masked(fld("standard_metadata", "packet_length"), 16)),
            assign(fld("ipv4", "hdr_checksum"), fld("scalars", "m16")),
            assign(fld("ipv4", "diffserv"), fld("scalars", "m8")),
            assign(fld("ipv4", "frag_offset"), masked(fld("scalars", "m64"), 13)),
            assign(fld("ipv4", "protocol"), masked(ex(">>", fld("scalars", "m128"), hex(120)), 8)),
            assign(fld("ipv4", "src"), fld("scalars", "m32")),
            assign(fld("ipv4", "identification"), masked(ex("<<", fld("scalars", "b"), hex(1)), 16)),
            // Zero unless the 8-bit field read from the 64-bit register
            // kept more than its 8 bits.
            assign(fld("ipv4", "dst"), masked(ex(">>", fld("scalars", "m8"), hex(32)), 32)),
        ],
    );
    // A parser `set` of a wider value: the 1-bit field keeps one bit.
    b.j["parsers"][0]["parse_states"][1]["parser_ops"]
        .as_array_mut()
        .unwrap()
        .push(json!({"op": "set", "parameters": [fld("scalars", "b"), ex("+", fld("ipv4", "ttl"), hex(1))]}));
    b.call(false, "tbl_cnt", cnt, Some("tbl_shifts"));
    b.call(false, "tbl_shifts", shifts, Some("t1"));
    b.table(false, "t1", &[("exact", "ethernet", "etype")], &[fwd, regs, hdrs], (regs, vec!["0x3"]), false, Some("t2"), 64);
    b.table(false, "t2", &[("ternary", "ipv4", "ttl")], &[fwd, regs, hdrs], (fwd, vec!["0x1"]), false, None, 64);
    b.call(true, "tbl_out", out, None);
    let st = Arc::new(State::new(Arc::new(b.program())));
    let stats = Engine::with_seed(st, 1).native_code().expect("native code").expect("compiled");
    // Everything above inline but the 128-bit register's read and write,
    // in each of the two tables' `regs`.
    assert_eq!(stats.helper_prims, 4, "{stats:?}");
    for seed in [11u64, 12, 13] {
        fuzz(b.program(), seed, 3000, Some("rx"), None);
    }
}
