//! The user-space transport on real UDP sockets: a multi-flow sender event
//! loop (one socket, all flows of a workload, pacing by precise sleeps plus
//! a short spin) and the receiver loop serving every flow on port 7360.

use crate::clock::Clock;
use crate::sys::{self, RecvBatch, SendBatch, UdpSock};
use crate::{CcFactory, DatapathError};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use traffic::log::{csv_field, FlowLogger, FlowRecord, ThroughputSeries};
use traffic::{FlowSpec, Workload};
use transport::pacing::{GapStats, GapSummary};
use transport::receiver::{Receiver, ReceiverConfig, ReceiverStats, RecvFlowRecord};
use transport::sender::{FlowSender, FlowSize, FlowState, SenderConfig, Transmit};
use transport::wire::{self, Ack};

/// ECT(0) in the two ECN bits of the TOS byte.
pub const TOS_ECT0: u8 = 0x02;

#[derive(Debug, Clone)]
pub struct UdpSenderOptions {
    pub bind: SocketAddrV4,
    pub sender: SenderConfig,
    /// TOS byte of data packets (ECT(0) by default; 0 disables ECN).
    pub tos: u8,
    /// Name logged in flows.csv.
    pub cc_label: String,
    /// Below this remaining wait the loop spins instead of sleeping.
    pub spin_ns: u64,
    /// Packets one flow may send per scheduling round.
    pub max_burst: usize,
    pub sock_buf: usize,
    /// Hard end of the run (ns on the run clock); running flows are aborted.
    pub end_ns: Option<u64>,
    /// Run the loop as SCHED_FIFO at this priority (precise pacing on a
    /// loaded machine; needs root / CAP_SYS_NICE).
    pub rt_prio: Option<i32>,
}

impl Default for UdpSenderOptions {
    fn default() -> Self {
        UdpSenderOptions {
            bind: SocketAddrV4::new(std::net::Ipv4Addr::UNSPECIFIED, 0),
            sender: SenderConfig::default(),
            tos: TOS_ECT0,
            cc_label: String::new(),
            spin_ns: 20_000,
            max_burst: 16,
            sock_buf: 8 << 20,
            end_ns: None,
            rt_prio: None,
        }
    }
}

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
    pub bytes_acked: u64,
    pub elapsed_ns: u64,
    pub pacing: GapSummary,
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
            "{{\"datapath\": \"udp\", \"src\": \"{}\", \"flows_started\": {}, \"flows_complete\": {}, \"flows_failed\": {}, \"pkts_sent\": {}, \"retx_pkts\": {}, \"local_drops\": {}, \"acks\": {}, \"foreign_pkts\": {}, \"late_acks\": {}, \"bad_acks\": {}, \"bytes_acked\": {}, \"elapsed_ns\": {}, \"goodput_mbps\": {:.3}, \"pacing\": {}}}",
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
            self.bytes_acked,
            self.elapsed_ns,
            self.goodput_mbps(),
            self.pacing.to_json()
        )
    }
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

fn record(a: &Active, clock: &Clock, label: &str, ecn: bool) -> FlowRecord {
    let st = &a.sender.stats;
    let (status, reason, end) = match a.sender.state() {
        FlowState::Complete { end_ns } => {
            (if a.spec.size.is_none() { "stopped" } else { "complete" }.to_string(), String::new(), *end_ns)
        }
        FlowState::Failed { end_ns, reason } => (reason.status().to_string(), reason.describe(), *end_ns),
        FlowState::Running => ("interrupted".into(), "still running at exit".into(), clock.now()),
    };
    FlowRecord {
        flow_id: a.spec.id,
        workload: a.spec.workload.to_string(),
        round: a.spec.round,
        datapath: "udp".into(),
        cc: label.to_string(),
        src: a.src.clone(),
        dst: a.dst.to_string(),
        size_bytes: a.spec.size,
        start_unix_ns: clock.unix(a.sender.start_ns()),
        end_unix_ns: clock.unix(end),
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
        ecn: if ecn { "ect0".into() } else { "off".into() },
    }
}

/// The local address the kernel would use to reach `dst`.
pub fn route_src(dst: SocketAddrV4) -> Option<std::net::Ipv4Addr> {
    let s = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect(dst).ok()?;
    match s.local_addr().ok()? {
        SocketAddr::V4(a) => Some(*a.ip()),
        SocketAddr::V6(_) => None,
    }
}

/// Runs a workload over the user-space transport until it is finished,
/// `stop` is set, or `opts.end_ns` passes.
pub fn run_sender(
    opts: &UdpSenderOptions,
    workload: &mut dyn Workload,
    make_cc: &CcFactory,
    logger: &mut FlowLogger,
    clock: &Clock,
    stop: &AtomicBool,
) -> Result<SenderReport, DatapathError> {
    sys::precise_timers();
    if let Some(p) = opts.rt_prio {
        sys::set_realtime(p).map_err(|e| DatapathError::Socket(std::io::Error::new(e.kind(), format!("SCHED_FIFO {p}: {e}"))))?;
    }
    let sock = UdpSock::bind(opts.bind).map_err(|e| DatapathError::Bind { addr: opts.bind.into(), source: e })?;
    if opts.tos != 0 {
        sock.set_tos(opts.tos).map_err(DatapathError::Socket)?;
    }
    sock.set_buffers(opts.sock_buf);
    let local = sock.local_addr().map_err(DatapathError::Socket)?;
    let mut src_cache: HashMap<SocketAddrV4, String> = HashMap::new();
    let mut src_of = |dst: SocketAddrV4| -> String {
        src_cache
            .entry(dst)
            .or_insert_with(|| {
                let ip = if local.ip().is_unspecified() { route_src(dst).unwrap_or(*local.ip()) } else { *local.ip() };
                SocketAddrV4::new(ip, local.port()).to_string()
            })
            .clone()
    };
    let src = local.to_string();
    let mut rep = SenderReport { src: src.clone(), ..Default::default() };
    let mut flows: Vec<Active> = Vec::new();
    let mut index: HashMap<u32, usize> = HashMap::new();
    let mut rb = RecvBatch::new(64);
    let mut sb = SendBatch::new(32);
    let mut pending: Vec<(usize, Option<u64>)> = Vec::with_capacity(32);
    let mut gaps = GapStats::new(2_000_000);
    let mut rr = 0usize;
    let mut last_flush = clock.now();
    let t0 = clock.now();
    let bin_ns = logger.bin_ns;

    let flush = |sb: &mut SendBatch,
                     pending: &mut Vec<(usize, Option<u64>)>,
                     flows: &mut Vec<Active>,
                     gaps: &mut GapStats,
                     rep: &mut SenderReport|
     -> Result<(), DatapathError> {
        if sb.is_empty() {
            return Ok(());
        }
        let t = clock.now();
        for &(i, g) in pending.iter() {
            if let (Some(target), Some(prev)) = (g, flows[i].last_tx) {
                gaps.record(target, t.saturating_sub(prev));
            }
            flows[i].last_tx = Some(t);
        }
        pending.clear();
        let (sent, dropped) = sock.send_batch(sb).map_err(DatapathError::Socket)?;
        rep.pkts_sent += sent as u64;
        rep.local_drops += dropped as u64;
        Ok(())
    };

    loop {
        let now = clock.now();
        let interrupted = stop.load(Ordering::Relaxed) || opts.end_ns.is_some_and(|e| now >= e);
        if interrupted {
            let mut buf = [0u8; 512];
            for a in flows.iter_mut() {
                if !a.sender.is_done() {
                    a.sender.abort(now);
                    let n = a.sender.write_abort(now, "sender interrupted", &mut buf);
                    let _ = sock.send_to(&buf[..n], a.dst);
                }
            }
            for a in flows.drain(..) {
                rep.flows_failed += 1;
                rep.bytes_acked += a.sender.acked_bytes();
                logger.flow(&record(&a, clock, &opts.cc_label, opts.tos & 3 != 0), &a.series)?;
            }
            break;
        }

        // new flows
        for spec in workload.poll(now) {
            rep.flows_started += 1;
            let dst = match sys::v4(spec.dst) {
                Ok(d) => d,
                Err(e) => return Err(DatapathError::Socket(e)),
            };
            match make_cc(&spec) {
                Ok(cc) => {
                    let size = spec.size.map_or(FlowSize::Unbounded, FlowSize::Bytes);
                    let sender = FlowSender::new(spec.id, spec.seed, size, cc, opts.sender.clone(), now);
                    let mut series = ThroughputSeries::new(bin_ns);
                    series.touch(clock.unix(now));
                    index.insert(spec.id, flows.len());
                    let fsrc = src_of(dst);
                    flows.push(Active { spec, src: fsrc, dst, sender, series, last_tx: None, last: Transmit::Blocked, stopped: false });
                }
                Err(why) => {
                    rep.flows_failed += 1;
                    let rec = FlowRecord {
                        flow_id: spec.id,
                        workload: spec.workload.to_string(),
                        round: spec.round,
                        datapath: "udp".into(),
                        cc: opts.cc_label.clone(),
                        src: src_of(dst),
                        dst: dst.to_string(),
                        size_bytes: spec.size,
                        start_unix_ns: clock.unix(now),
                        end_unix_ns: clock.unix(now),
                        status: "error".into(),
                        reason: why,
                        ecn: if opts.tos & 3 != 0 { "ect0".into() } else { "off".into() },
                        ..Default::default()
                    };
                    logger.flow(&rec, &ThroughputSeries::new(bin_ns))?;
                    workload.on_flow_end(spec.id, now);
                }
            }
        }

        // ACKs
        for _ in 0..16 {
            let n = sock.recv_batch(&mut rb).map_err(DatapathError::Socket)?;
            if n == 0 {
                break;
            }
            let now = clock.now();
            for i in 0..n {
                let (data, from, _) = rb.get(i);
                let Some(id) = wire::ack_flow_id(data) else {
                    rep.foreign_pkts += 1;
                    continue;
                };
                let Some(&k) = index.get(&id) else {
                    rep.late_acks += 1;
                    continue;
                };
                let a = &mut flows[k];
                if from != a.dst {
                    rep.foreign_pkts += 1;
                    continue;
                }
                let ack = match Ack::parse(data) {
                    Ok(x) => x,
                    Err(_) => {
                        rep.bad_acks += 1;
                        continue;
                    }
                };
                rep.acks += 1;
                let out = a.sender.on_ack(now, &ack);
                let t_unix = clock.unix(now);
                if out.newly_acked > 0 {
                    a.series.add(t_unix, out.newly_acked);
                }
                if let Some(rtt) = out.rtt_ns {
                    if logger.want_rtt() {
                        logger.rtt(id, t_unix, rtt, out.qdepth_pkts, out.cwnd_bytes, out.rate_bps, out.inflight)?;
                        if logger.has_hops() && !out.hops.is_empty() {
                            let h: Vec<_> = out
                                .hops
                                .iter()
                                .map(|h| (h.switch_id, h.egress_port, h.enq_qdepth, h.deq_timedelta_us, h.egress_ts_us))
                                .collect();
                            logger.hops(id, t_unix, &h)?;
                        }
                    }
                }
            }
            if n < 64 {
                break;
            }
        }

        // timers, schedule stops
        let now = clock.now();
        for a in flows.iter_mut() {
            if !a.stopped && a.spec.stop_ns.is_some_and(|s| now >= s) {
                a.stopped = true;
                a.sender.stop(now);
            }
            if a.sender.next_timer().is_some_and(|t| t <= now) {
                a.sender.on_timer(now);
            }
        }

        // transmit, round robin
        let mut sent_any = false;
        let nf = flows.len();
        for k in 0..nf {
            let i = (rr + k) % nf;
            for _ in 0..opts.max_burst {
                if sb.is_full() {
                    flush(&mut sb, &mut pending, &mut flows, &mut gaps, &mut rep)?;
                }
                let now = clock.now();
                let a = &mut flows[i];
                let t = a.sender.poll_transmit(now, sb.slot());
                match t {
                    Transmit::Packet(info) => {
                        sb.commit(info.len, a.dst);
                        pending.push((i, info.paced_gap_ns));
                        if info.retransmission {
                            rep.retx_pkts += 1;
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
        rr = rr.wrapping_add(1);
        flush(&mut sb, &mut pending, &mut flows, &mut gaps, &mut rep)?;

        // finished flows
        let now = clock.now();
        let mut i = 0;
        while i < flows.len() {
            if flows[i].sender.is_done() {
                let a = flows.swap_remove(i);
                index.remove(&a.spec.id);
                if i < flows.len() {
                    index.insert(flows[i].spec.id, i);
                }
                match a.sender.state() {
                    FlowState::Complete { .. } => rep.flows_complete += 1,
                    _ => rep.flows_failed += 1,
                }
                rep.bytes_acked += a.sender.acked_bytes();
                logger.flow(&record(&a, clock, &opts.cc_label, opts.tos & 3 != 0), &a.series)?;
                workload.on_flow_end(a.spec.id, now);
            } else {
                i += 1;
            }
        }
        if workload.is_finished() && flows.is_empty() {
            break;
        }
        if now.saturating_sub(last_flush) > 1_000_000_000 {
            logger.flush()?;
            last_flush = now;
        }
        if sent_any {
            continue;
        }

        // wait
        let mut wake = now + 100_000_000;
        for a in &flows {
            if let Some(w) = a.sender.wakeup(&a.last) {
                wake = wake.min(w);
            }
            if !a.stopped {
                if let Some(s) = a.spec.stop_ns {
                    wake = wake.min(s);
                }
            }
        }
        if let Some(w) = workload.next_start_ns() {
            wake = wake.min(w);
        }
        if let Some(e) = opts.end_ns {
            wake = wake.min(e);
        }
        let now = clock.now();
        if wake > now + opts.spin_ns {
            sock.wait_readable(wake - now - opts.spin_ns).map_err(DatapathError::Socket)?;
        } else {
            std::hint::spin_loop();
        }
    }
    logger.flush()?;
    rep.elapsed_ns = clock.now() - t0;
    rep.pacing = gaps.summary();
    Ok(rep)
}

#[derive(Debug, Clone)]
pub struct UdpReceiverOptions {
    pub listen: SocketAddrV4,
    pub cfg: ReceiverConfig,
    pub sock_buf: usize,
    /// Stop after this long (ns), if set.
    pub duration_ns: Option<u64>,
    /// Stop once this many flows have ended, if set.
    pub max_flows: Option<u64>,
    /// recv_flows.csv and recv_stats.json go here.
    pub out_dir: Option<PathBuf>,
    /// SCHED_FIFO priority for the receive loop (prompt ACKs).
    pub rt_prio: Option<i32>,
}

pub const RECV_FLOWS_HEADER: &str = "peer,flow_id,seed,size_bytes,bytes,status,reason,first_unix_ns,last_unix_ns,complete_unix_ns,fct_ns,data_pkts,dup_pkts,corrupt_pkts,not_ect_pkts,ect1_pkts,ect0_pkts,ce_pkts,ce_bytes,telemetry_pkts,overflow_pkts,max_qdepth_pkts";

pub fn recv_row(r: &RecvFlowRecord, clock: &Clock) -> String {
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
        clock.unix(r.first_ns),
        clock.unix(r.last_ns),
        opt(r.complete_ns.map(|c| clock.unix(c))),
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

#[derive(Debug, Clone, Default)]
pub struct ReceiverReport {
    pub stats: ReceiverStats,
    pub flows: Vec<RecvFlowRecord>,
    pub local_drops: u64,
}

/// Serves every flow arriving on `opts.listen` until `stop`, the duration
/// or the flow count ends it. All flows, finished or not, are returned and
/// (with `out_dir`) written to recv_flows.csv.
pub fn run_receiver(opts: &UdpReceiverOptions, clock: &Clock, stop: &AtomicBool) -> Result<ReceiverReport, DatapathError> {
    sys::precise_timers();
    if let Some(p) = opts.rt_prio {
        sys::set_realtime(p).map_err(|e| DatapathError::Socket(std::io::Error::new(e.kind(), format!("SCHED_FIFO {p}: {e}"))))?;
    }
    let sock = UdpSock::bind(opts.listen).map_err(|e| DatapathError::Bind { addr: opts.listen.into(), source: e })?;
    sock.set_recv_tos().map_err(DatapathError::Socket)?;
    sock.set_buffers(opts.sock_buf);
    let mut out = match &opts.out_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| DatapathError::Output { path: d.clone(), source: e })?;
            let p = d.join("recv_flows.csv");
            let mut w = BufWriter::new(File::create(&p).map_err(|e| DatapathError::Output { path: p.clone(), source: e })?);
            writeln!(w, "{RECV_FLOWS_HEADER}").map_err(|e| DatapathError::Output { path: p.clone(), source: e })?;
            Some((p, w))
        }
        None => None,
    };
    let mut recv = Receiver::new(opts.cfg.clone());
    let mut rep = ReceiverReport::default();
    let mut rb = RecvBatch::new(64);
    let mut sb = SendBatch::new(64);
    let mut tbuf = vec![0u8; wire::MAX_ACK_LEN];
    let start = clock.now();
    let mut write_finished = |recv: &mut Receiver, rep: &mut ReceiverReport| -> Result<(), DatapathError> {
        for r in recv.take_finished() {
            if let Some((p, w)) = out.as_mut() {
                writeln!(w, "{}", recv_row(&r, clock)).map_err(|e| DatapathError::Output { path: p.clone(), source: e })?;
                w.flush().map_err(|e| DatapathError::Output { path: p.clone(), source: e })?;
            }
            rep.flows.push(r);
        }
        Ok(())
    };
    loop {
        let now = clock.now();
        if stop.load(Ordering::Relaxed)
            || opts.duration_ns.is_some_and(|d| now - start >= d)
            || opts.max_flows.is_some_and(|m| rep.flows.len() as u64 >= m)
        {
            break;
        }
        let n = sock.recv_batch(&mut rb).map_err(DatapathError::Socket)?;
        let now = clock.now();
        for i in 0..n {
            let (data, from, tos) = rb.get(i);
            if let Some(a) = recv.on_datagram(now, SocketAddr::V4(from), tos, data, sb.slot()) {
                if let SocketAddr::V4(to) = a.to {
                    sb.commit(a.len, to);
                }
                if sb.is_full() {
                    let (_, d) = sock.send_batch(&mut sb).map_err(DatapathError::Socket)?;
                    rep.local_drops += d as u64;
                }
            }
        }
        if !sb.is_empty() {
            let (_, d) = sock.send_batch(&mut sb).map_err(DatapathError::Socket)?;
            rep.local_drops += d as u64;
        }
        let now = clock.now();
        let due = recv.next_timer(now);
        if due <= now {
            recv.poll_timers(now, &mut tbuf, |to, b| {
                if let SocketAddr::V4(t) = to {
                    let _ = sock.send_to(b, t);
                }
            });
        }
        write_finished(&mut recv, &mut rep)?;
        if n == 0 {
            let wait = recv.next_timer(now).saturating_sub(now).clamp(10_000, 100_000_000);
            sock.wait_readable(wait).map_err(DatapathError::Socket)?;
        }
    }
    recv.close_all();
    write_finished(&mut recv, &mut rep)?;
    rep.stats = recv.stats.clone();
    if let Some(d) = &opts.out_dir {
        let p = d.join("recv_stats.json");
        let mut j = rep.stats.to_json();
        j.pop();
        j.push_str(&format!(", \"local_drops\": {}, \"flows\": {}}}\n", rep.local_drops, rep.flows.len()));
        std::fs::write(&p, j).map_err(|e| DatapathError::Output { path: p.clone(), source: e })?;
    }
    Ok(rep)
}
