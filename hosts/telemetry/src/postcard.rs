//! Switch postcards: out-of-band queue reports cloned to a collector.
//!
//! Layout (big-endian, 54 bytes = [`POSTCARD_LEN`], as in
//! docs/wire-format.md). Longer datagrams are accepted and the extra bytes
//! ignored, so the format can grow at the end; shorter ones and other
//! versions are errors (the collector counts them as malformed).
//!
//! ```text
//! off size field
//!  0   1   version (= 1)
//!  1   1   flags
//!  2   2   switch_id
//!  4   2   ingress_port
//!  6   2   egress_port
//!  8   4   enq_qdepth
//! 12   4   deq_qdepth
//! 16   4   deq_timedelta_us
//! 20   8   ingress_ts_us
//! 28   8   egress_ts_us
//! 36   4   src_ip
//! 40   4   dst_ip
//! 44   1   protocol
//! 45   1   ecn
//! 46   2   src_port
//! 48   2   dst_port
//! 50   4   pkt_len
//! ```

use crate::be::{be16, be32, be64};
use std::net::Ipv4Addr;
use thiserror::Error;

pub const POSTCARD_VERSION: u8 = 1;
/// Fixed length of a version-1 postcard.
pub const POSTCARD_LEN: usize = 54;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Postcard {
    pub flags: u8,
    pub switch_id: u16,
    pub ingress_port: u16,
    pub egress_port: u16,
    pub enq_qdepth: u32,
    pub deq_qdepth: u32,
    pub deq_timedelta_us: u32,
    pub ingress_ts_us: u64,
    pub egress_ts_us: u64,
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
}


impl Postcard {
    pub fn parse(b: &[u8]) -> Result<Postcard, PostcardError> {
        if b.len() < POSTCARD_LEN {
            return Err(PostcardError::TooShort(b.len()));
        }
        if b[0] != POSTCARD_VERSION {
            return Err(PostcardError::BadVersion(b[0]));
        }
        Ok(Postcard {
            flags: b[1],
            switch_id: be16(b, 2),
            ingress_port: be16(b, 4),
            egress_port: be16(b, 6),
            enq_qdepth: be32(b, 8),
            deq_qdepth: be32(b, 12),
            deq_timedelta_us: be32(b, 16),
            ingress_ts_us: be64(b, 20),
            egress_ts_us: be64(b, 28),
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
        b[1] = self.flags;
        b[2..4].copy_from_slice(&self.switch_id.to_be_bytes());
        b[4..6].copy_from_slice(&self.ingress_port.to_be_bytes());
        b[6..8].copy_from_slice(&self.egress_port.to_be_bytes());
        b[8..12].copy_from_slice(&self.enq_qdepth.to_be_bytes());
        b[12..16].copy_from_slice(&self.deq_qdepth.to_be_bytes());
        b[16..20].copy_from_slice(&self.deq_timedelta_us.to_be_bytes());
        b[20..28].copy_from_slice(&self.ingress_ts_us.to_be_bytes());
        b[28..36].copy_from_slice(&self.egress_ts_us.to_be_bytes());
        b[36..40].copy_from_slice(&u32::from(self.src_ip).to_be_bytes());
        b[40..44].copy_from_slice(&u32::from(self.dst_ip).to_be_bytes());
        b[44] = self.protocol;
        b[45] = self.ecn;
        b[46..48].copy_from_slice(&self.src_port.to_be_bytes());
        b[48..50].copy_from_slice(&self.dst_port.to_be_bytes());
        b[50..54].copy_from_slice(&self.pkt_len.to_be_bytes());
        b
    }

    /// CSV header matching [`Postcard::csv_row`].
    pub const CSV_HEADER: &'static str =
        "recv_unix_ns,switch_id,egress_port,enq_qdepth,deq_qdepth,qdelay_us,egress_ts_us,src,dst,proto,sport,dport,ecn,len";

    pub fn csv_row(&self, recv_unix_ns: u64) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            recv_unix_ns,
            self.switch_id,
            self.egress_port,
            self.enq_qdepth,
            self.deq_qdepth,
            self.deq_timedelta_us,
            self.egress_ts_us,
            self.src_ip,
            self.dst_ip,
            self.protocol,
            self.src_port,
            self.dst_port,
            self.ecn,
            self.pkt_len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn sample() -> Postcard {
        Postcard {
            flags: 3,
            switch_id: 0x0102,
            ingress_port: 1,
            egress_port: 2,
            enq_qdepth: 17,
            deq_qdepth: 16,
            deq_timedelta_us: 1234,
            ingress_ts_us: 1_000_000,
            egress_ts_us: 1_001_234,
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
            "42,258,2,17,16,1234,1001234,10.0.0.1,10.0.0.2,17,40000,7360,3,1500"
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
    }
}
