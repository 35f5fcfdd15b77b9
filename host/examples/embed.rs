//! The smallest embedding: one guest given PackFS instead of the host disk.
//!
//! The host keeps its own store data and its own core-module `Linker`,
//! adds PackFS's preview1 to it with one call, and mounts two trees: a
//! read-only snapshot of assets at `/assets` and a scratch `MemFs` at
//! `/work`. The guest (a p1 module) copies `/assets/greeting.txt` to
//! `/work/out.txt` and to stdout; the host then reads the result back from
//! memory.
//!
//!     cargo run -p packfs-host --example embed [-- other-guest.wasm]
//!
//! With a path, that guest runs instead, against the same preopens. A host
//! of many guests, each on its own fork of one pack, with quotas and
//! memory and time limits, is `examples/plugin-host`.

use std::sync::Arc;

use packfs_core::{FileSystem, FileType, MemFs, read_file, write_file};
use packfs_host::p1::{HostPlatform, Inherit, Wasi};
use packfs_host::{Access, Capture};
use wasmtime::{Engine, Linker, Module, Store};

/// The plugin host's own store data, with the guest's preview1 state in it.
struct Plugin {
    wasi: Wasi,
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

    // The trees: assets frozen in a snapshot, a scratch area in memory.
    let assets = MemFs::new();
    write_file(&assets, "greeting.txt", b"hello from PackFS\n")?;
    let work = Arc::new(MemFs::new());

    // The plugin host's linker: preview1, files from PackFS.
    let engine = Engine::default();
    let mut linker = Linker::<Plugin>::new(&engine);
    packfs_host::p1::add_to_linker(&mut linker, |p| &mut p.wasi)?;

    let stderr = Capture::new(64 << 10);
    let wasi = Wasi::builder(Box::new(HostPlatform::default()))
        .arg("guest")
        .env("PLUGIN", "embed")
        .stdout(Box::new(Inherit::Stdout))
        .stderr(Box::new(stderr.clone()))
        .preopen("/assets", Arc::new(assets.snapshot()), Access::ReadOnly)
        .preopen("/work", work.clone(), Access::ReadWrite)
        .build()?;
    let module = Module::new(&engine, &wasm)?;
    let mut store = Store::new(&engine, Plugin { wasi });
    let instance = linker.instantiate(&mut store, &module)?;
    let status = match instance.get_typed_func::<(), ()>(&mut store, "_start")?.call(&mut store, ()) {
        Ok(()) => 0,
        Err(e) => packfs_host::p1::exit_status(&e).ok_or(e)?,
    };
    println!("guest exited with {status}; its stderr: {:?}", String::from_utf8_lossy(&stderr.contents()));

    // What the guest wrote is in memory, not on disk.
    for entry in work.read_dir(work.root(), None, 100)? {
        if entry.kind != FileType::File {
            continue;
        }
        let bytes = read_file(&*work, &entry.name)?;
        println!("/work/{}: {:?}", entry.name, String::from_utf8_lossy(&bytes));
    }
    Ok(())
}
