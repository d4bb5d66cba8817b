//! Lowering of the deparser: first its update checksums, in order (a
//! csum16 over fields of up to 64 bits summed inline, as
//! `Csum16Plan::sum` does, while the inputs' headers are valid and the
//! condition has an inline form; any other through the interpreter's own
//! code, `helpers::checksum`); then each header of the deparser's order, if
//! valid, written as its big-endian 64-bit words, each assembled in a
//! register from its fields' pieces with the shifts and masks known at
//! compile time (codec.rs's word plan, which the interpreter walks piece
//! by piece), at the position the headers before it left. Only for a
//! program whose every deparsed header has a word plan; else the
//! interpreter deparses as before.

use super::{flags, unaligned, Args, Lower, V};
use crate::ir::{ChecksumDef, ChecksumKind};
use crate::jit::ArgSel;
use cranelift_codegen::ir::types::{I64, I8};
use cranelift_codegen::ir::{InstBuilder, Value};
use cranelift_codegen::isa::TargetFrontendConfig;

impl<'a, 'f> Lower<'a, 'f> {
    /// Whether every header the deparser may emit has a word plan.
    pub fn can_deparse(p: &crate::ir::Program) -> bool {
        p.deparser.iter().all(|&h| p.headers[h].codec.words().is_some())
    }

    /// Lowers the deparser into `b`'s function, whose parameters are the
    /// `Env` pointer and the output's address (`can_deparse` must hold).
    pub fn deparser(f: super::Function<'a, 'f>, target: TargetFrontendConfig) {
        let p = f.p;
        let (mut l, params) = Self::begin(f);
        let out = params[1];
        let at = l.b.declare_var(I64);
        let zero = l.b.ins().iconst(I64, 0);
        l.b.def_var(at, zero);
        for (i, c) in p.update_checksums.iter().enumerate() {
            l.update_checksum(i, c);
        }
        for &hd in &p.deparser {
            let header = &p.headers[hd];
            let Some(words) = header.codec.words() else { unreachable!("can_deparse holds") };
            let done = l.if_valid_is(hd, true);
            let pos = l.b.use_var(at);
            let base = l.b.ins().iadd(out, pos);
            for (k, pieces) in words.enumerate() {
                let mut acc = l.b.ins().iconst(I64, 0);
                for (field, mask, shr, shl) in pieces {
                    let s = header.first_slot + field;
                    let v = l.b.ins().load(I64, flags(), l.f, (s * 16) as i32);
                    let v = l.b.ins().band_imm_u(v, mask as i64);
                    let v = l.b.ins().ushr_imm_u(v, shr as i64);
                    let v = l.b.ins().ishl_imm_u(v, shl as i64);
                    acc = l.b.ins().bor(acc, v);
                }
                let w = l.b.ins().bswap(acc);
                l.b.ins().store(unaligned(), w, base, (k * 8) as i32);
            }
            let pos = l.b.ins().iadd_imm_u(pos, header.nbytes as i64);
            l.b.def_var(at, pos);
            l.end_if(done);
        }
        let ret = l.ret;
        l.b.ins().jump(ret, &[]);
        l.finish(target);
    }

    /// Update checksum `i`, `c` (`parser::update_checksums`'s step).
    fn update_checksum(&mut self, i: usize, c: &ChecksumDef) {
        let p = self.p;
        let plan = match c.kind {
            ChecksumKind::Calc(k) => p.calcs[k].csum.as_ref().and_then(|pl| pl.narrow_parts()),
            ChecksumKind::Ipv4 => None,
        };
        let none = Args::Const(&[], ArgSel::EMPTY);
        let cond = match &c.cond {
            Some(e) => self.cond(e, none),
            None => Some(self.b.ins().iconst(I8, 1)),
        };
        let (Some((short, narrow, consts, headers)), Some(cond), false) = (plan, cond, p.slots[c.slot].saturating) else {
            self.checksum_helper(i);
            return;
        };
        let done = self.b.create_block();
        let when = self.b.create_block();
        self.b.ins().brif(cond, when, &[], done, &[]);
        self.b.switch_to_block(when);
        // `calc_output`: the plan while its inputs' headers are valid, the
        // general path otherwise.
        let mut all = self.b.ins().iconst(I8, 1);
        for &h in headers {
            let v = self.valid_bit(h);
            all = self.b.ins().band(all, v);
        }
        let sum = self.b.create_block();
        let general = self.b.create_block();
        self.b.ins().brif(all, sum, &[], general, &[]);
        self.b.switch_to_block(general);
        self.checksum_helper(i);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(sum);
        let v = self.csum16(short, narrow, consts);
        let v = self.and_const(V::N(v), p.slots[c.slot].mask);
        self.store(c.slot, v);
        self.end_if(done);
    }

    fn checksum_helper(&mut self, i: usize) {
        let env = self.env;
        let iv = self.b.ins().iconst(I64, i as i64);
        self.call(self.h.checksum, &[env, iv]);
    }

    /// `Csum16Plan::sum` of the slots' values: each input's share, then the
    /// sum folded into 16 bits with its carries. The fold is the sum mod
    /// 0xFFFF but for a non-zero multiple of 0xFFFF, which folds to 0xFFFF
    /// — the plan's rule too (a sum is zero only when every input is).
    fn csum16(&mut self, short: &[(usize, u64, u64)], narrow: &[(usize, u64, u64)], consts: u64) -> Value {
        let mut acc = self.b.ins().iconst(I64, consts as i64);
        for &(slot, mask, mul) in short {
            let v = self.b.ins().load(I64, flags(), self.f, (slot * 16) as i32);
            let v = self.b.ins().band_imm_u(v, mask as i64);
            let t = self.b.ins().imul_imm_u(v, mul as i64);
            acc = self.b.ins().iadd(acc, t);
        }
        for &(slot, mask, mul) in narrow {
            let v = self.b.ins().load(I64, flags(), self.f, (slot * 16) as i32);
            let v = self.b.ins().band_imm_u(v, mask as i64);
            // `words16`: the sum of its 16-bit words.
            let mut w = self.b.ins().band_imm_u(v, 0xFFFF);
            for sh in [16, 32] {
                let x = self.b.ins().ushr_imm_u(v, sh);
                let x = self.b.ins().band_imm_u(x, 0xFFFF);
                w = self.b.ins().iadd(w, x);
            }
            let x = self.b.ins().ushr_imm_u(v, 48);
            w = self.b.ins().iadd(w, x);
            let t = self.b.ins().imul_imm_u(w, mul as i64);
            acc = self.b.ins().iadd(acc, t);
        }
        // Five folds take any 64-bit sum to at most 0xFFFF.
        for _ in 0..5 {
            let lo = self.b.ins().band_imm_u(acc, 0xFFFF);
            let hi = self.b.ins().ushr_imm_u(acc, 16);
            acc = self.b.ins().iadd(lo, hi);
        }
        self.b.ins().bxor_imm_u(acc, 0xFFFF)
    }
}
