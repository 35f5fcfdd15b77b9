//! What a run is bounded by ([`Limits`]), how it fails ([`RunError`]), what
//! an engine must have for the bounds to hold ([`Unenforceable`]), and the
//! store limiter that enforces the memory bound.

use std::time::Duration;

use wasmtime::{Engine, ResourceLimiter};

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

/// The longest [`Limits::timeout`]: u32::MAX seconds (136 years), so that
/// a deadline set from any run's start is one the clock can count to.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(u32::MAX as u64);

/// What a sandbox bounds: the guest's memory and its time.
///
/// Each needs something of the runner's engines, which the runner makes
/// with it ([`RunnerBuilder::limits`](crate::RunnerBuilder::limits)); a
/// base configuration that cannot hold them is refused when the runner is
/// made ([`Unenforceable`]), rather than run guests unbounded.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// Most bytes of linear memory (each memory) and table growth; a
    /// guest growing past it traps with [`RunError::MemoryLimit`]. Under
    /// a pool ([`RunnerBuilder::pool`](crate::RunnerBuilder::pool)) it is
    /// also each memory slot's size. The engine must let a memory grow
    /// that far: not a smaller reservation that memories may not move out
    /// of ([`Unenforceable::MemoryPastEngine`]).
    pub max_memory: Option<usize>,
    /// Most wall-clock time a run takes; past it the guest is interrupted
    /// ([`RunError::Timeout`]). The runner's engines then have epoch
    /// interruption, whose compiled code checks the epoch at every
    /// function entry and loop back-edge: compiling is slower (up to 1.4x,
    /// `bench/load-results.md`) and so is the guest, a little.
    ///
    /// A p1 module blocked in a host call stops at the deadline too: every
    /// wait of PackFS's preview1 (a sleep, stdin, stdout, a remote pack's
    /// fetch) ends there, and the call traps. A component's calls into
    /// wasmtime-wasi's own clocks and stdio know no deadline: one blocked
    /// there is interrupted when it returns to its own code, and the
    /// embedder bounds the wait (`packfs run` ends the process).
    pub timeout: Option<Duration>,
}

/// A limit, or an engine setting, that a runner cannot honour: refused
/// when the runner is made, never accepted and then left undone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unenforceable {
    /// [`Limits::max_memory`] past what the engine lets one linear memory
    /// grow to: a base configuration's reservation that memories may not
    /// move out of (`Config::memory_may_move(false)`). A guest would see
    /// `memory.grow` fail below the limit, not [`RunError::MemoryLimit`]
    /// at it.
    #[error(
        "a memory limit of {limit} bytes is past the {bound} bytes this engine lets a memory grow to: \
         let memories move, or reserve as much"
    )]
    MemoryPastEngine {
        /// The limit asked for.
        limit: usize,
        /// How far the engine lets a memory grow.
        bound: usize,
    },
    /// [`Limits::timeout`] past [`MAX_TIMEOUT`]: a deadline that far
    /// from a run's start may be past what the clock can count to.
    #[error("a time limit of {0:?} is past the longest one a run is given, u32::MAX seconds (136 years)")]
    TimeoutTooLong(Duration),
    /// A base configuration that consumes fuel: a runner gives its stores
    /// none, so every guest would trap at its first instruction.
    #[error("the engine consumes fuel, of which a runner gives its guests none: bound their time with Limits::timeout")]
    Fuel,
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
    /// The sandbox's preopens could not be opened; the guest did not start.
    #[error("setting up the guest's preopens: {0}")]
    Sandbox(packfs_core::Error),
}

/// Whether a runner's `engine` can run guests under `limits`: not one that
/// consumes fuel, a timeout of at most [`MAX_TIMEOUT`], and an engine that
/// lets a memory grow as far as the limit.
/// (The builder gives an engine epoch interruption whenever there is a
/// timeout.)
pub(crate) fn check(engine: &Engine, limits: &Limits) -> Result<(), Unenforceable> {
    if engine.get_consume_fuel() {
        return Err(Unenforceable::Fuel);
    }
    if let Some(timeout) = limits.timeout
        && timeout > MAX_TIMEOUT
    {
        return Err(Unenforceable::TimeoutTooLong(timeout));
    }
    if let (Some(limit), Some(bound)) = (limits.max_memory, memory_bound(engine))
        && limit > bound
    {
        return Err(Unenforceable::MemoryPastEngine { limit, bound });
    }
    Ok(())
}

/// How far `engine` lets one linear memory grow, where it bounds that: a
/// pool's memory slots, or a reservation that memories may not move out
/// of. `None` where a memory may grow as far as its type allows.
fn memory_bound(engine: &Engine) -> Option<usize> {
    if let Some(pool) = engine.get_pooling_config() {
        return Some(pool.get_max_memory_size());
    }
    if !engine.get_memory_may_move() {
        return Some(usize::try_from(engine.get_memory_reservation()).unwrap_or(usize::MAX));
    }
    None
}
