//! The receiver: serves every flow arriving on its port. Flows are keyed by
//! (sender address, flow id); each keeps a reassembly scoreboard, verifies
//! every payload byte against the seeded generator, counts ECN codepoints,
//! and answers with ACKs carrying SACK blocks, CE counters and the echoed
//! telemetry of the data packets (version-1 or version-2 hop records, as
//! the packet carried them). Each flow also runs DCQCN's notification
//! point: a CE-marked arrival sends a CNP (an ACK flagged [`wire::AF_CNP`])
//! at most once per flow per [`ReceiverConfig::cnp_interval_ns`].

use crate::payload;
use crate::rangeset::RangeSet;
use crate::wire::{
    self, Ack, AckLists, SackBlock, WireError, AF_CE, AF_CNP, AF_COMPLETE, AF_CORRUPT, AF_DUP, AF_INT, AF_TELEMETRY, DF_PROBE,
    NO_QDEPTH, SIZE_UNKNOWN, TYPE_ABORT,
};
use cc::dcqcn::NotificationPoint;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::net::SocketAddr;
use telemetry::ShimError;

#[derive(Debug, Clone, PartialEq)]
pub struct ReceiverConfig {
    /// ACK every n-th in-order data packet (1 = every packet). Out-of-order,
    /// duplicate, CE-state-changing, probe and completing packets are
    /// always ACKed at once.
    pub ack_every: u32,
    /// A pending (delayed) ACK goes out after this long.
    pub delayed_ack_ns: u64,
    /// An incomplete flow with no packet for this long is closed as "timeout".
    pub idle_timeout_ns: u64,
    /// Completed flows stay (to re-ACK late retransmissions) this long after
    /// their last packet.
    pub linger_ns: u64,
    /// Full packet size used to convert 80-byte-cell depths to packets.
    pub depth_pkt_bytes: u32,
    pub max_sack_blocks: usize,
    /// Resource limits (packets beyond them are dropped and counted).
    pub max_flows: usize,
    pub max_ranges_per_flow: usize,
    /// DCQCN's notification point: a CE-marked data packet triggers a CNP
    /// (the ACK it causes, sent at once, carries [`wire::AF_CNP`]) unless
    /// the flow had one less than this long ago (the paper's N = 50 µs).
    pub cnp_interval_ns: u64,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            ack_every: 1,
            delayed_ack_ns: 500_000,
            idle_timeout_ns: 30_000_000_000,
            linger_ns: 5_000_000_000,
            depth_pkt_bytes: 1500,
            max_sack_blocks: 4,
            max_flows: 100_000,
            max_ranges_per_flow: 100_000,
            cnp_interval_ns: NotificationPoint::DEFAULT_INTERVAL_NS,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReceiverStats {
    pub datagrams: u64,
    pub data_pkts: u64,
    pub acks_sent: u64,
    /// Datagrams without a valid shim (foreign traffic on the port).
    pub no_shim: u64,
    /// Valid shim but no valid transport header after it.
    pub bad_header: u64,
    pub corrupt_pkts: u64,
    pub dropped_limits: u64,
    pub aborts: u64,
    /// ACKs that carried a CNP.
    pub cnps: u64,
}

impl ReceiverStats {
    pub fn malformed(&self) -> u64 {
        self.no_shim + self.bad_header
    }
    pub fn to_json(&self) -> String {
        format!(
            "{{\"datagrams\": {}, \"data_pkts\": {}, \"acks_sent\": {}, \"no_shim\": {}, \"bad_header\": {}, \"corrupt_pkts\": {}, \"dropped_limits\": {}, \"aborts\": {}, \"cnps\": {}}}",
            self.datagrams,
            self.data_pkts,
            self.acks_sent,
            self.no_shim,
            self.bad_header,
            self.corrupt_pkts,
            self.dropped_limits,
            self.aborts,
            self.cnps
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecvStatus {
    /// Every byte received and verified.
    Complete,
    /// No packet for `idle_timeout_ns`.
    Timeout,
    /// The sender sent an ABORT (reason text).
    Aborted(String),
    /// A new flow with the same key but another seed replaced it.
    Replaced,
    /// The receiver stopped first.
    Incomplete,
}

impl RecvStatus {
    pub fn as_str(&self) -> &'static str {
        match self {
            RecvStatus::Complete => "complete",
            RecvStatus::Timeout => "timeout",
            RecvStatus::Aborted(_) => "aborted",
            RecvStatus::Replaced => "replaced",
            RecvStatus::Incomplete => "incomplete",
        }
    }
    pub fn reason(&self) -> String {
        match self {
            RecvStatus::Aborted(r) => r.clone(),
            RecvStatus::Timeout => "no packet for the idle timeout".into(),
            RecvStatus::Replaced => "sender reused the flow id with another seed".into(),
            RecvStatus::Incomplete => "receiver stopped before the flow completed".into(),
            RecvStatus::Complete => String::new(),
        }
    }
}

/// What the receiver knows about one flow when it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct RecvFlowRecord {
    pub peer: SocketAddr,
    pub flow_id: u32,
    pub seed: u64,
    pub size: Option<u64>,
    /// Distinct verified bytes received.
    pub bytes: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    pub complete_ns: Option<u64>,
    pub status: RecvStatus,
    pub data_pkts: u64,
    pub dup_pkts: u64,
    pub corrupt_pkts: u64,
    /// Per ECN codepoint: not-ECT, ECT(1), ECT(0), CE.
    pub ecn_pkts: [u64; 4],
    pub ce_bytes: u64,
    pub telemetry_pkts: u64,
    pub overflow_pkts: u64,
    pub max_qdepth_pkts: u32,
}

impl RecvFlowRecord {
    pub const CSV_HEADER: &'static str = "peer,flow_id,seed,size_bytes,bytes,status,reason,first_ns,last_ns,complete_ns,data_pkts,dup_pkts,corrupt_pkts,not_ect_pkts,ect1_pkts,ect0_pkts,ce_pkts,ce_bytes,telemetry_pkts,overflow_pkts,max_qdepth_pkts";
}

struct RecvFlow {
    seed: u64,
    size: Option<u64>,
    cum: u64,
    ooo: RangeSet,
    first_ns: u64,
    last_ns: u64,
    complete_ns: Option<u64>,
    recorded: bool,
    data_pkts: u64,
    dup_pkts: u64,
    corrupt_pkts: u64,
    ecn_pkts: [u64; 4],
    ce_bytes: u64,
    rcvd_bytes: u64,
    telemetry_pkts: u64,
    overflow_pkts: u64,
    max_qdepth_pkts: u32,
    last_ce: bool,
    np: NotificationPoint,
    // delayed ACK state
    pending: u32,
    pending_since: u64,
    pend_qdepth: u32,
    last_ack: Option<Ack>,
}

impl RecvFlow {
    fn record(&self, peer: SocketAddr, flow_id: u32, status: RecvStatus) -> RecvFlowRecord {
        RecvFlowRecord {
            peer,
            flow_id,
            seed: self.seed,
            size: self.size,
            bytes: self.cum + self.ooo.total(),
            first_ns: self.first_ns,
            last_ns: self.last_ns,
            complete_ns: self.complete_ns,
            status,
            data_pkts: self.data_pkts,
            dup_pkts: self.dup_pkts,
            corrupt_pkts: self.corrupt_pkts,
            ecn_pkts: self.ecn_pkts,
            ce_bytes: self.ce_bytes,
            telemetry_pkts: self.telemetry_pkts,
            overflow_pkts: self.overflow_pkts,
            max_qdepth_pkts: self.max_qdepth_pkts,
        }
    }
}

type Key = (SocketAddr, u32);

/// When the ACK flow `f` holds (`last_ack`) is due.
fn ack_due(f: &RecvFlow, cfg: &ReceiverConfig) -> u64 {
    f.pending_since + cfg.delayed_ack_ns
}

pub struct Receiver {
    cfg: ReceiverConfig,
    /// Ordered, so timers fire and shutdown records flows in the same order
    /// on every run (the simulator's results are byte-identical per seed).
    flows: BTreeMap<Key, RecvFlow>,
    /// (when its delayed ACK is due, key) of every flow holding one
    /// (`last_ack`): the next timer without a walk over every flow, most
    /// of which (finished, lingering) hold none; the simulator asked after
    /// every datagram.
    delayed: BTreeSet<(u64, Key)>,
    /// Keys (with seed) of completed flows that were evicted: late
    /// retransmissions of them are answered, not mistaken for new flows.
    tombstones: HashSet<(Key, u64)>,
    finished: Vec<RecvFlowRecord>,
    /// The SACK and hop lists of the last ACK sent, reused for the next:
    /// an ACK then allocates nothing.
    spare: AckLists,
    pub stats: ReceiverStats,
}

/// An ACK to send (bytes in the caller's buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckOut {
    pub to: SocketAddr,
    pub len: usize,
}

impl Receiver {
    pub fn new(cfg: ReceiverConfig) -> Receiver {
        Receiver { cfg, flows: BTreeMap::new(), delayed: BTreeSet::new(), tombstones: HashSet::new(), finished: Vec::new(), spare: AckLists::default(), stats: ReceiverStats::default() }
    }

    pub fn active_flows(&self) -> usize {
        self.flows.values().filter(|f| f.complete_ns.is_none()).count()
    }

    /// Handles one datagram received from `from` with IP TOS byte `tos`
    /// (None if the socket could not tell). Writes an ACK into `ack_buf`
    /// (>= [`wire::MAX_ACK_LEN`]) when one is due now.
    pub fn on_datagram(
        &mut self,
        now_ns: u64,
        from: SocketAddr,
        tos: Option<u8>,
        buf: &[u8],
        ack_buf: &mut [u8],
    ) -> Option<AckOut> {
        self.on_datagram_at(now_ns, now_ns, from, tos, buf, ack_buf)
    }

    /// [`Receiver::on_datagram`] for a datagram the kernel received at
    /// `arrived_ns` (≤ `now_ns`): its ACK tells the sender how long it
    /// waited here (`rx_hold_us`).
    pub fn on_datagram_at(
        &mut self,
        now_ns: u64,
        arrived_ns: u64,
        from: SocketAddr,
        tos: Option<u8>,
        buf: &[u8],
        ack_buf: &mut [u8],
    ) -> Option<AckOut> {
        let rx_hold_us = (now_ns.saturating_sub(arrived_ns) / 1_000).min(u16::MAX as u64) as u16;
        self.stats.datagrams += 1;
        let pkt = match wire::parse_data(buf) {
            Ok(p) => p,
            Err(WireError::Shim(ShimError::TooShort(_) | ShimError::BadVersion(_))) => {
                self.stats.no_shim += 1;
                return None;
            }
            Err(_) => {
                self.stats.bad_header += 1;
                return None;
            }
        };
        let h = pkt.hdr;
        let key = (from, h.flow_id);
        if h.ptype == TYPE_ABORT {
            if let Some(f) = self.flows.get_mut(&key) {
                if f.seed == h.seed && f.complete_ns.is_none() && !f.recorded {
                    self.stats.aborts += 1;
                    let reason = String::from_utf8_lossy(pkt.payload).into_owned();
                    f.last_ns = now_ns;
                    f.recorded = true;
                    let rec = f.record(from, h.flow_id, RecvStatus::Aborted(reason));
                    self.finished.push(rec);
                    if let Some(f) = self.flows.remove(&key) {
                        self.unschedule(key, &f);
                    }
                }
            }
            return None;
        }
        self.stats.data_pkts += 1;

        // find or create the flow (Some(false): another flow under its key)
        let known = self.flows.get(&key).map(|f| f.seed == h.seed);
        if known == Some(false) {
            if let Some(old) = self.flows.remove(&key) {
                self.unschedule(key, &old);
                if !old.recorded {
                    self.finished.push(old.record(from, h.flow_id, RecvStatus::Replaced));
                }
            }
        }
        if known != Some(true) {
            if self.tombstones.contains(&(key, h.seed)) {
                // late retransmission of a finished flow: answer "complete"
                let size = if h.flow_size != SIZE_UNKNOWN { h.flow_size } else { h.seq + h.payload_len as u64 };
                let a = Ack {
                    flow_id: h.flow_id,
                    cum_ack: size,
                    echo_ts_ns: h.send_ts_ns,
                    echo_tx_seq: h.tx_seq,
                    flags: AF_COMPLETE | AF_DUP,
                    ecn: 0,
                    ce_pkts: 0,
                    data_pkts: 0,
                    ce_bytes: 0,
                    rcvd_bytes: 0,
                    qdepth_pkts: NO_QDEPTH,
                    raw_max_qdepth: 0,
                    depth_unit: 0,
                    shim_flags: 0,
                    rx_hold_us,
                    sacks: vec![],
                    hops: vec![],
                    int_hops: vec![],
                };
                self.stats.acks_sent += 1;
                return Some(AckOut { to: from, len: a.write(ack_buf) });
            }
            if self.flows.len() >= self.cfg.max_flows {
                self.stats.dropped_limits += 1;
                return None;
            }
            self.flows.insert(
                key,
                RecvFlow {
                    seed: h.seed,
                    size: None,
                    cum: 0,
                    ooo: RangeSet::new(),
                    first_ns: now_ns,
                    last_ns: now_ns,
                    complete_ns: None,
                    recorded: false,
                    data_pkts: 0,
                    dup_pkts: 0,
                    corrupt_pkts: 0,
                    ecn_pkts: [0; 4],
                    ce_bytes: 0,
                    rcvd_bytes: 0,
                    telemetry_pkts: 0,
                    overflow_pkts: 0,
                    max_qdepth_pkts: 0,
                    last_ce: false,
                    np: NotificationPoint::new(self.cfg.cnp_interval_ns),
                    pending: 0,
                    pending_since: 0,
                    pend_qdepth: 0,
                    last_ack: None,
                },
            );
        }
        let cfg = &self.cfg;
        let f = self.flows.get_mut(&key)?;
        f.last_ns = now_ns;

        // size: first announcement wins; a segment beyond it is malformed
        if h.flow_size != SIZE_UNKNOWN && f.size.is_none() {
            f.size = Some(h.flow_size);
        }
        let end = h.seq + h.payload_len as u64;
        if let Some(sz) = f.size {
            if end > sz {
                self.stats.bad_header += 1;
                return None;
            }
        }

        f.data_pkts += 1;
        let ecn = tos.map(|t| t & 0x3).unwrap_or(0);
        f.ecn_pkts[ecn as usize] += 1;
        let ce = ecn == 3;
        f.rcvd_bytes += h.payload_len as u64;
        if ce {
            f.ce_bytes += h.payload_len as u64;
        }
        let shim = pkt.shim;
        let has_tel = shim.hop_count > 0 || shim.max_qdepth > 0;
        let qd = shim.max_qdepth_packets(cfg.depth_pkt_bytes);
        if has_tel {
            f.telemetry_pkts += 1;
            f.max_qdepth_pkts = f.max_qdepth_pkts.max(qd);
        }
        if shim.overflow() {
            f.overflow_pkts += 1;
        }

        // verify and insert
        let mut corrupt = false;
        let mut dup = false;
        let mut out_of_order = false;
        if h.payload_len > 0 {
            if !payload::verify(f.seed, h.seq, pkt.payload) {
                corrupt = true;
                f.corrupt_pkts += 1;
                self.stats.corrupt_pkts += 1;
            } else if end <= f.cum {
                dup = true;
            } else if h.seq <= f.cum {
                let had_holes = !f.ooo.is_empty();
                f.cum = end;
                while let Some((_, e)) = f.ooo.pop_first_if_starts_by(f.cum) {
                    f.cum = f.cum.max(e);
                }
                out_of_order = had_holes; // filled a hole: ACK at once
            } else {
                if f.ooo.len() >= cfg.max_ranges_per_flow && f.ooo.containing(h.seq).is_none() {
                    self.stats.dropped_limits += 1;
                    return None;
                }
                let newly = f.ooo.insert(h.seq, end);
                dup = newly == 0;
                out_of_order = true;
            }
            if dup {
                f.dup_pkts += 1;
            }
        }
        let mut completed_now = false;
        if let Some(sz) = f.size {
            if f.cum >= sz && f.complete_ns.is_none() {
                f.complete_ns = Some(now_ns);
                completed_now = true;
            }
        }
        if completed_now && !f.recorded {
            f.recorded = true;
            self.finished.push(f.record(from, h.flow_id, RecvStatus::Complete));
        }

        // ACK decision; DCQCN's notification point sees every data packet
        // (as the CE counters do)
        let cnp = f.np.on_arrival(now_ns, ce);
        let ce_changed = ce != f.last_ce;
        f.last_ce = ce;
        f.pend_qdepth = if has_tel { f.pend_qdepth.max(qd) } else { f.pend_qdepth };
        f.pending += 1;
        let immediate = f.pending >= cfg.ack_every
            || out_of_order
            || dup
            || corrupt
            || ce_changed
            || cnp
            || completed_now
            || f.complete_ns.is_some()
            || h.flags & DF_PROBE != 0
            || h.payload_len == 0;
        let mut flags = 0;
        if f.complete_ns.is_some() {
            flags |= AF_COMPLETE;
        }
        if ce {
            flags |= AF_CE;
        }
        if has_tel {
            flags |= AF_TELEMETRY;
        }
        if dup {
            flags |= AF_DUP;
        }
        if corrupt {
            flags |= AF_CORRUPT;
        }
        if shim.is_int() {
            flags |= AF_INT;
        }
        if cnp {
            flags |= AF_CNP;
            self.stats.cnps += 1;
        }
        // SACK blocks: the block holding this segment first, then the
        // lowest others
        let AckLists { mut sacks, mut hops, mut int_hops } = std::mem::take(&mut self.spare);
        sacks.clear();
        hops.clear();
        int_hops.clear();
        let first = f.ooo.containing(h.seq);
        if let Some((a, b)) = first {
            sacks.push(SackBlock { start: a, end: b });
        }
        for (a, b) in f.ooo.iter() {
            if sacks.len() >= cfg.max_sack_blocks.min(wire::MAX_SACK_BLOCKS) {
                break;
            }
            if Some((a, b)) != first {
                sacks.push(SackBlock { start: a, end: b });
            }
        }
        hops.extend_from_slice(shim.hops());
        int_hops.extend_from_slice(shim.int_hops());
        let pend_q = f.pend_qdepth;
        let ack = Ack {
            flow_id: h.flow_id,
            cum_ack: f.cum,
            echo_ts_ns: h.send_ts_ns,
            echo_tx_seq: h.tx_seq,
            flags,
            ecn,
            ce_pkts: f.ecn_pkts[3].min(u32::MAX as u64) as u32,
            data_pkts: f.data_pkts.min(u32::MAX as u64) as u32,
            ce_bytes: f.ce_bytes,
            rcvd_bytes: f.rcvd_bytes,
            qdepth_pkts: if has_tel || pend_q > 0 { pend_q.max(qd) } else { NO_QDEPTH },
            raw_max_qdepth: shim.max_qdepth,
            depth_unit: shim.depth_unit.as_u8(),
            shim_flags: shim.flags,
            rx_hold_us,
            sacks,
            hops,
            int_hops,
        };
        if immediate {
            f.pending = 0;
            f.pend_qdepth = 0;
            if f.last_ack.take().is_some() {
                self.delayed.remove(&(ack_due(f, cfg), key));
            }
            self.stats.acks_sent += 1;
            let len = ack.write(ack_buf);
            self.spare = ack.into_lists();
            Some(AckOut { to: from, len })
        } else {
            if f.pending == 1 {
                // (the first ACK held since the last one went out)
                f.pending_since = now_ns;
                self.delayed.insert((ack_due(f, cfg), key));
            }
            f.last_ack = Some(ack);
            None
        }
    }

    /// Earliest time [`Receiver::poll_timers`] has work (delayed ACKs; idle
    /// flows are checked at least every 100 ms).
    pub fn next_timer(&self, now_ns: u64) -> u64 {
        let idle_check = now_ns + 100_000_000;
        self.delayed.first().map_or(idle_check, |&(due, _)| due.min(idle_check))
    }

    /// Drops a flow's delayed ACK, if it holds one, from `delayed`.
    fn unschedule(&mut self, key: Key, f: &RecvFlow) {
        if f.last_ack.is_some() {
            self.delayed.remove(&(ack_due(f, &self.cfg), key));
        }
    }

    /// Sends due delayed ACKs through `send` and closes idle flows.
    pub fn poll_timers(&mut self, now_ns: u64, ack_buf: &mut [u8], mut send: impl FnMut(SocketAddr, &[u8])) {
        let mut expired = Vec::new();
        for (key, f) in self.flows.iter_mut() {
            if f.last_ack.is_some() && now_ns >= ack_due(f, &self.cfg) {
                if let Some(a) = f.last_ack.take() {
                    self.delayed.remove(&(ack_due(f, &self.cfg), *key));
                    let n = a.write(ack_buf);
                    send(key.0, &ack_buf[..n]);
                    self.stats.acks_sent += 1;
                }
                f.pending = 0;
                f.pend_qdepth = 0;
            }
            let idle = now_ns.saturating_sub(f.last_ns);
            if f.complete_ns.is_some() {
                if idle >= self.cfg.linger_ns {
                    expired.push(*key);
                }
            } else if idle >= self.cfg.idle_timeout_ns {
                expired.push(*key);
            }
        }
        for key in expired {
            if let Some(f) = self.flows.remove(&key) {
                self.unschedule(key, &f);
                if f.complete_ns.is_some() {
                    if self.tombstones.len() > 1_000_000 {
                        self.tombstones.clear();
                    }
                    self.tombstones.insert((key, f.seed));
                } else if !f.recorded {
                    self.finished.push(f.record(key.0, key.1, RecvStatus::Timeout));
                }
            }
        }
    }

    /// Records every unfinished flow as incomplete (receiver shutdown).
    pub fn close_all(&mut self) {
        self.delayed.clear();
        for (key, f) in std::mem::take(&mut self.flows) {
            if !f.recorded {
                self.finished.push(f.record(key.0, key.1, RecvStatus::Incomplete));
            }
        }
    }

    pub fn take_finished(&mut self) -> Vec<RecvFlowRecord> {
        std::mem::take(&mut self.finished)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{DataHeader, AF_CNP, AF_INT, DATA_HDR_LEN, TYPE_DATA};
    use telemetry::shim::IntHopRecord;
    use telemetry::Shim;

    const SEED: u64 = 7;
    const CE: Option<u8> = Some(3);
    const ECT0: Option<u8> = Some(2);

    fn peer(i: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 1], 40000 + i))
    }

    /// A data packet of flow 1: `len` bytes at `seq` of a 100 000-byte flow.
    fn data(shim: &Shim, seq: u64, len: usize) -> Vec<u8> {
        let hdr = DataHeader {
            ptype: TYPE_DATA,
            flow_id: 1,
            seq,
            flow_size: 100_000,
            seed: SEED,
            send_ts_ns: 5,
            tx_seq: 0,
            payload_len: len as u16,
            flags: 0,
        };
        let mut b = vec![0u8; shim.len() + DATA_HDR_LEN + len];
        let o = wire::write_data_prefix(&hdr, shim, &mut b);
        payload::fill(SEED, seq, &mut b[o..o + len]);
        b
    }

    fn record(i: u16) -> IntHopRecord {
        IntHopRecord {
            switch_id: i,
            egress_port: 3,
            enq_qdepth: 4 + u32::from(i),
            deq_timedelta_ns: 1_500,
            egress_ts_ns: 123_456_789_012,
            qlen_bytes: 9_000,
            tx_bytes: 0xffff_ff00,
            rate_kbps: 10_000_000,
        }
    }

    /// The delayed-ACK timer as a walk over every flow finds it.
    fn next_timer_by_walk(r: &Receiver, now: u64) -> u64 {
        r.flows.values().filter(|f| f.last_ack.is_some()).map(|f| f.pending_since + r.cfg.delayed_ack_ns).fold(now + 100_000_000, u64::min)
    }

    /// The receiver's index of held ACKs answers as a walk over the flows
    /// does, through held and immediate ACKs, timers, completions,
    /// lingering and idle flows expiring, a flow replaced by a new seed and
    /// an abort.
    #[test]
    fn next_timer_agrees_with_a_walk_over_the_flows() {
        // (the second: ACKs held longer than an idle flow lives, so flows
        // expire holding one)
        for delayed_ack_ns in [40_000, 8_000_000] {
            next_timer_walk_case(ReceiverConfig { ack_every: 3, delayed_ack_ns, linger_ns: 3_000_000, idle_timeout_ns: 6_000_000, ..ReceiverConfig::default() });
        }
    }

    fn next_timer_walk_case(cfg: ReceiverConfig) {
        let mut r = Receiver::new(cfg);
        let mut ack = [0u8; wire::MAX_ACK_LEN];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut rnd = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let (mut now, mut next_seq, mut seeds) = (0u64, [0u64; 8], [1u64; 8]);
        let (mut held, mut sent) = (0, 0);
        for _ in 0..20_000 {
            now += 1 + rnd(20_000);
            if rnd(500) == 0 {
                // a lull: flows go idle
                now += 7_000_000;
            }
            let i = rnd(8) as usize;
            match rnd(20) {
                0 => r.poll_timers(now, &mut ack, |_, _| sent += 1),
                1 => {
                    // a new flow under the same key (another seed)
                    seeds[i] += 1;
                    next_seq[i] = 0;
                }
                2 => {
                    let hdr = DataHeader { ptype: TYPE_ABORT, flow_id: 1, seq: 0, flow_size: 100_000, seed: seeds[i], send_ts_ns: 5, tx_seq: 0, payload_len: 0, flags: 0 };
                    let mut b = vec![0u8; Shim::empty().len() + DATA_HDR_LEN];
                    wire::write_data_prefix(&hdr, &Shim::empty(), &mut b);
                    r.on_datagram(now, peer(i as u16), ECT0, &b, &mut ack);
                    next_seq[i] = 0;
                    seeds[i] += 1;
                }
                k => {
                    // in order mostly; now and then a gap or a duplicate
                    let seq = match k {
                        3 => next_seq[i] + 1000,
                        4 => next_seq[i].saturating_sub(1000),
                        _ => next_seq[i],
                    }
                    .min(99_000);
                    let hdr = DataHeader { ptype: TYPE_DATA, flow_id: 1, seq, flow_size: 100_000, seed: seeds[i], send_ts_ns: 5, tx_seq: 0, payload_len: 1000, flags: 0 };
                    let mut b = vec![0u8; Shim::empty().len() + DATA_HDR_LEN + 1000];
                    let o = wire::write_data_prefix(&hdr, &Shim::empty(), &mut b);
                    payload::fill(seeds[i], seq, &mut b[o..]);
                    let tos = if rnd(10) == 0 { CE } else { ECT0 };
                    if r.on_datagram(now, peer(i as u16), tos, &b, &mut ack).is_none() {
                        held += 1;
                    }
                    next_seq[i] = (seq + 1000) % 100_000;
                }
            }
            assert_eq!(r.next_timer(now), next_timer_by_walk(&r, now), "at {now} ns");
            assert_eq!(r.delayed.len(), r.flows.values().filter(|f| f.last_ack.is_some()).count());
        }
        assert!(held > 1000, "the run held ACKs ({held})");
        if r.cfg.delayed_ack_ns < r.cfg.linger_ns {
            assert!(sent > 100, "held ACKs went out on timers ({sent})");
        }
        r.close_all();
        assert!(r.delayed.is_empty());
    }

    #[test]
    fn echoes_version_2_records() {
        let mut r = Receiver::new(ReceiverConfig::default());
        let mut ack = [0u8; wire::MAX_ACK_LEN];
        let mut shim = Shim::empty_v2();
        shim.push_int_hop(record(1));
        shim.push_int_hop(record(2));
        let a = r.on_datagram(10, peer(0), Some(2), &data(&shim, 0, 1000), &mut ack).unwrap();
        assert_eq!(a.len, 68 + 2 * 32);
        let p = Ack::parse(&ack[..a.len]).unwrap();
        assert!(p.int() && !p.cnp());
        assert_eq!(p.flags & AF_TELEMETRY, AF_TELEMETRY);
        assert_eq!(p.int_hops, vec![record(2), record(1)], "newest first, exactly as the switches wrote them");
        assert_eq!(p.hops, vec![record(2).hop_record(), record(1).hop_record()]);
        assert_eq!(p.qdepth(), Some(6));
        // A version-2 shim without records still says so.
        let a = r.on_datagram(20, peer(0), Some(2), &data(&Shim::empty_v2(), 1000, 1000), &mut ack).unwrap();
        let p = Ack::parse(&ack[..a.len]).unwrap();
        assert_eq!((p.flags & AF_INT, p.int_hops.len(), a.len), (AF_INT, 0, 68));
        // A version-1 flow gets version-1 records, as before.
        let mut v1 = Shim::empty();
        v1.push_int_hop(record(1));
        let a = r.on_datagram(30, peer(1), Some(2), &data(&v1, 0, 1000), &mut ack).unwrap();
        assert_eq!(a.len, 68 + 20);
        let p = Ack::parse(&ack[..a.len]).unwrap();
        assert!(!p.int() && p.int_hops.is_empty());
        assert_eq!(p.hops, vec![record(1).hop_record()]);
    }

    #[test]
    fn an_ack_says_how_long_its_trigger_waited_here() {
        let mut r = Receiver::new(ReceiverConfig::default());
        let mut ack = [0u8; wire::MAX_ACK_LEN];
        let pkt = |seq| data(&Shim::empty(), seq, 1000);
        let hold = |r: &mut Receiver, now, arrived, seq| {
            let mut ack = [0u8; wire::MAX_ACK_LEN];
            let a = r.on_datagram_at(now, arrived, peer(0), ECT0, &pkt(seq), &mut ack).expect("ACK at once");
            Ack::parse(&ack[..a.len]).unwrap().rx_hold_us
        };
        // read 250.9 µs after the kernel had it: 250 µs, whole µs down
        assert_eq!(hold(&mut r, 1_000_000, 749_100, 0), 250);
        // read at once, or with no kernel stamp: nothing held
        assert_eq!(hold(&mut r, 2_000_000, 2_000_000, 1000), 0);
        let a = r.on_datagram(3_000_000, peer(0), ECT0, &pkt(2000), &mut ack).unwrap();
        assert_eq!(Ack::parse(&ack[..a.len]).unwrap().rx_hold_us, 0);
        // a stall longer than the field saturates rather than wraps
        assert_eq!(hold(&mut r, 900_000_000, 800_000_000, 3000), u16::MAX);
    }

    /// The CNP flags of the ACKs flow `i` gets for data packets at `times`
    /// (µs), all with codepoint `tos`.
    fn cnps(r: &mut Receiver, i: u16, times_us: &[u64], tos: Option<u8>) -> Vec<bool> {
        let mut ack = [0u8; wire::MAX_ACK_LEN];
        let mut out = Vec::new();
        for (k, &t) in times_us.iter().enumerate() {
            let pkt = data(&Shim::empty(), k as u64 * 1000, 1000);
            let a = r.on_datagram(1_000_000 + t * 1000, peer(i), tos, &pkt, &mut ack).expect("ACK at once");
            out.push(Ack::parse(&ack[..a.len]).unwrap().flags & AF_CNP != 0);
        }
        out
    }

    #[test]
    fn notification_point_sends_at_most_one_cnp_per_interval() {
        let mut r = Receiver::new(ReceiverConfig::default());
        assert_eq!(cnps(&mut r, 0, &[0, 10], CE), [true, false], "10 µs apart: one CNP");
        assert_eq!(cnps(&mut r, 1, &[0, 60], CE), [true, true], "60 µs apart: two");
        assert_eq!(cnps(&mut r, 2, &[0, 49, 50, 60, 100], CE), [true, false, true, false, true]);
        assert_eq!(cnps(&mut r, 3, &[0, 100], ECT0), [false, false], "no CE, no CNP");
        assert_eq!(r.stats.cnps, 1 + 2 + 3);
        // The interval is the receiver's setting.
        let mut r = Receiver::new(ReceiverConfig { cnp_interval_ns: 5_000, ..Default::default() });
        assert_eq!(cnps(&mut r, 0, &[0, 10], CE), [true, true]);
    }

    #[test]
    fn a_cnp_is_never_delayed() {
        // With delayed ACKs a run of CE packets (no CE change after the
        // first) would wait; the CNP goes out at once.
        let mut r = Receiver::new(ReceiverConfig { ack_every: 8, ..Default::default() });
        let mut ack = [0u8; wire::MAX_ACK_LEN];
        let mut flags = Vec::new();
        for k in 0..8u64 {
            let pkt = data(&Shim::empty(), k * 1000, 1000);
            let got = r.on_datagram(k * 20_000, peer(0), CE, &pkt, &mut ack);
            flags.push(got.map(|a| Ack::parse(&ack[..a.len]).unwrap().flags & AF_CNP != 0));
        }
        // t = 0 µs (CE change, CNP), 20 and 40 (held), 60 (CNP), 80 and
        // 100 (held), 120 (CNP), 140 (held)
        assert_eq!(flags, [Some(true), None, None, Some(true), None, None, Some(true), None]);
        assert_eq!(r.stats.acks_sent, 3);
    }
}
