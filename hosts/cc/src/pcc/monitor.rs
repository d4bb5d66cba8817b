//! Monitor intervals (MIs): PCC's unit of experiment.
//!
//! Each MI sends at one rate; every packet it sent is settled later (acked
//! or lost) and once all are settled the MI is handed to the utility
//! function. This follows PCC-Uspace's `PccMonitorIntervalQueue`
//! (`src/pcc/pcc_monitor_interval_queue.cpp`): packets are charged to the
//! MI that *sent* them, an MI's utility is available when
//! `bytes_acked + bytes_lost == bytes_sent`, and an MI stops taking packets
//! only after it has lasted its planned duration *and* holds at least
//! `min_rtt_samples` RTT samples of its own (`kMinReliableRtt = 4`).
//!
//! Packets are named by send time: the transport reports each settled
//! packet through `on_packet_acked`/`on_packet_lost` with the `now` of the
//! `on_send` that sent it, and MIs are contiguous in time, so the lookup is
//! exact. A datapath that does not report packets falls back to estimating
//! send times (`now − rtt`, or `now − srtt`) and closing an MI a grace
//! period after it ends.

use std::collections::VecDeque;

use crate::window::RttEstimator;
use crate::AckSample;

/// What a finished MI measured.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MiStats {
    pub id: u64,
    /// Rate the MI was asked to send at, bits/s.
    pub rate_bps: f64,
    /// First to last send, plus one packet's transmission time at the MI's
    /// rate (PCC-Uspace `ComputeSimpleMetrics`), ns.
    pub duration_ns: f64,
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub acked_bytes: u64,
    pub lost_bytes: u64,
    /// d(RTT)/dT over the MI (dimensionless): least-squares slope of RTT
    /// against send time; 0 with fewer than two samples.
    pub rtt_gradient: f64,
    /// Root-mean-square residual of that fit relative to the mean RTT
    /// (PCC-Uspace `ComputeRttGradientError`): how much of the gradient
    /// is noise.
    pub rtt_gradient_error: f64,
    pub rtt_samples: u32,
    /// Smoothed RTT just before the MI's first own RTT sample came in, ns
    /// (0 if it got none): the RTT it started from (PCC-Uspace
    /// `rtt_on_monitor_start`, the average RTT when the interval's first
    /// packet is acked).
    pub srtt_start_ns: f64,
    /// Smoothed RTT when the MI was scored, ns (PCC-Uspace
    /// `rtt_on_monitor_end`, the average RTT when its utility becomes
    /// available).
    pub srtt_end_ns: f64,
}

impl MiStats {
    /// Fewer than two packets (PCC-Uspace `HasInvalidUtility`: first and
    /// last send at the same time) or no feedback at all: nothing can be
    /// concluded. An MI whose packets were *all lost* is not void: it
    /// scores as 100 % loss.
    pub fn is_void(&self) -> bool {
        self.sent_pkts < 2 || self.acked_bytes.saturating_add(self.lost_bytes) == 0
    }
    /// Bits/s actually sent over the MI's duration.
    pub fn send_rate_bps(&self) -> f64 {
        per_second(self.sent_bytes, self.duration_ns)
    }
    pub fn throughput_bps(&self) -> f64 {
        per_second(self.acked_bytes, self.duration_ns)
    }
    /// Lost over sent (PCC-Uspace); never above 1 when a spuriously lost
    /// packet is later acked as well.
    pub fn loss_rate(&self) -> f64 {
        let base = self.sent_bytes.max(self.acked_bytes.saturating_add(self.lost_bytes));
        if base == 0 {
            0.0
        } else {
            self.lost_bytes as f64 / base as f64
        }
    }
}

fn per_second(bytes: u64, ns: f64) -> f64 {
    if ns > 0.0 {
        bytes as f64 * 8.0 / (ns / 1e9)
    } else {
        0.0
    }
}

/// Running least-squares fit of RTT (µs, relative to the first sample)
/// against send time (µs from the MI's start); the offsets keep the sums
/// small enough for f64.
#[derive(Debug, Clone, Default)]
struct Fit {
    y0: Option<f64>,
    n: f64,
    sx: f64,
    sy: f64,
    sxx: f64,
    sxy: f64,
    syy: f64,
}

impl Fit {
    fn add(&mut self, x_us: f64, rtt_us: f64) {
        let y = rtt_us - *self.y0.get_or_insert(rtt_us);
        self.n += 1.0;
        self.sx += x_us;
        self.sy += y;
        self.sxx += x_us * x_us;
        self.sxy += x_us * y;
        self.syy += y * y;
    }
    fn centred(&self) -> (f64, f64, f64) {
        let n = self.n;
        (self.sxx - self.sx * self.sx / n, self.sxy - self.sx * self.sy / n, self.syy - self.sy * self.sy / n)
    }
    fn slope(&self) -> f64 {
        if self.n < 2.0 {
            return 0.0;
        }
        let (cxx, cxy, _) = self.centred();
        if cxx.abs() < f64::EPSILON {
            0.0
        } else {
            cxy / cxx
        }
    }
    /// RMS residual over the mean RTT.
    fn rel_error(&self) -> f64 {
        if self.n < 2.0 {
            return 0.0;
        }
        let (cxx, cxy, cyy) = self.centred();
        let sse = if cxx.abs() < f64::EPSILON { cyy } else { cyy - cxy * cxy / cxx };
        let mean_rtt = self.y0.unwrap_or(0.0) + self.sy / self.n;
        if mean_rtt <= 0.0 {
            0.0
        } else {
            (sse.max(0.0) / self.n).sqrt() / mean_rtt
        }
    }
}

#[derive(Debug, Clone)]
struct Mi {
    id: u64,
    rate_bps: f64,
    start_ns: u64,
    /// Planned duration (the MI may run longer, see [`Monitor::due`]).
    planned_ns: u64,
    /// When the next MI took over (None while this one is sending).
    closed_ns: Option<u64>,
    first_sent_ns: Option<u64>,
    last_sent_ns: u64,
    sent_pkts: u64,
    sent_bytes: u64,
    acked: u64,
    lost: u64,
    fit: Fit,
    /// srtt before the first own RTT sample (0 until then).
    srtt_start_ns: f64,
}

impl Mi {
    fn settled(&self) -> bool {
        self.acked.saturating_add(self.lost) >= self.sent_bytes
    }
}

/// Sizing rules for MIs. Defaults follow PCC-Uspace: one RTT (NSDI'18
/// branch `CUDT::start_monitor`: `1.0·m_iRTT` worth of packets, clamped to
/// 10..3000 packets; master `pcc_sender.cpp`: `monitor_duration_ = min_rtt`)
/// and at least four own RTT samples before the MI ends.
#[derive(Debug, Clone, PartialEq)]
pub struct MiTiming {
    /// Planned MI length as a multiple of srtt.
    pub rtt_mult: f64,
    /// ... but at least this many packets at the MI's rate ...
    pub min_pkts: f64,
    /// ... and at most this many.
    pub max_pkts: f64,
    /// An MI keeps sending until it holds this many RTT samples of its own.
    pub min_rtt_samples: u32,
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
    /// The datapath reports settled packets one by one.
    per_packet: bool,
}

impl Monitor {
    pub fn new(timing: MiTiming) -> Self {
        Monitor { timing, mis: VecDeque::new(), next_id: 0, rtt: RttEstimator::default(), per_packet: false }
    }

    pub fn srtt_ns(&self) -> f64 {
        self.rtt.srtt_ns().unwrap_or(self.timing.init_rtt_ns)
    }

    fn pkt_time_ns(&self, rate_bps: f64) -> f64 {
        if rate_bps > 0.0 {
            self.timing.mss * 8.0 / rate_bps * 1e9
        } else {
            0.0
        }
    }

    /// Planned MI length: `rtt_mult·srtt`, within `min_pkts..max_pkts`
    /// packets at `rate`.
    pub fn duration_ns(&self, rate_bps: f64) -> u64 {
        let pkt = self.pkt_time_ns(rate_bps);
        let by_rtt = self.timing.rtt_mult * self.srtt_ns();
        let lo = self.timing.min_pkts * pkt;
        let hi = (self.timing.max_pkts * pkt).max(lo);
        by_rtt.clamp(lo, hi).clamp(1.0, 3.6e12) as u64
    }

    /// True when a new MI must start at `now`: the current one has lasted
    /// its planned time and holds enough RTT samples of its own. An MI
    /// that gets no samples (all its packets lost, or the path went
    /// silent) ends anyway after twice its planned time plus two srtt, so
    /// a black hole cannot pin the sender to one rate.
    pub fn due(&self, now_ns: u64) -> bool {
        let Some(m) = self.mis.back() else { return true };
        let age = now_ns.saturating_sub(m.start_ns);
        if age < m.planned_ns {
            return false;
        }
        let cap = 2 * m.planned_ns + (2.0 * self.srtt_ns()) as u64;
        m.fit.n as u32 >= self.timing.min_rtt_samples || age >= cap
    }

    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    pub fn open(&mut self, now_ns: u64, rate_bps: f64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        if let Some(prev) = self.mis.back_mut() {
            prev.closed_ns = Some(now_ns);
        }
        let planned_ns = self.duration_ns(rate_bps);
        self.mis.push_back(Mi {
            id,
            rate_bps,
            start_ns: now_ns,
            planned_ns,
            closed_ns: None,
            first_sent_ns: None,
            last_sent_ns: now_ns,
            sent_pkts: 0,
            sent_bytes: 0,
            acked: 0,
            lost: 0,
            fit: Fit::default(),
            srtt_start_ns: 0.0,
        });
        id
    }

    /// Rate of the MI currently sending.
    pub fn current_rate(&self) -> Option<f64> {
        self.mis.back().map(|m| m.rate_bps)
    }

    /// A packet left; it belongs to the MI sending now.
    pub fn on_send(&mut self, now_ns: u64, bytes: u64) {
        if let Some(m) = self.mis.back_mut() {
            m.first_sent_ns.get_or_insert(now_ns);
            m.last_sent_ns = now_ns;
            m.sent_pkts += 1;
            m.sent_bytes = m.sent_bytes.saturating_add(bytes);
        }
    }

    /// The MI that was sending at `t_ns`. Fates of packets older than every
    /// open MI belong to MIs already scored and are dropped, as in
    /// PCC-Uspace.
    fn find(&mut self, t_ns: u64) -> Option<&mut Mi> {
        let i = self.mis.partition_point(|m| m.start_ns <= t_ns).checked_sub(1)?;
        self.mis.get_mut(i)
    }

    pub fn on_packet_acked(&mut self, sent_ns: u64, bytes: u64) {
        self.per_packet = true;
        if let Some(m) = self.find(sent_ns) {
            m.acked = m.acked.saturating_add(bytes);
        }
    }

    pub fn on_packet_lost(&mut self, sent_ns: u64, bytes: u64) {
        self.per_packet = true;
        if let Some(m) = self.find(sent_ns) {
            m.lost = m.lost.saturating_add(bytes);
        }
    }

    pub fn on_ack(&mut self, s: &AckSample) {
        let srtt_before = self.srtt_ns();
        if let Some(r) = s.rtt_ns {
            self.rtt.update(r);
        }
        // The RTT sample is the echo of the packet sent at now − rtt.
        let back = s.rtt_ns.unwrap_or(self.srtt_ns() as u64);
        let sent_at = s.now_ns.saturating_sub(back);
        let per_packet = self.per_packet;
        if let Some(m) = self.find(sent_at) {
            if !per_packet {
                m.acked = m.acked.saturating_add(s.acked_bytes);
            }
            if let Some(r) = s.rtt_ns {
                if m.fit.n == 0.0 {
                    m.srtt_start_ns = srtt_before;
                }
                m.fit.add(sent_at.saturating_sub(m.start_ns) as f64 / 1e3, r as f64 / 1e3);
            }
        }
    }

    /// Aggregate loss report; used only when packets are not reported one
    /// by one. A loss older than every open MI is charged to the oldest,
    /// because late detection must not make a rate look loss-free.
    pub fn on_loss(&mut self, now_ns: u64, lost_bytes: u64) {
        if self.per_packet {
            return;
        }
        let sent_at = now_ns.saturating_sub(self.srtt_ns() as u64);
        let i = self.mis.partition_point(|m| m.start_ns <= sent_at).saturating_sub(1);
        if let Some(m) = self.mis.get_mut(i) {
            m.lost = m.lost.saturating_add(lost_bytes);
        }
    }

    /// Closed MIs whose every packet is settled, oldest first; results are
    /// handed out in MI order (PCC-Uspace scores the queue front first).
    /// Without per-packet reports an MI is taken `1.25·srtt` after it
    /// closed. Either way an MI closed for `4·srtt + 1 s` is taken as it
    /// is, so a packet whose fate never comes cannot stall the controller.
    pub fn take_finished(&mut self, now_ns: u64) -> Vec<MiStats> {
        let srtt = self.srtt_ns();
        let grace = (1.25 * srtt) as u64;
        let give_up = (4.0 * srtt + 1e9) as u64;
        let mut out = Vec::new();
        while let Some(m) = self.mis.front() {
            let Some(closed) = m.closed_ns else { break };
            let waited = now_ns.saturating_sub(closed);
            let ready = if self.per_packet { m.settled() } else { waited >= grace };
            if !ready && waited < give_up {
                break;
            }
            if let Some(m) = self.mis.pop_front() {
                out.push(self.stats(&m));
            }
        }
        out
    }

    fn stats(&self, m: &Mi) -> MiStats {
        let span = m.first_sent_ns.map_or(0, |f| m.last_sent_ns.saturating_sub(f)) as f64;
        MiStats {
            id: m.id,
            rate_bps: m.rate_bps,
            duration_ns: span + self.pkt_time_ns(m.rate_bps),
            sent_pkts: m.sent_pkts,
            sent_bytes: m.sent_bytes,
            acked_bytes: m.acked,
            lost_bytes: m.lost,
            rtt_gradient: m.fit.slope(),
            rtt_gradient_error: m.fit.rel_error(),
            rtt_samples: m.fit.n as u32,
            srtt_start_ns: m.srtt_start_ns,
            srtt_end_ns: self.srtt_ns(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults: 1 srtt, 10..3000 packets, 4 samples; 10 ms, 1000 B.
    fn monitor() -> Monitor {
        Monitor::new(super::super::control::tests::common().timing)
    }

    fn ack(now_ns: u64, rtt_ns: u64) -> AckSample {
        AckSample { now_ns, acked_bytes: 1000, rtt_ns: Some(rtt_ns), ..Default::default() }
    }

    #[test]
    fn duration_is_one_srtt_within_10_to_3000_packets() {
        let m = monitor();
        // 1 x 10 ms; 10 pkts at 100 Mbit/s = 0.8 ms; 3000 pkts = 240 ms.
        assert_eq!(m.duration_ns(100e6), 10_000_000);
        // 10 pkts at 1 Mbit/s = 80 ms > 10 ms.
        assert_eq!(m.duration_ns(1e6), 80_000_000);
        // 3000 pkts at 10 Gbit/s = 2.4 ms < 10 ms.
        assert_eq!(m.duration_ns(10e9), 2_400_000);
    }

    #[test]
    fn mi_ends_only_with_four_rtt_samples_of_its_own() {
        let mut m = monitor();
        m.open(0, 100e6);
        for t in (0..30_000_000).step_by(80_000) {
            m.on_send(t, 1000);
        }
        // Planned 10 ms has passed, but no own sample yet.
        assert!(!m.due(12_000_000));
        for i in 0..3u64 {
            m.on_ack(&ack(10_000_000 + i * 80_000, 10_000_000));
        }
        assert!(!m.due(12_000_000), "three samples are not enough");
        m.on_ack(&ack(10_240_000, 10_000_000));
        assert!(m.due(12_000_000));
    }

    #[test]
    fn silent_mi_ends_after_its_cap() {
        let mut m = monitor();
        m.open(0, 100e6);
        m.on_send(0, 1000);
        // cap = 2 * 10 ms + 2 * srtt (10 ms) = 40 ms.
        assert!(!m.due(39_999_999));
        assert!(m.due(40_000_000));
    }

    #[test]
    fn packets_are_charged_to_the_mi_that_sent_them() {
        let mut m = monitor();
        m.open(0, 100e6);
        m.on_send(0, 1000);
        m.on_send(5_000_000, 1000);
        m.open(10_000_000, 200e6);
        m.on_send(10_000_000, 1000);
        m.on_send(15_000_000, 1000);
        // MI 1 is sending; fates of MI 0's packets arrive now.
        m.on_packet_acked(5_000_000, 1000);
        m.on_packet_lost(0, 1000);
        m.on_packet_acked(10_000_000, 1000);
        m.open(20_000_000, 100e6);
        let done = m.take_finished(20_000_000);
        assert_eq!(done.len(), 1, "MI 1 still has a packet out");
        let s = &done[0];
        assert_eq!((s.id, s.sent_pkts, s.acked_bytes, s.lost_bytes), (0, 2, 1000, 1000));
        assert_eq!(s.loss_rate(), 0.5);
        // 5 ms span + one packet at 100 Mbit/s (80 us).
        assert_eq!(s.duration_ns, 5_080_000.0);
        m.on_packet_lost(15_000_000, 1000);
        let done = m.take_finished(20_000_001);
        assert_eq!((done[0].id, done[0].acked_bytes, done[0].lost_bytes), (1, 1000, 1000));
        // A fate older than every open MI is dropped, not misfiled.
        m.on_packet_lost(1, 1000);
        m.open(30_000_000, 1e6);
        let done = m.take_finished(30_000_000);
        assert_eq!(done[0].lost_bytes, 0);
    }

    #[test]
    fn all_lost_mi_scores_full_loss_not_void() {
        let mut m = monitor();
        m.open(0, 100e6);
        for t in [0, 1_000, 2_000] {
            m.on_send(t, 1000);
        }
        m.open(50_000_000, 100e6);
        for t in [0, 1_000, 2_000] {
            m.on_packet_lost(t, 1000);
        }
        let s = &m.take_finished(50_000_000)[0];
        assert!(!s.is_void());
        assert_eq!(s.loss_rate(), 1.0);
        assert_eq!(s.throughput_bps(), 0.0);
    }

    #[test]
    fn unsettled_mi_is_taken_after_the_safety_deadline() {
        let mut m = monitor();
        m.open(0, 100e6);
        m.on_send(0, 1000);
        m.on_send(1, 1000);
        m.on_packet_acked(0, 1000);
        m.open(10_000_000, 100e6);
        assert!(m.take_finished(1_000_000_000).is_empty());
        // 4 * 10 ms + 1 s after closing.
        let s = &m.take_finished(1_050_000_000)[0];
        assert_eq!((s.acked_bytes, s.lost_bytes, s.sent_bytes), (1000, 0, 2000));
    }

    #[test]
    fn without_packet_reports_feedback_is_estimated_by_time() {
        let mut m = monitor();
        m.open(0, 100e6);
        m.on_send(0, 1000);
        m.on_send(9_000_000, 1000);
        m.open(10_000_000, 200e6);
        m.on_send(10_000_000, 1000);
        // RTT 10 ms: the ACK at 19 ms is for data sent at 9 ms -> MI 0.
        m.on_ack(&ack(19_000_000, 10_000_000));
        // Loss at 20 ms: sent at ~10 ms -> MI 1.
        m.on_loss(20_000_000, 500);
        assert!(m.take_finished(22_400_000).is_empty(), "MI 0 closed at 10 ms + 12.5 ms grace");
        let s = &m.take_finished(22_500_000)[0];
        assert_eq!((s.id, s.acked_bytes, s.lost_bytes), (0, 1000, 0));
    }

    #[test]
    fn srtt_is_recorded_before_the_first_own_sample_and_when_scored() {
        let mut m = monitor();
        // An echo of data sent before any MI moves srtt to 10 ms.
        m.on_ack(&ack(50_000_000, 10_000_000));
        m.open(100_000_000, 100e6);
        m.on_send(100_000_000, 1000);
        m.on_send(101_000_000, 1000);
        // MI 0's first own sample: srtt was 10 ms before it; 18 ms moves
        // srtt by 1/8 of the gap to 11 ms, the next to 11.875 ms.
        m.on_ack(&ack(118_000_000, 18_000_000));
        m.on_ack(&ack(119_000_000, 18_000_000));
        m.open(120_000_000, 100e6);
        let s = &m.take_finished(200_000_000)[0];
        assert_eq!((s.srtt_start_ns, s.srtt_end_ns), (10_000_000.0, 11_875_000.0));
    }

    #[test]
    fn rtt_gradient_is_a_least_squares_slope_with_its_error() {
        let mut m = monitor();
        m.open(0, 100e6);
        // RTT rises 1 us per 100 us of send time: slope 0.01, no residual.
        for i in 0..10u64 {
            let sent = i * 100_000;
            m.on_send(sent, 1000);
            let rtt = 10_000_000 + i * 1_000;
            m.on_ack(&ack(sent + rtt, rtt));
        }
        m.open(100_000_000, 100e6);
        let s = &m.take_finished(2_000_000_000)[0];
        assert_eq!(s.rtt_samples, 10);
        assert!((s.rtt_gradient - 0.01).abs() < 1e-9, "{}", s.rtt_gradient);
        assert!(s.rtt_gradient_error < 1e-9);
    }
}
