//! Execution of action primitives on a packet.

use crate::checksum::calc_output;
use crate::eval::Ctx;
use crate::ir::{LValue, Prim, Program};
use crate::packet::Pkt;
use crate::rng::Rng;
use crate::state::State;

/// Per-engine resources an action needs besides the packet.
pub(crate) struct Exec<'a> {
    pub p: &'a Program,
    pub state: &'a State,
    pub rng: &'a mut Rng,
    pub buf: &'a mut Vec<u8>,
    pub drop_port: u32,
}

pub(crate) fn lvalue_slot(c: &Ctx, lv: &LValue) -> Option<usize> {
    match lv {
        LValue::Slot(s) => Some(*s),
        LValue::StackLast { stack, off } => {
            let n = c.phv.next[*stack] as usize;
            let h = *c.p.stacks[*stack].headers.get(n.checked_sub(1)?)?;
            let hd = &c.p.headers[h];
            (*off < hd.nfields).then_some(hd.first_slot + off)
        }
        LValue::HdrField { hdr, off } => {
            let h = c.hdr(hdr)?;
            let hd = &c.p.headers[h];
            (*off < hd.nfields).then_some(hd.first_slot + off)
        }
    }
}

/// P4_16 `push_front(n)` (bmv2 StackP4_16).
pub(crate) fn push_front(p: &Program, pkt: &mut Pkt, stack: usize, n: usize) {
    if n == 0 {
        return;
    }
    let hs = &p.stacks[stack].headers;
    let size = hs.len();
    pkt.phv.next[stack] = (pkt.phv.next[stack] as usize + n).min(size) as u32;
    if n < size {
        for i in (n..size).rev() {
            pkt.phv.swap_headers(p, hs[i], hs[i - n]);
        }
    }
    for &h in hs.iter().take(n.min(size)) {
        pkt.phv.set_invalid(h);
    }
}

/// P4_16 `pop_front(n)`.
pub(crate) fn pop_front(p: &Program, pkt: &mut Pkt, stack: usize, n: usize) {
    if n == 0 {
        return;
    }
    let hs = &p.stacks[stack].headers;
    let size = hs.len();
    pkt.phv.next[stack] -= (pkt.phv.next[stack] as usize).min(n) as u32;
    let mut i = 0;
    if n < size {
        while i < size - n {
            pkt.phv.swap_headers(p, hs[i], hs[i + n]);
            i += 1;
        }
    }
    while i < size {
        pkt.phv.set_invalid(hs[i]);
        i += 1;
    }
}

fn as_usize(v: i128) -> usize {
    if v < 0 {
        0
    } else if v > usize::MAX as i128 {
        usize::MAX
    } else {
        v as usize
    }
}

/// Runs `prim` if it is one of the direct stores simplify.rs makes (a
/// constant, an action argument or a masked field into a field) and says
/// whether it was. The interpreter, the fast path and the parser all run
/// them through here.
#[inline(always)]
pub(crate) fn run_store(prim: &Prim, pkt: &mut Pkt, args: &[u128]) -> bool {
    match *prim {
        Prim::SetConst { dst, value } => pkt.phv.put(dst, value),
        Prim::SetArg { dst, arg, mask } => pkt.phv.put(dst, args.get(arg).copied().unwrap_or(0) & mask),
        Prim::CopyField { dst, src, mask } => pkt.phv.put(dst, pkt.phv.f()[src] & mask),
        _ => return false,
    }
    true
}

pub(crate) fn run(x: &mut Exec, pkt: &mut Pkt, prims: &[Prim], args: &[u128]) {
    let p = x.p;
    let mut pc = 0usize;
    let mut steps = 0u32;
    while pc < prims.len() {
        steps += 1;
        if steps > 100_000 {
            break; // runaway jumps: never in p4c output
        }
        let mut next = pc + 1;
        macro_rules! ctx {
            () => {
                Ctx { p, phv: &pkt.phv, args, state: x.state }
            };
        }
        match &prims[pc] {
            Prim::Assign(lv, e) => {
                let c = ctx!();
                let v = c.eval(e);
                if let Some(s) = lvalue_slot(&c, lv) {
                    pkt.phv.set(p, s, v);
                }
            }
            store @ (Prim::SetConst { .. } | Prim::SetArg { .. } | Prim::CopyField { .. }) => {
                run_store(store, pkt, args);
            }
            Prim::AssignHeader(d, s) => {
                let c = ctx!();
                if let (Some(d), Some(s)) = (c.hdr(d), c.hdr(s)) {
                    pkt.phv.copy_header(p, d, s);
                }
            }
            Prim::AssignUnion(d, s) => {
                let c = ctx!();
                let (d, s) = (c.union(d), c.union(s));
                let n = p.unions[d].headers.len().min(p.unions[s].headers.len());
                for i in 0..n {
                    pkt.phv.copy_header(p, p.unions[d].headers[i], p.unions[s].headers[i]);
                }
            }
            Prim::AssignStack(d, s) => {
                pkt.phv.next[*d] = pkt.phv.next[*s];
                let n = p.stacks[*d].headers.len().min(p.stacks[*s].headers.len());
                for i in 0..n {
                    pkt.phv.copy_header(p, p.stacks[*d].headers[i], p.stacks[*s].headers[i]);
                }
            }
            Prim::AddHeader(h) => {
                if let Some(h) = ctx!().hdr(h) {
                    if !pkt.phv.valid[h] {
                        pkt.phv.zero_header(p, h);
                        pkt.phv.set_valid(p, h);
                        pkt.pkt_len_reg = pkt.pkt_len_reg.wrapping_add(p.headers[h].nbytes as u32);
                    }
                }
            }
            Prim::AddHeaderFast(h) => {
                if let Some(h) = ctx!().hdr(h) {
                    pkt.phv.set_valid(p, h);
                }
            }
            Prim::RemoveHeader(h) => {
                if let Some(h) = ctx!().hdr(h) {
                    if pkt.phv.valid[h] {
                        pkt.pkt_len_reg = pkt.pkt_len_reg.wrapping_sub(p.headers[h].nbytes as u32);
                        pkt.phv.set_invalid(h);
                    }
                }
            }
            Prim::MarkToDrop { egress_spec, mcast_grp } => {
                if let Some(s) = egress_spec {
                    pkt.phv.set(p, *s, x.drop_port as i128);
                }
                if let Some(s) = mcast_grp {
                    pkt.phv.set(p, *s, 0);
                }
            }
            Prim::RegisterRead { dst, reg, idx } => {
                let c = ctx!();
                let i = c.eval(idx);
                if let Some(v) = x.state.reg_get(*reg, i) {
                    if let Some(s) = lvalue_slot(&c, dst) {
                        pkt.phv.set(p, s, v as i128);
                    }
                }
            }
            Prim::RegisterWrite { reg, idx, val } => {
                let c = ctx!();
                let i = c.eval(idx);
                let v = c.eval(val);
                x.state.reg_set(*reg, i, v as u128);
            }
            Prim::Count { counter, idx } => {
                let i = ctx!().eval(idx);
                x.state.counter_inc(*counter, i, pkt.ingress_length as u64);
            }
            Prim::Clone { session, field_list } => {
                let c = ctx!();
                let s = c.eval(session) as u16;
                let fl = c.eval(field_list) as u16;
                pkt.clone = Some((s & 0x7fff, fl));
            }
            Prim::Resubmit(fl) => pkt.resubmit = ctx!().eval(fl) as u16,
            Prim::Recirculate(fl) => pkt.recirculate = ctx!().eval(fl) as u16,
            Prim::Random { dst, lo, hi } => {
                let c = ctx!();
                let (lo, hi) = (c.eval(lo) as u64, c.eval(hi) as u64);
                if lo <= hi {
                    let v = x.rng.uniform(lo, hi);
                    if let Some(s) = lvalue_slot(&c, dst) {
                        pkt.phv.set(p, s, v as i128);
                    }
                }
            }
            Prim::Hash { dst, base, calc, max } => {
                let c = ctx!();
                let b = c.eval(base) as u64;
                let mut sz = c.eval(max) as u64;
                if sz == 0 {
                    sz = 1;
                }
                let h = calc_output(p, &p.calcs[*calc], &pkt.phv, pkt.payload(), x.buf);
                let v = (h % sz).wrapping_add(b);
                if let Some(s) = lvalue_slot(&c, dst) {
                    pkt.phv.set(p, s, v as i128);
                }
            }
            Prim::Truncate(e) => {
                let n = as_usize(ctx!().eval(e));
                pkt.truncate = Some(pkt.truncate.map_or(n, |t| t.min(n)));
            }
            Prim::Exit => pkt.exit = true,
            Prim::Push(s, n) => {
                let n = as_usize(ctx!().eval(n));
                push_front(p, pkt, *s, n);
            }
            Prim::Pop(s, n) => {
                let n = as_usize(ctx!().eval(n));
                pop_front(p, pkt, *s, n);
            }
            Prim::Assert(e) => {
                if !ctx!().eval_bool(e) {
                    pkt.assert_failed = true;
                    x.state.note_assert_failure();
                }
            }
            Prim::Jump(e) => next = as_usize(ctx!().eval(e)),
            Prim::JumpIfZero(cond, e) => {
                let c = ctx!();
                if c.eval(cond) == 0 {
                    next = as_usize(c.eval(e));
                }
            }
            Prim::NoOp => {}
        }
        pc = next;
    }
}
