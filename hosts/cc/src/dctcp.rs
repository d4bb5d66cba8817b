//! DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257).
//!
//! The sender estimates the fraction of CE-marked bytes per window of data,
//! `alpha ← (1 − g)·alpha + g·F`, and on congestion cuts the window in
//! proportion to it, `cwnd ← cwnd·(1 − alpha/2)`, at most once per window.
//! Growth and loss handling are Reno's.

use std::collections::BTreeMap;

use crate::params::{ParamInfo, Params};
use crate::window::RenoWindow;
use crate::{AckSample, CcError, CongestionControl, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "g", default: "0.0625", doc: "EWMA gain g for alpha (RFC 8257 and the DCTCP paper: 1/16)" },
    ParamInfo { name: "init_alpha", default: "1", doc: "initial alpha (RFC 8257: 1, so the first marked window halves like Reno)" },
];

#[derive(Debug, Clone)]
pub struct Dctcp {
    w: RenoWindow,
    g: f64,
    alpha: f64,
    /// Bytes that make up the current observation window (cwnd at its start).
    window_bytes: u64,
    acked_in_window: u64,
    ce_in_window: u64,
    /// At most one ECN reduction per observation window.
    cut_in_window: bool,
    windows: u64,
}

impl Dctcp {
    pub fn new(path: &PathInfo, g: f64, init_alpha: f64) -> Self {
        let w = RenoWindow::new(path);
        let window_bytes = w.cwnd;
        Dctcp { w, g, alpha: init_alpha, window_bytes, acked_in_window: 0, ce_in_window: 0, cut_in_window: false, windows: 0 }
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        Ok(Dctcp::new(path, p.f64_in("g", 1e-6, 1.0)?, p.f64_in("init_alpha", 0.0, 1.0)?))
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    /// Completed observation windows.
    pub fn windows(&self) -> u64 {
        self.windows
    }

    fn end_window(&mut self) {
        // RFC 8257 §3.3: F = marked / acked over the window just ended.
        let f = if self.acked_in_window == 0 {
            0.0
        } else {
            self.ce_in_window as f64 / self.acked_in_window as f64
        };
        self.alpha = (1.0 - self.g) * self.alpha + self.g * f.min(1.0);
        self.windows += 1;
        self.acked_in_window = 0;
        self.ce_in_window = 0;
        self.cut_in_window = false;
        self.window_bytes = self.w.cwnd.max(1);
    }
}

impl CongestionControl for Dctcp {
    fn name(&self) -> &'static str {
        "dctcp"
    }
    fn on_send(&mut self, _now_ns: u64, bytes: u64) {
        self.w.rec.on_send(bytes);
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.acked_in_window = self.acked_in_window.saturating_add(s.acked_bytes);
        self.ce_in_window = self.ce_in_window.saturating_add(s.ce_bytes.min(s.acked_bytes));
        // React at the first CE of a window with the alpha learnt so far
        // (RFC 8257 §3.3), unless a loss episode already cut this window.
        if s.ce_bytes > 0 && !self.cut_in_window && !self.w.rec.active() {
            let cwnd = self.w.cwnd as f64 * (1.0 - self.alpha / 2.0);
            self.w.cut_to(cwnd as u64);
            self.cut_in_window = true;
        }
        // Like TCP's CWR state: no additive increase in the rest of the
        // window that was just reduced.
        if self.cut_in_window {
            self.w.rec.on_ack(s.acked_bytes, s.inflight_bytes);
        } else {
            self.w.on_ack(s.acked_bytes, s.inflight_bytes);
        }
        if self.acked_in_window >= self.window_bytes {
            self.end_window();
        }
    }
    fn on_loss(&mut self, _now_ns: u64, lost_bytes: u64) {
        self.w.on_loss(lost_bytes);
    }
    fn on_rto(&mut self, _now_ns: u64) {
        self.w.on_rto();
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.w.cwnd)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        m.insert("alpha", self.alpha);
        m.insert("cwnd_bytes", self.w.cwnd as f64);
        m.insert("windows", self.windows as f64);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn dctcp() -> Dctcp {
        let path = PathInfo { mss: MSS as u32, line_rate_bps: None, init_cwnd_pkts: 10 };
        Dctcp::new(&path, 1.0 / 16.0, 1.0)
    }

    fn ack(bytes: u64, ce: u64) -> AckSample {
        AckSample { acked_bytes: bytes, ce_bytes: ce, acked_pkts: 1, ..Default::default() }
    }

    /// Leave slow start through one loss so windows grow linearly (a
    /// slow-starting window would double forever in these scripts).
    fn dctcp_in_ca() -> Dctcp {
        let mut d = dctcp();
        d.on_send(0, 10 * MSS);
        d.on_loss(0, MSS);
        // Finish the current observation window so scripts start on a
        // window boundary.
        while d.windows() == 0 {
            d.on_ack(&ack(MSS, 0));
        }
        assert_eq!(d.cwnd_bytes(), Some(5 * MSS));
        d
    }

    #[test]
    fn alpha_converges_to_marked_fraction() {
        for &f in &[0.0, 0.1, 0.25, 0.6, 1.0] {
            let mut d = dctcp_in_ca();
            let start = d.windows();
            let alpha0 = d.alpha();
            let ce = (MSS as f64 * f) as u64;
            let f = ce as f64 / MSS as f64;
            while d.windows() < start + 150 {
                d.on_ack(&ack(MSS, ce));
            }
            // alpha_n = F + (alpha_0 - F)(1 - g)^n exactly when every
            // window has marked fraction F.
            let expect = f + (alpha0 - f) * (15.0f64 / 16.0).powi(150);
            assert!((d.alpha() - expect).abs() < 1e-12, "F={f}: {} vs {expect}", d.alpha());
            assert!((d.alpha() - f).abs() < 1e-3);
        }
    }

    #[test]
    fn no_cut_on_unmarked_windows() {
        let mut d = dctcp_in_ca();
        let mut last = d.cwnd_bytes().unwrap();
        while d.windows() < 120 {
            d.on_ack(&ack(MSS, 0));
            let now = d.cwnd_bytes().unwrap();
            assert!(now >= last, "cwnd never decreases without marks");
            last = now;
        }
        assert!(last > 100 * MSS, "additive increase kept going");
        assert!(d.alpha() < 1e-3, "alpha decays toward 0");
    }

    #[test]
    fn exactly_one_cut_per_window() {
        let mut d = dctcp();
        // Window 1 (10 MSS): every ACK marked. First CE cuts with alpha=1:
        // 10 MSS -> 5 MSS; the other nine marked ACKs do not cut again.
        d.on_ack(&ack(MSS, MSS));
        assert_eq!(d.cwnd_bytes(), Some(5 * MSS));
        for _ in 0..9 {
            d.on_ack(&ack(MSS, MSS));
            assert_eq!(d.cwnd_bytes(), Some(5 * MSS));
        }
        assert_eq!(d.windows(), 1);
        // alpha = 15/16 + 1/16 * 1 = 1.
        assert_eq!(d.alpha(), 1.0);
        // Window 2 (5 MSS): half the bytes marked -> one cut at alpha=1.
        d.on_ack(&ack(MSS, MSS));
        assert_eq!(d.cwnd_bytes(), Some(2500));
        for _ in 0..4 {
            d.on_ack(&ack(MSS, 0));
        }
        assert_eq!(d.windows(), 2);
        assert!((d.alpha() - (15.0 / 16.0 + (1.0 / 16.0) * 0.2)).abs() < 1e-12);
    }

    #[test]
    fn cut_uses_alpha_proportionally() {
        let mut d = dctcp_in_ca();
        // Grow the window with no marks so alpha decays.
        while d.windows() < 40 {
            d.on_ack(&ack(MSS, 0));
        }
        let alpha = d.alpha();
        let cwnd = d.cwnd_bytes().unwrap();
        d.on_ack(&ack(MSS, MSS));
        // The marked ACK is accounted before the cut; the cut itself is
        // cwnd * (1 - alpha/2) with the alpha learnt so far.
        assert_eq!(d.cwnd_bytes(), Some((cwnd as f64 * (1.0 - alpha / 2.0)) as u64));
    }

    #[test]
    fn loss_behaves_as_reno() {
        let mut d = dctcp();
        d.on_send(0, 10 * MSS);
        d.on_loss(0, MSS);
        assert_eq!(d.cwnd_bytes(), Some(5 * MSS));
        d.on_loss(0, MSS);
        assert_eq!(d.cwnd_bytes(), Some(5 * MSS));
        d.on_rto(0);
        assert_eq!(d.cwnd_bytes(), Some(MSS));
    }
}
