//! Building blocks shared by the window-based algorithms (Reno, Cubic,
//! DCTCP, Vegas, HPCC, PowerTCP): an RTT estimator, a NewReno-style
//! recovery point, the Reno window itself, a once-per-RTT update round and
//! a base-RTT tracker.

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

/// "At most once per RTT" without sequence numbers: the papers' `if
/// ack.seq > lastUpdateSeq { ...; lastUpdateSeq = snd_nxt }` kept in bytes.
///
/// `start` records the bytes transmitted so far (snd_nxt); `passed` is
/// true once the bytes resolved (ACKed or declared lost) exceed that mark,
/// i.e. once an ACK covers data sent after the mark. As in [`Recovery`],
/// `acked + lost + inflight` stands in for the bytes transmitted when the
/// datapath never calls `on_send`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Round {
    sent: u64,
    resolved: u64,
    inflight: u64,
    mark: Option<u64>,
}

impl Round {
    pub(crate) fn on_send(&mut self, bytes: u64) {
        self.sent = self.sent.saturating_add(bytes);
    }
    pub(crate) fn on_ack(&mut self, acked: u64, inflight: u64) {
        self.resolved = self.resolved.saturating_add(acked);
        self.inflight = inflight;
    }
    pub(crate) fn on_loss(&mut self, lost: u64) {
        self.resolved = self.resolved.saturating_add(lost);
    }
    /// Bytes ACKed or declared lost so far (the cumulative ACK point).
    pub(crate) fn resolved(&self) -> u64 {
        self.resolved
    }
    /// Bytes transmitted so far (snd_nxt).
    pub(crate) fn high_water(&self) -> u64 {
        self.sent.max(self.resolved.saturating_add(self.inflight))
    }
    /// No mark yet (the papers' `lastUpdateSeq == 0`).
    pub(crate) fn fresh(&self) -> bool {
        self.mark.is_none()
    }
    /// An ACK covered data sent after the mark (`ack.seq > lastUpdateSeq`).
    pub(crate) fn passed(&self) -> bool {
        self.mark.is_none_or(|m| self.resolved > m)
    }
    /// `lastUpdateSeq = snd_nxt`.
    pub(crate) fn start(&mut self) {
        self.mark = Some(self.high_water());
    }
}

/// The base RTT an algorithm divides by: a fixed value the user gave, else
/// the smallest RTT measured so far.
#[derive(Debug, Clone, Default)]
pub(crate) struct BaseRtt {
    fixed_ns: Option<f64>,
    min_ns: Option<f64>,
}

impl BaseRtt {
    /// `fixed_us == 0` means "measure it".
    pub(crate) fn new(fixed_us: f64) -> Self {
        BaseRtt { fixed_ns: (fixed_us > 0.0).then_some(fixed_us * 1e3), min_ns: None }
    }
    pub(crate) fn observe(&mut self, rtt_ns: Option<u64>) {
        if let Some(r) = rtt_ns.filter(|&r| r > 0) {
            let r = r as f64;
            self.min_ns = Some(self.min_ns.map_or(r, |m| m.min(r)));
        }
    }
    /// Nanoseconds; `None` while it is to be measured and nothing was.
    pub(crate) fn get_ns(&self) -> Option<f64> {
        self.fixed_ns.or(self.min_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_passes_once_data_sent_after_the_mark_is_acked() {
        let mut r = Round::default();
        assert!(r.fresh() && r.passed());
        r.on_send(3_000);
        r.start();
        assert!(!r.fresh() && !r.passed());
        r.on_send(1_000);
        r.on_ack(2_000, 2_000);
        r.on_loss(1_000);
        assert!(!r.passed(), "everything sent before the mark resolved, nothing after");
        r.on_ack(1, 999);
        assert!(r.passed());
        // Without on_send, acked + lost + inflight is the transmitted count.
        let mut r = Round::default();
        r.on_ack(1_000, 5_000);
        r.start();
        r.on_ack(5_000, 0);
        assert!(!r.passed());
        r.on_ack(1, 0);
        assert!(r.passed());
    }

    #[test]
    fn base_rtt_is_fixed_or_the_minimum() {
        let mut b = BaseRtt::new(0.0);
        assert_eq!(b.get_ns(), None);
        b.observe(Some(0));
        b.observe(None);
        assert_eq!(b.get_ns(), None, "zero and missing samples are no samples");
        b.observe(Some(120_000));
        b.observe(Some(100_000));
        b.observe(Some(130_000));
        assert_eq!(b.get_ns(), Some(100_000.0));
        let mut b = BaseRtt::new(12.5);
        b.observe(Some(1_000));
        assert_eq!(b.get_ns(), Some(12_500.0));
    }

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
