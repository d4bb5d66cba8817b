//! INT and CNP congestion control through the real transport, socket-free
//! and in nanosecond virtual time: `FlowSender`s with algorithms from the
//! `cc` registry, one `Receiver`, and between them one switch port: a FIFO
//! that serialises packets at its line rate, ECN-marks arrivals to a queue
//! of at least K packets (a step, DCQCN's switch with Kmin = Kmax), and
//! as each packet leaves pushes the hop record the P4 program writes
//! (docs/wire-format.md): a version-2 INT record into a version-2 shim
//! (queue bytes behind the packet, the port's wrapping transmitted-bytes
//! counter, its clock in ns and its rate), a version-1 record otherwise.
//! What the algorithms get is only what crossed the wire: shim, receiver,
//! ACK codec, sender.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::SocketAddr;

use cc::PathInfo;
use telemetry::shim::{HopRecord, IntHopRecord};
use telemetry::Shim;
use transport::receiver::{Receiver, ReceiverConfig, ReceiverStats};
use transport::sender::{FlowSender, FlowSize, SenderConfig, ShimChoice, Transmit};
use transport::wire::{self, Ack, IP_UDP_OVERHEAD};

const GBPS: u64 = 1_000_000_000;
const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// The switch port every flow crosses.
struct Port {
    rate_bps: u64,
    buffer_pkts: usize,
    /// ECN-mark (CE) packets that arrive to at least this many queued.
    mark_k: Option<usize>,
    /// Propagation delay sender -> switch, switch -> receiver, and
    /// receiver -> sender (the ACK path, uncongested) is twice this.
    one_way_ns: u64,
}

/// The port's transmitted-bytes counter starts this close to 2^32, so it
/// wraps early in every run.
const TX_COUNTER_START: u32 = u32::MAX - 200_000;
const SWITCH_ID: u16 = 3;
const EGRESS_PORT: u16 = 2;

struct Queued {
    flow: usize,
    bytes: Vec<u8>,
    tos: u8,
    arrived: u64,
    depth: u32,
    wire: u64,
}

enum Ev {
    /// A data packet reaches the switch.
    Arrive { flow: usize, bytes: Vec<u8> },
    /// The head of the FIFO has been serialised.
    Depart,
    /// A data packet reaches the receiver.
    Deliver { flow: usize, bytes: Vec<u8>, tos: u8 },
    /// An ACK reaches its sender.
    Ack { flow: usize, bytes: Vec<u8> },
}

/// Pending events in time order (ties in the order they were made).
#[derive(Default)]
struct Events {
    heap: BinaryHeap<Reverse<(u64, u64, usize)>>,
    evs: Vec<Option<Ev>>,
    free: Vec<usize>,
    ctr: u64,
}

impl Events {
    fn push(&mut self, t: u64, e: Ev) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.evs[i] = Some(e);
                i
            }
            None => {
                self.evs.push(Some(e));
                self.evs.len() - 1
            }
        };
        self.ctr += 1;
        self.heap.push(Reverse((t, self.ctr, slot)));
    }
    fn next_time(&self) -> u64 {
        self.heap.peek().map_or(u64::MAX, |Reverse((t, _, _))| *t)
    }
    /// The next event due by `now`.
    fn pop_due(&mut self, now: u64) -> Option<Ev> {
        loop {
            let Reverse((t, _, slot)) = *self.heap.peek()?;
            if t > now {
                return None;
            }
            self.heap.pop();
            self.free.push(slot);
            if let Some(e) = self.evs[slot].take() {
                return Some(e);
            }
        }
    }
}

#[derive(Default, Debug)]
struct Outcome {
    /// Goodput of each flow over [warmup, end), bits/s.
    goodput_bps: Vec<f64>,
    /// Queue (packets) found by arrivals after the warmup.
    mean_queue: f64,
    max_queue: usize,
    drops: u64,
    ce_marks: u64,
    int_records: u64,
    v1_records: u64,
    recv: ReceiverStats,
    /// Per flow: CNPs the sender handed to its algorithm.
    cnps: Vec<u64>,
    state: Vec<std::collections::BTreeMap<&'static str, f64>>,
}

impl Outcome {
    fn total_bps(&self) -> f64 {
        self.goodput_bps.iter().sum()
    }
}

fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 99, 2, 1 + i as u8], 40000 + i as u16))
}

/// Runs `senders` through `port` until `end_ns`; goodput and queue are
/// measured from `warmup_ns`.
fn simulate(mut senders: Vec<FlowSender>, port: &Port, rcfg: ReceiverConfig, warmup_ns: u64, end_ns: u64) -> Outcome {
    let mut recv = Receiver::new(rcfg);
    let mut q = Events::default();
    let mut fifo: VecDeque<Queued> = VecDeque::new();
    let mut queued_bytes = 0u64;
    let mut busy_until = 0u64;
    let mut tx_bytes = TX_COUNTER_START;
    let mut buf = vec![0u8; 2048];
    let mut ackbuf = vec![0u8; wire::MAX_ACK_LEN];
    let mut out = Outcome { goodput_bps: vec![0.0; senders.len()], ..Default::default() };
    let mut acked_at_warmup: Option<Vec<u64>> = None;
    let (mut q_sum, mut q_n) = (0u64, 0u64);
    let mut now = 0u64;
    loop {
        if acked_at_warmup.is_none() && now >= warmup_ns {
            acked_at_warmup = Some(senders.iter().map(|s| s.acked_bytes()).collect());
        }
        let mut wake = u64::MAX;
        for (i, s) in senders.iter_mut().enumerate() {
            loop {
                let t = s.poll_transmit(now, &mut buf);
                let Transmit::Packet(info) = t else {
                    if let Some(w) = s.wakeup(&t) {
                        wake = wake.min(w);
                    }
                    break;
                };
                q.push(now + port.one_way_ns, Ev::Arrive { flow: i, bytes: buf[..info.len].to_vec() });
            }
        }
        let next = q.next_time().min(wake).min(recv.next_timer(now)).max(now);
        if next >= end_ns {
            break;
        }
        if acked_at_warmup.is_none() && next > warmup_ns {
            now = warmup_ns;
            continue;
        }
        now = next;
        while let Some(ev) = q.pop_due(now) {
            match ev {
                Ev::Arrive { flow, bytes } => {
                    let depth = fifo.len();
                    if now >= warmup_ns {
                        q_sum += depth as u64;
                        q_n += 1;
                        out.max_queue = out.max_queue.max(depth);
                    }
                    if depth >= port.buffer_pkts {
                        out.drops += 1;
                        continue;
                    }
                    let ce = port.mark_k.is_some_and(|k| depth >= k);
                    out.ce_marks += u64::from(ce);
                    // the record the switch adds goes out on the wire too
                    let rec = if bytes[0] == 2 { 32 } else { 20 };
                    let wire = (bytes.len() + rec + IP_UDP_OVERHEAD) as u64;
                    let dep = busy_until.max(now) + wire * 8 * 1_000_000_000 / port.rate_bps;
                    if fifo.is_empty() {
                        q.push(dep, Ev::Depart);
                    }
                    busy_until = dep;
                    queued_bytes += wire;
                    fifo.push_back(Queued { flow, bytes, tos: if ce { 3 } else { 2 }, arrived: now, depth: depth as u32, wire });
                }
                Ev::Depart => {
                    let Some(p) = fifo.pop_front() else { continue };
                    queued_bytes -= p.wire;
                    tx_bytes = tx_bytes.wrapping_add(p.wire as u32);
                    if let Some(n) = fifo.front() {
                        let start = now;
                        q.push(start + n.wire * 8 * 1_000_000_000 / port.rate_bps, Ev::Depart);
                    }
                    let Ok((mut shim, used)) = Shim::parse(&p.bytes) else { continue };
                    if shim.is_int() {
                        out.int_records += 1;
                        shim.push_int_hop(IntHopRecord {
                            switch_id: SWITCH_ID,
                            egress_port: EGRESS_PORT,
                            enq_qdepth: p.depth,
                            deq_timedelta_ns: now - p.arrived,
                            egress_ts_ns: now,
                            qlen_bytes: queued_bytes as u32,
                            tx_bytes,
                            rate_kbps: (port.rate_bps / 1000) as u32,
                        });
                    } else {
                        out.v1_records += 1;
                        shim.push_hop(HopRecord {
                            switch_id: SWITCH_ID,
                            egress_port: EGRESS_PORT,
                            enq_qdepth: p.depth,
                            deq_timedelta_us: ((now - p.arrived) / 1000) as u32,
                            egress_ts_us: now / 1000,
                        });
                    }
                    let mut bytes = vec![0u8; shim.len()];
                    shim.write(&mut bytes);
                    bytes.extend_from_slice(&p.bytes[used..]);
                    q.push(now + port.one_way_ns, Ev::Deliver { flow: p.flow, bytes, tos: p.tos });
                }
                Ev::Deliver { flow, bytes, tos } => {
                    if let Some(a) = recv.on_datagram(now, addr(flow), Some(tos), &bytes, &mut ackbuf) {
                        q.push(now + 2 * port.one_way_ns, Ev::Ack { flow, bytes: ackbuf[..a.len].to_vec() });
                    }
                }
                Ev::Ack { flow, bytes } => {
                    let a = Ack::parse(&bytes).expect("the receiver writes valid ACKs");
                    senders[flow].on_ack(now, &a);
                }
            }
        }
        for s in senders.iter_mut() {
            if s.next_timer().is_some_and(|t| t <= now) {
                s.on_timer(now);
            }
        }
        let mut late = Vec::new();
        recv.poll_timers(now, &mut ackbuf, |to, b| late.push((to, b.to_vec())));
        for (to, b) in late {
            let flow = (0..senders.len()).find(|&i| addr(i) == to).expect("a known sender");
            q.push(now + 2 * port.one_way_ns, Ev::Ack { flow, bytes: b });
        }
        recv.take_finished();
    }
    let base = acked_at_warmup.unwrap_or_else(|| vec![0; senders.len()]);
    let secs = (end_ns - warmup_ns) as f64 / 1e9;
    for (i, s) in senders.iter().enumerate() {
        out.goodput_bps[i] = (s.acked_bytes() - base[i]) as f64 * 8.0 / secs;
        assert_eq!(s.stats.bad_acks, 0);
    }
    out.mean_queue = q_sum as f64 / q_n.max(1) as f64;
    out.cnps = senders.iter().map(|s| s.stats.cnps).collect();
    out.state = senders.iter().map(|s| s.cc().state()).collect();
    out.recv = recv.stats.clone();
    out
}

fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

/// `n` long flows of algorithm `name`, each behind a NIC of `nic_bps`.
fn flows(n: usize, name: &str, params: &[(&str, &str)], nic_bps: u64, cfg: &SenderConfig) -> Vec<FlowSender> {
    let mss = wire::max_payload_1500(cc::reads_int(name) && cfg.shim != ShimChoice::V1);
    let path = PathInfo { mss: mss as u32, line_rate_bps: Some(nic_bps), init_cwnd_pkts: 10 };
    (0..n)
        .map(|i| {
            let algo = cc::for_flow(name, &kv(params), &path, 7 + i as u64).expect("known algorithm");
            FlowSender::new(1 + i as u32, 100 + i as u64, FlowSize::Unbounded, algo, SenderConfig { mss, ..cfg.clone() }, 0)
        })
        .collect()
}

fn sender_cfg() -> SenderConfig {
    SenderConfig { min_rto_ns: 5 * MS, init_rto_ns: 10 * MS, ..Default::default() }
}

/// Two senders, each with a 10 Gb/s NIC, into one 10 Gb/s port (2:1), 10 µs
/// each way: a base RTT of about 32 µs with the packets' transmission.
fn two_to_one(mark_k: Option<usize>) -> Port {
    Port { rate_bps: 10 * GBPS, buffer_pkts: 1000, mark_k, one_way_ns: 10 * US }
}

#[test]
fn hpcc_holds_the_queue_near_zero_from_echoed_int_records() {
    let port = two_to_one(None);
    let params = [("base_rtt_us", "32")];
    let s = flows(2, "hpcc", &params, 10 * GBPS, &sender_cfg());
    assert!(s.iter().all(|f| f.shim_version() == 2 && f.mss() == 1288), "HPCC sends version-2 shims, 1288-byte payloads");
    let o = simulate(s, &port, ReceiverConfig::default(), 10 * MS, 50 * MS);
    eprintln!("hpcc: {:.2} Gb/s {:?} queue mean {:.2} max {} drops {} {:?}", o.total_bps() / 1e9, o.goodput_bps, o.mean_queue, o.max_queue, o.drops, o.state);
    assert!(o.int_records > 0 && o.v1_records == 0);
    // HPCC's design point: η = 95 % of the port (goodput counts payload
    // only: 1288 of each 1404-byte packet) with next to no queue.
    let payload_share = 1288.0 / (1288.0 + 8.0 + 32.0 + 48.0 + 28.0);
    assert!(o.total_bps() > 0.85 * payload_share * port.rate_bps as f64, "{o:?}");
    assert!(o.mean_queue < 3.0 && o.max_queue < 30 && o.drops == 0, "{o:?}");
    // Both flows deliver. (Not equal shares: HPCC's multiplicative step
    // keeps the flows' ratio, and only W_AI, 16 bytes per RTT here, evens
    // them out, over far longer than this run.)
    assert!(o.goodput_bps.iter().all(|&g| g > 0.05 * o.total_bps()), "{o:?}");

    assert!(o.state.iter().all(|st| st["acks_without_int"] == 0.0 && st["wc_commits"] > 100.0), "{:?}", o.state);

    // The same flows with version-1 shims: HPCC hears nothing and keeps
    // its initial window, B_nic·T each, so twice the port's BDP stands:
    // a queue of a whole window.
    let cfg = SenderConfig { shim: ShimChoice::V1, ..sender_cfg() };
    let s = flows(2, "hpcc", &params, 10 * GBPS, &cfg);
    let o = simulate(s, &port, ReceiverConfig::default(), 10 * MS, 20 * MS);
    eprintln!("hpcc without INT: queue mean {:.1} max {} drops {}", o.mean_queue, o.max_queue, o.drops);
    assert!(o.v1_records > 0 && o.int_records == 0);
    assert!(o.state.iter().all(|st| st["wc_commits"] == 0.0), "{:?}", o.state);
    assert!(o.mean_queue > 15.0, "{o:?}");
}

#[test]
fn powertcp_runs_on_the_same_records() {
    let port = two_to_one(None);
    let s = flows(2, "powertcp", &[("base_rtt_us", "32")], 10 * GBPS, &sender_cfg());
    assert!(s.iter().all(|f| f.shim_version() == 2));
    let o = simulate(s, &port, ReceiverConfig::default(), 10 * MS, 40 * MS);
    eprintln!("powertcp: {:.2} Gb/s {:?} queue mean {:.2} max {} drops {} {:?}", o.total_bps() / 1e9, o.goodput_bps, o.mean_queue, o.max_queue, o.drops, o.state);
    assert!(o.total_bps() > 0.85 * 1288.0 / 1404.0 * port.rate_bps as f64, "{o:?}");
    assert!(o.max_queue < 100 && o.drops == 0, "{o:?}");
}

#[test]
fn dcqcn_is_driven_by_cnps_from_ce_marks() {
    let port = two_to_one(Some(20));
    let s = flows(2, "dcqcn", &[], 10 * GBPS, &sender_cfg());
    assert!(s.iter().all(|f| f.shim_version() == 1 && f.mss() == 1336));
    let o = simulate(s, &port, ReceiverConfig::default(), 10 * MS, 50 * MS);
    eprintln!(
        "dcqcn: {:.2} Gb/s {:?} queue mean {:.2} max {} drops {} ce {} cnps {:?} recv {:?} {:?}",
        o.total_bps() / 1e9,
        o.goodput_bps,
        o.mean_queue,
        o.max_queue,
        o.drops,
        o.ce_marks,
        o.cnps,
        o.recv.cnps,
        o.state
    );
    // Every CNP the receiver sent reached its sender's algorithm (no ACK
    // is lost here), at most one per flow per 50 µs.
    assert_eq!(o.cnps.iter().sum::<u64>(), o.recv.cnps);
    for (i, &n) in o.cnps.iter().enumerate() {
        assert!(n > 10 && n <= 50 * MS / (50 * US) + 1, "flow {i}: {n} CNPs");
        assert_eq!(o.state[i]["cnps"], n as f64, "flow {i}: every CNP reached the algorithm");
    }
    assert!(o.recv.cnps < o.ce_marks, "rate-limited: fewer CNPs than marks");
    // The queue is held near K = 20 and the port stays busy.
    assert!(o.total_bps() > 0.85 * 1336.0 / 1420.0 * port.rate_bps as f64, "{o:?}");
    assert!(o.max_queue < 100 && o.drops == 0, "{o:?}");

    // Without the notification point's CNPs (an interval longer than the
    // run) DCQCN never cuts: the buffer fills.
    let rcfg = ReceiverConfig { cnp_interval_ns: u64::MAX, ..Default::default() };
    let s = flows(2, "dcqcn", &[], 10 * GBPS, &sender_cfg());
    let o = simulate(s, &port, rcfg, 5 * MS, 10 * MS);
    eprintln!("dcqcn, one CNP per flow only: queue mean {:.1} max {} drops {} cnps {:?}", o.mean_queue, o.max_queue, o.drops, o.cnps);
    assert!(o.cnps.iter().all(|&n| n == 1), "{:?}", o.cnps);
    assert!(o.max_queue >= port.buffer_pkts - 1, "{o:?}");
}
