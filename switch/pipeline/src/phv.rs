//! The packet header vector: one u128 slot per field (values stored masked
//! to the field width, signed fields as two's complement bit patterns),
//! header validity bits and the `next` index of every header stack.
//!
//! A packet writes a small part of the PHV (cc_switch: about 40 of 140
//! slots), so every write marks its chunk of slots dirty and `reset` zeroes
//! only the dirty chunks: clearing the whole PHV cost more than the rest of
//! a packet's parsing. Writes therefore go through the methods here; the
//! slots are read-only to the rest of the crate.

use crate::bits::{mask, BitWriter};
use crate::ir::{Program, SlotInfo};

#[derive(Clone, Debug)]
pub(crate) struct Phv {
    f: Vec<u128>,
    pub valid: Vec<bool>,
    pub next: Vec<u32>,
    /// One flag byte per chunk of `1 << CHUNK_SHIFT` slots, set when the
    /// chunk may hold non-zero values. Setting a byte is a plain store; a
    /// bit per chunk made every write a read-modify-write of a shared word.
    dirty: Vec<u8>,
}

/// Chunks of 8 slots (128 bytes): a reset scans a flag per chunk, and
/// with chunks of 4 the scan of cc_switch's 35 flags cost more than the
/// extra stores of zeroing whole 8-slot chunks (7 933 → 7 763 instructions
/// a packet; 16 slots saved fewer than they cost in time).
pub(crate) const CHUNK_SHIFT: usize = 3;
const CHUNK: usize = 1 << CHUNK_SHIFT;

/// The value to store in a field of the given kind (truncate, or clamp for
/// saturating fields), as bmv2's Field::export_bytes does.
#[inline]
pub(crate) fn fit(info: &SlotInfo, v: i128) -> u128 {
    if !info.saturating {
        return (v as u128) & info.mask;
    }
    let w = info.width;
    if w < 128 {
        if info.signed {
            let max = (1i128 << (w - 1)) - 1;
            let min = -(1i128 << (w - 1));
            return (v.clamp(min, max) as u128) & mask(w);
        } else {
            let max = (1i128 << w) - 1;
            return v.clamp(0, max) as u128;
        }
    }
    (v as u128) & mask(w)
}

/// Reads a stored field as an expression value (sign-extended if signed).
#[inline]
pub(crate) fn load(info: &SlotInfo, raw: u128) -> i128 {
    if info.signed && info.width < 128 && info.width > 0 {
        let sh = 128 - info.width;
        ((raw << sh) as i128) >> sh
    } else {
        raw as i128
    }
}

impl Phv {
    pub fn new(p: &Program) -> Phv {
        let chunks = p.slots.len().div_ceil(1 << CHUNK_SHIFT);
        let mut phv = Phv {
            f: vec![0; p.slots.len()],
            valid: vec![false; p.headers.len()],
            next: vec![0; p.stacks.len()],
            dirty: vec![0; chunks],
        };
        phv.reset(p);
        phv
    }

    /// The field slots (values as stored).
    #[inline(always)]
    pub fn f(&self) -> &[u128] {
        &self.f
    }

    /// Pointers to the slots, validity bits and dirty flags, for native
    /// code (jit/): it stores into slots and marks their chunks as `put`
    /// does, and reads validity.
    pub(crate) fn raw_parts(&mut self) -> (*mut u128, *mut bool, *mut u8) {
        (self.f.as_mut_ptr(), self.valid.as_mut_ptr(), self.dirty.as_mut_ptr())
    }

    #[inline(always)]
    fn mark(&mut self, slot: usize) {
        self.dirty[slot >> CHUNK_SHIFT] = 1;
    }

    fn mark_range(&mut self, first: usize, n: usize) {
        if n == 0 {
            return;
        }
        self.dirty[first >> CHUNK_SHIFT..=(first + n - 1) >> CHUNK_SHIFT].fill(1);
    }

    /// Stores an already fitted value.
    #[inline(always)]
    pub fn put(&mut self, slot: usize, v: u128) {
        self.f[slot] = v;
        self.mark(slot);
    }

    /// Fresh packet: every header invalid and zero, metadata valid and zero.
    pub fn reset(&mut self, p: &Program) {
        let n = self.f.len();
        for (c, d) in self.dirty.iter_mut().enumerate() {
            if std::mem::take(d) == 0 {
                continue;
            }
            let lo = c << CHUNK_SHIFT;
            // A whole chunk as an array: stores inline, where a slice's
            // fill() is a call to memset per chunk.
            match self.f.get_mut(lo..lo + CHUNK).and_then(|s| <&mut [u128; CHUNK]>::try_from(s).ok()) {
                Some(ch) => *ch = [0; CHUNK],
                None => self.f[lo.min(n)..].fill(0),
            }
        }
        self.valid.copy_from_slice(&p.valid_at_start);
        self.next.fill(0);
    }

    pub fn reset_metadata(&mut self, p: &Program) {
        for h in p.headers.iter().filter(|h| h.metadata) {
            self.f[h.first_slot..h.first_slot + h.nfields].fill(0);
        }
    }

    #[inline]
    pub fn set(&mut self, p: &Program, slot: usize, v: i128) {
        self.put(slot, fit(&p.slots[slot], v));
    }


    /// Marks a header valid; siblings in a header union become invalid.
    pub fn set_valid(&mut self, p: &Program, h: usize) {
        self.valid[h] = true;
        if let Some((u, _)) = p.headers[h].union_of {
            for &m in &p.unions[u].headers {
                if m != h {
                    self.valid[m] = false;
                }
            }
        }
    }

    pub fn set_invalid(&mut self, h: usize) {
        self.valid[h] = false;
    }

    pub fn zero_header(&mut self, p: &Program, h: usize) {
        let hd = &p.headers[h];
        self.f[hd.first_slot..hd.first_slot + hd.nfields].fill(0);
    }

    /// Swaps values and validity of two headers of the same type.
    pub fn swap_headers(&mut self, p: &Program, a: usize, b: usize) {
        if a == b {
            return;
        }
        let (ha, hb) = (&p.headers[a], &p.headers[b]);
        let n = ha.nfields.min(hb.nfields);
        for i in 0..n {
            self.f.swap(ha.first_slot + i, hb.first_slot + i);
        }
        self.mark_range(ha.first_slot, n);
        self.mark_range(hb.first_slot, n);
        self.valid.swap(a, b);
    }

    /// Copies header values (bmv2 `assign_header`): invalid source
    /// invalidates the destination.
    pub fn copy_header(&mut self, p: &Program, dst: usize, src: usize) {
        if !self.valid[src] {
            self.set_invalid(dst);
            return;
        }
        self.set_valid(p, dst);
        let (hd, hs) = (&p.headers[dst], &p.headers[src]);
        let n = hd.nfields.min(hs.nfields);
        for i in 0..n {
            let v = load(&p.slots[hs.first_slot + i], self.f[hs.first_slot + i]);
            self.f[hd.first_slot + i] = fit(&p.slots[hd.first_slot + i], v);
        }
        self.mark_range(hd.first_slot, n);
    }

    /// bmv2 `PHV::copy_headers` (used for E2E clones): validity, values of
    /// valid and metadata headers, stack indices. Metadata is reset by the
    /// caller as bmv2 does.
    pub fn copy_from(&mut self, src: &Phv) {
        self.f.copy_from_slice(&src.f);
        self.valid.copy_from_slice(&src.valid);
        self.next.copy_from_slice(&src.next);
        for (d, s) in self.dirty.iter_mut().zip(&src.dirty) {
            *d |= *s;
        }
    }

    /// Extracts header `h` from the start of `data`, which holds at least
    /// its bytes (and may go on: the rest of the frame speeds the loads).
    pub fn extract(&mut self, p: &Program, h: usize, data: &[u8]) {
        let hd = &p.headers[h];
        hd.codec.extract(data, hd.nbytes, &mut self.f[hd.first_slot..hd.first_slot + hd.nfields]);
        self.mark_range(hd.first_slot, hd.nfields);
        self.set_valid(p, h);
    }

    /// Writes header `h` at the start of `out`: its first `nbytes` zero,
    /// and at least `codec.reach()` long (bytes past the header may be
    /// zeroed, so headers go front to back).
    pub fn deparse_at(&self, p: &Program, h: usize, out: &mut [u8]) {
        let hd = &p.headers[h];
        hd.codec.deparse(&self.f[hd.first_slot..hd.first_slot + hd.nfields], out);
    }

    /// Appends header `h` to `out`.
    pub fn deparse_into(&self, p: &Program, h: usize, out: &mut BitWriter) {
        let hd = &p.headers[h];
        for s in hd.first_slot..hd.first_slot + hd.nfields {
            out.write(p.slots[s].width, self.f[s]);
        }
    }
}
