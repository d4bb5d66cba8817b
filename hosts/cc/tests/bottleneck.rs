//! End-to-end sanity checks: every algorithm, built through the registry,
//! drives a simulated single bottleneck (FIFO, drop-tail, optional ECN
//! marking at K packets, in-band queue-depth echo, one INT hop record per
//! ACK, and DCQCN's CNPs). The scripted unit tests pin each rule; these
//! check that the pieces add up to the behaviour the papers report (DCTCP
//! holds the queue near K, PCC fills the link, HPCC runs at η with no
//! queue, ...).

use std::collections::VecDeque;

use cc::dcqcn::NotificationPoint;
use cc::{by_name, AckSample, CongestionControl, IntHop, PathInfo, QueueReport};

const MSS: u64 = 1400;

struct Link {
    capacity_bps: f64,
    /// Sender's NIC rate (PathInfo.line_rate_bps); above the bottleneck so
    /// rate-based algorithms can overshoot it.
    access_bps: f64,
    buffer_pkts: usize,
    /// Two-way propagation delay, ns.
    base_rtt_ns: u64,
    /// ECN-mark packets that arrive to a queue of at least K packets.
    mark_k: Option<usize>,
    /// The model's time step, ns: sends happen on step boundaries, so a
    /// paced sender's packets leave in bursts of one step's worth.
    step_ns: u64,
}

/// The bottleneck port's transmitted-bytes counter starts this far below
/// 2^32, so that it wraps early in every run.
const TX_COUNTER_START: u32 = u32::MAX - 100 * MSS as u32;

#[derive(Default, Debug)]
struct Outcome {
    /// Delivered bits/s over the second half of the run.
    goodput_bps: f64,
    /// Mean and max queue (packets) seen by arrivals, second half.
    mean_queue: f64,
    max_queue: usize,
    loss_rate: f64,
}

struct Ack {
    at: u64,
    sent: u64,
    ce: bool,
    q: u32,
    /// The packet's place in the FIFO's arrival log.
    idx: usize,
    /// When it left the bottleneck.
    dep: u64,
}

/// The INT record the bottleneck port wrote into packet `idx` as it left
/// at `dep`: the packets queued behind it then (those that arrived by
/// `dep`), its transmitted-bytes counter, its clock and its rate.
fn int_record(arrivals: &[u64], idx: usize, dep: u64, link: &Link) -> IntHop {
    let behind = arrivals.partition_point(|&t| t <= dep).saturating_sub(idx + 1) as u64;
    IntHop {
        hop: QueueReport::hop_key(1, 1),
        qlen_bytes: behind * MSS,
        tx_bytes: TX_COUNTER_START.wrapping_add(((idx as u64 + 1) * MSS) as u32),
        ts_ns: dep,
        rate_bps: link.capacity_bps as u64,
    }
}

fn run(cc: &mut dyn CongestionControl, link: &Link, duration_ns: u64) -> Outcome {
    let dt = link.step_ns;
    let tx_ns = (MSS as f64 * 8.0 / link.capacity_bps * 1e9) as u64;
    let mut departures: VecDeque<u64> = VecDeque::new();
    let mut busy_until = 0u64;
    let mut acks: VecDeque<Ack> = VecDeque::new();
    // (when the sender learns of the drop, when the packet was sent)
    let mut losses: VecDeque<(u64, u64)> = VecDeque::new();
    let mut inflight = 0u64;
    let mut next_send = 0u64;
    // Arrival time of every packet the FIFO accepted, in order.
    let mut arrivals: Vec<u64> = Vec::new();
    // The receiver's DCQCN notification point; its CNPs reach the sender
    // with the ACK of the marked packet.
    let mut np = NotificationPoint::default();
    let half = duration_ns / 2;
    let (mut delivered, mut q_sum, mut q_n, mut max_q, mut sent2, mut lost2) = (0u64, 0f64, 0u64, 0usize, 0u64, 0u64);
    let mut now = 0u64;
    while now < duration_ns {
        // Feedback due by now, in time order.
        loop {
            let a = acks.front().map(|a| a.at);
            let l = losses.front().map(|l| l.0);
            match (a, l) {
                (Some(ta), Some(tl)) if tl < ta && tl <= now => {
                    let (tl, sent) = losses.pop_front().unwrap();
                    inflight = inflight.saturating_sub(MSS);
                    cc.on_packet_lost(tl, sent, MSS);
                    cc.on_loss(tl, MSS);
                }
                (Some(ta), _) if ta <= now => {
                    let a = acks.pop_front().unwrap();
                    inflight = inflight.saturating_sub(MSS);
                    if a.at >= half {
                        delivered += MSS;
                    }
                    if np.on_arrival(a.dep + link.base_rtt_ns / 2, a.ce) {
                        cc.on_cnp(a.at);
                    }
                    cc.on_packet_acked(a.at, a.sent, MSS);
                    cc.on_ack(&AckSample {
                        now_ns: a.at,
                        acked_bytes: MSS,
                        ce_bytes: if a.ce { MSS } else { 0 },
                        rtt_ns: Some(a.at - a.sent),
                        path_qdepth_pkts: Some(a.q),
                        inflight_bytes: inflight,
                        acked_pkts: 1,
                        hops: vec![],
                        int_hops: vec![int_record(&arrivals, a.idx, a.dep, link)],
                    });
                }
                (None, Some(tl)) if tl <= now => {
                    let (tl, sent) = losses.pop_front().unwrap();
                    inflight = inflight.saturating_sub(MSS);
                    cc.on_packet_lost(tl, sent, MSS);
                    cc.on_loss(tl, MSS);
                }
                _ => break,
            }
        }
        if now.is_multiple_of(1_000_000) {
            cc.on_tick(now);
        }
        // Send what the window and the pacing rate allow.
        loop {
            if let Some(w) = cc.cwnd_bytes() {
                if inflight + MSS > w {
                    break;
                }
            }
            if let Some(r) = cc.pacing_rate_bps() {
                if next_send > now || r == 0 {
                    break;
                }
                next_send = next_send.max(now.saturating_sub(dt)) + (MSS as f64 * 8.0 / r as f64 * 1e9) as u64;
            }
            cc.on_send(now, MSS);
            inflight += MSS;
            while departures.front().is_some_and(|&d| d <= now) {
                departures.pop_front();
            }
            let q = departures.len();
            if now >= half {
                q_sum += q as f64;
                q_n += 1;
                max_q = max_q.max(q);
                sent2 += 1;
            }
            if q >= link.buffer_pkts {
                // Dropped: the sender learns about it about one RTT later.
                losses.push_back((now + link.base_rtt_ns + busy_until.saturating_sub(now), now));
                if now >= half {
                    lost2 += 1;
                }
                continue;
            }
            let dep = busy_until.max(now) + tx_ns;
            busy_until = dep;
            departures.push_back(dep);
            let ce = link.mark_k.is_some_and(|k| q >= k);
            arrivals.push(now);
            acks.push_back(Ack { at: dep + link.base_rtt_ns, sent: now, ce, q: q as u32, idx: arrivals.len() - 1, dep });
        }
        now += dt;
    }
    Outcome {
        goodput_bps: delivered as f64 * 8.0 / ((duration_ns - half) as f64 / 1e9),
        mean_queue: if q_n > 0 { q_sum / q_n as f64 } else { 0.0 },
        max_queue: max_q,
        loss_rate: if sent2 > 0 { lost2 as f64 / sent2 as f64 } else { 0.0 },
    }
}

fn path(link: &Link) -> PathInfo {
    PathInfo { mss: MSS as u32, line_rate_bps: Some(link.access_bps as u64), init_cwnd_pkts: 10 }
}

fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

fn build(name: &str, params: &[(&str, &str)], link: &Link) -> Box<dyn CongestionControl> {
    by_name(name, &kv(params), &path(link)).unwrap()
}

/// The seed's DCTCP setup: 100 Mbit/s, RTT 500 µs, 120-packet buffer, K=20.
fn dctcp_link() -> Link {
    Link { capacity_bps: 100e6, access_bps: 1e9, buffer_pkts: 120, base_rtt_ns: 500_000, mark_k: Some(20), step_ns: 50_000 }
}

#[test]
fn dctcp_holds_the_queue_near_k_at_full_rate() {
    let link = dctcp_link();
    let mut cc = build("dctcp", &[], &link);
    let o = run(cc.as_mut(), &link, 4_000_000_000);
    eprintln!("dctcp {o:?}");
    assert!(o.goodput_bps > 0.95 * link.capacity_bps, "{o:?}");
    assert!(o.max_queue < 40, "queue stays near K=20: {o:?}");
    assert_eq!(o.loss_rate, 0.0, "{o:?}");
}

#[test]
fn reno_fills_the_buffer_where_dctcp_does_not() {
    let link = dctcp_link();
    let mut cc = build("reno", &[], &link);
    let o = run(cc.as_mut(), &link, 4_000_000_000);
    eprintln!("reno {o:?}");
    assert!(o.goodput_bps > 0.9 * link.capacity_bps, "{o:?}");
    assert!(o.max_queue >= 100, "loss-based: the queue reaches the buffer: {o:?}");
}

#[test]
fn cubic_and_vegas_use_the_link() {
    let link = Link { capacity_bps: 50e6, access_bps: 1e9, buffer_pkts: 100, base_rtt_ns: 2_000_000, mark_k: None, step_ns: 50_000 };
    for name in ["cubic", "vegas"] {
        let mut cc = build(name, &[], &link);
        let o = run(cc.as_mut(), &link, 6_000_000_000);
        eprintln!("{name} {o:?}");
        assert!(o.goodput_bps > 0.9 * link.capacity_bps, "{name}: {o:?}");
        if name == "vegas" {
            assert!(o.mean_queue < 8.0 && o.loss_rate == 0.0, "vegas keeps alpha..beta queued: {o:?}");
        }
    }
}

#[test]
fn timely_and_oracle_keep_the_queue_short() {
    // The seed's incast scale: 50 Mbit/s links, the sender's NIC twice the
    // bottleneck. δ is scaled down with the line rate (the paper's 10 Mbps
    // is 0.1% of 10 Gbps) and TIMELY's RTT thresholds are scaled to this
    // path's ~450 µs base RTT; the oracle keeps its packet thresholds.
    let link = Link { capacity_bps: 50e6, access_bps: 100e6, buffer_pkts: 200, base_rtt_ns: 200_000, mark_k: None, step_ns: 50_000 };
    let mut t = build("timely", &[("min_rtt_us", "200"), ("tlow_us", "250"), ("thigh_us", "2000"), ("delta_mbps", "1")], &link);
    let o = run(t.as_mut(), &link, 4_000_000_000);
    eprintln!("timely {o:?}");
    assert!(o.goodput_bps > 0.75 * link.capacity_bps, "{o:?}");
    assert!(o.mean_queue < 10.0 && o.loss_rate == 0.0, "{o:?}");
    let mut q = build("oracle-timely-seed", &[("delta_mbps", "1")], &link);
    let o = run(q.as_mut(), &link, 4_000_000_000);
    eprintln!("oracle (seed law) {o:?}");
    assert!(o.goodput_bps > 0.75 * link.capacity_bps, "{o:?}");
    assert!(o.max_queue <= 20 && o.loss_rate == 0.0, "queue held below thigh = 20 packets: {o:?}");
    // The oracle's own law holds its one-packet target at full rate.
    let mut q = build("oracle-timely", &[("pkt_bytes", "1400")], &link);
    let o = run(q.as_mut(), &link, 4_000_000_000);
    eprintln!("oracle {o:?} {:?}", q.state());
    assert!(o.goodput_bps > 0.95 * link.capacity_bps, "{o:?}");
    assert!(o.mean_queue < 3.0 && o.loss_rate == 0.0, "{o:?}");
}

#[test]
fn pcc_allegro_fills_a_shallow_buffered_link() {
    // PCC's shallow-buffer experiment scaled down: 20 Mbit/s, 30 ms, 20 pkts.
    let link = Link { capacity_bps: 20e6, access_bps: 1e9, buffer_pkts: 20, base_rtt_ns: 30_000_000, mark_k: None, step_ns: 50_000 };
    let mut cc = build("pcc", &[("init_rtt_us", "30000")], &link);
    let o = run(cc.as_mut(), &link, 40_000_000_000);
    eprintln!("allegro {o:?} {:?}", cc.state());
    assert!(o.goodput_bps > 0.8 * link.capacity_bps, "{o:?}");
    assert!(o.loss_rate < 0.1, "{o:?}");
}

#[test]
fn pcc_vivace_fills_the_link_with_little_queue() {
    let link = Link { capacity_bps: 20e6, access_bps: 1e9, buffer_pkts: 200, base_rtt_ns: 30_000_000, mark_k: None, step_ns: 50_000 };
    let mut cc = build("pcc-vivace", &[("init_rtt_us", "30000")], &link);
    let o = run(cc.as_mut(), &link, 40_000_000_000);
    eprintln!("vivace {o:?} {:?}", cc.state());
    assert!(o.goodput_bps > 0.8 * link.capacity_bps, "{o:?}");
    assert!(o.mean_queue < 50.0, "latency-aware: no standing queue: {o:?}");
}

/// The state's `mis_scored` and `mis_latency_moved` (written to each
/// flow's cc_state.csv): Vivace-Loss has no latency term, so it never
/// moves a score; Vivace-Latency charging the gradient as measured
/// (`gradient_step=0`, PCC-Uspace master) is moved by the trials above
/// capacity, whose queue raises the RTT; neither counts more MIs than it
/// scored.
#[test]
fn pcc_counts_the_mis_its_latency_term_moved() {
    let link = Link { capacity_bps: 20e6, access_bps: 1e9, buffer_pkts: 200, base_rtt_ns: 30_000_000, mark_k: None, step_ns: 50_000 };
    let counts = |name: &str, params: &[(&str, &str)]| {
        let mut cc = build(name, params, &link);
        run(cc.as_mut(), &link, 10_000_000_000);
        let st = cc.state();
        eprintln!("{name}: {:?}", (st["mis_scored"], st["mis_latency_moved"]));
        (st["mis_scored"], st["mis_latency_moved"])
    };
    let (scored, moved) = counts("pcc-vivace-loss", &[("init_rtt_us", "30000")]);
    assert!(scored > 30.0 && moved == 0.0, "Vivace-Loss: {scored} scored, {moved} moved");
    let (scored, moved) = counts("pcc-vivace", &[("init_rtt_us", "30000"), ("gradient_step", "0")]);
    assert!(scored > 30.0 && moved > 0.0 && moved <= scored, "Vivace-Latency: {scored} scored, {moved} moved");
}


/// The INT and delay algorithms' path: 1 Gb/s with a 400 µs base RTT
/// (411.2 µs with the packet's own transmission: about 37 packets in
/// flight), the sender's NIC twice as fast, a deep buffer, and a 2 µs time
/// step (a packet takes 11.2 µs on the bottleneck).
fn int_link() -> Link {
    Link { capacity_bps: 1e9, access_bps: 2e9, buffer_pkts: 1000, base_rtt_ns: 400_000, mark_k: None, step_ns: 2_000 }
}

/// One packet's transmission time on `link`, µs.
fn tx_us(link: &Link) -> f64 {
    MSS as f64 * 8.0 / link.capacity_bps * 1e6
}

#[test]
fn hpcc_runs_at_eta_with_no_standing_queue() {
    // HPCC's design point: the flow settles at η of the bottleneck with
    // the queue near zero (the 5% headroom drains what bursts build).
    let link = int_link();
    for (eta, lo, hi) in [("0.95", 0.92, 0.98), ("0.8", 0.76, 0.84)] {
        let mut cc = build("hpcc", &[("eta", eta)], &link);
        let o = run(cc.as_mut(), &link, 1_000_000_000);
        eprintln!("hpcc eta={eta} {o:?} {:?}", cc.state());
        assert!(o.goodput_bps > lo * link.capacity_bps && o.goodput_bps < hi * link.capacity_bps, "utilisation tracks η: {o:?}");
        assert!(o.mean_queue < 1.0 && o.max_queue <= 2 && o.loss_rate == 0.0, "{o:?}");
        // Wc is committed at most once per RTT (1 s / 411.2 µs = 2 432).
        let rtts = 1e9 / 411_200.0;
        let commits = cc.state()["wc_commits"];
        assert!(commits <= rtts && commits > 0.9 * rtts, "Wc committed once per RTT: {commits}");
    }
}

#[test]
fn powertcp_fills_the_link_with_a_queue_of_beta() {
    // PowerTCP's fixed point: cwnd = cwnd/Γ + β with Γ =
    // (q + B·τ)/(B·τ) at full rate gives a queue of β = HostBw·τ/N, here
    // 2 Gb/s · 411.2 µs / 10 = 7.3 packets; θ-PowerTCP reaches the same
    // point from the RTT alone.
    let link = int_link();
    let beta_pkts = 2e9 / 8.0 * 411.2e-6 / 10.0 / MSS as f64;
    for name in ["powertcp", "theta-powertcp"] {
        let mut cc = build(name, &[], &link);
        let o = run(cc.as_mut(), &link, 1_000_000_000);
        eprintln!("{name} {o:?} {:?}", cc.state());
        assert!(o.goodput_bps > 0.98 * link.capacity_bps, "{name}: {o:?}");
        assert!((o.mean_queue - beta_pkts).abs() < 0.25 * beta_pkts, "{name}: queue ≈ β = {beta_pkts:.1} packets: {o:?}");
        assert!(o.max_queue as f64 <= 2.0 * beta_pkts && o.loss_rate == 0.0, "{name}: {o:?}");
        // At most one window update per RTT (1 s / 411.2 µs = 2 432; the
        // queue lengthens the RTT by about 7 packets' 82 µs).
        let updates = cc.state()["updates"];
        assert!(updates <= 1e9 / 411_200.0 && updates > 0.8 * 1e9 / 411_200.0, "{name}: {updates} updates");
    }
    // More expected flows, smaller β: a shorter queue at the same rate.
    let mut cc = build("powertcp", &[("expected_flows", "40")], &link);
    let o = run(cc.as_mut(), &link, 1_000_000_000);
    eprintln!("powertcp N=40 {o:?}");
    assert!(o.goodput_bps > 0.98 * link.capacity_bps && o.mean_queue < 0.5 * beta_pkts, "{o:?}");
}

#[test]
fn swift_holds_the_delay_at_its_target() {
    // Swift: AIMD keeps the RTT at the target delay at full rate; the
    // target here is 450 µs + 1 hop × 1 µs + flow scaling at ~40 packets.
    let link = int_link();
    let mut cc = build("swift", &[("base_target_us", "450")], &link);
    let o = run(cc.as_mut(), &link, 1_000_000_000);
    let st = cc.state();
    eprintln!("swift {o:?} {st:?}");
    assert_eq!(st["hops"], 1.0, "hop count from the ACK's one INT record");
    let target_q = (st["target_delay_us"] - 411.2) / tx_us(&link);
    assert!(o.goodput_bps > 0.98 * link.capacity_bps, "{o:?}");
    assert!((o.mean_queue - target_q).abs() < 2.0, "queue ≈ target − base = {target_q:.1} packets: {o:?}");
    assert_eq!(o.loss_rate, 0.0);
}

#[test]
fn dcqcn_fills_the_link_with_ecn_at_k() {
    // DCQCN: CNPs from K-marked packets (at most one per 50 µs) hold
    // the queue near K while the link stays full. The paper's defaults at
    // 10 Gb/s behind a 20 Gb/s NIC, 20 µs base RTT (18 packets in flight).
    let link = Link { capacity_bps: 10e9, access_bps: 20e9, buffer_pkts: 1000, base_rtt_ns: 20_000, mark_k: Some(20), step_ns: 1_000 };
    let mut cc = build("dcqcn", &[], &link);
    let o = run(cc.as_mut(), &link, 200_000_000);
    let st = cc.state();
    eprintln!("dcqcn {o:?} {st:?}");
    assert!(o.goodput_bps > 0.95 * link.capacity_bps, "{o:?}");
    assert!(o.max_queue <= 30 && o.loss_rate == 0.0, "queue held near K = 20: {o:?}");
    assert!(st["cnps"] > 10.0 && st["cnps"] < 200_000_000.0 / 50_000.0, "CNPs, at most one per 50 µs: {st:?}");
}

/// 50 Mbit/s, 20 ms: a BDP of 125 kB, 89 packets of 1400 bytes.
fn bbr_link(buffer_pkts: usize) -> Link {
    Link { capacity_bps: 50e6, access_bps: 1e9, buffer_pkts, base_rtt_ns: 20_000_000, mark_k: None, step_ns: 50_000 }
}
const BBR_BDP_PKTS: f64 = 50e6 * 0.020 / 8.0 / MSS as f64;

/// BBRv1 (Cardwell et al., ACM Queue 2016; Linux tcp_bbr.c) on a deep
/// buffer (1000 packets, 11 BDPs): it fills the link, and its in-flight
/// cap of cwnd_gain·BDP = 2 BDP (plus the quantization budget) bounds the
/// standing queue to about one BDP however deep the buffer; pacing at the
/// estimated bandwidth keeps the mean queue far below that.
#[test]
fn bbr_fills_a_deep_buffered_link_with_less_than_a_bdp_queued() {
    let link = bbr_link(1000);
    let mut cc = build("bbr", &[], &link);
    let o = run(cc.as_mut(), &link, 20_000_000_000);
    eprintln!("bbr deep {o:?} {:?}", cc.state());
    assert!(o.goodput_bps > 0.95 * link.capacity_bps, "{o:?}");
    assert_eq!(o.loss_rate, 0.0, "{o:?}");
    assert!((o.max_queue as f64) < BBR_BDP_PKTS, "queue bounded by 1 BDP ({BBR_BDP_PKTS:.0} packets): {o:?}");
    assert!(o.mean_queue < 0.25 * BBR_BDP_PKTS, "{o:?}");
    let s = cc.state();
    assert_eq!(s["mode"], 2.0, "PROBE_BW");
    assert!((s["bw_mbps"] - 50.0).abs() < 1.0, "bandwidth estimate {}", s["bw_mbps"]);
    // cwnd = 2·bw·min_rtt + extra_acked + 3 TSO quanta of 4 packets (at
    // 6.2 MB/s pacing: 6 KB per ms), rounded up to even (+2 in phase 0).
    let bdp = s["bw_mbps"] * 1e6 / 8.0 * s["min_rtt_us"] * 1e-6 / MSS as f64;
    let cap = (2.0 * bdp).ceil() + s["extra_acked_pkts"] + 12.0 + 1.0 + 2.0;
    assert!(s["cwnd_pkts"] <= cap, "cwnd {} above 2 BDP + budget {cap}", s["cwnd_pkts"]);
}

/// BBRv3 (draft-ietf-ccwg-bbr-06) on the same deep buffer: full link, no
/// loss, a short queue.
#[test]
fn bbr3_fills_a_deep_buffered_link() {
    let link = bbr_link(1000);
    let mut cc = build("bbr3", &[], &link);
    let o = run(cc.as_mut(), &link, 20_000_000_000);
    eprintln!("bbr3 deep {o:?} {:?}", cc.state());
    assert!(o.goodput_bps > 0.95 * link.capacity_bps, "{o:?}");
    assert_eq!(o.loss_rate, 0.0, "{o:?}");
    assert!((o.max_queue as f64) < BBR_BDP_PKTS && o.mean_queue < 0.25 * BBR_BDP_PKTS, "{o:?}");
}

/// A buffer of 10 packets, a ninth of the BDP. BBRv1 ignores loss (beyond
/// a round of packet conservation): every 1.25 gain phase pushes a quarter
/// BDP more than the buffer holds, so it keeps losing a few percent (the
/// loss that motivated BBRv2/v3). BBRv3 caps inflight at inflight_longterm
/// after a probe loses more than 2 %, probes only every 2–3 s, and cuts
/// its short-term model on loss: its loss stays a small fraction of that.
#[test]
fn bbr_loses_heavily_in_a_shallow_buffer_where_bbr3_does_not() {
    let link = bbr_link(10);
    let mut v1 = build("bbr", &[], &link);
    let o1 = run(v1.as_mut(), &link, 20_000_000_000);
    eprintln!("bbr shallow {o1:?} {:?}", v1.state());
    let mut v3 = build("bbr3", &[], &link);
    let o3 = run(v3.as_mut(), &link, 20_000_000_000);
    eprintln!("bbr3 shallow {o3:?} {:?}", v3.state());
    assert!(o1.goodput_bps > 0.95 * link.capacity_bps, "{o1:?}");
    assert!(o1.loss_rate > 0.02, "{o1:?}");
    assert!(o3.goodput_bps > 0.9 * link.capacity_bps, "{o3:?}");
    assert!(o3.loss_rate < 0.005, "{o3:?}");
    assert!(o1.loss_rate > 10.0 * o3.loss_rate, "{o1:?} vs {o3:?}");
    assert!(v3.state()["inflight_longterm"] > 0.0, "loss set inflight_longterm");
}
