//! The packet thread: the switch's packet path (p4cc-node's SwitchCore) on
//! real interfaces and the monotonic clock — receive into ingress, run the
//! departures that are due, send what the links released, sleep until the
//! next departure or frame.
use node::{Shared, SwitchCore};
use p4rt::{P4RuntimeService, PacketOutFrame, PipelineSlot};
use ports::socket::{monotonic_ns, realtime_ns, set_precise_timers, wait_readable};
use ports::PacketSocket;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use tokio::sync::mpsc;

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

/// A port's socket and the frames waiting to be sent on it.
struct PortIo {
    sock: PacketSocket,
    tx: Vec<Vec<u8>>,
}

pub struct Dataplane {
    core: SwitchCore,
    /// Parallel to `core.ports` (and `shared.ports`).
    io: Vec<PortIo>,
    shared: Arc<Shared>,
    packet_out: Option<mpsc::Receiver<PacketOutFrame>>,
}

impl Dataplane {
    /// `socks` in the order of `shared.ports`.
    pub fn new(
        socks: Vec<(u32, PacketSocket)>,
        shared: Arc<Shared>,
        slot: Arc<PipelineSlot>,
        seed: u64,
        cpu_port: Option<u32>,
        p4rt: Option<P4RuntimeService>,
        packet_out: Option<mpsc::Receiver<PacketOutFrame>>,
    ) -> Dataplane {
        debug_assert!(socks.iter().zip(&shared.ports).all(|((n, _), p)| *n == p.port));
        let core = SwitchCore::new(shared.clone(), slot, seed, cpu_port, p4rt);
        let io = socks.into_iter().map(|(_, sock)| PortIo { sock, tx: Vec::with_capacity(64) }).collect();
        Dataplane { core, io, shared, packet_out }
    }

    fn now(&self) -> u64 {
        monotonic_ns() - self.shared.start_ns
    }

    /// Clears socket errors poll reported (else poll would return at once,
    /// forever); stops polling an interface that disappeared.
    fn check_errors(&mut self, pollfds: &mut [libc::pollfd]) {
        for (i, (p, io)) in self.core.ports.iter().zip(&self.io).enumerate() {
            let pf = &mut pollfds[i];
            if pf.fd < 0 || pf.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) == 0 {
                continue;
            }
            let err = io.sock.take_error();
            if !io.sock.interface_exists() || pf.revents & libc::POLLNVAL != 0 {
                log::error!("port {}: interface {} is gone; the port no longer receives", p.num, io.sock.iface());
                pf.fd = -1;
            } else if let Some(e) = err {
                log::info!("port {} ({}): {e}", p.num, io.sock.iface());
            } else if pf.revents & libc::POLLHUP != 0 {
                log::error!("port {} ({}): socket hung up; the port no longer receives", p.num, io.sock.iface());
                pf.fd = -1;
            }
        }
    }

    /// Runs until `shared.stop` is set.
    pub fn run(mut self) {
        set_precise_timers();
        let mut pollfds: Vec<libc::pollfd> =
            self.io.iter().map(|p| libc::pollfd { fd: p.sock.fd(), events: libc::POLLIN, revents: 0 }).collect();
        pollfds.push(libc::pollfd { fd: self.shared.wake_fd(), events: libc::POLLIN, revents: 0 });
        let mut last_publish = 0u64;
        let mut last_ring_stats = 0u64;

        while !self.shared.stop.load(Relaxed) {
            self.core.sync();
            let now = self.now();
            // Receive timestamps are CLOCK_REALTIME; this maps them to our clock.
            let rt_base = realtime_ns().saturating_sub(monotonic_ns() - self.shared.start_ns);
            let mut busy = false;

            // Receive.
            for i in 0..self.io.len() {
                let Dataplane { core, io, .. } = &mut self;
                let num = core.ports[i].num;
                let (mut rx_pkts, mut rx_bytes) = (0u64, 0u64);
                let p = &mut io[i];
                let trunc_before = p.sock.rx_truncated;
                let n = p.sock.recv_batch(RX_BUDGET, |frame, ts| {
                    rx_pkts += 1;
                    rx_bytes += frame.len() as u64;
                    let t = ts.saturating_sub(rt_base).clamp(now.saturating_sub(MAX_RX_AGE_NS), now);
                    core.ingress(frame, num, t);
                });
                let st = &mut core.ports[i].egress.stats;
                st.rx_pkts += rx_pkts;
                st.rx_bytes += rx_bytes;
                st.rx_dropped += p.sock.rx_truncated - trunc_before;
                if n > 0 {
                    busy = true;
                }
            }
            // All ports' frames at once, in arrival order (see enqueue_arrivals).
            self.core.enqueue_arrivals();

            // Packet-out from the controller: ingress on the CPU port.
            if let Some(rx) = self.packet_out.as_mut() {
                let mut frames = Vec::new();
                while let Ok(f) = rx.try_recv() {
                    frames.push(f);
                }
                for f in frames {
                    self.core.packet_out(&f.frame, now);
                }
            }

            // Departures due now, and frames whose propagation is over.
            for i in 0..self.io.len() {
                if self.core.advance(i, now) {
                    busy = true;
                }
                while let Some(f) = self.core.pop_released(i, now) {
                    self.io[i].tx.push(f);
                }
                let p = &mut self.io[i];
                if !p.tx.is_empty() {
                    let (sent, failed) = p.sock.send_batch(&p.tx);
                    let st = &mut self.core.ports[i].egress.stats;
                    st.tx_pkts += sent as u64;
                    st.tx_errors += failed as u64;
                    st.tx_bytes += p.tx.iter().take(sent).map(|f| f.len() as u64).sum::<u64>();
                    for f in p.tx.drain(..) {
                        self.core.recycle_frame(f);
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
            for (p, io) in self.core.ports.iter_mut().zip(self.io.iter_mut()) {
                if read_all || io.sock.ring_losing() {
                    p.egress.stats.ring_drops += io.sock.take_ring_drops();
                }
            }
            if read_all {
                last_ring_stats = now;
            }
            self.core.publish();
            last_publish = now;
            if busy {
                continue;
            }

            // Idle: sleep until the next departure or a frame arrives.
            let next = self.core.next_event_ns();
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
        self.core.publish();
    }
}
