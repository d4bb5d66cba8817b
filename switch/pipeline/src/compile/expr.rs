//! Expressions: bmv2 expression trees and operands to [`Expr`] trees over
//! PHV slots, each with its bmv2 type (data, boolean, header, stack,
//! union) so an operand is converted or refused where it is used.

use super::externs::Externs;
use super::json::*;
use super::layout::Layout;
use crate::error::{LoadError, LoadResult};
use crate::ir::{BinOp, Expr, HdrRef, LValue, UnionRef};
use serde_json::Value;

/// A compiled expression with its bmv2 type.
pub(super) enum TypedExpr {
    /// data expression and whether it is "wide" (unsigned >= 2^127 possible)
    Data(Expr, bool),
    Bool(Expr),
    Hdr(HdrRef),
    Stack(usize),
    Union(UnionRef),
}

impl TypedExpr {
    /// As data: a boolean converts (bmv2 b2d).
    pub fn into_data(self, at: &str) -> LoadResult<(Expr, bool)> {
        match self {
            TypedExpr::Data(e, w) => Ok((e, w)),
            TypedExpr::Bool(e) => Ok((Expr::B2D(Box::new(e)), false)),
            _ => Err(LoadError::bad(at, "expected a data expression")),
        }
    }

    /// As a boolean: data converts (bmv2 d2b).
    pub fn into_bool(self, at: &str) -> LoadResult<Expr> {
        match self {
            TypedExpr::Bool(e) => Ok(e),
            TypedExpr::Data(e, _) => Ok(Expr::D2B(Box::new(e))),
            _ => Err(LoadError::bad(at, "expected a boolean expression")),
        }
    }
}

/// Compiles expressions against the layout and the registers, inside an
/// action (its parameters) or outside any (`params` empty).
pub(super) struct ExprCompiler<'a> {
    pub layout: &'a Layout,
    pub externs: &'a Externs,
    /// Bit widths of the parameters of the action being compiled.
    pub params: &'a [u32],
}

impl ExprCompiler<'_> {
    pub fn expr(&self, j: &Value, at: &str) -> LoadResult<TypedExpr> {
        let ty = get_str(j, "type", at)?;
        let v = get(j, "value", at)?;
        Ok(match ty {
            // primitive parameters wrap expressions twice
            "expression" if v.get("op").is_none() && v.get("type").is_some() => return self.expr(v, at),
            "expression" => return self.operation(v, at),
            "header" => TypedExpr::Hdr(HdrRef::Fixed(self.layout.header(as_str(v, at)?, at)?)),
            "field" => match self.layout.field_ref(v, at)? {
                Ok(s) => TypedExpr::Data(Expr::Field(s), self.layout.slot_wide(s)),
                Err(h) => TypedExpr::Data(Expr::ValidBit(Box::new(HdrRef::Fixed(h))), false),
            },
            "bool" => TypedExpr::Bool(Expr::Bool(v.as_bool().ok_or_else(|| LoadError::bad(at, "bad bool"))?)),
            "hexstr" => {
                let (c, wide) = hexstr_value(as_str(v, at)?, at)?;
                TypedExpr::Data(Expr::Const(c), wide)
            }
            "local" | "runtime_data" => {
                let i = v.as_u64().ok_or_else(|| LoadError::bad(at, "bad local index"))? as usize;
                let w = *self
                    .params
                    .get(i)
                    .ok_or_else(|| LoadError::bad(at, format!("action parameter {i} out of range")))?;
                TypedExpr::Data(Expr::Local(i), w >= 128)
            }
            "register" => {
                let (name, idx) = as_pair(v, at)?;
                let name = as_str(name, at)?;
                let r = self.externs.register(name, at)?;
                let (idx, _) = self.expr(idx, at)?.into_data(at)?;
                TypedExpr::Data(Expr::Register { reg: r, idx: Box::new(idx) }, self.externs.register_infos[r].bitwidth >= 128)
            }
            "header_stack" => TypedExpr::Stack(self.layout.stack(as_str(v, at)?, at)?),
            "stack_field" => {
                let (s, f) = as_pair(v, at)?;
                let s = self.layout.stack(as_str(s, at)?, at)?;
                let off = self.layout.field_index(self.layout.stacks[s].htype, as_str(f, at)?, at)?;
                let fd = &self.layout.htypes[self.layout.stacks[s].htype].fields[off];
                TypedExpr::Data(Expr::StackLast { stack: s, off }, fd.width >= 128 && !fd.signed)
            }
            "header_union" => {
                TypedExpr::Union(UnionRef::Fixed(self.layout.union(as_str(v, at)?, at)?))
            }
            other => return Err(LoadError::unsupported(at, format!("expression operand of type '{other}'"))),
        })
    }

    fn operation(&self, v: &Value, at: &str) -> LoadResult<TypedExpr> {
        let op = get_str(v, "op", at)?;
        let left = v.get("left").filter(|x| !x.is_null());
        let right = v.get("right").filter(|x| !x.is_null());
        fn need<'v>(x: Option<&'v Value>, at: &str, op: &str) -> LoadResult<&'v Value> {
            x.ok_or_else(|| LoadError::bad(at, format!("operator '{op}' lacks an operand")))
        }
        let bx = Box::new;
        Ok(match op {
            "?" => {
                let c = self.expr(get(v, "cond", at)?, at)?.into_bool(at)?;
                match (self.expr(need(left, at, op)?, at)?, self.expr(need(right, at, op)?, at)?) {
                    (TypedExpr::Bool(a), TypedExpr::Bool(b)) => TypedExpr::Bool(Expr::Ternary(bx(c), bx(a), bx(b))),
                    (a, b) => {
                        let (a, wa) = a.into_data(at)?;
                        let (b, wb) = b.into_data(at)?;
                        TypedExpr::Data(Expr::Ternary(bx(c), bx(a), bx(b)), wa || wb)
                    }
                }
            }
            "==" | "!=" => {
                let l = self.expr(need(left, at, op)?, at)?;
                let r = self.expr(need(right, at, op)?, at)?;
                let e = match (l, r) {
                    (TypedExpr::Bool(a), TypedExpr::Bool(b)) => {
                        Expr::Bin(if op == "==" { BinOp::BoolEq } else { BinOp::BoolNe }, bx(a), bx(b))
                    }
                    (TypedExpr::Hdr(a), TypedExpr::Hdr(b)) => {
                        let e = Expr::HdrEq(Box::new(a), Box::new(b));
                        if op == "==" {
                            e
                        } else {
                            Expr::Not(bx(e))
                        }
                    }
                    (TypedExpr::Union(a), TypedExpr::Union(b)) => {
                        let e = Expr::UnionEq(Box::new(a), Box::new(b));
                        if op == "==" {
                            e
                        } else {
                            Expr::Not(bx(e))
                        }
                    }
                    (a, b) => {
                        let (a, _) = a.into_data(at)?;
                        let (b, _) = b.into_data(at)?;
                        Expr::Bin(if op == "==" { BinOp::Eq } else { BinOp::Ne }, bx(a), bx(b))
                    }
                };
                TypedExpr::Bool(e)
            }
            "access_field" => {
                let h = match self.expr(need(left, at, op)?, at)? {
                    TypedExpr::Hdr(h) => h,
                    _ => return Err(LoadError::bad(at, "access_field needs a header")),
                };
                let off = need(right, at, op)?.as_u64().ok_or_else(|| LoadError::bad(at, "bad field offset"))? as usize;
                let ht = self.layout.hdr_type(&h);
                let fd = self.layout.htypes[ht]
                    .fields
                    .get(off)
                    .ok_or_else(|| LoadError::bad(at, format!("field offset {off} out of range")))?;
                let wide = fd.width >= 128 && !fd.signed;
                match h {
                    HdrRef::Fixed(hi) => TypedExpr::Data(Expr::Field(self.layout.headers[hi].first_slot + off), wide),
                    h => TypedExpr::Data(Expr::HdrField { hdr: Box::new(h), off }, wide),
                }
            }
            "access_union_header" => {
                let u = match self.expr(need(left, at, op)?, at)? {
                    TypedExpr::Union(u) => u,
                    _ => return Err(LoadError::bad(at, "access_union_header needs a union")),
                };
                let m = need(right, at, op)?.as_u64().ok_or_else(|| LoadError::bad(at, "bad member offset"))? as usize;
                let UnionRef::Fixed(ui) = u;
                let h = *self.layout.unions[ui].headers.get(m).ok_or_else(|| LoadError::bad(at, "union member out of range"))?;
                TypedExpr::Hdr(HdrRef::Fixed(h))
            }
            "dereference_header_stack" | "dereference_stack" => {
                let s = match self.expr(need(left, at, op)?, at)? {
                    TypedExpr::Stack(s) => s,
                    _ => return Err(LoadError::bad(at, "dereference needs a header stack")),
                };
                let (i, _) = self.expr(need(right, at, op)?, at)?.into_data(at)?;
                match i {
                    Expr::Const(c) if c >= 0 && (c as usize) < self.layout.stacks[s].headers.len() => {
                        TypedExpr::Hdr(HdrRef::Fixed(self.layout.stacks[s].headers[c as usize]))
                    }
                    i => TypedExpr::Hdr(HdrRef::StackIdx { stack: s, idx: bx(i) }),
                }
            }
            "last_stack_index" | "size_stack" => {
                let s = match self.expr(need(right, at, op)?, at)? {
                    TypedExpr::Stack(s) => s,
                    _ => return Err(LoadError::bad(at, format!("{op} needs a header stack"))),
                };
                TypedExpr::Data(if op == "size_stack" { Expr::SizeStack(s) } else { Expr::LastStackIndex(s) }, false)
            }
            "valid" => match self.expr(need(right, at, op)?, at)? {
                TypedExpr::Hdr(h) => TypedExpr::Bool(Expr::Valid(Box::new(h))),
                TypedExpr::Union(u) => TypedExpr::Bool(Expr::ValidUnion(Box::new(u))),
                _ => return Err(LoadError::bad(at, "valid needs a header")),
            },
            "valid_union" => match self.expr(need(right, at, op)?, at)? {
                TypedExpr::Union(u) => TypedExpr::Bool(Expr::ValidUnion(Box::new(u))),
                _ => return Err(LoadError::bad(at, "valid_union needs a union")),
            },
            "not" => TypedExpr::Bool(Expr::Not(bx(self.expr(need(right, at, op)?, at)?.into_bool(at)?))),
            "and" | "or" => {
                let a = self.expr(need(left, at, op)?, at)?.into_bool(at)?;
                let b = self.expr(need(right, at, op)?, at)?.into_bool(at)?;
                TypedExpr::Bool(Expr::Bin(if op == "and" { BinOp::LAnd } else { BinOp::LOr }, bx(a), bx(b)))
            }
            "d2b" => TypedExpr::Bool(Expr::D2B(bx(self.expr(need(right, at, op)?, at)?.into_data(at)?.0))),
            "b2d" => TypedExpr::Data(Expr::B2D(bx(self.expr(need(right, at, op)?, at)?.into_bool(at)?)), false),
            "~" => {
                let (e, w) = self.expr(need(right, at, op)?, at)?.into_data(at)?;
                TypedExpr::Data(Expr::BitNeg(bx(e)), w)
            }
            "+" | "-" | "*" | "/" | "%" | "<<" | ">>" | "&" | "|" | "^" | "<" | ">" | "<=" | ">="
            | "two_comp_mod" | "usat_cast" | "sat_cast" => {
                let (l, wl) = match left {
                    Some(l) => self.expr(l, at)?.into_data(at)?,
                    None if op == "+" || op == "-" => (Expr::Const(0), false),
                    None => return Err(LoadError::bad(at, format!("operator '{op}' lacks its left operand"))),
                };
                let (r, wr) = self.expr(need(right, at, op)?, at)?.into_data(at)?;
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
                    TypedExpr::Bool(e)
                } else {
                    TypedExpr::Data(e, wide_out)
                }
            }
            other => return Err(LoadError::unsupported(at, format!("expression operator '{other}'"))),
        })
    }

    pub fn data_expr(&self, j: &Value, at: &str) -> LoadResult<Expr> {
        Ok(self.expr(j, at)?.into_data(at)?.0)
    }

    pub fn bool_expr(&self, j: &Value, at: &str) -> LoadResult<Expr> {
        self.expr(j, at)?.into_bool(at)
    }

    pub fn lvalue(&self, j: &Value, at: &str) -> LoadResult<LValue> {
        match self.expr(j, at)? {
            TypedExpr::Data(Expr::Field(s), _) => Ok(LValue::Slot(s)),
            TypedExpr::Data(Expr::StackLast { stack, off }, _) => Ok(LValue::StackLast { stack, off }),
            TypedExpr::Data(Expr::HdrField { hdr, off }, _) => Ok(LValue::HdrField { hdr, off }),
            _ => Err(LoadError::bad(at, format!("not an assignable field: {j}"))),
        }
    }

    pub fn hdr_param(&self, j: &Value, at: &str) -> LoadResult<HdrRef> {
        match self.expr(j, at)? {
            TypedExpr::Hdr(h) => Ok(h),
            _ => Err(LoadError::bad(at, format!("expected a header: {j}"))),
        }
    }

    pub fn stack_param(&self, j: &Value, at: &str) -> LoadResult<usize> {
        match self.expr(j, at)? {
            TypedExpr::Stack(s) => Ok(s),
            _ => Err(LoadError::bad(at, format!("expected a header stack: {j}"))),
        }
    }

    pub fn union_param(&self, j: &Value, at: &str) -> LoadResult<UnionRef> {
        match self.expr(j, at)? {
            TypedExpr::Union(u) => Ok(u),
            _ => Err(LoadError::bad(at, format!("expected a header union: {j}"))),
        }
    }
}
