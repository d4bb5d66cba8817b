//! What oracle TIMELY is told: the channel between the switch's queue
//! reports and the control law.
//!
//! The switch knows every packet's queue depth at every hop exactly. How
//! much of that reaches a sender is a property of the telemetry system,
//! not of the algorithm, and this channel models it on the sender, where
//! the reports arrive, so the same code degrades the signal in the
//! namespace lab and in the simulator:
//!
//! * `source`: in-band hop records echoed in ACKs, or postcards the
//!   collector returns out of band ([`crate::CongestionControl::on_queue_report`]);
//! * `hop`: every hop's record, only the shim's path maximum, or only the
//!   newest hop's record;
//! * `every`: one packet in N carries its report (the others none);
//! * `delay`: each report reaches the law `delay` after it arrived, i.e.
//!   the value is that much older;
//! * `levels`: each depth is quantised to one of L values, geometrically
//!   spaced up to a top value and randomly rounded so that the decoded
//!   value is unbiased (PINT's multiplicative approximation, Ben Basat et
//!   al., SIGCOMM 2020).
//!
//! Every degradation is a function of the report stream the sender would
//! otherwise see, so applying it here is equivalent to applying it at the
//! switch or in the receiver's echo. The random rounding uses a counter
//! hashed with splitmix64: runs are repeatable.

use std::collections::VecDeque;

use crate::{AckSample, QueueReport};

/// Where the reports come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Hop records carried in-band and echoed by the receiver in ACKs.
    Ack,
    /// Postcards the collector returns to the packet's sender.
    Postcard,
}

/// Which of a packet's in-band hop records the law sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HopView {
    /// Every hop's record, each with its hop identity.
    Each,
    /// Only the shim's path maximum (no hop identity: [`PATH_MAX_HOP`]).
    Max,
    /// Only the newest hop's record (the last switch the packet crossed).
    Last,
}

/// Hop key of the shim's path maximum, which names no hop.
pub const PATH_MAX_HOP: u32 = u32::MAX;

#[derive(Debug, Clone, PartialEq)]
pub struct ChannelConfig {
    pub source: Source,
    pub hop: HopView,
    /// One packet in `every` carries its report (1 = every packet).
    pub every: u32,
    /// Age added to every report, ns.
    pub delay_ns: u64,
    /// Quantisation levels (0 = exact depths; otherwise at least 2).
    pub levels: u32,
    /// The top level, packets (depths above it read as it).
    pub levels_max_pkts: f64,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        ChannelConfig { source: Source::Ack, hop: HopView::Each, every: 1, delay_ns: 0, levels: 0, levels_max_pkts: 255.0 }
    }
}

/// The reports of one packet (one ACK's echo, or one postcard).
pub type ReportSet = Vec<QueueReport>;

#[derive(Debug, Clone)]
pub struct Channel {
    cfg: ChannelConfig,
    /// Geometric ratio between quantisation levels.
    base: f64,
    /// Packets whose reports were offered / passed on.
    offered: u64,
    passed: u64,
    dither: u64,
    queue: VecDeque<(u64, ReportSet)>,
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Channel {
    pub fn new(cfg: ChannelConfig) -> Channel {
        let every = cfg.every.max(1);
        let base = if cfg.levels >= 2 { (1.0 + cfg.levels_max_pkts.max(1.0)).powf(1.0 / f64::from(cfg.levels - 1)) } else { 1.0 };
        Channel { cfg: ChannelConfig { every, ..cfg }, base, offered: 0, passed: 0, dither: 0, queue: VecDeque::new() }
    }

    pub fn config(&self) -> &ChannelConfig {
        &self.cfg
    }

    /// Packets whose reports reached the channel, and how many it passed.
    pub fn counts(&self) -> (u64, u64) {
        (self.offered, self.passed)
    }

    /// The value of quantisation level `k`: (base^k − 1).
    pub fn level(&self, k: u32) -> f64 {
        self.base.powi(k as i32) - 1.0
    }

    /// The reports an ACK carries, as this channel's hop view sees them.
    pub fn offer_ack(&mut self, now_ns: u64, s: &AckSample) {
        if self.cfg.source != Source::Ack {
            return;
        }
        let path_max = s.path_qdepth_pkts.map(|q| QueueReport { hop: PATH_MAX_HOP, depth_pkts: f64::from(q), at_us: 0 });
        let set: ReportSet = match self.cfg.hop {
            HopView::Max => path_max.into_iter().collect(),
            HopView::Last => s.hops.first().copied().or(path_max).into_iter().collect(),
            HopView::Each if s.hops.is_empty() => path_max.into_iter().collect(),
            HopView::Each => s.hops.clone(),
        };
        if !set.is_empty() {
            self.offer(now_ns, set);
        }
    }

    /// A report delivered out of band (a returned postcard).
    pub fn offer_feed(&mut self, now_ns: u64, r: &QueueReport) {
        if self.cfg.source == Source::Postcard {
            self.offer(now_ns, vec![*r]);
        }
    }

    fn offer(&mut self, now_ns: u64, mut set: ReportSet) {
        self.offered += 1;
        // Packets 1, 1 + N, 1 + 2N, ... carry their report.
        if !(self.offered - 1).is_multiple_of(u64::from(self.cfg.every)) {
            return;
        }
        self.passed += 1;
        if self.cfg.levels >= 2 {
            for r in set.iter_mut() {
                r.depth_pkts = self.quantise(r.depth_pkts);
            }
        }
        self.queue.push_back((now_ns.saturating_add(self.cfg.delay_ns), set));
    }

    /// `v` rounded to a neighbouring level, up with the probability that
    /// makes the expected value `v` (below the top level).
    pub fn quantise(&mut self, v: f64) -> f64 {
        let top = self.level(self.cfg.levels - 1);
        if v <= 0.0 {
            return 0.0;
        }
        if v >= top {
            return top;
        }
        let mut k = ((1.0 + v).ln() / self.base.ln()).floor() as u32;
        // Floating-point guard: keep lo <= v < hi.
        while k > 0 && self.level(k) > v {
            k -= 1;
        }
        while self.level(k + 1) <= v {
            k += 1;
        }
        let (lo, hi) = (self.level(k), self.level(k + 1));
        self.dither = self.dither.wrapping_add(1);
        let u = (splitmix64(self.dither) >> 11) as f64 / (1u64 << 53) as f64;
        if u < (v - lo) / (hi - lo) {
            hi
        } else {
            lo
        }
    }

    /// The oldest report set whose time has come, if any.
    pub fn next_due(&mut self, now_ns: u64) -> Option<ReportSet> {
        if self.queue.front().is_some_and(|(due, _)| *due <= now_ns) {
            self.queue.pop_front().map(|(_, s)| s)
        } else {
            None
        }
    }

    /// Report sets waiting for their delay.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rep(hop: u32, q: f64) -> QueueReport {
        QueueReport { hop, depth_pkts: q, at_us: 0 }
    }

    fn ack(path: Option<u32>, hops: &[(u32, f64)]) -> AckSample {
        AckSample { path_qdepth_pkts: path, hops: hops.iter().map(|&(h, q)| rep(h, q)).collect(), ..Default::default() }
    }

    fn take(c: &mut Channel, now: u64) -> Vec<ReportSet> {
        std::iter::from_fn(|| c.next_due(now)).collect()
    }

    #[test]
    fn hop_views() {
        let a = ack(Some(9), &[(2, 3.0), (1, 9.0)]);
        let mut each = Channel::new(ChannelConfig::default());
        each.offer_ack(0, &a);
        assert_eq!(take(&mut each, 0), vec![vec![rep(2, 3.0), rep(1, 9.0)]]);
        let mut max = Channel::new(ChannelConfig { hop: HopView::Max, ..Default::default() });
        max.offer_ack(0, &a);
        assert_eq!(take(&mut max, 0), vec![vec![rep(PATH_MAX_HOP, 9.0)]]);
        let mut last = Channel::new(ChannelConfig { hop: HopView::Last, ..Default::default() });
        last.offer_ack(0, &a);
        assert_eq!(take(&mut last, 0), vec![vec![rep(2, 3.0)]], "the newest hop only: blind to hop 1");
        // No hop records: every view falls back to the path maximum; no
        // telemetry at all: nothing.
        each.offer_ack(0, &ack(Some(4), &[]));
        each.offer_ack(0, &ack(None, &[]));
        assert_eq!(take(&mut each, 0), vec![vec![rep(PATH_MAX_HOP, 4.0)]]);
        assert_eq!(each.counts(), (2, 2));
    }

    #[test]
    fn sources_are_exclusive() {
        let mut inband = Channel::new(ChannelConfig::default());
        inband.offer_feed(0, &rep(1, 5.0));
        assert!(take(&mut inband, 0).is_empty(), "in-band ignores postcards");
        let mut pc = Channel::new(ChannelConfig { source: Source::Postcard, ..Default::default() });
        pc.offer_ack(0, &ack(Some(3), &[(1, 3.0)]));
        pc.offer_feed(5, &rep(1, 5.0));
        assert_eq!(take(&mut pc, 5), vec![vec![rep(1, 5.0)]], "postcard-fed ignores the echo");
    }

    #[test]
    fn one_packet_in_n() {
        let mut c = Channel::new(ChannelConfig { every: 3, ..Default::default() });
        for q in 0..7 {
            c.offer_ack(0, &ack(Some(q), &[]));
        }
        let got: Vec<f64> = take(&mut c, 0).iter().map(|s| s[0].depth_pkts).collect();
        assert_eq!(got, vec![0.0, 3.0, 6.0]);
        assert_eq!(c.counts(), (7, 3));
    }

    #[test]
    fn delay_holds_reports_in_order() {
        let mut c = Channel::new(ChannelConfig { delay_ns: 1000, ..Default::default() });
        c.offer_ack(100, &ack(Some(1), &[]));
        c.offer_ack(600, &ack(Some(2), &[]));
        assert!(c.next_due(1099).is_none());
        assert_eq!(c.next_due(1100).unwrap()[0].depth_pkts, 1.0);
        assert!(c.next_due(1599).is_none());
        assert_eq!(c.waiting(), 1);
        assert_eq!(c.next_due(5000).unwrap()[0].depth_pkts, 2.0);
    }

    #[test]
    fn quantisation_is_geometric_and_unbiased() {
        // 16 levels (4 bits) up to 255 packets: base = 256^(1/15).
        let mut c = Channel::new(ChannelConfig { levels: 16, levels_max_pkts: 255.0, ..Default::default() });
        assert_eq!(c.level(0), 0.0);
        assert!((c.level(15) - 255.0).abs() < 1e-9);
        assert!((c.level(1) - (256f64.powf(1.0 / 15.0) - 1.0)).abs() < 1e-12);
        assert_eq!(c.quantise(0.0), 0.0);
        assert_eq!(c.quantise(1000.0), c.level(15), "clamped to the top level");
        let levels: Vec<f64> = (0..16).map(|k| c.level(k)).collect();
        for v in [0.3, 1.0, 2.5, 7.0, 40.0, 200.0] {
            let n = 20_000;
            let mut sum = 0.0;
            for _ in 0..n {
                let x = c.quantise(v);
                assert!(levels.iter().any(|l| (l - x).abs() < 1e-9), "{x} is a level");
                let i = levels.iter().position(|l| (l - x).abs() < 1e-9).unwrap();
                assert!(levels[i.saturating_sub(1)] <= v && (i + 1 >= 16 || levels[(i + 1).min(15)] >= v), "a neighbour of {v}");
                sum += x;
            }
            let mean = sum / f64::from(n);
            assert!((mean - v).abs() < 0.03 * v.max(1.0), "unbiased at {v}: mean {mean}");
        }
        // Two levels (one bit): 0 or the top, P(top) = v/top.
        let mut one_bit = Channel::new(ChannelConfig { levels: 2, levels_max_pkts: 100.0, ..Default::default() });
        let tops = (0..10_000).filter(|_| one_bit.quantise(10.0) > 0.0).count();
        assert!((tops as f64 / 10_000.0 - 0.1).abs() < 0.01, "{tops}");
        // Applied to every report of a passed packet.
        c.offer_ack(0, &ack(Some(255), &[(1, 255.0), (2, 0.0)]));
        let s = c.next_due(0).unwrap();
        assert!((s[0].depth_pkts - 255.0).abs() < 1e-9 && s[1].depth_pkts == 0.0);
    }
}
