//! HPCC, High Precision Congestion Control (Li et al., SIGCOMM 2019),
//! Algorithm 1.
//!
//! Every ACK echoes the in-band telemetry of the data packet it
//! acknowledges: for each switch egress port the packet crossed, the
//! port's queue length, transmitted-bytes counter, egress timestamp and
//! line rate ([`IntHop`]). From two consecutive records of the same
//! port the sender estimates that port's normalised in-flight bytes
//! (MeasureInflight):
//!
//! ```text
//! txRate = (txBytes − txBytes_prev) / (ts − ts_prev)
//! u'     = min(qlen, qlen_prev) / (B·T) + txRate / B
//! u      = max over the hops of u';  τ = ts − ts_prev of that hop, τ ≤ T
//! U      = (1 − τ/T)·U + (τ/T)·u
//! ```
//!
//! and steers the window towards the target utilisation η (ComputeWind):
//!
//! ```text
//! if U ≥ η or incStage ≥ maxStage:  W = Wc / (U/η) + W_AI   (Wc = W, incStage = 0 when committing)
//! else:                             W = Wc + W_AI           (Wc = W, incStage += 1 when committing)
//! ```
//!
//! W is recomputed on every ACK from the reference window Wc (the fast
//! reaction); Wc and incStage are committed only by the first ACK of data
//! sent after the previous commit (`ack.seq > lastUpdateSeq`, once per RTT,
//! kept in bytes by [`Round`]). The sender paces at R = W/T and keeps at
//! most W bytes in flight; W starts at W_init = B_nic·T (line rate) and
//! never exceeds it, as the authors' simulator caps the rate at the NIC's.
//!
//! ACKs without hop records change nothing: HPCC has no other signal. The
//! first ACK with hop records only stores them (there is nothing to
//! difference yet), as the authors' simulator does in its first RTT. Loss
//! is not part of HPCC (its fabric is lossless); the datapath retransmits
//! and the window is left to the telemetry.
//!
//! Defaults follow the authors' simulation (`simulation/run.py` of their
//! ns-3 release): η = 0.95, maxStage = 0 (the paper's text suggests 5), and
//! an additive step of 10 Mb/s per 25 Gb/s of NIC rate, i.e. W_AI =
//! 0.0004·W_init (the paper's W_init·(1 − η)/N with N = 125).

use std::collections::BTreeMap;

use crate::params::{ParamInfo, Params};
use crate::timely::line_rate_bps;
use crate::window::{BaseRtt, Round};
use crate::{AckSample, CcError, CongestionControl, IntHop, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "eta", default: "0.95", doc: "target utilisation η (paper: 95%; the authors' simulation: 0.95)" },
    ParamInfo { name: "max_stage", default: "0", doc: "maxStage, additive-increase rounds before a multiplicative step (the authors' simulations: 0; the paper's text: 5)" },
    ParamInfo { name: "w_ai", default: "0.0004", doc: "W_AI as a fraction of W_init, = R_AI/B_nic (the authors' simulation: 10 Mb/s per 25 Gb/s of NIC rate; the paper's (1 − η)/N with N = 125)" },
    ParamInfo { name: "base_rtt_us", default: "0", doc: "T, the base RTT, µs; 0 = the smallest RTT measured" },
    ParamInfo { name: "line_rate_mbps", default: "0", doc: "B_nic, the NIC rate (W_init = B_nic·T), Mbit/s; 0 = PathInfo.line_rate_bps, or 10000 if unknown" },
];

/// Most hop records remembered (a path has a handful of hops; this only
/// bounds what a misbehaving datapath can make us keep).
const MAX_HOPS: usize = 64;

#[derive(Debug, Clone)]
pub struct Hpcc {
    eta: f64,
    max_stage: u32,
    w_ai_frac: f64,
    /// B_nic in bytes per second.
    nic_bps: f64,
    mss: f64,
    /// The window before T is known.
    init_window: f64,
    base: BaseRtt,
    /// T in ns, once known.
    t_ns: Option<f64>,
    u: f64,
    /// The last max-over-hops u' (before smoothing).
    u_sample: f64,
    w: f64,
    wc: f64,
    inc_stage: u32,
    round: Round,
    /// The last record of each hop, by hop id.
    prev: Vec<IntHop>,
    wc_commits: u64,
    acks_without_int: u64,
}

impl Hpcc {
    /// `base_rtt_us == 0` measures T as the smallest RTT seen;
    /// `nic_rate_bps` is B_nic.
    pub fn new(path: &PathInfo, eta: f64, max_stage: u32, w_ai: f64, base_rtt_us: f64, nic_rate_bps: f64) -> Self {
        let mss = f64::from(path.mss.max(1));
        let init_window = (f64::from(path.init_cwnd_pkts) * mss).max(mss);
        let mut h = Hpcc {
            eta,
            max_stage,
            w_ai_frac: w_ai,
            nic_bps: nic_rate_bps.max(1.0) / 8.0,
            mss,
            init_window,
            base: BaseRtt::new(base_rtt_us),
            t_ns: None,
            u: 1.0,
            u_sample: 0.0,
            w: init_window,
            wc: init_window,
            inc_stage: 0,
            round: Round::default(),
            prev: Vec::new(),
            wc_commits: 0,
            acks_without_int: 0,
        };
        h.refresh_t(None);
        h
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        let eta = p.f64_in("eta", 1e-3, 1.0)?;
        let max_stage = p.u64_in("max_stage", 0, 1_000_000)? as u32;
        let w_ai = p.f64_in("w_ai", 1e-9, 1.0)?;
        let base_rtt_us = p.f64_in("base_rtt_us", 0.0, 1e8)?;
        let line = line_rate_bps(p, path)?;
        Ok(Hpcc::new(path, eta, max_stage, w_ai, base_rtt_us, line))
    }

    /// W_init = B_nic·T, bytes.
    fn w_init(&self) -> Option<f64> {
        self.t_ns.map(|t| self.nic_bps * t / 1e9)
    }

    fn w_ai(&self) -> f64 {
        self.w_init().map_or(0.0, |w| w * self.w_ai_frac)
    }

    /// Takes in an RTT sample; the first time T is known, the window
    /// starts at W_init (line rate); a smaller T later lowers the cap.
    fn refresh_t(&mut self, rtt_ns: Option<u64>) {
        self.base.observe(rtt_ns);
        let Some(t) = self.base.get_ns() else { return };
        let first = self.t_ns.is_none();
        self.t_ns = Some(t);
        let w_init = self.w_init().unwrap_or(self.init_window);
        if first {
            self.w = w_init;
            self.wc = w_init;
        } else {
            self.w = self.w.min(w_init);
            self.wc = self.wc.min(w_init);
        }
    }

    fn remember(&mut self, h: &IntHop) {
        if let Some(p) = self.prev.iter_mut().find(|p| p.hop == h.hop) {
            *p = *h;
        } else {
            if self.prev.len() >= MAX_HOPS {
                self.prev.remove(0);
            }
            self.prev.push(*h);
        }
    }

    /// MeasureInflight's per-hop part: the largest u' over the hops that
    /// have a previous record, with its τ (ns). Stores every record.
    fn measure(&mut self, hops: &[IntHop], t_ns: f64) -> Option<(f64, f64)> {
        let mut best: Option<(f64, f64)> = None;
        for h in hops {
            let prev = self.prev.iter().find(|p| p.hop == h.hop).copied();
            self.remember(h);
            let Some(p) = prev else { continue };
            if h.ts_ns <= p.ts_ns || h.rate_bps == 0 {
                continue;
            }
            let tau = (h.ts_ns - p.ts_ns) as f64;
            let b = h.rate_bps as f64 / 8.0;
            let tx_rate = h.tx_bytes_since(&p) as f64 * 1e9 / tau;
            let q = h.qlen_bytes.min(p.qlen_bytes) as f64;
            let u = q / (b * t_ns / 1e9) + tx_rate / b;
            if best.is_none_or(|(bu, _)| u > bu) {
                best = Some((u, tau));
            }
        }
        best
    }

    /// ComputeWind(U, updateWc).
    fn compute_wind(&mut self, commit: bool) {
        let Some(w_init) = self.w_init() else { return };
        let w_ai = self.w_ai();
        let (w, stage) = if self.u >= self.eta || self.inc_stage >= self.max_stage {
            (self.wc / (self.u.max(1e-12) / self.eta) + w_ai, 0)
        } else {
            (self.wc + w_ai, self.inc_stage.saturating_add(1))
        };
        let w = w.clamp(w_ai.max(1.0).min(w_init), w_init.max(1.0));
        self.w = w;
        if commit {
            self.wc = w;
            self.inc_stage = stage;
            self.wc_commits += 1;
        }
    }

    pub fn window_bytes(&self) -> f64 {
        self.w
    }
    pub fn reference_window_bytes(&self) -> f64 {
        self.wc
    }
    pub fn utilisation(&self) -> f64 {
        self.u
    }
    pub fn inc_stage(&self) -> u32 {
        self.inc_stage
    }
}

impl CongestionControl for Hpcc {
    fn name(&self) -> &'static str {
        "hpcc"
    }
    fn on_send(&mut self, _now_ns: u64, bytes: u64) {
        self.round.on_send(bytes);
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.round.on_ack(s.acked_bytes, s.inflight_bytes);
        self.refresh_t(s.rtt_ns);
        if s.int_hops.is_empty() {
            self.acks_without_int += 1;
            return;
        }
        let Some(t) = self.t_ns else {
            s.int_hops.iter().for_each(|h| self.remember(h));
            return;
        };
        if self.round.fresh() {
            // First RTT: nothing to difference yet.
            s.int_hops.iter().for_each(|h| self.remember(h));
            self.round.start();
            return;
        }
        let commit = self.round.passed();
        if let Some((u, tau)) = self.measure(&s.int_hops, t) {
            let tau = tau.min(t);
            self.u_sample = u;
            self.u = (1.0 - tau / t) * self.u + (tau / t) * u;
            self.compute_wind(commit);
        }
        if commit {
            self.round.start();
        }
    }
    fn on_loss(&mut self, _now_ns: u64, lost_bytes: u64) {
        self.round.on_loss(lost_bytes);
    }
    fn on_rto(&mut self, _now_ns: u64) {}
    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.w.max(self.mss) as u64)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        let bps = match self.t_ns {
            Some(t) => self.w * 8.0 * 1e9 / t,
            None => self.nic_bps * 8.0,
        };
        Some((bps as u64).max(1))
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        m.insert("U", self.u);
        m.insert("u_sample", self.u_sample);
        m.insert("W_bytes", self.w);
        m.insert("Wc_bytes", self.wc);
        m.insert("inc_stage", f64::from(self.inc_stage));
        m.insert("wc_commits", self.wc_commits as f64);
        m.insert("acks_without_int", self.acks_without_int as f64);
        if let Some(t) = self.t_ns {
            m.insert("T_us", t / 1e3);
            m.insert("W_AI_bytes", self.w_ai());
            m.insert("rate_mbps", self.w * 8.0 * 1e3 / t);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 10 Gb/s NIC and hop, T = 10 µs: W_init = 1.25e9 B/s · 10 µs =
    // 12 500 B, W_AI = 0.0004 · 12 500 = 5 B.
    const B: u64 = 10_000_000_000;
    const W_INIT: f64 = 12_500.0;
    const W_AI: f64 = 5.0;

    fn hpcc(max_stage: u32) -> Hpcc {
        let path = PathInfo { mss: 1000, line_rate_bps: Some(B), init_cwnd_pkts: 10 };
        Hpcc::new(&path, 0.95, max_stage, 0.0004, 10.0, B as f64)
    }

    fn hop(id: u32, qlen: u64, tx: u32, ts: u64) -> IntHop {
        IntHop { hop: id, qlen_bytes: qlen, tx_bytes: tx, ts_ns: ts, rate_bps: B }
    }

    fn ack(hops: Vec<IntHop>) -> AckSample {
        AckSample { acked_bytes: 1000, rtt_ns: Some(10_000), int_hops: hops, acked_pkts: 1, ..Default::default() }
    }

    /// R = W/T in bits/s for T = 10 µs, as the sender computes it.
    fn rate_of(w: f64) -> u64 {
        (w * 8.0 * 1e9 / 10_000.0) as u64
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    /// A flow whose first INT ACK has been taken (the first RTT only
    /// stores records), with `sent` bytes out.
    fn started(max_stage: u32, first: IntHop, sent: u64) -> Hpcc {
        let mut h = hpcc(max_stage);
        h.on_send(0, sent);
        h.on_ack(&ack(vec![first]));
        assert_eq!(h.window_bytes(), W_INIT, "first INT ACK only stores");
        assert_eq!(h.utilisation(), 1.0);
        h
    }

    /// Algorithm 1, NewAck: W starts at W_init = B_nic·T and R = W/T.
    #[test]
    fn starts_at_line_rate() {
        let h = hpcc(0);
        assert_eq!(h.cwnd_bytes(), Some(12_500));
        assert_eq!(h.pacing_rate_bps(), Some(B));
        // T measured: the window waits for the first RTT sample.
        let path = PathInfo { mss: 1000, line_rate_bps: Some(B), init_cwnd_pkts: 10 };
        let mut h = Hpcc::new(&path, 0.95, 0, 0.0004, 0.0, B as f64);
        assert_eq!(h.cwnd_bytes(), Some(10_000));
        h.on_ack(&AckSample { acked_bytes: 1000, rtt_ns: Some(20_000), ..Default::default() });
        assert_eq!(h.cwnd_bytes(), Some(25_000), "W_init = B·T with T = 20 µs");
        h.on_ack(&AckSample { acked_bytes: 1000, rtt_ns: Some(10_000), ..Default::default() });
        assert_eq!(h.cwnd_bytes(), Some(12_500), "a smaller T lowers the cap");
        assert_eq!(h.state()["T_us"], 10.0);
    }

    /// Algorithm 1, MeasureInflight: txRate from consecutive records of a
    /// hop, the smaller of the two queue lengths, and the EWMA with τ/T.
    #[test]
    fn measure_inflight_by_hand() {
        let mut h = started(0, hop(7, 2_500, 0, 0), 100_000);
        // τ = 5 µs; 3 125 B in 5 µs = 6.25e8 B/s = 0.5·B; min(2 500, 5 000)
        // = 2 500 B over B·T = 12 500 B: u' = 0.2 + 0.5 = 0.7.
        // U = (1 − 0.5)·1 + 0.5·0.7 = 0.85.
        h.on_ack(&ack(vec![hop(7, 5_000, 3_125, 5_000)]));
        assert!(close(h.state()["u_sample"], 0.7));
        assert!(close(h.utilisation(), 0.85));
        // τ longer than T counts as T: U = u'. Now min(5 000, 0) = 0 and
        // 25 000 B in 20 µs = 1.25e9 B/s = B: u' = 1.
        h.on_ack(&ack(vec![hop(7, 0, 28_125, 25_000)]));
        assert!(close(h.utilisation(), 1.0));
    }

    /// Algorithm 1, MeasureInflight: u is the largest u' over the hops,
    /// smoothed with that hop's τ; records are matched by hop id, not by
    /// position.
    #[test]
    fn the_most_loaded_hop_wins() {
        let mut h = hpcc(0);
        h.on_send(0, 100_000);
        h.on_ack(&ack(vec![hop(1, 0, 0, 0), hop(2, 0, 0, 0)]));
        // Hop 2 is listed first now. Hop 1: τ = 10 µs, 10 000 B in 10 µs
        // = 0.8·B → u' = 0.8. Hop 2: τ = 2 µs, 3 750 B in 2 µs = 1.5·B,
        // queue min(1 000, 0) = 0 → u' = 1.5 wins, with its τ = 2 µs:
        // U = (1 − 0.2)·1 + 0.2·1.5 = 1.1.
        h.on_ack(&ack(vec![hop(2, 1_000, 3_750, 2_000), hop(1, 0, 10_000, 10_000)]));
        assert!(close(h.state()["u_sample"], 1.5));
        assert!(close(h.utilisation(), 1.1));
        // A hop seen for the first time only stores its record.
        h.on_ack(&ack(vec![hop(3, 50_000, 0, 12_000)]));
        assert!(close(h.utilisation(), 1.1));
    }

    /// IntHop::tx_bytes_since: the 32-bit counter may wrap between records.
    #[test]
    fn tx_counter_wraps() {
        let mut h = started(0, hop(1, 0, u32::MAX - 999, 0), 100_000);
        // 1 000 B before the wrap + 11 500 after = 12 500 B in 10 µs = B.
        h.on_ack(&ack(vec![hop(1, 0, 11_500, 10_000)]));
        assert!(close(h.state()["u_sample"], 1.0));
    }

    /// Algorithm 1, ComputeWind with maxStage = 0 (the authors' setting):
    /// W = Wc/(U/η) + W_AI on every ACK, Wc committed once per RTT.
    #[test]
    fn multiplicative_step_per_ack_commit_per_rtt() {
        let mut h = started(0, hop(1, 0, 0, 0), 50_000);
        let ack1 = |q: u64, tx: u32, ts: u64| ack(vec![hop(1, q, tx, ts)]);
        // Line rate for τ = T, queue min(0, 2 500) = 0: u' = U = 1, so
        // W = 12 500/(1/0.95) + 5, from the uncommitted Wc = W_init.
        h.on_ack(&ack1(2_500, 12_500, 10_000));
        let w1 = W_INIT * 0.95 + W_AI;
        assert!(close(h.window_bytes(), w1));
        assert_eq!(h.state()["wc_commits"], 0.0, "still the first RTT's data");
        // The ACK of data sent after the mark commits: acked > 50 000 B.
        for _ in 0..48 {
            h.on_ack(&AckSample { acked_bytes: 1000, ..Default::default() });
        }
        assert!(close(h.reference_window_bytes(), W_INIT), "ACKs without INT change nothing");
        h.on_send(0, 10_000);
        h.on_ack(&ack1(2_500, 25_000, 20_000));
        // min(2 500, 2 500)/12 500 + 1 = 1.2 = U (τ = T).
        assert!(close(h.utilisation(), 1.2));
        let w2 = W_INIT / (1.2 / 0.95) + W_AI;
        assert!(close(h.window_bytes(), w2));
        assert!(close(h.reference_window_bytes(), w2), "committed");
        assert_eq!(h.state()["wc_commits"], 1.0);
        // Next ACKs (same RTT): W from the committed Wc, not compounding.
        h.on_ack(&ack1(2_500, 37_500, 30_000));
        assert!(close(h.window_bytes(), w2 / (1.2 / 0.95) + W_AI));
        h.on_ack(&ack1(2_500, 50_000, 40_000));
        assert!(close(h.window_bytes(), w2 / (1.2 / 0.95) + W_AI));
        assert!(close(h.reference_window_bytes(), w2));
        // R = W/T.
        assert_eq!(h.pacing_rate_bps(), Some(rate_of(h.window_bytes())));
    }

    /// Algorithm 1, ComputeWind: below η and with incStage < maxStage the
    /// window grows by W_AI per commit, and incStage counts commits; the
    /// maxStage-th round takes the multiplicative step and resets it.
    #[test]
    fn additive_rounds_then_multiplicative_step() {
        let mut h = started(2, hop(1, 0, 0, 0), 1000);
        // Shrink Wc first with an overloaded RTT (U = 2 ≥ η).
        h.on_send(0, 1000);
        h.on_ack(&ack(vec![hop(1, 12_500, 25_000, 10_000)]));
        // 25 000 B in 10 µs = 2·B and min(0, 12 500) = 0: u' = U = 2.
        assert!(close(h.utilisation(), 2.0));
        let wc = W_INIT / (2.0 / 0.95) + W_AI;
        assert!(close(h.reference_window_bytes(), wc));
        assert_eq!(h.inc_stage(), 0);
        // Half-loaded RTTs: U = 0.5 < η.
        let mut tx = 25_000u32;
        let mut ts = 10_000u64;
        let mut half = |h: &mut Hpcc| {
            tx += 6_250;
            ts += 10_000;
            h.on_send(0, 1000);
            h.on_ack(&ack(vec![hop(1, 0, tx, ts)]));
        };
        half(&mut h);
        assert!(close(h.utilisation(), 0.5));
        assert!(close(h.reference_window_bytes(), wc + W_AI));
        assert_eq!(h.inc_stage(), 1);
        half(&mut h);
        assert!(close(h.reference_window_bytes(), wc + 2.0 * W_AI));
        assert_eq!(h.inc_stage(), 2);
        // incStage = maxStage: W = Wc/(U/η) + W_AI even though U < η.
        half(&mut h);
        assert!(close(h.reference_window_bytes(), (wc + 2.0 * W_AI) / (0.5 / 0.95) + W_AI));
        assert_eq!(h.inc_stage(), 0);
    }

    /// W never exceeds W_init (rate ≤ B_nic) and never falls below W_AI;
    /// an ACK without hop records is no update.
    #[test]
    fn bounds_and_acks_without_telemetry() {
        let mut h = started(0, hop(1, 0, 0, 0), 1000);
        h.on_send(0, 1000);
        // Idle hop: U → 0, Wc/(U/η) explodes: capped at W_init.
        h.on_ack(&ack(vec![hop(1, 0, 0, 10_000)]));
        assert_eq!(h.window_bytes(), W_INIT);
        // Hopelessly overloaded: W = Wc/(U/η) + W_AI ≈ W_AI.
        h.on_send(0, 1000);
        h.on_ack(&ack(vec![hop(1, 1 << 40, 0, 20_000)]));
        h.on_send(0, 1000);
        h.on_ack(&ack(vec![hop(1, 1 << 40, 0, 30_000)]));
        assert!(h.window_bytes() < 2.0 * W_AI);
        assert_eq!(h.cwnd_bytes(), Some(1000), "the window offered is at least one packet");
        assert_eq!(h.pacing_rate_bps(), Some(rate_of(h.window_bytes())));
        let before = h.state();
        h.on_ack(&AckSample { acked_bytes: 1000, rtt_ns: Some(10_000), ..Default::default() });
        let after = h.state();
        assert_eq!(before["W_bytes"], after["W_bytes"]);
        assert_eq!(before["U"], after["U"]);
        assert_eq!(after["acks_without_int"], 1.0);
    }
}
