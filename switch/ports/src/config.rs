//! Port settings: what a port file, the command line and the admin API set.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use thiserror::Error;

/// bmv2's default egress queue depth, in packets.
pub const DEFAULT_DEPTH_PKTS: usize = 64;
/// Largest queue depth accepted (packets).
pub const MAX_DEPTH_PKTS: usize = 1 << 20;
/// Largest one-way propagation delay accepted (µs): 10 s.
pub const MAX_DELAY_US: u64 = 10_000_000;
/// Largest line rate accepted (bits/s): 1 Tbit/s.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000;
/// Largest packet rate accepted (packets/s).
pub const MAX_RATE_PPS: u64 = 1_000_000_000;
/// Largest v1model port number (9 bits; 511 is bmv2's drop port).
pub const MAX_PORT: u32 = 510;

/// How one egress port shapes what leaves it. `0` rates mean "unlimited".
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PortSettings {
    /// Line rate in bits per second (frame bytes × 8 / rate = serialization
    /// time); 0 = unlimited.
    pub rate_bps: u64,
    /// bmv2-style rate in packets per second (`set_queue_rate`); 0 = unlimited.
    /// With both set, a packet waits for both.
    pub rate_pps: u64,
    /// One-way propagation delay added after serialization, µs.
    pub delay_us: u64,
    /// Probability in [0, 1] that a transmitted frame is lost on the link.
    pub loss: f64,
    /// Egress queue depth limit in packets (tail drop beyond it).
    pub depth_pkts: usize,
}

impl Default for PortSettings {
    fn default() -> Self {
        PortSettings { rate_bps: 0, rate_pps: 0, delay_us: 0, loss: 0.0, depth_pkts: DEFAULT_DEPTH_PKTS }
    }
}

/// A partial change of [`PortSettings`] (admin API `PUT /ports/{n}`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortUpdate {
    pub rate_bps: Option<u64>,
    pub rate_pps: Option<u64>,
    pub delay_us: Option<u64>,
    pub loss: Option<f64>,
    pub depth_pkts: Option<usize>,
}

#[derive(Debug, Error, PartialEq)]
pub enum ConfigError {
    #[error("loss must be a probability in [0, 1], got {0}")]
    Loss(f64),
    #[error("depth_pkts must be in 1..={MAX_DEPTH_PKTS}, got {0}")]
    Depth(usize),
    #[error("delay_us must be at most {MAX_DELAY_US} (10 s), got {0}")]
    Delay(u64),
    #[error("rate_bps must be at most {MAX_RATE_BPS} (1 Tbit/s), got {0}")]
    RateBps(u64),
    #[error("rate_pps must be at most {MAX_RATE_PPS}, got {0}")]
    RatePps(u64),
    #[error("port must be in 0..={MAX_PORT}, got {0}")]
    Port(u64),
    #[error("port {0} is given twice")]
    DuplicatePort(u32),
    #[error("interface {0} is given twice")]
    DuplicateIface(String),
    #[error("bad port file: {0}")]
    File(String),
    #[error("bad value '{value}' for {what}: {why}")]
    Value { what: String, value: String, why: String },
}

impl PortSettings {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.loss >= 0.0 && self.loss <= 1.0) {
            return Err(ConfigError::Loss(self.loss));
        }
        if self.depth_pkts == 0 || self.depth_pkts > MAX_DEPTH_PKTS {
            return Err(ConfigError::Depth(self.depth_pkts));
        }
        if self.delay_us > MAX_DELAY_US {
            return Err(ConfigError::Delay(self.delay_us));
        }
        if self.rate_bps > MAX_RATE_BPS {
            return Err(ConfigError::RateBps(self.rate_bps));
        }
        if self.rate_pps > MAX_RATE_PPS {
            return Err(ConfigError::RatePps(self.rate_pps));
        }
        Ok(())
    }

    /// Applies `u` to a copy of `self`, validated; `self` is unchanged on error.
    pub fn updated(&self, u: &PortUpdate) -> Result<PortSettings, ConfigError> {
        let mut s = *self;
        if let Some(v) = u.rate_bps {
            s.rate_bps = v;
        }
        if let Some(v) = u.rate_pps {
            s.rate_pps = v;
        }
        if let Some(v) = u.delay_us {
            s.delay_us = v;
        }
        if let Some(v) = u.loss {
            s.loss = v;
        }
        if let Some(v) = u.depth_pkts {
            s.depth_pkts = v;
        }
        s.validate()?;
        Ok(s)
    }
}

/// One port of the switch: its v1model number, its Linux interface, its
/// settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSpec {
    pub port: u32,
    pub iface: String,
    #[serde(flatten)]
    pub settings: PortSettings,
}

/// The port file (`--port-config FILE.json`):
/// `{"seed": 1, "ports": [{"port": 1, "iface": "veth1", "rate_bps": 100000000, ...}]}`.
/// Settings left out keep their defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortFile {
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub ports: Vec<PortFileEntry>,
}

/// A port in the port file; `iface` may be left out when `--interface`
/// names it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortFileEntry {
    pub port: u64,
    #[serde(default)]
    pub iface: Option<String>,
    #[serde(flatten)]
    pub update: PortUpdate,
}

impl PortFile {
    pub fn parse(text: &str) -> Result<PortFile, ConfigError> {
        serde_json::from_str(text).map_err(|e| ConfigError::File(e.to_string()))
    }
}

/// Builds the port list from `--interface PORT@IFACE` pairs, a port file and
/// the per-port shortcuts, in that order of precedence (later wins).
#[derive(Debug, Default)]
pub struct PortTableBuilder {
    ports: BTreeMap<u32, (Option<String>, PortSettings)>,
}

pub fn parse_port(s: &str) -> Result<u32, ConfigError> {
    let v: u64 = s.trim().parse().map_err(|_| ConfigError::Value {
        what: "port".into(),
        value: s.into(),
        why: "not a number".into(),
    })?;
    if v > MAX_PORT as u64 {
        return Err(ConfigError::Port(v));
    }
    Ok(v as u32)
}

impl PortTableBuilder {
    /// `--interface 1@veth1`.
    pub fn interface(&mut self, spec: &str) -> Result<(), ConfigError> {
        let (p, iface) = spec.split_once('@').ok_or_else(|| ConfigError::Value {
            what: "--interface".into(),
            value: spec.into(),
            why: "expected PORT@IFACE, e.g. 1@veth1".into(),
        })?;
        let port = parse_port(p)?;
        if iface.is_empty() || iface.len() >= libc::IFNAMSIZ {
            return Err(ConfigError::Value {
                what: "--interface".into(),
                value: spec.into(),
                why: "bad interface name".into(),
            });
        }
        let e = self.ports.entry(port).or_insert((None, PortSettings::default()));
        if e.0.is_some() {
            return Err(ConfigError::DuplicatePort(port));
        }
        e.0 = Some(iface.to_string());
        Ok(())
    }

    pub fn file(&mut self, f: &PortFile) -> Result<(), ConfigError> {
        for p in &f.ports {
            if p.port > MAX_PORT as u64 {
                return Err(ConfigError::Port(p.port));
            }
            let e = self.ports.entry(p.port as u32).or_insert((None, PortSettings::default()));
            if let Some(i) = &p.iface {
                match &e.0 {
                    Some(old) if old != i => {
                        return Err(ConfigError::File(format!(
                            "port {} is {} in the port file but {} on the command line",
                            p.port, i, old
                        )))
                    }
                    _ => e.0 = Some(i.clone()),
                }
            }
            e.1 = e.1.updated(&p.update)?;
        }
        Ok(())
    }

    /// `--rate 1=100000000` etc.: `what` is one of rate, rate-pps, delay, loss, depth.
    pub fn shortcut(&mut self, what: &str, spec: &str) -> Result<(), ConfigError> {
        let bad = |why: &str| ConfigError::Value { what: format!("--{what}"), value: spec.into(), why: why.into() };
        let (p, v) = spec.split_once('=').ok_or_else(|| bad("expected PORT=VALUE"))?;
        let port = parse_port(p)?;
        let mut u = PortUpdate::default();
        match what {
            "rate" => u.rate_bps = Some(parse_rate(v).map_err(|e| bad(&e))?),
            "rate-pps" => u.rate_pps = Some(v.parse().map_err(|_| bad("not a number"))?),
            "delay" => u.delay_us = Some(v.parse().map_err(|_| bad("not a number of µs"))?),
            "loss" => u.loss = Some(v.parse().map_err(|_| bad("not a probability"))?),
            "depth" => u.depth_pkts = Some(v.parse().map_err(|_| bad("not a number of packets"))?),
            _ => return Err(bad("unknown setting")),
        }
        let e = self.ports.entry(port).or_insert((None, PortSettings::default()));
        e.1 = e.1.updated(&u)?;
        Ok(())
    }

    pub fn build(self) -> Result<Vec<PortSpec>, ConfigError> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (port, (iface, settings)) in self.ports {
            let iface = iface.ok_or_else(|| ConfigError::Value {
                what: "port".into(),
                value: port.to_string(),
                why: "has settings but no interface (--interface PORT@IFACE or \"iface\" in the port file)"
                    .into(),
            })?;
            if !seen.insert(iface.clone()) {
                return Err(ConfigError::DuplicateIface(iface));
            }
            out.push(PortSpec { port, iface, settings });
        }
        Ok(out)
    }
}

/// Parses a rate in bits/s: a plain number, or with a k/M/G suffix
/// (decimal: 100M = 100 000 000), optionally followed by "bps".
pub fn parse_rate(v: &str) -> Result<u64, String> {
    let s = v.trim();
    let s = s.strip_suffix("bps").unwrap_or(s);
    let (num, mult) = match s.chars().last() {
        Some('k') | Some('K') => (&s[..s.len() - 1], 1e3),
        Some('m') | Some('M') => (&s[..s.len() - 1], 1e6),
        Some('g') | Some('G') => (&s[..s.len() - 1], 1e9),
        _ => (s, 1.0),
    };
    let x: f64 = num.parse().map_err(|_| format!("'{v}' is not a rate (e.g. 100000000, 100M, 1G)"))?;
    if x.is_nan() || x < 0.0 || !x.is_finite() || x * mult > 1e15 {
        return Err(format!("'{v}' is out of range"));
    }
    Ok((x * mult).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse() {
        assert_eq!(parse_rate("100M").unwrap(), 100_000_000);
        assert_eq!(parse_rate("1.5G").unwrap(), 1_500_000_000);
        assert_eq!(parse_rate("42000000").unwrap(), 42_000_000);
        assert_eq!(parse_rate("10kbps").unwrap(), 10_000);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("-1").is_err());
    }

    #[test]
    fn builder_merges_sources() {
        let mut b = PortTableBuilder::default();
        b.interface("1@veth1").unwrap();
        b.interface("2@veth2").unwrap();
        let f = PortFile::parse(r#"{"seed": 3, "ports": [{"port": 2, "rate_bps": 1000, "depth_pkts": 10}]}"#)
            .unwrap();
        b.file(&f).unwrap();
        b.shortcut("delay", "2=250").unwrap();
        b.shortcut("loss", "1=0.01").unwrap();
        let ports = b.build().unwrap();
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[1].settings.rate_bps, 1000);
        assert_eq!(ports[1].settings.depth_pkts, 10);
        assert_eq!(ports[1].settings.delay_us, 250);
        assert_eq!(ports[0].settings.loss, 0.01);
        assert_eq!(ports[0].settings.depth_pkts, DEFAULT_DEPTH_PKTS);
    }

    #[test]
    fn builder_rejects_bad_input() {
        let mut b = PortTableBuilder::default();
        assert!(b.interface("veth1").is_err());
        assert!(b.interface("600@veth1").is_err());
        b.interface("1@veth1").unwrap();
        assert!(b.interface("1@veth9").is_err());
        assert!(b.shortcut("loss", "1=1.5").is_err());
        assert!(b.shortcut("depth", "1=0").is_err());
        b.shortcut("rate", "3=1G").unwrap();
        assert!(b.build().is_err(), "port 3 has no interface");
        assert!(PortFile::parse(r#"{"ports": [{"port": 1, "speed": 3}]}"#).is_err());
    }

    #[test]
    fn update_is_all_or_nothing() {
        let s = PortSettings::default();
        let u = PortUpdate { rate_bps: Some(5), loss: Some(2.0), ..Default::default() };
        assert_eq!(s.updated(&u), Err(ConfigError::Loss(2.0)));
        let u = PortUpdate { rate_bps: Some(5), ..Default::default() };
        assert_eq!(s.updated(&u).unwrap().rate_bps, 5);
    }
}
