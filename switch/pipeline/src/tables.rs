//! Match-action table storage and lookup. Exact tables use a hash map, LPM
//! tables one hash map per prefix length (longest first), ternary / range /
//! optional tables a priority-ordered list. Priorities follow P4Runtime: a
//! larger number wins; equal priorities resolve to the earliest inserted.
//!
//! A ternary-kind table whose entries match exact values on some fields
//! and an interval (a range, a prefix-shaped ternary, an LPM prefix) on at
//! most one other field — a RED profile of `ecn_red` (egress port exact,
//! queue depth range: a few hundred entries) is one — is also looked up
//! through an index ([`IntervalIndex`]): the exact values pick the
//! entries' group by hashing, and a binary search of the group's
//! elementary intervals finds the winning entry. The index is built on the
//! first lookup after a change; tables it does not fit keep the list scan.

use crate::bits::{bytes_of, bytes_to_u128, mask};
use crate::error::StateError;
use crate::ir::{ActionCall, ActionId, KeyKind, KeySrc, MatchKey, Program, TableDef, TableEntry, TableInfo, TableKind};
use crate::packet::Pkt;
use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

/// Table keys of up to this many fields are built on the stack.
const SMALL_KEY: usize = 4;

/// Counter cell (packets and bytes), updated with relaxed atomics. C
/// layout: native code adds to `bytes` at offset 0 and `packets` at 8.
#[repr(C)]
#[derive(Debug, Default)]
pub(crate) struct Cell {
    pub bytes: AtomicU64,
    pub packets: AtomicU64,
}

impl Cell {
    #[inline]
    pub fn add(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Relaxed);
        self.packets.fetch_add(1, Relaxed);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Fm {
    Exact(u128),
    Lpm(u128, u32),
    Tern(u128, u128),
    Range(u128, u128),
}

/// Action data of at most this many values lives in a `Hot`.
const HOT_ARGS: usize = 3;
/// `Hot::nargs` of an entry whose data is in its `Entry::spilled`.
const SPILLED: u32 = u32::MAX;

/// What a hit needs of an entry, in one cache line beside the others
/// (`TableState::hot`, indexed as the slab): its action and, for most
/// actions, its data. Reaching them through the entry and its boxed data
/// was two more dependent loads, and those missed the cache on a fabric's
/// switches: a third of a lookup's time.
#[derive(Clone, Copy, Debug)]
struct Hot {
    action: u32,
    nargs: u32,
    args: [u128; HOT_ARGS],
}

impl Hot {
    /// An action and its data as a lookup reads them, and the data again
    /// when it does not fit (else empty).
    fn split(action: usize, args: Box<[u128]>) -> (Hot, Box<[u128]>) {
        let mut h = Hot { action: action as u32, nargs: SPILLED, args: [0; HOT_ARGS] };
        if args.len() > HOT_ARGS {
            return (h, args);
        }
        h.args[..args.len()].copy_from_slice(&args);
        h.nargs = args.len() as u32;
        (h, Box::new([]))
    }

    /// Its data into `args` (cleared), or `spill` (what `split` kept
    /// apart) when it holds none.
    #[inline]
    fn copy_args<'s>(&self, args: &mut Vec<u128>, spill: impl FnOnce() -> Option<&'s [u128]>) {
        if self.nargs == SPILLED {
            copy_args(args, spill().unwrap_or(&[]));
            return;
        }
        // All HOT_ARGS values copied as one fixed-size block, then cut to
        // the ones that count: a copy of a variable count was a loop per
        // lookup, 2.6 M of them in 0.5 simulated s of a 10 Gb/s dumbbell.
        let len = args.len();
        args.extend_from_slice(&self.args);
        args.truncate(len + self.nargs as usize);
    }
}

/// A table's default action: as a lookup reads it (`Hot::split`), and
/// as the controller wrote it.
#[derive(Clone, Debug)]
struct DefaultAction {
    hot: Hot,
    spilled: Box<[u128]>,
    call: ActionCall,
}

#[derive(Clone, Debug)]
struct Entry {
    orig: TableEntry,
    fm: Vec<Fm>,
    priority: i32,
    /// Its action data when `TableState::hot` cannot hold it (`Hot::split`).
    spilled: Box<[u128]>,
    /// Shared by the copies of the table (see state.rs).
    counter: Arc<Cell>,
    seq: u64,
}

type KeyMap = HashMap<Box<[u128]>, usize>;

/// The widest key `TableState::dense` holds (4096 entries, 16 KB).
const DENSE_KEY_BITS: u32 = 12;
const DENSE_NONE: u32 = u32::MAX;

fn dense_for(def: &TableDef) -> Option<Box<[u32]>> {
    let width: u32 = def.keys.iter().map(|k| k.width).sum();
    (def.kind == TableKind::Exact && !def.keys.is_empty() && width <= DENSE_KEY_BITS)
        .then(|| vec![DENSE_NONE; 1 << width].into_boxed_slice())
}

#[derive(Clone, Debug)]
pub(crate) struct TableState {
    slab: Vec<Option<Entry>>,
    free: Vec<usize>,
    count: usize,
    seq: u64,
    exact: HashMap<Box<[u128]>, usize>,
    /// (prefix length, entries), longest prefix first
    lpm: Vec<(u32, KeyMap)>,
    /// Tables with one key field (most of them) keep their entries keyed by
    /// the value itself: hashing a u128 is several times cheaper than a
    /// slice. `exact1`: exact; `lpm1`: (prefix length, its mask, entries),
    /// longest prefix first. `exact`/`lpm` stay empty then.
    exact1: HashMap<u128, usize>,
    lpm1: Vec<(u32, u128, HashMap<u128, usize>)>,
    /// An exact table whose key fields fit 128 bits side by side keeps its
    /// entries in `exact1` under that one value (`pack`): the ECMP table's
    /// two fields hashed as a slice cost several times one value's hash.
    packed: bool,
    /// An exact table whose key is at most `DENSE_KEY_BITS` wide also keeps
    /// its entries in an array indexed by the key (`DENSE_NONE` where there
    /// is none): a port's settings are read by every packet, and an index
    /// costs a tenth of a hash lookup.
    dense: Option<Box<[u32]>>,
    ordered: Vec<usize>,
    /// Ternary-kind tables: the interval index of `ordered`, built on the
    /// first lookup after a change (`None` inside: the entries do not fit
    /// one; the lookup scans `ordered`).
    index: OnceLock<Option<IntervalIndex>>,
    default: Option<DefaultAction>,
    /// `Hot` of each slab entry (stale where the slab's is `None`).
    hot: Vec<Hot>,
    immutable: bool,
}

/// The entries of a ternary-kind table grouped by the values of their
/// exact fields, each group's interval field cut into elementary intervals
/// with the entry that wins there (the first of `ordered` covering it).
#[derive(Clone, Debug)]
struct IntervalIndex {
    /// Key fields matched exactly (the exact / valid match kinds).
    exact: Vec<usize>,
    /// The one other field entries may match on something narrower than a
    /// wildcard; `None` when all of them are wildcards.
    field: Option<usize>,
    groups: HashMap<Box<[u128]>, Group>,
}

#[derive(Clone, Debug, Default)]
struct Group {
    /// Ascending starts of the elementary intervals (the first is 0).
    starts: Vec<u128>,
    /// The slab index of the entry that wins in each, or `NONE`.
    winner: Vec<usize>,
}

const NONE: usize = usize::MAX;

/// The values a match of a non-exact field covers, as an inclusive
/// interval; `None` when they are not one (a ternary mask with holes).
fn interval(f: &Fm, width: u32) -> Option<(u128, u128)> {
    match *f {
        Fm::Range(lo, hi) => Some((lo, hi)),
        Fm::Tern(_, 0) => Some((0, u128::MAX)),
        Fm::Tern(v, m) => {
            let plen = m.count_ones();
            (m == prefix_mask(width, plen)).then(|| (v, v | (mask(width) & !m)))
        }
        Fm::Lpm(_, 0) => Some((0, u128::MAX)),
        Fm::Lpm(v, l) => Some((v, v | (mask(width) & !prefix_mask(width, l)))),
        Fm::Exact(v) => Some((v, v)),
    }
}

/// Whether `iv` covers every value of a field of `width` bits.
fn is_wildcard(iv: (u128, u128), width: u32) -> bool {
    iv.0 == 0 && iv.1 >= mask(width)
}

impl IntervalIndex {
    /// The index of `ordered` (slab indices, best first), if the entries
    /// fit one.
    fn build(def: &TableDef, slab: &[Option<Entry>], ordered: &[usize]) -> Option<IntervalIndex> {
        let exact: Vec<usize> =
            def.keys.iter().enumerate().filter(|(_, k)| matches!(k.kind, KeyKind::Exact | KeyKind::Valid)).map(|(i, _)| i).collect();
        let mut field = None;
        // Per group: (interval, slab index) in priority order.
        let mut members: HashMap<Box<[u128]>, Vec<((u128, u128), usize)>> = HashMap::default();
        for &i in ordered {
            let e = slab[i].as_ref()?;
            let mut iv = (0, u128::MAX);
            for (f, (fm, kd)) in e.fm.iter().zip(&def.keys).enumerate() {
                if exact.contains(&f) {
                    continue;
                }
                let x = interval(fm, kd.width)?;
                if is_wildcard(x, kd.width) {
                    continue;
                }
                if *field.get_or_insert(f) != f {
                    return None; // a second field narrower than a wildcard
                }
                iv = x;
            }
            let key: Box<[u128]> = exact.iter().map(|&f| exact_key(&e.fm)[f]).collect();
            members.entry(key).or_default().push((iv, i));
        }
        let groups = members.into_iter().map(|(k, v)| (k, Group::sweep(&v))).collect();
        Some(IntervalIndex { exact, field, groups })
    }

    /// The winning slab index for `key`, if any.
    fn find(&self, key: &[u128]) -> Option<usize> {
        let mut small = [0u128; SMALL_KEY];
        let g = if self.exact.len() <= SMALL_KEY {
            for (d, &f) in small.iter_mut().zip(&self.exact) {
                *d = key[f];
            }
            self.groups.get(&small[..self.exact.len()])
        } else {
            let k: Vec<u128> = self.exact.iter().map(|&f| key[f]).collect();
            self.groups.get(k.as_slice())
        }?;
        let v = self.field.map_or(0, |f| key[f]);
        let at = g.starts.partition_point(|&s| s <= v).checked_sub(1)?;
        Some(g.winner[at]).filter(|&w| w != NONE)
    }
}

impl Group {
    /// Elementary intervals of `members` ((interval, slab index), best
    /// first) and who wins in each: a sweep over their ends keeping the
    /// covering entries' ranks in a set.
    fn sweep(members: &[((u128, u128), usize)]) -> Group {
        let mut starts: Vec<(u128, usize)> = members.iter().enumerate().map(|(r, &((lo, _), _))| (lo, r)).collect();
        let mut ends: Vec<(u128, usize)> =
            members.iter().enumerate().filter_map(|(r, &((_, hi), _))| hi.checked_add(1).map(|e| (e, r))).collect();
        starts.sort_unstable();
        ends.sort_unstable();
        let mut bounds: Vec<u128> = std::iter::once(0).chain(starts.iter().map(|s| s.0)).chain(ends.iter().map(|e| e.0)).collect();
        bounds.sort_unstable();
        bounds.dedup();
        let (mut si, mut ei) = (0, 0);
        let mut live: BTreeSet<usize> = BTreeSet::new();
        let mut g = Group::default();
        for b in bounds {
            while ei < ends.len() && ends[ei].0 <= b {
                live.remove(&ends[ei].1);
                ei += 1;
            }
            while si < starts.len() && starts[si].0 <= b {
                live.insert(starts[si].1);
                si += 1;
            }
            let w = live.first().map_or(NONE, |&r| members[r].1);
            if g.winner.last() != Some(&w) {
                g.starts.push(b);
                g.winner.push(w);
            }
        }
        g
    }
}

/// Big-endian bytes to a value that must fit `width` bits.
pub(crate) fn value_of(b: &[u8], width: u32, what: &str) -> Result<u128, StateError> {
    let too_wide = || StateError::ValueTooWide { what: what.to_string(), bitwidth: width };
    let v = bytes_to_u128(b).ok_or_else(too_wide)?;
    if width < 128 && v >> width != 0 {
        return Err(too_wide());
    }
    Ok(v)
}

fn prefix_mask(width: u32, plen: u32) -> u128 {
    if plen == 0 {
        0
    } else {
        mask(width) ^ mask(width - plen.min(width))
    }
}

/// Validates an action call for a table; returns (program action index,
/// argument values). An action of the same name as one of the table's is
/// accepted (p4c may duplicate actions such as NoAction).
pub(crate) fn check_action(
    p: &Program,
    info: &TableInfo,
    call: &ActionCall,
) -> Result<(usize, Box<[u128]>), StateError> {
    let a = call.action.0;
    let ainfo = p
        .action_infos
        .get(a)
        .ok_or_else(|| StateError::BadAction(format!("no action with id {a}")))?;
    let chosen = if info.action_ids.contains(&call.action) {
        a
    } else {
        info.action_ids
            .iter()
            .find(|id| p.action_infos[id.0].name == ainfo.name)
            .map(|id| id.0)
            .ok_or_else(|| {
                StateError::BadAction(format!(
                    "action '{}' is not an action of table '{}'",
                    ainfo.name, info.name
                ))
            })?
    };
    let params = &p.action_infos[chosen].params;
    if call.args.len() != params.len() {
        return Err(StateError::BadArg(format!(
            "action '{}' takes {} arguments, got {}",
            ainfo.name,
            params.len(),
            call.args.len()
        )));
    }
    let mut args = Vec::with_capacity(params.len());
    for (b, prm) in call.args.iter().zip(params) {
        args.push(value_of(b, prm.bitwidth, &format!("argument '{}' of '{}'", prm.name, ainfo.name))?);
    }
    Ok((chosen, args.into_boxed_slice()))
}

fn canon(def: &TableDef, info: &TableInfo, key: &[MatchKey]) -> Result<Vec<Fm>, StateError> {
    if key.len() != def.keys.len() {
        return Err(StateError::BadKey(format!(
            "table '{}' has {} key fields, got {}",
            info.name,
            def.keys.len(),
            key.len()
        )));
    }
    let mut out = Vec::with_capacity(key.len());
    for (i, (k, kd)) in key.iter().zip(&def.keys).enumerate() {
        let w = kd.width;
        let name = &info.keys[i].name;
        let bad = |m: &str| StateError::BadKey(format!("key field '{name}': {m}"));
        let fm = match (kd.kind, k) {
            (KeyKind::Exact | KeyKind::Valid, MatchKey::Exact(v)) => Fm::Exact(value_of(v, w, name)?),
            (KeyKind::Lpm, MatchKey::Lpm { value, prefix_len }) => {
                if *prefix_len > w {
                    return Err(bad(&format!("prefix length {prefix_len} > {w}")));
                }
                let v = value_of(value, w, name)?;
                if v & !prefix_mask(w, *prefix_len) != 0 {
                    return Err(bad("value has bits set beyond the prefix length"));
                }
                Fm::Lpm(v, *prefix_len)
            }
            (KeyKind::Ternary, MatchKey::Ternary { value, mask: m }) => {
                let v = value_of(value, w, name)?;
                let m = value_of(m, w, name)?;
                if v & !m != 0 {
                    return Err(bad("value has bits set outside the mask"));
                }
                Fm::Tern(v, m)
            }
            (KeyKind::Ternary, MatchKey::Optional(o)) => match o {
                Some(v) => Fm::Tern(value_of(v, w, name)?, mask(w)),
                None => Fm::Tern(0, 0),
            },
            (KeyKind::Range, MatchKey::Range { low, high }) => {
                let (lo, hi) = (value_of(low, w, name)?, value_of(high, w, name)?);
                if lo > hi {
                    return Err(bad("range low > high"));
                }
                Fm::Range(lo, hi)
            }
            (kind, k) => {
                return Err(bad(&format!("a {kind:?} key field cannot take {k:?}")));
            }
        };
        out.push(fm);
    }
    Ok(out)
}

/// Appends an entry's action data to `args` (cleared): a few values, one
/// by one, where `extend_from_slice` called memmove for each lookup.
#[inline]
fn copy_args(args: &mut Vec<u128>, from: &[u128]) {
    args.reserve(from.len());
    for &a in from {
        args.push(a);
    }
}

/// Whether an exact table's key fields fit one u128 side by side.
fn packs(def: &TableDef) -> bool {
    def.kind == TableKind::Exact && def.keys.iter().map(|k| k.width).sum::<u32>() <= 128
}

/// The key's fields side by side, the first highest; `None` when a value
/// does not fit its field's width (a key no entry can have).
#[inline]
fn pack(def: &TableDef, key: &[u128]) -> Option<u128> {
    if let [v] = key {
        return Some(*v);
    }
    let mut out = 0u128;
    for (k, &v) in def.keys.iter().zip(key) {
        if k.width < 128 && v >> k.width != 0 {
            return None;
        }
        out = out.checked_shl(k.width).unwrap_or(0) | v;
    }
    Some(out)
}

fn exact_key(fm: &[Fm]) -> Box<[u128]> {
    fm.iter()
        .map(|f| match f {
            Fm::Exact(v) | Fm::Lpm(v, _) | Fm::Tern(v, _) | Fm::Range(v, _) => *v,
        })
        .collect()
}

fn lpm_plen(fm: &[Fm]) -> u32 {
    fm.iter()
        .find_map(|f| match f {
            Fm::Lpm(_, l) => Some(*l),
            _ => None,
        })
        .unwrap_or(0)
}

fn fm_matches(def: &TableDef, fm: &[Fm], k: &[u128]) -> bool {
    fm.iter().zip(k).zip(&def.keys).all(|((f, &k), kd)| match *f {
        Fm::Exact(v) => k == v,
        Fm::Lpm(v, l) => k & prefix_mask(kd.width, l) == v,
        Fm::Tern(v, m) => k & m == v,
        Fm::Range(lo, hi) => lo <= k && k <= hi,
    })
}

pub(crate) struct LookupResult {
    pub hit: bool,
    pub action: Option<usize>,
}

impl TableState {
    pub fn new(p: &Program, t: usize) -> TableState {
        let def = &p.table_defs[t];
        let mut st = TableState {
            slab: Vec::new(),
            free: Vec::new(),
            count: 0,
            seq: 0,
            exact: HashMap::default(),
            lpm: Vec::new(),
            exact1: HashMap::default(),
            lpm1: Vec::new(),
            packed: packs(&p.table_defs[t]),
            dense: dense_for(&p.table_defs[t]),
            ordered: Vec::new(),
            index: OnceLock::new(),
            default: None,
            hot: Vec::new(),
            immutable: false,
        };
        st.reset_default(p, t);
        for e in &def.const_entries {
            // validated at load time
            let _ = st.insert(p, t, e.clone());
        }
        st.immutable = !def.const_entries.is_empty();
        st
    }

    /// Inserts the program's const entries into an empty table.
    pub fn validate_const(p: &Program, t: usize) -> Result<(), StateError> {
        let mut st = TableState {
            slab: Vec::new(),
            free: Vec::new(),
            count: 0,
            seq: 0,
            exact: HashMap::default(),
            lpm: Vec::new(),
            exact1: HashMap::default(),
            lpm1: Vec::new(),
            packed: packs(&p.table_defs[t]),
            dense: dense_for(&p.table_defs[t]),
            ordered: Vec::new(),
            index: OnceLock::new(),
            default: None,
            hot: Vec::new(),
            immutable: false,
        };
        for e in &p.table_defs[t].const_entries {
            st.insert(p, t, e.clone())?;
        }
        Ok(())
    }

    fn find(&self, def: &TableDef, fm: &[Fm], priority: i32) -> Option<usize> {
        match def.kind {
            TableKind::Exact if self.packed => pack(def, &exact_key(fm)).and_then(|k| self.exact1.get(&k).copied()),
            TableKind::Exact => self.exact.get(&exact_key(fm)).copied(),
            TableKind::Lpm if def.keys.len() == 1 => {
                let l = lpm_plen(fm);
                self.lpm1.iter().find(|(pl, _, _)| *pl == l).and_then(|(_, _, m)| m.get(&exact_key(fm)[0]).copied())
            }
            TableKind::Lpm => {
                let l = lpm_plen(fm);
                self.lpm.iter().find(|(pl, _)| *pl == l).and_then(|(_, m)| m.get(&exact_key(fm)).copied())
            }
            TableKind::Ternary => self.ordered.iter().copied().find(|&i| {
                self.slab[i].as_ref().is_some_and(|e| e.priority == priority && e.fm == fm)
            }),
        }
    }

    pub fn insert(&mut self, p: &Program, t: usize, e: TableEntry) -> Result<(), StateError> {
        let (def, info) = (&p.table_defs[t], &p.table_infos[t]);
        if self.immutable {
            return Err(StateError::ConstEntries(info.name.clone()));
        }
        if def.keys.is_empty() {
            // P4Runtime: a table without match fields holds only its default entry.
            return Err(StateError::BadKey(format!("table '{}' has no key: only its default action can be set", info.name)));
        }
        let fm = canon(def, info, &e.key)?;
        let (action, args) = check_action(p, info, &e.action)?;
        let priority = if def.kind == TableKind::Ternary { e.priority } else { 0 };
        if self.find(def, &fm, priority).is_some() {
            return Err(StateError::EntryExists);
        }
        if self.count >= info.max_size {
            return Err(StateError::TableFull { table: info.name.clone(), max_size: info.max_size });
        }
        // (canon checked each field against its width: pack cannot refuse it)
        let packed_key = if self.packed { pack(def, &exact_key(&fm)).unwrap_or_default() } else { 0 };
        self.seq += 1;
        let (hot, spilled) = Hot::split(action, args);
        let entry = Entry { orig: e, fm, priority, spilled, counter: Arc::default(), seq: self.seq };
        let idx = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slab.push(None);
                self.hot.push(hot);
                self.slab.len() - 1
            }
        };
        match def.kind {
            TableKind::Exact if self.packed => {
                self.exact1.insert(packed_key, idx);
                if let Some(slot) = self.dense.as_mut().and_then(|d| d.get_mut(packed_key as usize)) {
                    *slot = idx as u32;
                }
            }
            TableKind::Exact => {
                self.exact.insert(exact_key(&entry.fm), idx);
            }
            TableKind::Lpm if def.keys.len() == 1 => {
                let l = lpm_plen(&entry.fm);
                let pos = match self.lpm1.iter().position(|(pl, _, _)| *pl <= l) {
                    Some(p) if self.lpm1[p].0 == l => p,
                    Some(p) => {
                        self.lpm1.insert(p, (l, prefix_mask(def.keys[0].width, l), HashMap::default()));
                        p
                    }
                    None => {
                        self.lpm1.push((l, prefix_mask(def.keys[0].width, l), HashMap::default()));
                        self.lpm1.len() - 1
                    }
                };
                self.lpm1[pos].2.insert(exact_key(&entry.fm)[0], idx);
            }
            TableKind::Lpm => {
                let l = lpm_plen(&entry.fm);
                let pos = match self.lpm.iter().position(|(pl, _)| *pl <= l) {
                    Some(p) if self.lpm[p].0 == l => p,
                    Some(p) => {
                        self.lpm.insert(p, (l, HashMap::default()));
                        p
                    }
                    None => {
                        self.lpm.push((l, HashMap::default()));
                        self.lpm.len() - 1
                    }
                };
                self.lpm[pos].1.insert(exact_key(&entry.fm), idx);
            }
            TableKind::Ternary => {
                let slab = &self.slab;
                let pos = self.ordered.partition_point(|&i| {
                    slab[i].as_ref().is_some_and(|o| o.priority >= entry.priority)
                });
                self.ordered.insert(pos, idx);
                self.index = OnceLock::new();
            }
        }
        self.hot[idx] = hot;
        self.slab[idx] = Some(entry);
        self.count += 1;
        Ok(())
    }

    pub fn modify(&mut self, p: &Program, t: usize, e: TableEntry) -> Result<(), StateError> {
        let (def, info) = (&p.table_defs[t], &p.table_infos[t]);
        if self.immutable {
            return Err(StateError::ConstEntries(info.name.clone()));
        }
        let fm = canon(def, info, &e.key)?;
        let (action, args) = check_action(p, info, &e.action)?;
        let priority = if def.kind == TableKind::Ternary { e.priority } else { 0 };
        let idx = self.find(def, &fm, priority).ok_or(StateError::NoSuchEntry)?;
        if let Some(ent) = self.slab[idx].as_mut() {
            (self.hot[idx], ent.spilled) = Hot::split(action, args);
            ent.orig.action = e.action;
        }
        Ok(())
    }

    pub fn delete(&mut self, p: &Program, t: usize, key: &[MatchKey], priority: i32) -> Result<(), StateError> {
        let (def, info) = (&p.table_defs[t], &p.table_infos[t]);
        if self.immutable {
            return Err(StateError::ConstEntries(info.name.clone()));
        }
        let fm = canon(def, info, key)?;
        let priority = if def.kind == TableKind::Ternary { priority } else { 0 };
        let idx = self.find(def, &fm, priority).ok_or(StateError::NoSuchEntry)?;
        self.remove_idx(def, idx);
        Ok(())
    }

    fn remove_idx(&mut self, def: &TableDef, idx: usize) {
        if let Some(e) = self.slab[idx].take() {
            match def.kind {
                TableKind::Exact if self.packed => {
                    if let Some(k) = pack(def, &exact_key(&e.fm)) {
                        self.exact1.remove(&k);
                        if let Some(slot) = self.dense.as_mut().and_then(|d| d.get_mut(k as usize)) {
                            *slot = DENSE_NONE;
                        }
                    }
                }
                TableKind::Exact => {
                    self.exact.remove(&exact_key(&e.fm));
                }
                TableKind::Lpm if def.keys.len() == 1 => {
                    let l = lpm_plen(&e.fm);
                    if let Some(pos) = self.lpm1.iter().position(|(pl, _, _)| *pl == l) {
                        self.lpm1[pos].2.remove(&exact_key(&e.fm)[0]);
                        if self.lpm1[pos].2.is_empty() {
                            self.lpm1.remove(pos);
                        }
                    }
                }
                TableKind::Lpm => {
                    let l = lpm_plen(&e.fm);
                    if let Some(pos) = self.lpm.iter().position(|(pl, _)| *pl == l) {
                        self.lpm[pos].1.remove(&exact_key(&e.fm));
                        if self.lpm[pos].1.is_empty() {
                            self.lpm.remove(pos);
                        }
                    }
                }
                TableKind::Ternary => {
                    self.ordered.retain(|&i| i != idx);
                    self.index = OnceLock::new();
                }
            }
            self.free.push(idx);
            self.count -= 1;
        }
    }

    pub fn entries(&self) -> Vec<TableEntry> {
        let mut v: Vec<&Entry> = self.slab.iter().flatten().collect();
        v.sort_by_key(|e| e.seq);
        v.into_iter().map(|e| e.orig.clone()).collect()
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn clear(&mut self, p: &Program, t: usize) {
        if self.immutable {
            return;
        }
        let def = &p.table_defs[t];
        for i in 0..self.slab.len() {
            self.remove_idx(def, i);
        }
        self.slab.clear();
        self.hot.clear();
        self.free.clear();
    }

    pub fn set_default(&mut self, p: &Program, t: usize, a: ActionCall) -> Result<(), StateError> {
        let info = &p.table_infos[t];
        if info.default_is_const {
            return Err(StateError::ConstDefault(info.name.clone()));
        }
        let (action, args) = check_action(p, info, &a)?;
        let (hot, spilled) = Hot::split(action, args);
        self.default = Some(DefaultAction { hot, spilled, call: a });
        Ok(())
    }

    pub fn reset_default(&mut self, p: &Program, t: usize) {
        let def = &p.table_defs[t];
        self.default = def.default.as_ref().map(|(a, args)| {
            let params = &p.action_infos[*a].params;
            let call = ActionCall {
                action: ActionId(*a),
                args: args.iter().zip(params).map(|(v, prm)| bytes_of(*v, prm.bitwidth)).collect(),
            };
            let (hot, spilled) = Hot::split(*a, args.clone().into_boxed_slice());
            DefaultAction { hot, spilled, call }
        });
    }

    pub fn get_default(&self) -> Option<ActionCall> {
        self.default.as_ref().map(|d| d.call.clone())
    }

    pub fn direct_counter(&self, p: &Program, t: usize, key: &[MatchKey], priority: i32) -> Result<(u64, u64), StateError> {
        let (def, info) = (&p.table_defs[t], &p.table_infos[t]);
        let fm = canon(def, info, key)?;
        let priority = if def.kind == TableKind::Ternary { priority } else { 0 };
        let idx = self.find(def, &fm, priority).ok_or(StateError::NoSuchEntry)?;
        let e = self.slab[idx].as_ref().ok_or(StateError::NoSuchEntry)?;
        Ok((e.counter.bytes.load(Relaxed), e.counter.packets.load(Relaxed)))
    }

    pub fn direct_counter_write(
        &self,
        p: &Program,
        t: usize,
        key: &[MatchKey],
        priority: i32,
        bytes: u64,
        packets: u64,
    ) -> Result<(), StateError> {
        let (def, info) = (&p.table_defs[t], &p.table_infos[t]);
        let fm = canon(def, info, key)?;
        let priority = if def.kind == TableKind::Ternary { priority } else { 0 };
        let idx = self.find(def, &fm, priority).ok_or(StateError::NoSuchEntry)?;
        let e = self.slab[idx].as_ref().ok_or(StateError::NoSuchEntry)?;
        e.counter.bytes.store(bytes, Relaxed);
        e.counter.packets.store(packets, Relaxed);
        Ok(())
    }

    /// Looks this table (`t`) up with the packet's key: the entry's (or
    /// default) action is returned and its data left in `args`.
    pub fn apply(
        &self,
        p: &Program,
        t: usize,
        pkt: &Pkt,
        key_scratch: &mut Vec<u128>,
        lpm: &mut Vec<u128>,
        args: &mut Vec<u128>,
    ) -> LookupResult {
        let def = &p.table_defs[t];
        let key_of = |k: &crate::ir::TableKey| {
            let v = match k.src {
                KeySrc::Slot(sl) => pkt.phv.f()[sl],
                KeySrc::Valid(h) => pkt.phv.valid[h] as u128,
            };
            k.mask.map_or(v, |m| v & m)
        };
        // Most tables have a key of a field or two: an array on the stack,
        // where pushing onto a Vec checked its capacity per field.
        let mut small = [0u128; SMALL_KEY];
        let key: &[u128] = if def.keys.len() <= SMALL_KEY {
            for (d, k) in small.iter_mut().zip(&def.keys) {
                *d = key_of(k);
            }
            &small[..def.keys.len()]
        } else {
            key_scratch.clear();
            key_scratch.extend(def.keys.iter().map(key_of));
            key_scratch
        };
        self.lookup_packet(p, t, pkt, key, lpm, args)
    }

    /// Looks this table (`t`) up with `key`, read from `pkt`, which a
    /// direct counter counts on a hit.
    pub fn lookup_packet(&self, p: &Program, t: usize, pkt: &Pkt, key: &[u128], lpm: &mut Vec<u128>, args: &mut Vec<u128>) -> LookupResult {
        let count = p.table_infos[t].direct_counter.map(|_| pkt.ingress_length as u64);
        self.lookup(&p.table_defs[t], key, lpm, args, count)
    }

    /// The first entry of `ordered` that matches `key` (the list scan).
    fn scan(&self, def: &TableDef, key: &[u128]) -> Option<usize> {
        self.ordered.iter().copied().find(|&i| self.slab[i].as_ref().is_some_and(|e| fm_matches(def, &e.fm, key)))
    }

    /// Looks `key` up; copies the action arguments into `args`. On a hit,
    /// counts the packet in the entry's direct counter if `count_bytes`.
    pub fn lookup(
        &self,
        def: &TableDef,
        key: &[u128],
        scratch: &mut Vec<u128>,
        args: &mut Vec<u128>,
        count_bytes: Option<u64>,
    ) -> LookupResult {
        let found = match def.kind {
            // Keyless: only the default action.
            _ if key.is_empty() => None,
            TableKind::Exact if self.dense.is_some() => {
                let d = self.dense.as_deref().unwrap_or(&[]);
                pack(def, key).and_then(|k| d.get(usize::try_from(k).ok()?)).filter(|&&i| i != DENSE_NONE).map(|&i| i as usize)
            }
            TableKind::Exact if key.len() == 1 => self.exact1.get(&key[0]).copied(),
            TableKind::Exact if self.packed => pack(def, key).and_then(|k| self.exact1.get(&k).copied()),
            TableKind::Exact => self.exact.get(key).copied(),
            TableKind::Lpm if key.len() == 1 => {
                self.lpm1.iter().find_map(|(_, m, map)| map.get(&(key[0] & m)).copied())
            }
            TableKind::Lpm => {
                let mut f = None;
                let li = def.keys.iter().position(|k| k.kind == KeyKind::Lpm);
                for (plen, m) in &self.lpm {
                    scratch.clear();
                    scratch.extend_from_slice(key);
                    if let Some(li) = li {
                        scratch[li] &= prefix_mask(def.keys[li].width, *plen);
                    }
                    if let Some(&i) = m.get(scratch.as_slice()) {
                        f = Some(i);
                        break;
                    }
                }
                f
            }
            TableKind::Ternary => match self.index.get_or_init(|| IntervalIndex::build(def, &self.slab, &self.ordered)) {
                Some(ix) => ix.find(key),
                None => self.scan(def, key),
            },
        };
        args.clear();
        // (the maps and the index hold live entries only)
        if let Some(i) = found {
            debug_assert!(self.slab[i].is_some(), "a map or the index holds a removed entry");
            let h = &self.hot[i];
            if let Some(b) = count_bytes {
                if let Some(e) = self.slab[i].as_ref() {
                    e.counter.add(b);
                }
            }
            h.copy_args(args, || self.slab[i].as_ref().map(|e| &e.spilled[..]));
            return LookupResult { hit: true, action: Some(h.action as usize) };
        }
        self.default_into(args)
    }

    /// A miss: the default action, its data in `args` (appended: callers
    /// clear it). A table without key fields is only this (P4Runtime).
    #[inline]
    pub fn default_into(&self, args: &mut Vec<u128>) -> LookupResult {
        match &self.default {
            Some(d) => {
                d.hot.copy_args(args, || Some(&d.spilled[..]));
                LookupResult { hit: false, action: Some(d.hot.action as usize) }
            }
            None => LookupResult { hit: false, action: None },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{ActionId, NextMode, TableKey};

    fn key(kind: KeyKind, width: u32) -> TableKey {
        TableKey { src: KeySrc::Slot(0), mask: None, width, kind }
    }

    fn def(keys: Vec<TableKey>) -> TableDef {
        TableDef {
            keys,
            kind: TableKind::Ternary,
            next: NextMode::HitMiss { hit: None, miss: None },
            base_default_next: None,
            default: None,
            const_entries: vec![],
            fixed: None,
            fixed_next: None,
        }
    }

    /// A slab of `fms` (in insertion order, with their priorities) and its
    /// `ordered` list as `insert` keeps it: larger priority first, then
    /// the earliest inserted.
    fn table(fms: Vec<(Vec<Fm>, i32)>) -> (Vec<Option<Entry>>, Vec<usize>) {
        let slab: Vec<Option<Entry>> = fms
            .into_iter()
            .enumerate()
            .map(|(i, (fm, priority))| {
                Some(Entry {
                    orig: TableEntry { key: vec![], priority, action: ActionCall { action: ActionId(0), args: vec![] } },
                    fm,
                    priority,
                    spilled: Box::new([]),
                    counter: Arc::default(),
                    seq: i as u64,
                })
            })
            .collect();
        let mut ordered: Vec<usize> = (0..slab.len()).collect();
        ordered.sort_by_key(|&i| (-slab[i].as_ref().unwrap().priority, i));
        (slab, ordered)
    }

    fn scan(def: &TableDef, slab: &[Option<Entry>], ordered: &[usize], k: &[u128]) -> Option<usize> {
        ordered.iter().copied().find(|&i| slab[i].as_ref().is_some_and(|e| fm_matches(def, &e.fm, k)))
    }

    /// An action's data reaches the lookup's `args` whole and appended,
    /// from the hot copy (up to HOT_ARGS values) or the spilled one, with
    /// nothing of another entry's left past its end.
    #[test]
    fn action_data_of_every_width_is_appended_exactly() {
        for n in 0..=HOT_ARGS + 2 {
            let data: Vec<u128> = (0..n as u128).map(|i| 0x1000 + i).collect();
            let (hot, spilled) = Hot::split(7, data.clone().into_boxed_slice());
            assert_eq!(hot.action, 7);
            for before in [vec![], vec![99u128], vec![98, 99, 97, 96]] {
                let mut args = before.clone();
                args.reserve(8);
                // Stale values past the end, as a reused vector holds them.
                args.extend_from_slice(&[0xdead; 8]);
                args.truncate(before.len());
                hot.copy_args(&mut args, || Some(&spilled[..]));
                let want: Vec<u128> = before.iter().chain(&data).copied().collect();
                assert_eq!(args, want, "{n} values after {before:?}");
            }
        }
    }

    /// An exact table's fields side by side in one value: each pair of
    /// values its own, and a value wider than its field (which no entry
    /// can hold) gives no key rather than another pair's.
    #[test]
    fn packed_exact_keys_are_distinct_and_refuse_wide_values() {
        let mut d = def(vec![key(KeyKind::Exact, 16), key(KeyKind::Exact, 16)]);
        d.kind = TableKind::Exact;
        assert!(packs(&d));
        let mut seen = std::collections::HashSet::new();
        for a in [0u128, 1, 2, 0xffff] {
            for b in [0u128, 1, 2, 0xffff] {
                assert!(seen.insert(pack(&d, &[a, b]).expect("fits")), "({a}, {b}) collides");
            }
        }
        assert_eq!(pack(&d, &[0, 1 << 16]), None);
        assert_eq!(pack(&d, &[1 << 16, 0]), None);
        let mut wide = def(vec![key(KeyKind::Exact, 64), key(KeyKind::Exact, 65)]);
        wide.kind = TableKind::Exact;
        assert!(!packs(&wide));
    }

    /// The controller's RED profile (ecn_red: egress port exact, queue depth
    /// range; Kmin 67, Kmax 267 as int-incast installs at 25 Gb/s): the index
    /// answers as the list scan does at every depth, in a few steps.
    #[test]
    fn interval_index_answers_a_red_profile_as_the_scan_does() {
        let d = def(vec![key(KeyKind::Exact, 9), key(KeyKind::Range, 19)]);
        let mut fms = vec![];
        for port in [1u128, 2] {
            for lo in 68..=267u128 {
                fms.push((vec![Fm::Exact(port), Fm::Range(lo, lo)], 1));
            }
            fms.push((vec![Fm::Exact(port), Fm::Range(268, (1 << 19) - 1)], 1));
        }
        let (slab, ordered) = table(fms);
        let ix = IntervalIndex::build(&d, &slab, &ordered).expect("fits an index");
        assert_eq!(ix.field, Some(1));
        assert_eq!(ix.groups.len(), 2);
        for port in [0u128, 1, 2, 3] {
            for depth in (0..400).chain([(1 << 19) - 2, (1 << 19) - 1]) {
                let k = [port, depth];
                assert_eq!(ix.find(&k), scan(&d, &slab, &ordered, &k), "port {port} depth {depth}");
            }
        }
    }

    /// Random overlapping ranges, prefix-shaped ternaries, wildcards and
    /// priorities: the index always picks the entry the scan picks; a
    /// ternary mask with holes, or two narrowed fields, get no index.
    #[test]
    fn interval_index_matches_the_scan_on_random_tables() {
        let mut rng = crate::rng::Rng::new(42);
        let mut r = |n: u64| rng.next_u64() % n;
        let d = def(vec![key(KeyKind::Exact, 4), key(KeyKind::Ternary, 8), key(KeyKind::Range, 8)]);
        for round in 0..200 {
            let n = 1 + r(40) as usize;
            let mut fms = vec![];
            for _ in 0..n {
                let port = r(3) as u128;
                let field = match r(4) {
                    0 => {
                        let plen = r(9) as u32;
                        let m = prefix_mask(8, plen);
                        vec![Fm::Exact(port), Fm::Tern(r(256) as u128 & m, m), Fm::Range(0, 255)]
                    }
                    1 => vec![Fm::Exact(port), Fm::Tern(0, 0), Fm::Range(0, 255)],
                    _ => {
                        let (a, b) = (r(256) as u128, r(256) as u128);
                        vec![Fm::Exact(port), Fm::Tern(0, 0), Fm::Range(a.min(b), a.max(b))]
                    }
                };
                fms.push((field, r(4) as i32));
            }
            let (slab, ordered) = table(fms.clone());
            // Narrowed on field 1 and on field 2 in the same table: no index.
            let narrows = |f: usize| {
                fms.iter().any(|(fm, _)| !is_wildcard(interval(&fm[f], 8).unwrap(), 8))
            };
            let ix = IntervalIndex::build(&d, &slab, &ordered);
            if narrows(1) && narrows(2) {
                assert!(ix.is_none(), "round {round}");
                continue;
            }
            let ix = ix.expect("one narrowed field");
            for port in 0..4u128 {
                for v in 0..256u128 {
                    let k = [port, v, v];
                    assert_eq!(ix.find(&k), scan(&d, &slab, &ordered, &k), "round {round}: {port} {v}");
                }
            }
        }
        let (slab, ordered) = table(vec![(vec![Fm::Exact(0), Fm::Tern(0b1010, 0b1010), Fm::Range(0, 255)], 1)]);
        assert!(IntervalIndex::build(&d, &slab, &ordered).is_none(), "a mask with holes is no interval");
    }
}
