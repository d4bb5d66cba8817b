//! Swift (Kumar et al., SIGCOMM 2020), Algorithm 1 with the paper's
//! target delay scaling.
//!
//! Swift keeps the delay of each ACK at a target by AIMD on a window that
//! may fall below one packet:
//!
//! ```text
//! target = base_target + hops·h + max(0, min(α/√cwnd + β_fs, fs_range))
//!          α = fs_range / (1/√fs_min_cwnd − 1/√fs_max_cwnd),  β_fs = −α/√fs_max_cwnd
//! on ACK:   retransmit_cnt = 0
//!           delay < target:  cwnd += ai·num_acked/cwnd   (cwnd ≥ 1)
//!                            cwnd += ai·num_acked        (cwnd < 1)
//!           otherwise, if can_decrease:
//!                            cwnd ×= max(1 − β·(delay − target)/delay, 1 − max_mdf)
//! on fast recovery (loss):   retransmit_cnt = 0; if can_decrease: cwnd ×= 1 − max_mdf
//! on RTO:   retransmit_cnt += 1
//!           ≥ RETX_RESET_THRESHOLD: cwnd = min_cwnd
//!           else if can_decrease:   cwnd ×= 1 − max_mdf
//! cwnd = clamp(min_cwnd, cwnd, max_cwnd);  t_last_decrease = now if cwnd fell
//! can_decrease = now − t_last_decrease ≥ rtt
//! cwnd < 1: pace one packet every rtt/cwnd
//! ```
//!
//! The window is in packets (`PathInfo.mss`), as in the paper. The delay is
//! the ACK's RTT: Swift's fabric/endpoint split needs NIC timestamps this
//! trait does not carry, so the single window here is the paper's fabric
//! window fed the whole RTT. The hop count h is the number of hop records
//! the ACK carries when it carries any, else the `hops` parameter (the paper
//! derives it from the IP TTL). Below one packet the window lets one packet
//! out and the pacing rate spaces them `rtt/cwnd` apart; at or above one
//! packet there is no pacing.
//!
//! The paper publishes the control law but not its production parameter
//! values, except the 0.001-packet floor (large-scale incast); the other defaults are
//! the values common to public re-implementations (docs/algorithms.md).

use std::collections::BTreeMap;

use crate::params::{ParamInfo, Params};
use crate::{AckSample, CcError, CongestionControl, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "base_target_us", default: "25", doc: "base_target, the target delay of a one-hop path with few flows, µs (not published; set it to the path's base RTT plus a few packets)" },
    ParamInfo { name: "h_us", default: "1", doc: "h, the per-hop target scaling, µs (not published)" },
    ParamInfo { name: "hops", default: "1", doc: "hop count for topology scaling when an ACK carries no hop records (the paper reads it from the IP TTL)" },
    ParamInfo { name: "fs_range_us", default: "125", doc: "fs_range, the extra target at fs_min_cwnd, µs (not published; 5·base_target as public re-implementations use)" },
    ParamInfo { name: "fs_min_cwnd", default: "0.1", doc: "fs_min_cwnd, packets: the window where flow scaling reaches fs_range (not published; public re-implementations: 0.1)" },
    ParamInfo { name: "fs_max_cwnd", default: "100", doc: "fs_max_cwnd, packets: the window where flow scaling reaches 0 (not published; public re-implementations: 100)" },
    ParamInfo { name: "ai", default: "1", doc: "ai, additive increment, packets per RTT (not published; public re-implementations: 1)" },
    ParamInfo { name: "beta", default: "0.8", doc: "β, multiplicative decrease constant (not published; public re-implementations: 0.8)" },
    ParamInfo { name: "max_mdf", default: "0.5", doc: "max_mdf, the largest decrease per RTT (not published; public re-implementations: 0.5)" },
    ParamInfo { name: "min_cwnd", default: "0.001", doc: "min_cwnd, packets (paper, large-scale incast: down to 0.001 packets)" },
    ParamInfo { name: "max_cwnd", default: "10000", doc: "max_cwnd, packets (not published)" },
    ParamInfo { name: "retx_reset_threshold", default: "5", doc: "RETX_RESET_THRESHOLD, consecutive RTOs that reset cwnd to min_cwnd (not published)" },
];

#[derive(Debug, Clone, PartialEq)]
pub struct SwiftParams {
    pub base_target_ns: f64,
    pub h_ns: f64,
    pub hops: u32,
    pub fs_range_ns: f64,
    pub fs_min_cwnd: f64,
    pub fs_max_cwnd: f64,
    pub ai: f64,
    pub beta: f64,
    pub max_mdf: f64,
    pub min_cwnd: f64,
    pub max_cwnd: f64,
    pub retx_reset_threshold: u32,
}

#[derive(Debug, Clone)]
pub struct Swift {
    p: SwiftParams,
    /// Flow-scaling α and β (target delay scaling).
    fs_alpha: f64,
    fs_beta: f64,
    mss: f64,
    /// Packets.
    cwnd: f64,
    retransmit_cnt: u32,
    t_last_decrease: Option<u64>,
    /// The latest RTT sample, ns.
    rtt_ns: Option<f64>,
    target_ns: f64,
    last_hops: u32,
    decreases: u64,
}

impl Swift {
    pub fn new(path: &PathInfo, p: SwiftParams) -> Self {
        let fs_alpha = p.fs_range_ns / (1.0 / p.fs_min_cwnd.sqrt() - 1.0 / p.fs_max_cwnd.sqrt());
        let fs_beta = -fs_alpha / p.fs_max_cwnd.sqrt();
        let cwnd = f64::from(path.init_cwnd_pkts.max(1)).clamp(p.min_cwnd, p.max_cwnd);
        let mut s = Swift {
            fs_alpha,
            fs_beta,
            mss: f64::from(path.mss.max(1)),
            cwnd,
            retransmit_cnt: 0,
            t_last_decrease: None,
            rtt_ns: None,
            target_ns: 0.0,
            last_hops: p.hops,
            decreases: 0,
            p,
        };
        s.target_ns = s.target_delay_ns(s.last_hops);
        s
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        let us = 1e3;
        let sp = SwiftParams {
            base_target_ns: p.f64_in("base_target_us", 0.0, 1e8)? * us,
            h_ns: p.f64_in("h_us", 0.0, 1e8)? * us,
            hops: p.u64_in("hops", 0, 255)? as u32,
            fs_range_ns: p.f64_in("fs_range_us", 0.0, 1e8)? * us,
            fs_min_cwnd: p.f64_in("fs_min_cwnd", 1e-6, 1e9)?,
            fs_max_cwnd: p.f64_in("fs_max_cwnd", 1e-6, 1e9)?,
            ai: p.f64_in("ai", 0.0, 1e6)?,
            beta: p.f64_in("beta", 0.0, 1.0)?,
            max_mdf: p.f64_in("max_mdf", 0.0, 1.0)?,
            min_cwnd: p.f64_in("min_cwnd", 1e-6, 1e9)?,
            max_cwnd: p.f64_in("max_cwnd", 1e-6, 1e9)?,
            retx_reset_threshold: p.u64_in("retx_reset_threshold", 1, 1_000_000)? as u32,
        };
        if sp.fs_min_cwnd >= sp.fs_max_cwnd {
            return Err(p.invalid("fs_min_cwnd", "must be below fs_max_cwnd"));
        }
        if sp.min_cwnd > sp.max_cwnd {
            return Err(p.invalid("min_cwnd", "must not exceed max_cwnd"));
        }
        Ok(Swift::new(path, sp))
    }

    /// Target delay scaling: base + topology scaling + flow scaling for
    /// the current window.
    pub fn target_delay_ns(&self, hops: u32) -> f64 {
        let fs = (self.fs_alpha / self.cwnd.sqrt() + self.fs_beta).clamp(0.0, self.p.fs_range_ns);
        self.p.base_target_ns + f64::from(hops) * self.p.h_ns + fs
    }

    fn can_decrease(&self, now_ns: u64) -> bool {
        match (self.t_last_decrease, self.rtt_ns) {
            (None, _) | (_, None) => true,
            (Some(t), Some(rtt)) => now_ns.saturating_sub(t) as f64 >= rtt,
        }
    }

    /// Clamp, and remember when the window last fell.
    fn settle(&mut self, prev: f64, now_ns: u64) {
        self.cwnd = self.cwnd.clamp(self.p.min_cwnd, self.p.max_cwnd);
        if self.cwnd < prev {
            self.t_last_decrease = Some(now_ns);
            self.decreases += 1;
        }
    }

    /// Window in packets.
    pub fn cwnd_pkts(&self) -> f64 {
        self.cwnd
    }
}

impl CongestionControl for Swift {
    fn name(&self) -> &'static str {
        "swift"
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.retransmit_cnt = 0;
        let Some(delay) = s.rtt_ns.filter(|&r| r > 0).map(|r| r as f64) else { return };
        self.rtt_ns = Some(delay);
        let prev = self.cwnd;
        let hops = if s.int_hops.is_empty() { self.p.hops } else { s.int_hops.len().min(255) as u32 };
        self.last_hops = hops;
        self.target_ns = self.target_delay_ns(hops);
        let num_acked = s.acked_bytes as f64 / self.mss;
        if delay < self.target_ns {
            if self.cwnd >= 1.0 {
                self.cwnd += self.p.ai * num_acked / self.cwnd;
            } else {
                self.cwnd += self.p.ai * num_acked;
            }
        } else if self.can_decrease(s.now_ns) {
            let f = (1.0 - self.p.beta * (delay - self.target_ns) / delay).max(1.0 - self.p.max_mdf);
            self.cwnd *= f;
        }
        self.settle(prev, s.now_ns);
    }
    fn on_loss(&mut self, now_ns: u64, _lost_bytes: u64) {
        self.retransmit_cnt = 0;
        let prev = self.cwnd;
        if self.can_decrease(now_ns) {
            self.cwnd *= 1.0 - self.p.max_mdf;
        }
        self.settle(prev, now_ns);
    }
    fn on_rto(&mut self, now_ns: u64) {
        self.retransmit_cnt = self.retransmit_cnt.saturating_add(1);
        let prev = self.cwnd;
        if self.retransmit_cnt >= self.p.retx_reset_threshold {
            self.cwnd = self.p.min_cwnd;
        } else if self.can_decrease(now_ns) {
            self.cwnd *= 1.0 - self.p.max_mdf;
        }
        self.settle(prev, now_ns);
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        Some((self.cwnd.max(1.0) * self.mss) as u64)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        if self.cwnd >= 1.0 {
            return None;
        }
        // One packet per rtt/cwnd; before any RTT sample, the base target
        // stands in for the RTT.
        let rtt = self.rtt_ns.unwrap_or(self.p.base_target_ns).max(1.0);
        Some(((self.cwnd * self.mss * 8.0 * 1e9 / rtt) as u64).max(1))
    }
    fn target_delay_ns(&self) -> Option<u64> {
        Some(self.target_ns as u64)
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        m.insert("cwnd_pkts", self.cwnd);
        m.insert("target_delay_us", self.target_ns / 1e3);
        m.insert("hops", f64::from(self.last_hops));
        m.insert("retransmit_cnt", f64::from(self.retransmit_cnt));
        m.insert("decreases", self.decreases as f64);
        if let Some(r) = self.rtt_ns {
            m.insert("delay_us", r / 1e3);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn params() -> SwiftParams {
        SwiftParams {
            base_target_ns: 20_000.0,
            h_ns: 2_000.0,
            hops: 2,
            fs_range_ns: 30_000.0,
            fs_min_cwnd: 0.1,
            fs_max_cwnd: 100.0,
            ai: 1.0,
            beta: 0.8,
            max_mdf: 0.5,
            min_cwnd: 0.001,
            max_cwnd: 1000.0,
            retx_reset_threshold: 5,
        }
    }

    fn swift(init: u32) -> Swift {
        Swift::new(&PathInfo { mss: MSS as u32, line_rate_bps: None, init_cwnd_pkts: init }, params())
    }

    fn ack(now: u64, rtt: u64, pkts: u64) -> AckSample {
        AckSample { now_ns: now, acked_bytes: pkts * MSS, rtt_ns: Some(rtt), acked_pkts: pkts as u32, ..Default::default() }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    /// Target delay scaling (flow-based): α = fs_range/(1/√fs_min − 1/√fs_max), β = −α/√fs_max,
    /// so the term is fs_range at fs_min_cwnd and 0 at fs_max_cwnd; plus
    /// topology scaling hops·h.
    #[test]
    fn target_delay_scaling() {
        let mut s = swift(10);
        let alpha = 30_000.0 / (1.0 / 0.1f64.sqrt() - 0.1);
        let beta = -alpha / 10.0;
        // cwnd 10, 2 hops (parameter): 20 + 2·2 + (α/√10 + β).
        assert!(close(s.target_delay_ns(2), 24_000.0 + alpha / 10f64.sqrt() + beta));
        s.cwnd = 0.1;
        assert!(close(s.target_delay_ns(0), 50_000.0), "fs_range at fs_min_cwnd");
        s.cwnd = 0.01;
        assert!(close(s.target_delay_ns(0), 50_000.0), "clamped to fs_range below it");
        s.cwnd = 100.0;
        assert!(close(s.target_delay_ns(3), 26_000.0), "no flow scaling at fs_max_cwnd");
        s.cwnd = 400.0;
        assert!(close(s.target_delay_ns(0), 20_000.0), "clamped to 0 above it");
        // The hop count comes from the ACK's hop records when it has any.
        let mut s = swift(100);
        let mut a = ack(0, 10_000, 1);
        a.int_hops = vec![crate::IntHop::default(); 4];
        s.on_ack(&a);
        assert_eq!(s.state()["hops"], 4.0);
        s.on_ack(&ack(0, 10_000, 1));
        assert_eq!(s.state()["hops"], 2.0, "else the parameter");
    }

    /// Algorithm 1, additive increase: below target, cwnd += ai·num_acked/cwnd
    /// for cwnd ≥ 1 (one ai per window of ACKs), cwnd += ai·num_acked below 1.
    #[test]
    fn additive_increase() {
        let mut s = swift(10);
        s.on_ack(&ack(0, 10_000, 1));
        assert!(close(s.cwnd_pkts(), 10.1));
        s.on_ack(&ack(0, 10_000, 2));
        assert!(close(s.cwnd_pkts(), 10.1 + 2.0 / 10.1));
        let mut s = swift(1);
        s.cwnd = 0.25;
        s.on_ack(&ack(0, 10_000, 1));
        assert!(close(s.cwnd_pkts(), 1.25));
    }

    /// Algorithm 1, multiplicative decrease: above target, cwnd ×=
    /// max(1 − β·(delay − target)/delay, 1 − max_mdf), at most once per RTT.
    #[test]
    fn multiplicative_decrease_once_per_rtt() {
        let mut s = swift(100);
        // cwnd 100: target = 20 + 2·2 + 0 = 24 µs. Delay 30 µs:
        // 1 − 0.8·6/30 = 0.84.
        s.on_ack(&ack(1_000_000, 30_000, 1));
        assert!(close(s.cwnd_pkts(), 84.0));
        // Within one RTT (30 µs) of that decrease: no further decrease.
        s.on_ack(&ack(1_020_000, 30_000, 1));
        assert!(close(s.cwnd_pkts(), 84.0));
        // One RTT later: target at cwnd 84 has a flow-scaling term.
        let t = s.target_delay_ns(2);
        s.on_ack(&ack(1_030_000, 30_000, 1));
        assert!(close(s.cwnd_pkts(), 84.0 * (1.0 - 0.8 * (30_000.0 - t) / 30_000.0)));
        // A huge delay is bounded by max_mdf. (can_decrease compares with
        // this ACK's RTT, 10 ms: the last decrease was 19 ms ago.)
        let before = s.cwnd_pkts();
        s.on_ack(&ack(20_000_000, 10_000_000, 1));
        assert!(close(s.cwnd_pkts(), before * 0.5));
    }

    /// Algorithm 1, fast recovery and RTO: (1 − max_mdf) once per RTT,
    /// and min_cwnd after RETX_RESET_THRESHOLD consecutive timeouts; an
    /// ACK resets the count.
    #[test]
    fn loss_and_timeouts() {
        let mut s = swift(64);
        s.on_ack(&ack(0, 10_000, 1)); // learn the RTT: 10 µs
        let w = s.cwnd_pkts();
        s.on_loss(1_000_000, MSS);
        assert!(close(s.cwnd_pkts(), w * 0.5));
        s.on_loss(1_005_000, MSS);
        assert!(close(s.cwnd_pkts(), w * 0.5), "once per RTT");
        s.on_rto(1_010_000);
        assert!(close(s.cwnd_pkts(), w * 0.25));
        for i in 0..3 {
            s.on_rto(2_000_000 + i * 100_000);
        }
        assert!(close(s.cwnd_pkts(), w * 0.25 / 8.0), "timeouts 2..4 halve");
        s.on_rto(3_000_000);
        assert_eq!(s.cwnd_pkts(), 0.001, "fifth consecutive timeout: min_cwnd");
        // An ACK resets the count: four more timeouts only halve.
        let mut s = swift(64);
        for i in 0..4 {
            s.on_rto(i * 1_000_000);
        }
        s.on_ack(&ack(5_000_000, 1_000_000_000, 1));
        s.on_rto(10_000_000_000);
        assert!(s.cwnd_pkts() > 0.001);
        assert_eq!(s.state()["retransmit_cnt"], 1.0);
    }

    /// Algorithm 1: cwnd is clamped to [min_cwnd, max_cwnd]; below one
    /// packet the sender paces one packet every rtt/cwnd.
    #[test]
    fn clamps_and_sub_packet_pacing() {
        let mut s = swift(1);
        assert_eq!(s.pacing_rate_bps(), None);
        assert_eq!(s.cwnd_bytes(), Some(MSS));
        s.on_ack(&ack(0, 200_000, 1));
        // target 20 + 4 + fs(1) = 24 + 30·(1 − 0.1)/(3.162 − 0.1) µs ≈ 32.8 µs;
        // delay 200 µs: factor max(1 − 0.8·(200 − t)/200, 0.5) = 0.5.
        assert!(close(s.cwnd_pkts(), 0.5));
        assert_eq!(s.cwnd_bytes(), Some(MSS), "one packet may be out");
        // One packet every 200 µs/0.5 = 400 µs: 1 000 B·8/400 µs = 20 Mb/s.
        assert_eq!(s.pacing_rate_bps(), Some(20_000_000));
        for i in 1..40 {
            s.on_ack(&ack(i * 1_000_000, 200_000, 1));
        }
        assert_eq!(s.cwnd_pkts(), 0.001, "floored at min_cwnd");
        assert!(s.pacing_rate_bps().unwrap() > 0);
        let mut s = swift(10);
        for _ in 0..100_000 {
            s.on_ack(&ack(0, 1_000, 10));
        }
        assert_eq!(s.cwnd_pkts(), 1000.0, "capped at max_cwnd");
    }
}
