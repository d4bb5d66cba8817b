//! Kernel TCP datapath: the same workloads over ordinary TCP sockets, the
//! congestion control set per socket with TCP_CONGESTION before connect
//! (so the SYN negotiates ECN when the algorithm needs it), progress and
//! RTT sampled from TCP_INFO once per throughput bin.
//!
//! Stream format: the sender writes a 32-byte header ("PT", version 1,
//! flags, flow_id u32, size u64 (u64::MAX = long flow), seed u64,
//! reserved u64; big-endian), then the seeded payload, then shuts down
//! its write side. The receiver verifies every byte and answers with a
//! 16-byte trailer ("PT", version 1, status (0 ok, 1 short, 2 corrupt),
//! reserved u32, bytes received u64) and closes; the sender's flow
//! completion time ends when the trailer arrives.

use crate::bpf;
use crate::clock::Clock;
use crate::sys::{self, setsockopt_int, wait_fd};
use crate::udp::RECV_FLOWS_HEADER;
use crate::DatapathError;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::mem::size_of;
use std::net::{SocketAddr, SocketAddrV4, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use traffic::log::{csv_field, FlowLogger, FlowRecord, ThroughputSeries};
use traffic::{FlowSpec, Workload};
use transport::payload;

pub const TCP_PORT: u16 = 7361;
/// tcpi_options bit: ECN negotiated on the connection.
pub const TCPI_OPT_ECN: u8 = 8;
pub const HDR_LEN: usize = 32;
pub const TRAILER_LEN: usize = 16;
const MAGIC: [u8; 2] = *b"PT";

/// The kernel's struct tcp_info (include/uapi/linux/tcp.h) up to the fields
/// we read; the kernel copies min(its size, ours).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct TcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,
    pub flags: u8,
    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,
    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,
    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,
    pub rcv_rtt: u32,
    pub rcv_space: u32,
    pub total_retrans: u32,
    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub notsent_bytes: u32,
    pub min_rtt_us: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,
    pub delivery_rate: u64,
    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,
    pub delivered: u32,
    pub delivered_ce: u32,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,
    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub rehash: u32,
    pub total_rto: u16,
    pub total_rto_recoveries: u16,
    pub total_rto_time: u32,
    pub _reserved: [u32; 16],
}

pub fn tcp_info(fd: RawFd) -> io::Result<TcpInfo> {
    let mut ti = TcpInfo::default();
    let mut len = size_of::<TcpInfo>() as libc::socklen_t;
    // SAFETY: the buffer is a live TcpInfo of `len` bytes.
    let r = unsafe { libc::getsockopt(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut ti as *mut _ as *mut libc::c_void, &mut len) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ti)
}

fn set_cc(fd: RawFd, name: &str) -> io::Result<()> {
    // SAFETY: passes the bytes of `name` with their length.
    let r = unsafe {
        libc::setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, name.as_ptr() as *const libc::c_void, name.len() as libc::socklen_t)
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Maps a project algorithm name to the kernel's: "dctcp" is the kernel
/// module when present, else the BPF "p4cc_dctcp" when registered.
pub fn resolve_kernel_cc(name: &str) -> Result<String, DatapathError> {
    let avail = bpf::available_ccs();
    let has = |n: &str| avail.iter().any(|a| a == n);
    let want = match name {
        "dctcp" | "bpf-dctcp" | "bpf_dctcp" | "p4cc_dctcp" => {
            if name == "dctcp" && has("dctcp") {
                "dctcp"
            } else if has(bpf::BPF_CC_NAME) {
                bpf::BPF_CC_NAME
            } else {
                return Err(DatapathError::KernelCc(format!(
                    "kernel TCP '{name}' is not available (available: {}); register the BPF DCTCP with `p4cc-host bpf-dctcp load`",
                    avail.join(" ")
                )));
            }
        }
        other => other,
    };
    // other names go to setsockopt as they are (the kernel may autoload a
    // module); a refusal is reported per flow with the available list
    Ok(want.to_string())
}

#[derive(Debug, Clone)]
pub struct TcpSenderOptions {
    /// Kernel congestion control name (after [`resolve_kernel_cc`]).
    pub cc: String,
    pub label: String,
    pub connect_timeout_ns: u64,
    /// The flow fails when no byte is acknowledged for this long.
    pub give_up_ns: u64,
    pub chunk: usize,
    pub end_ns: Option<u64>,
    pub bin_ns: u64,
}

impl Default for TcpSenderOptions {
    fn default() -> Self {
        TcpSenderOptions {
            cc: "cubic".into(),
            label: "cubic".into(),
            connect_timeout_ns: 3_000_000_000,
            give_up_ns: 10_000_000_000,
            chunk: 64 * 1024,
            end_ns: None,
            bin_ns: 10_000_000,
        }
    }
}

/// (t_unix_ns, srtt_ns, cwnd_bytes, pacing_bps, inflight_bytes)
type RttRow = (u64, u64, u64, u64, u64);

struct FlowResult {
    rec: FlowRecord,
    series: ThroughputSeries,
    rtts: Vec<RttRow>,
}

fn connect(spec: &FlowSpec, cc: &str, timeout_ns: u64) -> Result<TcpStream, (String, String)> {
    let dst = sys::v4(spec.dst).map_err(|e| ("error".into(), e.to_string()))?;
    // SAFETY: plain socket(2); the fd is owned right after.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0) };
    if fd < 0 {
        return Err(("error".into(), io::Error::last_os_error().to_string()));
    }
    // SAFETY: fresh fd we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if let Err(e) = set_cc(fd.as_raw_fd(), cc) {
        return Err((
            "error".into(),
            format!("TCP_CONGESTION={cc}: {e} (available: {})", bpf::available_ccs().join(" ")),
        ));
    }
    let _ = setsockopt_int(fd.as_raw_fd(), libc::IPPROTO_TCP, libc::TCP_NODELAY, 1);
    let sa = sys::sockaddr_in(dst);
    // SAFETY: valid sockaddr_in.
    let r = unsafe {
        libc::connect(fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, size_of::<libc::sockaddr_in>() as libc::socklen_t)
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINPROGRESS) {
            return Err(("connect-failed".into(), e.to_string()));
        }
        match wait_fd(fd.as_raw_fd(), libc::POLLOUT, timeout_ns) {
            Ok(true) => {}
            Ok(false) => return Err(("connect-failed".into(), "connect timed out".into())),
            Err(e) => return Err(("connect-failed".into(), e.to_string())),
        }
        let mut err: libc::c_int = 0;
        let mut len = size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: reads SO_ERROR into a c_int.
        unsafe { libc::getsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR, &mut err as *mut _ as *mut libc::c_void, &mut len) };
        if err != 0 {
            return Err(("connect-failed".into(), io::Error::from_raw_os_error(err).to_string()));
        }
    }
    Ok(TcpStream::from(fd))
}

fn run_flow(spec: FlowSpec, opts: &TcpSenderOptions, clock: &Clock, stop: &AtomicBool, src_label: &str) -> FlowResult {
    let start = clock.now();
    let mut series = ThroughputSeries::new(opts.bin_ns);
    series.touch(clock.unix(start));
    let mut rec = FlowRecord {
        flow_id: spec.id,
        workload: spec.workload.to_string(),
        round: spec.round,
        datapath: "tcp".into(),
        cc: opts.label.clone(),
        src: src_label.to_string(),
        dst: spec.dst.to_string(),
        size_bytes: spec.size,
        start_unix_ns: clock.unix(start),
        ..Default::default()
    };
    let mut rtts = Vec::new();
    let finish = |mut rec: FlowRecord, status: &str, reason: String, series, rtts| {
        rec.status = status.into();
        rec.reason = reason;
        rec.end_unix_ns = clock.now_unix();
        FlowResult { rec, series, rtts }
    };
    let mut s = match connect(&spec, &opts.cc, opts.connect_timeout_ns) {
        Ok(s) => s,
        Err((st, why)) => return finish(rec, &st, why, series, rtts),
    };
    if let Ok(SocketAddr::V4(a)) = s.local_addr() {
        rec.src = a.to_string();
    }
    let fd = s.as_raw_fd();
    rec.ecn = match tcp_info(fd) {
        Ok(ti) if ti.options & TCPI_OPT_ECN != 0 => "negotiated".into(),
        Ok(_) => "off".into(),
        Err(_) => String::new(),
    };
    let mut hdr = [0u8; HDR_LEN];
    hdr[0..2].copy_from_slice(&MAGIC);
    hdr[2] = 1;
    hdr[4..8].copy_from_slice(&spec.id.to_be_bytes());
    hdr[8..16].copy_from_slice(&spec.size.unwrap_or(u64::MAX).to_be_bytes());
    hdr[16..24].copy_from_slice(&spec.seed.to_be_bytes());
    let mut pre: Vec<u8> = hdr.to_vec(); // header bytes not yet written
    let mut buf = vec![0u8; opts.chunk.max(1024)];
    let mut off: u64 = 0; // payload bytes written
    let mut shut = false;
    let mut trailer = Vec::with_capacity(TRAILER_LEN);
    let mut last_acked = 0u64;
    let mut last_progress = start;
    let mut next_sample = (clock.now_unix() / opts.bin_ns + 1) * opts.bin_ns;
    let mut stopped = false;
    let sample = |series: &mut ThroughputSeries, rtts: &mut Vec<RttRow>, last_acked: &mut u64, rec: &mut FlowRecord| -> bool {
        let Ok(ti) = tcp_info(fd) else { return false };
        let acked = ti.bytes_acked.saturating_sub(HDR_LEN as u64);
        let t = clock.now_unix();
        if acked > *last_acked {
            series.add(t.saturating_sub(1), acked - *last_acked);
            *last_acked = acked;
        } else {
            series.touch(t.saturating_sub(1));
        }
        if ti.rtt_us > 0 {
            let mss = ti.snd_mss as u64;
            rtts.push((t, ti.rtt_us as u64 * 1000, ti.snd_cwnd as u64 * mss, ti.pacing_rate.saturating_mul(8), ti.unacked as u64 * mss));
        }
        rec.pkts_sent = ti.data_segs_out as u64;
        rec.retx_pkts = ti.total_retrans as u64;
        rec.rto_count = ti.total_rto as u64;
        rec.ce_bytes = ti.delivered_ce as u64 * ti.snd_mss as u64;
        rec.min_rtt_ns = (ti.min_rtt_us > 0 && ti.min_rtt_us != u32::MAX).then(|| ti.min_rtt_us as u64 * 1000);
        true
    };
    loop {
        let now = clock.now();
        if stop.load(Ordering::Relaxed) || opts.end_ns.is_some_and(|e| now >= e) {
            sample(&mut series, &mut rtts, &mut last_acked, &mut rec);
            rec.bytes_acked = last_acked;
            return finish(rec, "interrupted", "sender interrupted".into(), series, rtts);
        }
        if !stopped && spec.stop_ns.is_some_and(|t| now >= t) {
            stopped = true;
        }
        let t_unix = clock.unix(now);
        if t_unix >= next_sample {
            sample(&mut series, &mut rtts, &mut last_acked, &mut rec);
            next_sample = (t_unix / opts.bin_ns + 1) * opts.bin_ns;
            if last_acked > rec.bytes_acked {
                rec.bytes_acked = last_acked;
                last_progress = now;
            }
        }
        if now - last_progress > opts.give_up_ns {
            return finish(rec, "peer-gone", format!("no progress for {} ms", opts.give_up_ns / 1_000_000), series, rtts);
        }
        let remaining = if stopped { 0 } else { spec.size.map_or(u64::MAX, |sz| sz - off.min(sz)) };
        let wait_ns = next_sample.saturating_sub(clock.now_unix()).max(100_000);
        if !pre.is_empty() || remaining > 0 {
            match wait_fd(fd, libc::POLLOUT, wait_ns) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => return finish(rec, "error", e.to_string(), series, rtts),
            }
            let r = if !pre.is_empty() {
                s.write(&pre)
            } else {
                let n = (remaining.min(buf.len() as u64)) as usize;
                payload::fill(spec.seed, off, &mut buf[..n]);
                s.write(&buf[..n])
            };
            match r {
                Ok(n) => {
                    if !pre.is_empty() {
                        pre.drain(..n);
                    } else {
                        off += n as u64;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return finish(rec, "peer-gone", format!("write: {e}"), series, rtts),
            }
            continue;
        }
        if !shut {
            let _ = s.shutdown(std::net::Shutdown::Write);
            shut = true;
        }
        match wait_fd(fd, libc::POLLIN, wait_ns) {
            Ok(true) => {}
            Ok(false) => continue,
            Err(e) => return finish(rec, "error", e.to_string(), series, rtts),
        }
        let mut tb = [0u8; TRAILER_LEN];
        match s.read(&mut tb[..TRAILER_LEN - trailer.len()]) {
            Ok(0) => {
                sample(&mut series, &mut rtts, &mut last_acked, &mut rec);
                rec.bytes_acked = last_acked;
                return finish(rec, "peer-gone", "receiver closed without a trailer".into(), series, rtts);
            }
            Ok(n) => {
                trailer.extend_from_slice(&tb[..n]);
                if trailer.len() == TRAILER_LEN {
                    sample(&mut series, &mut rtts, &mut last_acked, &mut rec);
                    let got = u64::from_be_bytes(trailer[8..16].try_into().unwrap_or([0; 8]));
                    rec.bytes_acked = got;
                    let (st, why) = match (trailer[0..2] == MAGIC, trailer[3]) {
                        (false, _) => ("error", "bad trailer from receiver".to_string()),
                        (true, 0) if spec.size.is_none() => ("stopped", String::new()),
                        (true, 0) => ("complete", String::new()),
                        (true, 1) => ("error", format!("receiver got {got} of {off} bytes")),
                        (true, _) => ("error", "receiver found corrupted bytes".to_string()),
                    };
                    let mut res = finish(rec, st, why, series, rtts);
                    if !res.rtts.is_empty() {
                        let n = res.rtts.len() as u128;
                        res.rec.rtt_samples = n as u64;
                        res.rec.mean_rtt_ns = Some((res.rtts.iter().map(|r| r.1 as u128).sum::<u128>() / n) as u64);
                    }
                    return res;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return finish(rec, "peer-gone", format!("read: {e}"), series, rtts),
        }
    }
}

#[derive(Debug, Clone, Default)]
pub struct TcpSenderReport {
    pub flows_started: u64,
    pub flows_complete: u64,
    pub flows_failed: u64,
    pub bytes_acked: u64,
    pub elapsed_ns: u64,
}

impl TcpSenderReport {
    pub fn goodput_mbps(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.bytes_acked as f64 * 8.0 / self.elapsed_ns as f64 * 1e3
        }
    }
    pub fn to_json(&self, cc: &str) -> String {
        format!(
            "{{\"datapath\": \"tcp\", \"cc\": \"{}\", \"flows_started\": {}, \"flows_complete\": {}, \"flows_failed\": {}, \"bytes_acked\": {}, \"elapsed_ns\": {}, \"goodput_mbps\": {:.3}}}",
            cc,
            self.flows_started,
            self.flows_complete,
            self.flows_failed,
            self.bytes_acked,
            self.elapsed_ns,
            self.goodput_mbps()
        )
    }
}

/// Runs a workload over kernel TCP: one thread per flow.
pub fn run_sender(
    opts: &TcpSenderOptions,
    workload: &mut dyn Workload,
    logger: &mut FlowLogger,
    clock: &Clock,
    stop: &AtomicBool,
) -> Result<TcpSenderReport, DatapathError> {
    let mut rep = TcpSenderReport::default();
    let (tx, rx) = mpsc::channel::<FlowResult>();
    let mut running = 0usize;
    let t0 = clock.now();
    std::thread::scope(|scope| -> Result<(), DatapathError> {
        loop {
            let now = clock.now();
            let halted = stop.load(Ordering::Relaxed) || opts.end_ns.is_some_and(|e| now >= e);
            if !halted {
                for spec in workload.poll(now) {
                    rep.flows_started += 1;
                    running += 1;
                    let tx = tx.clone();
                    scope.spawn(move || {
                        let r = run_flow(spec, opts, clock, stop, "");
                        let _ = tx.send(r);
                    });
                }
            }
            if running == 0 && (halted || workload.is_finished()) {
                break;
            }
            let wait = workload
                .next_start_ns()
                .map_or(50_000_000, |t| t.saturating_sub(now))
                .clamp(50_000, 50_000_000);
            match rx.recv_timeout(std::time::Duration::from_nanos(wait)) {
                Ok(r) => {
                    running -= 1;
                    if r.rec.status == "complete" || r.rec.status == "stopped" {
                        rep.flows_complete += 1;
                    } else {
                        rep.flows_failed += 1;
                    }
                    rep.bytes_acked += r.rec.bytes_acked;
                    for (t, rtt, cwnd, pace, infl) in &r.rtts {
                        if logger.want_rtt() {
                            logger.rtt(r.rec.flow_id, *t, *rtt, None, Some(*cwnd), Some(*pace), *infl, None)?;
                        }
                    }
                    logger.flow(&r.rec, &r.series)?;
                    workload.on_flow_end(r.rec.flow_id, clock.now());
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        Ok(())
    })?;
    logger.flush()?;
    rep.elapsed_ns = clock.now() - t0;
    Ok(rep)
}

#[derive(Debug, Clone)]
pub struct TcpReceiverOptions {
    pub listen: SocketAddrV4,
    /// Congestion control of the listening socket (inherited by accepted
    /// sockets): use the same DCTCP as the sender so ECE echoes CE exactly.
    pub cc: Option<String>,
    pub duration_ns: Option<u64>,
    pub max_flows: Option<u64>,
    pub out_dir: Option<PathBuf>,
    /// A connection idle this long is closed as "timeout".
    pub idle_timeout_ns: u64,
}

/// What the receiver logs per connection (same columns as the UDP
/// receiver's recv_flows.csv; packet-level columns are left empty).
#[derive(Debug, Clone, PartialEq)]
pub struct TcpRecvRecord {
    pub peer: SocketAddr,
    pub flow_id: Option<u32>,
    pub seed: Option<u64>,
    pub size: Option<u64>,
    pub bytes: u64,
    pub status: &'static str,
    pub reason: String,
    pub first_unix_ns: u64,
    pub last_unix_ns: u64,
    pub complete_unix_ns: Option<u64>,
    pub corrupt_bytes: u64,
}

impl TcpRecvRecord {
    pub fn row(&self) -> String {
        let o = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},,,{},,,,,,,,",
            self.peer,
            self.flow_id.map(|x| x.to_string()).unwrap_or_default(),
            o(self.seed),
            o(self.size),
            self.bytes,
            self.status,
            csv_field(&self.reason),
            self.first_unix_ns,
            self.last_unix_ns,
            o(self.complete_unix_ns),
            o(self.complete_unix_ns.map(|c| c - self.first_unix_ns)),
            self.corrupt_bytes,
        )
    }
}

fn serve_conn(mut s: TcpStream, peer: SocketAddr, clock: &Clock, stop: &AtomicBool, idle_ns: u64) -> TcpRecvRecord {
    let first = clock.now_unix();
    let mut rec = TcpRecvRecord {
        peer,
        flow_id: None,
        seed: None,
        size: None,
        bytes: 0,
        status: "incomplete",
        reason: String::new(),
        first_unix_ns: first,
        last_unix_ns: first,
        complete_unix_ns: None,
        corrupt_bytes: 0,
    };
    let _ = s.set_read_timeout(Some(std::time::Duration::from_millis(100)));
    let mut hdr = [0u8; HDR_LEN];
    let mut got = 0;
    let mut buf = vec![0u8; 256 * 1024];
    let mut last = clock.now();
    loop {
        if stop.load(Ordering::Relaxed) {
            rec.reason = "receiver stopped".into();
            return rec;
        }
        if clock.now() - last > idle_ns {
            rec.status = "timeout";
            rec.reason = "connection idle".into();
            return rec;
        }
        let r = if got < HDR_LEN { s.read(&mut hdr[got..]) } else { s.read(&mut buf) };
        match r {
            Ok(0) => break,
            Ok(n) => {
                last = clock.now();
                rec.last_unix_ns = clock.now_unix();
                if got < HDR_LEN {
                    got += n;
                    if got == HDR_LEN {
                        if hdr[0..2] != MAGIC || hdr[2] != 1 {
                            rec.status = "error";
                            rec.reason = "not a p4cc stream (bad header)".into();
                            return rec;
                        }
                        rec.flow_id = Some(u32::from_be_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]));
                        let size = u64::from_be_bytes(hdr[8..16].try_into().unwrap_or([0; 8]));
                        rec.size = (size != u64::MAX).then_some(size);
                        rec.seed = Some(u64::from_be_bytes(hdr[16..24].try_into().unwrap_or([0; 8])));
                    }
                } else {
                    let seed = rec.seed.unwrap_or(0);
                    rec.corrupt_bytes += payload::mismatches(seed, rec.bytes, &buf[..n]) as u64;
                    rec.bytes += n as u64;
                }
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted) => {}
            Err(e) => {
                rec.status = "error";
                rec.reason = format!("read: {e}");
                return rec;
            }
        }
    }
    // EOF
    let now = clock.now_unix();
    let status: u8 = if got < HDR_LEN {
        rec.status = "error";
        rec.reason = "connection closed before the header".into();
        return rec;
    } else if rec.corrupt_bytes > 0 {
        rec.status = "error";
        rec.reason = format!("{} corrupted bytes", rec.corrupt_bytes);
        2
    } else if rec.size.is_some_and(|sz| sz != rec.bytes) {
        rec.status = "error";
        rec.reason = format!("got {} of {} bytes", rec.bytes, rec.size.unwrap_or(0));
        1
    } else {
        rec.status = "complete";
        rec.complete_unix_ns = Some(now);
        0
    };
    let mut t = [0u8; TRAILER_LEN];
    t[0..2].copy_from_slice(&MAGIC);
    t[2] = 1;
    t[3] = status;
    t[8..16].copy_from_slice(&rec.bytes.to_be_bytes());
    let _ = s.set_write_timeout(Some(std::time::Duration::from_secs(2)));
    let _ = s.write_all(&t);
    rec
}

pub struct TcpReceiverReport {
    pub flows: Vec<TcpRecvRecord>,
}

pub fn run_receiver(opts: &TcpReceiverOptions, clock: &Clock, stop: &AtomicBool) -> Result<TcpReceiverReport, DatapathError> {
    // SAFETY: plain socket(2); owned right after.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(DatapathError::Socket(io::Error::last_os_error()));
    }
    // SAFETY: fresh fd.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let _ = setsockopt_int(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_REUSEADDR, 1);
    if let Some(cc) = &opts.cc {
        set_cc(fd.as_raw_fd(), cc).map_err(|e| {
            DatapathError::KernelCc(format!("TCP_CONGESTION={cc} on the listener: {e} (available: {})", bpf::available_ccs().join(" ")))
        })?;
    }
    let sa = sys::sockaddr_in(opts.listen);
    // SAFETY: valid sockaddr_in.
    let r = unsafe { libc::bind(fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, size_of::<libc::sockaddr_in>() as libc::socklen_t) };
    if r < 0 {
        return Err(DatapathError::Bind { addr: opts.listen.into(), source: io::Error::last_os_error() });
    }
    // SAFETY: listening on our socket.
    if unsafe { libc::listen(fd.as_raw_fd(), 1024) } < 0 {
        return Err(DatapathError::Socket(io::Error::last_os_error()));
    }
    let listener = std::net::TcpListener::from(fd);
    listener.set_nonblocking(true).map_err(DatapathError::Socket)?;
    let mut out = match &opts.out_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(|e| DatapathError::Output { path: d.clone(), source: e })?;
            let p = d.join("recv_flows.csv");
            let mut w = BufWriter::new(File::create(&p).map_err(|e| DatapathError::Output { path: p.clone(), source: e })?);
            writeln!(w, "{RECV_FLOWS_HEADER}").map_err(|e| DatapathError::Output { path: p.clone(), source: e })?;
            w.flush().map_err(|e| DatapathError::Output { path: p.clone(), source: e })?;
            Some((p, w))
        }
        None => None,
    };
    let (tx, rx) = mpsc::channel::<TcpRecvRecord>();
    let mut flows = Vec::new();
    let start = clock.now();
    std::thread::scope(|scope| -> Result<(), DatapathError> {
        let mut open = 0usize;
        loop {
            let now = clock.now();
            let halted = stop.load(Ordering::Relaxed)
                || opts.duration_ns.is_some_and(|d| now - start >= d)
                || opts.max_flows.is_some_and(|m| flows.len() as u64 >= m);
            if halted && open == 0 {
                break;
            }
            if !halted {
                let _ = wait_fd(listener.as_raw_fd(), libc::POLLIN, 20_000_000);
                loop {
                    match listener.accept() {
                        Ok((s, peer)) => {
                            let _ = s.set_nonblocking(false);
                            let _ = s.set_nodelay(true);
                            open += 1;
                            let tx = tx.clone();
                            let idle = opts.idle_timeout_ns;
                            scope.spawn(move || {
                                let _ = tx.send(serve_conn(s, peer, clock, stop, idle));
                            });
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => break, // e.g. ECONNABORTED: skip
                    }
                }
            } else {
                // let open connections finish or notice the stop flag
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            while let Ok(r) = rx.try_recv() {
                open -= 1;
                if let Some((p, w)) = out.as_mut() {
                    writeln!(w, "{}", r.row()).map_err(|e| DatapathError::Output { path: p.clone(), source: e })?;
                    w.flush().map_err(|e| DatapathError::Output { path: p.clone(), source: e })?;
                }
                flows.push(r);
            }
        }
        Ok(())
    })?;
    Ok(TcpReceiverReport { flows })
}
