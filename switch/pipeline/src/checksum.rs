//! Hash / checksum algorithms of bmv2 (crc16, crc32, crcCCITT, csum16,
//! identity, xor16/32, crc*_custom with their default parameters) and the
//! evaluation of `calculations` (inputs bit-packed exactly like bmv2's
//! BufBuilder: fields of invalid headers skipped, payload appended).

use crate::bits::BitWriter;
use crate::ir::{Calc, CalcInput, HashAlgo, Program};
use crate::phv::Phv;
use std::sync::OnceLock;

struct CrcSpec {
    width: u32,
    poly: u64,
    init: u64,
    xorout: u64,
    refin: bool,
    refout: bool,
}

const CRC16: CrcSpec = CrcSpec { width: 16, poly: 0x8005, init: 0, xorout: 0, refin: true, refout: true };
const CRC32: CrcSpec =
    CrcSpec { width: 32, poly: 0x04c1_1db7, init: 0xffff_ffff, xorout: 0xffff_ffff, refin: true, refout: true };
const CRC_CCITT: CrcSpec =
    CrcSpec { width: 16, poly: 0x1021, init: 0xffff, xorout: 0, refin: false, refout: false };
const CRC8: CrcSpec = CrcSpec { width: 8, poly: 0x07, init: 0, xorout: 0, refin: false, refout: false };
const CRC64: CrcSpec = CrcSpec { width: 64, poly: 0x1b, init: 0, xorout: 0, refin: true, refout: true };

fn wmask(w: u32) -> u64 {
    if w >= 64 {
        u64::MAX
    } else {
        (1u64 << w) - 1
    }
}

/// The low `bits` bits of `v` in reverse order (`bits` in 1..=64). A
/// loop over the bits, run for every byte of a hash's input, was most of
/// the ECMP hash's cost.
#[inline]
fn reflect(v: u64, bits: u32) -> u64 {
    v.reverse_bits() >> (64 - bits)
}

fn make_table(spec: &CrcSpec) -> [u64; 256] {
    let mut t = [0u64; 256];
    let top = 1u64 << (spec.width - 1);
    for (d, slot) in t.iter_mut().enumerate() {
        let mut rem = (d as u64) << (spec.width - 8);
        for _ in 0..8 {
            rem = if rem & top != 0 { (rem << 1) ^ spec.poly } else { rem << 1 };
        }
        *slot = rem & wmask(spec.width);
    }
    t
}

/// The table of the reflected form of a CRC whose input and output are
/// both reflected: the register shifts right, the polynomial reflected,
/// so no byte and no result is reflected on the way (`crc_reflected`).
fn make_table_reflected(spec: &CrcSpec) -> [u64; 256] {
    let poly = reflect(spec.poly, spec.width);
    let mut t = [0u64; 256];
    for (d, slot) in t.iter_mut().enumerate() {
        let mut rem = d as u64;
        for _ in 0..8 {
            rem = if rem & 1 != 0 { (rem >> 1) ^ poly } else { rem >> 1 };
        }
        *slot = rem;
    }
    t
}

/// `crc` of a spec with `refin` and `refout`, computed reflected: the
/// same value, without reflecting each input byte (the ECMP hash's
/// crc16 spent most of its time there).
fn crc_reflected(spec: &CrcSpec, table: &[u64; 256], data: &[u8]) -> u64 {
    let m = wmask(spec.width);
    let mut rem = reflect(spec.init & m, spec.width);
    for &b in data {
        rem = table[((rem ^ b as u64) & 0xff) as usize] ^ (rem >> 8);
    }
    (rem ^ spec.xorout) & m
}

fn crc(spec: &CrcSpec, table: &[u64; 256], data: &[u8]) -> u64 {
    let w = spec.width;
    let m = wmask(w);
    let mut rem = spec.init & m;
    for &b in data {
        let byte = if spec.refin { reflect(b as u64, 8) } else { b as u64 };
        let idx = (byte ^ (rem >> (w - 8))) & 0xff;
        rem = (table[idx as usize] ^ (rem << 8)) & m;
    }
    let out = if spec.refout { reflect(rem, w) } else { rem };
    (out ^ spec.xorout) & m
}

macro_rules! table {
    ($name:ident, $spec:expr, $make:ident) => {
        fn $name() -> &'static [u64; 256] {
            static T: OnceLock<[u64; 256]> = OnceLock::new();
            T.get_or_init(|| $make(&$spec))
        }
    };
}
table!(t_ccitt, CRC_CCITT, make_table);
table!(t_crc8, CRC8, make_table);
// (reflected in and out: the reflected form)
table!(t_crc16, CRC16, make_table_reflected);
table!(t_crc32, CRC32, make_table_reflected);
table!(t_crc64, CRC64, make_table_reflected);

/// Internet checksum (RFC 1071) as bmv2's csum16/cksum16.
pub(crate) fn csum16(data: &[u8]) -> u16 {
    let mut sum: u64 = 0;
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u64;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u64) << 8;
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn xor_hash(data: &[u8], n: usize) -> u64 {
    let mut acc = 0u64;
    for c in data.chunks(n) {
        let mut v = 0u64;
        for i in 0..n {
            v = (v << 8) | *c.get(i).unwrap_or(&0) as u64;
        }
        acc ^= v;
    }
    acc
}

pub(crate) fn hash(algo: HashAlgo, data: &[u8]) -> u64 {
    match algo {
        HashAlgo::Crc16 | HashAlgo::Crc16Custom => crc_reflected(&CRC16, t_crc16(), data),
        HashAlgo::Crc32 | HashAlgo::Crc32Custom => crc_reflected(&CRC32, t_crc32(), data),
        HashAlgo::CrcCcitt => crc(&CRC_CCITT, t_ccitt(), data),
        HashAlgo::Crc8Custom => crc(&CRC8, t_crc8(), data),
        HashAlgo::Crc64Custom => crc_reflected(&CRC64, t_crc64(), data),
        HashAlgo::Csum16 => csum16(data) as u64,
        HashAlgo::Identity => {
            let mut r = 0u64;
            for &b in data.iter().take(8) {
                r = (r << 8) | b as u64;
            }
            r
        }
        HashAlgo::Xor16 => xor_hash(data, 2),
        HashAlgo::Xor32 => xor_hash(data, 4),
    }
}

pub(crate) fn algo_by_name(name: &str) -> Option<HashAlgo> {
    Some(match name {
        "crc16" => HashAlgo::Crc16,
        "crc32" => HashAlgo::Crc32,
        "crcCCITT" => HashAlgo::CrcCcitt,
        "csum16" | "cksum16" => HashAlgo::Csum16,
        "identity" => HashAlgo::Identity,
        "xor16" => HashAlgo::Xor16,
        "xor32" => HashAlgo::Xor32,
        "crc8_custom" => HashAlgo::Crc8Custom,
        "crc16_custom" => HashAlgo::Crc16Custom,
        "crc32_custom" => HashAlgo::Crc32Custom,
        "crc64_custom" => HashAlgo::Crc64Custom,
        _ => return None,
    })
}

/// Builds the calculation input (bmv2 BufBuilder) into `buf`.
pub(crate) fn build_input(p: &Program, c: &Calc, phv: &Phv, payload: &[u8], buf: &mut Vec<u8>) {
    buf.clear();
    let mut w = BitWriter::new(buf);
    let mut with_payload = false;
    for inp in &c.inputs {
        match inp {
            CalcInput::Field { slot, header } => {
                if phv.valid[*header] {
                    w.write(p.slots[*slot].width, phv.f()[*slot]);
                }
            }
            CalcInput::Const { value, bits } => w.write(*bits, *value),
            CalcInput::Header(h) => {
                if phv.valid[*h] {
                    phv.deparse_into(p, *h, &mut w);
                }
            }
            CalcInput::Payload => with_payload = true,
        }
    }
    w.finish();
    if with_payload {
        buf.extend_from_slice(payload);
    }
}

pub(crate) fn calc_output(p: &Program, c: &Calc, phv: &Phv, payload: &[u8], buf: &mut Vec<u8>) -> u64 {
    if let Some(plan) = &c.csum {
        if plan.applies(&phv.valid) {
            return plan.sum(|slot| phv.f()[slot]) as u64;
        }
    }
    build_input(p, c, phv, payload, buf);
    hash(c.algo, buf)
}

/// A csum16 (RFC 1071) over fields and constants, computed without
/// packing them into bytes. The Internet checksum of a bit string X is
/// `!(X mod 0xFFFF)` (2¹⁶ ≡ 1 mod 0xFFFF), with 0xFFFF standing for a
/// non-zero X ≡ 0, so each input adds its value times 2^(its distance from
/// the end, mod 16). Packing and summing bytes was most of an IPv4
/// header update's cost. Only while every input's header is valid: a field
/// of an invalid header is skipped and shifts the ones after it.
#[derive(Clone, Debug)]
pub(crate) struct Csum16Plan {
    /// Inputs up to 16 bits: (slot, mask, multiplier 2^k). Such a value is
    /// its own one 16-bit word: no folding of words.
    short: Vec<(usize, u64, u64)>,
    /// Inputs of 17 to 64 bits: (slot, mask, multiplier 2^k).
    narrow: Vec<(usize, u64, u64)>,
    /// Wider inputs: (slot, mask, multiplier).
    wide: Vec<(usize, u128, u64)>,
    /// The constants' share of the sum, and whether any constant is non-zero.
    consts: (u64, bool),
    /// The headers of the field inputs.
    headers: Vec<usize>,
}

const ONES: u64 = 0xFFFF;

/// `v mod 0xFFFF` up to a multiple of 0xFFFF: the sum of its 16-bit words.
#[inline]
fn words16(v: u64) -> u64 {
    (v & ONES) + ((v >> 16) & ONES) + ((v >> 32) & ONES) + (v >> 48)
}

#[inline]
fn words16_wide(v: u128) -> u64 {
    words16(v as u64) + words16((v >> 64) as u64)
}

impl Csum16Plan {
    pub fn new(algo: HashAlgo, inputs: &[CalcInput], width: impl Fn(usize) -> u32) -> Option<Csum16Plan> {
        if algo != HashAlgo::Csum16 {
            return None;
        }
        // (slot or constant, width), in input order.
        let mut spans: Vec<(Result<usize, u128>, u32)> = Vec::new();
        let mut headers = Vec::new();
        for inp in inputs {
            match *inp {
                CalcInput::Field { slot, header } => {
                    spans.push((Ok(slot), width(slot)));
                    if !headers.contains(&header) {
                        headers.push(header);
                    }
                }
                CalcInput::Const { value, bits } => spans.push((Err(value), bits)),
                CalcInput::Header(_) | CalcInput::Payload => return None,
            }
        }
        if spans.iter().any(|&(_, w)| w == 0 || w > 128) {
            return None;
        }
        // The bytes are padded to a whole byte, then csum16 pads to a whole word.
        let total: u32 = spans.iter().map(|&(_, w)| w).sum();
        let len = total.div_ceil(16) * 16;
        let mut plan = Csum16Plan { short: Vec::new(), narrow: Vec::new(), wide: Vec::new(), consts: (0, false), headers };
        let mut end = 0u32;
        for (src, w) in spans {
            end += w;
            let mul = 1u64 << ((len - end) % 16);
            let mask = if w >= 128 { u128::MAX } else { (1u128 << w) - 1 };
            match src {
                Err(c) => {
                    let c = c & mask;
                    plan.consts.0 += words16_wide(c) * mul;
                    plan.consts.1 |= c != 0;
                }
                Ok(slot) if w <= 16 => plan.short.push((slot, mask as u64, mul)),
                Ok(slot) if w <= 64 => plan.narrow.push((slot, mask as u64, mul)),
                Ok(slot) => plan.wide.push((slot, mask, mul)),
            }
        }
        Some(plan)
    }

    /// The plan for native code (jit): inputs of up to 16 bits and of 17
    /// to 64 bits as (slot, mask, multiplier), the constants' share, and
    /// the headers that must be valid; None if an input is wider than 64
    /// bits. (The sum alone tells whether any input is non-zero.)
    #[allow(clippy::type_complexity)]
    pub(crate) fn narrow_parts(&self) -> Option<(&[(usize, u64, u64)], &[(usize, u64, u64)], u64, &[usize])> {
        self.wide.is_empty().then_some((&self.short[..], &self.narrow[..], self.consts.0, &self.headers[..]))
    }

    /// Whether the plan holds for a packet with these valid headers.
    pub fn applies(&self, valid: &[bool]) -> bool {
        self.headers.iter().all(|&h| valid[h])
    }

    pub fn sum(&self, value: impl Fn(usize) -> u128) -> u16 {
        let (mut acc, mut any) = self.consts;
        let mut bits = 0u64;
        for &(slot, mask, mul) in &self.short {
            let v = value(slot) as u64 & mask;
            bits |= v;
            acc += v * mul;
        }
        for &(slot, mask, mul) in &self.narrow {
            let v = value(slot) as u64 & mask;
            bits |= v;
            // < 2¹⁸ · 2¹⁵ per term: a u64 holds millions of them.
            acc += words16(v) * mul;
        }
        for &(slot, mask, mul) in &self.wide {
            let v = value(slot) & mask;
            any |= v != 0;
            acc += words16_wide(v) * mul;
        }
        any |= bits != 0;
        let r = acc % ONES;
        let folded = if r == 0 && any { ONES } else { r };
        !(folded as u16)
    }
}

/// The legacy "ipv4" checksum type: csum16 over the header with the
/// checksum field (bytes 10-11) zeroed.
pub(crate) fn ipv4_checksum(p: &Program, h: usize, phv: &Phv, buf: &mut Vec<u8>) -> u64 {
    let nbytes = p.headers[h].nbytes;
    buf.clear();
    let mut w = BitWriter::new(buf);
    phv.deparse_into(p, h, &mut w);
    w.finish();
    buf.resize(nbytes, 0);
    if nbytes >= 12 {
        buf[10] = 0;
        buf[11] = 0;
    }
    csum16(buf) as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    const CHECK: &[u8] = b"123456789";
    #[test]
    fn check_values() {
        assert_eq!(hash(HashAlgo::Crc16, CHECK), 0xbb3d);
        assert_eq!(hash(HashAlgo::Crc32, CHECK), 0xcbf4_3926);
        assert_eq!(hash(HashAlgo::CrcCcitt, CHECK), 0x29b1);
        assert_eq!(hash(HashAlgo::Crc8Custom, CHECK), 0xf4);
        assert_eq!(hash(HashAlgo::Identity, &[1, 2, 3]), 0x010203);
        assert_eq!(hash(HashAlgo::Xor16, &[0xab, 0xcd, 0x01]), 0xabcd ^ 0x0100);
    }
    /// `reflect` as the definition reads: bit i of the low `bits` to bit
    /// `bits - 1 - i`, the rest dropped; every width a CRC here has and
    /// then some.
    #[test]
    fn reflect_reverses_the_low_bits() {
        let by_loop = |mut v: u64, bits: u32| {
            let mut r = 0u64;
            for i in 0..bits {
                r |= (v & 1) << (bits - 1 - i);
                v >>= 1;
            }
            r
        };
        let mut x: u64 = 0x0123_4567_89ab_cdef;
        for bits in 1..=64 {
            for _ in 0..50 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                assert_eq!(reflect(x, bits), by_loop(x, bits), "{x:#x}, {bits} bits");
            }
        }
        assert_eq!(reflect(0x1, 8), 0x80);
        assert_eq!(reflect(0x8000, 16), 0x1);
    }
    /// The reflected form gives what the definition (reflect each byte in,
    /// the result out) gives, for every reflected spec, on random inputs
    /// of every length up to 40 bytes.
    #[test]
    fn reflected_crcs_match_the_definition() {
        let mut x: u64 = 7;
        for spec in [&CRC16, &CRC32, &CRC64] {
            assert!(spec.refin && spec.refout);
            let (plain, reflected) = (make_table(spec), make_table_reflected(spec));
            for len in 0..40 {
                for _ in 0..20 {
                    let data: Vec<u8> = (0..len)
                        .map(|_| {
                            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                            (x >> 56) as u8
                        })
                        .collect();
                    assert_eq!(crc_reflected(spec, &reflected, &data), crc(spec, &plain, &data), "width {}, {data:?}", spec.width);
                }
            }
        }
    }
    #[test]
    fn internet_checksum() {
        // RFC 1071 style example: IPv4 header with checksum 0xb861
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(csum16(&hdr), 0xb861);
        assert_eq!(csum16(&[0x01]), !0x0100);
    }

    /// The plan against packing the bits and summing the bytes, on random
    /// values (zeros and all-ones included) for IPv4's layout and for odd
    /// widths that leave partial bytes and words.
    #[test]
    fn csum16_plan_matches_the_packed_bytes() {
        let layouts: [&[u32]; 5] = [
            &[4, 4, 8, 16, 16, 3, 13, 8, 8, 16, 32, 32],
            &[3, 5, 7],
            &[1],
            &[48, 48, 16, 100, 9],
            &[128, 128, 12],
        ];
        let mut rng = crate::rng::Rng::new(7);
        for widths in layouts {
            let inputs: Vec<CalcInput> =
                (0..widths.len()).map(|i| CalcInput::Field { slot: i, header: 0 }).collect();
            let plan = Csum16Plan::new(HashAlgo::Csum16, &inputs, |s| widths[s]).expect("fields only");
            for round in 0..2000 {
                let vals: Vec<u128> = widths
                    .iter()
                    .map(|_| match round % 3 {
                        0 => 0,
                        1 => u128::MAX,
                        _ => (rng.next_u64() as u128) << 64 | rng.next_u64() as u128,
                    } & if round % 7 == 0 { 0 } else { u128::MAX })
                    .collect();
                let mut buf = Vec::new();
                let mut w = BitWriter::new(&mut buf);
                for (v, &width) in vals.iter().zip(widths) {
                    w.write(width, *v);
                }
                w.finish();
                assert_eq!(plan.sum(|s| vals[s]), csum16(&buf), "widths {widths:?} values {vals:x?}");
            }
        }
        // Constants between fields (one wider than its bits: only the bits count).
        let inputs = [
            CalcInput::Field { slot: 0, header: 0 },
            CalcInput::Const { value: 0x1_2345, bits: 12 },
            CalcInput::Field { slot: 1, header: 1 },
            CalcInput::Const { value: 0, bits: 5 },
        ];
        let widths = [16u32, 20];
        let plan = Csum16Plan::new(HashAlgo::Csum16, &inputs, |s| widths[s]).expect("fields and constants");
        for round in 0..500u64 {
            let vals = [(round * 2654435761) as u128 & 0xffff, if round % 5 == 0 { 0 } else { round as u128 * 977 }];
            let mut buf = Vec::new();
            let mut w = BitWriter::new(&mut buf);
            w.write(16, vals[0]);
            w.write(12, 0x1_2345);
            w.write(20, vals[1]);
            w.write(5, 0);
            w.finish();
            assert_eq!(plan.sum(|s| vals[s]), csum16(&buf), "values {vals:x?}");
        }
        let with_payload = [CalcInput::Field { slot: 0, header: 0 }, CalcInput::Payload];
        assert!(Csum16Plan::new(HashAlgo::Csum16, &with_payload, |_| 16).is_none());
        assert!(Csum16Plan::new(HashAlgo::Crc16, &with_payload[..1], |_| 16).is_none());
    }
}
