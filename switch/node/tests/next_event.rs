//! The core's next event (what an event loop sleeps until) is each port's
//! own, kept as the ports change rather than read from every port: after
//! any arrival, departure, release, settings change or new pipeline it
//! equals the earliest of the ports' queues and links, and a loop that
//! wakes only then delivers every frame it would otherwise. Run on the
//! real data plane (p4src/build/cc_switch.json).

use p4cc_node::{PortShared, Shared, SwitchCore};
use p4rt::PipelineSlot;
use pipeline::{ActionCall, MatchKey, Program, State, TableEntry};
use ports::PortSettings;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

const OUT_PORTS: [u32; 2] = [2, 3];

fn state(p: &Arc<Program>) -> Arc<State> {
    let st = Arc::new(State::new(p.clone()));
    let t = p.table_by_name("ipv4_lpm").expect("table ipv4_lpm");
    let forward = p.action_by_name("forward").expect("action forward");
    for (i, port) in OUT_PORTS.into_iter().enumerate() {
        let host = 9 + i as u8;
        st.table_insert(
            t,
            TableEntry {
                key: vec![MatchKey::Lpm { value: vec![10, 0, 0, host], prefix_len: 32 }],
                priority: 0,
                action: ActionCall { action: forward, args: vec![(port as u16).to_be_bytes().to_vec(), vec![2, 0, 0, 0, 0, host]] },
            },
        )
        .expect("route");
    }
    st
}

/// A UDP-less IPv4 frame of `len` bytes to 10.0.0.`dst`.
fn frame(dst: u8, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0xfe]);
    f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((len - 14) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 253;
    ip[12..16].copy_from_slice(&[10, 0, 0, 1]);
    ip[16..20].copy_from_slice(&[10, 0, 0, dst]);
    let sum: u32 = ip.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum();
    let sum = (sum & 0xffff) + (sum >> 16);
    let sum = !((sum & 0xffff) + (sum >> 16)) as u16;
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f
}

fn walk(c: &SwitchCore) -> Option<u64> {
    c.ports.iter().filter_map(|p| p.egress.next_event_ns()).min()
}

#[test]
fn next_event_is_the_ports_earliest_through_every_change() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../p4src/build/cc_switch.json"))
        .expect("p4src/build/cc_switch.json");
    let p = Arc::new(Program::from_json(&text).expect("cc_switch.json loads"));
    let slot = Arc::new(PipelineSlot::default());
    slot.publish(Some(state(&p)));
    let settings = |n: u32| match n {
        2 => PortSettings { rate_bps: 10_000_000, delay_us: 30, depth_pkts: 8, ..PortSettings::default() },
        3 => PortSettings { rate_bps: 40_000_000, delay_us: 5, depth_pkts: 4, ..PortSettings::default() },
        _ => PortSettings::default(),
    };
    let ports = [1, 2, 3].into_iter().map(|n| Arc::new(PortShared::new(n, format!("p{n}"), settings(n)))).collect();
    let shared = Arc::new(Shared::new(ports).expect("eventfd"));
    let mut c = SwitchCore::new(shared.clone(), slot.clone(), 1, None, None);
    c.sync();
    assert_eq!(c.next_event_ns(), None);

    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = |n: u64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % n
    };
    let (mut now, mut sent, mut delivered) = (0u64, 0u64, 0u64);
    for step in 0..20_000 {
        match rnd(40) {
            // The control plane: a port's settings, or a new pipeline
            // (queued packets dropped, frames on the links kept).
            0 => {
                let port = &shared.ports[1 + rnd(2) as usize];
                port.settings.lock().expect("settings").rate_bps = 5_000_000 + rnd(40) * 1_000_000;
                shared.settings_gen.fetch_add(1, Relaxed);
                c.sync();
            }
            1 if step % 7 == 0 => {
                slot.publish(Some(state(&p)));
                c.sync();
            }
            // A frame arrives.
            k if k < 24 => {
                now += rnd(150_000);
                c.receive(&frame(9 + rnd(2) as u8, 60 + rnd(1400) as usize), 1, now);
                sent += 1;
            }
            // The loop wakes when the core says, and does what is due.
            _ => {
                if let Some(t) = c.next_event_ns() {
                    now = now.max(t);
                    c.advance_all(now);
                    assert_eq!(c.next_event_ns(), walk(&c), "after the departures at {now} ns");
                    for i in 0..c.ports.len() {
                        while c.pop_released(i, now).is_some() {
                            delivered += 1;
                        }
                    }
                }
            }
        }
        assert_eq!(c.next_event_ns(), walk(&c), "step {step}, {now} ns");
    }
    // Drained, waking only when told: nothing is left behind.
    let mut wakes = 0;
    while let Some(t) = c.next_event_ns() {
        wakes += 1;
        assert!(wakes < 100_000, "the drain makes no progress at {now} ns");
        now = now.max(t);
        c.advance_all(now);
        for i in 0..c.ports.len() {
            while c.pop_released(i, now).is_some() {
                delivered += 1;
            }
        }
        assert_eq!(c.next_event_ns(), walk(&c));
    }
    assert!(c.ports.iter().all(|p| p.egress.queue_len() == 0 && p.egress.next_event_ns().is_none()));
    let st: Vec<_> = c.ports.iter().map(|p| p.egress.stats.clone()).collect();
    let dropped: u64 = st.iter().map(|s| s.tail_drops + s.flushed).sum();
    assert!(delivered > 5_000 && dropped > 100, "delivered {delivered}, dropped {dropped} of {sent}");
    assert_eq!(delivered + dropped, sent, "every frame delivered or counted as dropped");
}
