//! The parser (states, operations, select keys and cases), hash
//! calculations, and the checksums verified after parsing and updated
//! before deparsing.

use super::action::Prim;
use super::expr::{Expr, LValue};

#[derive(Clone, Debug)]
pub(crate) enum CalcInput {
    Field { slot: usize, header: usize },
    Const { value: u128, bits: u32 },
    Header(usize),
    Payload,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HashAlgo {
    Crc16,
    Crc32,
    CrcCcitt,
    Csum16,
    Identity,
    Xor16,
    Xor32,
    Crc8Custom,
    Crc16Custom,
    Crc32Custom,
    Crc64Custom,
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct Calc {
    pub name: String,
    pub algo: HashAlgo,
    pub inputs: Vec<CalcInput>,
    /// csum16 over fields and constants, summed without packing the bytes
    /// (checksum.rs); None where the general path is needed.
    pub csum: Option<crate::checksum::Csum16Plan>,
}

#[derive(Clone, Debug)]
pub(crate) enum ChecksumKind {
    Calc(usize),
    Ipv4,
}

#[derive(Clone, Debug)]
pub(crate) struct ChecksumDef {
    pub slot: usize,
    pub header: usize,
    pub kind: ChecksumKind,
    pub cond: Option<Expr>,
}

#[derive(Clone, Debug)]
pub(crate) enum TransKey {
    Slot(usize),
    StackLast { stack: usize, off: usize },
    Lookahead { off_bits: usize, width: u32 },
}

#[derive(Clone, Debug)]
pub(crate) enum TransCase {
    Value { values: Vec<u128>, masks: Option<Vec<u128>>, next: Option<usize> },
    VSet { vset: usize, masks: Option<Vec<u128>>, next: Option<usize> },
}

#[derive(Clone, Debug)]
pub(crate) enum SetSrc {
    Expr(Expr),
    Lookahead { off_bits: usize, width: u32 },
}

#[derive(Clone, Debug)]
pub(crate) enum ParserOp {
    Extract(usize),
    ExtractStack(usize),
    Set { dst: LValue, src: SetSrc },
    Verify { cond: Expr, error: Expr },
    Advance(Expr),
    Prim(Prim),
}

#[derive(Clone, Debug)]
#[allow(dead_code)] // names are kept for debugging output
pub(crate) struct ParseState {
    pub name: String,
    pub ops: Vec<ParserOp>,
    pub key: Vec<TransKey>,
    pub key_widths: Vec<u32>,
    pub cases: Vec<TransCase>,
    pub default_next: Option<usize>,
}
