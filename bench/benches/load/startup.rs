//! Whole-process starts, warm and cold: PackFS's embedding API (and
//! `packfs run` when its release binary is there) against wasmtime 48's
//! own API, each a fresh process that compiles or loads the module,
//! instantiates it over a preopened directory and runs `_start` (which
//! yields once and returns).
//!
//! The children (`--child KIND MODULE [CACHE]`):
//! - `packfs`: `Runner::builder()`, `Runner::load` through a
//!   `GuestCache` in CACHE (none without), a `MemFs` preopen;
//! - `packfs-timeout`: the same with a timeout, so the epoch
//!   interruption is on, no cache;
//! - `wasmtime`: `Config::new()`, with wasmtime's own cache in CACHE
//!   (`Config::cache`, its default settings) or none, `Module::from_file`,
//!   wasmtime-wasi's preview1 over a real directory (`peer.rs`);
//! - `wasmtime-cwasm`: `Module::deserialize_file` of an artifact that
//!   `Engine::precompile_module` wrote: wasmtime's documented fast path
//!   (`wasmtime compile`, then `--allow-precompiled`), the floor of a warm
//!   start and the warm tables' baseline.
//!
//! With a `wasmtime` command (`$WASMTIME`, else `target/wasmtime-cli/bin/
//! wasmtime`: `cargo install wasmtime-cli --version 48.0.8 --locked --root
//! target/wasmtime-cli`), its rows too: `wasmtime run --allow-precompiled`
//! of what `wasmtime compile` wrote (its documented fast path), and
//! `wasmtime run` with its cache (a config file naming the row's own cache
//! directory), against `packfs run`.
//!
//! Each table's rows take turns, run by run. The warm rows run again with
//! their artifacts evicted from the page cache first (`posix_fadvise`
//! `DONTNEED` after an `fsync`: dropping every cache takes root).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use packfs_core::MemFs;
use packfs_host::load::GuestCache;
use packfs_host::{Limits, Runner};
use wasmtime::{Cache, CacheConfig, Config, Engine, Module};

use crate::peer;
use crate::proc::{self, Run, ms};
use crate::sandboxes;

/// Runs child `kind`; false when `kind` is not one of these.
pub(crate) fn child(kind: &str, args: &[String]) -> bool {
    let module = Path::new(&args[0]);
    let cache = args.get(1).map(PathBuf::from);
    let mut split = proc::Split::new();
    match kind {
        "packfs" | "packfs-timeout" => {
            let limits =
                Limits { timeout: (kind == "packfs-timeout").then_some(Duration::from_secs(600)), ..Limits::default() };
            let mut builder = Runner::builder().limits(limits);
            if let Some(dir) = cache {
                builder = builder.cache(GuestCache::new(dir).unwrap());
            }
            split.mark("`GuestCache::new`");
            let runner = builder.build().unwrap();
            split.mark("`RunnerBuilder::build` (the engine, preview1 linked)");
            let guest = runner.load(module).unwrap();
            split.mark("`Runner::load`");
            assert_eq!(runner.run(&guest, sandboxes::sandbox(Arc::new(MemFs::new()))).unwrap(), 0);
            split.mark("instantiate and run");
        }
        "wasmtime" | "wasmtime-cwasm" => {
            let mut config = Config::new();
            if let (Some(dir), "wasmtime") = (&cache, kind) {
                let mut c = CacheConfig::new();
                c.with_directory(dir);
                config.cache(Some(Cache::new(c).unwrap()));
            }
            let engine = Engine::new(&config).unwrap();
            split.mark("`Engine::new`");
            let module = if kind == "wasmtime" {
                let module = Module::from_file(&engine, module).unwrap();
                split.mark("`Module::from_file`");
                module
            } else {
                let module = peer::deserialize(&engine, module);
                split.mark("`Module::deserialize_file`");
                module
            };
            peer::run(&peer::linker(&engine).instantiate_pre(&module).unwrap(), &std::env::temp_dir());
            split.mark("link, instantiate and run");
        }
        _ => return false,
    }
    split.write();
    true
}

/// One configuration's command, given a cache directory of its own.
type Row = (&'static str, Box<dyn Fn(&Path, &Path) -> std::process::Command>);

/// The `wasmtime` command and the artifact its `wasmtime compile` made.
struct Cli {
    bin: PathBuf,
    cwasm: PathBuf,
}

impl Cli {
    /// The command, if there is one, with `module` compiled by it into `dir`.
    fn find(module: &Path, dir: &Path) -> Option<Cli> {
        let bin = std::env::var_os("WASMTIME")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/wasmtime-cli/bin/wasmtime"));
        if !bin.exists() {
            return None;
        }
        let cwasm = dir.join("cli.cwasm");
        let status =
            std::process::Command::new(&bin).arg("compile").arg("-o").arg(&cwasm).arg(module).status().unwrap();
        assert!(status.success(), "wasmtime compile {}", module.display());
        Some(Cli { bin, cwasm })
    }

    /// `wasmtime run` of `module` with a preopen at `/`, its cache in `cache`
    /// (a config file there names it), or off (`None`: the artifact needs none).
    fn run(&self, module: &Path, cache: Option<&Path>) -> std::process::Command {
        let mut c = std::process::Command::new(&self.bin);
        c.arg("run");
        match cache {
            Some(dir) => {
                std::fs::create_dir_all(dir).unwrap();
                let config = dir.join("config.toml");
                std::fs::write(&config, format!("[cache]\ndirectory = {:?}\n", dir.join("entries"))).unwrap();
                c.arg("-C").arg(format!("cache-config={}", config.display()));
            }
            None => {
                c.args(["-C", "cache=n", "--allow-precompiled"]);
            }
        }
        c.arg("--dir").arg(format!("{}::/", std::env::temp_dir().display())).arg(module);
        c
    }
}

/// The warm rows: the first is the baseline, and the first two are split.
fn rows_warm(packfs_bin: Option<&Path>, cwasm: &Path, cli: Option<&Arc<Cli>>, evicting: bool) -> Vec<Row> {
    let cwasm = cwasm.to_owned();
    let mut rows: Vec<Row> = vec![
        (
            "wasmtime 48 `Module::deserialize_file` of a precompiled artifact",
            Box::new(move |_, _| with(proc::child("wasmtime-cwasm"), [&cwasm])),
        ),
        ("PackFS API (`Runner::load`), its cache", Box::new(|m, c| with(proc::child("packfs"), [m, c]))),
    ];
    if let Some(bin) = packfs_bin {
        let bin = bin.to_owned();
        rows.push(("`packfs run`, its cache", Box::new(move |m, c| packfs_run(&bin, m, c))));
    }
    if let Some(cli) = cli.cloned() {
        rows.push((
            "wasmtime 48 CLI, `wasmtime run --allow-precompiled` of `wasmtime compile`'s artifact",
            Box::new(move |_, _| cli.run(&cli.cwasm, None)),
        ));
    }
    if evicting {
        return rows;
    }
    if let Some(cli) = cli.cloned() {
        rows.push(("wasmtime 48 CLI, `wasmtime run`, its cache", Box::new(move |m, c| cli.run(m, Some(c)))));
    }
    rows.push((
        "wasmtime 48 API, its built-in cache (`Config::cache`: hashes the module every start)",
        Box::new(|m, c| with(proc::child("wasmtime"), [m, c])),
    ));
    if let Some(py) = python() {
        rows.push(("wasmtime-py (`$LOAD_PY`), its cache", Box::new(move |m, c| with(py_child(&py), [m, c]))));
    }
    rows
}

/// `$LOAD_PY`: a Python with wasmtime-py, for its rows.
fn python() -> Option<PathBuf> {
    std::env::var_os("LOAD_PY").map(PathBuf::from)
}

fn py_child(python: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(python);
    c.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("load_py.py"));
    c
}

/// The cold rows: cache-empty against cache-empty first, then without one.
fn rows_cold(packfs_bin: Option<&Path>, cli: Option<&Arc<Cli>>) -> Vec<Row> {
    let mut rows: Vec<Row> = vec![
        ("wasmtime 48, its cache empty", Box::new(|m, c| with(proc::child("wasmtime"), [m, c]))),
        ("PackFS, its cache empty", Box::new(|m, c| with(proc::child("packfs"), [m, c]))),
    ];
    if let Some(bin) = packfs_bin {
        let bin = bin.to_owned();
        rows.push(("`packfs run`, its cache empty", Box::new(move |m, c| packfs_run(&bin, m, c))));
    }
    if let Some(cli) = cli.cloned() {
        rows.push(("wasmtime 48 CLI, `wasmtime run`, its cache empty", Box::new(move |m, c| cli.run(m, Some(c)))));
    }
    rows.push((
        "wasmtime 48 `Module::new`, `Config::new()`, no cache",
        Box::new(|m, _| with(proc::child("wasmtime"), [m])),
    ));
    rows.push(("PackFS, no cache", Box::new(|m, _| with(proc::child("packfs"), [m]))));
    rows.push((
        "PackFS with a timeout (epoch interruption), no cache",
        Box::new(|m, _| with(proc::child("packfs-timeout"), [m])),
    ));
    if let Some(py) = python() {
        rows.push(("wasmtime-py (`$LOAD_PY`), no cache", Box::new(move |m, _| with(py_child(&py), [m]))));
    }
    rows
}

fn with<const N: usize>(mut c: std::process::Command, args: [&Path; N]) -> std::process::Command {
    c.args(args);
    c
}

fn packfs_run(bin: &Path, module: &Path, cache: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin);
    c.args(["run", "--mount", "/=mem"]).arg(module).env("PACKFS_CACHE_DIR", cache);
    c
}

/// The warm and cold tables for each module, as markdown.
pub(crate) fn run(bench: bool, modules: &[(&str, PathBuf)], packfs_bin: Option<&Path>) -> String {
    let env =
        |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(if bench { d } else { 1 });
    let (warm_runs, cold_runs) = (env("LOAD_RUNS", 11), env("LOAD_COLD_RUNS", 5));
    let mut md = String::new();
    for (name, module) in modules {
        let size = std::fs::metadata(module).unwrap().len();
        let dir = tempfile::tempdir().unwrap();
        let cwasm = dir.path().join("module.cwasm");
        let engine = Engine::new(&Config::new()).unwrap();
        std::fs::write(&cwasm, engine.precompile_module(&std::fs::read(module).unwrap()).unwrap()).unwrap();
        let cli = if bench { Cli::find(module, dir.path()).map(Arc::new) } else { None };
        for evicting in [false, true] {
            // Each cache filled once, and each row run once more 2 s later
            // before it is timed, so that no timed run is a cache's first
            // hit (whose file identity is recorded only once the module is
            // 2 s old).
            let warm = rows_warm(packfs_bin, &cwasm, cli.as_ref(), evicting);
            let caches: Vec<PathBuf> = (0..warm.len()).map(|i| dir.path().join(format!("warm-{i}"))).collect();
            if !evicting {
                for ((_, row), cache) in warm.iter().zip(&caches) {
                    proc::measure(&row(module, cache));
                }
                std::thread::sleep(Duration::from_millis(2100));
            }
            for ((_, row), cache) in warm.iter().zip(&caches) {
                proc::measure(&row(module, cache));
            }
            let mut runs = vec![Vec::new(); warm.len()];
            for _ in 0..warm_runs {
                for (i, (_, row)) in warm.iter().enumerate() {
                    if evicting {
                        evict(&[module, &cwasm, &caches[i]]);
                        if let Some(cli) = &cli {
                            evict(&[&cli.cwasm]);
                        }
                    }
                    runs[i].push(proc::measure(&row(module, &caches[i])));
                }
            }
            let title = if evicting {
                format!("{name}: warm, the module and its artifacts evicted from the page cache before each run")
            } else {
                format!("{name}, {:.1} MB: warm", size as f64 / 1e6)
            };
            md += &table(&format!("{title} ({warm_runs} runs)"), &warm, &runs);
            if !evicting {
                for i in 0..2 {
                    md += &split(warm[i].0, &warm[i].1, module, &caches[i], warm_runs);
                }
            }
        }
        if cold_runs == 0 {
            continue;
        }
        let cold = rows_cold(packfs_bin, cli.as_ref());
        let mut runs = vec![Vec::new(); cold.len()];
        for k in 0..cold_runs {
            for (i, (_, row)) in cold.iter().enumerate() {
                let cache = dir.path().join(format!("cold-{k}-{i}"));
                runs[i].push(proc::measure(&row(module, &cache)));
            }
        }
        md += &table(&format!("{name}: cold ({cold_runs} runs)"), &cold, &runs);
    }
    md
}

/// Drops `paths` (files, or directories walked) from the page cache: each
/// file synced, so that every page is clean, then `POSIX_FADV_DONTNEED`.
#[allow(unsafe_code, reason = "posix_fadvise(2), which std does not give")]
fn evict(paths: &[&Path]) {
    for path in paths {
        if path.is_dir() {
            let entries: Vec<PathBuf> = std::fs::read_dir(path).unwrap().map(|e| e.unwrap().path()).collect();
            evict(&entries.iter().map(PathBuf::as_path).collect::<Vec<_>>());
        } else if let Ok(file) = std::fs::File::open(path) {
            file.sync_all().unwrap();
            use std::os::fd::AsRawFd;
            // SAFETY: a valid descriptor; the call only advises the kernel.
            let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
            assert_eq!(r, 0, "posix_fadvise {}", path.display());
        }
    }
}

/// Where a warm row's time goes, medians of `runs`: the phases the child
/// marks, and the rest (exec, loading the binary, exit).
fn split(
    name: &str,
    row: &dyn Fn(&Path, &Path) -> std::process::Command,
    module: &Path,
    cache: &Path,
    runs: usize,
) -> String {
    let file = tempfile::NamedTempFile::new().unwrap();
    let mut walls = Vec::new();
    let mut phases: Vec<(String, Vec<Duration>)> = Vec::new();
    for _ in 0..runs {
        let mut cmd = row(module, cache);
        cmd.env("LOAD_SPLIT", file.path());
        walls.push(proc::measure(&cmd).wall);
        for (k, (phase, d)) in proc::read_split(file.path()).into_iter().enumerate() {
            if phases.len() <= k {
                phases.push((phase, Vec::new()));
            }
            phases[k].1.push(d);
        }
    }
    let inside: Duration = phases.iter().map(|(_, d)| proc::median(d)).sum();
    let wall = proc::median(&walls);
    let mut parts: Vec<String> = phases.iter().map(|(p, d)| format!("{p} {}", ms(proc::median(d)))).collect();
    parts.push(format!("the rest (exec, loading the binary, exit) {}", ms(wall.saturating_sub(inside))));
    format!("\n{name}, where the time goes: {}.\n", parts.join(", "))
}

/// One table, each row against the first.
fn table(title: &str, rows: &[Row], runs: &[Vec<Run>]) -> String {
    let mut md = format!(
        "\n{title}: medians [min–max]\n\n| process | wall | CPU | peak RSS | wall vs first | RSS vs first |\n|---|--:|--:|--:|--:|--:|\n"
    );
    let base = proc::medians(&runs[0]);
    for ((name, _), runs) in rows.iter().zip(runs) {
        let m = proc::medians(runs);
        let walls = runs.iter().map(|r| r.wall);
        let (lo, hi) = (walls.clone().min().unwrap(), walls.max().unwrap());
        let rss = runs.iter().map(|r| r.maxrss);
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        let (rlo, rhi) = (mib(rss.clone().min().unwrap()), mib(rss.max().unwrap()));
        md += &format!(
            "| {name} | {} [{}–{}] | {} | {:.1} MiB [{rlo:.1}–{rhi:.1}] | {:.2}x | {:.2}x |\n",
            ms(m.wall),
            ms(lo),
            ms(hi),
            ms(m.cpu),
            mib(m.maxrss),
            m.wall.as_secs_f64() / base.wall.as_secs_f64(),
            m.maxrss as f64 / base.maxrss as f64
        );
    }
    md
}

/// The lines where a runner's engine of p1 modules and 0.2 components
/// differs from `Config::new()`.
pub(crate) fn config_diff() -> String {
    let runner = Runner::builder().build().unwrap();
    let ours = format!("{:#?}", runner.engine(packfs_host::load::Kind::P1).config());
    let theirs = format!("{:#?}", Config::new());
    let theirs: std::collections::HashSet<&str> = theirs.lines().collect();
    let diff: Vec<&str> = ours.lines().filter(|l| !theirs.contains(l)).map(str::trim).collect();
    format!(
        "The runner's engine (p1, 0.2) against `Config::new()`: {}",
        if diff.is_empty() { "the same".into() } else { diff.join(" ") }
    )
}
