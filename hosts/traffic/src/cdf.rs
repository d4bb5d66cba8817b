//! Empirical flow-size distributions: a table of (size, cumulative share)
//! points, sampled by inverse transform with linear interpolation between
//! the points (as the HPCC authors' traffic generator does).
//!
//! The tables p4cc ships are data files with their sources in their
//! header comments (`hosts/traffic/cdf/*.txt`), compiled into the binary
//! so the namespace lab and the simulator draw from the same table:
//! `websearch` (DCTCP, SIGCOMM 2010), `fb_hadoop` (Roy et al., SIGCOMM
//! 2015) and `alistorage` (Alibaba storage, from the HPCC repository).
//! A path (anything with a `/`, or ending `.txt`) reads a file of the same
//! format instead.
//!
//! Format: one point per line, `SIZE_BYTES CUMULATIVE_PERCENT`, sizes
//! strictly increasing, shares non-decreasing from 0 (or above: that share
//! of flows has exactly the first size) to 100; `#` starts a comment.

use crate::rng::Rng;

/// The built-in tables: (name, file text).
pub const BUILTIN: &[(&str, &str)] = &[
    ("websearch", include_str!("../cdf/websearch.txt")),
    ("fb_hadoop", include_str!("../cdf/fb_hadoop.txt")),
    ("alistorage", include_str!("../cdf/alistorage.txt")),
];

#[derive(Debug, Clone, PartialEq)]
pub struct EmpiricalCdf {
    pub name: String,
    /// (size in bytes, cumulative share in percent), as in the file.
    pub points: Vec<(f64, f64)>,
}

impl EmpiricalCdf {
    /// A table from its text (`name` is for messages).
    pub fn parse(name: &str, text: &str) -> Result<EmpiricalCdf, String> {
        let mut points: Vec<(f64, f64)> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = || format!("{name} line {}: expected 'SIZE_BYTES CUMULATIVE_PERCENT', got '{raw}'", i + 1);
            let mut it = line.split_whitespace();
            let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else { return Err(bad()) };
            let x: f64 = a.parse().map_err(|_| bad())?;
            let y: f64 = b.parse().map_err(|_| bad())?;
            if !(x >= 0.0 && x.is_finite() && (0.0..=100.0).contains(&y)) {
                return Err(bad());
            }
            if let Some(&(px, py)) = points.last() {
                if x <= px || y < py {
                    return Err(format!(
                        "{name} line {}: sizes must increase and shares must not decrease ({px} {py} then {x} {y})",
                        i + 1
                    ));
                }
            }
            points.push((x, y));
        }
        match points.last() {
            None => Err(format!("{name}: no points")),
            Some(&(_, y)) if y != 100.0 => Err(format!("{name}: the last point's share is {y}, not 100")),
            _ => Ok(EmpiricalCdf { name: name.to_string(), points }),
        }
    }

    /// A built-in table by name, or a file (a name with a `/` or ending `.txt`).
    pub fn named(name: &str) -> Result<EmpiricalCdf, String> {
        if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name) {
            return EmpiricalCdf::parse(name, text);
        }
        if name.contains('/') || name.ends_with(".txt") {
            let text = std::fs::read_to_string(name).map_err(|e| format!("cannot read flow-size table {name}: {e}"))?;
            return EmpiricalCdf::parse(name, &text);
        }
        Err(format!(
            "unknown flow-size table '{name}' (built in: {}; or a file path)",
            BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        ))
    }

    /// The mean size of the interpolated distribution: the first point's
    /// share at its size, then each segment's share at its midpoint (the
    /// trapezoid rule; what the HPCC generator computes as its average).
    pub fn mean(&self) -> f64 {
        let (x0, y0) = self.points[0];
        let mut s = x0 * y0;
        for w in self.points.windows(2) {
            let ((a, ya), (b, yb)) = (w[0], w[1]);
            s += (a + b) / 2.0 * (yb - ya);
        }
        s / 100.0
    }

    /// The size at cumulative share `u` (0..1), linear between points.
    pub fn quantile(&self, u: f64) -> f64 {
        let y = u.clamp(0.0, 1.0) * 100.0;
        let i = self.points.partition_point(|&(_, py)| py < y);
        if i == 0 {
            return self.points[0].0;
        }
        if i >= self.points.len() {
            return self.points[self.points.len() - 1].0;
        }
        let ((x0, y0), (x1, y1)) = (self.points[i - 1], self.points[i]);
        x0 + (x1 - x0) * (y - y0) / (y1 - y0)
    }

    /// One flow size: the quantile of a uniform draw, rounded to the
    /// nearest byte, at least 1 byte.
    pub fn sample(&self, rng: &mut Rng) -> u64 {
        let x = self.quantile(rng.unit_open0()).round();
        if x < 1.0 {
            1
        } else if x >= u64::MAX as f64 {
            u64::MAX
        } else {
            x as u64
        }
    }

    /// The cumulative share (0..1) of sizes at or below `x`.
    pub fn cdf(&self, x: f64) -> f64 {
        let i = self.points.partition_point(|&(px, _)| px < x);
        if i == 0 {
            return if x >= self.points[0].0 { self.points[0].1 / 100.0 } else { 0.0 };
        }
        if i >= self.points.len() {
            return 1.0;
        }
        let ((x0, y0), (x1, y1)) = (self.points[i - 1], self.points[i]);
        (y0 + (y1 - y0) * (x - x0) / (x1 - x0)) / 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_tables_load_with_their_means() {
        // The means the files' headers state (trapezoid rule).
        for (name, mean, n) in [("websearch", 1_711_250.0, 12), ("fb_hadoop", 120_420.75, 20), ("alistorage", 40_869.8, 9)] {
            let c = EmpiricalCdf::named(name).unwrap();
            assert_eq!(c.points.len(), n, "{name}");
            assert!((c.mean() - mean).abs() < 1e-6 * mean, "{name}: {}", c.mean());
            let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name).unwrap();
            let stated = format!("{}", mean).replace('.', "");
            let header: String = text.lines().filter(|l| l.contains("Mean")).collect::<String>().replace([' ', '.'], "");
            assert!(header.contains(&stated), "{name}: the header states another mean: {header}");
        }
    }

    #[test]
    fn sampling_interpolates_and_matches_the_mean() {
        let c = EmpiricalCdf::named("fb_hadoop").unwrap();
        assert_eq!(c.quantile(0.0), 0.0);
        assert_eq!(c.quantile(0.5), 700.0);
        assert!((c.quantile(0.55) - 850.0).abs() < 1e-9); // halfway between 700 (50 %) and 1000 (60 %)
        assert_eq!(c.quantile(1.0), 10_000_000.0);
        assert!((c.cdf(850.0) - 0.55).abs() < 1e-12);
        for name in ["websearch", "fb_hadoop", "alistorage"] {
            let c = EmpiricalCdf::named(name).unwrap();
            let mut r = Rng::new(17);
            let n = 400_000;
            let xs: Vec<f64> = (0..n).map(|_| c.sample(&mut r) as f64).collect();
            let m = xs.iter().sum::<f64>() / n as f64;
            let sd = (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n as f64).sqrt();
            // Within 5 standard errors of the table's own mean.
            let se = sd / (n as f64).sqrt();
            assert!((m - c.mean()).abs() < 5.0 * se, "{name}: sample mean {m} vs {} (se {se})", c.mean());
            // The share below each point is the table's.
            for &(x, y) in &c.points[1..c.points.len() - 1] {
                let frac = xs.iter().filter(|&&v| v <= x).count() as f64 / n as f64;
                let sigma = (y / 100.0 * (1.0 - y / 100.0) / n as f64).sqrt().max(1e-4);
                assert!((frac - y / 100.0).abs() < 5.0 * sigma + 2e-5, "{name}: P(X <= {x}) = {frac}, table {y} %");
            }
            assert!(xs.iter().all(|&v| v >= 1.0));
        }
    }

    #[test]
    fn bad_tables_are_refused() {
        assert!(EmpiricalCdf::parse("t", "").is_err());
        assert!(EmpiricalCdf::parse("t", "0 0\n10 50").is_err(), "must end at 100");
        assert!(EmpiricalCdf::parse("t", "0 0\n10 60\n5 100").is_err(), "sizes must increase");
        assert!(EmpiricalCdf::parse("t", "0 0\n10 60\n20 50\n30 100").is_err(), "shares must not decrease");
        assert!(EmpiricalCdf::parse("t", "0 0 0\n10 100").is_err());
        assert!(EmpiricalCdf::named("no-such-table").is_err());
        // A mass at the first size: 40 % of flows are exactly 100 bytes.
        let c = EmpiricalCdf::parse("t", "# comment\n100 40\n200 100 # trailing\n").unwrap();
        assert_eq!(c.quantile(0.3), 100.0);
        assert!((c.quantile(0.7) - 150.0).abs() < 1e-9);
        assert!((c.mean() - (0.4 * 100.0 + 0.6 * 150.0)).abs() < 1e-9);
    }
}
