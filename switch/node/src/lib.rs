//! A p4cc switch without its I/O: the packet path ([`core`]) on the
//! caller's clock, the state it shares with the control plane ([`shared`])
//! and the HTTP admin API over that state ([`admin`]). The embedded target
//! drives it from sockets in real time, the simulator in virtual time.
pub mod admin;
pub mod core;
pub mod shared;

pub use crate::core::SwitchCore;
pub use crate::shared::{PortShared, Shared};
