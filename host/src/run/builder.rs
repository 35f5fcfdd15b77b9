//! [`RunnerBuilder`]: a runner's limits, pool, cache and base engine
//! configuration, and the engines made from them.

use std::marker::PhantomData;

use wasmtime::{Config, Engine};

use super::Runner;
use crate::limits::{Limits, check};
use crate::load::GuestCache;
use crate::pool::Pool;

impl Runner<()> {
    /// A runner's builder: no limits, no pool, no cache, stores holding
    /// no data of the embedder's.
    ///
    /// ```
    /// use std::time::Duration;
    /// use packfs_host::{Limits, Runner};
    ///
    /// let limits = Limits { max_memory: Some(64 << 20), timeout: Some(Duration::from_secs(5)) };
    /// let runner = Runner::builder().limits(limits).build()?;
    /// # Ok::<(), wasmtime::Error>(())
    /// ```
    pub fn builder() -> RunnerBuilder {
        RunnerBuilder { config: Config::new(), limits: Limits::default(), pool: None, cache: None, data: PhantomData }
    }
}

/// Makes a [`Runner`] ([`Runner::builder`]). The runner owns its engines,
/// each configured for what its guests and limits need: p1 modules and 0.2
/// components share one without the component model's concurrency (which
/// would make every host call of a component a host task, about a sixth
/// of a small-file read); WASI 0.3 components get one with it (its linker
/// made at the first such guest); a timeout gives both epoch interruption, whose
/// checks at every function entry and loop back-edge make compiling up to
/// 1.4x slower (`bench/load-results.md`).
pub struct RunnerBuilder<T = ()> {
    config: Config,
    limits: Limits,
    pool: Option<Pool>,
    cache: Option<GuestCache>,
    data: PhantomData<fn() -> T>,
}

impl<T: Send + 'static> RunnerBuilder<T> {
    /// Bounds every run's memory and time.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Allocates p1 modules' and 0.2 components' sandboxes from `pool`,
    /// with copy-on-write memory images
    /// ([Many sandboxes](Runner#many-sandboxes)); each memory slot holds
    /// [`Limits::max_memory`]. Making the runner fails when the pool's
    /// address space cannot be reserved.
    pub fn pool(mut self, pool: Pool) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Caches compiled guests in `cache`.
    pub fn cache(mut self, cache: GuestCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The configuration the runner's engines start from (wasmtime's
    /// defaults otherwise): the runner sets on it the component model's
    /// concurrency, epoch interruption and the pool, as its guests and
    /// limits need. One that consumes fuel is refused, as is one whose
    /// memories cannot grow to [`Limits::max_memory`] (a smaller
    /// `memory_reservation` with `memory_may_move(false)`): the error holds
    /// an [`Unenforceable`](crate::Unenforceable).
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Runs whose stores hold the embedder's data `U`
    /// ([`Sandbox::with_data`](crate::Sandbox::with_data)), which the host
    /// functions it links reach ([`P1State::data`](crate::p1::P1State::data),
    /// [`GuestState::data`](crate::p2::GuestState::data)).
    ///
    /// ```
    /// use packfs_host::{Runner, p1::P1State, wasmtime::Caller};
    ///
    /// struct Plugin { calls: u32 }
    /// let mut runner = Runner::builder().data::<Plugin>().build()?;
    /// runner.module_linker_mut().func_wrap("host", "count", |mut c: Caller<'_, P1State<Plugin>>| {
    ///     c.data_mut().data.calls += 1;
    /// })?;
    /// # Ok::<(), wasmtime::Error>(())
    /// ```
    pub fn data<U: Send + 'static>(self) -> RunnerBuilder<U> {
        let RunnerBuilder { config, limits, pool, cache, data: _ } = self;
        RunnerBuilder { config, limits, pool, cache, data: PhantomData }
    }

    /// The runner, with its engines made and preview1 linked. Fails when an
    /// engine cannot be made (a pool's reservation refused) or cannot hold
    /// the limits ([`Unenforceable`](crate::Unenforceable) in the error).
    pub fn build(self) -> wasmtime::Result<Runner<T>> {
        let mut config = self.config.clone();
        config.concurrency_support(false);
        // What needs that concurrency is the 0.3 engine's (a base
        // configuration for 0.3 guests turns it on): off here, or wasmtime
        // refuses the engine.
        #[cfg(feature = "p3")]
        config
            .wasm_component_model_async(false)
            .wasm_component_model_async_stackful(false)
            .wasm_component_model_threading(false)
            .wasm_component_model_more_async_builtins(false)
            .wasm_component_model_error_context(false);
        config.epoch_interruption(self.limits.timeout.is_some());
        if let Some(pool) = &self.pool {
            pool.apply(&mut config, self.limits.max_memory);
        }
        let engine = Engine::new(&config)?;
        check(&engine, &self.limits).map_err(wasmtime::Error::new)?;
        let mut p1 = wasmtime::Linker::new(&engine);
        // Only a name defined twice fails, and a new linker has none.
        crate::p1::add_to_linker(&mut p1, |s: &mut crate::p1::P1State<T>| &mut s.wasi)
            .expect("preview1 links into an empty linker");
        #[cfg(feature = "p3")]
        let p3 = {
            // Never pooled (its calls run on fibers a pool reserves no
            // stacks for); a pooled runner refuses its guests, which would
            // escape the pool's counts (Runner::prepare).
            let mut config = self.config;
            config.concurrency_support(true);
            config.epoch_interruption(self.limits.timeout.is_some());
            // Whatever the base configuration says: a pool reserves its
            // slots when the engine is made.
            config.allocation_strategy(wasmtime::InstanceAllocationStrategy::OnDemand);
            if self.pool.is_some() {
                crate::pool::reserve(&mut config, self.limits.max_memory);
            }
            let engine = Engine::new(&config)?;
            check(&engine, &self.limits).map_err(wasmtime::Error::new)?;
            super::concurrent::Concurrent::new(engine)
        };
        Ok(Runner {
            engine,
            p1,
            #[cfg(feature = "p2")]
            linker: std::sync::OnceLock::new(),
            #[cfg(feature = "p3")]
            p3,
            cache: self.cache,
            limits: self.limits,
            pooled: self.pool.is_some(),
        })
    }
}
