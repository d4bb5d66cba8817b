//! Socket-free simulation of sender <-> network <-> receiver: injected loss
//! (data and ACKs), reordering (random extra delay), corruption, CE marks,
//! switches inserting telemetry, a receiver that vanishes. Every completed
//! flow must be delivered byte-exact (the receiver verifies every byte).

use cc::{AckSample, CongestionControl};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use telemetry::shim::HopRecord;
use telemetry::{DepthUnit, Shim};
use transport::receiver::{Receiver, ReceiverConfig, RecvStatus};
use transport::sender::{FailReason, FlowSender, FlowSize, FlowState, SenderConfig, Transmit};
use transport::wire::{self, Ack};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What the test CC saw.
#[derive(Default, Debug)]
struct Seen {
    acked: u64,
    ce: u64,
    losses: u32,
    rtos: u32,
    last_qdepth: Option<u32>,
    rtt_samples: u64,
}

struct FixedWindow {
    cwnd: u64,
    rate: Option<u64>,
    seen: Arc<Mutex<Seen>>,
}
impl FixedWindow {
    fn new(cwnd: u64) -> (Box<dyn CongestionControl>, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        (Box::new(FixedWindow { cwnd, rate: None, seen: seen.clone() }), seen)
    }
    fn rate(bps: u64) -> (Box<dyn CongestionControl>, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        (Box::new(FixedWindow { cwnd: 1 << 30, rate: Some(bps), seen: seen.clone() }), seen)
    }
}
impl CongestionControl for FixedWindow {
    fn name(&self) -> &'static str {
        "test-fixed"
    }
    fn on_ack(&mut self, s: &AckSample) {
        let mut g = self.seen.lock().unwrap();
        g.acked += s.acked_bytes;
        g.ce += s.ce_bytes;
        if s.path_qdepth_pkts.is_some() {
            g.last_qdepth = s.path_qdepth_pkts;
        }
        if s.rtt_ns.is_some() {
            g.rtt_samples += 1;
        }
    }
    fn on_loss(&mut self, _: u64, _: u64) {
        self.seen.lock().unwrap().losses += 1;
    }
    fn on_rto(&mut self, _: u64) {
        self.seen.lock().unwrap().rtos += 1;
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.cwnd)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        self.rate
    }
}

#[derive(Clone)]
struct Net {
    delay_ns: u64,
    jitter_ns: u64,
    data_loss: f64,
    ack_loss: f64,
    ce_prob: f64,
    corrupt_prob: f64,
    /// Switch hops inserting telemetry: (switch_id, depth, unit).
    hops: Vec<(u16, u32)>,
    unit: DepthUnit,
    /// The receiver disappears at this time.
    receiver_dies_ns: Option<u64>,
    /// Drop every data packet whose seq is >= this on first transmission.
    drop_tail_from: Option<u64>,
}

impl Default for Net {
    fn default() -> Self {
        Net {
            delay_ns: 50_000,
            jitter_ns: 0,
            data_loss: 0.0,
            ack_loss: 0.0,
            ce_prob: 0.0,
            corrupt_prob: 0.0,
            hops: vec![],
            unit: DepthUnit::Packets,
            receiver_dies_ns: None,
            drop_tail_from: None,
        }
    }
}

enum Ev {
    ToRecv { from: usize, bytes: Vec<u8>, tos: u8 },
    ToSend { to: usize, bytes: Vec<u8> },
}

struct Outcome {
    senders: Vec<FlowSender>,
    recv: Receiver,
    records: Vec<transport::RecvFlowRecord>,
    end_ns: u64,
    paced_gaps: Vec<(u64, u64)>,
}

fn addr(i: usize) -> SocketAddr {
    format!("10.99.0.{}:{}", 1 + i, 40000 + i).parse().unwrap()
}

fn switch_process(bytes: &mut Vec<u8>, net: &Net) {
    if net.hops.is_empty() {
        return;
    }
    let Ok((mut shim, used)) = Shim::parse(bytes) else { return };
    shim.depth_unit = net.unit;
    for &(id, depth) in &net.hops {
        shim.push_hop(HopRecord { switch_id: id, egress_port: 1, enq_qdepth: depth, deq_timedelta_us: 3, egress_ts_us: 99 });
    }
    let mut out = vec![0u8; shim.len()];
    shim.write(&mut out);
    out.extend_from_slice(&bytes[used..]);
    *bytes = out;
}

fn simulate(mut senders: Vec<FlowSender>, net: Net, rcfg: ReceiverConfig, seed: u64, max_ns: u64) -> Outcome {
    let mut rng = Rng(seed | 1);
    let mut recv = Receiver::new(rcfg);
    let mut heap: BinaryHeap<Reverse<(u64, u64, usize)>> = BinaryHeap::new();
    let mut evs: Vec<Option<Ev>> = Vec::new();
    let mut ctr = 0u64;
    let mut now = 0u64;
    let mut buf = vec![0u8; 2048];
    let mut ackbuf = vec![0u8; wire::MAX_ACK_LEN];
    let mut records = Vec::new();
    let mut last_tx: Vec<Option<u64>> = vec![None; senders.len()];
    let mut paced_gaps = Vec::new();
    let mut first_tx_seen = std::collections::HashSet::new();
    let push = |heap: &mut BinaryHeap<Reverse<(u64, u64, usize)>>, evs: &mut Vec<Option<Ev>>, ctr: &mut u64, t: u64, e: Ev| {
        evs.push(Some(e));
        *ctr += 1;
        heap.push(Reverse((t, *ctr, evs.len() - 1)));
    };
    loop {
        // senders transmit
        let mut wake = u64::MAX;
        for (i, s) in senders.iter_mut().enumerate() {
            loop {
                let t = s.poll_transmit(now, &mut buf);
                match &t {
                    Transmit::Packet(info) => {
                        if let Some(g) = info.paced_gap_ns {
                            if let Some(prev) = last_tx[i] {
                                paced_gaps.push((g, now - prev));
                            }
                        }
                        last_tx[i] = Some(now);
                        let mut bytes = buf[..info.len].to_vec();
                        let mut lost = rng.unit() < net.data_loss;
                        if let Some(from) = net.drop_tail_from {
                            if info.seq >= from && first_tx_seen.insert((i, info.seq)) {
                                lost = true;
                            }
                        }
                        if lost {
                            continue;
                        }
                        if rng.unit() < net.corrupt_prob && info.payload_len > 0 {
                            let k = bytes.len() - 1 - (rng.next() as usize % info.payload_len);
                            bytes[k] ^= 0x5a;
                        }
                        switch_process(&mut bytes, &net);
                        let tos = if rng.unit() < net.ce_prob { 3 } else { 2 };
                        let d = net.delay_ns + if net.jitter_ns > 0 { rng.next() % net.jitter_ns } else { 0 };
                        push(&mut heap, &mut evs, &mut ctr, now + d, Ev::ToRecv { from: i, bytes, tos });
                    }
                    _ => {
                        if let Some(w) = s.wakeup(&t) {
                            wake = wake.min(w);
                        }
                        break;
                    }
                }
            }
        }
        if senders.iter().all(|s| s.is_done()) {
            break;
        }
        let next_ev = heap.peek().map(|Reverse((t, _, _))| *t).unwrap_or(u64::MAX);
        let next = next_ev.min(wake).min(recv.next_timer(now)).max(now);
        if next > max_ns {
            break;
        }
        now = next;
        while let Some(Reverse((t, _, idx))) = heap.peek().copied() {
            if t > now {
                break;
            }
            heap.pop();
            match evs[idx].take() {
                Some(Ev::ToRecv { from, bytes, tos }) => {
                    if net.receiver_dies_ns.is_some_and(|d| now >= d) {
                        continue;
                    }
                    if let Some(a) = recv.on_datagram(now, addr(from), Some(tos), &bytes, &mut ackbuf) {
                        assert_eq!(a.to, addr(from));
                        if rng.unit() >= net.ack_loss {
                            let d = net.delay_ns + if net.jitter_ns > 0 { rng.next() % net.jitter_ns } else { 0 };
                            push(&mut heap, &mut evs, &mut ctr, now + d, Ev::ToSend { to: from, bytes: ackbuf[..a.len].to_vec() });
                        }
                    }
                }
                Some(Ev::ToSend { to, bytes }) => {
                    let a = Ack::parse(&bytes).expect("receiver emits valid ACKs");
                    assert_eq!(a.flow_id, senders[to].flow_id);
                    senders[to].on_ack(now, &a);
                }
                None => {}
            }
        }
        for s in senders.iter_mut() {
            if s.next_timer().is_some_and(|t| t <= now) {
                s.on_timer(now);
            }
        }
        let mut delayed = Vec::new();
        if !net.receiver_dies_ns.is_some_and(|d| now >= d) {
            recv.poll_timers(now, &mut ackbuf, |to, b| delayed.push((to, b.to_vec())));
        }
        for (to, b) in delayed {
            let i = (0..senders.len()).find(|&i| addr(i) == to).unwrap();
            let d = net.delay_ns;
            push(&mut heap, &mut evs, &mut ctr, now + d, Ev::ToSend { to: i, bytes: b });
        }
        records.extend(recv.take_finished());
    }
    records.extend(recv.take_finished());
    Outcome { senders, recv, records, end_ns: now, paced_gaps }
}

fn cfg(mss: usize) -> SenderConfig {
    SenderConfig { mss, min_rto_ns: 2_000_000, init_rto_ns: 5_000_000, give_up_ns: 2_000_000_000, ..Default::default() }
}

fn assert_complete(o: &Outcome, sizes: &[u64]) {
    for (i, s) in o.senders.iter().enumerate() {
        assert!(matches!(s.state(), FlowState::Complete { .. }), "flow {i}: {:?} stats {:?}", s.state(), s.stats);
        let rec = o
            .records
            .iter()
            .find(|r| r.peer == addr(i) && r.flow_id == s.flow_id)
            .unwrap_or_else(|| panic!("receiver has no record of flow {i}"));
        assert_eq!(rec.status, RecvStatus::Complete);
        assert_eq!(rec.bytes, sizes[i], "byte-exact delivery");
        assert_eq!(rec.size, Some(sizes[i]));
        assert_eq!(s.acked_bytes(), sizes[i]);
    }
}

#[test]
fn lossless_transfer() {
    let (cc, seen) = FixedWindow::new(64 * 1336);
    let s = FlowSender::new(1, 11, FlowSize::Bytes(2_000_000), cc, cfg(1336), 0);
    let o = simulate(vec![s], Net::default(), ReceiverConfig::default(), 1, 10_000_000_000);
    assert_complete(&o, &[2_000_000]);
    assert_eq!(o.senders[0].stats.retx_pkts, 0);
    assert_eq!(seen.lock().unwrap().acked, 2_000_000);
    assert_eq!(o.records[0].corrupt_pkts, 0);
    assert!(seen.lock().unwrap().rtt_samples > 1000);
    // window-limited: 64 packets per 100 us RTT
    assert!(o.end_ns < 4_000_000, "took {} ns", o.end_ns);
}

#[test]
fn random_loss_both_directions_and_reordering() {
    for seed in 1..=12u64 {
        let size = 300_000 + seed * 77_777;
        let (cc, seen) = FixedWindow::new(40 * 1000);
        let s = FlowSender::new(seed as u32, seed * 3, FlowSize::Bytes(size), cc, cfg(1000), 0);
        let net = Net { data_loss: 0.05, ack_loss: 0.05, jitter_ns: 30_000, ..Default::default() };
        let rc = ReceiverConfig { ack_every: 1 + (seed as u32 % 3), ..Default::default() };
        let o = simulate(vec![s], net, rc, seed, 60_000_000_000);
        assert_complete(&o, &[size]);
        let st = &o.senders[0].stats;
        assert!(st.retx_pkts > 0, "seed {seed}: loss must cause retransmissions");
        assert!(seen.lock().unwrap().losses > 0);
    }
}

#[test]
fn heavy_loss_recovers_with_rto() {
    for seed in 1..=4u64 {
        let (cc, seen) = FixedWindow::new(20 * 500);
        let s = FlowSender::new(9, seed, FlowSize::Bytes(100_000), cc, cfg(500), 0);
        let net = Net { data_loss: 0.3, ack_loss: 0.2, jitter_ns: 10_000, ..Default::default() };
        let o = simulate(vec![s], net, ReceiverConfig::default(), seed + 100, 600_000_000_000);
        assert_complete(&o, &[100_000]);
        assert!(o.senders[0].stats.rto_count > 0 || seen.lock().unwrap().losses > 0);
    }
}

#[test]
fn pure_reordering_is_delivered_exactly() {
    let (cc, _) = FixedWindow::new(100 * 1336);
    let s = FlowSender::new(1, 5, FlowSize::Bytes(3_000_000), cc, cfg(1336), 0);
    // jitter of 200 us over a 50 us base delay: heavy reordering
    let net = Net { jitter_ns: 200_000, ..Default::default() };
    let o = simulate(vec![s], net, ReceiverConfig::default(), 7, 60_000_000_000);
    assert_complete(&o, &[3_000_000]);
    let r = &o.records[0];
    // some retransmissions may be spurious, but every byte arrives exactly once in the result
    assert_eq!(r.bytes, 3_000_000);
    assert_eq!(r.corrupt_pkts, 0);
}

#[test]
fn tail_loss_recovered_by_rto() {
    let (cc, seen) = FixedWindow::new(10 * 1000);
    let s = FlowSender::new(1, 5, FlowSize::Bytes(20_000), cc, cfg(1000), 0);
    let net = Net { drop_tail_from: Some(17_000), ..Default::default() };
    let o = simulate(vec![s], net, ReceiverConfig::default(), 3, 10_000_000_000);
    assert_complete(&o, &[20_000]);
    assert!(o.senders[0].stats.rto_count >= 1);
    assert!(seen.lock().unwrap().rtos >= 1);
    assert_eq!(o.senders[0].stats.retx_pkts, 3);
}

#[test]
fn corruption_is_detected_and_repaired() {
    let (cc, _) = FixedWindow::new(30 * 1000);
    let s = FlowSender::new(1, 77, FlowSize::Bytes(500_000), cc, cfg(1000), 0);
    let net = Net { corrupt_prob: 0.05, ..Default::default() };
    let o = simulate(vec![s], net, ReceiverConfig::default(), 9, 60_000_000_000);
    assert_complete(&o, &[500_000]);
    assert!(o.records[0].corrupt_pkts > 5);
    assert_eq!(o.recv.stats.corrupt_pkts, o.records[0].corrupt_pkts);
}

#[test]
fn long_flow_stop_completes_with_the_sent_size() {
    let (cc, _) = FixedWindow::new(20 * 1000);
    let mut s = FlowSender::new(1, 77, FlowSize::Unbounded, cc, cfg(1000), 0);
    let mut buf = vec![0u8; 2048];
    // send a while by hand through a lossy sim: run to 5 ms then stop
    let mut o = simulate(vec![s], Net { data_loss: 0.02, ..Default::default() }, ReceiverConfig::default(), 5, 5_000_000);
    s = o.senders.pop().unwrap();
    assert!(!s.is_done());
    // the receiver of the first phase is discarded: a fresh one must learn
    // the whole flow from retransmissions; keep it simple and stop now
    s.stop(5_000_000);
    let _ = s.poll_transmit(5_000_000, &mut buf);
    let sent = match s.size() {
        FlowSize::Unbounded => 0,
        FlowSize::Bytes(b) => b,
    };
    assert_eq!(sent, 0, "size() keeps the original request");
    // continue with the same receiver state
    let mut recv = o.recv;
    let mut ackbuf = vec![0u8; wire::MAX_ACK_LEN];
    let mut now = 5_000_000;
    // deliver everything outstanding losslessly: retransmit on timers until complete
    for _ in 0..100_000 {
        if s.is_done() {
            break;
        }
        loop {
            match s.poll_transmit(now, &mut buf) {
                Transmit::Packet(info) => {
                    if let Some(a) = recv.on_datagram(now + 50_000, addr(0), Some(2), &buf[..info.len], &mut ackbuf) {
                        let ack = Ack::parse(&ackbuf[..a.len]).unwrap();
                        s.on_ack(now + 100_000, &ack);
                    }
                }
                _ => break,
            }
        }
        now += 100_000;
        s.on_timer(now);
        recv.poll_timers(now, &mut ackbuf, |_, b| {
            let ack = Ack::parse(b).unwrap();
            s.on_ack(now, &ack);
        });
    }
    assert!(matches!(s.state(), FlowState::Complete { .. }), "{:?}", s.state());
    let recs: Vec<_> = o.records.drain(..).chain(recv.take_finished()).collect();
    let r = recs.iter().find(|r| r.status == RecvStatus::Complete).expect("complete record");
    assert_eq!(Some(r.bytes), r.size);
    assert_eq!(r.bytes, s.acked_bytes());
    assert!(r.bytes > 100_000);
}

#[test]
fn lossless_long_flow_stop_completes() {
    // nothing is retransmitted after the stop: the probe must tell the size
    let (cc, _) = FixedWindow::new(20 * 1000);
    let mut s = FlowSender::new(1, 77, FlowSize::Unbounded, cc, cfg(1000), 0);
    let mut recv = Receiver::new(ReceiverConfig::default());
    let mut buf = vec![0u8; 2048];
    let mut ackbuf = vec![0u8; wire::MAX_ACK_LEN];
    let mut inflight: Vec<Vec<u8>> = Vec::new();
    let mut now = 0u64;
    for step in 0..2000 {
        if step == 500 {
            s.stop(now);
        }
        while let Transmit::Packet(info) = s.poll_transmit(now, &mut buf) {
            inflight.push(buf[..info.len].to_vec());
        }
        now += 10_000;
        for p in inflight.drain(..) {
            if let Some(a) = recv.on_datagram(now, addr(0), Some(2), &p, &mut ackbuf) {
                let ack = Ack::parse(&ackbuf[..a.len]).unwrap();
                s.on_ack(now, &ack);
            }
        }
        s.on_timer(now);
        if s.is_done() {
            break;
        }
    }
    assert!(matches!(s.state(), FlowState::Complete { .. }), "{:?}", s.state());
    let r = recv.take_finished();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].status, RecvStatus::Complete);
    assert_eq!(Some(r[0].bytes), r[0].size);
    assert_eq!(r[0].bytes, s.acked_bytes());
    assert!(r[0].bytes > 1_000_000);
}

#[test]
fn vanished_receiver_fails_the_flow_and_times_out_at_receiver() {
    let (cc, _) = FixedWindow::new(10 * 1000);
    let mut c = cfg(1000);
    c.give_up_ns = 500_000_000;
    let s = FlowSender::new(1, 5, FlowSize::Bytes(10_000_000), cc, c, 0);
    let net = Net { receiver_dies_ns: Some(3_000_000), ..Default::default() };
    let rc = ReceiverConfig { idle_timeout_ns: 100_000_000, ..Default::default() };
    let o = simulate(vec![s], net, rc, 3, 10_000_000_000);
    match o.senders[0].state() {
        FlowState::Failed { reason: FailReason::PeerGone { ever_acked, .. }, .. } => assert!(*ever_acked),
        other => panic!("{other:?}"),
    }
    assert!(o.senders[0].stats.rto_count >= 3);

    // no receiver at all
    let (cc, _) = FixedWindow::new(10 * 1000);
    let mut c = cfg(1000);
    c.give_up_ns = 200_000_000;
    let s = FlowSender::new(1, 5, FlowSize::Bytes(10_000), cc, c, 0);
    let net = Net { receiver_dies_ns: Some(0), ..Default::default() };
    let o = simulate(vec![s], net, ReceiverConfig::default(), 3, 10_000_000_000);
    assert!(matches!(o.senders[0].state(), FlowState::Failed { reason: FailReason::PeerGone { ever_acked: false, .. }, .. }));
    assert_eq!(o.senders[0].state().clone(), o.senders[0].state().clone());
    if let FlowState::Failed { reason, .. } = o.senders[0].state() {
        assert_eq!(reason.status(), "no-receiver");
        assert!(reason.describe().contains("receiver"));
    }
}

#[test]
fn receiver_times_out_a_silent_flow() {
    let mut recv = Receiver::new(ReceiverConfig { idle_timeout_ns: 1_000_000, ..Default::default() });
    let (cc, _) = FixedWindow::new(10 * 1000);
    let mut s = FlowSender::new(4, 5, FlowSize::Bytes(100_000), cc, cfg(1000), 0);
    let mut buf = vec![0u8; 2048];
    let mut ackbuf = vec![0u8; wire::MAX_ACK_LEN];
    if let Transmit::Packet(i) = s.poll_transmit(0, &mut buf) {
        recv.on_datagram(10, addr(0), Some(2), &buf[..i.len], &mut ackbuf);
    }
    recv.poll_timers(2_000_000, &mut ackbuf, |_, _| {});
    let r = recv.take_finished();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].status, RecvStatus::Timeout);
    assert_eq!(r[0].bytes, 1000);
    // abort from the sender is recorded with its reason
    let (cc, _) = FixedWindow::new(10 * 1000);
    let mut s = FlowSender::new(5, 6, FlowSize::Bytes(100_000), cc, cfg(1000), 0);
    if let Transmit::Packet(i) = s.poll_transmit(0, &mut buf) {
        recv.on_datagram(10, addr(0), Some(2), &buf[..i.len], &mut ackbuf);
    }
    s.abort(20);
    let n = s.write_abort(20, "interrupted by SIGINT", &mut buf);
    assert!(recv.on_datagram(30, addr(0), None, &buf[..n], &mut ackbuf).is_none());
    let r = recv.take_finished();
    assert_eq!(r[0].status, RecvStatus::Aborted("interrupted by SIGINT".into()));
}

#[test]
fn ecn_and_telemetry_echo() {
    let (cc, seen) = FixedWindow::new(20 * 1000);
    let s = FlowSender::new(1, 5, FlowSize::Bytes(200_000), cc, cfg(1000), 0);
    let net = Net { ce_prob: 1.0, hops: vec![(1, 7), (2, 42), (3, 5)], ..Default::default() };
    let o = simulate(vec![s], net, ReceiverConfig::default(), 3, 10_000_000_000);
    assert_complete(&o, &[200_000]);
    let g = seen.lock().unwrap();
    assert_eq!(g.ce, 200_000, "every byte was CE-marked");
    assert_eq!(g.last_qdepth, Some(42));
    assert_eq!(o.senders[0].stats.max_qdepth_pkts, 42);
    let r = &o.records[0];
    assert_eq!(r.ecn_pkts[3], r.data_pkts);
    assert_eq!(r.max_qdepth_pkts, 42);
    assert_eq!(r.telemetry_pkts, r.data_pkts);

    // cells: 190 cells of 80 B = 10 full 1500-byte packets
    let (cc, seen) = FixedWindow::new(20 * 1000);
    let s = FlowSender::new(1, 5, FlowSize::Bytes(50_000), cc, cfg(1000), 0);
    let net = Net { hops: vec![(1, 190)], unit: DepthUnit::Cells80, ce_prob: 0.5, ..Default::default() };
    let o = simulate(vec![s], net, ReceiverConfig::default(), 3, 10_000_000_000);
    assert_complete(&o, &[50_000]);
    let g = seen.lock().unwrap();
    assert_eq!(g.last_qdepth, Some(10));
    assert!(g.ce > 10_000 && g.ce < 40_000, "ce {}", g.ce);
}

#[test]
fn hop_records_reach_the_sender() {
    let (cc, _) = FixedWindow::new(4 * 1000);
    let mut s = FlowSender::new(1, 5, FlowSize::Bytes(1000), cc, cfg(1000), 0);
    let mut recv = Receiver::new(ReceiverConfig::default());
    let mut buf = vec![0u8; 2048];
    let mut ackbuf = vec![0u8; wire::MAX_ACK_LEN];
    let Transmit::Packet(i) = s.poll_transmit(0, &mut buf) else { panic!() };
    let mut bytes = buf[..i.len].to_vec();
    switch_process(&mut bytes, &Net { hops: vec![(7, 3), (8, 9)], ..Default::default() });
    assert_eq!(bytes.len(), i.len + 40, "each hop adds 20 bytes");
    let a = recv.on_datagram(10, addr(0), Some(2), &bytes, &mut ackbuf).unwrap();
    let ack = Ack::parse(&ackbuf[..a.len]).unwrap();
    assert_eq!(ack.hops.len(), 2);
    assert_eq!(ack.hops[0].switch_id, 8, "newest first");
    assert_eq!(ack.qdepth(), Some(9));
    let out = s.on_ack(20, &ack);
    assert!(out.completed);
    assert_eq!(out.qdepth_pkts, Some(9));
    assert_eq!(out.rtt_ns, Some(20));
}

#[test]
fn pacing_hits_target_gaps() {
    // 100 Mbit/s: a 1392-byte datagram + 28 B IP/UDP = 1420 B -> 113.6 us
    let (cc, _) = FixedWindow::rate(100_000_000);
    let s = FlowSender::new(1, 5, FlowSize::Bytes(2_000_000), cc, cfg(1336), 0);
    let o = simulate(vec![s], Net::default(), ReceiverConfig::default(), 3, 10_000_000_000);
    assert_complete(&o, &[2_000_000]);
    assert!(o.paced_gaps.len() > 1000);
    for &(target, got) in &o.paced_gaps {
        assert_eq!(target, 113_600);
        assert_eq!(got, 113_600);
    }
    // duration ~ size / rate (goodput share 1336/1420)
    let expect = 2_000_000.0 * 8.0 / 100e6 * 1420.0 / 1336.0;
    let took = o.end_ns as f64 / 1e9;
    assert!((took - expect).abs() / expect < 0.02, "took {took} expected {expect}");
}

#[test]
fn many_flows_demuxed_by_address_and_id() {
    let mut senders = Vec::new();
    let mut sizes = Vec::new();
    for i in 0..6u64 {
        let (cc, _) = FixedWindow::new(16 * 1000);
        // same flow id for all: the address tells them apart
        senders.push(FlowSender::new(7, 100 + i, FlowSize::Bytes(50_000 + i * 10_001), cc, cfg(1000), 0));
        sizes.push(50_000 + i * 10_001);
    }
    let net = Net { data_loss: 0.02, jitter_ns: 20_000, ..Default::default() };
    let o = simulate(senders, net, ReceiverConfig::default(), 5, 60_000_000_000);
    assert_complete(&o, &sizes);
}

#[test]
fn receiver_survives_garbage() {
    let mut recv = Receiver::new(ReceiverConfig::default());
    let mut ackbuf = vec![0u8; wire::MAX_ACK_LEN];
    let mut rng = Rng(12345);
    let (cc, _) = FixedWindow::new(4 * 1000);
    let mut s = FlowSender::new(1, 5, FlowSize::Bytes(10_000), cc, cfg(1000), 0);
    let mut good = vec![0u8; 2048];
    let Transmit::Packet(info) = s.poll_transmit(0, &mut good) else { panic!() };
    let good = good[..info.len].to_vec();
    for round in 0..50_000u64 {
        let mut b = if round % 2 == 0 {
            good.clone()
        } else {
            (0..(rng.next() % 1600) as usize).map(|_| rng.next() as u8).collect()
        };
        // mutate a few bytes (header fields: seq, size, len, hop count...)
        for _ in 0..(rng.next() % 4) {
            if !b.is_empty() {
                let k = rng.next() as usize % b.len().min(80);
                b[k] = rng.next() as u8;
            }
        }
        if rng.next() % 7 == 0 {
            b.truncate(rng.next() as usize % (b.len() + 1));
        }
        let _ = recv.on_datagram(round, addr((round % 3) as usize), Some(rng.next() as u8), &b, &mut ackbuf);
        recv.poll_timers(round, &mut ackbuf, |_, _| {});
    }
    assert!(recv.stats.malformed() > 10_000);
    // the sender survives garbage ACKs too
    for _ in 0..50_000 {
        let n = (rng.next() % 300) as usize;
        let mut b: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        if n >= 68 {
            b[0..4].copy_from_slice(&[b'P', b'4', 1, 2]);
            b[30] = (rng.next() % 3) as u8;
            b[31] = (rng.next() % 2) as u8;
            b.truncate(68 + b[30] as usize * 16 + b[31] as usize * 20);
        }
        if let Ok(a) = Ack::parse(&b) {
            s.on_ack(10, &a);
        }
    }
}

/// Paces at a fixed rate and books every packet event by "interval" (a
/// fixed-length slice of send time), as PCC's monitor intervals do.
struct IntervalBook {
    rate: u64,
    interval_ns: u64,
    book: Arc<Mutex<Book>>,
}
#[derive(Default, Debug)]
struct Book {
    /// Send times of every transmission.
    sent: Vec<u64>,
    acked: Vec<u64>,
    lost: Vec<u64>,
    /// Per interval: (sent, acked, lost) bytes.
    per: std::collections::BTreeMap<u64, (u64, u64, u64)>,
    /// Fates that arrived while a later interval was sending.
    late: u64,
}
impl IntervalBook {
    fn new(rate: u64, interval_ns: u64) -> (Box<dyn CongestionControl>, Arc<Mutex<Book>>) {
        let book = Arc::new(Mutex::new(Book::default()));
        (Box::new(IntervalBook { rate, interval_ns, book: book.clone() }), book)
    }
}
impl CongestionControl for IntervalBook {
    fn name(&self) -> &'static str {
        "test-interval-book"
    }
    fn on_send(&mut self, now: u64, bytes: u64) {
        let mut b = self.book.lock().unwrap();
        b.sent.push(now);
        b.per.entry(now / self.interval_ns).or_default().0 += bytes;
    }
    fn on_packet_acked(&mut self, now: u64, sent_ns: u64, bytes: u64) {
        let mut b = self.book.lock().unwrap();
        b.acked.push(sent_ns);
        b.late += u64::from(now / self.interval_ns > sent_ns / self.interval_ns);
        b.per.entry(sent_ns / self.interval_ns).or_default().1 += bytes;
    }
    fn on_packet_lost(&mut self, _now: u64, sent_ns: u64, bytes: u64) {
        let mut b = self.book.lock().unwrap();
        b.lost.push(sent_ns);
        b.per.entry(sent_ns / self.interval_ns).or_default().2 += bytes;
    }
    fn on_ack(&mut self, _: &AckSample) {}
    fn on_loss(&mut self, _: u64, _: u64) {}
    fn on_rto(&mut self, _: u64) {}
    fn cwnd_bytes(&self) -> Option<u64> {
        None
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        Some(self.rate)
    }
}

#[test]
fn every_transmission_is_settled_once_in_the_interval_that_sent_it() {
    // 20 Mbit/s, 2 ms intervals, RTT ~1 ms + jitter: ACKs of one interval
    // keep arriving while the next one sends.
    for seed in 1..=4u64 {
        let (cc, book) = IntervalBook::new(20_000_000, 2_000_000);
        let s = FlowSender::new(1, seed, FlowSize::Bytes(1_500_000), cc, cfg(1200), 0);
        let net = Net { delay_ns: 500_000, jitter_ns: 300_000, data_loss: 0.05, ..Default::default() };
        let o = simulate(vec![s], net, ReceiverConfig::default(), seed, 60_000_000_000);
        assert_complete(&o, &[1_500_000]);
        let b = book.lock().unwrap();
        assert!(b.late > 100, "seed {seed}: the test must exercise late fates ({})", b.late);
        // Each fate names a real transmission, each transmission has a fate.
        let sent: std::collections::BTreeSet<u64> = b.sent.iter().copied().collect();
        assert_eq!(sent.len(), b.sent.len(), "send times name transmissions uniquely here");
        let mut settled: Vec<u64> = b.acked.iter().chain(&b.lost).copied().collect();
        settled.sort_unstable();
        assert!(settled.iter().all(|t| sent.contains(t)));
        let fates: std::collections::BTreeSet<u64> = settled.iter().copied().collect();
        assert_eq!(fates, sent, "seed {seed}: every transmission settled");
        assert_eq!(b.acked.iter().collect::<std::collections::BTreeSet<_>>().len(), b.acked.len(), "acked once");
        assert!(!b.lost.is_empty());
        // Per interval, acked + lost covers what was sent (a spurious loss
        // may count a packet twice, never zero times).
        for (i, &(sent, acked, lost)) in &b.per {
            assert!(acked + lost >= sent, "seed {seed}: interval {i}: sent {sent} acked {acked} lost {lost}");
        }
        let acked: u64 = b.per.values().map(|v| v.1).sum();
        assert_eq!(acked, 1_500_000);
    }
}

#[test]
fn an_interval_whose_packets_are_all_lost_hears_of_each_one() {
    // Nothing gets through after the first 20 packets: the RTO declares
    // every outstanding transmission lost, one report per transmission.
    let (cc, book) = IntervalBook::new(10_000_000, 5_000_000);
    let s = FlowSender::new(1, 3, FlowSize::Bytes(200_000), cc, cfg(1000), 0);
    let net = Net { drop_tail_from: Some(20_000), receiver_dies_ns: Some(15_000_000), ..Default::default() };
    let o = simulate(vec![s], net, ReceiverConfig::default(), 1, 30_000_000_000);
    assert!(o.senders[0].is_done());
    let b = book.lock().unwrap();
    let acked: std::collections::BTreeSet<u64> = b.acked.iter().copied().collect();
    let lost: std::collections::BTreeSet<u64> = b.lost.iter().copied().collect();
    assert_eq!(lost.len(), b.lost.len(), "each transmission reported lost once");
    // Transmissions after the last RTO are still out when the flow gives up.
    let last_rto_round = lost.iter().max().copied().unwrap_or(0);
    for t in b.sent.iter().filter(|&&t| t <= last_rto_round) {
        assert!(acked.contains(t) || lost.contains(t), "transmission at {t} never settled");
    }
    // Intervals after the black hole see only losses, each of its packets
    // (up to the last RTO round, still out when the flow gives up).
    let dark: Vec<(u64, (u64, u64, u64))> = b
        .per
        .iter()
        .filter(|(i, v)| v.0 > 0 && v.1 == 0 && (*i + 1) * 5_000_000 <= last_rto_round)
        .map(|(i, v)| (*i, *v))
        .collect();
    assert!(dark.len() > 2, "{dark:?}");
    for (i, (sent, _, lost)) in &dark {
        assert!(lost >= sent, "interval {i}: sent {sent} lost {lost}");
    }
}

#[test]
fn pacing_is_exact_at_small_rates() {
    // PCC's floor and a newcomer's first rates are a few hundred kbit/s:
    // the pacer must hold them (1420-byte datagrams).
    for rate in [100_000u64, 500_000, 2_000_000] {
        let (cc, _) = FixedWindow::rate(rate);
        let s = FlowSender::new(1, 5, FlowSize::Bytes(40 * 1336), cc, cfg(1336), 0);
        let o = simulate(vec![s], Net::default(), ReceiverConfig::default(), 3, 100_000_000_000);
        assert_complete(&o, &[40 * 1336]);
        let want = 1420 * 8 * 1_000_000_000 / rate;
        assert!(o.paced_gaps.len() >= 38);
        for &(target, got) in &o.paced_gaps {
            assert_eq!((target, got), (want, want), "rate {rate}");
        }
    }
}
