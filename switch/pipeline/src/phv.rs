//! The packet header vector: one u128 slot per field (values stored masked
//! to the field width, signed fields as two's complement bit patterns),
//! header validity bits and the `next` index of every header stack.

use crate::program::{Program, SlotInfo};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Phv {
    pub f: Vec<u128>,
    pub valid: Vec<bool>,
    pub next: Vec<u32>,
}

#[inline]
pub(crate) fn mask(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

/// The value to store in a field of the given kind (truncate, or clamp for
/// saturating fields), as bmv2's Field::export_bytes does.
#[inline]
pub(crate) fn fit(info: &SlotInfo, v: i128) -> u128 {
    let w = info.width;
    if info.saturating && w < 128 {
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
        let mut phv = Phv {
            f: vec![0; p.slots.len()],
            valid: vec![false; p.headers.len()],
            next: vec![0; p.stacks.len()],
        };
        phv.reset(p);
        phv
    }

    /// Fresh packet: every header invalid and zero, metadata valid and zero.
    pub fn reset(&mut self, p: &Program) {
        self.f.iter_mut().for_each(|x| *x = 0);
        for (i, h) in p.headers.iter().enumerate() {
            self.valid[i] = h.metadata;
        }
        self.next.iter_mut().for_each(|x| *x = 0);
    }

    pub fn reset_metadata(&mut self, p: &Program) {
        for h in p.headers.iter().filter(|h| h.metadata) {
            self.f[h.first_slot..h.first_slot + h.nfields].iter_mut().for_each(|x| *x = 0);
        }
    }

    #[inline]
    pub fn set(&mut self, p: &Program, slot: usize, v: i128) {
        self.f[slot] = fit(&p.slots[slot], v);
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
        self.f[hd.first_slot..hd.first_slot + hd.nfields].iter_mut().for_each(|x| *x = 0);
    }

    /// Swaps values and validity of two headers of the same type.
    pub fn swap_headers(&mut self, p: &Program, a: usize, b: usize) {
        if a == b {
            return;
        }
        let (ha, hb) = (&p.headers[a], &p.headers[b]);
        for i in 0..ha.nfields.min(hb.nfields) {
            self.f.swap(ha.first_slot + i, hb.first_slot + i);
        }
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
        for i in 0..hd.nfields.min(hs.nfields) {
            let v = load(&p.slots[hs.first_slot + i], self.f[hs.first_slot + i]);
            self.f[hd.first_slot + i] = fit(&p.slots[hd.first_slot + i], v);
        }
    }

    /// bmv2 `PHV::copy_headers` (used for E2E clones): validity, values of
    /// valid and metadata headers, stack indices. Metadata is reset by the
    /// caller as bmv2 does.
    pub fn copy_from(&mut self, src: &Phv) {
        self.f.copy_from_slice(&src.f);
        self.valid.copy_from_slice(&src.valid);
        self.next.copy_from_slice(&src.next);
    }

    /// Extracts header `h` from `data` (which must hold enough bytes).
    pub fn extract(&mut self, p: &Program, h: usize, data: &[u8]) {
        let hd = &p.headers[h];
        let mut bit = 0usize;
        for i in 0..hd.nfields {
            let w = p.slots[hd.first_slot + i].width;
            self.f[hd.first_slot + i] = read_bits(data, bit, w);
            bit += w as usize;
        }
        self.set_valid(p, h);
    }

    /// Writes header `h` into `out` at bit offset `bit` (out already sized).
    pub fn deparse_into(&self, p: &Program, h: usize, out: &mut [u8], mut bit: usize) -> usize {
        let hd = &p.headers[h];
        for i in 0..hd.nfields {
            let w = p.slots[hd.first_slot + i].width;
            write_bits(out, bit, w, self.f[hd.first_slot + i]);
            bit += w as usize;
        }
        bit
    }
}

/// Reads `width` (<= 128) bits starting at bit `bit` of `data`, big-endian.
/// Bits beyond the end of `data` read as zero.
pub(crate) fn read_bits(data: &[u8], bit: usize, width: u32) -> u128 {
    let mut v: u128 = 0;
    let mut remaining = width as usize;
    let mut pos = bit;
    if pos.is_multiple_of(8) && remaining.is_multiple_of(8) {
        let start = pos / 8;
        for i in 0..remaining / 8 {
            v = (v << 8) | *data.get(start + i).unwrap_or(&0) as u128;
        }
        return v;
    }
    while remaining > 0 {
        let byte = *data.get(pos / 8).unwrap_or(&0) as u32;
        let bo = pos % 8;
        let avail = 8 - bo;
        let take = avail.min(remaining);
        let bits = (byte >> (avail - take)) & ((1u32 << take) - 1);
        v = (v << take) | bits as u128;
        pos += take;
        remaining -= take;
    }
    v
}

/// Writes the low `width` bits of `v` at bit `bit` of `out`, big-endian.
/// Bits beyond the end of `out` are dropped.
pub(crate) fn write_bits(out: &mut [u8], bit: usize, width: u32, v: u128) {
    let mut remaining = width as usize;
    let mut pos = bit;
    if pos.is_multiple_of(8) && remaining.is_multiple_of(8) {
        let start = pos / 8;
        let n = remaining / 8;
        for i in 0..n {
            if let Some(b) = out.get_mut(start + i) {
                *b = (v >> (8 * (n - 1 - i))) as u8;
            }
        }
        return;
    }
    while remaining > 0 {
        let bo = pos % 8;
        let avail = 8 - bo;
        let take = avail.min(remaining);
        let shift = remaining - take;
        let bits = ((v >> shift) as u32) & ((1u32 << take) - 1);
        let m = (((1u32 << take) - 1) << (avail - take)) as u8;
        if let Some(b) = out.get_mut(pos / 8) {
            *b = (*b & !m) | ((bits << (avail - take)) as u8 & m);
        }
        pos += take;
        remaining -= take;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn bits_roundtrip() {
        let data = [0x45u8, 0xb8, 0x12, 0x34, 0xff];
        assert_eq!(read_bits(&data, 0, 4), 4);
        assert_eq!(read_bits(&data, 4, 4), 5);
        assert_eq!(read_bits(&data, 8, 6), 0x2e);
        assert_eq!(read_bits(&data, 14, 2), 0);
        assert_eq!(read_bits(&data, 16, 16), 0x1234);
        assert_eq!(read_bits(&data, 36, 8), 0xf0); // past the end reads zero
        let mut out = [0u8; 5];
        write_bits(&mut out, 0, 4, 4);
        write_bits(&mut out, 4, 4, 5);
        write_bits(&mut out, 8, 6, 0x2e);
        write_bits(&mut out, 14, 2, 0);
        write_bits(&mut out, 16, 16, 0x1234);
        write_bits(&mut out, 32, 8, 0xff);
        assert_eq!(out, data);
        let mut big = [0u8; 17];
        write_bits(&mut big, 4, 128, u128::MAX - 5);
        assert_eq!(read_bits(&big, 4, 128), u128::MAX - 5);
        assert_eq!(big[0], 0x0f);
    }
}
