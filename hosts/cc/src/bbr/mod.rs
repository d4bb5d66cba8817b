//! BBR (Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM
//! Queue 14(5), 2016) in two versions:
//!
//! * [`v1`] (`bbr`): BBRv1 as Linux's `net/ipv4/tcp_bbr.c` behaves, in the
//!   kernel's own fixed-point units (packets, µs, `BW_SCALE`/`BBR_SCALE`);
//! * [`v3`] (`bbr3`): BBRv3 as draft-ietf-ccwg-bbr-06 specifies it, in
//!   bytes and seconds as the draft recommends (§2), with the ECN response
//!   of Google's BBRv3 code (github.com/google/bbr, branch v3), which the
//!   draft leaves open (§3.7).
//!
//! Both sit on the pieces of this module:
//!
//! * [`RateSampler`]: the delivery-rate estimator of
//!   draft-cheng-iccrg-delivery-rate-estimation (draft-ietf-ccwg-bbr-06
//!   §4.1; Linux `tcp_rate.c`), built from `on_send` and
//!   `on_packet_acked`/`on_packet_lost`: per-packet state is kept in send
//!   order, and a delivery named by its send time settles the oldest
//!   unsettled packet sent at that time;
//! * [`WindowedMax`]: Kathleen Nichols' windowed max filter as Linux's
//!   `lib/win_minmax.c` runs it (best, 2nd and 3rd best in the window);
//! * [`Rng`]: a seeded generator for the randomised choices (v1's start
//!   phase, v3's probe wait).

use std::collections::VecDeque;

pub mod v1;
pub mod v3;

/// Per-packet state recorded at transmission (draft-ietf-ccwg-bbr-06
/// §4.1.2.1.2; `tcp_rate_skb_sent`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SentPacket {
    /// Send order (`P.packet_id`).
    pub index: u64,
    /// `P.send_time`: the `now` of the `on_send` that sent it, ns.
    pub sent_ns: u64,
    pub bytes: u64,
    /// Segments this transmission counts for (1 for an MTU-sized packet).
    pub pkts: u64,
    /// `P.delivered` (bytes / packets) and CE-marked bytes delivered.
    pub delivered_bytes: u64,
    pub delivered_pkts: u64,
    pub delivered_ce_bytes: u64,
    /// `P.delivered_time`, ns.
    pub delivered_time: u64,
    /// `P.first_send_time`, ns.
    pub first_send_time: u64,
    /// `P.lost` (bytes / packets).
    pub lost_bytes: u64,
    pub lost_pkts: u64,
    /// `P.tx_in_flight`: in flight right after this packet was sent.
    pub tx_in_flight_bytes: u64,
    pub tx_in_flight_pkts: u64,
    /// `P.is_app_limited`.
    pub app_limited: bool,
    settled: bool,
}

/// What one ACK taught the estimator (`RS` of draft-ietf-ccwg-bbr-06
/// §4.1.2.1.3, Linux `struct rate_sample`). `has_data` is false when no
/// packet with recorded state was delivered by the ACK; `interval_ns` is
/// `None` when no rate can be computed (`rs->interval_us = -1`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateSample {
    pub has_data: bool,
    /// Newly delivered by this ACK (`RS.newly_acked`, `rs->acked_sacked`).
    pub newly_acked_bytes: u64,
    pub newly_acked_pkts: u64,
    /// Newly declared lost since the previous ACK (`RS.newly_lost`,
    /// `rs->losses`).
    pub newly_lost_bytes: u64,
    pub newly_lost_pkts: u64,
    /// Of the newest packet delivered: `P.delivered`, `P.delivered_time`.
    pub prior_delivered_bytes: u64,
    pub prior_delivered_pkts: u64,
    pub prior_time: u64,
    pub send_elapsed_ns: u64,
    pub ack_elapsed_ns: u64,
    /// `max(send_elapsed, ack_elapsed)`, unless below the connection's
    /// minimum RTT.
    pub interval_ns: Option<u64>,
    /// Delivered over the sampling interval (`C.delivered - P.delivered`).
    pub delivered_bytes: u64,
    pub delivered_pkts: u64,
    pub delivered_ce_bytes: u64,
    pub is_app_limited: bool,
    /// `RS.tx_in_flight` and `RS.lost` (`C.lost - P.lost`) of the newest
    /// packet delivered.
    pub tx_in_flight_bytes: u64,
    pub tx_in_flight_pkts: u64,
    pub lost_bytes: u64,
    pub lost_pkts: u64,
    /// Send time of the newest packet delivered (its RTT is `now − this`).
    pub newest_sent_ns: u64,
    /// In flight before this ACK was processed (`rs->prior_in_flight`).
    pub prior_in_flight_bytes: u64,
    pub prior_in_flight_pkts: u64,
}

/// More unsettled packets than any real window: the oldest are forgotten
/// (a datapath that never reports them must not grow memory forever).
const MAX_TRACKED: usize = 1 << 20;

/// The delivery-rate estimator (draft-ietf-ccwg-bbr-06 §4.1.2).
#[derive(Debug, Clone)]
pub struct RateSampler {
    mss: u64,
    queue: VecDeque<SentPacket>,
    next_index: u64,
    /// Send times never went backwards, so the queue is sorted by them.
    sorted: bool,
    last_sent_ns: u64,
    /// `C.delivered`, `C.delivered_time`, `C.first_send_time`, `C.lost`.
    pub delivered_bytes: u64,
    pub delivered_pkts: u64,
    pub delivered_ce_bytes: u64,
    pub delivered_time: u64,
    first_send_time: u64,
    pub lost_bytes: u64,
    pub lost_pkts: u64,
    /// `C.inflight`: sent, neither delivered nor declared lost.
    pub inflight_bytes: u64,
    pub inflight_pkts: u64,
    /// `C.app_limited`: the bubble has passed once `delivered_pkts`
    /// exceeds it; 0 = not application-limited.
    pub app_limited: u64,
    cur: RateSample,
    /// An ACK's per-packet events have begun (prior_in_flight captured).
    in_ack: bool,
    last_acked_index: u64,
    /// Recovery bookkeeping: packets sent before `recovery_point` were
    /// outstanding when recovery began; `repaired` counts deliveries of
    /// packets sent since, `lost_at_cut` the losses before.
    recovery_point: u64,
    repaired: u64,
    lost_at_cut: u64,
    /// The datapath reports deliveries / losses per packet; once seen, the
    /// byte counts of `on_ack`/`on_loss` are not turned into packets.
    pub per_packet_acks: bool,
    pub per_packet_losses: bool,
}

impl RateSampler {
    pub fn new(mss: u64) -> Self {
        RateSampler {
            mss: mss.max(1),
            queue: VecDeque::new(),
            next_index: 1,
            sorted: true,
            last_sent_ns: 0,
            delivered_bytes: 0,
            delivered_pkts: 0,
            delivered_ce_bytes: 0,
            delivered_time: 0,
            first_send_time: 0,
            lost_bytes: 0,
            lost_pkts: 0,
            inflight_bytes: 0,
            inflight_pkts: 0,
            app_limited: 0,
            cur: RateSample::default(),
            in_ack: false,
            last_acked_index: 0,
            recovery_point: 0,
            repaired: 0,
            lost_at_cut: 0,
            per_packet_acks: false,
            per_packet_losses: false,
        }
    }

    fn pkts_of(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.mss).max(1)
    }

    /// Index the next transmission will get; every packet with a smaller
    /// index was sent before.
    pub fn next_index(&self) -> u64 {
        self.next_index
    }

    /// Index of the oldest packet neither delivered nor lost (the next
    /// index when none is).
    pub fn oldest_unsettled(&self) -> u64 {
        self.queue.iter().find(|p| !p.settled).map_or(self.next_index, |p| p.index)
    }

    /// `OnPacketSent` (§4.1.2.2): snapshot the delivery state in the packet.
    pub fn on_send(&mut self, now: u64, bytes: u64) -> SentPacket {
        let pkts = self.pkts_of(bytes);
        if self.inflight_pkts == 0 {
            self.first_send_time = now;
            self.delivered_time = now;
        }
        if now < self.last_sent_ns {
            self.sorted = false;
        }
        self.last_sent_ns = now;
        self.inflight_bytes = self.inflight_bytes.saturating_add(bytes);
        self.inflight_pkts = self.inflight_pkts.saturating_add(pkts);
        let p = SentPacket {
            index: self.next_index,
            sent_ns: now,
            bytes,
            pkts,
            delivered_bytes: self.delivered_bytes,
            delivered_pkts: self.delivered_pkts,
            delivered_ce_bytes: self.delivered_ce_bytes,
            delivered_time: self.delivered_time,
            first_send_time: self.first_send_time,
            lost_bytes: self.lost_bytes,
            lost_pkts: self.lost_pkts,
            tx_in_flight_bytes: self.inflight_bytes,
            tx_in_flight_pkts: self.inflight_pkts,
            app_limited: self.app_limited != 0,
            settled: false,
        };
        self.next_index += 1;
        self.queue.push_back(p);
        if self.queue.len() > MAX_TRACKED {
            if let Some(old) = self.queue.pop_front() {
                if !old.settled {
                    self.inflight_bytes = self.inflight_bytes.saturating_sub(old.bytes);
                    self.inflight_pkts = self.inflight_pkts.saturating_sub(old.pkts);
                }
            }
        }
        p
    }

    /// Loss recovery begins now (fast recovery or RTO), triggered by the
    /// latest `trigger_lost_pkts` losses: everything sent so far must be
    /// settled, and those losses and any later ones repaired.
    pub fn start_recovery(&mut self, trigger_lost_pkts: u64) {
        self.recovery_point = self.next_index;
        self.repaired = 0;
        self.lost_at_cut = self.lost_pkts.saturating_sub(trigger_lost_pkts);
    }

    /// Whether recovery is over: every packet sent before it began is
    /// settled, and as many packets sent since have been delivered as were
    /// lost since (the retransmissions, which a sender sends first). This
    /// stands in for TCP's "SND.UNA passed the `high_seq` of the recovery".
    pub fn recovery_done(&self) -> bool {
        self.oldest_unsettled() >= self.recovery_point
            && self.repaired >= self.lost_pkts.saturating_sub(self.lost_at_cut)
    }

    /// `MarkConnectionAppLimited` (§4.1.2.4).
    pub fn mark_app_limited(&mut self) {
        self.app_limited = self.delivered_pkts.saturating_add(self.inflight_pkts).max(1);
    }

    fn begin_ack(&mut self) {
        if !self.in_ack {
            self.in_ack = true;
            self.cur.prior_in_flight_bytes = self.inflight_bytes;
            self.cur.prior_in_flight_pkts = self.inflight_pkts;
        }
    }

    /// The oldest unsettled packet sent at `sent_ns`.
    fn find(&self, sent_ns: u64) -> Option<usize> {
        let start = self.queue.partition_point(|p| p.sent_ns < sent_ns);
        for i in start..self.queue.len() {
            let p = &self.queue[i];
            if p.sent_ns != sent_ns {
                break;
            }
            if !p.settled {
                return Some(i);
            }
        }
        if self.sorted {
            return None;
        }
        self.queue.iter().position(|p| p.sent_ns == sent_ns && !p.settled)
    }

    fn settle(&mut self, i: usize) -> SentPacket {
        let p = &mut self.queue[i];
        p.settled = true;
        let p = *p;
        self.inflight_bytes = self.inflight_bytes.saturating_sub(p.bytes);
        self.inflight_pkts = self.inflight_pkts.saturating_sub(p.pkts);
        while self.queue.front().is_some_and(|p| p.settled) {
            self.queue.pop_front();
        }
        p
    }

    fn deliver(&mut self, now: u64, p: Option<SentPacket>, bytes: u64, pkts: u64) {
        self.delivered_bytes = self.delivered_bytes.saturating_add(bytes);
        self.delivered_pkts = self.delivered_pkts.saturating_add(pkts);
        self.delivered_time = now;
        self.cur.newly_acked_bytes = self.cur.newly_acked_bytes.saturating_add(bytes);
        self.cur.newly_acked_pkts = self.cur.newly_acked_pkts.saturating_add(pkts);
        let Some(p) = p else { return };
        if p.index >= self.recovery_point {
            self.repaired = self.repaired.saturating_add(p.pkts);
        }
        // UpdateRateSample (§4.1.2.3): the newest packet delivered names the
        // sample (IsNewestPacket).
        let newest = p.sent_ns > self.first_send_time
            || (p.sent_ns == self.first_send_time && p.index > self.last_acked_index);
        if !self.cur.has_data || newest {
            self.cur.has_data = true;
            self.cur.prior_delivered_bytes = p.delivered_bytes;
            self.cur.prior_delivered_pkts = p.delivered_pkts;
            self.cur.prior_time = p.delivered_time;
            self.cur.is_app_limited = p.app_limited;
            self.cur.send_elapsed_ns = p.sent_ns.saturating_sub(p.first_send_time);
            self.cur.ack_elapsed_ns = now.saturating_sub(p.delivered_time);
            self.cur.tx_in_flight_bytes = p.tx_in_flight_bytes;
            self.cur.tx_in_flight_pkts = p.tx_in_flight_pkts;
            self.cur.newest_sent_ns = p.sent_ns;
            // P's counters; `generate` turns them into differences.
            self.cur.delivered_ce_bytes = p.delivered_ce_bytes;
            self.cur.lost_bytes = p.lost_bytes;
            self.cur.lost_pkts = p.lost_pkts;
            self.last_acked_index = p.index;
            self.first_send_time = p.sent_ns;
        }
    }

    /// One packet newly delivered, named by its send time. Returns its
    /// recorded state when it was known and not yet settled.
    pub fn on_packet_acked(&mut self, now: u64, sent_ns: u64, bytes: u64) -> Option<SentPacket> {
        self.per_packet_acks = true;
        self.begin_ack();
        match self.find(sent_ns) {
            Some(i) => {
                let p = self.settle(i);
                self.deliver(now, Some(p), p.bytes, p.pkts);
                Some(p)
            }
            None => {
                // Unknown (or already declared lost): it still counts as
                // delivered, but cannot name a rate sample.
                let pkts = self.pkts_of(bytes);
                self.deliver(now, None, bytes, pkts);
                None
            }
        }
    }

    /// `acked_bytes` delivered without per-packet reports: settle the
    /// oldest unsettled packets in send order.
    pub fn deliver_oldest(&mut self, now: u64, acked_bytes: u64) {
        self.begin_ack();
        let mut left = acked_bytes;
        while left > 0 {
            let Some(i) = self.queue.iter().position(|p| !p.settled) else {
                let pkts = self.pkts_of(left);
                self.deliver(now, None, left, pkts);
                return;
            };
            let p = self.settle(i);
            self.deliver(now, Some(p), p.bytes, p.pkts);
            left = left.saturating_sub(p.bytes.max(1));
        }
    }

    fn lose(&mut self, bytes: u64, pkts: u64) {
        self.lost_bytes = self.lost_bytes.saturating_add(bytes);
        self.lost_pkts = self.lost_pkts.saturating_add(pkts);
        self.cur.newly_lost_bytes = self.cur.newly_lost_bytes.saturating_add(bytes);
        self.cur.newly_lost_pkts = self.cur.newly_lost_pkts.saturating_add(pkts);
    }

    /// One packet newly declared lost, named by its send time.
    pub fn on_packet_lost(&mut self, sent_ns: u64, bytes: u64) -> Option<SentPacket> {
        self.per_packet_losses = true;
        self.begin_ack();
        match self.find(sent_ns) {
            Some(i) => {
                let p = self.settle(i);
                self.lose(p.bytes, p.pkts);
                Some(p)
            }
            None => {
                let pkts = self.pkts_of(bytes);
                self.lose(bytes, pkts);
                None
            }
        }
    }

    /// `lost_bytes` declared lost without per-packet reports: the oldest
    /// unsettled packets are the ones missing.
    pub fn lose_oldest(&mut self, lost_bytes: u64) -> Vec<SentPacket> {
        self.begin_ack();
        let mut out = Vec::new();
        let mut left = lost_bytes;
        while left > 0 {
            let Some(i) = self.queue.iter().position(|p| !p.settled) else {
                let pkts = self.pkts_of(left);
                self.lose(left, pkts);
                break;
            };
            let p = self.settle(i);
            self.lose(p.bytes, p.pkts);
            left = left.saturating_sub(p.bytes.max(1));
            out.push(p);
        }
        out
    }

    /// Everything in flight declared lost (a retransmission timeout on a
    /// datapath without per-packet reports).
    pub fn lose_all(&mut self) -> Vec<SentPacket> {
        self.lose_oldest(self.inflight_bytes.max(u64::from(self.inflight_pkts > 0)))
    }

    /// Packets declared lost since the last ACK.
    pub fn pending_lost_pkts(&self) -> u64 {
        self.cur.newly_lost_pkts
    }

    /// Forget the per-ACK accumulation (losses marked by a timer are not
    /// any ACK's `newly_lost`).
    pub fn clear_pending(&mut self) {
        self.cur = RateSample::default();
        self.in_ack = false;
    }

    /// `GenerateRateSample` (§4.1.2.3) at the end of an ACK's per-packet
    /// events. `min_rtt_ns` is the connection's minimum RTT (`C.min_rtt`,
    /// Linux `tcp_min_rtt`): shorter intervals give no sample.
    pub fn generate(&mut self, ce_bytes: u64, min_rtt_ns: Option<u64>) -> RateSample {
        self.begin_ack();
        self.delivered_ce_bytes = self.delivered_ce_bytes.saturating_add(ce_bytes);
        if self.app_limited != 0 && self.delivered_pkts > self.app_limited {
            self.app_limited = 0;
        }
        let mut rs = std::mem::take(&mut self.cur);
        self.in_ack = false;
        if !rs.has_data {
            rs.interval_ns = None;
            rs.delivered_ce_bytes = 0;
            rs.lost_bytes = 0;
            rs.lost_pkts = 0;
            return rs;
        }
        rs.delivered_bytes = self.delivered_bytes.saturating_sub(rs.prior_delivered_bytes);
        rs.delivered_pkts = self.delivered_pkts.saturating_sub(rs.prior_delivered_pkts);
        rs.delivered_ce_bytes = self.delivered_ce_bytes.saturating_sub(rs.delivered_ce_bytes);
        rs.lost_bytes = self.lost_bytes.saturating_sub(rs.lost_bytes);
        rs.lost_pkts = self.lost_pkts.saturating_sub(rs.lost_pkts);
        let interval = rs.send_elapsed_ns.max(rs.ack_elapsed_ns);
        rs.interval_ns = if min_rtt_ns.is_some_and(|m| interval < m) { None } else { Some(interval) };
        rs
    }
}

/// A windowed max filter (Kathleen Nichols' algorithm, Linux
/// `lib/win_minmax.c`): the best, 2nd best and 3rd best samples of the
/// window, kept apart in time, so the max of the window is known in
/// constant space. Time is whatever the caller counts (BBR: rounds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowedMax {
    s: [(u64, u64); 3], // (time, value)
}

impl WindowedMax {
    pub fn get(&self) -> u64 {
        self.s[0].1
    }

    pub fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [(t, v); 3];
        v
    }

    /// `minmax_running_max(m, win, t, meas)`.
    pub fn update(&mut self, win: u64, t: u64, v: u64) -> u64 {
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if v >= self.s[2].1 {
            self.s[2] = (t, v);
        }
        // Age the choices (minmax_subwin_update).
        let dt = t.wrapping_sub(self.s[0].0);
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = (t, v);
            if t.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = (t, v);
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            self.s[2] = (t, v);
        }
        self.s[0].1
    }
}

/// splitmix64: deterministic per seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`get_random_u32_below(n)`); 0 when `n == 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The connection's minimum RTT (`C.min_rtt`; Linux `tcp_min_rtt`, a
/// windowed min over `sysctl_tcp_min_rtt_wlen` = 300 s), used to reject
/// rate samples over intervals shorter than any RTT.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnMinRtt {
    min_ns: Option<u64>,
    stamp: u64,
}

impl ConnMinRtt {
    const WINDOW_NS: u64 = 300_000_000_000;
    pub fn update(&mut self, now: u64, rtt_ns: u64) {
        let expired = now.saturating_sub(self.stamp) > Self::WINDOW_NS;
        if self.min_ns.is_none_or(|m| rtt_ns <= m) || expired {
            self.min_ns = Some(rtt_ns);
            self.stamp = now;
        }
    }
    pub fn get(&self) -> Option<u64> {
        self.min_ns
    }
}

/// TCP's congestion-avoidance state as BBR sees it (`icsk_ca_state`):
/// open, fast recovery after loss detection, or recovery after a
/// retransmission timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    Open,
    Recovery,
    Loss,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `lib/win_minmax.c`: a new max resets the window; an older max
    /// expires once `win` time units pass without a better sample.
    #[test]
    fn windowed_max_forgets_after_the_window() {
        let mut m = WindowedMax::default();
        m.reset(0, 0);
        assert_eq!(m.update(10, 0, 100), 100);
        for t in 1..=10 {
            assert_eq!(m.update(10, t, 50), 100, "t={t}: still within the window");
        }
        assert_eq!(m.update(10, 11, 50), 50, "the max of round 0 aged out");
        assert_eq!(m.update(10, 12, 70), 70);
        assert_eq!(m.update(10, 13, 10), 70);
    }

    /// draft-ietf-ccwg-bbr-06 §4.1.2: a sample spans from the ACK before
    /// the newest delivered packet was sent to the ACK that delivers it,
    /// and never over less time than it took to send the flight.
    #[test]
    fn rate_sample_from_send_and_ack_times() {
        let mut r = RateSampler::new(1000);
        // Ten packets sent back to back at t = 0..9 µs.
        for i in 0..10u64 {
            r.on_send(i * 1000, 1000);
        }
        assert_eq!(r.inflight_pkts, 10);
        // The first is delivered at 1 ms: 1 packet over max(0, 1 ms).
        r.on_packet_acked(1_000_000, 0, 1000);
        let rs = r.generate(0, None);
        assert!(rs.has_data);
        assert_eq!((rs.delivered_pkts, rs.interval_ns), (1, Some(1_000_000)));
        assert_eq!(rs.prior_in_flight_pkts, 10);
        assert_eq!(rs.tx_in_flight_pkts, 1);
        // Packets 2..=10 in one stretch ACK at 1.1 ms: the newest (sent at
        // 9 µs, before any ACK) names the sample: 10 delivered since t=0.
        for i in 1..10u64 {
            r.on_packet_acked(1_100_000, i * 1000, 1000);
        }
        let rs = r.generate(0, None);
        assert_eq!(rs.delivered_pkts, 10);
        assert_eq!(rs.interval_ns, Some(1_100_000));
        assert_eq!(rs.newly_acked_pkts, 9);
        assert_eq!(r.inflight_pkts, 0);
        // Several packets may share a send time: the oldest is matched.
        r.on_send(2_000_000, 1000);
        r.on_send(2_000_000, 1000);
        let p = r.on_packet_acked(3_000_000, 2_000_000, 1000).unwrap();
        assert_eq!(p.index, 11);
        let lost = r.on_packet_lost(2_000_000, 1000).unwrap();
        assert_eq!(lost.index, 12);
        let rs = r.generate(0, Some(2_000_000));
        assert_eq!(rs.newly_lost_pkts, 1);
        assert_eq!(rs.interval_ns, None, "1 ms is below the 2 ms minimum RTT");
        assert_eq!(r.lost_pkts, 1);
    }

    /// `tcp_rate_check_app_limited`: samples stay app-limited until the
    /// bubble (everything delivered or in flight when it began) is ACKed.
    #[test]
    fn app_limited_until_the_bubble_is_delivered() {
        let mut r = RateSampler::new(1000);
        r.on_send(0, 1000);
        r.on_send(0, 1000);
        r.mark_app_limited();
        assert_eq!(r.app_limited, 2);
        r.on_send(10, 1000);
        r.on_packet_acked(100, 0, 1000);
        r.on_packet_acked(100, 0, 1000);
        let rs = r.generate(0, None);
        assert!(!rs.is_app_limited, "sent before the bubble");
        assert_eq!(r.app_limited, 2, "2 delivered is not past the bubble");
        r.on_packet_acked(200, 10, 1000);
        let rs = r.generate(0, None);
        assert!(rs.is_app_limited);
        assert_eq!(r.app_limited, 0, "3 delivered: the bubble has passed");
    }
}
