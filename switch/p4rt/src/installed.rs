//! What the server holds of an installed pipeline — the program, its
//! state, its P4Info binding, and the clone sessions and multicast groups
//! as they were written — shared by the service (server.rs) and the
//! entity codecs (entities.rs), which therefore need not import each other.
use crate::binding::Binding;
use crate::proto::p4::v1::ForwardingPipelineConfig;
use pipeline::{Program, State};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// A pipeline: the program, its run-time state and its P4Info binding.
pub struct Pipeline {
    pub program: Arc<Program>,
    pub state: Arc<State>,
    /// `None` when the pipeline came from a JSON file without a P4Info.
    pub binding: Option<Binding>,
    pub config: ForwardingPipelineConfig,
    /// Clone sessions and multicast groups written, with what the engine
    /// does not keep of them. Writes hold this lock while they change the
    /// engine, so a Read sees the two agree.
    pub pre: Mutex<PreBook>,
}

/// The replication engine as the controller wrote it. The engine keeps
/// only (port, instance) pairs; a Read must answer with the message that was
/// written (spec: read-write symmetry), so the form of each replica's port
/// and a multicast group's opaque metadata are kept here. Its keys are also
/// the ids a wildcard Read lists.
#[derive(Debug, Clone, Default)]
pub struct PreBook {
    pub clone_sessions: BTreeMap<u32, PreWritten>,
    pub mcast_groups: BTreeMap<u16, PreWritten>,
}

/// What one clone session or multicast group was written with, beyond its
/// replicas' (port, instance) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreWritten {
    /// The port form of each replica, by (port, instance): the pair is
    /// unique within an entry (a duplicate is refused), the order of the
    /// replicas is the engine's.
    pub port_forms: BTreeMap<(u32, u16), PortForm>,
    /// `MulticastGroupEntry.metadata`: opaque to the target, returned on Read.
    pub metadata: Vec<u8>,
}

impl PreWritten {
    /// The form `port` of replica (port, instance) was written in. A replica
    /// the book does not know of (none today) reads in the current form.
    pub fn port_form(&self, port: u32, instance: u16) -> PortForm {
        self.port_forms.get(&(port, instance)).copied().unwrap_or_default()
    }
}

/// How a `p4.v1.Replica` named its port. P4Runtime 1.4 replaced the
/// `uint32 egress_port` by `bytes port` in a oneof; both are valid, and
/// clients still write the old one (p4cc's own controller does).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PortForm {
    /// `bytes port` (P4Runtime ≥ 1.4), read back canonical.
    #[default]
    Bytes,
    /// The deprecated `uint32 egress_port`.
    Uint32,
}

/// A poisoned lock still guards consistent data here: every writer
/// leaves it whole before it can panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
