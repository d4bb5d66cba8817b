//! TIMELY (Mittal et al., SIGCOMM 2015, Algorithm 1) and the TIMELY seed's
//! "oracle TIMELY".
//!
//! Both run the same control law ([`TimelyLaw`]); they differ only in the
//! congestion signal it is fed once per completion event:
//! * `timely`: the RTT of the completion, in µs;
//! * `oracle-timely-seed`: the path's maximum queue depth echoed in-band by
//!   the switch, in packets (the seed's oracle: TIMELY's law on the queue).
//!   Thresholds and the gradient normaliser are then in packets too, so the
//!   law is unchanged; the queue is converted to a queueing delay
//!   (q·mss·8/line_rate) only for reporting.
//!
//! `oracle-timely` (crate::oracle) is the oracle built for the queue signal.

use std::collections::BTreeMap;

use crate::params::{ParamInfo, Params};
use crate::{AckSample, CcError, CongestionControl, PathInfo};

/// Which branch of Algorithm 1 the last update took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Branch {
    /// signal < Tlow: rate += δ.
    BelowTlow,
    /// signal > Thigh: rate ← rate·(1 − β·(1 − Thigh/signal)).
    AboveThigh,
    /// gradient ≤ 0: rate += n·δ (n = 1, or the HAI factor).
    Increase { n: f64 },
    /// gradient > 0: rate ← rate·(1 − β·gradient).
    GradientCut,
}

/// Parameters of the control law, in the signal's own unit (µs for RTT,
/// packets for queue depth) where a unit applies.
#[derive(Debug, Clone, PartialEq)]
pub struct LawParams {
    /// EWMA weight of the newest difference.
    pub ewma_alpha: f64,
    /// Multiplicative decrement factor β.
    pub beta: f64,
    /// Additive increment δ, bits/s.
    pub delta_bps: f64,
    pub tlow: f64,
    pub thigh: f64,
    /// Divides the smoothed difference to get the normalised gradient
    /// (min RTT for TIMELY).
    pub norm: f64,
    /// Consecutive negative-gradient completions that switch on HAI.
    pub hai_thresh: u32,
    /// Increment multiplier N in HAI mode.
    pub hai_n: f64,
    /// Largest fractional decrease in one update (authors' code: 0.5).
    pub max_cut: f64,
    pub min_rate_bps: f64,
    pub max_rate_bps: f64,
}

/// TIMELY's Algorithm 1, independent of where the signal comes from.
#[derive(Debug, Clone)]
pub struct TimelyLaw {
    p: LawParams,
    rate: f64,
    prev: Option<f64>,
    diff: f64,
    gradient: f64,
    neg_count: u32,
    last: Option<Branch>,
    updates: u64,
}

impl TimelyLaw {
    pub fn new(p: LawParams, init_rate_bps: f64) -> Self {
        let rate = init_rate_bps.clamp(p.min_rate_bps, p.max_rate_bps);
        TimelyLaw { p, rate, prev: None, diff: 0.0, gradient: 0.0, neg_count: 0, last: None, updates: 0 }
    }

    pub fn rate_bps(&self) -> f64 {
        self.rate
    }
    pub fn gradient(&self) -> f64 {
        self.gradient
    }
    pub fn last_branch(&self) -> Option<Branch> {
        self.last
    }

    /// One completion event carrying `signal`.
    pub fn update(&mut self, signal: f64) -> Branch {
        let p = &self.p;
        // The first sample has nothing to differ from (the authors'
        // reference code initialises prev_rtt to the first RTT).
        let prev = self.prev.unwrap_or(signal);
        let new_diff = signal - prev;
        self.prev = Some(signal);
        self.diff = (1.0 - p.ewma_alpha) * self.diff + p.ewma_alpha * new_diff;
        self.gradient = self.diff / p.norm;
        // HAI counts consecutive completions with a negative gradient,
        // whichever branch they end up in.
        self.neg_count = if self.gradient < 0.0 { self.neg_count.saturating_add(1) } else { 0 };

        let old = self.rate;
        let (new, branch) = if signal < p.tlow {
            (old + p.delta_bps, Branch::BelowTlow)
        } else if signal > p.thigh {
            (old * (1.0 - p.beta * (1.0 - p.thigh / signal)), Branch::AboveThigh)
        } else if self.gradient <= 0.0 {
            let n = if self.neg_count >= p.hai_thresh { p.hai_n } else { 1.0 };
            (old + n * p.delta_bps, Branch::Increase { n })
        } else {
            (old * (1.0 - p.beta * self.gradient), Branch::GradientCut)
        };
        // Algorithm 1 can drive the rate negative for a large gradient; the
        // authors' released code bounds one decrease to max_cut of the rate.
        let floor = old * (1.0 - p.max_cut);
        self.rate = new.max(floor).clamp(p.min_rate_bps, p.max_rate_bps);
        self.last = Some(branch);
        self.updates += 1;
        branch
    }
}

/// Where the congestion signal comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Signal {
    /// Completion RTT in µs.
    Rtt,
    /// Echoed path maximum queue depth in packets.
    QueueDepth,
}

pub(crate) const TIMELY_PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "ewma_alpha", default: "0.1", doc: "EWMA weight of the newest RTT difference; seed value 0.1 (the authors' code snippet recommends 0.02)" },
    ParamInfo { name: "beta", default: "0.8", doc: "multiplicative decrement factor (paper §6: 0.8)" },
    ParamInfo { name: "delta_mbps", default: "10", doc: "additive increment δ in Mbit/s (paper §6: 10 Mbps at 10 Gbps)" },
    ParamInfo { name: "tlow_us", default: "50", doc: "Tlow in µs (paper §6: 50 µs)" },
    ParamInfo { name: "thigh_us", default: "500", doc: "Thigh in µs (paper §6: 500 µs)" },
    ParamInfo { name: "min_rtt_us", default: "20", doc: "minRTT normalising the gradient, µs (default 20; set it to the path's base RTT)" },
    ParamInfo { name: "seg_bytes", default: "16384", doc: "bytes per completion event; one rate update per seg_bytes ACKed (paper: 16-64 KB)" },
    ParamInfo { name: "hai_thresh", default: "5", doc: "consecutive negative-gradient completions before HAI (paper: 5)" },
    ParamInfo { name: "hai_n", default: "5", doc: "increment multiplier N in HAI mode (paper: 5)" },
    ParamInfo { name: "max_cut", default: "0.5", doc: "largest fractional decrease per update (authors' code: 0.5; 1 = Algorithm 1 verbatim)" },
    ParamInfo { name: "min_rate_mbps", default: "1", doc: "rate floor, Mbit/s (not in the paper)" },
    ParamInfo { name: "line_rate_mbps", default: "0", doc: "rate ceiling, Mbit/s; 0 = PathInfo.line_rate_bps, or 10000 (paper's 10 Gbps) if unknown" },
    ParamInfo { name: "init_rate_mbps", default: "0", doc: "initial rate, Mbit/s; 0 = line rate" },
];

pub(crate) const ORACLE_PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "ewma_alpha", default: "0.1", doc: "EWMA weight of the newest queue-depth difference (seed: 0.1)" },
    ParamInfo { name: "beta", default: "0.8", doc: "multiplicative decrement factor (TIMELY paper: 0.8; the seed's oracle run used 0.01)" },
    ParamInfo { name: "delta_mbps", default: "10", doc: "additive increment δ in Mbit/s (TIMELY paper: 10 Mbps)" },
    ParamInfo { name: "tlow_pkts", default: "5", doc: "Tlow as a queue depth in packets (seed: tlow=5)" },
    ParamInfo { name: "thigh_pkts", default: "20", doc: "Thigh as a queue depth in packets (seed: thigh=20)" },
    ParamInfo { name: "min_rtt_us", default: "20", doc: "minRTT (µs) whose queue equivalent min_rtt·line_rate/(8·mss) normalises the gradient" },
    ParamInfo { name: "q_norm_pkts", default: "0", doc: "gradient normaliser in packets; 0 = min_rtt_us at line rate in packets, at least 1" },
    ParamInfo { name: "seg_bytes", default: "16384", doc: "bytes per completion event (as TIMELY)" },
    ParamInfo { name: "hai_thresh", default: "5", doc: "consecutive negative-gradient completions before HAI" },
    ParamInfo { name: "hai_n", default: "5", doc: "increment multiplier N in HAI mode" },
    ParamInfo { name: "max_cut", default: "0.5", doc: "largest fractional decrease per update" },
    ParamInfo { name: "min_rate_mbps", default: "1", doc: "rate floor, Mbit/s" },
    ParamInfo { name: "line_rate_mbps", default: "0", doc: "line rate, Mbit/s; 0 = PathInfo.line_rate_bps, or 10000 if unknown" },
    ParamInfo { name: "init_rate_mbps", default: "0", doc: "initial rate, Mbit/s; 0 = line rate" },
];

/// A rate-based TIMELY sender driven by `signal`.
#[derive(Debug, Clone)]
pub struct Timely {
    law: TimelyLaw,
    signal: Signal,
    seg_bytes: u64,
    acked_since_update: u64,
    /// Newest signal value not yet used by an update.
    pending: Option<f64>,
    last_signal: Option<f64>,
    /// Completions that carried no signal (e.g. no telemetry echoed).
    skipped: u64,
    mss: f64,
    line_rate_bps: f64,
}

impl Timely {
    pub fn new(signal: Signal, law: TimelyLaw, seg_bytes: u64, path: &PathInfo, line_rate_bps: f64) -> Self {
        Timely {
            law,
            signal,
            seg_bytes: seg_bytes.max(1),
            acked_since_update: 0,
            pending: None,
            last_signal: None,
            skipped: 0,
            mss: f64::from(path.mss.max(1)),
            line_rate_bps,
        }
    }

    pub fn law(&self) -> &TimelyLaw {
        &self.law
    }

    pub(crate) fn from_params(signal: Signal, p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        let mbps = 1e6;
        let (line, min_rate, init) = rate_bounds(p, path)?;
        let min_rtt_us = p.f64_in("min_rtt_us", 1e-3, 1e9)?;
        let (tlow, thigh, norm) = match signal {
            Signal::Rtt => (p.f64_in("tlow_us", 0.0, 1e9)?, p.f64_in("thigh_us", 0.0, 1e9)?, min_rtt_us),
            Signal::QueueDepth => {
                let mss = f64::from(path.mss.max(1));
                let norm = match p.f64_in("q_norm_pkts", 0.0, 1e9)? {
                    x if x > 0.0 => x,
                    // min_rtt expressed as the packets the line drains in it:
                    // then Δq/norm equals Δqdelay/min_rtt, TIMELY's gradient.
                    _ => (min_rtt_us * 1e-6 * line / (8.0 * mss)).max(1.0),
                };
                (p.f64_in("tlow_pkts", 0.0, 1e9)?, p.f64_in("thigh_pkts", 0.0, 1e9)?, norm)
            }
        };
        if tlow >= thigh {
            let name = if signal == Signal::Rtt { "tlow_us" } else { "tlow_pkts" };
            return Err(p.invalid(name, "Tlow must be below Thigh"));
        }
        let law = LawParams {
            ewma_alpha: p.f64_in("ewma_alpha", 0.0, 1.0)?,
            beta: p.f64_in("beta", 0.0, 1.0)?,
            delta_bps: p.f64_in("delta_mbps", 0.0, 1e7)? * mbps,
            tlow,
            thigh,
            norm,
            hai_thresh: p.u64_in("hai_thresh", 1, 1_000_000)? as u32,
            hai_n: p.f64_in("hai_n", 1.0, 1e6)?,
            max_cut: p.f64_in("max_cut", 0.0, 1.0)?,
            min_rate_bps: min_rate,
            max_rate_bps: line,
        };
        let seg = p.u64_in("seg_bytes", 1, 1 << 40)?;
        Ok(Timely::new(signal, TimelyLaw::new(law, init), seg, path, line))
    }

    fn extract(&self, s: &AckSample) -> Option<f64> {
        match self.signal {
            Signal::Rtt => s.rtt_ns.map(|r| r as f64 / 1e3),
            Signal::QueueDepth => s.path_qdepth_pkts.map(f64::from),
        }
    }
}

impl CongestionControl for Timely {
    fn name(&self) -> &'static str {
        match self.signal {
            Signal::Rtt => "timely",
            Signal::QueueDepth => "oracle-timely-seed",
        }
    }
    fn on_ack(&mut self, s: &AckSample) {
        if let Some(v) = self.extract(s) {
            self.pending = Some(v);
            self.last_signal = Some(v);
        }
        self.acked_since_update = self.acked_since_update.saturating_add(s.acked_bytes);
        // One update per completed segment; an ACK completing several
        // segments still carries one signal sample, so it is one update.
        if self.acked_since_update >= self.seg_bytes {
            self.acked_since_update %= self.seg_bytes;
            match self.pending.take() {
                Some(v) => {
                    self.law.update(v);
                }
                None => self.skipped += 1,
            }
        }
    }
    /// TIMELY has no loss response in the paper (its fabric is nearly
    /// lossless); the datapath retransmits and the rate is left alone.
    fn on_loss(&mut self, _now_ns: u64, _lost_bytes: u64) {}
    fn on_rto(&mut self, _now_ns: u64) {}
    fn cwnd_bytes(&self) -> Option<u64> {
        None
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        Some(self.law.rate_bps() as u64)
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        m.insert("rate_mbps", self.law.rate / 1e6);
        m.insert("gradient", self.law.gradient);
        m.insert("diff_ewma", self.law.diff);
        m.insert("neg_gradient_count", f64::from(self.law.neg_count));
        m.insert("updates", self.law.updates as f64);
        m.insert("skipped_updates", self.skipped as f64);
        if let Some(v) = self.last_signal {
            match self.signal {
                Signal::Rtt => {
                    m.insert("rtt_us", v);
                }
                Signal::QueueDepth => {
                    m.insert("qdepth_pkts", v);
                    m.insert("qdelay_us", v * self.mss * 8.0 / self.line_rate_bps * 1e6);
                }
            }
        }
        m
    }
}

/// The sender's line rate in bits/s from its `line_rate_mbps` parameter:
/// the value given, else `PathInfo.line_rate_bps`, else 10 Gb/s (the
/// TIMELY paper's NICs).
pub(crate) fn line_rate_bps(p: &Params, path: &PathInfo) -> Result<f64, CcError> {
    Ok(match p.f64_in("line_rate_mbps", 0.0, 1e7)? {
        x if x > 0.0 => x * 1e6,
        _ => path.line_rate_bps.filter(|&b| b > 0).map_or(10_000.0 * 1e6, |b| b as f64),
    })
}

/// A rate-based sender's line rate, floor and start rate (bits/s) from its
/// `line_rate_mbps`, `min_rate_mbps` and `init_rate_mbps`: the line rate
/// defaults to the path's (or the TIMELY paper's 10 Gb/s), the start rate
/// to the line rate.
pub(crate) fn rate_bounds(p: &Params, path: &PathInfo) -> Result<(f64, f64, f64), CcError> {
    let mbps = 1e6;
    let line = line_rate_bps(p, path)?;
    let mut min_rate = p.f64_in("min_rate_mbps", 0.0, 1e7)? * mbps;
    if min_rate > line {
        // A default floor above a slow line gives way; a floor the user
        // asked for is a contradiction worth reporting.
        if p.is_given("min_rate_mbps") {
            return Err(p.invalid("min_rate_mbps", "exceeds the line rate"));
        }
        min_rate = line;
    }
    let init = match p.f64_in("init_rate_mbps", 0.0, 1e7)? {
        x if x > 0.0 => x * mbps,
        _ => line,
    };
    Ok((line, min_rate, init))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEG: u64 = 16384;

    fn law_params() -> LawParams {
        LawParams {
            ewma_alpha: 0.1,
            beta: 0.8,
            delta_bps: 10e6,
            tlow: 50.0,
            thigh: 500.0,
            norm: 20.0,
            hai_thresh: 5,
            hai_n: 5.0,
            max_cut: 0.5,
            min_rate_bps: 1e6,
            max_rate_bps: 10e9,
        }
    }

    fn law() -> TimelyLaw {
        TimelyLaw::new(law_params(), 5e9)
    }

    #[test]
    fn below_tlow_adds_delta() {
        let mut l = law();
        assert_eq!(l.update(30.0), Branch::BelowTlow);
        assert_eq!(l.rate_bps(), 5e9 + 10e6);
        assert_eq!(l.update(40.0), Branch::BelowTlow, "even with a rising RTT");
        assert_eq!(l.rate_bps(), 5e9 + 20e6);
    }

    #[test]
    fn above_thigh_cuts_by_thigh_ratio() {
        let mut l = law();
        assert_eq!(l.update(1000.0), Branch::AboveThigh);
        // 1 - 0.8 * (1 - 500/1000) = 0.6
        assert!((l.rate_bps() - 3e9).abs() < 1e-3);
    }

    #[test]
    fn positive_gradient_cuts() {
        let mut l = law();
        assert_eq!(l.update(100.0), Branch::Increase { n: 1.0 }, "first sample: zero gradient");
        assert_eq!(l.rate_bps(), 5.01e9);
        assert_eq!(l.update(110.0), Branch::GradientCut);
        // diff = 0.1 * 10 = 1 µs; gradient = 1/20 = 0.05; rate *= 1 - 0.8*0.05
        assert!((l.gradient() - 0.05).abs() < 1e-12);
        assert!((l.rate_bps() - 5.01e9 * 0.96).abs() < 1e-3);
        // A flat RTT after a rise keeps a positive (decaying) gradient.
        assert_eq!(l.update(110.0), Branch::GradientCut);
        assert!((l.gradient() - 0.045).abs() < 1e-12);
    }

    #[test]
    fn hai_after_five_negative_gradients_and_not_before() {
        let mut l = law();
        let mut expect = 5e9;
        l.update(400.0); // gradient 0: N = 1
        expect += 10e6;
        assert_eq!(l.rate_bps(), expect);
        for i in 1..=7u32 {
            let b = l.update(400.0 - 10.0 * f64::from(i));
            let n = if i >= 5 { 5.0 } else { 1.0 };
            assert_eq!(b, Branch::Increase { n }, "completion {i}");
            expect += n * 10e6;
            assert!((l.rate_bps() - expect).abs() < 1e-3);
        }
        // One non-negative gradient resets the count.
        l.update(1000.0);
        let r = l.rate_bps();
        l.update(300.0);
        assert_eq!(l.last_branch(), Some(Branch::Increase { n: 1.0 }));
        assert!((l.rate_bps() - (r + 10e6)).abs() < 1e-3);
    }

    #[test]
    fn decrease_is_bounded_and_rate_clamped() {
        let mut l = law();
        l.update(100.0);
        l.update(400.0); // gradient 30/20 = 1.5 -> 1 - 1.2 < 0, bounded to half
        assert!((l.rate_bps() - 5.01e9 * 0.5).abs() < 1e-3);
        let mut p = law_params();
        p.max_cut = 1.0;
        let mut l = TimelyLaw::new(p, 5e9);
        l.update(100.0);
        l.update(400.0);
        assert_eq!(l.rate_bps(), 1e6, "Algorithm 1 verbatim hits the floor");
        let mut l = TimelyLaw::new(law_params(), 10e9);
        l.update(10.0);
        assert_eq!(l.rate_bps(), 10e9, "never above line rate");
    }

    fn path() -> PathInfo {
        PathInfo { mss: 1000, line_rate_bps: Some(10_000_000_000), init_cwnd_pkts: 10 }
    }

    fn build(name: &str, signal: Signal, extra: &[(&str, &str)]) -> Timely {
        let mut given: Vec<(String, String)> = vec![("init_rate_mbps".into(), "5000".into())];
        given.extend(extra.iter().map(|(a, b)| (a.to_string(), b.to_string())));
        let specs = if signal == Signal::Rtt { TIMELY_PARAMS } else { ORACLE_PARAMS };
        let p = Params::new("t", specs, &given).unwrap();
        let t = Timely::from_params(signal, &p, &path()).unwrap();
        assert_eq!(t.name(), name);
        t
    }

    fn sample(bytes: u64, rtt_us: u64, q: Option<u32>) -> AckSample {
        AckSample { acked_bytes: bytes, rtt_ns: Some(rtt_us * 1000), path_qdepth_pkts: q, ..Default::default() }
    }

    #[test]
    fn one_update_per_segment_of_bytes() {
        let mut t = build("timely", Signal::Rtt, &[]);
        for _ in 0..15 {
            t.on_ack(&sample(1024, 30, None));
        }
        assert_eq!(t.pacing_rate_bps(), Some(5_000_000_000), "15 KiB < 16 KiB: no update yet");
        t.on_ack(&sample(1024, 30, None));
        assert_eq!(t.pacing_rate_bps(), Some(5_010_000_000));
        t.on_ack(&sample(3 * SEG, 30, None));
        assert_eq!(t.pacing_rate_bps(), Some(5_020_000_000), "one sample, one update");
    }

    #[test]
    fn oracle_cuts_on_queue_growth_while_rtt_is_flat() {
        let mut timely = build("timely", Signal::Rtt, &[]);
        let mut oracle = build("oracle-timely-seed", Signal::QueueDepth, &[]);
        // Norm at 10 Gbps, mss 1000, min_rtt 20 µs: 25 packets.
        // RTT flat at 100 µs (between Tlow and Thigh) while the echoed
        // queue builds 6 -> 8 -> 10 -> 12 packets (between 5 and 20).
        let qs = [6u32, 8, 10, 12];
        for (i, &q) in qs.iter().enumerate() {
            timely.on_ack(&sample(SEG, 100, Some(q)));
            oracle.on_ack(&sample(SEG, 100, Some(q)));
            if i == 0 {
                continue;
            }
            assert_eq!(timely.law().last_branch(), Some(Branch::Increase { n: 1.0 }), "RTT flat: TIMELY still increases");
            assert_eq!(oracle.law().last_branch(), Some(Branch::GradientCut), "queue grows: oracle cuts");
        }
        // Exact oracle trajectory: diffs 0, 0.2, 0.38, 0.542 packets.
        let mut rate = 5e9 + 10e6;
        let mut d = 0.0;
        for _ in 1..4 {
            d = 0.9 * d + 0.1 * 2.0;
            rate *= 1.0 - 0.8 * d / 25.0;
        }
        assert!((oracle.law().rate_bps() - rate).abs() < 1e-3);
        assert!(oracle.pacing_rate_bps() < timely.pacing_rate_bps());
        let st = oracle.state();
        assert_eq!(st["qdepth_pkts"], 12.0);
        assert!((st["qdelay_us"] - 12.0 * 1000.0 * 8.0 / 10e9 * 1e6).abs() < 1e-9);
    }

    #[test]
    fn oracle_thresholds_are_in_packets() {
        let mut oracle = build("oracle-timely-seed", Signal::QueueDepth, &[]);
        oracle.on_ack(&sample(SEG, 10_000, Some(2)));
        assert_eq!(oracle.law().last_branch(), Some(Branch::BelowTlow), "q=2 < 5 pkts despite a 10 ms RTT");
        oracle.on_ack(&sample(SEG, 10, Some(40)));
        assert_eq!(oracle.law().last_branch(), Some(Branch::AboveThigh), "q=40 > 20 pkts despite a 10 µs RTT");
        // Missing telemetry: the completion is skipped, not guessed.
        let before = oracle.pacing_rate_bps();
        oracle.on_ack(&sample(SEG, 100, None));
        assert_eq!(oracle.pacing_rate_bps(), before);
        assert_eq!(oracle.state()["skipped_updates"], 1.0);
    }
}
