//! The loaded program: public descriptions of tables, actions, counters and
//! registers, and the precompiled internal representation the engine runs
//! (field references resolved to PHV slots, expressions to trees).

use crate::actions::Prim;
use crate::error::{LoadError, LoadResult};
use crate::expr::Expr;
use std::collections::HashMap;

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub usize);
    };
}
id_type!(/// Index into [`Program::tables`].
    TableId);
id_type!(/// Index into [`Program::actions`].
    ActionId);
id_type!(/// Index into [`Program::counters`].
    CounterId);
id_type!(/// Index into [`Program::registers`].
    RegisterId);
id_type!(/// Index into [`Program::value_sets`].
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

// ---------------------------------------------------------------- internal

#[derive(Clone, Debug)]
pub(crate) struct FieldDef {
    pub name: String,
    pub width: u32,
    pub signed: bool,
    pub saturating: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct HeaderType {
    pub name: String,
    pub fields: Vec<FieldDef>,
    /// Total bits of the fields (the header's size in the packet).
    pub bits: u32,
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct HeaderInst {
    pub name: String,
    pub htype: usize,
    pub metadata: bool,
    /// PHV slot of the first field; fields are consecutive.
    pub first_slot: usize,
    pub nfields: usize,
    pub nbytes: usize,
    /// (union index, member index) if the header is a union member.
    pub union_of: Option<(usize, usize)>,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotInfo {
    pub width: u32,
    pub signed: bool,
    pub saturating: bool,
    pub header: u32,
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct StackDef {
    pub name: String,
    pub htype: usize,
    pub headers: Vec<usize>,
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct UnionDef {
    pub name: String,
    pub headers: Vec<usize>,
}

/// A place a value can be written to.
#[derive(Clone, Debug)]
pub(crate) enum LValue {
    Slot(usize),
    /// Field `off` of the last valid element of a stack.
    StackLast { stack: usize, off: usize },
    /// Field `off` of a header chosen at run time.
    HdrField { hdr: Box<HdrRef>, off: usize },
}

/// A header, possibly chosen at run time.
#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) enum HdrRef {
    Fixed(usize),
    StackIdx { stack: usize, idx: Box<Expr> },
    UnionMember { un: Box<UnionRef>, member: usize },
}

#[derive(Clone, Debug)]
pub(crate) enum UnionRef {
    Fixed(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    Table(usize),
    Cond(usize),
    Call(usize),
}

#[derive(Clone, Debug)]
pub(crate) struct Cond {
    pub expr: Expr,
    pub t: Option<Node>,
    pub f: Option<Node>,
}

#[derive(Clone, Debug)]
pub(crate) struct ActionCallNode {
    pub action: usize,
    pub next: Option<Node>,
}

#[derive(Clone, Debug)]
pub(crate) struct ActionDef {
    pub prims: Vec<Prim>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    Valid,
}

#[derive(Clone, Debug)]
pub(crate) enum KeySrc {
    Slot(usize),
    Valid(usize),
}

#[derive(Clone, Debug)]
pub(crate) struct TableKey {
    pub src: KeySrc,
    pub mask: Option<u128>,
    pub width: u32,
    pub kind: KeyKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableKind {
    Exact,
    Lpm,
    Ternary,
}

#[derive(Clone, Debug)]
pub(crate) enum NextMode {
    /// `next_tables` maps each action (by program action index). A table
    /// has a handful of actions: a linear scan beats hashing here.
    ByAction(Vec<(usize, Option<Node>)>),
    HitMiss { hit: Option<Node>, miss: Option<Node> },
}

#[derive(Clone, Debug)]
pub(crate) struct TableDef {
    pub keys: Vec<TableKey>,
    pub kind: TableKind,
    pub next: NextMode,
    pub base_default_next: Option<Node>,
    /// Default entry from the program: (action, args).
    pub default: Option<(usize, Vec<u128>)>,
    pub const_entries: Vec<crate::tables::TableEntry>,
    /// A table that can only ever run one action: no key (so no entries)
    /// and a const default. p4c emits one such `tbl_*` per group of
    /// statements outside any table; running the action directly spares
    /// the lookup and the table lock.
    pub fixed: Option<(usize, Vec<u128>)>,
}

impl TableDef {
    /// The control node after this table applied `action` (None: no
    /// action ran), hit or missed.
    pub fn next_node(&self, hit: bool, action: Option<usize>) -> Option<Node> {
        match &self.next {
            NextMode::HitMiss { hit: h, miss } => {
                if hit {
                    *h
                } else {
                    *miss
                }
            }
            NextMode::ByAction(m) => match action {
                Some(a) => m.iter().find(|(x, _)| *x == a).and_then(|(_, n)| *n),
                None => self.base_default_next,
            },
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum CalcInput {
    Field { slot: usize, header: usize },
    Const { value: u128, bits: u32 },
    Header(usize),
    Payload,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HashAlgo {
    Crc16,
    Crc32,
    CrcCcitt,
    Csum16,
    Identity,
    Xor16,
    Xor32,
    Crc8Custom,
    Crc16Custom,
    Crc32Custom,
    Crc64Custom,
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct Calc {
    pub name: String,
    pub algo: HashAlgo,
    pub inputs: Vec<CalcInput>,
}

#[derive(Clone, Debug)]
pub(crate) enum ChecksumKind {
    Calc(usize),
    Ipv4,
}

#[derive(Clone, Debug)]
pub(crate) struct ChecksumDef {
    pub slot: usize,
    pub header: usize,
    pub kind: ChecksumKind,
    pub cond: Option<Expr>,
}

#[derive(Clone, Debug)]
pub(crate) enum TransKey {
    Slot(usize),
    StackLast { stack: usize, off: usize },
    Lookahead { off_bits: usize, width: u32 },
}

#[derive(Clone, Debug)]
pub(crate) enum TransCase {
    Value { values: Vec<u128>, masks: Option<Vec<u128>>, next: Option<usize> },
    VSet { vset: usize, masks: Option<Vec<u128>>, next: Option<usize> },
}

#[derive(Clone, Debug)]
pub(crate) enum SetSrc {
    Expr(Expr),
    Lookahead { off_bits: usize, width: u32 },
}

#[derive(Clone, Debug)]
pub(crate) enum ParserOp {
    Extract(usize),
    ExtractStack(usize),
    Set { dst: LValue, src: SetSrc },
    Verify { cond: Expr, error: Expr },
    Advance(Expr),
    Prim(Prim),
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct ParseState {
    pub name: String,
    pub ops: Vec<ParserOp>,
    pub key: Vec<TransKey>,
    pub key_widths: Vec<u32>,
    pub cases: Vec<TransCase>,
    pub default_next: Option<usize>,
}

/// Core parser error codes, as numbered by the program's `errors` list.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CoreErrors {
    pub no_error: u32,
    pub packet_too_short: u32,
    pub no_match: u32,
    pub stack_out_of_bounds: u32,
    pub header_too_short: u32,
    pub parser_timeout: u32,
    pub parser_invalid_argument: u32,
}

/// PHV slots of the v1model standard metadata the target reads or writes.
#[derive(Clone, Copy, Debug, Default)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct StdMeta {
    pub header: Option<usize>,
    pub ingress_port: Option<usize>,
    pub egress_spec: Option<usize>,
    pub egress_port: Option<usize>,
    pub instance_type: Option<usize>,
    pub packet_length: Option<usize>,
    pub enq_timestamp: Option<usize>,
    pub enq_qdepth: Option<usize>,
    pub deq_timedelta: Option<usize>,
    pub deq_qdepth: Option<usize>,
    pub qid: Option<usize>,
    pub ingress_ts: Option<usize>,
    pub egress_ts: Option<usize>,
    pub mcast_grp: Option<usize>,
    pub egress_rid: Option<usize>,
    pub checksum_error: Option<usize>,
    pub parser_error: Option<usize>,
    pub priority: Option<usize>,
    pub with_queueing: bool,
}

/// An immutable program, parsed once from bmv2 JSON.
#[derive(Debug)]
pub struct Program {
    pub(crate) htypes: Vec<HeaderType>,
    pub(crate) headers: Vec<HeaderInst>,
    pub(crate) slots: Vec<SlotInfo>,
    pub(crate) stacks: Vec<StackDef>,
    pub(crate) unions: Vec<UnionDef>,
    pub(crate) errors: CoreErrors,
    pub(crate) field_lists: HashMap<u64, Vec<usize>>,
    pub(crate) parse_states: Vec<ParseState>,
    pub(crate) parser_start: Option<usize>,
    pub(crate) deparser: Vec<usize>,
    pub(crate) calcs: Vec<Calc>,
    pub(crate) verify_checksums: Vec<ChecksumDef>,
    pub(crate) update_checksums: Vec<ChecksumDef>,
    pub(crate) action_defs: Vec<ActionDef>,
    pub(crate) action_infos: Vec<ActionInfo>,
    pub(crate) table_defs: Vec<TableDef>,
    pub(crate) table_infos: Vec<TableInfo>,
    pub(crate) conds: Vec<Cond>,
    pub(crate) calls: Vec<ActionCallNode>,
    pub(crate) ingress_start: Option<Node>,
    pub(crate) egress_start: Option<Node>,
    pub(crate) counter_infos: Vec<CounterInfo>,
    pub(crate) register_infos: Vec<RegisterInfo>,
    pub(crate) vset_infos: Vec<ValueSetInfo>,
    /// Per value set: widths of the transition-key fields it is used with.
    pub(crate) vset_key_widths: Vec<Vec<u32>>,
    pub(crate) sm: StdMeta,
    pub(crate) table_by_name: HashMap<String, usize>,
    pub(crate) action_by_name: HashMap<String, usize>,
    pub(crate) counter_by_name: HashMap<String, usize>,
    pub(crate) register_by_name: HashMap<String, usize>,
}

impl Program {
    /// Parses and precompiles a bmv2 JSON document (as written by
    /// `p4c-bm2-ss` for v1model). Anything the engine does not implement is
    /// an error naming the construct.
    pub fn from_json(text: &str) -> Result<Program, LoadError> {
        crate::compile::load(text)
    }

    pub fn tables(&self) -> &[TableInfo] {
        &self.table_infos
    }
    pub fn table_by_name(&self, name: &str) -> Option<TableId> {
        self.table_by_name.get(name).map(|&i| TableId(i)).or_else(|| {
            // also accept the last component(s) of a fully qualified name
            unique_suffix(self.table_infos.iter().map(|t| t.name.as_str()), name).map(TableId)
        })
    }
    pub fn actions(&self) -> &[ActionInfo] {
        &self.action_infos
    }
    pub fn action_by_name(&self, name: &str) -> Option<ActionId> {
        self.action_by_name.get(name).map(|&i| ActionId(i)).or_else(|| {
            unique_suffix(self.action_infos.iter().map(|t| t.name.as_str()), name).map(ActionId)
        })
    }
    pub fn counters(&self) -> &[CounterInfo] {
        &self.counter_infos
    }
    pub fn counter_by_name(&self, name: &str) -> Option<CounterId> {
        self.counter_by_name.get(name).map(|&i| CounterId(i)).or_else(|| {
            unique_suffix(self.counter_infos.iter().map(|t| t.name.as_str()), name).map(CounterId)
        })
    }
    pub fn registers(&self) -> &[RegisterInfo] {
        &self.register_infos
    }
    pub fn register_by_name(&self, name: &str) -> Option<RegisterId> {
        self.register_by_name.get(name).map(|&i| RegisterId(i)).or_else(|| {
            unique_suffix(self.register_infos.iter().map(|t| t.name.as_str()), name)
                .map(RegisterId)
        })
    }
    pub fn value_sets(&self) -> &[ValueSetInfo] {
        &self.vset_infos
    }
    pub fn value_set_by_name(&self, name: &str) -> Option<ValueSetId> {
        self.vset_infos.iter().position(|v| v.name == name).map(ValueSetId)
    }

    /// Bytes the deparser would emit for the given validity (helper).
    pub(crate) fn header_bytes(&self, valid: &[bool]) -> usize {
        self.deparser.iter().filter(|&&h| valid[h]).map(|&h| self.headers[h].nbytes).sum()
    }

    pub(crate) fn unsupported<T>(at: &str, what: impl Into<String>) -> LoadResult<T> {
        Err(LoadError::unsupported(at, what))
    }
}

/// Index of the name equal to `name` or ending in ".{name}", if all such
/// names are the same (p4c duplicates actions under one name).
fn unique_suffix<'a>(names: impl Iterator<Item = &'a str>, name: &str) -> Option<usize> {
    let mut found: Option<(usize, &str)> = None;
    for (i, n) in names.enumerate() {
        if n == name || (n.len() > name.len() && n.ends_with(name) && n.as_bytes()[n.len() - name.len() - 1] == b'.') {
            match found {
                Some((_, f)) if f != n => return None,
                Some(_) => {}
                None => found = Some((i, n)),
            }
        }
    }
    found.map(|(i, _)| i)
}
