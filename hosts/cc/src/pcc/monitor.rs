//! Monitor intervals (MIs): PCC's unit of experiment.
//!
//! Each MI sends at one rate for a while; the ACKs and losses of the data
//! it sent are collected into it, and once that feedback has had time to
//! arrive the MI is closed and handed to the rate controller.
//!
//! The algorithms see no sequence numbers, so feedback is attributed by
//! *send time*: an ACK carrying an RTT sample acknowledges data sent at
//! `now − rtt`; an ACK without one, or a loss, is attributed to
//! `now − srtt`. A loss whose estimated send time precedes every open MI is
//! charged to the oldest one rather than dropped (late loss detection must
//! not make a rate look loss-free).

use std::collections::VecDeque;

use crate::window::RttEstimator;
use crate::AckSample;

/// What a finished MI measured.
#[derive(Debug, Clone, PartialEq)]
pub struct MiStats {
    pub id: u64,
    /// Rate the MI was asked to send at, bits/s.
    pub rate_bps: f64,
    pub duration_ns: f64,
    pub acked_bytes: u64,
    pub lost_bytes: u64,
    /// d(RTT)/dT over the MI (dimensionless), from a least-squares fit of
    /// RTT against send time; 0 with fewer than two samples.
    pub rtt_gradient: f64,
    pub rtt_samples: u32,
}

impl MiStats {
    /// No feedback at all: nothing can be concluded from this MI.
    pub fn is_void(&self) -> bool {
        self.acked_bytes == 0 && self.lost_bytes == 0
    }
    pub fn throughput_bps(&self) -> f64 {
        if self.duration_ns > 0.0 {
            self.acked_bytes as f64 * 8.0 / (self.duration_ns / 1e9)
        } else {
            0.0
        }
    }
    pub fn loss_rate(&self) -> f64 {
        let total = self.acked_bytes.saturating_add(self.lost_bytes);
        if total == 0 {
            0.0
        } else {
            self.lost_bytes as f64 / total as f64
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Fit {
    n: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
}

impl Fit {
    fn add(&mut self, x: f64, y: f64) {
        self.n += 1.0;
        self.sx += x;
        self.sy += y;
        self.sxx += x * x;
        self.sxy += x * y;
    }
    fn slope(&self) -> f64 {
        let den = self.n * self.sxx - self.sx * self.sx;
        if self.n < 2.0 || den.abs() < f64::EPSILON {
            0.0
        } else {
            (self.n * self.sxy - self.sx * self.sy) / den
        }
    }
}

#[derive(Debug, Clone)]
struct Mi {
    id: u64,
    rate_bps: f64,
    start_ns: u64,
    end_ns: u64,
    acked: u64,
    lost: u64,
    fit: Fit,
}

/// Timing rules for MIs.
#[derive(Debug, Clone, PartialEq)]
pub struct MiTiming {
    /// MI length as a multiple of srtt.
    pub rtt_mult: f64,
    /// ... but at least this many packets at the MI's rate.
    pub min_pkts: f64,
    /// RTT assumed before the first sample, ns.
    pub init_rtt_ns: f64,
    pub mss: f64,
}

#[derive(Debug, Clone)]
pub struct Monitor {
    timing: MiTiming,
    mis: VecDeque<Mi>,
    next_id: u64,
    rtt: RttEstimator,
}

impl Monitor {
    pub fn new(timing: MiTiming) -> Self {
        Monitor { timing, mis: VecDeque::new(), next_id: 0, rtt: RttEstimator::default() }
    }

    pub fn srtt_ns(&self) -> f64 {
        self.rtt.srtt_ns().unwrap_or(self.timing.init_rtt_ns)
    }

    /// MI length: max(rtt_mult·srtt, min_pkts packets at `rate`).
    pub fn duration_ns(&self, rate_bps: f64) -> u64 {
        let by_rtt = self.timing.rtt_mult * self.srtt_ns();
        let by_pkts = if rate_bps > 0.0 { self.timing.min_pkts * self.timing.mss * 8.0 / rate_bps * 1e9 } else { 0.0 };
        by_rtt.max(by_pkts).clamp(1.0, 3.6e12) as u64
    }

    /// True when a new MI must start at `now`.
    pub fn due(&self, now_ns: u64) -> bool {
        self.mis.back().is_none_or(|m| now_ns >= m.end_ns)
    }

    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    pub fn open(&mut self, now_ns: u64, rate_bps: f64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let end_ns = now_ns.saturating_add(self.duration_ns(rate_bps));
        self.mis.push_back(Mi { id, rate_bps, start_ns: now_ns, end_ns, acked: 0, lost: 0, fit: Fit::default() });
        id
    }

    /// Rate of the MI currently sending.
    pub fn current_rate(&self) -> Option<f64> {
        self.mis.back().map(|m| m.rate_bps)
    }

    fn find(&mut self, t_ns: u64) -> Option<&mut Mi> {
        let last = self.mis.len().checked_sub(1)?;
        let idx = self
            .mis
            .iter()
            .position(|m| t_ns >= m.start_ns && t_ns < m.end_ns)
            .or_else(|| self.mis.back().filter(|m| t_ns >= m.end_ns).map(|_| last));
        idx.and_then(move |i| self.mis.get_mut(i))
    }

    pub fn on_ack(&mut self, s: &AckSample) {
        if let Some(r) = s.rtt_ns {
            self.rtt.update(r);
        }
        let back = s.rtt_ns.map_or(self.srtt_ns() as u64, |r| r);
        let sent_at = s.now_ns.saturating_sub(back);
        if let Some(mi) = self.find(sent_at) {
            mi.acked = mi.acked.saturating_add(s.acked_bytes);
            if let Some(r) = s.rtt_ns {
                mi.fit.add(sent_at.saturating_sub(mi.start_ns) as f64, r as f64);
            }
        }
    }

    pub fn on_loss(&mut self, now_ns: u64, lost_bytes: u64) {
        let sent_at = now_ns.saturating_sub(self.srtt_ns() as u64);
        let idx = self.mis.iter().position(|m| sent_at < m.end_ns);
        let mi = match idx {
            Some(i) => self.mis.get_mut(i),
            None => self.mis.back_mut(),
        };
        if let Some(mi) = mi {
            mi.lost = mi.lost.saturating_add(lost_bytes);
        }
    }

    /// MIs whose feedback is complete: every packet they sent has had an
    /// RTT (plus a quarter for ACK jitter and loss detection) to come back.
    pub fn take_finished(&mut self, now_ns: u64) -> Vec<MiStats> {
        let grace = (1.25 * self.srtt_ns()) as u64;
        let mut out = Vec::new();
        while let Some(m) = self.mis.front() {
            if now_ns < m.end_ns.saturating_add(grace) {
                break;
            }
            if let Some(m) = self.mis.pop_front() {
                out.push(MiStats {
                    id: m.id,
                    rate_bps: m.rate_bps,
                    duration_ns: m.end_ns.saturating_sub(m.start_ns) as f64,
                    acked_bytes: m.acked,
                    lost_bytes: m.lost,
                    rtt_gradient: m.fit.slope(),
                    rtt_samples: m.fit.n as u32,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn monitor() -> Monitor {
        Monitor::new(MiTiming { rtt_mult: 1.5, min_pkts: 20.0, init_rtt_ns: 10e6, mss: 1000.0 })
    }

    #[test]
    fn duration_is_max_of_rtt_multiple_and_packets() {
        let m = monitor();
        // 1.5 * 10 ms = 15 ms; 20 pkts at 100 Mbps = 1.6 ms.
        assert_eq!(m.duration_ns(100e6), 15_000_000);
        // 20 pkts at 1 Mbps = 160 ms.
        assert_eq!(m.duration_ns(1e6), 160_000_000);
    }

    #[test]
    fn feedback_is_attributed_by_send_time() {
        let mut m = monitor();
        assert!(m.due(0));
        m.open(0, 100e6); // [0, 15 ms)
        assert!(!m.due(14_999_999));
        m.open(15_000_000, 200e6); // [15, 30 ms)
        // ACK at 24 ms with RTT 10 ms: sent at 14 ms -> MI 0.
        m.on_ack(&AckSample { now_ns: 24_000_000, acked_bytes: 1000, rtt_ns: Some(10_000_000), ..Default::default() });
        // ACK at 26 ms with RTT 10 ms: sent at 16 ms -> MI 1.
        m.on_ack(&AckSample { now_ns: 26_000_000, acked_bytes: 2000, rtt_ns: Some(10_000_000), ..Default::default() });
        // Loss at 20 ms: sent at ~10 ms -> MI 0.
        m.on_loss(20_000_000, 500);
        assert!(m.take_finished(27_400_000).is_empty(), "MI 0 ends 15 ms + 12.5 ms grace");
        let done = m.take_finished(27_500_000);
        assert_eq!(done.len(), 1);
        assert_eq!((done[0].id, done[0].acked_bytes, done[0].lost_bytes), (0, 1000, 500));
        assert!((done[0].loss_rate() - 1.0 / 3.0).abs() < 1e-12);
        assert!((done[0].throughput_bps() - 1000.0 * 8.0 / 0.015).abs() < 1e-6);
        let done = m.take_finished(42_500_000);
        assert_eq!((done[0].id, done[0].acked_bytes, done[0].lost_bytes), (1, 2000, 0));
    }

    #[test]
    fn rtt_gradient_is_a_least_squares_slope() {
        let mut m = monitor();
        m.open(0, 100e6);
        // RTT rises 1 µs per 100 µs of send time: slope 0.01.
        for i in 0..10u64 {
            let sent = i * 100_000;
            let rtt = 10_000_000 + i * 1_000;
            m.on_ack(&AckSample { now_ns: sent + rtt, acked_bytes: 1000, rtt_ns: Some(rtt), ..Default::default() });
        }
        let done = m.take_finished(1_000_000_000);
        assert_eq!(done[0].rtt_samples, 10);
        assert!((done[0].rtt_gradient - 0.01).abs() < 1e-9);
    }
}
