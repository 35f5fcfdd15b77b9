//! Many sandboxes of one module over one base tree, as plugin and
//! serverless hosts run them.
//!
//! - **Instantiate**, in this process: one run is a fresh sandbox over the
//!   base (PackFS: an O(1) overlay of a mapped pack; wasmtime-wasi: the
//!   same tree as a real directory), instantiating a module linked once
//!   and running its `_start`, which opens, reads and closes one file.
//! - **Density**, a child process per configuration: 100 sandboxes of an
//!   interpreter-sized guest (≥ 20 MB of code, a 4 MiB data segment) at
//!   once, each on its own thread and its own copy of the base (PackFS: a
//!   fork of the mapped pack with a `mem` upper; wasmtime-wasi: a real
//!   directory of its own, copied before the child starts). Each reads 10
//!   files, writes 64 KiB and parks in a host call. The parent reads the
//!   child's RSS with 1 sandbox parked and with all of them: per sandbox
//!   is the difference over the other 99.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use packfs_core::pack::write_pack;
use packfs_core::wasi::Access;
use packfs_core::wasi::p1::Wasi;
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_host::load::{Guest, GuestCache};
use packfs_host::p1::HostPlatform;
use packfs_host::{Limits, Pool, Runner};
use wasmtime::{Config, Engine, Module};

use crate::modules::{self, Body};
use crate::peer;
use crate::proc;
use crate::startup::ms;

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

fn pool() -> Pool {
    Pool { instances: 128, ..Pool::default() }
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

/// The guest of both benchmarks: reads `reads` of the base's files,
/// writes 64 KiB to `out` if `write`, then parks if `park`.
fn guest(reads: usize, write: bool, park: bool, code: usize, data: usize) -> Vec<u8> {
    let read: Vec<String> = (0..reads).map(|i| file_name(i * 17 % FILES)).collect();
    modules::command(&Body::Files { read: &read, write: write.then_some("out"), park }, code, data)
}

/// A PackFS sandbox's preview1 state: `root` preopened at `/`.
pub(crate) fn wasi(root: Arc<dyn FileSystem>) -> Wasi {
    Wasi::builder(Box::new(HostPlatform::default())).preopen("/", root, Access::ReadWrite).build().unwrap()
}

/// The instantiate table, as markdown.
pub(crate) fn instantiate(bench: bool) -> String {
    let (warmup, runs) = if bench { (50, 1000) } else { (5, 20) };
    let dir = tempfile::tempdir().unwrap();
    let (pack, tree) = base(dir.path());
    let wasm = guest(1, false, false, 0, 0);
    let base: Arc<dyn FileSystem> = Arc::new(packfs_os::mmap::open_pack(&pack).unwrap());
    type Once<'a> = Box<dyn FnMut() + 'a>;
    let pooled = Engine::new(&Runner::config_pooled(&limits(), &pool())).unwrap();
    let default = Engine::new(&Config::new()).unwrap();
    let wasmtime = |engine: &Engine| -> Once<'_> {
        let pre = peer::linker(engine).instantiate_pre(&Module::new(engine, &wasm).unwrap()).unwrap();
        let tree = tree.clone();
        Box::new(move || peer::run(&pre, &tree))
    };
    let packfs = |runner: Runner, prepared: bool| -> Once<'_> {
        let Guest::Module(module) = runner.load(&wasm).unwrap() else { panic!("not a module") };
        let pre = runner.prepare_module(&module).unwrap();
        let base = base.clone();
        Box::new(move || {
            let wasi = wasi(Arc::new(MemFs::overlay(base.clone()).unwrap()));
            let status =
                if prepared { runner.run_prepared_module(&pre, wasi) } else { runner.run_module(&module, wasi) };
            assert_eq!(status.unwrap(), 0);
        })
    };
    let on_demand = || Runner::new(&Engine::new(&Runner::config()).unwrap()).unwrap().with_limits(limits());
    let mut rows: Vec<(&str, Once<'_>)> = vec![
        ("wasmtime-wasi p1, pooled, `InstancePre`, a real directory", wasmtime(&pooled)),
        ("wasmtime-wasi p1, `Config::new()`, `InstancePre`, a real directory", wasmtime(&default)),
        (
            "PackFS, pooled (`Runner::pooled`), prepared, an overlay of the mapped pack",
            packfs(Runner::pooled(limits(), &pool()).unwrap(), true),
        ),
        ("PackFS, on-demand allocator, prepared", packfs(on_demand(), true)),
        ("PackFS, on-demand allocator, `run_module` (links each run)", packfs(on_demand(), false)),
    ];
    let mut md = format!(
        "\nInstantiate and run a trivial guest (one open, read, close), one sandbox after another: median and p99 of {runs} runs after {warmup}\n\n| sandbox | median | p99 | median vs first |\n|---|--:|--:|--:|\n"
    );
    let mut first = None;
    for (name, run) in &mut rows {
        for _ in 0..warmup {
            run();
        }
        let mut times: Vec<Duration> = (0..runs)
            .map(|_| {
                let began = Instant::now();
                run();
                began.elapsed()
            })
            .collect();
        times.sort_unstable();
        let (median, p99) = (proc::median(&times), times[times.len() * 99 / 100]);
        let base = *first.get_or_insert(median);
        md += &format!(
            "| {name} | {:.0} µs | {:.0} µs | {:.2}x |\n",
            median.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6,
            median.as_secs_f64() / base.as_secs_f64()
        );
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

/// The density child: `density KIND MODULE ARTIFACTS BASE N`, where KIND
/// is `packfs` (MODULE through the guest cache ARTIFACTS, BASE the pack),
/// `wasmtime` or `wasmtime-default` (ARTIFACTS the `.cwasm`, BASE the
/// directory holding `0` to `N-1`, a copy of the tree each). It says
/// `ready` with one sandbox parked, reads a line, starts the rest, says
/// `ready` with all of them parked, reads a line, and lets them finish.
pub(crate) fn child(args: &[String]) -> bool {
    let [kind, module, artifacts, base, n] = args else { return false };
    let n: usize = n.parse().unwrap();
    let park = Arc::new(Park::default());
    let sandbox: Arc<dyn Fn(usize) + Send + Sync> = match kind.as_str() {
        "packfs" => {
            let mut runner = Runner::pooled(limits(), &pool()).unwrap().with_cache(GuestCache::new(artifacts).unwrap());
            let p = park.clone();
            runner.module_linker_mut().func_wrap("bench", "park", move || p.park()).unwrap();
            let Guest::Module(module) = runner.load_file(Path::new(module)).unwrap() else { panic!("not a module") };
            let pre = runner.prepare_module(&module).unwrap();
            let base: Arc<dyn FileSystem> = Arc::new(packfs_os::mmap::open_pack(base).unwrap());
            Arc::new(move |_| {
                let wasi = wasi(Arc::new(MemFs::overlay(base.clone()).unwrap()));
                assert_eq!(runner.run_prepared_module(&pre, wasi).unwrap(), 0);
            })
        }
        "wasmtime" | "wasmtime-default" => {
            let config = if kind == "wasmtime" { Runner::config_pooled(&limits(), &pool()) } else { Config::new() };
            let engine = Engine::new(&config).unwrap();
            let module = peer::deserialize(&engine, Path::new(artifacts));
            let mut linker = peer::linker(&engine);
            let p = park.clone();
            linker.func_wrap("bench", "park", move || p.park()).unwrap();
            let pre = linker.instantiate_pre(&module).unwrap();
            let base = PathBuf::from(base);
            Arc::new(move |i| peer::run(&pre, &base.join(i.to_string())))
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

/// The density tables, as markdown: the guest that writes, on every
/// configuration, and one that writes nothing, on the pooled two.
pub(crate) fn density(bench: bool) -> String {
    let (n, code, data) = if bench { (100, 21 << 20, 4 << 20) } else { (3, 0, 64 << 10) };
    let dir = tempfile::tempdir().unwrap();
    let (pack, tree) = base(dir.path());
    // Every sandbox of wasmtime-wasi needs a directory of its own to write
    // to: a copy of the tree each, made before the child starts.
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
    for writes in [true, false] {
        let wasm = guest(10, writes, true, code, data);
        let at = dir.path().join(if writes { "writes" } else { "reads" });
        std::fs::create_dir(&at).unwrap();
        let module = at.join("guest.wasm");
        std::fs::write(&module, &wasm).unwrap();
        // Compiled once per configuration, before anything is measured.
        let cache = at.join("guests");
        let runner = Runner::pooled(limits(), &pool()).unwrap().with_cache(GuestCache::new(&cache).unwrap());
        runner.load_file(&module).unwrap();
        let cwasm = |config: Config, name: &str| {
            let path = at.join(name);
            std::fs::write(&path, Engine::new(&config).unwrap().precompile_module(&wasm).unwrap()).unwrap();
            path
        };
        let pooled = cwasm(Runner::config_pooled(&limits(), &pool()), "pooled.cwasm");
        let mut rows: Vec<(&str, &str, PathBuf, &Path)> = vec![
            ("wasmtime-wasi p1, pooled, a real directory each", "wasmtime", pooled, &copies),
            ("PackFS, pooled, a fork of the mapped pack each", "packfs", cache, &pack),
        ];
        if writes {
            let default = cwasm(Config::new(), "default.cwasm");
            rows.insert(
                1,
                ("wasmtime-wasi p1, `Config::new()`, a real directory each", "wasmtime-default", default, &copies),
            );
        }
        let does = if writes { "writes 64 KiB" } else { "writes nothing" };
        md += &format!(
            "\n{n} sandboxes at once of a {:.1} MB guest ({} MiB data segment; each reads 10 files, {does} and parks): host memory per sandbox beyond the first\n\n| sandboxes | RSS | anon | file | RSS vs first | its writes, in the page cache | its copy of the base | peak RSS of the process | start of {} |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
            wasm.len() as f64 / 1e6,
            data >> 20,
            n - 1
        );
        let mut first = None;
        for (name, kind, artifacts, base) in &rows {
            let r = sandboxes(name, kind, &module, artifacts, base, n);
            // A real directory's writes and copy are host memory too (the
            // kernel's page cache, or all of it on tmpfs), outside the RSS.
            let real = *kind != "packfs";
            let (written, copy) = if real { (if writes { 64 << 10 } else { 0 }, copy_bytes) } else { (0, 0) };
            let base = *first.get_or_insert(r.per[0]);
            md += &format!(
                "| {name} | {} | {} | {} | {:.2}x | {} | {} | {:.0} MiB | {} |\n",
                kib(r.per[0]),
                kib(r.per[1]),
                kib(r.per[2]),
                r.per[0] as f64 / base.max(1) as f64,
                kib(written),
                kib(copy),
                r.peak as f64 / (1 << 20) as f64,
                ms(r.start_rest)
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
fn sandboxes(name: &str, kind: &str, module: &Path, artifacts: &Path, base: &Path, n: usize) -> Density {
    let mut cmd = proc::child("density");
    cmd.args([kind.as_ref(), module.as_os_str(), artifacts.as_os_str(), base.as_os_str(), n.to_string().as_ref()]);
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
