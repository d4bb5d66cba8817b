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

/// Sends `buf` on socket `fd` in sendmmsg batches of 32 for `secs` seconds,
/// paced to `pps` (0: as fast as it goes), to `name` (a socket address of
/// `name_len` bytes) if not null. Prints and returns the packets sent.
pub fn blast(fd: i32, buf: &[u8], name: *mut libc::c_void, name_len: u32, secs: f64, pps: u64) -> u64 {
    use std::time::{Duration, Instant};
    const B: usize = 32;
    let mut iov: Vec<libc::iovec> = (0..B).map(|_| libc::iovec { iov_base: buf.as_ptr() as *mut _, iov_len: buf.len() }).collect();
    // SAFETY: mmsghdr is plain data; all-zero is a valid empty header.
    let mut msgs: Vec<libc::mmsghdr> = (0..B).map(|_| unsafe { std::mem::zeroed() }).collect();
    for (m, v) in msgs.iter_mut().zip(iov.iter_mut()) {
        m.msg_hdr.msg_iov = v;
        m.msg_hdr.msg_iovlen = 1;
        m.msg_hdr.msg_name = name;
        m.msg_hdr.msg_namelen = name_len;
    }
    let start = Instant::now();
    let (mut sent, mut errs) = (0u64, 0u64);
    while start.elapsed().as_secs_f64() < secs {
        if pps > 0 {
            // Paced in batches; sleep when ahead of schedule.
            let due_at = Duration::from_secs_f64(sent as f64 / pps as f64);
            let el = start.elapsed();
            if due_at > el {
                std::thread::sleep(due_at - el);
            }
        }
        // SAFETY: msgs point at iov and buf (and name), alive for the call.
        let r = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), B as u32, 0) };
        if r > 0 {
            sent += r as u64;
        } else {
            errs += 1;
        }
    }
    let dt = start.elapsed().as_secs_f64();
    println!("sent {sent} packets in {dt:.2} s = {:.0} pps ({errs} send errors)", sent as f64 / dt);
    sent
}

pub mod xdp_sink;
