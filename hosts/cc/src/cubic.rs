//! CUBIC (RFC 9438). Window kept in segments (f64) as the RFC writes it.
//!
//! After a congestion event the window follows
//! `W_cubic(t) = C·(t − K)³ + W_max`, with `K = ∛((W_max − cwnd_epoch)/C)`,
//! never falling below the Reno-friendly estimate `W_est`.

use std::collections::BTreeMap;

use crate::params::{ParamInfo, Params};
use crate::window::{Recovery, RttEstimator};
use crate::{AckSample, CcError, CongestionControl, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "c", default: "0.4", doc: "cubic scaling constant C, segments/s^3 (RFC 9438: 0.4)" },
    ParamInfo { name: "beta", default: "0.7", doc: "multiplicative decrease factor beta_cubic (RFC 9438 §4.6: 0.7)" },
    ParamInfo { name: "fast_convergence", default: "true", doc: "release bandwidth faster when W_max shrinks (RFC 9438 §4.7)" },
    ParamInfo { name: "reno_friendly", default: "true", doc: "never grow slower than the Reno estimate W_est (RFC 9438 §4.3)" },
];

/// `W_cubic(t)` in segments, `t` in seconds (RFC 9438 eq. 1).
pub fn w_cubic(c: f64, t_s: f64, k_s: f64, w_max: f64) -> f64 {
    c * (t_s - k_s).powi(3) + w_max
}

/// `K` in seconds: time for `W_cubic` to climb from `cwnd_epoch` back to
/// `W_max` (RFC 9438 eq. 2). Zero if the window is already at or above it.
pub fn k_seconds(c: f64, w_max: f64, cwnd_epoch: f64) -> f64 {
    if w_max <= cwnd_epoch {
        0.0
    } else {
        ((w_max - cwnd_epoch) / c).cbrt()
    }
}

#[derive(Debug, Clone)]
pub struct Cubic {
    c: f64,
    beta: f64,
    fast_convergence: bool,
    reno_friendly: bool,
    mss: f64,
    cwnd: f64,
    ssthresh: f64,
    w_max: f64,
    k: f64,
    /// cwnd just before the last reduction (RFC 9438 `cwnd_prior`).
    cwnd_prior: f64,
    /// Start of the current congestion-avoidance epoch, ns.
    epoch_start: Option<u64>,
    w_est: f64,
    rtt: RttEstimator,
    rec: Recovery,
}

impl Cubic {
    pub fn new(path: &PathInfo, c: f64, beta: f64, fast_convergence: bool, reno_friendly: bool) -> Self {
        Cubic {
            c,
            beta,
            fast_convergence,
            reno_friendly,
            mss: f64::from(path.mss.max(1)),
            cwnd: f64::from(path.init_cwnd_pkts.max(1)),
            ssthresh: f64::INFINITY,
            w_max: 0.0,
            k: 0.0,
            cwnd_prior: 0.0,
            epoch_start: None,
            w_est: 0.0,
            rtt: RttEstimator::default(),
            rec: Recovery::default(),
        }
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        let c = p.f64_in("c", 1e-6, 1e6)?;
        let beta = p.f64_in("beta", 0.01, 0.99)?;
        Ok(Cubic::new(path, c, beta, p.bool("fast_convergence")?, p.bool("reno_friendly")?))
    }

    /// Window in segments.
    pub fn cwnd_segments(&self) -> f64 {
        self.cwnd
    }
    pub fn w_max(&self) -> f64 {
        self.w_max
    }
    pub fn k(&self) -> f64 {
        self.k
    }

    /// RFC 9438 §4.3: additive factor that makes W_est track Reno's average.
    fn alpha_cubic(&self) -> f64 {
        if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            3.0 * (1.0 - self.beta) / (1.0 + self.beta)
        }
    }

    fn congestion_event(&mut self) {
        self.epoch_start = None;
        // §4.7 fast convergence: a flow whose W_max keeps shrinking releases
        // bandwidth by remembering a lower plateau.
        self.w_max = if self.fast_convergence && self.cwnd < self.w_max {
            self.cwnd * (1.0 + self.beta) / 2.0
        } else {
            self.cwnd
        };
        self.cwnd_prior = self.cwnd;
        self.ssthresh = (self.cwnd * self.beta).max(2.0);
    }

    fn avoid(&mut self, now_ns: u64, segs: f64) {
        let start = match self.epoch_start {
            Some(t) => t,
            None => {
                // §4.2: a new epoch starts with the first ACK in congestion
                // avoidance; its origin is W_max (or the current window if
                // it is already above, e.g. after slow start without loss).
                self.epoch_start = Some(now_ns);
                if self.w_max < self.cwnd {
                    self.w_max = self.cwnd;
                }
                self.k = k_seconds(self.c, self.w_max, self.cwnd);
                self.w_est = self.cwnd;
                now_ns
            }
        };
        let t = now_ns.saturating_sub(start) as f64 / 1e9;
        let rtt = self.rtt.srtt_ns().unwrap_or(0.0) / 1e9;
        self.w_est += self.alpha_cubic() * segs / self.cwnd;
        let w_t = w_cubic(self.c, t, self.k, self.w_max);
        if self.reno_friendly && w_t < self.w_est {
            // Reno-friendly region.
            self.cwnd = self.w_est;
        } else {
            // Concave/convex region: aim at W_cubic one RTT ahead, growing at
            // most 50% per RTT and never shrinking on an ACK.
            let target = w_cubic(self.c, t + rtt, self.k, self.w_max).clamp(self.cwnd, 1.5 * self.cwnd);
            self.cwnd += (target - self.cwnd) / self.cwnd * segs;
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }
    fn on_send(&mut self, _now_ns: u64, bytes: u64) {
        self.rec.on_send(bytes);
    }
    fn on_ack(&mut self, s: &AckSample) {
        if let Some(r) = s.rtt_ns {
            self.rtt.update(r);
        }
        let frozen = self.rec.growth_frozen();
        self.rec.on_ack(s.acked_bytes, s.inflight_bytes);
        if frozen || s.acked_bytes == 0 {
            return;
        }
        let segs = s.acked_bytes as f64 / self.mss;
        if self.cwnd < self.ssthresh {
            self.cwnd = (self.cwnd + segs).min(self.ssthresh.max(self.cwnd));
        } else {
            self.avoid(s.now_ns, segs);
        }
    }
    fn on_loss(&mut self, _now_ns: u64, lost_bytes: u64) {
        if self.rec.on_loss(lost_bytes) {
            self.congestion_event();
            self.cwnd = self.ssthresh;
        }
    }
    fn on_rto(&mut self, _now_ns: u64) {
        // §4.8: a timeout is a congestion event unless one is already being
        // handled; either way the window restarts from one segment.
        if self.rec.on_rto() {
            self.congestion_event();
        }
        self.epoch_start = None;
        self.cwnd = 1.0;
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        Some((self.cwnd * self.mss).round() as u64)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        m.insert("cwnd_segs", self.cwnd);
        m.insert("ssthresh_segs", self.ssthresh);
        m.insert("w_max_segs", self.w_max);
        m.insert("k_s", self.k);
        m.insert("w_est_segs", self.w_est);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn cubic(init: u32) -> Cubic {
        let path = PathInfo { mss: MSS as u32, line_rate_bps: None, init_cwnd_pkts: init };
        Cubic::new(&path, 0.4, 0.7, true, true)
    }

    fn ack(now_ns: u64, segs: u64, rtt_ns: u64) -> AckSample {
        AckSample { now_ns, acked_bytes: segs * MSS, rtt_ns: Some(rtt_ns), ..Default::default() }
    }

    #[test]
    fn rfc_formula_values() {
        // W_max = 100, beta = 0.7: K = cbrt(100*0.3/0.4) = cbrt(75).
        let k = k_seconds(0.4, 100.0, 70.0);
        assert!((k - 75f64.cbrt()).abs() < 1e-12);
        assert!((w_cubic(0.4, 0.0, k, 100.0) - 70.0).abs() < 1e-9, "W(0) = cwnd_epoch");
        assert!((w_cubic(0.4, k, k, 100.0) - 100.0).abs() < 1e-12, "W(K) = W_max");
        assert!((w_cubic(0.4, 2.0, k, 100.0) - (100.0 + 0.4 * (2.0 - k).powi(3))).abs() < 1e-12);
        assert!((w_cubic(0.4, 6.0, k, 100.0) - (100.0 + 0.4 * (6.0 - k).powi(3))).abs() < 1e-12);
    }

    /// Drive a 100-segment window into a loss and out of recovery.
    fn after_loss_at_100() -> Cubic {
        let mut c = cubic(100);
        c.on_send(0, 100 * MSS);
        c.on_loss(0, MSS);
        assert_eq!(c.cwnd_segments(), 70.0);
        assert_eq!(c.w_max(), 100.0);
        c.on_ack(&ack(0, 99, 10_000_000)); // resolves the pre-cut data, no growth
        assert_eq!(c.cwnd_segments(), 70.0);
        c
    }

    #[test]
    fn follows_w_cubic_one_rtt_ahead() {
        let mut c = after_loss_at_100();
        let rtt = 0.01;
        // First CA ACK at t=0 opens the epoch. W_cubic(0) = cwnd_epoch = 70
        // is below W_est = 70 + alpha_cubic/70, so the Reno-friendly region
        // applies to this very first ACK.
        c.on_ack(&ack(1_000_000_000, 1, 10_000_000));
        let k = 75f64.cbrt();
        assert!((c.k() - k).abs() < 1e-12);
        let alpha = 3.0 * 0.3 / 1.7;
        assert!((c.cwnd_segments() - (70.0 + alpha / 70.0)).abs() < 1e-9);
        // At t = 2 s one ACK of one segment moves cwnd by (W(t+rtt)-cwnd)/cwnd.
        let before = c.cwnd_segments();
        c.on_ack(&ack(3_000_000_000, 1, 10_000_000));
        let target = w_cubic(0.4, 2.0 + rtt, k, 100.0).clamp(before, 1.5 * before);
        let expect = before + (target - before) / before;
        assert!((c.cwnd_segments() - expect).abs() < 1e-9);
        // Well past K the convex region caps growth at 1.5x per RTT target.
        let before = c.cwnd_segments();
        c.on_ack(&ack(11_000_000_000, 1, 10_000_000));
        let expect = before + (1.5 * before - before) / before;
        assert!((c.cwnd_segments() - expect).abs() < 1e-9);
    }

    #[test]
    fn reno_friendly_region_uses_w_est() {
        let mut c = after_loss_at_100();
        // Many ACKs within a few ms: W_cubic barely moves, W_est grows by
        // alpha_cubic = 3*0.3/1.7 per window, so cwnd = W_est.
        let alpha = 3.0 * 0.3 / 1.7;
        let mut w_est: f64 = 70.0;
        let mut cwnd: f64 = 70.0;
        for i in 0..700u64 {
            c.on_ack(&ack(1_000_000_000 + i * 1_000, 1, 10_000));
            w_est += alpha / cwnd;
            let t = (i * 1_000) as f64 / 1e9;
            assert!(w_cubic(0.4, t, 75f64.cbrt(), 100.0) < w_est, "stays Reno-friendly");
            cwnd = w_est;
        }
        assert!((c.cwnd_segments() - cwnd).abs() < 1e-9);
        assert!((c.state()["w_est_segs"] - w_est).abs() < 1e-9);
        assert!(c.cwnd_segments() > 70.0 + 9.0 * alpha * 0.9, "grew ~alpha per window");
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = after_loss_at_100();
        // A second loss at cwnd 70 < W_max 100: W_max = 70*(1+0.7)/2 = 59.5.
        c.on_send(0, 70 * MSS);
        c.on_loss(0, MSS);
        assert!((c.w_max() - 59.5).abs() < 1e-12);
        assert!((c.cwnd_segments() - 49.0).abs() < 1e-12);
    }

    #[test]
    fn rto_restarts_from_one_segment() {
        let mut c = cubic(100);
        c.on_send(0, 100 * MSS);
        c.on_rto(0);
        assert_eq!(c.cwnd_segments(), 1.0);
        assert_eq!(c.cwnd_bytes(), Some(MSS));
        assert_eq!(c.state()["ssthresh_segs"], 70.0);
        c.on_ack(&ack(1, 1, 1000));
        assert_eq!(c.cwnd_segments(), 2.0, "slow start resumes");
    }
}
