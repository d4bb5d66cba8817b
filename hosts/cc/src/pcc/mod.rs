//! PCC: Performance-oriented Congestion Control.
//!
//! A PCC sender runs a sequence of monitor intervals (MIs), each at one
//! rate, scores each by a utility function of what it measured, and moves
//! its rate toward higher utility. The parts, as in PCC-Uspace:
//! * [`monitor`]: MIs and what each measured (per-packet accounting);
//! * [`utility`]: the utility functions (Allegro's, Vivace's);
//! * [`control`]: the rate controller both share (start-up, randomised
//!   trials, moving), with the variant's moving rule as a [`Mover`];
//! * [`sender`]: the three put together as a [`CongestionControl`];
//! * [`allegro`], [`vivace`]: the two variants' movers and parameters.
//!
//! [`CongestionControl`]: crate::CongestionControl

pub mod allegro;
pub mod control;
pub mod monitor;
pub mod sender;
pub mod utility;
pub mod vivace;
pub mod vivace_nsdi;

pub use control::{Controller, Move, Mover, Rct, RctOutcome, Rng};
pub use sender::Pcc;

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
        let min_pkts = p.f64_in("mi_min_pkts", 0.0, 1e6)?;
        let max_pkts = p.f64_in("mi_max_pkts", 1.0, 1e7)?;
        if max_pkts < min_pkts {
            return Err(p.invalid("mi_max_pkts", "must be >= mi_min_pkts"));
        }
        let timing = monitor::MiTiming {
            rtt_mult: p.f64_in("mi_rtt_mult", 0.1, 100.0)?,
            min_pkts,
            max_pkts,
            min_rtt_samples: p.u64_in("mi_min_rtt_samples", 0, 1000)? as u32,
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
            ParamInfo { name: "mi_rtt_mult", default: "1", doc: "planned monitor interval length in smoothed RTTs (PCC-Uspace: 1)" },
            ParamInfo { name: "mi_min_pkts", default: "10", doc: "monitor interval lasts at least this many packets at its rate (PCC-Uspace NSDI'18: 10)" },
            ParamInfo { name: "mi_max_pkts", default: "3000", doc: "planned monitor interval lasts at most this many packets at its rate (PCC-Uspace NSDI'18: 3000)" },
            ParamInfo { name: "mi_min_rtt_samples", default: "4", doc: "a monitor interval keeps sending until it holds this many RTT samples of its own (PCC-Uspace: 4)" },
            ParamInfo { name: "init_rtt_us", default: "10000", doc: "RTT assumed before the first sample, µs" },
            ParamInfo { name: "init_rate_mbps", default: "0", doc: "starting rate, Mbit/s; 0 = 2 MSS per init_rtt (paper)" },
            ParamInfo { name: "min_rate_mbps", default: "0.5", doc: "rate floor, Mbit/s (PCC-Uspace kMinSendingRate: 500 kbit/s); a trial at the floor that cannot decide starts up again from it" },
            ParamInfo { name: "max_rate_mbps", default: "0", doc: "rate ceiling, Mbit/s; 0 = PathInfo.line_rate_bps, else unbounded" },
            ParamInfo { name: "rct_pairs", default: "2", doc: "pairs of MIs per randomised controlled trial (paper: 2)" },
            ParamInfo { name: "seed", default: "1", doc: "seed of the internal PRNG that orders each trial pair" },
        ]
    };
}
pub(crate) use pcc_param_table;
