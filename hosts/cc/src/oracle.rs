//! Oracle TIMELY: a rate controller that holds the bottleneck queue at a
//! small target using what only the switch knows — the exact depth each
//! packet found at each hop, and so its change from packet to packet.
//!
//! TIMELY infers queueing from the RTT gradient. Given the queue itself,
//! a sender can do what XCP's routers do (Katabi et al., SIGCOMM 2002):
//! correct the aggregate rate by the rate mismatch *and* by the standing
//! queue, each with its own gain, normalised by the loop delay so that the
//! loop is stable whatever the link rate and the number of flows. With the
//! bottleneck's packet time `t = P/C` (P bits per queued packet, C the
//! bottleneck rate) and `m` the deepest queue the flow's reports show:
//!
//! ```text
//! (λ − C)/C  =  t · dm/dt                   rate mismatch, from the queue's change
//! d ln R/dt  = −α · t·(dm/dt) / d  −  β · t·(m − q*) / d²  +  a/R
//! ```
//!
//! which, applied by every flow to its own rate R with the same `m`, makes
//! the aggregate λ = ΣR obey XCP's law `dλ/dt = [α(C − λ) − β·P(m − q*)/d]/d`
//! (XCP's Δ = α·d·S − β·Q per control interval d); XCP's stability theorem
//! holds for 0 < α < π/(4√2) with β = α²√2, whatever C, d and N, and we take
//! its values α = 0.4, β = 0.226. In discrete form, once per report set
//! (one packet's reports) arriving `Δt` after the previous one:
//!
//! ```text
//! ln R += −α·t·(m − m_prev)/d − β·t·(m − q*)·Δt/d²        (|step| ≤ ln max_step)
//! R    += κ·β·P·Δt/d²                                     (fairness, see below)
//! ```
//!
//! The first term is a difference of consecutive depths, so noise in `m`
//! does not accumulate: it telescopes to `−α·t/d` times the net change.
//! `d` is the loop delay: the flow's base RTT plus the interval between its
//! reports (a flow learns of the queue only from its own packets, so when
//! they are sparse — many flows, or sampled telemetry — the loop is that
//! much slower and the gains shrink accordingly).
//!
//! Multiplicative corrections keep rate ratios, so alone they would keep any
//! unfairness. The additive term gives every flow the same pull: a flow is
//! at rest where `R·β·t·(m − q*)/d² = κ·β·P/d²`, i.e. `R = κ·C/(m − q*)`,
//! the same for every flow whatever its own `d`. Summed over N flows at
//! λ = C the standing queue is `q* + N·κ` packets: κ is the queue each flow
//! adds to buy convergence to fairness.

use std::collections::BTreeMap;

use crate::params::{ParamInfo, Params};
use crate::signal::{Channel, ChannelConfig, HopView, Source};
use crate::{AckSample, CcError, CongestionControl, PathInfo, QueueReport};

pub(crate) const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "target_pkts", default: "1", doc: "target queue q*, packets: one packet waiting keeps the link busy between updates" },
    ParamInfo { name: "alpha", default: "0.4", doc: "gain on the rate mismatch t·dm/dt per loop delay (XCP: 0.4)" },
    ParamInfo { name: "beta", default: "0.226", doc: "gain on the standing queue t·(m − q*)/d per loop delay (XCP: α²√2 = 0.226)" },
    ParamInfo { name: "drain_floor", default: "0.5", doc: "while an excess queue drains, the standing-queue term never asks for less than this fraction of the line rate (anti-windup)" },
    ParamInfo { name: "probe", default: "1", doc: "while every report shows the queue below target, the assumed shortfall grows by this factor per loop delay (1 = never)" },
    ParamInfo { name: "loss_cut", default: "0.5", doc: "a retransmission timeout (nothing came back, so no report either) cuts the rate by this fraction, at most once per loop delay" },
    ParamInfo { name: "fair_pkts", default: "0.05", doc: "κ: additive increase κ·β·P/d² per second; each flow adds κ packets to the standing queue" },
    ParamInfo { name: "pkt_bytes", default: "1500", doc: "bytes per queued packet P (the bottleneck's packet time is P/line rate)" },
    ParamInfo { name: "rtt_us", default: "0", doc: "RTT part of the loop delay d, µs; 0 = the flow's smallest measured RTT" },
    ParamInfo { name: "max_step", default: "2", doc: "largest factor the rate changes by in one update (up or down)" },
    ParamInfo { name: "min_rate_mbps", default: "0.1", doc: "rate floor, Mbit/s" },
    ParamInfo { name: "line_rate_mbps", default: "0", doc: "bottleneck rate C and rate ceiling, Mbit/s; 0 = PathInfo.line_rate_bps, or 10000 if unknown" },
    ParamInfo { name: "init_rate_mbps", default: "0", doc: "initial rate, Mbit/s; 0 = line rate (as TIMELY)" },
    ParamInfo { name: "source", default: "ack", doc: "where reports come from: ack (in-band hop records echoed by the receiver) or postcard (the collector returns each packet's postcard)" },
    ParamInfo { name: "hop", default: "each", doc: "which in-band records the law sees: each (every hop, the deepest governs), max (the shim's path maximum only), last (the newest hop only)" },
    ParamInfo { name: "sample_every", default: "1", doc: "one packet in N carries its report" },
    ParamInfo { name: "delay_us", default: "0", doc: "each report reaches the law this much later (its value is that much older), µs" },
    ParamInfo { name: "levels", default: "0", doc: "quantise each depth to L geometric levels with unbiased random rounding (PINT); 0 = exact" },
    ParamInfo { name: "levels_max_pkts", default: "255", doc: "the top quantisation level, packets" },
];

/// Parameters of [`QueueTarget`], in SI units.
#[derive(Debug, Clone, PartialEq)]
pub struct LawParams {
    pub target_pkts: f64,
    pub alpha: f64,
    pub beta: f64,
    /// Aggregate rate fraction the standing-queue term drains an excess at
    /// (at most): its per-loop-delay cut is clamped to α·(1 − drain_floor).
    pub drain_floor: f64,
    /// Growth of the assumed shortfall per loop delay the queue stays
    /// below target (1 = none).
    pub probe_base: f64,
    /// Fraction a loss cuts the rate by (at most once per loop delay).
    pub loss_cut: f64,
    pub fair_pkts: f64,
    pub pkt_bits: f64,
    /// Fixed RTT part of the loop delay, s (None: measured).
    pub rtt_s: Option<f64>,
    pub max_step: f64,
    pub min_rate_bps: f64,
    /// Bottleneck rate C and ceiling.
    pub line_rate_bps: f64,
}

/// The below-target shortfall grows by at most this many factors of
/// `probe_base`.
const PROBE_MAX_DOUBLINGS: f64 = 10.0;
/// Loop delays below target before the shortfall starts to grow.
const PROBE_AFTER: f64 = 2.0;

/// Reports of a hop older than this many loop delays are forgotten (the
/// path no longer crosses it).
const HOP_EXPIRY_DELAYS: f64 = 8.0;

/// The queue-target law, independent of how the reports arrive.
#[derive(Debug, Clone)]
pub struct QueueTarget {
    p: LawParams,
    rate: f64,
    /// Latest depth per hop and when (sender clock, ns) it arrived.
    hops: BTreeMap<u32, (f64, u64)>,
    /// The governing depth m at the previous update.
    prev_m: Option<f64>,
    /// Since when (ns) every report has shown the queue below target.
    below_since: Option<u64>,
    /// When a loss last cut the rate.
    last_loss_cut_ns: Option<u64>,
    last_update_ns: Option<u64>,
    /// Smoothed interval between updates, s (0: none yet).
    gap_s: f64,
    min_rtt_s: Option<f64>,
    // for state()
    m: f64,
    governing: u32,
    d_s: f64,
    last_step: f64,
    updates: u64,
}

impl QueueTarget {
    pub fn new(p: LawParams, init_rate_bps: f64) -> QueueTarget {
        let rate = init_rate_bps.clamp(p.min_rate_bps, p.line_rate_bps);
        QueueTarget {
            p,
            rate,
            hops: BTreeMap::new(),
            prev_m: None,
            below_since: None,
            last_loss_cut_ns: None,
            last_update_ns: None,
            gap_s: 0.0,
            min_rtt_s: None,
            m: 0.0,
            governing: 0,
            d_s: 0.0,
            last_step: 0.0,
            updates: 0,
        }
    }

    pub fn rate_bps(&self) -> f64 {
        self.rate
    }

    /// The bottleneck's packet time t = P/C, s.
    pub fn pkt_time_s(&self) -> f64 {
        self.p.pkt_bits / self.p.line_rate_bps
    }

    /// An RTT sample (the loop delay's RTT part is the smallest seen).
    pub fn on_rtt(&mut self, rtt_ns: u64) {
        let r = rtt_ns as f64 * 1e-9;
        self.min_rtt_s = Some(self.min_rtt_s.map_or(r, |m| m.min(r)));
    }

    /// The loop delay d = RTT + the interval between this flow's reports
    /// (at least its own packet gap at the current rate), s.
    pub fn loop_delay_s(&self) -> f64 {
        let own_gap = self.p.pkt_bits / self.rate;
        self.p.rtt_s.or(self.min_rtt_s).unwrap_or(0.0) + self.gap_s.max(own_gap)
    }

    /// A loss: the queue overflowed, and the dropped packet's report never
    /// comes back. Cut by `loss_cut`, at most once per loop delay (losses
    /// of one overflow come in bursts).
    pub fn on_loss(&mut self, now_ns: u64) {
        let d_ns = (self.loop_delay_s() * 1e9) as u64;
        if self.last_loss_cut_ns.is_some_and(|t| now_ns.saturating_sub(t) < d_ns) {
            return;
        }
        self.last_loss_cut_ns = Some(now_ns);
        self.rate = (self.rate * (1.0 - self.p.loss_cut)).clamp(self.p.min_rate_bps, self.p.line_rate_bps);
    }

    /// The deepest queue a report set shows, with the hop map updated.
    fn governing(&mut self, now_ns: u64, reports: &[QueueReport]) -> Option<(f64, u32)> {
        for r in reports {
            self.hops.insert(r.hop, (r.depth_pkts, now_ns));
        }
        let expiry = (HOP_EXPIRY_DELAYS * self.loop_delay_s() * 1e9) as u64;
        self.hops.retain(|_, (_, at)| now_ns.saturating_sub(*at) <= expiry);
        self.hops.iter().map(|(&h, &(q, _))| (q, h)).max_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// One packet's reports, arriving at `now_ns`.
    pub fn update(&mut self, now_ns: u64, reports: &[QueueReport]) {
        if reports.is_empty() {
            return;
        }
        let Some((m, hop)) = self.governing(now_ns, reports) else { return };
        let dt = self.last_update_ns.map(|t| now_ns.saturating_sub(t) as f64 * 1e-9);
        if let Some(dt) = dt {
            self.gap_s = if self.gap_s > 0.0 { self.gap_s + (dt - self.gap_s) / 8.0 } else { dt };
        }
        self.last_update_ns = Some(now_ns);
        let d = self.loop_delay_s();
        let t = self.pkt_time_s();
        let dt = dt.unwrap_or(0.0).min(d);
        let p = &self.p;
        let prev = self.prev_m.unwrap_or(m);
        // The standing-queue term, clamped: once the queue falls at the
        // pace it asks for, it asks no more (no wind-up while a big queue
        // drains). At rest (mismatch term = −excess) the aggregate is then
        // C·(1 − excess/α) ≥ C·drain_floor.
        let mut excess = (p.beta * t * (m - p.target_pkts) / d).min(p.alpha * (1.0 - p.drain_floor));
        // Conditional integration: while an excess queue already drains at
        // least at the pace the excess term asks for (t·dm/dt ≤ −excess/α),
        // the term waits — it would wind the rate down further than the
        // drain needs.
        if m > p.target_pkts && dt > 0.0 && p.alpha > 0.0 && t * (m - prev) / dt <= -excess / p.alpha {
            excess = 0.0;
        }
        // Below target the queue hides how much capacity is idle: paced
        // arrivals leave it near empty at any load below the line rate. A
        // queue at most half the target at every report for longer than
        // PROBE_AFTER loop delays means the link has room; the assumed
        // shortfall then grows by `probe` for every further loop delay
        // (TIMELY's hyper-active increase, in time).
        if m <= 0.5 * p.target_pkts {
            let since = *self.below_since.get_or_insert(now_ns);
            let lasted = now_ns.saturating_sub(since) as f64 * 1e-9 / d - PROBE_AFTER;
            if lasted > 0.0 {
                excess *= p.probe_base.powf(lasted.min(PROBE_MAX_DOUBLINGS));
            }
        } else {
            self.below_since = None;
        }
        let step = -p.alpha * t * (m - prev) / d - excess * dt / d;
        let lim = p.max_step.ln();
        let step = step.clamp(-lim, lim);
        let ai = p.fair_pkts * p.beta * p.pkt_bits * dt / (d * d);
        self.rate = (self.rate * step.exp() + ai).clamp(p.min_rate_bps, p.line_rate_bps);
        self.prev_m = Some(m);
        self.m = m;
        self.governing = hop;
        self.d_s = d;
        self.last_step = step;
        self.updates += 1;
    }
}

/// Oracle TIMELY as a congestion control: the [`Channel`] decides what
/// reaches the [`QueueTarget`] law.
#[derive(Debug, Clone)]
pub struct Oracle {
    law: QueueTarget,
    chan: Channel,
}

impl Oracle {
    pub fn new(law: QueueTarget, chan: Channel) -> Oracle {
        Oracle { law, chan }
    }

    pub fn law(&self) -> &QueueTarget {
        &self.law
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Oracle, CcError> {
        let (line, min_rate, init) = crate::timely::rate_bounds(p, path)?;
        let rtt_us = p.f64_in("rtt_us", 0.0, 1e9)?;
        let law = LawParams {
            target_pkts: p.f64_in("target_pkts", 0.0, 1e6)?,
            alpha: p.f64_in("alpha", 0.0, 10.0)?,
            beta: p.f64_in("beta", 0.0, 10.0)?,
            drain_floor: p.f64_in("drain_floor", 0.0, 1.0)?,
            probe_base: p.f64_in("probe", 1.0, 1e3)?,
            loss_cut: p.f64_in("loss_cut", 0.0, 1.0)?,
            fair_pkts: p.f64_in("fair_pkts", 0.0, 1e6)?,
            pkt_bits: p.f64_in("pkt_bytes", 1.0, 1e6)? * 8.0,
            rtt_s: (rtt_us > 0.0).then_some(rtt_us * 1e-6),
            max_step: p.f64_in("max_step", 1.0, 1e6)?,
            min_rate_bps: min_rate,
            line_rate_bps: line,
        };
        let source = match p.choice("source", &["ack", "postcard"])? {
            "ack" => Source::Ack,
            _ => Source::Postcard,
        };
        let hop = match p.choice("hop", &["each", "max", "last"])? {
            "each" => HopView::Each,
            "max" => HopView::Max,
            _ => HopView::Last,
        };
        if source == Source::Postcard && hop != HopView::Each && p.is_given("hop") {
            return Err(p.invalid("hop", "postcards report one hop each: only hop=each applies to source=postcard"));
        }
        let levels = p.u64_in("levels", 0, 1 << 20)? as u32;
        if levels == 1 {
            return Err(p.invalid("levels", "one level carries nothing: 0 (exact) or at least 2"));
        }
        let chan = ChannelConfig {
            source,
            hop,
            every: p.u64_in("sample_every", 1, 1 << 30)? as u32,
            delay_ns: (p.f64_in("delay_us", 0.0, 1e9)? * 1e3) as u64,
            levels,
            levels_max_pkts: p.f64_in("levels_max_pkts", 1.0, 1e9)?,
        };
        Ok(Oracle::new(QueueTarget::new(law, init), Channel::new(chan)))
    }

    fn drain(&mut self, now_ns: u64) {
        while let Some(set) = self.chan.next_due(now_ns) {
            self.law.update(now_ns, &set);
        }
    }
}

impl CongestionControl for Oracle {
    fn name(&self) -> &'static str {
        "oracle-timely"
    }
    fn on_ack(&mut self, s: &AckSample) {
        if let Some(r) = s.rtt_ns {
            self.law.on_rtt(r);
        }
        self.chan.offer_ack(s.now_ns, s);
        self.drain(s.now_ns);
    }
    fn on_queue_report(&mut self, now_ns: u64, r: &QueueReport) {
        self.chan.offer_feed(now_ns, r);
        self.drain(now_ns);
    }
    fn on_tick(&mut self, now_ns: u64) {
        self.drain(now_ns);
    }
    /// Losses found from SACKs come with ACKs, and so with reports: the
    /// law already sees the full queue. A timeout means nothing came back
    /// at all — every packet met a full queue (a flow paced in phase with
    /// a full drop-tail queue can lose every packet) — so the timeout
    /// itself is the signal: cut by `loss_cut`.
    fn on_loss(&mut self, _now_ns: u64, _lost_bytes: u64) {}
    fn on_rto(&mut self, now_ns: u64) {
        self.law.on_loss(now_ns);
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        None
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        Some(self.law.rate as u64)
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let l = &self.law;
        let (offered, passed) = self.chan.counts();
        let mut m = BTreeMap::new();
        m.insert("rate_mbps", l.rate / 1e6);
        m.insert("qdepth_pkts", l.m);
        m.insert("target_pkts", l.p.target_pkts);
        m.insert("loop_delay_us", l.d_s * 1e6);
        m.insert("last_step", l.last_step);
        m.insert("governing_hop", f64::from(l.governing));
        m.insert("updates", l.updates as f64);
        m.insert("reports_offered", offered as f64);
        m.insert("reports_passed", passed as f64);
        m.insert("reports_waiting", self.chan.waiting() as f64);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signal::PATH_MAX_HOP;

    const C: f64 = 10e9;
    const P: f64 = 12_000.0;

    fn params() -> LawParams {
        LawParams {
            target_pkts: 2.0,
            alpha: 0.4,
            beta: 0.226,
            drain_floor: 0.5,
            probe_base: 1.0,
            loss_cut: 0.5,
            fair_pkts: 0.0,
            pkt_bits: P,
            rtt_s: Some(40e-6),
            max_step: 2.0,
            min_rate_bps: 1e6,
            line_rate_bps: C,
        }
    }

    fn rep(hop: u32, q: f64) -> QueueReport {
        QueueReport { hop, depth_pkts: q, at_us: 0 }
    }

    /// The law's step, computed by hand from the documented equations.
    fn expect_step(p: &LawParams, rate: f64, gap: f64, m: f64, prev: f64, dt: f64) -> f64 {
        let d = p.rtt_s.unwrap() + gap.max(p.pkt_bits / rate);
        let t = p.pkt_bits / p.line_rate_bps;
        let dt = dt.min(d);
        let excess = (p.beta * t * (m - p.target_pkts) / d).min(p.alpha * (1.0 - p.drain_floor));
        -p.alpha * t * (m - prev) / d - excess * dt / d
    }

    #[test]
    fn first_report_only_sets_the_reference() {
        let mut l = QueueTarget::new(params(), 5e9);
        l.update(1_000, &[rep(1, 30.0)]);
        assert_eq!(l.rate_bps(), 5e9, "no interval and no previous depth: no change");
        assert_eq!(l.m, 30.0);
    }

    #[test]
    fn step_follows_the_equations() {
        let p = params();
        let mut l = QueueTarget::new(p.clone(), 5e9);
        l.update(0, &[rep(1, 4.0)]);
        // 10 µs later the queue is at 7: it grew by 3 and stands 5 above q*.
        l.update(10_000, &[rep(1, 7.0)]);
        let s = expect_step(&p, 5e9, 10e-6, 7.0, 4.0, 10e-6);
        assert!(s < 0.0);
        assert!((l.rate_bps() - 5e9 * s.exp()).abs() < 1.0, "{} vs {}", l.rate_bps(), 5e9 * s.exp());
        // Steady at the target: no change.
        let mut l = QueueTarget::new(p.clone(), 5e9);
        l.update(0, &[rep(1, 2.0)]);
        l.update(10_000, &[rep(1, 2.0)]);
        assert_eq!(l.rate_bps(), 5e9);
        // Below the target and draining: the rate grows.
        let mut l = QueueTarget::new(p.clone(), 5e9);
        l.update(0, &[rep(1, 1.0)]);
        l.update(10_000, &[rep(1, 0.0)]);
        let s = expect_step(&p, 5e9, 10e-6, 0.0, 1.0, 10e-6);
        assert!(s > 0.0 && (l.rate_bps() - 5e9 * s.exp()).abs() < 1.0);
    }

    #[test]
    fn the_mismatch_term_telescopes() {
        // With β = 0 only the change term acts: a queue that rises and
        // returns leaves the rate where it was, however noisy the path.
        let p = LawParams { beta: 0.0, ..params() };
        let mut l = QueueTarget::new(p, 4e9);
        let qs = [3.0, 9.0, 4.0, 12.0, 0.0, 7.0, 5.0, 3.0];
        for (i, &q) in qs.iter().enumerate() {
            l.update(i as u64 * 1000, &[rep(1, q)]);
        }
        // Exact but for the loop delay, which moves with the rate.
        assert!((l.rate_bps() - 4e9).abs() < 0.01 * 4e9, "{}", l.rate_bps());
    }

    #[test]
    fn steps_are_bounded_both_ways() {
        let mut l = QueueTarget::new(params(), 4e9);
        l.update(0, &[rep(1, 0.0)]);
        l.update(1_000, &[rep(1, 5000.0)]);
        assert!((l.rate_bps() - 2e9).abs() < 1.0, "at most halved: {}", l.rate_bps());
        l.update(2_000, &[rep(1, 0.0)]);
        assert!(l.rate_bps() <= 4e9 + 1.0 && l.rate_bps() > 2e9, "at most doubled");
        let mut l = QueueTarget::new(params(), C);
        l.update(0, &[rep(1, 0.0)]);
        l.update(1_000, &[rep(1, 0.0)]);
        assert_eq!(l.rate_bps(), C, "never above the line rate");
    }

    #[test]
    fn the_excess_term_is_clamped_and_waits_while_the_queue_drains() {
        let p = params();
        let t = P / C;
        // A standing queue of 150 packets: β·t·149/d far above α·(1 − ½),
        // so the excess term asks for 0.2 per loop delay, no more.
        let mut l = QueueTarget::new(p.clone(), 5e9);
        l.update(0, &[rep(1, 150.0)]);
        l.update(10_000, &[rep(1, 150.0)]);
        let d = l.loop_delay_s();
        assert!((l.last_step - (-0.2 * 10e-6 / d)).abs() < 1e-12, "{}", l.last_step);
        // Draining at the line rate (one packet per packet time): faster
        // than the excess term asks (t·dm/dt = −1 ≤ −0.2/0.4), so it waits;
        // only the change term acts, and it raises the rate.
        let mut l = QueueTarget::new(p.clone(), 5e9);
        l.update(0, &[rep(1, 150.0)]);
        let dt_ns = (20.0 * t * 1e9) as u64;
        l.update(dt_ns, &[rep(1, 130.0)]);
        let d = l.loop_delay_s();
        assert!((l.last_step - p.alpha * t * 20.0 / d).abs() < 1e-12, "{}", l.last_step);
        // Draining slowly (one packet in ten packet times): the excess
        // term still acts.
        let mut l = QueueTarget::new(p.clone(), 5e9);
        l.update(0, &[rep(1, 150.0)]);
        let dt_ns = (10.0 * t * 1e9) as u64;
        l.update(dt_ns, &[rep(1, 149.0)]);
        let d = l.loop_delay_s();
        let dt = (dt_ns as f64 * 1e-9).min(d);
        let expect = p.alpha * t / d - 0.2 * dt / d;
        assert!((l.last_step - expect).abs() < 1e-12, "{} vs {expect}", l.last_step);
    }

    #[test]
    fn the_fairness_term_pulls_every_flow_alike() {
        // κ·β·P/d² per second on top of the multiplicative step.
        let p = LawParams { fair_pkts: 0.05, ..params() };
        let mut l = QueueTarget::new(p.clone(), 1e9);
        l.update(0, &[rep(1, 1.0)]);
        l.update(10_000, &[rep(1, 2.0)]);
        // d before the update: RTT 40 µs + the larger of the 10 µs report
        // interval and the 12 µs packet gap at 1 Gb/s.
        let d = 40e-6 + 12e-6;
        let t = P / C;
        let step = -p.alpha * t / d;
        let ai = 0.05 * p.beta * P * 10e-6 / (d * d);
        assert!((l.rate_bps() - (1e9 * step.exp() + ai)).abs() < 1e-3);
    }

    #[test]
    fn a_loss_cuts_once_per_loop_delay() {
        let mut l = QueueTarget::new(params(), 4e9);
        let d_ns = (l.loop_delay_s() * 1e9) as u64;
        l.on_loss(1_000);
        assert_eq!(l.rate_bps(), 2e9);
        l.on_loss(1_000 + d_ns / 2);
        assert_eq!(l.rate_bps(), 2e9, "the same overflow");
        l.on_loss(1_000 + 2 * d_ns);
        assert!(l.rate_bps() < 2e9);
    }

    #[test]
    fn the_deepest_hop_governs_and_stale_hops_expire() {
        let mut l = QueueTarget::new(params(), 1e9);
        l.update(0, &[rep(7, 3.0), rep(9, 20.0)]);
        assert_eq!((l.m, l.governing), (20.0, 9));
        // Hop 9 alone drains; hop 7 is still known at 3.
        l.update(1_000, &[rep(9, 1.0)]);
        assert_eq!((l.m, l.governing), (3.0, 7));
        // Long after, only hop 9 reports: hop 7 has expired.
        l.update(1_000_000_000, &[rep(9, 1.0)]);
        assert_eq!((l.m, l.governing), (1.0, 9));
        assert_eq!(l.hops.len(), 1);
    }

    #[test]
    fn loop_delay_is_rtt_plus_the_report_interval() {
        let p = LawParams { rtt_s: None, ..params() };
        let mut l = QueueTarget::new(p, 1e9);
        l.on_rtt(50_000);
        l.on_rtt(30_000);
        assert!((l.loop_delay_s() - (30e-6 + P / 1e9)).abs() < 1e-12, "before any interval: own packet gap");
        l.update(0, &[rep(1, 2.0)]);
        l.update(100_000, &[rep(1, 2.0)]);
        // Reports 100 µs apart (sampled): the loop is that much slower.
        assert!((l.loop_delay_s() - 130e-6).abs() < 1e-12, "{}", l.loop_delay_s());
    }

    /// A fluid single bottleneck (λ = ΣR, queue integrates λ − C) with a
    /// feedback delay, every flow updating once per its own packet: the
    /// closed loop the docs derive.
    fn fluid(n: usize, c: f64, rtt: f64, fair: f64, secs: f64, rates: &[f64]) -> (Vec<f64>, f64, f64) {
        let p = LawParams { fair_pkts: fair, rtt_s: None, target_pkts: 1.0, min_rate_bps: 1e3, line_rate_bps: c, ..params() };
        let mut flows: Vec<QueueTarget> = rates.iter().map(|&r| QueueTarget::new(p.clone(), r)).collect();
        for f in flows.iter_mut() {
            f.on_rtt((rtt * 1e9) as u64);
        }
        let tp = P / c;
        let h = tp / 4.0;
        let delay_steps = (rtt / h).round() as usize;
        let mut q = 0.0f64;
        let mut hist = std::collections::VecDeque::from(vec![0.0; delay_steps + 1]);
        let mut next: Vec<f64> = (0..n).map(|i| i as f64 * tp / n as f64).collect();
        let (mut t, mut qsum, mut qn, mut busy) = (0.0, 0.0, 0.0, 0.0);
        while t < secs {
            let lambda: f64 = flows.iter().map(|f| f.rate_bps()).sum();
            q = (q + (lambda - c) * h / P).max(0.0);
            hist.push_back(q);
            let seen = hist.pop_front().unwrap();
            for (i, f) in flows.iter_mut().enumerate() {
                if t >= next[i] {
                    f.update((t * 1e9) as u64, &[rep(1, seen.floor())]);
                    next[i] = t + P / f.rate_bps();
                }
            }
            if t > secs / 2.0 {
                qsum += q;
                qn += 1.0;
                busy += if q > 0.0 { 1.0 } else { lambda.min(c) / c };
            }
            t += h;
        }
        (flows.iter().map(|f| f.rate_bps()).collect(), qsum / qn, busy / qn)
    }

    #[test]
    fn fluid_loop_holds_the_target_at_full_rate_and_converges_to_fairness() {
        // Paper scale: 10 Gb/s, 40 µs RTT, 10 flows started unequal.
        let rates: Vec<f64> = (0..10).map(|i| 0.2e9 + 0.3e9 * f64::from(i)).collect();
        let (r, q, busy) = fluid(10, C, 40e-6, 0.05, 0.2, &rates);
        let total: f64 = r.iter().sum();
        let (lo, hi) = r.iter().fold((f64::MAX, 0.0f64), |(a, b), &x| (a.min(x), b.max(x)));
        eprintln!("paper scale: mean queue {q:.2}, busy {busy:.3}, total {:.3} Gb/s, min/max {:.3}/{:.3}", total / 1e9, lo / 1e9, hi / 1e9);
        assert!(busy > 0.98, "{busy}");
        // q* + N·κ = 1.5 packets, give or take the floor() of the report.
        assert!((0.5..3.0).contains(&q), "{q}");
        assert!(lo / hi > 0.8, "converging to fair shares: {lo} / {hi}");
        // Seed scale: 50 Mb/s, 500 µs RTT.
        let (r, q, busy) = fluid(10, 50e6, 500e-6, 0.05, 20.0, &[50e6; 10]);
        eprintln!("seed scale: mean queue {q:.2}, busy {busy:.3}, total {:.2} Mb/s", r.iter().sum::<f64>() / 1e6);
        assert!(busy > 0.97 && (0.5..3.0).contains(&q), "{q} {busy}");
    }

    fn build(extra: &[(&str, &str)]) -> Result<Oracle, CcError> {
        let given: Vec<(String, String)> = extra.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let p = Params::new("oracle-timely", PARAMS, &given)?;
        Oracle::from_params(&p, &PathInfo { mss: 1336, line_rate_bps: Some(10_000_000_000), init_cwnd_pkts: 10 })
    }

    fn sample(now_us: u64, hops: &[(u32, f64)]) -> AckSample {
        AckSample {
            now_ns: now_us * 1000,
            acked_bytes: 1336,
            rtt_ns: Some(40_000),
            path_qdepth_pkts: hops.iter().map(|h| h.1 as u32).max(),
            hops: hops.iter().map(|&(h, q)| rep(h, q)).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn parameters_reach_the_channel_and_the_law() {
        let o = build(&[]).unwrap();
        assert_eq!(o.name(), "oracle-timely");
        assert_eq!(o.pacing_rate_bps(), Some(10_000_000_000), "starts at line rate");
        assert_eq!(o.chan.config(), &ChannelConfig::default());
        let o = build(&[("source", "postcard"), ("sample_every", "4"), ("delay_us", "25"), ("levels", "8"), ("levels_max_pkts", "100")]).unwrap();
        let c = o.chan.config();
        assert_eq!((c.source, c.every, c.delay_ns, c.levels, c.levels_max_pkts), (Source::Postcard, 4, 25_000, 8, 100.0));
        assert!(build(&[("hop", "first")]).is_err());
        assert!(build(&[("source", "postcard"), ("hop", "last")]).is_err());
        assert!(build(&[("levels", "1")]).is_err());
        assert!(build(&[("thigh_pkts", "20")]).is_err(), "the seed law's parameters belong to oracle-timely-seed");
    }

    #[test]
    fn last_hop_view_is_blind_to_an_upstream_bottleneck() {
        // Two hops: hop 1 (upstream) builds a queue, hop 2 (newest) stays empty.
        let mut each = build(&[("init_rate_mbps", "5000")]).unwrap();
        let mut last = build(&[("init_rate_mbps", "5000"), ("hop", "last")]).unwrap();
        let mut max = build(&[("init_rate_mbps", "5000"), ("hop", "max")]).unwrap();
        for i in 0..20u64 {
            let s = sample(i, &[(2, 0.0), (1, 2.0 * i as f64)]);
            each.on_ack(&s);
            last.on_ack(&s);
            max.on_ack(&s);
        }
        assert!(each.pacing_rate_bps().unwrap() < 4_000_000_000, "{:?}", each.state());
        assert_eq!(each.law.governing, 1);
        assert_eq!(max.law.governing, PATH_MAX_HOP);
        assert_eq!(each.pacing_rate_bps(), max.pacing_rate_bps(), "one packet carries every hop: the path max is the deepest hop");
        assert!(last.pacing_rate_bps().unwrap() >= 5_000_000_000, "sees only an empty hop: {:?}", last.state());
    }

    #[test]
    fn postcards_drive_the_law_and_the_echo_does_not() {
        let mut o = build(&[("source", "postcard"), ("init_rate_mbps", "5000")]).unwrap();
        for i in 0..20u64 {
            o.on_ack(&sample(i, &[(1, 50.0 * i as f64)]));
        }
        assert_eq!(o.pacing_rate_bps(), Some(5_000_000_000), "echoed depths ignored");
        for i in 0..20u64 {
            o.on_queue_report(1000 * (20 + i), &rep(1, 2.0 * i as f64));
        }
        assert!(o.pacing_rate_bps().unwrap() < 5_000_000_000);
        assert_eq!(o.state()["updates"], 20.0);
    }

    #[test]
    fn delayed_reports_act_late() {
        let mut o = build(&[("delay_us", "100"), ("init_rate_mbps", "5000")]).unwrap();
        for i in 0..50u64 {
            o.on_ack(&sample(i, &[(1, 5.0 * i as f64)]));
        }
        assert_eq!(o.pacing_rate_bps(), Some(5_000_000_000), "nothing due before 100 µs");
        assert_eq!(o.state()["reports_waiting"], 50.0);
        o.on_tick(200_000);
        assert!(o.pacing_rate_bps().unwrap() < 5_000_000_000);
        assert_eq!(o.state()["reports_waiting"], 0.0);
    }
}
