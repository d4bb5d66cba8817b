//! Lowering of one pipeline's control graph to Cranelift IR: a block per
//! node, conditions and the common primitives as inline code over the PHV
//! slots, and a call to a helper (helpers.rs) for the table lookups and
//! for anything without an inline form here. The inline forms follow
//! `Ctx::eval`, `Ctx::eval_bool` and `actions::run` exactly; whatever they
//! do not cover keeps the fast path's semantics by calling it.
//!
//! Values are i128 as in the interpreter, except where a value is known
//! to lie in [0, 2^64) — fields of up to 64 bits, validity bits, masks
//! that narrow — which are carried in one 64-bit register: on those
//! values i64 arithmetic and unsigned compares give the i128 results.

use super::{
    ArgSel, Jit, CELLS_ADDR, CELLS_LEN, CELLS_STRIDE, ENV_ARGS, ENV_COUNTERS, ENV_DIRTY, ENV_EXIT, ENV_F,
    ENV_NARGS, ENV_PKT, ENV_REGS, ENV_VALID, PKT_INGRESS_LENGTH, PKT_LEN_REG,
};
use crate::bits::mask;
use crate::ir::{BinOp, Expr, HdrRef, KeySrc, LValue, NextMode, Node, Prim, Program};
use crate::phv::{fit, CHUNK_SHIFT};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::AtomicRmwOp;
use cranelift_codegen::isa::TargetFrontendConfig;
use cranelift_codegen::ir::types::{I128, I32, I64, I8};
use cranelift_codegen::ir::{Block, InstBuilder, MemFlagsData, SigRef, Value};
use cranelift_frontend::FunctionBuilder;
use std::collections::HashMap;

mod deparse;
mod parse;
pub(crate) use parse::ParseOut;

/// Addresses and signatures of the helpers.
pub(super) struct Helpers {
    pub table: (usize, SigRef),
    pub table_key: (usize, SigRef),
    pub prim: (usize, SigRef),
    pub action: (usize, SigRef),
    pub cond: (usize, SigRef),
    pub checksum: (usize, SigRef),
}

/// A function being built and what lowering into it needs: the program,
/// the helpers' addresses, `mark_to_drop`'s port, and the `Jit` that
/// keeps constant action data and counts.
pub(super) struct Function<'a, 'f> {
    pub p: &'a Program,
    pub b: FunctionBuilder<'f>,
    pub h: Helpers,
    pub drop_port: u32,
    pub jit: &'a mut Jit,
}

/// Inside the block where a cell exists: the cell's address, and where
/// both paths meet again.
struct InRange {
    addr: Value,
    done: Block,
}

/// A value: `N` in an i64 holding a value known to be in [0, 2^64), `W`
/// an i128.
#[derive(Clone, Copy)]
enum V {
    N(Value),
    W(Value),
}

/// The action data of an action being lowered: known at compile time
/// (direct calls and keyless tables with a const default; `sel` names
/// them for the helpers), or the looked-up entry's (`Dyn`: `Env::args`
/// and `Env::nargs`).
#[derive(Clone, Copy)]
enum Args<'a> {
    Const(&'a [u128], u64),
    Dyn(Value, Value),
}

pub(super) struct Lower<'a, 'f> {
    p: &'a Program,
    b: FunctionBuilder<'f>,
    h: Helpers,
    drop_port: u32,
    env: Value,
    f: Value,
    valid: Value,
    dirty: Value,
    exit: Value,
    blocks: HashMap<Node, Block>,
    todo: Vec<Node>,
    ret: Block,
    /// Where the action data known at compile time and the counts go.
    jit: &'a mut Jit,
}

/// The frame and the deparser's output: unaligned, and in bounds (the
/// parser checks the room its loads reach; the deparser's caller makes
/// the room).
fn unaligned() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

fn flags() -> MemFlagsData {
    // The pointers are the PHV's, the Env's and the dirty flags', all
    // valid and aligned for the run.
    MemFlagsData::trusted()
}

impl<'a, 'f> Lower<'a, 'f> {
    /// Starts `b`'s function, whose first parameter is the `Env` pointer:
    /// its entry block, with the PHV's pointers loaded; returns the entry
    /// block's parameters.
    fn begin(f: Function<'a, 'f>) -> (Self, Vec<Value>) {
        let Function { p, mut b, h, drop_port, jit } = f;
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let params = b.block_params(entry).to_vec();
        let env = params[0];
        let f = b.ins().load(I64, flags(), env, ENV_F);
        let valid = b.ins().load(I64, flags(), env, ENV_VALID);
        let dirty = b.ins().load(I64, flags(), env, ENV_DIRTY);
        let exit = b.ins().load(I64, flags(), env, ENV_EXIT);
        let ret = b.create_block();
        let l = Lower { p, b, h, drop_port, env, f, valid, dirty, exit, blocks: HashMap::new(), todo: Vec::new(), ret, jit };
        (l, params)
    }

    /// Ends the function: `ret` returns.
    fn finish(mut self, target: TargetFrontendConfig) {
        self.b.switch_to_block(self.ret);
        self.b.ins().return_(&[]);
        self.b.seal_all_blocks();
        self.b.finalize(target);
    }

    /// Lowers the pipeline starting at `start` into the function, whose
    /// one parameter is the `Env` pointer.
    pub fn pipeline(f: Function<'a, 'f>, start: Option<Node>, target: TargetFrontendConfig) {
        let (mut l, _) = Self::begin(f);
        // The interpreter checks `exit` before every node, the first too.
        let first = l.node_block(start);
        l.exit_check(first);
        while let Some(n) = l.todo.pop() {
            let blk = l.blocks[&n];
            l.b.switch_to_block(blk);
            l.node(n);
        }
        l.finish(target);
    }

    fn node_block(&mut self, n: Option<Node>) -> Block {
        let Some(n) = n else { return self.ret };
        if let Some(&b) = self.blocks.get(&n) {
            return b;
        }
        let b = self.b.create_block();
        self.blocks.insert(n, b);
        self.todo.push(n);
        b
    }

    /// Ends the current block: to `ret` if the packet exited, else `next`.
    fn exit_check(&mut self, next: Block) {
        let e = self.b.ins().load(I8, flags(), self.exit, 0);
        self.b.ins().brif(e, self.ret, &[], next, &[]);
    }

    /// Ends the current block after an action: checks `exit` if the
    /// action may have set it.
    fn after_action(&mut self, may_exit: bool, next: Block) {
        if may_exit {
            self.exit_check(next);
        } else {
            self.b.ins().jump(next, &[]);
        }
    }

    fn call(&mut self, (addr, sig): (usize, SigRef), args: &[Value]) -> Option<Value> {
        let callee = self.b.ins().iconst(I64, addr as i64);
        let inst = self.b.ins().call_indirect(sig, callee, args);
        self.b.inst_results(inst).first().copied()
    }

    fn node(&mut self, n: Node) {
        let p = self.p;
        match n {
            Node::Cond(c) => {
                let cond = &p.conds[c];
                let v = match self.cond(&cond.expr, Args::Const(&[], ArgSel::EMPTY)) {
                    Some(v) => {
                        self.jit.stats.native_conds += 1;
                        v
                    }
                    None => {
                        self.jit.stats.helper_conds += 1;
                        let c = self.b.ins().iconst(I64, c as i64);
                        let env = self.env;
                        self.call(self.h.cond, &[env, c]).expect("cond returns a value")
                    }
                };
                let (t, f) = (self.node_block(cond.t), self.node_block(cond.f));
                self.b.ins().brif(v, t, &[], f, &[]);
            }
            Node::Call(c) => {
                let call = &p.calls[c];
                let may_exit = self.action(call.action, Args::Const(&[], ArgSel::EMPTY));
                let next = self.node_block(call.next);
                self.after_action(may_exit, next);
            }
            Node::Table(t) => {
                let def = &p.table_defs[t];
                if let Some((a, args)) = &def.fixed {
                    let sel = self.jit.consts.len() as u64;
                    self.jit.consts.push(args.clone().into_boxed_slice());
                    let may_exit = self.action(*a, Args::Const(args, sel));
                    let next = self.node_block(def.fixed_next);
                    self.after_action(may_exit, next);
                    return;
                }
                self.table(t);
            }
        }
    }

    /// A table with a lookup: the helper finds the entry, then the code
    /// branches on the action it names to that action's inline body.
    fn table(&mut self, t: usize) {
        let p = self.p;
        let def = &p.table_defs[t];
        let env = self.env;
        let tv = self.b.ins().iconst(I64, t as i64);
        let r = if def.keys.len() <= 1 {
            // The key read here: the helper goes straight to the lookup.
            let (lo, hi) = match def.keys.first() {
                Some(k) => {
                    let v = match k.src {
                        KeySrc::Slot(s) => self.raw_field(s),
                        KeySrc::Valid(h) => {
                            let b = self.valid_bit(h);
                            self.bool_to_data(b)
                        }
                    };
                    let v = self.and_const(v, k.mask.unwrap_or(u128::MAX));
                    self.halves(v)
                }
                None => {
                    let z = self.b.ins().iconst(I64, 0);
                    (z, z)
                }
            };
            let n = self.b.ins().iconst(I64, def.keys.len() as i64);
            self.call(self.h.table_key, &[env, tv, n, lo, hi])
        } else {
            self.call(self.h.table, &[env, tv])
        };
        let r = r.expect("table returns a value");
        let act = self.b.ins().band_imm_u(r, u32::MAX as i64);
        let hit = self.b.ins().ushr_imm_u(r, 32);
        let dyn_args = self.b.ins().load(I64, flags(), env, ENV_ARGS);
        let dyn_n = self.b.ins().load(I64, flags(), env, ENV_NARGS);
        let mut cands: Vec<usize> = p.table_infos[t].action_ids.iter().map(|a| a.0).collect();
        if let NextMode::ByAction(m) = &def.next {
            cands.extend(m.iter().map(|(a, _)| *a));
        }
        cands.sort_unstable();
        cands.dedup();
        let mut bodies = Vec::new();
        for &a in &cands {
            let body = self.b.create_block();
            let other = self.b.create_block();
            let is = self.b.ins().icmp_imm_u(IntCC::Equal, act, a as i64);
            self.b.ins().brif(is, body, &[], other, &[]);
            self.b.switch_to_block(other);
            bodies.push((a, body));
        }
        let none = self.b.create_block();
        let unknown = self.b.create_block();
        let is_none = self.b.ins().icmp_imm_u(IntCC::Equal, act, u32::MAX as i64);
        self.b.ins().brif(is_none, none, &[], unknown, &[]);

        for (a, body) in bodies {
            self.b.switch_to_block(body);
            let may_exit = self.action(a, Args::Dyn(dyn_args, dyn_n));
            let next = match &def.next {
                NextMode::HitMiss { .. } => None,
                NextMode::ByAction(m) => Some(m.iter().find(|(x, _)| *x == a).and_then(|(_, n)| *n)),
            };
            self.branch_next(t, hit, may_exit, next);
        }
        // No action ran: HitMiss goes by the hit flag, ByAction to the
        // base default next node (TableDef::next_node).
        self.b.switch_to_block(none);
        self.branch_next(t, hit, false, Some(def.base_default_next));
        // An action not in the table's list (not reachable through
        // P4Runtime, which checks entries against the list): the helper
        // runs it; ByAction finds no next node for it and ends the pass.
        self.b.switch_to_block(unknown);
        let sel = self.b.ins().iconst(I64, ArgSel::DYNAMIC as i64);
        self.call(self.h.action, &[env, act, sel]);
        self.branch_next(t, hit, true, Some(None));
    }

    /// Ends a table's action block: to `next` (ByAction, resolved), or by
    /// the hit flag (HitMiss, `next` None).
    fn branch_next(&mut self, t: usize, hit: Value, may_exit: bool, next: Option<Option<Node>>) {
        match (next, &self.p.table_defs[t].next) {
            (_, NextMode::HitMiss { hit: h, miss }) => {
                let (hb, mb) = (self.node_block(*h), self.node_block(*miss));
                let branch = if may_exit { self.b.create_block() } else { self.b.current_block().expect("in a block") };
                if may_exit {
                    self.exit_check(branch);
                    self.b.switch_to_block(branch);
                }
                self.b.ins().brif(hit, hb, &[], mb, &[]);
            }
            (Some(n), NextMode::ByAction(_)) => {
                let nb = self.node_block(n);
                self.after_action(may_exit, nb);
            }
            (None, NextMode::ByAction(_)) => unreachable!("ByAction always resolves its next node"),
        }
    }

    fn sel(args: Args) -> u64 {
        match args {
            Args::Const(_, s) => s,
            Args::Dyn(..) => ArgSel::DYNAMIC,
        }
    }

    /// Lowers action `a`; says whether it may have set `exit`.
    fn action(&mut self, a: usize, args: Args) -> bool {
        let prims = &self.p.action_defs[a].prims;
        let env = self.env;
        let sel = Self::sel(args);
        if prims.iter().any(|x| matches!(x, Prim::Jump(_) | Prim::JumpIfZero(..))) {
            self.jit.stats.helper_actions += 1;
            let (av, sv) = (self.b.ins().iconst(I64, a as i64), self.b.ins().iconst(I64, sel as i64));
            self.call(self.h.action, &[env, av, sv]);
            return true;
        }
        let mut may_exit = false;
        for (i, prim) in prims.iter().enumerate() {
            may_exit |= matches!(prim, Prim::Exit);
            if self.prim(prim, args) {
                self.jit.stats.native_prims += 1;
            } else {
                self.jit.stats.helper_prims += 1;
                let av = self.b.ins().iconst(I64, a as i64);
                let iv = self.b.ins().iconst(I64, i as i64);
                let sv = self.b.ins().iconst(I64, sel as i64);
                self.call(self.h.prim, &[env, av, iv, sv]);
            }
        }
        may_exit
    }

    /// Emits `prim` inline if it has an inline form; false if not (nothing
    /// with an effect is emitted then).
    fn prim(&mut self, prim: &Prim, args: Args) -> bool {
        let p = self.p;
        match prim {
            Prim::SetConst { dst, value } => {
                let v = self.konst(*value);
                self.store(*dst, v);
            }
            Prim::SetArg { dst, arg, mask } => {
                let v = self.arg(*arg, args, *mask);
                self.store(*dst, v);
            }
            Prim::CopyField { dst, src, mask } => {
                let v = self.field_masked(*src, *mask);
                self.store(*dst, v);
            }
            Prim::Assign(LValue::Slot(d), e) if !p.slots[*d].saturating => {
                let Some(v) = self.data(e, args) else { return false };
                let v = self.and_const(v, p.slots[*d].mask);
                self.store(*d, v);
            }
            Prim::Count { counter, idx } => {
                // `State::counter_inc`: a cell in range gets the packet's
                // ingress length and one packet.
                let Some(i) = self.data(idx, args) else { return false };
                let cell = self.cell_in_range(ENV_COUNTERS, *counter, i, 16);
                let pkt = self.b.ins().load(I64, flags(), self.env, ENV_PKT);
                let bytes = self.b.ins().load(I32, flags(), pkt, PKT_INGRESS_LENGTH);
                let bytes = self.b.ins().uextend(I64, bytes);
                let one = self.b.ins().iconst(I64, 1);
                let packets = self.b.ins().iadd_imm_u(cell.addr, 8);
                self.b.ins().atomic_rmw(I64, flags(), AtomicRmwOp::Add, cell.addr, bytes);
                self.b.ins().atomic_rmw(I64, flags(), AtomicRmwOp::Add, packets, one);
                self.end_if(cell.done);
            }
            Prim::RegisterRead { dst: LValue::Slot(d), reg, idx }
                if !p.slots[*d].saturating && p.register_infos[*reg].bitwidth <= 64 =>
            {
                // `State::reg_get` and `Phv::set`: an index out of range
                // leaves the destination as it was.
                let Some(i) = self.data(idx, args) else { return false };
                let cell = self.cell_in_range(ENV_REGS, *reg, i, 8);
                let v = self.b.ins().load(I64, flags(), cell.addr, 0);
                let v = self.and_const(V::N(v), p.slots[*d].mask);
                self.store(*d, v);
                self.end_if(cell.done);
            }
            Prim::RegisterWrite { reg, idx, val } if p.register_infos[*reg].bitwidth <= 64 => {
                // `State::reg_set`: the value cut to the register's width.
                let Some(i) = self.data(idx, args) else { return false };
                let Some(v) = self.data(val, args) else { return false };
                let v = self.and_const(v, mask(p.register_infos[*reg].bitwidth));
                let v = self.low(v);
                let cell = self.cell_in_range(ENV_REGS, *reg, i, 8);
                self.b.ins().store(flags(), v, cell.addr, 0);
                self.end_if(cell.done);
            }
            Prim::AddHeader(HdrRef::Fixed(h)) if p.headers[*h].union_of.is_none() => {
                // `actions::run`: a header not yet valid is zeroed, made
                // valid and counted into the length register.
                let hd = &p.headers[*h];
                let (first, n, nbytes) = (hd.first_slot, hd.nfields, hd.nbytes as i64);
                let done = self.if_valid_is(*h, false);
                let zero = self.b.ins().iconst(I64, 0);
                for s in first..first + n {
                    self.b.ins().store(flags(), zero, self.f, (s * 16) as i32);
                    self.b.ins().store(flags(), zero, self.f, (s * 16 + 8) as i32);
                }
                self.set_valid_bit(*h, true);
                self.add_pkt_len(nbytes);
                self.end_if(done);
            }
            Prim::AddHeaderFast(HdrRef::Fixed(h)) if p.headers[*h].union_of.is_none() => {
                self.set_valid_bit(*h, true);
            }
            Prim::RemoveHeader(HdrRef::Fixed(h)) => {
                // A valid header leaves the length register and is made
                // invalid; an invalid one stays as it is.
                let done = self.if_valid_is(*h, true);
                self.set_valid_bit(*h, false);
                self.add_pkt_len(-(p.headers[*h].nbytes as i64));
                self.end_if(done);
            }
            Prim::MarkToDrop { egress_spec, mcast_grp } => {
                // `Phv::set` of constants: fitted here, once.
                let stores = [(*egress_spec, self.drop_port as i128), (*mcast_grp, 0)];
                if stores.iter().any(|(s, _)| s.is_some_and(|s| p.slots[s].saturating)) {
                    return false;
                }
                for (s, v) in stores {
                    if let Some(s) = s {
                        let v = self.konst(fit(&p.slots[s], v));
                        self.store(s, v);
                    }
                }
            }
            Prim::Exit => {
                let one = self.b.ins().iconst(I8, 1);
                self.b.ins().store(flags(), one, self.exit, 0);
            }
            Prim::NoOp => {}
            _ => return false,
        }
        true
    }

    // ---- counter and register cells

    /// Branches into a new block where cell `i` of array `a` exists, `a`
    /// indexing the state's table of arrays at Env offset `table`
    /// (`stride` bytes a cell); the lengths are the state's, read at run
    /// time. `end_if(cell.done)` joins the paths again.
    fn cell_in_range(&mut self, table: i32, a: usize, i: V, stride: i64) -> InRange {
        let base = self.b.ins().load(I64, flags(), self.env, table);
        let entry = (a as i64 * CELLS_STRIDE) as i32;
        let len = self.b.ins().load(I64, flags(), base, entry + CELLS_LEN);
        let start = self.b.ins().load(I64, flags(), base, entry + CELLS_ADDR);
        // An index as the interpreter's i128: in range if in [0, 2^64)
        // and below the length.
        let (lo, hi) = self.halves(i);
        let below = self.b.ins().icmp(IntCC::UnsignedLessThan, lo, len);
        let ok = match i {
            V::N(_) => below,
            V::W(_) => {
                let narrow = self.b.ins().icmp_imm_u(IntCC::Equal, hi, 0);
                self.b.ins().band(below, narrow)
            }
        };
        let body = self.b.create_block();
        let done = self.b.create_block();
        self.b.ins().brif(ok, body, &[], done, &[]);
        self.b.switch_to_block(body);
        let off = self.b.ins().imul_imm_u(lo, stride);
        let addr = self.b.ins().iadd(start, off);
        InRange { addr, done }
    }

    /// Branches into a new block where header `h`'s validity is `is`;
    /// returns where the paths meet again (for `end_if`).
    fn if_valid_is(&mut self, h: usize, is: bool) -> Block {
        let v = self.valid_bit(h);
        let body = self.b.create_block();
        let done = self.b.create_block();
        if is {
            self.b.ins().brif(v, body, &[], done, &[]);
        } else {
            self.b.ins().brif(v, done, &[], body, &[]);
        }
        self.b.switch_to_block(body);
        done
    }

    /// Ends a conditional block: on to `done`, where code goes on.
    fn end_if(&mut self, done: Block) {
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
    }

    fn set_valid_bit(&mut self, h: usize, v: bool) {
        let b = self.b.ins().iconst(I8, v as i64);
        self.b.ins().store(flags(), b, self.valid, h as i32);
    }

    /// Adds `n` (two's complement) to the packet's length register.
    fn add_pkt_len(&mut self, n: i64) {
        let pkt = self.b.ins().load(I64, flags(), self.env, ENV_PKT);
        let len = self.b.ins().load(I32, flags(), pkt, PKT_LEN_REG);
        let len = self.b.ins().iadd_imm_s(len, n);
        self.b.ins().store(flags(), len, pkt, PKT_LEN_REG);
    }

    // ---- values

    fn konst(&mut self, v: u128) -> V {
        if v >> 64 == 0 {
            V::N(self.b.ins().iconst(I64, v as u64 as i64))
        } else {
            let lo = self.b.ins().iconst(I64, v as u64 as i64);
            let hi = self.b.ins().iconst(I64, (v >> 64) as u64 as i64);
            V::W(self.b.ins().iconcat(lo, hi))
        }
    }

    fn wide(&mut self, v: V) -> Value {
        match v {
            V::N(x) => self.b.ins().uextend(I128, x),
            V::W(x) => x,
        }
    }

    fn low(&mut self, v: V) -> Value {
        match v {
            V::N(x) => x,
            V::W(x) => self.b.ins().ireduce(I64, x),
        }
    }

    fn halves(&mut self, v: V) -> (Value, Value) {
        match v {
            V::N(x) => (x, self.b.ins().iconst(I64, 0)),
            V::W(x) => {
                let (lo, hi) = self.b.ins().isplit(x);
                (lo, hi)
            }
        }
    }

    fn and_const(&mut self, v: V, m: u128) -> V {
        if m == u128::MAX {
            return v;
        }
        if m >> 64 == 0 {
            let lo = self.low(v);
            if m == u64::MAX as u128 {
                return V::N(lo);
            }
            return V::N(self.b.ins().band_imm_u(lo, m as u64 as i64));
        }
        let w = self.wide(v);
        let k = self.konst(m);
        let k = self.wide(k);
        V::W(self.b.ins().band(w, k))
    }

    /// Slot `s` as stored (the raw bits; for unsigned fields, the value).
    fn raw_field(&mut self, s: usize) -> V {
        let off = (s * 16) as i32;
        if self.p.slots[s].width <= 64 {
            V::N(self.b.ins().load(I64, flags(), self.f, off))
        } else {
            V::W(self.b.ins().load(I128, flags(), self.f, off))
        }
    }

    fn field_masked(&mut self, s: usize, mask: u128) -> V {
        if mask >> 64 == 0 {
            // The low half holds every bit the mask keeps.
            let x = self.b.ins().load(I64, flags(), self.f, (s * 16) as i32);
            return self.and_const(V::N(x), mask);
        }
        let v = self.raw_field(s);
        self.and_const(v, mask)
    }

    /// Action argument `i` (absent: 0), masked.
    fn arg(&mut self, i: usize, args: Args, mask: u128) -> V {
        match args {
            Args::Const(a, _) => self.konst(a.get(i).copied().unwrap_or(0) & mask),
            Args::Dyn(ptr, n) => {
                // The buffer has room for this index (Env::args, and
                // max_args, raised here); what lies past the entry's own
                // arguments is replaced by 0.
                self.jit.max_args = self.jit.max_args.max(i + 1);
                let off = (i * 16) as i32;
                let present = self.b.ins().icmp_imm_u(IntCC::UnsignedGreaterThan, n, i as i64);
                if mask >> 64 == 0 {
                    let x = self.b.ins().load(I64, flags(), ptr, off);
                    let V::N(x) = self.and_const(V::N(x), mask) else { unreachable!("a narrow mask keeps a narrow value") };
                    let zero = self.b.ins().iconst(I64, 0);
                    V::N(self.b.ins().select(present, x, zero))
                } else {
                    let x = self.b.ins().load(I128, flags(), ptr, off);
                    let x = self.and_const(V::W(x), mask);
                    let x = self.wide(x);
                    let zero = self.b.ins().iconst(I64, 0);
                    let zero = self.b.ins().uextend(I128, zero);
                    V::W(self.b.ins().select(present, x, zero))
                }
            }
        }
    }

    fn store(&mut self, s: usize, v: V) {
        self.put_slot(s, v);
        // Phv::put's dirty mark.
        let one = self.b.ins().iconst(I8, 1);
        self.b.ins().store(flags(), one, self.dirty, (s >> CHUNK_SHIFT) as i32);
    }

    /// Slot `s` set to `v` (its upper half zero if the slot is narrow),
    /// without the dirty mark.
    fn put_slot(&mut self, s: usize, v: V) {
        let off = (s * 16) as i32;
        if self.p.slots[s].width <= 64 {
            let lo = self.low(v);
            let zero = self.b.ins().iconst(I64, 0);
            self.b.ins().store(flags(), lo, self.f, off);
            self.b.ins().store(flags(), zero, self.f, off + 8);
        } else {
            let w = self.wide(v);
            self.b.ins().store(flags(), w, self.f, off);
        }
    }

    fn bool_to_data(&mut self, b: Value) -> V {
        V::N(self.b.ins().uextend(I64, b))
    }

    fn valid_bit(&mut self, h: usize) -> Value {
        self.b.ins().load(I8, flags(), self.valid, h as i32)
    }

    /// `e` as data (`Ctx::eval`), or None if it has no inline form.
    fn data(&mut self, e: &Expr, args: Args) -> Option<V> {
        use BinOp::*;
        let p = self.p;
        Some(match e {
            Expr::Const(v) => {
                let v = *v as u128;
                self.konst(v)
            }
            Expr::Field(s) => {
                let i = &p.slots[*s];
                if i.signed && i.width < 128 && i.width > 0 {
                    return None;
                }
                self.raw_field(*s)
            }
            Expr::Local(i) => self.arg(*i, args, u128::MAX),
            Expr::ValidHdr(h) => {
                let b = self.valid_bit(*h);
                self.bool_to_data(b)
            }
            Expr::B2D(x) => {
                let b = self.cond(x, args)?;
                self.bool_to_data(b)
            }
            Expr::BitNeg(x) => {
                let v = self.data(x, args)?;
                let w = self.wide(v);
                V::W(self.b.ins().bnot(w))
            }
            Expr::Ternary(c, a, b) => {
                let c = self.cond(c, args)?;
                let (a, b) = (self.data(a, args)?, self.data(b, args)?);
                match (a, b) {
                    (V::N(a), V::N(b)) => V::N(self.b.ins().select(c, a, b)),
                    (a, b) => {
                        let (a, b) = (self.wide(a), self.wide(b));
                        V::W(self.b.ins().select(c, a, b))
                    }
                }
            }
            Expr::Bin(op @ (Add | Sub | Mul | And | Or | Xor), l, r) => {
                let (a, b) = (self.data(l, args)?, self.data(r, args)?);
                match (op, a, b) {
                    (And, V::N(a), V::N(b)) => V::N(self.b.ins().band(a, b)),
                    // One operand in [0, 2^64) keeps the result there.
                    (And, V::N(n), w) | (And, w, V::N(n)) => {
                        let w = self.low(w);
                        V::N(self.b.ins().band(n, w))
                    }
                    (Or, V::N(a), V::N(b)) => V::N(self.b.ins().bor(a, b)),
                    (Xor, V::N(a), V::N(b)) => V::N(self.b.ins().bxor(a, b)),
                    _ => {
                        let (a, b) = (self.wide(a), self.wide(b));
                        V::W(match op {
                            Add => self.b.ins().iadd(a, b),
                            Sub => self.b.ins().isub(a, b),
                            Mul => self.b.ins().imul(a, b),
                            And => self.b.ins().band(a, b),
                            Or => self.b.ins().bor(a, b),
                            _ => self.b.ins().bxor(a, b),
                        })
                    }
                }
            }
            // `Ctx::eval`'s shifts by a constant in [0, 128); other
            // amounts keep the fast path.
            Expr::Bin(op @ (Shl | Shr | ShrU), l, r) => {
                let Expr::Const(c) = **r else { return None };
                if !(0..128).contains(&c) {
                    return None;
                }
                let a = self.data(l, args)?;
                let c = c as i64;
                match (op, a) {
                    (_, a) if c == 0 => a,
                    // A value in [0, 2^64) shifted right stays there, and
                    // is its own sign-extension.
                    (Shr | ShrU, V::N(_)) if c >= 64 => V::N(self.b.ins().iconst(I64, 0)),
                    (Shr | ShrU, V::N(x)) => V::N(self.b.ins().ushr_imm_u(x, c)),
                    (ShrU, V::W(x)) => {
                        let k = self.b.ins().iconst(I64, c);
                        V::W(self.b.ins().ushr(x, k))
                    }
                    (Shr, V::W(x)) => {
                        let k = self.b.ins().iconst(I64, c);
                        V::W(self.b.ins().sshr(x, k))
                    }
                    (_, a) => {
                        let w = self.wide(a);
                        let k = self.b.ins().iconst(I64, c);
                        V::W(self.b.ins().ishl(w, k))
                    }
                }
            }
            Expr::Bool(_)
            | Expr::Not(_)
            | Expr::D2B(_)
            | Expr::FieldNonZero(_)
            | Expr::Bin(Eq | Ne | Lt | Le | Gt | Ge | LtU | LeU | GtU | GeU | LAnd | LOr | BoolEq | BoolNe, ..) => {
                // Conditions used as data.
                let b = self.cond(e, args)?;
                self.bool_to_data(b)
            }
            _ => return None,
        })
    }

    /// `e` as a condition (`Ctx::eval_bool`): an i8 of 0 or 1, or None if
    /// it has no inline form.
    fn cond(&mut self, e: &Expr, args: Args) -> Option<Value> {
        use BinOp::*;
        Some(match e {
            Expr::Bool(b) => self.b.ins().iconst(I8, *b as i64),
            Expr::ValidHdr(h) => self.valid_bit(*h),
            Expr::Valid(h) => match &**h {
                HdrRef::Fixed(h) => self.valid_bit(*h),
                _ => return None,
            },
            Expr::FieldNonZero(s) => {
                let v = self.raw_field(*s);
                self.nonzero(v)
            }
            Expr::Not(x) => {
                let v = self.cond(x, args)?;
                self.b.ins().bxor_imm_u(v, 1)
            }
            Expr::D2B(x) => {
                let v = self.data(x, args)?;
                self.nonzero(v)
            }
            Expr::Bin(op @ (LAnd | LOr | BoolEq | BoolNe), l, r) => {
                // Both sides are pure here, so evaluating the right one
                // whatever the left gives changes nothing.
                let (a, b) = (self.cond(l, args)?, self.cond(r, args)?);
                match op {
                    LAnd => self.b.ins().band(a, b),
                    LOr => self.b.ins().bor(a, b),
                    BoolEq => self.b.ins().icmp(IntCC::Equal, a, b),
                    _ => self.b.ins().icmp(IntCC::NotEqual, a, b),
                }
            }
            Expr::Bin(op @ (Eq | Ne | Lt | Le | Gt | Ge | LtU | LeU | GtU | GeU), l, r) => {
                let (a, b) = (self.data(l, args)?, self.data(r, args)?);
                match (a, b) {
                    // Both in [0, 2^64): signed and unsigned orders agree.
                    (V::N(a), V::N(b)) => {
                        let cc = match op {
                            Eq => IntCC::Equal,
                            Ne => IntCC::NotEqual,
                            Lt | LtU => IntCC::UnsignedLessThan,
                            Le | LeU => IntCC::UnsignedLessThanOrEqual,
                            Gt | GtU => IntCC::UnsignedGreaterThan,
                            _ => IntCC::UnsignedGreaterThanOrEqual,
                        };
                        self.b.ins().icmp(cc, a, b)
                    }
                    (a, b) => {
                        let cc = match op {
                            Eq => IntCC::Equal,
                            Ne => IntCC::NotEqual,
                            Lt => IntCC::SignedLessThan,
                            Le => IntCC::SignedLessThanOrEqual,
                            Gt => IntCC::SignedGreaterThan,
                            Ge => IntCC::SignedGreaterThanOrEqual,
                            LtU => IntCC::UnsignedLessThan,
                            LeU => IntCC::UnsignedLessThanOrEqual,
                            GtU => IntCC::UnsignedGreaterThan,
                            _ => IntCC::UnsignedGreaterThanOrEqual,
                        };
                        let (a, b) = (self.wide(a), self.wide(b));
                        self.b.ins().icmp(cc, a, b)
                    }
                }
            }
            Expr::Ternary(c, a, b) => {
                let c = self.cond(c, args)?;
                let (a, b) = (self.cond(a, args)?, self.cond(b, args)?);
                self.b.ins().select(c, a, b)
            }
            Expr::HdrEq(..) | Expr::UnionEq(..) | Expr::ValidUnion(_) => return None,
            Expr::Bin(Add | Sub | Mul | And | Or | Xor, ..)
            | Expr::Const(_)
            | Expr::Field(_)
            | Expr::Local(_)
            | Expr::B2D(_)
            | Expr::BitNeg(_) => {
                let v = self.data(e, args)?;
                self.nonzero(v)
            }
            _ => return None,
        })
    }

    fn nonzero(&mut self, v: V) -> Value {
        match v {
            V::N(x) => self.b.ins().icmp_imm_u(IntCC::NotEqual, x, 0),
            V::W(x) => {
                let z = self.b.ins().iconst(I64, 0);
                let z = self.b.ins().uextend(I128, z);
                self.b.ins().icmp(IntCC::NotEqual, x, z)
            }
        }
    }
}
