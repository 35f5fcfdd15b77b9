//! A plugin host that gives its guests PackFS instead of the host disk.
//!
//! It keeps its own store data and its own `Linker`, adds WASI with PackFS
//! as the filesystem, and mounts two trees: a read-only snapshot of assets
//! at `/assets` and a scratch `MemFs` at `/work`. The guest (a p1 module,
//! adapted at load time) copies `/assets/greeting.txt` to `/work/out.txt`
//! and to stdout; the host then reads the result back from memory.
//!
//!     cargo run -p packfs-host --example embed [-- other-guest.wasm]
//!
//! With a path, that guest runs instead, against the same preopens.

use std::sync::Arc;

use packfs_core::{FileSystem, FileType, MemFs, OpenOptions};
use packfs_host::wasi::{PackFsCtx, PackFsCtxView, PackFsView};
use wasmtime::component::{Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::p2::bindings::sync::Command;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// The plugin host's own store data: WASI for everything but files, PackFS
/// for files, one resource table for both.
struct Plugin {
    wasi: WasiCtx,
    fs: PackFsCtx,
    table: ResourceTable,
}

impl WasiView for Plugin {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl PackFsView for Plugin {
    fn packfs(&mut self) -> PackFsCtxView<'_> {
        PackFsCtxView { ctx: &mut self.fs, table: &mut self.table }
    }
}

/// The default guest: WASI p1 in text form. fd 3 is `/assets`, fd 4 `/work`.
const GUEST: &str = r#"
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "greeting.txt")
  (data (i32.const 16) "out.txt")
  (func (export "_start")
    (local $in i32)
    ;; open /assets/greeting.txt for reading (rights: fd_read)
    (if (call $open (i32.const 3) (i32.const 1) (i32.const 0) (i32.const 12) (i32.const 0)
          (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 32))
      (then (call $exit (i32.const 1))))
    (local.set $in (i32.load (i32.const 32)))
    ;; one iovec at 40: 1024 bytes at 1024
    (i32.store (i32.const 40) (i32.const 1024))
    (i32.store (i32.const 44) (i32.const 1024))
    (if (call $read (local.get $in) (i32.const 40) (i32.const 1) (i32.const 48))
      (then (call $exit (i32.const 2))))
    (i32.store (i32.const 44) (i32.load (i32.const 48)))
    ;; create /work/out.txt (O_CREAT|O_TRUNC, rights: fd_write)
    (if (call $open (i32.const 4) (i32.const 0) (i32.const 16) (i32.const 7) (i32.const 9)
          (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 32))
      (then (call $exit (i32.const 3))))
    (drop (call $write (i32.load (i32.const 32)) (i32.const 40) (i32.const 1) (i32.const 48)))
    (drop (call $write (i32.const 1) (i32.const 40) (i32.const 1) (i32.const 48)))))
"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let wasm = match std::env::args().nth(1) {
        Some(path) => std::fs::read(path)?,
        None => wat::parse_str(GUEST)?,
    };

    // The trees: assets frozen in a snapshot, a scratch area writable.
    let assets = MemFs::new();
    let f = assets.open(assets.root(), "greeting.txt", &OpenOptions::create())?;
    assets.write_at(f, 0, b"hello from PackFS\n")?;
    assets.close(f);
    let work = Arc::new(MemFs::new());
    let fs = PackFsCtx::builder()
        .preopen_read_only("/assets", Arc::new(assets.snapshot()))
        .preopen("/work", work.clone())
        .build();

    // The plugin host's linker: all of WASI, files from PackFS.
    let engine = Engine::default();
    let mut linker = Linker::<Plugin>::new(&engine);
    packfs_host::wasi::add_to_linker_sync(&mut linker)?;

    // A p1 module is adapted into a component (cache it in real hosts:
    // `packfs_host::p1::ComponentCache`).
    let (component, _) = packfs_host::p1::load(&engine, &wasm, None)?;
    let wasi = WasiCtx::builder().inherit_stdio().args(&["guest"]).build();
    let mut store = Store::new(&engine, Plugin { wasi, fs, table: ResourceTable::new() });
    let command = Command::instantiate(&mut store, &component, &linker)?;
    let outcome = command.wasi_cli_run().call_run(&mut store)?;
    println!("guest returned {outcome:?}");

    // What the guest wrote is in memory, not on disk.
    for entry in work.read_dir(work.root(), None, 100)? {
        if entry.kind != FileType::File {
            continue;
        }
        let mut buf = vec![0; work.metadata(entry.ino)?.size as usize];
        let n = work.read_at(entry.ino, 0, &mut buf)?;
        println!("/work/{}: {:?}", entry.name, String::from_utf8_lossy(&buf[..n]));
    }
    Ok(())
}
