//! The P4Info of a pipeline bound to the loaded bmv2 JSON program: P4Runtime
//! ids to engine ids, checked for agreement (names, match fields, widths).
use crate::proto::p4::config::v1 as p4info;
use pipeline::{ActionId, CounterId, MatchKind, Program, RegisterId, TableId};
use std::collections::HashMap;
use thiserror::Error;

/// The P4Info does not describe the JSON program (→ `INVALID_ARGUMENT`).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("P4Info does not match the device config: {0}")]
pub struct BindError(pub String);

fn bad<T>(msg: String) -> Result<T, BindError> {
    Err(BindError(msg))
}

/// P4Info match kinds the engine knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    Optional,
}

#[derive(Debug, Clone)]
pub struct BoundField {
    pub id: u32,
    pub name: String,
    pub kind: FieldKind,
    pub bitwidth: u32,
}

#[derive(Debug, Clone)]
pub struct BoundParam {
    pub id: u32,
    pub name: String,
    pub bitwidth: u32,
}

#[derive(Debug, Clone)]
pub struct BoundAction {
    pub id: u32,
    pub name: String,
    /// In engine (JSON runtime_data) order.
    pub params: Vec<BoundParam>,
    pub param_pos: HashMap<u32, usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    TableAndDefault,
    TableOnly,
    DefaultOnly,
}

#[derive(Debug, Clone)]
pub struct BoundTable {
    pub id: u32,
    pub name: String,
    pub table: TableId,
    /// In engine (JSON key) order.
    pub fields: Vec<BoundField>,
    pub field_pos: HashMap<u32, usize>,
    /// P4Info action id → engine action id (this table's copy) and scope.
    pub actions: HashMap<u32, (ActionId, Scope)>,
    pub action_rev: HashMap<ActionId, u32>,
    pub needs_priority: bool,
    pub is_const: bool,
    pub default_is_const: bool,
    pub direct_counter: Option<u32>,
    pub size: i64,
}

#[derive(Debug, Clone)]
pub struct BoundCounter {
    pub id: u32,
    pub name: String,
    pub counter: CounterId,
    pub size: u64,
    pub unit: i32,
}

#[derive(Debug, Clone)]
pub struct BoundDirectCounter {
    pub id: u32,
    pub table_id: u32,
    pub counter: CounterId,
}

#[derive(Debug, Clone)]
pub struct BoundRegister {
    pub id: u32,
    pub name: String,
    pub register: RegisterId,
    pub size: u64,
    pub bitwidth: u32,
}

/// A controller header (`packet_in` / `packet_out`): its fields in order.
#[derive(Debug, Clone)]
pub struct ControllerHeader {
    pub id: u32,
    pub fields: Vec<(u32, String, u32)>,
}

#[derive(Debug, Clone, Default)]
pub struct Binding {
    pub tables: HashMap<u32, BoundTable>,
    /// P4Info order, for reads of all tables.
    pub table_order: Vec<u32>,
    pub table_by_engine: HashMap<TableId, u32>,
    pub actions: HashMap<u32, BoundAction>,
    pub counters: HashMap<u32, BoundCounter>,
    pub counter_order: Vec<u32>,
    pub direct_counters: HashMap<u32, BoundDirectCounter>,
    pub registers: HashMap<u32, BoundRegister>,
    pub register_order: Vec<u32>,
    pub packet_in: Option<ControllerHeader>,
    pub packet_out: Option<ControllerHeader>,
}

fn name_of(p: &Option<p4info::Preamble>) -> (u32, String) {
    match p {
        Some(p) => (p.id, p.name.clone()),
        None => (0, String::new()),
    }
}

/// Names agree if equal, or if one is the other with a control prefix
/// (p4c writes fully qualified names to both, but be lenient about
/// top-level objects).
fn same_name(a: &str, b: &str) -> bool {
    a == b || a.ends_with(&format!(".{b}")) || b.ends_with(&format!(".{a}"))
}

fn kind_of(f: &p4info::MatchField) -> Result<FieldKind, String> {
    use p4info::match_field::{Match, MatchType};
    match &f.r#match {
        Some(Match::MatchType(t)) => match MatchType::try_from(*t) {
            Ok(MatchType::Exact) => Ok(FieldKind::Exact),
            Ok(MatchType::Lpm) => Ok(FieldKind::Lpm),
            Ok(MatchType::Ternary) => Ok(FieldKind::Ternary),
            Ok(MatchType::Range) => Ok(FieldKind::Range),
            Ok(MatchType::Optional) => Ok(FieldKind::Optional),
            _ => Err(format!("match type {t}")),
        },
        Some(Match::OtherMatchType(s)) => Err(format!("match type '{s}'")),
        None => Err("no match type".into()),
    }
}

fn compatible(p: FieldKind, e: MatchKind) -> bool {
    matches!(
        (p, e),
        (FieldKind::Exact, MatchKind::Exact)
            | (FieldKind::Lpm, MatchKind::Lpm)
            | (FieldKind::Ternary, MatchKind::Ternary)
            | (FieldKind::Range, MatchKind::Range)
            | (FieldKind::Optional, MatchKind::Optional)
            | (FieldKind::Optional, MatchKind::Ternary)
    )
}

impl Binding {
    /// Checks that every P4Info object exists in `program` with the same
    /// shape, and maps the ids.
    pub fn new(info: &p4info::P4Info, program: &Program) -> Result<Binding, BindError> {
        let mut b = Binding::default();

        if !info.action_profiles.is_empty() {
            return bad("action profiles/selectors are not supported by the embedded target".into());
        }
        if !info.meters.is_empty() || !info.direct_meters.is_empty() {
            return bad("meters are not supported by the embedded target".into());
        }

        // Actions: by name; the JSON may hold several copies (one per table).
        let engine_actions = program.actions();
        for a in &info.actions {
            let (id, name) = name_of(&a.preamble);
            if id == 0 || b.actions.contains_key(&id) {
                return bad(format!("action '{name}' has a missing or duplicate id {id}"));
            }
            let Some(ea) = engine_actions.iter().find(|x| x.name == name) else {
                return bad(format!("action '{name}' is not in the JSON"));
            };
            if ea.params.len() != a.params.len() {
                return bad(format!(
                    "action '{name}' has {} parameters in P4Info but {} in the JSON",
                    a.params.len(),
                    ea.params.len()
                ));
            }
            let mut params = Vec::with_capacity(ea.params.len());
            let mut param_pos = HashMap::new();
            for (pos, ep) in ea.params.iter().enumerate() {
                // By name when it is there, else by position.
                let pp = a.params.iter().find(|p| p.name == ep.name).unwrap_or(&a.params[pos]);
                if pp.bitwidth < 0 || pp.bitwidth as u32 != ep.bitwidth {
                    return bad(format!(
                        "parameter '{}' of action '{name}' is {} bits in P4Info but {} in the JSON",
                        pp.name, pp.bitwidth, ep.bitwidth
                    ));
                }
                if param_pos.insert(pp.id, pos).is_some() {
                    return bad(format!("action '{name}' has two parameters with id {}", pp.id));
                }
                params.push(BoundParam { id: pp.id, name: pp.name.clone(), bitwidth: ep.bitwidth });
            }
            b.actions.insert(id, BoundAction { id, name, params, param_pos });
        }

        // Direct counters, by the table they belong to.
        let mut direct_by_table: HashMap<u32, u32> = HashMap::new();
        for dc in &info.direct_counters {
            let (id, name) = name_of(&dc.preamble);
            direct_by_table.insert(dc.direct_table_id, id);
            let Some(ec) = program.counters().iter().find(|c| same_name(&c.name, &name)) else {
                return bad(format!("direct counter '{name}' is not in the JSON"));
            };
            if !ec.is_direct {
                return bad(format!("counter '{name}' is direct in P4Info but not in the JSON"));
            }
            b.direct_counters.insert(id, BoundDirectCounter { id, table_id: dc.direct_table_id, counter: ec.id });
        }

        for t in &info.tables {
            let (id, name) = name_of(&t.preamble);
            if id == 0 || b.tables.contains_key(&id) {
                return bad(format!("table '{name}' has a missing or duplicate id {id}"));
            }
            let Some(et) = program.tables().iter().find(|x| x.name == name).or_else(|| {
                program.tables().iter().find(|x| same_name(&x.name, &name))
            }) else {
                return bad(format!("table '{name}' is not in the JSON"));
            };
            if et.keys.len() != t.match_fields.len() {
                return bad(format!(
                    "table '{name}' has {} match fields in P4Info but {} in the JSON",
                    t.match_fields.len(),
                    et.keys.len()
                ));
            }
            let mut fields = Vec::new();
            let mut field_pos = HashMap::new();
            for (pos, ek) in et.keys.iter().enumerate() {
                let mf = t.match_fields.iter().find(|m| m.name == ek.name).unwrap_or(&t.match_fields[pos]);
                let kind = kind_of(mf)
                    .map_err(|w| BindError(format!("match field '{}' of table '{name}': unsupported {w}", mf.name)))?;
                if !compatible(kind, ek.match_kind) {
                    return bad(format!(
                        "match field '{}' of table '{name}' is {:?} in P4Info but {:?} in the JSON",
                        mf.name, kind, ek.match_kind
                    ));
                }
                if mf.bitwidth < 0 || mf.bitwidth as u32 != ek.bitwidth {
                    return bad(format!(
                        "match field '{}' of table '{name}' is {} bits in P4Info but {} in the JSON",
                        mf.name, mf.bitwidth, ek.bitwidth
                    ));
                }
                if field_pos.insert(mf.id, pos).is_some() {
                    return bad(format!("table '{name}' has two match fields with id {}", mf.id));
                }
                fields.push(BoundField { id: mf.id, name: mf.name.clone(), kind, bitwidth: ek.bitwidth });
            }
            let mut actions = HashMap::new();
            let mut action_rev = HashMap::new();
            for r in &t.action_refs {
                let Some(ba) = b.actions.get(&r.id) else {
                    return bad(format!("table '{name}' refers to unknown action id {}", r.id));
                };
                let Some(eid) = et.action_ids.iter().copied().find(|aid| {
                    engine_actions.iter().any(|ea| ea.id == *aid && ea.name == ba.name)
                }) else {
                    return bad(format!("action '{}' is not an action of table '{name}' in the JSON", ba.name));
                };
                let scope = match r.scope {
                    1 => Scope::TableOnly,
                    2 => Scope::DefaultOnly,
                    _ => Scope::TableAndDefault,
                };
                actions.insert(r.id, (eid, scope));
                action_rev.insert(eid, r.id);
            }
            let direct_counter = direct_by_table.get(&id).copied();
            if let Some(dc) = direct_counter {
                let want = b.direct_counters[&dc].counter;
                if et.direct_counter != Some(want) {
                    return bad(format!("table '{name}' has no direct counter in the JSON"));
                }
            }
            b.table_by_engine.insert(et.id, id);
            b.table_order.push(id);
            b.tables.insert(
                id,
                BoundTable {
                    id,
                    name: name.clone(),
                    table: et.id,
                    fields,
                    field_pos,
                    actions,
                    action_rev,
                    needs_priority: et.needs_priority,
                    is_const: t.is_const_table || et.has_const_entries,
                    default_is_const: t.const_default_action_id != 0 || et.default_is_const,
                    direct_counter,
                    size: t.size,
                },
            );
        }
        for dc in b.direct_counters.values() {
            if !b.tables.contains_key(&dc.table_id) {
                return bad(format!("direct counter {} refers to unknown table id {}", dc.id, dc.table_id));
            }
        }

        for c in &info.counters {
            let (id, name) = name_of(&c.preamble);
            let Some(ec) = program.counters().iter().find(|x| x.name == name && !x.is_direct).or_else(|| {
                program.counters().iter().find(|x| same_name(&x.name, &name) && !x.is_direct)
            }) else {
                return bad(format!("counter '{name}' is not in the JSON"));
            };
            if c.size < 0 || c.size as u64 != ec.size {
                return bad(format!("counter '{name}' has {} cells in P4Info but {} in the JSON", c.size, ec.size));
            }
            let unit = c.spec.map(|s| s.unit).unwrap_or(0);
            b.counter_order.push(id);
            b.counters.insert(id, BoundCounter { id, name, counter: ec.id, size: ec.size, unit });
        }

        for r in &info.registers {
            let (id, name) = name_of(&r.preamble);
            let Some(er) = program.registers().iter().find(|x| x.name == name).or_else(|| {
                program.registers().iter().find(|x| same_name(&x.name, &name))
            }) else {
                return bad(format!("register '{name}' is not in the JSON"));
            };
            let bw = register_bitwidth(r)
                .ok_or_else(|| BindError(format!("register '{name}': only bit<W> registers are supported")))?;
            if bw != er.bitwidth {
                return bad(format!("register '{name}' is {bw} bits in P4Info but {} in the JSON", er.bitwidth));
            }
            if r.size < 0 || r.size as u64 != er.size {
                return bad(format!("register '{name}' has {} cells in P4Info but {} in the JSON", r.size, er.size));
            }
            b.register_order.push(id);
            b.registers.insert(id, BoundRegister { id, name, register: er.id, size: er.size, bitwidth: bw });
        }

        for m in &info.controller_packet_metadata {
            let (id, name) = name_of(&m.preamble);
            let h = ControllerHeader {
                id,
                fields: m.metadata.iter().map(|f| (f.id, f.name.clone(), f.bitwidth.max(0) as u32)).collect(),
            };
            match name.as_str() {
                "packet_in" => b.packet_in = Some(h),
                "packet_out" => b.packet_out = Some(h),
                _ => {}
            }
        }
        Ok(b)
    }
}

fn register_bitwidth(r: &p4info::Register) -> Option<u32> {
    use p4info::p4_bitstring_like_type_spec::TypeSpec as B;
    use p4info::p4_data_type_spec::TypeSpec as D;
    match r.type_spec.as_ref()?.type_spec.as_ref()? {
        D::Bitstring(bs) => match bs.type_spec.as_ref()? {
            B::Bit(b) => Some(b.bitwidth.max(0) as u32),
            B::Int(i) => Some(i.bitwidth.max(0) as u32),
            _ => None,
        },
        _ => None,
    }
}
