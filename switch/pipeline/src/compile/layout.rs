//! The data layout: header types, header instances (each field a PHV
//! slot), stacks, unions and field aliases, and the name lookups the rest
//! of the compiler resolves references with.

use super::json::*;
use crate::bits::mask;
use crate::error::{LoadError, LoadResult};
use crate::ir::{FieldDef, HdrRef, HeaderInst, HeaderType, SlotInfo, StackDef, StdMeta, UnionDef, UnionRef};
use serde_json::Value;
use std::collections::HashMap;

#[derive(Default)]
pub(super) struct Layout {
    pub htypes: Vec<HeaderType>,
    pub headers: Vec<HeaderInst>,
    pub slots: Vec<SlotInfo>,
    pub stacks: Vec<StackDef>,
    pub unions: Vec<UnionDef>,
    htype_by_name: HashMap<String, usize>,
    header_by_name: HashMap<String, usize>,
    stack_by_name: HashMap<String, usize>,
    union_by_name: HashMap<String, usize>,
    /// alias -> (header, field)
    aliases: HashMap<String, (String, String)>,
}

impl Layout {
    pub fn read(root: &Value) -> LoadResult<Layout> {
        let mut layout = Layout::default();
        layout.read_header_types(root)?;
        layout.read_headers(root)?;
        layout.read_stacks(root)?;
        layout.read_unions(root)?;
        if !get_arr(root, "header_union_stacks", "root")?.is_empty() {
            return Err(LoadError::unsupported("header_union_stacks", "header union stacks"));
        }
        layout.read_aliases(root)?;
        Ok(layout)
    }

    fn read_header_types(&mut self, root: &Value) -> LoadResult<()> {
        for ht in get_arr(root, "header_types", "root")? {
            let name = get_str(ht, "name", "header_types")?.to_string();
            let at = format!("header type '{name}'");
            let mut fields = Vec::new();
            let mut bits = 0u32;
            for f in get_arr(ht, "fields", &at)? {
                let fa = as_arr(f, &at)?;
                if fa.len() < 2 {
                    return Err(LoadError::bad(&at, "field tuple too short"));
                }
                let fname = as_str(&fa[0], &at)?.to_string();
                if fa[1].as_str() == Some("*") {
                    return Err(LoadError::unsupported(&at, format!("variable-length (varbit) field '{fname}'")));
                }
                let width = fa[1]
                    .as_u64()
                    .ok_or_else(|| LoadError::bad(&at, format!("bad width for field '{fname}'")))?;
                if width > 128 {
                    return Err(LoadError::unsupported(
                        &at,
                        format!("field '{fname}' is {width} bits wide (the engine supports up to 128)"),
                    ));
                }
                let signed = fa.get(2).and_then(Value::as_bool).unwrap_or(false);
                let saturating = fa.get(3).and_then(Value::as_bool).unwrap_or(false);
                bits += width as u32;
                fields.push(FieldDef { name: fname, width: width as u32, signed, saturating });
            }
            self.htype_by_name.insert(name.clone(), self.htypes.len());
            self.htypes.push(HeaderType { name, fields, bits });
        }
        Ok(())
    }

    fn read_headers(&mut self, root: &Value) -> LoadResult<()> {
        for h in get_arr(root, "headers", "root")? {
            let name = get_str(h, "name", "headers")?.to_string();
            let at = format!("header '{name}'");
            let tname = get_str(h, "header_type", &at)?;
            let ht = *self
                .htype_by_name
                .get(tname)
                .ok_or_else(|| LoadError::bad(&at, format!("unknown header type '{tname}'")))?;
            let metadata = get_bool_or(h, "metadata", false);
            let t = &self.htypes[ht];
            if !metadata && !t.bits.is_multiple_of(8) {
                return Err(LoadError::bad(&at, format!("header is {} bits, not a whole number of bytes", t.bits)));
            }
            let idx = self.headers.len();
            let first_slot = self.slots.len();
            for f in &t.fields {
                self.slots.push(SlotInfo { width: f.width, signed: f.signed, saturating: f.saturating, header: idx as u32, mask: mask(f.width) });
            }
            self.headers.push(HeaderInst {
                name: name.clone(),
                htype: ht,
                metadata,
                first_slot,
                nfields: t.fields.len(),
                nbytes: t.bits.div_ceil(8) as usize,
                union_of: None,
                codec: crate::codec::HeaderCodec::new(t.fields.iter().map(|f| f.width)),
            });
            self.header_by_name.insert(name, idx);
        }
        Ok(())
    }

    fn read_stacks(&mut self, root: &Value) -> LoadResult<()> {
        for s in get_arr(root, "header_stacks", "root")? {
            let name = get_str(s, "name", "header_stacks")?.to_string();
            let at = format!("header stack '{name}'");
            let ht = *self
                .htype_by_name
                .get(get_str(s, "header_type", &at)?)
                .ok_or_else(|| LoadError::bad(&at, "unknown header type"))?;
            let mut hs = Vec::new();
            for id in get_arr(s, "header_ids", &at)? {
                hs.push(self.header_by_json_id(root, as_i64(id, &at)?, &at)?);
            }
            self.stack_by_name.insert(name.clone(), self.stacks.len());
            self.stacks.push(StackDef { name, htype: ht, headers: hs });
        }
        Ok(())
    }

    fn read_unions(&mut self, root: &Value) -> LoadResult<()> {
        for u in get_arr(root, "header_unions", "root")? {
            let name = get_str(u, "name", "header_unions")?.to_string();
            let at = format!("header union '{name}'");
            let ui = self.unions.len();
            let mut hs = Vec::new();
            for (m, id) in get_arr(u, "header_ids", &at)?.iter().enumerate() {
                let h = self.header_by_json_id(root, as_i64(id, &at)?, &at)?;
                self.headers[h].union_of = Some((ui, m));
                hs.push(h);
            }
            self.union_by_name.insert(name.clone(), ui);
            self.unions.push(UnionDef { name, headers: hs });
        }
        Ok(())
    }

    fn read_aliases(&mut self, root: &Value) -> LoadResult<()> {
        for a in get_arr(root, "field_aliases", "root")? {
            let (n, target) = as_pair(a, "field_aliases")?;
            let (h, f) = as_pair(target, "field_aliases")?;
            self.aliases.insert(
                as_str(n, "field_aliases")?.to_string(),
                (as_str(h, "field_aliases")?.to_string(), as_str(f, "field_aliases")?.to_string()),
            );
        }
        Ok(())
    }

    /// Stacks and unions name their headers by JSON id, not by name.
    fn header_by_json_id(&self, root: &Value, id: i64, at: &str) -> LoadResult<usize> {
        let hs = get_arr(root, "headers", "root")?;
        for h in hs {
            if h.get("id").and_then(Value::as_i64) == Some(id) {
                let n = get_str(h, "name", at)?;
                return self.header_by_name.get(n).copied().ok_or_else(|| LoadError::bad(at, "header"));
            }
        }
        Err(LoadError::bad(at, format!("no header with id {id}")))
    }

    pub fn header(&self, name: &str, at: &str) -> LoadResult<usize> {
        lookup(&self.header_by_name, "header", name, at)
    }

    pub fn stack(&self, name: &str, at: &str) -> LoadResult<usize> {
        lookup(&self.stack_by_name, "header stack", name, at)
    }

    pub fn union(&self, name: &str, at: &str) -> LoadResult<usize> {
        lookup(&self.union_by_name, "union", name, at)
    }

    pub fn field_index(&self, htype: usize, field: &str, at: &str) -> LoadResult<usize> {
        self.htypes[htype]
            .fields
            .iter()
            .position(|f| f.name == field)
            .ok_or_else(|| LoadError::bad(at, format!("header type '{}' has no field '{field}'", self.htypes[htype].name)))
    }

    /// Slot of a [header, field] reference; Err for `$valid$` (see field_ref).
    pub fn slot(&self, v: &Value, at: &str) -> LoadResult<usize> {
        match self.field_ref(v, at)? {
            Ok(s) => Ok(s),
            Err(_) => Err(LoadError::bad(at, "the hidden field $valid$ is read-only")),
        }
    }

    /// Ok(slot) or Err(header) for the `$valid$` hidden field.
    pub fn field_ref(&self, v: &Value, at: &str) -> LoadResult<Result<usize, usize>> {
        let (h, f) = as_pair(v, at)?;
        let h = self.header(as_str(h, at)?, at)?;
        let f = as_str(f, at)?;
        if f == "$valid$" {
            return Ok(Err(h));
        }
        let fi = self.field_index(self.headers[h].htype, f, at)?;
        Ok(Ok(self.headers[h].first_slot + fi))
    }

    /// Whether the slot's values can reach 2^127 (unsigned 128-bit): such
    /// operands compare, divide and shift as unsigned.
    pub fn slot_wide(&self, s: usize) -> bool {
        let i = &self.slots[s];
        i.width >= 128 && !i.signed
    }

    /// Slot of "header.field" or of a field alias; None if there is none.
    pub fn resolve_name(&self, name: &str) -> Option<usize> {
        let (h, f) = match self.aliases.get(name) {
            Some((h, f)) => (h.as_str(), f.as_str()),
            None => name.split_once('.')?,
        };
        let hi = *self.header_by_name.get(h)?;
        let fi = self.htypes[self.headers[hi].htype].fields.iter().position(|x| x.name == f)?;
        Some(self.headers[hi].first_slot + fi)
    }

    pub fn std_meta(&self) -> StdMeta {
        let r = |n: &str| self.resolve_name(n);
        let mut sm = StdMeta {
            header: self.header_by_name.get("standard_metadata").copied(),
            ingress_port: r("standard_metadata.ingress_port"),
            egress_spec: r("standard_metadata.egress_spec"),
            egress_port: r("standard_metadata.egress_port"),
            instance_type: r("standard_metadata.instance_type"),
            packet_length: r("standard_metadata.packet_length"),
            enq_timestamp: r("queueing_metadata.enq_timestamp"),
            enq_qdepth: r("queueing_metadata.enq_qdepth"),
            deq_timedelta: r("queueing_metadata.deq_timedelta"),
            deq_qdepth: r("queueing_metadata.deq_qdepth"),
            qid: r("queueing_metadata.qid"),
            ingress_ts: r("intrinsic_metadata.ingress_global_timestamp"),
            egress_ts: r("intrinsic_metadata.egress_global_timestamp"),
            mcast_grp: r("intrinsic_metadata.mcast_grp"),
            egress_rid: r("intrinsic_metadata.egress_rid"),
            checksum_error: r("standard_metadata.checksum_error"),
            parser_error: r("standard_metadata.parser_error"),
            priority: r("intrinsic_metadata.priority"),
            with_queueing: false,
        };
        sm.with_queueing =
            sm.enq_timestamp.is_some() && sm.enq_qdepth.is_some() && sm.deq_timedelta.is_some() && sm.deq_qdepth.is_some();
        sm
    }

    /// Header type of a header reference.
    pub fn hdr_type(&self, h: &HdrRef) -> usize {
        match h {
            HdrRef::Fixed(i) => self.headers[*i].htype,
            HdrRef::StackIdx { stack, .. } => self.stacks[*stack].htype,
            HdrRef::UnionMember { un, member } => match **un {
                UnionRef::Fixed(u) => self.headers[self.unions[u].headers[*member]].htype,
            },
        }
    }
}
