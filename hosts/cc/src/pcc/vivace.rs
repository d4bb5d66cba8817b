//! PCC Vivace (Dong et al., "PCC Vivace: Online-Learning Congestion
//! Control", NSDI 2018).
//!
//! Utility (paper, "Vivace-Latency"):
//! `u(x) = x^t − b·x·dRTT/dT − c·x·L`, x the sending rate in Mbit/s,
//! dRTT/dT the (dimensionless) RTT gradient over the MI, L the loss rate;
//! t = 0.9, b = 900, c = 11.35.
//!
//! Rate control (paper): after a doubling start, each decision probes
//! r(1+ε) and r(1−ε) (ε = 0.05) and estimates the utility gradient
//! `γ = (u+ − u−) / (2εr)`; the rate moves by `Δr = m(τ)·θ0·γ`, where the
//! confidence amplifier m grows with the number τ of consecutive decisions
//! in the same direction, and `|Δr|` is bounded by the dynamic change
//! boundary `ω·r`, `ω = ω0 + k·δ`, k counting consecutive times the bound
//! was hit.

use std::collections::BTreeMap;

use super::monitor::{MiStats, Monitor};
use super::{pcc_param_table, CommonParams, Pcc, RateControl, Rct, Rng, Startup, Tags};
use crate::params::{ParamInfo, Params};
use crate::{CcError, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = pcc_param_table![
    ParamInfo { name: "exponent", default: "0.9", doc: "throughput exponent t in x^t (paper: 0.9)" },
    ParamInfo { name: "latency_coef", default: "900", doc: "latency-gradient penalty b (paper: 900)" },
    ParamInfo { name: "loss_coef", default: "11.35", doc: "loss penalty c (paper: 11.35)" },
    ParamInfo { name: "eps", default: "0.05", doc: "probing step ε: trials at r(1±ε) (paper: 0.05)" },
    ParamInfo { name: "theta0", default: "1", doc: "initial conversion factor θ0 from utility gradient to rate change, Mbit/s per (utility per Mbit/s)" },
    ParamInfo { name: "amp_step", default: "1", doc: "confidence amplifier m(τ) = 1 + (τ−1)·amp_step for τ consecutive same-direction steps (1: m(τ)=τ; PCC-Uspace's code amounts to 0.1)" },
    ParamInfo { name: "omega0", default: "0.05", doc: "initial dynamic change boundary ω0, fraction of the rate (paper: 0.05)" },
    ParamInfo { name: "omega_delta", default: "0.1", doc: "boundary increment δ each consecutive time the bound is hit (paper: 0.1)" },
];

/// Vivace-Latency utility; `rate_mbps` in Mbit/s.
pub fn utility(rate_mbps: f64, rtt_gradient: f64, loss: f64, t: f64, b: f64, c: f64) -> f64 {
    rate_mbps.max(0.0).powf(t) - b * rate_mbps * rtt_gradient - c * rate_mbps * loss
}

#[derive(Debug, Clone, PartialEq)]
pub struct VivaceParams {
    pub common: CommonParams,
    pub exponent: f64,
    pub latency_coef: f64,
    pub loss_coef: f64,
    pub eps: f64,
    pub theta0: f64,
    pub amp_step: f64,
    pub omega0: f64,
    pub omega_delta: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tag {
    Start,
    Trial,
    Hold,
}

#[derive(Debug, Clone)]
enum Phase {
    Starting(Startup),
    Probing(Rct),
}

#[derive(Debug, Clone)]
pub struct Vivace {
    p: VivaceParams,
    rng: Rng,
    rate: f64,
    phase: Phase,
    tags: Tags<Tag>,
    /// Consecutive decisions in the same direction (confidence amplifier).
    tau: u32,
    last_dir: f64,
    /// Consecutive times the change boundary was hit.
    k: u32,
    last_gradient: f64,
    last_step_mbps: f64,
    last_utility: f64,
}

impl Vivace {
    pub fn new(p: VivaceParams) -> Self {
        Vivace {
            rng: Rng::new(p.common.seed),
            rate: p.common.init_rate_bps,
            phase: Phase::Starting(Startup::default()),
            tags: Tags::default(),
            tau: 0,
            last_dir: 0.0,
            k: 0,
            last_gradient: 0.0,
            last_step_mbps: 0.0,
            last_utility: 0.0,
            p,
        }
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Pcc<Vivace>, CcError> {
        let vp = VivaceParams {
            common: CommonParams::from_params(p, path)?,
            exponent: p.f64_in("exponent", 0.01, 0.999)?,
            latency_coef: p.f64_in("latency_coef", 0.0, 1e9)?,
            loss_coef: p.f64_in("loss_coef", 0.0, 1e9)?,
            eps: p.f64_in("eps", 1e-6, 0.5)?,
            theta0: p.f64_in("theta0", 1e-9, 1e9)?,
            amp_step: p.f64_in("amp_step", 0.0, 1e3)?,
            omega0: p.f64_in("omega0", 1e-6, 1.0)?,
            omega_delta: p.f64_in("omega_delta", 0.0, 10.0)?,
        };
        let mon = Monitor::new(vp.common.timing.clone());
        Ok(Pcc::new(Vivace::new(vp), mon))
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }
    pub fn tau(&self) -> u32 {
        self.tau
    }
    pub fn k(&self) -> u32 {
        self.k
    }
    pub fn is_starting(&self) -> bool {
        matches!(self.phase, Phase::Starting(_))
    }

    fn probe(&mut self) {
        self.tags.bump();
        self.phase = Phase::Probing(Rct::new(self.rate, self.p.eps, self.p.common.pairs, &mut self.rng));
    }

    /// Gradient ascent step from utility gradient `gamma` (utility per
    /// Mbit/s): amplified by confidence, bounded by the change boundary.
    fn step(&mut self, gamma: f64) {
        if !gamma.is_finite() || gamma == 0.0 {
            return;
        }
        let dir = gamma.signum();
        if dir == self.last_dir {
            self.tau = self.tau.saturating_add(1);
        } else {
            // A direction change resets both confidence and the boundary.
            self.tau = 1;
            self.k = 0;
        }
        self.last_dir = dir;
        let base = self.rate / 1e6;
        // Confidence amplifier m(τ), non-decreasing in τ, m(1) = 1.
        let m = 1.0 + f64::from(self.tau.saturating_sub(1)) * self.p.amp_step;
        let mut step = m * self.p.theta0 * gamma;
        let omega = self.p.omega0 + f64::from(self.k) * self.p.omega_delta;
        if step.abs() > omega * base {
            step = dir * omega * base;
            self.k = self.k.saturating_add(1);
        } else if step.abs() <= self.p.omega0 * base || self.p.omega_delta <= 0.0 {
            self.k = 0;
        } else {
            // Shrink the boundary back to the smallest one that admits
            // this step.
            let need = ((step.abs() / base - self.p.omega0) / self.p.omega_delta - 1e-9).ceil();
            self.k = need.clamp(0.0, f64::from(self.k)) as u32;
        }
        self.last_gradient = gamma;
        self.last_step_mbps = step;
        self.rate = self.p.common.clamp((base + step) * 1e6);
    }

    /// Utility of MI `id`, sent at `rate` (None = MI had no feedback).
    pub fn on_utility(&mut self, id: u64, rate: f64, u: Option<f64>) {
        let Some(tag) = self.tags.take(id) else { return };
        if let Some(u) = u {
            self.last_utility = u;
        }
        match (&mut self.phase, tag) {
            (Phase::Starting(st), Tag::Start) => {
                if let Some(back) = u.and_then(|u| st.on_utility(rate, u)) {
                    self.rate = back;
                    self.probe();
                }
            }
            (Phase::Probing(rct), Tag::Trial) => {
                rct.record(id, u);
                if rct.spoiled() {
                    self.probe();
                    return;
                }
                let Some(outcome) = rct.outcome() else { return };
                let base_mbps = rct.base / 1e6;
                let den = 2.0 * rct.eps * base_mbps;
                let gammas: Vec<f64> = outcome.pairs.iter().map(|&(up, down)| (up - down) / den).collect();
                // Pairs that disagree on the sign are noise: probe again.
                if outcome.agreed_direction().is_some() && den > 0.0 {
                    let gamma = gammas.iter().sum::<f64>() / gammas.len() as f64;
                    self.step(gamma);
                }
                self.probe();
            }
            _ => {}
        }
    }
}

impl RateControl for Vivace {
    fn name(&self) -> &'static str {
        "pcc-vivace"
    }

    fn next_rate(&mut self, id: u64) -> f64 {
        let c = &self.p.common;
        let (rate, tag) = match &mut self.phase {
            Phase::Starting(st) => {
                self.rate = c.clamp(st.next_rate(self.rate));
                (self.rate, Tag::Start)
            }
            Phase::Probing(rct) => match rct.next_trial(id) {
                Some(r) => (c.clamp(r), Tag::Trial),
                None => (self.rate, Tag::Hold),
            },
        };
        self.tags.insert(id, tag);
        rate
    }

    fn target_rate(&self) -> f64 {
        self.rate
    }

    fn on_result(&mut self, s: &MiStats) {
        let u = (!s.is_void()).then(|| {
            utility(s.rate_bps / 1e6, s.rtt_gradient, s.loss_rate(), self.p.exponent, self.p.latency_coef, self.p.loss_coef)
        });
        // A non-finite utility (degenerate input) carries no information.
        let u = u.filter(|u| u.is_finite());
        self.on_utility(s.id, s.rate_bps, u);
    }

    fn export(&self, out: &mut BTreeMap<&'static str, f64>) {
        out.insert("rate_mbps", self.rate / 1e6);
        out.insert("utility", self.last_utility);
        out.insert("gradient", self.last_gradient);
        out.insert("step_mbps", self.last_step_mbps);
        out.insert("tau", f64::from(self.tau));
        out.insert("k", f64::from(self.k));
        out.insert("phase", if self.is_starting() { 0.0 } else { 1.0 });
    }
}

#[cfg(test)]
mod tests {
    use super::super::monitor::MiTiming;
    use super::*;

    fn params() -> VivaceParams {
        VivaceParams {
            common: CommonParams {
                timing: MiTiming { rtt_mult: 1.5, min_pkts: 20.0, init_rtt_ns: 10e6, mss: 1000.0 },
                init_rate_bps: 10e6,
                min_rate_bps: 1e5,
                max_rate_bps: 1e12,
                pairs: 2,
                seed: 3,
            },
            exponent: 0.9,
            latency_coef: 900.0,
            loss_coef: 11.35,
            eps: 0.05,
            theta0: 1.0,
            amp_step: 1.0,
            omega0: 0.05,
            omega_delta: 0.1,
        }
    }

    #[test]
    fn utility_matches_the_paper() {
        let u = utility(100.0, 0.0, 0.0, 0.9, 900.0, 11.35);
        assert!((u - 100f64.powf(0.9)).abs() < 1e-12);
        let u = utility(100.0, 0.001, 0.02, 0.9, 900.0, 11.35);
        assert!((u - (100f64.powf(0.9) - 90.0 - 22.7)).abs() < 1e-9);
        // A shrinking RTT (negative gradient) is rewarded.
        assert!(utility(100.0, -0.001, 0.0, 0.9, 900.0, 11.35) > 100f64.powf(0.9));
    }

    /// Doubling start; falls back to 20 Mbps. Returns the next MI id.
    fn start(v: &mut Vivace) -> u64 {
        assert_eq!(v.next_rate(0), 10e6);
        assert_eq!(v.next_rate(1), 20e6);
        assert_eq!(v.next_rate(2), 40e6);
        v.on_utility(0, 10e6, Some(1.0));
        v.on_utility(1, 20e6, Some(2.0));
        v.on_utility(2, 40e6, Some(1.5));
        assert!(!v.is_starting());
        assert_eq!(v.rate(), 20e6);
        3
    }

    /// One probing round scored by `score(rate_mbps)`.
    fn probe(v: &mut Vivace, id: &mut u64, score: impl Fn(f64) -> f64) {
        let rates: Vec<f64> = (0..4).map(|i| v.next_rate(*id + i)).collect();
        let base = v.rate();
        for r in &rates {
            assert!((r - base * 1.05).abs() < 1e-6 || (r - base * 0.95).abs() < 1e-6);
        }
        for (i, r) in rates.iter().enumerate() {
            v.on_utility(*id + i as u64, *r, Some(score(*r / 1e6)));
        }
        *id += 4;
    }

    #[test]
    fn step_follows_the_utility_gradient() {
        let mut v = Vivace::new(params());
        let mut id = start(&mut v);
        // u = 0.5 x: gradient 0.5 per Mbit/s. τ = 1: Δr = 0.5 Mbit/s.
        probe(&mut v, &mut id, |x| 0.5 * x);
        assert!((v.rate() - 20.5e6).abs() < 1e-3);
        assert_eq!((v.tau(), v.k()), (1, 0));
        // Same direction: τ = 2, Δr = 1.0 <= 0.05 * 20.5 = 1.025.
        probe(&mut v, &mut id, |x| 0.5 * x);
        assert!((v.rate() - 21.5e6).abs() < 1e-3);
        // τ = 3, Δr = 1.5 > 0.05 * 21.5: clipped to 1.075, k = 1.
        probe(&mut v, &mut id, |x| 0.5 * x);
        assert!((v.rate() - 22.575e6).abs() < 1e-3);
        assert_eq!(v.k(), 1);
        // τ = 4, Δr = 2.0 within (0.05 + 0.1) * 22.575: not clipped; the
        // smallest boundary admitting it is still k = 1.
        probe(&mut v, &mut id, |x| 0.5 * x);
        assert!((v.rate() - 24.575e6).abs() < 1e-3);
        assert_eq!(v.k(), 1);
        // Utility now falls with rate: direction flips, τ and k reset.
        probe(&mut v, &mut id, |x| -0.5 * x);
        assert!((v.rate() - 24.075e6).abs() < 1e-3);
        assert_eq!((v.tau(), v.k()), (1, 0));
    }

    #[test]
    fn change_boundary_grows_while_hit() {
        let mut v = Vivace::new(params());
        let mut id = start(&mut v);
        let mut r = 20e6;
        for k in 0..4u32 {
            // Huge gradient: every step is clipped to (ω0 + kδ)·r.
            probe(&mut v, &mut id, |x| 1000.0 * x);
            r *= 1.0 + 0.05 + 0.1 * f64::from(k);
            assert!((v.rate() - r).abs() < 1e-3, "k={k}");
            assert_eq!(v.k(), k + 1);
        }
    }

    #[test]
    fn disagreeing_pairs_do_not_move_the_rate() {
        let mut v = Vivace::new(params());
        let mut id = start(&mut v);
        let rates: Vec<f64> = (0..4).map(|i| v.next_rate(id + i)).collect();
        for (i, r) in rates.iter().enumerate() {
            let up = *r > 20e6;
            let u = if up == (i < 2) { 1.0 } else { 0.0 };
            v.on_utility(id + i as u64, *r, Some(u));
        }
        id += 4;
        assert_eq!(v.rate(), 20e6);
        probe(&mut v, &mut id, |x| 0.5 * x);
        assert!((v.rate() - 20.5e6).abs() < 1e-3);
    }
}
