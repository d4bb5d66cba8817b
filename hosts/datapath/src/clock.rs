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
        let unix_at_start_ns = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
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
    /// Monotonic time corresponding to a unix timestamp (saturating at 0).
    pub fn mono_of_unix(&self, unix_ns: u64) -> u64 {
        unix_ns.saturating_sub(self.unix_at_start_ns)
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
