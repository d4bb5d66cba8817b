//! p4cc switch ports: AF_PACKET sockets on Linux interfaces, and per-egress
//! port queues with bmv2's semantics plus a link model (line rate in bits/s
//! or packets/s, propagation delay, random loss).
pub mod config;
pub mod queue;
pub mod socket;

pub use config::{PortSettings, PortSpec, PortUpdate};
pub use queue::{DequeueMeta, EgressPort, PortStats, Rng, SlipStats};
pub use socket::{PacketSocket, SocketError};
