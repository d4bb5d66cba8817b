//! The p4cc user-space reliable transport over UDP.
//!
//! Everything here is socket-free and clock-free: the datapath (crate
//! `datapath`) owns the sockets and the clock and drives these state
//! machines with bytes and nanosecond timestamps, so loss recovery,
//! reordering and byte-exact delivery are tested by simulation.
//!
//! * [`wire`]: data/ACK/abort packet codecs (after the telemetry shim).
//! * [`payload`]: the seeded payload generator both ends agree on.
//! * [`sender`]: one flow's sender: scoreboard, SACK/RACK loss detection,
//!   RTO with backoff, pacing, congestion-control hooks.
//! * [`receiver`]: all flows of a receiver: reassembly, verification, ACKs
//!   with SACK blocks, ECN and telemetry echo.
//! * [`pacing`]: statistics of achieved vs target inter-packet gaps.

pub mod pacing;
pub mod payload;
pub mod rangeset;
pub mod receiver;
pub mod sender;
pub mod wire;

pub use receiver::{Receiver, ReceiverConfig, ReceiverStats, RecvFlowRecord, RecvStatus};
pub use sender::{FailReason, FlowSender, FlowSize, FlowState, SenderConfig, ShimChoice, Transmit};
