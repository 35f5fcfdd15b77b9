//! Load time: from a guest's bytes to its first instruction, for PackFS's
//! own preview1 (`packfs run`'s route: compile the core module, link
//! preview1, instantiate) against the adapter route it replaced (wrap the
//! module into a component with wasmtime's preview1 adapter, compile that,
//! link WASI 0.2, instantiate), cold (compiled afresh) and warm (from the
//! on-disk cache of compiled guests, `packfs_host::load::GuestCache`; the
//! adapter route's cache held the compiled component), for a small module
//! (`demo.wasm`, the README's guest) and a large one (a generated module of
//! ≥ 20 MB of code).
//!
//! ```sh
//! cargo bench -p packfs-bench --bench load
//! ```
//!
//! The clock stops as the guest's entry is called (`_start`, or the
//! component's `wasi:cli/run`): its first instruction is the next. Each
//! cold load uses a new engine, so nothing compiled survives between runs. `LOAD_RUNS` runs per
//! configuration (default 5, interleaved), medians; under `cargo test`, a
//! smoke run of the small module once.

use packfs_test_support as support;

use std::sync::Arc;
use std::time::Instant;

use packfs_core::MemFs;
use packfs_core::wasi::Access;
use packfs_core::wasi::p1::Wasi;
use packfs_host::load::{Guest, GuestCache};
use packfs_host::p1::HostPlatform;
use packfs_host::wasi::PackFsCtx;
use packfs_host::{GuestState, Runner};
use wasmtime::component::{Component, Linker as ComponentLinker};
use wasmtime::{Engine, Linker, Store};

/// A p1 command of about `size` bytes: `_start` calls `sched_yield` then
/// returns; `size` worth of other functions (arithmetic loops, never
/// called) make the module big, as an interpreter's code is.
fn generated(size: usize) -> Vec<u8> {
    use wasm_encoder::{
        BlockType, CodeSection, ExportKind, ExportSection, Function, FunctionSection, ImportSection, Instruction,
        MemorySection, MemoryType, Module as Encoded, TypeSection, ValType,
    };
    let mut types = TypeSection::new();
    types.ty().function([], [ValType::I32]); // sched_yield
    types.ty().function([], []); // _start
    types.ty().function([ValType::I32], [ValType::I32]); // filler
    let mut imports = ImportSection::new();
    imports.import("wasi_snapshot_preview1", "sched_yield", wasm_encoder::EntityType::Function(0));
    let mut memory = MemorySection::new();
    memory.memory(MemoryType { minimum: 1, maximum: None, memory64: false, shared: false, page_size_log2: None });
    let mut functions = FunctionSection::new();
    let mut code = CodeSection::new();
    functions.function(1);
    let mut start = Function::new([]);
    start.instruction(&Instruction::Call(0)).instruction(&Instruction::Drop).instruction(&Instruction::End);
    code.function(&start);
    let mut filler = Function::new([(2, ValType::I32)]);
    filler.instruction(&Instruction::Loop(BlockType::Empty));
    for k in 0..40 {
        filler
            .instruction(&Instruction::LocalGet(0))
            .instruction(&Instruction::I32Const(k * 7 + 1))
            .instruction(&Instruction::I32Mul)
            .instruction(&Instruction::LocalGet(1))
            .instruction(&Instruction::I32Xor)
            .instruction(&Instruction::LocalSet(1));
    }
    filler
        .instruction(&Instruction::LocalGet(0))
        .instruction(&Instruction::I32Const(1))
        .instruction(&Instruction::I32Sub)
        .instruction(&Instruction::LocalTee(0))
        .instruction(&Instruction::BrIf(0))
        .instruction(&Instruction::End)
        .instruction(&Instruction::LocalGet(1))
        .instruction(&Instruction::End);
    let body_len = filler.byte_len();
    for _ in 0..size / body_len {
        functions.function(2);
        code.function(&filler);
    }
    let mut exports = ExportSection::new();
    exports.export("_start", ExportKind::Func, 1).export("memory", ExportKind::Memory, 0);
    let mut m = Encoded::new();
    m.section(&types).section(&imports).section(&functions).section(&memory).section(&exports).section(&code);
    m.finish()
}

/// The module as a component through wasmtime's preview1 adapter.
fn adapt(module: &[u8]) -> Vec<u8> {
    use wasi_preview1_component_adapter_provider::{
        WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER,
    };
    wit_component::ComponentEncoder::default()
        .module(module)
        .and_then(|e| e.adapter(WASI_SNAPSHOT_PREVIEW1_ADAPTER_NAME, WASI_SNAPSHOT_PREVIEW1_COMMAND_ADAPTER))
        .and_then(|e| e.validate(true).encode())
        .expect("adapting the module")
}

/// The two routes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Route {
    Packfs,
    Adapter,
}

/// One load: the nanoseconds from the module's bytes to its first call.
fn load(route: Route, wasm: &[u8], cache: Option<&GuestCache>) -> u64 {
    let engine = Engine::new(&Runner::config()).unwrap();
    let began = Instant::now();
    let since = move || u64::try_from(began.elapsed().as_nanos()).unwrap_or(u64::MAX);
    // The guest's own outcome (demo.wasm finds no /data and exits 1) is not
    // what is measured.
    match route {
        Route::Packfs => {
            let Guest::Module(module) = packfs_host::load::load(&engine, wasm, cache).unwrap().0 else {
                panic!("not a module")
            };
            struct S {
                wasi: Wasi,
            }
            let mut linker = Linker::<S>::new(&engine);
            packfs_host::p1::add_to_linker(&mut linker, |s| &mut s.wasi).unwrap();
            let wasi = Wasi::builder(Box::new(HostPlatform::default()))
                .preopen("/", Arc::new(MemFs::new()), Access::ReadWrite)
                .build()
                .unwrap();
            let mut store = Store::new(&engine, S { wasi });
            let instance = linker.instantiate(&mut store, &module).unwrap();
            let start = instance.get_typed_func::<(), ()>(&mut store, "_start").unwrap();
            let at = since();
            let _ = start.call(&mut store, ());
            at
        }
        Route::Adapter => {
            let component = match cache.map(|c| packfs_host::load::load(&engine, wasm, Some(c))) {
                // Warm: the cache holds the adapted component, keyed by it.
                Some(Ok((Guest::Component(c), _))) => c,
                _ => Component::new(&engine, adapt(wasm)).unwrap(),
            };
            let mut linker = ComponentLinker::<GuestState>::new(&engine);
            packfs_host::wasi::add_to_linker_sync(&mut linker).unwrap();
            let wasi = wasmtime_wasi::WasiCtx::builder().build();
            let fs = PackFsCtx::builder().preopen("/", Arc::new(MemFs::new())).build();
            let mut store = Store::new(&engine, GuestState::new(wasi, fs));
            let command =
                wasmtime_wasi::p2::bindings::sync::Command::instantiate(&mut store, &component, &linker).unwrap();
            let at = since();
            let _ = command.wasi_cli_run().call_run(&mut store);
            at
        }
    }
}

fn median(mut v: Vec<u64>) -> f64 {
    v.sort_unstable();
    let m = v.len() / 2;
    if v.len() % 2 == 1 { v[m] as f64 } else { (v[m - 1] + v[m]) as f64 / 2.0 }
}

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let runs: usize = std::env::var("LOAD_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(if bench { 5 } else { 1 });
    let small = std::fs::read(support::rust_guest("demo", "wasm32-wasip1")).unwrap();
    let mut modules = vec![("small (demo.wasm)", small)];
    if bench {
        modules.push(("large (generated)", generated(21 << 20)));
    }
    let mut md = String::from("| module | size | route | cold (compile) | warm (cache) |\n|---|--:|---|--:|--:|\n");
    let mut ratios = Vec::new();
    for (name, wasm) in &modules {
        let mut cold = [Vec::new(), Vec::new()];
        let mut warm = [Vec::new(), Vec::new()];
        let dir = tempfile::tempdir().unwrap();
        let cache = GuestCache::new(dir.path().join("cache")).unwrap();
        // Fill the caches: PackFS's holds the module, the adapter's the
        // component (keyed by the component's bytes, as it was).
        let adapted = adapt(wasm);
        let engine = Engine::new(&Runner::config()).unwrap();
        packfs_host::load::load(&engine, wasm, Some(&cache)).unwrap();
        packfs_host::load::load(&engine, &adapted, Some(&cache)).unwrap();
        for _ in 0..runs {
            for (i, route) in [Route::Packfs, Route::Adapter].into_iter().enumerate() {
                cold[i].push(load(route, wasm, None));
                let warm_input = if route == Route::Packfs { wasm.as_slice() } else { adapted.as_slice() };
                warm[i].push(load(route, warm_input, Some(&cache)));
            }
        }
        let (c, w) = (cold.map(median), warm.map(median));
        for (i, route) in ["PackFS preview1", "adapter (before)"].iter().enumerate() {
            md += &format!(
                "| {name} | {:.1} MB | {route} | {:.1} ms | {:.2} ms |\n",
                wasm.len() as f64 / 1e6,
                c[i] / 1e6,
                w[i] / 1e6
            );
        }
        ratios.push(format!(
            "{name}: cold {:.2}x, warm {:.2}x faster than the adapter route",
            c[1] / c[0],
            w[1] / w[0]
        ));
    }
    print!("{md}\n{}\n", ratios.join("\n"));
}
