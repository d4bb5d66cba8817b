//! Traffic generators and flow logs.
//!
//! * [`rng`]: a seeded PRNG and the distributions (exponential, Pareto).
//! * [`cdf`]: empirical flow-size tables (web search, FB_Hadoop, Alibaba
//!   storage) sampled by inverse transform with linear interpolation.
//! * [`workload`]: what flows to start when: long flows with a start/stop
//!   schedule, synchronized incast rounds, open-loop Poisson arrivals with
//!   Pareto, fixed or empirical sizes at a target load, a Poisson process
//!   of incast events over a group of hosts (the incast mix),
//!   closed-loop N-concurrent flows.
//! * [`log`]: the per-flow output files an experiment runner reads.
//!
//! Times inside workloads are nanoseconds since the start of the run (the
//! datapath's monotonic clock); logs convert them to unix-epoch ns.

// NaN-safe range checks are written `!(x > 0.0)` on purpose.
#![allow(clippy::neg_cmp_op_on_partial_ord)]

pub mod cdf;
pub mod log;
pub mod rng;
pub mod workload;

pub use workload::{FlowSpec, Workload};
