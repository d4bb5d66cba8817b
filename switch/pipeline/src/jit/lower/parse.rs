//! Lowering of the parser: one block per state whose every operation and
//! whose select have an inline form — extraction of a fixed header laid
//! out in 64-bit words, `set`s and the store primitives, a select over
//! fields by value and mask — with the current position and the count of
//! states visited carried in variables. From a state that has no inline
//! form (header stacks, lookahead, `verify`, `advance`, value sets), or
//! whose headers could run past the frame's end, the native code hands
//! over to the interpreter (`parser::parse_from`), which runs that state
//! and the rest as it always has: every error but the timeout, and every
//! edge case of a short frame, stays the interpreter's.
//!
//! A program's parser typically walks a few such states (Ethernet, IPv4,
//! UDP) per packet, and the interpreter's loop over states and operations
//! cost several times the loads and stores of the fields themselves.

use super::{flags, unaligned, Args, Lower, V};
use crate::ir::{ParserOp, SetSrc, TransCase, TransKey};
use crate::jit::ArgSel;
use crate::phv::CHUNK_SHIFT;
use crate::parser::MAX_STATES;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{I64, I8};
use cranelift_codegen::ir::{Block, InstBuilder, Value};
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_frontend::Variable;

/// What the native parser leaves for `parser::parse`: an error (the
/// program's code for it, or `no_error` when the parser accepted) with
/// the position it stopped at, or `CONTINUE` and where the interpreter
/// takes over (state, position, states visited).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ParseOut {
    pub state: u64,
    pub pos: u64,
    pub visited: u64,
    pub err: u64,
}

impl ParseOut {
    pub const CONTINUE: u64 = u64::MAX;
}

const OUT_STATE: i32 = std::mem::offset_of!(ParseOut, state) as i32;
const OUT_POS: i32 = std::mem::offset_of!(ParseOut, pos) as i32;
const OUT_VISITED: i32 = std::mem::offset_of!(ParseOut, visited) as i32;
const OUT_ERR: i32 = std::mem::offset_of!(ParseOut, err) as i32;

/// How the native parser ends: the interpreter takes over at a state, or
/// the parse is over with an error code (the program's NoError when it
/// accepted).
enum Leave {
    HandOver(usize),
    Error(u32),
}

/// The parser function's own values besides `Lower`'s.
struct P {
    data: Value,
    len: Value,
    out: Value,
    pos: Variable,
    visited: Variable,
    /// Where the parser accepts.
    done: Block,
}

impl<'a, 'f> Lower<'a, 'f> {
    /// Lowers the parser into `b`'s function, whose parameters are the
    /// `Env` pointer, the frame's address and length and a `ParseOut`
    /// pointer. Returns how many states run as native code.
    pub fn parser(f: super::Function<'a, 'f>, target: TargetFrontendConfig) -> usize {
        let p = f.p;
        let (mut l, params) = Self::begin(f);
        let pos = l.b.declare_var(I64);
        let visited = l.b.declare_var(I64);
        let zero = l.b.ins().iconst(I64, 0);
        l.b.def_var(pos, zero);
        l.b.def_var(visited, zero);
        let done = l.b.create_block();
        let v = P { data: params[1], len: params[2], out: params[3], pos, visited, done };
        let mut blocks: Vec<Option<Block>> = vec![None; p.parse_states.len()];
        let mut todo = Vec::new();
        let first = l.state_block(p.parser_start, &mut blocks, &mut todo, &v);
        l.b.ins().jump(first, &[]);
        let mut native = 0;
        while let Some(si) = todo.pop() {
            native += l.parse_state(si, &mut blocks, &mut todo, &v) as usize;
        }
        l.b.switch_to_block(v.done);
        l.leave(&v, Leave::Error(p.errors.no_error));
        l.finish(target);
        native
    }

    /// The block that runs state `s` (None: the parser accepts).
    fn state_block(&mut self, s: Option<usize>, blocks: &mut [Option<Block>], todo: &mut Vec<usize>, v: &P) -> Block {
        let Some(si) = s else { return v.done };
        if let Some(b) = blocks[si] {
            return b;
        }
        let b = self.b.create_block();
        blocks[si] = Some(b);
        todo.push(si);
        b
    }

    /// Writes the `ParseOut` and returns.
    fn leave(&mut self, v: &P, how: Leave) {
        let pos = self.b.use_var(v.pos);
        let visited = self.b.use_var(v.visited);
        let (st, err) = match how {
            Leave::HandOver(si) => (si as i64, ParseOut::CONTINUE as i64),
            Leave::Error(e) => (0, e as i64),
        };
        let st = self.b.ins().iconst(I64, st);
        let err = self.b.ins().iconst(I64, err);
        for (val, off) in [(st, OUT_STATE), (pos, OUT_POS), (visited, OUT_VISITED), (err, OUT_ERR)] {
            self.b.ins().store(flags(), val, v.out, off);
        }
        self.b.ins().jump(self.ret, &[]);
    }

    /// Fills state `si`'s block; says whether the state runs as native
    /// code (else the block hands over to the interpreter).
    fn parse_state(&mut self, si: usize, blocks: &mut [Option<Block>], todo: &mut Vec<usize>, v: &P) -> bool {
        let p = self.p;
        let st = &p.parse_states[si];
        let entry = blocks[si].expect("a state's block is made before it is filled");
        // The body first, in a block of its own: an operation without an
        // inline form is only found while lowering, after the ones before
        // it were emitted. The body is then left unreachable.
        let body = self.b.create_block();
        self.b.switch_to_block(body);
        let mut reach = 0usize;
        let ok = self.state_ops(st, &mut reach, v) && self.select(st, blocks, todo, v);
        if !ok {
            // Close whatever block the partial body ended in.
            self.b.ins().jump(self.ret, &[]);
        }
        self.b.switch_to_block(entry);
        if !ok {
            self.leave(v, Leave::HandOver(si));
            return false;
        }
        // The interpreter runs a state whose headers might reach past the
        // frame (its word loads would; it errs or pads as it must).
        let pos = self.b.use_var(v.pos);
        let room = self.b.ins().isub(v.len, pos);
        let short = self.b.ins().icmp_imm_u(IntCC::UnsignedLessThan, room, reach as i64);
        let run = self.b.create_block();
        let hand = self.b.create_block();
        self.b.ins().brif(short, hand, &[], run, &[]);
        self.b.switch_to_block(hand);
        self.leave(v, Leave::HandOver(si));
        // `parse`'s count: the state is visited; too many is a timeout.
        self.b.switch_to_block(run);
        let n = self.b.use_var(v.visited);
        let n = self.b.ins().iadd_imm_u(n, 1);
        self.b.def_var(v.visited, n);
        let over = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, n, MAX_STATES as i64);
        let timeout = self.b.create_block();
        self.b.ins().brif(over, timeout, &[], body, &[]);
        self.b.switch_to_block(timeout);
        self.leave(v, Leave::Error(p.errors.parser_timeout));
        true
    }

    /// The state's operations; false at the first without an inline form.
    /// `reach`: the bytes from the state's start its extractions read.
    fn state_ops(&mut self, st: &crate::ir::ParseState, reach: &mut usize, v: &P) -> bool {
        let p = self.p;
        let none = Args::Const(&[], ArgSel::EMPTY);
        let mut at = 0usize;
        for op in &st.ops {
            match op {
                ParserOp::Extract(h) => {
                    let hd = &p.headers[*h];
                    let Some(fields) = hd.codec.narrow_fields() else { return false };
                    if hd.union_of.is_some() {
                        return false;
                    }
                    *reach = (*reach).max(at + hd.codec.reach());
                    let pos = self.b.use_var(v.pos);
                    let base = self.b.ins().iadd(v.data, pos);
                    // `Phv::extract`: the fields, their chunks marked, the
                    // header valid.
                    for (i, (off, shift, mask)) in fields.enumerate() {
                        let w = self.b.ins().load(I64, unaligned(), base, (at + off) as i32);
                        let w = self.b.ins().bswap(w);
                        let w = self.b.ins().ushr_imm_u(w, shift as i64);
                        let w = self.b.ins().band_imm_u(w, mask as i64);
                        self.put_slot(hd.first_slot + i, V::N(w));
                    }
                    if hd.nfields > 0 {
                        let one = self.b.ins().iconst(I8, 1);
                        for c in hd.first_slot >> CHUNK_SHIFT..=(hd.first_slot + hd.nfields - 1) >> CHUNK_SHIFT {
                            self.b.ins().store(flags(), one, self.dirty, c as i32);
                        }
                    }
                    self.set_valid_bit(*h, true);
                    let pos = self.b.ins().iadd_imm_u(pos, hd.nbytes as i64);
                    self.b.def_var(v.pos, pos);
                    at += hd.nbytes;
                }
                ParserOp::Set { dst: crate::ir::LValue::Slot(d), src: SetSrc::Expr(e) } if !p.slots[*d].saturating => {
                    // `Phv::set` of the value, as an assignment inline.
                    let Some(x) = self.data(e, none) else { return false };
                    let x = self.and_const(x, p.slots[*d].mask);
                    self.store(*d, x);
                }
                ParserOp::Prim(prim) => {
                    if !self.prim(prim, none) {
                        return false;
                    }
                }
                _ => return false,
            }
        }
        true
    }

    /// Ends the state's block with its transition: to the default next
    /// state, or the first case whose (masked) values the key fields
    /// match. False if the select has no inline form.
    fn select(&mut self, st: &crate::ir::ParseState, blocks: &mut [Option<Block>], todo: &mut Vec<usize>, v: &P) -> bool {
        if st.key.is_empty() {
            let next = self.state_block(st.default_next, blocks, todo, v);
            self.b.ins().jump(next, &[]);
            return true;
        }
        let mut keys = Vec::new();
        for k in &st.key {
            let TransKey::Slot(s) = *k else { return false };
            keys.push(self.raw_field(s));
        }
        let mut cases = Vec::new();
        for c in &st.cases {
            let TransCase::Value { values, masks, next } = c else { return false };
            cases.push((values, masks, *next));
        }
        for (values, masks, next) in cases {
            // `parse`'s comparison: the pairs of case value and key field.
            let mut hit = self.b.ins().iconst(I8, 1);
            for (i, (&val, &key)) in values.iter().zip(&keys).enumerate() {
                let m = masks.as_ref().map_or(u128::MAX, |m| m[i]);
                let want = val & m;
                let is = match key {
                    // A narrow field never equals a wider value.
                    V::N(_) if want >> 64 != 0 => self.b.ins().iconst(I8, 0),
                    V::N(k) => {
                        let V::N(k) = self.and_const(V::N(k), m) else { unreachable!("a narrow value stays narrow") };
                        self.b.ins().icmp_imm_u(IntCC::Equal, k, want as u64 as i64)
                    }
                    V::W(_) => {
                        let k = self.and_const(key, m);
                        let k = self.wide(k);
                        let w = self.konst(want);
                        let w = self.wide(w);
                        self.b.ins().icmp(IntCC::Equal, k, w)
                    }
                };
                hit = self.b.ins().band(hit, is);
            }
            let target = self.state_block(next, blocks, todo, v);
            let other = self.b.create_block();
            self.b.ins().brif(hit, target, &[], other, &[]);
            self.b.switch_to_block(other);
        }
        let next = self.state_block(st.default_next, blocks, todo, v);
        self.b.ins().jump(next, &[]);
        true
    }
}
