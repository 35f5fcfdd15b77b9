//! The engine configurations a [`Runner`]'s engine is made with: the
//! fastest for its guests, with what its limits need.

use super::Runner;
use crate::limits::Limits;
use crate::pool::Pool;

impl Runner<()> {
    /// The engine configuration `packfs run` uses: wasmtime's defaults
    /// without [`Config::concurrency_support`](wasmtime::Config::concurrency_support).
    ///
    /// A `Runner` drives guests synchronously and links WASI 0.2, which
    /// needs none of the component model's concurrent calls; with that
    /// support on, every host call of a component — each of a guest's file
    /// operations — also creates and deletes a host task, about a sixth of
    /// the time of a small-file read (`bench/guest-results.md`).
    ///
    /// ```
    /// let engine = wasmtime::Engine::new(&packfs_host::Runner::config())?;
    /// let runner = packfs_host::Runner::new(&engine)?;
    /// # Ok::<(), wasmtime::Error>(())
    /// ```
    pub fn config() -> wasmtime::Config {
        let mut config = wasmtime::Config::new();
        config.concurrency_support(false);
        config
    }

    /// The engine configuration that also runs WASI 0.3 components:
    /// [`Runner::config`] with the component model's concurrency, which
    /// its async needs. p1 modules and 0.2 components run on it too, a
    /// 0.2 component's file operations a little slower (see
    /// [`Runner::config`]). `packfs run` uses it only for a guest that
    /// speaks 0.3 ([`load::speaks_wasi_p3`](crate::load::speaks_wasi_p3)).
    ///
    /// ```
    /// let engine = wasmtime::Engine::new(&packfs_host::Runner::config_p3())?;
    /// let runner = packfs_host::Runner::new(&engine)?;
    /// # Ok::<(), wasmtime::Error>(())
    /// ```
    pub fn config_p3() -> wasmtime::Config {
        let mut config = wasmtime::Config::new();
        config.concurrency_support(true);
        config
    }

    /// [`Runner::config_p3`], with epoch interruption when `limits` has a
    /// timeout.
    pub fn config_p3_for(limits: &Limits) -> wasmtime::Config {
        let mut config = Self::config_p3();
        config.epoch_interruption(limits.timeout.is_some());
        config
    }

    /// [`Runner::config`], with epoch interruption when `limits` has a
    /// timeout.
    pub fn config_for(limits: &Limits) -> wasmtime::Config {
        let mut config = Self::config();
        config.epoch_interruption(limits.timeout.is_some());
        config
    }

    /// [`Runner::config_for`], allocating from `pool`, with copy-on-write
    /// memory images ([Many sandboxes](Runner#many-sandboxes)). Each memory
    /// slot holds `limits.max_memory`: give the runner the same limits
    /// ([`Runner::pooled`] does); a runner given a larger memory limit
    /// refuses to run ([`Unenforceable::MemoryPastEngine`](crate::Unenforceable::MemoryPastEngine)), since a guest
    /// would see `memory.grow` fail below it, not
    /// [`RunError::MemoryLimit`](crate::RunError::MemoryLimit) at it. To
    /// reserve less per slot, lower
    /// [`Config::memory_reservation`](wasmtime::Config::memory_reservation)
    /// on the result (not below the limit), at the price of bounds checks
    /// in compiled code and of artifacts that only such an engine loads.
    ///
    /// ```no_run
    /// use packfs_host::{Limits, Pool, Runner};
    ///
    /// let limits = Limits { max_memory: Some(256 << 20), ..Limits::default() };
    /// let engine = wasmtime::Engine::new(&Runner::config_pooled(&limits, &Pool::default()))?;
    /// let runner = Runner::new(&engine)?.with_limits(limits);
    /// # Ok::<(), wasmtime::Error>(())
    /// ```
    pub fn config_pooled(limits: &Limits, pool: &Pool) -> wasmtime::Config {
        let mut config = Self::config_for(limits);
        pool.apply(&mut config, limits.max_memory);
        config
    }
}
