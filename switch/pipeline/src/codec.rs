//! A header's fields as positions in its bytes, worked out once at load
//! time: where each field's bits sit inside one big-endian 64- or 128-bit
//! word. Extracting a field is then a load, a shift and a mask, and
//! deparsing one an OR into zeroed bytes, where the streaming `BitReader`
//! and `BitWriter` paid for their bookkeeping on every field of every
//! packet (about 60 instructions a field; a third of a packet's parsing).
//!
//! The word loads read up to 15 bytes past a field, so the fast paths need
//! that much slack after the header: the parser passes the rest of the
//! frame, the deparser a buffer made larger (`Program::deparse_slack`), and
//! a header at the very end of a short frame is copied to a padded buffer.

use crate::bits::{mask, read_bits, write_bits};

#[derive(Clone, Copy, Debug)]
enum FieldPos {
    W64(Narrow),
    /// The field is `(load_u128(off) >> shift) & mask`.
    W128 { off: usize, shift: u32, mask: u128 },
    /// Wider than a 128-bit word allows at its bit offset (a 121..128-bit
    /// field not byte-aligned): read and written bit by bit.
    Bits { bit: usize, width: u32 },
}

/// A field within one 64-bit word: `(load_u64(off) >> shift) & mask`.
#[derive(Clone, Copy, Debug)]
struct Narrow {
    off: usize,
    shift: u32,
    mask: u64,
}

impl Narrow {
    #[inline(always)]
    fn read(&self, data: &[u8]) -> u128 {
        ((load64(data, self.off) >> self.shift) & self.mask) as u128
    }

    #[inline(always)]
    fn write(&self, out: &mut [u8], v: u128) {
        let w = load64(out, self.off) | ((v as u64 & self.mask) << self.shift);
        out[self.off..self.off + 8].copy_from_slice(&w.to_be_bytes());
    }
}

/// The fields' positions: all in 64-bit words (most headers, one loop
/// without a match per field), or any mix.
#[derive(Clone, Debug)]
enum Plan {
    Narrow(Vec<Narrow>, Words),
    General(Vec<FieldPos>),
}

/// The deparse plan of a header whose fields are each at most 64 bits:
/// the header as consecutive big-endian 64-bit words, each assembled in a
/// register from the pieces of the fields it holds and stored once.
/// ORing field by field into memory instead made every field's load
/// overlap the previous field's store only partly, which the CPU cannot
/// forward from its store buffer: a stall of a dozen cycles a field, half
/// of the egress pass's own time.
#[derive(Clone, Debug, Default)]
struct Words {
    /// Pieces of words in order; word `i` is `pieces[ends[i-1]..ends[i]]`.
    pieces: Vec<Piece>,
    ends: Vec<u32>,
}

/// One field's bits inside one word: `((v & mask) >> shr) << shl`.
#[derive(Clone, Copy, Debug)]
struct Piece {
    field: u32,
    mask: u64,
    shr: u32,
    shl: u32,
}

impl Words {
    /// `widths` all at most 64.
    fn new(widths: &[u32]) -> Words {
        let total: usize = widths.iter().map(|&w| w as usize).sum();
        let nwords = total.div_ceil(64);
        let mut words = Words::default();
        for k in 0..nwords {
            let (lo, hi) = (64 * k, 64 * k + 64);
            let mut bit = 0usize;
            for (i, &w) in widths.iter().enumerate() {
                let (b, e) = (bit, bit + w as usize);
                bit = e;
                if w == 0 || e <= lo || b >= hi {
                    continue;
                }
                // The field's least significant bit sits `hi - e` bits above
                // the word's (negative: the field ends in a later word).
                let s = hi as i64 - e as i64;
                let (shr, shl) = if s >= 0 { (0, s as u32) } else { ((-s) as u32, 0) };
                words.pieces.push(Piece { field: i as u32, mask: mask(w) as u64, shr, shl });
            }
            words.ends.push(words.pieces.len() as u32);
        }
        words
    }

    /// Bytes the stores cover.
    fn reach(&self) -> usize {
        self.ends.len() * 8
    }

    #[inline(always)]
    fn deparse(&self, values: &[u128], out: &mut [u8]) {
        let out = &mut out[..self.reach()];
        let mut start = 0usize;
        for (chunk, &end) in out.chunks_exact_mut(8).zip(&self.ends) {
            let mut acc = 0u64;
            for p in &self.pieces[start..end as usize] {
                let v = values.get(p.field as usize).map_or(0, |&v| v as u64);
                acc |= ((v & p.mask) >> p.shr) << p.shl;
            }
            chunk.copy_from_slice(&acc.to_be_bytes());
            start = end as usize;
        }
    }
}

/// The plan for one header type's fields, in order.
#[derive(Clone, Debug)]
pub(crate) struct HeaderCodec {
    plan: Plan,
    /// Bytes a fast extract or deparse may touch from the header's start.
    reach: usize,
}

#[inline(always)]
fn load64(b: &[u8], off: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[off..off + 8]);
    u64::from_be_bytes(w)
}

#[inline(always)]
fn load128(b: &[u8], off: usize) -> u128 {
    let mut w = [0u8; 16];
    w.copy_from_slice(&b[off..off + 16]);
    u128::from_be_bytes(w)
}

impl HeaderCodec {
    /// The plan for fields of these widths, laid out back to back.
    pub fn new(widths: impl IntoIterator<Item = u32>) -> HeaderCodec {
        let widths: Vec<u32> = widths.into_iter().collect();
        let mut fields = Vec::new();
        let mut reach = 0;
        let mut bit = 0usize;
        for &width in &widths {
            let (off, within) = (bit / 8, (bit % 8) as u32);
            let pos = if width == 0 {
                // Reads the header's first word and keeps none of it.
                reach = reach.max(8);
                FieldPos::W64(Narrow { off: 0, shift: 0, mask: 0 })
            } else if within + width <= 64 {
                reach = reach.max(off + 8);
                FieldPos::W64(Narrow { off, shift: 64 - within - width, mask: mask(width) as u64 })
            } else if within + width <= 128 {
                reach = reach.max(off + 16);
                FieldPos::W128 { off, shift: 128 - within - width, mask: mask(width) }
            } else {
                FieldPos::Bits { bit, width }
            };
            fields.push(pos);
            bit += width as usize;
        }
        reach = reach.max(bit.div_ceil(8));
        let narrow: Option<Vec<Narrow>> = fields
            .iter()
            .map(|f| match *f {
                FieldPos::W64(n) => Some(n),
                _ => None,
            })
            .collect();
        let plan = match narrow {
            Some(n) => {
                let words = Words::new(&widths);
                reach = reach.max(words.reach());
                Plan::Narrow(n, words)
            }
            None => Plan::General(fields),
        };
        HeaderCodec { plan, reach }
    }

    /// The header as big-endian 64-bit words, each the OR of pieces
    /// `((field & mask) >> shr) << shl` (field: its index in the header),
    /// when every field fits one word (native code deparses such headers;
    /// the last word's bytes past the header are written as zeros).
    pub(crate) fn words(&self) -> Option<impl Iterator<Item = impl Iterator<Item = (usize, u64, u32, u32)> + '_> + '_> {
        let Plan::Narrow(_, w) = &self.plan else { return None };
        let starts = std::iter::once(0).chain(w.ends.iter().map(|&e| e as usize));
        Some(starts.zip(&w.ends).map(move |(a, &b)| {
            w.pieces[a..b as usize].iter().map(|p| (p.field as usize, p.mask, p.shr, p.shl))
        }))
    }

    /// Each field's position as (byte offset, right shift, mask) within
    /// the big-endian 64-bit word at that offset, when every field fits one
    /// (native code extracts such headers; `reach` bytes must be readable).
    pub(crate) fn narrow_fields(&self) -> Option<impl Iterator<Item = (usize, u32, u64)> + '_> {
        match &self.plan {
            Plan::Narrow(fields, _) => Some(fields.iter().map(|n| (n.off, n.shift, n.mask))),
            Plan::General(_) => None,
        }
    }

    /// Bytes a fast extract or deparse touches from the header's start (at
    /// least the header's own).
    pub fn reach(&self) -> usize {
        self.reach
    }

    /// Field values from `data` (the header's bytes and whatever follows
    /// them), in order, into `out`. Bytes past `nbytes` never reach a value.
    #[inline]
    pub fn extract(&self, data: &[u8], nbytes: usize, out: &mut [u128]) {
        if data.len() < self.reach {
            // Too close to the end of the frame for word loads (the last
            // header of a short frame): the same plan over a copy with room
            // after it, on the stack unless the header is unusually large.
            let n = nbytes.min(data.len());
            let mut stack = [0u8; 256];
            let mut heap = Vec::new();
            let padded: &mut [u8] = if self.reach <= stack.len() {
                &mut stack[..self.reach]
            } else {
                heap.resize(self.reach, 0);
                &mut heap
            };
            padded[..n].copy_from_slice(&data[..n]);
            return self.extract(padded, nbytes, out);
        }
        match &self.plan {
            Plan::Narrow(fields, _) => {
                for (f, o) in fields.iter().zip(out.iter_mut()) {
                    *o = f.read(data);
                }
            }
            Plan::General(fields) => {
                for (f, o) in fields.iter().zip(out.iter_mut()) {
                    *o = match *f {
                        FieldPos::W64(n) => n.read(data),
                        FieldPos::W128 { off, shift, mask } => (load128(data, off) >> shift) & mask,
                        FieldPos::Bits { bit, width } => read_bits(data, bit, width),
                    };
                }
            }
        }
    }

    /// Writes the field values into `out`, whose first `nbytes` are zero
    /// and which has `reach()` bytes. Values are masked to their widths.
    /// Bytes past the header, up to `reach()`, may be overwritten with
    /// zeros: deparse headers front to back.
    #[inline]
    pub fn deparse(&self, values: &[u128], out: &mut [u8]) {
        match &self.plan {
            Plan::Narrow(_, words) => words.deparse(values, out),
            Plan::General(fields) => {
                for (f, &v) in fields.iter().zip(values) {
                    match *f {
                        FieldPos::W64(n) => n.write(out, v),
                        FieldPos::W128 { off, shift, mask } => {
                            let w = load128(out, off) | ((v & mask) << shift);
                            out[off..off + 16].copy_from_slice(&w.to_be_bytes());
                        }
                        FieldPos::Bits { bit, width } => write_bits(out, bit, width, v),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::{BitReader, BitWriter};

    /// The plan agrees with the streaming reader and writer on random
    /// layouts, with and without slack after the header.
    #[test]
    fn plan_matches_streaming() {
        let mut rng = crate::rng::Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut next = move || rng.next_u64();
        for round in 0..3000 {
            let n = (next() % 14 + 1) as usize;
            // Up to 128 bits a field (the general plan), or up to 56 (every
            // field in one 64-bit word: the narrow plan).
            let widest = if round % 3 == 0 { 56 } else { 128 };
            let mut widths: Vec<u32> = (0..n).map(|_| (next() % widest + 1) as u32).collect();
            let total: u32 = widths.iter().sum();
            if total % 8 != 0 {
                widths.push(8 - total % 8);
            }
            let nbytes = widths.iter().sum::<u32>() as usize / 8;
            let values: Vec<u128> = widths
                .iter()
                .map(|&w| (((next() as u128) << 64) | next() as u128) & mask(w))
                .collect();
            let mut bytes = Vec::new();
            let mut bw = BitWriter::new(&mut bytes);
            for (&w, &v) in widths.iter().zip(&values) {
                bw.write(w, v);
            }
            bw.finish();
            let codec = HeaderCodec::new(widths.iter().copied());
            if widths.iter().all(|&w| w <= 57) {
                assert!(matches!(codec.plan, Plan::Narrow(..)), "widths {widths:?}");
            }

            // Extract, with trailing bytes that must not leak in (or none).
            let mut data = bytes.clone();
            if round % 2 == 0 {
                data.extend(std::iter::repeat_n(0xff, 20));
            }
            let mut got = vec![0u128; widths.len()];
            codec.extract(&data, nbytes, &mut got);
            let mut br = BitReader::new(&bytes);
            let streamed: Vec<u128> = widths.iter().map(|&w| br.read(w)).collect();
            assert_eq!(got, streamed, "widths {widths:?}");
            assert_eq!(got, values);

            // Deparse into zeroed bytes with slack.
            let mut out = vec![0u8; codec.reach().max(nbytes)];
            codec.deparse(&values, &mut out);
            assert_eq!(&out[..nbytes], &bytes[..], "widths {widths:?}");
            assert!(out[nbytes..].iter().all(|&b| b == 0));
        }
    }

    /// Headers deparsed front to back into one buffer give their bytes
    /// back to back: a word store past a header's end (zeros) is
    /// overwritten by the next header.
    #[test]
    fn headers_back_to_back() {
        let mut rng = crate::rng::Rng::new(7);
        for _ in 0..500 {
            let layouts: Vec<Vec<u32>> = (0..3)
                .map(|_| {
                    let mut w: Vec<u32> = (0..rng.next_u64() % 6 + 1).map(|_| (rng.next_u64() % 40 + 1) as u32).collect();
                    let total: u32 = w.iter().sum();
                    if total % 8 != 0 {
                        w.push(8 - total % 8);
                    }
                    w
                })
                .collect();
            let mut expect = Vec::new();
            let mut out = vec![0u8; 512];
            let mut at = 0;
            for widths in &layouts {
                let values: Vec<u128> = widths.iter().map(|&w| rng.next_u64() as u128 & mask(w)).collect();
                let mut bw = BitWriter::new(&mut expect);
                for (&w, &v) in widths.iter().zip(&values) {
                    bw.write(w, v);
                }
                bw.finish();
                let codec = HeaderCodec::new(widths.iter().copied());
                codec.deparse(&values, &mut out[at..]);
                at += widths.iter().sum::<u32>() as usize / 8;
            }
            assert_eq!(&out[..at], &expect[..], "layouts {layouts:?}");
        }
    }

    /// Zero-width fields read as 0 and write nothing, however short the
    /// frame.
    #[test]
    fn zero_width_fields() {
        let codec = HeaderCodec::new([0, 8, 0]);
        let mut got = [7u128; 3];
        codec.extract(&[0xab], 1, &mut got);
        assert_eq!(got, [0, 0xab, 0]);
        let mut out = vec![0u8; codec.reach()];
        codec.deparse(&[5, 0xab, 9], &mut out);
        assert_eq!(out[0], 0xab);
        assert!(out[1..].iter().all(|&b| b == 0));
        let empty = HeaderCodec::new([0]);
        let mut one = [7u128];
        empty.extract(&[], 0, &mut one);
        assert_eq!(one, [0]);
    }
}
