//! Tests on the real p4cc data plane: p4src/v1model/cc_switch.p4 compiled by
//! p4c-bm2-ss into p4src/build/cc_switch.json (make p4).

mod common;
use common::{csum, eth, ipv4};
use pipeline::*;
use std::sync::Arc;

const SWITCH_MAC: u64 = 0x02_00_00_00_00_fe;
const HOST_MAC: u64 = 0x02_00_00_00_00_01;
const NEXT_MAC: u64 = 0x02_00_00_00_00_02;
const SHIM_PORT: u16 = 7360;

struct Sw {
    st: Arc<State>,
    e: Engine,
    p: Arc<Program>,
}

fn sw() -> Sw {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../p4src/build/cc_switch.json"))
        .expect("p4src/build/cc_switch.json");
    let p = Arc::new(Program::from_json(&text).unwrap_or_else(|e| panic!("cc_switch.json: {e}")));
    let st = Arc::new(State::new(p.clone()));
    let e = Engine::with_seed(st.clone(), 7);
    Sw { st, e, p }
}

impl Sw {
    fn t(&self, n: &str) -> TableId {
        self.p.table_by_name(n).unwrap_or_else(|| panic!("table {n}"))
    }
    fn a(&self, n: &str) -> ActionId {
        self.p.action_by_name(n).unwrap_or_else(|| panic!("action {n}"))
    }
    fn c(&self, n: &str) -> CounterId {
        self.p.counter_by_name(n).unwrap_or_else(|| panic!("counter {n}"))
    }
    fn route(&self, prefix: [u8; 4], len: u32, port: u16, mac: u64) {
        let t = self.t("ipv4_lpm");
        self.st
            .table_insert(
                t,
                TableEntry {
                    key: vec![MatchKey::Lpm { value: prefix.to_vec(), prefix_len: len }],
                    priority: 0,
                    action: ActionCall {
                        action: self.a("forward"),
                        args: vec![port.to_be_bytes().to_vec(), mac.to_be_bytes()[2..].to_vec()],
                    },
                },
            )
            .unwrap();
    }
    fn set_k(&self, port: u16, k: u32) {
        let t = self.t("ecn_threshold");
        self.st
            .table_insert(
                t,
                TableEntry {
                    key: vec![MatchKey::Exact(port.to_be_bytes().to_vec())],
                    priority: 0,
                    action: ActionCall { action: self.a("set_threshold"), args: vec![k.to_be_bytes().to_vec()] },
                },
            )
            .unwrap();
    }
    fn set_loss(&self, port: u16, threshold: u32) {
        let t = self.t("port_loss");
        self.st
            .table_insert(
                t,
                TableEntry {
                    key: vec![MatchKey::Exact(port.to_be_bytes().to_vec())],
                    priority: 0,
                    action: ActionCall { action: self.a("set_loss"), args: vec![threshold.to_be_bytes().to_vec()] },
                },
            )
            .unwrap();
    }
    fn counter(&self, n: &str, i: u64) -> CounterValue {
        self.st.counter_read(self.c(n), i).unwrap()
    }
    /// ingress + egress with the given queue depth; (port, frame) sent.
    fn send(&mut self, frame: &[u8], port: u32, q: QueueMeta) -> Vec<(u32, Vec<u8>)> {
        let mut queued = Vec::new();
        self.e.ingress(frame, port, 5_000, &mut queued);
        let mut out = Vec::new();
        while !queued.is_empty() {
            let p = queued.remove(0);
            let port = p.egress_port();
            let mut re = Vec::new();
            if let Some(f) = self.e.egress(p, q, 5_020, &mut re) {
                out.push((port, f));
            }
            queued.extend(re);
        }
        out
    }
}

fn q(depth: u32) -> QueueMeta {
    QueueMeta { enq_qdepth: depth, deq_qdepth: depth.saturating_sub(1), deq_timedelta_us: 20, enq_timestamp_us: 5_000 }
}

fn l2(payload_ip: Vec<u8>) -> Vec<u8> {
    let mut f = eth(SWITCH_MAC, HOST_MAC, 0x0800);
    f.extend(payload_ip);
    f
}

fn udp_frame(dst_ip: u32, ecn: u8, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut udp = 4242u16.to_be_bytes().to_vec();
    udp.extend(dport.to_be_bytes());
    udp.extend((8 + payload.len() as u16).to_be_bytes());
    udp.extend([0xab, 0xcd]);
    udp.extend_from_slice(payload);
    let mut ip = ipv4(0x0a00_0101, dst_ip, 64, 17, ecn, udp.len() as u16);
    ip.extend(udp);
    l2(ip)
}

fn tcp_frame(dst_ip: u32, ecn: u8, payload: &[u8]) -> Vec<u8> {
    let mut tcp = vec![0x30, 0x39, 0x00, 0x50];
    tcp.extend([0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0x12, 0x34, 0, 0]);
    tcp.extend_from_slice(payload);
    let mut ip = ipv4(0x0a00_0101, dst_ip, 64, 6, ecn, tcp.len() as u16);
    ip.extend(tcp);
    l2(ip)
}

fn shim(hops: &[[u8; 20]], max: u32) -> Vec<u8> {
    let mut s = vec![1, hops.len() as u8, 0, 0];
    s.extend(max.to_be_bytes());
    for h in hops {
        s.extend_from_slice(h);
    }
    s
}

fn be(b: &[u8]) -> u64 {
    b.iter().fold(0, |a, &x| (a << 8) | x as u64)
}

#[test]
fn loads_with_expected_objects() {
    let s = sw();
    for t in ["ipv4_lpm", "ecn_threshold", "port_loss", "switch_config", "postcard_config"] {
        s.t(t);
    }
    let lpm = &s.p.tables()[s.t("ipv4_lpm").0];
    assert_eq!(lpm.keys, vec![KeyInfo { name: "dst_addr".into(), match_kind: MatchKind::Lpm, bitwidth: 32 }]);
    assert_eq!(lpm.max_size, 1024);
    let fwd = &s.p.actions()[s.a("forward").0];
    assert_eq!(fwd.params.iter().map(|p| p.bitwidth).collect::<Vec<_>>(), vec![9, 48]);
    assert!(s.p.counters().iter().all(|c| !c.is_direct && c.size == 512));
    assert_eq!(s.p.registers()[0].bitwidth, 32);
}

#[test]
fn ipv4_lpm_forward_rewrites_macs_ttl_and_checksum() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    s.route([10, 0, 0, 0], 8, 3, NEXT_MAC + 1);
    let f = udp_frame(0x0a00_0205, 0, 5000, b"data");
    let out = s.send(&f, 1, q(0));
    assert_eq!(out.len(), 1);
    let (port, o) = &out[0];
    assert_eq!(*port, 2);
    assert_eq!(be(&o[0..6]), NEXT_MAC);
    assert_eq!(be(&o[6..12]), SWITCH_MAC);
    assert_eq!(o[22], 63);
    assert_eq!(csum(&o[14..34]), 0);
    assert_eq!(o[34..], f[34..], "L4 untouched");
    assert_eq!(o.len(), f.len());
    assert_eq!(s.send(&udp_frame(0x0a07_0205, 0, 5000, b"d"), 1, q(0))[0].0, 3);
    assert_eq!(s.counter("rx.port_packets", 1), CounterValue { packets: 2, bytes: f.len() as u64 * 2 - 3 });
    assert_eq!(s.counter("tx.port_packets", 2).packets, 1);
}

#[test]
fn miss_ttl_and_non_ip_drop_and_count() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    assert!(s.send(&udp_frame(0x0b00_0001, 0, 1, b""), 4, q(0)).is_empty());
    let mut ttl1 = udp_frame(0x0a00_0201, 0, 1, b"");
    ttl1[22] = 1;
    assert!(s.send(&ttl1, 4, q(0)).is_empty());
    assert!(s.send(&eth(SWITCH_MAC, HOST_MAC, 0x86dd), 4, q(0)).is_empty());
    assert_eq!(s.counter("ingress_drops", 4).packets, 3);
    assert_eq!(s.counter("rx.port_packets", 4).packets, 3);
    assert_eq!(s.counter("tx.port_packets", 2).packets, 0);
}

#[test]
fn ecn_marks_exactly_at_threshold_for_ect_only() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    s.route([10, 0, 3, 0], 24, 3, NEXT_MAC);
    s.set_k(2, 10);
    let ecn_out = |s: &mut Sw, dst: u32, ecn: u8, depth: u32| {
        let o = s.send(&tcp_frame(dst, ecn, b"x"), 1, q(depth));
        assert_eq!(csum(&o[0].1[14..34]), 0);
        o[0].1[15] & 3
    };
    for ecn in [1u8, 2] {
        assert_eq!(ecn_out(&mut s, 0x0a00_0201, ecn, 9), ecn, "below K");
        assert_eq!(ecn_out(&mut s, 0x0a00_0201, ecn, 10), 3, "at K");
        assert_eq!(ecn_out(&mut s, 0x0a00_0201, ecn, 500), 3, "above K");
    }
    assert_eq!(ecn_out(&mut s, 0x0a00_0201, 0, 100), 0, "not-ECT never marked");
    assert_eq!(ecn_out(&mut s, 0x0a00_0201, 3, 0), 3, "CE stays CE");
    assert_eq!(ecn_out(&mut s, 0x0a00_0301, 2, 1000), 2, "no K: never");
    assert_eq!(s.counter("ce_marks", 2).packets, 4);
    // enq_qdepth is 19 bits: a huge depth still compares correctly
    assert_eq!(ecn_out(&mut s, 0x0a00_0201, 2, (1 << 19) - 1), 3);
}

/// ecn_threshold's key is a 9-bit port, so its entries are also kept in an
/// array indexed by the port: an entry deleted, re-added, cleared, or on the
/// last port reads as the table says, never as a stale slot.
#[test]
fn a_per_port_setting_follows_inserts_deletes_and_clears() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    s.route([10, 0, 5, 0], 24, 510, NEXT_MAC);
    let marked = |s: &mut Sw, dst: u32, depth: u32| s.send(&tcp_frame(dst, 2, b"x"), 1, q(depth))[0].1[15] & 3 == 3;
    let t = s.t("ecn_threshold");
    let port2 = vec![MatchKey::Exact(2u16.to_be_bytes().to_vec())];
    s.set_k(2, 10);
    assert!(marked(&mut s, 0x0a00_0201, 10));
    s.st.table_delete(t, &port2, 0).unwrap();
    assert!(!marked(&mut s, 0x0a00_0201, 1000), "deleted: no K");
    s.set_k(2, 50);
    assert!(!marked(&mut s, 0x0a00_0201, 10) && marked(&mut s, 0x0a00_0201, 50), "re-added with K = 50");
    s.set_k(510, 5);
    assert!(marked(&mut s, 0x0a00_0501, 5) && !marked(&mut s, 0x0a00_0501, 4), "the last port before v1model's drop port (511)");
    s.st.table_clear(t);
    assert!(!marked(&mut s, 0x0a00_0201, 1000) && !marked(&mut s, 0x0a00_0501, 1000), "cleared");
    s.set_k(2, 10);
    assert!(marked(&mut s, 0x0a00_0201, 10));
}

#[test]
fn telemetry_shim_push_max_and_overflow() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    let st = s.st.clone();
    let cfg = s.t("switch_config");
    st.table_set_default(cfg, ActionCall { action: s.a("set_switch_id"), args: vec![vec![0x01, 0x23]] }).unwrap();
    let mut f = udp_frame(0x0a00_0201, 2, SHIM_PORT, &[shim(&[], 0), b"pay".to_vec()].concat());
    let depths = [5u32, 9, 3, 7, 11];
    for (i, &d) in depths.iter().enumerate() {
        let o = s.send(&f, 1, q(d));
        assert_eq!(o.len(), 1);
        let o = o[0].1.clone();
        let (ip, udp, sh) = (&o[14..34], &o[34..42], &o[42..50]);
        assert_eq!(csum(ip), 0);
        assert_eq!(&udp[6..8], &[0, 0], "UDP checksum zeroed");
        let hops = i.min(3) + 1;
        let max = *depths[..=i].iter().max().unwrap();
        assert_eq!(be(&sh[4..8]) as u32, max, "path max");
        if i < 4 {
            assert_eq!(sh[1] as usize, hops);
            assert_eq!(sh[2], 0);
            assert_eq!(o.len(), f.len() + 20);
            assert_eq!(be(&ip[2..4]), be(&f[16..18]) + 20);
            assert_eq!(be(&udp[4..6]), be(&f[38..40]) + 20);
            let h = &o[50..70];
            assert_eq!(be(&h[0..2]), 0x123);
            assert_eq!(be(&h[2..4]), 2);
            assert_eq!(be(&h[4..8]) as u32, d);
            assert_eq!(be(&h[8..12]), 20);
            assert_eq!(be(&h[12..20]), 5_020);
            assert_eq!(o[70..], f[50..], "older hops follow, then the payload");
        } else {
            assert_eq!(sh[1], 4, "stack full");
            assert_eq!(sh[2] & 1, 1, "overflow flag");
            assert_eq!(o.len(), f.len());
        }
        // feed it back as the next hop (the sender's MAC rewrite aside)
        f = o;
        f[0..6].copy_from_slice(&SWITCH_MAC.to_be_bytes()[2..]);
        f[22] = 64;
        let c = csum(&{
            let mut h = f[14..34].to_vec();
            h[10] = 0;
            h[11] = 0;
            h
        });
        f[24..26].copy_from_slice(&c.to_be_bytes());
    }
}

#[test]
fn shim_of_other_version_or_too_long_is_left_alone() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    let mut sh = shim(&[], 0);
    sh[0] = 3;
    let f = udp_frame(0x0a00_0201, 0, SHIM_PORT, &sh);
    let o = s.send(&f, 1, q(4));
    assert_eq!(o[0].1.len(), f.len());
    assert_eq!(o[0].1[34..], f[34..]);
    let mut sh = shim(&[], 0);
    sh[1] = 5;
    let f = udp_frame(0x0a00_0201, 0, SHIM_PORT, &sh);
    let o = s.send(&f, 1, q(4));
    assert_eq!(o[0].1[34..], f[34..]);
}

/// A version-2 shim gets a 32-byte record after the fixed part: the
/// version-1 fields, then the queue in bytes, the port's transmitted bytes
/// and its line rate as loaded (docs/wire-format.md, shim version 2).
#[test]
fn shim_version_2_gets_the_int_record() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    let st = s.st.clone();
    st.table_insert(
        s.t("port_rate"),
        TableEntry {
            key: vec![MatchKey::Exact(2u16.to_be_bytes().to_vec())],
            priority: 0,
            action: ActionCall { action: s.a("set_port_rate"), args: vec![25_000_000u32.to_be_bytes().to_vec()] },
        },
    )
    .unwrap();
    // An older record (of the previous switch) follows as payload, untouched.
    let mut sh = vec![2u8, 1, 0, 0, 0, 0, 0, 9];
    let older: Vec<u8> = (0..32u8).collect();
    sh.extend(&older);
    sh.extend(b"payload");
    let f = udp_frame(0x0a00_0201, 0, SHIM_PORT, &sh);
    let sent = |s: &mut Sw, f: &[u8], q| s.send(f, 1, q).remove(0).1;
    // Queue of 4 packets left behind this one as it leaves.
    let o = sent(&mut s, &f, q(5));
    assert_eq!(o.len(), f.len() + 32);
    let shim_at = 42;
    assert_eq!(&o[shim_at..shim_at + 4], &[2, 2, 0, 0], "version 2, two records, units packets/µs");
    assert_eq!(u32::from_be_bytes(o[shim_at + 4..shim_at + 8].try_into().unwrap()), 9, "max kept");
    let r = &o[shim_at + 8..shim_at + 40];
    let be32 = |b: &[u8]| u32::from_be_bytes(b.try_into().unwrap());
    assert_eq!(u16::from_be_bytes([r[2], r[3]]), 2, "egress port");
    assert_eq!(be32(&r[4..8]), 5, "enq_qdepth");
    assert_eq!(be32(&r[8..12]), 20, "deq_timedelta");
    assert_eq!(u64::from_be_bytes(r[12..20].try_into().unwrap()), 5_020, "egress_ts");
    // Nothing was counted into port 2's queue before: queue in bytes is
    // what joined minus what left, this packet included, so 0 here.
    assert_eq!(be32(&r[20..24]), 0, "qlen_bytes");
    let len = f.len() as u32;
    assert_eq!(be32(&r[24..28]), len + 32, "tx_bytes: the frame with its new record");
    assert_eq!(be32(&r[28..32]), 25_000_000, "rate_kbps as loaded");
    assert_eq!(&o[shim_at + 40..shim_at + 72], &older[..], "the older record, unmoved");
    assert_eq!(&o[shim_at + 72..], b"payload");
    // The port's bytes accumulate, whatever the packet.
    let plain = udp_frame(0x0a00_0201, 0, 9999, b"x");
    sent(&mut s, &plain, q(1));
    let o = sent(&mut s, &f, q(3));
    assert_eq!(be32(&o[shim_at + 8 + 24..shim_at + 8 + 28]), 2 * (len + 32) + plain.len() as u32);
    // Two packets joined port 2's queue (ingress counts them) while only
    // one left: one packet's bytes are queued behind it.
    let mut queued = Vec::new();
    s.e.ingress(&plain, 1, 6_000, &mut queued);
    let waiting = queued.remove(0);
    let o = sent(&mut s, &f, q(2));
    assert_eq!(be32(&o[shim_at + 8 + 20..shim_at + 8 + 24]), plain.len() as u32, "qlen_bytes");
    drop(waiting);
    // Four records already: overflow flag, no fifth.
    let mut full = vec![2u8, 4, 0, 0, 0, 0, 0, 0];
    full.extend(vec![0u8; 4 * 32]);
    let f = udp_frame(0x0a00_0201, 0, SHIM_PORT, &full);
    let o = sent(&mut s, &f, q(1));
    assert_eq!(o.len(), f.len());
    assert_eq!(o[shim_at + 2] & 1, 1, "overflow");
}

/// RED (DCQCN's switch): no mark below Kmin, always above Kmax, and in
/// between at the entry's probability, within a binomial bound.
#[test]
fn red_marks_at_the_profile_probability() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    let st = s.st.clone();
    let red = |lo: u32, hi: u32, p16: u32| TableEntry {
        key: vec![
            MatchKey::Exact(2u16.to_be_bytes().to_vec()),
            MatchKey::Range { low: lo.to_be_bytes()[1..].to_vec(), high: hi.to_be_bytes()[1..].to_vec() },
        ],
        priority: 1,
        action: ActionCall { action: s.a("set_mark_probability"), args: vec![p16.to_be_bytes().to_vec()] },
    };
    st.table_insert(s.t("ecn_red"), red(10, 19, 16_384)).unwrap();
    st.table_insert(s.t("ecn_red"), red(20, 0x7ffff, 65_536)).unwrap();
    let f = udp_frame(0x0a00_0201, 2, 9999, b"x");
    let marked = |s: &mut Sw, depth: u32, n: usize| {
        (0..n).filter(|_| s.send(&f, 1, q(depth))[0].1[15] & 3 == 3).count()
    };
    assert_eq!(marked(&mut s, 9, 200), 0, "below Kmin");
    assert_eq!(marked(&mut s, 25, 200), 200, "above Kmax");
    let n = 4000;
    let k = marked(&mut s, 15, n) as f64;
    // p = 0.25: mean 1000, sd 27.4; 5 sd either way.
    assert!((k - 1000.0).abs() < 5.0 * (n as f64 * 0.25 * 0.75).sqrt(), "{k} of {n} marked");
}

#[test]
fn postcard_clone_is_built_from_preserved_fields_and_truncated() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    let st = s.st.clone();
    st.table_set_default(s.t("switch_config"), ActionCall { action: s.a("set_switch_id"), args: vec![vec![0, 7]] }).unwrap();
    st.table_set_default(
        s.t("postcard_config"),
        ActionCall {
            action: s.a("enable_postcards"),
            args: vec![
                2u32.to_be_bytes().to_vec(),
                vec![0x02, 0, 0, 0, 0, 0xcc],
                vec![10, 0, 0, 254],
                vec![10, 0, 9, 9],
                vec![0x1f, 0x90],
            ],
        },
    )
    .unwrap();
    st.clone_session_set(100, vec![Replica { port: 9, rid: 0 }], None);
    let f = tcp_frame(0x0a00_0201, 2, &[0x55; 200]);
    let o1 = s.send(&f, 1, q(6));
    assert_eq!(o1.len(), 1, "1 in 2: first packet not sampled");
    let o2 = s.send(&f, 1, q(6));
    assert_eq!(o2.len(), 2);
    assert_eq!(o2[0].0, 2);
    assert_eq!(o2[0].1.len(), f.len());
    let (port, pc) = &o2[1];
    assert_eq!(*port, 9);
    assert_eq!(pc.len(), 96);
    assert_eq!(be(&pc[0..6]), 0x0200_0000_00cc);
    assert_eq!(be(&pc[12..14]), 0x0800);
    let ip = &pc[14..34];
    assert_eq!(csum(ip), 0);
    assert_eq!(ip[0], 0x45);
    assert_eq!(be(&ip[2..4]), 82);
    assert_eq!(ip[8], 64);
    assert_eq!(ip[9], 17);
    assert_eq!(ip[12..16], [10, 0, 0, 254]);
    assert_eq!(ip[16..20], [10, 0, 9, 9]);
    let udp = &pc[34..42];
    assert_eq!(be(&udp[0..2]), 7361);
    assert_eq!(be(&udp[2..4]), 8080);
    assert_eq!(be(&udp[4..6]), 62);
    let r = &pc[42..96];
    assert_eq!(r[0], 1, "version");
    assert_eq!(be(&r[2..4]), 7, "switch id");
    assert_eq!(be(&r[4..6]), 1, "ingress port");
    assert_eq!(be(&r[6..8]), 2, "egress port");
    assert_eq!(be(&r[8..12]), 6, "enq_qdepth");
    assert_eq!(be(&r[12..16]), 5, "deq_qdepth");
    assert_eq!(be(&r[16..20]), 20, "deq_timedelta");
    assert_eq!(be(&r[20..28]), 5_000, "ingress ts");
    assert_eq!(be(&r[28..36]), 5_020, "egress ts");
    assert_eq!(r[36..40], [10, 0, 1, 1]);
    assert_eq!(r[40..44], [10, 0, 2, 1]);
    assert_eq!(r[44], 6);
    assert_eq!(r[45], 2, "ECN of the reported packet (no K here: unmarked)");
    // The L4 ports reach the clone through @field_list(1).
    assert_eq!(be(&r[46..48]), 12345, "src port");
    assert_eq!(be(&r[48..50]), 80, "dst port");
    assert_eq!(be(&r[50..54]) as usize, f.len(), "pkt_len");
    // a session with its own truncation
    st.clone_session_set(100, vec![Replica { port: 9, rid: 0 }], Some(60));
    s.send(&f, 1, q(6));
    let o = s.send(&f, 1, q(6));
    assert_eq!(o[1].1.len(), 60);
}

#[test]
fn random_loss_zero_and_one() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    s.set_loss(2, 0);
    let f = udp_frame(0x0a00_0201, 0, 9, b"l");
    for _ in 0..200 {
        assert_eq!(s.send(&f, 1, q(0)).len(), 1);
    }
    s.st.table_clear(s.t("port_loss"));
    s.set_loss(2, 65536);
    for _ in 0..200 {
        assert!(s.send(&f, 1, q(0)).is_empty());
    }
    assert_eq!(s.counter("loss_drops", 2).packets, 200);
    assert_eq!(s.counter("tx.port_packets", 2).packets, 200);
    // half
    s.st.table_clear(s.t("port_loss"));
    s.set_loss(2, 32768);
    let kept: usize = (0..4000).map(|_| s.send(&f, 1, q(0)).len()).sum();
    assert!((1800..2200).contains(&kept), "{kept}");
}

/// `cargo test --release -p p4cc-pipeline --test cc_switch -- --ignored --nocapture`
#[test]
#[ignore]
fn throughput() {
    let mut s = sw();
    s.route([10, 0, 2, 0], 24, 2, NEXT_MAC);
    s.set_k(2, 20);
    let f = tcp_frame(0x0a00_0201, 2, &[0u8; 1400]);
    let n = 300_000;
    let t0 = std::time::Instant::now();
    let mut queued = Vec::with_capacity(4);
    let mut re = Vec::new();
    let mut bytes = 0usize;
    for i in 0..n {
        s.e.ingress(&f, 1, i, &mut queued);
        for p in queued.drain(..) {
            if let Some(o) = s.e.egress(p, q((i % 40) as u32), i + 5, &mut re) {
                bytes += o.len();
            }
        }
    }
    let dt = t0.elapsed().as_secs_f64();
    println!("{:.0} packets/s per core ({:.2} Gbit/s of 1454-byte frames), {bytes} bytes", n as f64 / dt, n as f64 * 1454.0 * 8.0 / dt / 1e9);
}

/// The data plane runs as native code with every condition and action
/// inline (jit/lower.rs), the parser's states natively but for the header
/// stack's (jit/lower/parse.rs), and the deparser (jit/lower/deparse.rs);
/// less would be a regression in the code generator, and a slower switch.
#[test]
fn runs_as_native_code() {
    let s = sw();
    let code = s.e.native_code().expect("on by default").expect("a Cranelift backend for this host");
    assert_eq!(code.pipelines, 2, "{code:?}");
    assert_eq!((code.helper_conds, code.helper_actions), (0, 0), "{code:?}");
    assert!(code.native_prims >= 170, "{code:?}");
    // All of the parser but the INT hop records' header stack.
    assert_eq!((code.native_parse_states, code.parse_states), (8, 9), "{code:?}");
    assert!(code.native_deparser, "{code:?}");
}
