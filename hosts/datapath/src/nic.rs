//! A host's NIC arbitrating its flows at the link rate.
//!
//! An RDMA NIC schedules its queue pairs in turn at its line rate: a host
//! whose flows together ask for more than its link waits, it never drops
//! its own packets. A sender stack that lets every flow send when its own
//! window and pacer allow instead overfills the shared transmit queue
//! (Linux's qdisc, the simulator's NIC queue), which drops. The arbiter
//! keeps account of when the link would be free if everything handed on so
//! far were serialised back to back, and lets a packet go only while that
//! is at most `backlog` ahead of now: the queue below it never holds more
//! than a few frames, and the stack serves its flows one packet each in
//! turn (docs/transport.md, "NIC arbitration").

/// Bytes a datagram gains on the wire: UDP 8, IPv4 20, Ethernet 14 (the
/// frame the simulator's NIC and a veth serialise).
pub const FRAME_OVERHEAD_BYTES: u64 = 42;
/// Frames of 1514 bytes the link may have queued ahead of now: enough that
/// the NIC does not go idle between the arbiter's wake-up and the next
/// packet (a real-time wake-up runs tens of µs late), few enough that the
/// queue stays short.
pub const BACKLOG_FRAMES: u64 = 4;
const MTU_FRAME_BYTES: u64 = 1514;

#[derive(Debug, Clone)]
pub struct NicArbiter {
    rate_bps: u128,
    /// When the link is free, in ns × bit/s (exact: no rounding per frame,
    /// so the arbiter never holds a host below its line rate).
    free_nb: u128,
    backlog_nb: u128,
}

impl NicArbiter {
    pub fn new(rate_bps: u64) -> NicArbiter {
        let rate = u128::from(rate_bps.max(1));
        NicArbiter { rate_bps: rate, free_nb: 0, backlog_nb: u128::from(BACKLOG_FRAMES * MTU_FRAME_BYTES * 8) * 1_000_000_000 }
    }

    /// Whether a packet may go at `now_ns`.
    pub fn may_send(&self, now_ns: u64) -> bool {
        self.free_nb <= u128::from(now_ns) * self.rate_bps + self.backlog_nb
    }

    /// A datagram of `len` bytes was handed on at `now_ns`.
    pub fn charge(&mut self, now_ns: u64, len: usize) {
        let start = self.free_nb.max(u128::from(now_ns) * self.rate_bps);
        self.free_nb = start + (len as u128 + u128::from(FRAME_OVERHEAD_BYTES)) * 8 * 1_000_000_000;
    }

    /// The first ns at which [`may_send`](Self::may_send) holds again.
    pub fn ready_at(&self) -> u64 {
        let due = self.free_nb.saturating_sub(self.backlog_nb).div_ceil(self.rate_bps);
        u64::try_from(due).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At 10 Gb/s a 1458-byte datagram is a 1500-byte frame, 1.2 µs on the
    /// wire; four 1514-byte frames of backlog are 4.8448 µs.
    #[test]
    fn lets_a_backlog_through_then_paces_at_the_line_rate() {
        let mut n = NicArbiter::new(10_000_000_000);
        let mut sent = 0;
        while n.may_send(0) {
            n.charge(0, 1458);
            sent += 1;
        }
        // 0, 1.2, 2.4, 3.6, 4.8 µs of queue ahead when each was asked.
        assert_eq!(sent, 5);
        assert_eq!(n.ready_at(), 6_000 - 4_845 + 1);
        assert!(!n.may_send(n.ready_at() - 1));
        assert!(n.may_send(n.ready_at()));
        // From then on one frame per 1.2 µs: 1000 more take 1.2 ms.
        let mut t = n.ready_at();
        for _ in 0..1000 {
            while !n.may_send(t) {
                t = n.ready_at();
            }
            n.charge(t, 1458);
        }
        assert_eq!(n.ready_at(), 6_000 + 1_200_000 - 4_845 + 1);
    }

    /// An idle link does not bank credit: after a pause the next frame
    /// starts at now, not at the old free time.
    #[test]
    fn idle_time_is_not_saved_up() {
        let mut n = NicArbiter::new(1_000_000_000);
        n.charge(0, 958);
        assert!(n.may_send(1_000_000));
        n.charge(1_000_000, 958);
        assert_eq!(n.ready_at(), 1_000_000 + 8_000 - 48_448);
    }
}
