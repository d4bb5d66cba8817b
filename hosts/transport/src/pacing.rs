//! Pacing accuracy: achieved vs target inter-packet gaps.
//!
//! The datapath records one sample per paced packet that was held back by
//! the pacer (so the gap before it is a pacing gap, not an idle period or a
//! window stall): the target gap the pacer scheduled and the gap actually
//! achieved between the two send calls.

#[derive(Debug, Clone, Default)]
pub struct GapStats {
    /// (target_ns, achieved_ns), up to `cap` samples.
    samples: Vec<(u32, u32)>,
    cap: usize,
    pub count: u64,
    pub sum_target_ns: u128,
    pub sum_achieved_ns: u128,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct GapSummary {
    pub samples: u64,
    pub mean_target_ns: f64,
    pub mean_achieved_ns: f64,
    /// (mean achieved - mean target) / mean target, in percent.
    pub mean_error_pct: f64,
    /// Percentiles of the per-gap relative error |achieved - target| / target, in percent.
    pub abs_err_p50_pct: f64,
    pub abs_err_p90_pct: f64,
    pub abs_err_p99_pct: f64,
    /// Percentiles of the achieved gap in ns.
    pub achieved_p1_ns: f64,
    pub achieved_p50_ns: f64,
    pub achieved_p99_ns: f64,
}

impl GapStats {
    pub fn new(cap: usize) -> Self {
        GapStats { cap, ..Default::default() }
    }

    pub fn record(&mut self, target_ns: u64, achieved_ns: u64) {
        self.count += 1;
        self.sum_target_ns += target_ns as u128;
        self.sum_achieved_ns += achieved_ns as u128;
        if self.samples.len() < self.cap {
            self.samples.push((target_ns.min(u32::MAX as u64) as u32, achieved_ns.min(u32::MAX as u64) as u32));
        }
    }

    pub fn merge(&mut self, o: &GapStats) {
        self.count += o.count;
        self.sum_target_ns += o.sum_target_ns;
        self.sum_achieved_ns += o.sum_achieved_ns;
        let room = self.cap.saturating_sub(self.samples.len());
        self.samples.extend(o.samples.iter().take(room));
    }

    pub fn summary(&self) -> GapSummary {
        if self.count == 0 {
            return GapSummary::default();
        }
        let mt = self.sum_target_ns as f64 / self.count as f64;
        let ma = self.sum_achieved_ns as f64 / self.count as f64;
        let mut err: Vec<f64> = self
            .samples
            .iter()
            .map(|&(t, a)| ((a as f64 - t as f64).abs() / (t as f64).max(1.0)) * 100.0)
            .collect();
        let mut ach: Vec<f64> = self.samples.iter().map(|&(_, a)| a as f64).collect();
        err.sort_by(|a, b| a.total_cmp(b));
        ach.sort_by(|a, b| a.total_cmp(b));
        GapSummary {
            samples: self.count,
            mean_target_ns: mt,
            mean_achieved_ns: ma,
            mean_error_pct: (ma - mt) / mt.max(1.0) * 100.0,
            abs_err_p50_pct: pct(&err, 0.50),
            abs_err_p90_pct: pct(&err, 0.90),
            abs_err_p99_pct: pct(&err, 0.99),
            achieved_p1_ns: pct(&ach, 0.01),
            achieved_p50_ns: pct(&ach, 0.50),
            achieved_p99_ns: pct(&ach, 0.99),
        }
    }
}

fn pct(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

impl GapSummary {
    pub fn to_json(&self) -> String {
        format!(
            "{{\"samples\": {}, \"mean_target_ns\": {:.1}, \"mean_achieved_ns\": {:.1}, \"mean_error_pct\": {:.3}, \"abs_err_p50_pct\": {:.3}, \"abs_err_p90_pct\": {:.3}, \"abs_err_p99_pct\": {:.3}, \"achieved_p1_ns\": {:.0}, \"achieved_p50_ns\": {:.0}, \"achieved_p99_ns\": {:.0}}}",
            self.samples,
            self.mean_target_ns,
            self.mean_achieved_ns,
            self.mean_error_pct,
            self.abs_err_p50_pct,
            self.abs_err_p90_pct,
            self.abs_err_p99_pct,
            self.achieved_p1_ns,
            self.achieved_p50_ns,
            self.achieved_p99_ns
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn summary() {
        let mut g = GapStats::new(100);
        for i in 0..100 {
            g.record(100, if i % 2 == 0 { 90 } else { 110 });
        }
        let s = g.summary();
        assert_eq!(s.samples, 100);
        assert!((s.mean_error_pct).abs() < 1e-9);
        assert!((s.abs_err_p50_pct - 10.0).abs() < 1e-9);
    }
}

/// How late a loop woke against the time it asked to (a sleep of a pacer
/// or timer): the machine's wake-up latency as the agent saw it.
#[derive(Debug, Clone, Default)]
pub struct Lateness {
    samples: Vec<u32>,
    cap: usize,
    pub count: u64,
    pub max_ns: u64,
}

impl Lateness {
    pub fn new(cap: usize) -> Self {
        Lateness { cap, ..Default::default() }
    }

    pub fn record(&mut self, late_ns: u64) {
        self.count += 1;
        self.max_ns = self.max_ns.max(late_ns);
        if self.samples.len() < self.cap {
            self.samples.push(late_ns.min(u32::MAX as u64) as u32);
        }
    }

    /// {"samples", "p50_us", "p99_us", "max_us"}
    pub fn to_json(&self) -> String {
        let mut v: Vec<f64> = self.samples.iter().map(|&x| x as f64).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        format!(
            "{{\"samples\": {}, \"p50_us\": {:.1}, \"p99_us\": {:.1}, \"max_us\": {:.1}}}",
            self.count,
            pct(&v, 0.50) / 1e3,
            pct(&v, 0.99) / 1e3,
            self.max_ns as f64 / 1e3
        )
    }
}
