//! Compiles the bmv2 JSON document into a [`Program`]: names resolved to
//! PHV slots and indices, expressions to trees, primitives to [`Prim`]s.
//! Anything not implemented is rejected with a `LoadError` naming it.
//!
//! One module per part of the document, each using only those listed
//! before it: `layout` (headers and their PHV slots), `externs` (counters,
//! registers, value sets, calculations, field lists), `expr`
//! (expressions), `primitives` (actions), `parser` (parser, deparser,
//! checksums), `pipelines` (tables, conditionals, action calls). `json`
//! reads the document; `simplify` rewrites the result into cheaper forms.
//!
//! [`Prim`]: crate::ir::Prim

mod expr;
mod externs;
mod json;
mod layout;
mod parser;
mod pipelines;
mod primitives;
mod simplify;

use self::expr::ExprCompiler;
use self::externs::Externs;
use self::json::*;
use self::layout::Layout;
use self::pipelines::Pipelines;
use self::primitives::Actions;
use crate::error::{LoadError, LoadResult};
use crate::ir::{CoreErrors, CounterInfo, Program, TableId};
use serde_json::Value;
use std::collections::HashMap;

impl Program {
    /// Parses and precompiles a bmv2 JSON document (as written by
    /// `p4c-bm2-ss` for v1model). Anything the engine does not implement is
    /// an error naming the construct.
    pub fn from_json(text: &str) -> Result<Program, LoadError> {
        load(text)
    }
}

fn load(text: &str) -> LoadResult<Program> {
    let root: Value = serde_json::from_str(text).map_err(|e| LoadError::Json(e.to_string()))?;
    if !root.is_object() {
        return Err(LoadError::bad("root", "not a JSON object"));
    }
    if let Some(v) = root.get("__meta__").and_then(|m| m.get("version")).and_then(Value::as_array) {
        if v.first().and_then(Value::as_u64) != Some(2) {
            return Err(LoadError::unsupported("__meta__", format!("bmv2 JSON version {v:?} (expected 2.x)")));
        }
    }
    let layout = Layout::read(&root)?;
    let errors = core_errors(&root)?;
    let externs = Externs::read(&root, &layout)?;
    let field_lists = externs::field_lists(&root, &layout)?;
    let (actions, action_defs) = Actions::compile(&root, &layout, &externs)?;
    let outside_actions = ExprCompiler { layout: &layout, externs: &externs, params: &[] };
    let parser = parser::parser(&root, &outside_actions)?;
    let deparser = parser::deparser(&root, &layout)?;
    let (verify_checksums, update_checksums) = parser::checksums(&root, &outside_actions)?;
    let mut pipes = pipelines::pipelines(&root, &outside_actions, &actions)?;
    let sm = layout.std_meta();
    for (k, n) in [
        ("ingress_port", sm.ingress_port),
        ("egress_spec", sm.egress_spec),
        ("egress_port", sm.egress_port),
        ("instance_type", sm.instance_type),
        ("packet_length", sm.packet_length),
    ] {
        if n.is_none() {
            return Err(LoadError::bad("standard_metadata", format!("required field standard_metadata.{k} is missing")));
        }
    }
    let Externs { mut counter_infos, counter_by_name, register_infos, register_by_name, vset_infos, calcs, .. } = externs;
    bind_direct_counters(&root, &mut counter_infos, &mut pipes)?;
    let mut table_by_name = HashMap::new();
    for (i, t) in pipes.table_infos.iter().enumerate() {
        table_by_name.entry(t.name.clone()).or_insert(i);
    }
    let mut action_by_name = HashMap::new();
    for (i, a) in actions.infos.iter().enumerate() {
        action_by_name.entry(a.name.clone()).or_insert(i);
    }
    let deparse_slack = deparser.iter().map(|&h| layout.headers[h].codec.reach() - layout.headers[h].nbytes).max().unwrap_or(0);
    let valid_at_start = layout.headers.iter().map(|h| h.metadata).collect();
    let mut prog = Program {
        htypes: layout.htypes,
        headers: layout.headers,
        slots: layout.slots,
        stacks: layout.stacks,
        unions: layout.unions,
        errors,
        field_lists,
        parse_states: parser.states,
        parser_start: parser.start,
        deparse_slack,
        valid_at_start,
        deparser,
        calcs,
        verify_checksums,
        update_checksums,
        action_defs,
        action_infos: actions.infos,
        table_defs: pipes.table_defs,
        table_infos: pipes.table_infos,
        conds: pipes.conds,
        calls: pipes.calls,
        ingress_start: pipes.ingress,
        egress_start: pipes.egress,
        counter_infos,
        register_infos,
        vset_infos,
        vset_key_widths: parser.vset_key_widths,
        sm,
        table_by_name,
        action_by_name,
        counter_by_name,
        register_by_name,
    };
    simplify::simplify(&mut prog);
    // const entries must be valid entries
    for t in 0..prog.table_defs.len() {
        if let Err(e) = crate::tables::TableState::validate_const(&prog, t) {
            return Err(LoadError::bad(format!("table '{}'", prog.table_infos[t].name), format!("const entry: {e}")));
        }
    }
    Ok(prog)
}

/// Links each direct counter and the table it is bound to.
fn bind_direct_counters(root: &Value, counter_infos: &mut [CounterInfo], pipes: &mut Pipelines) -> LoadResult<()> {
    for ci in counter_infos.iter_mut().filter(|ci| ci.is_direct) {
        let binding = get_arr(root, "counter_arrays", "root")?
            .iter()
            .find(|x| x.get("name").and_then(Value::as_str) == Some(ci.name.as_str()))
            .and_then(|x| x.get("binding"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let t = pipes
            .table_infos
            .iter()
            .position(|t| t.name == binding)
            .ok_or_else(|| LoadError::bad(format!("counter '{}'", ci.name), format!("bound to unknown table '{binding}'")))?;
        ci.table = Some(TableId(t));
        pipes.table_infos[t].direct_counter = Some(ci.id);
        // A direct counter counts every hit: the table must be looked up.
        pipes.table_defs[t].fixed = None;
    }
    Ok(())
}

/// The program's numbers for the parser errors the engine raises itself
/// (p4c's defaults unless the `errors` list says otherwise).
fn core_errors(root: &Value) -> LoadResult<CoreErrors> {
    let mut e = CoreErrors {
        no_error: 0,
        packet_too_short: 1,
        no_match: 2,
        stack_out_of_bounds: 3,
        header_too_short: 4,
        parser_timeout: 5,
        parser_invalid_argument: 6,
    };
    for x in get_arr(root, "errors", "root")? {
        let a = as_arr(x, "errors")?;
        if a.len() != 2 {
            return Err(LoadError::bad("errors", "expected [name, value] pairs"));
        }
        let v = a[1].as_u64().ok_or_else(|| LoadError::bad("errors", "bad error value"))? as u32;
        match a[0].as_str().unwrap_or("") {
            "NoError" => e.no_error = v,
            "PacketTooShort" => e.packet_too_short = v,
            "NoMatch" => e.no_match = v,
            "StackOutOfBounds" => e.stack_out_of_bounds = v,
            "HeaderTooShort" => e.header_too_short = v,
            "ParserTimeout" => e.parser_timeout = v,
            "ParserInvalidArgument" => e.parser_invalid_argument = v,
            _ => {}
        }
    }
    Ok(e)
}
