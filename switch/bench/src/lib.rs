//! Shared helpers for the p4cc benchmarks (see bench.sh).
