//! P4Runtime binary strings (spec §8.4 "Bytestrings").
//!
//! Received values may be padded with leading zero bytes; the value must fit
//! the P4Info bitwidth once leading zero bits are removed, and an empty
//! string is always refused: both are `OUT_OF_RANGE`. Values sent back are
//! canonical: the shortest string, at least one byte.

/// Why a received binary string was refused (maps to `OUT_OF_RANGE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BytesError {
    Empty,
    TooWide { bitwidth: u32, got_bits: u32 },
}

impl std::fmt::Display for BytesError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BytesError::Empty => write!(f, "empty byte string"),
            BytesError::TooWide { bitwidth, got_bits } => {
                write!(f, "value needs {got_bits} bits but the field is {bitwidth} bits wide")
            }
        }
    }
}

/// Number of significant bits of a big-endian unsigned value.
pub fn significant_bits(b: &[u8]) -> u32 {
    for (i, &x) in b.iter().enumerate() {
        if x != 0 {
            return (b.len() - i - 1) as u32 * 8 + (8 - x.leading_zeros());
        }
    }
    0
}

/// Bytes needed for `bitwidth` bits.
pub fn width_bytes(bitwidth: u32) -> usize {
    (bitwidth as usize).div_ceil(8).max(1)
}

/// Checks a received `bit<bitwidth>` value and returns it padded to exactly
/// `ceil(bitwidth / 8)` bytes, big-endian.
pub fn to_width(b: &[u8], bitwidth: u32) -> Result<Vec<u8>, BytesError> {
    if b.is_empty() {
        return Err(BytesError::Empty);
    }
    let bits = significant_bits(b);
    if bits > bitwidth {
        return Err(BytesError::TooWide { bitwidth, got_bits: bits });
    }
    let n = width_bytes(bitwidth);
    let mut out = vec![0u8; n];
    let src = if b.len() > n { &b[b.len() - n..] } else { b };
    out[n - src.len()..].copy_from_slice(src);
    Ok(out)
}

/// The canonical (shortest) form of a value: leading zero bytes removed,
/// one byte kept for zero.
pub fn canonical(b: &[u8]) -> Vec<u8> {
    let first = b.iter().position(|&x| x != 0).unwrap_or(b.len().saturating_sub(1));
    if b.is_empty() {
        return vec![0];
    }
    b[first..].to_vec()
}

/// All-ones value of `bitwidth` bits, padded to its byte width.
pub fn max_value(bitwidth: u32) -> Vec<u8> {
    let n = width_bytes(bitwidth);
    let mut v = vec![0xffu8; n];
    let extra = (n * 8) as u32 - bitwidth;
    if extra > 0 && bitwidth > 0 {
        v[0] = 0xff >> extra;
    }
    if bitwidth == 0 {
        v[0] = 0;
    }
    v
}

/// Mask with the top `prefix_len` bits of a `bitwidth`-bit value set.
pub fn prefix_mask(bitwidth: u32, prefix_len: u32) -> Vec<u8> {
    let n = width_bytes(bitwidth);
    let pad = (n * 8) as u32 - bitwidth;
    let mut m = vec![0u8; n];
    for bit in 0..prefix_len.min(bitwidth) {
        let pos = pad + bit; // from the most significant bit of the padded value
        m[(pos / 8) as usize] |= 0x80 >> (pos % 8);
    }
    m
}

/// `a & !mask != 0` for equal-length values.
pub fn has_bits_outside(a: &[u8], mask: &[u8]) -> bool {
    a.iter().zip(mask).any(|(x, m)| x & !m != 0)
}

pub fn is_zero(a: &[u8]) -> bool {
    a.iter().all(|&x| x == 0)
}

/// Big-endian integer of at most 16 bytes (for ranges and indices).
pub fn to_u128(b: &[u8]) -> u128 {
    b.iter().rev().take(16).rev().fold(0u128, |acc, &x| (acc << 8) | x as u128)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_examples_valid() {
        assert_eq!(to_width(b"\x63", 8).unwrap(), vec![0x63]);
        assert_eq!(to_width(b"\x00\x63", 16).unwrap(), vec![0, 0x63]);
        assert_eq!(to_width(b"\x63", 16).unwrap(), vec![0, 0x63]);
        assert_eq!(to_width(b"\x00\x30\x64", 16).unwrap(), vec![0x30, 0x64]);
        assert_eq!(to_width(b"\x00\x63", 12).unwrap(), vec![0, 0x63]);
        assert_eq!(to_width(b"\x00\x00\x63", 12).unwrap(), vec![0, 0x63]);
        assert_eq!(to_width(b"\x01\xff", 9).unwrap(), vec![1, 0xff]);
    }

    #[test]
    fn spec_examples_invalid() {
        assert!(to_width(b"\x01\x63", 8).is_err());
        assert_eq!(to_width(b"", 8), Err(BytesError::Empty));
        assert!(to_width(b"\x01\x00\x63", 16).is_err());
        assert!(to_width(b"\x10\x63", 12).is_err());
        assert!(to_width(b"\x01\x00\x63", 12).is_err());
        assert!(to_width(b"\x00\x40\x63", 12).is_err());
        assert!(to_width(b"\x02\x00", 9).is_err());
    }

    #[test]
    fn canonical_strips() {
        assert_eq!(canonical(&[0, 0, 5]), vec![5]);
        assert_eq!(canonical(&[0, 0]), vec![0]);
        assert_eq!(canonical(&[1, 0]), vec![1, 0]);
        assert_eq!(canonical(&[]), vec![0]);
    }

    #[test]
    fn masks() {
        assert_eq!(prefix_mask(32, 24), vec![0xff, 0xff, 0xff, 0]);
        assert_eq!(prefix_mask(9, 1), vec![0x01, 0x00]);
        assert_eq!(prefix_mask(9, 9), vec![0x01, 0xff]);
        assert_eq!(max_value(9), vec![0x01, 0xff]);
        assert_eq!(max_value(16), vec![0xff, 0xff]);
        assert!(has_bits_outside(&[0x0a, 0x01], &[0xff, 0x00]));
        assert_eq!(significant_bits(&[0, 0x01, 0]), 9);
    }
}
