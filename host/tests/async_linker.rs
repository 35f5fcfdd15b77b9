//! PackFS's filesystem functions are synchronous; they must serve a store
//! driven asynchronously, next to wasmtime-wasi's async io.

use std::sync::Arc;

use packfs_core::{FileSystem, MemFs};
use packfs_host::GuestState;
use packfs_host::wasi::PackFsCtx;
use wasmtime::component::Linker;
use wasmtime::{Engine, Store};

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

#[test]
fn async_store_runs_a_guest_on_packfs() {
    let engine = Engine::default();
    let (component, _) = packfs_host::p1::load(&engine, &wat::parse_str(MODULE).unwrap(), None).unwrap();
    let mut linker = Linker::<GuestState>::new(&engine);
    packfs_host::wasi::add_to_linker_async(&mut linker).unwrap();
    let fs = Arc::new(MemFs::new());
    let state = GuestState::new(
        wasmtime_wasi::WasiCtx::builder().build(),
        PackFsCtx::builder().preopen("/", fs.clone()).build(),
    );
    let mut store = Store::new(&engine, state);
    let outcome = wasmtime_wasi::runtime::in_tokio(async {
        let command = wasmtime_wasi::p2::bindings::Command::instantiate_async(&mut store, &component, &linker).await?;
        command.wasi_cli_run().call_run(&mut store).await
    })
    .unwrap();
    assert_eq!(outcome, Ok(()));
    assert!(fs.lookup(fs.root(), "made").is_ok());
}
