//! Lowering of the deparser: each header of the deparser's order, if
//! valid, written as its big-endian 64-bit words, each assembled in a
//! register from its fields' pieces with the shifts and masks known at
//! compile time (codec.rs's word plan, which the interpreter walks piece
//! by piece), at the position the headers before it left. Only for a
//! program whose every deparsed header has a word plan; else the
//! interpreter deparses as before.

use super::{flags, Lower};
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData};
use cranelift_codegen::isa::TargetFrontendConfig;

/// The output buffer: written unaligned, within the room the caller made
/// (the headers' bytes and `Program::deparse_slack`).
fn out_flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

impl<'a, 'f> Lower<'a, 'f> {
    /// Whether every header the deparser may emit has a word plan.
    pub fn can_deparse(p: &crate::ir::Program) -> bool {
        p.deparser.iter().all(|&h| p.headers[h].codec.words().is_some())
    }

    /// Lowers the deparser into `b`'s function, whose parameters are the
    /// `Env` pointer and the output's address, and which returns the
    /// bytes of headers written (`can_deparse` must hold).
    pub fn deparser(f: super::Function<'a, 'f>, target: TargetFrontendConfig) {
        let p = f.p;
        let (mut l, params) = Self::begin(f);
        let out = params[1];
        let at = l.b.declare_var(I64);
        let zero = l.b.ins().iconst(I64, 0);
        l.b.def_var(at, zero);
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
                l.b.ins().store(out_flags(), w, base, (k * 8) as i32);
            }
            let pos = l.b.ins().iadd_imm_u(pos, header.nbytes as i64);
            l.b.def_var(at, pos);
            l.end_if(done);
        }
        let n = l.b.use_var(at);
        let ret = l.ret;
        l.b.ins().jump(ret, &[]);
        l.b.switch_to_block(ret);
        l.b.ins().return_(&[n]);
        l.b.seal_all_blocks();
        l.b.finalize(target);
    }
}
