//! (c) A trivial AF_PACKET forwarder between two interfaces, with the same
//! socket code as p4cc-switch (PACKET_MMAP rx ring, sendmmsg tx): frames go
//! out unchanged. It is the physical limit of the path here.
//!
//! usage: afpacket_fwd IFACE_A IFACE_B   (runs until SIGINT/SIGTERM)
use ports::socket::{wait_readable, PacketSocket, DEFAULT_RING_BYTES};
use std::sync::atomic::{AtomicBool, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: afpacket_fwd IFACE_A IFACE_B");
        std::process::exit(2);
    }
    let mut socks = [
        PacketSocket::open(&args[1], DEFAULT_RING_BYTES).unwrap_or_else(|e| { eprintln!("afpacket_fwd: {e}"); std::process::exit(1) }),
        PacketSocket::open(&args[2], DEFAULT_RING_BYTES).unwrap_or_else(|e| { eprintln!("afpacket_fwd: {e}"); std::process::exit(1) }),
    ];
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let mut fds: Vec<libc::pollfd> = socks.iter().map(|s| libc::pollfd { fd: s.fd(), events: libc::POLLIN, revents: 0 }).collect();
    let mut batch: Vec<Vec<u8>> = Vec::with_capacity(64);
    let mut fwd = [0u64; 2];
    while !STOP.load(Ordering::Relaxed) {
        let mut any = false;
        for i in 0..2 {
            batch.clear();
            let n = socks[i].recv_batch(64, |f, _| batch.push(f.to_vec()));
            if n > 0 {
                any = true;
                let (sent, _) = socks[1 - i].send_batch(&batch);
                fwd[i] += sent as u64;
            }
        }
        if !any {
            let _ = wait_readable(&mut fds, Some(100_000_000));
        }
    }
    eprintln!("afpacket_fwd: forwarded {} + {} frames", fwd[0], fwd[1]);
}
