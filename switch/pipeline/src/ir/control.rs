//! The ingress and egress control blocks: a graph of tables, conditionals
//! and direct action calls.

use super::expr::Expr;
use super::info::TableEntry;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    pub const_entries: Vec<TableEntry>,
    /// A table that can only ever run one action: no key (so no entries)
    /// and a const default. p4c emits one such `tbl_*` per group of
    /// statements outside any table; running the action directly spares
    /// the lookup and the table lock.
    pub fixed: Option<(usize, Vec<u128>)>,
    /// The node after the fixed action (a keyless table never hits), worked
    /// out once instead of searched for on every packet.
    pub fixed_next: Option<Node>,
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
