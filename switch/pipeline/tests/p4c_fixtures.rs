//! Runs the JSON p4c-bm2-ss emits for tests/fixtures/constructs.p4: the
//! constructs as the real compiler writes them (double-wrapped expression
//! parameters, dummy tables, switch/hit next_tables, const entries, $valid$
//! keys, field lists, checksums with payload, ...).

mod common;
use common::{csum, eth, ipv4};
use pipeline::*;
use std::sync::Arc;

struct T {
    st: Arc<State>,
    e: Engine,
    p: Arc<Program>,
}

fn load() -> T {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/constructs.json"))
        .expect("fixture tests/fixtures/constructs.json");
    let p = Arc::new(Program::from_json(&text).unwrap_or_else(|e| panic!("constructs.json: {e}")));
    let st = Arc::new(State::new(p.clone()));
    let e = Engine::with_seed(st.clone(), 3);
    T { st, e, p }
}

impl T {
    fn t(&self, n: &str) -> TableId {
        self.p.table_by_name(n).unwrap_or_else(|| panic!("table {n}"))
    }
    fn a(&self, n: &str) -> ActionId {
        self.p.action_by_name(n).unwrap_or_else(|| panic!("action {n}"))
    }
    fn send(&mut self, f: &[u8], port: u32) -> Vec<(u32, Vec<u8>)> {
        let mut q = Vec::new();
        self.e.ingress(f, port, 100, &mut q);
        let mut out = Vec::new();
        let mut n = 0;
        while !q.is_empty() {
            n += 1;
            assert!(n < 50);
            let p = q.remove(0);
            if p.is_recirculate() {
                self.e.ingress_recirculated(p, 200, &mut q);
                continue;
            }
            let port = p.egress_port();
            let mut re = Vec::new();
            if let Some(f) = self.e.egress(p, QueueMeta::default(), 150, &mut re) {
                out.push((port, f));
            }
            q.extend(re);
        }
        out
    }
    fn default_route(&self, port: u16) {
        self.st
            .table_insert(
                self.t("fwd"),
                TableEntry {
                    key: vec![MatchKey::Lpm { value: vec![0; 4], prefix_len: 0 }],
                    priority: 0,
                    action: ActionCall { action: self.a("set_port"), args: vec![port.to_be_bytes().to_vec()] },
                },
            )
            .unwrap();
    }
}

fn tcp_checksum(ip: &[u8], tcp: &[u8]) -> u16 {
    let mut ph = ip[12..20].to_vec();
    ph.extend([0, 6]);
    ph.extend((tcp.len() as u16).to_be_bytes());
    ph.extend_from_slice(tcp);
    csum(&ph)
}

fn tcp_frame(dst: u32, ttl: u8, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut tcp = vec![0x30, 0x39];
    tcp.extend(dport.to_be_bytes());
    tcp.extend([0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
    tcp.extend_from_slice(payload);
    let mut ip = ipv4(0x0a00_0001, dst, ttl, 6, 0, tcp.len() as u16);
    let c = tcp_checksum(&ip, &tcp);
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    let mut f = eth(1, 2, 0x0800);
    f.append(&mut ip);
    f.extend(tcp);
    f
}

#[test]
fn loads_tables_keys_and_counters() {
    let t = load();
    let acl = &t.p.tables()[t.t("acl").0];
    let kinds: Vec<MatchKind> = acl.keys.iter().map(|k| k.match_kind).collect();
    assert_eq!(kinds[..2], [MatchKind::Ternary, MatchKind::Range]);
    assert!(matches!(kinds[2], MatchKind::Ternary | MatchKind::Optional));
    assert_eq!(kinds[3], MatchKind::Exact);
    assert_eq!(acl.keys[3].bitwidth, 1);
    assert!(acl.needs_priority);
    assert!(acl.direct_counter.is_some());
    assert!(t.p.tables()[t.t("fixed").0].has_const_entries);
}

#[test]
fn tcp_forward_report_and_checksums() {
    let mut t = load();
    t.st
        .table_insert(
            t.t("fwd"),
            TableEntry {
                key: vec![MatchKey::Lpm { value: vec![10, 0, 0, 0], prefix_len: 8 }],
                priority: 0,
                action: ActionCall { action: t.a("set_port"), args: vec![vec![3]] },
            },
        )
        .unwrap();
    let acl_key = vec![
        MatchKey::Ternary { value: vec![0; 4], mask: vec![0; 4] },
        MatchKey::Range { low: vec![0, 80], high: vec![0, 80] },
        MatchKey::Optional(None),
        MatchKey::Exact(vec![1]),
    ];
    t.st
        .table_insert(
            t.t("acl"),
            TableEntry { key: acl_key.clone(), priority: 10, action: ActionCall { action: t.a("acl_fwd"), args: vec![vec![4]] } },
        )
        .unwrap();
    let f = tcp_frame(0x0a01_0203, 30, 80, b"hello world");
    let out = t.send(&f, 1);
    assert_eq!(out.len(), 1);
    let (port, o) = &out[0];
    assert_eq!(*port, 4, "acl after fwd (switch on action_run)");
    assert_eq!(t.st.direct_counter_read(t.t("acl"), &acl_key, 10).unwrap().packets, 1);
    let ip = &o[14..34];
    assert_eq!(ip[8], 29);
    assert_eq!(csum(ip), 0);
    let tcp = &o[34..54];
    let report = &o[54..72];
    let payload = &o[72..];
    assert_eq!(payload, b"hello world");
    let mut seg = tcp.to_vec();
    seg.extend_from_slice(payload);
    assert_eq!(tcp_checksum(ip, &seg), 0, "TCP checksum over the payload");
    assert_eq!(report[0], 255, "|+|");
    assert_eq!(report[1], 0, "|-|");
    assert_eq!(report[2] as i8, -30);
    assert_eq!(report[3], 0x02, "slice");
    assert_eq!(report[4..6], [30, 6], "concat");
    assert_eq!(report[6], 1);
    assert_eq!(report[7], 0, "last_v");
    assert_eq!(report[8], 0, "no tags");
    let crc = {
        // CRC-16/ARC of the destination address
        let mut c: u16 = 0;
        for &b in &[10u8, 1, 2, 3] {
            c ^= b as u16;
            for _ in 0..8 {
                c = if c & 1 != 0 { (c >> 1) ^ 0xa001 } else { c >> 1 };
            }
        }
        c
    };
    assert_eq!(u16::from_be_bytes([report[9], report[10]]), crc);
    assert!((3..=7).contains(&report[11]));
    assert_eq!(report[12], 0x45, "lookahead");
    assert_eq!(report[13], 0x66, "if inside an action");
    assert_eq!(u32::from_be_bytes(report[14..18].try_into().unwrap()), (30 << 20) >> 4);
    let seen = t.p.register_by_name("seen").unwrap();
    assert_eq!(t.st.register_read(seen, 1).unwrap(), vec![0, 0, 0, 1]);
}

#[test]
fn stacks_from_the_parser_push_and_pop() {
    let mut t = load();
    t.default_route(2);
    let mk = |ttl: u8| {
        let mut f = eth(1, 2, 0x8100);
        f.extend([0x11, 0, 0x22, 1]);
        f.extend(ipv4(1, 2, ttl, 17, 0, 0));
        f
    };
    let o = &t.send(&mk(1), 0)[0].1;
    assert_eq!(o[14..20], [0xee, 0, 0x11, 0, 0x22, 1], "push_front + setValid");
    let report = &o[40..];
    assert_eq!(report[7], 0x22, "tags.last.v");
    assert_eq!(report[8], 2, "tags.lastIndex + 1");
    let o = &t.send(&mk(2), 0)[0].1;
    assert_eq!(o[14..16], [0x22, 1], "pop_front");
    assert_eq!(o[16] >> 4, 4);
}

#[test]
fn const_entries_resubmit_clone_recirculate_value_set() {
    let mut t = load();
    t.default_route(3);
    assert_eq!(t.send(&eth(1, 2, 0x9000), 0), vec![(5, eth(1, 2, 0x9000))]);
    assert_eq!(t.send(&eth(1, 2, 0x9001), 0), vec![(9, eth(1, 2, 0x9001))], "resubmit keeps the field list");
    // E2E clone to session 3, truncated to 20 bytes
    let mut f = eth(1, 2, 0x9002);
    f.extend([7u8; 30]);
    assert_eq!(t.send(&f, 0).len(), 1, "no session yet");
    t.st.clone_session_set(3, vec![Replica { port: 7, rid: 0 }], None);
    let out = t.send(&f, 0);
    assert_eq!(out.len(), 2);
    assert_eq!(out[0], (3, f.clone()));
    assert_eq!(out[1].0, 7);
    assert_eq!(out[1].1, f[..20]);
    // recirculation: comes back with the new ether type and goes out once
    let out = t.send(&eth(1, 2, 0x9003), 0);
    assert_eq!(out, vec![(3, eth(1, 2, 0x9004))]);
    // value set
    let mut g = eth(1, 2, 0x88b5);
    g.extend(ipv4(1, 2, 64, 17, 0, 0));
    let o = t.send(&g, 0);
    assert_eq!(o[0].1.len(), g.len(), "not parsed as IPv4");
    let vs = t.p.value_sets()[0].id;
    t.st.value_set_set(vs, vec![vec![0x88, 0xb5]]).unwrap();
    let o = t.send(&g, 0);
    assert_eq!(o[0].1[22], 63, "parsed as IPv4 through the value set");
}
