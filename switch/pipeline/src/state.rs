//! Runtime-mutable switch state shared (as `Arc<State>`) by the control
//! plane and the packet threads: tables as copy-on-write snapshots, atomics
//! for counters and narrow registers, sessions and multicast groups behind
//! RwLocks.
//!
//! A packet thread reads tables without a lock: it keeps an `Arc` of each
//! table's current snapshot and takes new ones only when `tables_gen` says
//! a table changed (one relaxed load per packet instead of a lock per
//! lookup). A writer changes the snapshot in place when no engine holds it,
//! else copies it first (`Arc::make_mut`): writes may cost a copy of the
//! table, lookups never wait. Direct counters are shared cells, so every
//! copy of an entry counts into the same one.

use crate::bits::{bytes_of, mask};
use crate::error::StateError;
use crate::ir::{ActionCall, ActionId, CounterId, MatchKey, Program, RegisterId, TableEntry, TableId, ValueSetId};
use crate::tables::{value_of, Cell, TableState};
use std::collections::HashMap;
use std::sync::atomic::{
    AtomicU64,
    Ordering::{Acquire, Relaxed, Release},
};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// One copy made by a multicast group or a clone session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Replica {
    pub port: u32,
    /// Written to `standard_metadata.egress_rid` of the copy.
    pub rid: u16,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterValue {
    pub bytes: u64,
    pub packets: u64,
}

#[derive(Debug)]
enum RegArray {
    Narrow { width: u32, cells: Box<[AtomicU64]> },
    Wide { width: u32, cells: Mutex<Vec<u128>> },
}

type VsetMember = (Vec<u8>, Vec<u128>);

/// An array of cells as native code reads it: its address and length
/// (0 and 0 for a register array wider than 64 bits, which native code
/// never touches).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawCells {
    pub addr: usize,
    pub len: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct CloneSession {
    pub replicas: Vec<Replica>,
    pub truncate: Option<u32>,
}

#[derive(Debug)]
pub struct State {
    program: Arc<Program>,
    tables: Vec<RwLock<Arc<TableState>>>,
    /// Bumped (Release) after every change of any table.
    tables_gen: AtomicU64,
    counters: Vec<Box<[Cell]>>,
    registers: Vec<RegArray>,
    /// Where each counter array's cells and each narrow register array's
    /// cells lie, for native code (jit): the boxes above never move or
    /// change length once built.
    counter_table: Box<[RawCells]>,
    reg_table: Box<[RawCells]>,
    clone_sessions: RwLock<HashMap<u32, CloneSession>>,
    mcast: RwLock<HashMap<u16, Vec<Replica>>>,
    /// per value set: (member as given, member split per key field)
    vsets: Vec<RwLock<Vec<VsetMember>>>,
    seed: AtomicU64,
    engines: AtomicU64,
    assert_failures: AtomicU64,
}

fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}
fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

impl State {
    pub fn new(program: Arc<Program>) -> State {
        let p = &*program;
        let tables = (0..p.table_defs.len()).map(|t| RwLock::new(Arc::new(TableState::new(p, t)))).collect();
        let counters: Vec<Box<[Cell]>> = p
            .counter_infos
            .iter()
            .map(|c| {
                let n = if c.is_direct { 0 } else { c.size as usize };
                (0..n).map(|_| Cell::default()).collect::<Vec<_>>().into_boxed_slice()
            })
            .collect();
        let registers: Vec<RegArray> = p
            .register_infos
            .iter()
            .map(|r| {
                if r.bitwidth <= 64 {
                    RegArray::Narrow {
                        width: r.bitwidth,
                        cells: (0..r.size).map(|_| AtomicU64::new(0)).collect(),
                    }
                } else {
                    RegArray::Wide { width: r.bitwidth, cells: Mutex::new(vec![0; r.size as usize]) }
                }
            })
            .collect();
        let vsets = p.vset_infos.iter().map(|_| RwLock::new(Vec::new())).collect();
        let counter_table = counters.iter().map(|c| RawCells { addr: c.as_ptr() as usize, len: c.len() }).collect();
        let reg_table = registers
            .iter()
            .map(|r| match r {
                RegArray::Narrow { cells, .. } => RawCells { addr: cells.as_ptr() as usize, len: cells.len() },
                RegArray::Wide { .. } => RawCells { addr: 0, len: 0 },
            })
            .collect();
        State {
            tables,
            tables_gen: AtomicU64::new(0),
            counters,
            registers,
            counter_table,
            reg_table,
            clone_sessions: RwLock::new(HashMap::new()),
            mcast: RwLock::new(HashMap::new()),
            vsets,
            seed: AtomicU64::new(0x5eed_cafe_f00d_0001),
            engines: AtomicU64::new(0),
            assert_failures: AtomicU64::new(0),
            program,
        }
    }

    pub fn program(&self) -> &Arc<Program> {
        &self.program
    }

    fn table(&self, t: TableId) -> Result<&RwLock<Arc<TableState>>, StateError> {
        self.tables.get(t.0).ok_or(StateError::NoSuchTable(t.0))
    }

    /// Runs a change on table `t`'s snapshot and tells the packet threads.
    fn change<R>(&self, t: TableId, f: impl FnOnce(&mut TableState) -> R) -> Result<R, StateError> {
        let mut g = write(self.table(t)?);
        let r = f(Arc::make_mut(&mut g));
        self.tables_gen.fetch_add(1, Release);
        Ok(r)
    }

    pub fn table_insert(&self, t: TableId, e: TableEntry) -> Result<(), StateError> {
        self.change(t, |ts| ts.insert(&self.program, t.0, e))?
    }

    pub fn table_modify(&self, t: TableId, e: TableEntry) -> Result<(), StateError> {
        self.change(t, |ts| ts.modify(&self.program, t.0, e))?
    }

    pub fn table_delete(&self, t: TableId, key: &[MatchKey], priority: i32) -> Result<(), StateError> {
        self.change(t, |ts| ts.delete(&self.program, t.0, key, priority))?
    }

    /// Entries in insertion order (const entries included). Empty for an
    /// unknown table.
    pub fn table_entries(&self, t: TableId) -> Vec<TableEntry> {
        self.table(t).map(|l| read(l).entries()).unwrap_or_default()
    }

    /// Number of entries in the table.
    pub fn table_len(&self, t: TableId) -> usize {
        self.table(t).map(|l| read(l).len()).unwrap_or(0)
    }

    pub fn table_set_default(&self, t: TableId, a: ActionCall) -> Result<(), StateError> {
        self.change(t, |ts| ts.set_default(&self.program, t.0, a))?
    }

    /// Back to the program's default action.
    pub fn table_reset_default(&self, t: TableId) {
        let _ = self.change(t, |ts| ts.reset_default(&self.program, t.0));
    }

    /// The current default action. A table without one (or an unknown id)
    /// reports `ActionId(usize::MAX)` with no arguments.
    pub fn table_get_default(&self, t: TableId) -> ActionCall {
        self.table(t)
            .ok()
            .and_then(|l| read(l).get_default())
            .unwrap_or(ActionCall { action: ActionId(usize::MAX), args: vec![] })
    }

    /// Removes every entry (not const entries; the default action stays).
    pub fn table_clear(&self, t: TableId) {
        let _ = self.change(t, |ts| ts.clear(&self.program, t.0));
    }

    pub fn direct_counter_read(&self, t: TableId, key: &[MatchKey], priority: i32) -> Result<CounterValue, StateError> {
        let info = self.program.table_infos.get(t.0).ok_or(StateError::NoSuchTable(t.0))?;
        if info.direct_counter.is_none() {
            return Err(StateError::NoDirectCounter(info.name.clone()));
        }
        let (bytes, packets) = read(self.table(t)?).direct_counter(&self.program, t.0, key, priority)?;
        Ok(CounterValue { bytes, packets })
    }

    pub fn direct_counter_write(
        &self,
        t: TableId,
        key: &[MatchKey],
        priority: i32,
        v: CounterValue,
    ) -> Result<(), StateError> {
        let info = self.program.table_infos.get(t.0).ok_or(StateError::NoSuchTable(t.0))?;
        if info.direct_counter.is_none() {
            return Err(StateError::NoDirectCounter(info.name.clone()));
        }
        read(self.table(t)?).direct_counter_write(&self.program, t.0, key, priority, v.bytes, v.packets)
    }

    fn counter_cells(&self, c: CounterId) -> Result<&[Cell], StateError> {
        let info = self.program.counter_infos.get(c.0).ok_or(StateError::NoSuchCounter(c.0))?;
        if info.is_direct {
            return Err(StateError::CounterIsDirect(info.name.clone()));
        }
        Ok(&self.counters[c.0])
    }

    pub fn counter_read(&self, c: CounterId, index: u64) -> Result<CounterValue, StateError> {
        let cells = self.counter_cells(c)?;
        let cell = cells
            .get(index as usize)
            .ok_or(StateError::IndexOutOfRange { index, size: cells.len() as u64 })?;
        Ok(CounterValue { bytes: cell.bytes.load(Relaxed), packets: cell.packets.load(Relaxed) })
    }

    pub fn counter_write(&self, c: CounterId, index: u64, v: CounterValue) -> Result<(), StateError> {
        let cells = self.counter_cells(c)?;
        let cell = cells
            .get(index as usize)
            .ok_or(StateError::IndexOutOfRange { index, size: cells.len() as u64 })?;
        cell.bytes.store(v.bytes, Relaxed);
        cell.packets.store(v.packets, Relaxed);
        Ok(())
    }

    pub fn register_read(&self, r: RegisterId, index: u64) -> Result<Vec<u8>, StateError> {
        let info = self.program.register_infos.get(r.0).ok_or(StateError::NoSuchRegister(r.0))?;
        if index >= info.size {
            return Err(StateError::IndexOutOfRange { index, size: info.size });
        }
        let v = self.reg_get(r.0, index as i128).unwrap_or(0);
        Ok(bytes_of(v, info.bitwidth))
    }

    pub fn register_write(&self, r: RegisterId, index: u64, value: &[u8]) -> Result<(), StateError> {
        let info = self.program.register_infos.get(r.0).ok_or(StateError::NoSuchRegister(r.0))?;
        if index >= info.size {
            return Err(StateError::IndexOutOfRange { index, size: info.size });
        }
        let v = value_of(value, info.bitwidth, &info.name)?;
        self.reg_set(r.0, index as i128, v);
        Ok(())
    }

    /// Sets every cell of a register array to zero.
    pub fn register_reset(&self, r: RegisterId) {
        match self.registers.get(r.0) {
            Some(RegArray::Narrow { cells, .. }) => cells.iter().for_each(|c| c.store(0, Relaxed)),
            Some(RegArray::Wide { cells, .. }) => {
                cells.lock().unwrap_or_else(|e| e.into_inner()).iter_mut().for_each(|c| *c = 0)
            }
            None => {}
        }
    }

    /// Clone (mirror) session: packets cloned to `session` are copied to
    /// every replica, truncated to `truncate_bytes` if given.
    pub fn clone_session_set(&self, session: u32, replicas: Vec<Replica>, truncate_bytes: Option<u32>) {
        write(&self.clone_sessions).insert(session, CloneSession { replicas, truncate: truncate_bytes });
    }

    pub fn clone_session_delete(&self, session: u32) -> Result<(), StateError> {
        write(&self.clone_sessions)
            .remove(&session)
            .map(|_| ())
            .ok_or(StateError::NoSuchCloneSession(session))
    }

    pub fn clone_session_get(&self, session: u32) -> Option<(Vec<Replica>, Option<u32>)> {
        read(&self.clone_sessions).get(&session).map(|s| (s.replicas.clone(), s.truncate))
    }

    pub fn mcast_group_set(&self, group: u16, replicas: Vec<Replica>) {
        write(&self.mcast).insert(group, replicas);
    }

    pub fn mcast_group_delete(&self, group: u16) -> Result<(), StateError> {
        write(&self.mcast).remove(&group).map(|_| ()).ok_or(StateError::NoSuchMcastGroup(group))
    }

    pub fn mcast_group_get(&self, group: u16) -> Option<Vec<Replica>> {
        read(&self.mcast).get(&group).cloned()
    }

    /// Replaces the members of a parser value set. A member is the
    /// big-endian value of the set's key fields packed without padding
    /// (`ValueSetInfo::bitwidth` bits).
    pub fn value_set_set(&self, v: ValueSetId, members: Vec<Vec<u8>>) -> Result<(), StateError> {
        let info = self.program.vset_infos.get(v.0).ok_or(StateError::NoSuchValueSet(v.0))?;
        let widths = &self.program.vset_key_widths[v.0];
        let mut out = Vec::with_capacity(members.len());
        for m in members {
            let packed = value_of(&m, info.bitwidth, &info.name)?;
            let mut parts = Vec::with_capacity(widths.len());
            let mut shift: u32 = widths.iter().sum();
            for &w in widths {
                shift -= w;
                parts.push(if shift >= 128 { 0 } else { (packed >> shift) & mask(w) });
            }
            if widths.is_empty() {
                parts.push(packed);
            }
            out.push((m, parts));
        }
        *write(&self.vsets[v.0]) = out;
        Ok(())
    }

    pub fn value_set_get(&self, v: ValueSetId) -> Vec<Vec<u8>> {
        self.vsets.get(v.0).map(|l| read(l).iter().map(|(b, _)| b.clone()).collect()).unwrap_or_default()
    }

    /// Seed for the `random` extern of engines created after this call
    /// (each engine derives its own stream from it).
    pub fn set_random_seed(&self, seed: u64) {
        self.seed.store(seed, Relaxed);
        self.engines.store(0, Relaxed);
    }

    /// Packets that failed an `assert`/`assume` (bmv2 would abort; this
    /// engine drops the packet and counts it here).
    pub fn assert_failures(&self) -> u64 {
        self.assert_failures.load(Relaxed)
    }

    // ------------------------------------------------------- fast path

    pub(crate) fn next_engine_seed(&self) -> u64 {
        let n = self.engines.fetch_add(1, Relaxed);
        self.seed.load(Relaxed) ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    pub(crate) fn note_assert_failure(&self) {
        self.assert_failures.fetch_add(1, Relaxed);
    }

    /// Changes when any table changed (see the module doc).
    #[inline]
    pub(crate) fn tables_gen(&self) -> u64 {
        self.tables_gen.load(Acquire)
    }

    /// The current snapshot of every table, in table order.
    pub(crate) fn table_snapshots(&self, out: &mut Vec<Arc<TableState>>) {
        out.clear();
        out.extend(self.tables.iter().map(|l| read(l).clone()));
    }

    /// The counter arrays' cells, by counter index (jit).
    pub(crate) fn counter_table(&self) -> &[RawCells] {
        &self.counter_table
    }

    /// The narrow register arrays' cells, by register index (jit).
    pub(crate) fn reg_table(&self) -> &[RawCells] {
        &self.reg_table
    }

    pub(crate) fn counter_inc(&self, c: usize, idx: i128, bytes: u64) {
        if let Some(cell) = self.counters.get(c).and_then(|cs| usize::try_from(idx).ok().and_then(|i| cs.get(i))) {
            cell.add(bytes);
        }
    }

    pub(crate) fn reg_get(&self, r: usize, idx: i128) -> Option<u128> {
        let i = usize::try_from(idx).ok()?;
        match self.registers.get(r)? {
            RegArray::Narrow { cells, .. } => cells.get(i).map(|c| c.load(Relaxed) as u128),
            RegArray::Wide { cells, .. } => cells.lock().unwrap_or_else(|e| e.into_inner()).get(i).copied(),
        }
    }

    pub(crate) fn reg_set(&self, r: usize, idx: i128, v: u128) {
        let Ok(i) = usize::try_from(idx) else { return };
        match self.registers.get(r) {
            Some(RegArray::Narrow { width, cells }) => {
                if let Some(c) = cells.get(i) {
                    c.store((v & mask(*width)) as u64, Relaxed);
                }
            }
            Some(RegArray::Wide { width, cells }) => {
                if let Some(c) = cells.lock().unwrap_or_else(|e| e.into_inner()).get_mut(i) {
                    *c = v & mask(*width);
                }
            }
            None => {}
        }
    }

    pub(crate) fn clone_session(&self, s: u32) -> Option<CloneSession> {
        read(&self.clone_sessions).get(&s).cloned()
    }

    pub(crate) fn with_mcast<R>(&self, g: u16, f: impl FnOnce(&[Replica]) -> R) -> Option<R> {
        read(&self.mcast).get(&g).map(|r| f(r))
    }

    pub(crate) fn vset_contains(&self, v: usize, key: &[u128], masks: Option<&[u128]>) -> bool {
        let Some(l) = self.vsets.get(v) else { return false };
        read(l).iter().any(|(_, parts)| {
            parts.len() == key.len()
                && parts.iter().zip(key).enumerate().all(|(i, (&m, &k))| match masks {
                    Some(ms) => (m & ms[i]) == (k & ms[i]),
                    None => m == k,
                })
        })
    }
}
