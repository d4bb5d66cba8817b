//! Wire format of the transport (everything after the telemetry shim on data
//! packets; ACKs carry no shim). All integers big-endian. See
//! docs/transport.md for the byte-by-byte tables.

use telemetry::be::{be16, be32, be64};
use telemetry::postcard::TimeUnit;
use telemetry::shim::{HopRecord, IntHopRecord, HOP_LEN, INT_HOP_LEN, MAX_HOPS, SHIM_FIXED_LEN, SHIM_ROOM, SHIM_ROOM_INT};
use telemetry::{DepthUnit, Shim, ShimError};
use thiserror::Error;

pub const MAGIC: [u8; 2] = *b"P4";
pub const VERSION: u8 = 1;
pub const TYPE_DATA: u8 = 1;
pub const TYPE_ACK: u8 = 2;
pub const TYPE_ABORT: u8 = 3;

/// Data/abort header length (after the shim).
pub const DATA_HDR_LEN: usize = 48;
/// Fixed part of an ACK.
pub const ACK_FIXED_LEN: usize = 68;
pub const SACK_BLOCK_LEN: usize = 16;
pub const MAX_SACK_BLOCKS: usize = 8;
/// Largest ACK: eight SACK blocks and four 32-byte version-2 hop records,
/// 68 + 128 + 128 = 324 bytes.
pub const MAX_ACK_LEN: usize = ACK_FIXED_LEN + MAX_SACK_BLOCKS * SACK_BLOCK_LEN + MAX_HOPS * INT_HOP_LEN;

/// UDP payload limit with a 1500-byte MTU (1500 - 20 IP - 8 UDP).
pub const MAX_UDP_PAYLOAD_1500: usize = 1472;
/// Largest payload per data packet with a 1500-byte MTU, leaving room for
/// the shim and four version-1 hop records: 1472 - 8 - 80 - 48 = 1336.
pub const MAX_PAYLOAD_1500: usize = MAX_UDP_PAYLOAD_1500 - SHIM_FIXED_LEN - SHIM_ROOM - DATA_HDR_LEN;
/// The same for a flow with a version-2 (INT) shim, whose four 32-byte
/// records need 128 bytes: 1472 - 8 - 128 - 48 = 1288.
pub const MAX_PAYLOAD_1500_INT: usize = MAX_UDP_PAYLOAD_1500 - SHIM_FIXED_LEN - SHIM_ROOM_INT - DATA_HDR_LEN;

/// Largest payload per packet with a 1500-byte MTU for a flow whose shim
/// is version 2 (`int_telemetry`, what `cc::reads_int` says of its
/// algorithm) or version 1.
pub const fn max_payload_1500(int_telemetry: bool) -> usize {
    if int_telemetry {
        MAX_PAYLOAD_1500_INT
    } else {
        MAX_PAYLOAD_1500
    }
}
/// IPv4 + UDP header bytes.
pub const IP_UDP_OVERHEAD: usize = 28;

/// `flow_size` value meaning "not known yet" (long flows until stopped).
pub const SIZE_UNKNOWN: u64 = u64::MAX;

/// Data header flags.
pub const DF_RETX: u8 = 0x01;
/// Zero-length probe: asks the receiver for an ACK (announces the final size).
pub const DF_PROBE: u8 = 0x02;

/// ACK flags.
pub const AF_COMPLETE: u8 = 0x01;
pub const AF_CE: u8 = 0x02;
pub const AF_TELEMETRY: u8 = 0x04;
pub const AF_DUP: u8 = 0x08;
pub const AF_CORRUPT: u8 = 0x10;
/// The hop records are 32-byte version-2 (INT) records, times in ns (the
/// trigger carried a version-2 shim); without it they are 20-byte
/// version-1 records, times in µs.
pub const AF_INT: u8 = 0x20;
/// A congestion notification: the receiver's DCQCN notification point
/// fired on this CE-marked trigger (at most one per flow per interval).
pub const AF_CNP: u8 = 0x40;

/// `qdepth_pkts` value meaning "no telemetry".
pub const NO_QDEPTH: u32 = u32::MAX;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    #[error("no valid telemetry shim: {0}")]
    Shim(#[from] ShimError),
    #[error("packet too short ({have} bytes, need {need})")]
    TooShort { have: usize, need: usize },
    #[error("bad magic")]
    BadMagic,
    #[error("unsupported version {0}")]
    BadVersion(u8),
    #[error("unexpected packet type {0}")]
    BadType(u8),
    #[error("payload_len {claimed} does not match the {have} bytes present")]
    BadLength { claimed: usize, have: usize },
    #[error("too many SACK blocks ({0})")]
    TooManySacks(u8),
    #[error("too many hop records ({0})")]
    TooManyHops(u8),
    #[error("inconsistent field: {0}")]
    Inconsistent(&'static str),
}


/// Header of DATA and ABORT packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DataHeader {
    pub ptype: u8,
    pub flow_id: u32,
    /// Byte offset of the payload in the flow.
    pub seq: u64,
    /// Total flow size, or [`SIZE_UNKNOWN`].
    pub flow_size: u64,
    /// Payload generator seed.
    pub seed: u64,
    /// Sender clock at transmission (echoed in the ACK).
    pub send_ts_ns: u64,
    /// Transmission counter of the flow (increments on every packet sent,
    /// retransmissions included).
    pub tx_seq: u32,
    pub payload_len: u16,
    pub flags: u8,
}

impl DataHeader {
    pub fn write(&self, b: &mut [u8]) {
        b[0..2].copy_from_slice(&MAGIC);
        b[2] = VERSION;
        b[3] = self.ptype;
        b[4..8].copy_from_slice(&self.flow_id.to_be_bytes());
        b[8..16].copy_from_slice(&self.seq.to_be_bytes());
        b[16..24].copy_from_slice(&self.flow_size.to_be_bytes());
        b[24..32].copy_from_slice(&self.seed.to_be_bytes());
        b[32..40].copy_from_slice(&self.send_ts_ns.to_be_bytes());
        b[40..44].copy_from_slice(&self.tx_seq.to_be_bytes());
        b[44..46].copy_from_slice(&self.payload_len.to_be_bytes());
        b[46] = self.flags;
        b[47] = 0;
    }

    pub fn parse(b: &[u8]) -> Result<DataHeader, WireError> {
        if b.len() < DATA_HDR_LEN {
            return Err(WireError::TooShort { have: b.len(), need: DATA_HDR_LEN });
        }
        if b[0..2] != MAGIC {
            return Err(WireError::BadMagic);
        }
        if b[2] != VERSION {
            return Err(WireError::BadVersion(b[2]));
        }
        let ptype = b[3];
        if ptype != TYPE_DATA && ptype != TYPE_ABORT {
            return Err(WireError::BadType(ptype));
        }
        let h = DataHeader {
            ptype,
            flow_id: be32(b, 4),
            seq: be64(b, 8),
            flow_size: be64(b, 16),
            seed: be64(b, 24),
            send_ts_ns: be64(b, 32),
            tx_seq: be32(b, 40),
            payload_len: be16(b, 44),
            flags: b[46],
        };
        if h.seq.checked_add(h.payload_len as u64).is_none() {
            return Err(WireError::Inconsistent("seq + payload_len overflows"));
        }
        if h.ptype == TYPE_DATA && h.flow_size != SIZE_UNKNOWN && h.seq + h.payload_len as u64 > h.flow_size {
            return Err(WireError::Inconsistent("segment ends beyond flow_size"));
        }
        Ok(h)
    }
}

/// A parsed datagram sent to the receiver port.
#[derive(Debug, Clone, PartialEq)]
pub struct DataPacket<'a> {
    pub shim: Shim,
    pub hdr: DataHeader,
    pub payload: &'a [u8],
}

/// Parses shim + header + payload; the payload must be exactly
/// `payload_len` bytes.
pub fn parse_data(b: &[u8]) -> Result<DataPacket<'_>, WireError> {
    let (shim, used) = Shim::parse(b)?;
    let rest = &b[used..];
    let hdr = DataHeader::parse(rest)?;
    let payload = &rest[DATA_HDR_LEN..];
    if payload.len() != hdr.payload_len as usize {
        return Err(WireError::BadLength { claimed: hdr.payload_len as usize, have: payload.len() });
    }
    Ok(DataPacket { shim, hdr, payload })
}

/// Writes `shim` (a sender's is empty: [`Shim::empty`] or
/// [`Shim::empty_v2`]) and `hdr`; the payload goes at the returned offset.
pub fn write_data_prefix(hdr: &DataHeader, shim: &Shim, b: &mut [u8]) -> usize {
    let n = shim.write(b);
    hdr.write(&mut b[n..n + DATA_HDR_LEN]);
    n + DATA_HDR_LEN
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// The variable-length lists of an [`Ack`], kept to be reused.
#[derive(Debug, Default)]
pub struct AckLists {
    pub sacks: Vec<SackBlock>,
    pub hops: Vec<HopRecord>,
    pub int_hops: Vec<IntHopRecord>,
}

/// An acknowledgement (receiver -> sender, no shim).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    pub flow_id: u32,
    /// Next byte expected (everything below was received and verified).
    pub cum_ack: u64,
    /// `send_ts_ns` of the data packet that triggered this ACK.
    pub echo_ts_ns: u64,
    pub echo_tx_seq: u32,
    pub flags: u8,
    /// ECN codepoint of the triggering packet (0 not-ECT, 1 ECT(1), 2 ECT(0), 3 CE).
    pub ecn: u8,
    /// Cumulative counters of the flow at the receiver.
    pub ce_pkts: u32,
    pub data_pkts: u32,
    pub ce_bytes: u64,
    pub rcvd_bytes: u64,
    /// Path max queue depth in packets (max over the packets this ACK
    /// covers), or [`NO_QDEPTH`].
    pub qdepth_pkts: u32,
    /// The same, as carried in the shim (in `depth_unit`).
    pub raw_max_qdepth: u32,
    pub depth_unit: u8,
    pub shim_flags: u8,
    /// How long the trigger waited at the receiver between the kernel's
    /// receiving it and the receiver's reading it, µs (saturating; 0 where
    /// nobody measured). The sender takes it out of its RTT sample: it is
    /// the receiving host's scheduling, not the path.
    pub rx_hold_us: u16,
    pub sacks: Vec<SackBlock>,
    /// Hop records of the triggering packet, newest first, version-1 view
    /// (µs). With [`AF_INT`] they are the view of `int_hops` (what is on
    /// the wire), and only `int_hops` is written.
    pub hops: Vec<HopRecord>,
    /// With [`AF_INT`]: the trigger's version-2 records, newest first,
    /// times in ns; empty otherwise.
    pub int_hops: Vec<IntHopRecord>,
}

impl Ack {
    pub fn encoded_len(&self) -> usize {
        let (nh, rl) = self.hop_layout();
        ACK_FIXED_LEN + self.sacks.len().min(MAX_SACK_BLOCKS) * SACK_BLOCK_LEN + nh * rl
    }

    /// Hop records written and their length.
    fn hop_layout(&self) -> (usize, usize) {
        if self.int() {
            (self.int_hops.len().min(MAX_HOPS), INT_HOP_LEN)
        } else {
            (self.hops.len().min(MAX_HOPS), HOP_LEN)
        }
    }

    /// Encodes into `b` (at least [`MAX_ACK_LEN`] bytes); returns the length.
    pub fn write(&self, b: &mut [u8]) -> usize {
        let ns = self.sacks.len().min(MAX_SACK_BLOCKS);
        let (nh, rl) = self.hop_layout();
        b[0..2].copy_from_slice(&MAGIC);
        b[2] = VERSION;
        b[3] = TYPE_ACK;
        b[4..8].copy_from_slice(&self.flow_id.to_be_bytes());
        b[8..16].copy_from_slice(&self.cum_ack.to_be_bytes());
        b[16..24].copy_from_slice(&self.echo_ts_ns.to_be_bytes());
        b[24..28].copy_from_slice(&self.echo_tx_seq.to_be_bytes());
        b[28] = self.flags;
        b[29] = self.ecn;
        b[30] = ns as u8;
        b[31] = nh as u8;
        b[32..36].copy_from_slice(&self.ce_pkts.to_be_bytes());
        b[36..40].copy_from_slice(&self.data_pkts.to_be_bytes());
        b[40..48].copy_from_slice(&self.ce_bytes.to_be_bytes());
        b[48..56].copy_from_slice(&self.rcvd_bytes.to_be_bytes());
        b[56..60].copy_from_slice(&self.qdepth_pkts.to_be_bytes());
        b[60..64].copy_from_slice(&self.raw_max_qdepth.to_be_bytes());
        b[64] = self.depth_unit;
        b[65] = self.shim_flags;
        b[66..68].copy_from_slice(&self.rx_hold_us.to_be_bytes());
        let mut o = ACK_FIXED_LEN;
        for s in &self.sacks[..ns] {
            b[o..o + 8].copy_from_slice(&s.start.to_be_bytes());
            b[o + 8..o + 16].copy_from_slice(&s.end.to_be_bytes());
            o += SACK_BLOCK_LEN;
        }
        if self.int() {
            for h in &self.int_hops[..nh] {
                h.write(&mut b[o..o + rl]);
                o += rl;
            }
        } else {
            for h in &self.hops[..nh] {
                h.write(&mut b[o..o + rl]);
                o += rl;
            }
        }
        o
    }

    pub fn parse(b: &[u8]) -> Result<Ack, WireError> {
        Ack::parse_reusing(b, AckLists::default())
    }

    /// The ACK's SACK and hop lists, for the next ACK to fill.
    pub fn into_lists(self) -> AckLists {
        AckLists { sacks: self.sacks, hops: self.hops, int_hops: self.int_hops }
    }

    /// [`Ack::parse`] into the lists of an ACK done with
    /// ([`Ack::into_lists`]), so a steady stream of ACKs allocates nothing.
    pub fn parse_reusing(b: &[u8], spare: AckLists) -> Result<Ack, WireError> {
        if b.len() < ACK_FIXED_LEN {
            return Err(WireError::TooShort { have: b.len(), need: ACK_FIXED_LEN });
        }
        if b[0..2] != MAGIC {
            return Err(WireError::BadMagic);
        }
        if b[2] != VERSION {
            return Err(WireError::BadVersion(b[2]));
        }
        if b[3] != TYPE_ACK {
            return Err(WireError::BadType(b[3]));
        }
        let ns = b[30];
        let nh = b[31];
        if ns as usize > MAX_SACK_BLOCKS {
            return Err(WireError::TooManySacks(ns));
        }
        if nh as usize > MAX_HOPS {
            return Err(WireError::TooManyHops(nh));
        }
        let flags = b[28];
        let int = flags & AF_INT != 0;
        let rl = if int { INT_HOP_LEN } else { HOP_LEN };
        let need = ACK_FIXED_LEN + ns as usize * SACK_BLOCK_LEN + nh as usize * rl;
        if b.len() != need {
            return Err(WireError::BadLength { claimed: need, have: b.len() });
        }
        let mut o = ACK_FIXED_LEN;
        let AckLists { mut sacks, mut hops, mut int_hops } = spare;
        sacks.clear();
        hops.clear();
        int_hops.clear();
        for _ in 0..ns {
            let s = SackBlock { start: be64(b, o), end: be64(b, o + 8) };
            if s.end <= s.start {
                return Err(WireError::Inconsistent("empty or inverted SACK block"));
            }
            sacks.push(s);
            o += SACK_BLOCK_LEN;
        }
        for _ in 0..nh {
            let rec = &b[o..o + rl];
            if int {
                let h = IntHopRecord::parse(rec, TimeUnit::Nanos).ok_or(WireError::TooShort { have: b.len(), need })?;
                hops.push(h.hop_record());
                int_hops.push(h);
            } else {
                hops.push(HopRecord::parse(rec).ok_or(WireError::TooShort { have: b.len(), need })?);
            }
            o += rl;
        }
        Ok(Ack {
            flow_id: be32(b, 4),
            cum_ack: be64(b, 8),
            echo_ts_ns: be64(b, 16),
            echo_tx_seq: be32(b, 24),
            flags,
            ecn: b[29] & 0x3,
            ce_pkts: be32(b, 32),
            data_pkts: be32(b, 36),
            ce_bytes: be64(b, 40),
            rcvd_bytes: be64(b, 48),
            qdepth_pkts: be32(b, 56),
            raw_max_qdepth: be32(b, 60),
            depth_unit: b[64],
            shim_flags: b[65],
            rx_hold_us: be16(b, 66),
            sacks,
            hops,
            int_hops,
        })
    }

    pub fn complete(&self) -> bool {
        self.flags & AF_COMPLETE != 0
    }
    /// The hop records are version-2 (INT) records.
    pub fn int(&self) -> bool {
        self.flags & AF_INT != 0
    }
    /// The receiver's notification point sent a CNP with this ACK.
    pub fn cnp(&self) -> bool {
        self.flags & AF_CNP != 0
    }
    pub fn qdepth(&self) -> Option<u32> {
        (self.qdepth_pkts != NO_QDEPTH).then_some(self.qdepth_pkts)
    }
    pub fn depth_unit(&self) -> Option<DepthUnit> {
        DepthUnit::from_u8(self.depth_unit)
    }
}

/// Reads only the flow id of an ACK (for demultiplexing), validating the
/// fixed part.
pub fn ack_flow_id(b: &[u8]) -> Option<u32> {
    if b.len() >= ACK_FIXED_LEN && b[0..2] == MAGIC && b[2] == VERSION && b[3] == TYPE_ACK {
        Some(be32(b, 4))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_payload() {
        assert_eq!(MAX_PAYLOAD_1500, 1336);
        assert_eq!(MAX_PAYLOAD_1500_INT, 1288);
        assert_eq!((max_payload_1500(false), max_payload_1500(true)), (1336, 1288));
        assert_eq!(MAX_ACK_LEN, 68 + 128 + 128);
        // A full packet after four hops is exactly 1472 UDP bytes either way.
        assert_eq!(8 + 4 * 20 + DATA_HDR_LEN + MAX_PAYLOAD_1500, MAX_UDP_PAYLOAD_1500);
        assert_eq!(8 + 4 * 32 + DATA_HDR_LEN + MAX_PAYLOAD_1500_INT, MAX_UDP_PAYLOAD_1500);
    }

    #[test]
    fn data_roundtrip() {
        let h = DataHeader {
            ptype: TYPE_DATA,
            flow_id: 7,
            seq: 1336,
            flow_size: 10_000,
            seed: 99,
            send_ts_ns: 123456789,
            tx_seq: 3,
            payload_len: 5,
            flags: DF_RETX,
        };
        let mut b = [0u8; 100];
        let o = write_data_prefix(&h, &Shim::empty(), &mut b);
        assert_eq!(o, 56);
        b[o..o + 5].copy_from_slice(b"hello");
        let p = parse_data(&b[..o + 5]).unwrap();
        assert_eq!(p.hdr, h);
        assert_eq!(p.payload, b"hello");
        assert_eq!(p.shim, Shim::empty());
        assert!(matches!(parse_data(&b[..o + 4]), Err(WireError::BadLength { .. })));
        assert!(matches!(parse_data(&b[..o + 6]), Err(WireError::BadLength { .. })));
        // The same with a version-2 shim: same length, byte 0 = 2.
        let o = write_data_prefix(&h, &Shim::empty_v2(), &mut b);
        assert_eq!((o, b[0]), (56, 2));
        b[o..o + 5].copy_from_slice(b"hello");
        let p = parse_data(&b[..o + 5]).unwrap();
        assert_eq!((p.hdr, p.shim), (h, Shim::empty_v2()));
    }

    #[test]
    fn ack_roundtrip() {
        let a = Ack {
            flow_id: 1,
            cum_ack: 2,
            echo_ts_ns: 3,
            echo_tx_seq: 4,
            flags: AF_CE | AF_COMPLETE,
            ecn: 3,
            ce_pkts: 5,
            data_pkts: 6,
            ce_bytes: 7,
            rcvd_bytes: 8,
            qdepth_pkts: 9,
            raw_max_qdepth: 10,
            depth_unit: 1,
            shim_flags: 1,
            rx_hold_us: 0xBEEF,
            sacks: vec![SackBlock { start: 10, end: 20 }, SackBlock { start: 30, end: 40 }],
            hops: vec![HopRecord { switch_id: 1, egress_port: 2, enq_qdepth: 3, deq_timedelta_us: 4, egress_ts_us: 5 }],
            int_hops: vec![],
        };
        let mut b = [0u8; MAX_ACK_LEN];
        let n = a.write(&mut b);
        assert_eq!(n, a.encoded_len());
        assert_eq!(Ack::parse(&b[..n]).unwrap(), a);
        assert_eq!(ack_flow_id(&b[..n]), Some(1));
        for k in 0..n {
            assert!(Ack::parse(&b[..k]).is_err());
        }
        // Lists of an earlier, longer ACK leave nothing behind.
        let spare = AckLists {
            sacks: vec![SackBlock { start: 1, end: 2 }; 5],
            hops: vec![HopRecord::default(); 4],
            int_hops: vec![IntHopRecord::default(); 4],
        };
        assert_eq!(Ack::parse_reusing(&b[..n], spare).unwrap(), a);
    }

    fn int_record(i: u16) -> IntHopRecord {
        IntHopRecord {
            switch_id: i,
            egress_port: 2,
            enq_qdepth: 3,
            deq_timedelta_ns: 4_321,
            egress_ts_ns: 5_000_000_123,
            qlen_bytes: 6_000,
            tx_bytes: u32::MAX - 1,
            rate_kbps: 25_000_000,
        }
    }

    fn int_ack(n: u16) -> Ack {
        let int_hops: Vec<IntHopRecord> = (0..n).map(|i| int_record(10 + i)).collect();
        Ack {
            flow_id: 9,
            cum_ack: 1288,
            echo_ts_ns: 3,
            echo_tx_seq: 4,
            flags: AF_INT | AF_CNP | AF_CE | AF_TELEMETRY,
            ecn: 3,
            ce_pkts: 1,
            data_pkts: 1,
            ce_bytes: 1288,
            rcvd_bytes: 1288,
            qdepth_pkts: 3,
            raw_max_qdepth: 3,
            depth_unit: 0,
            shim_flags: 0,
            rx_hold_us: 0,
            sacks: vec![SackBlock { start: 2576, end: 3864 }],
            hops: int_hops.iter().map(IntHopRecord::hop_record).collect(),
            int_hops,
        }
    }

    #[test]
    fn ack_with_int_records_roundtrip() {
        for n in 0..=4 {
            let a = int_ack(n);
            let mut b = [0u8; MAX_ACK_LEN];
            let len = a.write(&mut b);
            assert_eq!(len, 68 + 16 + 32 * n as usize);
            assert_eq!(len, a.encoded_len());
            assert_eq!((b[28] & (AF_INT | AF_CNP), b[31]), (AF_INT | AF_CNP, n as u8));
            let p = Ack::parse(&b[..len]).unwrap();
            assert_eq!(p, a);
            assert!(p.int() && p.cnp());
            if n > 0 {
                // ns exactly, and the µs view next to it
                assert_eq!(p.int_hops[0], int_record(10));
                assert_eq!((p.hops[0].deq_timedelta_us, p.hops[0].egress_ts_us), (4, 5_000_000));
            }
            // Every prefix and every longer buffer is an error.
            for k in 0..len {
                assert!(Ack::parse(&b[..k]).is_err(), "{n} records, prefix {k}");
            }
            assert!(matches!(Ack::parse(&b[..len + 1]), Err(WireError::BadLength { .. })));
            // The flag decides the record length: without it the bytes
            // are read as 20-byte records, which do not add up.
            if n > 0 {
                let mut c = b;
                c[28] &= !AF_INT;
                assert!(matches!(Ack::parse(&c[..len]), Err(WireError::BadLength { .. })));
            }
            // Reused lists of a v1 ACK hold nothing of it afterwards.
            let spare = AckLists { sacks: vec![], hops: vec![HopRecord::default(); 3], int_hops: vec![] };
            assert_eq!(Ack::parse_reusing(&b[..len], spare).unwrap(), a);
        }
        // The largest ACK fits MAX_ACK_LEN.
        let mut a = int_ack(4);
        a.sacks = (0..8).map(|i| SackBlock { start: 10 * i + 1, end: 10 * i + 5 }).collect();
        let mut b = [0u8; MAX_ACK_LEN];
        assert_eq!(a.write(&mut b), MAX_ACK_LEN);
        assert_eq!(Ack::parse(&b).unwrap(), a);
        // An INT ACK's v1 records are not written (only int_hops are).
        let mut v1 = int_ack(2);
        v1.flags &= !AF_INT;
        v1.int_hops.clear();
        let len = v1.write(&mut b);
        assert_eq!(len, 68 + 16 + 2 * 20);
        assert_eq!(Ack::parse(&b[..len]).unwrap(), v1);
    }

    #[test]
    fn garbage_never_panics() {
        let mut x: u64 = 0xdead_beef;
        let mut buf = vec![0u8; 1600];
        for round in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 1600) as usize;
            for (i, v) in buf[..len].iter_mut().enumerate() {
                *v = (x.rotate_left(i as u32 % 64) as u8) ^ (i as u8);
            }
            // make some of them look almost valid
            if round % 3 == 0 && len > 64 {
                buf[0] = 1;
                buf[1] = (x % 6) as u8;
                buf[3] = (x % 3) as u8;
                let o = 8 + (buf[1] as usize).min(4) * 20;
                if o + 4 < len {
                    buf[o..o + 2].copy_from_slice(&MAGIC);
                    buf[o + 2] = VERSION;
                    buf[o + 3] = (x % 4) as u8;
                }
            }
            if round % 5 == 0 && len > 40 {
                buf[0..2].copy_from_slice(&MAGIC);
                buf[2] = VERSION;
                buf[3] = TYPE_ACK;
                if len > 68 {
                    // plausible counts, INT records or not
                    buf[30] = (x % 9) as u8;
                    buf[31] = (x >> 8) as u8 % 5;
                    if round % 10 == 0 {
                        buf[28] |= AF_INT;
                    }
                }
            }
            if round % 7 == 0 && len > 64 {
                buf[0] = 2;
                buf[1] = (x % 6) as u8;
                buf[3] = [0x00, 0x10, 0x11][(x % 3) as usize];
                let o = 8 + (buf[1] as usize).min(4) * 32;
                if o + 4 < len {
                    buf[o..o + 2].copy_from_slice(&MAGIC);
                    buf[o + 2] = VERSION;
                    buf[o + 3] = TYPE_DATA;
                }
            }
            let _ = parse_data(&buf[..len]);
            let _ = Ack::parse(&buf[..len]);
            let _ = ack_flow_id(&buf[..len]);
        }
    }
}
