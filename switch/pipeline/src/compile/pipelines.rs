//! The ingress and egress pipelines: tables (keys, actions, next nodes,
//! default and const entries), conditionals and action calls, linked into
//! one graph of [`Node`]s per pipeline.

use super::expr::ExprCompiler;
use super::json::*;
use super::layout::Layout;
use super::primitives::Actions;
use crate::bits::bytes_of;
use crate::error::{LoadError, LoadResult};
use crate::ir::{
    ActionCall, ActionCallNode, ActionId, Cond, KeyInfo, KeyKind, KeySrc, MatchKey, MatchKind, NextMode, Node,
    TableDef, TableEntry, TableId, TableInfo, TableKey, TableKind,
};
use serde_json::Value;
use std::collections::HashMap;

/// Both pipelines' nodes, numbered across the two.
pub(super) struct Pipelines {
    pub table_defs: Vec<TableDef>,
    pub table_infos: Vec<TableInfo>,
    pub conds: Vec<Cond>,
    pub calls: Vec<ActionCallNode>,
    pub ingress: Option<Node>,
    pub egress: Option<Node>,
}

/// `x` compiles outside any action: conditions have no parameters.
pub(super) fn pipelines(root: &Value, x: &ExprCompiler, actions: &Actions) -> LoadResult<Pipelines> {
    let mut out = Pipelines { table_defs: vec![], table_infos: vec![], conds: vec![], calls: vec![], ingress: None, egress: None };
    let pls = get_arr(root, "pipelines", "root")?;
    for pl in pls {
        let pname = get_str(pl, "name", "pipelines")?.to_string();
        let which = match pname.as_str() {
            "ingress" => 0,
            "egress" => 1,
            other => {
                return Err(LoadError::unsupported(
                    "pipelines",
                    format!("pipeline '{other}' (v1model has ingress and egress)"),
                ))
            }
        };
        let at = format!("pipeline '{pname}'");
        if let Some(ap) = get_arr(pl, "action_profiles", &at)?.first() {
            return Err(LoadError::unsupported(&at, format!("action profile / selector '{}'", name_of(ap))));
        }
        let tables = get_arr(pl, "tables", &at)?;
        let conds = get_arr(pl, "conditionals", &at)?;
        let calls = get_arr(pl, "action_calls", &at)?;
        let mut nodes: HashMap<String, Node> = HashMap::new();
        for (i, t) in tables.iter().enumerate() {
            nodes.insert(get_str(t, "name", &at)?.to_string(), Node::Table(out.table_defs.len() + i));
        }
        for (i, cj) in conds.iter().enumerate() {
            nodes.insert(get_str(cj, "name", &at)?.to_string(), Node::Cond(out.conds.len() + i));
        }
        for (i, cj) in calls.iter().enumerate() {
            nodes.insert(get_str(cj, "name", &at)?.to_string(), Node::Call(out.calls.len() + i));
        }
        for t in tables {
            let (info, def) = table(t, &at, out.table_defs.len(), x.layout, actions, &nodes)?;
            out.table_infos.push(info);
            out.table_defs.push(def);
        }
        for cj in conds {
            let at = format!("conditional '{}'", name_of(cj));
            let expr = x.bool_expr(get(cj, "expression", &at)?, &at)?;
            out.conds.push(Cond {
                expr,
                t: node(&nodes, cj.get("true_next"), &at)?,
                f: node(&nodes, cj.get("false_next"), &at)?,
            });
        }
        for cj in calls {
            let at = format!("action call '{}'", name_of(cj));
            let action = actions.by_json_id(get(cj, "action_id", &at)?, &at)?;
            out.calls.push(ActionCallNode { action, next: node(&nodes, cj.get("next_node"), &at)? });
        }
        let start = node(&nodes, pl.get("init_table"), &at)?;
        if which == 0 {
            out.ingress = start;
        } else {
            out.egress = start;
        }
    }
    Ok(out)
}

/// A reference to a control node by name (None: the end of the pipeline).
fn node(nodes: &HashMap<String, Node>, v: Option<&Value>, at: &str) -> LoadResult<Option<Node>> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(n)) => {
            nodes.get(n).copied().map(Some).ok_or_else(|| LoadError::bad(at, format!("unknown control node '{n}'")))
        }
        Some(x) => Err(LoadError::bad(at, format!("bad control node reference {x}"))),
    }
}

/// Table number `tid` of the program.
fn table(
    t: &Value,
    pipeline_at: &str,
    tid: usize,
    layout: &Layout,
    actions: &Actions,
    nodes: &HashMap<String, Node>,
) -> LoadResult<(TableInfo, TableDef)> {
    let name = get_str(t, "name", pipeline_at)?.to_string();
    let at = format!("table '{name}'");
    let ttype = t.get("type").and_then(Value::as_str).unwrap_or("simple");
    if ttype != "simple" {
        return Err(LoadError::unsupported(&at, format!("table implementation '{ttype}' (action profiles / selectors)")));
    }
    if !matches!(t.get("direct_meters"), None | Some(Value::Null)) {
        return Err(LoadError::unsupported(&at, "direct meters"));
    }
    let (keys, kinfos) = table_keys(t, &at, layout)?;
    let nlpm = keys.iter().filter(|k| k.kind == KeyKind::Lpm).count();
    if nlpm > 1 {
        return Err(LoadError::bad(&at, "more than one LPM key field"));
    }
    let kind = if keys.iter().any(|k| matches!(k.kind, KeyKind::Ternary | KeyKind::Range)) {
        TableKind::Ternary
    } else if nlpm == 1 {
        TableKind::Lpm
    } else {
        TableKind::Exact
    };
    // actions
    let mut action_ids = Vec::new();
    if let Some(ids) = t.get("action_ids").and_then(Value::as_array) {
        for id in ids {
            action_ids.push(actions.by_json_id(id, &at)?);
        }
    } else {
        for n in get_arr(t, "actions", &at)? {
            let n = as_str(n, &at)?;
            action_ids.push(
                actions
                    .infos
                    .iter()
                    .position(|a| a.name == n)
                    .ok_or_else(|| LoadError::bad(&at, format!("unknown action '{n}'")))?,
            );
        }
    }
    let nt = get(t, "next_tables", &at)?;
    let next = if nt.get("__HIT__").is_some() || nt.get("__MISS__").is_some() {
        NextMode::HitMiss { hit: node(nodes, nt.get("__HIT__"), &at)?, miss: node(nodes, nt.get("__MISS__"), &at)? }
    } else {
        let mut m = Vec::with_capacity(action_ids.len());
        for &a in &action_ids {
            let an = &actions.infos[a].name;
            m.push((a, node(nodes, nt.get(an.as_str()), &at)?));
        }
        NextMode::ByAction(m)
    };
    let base_default_next = node(nodes, t.get("base_default_next"), &at)?;
    let (mut default, mut default_is_const) = (None, false);
    if let Some(de) = t.get("default_entry").filter(|x| !x.is_null()) {
        let a = actions.by_json_id(get(de, "action_id", &at)?, &at)?;
        let args = actions.const_args(a, get_arr(de, "action_data", &at)?, &at)?;
        default = Some((a, args));
        default_is_const = get_bool_or(de, "action_const", false) || get_bool_or(de, "action_entry_const", false);
    }
    let const_entries = const_entries(t, &at, &keys, actions)?;
    let max_size = if const_entries.is_empty() {
        t.get("max_size").and_then(Value::as_u64).unwrap_or(1024) as usize
    } else {
        const_entries.len()
    };
    let info = TableInfo {
        id: TableId(tid),
        name,
        keys: kinfos,
        action_ids: action_ids.iter().map(|&a| ActionId(a)).collect(),
        max_size,
        default_is_const,
        direct_counter: None,
        has_const_entries: !const_entries.is_empty(),
        needs_priority: kind == TableKind::Ternary,
    };
    let fixed = if keys.is_empty() && default_is_const && const_entries.is_empty() { default.clone() } else { None };
    let mut def = TableDef { keys, kind, next, base_default_next, default, const_entries, fixed, fixed_next: None };
    def.fixed_next = def.fixed.as_ref().and_then(|(a, _)| def.next_node(false, Some(*a)));
    Ok((info, def))
}

/// The key fields, as the engine reads them and as the control plane sees
/// them.
fn table_keys(t: &Value, at: &str, layout: &Layout) -> LoadResult<(Vec<TableKey>, Vec<KeyInfo>)> {
    let mut keys = Vec::new();
    let mut kinfos = Vec::new();
    for k in get_arr(t, "key", at)? {
        let mt = get_str(k, "match_type", at)?;
        let target = get(k, "target", at)?;
        let (src, width, dflt_name) = if mt == "valid" {
            let hn = as_str(target, at)?;
            (KeySrc::Valid(layout.header(hn, at)?), 1, hn.to_string())
        } else {
            let (h, f) = as_pair(target, at)?;
            let dn = format!("{}.{}", as_str(h, at)?, as_str(f, at)?);
            match layout.field_ref(target, at)? {
                Ok(s) => (KeySrc::Slot(s), layout.slots[s].width, dn),
                Err(h) => (KeySrc::Valid(h), 1, dn),
            }
        };
        let (kind, mkind) = match mt {
            "exact" => (KeyKind::Exact, MatchKind::Exact),
            "lpm" => (KeyKind::Lpm, MatchKind::Lpm),
            "ternary" => (KeyKind::Ternary, MatchKind::Ternary),
            "optional" => (KeyKind::Ternary, MatchKind::Optional),
            "range" => (KeyKind::Range, MatchKind::Range),
            "valid" => (KeyKind::Valid, MatchKind::Exact),
            other => return Err(LoadError::unsupported(at, format!("match kind '{other}'"))),
        };
        let mask = match k.get("mask") {
            None | Some(Value::Null) => None,
            Some(m) => Some(hex_or_int(m, at)?),
        };
        let kname = k.get("name").and_then(Value::as_str).map(str::to_string).unwrap_or(dflt_name);
        keys.push(TableKey { src, mask, width, kind });
        kinfos.push(KeyInfo { name: kname, match_kind: mkind, bitwidth: width });
    }
    Ok((keys, kinfos))
}

/// The `entries` of a table. In the JSON the smallest priority number
/// wins, in P4Runtime (and this engine) the largest: each becomes
/// max + 1 - priority.
fn const_entries(t: &Value, at: &str, keys: &[TableKey], actions: &Actions) -> LoadResult<Vec<TableEntry>> {
    let mut const_entries = Vec::new();
    let entries = get_arr(t, "entries", at)?;
    let max_p = entries.iter().filter_map(|e| e.get("priority").and_then(Value::as_i64)).max().unwrap_or(0);
    for e in entries {
        let mk = get_arr(e, "match_key", at)?;
        if mk.len() != keys.len() {
            return Err(LoadError::bad(at, "const entry with the wrong number of key fields"));
        }
        let mut key = Vec::new();
        for (m, kd) in mk.iter().zip(keys) {
            let w = kd.width;
            let b = |name: &str| -> LoadResult<Vec<u8>> { Ok(bytes_of(hex_or_int(get(m, name, at)?, at)?, w)) };
            key.push(match get_str(m, "match_type", at)? {
                "exact" => MatchKey::Exact(b("key")?),
                "lpm" => {
                    let plen = get_u64(m, "prefix_length", at)? as u32;
                    let v = hex_or_int(get(m, "key", at)?, at)?;
                    let pm = if plen == 0 { 0 } else { crate::bits::mask(w) ^ crate::bits::mask(w.saturating_sub(plen)) };
                    MatchKey::Lpm { value: bytes_of(v & pm, w), prefix_len: plen }
                }
                "ternary" | "optional" => {
                    let v = hex_or_int(get(m, "key", at)?, at)?;
                    let mk = hex_or_int(get(m, "mask", at)?, at)?;
                    MatchKey::Ternary { value: bytes_of(v & mk, w), mask: bytes_of(mk, w) }
                }
                "range" => MatchKey::Range { low: b("start")?, high: b("end")? },
                "valid" => MatchKey::Exact(vec![get(m, "key", at)?.as_bool().unwrap_or(false) as u8]),
                other => return Err(LoadError::unsupported(at, format!("const entry match type '{other}'"))),
            });
        }
        let ae = get(e, "action_entry", at)?;
        let a = actions.by_json_id(get(ae, "action_id", at)?, at)?;
        let args = actions.const_args(a, get_arr(ae, "action_data", at)?, at)?;
        let jp = e.get("priority").and_then(Value::as_i64).unwrap_or(0);
        const_entries.push(TableEntry {
            key,
            priority: (max_p + 1 - jp).clamp(1, i32::MAX as i64) as i32,
            action: ActionCall {
                action: ActionId(a),
                args: args.iter().zip(&actions.infos[a].params).map(|(v, p)| bytes_of(*v, p.bitwidth)).collect(),
            },
        });
    }
    Ok(const_entries)
}
