//! The user-space transport on real UDP sockets: a multi-flow sender event
//! loop (one socket, all flows of a workload, pacing by precise sleeps plus
//! a short spin) and the receiver loop serving every flow on port 7360.
//! What happens to each flow is [`crate::stack`]'s; this module is the I/O.

use crate::clock::Clock;
use crate::stack::{ReceiverLog, SenderReport, SenderStack, SenderStackOptions, TxSink};
use crate::sys::{self, RecvBatch, SendBatch, UdpSock};
use crate::{CcFactory, DatapathError};
use std::collections::HashMap;
use std::net::{SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use traffic::log::FlowLogger;
use traffic::Workload;
use transport::receiver::{Receiver, ReceiverConfig, ReceiverStats, RecvFlowRecord};
use transport::sender::SenderConfig;
use transport::wire;

pub use crate::stack::{recv_row, RECV_FLOWS_HEADER};

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
    /// The host's link rate, when the stack arbitrates its flows as an RDMA
    /// NIC does (`SenderStackOptions::nic_rate_bps`).
    pub nic_rate_bps: Option<u64>,
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
            nic_rate_bps: None,
        }
    }
}

/// A sendmmsg batch on the sender's socket, as the stack's sink.
struct SocketSink<'a> {
    sock: &'a UdpSock,
    batch: SendBatch,
    clock: &'a Clock,
}

impl TxSink for SocketSink<'_> {
    fn slot(&mut self) -> &mut [u8] {
        self.batch.slot()
    }
    fn commit(&mut self, len: usize, dst: SocketAddrV4) {
        self.batch.commit(len, dst);
    }
    fn is_full(&self) -> bool {
        self.batch.is_full()
    }
    fn flush(&mut self) -> Result<(u64, usize), DatapathError> {
        let t = self.clock.now();
        if self.batch.is_empty() {
            return Ok((t, 0));
        }
        let (_, dropped) = self.sock.send_batch(&mut self.batch).map_err(DatapathError::Socket)?;
        Ok((t, dropped))
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
    workload: Box<dyn Workload>,
    make_cc: Box<CcFactory>,
    logger: FlowLogger,
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
    sock.set_rx_timestamps().map_err(DatapathError::Socket)?;
    sock.set_buffers(opts.sock_buf);
    let local = sock.local_addr().map_err(DatapathError::Socket)?;
    let mut src_cache: HashMap<SocketAddrV4, String> = HashMap::new();
    let src_of = move |dst: SocketAddrV4| -> String {
        src_cache
            .entry(dst)
            .or_insert_with(|| {
                let ip = if local.ip().is_unspecified() { route_src(dst).unwrap_or(*local.ip()) } else { *local.ip() };
                SocketAddrV4::new(ip, local.port()).to_string()
            })
            .clone()
    };
    let stack_opts = SenderStackOptions {
        sender: opts.sender.clone(),
        ecn: opts.tos & 3 != 0,
        cc_label: opts.cc_label.clone(),
        max_burst: opts.max_burst,
        datapath: "udp".into(),
        nic_rate_bps: opts.nic_rate_bps,
    };
    let mut stack = SenderStack::new(stack_opts, workload, make_cc, logger, clock.unix(0), local.to_string(), Box::new(src_of));
    let mut rb = RecvBatch::new(64);
    let mut sink = SocketSink { sock: &sock, batch: SendBatch::new(32), clock };
    let mut last_flush = clock.now();
    let t0 = clock.now();
    let now_fn = || clock.now();

    loop {
        let now = clock.now();
        if stop.load(Ordering::Relaxed) || opts.end_ns.is_some_and(|e| now >= e) {
            stack.interrupt(now, &mut |buf, dst| {
                let _ = sock.send_to(buf, dst);
            })?;
            break;
        }
        stack.start_flows(now)?;

        // ACKs
        for _ in 0..16 {
            let n = sock.recv_batch(&mut rb).map_err(DatapathError::Socket)?;
            if n == 0 {
                break;
            }
            let at = clock.real_to_mono();
            for i in 0..n {
                let (data, from, _) = rb.get(i);
                stack.on_datagram_at(at.now, at.arrival(rb.rx_real_ns(i)), data, from)?;
            }
            if n < 64 {
                break;
            }
        }

        stack.on_timers(clock.now());
        let sent_any = stack.transmit(&now_fn, &mut sink)?;
        let now = clock.now();
        stack.reap(now)?;
        if stack.is_finished() {
            break;
        }
        if now.saturating_sub(last_flush) > 1_000_000_000 {
            stack.flush_logs()?;
            last_flush = now;
        }
        if sent_any {
            continue;
        }

        // wait
        let mut wake = stack.next_wakeup().map_or(now + 100_000_000, |w| w.min(now + 100_000_000));
        if let Some(e) = opts.end_ns {
            wake = wake.min(e);
        }
        let now = clock.now();
        if wake > now + opts.spin_ns {
            let until = wake - opts.spin_ns;
            let readable = sock.wait_readable(until - now).map_err(DatapathError::Socket)?;
            if !readable {
                stack.report.wake_late.record(clock.now().saturating_sub(until));
            }
        } else {
            std::hint::spin_loop();
        }
    }
    stack.finish(clock.now() - t0)
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
    sock.set_rx_timestamps().map_err(DatapathError::Socket)?;
    sock.set_buffers(opts.sock_buf);
    let mut out = match &opts.out_dir {
        Some(d) => Some(ReceiverLog::create(d, clock.unix(0))?),
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
            if let Some(log) = out.as_mut() {
                log.flow(&r)?;
                log.flush()?;
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
        let at = clock.real_to_mono();
        for i in 0..n {
            let (data, from, tos) = rb.get(i);
            let arrived = at.arrival(rb.rx_real_ns(i));
            if let Some(a) = recv.on_datagram_at(at.now, arrived, SocketAddr::V4(from), tos, data, sb.slot()) {
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
    if let Some(log) = out {
        log.finish(&rep.stats, rep.local_drops, rep.flows.len())?;
    }
    Ok(rep)
}
