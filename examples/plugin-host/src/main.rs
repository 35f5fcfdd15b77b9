//! A plugin host: several plugins share one base pack of the host's assets,
//! each runs on a fork of its own, and each is bounded.
//!
//! - The base is built once: a compressed pack of the assets, opened from
//!   memory (a host with the pack on disk maps it: `packfs_os::mmap`).
//! - Each plugin gets `MemFs::overlay` over it, which costs O(1) however
//!   much the pack holds: the overlay starts empty, reads fall through to
//!   the shared pack, and what a plugin writes stays in its own overlay (a
//!   pack file's bytes are copied up on its first write). No plugin sees
//!   another's writes, and the pack never changes.
//! - Each fork has a quota (`packfs_core::mem::Quota`: a write past
//!   `max_bytes` fails with EDQUOT and changes nothing), and each run caps
//!   the guest's linear memory and time (`packfs_host::Limits`, enforced by
//!   the `Runner`).
//!
//! - The module is compiled and linked once (`Runner::prepare`),
//!   and the runner allocates from wasmtime's pooling allocator
//!   (`RunnerBuilder::pool`): a plugin's start maps no memory, and its data
//!   segments are mapped copy-on-write from the compiled module.
//!
//! The plugins are one guest run 100 times at once, on threads of the
//! host, on different input: two that behave, one that writes more than
//! its quota, one that needs more memory than it may have, and 96 more that
//! behave. The host checks what each saw and left, and exits 1 on any
//! mismatch; it prints what the plugins cost it in resident memory.
//! (`host/examples/embed.rs` is the minimal embedding: one guest, the
//! host's own linker and store data.)
//!
//!     cargo run            (in examples/plugin-host)

use std::sync::Arc;
use std::time::Duration;

use packfs_core::mem::Quota;
use packfs_core::pack::{Compression, PackFs, PackOptions};
use packfs_core::{Error, FileSystem, MemFs, read_file, write_file};
use packfs_host::{Access, Capture, Stdin};
use packfs_host::{Limits, Pool, RunError, Runner, Sandbox};

/// The plugin, a p1 module; fd 3 is `/data`, its fork. It prints
/// `greeting.txt` (from the base), reads all of stdin into memory (which
/// grows a page at a time) and writes it to `notes.txt`. Any errno ends
/// the run with it as the exit status.
const GUEST: &str = r#"
(module
  (import "wasi_snapshot_preview1" "path_open"
    (func $open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $read (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_write" (func $write (param i32 i32 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "greeting.txt")
  (data (i32.const 16) "notes.txt")
  ;; 32: the fd path_open gives; 40: one iovec; 48: the bytes done.
  (func $ok (param $errno i32)
    (if (local.get $errno) (then (call $exit (local.get $errno)))))
  (func $iov (param $at i32) (param $len i32)
    (i32.store (i32.const 40) (local.get $at))
    (i32.store (i32.const 44) (local.get $len)))
  (func (export "_start")
    (local $end i32)
    ;; greeting.txt (rights: fd_read) to stdout
    (call $ok (call $open (i32.const 3) (i32.const 1) (i32.const 0) (i32.const 12) (i32.const 0)
      (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 32)))
    (call $iov (i32.const 1024) (i32.const 1024))
    (call $ok (call $read (i32.load (i32.const 32)) (i32.const 40) (i32.const 1) (i32.const 48)))
    (call $iov (i32.const 1024) (i32.load (i32.const 48)))
    (call $ok (call $write (i32.const 1) (i32.const 40) (i32.const 1) (i32.const 48)))
    ;; stdin to memory from 64 KiB on, growing it when full
    (local.set $end (i32.const 65536))
    (loop $more
      (if (i32.eq (local.get $end) (i32.shl (memory.size) (i32.const 16)))
        (then (drop (memory.grow (i32.const 1)))))
      (call $iov (local.get $end) (i32.sub (i32.shl (memory.size) (i32.const 16)) (local.get $end)))
      (call $ok (call $read (i32.const 0) (i32.const 40) (i32.const 1) (i32.const 48)))
      (local.set $end (i32.add (local.get $end) (i32.load (i32.const 48))))
      (br_if $more (i32.load (i32.const 48))))
    ;; notes.txt, created exclusively (O_CREAT|O_EXCL; rights: fd_write):
    ;; on a tree shared with a plugin that ran before, it would be there
    (call $ok (call $open (i32.const 3) (i32.const 0) (i32.const 16) (i32.const 9) (i32.const 5)
      (i64.const 64) (i64.const 0) (i32.const 0) (i32.const 32)))
    (call $iov (i32.const 65536) (i32.sub (local.get $end) (i32.const 65536)))
    (call $ok (call $write (i32.load (i32.const 32)) (i32.const 40) (i32.const 1) (i32.const 48)))))
"#;

const GREETING: &[u8] = b"hello from the host's assets\n";
/// What each fork may hold of its own (the pack below is not charged).
const QUOTA: u64 = 64 << 10;
/// Each guest's linear memory.
const MEMORY: usize = 1 << 20;
/// Plugins run at once.
const PLUGINS: usize = 100;
/// WASI's EDQUOT, the exit status of a plugin whose write was refused.
const EDQUOT: i32 = 19;

/// How a plugin's run ended.
#[derive(Debug, PartialEq)]
enum End {
    Done,
    OverQuota,
    OverMemory,
    Other(String),
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The base, once: the greeting and a 256 KiB dictionary, as a pack.
    let assets = MemFs::new();
    let words: Vec<u8> = (0..256 << 10).map(|i| b"abcdefghij\n"[i % 11]).collect();
    for (name, data) in [("greeting.txt", GREETING), ("words.txt", &words[..])] {
        write_file(&assets, name, data)?;
    }
    let mut bytes = Vec::new();
    PackOptions::new().compress(Some(Compression::zstd(3))).write(&assets.snapshot(), &mut bytes)?;
    println!("base: {} KiB of assets in a pack of {} bytes", (GREETING.len() + words.len()) >> 10, bytes.len());
    let base: Arc<dyn FileSystem> = Arc::new(PackFs::open(bytes)?);

    // One engine, runner and linked guest for every plugin, with a pool
    // slot for each plugin at once; the limits hold for each run.
    let limits = Limits { max_memory: Some(MEMORY), timeout: Some(Duration::from_secs(10)) };
    let runner =
        Runner::builder().limits(limits).pool(Pool { instances: PLUGINS as u32, ..Pool::default() }).build()?;
    let plugin = runner.prepare(&runner.load(&wat::parse_str(GUEST)?)?)?;

    // The plugins: name, input, how the run should end.
    let mut plugins = vec![
        ("spell".to_string(), b"teh -> the\n".to_vec(), End::Done),
        ("thesaurus".into(), b"big: large, vast\n".to_vec(), End::Done),
        ("hoarder".into(), vec![b'h'; 256 << 10], End::OverQuota),
        ("glutton".into(), vec![b'g'; 2 << 20], End::OverMemory),
    ];
    for i in plugins.len()..PLUGINS {
        plugins.push((format!("spell-{i}"), format!("teh -> the, {i} times\n").into_bytes(), End::Done));
    }
    // A fork each, all made before any runs, so that a write leaking from
    // one to another would show.
    let quota = Quota { max_bytes: Some(QUOTA), ..Quota::default() };
    let forks = plugins
        .iter()
        .map(|_| MemFs::builder().lower(base.clone()).quota(quota).build().map(Arc::new))
        .collect::<Result<Vec<_>, _>>()?;

    // Every plugin at once, each on a thread of its own.
    let before = resident();
    let runs = std::thread::scope(|s| {
        let threads: Vec<_> = plugins
            .iter()
            .zip(&forks)
            .map(|((name, input, _), fork)| {
                let (runner, plugin) = (&runner, &plugin);
                s.spawn(move || {
                    let stdout = Capture::new(1 << 10);
                    let sandbox = Sandbox::new()
                        .arg(name)
                        .stdin(Stdin::Bytes(input.clone()))
                        .stdout(stdout.clone())
                        .preopen("/data", fork.clone(), Access::ReadWrite);
                    let end = match runner.run_prepared(plugin, sandbox) {
                        Ok(0) => End::Done,
                        Ok(EDQUOT) => End::OverQuota,
                        Err(RunError::MemoryLimit(_)) => End::OverMemory,
                        other => End::Other(format!("{other:?}")),
                    };
                    (end, stdout.contents())
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().expect("a plugin's thread")).collect::<Vec<_>>()
    });
    if let (Some(before), Some(peak)) = (before, peak_resident()) {
        println!(
            "{PLUGINS} plugins at once: at most {} KiB of the host's resident memory each",
            (peak.saturating_sub(before) / PLUGINS as u64) >> 10
        );
    }

    let mut wrong = Vec::new();
    for (((name, _, expected), fork), (end, stdout)) in plugins.iter().zip(&forks).zip(&runs) {
        if !name.starts_with("spell-") {
            println!("{name}: {end:?}; its fork holds {} bytes of its own", fork.usage().bytes);
        }
        if end != expected {
            wrong.push(format!("{name} ended {end:?}, not {expected:?}"));
        }
        // Every plugin read the base, whatever happened after.
        if stdout != GREETING {
            wrong.push(format!("{name} printed {:?}", String::from_utf8_lossy(stdout)));
        }
    }

    // Each fork holds its own plugin's notes and no one else's: the whole
    // input, nothing (the write was refused and changed nothing), or no
    // file (the run stopped before it).
    for ((name, input, expected), fork) in plugins.iter().zip(&forks) {
        let want = match expected {
            End::Done => Some(input.clone()),
            End::OverQuota => Some(Vec::new()),
            _ => None,
        };
        if read(&**fork, "notes.txt")? != want {
            wrong.push(format!("{name}'s fork does not hold its own notes.txt"));
        }
        let refused = u64::from(*expected == End::OverQuota);
        if fork.quota_refusals() != refused {
            wrong.push(format!("{name}'s fork refused {} writes, not {refused}", fork.quota_refusals()));
        }
    }
    // The base is as it was built.
    if read(&*base, "notes.txt")?.is_some() || read(&*base, "greeting.txt")?.as_deref() != Some(GREETING) {
        wrong.push("the base pack changed".into());
    }

    if !wrong.is_empty() {
        eprintln!("plugin-host: {}", wrong.join("\nplugin-host: "));
        std::process::exit(1);
    }
    println!("plugin-host: ok");
    Ok(())
}

/// The bytes of `name` in `fs`'s root, or `None` if it has none.
fn read(fs: &dyn FileSystem, name: &str) -> packfs_core::Result<Option<Vec<u8>>> {
    match read_file(fs, name) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Error::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

/// This process's resident memory now, and at its peak (Linux: VmRSS and
/// VmHWM of `/proc/self/status`), bytes; `None` elsewhere.
fn resident() -> Option<u64> {
    status_kib("VmRSS:")
}

fn peak_resident() -> Option<u64> {
    status_kib("VmHWM:")
}

fn status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    Some(line[key.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().ok()? << 10)
}
