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

fn reflect(mut v: u64, bits: u32) -> u64 {
    let mut r = 0u64;
    for i in 0..bits {
        if v & 1 == 1 {
            r |= 1 << (bits - 1 - i);
        }
        v >>= 1;
    }
    r
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
    ($name:ident, $spec:expr) => {
        fn $name() -> &'static [u64; 256] {
            static T: OnceLock<[u64; 256]> = OnceLock::new();
            T.get_or_init(|| make_table(&$spec))
        }
    };
}
table!(t_crc16, CRC16);
table!(t_crc32, CRC32);
table!(t_ccitt, CRC_CCITT);
table!(t_crc8, CRC8);
table!(t_crc64, CRC64);

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
        HashAlgo::Crc16 | HashAlgo::Crc16Custom => crc(&CRC16, t_crc16(), data),
        HashAlgo::Crc32 | HashAlgo::Crc32Custom => crc(&CRC32, t_crc32(), data),
        HashAlgo::CrcCcitt => crc(&CRC_CCITT, t_ccitt(), data),
        HashAlgo::Crc8Custom => crc(&CRC8, t_crc8(), data),
        HashAlgo::Crc64Custom => crc(&CRC64, t_crc64(), data),
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
    build_input(p, c, phv, payload, buf);
    hash(c.algo, buf)
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
}
