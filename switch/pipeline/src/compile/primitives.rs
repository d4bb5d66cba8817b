//! Actions: their parameters, and their primitives compiled to [`Prim`]s
//! (parser states call primitives too).

use super::expr::ExprCompiler;
use super::externs::Externs;
use super::json::*;
use super::layout::Layout;
use crate::error::{LoadError, LoadResult};
use crate::ir::{ActionDef, ActionId, ActionInfo, BinOp, Expr, HdrRef, ParamInfo, Prim};
use serde_json::Value;
use std::collections::HashMap;

/// The program's actions, and their ids in the JSON (tables, default
/// entries and action calls name actions by id).
pub(super) struct Actions {
    pub infos: Vec<ActionInfo>,
    by_json_id: HashMap<i64, usize>,
}

impl Actions {
    /// The actions and their compiled primitives, in the JSON's order.
    pub fn compile(root: &Value, layout: &Layout, externs: &Externs) -> LoadResult<(Actions, Vec<ActionDef>)> {
        let mut actions = Actions { infos: Vec::new(), by_json_id: HashMap::new() };
        let mut defs = Vec::new();
        let acts = get_arr(root, "actions", "root")?;
        // infos first (ids are needed by tables)
        for (i, a) in acts.iter().enumerate() {
            let name = get_str(a, "name", "actions")?.to_string();
            let at = format!("action '{name}'");
            let id = a.get("id").and_then(Value::as_i64).ok_or_else(|| LoadError::bad(&at, "missing id"))?;
            let mut params = Vec::new();
            for rd in get_arr(a, "runtime_data", &at)? {
                let bw = get_u64(rd, "bitwidth", &at)?;
                if bw > 128 {
                    return Err(LoadError::unsupported(&at, format!("{bw}-bit action parameter (max 128)")));
                }
                params.push(ParamInfo { name: get_str(rd, "name", &at)?.to_string(), bitwidth: bw as u32 });
            }
            actions.by_json_id.insert(id, i);
            actions.infos.push(ActionInfo { id: ActionId(i), name, params });
        }
        for (i, a) in acts.iter().enumerate() {
            let info = &actions.infos[i];
            let at = format!("action '{}'", info.name);
            let params: Vec<u32> = info.params.iter().map(|p| p.bitwidth).collect();
            let x = ExprCompiler { layout, externs, params: &params };
            let mut prims = Vec::new();
            for (k, pj) in get_arr(a, "primitives", &at)?.iter().enumerate() {
                prims.push(primitive(&x, pj, &format!("{at}, primitive #{k}"))?);
            }
            defs.push(ActionDef { prims });
        }
        Ok((actions, defs))
    }

    /// Index of the action with this JSON id.
    pub fn by_json_id(&self, id: &Value, at: &str) -> LoadResult<usize> {
        let id = as_i64(id, at)?;
        self.by_json_id.get(&id).copied().ok_or_else(|| LoadError::bad(at, format!("unknown action id {id}")))
    }

    /// The `action_data` of a default or const entry, masked to the
    /// parameters' widths.
    pub fn const_args(&self, a: usize, data: &[Value], at: &str) -> LoadResult<Vec<u128>> {
        let params = &self.infos[a].params;
        if data.len() != params.len() {
            return Err(LoadError::bad(at, format!("action '{}' takes {} arguments", self.infos[a].name, params.len())));
        }
        data.iter()
            .zip(params)
            .map(|(d, p)| {
                let v = hex_or_int(d, at)?;
                Ok(v & crate::bits::mask(p.bitwidth))
            })
            .collect()
    }
}

/// One primitive call: `{"op": ..., "parameters": [...]}`.
pub(super) fn primitive(x: &ExprCompiler, j: &Value, at: &str) -> LoadResult<Prim> {
    let op = get_str(j, "op", at)?;
    let ps = get_arr(j, "parameters", at)?;
    let at = &format!("{at}, primitive '{op}'");
    let n = |k: usize| -> LoadResult<()> {
        if ps.len() == k {
            Ok(())
        } else {
            Err(LoadError::bad(at, format!("expected {k} parameters, got {}", ps.len())))
        }
    };
    let bin = |bop: BinOp, a: Expr, b: Expr| Expr::Bin(bop, Box::new(a), Box::new(b));
    Ok(match op {
        "assign" | "modify_field" => {
            n(2)?;
            Prim::Assign(x.lvalue(&ps[0], at)?, x.data_expr(&ps[1], at)?)
        }
        "add_to_field" | "subtract_from_field" => {
            n(2)?;
            let dst = x.lvalue(&ps[0], at)?;
            let cur = x.data_expr(&ps[0], at)?;
            let d = x.data_expr(&ps[1], at)?;
            Prim::Assign(dst, bin(if op == "add_to_field" { BinOp::Add } else { BinOp::Sub }, cur, d))
        }
        "add" | "subtract" | "bit_xor" | "bit_or" | "bit_and" | "shift_left" | "shift_right" => {
            n(3)?;
            let bop = match op {
                "add" => BinOp::Add,
                "subtract" => BinOp::Sub,
                "bit_xor" => BinOp::Xor,
                "bit_or" => BinOp::Or,
                "bit_and" => BinOp::And,
                "shift_left" => BinOp::Shl,
                _ => BinOp::Shr,
            };
            Prim::Assign(x.lvalue(&ps[0], at)?, bin(bop, x.data_expr(&ps[1], at)?, x.data_expr(&ps[2], at)?))
        }
        "assign_header" | "copy_header" => {
            n(2)?;
            Prim::AssignHeader(x.hdr_param(&ps[0], at)?, x.hdr_param(&ps[1], at)?)
        }
        "assign_union" => {
            n(2)?;
            Prim::AssignUnion(x.union_param(&ps[0], at)?, x.union_param(&ps[1], at)?)
        }
        "assign_header_stack" => {
            n(2)?;
            Prim::AssignStack(x.stack_param(&ps[0], at)?, x.stack_param(&ps[1], at)?)
        }
        "add_header" => {
            n(1)?;
            Prim::AddHeader(x.hdr_param(&ps[0], at)?)
        }
        "add_header_fast" => {
            n(1)?;
            Prim::AddHeaderFast(x.hdr_param(&ps[0], at)?)
        }
        "remove_header" => {
            n(1)?;
            Prim::RemoveHeader(x.hdr_param(&ps[0], at)?)
        }
        "mark_to_drop" => {
            n(1)?;
            let h = match x.hdr_param(&ps[0], at)? {
                HdrRef::Fixed(h) => h,
                _ => return Err(LoadError::bad(at, "mark_to_drop needs standard_metadata")),
            };
            let t = &x.layout.htypes[x.layout.headers[h].htype];
            let f = |n: &str| t.fields.iter().position(|fd| fd.name == n).map(|i| x.layout.headers[h].first_slot + i);
            let egress_spec = f("egress_spec");
            if egress_spec.is_none() {
                return Err(LoadError::bad(at, "mark_to_drop: header has no egress_spec field"));
            }
            Prim::MarkToDrop { egress_spec, mcast_grp: f("mcast_grp") }
        }
        "drop" => {
            n(0)?;
            let s = |n: &str| x.layout.resolve_name(n);
            Prim::MarkToDrop {
                egress_spec: s("standard_metadata.egress_spec"),
                mcast_grp: s("intrinsic_metadata.mcast_grp"),
            }
        }
        "register_read" => {
            n(3)?;
            let name = name_param(&ps[1], "register_array", at)?;
            Prim::RegisterRead {
                dst: x.lvalue(&ps[0], at)?,
                reg: x.externs.register(name, at)?,
                idx: x.data_expr(&ps[2], at)?,
            }
        }
        "register_write" => {
            n(3)?;
            let name = name_param(&ps[0], "register_array", at)?;
            Prim::RegisterWrite {
                reg: x.externs.register(name, at)?,
                idx: x.data_expr(&ps[1], at)?,
                val: x.data_expr(&ps[2], at)?,
            }
        }
        "count" => {
            n(2)?;
            let name = name_param(&ps[0], "counter_array", at)?;
            let c = x.externs.counter(name, at)?;
            Prim::Count { counter: c, idx: x.data_expr(&ps[1], at)? }
        }
        "clone_ingress_pkt_to_egress" | "clone_egress_pkt_to_egress" => {
            if ps.is_empty() || ps.len() > 2 {
                return Err(LoadError::bad(at, "expected 1 or 2 parameters"));
            }
            let fl = match ps.get(1) {
                Some(j) => x.data_expr(j, at)?,
                None => Expr::Const(0),
            };
            Prim::Clone { session: x.data_expr(&ps[0], at)?, field_list: fl }
        }
        "resubmit" => {
            n(1)?;
            Prim::Resubmit(x.data_expr(&ps[0], at)?)
        }
        "recirculate" => {
            n(1)?;
            Prim::Recirculate(x.data_expr(&ps[0], at)?)
        }
        "modify_field_rng_uniform" => {
            n(3)?;
            Prim::Random {
                dst: x.lvalue(&ps[0], at)?,
                lo: x.data_expr(&ps[1], at)?,
                hi: x.data_expr(&ps[2], at)?,
            }
        }
        "modify_field_with_hash_based_offset" => {
            n(4)?;
            let name = name_param(&ps[2], "calculation", at)?;
            let calc = x.externs.calc(name, at)?;
            Prim::Hash {
                dst: x.lvalue(&ps[0], at)?,
                base: x.data_expr(&ps[1], at)?,
                calc,
                max: x.data_expr(&ps[3], at)?,
            }
        }
        "truncate" => {
            n(1)?;
            Prim::Truncate(x.data_expr(&ps[0], at)?)
        }
        "exit" => Prim::Exit,
        "push" | "pop" => {
            n(2)?;
            let s = x.stack_param(&ps[0], at)?;
            let k = x.data_expr(&ps[1], at)?;
            if op == "push" {
                Prim::Push(s, k)
            } else {
                Prim::Pop(s, k)
            }
        }
        "assert" | "assume" => {
            n(1)?;
            Prim::Assert(x.bool_expr(&ps[0], at)?)
        }
        "log_msg" | "no_op" => Prim::NoOp,
        "_jump" => {
            n(1)?;
            Prim::Jump(x.data_expr(&ps[0], at)?)
        }
        "_jump_if_zero" => {
            n(2)?;
            Prim::JumpIfZero(x.data_expr(&ps[0], at)?, x.data_expr(&ps[1], at)?)
        }
        "execute_meter" => return Err(LoadError::unsupported(at, "meters (execute_meter)")),
        "generate_digest" => return Err(LoadError::unsupported(at, "digests (generate_digest)")),
        "assign_VL" => return Err(LoadError::unsupported(at, "variable-length fields (assign_VL)")),
        "assign_union_stack" => return Err(LoadError::unsupported(at, "header union stacks")),
        other => return Err(LoadError::unsupported(at, format!("primitive '{other}'"))),
    })
}

fn name_param<'b>(j: &'b Value, ty: &str, at: &str) -> LoadResult<&'b str> {
    if get_str(j, "type", at)? != ty {
        return Err(LoadError::bad(at, format!("expected a parameter of type '{ty}': {j}")));
    }
    as_str(get(j, "value", at)?, at)
}
