//! PCC: Performance-oriented Congestion Control.
//!
//! A PCC sender runs a sequence of monitor intervals (MIs), each at one
//! rate, scores each by a utility function of what it measured, and moves
//! its rate toward higher utility. The MI bookkeeping ([`monitor`]) and the
//! randomised controlled trial ([`Rct`]) are shared; the two rate
//! controllers differ in utility and in how they move:
//! * [`allegro`]: PCC (NSDI 2015), loss-based utility, fixed-size steps.
//! * [`vivace`]: PCC Vivace (NSDI 2018), latency-aware utility, gradient
//!   ascent.

pub mod allegro;
pub mod monitor;
pub mod vivace;

use std::collections::BTreeMap;

use crate::{AckSample, CongestionControl};
use monitor::{MiStats, Monitor};

/// xorshift64* (Marsaglia/Vigna): deterministic per seed, no dependency.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        // A zero state would stay zero forever.
        Rng(if seed == 0 { 0x9E37_79B9_7F4A_7C15 } else { seed })
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn coin(&mut self) -> bool {
        self.next_u64() >> 63 == 1
    }
}

/// A randomised controlled trial (PCC, NSDI 2015): `pairs` pairs of MIs, one
/// at `base·(1+ε)` and one at `base·(1−ε)`, the order within each pair
/// random so that a change in the network during one MI is not mistaken
/// for the effect of the rate.
#[derive(Debug, Clone)]
pub struct Rct {
    pub base: f64,
    pub eps: f64,
    /// +1 / −1 per trial, in sending order.
    plan: Vec<f64>,
    ids: Vec<Option<u64>>,
    utils: Vec<Option<f64>>,
    /// A trial MI came back without feedback: the RCT cannot conclude.
    spoiled: bool,
}

/// The verdict of a finished RCT.
#[derive(Debug, Clone, PartialEq)]
pub struct RctOutcome {
    /// (utility at base(1+ε), utility at base(1−ε)) for each pair.
    pub pairs: Vec<(f64, f64)>,
}

impl RctOutcome {
    /// +1 if every pair prefers the higher rate, −1 if every pair prefers
    /// the lower one, None if the pairs disagree or tie.
    pub fn agreed_direction(&self) -> Option<f64> {
        if self.pairs.iter().all(|(up, down)| up > down) {
            Some(1.0)
        } else if self.pairs.iter().all(|(up, down)| up < down) {
            Some(-1.0)
        } else {
            None
        }
    }
}

impl Rct {
    pub fn new(base: f64, eps: f64, pairs: usize, rng: &mut Rng) -> Self {
        let mut plan = Vec::with_capacity(2 * pairs);
        for _ in 0..pairs {
            if rng.coin() {
                plan.extend([1.0, -1.0]);
            } else {
                plan.extend([-1.0, 1.0]);
            }
        }
        let n = plan.len();
        Rct { base, eps, plan, ids: vec![None; n], utils: vec![None; n], spoiled: false }
    }

    /// Assigns the next planned trial to MI `id`; None once all are sent.
    pub fn next_trial(&mut self, id: u64) -> Option<f64> {
        let i = self.ids.iter().position(Option::is_none)?;
        self.ids[i] = Some(id);
        Some(self.base * (1.0 + self.plan[i] * self.eps))
    }

    /// Records a trial's utility (None = no feedback). False if `id` is not
    /// one of this trial's MIs.
    pub fn record(&mut self, id: u64, utility: Option<f64>) -> bool {
        match self.ids.iter().position(|x| *x == Some(id)) {
            Some(i) => {
                match utility {
                    Some(u) => self.utils[i] = Some(u),
                    None => self.spoiled = true,
                }
                true
            }
            None => false,
        }
    }

    pub fn spoiled(&self) -> bool {
        self.spoiled
    }

    /// The outcome once every trial has a utility.
    pub fn outcome(&self) -> Option<RctOutcome> {
        if self.spoiled {
            return None;
        }
        let mut pairs = Vec::with_capacity(self.plan.len() / 2);
        for (signs, utils) in self.plan.chunks(2).zip(self.utils.chunks(2)) {
            let (a, b) = match utils {
                [Some(a), Some(b)] => (*a, *b),
                _ => return None,
            };
            pairs.push(if signs[0] > 0.0 { (a, b) } else { (b, a) });
        }
        Some(RctOutcome { pairs })
    }

    /// Sending order of the trial signs (for tests and logs).
    pub fn plan(&self) -> &[f64] {
        &self.plan
    }
}

/// PCC's starting state (both papers): double the rate every MI, like slow
/// start, until an MI's utility is lower than the previous one's; then fall
/// back to the previous (better) rate.
#[derive(Debug, Clone, Default)]
pub struct Startup {
    prev: Option<(f64, f64)>,
    started: bool,
}

impl Startup {
    /// Rate for the next MI given the current one.
    pub fn next_rate(&mut self, current: f64) -> f64 {
        if self.started {
            current * 2.0
        } else {
            self.started = true;
            current
        }
    }
    /// Some(rate to fall back to) once utility drops.
    pub fn on_utility(&mut self, rate: f64, utility: f64) -> Option<f64> {
        match self.prev {
            Some((r, u)) if utility < u => Some(r),
            _ => {
                self.prev = Some((rate, utility));
                None
            }
        }
    }
}

/// Which phase of the controller planned an MI. Controllers bump `gen`
/// whenever they change plans; results of MIs planned under an older
/// generation (already in flight when the plan changed) are ignored.
#[derive(Debug, Clone)]
pub struct Tags<T> {
    map: BTreeMap<u64, (u64, T)>,
    gen: u64,
}

impl<T> Default for Tags<T> {
    fn default() -> Self {
        Tags { map: BTreeMap::new(), gen: 0 }
    }
}

impl<T> Tags<T> {
    pub fn insert(&mut self, id: u64, tag: T) {
        self.map.insert(id, (self.gen, tag));
    }
    /// The tag of MI `id` if it belongs to the current plan. Results come
    /// back in MI order, so tags of older MIs are dropped too.
    pub fn take(&mut self, id: u64) -> Option<T> {
        let newer = self.map.split_off(&id.saturating_add(1));
        let mine = self.map.remove(&id);
        self.map = newer;
        match mine {
            Some((g, t)) if g == self.gen => Some(t),
            _ => None,
        }
    }
    pub fn bump(&mut self) {
        self.gen += 1;
    }
}

/// Parameters both PCC variants share.
#[derive(Debug, Clone, PartialEq)]
pub struct CommonParams {
    pub timing: monitor::MiTiming,
    pub init_rate_bps: f64,
    pub min_rate_bps: f64,
    pub max_rate_bps: f64,
    pub pairs: usize,
    pub seed: u64,
}

impl CommonParams {
    /// Bounds a rate; a NaN (from degenerate input) becomes the floor
    /// rather than poisoning every later decision.
    pub fn clamp(&self, rate: f64) -> f64 {
        if rate.is_nan() {
            self.min_rate_bps
        } else {
            rate.clamp(self.min_rate_bps, self.max_rate_bps)
        }
    }

    pub(crate) fn from_params(p: &crate::params::Params, path: &crate::PathInfo) -> Result<Self, crate::CcError> {
        let mss = f64::from(path.mss.max(1));
        let init_rtt_ns = p.f64_in("init_rtt_us", 1.0, 1e9)? * 1e3;
        let timing = monitor::MiTiming {
            rtt_mult: p.f64_in("mi_rtt_mult", 0.1, 100.0)?,
            min_pkts: p.f64_in("mi_min_pkts", 0.0, 1e6)?,
            init_rtt_ns,
            mss,
        };
        let mut min_rate_bps = p.f64_in("min_rate_mbps", 1e-6, 1e7)? * 1e6;
        let max_rate_bps = match p.f64_in("max_rate_mbps", 0.0, 1e7)? {
            x if x > 0.0 => x * 1e6,
            _ => path.line_rate_bps.filter(|&b| b > 0).map_or(1e13, |b| b as f64),
        };
        if min_rate_bps > max_rate_bps {
            // A default floor above a slow line gives way; a floor the user
            // asked for is a contradiction worth reporting.
            if p.is_given("min_rate_mbps") {
                return Err(p.invalid("min_rate_mbps", "exceeds the maximum rate"));
            }
            min_rate_bps = max_rate_bps;
        }
        let init_rate_bps = match p.f64_in("init_rate_mbps", 0.0, 1e7)? {
            x if x > 0.0 => x * 1e6,
            // Both papers start at 2 MSS per RTT.
            _ => 2.0 * mss * 8.0 / (init_rtt_ns / 1e9),
        };
        Ok(CommonParams {
            timing,
            init_rate_bps: init_rate_bps.clamp(min_rate_bps, max_rate_bps),
            min_rate_bps,
            max_rate_bps,
            pairs: p.u64_in("rct_pairs", 1, 16)? as usize,
            seed: p.u64_in("seed", 0, u64::MAX)?,
        })
    }
}

/// A PCC parameter table: the variant's own specs followed by the shared
/// ones.
macro_rules! pcc_param_table {
    ($($own:expr),* $(,)?) => {
        &[
            $($own,)*
            ParamInfo { name: "mi_rtt_mult", default: "1.5", doc: "monitor interval length in smoothed RTTs (PCC reference implementation: 1.5)" },
            ParamInfo { name: "mi_min_pkts", default: "20", doc: "monitor interval lasts at least this many packets at its rate (reference implementation: 20)" },
            ParamInfo { name: "init_rtt_us", default: "10000", doc: "RTT assumed before the first sample, µs" },
            ParamInfo { name: "init_rate_mbps", default: "0", doc: "starting rate, Mbit/s; 0 = 2 MSS per init_rtt (paper)" },
            ParamInfo { name: "min_rate_mbps", default: "0.1", doc: "rate floor, Mbit/s (not in the papers)" },
            ParamInfo { name: "max_rate_mbps", default: "0", doc: "rate ceiling, Mbit/s; 0 = PathInfo.line_rate_bps, else unbounded" },
            ParamInfo { name: "rct_pairs", default: "2", doc: "pairs of MIs per randomised controlled trial (paper: 2)" },
            ParamInfo { name: "seed", default: "1", doc: "seed of the internal PRNG that orders each trial pair" },
        ]
    };
}
pub(crate) use pcc_param_table;

/// A PCC rate controller: chooses each MI's rate and learns from results.
pub trait RateControl: Send {
    fn name(&self) -> &'static str;
    /// MI `id` starts now; return its rate in bits/s.
    fn next_rate(&mut self, id: u64) -> f64;
    /// The rate the controller currently aims at (used before any MI).
    fn target_rate(&self) -> f64;
    /// Feedback of an earlier MI is complete.
    fn on_result(&mut self, stats: &MiStats);
    fn export(&self, out: &mut BTreeMap<&'static str, f64>);
}

/// Adapts a [`RateControl`] and a [`Monitor`] to [`CongestionControl`].
#[derive(Debug, Clone)]
pub struct Pcc<C> {
    ctl: C,
    mon: Monitor,
}

impl<C: RateControl> Pcc<C> {
    pub fn new(ctl: C, mon: Monitor) -> Self {
        Pcc { ctl, mon }
    }
    pub fn controller(&self) -> &C {
        &self.ctl
    }

    /// Close MIs whose feedback is in, then start a new MI if due. Results
    /// go first so the new MI's rate uses them.
    fn advance(&mut self, now_ns: u64) {
        for st in self.mon.take_finished(now_ns) {
            self.ctl.on_result(&st);
        }
        if self.mon.due(now_ns) {
            let rate = self.ctl.next_rate(self.mon.next_id());
            self.mon.open(now_ns, rate);
        }
    }
}

impl<C: RateControl> CongestionControl for Pcc<C> {
    fn name(&self) -> &'static str {
        self.ctl.name()
    }
    fn on_send(&mut self, now_ns: u64, _bytes: u64) {
        self.advance(now_ns);
    }
    fn on_ack(&mut self, s: &AckSample) {
        self.mon.on_ack(s);
        self.advance(s.now_ns);
    }
    fn on_loss(&mut self, now_ns: u64, lost_bytes: u64) {
        self.mon.on_loss(now_ns, lost_bytes);
        self.advance(now_ns);
    }
    /// Losses behind a timeout arrive through `on_loss`; the timeout itself
    /// changes nothing in PCC's model.
    fn on_rto(&mut self, now_ns: u64) {
        self.advance(now_ns);
    }
    fn on_tick(&mut self, now_ns: u64) {
        self.advance(now_ns);
    }
    fn cwnd_bytes(&self) -> Option<u64> {
        None
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        // Before the first event there is no MI yet: report the rate the
        // first MI will use, so a datapath that waits for a rate before its
        // first send does not wait forever.
        let r = self.mon.current_rate().unwrap_or_else(|| self.ctl.target_rate());
        Some(r.max(0.0) as u64)
    }
    fn state(&self) -> BTreeMap<&'static str, f64> {
        let mut m = BTreeMap::new();
        if let Some(r) = self.mon.current_rate() {
            m.insert("mi_rate_mbps", r / 1e6);
        }
        m.insert("srtt_us", self.mon.srtt_ns() / 1e3);
        self.ctl.export(&mut m);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rng_is_deterministic_and_mixes() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let xs: Vec<u64> = (0..8).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..8).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        let mut c = Rng::new(7);
        let heads = (0..1000).filter(|_| c.coin()).count();
        assert!((400..600).contains(&heads), "{heads}");
    }

    #[test]
    fn rct_pairs_are_randomised_and_scored_by_sign() {
        let mut rng = Rng::new(1);
        let plans: Vec<Vec<f64>> = (0..16).map(|_| Rct::new(100.0, 0.01, 2, &mut rng).plan().to_vec()).collect();
        assert!(plans.iter().any(|p| p[0] > 0.0) && plans.iter().any(|p| p[0] < 0.0), "both orders occur");
        for p in &plans {
            assert_eq!(p[0] + p[1], 0.0);
            assert_eq!(p[2] + p[3], 0.0);
        }
        let mut r = Rct::new(100.0, 0.01, 2, &mut rng);
        let rates: Vec<f64> = (0..4).map(|id| r.next_trial(id).unwrap()).collect();
        assert_eq!(r.next_trial(4), None);
        for (id, rate) in rates.iter().enumerate() {
            // Utility equal to the rate: the higher rate always wins.
            assert!(r.record(id as u64, Some(*rate)));
        }
        assert!(!r.record(99, Some(0.0)));
        let o = r.outcome().unwrap();
        assert_eq!(o.pairs, vec![(101.0, 99.0), (101.0, 99.0)]);
        assert_eq!(o.agreed_direction(), Some(1.0));
        let split = RctOutcome { pairs: vec![(2.0, 1.0), (1.0, 2.0)] };
        assert_eq!(split.agreed_direction(), None);
    }
}
