//! Postcard feed: the collector returns a data packet's postcard to the
//! packet's sender, so a sender can learn the queue out of band (the
//! collector's view) instead of from the receiver's echo.
//!
//! The collector sends one feed datagram per postcard of a p4cc transport
//! data packet (UDP, protocol 17, to [`DATA_PORT`]), to the packet's source
//! address and port, i.e. to the sending socket. The sender tells it from
//! its ACKs by the type byte. Layout (big-endian, 58 bytes):
//!
//! ```text
//! off size field
//!  0   2   magic "P4" (as the transport's packets)
//!  2   1   version (= 1)
//!  3   1   type (= 4, FEED; the transport uses 1 DATA, 2 ACK, 3 ABORT)
//!  4  54   the postcard, unchanged (postcard.rs)
//! ```

use crate::postcard::{Postcard, POSTCARD_LEN};
use crate::shim::DATA_PORT;
use std::net::SocketAddrV4;

pub const FEED_MAGIC: [u8; 2] = *b"P4";
pub const FEED_VERSION: u8 = 1;
pub const TYPE_FEED: u8 = 4;
pub const FEED_LEN: usize = 4 + POSTCARD_LEN;
/// IP protocol number of UDP.
const UDP: u8 = 17;

/// The feed datagram for `pc` and where it goes, if `pc` reports a p4cc
/// transport data packet (anything else — ACKs, kernel TCP, the
/// collector's own traffic — is not returned).
pub fn feed_for(pc: &Postcard) -> Option<(SocketAddrV4, [u8; FEED_LEN])> {
    if pc.protocol != UDP || pc.dst_port != DATA_PORT || pc.src_port == 0 {
        return None;
    }
    Some((SocketAddrV4::new(pc.src_ip, pc.src_port), encode(pc)))
}

pub fn encode(pc: &Postcard) -> [u8; FEED_LEN] {
    let mut b = [0u8; FEED_LEN];
    b[0..2].copy_from_slice(&FEED_MAGIC);
    b[2] = FEED_VERSION;
    b[3] = TYPE_FEED;
    b[4..].copy_from_slice(&pc.encode());
    b
}

/// The postcard in a feed datagram; None if `b` is not one.
pub fn parse(b: &[u8]) -> Option<Postcard> {
    if b.len() < FEED_LEN || b[0..2] != FEED_MAGIC || b[2] != FEED_VERSION || b[3] != TYPE_FEED {
        return None;
    }
    Postcard::parse(&b[4..]).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn pc(protocol: u8, sport: u16, dport: u16) -> Postcard {
        Postcard {
            units: 0,
            switch_id: 2,
            ingress_port: 1,
            egress_port: 3,
            enq_qdepth: 17,
            deq_qdepth: 16,
            deq_timedelta: 40,
            ingress_ts: 1_000,
            egress_ts: 1_040,
            src_ip: Ipv4Addr::new(10, 0, 0, 2),
            dst_ip: Ipv4Addr::new(10, 0, 0, 1),
            protocol,
            ecn: 2,
            src_port: sport,
            dst_port: dport,
            pkt_len: 1500,
        }
    }

    #[test]
    fn data_packets_go_back_to_their_sender() {
        let p = pc(17, 40001, DATA_PORT);
        let (to, bytes) = feed_for(&p).unwrap();
        assert_eq!(to, SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 40001));
        assert_eq!(parse(&bytes), Some(p));
        assert_eq!(&bytes[..4], b"P4\x01\x04");
    }

    #[test]
    fn nothing_else_is_returned_and_garbage_is_refused() {
        assert!(feed_for(&pc(17, DATA_PORT, 40001)).is_none(), "an ACK's postcard");
        assert!(feed_for(&pc(6, 40001, DATA_PORT)).is_none(), "TCP");
        assert!(feed_for(&pc(17, 0, DATA_PORT)).is_none());
        let b = encode(&pc(17, 1, DATA_PORT));
        for n in 0..FEED_LEN {
            assert!(parse(&b[..n]).is_none());
        }
        let mut ack = b;
        ack[3] = 2;
        assert!(parse(&ack).is_none(), "a transport ACK is not a feed");
    }
}
