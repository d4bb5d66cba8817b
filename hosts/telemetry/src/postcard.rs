//! Switch postcards: out-of-band queue reports cloned to a collector.
//!
//! Layout (big-endian, 54 bytes = [`POSTCARD_LEN`], as in
//! docs/wire-format.md). Longer datagrams are accepted and the extra bytes
//! ignored, so the format can grow at the end; shorter ones, other
//! versions and unknown units are errors (the collector counts them as
//! malformed).
//!
//! ```text
//! off size field
//!  0   1   version (= 1)
//!  1   1   units: depth unit (low nibble) | time unit (high nibble) << 4
//!  2   2   switch_id
//!  4   2   ingress_port
//!  6   2   egress_port
//!  8   4   enq_qdepth        (depth unit)
//! 12   4   deq_qdepth        (depth unit)
//! 16   4   deq_timedelta     (time unit)
//! 20   8   ingress_ts        (time unit)
//! 28   8   egress_ts         (time unit)
//! 36   4   src_ip
//! 40   4   dst_ip
//! 44   1   protocol
//! 45   1   ecn
//! 46   2   src_port
//! 48   2   dst_port
//! 50   4   pkt_len
//! ```
//!
//! Units: depth 0 = packets, 1 = 80-byte cells (as the shim's depth_unit);
//! time 0 = µs, 1 = ns. bmv2 and the embedded target write 0x00 (packets,
//! µs), the Tofino program 0x11 (cells, ns). The struct keeps what the
//! switch wrote; the CSV row is normalised to µs and names the depth unit.

use crate::be::{be16, be32, be64};
use crate::units::split_units;
pub use crate::units::{DepthUnit, TimeUnit};
use std::net::Ipv4Addr;
use thiserror::Error;

pub const POSTCARD_VERSION: u8 = 1;
/// Fixed length of a version-1 postcard.
pub const POSTCARD_LEN: usize = 54;
/// Units byte of a v1model target (packets, µs).
pub const UNITS_V1MODEL: u8 = 0x00;
/// Units byte of the Tofino program (80-byte cells, ns).
pub const UNITS_TOFINO: u8 = 0x11;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Postcard {
    pub units: u8,
    pub switch_id: u16,
    pub ingress_port: u16,
    pub egress_port: u16,
    pub enq_qdepth: u32,
    pub deq_qdepth: u32,
    pub deq_timedelta: u32,
    pub ingress_ts: u64,
    pub egress_ts: u64,
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub protocol: u8,
    pub ecn: u8,
    pub src_port: u16,
    pub dst_port: u16,
    pub pkt_len: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PostcardError {
    #[error("postcard of {0} bytes is shorter than {POSTCARD_LEN}")]
    TooShort(usize),
    #[error("postcard version {0} (expected 1)")]
    BadVersion(u8),
    #[error("postcard units byte {0:#04x}: depth unit must be 0 or 1, time unit 0 or 1")]
    BadUnits(u8),
}

impl Postcard {
    pub fn parse(b: &[u8]) -> Result<Postcard, PostcardError> {
        if b.len() < POSTCARD_LEN {
            return Err(PostcardError::TooShort(b.len()));
        }
        if b[0] != POSTCARD_VERSION {
            return Err(PostcardError::BadVersion(b[0]));
        }
        if split_units(b[1]).is_none() {
            return Err(PostcardError::BadUnits(b[1]));
        }
        Ok(Postcard {
            units: b[1],
            switch_id: be16(b, 2),
            ingress_port: be16(b, 4),
            egress_port: be16(b, 6),
            enq_qdepth: be32(b, 8),
            deq_qdepth: be32(b, 12),
            deq_timedelta: be32(b, 16),
            ingress_ts: be64(b, 20),
            egress_ts: be64(b, 28),
            src_ip: Ipv4Addr::from(be32(b, 36)),
            dst_ip: Ipv4Addr::from(be32(b, 40)),
            protocol: b[44],
            ecn: b[45],
            src_port: be16(b, 46),
            dst_port: be16(b, 48),
            pkt_len: be32(b, 50),
        })
    }

    pub fn encode(&self) -> [u8; POSTCARD_LEN] {
        let mut b = [0u8; POSTCARD_LEN];
        b[0] = POSTCARD_VERSION;
        b[1] = self.units;
        b[2..4].copy_from_slice(&self.switch_id.to_be_bytes());
        b[4..6].copy_from_slice(&self.ingress_port.to_be_bytes());
        b[6..8].copy_from_slice(&self.egress_port.to_be_bytes());
        b[8..12].copy_from_slice(&self.enq_qdepth.to_be_bytes());
        b[12..16].copy_from_slice(&self.deq_qdepth.to_be_bytes());
        b[16..20].copy_from_slice(&self.deq_timedelta.to_be_bytes());
        b[20..28].copy_from_slice(&self.ingress_ts.to_be_bytes());
        b[28..36].copy_from_slice(&self.egress_ts.to_be_bytes());
        b[36..40].copy_from_slice(&u32::from(self.src_ip).to_be_bytes());
        b[40..44].copy_from_slice(&u32::from(self.dst_ip).to_be_bytes());
        b[44] = self.protocol;
        b[45] = self.ecn;
        b[46..48].copy_from_slice(&self.src_port.to_be_bytes());
        b[48..50].copy_from_slice(&self.dst_port.to_be_bytes());
        b[50..54].copy_from_slice(&self.pkt_len.to_be_bytes());
        b
    }

    /// Unit of `enq_qdepth` and `deq_qdepth`.
    pub fn depth_unit(&self) -> DepthUnit {
        split_units(self.units).map(|u| u.0).unwrap_or(DepthUnit::Packets)
    }

    /// Unit of `deq_timedelta`, `ingress_ts` and `egress_ts`.
    pub fn time_unit(&self) -> TimeUnit {
        split_units(self.units).map(|u| u.1).unwrap_or(TimeUnit::Micros)
    }

    /// Time in the queue, µs.
    pub fn qdelay_us(&self) -> u64 {
        self.time_unit().to_us(self.deq_timedelta as u64)
    }

    /// The switch's ingress timestamp, µs.
    pub fn ingress_ts_us(&self) -> u64 {
        self.time_unit().to_us(self.ingress_ts)
    }

    /// The switch's egress timestamp, µs.
    pub fn egress_ts_us(&self) -> u64 {
        self.time_unit().to_us(self.egress_ts)
    }

    /// CSV header matching [`Postcard::csv_row`]. Times are µs whatever
    /// the switch wrote; depths are in `depth_unit` (packets or cells80).
    pub const CSV_HEADER: &'static str =
        "recv_unix_ns,switch_id,egress_port,enq_qdepth,deq_qdepth,qdelay_us,egress_ts_us,src,dst,proto,sport,dport,ecn,len,depth_unit";

    pub fn csv_row(&self, recv_unix_ns: u64) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            recv_unix_ns,
            self.switch_id,
            self.egress_port,
            self.enq_qdepth,
            self.deq_qdepth,
            self.qdelay_us(),
            self.egress_ts_us(),
            self.src_ip,
            self.dst_ip,
            self.protocol,
            self.src_port,
            self.dst_port,
            self.ecn,
            self.pkt_len,
            match self.depth_unit() {
                DepthUnit::Packets => "packets",
                DepthUnit::Cells80 => "cells80",
            }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn sample() -> Postcard {
        Postcard {
            units: UNITS_V1MODEL,
            switch_id: 0x0102,
            ingress_port: 1,
            egress_port: 2,
            enq_qdepth: 17,
            deq_qdepth: 16,
            deq_timedelta: 1234,
            ingress_ts: 1_000_000,
            egress_ts: 1_001_234,
            src_ip: Ipv4Addr::new(10, 0, 0, 1),
            dst_ip: Ipv4Addr::new(10, 0, 0, 2),
            protocol: 17,
            ecn: 3,
            src_port: 40000,
            dst_port: 7360,
            pkt_len: 1500,
        }
    }

    #[test]
    fn roundtrip_and_csv() {
        let p = sample();
        let b = p.encode();
        assert_eq!(Postcard::parse(&b), Ok(p));
        let mut longer = b.to_vec();
        longer.extend_from_slice(&[9, 9, 9]);
        assert_eq!(Postcard::parse(&longer), Ok(p));
        assert_eq!(
            p.csv_row(42),
            "42,258,2,17,16,1234,1001234,10.0.0.1,10.0.0.2,17,40000,7360,3,1500,packets"
        );
        assert_eq!(Postcard::CSV_HEADER.split(',').count(), p.csv_row(0).split(',').count());
    }

    #[test]
    fn malformed() {
        let b = sample().encode();
        for n in 0..POSTCARD_LEN {
            assert_eq!(Postcard::parse(&b[..n]), Err(PostcardError::TooShort(n)));
        }
        let mut v = b;
        v[0] = 2;
        assert_eq!(Postcard::parse(&v), Err(PostcardError::BadVersion(2)));
        for bad in [0x02u8, 0x20, 0x0f, 0xff] {
            let mut v = b;
            v[1] = bad;
            assert_eq!(Postcard::parse(&v), Err(PostcardError::BadUnits(bad)));
        }
    }

    #[test]
    fn tofino_units_are_normalised_in_the_csv() {
        let p = Postcard {
            units: UNITS_TOFINO,
            enq_qdepth: 375,
            deq_qdepth: 300,
            deq_timedelta: 1_234_567,
            ingress_ts: 5_000_000_999,
            egress_ts: 5_001_235_999,
            ..sample()
        };
        let q = Postcard::parse(&p.encode()).unwrap();
        assert_eq!(q.depth_unit(), DepthUnit::Cells80);
        assert_eq!(q.time_unit(), TimeUnit::Nanos);
        assert_eq!((q.qdelay_us(), q.ingress_ts_us(), q.egress_ts_us()), (1234, 5_000_000, 5_001_235));
        assert_eq!(
            q.csv_row(42),
            "42,258,2,375,300,1234,5001235,10.0.0.1,10.0.0.2,17,40000,7360,3,1500,cells80"
        );
    }
}
