//! A switch's packet path on the caller's clock: ingress → enqueue on the
//! egress port's queue, and, when a port's next departure is due, dequeue →
//! egress → link. It does no I/O and reads no clock: the embedded target's
//! socket loop (p4cc-switch) and the virtual-time simulator (p4cc-sim) both
//! drive this same code, so the two executors cannot disagree about what a
//! switch does with a packet.
use crate::shared::Shared;
use p4rt::{P4RuntimeService, PipelineSlot};
use pipeline::{Engine, QueueMeta, Queued};
use ports::EgressPort;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// One switch port: its queue and the link behind it.
pub struct CorePort {
    pub num: u32,
    pub egress: EgressPort<Queued>,
}

pub struct SwitchCore {
    pub ports: Vec<CorePort>,
    /// v1model port number → index into `ports`.
    index: Vec<Option<usize>>,
    shared: Arc<Shared>,
    slot: Arc<PipelineSlot>,
    cpu_port: Option<u32>,
    p4rt: Option<P4RuntimeService>,
    engine: Option<Engine>,
    engine_seed: u64,
    pipeline_gen: u64,
    settings_gen: u64,
    /// ns per tick of the pipeline's clock: 1000 (µs, bmv2's) or 1.
    tick_ns: u64,
    /// Scratch: packets out of ingress and their arrival times.
    out: Vec<Queued>,
    arrivals: Vec<u64>,
    requeue: Vec<Queued>,
    /// When each port next has something to do (its queue's next
    /// departure or its link's next release; `u64::MAX`: nothing), kept
    /// as each port changes. A wake-up reads this array instead of each
    /// port's queue and delay line, which cost a leaf switch ten ports'
    /// cache lines to find the one port due.
    next_at: Vec<u64>,
    /// The least of `next_at` unless `earliest_stale`. Most changes move
    /// one port's next event earlier (a frame in), which keeps it without
    /// reading the other ports; only when the port that held the least
    /// moves later are they read again, when next asked (−0.6 % of a
    /// fabric run's instructions: a leaf has a dozen ports).
    earliest: std::cell::Cell<u64>,
    earliest_stale: std::cell::Cell<bool>,
}

impl SwitchCore {
    /// A core for the ports of `shared` (their settings are read from it),
    /// running whatever pipeline `slot` holds.
    pub fn new(
        shared: Arc<Shared>,
        slot: Arc<PipelineSlot>,
        seed: u64,
        cpu_port: Option<u32>,
        p4rt: Option<P4RuntimeService>,
    ) -> SwitchCore {
        let mut index = vec![None; 512];
        let mut ports = Vec::new();
        for sh in &shared.ports {
            index[sh.port as usize] = Some(ports.len());
            ports.push(CorePort {
                num: sh.port,
                egress: EgressPort::new(sh.settings(), seed ^ (sh.port as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            });
        }
        let nports = ports.len();
        SwitchCore {
            ports,
            index,
            shared,
            slot,
            cpu_port,
            p4rt,
            engine: None,
            engine_seed: seed,
            pipeline_gen: u64::MAX,
            settings_gen: u64::MAX,
            tick_ns: 1000,
            out: Vec::with_capacity(64),
            arrivals: Vec::with_capacity(64),
            requeue: Vec::with_capacity(8),
            next_at: vec![u64::MAX; nports],
            earliest: std::cell::Cell::new(u64::MAX),
            earliest_stale: std::cell::Cell::new(false),
        }
    }

    /// Re-reads port `i`'s next event into `next_at`, after it changed.
    #[inline]
    fn refresh(&mut self, i: usize) {
        let new = self.ports[i].egress.next_event_ns().unwrap_or(u64::MAX);
        let old = std::mem::replace(&mut self.next_at[i], new);
        let e = self.earliest.get();
        if new <= e {
            self.earliest.set(new);
        } else if old == e {
            // (the earliest may have been this port's: found again when asked)
            self.earliest_stale.set(true);
        }
    }

    /// Picks up what the control plane changed: a new pipeline (a new
    /// engine; packets queued under the old one are dropped) and new port
    /// settings. Cheap when nothing changed.
    pub fn sync(&mut self) {
        let g = self.slot.generation();
        if g != self.pipeline_gen {
            let (g2, st) = self.slot.current();
            self.pipeline_gen = g2;
            self.engine_seed = self.engine_seed.wrapping_add(1);
            self.engine = st.map(|s| Engine::with_seed(s, self.engine_seed));
            match self.engine.as_ref().and_then(Engine::native_code) {
                Some(Ok(c)) => log::debug!(
                    "pipeline: {} native pipelines, {} conditions and {} primitives inline, {} primitives and {} actions on closures",
                    c.pipelines, c.native_conds, c.native_prims, c.helper_prims, c.helper_actions
                ),
                // Slower, not different: the closures run the program then.
                Some(Err(e)) => log::warn!("pipeline: no native code ({e}); running it on the interpreter's closures"),
                None => {}
            }
            for p in &mut self.ports {
                p.egress.flush();
            }
            for i in 0..self.ports.len() {
                self.refresh(i);
            }
        }
        self.tick_ns = if self.shared.clock_ns.load(Relaxed) { 1 } else { 1000 };
        let sg = self.shared.settings_gen.load(Relaxed);
        if sg != self.settings_gen {
            self.settings_gen = sg;
            for (p, sh) in self.ports.iter_mut().zip(&self.shared.ports) {
                // (a port's settings time its next frame, not its next event)
                p.egress.set_settings(sh.settings());
            }
        }
    }

    pub fn has_pipeline(&self) -> bool {
        self.engine.is_some()
    }

    pub fn port_index(&self, port: u32) -> Option<usize> {
        self.index.get(port as usize).copied().flatten()
    }

    /// Ingress of a frame that arrived on `port` at `t` (ns); call
    /// [`enqueue_arrivals`](Self::enqueue_arrivals) after a batch. Returns
    /// false when no pipeline is loaded (the frame is dropped, counted).
    pub fn ingress(&mut self, frame: &[u8], port: u32, t: u64) -> bool {
        self.ingress_with(t, |e, tick, out| e.ingress(frame, port, tick, out))
    }

    /// Runs `run` (one of the engine's ingress calls, given the engine, the
    /// time in its ticks and the output list) if a pipeline is loaded;
    /// the packets it produced arrived at `t`.
    fn ingress_with(&mut self, t: u64, run: impl FnOnce(&mut Engine, u64, &mut Vec<Queued>)) -> bool {
        match self.engine.as_mut() {
            Some(e) => {
                run(e, t / self.tick_ns, &mut self.out);
                self.arrivals.resize(self.out.len(), t);
                true
            }
            None => {
                self.shared.no_pipeline_drops.fetch_add(1, Relaxed);
                false
            }
        }
    }

    /// A frame that arrived on `port` at `t`: ingress, then its packets join
    /// their queues.
    pub fn receive(&mut self, frame: &[u8], port: u32, t: u64) -> bool {
        let ok = self.ingress(frame, port, t);
        self.enqueue_arrivals();
        ok
    }

    /// `receive` of a frame the caller gives up: it becomes the packet's
    /// buffer, not copied (`Engine::ingress_owned`, which keeps the frame
    /// pools level as `recycle_frame` after `receive` would).
    pub fn receive_owned(&mut self, frame: Vec<u8>, port: u32, t: u64) -> bool {
        let ok = self.ingress_with(t, |e, tick, out| e.ingress_owned(frame, port, tick, out));
        self.enqueue_arrivals();
        ok
    }

    /// A packet-out from the controller: ingress on the CPU port at `t`.
    pub fn packet_out(&mut self, frame: &[u8], t: u64) {
        if let Some(cpu) = self.cpu_port {
            self.receive(frame, cpu, t);
        }
    }

    /// Enqueues what ingress produced, in arrival order: each port's queue is
    /// first advanced to the packet's arrival time, so the queue evolves as
    /// on a real switch even when the caller ran late (frames waiting in a
    /// receive ring keep their arrival times).
    ///
    /// A batch may hold several ports' frames, read port after port; they
    /// join the queues in the order they arrived, not the order they were
    /// read. Otherwise the port read first would take every slot a
    /// departure frees before a frame that arrived earlier on another port
    /// is looked at: drop-tail would favour low port numbers whenever the
    /// caller runs behind, and flows sharing a full queue would not see the
    /// same loss.
    pub fn enqueue_arrivals(&mut self) {
        let mut out = std::mem::take(&mut self.out);
        let mut arr = std::mem::take(&mut self.arrivals);
        if !arr.is_sorted() {
            let mut both: Vec<(u64, Queued)> = arr.drain(..).zip(out.drain(..)).collect();
            // Stable: frames of one port, and of one instant, keep their order.
            both.sort_by_key(|&(t, _)| t);
            (arr, out) = both.into_iter().unzip();
        }
        for (q, t) in out.drain(..).zip(arr.drain(..)) {
            if Some(q.egress_port()) == self.cpu_port {
                self.send_to_cpu(q, t);
                continue;
            }
            match self.port_index(q.egress_port()) {
                Some(i) => {
                    self.advance(i, t);
                    let _ = self.ports[i].egress.enqueue(q, t);
                    self.refresh(i);
                }
                None => self.unknown_port(q.egress_port()),
            }
        }
        self.out = out;
        self.arrivals = arr;
    }

    fn unknown_port(&self, port: u32) {
        log::debug!("dropped a packet for port {port}: the switch has no such port");
        self.shared.unknown_port_drops.fetch_add(1, Relaxed);
    }

    fn enqueue(&mut self, q: Queued, t: u64) {
        if Some(q.egress_port()) == self.cpu_port {
            return self.send_to_cpu(q, t);
        }
        match self.port_index(q.egress_port()) {
            Some(i) => {
                let _ = self.ports[i].egress.enqueue(q, t);
                self.refresh(i);
            }
            None => self.unknown_port(q.egress_port()),
        }
    }

    /// Runs port `i`'s departures due by `t` (on the link's schedule):
    /// dequeue, egress, put on the link. Returns whether any left.
    pub fn advance(&mut self, i: usize, t: u64) -> bool {
        if self.next_at[i] > t {
            // (nothing is due: no departure, as no release, before next_at)
            return false;
        }
        let mut any = false;
        while let Some((q, m)) = self.ports[i].egress.dequeue(t) {
            any = true;
            let Some(e) = self.engine.as_mut() else { continue };
            let tick = self.tick_ns;
            let qm = QueueMeta {
                enq_qdepth: m.enq_qdepth,
                deq_qdepth: m.deq_qdepth,
                deq_timedelta_us: ((m.deq_ns - m.enq_ns) / tick).min(u32::MAX as u64) as u32,
                enq_timestamp_us: m.enq_ns / tick,
            };
            let frame = e.egress(q, qm, m.deq_ns / tick, &mut self.requeue);
            if !self.requeue.is_empty() {
                let mut rq = std::mem::take(&mut self.requeue);
                for r in rq.drain(..) {
                    if r.is_recirculate() {
                        if let Some(e) = self.engine.as_mut() {
                            e.ingress_recirculated(r, m.deq_ns / tick, &mut self.out);
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
        self.refresh(i);
        any
    }

    /// Every port's departures due by `t`; whether any left.
    pub fn advance_all(&mut self, t: u64) -> bool {
        let mut any = false;
        for i in 0..self.ports.len() {
            // The idle ports skipped here, without a call: `advance` is too
            // large to inline, and its entry alone was 1.4 % of a fabric's
            // instructions, a leaf waking all of its ports for one.
            if self.next_at[i] <= t {
                any |= self.advance(i, t);
            }
        }
        any
    }

    /// A packet for the CPU port: egress at once (the CPU port has no queue
    /// or link), then to the primary controller as a PacketIn.
    fn send_to_cpu(&mut self, q: Queued, t: u64) {
        let Some(e) = self.engine.as_mut() else { return };
        let qm = QueueMeta { enq_qdepth: 0, deq_qdepth: 0, deq_timedelta_us: 0, enq_timestamp_us: t / self.tick_ns };
        let frame = e.egress(q, qm, t / self.tick_ns, &mut self.requeue);
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

    /// Gives back a frame [`pop_released`](Self::pop_released) returned (or
    /// any other), once it is sent, for a later egress to write into.
    pub fn recycle_frame(&mut self, frame: Vec<u8>) {
        if let Some(e) = self.engine.as_mut() {
            e.recycle_frame(frame);
        }
    }

    /// The next frame of port `i` whose propagation is over by `t`.
    pub fn pop_released(&mut self, i: usize, t: u64) -> Option<Vec<u8>> {
        if self.next_at[i] > t {
            return None;
        }
        let f = self.ports[i].egress.pop_released(t);
        self.refresh(i);
        f
    }

    /// The earliest time any port has something to do.
    pub fn next_event_ns(&self) -> Option<u64> {
        if self.earliest_stale.replace(false) {
            self.earliest.set(self.next_at.iter().copied().min().unwrap_or(u64::MAX));
        }
        Some(self.earliest.get()).filter(|&t| t != u64::MAX)
    }

    /// Publishes counters and queue lengths for the control plane.
    pub fn publish(&self) {
        for (p, sh) in self.ports.iter().zip(&self.shared.ports) {
            sh.publish(&p.egress.stats, &p.egress.slip, p.egress.queue_len());
        }
    }
}

impl crate::socket_loop::Datapath for SwitchCore {
    fn sync(&mut self) {
        SwitchCore::sync(self)
    }
    fn port_num(&self, i: usize) -> u32 {
        self.ports[i].num
    }
    fn stats_mut(&mut self, i: usize) -> &mut ports::queue::PortStats {
        &mut self.ports[i].egress.stats
    }
    fn ingress(&mut self, frame: &[u8], port: u32, t: u64) {
        SwitchCore::ingress(self, frame, port, t);
    }
    fn enqueue_arrivals(&mut self) {
        SwitchCore::enqueue_arrivals(self)
    }
    fn advance(&mut self, i: usize, t: u64) -> bool {
        SwitchCore::advance(self, i, t)
    }
    fn pop_released(&mut self, i: usize, t: u64) -> Option<Vec<u8>> {
        SwitchCore::pop_released(self, i, t)
    }
    fn recycle_frame(&mut self, frame: Vec<u8>) {
        SwitchCore::recycle_frame(self, frame)
    }
    fn next_event_ns(&self) -> Option<u64> {
        SwitchCore::next_event_ns(self)
    }
    fn publish(&self) {
        SwitchCore::publish(self)
    }
}
