//! AF_PACKET sockets bound to one Linux interface each.
//!
//! Receive: a PACKET_MMAP (TPACKET_V2) ring, read without a system call per
//! frame; frames the host sends out of the interface itself are ignored
//! (PACKET_IGNORE_OUTGOING, or the `PACKET_OUTGOING` type on older
//! kernels). The interface is put in promiscuous mode for the socket's
//! lifetime. Transmit: `sendmmsg` batches, bypassing the qdisc
//! (PACKET_QDISC_BYPASS).
//!
//! Frames larger than a ring slot (sized from the interface MTU) are dropped
//! and counted: with TSO/GSO/GRO on, a veth peer hands over frames far larger
//! than the MTU, so hosts must turn them off (`ethtool -K IFACE tso off gso
//! off gro off`). Frames whose checksum the sender left to offload
//! (TP_STATUS_CSUMNOTREADY) get their TCP/UDP checksum completed here.
use std::ffi::CString;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, AtomicU32, Ordering};
use thiserror::Error;

const ETH_P_ALL: u16 = 0x0003;
const SOL_PACKET: libc::c_int = 263;
const PACKET_ADD_MEMBERSHIP: libc::c_int = 1;
const PACKET_MR_PROMISC: libc::c_ushort = 1;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_VERSION: libc::c_int = 10;
/// Frames go straight to the device, past the qdisc.
pub const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
/// Set on frames the kernel wrote after it dropped some for want of a free
/// slot, until PACKET_STATISTICS is read.
const TP_STATUS_LOSING: u32 = 1 << 2;
const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
const PACKET_OUTGOING: u8 = 4;
/// sizeof(struct tpacket2_hdr), already TPACKET_ALIGNMENT-aligned.
const TPACKET2_HDRLEN: usize = 32;

#[repr(C)]
struct Tpacket2Hdr {
    tp_status: u32,
    tp_len: u32,
    tp_snaplen: u32,
    tp_mac: u16,
    tp_net: u16,
    tp_sec: u32,
    tp_nsec: u32,
    tp_vlan_tci: u16,
    tp_vlan_tpid: u16,
    tp_padding: [u8; 4],
}

#[repr(C)]
struct TpacketReq {
    tp_block_size: u32,
    tp_block_nr: u32,
    tp_frame_size: u32,
    tp_frame_nr: u32,
}

#[repr(C)]
struct PacketMreq {
    mr_ifindex: libc::c_int,
    mr_type: libc::c_ushort,
    mr_alen: libc::c_ushort,
    mr_address: [u8; 8],
}

#[derive(Debug, Error)]
pub enum SocketError {
    #[error("no network interface named '{0}'")]
    NoSuchInterface(String),
    #[error("interface '{iface}': {what}: {err}")]
    Io { iface: String, what: &'static str, err: io::Error },
}

/// Default receive ring size per port.
pub const DEFAULT_RING_BYTES: usize = 4 << 20;

/// An AF_PACKET socket with an rx ring, bound to one interface.
pub struct PacketSocket {
    fd: OwnedFd,
    iface: String,
    ifindex: i32,
    ring: *mut u8,
    ring_len: usize,
    frame_size: usize,
    frames_per_block: usize,
    block_size: usize,
    frame_nr: usize,
    head: usize,
    ignore_outgoing: bool,
    /// Frames dropped because they did not fit a ring slot.
    pub rx_truncated: u64,
    /// A frame came with TP_STATUS_LOSING: the ring dropped frames that
    /// PACKET_STATISTICS has not reported yet.
    losing: bool,
}

// The ring is owned by this socket alone.
unsafe impl Send for PacketSocket {}

/// Starts loading the next ring slot's header and first frame bytes while
/// the current frame is processed: the kernel wrote them on another core,
/// so the first touch otherwise waits for them to cross over.
#[inline(always)]
fn prefetch_slot(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch(p as *const i8, _MM_HINT_T0);
        _mm_prefetch(p.wrapping_add(64) as *const i8, _MM_HINT_T0);
        _mm_prefetch(p.wrapping_add(128) as *const i8, _MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

fn last_err() -> io::Error {
    io::Error::last_os_error()
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, val: &T) -> io::Result<()> {
    let r = unsafe {
        libc::setsockopt(fd, level, name, val as *const T as *const libc::c_void, std::mem::size_of::<T>() as u32)
    };
    if r < 0 {
        Err(last_err())
    } else {
        Ok(())
    }
}

/// Index of a network interface, or `None` when there is none by that name.
pub fn ifindex(iface: &str) -> Option<i32> {
    let c = CString::new(iface).ok()?;
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        None
    } else {
        Some(i as i32)
    }
}

/// The MTU of an interface.
pub fn mtu(iface: &str) -> io::Result<u32> {
    #[repr(C)]
    struct IfreqMtu {
        name: [u8; 16],
        mtu: libc::c_int,
        _pad: [u8; 20],
    }
    let mut req = IfreqMtu { name: [0; 16], mtu: 0, _pad: [0; 20] };
    let b = iface.as_bytes();
    if b.len() >= 16 {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "interface name too long"));
    }
    req.name[..b.len()].copy_from_slice(b);
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(last_err());
    }
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFMTU as _, &mut req as *mut IfreqMtu) };
    if r < 0 {
        return Err(last_err());
    }
    Ok(req.mtu.max(68) as u32)
}

impl PacketSocket {
    /// Opens a socket on `iface` with a receive ring of about `ring_bytes`.
    pub fn open(iface: &str, ring_bytes: usize) -> Result<PacketSocket, SocketError> {
        let index = ifindex(iface).ok_or_else(|| SocketError::NoSuchInterface(iface.to_string()))?;
        let io_err = |what: &'static str| {
            let err = last_err();
            SocketError::Io { iface: iface.to_string(), what, err }
        };
        let raw = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                (ETH_P_ALL.to_be()) as libc::c_int,
            )
        };
        if raw < 0 {
            return Err(io_err("socket(AF_PACKET) (are you root?)"));
        }
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mk = |what: &'static str, err: io::Error| SocketError::Io { iface: iface.to_string(), what, err };

        let ignore_outgoing = setsockopt(raw, SOL_PACKET, PACKET_IGNORE_OUTGOING, &1i32).is_ok();
        setsockopt(raw, SOL_PACKET, PACKET_VERSION, &TPACKET_V2).map_err(|e| mk("PACKET_VERSION", e))?;
        // Best effort: not every kernel has it, and it only saves time.
        let _ = setsockopt(raw, SOL_PACKET, PACKET_QDISC_BYPASS, &1i32);
        let _ = setsockopt(raw, libc::SOL_SOCKET, libc::SO_SNDBUF, &(4i32 << 20));

        let mtu = mtu(iface).unwrap_or(1500) as usize;
        // Slot: header + sockaddr_ll + padding + the largest frame (MTU +
        // Ethernet + VLAN), rounded up to a power of two.
        let frame_size = (TPACKET2_HDRLEN + 32 + 16 + mtu + 18).next_power_of_two().max(2048);
        let block_size = frame_size.max(1 << 16);
        let block_nr = (ring_bytes / block_size).max(4);
        let frames_per_block = block_size / frame_size;
        let frame_nr = block_nr * frames_per_block;
        let req = TpacketReq {
            tp_block_size: block_size as u32,
            tp_block_nr: block_nr as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: frame_nr as u32,
        };
        setsockopt(raw, SOL_PACKET, PACKET_RX_RING, &req).map_err(|e| mk("PACKET_RX_RING", e))?;
        let ring_len = block_size * block_nr;
        let ring = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                raw,
                0,
            )
        };
        if ring == libc::MAP_FAILED {
            return Err(io_err("mmap rx ring"));
        }
        // From here on, Drop unmaps the ring.
        let sock = PacketSocket {
            fd,
            iface: iface.to_string(),
            ifindex: index,
            ring: ring as *mut u8,
            ring_len,
            frame_size,
            frames_per_block,
            block_size,
            frame_nr,
            head: 0,
            ignore_outgoing,
            rx_truncated: 0,
            losing: false,
        };

        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_ALL.to_be();
        sll.sll_ifindex = index;
        let r = unsafe {
            libc::bind(
                raw,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r < 0 {
            return Err(io_err("bind"));
        }
        let mreq = PacketMreq { mr_ifindex: index, mr_type: PACKET_MR_PROMISC, mr_alen: 0, mr_address: [0; 8] };
        setsockopt(raw, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mreq).map_err(|e| mk("promiscuous mode", e))?;
        Ok(sock)
    }

    pub fn iface(&self) -> &str {
        &self.iface
    }

    pub fn ifindex(&self) -> i32 {
        self.ifindex
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Receive ring capacity in frames.
    pub fn ring_frames(&self) -> usize {
        self.frame_nr
    }

    fn frame_ptr(&self, i: usize) -> *mut u8 {
        let block = i / self.frames_per_block;
        let within = i % self.frames_per_block;
        unsafe { self.ring.add(block * self.block_size + within * self.frame_size) }
    }

    /// Hands up to `budget` received frames to `f`, in order, with the time
    /// the kernel received each (ns of CLOCK_REALTIME); returns how many
    /// frames were taken off the ring (including dropped ones).
    pub fn recv_batch<F: FnMut(&mut [u8], u64)>(&mut self, budget: usize, mut f: F) -> usize {
        let mut n = 0;
        while n < budget {
            let p = self.frame_ptr(self.head);
            // SAFETY: p points at a tpacket2_hdr inside the mapped ring;
            // tp_status is the word the kernel and we hand the slot over with.
            let status_word = unsafe { &*(p as *const AtomicU32) };
            let status = status_word.load(Ordering::Acquire);
            if status & TP_STATUS_USER == 0 {
                break;
            }
            fence(Ordering::Acquire);
            prefetch_slot(self.frame_ptr((self.head + 1) % self.frame_nr));
            let hdr = unsafe { &*(p as *const Tpacket2Hdr) };
            let (mac, snap, len) = (hdr.tp_mac as usize, hdr.tp_snaplen as usize, hdr.tp_len as usize);
            let pkttype = unsafe { *p.add(TPACKET2_HDRLEN + 10) };
            self.losing |= status & TP_STATUS_LOSING != 0;
            if snap != len || mac + snap > self.frame_size {
                self.rx_truncated += 1;
            } else if self.ignore_outgoing || pkttype != PACKET_OUTGOING {
                let data = unsafe { std::slice::from_raw_parts_mut(p.add(mac), snap) };
                if status & TP_STATUS_CSUMNOTREADY != 0 {
                    complete_l4_checksum(data);
                }
                f(data, hdr.tp_sec as u64 * 1_000_000_000 + hdr.tp_nsec as u64);
            }
            status_word.store(TP_STATUS_KERNEL, Ordering::Release);
            self.head = (self.head + 1) % self.frame_nr;
            n += 1;
        }
        n
    }

    /// Sends `frames` out of the interface; returns (sent, failed). Frames
    /// the kernel refuses (e.g. full buffers) are dropped, not retried.
    pub fn send_batch<B: AsRef<[u8]>>(&self, frames: &[B]) -> (usize, usize) {
        const CHUNK: usize = 64;
        let mut sent = 0;
        let mut failed = 0;
        let mut i = 0;
        // Only the first n entries are filled and read: zeroing all of both
        // arrays (5 KB) on every call cost more than a small batch's work.
        let mut iov = [const { MaybeUninit::<libc::iovec>::uninit() }; CHUNK];
        let mut msgs = [const { MaybeUninit::<libc::mmsghdr>::uninit() }; CHUNK];
        while i < frames.len() {
            let n = (frames.len() - i).min(CHUNK);
            for k in 0..n {
                let f = frames[i + k].as_ref();
                let v = iov[k].write(libc::iovec { iov_base: f.as_ptr() as *mut libc::c_void, iov_len: f.len() });
                // SAFETY: msghdr and mmsghdr are plain C structs; all-zero is valid.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = v;
                m.msg_hdr.msg_iovlen = 1;
                msgs[k].write(m);
            }
            // SAFETY: entries 0..n were written above.
            let r = unsafe { libc::sendmmsg(self.fd.as_raw_fd(), msgs.as_mut_ptr() as *mut libc::mmsghdr, n as u32, libc::MSG_DONTWAIT) };
            if r > 0 {
                sent += r as usize;
                i += r as usize;
            } else {
                let e = last_err();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // Drop the frame the kernel refused and go on with the rest.
                failed += 1;
                i += 1;
            }
        }
        (sent, failed)
    }

    /// Takes the socket's pending error (SO_ERROR), if any: after the
    /// interface went down or away, poll reports POLLERR until it is read.
    pub fn take_error(&self) -> Option<io::Error> {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let r = unsafe {
            libc::getsockopt(self.fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_ERROR, &mut v as *mut _ as *mut libc::c_void, &mut len)
        };
        if r == 0 && v != 0 {
            Some(io::Error::from_raw_os_error(v))
        } else {
            None
        }
    }

    /// Whether the ring has flagged drops (TP_STATUS_LOSING) that
    /// `take_ring_drops` has not collected. The flag rides on the frames
    /// written after the drops, so drops followed by silence show only in
    /// PACKET_STATISTICS: read that now and then all the same.
    pub fn ring_losing(&self) -> bool {
        self.losing
    }

    /// Frames the kernel dropped since the last call because the receive
    /// ring was full (PACKET_STATISTICS; reading resets the kernel's count).
    pub fn take_ring_drops(&mut self) -> u64 {
        self.losing = false;
        #[repr(C)]
        struct TpacketStats {
            tp_packets: u32,
            tp_drops: u32,
        }
        let mut st = TpacketStats { tp_packets: 0, tp_drops: 0 };
        let mut len = std::mem::size_of::<TpacketStats>() as libc::socklen_t;
        // SAFETY: PACKET_STATISTICS fills a tpacket_stats of `len` bytes.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut _ as *mut libc::c_void,
                &mut len,
            )
        };
        if r == 0 {
            u64::from(st.tp_drops)
        } else {
            0
        }
    }

    /// Whether the interface this socket is bound to still exists.
    pub fn interface_exists(&self) -> bool {
        ifindex(&self.iface) == Some(self.ifindex)
    }

    /// Sends one frame; true on success.
    pub fn send(&self, frame: &[u8]) -> bool {
        let r = unsafe {
            libc::send(self.fd.as_raw_fd(), frame.as_ptr() as *const libc::c_void, frame.len(), libc::MSG_DONTWAIT)
        };
        r >= 0
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        unsafe {
            libc::munmap(self.ring as *mut libc::c_void, self.ring_len);
        }
    }
}

/// Waits until one of `fds` is readable or `timeout_ns` passes (`None`:
/// forever). Returns the number of ready descriptors (0 on timeout).
pub fn wait_readable(fds: &mut [libc::pollfd], timeout_ns: Option<u64>) -> io::Result<usize> {
    for p in fds.iter_mut() {
        p.events = libc::POLLIN;
        p.revents = 0;
    }
    let ts;
    let tsp = match timeout_ns {
        Some(ns) => {
            ts = libc::timespec { tv_sec: (ns / 1_000_000_000) as _, tv_nsec: (ns % 1_000_000_000) as _ };
            &ts as *const libc::timespec
        }
        None => std::ptr::null(),
    };
    let r = unsafe { libc::ppoll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, tsp, std::ptr::null()) };
    if r < 0 {
        let e = last_err();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

/// Asks the kernel for precise timer wake-ups on this thread (default slack
/// is 50 µs, more than a serialization time at 1 Gbit/s).
pub fn set_precise_timers() {
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Nanoseconds of CLOCK_REALTIME (the clock of receive timestamps).
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe {
        libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds of CLOCK_MONOTONIC.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn csum_add(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
        if sum > 0xffff_0000 {
            sum = (sum & 0xffff) + (sum >> 16);
        }
    }
    if let [b] = chunks.remainder() {
        sum += (*b as u32) << 8;
    }
    sum
}

fn csum_fold(mut sum: u32) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// Computes the TCP or UDP checksum of an untagged IPv4 Ethernet frame
/// whose sender left it to offload. Other frames are left alone.
pub fn complete_l4_checksum(frame: &mut [u8]) {
    if frame.len() < 14 + 20 || frame[12] != 0x08 || frame[13] != 0x00 {
        return;
    }
    let ip = &frame[14..];
    if ip[0] >> 4 != 4 {
        return;
    }
    let ihl = (ip[0] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
    let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff;
    if ihl < 20 || total < ihl || 14 + total > frame.len() || frag != 0 {
        return;
    }
    let proto = ip[9];
    let off = match proto {
        6 => 16,
        17 => 6,
        _ => return,
    };
    let l4_len = total - ihl;
    if l4_len < off + 2 {
        return;
    }
    let l4_start = 14 + ihl;
    frame[l4_start + off] = 0;
    frame[l4_start + off + 1] = 0;
    let mut sum = csum_add(0, &frame[14 + 12..14 + 20]);
    sum += proto as u32 + l4_len as u32;
    sum = csum_add(sum, &frame[l4_start..l4_start + l4_len]);
    let mut c = csum_fold(sum);
    if proto == 17 && c == 0 {
        c = 0xffff;
    }
    frame[l4_start + off..l4_start + off + 2].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_interface_is_reported() {
        match PacketSocket::open("p4cc-nonexistent0", DEFAULT_RING_BYTES) {
            Err(SocketError::NoSuchInterface(n)) => assert_eq!(n, "p4cc-nonexistent0"),
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("opened a missing interface"),
        }
    }

    /// A full ring flags its drops on the frames after them, and reading
    /// the statistics collects the count and clears the flag. Runs on the
    /// loopback of a network namespace of its own (root only; skipped,
    /// saying so, otherwise).
    #[test]
    fn full_ring_flags_and_counts_its_drops() {
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: AF_PACKET needs root");
            return;
        }
        // This test's thread alone moves to a fresh namespace (cargo runs
        // each test on a thread of its own; the thread ends with the test).
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            eprintln!("skipped: unshare(CLONE_NEWNET): {}", last_err());
            return;
        }
        set_up("lo");
        // Smallest ring: one block of 4 KB slots.
        let mut rx = PacketSocket::open("lo", 64 << 10).expect("packet socket on lo");
        let slots = rx.ring_frames();
        let tx = PacketSocket::open("lo", 64 << 10).expect("second packet socket on lo");
        let mut frame = vec![0u8; 60];
        frame[12..14].copy_from_slice(&0x88b5u16.to_be_bytes()); // local experimental EtherType
        let n = 3 * slots;
        for i in 0..n {
            frame[14..18].copy_from_slice(&(i as u32).to_be_bytes());
            assert!(tx.send(&frame), "send {i}: {}", last_err());
        }
        let got = rx.recv_batch(usize::MAX, |_, _| {});
        assert_eq!(got, slots, "the ring holds {slots} frames");
        assert!(!rx.ring_losing(), "the frames written before any drop carry no flag");
        assert_eq!(rx.take_ring_drops(), (n - slots) as u64);
        // After a drop, the next frame written carries the flag.
        for _ in 0..slots + 1 {
            assert!(tx.send(&frame));
        }
        rx.recv_batch(usize::MAX, |_, _| {});
        assert!(!rx.ring_losing(), "statistics read: no drop outstanding");
        assert!(tx.send(&frame));
        rx.recv_batch(usize::MAX, |_, _| {});
        assert!(rx.ring_losing(), "a frame written after a drop flags it");
        assert_eq!(rx.take_ring_drops(), 1);
        assert!(!rx.ring_losing());
    }

    /// Brings an interface up (ioctl SIOCSIFFLAGS).
    fn set_up(iface: &str) {
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0) };
        assert!(fd >= 0);
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (d, s) in req.ifr_name.iter_mut().zip(iface.bytes()) {
            *d = s as libc::c_char;
        }
        unsafe {
            assert_eq!(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req), 0);
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            assert_eq!(libc::ioctl(fd, libc::SIOCSIFFLAGS, &req), 0);
            libc::close(fd);
        }
    }

    #[test]
    fn udp_checksum_completed() {
        // Ethernet + IPv4 (10.0.0.1 -> 10.0.0.2) + UDP 1234->5678 "hi".
        let mut f = vec![0u8; 14];
        f[12] = 0x08;
        f.extend_from_slice(&[
            0x45, 0, 0, 30, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0x04, 0xd2, 0x16, 0x2e, 0, 10,
            0xab, 0xcd, b'h', b'i',
        ]);
        complete_l4_checksum(&mut f);
        // Verify: the sum over pseudo header + segment folds to 0.
        let l4 = &f[34..44];
        let mut sum = csum_add(0, &f[26..34]);
        sum += 17 + 10;
        sum = csum_add(sum, l4);
        assert_eq!(csum_fold(sum), 0);
    }
}
