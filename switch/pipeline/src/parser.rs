//! Parser execution (bmv2 semantics: an error stops parsing, the packet
//! continues with what was extracted and the error code) and checksum
//! verification.

use crate::actions::{self, lvalue_slot, Exec};
use crate::checksum::{calc_output, ipv4_checksum};
use crate::bits::{mask, read_bits};
use crate::eval::Ctx;
use crate::fast::FastProgram;
use crate::jit::{Jit, ParseOut};
use crate::ir::{ChecksumDef, ChecksumKind, Expr, ParserOp, Program, SetSrc, TransCase, TransKey};
use crate::packet::Pkt;

/// States a parse may visit before it ends with ParserTimeout.
pub(crate) const MAX_STATES: usize = 100_000;

/// Runs the parser over `data` (its native states, if `native` has any,
/// then the interpreter from where they stopped); returns the number of
/// bytes consumed and the error code (the program's NoError on success).
pub(crate) fn parse(
    x: &mut Exec,
    fast: Option<&FastProgram>,
    native: Option<&Jit>,
    pkt: &mut Pkt,
    data: &[u8],
    key: &mut Vec<u128>,
) -> (usize, u32) {
    let p = x.p;
    let (mut state, mut pos, mut visited) = (p.parser_start, 0usize, 0usize);
    // The native states first; the interpreter goes on where they stop.
    if let Some(out) = native.and_then(|j| j.parse(x.state, pkt, data)) {
        if out.err != ParseOut::CONTINUE {
            return (out.pos as usize, out.err as u32);
        }
        (state, pos, visited) = (Some(out.state as usize), out.pos as usize, out.visited as usize);
    }
    while let Some(si) = state {
        visited += 1;
        if visited > MAX_STATES {
            return (pos, p.errors.parser_timeout);
        }
        let st = &p.parse_states[si];
        for (i, op) in st.ops.iter().enumerate() {
            if let Some(set) = fast.and_then(|f| f.parser_set(si, i)) {
                set(x, pkt, &[]);
                continue;
            }
            if let Err(e) = run_op(x, pkt, op, data, &mut pos) {
                return (pos, e);
            }
        }
        if st.key.is_empty() {
            state = st.default_next;
            continue;
        }
        if let Some(sel) = fast.and_then(|f| f.selects[si].as_ref()) {
            state = sel.next(pkt.phv.f(), st.default_next);
            continue;
        }
        key.clear();
        {
            let c = Ctx { p, phv: &pkt.phv, args: &[], state: x.state };
            for k in &st.key {
                key.push(match k {
                    TransKey::Slot(s) => pkt.phv.f()[*s],
                    TransKey::StackLast { stack, off } => {
                        let e = Expr::StackLast { stack: *stack, off: *off };
                        let w = p.stacks[*stack].htype;
                        let width = p.htypes[w].fields.get(*off).map_or(128, |f| f.width);
                        (c.eval(&e) as u128) & mask(width)
                    }
                    TransKey::Lookahead { off_bits, width } => read_bits(data, pos * 8 + off_bits, *width),
                });
            }
        }
        let mut next = st.default_next;
        for case in &st.cases {
            let (hit, n) = match case {
                TransCase::Value { values, masks, next } => {
                    let hit = match masks {
                        Some(m) => values.iter().zip(key.iter()).zip(m).all(|((&v, &k), &m)| v & m == k & m),
                        None => values.iter().zip(key.iter()).all(|(&v, &k)| v == k),
                    };
                    (hit, *next)
                }
                TransCase::VSet { vset, masks, next } => {
                    (x.state.vset_contains(*vset, key, masks.as_deref()), *next)
                }
            };
            if hit {
                next = n;
                break;
            }
        }
        state = next;
    }
    (pos, p.errors.no_error)
}

fn run_op(x: &mut Exec, pkt: &mut Pkt, op: &ParserOp, data: &[u8], pos: &mut usize) -> Result<(), u32> {
    let p = x.p;
    let remaining = data.len().saturating_sub(*pos);
    match op {
        ParserOp::Extract(h) => {
            let n = p.headers[*h].nbytes;
            if remaining < n {
                return Err(p.errors.packet_too_short);
            }
            pkt.phv.extract(p, *h, &data[*pos..]);
            *pos += n;
        }
        ParserOp::ExtractStack(s) => {
            let next = pkt.phv.next[*s] as usize;
            let hs = &p.stacks[*s].headers;
            if next >= hs.len() {
                return Err(p.errors.stack_out_of_bounds);
            }
            let h = hs[next];
            let n = p.headers[h].nbytes;
            if remaining < n {
                return Err(p.errors.packet_too_short);
            }
            pkt.phv.extract(p, h, &data[*pos..]);
            pkt.phv.next[*s] += 1;
            *pos += n;
        }
        ParserOp::Set { dst, src } => {
            let c = Ctx { p, phv: &pkt.phv, args: &[], state: x.state };
            let v = match src {
                SetSrc::Expr(e) => c.eval(e),
                SetSrc::Lookahead { off_bits, width } => {
                    let need = (*off_bits + *width as usize).div_ceil(8);
                    if remaining < need {
                        return Err(p.errors.packet_too_short);
                    }
                    read_bits(data, *pos * 8 + off_bits, *width) as i128
                }
            };
            if let Some(s) = lvalue_slot(&c, dst) {
                pkt.phv.set(p, s, v);
            }
        }
        ParserOp::Verify { cond, error } => {
            let c = Ctx { p, phv: &pkt.phv, args: &[], state: x.state };
            if !c.eval_bool(cond) {
                return Err(c.eval(error) as u32);
            }
        }
        ParserOp::Advance(e) => {
            let c = Ctx { p, phv: &pkt.phv, args: &[], state: x.state };
            let bits = c.eval(e);
            if bits < 0 || bits % 8 != 0 {
                return Err(p.errors.parser_invalid_argument);
            }
            let bytes = usize::try_from(bits / 8).unwrap_or(usize::MAX);
            if remaining < bytes {
                return Err(p.errors.packet_too_short);
            }
            *pos += bytes;
        }
        // Most `set`s are direct stores (simplify.rs): run without the
        // general interpreter's set-up.
        ParserOp::Prim(prim) => {
            if !actions::run_store(prim, pkt, &[]) {
                actions::run(x, pkt, std::slice::from_ref(prim), &[]);
            }
        }
    }
    Ok(())
}

/// Value a checksum would have now (None if its condition is false).
fn checksum_value(x: &mut Exec, pkt: &Pkt, c: &ChecksumDef) -> Option<u64> {
    let p = x.p;
    if let Some(cond) = &c.cond {
        let ctx = Ctx { p, phv: &pkt.phv, args: &[], state: x.state };
        if !ctx.eval_bool(cond) {
            return None;
        }
    }
    let payload = pkt.payload();
    let payload = match pkt.truncate {
        Some(t) => &payload[..payload.len().min(t)],
        None => payload,
    };
    Some(match c.kind {
        ChecksumKind::Calc(ci) => calc_output(p, &p.calcs[ci], &pkt.phv, payload, x.buf),
        ChecksumKind::Ipv4 => {
            if !pkt.phv.valid[c.header] {
                return None;
            }
            ipv4_checksum(p, c.header, &pkt.phv, x.buf)
        }
    })
}

/// bmv2 Parser::verify_checksums: true if any checksum is wrong.
pub(crate) fn verify_checksums(x: &mut Exec, pkt: &Pkt) -> bool {
    let p: &Program = x.p;
    let mut bad = false;
    for c in &p.verify_checksums {
        if !pkt.phv.valid[c.header] {
            continue;
        }
        if let Some(v) = checksum_value(x, pkt, c) {
            let w = p.slots[c.slot].width;
            if (v as u128) & mask(w) != pkt.phv.f()[c.slot] || (w < 64 && v >> w != 0) {
                bad = true;
            }
        }
    }
    bad
}

/// Deparser checksum update (bmv2 Deparser::update_checksums).
pub(crate) fn update_checksums(x: &mut Exec, pkt: &mut Pkt) {
    for c in &x.p.update_checksums {
        update_checksum(x, pkt, c);
    }
}

/// One of the deparser's checksum updates (`update_checksums`).
pub(crate) fn update_checksum(x: &mut Exec, pkt: &mut Pkt, c: &ChecksumDef) {
    if let Some(v) = checksum_value(x, pkt, c) {
        pkt.phv.set(x.p, c.slot, v as i128);
    }
}
