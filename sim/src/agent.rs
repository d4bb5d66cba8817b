//! The host agents of a plan, in virtual time: the same sender stack,
//! receiver and postcard collector (with or without its feed back to the
//! senders) p4cc-host runs, fed and drained by the simulator instead of
//! sockets. Kernel-TCP agents of the plan run the
//! transport's implementation of the same algorithm (there is no kernel in
//! virtual time), and say so in their logs.

use crate::plan::{self, Agent as AgentSpec};
use crate::SimError;
use datapath::stack::{ReceiverLog, SenderStack, SenderStackOptions, TxSink};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use telemetry::collector::{handle_datagram, CollectorStats};
use telemetry::postcard::Postcard;
use traffic::log::FlowLogger;
use traffic::rng::Pareto;
use traffic::cdf::EmpiricalCdf;
use traffic::workload::{ClosedLoop, Incast, IncastMix, Poisson, Schedule, SizeDist};
use traffic::Workload;
use transport::receiver::{Receiver, ReceiverConfig};
use transport::sender::SenderConfig;
use transport::wire;

/// Receivers listen here (p4cc-host's default).
pub const DATA_PORT: u16 = telemetry::shim::DATA_PORT;
/// The postcard collector listens here (p4cc_topo.plan.COLLECTOR_UDP_PORT).
pub const COLLECTOR_PORT: u16 = 9999;
/// Senders' source ports: this plus the agent's index on its host.
pub const SENDER_PORT_BASE: u16 = 40000;
/// ECT(0) in the TOS byte.
pub const TOS_ECT0: u8 = 0x02;
/// Room for one datagram (more than a 1500-byte MTU allows).
const SLOT_BYTES: usize = 2048;
/// Flow log bins (p4cc-host's default --bin-ms 10).
const BIN_NS: u64 = 10_000_000;

/// Kernel congestion controls and the transport algorithm that models each.
/// Kernel BBR (Linux `tcp_bbr`, BBRv1) is modelled by p4cc's `bbr`, written
/// after `tcp_bbr.c` in the kernel's own units (docs/algorithms.md).
const KERNEL_MODELS: &[(&str, &str)] = &[("reno", "reno"), ("cubic", "cubic"), ("dctcp", "dctcp"), ("bbr", "bbr")];

/// A datagram an agent sends: from its port, to `dst`, with IP TOS `tos`;
/// its payload is `range` of [`Outgoing::data`].
pub struct Out {
    pub from_port: u16,
    pub dst: SocketAddrV4,
    pub tos: u8,
    pub range: std::ops::Range<usize>,
}

/// What the agents of one event send, payloads packed in one buffer: a
/// datagram costs no allocation of its own (per-datagram vectors were a
/// tenth of the simulator's instructions at 10 Gb/s). The buffer only
/// grows: bytes past `used` are left from earlier events and are not
/// zeroed again for every slot (as a socket batch's buffers are not).
pub struct Outgoing {
    pub list: Vec<Out>,
    data: Vec<u8>,
    used: usize,
    /// Packets the host's NIC takes from a sender that arbitrates in this
    /// event (the world sets it before each poll), and when it next has
    /// room once those are used.
    pub nic_room: usize,
    pub nic_room_at: u64,
}

impl Default for Outgoing {
    fn default() -> Self {
        Outgoing { list: Vec::new(), data: Vec::new(), used: 0, nic_room: usize::MAX, nic_room_at: 0 }
    }
}

impl Outgoing {
    fn push(&mut self, from_port: u16, dst: SocketAddrV4, tos: u8, payload: &[u8]) {
        let start = self.used;
        self.room(start + payload.len())[start..].copy_from_slice(payload);
        self.used = start + payload.len();
        self.list.push(Out { from_port, dst, tos, range: start..self.used });
    }
    /// The buffer, at least `len` long.
    fn room(&mut self, len: usize) -> &mut [u8] {
        if self.data.len() < len {
            self.data.resize(len, 0);
        }
        &mut self.data[..len]
    }
    pub fn payload(&self, o: &Out) -> &[u8] {
        &self.data[o.range.clone()]
    }
    pub fn clear(&mut self) {
        self.list.clear();
        self.used = 0;
    }
}

/// Collects what a sender writes, as a socket batch would: each datagram
/// is written in place after the ones before it in `out`. A slot handed
/// out and not committed leaves nothing behind.
struct Outbox<'a> {
    out: &'a mut Outgoing,
    /// Where the slot handed out and not yet committed starts.
    open: Option<usize>,
    from_port: u16,
    tos: u8,
    now: u64,
}

impl TxSink for Outbox<'_> {
    fn slot(&mut self) -> &mut [u8] {
        let start = *self.open.get_or_insert(self.out.used);
        &mut self.out.room(start + SLOT_BYTES)[start..]
    }
    fn commit(&mut self, len: usize, dst: SocketAddrV4) {
        let Some(start) = self.open.take() else { return };
        let len = len.min(SLOT_BYTES);
        self.out.used = start + len;
        self.out.list.push(Out { from_port: self.from_port, dst, tos: self.tos, range: start..start + len });
    }
    fn is_full(&self) -> bool {
        false
    }
    fn nic_has_room(&self) -> bool {
        self.out.list.len() < self.out.nic_room
    }
    fn nic_room_at(&self) -> Option<u64> {
        Some(self.out.nic_room_at)
    }
    fn flush(&mut self) -> Result<(u64, usize), datapath::DatapathError> {
        Ok((self.now, 0))
    }
}

pub enum Role {
    Sender(Box<SenderStack>),
    /// `ack`: room for one acknowledgement, kept across datagrams.
    Receiver { recv: Receiver, log: ReceiverLog, flows: usize, ack: Vec<u8> },
    /// The postcard collector; with `feed` (role "feed") it also returns
    /// each transport data packet's postcard to its sender, as
    /// `p4cc-host collect --feed` does.
    Collector { csv: BufWriter<File>, path: String, stats: CollectorStats, feed: bool },
}

pub struct Agent {
    pub port: u16,
    pub role: Role,
    pub folder: String,
    tos: u8,
    /// When the event loop will next wake this agent (stale wakes are skipped).
    pub scheduled: Option<u64>,
}

fn cc_param(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn secs(s: f64) -> u64 {
    (s.max(0.0) * 1e9).round() as u64
}

/// The transport algorithm that runs an agent's congestion control here.
pub fn algorithm(spec: &AgentSpec) -> Result<String, SimError> {
    let cc = spec.cc.clone().unwrap_or_default();
    if spec.datapath == "kernel" {
        return KERNEL_MODELS.iter().find(|(k, _)| *k == cc).map(|(_, m)| m.to_string()).ok_or_else(|| {
            SimError::Plan(format!(
                "agent on {}: kernel TCP '{cc}' has no implementation in p4cc's transport, so it cannot run in virtual time (these can: {})",
                spec.host,
                KERNEL_MODELS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
            ))
        });
    }
    Ok(cc)
}

/// A receiver's configuration: the plan's CNP interval (else the paper's),
/// ACK ratio and delayed-ACK timeout.
fn receiver_config(spec: &AgentSpec) -> ReceiverConfig {
    let mut cfg = ReceiverConfig { ack_every: spec.ack_every.max(1), ..ReceiverConfig::default() };
    if spec.delayed_ack_us > 0.0 {
        cfg.delayed_ack_ns = (spec.delayed_ack_us * 1e3).round() as u64;
    }
    if spec.cnp_interval_us > 0.0 {
        cfg.cnp_interval_ns = (spec.cnp_interval_us * 1e3).round() as u64;
    }
    cfg
}

fn sizes(s: &plan::Sizes) -> Result<SizeDist, String> {
    if let Some(name) = &s.cdf {
        return Ok(SizeDist::Cdf(std::sync::Arc::new(EmpiricalCdf::named(name)?)));
    }
    Ok(match s.fixed_bytes {
        Some(b) => SizeDist::Fixed(b),
        None => SizeDist::Pareto { dist: Pareto::with_mean(s.pareto_shape, s.mean_bytes)?, max_bytes: s.max_bytes },
    })
}

fn workload(
    w: &plan::Workload,
    me: &str,
    addr: &dyn Fn(&str) -> Result<SocketAddr, SimError>,
    first_id: u32,
    seed: u64,
) -> Result<Box<dyn Workload>, SimError> {
    let bad = |e: String| SimError::Plan(format!("workload {}: {e}", w.kind));
    let dsts = || w.dsts.iter().map(|d| addr(d)).collect::<Result<Vec<_>, _>>();
    let start = secs(w.start_s);
    Ok(match w.kind.as_str() {
        "long" => {
            let mut v = Vec::new();
            for f in &w.flows {
                v.push((addr(&f.dst)?, secs(f.start_s), None, Some(secs(f.stop_s))));
            }
            Box::new(Schedule::new("long", v, first_id, seed))
        }
        "single" => Box::new(Schedule::new("single", vec![(dsts()?[0], start, w.bytes, None)], first_id, seed)),
        "incast" => Box::new(Incast::new(
            dsts()?[0],
            w.bytes.unwrap_or(0),
            w.rounds.unwrap_or(1),
            start,
            secs(w.interval_s.unwrap_or(0.0)),
            first_id,
            seed,
        )),
        "poisson" => Box::new(
            Poisson::new(
                dsts()?,
                sizes(&w.sizes).map_err(bad)?,
                w.load.unwrap_or(0.0),
                w.link_bps.unwrap_or(0) as f64,
                start,
                w.count,
                w.duration_s.map(|d| start + secs(d)),
                first_id,
                seed,
            )
            .map_err(bad)?,
        ),
        "incast-mix" => {
            let idx = w
                .dsts
                .iter()
                .position(|d| d == me)
                .ok_or_else(|| bad(format!("the sender's host {me} is not in the group")))?;
            Box::new(
                IncastMix::new(
                    dsts()?,
                    idx,
                    w.fan_in.unwrap_or(1) as usize,
                    w.bytes.unwrap_or(0),
                    w.load.unwrap_or(0.0),
                    w.link_bps.unwrap_or(0) as f64,
                    start,
                    w.count,
                    w.duration_s.map(|d| start + secs(d)),
                    first_id,
                    seed,
                    w.schedule_seed.unwrap_or(0),
                )
                .map_err(bad)?,
            )
        }
        "closed" => Box::new(
            ClosedLoop::new(
                dsts()?,
                sizes(&w.sizes).map_err(bad)?,
                w.concurrency.unwrap_or(1),
                w.think_s * 1e9,
                start,
                w.count,
                w.duration_s.map(|d| start + secs(d)),
                first_id,
                seed,
            )
            .map_err(bad)?,
        ),
        other => return Err(SimError::Plan(format!("unknown workload '{other}'"))),
    })
}

impl Agent {
    /// Builds an agent of the plan; `index` is its position on its host.
    pub fn new(
        spec: &AgentSpec,
        index: usize,
        my_ip: Ipv4Addr,
        addr: &dyn Fn(&str) -> Result<SocketAddr, SimError>,
        arm_dir: &Path,
        unix_offset: u64,
    ) -> Result<Agent, SimError> {
        let dir = arm_dir.join(spec.folder());
        let io = |e: std::io::Error| SimError::Output(format!("{}: {e}", dir.display()));
        match spec.role.as_str() {
            "collector" | "feed" => {
                let path = arm_dir.join("queue.csv");
                let mut csv = BufWriter::new(File::create(&path).map_err(io)?);
                writeln!(csv, "{}", Postcard::CSV_HEADER).map_err(io)?;
                Ok(Agent {
                    port: COLLECTOR_PORT,
                    role: Role::Collector {
                        csv,
                        path: path.display().to_string(),
                        stats: CollectorStats::default(),
                        feed: spec.role == "feed",
                    },
                    folder: spec.folder().to_string(),
                    tos: 0,
                    scheduled: None,
                })
            }
            "receiver" => Ok(Agent {
                port: DATA_PORT,
                role: Role::Receiver {
                    recv: Receiver::new(receiver_config(spec)),
                    log: ReceiverLog::create(&dir, unix_offset).map_err(|e| SimError::Output(e.to_string()))?,
                    flows: 0,
                    ack: vec![0u8; wire::MAX_ACK_LEN],
                },
                folder: spec.folder().to_string(),
                tos: 0,
                scheduled: None,
            }),
            "sender" => {
                let w = spec.workload.as_ref().ok_or_else(|| SimError::Plan(format!("sender on {} has no workload", spec.host)))?;
                let name = algorithm(spec)?;
                let params: Vec<(String, String)> =
                    spec.cc_params.iter().map(|(k, v)| (k.clone(), cc_param(v))).collect();
                // An algorithm that reads INT sends a version-2 shim, whose
                // larger hop records leave less room for payload.
                let mss = wire::max_payload_1500(cc::reads_int(&name));
                let path = cc::PathInfo {
                    mss: mss as u32,
                    line_rate_bps: spec.line_rate_bps,
                    init_cwnd_pkts: spec.init_cwnd_pkts.unwrap_or(10),
                };
                // An unknown algorithm or parameter fails here, before time starts.
                cc::by_name(&name, &params, &path).map_err(|e| SimError::Plan(format!("agent on {}: {e}", spec.host)))?;
                let make = move |f: &traffic::FlowSpec| cc::for_flow(&name, &params, &path, f.seed).map_err(|e| e.to_string());
                let port = SENDER_PORT_BASE + index as u16;
                let bin_ns = if spec.bin_ms > 0.0 { (spec.bin_ms * 1e6) as u64 } else { BIN_NS };
                let logger = FlowLogger::create(&dir, bin_ns, spec.rtt_every.max(1), false)
                    .map_err(|e| SimError::Output(e.to_string()))?;
                let label = match spec.datapath.as_str() {
                    "kernel" => format!("{} (kernel TCP modelled by p4cc's transport)", spec.cc.clone().unwrap_or_default()),
                    _ => spec.cc.clone().unwrap_or_default(),
                };
                let opts = SenderStackOptions {
                    sender: SenderConfig { mss, ..SenderConfig::default() },
                    ecn: spec.ecn,
                    cc_label: label,
                    max_burst: 16,
                    datapath: if spec.datapath == "kernel" { "sim-tcp-model".into() } else { "sim-udp".into() },
                    nic_rate_bps: spec.nic_rate_bps,
                };
                let src = SocketAddrV4::new(my_ip, port).to_string();
                let src2 = src.clone();
                let stack = SenderStack::new(
                    opts,
                    workload(w, &spec.host, addr, spec.flow_id_base, spec.seed)?,
                    Box::new(make),
                    logger,
                    unix_offset,
                    src,
                    Box::new(move |_| src2.clone()),
                );
                Ok(Agent {
                    port,
                    role: Role::Sender(Box::new(stack)),
                    folder: spec.folder().to_string(),
                    tos: if spec.ecn { TOS_ECT0 } else { 0 },
                    scheduled: None,
                })
            }
            other => Err(SimError::Plan(format!("agent on {}: unknown role '{other}'", spec.host))),
        }
    }

    /// Runs the agent at `now`: starts flows, fires timers, sends what it
    /// may. Returns when it next wants to run.
    pub fn poll(&mut self, now: u64, out: &mut Outgoing) -> Result<Option<u64>, SimError> {
        let err = |e: datapath::DatapathError| SimError::Output(e.to_string());
        match &mut self.role {
            Role::Sender(stack) => {
                stack.start_flows(now).map_err(err)?;
                stack.on_timers(now);
                let mut sink = Outbox { out, open: None, from_port: self.port, tos: self.tos, now };
                // Keep sending while the windows and pacers allow, as the
                // socket loop does before it sleeps.
                while stack.transmit(&|| now, &mut sink).map_err(err)? {}
                stack.reap(now).map_err(err)?;
                Ok(stack.next_wakeup())
            }
            Role::Receiver { recv, log, flows, ack } => {
                let mut next = recv.next_timer(now);
                if next <= now {
                    let port = self.port;
                    recv.poll_timers(now, ack, |to, b| {
                        if let SocketAddr::V4(dst) = to {
                            out.push(port, dst, 0, b);
                        }
                    });
                    next = recv.next_timer(now);
                }
                for r in recv.take_finished() {
                    log.flow(&r).map_err(err)?;
                    *flows += 1;
                }
                Ok(Some(next))
            }
            Role::Collector { .. } => Ok(None),
        }
    }

    /// A datagram for this agent arrived at `now` (`unix` is its unix time).
    pub fn on_datagram(
        &mut self,
        now: u64,
        unix: u64,
        from: SocketAddrV4,
        tos: u8,
        payload: &[u8],
        out: &mut Outgoing,
    ) -> Result<(), SimError> {
        match &mut self.role {
            Role::Sender(stack) => stack.on_datagram(now, payload, from).map_err(|e| SimError::Output(e.to_string())),
            Role::Receiver { recv, ack, .. } => {
                if let Some(a) = recv.on_datagram(now, SocketAddr::V4(from), Some(tos), payload, ack) {
                    if let SocketAddr::V4(dst) = a.to {
                        out.push(self.port, dst, 0, &ack[..a.len]);
                    }
                }
                Ok(())
            }
            Role::Collector { csv, path, stats, feed } => {
                let pc = handle_datagram(payload, unix, csv, stats).map_err(|e| SimError::Output(format!("{path}: {e}")))?;
                if let Some((dst, bytes)) = pc.filter(|_| *feed).as_ref().and_then(telemetry::feed::feed_for) {
                    stats.fed += 1;
                    out.push(self.port, dst, 0, &bytes);
                }
                Ok(())
            }
        }
    }

    /// The run is over: running flows are interrupted and every file written.
    pub fn finish(self, now: u64, dir: &Path) -> Result<serde_json::Value, SimError> {
        let err = |e: datapath::DatapathError| SimError::Output(e.to_string());
        match self.role {
            Role::Sender(mut stack) => {
                stack.interrupt(now, &mut |_, _| {}).map_err(err)?;
                let rep = stack.finish(now).map_err(err)?;
                let json = rep.to_json();
                let p = dir.join(&self.folder).join("sender_summary.json");
                std::fs::write(&p, format!("{json}\n")).map_err(|e| SimError::Output(format!("{}: {e}", p.display())))?;
                Ok(serde_json::json!({"role": "sender", "flows_started": rep.flows_started, "flows_complete": rep.flows_complete}))
            }
            Role::Receiver { mut recv, mut log, mut flows, .. } => {
                recv.close_all();
                for r in recv.take_finished() {
                    log.flow(&r).map_err(err)?;
                    flows += 1;
                }
                log.finish(&recv.stats, 0, flows).map_err(err)?;
                Ok(serde_json::json!({"role": "receiver", "flows": flows}))
            }
            Role::Collector { mut csv, path, stats, feed } => {
                csv.flush().map_err(|e| SimError::Output(format!("{path}: {e}")))?;
                Ok(serde_json::json!({"role": if feed { "feed" } else { "collector" }, "postcards": stats.postcards,
                                      "malformed": stats.malformed, "fed": stats.fed}))
            }
        }
    }

    pub fn is_sender_done(&self) -> bool {
        match &self.role {
            Role::Sender(s) => s.is_finished(),
            _ => true,
        }
    }
}

/// Agents by host, in plan order.
pub fn by_host(agents: &[AgentSpec]) -> BTreeMap<String, Vec<&AgentSpec>> {
    let mut m: BTreeMap<String, Vec<&AgentSpec>> = BTreeMap::new();
    for a in agents {
        m.entry(a.host.clone()).or_default().push(a);
    }
    m
}
