//! A p4cc switch without its I/O: the packet path ([`core`]) on the
//! caller's clock, the state it shares with the control plane ([`shared`])
//! and the HTTP admin API over that state ([`admin`]). The embedded target
//! drives it from sockets in real time ([`socket_loop`]), the simulator in
//! virtual time. [`link`] is the same egress link model without a pipeline:
//! the link emulator that gives bmv2's ports a delay and a loss.
pub mod admin;
pub mod core;
pub mod link;
pub mod process;
pub mod shared;
pub mod socket_loop;

pub use crate::core::SwitchCore;
pub use crate::link::{LinkCore, WireError};
pub use crate::socket_loop::{Datapath, SocketLoop};
pub use crate::shared::{PortShared, Shared};
