//! PCC Allegro (Dong et al., "PCC: Re-architecting Congestion Control for
//! Consistent High Performance", NSDI 2015), on the shared controller
//! ([`super::control`]) with the Allegro utility
//! ([`super::utility::AllegroUtility`]).
//!
//! Two moving rules (`moving`):
//! * `gradient` (default): the rule PCC-Uspace runs Allegro with. Its core
//!   (`src/core/core.cpp`) only ever creates a `PccVivaceSender`, whose
//!   `OnUtilityAvailable` overrides `PccSender`'s; the utility tag
//!   ("Allegro", "Vivace", ...) only picks the utility function. So its
//!   Allegro is gradient ascent ([`VivaceMover`]) on the Allegro utility.
//! * `paper`: the NSDI'15 rule ([`PaperMover`], §2.2 "decision making" and
//!   "rate adjusting").

use std::collections::BTreeMap;

use super::control::{Controller, Move, Mover, RctOutcome};
use super::monitor::Monitor;
use super::utility::AllegroUtility;
use super::vivace::{gradient_param_table, VivaceMover, VivaceSteps};
use super::{pcc_param_table, CommonParams, Pcc};
use crate::params::{ParamInfo, Params};
use crate::{CcError, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = gradient_param_table![
    ParamInfo { name: "moving", default: "gradient", doc: "moving rule: gradient (PCC-Uspace: gradient ascent, its only rate control) or paper (NSDI'15: steps of n·eps_min)" },
    ParamInfo { name: "sigmoid_alpha", default: "100", doc: "steepness α of the loss sigmoid (paper: 100; PCC-Uspace: 1000)" },
    ParamInfo { name: "loss_threshold", default: "0.05", doc: "loss rate where the sigmoid cuts throughput credit (paper, PCC-Uspace: 0.05)" },
    ParamInfo { name: "rtt_coef", default: "200", doc: "steepness of the latency sigmoid on 1 − RTT_start/RTT_end (PCC-Uspace: 200); 0 = none (paper)" },
    ParamInfo { name: "rtt_tolerance", default: "0.05", doc: "RTT ratio within 1 ± this counts as unchanged after start-up (PCC-Uspace flag default: 0.05)" },
    ParamInfo { name: "rtt_tolerance_startup", default: "0.3", doc: "... and in start-up (PCC-Uspace flag default: 0.3)" },
    ParamInfo { name: "eps_min", default: "0.01", doc: "moving=paper: smallest trial step ε_min and rate-adjusting unit (paper: 0.01)" },
    ParamInfo { name: "eps_max", default: "0.05", doc: "moving=paper: largest trial step ε_max (paper: 0.05)" },
];

/// The NSDI'15 moving rule:
/// * trials at `r(1±ε)`; if every pair agrees on direction `d`, move to
///   `r(1+dε)` and reset ε to ε_min; if they disagree, stay at `r` and
///   widen ε by ε_min, up to ε_max;
/// * rate adjusting: the n-th step goes to `r_n = r_{n−1}·(1 + n·ε_min·d)`
///   while utility keeps rising; when it falls, return to `r_{n−1}` and
///   decide again.
///
/// One adjusting MI is scored at a time, as in PCC-Uspace (DECISION_MADE
/// keeps one useful interval in the queue), so `r_0 = r(1+dε)` is the
/// winning trial rate, scored by the trial, and the first adjusting MI runs
/// at `r_1`.
#[derive(Debug, Clone)]
pub struct PaperMover {
    pub eps_min: f64,
    pub eps_max: f64,
    eps: f64,
    dir: f64,
    /// Steps taken since the decision.
    n: u32,
    /// (rate, utility) of the last adjusting step that raised utility.
    last: (f64, f64),
}

impl PaperMover {
    pub fn new(eps_min: f64, eps_max: f64) -> Self {
        PaperMover { eps_min, eps_max, eps: eps_min, dir: 0.0, n: 0, last: (0.0, 0.0) }
    }
    fn step(&mut self, from: f64) -> f64 {
        self.n += 1;
        from * (1.0 + f64::from(self.n) * self.eps_min * self.dir)
    }
}

impl Mover for PaperMover {
    fn eps(&self, _: f64) -> f64 {
        self.eps
    }
    fn on_inconclusive(&mut self) {
        self.eps = (self.eps + self.eps_min).min(self.eps_max);
    }
    fn on_decision(&mut self, o: &RctOutcome, dir: f64) -> Move {
        // The winning side's mean utility is what the first step must beat.
        let won: f64 = o.pairs.iter().map(|&(up, down)| if dir > 0.0 { up } else { down }).sum::<f64>() / o.pairs.len() as f64;
        let r0 = o.base * (1.0 + dir * o.eps);
        self.eps = self.eps_min;
        self.dir = dir;
        self.n = 0;
        self.last = (r0, won);
        Move::Continue(self.step(r0))
    }
    fn on_move(&mut self, rate: f64, u: f64) -> Move {
        if u >= self.last.1 {
            self.last = (rate, u);
            Move::Continue(self.step(rate))
        } else {
            Move::Probe(self.last.0)
        }
    }
    fn export(&self, out: &mut BTreeMap<&'static str, f64>) {
        out.insert("eps", self.eps);
        out.insert("dir", self.dir);
        out.insert("step", f64::from(self.n));
    }
}

/// Allegro's moving rule, as chosen by `moving`.
#[derive(Debug, Clone)]
pub enum AllegroMover {
    Gradient(VivaceMover),
    Paper(PaperMover),
}

impl AllegroMover {
    fn rule(&self) -> &dyn Mover {
        match self {
            AllegroMover::Gradient(m) => m,
            AllegroMover::Paper(m) => m,
        }
    }
    fn rule_mut(&mut self) -> &mut dyn Mover {
        match self {
            AllegroMover::Gradient(m) => m,
            AllegroMover::Paper(m) => m,
        }
    }
}

impl Mover for AllegroMover {
    fn eps(&self, base: f64) -> f64 {
        self.rule().eps(base)
    }
    fn pairs(&self, configured: usize) -> usize {
        self.rule().pairs(configured)
    }
    fn on_inconclusive(&mut self) {
        self.rule_mut().on_inconclusive()
    }
    fn on_decision(&mut self, o: &RctOutcome, dir: f64) -> Move {
        self.rule_mut().on_decision(o, dir)
    }
    fn on_reference(&mut self, rate: f64, u: f64) {
        self.rule_mut().on_reference(rate, u)
    }
    fn on_move(&mut self, rate: f64, u: f64) -> Move {
        self.rule_mut().on_move(rate, u)
    }
    fn export(&self, out: &mut BTreeMap<&'static str, f64>) {
        self.rule().export(out)
    }
}

pub type Allegro = Pcc<AllegroMover>;

pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Allegro, CcError> {
    let common = CommonParams::from_params(p, path)?;
    let utility = AllegroUtility {
        alpha: p.f64_in("sigmoid_alpha", 0.0, 1e6)?,
        loss_threshold: p.f64_in("loss_threshold", 0.0, 1.0)?,
        rtt_coef: p.f64_in("rtt_coef", 0.0, 1e6)?,
        rtt_tolerance: p.f64_in("rtt_tolerance", 0.0, 1e3)?,
        rtt_tolerance_startup: p.f64_in("rtt_tolerance_startup", 0.0, 1e3)?,
    };
    let eps_min = p.f64_in("eps_min", 1e-6, 0.5)?;
    let eps_max = p.f64_in("eps_max", 1e-6, 0.9)?;
    if eps_max < eps_min {
        return Err(p.invalid("eps_max", "must be >= eps_min"));
    }
    let steps = VivaceSteps::from_params(p)?;
    let mover = match p.choice("moving", &["gradient", "paper"])? {
        "paper" => AllegroMover::Paper(PaperMover::new(eps_min, eps_max)),
        _ => AllegroMover::Gradient(VivaceMover::new(steps)),
    };
    let mon = Monitor::new(common.timing.clone());
    let ctl = Controller::new(mover, common);
    Ok(Pcc::new("pcc-allegro", ctl, mon, Box::new(utility)))
}

#[cfg(test)]
mod tests {
    use super::super::control::tests::{common, start, trial_by};
    use super::*;

    fn ctl() -> Controller<PaperMover> {
        Controller::new(PaperMover::new(0.01, 0.05), common())
    }

    #[test]
    fn rct_moves_toward_higher_utility_then_steps_grow() {
        let mut c = ctl();
        let id = start(&mut c);
        let mut rates = trial_by(&mut c, id, |_, r| r / 1e6);
        rates.sort_by(f64::total_cmp);
        assert!((rates[0] - 19.8e6).abs() < 1e-3 && (rates[3] - 20.2e6).abs() < 1e-3, "trials at r(1±ε_min)");
        assert_eq!(c.phase_name(), "moving");
        // r_0 = 20·1.01 (scored by the trial); r_n = r_{n−1}(1 + n·0.01).
        let mut r = 20e6 * 1.01;
        for n in 1..=4u32 {
            r *= 1.0 + f64::from(n) * 0.01;
            let id = id + 3 + u64::from(n);
            let got = c.next_rate(id);
            assert!((got - r).abs() < 1e-3, "step {n}: {got} vs {r}");
            c.on_utility(id, got, Some(got / 1e6));
        }
        // Utility falls at the next step: back to r_4 and decide again.
        let got = c.next_rate(id + 8);
        c.on_utility(id + 8, got, Some(0.0));
        assert_eq!(c.phase_name(), "probing");
        assert!((c.rate() - r).abs() < 1e-3);
        assert_eq!(c.mover.eps(0.0), 0.01);
    }

    #[test]
    fn the_first_step_must_beat_the_winning_trials() {
        let mut c = ctl();
        let id = start(&mut c);
        trial_by(&mut c, id, |_, r| -r / 1e6); // lower rate wins, mean u = −19.8
        let r1 = c.next_rate(id + 4);
        assert!((r1 - 20e6 * 0.99 * 0.99).abs() < 1e-3);
        c.on_utility(id + 4, r1, Some(-19.9));
        assert_eq!(c.phase_name(), "probing");
        assert!((c.rate() - 20e6 * 0.99).abs() < 1e-3, "back to r_0");
    }

    #[test]
    fn inconclusive_trials_widen_epsilon_up_to_max() {
        let mut c = ctl();
        let mut id = start(&mut c);
        for expect in [0.02, 0.03, 0.04, 0.05, 0.05] {
            let rates: Vec<f64> = (0..4).map(|i| c.next_rate(id + i)).collect();
            for (i, r) in rates.iter().enumerate() {
                let up = *r > 20e6;
                c.on_utility(id + i as u64, *r, Some(if up == (i < 2) { 1.0 } else { 0.0 }));
            }
            id += 4;
            assert_eq!(c.phase_name(), "probing");
            assert!((c.mover.eps(0.0) - expect).abs() < 1e-12);
            assert_eq!(c.rate(), 20e6, "stays at r while inconclusive");
        }
        let rates: Vec<f64> = (0..4).map(|i| c.next_rate(id + i)).collect();
        assert!(rates.iter().any(|r| (r - 20e6 * 1.05).abs() < 1e-3), "trials use ε_max");
    }

    fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn built(pairs: &[(&str, &str)]) -> Result<Allegro, CcError> {
        let given = kv(pairs);
        let p = Params::new("pcc-allegro", PARAMS, &given)?;
        from_params(&p, &PathInfo { mss: 1000, line_rate_bps: None, init_cwnd_pkts: 10 })
    }

    #[test]
    fn defaults_are_pcc_uspaces_gradient_ascent_with_the_latency_factor() {
        let a = built(&[]).unwrap();
        let AllegroMover::Gradient(m) = &a.controller().mover else { panic!("default moving rule is gradient") };
        assert_eq!(m.p, VivaceSteps { eps: 0.05, theta0: 1.0, amp_exponent: 1.2, omega0: 0.05, omega_delta: 0.05, min_step_mbps: 0.5, from_base: false });
        assert!(matches!(built(&[("moving", "paper")]).unwrap().controller().mover, AllegroMover::Paper(_)));
        assert!(matches!(built(&[("moving", "vivace")]), Err(CcError::BadValue { .. })));
    }

    /// The gradient rule on Allegro's scores (Mbit/s units): after a trial
    /// around 20 Mbit/s that prefers 21 by u(21) − u(19) = 2 per pair,
    /// γ = 2/2 = 1 per Mbit/s, so Δ = θ0·γ = 1 Mbit/s past 21.
    #[test]
    fn gradient_rule_moves_by_the_measured_utility_gradient() {
        let steps = VivaceSteps { eps: 0.05, theta0: 1.0, amp_exponent: 1.2, omega0: 0.05, omega_delta: 0.05, min_step_mbps: 0.5, from_base: false };
        let mut c = Controller::new(AllegroMover::Gradient(VivaceMover::new(steps)), common());
        let id = start(&mut c);
        trial_by(&mut c, id, |_, r| r / 1e6);
        assert_eq!(c.phase_name(), "moving");
        assert!((c.rate() - 22e6).abs() < 1e-3, "{}", c.rate());
    }
}
