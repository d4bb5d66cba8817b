//! p4cc telemetry codecs.
//!
//! * [`shim`]: the in-band telemetry shim that the P4 program inserts hop
//!   records into (UDP destination port [`shim::DATA_PORT`]): version 1,
//!   or version 2 with the INT records of HPCC and PowerTCP.
//! * [`postcard`]: the out-of-band queue reports ("postcards") a switch
//!   clones to a collector, and [`collector`], which writes them to CSV.
//!
//! Both parsers take untrusted bytes and return errors, never panic.

pub mod be;
pub mod collector;
pub mod feed;
pub mod postcard;
pub mod shim;
pub mod units;

pub use postcard::{Postcard, PostcardError};
pub use shim::{HopRecord, IntHopRecord, Shim, ShimError};
pub use units::{DepthUnit, TimeUnit};
