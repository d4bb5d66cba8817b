//! Native code for the control blocks, the parser and the deparser. At
//! load, each pipeline's graph of
//! tables, conditionals and action calls is compiled with Cranelift into
//! one function: conditions and the common primitives inline over the PHV
//! slots, jumps where the interpreter looked up its next node, and calls
//! back into Rust (helpers.rs) for the table lookups and for anything the
//! code generator has no inline form for. p4c emits a keyless `tbl_*`
//! table per group of statements, so a pipeline is mostly such small
//! steps, and the interpreter spent more on walking between them than on
//! the steps themselves. The parser's states and the deparser (with its
//! checksum updates) are compiled the same way (lower/parse.rs,
//! lower/deparse.rs), handing what they have no inline form for to the
//! interpreter.
//!
//! It changes nothing in what a program does: the inline forms follow the
//! interpreter's semantics (lower.rs), the rest is the fast path's own
//! code, and tests/fuzz.rs checks the three paths (native, closures,
//! general interpreter) against one another on random programs' packets
//! and control-plane writes. A pipeline whose graph has a cycle (never
//! p4c's output) is left to the interpreter, which bounds its steps; so is
//! every pipeline if the host has no Cranelift backend.

mod helpers;
mod lower;

pub(crate) use helpers::Run;
pub(crate) use lower::ParseOut;

use crate::ir::{Node, Program};
use crate::actions::Exec;
use crate::packet::Pkt;
use crate::state::{RawCells, State};
use cranelift_codegen::ir::types::{I64, I8};
use cranelift_codegen::ir::{AbiParam, UserFuncName};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{default_libcall_names, Linkage, Module};
use std::collections::HashSet;

/// What a pipeline's native code is given: the packet's PHV and the
/// run its helpers need.
#[repr(C)]
pub(crate) struct Env {
    f: *mut u128,
    valid: *mut bool,
    dirty: *mut u8,
    exit: *mut bool,
    /// The last looked-up entry's action data and its length (set by the
    /// table helper). The buffer holds at least `Jit::max_args` values,
    /// initialised; those past `nargs` read as absent arguments (0).
    args: *const u128,
    nargs: u64,
    run: *mut std::ffi::c_void,
    /// The state's counter and narrow register arrays (`State::counter_table`,
    /// `State::reg_table`), for `count` and register reads and writes inline.
    counters: *const RawCells,
    regs: *const RawCells,
    /// The packet: its length register (header additions and removals
    /// move it) and length at ingress (what `count` adds) are read at
    /// their offsets; the checksum helper takes the packet from here.
    pkt: *mut Pkt,
}
impl Env {
    /// The Env of `pkt` (`args` and `run` for the helpers; null where no
    /// helper is called).
    fn for_packet(state: &State, pkt: &mut Pkt, args: *const u128, run: *mut std::ffi::c_void) -> Env {
        let (f, valid, dirty) = pkt.phv.raw_parts();
        Env {
            f,
            valid,
            dirty,
            exit: &mut pkt.exit,
            args,
            nargs: 0,
            run,
            counters: state.counter_table().as_ptr(),
            regs: state.reg_table().as_ptr(),
            pkt,
        }
    }
}

// Where the generated code finds each field (8 bytes each on a 64-bit host).
const ENV_F: i32 = std::mem::offset_of!(Env, f) as i32;
const ENV_VALID: i32 = std::mem::offset_of!(Env, valid) as i32;
const ENV_DIRTY: i32 = std::mem::offset_of!(Env, dirty) as i32;
const ENV_EXIT: i32 = std::mem::offset_of!(Env, exit) as i32;
const ENV_ARGS: i32 = std::mem::offset_of!(Env, args) as i32;
const ENV_NARGS: i32 = std::mem::offset_of!(Env, nargs) as i32;
const ENV_COUNTERS: i32 = std::mem::offset_of!(Env, counters) as i32;
const ENV_REGS: i32 = std::mem::offset_of!(Env, regs) as i32;
const ENV_PKT: i32 = std::mem::offset_of!(Env, pkt) as i32;
// Where the packet's u32 length fields are.
const PKT_LEN_REG: i32 = std::mem::offset_of!(Pkt, pkt_len_reg) as i32;
const PKT_INGRESS_LENGTH: i32 = std::mem::offset_of!(Pkt, ingress_length) as i32;
// A RawCells entry: its address, then its length.
const CELLS_STRIDE: i64 = std::mem::size_of::<RawCells>() as i64;
const CELLS_LEN: i32 = std::mem::offset_of!(RawCells, len) as i32;
const CELLS_ADDR: i32 = std::mem::offset_of!(RawCells, addr) as i32;

/// How a helper finds an action's data: an index into `Jit::consts`, or
/// the looked-up entry's.
struct ArgSel;
impl ArgSel {
    const EMPTY: u64 = 0;
    const DYNAMIC: u64 = u64::MAX;
}

/// How much of the program runs as native code (for tests and for
/// anyone asking why a program is slow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JitStats {
    /// Pipelines compiled (of ingress and egress).
    pub pipelines: usize,
    pub native_conds: usize,
    /// Conditions evaluated by the fast path's closures.
    pub helper_conds: usize,
    pub native_prims: usize,
    /// Primitives run by the fast path's closures.
    pub helper_prims: usize,
    /// Actions run whole by the fast path (actions with jumps).
    pub helper_actions: usize,
    /// Parser states that run as native code, of all the parser's.
    pub native_parse_states: usize,
    pub parse_states: usize,
    /// Whether the deparser runs as native code.
    pub native_deparser: bool,
}

type PipeFn = unsafe extern "C" fn(*mut Env);
/// The parser: Env, the frame's address and length, where it leaves off.
type ParseFn = unsafe extern "C" fn(*mut Env, *const u8, u64, *mut ParseOut);
/// The deparser: Env, where the headers go.
type DeparseFn = unsafe extern "C" fn(*mut Env, *mut u8);

/// The compiled pipelines of one program.
pub(crate) struct Jit {
    module: Option<JITModule>,
    /// Ingress, egress.
    fns: [Option<PipeFn>; 2],
    parser: Option<ParseFn>,
    deparser: Option<DeparseFn>,
    /// Action data known at compile time, by `ArgSel` index (0: none).
    consts: Vec<Box<[u128]>>,
    /// One past the highest argument index the code reads from looked-up
    /// action data (recorded as it is generated): the data's buffer holds
    /// that many values.
    max_args: usize,
    pub stats: JitStats,
}

// The module owns the code's memory and is only read after compilation;
// the code itself may run on any thread.
unsafe impl Send for Jit {}
unsafe impl Sync for Jit {}

impl Drop for Jit {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: the Jit goes with its functions; nothing calls them
            // after this.
            unsafe { m.free_memory() };
        }
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Pipe {
    Ingress = 0,
    Egress = 1,
}

impl Pipe {
    /// The pipeline's first node.
    pub fn start(self, p: &Program) -> Option<Node> {
        match self {
            Pipe::Ingress => p.ingress_start,
            Pipe::Egress => p.egress_start,
        }
    }
}

impl Jit {
    /// Compiles the program's pipelines (`drop_port`: what
    /// `mark_to_drop` writes to `egress_spec`); Err when the host has no
    /// backend or Cranelift rejects the code (the closures run then).
    pub fn build(p: &Program, drop_port: u32) -> Result<Jit, String> {
        let mut fb = settings::builder();
        for (k, v) in [("opt_level", "speed"), ("use_colocated_libcalls", "false"), ("is_pic", "false")] {
            fb.set(k, v).map_err(|e| e.to_string())?;
        }
        let isa = cranelift_native::builder()
            .map_err(|e| e.to_string())?
            .finish(settings::Flags::new(fb))
            .map_err(|e| e.to_string())?;
        if isa.pointer_bits() != 64 {
            // The code reads Env's pointers and u64s as 64-bit values.
            return Err(format!("a {}-bit host: native code needs 64-bit pointers", isa.pointer_bits()));
        }
        let module = JITModule::new(JITBuilder::with_isa(isa, default_libcall_names()));
        let mut jit = Jit { module: None, fns: [None, None], parser: None, deparser: None, consts: vec![Box::new([])], max_args: 0, stats: JitStats::default() };
        let mut gen = Gen { ctx: module.make_context(), fctx: FunctionBuilderContext::new(), module };
        let mut ids = [None, None];
        for pipe in [Pipe::Ingress, Pipe::Egress] {
            let (i, start) = (pipe as usize, pipe.start(p));
            if has_cycle(p, start) {
                continue;
            }
            ids[i] = Some(gen.define(["ingress", "egress"][i], &[I64], None, |b, h, target| {
                lower::Lower::pipeline(lower::Function { p, b, h, drop_port, jit: &mut jit }, start, target)
            })?);
            jit.stats.pipelines += 1;
        }
        let parser_id = gen.define("parser", &[I64, I64, I64, I64], None, |b, h, target| {
            jit.stats.native_parse_states = lower::Lower::parser(lower::Function { p, b, h, drop_port, jit: &mut jit }, target);
        })?;
        jit.stats.parse_states = p.parse_states.len();
        let deparser_id = match lower::Lower::can_deparse(p) {
            true => Some(gen.define("deparser", &[I64, I64], None, |b, h, target| {
                lower::Lower::deparser(lower::Function { p, b, h, drop_port, jit: &mut jit }, target)
            })?),
            false => None,
        };
        let mut module = gen.module;
        module.finalize_definitions().map_err(|e| e.to_string())?;
        if let Some(id) = deparser_id {
            let code = module.get_finalized_function(id);
            // SAFETY: the function was built with DeparseFn's signature.
            jit.deparser = Some(unsafe { std::mem::transmute::<*const u8, DeparseFn>(code) });
            jit.stats.native_deparser = true;
        }
        if jit.stats.native_parse_states > 0 {
            let code = module.get_finalized_function(parser_id);
            // SAFETY: the function was built with ParseFn's signature.
            jit.parser = Some(unsafe { std::mem::transmute::<*const u8, ParseFn>(code) });
        }
        for (i, id) in ids.iter().enumerate() {
            if let Some(id) = id {
                let code = module.get_finalized_function(*id);
                // SAFETY: the function was built with PipeFn's signature.
                jit.fns[i] = Some(unsafe { std::mem::transmute::<*const u8, PipeFn>(code) });
            }
        }
        jit.module = Some(module);
        Ok(jit)
    }

    /// Whether `pipe` runs as native code.
    #[inline(always)]
    pub fn has(&self, pipe: Pipe) -> bool {
        self.fns[pipe as usize].is_some()
    }

    fn const_args(&self, sel: usize) -> &[u128] {
        self.consts.get(sel).map_or(&[], |a| a)
    }

    /// Runs the parser's native states over `data` from the start state,
    /// into `pkt`; None if no state runs natively. What is left (a state
    /// without an inline form, and where) goes to `parser::parse`.
    pub fn parse(&self, state: &State, pkt: &mut Pkt, data: &[u8]) -> Option<ParseOut> {
        let f = self.parser?;
        let mut out = ParseOut::default();
        // SAFETY: the pointers are pkt's and state's, live and exclusively
        // ours for the call; the code reads `data` only within its length
        // (each state checks the room its loads need first).
        unsafe {
            let mut env = Env::for_packet(state, pkt, std::ptr::null(), std::ptr::null_mut());
            f(&mut env, data.as_ptr(), data.len() as u64, &mut out);
        }
        Some(out)
    }

    /// The deparser's update checksums on `pkt`, then its valid headers in
    /// the deparser's order at the start of `out`; false (and nothing
    /// done) without a native deparser.
    ///
    /// # Safety
    /// `out` has room for those headers (`Program::header_bytes` of the
    /// packet's valid headers) and `Program::deparse_slack` more: a
    /// header's last word is written whole.
    pub unsafe fn deparse(&self, x: &mut Exec, pkt: &mut Pkt, out: &mut [u8]) -> bool {
        let Some(f) = self.deparser else { return false };
        // SAFETY: the pointers are pkt's, x's and out's, live and
        // exclusively ours for the call (the checksum helper reaches the
        // packet through Env::pkt and the executor through Env::run only
        // while the native code waits for it); the code writes within the
        // room the caller vouches for.
        unsafe {
            let mut env = Env::for_packet(x.state, pkt, std::ptr::null(), x as *mut Exec as *mut std::ffi::c_void);
            f(&mut env, out.as_mut_ptr());
        }
        true
    }

    /// Runs pipeline `pipe` (see `has`) on `run.pkt`.
    pub fn run(&self, pipe: Pipe, run: &mut Run) {
        let Some(f) = self.fns[pipe as usize] else { return };
        // SAFETY: run.pkt is the packet being processed, exclusively ours
        // for the call; the pointers below stay valid through it (the PHV
        // never grows).
        unsafe {
            let (state, args) = (run.x.state, run.args.as_ptr());
            let pkt = &mut *run.pkt;
            let mut env = Env::for_packet(state, pkt, args, run as *mut Run as *mut std::ffi::c_void);
            f(&mut env);
        }
    }
}

/// A module being filled with functions, and the contexts that build them.
struct Gen {
    module: JITModule,
    ctx: cranelift_codegen::Context,
    fctx: FunctionBuilderContext,
}

impl Gen {
    /// Declares function `name` with these parameter and return types,
    /// has `lower` build its body (given the builder, the helpers and the
    /// target) and defines it.
    fn define(
        &mut self,
        name: &str,
        params: &[cranelift_codegen::ir::Type],
        ret: Option<cranelift_codegen::ir::Type>,
        lower: impl FnOnce(FunctionBuilder, lower::Helpers, cranelift_codegen::isa::TargetFrontendConfig),
    ) -> Result<cranelift_module::FuncId, String> {
        let mut sig = self.module.make_signature();
        sig.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        sig.returns.extend(ret.map(AbiParam::new));
        let id = self.module.declare_function(name, Linkage::Local, &sig).map_err(|e| e.to_string())?;
        self.ctx.func.signature = sig;
        self.ctx.func.name = UserFuncName::user(0, id.as_u32());
        let h = helpers_for(&self.module, &mut self.ctx.func);
        let target = self.module.target_config();
        lower(FunctionBuilder::new(&mut self.ctx.func, &mut self.fctx), h, target);
        self.module.define_function(id, &mut self.ctx).map_err(|e| format!("{e:?}"))?;
        self.module.clear_context(&mut self.ctx);
        Ok(id)
    }
}

/// The helpers' addresses and signatures, imported into `func`.
fn helpers_for(module: &JITModule, func: &mut cranelift_codegen::ir::Function) -> lower::Helpers {
    let mut sig = |params: &[_], ret: Option<_>| {
        let mut s = module.make_signature();
        s.params.extend(params.iter().map(|&t| AbiParam::new(t)));
        s.returns.extend(ret.map(AbiParam::new));
        func.import_signature(s)
    };
    lower::Helpers {
        table: (helpers::table as *const () as usize, sig(&[I64, I64], Some(I64))),
        table_key: (helpers::table_key as *const () as usize, sig(&[I64, I64, I64, I64, I64], Some(I64))),
        prim: (helpers::prim as *const () as usize, sig(&[I64, I64, I64, I64], None)),
        action: (helpers::action as *const () as usize, sig(&[I64, I64, I64], None)),
        cond: (helpers::cond as *const () as usize, sig(&[I64, I64], Some(I8))),
        checksum: (helpers::checksum as *const () as usize, sig(&[I64, I64], None)),
    }
}

/// Whether the control graph from `start` loops.
fn has_cycle(p: &Program, start: Option<Node>) -> bool {
    fn succ(p: &Program, n: Node) -> Vec<Option<Node>> {
        match n {
            Node::Cond(c) => vec![p.conds[c].t, p.conds[c].f],
            Node::Call(c) => vec![p.calls[c].next],
            Node::Table(t) => {
                let d = &p.table_defs[t];
                let mut v = vec![d.base_default_next, d.fixed_next];
                match &d.next {
                    crate::ir::NextMode::HitMiss { hit, miss } => v.extend([*hit, *miss]),
                    crate::ir::NextMode::ByAction(m) => v.extend(m.iter().map(|(_, n)| *n)),
                }
                v
            }
        }
    }
    // Depth-first, iteratively: (node, children pushed?).
    let (mut on_path, mut done) = (HashSet::new(), HashSet::new());
    let mut stack: Vec<(Node, bool)> = start.into_iter().map(|n| (n, false)).collect();
    while let Some((n, expanded)) = stack.pop() {
        if expanded {
            on_path.remove(&n);
            done.insert(n);
            continue;
        }
        if done.contains(&n) {
            continue;
        }
        if !on_path.insert(n) {
            return true;
        }
        stack.push((n, true));
        for s in succ(p, n).into_iter().flatten() {
            if on_path.contains(&s) {
                return true;
            }
            if !done.contains(&s) {
                stack.push((s, false));
            }
        }
    }
    false
}
