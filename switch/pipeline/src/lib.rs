//! v1model pipeline engine for p4c-generated bmv2 JSON.
//!
//! [`Program::from_json`] precompiles the JSON once; [`State`] holds the
//! runtime state the control plane writes (tables, counters, registers,
//! clone sessions, multicast groups, value sets); an [`Engine`] per packet
//! thread runs packets with bmv2 simple_switch semantics: [`Engine::ingress`]
//! at arrival, [`Engine::egress`] when the packet leaves its queue.

mod actions;
mod bits;
mod checksum;
mod codec;
mod compile;
mod engine;
mod error;
mod eval;
mod fast;
mod ir;
mod jit;
mod packet;
mod parser;
mod phv;
mod rng;
mod shared;
mod state;
mod tables;

pub use engine::{instance_type, Engine, QueueMeta, Queued, DROP_PORT};
pub use error::{ErrorCode, LoadError, StateError};
pub use ir::{
    ActionCall, ActionId, ActionInfo, CounterId, CounterInfo, CounterKind, KeyInfo, MatchKey, MatchKind, ParamInfo,
    Program, RegisterId, RegisterInfo, TableEntry, TableId, TableInfo, ValueSetId, ValueSetInfo,
};
pub use jit::JitStats;
pub use state::{CounterValue, Replica, State};

#[cfg(test)]
mod send_sync {
    fn is_send_sync<T: Send + Sync>() {}
    fn is_send<T: Send>() {}
    #[test]
    fn shared_types_cross_threads() {
        is_send_sync::<crate::State>();
        is_send_sync::<crate::Program>();
        is_send::<crate::Engine>();
        is_send::<crate::Queued>();
    }
}

