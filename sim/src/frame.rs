//! What a host's kernel does to a datagram in the namespace lab: wrap it in
//! UDP, IPv4 and Ethernet on the way out, and take it apart (dropping what
//! is not for the host) on the way in. The switch parses and rewrites these
//! frames with the real P4 program.

use std::net::{Ipv4Addr, SocketAddrV4};

pub const ETH_LEN: usize = 14;
pub const IPV4_LEN: usize = 20;
pub const UDP_LEN: usize = 8;
pub const HEADERS: usize = ETH_LEN + IPV4_LEN + UDP_LEN;
const ETHERTYPE_IPV4: u16 = 0x0800;
const PROTO_UDP: u8 = 17;
const TTL: u8 = 64;

pub type Mac = [u8; 6];

pub fn parse_mac(s: &str) -> Option<Mac> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in out.iter_mut() {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for c in header.chunks(2) {
        sum += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet/IPv4/UDP frame around `payload`. The UDP checksum is 0
/// (optional in IPv4): the switch rewrites telemetry inside the payload.
#[allow(clippy::too_many_arguments)]
pub fn build(
    src_mac: Mac,
    dst_mac: Mac,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    tos: u8,
    ip_id: u16,
    payload: &[u8],
    out: &mut Vec<u8>,
) {
    out.clear();
    out.extend_from_slice(&dst_mac);
    out.extend_from_slice(&src_mac);
    out.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let total = (IPV4_LEN + UDP_LEN + payload.len()) as u16;
    let ip_start = out.len();
    out.extend_from_slice(&[0x45, tos]);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&ip_id.to_be_bytes());
    out.extend_from_slice(&[0x40, 0x00, TTL, PROTO_UDP, 0, 0]); // DF, no fragment
    out.extend_from_slice(&src.ip().octets());
    out.extend_from_slice(&dst.ip().octets());
    let c = checksum(&out[ip_start..ip_start + IPV4_LEN]);
    out[ip_start + 10..ip_start + 12].copy_from_slice(&c.to_be_bytes());
    out.extend_from_slice(&src.port().to_be_bytes());
    out.extend_from_slice(&dst.port().to_be_bytes());
    out.extend_from_slice(&((UDP_LEN + payload.len()) as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(payload);
}

/// A received UDP datagram: where from, to which port, the IP TOS byte.
#[derive(Debug, Clone, Copy)]
pub struct Datagram<'a> {
    pub from: SocketAddrV4,
    pub to_port: u16,
    pub tos: u8,
    pub payload: &'a [u8],
}

/// Why a host dropped a frame (counted, never fatal: malformed frames
/// must not crash anything).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    NotForUs,
    NotIpv4Udp,
    Malformed,
}

/// Takes a frame apart as a host's kernel would.
pub fn parse<'a>(frame: &'a [u8], my_mac: &Mac, my_ip: Ipv4Addr) -> Result<Datagram<'a>, Drop> {
    if frame.len() < HEADERS {
        return Err(Drop::Malformed);
    }
    if &frame[0..6] != my_mac && frame[0..6] != [0xff; 6] {
        return Err(Drop::NotForUs);
    }
    if u16::from_be_bytes([frame[12], frame[13]]) != ETHERTYPE_IPV4 {
        return Err(Drop::NotIpv4Udp);
    }
    let ip = &frame[ETH_LEN..];
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    if ip[0] >> 4 != 4 || ihl < IPV4_LEN || ip.len() < ihl + UDP_LEN {
        return Err(Drop::Malformed);
    }
    if ip[9] != PROTO_UDP {
        return Err(Drop::NotIpv4Udp);
    }
    if Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]) != my_ip {
        return Err(Drop::NotForUs);
    }
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if total < ihl + UDP_LEN || total > ip.len() {
        return Err(Drop::Malformed);
    }
    let udp = &ip[ihl..total];
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if udp_len < UDP_LEN || udp_len > udp.len() {
        return Err(Drop::Malformed);
    }
    let src = SocketAddrV4::new(
        Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]),
        u16::from_be_bytes([udp[0], udp[1]]),
    );
    Ok(Datagram { from: src, to_port: u16::from_be_bytes([udp[2], udp[3]]), tos: ip[1], payload: &udp[UDP_LEN..udp_len] })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_frame_parses_back() {
        let (a, b) = ([2, 0, 10, 0, 0, 1], [2, 0, 10, 0, 0, 2]);
        let src = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), 40001);
        let dst = SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), 7360);
        let mut f = Vec::new();
        build(a, b, src, dst, 2, 7, b"hello", &mut f);
        assert_eq!(f.len(), HEADERS + 5);
        // a valid IPv4 header sums to 0xffff
        assert_eq!(checksum(&f[ETH_LEN..ETH_LEN + IPV4_LEN]), 0);
        let d = parse(&f, &b, *dst.ip()).unwrap();
        assert_eq!((d.from, d.to_port, d.tos, d.payload), (src, 7360, 2, &b"hello"[..]));
        assert_eq!(parse(&f, &a, *dst.ip()).unwrap_err(), Drop::NotForUs);
        assert_eq!(parse(&f[..30], &b, *dst.ip()).unwrap_err(), Drop::Malformed);
    }

    #[test]
    fn garbage_never_panics() {
        let me = [2, 0, 0, 0, 0, 1];
        let mut x: u64 = 0x1234_5678;
        for n in 0..2000usize {
            let len = n % 120;
            let mut f: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect();
            if len >= 14 {
                f[..6].copy_from_slice(&me);
                f[12] = 0x08;
                f[13] = 0;
            }
            let _ = parse(&f, &me, Ipv4Addr::new(10, 0, 0, 1));
        }
    }
}
