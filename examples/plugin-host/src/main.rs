//! A plugin host that runs a WASI guest on a pack: the host builds a small
//! pack (a plugin's bundled assets) in memory, mounts it read-only at
//! `/plugin` with a writable in-memory overlay over it, and runs the guest,
//! a preview1 module that reads `/plugin/greeting.txt`, writes
//! `/plugin/seen.txt` (into the overlay: the pack is never changed) and
//! prints the greeting. The host checks both and exits 1 on a mismatch.
//!
//!     cargo run            (in examples/plugin-host)

use std::sync::Arc;

use packfs_core::pack::{Compression, PackFs, PackOptions};
use packfs_core::wasi::Access;
use packfs_core::wasi::p1::{Wasi, io::Capture};
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_host::p1::HostPlatform;
use wasmtime::{Engine, Linker, Module, Store};

/// The host's own store data, with the guest's preview1 state in it.
struct Plugin {
    wasi: Wasi,
}

/// fd 3 is `/plugin`. Reads greeting.txt, writes it to seen.txt and stdout.
const GUEST: &str = r#"
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "greeting.txt")
  (data (i32.const 16) "seen.txt")
  (func (export "_start")
    (if (call $open (i32.const 3) (i32.const 1) (i32.const 0) (i32.const 12) (i32.const 0)
          (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 32))
      (then (call $exit (i32.const 1))))
    (i32.store (i32.const 40) (i32.const 1024))
    (i32.store (i32.const 44) (i32.const 1024))
    (if (call $read (i32.load (i32.const 32)) (i32.const 40) (i32.const 1) (i32.const 48))
      (then (call $exit (i32.const 2))))
    (i32.store (i32.const 44) (i32.load (i32.const 48)))
    (if (call $open (i32.const 3) (i32.const 0) (i32.const 16) (i32.const 8) (i32.const 9)
          (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 32))
      (then (call $exit (i32.const 3))))
    (drop (call $write (i32.load (i32.const 32)) (i32.const 40) (i32.const 1) (i32.const 48)))
    (drop (call $write (i32.const 1) (i32.const 40) (i32.const 1) (i32.const 48)))))
"#;

const GREETING: &[u8] = b"hello from a plugin's pack\n";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The plugin's assets, as a compressed pack.
    let assets = MemFs::new();
    let f = assets.open(assets.root(), "greeting.txt", &OpenOptions::create())?;
    assets.write_at(f, 0, GREETING)?;
    assets.close(f);
    let mut bytes = Vec::new();
    PackOptions::new().compress(Some(Compression::zstd(3))).write(&assets.snapshot(), &mut bytes)?;
    let pack: Arc<dyn FileSystem> = Arc::new(PackFs::open(bytes)?);
    // Writes land in memory over it.
    let tree = Arc::new(MemFs::overlay(pack)?);

    let engine = Engine::default();
    let mut linker = Linker::<Plugin>::new(&engine);
    packfs_host::p1::add_to_linker(&mut linker, |p| &mut p.wasi)?;
    let stdout = Capture::new(64 << 10);
    let wasi = Wasi::builder(Box::new(HostPlatform::default()))
        .stdout(Box::new(stdout.clone()))
        .preopen("/plugin", tree.clone(), Access::ReadWrite)
        .build()?;
    let module = Module::new(&engine, wat::parse_str(GUEST)?)?;
    let mut store = Store::new(&engine, Plugin { wasi });
    let instance = linker.instantiate(&mut store, &module)?;
    let status = match instance.get_typed_func::<(), ()>(&mut store, "_start")?.call(&mut store, ()) {
        Ok(()) => 0,
        Err(e) => packfs_host::p1::exit_status(&e).ok_or(e)?,
    };

    let seen = tree.lookup(tree.root(), "seen.txt")?;
    let mut buf = vec![0; tree.metadata(seen)?.size as usize];
    let n = tree.read_at(seen, 0, &mut buf)?;
    let ok = status == 0 && stdout.contents() == GREETING && &buf[..n] == GREETING;
    println!("guest exited with {status}; printed {:?}", String::from_utf8_lossy(&stdout.contents()));
    if !ok {
        eprintln!("plugin-host: the guest did not read and write what it should");
        std::process::exit(1);
    }
    println!("plugin-host: ok");
    Ok(())
}
