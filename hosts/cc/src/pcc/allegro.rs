//! PCC Allegro (Dong et al., "PCC: Re-architecting Congestion Control for
//! Consistent High Performance", NSDI 2015).
//!
//! Utility (paper): `u = T·Sigmoid_α(L − 0.05) − x·L`, with
//! `Sigmoid_α(y) = 1/(1 + e^{αy})`, T the MI's throughput, L its loss rate,
//! x its sending rate.
//!
//! States (paper, "learning control algorithm"):
//! * starting: double the rate every MI until utility falls, then return to
//!   the previous rate;
//! * decision making: randomised controlled trials at r(1±ε); if every pair
//!   prefers the same direction, move to r(1+dir·ε), else stay at r and
//!   widen ε by ε_min up to ε_max;
//! * rate adjusting: `r_n = r_{n−1}·(1 + n·ε_min·dir)` every MI while
//!   utility keeps rising; when it falls, return to `r_{n−1}` and decide
//!   again.

use std::collections::BTreeMap;

use super::monitor::{MiStats, Monitor};
use super::{pcc_param_table, CommonParams, Pcc, RateControl, Rct, Rng, Startup, Tags};
use crate::params::{ParamInfo, Params};
use crate::{CcError, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = pcc_param_table![
    ParamInfo { name: "eps_min", default: "0.01", doc: "smallest trial step ε_min and rate-adjusting unit (paper: 0.01)" },
    ParamInfo { name: "eps_max", default: "0.05", doc: "largest trial step ε_max (paper: 0.05)" },
    ParamInfo { name: "sigmoid_alpha", default: "100", doc: "steepness α of the loss sigmoid (paper: 100)" },
    ParamInfo { name: "loss_threshold", default: "0.05", doc: "loss rate where the sigmoid cuts throughput credit (paper: 0.05)" },
];

/// `Sigmoid_α(y) = 1 / (1 + e^{α·y})`.
pub fn sigmoid(alpha: f64, y: f64) -> f64 {
    1.0 / (1.0 + (alpha * y).exp())
}

/// Allegro's utility; throughput and rate in the same unit (Mbit/s here).
pub fn utility(throughput: f64, loss: f64, rate: f64, alpha: f64, threshold: f64) -> f64 {
    throughput * sigmoid(alpha, loss - threshold) - rate * loss
}

#[derive(Debug, Clone, PartialEq)]
pub struct AllegroParams {
    pub common: CommonParams,
    pub eps_min: f64,
    pub eps_max: f64,
    pub sigmoid_alpha: f64,
    pub loss_threshold: f64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Tag {
    Start,
    Trial,
    /// Sent at the base rate while trial results are pending.
    Hold,
    Adjust,
}

#[derive(Debug, Clone)]
enum Phase {
    Starting(Startup),
    Deciding(Rct),
    Adjusting { dir: f64, n: u32, last: (f64, f64) },
}

#[derive(Debug, Clone)]
pub struct Allegro {
    p: AllegroParams,
    rng: Rng,
    rate: f64,
    eps: f64,
    phase: Phase,
    tags: Tags<Tag>,
    last_utility: f64,
    decisions: u64,
}

impl Allegro {
    pub fn new(p: AllegroParams) -> Self {
        Allegro {
            rng: Rng::new(p.common.seed),
            rate: p.common.init_rate_bps,
            eps: p.eps_min,
            phase: Phase::Starting(Startup::default()),
            tags: Tags::default(),
            last_utility: 0.0,
            decisions: 0,
            p,
        }
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Pcc<Allegro>, CcError> {
        let common = CommonParams::from_params(p, path)?;
        let eps_min = p.f64_in("eps_min", 1e-6, 0.5)?;
        let eps_max = p.f64_in("eps_max", 1e-6, 0.9)?;
        if eps_max < eps_min {
            return Err(p.invalid("eps_max", "must be >= eps_min"));
        }
        let ap = AllegroParams {
            eps_min,
            eps_max,
            sigmoid_alpha: p.f64_in("sigmoid_alpha", 0.0, 1e6)?,
            loss_threshold: p.f64_in("loss_threshold", 0.0, 1.0)?,
            common,
        };
        let mon = Monitor::new(ap.common.timing.clone());
        Ok(Pcc::new(Allegro::new(ap), mon))
    }

    /// Current base rate, bits/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }
    pub fn eps(&self) -> f64 {
        self.eps
    }
    pub fn phase_name(&self) -> &'static str {
        match self.phase {
            Phase::Starting(_) => "starting",
            Phase::Deciding(_) => "decision",
            Phase::Adjusting { .. } => "adjusting",
        }
    }

    fn decide(&mut self, eps: f64) {
        self.tags.bump();
        self.eps = eps;
        self.phase = Phase::Deciding(Rct::new(self.rate, eps, self.p.common.pairs, &mut self.rng));
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
                    self.decide(self.p.eps_min);
                }
            }
            (Phase::Deciding(rct), Tag::Trial) => {
                rct.record(id, u);
                if rct.spoiled() {
                    self.decide(self.eps);
                    return;
                }
                let Some(outcome) = rct.outcome() else { return };
                match outcome.agreed_direction() {
                    Some(dir) => {
                        // Move to the winning trial rate; its utility (mean
                        // over the pairs) is what the first adjusting step
                        // must beat.
                        let won: Vec<f64> =
                            outcome.pairs.iter().map(|&(up, down)| if dir > 0.0 { up } else { down }).collect();
                        let u_won = won.iter().sum::<f64>() / won.len() as f64;
                        self.rate = self.p.common.clamp(self.rate * (1.0 + dir * self.eps));
                        self.eps = self.p.eps_min;
                        self.decisions += 1;
                        self.tags.bump();
                        self.phase = Phase::Adjusting { dir, n: 0, last: (self.rate, u_won) };
                    }
                    None => {
                        let eps = (self.eps + self.p.eps_min).min(self.p.eps_max);
                        self.decide(eps);
                    }
                }
            }
            (Phase::Adjusting { last, .. }, Tag::Adjust) => match u {
                Some(u) if u >= last.1 => *last = (rate, u),
                // Utility fell (or the MI told nothing): back to the last
                // good rate and run a new trial there.
                _ => {
                    self.rate = last.0;
                    self.decide(self.p.eps_min);
                }
            },
            _ => {}
        }
    }
}

impl RateControl for Allegro {
    fn name(&self) -> &'static str {
        "pcc-allegro"
    }

    fn next_rate(&mut self, id: u64) -> f64 {
        let c = &self.p.common;
        let (rate, tag) = match &mut self.phase {
            Phase::Starting(st) => {
                self.rate = c.clamp(st.next_rate(self.rate));
                (self.rate, Tag::Start)
            }
            Phase::Deciding(rct) => match rct.next_trial(id) {
                Some(r) => (c.clamp(r), Tag::Trial),
                None => (self.rate, Tag::Hold),
            },
            Phase::Adjusting { dir, n, .. } => {
                *n += 1;
                self.rate = c.clamp(self.rate * (1.0 + f64::from(*n) * self.p.eps_min * *dir));
                (self.rate, Tag::Adjust)
            }
        };
        self.tags.insert(id, tag);
        rate
    }

    fn target_rate(&self) -> f64 {
        self.rate
    }

    fn on_result(&mut self, s: &MiStats) {
        let u = (!s.is_void()).then(|| {
            utility(s.throughput_bps() / 1e6, s.loss_rate(), s.rate_bps / 1e6, self.p.sigmoid_alpha, self.p.loss_threshold)
        });
        // A non-finite utility (degenerate input) carries no information.
        let u = u.filter(|u| u.is_finite());
        self.on_utility(s.id, s.rate_bps, u);
    }

    fn export(&self, out: &mut BTreeMap<&'static str, f64>) {
        out.insert("rate_mbps", self.rate / 1e6);
        out.insert("eps", self.eps);
        out.insert("utility", self.last_utility);
        out.insert("decisions", self.decisions as f64);
        out.insert(
            "phase",
            match self.phase {
                Phase::Starting(_) => 0.0,
                Phase::Deciding(_) => 1.0,
                Phase::Adjusting { .. } => 2.0,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::monitor::MiTiming;
    use super::*;

    fn params() -> AllegroParams {
        AllegroParams {
            common: CommonParams {
                timing: MiTiming { rtt_mult: 1.5, min_pkts: 20.0, init_rtt_ns: 10e6, mss: 1000.0 },
                init_rate_bps: 10e6,
                min_rate_bps: 1e5,
                max_rate_bps: 1e12,
                pairs: 2,
                seed: 1,
            },
            eps_min: 0.01,
            eps_max: 0.05,
            sigmoid_alpha: 100.0,
            loss_threshold: 0.05,
        }
    }

    #[test]
    fn utility_matches_the_paper() {
        // No loss: utility = T * 1/(1+e^-5).
        let u = utility(100.0, 0.0, 100.0, 100.0, 0.05);
        assert!((u - 100.0 / (1.0 + (-5.0f64).exp())).abs() < 1e-12);
        // At 5% loss the sigmoid is 1/2.
        let u = utility(95.0, 0.05, 100.0, 100.0, 0.05);
        assert!((u - (47.5 - 5.0)).abs() < 1e-12);
        // Far past 5% the throughput credit vanishes.
        assert!(utility(80.0, 0.2, 100.0, 100.0, 0.05) < -19.9);
    }

    /// Runs the starting state up to the fall-back, returning the next id.
    fn start(a: &mut Allegro) -> u64 {
        assert_eq!(a.next_rate(0), 10e6);
        assert_eq!(a.next_rate(1), 20e6);
        assert_eq!(a.next_rate(2), 40e6);
        a.on_utility(0, 10e6, Some(10.0));
        a.on_utility(1, 20e6, Some(20.0));
        assert_eq!(a.phase_name(), "starting");
        assert_eq!(a.next_rate(3), 80e6);
        a.on_utility(2, 40e6, Some(15.0)); // utility fell: back to 20 Mbps
        assert_eq!(a.phase_name(), "decision");
        assert_eq!(a.rate(), 20e6);
        a.on_utility(3, 80e6, Some(99.0)); // planned before the fall-back: ignored
        assert_eq!(a.phase_name(), "decision");
        4
    }

    /// Sends the four trial MIs, scoring each with `score(rate)`.
    fn trial(a: &mut Allegro, first_id: u64, score: impl Fn(f64) -> f64) -> Vec<f64> {
        let rates: Vec<f64> = (0..4).map(|i| a.next_rate(first_id + i)).collect();
        for (i, r) in rates.iter().enumerate() {
            a.on_utility(first_id + i as u64, *r, Some(score(*r)));
        }
        rates
    }

    #[test]
    fn starting_doubles_until_utility_falls() {
        let mut a = Allegro::new(params());
        start(&mut a);
    }

    #[test]
    fn rct_moves_toward_higher_utility_then_steps_grow() {
        let mut a = Allegro::new(params());
        let id = start(&mut a);
        let rates = trial(&mut a, id, |r| r / 1e6); // higher rate, higher utility
        let mut sorted = rates.clone();
        sorted.sort_by(|x, y| x.partial_cmp(y).unwrap());
        assert!((sorted[0] - 19.8e6).abs() < 1e-3 && (sorted[3] - 20.2e6).abs() < 1e-3);
        assert_eq!(a.phase_name(), "adjusting");
        let r0 = 20e6 * 1.01;
        assert!((a.rate() - r0).abs() < 1e-3);
        // Rate adjusting: r_n = r_{n-1} (1 + n eps_min), utility keeps rising.
        let mut r = r0;
        for n in 1..=4u32 {
            let got = a.next_rate(id + 3 + u64::from(n));
            r *= 1.0 + f64::from(n) * 0.01;
            assert!((got - r).abs() < 1e-3, "step {n}: {got} vs {r}");
            a.on_utility(id + 3 + u64::from(n), got, Some(got / 1e6));
        }
        // Utility falls at the next step: back to the previous rate, decide.
        let got = a.next_rate(id + 8);
        a.on_utility(id + 8, got, Some(0.0));
        assert_eq!(a.phase_name(), "decision");
        assert!((a.rate() - r).abs() < 1e-3);
        assert_eq!(a.eps(), 0.01);
    }

    #[test]
    fn rct_moves_down_when_lower_rate_wins() {
        let mut a = Allegro::new(params());
        let id = start(&mut a);
        trial(&mut a, id, |r| -r);
        assert_eq!(a.phase_name(), "adjusting");
        assert!((a.rate() - 20e6 * 0.99).abs() < 1e-3);
        let got = a.next_rate(id + 4);
        assert!((got - 20e6 * 0.99 * 0.99).abs() < 1e-3);
    }

    #[test]
    fn inconclusive_trials_widen_epsilon_up_to_max() {
        let mut a = Allegro::new(params());
        let mut id = start(&mut a);
        // The pairs disagree: first pair prefers up, second prefers down.
        let split = |a: &mut Allegro, id: u64| {
            let rates: Vec<f64> = (0..4).map(|i| a.next_rate(id + i)).collect();
            for (i, r) in rates.iter().enumerate() {
                let up = *r > a.rate();
                let first_pair = i < 2;
                let u = if up == first_pair { 1.0 } else { 0.0 };
                a.on_utility(id + i as u64, *r, Some(u));
            }
            rates
        };
        for expect in [0.02, 0.03, 0.04, 0.05, 0.05] {
            split(&mut a, id);
            id += 4;
            assert_eq!(a.phase_name(), "decision");
            assert!((a.eps() - expect).abs() < 1e-12);
            assert_eq!(a.rate(), 20e6, "stays at r while inconclusive");
        }
        let rates = split(&mut a, id);
        assert!(rates.iter().any(|r| (r - 20e6 * 1.05).abs() < 1e-3), "trials use eps 0.05");
    }

    #[test]
    fn hold_mis_run_at_base_rate_while_results_pending() {
        let mut a = Allegro::new(params());
        let id = start(&mut a);
        for i in 0..4 {
            a.next_rate(id + i);
        }
        assert_eq!(a.next_rate(id + 4), 20e6);
        assert_eq!(a.next_rate(id + 5), 20e6);
    }
}
