//! The p4cc telemetry shim (fixed by the P4 program; see docs/transport.md
//! and docs/wire-format.md).
//!
//! ```text
//! byte 0    version: 1, or 2 (INT records for HPCC and PowerTCP)
//! byte 1    hop_count: number of hop records that follow (<= 4), newest first
//! byte 2    flags: bit0 = overflow (a switch found the record stack full)
//! byte 3    units: low nibble = depth unit (0 = packets, 1 = 80-byte cells),
//!           high nibble = time unit of the hop records (0 = µs, 1 = ns)
//! bytes 4-7 max_qdepth: u32 BE, path maximum of enq_qdepth, in the depth unit
//! version 1, hop_count 20-byte records:
//!           switch_id u16, egress_port u16, enq_qdepth u32,
//!           deq_timedelta u32, egress_ts u64 (all BE)
//! version 2, hop_count 32-byte records: the same 20 bytes, then
//!           qlen_bytes u32, tx_bytes u32 (wrapping), rate_kbps u32
//! ```
//!
//! v1model targets write units 0x00 (packets, µs), Tofino 0x11 (cells, ns:
//! it has no divider); the embedded target may run its clock in ns too.
//! [`Shim::parse`] gives every record in µs as a [`HopRecord`] whatever the
//! switch wrote, so nothing downstream of version 1 sees the time unit; a
//! version-2 record is also kept whole, its times in ns exactly, as an
//! [`IntHopRecord`] ([`Shim::int_hops`]).

use thiserror::Error;

use crate::units::split_units;
pub use crate::units::{DepthUnit, TimeUnit};

/// UDP destination port of shim-carrying data packets.
pub const DATA_PORT: u16 = 7360;
pub const SHIM_VERSION: u8 = 1;
/// The shim version whose records carry INT for congestion control.
pub const SHIM_VERSION_INT: u8 = 2;
/// Fixed part of the shim (both versions).
pub const SHIM_FIXED_LEN: usize = 8;
/// A version-1 hop record.
pub const HOP_LEN: usize = 20;
/// A version-2 (INT) hop record.
pub const INT_HOP_LEN: usize = 32;
pub const MAX_HOPS: usize = 4;
/// Bytes a version-1 sender must leave free for switches to insert hop
/// records: 4 × 20 = 80.
pub const SHIM_ROOM: usize = MAX_HOPS * HOP_LEN;
/// The same for a version-2 sender: 4 × 32 = 128.
pub const SHIM_ROOM_INT: usize = MAX_HOPS * INT_HOP_LEN;
pub const FLAG_OVERFLOW: u8 = 0x01;
/// Size of one Tofino queue cell.
pub const CELL_BYTES: u32 = 80;
/// Time-unit nibble (high nibble of byte 3) of nanoseconds.
const TIME_UNIT_NS: u8 = 0x10;

/// Length of one hop record of shim `version` (None: unknown version).
pub const fn record_len(version: u8) -> Option<usize> {
    match version {
        SHIM_VERSION => Some(HOP_LEN),
        SHIM_VERSION_INT => Some(INT_HOP_LEN),
        _ => None,
    }
}

/// A hop record as version 1 carries it, times in µs. A version-2 shim
/// gives one of these per record too (its times rounded down to µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HopRecord {
    pub switch_id: u16,
    pub egress_port: u16,
    pub enq_qdepth: u32,
    pub deq_timedelta_us: u32,
    pub egress_ts_us: u64,
}

impl HopRecord {
    /// A version-1 record (20 bytes) as written, times in µs.
    pub fn parse(b: &[u8]) -> Option<HopRecord> {
        if b.len() < HOP_LEN {
            return None;
        }
        Some(HopRecord {
            switch_id: u16::from_be_bytes([b[0], b[1]]),
            egress_port: u16::from_be_bytes([b[2], b[3]]),
            enq_qdepth: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            deq_timedelta_us: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
            egress_ts_us: u64::from_be_bytes([b[12], b[13], b[14], b[15], b[16], b[17], b[18], b[19]]),
        })
    }
    /// Writes the version-1 record (times in µs) into `out[..20]`.
    pub fn write(&self, out: &mut [u8]) {
        out[0..2].copy_from_slice(&self.switch_id.to_be_bytes());
        out[2..4].copy_from_slice(&self.egress_port.to_be_bytes());
        out[4..8].copy_from_slice(&self.enq_qdepth.to_be_bytes());
        out[8..12].copy_from_slice(&self.deq_timedelta_us.to_be_bytes());
        out[12..20].copy_from_slice(&self.egress_ts_us.to_be_bytes());
    }
}

/// A version-2 (INT) hop record: what HPCC and PowerTCP read of the
/// egress port the packet left on. Times are held in ns exactly (a switch
/// that counts µs gives µs × 1000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IntHopRecord {
    pub switch_id: u16,
    pub egress_port: u16,
    /// Queue depth at enqueue, in the shim's depth unit.
    pub enq_qdepth: u32,
    /// Time the packet spent in the queue, ns.
    pub deq_timedelta_ns: u64,
    /// The switch's egress timestamp, ns (its own clock).
    pub egress_ts_ns: u64,
    /// Bytes queued at the egress port when the packet left.
    pub qlen_bytes: u32,
    /// The port's cumulative transmitted bytes, this packet included;
    /// wraps at 2^32.
    pub tx_bytes: u32,
    /// The port's line rate as the controller loaded it, kb/s (0 = not loaded).
    pub rate_kbps: u32,
}

impl IntHopRecord {
    /// A 32-byte record whose delay and timestamp are in `unit`.
    pub fn parse(b: &[u8], unit: TimeUnit) -> Option<IntHopRecord> {
        if b.len() < INT_HOP_LEN {
            return None;
        }
        let be32 = |o: usize| u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&b[12..20]);
        Some(IntHopRecord {
            switch_id: u16::from_be_bytes([b[0], b[1]]),
            egress_port: u16::from_be_bytes([b[2], b[3]]),
            enq_qdepth: be32(4),
            deq_timedelta_ns: unit.to_ns(u64::from(be32(8))),
            egress_ts_ns: unit.to_ns(u64::from_be_bytes(ts)),
            qlen_bytes: be32(20),
            tx_bytes: be32(24),
            rate_kbps: be32(28),
        })
    }

    /// Writes the 32-byte record into `out[..32]`, times in ns (a queue
    /// delay beyond the 4-byte field, 4.29 s, is written as its maximum).
    pub fn write(&self, out: &mut [u8]) {
        out[0..2].copy_from_slice(&self.switch_id.to_be_bytes());
        out[2..4].copy_from_slice(&self.egress_port.to_be_bytes());
        out[4..8].copy_from_slice(&self.enq_qdepth.to_be_bytes());
        let delay = u32::try_from(self.deq_timedelta_ns).unwrap_or(u32::MAX);
        out[8..12].copy_from_slice(&delay.to_be_bytes());
        out[12..20].copy_from_slice(&self.egress_ts_ns.to_be_bytes());
        out[20..24].copy_from_slice(&self.qlen_bytes.to_be_bytes());
        out[24..28].copy_from_slice(&self.tx_bytes.to_be_bytes());
        out[28..32].copy_from_slice(&self.rate_kbps.to_be_bytes());
    }

    /// The version-1 view of this record: times rounded down to µs.
    pub fn hop_record(&self) -> HopRecord {
        HopRecord {
            switch_id: self.switch_id,
            egress_port: self.egress_port,
            enq_qdepth: self.enq_qdepth,
            deq_timedelta_us: u32::try_from(self.deq_timedelta_ns / 1000).unwrap_or(u32::MAX),
            egress_ts_us: self.egress_ts_ns / 1000,
        }
    }

    /// A version-1 record as a version-2 switch without the port's byte
    /// counters would write it: times × 1000, the INT fields 0.
    pub fn from_hop_record(h: &HopRecord) -> IntHopRecord {
        IntHopRecord {
            switch_id: h.switch_id,
            egress_port: h.egress_port,
            enq_qdepth: h.enq_qdepth,
            deq_timedelta_ns: u64::from(h.deq_timedelta_us) * 1000,
            egress_ts_ns: h.egress_ts_us.saturating_mul(1000),
            qlen_bytes: 0,
            tx_bytes: 0,
            rate_kbps: 0,
        }
    }
}

/// A parsed shim (at most [`MAX_HOPS`] records).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shim {
    /// [`SHIM_VERSION`] or [`SHIM_VERSION_INT`].
    pub version: u8,
    pub flags: u8,
    pub depth_unit: DepthUnit,
    pub max_qdepth: u32,
    pub hop_count: u8,
    /// Every record, version-1 view (µs), newest first.
    pub hops: [HopRecord; MAX_HOPS],
    /// Version 2: the same records whole (ns, byte counters); all default
    /// in a version-1 shim.
    pub int_hops: [IntHopRecord; MAX_HOPS],
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShimError {
    #[error("datagram of {0} bytes is shorter than the 8-byte shim")]
    TooShort(usize),
    #[error("shim version {0} (expected 1 or 2)")]
    BadVersion(u8),
    #[error("shim hop_count {0} exceeds the maximum of 4")]
    TooManyHops(u8),
    #[error("shim units byte {0:#04x}: depth unit (low nibble) must be 0 (packets) or 1 (80-byte cells), time unit (high nibble) 0 (µs) or 1 (ns)")]
    BadUnit(u8),
    #[error("shim announces {hops} hop records ({need} bytes) but the datagram has {have}")]
    Truncated { hops: u8, need: usize, have: usize },
}

/// Inserts `v` at the front of the first `n` entries of `a` (newest first).
fn push_front<T: Copy>(a: &mut [T; MAX_HOPS], n: usize, v: T) {
    for i in (0..n).rev() {
        a[i + 1] = a[i];
    }
    a[0] = v;
}

impl Shim {
    /// The shim a version-1 sender emits: no hops, max_qdepth 0.
    pub fn empty() -> Shim {
        Shim {
            version: SHIM_VERSION,
            flags: 0,
            depth_unit: DepthUnit::Packets,
            max_qdepth: 0,
            hop_count: 0,
            hops: [HopRecord::default(); MAX_HOPS],
            int_hops: [IntHopRecord::default(); MAX_HOPS],
        }
    }

    /// The shim a sender whose algorithm reads INT emits: version 2, no
    /// hops, max_qdepth 0.
    pub fn empty_v2() -> Shim {
        Shim { version: SHIM_VERSION_INT, ..Shim::empty() }
    }

    /// Every record, version-1 view (µs), newest first.
    pub fn hops(&self) -> &[HopRecord] {
        &self.hops[..(self.hop_count as usize).min(MAX_HOPS)]
    }

    /// The version-2 records, newest first (empty for a version-1 shim).
    pub fn int_hops(&self) -> &[IntHopRecord] {
        if self.is_int() {
            &self.int_hops[..(self.hop_count as usize).min(MAX_HOPS)]
        } else {
            &[]
        }
    }

    /// True for a version-2 (INT) shim.
    pub fn is_int(&self) -> bool {
        self.version == SHIM_VERSION_INT
    }

    /// Length of one of this shim's hop records.
    pub fn record_len(&self) -> usize {
        if self.is_int() {
            INT_HOP_LEN
        } else {
            HOP_LEN
        }
    }

    pub fn overflow(&self) -> bool {
        self.flags & FLAG_OVERFLOW != 0
    }

    /// Encoded length.
    pub fn len(&self) -> usize {
        SHIM_FIXED_LEN + self.hops().len() * self.record_len()
    }

    pub fn is_empty(&self) -> bool {
        self.hop_count == 0
    }

    /// Parses the shim at the start of a UDP payload; returns it and the
    /// number of bytes it occupies.
    pub fn parse(b: &[u8]) -> Result<(Shim, usize), ShimError> {
        if b.len() < SHIM_FIXED_LEN {
            return Err(ShimError::TooShort(b.len()));
        }
        let version = b[0];
        let rec_len = record_len(version).ok_or(ShimError::BadVersion(version))?;
        let hop_count = b[1];
        if hop_count as usize > MAX_HOPS {
            return Err(ShimError::TooManyHops(hop_count));
        }
        let (depth_unit, time_unit) = split_units(b[3]).ok_or(ShimError::BadUnit(b[3]))?;
        let need = SHIM_FIXED_LEN + hop_count as usize * rec_len;
        if b.len() < need {
            return Err(ShimError::Truncated { hops: hop_count, need, have: b.len() });
        }
        let truncated = ShimError::Truncated { hops: hop_count, need, have: b.len() };
        let mut hops = [HopRecord::default(); MAX_HOPS];
        let mut int_hops = [IntHopRecord::default(); MAX_HOPS];
        for i in 0..hop_count as usize {
            let rec = &b[SHIM_FIXED_LEN + i * rec_len..SHIM_FIXED_LEN + (i + 1) * rec_len];
            if version == SHIM_VERSION_INT {
                // length checked above
                int_hops[i] = IntHopRecord::parse(rec, time_unit).ok_or_else(|| truncated.clone())?;
                hops[i] = int_hops[i].hop_record();
            } else {
                let mut h = HopRecord::parse(rec).ok_or_else(|| truncated.clone())?;
                h.deq_timedelta_us = time_unit.to_us(u64::from(h.deq_timedelta_us)) as u32;
                h.egress_ts_us = time_unit.to_us(h.egress_ts_us);
                hops[i] = h;
            }
        }
        Ok((
            Shim {
                version,
                flags: b[2],
                depth_unit,
                max_qdepth: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                hop_count,
                hops,
                int_hops,
            },
            need,
        ))
    }

    /// Writes the shim into `out` (which must hold [`Shim::len`] bytes);
    /// returns the bytes written. Version-1 records are written in µs
    /// (time unit 0), version-2 records in ns (time unit 1), as they are
    /// held.
    pub fn write(&self, out: &mut [u8]) -> usize {
        let int = self.is_int();
        out[0] = if int { SHIM_VERSION_INT } else { SHIM_VERSION };
        out[1] = self.hops().len() as u8;
        out[2] = self.flags;
        out[3] = self.depth_unit.as_u8() | if int { TIME_UNIT_NS } else { 0 };
        out[4..8].copy_from_slice(&self.max_qdepth.to_be_bytes());
        let rl = self.record_len();
        for i in 0..self.hops().len() {
            let off = SHIM_FIXED_LEN + i * rl;
            if int {
                self.int_hops[i].write(&mut out[off..off + rl]);
            } else {
                self.hops[i].write(&mut out[off..off + rl]);
            }
        }
        self.len()
    }

    /// Room left for another record; sets the overflow flag when none.
    fn make_room(&mut self, enq_qdepth: u32) -> bool {
        self.max_qdepth = self.max_qdepth.max(enq_qdepth);
        if (self.hop_count as usize) >= MAX_HOPS {
            self.flags |= FLAG_OVERFLOW;
            return false;
        }
        true
    }

    /// What a switch does (for tests and simulations): push a hop record
    /// (newest first), update max_qdepth, set overflow when full. In a
    /// version-2 shim the record goes in as a version-2 switch without
    /// byte counters would write it ([`IntHopRecord::from_hop_record`]).
    pub fn push_hop(&mut self, hop: HopRecord) {
        if self.is_int() {
            self.push_int_hop(IntHopRecord::from_hop_record(&hop));
            return;
        }
        if !self.make_room(hop.enq_qdepth) {
            return;
        }
        let n = self.hop_count as usize;
        push_front(&mut self.hops, n, hop);
        self.hop_count += 1;
    }

    /// What a version-2 switch does (for tests and simulations): push an
    /// INT record (newest first), update max_qdepth, set overflow when
    /// full. A version-1 shim gets the record's version-1 view, as a
    /// version-1 switch would write it.
    pub fn push_int_hop(&mut self, hop: IntHopRecord) {
        if !self.is_int() {
            self.push_hop(hop.hop_record());
            return;
        }
        if !self.make_room(hop.enq_qdepth) {
            return;
        }
        let n = self.hop_count as usize;
        push_front(&mut self.int_hops, n, hop);
        push_front(&mut self.hops, n, hop.hop_record());
        self.hop_count += 1;
    }

    /// The path maximum depth in packets (see [`depth_to_packets`]).
    pub fn max_qdepth_packets(&self, pkt_bytes: u32) -> u32 {
        depth_to_packets(self.max_qdepth, self.depth_unit, pkt_bytes)
    }
}

/// Normalises a queue depth to packets.
///
/// Packets pass through. 80-byte cells are converted with the cell count of
/// one full-sized packet: `ceil(cells / ceil(pkt_bytes / 80))`, where
/// `pkt_bytes` is the size of a full data packet on the wire (default 1500:
/// a 1500-byte packet occupies 19 cells). Any non-zero depth is at least one
/// packet.
pub fn depth_to_packets(depth: u32, unit: DepthUnit, pkt_bytes: u32) -> u32 {
    match unit {
        DepthUnit::Packets => depth,
        DepthUnit::Cells80 => {
            let cells_per_pkt = pkt_bytes.max(1).div_ceil(CELL_BYTES).max(1);
            depth.div_ceil(cells_per_pkt)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(i: u16, d: u32) -> HopRecord {
        HopRecord { switch_id: i, egress_port: i + 10, enq_qdepth: d, deq_timedelta_us: 7, egress_ts_us: 1 << 40 }
    }

    #[test]
    fn roundtrip_with_hops() {
        let mut s = Shim::empty();
        s.push_hop(hop(1, 5));
        s.push_hop(hop(2, 9));
        s.push_hop(hop(3, 2));
        let mut buf = [0u8; 128];
        let n = s.write(&mut buf);
        assert_eq!(n, 8 + 3 * 20);
        let (p, used) = Shim::parse(&buf[..n + 10]).unwrap();
        assert_eq!(used, n);
        assert_eq!(p, s);
        assert_eq!(p.max_qdepth, 9);
        assert_eq!(p.hops()[0].switch_id, 3, "newest first");
    }

    #[test]
    fn overflow_flag() {
        let mut s = Shim::empty();
        for i in 0..6 {
            s.push_hop(hop(i, i as u32));
        }
        assert_eq!(s.hop_count, 4);
        assert!(s.overflow());
        assert_eq!(s.max_qdepth, 5);
    }

    #[test]
    fn malformed_inputs_are_errors() {
        assert_eq!(Shim::parse(&[]), Err(ShimError::TooShort(0)));
        assert_eq!(Shim::parse(&[1, 0, 0]), Err(ShimError::TooShort(3)));
        assert_eq!(Shim::parse(&[3, 0, 0, 0, 0, 0, 0, 0]), Err(ShimError::BadVersion(3)));
        assert_eq!(Shim::parse(&[0, 0, 0, 0, 0, 0, 0, 0]), Err(ShimError::BadVersion(0)));
        assert_eq!(Shim::parse(&[1, 5, 0, 0, 0, 0, 0, 0]), Err(ShimError::TooManyHops(5)));
        assert_eq!(Shim::parse(&[1, 0, 0, 7, 0, 0, 0, 0]), Err(ShimError::BadUnit(7)));
        let mut b = vec![1, 2, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&[0u8; 30]);
        assert!(matches!(Shim::parse(&b), Err(ShimError::Truncated { hops: 2, need: 48, have: 38 })));
        // every prefix of a valid shim and random garbage: never a panic
        let mut s = Shim::empty();
        s.push_hop(hop(1, 1));
        s.push_hop(hop(2, 2));
        let mut buf = [0u8; 48];
        s.write(&mut buf);
        for n in 0..buf.len() {
            assert!(Shim::parse(&buf[..n]).is_err());
        }
        let mut x: u64 = 0x1234_5678;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 120) as usize;
            let bytes: Vec<u8> = (0..len).map(|i| (x >> (i % 8 * 8)) as u8 ^ i as u8).collect();
            let _ = Shim::parse(&bytes);
        }
    }

    fn int_hop(i: u16, d: u32) -> IntHopRecord {
        IntHopRecord {
            switch_id: i,
            egress_port: i + 10,
            enq_qdepth: d,
            deq_timedelta_ns: 7_123,
            egress_ts_ns: (1 << 40) + 999,
            qlen_bytes: d * 1500,
            tx_bytes: u32::MAX - 5 + u32::from(i),
            rate_kbps: 10_000_000,
        }
    }

    #[test]
    fn v2_roundtrip_keeps_ns_and_the_port_counters() {
        let mut s = Shim::empty_v2();
        assert_eq!(s.version, SHIM_VERSION_INT);
        s.push_int_hop(int_hop(1, 5));
        s.push_int_hop(int_hop(2, 9));
        s.push_int_hop(int_hop(3, 2));
        let mut buf = [0u8; 256];
        let n = s.write(&mut buf);
        assert_eq!(n, 8 + 3 * 32);
        assert_eq!(n, s.len());
        assert_eq!(buf[0], 2);
        assert_eq!(buf[3], 0x10, "written in ns");
        let (p, used) = Shim::parse(&buf[..n + 10]).unwrap();
        assert_eq!(used, n);
        assert_eq!(p, s);
        assert_eq!(p.max_qdepth, 9);
        assert_eq!(p.int_hops().len(), 3);
        let h = p.int_hops()[0];
        assert_eq!(h, int_hop(3, 2), "newest first, every field exact");
        // The version-1 view of the same record: µs, rounded down.
        let v1 = p.hops()[0];
        assert_eq!((v1.switch_id, v1.egress_port, v1.enq_qdepth), (3, 13, 2));
        assert_eq!((v1.deq_timedelta_us, v1.egress_ts_us), (7, ((1u64 << 40) + 999) / 1000));
        // A version-1 shim has no INT records.
        let mut s1 = Shim::empty();
        s1.push_int_hop(int_hop(1, 5));
        assert!(s1.int_hops().is_empty());
        assert_eq!(s1.hops()[0], int_hop(1, 5).hop_record(), "a v1 switch writes the v1 view");
        // A v1 record pushed into a v2 shim: times × 1000, no counters.
        let mut s2 = Shim::empty_v2();
        s2.push_hop(hop(4, 1));
        assert_eq!(s2.int_hops()[0].egress_ts_ns, (1u64 << 40) * 1000);
        assert_eq!(s2.int_hops()[0].deq_timedelta_ns, 7_000);
        assert_eq!(s2.hops()[0], hop(4, 1));
    }

    #[test]
    fn v2_overflow_flag() {
        let mut s = Shim::empty_v2();
        for i in 0..6 {
            s.push_int_hop(int_hop(i, i as u32));
        }
        assert_eq!(s.hop_count, 4);
        assert!(s.overflow());
        assert_eq!(s.max_qdepth, 5);
        assert_eq!(s.len(), 8 + SHIM_ROOM_INT);
        assert_eq!(SHIM_ROOM_INT, 128);
        assert_eq!(s.int_hops()[0].switch_id, 3, "the records of the first four switches stay");
    }

    #[test]
    fn v2_records_in_us_are_kept_as_ns() {
        // An embedded target counting µs (units 0x00): a 1 234 µs delay at
        // 5 001 235 µs, a 60 000-byte queue, 1 Gb/s.
        let mut b = vec![2, 1, 0, 0x00, 0, 0, 0, 40];
        b.extend_from_slice(&3u16.to_be_bytes());
        b.extend_from_slice(&2u16.to_be_bytes());
        b.extend_from_slice(&40u32.to_be_bytes());
        b.extend_from_slice(&1_234u32.to_be_bytes());
        b.extend_from_slice(&5_001_235u64.to_be_bytes());
        b.extend_from_slice(&60_000u32.to_be_bytes());
        b.extend_from_slice(&0xffff_fff0u32.to_be_bytes());
        b.extend_from_slice(&1_000_000u32.to_be_bytes());
        let (s, n) = Shim::parse(&b).unwrap();
        assert_eq!(n, 40);
        let h = s.int_hops()[0];
        assert_eq!((h.deq_timedelta_ns, h.egress_ts_ns), (1_234_000, 5_001_235_000));
        assert_eq!((h.qlen_bytes, h.tx_bytes, h.rate_kbps), (60_000, 0xffff_fff0, 1_000_000));
        assert_eq!((s.hops()[0].deq_timedelta_us, s.hops()[0].egress_ts_us), (1_234, 5_001_235));
        // The same in ns (units 0x10) with sub-µs digits: kept exactly.
        b[3] = 0x10;
        b[16..20].copy_from_slice(&1_234_567u32.to_be_bytes());
        b[20..28].copy_from_slice(&5_001_235_999u64.to_be_bytes());
        let (s, _) = Shim::parse(&b).unwrap();
        assert_eq!((s.int_hops()[0].deq_timedelta_ns, s.int_hops()[0].egress_ts_ns), (1_234_567, 5_001_235_999));
        assert_eq!((s.hops()[0].deq_timedelta_us, s.hops()[0].egress_ts_us), (1_234, 5_001_235));
        // Written back it is the same record, in ns.
        let mut out = [0u8; 40];
        assert_eq!(s.write(&mut out), 40);
        assert_eq!(&out[..], &b[..]);
    }

    #[test]
    fn v2_malformed_inputs_are_errors() {
        assert_eq!(Shim::parse(&[2, 0, 0]), Err(ShimError::TooShort(3)));
        assert_eq!(Shim::parse(&[2, 5, 0, 0, 0, 0, 0, 0]), Err(ShimError::TooManyHops(5)));
        assert_eq!(Shim::parse(&[2, 0, 0, 0x20, 0, 0, 0, 0]), Err(ShimError::BadUnit(0x20)));
        // Two 32-byte records need 72 bytes; 20-byte records would fit.
        let mut b = vec![2, 2, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&[0u8; 50]);
        assert_eq!(Shim::parse(&b), Err(ShimError::Truncated { hops: 2, need: 72, have: 58 }));
        let mut s = Shim::empty_v2();
        for i in 0..4 {
            s.push_int_hop(int_hop(i, 1));
        }
        let mut buf = [0u8; 8 + 128];
        assert_eq!(s.write(&mut buf), buf.len());
        for n in 0..buf.len() {
            assert!(Shim::parse(&buf[..n]).is_err(), "prefix of {n} bytes");
        }
        assert!(Shim::parse(&buf).is_ok());
        let mut x: u64 = 0x9e37_79b9;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 200) as usize;
            let mut bytes: Vec<u8> = (0..len).map(|i| (x >> (i % 8 * 8)) as u8 ^ i as u8).collect();
            if len > 3 {
                bytes[0] = 2;
                bytes[1] = (x % 6) as u8;
                bytes[3] = [0x00, 0x01, 0x10, 0x11, 0x21][(x % 5) as usize];
            }
            if let Ok((s, used)) = Shim::parse(&bytes) {
                assert_eq!(used, 8 + s.hop_count as usize * 32);
                assert!(used <= bytes.len());
            }
        }
    }

    #[test]
    fn tofino_units_byte_gives_records_in_us() {
        // What p4src/tna/cc_switch.p4 writes: SHIM_UNITS_TOFINO = 0x11, a
        // record with a 1 234 567 ns delay at 2^47 + 5 001 235 999 ns.
        let mut b = vec![1, 1, 0, 0x11, 0, 0, 1, 119];
        let ts: u64 = (1 << 47) + 5_001_235_999;
        b.extend_from_slice(&7u16.to_be_bytes());
        b.extend_from_slice(&140u16.to_be_bytes());
        b.extend_from_slice(&375u32.to_be_bytes());
        b.extend_from_slice(&1_234_567u32.to_be_bytes());
        b.extend_from_slice(&ts.to_be_bytes());
        let (s, n) = Shim::parse(&b).unwrap();
        assert_eq!((n, s.depth_unit, s.max_qdepth), (28, DepthUnit::Cells80, 375));
        let h = s.hops()[0];
        assert_eq!((h.switch_id, h.egress_port, h.enq_qdepth), (7, 140, 375));
        assert_eq!((h.deq_timedelta_us, h.egress_ts_us), (1234, ts / 1000));
        // Unknown nibbles are refused with the byte named.
        assert_eq!(Shim::parse(&[1, 0, 0, 0x21, 0, 0, 0, 0]), Err(ShimError::BadUnit(0x21)));
        assert_eq!(Shim::parse(&[1, 0, 0, 0x12, 0, 0, 0, 0]), Err(ShimError::BadUnit(0x12)));
    }

    #[test]
    fn cell_conversion() {
        assert_eq!(depth_to_packets(7, DepthUnit::Packets, 1500), 7);
        // 1500-byte packets take 19 cells
        assert_eq!(depth_to_packets(0, DepthUnit::Cells80, 1500), 0);
        assert_eq!(depth_to_packets(1, DepthUnit::Cells80, 1500), 1);
        assert_eq!(depth_to_packets(19, DepthUnit::Cells80, 1500), 1);
        assert_eq!(depth_to_packets(20, DepthUnit::Cells80, 1500), 2);
        assert_eq!(depth_to_packets(190, DepthUnit::Cells80, 1500), 10);
        assert_eq!(depth_to_packets(u32::MAX, DepthUnit::Cells80, 0), u32::MAX);
    }
}
