//! The datapath clock: monotonic nanoseconds since the run started, plus
//! the conversion to unix-epoch nanoseconds (CLOCK_REALTIME at start +
//! monotonic offset) used in every log so that hosts in different network
//! namespaces share one time base.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    unix_at_start_ns: u64,
}

impl Clock {
    pub fn new() -> Clock {
        let start = Instant::now();
        let unix_at_start_ns = unix_now_ns();
        Clock { start, unix_at_start_ns }
    }
    /// Monotonic ns since the clock was created (never 0 after the first call).
    #[inline]
    pub fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64 + 1
    }
    #[inline]
    pub fn unix(&self, mono_ns: u64) -> u64 {
        self.unix_at_start_ns + mono_ns
    }
    pub fn now_unix(&self) -> u64 {
        self.unix(self.now())
    }
    /// A mapping, good for times read just now, from unix-epoch stamps
    /// (the kernel's receive times) onto this clock. CLOCK_REALTIME may
    /// have been slewed or stepped since the clock was made, so the offset
    /// is taken afresh from one reading of each clock.
    pub fn real_to_mono(&self) -> RealToMono {
        let now = self.now();
        RealToMono { real_minus_mono: unix_now_ns() as i128 - now as i128, now }
    }
    /// Monotonic time corresponding to a unix timestamp (saturating at 0).
    pub fn mono_of_unix(&self, unix_ns: u64) -> u64 {
        unix_ns.saturating_sub(self.unix_at_start_ns)
    }
}

/// See [`Clock::real_to_mono`].
#[derive(Debug, Clone, Copy)]
pub struct RealToMono {
    real_minus_mono: i128,
    /// The clock's time when the mapping was taken.
    pub now: u64,
}

impl RealToMono {
    /// When a datagram the kernel stamped `real_ns` arrived, on the
    /// monotonic clock: no later than `now` (a stamp cannot be in the
    /// future; the two readings are some ns apart), and `now` for a
    /// datagram without a stamp.
    pub fn arrival(&self, real_ns: Option<u64>) -> u64 {
        real_ns.map_or(self.now, |r| (r as i128 - self.real_minus_mono).clamp(1, self.now as i128) as u64)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// Current unix time in ns.
pub fn unix_now_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_times_map_onto_the_run_clock() {
        let c = Clock::new();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let before = unix_now_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let m = c.real_to_mono();
        let back = m.now - m.arrival(Some(before));
        assert!((19_000_000..40_000_000).contains(&back), "{back} ns back");
        assert_eq!(m.arrival(Some(unix_now_ns() + 1_000_000_000)), m.now, "never after the reading");
        assert_eq!(m.arrival(Some(0)), 1, "nor before the run");
        assert_eq!(m.arrival(None), m.now, "no stamp: read now");
    }
}
