//! Shared pieces of the PackFS benchmarks and probes.

pub mod trees;
