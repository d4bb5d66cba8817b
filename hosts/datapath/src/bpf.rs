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

/// Prerequisites: kernel BTF and bpftool.
pub fn check_prereqs() -> Result<PathBuf, DatapathError> {
    if !Path::new(BTF).exists() {
        return Err(DatapathError::Bpf(format!(
            "{BTF} is missing: this kernel was built without BTF (CONFIG_DEBUG_INFO_BTF), so a BPF TCP congestion control cannot be registered here; use cubic/reno or a kernel with BTF"
        )));
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

/// Registers p4cc_dctcp (building it first if needed). Idempotent.
pub fn load(obj: Option<PathBuf>) -> Result<String, DatapathError> {
    let bpftool = check_prereqs()?;
    if is_registered() {
        return Ok(format!("{BPF_CC_NAME} already registered"));
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
