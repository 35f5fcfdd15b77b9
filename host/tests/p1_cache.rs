//! Loading p1 modules through the adapter, and the on-disk component cache.

use std::sync::Arc;

use packfs_core::{FileSystem, MemFs};
use packfs_host::Runner;
use packfs_host::p1::{self, CacheStatus, ComponentCache, LoadError};
use packfs_host::wasi::PackFsCtx;
use wasmtime::Engine;

/// A p1 command that creates `/made` through the preopen and exits 7 (its
/// `proc_exit` served by `p1::exit_adapter`, so the host sees 7).
const MODULE: &str = r#"
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "made")
  (func (export "_start")
    ;; fd 3 is the first preopen; O_CREAT; rights: fd_write
    (drop (call $path_open (i32.const 3) (i32.const 0) (i32.const 16) (i32.const 4)
      (i32.const 1) (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 8)))
    (call $exit (i32.const 7))))
"#;

fn module() -> Vec<u8> {
    wat::parse_str(MODULE).unwrap()
}

#[test]
fn p1_module_runs_through_the_adapter() {
    let runner = Runner::new(&Engine::default()).unwrap();
    let guest = runner.load(&module()).unwrap();
    let fs = Arc::new(MemFs::new());
    let ctx = PackFsCtx::builder().preopen("/", fs.clone()).build();
    let status = runner.run(&guest, wasmtime_wasi::WasiCtx::builder().build(), ctx).unwrap();
    assert_eq!(status, 7);
    assert!(fs.lookup(fs.root(), "made").is_ok());
}

#[test]
fn cache_stores_hits_and_replaces_corrupt_files() {
    let engine = Engine::default();
    let dir = tempfile::tempdir().unwrap();
    let cache = ComponentCache::new(dir.path().join("c")).unwrap();
    let wasm = module();
    assert!(matches!(p1::load(&engine, &wasm, Some(&cache)).unwrap().1, CacheStatus::Stored));
    assert!(matches!(p1::load(&engine, &wasm, Some(&cache)).unwrap().1, CacheStatus::Hit));

    // A flipped byte fails the checksum: recompiled and replaced.
    let file = std::fs::read_dir(cache.dir()).unwrap().next().unwrap().unwrap().path();
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    assert!(matches!(p1::load(&engine, &wasm, Some(&cache)).unwrap().1, CacheStatus::Replaced));
    // Truncated to nothing.
    std::fs::write(&file, b"").unwrap();
    assert!(matches!(p1::load(&engine, &wasm, Some(&cache)).unwrap().1, CacheStatus::Replaced));
    assert!(matches!(p1::load(&engine, &wasm, Some(&cache)).unwrap().1, CacheStatus::Hit));

    // Another engine configuration is another key.
    let mut config = wasmtime::Config::new();
    config.cranelift_opt_level(wasmtime::OptLevel::None);
    let other = Engine::new(&config).unwrap();
    assert!(matches!(p1::load(&other, &wasm, Some(&cache)).unwrap().1, CacheStatus::Stored));
    assert_eq!(std::fs::read_dir(cache.dir()).unwrap().count(), 2);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(cache.dir()).unwrap().permissions().mode() & 0o777, 0o700);
    }
}

#[test]
fn bad_input_is_a_typed_error() {
    let engine = Engine::default();
    assert!(matches!(p1::load(&engine, b"not wasm", None), Err(LoadError::NotWasm)));
    // A module importing something the adapter cannot provide.
    let bad = wat::parse_str(r#"(module (import "env" "nope" (func)) (memory (export "memory") 1))"#).unwrap();
    assert!(matches!(p1::load(&engine, &bad, None), Err(LoadError::Adapt(_))));
}

/// Every status `proc_exit` can give, modulo 256 as a POSIX exit status; a
/// module that never imports `proc_exit` loads unchanged.
#[test]
fn proc_exit_status_reaches_the_host() {
    let runner = Runner::new(&Engine::default()).unwrap();
    let run = |wat: &str| {
        let guest = runner.load(&wat::parse_str(wat).unwrap()).unwrap();
        runner.run(&guest, wasmtime_wasi::WasiCtx::builder().build(), PackFsCtx::builder().build()).unwrap()
    };
    for (code, status) in [(0, 0), (1, 1), (42, 42), (255, 255), (256, 0), (-1, 255)] {
        let wat = format!(
            r#"(module
                 (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
                 (memory (export "memory") 1)
                 (func (export "_start") (call $exit (i32.const {code}))))"#
        );
        assert_eq!(run(&wat), status, "proc_exit({code})");
    }
    let no_exit = r#"(module
        (import "wasi_snapshot_preview1" "sched_yield" (func $y (result i32)))
        (memory (export "memory") 1)
        (func (export "_start") (drop (call $y))))"#;
    assert_eq!(run(no_exit), 0);
}

#[test]
fn cache_refuses_a_directory_others_can_write_to() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    let err = ComponentCache::new(&shared).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);

    // A symlink to a private directory is not taken either: what it
    // points to can change.
    let private = dir.path().join("private");
    std::fs::create_dir(&private).unwrap();
    std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(ComponentCache::new(&private).is_ok(), "others may read, not write");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&private, &link).unwrap();
    assert_eq!(ComponentCache::new(&link).unwrap_err().kind(), std::io::ErrorKind::PermissionDenied);
}
