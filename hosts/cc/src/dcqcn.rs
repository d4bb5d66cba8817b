//! DCQCN (Zhu et al., SIGCOMM 2015): the reaction point (RP), a
//! rate-based sender, and the notification point (NP) a receiver runs.
//!
//! The switch (congestion point) ECN-marks; the receiver's NP turns marked
//! arrivals into congestion notification packets (CNPs), at most one per
//! flow per N µs ([`NotificationPoint`]). The sender's RP keeps a current
//! rate Rc, a target rate Rt and the congestion estimate α:
//!
//! ```text
//! on CNP:         Rt = Rc;  Rc = Rc·(1 − α/2);  α = (1 − g)·α + g
//!                 reset the rate-increase timer, byte counter and both stage counts
//! every K µs without a CNP:               α = (1 − g)·α
//! every T µs (timer) or B bytes sent (byte counter): one increase event,
//!   counting T_stage or BC_stage, then
//!   fast recovery      max(T_stage, BC_stage) ≤ F:  Rc = (Rt + Rc)/2
//!   additive increase  min(T_stage, BC_stage) ≤ F:  Rt += R_AI;     Rc = (Rt + Rc)/2
//!   hyper increase     both > F, i = min − F:        Rt += i·R_HAI;  Rc = (Rt + Rc)/2
//! ```
//!
//! So the first F events after a cut are fast recovery (binary search
//! towards the rate before the cut), as in the paper. Rates never exceed
//! the line rate. Before the first CNP the flow sends at line rate and no
//! timer runs (timers start with the first CNP, as in the NIC).
//!
//! The timers are driven by the datapath's clock: every event (`on_send`,
//! `on_ack`, `on_cnp`, `on_tick`) first fires every timer that expired
//! since the previous one, in time order; `on_tick` at least every
//! millisecond bounds how late that can be. DCQCN runs on a lossless
//! (PFC) fabric: loss and timeouts leave the rate alone; the datapath
//! retransmits. It is rate-based only: `cwnd_bytes()` is `None`.

use std::collections::BTreeMap;

use crate::params::{ParamInfo, Params};
use crate::timely::line_rate_bps;
use crate::{AckSample, CcError, CongestionControl, PathInfo};

pub(crate) const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "g", default: "0.00390625", doc: "g, the gain of α (paper: 1/256)" },
    ParamInfo { name: "alpha_timer_us", default: "55", doc: "K, α decays by (1 − g) per K µs without a CNP (paper: 55 µs)" },
    ParamInfo { name: "rate_timer_us", default: "55", doc: "T, the rate-increase timer, µs (paper: 55 µs)" },
    ParamInfo { name: "byte_counter", default: "10000000", doc: "B, bytes sent per byte-counter increase event (paper: 10 MB; the authors' simulator: 300 KB)" },
    ParamInfo { name: "f", default: "5", doc: "F, fast-recovery events after a cut (paper: 5)" },
    ParamInfo { name: "rai_mbps", default: "0", doc: "R_AI, additive increase, Mbit/s; 0 = the paper's 40 Mb/s at 40 Gb/s, scaled with the line rate (line / 1000)" },
    ParamInfo { name: "rhai_mbps", default: "0", doc: "R_HAI, hyper increase step, Mbit/s; 0 = 5 × R_AI (the authors' simulator: 200 Mb/s beside the paper's 40 Mb/s)" },
    ParamInfo { name: "min_rate_mbps", default: "1", doc: "rate floor, Mbit/s (not in the paper)" },
    ParamInfo { name: "line_rate_mbps", default: "0", doc: "line rate (start and ceiling), Mbit/s; 0 = PathInfo.line_rate_bps, or 10000 if unknown" },
];

/// R_AI's default share of the line rate: the paper's 40 Mb/s at 40 Gb/s
/// (DCQCN, SIGCOMM 2015: R_AI = 40 Mb/s on its 40 Gb/s testbed).
const RAI_SHARE_OF_LINE: f64 = 40e6 / 40e9;
/// R_HAI's default multiple of R_AI: the DCQCN authors' simulator runs
/// 200 Mb/s beside the paper's R_AI of 40 Mb/s.
const RHAI_PER_RAI: f64 = 5.0;

/// Timer events fired at most per call; a longer gap (the clock jumped)
/// restarts the timers from now. After this many events α has decayed to
/// nothing and the rate has long reached the line rate.
const MAX_EVENTS: u32 = 10_000;

#[derive(Debug, Clone, PartialEq)]
pub struct DcqcnParams {
    pub g: f64,
    pub alpha_timer_ns: u64,
    pub rate_timer_ns: u64,
    pub byte_counter: u64,
    pub f: u32,
    pub rai_bps: f64,
    pub rhai_bps: f64,
    pub min_rate_bps: f64,
    pub line_rate_bps: f64,
}

/// Which rule the last increase event applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    FastRecovery,
    AdditiveIncrease,
    HyperIncrease,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Timer,
    Bytes,
}

/// The reaction point.
#[derive(Debug, Clone)]
pub struct Dcqcn {
    p: DcqcnParams,
    rc: f64,
    rt: f64,
    alpha: f64,
    timer_stage: u32,
    byte_stage: u32,
    bytes: u64,
    next_alpha_ns: Option<u64>,
    next_rate_ns: Option<u64>,
    now_ns: u64,
    phase: Option<Phase>,
    cnps: u64,
}

impl Dcqcn {
    pub fn new(p: DcqcnParams) -> Self {
        let line = p.line_rate_bps.max(1.0);
        Dcqcn {
            rc: line,
            rt: line,
            alpha: 1.0,
            timer_stage: 0,
            byte_stage: 0,
            bytes: 0,
            next_alpha_ns: None,
            next_rate_ns: None,
            now_ns: 0,
            phase: None,
            cnps: 0,
            p: DcqcnParams { line_rate_bps: line, min_rate_bps: p.min_rate_bps.clamp(1.0, line), ..p },
        }
    }

    pub(crate) fn from_params(p: &Params, path: &PathInfo) -> Result<Self, CcError> {
        let us = |name: &str| -> Result<u64, CcError> { Ok((p.f64_in(name, 1e-3, 1e9)? * 1e3).round().max(1.0) as u64) };
        let line = line_rate_bps(p, path)?;
        let mut min_rate = p.f64_in("min_rate_mbps", 0.0, 1e7)? * 1e6;
        if min_rate > line {
            if p.is_given("min_rate_mbps") {
                return Err(p.invalid("min_rate_mbps", "exceeds the line rate"));
            }
            min_rate = line;
        }
        // An increase step is a share of the line rate: the paper's absolute
        // steps (set for 40 Gb/s) would take a 1 Gb/s link from a cut back
        // to line rate within a few timer periods, far faster than its
        // feedback loop (HPCC's simulations scale them with the rate too).
        let rai_bps = match p.f64_in("rai_mbps", 0.0, 1e7)? * 1e6 {
            r if r > 0.0 => r,
            _ => line * RAI_SHARE_OF_LINE,
        };
        let rhai_bps = match p.f64_in("rhai_mbps", 0.0, 1e7)? * 1e6 {
            r if r > 0.0 => r,
            _ => rai_bps * RHAI_PER_RAI,
        };
        Ok(Dcqcn::new(DcqcnParams {
            g: p.f64_in("g", 1e-9, 1.0)?,
            alpha_timer_ns: us("alpha_timer_us")?,
            rate_timer_ns: us("rate_timer_us")?,
            byte_counter: p.u64_in("byte_counter", 1, 1 << 50)?,
            f: p.u64_in("f", 0, 1_000_000)? as u32,
            rai_bps,
            rhai_bps,
            min_rate_bps: min_rate,
            line_rate_bps: line,
        }))
    }

    pub fn rate_bps(&self) -> f64 {
        self.rc
    }
    pub fn target_rate_bps(&self) -> f64 {
        self.rt
    }
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
    pub fn last_phase(&self) -> Option<Phase> {
        self.phase
    }

    /// Fires, in time order, every timer that expired by `now_ns`.
    fn advance(&mut self, now_ns: u64) {
        if now_ns < self.now_ns {
            return; // the clock went back: nothing expires
        }
        self.now_ns = now_ns;
        let mut fired = 0;
        loop {
            let due = [self.next_alpha_ns, self.next_rate_ns].into_iter().flatten().filter(|&t| t <= now_ns).min();
            let Some(t) = due else { break };
            if fired >= MAX_EVENTS {
                self.next_alpha_ns = self.next_alpha_ns.map(|_| now_ns.saturating_add(self.p.alpha_timer_ns));
                self.next_rate_ns = self.next_rate_ns.map(|_| now_ns.saturating_add(self.p.rate_timer_ns));
                break;
            }
            fired += 1;
            if self.next_alpha_ns == Some(t) {
                // No CNP for K: α = (1 − g)·α.
                self.alpha *= 1.0 - self.p.g;
                self.next_alpha_ns = Some(t.saturating_add(self.p.alpha_timer_ns));
            } else {
                self.next_rate_ns = Some(t.saturating_add(self.p.rate_timer_ns));
                self.increase(Event::Timer);
            }
        }
    }

    /// One rate-increase event (the RP algorithm's increase rules).
    fn increase(&mut self, e: Event) {
        match e {
            Event::Timer => self.timer_stage = self.timer_stage.saturating_add(1),
            Event::Bytes => self.byte_stage = self.byte_stage.saturating_add(1),
        }
        let hi = self.timer_stage.max(self.byte_stage);
        let lo = self.timer_stage.min(self.byte_stage);
        let f = self.p.f;
        let phase = if hi <= f {
            Phase::FastRecovery
        } else if lo <= f {
            self.rt += self.p.rai_bps;
            Phase::AdditiveIncrease
        } else {
            self.rt += f64::from(lo - f) * self.p.rhai_bps;
            Phase::HyperIncrease
        };
        self.rt = self.rt.min(self.p.line_rate_bps);
        self.rc = ((self.rt + self.rc) / 2.0).clamp(self.p.min_rate_bps, self.p.line_rate_bps);
        self.phase = Some(phase);
    }
}

impl CongestionControl for Dcqcn {
    fn name(&self) -> &'static str {
        "dcqcn"
    }
    fn on_send(&mut self, now_ns: u64, bytes: u64) {
        self.advance(now_ns);
        if self.next_rate_ns.is_none() {
            return; // no CNP yet: nothing to recover from
        }
        self.bytes = self.bytes.saturating_add(bytes);
        let b = self.p.byte_counter.max(1);
        let events = self.bytes / b;
        self.bytes %= b;
        for _ in 0..events.min(u64::from(MAX_EVENTS)) {
            self.increase(Event::Bytes);
        }
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.advance(s.now_ns);
    }
    fn on_loss(&mut self, now_ns: u64, _lost_bytes: u64) {
        self.advance(now_ns);
    }
    fn on_rto(&mut self, now_ns: u64) {
        self.advance(now_ns);
    }
    fn on_tick(&mut self, now_ns: u64) {
        self.advance(now_ns);
    }
    fn on_cnp(&mut self, now_ns: u64) {
        self.advance(now_ns);
        let now_ns = now_ns.max(self.now_ns);
        self.cnps += 1;
        // The rate cut uses α as it stood; then α takes in this CNP.
        self.rt = self.rc;
        self.rc = (self.rc * (1.0 - self.alpha / 2.0)).max(self.p.min_rate_bps);
        self.alpha = (1.0 - self.p.g) * self.alpha + self.p.g;
        self.timer_stage = 0;
        self.byte_stage = 0;
        self.bytes = 0;
        self.next_alpha_ns = Some(now_ns.saturating_add(self.p.alpha_timer_ns));
        self.next_rate_ns = Some(now_ns.saturating_add(self.p.rate_timer_ns));
    }
    fn next_timer_ns(&self) -> Option<u64> {
        [self.next_alpha_ns, self.next_rate_ns].into_iter().flatten().min()
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        None
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        Some((self.rc as u64).max(1))
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        m.insert("rate_mbps", self.rc / 1e6);
        m.insert("target_rate_mbps", self.rt / 1e6);
        m.insert("alpha", self.alpha);
        m.insert("timer_stage", f64::from(self.timer_stage));
        m.insert("byte_stage", f64::from(self.byte_stage));
        m.insert("cnps", self.cnps as f64);
        m
    }
}

/// DCQCN's notification point for one flow, at the receiver (the NP
/// algorithm): a CE-marked arrival produces a CNP unless this flow was
/// sent one in the last `interval` (the paper's N = 50 µs). Pure: the
/// receiver feeds arrivals with its own clock and sends the CNPs.
#[derive(Debug, Clone, PartialEq)]
pub struct NotificationPoint {
    interval_ns: u64,
    last_cnp_ns: Option<u64>,
    cnps: u64,
}

impl NotificationPoint {
    /// The paper's N: 50 µs.
    pub const DEFAULT_INTERVAL_NS: u64 = 50_000;

    pub fn new(interval_ns: u64) -> Self {
        NotificationPoint { interval_ns, last_cnp_ns: None, cnps: 0 }
    }

    /// A data packet of this flow arrived at `now_ns`, CE-marked or not.
    /// True when the receiver must send a CNP for it now. A clock that
    /// went back counts as a new interval.
    pub fn on_arrival(&mut self, now_ns: u64, ce: bool) -> bool {
        if !ce {
            return false;
        }
        let due = match self.last_cnp_ns {
            None => true,
            Some(t) => now_ns < t || now_ns - t >= self.interval_ns,
        };
        if due {
            self.last_cnp_ns = Some(now_ns);
            self.cnps += 1;
        }
        due
    }

    /// CNPs sent so far.
    pub fn cnps(&self) -> u64 {
        self.cnps
    }
}

impl Default for NotificationPoint {
    fn default() -> Self {
        NotificationPoint::new(Self::DEFAULT_INTERVAL_NS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: f64 = 1.0 / 256.0;
    const LINE: f64 = 40e9;

    fn params() -> DcqcnParams {
        DcqcnParams {
            g: G,
            alpha_timer_ns: 55_000,
            rate_timer_ns: 55_000,
            byte_counter: 10_000_000,
            f: 5,
            rai_bps: 40e6,
            rhai_bps: 200e6,
            min_rate_bps: 1e6,
            line_rate_bps: LINE,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    /// RP algorithm: starts at line rate with α = 1 and no timers running.
    #[test]
    fn starts_at_line_rate() {
        let mut d = Dcqcn::new(params());
        assert_eq!(d.pacing_rate_bps(), Some(40_000_000_000));
        assert_eq!(d.cwnd_bytes(), None);
        d.on_tick(10_000_000);
        d.on_send(10_000_000, 100_000_000);
        assert_eq!(d.rate_bps(), LINE, "no CNP, nothing to increase from");
        assert_eq!(d.alpha(), 1.0);
    }

    /// RP algorithm, on CNP: Rt = Rc, Rc = Rc·(1 − α/2), α = (1 − g)·α + g.
    #[test]
    fn cnp_cuts_with_alpha() {
        let mut d = Dcqcn::new(params());
        d.on_cnp(0);
        assert_eq!(d.target_rate_bps(), LINE);
        assert!(close(d.rate_bps(), LINE / 2.0), "α = 1 halves");
        assert!(close(d.alpha(), 1.0), "(1 − g)·1 + g = 1");
        d.on_cnp(10_000);
        assert_eq!(d.target_rate_bps(), LINE / 2.0);
        assert!(close(d.rate_bps(), LINE / 4.0));
        assert_eq!(d.state()["cnps"], 2.0);
    }

    /// RP algorithm: α decays by (1 − g) every K without a CNP; a CNP restarts
    /// the K timer.
    #[test]
    fn alpha_decays_per_timer_period() {
        let mut d = Dcqcn::new(params());
        d.on_cnp(0);
        d.on_tick(54_999);
        assert_eq!(d.alpha(), 1.0);
        d.on_tick(55_000);
        assert!(close(d.alpha(), 1.0 - G));
        d.on_tick(1_000_000); // 18 periods in all by 990 µs
        assert!(close(d.alpha(), (1.0 - G).powi(18)));
        // A CNP at 1 ms: α = (1 − g)·α + g, and the next decay is at 1.055 ms.
        d.on_cnp(1_000_000);
        let a = (1.0 - G) * (1.0 - G).powi(18) + G;
        assert!(close(d.alpha(), a));
        d.on_tick(1_054_999);
        assert!(close(d.alpha(), a));
        d.on_tick(1_055_000);
        assert!(close(d.alpha(), a * (1.0 - G)));
    }

    /// RP algorithm: F fast-recovery events, then additive increase, then (both
    /// counters past F) hyper increase; each ends with Rc = (Rt + Rc)/2.
    #[test]
    fn fast_recovery_then_additive_then_hyper() {
        let mut d = Dcqcn::new(DcqcnParams { byte_counter: 1_000_000, ..params() });
        d.on_cnp(0);
        let rt = LINE;
        let mut rc = LINE / 2.0;
        // Timer events 1..5: fast recovery towards Rt.
        for i in 1..=5u64 {
            d.on_tick(i * 55_000);
            rc = (rt + rc) / 2.0;
            assert_eq!(d.last_phase(), Some(Phase::FastRecovery));
            assert!(close(d.rate_bps(), rc));
            assert_eq!(d.target_rate_bps(), rt);
        }
        // Event 6: additive increase — but Rt is at the line rate already;
        // use a lower start to see Rt move.
        let mut d = Dcqcn::new(DcqcnParams { byte_counter: 1_000_000, ..params() });
        d.on_cnp(0); // Rc 20 G
        d.on_cnp(1); // Rt 20 G, Rc 10 G
        let mut rt = LINE / 2.0;
        let mut rc = LINE / 4.0;
        for i in 1..=5u64 {
            d.on_tick(1 + i * 55_000);
            rc = (rt + rc) / 2.0;
        }
        assert!(close(d.rate_bps(), rc));
        d.on_tick(1 + 6 * 55_000);
        rt += 40e6;
        rc = (rt + rc) / 2.0;
        assert_eq!(d.last_phase(), Some(Phase::AdditiveIncrease));
        assert!(close(d.target_rate_bps(), rt));
        assert!(close(d.rate_bps(), rc));
        // Byte counter events 1..6 (1 MB each): BC ≤ F keeps additive
        // increase (T = 6 > F), BC = 6 > F with T = 6: hyper, i = 1.
        for k in 1..=5 {
            d.on_send(1 + 6 * 55_000, 1_000_000);
            rt += 40e6;
            rc = (rt + rc) / 2.0;
            assert_eq!(d.last_phase(), Some(Phase::AdditiveIncrease), "byte event {k}");
        }
        d.on_send(1 + 6 * 55_000, 1_000_000);
        rt += 200e6;
        rc = (rt + rc) / 2.0;
        assert_eq!(d.last_phase(), Some(Phase::HyperIncrease));
        assert!(close(d.target_rate_bps(), rt));
        assert!(close(d.rate_bps(), rc));
        // Timer event 7 with BC = 6: i = min(7, 6) − 5 = 1; then a byte
        // event with T = 7, BC = 7: i = 2.
        d.on_tick(1 + 7 * 55_000);
        rt += 200e6;
        rc = (rt + rc) / 2.0;
        d.on_send(1 + 7 * 55_000, 1_000_000);
        rt += 2.0 * 200e6;
        rc = (rt + rc) / 2.0;
        assert!(close(d.target_rate_bps(), rt));
        assert!(close(d.rate_bps(), rc));
        // A CNP resets both counts: back to fast recovery.
        d.on_cnp(1 + 8 * 55_000);
        d.on_tick(1 + 9 * 55_000);
        assert_eq!(d.last_phase(), Some(Phase::FastRecovery));
        assert_eq!(d.state()["timer_stage"], 1.0);
        assert_eq!(d.state()["byte_stage"], 0.0);
    }

    /// RP algorithm (DCQCN §3.1, Fig. 5: the α timer K and the rate-increase
    /// timer T run from the first CNP): the datapath is told when the next
    /// one is due, so the rate a timer raises reaches the pacer then (a
    /// NIC's rate limiter takes it at once), not at the next periodic tick.
    #[test]
    fn the_next_timer_is_told() {
        let mut d = Dcqcn::new(params());
        assert_eq!(d.next_timer_ns(), None, "no CNP, no timer");
        d.on_cnp(1_000);
        assert_eq!(d.next_timer_ns(), Some(56_000), "K = T = 55 µs after the CNP");
        let rc = d.rate_bps();
        d.on_tick(56_000);
        assert!(d.rate_bps() > rc, "fast recovery at T");
        assert_eq!(d.next_timer_ns(), Some(111_000));
        let mut d = Dcqcn::new(DcqcnParams { alpha_timer_ns: 20_000, ..params() });
        d.on_cnp(0);
        assert_eq!(d.next_timer_ns(), Some(20_000), "the earlier of the two");
    }

    /// Rates stay within [min_rate, line rate]; huge clock jumps and a
    /// clock going back are survived.
    #[test]
    fn bounds_and_clock_jumps() {
        let mut d = Dcqcn::new(params());
        for i in 0..2000 {
            d.on_cnp(i * 50_000);
        }
        assert_eq!(d.rate_bps(), 1e6, "floored");
        // 10 000 timer events (half of them α's) and then a restart.
        d.on_tick(u64::MAX - 1);
        assert!(close(d.rate_bps(), LINE), "recovered to the line rate");
        assert!(d.target_rate_bps() <= LINE && d.rate_bps() <= LINE);
        assert!(d.alpha() < 1e-6);
        d.on_tick(5);
        d.on_send(5, u64::MAX);
        assert!(d.rate_bps() <= LINE && close(d.rate_bps(), LINE));
    }

    /// Increase steps by default are shares of the line rate: R_AI the
    /// paper's 40 Mb/s per 40 Gb/s, R_HAI five R_AI (the authors'
    /// simulator's 200 Mb/s); given values are taken as they are.
    #[test]
    fn increase_steps_scale_with_the_line_rate() {
        let at = |line: f64, given: &[(&str, &str)]| {
            let g: Vec<(String, String)> = given.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
            let p = Params::new("dcqcn", PARAMS, &g).unwrap();
            let path = PathInfo { mss: 1000, line_rate_bps: Some(line as u64), init_cwnd_pkts: 10 };
            Dcqcn::from_params(&p, &path).unwrap().p
        };
        let p = at(40e9, &[]);
        assert!(close(p.rai_bps, 40e6) && close(p.rhai_bps, 200e6));
        let p = at(200e6, &[]);
        assert!(close(p.rai_bps, 200e3) && close(p.rhai_bps, 1e6));
        let p = at(25e9, &[("rai_mbps", "5"), ("rhai_mbps", "50")]);
        assert!(close(p.rai_bps, 5e6) && close(p.rhai_bps, 50e6));
    }

    /// NP algorithm: a CE-marked arrival sends a CNP unless one went out for
    /// this flow in the last N = 50 µs; unmarked arrivals never do.
    #[test]
    fn notification_point_paces_cnps() {
        let mut np = NotificationPoint::default();
        assert!(!np.on_arrival(0, false));
        assert!(np.on_arrival(1_000, true));
        assert!(!np.on_arrival(2_000, true));
        assert!(!np.on_arrival(50_999, true));
        assert!(np.on_arrival(51_000, true), "50 µs after the last CNP");
        assert!(!np.on_arrival(60_000, true));
        assert!(!np.on_arrival(200_000, false));
        assert!(np.on_arrival(200_001, true));
        assert!(np.on_arrival(100, true), "a clock that went back starts afresh");
        assert_eq!(np.cnps(), 4);
        let mut np = NotificationPoint::new(10_000);
        assert!(np.on_arrival(0, true));
        assert!(np.on_arrival(10_000, true));
    }
}
