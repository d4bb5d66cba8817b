//! Degenerate and hostile inputs must never panic an algorithm or leave it
//! unable to send (zero/NaN window or rate).

use cc::{by_name, list, AckSample, PathInfo};

/// Deterministic xorshift so the stream is the same on every run.
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Mostly plausible values, sometimes extremes.
    fn pick(&mut self, plausible: u64) -> u64 {
        match self.next() % 10 {
            0 => 0,
            1 => u64::MAX,
            2 => u64::MAX / 2,
            _ => self.next() % plausible.max(1),
        }
    }
}

#[test]
fn garbage_in_no_panic_and_still_able_to_send() {
    let paths = [
        PathInfo { mss: 1, line_rate_bps: Some(1), init_cwnd_pkts: 0 },
        PathInfo { mss: 9000, line_rate_bps: None, init_cwnd_pkts: 1000 },
        PathInfo { mss: 1400, line_rate_bps: Some(u64::MAX), init_cwnd_pkts: 10 },
    ];
    for info in list() {
        for path in &paths {
            let mut cc = by_name(info.name, &[], path).unwrap();
            let mut g = Gen(0x1234_5678 ^ info.name.len() as u64);
            let mut now = 0u64;
            // Send times to name packets by (mostly real ones).
            let mut sent: Vec<u64> = Vec::new();
            for _ in 0..20_000 {
                // Time mostly advances, sometimes jumps or goes backwards.
                now = match g.next() % 20 {
                    0 => now.saturating_sub(g.pick(1_000_000)),
                    1 => g.pick(u64::MAX),
                    _ => now.saturating_add(g.next() % 100_000),
                };
                let named = |g: &mut Gen, sent: &Vec<u64>| match (g.next() % 4, sent.is_empty()) {
                    (0, _) | (_, true) => g.pick(u64::MAX),
                    _ => sent[(g.next() % sent.len() as u64) as usize],
                };
                match g.next() % 10 {
                    0 => {
                        cc.on_send(now, g.pick(100_000));
                        if sent.len() < 4096 {
                            sent.push(now);
                        }
                    }
                    7 => {
                        let t = named(&mut g, &sent);
                        cc.on_packet_acked(now, t, g.pick(100_000));
                    }
                    8 => {
                        let t = named(&mut g, &sent);
                        cc.on_packet_lost(now, t, g.pick(100_000));
                    }
                    9 => cc.on_app_limited(now),
                    6 => cc.on_queue_report(now, &cc::QueueReport { hop: (g.next() % 4) as u32, depth_pkts: g.pick(500) as f64, at_us: 0 }),
                    1 => cc.on_loss(now, g.pick(100_000)),
                    2 => cc.on_rto(now),
                    3 => cc.on_tick(now),
                    _ => {
                        let acked = g.pick(100_000);
                        cc.on_ack(&AckSample {
                            now_ns: now,
                            acked_bytes: acked,
                            ce_bytes: g.pick(acked.saturating_add(1)),
                            rtt_ns: if g.next().is_multiple_of(4) { None } else { Some(g.pick(50_000_000)) },
                            path_qdepth_pkts: if g.next().is_multiple_of(4) { None } else { Some(g.pick(500) as u32) },
                            inflight_bytes: g.pick(1_000_000),
                            acked_pkts: (g.next() % 64) as u32,
                            hops: (0..g.next() % 5)
                                .map(|_| cc::QueueReport { hop: (g.next() % 4) as u32, depth_pkts: g.pick(500) as f64, at_us: g.pick(1 << 40) })
                                .collect(),
                            int_hops: (0..g.next() % 5)
                                .map(|_| cc::IntHop {
                                    hop: (g.next() % 4) as u32,
                                    qlen_bytes: g.pick(1 << 24),
                                    tx_bytes: g.next() as u32,
                                    ts_ns: g.pick(1 << 50),
                                    rate_bps: g.pick(400_000_000_000),
                                })
                                .collect(),
                        });
                    }
                }
                if let Some(w) = cc.cwnd_bytes() {
                    assert!(w >= 1, "{}: window collapsed to 0", info.name);
                }
                if let Some(r) = cc.pacing_rate_bps() {
                    assert!(r > 0, "{}: rate collapsed to 0", info.name);
                }
                for (k, v) in cc.state() {
                    assert!(!v.is_nan(), "{}: state {k} is NaN", info.name);
                }
            }
        }
    }
}
