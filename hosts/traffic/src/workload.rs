//! Workloads: which flows start when. All times are ns since the start of
//! the run. A datapath polls [`Workload::poll`] and reports flow ends
//! through [`Workload::on_flow_end`] (closed-loop workloads need them).

use crate::cdf::EmpiricalCdf;
use crate::rng::{Pareto, Rng};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;

/// One flow to run.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    pub id: u32,
    /// Start time (ns since the run started).
    pub start_ns: u64,
    pub dst: SocketAddr,
    /// Bytes to send; `None` = long flow until `stop_ns`.
    pub size: Option<u64>,
    /// Long flows: when to stop sending.
    pub stop_ns: Option<u64>,
    /// Payload seed (the receiver verifies bytes against it).
    pub seed: u64,
    /// Workload name ("long", "incast", "poisson", "closed", "single",
    /// "incast-mix").
    pub workload: &'static str,
    /// Incast round (or the long-flow index), when meaningful.
    pub round: Option<u32>,
}

pub trait Workload: Send {
    /// Flows whose start time has come (start_ns <= now_ns), in order.
    fn poll(&mut self, now_ns: u64) -> Vec<FlowSpec>;
    /// The next start time, if one is already scheduled.
    fn next_start_ns(&self) -> Option<u64>;
    /// A flow ended (completed or failed).
    fn on_flow_end(&mut self, _id: u32, _now_ns: u64) {}
    /// No flow will be started any more.
    fn is_finished(&self) -> bool;
}

fn flow_seed(base: u64, id: u32) -> u64 {
    let mut r = Rng::new(base ^ ((id as u64) << 32 | 0x5eed));
    r.next_u64()
}

/// A fixed list of flows (single flows and long flows with a schedule).
pub struct Schedule {
    pending: VecDeque<FlowSpec>,
}

impl Schedule {
    /// `flows`: (dst, start_ns, size, stop_ns). Ids are `first_id`, +1, ...
    pub fn new(
        workload: &'static str,
        flows: Vec<(SocketAddr, u64, Option<u64>, Option<u64>)>,
        first_id: u32,
        seed: u64,
    ) -> Schedule {
        let mut v: Vec<FlowSpec> = flows
            .into_iter()
            .enumerate()
            .map(|(i, (dst, start_ns, size, stop_ns))| {
                let id = first_id.wrapping_add(i as u32);
                FlowSpec {
                    id,
                    start_ns,
                    dst,
                    size,
                    stop_ns,
                    seed: flow_seed(seed, id),
                    workload,
                    round: Some(i as u32),
                }
            })
            .collect();
        v.sort_by_key(|f| f.start_ns);
        Schedule { pending: v.into() }
    }
}

impl Workload for Schedule {
    fn poll(&mut self, now_ns: u64) -> Vec<FlowSpec> {
        let mut out = Vec::new();
        while self.pending.front().is_some_and(|f| f.start_ns <= now_ns) {
            if let Some(f) = self.pending.pop_front() {
                out.push(f);
            }
        }
        out
    }
    fn next_start_ns(&self) -> Option<u64> {
        self.pending.front().map(|f| f.start_ns)
    }
    fn is_finished(&self) -> bool {
        self.pending.is_empty()
    }
}

/// Synchronized incast, sender side: round r starts at
/// `first_ns + r * interval_ns` (every sender computes the same instants
/// from the shared clock) or, if this sender's flow of the previous round
/// is still running, as soon as it ends. `interval_ns = 0`: back to back.
pub struct Incast {
    dst: SocketAddr,
    size: u64,
    rounds: u32,
    first_ns: u64,
    interval_ns: u64,
    next_round: u32,
    running: Option<u32>,
    last_end_ns: u64,
    first_id: u32,
    seed: u64,
}

impl Incast {
    pub fn new(dst: SocketAddr, size: u64, rounds: u32, first_ns: u64, interval_ns: u64, first_id: u32, seed: u64) -> Incast {
        Incast { dst, size, rounds, first_ns, interval_ns, next_round: 0, running: None, last_end_ns: 0, first_id, seed }
    }
    fn due(&self) -> u64 {
        (self.first_ns + self.interval_ns * self.next_round as u64).max(self.last_end_ns)
    }
}

impl Workload for Incast {
    fn poll(&mut self, now_ns: u64) -> Vec<FlowSpec> {
        if self.running.is_some() || self.next_round >= self.rounds || now_ns < self.due() {
            return vec![];
        }
        let id = self.first_id.wrapping_add(self.next_round);
        let f = FlowSpec {
            id,
            start_ns: self.due(),
            dst: self.dst,
            size: Some(self.size),
            stop_ns: None,
            seed: flow_seed(self.seed, id),
            workload: "incast",
            round: Some(self.next_round),
        };
        self.next_round += 1;
        self.running = Some(id);
        vec![f]
    }
    fn next_start_ns(&self) -> Option<u64> {
        (self.running.is_none() && self.next_round < self.rounds).then(|| self.due())
    }
    fn on_flow_end(&mut self, id: u32, now_ns: u64) {
        if self.running == Some(id) {
            self.running = None;
            self.last_end_ns = now_ns;
        }
    }
    fn is_finished(&self) -> bool {
        self.next_round >= self.rounds
    }
}

/// How flow sizes are drawn.
#[derive(Debug, Clone, PartialEq)]
pub enum SizeDist {
    Fixed(u64),
    /// Pareto with this shape and mean (bytes), optionally capped.
    Pareto { dist: Pareto, max_bytes: Option<u64> },
    /// An empirical distribution (web search, FB_Hadoop, ...: crate::cdf).
    Cdf(Arc<EmpiricalCdf>),
}

impl SizeDist {
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        match *self {
            SizeDist::Fixed(n) => n,
            SizeDist::Pareto { dist, max_bytes } => {
                let v = dist.sample(rng).ceil().max(1.0);
                let v = if v >= u64::MAX as f64 { u64::MAX } else { v as u64 };
                max_bytes.map_or(v, |m| v.min(m))
            }
            SizeDist::Cdf(ref c) => c.sample(rng),
        }
    }
    pub fn mean(&self) -> f64 {
        match *self {
            SizeDist::Fixed(n) => n as f64,
            SizeDist::Pareto { dist, .. } => dist.mean(),
            SizeDist::Cdf(ref c) => c.mean(),
        }
    }
}

/// Open-loop Poisson arrivals: inter-arrival times are exponential with
/// rate lambda = load * link_bps / (8 * mean size); each flow goes to a
/// destination drawn uniformly from `dsts` (all-to-all: every other host;
/// a fixed pair: one). Ends after `max_flows` or at `end_ns`. The load
/// counts flow bytes (payload), as the HPCC generator does; headers add
/// to it on the wire.
pub struct Poisson {
    dsts: Vec<SocketAddr>,
    sizes: SizeDist,
    mean_gap_ns: f64,
    next_ns: f64,
    issued: u32,
    max_flows: Option<u32>,
    end_ns: Option<u64>,
    rng: Rng,
    first_id: u32,
    seed: u64,
}

impl Poisson {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dsts: Vec<SocketAddr>,
        sizes: SizeDist,
        load: f64,
        link_bps: f64,
        start_ns: u64,
        max_flows: Option<u32>,
        end_ns: Option<u64>,
        first_id: u32,
        seed: u64,
    ) -> Result<Poisson, String> {
        if dsts.is_empty() {
            return Err("no destination".into());
        }
        if !(load > 0.0) || !(link_bps > 0.0) || !load.is_finite() || !link_bps.is_finite() {
            return Err("load and link rate must be > 0".into());
        }
        if !(sizes.mean() >= 1.0) {
            return Err("mean flow size must be >= 1 byte".into());
        }
        let lambda = load * link_bps / (8.0 * sizes.mean());
        let mean_gap_ns = 1e9 / lambda;
        let mut rng = Rng::new(seed);
        let first = start_ns as f64 + rng.exp(mean_gap_ns);
        Ok(Poisson { dsts, sizes, mean_gap_ns, next_ns: first, issued: 0, max_flows, end_ns, rng, first_id, seed })
    }
    /// Flow arrival rate (flows/s).
    pub fn lambda(&self) -> f64 {
        1e9 / self.mean_gap_ns
    }
}

impl Workload for Poisson {
    fn poll(&mut self, now_ns: u64) -> Vec<FlowSpec> {
        let mut out = Vec::new();
        while !self.is_finished() && self.next_ns <= now_ns as f64 {
            let id = self.first_id.wrapping_add(self.issued);
            let dst = self.dsts[self.rng.below(self.dsts.len() as u64) as usize];
            let size = self.sizes.sample(&mut self.rng);
            out.push(FlowSpec {
                id,
                start_ns: self.next_ns as u64,
                dst,
                size: Some(size),
                stop_ns: None,
                seed: flow_seed(self.seed, id),
                workload: "poisson",
                round: None,
            });
            self.issued += 1;
            self.next_ns += self.rng.exp(self.mean_gap_ns);
        }
        out
    }
    fn next_start_ns(&self) -> Option<u64> {
        (!self.is_finished()).then_some(self.next_ns.ceil() as u64)
    }
    fn is_finished(&self) -> bool {
        self.max_flows.is_some_and(|m| self.issued >= m) || self.end_ns.is_some_and(|e| self.next_ns > e as f64)
    }
}

/// Incast events as a Poisson process over a group of hosts (HPCC
/// SIGCOMM 2019 §5.3: 60 senders × 500 KB to one receiver, on top of the
/// background traffic). Events arrive at rate
/// lambda = share * N * link_bps / (8 * fan_in * size), so they add
/// `share` of the group's N host links' capacity; each picks a receiver
/// uniformly from the group and `fan_in` distinct senders uniformly from
/// the others (a partial Fisher-Yates shuffle). Every member runs the same
/// schedule from the same `schedule_seed` and starts the flows where it is
/// a sender, all at the event's instant; `round` is the event's number.
pub struct IncastMix {
    group: Vec<SocketAddr>,
    me: usize,
    fan_in: usize,
    size: u64,
    mean_gap_ns: f64,
    /// The schedule's next event (time), not yet drawn.
    next_ns: f64,
    events: u32,
    max_events: Option<u32>,
    end_ns: Option<u64>,
    rng: Rng,
    /// The next event this host sends in: (time, receiver, event number).
    mine: Option<(f64, usize, u32)>,
    issued: u32,
    first_id: u32,
    seed: u64,
}

impl IncastMix {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        group: Vec<SocketAddr>,
        me: usize,
        fan_in: usize,
        size: u64,
        share: f64,
        link_bps: f64,
        start_ns: u64,
        max_events: Option<u32>,
        end_ns: Option<u64>,
        first_id: u32,
        seed: u64,
        schedule_seed: u64,
    ) -> Result<IncastMix, String> {
        if group.len() < 2 {
            return Err("an incast mix needs a group of at least two hosts".into());
        }
        if me >= group.len() {
            return Err("this host is not in the incast group".into());
        }
        if fan_in == 0 || size == 0 {
            return Err("fan-in and size must be >= 1".into());
        }
        if !(share > 0.0) || !(link_bps > 0.0) || !share.is_finite() || !link_bps.is_finite() {
            return Err("share and link rate must be > 0".into());
        }
        let fan_in = fan_in.min(group.len() - 1);
        let lambda = share * group.len() as f64 * link_bps / (8.0 * fan_in as f64 * size as f64);
        let mean_gap_ns = 1e9 / lambda;
        let mut rng = Rng::new(schedule_seed);
        let next_ns = start_ns as f64 + rng.exp(mean_gap_ns);
        let mut w = IncastMix {
            group,
            me,
            fan_in,
            size,
            mean_gap_ns,
            next_ns,
            events: 0,
            max_events,
            end_ns,
            rng,
            mine: None,
            issued: 0,
            first_id,
            seed,
        };
        w.advance();
        Ok(w)
    }

    /// Incast events per second.
    pub fn lambda(&self) -> f64 {
        1e9 / self.mean_gap_ns
    }

    fn schedule_over(&self) -> bool {
        self.max_events.is_some_and(|m| self.events >= m) || self.end_ns.is_some_and(|e| self.next_ns > e as f64)
    }

    /// One event of the shared schedule: (receiver, senders).
    fn draw(&mut self) -> (usize, Vec<usize>) {
        let n = self.group.len();
        let rx = self.rng.below(n as u64) as usize;
        let mut idx: Vec<usize> = (0..n).filter(|&i| i != rx).collect();
        for k in 0..self.fan_in {
            let j = k + self.rng.below((idx.len() - k) as u64) as usize;
            idx.swap(k, j);
        }
        idx.truncate(self.fan_in);
        (rx, idx)
    }

    /// Draws events until one has this host among its senders.
    fn advance(&mut self) {
        self.mine = None;
        while !self.schedule_over() {
            let t = self.next_ns;
            let (rx, senders) = self.draw();
            let ev = self.events;
            self.events += 1;
            self.next_ns += self.rng.exp(self.mean_gap_ns);
            if senders.contains(&self.me) {
                self.mine = Some((t, rx, ev));
                return;
            }
        }
    }
}

impl Workload for IncastMix {
    fn poll(&mut self, now_ns: u64) -> Vec<FlowSpec> {
        let mut out = Vec::new();
        while let Some((t, rx, ev)) = self.mine {
            if t > now_ns as f64 {
                break;
            }
            let id = self.first_id.wrapping_add(self.issued);
            out.push(FlowSpec {
                id,
                start_ns: t as u64,
                dst: self.group[rx],
                size: Some(self.size),
                stop_ns: None,
                seed: flow_seed(self.seed, id),
                workload: "incast-mix",
                round: Some(ev),
            });
            self.issued += 1;
            self.advance();
        }
        out
    }
    fn next_start_ns(&self) -> Option<u64> {
        self.mine.map(|(t, _, _)| t.ceil() as u64)
    }
    fn is_finished(&self) -> bool {
        self.mine.is_none()
    }
}

/// Closed loop: keeps `concurrency` flows running; when one ends the next
/// starts after an optional exponential think time. Ends after
/// `max_flows` flows have been started or at `end_ns`.
pub struct ClosedLoop {
    dsts: Vec<SocketAddr>,
    sizes: SizeDist,
    concurrency: u32,
    think_mean_ns: f64,
    running: u32,
    ready: Vec<u64>,
    issued: u32,
    max_flows: Option<u32>,
    end_ns: Option<u64>,
    rng: Rng,
    first_id: u32,
    seed: u64,
}

impl ClosedLoop {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        dsts: Vec<SocketAddr>,
        sizes: SizeDist,
        concurrency: u32,
        think_mean_ns: f64,
        start_ns: u64,
        max_flows: Option<u32>,
        end_ns: Option<u64>,
        first_id: u32,
        seed: u64,
    ) -> Result<ClosedLoop, String> {
        if dsts.is_empty() {
            return Err("no destination".into());
        }
        if concurrency == 0 {
            return Err("concurrency must be >= 1".into());
        }
        Ok(ClosedLoop {
            dsts,
            sizes,
            concurrency,
            think_mean_ns,
            running: 0,
            ready: vec![start_ns; concurrency as usize],
            issued: 0,
            max_flows,
            end_ns,
            rng: Rng::new(seed),
            first_id,
            seed,
        })
    }
}

impl Workload for ClosedLoop {
    fn poll(&mut self, now_ns: u64) -> Vec<FlowSpec> {
        let mut out = Vec::new();
        self.ready.sort_unstable_by(|a, b| b.cmp(a));
        while let Some(&t) = self.ready.last() {
            if t > now_ns || self.is_finished() || self.running >= self.concurrency {
                break;
            }
            self.ready.pop();
            let id = self.first_id.wrapping_add(self.issued);
            let dst = self.dsts[self.rng.below(self.dsts.len() as u64) as usize];
            let size = self.sizes.sample(&mut self.rng);
            out.push(FlowSpec {
                id,
                start_ns: t,
                dst,
                size: Some(size),
                stop_ns: None,
                seed: flow_seed(self.seed, id),
                workload: "closed",
                round: None,
            });
            self.issued += 1;
            self.running += 1;
        }
        out
    }
    fn next_start_ns(&self) -> Option<u64> {
        if self.is_finished() {
            return None;
        }
        self.ready.iter().min().copied()
    }
    fn on_flow_end(&mut self, _id: u32, now_ns: u64) {
        self.running = self.running.saturating_sub(1);
        let think = if self.think_mean_ns > 0.0 { self.rng.exp(self.think_mean_ns) as u64 } else { 0 };
        self.ready.push(now_ns + think);
    }
    fn is_finished(&self) -> bool {
        self.max_flows.is_some_and(|m| self.issued >= m)
            || self.end_ns.is_some_and(|e| self.ready.iter().all(|&t| t > e) && !self.ready.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(i: u8) -> SocketAddr {
        format!("10.99.0.{i}:7360").parse().unwrap()
    }

    #[test]
    fn schedule_orders_and_stops() {
        let mut s = Schedule::new("long", vec![(a(1), 2_000, None, Some(9_000)), (a(2), 1_000, None, Some(5_000))], 10, 1);
        assert_eq!(s.next_start_ns(), Some(1_000));
        assert!(s.poll(500).is_empty());
        let f = s.poll(1_500);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].dst, a(2));
        assert_eq!(f[0].id, 11);
        assert_eq!(s.poll(10_000).len(), 1);
        assert!(s.is_finished());
    }

    #[test]
    fn incast_rounds_are_synchronized_and_never_overlap() {
        let mut w = Incast::new(a(1), 1000, 3, 1_000_000, 10_000_000, 0, 1);
        assert!(w.poll(999_999).is_empty());
        let f = w.poll(1_000_000);
        assert_eq!(f[0].round, Some(0));
        assert!(w.poll(11_000_000).is_empty(), "round 0 still running");
        w.on_flow_end(0, 12_000_000);
        let f = w.poll(12_000_000);
        assert_eq!(f[0].round, Some(1), "late round starts when the previous ends");
        w.on_flow_end(1, 13_000_000);
        assert_eq!(w.next_start_ns(), Some(21_000_000));
        assert_eq!(w.poll(21_000_000)[0].round, Some(2));
        assert!(w.is_finished());
    }

    #[test]
    fn poisson_rate_and_load() {
        // 50% of 100 Mb/s with 25 kB mean flows: lambda = 250 flows/s
        let sizes = SizeDist::Pareto { dist: Pareto::with_mean(2.5, 25_000.0).unwrap(), max_bytes: None };
        let mut w = Poisson::new(vec![a(1), a(2)], sizes, 0.5, 100e6, 0, None, Some(400_000_000_000), 0, 9).unwrap();
        assert!((w.lambda() - 250.0).abs() < 1e-9);
        let mut counts_per_s = Vec::new();
        let mut total_bytes = 0u64;
        let mut per_dst = [0u32; 2];
        let mut prev = 0u64;
        let mut gaps = Vec::new();
        for sec in 1..=400u64 {
            let f = w.poll(sec * 1_000_000_000);
            for x in &f {
                total_bytes += x.size.unwrap();
                per_dst[(x.dst == a(2)) as usize] += 1;
                gaps.push((x.start_ns - prev) as f64);
                prev = x.start_ns;
            }
            counts_per_s.push(f.len() as f64);
        }
        let n: f64 = counts_per_s.iter().sum();
        // Poisson: mean 250/s over 400 s -> 100000 +- 316 (1 sigma)
        assert!((n - 100_000.0).abs() < 5.0 * 316.0, "{n}");
        // per-second counts: variance == mean for a Poisson process
        let m = n / 400.0;
        let var = counts_per_s.iter().map(|c| (c - m).powi(2)).sum::<f64>() / 399.0;
        assert!((var / m - 1.0).abs() < 0.25, "dispersion {}", var / m);
        // inter-arrival gaps exponential: CV ~ 1
        let gm = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let gsd = (gaps.iter().map(|g| (g - gm).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((gsd / gm - 1.0).abs() < 0.03, "cv {}", gsd / gm);
        // offered load = bytes * 8 / time / link
        let load = total_bytes as f64 * 8.0 / 400.0 / 100e6;
        assert!((load - 0.5).abs() < 0.02, "load {load}");
        assert!((per_dst[0] as i64 - per_dst[1] as i64).abs() < 1500, "{per_dst:?}");
    }

    #[test]
    fn poisson_is_seeded() {
        let sizes = SizeDist::Pareto { dist: Pareto::with_mean(1.2, 30_000.0).unwrap(), max_bytes: Some(10_000_000) };
        let run = |seed| {
            let mut w = Poisson::new(vec![a(1)], sizes.clone(), 0.3, 1e8, 0, Some(50), None, 0, seed).unwrap();
            let mut v = vec![];
            while !w.is_finished() {
                v.extend(w.poll(w.next_start_ns().unwrap()).into_iter().map(|f| (f.start_ns, f.size, f.seed)));
            }
            v
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
        assert_eq!(run(1).len(), 50);
        assert!(run(3).iter().all(|x| x.1.unwrap() <= 10_000_000));
    }

    #[test]
    fn closed_loop_keeps_n_running() {
        let mut w = ClosedLoop::new(vec![a(1)], SizeDist::Fixed(1000), 3, 0.0, 0, Some(7), None, 100, 1).unwrap();
        let f = w.poll(0);
        assert_eq!(f.len(), 3);
        assert!(w.poll(10).is_empty());
        w.on_flow_end(f[0].id, 50);
        let g = w.poll(50);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].start_ns, 50);
        for i in 0..4 {
            w.on_flow_end(0, 60 + i);
        }
        let h = w.poll(100);
        assert_eq!(h.len(), 3, "capped by max_flows = 7");
        assert!(w.is_finished());
        let ids: std::collections::HashSet<u32> = f.iter().chain(&g).chain(&h).map(|x| x.id).collect();
        assert_eq!(ids.len(), 7);
    }

    #[test]
    fn poisson_with_an_empirical_cdf_offers_its_load() {
        // FB_Hadoop (mean 120 420.75 B) at 30 % of 100 Gbit/s: lambda =
        // 0.3e11 / (8 * 120420.75) = 31 141 flows/s.
        let c = Arc::new(EmpiricalCdf::named("fb_hadoop").unwrap());
        let mut w = Poisson::new(vec![a(1), a(2), a(3)], SizeDist::Cdf(c.clone()), 0.3, 100e9, 0, None, Some(2_000_000_000), 0, 4).unwrap();
        let lambda = 0.3 * 100e9 / (8.0 * c.mean());
        assert!((w.lambda() - lambda).abs() < 1e-6 * lambda);
        let flows = w.poll(3_000_000_000);
        let n = flows.len() as f64;
        // Poisson count over 2 s: mean 2 lambda, sd sqrt(2 lambda).
        assert!((n - 2.0 * lambda).abs() < 5.0 * (2.0 * lambda).sqrt(), "{n} flows");
        let bytes: f64 = flows.iter().map(|f| f.size.unwrap() as f64).sum();
        let load = bytes * 8.0 / 2.0 / 100e9;
        assert!((load - 0.3).abs() < 0.03, "offered load {load}");
        assert!(w.is_finished());
    }

    #[test]
    fn incast_mix_members_share_one_schedule() {
        let group: Vec<SocketAddr> = (1..=8).map(a).collect();
        let make = |me| IncastMix::new(group.clone(), me, 3, 500_000, 0.02, 100e9, 1_000, None, Some(200_000_000), 100, 7, 42).unwrap();
        // 2 % of 8 x 100 Gbit/s in events of 3 x 500 KB: 133.3 events/s.
        assert!((make(0).lambda() - 0.02 * 8.0 * 100e9 / (8.0 * 3.0 * 500_000.0)).abs() < 1e-9);
        let mut by_event: std::collections::BTreeMap<u32, Vec<(usize, u64, SocketAddr)>> = Default::default();
        for me in 0..8 {
            let mut w = make(me);
            let mut ids = vec![];
            while let Some(t) = w.next_start_ns() {
                for f in w.poll(t) {
                    assert_eq!(f.size, Some(500_000));
                    assert_eq!(f.workload, "incast-mix");
                    assert_ne!(f.dst, group[me], "a sender never sends to itself");
                    ids.push(f.id);
                    by_event.entry(f.round.unwrap()).or_default().push((me, f.start_ns, f.dst));
                }
            }
            assert!(w.is_finished());
            assert!(ids.iter().enumerate().all(|(i, &id)| id == 100 + i as u32));
        }
        assert!(by_event.len() > 10, "{} events", by_event.len());
        for (ev, v) in &by_event {
            // Every event has exactly fan_in senders, one instant, one receiver.
            assert_eq!(v.len(), 3, "event {ev}: {v:?}");
            assert!(v.iter().all(|x| x.1 == v[0].1 && x.2 == v[0].2));
        }
        // The schedule is the seed's: another seed, other events.
        let other = IncastMix::new(group.clone(), 0, 3, 500_000, 0.02, 100e9, 1_000, None, Some(200_000_000), 100, 7, 43).unwrap();
        assert_ne!(other.next_start_ns(), make(0).next_start_ns());
        assert!(IncastMix::new(group.clone(), 8, 3, 1, 0.1, 1e9, 0, None, None, 0, 1, 1).is_err());
        assert!(IncastMix::new(vec![a(1)], 0, 3, 1, 0.1, 1e9, 0, None, None, 0, 1, 1).is_err());
    }
}
