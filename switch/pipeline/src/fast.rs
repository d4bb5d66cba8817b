//! The fast path: the control blocks specialised into closures at load
//! time. Each conditional and each action of the program becomes a tree of
//! closures with its operands resolved (unsigned fields read without the
//! sign check, constants captured, the store's truncation mask known), so a
//! packet runs straight-line code instead of walking expression trees and
//! matching primitives.
//!
//! Nothing here has semantics of its own. A construct without a
//! specialised form compiles to a closure that calls the general path
//! (`Ctx::eval`, `actions::run`) on it, so every program runs, and runs the
//! same: tests/fuzz.rs runs both paths on the same writes and packets and
//! compares every output frame, counter and register.

use crate::actions::{self, Exec};
use crate::eval::Ctx;
use crate::ir::{BinOp, Expr, HdrRef, LValue, ParserOp, Prim, Program, SetSrc};
use crate::packet::Pkt;
use crate::phv::fit;

type EFn = Box<dyn Fn(&Ctx) -> i128 + Send + Sync>;
type BFn = Box<dyn Fn(&Ctx) -> bool + Send + Sync>;
type PFn = Box<dyn Fn(&mut Exec, &mut Pkt, &[u128]) + Send + Sync>;

/// An action: its primitives in order, or (an action with jumps, whose
/// primitives are not run in order) the general interpreter.
pub(crate) enum FastAction {
    Prims(Vec<FastPrim>),
    General(usize),
}

/// A primitive: the direct stores most of p4c's primitives are run inline
/// (`actions::run_store`); anything else is a closure. Inline, a store
/// costs a few instructions instead of an indirect call.
pub(crate) enum FastPrim {
    Store(Prim),
    Closure(PFn),
}

/// The specialised program: one boolean closure per conditional, one
/// `FastAction` per action, indexed as in `Program`, and a store per parser
/// `set` of a computed value into a field (`parser_sets[state][op]`; the
/// direct `set`s are already stores, simplify.rs).
pub(crate) struct FastProgram {
    pub conds: Vec<BFn>,
    pub actions: Vec<FastAction>,
    pub parser_sets: Vec<Vec<Option<PFn>>>,
    /// Per parse state, its select packed into one comparison a case.
    pub selects: Vec<Option<PackedSelect>>,
}

/// A parse state's select whose keys are all fields and whose cases are
/// all values (with or without masks), packed: the key fields side by
/// side in one u128, each case a (value, mask) over the same layout, so
/// a case is one masked compare instead of a walk over per-field lists.
/// Only where every case value and mask fits its field's width (else a
/// bit could spill into the next field's place) and the widths sum to at
/// most 128.
pub(crate) struct PackedSelect {
    /// (slot, shift) of each key field.
    fields: Vec<(usize, u32)>,
    /// (value & mask, mask, next state) in order.
    cases: Vec<(u128, u128, Option<usize>)>,
}

impl PackedSelect {
    fn build(p: &Program, st: &crate::ir::ParseState) -> Option<PackedSelect> {
        use crate::ir::{TransCase, TransKey};
        if st.key.is_empty() || st.key.len() != st.key_widths.len() {
            return None;
        }
        let total: u32 = st.key_widths.iter().sum();
        if total > 128 || st.key_widths.iter().any(|&w| w == 0) {
            return None;
        }
        let mut fields = Vec::new();
        let mut shift = total;
        for (k, &w) in st.key.iter().zip(&st.key_widths) {
            let TransKey::Slot(slot) = *k else { return None };
            // The slot holds values of its own width; the key's must agree.
            if p.slots[slot].width != w {
                return None;
            }
            shift -= w;
            fields.push((slot, shift));
        }
        let pack = |vals: &[u128]| -> Option<u128> {
            let mut acc = 0u128;
            for ((&v, &(_, sh)), &w) in vals.iter().zip(&fields).zip(&st.key_widths) {
                if w < 128 && v >> w != 0 {
                    return None;
                }
                acc |= v << sh;
            }
            Some(acc)
        };
        let all = if total >= 128 { u128::MAX } else { (1u128 << total) - 1 };
        let mut cases = Vec::new();
        for c in &st.cases {
            let TransCase::Value { values, masks, next } = c else { return None };
            if values.len() != fields.len() {
                return None;
            }
            let mask = match masks {
                Some(m) if m.len() == fields.len() => pack(m)?,
                Some(_) => return None,
                None => all,
            };
            cases.push((pack(values)? & mask, mask, *next));
        }
        Some(PackedSelect { fields, cases })
    }

    /// The next state for the packet's key fields in `f`.
    #[inline(always)]
    pub fn next(&self, f: &[u128], default: Option<usize>) -> Option<usize> {
        let mut key = 0u128;
        for &(slot, shift) in &self.fields {
            key |= f[slot] << shift;
        }
        for &(value, mask, next) in &self.cases {
            if key & mask == value {
                return next;
            }
        }
        default
    }
}

impl FastProgram {
    pub fn build(p: &Program) -> FastProgram {
        FastProgram {
            conds: p.conds.iter().map(|c| bool_fn(p, &c.expr)).collect(),
            actions: (0..p.action_defs.len()).map(|a| action(p, a)).collect(),
            parser_sets: p.parse_states.iter().map(|st| st.ops.iter().map(|op| parser_set(p, op)).collect()).collect(),
            selects: p.parse_states.iter().map(|st| PackedSelect::build(p, st)).collect(),
        }
    }

    /// The store for op `op` of parse state `state`, if it has one.
    #[inline(always)]
    pub fn parser_set(&self, state: usize, op: usize) -> Option<&PFn> {
        self.parser_sets[state][op].as_ref()
    }

    /// Runs action `a` with `args` on `pkt`.
    #[inline(always)]
    pub fn run_action(&self, x: &mut Exec, pkt: &mut Pkt, a: usize, args: &[u128]) {
        match &self.actions[a] {
            FastAction::Prims(v) => {
                for f in v {
                    match f {
                        FastPrim::Store(s) => {
                            actions::run_store(s, pkt, args);
                        }
                        FastPrim::Closure(f) => f(x, pkt, args),
                    }
                }
            }
            FastAction::General(a) => actions::run(x, pkt, &x.p.action_defs[*a].prims, args),
        }
    }
}

/// An operand as it is read: a constant, an unsigned field, or anything.
enum Opd {
    Const(i128),
    Field(usize),
    Fn(EFn),
}

fn unsigned_field(p: &Program, s: usize) -> bool {
    let i = &p.slots[s];
    !i.signed || i.width >= 128 || i.width == 0
}

fn operand(p: &Program, e: &Expr) -> Opd {
    match e {
        Expr::Const(v) => Opd::Const(*v),
        Expr::Field(s) if unsigned_field(p, *s) => Opd::Field(*s),
        _ => Opd::Fn(data_fn(p, e)),
    }
}

fn into_fn(o: Opd) -> EFn {
    match o {
        Opd::Const(v) => Box::new(move |_| v),
        Opd::Field(s) => Box::new(move |c| c.phv.f()[s] as i128),
        Opd::Fn(f) => f,
    }
}

/// Combines two operands with `$op`, one closure per operand shape so the
/// common `field OP constant` reads the field and compares in one step.
macro_rules! combine {
    ($l:expr, $r:expr, |$a:ident, $b:ident| $body:expr, $out:ty) => {{
        let f: Box<dyn Fn(&Ctx) -> $out + Send + Sync> = match ($l, $r) {
            (Opd::Field(x), Opd::Const($b)) => Box::new(move |c: &Ctx| {
                let $a = c.phv.f()[x] as i128;
                $body
            }),
            (Opd::Field(x), Opd::Field(y)) => Box::new(move |c: &Ctx| {
                let $a = c.phv.f()[x] as i128;
                let $b = c.phv.f()[y] as i128;
                $body
            }),
            (Opd::Fn(f), Opd::Const($b)) => Box::new(move |c: &Ctx| {
                let $a = f(c);
                $body
            }),
            (Opd::Fn(f), Opd::Field(y)) => Box::new(move |c: &Ctx| {
                let $a = f(c);
                let $b = c.phv.f()[y] as i128;
                $body
            }),
            (l, r) => {
                let (lf, rf) = (into_fn(l), into_fn(r));
                Box::new(move |c: &Ctx| {
                    let $a = lf(c);
                    let $b = rf(c);
                    $body
                })
            }
        };
        f
    }};
}

/// The general path for `e` as data.
fn general_data(e: &Expr) -> EFn {
    let e = e.clone();
    Box::new(move |c| c.eval(&e))
}

/// The general path for `e` as a condition.
fn general_bool(e: &Expr) -> BFn {
    let e = e.clone();
    Box::new(move |c| c.eval_bool(&e))
}

/// `e` as data, with `Ctx::eval`'s semantics.
fn data_fn(p: &Program, e: &Expr) -> EFn {
    use BinOp::*;
    match e {
        Expr::Const(v) => {
            let v = *v;
            Box::new(move |_| v)
        }
        Expr::Field(s) if unsigned_field(p, *s) => {
            let s = *s;
            Box::new(move |c| c.phv.f()[s] as i128)
        }
        Expr::Local(i) => {
            let i = *i;
            Box::new(move |c| c.args.get(i).copied().unwrap_or(0) as i128)
        }
        Expr::ValidHdr(h) => {
            let h = *h;
            Box::new(move |c| c.phv.valid[h] as i128)
        }
        Expr::FieldNonZero(s) => {
            let s = *s;
            Box::new(move |c| (c.phv.f()[s] != 0) as i128)
        }
        Expr::B2D(x) => {
            let f = bool_fn(p, x);
            Box::new(move |c| f(c) as i128)
        }
        Expr::BitNeg(x) => {
            let f = data_fn(p, x);
            Box::new(move |c| !f(c))
        }
        Expr::Bin(op, l, r) => {
            let (l, r) = (operand(p, l), operand(p, r));
            match op {
                Add => combine!(l, r, |a, b| a.wrapping_add(b), i128),
                Sub => combine!(l, r, |a, b| a.wrapping_sub(b), i128),
                Mul => combine!(l, r, |a, b| a.wrapping_mul(b), i128),
                And => combine!(l, r, |a, b| a & b, i128),
                Or => combine!(l, r, |a, b| a | b, i128),
                Xor => combine!(l, r, |a, b| a ^ b, i128),
                Eq | Ne | Lt | Le | Gt | Ge | LtU | LeU | GtU | GeU | LAnd | LOr | BoolEq | BoolNe => {
                    let f = bool_fn(p, e);
                    Box::new(move |c| f(c) as i128)
                }
                _ => general_data(e),
            }
        }
        Expr::Ternary(cond, a, b) => {
            let (cond, a, b) = (bool_fn(p, cond), data_fn(p, a), data_fn(p, b));
            Box::new(move |c| if cond(c) { a(c) } else { b(c) })
        }
        Expr::Bool(_) | Expr::Not(_) | Expr::D2B(_) => {
            let f = bool_fn(p, e);
            Box::new(move |c| f(c) as i128)
        }
        _ => general_data(e),
    }
}

/// `e` as a condition, with `Ctx::eval_bool`'s semantics.
fn bool_fn(p: &Program, e: &Expr) -> BFn {
    use BinOp::*;
    match e {
        Expr::Bool(b) => {
            let b = *b;
            Box::new(move |_| b)
        }
        Expr::ValidHdr(h) => {
            let h = *h;
            Box::new(move |c| c.phv.valid[h])
        }
        Expr::FieldNonZero(s) => {
            let s = *s;
            Box::new(move |c| c.phv.f()[s] != 0)
        }
        Expr::Valid(h) => match &**h {
            HdrRef::Fixed(h) => {
                let h = *h;
                Box::new(move |c| c.phv.valid[h])
            }
            _ => general_bool(e),
        },
        Expr::Not(x) => {
            let f = bool_fn(p, x);
            Box::new(move |c| !f(c))
        }
        Expr::D2B(x) => match operand(p, x) {
            Opd::Const(v) => Box::new(move |_| v != 0),
            Opd::Field(s) => Box::new(move |c| c.phv.f()[s] != 0),
            Opd::Fn(f) => Box::new(move |c| f(c) != 0),
        },
        Expr::Bin(op, l, r) => match op {
            LAnd | LOr | BoolEq | BoolNe => {
                let (lf, rf) = (bool_fn(p, l), bool_fn(p, r));
                match op {
                    LAnd => Box::new(move |c| lf(c) && rf(c)),
                    LOr => Box::new(move |c| lf(c) || rf(c)),
                    BoolEq => Box::new(move |c| lf(c) == rf(c)),
                    _ => Box::new(move |c| lf(c) != rf(c)),
                }
            }
            Eq | Ne | Lt | Le | Gt | Ge | LtU | LeU | GtU | GeU => {
                let (l, r) = (operand(p, l), operand(p, r));
                match op {
                    Eq => combine!(l, r, |a, b| a == b, bool),
                    Ne => combine!(l, r, |a, b| a != b, bool),
                    Lt => combine!(l, r, |a, b| a < b, bool),
                    Le => combine!(l, r, |a, b| a <= b, bool),
                    Gt => combine!(l, r, |a, b| a > b, bool),
                    Ge => combine!(l, r, |a, b| a >= b, bool),
                    LtU => combine!(l, r, |a, b| (a as u128) < (b as u128), bool),
                    LeU => combine!(l, r, |a, b| (a as u128) <= (b as u128), bool),
                    GtU => combine!(l, r, |a, b| (a as u128) > (b as u128), bool),
                    _ => combine!(l, r, |a, b| (a as u128) >= (b as u128), bool),
                }
            }
            _ => {
                let f = data_fn(p, e);
                Box::new(move |c| f(c) != 0)
            }
        },
        Expr::Ternary(cond, a, b) => {
            let (cond, a, b) = (bool_fn(p, cond), bool_fn(p, a), bool_fn(p, b));
            Box::new(move |c| if cond(c) { a(c) } else { b(c) })
        }
        Expr::HdrEq(..) | Expr::UnionEq(..) | Expr::ValidUnion(_) => general_bool(e),
        _ => {
            let f = data_fn(p, e);
            Box::new(move |c| f(c) != 0)
        }
    }
}

/// The general path for one primitive.
fn general_prim(prim: &Prim) -> PFn {
    let prim = prim.clone();
    Box::new(move |x, pkt, args| actions::run(x, pkt, std::slice::from_ref(&prim), args))
}

/// A store of `v` into slot `dst`, truncated (or clamped) as `Phv::set`.
fn store(p: &Program, dst: usize, v: EFn) -> PFn {
    let info = p.slots[dst];
    if info.saturating {
        return Box::new(move |x, pkt, args| {
            let val = v(&Ctx { p: x.p, phv: &pkt.phv, args, state: x.state });
            pkt.phv.put(dst, fit(&info, val));
        });
    }
    let m = crate::bits::mask(info.width);
    Box::new(move |x, pkt, args| {
        let val = v(&Ctx { p: x.p, phv: &pkt.phv, args, state: x.state });
        pkt.phv.put(dst, (val as u128) & m);
    })
}

/// A parser `set` of a computed value into a fixed field stores as an
/// assignment does (bmv2 `ParserOpSet`, `Phv::set`); other ops stay with
/// the parser.
fn parser_set(p: &Program, op: &ParserOp) -> Option<PFn> {
    match op {
        ParserOp::Set { dst: LValue::Slot(d), src: SetSrc::Expr(e) } => Some(store(p, *d, data_fn(p, e))),
        _ => None,
    }
}

fn fast_prim(p: &Program, prim: &Prim) -> FastPrim {
    match prim {
        Prim::SetConst { .. } | Prim::SetArg { .. } | Prim::CopyField { .. } => FastPrim::Store(prim.clone()),
        _ => FastPrim::Closure(prim_fn(p, prim)),
    }
}

fn prim_fn(p: &Program, prim: &Prim) -> PFn {
    match prim {
        Prim::Assign(LValue::Slot(d), e) => store(p, *d, data_fn(p, e)),
        Prim::Count { counter, idx } => {
            let c = *counter;
            let idx = data_fn(p, idx);
            Box::new(move |x, pkt, args| {
                let i = idx(&Ctx { p: x.p, phv: &pkt.phv, args, state: x.state });
                x.state.counter_inc(c, i, pkt.ingress_length as u64);
            })
        }
        Prim::RegisterRead { dst: LValue::Slot(d), reg, idx } => {
            let (d, r) = (*d, *reg);
            let idx = data_fn(p, idx);
            Box::new(move |x, pkt, args| {
                let i = idx(&Ctx { p: x.p, phv: &pkt.phv, args, state: x.state });
                if let Some(v) = x.state.reg_get(r, i) {
                    pkt.phv.set(x.p, d, v as i128);
                }
            })
        }
        Prim::RegisterWrite { reg, idx, val } => {
            let r = *reg;
            let (idx, val) = (data_fn(p, idx), data_fn(p, val));
            Box::new(move |x, pkt, args| {
                let c = Ctx { p: x.p, phv: &pkt.phv, args, state: x.state };
                let i = idx(&c);
                let v = val(&c);
                x.state.reg_set(r, i, v as u128);
            })
        }
        Prim::NoOp => Box::new(|_, _, _| {}),
        _ => general_prim(prim),
    }
}

fn action(p: &Program, a: usize) -> FastAction {
    let prims = &p.action_defs[a].prims;
    if prims.iter().any(|x| matches!(x, Prim::Jump(_) | Prim::JumpIfZero(..))) {
        return FastAction::General(a);
    }
    FastAction::Prims(prims.iter().map(|x| fast_prim(p, x)).collect())
}
