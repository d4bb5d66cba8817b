//! The program's data layout: header types, header instances with their
//! PHV slots, stacks, unions, and where the v1model standard metadata and
//! the core parser error codes are.

#[derive(Clone, Debug)]
pub(crate) struct FieldDef {
    pub name: String,
    pub width: u32,
    pub signed: bool,
    pub saturating: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct HeaderType {
    pub name: String,
    pub fields: Vec<FieldDef>,
    /// Total bits of the fields (the header's size in the packet).
    pub bits: u32,
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct HeaderInst {
    pub name: String,
    pub htype: usize,
    pub metadata: bool,
    /// PHV slot of the first field; fields are consecutive.
    pub first_slot: usize,
    pub nfields: usize,
    pub nbytes: usize,
    /// (union index, member index) if the header is a union member.
    pub union_of: Option<(usize, usize)>,
    /// Where each field sits in the header's bytes.
    pub codec: crate::codec::HeaderCodec,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct SlotInfo {
    pub width: u32,
    pub signed: bool,
    pub saturating: bool,
    pub header: u32,
    /// The low `width` bits: what a store keeps of a wrapping field.
    pub mask: u128,
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct StackDef {
    pub name: String,
    pub htype: usize,
    pub headers: Vec<usize>,
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct UnionDef {
    pub name: String,
    pub headers: Vec<usize>,
}

/// Core parser error codes, as numbered by the program's `errors` list.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CoreErrors {
    pub no_error: u32,
    pub packet_too_short: u32,
    pub no_match: u32,
    pub stack_out_of_bounds: u32,
    pub header_too_short: u32,
    pub parser_timeout: u32,
    pub parser_invalid_argument: u32,
}

/// PHV slots of the v1model standard metadata the target reads or writes.
#[derive(Clone, Copy, Debug, Default)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct StdMeta {
    pub header: Option<usize>,
    pub ingress_port: Option<usize>,
    pub egress_spec: Option<usize>,
    pub egress_port: Option<usize>,
    pub instance_type: Option<usize>,
    pub packet_length: Option<usize>,
    pub enq_timestamp: Option<usize>,
    pub enq_qdepth: Option<usize>,
    pub deq_timedelta: Option<usize>,
    pub deq_qdepth: Option<usize>,
    pub qid: Option<usize>,
    pub ingress_ts: Option<usize>,
    pub egress_ts: Option<usize>,
    pub mcast_grp: Option<usize>,
    pub egress_rid: Option<usize>,
    pub checksum_error: Option<usize>,
    pub parser_error: Option<usize>,
    pub priority: Option<usize>,
    pub with_queueing: bool,
}
