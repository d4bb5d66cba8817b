//! The packet thread of a process on real interfaces: receive into the
//! datapath, run the departures that are due, send what the links
//! released, sleep until the next departure or frame. One loop for every
//! datapath on sockets — the embedded switch ([`SwitchCore`](crate::SwitchCore))
//! and the link emulator ([`LinkCore`](crate::LinkCore)) — on the
//! monotonic clock, so both keep the same timing and the same counters.
use crate::shared::Shared;
use ports::queue::PortStats;
use ports::socket::{monotonic_ns, realtime_ns, set_precise_timers, wait_readable};
use ports::PacketSocket;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Frames read from one interface per pass before the others get a turn.
const RX_BUDGET: usize = 64;
/// Below this much time to the next departure the loop spins instead of
/// sleeping (a sleep costs tens of µs of wake-up latency).
const SPIN_NS: u64 = 20_000;
/// Longest sleep: the loop looks at settings and the stop flag this often
/// even when nothing wakes it.
const MAX_SLEEP_NS: u64 = 50_000_000;
/// How often counters are published while the loop is busy.
const PUBLISH_NS: u64 = 1_000_000;
/// How often the rings' drop counts are read when no frame flagged drops.
const RING_STATS_NS: u64 = 100_000_000;
/// How far back a receive timestamp may place an arrival (older ones are
/// taken as arriving this long ago).
const MAX_RX_AGE_NS: u64 = ports::queue::MAX_LAG_NS;

/// What the loop drives: ports numbered as the datapath knows them, each
/// with its egress link; frames in, departures and released frames out.
/// Times are ns on the loop's clock (monotonic, from `Shared::start_ns`).
pub trait Datapath {
    /// Picks up what the control plane changed (settings, a new pipeline).
    fn sync(&mut self);
    /// The port number of the `i`-th port (the order of `Shared::ports`).
    fn port_num(&self, i: usize) -> u32;
    /// The `i`-th port's counters, which the loop adds its I/O counts to.
    fn stats_mut(&mut self, i: usize) -> &mut PortStats;
    /// A frame that arrived on `port` at `t`; [`enqueue_arrivals`](Self::enqueue_arrivals)
    /// follows each receive pass.
    fn ingress(&mut self, frame: &[u8], port: u32, t: u64);
    /// What the pass's ingress produced joins its queues.
    fn enqueue_arrivals(&mut self);
    /// Port `i`'s departures due by `t`; whether any left.
    fn advance(&mut self, i: usize, t: u64) -> bool;
    /// Port `i`'s next frame whose propagation is over by `t`.
    fn pop_released(&mut self, i: usize, t: u64) -> Option<Vec<u8>>;
    /// A frame that was sent, for reuse.
    fn recycle_frame(&mut self, _frame: Vec<u8>) {}
    /// The earliest time any port has something to do.
    fn next_event_ns(&self) -> Option<u64>;
    /// Publishes counters for the control plane.
    fn publish(&self);
}

/// A port's socket and the frames waiting to be sent on it.
struct PortIo {
    sock: PacketSocket,
    tx: Vec<Vec<u8>>,
}

/// A [`Datapath`] on sockets.
pub struct SocketLoop<D: Datapath> {
    dp: D,
    /// Parallel to the datapath's ports (and `shared.ports`).
    io: Vec<PortIo>,
    shared: Arc<Shared>,
}

impl<D: Datapath> SocketLoop<D> {
    /// `socks` in the order of `shared.ports`, which is the datapath's.
    pub fn new(dp: D, socks: Vec<PacketSocket>, shared: Arc<Shared>) -> SocketLoop<D> {
        let io = socks.into_iter().map(|sock| PortIo { sock, tx: Vec::with_capacity(64) }).collect();
        SocketLoop { dp, io, shared }
    }

    fn now(&self) -> u64 {
        monotonic_ns() - self.shared.start_ns
    }

    /// Clears socket errors poll reported (else poll would return at once,
    /// forever); stops polling an interface that disappeared.
    fn check_errors(&mut self, pollfds: &mut [libc::pollfd]) {
        for (i, io) in self.io.iter().enumerate() {
            let pf = &mut pollfds[i];
            if pf.fd < 0 || pf.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) == 0 {
                continue;
            }
            let num = self.dp.port_num(i);
            let err = io.sock.take_error();
            if !io.sock.interface_exists() || pf.revents & libc::POLLNVAL != 0 {
                log::error!("port {num}: interface {} is gone; the port no longer receives", io.sock.iface());
                pf.fd = -1;
            } else if let Some(e) = err {
                log::info!("port {num} ({}): {e}", io.sock.iface());
            } else if pf.revents & libc::POLLHUP != 0 {
                log::error!("port {num} ({}): socket hung up; the port no longer receives", io.sock.iface());
                pf.fd = -1;
            }
        }
    }

    /// Runs until `shared.stop` is set. `control` runs once a pass, before
    /// the departures, for what reaches the datapath from elsewhere than
    /// its interfaces (the switch's packet-out); it returns whether it did
    /// anything.
    pub fn run(mut self, mut control: impl FnMut(&mut D, u64) -> bool) {
        set_precise_timers();
        let mut pollfds: Vec<libc::pollfd> =
            self.io.iter().map(|p| libc::pollfd { fd: p.sock.fd(), events: libc::POLLIN, revents: 0 }).collect();
        pollfds.push(libc::pollfd { fd: self.shared.wake_fd(), events: libc::POLLIN, revents: 0 });
        let mut last_publish = 0u64;
        let mut last_ring_stats = 0u64;

        while !self.shared.stop.load(Relaxed) {
            self.dp.sync();
            let now = self.now();
            // Receive timestamps are CLOCK_REALTIME; this maps them to our clock.
            let rt_base = realtime_ns().saturating_sub(monotonic_ns() - self.shared.start_ns);
            let mut busy = false;

            // Receive.
            for i in 0..self.io.len() {
                let SocketLoop { dp, io, .. } = &mut self;
                let num = dp.port_num(i);
                let (mut rx_pkts, mut rx_bytes) = (0u64, 0u64);
                let p = &mut io[i];
                let trunc_before = p.sock.rx_truncated;
                let n = p.sock.recv_batch(RX_BUDGET, |frame, ts| {
                    rx_pkts += 1;
                    rx_bytes += frame.len() as u64;
                    let t = ts.saturating_sub(rt_base).clamp(now.saturating_sub(MAX_RX_AGE_NS), now);
                    dp.ingress(frame, num, t);
                });
                let st = dp.stats_mut(i);
                st.rx_pkts += rx_pkts;
                st.rx_bytes += rx_bytes;
                st.rx_dropped += p.sock.rx_truncated - trunc_before;
                if n > 0 {
                    busy = true;
                }
            }
            // All ports' frames at once, in arrival order.
            self.dp.enqueue_arrivals();
            busy |= control(&mut self.dp, now);

            // Departures due now, and frames whose propagation is over.
            for i in 0..self.io.len() {
                if self.dp.advance(i, now) {
                    busy = true;
                }
                while let Some(f) = self.dp.pop_released(i, now) {
                    self.io[i].tx.push(f);
                }
                let p = &mut self.io[i];
                if !p.tx.is_empty() {
                    let (sent, failed) = p.sock.send_batch(&p.tx);
                    let bytes = p.tx.iter().take(sent).map(|f| f.len() as u64).sum::<u64>();
                    let st = self.dp.stats_mut(i);
                    st.tx_pkts += sent as u64;
                    st.tx_errors += failed as u64;
                    st.tx_bytes += bytes;
                    for f in self.io[i].tx.drain(..) {
                        self.dp.recycle_frame(f);
                    }
                    busy = true;
                }
            }

            if busy && now - last_publish < PUBLISH_NS {
                continue;
            }
            // PACKET_STATISTICS is a system call per port: read it when the
            // ring flagged drops, else every RING_STATS_NS. Read at every
            // publish, it was most of the switch's system calls at a
            // moderate rate (a wake-up per burst, each ending in a publish).
            let read_all = now - last_ring_stats >= RING_STATS_NS;
            for i in 0..self.io.len() {
                let io = &mut self.io[i];
                if read_all || io.sock.ring_losing() {
                    let drops = io.sock.take_ring_drops();
                    self.dp.stats_mut(i).ring_drops += drops;
                }
            }
            if read_all {
                last_ring_stats = now;
            }
            self.dp.publish();
            last_publish = now;
            if busy {
                continue;
            }

            // Idle: sleep until the next departure or a frame arrives.
            let next = self.dp.next_event_ns();
            let now = self.now();
            let timeout = match next {
                Some(t) if t <= now => continue,
                Some(t) => (t - now).min(MAX_SLEEP_NS),
                None => MAX_SLEEP_NS,
            };
            if timeout < SPIN_NS {
                // Spin, still picking up arrivals.
                let _ = wait_readable(&mut pollfds, Some(0));
                self.check_errors(&mut pollfds);
                if pollfds.iter().all(|p| p.revents == 0) {
                    std::hint::spin_loop();
                }
                continue;
            }
            let _ = wait_readable(&mut pollfds, Some(timeout));
            if pollfds.last().map(|p| p.revents != 0).unwrap_or(false) {
                self.shared.drain_wake();
            }
            self.check_errors(&mut pollfds);
        }
        self.dp.publish();
    }
}
