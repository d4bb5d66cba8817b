//! p4cc's virtual-time executor. A scenario plan's arm runs in one process
//! with nanosecond time and a discrete-event core, built from the very code
//! the namespace lab runs: every switch is p4cc-node's packet path (the
//! `pipeline` engine on p4c's JSON, the `ports` queue and link model)
//! serving the `p4rt` P4Runtime service and the admin API, every host runs
//! `datapath`'s sender stack and the `transport` receiver with the `cc`
//! algorithms, `traffic` workloads and the `telemetry` collector. Only what
//! a kernel does (framing, demultiplexing, a NIC's serialisation) is
//! written here.
//!
//! The controller drives a run over stdin/stdout ([`control`]).

pub mod agent;
pub mod control;
pub mod frame;
pub mod plan;
pub mod switch;
pub mod world;

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("{0}")]
    Plan(String),
    #[error("{0}")]
    Setup(String),
    #[error("{0}")]
    Output(String),
    #[error("{0}")]
    Control(String),
}

impl From<plan::PlanError> for SimError {
    fn from(e: plan::PlanError) -> Self {
        SimError::Plan(e.to_string())
    }
}
