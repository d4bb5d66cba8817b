//! PCC on a shared bottleneck, socket-free and in nanosecond virtual time:
//! real `FlowSender`s with algorithms from the real `cc` registry, one real
//! `Receiver`, and between them a drop-tail FIFO that serialises packets at
//! the link rate, optional random loss after the queue, and per-flow
//! propagation delays. Packets reach the FIFO as events in arrival order,
//! so flows with different RTTs share it as they would a real queue.
//! Targets are the PCC papers' numbers; a failing target is a finding, not
//! a threshold to loosen.
//!
//! The long runs are `#[ignore]`d; run them with
//! `cargo test --release -p p4cc-transport --test pcc_sim -- --ignored --nocapture`
//! (about 70 s on 2 cores).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::SocketAddr;

use cc::PathInfo;
use transport::receiver::{Receiver, ReceiverConfig};
use transport::sender::{FlowSender, FlowSize, SenderConfig, Transmit};
use transport::wire::{self, Ack, IP_UDP_OVERHEAD};

/// One flow: algorithm, its round-trip propagation delay and its lifetime.
#[derive(Clone)]
struct FlowSpec {
    cc: &'static str,
    rtt_ns: u64,
    start_ns: u64,
    stop_ns: u64,
}

struct Link {
    rate_bps: u64,
    buffer_pkts: usize,
    /// Random loss after the queue (a lossy link), per packet.
    loss: f64,
}

struct Run {
    /// Bytes delivered to the receiver per flow per bin.
    bins: Vec<Vec<u64>>,
    bin_ns: u64,
    drops: u64,
    /// Queue length (packets) seen by each arriving packet: sum and count.
    queue_sum: u64,
    arrivals: u64,
}

impl Run {
    /// Mean throughput of `flow` over [from, to) in bit/s.
    fn mbps(&self, flow: usize, from_ns: u64, to_ns: u64) -> f64 {
        let (a, b) = ((from_ns / self.bin_ns) as usize, (to_ns / self.bin_ns) as usize);
        let bytes: u64 = self.bins[flow][a.min(self.bins[flow].len())..b.min(self.bins[flow].len())].iter().sum();
        bytes as f64 * 8.0 / ((to_ns - from_ns) as f64 / 1e9) / 1e6
    }
    fn mean_queue(&self) -> f64 {
        self.queue_sum as f64 / self.arrivals.max(1) as f64
    }
}

/// Jain's fairness index of `xs`.
fn jain(xs: &[f64]) -> f64 {
    let s: f64 = xs.iter().sum();
    let q: f64 = xs.iter().map(|x| x * x).sum();
    if q == 0.0 {
        1.0
    } else {
        s * s / (xs.len() as f64 * q)
    }
}

struct Rng(u64);
impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

enum Ev {
    /// Data reaches the bottleneck queue.
    Arrive { flow: usize, bytes: Vec<u8> },
    /// Data reaches the receiver (after queue, link and propagation).
    Deliver { flow: usize, bytes: Vec<u8> },
    /// An ACK reaches its sender.
    Ack { flow: usize, bytes: Vec<u8> },
}

fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 99, 1, 1 + i as u8], 40000 + i as u16))
}

/// Runs `flows` over `link` until `end_ns`. Half of each flow's RTT is
/// before the bottleneck, half on the (uncongested) way back.
fn simulate(flows: &[FlowSpec], link: &Link, params: &[(String, String)], seed: u64, end_ns: u64) -> Run {
    let bin_ns = 100_000_000;
    let mut run = Run { bins: vec![vec![0; (end_ns / bin_ns) as usize + 1]; flows.len()], bin_ns, drops: 0, queue_sum: 0, arrivals: 0 };
    let cfg = SenderConfig::default();
    let path = PathInfo { mss: cfg.mss as u32, line_rate_bps: Some(1_000_000_000), init_cwnd_pkts: 10 };
    let mut senders: Vec<Option<FlowSender>> = flows.iter().map(|_| None).collect();
    let mut recv = Receiver::new(ReceiverConfig::default());
    let mut rng = Rng(seed | 1);
    let mut heap: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
    let mut evs: Vec<Option<Ev>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut ctr = 0u64;
    // Departure times of the packets in the FIFO (head = in service).
    let mut fifo: VecDeque<u64> = VecDeque::new();
    let mut buf = vec![0u8; 2048];
    let mut ackbuf = vec![0u8; wire::MAX_ACK_LEN];
    let mut now = 0u64;
    let push = |heap: &mut BinaryHeap<Reverse<(u64, u64, usize)>>, evs: &mut Vec<Option<Ev>>, free: &mut Vec<usize>, ctr: &mut u64, t: u64, e: Ev| {
        let slot = match free.pop() {
            Some(i) => {
                evs[i] = Some(e);
                i
            }
            None => {
                evs.push(Some(e));
                evs.len() - 1
            }
        };
        *ctr += 1;
        heap.push(Reverse((t, *ctr, slot)));
    };
    let mut freed: Vec<usize> = Vec::new();
    loop {
        // Flows start and stop.
        for (i, f) in flows.iter().enumerate() {
            if senders[i].is_none() && now >= f.start_ns && now < f.stop_ns {
                let algo = cc::by_name(f.cc, params, &path).expect("known algorithm");
                senders[i] = Some(FlowSender::new(1 + i as u32, seed + i as u64, FlowSize::Unbounded, algo, cfg.clone(), now));
            }
            if now >= f.stop_ns {
                if let Some(s) = senders[i].as_mut() {
                    s.stop(now);
                }
            }
        }
        // Senders transmit into the bottleneck.
        let mut wake = u64::MAX;
        for (i, s) in senders.iter_mut().enumerate() {
            let Some(s) = s.as_mut() else { continue };
            loop {
                let t = s.poll_transmit(now, &mut buf);
                let Transmit::Packet(info) = t else {
                    if let Some(w) = s.wakeup(&t) {
                        wake = wake.min(w);
                    }
                    break;
                };
                // It reaches the queue half an RTT later. Flows with
                // different RTTs reach it out of sending order, so the
                // queue handles arrivals as events in arrival order.
                let arrive = now + flows[i].rtt_ns / 2;
                push(&mut heap, &mut evs, &mut free, &mut ctr, arrive, Ev::Arrive { flow: i, bytes: buf[..info.len].to_vec() });
            }
        }
        let horizon = heap.peek().map_or(u64::MAX, |Reverse((t, _, _))| *t);
        let starts = flows.iter().enumerate().filter(|(i, f)| senders[*i].is_none() && f.start_ns > now).map(|(_, f)| f.start_ns);
        let stops = flows.iter().filter(|f| f.stop_ns > now).map(|f| f.stop_ns);
        let next = horizon.min(wake).min(starts.min().unwrap_or(u64::MAX)).min(stops.min().unwrap_or(u64::MAX)).max(now);
        if next >= end_ns {
            break;
        }
        now = next;
        while let Some(Reverse((t, _, slot))) = heap.peek().copied() {
            if t > now {
                break;
            }
            heap.pop();
            freed.push(slot);
            match evs[slot].take() {
                Some(Ev::Arrive { flow, bytes }) => {
                    while fifo.front().is_some_and(|&d| d <= now) {
                        fifo.pop_front();
                    }
                    run.queue_sum += fifo.len() as u64;
                    run.arrivals += 1;
                    if fifo.len() >= link.buffer_pkts {
                        run.drops += 1;
                        continue;
                    }
                    let wire_bits = ((bytes.len() + IP_UDP_OVERHEAD) * 8) as u64;
                    let start = fifo.back().copied().unwrap_or(0).max(now);
                    let depart = start + wire_bits * 1_000_000_000 / link.rate_bps;
                    fifo.push_back(depart);
                    if link.loss > 0.0 && rng.unit() < link.loss {
                        continue;
                    }
                    push(&mut heap, &mut evs, &mut free, &mut ctr, depart, Ev::Deliver { flow, bytes });
                }
                Some(Ev::Deliver { flow, bytes }) => {
                    let len = bytes.len();
                    if let Some(a) = recv.on_datagram(now, addr(flow), Some(2), &bytes, &mut ackbuf) {
                        run.bins[flow][(now / bin_ns) as usize] += len as u64;
                        let back = now + flows[flow].rtt_ns / 2;
                        let b = ackbuf[..a.len].to_vec();
                        push(&mut heap, &mut evs, &mut free, &mut ctr, back, Ev::Ack { flow, bytes: b });
                    }
                }
                Some(Ev::Ack { flow, bytes }) => {
                    if let (Some(s), Ok(a)) = (senders[flow].as_mut(), Ack::parse(&bytes)) {
                        s.on_ack(now, &a);
                    }
                }
                None => {}
            }
        }
        free.extend(freed.drain(..));
        for s in senders.iter_mut().flatten() {
            if s.next_timer().is_some_and(|t| t <= now) {
                s.on_timer(now);
            }
        }
        recv.poll_timers(now, &mut ackbuf, |_, _| {});
        recv.take_finished();
    }
    run
}

const MBPS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

/// 4 flows join one every `phase` and leave in reverse order (PCC Fig 12:
/// 100 Mbit/s, 30 ms, 250-packet buffer). Returns Jain's index of each
/// multi-flow phase over its last two thirds (the paper's phases are 500 s
/// and its windows 100 s; ours are shorter, so a newcomer's first third is
/// left out), and per-phase throughputs for the report.
fn convergence(cc: &'static str, phase: u64) -> Vec<(usize, f64, Vec<f64>)> {
    let flows: Vec<FlowSpec> =
        (0..4).map(|i| FlowSpec { cc, rtt_ns: 30 * MS, start_ns: i * phase, stop_ns: (7 - i) * phase }).collect();
    let link = Link { rate_bps: 100 * MBPS, buffer_pkts: 250, loss: 0.0 };
    let run = simulate(&flows, &link, &[], 1, 7 * phase);
    let mut out = Vec::new();
    for p in 0..7u64 {
        let active: Vec<usize> = (0..4).filter(|&i| flows[i].start_ns <= p * phase && flows[i].stop_ns > p * phase).collect();
        let from = p * phase + phase / 3;
        let tputs: Vec<f64> = active.iter().map(|&i| run.mbps(i, from, (p + 1) * phase)).collect();
        out.push((active.len(), jain(&tputs), tputs));
    }
    eprintln!("{cc}: drops {} mean queue {:.1} pkts", run.drops, run.mean_queue());
    out
}

fn check_convergence(cc: &'static str, phase: u64) {
    let phases = convergence(cc, phase);
    for (p, (n, j, t)) in phases.iter().enumerate() {
        eprintln!("{cc} phase {p}: {n} flows, Jain {j:.3}, Mbit/s {t:.1?}");
    }
    // PCC paper (NSDI'15) Fig 12: Jain's index 0.98–0.99 in every window.
    for (p, (n, j, _)) in phases.iter().enumerate() {
        if *n > 1 {
            assert!(*j >= 0.98, "{cc}: phase {p} with {n} flows has Jain {j:.3} < 0.98 (PCC Fig 12)");
        }
    }
}

#[test]
#[ignore = "420 s of virtual time; run with --ignored"]
fn allegro_converges_fairly() {
    check_convergence("pcc-allegro", 60 * SEC);
}

#[test]
#[ignore = "420 s of virtual time; run with --ignored"]
fn vivace_converges_fairly() {
    check_convergence("pcc-vivace", 60 * SEC);
}

/// 10 ms and 100 ms flows share 100 Mbit/s, buffer = 1 BDP of the short
/// flow (PCC paper's RTT-fairness figure; PCC keeps the long flow's
/// relative throughput near 1, TCP far below).
fn rtt_fairness(cc: &'static str) -> f64 {
    let flows = [
        FlowSpec { cc, rtt_ns: 10 * MS, start_ns: 0, stop_ns: u64::MAX },
        FlowSpec { cc, rtt_ns: 100 * MS, start_ns: 0, stop_ns: u64::MAX },
    ];
    // 100 Mbit/s × 10 ms = 125 kB ≈ 83 packets of 1500 B.
    let link = Link { rate_bps: 100 * MBPS, buffer_pkts: 83, loss: 0.0 };
    let end = 100 * SEC;
    let run = simulate(&flows, &link, &[], 2, end);
    let (short, long) = (run.mbps(0, 20 * SEC, end), run.mbps(1, 20 * SEC, end));
    eprintln!("{cc} RTT fairness: 10 ms {short:.1} Mbit/s, 100 ms {long:.1} Mbit/s, ratio {:.2}", long / short);
    long / short
}

/// PCC's RTT-fairness figure: the 100 ms flow keeps ≥ 0.7 of the 10 ms
/// flow's throughput. The bound holds both ways: a starved short flow is
/// no fairer than a starved long one.
fn assert_rtt_fair(r: f64) {
    assert!((0.7..=1.0 / 0.7).contains(&r), "long/short {r:.2} outside [0.7, 1/0.7] (PCC RTT-fairness figure)");
}

#[test]
#[ignore = "100 s of virtual time; run with --ignored"]
fn allegro_rtt_fairness() {
    let r = rtt_fairness("pcc-allegro");
    assert_rtt_fair(r);
}

#[test]
#[ignore = "100 s of virtual time; run with --ignored"]
fn vivace_rtt_fairness() {
    let r = rtt_fairness("pcc-vivace");
    assert_rtt_fair(r);
}

/// One flow, 30 ms, 100 Mbit/s: mean throughput over [10 s, 30 s).
fn single(cc: &'static str, buffer_pkts: usize, loss: f64) -> f64 {
    let flows = [FlowSpec { cc, rtt_ns: 30 * MS, start_ns: 0, stop_ns: u64::MAX }];
    let link = Link { rate_bps: 100 * MBPS, buffer_pkts, loss };
    let run = simulate(&flows, &link, &[], 3, 30 * SEC);
    let t = run.mbps(0, 10 * SEC, 30 * SEC);
    eprintln!("{cc}: buffer {buffer_pkts} pkts, loss {loss}: {t:.1} Mbit/s, mean queue {:.1}", run.mean_queue());
    t
}

#[test]
fn allegro_fills_a_shallow_buffer_link() {
    // PCC Fig 7: ≥ 90 % of 100 Mbit/s with a 5-packet buffer.
    let t = single("pcc-allegro", 5, 0.0);
    assert!(t >= 90.0, "{t:.1} Mbit/s < 90 (PCC Fig 7)");
}

#[test]
fn vivace_fills_a_shallow_buffer_link() {
    let t = single("pcc-vivace", 5, 0.0);
    assert!(t >= 90.0, "{t:.1} Mbit/s < 90 (PCC Fig 7)");
}

#[test]
fn allegro_keeps_throughput_under_random_loss() {
    // PCC lossy-link figure: ≥ 80 % of 100 Mbit/s at 2 % random loss.
    let t = single("pcc-allegro", 250, 0.02);
    assert!(t >= 80.0, "{t:.1} Mbit/s < 80 at 2 % loss (PCC lossy-link figure)");
}

/// Was seed-sensitive (25.6–86.1 Mbit/s over seeds 3–6): start-up ended at
/// a few per cent of random loss, and at c = 11.35 the loss term's noise
/// decided the trials. With the NSDI-2018 branch's start-up allowance and
/// c = 1 up to 3 % loss (docs/algorithms.md, pcc-vivace, "Utilisation")
/// it gave 91.1–92.2 Mbit/s over seeds 1–5.
#[test]
fn vivace_keeps_throughput_under_random_loss() {
    let t = single("pcc-vivace", 250, 0.02);
    assert!(t >= 80.0, "{t:.1} Mbit/s < 80 at 2 % loss (PCC lossy-link figure)");
}
