//! Shared helpers for the p4cc benchmarks (driven by bench.sh).

/// Parses `a.b.c.d`.
pub fn parse_ip(s: &str) -> Option<[u8; 4]> {
    let v: Vec<u8> = s.split('.').map(|x| x.parse().ok()).collect::<Option<Vec<u8>>>()?;
    (v.len() == 4).then(|| [v[0], v[1], v[2], v[3]])
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let v: Vec<u8> = s.split(':').map(|x| u8::from_str_radix(x, 16).ok()).collect::<Option<Vec<u8>>>()?;
    (v.len() == 6).then(|| [v[0], v[1], v[2], v[3], v[4], v[5]])
}

fn csum(b: &[u8]) -> u16 {
    let mut s: u32 = 0;
    for c in b.chunks(2) {
        s += u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32;
    }
    while s >> 16 != 0 {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// An Ethernet/IPv4/UDP frame of `frame_len` bytes (≥ 42), ECT(0).
pub fn udp_frame(dst_mac: [u8; 6], src_mac: [u8; 6], src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, frame_len: usize) -> Vec<u8> {
    let frame_len = frame_len.max(42);
    let mut f = Vec::with_capacity(frame_len);
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    let ip_len = (frame_len - 14) as u16;
    let mut ip = vec![0x45, 0x02];
    ip.extend_from_slice(&ip_len.to_be_bytes());
    ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let c = csum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&(ip_len - 20).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.resize(frame_len, 0xab);
    f
}

pub mod xdp_sink;
