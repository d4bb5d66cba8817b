//! The compiled program the engine runs, with everything the compiler
//! resolved: field references as PHV slots, expressions as trees, actions
//! as primitives, control flow as a graph of nodes. Plain data: nothing
//! here knows the packet path, the runtime state or the JSON it came from.

mod action;
mod control;
mod expr;
mod headers;
mod info;
mod parser;

pub(crate) use action::{ActionDef, Prim};
pub(crate) use control::{ActionCallNode, Cond, KeyKind, KeySrc, NextMode, Node, TableDef, TableKey, TableKind};
pub(crate) use expr::{BinOp, Expr, HdrRef, LValue, UnionRef};
pub(crate) use headers::{CoreErrors, FieldDef, HeaderInst, HeaderType, SlotInfo, StackDef, StdMeta, UnionDef};
pub use info::{
    ActionCall, ActionId, ActionInfo, CounterId, CounterInfo, CounterKind, KeyInfo, MatchKey, MatchKind, ParamInfo,
    RegisterId, RegisterInfo, TableEntry, TableId, TableInfo, ValueSetId, ValueSetInfo,
};
pub(crate) use parser::{
    Calc, CalcInput, ChecksumDef, ChecksumKind, HashAlgo, ParseState, ParserOp, SetSrc, TransCase, TransKey,
};
use std::collections::HashMap;

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
    /// Bytes a deparse buffer needs past its headers for the word stores
    /// of the last one (codec.rs).
    pub(crate) deparse_slack: usize,
    /// Header validity of a fresh packet: metadata valid, headers not.
    pub(crate) valid_at_start: Vec<bool>,
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
