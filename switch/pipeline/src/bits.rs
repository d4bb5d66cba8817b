//! Big-endian values in bytes: width masks, byte strings <-> u128 (table
//! keys, action data, JSON constants), and bit fields in byte buffers:
//! random access (`read_bits`, `write_bits`, for lookahead and odd
//! offsets) and streaming
//! (`BitReader`, `BitWriter`, for whole headers). Streaming moves 64 bits
//! per memory access instead of one byte per field, which is what
//! extracting and deparsing every header of every packet wants.

#[inline]
fn mask64(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// The low `width` bits set (all 128 for `width` >= 128).
#[inline]
pub(crate) fn mask(width: u32) -> u128 {
    if width >= 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    }
}

/// Big-endian bytes to u128; None if the value needs more than 128 bits.
pub(crate) fn bytes_to_u128(b: &[u8]) -> Option<u128> {
    let mut v: u128 = 0;
    let mut seen = 0usize;
    for &x in b {
        if seen == 0 && x == 0 {
            continue;
        }
        seen += 1;
        if seen > 16 {
            return None;
        }
        v = (v << 8) | x as u128;
    }
    Some(v)
}

/// A value as ceil(width/8) big-endian bytes.
pub(crate) fn bytes_of(v: u128, width: u32) -> Vec<u8> {
    let n = (width as usize).div_ceil(8).max(1);
    let full = v.to_be_bytes();
    full[16 - n.min(16)..].to_vec()
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

/// Reads consecutive fields from the start of a byte slice. Bits past the
/// end read as zero. (Headers are extracted by codec.rs; this is the
/// reference its tests compare against.)
#[cfg(test)]
pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    /// Next byte of `data` to load.
    pos: usize,
    /// Loaded bits not yet consumed: the low `nbits` bits of `acc`.
    acc: u128,
    nbits: u32,
}

#[cfg(test)]
impl<'a> BitReader<'a> {
    pub fn new(data: &'a [u8]) -> BitReader<'a> {
        BitReader { data, pos: 0, acc: 0, nbits: 0 }
    }

    #[inline]
    fn refill(&mut self) {
        // nbits < 64 here, so 64 more bits fit in the accumulator.
        let word = match self.data.get(self.pos..self.pos + 8) {
            Some(b) => u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            None => {
                let mut b = [0u8; 8];
                let rest = self.data.get(self.pos..).unwrap_or(&[]);
                b[..rest.len()].copy_from_slice(rest);
                u64::from_be_bytes(b)
            }
        };
        self.pos += 8;
        self.acc = (self.acc << 64) | word as u128;
        self.nbits += 64;
    }

    #[inline]
    fn read64(&mut self, width: u32) -> u64 {
        if self.nbits < width {
            self.refill();
        }
        self.nbits -= width;
        (self.acc >> self.nbits) as u64 & mask64(width)
    }

    /// The next `width` (<= 128) bits.
    #[inline]
    pub fn read(&mut self, width: u32) -> u128 {
        if width <= 64 {
            self.read64(width) as u128
        } else {
            let hi = self.read64(width - 64) as u128;
            (hi << 64) | self.read64(64) as u128
        }
    }
}

/// Appends consecutive fields to a byte vector.
pub(crate) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    /// Bits written but not yet stored: the low `nbits` bits of `acc`.
    acc: u128,
    nbits: u32,
}

impl<'a> BitWriter<'a> {
    pub fn new(out: &'a mut Vec<u8>) -> BitWriter<'a> {
        BitWriter { out, acc: 0, nbits: 0 }
    }

    #[inline(always)]
    fn write64(&mut self, width: u32, v: u64) {
        // nbits < 64 here, so `width` more bits fit in the accumulator.
        self.acc = (self.acc << width) | (v & mask64(width)) as u128;
        self.nbits += width;
        if self.nbits >= 64 {
            self.nbits -= 64;
            self.out.extend_from_slice(&((self.acc >> self.nbits) as u64).to_be_bytes());
        }
    }

    /// Appends the low `width` (<= 128) bits of `v`.
    #[inline(always)]
    pub fn write(&mut self, width: u32, v: u128) {
        if width <= 64 {
            self.write64(width, v as u64);
        } else {
            self.write64(width - 64, (v >> 64) as u64);
            self.write64(64, v as u64);
        }
    }

    /// Stores what is left; a last partial byte is padded with zeros.
    pub fn finish(self) {
        let mut n = self.nbits;
        while n >= 8 {
            n -= 8;
            self.out.push((self.acc >> n) as u8);
        }
        if n > 0 {
            self.out.push(((self.acc << (8 - n)) & 0xff) as u8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_access_roundtrip() {
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

    /// Streaming agrees with random access on random field layouts.
    #[test]
    fn streaming_matches_random_access() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..2000 {
            let n = (next() % 12 + 1) as usize;
            let widths: Vec<u32> = (0..n).map(|_| (next() % 128 + 1) as u32).collect();
            let total: usize = widths.iter().map(|&w| w as usize).sum();
            let values: Vec<u128> = widths
                .iter()
                .map(|&w| {
                    let v = ((next() as u128) << 64) | next() as u128;
                    if w == 128 { v } else { v & ((1u128 << w) - 1) }
                })
                .collect();
            let mut expect = vec![0u8; total.div_ceil(8)];
            let mut bit = 0;
            for (&w, &v) in widths.iter().zip(&values) {
                write_bits(&mut expect, bit, w, v);
                bit += w as usize;
            }
            let mut got = Vec::new();
            let mut bw = BitWriter::new(&mut got);
            for (&w, &v) in widths.iter().zip(&values) {
                bw.write(w, v);
            }
            bw.finish();
            assert_eq!(got, expect, "widths {widths:?}");
            let mut br = BitReader::new(&got);
            let mut bit = 0;
            for (&w, &v) in widths.iter().zip(&values) {
                assert_eq!(br.read(w), v);
                assert_eq!(read_bits(&got, bit, w), v);
                bit += w as usize;
            }
            // past the end: zeros
            assert_eq!(br.read(64), 0);
        }
    }
}
