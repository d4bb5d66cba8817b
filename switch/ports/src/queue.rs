//! One egress port: a bmv2-style packet queue followed by a link model.
//!
//! Queue (bmv2 `simple_switch` semantics):
//! - depth limit in packets (default 64), tail drop beyond it, counted;
//! - `enq_qdepth` = queue length at enqueue, before adding the packet;
//! - `deq_qdepth` = queue length at dequeue, after removing it;
//! - `deq_timedelta` = dequeue time − enqueue time.
//!
//! Link (what bmv2 lacks): a packet is dequeued when the link is free (the
//! previous frame has been serialized) and, with a packets/s rate, when its
//! slot has come; its frame then takes `bytes·8/rate_bps` to serialize,
//! travels `delay_us`, and is lost with probability `loss`. Frames are
//! delivered in order. All times are nanoseconds on the caller's clock.
//!
//! Serialization is exact: a frame's time on the wire is rarely a whole
//! number of nanoseconds (1454 bytes at 10 Gbit/s: 1163.2 ns), so the link
//! keeps where, inside its last nanosecond, the previous frame really
//! ended, and a frame sent back to back starts there. The link is free
//! for the next dequeue at the first whole nanosecond after that end. (It
//! once rounded each frame's time down, which sent 1.7 frames in ten
//! thousand more than the line rate at 10 Gbit/s.) [`EgressPort::busy_ns`]
//! says how long the link has spent serializing, to the nanosecond.
use crate::config::PortSettings;
use std::collections::VecDeque;

/// How far behind `now` an idealised departure time may fall before it is
/// clamped. When the switch runs late (descheduled on a loaded machine) the
/// queued packets still leave on the link's schedule, in a burst, so the
/// long-run rate stays exact; the catch-up is naturally bounded by what is
/// queued (a packet never leaves before it arrived), and this bounds it in
/// time too. (A 1 ms bound lost ~10% of a 20 Mbit/s link on a busy 2-core
/// machine.)
pub const MAX_LAG_NS: u64 = 100_000_000;

/// Counters of one port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PortStats {
    /// Frames received on the interface.
    pub rx_pkts: u64,
    pub rx_bytes: u64,
    /// Received frames dropped before the pipeline (truncated by the ring:
    /// larger than the interface MTU, i.e. offloads left on).
    pub rx_dropped: u64,
    /// Packets admitted into the egress queue.
    pub enq_pkts: u64,
    /// Packets refused because the queue was full.
    pub tail_drops: u64,
    /// Frames lost on the link (random loss).
    pub link_loss_drops: u64,
    /// Frames handed to the interface.
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Frames the interface refused.
    pub tx_errors: u64,
    /// Packets dropped from the queue when the pipeline was replaced.
    pub flushed: u64,
    /// Frames the kernel dropped because the receive ring was full (the
    /// switch did not keep up).
    pub ring_drops: u64,
    /// Departures whose ideal time lay more than MAX_LAG_NS in the past.
    pub lag_clamps: u64,
}

/// How late frames left against the link model: each frame's release
/// (the end of its propagation) minus when the caller actually handed it
/// on. A log-linear histogram (8 steps per power of two, ≤ 12.5 % error),
/// so quantiles cost nothing per frame.
#[derive(Debug, Clone)]
pub struct SlipStats {
    buckets: Vec<u64>,
    pub samples: u64,
    pub max_ns: u64,
}

impl Default for SlipStats {
    fn default() -> Self {
        SlipStats { buckets: vec![0; 64 * 8], samples: 0, max_ns: 0 }
    }
}

impl SlipStats {
    fn bucket(x: u64) -> usize {
        if x < 8 {
            return x as usize;
        }
        let msb = 63 - x.leading_zeros() as usize;
        (msb - 2) * 8 + ((x >> (msb - 3)) & 7) as usize
    }

    fn upper(b: usize) -> u64 {
        if b < 8 {
            return b as u64;
        }
        let msb = b / 8 + 2;
        ((8 + (b % 8) as u64 + 1) << (msb - 3)) - 1
    }

    pub fn record(&mut self, slip_ns: u64) {
        self.buckets[Self::bucket(slip_ns)] += 1;
        self.samples += 1;
        self.max_ns = self.max_ns.max(slip_ns);
    }

    /// The q-quantile (0..1), as its bucket's upper bound (0 with no samples).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.samples == 0 {
            return 0;
        }
        let want = ((self.samples as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (b, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= want {
                return Self::upper(b).min(self.max_ns);
            }
        }
        self.max_ns
    }
}

/// Queue metadata of a dequeued packet (v1model `standard_metadata`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DequeueMeta {
    pub enq_qdepth: u32,
    pub deq_qdepth: u32,
    pub enq_ns: u64,
    /// The (ideal) dequeue time: the start of this frame's serialization.
    pub deq_ns: u64,
}

impl DequeueMeta {
    pub fn deq_timedelta_us(&self) -> u64 {
        (self.deq_ns - self.enq_ns) / 1000
    }
    pub fn enq_timestamp_us(&self) -> u64 {
        self.enq_ns / 1000
    }
}

/// A small seeded PRNG (xorshift64*, seeded through splitmix64).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

struct Slot<T> {
    item: T,
    enq_ns: u64,
    enq_qdepth: u32,
}

/// An egress queue and the link behind it. `T` is the queued packet.
pub struct EgressPort<T> {
    settings: PortSettings,
    queue: VecDeque<Slot<T>>,
    /// When the frame being serialized is done.
    link_free_ns: u64,
    /// Earliest next dequeue under the packets/s rate.
    next_pps_ns: u64,
    delay_line: VecDeque<(u64, Vec<u8>)>,
    last_release_ns: u64,
    /// The last frame's serialization really ended this far before
    /// `link_free_ns`, in units of ns × bit/s (10⁻⁹ bit) at `carry_rate`:
    /// always below `carry_rate`.
    short_nb: u64,
    /// The line rate `short_nb` and `busy_nb` are counted at.
    carry_rate: u64,
    /// Serialization time of every frame sent at `carry_rate` since the
    /// rate last changed, in ns × bit/s (that is, its bits × 10⁹)...
    busy_nb: u128,
    /// ... and of the frames before, in whole ns.
    busy_base_ns: u64,
    rng: Rng,
    pub stats: PortStats,
    pub slip: SlipStats,
}

impl<T> EgressPort<T> {
    pub fn new(settings: PortSettings, seed: u64) -> EgressPort<T> {
        EgressPort {
            settings,
            queue: VecDeque::with_capacity(settings.depth_pkts.min(4096)),
            link_free_ns: 0,
            next_pps_ns: 0,
            delay_line: VecDeque::new(),
            last_release_ns: 0,
            short_nb: 0,
            carry_rate: 0,
            busy_nb: 0,
            busy_base_ns: 0,
            rng: Rng::new(seed),
            stats: PortStats::default(),
            slip: SlipStats::default(),
        }
    }

    pub fn settings(&self) -> &PortSettings {
        &self.settings
    }

    /// New settings take effect for the next dequeue; packets already queued
    /// beyond a smaller depth stay.
    pub fn set_settings(&mut self, s: PortSettings) {
        self.settings = s;
    }

    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// Frames serialized but not yet delivered (propagating).
    pub fn in_flight(&self) -> usize {
        self.delay_line.len()
    }

    /// Adds a packet; returns its `enq_qdepth`, or the packet back when the
    /// queue is full (a tail drop, counted).
    pub fn enqueue(&mut self, item: T, now_ns: u64) -> Result<u32, T> {
        let len = self.queue.len();
        if len >= self.settings.depth_pkts {
            self.stats.tail_drops += 1;
            return Err(item);
        }
        self.queue.push_back(Slot { item, enq_ns: now_ns, enq_qdepth: len as u32 });
        self.stats.enq_pkts += 1;
        Ok(len as u32)
    }

    /// When the head packet may leave, `None` when the queue is empty.
    pub fn next_dequeue_ns(&self) -> Option<u64> {
        let head = self.queue.front()?;
        Some(head.enq_ns.max(self.link_free_ns).max(self.next_pps_ns))
    }

    /// Removes the head packet if its time has come (`now_ns` ≥
    /// [`next_dequeue_ns`](Self::next_dequeue_ns)). The link is not busy
    /// until [`transmit`](Self::transmit) is called with the resulting frame.
    pub fn dequeue(&mut self, now_ns: u64) -> Option<(T, DequeueMeta)> {
        let t = self.next_dequeue_ns()?;
        if t > now_ns {
            return None;
        }
        let slot = self.queue.pop_front()?;
        if now_ns.saturating_sub(t) > MAX_LAG_NS {
            self.stats.lag_clamps += 1;
        }
        let deq_ns = t.max(now_ns.saturating_sub(MAX_LAG_NS));
        if self.settings.rate_pps > 0 {
            self.next_pps_ns = deq_ns + 1_000_000_000 / self.settings.rate_pps.max(1);
        }
        // The link cannot start this frame before now is accounted for.
        if deq_ns > self.link_free_ns {
            // It was idle: the frame starts on a whole nanosecond.
            self.link_free_ns = deq_ns;
            self.short_nb = 0;
        }
        let meta = DequeueMeta {
            enq_qdepth: slot.enq_qdepth,
            deq_qdepth: self.queue.len() as u32,
            enq_ns: slot.enq_ns,
            deq_ns,
        };
        Some((slot.item, meta))
    }

    /// Serialization time of `bytes` at the port's line rate, rounded down
    /// to the nanosecond (a back-to-back frame's own time is exact: see
    /// [`transmit`](Self::transmit)).
    pub fn serialization_ns(&self, bytes: usize) -> u64 {
        if self.settings.rate_bps == 0 {
            return 0;
        }
        ((bytes as u128 * 8 * 1_000_000_000) / self.settings.rate_bps as u128) as u64
    }

    /// Puts `frame` on the link, starting at the dequeue time `deq_ns`:
    /// the link is busy for its serialization time, then the frame
    /// propagates for `delay_us` unless it is lost. Returns false if lost.
    ///
    /// A frame that waited for the link starts exactly where the previous
    /// one ended, inside a nanosecond; the link is free again at the first
    /// whole nanosecond after its end, and the frame reaches the far end
    /// then plus the delay. So the link carries exactly its line rate
    /// however its frames' times fall between nanoseconds.
    pub fn transmit(&mut self, frame: Vec<u8>, deq_ns: u64) -> bool {
        let rate = self.settings.rate_bps;
        if rate != self.carry_rate {
            // A new rate: what was sent before is folded into whole ns (a
            // fraction of a nanosecond is dropped, once), and the new
            // frames are counted at the new rate.
            if self.carry_rate > 0 {
                self.busy_base_ns += (self.busy_nb / self.carry_rate as u128) as u64;
            }
            self.busy_nb = 0;
            self.short_nb = 0;
            self.carry_rate = rate;
        }
        if deq_ns > self.link_free_ns {
            self.link_free_ns = deq_ns;
            self.short_nb = 0;
        }
        let end = if rate == 0 {
            self.link_free_ns
        } else {
            let r = rate as u128;
            let bits_nb = frame.len() as u128 * 8 * 1_000_000_000;
            let end_nb = self.link_free_ns as u128 * r - self.short_nb as u128 + bits_nb;
            let end = end_nb.div_ceil(r);
            self.short_nb = (end * r - end_nb) as u64;
            self.busy_nb += bits_nb;
            end as u64
        };
        self.link_free_ns = end;
        let loss = self.settings.loss;
        if loss > 0.0 && (loss >= 1.0 || self.rng.next_f64() < loss) {
            self.stats.link_loss_drops += 1;
            return false;
        }
        let release = (end + self.settings.delay_us * 1000).max(self.last_release_ns);
        self.last_release_ns = release;
        self.delay_line.push_back((release, frame));
        true
    }

    /// How long the link has spent serializing frames up to `now_ns`,
    /// rounded down to the nanosecond (the part of a frame still on the
    /// wire at `now_ns` counts up to `now_ns`). Between two instants on
    /// whole nanoseconds it grows by at most their distance, so a
    /// utilisation taken from it can never exceed 1.
    pub fn busy_ns(&self, now_ns: u64) -> u64 {
        if self.carry_rate == 0 {
            return self.busy_base_ns;
        }
        let r = self.carry_rate as u128;
        let end_nb = self.link_free_ns as u128 * r - self.short_nb as u128;
        let ahead = end_nb.saturating_sub(now_ns as u128 * r).min(self.busy_nb);
        self.busy_base_ns + ((self.busy_nb - ahead) / r) as u64
    }

    /// When the next frame reaches the far end of the link.
    pub fn next_release_ns(&self) -> Option<u64> {
        self.delay_line.front().map(|(t, _)| *t)
    }

    /// The next frame whose propagation is over by `now_ns` (how late it
    /// is handed on is recorded in [`slip`](Self::slip)).
    pub fn pop_released(&mut self, now_ns: u64) -> Option<Vec<u8>> {
        match self.delay_line.front() {
            Some((t, _)) if *t <= now_ns => {
                let (t, f) = self.delay_line.pop_front()?;
                self.slip.record(now_ns - t);
                Some(f)
            }
            _ => None,
        }
    }

    /// The earliest time this port has something to do.
    pub fn next_event_ns(&self) -> Option<u64> {
        match (self.next_dequeue_ns(), self.next_release_ns()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Drops every queued packet (e.g. when the pipeline is replaced);
    /// frames already on the link are still delivered.
    pub fn flush(&mut self) -> usize {
        let n = self.queue.len();
        self.queue.clear();
        self.stats.flushed += n as u64;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slip_quantiles_are_within_an_eighth() {
        let mut s = SlipStats::default();
        assert_eq!(s.quantile(0.99), 0);
        for x in 1..=10_000u64 {
            s.record(x * 100); // 100 ns .. 1 ms, uniform
        }
        for (q, want) in [(0.5, 500_000.0), (0.99, 990_000.0)] {
            let got = s.quantile(q) as f64;
            assert!(got >= want && got <= want * 1.125 + 1.0, "q{q}: {got} vs {want}");
        }
        assert_eq!(s.max_ns, 1_000_000);
        assert_eq!(s.quantile(1.0), 1_000_000);
        for x in 0..8 {
            assert_eq!(SlipStats::upper(SlipStats::bucket(x)), x);
        }
        for x in [8u64, 9, 15, 16, 17, 1000, 123_456_789, u64::MAX / 2] {
            let b = SlipStats::bucket(x);
            assert!(SlipStats::upper(b) >= x && (SlipStats::upper(b) as f64) <= x as f64 * 1.125 + 1.0, "{x}");
        }
    }

    #[test]
    fn a_late_caller_is_seen_as_slip() {
        let mut p: EgressPort<u32> = EgressPort::new(PortSettings { rate_bps: 8_000_000, ..Default::default() }, 1);
        p.enqueue(1, 0).unwrap();
        let (_, m) = p.dequeue(0).unwrap();
        p.transmit(vec![0; 1000], m.deq_ns); // 1 ms to serialise
        assert!(p.pop_released(999_999).is_none());
        p.pop_released(1_250_000).unwrap(); // handed on 250 µs late
        assert_eq!(p.slip.max_ns, 250_000);
        assert_eq!(p.slip.samples, 1);
    }

    fn port(s: PortSettings) -> EgressPort<u32> {
        EgressPort::new(s, 7)
    }

    #[test]
    fn depths_follow_bmv2() {
        let mut p = port(PortSettings { depth_pkts: 3, ..Default::default() });
        assert_eq!(p.enqueue(1, 0), Ok(0));
        assert_eq!(p.enqueue(2, 0), Ok(1));
        assert_eq!(p.enqueue(3, 0), Ok(2));
        assert_eq!(p.enqueue(4, 0), Err(4));
        assert_eq!(p.stats.tail_drops, 1);
        let (item, m) = p.dequeue(10_000).unwrap();
        assert_eq!(item, 1);
        assert_eq!(m.enq_qdepth, 0);
        assert_eq!(m.deq_qdepth, 2);
        // The link was idle: the packet could leave as soon as it came.
        assert_eq!(m.deq_timedelta_us(), 0);
        // 10 µs of serialization (1250 bytes at 1 Gbit/s) delay the next.
        p.set_settings(PortSettings { depth_pkts: 3, rate_bps: 1_000_000_000, ..Default::default() });
        p.transmit(vec![0; 1250], m.deq_ns);
        assert!(p.dequeue(9_999).is_none());
        let (item, m) = p.dequeue(25_000).unwrap();
        assert_eq!((item, m.enq_qdepth, m.deq_qdepth, m.deq_timedelta_us()), (2, 1, 1, 10));
        // Space again after a dequeue.
        assert_eq!(p.enqueue(5, 30_000), Ok(1));
        assert_eq!(p.stats.enq_pkts, 4);
    }

    #[test]
    fn line_rate_spaces_departures() {
        // 1500-byte frames at 100 Mbit/s: 120 µs each.
        let mut p = port(PortSettings { rate_bps: 100_000_000, ..Default::default() });
        for i in 0..3 {
            p.enqueue(i, 0).unwrap();
        }
        let mut departures = vec![];
        let mut now = 0;
        while p.queue_len() > 0 {
            let t = p.next_dequeue_ns().unwrap();
            now = now.max(t);
            let (_, m) = p.dequeue(now).unwrap();
            departures.push((m.deq_ns, m.deq_timedelta_us()));
            assert!(p.transmit(vec![0u8; 1500], m.deq_ns));
        }
        assert_eq!(departures, vec![(0, 0), (120_000, 120), (240_000, 240)]);
        // Delivered when serialization ends.
        assert_eq!(p.next_release_ns(), Some(120_000));
        assert!(p.pop_released(119_999).is_none());
        assert!(p.pop_released(120_000).is_some());
        assert!(p.pop_released(360_000).is_some());
        assert!(p.pop_released(360_000).is_some());
        assert!(p.pop_released(u64::MAX).is_none());
    }

    #[test]
    fn back_to_back_frames_carry_exactly_the_line_rate() {
        // 1454-byte frames at 10 Gbit/s take 1163.2 ns each: rounding each
        // down to 1163 ns sent 1.7 frames in 10 000 above the line rate.
        let mut p = port(PortSettings { rate_bps: 10_000_000_000, depth_pkts: 100_000, ..Default::default() });
        let n = 50_000u64;
        for i in 0..n {
            p.enqueue(i as u32, 0).unwrap();
        }
        let mut now = 0;
        let mut reads = vec![];
        while p.queue_len() > 0 {
            now = now.max(p.next_dequeue_ns().unwrap());
            let (_, m) = p.dequeue(now).unwrap();
            assert!(p.transmit(vec![0u8; 1454], m.deq_ns));
            if p.queue_len() % 997 == 0 {
                reads.push((now, p.busy_ns(now)));
            }
        }
        // n frames end after n × 1163.2 ns, to the nanosecond.
        let exact = n * 11_632 / 10;
        assert_eq!(p.next_release_ns(), Some(1164), "the first frame at the first whole ns after 1163.2");
        assert_eq!(p.link_free_ns, exact);
        assert_eq!(p.busy_ns(exact), exact);
        assert_eq!(p.busy_ns(exact + 5_000), exact, "idle time is not busy");
        // Busy time never grows faster than time, and follows it while busy.
        for w in reads.windows(2) {
            let ((t0, b0), (t1, b1)) = (w[0], w[1]);
            assert!(b1 - b0 <= t1 - t0, "busy {} in {} ns", b1 - b0, t1 - t0);
            assert!(b1 - b0 + 1 >= t1 - t0);
        }
        // Bytes over busy time: the line rate.
        let bits = n * 1454 * 8;
        assert_eq!(bits * 1_000_000_000 / p.busy_ns(exact), 10_000_000_000);
    }

    #[test]
    fn an_idle_link_starts_on_the_dequeue_and_a_new_rate_is_counted_apart() {
        let mut p = port(PortSettings { rate_bps: 3_000_000_000, ..Default::default() });
        p.enqueue(1, 0).unwrap();
        let (_, m) = p.dequeue(0).unwrap();
        p.transmit(vec![0; 1000], m.deq_ns); // 2666.67 ns
        assert_eq!(p.link_free_ns, 2667);
        assert_eq!(p.busy_ns(1000), 1000);
        assert_eq!(p.busy_ns(10_000), 2666);
        p.enqueue(2, 10_000).unwrap();
        let (_, m) = p.dequeue(10_000).unwrap();
        p.transmit(vec![0; 1000], m.deq_ns);
        assert_eq!(p.link_free_ns, 12_667, "after idle time the frame starts on its dequeue");
        assert_eq!(p.busy_ns(20_000), 5333);
        p.set_settings(PortSettings { rate_bps: 1_000_000_000, ..Default::default() });
        p.enqueue(3, 20_000).unwrap();
        let (_, m) = p.dequeue(20_000).unwrap();
        p.transmit(vec![0; 1000], m.deq_ns); // 8 µs
        assert_eq!(p.link_free_ns, 28_000);
        assert_eq!(p.busy_ns(24_000), 5333 + 4000);
        assert_eq!(p.busy_ns(30_000), 5333 + 8000);
    }

    #[test]
    fn not_dequeued_before_link_is_free() {
        let mut p = port(PortSettings { rate_bps: 8_000_000, ..Default::default() });
        p.enqueue(1, 0).unwrap();
        p.enqueue(2, 0).unwrap();
        let (_, m) = p.dequeue(0).unwrap();
        p.transmit(vec![0; 1000], m.deq_ns); // 1 ms
        assert!(p.dequeue(999_999).is_none());
        assert_eq!(p.next_dequeue_ns(), Some(1_000_000));
        assert!(p.dequeue(1_000_000).is_some());
    }

    #[test]
    fn packets_per_second_rate() {
        let mut p = port(PortSettings { rate_pps: 1000, ..Default::default() });
        for i in 0..3 {
            p.enqueue(i, 0).unwrap();
        }
        let (_, a) = p.dequeue(0).unwrap();
        p.transmit(vec![0; 64], a.deq_ns);
        assert!(p.dequeue(999_999).is_none());
        let (_, b) = p.dequeue(1_000_000).unwrap();
        assert_eq!(b.deq_ns, 1_000_000);
    }

    #[test]
    fn propagation_delay_after_serialization() {
        let mut p = port(PortSettings { rate_bps: 1_000_000_000, delay_us: 250, ..Default::default() });
        p.enqueue(1, 5_000).unwrap();
        let (_, m) = p.dequeue(5_000).unwrap();
        p.transmit(vec![0; 125], m.deq_ns); // 1 µs at 1 Gbit/s
        assert_eq!(p.next_release_ns(), Some(5_000 + 1_000 + 250_000));
        assert_eq!(p.in_flight(), 1);
        // The queue is free for the next packet while the first propagates.
        p.enqueue(2, 6_000).unwrap();
        assert!(p.dequeue(6_000).is_some());
    }

    #[test]
    fn delivery_stays_in_order_when_delay_shrinks() {
        let mut p = port(PortSettings { delay_us: 1000, ..Default::default() });
        p.enqueue(1, 0).unwrap();
        let (_, m) = p.dequeue(0).unwrap();
        p.transmit(vec![1], m.deq_ns);
        p.set_settings(PortSettings { delay_us: 0, ..Default::default() });
        p.enqueue(2, 10).unwrap();
        let (_, m) = p.dequeue(10).unwrap();
        p.transmit(vec![2], m.deq_ns);
        assert!(p.pop_released(500).is_none());
        assert_eq!(p.pop_released(1_000_000), Some(vec![1]));
        assert_eq!(p.pop_released(1_000_000), Some(vec![2]));
    }

    #[test]
    fn loss_zero_and_one() {
        let mut p = port(PortSettings { loss: 0.0, depth_pkts: 10_000, ..Default::default() });
        for i in 0..1000 {
            p.enqueue(i, 0).unwrap();
            let (_, m) = p.dequeue(0).unwrap();
            assert!(p.transmit(vec![0; 64], m.deq_ns));
        }
        assert_eq!(p.stats.link_loss_drops, 0);
        p.set_settings(PortSettings { loss: 1.0, depth_pkts: 10_000, ..Default::default() });
        for i in 0..1000 {
            p.enqueue(i, 0).unwrap();
            let (_, m) = p.dequeue(0).unwrap();
            assert!(!p.transmit(vec![0; 64], m.deq_ns));
        }
        assert_eq!(p.stats.link_loss_drops, 1000);
    }

    #[test]
    fn loss_rate_is_seeded_and_close() {
        let run = |seed| {
            let mut p: EgressPort<u32> =
                EgressPort::new(PortSettings { loss: 0.1, ..Default::default() }, seed);
            let mut lost = vec![];
            for i in 0..20_000u32 {
                p.enqueue(i, 0).unwrap();
                let (_, m) = p.dequeue(0).unwrap();
                if !p.transmit(vec![0; 64], m.deq_ns) {
                    lost.push(i);
                }
                while p.pop_released(u64::MAX).is_some() {}
            }
            lost
        };
        let a = run(1);
        assert_eq!(a, run(1), "same seed, same losses");
        assert_ne!(a, run(2));
        let frac = a.len() as f64 / 20_000.0;
        assert!((frac - 0.1).abs() < 0.01, "loss fraction {frac}");
    }

    #[test]
    fn lag_is_clamped() {
        let mut p = port(PortSettings::default());
        p.enqueue(1, 0).unwrap();
        let (_, m) = p.dequeue(10 * MAX_LAG_NS).unwrap();
        assert_eq!(m.deq_ns, 9 * MAX_LAG_NS);
    }

    #[test]
    fn flush_drops_queue_only() {
        let mut p = port(PortSettings { delay_us: 10, ..Default::default() });
        p.enqueue(1, 0).unwrap();
        let (_, m) = p.dequeue(0).unwrap();
        p.transmit(vec![1], m.deq_ns);
        p.enqueue(2, 0).unwrap();
        assert_eq!(p.flush(), 1);
        assert_eq!(p.queue_len(), 0);
        assert_eq!(p.in_flight(), 1);
        assert_eq!(p.stats.flushed, 1);
    }
}
