//! Many sandboxes of one module over one base tree, as plugin and
//! serverless hosts run them.
//!
//! - **Instantiate**, in this process: one run is a fresh sandbox over the
//!   base (PackFS: an O(1) overlay of a mapped pack; wasmtime-wasi: the
//!   same tree as a real directory), instantiating a module linked once
//!   and running its `_start`, which opens, reads and closes one file (or,
//!   in the second table, touches no file).
//! - **Density**, a child process per configuration: 100 and 1,000
//!   sandboxes of an interpreter-sized guest (≥ 20 MB of code, a 4 MiB
//!   data segment) at once, each on its own thread: sharing one read-only
//!   base with a scratch directory each (PackFS: the mapped pack and a
//!   `MemFs`; wasmtime-wasi: one real directory and an empty one each), or
//!   with a writable copy of the base each (PackFS: an overlay of the
//!   mapped pack; wasmtime-wasi: a real copy, made before the child
//!   starts). Each reads 10 files, writes 64 KiB (or nothing) and parks in
//!   a host call. The parent reads the child's RSS with 1 sandbox parked
//!   and with all of them: per sandbox is the difference over the rest.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use packfs_core::pack::write_pack;
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_host::Access;
use packfs_host::load::{GuestCache, Kind};
use packfs_host::{Limits, Pool, Runner, Sandbox};
use wasmtime::{Config, Engine, Module};

use crate::modules::{self, Body};
use crate::peer;
use crate::proc::{self, ms};

/// The base tree: `lib/mNNN.py`, 200 files of 24 KiB (an interpreter's
/// library, 4.8 MB).
const FILES: usize = 200;
const FILE_LEN: usize = 24 << 10;

fn file_name(i: usize) -> String {
    format!("lib/m{i:03}.py")
}

/// Each sandbox's memory limit, and so its pool slot.
const MAX_MEMORY: usize = 64 << 20;

fn limits() -> Limits {
    Limits { max_memory: Some(MAX_MEMORY), ..Limits::default() }
}

/// A pool for `n` sandboxes at once, and a few more.
fn pool(n: usize) -> Pool {
    Pool { instances: (n as u32).max(100) + 28, ..Pool::default() }
}

/// A runner of `n` pooled sandboxes under the bench's limits.
fn pooled_runner(n: usize) -> packfs_host::RunnerBuilder {
    Runner::builder().limits(limits()).pool(pool(n))
}

/// The engine such a runner runs p1 modules on: the peer's, so that both
/// sides compile and allocate alike.
fn pooled_engine(n: usize) -> Engine {
    pooled_runner(n).build().unwrap().engine(Kind::P1).clone()
}

/// The base as a pack file and as a directory, in `dir`.
fn base(dir: &Path) -> (PathBuf, PathBuf) {
    let fs = MemFs::new();
    let lib = fs.mkdir(fs.root(), "lib", 0o755).unwrap();
    let tree = dir.join("tree");
    std::fs::create_dir_all(tree.join("lib")).unwrap();
    for i in 0..FILES {
        let data = modules::noise(FILE_LEN + i);
        let f = fs.open(lib, &file_name(i)[4..], &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, &data).unwrap();
        fs.close(f);
        std::fs::write(tree.join(file_name(i)), &data).unwrap();
    }
    let pack = dir.join("base.pack");
    write_pack(&fs.snapshot(), std::fs::File::create(&pack).unwrap()).unwrap();
    (pack, tree)
}

/// The guest of both benchmarks: reads `reads` of the base's files (in
/// preopen 3), writes 64 KiB to `out` in preopen `write` if given (3, or a
/// scratch directory's 4), then parks if `park`.
fn guest(reads: usize, write: Option<i32>, park: bool, code: usize, data: usize) -> Vec<u8> {
    let read: Vec<String> = (0..reads).map(|i| file_name(i * 17 % FILES)).collect();
    let body = Body::Files { read: &read, write: write.map(|_| "out"), write_fd: write.unwrap_or(3), park };
    modules::command(&body, code, data)
}

/// How a sandbox sees the base: **shared**, one read-only base for all
/// (the mapped pack; wasmtime-wasi: one directory) and a scratch directory
/// each at `/scratch` (a `MemFs`; an empty real directory), as a host
/// that shares a base lays them out; or **copy**, a writable copy each (an
/// O(1) overlay of the pack; a real copy of the directory).
#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Shared,
    Copy,
}

/// A PackFS sandbox: `root` preopened at `/`.
pub(crate) fn sandbox(root: Arc<dyn FileSystem>) -> Sandbox {
    Sandbox::new().preopen("/", root, Access::ReadWrite)
}

/// The instantiate tables, as markdown: a guest that opens, reads and
/// closes one file, and one that touches no file (instantiation alone).
/// The rows take turns in blocks, each round in a rotated order.
pub(crate) fn instantiate(bench: bool) -> String {
    let (warmup, rounds, block) = if bench { (50, 20, 50) } else { (5, 2, 10) };
    let dir = tempfile::tempdir().unwrap();
    let (pack, tree) = base(dir.path());
    let base: Arc<dyn FileSystem> = Arc::new(packfs_os::mmap::open_pack(&pack).unwrap());
    let pooled = pooled_engine(100);
    let default = Engine::new(&Config::new()).unwrap();
    let mut md = String::new();
    for (what, reads) in [("one open, read, close", 1), ("no file at all", 0)] {
        let wasm = guest(reads, None, false, 0, 0);
        type Once<'a> = Box<dyn FnMut() + 'a>;
        let wasmtime = |engine: &Engine| -> Once<'_> {
            let pre = peer::linker(engine).instantiate_pre(&Module::new(engine, &wasm).unwrap()).unwrap();
            let tree = tree.clone();
            Box::new(move || peer::run(&pre, &tree))
        };
        let packfs = |runner: Runner, prepared: bool| -> Once<'_> {
            let guest = runner.load(&wasm).unwrap();
            let pre = runner.prepare(&guest).unwrap();
            let base = base.clone();
            Box::new(move || {
                let sandbox = sandbox(Arc::new(MemFs::overlay(base.clone()).unwrap()));
                let status = if prepared { runner.run_prepared(&pre, sandbox) } else { runner.run(&guest, sandbox) };
                assert_eq!(status.unwrap(), 0);
            })
        };
        let on_demand = || Runner::builder().limits(limits()).build().unwrap();
        let mut rows: Vec<(&str, Once<'_>)> = vec![
            ("wasmtime-wasi p1, pooled, `InstancePre`, a real directory", wasmtime(&pooled)),
            ("wasmtime-wasi p1, `Config::new()`, `InstancePre`, a real directory", wasmtime(&default)),
            (
                "PackFS, pooled (`RunnerBuilder::pool`), prepared, an overlay of the mapped pack",
                packfs(pooled_runner(100).build().unwrap(), true),
            ),
            ("PackFS, on-demand allocator, prepared", packfs(on_demand(), true)),
            ("PackFS, on-demand allocator, `run` (links each run)", packfs(on_demand(), false)),
        ];
        for (_, run) in &mut rows {
            for _ in 0..warmup {
                run();
            }
        }
        let mut times = vec![Vec::new(); rows.len()];
        let mut medians = vec![Vec::new(); rows.len()];
        for round in 0..rounds {
            for k in 0..rows.len() {
                let i = (k + round) % rows.len();
                let block: Vec<Duration> = (0..block)
                    .map(|_| {
                        let began = Instant::now();
                        (rows[i].1)();
                        began.elapsed()
                    })
                    .collect();
                medians[i].push(proc::median(&block));
                times[i].extend(block);
            }
        }
        let n = rounds * block;
        md += &format!(
            "\nInstantiate and run a trivial guest ({what}), one sandbox after another: {n} runs a row after {warmup}, in {rounds} rounds of {block} taking turns\n\n| sandbox | median | p99 | rounds' medians, min–max | median vs first |\n|---|--:|--:|--:|--:|\n"
        );
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        let mut first = None;
        for (((name, _), times), medians) in rows.iter().zip(&mut times).zip(&medians) {
            times.sort_unstable();
            let (median, p99) = (proc::median(times), times[times.len() * 99 / 100]);
            let base = *first.get_or_insert(median);
            let (lo, hi) = (medians.iter().min().unwrap(), medians.iter().max().unwrap());
            md += &format!(
                "| {name} | {:.0} µs | {:.0} µs | {:.0}–{:.0} µs | {:.2}x |\n",
                us(median),
                us(p99),
                us(*lo),
                us(*hi),
                median.as_secs_f64() / base.as_secs_f64()
            );
        }
    }
    md
}

/// Sandboxes parked in `bench.park` until released.
#[derive(Default)]
struct Park {
    state: Mutex<(usize, bool)>,
    cv: Condvar,
}

impl Park {
    fn park(&self) {
        let mut s = self.state.lock().unwrap();
        s.0 += 1;
        self.cv.notify_all();
        while !s.1 {
            s = self.cv.wait(s).unwrap();
        }
    }

    fn until(&self, parked: usize) {
        let mut s = self.state.lock().unwrap();
        while s.0 < parked {
            s = self.cv.wait(s).unwrap();
        }
    }

    fn release(&self) {
        self.state.lock().unwrap().1 = true;
        self.cv.notify_all();
    }
}

/// The density child: `density KIND LAYOUT MODULE ARTIFACTS BASE N`, where
/// KIND is `packfs` (MODULE through the guest cache ARTIFACTS, BASE the
/// pack), `wasmtime` or `wasmtime-default` (ARTIFACTS the `.cwasm`; BASE
/// the tree, with `scratch/0` to `N-1` beside it, for `shared`; the
/// directory holding copies `0` to `N-1` for `copy`). It says `ready` with
/// one sandbox parked, reads a line, starts the rest, says `ready` with
/// all of them parked, reads a line, and lets them finish.
pub(crate) fn child(args: &[String]) -> bool {
    let [kind, layout, module, artifacts, base, n] = args else { return false };
    let n: usize = n.parse().unwrap();
    let layout = if layout == "shared" { Layout::Shared } else { Layout::Copy };
    let park = Arc::new(Park::default());
    let sandbox: Arc<dyn Fn(usize) + Send + Sync> = match kind.as_str() {
        "packfs" => {
            let mut runner = pooled_runner(n).cache(GuestCache::new(artifacts).unwrap()).build().unwrap();
            let p = park.clone();
            runner.module_linker_mut().func_wrap("bench", "park", move || p.park()).unwrap();
            let pre = runner.prepare(&runner.load(Path::new(module)).unwrap()).unwrap();
            let base: Arc<dyn FileSystem> = Arc::new(packfs_os::mmap::open_pack(base).unwrap());
            Arc::new(move |_| {
                let sandbox = match layout {
                    Layout::Copy => sandbox(Arc::new(MemFs::overlay(base.clone()).unwrap())),
                    Layout::Shared => Sandbox::new().preopen("/", base.clone(), Access::ReadOnly).preopen(
                        "/scratch",
                        Arc::new(MemFs::new()),
                        Access::ReadWrite,
                    ),
                };
                assert_eq!(runner.run_prepared(&pre, sandbox).unwrap(), 0);
            })
        }
        "wasmtime" | "wasmtime-default" => {
            let engine = if kind == "wasmtime" { pooled_engine(n) } else { Engine::new(&Config::new()).unwrap() };
            let module = peer::deserialize(&engine, Path::new(artifacts));
            let mut linker = peer::linker(&engine);
            let p = park.clone();
            linker.func_wrap("bench", "park", move || p.park()).unwrap();
            let pre = linker.instantiate_pre(&module).unwrap();
            let base = PathBuf::from(base);
            Arc::new(move |i| match layout {
                Layout::Copy => peer::run(&pre, &base.join(i.to_string())),
                Layout::Shared => peer::run_shared(&pre, &base, &scratch(&base, i)),
            })
        }
        _ => return false,
    };
    let go = || {
        std::io::stdout().flush().unwrap();
        std::io::stdin().lock().read_line(&mut String::new()).unwrap();
    };
    let spawn = |i: usize| {
        let sandbox = sandbox.clone();
        std::thread::spawn(move || sandbox(i))
    };
    let ready = || println!("ready {}", proc::rss().map(|b| b.to_string()).join(" "));
    let mut threads = vec![spawn(0)];
    park.until(1);
    ready();
    go();
    threads.extend((1..n).map(spawn));
    park.until(n);
    ready();
    go();
    park.release();
    for t in threads {
        t.join().unwrap();
    }
    true
}

/// Sandbox `i`'s scratch directory, beside the shared tree `base`.
fn scratch(base: &Path, i: usize) -> PathBuf {
    base.with_file_name("scratch").join(i.to_string())
}

/// One density configuration: its row's name, the child's kind and
/// layout, its artifacts (a guest cache, or a `.cwasm`) and base.
struct Setup<'a> {
    name: String,
    kind: &'static str,
    layout: Layout,
    artifacts: PathBuf,
    base: &'a Path,
}

/// The density tables, as markdown: sandboxes sharing one read-only base
/// with a scratch directory each (at 100 and at 1,000), and with a
/// writable copy each; a guest that writes, and one that writes nothing.
/// Every configuration runs `LOAD_DENSITY_RUNS` (3) times, the
/// configurations taking turns.
pub(crate) fn density(bench: bool) -> String {
    let (n, code, data) = if bench { (100, 21 << 20, 4 << 20) } else { (3, 0, 64 << 10) };
    let many = if bench { 1000 } else { 5 };
    let runs =
        std::env::var("LOAD_DENSITY_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(if bench { 3 } else { 1 });
    let dir = tempfile::tempdir().unwrap();
    let (pack, tree) = base(dir.path());
    for i in 0..many {
        std::fs::create_dir_all(scratch(&tree, i)).unwrap();
    }
    // With a copy each, every sandbox of wasmtime-wasi needs a directory of
    // its own to write to: a copy of the tree each, made before the child
    // starts.
    let copies = dir.path().join("copies");
    for i in 0..n {
        let to = copies.join(i.to_string()).join("lib");
        std::fs::create_dir_all(&to).unwrap();
        for f in 0..FILES {
            std::fs::copy(tree.join(file_name(f)), to.join(&file_name(f)[4..])).unwrap();
        }
    }
    let copy_bytes = (FILES * FILE_LEN + FILES * (FILES - 1) / 2) as u64;
    let mut md = String::new();
    let tables = [
        (Layout::Shared, true, n),
        (Layout::Shared, true, many),
        (Layout::Shared, false, many),
        (Layout::Copy, true, n),
    ];
    for (layout, writes, count) in tables {
        let shared = layout == Layout::Shared;
        let wasm = guest(10, writes.then_some(if shared { 4 } else { 3 }), true, code, data);
        let at = dir.path().join(format!("{}-{writes}-{count}", if shared { "shared" } else { "copy" }));
        std::fs::create_dir(&at).unwrap();
        let module = at.join("guest.wasm");
        std::fs::write(&module, &wasm).unwrap();
        // Compiled once per configuration, before anything is measured.
        let cache = at.join("guests");
        let runner = pooled_runner(count).cache(GuestCache::new(&cache).unwrap()).build().unwrap();
        runner.load(&module).unwrap();
        let cwasm = |engine: Engine, name: &str| {
            let path = at.join(name);
            std::fs::write(&path, engine.precompile_module(&wasm).unwrap()).unwrap();
            path
        };
        let (theirs, ours, their_base): (&str, &str, &Path) = if shared {
            ("one read-only directory, an empty directory each", "the mapped pack read-only, a `MemFs` each", &tree)
        } else {
            ("a copy of the directory each", "an overlay of the mapped pack each", &copies)
        };
        let mut rows = vec![
            Setup {
                name: format!("wasmtime-wasi p1, pooled, {theirs}"),
                kind: "wasmtime",
                layout,
                artifacts: cwasm(pooled_engine(count), "pooled.cwasm"),
                base: their_base,
            },
            Setup { name: format!("PackFS, pooled, {ours}"), kind: "packfs", layout, artifacts: cache, base: &pack },
        ];
        if writes && count == n {
            rows.insert(
                1,
                Setup {
                    name: format!("wasmtime-wasi p1, `Config::new()`, {theirs}"),
                    kind: "wasmtime-default",
                    layout,
                    artifacts: cwasm(Engine::new(&Config::new()).unwrap(), "default.cwasm"),
                    base: their_base,
                },
            );
        }
        let mut measured: Vec<Vec<Density>> = rows.iter().map(|_| Vec::new()).collect();
        for run in 0..runs {
            for k in 0..rows.len() {
                let i = (k + run) % rows.len();
                let r = &rows[i];
                measured[i].push(sandboxes(&r.name, r.kind, r.layout, &module, &r.artifacts, r.base, count));
            }
        }
        let does = if writes { "writes 64 KiB" } else { "writes nothing" };
        let how = if shared { "one read-only base shared" } else { "a writable copy of the base each" };
        md += &format!(
            "\n{count} sandboxes at once of a {:.1} MB guest ({} MiB data segment; each reads 10 files, {does} and parks; {how}): host memory per sandbox beyond the first, medians of {runs} runs [min–max]\n\n| sandboxes | RSS | anon | file | its writes, in the page cache | its copy of the base | host memory in all | in all, vs first | peak RSS of the process | start of {} |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
            wasm.len() as f64 / 1e6,
            data >> 20,
            count - 1
        );
        let mut first = None;
        for (r, m) in rows.iter().zip(&measured) {
            let med = |f: &dyn Fn(&Density) -> u64| {
                let mut v: Vec<u64> = m.iter().map(f).collect();
                v.sort_unstable();
                (v[v.len() / 2], v[0], v[v.len() - 1])
            };
            let (rss, lo, hi) = med(&|d| d.per[0]);
            let (anon, file, peak) = (med(&|d| d.per[1]).0, med(&|d| d.per[2]).0, med(&|d| d.peak).0);
            let start = proc::median(&m.iter().map(|d| d.start_rest).collect::<Vec<_>>());
            // A real directory's writes and copy are host memory too (the
            // kernel's page cache, or all of it on tmpfs), outside the RSS.
            let real = r.kind != "packfs";
            let written = if real && writes { 64 << 10 } else { 0 };
            let copy = if real && !shared { copy_bytes } else { 0 };
            let all = rss + written + copy;
            let base = *first.get_or_insert(all);
            md += &format!(
                "| {} | {} [{}–{}] | {} | {} | {} | {} | {} | {:.2}x | {:.0} MiB | {} |\n",
                r.name,
                kib(rss),
                kib(lo),
                kib(hi),
                kib(anon),
                kib(file),
                kib(written),
                kib(copy),
                kib(all),
                all as f64 / base.max(1) as f64,
                peak as f64 / (1 << 20) as f64,
                ms(start)
            );
        }
    }
    md
}

/// What one density child measured.
struct Density {
    /// RSS, anon, file and shmem per sandbox beyond the first.
    per: [u64; 4],
    /// The child's peak RSS.
    peak: u64,
    /// How long the other sandboxes took to start and park.
    start_rest: Duration,
}

/// Runs `n` sandboxes of configuration `kind` in a child.
fn sandboxes(
    name: &str,
    kind: &str,
    layout: Layout,
    module: &Path,
    artifacts: &Path,
    base: &Path,
    n: usize,
) -> Density {
    let mut cmd = proc::child("density");
    cmd.args([kind, if layout == Layout::Shared { "shared" } else { "copy" }]);
    cmd.args([module.as_os_str(), artifacts.as_os_str(), base.as_os_str()]).arg(n.to_string());
    let report = tempfile::NamedTempFile::new().unwrap();
    let mut spawner = proc::spawner(&cmd, report.path());
    let mut child = spawner.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let (mut to, mut from) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
    let mut ready = || {
        let mut line = String::new();
        from.read_line(&mut line).unwrap();
        let rss: Vec<u64> = line
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("{name}: {line:?}"))
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect();
        [rss[0], rss[1], rss[2], rss[3]]
    };
    let one = ready();
    let started = Instant::now();
    to.write_all(b"go\n").unwrap();
    let all = ready();
    let start_rest = started.elapsed();
    to.write_all(b"go\n").unwrap();
    drop(to);
    assert!(child.wait().unwrap().success(), "{name}");
    let peak = proc::report(report.path()).maxrss;
    let per = std::array::from_fn(|k| all[k].saturating_sub(one[k]) / (n as u64 - 1));
    Density { per, peak, start_rest }
}

fn kib(bytes: u64) -> String {
    format!("{:.0} KiB", bytes as f64 / 1024.0)
}
