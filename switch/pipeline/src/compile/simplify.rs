//! Load-time rewriting of the compiled program into cheaper equivalent
//! forms. p4c's bmv2 output is regular: most primitives copy an action
//! parameter, a constant or a (masked) field into a field, and most
//! conditions test a header's validity or a flag. Each such form gets a
//! direct instruction so the interpreter skips the general expression
//! walk. Every rewrite preserves the exact value the general path would
//! store; tests/constructs.rs checks each form.

use crate::bits::mask;
use crate::ir::{BinOp, Expr, HdrRef, LValue, ParserOp, Prim, Program, SetSrc};
use crate::phv::fit;

/// Rewrites `p` in place.
pub(crate) fn simplify(p: &mut Program) {
    let mut defs = std::mem::take(&mut p.action_defs);
    for d in &mut defs {
        for prim in &mut d.prims {
            simplify_prim(p, prim);
        }
    }
    p.action_defs = defs;
    let mut conds = std::mem::take(&mut p.conds);
    for c in &mut conds {
        simplify_expr(p, &mut c.expr);
    }
    p.conds = conds;
    let mut states = std::mem::take(&mut p.parse_states);
    for st in &mut states {
        for op in &mut st.ops {
            match op {
                ParserOp::Prim(prim) => simplify_prim(p, prim),
                ParserOp::Set { dst, src } => {
                    simplify_lvalue(p, dst);
                    if let SetSrc::Expr(e) = src {
                        simplify_expr(p, e);
                        // A parser `set` stores as an assignment does; the
                        // direct forms skip the expression walk.
                        let mut prim = Prim::Assign(dst.clone(), e.clone());
                        simplify_prim(p, &mut prim);
                        if matches!(prim, Prim::SetConst { .. } | Prim::CopyField { .. }) {
                            *op = ParserOp::Prim(prim);
                        }
                    }
                }
                ParserOp::Verify { cond, error } => {
                    simplify_expr(p, cond);
                    simplify_expr(p, error);
                }
                ParserOp::Advance(e) => simplify_expr(p, e),
                ParserOp::Extract(_) | ParserOp::ExtractStack(_) => {}
            }
        }
    }
    p.parse_states = states;
    let (mut verify, mut update) = (std::mem::take(&mut p.verify_checksums), std::mem::take(&mut p.update_checksums));
    for cond in verify.iter_mut().chain(update.iter_mut()).filter_map(|c| c.cond.as_mut()) {
        simplify_expr(p, cond);
    }
    (p.verify_checksums, p.update_checksums) = (verify, update);
}

fn simplify_prim(p: &Program, prim: &mut Prim) {
    match prim {
        Prim::Assign(lv, e) => {
            simplify_lvalue(p, lv);
            simplify_expr(p, e);
            let LValue::Slot(dst) = *lv else { return };
            let d = &p.slots[dst];
            // Values that go through `fit` unchanged except for masking:
            // an unsigned, non-saturating destination.
            let plain_dst = !d.signed && !d.saturating;
            *prim = match e {
                Expr::Const(v) => Prim::SetConst { dst, value: fit(d, *v) },
                Expr::Local(i) if plain_dst => Prim::SetArg { dst, arg: *i, mask: mask(d.width) },
                Expr::Field(src) if plain_dst && !p.slots[*src].signed => {
                    Prim::CopyField { dst, src: *src, mask: mask(d.width) }
                }
                Expr::Bin(BinOp::And, l, r) if plain_dst => match (&**l, &**r) {
                    (Expr::Field(src), Expr::Const(m)) | (Expr::Const(m), Expr::Field(src))
                        if !p.slots[*src].signed && *m >= 0 =>
                    {
                        Prim::CopyField { dst, src: *src, mask: mask(d.width) & (*m as u128) }
                    }
                    _ => return,
                },
                _ => return,
            };
        }
        Prim::RegisterRead { dst, idx, .. } => {
            simplify_lvalue(p, dst);
            simplify_expr(p, idx);
        }
        Prim::RegisterWrite { idx, val, .. } => {
            simplify_expr(p, idx);
            simplify_expr(p, val);
        }
        Prim::Count { idx, .. } => simplify_expr(p, idx),
        Prim::Random { dst, lo, hi } => {
            simplify_lvalue(p, dst);
            simplify_expr(p, lo);
            simplify_expr(p, hi);
        }
        Prim::Hash { dst, base, max, .. } => {
            simplify_lvalue(p, dst);
            simplify_expr(p, base);
            simplify_expr(p, max);
        }
        Prim::Assert(e) | Prim::Truncate(e) | Prim::Jump(e) => simplify_expr(p, e),
        Prim::JumpIfZero(c, e) => {
            simplify_expr(p, c);
            simplify_expr(p, e);
        }
        _ => {}
    }
}

/// A field of a fixed header is a fixed slot.
fn simplify_lvalue(p: &Program, lv: &mut LValue) {
    if let LValue::HdrField { hdr, off } = lv {
        if let HdrRef::Fixed(h) = **hdr {
            let hd = &p.headers[h];
            if *off < hd.nfields {
                *lv = LValue::Slot(hd.first_slot + *off);
            }
        }
    }
}

fn simplify_expr(p: &Program, e: &mut Expr) {
    // children first, so folds see simplified operands
    match e {
        Expr::Bin(_, l, r) => {
            simplify_expr(p, l);
            simplify_expr(p, r);
        }
        Expr::BitNeg(x) | Expr::Not(x) | Expr::D2B(x) | Expr::B2D(x) => simplify_expr(p, x),
        Expr::Ternary(c, a, b) => {
            simplify_expr(p, c);
            simplify_expr(p, a);
            simplify_expr(p, b);
        }
        Expr::Register { idx, .. } => simplify_expr(p, idx),
        _ => {}
    }
    let new = match e {
        Expr::B2D(x) => match **x {
            Expr::Bool(b) => Expr::Const(b as i128),
            _ => return,
        },
        Expr::Not(x) => match **x {
            Expr::Bool(b) => Expr::Bool(!b),
            _ => return,
        },
        Expr::Valid(h) => match **h {
            HdrRef::Fixed(h) => Expr::ValidHdr(h),
            _ => return,
        },
        Expr::ValidBit(h) => match **h {
            HdrRef::Fixed(h) => Expr::ValidHdr(h),
            _ => return,
        },
        Expr::D2B(x) => match **x {
            Expr::ValidHdr(h) => Expr::ValidHdr(h),
            Expr::Field(s) => Expr::FieldNonZero(s),
            _ => return,
        },
        Expr::HdrField { hdr, off } => match **hdr {
            HdrRef::Fixed(h) if *off < p.headers[h].nfields => Expr::Field(p.headers[h].first_slot + *off),
            _ => return,
        },
        _ => return,
    };
    *e = new;
}
