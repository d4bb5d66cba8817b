//! The BPF DCTCP ("p4cc_dctcp", hosts/bpf/p4cc_dctcp.bpf.c): build,
//! register, unregister and report, through bpftool's struct_ops support.
//! The registration is kernel-wide (all network namespaces see it) and
//! stays until unregistered or reboot.

use crate::DatapathError;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const BPF_CC_NAME: &str = "p4cc_dctcp";
pub const OBJECT_NAME: &str = "p4cc_dctcp.bpf.o";
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
const BTF: &str = "/sys/kernel/btf/vmlinux";

/// Congestion controls the kernel offers right now.
pub fn available_ccs() -> Vec<String> {
    std::fs::read_to_string(AVAILABLE).map(|s| s.split_whitespace().map(String::from).collect()).unwrap_or_default()
}

pub fn is_registered() -> bool {
    available_ccs().iter().any(|c| c == BPF_CC_NAME)
}

fn which(prog: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend(["/usr/sbin", "/sbin", "/usr/local/sbin"].iter().map(PathBuf::from));
    dirs.into_iter().map(|d| d.join(prog)).find(|p| p.is_file())
}

/// Directories that may hold hosts/bpf (source + Makefile).
fn bpf_dirs() -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Ok(d) = std::env::var("P4CC_BPF_DIR") {
        v.push(PathBuf::from(d));
    }
    if let Ok(exe) = std::env::current_exe() {
        // hosts/target/{release,debug}/p4cc-host -> hosts/bpf
        if let Some(hosts) = exe.parent().and_then(Path::parent).and_then(Path::parent) {
            v.push(hosts.join("bpf"));
        }
    }
    v.push(PathBuf::from("hosts/bpf"));
    v.push(PathBuf::from("bpf"));
    v.push(PathBuf::from("."));
    v
}

/// The compiled object: $P4CC_BPF_OBJ, else <bpf dir>/build/p4cc_dctcp.bpf.o.
pub fn find_object() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("P4CC_BPF_OBJ") {
        return Some(PathBuf::from(p));
    }
    bpf_dirs().into_iter().map(|d| d.join("build").join(OBJECT_NAME)).find(|p| p.is_file())
}

fn source_dir() -> Option<PathBuf> {
    bpf_dirs().into_iter().find(|d| d.join("p4cc_dctcp.bpf.c").is_file() && d.join("Makefile").is_file())
}

/// The BTF type the kernel defines when TCP congestion controls can be
/// struct_ops (CONFIG_BPF_JIT + CONFIG_BPF_SYSCALL + struct_ops support).
const STRUCT_OPS_TCP_TYPE: &[u8] = b"bpf_struct_ops_tcp_congestion_ops";

/// Prerequisites, each failure naming the one missing piece: root, kernel
/// BTF, struct_ops for TCP congestion control, bpftool.
pub fn check_prereqs() -> Result<PathBuf, DatapathError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(DatapathError::Bpf(
            "registering the BPF DCTCP needs root (CAP_BPF and CAP_NET_ADMIN): run as root or with sudo".into(),
        ));
    }
    let btf = std::fs::read(BTF).map_err(|_| {
        DatapathError::Bpf(format!(
            "{BTF} is missing: this kernel was built without BTF (CONFIG_DEBUG_INFO_BTF), so a BPF TCP congestion control cannot be registered here; use cubic/reno or a kernel with BTF"
        ))
    })?;
    if !btf.windows(STRUCT_OPS_TCP_TYPE.len()).any(|w| w == STRUCT_OPS_TCP_TYPE) {
        return Err(DatapathError::Bpf(
            "this kernel has no BPF struct_ops for TCP congestion control (CONFIG_BPF_JIT and struct_ops support), so the BPF DCTCP cannot be registered; use cubic/reno or a kernel with a dctcp module".into(),
        ));
    }
    which("bpftool").ok_or_else(|| DatapathError::Bpf("bpftool not found (apt-get install bpftool)".into()))
}

/// Compiles the object with `make -C <hosts/bpf>` (clang, libbpf-dev, bpftool).
pub fn build() -> Result<PathBuf, DatapathError> {
    let dir = source_dir().ok_or_else(|| {
        DatapathError::Bpf("cannot find hosts/bpf (set P4CC_BPF_DIR or P4CC_BPF_OBJ)".into())
    })?;
    let out = Command::new("make")
        .arg("-C")
        .arg(&dir)
        .output()
        .map_err(|e| DatapathError::Bpf(format!("cannot run make: {e}")))?;
    if !out.status.success() {
        return Err(DatapathError::Bpf(format!(
            "building the BPF DCTCP failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(dir.join("build").join(OBJECT_NAME))
}

/// Serialises registration across processes: runs started at the same
/// moment (parallel tests, two users) would otherwise both see "not
/// registered", both build the object and both call bpftool, and the
/// loser fails on the name the winner just took.
const LOCK_PATH: &str = "/run/lock/p4cc-bpf-dctcp.lock";

/// An exclusive `flock` held until dropped (the kernel releases it if the
/// process dies, so a killed run never leaves the lock behind).
struct RegistrationLock(std::fs::File);

impl RegistrationLock {
    fn acquire() -> Result<Self, DatapathError> {
        use std::os::fd::AsRawFd;
        let path = Path::new(LOCK_PATH);
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(false)
            .open(path)
            .map_err(|e| DatapathError::Bpf(format!("cannot open the registration lock {LOCK_PATH}: {e}")))?;
        loop {
            // SAFETY: flock on a file descriptor this struct owns.
            if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } == 0 {
                return Ok(RegistrationLock(f));
            }
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(DatapathError::Bpf(format!("cannot lock {LOCK_PATH}: {err}")));
            }
        }
    }
}

impl Drop for RegistrationLock {
    fn drop(&mut self) {
        use std::os::fd::AsRawFd;
        // SAFETY: unlocking the descriptor this struct owns.
        unsafe { libc::flock(self.0.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// Registers p4cc_dctcp (building it first if needed). Idempotent, and
/// safe when several processes call it at once: one registers, the others
/// wait for it and then find it registered.
pub fn load(obj: Option<PathBuf>) -> Result<String, DatapathError> {
    let bpftool = check_prereqs()?;
    if is_registered() {
        return Ok(format!("{BPF_CC_NAME} already registered"));
    }
    let _lock = RegistrationLock::acquire()?;
    if is_registered() {
        return Ok(format!("{BPF_CC_NAME} registered by another process"));
    }
    let obj = match obj.or_else(find_object) {
        Some(o) => o,
        None => build()?,
    };
    if !obj.is_file() {
        return Err(DatapathError::Bpf(format!("{} does not exist (run `make -C hosts/bpf`)", obj.display())));
    }
    let out = Command::new(&bpftool)
        .args(["struct_ops", "register"])
        .arg(&obj)
        .output()
        .map_err(|e| DatapathError::Bpf(format!("cannot run bpftool: {e}")))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() || !is_registered() {
        return Err(DatapathError::Bpf(format!(
            "bpftool struct_ops register {} failed (the kernel needs CONFIG_BPF_JIT, BPF struct_ops and tcp_congestion_ops support; run as root):\n{}",
            obj.display(),
            text.trim()
        )));
    }
    Ok(format!("{BPF_CC_NAME} registered from {}", obj.display()))
}

pub fn unload() -> Result<String, DatapathError> {
    let bpftool = check_prereqs()?;
    let _lock = RegistrationLock::acquire()?;
    if !is_registered() {
        return Ok(format!("{BPF_CC_NAME} is not registered"));
    }
    let out = Command::new(&bpftool)
        .args(["struct_ops", "unregister", "name", BPF_CC_NAME])
        .output()
        .map_err(|e| DatapathError::Bpf(format!("cannot run bpftool: {e}")))?;
    if !out.status.success() {
        return Err(DatapathError::Bpf(format!(
            "bpftool struct_ops unregister failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    // sockets still using it keep it alive until they close
    Ok(if is_registered() {
        format!("{BPF_CC_NAME} unregistered (still listed while sockets use it)")
    } else {
        format!("{BPF_CC_NAME} unregistered")
    })
}

/// Human-readable status (several lines).
pub fn status() -> String {
    let mut s = String::new();
    s.push_str(&format!("kernel BTF ({BTF}): {}\n", if Path::new(BTF).exists() { "yes" } else { "NO (BPF congestion control impossible)" }));
    s.push_str(&format!("bpftool: {}\n", which("bpftool").map_or("not found".into(), |p| p.display().to_string())));
    s.push_str(&format!("object: {}\n", find_object().map_or("not built (make -C hosts/bpf)".into(), |p| p.display().to_string())));
    s.push_str(&format!("{BPF_CC_NAME} registered: {}\n", if is_registered() { "yes" } else { "no" }));
    s.push_str(&format!("net.ipv4.tcp_available_congestion_control = {}\n", available_ccs().join(" ")));
    s
}
