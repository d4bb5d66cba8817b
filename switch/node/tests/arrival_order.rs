//! Drop-tail admission follows arrival times, whatever order the caller
//! read the frames in: a packet thread reads its ports one after another,
//! so a batch can hold a later frame of one port before an earlier frame
//! of another. Run on the real data plane (p4src/build/cc_switch.json).

use p4cc_node::{PortShared, Shared, SwitchCore};
use p4rt::PipelineSlot;
use pipeline::{ActionCall, MatchKey, Program, State, TableEntry};
use ports::PortSettings;
use std::sync::Arc;

const OUT_PORT: u32 = 3;
/// 8 Mbit/s: one byte per µs, so a frame of n bytes serializes in n µs.
const RATE_BPS: u64 = 8_000_000;
const FRAME_BYTES: usize = 100;
const US: u64 = 1000;

fn core() -> SwitchCore {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../p4src/build/cc_switch.json"))
        .expect("p4src/build/cc_switch.json");
    let p = Arc::new(Program::from_json(&text).expect("cc_switch.json loads"));
    let st = Arc::new(State::new(p.clone()));
    let t = p.table_by_name("ipv4_lpm").expect("table ipv4_lpm");
    let forward = p.action_by_name("forward").expect("action forward");
    st.table_insert(
        t,
        TableEntry {
            key: vec![MatchKey::Lpm { value: vec![10, 0, 0, 9], prefix_len: 32 }],
            priority: 0,
            action: ActionCall {
                action: forward,
                args: vec![(OUT_PORT as u16).to_be_bytes().to_vec(), vec![2, 0, 0, 0, 0, 9]],
            },
        },
    )
    .expect("route");
    let slot = Arc::new(PipelineSlot::default());
    slot.publish(Some(st));
    // One packet of buffer behind the link: the second waiting frame is
    // a tail drop.
    let out = PortSettings { rate_bps: RATE_BPS, depth_pkts: 1, ..PortSettings::default() };
    let ports = [1, 2, OUT_PORT]
        .into_iter()
        .map(|n| Arc::new(PortShared::new(n, format!("p{n}"), if n == OUT_PORT { out } else { PortSettings::default() })))
        .collect();
    let shared = Arc::new(Shared::new(ports).expect("eventfd"));
    let mut c = SwitchCore::new(shared, slot, 1, None, None);
    c.sync();
    assert!(c.has_pipeline());
    c
}

/// An IPv4 frame to 10.0.0.9 from 10.0.0.`src`, tagged by its IP id.
fn frame(src: u8, id: u16) -> Vec<u8> {
    let mut f = vec![0u8; FRAME_BYTES];
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0xfe]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, src]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((FRAME_BYTES - 14) as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[10, 0, 0, src]);
    ip[16..20].copy_from_slice(&[10, 0, 0, 9]);
    let sum: u32 = ip.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f
}

/// The IP ids of every frame port `OUT_PORT` delivers by `t`.
fn delivered(c: &mut SwitchCore, t: u64) -> Vec<u16> {
    let i = c.port_index(OUT_PORT).expect("out port");
    c.advance(i, t);
    let mut ids = Vec::new();
    while let Some(f) = c.pop_released(i, t) {
        ids.push(u16::from_be_bytes([f[18], f[19]]));
    }
    ids
}

/// Fills the queue: frame 1 on the wire from 0 to FRAME_BYTES µs, frame 2
/// waiting in the only buffer slot; it leaves at FRAME_BYTES µs.
fn full_queue() -> (SwitchCore, u64) {
    let mut c = core();
    assert!(c.receive(&frame(1, 1), 1, 0));
    assert_eq!(delivered(&mut c, 0), Vec::<u16>::new(), "frame 1 is still serializing");
    assert!(c.receive(&frame(1, 2), 1, US));
    (c, FRAME_BYTES as u64 * US)
}

#[test]
fn a_batch_joins_the_queue_in_arrival_order_not_read_order() {
    let (mut c, freed) = full_queue();
    // Read port 1's frame first although port 2's arrived 10 µs before it;
    // only one of them fits in the slot frame 2 frees at `freed`.
    assert!(c.ingress(&frame(1, 11), 1, freed + 20 * US));
    assert!(c.ingress(&frame(2, 22), 2, freed + 10 * US));
    c.enqueue_arrivals();
    assert_eq!(delivered(&mut c, 10_000 * US), vec![1, 2, 22], "the earlier arrival takes the slot");
    let i = c.port_index(OUT_PORT).unwrap();
    assert_eq!(c.ports[i].egress.stats.tail_drops, 1);
}

#[test]
fn frames_of_one_instant_keep_the_order_they_were_read() {
    let (mut c, freed) = full_queue();
    assert!(c.ingress(&frame(2, 22), 2, freed + 10 * US));
    assert!(c.ingress(&frame(1, 11), 1, freed + 10 * US));
    c.enqueue_arrivals();
    assert_eq!(delivered(&mut c, 10_000 * US), vec![1, 2, 22]);
}
