//! The packet path, following bmv2 simple_switch: `ingress` runs parser,
//! checksum verification and the ingress pipeline, then the traffic-manager
//! decisions (I2E clone, resubmit, multicast, drop, unicast); the caller
//! queues the resulting [`Queued`] packets (PHV kept, not re-parsed) and
//! calls `egress` at dequeue, which runs the egress pipeline, E2E clone,
//! drop, checksum update, deparser, recirculation and truncation.

use crate::actions::{self, Exec};
use crate::eval::Ctx;
use crate::fast::FastProgram;
use crate::ir::{Node, Program};
use crate::packet::Pkt;
use crate::parser;
use crate::phv::Phv;
use crate::rng::Rng;
use crate::state::{Replica, State};
use crate::jit::{Jit, JitStats, Pipe, Run};
use crate::tables::TableState;
use std::sync::Arc;

/// bmv2 simple_switch instance_type values.
pub mod instance_type {
    pub const NORMAL: u32 = 0;
    pub const INGRESS_CLONE: u32 = 1;
    pub const EGRESS_CLONE: u32 = 2;
    pub const RECIRC: u32 = 4;
    pub const REPLICATION: u32 = 5;
    pub const RESUBMIT: u32 = 6;
}

/// The drop port of simple_switch (egress_spec value that drops).
pub const DROP_PORT: u32 = 511;
const MAX_RESUBMITS: u32 = 64;

/// A packet between ingress and egress: its PHV and payload.
#[derive(Clone, Debug)]
pub struct Queued {
    // Boxed: a packet is moved half a dozen times between ingress and
    // egress, and a pointer moves cheaper than the struct.
    pkt: Box<Pkt>,
    egress_port: u32,
    recirc: bool,
    session_truncate: Option<u32>,
    len: usize,
}

impl Queued {
    /// Port whose queue the packet joins.
    pub fn egress_port(&self) -> u32 {
        self.egress_port
    }
    /// Bytes the packet would have if deparsed now (for queue and rate
    /// accounting).
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// A recirculated packet: give it to [`Engine::ingress_recirculated`].
    pub fn is_recirculate(&self) -> bool {
        self.recirc
    }
    /// standard_metadata.instance_type of the packet (0 if absent).
    pub fn instance_type(&self, program: &Program) -> u32 {
        program.sm.instance_type.map_or(0, |s| self.pkt.phv.f()[s] as u32)
    }
}

/// Queue state for a packet leaving its queue (bmv2 queueing metadata).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueMeta {
    /// Queue length (packets) when the packet was enqueued, before it.
    pub enq_qdepth: u32,
    /// Queue length (packets) after the packet was removed.
    pub deq_qdepth: u32,
    /// Time spent in the queue, µs.
    pub deq_timedelta_us: u32,
    /// Enqueue time, µs.
    pub enq_timestamp_us: u64,
}

/// Packets kept for reuse: allocating a PHV (a few KB) and a payload
/// buffer for every packet cost about a tenth of the packet's time.
const POOL_MAX: usize = 256;

/// Output frames kept for reuse ([`Engine::recycle_frame`]): a frame per
/// packet from the allocator, and its return, cost about 3 % of a
/// simulated packet.
const FRAME_POOL_MAX: usize = 256;

struct Scratch {
    /// Table snapshots as of `tables_gen` (see state.rs).
    tables: Vec<Arc<TableState>>,
    tables_gen: u64,
    pool: Vec<Box<Pkt>>,
    frames: Vec<Vec<u8>>,
    rng: Rng,
    buf: Vec<u8>,
    key: Vec<u128>,
    lpm: Vec<u128>,
    args: Vec<u128>,
}

/// One per packet thread.
pub struct Engine {
    state: Arc<State>,
    prog: Arc<Program>,
    /// The specialised control blocks (fast.rs); None: the general path.
    fast: Option<Arc<FastProgram>>,
    /// The pipelines as native code (jit/), calling back into `fast` for
    /// what they have no inline form for. None: off; Err: not built (no
    /// code generator for this host), `fast` runs them.
    native: Option<Arc<Result<Jit, String>>>,
    s: Scratch,
}

#[inline]
fn sm_set(p: &Program, phv: &mut Phv, slot: Option<usize>, v: i128) {
    if let Some(s) = slot {
        phv.set(p, s, v);
    }
}

fn copy_field_list(p: &Program, dst: &mut Phv, src: &Phv, fl: u16) {
    if let Some(slots) = p.field_lists.get(&(fl as u64)) {
        for &s in slots {
            dst.put(s, src.f()[s]);
        }
    }
}

#[inline(always)]
fn run_action(fast: Option<&FastProgram>, x: &mut Exec, pkt: &mut Pkt, a: usize, args: &[u128]) {
    match fast {
        Some(f) => f.run_action(x, pkt, a, args),
        None => actions::run(x, pkt, &x.p.action_defs[a].prims, args),
    }
}

/// What a packet's pass runs, borrowed from the engine apart from its
/// scratch space: the program, its state, the fast path's closures and
/// the native code (each None when off).
#[derive(Clone, Copy)]
struct Code<'a> {
    p: &'a Program,
    state: &'a State,
    fast: Option<&'a FastProgram>,
    native: Option<&'a Jit>,
}

fn run_pipeline(c: Code, s: &mut Scratch, pkt: &mut Pkt, pipe: Pipe) {
    let Code { p, state, fast, native } = c;
    let gen = state.tables_gen();
    if gen != s.tables_gen {
        state.table_snapshots(&mut s.tables);
        s.tables_gen = gen;
    }
    if let (Some(f), Some(j)) = (fast, native.filter(|j| j.has(pipe))) {
        let mut run = Run {
            x: Exec { p, state, rng: &mut s.rng, buf: &mut s.buf, drop_port: DROP_PORT },
            fast: f,
            jit: j,
            tables: &s.tables,
            key: &mut s.key,
            lpm: &mut s.lpm,
            args: &mut s.args,
            pkt,
        };
        j.run(pipe, &mut run);
        return;
    }
    // One executor for the whole pass (the scratch fields it borrows are
    // not the ones the table lookups use).
    let mut x = Exec { p, state, rng: &mut s.rng, buf: &mut s.buf, drop_port: DROP_PORT };
    let mut node = pipe.start(p);
    let mut steps = 0u32;
    while let Some(n) = node {
        if pkt.exit {
            break;
        }
        steps += 1;
        if steps > 1_000_000 {
            break;
        }
        node = match n {
            Node::Cond(c) => {
                let cond = &p.conds[c];
                let ctx = Ctx { p, phv: &pkt.phv, args: &[], state };
                let v = match fast {
                    Some(f) => (f.conds[c])(&ctx),
                    None => ctx.eval_bool(&cond.expr),
                };
                if v {
                    cond.t
                } else {
                    cond.f
                }
            }
            Node::Call(c) => {
                let call = &p.calls[c];
                run_action(fast, &mut x, pkt, call.action, &[]);
                call.next
            }
            Node::Table(t) => {
                let def = &p.table_defs[t];
                if let Some((a, args)) = &def.fixed {
                    run_action(fast, &mut x, pkt, *a, args);
                    node = def.fixed_next;
                    continue;
                }
                let res = s.tables[t].apply(p, t, pkt, &mut s.key, &mut s.lpm, &mut s.args);
                if let Some(a) = res.action {
                    run_action(fast, &mut x, pkt, a, &s.args);
                }
                def.next_node(res.hit, res.action)
            }
        };
    }
}

impl Engine {
    pub fn new(state: Arc<State>) -> Engine {
        let seed = state.next_engine_seed();
        Engine::with_seed(state, seed)
    }

    /// An engine whose `random` draws come from the given seed.
    pub fn with_seed(state: Arc<State>, seed: u64) -> Engine {
        let prog = state.program().clone();
        // P4CC_JIT=0: the closures only (for comparing the two).
        let native = std::env::var("P4CC_JIT").map_or(true, |v| v != "0");
        let (fast, native) = crate::shared::code_for(&prog, native);
        Engine {
            state,
            prog,
            fast: Some(fast),
            native,
            s: Scratch { tables: Vec::new(), tables_gen: u64::MAX, pool: Vec::new(), frames: Vec::new(), rng: Rng::new(seed), buf: Vec::new(), key: Vec::new(), lpm: Vec::new(), args: Vec::new() },
        }
    }

    pub fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// Gives back a frame `egress` returned, once it is sent: the next
    /// egress writes into it instead of allocating.
    pub fn recycle_frame(&mut self, mut frame: Vec<u8>) {
        if self.s.frames.len() < FRAME_POOL_MAX {
            frame.clear();
            self.s.frames.push(frame);
        }
    }

    /// Runs the control blocks on the specialised fast path (the default)
    /// or on the general interpreter. Both give the same results; the
    /// general path is there to check that (tests/fuzz.rs).
    pub fn set_fast_path(&mut self, on: bool) {
        let (fast, native) = crate::shared::code_for(&self.prog, on);
        self.fast = on.then_some(fast);
        self.native = native;
    }

    /// The fast path with (`true`, the default) or without its native
    /// pipelines (jit/): the closures alone, as when the host has no
    /// code generator.
    pub fn set_native(&mut self, on: bool) {
        let (fast, native) = crate::shared::code_for(&self.prog, on);
        self.fast = Some(fast);
        self.native = native;
    }

    /// How much of the program runs as native code; Err: why none does
    /// (the fast path's closures run it then); None: native code is off.
    pub fn native_code(&self) -> Option<Result<JitStats, String>> {
        let j = self.native.as_deref()?;
        Some(j.as_ref().map(|j| j.stats).map_err(Clone::clone))
    }

    /// Parser, verify-checksum, ingress, then traffic-manager decisions.
    /// Appends 0..n packets to `out`.
    pub fn ingress(&mut self, frame: &[u8], ingress_port: u32, now_us: u64, out: &mut Vec<Queued>) {
        let pkt = self.arrival(frame.len(), ingress_port, now_us);
        self.ingress_common(pkt, Some(frame), ingress_port, out, 0);
    }

    /// `ingress` of a frame the caller gives up: it becomes the packet's
    /// buffer instead of being copied into it, and the buffer it replaces
    /// joins the engine's frames (`recycle_frame`), so a caller that hands
    /// in a frame for each it takes out keeps the pools level.
    pub fn ingress_owned(&mut self, frame: Vec<u8>, ingress_port: u32, now_us: u64, out: &mut Vec<Queued>) {
        let mut pkt = self.arrival(frame.len(), ingress_port, now_us);
        let spare = std::mem::replace(&mut pkt.buf, frame);
        self.recycle_frame(spare);
        self.ingress_common(pkt, None, ingress_port, out, 0);
    }

    /// A fresh packet for a frame of `len` bytes arriving on `ingress_port`.
    fn arrival(&mut self, len: usize, ingress_port: u32, now_us: u64) -> Box<Pkt> {
        let p = &*self.prog;
        let len = len as u32;
        let mut pkt = Pkt::fresh(p, &mut self.s.pool, len);
        let sm = p.sm;
        sm_set(p, &mut pkt.phv, sm.ingress_port, ingress_port as i128);
        sm_set(p, &mut pkt.phv, sm.packet_length, len as i128);
        sm_set(p, &mut pkt.phv, sm.instance_type, instance_type::NORMAL as i128);
        sm_set(p, &mut pkt.phv, sm.ingress_ts, now_us as i128);
        pkt
    }

    /// Runs ingress again for a packet `egress` flagged for recirculation.
    pub fn ingress_recirculated(&mut self, q: Queued, _now_us: u64, out: &mut Vec<Queued>) {
        let mut pkt = q.pkt;
        let frame = std::mem::take(&mut pkt.buf);
        let port = self.prog.sm.ingress_port.map_or(0, |s| pkt.phv.f()[s] as u32);
        self.ingress_common(pkt, Some(&frame), port, out, 0);
    }

    /// The engine's code and its scratch space, borrowed apart (not
    /// `Arc`s cloned: two atomic operations per clone were a measurable
    /// part of a packet).
    fn split(&mut self) -> (Code<'_>, &mut Scratch) {
        let native = self.native.as_deref().and_then(|j| j.as_ref().ok());
        (Code { p: &self.prog, state: &self.state, fast: self.fast.as_deref(), native }, &mut self.s)
    }

    /// Parser and ingress for `pkt`, whose frame is `frame` (None: it is
    /// in `pkt.buf` already), then the traffic manager's decisions.
    fn ingress_common(&mut self, mut pkt: Box<Pkt>, frame: Option<&[u8]>, ingress_port: u32, out: &mut Vec<Queued>, depth: u32) {
        let (code, s) = self.split();
        let Code { p, state, .. } = code;
        let sm = p.sm;
        parse_into(code, s, &mut pkt, frame);
        run_pipeline(code, s, &mut pkt, Pipe::Ingress);
        pkt.exit = false;
        if pkt.assert_failed {
            return s.recycle(pkt);
        }
        // The frame as it came, for an I2E clone's or a resubmission's
        // parse: the caller's, or a copy of the packet's own buffer, which
        // ingress leaves as it was (only the PHV changes before egress).
        let copy;
        let frame: &[u8] = match frame {
            Some(f) => f,
            None if pkt.clone.is_some() || pkt.resubmit != 0 => {
                copy = pkt.buf.clone();
                &copy
            }
            None => &[],
        };
        let egress_spec = sm.egress_spec.map_or(0, |s| pkt.phv.f()[s] as u32);
        let mgid = sm.mcast_grp.map_or(0, |s| pkt.phv.f()[s] as u16);

        // I2E clone: re-parse the original frame, preserve the field list.
        if let Some((session, fl)) = pkt.clone.take() {
            if let Some(cs) = state.clone_session(session as u32) {
                let mut c = Pkt::fresh(p, &mut s.pool, pkt.ingress_length);
                sm_set(p, &mut c.phv, sm.ingress_port, ingress_port as i128);
                parse_into(code, s, &mut c, Some(frame));
                c.phv.reset_metadata(p);
                copy_field_list(p, &mut c.phv, &pkt.phv, fl);
                sm_set(p, &mut c.phv, sm.instance_type, instance_type::INGRESS_CLONE as i128);
                c.pkt_len_reg = pkt.ingress_length;
                replicate(p, c, &cs.replicas, cs.truncate, out);
            }
        }

        if pkt.resubmit != 0 {
            if depth >= MAX_RESUBMITS {
                return s.recycle(pkt);
            }
            let mut r = Pkt::fresh(p, &mut s.pool, pkt.ingress_length);
            r.phv.reset_metadata(p);
            copy_field_list(p, &mut r.phv, &pkt.phv, pkt.resubmit);
            sm_set(p, &mut r.phv, sm.instance_type, instance_type::RESUBMIT as i128);
            sm_set(p, &mut r.phv, sm.packet_length, pkt.ingress_length as i128);
            let port = sm.ingress_port.map_or(0, |s| r.phv.f()[s] as u32);
            s.recycle(pkt);
            self.ingress_common(r, Some(frame), port, out, depth + 1);
            return;
        }

        if mgid != 0 {
            sm_set(p, &mut pkt.phv, sm.instance_type, instance_type::REPLICATION as i128);
            let replicas = state.with_mcast(mgid, |r| r.to_vec()).unwrap_or_default();
            replicate(p, pkt, &replicas, None, out);
            return;
        }

        if egress_spec == DROP_PORT {
            return s.recycle(pkt);
        }
        sm_set(p, &mut pkt.phv, sm.instance_type, instance_type::NORMAL as i128);
        enqueue(p, pkt, egress_spec, None, false, out);
    }

    /// Egress for a packet leaving its queue. Returns the frame to send on
    /// `pkt.egress_port()`, or None if dropped. E2E clones and
    /// recirculations are appended to `requeue`.
    pub fn egress(&mut self, q: Queued, qm: QueueMeta, now_us: u64, requeue: &mut Vec<Queued>) -> Option<Vec<u8>> {
        let (code, s) = self.split();
        let Code { p, state, .. } = code;
        let sm = p.sm;
        let port = q.egress_port;
        let session_truncate = q.session_truncate;
        let mut pkt = q.pkt;
        sm_set(p, &mut pkt.phv, sm.egress_ts, now_us as i128);
        if sm.with_queueing {
            sm_set(p, &mut pkt.phv, sm.enq_timestamp, qm.enq_timestamp_us as i128);
            sm_set(p, &mut pkt.phv, sm.enq_qdepth, qm.enq_qdepth as i128);
            sm_set(p, &mut pkt.phv, sm.deq_timedelta, qm.deq_timedelta_us as i128);
            sm_set(p, &mut pkt.phv, sm.deq_qdepth, qm.deq_qdepth as i128);
            sm_set(p, &mut pkt.phv, sm.qid, 0);
        }
        sm_set(p, &mut pkt.phv, sm.egress_port, port as i128);
        sm_set(p, &mut pkt.phv, sm.egress_spec, DROP_PORT as i128 + 1);
        sm_set(p, &mut pkt.phv, sm.packet_length, pkt.pkt_len_reg as i128);

        run_pipeline(code, s, &mut pkt, Pipe::Egress);

        if let Some((session, fl)) = pkt.clone.take() {
            if let Some(cs) = state.clone_session(session as u32) {
                let mut c = Pkt::fresh(p, &mut s.pool, pkt.ingress_length);
                c.phv.copy_from(&pkt.phv);
                c.phv.reset_metadata(p);
                copy_field_list(p, &mut c.phv, &pkt.phv, fl);
                sm_set(p, &mut c.phv, sm.instance_type, instance_type::EGRESS_CLONE as i128);
                c.buf.extend_from_slice(&pkt.buf);
                c.payload_at = pkt.payload_at;
                c.pkt_len_reg = pkt.pkt_len_reg;
                replicate(p, c, &cs.replicas, cs.truncate, requeue);
            }
        }

        if pkt.assert_failed {
            s.recycle(pkt);
            return None;
        }
        let egress_spec = sm.egress_spec.map_or(0, |s| pkt.phv.f()[s] as u32);
        if egress_spec == DROP_PORT {
            s.recycle(pkt);
            return None;
        }

        let mut frame = deparse(code, s, &mut pkt);

        if pkt.recirculate != 0 {
            let mut r = Pkt::fresh(p, &mut s.pool, frame.len() as u32);
            r.phv.reset_metadata(p);
            copy_field_list(p, &mut r.phv, &pkt.phv, pkt.recirculate);
            sm_set(p, &mut r.phv, sm.instance_type, instance_type::RECIRC as i128);
            sm_set(p, &mut r.phv, sm.packet_length, frame.len() as i128);
            r.buf = frame;
            r.payload_at = 0;
            enqueue(p, r, port, None, true, requeue);
            s.recycle(pkt);
            return None;
        }

        let mut limit = pkt.truncate;
        if let Some(t) = session_truncate {
            limit = Some(limit.map_or(t as usize, |l| l.min(t as usize)));
        }
        if let Some(l) = limit {
            frame.truncate(l);
        }
        s.recycle(pkt);
        Some(frame)
    }
}

impl Scratch {
    fn recycle(&mut self, pkt: Box<Pkt>) {
        if self.pool.len() < POOL_MAX {
            self.pool.push(pkt);
        }
    }
}

/// Parser + checksum verification into `pkt` (payload = unparsed rest).
fn parse_into(c: Code, s: &mut Scratch, pkt: &mut Pkt, frame: Option<&[u8]>) -> usize {
    let Code { p, state, fast, native } = c;
    let sm = p.sm;
    let mut key = std::mem::take(&mut s.key);
    let mut x = Exec { p, state, rng: &mut s.rng, buf: &mut s.buf, drop_port: DROP_PORT };
    // A frame already in the packet is parsed where it lies, out of the
    // packet while the parser writes its PHV; another is copied in.
    let mut own = Vec::new();
    if frame.is_none() {
        own = std::mem::take(&mut pkt.buf);
    }
    let data = frame.unwrap_or(&own);
    let (parsed, err) = parser::parse(&mut x, fast, native, pkt, data, &mut key);
    match frame {
        Some(f) => {
            pkt.buf.clear();
            pkt.buf.extend_from_slice(f);
        }
        None => pkt.buf = own,
    }
    pkt.payload_at = parsed.min(pkt.buf.len());
    let bad = parser::verify_checksums(&mut x, pkt);
    s.key = key;
    sm_set(p, &mut pkt.phv, sm.parser_error, err as i128);
    sm_set(p, &mut pkt.phv, sm.checksum_error, bad as i128);
    parsed
}

fn replicate(p: &Program, pkt: Box<Pkt>, replicas: &[Replica], trunc: Option<u32>, out: &mut Vec<Queued>) {
    let n = replicas.len();
    let mut pkt = Some(pkt);
    for (i, r) in replicas.iter().enumerate() {
        let mut c = if i + 1 == n {
            match pkt.take() {
                Some(x) => x,
                None => return,
            }
        } else {
            match pkt.as_ref() {
                Some(x) => x.clone(),
                None => return,
            }
        };
        sm_set(p, &mut c.phv, p.sm.egress_rid, r.rid as i128);
        enqueue(p, c, r.port, trunc, false, out);
    }
}

fn enqueue(p: &Program, pkt: Box<Pkt>, port: u32, trunc: Option<u32>, recirc: bool, out: &mut Vec<Queued>) {
    if let Some(s) = p.sm.priority {
        // simple_switch with one queue per port drops other priorities
        if pkt.phv.f()[s] != 0 {
            return;
        }
    }
    let len = if recirc { pkt.buf.len() } else { p.header_bytes(&pkt.phv.valid) + pkt.payload().len() };
    out.push(Queued { pkt, egress_port: port, recirc, session_truncate: trunc, len });
}

fn deparse(c: Code, s: &mut Scratch, pkt: &mut Pkt) -> Vec<u8> {
    let Code { p, state, native, .. } = c;
    let mut x = Exec { p, state, rng: &mut s.rng, buf: &mut s.buf, drop_port: DROP_PORT };
    // (Checksums change no header's validity: the length is known first.)
    let hlen = p.header_bytes(&pkt.phv.valid);
    // Headers are written front to back into zeroed bytes, with the slack
    // their word stores need (codec.rs) past the last one.
    let mut frame = s.frames.pop().unwrap_or_default();
    frame.clear();
    frame.resize(hlen + p.deparse_slack, 0);
    // SAFETY: the frame has the room `Jit::deparse` needs.
    if !native.is_some_and(|j| unsafe { j.deparse(&mut x, pkt, &mut frame) }) {
        parser::update_checksums(&mut x, pkt);
        let mut at = 0;
        for &h in &p.deparser {
            if pkt.phv.valid[h] {
                pkt.phv.deparse_at(p, h, &mut frame[at..]);
                at += p.headers[h].nbytes;
            }
        }
    }
    let payload_len = match pkt.truncate {
        Some(t) => pkt.payload().len().min(t),
        None => pkt.payload().len(),
    };
    if hlen == pkt.payload_at {
        // The headers take the room the parsed ones had (most programs
        // rewrite fields, not headers): write them over those and send the
        // received buffer, rather than copying its payload behind them.
        // The buffer deparsed into becomes the packet's for its next use.
        pkt.buf[..hlen].copy_from_slice(&frame[..hlen]);
        pkt.buf.truncate(hlen + payload_len);
        std::mem::swap(&mut frame, &mut pkt.buf);
        return frame;
    }
    frame.truncate(hlen);
    frame.extend_from_slice(&pkt.buf[pkt.payload_at..pkt.payload_at + payload_len]);
    frame
}
