//! P4Runtime entities ↔ engine state: Write updates, Read queries, and the
//! controller packet headers.
use crate::binding::{BoundTable, Binding, ControllerHeader, FieldKind, Scope};
use crate::bytes::{self, BytesError};
use crate::proto::p4::v1 as p4v1;
use crate::proto::p4::v1::{entity::Entity as E, field_match::FieldMatchType as Fmt, update::Type as UpdType};
use crate::installed::{lock, Pipeline, PortForm, PreWritten};
use pipeline::{ActionCall, CounterValue, ErrorCode, MatchKey, Replica, StateError, TableEntry};
use tonic::Code;

/// The outcome of one update or query that failed.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdErr {
    pub code: Code,
    pub msg: String,
}

impl UpdErr {
    pub fn new(code: Code, msg: impl Into<String>) -> UpdErr {
        UpdErr { code, msg: msg.into() }
    }
}

fn inval(msg: impl Into<String>) -> UpdErr {
    UpdErr::new(Code::InvalidArgument, msg)
}

fn range(what: &str, e: BytesError) -> UpdErr {
    UpdErr::new(Code::OutOfRange, format!("{what}: {e}"))
}

impl From<StateError> for UpdErr {
    fn from(e: StateError) -> UpdErr {
        let code = match e.code() {
            ErrorCode::AlreadyExists => Code::AlreadyExists,
            ErrorCode::NotFound => Code::NotFound,
            ErrorCode::ResourceExhausted => Code::ResourceExhausted,
            ErrorCode::InvalidArgument => Code::InvalidArgument,
            ErrorCode::OutOfRange => Code::OutOfRange,
            ErrorCode::PermissionDenied => Code::PermissionDenied,
        };
        UpdErr::new(code, e.to_string())
    }
}

type R<T> = Result<T, UpdErr>;

/// The table's default action, if it has one.
fn get_default(st: &pipeline::State, t: pipeline::TableId) -> Option<ActionCall> {
    Some(st.table_get_default(t)).filter(|a| a.action.0 != usize::MAX)
}

fn table(b: &Binding, id: u32) -> R<&BoundTable> {
    b.tables.get(&id).ok_or_else(|| UpdErr::new(Code::NotFound, format!("unknown table id {id}")))
}

// ------------------------------------------------------------------ keys

/// Turns a P4Runtime match into the engine's key (one MatchKey per field,
/// in JSON key order; omitted fields are don't-care).
fn to_key(t: &BoundTable, m: &[p4v1::FieldMatch]) -> R<Vec<MatchKey>> {
    let mut slots: Vec<Option<MatchKey>> = vec![None; t.fields.len()];
    for fm in m {
        let pos = *t.field_pos.get(&fm.field_id).ok_or_else(|| {
            inval(format!("unknown match field id {} for table '{}'", fm.field_id, t.name))
        })?;
        if slots[pos].is_some() {
            return Err(inval(format!("match field id {} given twice", fm.field_id)));
        }
        let f = &t.fields[pos];
        let what = format!("match field '{}'", f.name);
        let w = f.bitwidth;
        let k = match (&fm.field_match_type, f.kind) {
            (Some(Fmt::Exact(x)), FieldKind::Exact) => {
                MatchKey::Exact(bytes::to_width(&x.value, w).map_err(|e| range(&what, e))?)
            }
            (Some(Fmt::Lpm(x)), FieldKind::Lpm) => {
                let v = bytes::to_width(&x.value, w).map_err(|e| range(&what, e))?;
                if x.prefix_len < 0 || x.prefix_len as u32 > w {
                    return Err(inval(format!("{what}: prefix length {} out of 1..={w}", x.prefix_len)));
                }
                if x.prefix_len == 0 {
                    return Err(inval(format!(
                        "{what}: a prefix length of 0 is a don't-care match: omit the field"
                    )));
                }
                if bytes::has_bits_outside(&v, &bytes::prefix_mask(w, x.prefix_len as u32)) {
                    return Err(inval(format!("{what}: value has bits set beyond the prefix length")));
                }
                MatchKey::Lpm { value: v, prefix_len: x.prefix_len as u32 }
            }
            (Some(Fmt::Ternary(x)), FieldKind::Ternary) => {
                let v = bytes::to_width(&x.value, w).map_err(|e| range(&what, e))?;
                let mk = bytes::to_width(&x.mask, w).map_err(|e| range(&format!("{what} mask"), e))?;
                if bytes::is_zero(&mk) {
                    return Err(inval(format!("{what}: an all-zero mask is a don't-care match: omit the field")));
                }
                if bytes::has_bits_outside(&v, &mk) {
                    return Err(inval(format!("{what}: value has bits set outside the mask")));
                }
                MatchKey::Ternary { value: v, mask: mk }
            }
            (Some(Fmt::Range(x)), FieldKind::Range) => {
                let lo = bytes::to_width(&x.low, w).map_err(|e| range(&format!("{what} low"), e))?;
                let hi = bytes::to_width(&x.high, w).map_err(|e| range(&format!("{what} high"), e))?;
                if bytes::to_u128(&lo) > bytes::to_u128(&hi) {
                    return Err(inval(format!("{what}: low is greater than high")));
                }
                if bytes::is_zero(&lo) && hi == bytes::max_value(w) {
                    return Err(inval(format!("{what}: a full range is a don't-care match: omit the field")));
                }
                MatchKey::Range { low: lo, high: hi }
            }
            (Some(Fmt::Optional(x)), FieldKind::Optional) => {
                MatchKey::Optional(Some(bytes::to_width(&x.value, w).map_err(|e| range(&what, e))?))
            }
            (None, _) => return Err(inval(format!("{what}: no match given"))),
            (Some(_), k) => return Err(inval(format!("{what}: wrong match type, the field is {k:?}"))),
        };
        slots[pos] = Some(k);
    }
    let mut key = Vec::with_capacity(slots.len());
    for (pos, s) in slots.into_iter().enumerate() {
        let f = &t.fields[pos];
        key.push(match s {
            Some(k) => k,
            None => match f.kind {
                FieldKind::Exact => {
                    return Err(inval(format!("exact match field '{}' (id {}) is missing", f.name, f.id)))
                }
                FieldKind::Lpm => MatchKey::Lpm { value: vec![0; bytes::width_bytes(f.bitwidth)], prefix_len: 0 },
                FieldKind::Ternary => MatchKey::Ternary {
                    value: vec![0; bytes::width_bytes(f.bitwidth)],
                    mask: vec![0; bytes::width_bytes(f.bitwidth)],
                },
                FieldKind::Range => MatchKey::Range {
                    low: vec![0; bytes::width_bytes(f.bitwidth)],
                    high: bytes::max_value(f.bitwidth),
                },
                FieldKind::Optional => MatchKey::Optional(None),
            },
        });
    }
    Ok(key)
}

/// The engine's key back to P4Runtime (don't-care fields omitted, values
/// canonical).
fn from_key(t: &BoundTable, key: &[MatchKey]) -> Vec<p4v1::FieldMatch> {
    use p4v1::field_match as fm;
    let mut out = Vec::new();
    for (f, k) in t.fields.iter().zip(key) {
        let m = match k {
            MatchKey::Exact(v) => Some(Fmt::Exact(fm::Exact { value: bytes::canonical(v) })),
            MatchKey::Lpm { prefix_len: 0, .. } => None,
            MatchKey::Lpm { value, prefix_len } => {
                Some(Fmt::Lpm(fm::Lpm { value: bytes::canonical(value), prefix_len: *prefix_len as i32 }))
            }
            MatchKey::Ternary { mask, .. } if bytes::is_zero(mask) => None,
            MatchKey::Ternary { value, mask } => {
                if f.kind == FieldKind::Optional {
                    Some(Fmt::Optional(fm::Optional { value: bytes::canonical(value) }))
                } else {
                    Some(Fmt::Ternary(fm::Ternary { value: bytes::canonical(value), mask: bytes::canonical(mask) }))
                }
            }
            MatchKey::Range { low, high } if bytes::is_zero(low) && bytes::canonical(high) == bytes::canonical(&bytes::max_value(f.bitwidth)) => None,
            MatchKey::Range { low, high } => {
                Some(Fmt::Range(fm::Range { low: bytes::canonical(low), high: bytes::canonical(high) }))
            }
            MatchKey::Optional(None) => None,
            MatchKey::Optional(Some(v)) => Some(Fmt::Optional(fm::Optional { value: bytes::canonical(v) })),
        };
        if let Some(m) = m {
            out.push(p4v1::FieldMatch { field_id: f.id, field_match_type: Some(m) });
        }
    }
    out
}

fn check_priority(t: &BoundTable, priority: i32) -> R<()> {
    if t.needs_priority && priority <= 0 {
        return Err(inval(format!(
            "table '{}' has ternary/range/optional fields: entries need a priority > 0",
            t.name
        )));
    }
    if !t.needs_priority && priority != 0 {
        return Err(inval(format!("table '{}' takes no priority (it must be 0)", t.name)));
    }
    Ok(())
}

// --------------------------------------------------------------- actions

fn to_action(b: &Binding, t: &BoundTable, ta: &Option<p4v1::TableAction>, default: bool) -> R<ActionCall> {
    use p4v1::table_action::Type;
    let a = match ta.as_ref().and_then(|x| x.r#type.as_ref()) {
        Some(Type::Action(a)) => a,
        Some(_) => {
            return Err(inval(format!(
                "table '{}' is a direct table: give an action, not an action profile member/group",
                t.name
            )))
        }
        None => return Err(inval("no action given")),
    };
    let (eid, scope) = *t
        .actions
        .get(&a.action_id)
        .ok_or_else(|| inval(format!("action id {} is not an action of table '{}'", a.action_id, t.name)))?;
    if default && scope == Scope::TableOnly {
        return Err(UpdErr::new(
            Code::PermissionDenied,
            format!("action id {} is @tableonly: it cannot be the default action", a.action_id),
        ));
    }
    if !default && scope == Scope::DefaultOnly {
        return Err(inval(format!("action id {} is @defaultonly: it can only be the default action", a.action_id)));
    }
    let ba = b.actions.get(&a.action_id).ok_or_else(|| inval(format!("unknown action id {}", a.action_id)))?;
    let mut args: Vec<Option<Vec<u8>>> = vec![None; ba.params.len()];
    for p in &a.params {
        let pos = *ba
            .param_pos
            .get(&p.param_id)
            .ok_or_else(|| inval(format!("unknown parameter id {} for action '{}'", p.param_id, ba.name)))?;
        if args[pos].is_some() {
            return Err(inval(format!("parameter id {} given twice", p.param_id)));
        }
        let bp = &ba.params[pos];
        args[pos] = Some(
            bytes::to_width(&p.value, bp.bitwidth)
                .map_err(|e| range(&format!("parameter '{}' of action '{}'", bp.name, ba.name), e))?,
        );
    }
    let mut out = Vec::with_capacity(args.len());
    for (pos, a) in args.into_iter().enumerate() {
        out.push(a.ok_or_else(|| {
            inval(format!("parameter '{}' of action '{}' is missing", ba.params[pos].name, ba.name))
        })?);
    }
    Ok(ActionCall { action: eid, args: out })
}

fn from_action(b: &Binding, t: &BoundTable, a: &ActionCall) -> Option<p4v1::TableAction> {
    let id = *t.action_rev.get(&a.action)?;
    let ba = b.actions.get(&id)?;
    let params = ba
        .params
        .iter()
        .zip(&a.args)
        .map(|(p, v)| p4v1::action::Param { param_id: p.id, value: bytes::canonical(v) })
        .collect();
    Some(p4v1::TableAction {
        r#type: Some(p4v1::table_action::Type::Action(p4v1::Action { action_id: id, params })),
    })
}

// ----------------------------------------------------------------- write

fn counter_value(d: &p4v1::CounterData) -> R<CounterValue> {
    if d.byte_count < 0 || d.packet_count < 0 {
        return Err(inval("counter values cannot be negative"));
    }
    Ok(CounterValue { bytes: d.byte_count as u64, packets: d.packet_count as u64 })
}

fn counter_data(v: CounterValue) -> p4v1::CounterData {
    p4v1::CounterData { byte_count: v.bytes as i64, packet_count: v.packets as i64 }
}

fn index_of(i: &Option<p4v1::Index>, size: u64) -> R<Option<u64>> {
    match i {
        None => Ok(None),
        Some(i) if i.index < 0 => Err(inval(format!("negative index {}", i.index))),
        Some(i) if i.index as u64 >= size => {
            Err(UpdErr::new(Code::OutOfRange, format!("index {} out of range (size {size})", i.index)))
        }
        Some(i) => Ok(Some(i.index as u64)),
    }
}

/// UNIMPLEMENTED for the entities this target has no counterpart of.
fn unsupported(e: &E) -> UpdErr {
    let what = match e {
        E::ExternEntry(_) => "extern entries",
        E::ActionProfileMember(_) | E::ActionProfileGroup(_) => "action profiles",
        E::MeterEntry(_) | E::DirectMeterEntry(_) => "meters",
        E::ValueSetEntry(_) => "value sets",
        E::DigestEntry(_) => "digests",
        _ => "these entities",
    };
    UpdErr::new(Code::Unimplemented, format!("{what} are not supported"))
}

/// The cells an index names: one, or all of them when it is absent.
fn cell_range(idx: Option<u64>, size: u64) -> std::ops::Range<u64> {
    match idx {
        Some(i) => i..i + 1,
        None => 0..size,
    }
}

/// The (id, index) cells a counter or register Read names: id 0 reads
/// every array (whatever the index says), no index every cell of one.
fn read_cells(id: u32, order: &[u32], size_of: impl Fn(u32) -> Option<u64>, index: &Option<p4v1::Index>,
              what: &str) -> R<Vec<(u32, u64)>> {
    if id == 0 {
        return Ok(order.iter().flat_map(|&a| (0..size_of(a).unwrap_or(0)).map(move |i| (a, i))).collect());
    }
    let size = size_of(id).ok_or_else(|| UpdErr::new(Code::NotFound, format!("unknown {what} id {id}")))?;
    Ok(cell_range(index_of(index, size)?, size).map(|i| (id, i)).collect())
}

/// Applies one update of a Write batch.
pub fn apply_update(pl: &Pipeline, b: &Binding, u: &p4v1::Update) -> R<()> {
    let ty = UpdType::try_from(u.r#type).unwrap_or(UpdType::Unspecified);
    if ty == UpdType::Unspecified {
        return Err(inval("update type is UNSPECIFIED"));
    }
    let ent = u.entity.as_ref().and_then(|e| e.entity.as_ref()).ok_or_else(|| inval("update has no entity"))?;
    let st = &pl.state;
    match ent {
        E::TableEntry(te) => write_table_entry(pl, b, ty, te),
        E::CounterEntry(ce) => {
            if ty != UpdType::Modify {
                return Err(inval("counter entries can only be modified"));
            }
            let c = b
                .counters
                .get(&ce.counter_id)
                .ok_or_else(|| UpdErr::new(Code::NotFound, format!("unknown counter id {}", ce.counter_id)))?;
            let idx = index_of(&ce.index, c.size)?;
            let Some(d) = &ce.data else { return Ok(()) };
            let v = counter_value(d)?;
            for i in cell_range(idx, c.size) {
                st.counter_write(c.counter, i, v)?;
            }
            Ok(())
        }
        E::DirectCounterEntry(dc) => {
            if ty != UpdType::Modify {
                return Err(inval("direct counter entries can only be modified"));
            }
            let te = dc.table_entry.as_ref().ok_or_else(|| inval("direct counter entry without table_entry"))?;
            let t = table(b, te.table_id)?;
            if t.direct_counter.is_none() {
                return Err(inval(format!("table '{}' has no direct counter", t.name)));
            }
            let key = to_key(t, &te.r#match)?;
            let Some(d) = &dc.data else { return Ok(()) };
            let v = counter_value(d)?;
            st.direct_counter_write(t.table, &key, te.priority, v)?;
            Ok(())
        }
        E::RegisterEntry(re) => {
            if ty != UpdType::Modify {
                return Err(inval("register entries can only be modified"));
            }
            let r = b
                .registers
                .get(&re.register_id)
                .ok_or_else(|| UpdErr::new(Code::NotFound, format!("unknown register id {}", re.register_id)))?;
            let idx = index_of(&re.index, r.size)?;
            let data = match re.data.as_ref().and_then(|d| d.data.as_ref()) {
                Some(p4v1::p4_data::Data::Bitstring(v)) => {
                    bytes::to_width(v, r.bitwidth).map_err(|e| range(&format!("register '{}'", r.name), e))?
                }
                Some(_) => return Err(inval(format!("register '{}' holds a bitstring", r.name))),
                None => return Err(inval("register entry without data")),
            };
            for i in cell_range(idx, r.size) {
                st.register_write(r.register, i, &data)?;
            }
            Ok(())
        }
        E::PacketReplicationEngineEntry(pre) => write_pre(pl, ty, pre),
        other => Err(unsupported(other)),
    }
}

fn write_table_entry(pl: &Pipeline, b: &Binding, ty: UpdType, te: &p4v1::TableEntry) -> R<()> {
    let st = &pl.state;
    let t = table(b, te.table_id)?;
    if te.is_const {
        return Err(inval("is_const must be false in a write"));
    }
    if te.is_default_action {
        if ty != UpdType::Modify {
            return Err(inval("the default entry can only be modified (not inserted or deleted)"));
        }
        if !te.r#match.is_empty() || te.priority != 0 {
            return Err(inval("the default entry takes no match and no priority"));
        }
        if t.default_is_const {
            return Err(UpdErr::new(
                Code::PermissionDenied,
                format!("the default action of table '{}' is const", t.name),
            ));
        }
        if te.action.is_none() {
            st.table_reset_default(t.table);
        } else {
            let a = to_action(b, t, &te.action, true)?;
            st.table_set_default(t.table, a)?;
        }
        return Ok(());
    }
    if t.is_const {
        return Err(UpdErr::new(
            Code::PermissionDenied,
            format!("the entries of table '{}' are const (declared in the P4 program)", t.name),
        ));
    }
    if t.fields.is_empty() {
        return Err(inval(format!("table '{}' is keyless: only its default entry can be written", t.name)));
    }
    let key = to_key(t, &te.r#match)?;
    check_priority(t, te.priority)?;
    match ty {
        UpdType::Insert | UpdType::Modify => {
            let action = to_action(b, t, &te.action, false)?;
            let entry = TableEntry { key: key.clone(), priority: te.priority, action };
            if ty == UpdType::Insert {
                if t.size > 0 && st.table_len(t.table) >= t.size as usize {
                    return Err(UpdErr::new(
                        Code::ResourceExhausted,
                        format!("table '{}' is full ({} entries)", t.name, t.size),
                    ));
                }
                st.table_insert(t.table, entry)?;
            } else {
                st.table_modify(t.table, entry)?;
            }
            if let (Some(d), Some(_)) = (&te.counter_data, t.direct_counter) {
                st.direct_counter_write(t.table, &key, te.priority, counter_value(d)?)?;
            }
            Ok(())
        }
        UpdType::Delete => {
            st.table_delete(t.table, &key, te.priority)?;
            Ok(())
        }
        UpdType::Unspecified => Err(inval("update type is UNSPECIFIED")),
    }
}

/// A replica list as the engine takes it, and the book of how it was written.
struct WrittenReplicas {
    engine: Vec<Replica>,
    book: PreWritten,
}

fn replicas(rs: &[p4v1::Replica]) -> R<WrittenReplicas> {
    use p4v1::replica::PortKind;
    let mut engine = Vec::with_capacity(rs.len());
    let mut book = PreWritten::default();
    for r in rs {
        #[allow(deprecated)]
        let (port, form) = match &r.port_kind {
            Some(PortKind::EgressPort(p)) => (*p, PortForm::Uint32),
            Some(PortKind::Port(b)) => {
                let v = bytes::to_width(b, 32).map_err(|e| range("replica port", e))?;
                (u32::from_be_bytes([v[0], v[1], v[2], v[3]]), PortForm::Bytes)
            }
            None => return Err(inval("replica without a port")),
        };
        if port > 511 {
            return Err(UpdErr::new(Code::OutOfRange, format!("replica port {port} is not a 9-bit v1model port")));
        }
        if r.instance > u16::MAX as u32 {
            return Err(UpdErr::new(Code::OutOfRange, format!("replica instance {} does not fit 16 bits", r.instance)));
        }
        if !r.backup_replicas.is_empty() {
            return Err(UpdErr::new(Code::Unimplemented, "backup replicas are not supported"));
        }
        let rep = Replica { port, rid: r.instance as u16 };
        // The same pair in the other port form is the same replica.
        if engine.contains(&rep) {
            return Err(inval(format!("replica (port {port}, instance {}) given twice", r.instance)));
        }
        engine.push(rep);
        book.port_forms.insert((port, rep.rid), form);
    }
    Ok(WrittenReplicas { engine, book })
}

fn write_pre(pl: &Pipeline, ty: UpdType, pre: &p4v1::PacketReplicationEngineEntry) -> R<()> {
    use p4v1::packet_replication_engine_entry::Type;
    let st = &pl.state;
    // Held across the engine change: a Read takes it too, so it never pairs
    // new replicas with an old book.
    let mut book = lock(&pl.pre);
    match &pre.r#type {
        Some(Type::CloneSessionEntry(cs)) => {
            if cs.session_id == 0 {
                return Err(inval("clone session id 0 is not valid"));
            }
            let exists = st.clone_session_get(cs.session_id).is_some();
            match ty {
                UpdType::Insert | UpdType::Modify => {
                    if ty == UpdType::Insert && exists {
                        return Err(UpdErr::new(
                            Code::AlreadyExists,
                            format!("clone session {} exists", cs.session_id),
                        ));
                    }
                    if ty == UpdType::Modify && !exists {
                        return Err(UpdErr::new(Code::NotFound, format!("no clone session {}", cs.session_id)));
                    }
                    if cs.packet_length_bytes < 0 {
                        return Err(inval("packet_length_bytes cannot be negative"));
                    }
                    // The engine has one class of service; accepting another
                    // would read back as 0. PI answers the same.
                    if cs.class_of_service != 0 {
                        return Err(UpdErr::new(
                            Code::Unimplemented,
                            format!("class_of_service {}: only 0 is supported", cs.class_of_service),
                        ));
                    }
                    let w = replicas(&cs.replicas)?;
                    let trunc = if cs.packet_length_bytes > 0 { Some(cs.packet_length_bytes as u32) } else { None };
                    st.clone_session_set(cs.session_id, w.engine, trunc);
                    book.clone_sessions.insert(cs.session_id, w.book);
                    Ok(())
                }
                _ => {
                    if !exists {
                        return Err(UpdErr::new(Code::NotFound, format!("no clone session {}", cs.session_id)));
                    }
                    st.clone_session_delete(cs.session_id)?;
                    book.clone_sessions.remove(&cs.session_id);
                    Ok(())
                }
            }
        }
        Some(Type::MulticastGroupEntry(mg)) => {
            if mg.multicast_group_id == 0 || mg.multicast_group_id > u16::MAX as u32 {
                return Err(inval(format!("multicast group id {} is not in 1..=65535", mg.multicast_group_id)));
            }
            let g = mg.multicast_group_id as u16;
            let exists = st.mcast_group_get(g).is_some();
            match ty {
                UpdType::Insert | UpdType::Modify => {
                    if ty == UpdType::Insert && exists {
                        return Err(UpdErr::new(Code::AlreadyExists, format!("multicast group {g} exists")));
                    }
                    if ty == UpdType::Modify && !exists {
                        return Err(UpdErr::new(Code::NotFound, format!("no multicast group {g}")));
                    }
                    let mut w = replicas(&mg.replicas)?;
                    w.book.metadata = mg.metadata.clone();
                    st.mcast_group_set(g, w.engine);
                    book.mcast_groups.insert(g, w.book);
                    Ok(())
                }
                _ => {
                    if !exists {
                        return Err(UpdErr::new(Code::NotFound, format!("no multicast group {g}")));
                    }
                    st.mcast_group_delete(g)?;
                    book.mcast_groups.remove(&g);
                    Ok(())
                }
            }
        }
        None => Err(inval("packet replication entry without a clone session or multicast group")),
    }
}

// ------------------------------------------------------------------ read

fn entry_msg(b: &Binding, t: &BoundTable, e: &TableEntry) -> p4v1::TableEntry {
    p4v1::TableEntry {
        table_id: t.id,
        r#match: from_key(t, &e.key),
        action: from_action(b, t, &e.action),
        priority: if t.needs_priority { e.priority } else { 0 },
        is_const: t.is_const,
        ..Default::default()
    }
}

fn read_table(pl: &Pipeline, b: &Binding, t: &BoundTable, q: &p4v1::TableEntry, out: &mut Vec<p4v1::Entity>) -> R<()> {
    let st = &pl.state;
    let want_counters = q.counter_data.is_some() && t.direct_counter.is_some();
    if q.is_default_action {
        if let Some(a) = get_default(st, t.table) {
            let msg = p4v1::TableEntry {
                table_id: t.id,
                action: from_action(b, t, &a),
                is_default_action: true,
                ..Default::default()
            };
            out.push(p4v1::Entity { entity: Some(E::TableEntry(msg)) });
        }
        return Ok(());
    }
    let action_filter = match q.action.as_ref().and_then(|a| a.r#type.as_ref()) {
        Some(p4v1::table_action::Type::Action(a)) => Some(a.action_id),
        _ => None,
    };
    let push = |e: &TableEntry, out: &mut Vec<p4v1::Entity>| -> R<()> {
        let mut msg = entry_msg(b, t, e);
        if let Some(id) = action_filter {
            let this = match &msg.action.as_ref().and_then(|a| a.r#type.as_ref()) {
                Some(p4v1::table_action::Type::Action(a)) => a.action_id,
                _ => 0,
            };
            if this != id {
                return Ok(());
            }
        }
        if q.priority != 0 && msg.priority != q.priority {
            return Ok(());
        }
        if want_counters {
            let v = st.direct_counter_read(t.table, &e.key, e.priority)?;
            msg.counter_data = Some(counter_data(v));
        }
        out.push(p4v1::Entity { entity: Some(E::TableEntry(msg)) });
        Ok(())
    };
    if !q.r#match.is_empty() {
        let key = to_key(t, &q.r#match)?;
        for e in st.table_entries(t.table) {
            if e.key == key && (!t.needs_priority || e.priority == q.priority) {
                push(&e, out)?;
            }
        }
        return Ok(());
    }
    for e in st.table_entries(t.table) {
        push(&e, out)?;
    }
    Ok(())
}

/// Answers one entity of a Read request (wildcards expand).
pub fn read_entity(pl: &Pipeline, b: &Binding, q: &p4v1::Entity, out: &mut Vec<p4v1::Entity>) -> R<()> {
    let st = &pl.state;
    let ent = q.entity.as_ref().ok_or_else(|| inval("empty entity in read request"))?;
    match ent {
        E::TableEntry(te) => {
            if te.table_id == 0 {
                for id in &b.table_order {
                    let t = &b.tables[id];
                    let wild = p4v1::TableEntry { table_id: *id, counter_data: te.counter_data, ..Default::default() };
                    read_table(pl, b, t, &wild, out)?;
                }
                Ok(())
            } else {
                read_table(pl, b, table(b, te.table_id)?, te, out)
            }
        }
        E::CounterEntry(ce) => {
            let cells = read_cells(ce.counter_id, &b.counter_order, |id| b.counters.get(&id).map(|c| c.size),
                                   &ce.index, "counter")?;
            for (id, i) in cells {
                let v = st.counter_read(b.counters[&id].counter, i)?;
                out.push(p4v1::Entity {
                    entity: Some(E::CounterEntry(p4v1::CounterEntry {
                        counter_id: id,
                        index: Some(p4v1::Index { index: i as i64 }),
                        data: Some(counter_data(v)),
                    })),
                });
            }
            Ok(())
        }
        E::DirectCounterEntry(dc) => {
            let te = dc.table_entry.clone().unwrap_or_default();
            let tables: Vec<u32> = if te.table_id == 0 {
                b.table_order.iter().copied().filter(|id| b.tables[id].direct_counter.is_some()).collect()
            } else {
                let t = table(b, te.table_id)?;
                if t.direct_counter.is_none() {
                    return Err(inval(format!("table '{}' has no direct counter", t.name)));
                }
                vec![te.table_id]
            };
            for id in tables {
                let t = &b.tables[&id];
                let entries: Vec<TableEntry> = if te.table_id != 0 && !te.r#match.is_empty() {
                    let key = to_key(t, &te.r#match)?;
                    let found: Vec<TableEntry> = st
                        .table_entries(t.table)
                        .into_iter()
                        .filter(|e| e.key == key && (!t.needs_priority || e.priority == te.priority))
                        .collect();
                    if found.is_empty() {
                        return Err(UpdErr::new(Code::NotFound, "no such table entry"));
                    }
                    found
                } else {
                    st.table_entries(t.table)
                };
                for e in entries {
                    let v = st.direct_counter_read(t.table, &e.key, e.priority)?;
                    let mut msg = entry_msg(b, t, &e);
                    msg.action = None;
                    out.push(p4v1::Entity {
                        entity: Some(E::DirectCounterEntry(p4v1::DirectCounterEntry {
                            table_entry: Some(msg),
                            data: Some(counter_data(v)),
                        })),
                    });
                }
            }
            Ok(())
        }
        E::RegisterEntry(re) => {
            let cells = read_cells(re.register_id, &b.register_order, |id| b.registers.get(&id).map(|r| r.size),
                                   &re.index, "register")?;
            for (id, i) in cells {
                let v = st.register_read(b.registers[&id].register, i)?;
                out.push(p4v1::Entity {
                    entity: Some(E::RegisterEntry(p4v1::RegisterEntry {
                        register_id: id,
                        index: Some(p4v1::Index { index: i as i64 }),
                        data: Some(p4v1::P4Data { data: Some(p4v1::p4_data::Data::Bitstring(bytes::canonical(&v))) }),
                    })),
                });
            }
            Ok(())
        }
        E::PacketReplicationEngineEntry(pre) => read_pre(pl, pre, out),
        other => Err(unsupported(other)),
    }
}

/// The replicas in the form each was written (see [`crate::installed::PreBook`]).
fn replica_msgs(rs: &[Replica], book: &PreWritten) -> Vec<p4v1::Replica> {
    use p4v1::replica::PortKind;
    rs.iter()
        .map(|r| {
            #[allow(deprecated)]
            let port_kind = match book.port_form(r.port, r.rid) {
                PortForm::Uint32 => PortKind::EgressPort(r.port),
                PortForm::Bytes => PortKind::Port(bytes::canonical(&r.port.to_be_bytes())),
            };
            p4v1::Replica { instance: r.rid as u32, backup_replicas: vec![], port_kind: Some(port_kind) }
        })
        .collect()
}

fn read_pre(pl: &Pipeline, pre: &p4v1::PacketReplicationEngineEntry, out: &mut Vec<p4v1::Entity>) -> R<()> {
    use p4v1::packet_replication_engine_entry::Type;
    let st = &pl.state;
    let wrap = |t: Type| p4v1::Entity {
        entity: Some(E::PacketReplicationEngineEntry(p4v1::PacketReplicationEngineEntry { r#type: Some(t) })),
    };
    // Held while the engine is read: a Write changes both under it.
    let book = lock(&pl.pre);
    let none = PreWritten::default();
    match &pre.r#type {
        Some(Type::CloneSessionEntry(cs)) => {
            let ids: Vec<u32> =
                if cs.session_id == 0 { book.clone_sessions.keys().copied().collect() } else { vec![cs.session_id] };
            for id in ids {
                match st.clone_session_get(id) {
                    Some((reps, trunc)) => out.push(wrap(Type::CloneSessionEntry(p4v1::CloneSessionEntry {
                        session_id: id,
                        replicas: replica_msgs(&reps, book.clone_sessions.get(&id).unwrap_or(&none)),
                        class_of_service: 0,
                        packet_length_bytes: trunc.map(|t| t.min(i32::MAX as u32) as i32).unwrap_or(0),
                    }))),
                    None if cs.session_id != 0 => {
                        return Err(UpdErr::new(Code::NotFound, format!("no clone session {id}")))
                    }
                    None => {}
                }
            }
            Ok(())
        }
        Some(Type::MulticastGroupEntry(mg)) => {
            if mg.multicast_group_id > u16::MAX as u32 {
                return Err(UpdErr::new(Code::NotFound, format!("no multicast group {}", mg.multicast_group_id)));
            }
            let ids: Vec<u16> = if mg.multicast_group_id == 0 {
                book.mcast_groups.keys().copied().collect()
            } else {
                vec![mg.multicast_group_id as u16]
            };
            for id in ids {
                match st.mcast_group_get(id) {
                    Some(reps) => {
                        let w = book.mcast_groups.get(&id).unwrap_or(&none);
                        out.push(wrap(Type::MulticastGroupEntry(p4v1::MulticastGroupEntry {
                            multicast_group_id: id as u32,
                            replicas: replica_msgs(&reps, w),
                            metadata: w.metadata.clone(),
                        })))
                    }
                    None if mg.multicast_group_id != 0 => {
                        return Err(UpdErr::new(Code::NotFound, format!("no multicast group {id}")))
                    }
                    None => {}
                }
            }
            Ok(())
        }
        None => {
            // Everything in the replication engine (the lock is taken again
            // per kind).
            drop(book);
            for t in [
                Type::CloneSessionEntry(Default::default()),
                Type::MulticastGroupEntry(Default::default()),
            ] {
                read_pre(pl, &p4v1::PacketReplicationEngineEntry { r#type: Some(t) }, out)?;
            }
            Ok(())
        }
    }
}

// ------------------------------------------------------------- migration

/// Copies the forwarding state of `old` into `new` (RECONCILE_AND_COMMIT):
/// entries and default actions of tables present in both by name, counters
/// and registers of the same name and size, and the replication engine.
pub fn migrate(old: &Pipeline, new: &Pipeline) -> Result<(), String> {
    let (Some(ob), Some(nb)) = (&old.binding, &new.binding) else {
        return Err("a pipeline has no P4Info".into());
    };
    let (os, ns) = (&old.state, &new.state);
    for ot in ob.tables.values() {
        let Some(nt) = nb.tables.values().find(|t| t.name == ot.name) else { continue };
        let entries = os.table_entries(ot.table);
        for e in entries {
            let msg = entry_msg(ob, ot, &e);
            let mut m2 = msg.clone();
            m2.table_id = nt.id;
            m2.is_const = false;
            if nt.is_const {
                continue;
            }
            // Re-express by names through the P4Info of each side.
            let act = translate_action(ob, nb, &msg.action)?;
            m2.action = act;
            let key = to_key(nt, &remap_fields(ot, nt, &msg.r#match)?).map_err(|e| e.msg)?;
            let action = to_action(nb, nt, &m2.action, false).map_err(|e| e.msg)?;
            ns.table_insert(nt.table, TableEntry { key, priority: e.priority, action })
                .map_err(|e| format!("table '{}': {e}", nt.name))?;
        }
        if let Some(a) = get_default(os, ot.table) {
            if !nt.default_is_const {
                if let Some(ta) = from_action(ob, ot, &a) {
                    let ta = translate_action(ob, nb, &Some(ta))?;
                    let call = to_action(nb, nt, &ta, true).map_err(|e| e.msg)?;
                    ns.table_set_default(nt.table, call).map_err(|e| e.to_string())?;
                }
            }
        }
    }
    for oc in ob.counters.values() {
        if let Some(nc) = nb.counters.values().find(|c| c.name == oc.name && c.size == oc.size) {
            for i in 0..oc.size {
                let v = os.counter_read(oc.counter, i).map_err(|e| e.to_string())?;
                ns.counter_write(nc.counter, i, v).map_err(|e| e.to_string())?;
            }
        }
    }
    for or in ob.registers.values() {
        if let Some(nr) =
            nb.registers.values().find(|r| r.name == or.name && r.size == or.size && r.bitwidth == or.bitwidth)
        {
            for i in 0..or.size {
                let v = os.register_read(or.register, i).map_err(|e| e.to_string())?;
                ns.register_write(nr.register, i, &v).map_err(|e| e.to_string())?;
            }
        }
    }
    let pre = lock(&old.pre).clone();
    for id in pre.clone_sessions.keys() {
        if let Some((reps, trunc)) = os.clone_session_get(*id) {
            ns.clone_session_set(*id, reps, trunc);
        }
    }
    for id in pre.mcast_groups.keys() {
        if let Some(reps) = os.mcast_group_get(*id) {
            ns.mcast_group_set(*id, reps);
        }
    }
    *lock(&new.pre) = pre;
    Ok(())
}

fn translate_action(ob: &Binding, nb: &Binding, a: &Option<p4v1::TableAction>) -> Result<Option<p4v1::TableAction>, String> {
    let Some(p4v1::TableAction { r#type: Some(p4v1::table_action::Type::Action(a)) }) = a else {
        return Ok(None);
    };
    let oa = ob.actions.get(&a.action_id).ok_or("unknown action")?;
    let na = nb.actions.values().find(|x| x.name == oa.name).ok_or(format!("action '{}' is gone", oa.name))?;
    let mut params = Vec::new();
    for p in &a.params {
        let op = oa.params.iter().find(|x| x.id == p.param_id).ok_or("unknown parameter")?;
        let np = na
            .params
            .iter()
            .find(|x| x.name == op.name)
            .ok_or(format!("parameter '{}' of action '{}' is gone", op.name, oa.name))?;
        params.push(p4v1::action::Param { param_id: np.id, value: p.value.clone() });
    }
    Ok(Some(p4v1::TableAction {
        r#type: Some(p4v1::table_action::Type::Action(p4v1::Action { action_id: na.id, params })),
    }))
}

fn remap_fields(ot: &BoundTable, nt: &BoundTable, m: &[p4v1::FieldMatch]) -> Result<Vec<p4v1::FieldMatch>, String> {
    let mut out = Vec::new();
    for fm in m {
        let of = ot.fields.iter().find(|f| f.id == fm.field_id).ok_or("unknown field")?;
        let nf = nt
            .fields
            .iter()
            .find(|f| f.name == of.name)
            .ok_or(format!("match field '{}' of table '{}' is gone", of.name, ot.name))?;
        out.push(p4v1::FieldMatch { field_id: nf.id, field_match_type: fm.field_match_type.clone() });
    }
    Ok(out)
}

// ------------------------------------------------------ controller packets

fn put_bits(out: &mut [u8], bit: usize, width: u32, value: &[u8]) {
    // value is big-endian, exactly width_bytes(width) long.
    for i in 0..width as usize {
        let src_bit = value.len() * 8 - width as usize + i;
        let v = (value[src_bit / 8] >> (7 - src_bit % 8)) & 1;
        if v != 0 {
            let dst = bit + i;
            out[dst / 8] |= 0x80 >> (dst % 8);
        }
    }
}

fn get_bits(data: &[u8], bit: usize, width: u32) -> Vec<u8> {
    let n = bytes::width_bytes(width);
    let mut out = vec![0u8; n];
    let pad = n * 8 - width as usize;
    for i in 0..width as usize {
        let src = bit + i;
        if (data[src / 8] >> (7 - src % 8)) & 1 != 0 {
            let dst = pad + i;
            out[dst / 8] |= 0x80 >> (dst % 8);
        }
    }
    out
}

/// Prepends the packet_out header (fields packed in P4Info order) to the
/// payload; the program parses it on the CPU port.
pub fn build_packet_out(h: &ControllerHeader, p: &p4v1::PacketOut) -> R<Vec<u8>> {
    let total_bits: usize = h.fields.iter().map(|f| f.2 as usize).sum();
    let hdr_len = total_bits.div_ceil(8);
    let mut frame = vec![0u8; hdr_len];
    let mut bit = 0;
    for (id, name, w) in &h.fields {
        let m = p
            .metadata
            .iter()
            .find(|m| m.metadata_id == *id)
            .ok_or_else(|| inval(format!("packet_out metadata '{name}' (id {id}) is missing")))?;
        let v = bytes::to_width(&m.value, *w).map_err(|e| range(&format!("packet_out metadata '{name}'"), e))?;
        put_bits(&mut frame, bit, *w, &v);
        bit += *w as usize;
    }
    for m in &p.metadata {
        if !h.fields.iter().any(|f| f.0 == m.metadata_id) {
            return Err(inval(format!("unknown packet_out metadata id {}", m.metadata_id)));
        }
    }
    frame.extend_from_slice(&p.payload);
    Ok(frame)
}

/// Splits the packet_in header off a frame the pipeline sent to the CPU port.
pub fn parse_packet_in(h: &ControllerHeader, frame: &[u8]) -> Option<p4v1::PacketIn> {
    let total_bits: usize = h.fields.iter().map(|f| f.2 as usize).sum();
    let hdr_len = total_bits.div_ceil(8);
    if frame.len() < hdr_len {
        return None;
    }
    let mut bit = 0;
    let mut metadata = Vec::new();
    for (id, _, w) in &h.fields {
        let v = get_bits(frame, bit, *w);
        metadata.push(p4v1::PacketMetadata { metadata_id: *id, value: bytes::canonical(&v) });
        bit += *w as usize;
    }
    Some(p4v1::PacketIn { payload: frame[hdr_len..].to_vec(), metadata })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_header_round_trip() {
        let h = ControllerHeader { id: 1, fields: vec![(1, "port".into(), 9), (2, "pad".into(), 7)] };
        let p = p4v1::PacketOut {
            payload: vec![0xaa, 0xbb],
            metadata: vec![
                p4v1::PacketMetadata { metadata_id: 1, value: vec![1, 0x02] },
                p4v1::PacketMetadata { metadata_id: 2, value: vec![0] },
            ],
        };
        let f = build_packet_out(&h, &p).unwrap();
        assert_eq!(f, vec![0x81, 0x00, 0xaa, 0xbb]);
        let back = parse_packet_in(&h, &f).unwrap();
        assert_eq!(back.payload, vec![0xaa, 0xbb]);
        assert_eq!(back.metadata[0].value, vec![1, 2]);
        let bad = p4v1::PacketOut { payload: vec![], metadata: vec![] };
        assert_eq!(build_packet_out(&h, &bad).unwrap_err().code, Code::InvalidArgument);
    }
}
