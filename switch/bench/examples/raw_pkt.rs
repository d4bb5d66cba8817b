//! Traffic for the benchmarks below the hosts' network stacks: frames
//! written straight to an interface, and an XDP sink that counts them.
//! The UDP endpoints (udp_pkt) pay the kernel's socket paths on both hosts,
//! and on 2 cores those, not the forwarder between them, set the rate.
//!
//!   raw_pkt send IFACE DST_MAC SRC_IP DST_IP:PORT SECONDS PAYLOAD_BYTES [PPS]
//!       (PPS 0 = as fast as possible)   → "sent N packets in T s = R pps"
//!   raw_pkt sink IFACE SECONDS [--driver]
//!       → "received N packets in T s = R pps" (T: first to last frame)
//!
//! The sink runs as generic XDP, on the socket buffer the sender's frame
//! already is. `--driver` runs it in veth's own XDP instead, which copies
//! each frame into a page of its own first (its socket buffer lacks XDP's
//! headroom): that copy, charged to whoever sent the frame, made the
//! forwarders' rates swing more from round to round.
use p4cc_bench::xdp_sink::{XdpMode, XdpSink};
use p4cc_bench::{parse_ip, parse_mac, udp_frame};
use std::time::{Duration, Instant};

fn usage() -> ! {
    eprintln!("usage: raw_pkt send IFACE DST_MAC SRC_IP DST_IP:PORT SECONDS PAYLOAD [PPS] | raw_pkt sink IFACE SECONDS [--driver]");
    std::process::exit(2)
}

fn die(msg: String) -> ! {
    eprintln!("raw_pkt: {msg}");
    std::process::exit(1)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    match a.get(1).map(String::as_str) {
        Some("send") if a.len() >= 8 => send(&a[2..]),
        Some("sink") if a.len() >= 4 => sink(&a[2], a[3].parse().unwrap_or_else(|_| usage()), a.iter().any(|x| x == "--driver")),
        _ => usage(),
    }
}

fn send(a: &[String]) {
    let iface = &a[0];
    let dst_mac = parse_mac(&a[1]).unwrap_or_else(|| usage());
    let src_ip = parse_ip(&a[2]).unwrap_or_else(|| usage());
    let (dst_ip, port) = a[3].split_once(':').unwrap_or_else(|| usage());
    let dst_ip = parse_ip(dst_ip).unwrap_or_else(|| usage());
    let port: u16 = port.parse().unwrap_or_else(|_| usage());
    let secs: f64 = a[4].parse().unwrap_or_else(|_| usage());
    let payload: usize = a[5].parse().unwrap_or_else(|_| usage());
    let pps: u64 = a.get(6).and_then(|s| s.parse().ok()).unwrap_or(0);
    let src_mac = std::fs::read_to_string(format!("/sys/class/net/{iface}/address"))
        .ok()
        .and_then(|s| parse_mac(s.trim()))
        .unwrap_or_else(|| die(format!("no interface {iface}")));
    let ifindex = ports::socket::ifindex(iface).unwrap_or_else(|| die(format!("no interface {iface}")));
    let frame = udp_frame(dst_mac, src_mac, src_ip, dst_ip, 5000, port, payload + 42);

    // Protocol 0: the socket only sends (it is never handed received frames).
    // SAFETY: plain socket calls on a descriptor this function owns.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
    if fd < 0 {
        die(format!("socket(AF_PACKET): {} (are you root?)", std::io::Error::last_os_error()));
    }
    let one: libc::c_int = 1;
    // Straight to the device, as the forwarders send.
    let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    unsafe { libc::setsockopt(fd, libc::SOL_PACKET, ports::socket::PACKET_QDISC_BYPASS, &one as *const _ as *const libc::c_void, size) };
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = (libc::ETH_P_IP as u16).to_be();
    addr.sll_ifindex = ifindex;
    let len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
    p4cc_bench::blast(fd, &frame, &mut addr as *mut _ as *mut libc::c_void, len, secs, pps);
}

fn sink(iface: &str, secs: f64, driver: bool) {
    let ifindex = ports::socket::ifindex(iface).unwrap_or_else(|| die(format!("no interface {iface}")));
    let mode = if driver { XdpMode::Driver } else { XdpMode::Generic };
    let s = XdpSink::attach(ifindex as u32, mode).unwrap_or_else(|e| die(format!("{iface}: {e}")));
    let count = || s.count().unwrap_or_else(|e| die(format!("reading the sink's count: {e}")));
    let deadline = Instant::now() + Duration::from_secs_f64(secs);
    let (mut first, mut last) = (None::<(Instant, u64)>, None::<(Instant, u64)>);
    let mut seen = 0;
    // Polled: the rate is taken from the first to the last frame seen, as
    // udp_pkt recv does, so the wait for the sender does not count.
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
        let n = count();
        if n > seen {
            let now = Instant::now();
            first.get_or_insert((now, n));
            last = Some((now, n));
            seen = n;
        }
    }
    let (rate, dt) = match (first, last) {
        (Some((t0, n0)), Some((t1, n1))) if t1 > t0 => ((n1 - n0) as f64 / (t1 - t0).as_secs_f64(), (t1 - t0).as_secs_f64()),
        _ => (0.0, 0.0),
    };
    println!("received {seen} packets in {dt:.2} s = {rate:.0} pps");
}
