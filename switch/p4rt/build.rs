//! Generates the P4Runtime gRPC code from a protobuf FileDescriptorSet.
//!
//! The set comes from the installed Python `p4runtime` package through
//! `../tools/p4runtime_fds.py` (python: env `P4CC_PYTHON`, default
//! `python3`), or from a prebuilt file named by env `P4CC_P4RUNTIME_FDS`.
//! No .proto file is copied into the repository and no protoc is needed.
use prost::Message;
use std::env;
use std::path::PathBuf;
use std::process::Command;

fn fail(msg: &str) -> ! {
    // A build script's panic message is what cargo shows: keep it one line.
    panic!("\n\np4cc-p4rt: {msg}\n");
}

fn main() {
    println!("cargo:rerun-if-env-changed=P4CC_PYTHON");
    println!("cargo:rerun-if-env-changed=P4CC_P4RUNTIME_FDS");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let script = manifest.join("../tools/p4runtime_fds.py");
    println!("cargo:rerun-if-changed={}", script.display());
    let out_dir = PathBuf::from(env::var("OUT_DIR").unwrap());

    let fds_path = match env::var_os("P4CC_P4RUNTIME_FDS") {
        Some(p) => {
            let p = PathBuf::from(p);
            println!("cargo:rerun-if-changed={}", p.display());
            p
        }
        None => {
            let python = env::var("P4CC_PYTHON").unwrap_or_else(|_| "python3".to_string());
            let out = out_dir.join("p4runtime.fds");
            let res = Command::new(&python).arg(&script).arg(&out).output();
            match res {
                Err(e) => fail(&format!(
                    "cannot run `{python}` ({e}) to read the P4Runtime protocol from the \
                     Python p4runtime package: run `make setup` or `pip install p4runtime`, \
                     or set P4CC_PYTHON / P4CC_P4RUNTIME_FDS"
                )),
                Ok(o) if !o.status.success() => {
                    let err = String::from_utf8_lossy(&o.stderr);
                    let line = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
                    fail(&format!(
                        "the P4Runtime protocol could not be read from Python ({python}): {line} \
                         -- run `make setup` or `pip install p4runtime` (or set P4CC_PYTHON to a \
                         python that has it, or P4CC_P4RUNTIME_FDS to a prebuilt descriptor set)"
                    ))
                }
                Ok(_) => out,
            }
        }
    };
    let bytes = std::fs::read(&fds_path).unwrap_or_else(|e| {
        fail(&format!("cannot read descriptor set {}: {e}", fds_path.display()))
    });
    let fds = prost_types::FileDescriptorSet::decode(bytes.as_slice()).unwrap_or_else(|e| {
        fail(&format!("{} is not a FileDescriptorSet: {e}", fds_path.display()))
    });
    for needed in ["p4/v1/p4runtime.proto", "p4/config/v1/p4info.proto", "google/rpc/status.proto"] {
        if !fds.file.iter().any(|f| f.name() == needed) {
            fail(&format!("descriptor set {} lacks {needed}", fds_path.display()));
        }
    }
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)
        .unwrap_or_else(|e| fail(&format!("code generation failed: {e}")));
}
