//! Datapaths that carry the traffic of a workload:
//!
//! * [`udp`]: the user-space transport (crate `transport`) on UDP sockets,
//!   with ECN via IP_TOS / IP_RECVTOS, batched I/O and precise pacing.
//! * [`tcp`]: kernel TCP with the congestion control chosen per socket
//!   (TCP_CONGESTION), sampled through TCP_INFO.
//! * [`bpf`]: registering the project's BPF DCTCP (struct_ops) with the
//!   kernel through bpftool.
//! * [`sys`]: the socket syscalls; [`clock`]: run clock and unix time.
//! * [`nic`]: a NIC arbitrating a host's flows at its link rate.

pub mod bpf;
pub mod nic;
pub mod stack;
pub mod clock;
pub mod sys;
pub mod tcp;
pub mod udp;

use cc::CongestionControl;
use std::net::SocketAddr;
use std::path::PathBuf;
use traffic::FlowSpec;

/// Builds the congestion controller of a flow (user-space datapath).
pub type CcFactory = dyn Fn(&FlowSpec) -> Result<Box<dyn CongestionControl>, String> + Sync;

#[derive(Debug, thiserror::Error)]
pub enum DatapathError {
    #[error("cannot bind {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("socket error: {0}")]
    Socket(std::io::Error),
    #[error("cannot write {path}: {source}")]
    Output { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Log(#[from] traffic::log::LogError),
    #[error("{0}")]
    KernelCc(String),
    #[error("{0}")]
    Bpf(String),
}
