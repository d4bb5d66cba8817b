//! Seeded payload: word `i` (bytes `8i..8i+8`, little-endian) of a flow
//! is `splitmix64(seed ^ (i / 1024)·φ) + (i mod 1024)·K`, with φ =
//! 2⁶⁴/golden ratio and K odd. Sender and receiver compute it
//! independently, so every delivered byte is verified at its offset
//! without storing or hashing the flow.
//!
//! One hash per 1024 words (8 KiB) and an add per word: hashing every
//! word was a fifth of the simulator's instructions at 10 Gb/s, spent twice
//! per byte (fill and check). Each block a datagram touches is a run of
//! words with its own set-up: blocks of 64 words cut a 1336-byte payload
//! into three or four runs, blocks of 1024 into one or two, and the check
//! costs a quarter less (callgrind, 10 Gb/s dumbbell). Detection is no
//! weaker for what a transport gets wrong: within a block the words differ
//! (K odd, offsets < 1024), and bytes from another block or flow match by
//! chance with odds of 2⁻⁶⁴ per word.

#[inline]
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Words per hashed block.
const BLOCK_WORDS: u64 = 1024;
/// The step between consecutive words of a block (odd: distinct offsets
/// give distinct words).
const WORD_STEP: u64 = 0xD1B5_4A32_D192_ED03;

#[inline]
fn block_base(seed: u64, block: u64) -> u64 {
    splitmix64(seed ^ block.wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// Word `idx` of the flow.
#[inline]
pub fn word(seed: u64, idx: u64) -> u64 {
    block_base(seed, idx / BLOCK_WORDS).wrapping_add((idx % BLOCK_WORDS).wrapping_mul(WORD_STEP))
}

/// Splits `len` bytes from flow offset `offset` into a head up to the next
/// word boundary, whole words, and a tail.
#[inline]
fn split(offset: u64, len: usize) -> (usize, usize) {
    let head = ((8 - offset % 8) % 8) as usize;
    let head = head.min(len);
    (head, (len - head) / 8 * 8)
}

/// Cuts `bytes` whole words, the first being word `idx`, into runs that
/// stay within one block: `(first word index, byte range)` each. Within a
/// run each word is the one before plus K, a loop without a branch per
/// word (the compiler unrolls and vectorises it).
fn block_runs(mut idx: u64, bytes: usize) -> impl Iterator<Item = (u64, std::ops::Range<usize>)> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= bytes {
            return None;
        }
        let words = ((BLOCK_WORDS - idx % BLOCK_WORDS) as usize).min((bytes - at) / 8);
        let run = (idx, at..at + words * 8);
        idx += words as u64;
        at += words * 8;
        Some(run)
    })
}

/// Fills `buf` with the flow's bytes starting at `offset`.
pub fn fill(seed: u64, offset: u64, buf: &mut [u8]) {
    let (head, body) = split(offset, buf.len());
    let mut idx = offset / 8;
    if head > 0 {
        let s = (offset % 8) as usize;
        buf[..head].copy_from_slice(&word(seed, idx).to_le_bytes()[s..s + head]);
        idx += 1;
    }
    let (mid, tail) = buf[head..].split_at_mut(body);
    for (first, range) in block_runs(idx, body) {
        let mut w = word(seed, first);
        for c in mid[range].chunks_exact_mut(8) {
            c.copy_from_slice(&w.to_le_bytes());
            w = w.wrapping_add(WORD_STEP);
        }
    }
    let n = tail.len();
    if n > 0 {
        tail.copy_from_slice(&word(seed, idx + body as u64 / 8).to_le_bytes()[..n]);
    }
}

fn byte_diffs(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).filter(|(x, y)| x != y).count()
}

/// Number of bytes of `buf` that differ from the flow's bytes at `offset`.
pub fn mismatches(seed: u64, offset: u64, buf: &[u8]) -> usize {
    let (head, body) = split(offset, buf.len());
    let mut idx = offset / 8;
    let mut bad = 0;
    if head > 0 {
        let s = (offset % 8) as usize;
        bad += byte_diffs(&word(seed, idx).to_le_bytes()[s..s + head], &buf[..head]);
        idx += 1;
    }
    let (mid, tail) = buf[head..].split_at(body);
    for (first, range) in block_runs(idx, body) {
        let run = &mid[range];
        let got = |c: &[u8]| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            u64::from_le_bytes(b)
        };
        // The whole run compared at once; bytes counted only on a difference.
        let (mut w, mut any) = (word(seed, first), 0u64);
        for c in run.chunks_exact(8) {
            any |= w ^ got(c);
            w = w.wrapping_add(WORD_STEP);
        }
        if any != 0 {
            let mut w = word(seed, first);
            for c in run.chunks_exact(8) {
                bad += (w ^ got(c)).to_le_bytes().iter().filter(|&&b| b != 0).count();
                w = w.wrapping_add(WORD_STEP);
            }
        }
    }
    if !tail.is_empty() {
        bad += byte_diffs(&word(seed, idx + body as u64 / 8).to_le_bytes()[..tail.len()], tail);
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

    #[test]
    fn bytes_follow_the_documented_formula_across_blocks() {
        // Spans three 8 KiB blocks from an unaligned offset.
        let off = 8189u64;
        let mut buf = vec![0u8; 8200];
        fill(42, off, &mut buf);
        for (k, b) in buf.iter().enumerate() {
            let o = off + k as u64;
            let i = o / 8;
            let w = splitmix64(42 ^ (i / 1024).wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .wrapping_add((i % 1024).wrapping_mul(WORD_STEP));
            assert_eq!(*b, w.to_le_bytes()[(o % 8) as usize], "byte {o}");
        }
    }

    #[test]
    fn misplaced_data_is_caught() {
        // A segment delivered at the wrong offset, by a word, a block, or
        // within a block, never verifies.
        let mut seg = vec![0u8; 1336];
        fill(3, 4096, &mut seg);
        for wrong in [4096 - 8, 4096 + 8, 4096 + 512, 4096 - 512, 4096 + 8192, 4096 - 4096, 4096 + 1336, 4096 + 1] {
            assert!(mismatches(3, wrong, &seg) > 1000, "offset {wrong}");
        }
        assert!(mismatches(4, 4096, &seg) > 1000);
    }
}
