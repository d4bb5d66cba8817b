//! The Tofino program's postcards decode in the same collector as the
//! v1model program's.
//!
//! bf-p4c's programs cannot run here (tofino-model is not available), so
//! the frame is built the way p4src/tna/cc_switch.p4 builds it: a postcard
//! copy as the egress parser receives it (the postcard mirror header, laid
//! out from the program's own `header postcard_mirror_h` declaration, then
//! the reported packet cut by the mirror session to Ethernet + IPv4 + the L4
//! ports), rewritten as the copy's egress does (BuildPostcard in
//! p4src/include/cc_controls.p4 with units POSTCARD_UNITS_TOFINO), and
//! handed to the collector.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use telemetry::collector::{handle_datagram, CollectorStats};
use telemetry::postcard::{Postcard, TimeUnit, POSTCARD_LEN, UNITS_TOFINO, UNITS_V1MODEL};
use telemetry::DepthUnit;

const TNA: &str = include_str!("../../../p4src/tna/cc_switch.p4");
const CONSTANTS: &str = include_str!("../../../p4src/include/constants.p4");

/// `const bit<N> NAME = V;` of a P4 source.
fn p4_const(src: &str, name: &str) -> u64 {
    let line = src
        .lines()
        .find(|l| l.trim_start().starts_with("const ") && l.contains(&format!(" {name} ")))
        .unwrap_or_else(|| panic!("{name} not declared"));
    let v = line.split('=').nth(1).unwrap().trim().trim_end_matches(';').trim();
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap(),
    }
}

/// (field, width in bits) of `header postcard_mirror_h`, padding included,
/// in wire order. PortId_t is 9 bits on Tofino and Tofino 2.
fn mirror_layout() -> Vec<(String, u32)> {
    let start = TNA.find("header postcard_mirror_h {").expect("postcard_mirror_h declared");
    let body = &TNA[start..];
    let body = &body[body.find('{').unwrap() + 1..body.find("\n}").unwrap()];
    let mut out = Vec::new();
    for line in body.lines() {
        let code = line.split("//").next().unwrap().trim();
        if code.is_empty() {
            continue;
        }
        let code = code.trim_start_matches("@padding").trim().trim_end_matches(';');
        let (ty, name) = code.rsplit_once(' ').unwrap();
        let bits = match ty.trim() {
            "PortId_t" => 9,
            t => t.trim_start_matches("bit<").trim_end_matches('>').parse().unwrap(),
        };
        out.push((name.trim().to_string(), bits));
    }
    out
}

fn pack(layout: &[(String, u32)], vals: &HashMap<&str, u64>) -> Vec<u8> {
    let total: u32 = layout.iter().map(|f| f.1).sum();
    let mut acc: u128 = 0;
    let mut bits_out = 0u32;
    let mut out = Vec::new();
    for (name, w) in layout {
        let v = *vals.get(name.as_str()).unwrap_or(&0);
        assert!(v >> w == 0, "{name} = {v} does not fit bit<{w}>");
        acc = (acc << w) | v as u128;
        bits_out += w;
        while bits_out >= 8 {
            out.push((acc >> (bits_out - 8)) as u8);
            bits_out -= 8;
            acc &= (1u128 << bits_out) - 1;
        }
    }
    assert_eq!(bits_out, 0, "postcard_mirror_h is {total} bits, not whole bytes");
    out
}

fn unpack(layout: &[(String, u32)], b: &[u8]) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    let mut bit = 0usize;
    for (name, w) in layout {
        let mut v = 0u64;
        for _ in 0..*w {
            v = (v << 1) | ((b[bit / 8] >> (7 - bit % 8)) & 1) as u64;
            bit += 1;
        }
        out.insert(name.clone(), v);
    }
    out
}

/// The reported packet as the mirror session leaves it: Ethernet, IPv4
/// (ECN CE, after marking), the TCP ports.
fn reported_packet() -> Vec<u8> {
    let mut p = vec![0u8; 14];
    p[0..6].copy_from_slice(&[0, 0, 0, 0, 2, 2]); // next hop
    p[6..12].copy_from_slice(&[0, 0xcc, 0, 0, 0, 1]); // the switch
    p[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let mut ip = [0u8; 20];
    ip[0] = 0x45;
    ip[1] = 0x03; // DSCP 0, CE
    ip[2..4].copy_from_slice(&1486u16.to_be_bytes());
    ip[8] = 63;
    ip[9] = 6;
    ip[12..16].copy_from_slice(&[10, 0, 1, 1]);
    ip[16..20].copy_from_slice(&[10, 0, 2, 2]);
    p.extend_from_slice(&ip);
    p.extend_from_slice(&40000u16.to_be_bytes());
    p.extend_from_slice(&5201u16.to_be_bytes());
    p
}

/// The copy's egress: parse the mirror header, Ethernet, IPv4 and the
/// ports (CcEgressParser.parse_postcard_copy), build the 54-byte report
/// (BuildPostcard with POSTCARD_UNITS_TOFINO). Returns the frame.
fn tna_postcard_frame(copy: &[u8], switch_id: u16) -> Vec<u8> {
    let layout = mirror_layout();
    let mbytes = p4_const(TNA, "POSTCARD_MIRROR_BYTES") as usize;
    let m = unpack(&layout, &copy[..mbytes]);
    assert_eq!(m["kind"], p4_const(TNA, "PKT_KIND_POSTCARD"));
    let pkt = &copy[mbytes..];
    let ip = &pkt[14..34];
    let mut card = vec![0u8; POSTCARD_LEN];
    card[0] = p4_const(CONSTANTS, "POSTCARD_VERSION") as u8;
    card[1] = p4_const(CONSTANTS, "POSTCARD_UNITS_TOFINO") as u8;
    card[2..4].copy_from_slice(&switch_id.to_be_bytes());
    card[4..6].copy_from_slice(&(m["ingress_port"] as u16).to_be_bytes());
    card[6..8].copy_from_slice(&(m["egress_port"] as u16).to_be_bytes());
    card[8..12].copy_from_slice(&(m["enq_qdepth"] as u32).to_be_bytes());
    card[12..16].copy_from_slice(&(m["deq_qdepth"] as u32).to_be_bytes());
    card[16..20].copy_from_slice(&(m["deq_timedelta"] as u32).to_be_bytes());
    card[20..28].copy_from_slice(&m["ingress_ts"].to_be_bytes());
    card[28..36].copy_from_slice(&m["egress_ts"].to_be_bytes());
    card[36..44].copy_from_slice(&ip[12..20]);
    card[44] = ip[9];
    card[45] = ip[1] & 3;
    card[46..50].copy_from_slice(&pkt[34..38]);
    card[50..54].copy_from_slice(&(m["pkt_len"] as u32).to_be_bytes());
    let mut frame = vec![0u8; 14 + 20 + 8];
    frame.extend_from_slice(&card);
    // Nothing of the copy is left unparsed: the frame is exactly 96 bytes.
    assert_eq!(copy.len(), mbytes + 38, "the mirror session cuts the copy after the L4 ports");
    frame
}

#[test]
fn tna_mirror_header_fits_what_tofino_reports() {
    let layout = mirror_layout();
    let bits: u32 = layout.iter().map(|f| f.1).sum();
    assert_eq!(bits as u64, 8 * p4_const(TNA, "POSTCARD_MIRROR_BYTES"));
    assert!(bits <= 8 * 32, "Tofino 1 carries at most 32 bytes of mirror metadata (bfas)");
    let w: HashMap<_, _> = layout.iter().cloned().collect();
    assert!(w["enq_qdepth"] >= 19 && w["deq_qdepth"] >= 19, "Tofino queue depths are 19 bits");
    assert!(w["deq_timedelta"] >= 32 && w["ingress_ts"] >= 48 && w["egress_ts"] >= 48);
    assert!(w["ingress_port"] >= 9 && w["egress_port"] >= 9);
    assert_eq!(w["kind"], 8, "the egress parser tells copies apart by the first byte");
}

#[test]
fn tna_postcard_decodes_in_the_collector() {
    let layout = mirror_layout();
    let vals: HashMap<&str, u64> = HashMap::from([
        ("kind", p4_const(TNA, "PKT_KIND_POSTCARD")),
        ("ingress_port", 132),
        ("egress_port", 140),
        ("enq_qdepth", 375), // cells: 30 KB
        ("deq_qdepth", 300),
        ("deq_timedelta", 1_234_567), // ns
        ("ingress_ts", (1 << 47) + 5_000_000_999),
        ("egress_ts", (1 << 47) + 5_001_235_999),
        ("pkt_len", 1500),
    ]);
    let mut copy = pack(&layout, &vals);
    copy.extend_from_slice(&reported_packet());
    let frame = tna_postcard_frame(&copy, 7);
    assert_eq!(frame.len() as u64, p4_const(CONSTANTS, "POSTCARD_FRAME_LEN"));

    let payload = &frame[42..];
    let p = Postcard::parse(payload).expect("the collector's decoder takes a Tofino postcard");
    assert_eq!(p.units, UNITS_TOFINO);
    assert_eq!(p.depth_unit(), DepthUnit::Cells80);
    assert_eq!(p.time_unit(), TimeUnit::Nanos);
    assert_eq!((p.ingress_port, p.egress_port), (132, 140));
    assert_eq!((p.enq_qdepth, p.deq_qdepth), (375, 300));
    assert_eq!(p.qdelay_us(), 1234);
    assert_eq!(p.egress_ts_us(), ((1u64 << 47) + 5_001_235_999) / 1000);
    assert_eq!((p.src_ip, p.dst_ip), (Ipv4Addr::new(10, 0, 1, 1), Ipv4Addr::new(10, 0, 2, 2)));
    assert_eq!((p.protocol, p.ecn, p.src_port, p.dst_port, p.pkt_len), (6, 3, 40000, 5201, 1500));

    let mut out = Vec::new();
    let mut st = CollectorStats::default();
    handle_datagram(payload, 42, &mut out, &mut st).unwrap();
    assert_eq!(st.postcards, 1);
    let row = String::from_utf8(out).unwrap();
    let cols: Vec<&str> = row.trim().split(',').collect();
    let head: Vec<&str> = Postcard::CSV_HEADER.split(',').collect();
    let get = |k: &str| cols[head.iter().position(|h| *h == k).unwrap()];
    assert_eq!(get("enq_qdepth"), "375");
    assert_eq!(get("depth_unit"), "cells80");
    assert_eq!(get("qdelay_us"), "1234");
    assert_eq!(get("ecn"), "3");
}

#[test]
fn v1model_postcards_keep_decoding_the_same() {
    // Byte 1 was `flags` (always 0) before it named the units: a v1model
    // postcard reads as packets and µs, as it always did.
    let mut b = [0u8; POSTCARD_LEN];
    b[0] = 1;
    b[1] = UNITS_V1MODEL;
    b[11] = 17;
    b[19] = 250;
    let p = Postcard::parse(&b).unwrap();
    assert_eq!((p.depth_unit(), p.time_unit()), (DepthUnit::Packets, TimeUnit::Micros));
    assert_eq!((p.enq_qdepth, p.qdelay_us()), (17, 250));
}
