//! What native code calls back into: table lookups, and every primitive
//! or condition the code generator leaves to the fast path's closures.
//! Each is an `extern "C"` function taking the `Env` the native code was
//! given; a panic in one aborts the process (it cannot unwind through
//! generated frames), as an internal error would anyway.

use super::{ArgSel, Env, Jit};
use crate::actions::{self, Exec};
use crate::eval::Ctx;
use crate::fast::{FastAction, FastPrim, FastProgram};
use crate::packet::Pkt;
use crate::tables::{LookupResult, TableState};
use std::sync::Arc;

/// Everything a helper needs besides the PHV pointers in `Env`, for one
/// pass of one pipeline.
pub(crate) struct Run<'a> {
    pub x: Exec<'a>,
    pub fast: &'a FastProgram,
    pub jit: &'a Jit,
    pub tables: &'a [Arc<TableState>],
    pub key: &'a mut Vec<u128>,
    pub lpm: &'a mut Vec<u128>,
    pub args: &'a mut Vec<u128>,
    /// The packet. A raw pointer: the native code writes its PHV through
    /// pointers taken from this one while a helper is not running.
    pub pkt: *mut Pkt,
}

/// The run and the packet behind an `Env`.
///
/// # Safety
/// `env` is the `Env` `Jit::run` built, live for the call.
unsafe fn parts<'e>(env: *mut Env) -> (&'e mut Env, &'e mut Run<'e>, &'e mut Pkt) {
    let env = &mut *env;
    let run = &mut *(env.run as *mut Run);
    let pkt = &mut *run.pkt;
    (env, run, pkt)
}

/// The action data a primitive runs with.
fn args<'a>(run: &'a Run, sel: u64) -> &'a [u128] {
    if sel == ArgSel::DYNAMIC {
        run.args
    } else {
        run.jit.const_args(sel as usize)
    }
}

/// Looks table `t` up with the packet's key. Returns the action (its
/// program index; `u32::MAX` for none) in the low half and the hit flag
/// in bit 32; the entry's action data is left in `run.args` and shown to
/// the native code through `Env::args`/`nargs`.
pub(super) unsafe extern "C" fn table(env: *mut Env, t: u64) -> u64 {
    let (env, run, pkt) = parts(env);
    let res = run.tables[t as usize].apply(run.x.p, t as usize, pkt, run.key, run.lpm, run.args);
    found(env, run, res)
}

/// `table` for a key of at most one field, which the native code has
/// read: `nkeys` (0 or 1) fields, the field's value as two halves.
pub(super) unsafe extern "C" fn table_key(env: *mut Env, t: u64, nkeys: u64, lo: u64, hi: u64) -> u64 {
    let (env, run, pkt) = parts(env);
    let res = if nkeys == 0 {
        // Without key fields a table holds only its default entry (three
        // of the tables every packet meets here).
        run.args.clear();
        run.tables[t as usize].default_into(run.args)
    } else {
        let key = [(hi as u128) << 64 | lo as u128];
        run.tables[t as usize].lookup_packet(run.x.p, t as usize, pkt, &key, run.lpm, run.args)
    };
    found(env, run, res)
}

fn found(env: &mut Env, run: &mut Run, res: LookupResult) -> u64 {
    let want = run.jit.max_args;
    if run.args.capacity() < want {
        // Once: room for the widest action, initialised, so the native
        // code may read any argument index and keep it only below nargs.
        let n = run.args.len();
        run.args.resize(want, 0);
        run.args.truncate(n);
    }
    env.args = run.args.as_ptr();
    env.nargs = run.args.len() as u64;
    let a = res.action.map_or(u32::MAX, |a| a as u32);
    a as u64 | (res.hit as u64) << 32
}

/// Primitive `i` of action `a`, on the fast path.
pub(super) unsafe extern "C" fn prim(env: *mut Env, a: u64, i: u64, sel: u64) {
    let (_, run, pkt) = parts(env);
    let args: &[u128] = &*(args(run, sel) as *const [u128]);
    let (a, i) = (a as usize, i as usize);
    match &run.fast.actions[a] {
        FastAction::Prims(v) => match &v[i] {
            FastPrim::Store(s) => {
                actions::run_store(s, pkt, args);
            }
            FastPrim::Closure(f) => f(&mut run.x, pkt, args),
        },
        FastAction::General(_) => {
            let p = run.x.p;
            actions::run(&mut run.x, pkt, &p.action_defs[a].prims[i..=i], args)
        }
    }
}

/// Action `a` whole, on the fast path (actions with jumps, and actions a
/// table returns that its action list does not name).
pub(super) unsafe extern "C" fn action(env: *mut Env, a: u64, sel: u64) {
    let (_, run, pkt) = parts(env);
    let args: &[u128] = &*(args(run, sel) as *const [u128]);
    let fast = run.fast;
    fast.run_action(&mut run.x, pkt, a as usize, args);
}

/// Conditional `c`, on the fast path.
pub(super) unsafe extern "C" fn cond(env: *mut Env, c: u64) -> u8 {
    let (_, run, pkt) = parts(env);
    let ctx = Ctx { p: run.x.p, phv: &pkt.phv, args: &[], state: run.x.state };
    (run.fast.conds[c as usize])(&ctx) as u8
}

/// Update checksum `c` (`Program::update_checksums`), as the deparser's
/// `update_checksums` runs it: for those native code has no inline form,
/// or whose inputs' headers are not all valid. `Env::run` is the
/// deparse's `Exec`.
pub(super) unsafe extern "C" fn checksum(env: *mut Env, c: u64) {
    let env = &mut *env;
    let x = &mut *(env.run as *mut Exec);
    let pkt = &mut *env.pkt;
    let p = x.p;
    crate::parser::update_checksum(x, pkt, &p.update_checksums[c as usize]);
}
