//! Thin, safe wrappers over the Linux socket calls the datapaths need:
//! a non-blocking IPv4 UDP socket with IP_TOS / IP_RECVTOS, batched
//! receive (recvmmsg, with the TOS byte and the kernel's receive time of
//! each datagram from its control messages) and batched send (sendmmsg),
//! and precise waits (ppoll).

use std::io;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub const SLOT: usize = 2048;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

pub fn sockaddr_in(a: SocketAddrV4) -> libc::sockaddr_in {
    // SAFETY: sockaddr_in is plain old data; all-zero is a valid value.
    let mut s: libc::sockaddr_in = unsafe { zeroed() };
    s.sin_family = libc::AF_INET as libc::sa_family_t;
    s.sin_port = a.port().to_be();
    s.sin_addr = libc::in_addr { s_addr: u32::from(*a.ip()).to_be() };
    s
}

pub fn from_sockaddr_in(s: &libc::sockaddr_in) -> SocketAddrV4 {
    SocketAddrV4::new(Ipv4Addr::from(u32::from_be(s.sin_addr.s_addr)), u16::from_be(s.sin_port))
}

pub fn v4(a: SocketAddr) -> io::Result<SocketAddrV4> {
    match a {
        SocketAddr::V4(v) => Ok(v),
        SocketAddr::V6(_) => Err(io::Error::new(io::ErrorKind::Unsupported, "only IPv4 is supported")),
    }
}

pub fn setsockopt_int(fd: RawFd, level: libc::c_int, name: libc::c_int, v: libc::c_int) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int with its size.
    cvt(unsafe {
        libc::setsockopt(fd, level, name, &v as *const _ as *const libc::c_void, size_of::<libc::c_int>() as libc::socklen_t)
    })
    .map(|_| ())
}

/// Lowers this thread's timer slack to 1 ns so short sleeps end on time
/// (the default slack of 50 us would wreck pacing at 100 Mb/s).
pub fn precise_timers() {
    // SAFETY: prctl with an integer argument has no memory effects.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Switches the calling thread to SCHED_FIFO at `prio` (1..99): wakeups
/// then preempt ordinary tasks at once, which pacing on a busy machine
/// needs (CFS/EEVDF may delay a waking task by a scheduler slice, ~ms).
/// The kernel's RT throttling (sched_rt_runtime_us) still bounds it.
pub fn set_realtime(prio: i32) -> io::Result<()> {
    let p = libc::sched_param { sched_priority: prio.clamp(1, 99) };
    // SAFETY: sched_setscheduler on the calling thread with a valid param.
    cvt(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) }).map(|_| ())
}

/// Waits until `fd` has `events` or `timeout_ns` passes. Returns whether
/// the fd is ready.
pub fn wait_fd(fd: RawFd, events: libc::c_short, timeout_ns: u64) -> io::Result<bool> {
    let mut p = libc::pollfd { fd, events, revents: 0 };
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: one valid pollfd, a valid timespec, no signal mask.
    let r = unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(false);
        }
        return Err(e);
    }
    Ok(r > 0)
}

pub struct UdpSock {
    fd: OwnedFd,
}

impl AsRawFd for UdpSock {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl UdpSock {
    pub fn bind(addr: SocketAddrV4) -> io::Result<UdpSock> {
        // SAFETY: plain socket(2) call; the fd is owned below.
        let fd = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, 0) })?;
        // SAFETY: fd is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let sa = sockaddr_in(addr);
        // SAFETY: valid sockaddr_in and its size.
        cvt(unsafe {
            libc::bind(fd.as_raw_fd(), &sa as *const _ as *const libc::sockaddr, size_of::<libc::sockaddr_in>() as libc::socklen_t)
        })?;
        Ok(UdpSock { fd })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddrV4> {
        // SAFETY: getsockname into a zeroed sockaddr_in of the right size.
        let mut sa: libc::sockaddr_in = unsafe { zeroed() };
        let mut len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        cvt(unsafe { libc::getsockname(self.as_raw_fd(), &mut sa as *mut _ as *mut libc::sockaddr, &mut len) })?;
        Ok(from_sockaddr_in(&sa))
    }

    /// TOS byte of outgoing datagrams (ECT(0) = 0x02).
    pub fn set_tos(&self, tos: u8) -> io::Result<()> {
        setsockopt_int(self.as_raw_fd(), libc::IPPROTO_IP, libc::IP_TOS, tos as libc::c_int)
    }

    /// Deliver the TOS byte of each received datagram as a control message.
    pub fn set_recv_tos(&self) -> io::Result<()> {
        setsockopt_int(self.as_raw_fd(), libc::IPPROTO_IP, libc::IP_RECVTOS, 1)
    }

    /// Stamp each received datagram with the kernel's receive time
    /// (`SO_TIMESTAMPNS`, CLOCK_REALTIME, taken when the frame entered the
    /// host's stack): the datagram's arrival, not when this process got
    /// round to reading it. The kernel turns stamping on from a work item,
    /// so the first datagrams after this call may still be stamped when
    /// they are read.
    pub fn set_rx_timestamps(&self) -> io::Result<()> {
        setsockopt_int(self.as_raw_fd(), libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
    }

    /// Socket buffers; tries the privileged *FORCE variants first.
    pub fn set_buffers(&self, bytes: usize) {
        let b = bytes.min(i32::MAX as usize) as libc::c_int;
        let fd = self.as_raw_fd();
        if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, b).is_err() {
            let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, b);
        }
        if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, b).is_err() {
            let _ = setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, b);
        }
    }

    pub fn send_to(&self, buf: &[u8], to: SocketAddrV4) -> io::Result<usize> {
        let sa = sockaddr_in(to);
        // SAFETY: valid buffer and sockaddr.
        let r = unsafe {
            libc::sendto(
                self.as_raw_fd(),
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
                0,
                &sa as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if r < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(r as usize)
        }
    }

    pub fn wait_readable(&self, timeout_ns: u64) -> io::Result<bool> {
        wait_fd(self.as_raw_fd(), libc::POLLIN, timeout_ns)
    }

    pub fn wait_writable(&self, timeout_ns: u64) -> io::Result<bool> {
        wait_fd(self.as_raw_fd(), libc::POLLOUT, timeout_ns)
    }

    /// Receives up to `b.capacity()` datagrams without blocking; returns how
    /// many (0 when none is queued).
    pub fn recv_batch(&self, b: &mut RecvBatch) -> io::Result<usize> {
        b.n = 0;
        let cap = b.cap;
        for i in 0..cap {
            b.iovs[i] = libc::iovec { iov_base: b.bufs[i * SLOT..].as_mut_ptr() as *mut libc::c_void, iov_len: SLOT };
            // SAFETY: msghdr is POD; zero is a valid initial value.
            let mut h: libc::msghdr = unsafe { zeroed() };
            h.msg_name = &mut b.addrs[i] as *mut _ as *mut libc::c_void;
            h.msg_namelen = size_of::<libc::sockaddr_in>() as libc::socklen_t;
            h.msg_iov = &mut b.iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = b.ctrl[i].as_mut_ptr() as *mut libc::c_void;
            h.msg_controllen = size_of::<Ctrl>() as _;
            b.hdrs[i] = libc::mmsghdr { msg_hdr: h, msg_len: 0 };
        }
        // SAFETY: every header points into buffers owned by `b`, which
        // outlive the call; the count matches the array length.
        let r = unsafe {
            libc::recvmmsg(self.as_raw_fd(), b.hdrs.as_mut_ptr(), cap as libc::c_uint, libc::MSG_DONTWAIT, std::ptr::null_mut())
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                // ICMP errors reported on the socket: not fatal for UDP
                io::ErrorKind::ConnectionRefused => Ok(0),
                _ => Err(e),
            };
        }
        let n = r as usize;
        for i in 0..n {
            b.lens[i] = b.hdrs[i].msg_len as usize;
            b.tos[i] = None;
            b.rx_real_ns[i] = None;
            let h = &b.hdrs[i].msg_hdr;
            // SAFETY: CMSG_* walk the control buffer the kernel filled, bounded by msg_controllen.
            unsafe {
                let mut c = libc::CMSG_FIRSTHDR(h);
                while !c.is_null() {
                    if (*c).cmsg_level == libc::IPPROTO_IP && ((*c).cmsg_type == libc::IP_TOS || (*c).cmsg_type == libc::IP_RECVTOS) {
                        b.tos[i] = Some(*libc::CMSG_DATA(c));
                    }
                    if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                        let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                        b.rx_real_ns[i] = Some(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64);
                    }
                    c = libc::CMSG_NXTHDR(h, c);
                }
            }
        }
        b.n = n;
        Ok(n)
    }

    /// Sends the queued datagrams with sendmmsg; waits (up to 2 ms per
    /// stall) when the socket buffer is full. Returns (sent, dropped).
    pub fn send_batch(&self, b: &mut SendBatch) -> io::Result<(usize, usize)> {
        let mut off = 0;
        let mut dropped = 0;
        while off < b.n {
            let cnt = b.n - off;
            for i in 0..cnt {
                let k = off + i;
                b.iovs[i] = libc::iovec { iov_base: b.bufs[k * SLOT..].as_mut_ptr() as *mut libc::c_void, iov_len: b.lens[k] };
                // SAFETY: POD zero init.
                let mut h: libc::msghdr = unsafe { zeroed() };
                h.msg_name = &mut b.addrs[k] as *mut _ as *mut libc::c_void;
                h.msg_namelen = size_of::<libc::sockaddr_in>() as libc::socklen_t;
                h.msg_iov = &mut b.iovs[i];
                h.msg_iovlen = 1;
                b.hdrs[i] = libc::mmsghdr { msg_hdr: h, msg_len: 0 };
            }
            // SAFETY: headers point into `b`'s buffers, valid for the call.
            let r = unsafe { libc::sendmmsg(self.as_raw_fd(), b.hdrs.as_mut_ptr(), cnt as libc::c_uint, 0) };
            if r < 0 {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::WouldBlock => {
                        if !self.wait_writable(2_000_000)? {
                            dropped += 1;
                            off += 1;
                        }
                    }
                    io::ErrorKind::Interrupted => {}
                    // unreachable destination etc.: drop this datagram, go on
                    _ => {
                        dropped += 1;
                        off += 1;
                    }
                }
            } else {
                off += r as usize;
            }
        }
        let sent = b.n - dropped;
        b.n = 0;
        Ok((sent, dropped))
    }
}

/// Room for one datagram's control messages: the TOS byte (24 bytes with
/// its header) and a timespec (32).
type Ctrl = [u64; 8];

/// Buffers for [`UdpSock::recv_batch`].
pub struct RecvBatch {
    cap: usize,
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_in>,
    ctrl: Vec<Ctrl>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    lens: Vec<usize>,
    tos: Vec<Option<u8>>,
    rx_real_ns: Vec<Option<u64>>,
    n: usize,
}

// SAFETY: the raw pointers inside are only scratch, rebuilt on every call.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    pub fn new(cap: usize) -> RecvBatch {
        let cap = cap.max(1);
        // SAFETY: POD zero init for the C structs.
        RecvBatch {
            cap,
            bufs: vec![0u8; cap * SLOT],
            addrs: vec![unsafe { zeroed() }; cap],
            ctrl: vec![[0u64; 8]; cap],
            iovs: vec![libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; cap],
            hdrs: (0..cap).map(|_| unsafe { zeroed() }).collect(),
            lens: vec![0; cap],
            tos: vec![None; cap],
            rx_real_ns: vec![None; cap],
            n: 0,
        }
    }
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Datagram i: (bytes, source, TOS byte).
    pub fn get(&self, i: usize) -> (&[u8], SocketAddrV4, Option<u8>) {
        let len = self.lens[i].min(SLOT);
        (&self.bufs[i * SLOT..i * SLOT + len], from_sockaddr_in(&self.addrs[i]), self.tos[i])
    }
    /// When the kernel received datagram i (unix ns), if the socket
    /// stamps them ([`UdpSock::set_rx_timestamps`]).
    pub fn rx_real_ns(&self, i: usize) -> Option<u64> {
        self.rx_real_ns[i]
    }
}

/// Datagrams queued for [`UdpSock::send_batch`], built in place.
pub struct SendBatch {
    cap: usize,
    bufs: Vec<u8>,
    addrs: Vec<libc::sockaddr_in>,
    lens: Vec<usize>,
    iovs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    n: usize,
}

// SAFETY: see RecvBatch.
unsafe impl Send for SendBatch {}

impl SendBatch {
    pub fn new(cap: usize) -> SendBatch {
        let cap = cap.max(1);
        // SAFETY: POD zero init.
        SendBatch {
            cap,
            bufs: vec![0u8; cap * SLOT],
            addrs: vec![unsafe { zeroed() }; cap],
            lens: vec![0; cap],
            iovs: vec![libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; cap],
            hdrs: (0..cap).map(|_| unsafe { zeroed() }).collect(),
            n: 0,
        }
    }
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    pub fn is_full(&self) -> bool {
        self.n >= self.cap
    }
    /// The next free slot, to build a datagram in.
    pub fn slot(&mut self) -> &mut [u8] {
        let i = self.n.min(self.cap - 1);
        &mut self.bufs[i * SLOT..(i + 1) * SLOT]
    }
    /// Queues the datagram built in [`SendBatch::slot`].
    pub fn commit(&mut self, len: usize, to: SocketAddrV4) {
        if self.n < self.cap {
            self.lens[self.n] = len.min(SLOT);
            self.addrs[self.n] = sockaddr_in(to);
            self.n += 1;
        }
    }
    pub fn push(&mut self, data: &[u8], to: SocketAddrV4) {
        if self.n < self.cap {
            let n = data.len().min(SLOT);
            self.slot()[..n].copy_from_slice(&data[..n]);
            self.commit(n, to);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stamp is when the kernel took the datagram, however late the
    /// reader comes to it.
    #[test]
    fn rx_timestamps_are_the_kernels_not_the_readers() {
        let rx = UdpSock::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        rx.set_rx_timestamps().unwrap();
        rx.set_recv_tos().unwrap();
        // The kernel turns receive stamping on from a work item; until it
        // runs, a datagram is stamped when it is read.
        std::thread::sleep(std::time::Duration::from_millis(100));
        let tx = UdpSock::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        tx.set_tos(0x02).unwrap();
        let mut sb = SendBatch::new(1);
        sb.push(&[7; 100], rx.local_addr().unwrap());
        let sent = crate::clock::unix_now_ns();
        assert_eq!(tx.send_batch(&mut sb).unwrap(), (1, 0));
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut rb = RecvBatch::new(4);
        assert_eq!(rx.recv_batch(&mut rb).unwrap(), 1);
        let read = crate::clock::unix_now_ns();
        let stamp = rb.rx_real_ns(0).expect("SO_TIMESTAMPNS gives a stamp");
        assert!(stamp >= sent && read - stamp >= 50_000_000, "stamp {} ns after the send, {} ns before the read", stamp - sent, read - stamp);
        assert_eq!(rb.get(0).2, Some(0x02), "the TOS byte still comes through beside it");
        // without the option: no stamp
        let plain = UdpSock::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        sb.push(&[8; 100], plain.local_addr().unwrap());
        tx.send_batch(&mut sb).unwrap();
        assert!(plain.wait_readable(1_000_000_000).unwrap());
        assert_eq!(plain.recv_batch(&mut rb).unwrap(), 1);
        assert_eq!(rb.rx_real_ns(0), None);
    }

    #[test]
    fn batch_roundtrip_with_tos() {
        let rx = UdpSock::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        rx.set_recv_tos().unwrap();
        let tx = UdpSock::bind(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0)).unwrap();
        tx.set_tos(0x02).unwrap();
        let to = rx.local_addr().unwrap();
        let mut sb = SendBatch::new(8);
        for i in 0..5u8 {
            sb.push(&[i; 100], to);
        }
        assert_eq!(tx.send_batch(&mut sb).unwrap(), (5, 0));
        let mut rb = RecvBatch::new(16);
        let mut got = 0;
        for _ in 0..100 {
            rx.wait_readable(10_000_000).unwrap();
            let n = rx.recv_batch(&mut rb).unwrap();
            for i in 0..n {
                let (d, from, tos) = rb.get(i);
                assert_eq!(d.len(), 100);
                assert_eq!(d[0], got as u8);
                assert_eq!(from, tx.local_addr().unwrap());
                assert_eq!(tos, Some(0x02), "ECT(0) visible through IP_RECVTOS");
                got += 1;
            }
            if got == 5 {
                break;
            }
        }
        assert_eq!(got, 5);
    }
}
