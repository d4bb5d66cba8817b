//! One flow's sender: segmentation, scoreboard, loss detection (SACK
//! dupthresh + RACK-style time rule), RTO with exponential backoff,
//! retransmission, pacing, and the congestion-control hooks.
//!
//! The datapath calls, in any order and as often as it likes:
//! * [`FlowSender::poll_transmit`] to get the next datagram (or learn why
//!   not and until when),
//! * [`FlowSender::on_ack`] with each parsed ACK of this flow,
//! * [`FlowSender::on_timer`] whenever [`FlowSender::next_timer`] is due.
//!
//! A flow whose algorithm reads in-band telemetry (`cc::reads_int`: HPCC,
//! PowerTCP) sends a version-2 shim, and the 32-byte records its ACKs echo
//! reach the algorithm as `AckSample::int_hops`; an ACK that carries a CNP
//! calls `CongestionControl::on_cnp` first.

use crate::payload;
use crate::wire::{
    self, Ack, DataHeader, DATA_HDR_LEN, DF_PROBE, DF_RETX, IP_UDP_OVERHEAD, SIZE_UNKNOWN, TYPE_ABORT, TYPE_DATA,
};
use cc::{AckSample, CongestionControl, IntHop, QueueReport};
use std::collections::{BTreeSet, VecDeque};
use telemetry::postcard::Postcard;
use telemetry::shim::{depth_to_packets, HopRecord, IntHopRecord, SHIM_FIXED_LEN};
use telemetry::{DepthUnit, Shim};

/// Full-sized packet used to turn 80-byte-cell depths into packets (the
/// receiver's default `depth_pkt_bytes`).
const DEPTH_PKT_BYTES: u32 = 1500;

/// A hop record as the congestion control sees it.
pub fn hop_report(h: &HopRecord, unit: DepthUnit) -> QueueReport {
    QueueReport {
        hop: QueueReport::hop_key(h.switch_id, h.egress_port),
        depth_pkts: f64::from(depth_to_packets(h.enq_qdepth, unit, DEPTH_PKT_BYTES)),
        at_us: h.egress_ts_us.saturating_sub(u64::from(h.deq_timedelta_us)),
    }
}

/// A version-2 hop record as the congestion control sees it: times in ns,
/// the line rate in bits/s.
pub fn int_hop(h: &IntHopRecord) -> IntHop {
    IntHop {
        hop: QueueReport::hop_key(h.switch_id, h.egress_port),
        qlen_bytes: u64::from(h.qlen_bytes),
        tx_bytes: h.tx_bytes,
        ts_ns: h.egress_ts_ns,
        rate_bps: u64::from(h.rate_kbps) * 1000,
    }
}

/// A postcard as the congestion control sees it: its units byte says
/// whether the depth is packets or a Tofino's 80-byte cells, and whether
/// its times are µs or ns.
pub fn postcard_report(p: &Postcard) -> QueueReport {
    QueueReport {
        hop: QueueReport::hop_key(p.switch_id, p.egress_port),
        depth_pkts: f64::from(depth_to_packets(p.enq_qdepth, p.depth_unit(), DEPTH_PKT_BYTES)),
        at_us: p.egress_ts_us().saturating_sub(p.qdelay_us()),
    }
}

/// Which telemetry shim a flow's data packets carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ShimChoice {
    /// Version 2 when the algorithm reads INT (`cc::reads_int` of its
    /// name), else version 1.
    #[default]
    Auto,
    V1,
    /// Version 2 whatever the algorithm.
    V2,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SenderConfig {
    /// Payload bytes per packet (<= [`wire::max_payload_1500`] of the
    /// flow's shim for a 1500 MTU path: 1336 with version 1, 1288 with
    /// version 2). A flow with a version-2 shim sends at most
    /// [`wire::MAX_PAYLOAD_1500_INT`] per packet whatever this says, so
    /// that four 32-byte records still fit.
    pub mss: usize,
    pub init_rto_ns: u64,
    pub min_rto_ns: u64,
    pub max_rto_ns: u64,
    /// The flow fails ("peer gone") after this long without any ACK that
    /// delivers new data (and without any ACK at all when nothing was ever acked).
    pub give_up_ns: u64,
    /// Segments SACKed above a never-retransmitted hole that declare it lost.
    pub dupthresh: u32,
    /// Upper bound on the pacing rate (bits/s, IP bytes); also paces
    /// window-based algorithms when set.
    pub pace_cap_bps: Option<u64>,
    /// In-flight limit used when the algorithm has no window (rate-only).
    pub max_inflight_bytes: u64,
    /// Period of `on_tick` calls.
    pub tick_ns: u64,
    /// How losses reach the algorithm; see [`LossReport`].
    pub loss_report: LossReport,
    /// Largest burst (packets) a late pacer may send back to back.
    pub pace_max_burst: u32,
    /// The telemetry shim of data packets.
    pub shim: ShimChoice,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            mss: wire::MAX_PAYLOAD_1500,
            init_rto_ns: 200_000_000,
            min_rto_ns: 20_000_000,
            max_rto_ns: 2_000_000_000,
            give_up_ns: 10_000_000_000,
            dupthresh: 3,
            pace_cap_bps: None,
            max_inflight_bytes: 64 << 20,
            tick_ns: 1_000_000,
            loss_report: LossReport::Every,
            pace_max_burst: 1,
            shim: ShimChoice::Auto,
        }
    }
}

/// How detected losses are reported through `CongestionControl::on_loss`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossReport {
    /// Once per recovery episode (TCP semantics: the first loss detected in
    /// a window; the episode ends when everything outstanding at its start
    /// is acknowledged). Losses found during the episode are not reported.
    PerEpisode,
    /// Every batch of newly detected losses, as it is detected (the
    /// default: the algorithms of crate `cc` keep their own recovery state
    /// from `on_send`/`on_ack`, cutting once per window).
    Every,
    /// `PerEpisode` for window-based algorithms (cwnd is `Some` at start),
    /// `Every` for rate-only ones (they keep loss statistics).
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowSize {
    Bytes(u64),
    /// A long flow: sends until [`FlowSender::stop`].
    Unbounded,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailReason {
    /// No ACK progress for `give_up_ns`.
    PeerGone { silent_ns: u64, rtos: u32, ever_acked: bool },
    /// Stopped locally (SIGINT, end of experiment) before completion.
    Interrupted,
}

impl FailReason {
    pub fn status(&self) -> &'static str {
        match self {
            FailReason::PeerGone { ever_acked: false, .. } => "no-receiver",
            FailReason::PeerGone { .. } => "peer-gone",
            FailReason::Interrupted => "interrupted",
        }
    }
    pub fn describe(&self) -> String {
        match self {
            FailReason::PeerGone { silent_ns, rtos, ever_acked: false } => format!(
                "no ACK ever received ({} ms, {} RTOs): is a receiver listening?",
                silent_ns / 1_000_000,
                rtos
            ),
            FailReason::PeerGone { silent_ns, rtos, .. } => {
                format!("no ACK progress for {} ms after {} RTOs", silent_ns / 1_000_000, rtos)
            }
            FailReason::Interrupted => "stopped before completion".to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowState {
    Running,
    Complete { end_ns: u64 },
    Failed { end_ns: u64, reason: FailReason },
}

/// Result of [`FlowSender::poll_transmit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transmit {
    /// A datagram of `len` bytes was written to the buffer.
    Packet(TxInfo),
    /// The pacer holds the next packet until this time.
    Paced(u64),
    /// Window full (or nothing to send): wait for an ACK or a timer.
    Blocked,
    /// The flow is over.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxInfo {
    pub len: usize,
    pub seq: u64,
    pub payload_len: usize,
    pub retransmission: bool,
    /// Set when this packet was held by the pacer: the gap the pacer
    /// targeted since the previous packet of this flow.
    pub paced_gap_ns: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct SenderStats {
    pub pkts_sent: u64,
    pub bytes_sent: u64,
    pub retx_pkts: u64,
    pub retx_bytes: u64,
    pub rto_count: u32,
    pub loss_events: u32,
    pub lost_pkts_detected: u64,
    pub acks: u64,
    pub bad_acks: u64,
    pub ce_bytes: u64,
    pub rtt_samples: u64,
    pub rtt_sum_ns: u128,
    pub min_rtt_ns: u64,
    pub max_qdepth_pkts: u32,
    /// Queue reports that arrived out of band (returned postcards).
    pub feed_reports: u64,
    /// ACKs that carried a CNP (each one `on_cnp` call).
    pub cnps: u64,
}

/// What one ACK did (for logging).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AckOutcome {
    pub newly_acked: u64,
    pub rtt_ns: Option<u64>,
    pub qdepth_pkts: Option<u32>,
    pub newly_lost: u64,
    pub cwnd_bytes: Option<u64>,
    pub rate_bps: Option<u64>,
    /// The algorithm's delay target after the ACK, if it has one.
    pub target_delay_ns: Option<u64>,
    pub inflight: u64,
    pub completed: bool,
}

#[derive(Debug, Clone)]
struct Seg {
    seq: u64,
    len: u32,
    sent_ns: u64,
    retx: u16,
    sacked: bool,
    lost: bool,
    in_flight: bool,
}

pub struct FlowSender {
    pub flow_id: u32,
    pub seed: u64,
    cfg: SenderConfig,
    cc: Box<dyn CongestionControl>,
    size: FlowSize,
    /// Size once known (Bytes, or Unbounded after stop).
    final_size: Option<u64>,
    state: FlowState,
    start_ns: u64,

    snd_una: u64,
    snd_nxt: u64,
    segs: VecDeque<Seg>,
    lost_queue: BTreeSet<u64>,
    inflight: u64,
    sacked_segs: u32,
    high_sacked_end: u64,
    tx_seq: u32,

    // RTT / RTO
    srtt_ns: Option<u64>,
    rttvar_ns: u64,
    min_rtt_ns: Option<u64>,
    rto_ns: u64,
    backoff: u32,
    rto_deadline: Option<u64>,
    last_progress_ns: u64,
    ever_acked: bool,
    rack_ts_ns: u64,

    // recovery
    in_recovery: bool,
    recovery_end: u64,
    loss_every: bool,

    // ECN
    last_ce_bytes: u64,
    ce_pending: u64,

    // pacing: the slot the last packet was paced into and its wire bytes.
    // The next slot is that plus the packet's time at the *current* rate, so
    // a rate change takes effect on the gap already running, as a NIC's rate
    // limiter applies it (the DCQCN authors' model moves the next send time
    // by the new minus the old interval: RdmaHw::ChangeRate). A gap fixed
    // at the rate of the last send held a flow cut to DCQCN's floor
    // (1 Mb/s: 11.6 ms per packet) for that long after its rate recovered.
    pace_slot_ns: Option<u64>,
    /// The last paced packet's (payload, datagram) lengths: its gap is
    /// taken at the rates in force when the next packet asks.
    pace_last: (usize, usize),
    last_gap_ns: u64,
    pace_held: bool,

    next_tick_ns: u64,
    need_probe: bool,
    /// The hop reports handed to the algorithm, kept between ACKs so a
    /// sample allocates nothing.
    hop_buf: Vec<QueueReport>,
    int_buf: Vec<IntHop>,
    /// The (empty) shim this flow's data packets start with.
    shim: Shim,

    pub stats: SenderStats,
}

impl FlowSender {
    pub fn new(
        flow_id: u32,
        seed: u64,
        size: FlowSize,
        cc: Box<dyn CongestionControl>,
        cfg: SenderConfig,
        now_ns: u64,
    ) -> FlowSender {
        let loss_every = match cfg.loss_report {
            LossReport::Every => true,
            LossReport::PerEpisode => false,
            LossReport::Auto => cc.cwnd_bytes().is_none(),
        };
        let final_size = match size {
            FlowSize::Bytes(n) => Some(n),
            FlowSize::Unbounded => None,
        };
        let int = match cfg.shim {
            ShimChoice::Auto => cc::reads_int(cc.name()),
            ShimChoice::V1 => false,
            ShimChoice::V2 => true,
        };
        let mut cfg = cfg;
        cfg.mss = cfg.mss.clamp(1, u16::MAX as usize);
        if int {
            cfg.mss = cfg.mss.min(wire::MAX_PAYLOAD_1500_INT);
        }
        FlowSender {
            flow_id,
            seed,
            rto_ns: cfg.init_rto_ns,
            next_tick_ns: now_ns + cfg.tick_ns,
            hop_buf: Vec::new(),
            int_buf: Vec::new(),
            shim: if int { Shim::empty_v2() } else { Shim::empty() },
            cfg,
            cc,
            size,
            final_size,
            state: FlowState::Running,
            start_ns: now_ns,
            snd_una: 0,
            snd_nxt: 0,
            segs: VecDeque::new(),
            lost_queue: BTreeSet::new(),
            inflight: 0,
            sacked_segs: 0,
            high_sacked_end: 0,
            tx_seq: 0,
            srtt_ns: None,
            rttvar_ns: 0,
            min_rtt_ns: None,
            backoff: 1,
            rto_deadline: None,
            last_progress_ns: now_ns,
            ever_acked: false,
            rack_ts_ns: 0,
            in_recovery: false,
            recovery_end: 0,
            loss_every,
            last_ce_bytes: 0,
            ce_pending: 0,
            pace_slot_ns: None,
            pace_last: (0, 0),
            last_gap_ns: 0,
            pace_held: false,
            need_probe: final_size == Some(0),
            stats: SenderStats::default(),
        }
    }

    pub fn state(&self) -> &FlowState {
        &self.state
    }
    pub fn is_done(&self) -> bool {
        self.state != FlowState::Running
    }
    pub fn start_ns(&self) -> u64 {
        self.start_ns
    }
    pub fn size(&self) -> FlowSize {
        self.size
    }
    /// Bytes acknowledged cumulatively.
    pub fn acked_bytes(&self) -> u64 {
        self.snd_una
    }
    pub fn inflight(&self) -> u64 {
        self.inflight
    }
    pub fn srtt_ns(&self) -> Option<u64> {
        self.srtt_ns
    }
    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }
    pub fn cc_mut(&mut self) -> &mut dyn CongestionControl {
        self.cc.as_mut()
    }
    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }
    /// Version of the shim this flow's data packets carry (1 or 2).
    pub fn shim_version(&self) -> u8 {
        self.shim.version
    }
    /// Payload bytes per full packet.
    pub fn mss(&self) -> usize {
        self.cfg.mss
    }

    /// Effective pacing rate (bits/s of IP packets), if paced.
    pub fn pacing_rate(&self) -> Option<u64> {
        let r = match (self.cc.pacing_rate_bps(), self.cfg.pace_cap_bps) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        r.map(|r| r.max(10_000))
    }

    /// The pacing gap after a packet of `payload` bytes in a datagram of
    /// `dlen`: its IP packet at the pacing rate, or, for an algorithm whose
    /// rate counts payload (BBR, as TCP's pacing does), its payload at the
    /// algorithm's rate; a `pace_cap_bps` always counts whole IP packets.
    /// The longer gap wins. `None` when nothing paces.
    fn pacing_gap_ns(&self, payload: usize, dlen: usize) -> Option<u64> {
        let wire = (dlen + IP_UDP_OVERHEAD) as u128;
        let gap = |bytes: u128, rate: u64| (bytes * 8 * 1_000_000_000 / u128::from(rate.max(10_000))) as u64;
        let algo = self.cc.pacing_rate_bps().map(|r| {
            gap(if self.cc.pacing_counts_payload() { payload as u128 } else { wire }, r)
        });
        let cap = self.cfg.pace_cap_bps.map(|r| gap(wire, r));
        match (algo, cap) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    fn window(&self) -> u64 {
        self.cc.cwnd_bytes().unwrap_or(self.cfg.max_inflight_bytes).min(self.cfg.max_inflight_bytes)
    }

    fn header(&self, seq: u64, len: usize, now_ns: u64, flags: u8) -> DataHeader {
        DataHeader {
            ptype: TYPE_DATA,
            flow_id: self.flow_id,
            seq,
            flow_size: self.final_size.unwrap_or(SIZE_UNKNOWN),
            seed: self.seed,
            send_ts_ns: now_ns,
            tx_seq: self.tx_seq,
            payload_len: len as u16,
            flags,
        }
    }

    /// Datagram size of a packet with `payload` bytes as the sender emits it.
    pub fn datagram_len(payload: usize) -> usize {
        SHIM_FIXED_LEN + DATA_HDR_LEN + payload
    }

    /// Stops a long flow: no new data; the flow completes when everything
    /// sent so far is acknowledged. A sized flow is failed as interrupted.
    pub fn stop(&mut self, now_ns: u64) {
        if self.is_done() {
            return;
        }
        match self.size {
            FlowSize::Unbounded => {
                if self.final_size.is_none() {
                    self.final_size = Some(self.snd_nxt);
                    // a zero-length probe announces the final size at once
                    // (retransmissions carry it too); the RTO repeats it
                    // until the receiver confirms completion
                    self.need_probe = true;
                }
            }
            FlowSize::Bytes(_) => self.fail(now_ns, FailReason::Interrupted),
        }
    }

    /// Ends the flow now (e.g. SIGINT); the datapath may send
    /// [`FlowSender::write_abort`] to tell the receiver.
    pub fn abort(&mut self, now_ns: u64) {
        if !self.is_done() {
            self.fail(now_ns, FailReason::Interrupted);
        }
    }

    fn fail(&mut self, now_ns: u64, reason: FailReason) {
        self.state = FlowState::Failed { end_ns: now_ns, reason };
        self.rto_deadline = None;
    }

    /// An ABORT packet (shim + header + reason text) for the receiver.
    pub fn write_abort(&self, now_ns: u64, reason: &str, out: &mut [u8]) -> usize {
        let r = reason.as_bytes();
        let n = r.len().min(200).min(out.len().saturating_sub(SHIM_FIXED_LEN + DATA_HDR_LEN));
        let mut h = self.header(self.snd_nxt, n, now_ns, 0);
        h.ptype = TYPE_ABORT;
        let o = wire::write_data_prefix(&h, &self.shim, out);
        out[o..o + n].copy_from_slice(&r[..n]);
        o + n
    }

    fn seg_index(&self, seq: u64) -> Option<usize> {
        let i = self.segs.partition_point(|s| s.seq < seq);
        (i < self.segs.len() && self.segs[i].seq == seq).then_some(i)
    }

    /// The sender has run out of data: if the window would have let another
    /// packet go and nothing lost waits for retransmission, the flow is
    /// application-limited (Linux `tcp_rate_check_app_limited`: less than an
    /// MSS unsent, fewer packets in flight than cwnd, `lost_out <=
    /// retrans_out`; there is no host queue here to check). The algorithm
    /// marks its rate samples until what is in flight now is delivered. The
    /// pacer is not consulted: the kernel does not either, and a paced sender
    /// out of data would not send when the pacer allowed it.
    fn check_app_limited(&mut self, now_ns: u64) {
        if self.lost_queue.is_empty() && self.inflight + self.cfg.mss as u64 <= self.window() {
            self.cc.on_app_limited(now_ns);
        }
    }

    fn arm_rto(&mut self, now_ns: u64) {
        let rto = (self.rto_ns.saturating_mul(self.backoff as u64)).min(self.cfg.max_rto_ns);
        self.rto_deadline = Some(now_ns + rto);
    }

    /// Builds the next datagram into `out` (>= 1472 bytes) if the window and
    /// the pacer allow.
    pub fn poll_transmit(&mut self, now_ns: u64, out: &mut [u8]) -> Transmit {
        if self.is_done() {
            return Transmit::Done;
        }
        // what would we send?
        let retx = self.lost_queue.first().copied();
        let new_len = match self.final_size {
            Some(sz) => sz.saturating_sub(self.snd_nxt).min(self.cfg.mss as u64) as usize,
            None => self.cfg.mss,
        };
        let probe = retx.is_none() && new_len == 0 && self.need_probe;
        if retx.is_none() && new_len == 0 && !probe {
            self.pace_held = false;
            self.check_app_limited(now_ns);
            return Transmit::Blocked;
        }
        let len = match retx {
            Some(seq) => match self.seg_index(seq) {
                Some(i) => self.segs[i].len as usize,
                None => {
                    self.lost_queue.remove(&seq);
                    return self.poll_transmit(now_ns, out);
                }
            },
            None => new_len,
        };
        // window (a probe is always allowed)
        if !probe && self.inflight > 0 && self.inflight + len as u64 > self.window() {
            self.pace_held = false;
            return Transmit::Blocked;
        }
        // pacer
        let mut paced_gap = None;
        if self.pacing_rate().is_some() {
            let next = self.next_send_ns();
            if now_ns < next {
                self.pace_held = true;
                return Transmit::Paced(next);
            }
            if self.pace_held {
                paced_gap = Some(self.last_gap_ns);
            }
        }
        self.pace_held = false;

        let dlen = Self::datagram_len(len);
        if out.len() < dlen {
            return Transmit::Blocked;
        }
        let (seq, flags) = match retx {
            Some(seq) => (seq, DF_RETX),
            None if probe => (self.snd_nxt, DF_PROBE),
            None => (self.snd_nxt, 0),
        };
        let hdr = self.header(seq, len, now_ns, flags);
        let o = wire::write_data_prefix(&hdr, &self.shim, out);
        payload::fill(self.seed, seq, &mut out[o..o + len]);
        self.tx_seq = self.tx_seq.wrapping_add(1);

        if let Some(seq) = retx {
            self.lost_queue.remove(&seq);
            if let Some(i) = self.seg_index(seq) {
                let s = &mut self.segs[i];
                s.sent_ns = now_ns;
                s.retx = s.retx.saturating_add(1);
                s.lost = false;
                s.in_flight = true;
                self.inflight += len as u64;
            }
            self.stats.retx_pkts += 1;
            self.stats.retx_bytes += len as u64;
        } else if probe {
            self.need_probe = false;
        } else {
            self.segs.push_back(Seg {
                seq,
                len: len as u32,
                sent_ns: now_ns,
                retx: 0,
                sacked: false,
                lost: false,
                in_flight: true,
            });
            self.snd_nxt += len as u64;
            self.inflight += len as u64;
        }
        self.stats.pkts_sent += 1;
        self.stats.bytes_sent += len as u64;
        if self.rto_deadline.is_none() {
            self.arm_rto(now_ns);
        }
        // The gap at the rate this packet was sent at (before the
        // algorithm hears of the send).
        let gap = self.pacing_gap_ns(len, dlen);
        let due = self.next_send_ns();
        self.cc.on_send(now_ns, len as u64);

        if let Some(gap) = gap {
            // keep the schedule while less than `pace_max_burst` gaps late;
            // otherwise restart it from now (no catch-up burst)
            let slack = gap * self.cfg.pace_max_burst.max(1) as u64;
            self.pace_slot_ns = Some(match self.pace_slot_ns {
                Some(_) if now_ns <= due + slack => due,
                _ => now_ns,
            });
            self.pace_last = (len, dlen);
            self.last_gap_ns = gap;
        }
        Transmit::Packet(TxInfo {
            len: dlen,
            seq,
            payload_len: len,
            retransmission: retx.is_some(),
            paced_gap_ns: paced_gap,
        })
    }

    /// When the pacer lets the next packet go: the last packet's slot plus
    /// its gap at the current rates (0 before the first, or after an RTO
    /// restarted the schedule).
    fn next_send_ns(&self) -> u64 {
        let (payload, dlen) = self.pace_last;
        self.pace_slot_ns.map_or(0, |s| s + self.pacing_gap_ns(payload, dlen).unwrap_or(0))
    }

    fn update_rtt(&mut self, rtt: u64) {
        self.stats.rtt_samples += 1;
        self.stats.rtt_sum_ns += rtt as u128;
        self.min_rtt_ns = Some(self.min_rtt_ns.map_or(rtt, |m| m.min(rtt)));
        self.stats.min_rtt_ns = self.min_rtt_ns.unwrap_or(0);
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(rtt);
                self.rttvar_ns = rtt / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(rtt);
                self.rttvar_ns = (3 * self.rttvar_ns + err) / 4;
                self.srtt_ns = Some((7 * srtt + rtt) / 8);
            }
        }
        let srtt = self.srtt_ns.unwrap_or(rtt);
        self.rto_ns = (srtt + 4 * self.rttvar_ns.max(1_000)).clamp(self.cfg.min_rto_ns, self.cfg.max_rto_ns);
    }

    /// Marks the segment at index `i` delivered (cum-acked or SACKed);
    /// returns its length if it was not delivered before. The algorithm
    /// hears of it by send time, so interval-based algorithms can charge it
    /// to the interval that sent it.
    fn deliver(&mut self, now_ns: u64, i: usize) -> u64 {
        let s = &mut self.segs[i];
        if s.sacked {
            return 0;
        }
        s.sacked = true;
        self.cc.on_packet_acked(now_ns, s.sent_ns, s.len as u64);
        if s.in_flight {
            s.in_flight = false;
            self.inflight -= s.len as u64;
        }
        if s.lost {
            s.lost = false;
            self.lost_queue.remove(&s.seq);
        }
        s.len as u64
    }

    /// Processes an ACK of this flow.
    pub fn on_ack(&mut self, now_ns: u64, ack: &Ack) -> AckOutcome {
        self.on_ack_at(now_ns, now_ns, ack)
    }

    /// [`FlowSender::on_ack`] for an ACK the kernel received at `arrived_ns`
    /// (≤ `now_ns`). The RTT sample runs from the trigger's send to the
    /// ACK's arrival, less the time the trigger waited at the receiver
    /// (`rx_hold_us`): the path's round trip, without either host's
    /// delay in getting to its socket, as a NIC's timestamps would give
    /// it (TIMELY, SIGCOMM 2015, times its RTTs on the NIC).
    pub fn on_ack_at(&mut self, now_ns: u64, arrived_ns: u64, ack: &Ack) -> AckOutcome {
        let arrived_ns = arrived_ns.min(now_ns);
        let mut out = AckOutcome::default();
        if self.is_done() {
            return out;
        }
        if ack.cum_ack > self.snd_nxt || ack.sacks.iter().any(|b| b.end > self.snd_nxt) {
            self.stats.bad_acks += 1;
            return out;
        }
        self.stats.acks += 1;
        self.ever_acked = true;
        // A CNP is a packet of its own in RoCEv2, ahead of the ACK.
        if ack.cnp() {
            self.stats.cnps += 1;
            self.cc.on_cnp(now_ns);
        }
        let mut newly = 0u64;
        let mut pkts = 0u32;

        // cumulative part
        while let Some(front) = self.segs.front() {
            if front.seq + front.len as u64 > ack.cum_ack {
                break;
            }
            let was_sacked = front.sacked;
            let n = self.deliver(now_ns, 0);
            if n > 0 {
                newly += n;
                pkts += 1;
            }
            if was_sacked {
                self.sacked_segs = self.sacked_segs.saturating_sub(1);
            }
            self.segs.pop_front();
        }
        if ack.cum_ack > self.snd_una {
            self.snd_una = ack.cum_ack;
        }
        // selective part
        for b in &ack.sacks {
            let start = b.start.max(self.snd_una);
            if b.end <= start {
                continue;
            }
            let mut i = self.segs.partition_point(|s| s.seq < start);
            while i < self.segs.len() && self.segs[i].seq + self.segs[i].len as u64 <= b.end {
                let n = self.deliver(now_ns, i);
                if n > 0 {
                    newly += n;
                    pkts += 1;
                    self.sacked_segs += 1;
                    self.high_sacked_end = self.high_sacked_end.max(self.segs[i].seq + n);
                }
                i += 1;
            }
        }

        // RTT from the echoed timestamp of the packet that triggered the
        // ACK; a hold longer than the whole round trip cannot be, and is
        // not taken out.
        let rtt = (ack.echo_ts_ns >= self.start_ns && ack.echo_ts_ns <= arrived_ns).then(|| {
            let raw = arrived_ns - ack.echo_ts_ns;
            let hold = ack.rx_hold_us as u64 * 1_000;
            if hold < raw { raw - hold } else { raw }
        });
        if let Some(r) = rtt {
            self.update_rtt(r);
            self.rack_ts_ns = self.rack_ts_ns.max(ack.echo_ts_ns);
        }

        if newly > 0 {
            self.last_progress_ns = now_ns;
            self.backoff = 1;
            // Nothing outstanding and more data to come: nothing to time
            // out (the next send arms the timer). An RTO here would fire
            // between paced packets at rates whose gap exceeds it and
            // reset the pacer, so slow flows would send every RTO.
            let awaiting_completion = self.final_size.is_some_and(|sz| self.snd_nxt >= sz);
            if self.segs.is_empty() && !awaiting_completion {
                self.rto_deadline = None;
            } else {
                self.arm_rto(now_ns);
            }
        }
        if self.in_recovery && self.snd_una >= self.recovery_end {
            self.in_recovery = false;
        }

        // loss detection
        let lost = self.detect_losses(now_ns);

        // ECN: cumulative CE byte counter, attributed to acked bytes
        if ack.ce_bytes > self.last_ce_bytes {
            self.ce_pending += ack.ce_bytes - self.last_ce_bytes;
            self.stats.ce_bytes += ack.ce_bytes - self.last_ce_bytes;
            self.last_ce_bytes = ack.ce_bytes;
        }
        let ce = self.ce_pending.min(newly);
        self.ce_pending -= ce;

        let qd = ack.qdepth();
        if let Some(q) = qd {
            self.stats.max_qdepth_pkts = self.stats.max_qdepth_pkts.max(q);
        }
        let unit = ack.depth_unit().unwrap_or(DepthUnit::Packets);
        let sample = AckSample {
            now_ns,
            acked_bytes: newly,
            ce_bytes: ce,
            rtt_ns: rtt,
            path_qdepth_pkts: qd,
            inflight_bytes: self.inflight,
            acked_pkts: pkts,
            hops: {
                let mut v = std::mem::take(&mut self.hop_buf);
                v.clear();
                v.extend(ack.hops.iter().map(|h| hop_report(h, unit)));
                v
            },
            int_hops: {
                let mut v = std::mem::take(&mut self.int_buf);
                v.clear();
                v.extend(ack.int_hops.iter().map(int_hop));
                v
            },
        };
        self.cc.on_ack(&sample);
        self.hop_buf = sample.hops;
        self.int_buf = sample.int_hops;
        if lost > 0 {
            self.stats.lost_pkts_detected += 1;
            if self.loss_every || !self.in_recovery {
                self.stats.loss_events += 1;
                self.cc.on_loss(now_ns, lost);
            }
            if !self.in_recovery {
                self.in_recovery = true;
                self.recovery_end = self.snd_nxt;
            }
        }

        // completion
        if let Some(sz) = self.final_size {
            if ack.complete() && ack.cum_ack >= sz && self.snd_una >= sz {
                self.state = FlowState::Complete { end_ns: now_ns };
                self.rto_deadline = None;
                out.completed = true;
            }
        }
        out.newly_acked = newly;
        out.rtt_ns = rtt;
        out.qdepth_pkts = qd;
        out.newly_lost = lost;
        out.cwnd_bytes = self.cc.cwnd_bytes();
        out.rate_bps = self.pacing_rate();
        out.target_delay_ns = self.cc.target_delay_ns();
        out.inflight = self.inflight;
        out
    }

    /// A postcard of one of this flow's packets, returned by the collector.
    pub fn on_feed(&mut self, now_ns: u64, p: &Postcard) {
        if self.is_done() {
            return;
        }
        self.stats.feed_reports += 1;
        self.cc.on_queue_report(now_ns, &postcard_report(p));
    }

    /// Declares holes lost: a never-retransmitted segment with >= dupthresh
    /// SACKed segments above it, or any segment sent more than a reordering
    /// window before the newest delivered transmission (RACK). Returns the
    /// bytes newly marked lost.
    fn detect_losses(&mut self, now_ns: u64) -> u64 {
        if self.sacked_segs == 0 || self.segs.is_empty() {
            return 0;
        }
        let reo_wnd = self.min_rtt_ns.map_or(1_000_000, |m| (m / 4).max(50_000));
        let top = self.segs.partition_point(|s| s.seq < self.high_sacked_end);
        let mut sacked_above = 0u32;
        let mut lost = 0u64;
        for i in (0..top.min(self.segs.len())).rev() {
            let s = &mut self.segs[i];
            if s.sacked {
                sacked_above += 1;
                continue;
            }
            if s.lost || !s.in_flight {
                continue;
            }
            let by_count = s.retx == 0 && sacked_above >= self.cfg.dupthresh;
            let by_time = s.sent_ns + reo_wnd < self.rack_ts_ns;
            if by_count || by_time {
                s.lost = true;
                s.in_flight = false;
                self.inflight -= s.len as u64;
                self.lost_queue.insert(s.seq);
                lost += s.len as u64;
                self.cc.on_packet_lost(now_ns, s.sent_ns, s.len as u64);
            }
        }
        lost
    }

    /// Next time [`FlowSender::on_timer`] wants to run.
    pub fn next_timer(&self) -> Option<u64> {
        if self.is_done() {
            return None;
        }
        let t = match self.rto_deadline {
            Some(d) => d.min(self.next_tick_ns),
            None => self.next_tick_ns,
        };
        Some(self.cc.next_timer_ns().map_or(t, |c| c.min(t)))
    }

    /// RTO and periodic tick.
    pub fn on_timer(&mut self, now_ns: u64) {
        if self.is_done() {
            return;
        }
        if now_ns >= self.next_tick_ns {
            self.cc.on_tick(now_ns);
            self.next_tick_ns = now_ns + self.cfg.tick_ns;
        } else if self.cc.next_timer_ns().is_some_and(|t| t <= now_ns) {
            // The algorithm's own timer (not the periodic tick).
            self.cc.on_tick(now_ns);
        }
        let Some(deadline) = self.rto_deadline else { return };
        if now_ns < deadline {
            return;
        }
        let silent = now_ns - self.last_progress_ns;
        if silent >= self.cfg.give_up_ns {
            let reason = FailReason::PeerGone { silent_ns: silent, rtos: self.stats.rto_count, ever_acked: self.ever_acked };
            self.fail(now_ns, reason);
            return;
        }
        self.stats.rto_count += 1;
        self.backoff = (self.backoff * 2).min(64);
        // everything not SACKed is presumed lost
        for s in self.segs.iter_mut() {
            if !s.sacked && !s.lost {
                if s.in_flight {
                    s.in_flight = false;
                    self.inflight -= s.len as u64;
                }
                s.lost = true;
                self.lost_queue.insert(s.seq);
                self.cc.on_packet_lost(now_ns, s.sent_ns, s.len as u64);
            }
        }
        if self.segs.is_empty() && self.final_size.is_some() {
            self.need_probe = true;
        }
        self.in_recovery = true;
        self.recovery_end = self.snd_nxt;
        self.cc.on_rto(now_ns);
        self.pace_slot_ns = None;
        self.arm_rto(now_ns);
    }

    /// Earliest time the datapath should call us again (pacing deadline,
    /// RTO or tick), given the last `poll_transmit` result.
    pub fn wakeup(&self, last: &Transmit) -> Option<u64> {
        let t = self.next_timer();
        match last {
            Transmit::Paced(at) => Some(t.map_or(*at, |t| t.min(*at))),
            Transmit::Done => None,
            _ => t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed(u64);
    impl CongestionControl for Fixed {
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn on_ack(&mut self, _: &AckSample) {}
        fn on_loss(&mut self, _: u64, _: u64) {}
        fn on_rto(&mut self, _: u64) {}
        fn cwnd_bytes(&self) -> Option<u64> {
            Some(self.0)
        }
        fn pacing_rate_bps(&self) -> Option<u64> {
            None
        }
    }

    fn ack(cum: u64, sacks: &[(u64, u64)], echo: u64, complete: bool) -> Ack {
        Ack {
            flow_id: 1,
            cum_ack: cum,
            echo_ts_ns: echo,
            echo_tx_seq: 0,
            flags: if complete { wire::AF_COMPLETE } else { 0 },
            ecn: 0,
            ce_pkts: 0,
            data_pkts: 0,
            ce_bytes: 0,
            rcvd_bytes: 0,
            qdepth_pkts: wire::NO_QDEPTH,
            raw_max_qdepth: 0,
            depth_unit: 0,
            shim_flags: 0,
            rx_hold_us: 0,
            sacks: sacks.iter().map(|&(start, end)| wire::SackBlock { start, end }).collect(),
            hops: vec![],
            int_hops: vec![],
        }
    }

    /// Records what reaches the algorithm, in order.
    #[derive(Default)]
    struct Log {
        events: Vec<String>,
        int_hops: Vec<Vec<IntHop>>,
        hops: Vec<Vec<QueueReport>>,
    }
    struct Recorder(std::sync::Arc<std::sync::Mutex<Log>>);
    impl CongestionControl for Recorder {
        fn name(&self) -> &'static str {
            "recorder"
        }
        fn on_ack(&mut self, s: &AckSample) {
            let mut l = self.0.lock().unwrap();
            l.events.push(format!("ack {}", s.now_ns));
            l.int_hops.push(s.int_hops.clone());
            l.hops.push(s.hops.clone());
        }
        fn on_cnp(&mut self, now_ns: u64) {
            self.0.lock().unwrap().events.push(format!("cnp {now_ns}"));
        }
        fn on_loss(&mut self, _: u64, _: u64) {}
        fn on_rto(&mut self, _: u64) {}
        fn cwnd_bytes(&self) -> Option<u64> {
            Some(1 << 20)
        }
        fn pacing_rate_bps(&self) -> Option<u64> {
            None
        }
    }

    fn int_record(i: u16) -> IntHopRecord {
        IntHopRecord {
            switch_id: i,
            egress_port: 5,
            enq_qdepth: 2,
            deq_timedelta_ns: 2_500,
            egress_ts_ns: 7_000_000_123 + u64::from(i),
            qlen_bytes: 3_000 * u32::from(i),
            tx_bytes: u32::MAX - 10,
            rate_kbps: 25_000_000,
        }
    }

    #[test]
    fn int_records_reach_the_algorithm_as_int_hops_after_a_cnp() {
        let log = std::sync::Arc::new(std::sync::Mutex::new(Log::default()));
        let cfg = SenderConfig { mss: 1000, shim: ShimChoice::V2, ..Default::default() };
        let mut s = FlowSender::new(1, 5, FlowSize::Bytes(2000), Box::new(Recorder(log.clone())), cfg, 0);
        assert_eq!(s.shim_version(), 2);
        let mut buf = vec![0u8; 2048];
        let Transmit::Packet(t) = s.poll_transmit(10, &mut buf) else { panic!() };
        assert_eq!((buf[0], t.len), (2, 8 + 48 + 1000), "a version-2 shim, no records yet");
        let mut a = ack(1000, &[], 10, false);
        a.flags |= wire::AF_INT | wire::AF_CNP;
        a.int_hops = vec![int_record(2), int_record(1)];
        a.hops = a.int_hops.iter().map(IntHopRecord::hop_record).collect();
        // through the wire, as the datapath gets it
        let mut b = [0u8; wire::MAX_ACK_LEN];
        let n = a.write(&mut b);
        let a = Ack::parse(&b[..n]).unwrap();
        s.on_ack(500, &a);
        let l = log.lock().unwrap();
        assert_eq!(l.events, ["cnp 500", "ack 500"], "the CNP first");
        assert_eq!(s.stats.cnps, 1);
        let want = |i: u16| IntHop {
            hop: (u32::from(i) << 16) | 5,
            qlen_bytes: 3_000 * u64::from(i),
            tx_bytes: u32::MAX - 10,
            ts_ns: 7_000_000_123 + u64::from(i),
            rate_bps: 25_000_000_000,
        };
        assert_eq!(l.int_hops[0], [want(2), want(1)], "newest first, ns, bits/s");
        // and the version-1 view as queue reports, as before
        assert_eq!(l.hops[0].len(), 2);
        assert_eq!((l.hops[0][0].hop, l.hops[0][0].depth_pkts, l.hops[0][0].at_us), ((2 << 16) | 5, 2.0, 7_000_000 - 2));
    }

    /// The RTT sample ends at the ACK's arrival, not when the sender read
    /// it, and leaves out the time the trigger waited at the receiver.
    #[test]
    fn rtt_runs_from_send_to_arrival_less_the_receivers_hold() {
        let log = std::sync::Arc::new(std::sync::Mutex::new(Log::default()));
        let cfg = SenderConfig { mss: 1000, ..Default::default() };
        let mut s = FlowSender::new(1, 5, FlowSize::Bytes(3000), Box::new(Recorder(log.clone())), cfg, 0);
        let mut buf = vec![0u8; 2048];
        for t in [10_000, 20_000, 30_000] {
            assert!(matches!(s.poll_transmit(t, &mut buf), Transmit::Packet(_)));
        }
        // sent at 10 µs, arrived at 1 010 µs, read at 1 400 µs, 200 µs held
        let mut a = ack(1000, &[], 10_000, false);
        a.rx_hold_us = 200;
        let out = s.on_ack_at(1_400_000, 1_010_000, &a);
        assert_eq!(out.rtt_ns, Some(800_000));
        assert_eq!(log.lock().unwrap().events.last().unwrap(), "ack 1400000", "the algorithm still acts now");
        // without a kernel stamp (on_ack) and nothing held: send to now
        let out = s.on_ack(1_500_000, &ack(2000, &[], 20_000, false));
        assert_eq!(out.rtt_ns, Some(1_480_000));
        // a hold longer than the round trip cannot be: not taken out
        let mut a = ack(3000, &[], 30_000, false);
        a.rx_hold_us = 5_000;
        assert_eq!(s.on_ack_at(1_600_000, 1_530_000, &a).rtt_ns, Some(1_500_000));
    }

    /// A rate-only algorithm whose rate the test sets, with one timer.
    struct Rate(std::sync::Arc<std::sync::Mutex<(u64, Option<u64>, Vec<u64>)>>);
    impl CongestionControl for Rate {
        fn name(&self) -> &'static str {
            "rate"
        }
        fn on_ack(&mut self, _: &AckSample) {}
        fn on_loss(&mut self, _: u64, _: u64) {}
        fn on_rto(&mut self, _: u64) {}
        fn on_tick(&mut self, now_ns: u64) {
            let mut g = self.0.lock().unwrap();
            g.2.push(now_ns);
            if g.1.is_some_and(|t| t <= now_ns) {
                g.1 = None;
            }
        }
        fn next_timer_ns(&self) -> Option<u64> {
            self.0.lock().unwrap().1
        }
        fn cwnd_bytes(&self) -> Option<u64> {
            None
        }
        fn pacing_rate_bps(&self) -> Option<u64> {
            Some(self.0.lock().unwrap().0)
        }
    }

    /// A rate change applies to the gap already running, as a NIC's rate
    /// limiter applies it (the DCQCN authors' simulator moves the next send
    /// by the new minus the old interval, RdmaHw::ChangeRate). The gap was
    /// fixed at the rate of the last send: a DCQCN flow cut to its 1 Mb/s
    /// floor waited 11.6 ms for its next packet however soon it recovered
    /// (int-incast at 25 Gb/s: no traffic from 3.9 to 14.4 ms).
    #[test]
    fn a_rate_change_applies_to_the_running_gap() {
        let st = std::sync::Arc::new(std::sync::Mutex::new((1_000_000u64, None, vec![])));
        let cfg = SenderConfig { mss: 1000, ..Default::default() };
        let mut s = FlowSender::new(1, 5, FlowSize::Unbounded, Box::new(Rate(st.clone())), cfg, 0);
        let mut buf = vec![0u8; 2048];
        let Transmit::Packet(t) = s.poll_transmit(0, &mut buf) else { panic!() };
        let wire = (t.len + IP_UDP_OVERHEAD) as u64;
        // At 1 Mb/s the next packet is due wire·8 µs later.
        assert_eq!(s.poll_transmit(1_000, &mut buf), Transmit::Paced(wire * 8_000));
        // The rate rises to 10 Gb/s: due wire·0.8 ns after the first.
        st.lock().unwrap().0 = 10_000_000_000;
        let due = wire * 8 / 10;
        assert_eq!(s.poll_transmit(due - 1, &mut buf), Transmit::Paced(due));
        assert!(matches!(s.poll_transmit(due, &mut buf), Transmit::Packet(_)));
        // And a cut lengthens the gap already running.
        st.lock().unwrap().0 = 1_000_000_000;
        assert_eq!(s.poll_transmit(due + 1, &mut buf), Transmit::Paced(due + wire * 8));
        // A stopped flow's probe is not held by a gap of the old rate either.
        st.lock().unwrap().0 = 1_000_000;
        s.stop(due + 2);
        st.lock().unwrap().0 = 10_000_000_000;
        assert!(matches!(s.poll_transmit(due + 2 * wire, &mut buf), Transmit::Packet(_)), "the probe");
    }

    /// The algorithm's own timers (DCQCN's rate-increase timer) wake the
    /// sender and reach `on_tick` when due, not at the next periodic tick.
    #[test]
    fn the_algorithm_s_timer_wakes_the_sender() {
        let st = std::sync::Arc::new(std::sync::Mutex::new((1_000_000u64, Some(55_000), vec![])));
        let cfg = SenderConfig { mss: 1000, ..Default::default() };
        let mut s = FlowSender::new(1, 5, FlowSize::Unbounded, Box::new(Rate(st.clone())), cfg, 0);
        assert_eq!(s.next_timer(), Some(55_000), "before the 1 ms tick");
        s.on_timer(54_999);
        assert!(st.lock().unwrap().2.is_empty());
        s.on_timer(55_000);
        assert_eq!(st.lock().unwrap().2, [55_000]);
        assert_eq!(s.next_timer(), Some(1_000_000), "then the periodic tick");
    }

    #[test]
    fn the_algorithm_picks_the_shim_and_the_payload_size() {
        let path = cc::PathInfo { mss: 1288, line_rate_bps: Some(10_000_000_000), init_cwnd_pkts: 10 };
        let mut buf = vec![0u8; 2048];
        for (name, version, mss) in [("hpcc", 2, 1288), ("powertcp", 2, 1288), ("dcqcn", 1, 1336), ("dctcp", 1, 1336)] {
            let algo = cc::by_name(name, &[], &path).unwrap();
            let mut s = FlowSender::new(1, 5, FlowSize::Unbounded, algo, SenderConfig::default(), 0);
            assert_eq!((s.shim_version(), s.mss()), (version, mss), "{name}");
            let Transmit::Packet(t) = s.poll_transmit(0, &mut buf) else { panic!("{name}") };
            assert_eq!((buf[0], t.payload_len), (version, mss), "{name}");
        }
        // Forced either way; a smaller MSS stays.
        let cfg = SenderConfig { shim: ShimChoice::V1, ..Default::default() };
        let s = FlowSender::new(1, 5, FlowSize::Unbounded, cc::by_name("hpcc", &[], &path).unwrap(), cfg, 0);
        assert_eq!((s.shim_version(), s.mss()), (1, 1336));
        let cfg = SenderConfig { shim: ShimChoice::V2, mss: 900, ..Default::default() };
        let s = FlowSender::new(1, 5, FlowSize::Unbounded, Box::new(Fixed(1 << 20)), cfg, 0);
        assert_eq!((s.shim_version(), s.mss()), (2, 900));
    }

    /// Counts `on_app_limited` calls; a fixed window.
    struct AppLimited(u64, std::sync::Arc<std::sync::Mutex<Vec<u64>>>);
    impl CongestionControl for AppLimited {
        fn name(&self) -> &'static str {
            "app-limited"
        }
        fn on_ack(&mut self, _: &AckSample) {}
        fn on_loss(&mut self, _: u64, _: u64) {}
        fn on_rto(&mut self, _: u64) {}
        fn on_app_limited(&mut self, now_ns: u64) {
            self.1.lock().unwrap().push(now_ns);
        }
        fn cwnd_bytes(&self) -> Option<u64> {
            Some(self.0)
        }
        fn pacing_rate_bps(&self) -> Option<u64> {
            None
        }
    }

    /// `tcp_rate_check_app_limited`: out of data with room in the window is
    /// application-limited; out of data with a full window, or with a loss
    /// still to repair, is not.
    #[test]
    fn running_out_of_data_below_the_window_is_app_limited() {
        let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let cfg = SenderConfig { mss: 100, ..Default::default() };
        let mut buf = vec![0u8; 2000];
        // 3 packets of data, a 5-packet window: the sender runs dry with room left.
        let cc = Box::new(AppLimited(500, calls.clone()));
        let mut s = FlowSender::new(1, 5, FlowSize::Bytes(300), cc, cfg.clone(), 0);
        for _ in 0..3 {
            assert!(matches!(s.poll_transmit(10, &mut buf), Transmit::Packet(_)));
        }
        assert!(calls.lock().unwrap().is_empty(), "not while data was left");
        assert_eq!(s.poll_transmit(20, &mut buf), Transmit::Blocked);
        assert_eq!(*calls.lock().unwrap(), [20]);
        // 3 packets of data, a 3-packet window: the window, not the application, limits.
        let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let cc = Box::new(AppLimited(300, calls.clone()));
        let mut s = FlowSender::new(1, 5, FlowSize::Bytes(300), cc, cfg.clone(), 0);
        for _ in 0..3 {
            assert!(matches!(s.poll_transmit(10, &mut buf), Transmit::Packet(_)));
        }
        assert_eq!(s.poll_transmit(20, &mut buf), Transmit::Blocked);
        assert!(calls.lock().unwrap().is_empty(), "cwnd-limited, not app-limited");
        // One delivered: a packet of room, nothing to send.
        s.on_ack(30, &ack(100, &[], 10, false));
        assert_eq!(s.poll_transmit(31, &mut buf), Transmit::Blocked);
        assert_eq!(*calls.lock().unwrap(), [31]);
        // A long flow never runs dry.
        let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let cc = Box::new(AppLimited(1 << 20, calls.clone()));
        let mut s = FlowSender::new(1, 5, FlowSize::Unbounded, cc, cfg, 0);
        for _ in 0..20 {
            assert!(matches!(s.poll_transmit(10, &mut buf), Transmit::Packet(_)));
        }
        assert!(calls.lock().unwrap().is_empty());
    }

    /// With a hole to repair the sender is not application-limited, even
    /// out of new data (`lost_out > retrans_out`).
    #[test]
    fn a_loss_waiting_for_retransmission_is_not_app_limited() {
        let calls = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let cfg = SenderConfig { mss: 100, ..Default::default() };
        let mut buf = vec![0u8; 2000];
        let cc = Box::new(AppLimited(1000, calls.clone()));
        let mut s = FlowSender::new(1, 5, FlowSize::Bytes(500), cc, cfg, 0);
        for _ in 0..5 {
            assert!(matches!(s.poll_transmit(10, &mut buf), Transmit::Packet(_)));
        }
        assert_eq!(s.poll_transmit(11, &mut buf), Transmit::Blocked);
        calls.lock().unwrap().clear();
        // 0 lost (3 SACKed above it): the retransmission goes first.
        s.on_ack(1000, &ack(0, &[(100, 500)], 10, false));
        assert_eq!(s.lost_queue.len(), 1);
        let Transmit::Packet(t) = s.poll_transmit(1001, &mut buf) else { panic!() };
        assert!(t.retransmission);
        assert!(calls.lock().unwrap().is_empty());
        // Repaired and dry: application-limited again.
        assert_eq!(s.poll_transmit(1002, &mut buf), Transmit::Blocked);
        assert_eq!(*calls.lock().unwrap(), [1002]);
    }

    /// A fixed pacing rate, counted in whole IP packets or in payload.
    struct Paced(u64, bool);
    impl CongestionControl for Paced {
        fn name(&self) -> &'static str {
            "paced"
        }
        fn on_ack(&mut self, _: &AckSample) {}
        fn on_loss(&mut self, _: u64, _: u64) {}
        fn on_rto(&mut self, _: u64) {}
        fn cwnd_bytes(&self) -> Option<u64> {
            None
        }
        fn pacing_rate_bps(&self) -> Option<u64> {
            Some(self.0)
        }
        fn pacing_counts_payload(&self) -> bool {
            self.1
        }
    }

    /// The gap between paced packets: a whole IP packet at the rate (1336
    /// payload bytes leave as 1420: 113.6 µs at 100 Mb/s), or, for an
    /// algorithm whose rate counts payload as TCP's pacing does (BBR), the
    /// payload alone (106.88 µs); a pace cap counts IP packets either way.
    #[test]
    fn pacing_counts_ip_packets_or_payload_as_the_algorithm_says() {
        let mut buf = vec![0u8; 2048];
        for (payload, cap, want) in [(false, None, 113_600), (true, None, 106_880),
                                     (true, Some(100_000_000), 113_600), (true, Some(200_000_000), 106_880)] {
            let cfg = SenderConfig { pace_cap_bps: cap, ..Default::default() };
            let mut s = FlowSender::new(1, 5, FlowSize::Unbounded, Box::new(Paced(100_000_000, payload)), cfg, 0);
            assert!(matches!(s.poll_transmit(1_000, &mut buf), Transmit::Packet(_)));
            assert_eq!(s.poll_transmit(1_001, &mut buf), Transmit::Paced(1_000 + want), "payload {payload}, cap {cap:?}");
        }
        // BBR's rate is its delivery rate, in payload; the others' a link rate.
        let path = cc::PathInfo::default();
        for (name, payload) in [("bbr", true), ("bbr3", true), ("timely", false), ("pcc", false)] {
            assert_eq!(cc::by_name(name, &[], &path).unwrap().pacing_counts_payload(), payload, "{name}");
        }
    }

    #[test]
    fn window_and_sack_loss_detection() {
        let cfg = SenderConfig { mss: 100, ..Default::default() };
        let mut s = FlowSender::new(1, 5, FlowSize::Bytes(1000), Box::new(Fixed(500)), cfg, 1);
        let mut buf = vec![0u8; 2000];
        let mut sent = vec![];
        while let Transmit::Packet(t) = s.poll_transmit(10, &mut buf) {
            sent.push(t.seq);
        }
        assert_eq!(sent, vec![0, 100, 200, 300, 400]);
        assert_eq!(s.inflight(), 500);
        // segment 0 lost; 100..400 SACKed -> dupthresh declares 0 lost
        s.on_ack(1000, &ack(0, &[(100, 400)], 12, false));
        assert_eq!(s.lost_queue.len(), 1);
        match s.poll_transmit(1001, &mut buf) {
            Transmit::Packet(t) => {
                assert_eq!(t.seq, 0);
                assert!(t.retransmission);
            }
            other => panic!("{other:?}"),
        }
        // bogus ACK beyond snd_nxt is ignored
        s.on_ack(1002, &ack(10_000, &[], 0, false));
        assert_eq!(s.stats.bad_acks, 1);
        s.on_ack(2000, &ack(500, &[], 1001, false));
        assert_eq!(s.acked_bytes(), 500);
        assert_eq!(s.inflight(), 0);
    }

    #[test]
    fn rto_backoff_and_give_up() {
        let cfg = SenderConfig {
            mss: 100,
            init_rto_ns: 1_000,
            min_rto_ns: 1_000,
            give_up_ns: 100_000,
            ..Default::default()
        };
        let mut s = FlowSender::new(1, 5, FlowSize::Bytes(100), Box::new(Fixed(500)), cfg, 0);
        let mut buf = vec![0u8; 2000];
        assert!(matches!(s.poll_transmit(0, &mut buf), Transmit::Packet(_)));
        let mut t = 0;
        let mut deadlines = vec![];
        while !s.is_done() && t < 1_000_000 {
            t = s.next_timer().unwrap();
            deadlines.push(t);
            s.on_timer(t);
            let _ = s.poll_transmit(t, &mut buf);
        }
        assert!(matches!(s.state(), FlowState::Failed { reason: FailReason::PeerGone { ever_acked: false, .. }, .. }));
        assert!(s.stats.rto_count >= 5, "{}", s.stats.rto_count);
    }
}
