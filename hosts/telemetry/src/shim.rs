//! The p4cc telemetry shim (fixed by the P4 program; see docs/transport.md).
//!
//! ```text
//! byte 0    version (= 1)
//! byte 1    hop_count: number of 20-byte hop records that follow (<= 4), newest first
//! byte 2    flags: bit0 = overflow (a switch found the record stack full)
//! byte 3    units: low nibble = depth unit (0 = packets, 1 = 80-byte cells),
//!           high nibble = time unit of the hop records (0 = µs, 1 = ns)
//! bytes 4-7 max_qdepth: u32 BE, path maximum of enq_qdepth, in the depth unit
//! then hop_count records: switch_id u16, egress_port u16, enq_qdepth u32,
//!                         deq_timedelta u32, egress_ts u64 (all BE)
//! ```
//!
//! v1model targets write 0x00 (packets, µs), Tofino 0x11 (cells, ns: it has
//! no divider). [`Shim::parse`] gives hop records in µs whatever the switch
//! wrote, so nothing downstream sees the time unit.

use thiserror::Error;

use crate::postcard::split_units;

/// UDP destination port of shim-carrying data packets.
pub const DATA_PORT: u16 = 7360;
pub const SHIM_VERSION: u8 = 1;
/// Fixed part of the shim.
pub const SHIM_FIXED_LEN: usize = 8;
pub const HOP_LEN: usize = 20;
pub const MAX_HOPS: usize = 4;
/// Bytes a sender must leave free for switches to insert hop records.
pub const SHIM_ROOM: usize = MAX_HOPS * HOP_LEN;
pub const FLAG_OVERFLOW: u8 = 0x01;
/// Size of one Tofino queue cell.
pub const CELL_BYTES: u32 = 80;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepthUnit {
    Packets,
    Cells80,
}

impl DepthUnit {
    pub fn from_u8(v: u8) -> Option<DepthUnit> {
        match v {
            0 => Some(DepthUnit::Packets),
            1 => Some(DepthUnit::Cells80),
            _ => None,
        }
    }
    pub fn as_u8(self) -> u8 {
        match self {
            DepthUnit::Packets => 0,
            DepthUnit::Cells80 => 1,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HopRecord {
    pub switch_id: u16,
    pub egress_port: u16,
    pub enq_qdepth: u32,
    pub deq_timedelta_us: u32,
    pub egress_ts_us: u64,
}

impl HopRecord {
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
    pub fn write(&self, out: &mut [u8]) {
        out[0..2].copy_from_slice(&self.switch_id.to_be_bytes());
        out[2..4].copy_from_slice(&self.egress_port.to_be_bytes());
        out[4..8].copy_from_slice(&self.enq_qdepth.to_be_bytes());
        out[8..12].copy_from_slice(&self.deq_timedelta_us.to_be_bytes());
        out[12..20].copy_from_slice(&self.egress_ts_us.to_be_bytes());
    }
}

/// A parsed shim (at most [`MAX_HOPS`] records).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shim {
    pub flags: u8,
    pub depth_unit: DepthUnit,
    pub max_qdepth: u32,
    pub hop_count: u8,
    pub hops: [HopRecord; MAX_HOPS],
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShimError {
    #[error("datagram of {0} bytes is shorter than the 8-byte shim")]
    TooShort(usize),
    #[error("shim version {0} (expected 1)")]
    BadVersion(u8),
    #[error("shim hop_count {0} exceeds the maximum of 4")]
    TooManyHops(u8),
    #[error("shim units byte {0:#04x}: depth unit (low nibble) must be 0 (packets) or 1 (80-byte cells), time unit (high nibble) 0 (µs) or 1 (ns)")]
    BadUnit(u8),
    #[error("shim announces {hops} hop records ({need} bytes) but the datagram has {have}")]
    Truncated { hops: u8, need: usize, have: usize },
}

impl Shim {
    /// The shim a sender emits: no hops, max_qdepth 0.
    pub fn empty() -> Shim {
        Shim {
            flags: 0,
            depth_unit: DepthUnit::Packets,
            max_qdepth: 0,
            hop_count: 0,
            hops: [HopRecord::default(); MAX_HOPS],
        }
    }

    pub fn hops(&self) -> &[HopRecord] {
        &self.hops[..(self.hop_count as usize).min(MAX_HOPS)]
    }

    pub fn overflow(&self) -> bool {
        self.flags & FLAG_OVERFLOW != 0
    }

    /// Encoded length.
    pub fn len(&self) -> usize {
        SHIM_FIXED_LEN + self.hops().len() * HOP_LEN
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
        if b[0] != SHIM_VERSION {
            return Err(ShimError::BadVersion(b[0]));
        }
        let hop_count = b[1];
        if hop_count as usize > MAX_HOPS {
            return Err(ShimError::TooManyHops(hop_count));
        }
        let (depth_unit, time_unit) = split_units(b[3]).ok_or(ShimError::BadUnit(b[3]))?;
        let need = SHIM_FIXED_LEN + hop_count as usize * HOP_LEN;
        if b.len() < need {
            return Err(ShimError::Truncated { hops: hop_count, need, have: b.len() });
        }
        let mut hops = [HopRecord::default(); MAX_HOPS];
        for (i, h) in hops.iter_mut().enumerate().take(hop_count as usize) {
            let off = SHIM_FIXED_LEN + i * HOP_LEN;
            // length checked above
            *h = HopRecord::parse(&b[off..off + HOP_LEN]).ok_or(ShimError::Truncated {
                hops: hop_count,
                need,
                have: b.len(),
            })?;
            h.deq_timedelta_us = time_unit.to_us(u64::from(h.deq_timedelta_us)) as u32;
            h.egress_ts_us = time_unit.to_us(h.egress_ts_us);
        }
        Ok((
            Shim {
                flags: b[2],
                depth_unit,
                max_qdepth: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
                hop_count,
                hops,
            },
            need,
        ))
    }

    /// Writes the shim into `out` (which must hold [`Shim::len`] bytes);
    /// returns the bytes written. Hop records are written in µs (time unit
    /// 0), as they are held.
    pub fn write(&self, out: &mut [u8]) -> usize {
        out[0] = SHIM_VERSION;
        out[1] = self.hops().len() as u8;
        out[2] = self.flags;
        out[3] = self.depth_unit.as_u8();
        out[4..8].copy_from_slice(&self.max_qdepth.to_be_bytes());
        for (i, h) in self.hops().iter().enumerate() {
            let off = SHIM_FIXED_LEN + i * HOP_LEN;
            h.write(&mut out[off..off + HOP_LEN]);
        }
        self.len()
    }

    /// What a switch does (for tests and simulations): push a hop record
    /// (newest first), update max_qdepth, set overflow when full.
    pub fn push_hop(&mut self, hop: HopRecord) {
        self.max_qdepth = self.max_qdepth.max(hop.enq_qdepth);
        if (self.hop_count as usize) >= MAX_HOPS {
            self.flags |= FLAG_OVERFLOW;
            return;
        }
        let n = self.hop_count as usize;
        for i in (0..n).rev() {
            self.hops[i + 1] = self.hops[i];
        }
        self.hops[0] = hop;
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
        assert_eq!(Shim::parse(&[2, 0, 0, 0, 0, 0, 0, 0]), Err(ShimError::BadVersion(2)));
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
