//! A program and the code it compiles to, built once per process and
//! shared by every switch that loads the same bmv2 JSON: the simulator
//! runs a fabric's switches in one process, each loaded with the same
//! program, and loading (the JSON) and compiling (the fast path's closures
//! and the native pipelines) it once per switch was about a twentieth of a
//! short fabric run. A program is immutable once loaded, so sharing it
//! changes nothing a switch does; each switch keeps its own `State`.
//!
//! Entries are held weakly: a program no switch runs any more is freed,
//! and its entry dropped at the next lookup.

use crate::engine::DROP_PORT;
use crate::error::LoadError;
use crate::fast::FastProgram;
use crate::ir::Program;
use crate::jit::Jit;
use std::sync::{Arc, Mutex, Weak};

/// Programs by the JSON they were loaded from.
static PROGRAMS: Mutex<Vec<(Arc<str>, Weak<Program>)>> = Mutex::new(Vec::new());

/// The closures and native code of each live program (the native code
/// built on first request).
type Compiled = (Arc<FastProgram>, Option<Arc<Result<Jit, String>>>);
static CODE: Mutex<Vec<(Weak<Program>, Compiled)>> = Mutex::new(Vec::new());

impl Program {
    /// [`Program::from_json`], or the program already loaded in this process
    /// from the same text.
    pub fn from_json_shared(text: &str) -> Result<Arc<Program>, LoadError> {
        let mut all = PROGRAMS.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|(_, w)| w.strong_count() > 0);
        if let Some(p) = all.iter().find(|(t, _)| **t == *text).and_then(|(_, w)| w.upgrade()) {
            return Ok(p);
        }
        let p = Arc::new(Program::from_json(text)?);
        all.push((text.into(), Arc::downgrade(&p)));
        Ok(p)
    }
}

/// The fast path of `prog` and, when `native`, its native pipelines (Err:
/// why this host has none), each built once for the program.
pub(crate) fn code_for(prog: &Arc<Program>, native: bool) -> (Arc<FastProgram>, Option<Arc<Result<Jit, String>>>) {
    let mut all = CODE.lock().unwrap_or_else(|e| e.into_inner());
    // (dead entries first: a freed program's address may be reused)
    all.retain(|(w, _)| w.strong_count() > 0);
    let at = match all.iter().position(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(prog))) {
        Some(i) => i,
        None => {
            all.push((Arc::downgrade(prog), (Arc::new(FastProgram::build(prog)), None)));
            all.len() - 1
        }
    };
    let (fast, jit) = &mut all[at].1;
    let jit = native.then(|| jit.get_or_insert_with(|| Arc::new(Jit::build(prog, DROP_PORT))).clone());
    (fast.clone(), jit)
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &str = include_str!("../../../p4src/build/cc_switch.json");

    /// Two loads of one text give one program, compiled once; a program
    /// no one holds is loaded afresh.
    #[test]
    fn one_program_and_one_compilation_per_text() {
        let a = Program::from_json_shared(JSON).expect("loads");
        let b = Program::from_json_shared(JSON).expect("loads");
        assert!(Arc::ptr_eq(&a, &b));
        let (fa, ja) = code_for(&a, true);
        let (fb, jb) = code_for(&b, true);
        assert!(Arc::ptr_eq(&fa, &fb));
        assert!(Arc::ptr_eq(&ja.expect("native asked for"), &jb.expect("native asked for")));
        assert!(code_for(&a, false).1.is_none());
        // Another text (the same program, reformatted) is another program.
        let other = format!("{JSON}\n");
        let c = Program::from_json_shared(&other).expect("loads");
        assert!(!Arc::ptr_eq(&a, &c));
        assert!(!Arc::ptr_eq(&fa, &code_for(&c, false).0));
        let weak = Arc::downgrade(&c);
        drop(c);
        assert!(weak.upgrade().is_none(), "the cache does not keep a program alive");
    }
}
