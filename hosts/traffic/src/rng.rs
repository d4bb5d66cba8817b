//! Seeded randomness: xoshiro256** seeded through splitmix64, plus the
//! distributions the workloads need. Same seed -> same workload, on every
//! machine (no dependence on an external crate's algorithm choices).

#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        Rng { s: [splitmix(&mut x), splitmix(&mut x), splitmix(&mut x), splitmix(&mut x)] }
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in (0, 1] (never 0, so logarithms are finite).
    pub fn unit_open0(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Exponential with the given mean.
    pub fn exp(&mut self, mean: f64) -> f64 {
        -mean * self.unit_open0().ln()
    }
}

/// Pareto (type I) with shape `alpha` > 1 and the given mean:
/// scale x_m = mean (alpha - 1) / alpha; P(X > x) = (x_m / x)^alpha.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pareto {
    pub shape: f64,
    pub scale: f64,
}

impl Pareto {
    pub fn with_mean(shape: f64, mean: f64) -> Result<Pareto, String> {
        if !(shape > 1.0) || !shape.is_finite() {
            return Err(format!("Pareto shape must be > 1 for a finite mean (got {shape})"));
        }
        if !(mean > 0.0) || !mean.is_finite() {
            return Err(format!("Pareto mean must be > 0 (got {mean})"));
        }
        Ok(Pareto { shape, scale: mean * (shape - 1.0) / shape })
    }
    pub fn mean(&self) -> f64 {
        self.shape * self.scale / (self.shape - 1.0)
    }
    pub fn median(&self) -> f64 {
        self.scale * 2f64.powf(1.0 / self.shape)
    }
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        self.scale / rng.unit_open0().powf(1.0 / self.shape)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic() {
        let mut a = Rng::new(42);
        let mut b = Rng::new(42);
        let mut c = Rng::new(43);
        let va: Vec<u64> = (0..10).map(|_| a.next_u64()).collect();
        let vb: Vec<u64> = (0..10).map(|_| b.next_u64()).collect();
        let vc: Vec<u64> = (0..10).map(|_| c.next_u64()).collect();
        assert_eq!(va, vb);
        assert_ne!(va, vc);
    }

    #[test]
    fn exponential_mean_and_cv() {
        let mut r = Rng::new(7);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| r.exp(2.5)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        // standard error of the mean = 2.5 / sqrt(n) = 0.0056; allow 5 sigma
        assert!((mean - 2.5).abs() < 0.03, "mean {mean}");
        assert!((var.sqrt() / mean - 1.0).abs() < 0.02, "cv {}", var.sqrt() / mean);
    }

    #[test]
    fn pareto_mean_finite_variance_shape() {
        // shape 2.5 has finite variance: the sample mean converges quickly
        let p = Pareto::with_mean(2.5, 30_000.0).unwrap();
        let mut r = Rng::new(11);
        let n = 1_000_000;
        let mean = (0..n).map(|_| p.sample(&mut r)).sum::<f64>() / n as f64;
        assert!((mean / 30_000.0 - 1.0).abs() < 0.01, "mean {mean}");
    }

    #[test]
    fn pareto_heavy_tail_shape() {
        // shape 1.2 (the FCT experiments): infinite variance, so test the
        // median and the tail law P(X > x) = (xm / x)^a, which converge fast,
        // and the mean with a loose bound.
        let p = Pareto::with_mean(1.2, 60_000.0).unwrap();
        assert!((p.mean() - 60_000.0).abs() < 1e-6);
        let mut r = Rng::new(5);
        let n = 1_000_000;
        let mut xs: Vec<f64> = (0..n).map(|_| p.sample(&mut r)).collect();
        assert!(xs.iter().all(|&x| x >= p.scale));
        xs.sort_by(|a, b| a.total_cmp(b));
        let median = xs[n / 2];
        assert!((median / p.median() - 1.0).abs() < 0.01, "median {median} vs {}", p.median());
        for k in [2.0, 10.0, 100.0] {
            let x = p.scale * k;
            let frac = xs.iter().filter(|&&v| v > x).count() as f64 / n as f64;
            let expect = (1.0 / k as f64).powf(1.2);
            let sigma = (expect * (1.0 - expect) / n as f64).sqrt();
            assert!((frac - expect).abs() < 5.0 * sigma, "P(X > {k} xm) = {frac} vs {expect}");
        }
        let mean = xs.iter().sum::<f64>() / n as f64;
        assert!(mean > 0.7 * 60_000.0 && mean < 1.5 * 60_000.0, "mean {mean}");
    }

    #[test]
    fn below_is_uniform() {
        let mut r = Rng::new(3);
        let mut c = [0u32; 5];
        for _ in 0..100_000 {
            c[r.below(5) as usize] += 1;
        }
        for v in c {
            assert!((v as i64 - 20_000).abs() < 700, "{c:?}");
        }
    }
}
