//! Expression evaluation over the PHV. Data values are i128
//! (bmv2 computes with unbounded integers; p4c masks every arithmetic
//! result to its type's width, so two's complement i128 arithmetic gives
//! the same results for all widths up to 128). Operands derived from
//! unsigned 128-bit values are flagged "wide" at compile time and compared,
//! divided and shifted right as unsigned.

use crate::ir::{BinOp, Expr, HdrRef, Program, UnionRef};
use crate::phv::{load, Phv};
use crate::state::State;

pub(crate) struct Ctx<'a> {
    pub p: &'a Program,
    pub phv: &'a Phv,
    pub args: &'a [u128],
    pub state: &'a State,
}

fn shift_amount(v: i128) -> Option<u32> {
    if (0..128).contains(&v) {
        Some(v as u32)
    } else {
        None
    }
}

impl<'a> Ctx<'a> {
    pub fn hdr(&self, h: &HdrRef) -> Option<usize> {
        match h {
            HdrRef::Fixed(i) => Some(*i),
            HdrRef::StackIdx { stack, idx } => {
                let i = self.eval(idx);
                let s = &self.p.stacks[*stack];
                if i >= 0 && (i as u128) < s.headers.len() as u128 {
                    Some(s.headers[i as usize])
                } else {
                    None
                }
            }
            HdrRef::UnionMember { un, member } => {
                let u = self.union(un);
                self.p.unions[u].headers.get(*member).copied()
            }
        }
    }

    pub fn union(&self, u: &UnionRef) -> usize {
        match u {
            UnionRef::Fixed(i) => *i,
        }
    }

    fn field_of(&self, h: usize, off: usize) -> i128 {
        let hd = &self.p.headers[h];
        if off >= hd.nfields {
            return 0;
        }
        let s = hd.first_slot + off;
        load(&self.p.slots[s], self.phv.f()[s])
    }

    /// Evaluates a data expression.
    pub fn eval(&self, e: &Expr) -> i128 {
        match e {
            Expr::Const(v) => *v,
            Expr::Field(s) => load(&self.p.slots[*s], self.phv.f()[*s]),
            Expr::ValidHdr(h) => self.phv.valid[*h] as i128,
            Expr::FieldNonZero(s) => (self.phv.f()[*s] != 0) as i128,
            Expr::Local(i) => self.args.get(*i).copied().unwrap_or(0) as i128,
            Expr::ValidBit(h) => self.hdr(h).map(|h| self.phv.valid[h] as i128).unwrap_or(0),
            Expr::StackLast { stack, off } => {
                let n = self.phv.next[*stack] as usize;
                if n == 0 {
                    return 0;
                }
                match self.p.stacks[*stack].headers.get(n - 1) {
                    Some(&h) => self.field_of(h, *off),
                    None => 0,
                }
            }
            Expr::HdrField { hdr, off } => match self.hdr(hdr) {
                Some(h) => self.field_of(h, *off),
                None => 0,
            },
            Expr::Register { reg, idx } => {
                let i = self.eval(idx);
                self.state.reg_get(*reg, i).map(|v| v as i128).unwrap_or(0)
            }
            Expr::LastStackIndex(s) => self.phv.next[*s] as i128 - 1,
            Expr::SizeStack(s) => self.phv.next[*s] as i128,
            Expr::BitNeg(x) => !self.eval(x),
            Expr::B2D(x) => self.eval_bool(x) as i128,
            Expr::Ternary(c, a, b) => {
                if self.eval_bool(c) {
                    self.eval(a)
                } else {
                    self.eval(b)
                }
            }
            Expr::Bin(op, l, r) => self.bin(*op, l, r),
            // boolean-valued expressions used as data (not emitted by p4c)
            Expr::Bool(_)
            | Expr::Valid(_)
            | Expr::ValidUnion(_)
            | Expr::Not(_)
            | Expr::D2B(_)
            | Expr::HdrEq(..)
            | Expr::UnionEq(..) => self.eval_bool(e) as i128,
        }
    }

    fn bin(&self, op: BinOp, l: &Expr, r: &Expr) -> i128 {
        use BinOp::*;
        let a = self.eval(l);
        let b = self.eval(r);
        match op {
            Add => a.wrapping_add(b),
            Sub => a.wrapping_sub(b),
            Mul => a.wrapping_mul(b),
            Div => {
                if b == 0 {
                    0
                } else {
                    a.wrapping_div(b)
                }
            }
            Mod => {
                if b == 0 {
                    0
                } else {
                    a.wrapping_rem(b)
                }
            }
            DivU => {
                if b == 0 {
                    0
                } else {
                    ((a as u128) / (b as u128)) as i128
                }
            }
            ModU => {
                if b == 0 {
                    0
                } else {
                    ((a as u128) % (b as u128)) as i128
                }
            }
            Shl => match shift_amount(b) {
                Some(s) => a.wrapping_shl(s),
                None => 0,
            },
            Shr => match shift_amount(b) {
                Some(s) => a >> s,
                None if b > 0 => {
                    if a < 0 {
                        -1
                    } else {
                        0
                    }
                }
                None => a,
            },
            ShrU => match shift_amount(b) {
                Some(s) => ((a as u128) >> s) as i128,
                None if b > 0 => 0,
                None => a,
            },
            And => a & b,
            Or => a | b,
            Xor => a ^ b,
            TwoCompMod => {
                let w = b.clamp(1, 128) as u32;
                if w == 128 {
                    a
                } else {
                    let m = (a as u128) & ((1u128 << w) - 1);
                    if m >> (w - 1) == 1 {
                        (m as i128) - (1i128 << w)
                    } else {
                        m as i128
                    }
                }
            }
            UsatCast => {
                let w = b.clamp(0, 128) as u32;
                if a < 0 {
                    0
                } else if w < 127 && a > (1i128 << w) - 1 {
                    (1i128 << w) - 1
                } else {
                    a
                }
            }
            SatCast => {
                let w = b.clamp(1, 128) as u32;
                if w >= 128 {
                    a
                } else {
                    a.clamp(-(1i128 << (w - 1)), (1i128 << (w - 1)) - 1)
                }
            }
            // comparisons / logic as data
            _ => self.bin_bool(op, l, r) as i128,
        }
    }

    fn bin_bool(&self, op: BinOp, l: &Expr, r: &Expr) -> bool {
        use BinOp::*;
        match op {
            LAnd => self.eval_bool(l) && self.eval_bool(r),
            LOr => self.eval_bool(l) || self.eval_bool(r),
            BoolEq => self.eval_bool(l) == self.eval_bool(r),
            BoolNe => self.eval_bool(l) != self.eval_bool(r),
            _ => {
                let a = self.eval(l);
                let b = self.eval(r);
                match op {
                    Eq => a == b,
                    Ne => a != b,
                    Lt => a < b,
                    Le => a <= b,
                    Gt => a > b,
                    Ge => a >= b,
                    LtU => (a as u128) < (b as u128),
                    LeU => (a as u128) <= (b as u128),
                    GtU => (a as u128) > (b as u128),
                    GeU => (a as u128) >= (b as u128),
                    _ => self.bin(op, l, r) != 0,
                }
            }
        }
    }

    /// Evaluates a boolean expression.
    pub fn eval_bool(&self, e: &Expr) -> bool {
        match e {
            Expr::Bool(b) => *b,
            Expr::ValidHdr(h) => self.phv.valid[*h],
            Expr::FieldNonZero(s) => self.phv.f()[*s] != 0,
            Expr::Valid(h) => self.hdr(h).map(|h| self.phv.valid[h]).unwrap_or(false),
            Expr::ValidUnion(u) => {
                let u = self.union(u);
                self.p.unions[u].headers.iter().any(|&h| self.phv.valid[h])
            }
            Expr::Not(x) => !self.eval_bool(x),
            Expr::D2B(x) => self.eval(x) != 0,
            Expr::Bin(op, l, r) => self.bin_bool(*op, l, r),
            Expr::Ternary(c, a, b) => {
                if self.eval_bool(c) {
                    self.eval_bool(a)
                } else {
                    self.eval_bool(b)
                }
            }
            Expr::HdrEq(a, b) => match (self.hdr(a), self.hdr(b)) {
                (Some(a), Some(b)) => self.headers_equal(a, b),
                _ => false,
            },
            Expr::UnionEq(a, b) => {
                let (ua, ub) = (self.union(a), self.union(b));
                let (ha, hb) = (&self.p.unions[ua].headers, &self.p.unions[ub].headers);
                ha.len() == hb.len()
                    && ha.iter().zip(hb.iter()).all(|(&x, &y)| {
                        let (vx, vy) = (self.phv.valid[x], self.phv.valid[y]);
                        (!vx && !vy) || (vx && vy && self.headers_equal(x, y))
                    })
            }
            _ => self.eval(e) != 0,
        }
    }

    /// bmv2 Header::cmp: same type, both valid, same field values.
    fn headers_equal(&self, a: usize, b: usize) -> bool {
        let (ha, hb) = (&self.p.headers[a], &self.p.headers[b]);
        ha.htype == hb.htype
            && self.phv.valid[a]
            && self.phv.valid[b]
            && (0..ha.nfields).all(|i| self.phv.f()[ha.first_slot + i] == self.phv.f()[hb.first_slot + i])
    }
}
