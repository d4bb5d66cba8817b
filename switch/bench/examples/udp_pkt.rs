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
    p4cc_bench::blast(std::os::fd::AsRawFd::as_raw_fd(&s), &buf, std::ptr::null_mut(), 0, secs, pps);
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
