//! The scenario plan as the simulator reads it (p4cc_topo/plan.py writes
//! it; docs/plans.md is the schema). Unknown fields are refused, so a plan
//! from a newer p4cc fails with the field's name instead of running
//! differently.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

pub const SCHEMA: &str = "p4cc.plan";
pub const VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("cannot read {0}: {1}")]
    Read(String, std::io::Error),
    #[error("{0}: {1}")]
    Parse(String, String),
    #[error("{0}")]
    Invalid(String),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Plan {
    pub schema: String,
    pub version: u32,
    pub experiment: String,
    pub title: String,
    pub source: String,
    pub description: String,
    pub params: serde_json::Value,
    pub seed: u64,
    pub arms: Vec<Arm>,
    pub scale: String,
    /// What the experiment left out and why.
    #[serde(default)]
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Arm {
    pub name: String,
    pub label: String,
    pub topology: Topology,
    pub switches: BTreeMap<String, serde_json::Value>,
    pub agents: Vec<Agent>,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub measure: serde_json::Value,
    pub events: Vec<serde_json::Value>,
    pub settings: serde_json::Value,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Topology {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub params: serde_json::Value,
    #[serde(default)]
    pub collector: Option<String>,
    #[serde(default)]
    pub roles: serde_json::Value,
    pub hosts: Vec<Host>,
    pub switches: Vec<Switch>,
    pub links: Vec<Link>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Host {
    pub name: String,
    /// "10.0.0.1/24"
    pub ip: String,
    pub mac: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Switch {
    pub name: String,
    pub id: u32,
}

/// One value for every switch end, or one per switch.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum PerEnd<T> {
    All(T),
    Each(BTreeMap<String, T>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// ["h1", "s1:1"]
    pub endpoints: [String; 2],
    #[serde(default)]
    pub rate_bps: Option<u64>,
    #[serde(default)]
    pub delay_us: Option<u64>,
    #[serde(default)]
    pub buffer_pkts: Option<PerEnd<u64>>,
    #[serde(default)]
    pub ecn_k_pkts: Option<PerEnd<u64>>,
    #[serde(default)]
    pub loss: Option<PerEnd<f64>>,
    /// "KMIN-KMAX/PMAX": RED marking; the controller applies it (the
    /// simulator only reads the topology for its links).
    #[serde(default)]
    pub ecn_red: Option<PerEnd<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agent {
    pub host: String,
    pub role: String,
    pub datapath: String,
    pub cc: Option<String>,
    pub cc_params: BTreeMap<String, serde_json::Value>,
    pub ecn: bool,
    pub workload: Option<Workload>,
    pub flow_id_base: u32,
    pub seed: u64,
    pub line_rate_bps: Option<u64>,
    pub init_cwnd_pkts: Option<u32>,
    pub out: String,
    #[serde(default = "one")]
    pub rtt_every: u64,
    /// Throughput bins of tput.csv, ms.
    #[serde(default = "ten")]
    pub bin_ms: f64,
    /// Receivers: the CNP interval of DCQCN's notification point, µs (0: the paper's 50).
    #[serde(default)]
    pub cnp_interval_us: f64,
    /// User-space senders: the host's link rate at which the stack
    /// arbitrates its flows (None: no arbitration).
    #[serde(default)]
    pub nic_rate_bps: Option<u64>,
    /// Receivers: acknowledge every N-th in-order packet (1: every packet).
    #[serde(default = "one_u32")]
    pub ack_every: u32,
    /// Receivers: a delayed ACK leaves after this many µs (0: the transport's default).
    #[serde(default)]
    pub delayed_ack_us: f64,
    /// An external agent's command: real time only (the executor refuses
    /// such a plan before the simulator sees it).
    #[serde(default)]
    pub command: Vec<String>,
}

fn one() -> u64 {
    1
}

fn one_u32() -> u32 {
    1
}

fn ten() -> f64 {
    10.0
}

impl Agent {
    pub fn folder(&self) -> &str {
        if self.out.is_empty() {
            &self.host
        } else {
            &self.out
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowWindow {
    pub dst: String,
    pub start_s: f64,
    pub stop_s: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sizes {
    pub fixed_bytes: Option<u64>,
    pub pareto_shape: f64,
    pub mean_bytes: f64,
    pub max_bytes: Option<u64>,
    /// An empirical flow-size table (traffic::cdf: websearch, fb_hadoop,
    /// alistorage, or a file) instead of Pareto.
    #[serde(default)]
    pub cdf: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub kind: String,
    pub flows: Vec<FlowWindow>,
    pub dsts: Vec<String>,
    pub load: Option<f64>,
    pub link_bps: Option<u64>,
    pub sizes: Sizes,
    pub count: Option<u32>,
    pub duration_s: Option<f64>,
    pub bytes: Option<u64>,
    pub rounds: Option<u32>,
    pub interval_s: Option<f64>,
    pub concurrency: Option<u32>,
    pub think_s: f64,
    pub start_s: f64,
    /// How `dsts` was chosen ("all-to-all", "pairs"): for people, the
    /// generator only reads `dsts`.
    #[serde(default)]
    pub pattern: Option<String>,
    /// incast-mix: senders per event.
    #[serde(default)]
    pub fan_in: Option<u32>,
    /// incast-mix: the seed of the schedule every member of the group shares.
    #[serde(default)]
    pub schedule_seed: Option<u64>,
}

impl Plan {
    pub fn load(path: &Path) -> Result<Plan, PlanError> {
        let text = std::fs::read_to_string(path).map_err(|e| PlanError::Read(path.display().to_string(), e))?;
        Plan::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, source: &str) -> Result<Plan, PlanError> {
        let plan: Plan = serde_json::from_str(text).map_err(|e| PlanError::Parse(source.to_string(), e.to_string()))?;
        if plan.schema != SCHEMA {
            return Err(PlanError::Invalid(format!("{source}: not a p4cc plan (schema '{}')", plan.schema)));
        }
        if plan.version != VERSION {
            return Err(PlanError::Invalid(format!(
                "{source}: plan version {}; this simulator reads version {VERSION}",
                plan.version
            )));
        }
        Ok(plan)
    }

    pub fn arm(&self, name: &str) -> Result<&Arm, PlanError> {
        self.arms.iter().find(|a| a.name == name).ok_or_else(|| {
            let names: Vec<&str> = self.arms.iter().map(|a| a.name.as_str()).collect();
            PlanError::Invalid(format!("no arm '{name}' in the plan (arms: {})", names.join(", ")))
        })
    }
}

impl Arm {
    /// When the traffic is over: the duration, or later if a long flow says.
    pub fn end_s(&self) -> f64 {
        let mut end = self.duration_s;
        for a in &self.agents {
            if let Some(w) = &a.workload {
                if w.kind == "long" {
                    for f in &w.flows {
                        end = end.max(f.stop_s);
                    }
                }
            }
        }
        end
    }
}
