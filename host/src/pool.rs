//! The pooling allocator for hosts that start many sandboxes of one
//! module: [`Pool`] says how many may be alive at once, and
//! [`RunnerBuilder::pool`](crate::RunnerBuilder::pool) makes the runner's
//! engine allocate from it.
//!
//! wasmtime's pooling allocator reserves every slot's address space when
//! the engine is made, and reuses slots from then on: an instantiation
//! maps no memory, and with copy-on-write memory images its data segments
//! are mapped from the module rather than copied in.

use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig};

/// A wasm page: a memory's size, and so a slot, is a multiple of it.
const WASM_PAGE: usize = 64 << 10;

/// wasmtime's default reservation for a linear memory on a 64-bit host,
/// where compiled code needs no bounds checks for a 32-bit memory.
const DEFAULT_RESERVATION: u64 = 4 << 30;

/// Core instances one sandbox may hold at once: a p1 module is one, a
/// component is several (its modules and their shims). The pool only
/// counts these, it reserves nothing for them.
const CORE_INSTANCES_PER_SANDBOX: u32 = 16;

/// Tables one sandbox may hold at once: a module's function table, and a
/// component's shim tables.
const TABLES_PER_SANDBOX: u32 = 4;

/// How many sandboxes a pooled engine holds at once, and what each may
/// hold. A sandbox is a store with its guest instantiated; its slot is
/// free again when the store is dropped.
///
/// A guest's linear memory is bounded by [`Limits::max_memory`], not
/// here: a memory slot lets it grow to that (rounded up to a 64 KiB page),
/// or to 4 GiB without a limit. What a slot reserves is wasmtime's
/// reservation either way (`Config::memory_reservation`, 4 GiB, or the
/// limit if larger) and a guard.
///
/// [`Limits::max_memory`]: crate::Limits::max_memory
#[derive(Debug, Clone, Copy)]
pub struct Pool {
    /// Most sandboxes alive at once (1,000). One more fails to instantiate
    /// ([`RunError::Instantiate`](crate::RunError::Instantiate): "maximum
    /// concurrent limit of N for memories reached", or for component
    /// instances).
    pub instances: u32,
    /// Most linear memories one sandbox holds (1): a p1 module or a
    /// `wasm32-wasip2` component has one; a component of several modules
    /// that each define one has more. Each is a slot of reserved address
    /// space.
    pub memories_per_instance: u32,
    /// Most elements of a table (20,000, wasmtime's default): an
    /// interpreter's function table can be larger. A table cannot grow
    /// past it.
    pub table_elements: usize,
    /// Bytes of each memory and table kept mapped when its slot is freed
    /// (0), and zeroed with `memset` rather than given back to the kernel:
    /// fewer page faults for the next sandbox in the slot, more resident
    /// memory between runs.
    pub keep_resident: usize,
}

impl Default for Pool {
    fn default() -> Self {
        Pool { instances: 1000, memories_per_instance: 1, table_elements: 20_000, keep_resident: 0 }
    }
}

impl Pool {
    /// Makes `config` allocate from this pool, with memory slots of
    /// `max_memory` bytes (wasmtime's default without one), and
    /// copy-on-write memory images.
    pub(crate) fn apply(&self, config: &mut Config, max_memory: Option<usize>) {
        let mut pooling = PoolingAllocationConfig::new();
        let memories = self.instances.saturating_mul(self.memories_per_instance);
        pooling
            .total_component_instances(self.instances)
            .total_core_instances(self.instances.saturating_mul(CORE_INSTANCES_PER_SANDBOX))
            .total_memories(memories)
            .max_memories_per_module(self.memories_per_instance)
            .total_tables(self.instances.saturating_mul(TABLES_PER_SANDBOX))
            .table_elements(self.table_elements)
            .linear_memory_keep_resident(self.keep_resident)
            .table_keep_resident(self.keep_resident)
            // A Runner calls guests synchronously: no fiber stacks, which
            // would each be 2 MiB of writable memory mapped up front.
            .total_stacks(0);
        if let Some(slot) = slot(max_memory) {
            // The slot holds at least the limit, so the store's limiter
            // refuses a growth (`RunError::MemoryLimit`) before the pool
            // would (a plain failed `memory.grow`).
            pooling.max_memory_size(slot);
        }
        reserve(config, max_memory);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
        config.memory_init_cow(true);
    }
}

/// A memory slot holding `max_memory`, in whole wasm pages.
fn slot(max_memory: Option<usize>) -> Option<usize> {
    max_memory.map(|max| max.div_ceil(WASM_PAGE).saturating_mul(WASM_PAGE).max(WASM_PAGE))
}

/// Reserves at least a slot of `max_memory` per memory where that is more
/// than wasmtime's default: a pooled engine's slots, and the 0.3 engine
/// beside it, then let a memory grow to the limit.
pub(crate) fn reserve(config: &mut Config, max_memory: Option<usize>) {
    if let Some(slot) = slot(max_memory)
        && slot as u64 > DEFAULT_RESERVATION
    {
        config.memory_reservation(slot as u64);
    }
}
