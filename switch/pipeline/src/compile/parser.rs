//! The parser (states, their operations, select keys and transitions), the
//! deparser's emit order, and the checksums verified after parsing and
//! updated before deparsing.

use super::expr::ExprCompiler;
use super::json::*;
use super::layout::Layout;
use super::primitives::primitive;
use crate::bits::bytes_to_u128;
use crate::error::{LoadError, LoadResult};
use crate::ir::{ChecksumDef, ChecksumKind, Expr, ParseState, ParserOp, SetSrc, TransCase, TransKey};
use serde_json::Value;
use std::collections::HashMap;

pub(super) struct CompiledParser {
    pub states: Vec<ParseState>,
    pub start: Option<usize>,
    /// Per value set: widths of the select-key fields it is matched
    /// against (empty if no transition uses it).
    pub vset_key_widths: Vec<Vec<u32>>,
}

/// `x` compiles outside any action: parser expressions have no parameters.
pub(super) fn parser(root: &Value, x: &ExprCompiler) -> LoadResult<CompiledParser> {
    let mut vset_key_widths = vec![None; x.externs.vset_infos.len()];
    let (states, start) = parse_states(root, x, &mut vset_key_widths)?;
    Ok(CompiledParser {
        states,
        start,
        vset_key_widths: vset_key_widths.into_iter().map(Option::unwrap_or_default).collect(),
    })
}

/// The one object of `list` named `want`, or its only object: v1model has
/// one parser and one deparser.
fn pick<'b>(list: &'b [Value], want: &str, what: &str) -> LoadResult<Option<&'b Value>> {
    if let Some(x) = list.iter().find(|x| x.get("name").and_then(Value::as_str) == Some(want)) {
        return Ok(Some(x));
    }
    match list.len() {
        0 => Ok(None),
        1 => Ok(Some(&list[0])),
        _ => Err(LoadError::bad(what, format!("several {what}s and none named '{want}'"))),
    }
}

fn parse_states(
    root: &Value,
    x: &ExprCompiler,
    vset_key_widths: &mut [Option<Vec<u32>>],
) -> LoadResult<(Vec<ParseState>, Option<usize>)> {
    let parsers = get_arr(root, "parsers", "root")?;
    let Some(pj) = pick(parsers, "parser", "parser")? else {
        return Ok((vec![], None));
    };
    let states = get_arr(pj, "parse_states", "parser")?;
    let mut by_name = HashMap::new();
    for (i, s) in states.iter().enumerate() {
        by_name.insert(get_str(s, "name", "parse_states")?.to_string(), i);
    }
    let mut out = Vec::new();
    for s in states {
        let name = get_str(s, "name", "parse_states")?.to_string();
        let at = format!("parse state '{name}'");
        let mut ops = Vec::new();
        for op in get_arr(s, "parser_ops", &at)? {
            ops.push(parser_op(x, op, &at)?);
        }
        let (key, widths) = select_key(x.layout, s, &at)?;
        let (cases, default_next) = transitions(x, s, &at, &widths, &by_name, vset_key_widths)?;
        out.push(ParseState { name, ops, key, key_widths: widths, cases, default_next });
    }
    let init = get_str(pj, "init_state", "parser")?;
    let start = by_name.get(init).copied().ok_or_else(|| LoadError::bad("parser", format!("unknown init_state '{init}'")))?;
    Ok((out, Some(start)))
}

fn parser_op(x: &ExprCompiler, op: &Value, at: &str) -> LoadResult<ParserOp> {
    let o = get_str(op, "op", at)?;
    let ps = get_arr(op, "parameters", at)?;
    let at = format!("{at}, parser op '{o}'");
    let p0 = ps.first().ok_or_else(|| LoadError::bad(&at, "missing parameters"));
    Ok(match o {
        "extract" => {
            let p0 = p0?;
            let v = get(p0, "value", &at)?;
            match get_str(p0, "type", &at)? {
                "regular" => {
                    let h = x.layout.header(as_str(v, &at)?, &at)?;
                    ParserOp::Extract(h)
                }
                "stack" => ParserOp::ExtractStack(x.layout.stack(as_str(v, &at)?, &at)?),
                other => return Err(LoadError::unsupported(&at, format!("extract of type '{other}'"))),
            }
        }
        "extract_VL" => return Err(LoadError::unsupported(&at, "variable-length extraction (extract_VL)")),
        "set" => {
            if ps.len() != 2 {
                return Err(LoadError::bad(&at, "set takes 2 parameters"));
            }
            let dst = x.lvalue(&ps[0], &at)?;
            let src = if get_str(&ps[1], "type", &at)? == "lookahead" {
                let (o, w) = as_pair(get(&ps[1], "value", &at)?, &at)?;
                let w = as_i64(w, &at)?;
                if !(1..=128).contains(&w) {
                    return Err(LoadError::unsupported(&at, format!("lookahead of {w} bits")));
                }
                SetSrc::Lookahead { off_bits: as_i64(o, &at)?.max(0) as usize, width: w as u32 }
            } else {
                SetSrc::Expr(x.data_expr(&ps[1], &at)?)
            };
            ParserOp::Set { dst, src }
        }
        "verify" => {
            if ps.len() != 2 {
                return Err(LoadError::bad(&at, "verify takes 2 parameters"));
            }
            let cond = x.bool_expr(&ps[0], &at)?;
            let error = match &ps[1] {
                Value::Number(n) => Expr::Const(n.as_i64().unwrap_or(0) as i128),
                j => x.data_expr(j, &at)?,
            };
            ParserOp::Verify { cond, error }
        }
        "advance" => ParserOp::Advance(x.data_expr(p0?, &at)?),
        "shift" => {
            let n = p0?.as_i64().ok_or_else(|| LoadError::bad(&at, "bad shift"))?;
            ParserOp::Advance(Expr::Const(n as i128 * 8))
        }
        "primitive" => ParserOp::Prim(primitive(x, p0?, &at)?),
        other => return Err(LoadError::unsupported(&at, format!("parser op '{other}'"))),
    })
}

/// The `transition_key` of a state, and the width of each of its fields.
fn select_key(layout: &Layout, s: &Value, at: &str) -> LoadResult<(Vec<TransKey>, Vec<u32>)> {
    let mut key = Vec::new();
    let mut widths = Vec::new();
    for k in get_arr(s, "transition_key", at)? {
        let v = get(k, "value", at)?;
        match get_str(k, "type", at)? {
            "field" => {
                let sl = layout.slot(v, at)?;
                key.push(TransKey::Slot(sl));
                widths.push(layout.slots[sl].width);
            }
            "stack_field" => {
                let (st, f) = as_pair(v, at)?;
                let st = layout.stack(as_str(st, at)?, at)?;
                let off = layout.field_index(layout.stacks[st].htype, as_str(f, at)?, at)?;
                widths.push(layout.htypes[layout.stacks[st].htype].fields[off].width);
                key.push(TransKey::StackLast { stack: st, off });
            }
            "lookahead" => {
                let (o, w) = as_pair(v, at)?;
                let w = as_i64(w, at)?;
                if !(1..=128).contains(&w) {
                    return Err(LoadError::unsupported(at, format!("lookahead of {w} bits in a select key")));
                }
                key.push(TransKey::Lookahead { off_bits: as_i64(o, at)?.max(0) as usize, width: w as u32 });
                widths.push(w as u32);
            }
            other => return Err(LoadError::unsupported(at, format!("transition key of type '{other}'"))),
        }
    }
    Ok((key, widths))
}

fn next_state(by_name: &HashMap<String, usize>, v: &Value, at: &str) -> LoadResult<Option<usize>> {
    match v {
        Value::Null => Ok(None),
        Value::String(n) => {
            by_name.get(n).copied().map(Some).ok_or_else(|| LoadError::bad(at, format!("unknown parse state '{n}'")))
        }
        _ => Err(LoadError::bad(at, "bad next_state")),
    }
}

/// A select value or mask: one hexstr, each key field padded to whole
/// bytes, split into one value per field.
fn split_select_value(hex: &str, widths: &[u32], at: &str) -> LoadResult<Vec<u128>> {
    let (_, bytes) = hexstr_bytes(hex, at)?;
    let expect: usize = widths.iter().map(|w| w.div_ceil(8) as usize).sum();
    if bytes.len() != expect {
        return Err(LoadError::bad(
            at,
            format!("transition value {hex} has {} bytes, the key needs {expect}", bytes.len()),
        ));
    }
    let mut out = Vec::new();
    let mut pos = 0;
    for w in widths {
        let n = w.div_ceil(8) as usize;
        out.push(bytes_to_u128(&bytes[pos..pos + n]).unwrap_or(0));
        pos += n;
    }
    Ok(out)
}

/// The cases of a state and its default next state. A value set takes the
/// key widths of the first state that selects on it; control-plane members
/// are split with them.
fn transitions(
    x: &ExprCompiler,
    s: &Value,
    at: &str,
    widths: &[u32],
    by_name: &HashMap<String, usize>,
    vset_key_widths: &mut [Option<Vec<u32>>],
) -> LoadResult<(Vec<TransCase>, Option<usize>)> {
    let split = |hex: &str| split_select_value(hex, widths, at);
    let mut cases = Vec::new();
    let mut default_next = None;
    for t in get_arr(s, "transitions", at)? {
        let ty = t.get("type").and_then(Value::as_str).unwrap_or("hexstr");
        let next = next_state(by_name, get(t, "next_state", at)?, at)?;
        let value = t.get("value").and_then(Value::as_str);
        if ty == "default" || (ty == "hexstr" && value == Some("default")) {
            default_next = next;
            continue;
        }
        let mask = t.get("mask").and_then(Value::as_str);
        match ty {
            "hexstr" => {
                let v = value.ok_or_else(|| LoadError::bad(at, "transition without value"))?;
                let masks = mask.map(split).transpose()?;
                cases.push(TransCase::Value { values: split(v)?, masks, next });
            }
            "parse_vset" => {
                let n = value.ok_or_else(|| LoadError::bad(at, "transition without value set"))?;
                let vs = x.externs.value_set(n, at)?;
                match &vset_key_widths[vs] {
                    Some(w) if *w != widths => {
                        return Err(LoadError::unsupported(at, format!("value set '{n}' used with different keys")))
                    }
                    _ => vset_key_widths[vs] = Some(widths.to_vec()),
                }
                let masks = match mask {
                    None => None,
                    Some(m) => Some(match split(m) {
                        Ok(v) => v,
                        Err(_) => {
                            // compressed (unpadded) mask
                            let packed = hexstr_u128(m, at)?;
                            let mut shift: u32 = widths.iter().sum();
                            widths
                                .iter()
                                .map(|&w| {
                                    shift -= w;
                                    (packed >> shift) & crate::bits::mask(w)
                                })
                                .collect()
                        }
                    }),
                };
                cases.push(TransCase::VSet { vset: vs, masks, next });
            }
            other => return Err(LoadError::unsupported(at, format!("transition of type '{other}'"))),
        }
    }
    Ok((cases, default_next))
}

pub(super) fn deparser(root: &Value, layout: &Layout) -> LoadResult<Vec<usize>> {
    let ds = get_arr(root, "deparsers", "root")?;
    let Some(d) = pick(ds, "deparser", "deparser")? else { return Ok(vec![]) };
    if !get_arr(d, "primitives", "deparser")?.is_empty() {
        return Err(LoadError::unsupported("deparser", "method calls in the deparser"));
    }
    get_arr(d, "order", "deparser")?.iter().map(|h| layout.header(as_str(h, "deparser")?, "deparser")).collect()
}

/// The checksums to verify after parsing and those to update before
/// deparsing.
pub(super) fn checksums(root: &Value, x: &ExprCompiler) -> LoadResult<(Vec<ChecksumDef>, Vec<ChecksumDef>)> {
    let (mut verify, mut update) = (Vec::new(), Vec::new());
    for c in get_arr(root, "checksums", "root")? {
        let at = format!("checksum '{}'", name_of(c));
        let slot = x.layout.slot(get(c, "target", &at)?, &at)?;
        let kind = match c.get("type").and_then(Value::as_str).unwrap_or("generic") {
            "generic" => ChecksumKind::Calc(x.externs.calc(get_str(c, "calculation", &at)?, &at)?),
            "ipv4" => ChecksumKind::Ipv4,
            other => return Err(LoadError::unsupported(&at, format!("checksum type '{other}'"))),
        };
        let cond = match c.get("if_cond") {
            None | Some(Value::Null) => None,
            Some(j) => Some(x.bool_expr(j, &at)?),
        };
        let def = ChecksumDef { slot, header: x.layout.slots[slot].header as usize, kind, cond };
        if get_bool_or(c, "verify", true) {
            verify.push(def.clone());
        }
        if get_bool_or(c, "update", true) {
            update.push(def);
        }
    }
    Ok((verify, update))
}
