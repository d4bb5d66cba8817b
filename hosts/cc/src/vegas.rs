//! TCP Vegas (Brakmo & Peterson, SIGCOMM 1994 / JSAC 1995), with the
//! Linux `tcp_vegas` defaults.
//!
//! Once per RTT: `expected = cwnd/base_rtt`, `actual = cwnd/rtt`,
//! `diff = (expected − actual)·base_rtt` packets queued in the network.
//! Grow by one packet while `diff < α`, shrink by one when `diff > β`,
//! hold in between; leave slow start when `diff > γ`.

use std::collections::BTreeMap;

use crate::params::{ParamInfo, Params};
use crate::window::RenoWindow;
use crate::{AckSample, CcError, CongestionControl, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "alpha", default: "2", doc: "grow while fewer than alpha packets are queued (Linux: 2; paper: 1)" },
    ParamInfo { name: "beta", default: "4", doc: "shrink when more than beta packets are queued (Linux: 4; paper: 3)" },
    ParamInfo { name: "gamma", default: "1", doc: "leave slow start when more than gamma packets are queued (Linux: 1)" },
    ParamInfo { name: "min_samples", default: "3", doc: "RTT samples needed in a round for a Vegas decision; fewer = Reno growth (Linux: 3)" },
];

#[derive(Debug, Clone)]
pub struct Vegas {
    w: RenoWindow,
    alpha: f64,
    beta: f64,
    gamma: f64,
    min_samples: u32,
    base_rtt_ns: Option<u64>,
    /// Smallest RTT of the current round (filters delayed-ACK inflation).
    round_min_ns: Option<u64>,
    round_samples: u32,
    /// A round is one window of data: it ends when as many bytes as cwnd
    /// held at its start have been ACKed.
    round_bytes: u64,
    acked_in_round: u64,
    last_diff: f64,
    rounds: u64,
}

impl Vegas {
    pub fn new(path: &PathInfo, alpha: f64, beta: f64, gamma: f64, min_samples: u32) -> Self {
        let w = RenoWindow::new(path);
        let round_bytes = w.cwnd;
        Vegas {
            w,
            alpha,
            beta,
            gamma,
            min_samples,
            base_rtt_ns: None,
            round_min_ns: None,
            round_samples: 0,
            round_bytes,
            acked_in_round: 0,
            last_diff: 0.0,
            rounds: 0,
        }
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        let alpha = p.f64_in("alpha", 0.0, 1e6)?;
        let beta = p.f64_in("beta", 0.0, 1e6)?;
        if beta < alpha {
            return Err(p.invalid("beta", "must be >= alpha"));
        }
        let gamma = p.f64_in("gamma", 0.0, 1e6)?;
        let min_samples = p.u64_in("min_samples", 1, 1_000_000)? as u32;
        Ok(Vegas::new(path, alpha, beta, gamma, min_samples))
    }

    pub fn last_diff(&self) -> f64 {
        self.last_diff
    }
    pub fn rounds(&self) -> u64 {
        self.rounds
    }
    pub fn in_slow_start(&self) -> bool {
        self.w.in_slow_start()
    }

    /// End of a round: the Vegas decision (Linux `tcp_vegas_cong_avoid`).
    fn end_round(&mut self, acked: u64) {
        let mss = self.w.mss;
        match (self.base_rtt_ns, self.round_min_ns) {
            (Some(base), Some(rtt)) if self.round_samples >= self.min_samples && rtt > 0 => {
                let cwnd_pkts = self.w.cwnd as f64 / mss as f64;
                let diff = cwnd_pkts * (rtt as f64 - base as f64) / rtt as f64;
                self.last_diff = diff;
                if self.w.in_slow_start() {
                    if diff > self.gamma {
                        // Too much queued to keep doubling: drop to the
                        // window that would just fill the pipe (+1) and
                        // continue in congestion avoidance.
                        let target = (cwnd_pkts * base as f64 / rtt as f64).floor() as u64 + 1;
                        self.w.cwnd = self.w.cwnd.min(target.saturating_mul(mss));
                        self.w.ssthresh = self.w.ssthresh.min(self.w.cwnd.saturating_sub(mss));
                    } else {
                        self.w.slow_start(acked);
                    }
                } else if diff > self.beta {
                    self.w.cwnd = self.w.cwnd.saturating_sub(mss);
                    self.w.ssthresh = self.w.ssthresh.min(self.w.cwnd.saturating_sub(mss));
                } else if diff < self.alpha {
                    self.w.cwnd = self.w.cwnd.saturating_add(mss);
                }
                self.w.cwnd = self.w.cwnd.max(2 * mss);
            }
            // Too few RTT samples to trust: behave as Reno for this ACK.
            _ => self.w.grow(acked),
        }
        self.rounds += 1;
        self.restart_round();
    }

    fn restart_round(&mut self) {
        self.round_min_ns = None;
        self.round_samples = 0;
        self.acked_in_round = 0;
        self.round_bytes = self.w.cwnd.max(1);
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }
    fn on_send(&mut self, _now_ns: u64, bytes: u64) {
        self.w.rec.on_send(bytes);
    }
    fn on_ack(&mut self, s: &AckSample) {
        if let Some(r) = s.rtt_ns {
            self.base_rtt_ns = Some(self.base_rtt_ns.map_or(r, |b| b.min(r)));
            self.round_min_ns = Some(self.round_min_ns.map_or(r, |m| m.min(r)));
            self.round_samples = self.round_samples.saturating_add(1);
        }
        let frozen = self.w.rec.growth_frozen();
        self.w.rec.on_ack(s.acked_bytes, s.inflight_bytes);
        self.acked_in_round = self.acked_in_round.saturating_add(s.acked_bytes);
        if frozen {
            return;
        }
        if self.acked_in_round >= self.round_bytes {
            self.end_round(s.acked_bytes);
        } else if self.w.in_slow_start() {
            self.w.slow_start(s.acked_bytes);
        }
    }
    /// Loss and timeout are Reno's (as in the paper and Linux). The round
    /// restarts at the new window so the next decision measures it.
    fn on_loss(&mut self, _now_ns: u64, lost_bytes: u64) {
        if self.w.on_loss(lost_bytes) {
            self.restart_round();
        }
    }
    fn on_rto(&mut self, _now_ns: u64) {
        self.w.on_rto();
        self.restart_round();
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.w.cwnd)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        m.insert("cwnd_bytes", self.w.cwnd as f64);
        m.insert("diff_pkts", self.last_diff);
        if let Some(b) = self.base_rtt_ns {
            m.insert("base_rtt_us", b as f64 / 1e3);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn vegas() -> Vegas {
        let path = PathInfo { mss: MSS as u32, line_rate_bps: None, init_cwnd_pkts: 10 };
        Vegas::new(&path, 2.0, 4.0, 1.0, 3)
    }

    fn ack(rtt_us: u64) -> AckSample {
        AckSample { acked_bytes: MSS, rtt_ns: Some(rtt_us * 1000), acked_pkts: 1, ..Default::default() }
    }

    /// ACK one full round (cwnd bytes) at a fixed RTT.
    fn round(v: &mut Vegas, rtt_us: u64) {
        let r = v.rounds();
        while v.rounds() == r {
            v.on_ack(&ack(rtt_us));
        }
    }

    /// Slow start until diff > gamma, then congestion avoidance.
    fn in_ca() -> Vegas {
        let mut v = vegas();
        round(&mut v, 100); // base RTT 100 µs, diff 0: keeps slow-starting
        assert!(v.in_slow_start());
        assert_eq!(v.cwnd_bytes(), Some(20 * MSS));
        // Slow start continues per ACK inside the round (20 -> 39 packets);
        // at its end RTT 125 µs gives diff = 39 * 25/125 = 7.8 > gamma.
        round(&mut v, 125);
        assert!(!v.in_slow_start());
        assert!((v.last_diff() - 7.8).abs() < 1e-12);
        // target = floor(39*100/125)+1 = 32 packets.
        assert_eq!(v.cwnd_bytes(), Some(32 * MSS));
        v
    }

    #[test]
    fn grows_while_diff_below_alpha() {
        let mut v = in_ca();
        // RTT = base: diff = 0 < alpha: +1 packet per round.
        for k in 1..=5u64 {
            round(&mut v, 100);
            assert_eq!(v.cwnd_bytes(), Some((32 + k) * MSS));
        }
    }

    #[test]
    fn shrinks_when_diff_above_beta() {
        let mut v = in_ca();
        // cwnd 32, rtt 150: diff = 32 * 50/150 = 10.7 > beta: -1 per round.
        round(&mut v, 150);
        assert_eq!(v.cwnd_bytes(), Some(31 * MSS));
        round(&mut v, 150); // 31*50/150 = 10.3
        assert_eq!(v.cwnd_bytes(), Some(30 * MSS));
    }

    #[test]
    fn holds_between_alpha_and_beta() {
        let mut v = in_ca();
        // cwnd 32, rtt 110: diff = 32*10/110 = 2.91 in [2, 4]: hold.
        for _ in 0..5 {
            round(&mut v, 110);
            assert_eq!(v.cwnd_bytes(), Some(32 * MSS));
        }
        assert!(v.last_diff() > 2.0 && v.last_diff() < 4.0);
    }

    #[test]
    fn uses_the_round_minimum_rtt() {
        let mut v = in_ca();
        // 31 samples at 300 µs and one at 100 µs: the round's min (100) is
        // what Vegas compares, so it still grows.
        for _ in 0..31 {
            v.on_ack(&ack(300));
        }
        assert_eq!(v.cwnd_bytes(), Some(32 * MSS));
        v.on_ack(&ack(100));
        assert_eq!(v.cwnd_bytes(), Some(33 * MSS));
    }

    #[test]
    fn loss_halves_like_reno() {
        let mut v = in_ca();
        v.on_send(0, 32 * MSS);
        v.on_loss(0, MSS);
        assert_eq!(v.cwnd_bytes(), Some(16 * MSS));
        v.on_loss(0, MSS);
        assert_eq!(v.cwnd_bytes(), Some(16 * MSS));
    }
}
