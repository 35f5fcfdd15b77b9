//! The baseline: wasmtime-wasi's preview1 over a real directory, as its
//! docs advise for speed (`allow_blocking_current_thread`).

use std::path::Path;

use wasmtime::{Engine, InstancePre, Linker, Module, Store};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

/// A linker with all of wasmtime-wasi's preview1.
pub(crate) fn linker(engine: &Engine) -> Linker<WasiP1Ctx> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s| s).unwrap();
    linker
}

/// Instantiates `pre` with `dir` preopened at `/` and runs `_start`.
pub(crate) fn run(pre: &InstancePre<WasiP1Ctx>, dir: &Path) {
    run_with(pre, &[(dir, "/", FsPerms::ReadWrite)]);
}

/// Instantiates `pre` with the tree `base` preopened read-only at `/` and
/// `scratch` read-write at `/scratch`, and runs `_start`.
pub(crate) fn run_shared(pre: &InstancePre<WasiP1Ctx>, base: &Path, scratch: &Path) {
    run_with(pre, &[(base, "/", FsPerms::ReadOnly), (scratch, "/scratch", FsPerms::ReadWrite)]);
}

fn run_with(pre: &InstancePre<WasiP1Ctx>, preopens: &[(&Path, &str, FsPerms)]) {
    let mut wasi = WasiCtxBuilder::new();
    wasi.allow_blocking_current_thread(true);
    for &(dir, at, perms) in preopens {
        wasi.preopened_dir(dir, at, perms).unwrap();
    }
    let mut store = Store::new(pre.module().engine(), wasi.build_p1());
    let instance = pre.instantiate(&mut store).unwrap();
    instance.get_typed_func::<(), ()>(&mut store, "_start").unwrap().call(&mut store, ()).unwrap();
}

/// The artifact at `path`, mapped.
#[allow(unsafe_code, reason = "loading a precompiled artifact")]
pub(crate) fn deserialize(engine: &Engine, path: &Path) -> Module {
    // SAFETY: the benchmark wrote the artifact with
    // `Engine::precompile_module` for this configuration, into a directory
    // of the run's own, and does not change it.
    unsafe { Module::deserialize_file(engine, path) }.unwrap()
}
