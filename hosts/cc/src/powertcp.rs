//! PowerTCP and θ-PowerTCP (Addanki, Michel and Schmid, NSDI 2022,
//! Algorithms 1 and 2).
//!
//! PowerTCP reacts to *power*, the product of the bottleneck's "current"
//! (the arrival rate λ = q̇ + μ, queue growth plus transmission rate) and
//! its "voltage" (the bytes in flight over it, q + B·τ), normalised by
//! its value at equilibrium, B²·τ (B the port's rate, τ the base RTT):
//!
//! ```text
//! Γ_norm = max over hops of (q̇ + μ)·(q + B·τ) / (B²·τ)       (PowerTCP, from INT)
//! Γ_norm = (dRTT/dt + 1)·RTT / τ                              (θ-PowerTCP, RTT only)
//! Γ_smooth = (Γ_smooth·(τ − Δt) + Γ_norm·Δt) / τ,  Δt ≤ τ
//! cwnd = γ·(cwnd_old / Γ_smooth + β) + (1 − γ)·cwnd           (at most once per RTT)
//! rate = cwnd / τ
//! ```
//!
//! `cwnd_old` is the window that was in force when the data now being
//! ACKed was sent (the paper's GETCWND(ack.seq): the window one RTT ago),
//! found here from the bytes sent at each window change. The window moves
//! at most once per RTT: on the first ACK of data sent after the previous
//! update (`ack.seq > lastUpdated`, kept in bytes by [`Round`]). With one
//! update per RTT, `cwnd_old` is the window the previous update set,
//! unless the ceiling (HostBw·τ, τ measured) fell in between.
//!
//! PowerTCP smooths Γ on every ACK that carries hop records, with Δt the
//! time between the two records of the chosen hop; θ-PowerTCP measures the
//! RTT gradient once per RTT, between consecutive updates, as the authors'
//! Linux implementation does. Both start at the host's line rate (cwnd =
//! HostBw·τ) and never exceed it; β = HostBw·τ/N, N the expected number of
//! flows (the authors' Linux implementation; defaults γ = 0.9, N = 10).
//!
//! `fast_react=1` is the authors' ns-3 code instead (`RdmaHw::HandleAckHp`
//! with PowerTCP enabled, as for HPCC): every ACK between two updates
//! also sets the window, from the reference window Wc of the last update
//! and the power smoothed so far, `cwnd = γ·(Wc/Γ_smooth + β) + (1 − γ)·Wc`;
//! the once-per-RTT update does the same and makes the result the new Wc.
//! The paper's Algorithm 1 (default) moves the window only at the update.
//! `current_floor=0.5` is that code's other departure: the current λ is
//! floored at half the hop's rate, so a queue draining with little arriving
//! keeps the power up until it is gone.
//!
//! ACKs without hop records do not move PowerTCP (θ-PowerTCP needs none).
//! Loss is outside both papers' algorithms: the datapath retransmits.

use std::collections::{BTreeMap, VecDeque};

use crate::params::{ParamInfo, Params};
use crate::timely::line_rate_bps;
use crate::window::{BaseRtt, Round};
use crate::{AckSample, CcError, CongestionControl, IntHop, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "gamma", default: "0.9", doc: "γ, the weight of the new window (the authors' Linux module: 0.9)" },
    ParamInfo { name: "expected_flows", default: "10", doc: "N in β = HostBw·τ/N, the additive increase in bytes (the authors' Linux module: 10)" },
    ParamInfo { name: "base_rtt_us", default: "0", doc: "τ, the base RTT, µs; 0 = the smallest RTT measured" },
    ParamInfo { name: "line_rate_mbps", default: "0", doc: "HostBw, the host's NIC rate, Mbit/s; 0 = PathInfo.line_rate_bps, or 10000 if unknown" },
    ParamInfo { name: "current_floor", default: "0", doc: "the current λ is floored at this share of the hop's rate before Γ (the paper and the Linux module: 0; the authors' ns-3 code: 0.5)" },
    ParamInfo { name: "fast_react", default: "0", doc: "1: set the window on every ACK from the reference window of the last per-RTT update (the authors' ns-3 code, as HPCC); 0: once per RTT (the paper's Algorithm 1)" },
    ParamInfo { name: "eta", default: "1", doc: "target utilisation η: the window follows Γ/η (the paper and the Linux module: 1; the authors' ns-3 code divides by HPCC's 0.95)" },
];

/// Where the power comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Algorithm 1: each hop's queue and transmitted bytes (INT).
    Int,
    /// Algorithm 2 (θ-PowerTCP): the RTT and its gradient.
    Theta,
}

/// Most hop records remembered.
const MAX_HOPS: usize = 64;
/// Most window changes remembered for GETCWND.
const MAX_HISTORY: usize = 256;
/// Γ is floored here before dividing by it (an idle path has Γ = 0; the
/// window is then capped at HostBw·τ anyway).
const MIN_POWER: f64 = 1e-9;

#[derive(Debug, Clone)]
pub struct PowerTcp {
    variant: Variant,
    gamma: f64,
    expected_flows: f64,
    /// η: the power is judged against η (1: the paper's equilibrium).
    eta: f64,
    /// React on every ACK from `wc` (the authors' ns-3 code).
    fast_react: bool,
    /// λ ≥ current_floor·B (the authors' ns-3 code: 0.5).
    current_floor: f64,
    /// Wc: the window the last per-RTT update set (fast reaction only).
    wc: f64,
    /// HostBw in bytes per second.
    host_bps: f64,
    mss: f64,
    init_window: f64,
    base: BaseRtt,
    /// τ in ns, once known.
    tau_ns: Option<f64>,
    cwnd: f64,
    /// Γ_smooth; `None` until the first Γ_norm (which it then takes, as
    /// the authors' Linux implementation does).
    power: Option<f64>,
    /// The last Γ_norm.
    norm: f64,
    round: Round,
    /// (bytes sent when the window changed, the new window), oldest first.
    history: VecDeque<(u64, f64)>,
    /// The last record of each hop (Int).
    prev: Vec<IntHop>,
    /// RTT (ns) and time of the previous update (Theta).
    prev_rtt_ns: Option<(f64, u64)>,
    updates: u64,
}

impl PowerTcp {
    pub fn new(variant: Variant, path: &PathInfo, gamma: f64, expected_flows: f64, base_rtt_us: f64, host_rate_bps: f64) -> Self {
        let mss = f64::from(path.mss.max(1));
        let init_window = (f64::from(path.init_cwnd_pkts) * mss).max(mss);
        let mut p = PowerTcp {
            variant,
            gamma,
            expected_flows,
            eta: 1.0,
            fast_react: false,
            current_floor: 0.0,
            wc: init_window,
            host_bps: host_rate_bps.max(1.0) / 8.0,
            mss,
            init_window,
            base: BaseRtt::new(base_rtt_us),
            tau_ns: None,
            cwnd: init_window,
            power: None,
            norm: 0.0,
            round: Round::default(),
            history: VecDeque::new(),
            prev: Vec::new(),
            prev_rtt_ns: None,
            updates: 0,
        };
        p.history.push_back((0, init_window));
        p.refresh_tau(None);
        p
    }

    pub(crate) fn from_params(variant: Variant, p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        let gamma = p.f64_in("gamma", 1e-6, 1.0)?;
        let n = p.f64_in("expected_flows", 1e-3, 1e9)?;
        let base_rtt_us = p.f64_in("base_rtt_us", 0.0, 1e8)?;
        let line = line_rate_bps(p, path)?;
        let eta = p.f64_in("eta", 1e-3, 1.0)?;
        let fast = p.u64_in("fast_react", 0, 1)? == 1;
        let floor = p.f64_in("current_floor", 0.0, 1.0)?;
        Ok(PowerTcp::new(variant, path, gamma, n, base_rtt_us, line)
            .with_eta(eta)
            .with_fast_react(fast)
            .with_current_floor(floor))
    }

    /// Floor the current λ at `share` of the hop's rate (the authors' ns-3
    /// code: 0.5), so a draining queue keeps the power up until it is gone.
    pub fn with_current_floor(mut self, share: f64) -> Self {
        self.current_floor = share;
        self
    }

    /// React on every ACK (the authors' ns-3 code), not once per RTT.
    pub fn with_fast_react(mut self, on: bool) -> Self {
        self.fast_react = on;
        self
    }

    /// A target utilisation η below 1: the window follows Γ/η, leaving
    /// 1 − η of the link as headroom (as HPCC's η does).
    pub fn with_eta(mut self, eta: f64) -> Self {
        self.eta = eta;
        self
    }

    /// HostBw·τ, bytes: the start and the ceiling of the window.
    fn host_bdp(&self) -> Option<f64> {
        self.tau_ns.map(|t| self.host_bps * t / 1e9)
    }

    /// β = HostBw·τ/N, bytes.
    pub fn beta_bytes(&self) -> f64 {
        self.host_bdp().map_or(0.0, |b| b / self.expected_flows)
    }

    fn set_cwnd(&mut self, cwnd: f64) {
        self.cwnd = cwnd;
        let at = self.round.high_water();
        if self.history.back().is_some_and(|&(m, _)| m == at) {
            self.history.pop_back();
        }
        if self.history.len() >= MAX_HISTORY {
            self.history.pop_front();
        }
        self.history.push_back((at, cwnd));
    }

    /// The first time τ is known the window starts at HostBw·τ; a smaller
    /// τ later lowers the ceiling.
    fn refresh_tau(&mut self, rtt_ns: Option<u64>) {
        self.base.observe(rtt_ns);
        let Some(t) = self.base.get_ns() else { return };
        let first = self.tau_ns.is_none();
        self.tau_ns = Some(t);
        let bdp = self.host_bdp().unwrap_or(self.init_window).max(self.mss);
        if first || self.cwnd > bdp {
            self.set_cwnd(bdp);
        }
        if first || self.wc > bdp {
            self.wc = bdp;
        }
    }

    /// GETCWND: the window in force when byte `pos` was sent.
    fn cwnd_at(&mut self, pos: u64) -> f64 {
        while self.history.len() > 1 && self.history[1].0 <= pos {
            self.history.pop_front();
        }
        self.history.front().map_or(self.cwnd, |&(_, w)| w)
    }

    fn smooth(&mut self, norm: f64, dt_ns: f64, tau: f64) {
        self.norm = norm;
        let dt = dt_ns.min(tau);
        self.power = Some(match self.power {
            None => norm,
            Some(p) => (p * (tau - dt) + norm * dt) / tau,
        });
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

    /// Algorithm 1, NORMPOWER: the largest normalised power over the hops
    /// that have a previous record, and that hop's record gap (ns).
    fn hop_power(&mut self, hops: &[IntHop], tau_ns: f64) -> Option<(f64, f64)> {
        let tau = tau_ns / 1e9;
        let mut best: Option<(f64, f64)> = None;
        for h in hops {
            let prev = self.prev.iter().find(|p| p.hop == h.hop).copied();
            self.remember(h);
            let Some(p) = prev else { continue };
            if h.ts_ns <= p.ts_ns || h.rate_bps == 0 {
                continue;
            }
            let dt_ns = (h.ts_ns - p.ts_ns) as f64;
            let dt = dt_ns / 1e9;
            let b = h.rate_bps as f64 / 8.0;
            let q = h.qlen_bytes as f64;
            let q_dot = (q - p.qlen_bytes as f64) / dt;
            let mu = h.tx_bytes_since(&p) as f64 / dt;
            let lambda = (q_dot + mu).max(self.current_floor * b);
            let norm = lambda * (q + b * tau) / (b * b * tau);
            if best.is_none_or(|(bn, _)| norm > bn) {
                best = Some((norm, dt_ns));
            }
        }
        best
    }

    /// Algorithm 1, UPDATEWINDOW, for the ACK whose newest byte is `pos`:
    /// the window from the one its data was sent under, or from Wc with
    /// fast reaction.
    fn set_window(&mut self, pos: u64) {
        let (Some(power), Some(bdp)) = (self.power, self.host_bdp()) else { return };
        let (old, last) = if self.fast_react { (self.wc, self.wc) } else { (self.cwnd_at(pos), self.cwnd) };
        let beta = self.beta_bytes();
        let power = power / self.eta;
        let cwnd = self.gamma * (old / power.max(MIN_POWER) + beta) + (1.0 - self.gamma) * last;
        self.set_cwnd(cwnd.clamp(self.mss, bdp.max(self.mss)));
    }

    /// One ACK's step: the per-RTT update when this ACK covers data sent
    /// after the previous one (its window becomes Wc), else, with fast
    /// reaction, a window from Wc.
    fn step(&mut self, pos: u64) {
        if self.round.fresh() {
            self.round.start();
        } else if self.round.passed() && self.power.is_some() {
            self.set_window(pos);
            self.wc = self.cwnd;
            self.updates += 1;
            self.round.start();
        } else if self.fast_react && self.power.is_some() {
            self.set_window(pos);
        }
    }

    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }
    /// Γ_smooth.
    pub fn norm_power(&self) -> Option<f64> {
        self.power
    }
}

impl CongestionControl for PowerTcp {
    fn name(&self) -> &'static str {
        match self.variant {
            Variant::Int => "powertcp",
            Variant::Theta => "theta-powertcp",
        }
    }
    fn on_send(&mut self, _now_ns: u64, bytes: u64) {
        self.round.on_send(bytes);
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.round.on_ack(s.acked_bytes, s.inflight_bytes);
        // GETCWND(ack.seq): the newest byte this ACK covers.
        let pos = self.round.resolved().saturating_sub(1);
        self.refresh_tau(s.rtt_ns);
        let Some(tau) = self.tau_ns else {
            s.int_hops.iter().for_each(|h| self.remember(h));
            return;
        };
        match self.variant {
            Variant::Int => {
                if s.int_hops.is_empty() {
                    return;
                }
                if let Some((norm, dt)) = self.hop_power(&s.int_hops, tau) {
                    self.smooth(norm, dt, tau);
                }
                self.step(pos);
            }
            Variant::Theta => {
                let Some(rtt) = s.rtt_ns.filter(|&r| r > 0).map(|r| r as f64) else { return };
                if let Some((prev_rtt, t_prev)) = self.prev_rtt_ns {
                    // Algorithm 2, NORMPOWER: Γ = (θ̇ + 1)·θ/τ.
                    let dt = s.now_ns.saturating_sub(t_prev).max(1) as f64;
                    let grad = (rtt - prev_rtt) / dt;
                    // The current θ̇ + 1 is in units of the line rate.
                    self.smooth((grad + 1.0).max(self.current_floor) * rtt / tau, dt, tau);
                }
                self.prev_rtt_ns = Some((rtt, s.now_ns));
                self.step(pos);
            }
        }
    }
    fn on_loss(&mut self, _now_ns: u64, lost_bytes: u64) {
        self.round.on_loss(lost_bytes);
    }
    fn on_rto(&mut self, _now_ns: u64) {}
    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.cwnd.max(self.mss) as u64)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        let bps = match self.tau_ns {
            Some(t) => self.cwnd * 8.0 * 1e9 / t,
            None => self.host_bps * 8.0,
        };
        Some((bps as u64).max(1))
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        m.insert("cwnd_bytes", self.cwnd);
        m.insert("norm_power_sample", self.norm);
        m.insert("updates", self.updates as f64);
        if let Some(p) = self.power {
            m.insert("norm_power", p);
        }
        if let Some(t) = self.tau_ns {
            m.insert("tau_us", t / 1e3);
            m.insert("beta_bytes", self.beta_bytes());
            m.insert("rate_mbps", self.cwnd * 8.0 * 1e3 / t);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // HostBw = hop rate = 10 Gb/s = 1.25e9 B/s, τ = 10 µs: B·τ = 12 500 B
    // (the start and ceiling of the window), β = 12 500/10 = 1 250 B.
    const B: u64 = 10_000_000_000;
    const BDP: f64 = 12_500.0;
    const BETA: f64 = 1_250.0;

    fn power(variant: Variant) -> PowerTcp {
        let path = PathInfo { mss: 1000, line_rate_bps: Some(B), init_cwnd_pkts: 10 };
        PowerTcp::new(variant, &path, 0.9, 10.0, 10.0, B as f64)
    }

    fn hop(id: u32, qlen: u64, tx: u32, ts: u64) -> IntHop {
        IntHop { hop: id, qlen_bytes: qlen, tx_bytes: tx, ts_ns: ts, rate_bps: B }
    }

    fn ack(hops: Vec<IntHop>) -> AckSample {
        AckSample { acked_bytes: 1000, rtt_ns: Some(10_000), int_hops: hops, acked_pkts: 1, ..Default::default() }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    /// Algorithm 1: the window starts at HostBw·τ, rate = cwnd/τ, and β =
    /// HostBw·τ/N.
    #[test]
    fn starts_at_host_bdp() {
        let p = power(Variant::Int);
        assert_eq!(p.cwnd_bytes(), Some(12_500));
        assert_eq!(p.pacing_rate_bps(), Some(B));
        assert_eq!(p.beta_bytes(), BETA);
        assert_eq!(p.name(), "powertcp");
        assert_eq!(power(Variant::Theta).name(), "theta-powertcp");
    }

    /// Algorithm 1, NORMPOWER: λ = q̇ + μ, Γ = λ·(q + B·τ)/(B²·τ), max over
    /// hops, then Γ_smooth = (Γ_smooth·(τ − Δt) + Γ·Δt)/τ.
    #[test]
    fn normalised_power_by_hand() {
        let mut p = power(Variant::Int);
        p.on_send(0, 100_000);
        p.on_ack(&ack(vec![hop(1, 0, 0, 0), hop(2, 0, 0, 0)]));
        assert_eq!(p.norm_power(), None, "one record: nothing to difference");
        // Hop 1 over 1 µs: q̇ = 1 250 B/µs = 1.25e9 B/s, μ = 1.25e9 B/s,
        // λ = 2.5e9; Γ = 2.5e9·(1 250 + 12 500)/(1.25e9²·1e-5) = 2.2.
        // Hop 2 at line rate with no queue: Γ = 1. The first Γ is taken
        // as is.
        p.on_ack(&ack(vec![hop(1, 1_250, 1_250, 1_000), hop(2, 0, 1_250, 1_000)]));
        assert!(close(p.state()["norm_power_sample"], 2.2));
        assert!(close(p.norm_power().unwrap(), 2.2));
        // Hop 1 drains at line rate: q̇ = −1.25e9, μ = 1.25e9, λ = 0 → Γ = 0;
        // hop 2 (Γ = 1, Δt = 1 µs) is the max: (2.2·9 + 1·1)/10 = 2.08.
        p.on_ack(&ack(vec![hop(1, 0, 2_500, 2_000), hop(2, 0, 2_500, 2_000)]));
        assert!(close(p.state()["norm_power_sample"], 1.0));
        assert!(close(p.norm_power().unwrap(), 2.08));
        // A gap longer than τ counts as τ: Γ_smooth = Γ.
        p.on_ack(&ack(vec![hop(2, 0, 27_500, 22_000)]));
        assert!(close(p.norm_power().unwrap(), 1.0));
    }

    /// Algorithm 1, UPDATEWINDOW: cwnd = γ·(cwnd_old/Γ + β) + (1 − γ)·cwnd,
    /// at most once per RTT (the first ACK of data sent after the previous
    /// update), and rate = cwnd/τ.
    #[test]
    fn window_update_once_per_rtt() {
        let mut p = power(Variant::Int);
        p.on_send(0, 10_000);
        p.on_ack(&ack(vec![hop(1, 0, 0, 0)]));
        // Same RTT (the first 10 000 B): power is learnt, cwnd stays.
        p.on_ack(&ack(vec![hop(1, 1_250, 1_250, 1_000)]));
        assert!(close(p.norm_power().unwrap(), 2.2));
        assert_eq!(p.cwnd(), BDP);
        for i in 0..8u32 {
            p.on_ack(&ack(vec![hop(1, 1_250, 1_250 * (i + 2), 1_000 * (u64::from(i) + 2))]));
        }
        assert_eq!(p.cwnd(), BDP, "all data sent before the first mark");
        assert_eq!(p.state()["updates"], 0.0);
        // Data sent after the mark is ACKed: one update. The steady hops
        // (q = 1 250 twice, line rate) give Γ = 1.1 each; Γ_smooth after
        // nine samples with Δt = τ/10 from 2.2: 1.1 + 1.1·0.9^9.
        p.on_send(0, 5_000);
        p.on_ack(&ack(vec![hop(1, 1_250, 12_500, 10_000)]));
        let g = 1.1 + 1.1 * 0.9f64.powi(9);
        assert!(close(p.norm_power().unwrap(), g));
        let cwnd = 0.9 * (BDP / g + BETA) + 0.1 * BDP;
        assert!(close(p.cwnd(), cwnd));
        assert_eq!(p.pacing_rate_bps(), Some((cwnd * 8.0 * 1e9 / 10_000.0) as u64));
        // The rest of this RTT's ACKs leave the window alone.
        for i in 0..4u32 {
            p.on_ack(&ack(vec![hop(1, 1_250, 12_500 + 1_250 * (i + 1), 10_000 + 1_000 * (u64::from(i) + 1))]));
        }
        assert!(close(p.cwnd(), cwnd));
        assert_eq!(p.state()["updates"], 1.0);
    }

    /// The current's floor (the authors' ns-3 code, `UpdateRatePower`:
    /// A ≥ B/2): a queue draining at line rate with nothing arriving has
    /// λ = 0 and Γ = 0 by Algorithm 1; floored at B/2, Γ = (B/2)·(q + B·τ)/(B²·τ),
    /// here with q = B·τ: 1.
    #[test]
    fn current_floor_keeps_a_draining_queue_powered() {
        for (floor, want) in [(0.0, 0.0), (0.5, 1.0)] {
            let mut p = power(Variant::Int).with_current_floor(floor);
            p.on_send(0, 1_000);
            p.on_ack(&ack(vec![hop(1, 25_000, 0, 0)]));
            // Over 10 µs the queue fell by 12 500 B while 12 500 B left.
            p.on_ack(&ack(vec![hop(1, 12_500, 12_500, 10_000)]));
            assert!(close(p.state()["norm_power_sample"], want), "floor {floor}");
        }
        let path = PathInfo { mss: 1000, line_rate_bps: Some(B), init_cwnd_pkts: 10 };
        let bad = [("current_floor".to_string(), "2".to_string())];
        assert!(crate::registry::by_name("powertcp", &bad, &path).is_err());
    }

    /// Fast reaction (the authors' ns-3 code: `RdmaHw::HandleAckHp` calls
    /// `FastReactPower` on ACKs before the RTT's update): every ACK with
    /// power sets cwnd = γ·(Wc/Γ_smooth + β) + (1 − γ)·Wc, Wc the window
    /// of the last per-RTT update (B·τ before the first); the update
    /// itself does the same and makes its window the new Wc.
    #[test]
    fn fast_react_moves_the_window_on_every_ack_from_wc() {
        let mut p = power(Variant::Int).with_fast_react(true);
        p.on_send(0, 10_000);
        p.on_ack(&ack(vec![hop(1, 0, 0, 0)]));
        // Γ = 2.2 (as above) within the first RTT: the window moves now.
        p.on_ack(&ack(vec![hop(1, 1_250, 1_250, 1_000)]));
        assert!(close(p.cwnd(), 0.9 * (BDP / 2.2 + BETA) + 0.1 * BDP));
        // Γ = 1.1 over 1 µs: Γ_smooth = (2.2·9 + 1.1)/10 = 2.09, from Wc = B·τ
        // again, not from the window the previous ACK set.
        p.on_ack(&ack(vec![hop(1, 1_250, 2_500, 2_000)]));
        assert!(close(p.cwnd(), 0.9 * (BDP / 2.09 + BETA) + 0.1 * BDP));
        assert_eq!(p.state()["updates"], 0.0);
        for i in 1..8u32 {
            p.on_ack(&ack(vec![hop(1, 1_250, 1_250 * (i + 2), 1_000 * (u64::from(i) + 2))]));
        }
        // The per-RTT update: the same window as without fast reaction.
        p.on_send(0, 5_000);
        p.on_ack(&ack(vec![hop(1, 1_250, 12_500, 10_000)]));
        let g = 1.1 + 1.1 * 0.9f64.powi(9);
        let wc = 0.9 * (BDP / g + BETA) + 0.1 * BDP;
        assert!(close(p.cwnd(), wc));
        assert_eq!(p.state()["updates"], 1.0);
        // The next ACK reacts from the new Wc.
        p.on_ack(&ack(vec![hop(1, 1_250, 13_750, 11_000)]));
        let g2 = (g * 9.0 + 1.1) / 10.0;
        assert!(close(p.cwnd(), 0.9 * (wc / g2 + BETA) + 0.1 * wc));
        let path = PathInfo { mss: 1000, line_rate_bps: Some(B), init_cwnd_pkts: 10 };
        let bad = [("fast_react".to_string(), "2".to_string())];
        assert!(crate::registry::by_name("powertcp", &bad, &path).is_err());
    }

    /// η (the authors' ns-3 code, `UpdateRatePower`: max_c = u/η, as in
    /// HPCC §3.3): the same first update as above with Γ judged against
    /// η = 0.95, i.e. cwnd = γ·(cwnd_old·η/Γ + β) + (1 − γ)·cwnd. The
    /// default η = 1 is the paper's Algorithm 1 (the test above).
    #[test]
    fn eta_leaves_headroom() {
        let mut p = power(Variant::Int).with_eta(0.95);
        p.on_send(0, 10_000);
        p.on_ack(&ack(vec![hop(1, 0, 0, 0)]));
        for i in 0..9u32 {
            p.on_ack(&ack(vec![hop(1, 1_250, 1_250 * (i + 1), 1_000 * (u64::from(i) + 1))]));
        }
        p.on_send(0, 5_000);
        p.on_ack(&ack(vec![hop(1, 1_250, 12_500, 10_000)]));
        let g = 1.1 + 1.1 * 0.9f64.powi(9);
        let cwnd = 0.9 * (BDP * 0.95 / g + BETA) + 0.1 * BDP;
        assert!(close(p.cwnd(), cwnd), "{} vs {cwnd}", p.cwnd());
        let path = PathInfo { mss: 1000, line_rate_bps: Some(B), init_cwnd_pkts: 10 };
        let given = [("eta".to_string(), "0.95".to_string())];
        assert!(crate::registry::by_name("powertcp", &given, &path).is_ok());
        let bad = [("eta".to_string(), "1.5".to_string())];
        assert!(crate::registry::by_name("powertcp", &bad, &path).is_err());
    }

    /// Algorithm 1, GETCWND(ack.seq): the window in force when the ACKed
    /// data was sent, found from the bytes sent at each window change.
    #[test]
    fn getcwnd_is_the_window_the_data_was_sent_under() {
        let mut p = power(Variant::Int);
        p.on_send(0, 3_000);
        p.set_cwnd(9_000.0); // from byte 3 000 on
        p.on_send(0, 2_000);
        p.set_cwnd(7_000.0); // from byte 5 000 on
        assert_eq!(p.cwnd_at(0), BDP);
        assert_eq!(p.cwnd_at(2_999), BDP);
        assert_eq!(p.cwnd_at(3_000), 9_000.0);
        assert_eq!(p.cwnd_at(4_999), 9_000.0);
        assert_eq!(p.cwnd_at(5_000), 7_000.0);
        assert_eq!(p.cwnd, 7_000.0);
    }

    /// Algorithm 1, UPDATEWINDOW across two RTTs: the second update divides
    /// the window the first one set (the window its ACKed data was sent
    /// under), with Γ = 2 for a queue of one B·τ at line rate.
    #[test]
    fn successive_updates() {
        let mut p = power(Variant::Int);
        p.on_send(0, 1_000);
        p.on_ack(&ack(vec![hop(1, 12_500, 0, 0)]));
        p.on_send(0, 1_000);
        p.on_ack(&ack(vec![hop(1, 12_500, 12_500, 10_000)]));
        // Γ = 1.25e9·(12 500 + 12 500)/(1.25e9²·1e-5) = 2:
        // W1 = 0.9·(12 500/2 + 1 250) + 0.1·12 500 = 8 000.
        let w1 = 0.9 * (BDP / 2.0 + BETA) + 0.1 * BDP;
        assert!(close(p.cwnd(), w1));
        assert!(close(w1, 8_000.0));
        p.on_send(0, 2_000);
        p.on_ack(&ack(vec![hop(1, 12_500, 25_000, 20_000)]));
        let w2 = 0.9 * (w1 / 2.0 + BETA) + 0.1 * w1;
        assert!(close(p.cwnd(), w2));
        assert_eq!(p.state()["updates"], 2.0);
    }

    /// Algorithm 2 (θ-PowerTCP): Γ = (dθ/dt + 1)·θ/τ from consecutive RTT
    /// samples, smoothed over τ on every ACK; the window still moves at
    /// most once per RTT. No telemetry needed.
    #[test]
    fn theta_power_from_the_rtt_gradient() {
        let mut p = power(Variant::Theta);
        let rtt_ack = |now: u64, rtt: u64| AckSample { now_ns: now, acked_bytes: 1000, rtt_ns: Some(rtt), ..Default::default() };
        p.on_send(0, 1_000);
        p.on_ack(&rtt_ack(0, 10_000));
        assert_eq!(p.norm_power(), None, "one sample: no gradient yet");
        // 20 µs later the RTT is 12 µs: θ̇ = 2/20 = 0.1, Γ = 1.1·12/10 = 1.32,
        // the first Γ taken as is; data sent after the mark: update.
        p.on_send(0, 3_000);
        p.on_ack(&rtt_ack(20_000, 12_000));
        assert!(close(p.norm_power().unwrap(), 1.32));
        let w1 = 0.9 * (BDP / 1.32 + BETA) + 0.1 * BDP;
        assert!(close(p.cwnd(), w1));
        // Same RTT (the 4 000 B sent so far): Γ is smoothed per ACK with
        // Δt/τ = 0.1, the window stays.
        // θ̇ = 0.5/1 → Γ = 1.5·12.5/10 = 1.875; (1.32·9 + 1.875)/10 = 1.3755.
        p.on_ack(&rtt_ack(21_000, 12_500));
        assert!(close(p.norm_power().unwrap(), 1.3755));
        // θ̇ = 0 → Γ = 1.25; (1.3755·9 + 1.25)/10 = 1.36295.
        p.on_ack(&rtt_ack(22_000, 12_500));
        assert!(close(p.norm_power().unwrap(), 1.36295));
        assert!(close(p.cwnd(), w1));
        assert_eq!(p.state()["updates"], 1.0);
        // Next RTT, 18 µs on (> τ, so Γ_smooth = Γ): θ̇ = −1.5/18,
        // Γ = (1 − 1/12)·11/10 = 1.008 3̅; the update divides W1.
        p.on_send(0, 1_000);
        p.on_ack(&rtt_ack(40_000, 11_000));
        let g = (1.0 - 1.0 / 12.0) * 1.1;
        assert!(close(p.norm_power().unwrap(), g));
        assert!(close(p.cwnd(), 0.9 * (w1 / g + BETA) + 0.1 * w1));
        // A gradient below −1 gives no negative power.
        p.on_ack(&rtt_ack(40_001, 5_000));
        assert_eq!(p.state()["norm_power_sample"], 0.0);
        // ACKs without an RTT sample do nothing.
        let before = p.norm_power();
        p.on_ack(&AckSample { now_ns: 50_000, acked_bytes: 1000, ..Default::default() });
        assert_eq!(p.norm_power(), before);
    }

    /// ACKs without hop records leave PowerTCP alone; the window stays in
    /// [1 MSS, HostBw·τ].
    #[test]
    fn bounds_and_missing_telemetry() {
        let mut p = power(Variant::Int);
        p.on_send(0, 1_000);
        p.on_ack(&ack(vec![hop(1, 0, 0, 0)]));
        p.on_send(0, 1_000);
        p.on_ack(&AckSample { acked_bytes: 1000, rtt_ns: Some(10_000), ..Default::default() });
        assert_eq!(p.cwnd(), BDP);
        assert_eq!(p.norm_power(), None);
        // A huge queue: Γ enormous, cwnd → γ·β + (1 − γ)·cwnd at most.
        p.on_ack(&ack(vec![hop(1, 1 << 40, 0, 1_000)]));
        assert!(p.cwnd() <= 0.9 * (BDP / 1e3 + BETA) + 0.1 * BDP);
        assert!(p.cwnd() >= 1000.0);
        // An idle hop (Γ = 0): the window is capped at HostBw·τ.
        for i in 2..40u64 {
            p.on_send(0, 1_000);
            p.on_ack(&ack(vec![hop(1, 0, 0, i * 10_000)]));
        }
        assert_eq!(p.cwnd(), BDP);
    }
}
