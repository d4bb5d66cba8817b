//! A packet sink below the host's network stack: an XDP program on an
//! interface that counts every IPv4 frame and drops it. The benchmark's
//! receiving host used to be a UDP socket, whose kernel receive path
//! (routing, socket lookup, wake-ups) ran on the forwarder's core, inside
//! its sendmmsg, and cost more than most forwarders' own work: on 2 cores
//! the endpoints, not the forwarder, set the rate.
//!
//! The program is twenty instructions, assembled here and loaded with
//! bpf(2), so the benchmark needs no BPF compiler. It is attached through
//! a BPF link: closing the link (dropping [`XdpSink`], or the process
//! ending) detaches it, so nothing stays on the interface.
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

// bpf(2) commands and constants (linux/bpf.h).
const BPF_MAP_CREATE: libc::c_long = 0;
const BPF_MAP_LOOKUP_ELEM: libc::c_long = 1;
const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_LINK_CREATE: libc::c_long = 28;
const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_XDP: u32 = 37;
const BPF_PSEUDO_MAP_FD: u8 = 1;
const BPF_FUNC_MAP_LOOKUP_ELEM: i32 = 1;
const XDP_DROP: i32 = 1;
const XDP_PASS: i32 = 2;
const ETH_HLEN: i32 = 14;
/// 0x0800 as a little-endian load of its two big-endian bytes reads it.
const ETH_P_IP_LE: i32 = 0x0008;
/// Link flags: where the program runs.
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

/// Where the program runs: in the driver (veth's own XDP, before any
/// socket buffer is built) or generically, after one is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XdpMode {
    Driver,
    Generic,
}

#[derive(Debug)]
pub struct SinkError {
    pub what: &'static str,
    pub err: io::Error,
    /// The verifier's log, when loading failed.
    pub log: String,
}

impl std::fmt::Display for SinkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.err)?;
        if !self.log.is_empty() {
            write!(f, "\n{}", self.log.trim_end())?;
        }
        Ok(())
    }
}

impl std::error::Error for SinkError {}

#[repr(C)]
#[derive(Clone, Copy)]
struct Insn {
    code: u8,
    regs: u8, // dst in the low nibble, src in the high one
    off: i16,
    imm: i32,
}

const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn { code, regs: (src << 4) | dst, off, imm }
}

/// IPv4 frames are counted and dropped; anything else (the neighbour
/// discovery an interface sends when it comes up) passes to the host's
/// stack uncounted, so it cannot stretch the measured interval.
/// r1 holds the xdp_md on entry; r10 is the frame pointer; r0 the result.
fn program(map_fd: i32) -> Vec<Insn> {
    const PASS: i16 = 19; // index of the `pass` instruction below
    vec![
        insn(0x61, 2, 1, 0, 0),                         // 0: r2 = ctx->data
        insn(0x61, 3, 1, 4, 0),                         // 1: r3 = ctx->data_end
        insn(0xbf, 4, 2, 0, 0),                         // 2: r4 = r2
        insn(0x07, 4, 0, 0, ETH_HLEN),                  // 3: r4 += 14
        insn(0x2d, 4, 3, PASS - 5, 0),                  // 4: if r4 > r3 goto pass
        insn(0x69, 4, 2, 12, 0),                        // 5: r4 = *(u16 *)(r2 + 12)  (EtherType)
        insn(0x55, 4, 0, PASS - 7, ETH_P_IP_LE),        // 6: if r4 != IPv4 goto pass
        insn(0x62, 10, 0, -4, 0),                       // 7: *(u32 *)(r10 - 4) = 0   (key)
        insn(0xbf, 2, 10, 0, 0),                        // 8: r2 = r10
        insn(0x07, 2, 0, 0, -4),                        // 9: r2 += -4
        insn(0x18, 1, BPF_PSEUDO_MAP_FD, 0, map_fd),    // 10: r1 = map (ld_imm64, first half)
        insn(0x00, 0, 0, 0, 0),                         // 11:          (second half)
        insn(0x85, 0, 0, 0, BPF_FUNC_MAP_LOOKUP_ELEM),  // 12: r0 = lookup(r1, r2)
        insn(0x15, 0, 0, 3, 0),                         // 13: if r0 == 0 goto 17
        insn(0x79, 1, 0, 0, 0),                         // 14: r1 = *(u64 *)(r0 + 0)
        insn(0x07, 1, 0, 0, 1),                         // 15: r1 += 1
        insn(0x7b, 0, 1, 0, 0),                         // 16: *(u64 *)(r0 + 0) = r1  (per CPU: no atomics)
        insn(0xb7, 0, 0, 0, XDP_DROP),                  // 17: r0 = XDP_DROP
        insn(0x95, 0, 0, 0, 0),                         // 18: exit
        insn(0xb7, 0, 0, 0, XDP_PASS),                  // 19: pass: r0 = XDP_PASS
        insn(0x95, 0, 0, 0, 0),                         // 20: exit
    ]
}

fn bpf(cmd: libc::c_long, attr: &mut [u64]) -> io::Result<i32> {
    // SAFETY: attr is a zero-padded bpf_attr the size the kernel is told.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), std::mem::size_of_val(attr)) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as i32)
    }
}

/// bpf_attr is a union of structs of u32 and u64 fields; these write one.
fn put_u32(attr: &mut [u64], at: usize, v: u32) {
    let word = &mut attr[at / 8];
    let shift = (at % 8) * 8;
    *word = (*word & !(0xffff_ffffu64 << shift)) | ((v as u64) << shift);
}

/// One more than the highest possible CPU's number: at least the number of
/// values a per-CPU map's lookup writes (one per possible CPU), so the
/// buffer it writes into is never too small. None if the list is unreadable.
fn possible_cpus() -> Option<usize> {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/possible").ok()?;
    // "0-1", "0,2-3": the last number is the highest.
    let last = s.trim().rsplit([',', '-']).next()?;
    last.parse::<usize>().ok().map(|n| n + 1)
}

/// The attached sink; detached when dropped.
pub struct XdpSink {
    map: OwnedFd,
    _prog: OwnedFd,
    _link: OwnedFd,
    cpus: usize,
}

impl XdpSink {
    pub fn attach(ifindex: u32, mode: XdpMode) -> Result<XdpSink, SinkError> {
        let fail = |what, err| SinkError { what, err, log: String::new() };
        // Map: per-CPU array of one u64.
        let mut attr = [0u64; 16];
        put_u32(&mut attr, 0, BPF_MAP_TYPE_PERCPU_ARRAY);
        put_u32(&mut attr, 4, 4); // key size
        put_u32(&mut attr, 8, 8); // value size
        put_u32(&mut attr, 12, 1); // entries
        let map = bpf(BPF_MAP_CREATE, &mut attr).map_err(|e| fail("creating the counter map (root? CONFIG_BPF_SYSCALL?)", e))?;
        // SAFETY: a new descriptor the kernel handed us.
        let map = unsafe { OwnedFd::from_raw_fd(map) };

        let insns = program(map.as_raw_fd());
        let license = b"GPL\0";
        let mut log = vec![0u8; 64 * 1024];
        let mut attr = [0u64; 16];
        put_u32(&mut attr, 0, BPF_PROG_TYPE_XDP);
        put_u32(&mut attr, 4, insns.len() as u32);
        attr[1] = insns.as_ptr() as u64;
        attr[2] = license.as_ptr() as u64;
        put_u32(&mut attr, 24, 1); // log level
        put_u32(&mut attr, 28, log.len() as u32);
        attr[4] = log.as_mut_ptr() as u64;
        let prog = match bpf(BPF_PROG_LOAD, &mut attr) {
            Ok(fd) => fd,
            Err(err) => {
                let end = log.iter().position(|&b| b == 0).unwrap_or(0);
                return Err(SinkError { what: "loading the XDP program", err, log: String::from_utf8_lossy(&log[..end]).into_owned() });
            }
        };
        // SAFETY: as above.
        let prog = unsafe { OwnedFd::from_raw_fd(prog) };

        let mut attr = [0u64; 16];
        put_u32(&mut attr, 0, prog.as_raw_fd() as u32);
        put_u32(&mut attr, 4, ifindex);
        put_u32(&mut attr, 8, BPF_XDP);
        put_u32(&mut attr, 12, if mode == XdpMode::Driver { XDP_FLAGS_DRV_MODE } else { XDP_FLAGS_SKB_MODE });
        let link = bpf(BPF_LINK_CREATE, &mut attr).map_err(|e| fail("attaching the XDP program (another one on the interface?)", e))?;
        // SAFETY: as above.
        let link = unsafe { OwnedFd::from_raw_fd(link) };
        let cpus = possible_cpus().ok_or_else(|| fail("reading /sys/devices/system/cpu/possible", io::ErrorKind::NotFound.into()))?;
        Ok(XdpSink { map, _prog: prog, _link: link, cpus })
    }

    /// Frames counted (and dropped) so far.
    pub fn count(&self) -> io::Result<u64> {
        let key = 0u32;
        let mut vals = vec![0u64; self.cpus];
        let mut attr = [0u64; 16];
        put_u32(&mut attr, 0, self.map.as_raw_fd() as u32);
        attr[1] = &key as *const u32 as u64;
        attr[2] = vals.as_mut_ptr() as u64;
        bpf(BPF_MAP_LOOKUP_ELEM, &mut attr)?;
        Ok(vals.iter().sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hand-assembled jumps land where their comments say: both
    /// "goto pass" on the instruction returning XDP_PASS, the null check
    /// on the one returning XDP_DROP, and every path ends in exit.
    #[test]
    fn jumps_land_on_their_targets() {
        let prog = program(7);
        let target = |i: usize| (i as i64 + 1 + prog[i].off as i64) as usize;
        let is_ret = |i: usize, v: i32| prog[i].code == 0xb7 && prog[i].regs & 0x0f == 0 && prog[i].imm == v && prog[i + 1].code == 0x95;
        assert!(is_ret(target(4), XDP_PASS), "short frame: pass");
        assert!(is_ret(target(6), XDP_PASS), "not IPv4: pass");
        assert!(is_ret(target(13), XDP_DROP), "no counter: still drop");
        assert!(is_ret(17, XDP_DROP));
        assert_eq!(prog.last().map(|i| i.code), Some(0x95));
        // The map's descriptor rides in the ld_imm64's first half.
        assert_eq!((prog[10].code, prog[10].regs >> 4, prog[10].imm), (0x18, BPF_PSEUDO_MAP_FD, 7));
    }

    #[test]
    fn possible_cpus_bounds_the_list() {
        let n = possible_cpus().expect("/sys/devices/system/cpu/possible");
        assert!(n >= std::thread::available_parallelism().map_or(1, |p| p.get()));
    }

    #[test]
    fn attr_fields_are_written_in_place() {
        let mut attr = [0u64; 2];
        put_u32(&mut attr, 0, 6);
        put_u32(&mut attr, 4, 0xdead_beef);
        put_u32(&mut attr, 8, 37);
        assert_eq!(attr, [0xdead_beef_0000_0006, 37]);
        put_u32(&mut attr, 0, 1);
        assert_eq!(attr[0], 0xdead_beef_0000_0001);
    }
}
