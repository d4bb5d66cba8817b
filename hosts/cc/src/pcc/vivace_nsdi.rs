//! Vivace's rate control as the code its authors evaluated it with decides
//! (PCC-Uspace NSDI-2018 branch, `src/nsdi-2018/pcc-gradient/sender/app/
//! pcc.h`, class `PCC`; `pcc-vivace` with `moving = nsdi2018`).
//!
//! The paper (NSDI'18 §4) states one rule: every decision is a probe,
//! `Δr = m(τ)·θ0·γ` with γ the utility gradient the probe measured, the
//! confidence amplifier m(τ) growing over τ consecutive decisions in one
//! direction, and the dynamic change boundary ω. PCC-Uspace master (the
//! default rule, [`super::vivace::VivaceMover`]) instead keeps stepping
//! after one probe, comparing each MI with the one before. The branch
//! does what the paper says, with these particulars (`decide`, and the
//! RECORDING and MOVING cases of `onMonitorEnds`):
//! * the change is `θ0·γ·m`, γ = (mean utility of the upper trials − mean
//!   of the lower ones) / (upper rate − lower rate), Mbit/s;
//! * the amplifier a counts same-direction decisions (1 per decision up
//!   to 3, then ½), reset by a reversal, which also opens a swing buffer
//!   of up to two decisions that do not count; m(a) = a + 1 below 3,
//!   2a − 2 below 6, 4a − 14 below 9, 8a − 50 beyond;
//! * the boundary `|Δ| ≤ r·(ω0 + δ·k)`: a clipped change raises k by one,
//!   one within it lowers k by one, a reversal resets it;
//! * no change is smaller than `min_step_mbps`;
//! * a change of at most 10 % of the rate (every decrease among them) is
//!   applied at once and the next probe runs there; a larger one moves
//!   there and judges the move by its MI against the MI sent at the base
//!   after the probe ("reference"), going on while the two agree;
//! * after a decision in the same direction as the last, or a probe that
//!   could not decide, the next probe is one pair of MIs instead of two
//!   (`trend_count_`, `number_of_probes_`);
//! * ε = max(ε0, 0.5 Mbit/s / r) (`getkDelta`).
//!
//! Not ported: the branch's two checks that compare the trials' loss
//! counts (`double_check` when the probe lost 5 % or more, `second_guess`
//! on a move), and its re-scoring of a probe's MIs at their common loss
//! rate when that is at most 1 %; the controller hands movers utilities,
//! not loss counts.

use std::collections::BTreeMap;

use super::control::{Move, Mover, RctOutcome};
use super::vivace::VivaceSteps;

/// A change above this fraction of the rate is a move, judged by its MI
/// (`change/base_rate_ <= 0.1` in `onMonitorEnds`).
const MOVE_ABOVE: f64 = 0.1;
/// ε is at least this many Mbit/s over the rate (`getkDelta`: 0.5/r).
const MIN_PROBE_MBPS: f64 = 0.5;
/// Decisions after a reversal that do not raise the amplifier, at most
/// (`swing_buffer < 2`).
const SWING_MAX: u32 = 2;

#[derive(Debug, Clone)]
pub struct NsdiMover {
    pub p: VivaceSteps,
    /// Amplifier a (`amplifier`).
    amp: f64,
    /// Boundary allowance k (`boundary_amplifier`).
    k: u32,
    /// Same-direction decisions left that do not raise a (`swing_buffer`).
    swing: u32,
    /// Decisions in a row in one direction; ≥ 1 = probe with one pair
    /// (`trend_count_`).
    trend: u32,
    /// The last change, Mbit/s; 0 after a probe that could not decide
    /// (`prev_change_`).
    prev: f64,
    /// (rate, utility) the running move is judged against.
    reference: Option<(f64, f64)>,
    /// The change of the running move, Mbit/s (`move_stat.change`).
    move_change: f64,
}

impl NsdiMover {
    pub fn new(p: VivaceSteps) -> Self {
        NsdiMover { p, amp: 0.0, k: 0, swing: 0, trend: 0, prev: 0.0, reference: None, move_change: 0.0 }
    }

    /// m(a), the branch's piecewise-linear amplifier.
    fn multiplier(&self) -> f64 {
        let a = self.amp;
        if a < 3.0 {
            a + 1.0
        } else if a < 6.0 {
            2.0 * a - 2.0
        } else if a < 9.0 {
            4.0 * a - 14.0
        } else {
            8.0 * a - 50.0
        }
    }

    /// The change in Mbit/s for utility gradient `gamma` (per Mbit/s) at
    /// rate `rate_mbps` (`decide`), updating the amplifier, the boundary
    /// and the trend.
    fn decide(&mut self, gamma: f64, rate_mbps: f64) -> f64 {
        let mut change = gamma * self.p.theta0;
        let reversed = change * self.prev < 0.0;
        if reversed {
            self.amp = 0.0;
            self.k = 0;
            self.swing = (self.swing + 1).min(SWING_MAX);
        }
        change *= self.multiplier();
        if reversed {
            self.trend = 0;
        } else if change * self.prev > 0.0 {
            self.trend = self.trend.saturating_add(1);
            if self.swing == 0 {
                self.amp += if self.amp > 3.0 { 0.5 } else { 1.0 };
            } else {
                self.swing -= 1;
            }
        }
        let bound = self.p.omega0 + self.p.omega_delta * f64::from(self.k);
        if change.abs() / rate_mbps > bound {
            change = change.signum() * rate_mbps * bound;
            self.k = self.k.saturating_add(1);
        } else {
            self.k = self.k.saturating_sub(1);
        }
        if reversed {
            self.amp = 0.0;
            self.k = 0;
        }
        if change != 0.0 && change.abs() < self.p.min_step_mbps {
            change = change.signum() * self.p.min_step_mbps;
        }
        self.prev = change;
        change
    }

    /// Applies `change` (Mbit/s) at `rate` (bits/s): a small one is
    /// probed at once, a large one moved to.
    fn apply(&mut self, rate: f64, change: f64) -> Move {
        let to = rate + change * 1e6;
        if change / (rate / 1e6) <= MOVE_ABOVE {
            self.reference = None;
            Move::Probe(to)
        } else {
            self.move_change = change;
            Move::Continue(to)
        }
    }

    pub fn amplifier(&self) -> f64 {
        self.amp
    }
    pub fn k(&self) -> u32 {
        self.k
    }
}

impl Mover for NsdiMover {
    fn eps(&self, base: f64) -> f64 {
        let floor = if base > 0.0 { MIN_PROBE_MBPS / (base / 1e6) } else { 0.0 };
        self.p.eps.max(floor)
    }
    fn pairs(&self, configured: usize) -> usize {
        if self.trend >= 1 {
            1
        } else {
            configured
        }
    }
    fn on_inconclusive(&mut self) {
        self.prev = 0.0;
        self.trend = 2;
    }
    fn on_decision(&mut self, o: &RctOutcome, _dir: f64) -> Move {
        let n = o.pairs.len() as f64;
        let up = o.pairs.iter().map(|p| p.0).sum::<f64>() / n;
        let down = o.pairs.iter().map(|p| p.1).sum::<f64>() / n;
        let gap_mbps = 2.0 * o.eps * o.base / 1e6;
        let gamma = if gap_mbps > 0.0 { (up - down) / gap_mbps } else { 0.0 };
        let change = self.decide(gamma, o.base / 1e6);
        // Until the reference MI is in, the move is judged against the
        // trials' mean, the utility they put at the base.
        self.reference = Some((o.base, (up + down) / 2.0));
        self.apply(o.base, change)
    }
    fn on_reference(&mut self, rate: f64, u: f64) {
        if self.reference.is_some() {
            self.reference = Some((rate, u));
        }
    }
    fn on_move(&mut self, rate: f64, u: f64) -> Move {
        let Some((r0, u0)) = self.reference else { return Move::Probe(rate) };
        let gap_mbps = (rate - r0) / 1e6;
        let gamma = if gap_mbps != 0.0 { (u - u0) / gap_mbps } else { 0.0 };
        let change = self.decide(gamma, rate / 1e6);
        if change * self.move_change <= 0.0 {
            // The move went too far: back by the new change, probe there.
            self.reference = None;
            return Move::Probe(rate + change * 1e6);
        }
        self.reference = Some((rate, u));
        let next = self.apply(rate, change);
        if let Move::Probe(_) = next {
            self.trend = 2;
        }
        next
    }
    fn export(&self, out: &mut BTreeMap<&'static str, f64>) {
        out.insert("amplifier", self.amp);
        out.insert("k", f64::from(self.k));
        out.insert("trend", f64::from(self.trend));
        out.insert("change_mbps", self.prev);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mover() -> NsdiMover {
        let steps = VivaceSteps { eps: 0.05, theta0: 1.0, amp_exponent: 1.2, omega0: 0.05, omega_delta: 0.06, min_step_mbps: 0.5, from_base: true };
        NsdiMover::new(steps)
    }

    /// A trial around `base_mbps` whose every pair differs by `gap`
    /// utility between the upper and the lower rate: γ = gap / (2ε·base).
    fn trial(m: &NsdiMover, base_mbps: f64, gamma: f64, pairs: usize) -> RctOutcome {
        let base = base_mbps * 1e6;
        let eps = m.eps(base);
        let gap = gamma * 2.0 * eps * base_mbps;
        RctOutcome { base, eps, pairs: vec![(10.0 + gap, 10.0); pairs] }
    }

    fn probed_at(mv: Move) -> f64 {
        match mv {
            Move::Probe(r) => r / 1e6,
            Move::Continue(r) => panic!("moved to {r}, expected a probe"),
        }
    }

    /// `decide`: m(a) = a+1 below 3, 2a−2 below 6, 4a−14 below 9, 8a−50.
    #[test]
    fn the_amplifier_is_the_branchs_piecewise_line() {
        let mut m = mover();
        for (a, want) in [(0.0, 1.0), (2.0, 3.0), (3.0, 4.0), (5.5, 9.0), (6.0, 10.0), (8.5, 20.0), (9.0, 22.0), (10.0, 30.0)] {
            m.amp = a;
            assert_eq!(m.multiplier(), want, "a = {a}");
        }
    }

    /// `onMonitorEnds`, RECORDING: a change of at most 10 % of the rate is
    /// applied and probed at once; `decide`: same-direction decisions raise
    /// the amplifier (after the first, which has no previous change), a
    /// clipped change raises k, one within the boundary lowers it; after a
    /// same-direction decision the probe is one pair (`trend_count_`).
    #[test]
    fn decisions_in_one_direction_amplify_and_probe_with_one_pair() {
        let mut m = mover();
        assert_eq!(m.pairs(2), 2);
        // γ = 0.8 at 20: Δ = 0.8 (4 % ≤ ω0 = 5 %), probed at 20.8.
        let r = probed_at(m.on_decision(&trial(&m, 20.0, 0.8, 2), 1.0));
        assert!((r - 20.8).abs() < 1e-9, "{r}");
        assert_eq!((m.amplifier(), m.k(), m.pairs(2)), (0.0, 0, 2));
        // Second: m(0) = 1, Δ = 0.8; now a trend: a = 1, one pair.
        let r = probed_at(m.on_decision(&trial(&m, 20.8, 0.8, 2), 1.0));
        assert!((r - 21.6).abs() < 1e-9, "{r}");
        assert_eq!((m.amplifier(), m.pairs(2)), (1.0, 1));
        // Third: m(1) = 2, Δ = 1.6 > 5 % of 21.6: clipped to 1.08, k = 1.
        let r = probed_at(m.on_decision(&trial(&m, 21.6, 0.8, 1), 1.0));
        assert!((r - 22.68).abs() < 1e-9, "{r}");
        assert_eq!((m.amplifier(), m.k()), (2.0, 1));
        // Fourth: m(2) = 3, Δ = 2.4 within (5 + 6) % of 22.68: k = 0. It
        // is over 10 % of the rate, so a move: judged by its own MI.
        match m.on_decision(&trial(&m, 22.68, 0.8, 1), 1.0) {
            Move::Continue(r) => assert!((r / 1e6 - 25.08).abs() < 1e-9, "{r}"),
            Move::Probe(r) => panic!("probed at {r}"),
        }
        assert_eq!((m.amplifier(), m.k()), (3.0, 0));
    }

    /// `decide`: a reversal resets the amplifier and k, opens the swing
    /// buffer (the next same-direction decision does not raise a), and
    /// ends the trend (two pairs again). Every decrease is probed at once.
    #[test]
    fn a_reversal_resets_the_amplifier_and_the_next_decision_does_not_count() {
        let mut m = mover();
        m.on_decision(&trial(&m, 50.0, 0.8, 2), 1.0);
        m.on_decision(&trial(&m, 50.8, 0.8, 2), 1.0);
        m.on_decision(&trial(&m, 51.6, 0.8, 1), 1.0);
        assert_eq!(m.amplifier(), 2.0);
        // Down: the reversal resets a first, so Δ = −0.8·m(0) = −0.8.
        let r = probed_at(m.on_decision(&trial(&m, 52.4, -0.8, 1), -1.0));
        assert!((r - 51.6).abs() < 1e-9, "{r}");
        assert_eq!((m.amplifier(), m.k(), m.pairs(2)), (0.0, 0, 2));
        // Same direction again: the swing buffer takes it, a stays 0.
        m.on_decision(&trial(&m, 51.6, -0.8, 2), -1.0);
        assert_eq!((m.amplifier(), m.pairs(2)), (0.0, 1));
        // The next one counts.
        m.on_decision(&trial(&m, 50.8, -0.8, 1), -1.0);
        assert_eq!(m.amplifier(), 1.0);
        // A large decrease is clipped to the boundary (k = 0: 5 %) and
        // still probed, not moved to.
        let r = probed_at(m.on_decision(&trial(&m, 50.0, -100.0, 1), -1.0));
        assert!((r - 47.5).abs() < 1e-9, "{r}");
        assert_eq!(m.k(), 1);
    }

    /// RECORDING, probe that cannot decide: `prev_change_ = 0`,
    /// `trend_count_ = 2`; the next decision neither reverses nor extends
    /// a trend, and its change is not amplified further.
    #[test]
    fn an_undecided_probe_forgets_the_last_change_and_probes_with_one_pair() {
        let mut m = mover();
        m.on_decision(&trial(&m, 50.0, 0.8, 2), 1.0);
        m.on_decision(&trial(&m, 50.8, 0.8, 2), 1.0);
        assert_eq!(m.amplifier(), 1.0);
        m.on_inconclusive();
        assert_eq!(m.pairs(2), 1);
        // Down after forgetting: no reversal, so a and k stay.
        let r = probed_at(m.on_decision(&trial(&m, 51.6, -0.8, 1), -1.0));
        assert!((r - (51.6 - 1.6)).abs() < 1e-9, "{r}");
        assert_eq!(m.amplifier(), 1.0);
    }

    /// MOVING: the move's MI is judged against the MI sent at the base
    /// after the probe; while utility and rate move the same way, a large
    /// change moves on, a small one is probed at once; a change against
    /// the move steps back by it and probes.
    #[test]
    fn a_move_is_judged_against_the_reference_and_stops_on_a_reversal() {
        let mut m = mover();
        // Mid-trend: a = 3 (m = 4), k = 3 (boundary 23 %).
        (m.amp, m.prev, m.k) = (3.0, 1.0, 3);
        // γ = 1 at 20: Δ = 4, 20 % of the rate: a move to 24; a = 4, k = 2.
        let to = match m.on_decision(&trial(&m, 20.0, 1.0, 1), 1.0) {
            Move::Continue(r) => r,
            Move::Probe(r) => panic!("probed at {r}"),
        };
        assert!((to / 1e6 - 24.0).abs() < 1e-9);
        assert_eq!((m.amplifier(), m.k()), (4.0, 2));
        m.on_reference(20e6, 20.0);
        // The move's MI gained 0.5 per Mbit/s over the reference: Δ =
        // 0.5·m(4) = 3, 12.5 % of 24: moves on to 27.
        match m.on_move(24e6, 22.0) {
            Move::Continue(r) => assert!((r / 1e6 - 27.0).abs() < 1e-9, "{r}"),
            Move::Probe(r) => panic!("probed at {r}"),
        }
        // Past 3 the amplifier grows by halves; Δ within 17 %: k = 1.
        assert_eq!((m.amplifier(), m.k()), (4.5, 1));
        // Utility fell as the rate rose (γ = −1/3 against 24): a reversal,
        // Δ = −1/3 raised to the 0.5 floor; back to 26.5 and probe there.
        let r = probed_at(m.on_move(27e6, 21.0));
        assert!((r - 26.5).abs() < 1e-9, "{r}");
        assert_eq!((m.amplifier(), m.k(), m.pairs(2)), (0.0, 0, 2));
    }

    /// `getkDelta`: ε is 0.05, or 0.5 Mbit/s over the rate below 10.
    #[test]
    fn probes_stay_half_a_megabit_apart_at_low_rates() {
        let m = mover();
        assert_eq!(m.eps(20e6), 0.05);
        assert!((m.eps(5e6) - 0.1).abs() < 1e-12);
    }
}
