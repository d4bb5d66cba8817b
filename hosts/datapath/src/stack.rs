//! A host's user-space transport without sockets or a clock: the flows of
//! a sending agent (workload → one FlowSender per flow, ACK demultiplexing,
//! stop schedules, finished flows logged) and a receiving agent's output.
//! The UDP datapath ([`crate::udp`]) drives these on real sockets in real
//! time; the simulator drives the same code in virtual time, so both
//! executors send the same packets for the same events.
//!
//! Times are nanoseconds on the caller's clock; `unix_offset` maps them to
//! the unix time written in the logs.

use crate::nic::NicArbiter;
use crate::{CcFactory, DatapathError};
use cc::MiRecord;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use traffic::log::{csv_field, FlowLogger, FlowRecord, ThroughputSeries};
use traffic::{FlowSpec, Workload};
use transport::pacing::{GapStats, GapSummary, Lateness};
use transport::receiver::{ReceiverStats, RecvFlowRecord};
use transport::sender::{FlowSender, FlowSize, FlowState, SenderConfig, Transmit};
use transport::wire::{self, Ack};

/// What one sending agent did (sender_summary.json).
#[derive(Debug, Clone, Default)]
pub struct SenderReport {
    pub src: String,
    pub flows_started: u64,
    pub flows_complete: u64,
    pub flows_failed: u64,
    pub pkts_sent: u64,
    pub retx_pkts: u64,
    pub local_drops: u64,
    pub acks: u64,
    pub foreign_pkts: u64,
    pub late_acks: u64,
    pub bad_acks: u64,
    /// Returned postcards (feed) delivered to a flow.
    pub feed_reports: u64,
    pub bytes_acked: u64,
    pub elapsed_ns: u64,
    pub pacing: GapSummary,
    /// How late the sender's sleeps ended (real time only).
    pub wake_late: Lateness,
}

impl SenderReport {
    pub fn goodput_mbps(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.bytes_acked as f64 * 8.0 / self.elapsed_ns as f64 * 1e3
        }
    }
    pub fn to_json(&self) -> String {
        format!(
            "{{\"datapath\": \"udp\", \"src\": \"{}\", \"flows_started\": {}, \"flows_complete\": {}, \"flows_failed\": {}, \"pkts_sent\": {}, \"retx_pkts\": {}, \"local_drops\": {}, \"acks\": {}, \"foreign_pkts\": {}, \"late_acks\": {}, \"bad_acks\": {}, \"feed_reports\": {}, \"bytes_acked\": {}, \"elapsed_ns\": {}, \"goodput_mbps\": {:.3}, \"pacing\": {}, \"wake_late\": {}}}",
            self.src,
            self.flows_started,
            self.flows_complete,
            self.flows_failed,
            self.pkts_sent,
            self.retx_pkts,
            self.local_drops,
            self.acks,
            self.foreign_pkts,
            self.late_acks,
            self.bad_acks,
            self.feed_reports,
            self.bytes_acked,
            self.elapsed_ns,
            self.goodput_mbps(),
            self.pacing.to_json(),
            self.wake_late.to_json()
        )
    }
}

/// Where a sender's packets go: a batch of datagrams (a sendmmsg batch, or
/// the simulator's outbox).
pub trait TxSink {
    /// The buffer the next datagram is written into.
    fn slot(&mut self) -> &mut [u8];
    /// The datagram in `slot()[..len]` is for `dst`.
    fn commit(&mut self, len: usize, dst: SocketAddrV4);
    fn is_full(&self) -> bool;
    /// Whether the host's NIC takes another packet now: a simulated NIC
    /// that arbitrates can tell from its queue, shared by every agent of
    /// the host; a socket cannot (default: yes).
    fn nic_has_room(&self) -> bool {
        true
    }
    /// When the NIC will next have room, if it can tell.
    fn nic_room_at(&self) -> Option<u64> {
        None
    }
    /// Sends what was committed; returns when it went out (the caller's
    /// clock) and how many datagrams were dropped locally.
    fn flush(&mut self) -> Result<(u64, usize), DatapathError>;
}

struct Active {
    spec: FlowSpec,
    src: String,
    dst: SocketAddrV4,
    sender: FlowSender,
    series: ThroughputSeries,
    last_tx: Option<u64>,
    last: Transmit,
    stopped: bool,
}

/// Options of a sending agent.
#[derive(Debug, Clone)]
pub struct SenderStackOptions {
    pub sender: SenderConfig,
    /// Whether data packets are ECT(0) (else not-ECT).
    pub ecn: bool,
    /// Name logged in flows.csv.
    pub cc_label: String,
    /// Packets one flow may send per scheduling round.
    pub max_burst: usize,
    /// Datapath name in flows.csv.
    pub datapath: String,
    /// The host's link rate, when its NIC arbitrates the flows (one packet
    /// of each in turn, never more than the link carries: [`NicArbiter`]);
    /// None: each flow sends when its window and pacer allow, and a shared
    /// transmit queue below may overflow.
    pub nic_rate_bps: Option<u64>,
}

/// The flows of one sending agent.
pub struct SenderStack {
    opts: SenderStackOptions,
    workload: Box<dyn Workload>,
    make_cc: Box<CcFactory>,
    logger: FlowLogger,
    unix_offset: u64,
    /// The logged source address of a flow to `dst`.
    src_of: Box<dyn FnMut(SocketAddrV4) -> String + Send>,
    flows: Vec<Active>,
    index: HashMap<u32, usize>,
    pending: Vec<(usize, Option<u64>)>,
    gaps: GapStats,
    rr: usize,
    nic: Option<NicArbiter>,
    /// The last `transmit` stopped because the NIC had no room; it has
    /// room again at this time.
    nic_waiting: Option<u64>,
    /// The lists of the last ACK parsed, reused by the next.
    ack_spare: wire::AckLists,
    /// Monitor intervals on their way to mi.csv (reused).
    mis: Vec<MiRecord>,
    pub report: SenderReport,
}

impl SenderStack {
    pub fn new(
        opts: SenderStackOptions,
        workload: Box<dyn Workload>,
        make_cc: Box<CcFactory>,
        logger: FlowLogger,
        unix_offset: u64,
        src: String,
        src_of: Box<dyn FnMut(SocketAddrV4) -> String + Send>,
    ) -> SenderStack {
        SenderStack {
            nic: opts.nic_rate_bps.map(NicArbiter::new),
            opts,
            workload,
            make_cc,
            logger,
            unix_offset,
            src_of,
            flows: Vec::new(),
            index: HashMap::new(),
            pending: Vec::with_capacity(32),
            gaps: GapStats::new(2_000_000),
            rr: 0,
            nic_waiting: None,
            ack_spare: wire::AckLists::default(),
            mis: Vec::new(),
            report: SenderReport { src, wake_late: Lateness::new(1_000_000), ..Default::default() },
        }
    }

    fn unix(&self, t: u64) -> u64 {
        self.unix_offset + t
    }

    fn record(&self, a: &Active, now: u64) -> FlowRecord {
        let st = &a.sender.stats;
        let (status, reason, end) = match a.sender.state() {
            FlowState::Complete { end_ns } => {
                (if a.spec.size.is_none() { "stopped" } else { "complete" }.to_string(), String::new(), *end_ns)
            }
            FlowState::Failed { end_ns, reason } => (reason.status().to_string(), reason.describe(), *end_ns),
            FlowState::Running => ("interrupted".into(), "still running at exit".into(), now),
        };
        FlowRecord {
            flow_id: a.spec.id,
            workload: a.spec.workload.to_string(),
            round: a.spec.round,
            datapath: self.opts.datapath.clone(),
            cc: self.opts.cc_label.clone(),
            src: a.src.clone(),
            dst: a.dst.to_string(),
            size_bytes: a.spec.size,
            start_unix_ns: self.unix(a.sender.start_ns()),
            end_unix_ns: self.unix(end),
            bytes_acked: a.sender.acked_bytes(),
            status,
            reason,
            pkts_sent: st.pkts_sent,
            retx_pkts: st.retx_pkts,
            rto_count: st.rto_count as u64,
            loss_events: st.loss_events as u64,
            ce_bytes: st.ce_bytes,
            rtt_samples: st.rtt_samples,
            mean_rtt_ns: (st.rtt_samples > 0).then(|| (st.rtt_sum_ns / st.rtt_samples as u128) as u64),
            min_rtt_ns: (st.rtt_samples > 0).then_some(st.min_rtt_ns),
            max_qdepth_pkts: (st.max_qdepth_pkts > 0).then_some(st.max_qdepth_pkts),
            ecn: if self.opts.ecn { "ect0".into() } else { "off".into() },
        }
    }

    /// Starts the flows whose time has come.
    pub fn start_flows(&mut self, now: u64) -> Result<(), DatapathError> {
        for spec in self.workload.poll(now) {
            self.report.flows_started += 1;
            let dst = crate::sys::v4(spec.dst).map_err(DatapathError::Socket)?;
            match (self.make_cc)(&spec) {
                Ok(cc) => {
                    let size = spec.size.map_or(FlowSize::Unbounded, FlowSize::Bytes);
                    let sender = FlowSender::new(spec.id, spec.seed, size, cc, self.opts.sender.clone(), now);
                    let mut series = ThroughputSeries::new(self.logger.bin_ns);
                    series.touch(self.unix(now));
                    self.index.insert(spec.id, self.flows.len());
                    let src = (self.src_of)(dst);
                    self.flows.push(Active {
                        spec,
                        src,
                        dst,
                        sender,
                        series,
                        last_tx: None,
                        last: Transmit::Blocked,
                        stopped: false,
                    });
                }
                Err(why) => {
                    self.report.flows_failed += 1;
                    let rec = FlowRecord {
                        flow_id: spec.id,
                        workload: spec.workload.to_string(),
                        round: spec.round,
                        datapath: self.opts.datapath.clone(),
                        cc: self.opts.cc_label.clone(),
                        src: (self.src_of)(dst),
                        dst: dst.to_string(),
                        size_bytes: spec.size,
                        start_unix_ns: self.unix(now),
                        end_unix_ns: self.unix(now),
                        status: "error".into(),
                        reason: why,
                        ecn: if self.opts.ecn { "ect0".into() } else { "off".into() },
                        ..Default::default()
                    };
                    self.logger.flow(&rec, &ThroughputSeries::new(self.logger.bin_ns))?;
                    self.workload.on_flow_end(spec.id, now);
                }
            }
        }
        Ok(())
    }

    /// A datagram that arrived for this agent (an ACK, a returned
    /// postcard, or something foreign).
    pub fn on_datagram(&mut self, now: u64, data: &[u8], from: SocketAddrV4) -> Result<(), DatapathError> {
        self.on_datagram_at(now, now, data, from)
    }

    /// [`SenderStack::on_datagram`] for a datagram the kernel received at
    /// `arrived` (≤ `now`): an ACK's RTT sample ends there.
    pub fn on_datagram_at(&mut self, now: u64, arrived: u64, data: &[u8], from: SocketAddrV4) -> Result<(), DatapathError> {
        let Some(id) = wire::ack_flow_id(data) else {
            match telemetry::feed::parse(data) {
                // The postcard names the packet's destination: the flows
                // to it hear of the queue that packet found.
                Some(pc) => {
                    let dst = SocketAddrV4::new(pc.dst_ip, pc.dst_port);
                    for a in self.flows.iter_mut().filter(|a| a.dst == dst) {
                        a.sender.on_feed(now, &pc);
                        self.report.feed_reports += 1;
                    }
                }
                None => self.report.foreign_pkts += 1,
            }
            return Ok(());
        };
        let Some(&k) = self.index.get(&id) else {
            self.report.late_acks += 1;
            return Ok(());
        };
        if from != self.flows[k].dst {
            self.report.foreign_pkts += 1;
            return Ok(());
        }
        let ack = match Ack::parse_reusing(data, std::mem::take(&mut self.ack_spare)) {
            Ok(x) => x,
            Err(_) => {
                self.report.bad_acks += 1;
                return Ok(());
            }
        };
        self.report.acks += 1;
        let t_unix = self.unix(now);
        let a = &mut self.flows[k];
        let out = a.sender.on_ack_at(now, arrived, &ack);
        if out.newly_acked > 0 {
            a.series.add(t_unix, out.newly_acked);
        }
        if let Some(rtt) = out.rtt_ns {
            if self.logger.want_rtt() {
                self.logger.rtt(id, t_unix, rtt, out.qdepth_pkts, out.cwnd_bytes, out.rate_bps, out.inflight, out.target_delay_ns)?;
                if self.logger.has_hops() && !ack.hops.is_empty() {
                    let h: Vec<_> = ack
                        .hops
                        .iter()
                        .map(|h| (h.switch_id, h.egress_port, h.enq_qdepth, h.deq_timedelta_us, h.egress_ts_us))
                        .collect();
                    self.logger.hops(id, t_unix, &h)?;
                }
            }
        }
        self.ack_spare = ack.into_lists();
        Self::log_mis(&mut self.logger, self.unix_offset, &mut self.mis, &mut self.flows[k])
    }

    /// Writes the monitor intervals `a`'s algorithm scored since the last
    /// time (PCC's `mi.csv`).
    fn log_mis(logger: &mut FlowLogger, unix_offset: u64, mis: &mut Vec<MiRecord>, a: &mut Active) -> Result<(), DatapathError> {
        a.sender.cc_mut().drain_mis(mis);
        for m in mis.drain(..) {
            let values = [
                m.mi as f64,
                f64::from(m.phase),
                m.rate_bps,
                m.duration_ns,
                m.sent_pkts as f64,
                m.loss,
                m.rtt_gradient,
                m.utility.unwrap_or(f64::NAN),
                m.next_rate_bps,
            ];
            logger.mi(a.spec.id, unix_offset + m.t_ns, &values)?;
        }
        Ok(())
    }

    /// Stops long flows whose time has come and fires due timers.
    pub fn on_timers(&mut self, now: u64) {
        for a in self.flows.iter_mut() {
            if !a.stopped && a.spec.stop_ns.is_some_and(|s| now >= s) {
                a.stopped = true;
                a.sender.stop(now);
            }
            if a.sender.next_timer().is_some_and(|t| t <= now) {
                a.sender.on_timer(now);
            }
        }
    }

    fn sent(&mut self, t: u64, dropped: usize) {
        for &(i, g) in self.pending.iter() {
            if let (Some(target), Some(prev)) = (g, self.flows[i].last_tx) {
                self.gaps.record(target, t.saturating_sub(prev));
            }
            self.flows[i].last_tx = Some(t);
        }
        self.report.pkts_sent += (self.pending.len() - dropped.min(self.pending.len())) as u64;
        self.report.local_drops += dropped as u64;
        self.pending.clear();
    }

    /// Lets every flow send what its window and pacer allow (round robin,
    /// `max_burst` packets each per round) into `sink`; `now` reads the
    /// caller's clock (real time moves while a batch is written). Returns
    /// whether anything was sent.
    /// With a NIC that arbitrates, each flow sends one packet per round
    /// and the round stops when the NIC has no room (the stack's own
    /// account of the link, or the sink's NIC queue where it can tell); the
    /// flow it stopped at goes first next time.
    pub fn transmit(&mut self, now: &dyn Fn() -> u64, sink: &mut dyn TxSink) -> Result<bool, DatapathError> {
        let mut sent_any = false;
        let nf = self.flows.len();
        let burst = if self.nic.is_some() { 1 } else { self.opts.max_burst };
        self.nic_waiting = None;
        'flows: for k in 0..nf {
            let i = (self.rr + k) % nf;
            for _ in 0..burst {
                if sink.is_full() {
                    let (t, d) = sink.flush()?;
                    self.sent(t, d);
                }
                let t = now();
                let nic_full = match &self.nic {
                    Some(n) if !n.may_send(t) => Some(n.ready_at()),
                    Some(_) if !sink.nic_has_room() => Some(sink.nic_room_at().unwrap_or(t + 1)),
                    _ => None,
                };
                if let Some(at) = nic_full {
                    self.nic_waiting = Some(at.max(t + 1));
                    self.rr = i;
                    break 'flows;
                }
                let a = &mut self.flows[i];
                match a.sender.poll_transmit(t, sink.slot()) {
                    Transmit::Packet(info) => {
                        sink.commit(info.len, a.dst);
                        if let Some(n) = self.nic.as_mut() {
                            n.charge(t, info.len);
                        }
                        // Behind an arbitrating NIC a flow's gaps are the
                        // NIC's share, not its pacer's: the loop's timing
                        // is judged by its wake-up lateness alone.
                        let gap = if self.nic.is_some() { None } else { info.paced_gap_ns };
                        self.pending.push((i, gap));
                        if info.retransmission {
                            self.report.retx_pkts += 1;
                        }
                        sent_any = true;
                        a.last = Transmit::Packet(info);
                    }
                    other => {
                        a.last = other;
                        break;
                    }
                }
            }
        }
        if self.nic_waiting.is_none() {
            self.rr = self.rr.wrapping_add(1);
        }
        if !self.pending.is_empty() {
            let (t, d) = sink.flush()?;
            self.sent(t, d);
        }
        Ok(sent_any)
    }

    /// A flow that is over: its bytes counted, its flows.csv, tput.csv,
    /// cc_state.csv and last mi.csv rows written.
    fn log_ended(&mut self, a: &mut Active, now: u64) -> Result<(), DatapathError> {
        self.report.bytes_acked += a.sender.acked_bytes();
        let rec = self.record(a, now);
        self.logger.flow(&rec, &a.series)?;
        self.logger.cc_state(rec.flow_id, a.sender.cc().state())?;
        Self::log_mis(&mut self.logger, self.unix_offset, &mut self.mis, a)
    }

    /// Logs and removes finished flows.
    pub fn reap(&mut self, now: u64) -> Result<(), DatapathError> {
        let mut i = 0;
        while i < self.flows.len() {
            if self.flows[i].sender.is_done() {
                let mut a = self.flows.swap_remove(i);
                self.index.remove(&a.spec.id);
                if i < self.flows.len() {
                    self.index.insert(self.flows[i].spec.id, i);
                }
                match a.sender.state() {
                    FlowState::Complete { .. } => self.report.flows_complete += 1,
                    _ => self.report.flows_failed += 1,
                }
                self.log_ended(&mut a, now)?;
                self.workload.on_flow_end(a.spec.id, now);
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// No flow runs and none will start.
    pub fn is_finished(&self) -> bool {
        self.workload.is_finished() && self.flows.is_empty()
    }

    /// When this agent next has something to do (a pacer, a timer, a
    /// scheduled stop or start), if anything.
    pub fn next_wakeup(&self) -> Option<u64> {
        let mut wake: Option<u64> = self.workload.next_start_ns();
        let mut min = |w: u64| wake = Some(wake.map_or(w, |x| x.min(w)));
        // A NIC with no room holds every flow's next packet until it has.
        if let Some(r) = self.nic_waiting {
            min(r);
        }
        for a in &self.flows {
            let w = match (&a.last, self.nic_waiting) {
                (Transmit::Paced(at), Some(r)) => a.sender.wakeup(&Transmit::Paced((*at).max(r))),
                (last, _) => a.sender.wakeup(last),
            };
            if let Some(w) = w {
                min(w);
            }
            if !a.stopped {
                if let Some(s) = a.spec.stop_ns {
                    min(s);
                }
            }
        }
        wake
    }

    /// The run is over before its flows: each running flow is aborted (its
    /// receiver told through `send_abort`) and logged as interrupted.
    pub fn interrupt(&mut self, now: u64, send_abort: &mut dyn FnMut(&[u8], SocketAddrV4)) -> Result<(), DatapathError> {
        let mut buf = [0u8; 512];
        for a in self.flows.iter_mut() {
            if !a.sender.is_done() {
                a.sender.abort(now);
                let n = a.sender.write_abort(now, "sender interrupted", &mut buf);
                send_abort(&buf[..n], a.dst);
            }
        }
        for mut a in std::mem::take(&mut self.flows) {
            self.report.flows_failed += 1;
            self.log_ended(&mut a, now)?;
        }
        self.index.clear();
        Ok(())
    }

    pub fn flush_logs(&mut self) -> Result<(), DatapathError> {
        Ok(self.logger.flush()?)
    }

    /// Final report: logs flushed, pacing summarised, `elapsed_ns` set.
    pub fn finish(mut self, elapsed_ns: u64) -> Result<SenderReport, DatapathError> {
        self.logger.flush()?;
        self.report.elapsed_ns = elapsed_ns;
        self.report.pacing = self.gaps.summary();
        Ok(self.report)
    }
}

pub const RECV_FLOWS_HEADER: &str = "peer,flow_id,seed,size_bytes,bytes,status,reason,first_unix_ns,last_unix_ns,complete_unix_ns,fct_ns,data_pkts,dup_pkts,corrupt_pkts,not_ect_pkts,ect1_pkts,ect0_pkts,ce_pkts,ce_bytes,telemetry_pkts,overflow_pkts,max_qdepth_pkts";

/// One recv_flows.csv row; `unix` maps the receiver's clock to unix time.
pub fn recv_row(r: &RecvFlowRecord, unix: impl Fn(u64) -> u64) -> String {
    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    format!(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
        r.peer,
        r.flow_id,
        r.seed,
        opt(r.size),
        r.bytes,
        r.status.as_str(),
        csv_field(&r.status.reason()),
        unix(r.first_ns),
        unix(r.last_ns),
        opt(r.complete_ns.map(&unix)),
        opt(r.complete_ns.map(|c| c - r.first_ns)),
        r.data_pkts,
        r.dup_pkts,
        r.corrupt_pkts,
        r.ecn_pkts[0],
        r.ecn_pkts[1],
        r.ecn_pkts[2],
        r.ecn_pkts[3],
        r.ce_bytes,
        r.telemetry_pkts,
        r.overflow_pkts,
        r.max_qdepth_pkts
    )
}

/// A receiving agent's files: recv_flows.csv, one row per finished flow,
/// and recv_stats.json at the end.
pub struct ReceiverLog {
    dir: PathBuf,
    csv: BufWriter<File>,
    unix_offset: u64,
}

impl ReceiverLog {
    pub fn create(dir: &Path, unix_offset: u64) -> Result<ReceiverLog, DatapathError> {
        let out = |e| DatapathError::Output { path: dir.to_path_buf(), source: e };
        std::fs::create_dir_all(dir).map_err(out)?;
        let p = dir.join("recv_flows.csv");
        let mut csv = BufWriter::new(File::create(&p).map_err(|e| DatapathError::Output { path: p.clone(), source: e })?);
        writeln!(csv, "{RECV_FLOWS_HEADER}").map_err(|e| DatapathError::Output { path: p.clone(), source: e })?;
        Ok(ReceiverLog { dir: dir.to_path_buf(), csv, unix_offset })
    }

    pub fn flow(&mut self, r: &RecvFlowRecord) -> Result<(), DatapathError> {
        let off = self.unix_offset;
        writeln!(self.csv, "{}", recv_row(r, |t| off + t)).map_err(|e| self.err(e))
    }

    pub fn flush(&mut self) -> Result<(), DatapathError> {
        self.csv.flush().map_err(|e| self.err(e))
    }

    fn err(&self, e: std::io::Error) -> DatapathError {
        DatapathError::Output { path: self.dir.join("recv_flows.csv"), source: e }
    }

    /// recv_stats.json: the receiver's counters plus what the datapath adds.
    pub fn finish(mut self, stats: &ReceiverStats, local_drops: u64, flows: usize) -> Result<(), DatapathError> {
        self.flush()?;
        let p = self.dir.join("recv_stats.json");
        let mut j = stats.to_json();
        j.pop();
        j.push_str(&format!(", \"local_drops\": {local_drops}, \"flows\": {flows}}}\n"));
        std::fs::write(&p, j).map_err(|e| DatapathError::Output { path: p.clone(), source: e })
    }
}
