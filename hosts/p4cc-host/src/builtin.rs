//! Datapath-provided controllers for benchmarks and calibration (not
//! congestion controls): `fixed-rate` paces at a constant rate with no
//! window, `fixed-window` keeps a constant window.

use cc::{AckSample, CongestionControl};

pub struct FixedRate {
    bps: u64,
}
pub struct FixedWindow {
    bytes: u64,
}

impl CongestionControl for FixedRate {
    fn name(&self) -> &'static str {
        "fixed-rate"
    }
    fn on_ack(&mut self, _: &AckSample) {}
    fn on_loss(&mut self, _: u64, _: u64) {}
    fn on_rto(&mut self, _: u64) {}
    fn cwnd_bytes(&self) -> Option<u64> {
        None
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        Some(self.bps)
    }
}

impl CongestionControl for FixedWindow {
    fn name(&self) -> &'static str {
        "fixed-window"
    }
    fn on_ack(&mut self, _: &AckSample) {}
    fn on_loss(&mut self, _: u64, _: u64) {}
    fn on_rto(&mut self, _: u64) {}
    fn cwnd_bytes(&self) -> Option<u64> {
        Some(self.bytes)
    }
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }
}

pub const NAMES: &[(&str, &str, &str)] = &[
    ("fixed-rate", "datapath built-in: constant pacing rate, no window (benchmarks)", "rate_mbps (default 100)"),
    ("fixed-window", "datapath built-in: constant window, no pacing (benchmarks)", "cwnd_pkts (default 100)"),
];

fn num(params: &[(String, String)], key: &str, default: f64, algo: &str) -> Result<f64, String> {
    let mut v = default;
    for (k, val) in params {
        if k != key {
            return Err(format!("{algo}: unknown parameter '{k}' (known: {key})"));
        }
        v = val.trim().parse::<f64>().map_err(|_| format!("{algo}: {key} = '{val}' is not a number"))?;
        if v.is_nan() || v <= 0.0 || !v.is_finite() {
            return Err(format!("{algo}: {key} must be > 0"));
        }
    }
    Ok(v)
}

pub fn build(name: &str, params: &[(String, String)], mss: u64) -> Option<Result<Box<dyn CongestionControl>, String>> {
    match name {
        "fixed-rate" => Some(
            num(params, "rate_mbps", 100.0, name).map(|r| Box::new(FixedRate { bps: (r * 1e6) as u64 }) as Box<dyn CongestionControl>),
        ),
        "fixed-window" => Some(
            num(params, "cwnd_pkts", 100.0, name)
                .map(|w| Box::new(FixedWindow { bytes: (w * mss as f64) as u64 }) as Box<dyn CongestionControl>),
        ),
        _ => None,
    }
}
