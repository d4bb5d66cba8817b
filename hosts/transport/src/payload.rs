//! Seeded payload: byte `o` of a flow is byte `o % 8` (little-endian) of
//! `splitmix64(seed ^ (o / 8) * 0x9E3779B97F4A7C15)`. Sender and receiver
//! compute it independently, so every delivered byte is verified at its
//! offset without storing or hashing the flow.

#[inline]
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[inline]
pub fn word(seed: u64, idx: u64) -> u64 {
    splitmix64(seed ^ idx.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Fills `buf` with the flow's bytes starting at `offset`.
pub fn fill(seed: u64, offset: u64, buf: &mut [u8]) {
    let mut pos = offset;
    let mut i = 0;
    // A partial first word, then whole words (most of a packet), then the rest.
    while i < buf.len() {
        let start = (pos % 8) as usize;
        let w = word(seed, pos / 8).to_le_bytes();
        if start == 0 && buf.len() - i >= 8 {
            buf[i..i + 8].copy_from_slice(&w);
            i += 8;
            pos += 8;
            continue;
        }
        let n = (8 - start).min(buf.len() - i);
        buf[i..i + n].copy_from_slice(&w[start..start + n]);
        i += n;
        pos += n as u64;
    }
}

/// Number of bytes of `buf` that differ from the flow's bytes at `offset`.
pub fn mismatches(seed: u64, offset: u64, buf: &[u8]) -> usize {
    let mut pos = offset;
    let mut i = 0;
    let mut bad = 0;
    while i < buf.len() {
        let start = (pos % 8) as usize;
        let w = word(seed, pos / 8);
        if start == 0 && buf.len() - i >= 8 {
            // Whole words compare as one; bytes are counted only on a difference.
            let mut got = [0u8; 8];
            got.copy_from_slice(&buf[i..i + 8]);
            let diff = w ^ u64::from_le_bytes(got);
            if diff != 0 {
                bad += diff.to_le_bytes().iter().filter(|&&b| b != 0).count();
            }
            i += 8;
            pos += 8;
            continue;
        }
        let wb = w.to_le_bytes();
        let n = (8 - start).min(buf.len() - i);
        bad += wb[start..start + n].iter().zip(&buf[i..i + n]).filter(|(a, b)| a != b).count();
        i += n;
        pos += n as u64;
    }
    bad
}

pub fn verify(seed: u64, offset: u64, buf: &[u8]) -> bool {
    mismatches(seed, offset, buf) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn fill_is_offset_consistent() {
        let mut whole = vec![0u8; 1000];
        fill(7, 13, &mut whole);
        for (off, len) in [(0usize, 1usize), (1, 7), (5, 8), (8, 9), (100, 333), (999, 1)] {
            let mut part = vec![0u8; len];
            fill(7, 13 + off as u64, &mut part);
            assert_eq!(&part[..], &whole[off..off + len]);
            assert!(verify(7, 13 + off as u64, &part));
            assert!(!verify(8, 13 + off as u64, &part) || len < 4);
        }
        let mut bad = whole.clone();
        bad[500] ^= 1;
        bad[501] ^= 0xff;
        assert_eq!(mismatches(7, 13, &bad), 2);
    }
}
