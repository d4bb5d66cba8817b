//! p4cc-host: the host agent. See docs/hosts.md for every subcommand and
//! the exact output files.

mod builtin;

use clap::{Args, Parser, Subcommand, ValueEnum};
use datapath::clock::{unix_now_ns, Clock};
use datapath::tcp::{self, TcpReceiverOptions, TcpSenderOptions, TCP_PORT};
use datapath::udp::{self, UdpReceiverOptions, UdpSenderOptions, TOS_ECT0};
use datapath::{bpf, DatapathError};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use telemetry::shim::DATA_PORT;
use traffic::log::FlowLogger;
use traffic::rng::Pareto;
use traffic::cdf::EmpiricalCdf;
use traffic::workload::{ClosedLoop, Incast, IncastMix, Poisson, Schedule, SizeDist};
use traffic::{FlowSpec, Workload};
use transport::receiver::ReceiverConfig;
use transport::sender::SenderConfig;
use transport::wire::{max_payload_1500, MAX_PAYLOAD_1500, MAX_PAYLOAD_1500_INT};

#[derive(Parser)]
#[command(name = "p4cc-host", version, about = "p4cc host agent: transports, traffic generators, telemetry collector")]
struct Cli {
    /// List the congestion-control algorithms (name, parameters, defaults) and exit.
    #[arg(long)]
    list_cc: bool,
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// User-space transport receiver: serves every flow on UDP 7360.
    Recv(RecvArgs),
    /// One user-space transport flow (shortcut for `gen --datapath udp single`).
    Send(SingleArgs),
    /// Kernel TCP receiver: verifies every stream (port 7361).
    TcpRecv(TcpRecvArgs),
    /// One kernel TCP flow (shortcut for `gen --datapath tcp single`).
    TcpSend(SingleArgs),
    /// Run a workload (long / incast / poisson / closed / single / incast-mix) on a datapath.
    Gen(GenArgs),
    /// A flow-size table: its points, its mean, and the mean of samples drawn from it.
    Cdf(CdfArgs),
    /// Switch postcard collector: UDP datagrams -> CSV.
    Collect(CollectArgs),
    /// Register / unregister / inspect the BPF DCTCP (struct_ops "p4cc_dctcp").
    BpfDctcp(BpfArgs),
}

#[derive(Args, Clone)]
struct RecvArgs {
    #[arg(long, default_value = "0.0.0.0:7360")]
    listen: SocketAddrV4,
    /// Shorthand for --listen 0.0.0.0:PORT.
    #[arg(long, conflicts_with = "listen")]
    port: Option<u16>,
    /// Directory for recv_flows.csv and recv_stats.json.
    #[arg(long)]
    out: Option<PathBuf>,
    /// ACK every N-th in-order packet (out-of-order, CE changes, completion: at once).
    #[arg(long, default_value_t = 1)]
    ack_every: u32,
    #[arg(long, default_value_t = 500)]
    delayed_ack_us: u64,
    /// Full packet size used to convert 80-byte-cell queue depths to packets.
    #[arg(long, default_value_t = 1500)]
    depth_pkt_bytes: u32,
    /// An incomplete flow with no packet for this long is closed as "timeout".
    #[arg(long, default_value_t = 30.0)]
    idle_timeout_s: f64,
    /// SACK blocks per ACK (1..8).
    #[arg(long, default_value_t = 4)]
    sack_blocks: usize,
    /// DCQCN notification point: at most one CNP per flow per this many µs
    /// (a CE-marked packet triggers it; the paper's N = 50).
    #[arg(long, default_value_t = 50.0)]
    cnp_interval_us: f64,
    /// Stop after this long.
    #[arg(long)]
    duration_s: Option<f64>,
    /// Stop once this many flows have ended.
    #[arg(long)]
    flows: Option<u64>,
    /// Run the receive loop as SCHED_FIFO with this priority (prompt ACKs; root).
    #[arg(long)]
    rt_prio: Option<i32>,
}

#[derive(Args, Clone)]
struct TcpRecvArgs {
    #[arg(long, default_value = "0.0.0.0:7361")]
    listen: SocketAddrV4,
    /// Shorthand for --listen 0.0.0.0:PORT.
    #[arg(long, conflicts_with = "listen")]
    port: Option<u16>,
    /// Congestion control of the listening socket (dctcp -> the kernel's or p4cc_dctcp).
    #[arg(long)]
    cc: Option<String>,
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long)]
    duration_s: Option<f64>,
    #[arg(long)]
    flows: Option<u64>,
    #[arg(long, default_value_t = 30.0)]
    idle_timeout_s: f64,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DatapathKind {
    Udp,
    Tcp,
}

/// Options shared by every sender.
#[derive(Args, Clone)]
struct SendOpts {
    /// Congestion control: `--list-cc` names for udp; cubic, reno, bbr, dctcp (kernel or BPF) for tcp.
    #[arg(long, default_value = "cubic")]
    cc: String,
    /// Algorithm parameter KEY=VALUE (repeatable).
    #[arg(long = "cc-param", value_parser = parse_kv)]
    cc_params: Vec<(String, String)>,
    /// Output directory (flows.csv, tput.csv, rtt.csv, [hops.csv], sender_summary.json).
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// Throughput bin width.
    #[arg(long, default_value_t = 10.0)]
    bin_ms: f64,
    /// Log one RTT sample out of N.
    #[arg(long, default_value_t = 1)]
    rtt_every: u64,
    /// Also write hops.csv (echoed hop records, udp only).
    #[arg(long)]
    hops_log: bool,
    /// Seed of every random choice (sizes, arrivals, payload).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// First flow id.
    #[arg(long, default_value_t = 1)]
    flow_id_base: u32,
    /// Hard end of the run (running flows are aborted).
    #[arg(long)]
    run_s: Option<f64>,
    /// udp: local address of the sending socket.
    #[arg(long, default_value = "0.0.0.0:0")]
    bind: SocketAddrV4,
    /// udp: payload bytes per packet; default and maximum for a 1500-byte
    /// MTU: 1336, or 1288 for an algorithm that reads INT (version-2 shim).
    #[arg(long)]
    mss: Option<usize>,
    /// udp: pacing-rate cap in Mb/s (also paces window-based algorithms).
    #[arg(long)]
    pace_mbps: Option<f64>,
    /// udp: bottleneck rate given to the algorithm (PathInfo.line_rate_bps).
    #[arg(long)]
    line_rate_mbps: Option<f64>,
    /// udp: the host's link rate in Mb/s, at which the stack arbitrates its
    /// flows as an RDMA NIC does (one packet of each in turn, no more than
    /// the link carries) instead of letting them overflow the qdisc.
    #[arg(long)]
    nic_rate_mbps: Option<f64>,
    /// udp: initial window in packets (PathInfo.init_cwnd_pkts).
    #[arg(long, default_value_t = 10)]
    init_cwnd: u32,
    #[arg(long, default_value_t = 20.0)]
    min_rto_ms: f64,
    #[arg(long, default_value_t = 200.0)]
    init_rto_ms: f64,
    /// A flow without ACK progress for this long fails (peer-gone).
    #[arg(long, default_value_t = 10.0)]
    give_up_s: f64,
    /// udp: send not-ECT instead of ECT(0).
    #[arg(long)]
    no_ecn: bool,
    /// udp: remaining wait below which the loop spins instead of sleeping.
    #[arg(long, default_value_t = 20)]
    spin_us: u64,
    /// udp: a pacer running late may catch up by sending up to N packets
    /// back to back (1 = never closer than the target gap after a stall of
    /// one gap; larger keeps the mean rate exact under CPU contention).
    #[arg(long, default_value_t = 1)]
    pace_burst: u32,
    /// udp: run the send loop as SCHED_FIFO with this priority (1-99):
    /// precise pacing on a loaded machine (root).
    #[arg(long)]
    rt_prio: Option<i32>,
}

#[derive(Args, Clone)]
struct SingleArgs {
    /// Receiver IP[:PORT] (port 7360 udp / 7361 tcp by default).
    #[arg(long)]
    dst: String,
    /// Flow size; without it the flow is a long flow.
    #[arg(long)]
    bytes: Option<u64>,
    /// Long flow: stop sending after this long (then finish what is in flight).
    #[arg(long)]
    duration_s: Option<f64>,
    #[command(flatten)]
    opts: SendOpts,
}

#[derive(Args, Clone)]
struct GenArgs {
    #[arg(long, value_enum, default_value = "udp")]
    datapath: DatapathKind,
    /// Absolute start (unix ns) shared by all hosts; default: now + --start-in-ms.
    #[arg(long, global = true)]
    start_at_unix_ns: Option<u64>,
    #[arg(long, global = true, default_value_t = 0.0)]
    start_in_ms: f64,
    #[command(flatten)]
    opts: SendOpts,
    #[command(subcommand)]
    workload: WorkloadCmd,
}

#[derive(Subcommand, Clone)]
enum WorkloadCmd {
    /// One flow.
    Single {
        #[arg(long)]
        dst: String,
        #[arg(long)]
        bytes: Option<u64>,
        #[arg(long)]
        duration_s: Option<f64>,
    },
    /// Long flows with a start/stop schedule: --flow DST,START_S,STOP_S (repeatable).
    Long {
        #[arg(long = "flow", required = true)]
        flows: Vec<String>,
    },
    /// Synchronized incast: one flow of --size bytes per round to --dst.
    Incast {
        #[arg(long)]
        dst: String,
        #[arg(long)]
        size: u64,
        #[arg(long, default_value_t = 10)]
        rounds: u32,
        /// Round r starts at start + r * interval (0: right after the previous one).
        #[arg(long, default_value_t = 100.0)]
        interval_ms: f64,
    },
    /// Open-loop Poisson arrivals at a target load, Pareto, fixed or empirical (--cdf) sizes.
    Poisson {
        /// Destination(s), chosen uniformly per flow (repeatable).
        #[arg(long = "dst", required = true)]
        dsts: Vec<String>,
        /// Offered load as a fraction of --link-mbps.
        #[arg(long)]
        load: f64,
        #[arg(long)]
        link_mbps: f64,
        #[command(flatten)]
        sizes: SizeArgs,
        /// Stop after this many flows.
        #[arg(long)]
        flows: Option<u32>,
        /// Stop starting flows after this long.
        #[arg(long)]
        duration_s: Option<f64>,
    },
    /// Incast events as a Poisson process over a group of hosts: each picks
    /// a receiver and --fan-in senders of the group; every member runs the
    /// same schedule (--schedule-seed) and sends where it is a sender.
    IncastMix {
        /// The group, every member in the same order on every host (repeatable).
        #[arg(long = "member", required = true)]
        group: Vec<String>,
        /// This host's address (one of the members).
        #[arg(long)]
        me: String,
        /// Senders per event (at most the group's size − 1).
        #[arg(long, default_value_t = 60)]
        fan_in: usize,
        /// Bytes each sender sends per event.
        #[arg(long, default_value_t = 500_000)]
        size: u64,
        /// The events' load: a share of the group's host links' capacity.
        #[arg(long)]
        share: f64,
        /// Each member's link rate.
        #[arg(long)]
        link_mbps: f64,
        /// Seed of the shared schedule (the same on every member).
        #[arg(long)]
        schedule_seed: u64,
        /// Stop after this many events (of the whole group).
        #[arg(long)]
        events: Option<u32>,
        /// No event after this long.
        #[arg(long)]
        duration_s: Option<f64>,
    },
    /// Closed loop: --concurrency flows at all times.
    Closed {
        #[arg(long = "dst", required = true)]
        dsts: Vec<String>,
        #[arg(long)]
        concurrency: u32,
        #[command(flatten)]
        sizes: SizeArgs,
        /// Mean exponential think time between a flow's end and the next start.
        #[arg(long, default_value_t = 0.0)]
        think_ms: f64,
        #[arg(long)]
        flows: Option<u32>,
        #[arg(long)]
        duration_s: Option<f64>,
    },
}

#[derive(Args, Clone)]
struct SizeArgs {
    /// Pareto shape (> 1).
    #[arg(long, default_value_t = 1.2)]
    pareto_shape: f64,
    /// Mean flow size in bytes.
    #[arg(long, default_value_t = 30000.0)]
    mean_bytes: f64,
    /// Cap on a flow's size (truncates the Pareto tail).
    #[arg(long)]
    max_bytes: Option<u64>,
    /// Fixed size instead of Pareto.
    #[arg(long, conflicts_with = "cdf")]
    fixed_bytes: Option<u64>,
    /// Sizes from an empirical table instead of Pareto: websearch,
    /// fb_hadoop, alistorage (hosts/traffic/cdf/), or a file of that format.
    #[arg(long)]
    cdf: Option<String>,
}

#[derive(Args, Clone)]
struct CdfArgs {
    /// A built-in table (websearch, fb_hadoop, alistorage) or a file.
    name: String,
    /// Also draw this many sizes and print their mean.
    #[arg(long, default_value_t = 0)]
    samples: u64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

#[derive(Args, Clone)]
struct CollectArgs {
    #[arg(long)]
    listen: SocketAddr,
    #[arg(long)]
    out: PathBuf,
    #[arg(long)]
    duration_s: Option<f64>,
    /// Also return each transport data packet's postcard to its sender
    /// (postcard-fed oracle TIMELY: `--cc-param source=postcard`).
    #[arg(long)]
    feed: bool,
}

#[derive(Args, Clone)]
struct BpfArgs {
    #[arg(value_enum)]
    action: BpfAction,
    /// Compiled object (default: $P4CC_BPF_OBJ or hosts/bpf/build/p4cc_dctcp.bpf.o, built with make if missing).
    #[arg(long)]
    obj: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum BpfAction {
    Load,
    Unload,
    Status,
}

#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Datapath(#[from] DatapathError),
    #[error(transparent)]
    Log(#[from] traffic::log::LogError),
    #[error(transparent)]
    Collector(#[from] telemetry::collector::CollectorError),
    #[error("cannot write {0}: {1}")]
    Io(PathBuf, std::io::Error),
}

fn parse_kv(s: &str) -> Result<(String, String), String> {
    let (k, v) = s.split_once('=').ok_or_else(|| format!("expected KEY=VALUE, got '{s}'"))?;
    Ok((k.trim().to_string(), v.trim().to_string()))
}

fn parse_dst(s: &str, default_port: u16) -> Result<SocketAddr, CliError> {
    if let Ok(a) = s.parse::<SocketAddrV4>() {
        return Ok(a.into());
    }
    s.parse::<Ipv4Addr>()
        .map(|ip| SocketAddr::V4(SocketAddrV4::new(ip, default_port)))
        .map_err(|_| CliError::Usage(format!("bad destination '{s}' (expected IPv4[:PORT])")))
}

fn secs(s: f64) -> u64 {
    (s.max(0.0) * 1e9) as u64
}

fn stop_flag() -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, stop.clone());
    }
    stop
}

fn list_cc() {
    use std::fmt::Write as _;
    let mut o = String::new();
    let _ = writeln!(o, "# user-space transport (--datapath udp): name, --cc-param KEY=DEFAULT, description");
    let _ = writeln!(
        o,
        "# [reads INT]: its data packets carry a version-2 telemetry shim (32-byte hop records), so at most {MAX_PAYLOAD_1500_INT} payload bytes per packet instead of {MAX_PAYLOAD_1500}"
    );
    for a in cc::list() {
        let aliases = if a.aliases.is_empty() { String::new() } else { format!(" (alias: {})", a.aliases.join(", ")) };
        let int = if a.int_telemetry {
            format!(" [reads INT: version-2 shim, --mss <= {MAX_PAYLOAD_1500_INT}]")
        } else {
            String::new()
        };
        let _ = writeln!(o, "{}{}{}\n    {}", a.name, aliases, int, a.description);
        for p in &a.params {
            let _ = writeln!(o, "    --cc-param {}={}    {}", p.name, p.default, p.doc);
        }
    }
    for (n, d, p) in builtin::NAMES {
        let _ = writeln!(o, "{n}\n    {d}\n    --cc-param {p}");
    }
    let _ = writeln!(o, "# kernel TCP (--datapath tcp): available now: {}", bpf::available_ccs().join(" "));
    let _ = writeln!(o, "#   'dctcp' uses the kernel module if present, else the BPF p4cc_dctcp (p4cc-host bpf-dctcp load)");
    use std::io::Write as _;
    let _ = std::io::stdout().write_all(o.as_bytes());
}

/// The payload per packet of a udp flow of algorithm `cc`: `--mss`, or the
/// largest a 1500-byte MTU leaves after the shim version the algorithm
/// makes the sender use (1336, or 1288 when it reads INT).
fn udp_mss(cc: &str, given: Option<usize>) -> Result<usize, CliError> {
    let int = cc::reads_int(cc);
    let max = max_payload_1500(int);
    match given {
        None => Ok(max),
        Some(m) if (1..=max).contains(&m) => Ok(m),
        Some(_) if int => Err(CliError::Usage(format!(
            "--mss must be 1..={max} for {cc}: it reads INT, and a version-2 shim leaves room for four 32-byte hop records"
        ))),
        Some(_) => Err(CliError::Usage(format!("--mss must be 1..={max}"))),
    }
}

fn cnp_interval_ns(us: f64) -> Result<u64, CliError> {
    if !us.is_finite() || us < 0.0 {
        return Err(CliError::Usage(format!("--cnp-interval-us must be >= 0, got {us}")));
    }
    Ok((us * 1e3).round() as u64)
}

fn sizes_of(s: &SizeArgs) -> Result<SizeDist, CliError> {
    if let Some(name) = &s.cdf {
        return Ok(SizeDist::Cdf(std::sync::Arc::new(EmpiricalCdf::named(name).map_err(CliError::Usage)?)));
    }
    Ok(match s.fixed_bytes {
        Some(b) => SizeDist::Fixed(b),
        None => SizeDist::Pareto {
            dist: Pareto::with_mean(s.pareto_shape, s.mean_bytes).map_err(CliError::Usage)?,
            max_bytes: s.max_bytes,
        },
    })
}

/// Builds the workload; times are relative to the run clock.
fn build_workload(
    w: &WorkloadCmd,
    port: u16,
    opts: &SendOpts,
    start_ns: u64,
) -> Result<Box<dyn Workload>, CliError> {
    let dsts = |v: &[String]| v.iter().map(|d| parse_dst(d, port)).collect::<Result<Vec<_>, _>>();
    Ok(match w {
        WorkloadCmd::Single { dst, bytes, duration_s } => {
            let d = parse_dst(dst, port)?;
            if bytes.is_none() && duration_s.is_none() {
                return Err(CliError::Usage("give --bytes N or --duration-s S".into()));
            }
            let stop = if bytes.is_none() { duration_s.map(|s| start_ns + secs(s)) } else { None };
            Box::new(Schedule::new("single", vec![(d, start_ns, *bytes, stop)], opts.flow_id_base, opts.seed))
        }
        WorkloadCmd::Long { flows } => {
            let mut v = Vec::new();
            for f in flows {
                let parts: Vec<&str> = f.split(',').collect();
                if parts.len() != 3 {
                    return Err(CliError::Usage(format!("--flow expects DST,START_S,STOP_S, got '{f}'")));
                }
                let d = parse_dst(parts[0], port)?;
                let a: f64 = parts[1].parse().map_err(|_| CliError::Usage(format!("bad start in '{f}'")))?;
                let b: f64 = parts[2].parse().map_err(|_| CliError::Usage(format!("bad stop in '{f}'")))?;
                if b <= a {
                    return Err(CliError::Usage(format!("stop must be after start in '{f}'")));
                }
                v.push((d, start_ns + secs(a), None, Some(start_ns + secs(b))));
            }
            Box::new(Schedule::new("long", v, opts.flow_id_base, opts.seed))
        }
        WorkloadCmd::Incast { dst, size, rounds, interval_ms } => Box::new(Incast::new(
            parse_dst(dst, port)?,
            *size,
            *rounds,
            start_ns,
            (interval_ms * 1e6) as u64,
            opts.flow_id_base,
            opts.seed,
        )),
        WorkloadCmd::Poisson { dsts: d, load, link_mbps, sizes, flows, duration_s } => Box::new(
            Poisson::new(
                dsts(d)?,
                sizes_of(sizes)?,
                *load,
                link_mbps * 1e6,
                start_ns,
                *flows,
                duration_s.map(|s| start_ns + secs(s)),
                opts.flow_id_base,
                opts.seed,
            )
            .map_err(CliError::Usage)?,
        ),
        WorkloadCmd::IncastMix { group, me, fan_in, size, share, link_mbps, schedule_seed, events, duration_s } => {
            let members = dsts(group)?;
            let me = parse_dst(me, port)?;
            let idx = members
                .iter()
                .position(|m| m.ip() == me.ip())
                .ok_or_else(|| CliError::Usage(format!("--me {} is not a --member", me.ip())))?;
            Box::new(
                IncastMix::new(
                    members,
                    idx,
                    *fan_in,
                    *size,
                    *share,
                    link_mbps * 1e6,
                    start_ns,
                    *events,
                    duration_s.map(|s| start_ns + secs(s)),
                    opts.flow_id_base,
                    opts.seed,
                    *schedule_seed,
                )
                .map_err(CliError::Usage)?,
            )
        }
        WorkloadCmd::Closed { dsts: d, concurrency, sizes, think_ms, flows, duration_s } => Box::new(
            ClosedLoop::new(
                dsts(d)?,
                sizes_of(sizes)?,
                *concurrency,
                think_ms * 1e6,
                start_ns,
                *flows,
                duration_s.map(|s| start_ns + secs(s)),
                opts.flow_id_base,
                opts.seed,
            )
            .map_err(CliError::Usage)?,
        ),
    })
}

fn run_gen(datapath: DatapathKind, start_at: Option<u64>, start_in_ms: f64, opts: &SendOpts, w: &WorkloadCmd) -> Result<bool, CliError> {
    let clock = Clock::new();
    let start_ns = match start_at {
        Some(u) => {
            let m = clock.mono_of_unix(u);
            if u < unix_now_ns() {
                eprintln!("warning: --start-at-unix-ns is in the past; starting now");
            }
            m
        }
        None => clock.now() + (start_in_ms * 1e6) as u64,
    };
    let stop = stop_flag();
    let bin_ns = (opts.bin_ms * 1e6).max(1.0) as u64;
    let end_ns = opts.run_s.map(|s| start_ns + secs(s));
    let port = if datapath == DatapathKind::Udp { DATA_PORT } else { TCP_PORT };
    let mut workload = build_workload(w, port, opts, start_ns)?;
    let mut logger = FlowLogger::create(&opts.out, bin_ns, opts.rtt_every, opts.hops_log && datapath == DatapathKind::Udp)?;
    let (json, ok) = match datapath {
        DatapathKind::Udp => {
            let mss = udp_mss(&opts.cc, opts.mss)?;
            let path = cc::PathInfo {
                mss: mss as u32,
                line_rate_bps: opts.line_rate_mbps.map(|m| (m * 1e6) as u64),
                init_cwnd_pkts: opts.init_cwnd,
            };
            // fail fast on a bad name or parameter
            let name = opts.cc.clone();
            let params = opts.cc_params.clone();
            let make = move |f: &FlowSpec| -> Result<Box<dyn cc::CongestionControl>, String> {
                match builtin::build(&name, &params, mss as u64) {
                    Some(r) => r,
                    None => cc::for_flow(&name, &params, &path, f.seed).map_err(|e| e.to_string()),
                }
            };
            let probe = FlowSpec {
                id: 0,
                start_ns: 0,
                dst: "127.0.0.1:1".parse().map_err(|_| CliError::Usage("internal".into()))?,
                size: None,
                stop_ns: None,
                seed: 0,
                workload: "probe",
                round: None,
            };
            make(&probe).map_err(CliError::Usage)?;
            let uopts = UdpSenderOptions {
                bind: opts.bind,
                sender: SenderConfig {
                    mss,
                    init_rto_ns: (opts.init_rto_ms * 1e6) as u64,
                    min_rto_ns: (opts.min_rto_ms * 1e6) as u64,
                    give_up_ns: secs(opts.give_up_s),
                    pace_cap_bps: opts.pace_mbps.map(|m| (m * 1e6) as u64),
                    pace_max_burst: opts.pace_burst.max(1),
                    ..Default::default()
                },
                tos: if opts.no_ecn { 0 } else { TOS_ECT0 },
                cc_label: opts.cc.clone(),
                spin_ns: opts.spin_us * 1000,
                end_ns,
                rt_prio: opts.rt_prio,
                nic_rate_bps: opts.nic_rate_mbps.filter(|m| *m > 0.0).map(|m| (m * 1e6) as u64),
                ..Default::default()
            };
            let rep = udp::run_sender(&uopts, workload, Box::new(make), logger, &clock, &stop)?;
            (rep.to_json(), rep.flows_failed == 0)
        }
        DatapathKind::Tcp => {
            let kcc = tcp::resolve_kernel_cc(&opts.cc)?;
            let topts = TcpSenderOptions {
                cc: kcc.clone(),
                label: kcc.clone(),
                give_up_ns: secs(opts.give_up_s),
                end_ns,
                bin_ns,
                ..Default::default()
            };
            let rep = tcp::run_sender(&topts, workload.as_mut(), &mut logger, &clock, &stop)?;
            (rep.to_json(&kcc), rep.flows_failed == 0)
        }
    };
    let p = opts.out.join("sender_summary.json");
    std::fs::write(&p, format!("{json}\n")).map_err(|e| CliError::Io(p, e))?;
    println!("{json}");
    Ok(ok)
}

fn run(cli: Cli) -> Result<bool, CliError> {
    if cli.list_cc {
        list_cc();
        return Ok(true);
    }
    let Some(cmd) = cli.cmd else {
        return Err(CliError::Usage("no subcommand (see --help)".into()));
    };
    match cmd {
        Cmd::Recv(mut a) => {
            if let Some(p) = a.port {
                a.listen = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, p);
            }
            let clock = Clock::new();
            let stop = stop_flag();
            let opts = UdpReceiverOptions {
                listen: a.listen,
                cfg: ReceiverConfig {
                    ack_every: a.ack_every.max(1),
                    delayed_ack_ns: a.delayed_ack_us * 1000,
                    idle_timeout_ns: secs(a.idle_timeout_s),
                    depth_pkt_bytes: a.depth_pkt_bytes,
                    max_sack_blocks: a.sack_blocks.clamp(1, 8),
                    cnp_interval_ns: cnp_interval_ns(a.cnp_interval_us)?,
                    ..Default::default()
                },
                sock_buf: 8 << 20,
                duration_ns: a.duration_s.map(secs),
                max_flows: a.flows,
                out_dir: a.out.clone(),
                rt_prio: a.rt_prio,
            };
            eprintln!("p4cc-host recv: listening on udp {}", a.listen);
            let rep = udp::run_receiver(&opts, &clock, &stop)?;
            let complete = rep.flows.iter().filter(|f| f.status == transport::RecvStatus::Complete).count();
            println!(
                "{{\"flows\": {}, \"complete\": {}, \"bytes\": {}, \"stats\": {}}}",
                rep.flows.len(),
                complete,
                rep.flows.iter().map(|f| f.bytes).sum::<u64>(),
                rep.stats.to_json()
            );
            Ok(true)
        }
        Cmd::TcpRecv(mut a) => {
            if let Some(p) = a.port {
                a.listen = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, p);
            }
            let clock = Clock::new();
            let stop = stop_flag();
            let cc = match &a.cc {
                Some(c) => Some(tcp::resolve_kernel_cc(c)?),
                None => None,
            };
            let opts = TcpReceiverOptions {
                listen: a.listen,
                cc,
                duration_ns: a.duration_s.map(secs),
                max_flows: a.flows,
                out_dir: a.out.clone(),
                idle_timeout_ns: secs(a.idle_timeout_s),
            };
            eprintln!("p4cc-host tcp-recv: listening on tcp {}", a.listen);
            let rep = tcp::run_receiver(&opts, &clock, &stop)?;
            let complete = rep.flows.iter().filter(|f| f.status == "complete").count();
            println!(
                "{{\"flows\": {}, \"complete\": {}, \"bytes\": {}}}",
                rep.flows.len(),
                complete,
                rep.flows.iter().map(|f| f.bytes).sum::<u64>()
            );
            Ok(true)
        }
        Cmd::Send(a) => run_gen(
            DatapathKind::Udp,
            None,
            0.0,
            &a.opts,
            &WorkloadCmd::Single { dst: a.dst, bytes: a.bytes, duration_s: a.duration_s },
        ),
        Cmd::TcpSend(a) => run_gen(
            DatapathKind::Tcp,
            None,
            0.0,
            &a.opts,
            &WorkloadCmd::Single { dst: a.dst, bytes: a.bytes, duration_s: a.duration_s },
        ),
        Cmd::Gen(g) => run_gen(g.datapath, g.start_at_unix_ns, g.start_in_ms, &g.opts, &g.workload),
        Cmd::Cdf(a) => {
            let c = EmpiricalCdf::named(&a.name).map_err(CliError::Usage)?;
            let pts: Vec<String> = c.points.iter().map(|(x, y)| format!("[{x}, {y}]")).collect();
            let mut sampled = String::new();
            if a.samples > 0 {
                let mut r = traffic::rng::Rng::new(a.seed);
                let total: f64 = (0..a.samples).map(|_| c.sample(&mut r) as f64).sum();
                sampled = format!(", \"samples\": {}, \"sample_mean\": {}", a.samples, total / a.samples as f64);
            }
            println!("{{\"name\": \"{}\", \"points\": [{}], \"mean\": {}{sampled}}}", c.name, pts.join(", "), c.mean());
            Ok(true)
        }
        Cmd::Collect(a) => {
            let stop = stop_flag();
            eprintln!(
                "p4cc-host collect: listening on udp {}, writing {}{}",
                a.listen,
                a.out.display(),
                if a.feed { ", returning data packets' postcards to their senders" } else { "" }
            );
            let st = telemetry::collector::run(a.listen, &a.out, &stop, a.duration_s.map(std::time::Duration::from_secs_f64), a.feed)?;
            println!("{}", st.to_json());
            Ok(true)
        }
        Cmd::BpfDctcp(a) => {
            match a.action {
                BpfAction::Load => println!("{}", bpf::load(a.obj)?),
                BpfAction::Unload => println!("{}", bpf::unload()?),
                BpfAction::Status => print!("{}", bpf::status()),
            }
            Ok(true)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(3),
        Err(e) => {
            eprintln!("p4cc-host: error: {e}");
            ExitCode::from(match e {
                CliError::Usage(_) => 2,
                _ => 1,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_and_params() {
        assert_eq!(parse_dst("10.99.0.2", 7360).unwrap(), "10.99.0.2:7360".parse::<SocketAddr>().unwrap());
        assert_eq!(parse_dst("10.99.0.2:9", 7360).unwrap(), "10.99.0.2:9".parse::<SocketAddr>().unwrap());
        assert!(parse_dst("host", 7360).is_err());
        assert_eq!(parse_kv("g = 0.1").unwrap(), ("g".to_string(), "0.1".to_string()));
        assert!(parse_kv("g").is_err());
        assert!(builtin::build("fixed-rate", &[("rate_mbps".into(), "50".into())], 1336).unwrap().is_ok());
        assert!(builtin::build("fixed-rate", &[("rate".into(), "50".into())], 1336).unwrap().is_err());
        assert!(builtin::build("fixed-window", &[("cwnd_pkts".into(), "-1".into())], 1336).unwrap().is_err());
        assert!(builtin::build("reno", &[], 1336).is_none());
    }

    #[test]
    fn cli_parses_every_subcommand() {
        for args in [
            vec!["p4cc-host", "--list-cc"],
            vec!["p4cc-host", "recv", "--out", "/tmp/x", "--ack-every", "2"],
            vec!["p4cc-host", "recv", "--port", "5000"],
            vec!["p4cc-host", "recv", "--cnp-interval-us", "25"],
            vec!["p4cc-host", "send", "--dst", "10.99.0.2", "--bytes", "1000", "--cc", "hpcc", "--mss", "1288"],
            vec!["p4cc-host", "send", "--dst", "10.99.0.2", "--bytes", "1000", "--cc", "dctcp", "--cc-param", "g=0.1"],
            vec!["p4cc-host", "tcp-recv", "--cc", "dctcp"],
            vec!["p4cc-host", "tcp-send", "--dst", "10.99.0.2", "--duration-s", "3", "--cc", "cubic"],
            vec!["p4cc-host", "gen", "--datapath", "tcp", "long", "--flow", "10.99.0.2,0,30", "--flow", "10.99.0.3,30,60"],
            vec!["p4cc-host", "gen", "incast", "--dst", "10.99.0.2", "--size", "20000", "--rounds", "5", "--start-at-unix-ns", "1"],
            vec!["p4cc-host", "gen", "poisson", "--dst", "10.99.0.2", "--dst", "10.99.0.3", "--load", "0.5", "--link-mbps", "100", "--flows", "500"],
            vec!["p4cc-host", "gen", "closed", "--dst", "10.99.0.2", "--concurrency", "4", "--fixed-bytes", "100000"],
            vec!["p4cc-host", "gen", "poisson", "--dst", "10.99.0.2", "--load", "0.3", "--link-mbps", "100", "--cdf", "fb_hadoop", "--duration-s", "1"],
            vec![
                "p4cc-host", "gen", "incast-mix", "--member", "10.99.0.1", "--member", "10.99.0.2", "--member", "10.99.0.3",
                "--me", "10.99.0.2", "--fan-in", "2", "--size", "500000", "--share", "0.02", "--link-mbps", "100",
                "--schedule-seed", "5", "--duration-s", "1",
            ],
            vec!["p4cc-host", "cdf", "websearch", "--samples", "10"],
            vec!["p4cc-host", "collect", "--listen", "0.0.0.0:9999", "--out", "/tmp/pc.csv"],
            vec!["p4cc-host", "bpf-dctcp", "status"],
        ] {
            Cli::try_parse_from(&args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        assert!(Cli::try_parse_from(["p4cc-host", "bpf-dctcp", "explode"]).is_err());
    }

    #[test]
    fn the_mss_follows_the_shim_the_algorithm_needs() {
        assert_eq!(udp_mss("cubic", None).unwrap(), 1336);
        assert_eq!(udp_mss("dcqcn", None).unwrap(), 1336);
        assert_eq!(udp_mss("fixed-rate", None).unwrap(), 1336);
        assert_eq!(udp_mss("hpcc", None).unwrap(), 1288);
        assert_eq!(udp_mss("powertcp", Some(1000)).unwrap(), 1000);
        assert!(udp_mss("hpcc", Some(1336)).is_err());
        assert!(udp_mss("cubic", Some(1337)).is_err());
        assert!(udp_mss("cubic", Some(0)).is_err());
        assert_eq!(cnp_interval_ns(50.0).unwrap(), 50_000);
        assert_eq!(cnp_interval_ns(0.5).unwrap(), 500);
        assert!(cnp_interval_ns(-1.0).is_err());
        let cli = Cli::try_parse_from(["p4cc-host", "recv"]).unwrap();
        let Some(Cmd::Recv(a)) = cli.cmd else { panic!() };
        assert_eq!(cnp_interval_ns(a.cnp_interval_us).unwrap(), transport::ReceiverConfig::default().cnp_interval_ns);
    }

    #[test]
    fn workloads_build_and_reject_nonsense() {
        let cli = Cli::try_parse_from(["p4cc-host", "gen", "long", "--flow", "10.99.0.2,5,1"]).unwrap();
        let Some(Cmd::Gen(g)) = cli.cmd else { panic!() };
        assert!(build_workload(&g.workload, 7360, &g.opts, 0).is_err(), "stop before start");
        let cli = Cli::try_parse_from(["p4cc-host", "gen", "poisson", "--dst", "10.99.0.2", "--load", "0.5", "--link-mbps", "100", "--fixed-bytes", "0"]).unwrap();
        let Some(Cmd::Gen(g)) = cli.cmd else { panic!() };
        assert!(build_workload(&g.workload, 7360, &g.opts, 0).is_err(), "zero mean size");
        let cli = Cli::try_parse_from(["p4cc-host", "gen", "incast", "--dst", "10.99.0.2", "--size", "100", "--rounds", "2"]).unwrap();
        let Some(Cmd::Gen(g)) = cli.cmd else { panic!() };
        let mut w = build_workload(&g.workload, 7360, &g.opts, 1000).unwrap();
        assert_eq!(w.next_start_ns(), Some(1000));
        assert_eq!(w.poll(1000)[0].size, Some(100));
        let cli = Cli::try_parse_from(["p4cc-host", "gen", "poisson", "--dst", "10.99.0.2", "--load", "0.5", "--link-mbps", "100", "--cdf", "nonesuch"]).unwrap();
        let Some(Cmd::Gen(g)) = cli.cmd else { panic!() };
        assert!(build_workload(&g.workload, 7360, &g.opts, 0).is_err(), "unknown table");
        assert!(Cli::try_parse_from(["p4cc-host", "gen", "poisson", "--dst", "10.99.0.2", "--load", "0.5", "--link-mbps", "100", "--cdf", "websearch", "--fixed-bytes", "5"]).is_err());
        let cli = Cli::try_parse_from([
            "p4cc-host", "gen", "incast-mix", "--member", "10.99.0.1", "--member", "10.99.0.2", "--me", "10.99.0.9",
            "--share", "0.1", "--link-mbps", "100", "--schedule-seed", "1",
        ])
        .unwrap();
        let Some(Cmd::Gen(g)) = cli.cmd else { panic!() };
        assert!(build_workload(&g.workload, 7360, &g.opts, 0).is_err(), "--me not a member");
    }
}
