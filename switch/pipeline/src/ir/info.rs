//! What the control plane sees of a program: the ids and descriptions of
//! its tables, actions, counters, registers and value sets, and the table
//! entries it writes.

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub usize);
    };
}
id_type!(/// Index into [`Program::tables`](crate::Program::tables).
    TableId);
id_type!(/// Index into [`Program::actions`](crate::Program::actions).
    ActionId);
id_type!(/// Index into [`Program::counters`](crate::Program::counters).
    CounterId);
id_type!(/// Index into [`Program::registers`](crate::Program::registers).
    RegisterId);
id_type!(/// Index into [`Program::value_sets`](crate::Program::value_sets).
    ValueSetId);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    /// bmv2 JSON writes P4 `optional` keys as `ternary`, so a key reads as
    /// `Optional` only if the JSON says so; [`crate::MatchKey::Optional`] is
    /// accepted on any ternary key.
    Optional,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyInfo {
    pub name: String,
    pub match_kind: MatchKind,
    pub bitwidth: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    pub id: TableId,
    pub name: String,
    pub keys: Vec<KeyInfo>,
    pub action_ids: Vec<ActionId>,
    pub max_size: usize,
    pub default_is_const: bool,
    pub direct_counter: Option<CounterId>,
    /// Entries come from the program (`const entries`): read-only.
    pub has_const_entries: bool,
    /// Entries need a priority (ternary, range or optional keys).
    pub needs_priority: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamInfo {
    pub name: String,
    pub bitwidth: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionInfo {
    pub id: ActionId,
    pub name: String,
    pub params: Vec<ParamInfo>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CounterKind {
    Packets,
    Bytes,
    /// bmv2 JSON does not carry the counter type: bmv2 always counts both,
    /// and so does this engine. This is what every loaded counter reports.
    PacketsAndBytes,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CounterInfo {
    pub id: CounterId,
    pub name: String,
    pub size: u64,
    pub is_direct: bool,
    pub kind: CounterKind,
    /// For a direct counter, the table it is bound to.
    pub table: Option<TableId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegisterInfo {
    pub id: RegisterId,
    pub name: String,
    pub size: u64,
    pub bitwidth: u32,
}

/// A parser value set (`value_set<...>` in P4), filled by the control plane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueSetInfo {
    pub id: ValueSetId,
    pub name: String,
    /// Width of one member: the key fields packed without padding.
    pub bitwidth: u32,
}

/// One key field of a table entry. Byte strings are big-endian, any length.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MatchKey {
    Exact(Vec<u8>),
    Lpm { value: Vec<u8>, prefix_len: u32 },
    Ternary { value: Vec<u8>, mask: Vec<u8> },
    Range { low: Vec<u8>, high: Vec<u8> },
    /// `None` is the wildcard.
    Optional(Option<Vec<u8>>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActionCall {
    pub action: ActionId,
    pub args: Vec<Vec<u8>>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TableEntry {
    pub key: Vec<MatchKey>,
    /// Larger wins (P4Runtime convention). Ignored for exact and LPM tables.
    pub priority: i32,
    pub action: ActionCall,
}
