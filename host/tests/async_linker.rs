//! PackFS's WASI functions are synchronous; they must serve a store driven
//! asynchronously: preview1 for a core module, and `wasi:filesystem` next
//! to wasmtime-wasi's async io for a component.

use packfs_test_support as support;

use std::sync::Arc;

use packfs_core::wasi::p1::Wasi;
use packfs_core::{FileSystem, MemFs};
use packfs_host::Access;
use packfs_host::filesystem::PackFsCtx;
use packfs_host::p1::HostPlatform;
use packfs_host::p2::GuestState;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine, Module, Store};

/// A p1 command creating `/made` through the first preopen.
const MODULE: &str = r#"
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "made")
  (func (export "_start")
    (drop (call $path_open (i32.const 3) (i32.const 0) (i32.const 16) (i32.const 4)
      (i32.const 1) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 8)))))
"#;

fn async_engine() -> Engine {
    Engine::new(&Config::new()).unwrap()
}

#[test]
fn async_store_runs_a_p1_module_on_packfs() {
    let engine = async_engine();
    let module = Module::new(&engine, wat::parse_str(MODULE).unwrap()).unwrap();
    struct State {
        wasi: Wasi,
    }
    let mut linker = wasmtime::Linker::<State>::new(&engine);
    packfs_host::p1::add_to_linker(&mut linker, |s| &mut s.wasi).unwrap();
    let fs = Arc::new(MemFs::new());
    let wasi =
        Wasi::builder(Box::new(HostPlatform::default())).preopen("/", fs.clone(), Access::ReadWrite).build().unwrap();
    let mut store = Store::new(&engine, State { wasi });
    wasmtime_wasi::runtime::in_tokio(async {
        let instance = linker.instantiate_async(&mut store, &module).await?;
        instance.get_typed_func::<(), ()>(&mut store, "_start")?.call_async(&mut store, ()).await
    })
    .unwrap();
    assert!(fs.lookup(fs.root(), "made").is_ok());
}

#[test]
fn async_store_runs_a_component_on_packfs() {
    let engine = async_engine();
    let path = support::rust_guest("meta", "wasm32-wasip2");
    let component = Component::from_file(&engine, &path).unwrap();
    let mut linker = Linker::<GuestState>::new(&engine);
    packfs_host::p2::add_to_linker_async(&mut linker).unwrap();
    let fs = Arc::new(MemFs::new());
    let state = GuestState::new(
        wasmtime_wasi::WasiCtx::builder().args(&["meta"]).build(),
        PackFsCtx::builder().preopen("/", fs.clone(), Access::ReadWrite).build(),
        (),
    );
    let mut store = Store::new(&engine, state);
    let outcome = wasmtime_wasi::runtime::in_tokio(async {
        let command = wasmtime_wasi::p2::bindings::Command::instantiate_async(&mut store, &component, &linker).await?;
        command.wasi_cli_run().call_run(&mut store).await
    })
    .unwrap();
    assert_eq!(outcome, Ok(()));
    assert!(!fs.read_dir(fs.root(), None, 10).unwrap().is_empty(), "the guest left files");
}
