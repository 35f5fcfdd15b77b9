//! Shared pieces of the PackFS benchmarks and probes.

pub mod lazy;
pub mod results;
pub mod trees;
