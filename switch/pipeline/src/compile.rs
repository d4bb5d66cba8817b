//! Compiles the bmv2 JSON document into a [`Program`]: names resolved to
//! PHV slots and indices, expressions to trees, primitives to [`Prim`]s.
//! Anything not implemented is rejected with a `LoadError` naming it.

use crate::bits::{bytes_of, bytes_to_u128};
use crate::checksum::algo_by_name;
use crate::error::{LoadError, LoadResult};
use crate::ir::*;
use crate::json::*;
use serde_json::Value;
use std::collections::HashMap;

/// A compiled expression with its bmv2 type.
enum CE {
    /// data expression and whether it is "wide" (unsigned >= 2^127 possible)
    Data(Expr, bool),
    Bool(Expr),
    Hdr(HdrRef),
    Stack(usize),
    Union(UnionRef),
}

struct C<'a> {
    root: &'a Value,
    htypes: Vec<HeaderType>,
    headers: Vec<HeaderInst>,
    slots: Vec<SlotInfo>,
    stacks: Vec<StackDef>,
    unions: Vec<UnionDef>,
    htype_by_name: HashMap<String, usize>,
    header_by_name: HashMap<String, usize>,
    stack_by_name: HashMap<String, usize>,
    union_by_name: HashMap<String, usize>,
    aliases: HashMap<String, (String, String)>,
    calc_by_name: HashMap<String, usize>,
    calcs: Vec<Calc>,
    counter_by_name: HashMap<String, usize>,
    register_by_name: HashMap<String, usize>,
    counter_infos: Vec<CounterInfo>,
    register_infos: Vec<RegisterInfo>,
    vset_by_name: HashMap<String, usize>,
    vset_infos: Vec<ValueSetInfo>,
    vset_key_widths: Vec<Option<Vec<u32>>>,
    action_by_json_id: HashMap<i64, usize>,
    action_infos: Vec<ActionInfo>,
    /// widths of the parameters of the action being compiled
    cur_params: Vec<u32>,
}

fn data(ce: CE, at: &str) -> LoadResult<(Expr, bool)> {
    match ce {
        CE::Data(e, w) => Ok((e, w)),
        CE::Bool(e) => Ok((Expr::B2D(Box::new(e)), false)),
        _ => Err(LoadError::bad(at, "expected a data expression")),
    }
}

fn boolean(ce: CE, at: &str) -> LoadResult<Expr> {
    match ce {
        CE::Bool(e) => Ok(e),
        CE::Data(e, _) => Ok(Expr::D2B(Box::new(e))),
        _ => Err(LoadError::bad(at, "expected a boolean expression")),
    }
}

impl<'a> C<'a> {
    fn new(root: &'a Value) -> C<'a> {
        C {
            root,
            htypes: vec![],
            headers: vec![],
            slots: vec![],
            stacks: vec![],
            unions: vec![],
            htype_by_name: HashMap::new(),
            header_by_name: HashMap::new(),
            stack_by_name: HashMap::new(),
            union_by_name: HashMap::new(),
            aliases: HashMap::new(),
            calc_by_name: HashMap::new(),
            calcs: vec![],
            counter_by_name: HashMap::new(),
            register_by_name: HashMap::new(),
            counter_infos: vec![],
            register_infos: vec![],
            vset_by_name: HashMap::new(),
            vset_infos: vec![],
            vset_key_widths: vec![],
            action_by_json_id: HashMap::new(),
            action_infos: vec![],
            cur_params: vec![],
        }
    }

    // ------------------------------------------------------------ layout

    fn layout(&mut self) -> LoadResult<()> {
        let root = self.root;
        for ht in get_arr(root, "header_types", "root")? {
            let name = get_str(ht, "name", "header_types")?.to_string();
            let at = format!("header type '{name}'");
            let mut fields = Vec::new();
            let mut bits = 0u32;
            for f in get_arr(ht, "fields", &at)? {
                let fa = as_arr(f, &at)?;
                if fa.len() < 2 {
                    return Err(LoadError::bad(&at, "field tuple too short"));
                }
                let fname = as_str(&fa[0], &at)?.to_string();
                if fa[1].as_str() == Some("*") {
                    return Err(LoadError::unsupported(&at, format!("variable-length (varbit) field '{fname}'")));
                }
                let width = fa[1]
                    .as_u64()
                    .ok_or_else(|| LoadError::bad(&at, format!("bad width for field '{fname}'")))?;
                if width > 128 {
                    return Err(LoadError::unsupported(
                        &at,
                        format!("field '{fname}' is {width} bits wide (the engine supports up to 128)"),
                    ));
                }
                let signed = fa.get(2).and_then(Value::as_bool).unwrap_or(false);
                let saturating = fa.get(3).and_then(Value::as_bool).unwrap_or(false);
                bits += width as u32;
                fields.push(FieldDef { name: fname, width: width as u32, signed, saturating });
            }
            self.htype_by_name.insert(name.clone(), self.htypes.len());
            self.htypes.push(HeaderType { name, fields, bits });
        }
        for h in get_arr(root, "headers", "root")? {
            let name = get_str(h, "name", "headers")?.to_string();
            let at = format!("header '{name}'");
            let tname = get_str(h, "header_type", &at)?;
            let ht = *self
                .htype_by_name
                .get(tname)
                .ok_or_else(|| LoadError::bad(&at, format!("unknown header type '{tname}'")))?;
            let metadata = get_bool_or(h, "metadata", false);
            let t = &self.htypes[ht];
            if !metadata && !t.bits.is_multiple_of(8) {
                return Err(LoadError::bad(&at, format!("header is {} bits, not a whole number of bytes", t.bits)));
            }
            let idx = self.headers.len();
            let first_slot = self.slots.len();
            for f in &t.fields {
                self.slots.push(SlotInfo { width: f.width, signed: f.signed, saturating: f.saturating, header: idx as u32 });
            }
            self.headers.push(HeaderInst {
                name: name.clone(),
                htype: ht,
                metadata,
                first_slot,
                nfields: t.fields.len(),
                nbytes: t.bits.div_ceil(8) as usize,
                union_of: None,
            });
            self.header_by_name.insert(name, idx);
        }
        for s in get_arr(root, "header_stacks", "root")? {
            let name = get_str(s, "name", "header_stacks")?.to_string();
            let at = format!("header stack '{name}'");
            let ht = *self
                .htype_by_name
                .get(get_str(s, "header_type", &at)?)
                .ok_or_else(|| LoadError::bad(&at, "unknown header type"))?;
            let mut hs = Vec::new();
            for id in get_arr(s, "header_ids", &at)? {
                hs.push(self.header_by_json_id(as_i64(id, &at)?, &at)?);
            }
            self.stack_by_name.insert(name.clone(), self.stacks.len());
            self.stacks.push(StackDef { name, htype: ht, headers: hs });
        }
        for u in get_arr(root, "header_unions", "root")? {
            let name = get_str(u, "name", "header_unions")?.to_string();
            let at = format!("header union '{name}'");
            let ui = self.unions.len();
            let mut hs = Vec::new();
            for (m, id) in get_arr(u, "header_ids", &at)?.iter().enumerate() {
                let h = self.header_by_json_id(as_i64(id, &at)?, &at)?;
                self.headers[h].union_of = Some((ui, m));
                hs.push(h);
            }
            self.union_by_name.insert(name.clone(), ui);
            self.unions.push(UnionDef { name, headers: hs });
        }
        if !get_arr(root, "header_union_stacks", "root")?.is_empty() {
            return Err(LoadError::unsupported("header_union_stacks", "header union stacks"));
        }
        for a in get_arr(root, "field_aliases", "root")? {
            let (n, target) = as_pair(a, "field_aliases")?;
            let (h, f) = as_pair(target, "field_aliases")?;
            self.aliases.insert(
                as_str(n, "field_aliases")?.to_string(),
                (as_str(h, "field_aliases")?.to_string(), as_str(f, "field_aliases")?.to_string()),
            );
        }
        Ok(())
    }

    fn header_by_json_id(&self, id: i64, at: &str) -> LoadResult<usize> {
        let hs = get_arr(self.root, "headers", "root")?;
        for h in hs {
            if h.get("id").and_then(Value::as_i64) == Some(id) {
                let n = get_str(h, "name", at)?;
                return self.header_by_name.get(n).copied().ok_or_else(|| LoadError::bad(at, "header"));
            }
        }
        Err(LoadError::bad(at, format!("no header with id {id}")))
    }

    fn header(&self, name: &str, at: &str) -> LoadResult<usize> {
        self.header_by_name
            .get(name)
            .copied()
            .ok_or_else(|| LoadError::bad(at, format!("unknown header '{name}'")))
    }

    fn stack(&self, name: &str, at: &str) -> LoadResult<usize> {
        self.stack_by_name
            .get(name)
            .copied()
            .ok_or_else(|| LoadError::bad(at, format!("unknown header stack '{name}'")))
    }

    fn field_index(&self, htype: usize, field: &str, at: &str) -> LoadResult<usize> {
        self.htypes[htype]
            .fields
            .iter()
            .position(|f| f.name == field)
            .ok_or_else(|| LoadError::bad(at, format!("header type '{}' has no field '{field}'", self.htypes[htype].name)))
    }

    /// Slot of a [header, field] reference; Err for `$valid$` (see field_ref).
    fn slot(&self, v: &Value, at: &str) -> LoadResult<usize> {
        match self.field_ref(v, at)? {
            Ok(s) => Ok(s),
            Err(_) => Err(LoadError::bad(at, "the hidden field $valid$ is read-only")),
        }
    }

    /// Ok(slot) or Err(header) for the `$valid$` hidden field.
    fn field_ref(&self, v: &Value, at: &str) -> LoadResult<Result<usize, usize>> {
        let (h, f) = as_pair(v, at)?;
        let h = self.header(as_str(h, at)?, at)?;
        let f = as_str(f, at)?;
        if f == "$valid$" {
            return Ok(Err(h));
        }
        let fi = self.field_index(self.headers[h].htype, f, at)?;
        Ok(Ok(self.headers[h].first_slot + fi))
    }

    fn slot_wide(&self, s: usize) -> bool {
        let i = &self.slots[s];
        i.width >= 128 && !i.signed
    }

    fn resolve_name(&self, name: &str) -> Option<usize> {
        let (h, f) = match self.aliases.get(name) {
            Some((h, f)) => (h.as_str(), f.as_str()),
            None => name.split_once('.')?,
        };
        let hi = *self.header_by_name.get(h)?;
        let fi = self.htypes[self.headers[hi].htype].fields.iter().position(|x| x.name == f)?;
        Some(self.headers[hi].first_slot + fi)
    }

    fn std_meta(&self) -> StdMeta {
        let r = |n: &str| self.resolve_name(n);
        let mut sm = StdMeta {
            header: self.header_by_name.get("standard_metadata").copied(),
            ingress_port: r("standard_metadata.ingress_port"),
            egress_spec: r("standard_metadata.egress_spec"),
            egress_port: r("standard_metadata.egress_port"),
            instance_type: r("standard_metadata.instance_type"),
            packet_length: r("standard_metadata.packet_length"),
            enq_timestamp: r("queueing_metadata.enq_timestamp"),
            enq_qdepth: r("queueing_metadata.enq_qdepth"),
            deq_timedelta: r("queueing_metadata.deq_timedelta"),
            deq_qdepth: r("queueing_metadata.deq_qdepth"),
            qid: r("queueing_metadata.qid"),
            ingress_ts: r("intrinsic_metadata.ingress_global_timestamp"),
            egress_ts: r("intrinsic_metadata.egress_global_timestamp"),
            mcast_grp: r("intrinsic_metadata.mcast_grp"),
            egress_rid: r("intrinsic_metadata.egress_rid"),
            checksum_error: r("standard_metadata.checksum_error"),
            parser_error: r("standard_metadata.parser_error"),
            priority: r("intrinsic_metadata.priority"),
            with_queueing: false,
        };
        sm.with_queueing =
            sm.enq_timestamp.is_some() && sm.enq_qdepth.is_some() && sm.deq_timedelta.is_some() && sm.deq_qdepth.is_some();
        sm
    }

    fn hdr_type(&self, h: &HdrRef) -> usize {
        match h {
            HdrRef::Fixed(i) => self.headers[*i].htype,
            HdrRef::StackIdx { stack, .. } => self.stacks[*stack].htype,
            HdrRef::UnionMember { un, member } => match **un {
                UnionRef::Fixed(u) => self.headers[self.unions[u].headers[*member]].htype,
            },
        }
    }

    // ------------------------------------------------------ expressions

    fn expr(&self, j: &Value, at: &str) -> LoadResult<CE> {
        let ty = get_str(j, "type", at)?;
        let v = get(j, "value", at)?;
        Ok(match ty {
            // primitive parameters wrap expressions twice
            "expression" if v.get("op").is_none() && v.get("type").is_some() => return self.expr(v, at),
            "expression" => return self.op_expr(v, at),
            "header" => CE::Hdr(HdrRef::Fixed(self.header(as_str(v, at)?, at)?)),
            "field" => match self.field_ref(v, at)? {
                Ok(s) => CE::Data(Expr::Field(s), self.slot_wide(s)),
                Err(h) => CE::Data(Expr::ValidBit(Box::new(HdrRef::Fixed(h))), false),
            },
            "bool" => CE::Bool(Expr::Bool(v.as_bool().ok_or_else(|| LoadError::bad(at, "bad bool"))?)),
            "hexstr" => {
                let (c, wide) = hexstr_value(as_str(v, at)?, at)?;
                CE::Data(Expr::Const(c), wide)
            }
            "local" | "runtime_data" => {
                let i = v.as_u64().ok_or_else(|| LoadError::bad(at, "bad local index"))? as usize;
                let w = *self
                    .cur_params
                    .get(i)
                    .ok_or_else(|| LoadError::bad(at, format!("action parameter {i} out of range")))?;
                CE::Data(Expr::Local(i), w >= 128)
            }
            "register" => {
                let (name, idx) = as_pair(v, at)?;
                let name = as_str(name, at)?;
                let r = *self
                    .register_by_name
                    .get(name)
                    .ok_or_else(|| LoadError::bad(at, format!("unknown register '{name}'")))?;
                let (idx, _) = data(self.expr(idx, at)?, at)?;
                CE::Data(Expr::Register { reg: r, idx: Box::new(idx) }, self.register_infos[r].bitwidth >= 128)
            }
            "header_stack" => CE::Stack(self.stack(as_str(v, at)?, at)?),
            "stack_field" => {
                let (s, f) = as_pair(v, at)?;
                let s = self.stack(as_str(s, at)?, at)?;
                let off = self.field_index(self.stacks[s].htype, as_str(f, at)?, at)?;
                let fd = &self.htypes[self.stacks[s].htype].fields[off];
                CE::Data(Expr::StackLast { stack: s, off }, fd.width >= 128 && !fd.signed)
            }
            "header_union" => {
                let n = as_str(v, at)?;
                CE::Union(UnionRef::Fixed(
                    *self.union_by_name.get(n).ok_or_else(|| LoadError::bad(at, format!("unknown union '{n}'")))?,
                ))
            }
            other => return Err(LoadError::unsupported(at, format!("expression operand of type '{other}'"))),
        })
    }

    fn op_expr(&self, v: &Value, at: &str) -> LoadResult<CE> {
        let op = get_str(v, "op", at)?;
        let left = v.get("left").filter(|x| !x.is_null());
        let right = v.get("right").filter(|x| !x.is_null());
        fn need<'v>(x: Option<&'v Value>, at: &str, op: &str) -> LoadResult<&'v Value> {
            x.ok_or_else(|| LoadError::bad(at, format!("operator '{op}' lacks an operand")))
        }
        let bx = Box::new;
        Ok(match op {
            "?" => {
                let c = boolean(self.expr(get(v, "cond", at)?, at)?, at)?;
                match (self.expr(need(left, at, op)?, at)?, self.expr(need(right, at, op)?, at)?) {
                    (CE::Bool(a), CE::Bool(b)) => CE::Bool(Expr::Ternary(bx(c), bx(a), bx(b))),
                    (a, b) => {
                        let (a, wa) = data(a, at)?;
                        let (b, wb) = data(b, at)?;
                        CE::Data(Expr::Ternary(bx(c), bx(a), bx(b)), wa || wb)
                    }
                }
            }
            "==" | "!=" => {
                let l = self.expr(need(left, at, op)?, at)?;
                let r = self.expr(need(right, at, op)?, at)?;
                let e = match (l, r) {
                    (CE::Bool(a), CE::Bool(b)) => {
                        Expr::Bin(if op == "==" { BinOp::BoolEq } else { BinOp::BoolNe }, bx(a), bx(b))
                    }
                    (CE::Hdr(a), CE::Hdr(b)) => {
                        let e = Expr::HdrEq(Box::new(a), Box::new(b));
                        if op == "==" {
                            e
                        } else {
                            Expr::Not(bx(e))
                        }
                    }
                    (CE::Union(a), CE::Union(b)) => {
                        let e = Expr::UnionEq(Box::new(a), Box::new(b));
                        if op == "==" {
                            e
                        } else {
                            Expr::Not(bx(e))
                        }
                    }
                    (a, b) => {
                        let (a, _) = data(a, at)?;
                        let (b, _) = data(b, at)?;
                        Expr::Bin(if op == "==" { BinOp::Eq } else { BinOp::Ne }, bx(a), bx(b))
                    }
                };
                CE::Bool(e)
            }
            "access_field" => {
                let h = match self.expr(need(left, at, op)?, at)? {
                    CE::Hdr(h) => h,
                    _ => return Err(LoadError::bad(at, "access_field needs a header")),
                };
                let off = need(right, at, op)?.as_u64().ok_or_else(|| LoadError::bad(at, "bad field offset"))? as usize;
                let ht = self.hdr_type(&h);
                let fd = self
                    .htypes[ht]
                    .fields
                    .get(off)
                    .ok_or_else(|| LoadError::bad(at, format!("field offset {off} out of range")))?;
                let wide = fd.width >= 128 && !fd.signed;
                match h {
                    HdrRef::Fixed(hi) => CE::Data(Expr::Field(self.headers[hi].first_slot + off), wide),
                    h => CE::Data(Expr::HdrField { hdr: Box::new(h), off }, wide),
                }
            }
            "access_union_header" => {
                let u = match self.expr(need(left, at, op)?, at)? {
                    CE::Union(u) => u,
                    _ => return Err(LoadError::bad(at, "access_union_header needs a union")),
                };
                let m = need(right, at, op)?.as_u64().ok_or_else(|| LoadError::bad(at, "bad member offset"))? as usize;
                let UnionRef::Fixed(ui) = u;
                let h = *self.unions[ui].headers.get(m).ok_or_else(|| LoadError::bad(at, "union member out of range"))?;
                CE::Hdr(HdrRef::Fixed(h))
            }
            "dereference_header_stack" | "dereference_stack" => {
                let s = match self.expr(need(left, at, op)?, at)? {
                    CE::Stack(s) => s,
                    _ => return Err(LoadError::bad(at, "dereference needs a header stack")),
                };
                let (i, _) = data(self.expr(need(right, at, op)?, at)?, at)?;
                match i {
                    Expr::Const(c) if c >= 0 && (c as usize) < self.stacks[s].headers.len() => {
                        CE::Hdr(HdrRef::Fixed(self.stacks[s].headers[c as usize]))
                    }
                    i => CE::Hdr(HdrRef::StackIdx { stack: s, idx: bx(i) }),
                }
            }
            "last_stack_index" | "size_stack" => {
                let s = match self.expr(need(right, at, op)?, at)? {
                    CE::Stack(s) => s,
                    _ => return Err(LoadError::bad(at, format!("{op} needs a header stack"))),
                };
                CE::Data(if op == "size_stack" { Expr::SizeStack(s) } else { Expr::LastStackIndex(s) }, false)
            }
            "valid" => match self.expr(need(right, at, op)?, at)? {
                CE::Hdr(h) => CE::Bool(Expr::Valid(Box::new(h))),
                CE::Union(u) => CE::Bool(Expr::ValidUnion(Box::new(u))),
                _ => return Err(LoadError::bad(at, "valid needs a header")),
            },
            "valid_union" => match self.expr(need(right, at, op)?, at)? {
                CE::Union(u) => CE::Bool(Expr::ValidUnion(Box::new(u))),
                _ => return Err(LoadError::bad(at, "valid_union needs a union")),
            },
            "not" => CE::Bool(Expr::Not(bx(boolean(self.expr(need(right, at, op)?, at)?, at)?))),
            "and" | "or" => {
                let a = boolean(self.expr(need(left, at, op)?, at)?, at)?;
                let b = boolean(self.expr(need(right, at, op)?, at)?, at)?;
                CE::Bool(Expr::Bin(if op == "and" { BinOp::LAnd } else { BinOp::LOr }, bx(a), bx(b)))
            }
            "d2b" => CE::Bool(Expr::D2B(bx(data(self.expr(need(right, at, op)?, at)?, at)?.0))),
            "b2d" => CE::Data(Expr::B2D(bx(boolean(self.expr(need(right, at, op)?, at)?, at)?)), false),
            "~" => {
                let (e, w) = data(self.expr(need(right, at, op)?, at)?, at)?;
                CE::Data(Expr::BitNeg(bx(e)), w)
            }
            "+" | "-" | "*" | "/" | "%" | "<<" | ">>" | "&" | "|" | "^" | "<" | ">" | "<=" | ">="
            | "two_comp_mod" | "usat_cast" | "sat_cast" => {
                let (l, wl) = match left {
                    Some(l) => data(self.expr(l, at)?, at)?,
                    None if op == "+" || op == "-" => (Expr::Const(0), false),
                    None => return Err(LoadError::bad(at, format!("operator '{op}' lacks its left operand"))),
                };
                let (r, wr) = data(self.expr(need(right, at, op)?, at)?, at)?;
                let w = wl || wr;
                let (bop, is_bool, wide_out) = match op {
                    "+" => (BinOp::Add, false, w),
                    "-" => (BinOp::Sub, false, w),
                    "*" => (BinOp::Mul, false, w),
                    "/" => (if w { BinOp::DivU } else { BinOp::Div }, false, w),
                    "%" => (if w { BinOp::ModU } else { BinOp::Mod }, false, w),
                    "<<" => (BinOp::Shl, false, wl),
                    ">>" => (if wl { BinOp::ShrU } else { BinOp::Shr }, false, wl),
                    "&" => (BinOp::And, false, wl && wr),
                    "|" => (BinOp::Or, false, w),
                    "^" => (BinOp::Xor, false, w),
                    "<" => (if w { BinOp::LtU } else { BinOp::Lt }, true, false),
                    ">" => (if w { BinOp::GtU } else { BinOp::Gt }, true, false),
                    "<=" => (if w { BinOp::LeU } else { BinOp::Le }, true, false),
                    ">=" => (if w { BinOp::GeU } else { BinOp::Ge }, true, false),
                    "two_comp_mod" => (BinOp::TwoCompMod, false, false),
                    "usat_cast" => (BinOp::UsatCast, false, false),
                    _ => (BinOp::SatCast, false, false),
                };
                let e = Expr::Bin(bop, bx(l), bx(r));
                if is_bool {
                    CE::Bool(e)
                } else {
                    CE::Data(e, wide_out)
                }
            }
            other => return Err(LoadError::unsupported(at, format!("expression operator '{other}'"))),
        })
    }

    fn data_expr(&self, j: &Value, at: &str) -> LoadResult<Expr> {
        Ok(data(self.expr(j, at)?, at)?.0)
    }

    fn bool_expr(&self, j: &Value, at: &str) -> LoadResult<Expr> {
        boolean(self.expr(j, at)?, at)
    }

    fn lvalue(&self, j: &Value, at: &str) -> LoadResult<LValue> {
        match self.expr(j, at)? {
            CE::Data(Expr::Field(s), _) => Ok(LValue::Slot(s)),
            CE::Data(Expr::StackLast { stack, off }, _) => Ok(LValue::StackLast { stack, off }),
            CE::Data(Expr::HdrField { hdr, off }, _) => Ok(LValue::HdrField { hdr, off }),
            _ => Err(LoadError::bad(at, format!("not an assignable field: {j}"))),
        }
    }

    fn hdr_param(&self, j: &Value, at: &str) -> LoadResult<HdrRef> {
        match self.expr(j, at)? {
            CE::Hdr(h) => Ok(h),
            _ => Err(LoadError::bad(at, format!("expected a header: {j}"))),
        }
    }

    fn stack_param(&self, j: &Value, at: &str) -> LoadResult<usize> {
        match self.expr(j, at)? {
            CE::Stack(s) => Ok(s),
            _ => Err(LoadError::bad(at, format!("expected a header stack: {j}"))),
        }
    }

    fn union_param(&self, j: &Value, at: &str) -> LoadResult<UnionRef> {
        match self.expr(j, at)? {
            CE::Union(u) => Ok(u),
            _ => Err(LoadError::bad(at, format!("expected a header union: {j}"))),
        }
    }

    fn name_param<'b>(&self, j: &'b Value, ty: &str, at: &str) -> LoadResult<&'b str> {
        if get_str(j, "type", at)? != ty {
            return Err(LoadError::bad(at, format!("expected a parameter of type '{ty}': {j}")));
        }
        as_str(get(j, "value", at)?, at)
    }

    // ------------------------------------------------------- primitives

    fn prim(&self, j: &Value, at: &str) -> LoadResult<Prim> {
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
                Prim::Assign(self.lvalue(&ps[0], at)?, self.data_expr(&ps[1], at)?)
            }
            "add_to_field" | "subtract_from_field" => {
                n(2)?;
                let dst = self.lvalue(&ps[0], at)?;
                let cur = self.data_expr(&ps[0], at)?;
                let d = self.data_expr(&ps[1], at)?;
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
                Prim::Assign(self.lvalue(&ps[0], at)?, bin(bop, self.data_expr(&ps[1], at)?, self.data_expr(&ps[2], at)?))
            }
            "assign_header" | "copy_header" => {
                n(2)?;
                Prim::AssignHeader(self.hdr_param(&ps[0], at)?, self.hdr_param(&ps[1], at)?)
            }
            "assign_union" => {
                n(2)?;
                Prim::AssignUnion(self.union_param(&ps[0], at)?, self.union_param(&ps[1], at)?)
            }
            "assign_header_stack" => {
                n(2)?;
                Prim::AssignStack(self.stack_param(&ps[0], at)?, self.stack_param(&ps[1], at)?)
            }
            "add_header" => {
                n(1)?;
                Prim::AddHeader(self.hdr_param(&ps[0], at)?)
            }
            "add_header_fast" => {
                n(1)?;
                Prim::AddHeaderFast(self.hdr_param(&ps[0], at)?)
            }
            "remove_header" => {
                n(1)?;
                Prim::RemoveHeader(self.hdr_param(&ps[0], at)?)
            }
            "mark_to_drop" => {
                n(1)?;
                let h = match self.hdr_param(&ps[0], at)? {
                    HdrRef::Fixed(h) => h,
                    _ => return Err(LoadError::bad(at, "mark_to_drop needs standard_metadata")),
                };
                let t = &self.htypes[self.headers[h].htype];
                let f = |n: &str| t.fields.iter().position(|x| x.name == n).map(|i| self.headers[h].first_slot + i);
                let egress_spec = f("egress_spec");
                if egress_spec.is_none() {
                    return Err(LoadError::bad(at, "mark_to_drop: header has no egress_spec field"));
                }
                Prim::MarkToDrop { egress_spec, mcast_grp: f("mcast_grp") }
            }
            "drop" => {
                n(0)?;
                let s = |n: &str| self.resolve_name(n);
                Prim::MarkToDrop {
                    egress_spec: s("standard_metadata.egress_spec"),
                    mcast_grp: s("intrinsic_metadata.mcast_grp"),
                }
            }
            "register_read" => {
                n(3)?;
                let name = self.name_param(&ps[1], "register_array", at)?;
                Prim::RegisterRead {
                    dst: self.lvalue(&ps[0], at)?,
                    reg: self.register(name, at)?,
                    idx: self.data_expr(&ps[2], at)?,
                }
            }
            "register_write" => {
                n(3)?;
                let name = self.name_param(&ps[0], "register_array", at)?;
                Prim::RegisterWrite {
                    reg: self.register(name, at)?,
                    idx: self.data_expr(&ps[1], at)?,
                    val: self.data_expr(&ps[2], at)?,
                }
            }
            "count" => {
                n(2)?;
                let name = self.name_param(&ps[0], "counter_array", at)?;
                let c = *self
                    .counter_by_name
                    .get(name)
                    .ok_or_else(|| LoadError::bad(at, format!("unknown counter '{name}'")))?;
                Prim::Count { counter: c, idx: self.data_expr(&ps[1], at)? }
            }
            "clone_ingress_pkt_to_egress" | "clone_egress_pkt_to_egress" => {
                if ps.is_empty() || ps.len() > 2 {
                    return Err(LoadError::bad(at, "expected 1 or 2 parameters"));
                }
                let fl = match ps.get(1) {
                    Some(j) => self.data_expr(j, at)?,
                    None => Expr::Const(0),
                };
                Prim::Clone { session: self.data_expr(&ps[0], at)?, field_list: fl }
            }
            "resubmit" => {
                n(1)?;
                Prim::Resubmit(self.data_expr(&ps[0], at)?)
            }
            "recirculate" => {
                n(1)?;
                Prim::Recirculate(self.data_expr(&ps[0], at)?)
            }
            "modify_field_rng_uniform" => {
                n(3)?;
                Prim::Random {
                    dst: self.lvalue(&ps[0], at)?,
                    lo: self.data_expr(&ps[1], at)?,
                    hi: self.data_expr(&ps[2], at)?,
                }
            }
            "modify_field_with_hash_based_offset" => {
                n(4)?;
                let name = self.name_param(&ps[2], "calculation", at)?;
                let calc = *self
                    .calc_by_name
                    .get(name)
                    .ok_or_else(|| LoadError::bad(at, format!("unknown calculation '{name}'")))?;
                Prim::Hash {
                    dst: self.lvalue(&ps[0], at)?,
                    base: self.data_expr(&ps[1], at)?,
                    calc,
                    max: self.data_expr(&ps[3], at)?,
                }
            }
            "truncate" => {
                n(1)?;
                Prim::Truncate(self.data_expr(&ps[0], at)?)
            }
            "exit" => Prim::Exit,
            "push" | "pop" => {
                n(2)?;
                let s = self.stack_param(&ps[0], at)?;
                let k = self.data_expr(&ps[1], at)?;
                if op == "push" {
                    Prim::Push(s, k)
                } else {
                    Prim::Pop(s, k)
                }
            }
            "assert" | "assume" => {
                n(1)?;
                Prim::Assert(self.bool_expr(&ps[0], at)?)
            }
            "log_msg" | "no_op" => Prim::NoOp,
            "_jump" => {
                n(1)?;
                Prim::Jump(self.data_expr(&ps[0], at)?)
            }
            "_jump_if_zero" => {
                n(2)?;
                Prim::JumpIfZero(self.data_expr(&ps[0], at)?, self.data_expr(&ps[1], at)?)
            }
            "execute_meter" => return Err(LoadError::unsupported(at, "meters (execute_meter)")),
            "generate_digest" => return Err(LoadError::unsupported(at, "digests (generate_digest)")),
            "assign_VL" => return Err(LoadError::unsupported(at, "variable-length fields (assign_VL)")),
            "assign_union_stack" => return Err(LoadError::unsupported(at, "header union stacks")),
            other => return Err(LoadError::unsupported(at, format!("primitive '{other}'"))),
        })
    }

    fn register(&self, name: &str, at: &str) -> LoadResult<usize> {
        self.register_by_name
            .get(name)
            .copied()
            .ok_or_else(|| LoadError::bad(at, format!("unknown register '{name}'")))
    }

    // ---------------------------------------------------------- objects

    fn externs(&mut self) -> LoadResult<()> {
        let root = self.root;
        if !get_arr(root, "meter_arrays", "root")?.is_empty() {
            return Err(LoadError::unsupported("meter_arrays", "meters"));
        }
        if !get_arr(root, "extern_instances", "root")?.is_empty() {
            let n = name_of(&get_arr(root, "extern_instances", "root")?[0]);
            return Err(LoadError::unsupported("extern_instances", format!("extern instance '{n}'")));
        }
        for (i, c) in get_arr(root, "counter_arrays", "root")?.iter().enumerate() {
            let name = get_str(c, "name", "counter_arrays")?.to_string();
            let at = format!("counter '{name}'");
            let is_direct = get_bool_or(c, "is_direct", false);
            let size = if is_direct { c.get("size").and_then(Value::as_u64).unwrap_or(0) } else { get_u64(c, "size", &at)? };
            self.counter_by_name.insert(name.clone(), i);
            self.counter_infos.push(CounterInfo {
                id: CounterId(i),
                name,
                size,
                is_direct,
                kind: CounterKind::PacketsAndBytes,
                table: None,
            });
        }
        for (i, r) in get_arr(root, "register_arrays", "root")?.iter().enumerate() {
            let name = get_str(r, "name", "register_arrays")?.to_string();
            let at = format!("register '{name}'");
            let bitwidth = get_u64(r, "bitwidth", &at)?;
            if bitwidth > 128 {
                return Err(LoadError::unsupported(&at, format!("{bitwidth}-bit registers (max 128)")));
            }
            self.register_by_name.insert(name.clone(), i);
            self.register_infos.push(RegisterInfo {
                id: RegisterId(i),
                name,
                size: get_u64(r, "size", &at)?,
                bitwidth: bitwidth as u32,
            });
        }
        for (i, v) in get_arr(root, "parse_vsets", "root")?.iter().enumerate() {
            let name = get_str(v, "name", "parse_vsets")?.to_string();
            let at = format!("value set '{name}'");
            let bw = get_u64(v, "compressed_bitwidth", &at)?;
            if bw > 128 {
                return Err(LoadError::unsupported(&at, format!("{bw}-bit value sets (max 128)")));
            }
            self.vset_by_name.insert(name.clone(), i);
            self.vset_infos.push(ValueSetInfo { id: ValueSetId(i), name, bitwidth: bw as u32 });
            self.vset_key_widths.push(None);
        }
        for (i, c) in get_arr(root, "calculations", "root")?.iter().enumerate() {
            let name = get_str(c, "name", "calculations")?.to_string();
            let at = format!("calculation '{name}'");
            let algo_name = get_str(c, "algo", &at)?;
            let algo = algo_by_name(algo_name)
                .ok_or_else(|| LoadError::unsupported(&at, format!("hash algorithm '{algo_name}'")))?;
            let mut inputs = Vec::new();
            for inp in get_arr(c, "input", &at)? {
                let ty = get_str(inp, "type", &at)?;
                inputs.push(match ty {
                    "field" => {
                        let s = self.slot(get(inp, "value", &at)?, &at)?;
                        CalcInput::Field { slot: s, header: self.slots[s].header as usize }
                    }
                    "hexstr" => {
                        let bits = get_u64(inp, "bitwidth", &at)?;
                        if bits > 128 {
                            return Err(LoadError::unsupported(&at, "constant input wider than 128 bits"));
                        }
                        CalcInput::Const { value: hex_or_int(get(inp, "value", &at)?, &at)?, bits: bits as u32 }
                    }
                    "header" => CalcInput::Header(self.header(as_str(get(inp, "value", &at)?, &at)?, &at)?),
                    "payload" => CalcInput::Payload,
                    other => return Err(LoadError::unsupported(&at, format!("calculation input of type '{other}'"))),
                });
            }
            self.calc_by_name.insert(name.clone(), i);
            self.calcs.push(Calc { name, algo, inputs });
        }
        Ok(())
    }

    fn field_lists(&self) -> LoadResult<HashMap<u64, Vec<usize>>> {
        let mut out = HashMap::new();
        for fl in get_arr(self.root, "field_lists", "root")? {
            let at = format!("field list '{}'", name_of(fl));
            let id = get_u64(fl, "id", &at)?;
            let mut slots = Vec::new();
            for e in get_arr(fl, "elements", &at)? {
                match get_str(e, "type", &at)? {
                    "field" => slots.push(self.slot(get(e, "value", &at)?, &at)?),
                    "hexstr" => {}
                    other => return Err(LoadError::unsupported(&at, format!("field list element of type '{other}'"))),
                }
            }
            out.insert(id, slots);
        }
        Ok(out)
    }

    fn actions(&mut self) -> LoadResult<Vec<ActionDef>> {
        let mut defs = Vec::new();
        let acts = get_arr(self.root, "actions", "root")?;
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
            self.action_by_json_id.insert(id, i);
            self.action_infos.push(ActionInfo { id: ActionId(i), name, params });
        }
        for (i, a) in acts.iter().enumerate() {
            let at = format!("action '{}'", self.action_infos[i].name);
            self.cur_params = self.action_infos[i].params.iter().map(|p| p.bitwidth).collect();
            let mut prims = Vec::new();
            for (k, pj) in get_arr(a, "primitives", &at)?.iter().enumerate() {
                prims.push(self.prim(pj, &format!("{at}, primitive #{k}"))?);
            }
            defs.push(ActionDef { prims });
        }
        self.cur_params.clear();
        Ok(defs)
    }

    fn pick<'b>(&self, list: &'b [Value], want: &str, what: &str) -> LoadResult<Option<&'b Value>> {
        if let Some(x) = list.iter().find(|x| x.get("name").and_then(Value::as_str) == Some(want)) {
            return Ok(Some(x));
        }
        match list.len() {
            0 => Ok(None),
            1 => Ok(Some(&list[0])),
            _ => Err(LoadError::bad(what, format!("several {what}s and none named '{want}'"))),
        }
    }

    fn parser(&mut self) -> LoadResult<(Vec<ParseState>, Option<usize>)> {
        let parsers = get_arr(self.root, "parsers", "root")?;
        let Some(pj) = self.pick(parsers, "parser", "parser")? else {
            return Ok((vec![], None));
        };
        let states = get_arr(pj, "parse_states", "parser")?;
        let mut by_name = HashMap::new();
        for (i, s) in states.iter().enumerate() {
            by_name.insert(get_str(s, "name", "parse_states")?.to_string(), i);
        }
        let state_ref = |v: &Value, at: &str| -> LoadResult<Option<usize>> {
            match v {
                Value::Null => Ok(None),
                Value::String(n) => {
                    by_name.get(n).copied().map(Some).ok_or_else(|| LoadError::bad(at, format!("unknown parse state '{n}'")))
                }
                _ => Err(LoadError::bad(at, "bad next_state")),
            }
        };
        let mut out = Vec::new();
        for s in states {
            let name = get_str(s, "name", "parse_states")?.to_string();
            let at = format!("parse state '{name}'");
            let mut ops = Vec::new();
            for op in get_arr(s, "parser_ops", &at)? {
                let o = get_str(op, "op", &at)?;
                let ps = get_arr(op, "parameters", &at)?;
                let at = format!("{at}, parser op '{o}'");
                let p0 = ps.first().ok_or_else(|| LoadError::bad(&at, "missing parameters"));
                ops.push(match o {
                    "extract" => {
                        let p0 = p0?;
                        let v = get(p0, "value", &at)?;
                        match get_str(p0, "type", &at)? {
                            "regular" => {
                                let h = self.header(as_str(v, &at)?, &at)?;
                                ParserOp::Extract(h)
                            }
                            "stack" => ParserOp::ExtractStack(self.stack(as_str(v, &at)?, &at)?),
                            other => return Err(LoadError::unsupported(&at, format!("extract of type '{other}'"))),
                        }
                    }
                    "extract_VL" => return Err(LoadError::unsupported(&at, "variable-length extraction (extract_VL)")),
                    "set" => {
                        if ps.len() != 2 {
                            return Err(LoadError::bad(&at, "set takes 2 parameters"));
                        }
                        let dst = self.lvalue(&ps[0], &at)?;
                        let src = if get_str(&ps[1], "type", &at)? == "lookahead" {
                            let (o, w) = as_pair(get(&ps[1], "value", &at)?, &at)?;
                            let w = as_i64(w, &at)?;
                            if !(1..=128).contains(&w) {
                                return Err(LoadError::unsupported(&at, format!("lookahead of {w} bits")));
                            }
                            SetSrc::Lookahead { off_bits: as_i64(o, &at)?.max(0) as usize, width: w as u32 }
                        } else {
                            SetSrc::Expr(self.data_expr(&ps[1], &at)?)
                        };
                        ParserOp::Set { dst, src }
                    }
                    "verify" => {
                        if ps.len() != 2 {
                            return Err(LoadError::bad(&at, "verify takes 2 parameters"));
                        }
                        let cond = self.bool_expr(&ps[0], &at)?;
                        let error = match &ps[1] {
                            Value::Number(n) => Expr::Const(n.as_i64().unwrap_or(0) as i128),
                            j => self.data_expr(j, &at)?,
                        };
                        ParserOp::Verify { cond, error }
                    }
                    "advance" => ParserOp::Advance(self.data_expr(p0?, &at)?),
                    "shift" => {
                        let n = p0?.as_i64().ok_or_else(|| LoadError::bad(&at, "bad shift"))?;
                        ParserOp::Advance(Expr::Const(n as i128 * 8))
                    }
                    "primitive" => ParserOp::Prim(self.prim(p0?, &at)?),
                    other => return Err(LoadError::unsupported(&at, format!("parser op '{other}'"))),
                });
            }
            let mut key = Vec::new();
            let mut widths = Vec::new();
            for k in get_arr(s, "transition_key", &at)? {
                let v = get(k, "value", &at)?;
                match get_str(k, "type", &at)? {
                    "field" => {
                        let sl = self.slot(v, &at)?;
                        key.push(TransKey::Slot(sl));
                        widths.push(self.slots[sl].width);
                    }
                    "stack_field" => {
                        let (st, f) = as_pair(v, &at)?;
                        let st = self.stack(as_str(st, &at)?, &at)?;
                        let off = self.field_index(self.stacks[st].htype, as_str(f, &at)?, &at)?;
                        widths.push(self.htypes[self.stacks[st].htype].fields[off].width);
                        key.push(TransKey::StackLast { stack: st, off });
                    }
                    "lookahead" => {
                        let (o, w) = as_pair(v, &at)?;
                        let w = as_i64(w, &at)?;
                        if !(1..=128).contains(&w) {
                            return Err(LoadError::unsupported(&at, format!("lookahead of {w} bits in a select key")));
                        }
                        key.push(TransKey::Lookahead { off_bits: as_i64(o, &at)?.max(0) as usize, width: w as u32 });
                        widths.push(w as u32);
                    }
                    other => return Err(LoadError::unsupported(&at, format!("transition key of type '{other}'"))),
                }
            }
            let split = |hex: &str| -> LoadResult<Vec<u128>> {
                let (_, bytes) = hexstr_bytes(hex, &at)?;
                let expect: usize = widths.iter().map(|w| w.div_ceil(8) as usize).sum();
                if bytes.len() != expect {
                    return Err(LoadError::bad(
                        &at,
                        format!("transition value {hex} has {} bytes, the key needs {expect}", bytes.len()),
                    ));
                }
                let mut out = Vec::new();
                let mut pos = 0;
                for w in &widths {
                    let n = w.div_ceil(8) as usize;
                    out.push(bytes_to_u128(&bytes[pos..pos + n]).unwrap_or(0));
                    pos += n;
                }
                Ok(out)
            };
            let mut cases = Vec::new();
            let mut default_next = None;
            for t in get_arr(s, "transitions", &at)? {
                let ty = t.get("type").and_then(Value::as_str).unwrap_or("hexstr");
                let next = state_ref(get(t, "next_state", &at)?, &at)?;
                let value = t.get("value").and_then(Value::as_str);
                if ty == "default" || (ty == "hexstr" && value == Some("default")) {
                    default_next = next;
                    continue;
                }
                let mask = t.get("mask").and_then(Value::as_str);
                match ty {
                    "hexstr" => {
                        let v = value.ok_or_else(|| LoadError::bad(&at, "transition without value"))?;
                        let masks = mask.map(split).transpose()?;
                        cases.push(TransCase::Value { values: split(v)?, masks, next });
                    }
                    "parse_vset" => {
                        let n = value.ok_or_else(|| LoadError::bad(&at, "transition without value set"))?;
                        let vs = *self
                            .vset_by_name
                            .get(n)
                            .ok_or_else(|| LoadError::bad(&at, format!("unknown value set '{n}'")))?;
                        match &self.vset_key_widths[vs] {
                            Some(w) if *w != widths => {
                                return Err(LoadError::unsupported(&at, format!("value set '{n}' used with different keys")))
                            }
                            _ => self.vset_key_widths[vs] = Some(widths.clone()),
                        }
                        let masks = match mask {
                            None => None,
                            Some(m) => Some(match split(m) {
                                Ok(v) => v,
                                Err(_) => {
                                    // compressed (unpadded) mask
                                    let packed = hexstr_u128(m, &at)?;
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
                    other => return Err(LoadError::unsupported(&at, format!("transition of type '{other}'"))),
                }
            }
            out.push(ParseState { name, ops, key, key_widths: widths, cases, default_next });
        }
        let init = get_str(pj, "init_state", "parser")?;
        let start = by_name.get(init).copied().ok_or_else(|| LoadError::bad("parser", format!("unknown init_state '{init}'")))?;
        Ok((out, Some(start)))
    }

    fn deparser(&self) -> LoadResult<Vec<usize>> {
        let ds = get_arr(self.root, "deparsers", "root")?;
        let Some(d) = self.pick(ds, "deparser", "deparser")? else { return Ok(vec![]) };
        if !get_arr(d, "primitives", "deparser")?.is_empty() {
            return Err(LoadError::unsupported("deparser", "method calls in the deparser"));
        }
        get_arr(d, "order", "deparser")?.iter().map(|h| self.header(as_str(h, "deparser")?, "deparser")).collect()
    }

    fn checksums(&self) -> LoadResult<(Vec<ChecksumDef>, Vec<ChecksumDef>)> {
        let (mut verify, mut update) = (Vec::new(), Vec::new());
        for c in get_arr(self.root, "checksums", "root")? {
            let at = format!("checksum '{}'", name_of(c));
            let slot = self.slot(get(c, "target", &at)?, &at)?;
            let kind = match c.get("type").and_then(Value::as_str).unwrap_or("generic") {
                "generic" => {
                    let n = get_str(c, "calculation", &at)?;
                    ChecksumKind::Calc(
                        *self.calc_by_name.get(n).ok_or_else(|| LoadError::bad(&at, format!("unknown calculation '{n}'")))?,
                    )
                }
                "ipv4" => ChecksumKind::Ipv4,
                other => return Err(LoadError::unsupported(&at, format!("checksum type '{other}'"))),
            };
            let cond = match c.get("if_cond") {
                None | Some(Value::Null) => None,
                Some(j) => Some(self.bool_expr(j, &at)?),
            };
            let def = ChecksumDef { slot, header: self.slots[slot].header as usize, kind, cond };
            if get_bool_or(c, "verify", true) {
                verify.push(def.clone());
            }
            if get_bool_or(c, "update", true) {
                update.push(def);
            }
        }
        Ok((verify, update))
    }

    fn action_idx(&self, id: &Value, at: &str) -> LoadResult<usize> {
        let id = as_i64(id, at)?;
        self.action_by_json_id.get(&id).copied().ok_or_else(|| LoadError::bad(at, format!("unknown action id {id}")))
    }

    fn action_data(&self, a: usize, data: &[Value], at: &str) -> LoadResult<Vec<u128>> {
        let params = &self.action_infos[a].params;
        if data.len() != params.len() {
            return Err(LoadError::bad(at, format!("action '{}' takes {} arguments", self.action_infos[a].name, params.len())));
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

struct Pipes {
    table_defs: Vec<TableDef>,
    table_infos: Vec<TableInfo>,
    conds: Vec<Cond>,
    calls: Vec<ActionCallNode>,
    ingress: Option<Node>,
    egress: Option<Node>,
}

fn pipelines(c: &C) -> LoadResult<Pipes> {
    let mut out = Pipes { table_defs: vec![], table_infos: vec![], conds: vec![], calls: vec![], ingress: None, egress: None };
    let pls = get_arr(c.root, "pipelines", "root")?;
    for pl in pls {
        let pname = get_str(pl, "name", "pipelines")?.to_string();
        let which = match pname.as_str() {
            "ingress" => 0,
            "egress" => 1,
            other => return Err(LoadError::unsupported("pipelines", format!("pipeline '{other}' (v1model has ingress and egress)"))),
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
        for (i, x) in conds.iter().enumerate() {
            nodes.insert(get_str(x, "name", &at)?.to_string(), Node::Cond(out.conds.len() + i));
        }
        for (i, x) in calls.iter().enumerate() {
            nodes.insert(get_str(x, "name", &at)?.to_string(), Node::Call(out.calls.len() + i));
        }
        let node = |v: Option<&Value>, at: &str| -> LoadResult<Option<Node>> {
            match v {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(n)) => {
                    nodes.get(n).copied().map(Some).ok_or_else(|| LoadError::bad(at, format!("unknown control node '{n}'")))
                }
                Some(x) => Err(LoadError::bad(at, format!("bad control node reference {x}"))),
            }
        };
        for t in tables {
            let name = get_str(t, "name", &at)?.to_string();
            let at = format!("table '{name}'");
            let tid = out.table_defs.len();
            let ttype = t.get("type").and_then(Value::as_str).unwrap_or("simple");
            if ttype != "simple" {
                return Err(LoadError::unsupported(&at, format!("table implementation '{ttype}' (action profiles / selectors)")));
            }
            if !matches!(t.get("direct_meters"), None | Some(Value::Null)) {
                return Err(LoadError::unsupported(&at, "direct meters"));
            }
            let mut keys = Vec::new();
            let mut kinfos = Vec::new();
            for k in get_arr(t, "key", &at)? {
                let mt = get_str(k, "match_type", &at)?;
                let target = get(k, "target", &at)?;
                let (src, width, dflt_name) = if mt == "valid" {
                    let hn = as_str(target, &at)?;
                    (KeySrc::Valid(c.header(hn, &at)?), 1, hn.to_string())
                } else {
                    let (h, f) = as_pair(target, &at)?;
                    let dn = format!("{}.{}", as_str(h, &at)?, as_str(f, &at)?);
                    match c.field_ref(target, &at)? {
                        Ok(s) => (KeySrc::Slot(s), c.slots[s].width, dn),
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
                    other => return Err(LoadError::unsupported(&at, format!("match kind '{other}'"))),
                };
                let mask = match k.get("mask") {
                    None | Some(Value::Null) => None,
                    Some(m) => Some(hex_or_int(m, &at)?),
                };
                let kname = k.get("name").and_then(Value::as_str).map(str::to_string).unwrap_or(dflt_name);
                keys.push(TableKey { src, mask, width, kind });
                kinfos.push(KeyInfo { name: kname, match_kind: mkind, bitwidth: width });
            }
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
                    action_ids.push(c.action_idx(id, &at)?);
                }
            } else {
                for n in get_arr(t, "actions", &at)? {
                    let n = as_str(n, &at)?;
                    action_ids.push(
                        c.action_infos
                            .iter()
                            .position(|a| a.name == n)
                            .ok_or_else(|| LoadError::bad(&at, format!("unknown action '{n}'")))?,
                    );
                }
            }
            let nt = get(t, "next_tables", &at)?;
            let next = if nt.get("__HIT__").is_some() || nt.get("__MISS__").is_some() {
                NextMode::HitMiss { hit: node(nt.get("__HIT__"), &at)?, miss: node(nt.get("__MISS__"), &at)? }
            } else {
                let mut m = Vec::with_capacity(action_ids.len());
                for &a in &action_ids {
                    let an = &c.action_infos[a].name;
                    m.push((a, node(nt.get(an.as_str()), &at)?));
                }
                NextMode::ByAction(m)
            };
            let base_default_next = node(t.get("base_default_next"), &at)?;
            let (mut default, mut default_is_const) = (None, false);
            if let Some(de) = t.get("default_entry").filter(|x| !x.is_null()) {
                let a = c.action_idx(get(de, "action_id", &at)?, &at)?;
                let args = c.action_data(a, get_arr(de, "action_data", &at)?, &at)?;
                default = Some((a, args));
                default_is_const = get_bool_or(de, "action_const", false) || get_bool_or(de, "action_entry_const", false);
            }
            let mut const_entries = Vec::new();
            let entries = get_arr(t, "entries", &at)?;
            let max_p = entries.iter().filter_map(|e| e.get("priority").and_then(Value::as_i64)).max().unwrap_or(0);
            for e in entries {
                let mk = get_arr(e, "match_key", &at)?;
                if mk.len() != keys.len() {
                    return Err(LoadError::bad(&at, "const entry with the wrong number of key fields"));
                }
                let mut key = Vec::new();
                for (m, kd) in mk.iter().zip(&keys) {
                    let w = kd.width;
                    let b = |name: &str| -> LoadResult<Vec<u8>> { Ok(bytes_of(hex_or_int(get(m, name, &at)?, &at)?, w)) };
                    key.push(match get_str(m, "match_type", &at)? {
                        "exact" => MatchKey::Exact(b("key")?),
                        "lpm" => {
                            let plen = get_u64(m, "prefix_length", &at)? as u32;
                            let v = hex_or_int(get(m, "key", &at)?, &at)?;
                            let pm = if plen == 0 { 0 } else { crate::bits::mask(w) ^ crate::bits::mask(w.saturating_sub(plen)) };
                            MatchKey::Lpm { value: bytes_of(v & pm, w), prefix_len: plen }
                        }
                        "ternary" | "optional" => {
                            let v = hex_or_int(get(m, "key", &at)?, &at)?;
                            let mk = hex_or_int(get(m, "mask", &at)?, &at)?;
                            MatchKey::Ternary { value: bytes_of(v & mk, w), mask: bytes_of(mk, w) }
                        }
                        "range" => MatchKey::Range { low: b("start")?, high: b("end")? },
                        "valid" => MatchKey::Exact(vec![get(m, "key", &at)?.as_bool().unwrap_or(false) as u8]),
                        other => return Err(LoadError::unsupported(&at, format!("const entry match type '{other}'"))),
                    });
                }
                let ae = get(e, "action_entry", &at)?;
                let a = c.action_idx(get(ae, "action_id", &at)?, &at)?;
                let args = c.action_data(a, get_arr(ae, "action_data", &at)?, &at)?;
                let jp = e.get("priority").and_then(Value::as_i64).unwrap_or(0);
                const_entries.push(TableEntry {
                    key,
                    priority: (max_p + 1 - jp).clamp(1, i32::MAX as i64) as i32,
                    action: ActionCall {
                        action: ActionId(a),
                        args: args.iter().zip(&c.action_infos[a].params).map(|(v, p)| bytes_of(*v, p.bitwidth)).collect(),
                    },
                });
            }
            let max_size = if const_entries.is_empty() {
                t.get("max_size").and_then(Value::as_u64).unwrap_or(1024) as usize
            } else {
                const_entries.len()
            };
            out.table_infos.push(TableInfo {
                id: TableId(tid),
                name,
                keys: kinfos,
                action_ids: action_ids.iter().map(|&a| ActionId(a)).collect(),
                max_size,
                default_is_const,
                direct_counter: None,
                has_const_entries: !const_entries.is_empty(),
                needs_priority: kind == TableKind::Ternary,
            });
            let fixed = if keys.is_empty() && default_is_const && const_entries.is_empty() { default.clone() } else { None };
            out.table_defs.push(TableDef { keys, kind, next, base_default_next, default, const_entries, fixed });
        }
        for x in conds {
            let at = format!("conditional '{}'", name_of(x));
            let expr = c.bool_expr(get(x, "expression", &at)?, &at)?;
            out.conds.push(Cond { expr, t: node(x.get("true_next"), &at)?, f: node(x.get("false_next"), &at)? });
        }
        for x in calls {
            let at = format!("action call '{}'", name_of(x));
            let action = c.action_idx(get(x, "action_id", &at)?, &at)?;
            out.calls.push(ActionCallNode { action, next: node(x.get("next_node"), &at)? });
        }
        let start = node(pl.get("init_table"), &at)?;
        if which == 0 {
            out.ingress = start;
        } else {
            out.egress = start;
        }
    }
    Ok(out)
}

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
    let mut c = C::new(&root);
    c.layout()?;
    let errors = core_errors(&root)?;
    c.externs()?;
    let field_lists = c.field_lists()?;
    let action_defs = c.actions()?;
    let (parse_states, parser_start) = c.parser()?;
    let deparser = c.deparser()?;
    let (verify_checksums, update_checksums) = c.checksums()?;
    let mut pipes = pipelines(&c)?;
    let sm = c.std_meta();
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
    // direct counters
    let mut counter_infos = c.counter_infos.clone();
    for ci in counter_infos.iter_mut().filter(|ci| ci.is_direct) {
        let binding = get_arr(&root, "counter_arrays", "root")?
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
    let mut table_by_name = HashMap::new();
    for (i, t) in pipes.table_infos.iter().enumerate() {
        table_by_name.entry(t.name.clone()).or_insert(i);
    }
    let mut action_by_name = HashMap::new();
    for (i, a) in c.action_infos.iter().enumerate() {
        action_by_name.entry(a.name.clone()).or_insert(i);
    }
    let vset_key_widths = c.vset_key_widths.iter().map(|w| w.clone().unwrap_or_default()).collect();
    let mut prog = Program {
        htypes: c.htypes,
        headers: c.headers,
        slots: c.slots,
        stacks: c.stacks,
        unions: c.unions,
        errors,
        field_lists,
        parse_states,
        parser_start,
        deparser,
        calcs: c.calcs,
        verify_checksums,
        update_checksums,
        action_defs,
        action_infos: c.action_infos,
        table_defs: pipes.table_defs,
        table_infos: pipes.table_infos,
        conds: pipes.conds,
        calls: pipes.calls,
        ingress_start: pipes.ingress,
        egress_start: pipes.egress,
        counter_infos,
        register_infos: c.register_infos,
        vset_infos: c.vset_infos,
        vset_key_widths,
        sm,
        table_by_name,
        action_by_name,
        counter_by_name: c.counter_by_name,
        register_by_name: c.register_by_name,
    };
    crate::simplify::simplify(&mut prog);
    // const entries must be valid entries
    for t in 0..prog.table_defs.len() {
        if let Err(e) = crate::tables::TableState::validate_const(&prog, t) {
            return Err(LoadError::bad(format!("table '{}'", prog.table_infos[t].name), format!("const entry: {e}")));
        }
    }
    Ok(prog)
}
