//! The packet thread: one event loop doing rx → ingress → enqueue and, when
//! each port's next departure is due, dequeue → egress → link → tx.
use p4rt::{P4RuntimeService, PacketOutFrame, PipelineSlot};
use pipeline::{Engine, QueueMeta, Queued};
use ports::queue::PortStats;
use ports::socket::{monotonic_ns, realtime_ns, set_precise_timers, wait_readable};
use ports::{EgressPort, PacketSocket, PortSettings};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
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

/// What the control plane sees of, and changes on, a port.
pub struct PortShared {
    pub port: u32,
    pub iface: String,
    pub settings: Mutex<PortSettings>,
    pub queue_len: AtomicUsize,
    pub stats: [AtomicU64; 10],
}

impl PortShared {
    pub fn new(port: u32, iface: String, settings: PortSettings) -> PortShared {
        PortShared {
            port,
            iface,
            settings: Mutex::new(settings),
            queue_len: AtomicUsize::new(0),
            stats: Default::default(),
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
        }
    }

    fn publish(&self, st: &PortStats, queue_len: usize) {
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

    fn drain_wake(&self) {
        let mut v: u64 = 0;
        unsafe {
            libc::read(self.wake.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8);
        }
    }

    pub fn port(&self, n: u32) -> Option<&Arc<PortShared>> {
        self.ports.iter().find(|p| p.port == n)
    }
}

struct Port {
    num: u32,
    sock: PacketSocket,
    egress: EgressPort<Queued>,
    shared: Arc<PortShared>,
    tx: Vec<Vec<u8>>,
}

pub struct Dataplane {
    ports: Vec<Port>,
    /// v1model port number → index into `ports`.
    index: Vec<Option<usize>>,
    shared: Arc<Shared>,
    slot: Arc<PipelineSlot>,
    cpu_port: Option<u32>,
    p4rt: Option<P4RuntimeService>,
    packet_out: Option<mpsc::Receiver<PacketOutFrame>>,
    seed: u64,
    engine: Option<Engine>,
    /// Scratch: packets out of ingress and their arrival times.
    out: Vec<Queued>,
    arrivals: Vec<u64>,
    requeue: Vec<Queued>,
}

/// How far back a receive timestamp may place an arrival (older ones are
/// taken as arriving this long ago).
const MAX_RX_AGE_NS: u64 = ports::queue::MAX_LAG_NS;

impl Dataplane {
    pub fn new(
        socks: Vec<(u32, PacketSocket)>,
        shared: Arc<Shared>,
        slot: Arc<PipelineSlot>,
        seed: u64,
        cpu_port: Option<u32>,
        p4rt: Option<P4RuntimeService>,
        packet_out: Option<mpsc::Receiver<PacketOutFrame>>,
    ) -> Dataplane {
        let mut index = vec![None; 512];
        let mut ports = Vec::new();
        for (num, sock) in socks {
            let sh = shared.port(num).expect("port shared state").clone();
            let settings = sh.settings();
            index[num as usize] = Some(ports.len());
            ports.push(Port {
                num,
                sock,
                egress: EgressPort::new(settings, seed ^ (num as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                shared: sh,
                tx: Vec::with_capacity(64),
            });
        }
        Dataplane {
            ports,
            index,
            shared,
            slot,
            cpu_port,
            p4rt,
            packet_out,
            seed,
            engine: None,
            out: Vec::with_capacity(64),
            arrivals: Vec::with_capacity(64),
            requeue: Vec::with_capacity(8),
        }
    }

    fn now(&self) -> u64 {
        monotonic_ns() - self.shared.start_ns
    }

    fn port_index(&self, port: u32) -> Option<usize> {
        self.index.get(port as usize).copied().flatten()
    }

    /// Runs port `i`'s departures due by `t` (on the link's schedule):
    /// dequeue, egress, put on the link. Returns whether any left.
    fn advance(&mut self, i: usize, t: u64) -> bool {
        let mut any = false;
        while let Some((q, m)) = self.ports[i].egress.dequeue(t) {
            any = true;
            let Some(e) = self.engine.as_mut() else { continue };
            let qm = QueueMeta {
                enq_qdepth: m.enq_qdepth,
                deq_qdepth: m.deq_qdepth,
                deq_timedelta_us: m.deq_timedelta_us().min(u32::MAX as u64) as u32,
                enq_timestamp_us: m.enq_timestamp_us(),
            };
            let frame = e.egress(q, qm, m.deq_ns / 1000, &mut self.requeue);
            if !self.requeue.is_empty() {
                let mut rq = std::mem::take(&mut self.requeue);
                for r in rq.drain(..) {
                    if r.is_recirculate() {
                        if let Some(e) = self.engine.as_mut() {
                            e.ingress_recirculated(r, m.deq_ns / 1000, &mut self.out);
                        }
                        let mut out = std::mem::take(&mut self.out);
                        for q in out.drain(..) {
                            self.enqueue(q, m.deq_ns);
                        }
                        self.out = out;
                    } else {
                        // Clones join their port's queue at this time.
                        self.enqueue(r, m.deq_ns);
                    }
                }
                self.requeue = rq;
            }
            if let Some(f) = frame {
                let p = &mut self.ports[i];
                if Some(p.num) == self.cpu_port {
                    if let Some(s) = &self.p4rt {
                        s.packet_in(&f);
                    }
                } else {
                    p.egress.transmit(f, m.deq_ns);
                }
            }
        }
        any
    }

    /// A packet for the CPU port: egress at once (the CPU port has no queue
    /// or link), then to the primary controller as a PacketIn.
    fn send_to_cpu(&mut self, q: Queued, t: u64) {
        let Some(e) = self.engine.as_mut() else { return };
        let qm = QueueMeta { enq_qdepth: 0, deq_qdepth: 0, deq_timedelta_us: 0, enq_timestamp_us: t / 1000 };
        let frame = e.egress(q, qm, t / 1000, &mut self.requeue);
        let rq: Vec<Queued> = self.requeue.drain(..).collect();
        for r in rq {
            if !r.is_recirculate() && Some(r.egress_port()) != self.cpu_port {
                self.enqueue(r, t);
            }
        }
        if let (Some(f), Some(s)) = (frame, &self.p4rt) {
            if !s.packet_in(&f) {
                log::debug!("packet-in dropped: no primary controller");
            }
        }
    }

    fn enqueue(&mut self, q: Queued, t: u64) {
        if Some(q.egress_port()) == self.cpu_port {
            return self.send_to_cpu(q, t);
        }
        match self.port_index(q.egress_port()) {
            Some(i) => {
                let _ = self.ports[i].egress.enqueue(q, t);
            }
            None => {
                log::debug!("dropped a packet for port {}: the switch has no such port", q.egress_port());
                self.shared.unknown_port_drops.fetch_add(1, Relaxed);
            }
        }
    }

    /// Enqueues what ingress produced, in arrival order: each port's queue is
    /// first advanced to the packet's arrival time, so the queue evolves as
    /// on a real switch even when this thread ran late (frames waiting in the
    /// receive ring keep their kernel arrival times).
    fn enqueue_arrivals(&mut self) {
        let mut out = std::mem::take(&mut self.out);
        let mut arr = std::mem::take(&mut self.arrivals);
        for (q, t) in out.drain(..).zip(arr.drain(..)) {
            if Some(q.egress_port()) == self.cpu_port {
                self.send_to_cpu(q, t);
                continue;
            }
            match self.port_index(q.egress_port()) {
                Some(i) => {
                    self.advance(i, t);
                    let _ = self.ports[i].egress.enqueue(q, t);
                }
                None => {
                    log::debug!("dropped a packet for port {}: the switch has no such port", q.egress_port());
                    self.shared.unknown_port_drops.fetch_add(1, Relaxed);
                }
            }
        }
        self.out = out;
        self.arrivals = arr;
    }

    /// Clears socket errors poll reported (else poll would return at once,
    /// forever); stops polling an interface that disappeared.
    fn check_errors(&mut self, pollfds: &mut [libc::pollfd]) {
        for (i, p) in self.ports.iter().enumerate() {
            let pf = &mut pollfds[i];
            if pf.fd < 0 || pf.revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) == 0 {
                continue;
            }
            let err = p.sock.take_error();
            if !p.sock.interface_exists() || pf.revents & libc::POLLNVAL != 0 {
                log::error!("port {}: interface {} is gone; the port no longer receives", p.num, p.sock.iface());
                pf.fd = -1;
            } else if let Some(e) = err {
                log::info!("port {} ({}): {e}", p.num, p.sock.iface());
            } else if pf.revents & libc::POLLHUP != 0 {
                log::error!("port {} ({}): socket hung up; the port no longer receives", p.num, p.sock.iface());
                pf.fd = -1;
            }
        }
    }

    /// Runs until `shared.stop` is set.
    pub fn run(mut self) {
        set_precise_timers();
        let mut gen = u64::MAX;
        let mut settings_gen = u64::MAX;
        let mut pollfds: Vec<libc::pollfd> = self
            .ports
            .iter()
            .map(|p| libc::pollfd { fd: p.sock.fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        pollfds.push(libc::pollfd { fd: self.shared.wake.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        let mut last_publish = 0u64;
        let mut engine_seed = self.seed;

        while !self.shared.stop.load(Relaxed) {
            // A new pipeline: new engine; queued packets of the old one go.
            let g = self.slot.generation();
            if g != gen {
                let (g2, st) = self.slot.current();
                gen = g2;
                engine_seed = engine_seed.wrapping_add(1);
                self.engine = st.map(|s| Engine::with_seed(s, engine_seed));
                for p in &mut self.ports {
                    p.egress.flush();
                }
            }
            let sg = self.shared.settings_gen.load(Relaxed);
            if sg != settings_gen {
                settings_gen = sg;
                for p in &mut self.ports {
                    p.egress.set_settings(p.shared.settings());
                }
            }

            let now = self.now();
            // Receive timestamps are CLOCK_REALTIME; this maps them to our clock.
            let rt_base = realtime_ns().saturating_sub(monotonic_ns() - self.shared.start_ns);
            let mut busy = false;

            // Receive.
            for i in 0..self.ports.len() {
                let num = self.ports[i].num;
                let (mut rx_pkts, mut rx_bytes, mut nopipe) = (0u64, 0u64, 0u64);
                let Dataplane { ports, engine, out, arrivals, .. } = &mut self;
                let p = &mut ports[i];
                let trunc_before = p.sock.rx_truncated;
                let n = p.sock.recv_batch(RX_BUDGET, |frame, ts| {
                    rx_pkts += 1;
                    rx_bytes += frame.len() as u64;
                    let t = ts.saturating_sub(rt_base).clamp(now.saturating_sub(MAX_RX_AGE_NS), now);
                    match engine.as_mut() {
                        Some(e) => {
                            e.ingress(frame, num, t / 1000, out);
                            arrivals.resize(out.len(), t);
                        }
                        None => nopipe += 1,
                    }
                });
                p.egress.stats.rx_pkts += rx_pkts;
                p.egress.stats.rx_bytes += rx_bytes;
                p.egress.stats.rx_dropped += p.sock.rx_truncated - trunc_before;
                if nopipe > 0 {
                    self.shared.no_pipeline_drops.fetch_add(nopipe, Relaxed);
                }
                if n > 0 {
                    busy = true;
                }
                self.enqueue_arrivals();
            }

            // Packet-out from the controller: ingress on the CPU port.
            if let (Some(rx), Some(cpu)) = (self.packet_out.as_mut(), self.cpu_port) {
                let mut frames = Vec::new();
                while let Ok(f) = rx.try_recv() {
                    frames.push(f);
                }
                for f in frames {
                    if let Some(e) = self.engine.as_mut() {
                        e.ingress(&f.frame, cpu, now / 1000, &mut self.out);
                        self.arrivals.resize(self.out.len(), now);
                    }
                    self.enqueue_arrivals();
                }
            }

            // Departures due now, and frames whose propagation is over.
            for i in 0..self.ports.len() {
                if self.advance(i, now) {
                    busy = true;
                }
                let p = &mut self.ports[i];
                while let Some(f) = p.egress.pop_released(now) {
                    p.tx.push(f);
                }
                if !p.tx.is_empty() {
                    let (sent, failed) = p.sock.send_batch(&p.tx);
                    p.egress.stats.tx_pkts += sent as u64;
                    p.egress.stats.tx_errors += failed as u64;
                    if failed == 0 {
                        p.egress.stats.tx_bytes += p.tx.iter().map(|f| f.len() as u64).sum::<u64>();
                    } else {
                        p.egress.stats.tx_bytes += p.tx.iter().take(sent).map(|f| f.len() as u64).sum::<u64>();
                    }
                    p.tx.clear();
                    busy = true;
                }
            }

            if busy && now - last_publish < PUBLISH_NS {
                continue;
            }
            for p in &self.ports {
                p.shared.publish(&p.egress.stats, p.egress.queue_len());
            }
            last_publish = now;
            if busy {
                continue;
            }

            // Idle: sleep until the next departure or a frame arrives.
            let next = self.ports.iter().filter_map(|p| p.egress.next_event_ns()).min();
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
        for p in &self.ports {
            p.shared.publish(&p.egress.stats, p.egress.queue_len());
        }
    }
}
