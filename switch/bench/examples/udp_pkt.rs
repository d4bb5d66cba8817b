//! Traffic for the benchmarks: a UDP blaster and a sink (run inside the
//! benchmark's network namespaces).
//!
//!   udp_pkt send DST_IP:PORT SECONDS PAYLOAD_BYTES [PPS]   (PPS 0 = as fast as possible)
//!   udp_pkt recv PORT SECONDS        → prints "received N packets in T s = R pps"
use std::net::UdpSocket;
use std::time::{Duration, Instant};

fn main() {
    let a: Vec<String> = std::env::args().collect();
    match a.get(1).map(String::as_str) {
        Some("send") if a.len() >= 5 => send(&a[2], a[3].parse().unwrap(), a[4].parse().unwrap(), a.get(5).and_then(|s| s.parse().ok()).unwrap_or(0)),
        Some("recv") if a.len() >= 4 => recv(a[2].parse().unwrap(), a[3].parse().unwrap()),
        _ => {
            eprintln!("usage: udp_pkt send DST_IP:PORT SECONDS PAYLOAD [PPS] | udp_pkt recv PORT SECONDS");
            std::process::exit(2)
        }
    }
}

fn send(dst: &str, secs: f64, payload: usize, pps: u64) {
    let s = UdpSocket::bind("0.0.0.0:0").unwrap();
    s.connect(dst).unwrap();
    let buf = vec![0x5au8; payload];
    const B: usize = 32;
    let mut iov: Vec<libc::iovec> = (0..B).map(|_| libc::iovec { iov_base: buf.as_ptr() as *mut _, iov_len: buf.len() }).collect();
    let mut msgs: Vec<libc::mmsghdr> = (0..B).map(|_| unsafe { std::mem::zeroed() }).collect();
    for (m, v) in msgs.iter_mut().zip(iov.iter_mut()) {
        m.msg_hdr.msg_iov = v;
        m.msg_hdr.msg_iovlen = 1;
    }
    let fd = std::os::fd::AsRawFd::as_raw_fd(&s);
    let start = Instant::now();
    let mut sent: u64 = 0;
    let mut errs: u64 = 0;
    while start.elapsed().as_secs_f64() < secs {
        if pps > 0 {
            // Paced in batches; sleep when ahead of schedule.
            let due_at = Duration::from_secs_f64(sent as f64 / pps as f64);
            let el = start.elapsed();
            if due_at > el {
                std::thread::sleep(due_at - el);
            }
        }
        let r = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), B as u32, 0) };
        if r > 0 {
            sent += r as u64;
        } else {
            errs += 1;
        }
    }
    let dt = start.elapsed().as_secs_f64();
    println!("sent {sent} packets in {dt:.2} s = {:.0} pps ({errs} send errors)", sent as f64 / dt);
}

fn recv(port: u16, secs: f64) {
    let s = UdpSocket::bind(("0.0.0.0", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let _ = unsafe {
        let v: libc::c_int = 8 << 20;
        libc::setsockopt(std::os::fd::AsRawFd::as_raw_fd(&s), libc::SOL_SOCKET, libc::SO_RCVBUF, &v as *const _ as *const libc::c_void, 4)
    };
    let mut buf = [0u8; 2048];
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let mut n: u64 = 0;
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    while Instant::now() < deadline {
        if s.recv(&mut buf).is_ok() {
            n += 1;
            last = Instant::now();
            first.get_or_insert(last);
        }
    }
    let dt = first.map(|f| (last - f).as_secs_f64()).unwrap_or(0.0);
    let rate = if dt > 0.0 { n as f64 / dt } else { 0.0 };
    println!("received {n} packets in {dt:.2} s = {rate:.0} pps");
}
