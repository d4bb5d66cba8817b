//! Error types: `LoadError` when a bmv2 JSON cannot be executed faithfully,
//! `StateError` for control-plane writes the P4Runtime server maps to gRPC
//! status codes (see [`StateError::code`]).

use thiserror::Error;

/// The JSON could not be loaded. Every construct the engine does not
/// implement is rejected here, by name, rather than misbehaving at run time.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LoadError {
    #[error("invalid JSON: {0}")]
    Json(String),
    #[error("malformed bmv2 JSON at {at}: {msg}")]
    Malformed { at: String, msg: String },
    #[error("unsupported construct at {at}: {what}")]
    Unsupported { at: String, what: String },
}

impl LoadError {
    pub(crate) fn bad(at: impl Into<String>, msg: impl Into<String>) -> Self {
        LoadError::Malformed { at: at.into(), msg: msg.into() }
    }
    pub(crate) fn unsupported(at: impl Into<String>, what: impl Into<String>) -> Self {
        LoadError::Unsupported { at: at.into(), what: what.into() }
    }
}

pub(crate) type LoadResult<T> = Result<T, LoadError>;

/// gRPC-style classification of a [`StateError`], so the P4Runtime server
/// can map it to a status code without matching every variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    AlreadyExists,
    NotFound,
    ResourceExhausted,
    InvalidArgument,
    OutOfRange,
    PermissionDenied,
}

/// A control-plane operation on [`crate::State`] was refused.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum StateError {
    #[error("no such table (id {0})")]
    NoSuchTable(usize),
    #[error("no such counter (id {0})")]
    NoSuchCounter(usize),
    #[error("no such register (id {0})")]
    NoSuchRegister(usize),
    #[error("no such value set (id {0})")]
    NoSuchValueSet(usize),
    #[error("table entry already exists")]
    EntryExists,
    #[error("no such table entry")]
    NoSuchEntry,
    #[error("table '{table}' is full ({max_size} entries)")]
    TableFull { table: String, max_size: usize },
    #[error("bad match key: {0}")]
    BadKey(String),
    #[error("bad action: {0}")]
    BadAction(String),
    #[error("bad action argument: {0}")]
    BadArg(String),
    #[error("the default action of table '{0}' is const")]
    ConstDefault(String),
    #[error("the entries of table '{0}' are const (declared in the P4 program)")]
    ConstEntries(String),
    #[error("table '{0}' has no direct counter")]
    NoDirectCounter(String),
    #[error("counter '{0}' is direct: read it through its table entry")]
    CounterIsDirect(String),
    #[error("index {index} out of range (size {size})")]
    IndexOutOfRange { index: u64, size: u64 },
    #[error("value does not fit in {bitwidth} bits: {what}")]
    ValueTooWide { what: String, bitwidth: u32 },
    #[error("no such clone session {0}")]
    NoSuchCloneSession(u32),
    #[error("no such multicast group {0}")]
    NoSuchMcastGroup(u16),
}

impl StateError {
    /// The gRPC status class this error maps to.
    pub fn code(&self) -> ErrorCode {
        use StateError::*;
        match self {
            EntryExists => ErrorCode::AlreadyExists,
            NoSuchTable(_) | NoSuchCounter(_) | NoSuchRegister(_) | NoSuchValueSet(_)
            | NoSuchEntry | NoSuchCloneSession(_) | NoSuchMcastGroup(_) => ErrorCode::NotFound,
            TableFull { .. } => ErrorCode::ResourceExhausted,
            BadKey(_) | BadAction(_) | BadArg(_) | NoDirectCounter(_) | CounterIsDirect(_)
            | ValueTooWide { .. } => ErrorCode::InvalidArgument,
            IndexOutOfRange { .. } => ErrorCode::OutOfRange,
            ConstDefault(_) | ConstEntries(_) => ErrorCode::PermissionDenied,
        }
    }
}
