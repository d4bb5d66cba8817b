//! PCC utility functions, apart from the rate controllers that climb them
//! (PCC-Uspace keeps them apart too: `PccUtilityManager` scores an MI,
//! `PccSender`/`PccVivaceSender` move the rate).
//!
//! Rates and throughputs are in Mbit/s (10⁶ bit/s), as in
//! `PccUtilityManager::ComputeSimpleMetrics` (bytes·8 / µs), for both
//! utilities (PCC-Uspace's Allegro utility is in bytes/µs × 1000, 125
//! times that; see docs/algorithms.md for why we do not follow it).

use super::monitor::MiStats;

/// Scores one monitor interval. `starting` tells whether the MI was sent
/// during start-up (Vivace treats small RTT gradients as noise there;
/// Allegro tolerates a larger RTT change).
pub trait Utility: Send + std::fmt::Debug {
    fn score(&self, s: &MiStats, starting: bool) -> Score;
    fn utility(&self, s: &MiStats, starting: bool) -> f64 {
        self.score(s, starting).utility
    }
}

/// An MI's utility, and whether its latency term moved it: how often a
/// PCC sender's decisions rest on the RTT is what sets the Vivaces apart
/// on a noisy path (docs/experiments.md, pcc-lossy's reference arms).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    pub utility: f64,
    pub latency_moved: bool,
}

/// PCC Allegro as PCC-Uspace computes it (`PccUtilityManager::
/// CalculateUtilityAllegro`): the NSDI'15 §2.2 utility
/// `u = T·Sigmoid_α(L − threshold) − x·L` with its throughput credit also
/// scaled by a latency factor `Sigmoid_β(1 − RTT_start/RTT_end)`, where
/// `Sigmoid_a(y) = 1/(1 + e^{a·y})`; T throughput, x sending rate, L loss
/// rate, RTT_start/RTT_end the smoothed RTT when the MI's first packet was
/// acked and when it was scored. A ratio within `1 ± tolerance` counts as
/// 1 (factor 1/2): only an RTT that moved by more than the tolerance over
/// one MI changes the score, and then steeply. `rtt_coef = 0` drops the
/// factor (the paper's utility).
#[derive(Debug, Clone, PartialEq)]
pub struct AllegroUtility {
    pub alpha: f64,
    pub loss_threshold: f64,
    /// β, steepness of the latency sigmoid; 0 = no latency factor.
    pub rtt_coef: f64,
    /// RTT ratio tolerance of MIs sent after start-up ...
    pub rtt_tolerance: f64,
    /// ... and of start-up MIs.
    pub rtt_tolerance_startup: f64,
}

pub fn sigmoid(alpha: f64, y: f64) -> f64 {
    1.0 / (1.0 + (alpha * y).exp())
}

impl AllegroUtility {
    /// The latency factor for smoothed RTTs `start` → `end` under
    /// `tolerance`; 1 without the factor, 1/2 within the tolerance.
    pub fn latency_factor(&self, start: f64, end: f64, tolerance: f64) -> f64 {
        if self.rtt_coef == 0.0 {
            return 1.0;
        }
        let ratio = if start > 0.0 && end > 0.0 { start / end } else { 1.0 };
        // PCC-Uspace: strictly inside the band counts as no change.
        let ratio = if ratio > 1.0 - tolerance && ratio < 1.0 + tolerance { 1.0 } else { ratio };
        sigmoid(self.rtt_coef, 1.0 - ratio)
    }

    fn factor_of(&self, s: &MiStats, starting: bool) -> f64 {
        let tolerance = if starting { self.rtt_tolerance_startup } else { self.rtt_tolerance };
        self.latency_factor(s.srtt_start_ns, s.srtt_end_ns, tolerance)
    }

    pub fn of(&self, throughput_mbps: f64, loss: f64, rate_mbps: f64, latency_factor: f64) -> f64 {
        throughput_mbps * sigmoid(self.alpha, loss - self.loss_threshold) * latency_factor - rate_mbps * loss
    }
}

impl Utility for AllegroUtility {
    /// With the factor, an RTT within the tolerance gives the neutral 1/2.
    fn score(&self, s: &MiStats, starting: bool) -> Score {
        let lat = self.factor_of(s, starting);
        Score {
            utility: self.of(s.throughput_bps() / 1e6, s.loss_rate(), s.send_rate_bps() / 1e6, lat),
            latency_moved: self.rtt_coef != 0.0 && lat != 0.5,
        }
    }
}

/// PCC Vivace-Latency (NSDI'18 §3): `u = x^t − b·x·dRTT/dT − c·x·L`.
/// As in `PccUtilityManager::CalculateUtilityProportional`, the gradient
/// counts only where it stands out of the fit's noise
/// (`DetermineToleranceGeneral`: |gradient| above the relative RMS
/// residual), never when negative (a draining queue is not rewarded), and
/// in start-up not when below 1 ms of RTT change per MI-second
/// (`|g| < 1000/duration_µs`). Two rules are those of the code the
/// paper's authors evaluated Vivace with (PCC-Uspace NSDI-2018 branch,
/// `pcc-gradient/sender/app/pcc.h`, `PCC::utility`), see
/// docs/algorithms.md (pcc-vivace) for what each is worth:
/// * the gradient is counted in whole steps of `gradient_step` (0.02),
///   rounded towards zero, so an MI whose RTT grew by less than 2 % of its
///   duration is not charged;
/// * an MI that lost at most `low_loss_max` (3 %) of its packets is
///   charged `low_loss_coef·x·L` (c = 1), beyond that `c·x·L`.
#[derive(Debug, Clone, PartialEq)]
pub struct VivaceUtility {
    pub exponent: f64,
    pub latency_coef: f64,
    pub loss_coef: f64,
    /// Loss coefficient of MIs that lost at most `low_loss_max`.
    pub low_loss_coef: f64,
    /// Loss rate up to which `low_loss_coef` applies; 0 = never (paper).
    pub low_loss_max: f64,
    /// Granularity of the charged RTT gradient; 0 = as measured.
    pub gradient_step: f64,
    /// PCC-Uspace master's filter of the gradient (within the fit's
    /// residual, negative, or small in start-up: 0). Without it the slope
    /// counts as fitted, a negative one as a reward, as in the NSDI-2018
    /// branch (`PCC::utility` charges `rtt_penalty` with its sign).
    pub filter_gradient: bool,
}

impl VivaceUtility {
    pub fn of(&self, rate_mbps: f64, rtt_gradient: f64, loss: f64) -> f64 {
        let x = rate_mbps.max(0.0);
        // NSDI-2018 branch: random loss of a few per cent is all noise to
        // an MI of a few hundred packets (one loss more or less moves
        // c·x·L by c·x/n), and at c = 11.35 that noise is several times
        // the utility gap between two trials 2ε apart, so trials on a
        // lossy link decide at random. The authors' code charges such MIs
        // c = 1 and keeps c for loss beyond 3 %, which only congestion (or
        // a very lossy link) causes.
        let c = if loss > 0.0 && loss <= self.low_loss_max { self.low_loss_coef } else { self.loss_coef };
        x.powf(self.exponent) - self.latency_coef * x * rtt_gradient - c * x * loss
    }

    /// `g` counted in whole steps (towards zero); unchanged without a step.
    pub fn quantised(&self, g: f64) -> f64 {
        if self.gradient_step > 0.0 {
            (g / self.gradient_step).trunc() * self.gradient_step
        } else {
            g
        }
    }

    /// The gradient the utility charges for.
    pub fn effective_gradient(&self, s: &MiStats, starting: bool) -> f64 {
        let g = s.rtt_gradient;
        if !self.filter_gradient {
            return self.quantised(g);
        }
        if s.rtt_gradient_error >= g.abs() || g < 0.0 {
            return 0.0;
        }
        if starting && g.abs() < 1000.0 / (s.duration_ns / 1e3) {
            return 0.0;
        }
        // NSDI-2018 branch (`rtt_penalty`: the fitted slope truncated to
        // hundredths, then to even hundredths): a rate a little above
        // capacity raises the RTT by (x − C)/C per unit time, so a step of
        // 0.02 lets an MI run up to 2 % over capacity uncharged. Without
        // it every overshoot of a fraction of a per cent costs
        // b·x·g ≈ 1000 against x^t ≈ 60, the trial around a base rate r
        // goes down whenever r(1+ε) > C, and r stays below about C/(1+ε)
        // with the queue nearly always empty (measured in pcc_sim: 93.8 %
        // of the link, mean queue 1.2 packets). With the step r may reach
        // about 1.02·C/(1+ε), and the few packets of standing queue that
        // builds keep the link busy through the lower trials (97 %).
        self.quantised(g)
    }
}

impl Utility for VivaceUtility {
    fn score(&self, s: &MiStats, starting: bool) -> Score {
        let g = self.effective_gradient(s, starting);
        Score { utility: self.of(s.send_rate_bps() / 1e6, g, s.loss_rate()), latency_moved: self.latency_coef != 0.0 && g != 0.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mi(sent: u64, acked: u64, lost: u64, dur_ms: f64) -> MiStats {
        MiStats { sent_pkts: sent / 1000, sent_bytes: sent, acked_bytes: acked, lost_bytes: lost, duration_ns: dur_ms * 1e6, ..Default::default() }
    }

    fn allegro(rtt_coef: f64) -> AllegroUtility {
        AllegroUtility { alpha: 100.0, loss_threshold: 0.05, rtt_coef, rtt_tolerance: 0.05, rtt_tolerance_startup: 0.3 }
    }

    #[test]
    fn allegro_without_the_latency_factor_is_the_papers() {
        let a = allegro(0.0);
        // No loss: u = T / (1 + e^-5).
        assert!((a.of(100.0, 0.0, 100.0, 1.0) - 100.0 / (1.0 + (-5.0f64).exp())).abs() < 1e-12);
        // At 5 % loss the sigmoid is 1/2: 95/2 − 100·0.05.
        assert!((a.of(95.0, 0.05, 100.0, 1.0) - (47.5 - 5.0)).abs() < 1e-12);
        // Far past 5 % the throughput credit vanishes.
        assert!(a.of(80.0, 0.2, 100.0, 1.0) < -19.9);
        // Worked MI: 1.25 MB sent in 100 ms (100 Mbit/s), 2 % lost; any RTTs.
        let mut s = mi(1_250_000, 1_225_000, 25_000, 100.0);
        (s.srtt_start_ns, s.srtt_end_ns) = (30e6, 60e6);
        let want = 98.0 / (1.0 + (-3.0f64).exp()) - 100.0 * 0.02;
        assert!((a.utility(&s, false) - want).abs() < 1e-9);
        // All packets lost: the rate is pure penalty.
        assert!((a.utility(&mi(1_250_000, 0, 1_250_000, 100.0), false) + 100.0).abs() < 1e-9);
    }

    #[test]
    fn allegro_latency_factor_is_pcc_uspaces() {
        let a = allegro(200.0);
        // Inside the 5 % band (30 → 31 ms, ratio 0.968): factor 1/2.
        assert_eq!(a.latency_factor(30e6, 31e6, 0.05), 0.5);
        // 30 → 33 ms (ratio 1/1.1): 1/(1 + e^{200·(1 − 30/33)}) ≈ 1.3e-8.
        let f = a.latency_factor(30e6, 33e6, 0.05);
        assert!((f - 1.0 / (1.0 + (200.0f64 * (3.0 / 33.0)).exp())).abs() < 1e-15 && f < 2e-8, "{f}");
        // A falling RTT (33 → 30 ms, ratio 1.1) earns nearly full credit.
        assert!(a.latency_factor(33e6, 30e6, 0.05) > 0.999_999);
        // No RTT yet: no change.
        assert_eq!(a.latency_factor(0.0, 30e6, 0.05), 0.5);
        // Worked MI: 100 Mbit/s, 2 % lost, srtt 30 → 33 ms. Scored after
        // start-up the throughput credit is gone: u ≈ −x·L = −2.
        let mut s = mi(1_250_000, 1_225_000, 25_000, 100.0);
        (s.srtt_start_ns, s.srtt_end_ns) = (30e6, 33e6);
        let sig = 1.0 / (1.0 + (-3.0f64).exp());
        assert!((a.utility(&s, false) - (98.0 * sig * f - 2.0)).abs() < 1e-9);
        // In start-up the 30 % band covers it: half the credit.
        assert!((a.utility(&s, true) - (98.0 * sig * 0.5 - 2.0)).abs() < 1e-9);
    }

    #[test]
    fn vivace_matches_the_paper_and_filters_the_gradient_like_the_reference() {
        // The paper's utility with PCC-Uspace master's filters: no loss
        // split, no gradient step.
        let v = VivaceUtility { exponent: 0.9, latency_coef: 900.0, loss_coef: 11.35, low_loss_coef: 1.0, low_loss_max: 0.0, gradient_step: 0.0, filter_gradient: true };
        assert!((v.of(100.0, 0.0, 0.0) - 100f64.powf(0.9)).abs() < 1e-12);
        assert!((v.of(100.0, 0.001, 0.02) - (100f64.powf(0.9) - 90.0 - 22.7)).abs() < 1e-9);
        let mut s = mi(1_250_000, 1_250_000, 0, 100.0);
        s.rtt_gradient = 0.02;
        s.rtt_gradient_error = 0.001;
        let want = 100f64.powf(0.9) - 900.0 * 100.0 * 0.02;
        assert!((v.utility(&s, false) - want).abs() < 1e-9);
        // In start-up 0.02 is above 1000 / 100000 us = 0.01: still charged.
        assert!((v.utility(&s, true) - want).abs() < 1e-9);
        // 0.005 is below it: ignored in start-up, charged afterwards.
        s.rtt_gradient = 0.005;
        assert_eq!(v.utility(&s, true), 100f64.powf(0.9));
        assert!(v.utility(&s, false) < 100f64.powf(0.9));
        // Noise larger than the slope: ignored.
        s.rtt_gradient_error = 0.01;
        assert_eq!(v.utility(&s, false), 100f64.powf(0.9));
        // A shrinking RTT is not rewarded.
        s.rtt_gradient = -0.05;
        s.rtt_gradient_error = 0.0;
        assert_eq!(v.utility(&s, false), 100f64.powf(0.9));
    }

    /// The NSDI-2018 branch's loss split (`PCC::utility`: c = 1 up to 3 %
    /// loss per MI, 11.35 beyond), hand-computed at x = 100 Mbit/s
    /// (x^0.9 = 63.0957...).
    #[test]
    fn vivace_charges_low_loss_at_c_1_like_the_authors_code() {
        let v = VivaceUtility { exponent: 0.9, latency_coef: 900.0, loss_coef: 11.35, low_loss_coef: 1.0, low_loss_max: 0.03, gradient_step: 0.02, filter_gradient: true };
        let top = 100f64.powf(0.9);
        // 2 %: 1·100·0.02 = 2.
        assert!((v.of(100.0, 0.0, 0.02) - (top - 2.0)).abs() < 1e-9);
        // 3 % is still low: 3.
        assert!((v.of(100.0, 0.0, 0.03) - (top - 3.0)).abs() < 1e-9);
        // 4 %: 11.35·100·0.04 = 45.4.
        assert!((v.of(100.0, 0.0, 0.04) - (top - 45.4)).abs() < 1e-9);
        // Worked MI: 1.25 MB in 100 ms (100 Mbit/s), 2 % lost, flat RTT.
        let s = mi(1_250_000, 1_225_000, 25_000, 100.0);
        assert!((v.utility(&s, false) - (top - 2.0)).abs() < 1e-9);
    }

    /// The NSDI-2018 branch's gradient step (`rtt_penalty`: the slope
    /// truncated to even hundredths), hand-computed at x = 100 Mbit/s.
    #[test]
    fn vivace_counts_the_rtt_gradient_in_steps_of_0_02_like_the_authors_code() {
        let v = VivaceUtility { exponent: 0.9, latency_coef: 900.0, loss_coef: 11.35, low_loss_coef: 1.0, low_loss_max: 0.03, gradient_step: 0.02, filter_gradient: true };
        let top = 100f64.powf(0.9);
        let mut s = mi(1_250_000, 1_250_000, 0, 100.0);
        s.rtt_gradient_error = 0.0;
        // 1.46 %: 5 packets of queue built in a 30 ms MI; not charged.
        s.rtt_gradient = 0.0146;
        assert_eq!(v.utility(&s, false), top);
        // 2.5 % counts as 2 %: 900·100·0.02 = 1800.
        s.rtt_gradient = 0.025;
        assert!((v.utility(&s, false) - (top - 1800.0)).abs() < 1e-9);
        // 4.5 % as 4 %: 3600.
        s.rtt_gradient = 0.045;
        assert!((v.utility(&s, false) - (top - 3600.0)).abs() < 1e-9);
        // The noise filter still comes first: a slope inside the fit's
        // residual is not charged whatever its size.
        s.rtt_gradient_error = 0.05;
        assert_eq!(v.utility(&s, false), top);
    }

    /// The NSDI-2018 branch charges the fitted slope with its sign and no
    /// noise filter (`PCC::utility`: `rtt_penalty` from `latency_info`, the
    /// least-squares slope `CUDT` passes to `onMonitorEnds`; the clamp at
    /// −0.2 is commented out), at its 11330 per unit: a shrinking RTT earns
    /// utility, a slope inside the fit's residual counts. Hand-computed at
    /// x = 100 Mbit/s.
    #[test]
    fn vivace_without_the_filter_charges_the_slope_with_its_sign_like_the_nsdi_branch() {
        let v = VivaceUtility { exponent: 0.9, latency_coef: 11330.0, loss_coef: 11.35, low_loss_coef: 1.0, low_loss_max: 0.03, gradient_step: 0.02, filter_gradient: false };
        let top = 100f64.powf(0.9);
        let mut s = mi(1_250_000, 1_250_000, 0, 100.0);
        // −4.5 % counts as −4 % (towards zero): 11330·100·0.04 = 45 320 earned.
        s.rtt_gradient = -0.045;
        s.rtt_gradient_error = 0.05;
        assert!((v.utility(&s, false) - (top + 45_320.0)).abs() < 1e-6);
        // Inside the residual, and in start-up, 2.5 % still counts as 2 %.
        s.rtt_gradient = 0.025;
        assert!((v.utility(&s, true) - (top - 22_660.0)).abs() < 1e-6);
        // Below the step: nothing either way.
        s.rtt_gradient = -0.0199;
        assert_eq!(v.utility(&s, false), top);
    }
}
