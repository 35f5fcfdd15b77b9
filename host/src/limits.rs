//! What a run is bounded by ([`Limits`]), how it fails ([`RunError`]), and
//! the store limiter that enforces the memory bound.

use std::time::Duration;

use wasmtime::ResourceLimiter;

/// Refuses growth past [`Limits::max_memory`] with [`MemoryLimitHit`].
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    pub(crate) max: Option<usize>,
}

/// The error a refused memory or table growth traps with.
#[derive(Debug, thiserror::Error)]
#[error("the guest grew past its memory limit")]
pub(crate) struct MemoryLimitHit;

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        match self.max {
            Some(max) if desired > max => Err(wasmtime::Error::new(MemoryLimitHit)),
            _ => Ok(true),
        }
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        // A table's elements are host memory too (a pointer or more each).
        match self.max {
            Some(max) if desired.saturating_mul(8) > max => Err(wasmtime::Error::new(MemoryLimitHit)),
            _ => Ok(true),
        }
    }
}

/// What a sandbox bounds: the guest's memory and its time.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// Most bytes of linear memory (each memory) and table growth; a
    /// guest growing past it traps with [`RunError::MemoryLimit`]. Under
    /// a pool (`Runner::pooled`) it is also each memory slot's size.
    pub max_memory: Option<usize>,
    /// Most wall-clock time a run takes; past it the guest is interrupted
    /// ([`RunError::Timeout`]). Needs an engine with epoch interruption
    /// (`Runner::config_for`), whose compiled code checks the epoch at
    /// every function entry and loop back-edge: compiling is slower (up to
    /// 1.4x, `bench/load-results.md`) and so is the guest, a little.
    ///
    /// A p1 module blocked in a host call stops at the deadline too: every
    /// wait of PackFS's preview1 (a sleep, stdin, stdout, a remote pack's
    /// fetch) ends there, and the call traps. A component's calls into
    /// wasmtime-wasi's own clocks and stdio know no deadline: one blocked
    /// there is interrupted when it returns to its own code, and the
    /// embedder bounds the wait (`packfs run` ends the process).
    pub timeout: Option<Duration>,
}

/// Why a run ended without an exit status.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The guest tried to grow its memory past [`Limits::max_memory`].
    #[error("the guest exceeded its memory limit of {0} bytes")]
    MemoryLimit(usize),
    /// The run took longer than [`Limits::timeout`].
    #[error("the guest ran longer than its time limit of {0:?}")]
    Timeout(Duration),
    /// The guest cannot run here: an import nothing defines, no `_start`
    /// or `wasi:cli/run`, an instantiation that failed.
    #[error("cannot run it here: {0:#}")]
    Instantiate(wasmtime::Error),
    /// The guest trapped.
    #[error("the guest trapped: {0:?}")]
    Trap(wasmtime::Error),
}
