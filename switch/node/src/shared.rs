//! State a switch's packet path shares with its control plane: per port the
//! settings the admin API changes and the counters it shows, plus the
//! run-wide flags. The packet path publishes; the control plane reads.
use ports::queue::{PortStats, SlipStats};
use ports::socket::monotonic_ns;
use ports::PortSettings;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// What the control plane sees of, and changes on, a port.
pub struct PortShared {
    pub port: u32,
    pub iface: String,
    pub settings: Mutex<PortSettings>,
    pub queue_len: AtomicUsize,
    pub stats: [AtomicU64; 12],
    /// Departure slip: samples, p50, p99, max (ns).
    pub slip: [AtomicU64; 4],
}

/// A port's departure slip as published (ns).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SlipSummary {
    pub samples: u64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

impl PortShared {
    pub fn new(port: u32, iface: String, settings: PortSettings) -> PortShared {
        PortShared {
            port,
            iface,
            settings: Mutex::new(settings),
            queue_len: AtomicUsize::new(0),
            stats: Default::default(),
            slip: Default::default(),
        }
    }

    pub fn settings(&self) -> PortSettings {
        *self.settings.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn stats(&self) -> PortStats {
        let s = |i: usize| self.stats[i].load(Relaxed);
        PortStats {
            rx_pkts: s(0),
            rx_bytes: s(1),
            rx_dropped: s(2),
            enq_pkts: s(3),
            tail_drops: s(4),
            link_loss_drops: s(5),
            tx_pkts: s(6),
            tx_bytes: s(7),
            tx_errors: s(8),
            flushed: s(9),
            ring_drops: s(10),
            lag_clamps: s(11),
        }
    }

    pub fn slip(&self) -> SlipSummary {
        let s = |i: usize| self.slip[i].load(Relaxed);
        SlipSummary { samples: s(0), p50_ns: s(1), p99_ns: s(2), max_ns: s(3) }
    }

    pub fn publish(&self, st: &PortStats, slip: &SlipStats, queue_len: usize) {
        for (a, x) in self.slip.iter().zip([slip.samples, slip.quantile(0.5), slip.quantile(0.99), slip.max_ns]) {
            a.store(x, Relaxed);
        }
        let v = [
            st.rx_pkts,
            st.rx_bytes,
            st.rx_dropped,
            st.enq_pkts,
            st.tail_drops,
            st.link_loss_drops,
            st.tx_pkts,
            st.tx_bytes,
            st.tx_errors,
            st.flushed,
            st.ring_drops,
            st.lag_clamps,
        ];
        for (a, x) in self.stats.iter().zip(v) {
            a.store(x, Relaxed);
        }
        self.queue_len.store(queue_len, Relaxed);
    }
}

/// State shared between the packet thread and the control plane.
pub struct Shared {
    pub ports: Vec<Arc<PortShared>>,
    /// Bumped when a port's settings change.
    pub settings_gen: AtomicU64,
    pub stop: AtomicBool,
    /// Frames dropped because their egress port is not a switch port.
    pub unknown_port_drops: AtomicU64,
    /// Frames dropped because no pipeline was loaded.
    pub no_pipeline_drops: AtomicU64,
    /// The pipeline's clock counts ns (else µs, as bmv2's): its timestamps
    /// and queue delays (`PUT /clock`).
    pub clock_ns: AtomicBool,
    pub start_ns: u64,
    wake: OwnedFd,
}

impl Shared {
    pub fn new(ports: Vec<Arc<PortShared>>) -> std::io::Result<Shared> {
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Shared {
            ports,
            settings_gen: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            unknown_port_drops: AtomicU64::new(0),
            no_pipeline_drops: AtomicU64::new(0),
            clock_ns: AtomicBool::new(false),
            start_ns: monotonic_ns(),
            wake: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Wakes the packet thread if it sleeps.
    pub fn wake(&self) {
        let one: u64 = 1;
        unsafe {
            libc::write(self.wake.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8);
        }
    }

    /// Consumes pending wake-ups (after the packet thread woke on them).
    pub fn drain_wake(&self) {
        let mut v: u64 = 0;
        unsafe {
            libc::read(self.wake.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8);
        }
    }

    /// The descriptor that becomes readable on [`wake`](Self::wake), for a
    /// packet thread that sleeps in poll.
    pub fn wake_fd(&self) -> i32 {
        self.wake.as_raw_fd()
    }

    pub fn port(&self, n: u32) -> Option<&Arc<PortShared>> {
        self.ports.iter().find(|p| p.port == n)
    }
}
