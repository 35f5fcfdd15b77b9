//! What a run is bounded by ([`Limits`]), how it fails ([`RunError`]), what
//! an engine must have for the bounds to hold ([`Unenforceable`]), and the
//! store limiter that enforces the memory bound.

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
///
/// Each needs something of the runner's engine, which the `Runner::config*`
/// functions make given the same limits (`Runner::config_for`,
/// `config_p3_for`, `config_pooled`, or `Runner::pooled`): a runner whose
/// engine lacks it refuses every run before the guest starts
/// ([`RunError::Unenforceable`]; `Runner::check_limits` asks up front),
/// rather than run it unbounded.
#[derive(Debug, Clone, Copy, Default)]
pub struct Limits {
    /// Most bytes of linear memory (each memory) and table growth; a
    /// guest growing past it traps with [`RunError::MemoryLimit`]. Under
    /// a pool (`Runner::pooled`) it is also each memory slot's size. The
    /// engine must let a memory grow that far: not a pool of smaller
    /// slots, nor a smaller reservation that memories may not move out of
    /// ([`Unenforceable::MemoryPastEngine`]).
    pub max_memory: Option<usize>,
    /// Most wall-clock time a run takes; past it the guest is interrupted
    /// ([`RunError::Timeout`]). Needs an engine with epoch interruption
    /// (`Runner::config_for`; else [`Unenforceable::TimeoutWithoutEpochs`]),
    /// whose compiled code checks the epoch at every function entry and
    /// loop back-edge: compiling is slower (up to 1.4x,
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

/// A limit, or an engine setting, that a runner cannot honour: refused up
/// front, never accepted and then left undone (a time limit on an engine
/// whose code never looks at the time let a guest in a loop run on).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unenforceable {
    /// [`Limits::timeout`] on an engine without epoch interruption, whose
    /// compiled code never checks the time: a guest in a loop would run
    /// past it, for ever.
    #[error(
        "a time limit needs an engine with epoch interruption: make it with Runner::config_for \
         (or config_p3_for, config_pooled) given the same limits"
    )]
    TimeoutWithoutEpochs,
    /// [`Limits::max_memory`] past what the engine lets one linear memory
    /// grow to: its pool's memory slots (`Runner::config_pooled` given a
    /// smaller limit), or a reservation that memories may not move out of
    /// (`Config::memory_may_move(false)`). A guest would see `memory.grow`
    /// fail below the limit, not [`RunError::MemoryLimit`] at it.
    #[error(
        "a memory limit of {limit} bytes is past the {bound} bytes this engine lets a memory grow to: \
         make the engine with Runner::config_pooled (or config_for) given the same limits"
    )]
    MemoryPastEngine {
        /// The limit asked for.
        limit: usize,
        /// How far the engine lets a memory grow.
        bound: usize,
    },
    /// An engine that consumes fuel: a runner gives its stores none, so
    /// every guest would trap at its first instruction. `Runner::new`
    /// refuses such an engine; bound time with [`Limits::timeout`].
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
    /// The runner's limits need what its engine lacks; the guest did not
    /// start.
    #[error("cannot bound it here: {0}")]
    Unenforceable(Unenforceable),
    /// The sandbox's preopens could not be opened; the guest did not start.
    #[error("setting up the guest's preopens: {0}")]
    Sandbox(packfs_core::Error),
}
