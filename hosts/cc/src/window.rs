//! Building blocks shared by the window-based algorithms (Reno, Cubic,
//! DCTCP, Vegas): an RTT estimator, a NewReno-style recovery point, and the
//! Reno window itself.

use crate::PathInfo;

/// Smoothed RTT with the RFC 6298 gain (1/8).
#[derive(Debug, Clone, Default)]
pub(crate) struct RttEstimator {
    srtt_ns: Option<f64>,
}

impl RttEstimator {
    pub(crate) fn update(&mut self, rtt_ns: u64) {
        let r = rtt_ns as f64;
        self.srtt_ns = Some(match self.srtt_ns {
            None => r,
            Some(s) => s + (r - s) / 8.0,
        });
    }
    pub(crate) fn srtt_ns(&self) -> Option<f64> {
        self.srtt_ns
    }
}

/// Kind of loss episode in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Episode {
    None,
    /// Loss detected by dup-ACK/SACK: the window was cut and does not grow
    /// until everything outstanding at the cut is resolved (NewReno fast
    /// recovery, RFC 6582).
    Fast,
    /// Retransmission timeout: the window restarts from 1 MSS and slow-starts
    /// at once, but losses of data sent before the timeout do not cut again.
    Timeout,
}

/// NewReno's "recover" point (RFC 6582) without sequence numbers.
///
/// The algorithms never see sequence numbers, so "data sent before the cut"
/// is tracked in bytes: every transmission (including retransmissions) is
/// eventually either acknowledged or declared lost, so once
/// `acked + lost` reaches the number of bytes transmitted at the time of the
/// cut, every loss after that concerns data sent after the cut.
/// Transmissions come from `on_send`; if a datapath never calls it, the
/// estimate `acked + lost + inflight` (from the ACK samples) stands in.
#[derive(Debug, Clone)]
pub(crate) struct Recovery {
    sent: u64,
    acked: u64,
    lost: u64,
    inflight: u64,
    point: u64,
    episode: Episode,
}

impl Default for Recovery {
    fn default() -> Self {
        Recovery { sent: 0, acked: 0, lost: 0, inflight: 0, point: 0, episode: Episode::None }
    }
}

impl Recovery {
    fn resolved(&self) -> u64 {
        self.acked.saturating_add(self.lost)
    }
    fn high_water(&self) -> u64 {
        self.sent.max(self.resolved().saturating_add(self.inflight))
    }
    fn settle(&mut self) {
        if self.episode != Episode::None && self.resolved() >= self.point {
            self.episode = Episode::None;
        }
    }
    pub(crate) fn on_send(&mut self, bytes: u64) {
        self.sent = self.sent.saturating_add(bytes);
    }
    pub(crate) fn on_ack(&mut self, acked: u64, inflight: u64) {
        self.acked = self.acked.saturating_add(acked);
        self.inflight = inflight;
        self.settle();
    }
    /// Returns true when this loss starts a new congestion event, i.e. the
    /// lost data was sent after the previous cut.
    pub(crate) fn on_loss(&mut self, lost: u64) -> bool {
        let new_event = !self.active();
        if new_event {
            self.point = self.high_water();
            self.episode = Episode::Fast;
        }
        self.lost = self.lost.saturating_add(lost);
        self.settle();
        new_event
    }
    /// Returns true when the timeout is the first reaction for this data.
    pub(crate) fn on_rto(&mut self) -> bool {
        let new_event = !self.active();
        self.point = self.point.max(self.high_water());
        self.episode = Episode::Timeout;
        self.settle();
        new_event
    }
    /// Inside a loss episode: no further multiplicative cut.
    pub(crate) fn active(&self) -> bool {
        self.episode != Episode::None
    }
    /// Inside fast recovery: the window must not grow.
    pub(crate) fn growth_frozen(&self) -> bool {
        self.episode == Episode::Fast
    }
}

/// The Reno window (RFC 5681 with NewReno's recovery point, RFC 6582).
#[derive(Debug, Clone)]
pub(crate) struct RenoWindow {
    pub(crate) cwnd: u64,
    pub(crate) ssthresh: u64,
    pub(crate) mss: u64,
    /// Bytes ACKed in congestion avoidance not yet turned into growth
    /// (RFC 5681 §3.1 byte counting: +1 MSS per cwnd of bytes ACKed).
    ca_acked: u64,
    pub(crate) rec: Recovery,
}

impl RenoWindow {
    pub(crate) fn new(path: &PathInfo) -> Self {
        let mss = u64::from(path.mss.max(1));
        RenoWindow {
            cwnd: mss.saturating_mul(u64::from(path.init_cwnd_pkts.max(1))),
            ssthresh: u64::MAX,
            mss,
            ca_acked: 0,
            rec: Recovery::default(),
        }
    }

    pub(crate) fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Slow start grows by the bytes ACKed (RFC 3465 byte counting, as
    /// Linux does), never past ssthresh in one step.
    pub(crate) fn slow_start(&mut self, acked: u64) {
        self.cwnd = self.cwnd.saturating_add(acked).min(self.ssthresh.max(self.cwnd));
    }

    /// Additive increase: one MSS per cwnd of bytes ACKed.
    pub(crate) fn congestion_avoidance(&mut self, acked: u64) {
        self.ca_acked = self.ca_acked.saturating_add(acked);
        if self.ca_acked >= self.cwnd && self.cwnd > 0 {
            let n = self.ca_acked / self.cwnd;
            self.ca_acked %= self.cwnd;
            self.cwnd = self.cwnd.saturating_add(n.saturating_mul(self.mss));
        }
    }

    pub(crate) fn grow(&mut self, acked: u64) {
        if self.in_slow_start() {
            self.slow_start(acked);
        } else {
            self.congestion_avoidance(acked);
        }
    }

    /// Standard Reno ACK processing: account, then grow unless in fast
    /// recovery. The ACK that ends recovery does not grow the window.
    pub(crate) fn on_ack(&mut self, acked: u64, inflight: u64) {
        let frozen = self.rec.growth_frozen();
        self.rec.on_ack(acked, inflight);
        if !frozen {
            self.grow(acked);
        }
    }

    /// Multiplicative decrease to `new_cwnd` (floored at 2 MSS); ssthresh
    /// follows so the window resumes in congestion avoidance.
    pub(crate) fn cut_to(&mut self, new_cwnd: u64) {
        self.cwnd = new_cwnd.max(2 * self.mss);
        self.ssthresh = self.cwnd;
        self.ca_acked = 0;
    }

    /// Halve once per window of data (RFC 5681 §3.2 with RFC 6582's
    /// recovery point). Returns true if the window was cut.
    pub(crate) fn on_loss(&mut self, lost: u64) -> bool {
        if self.rec.on_loss(lost) {
            self.cut_to(self.cwnd / 2);
            true
        } else {
            false
        }
    }

    /// RFC 5681 §3.1: ssthresh = max(cwnd/2, 2 MSS), cwnd = 1 MSS. A repeated
    /// timeout for the same data keeps ssthresh (it already reflects the
    /// congestion) but still collapses the window.
    pub(crate) fn on_rto(&mut self) {
        if self.rec.on_rto() {
            self.ssthresh = (self.cwnd / 2).max(2 * self.mss);
        }
        self.cwnd = self.mss;
        self.ca_acked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_point_spans_data_sent_before_the_cut() {
        let mut r = Recovery::default();
        r.on_send(10_000);
        assert!(r.on_loss(1_000), "first loss is a congestion event");
        assert!(!r.on_loss(1_000), "second loss of pre-cut data is not");
        r.on_send(2_000); // retransmissions
        r.on_ack(7_000, 2_000);
        assert!(r.active(), "1000 bytes sent before the cut unresolved");
        r.on_ack(1_000, 1_000);
        assert!(!r.active());
        assert!(r.on_loss(1_000), "loss of post-cut data is a new event");
    }

    #[test]
    fn recovery_without_on_send_uses_inflight() {
        let mut r = Recovery::default();
        r.on_ack(1_000, 9_000);
        assert!(r.on_loss(1_000));
        r.on_ack(7_000, 1_000);
        assert!(r.active());
        r.on_ack(1_000, 0);
        assert!(!r.active());
    }

    #[test]
    fn rtt_estimator_uses_rfc6298_gain() {
        let mut e = RttEstimator::default();
        e.update(800);
        e.update(1600);
        assert_eq!(e.srtt_ns(), Some(900.0));
    }
}
