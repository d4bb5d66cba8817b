//! Name → algorithm. The one place the datapath and the CLI learn which
//! algorithms exist, what they take, and how to build them.

use crate::params::{AlgoInfo, ParamInfo, Params};
use crate::timely::{Signal, Timely};
use crate::powertcp::{PowerTcp, Variant};
use crate::{bbr, cubic, dcqcn, dctcp, hpcc, oracle, pcc, powertcp, reno, swift, timely, vegas};
use crate::{CcError, CongestionControl, PathInfo};

struct Entry {
    name: &'static str,
    aliases: &'static [&'static str],
    description: &'static str,
    params: &'static [ParamInfo],
    /// Reads `AckSample::int_hops`: its sender emits a version-2 (INT)
    /// telemetry shim.
    int_telemetry: bool,
}

const ENTRIES: &[Entry] = &[
    Entry { name: "reno", aliases: &[], description: "TCP NewReno: slow start, AIMD, halve once per window on loss (RFC 5681/6582)", params: reno::PARAMS, int_telemetry: false },
    Entry { name: "cubic", aliases: &[], description: "CUBIC: cubic window growth around W_max with a Reno-friendly floor (RFC 9438)", params: cubic::PARAMS, int_telemetry: false },
    Entry { name: "dctcp", aliases: &[], description: "DCTCP: cut cwnd by alpha/2 per window, alpha = EWMA of the CE-marked fraction (RFC 8257)", params: dctcp::PARAMS, int_telemetry: false },
    Entry { name: "timely", aliases: &[], description: "TIMELY: rate control from the RTT gradient (SIGCOMM'15 Algorithm 1)", params: timely::TIMELY_PARAMS, int_telemetry: false },
    Entry { name: "oracle-timely", aliases: &[], description: "oracle TIMELY: holds the switch's reported queue at a target, XCP's gains on its change and its excess", params: oracle::PARAMS, int_telemetry: false },
    Entry { name: "oracle-timely-seed", aliases: &[], description: "the TIMELY seed's oracle: TIMELY's control law fed the switch's echoed queue depth instead of the RTT", params: timely::ORACLE_PARAMS, int_telemetry: false },
    Entry { name: "vegas", aliases: &[], description: "TCP Vegas: keep alpha..beta packets queued, judged once per RTT from base RTT", params: vegas::PARAMS, int_telemetry: false },
    Entry { name: "pcc-allegro", aliases: &["pcc"], description: "PCC Allegro: loss-based utility with PCC-Uspace's latency factor, on its gradient ascent (NSDI'15; PCC-Uspace)", params: pcc::allegro::PARAMS, int_telemetry: false },
    Entry { name: "pcc-vivace", aliases: &[], description: "PCC Vivace: gradient ascent on a latency-aware utility (NSDI'18)", params: pcc::vivace::PARAMS, int_telemetry: false },
    Entry { name: "hpcc", aliases: &[], description: "HPCC: window from the per-hop INT load, aiming at eta utilisation (SIGCOMM'19 Algorithm 1)", params: hpcc::PARAMS, int_telemetry: true },
    Entry { name: "powertcp", aliases: &[], description: "PowerTCP: window from the per-hop INT power, queue gradient times bytes in flight (NSDI'22 Algorithm 1)", params: powertcp::PARAMS, int_telemetry: true },
    Entry { name: "theta-powertcp", aliases: &[], description: "theta-PowerTCP: PowerTCP's window law with power from the RTT and its gradient (NSDI'22 Algorithm 2)", params: powertcp::PARAMS, int_telemetry: false },
    Entry { name: "swift", aliases: &[], description: "Swift: AIMD on delay against a hop- and flow-scaled target, sub-packet windows by pacing (SIGCOMM'20 Algorithm 1)", params: swift::PARAMS, int_telemetry: false },
    Entry { name: "dcqcn", aliases: &[], description: "DCQCN reaction point: rate cut by alpha/2 per CNP, fast recovery, additive and hyper increase (SIGCOMM'15)", params: dcqcn::PARAMS, int_telemetry: false },
    Entry { name: "bbr", aliases: &["bbr1"], description: "BBRv1 as Linux's tcp_bbr.c: pacing at the max-filtered delivery rate, cwnd = 2 BDP, 8-phase gain cycle, PROBE_RTT every 10 s, policer (lt_bw) detection", params: bbr::v1::PARAMS, int_telemetry: false },
    Entry { name: "bbr3", aliases: &["bbrv3"], description: "BBRv3 (draft-ietf-ccwg-bbr-06): BBRv1's model bounded by loss (2 % per round, beta 0.7) and ECN, PROBE_BW DOWN/CRUISE/REFILL/UP, PROBE_RTT every 5 s at 0.5 BDP", params: bbr::v3::PARAMS, int_telemetry: false },
];

/// A variant its paper names: another entry's algorithm with some of its
/// defaults changed. Given parameters still win over these defaults.
struct NamedVariant {
    name: &'static str,
    of: &'static str,
    description: &'static str,
    defaults: &'static [(&'static str, &'static str)],
}

const VARIANTS: &[NamedVariant] = &[
    // The PCC authors' Vivace code runs Vivace-Loss unless told otherwise
    // (PCC-Uspace NSDI-2018 branch, `latency_based = 0`): the variant a
    // comparison with their default binary needs.
    NamedVariant { name: "pcc-vivace-loss", of: "pcc-vivace", description: "PCC Vivace-Loss: Vivace's utility without its latency term (NSDI'18 §3; PCC-Uspace NSDI-2018 latency_based = 0)", defaults: &[("latency_coef", "0")] },
];

/// Every algorithm with its description and parameters (defaults as
/// strings, exactly what `by_name` uses when a parameter is not given).
pub fn list() -> Vec<AlgoInfo> {
    let entries = ENTRIES.iter().map(|e| AlgoInfo {
        name: e.name,
        aliases: e.aliases.to_vec(),
        description: e.description,
        params: e.params.to_vec(),
        int_telemetry: e.int_telemetry,
        variant_of: None,
    });
    let variants = VARIANTS.iter().filter_map(|v| {
        let base = entry(v.of)?;
        let params = base
            .params
            .iter()
            .map(|p| match v.defaults.iter().find(|(k, _)| *k == p.name) {
                Some((_, d)) => ParamInfo { default: d, ..p.clone() },
                None => p.clone(),
            })
            .collect();
        Some(AlgoInfo {
            name: v.name,
            aliases: vec![],
            description: v.description,
            params,
            int_telemetry: base.int_telemetry,
            variant_of: Some(base.name),
        })
    });
    entries.chain(variants).collect()
}

fn entry(name: &str) -> Option<&'static Entry> {
    let wanted = name.trim().to_ascii_lowercase();
    ENTRIES.iter().find(|e| e.name == wanted || e.aliases.contains(&wanted.as_str()))
        .or_else(|| variant(&wanted).and_then(|v| entry(v.of)))
}

fn variant(name: &str) -> Option<&'static NamedVariant> {
    let wanted = name.trim().to_ascii_lowercase();
    VARIANTS.iter().find(|v| v.name == wanted)
}

/// True when algorithm `name` (or an alias) reads the in-band telemetry
/// of `AckSample::int_hops` (HPCC, PowerTCP): its sender must emit a
/// version-2 telemetry shim, whose 32-byte records leave less room for
/// payload. False for every other name, unknown ones included.
pub fn reads_int(name: &str) -> bool {
    entry(name).is_some_and(|e| e.int_telemetry)
}

/// Builds algorithm `name` for one flow: as [`by_name`], and an algorithm
/// with randomness of its own (a `seed` parameter: PCC's trial order) that
/// was not given one takes `flow_seed`. With one fixed default, every
/// flow of a run drew the same coins — competing PCC senders ran their
/// trials in lockstep — and repeated runs in virtual time were copies.
pub fn for_flow(
    name: &str,
    params: &[(String, String)],
    path: &PathInfo,
    flow_seed: u64,
) -> Result<Box<dyn CongestionControl>, CcError> {
    by_name(name, &flow_params(name, params, flow_seed), path)
}

/// `params`, with `seed = flow_seed` added where algorithm `name` takes a
/// seed and none was given.
fn flow_params(name: &str, params: &[(String, String)], flow_seed: u64) -> Vec<(String, String)> {
    let seeded = entry(name).is_some_and(|e| e.params.iter().any(|p| p.name == "seed"));
    let mut out = params.to_vec();
    if seeded && !params.iter().any(|(k, _)| k == "seed") {
        out.push(("seed".to_string(), flow_seed.to_string()));
    }
    out
}

/// Builds algorithm `name` (or an alias) with `params` overriding defaults.
/// Unknown names, unknown parameters and out-of-range values are errors,
/// never silently ignored.
pub fn by_name(name: &str, params: &[(String, String)], path: &PathInfo) -> Result<Box<dyn CongestionControl>, CcError> {
    let entry = entry(name).ok_or_else(|| CcError::UnknownAlgorithm(name.to_string()))?;
    if path.mss == 0 {
        return Err(CcError::BadValue {
            algo: entry.name.to_string(),
            param: "PathInfo.mss".to_string(),
            value: "0".to_string(),
            why: "the datapath must give a positive MSS".to_string(),
        });
    }
    // A variant's defaults go first: of pairs with one name the last wins.
    let variant = variant(name);
    let given: Vec<(String, String)> = variant
        .map_or(&[][..], |v| v.defaults)
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .chain(params.iter().cloned())
        .collect();
    let p = Params::new(variant.map_or(entry.name, |v| v.name), entry.params, &given)?;
    Ok(match entry.name {
        "reno" => Box::new(reno::Reno::from_params(&p, path)?),
        "cubic" => Box::new(cubic::Cubic::from_params(&p, path)?),
        "dctcp" => Box::new(dctcp::Dctcp::from_params(&p, path)?),
        "timely" => Box::new(Timely::from_params(Signal::Rtt, &p, path)?),
        "oracle-timely" => Box::new(oracle::Oracle::from_params(&p, path)?),
        "oracle-timely-seed" => Box::new(Timely::from_params(Signal::QueueDepth, &p, path)?),
        "vegas" => Box::new(vegas::Vegas::from_params(&p, path)?),
        "pcc-allegro" => Box::new(pcc::allegro::from_params(&p, path)?),
        "pcc-vivace" => Box::new(pcc::vivace::from_params(&p, path)?),
        "hpcc" => Box::new(hpcc::Hpcc::from_params(&p, path)?),
        "powertcp" => Box::new(PowerTcp::from_params(Variant::Int, &p, path)?),
        "theta-powertcp" => Box::new(PowerTcp::from_params(Variant::Theta, &p, path)?),
        "swift" => Box::new(swift::Swift::from_params(&p, path)?),
        "dcqcn" => Box::new(dcqcn::Dcqcn::from_params(&p, path)?),
        "bbr" => Box::new(bbr::v1::BbrV1::from_params(&p, path)?),
        "bbr3" => Box::new(bbr::v3::BbrV3::from_params(&p, path)?),
        _ => return Err(CcError::UnknownAlgorithm(name.to_string())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_seeds_the_algorithms_that_draw_coins() {
        let kv = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(flow_params("pcc", &[], 42), vec![kv("seed", "42")]);
        assert_eq!(flow_params("PCC-Vivace", &[kv("eps_min", "0.02")], 7), vec![kv("eps_min", "0.02"), kv("seed", "7")]);
        assert_eq!(flow_params("pcc-allegro", &[kv("seed", "3")], 42), vec![kv("seed", "3")], "a given seed stays");
        assert_eq!(flow_params("cubic", &[], 42), vec![], "no coins, no seed");
        let path = PathInfo { mss: 1448, line_rate_bps: None, init_cwnd_pkts: 10 };
        assert!(for_flow("pcc", &[], &path, u64::MAX).is_ok());
    }

    fn kv(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn every_listed_algorithm_builds_with_defaults_and_reports_its_name() {
        let path = PathInfo { mss: 1400, line_rate_bps: Some(100_000_000), init_cwnd_pkts: 10 };
        let all = list();
        assert_eq!(all.len(), 17);
        for info in &all {
            let cc = by_name(info.name, &[], &path).unwrap();
            assert_eq!(cc.name(), info.variant_of.unwrap_or(info.name));
            assert!(cc.cwnd_bytes().is_some() || cc.pacing_rate_bps().is_some(), "{} limits nothing", info.name);
            // Every documented default parses (building with it explicitly
            // gives the same algorithm).
            let explicit: Vec<(String, String)> =
                info.params.iter().map(|p| (p.name.to_string(), p.default.to_string())).collect();
            by_name(info.name, &explicit, &path).unwrap();
            for p in &info.params {
                assert!(!p.doc.is_empty(), "{}.{} undocumented", info.name, p.name);
            }
        }
    }

    #[test]
    fn only_hpcc_and_powertcp_read_int() {
        let int: Vec<&str> = list().iter().filter(|a| a.int_telemetry).map(|a| a.name).collect();
        assert_eq!(int, ["hpcc", "powertcp"]);
        assert!(reads_int("hpcc") && reads_int(" PowerTCP "));
        for name in ["theta-powertcp", "swift", "dcqcn", "dctcp", "pcc", "bbr", ""] {
            assert!(!reads_int(name), "{name}");
        }
    }

    #[test]
    fn a_variant_is_its_algorithm_with_its_own_defaults_and_given_values_win() {
        let path = PathInfo { mss: 1400, line_rate_bps: Some(100_000_000), init_cwnd_pkts: 10 };
        let info = list().into_iter().find(|a| a.name == "pcc-vivace-loss").unwrap();
        assert_eq!(info.variant_of, Some("pcc-vivace"));
        let latency = |a: &AlgoInfo| a.params.iter().find(|p| p.name == "latency_coef").unwrap().default;
        assert_eq!(latency(&info), "0", "Vivace-Loss: no latency term (NSDI'18 §3)");
        let vivace = list().into_iter().find(|a| a.name == "pcc-vivace").unwrap();
        assert_eq!(latency(&vivace), "900");
        assert_eq!(info.params.len(), vivace.params.len());
        assert_eq!(by_name(" PCC-Vivace-Loss ", &[], &path).unwrap().name(), "pcc-vivace");
        assert_eq!(flow_params("pcc-vivace-loss", &[], 5), vec![("seed".to_string(), "5".to_string())]);
        // A given value overrides the variant's default, and an unknown
        // parameter is named against the variant.
        assert!(by_name("pcc-vivace-loss", &kv(&[("latency_coef", "900")]), &path).is_ok());
        match by_name("pcc-vivace-loss", &kv(&[("beta", "1")]), &path) {
            Err(CcError::UnknownParam { algo, .. }) => assert_eq!(algo, "pcc-vivace-loss"),
            other => panic!("{:?}", other.err()),
        }
    }

    #[test]
    fn aliases_and_case() {
        let path = PathInfo::default();
        assert_eq!(by_name("pcc", &[], &path).unwrap().name(), "pcc-allegro");
        assert_eq!(by_name(" DCTCP ", &[], &path).unwrap().name(), "dctcp");
    }

    #[test]
    fn clear_errors() {
        let path = PathInfo::default();
        assert_eq!(by_name("bbr2", &[], &path).err(), Some(CcError::UnknownAlgorithm("bbr2".into())));
        assert_eq!(by_name("BBR", &[], &path).unwrap().name(), "bbr");
        assert_eq!(by_name("bbrv3", &[], &path).unwrap().name(), "bbr3");
        match by_name("dctcp", &kv(&[("gain", "0.1")]), &path) {
            Err(CcError::UnknownParam { algo, param, known }) => {
                assert_eq!((algo.as_str(), param.as_str(), known.as_str()), ("dctcp", "gain", "g, init_alpha"));
            }
            other => panic!("{:?}", other.err()),
        }
        assert!(matches!(by_name("dctcp", &kv(&[("g", "2")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("reno", &kv(&[("x", "1")]), &path), Err(CcError::UnknownParam { .. })));
        assert!(matches!(by_name("timely", &kv(&[("tlow_us", "600")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("vegas", &kv(&[("alpha", "5")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("pcc-allegro", &kv(&[("eps_max", "0.001")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("hpcc", &kv(&[("eta", "1.5")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("hpcc", &kv(&[("w_ai", "0")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("powertcp", &kv(&[("gamma", "0")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("theta-powertcp", &kv(&[("expected_flows", "-1")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("swift", &kv(&[("fs_min_cwnd", "200")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("swift", &kv(&[("min_cwnd", "20"), ("max_cwnd", "10")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("swift", &kv(&[("max_mdf", "1.5")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("dcqcn", &kv(&[("g", "0")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("dcqcn", &kv(&[("rate_timer_us", "0")]), &path), Err(CcError::BadValue { .. })));
        assert!(matches!(by_name("dcqcn", &kv(&[("min_rate_mbps", "20000")]), &path), Err(CcError::BadValue { .. })));
        let bad_path = PathInfo { mss: 0, ..PathInfo::default() };
        assert!(matches!(by_name("reno", &[], &bad_path), Err(CcError::BadValue { .. })));
        let e = by_name("dctcp", &kv(&[("g", "abc")]), &path).err().unwrap();
        assert_eq!(e.to_string(), "dctcp: parameter 'g' = 'abc': not a number");
    }

    #[test]
    fn params_reach_the_algorithm() {
        let path = PathInfo { mss: 1000, line_rate_bps: Some(1_000_000_000), init_cwnd_pkts: 10 };
        let t = by_name("timely", &kv(&[("init_rate_mbps", "300")]), &path).unwrap();
        assert_eq!(t.pacing_rate_bps(), Some(300_000_000));
        let t = by_name("timely", &[], &path).unwrap();
        assert_eq!(t.pacing_rate_bps(), Some(1_000_000_000), "starts at line rate");
        let d = by_name("dctcp", &kv(&[("init_alpha", "0.5")]), &path).unwrap();
        assert_eq!(d.state()["alpha"], 0.5);
        let h = by_name("hpcc", &kv(&[("base_rtt_us", "8")]), &path).unwrap();
        assert_eq!(h.cwnd_bytes(), Some(1_000), "W_init = 1 Gb/s · 8 µs");
        assert_eq!(h.pacing_rate_bps(), Some(1_000_000_000));
        let h = by_name("hpcc", &kv(&[("base_rtt_us", "8"), ("line_rate_mbps", "10000")]), &path).unwrap();
        assert_eq!(h.cwnd_bytes(), Some(10_000));
        let p = by_name("powertcp", &kv(&[("base_rtt_us", "16"), ("expected_flows", "4")]), &path).unwrap();
        assert_eq!(p.state()["beta_bytes"], 500.0, "β = HostBw·τ/N = 2 000 B / 4");
        let d = by_name("dcqcn", &kv(&[("rai_mbps", "5")]), &path).unwrap();
        assert_eq!(d.pacing_rate_bps(), Some(1_000_000_000), "starts at line rate");
        let s = by_name("swift", &kv(&[("base_target_us", "40"), ("hops", "3"), ("h_us", "2")]), &path).unwrap();
        assert!(s.state()["target_delay_us"] > 46.0);
        // PCC before any event reports the rate its first MI will use:
        // 2 MSS per init_rtt = 2*1000*8 / 10 ms = 1.6 Mbit/s.
        let p = by_name("pcc", &[], &path).unwrap();
        assert_eq!(p.pacing_rate_bps(), Some(1_600_000));
    }
}
