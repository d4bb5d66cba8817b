//! Parameter specifications and parsing shared by every algorithm.
//!
//! Each algorithm declares its parameters once, as a static table of
//! [`ParamInfo`] whose `default` is the literal string the parser falls back
//! to. The registry prints the same table, so the documented default and the
//! value actually used can never disagree.

use crate::CcError;

/// One tunable parameter of an algorithm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamInfo {
    pub name: &'static str,
    /// Default value, exactly as it would be written on the command line.
    pub default: &'static str,
    /// What it means, its unit, and where the default comes from.
    pub doc: &'static str,
}

/// Registry entry for one algorithm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlgoInfo {
    /// Canonical name accepted by `by_name`.
    pub name: &'static str,
    /// Other names `by_name` accepts for the same algorithm.
    pub aliases: Vec<&'static str>,
    /// One-line description.
    pub description: &'static str,
    pub params: Vec<ParamInfo>,
    /// The algorithm reads `AckSample::int_hops`, so its sender emits a
    /// version-2 (INT) telemetry shim (see [`crate::reads_int`]).
    pub int_telemetry: bool,
    /// The algorithm this one runs, with some defaults changed (a variant
    /// its paper names, such as Vivace-Loss); `None` for an algorithm of
    /// its own.
    pub variant_of: Option<&'static str>,
}

/// User-supplied `(name, value)` pairs checked against a spec table.
pub(crate) struct Params<'a> {
    algo: &'static str,
    specs: &'static [ParamInfo],
    given: &'a [(String, String)],
}

impl<'a> Params<'a> {
    /// Rejects any name not in `specs` up front, so a typo never silently
    /// falls back to a default.
    pub(crate) fn new(
        algo: &'static str,
        specs: &'static [ParamInfo],
        given: &'a [(String, String)],
    ) -> Result<Self, CcError> {
        for (name, _) in given {
            if !specs.iter().any(|s| s.name == name.as_str()) {
                let known = if specs.is_empty() {
                    "none".to_string()
                } else {
                    specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                };
                return Err(CcError::UnknownParam {
                    algo: algo.to_string(),
                    param: name.clone(),
                    known,
                });
            }
        }
        Ok(Params { algo, specs, given })
    }

    fn bad(&self, param: &str, value: &str, why: impl Into<String>) -> CcError {
        CcError::BadValue {
            algo: self.algo.to_string(),
            param: param.to_string(),
            value: value.to_string(),
            why: why.into(),
        }
    }

    /// The value to use: the last one given, else the spec default.
    fn raw(&self, name: &str) -> Result<String, CcError> {
        if let Some((_, v)) = self.given.iter().rev().find(|(k, _)| k == name) {
            return Ok(v.trim().to_string());
        }
        match self.specs.iter().find(|s| s.name == name) {
            Some(spec) => Ok(spec.default.to_string()),
            // Only reachable through a bug in this crate (asking for a
            // parameter the algorithm did not declare); report it as an
            // error rather than panicking.
            None => Err(self.bad(name, "", "parameter not declared by the algorithm")),
        }
    }

    /// Whether the user set `name` (as opposed to falling back to its
    /// default).
    pub(crate) fn is_given(&self, name: &str) -> bool {
        self.given.iter().any(|(k, _)| k == name)
    }

    /// A finite float in the closed range `[lo, hi]`.
    pub(crate) fn f64_in(&self, name: &str, lo: f64, hi: f64) -> Result<f64, CcError> {
        let raw = self.raw(name)?;
        let v: f64 = raw
            .parse()
            .map_err(|_| self.bad(name, &raw, "not a number"))?;
        if !v.is_finite() {
            return Err(self.bad(name, &raw, "must be finite"));
        }
        if v < lo || v > hi {
            return Err(self.bad(name, &raw, format!("must be in [{lo}, {hi}]")));
        }
        Ok(v)
    }

    /// A non-negative integer in `[lo, hi]`.
    pub(crate) fn u64_in(&self, name: &str, lo: u64, hi: u64) -> Result<u64, CcError> {
        let raw = self.raw(name)?;
        let v: u64 = raw
            .parse()
            .map_err(|_| self.bad(name, &raw, "not a non-negative integer"))?;
        if v < lo || v > hi {
            return Err(self.bad(name, &raw, format!("must be in [{lo}, {hi}]")));
        }
        Ok(v)
    }

    pub(crate) fn bool(&self, name: &str) -> Result<bool, CcError> {
        let raw = self.raw(name)?;
        match raw.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(self.bad(name, &raw, "expected true/false")),
        }
    }

    /// One of `options`, matched case-insensitively; returned as spelled
    /// in `options`.
    pub(crate) fn choice(&self, name: &str, options: &[&'static str]) -> Result<&'static str, CcError> {
        let raw = self.raw(name)?;
        options
            .iter()
            .find(|o| o.eq_ignore_ascii_case(&raw))
            .copied()
            .ok_or_else(|| self.bad(name, &raw, format!("expected one of {}", options.join(", "))))
    }

    /// Cross-parameter check failures (e.g. tlow >= thigh).
    pub(crate) fn invalid(&self, name: &str, why: impl Into<String>) -> CcError {
        let raw = self.raw(name).unwrap_or_default();
        self.bad(name, &raw, why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[ParamInfo] = &[
        ParamInfo { name: "g", default: "0.0625", doc: "gain" },
        ParamInfo { name: "n", default: "5", doc: "count" },
        ParamInfo { name: "on", default: "true", doc: "flag" },
        ParamInfo { name: "mode", default: "fast", doc: "choice" },
    ];

    fn given(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn defaults_and_overrides() {
        let g = given(&[("n", "7"), ("n", "9")]);
        let p = Params::new("x", SPECS, &g).unwrap();
        assert_eq!(p.f64_in("g", 0.0, 1.0).unwrap(), 0.0625);
        assert_eq!(p.u64_in("n", 0, 100).unwrap(), 9, "last value wins");
        assert!(p.bool("on").unwrap());
        assert_eq!(p.choice("mode", &["slow", "fast"]).unwrap(), "fast");
        let g = given(&[("mode", " SLOW ")]);
        let p = Params::new("x", SPECS, &g).unwrap();
        assert_eq!(p.choice("mode", &["slow", "fast"]).unwrap(), "slow", "trimmed, any case");
    }

    #[test]
    fn unknown_and_bad_values_are_errors() {
        let g = given(&[("gg", "1")]);
        match Params::new("x", SPECS, &g) {
            Err(CcError::UnknownParam { param, known, .. }) => {
                assert_eq!(param, "gg");
                assert_eq!(known, "g, n, on, mode");
            }
            _ => panic!("expected UnknownParam"),
        }
        let g = given(&[("g", "2"), ("n", "x"), ("on", "maybe")]);
        let p = Params::new("x", SPECS, &g).unwrap();
        assert!(matches!(p.f64_in("g", 0.0, 1.0), Err(CcError::BadValue { .. })));
        assert!(matches!(p.u64_in("n", 0, 10), Err(CcError::BadValue { .. })));
        assert!(matches!(p.bool("on"), Err(CcError::BadValue { .. })));
        let g = given(&[("mode", "medium")]);
        let p = Params::new("x", SPECS, &g).unwrap();
        match p.choice("mode", &["slow", "fast"]) {
            Err(CcError::BadValue { why, .. }) => assert_eq!(why, "expected one of slow, fast"),
            other => panic!("expected BadValue, got {other:?}"),
        }
        let g = given(&[("g", "NaN")]);
        let p = Params::new("x", SPECS, &g).unwrap();
        assert!(matches!(p.f64_in("g", 0.0, 1.0), Err(CcError::BadValue { .. })));
    }
}
