//! `packfs run [--mount GUEST_PATH=SOURCE]... [--env K=V]... [--save PATH]
//! MODULE.wasm [ARGS]...`: run a WASI command guest on a namespace of
//! PackFS mounts.
//!
//! Each `--mount` puts a filesystem ([`Source`](crate::spec::Source)) at a
//! guest path. The mounts form one [`MountTable`] — the `/` mount its root
//! (an empty in-memory tree when none is given), the others mounted
//! shallowest first, so they may nest — preopened at `/` for the guest.
//! Mount points need not exist: missing directories on the way to one are
//! created, as `mkdir -p` would, where the mount holding them is writable.
//!
//! Without any `--mount` the guest has no preopens, as with `wasmtime run`
//! without `--dir`.
//!
//! A p1 module runs over PackFS's own preview1, a component over
//! `wasi:filesystem` 0.2. The guest gets the arguments after MODULE (its
//! `argv[0]` is MODULE as given), the `--env` variables and nothing of the
//! host's environment, and this process's stdin, stdout and stderr. Its
//! exit status becomes packfs's. `--save` then writes the namespace as the
//! guest left it — every mount, as the guest saw it — to a pack, published
//! atomically.
//!
//! MODULE is loaded on a thread of its own while the mounts are set up,
//! so a cold start compiles it meanwhile; past a second of waiting for
//! it, a spinner on a terminal says so (`compile.rs`).
//!
//! Limits: `--max-memory` bounds the guest's linear memory, `--timeout` its
//! wall-clock time; `mem` and `PACK+mem` mounts take `:max-bytes=N` and
//! `:max-inodes=N` (the guest then sees `EDQUOT`); the `dir:` and `dir-ro:`
//! mounts share one [`FdBudget`](packfs_os::dir::FdBudget) of host
//! descriptors for the guest's open files, sized after the soft
//! `RLIMIT_NOFILE` is raised to the hard one, so that packfs keeps
//! descriptors of its own. Each limit hit is said on stderr; the first two
//! end the run with their own status.

mod args;
mod compile;
mod namespace;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use packfs_core::FileSystem;
use packfs_core::deadline::Deadline;
use packfs_core::mount::MountTable;
use packfs_core::pack::PackStats;
use packfs_host::Access;
use packfs_host::load::{GuestCache, Kind};
use packfs_host::{Limits, Prepared, RunError, Runner, Sandbox};
use packfs_os::publish::write_atomic;
use packfs_remote::Location;
use packfs_remote::trace::{MAX_TRACE_BYTES, Trace};

pub(crate) use args::Args;
use namespace::Namespace;

use crate::common::{Packs, bytes};
use crate::packing::Packing;
use crate::timeout::{Backstop, TIMED_OUT, Timed};

/// Exit status when the guest traps, as wasmtime's own command gives
/// (128 + SIGABRT).
const TRAPPED: u8 = 134;
/// Exit status when the guest outgrows `--max-memory` (128 + SIGKILL, as
/// a process the kernel's OOM killer ends).
const OUT_OF_MEMORY: u8 = 137;

/// `stats`: say on stderr, once the guest has run, how it was loaded.
pub(crate) fn run(mut args: Args, packs: &Packs, stats: bool) -> Result<ExitCode> {
    raise_nofile_limit();
    let (module, argv) = command(&mut args)?;
    let shown = module.display().to_string();
    // Its errors come first; it is loaded (not read, on a warm start) below.
    let probe = compile::probe(&module).with_context(|| shown.clone())?;
    let max_memory = match args.max_memory {
        Some(n) => Some(usize::try_from(n).context("--max-memory is larger than this machine's address space")?),
        None => None,
    };
    let limits = Limits { max_memory, timeout: args.timeout };
    let mut builder = Runner::builder().limits(limits);
    if let Some(cache) = guest_cache(args.no_cache, args.guest_cache_size) {
        builder = builder.cache(cache);
    }
    let runner = Arc::new(builder.build().map_err(|e| anyhow!("setting up wasmtime: {e}"))?);
    // The guest compiles (on a cold start) while the mounts are set up.
    let loading = compile::start(Arc::clone(&runner), module, shown.clone(), probe.size);

    if let Some(from) = &args.prefetch {
        // Before the mounts open: each asks for its traced chunks at once.
        packs.prefetch(read_trace(packs, from).with_context(|| format!("--prefetch {}", from.display()))?);
    } else if !args.no_prefetch {
        packs.find_traces();
    }
    // No mounts, no preopens (as `wasmtime run` without `--dir`).
    let namespace = if args.mounts.is_empty() { None } else { Some(Namespace::build(&args.mounts, packs)?) };
    let (guest, loaded) = loading.wait().map_err(|e| anyhow!("{}", one_line(&e.to_string())).context(shown.clone()))?;
    // Linked once: a guest that cannot run here says so before it starts.
    let prepared =
        runner.prepare(&guest).map_err(|e| anyhow!("{}", one_line(&e.to_string())).context(shown.clone()))?;

    let root = namespace.as_ref().map(|ns| ns.table.clone() as Arc<dyn FileSystem>);
    // The run's deadline: the guest's, and then its --save's.
    let deadline = args.timeout.map(|t| Deadline::new(std::time::Instant::now() + t));
    let outcome = run_guest(&runner, &prepared, guest.kind() != Kind::P1, &argv, &args, root);
    if let Some(ns) = &namespace {
        ns.report_limits();
    }
    if stats {
        eprintln!("{}", loaded.line());
    }
    let status = match outcome {
        Ok(status) => status,
        Err(e) => return failed(&e, &shown),
    };
    if let Some(to) = &args.record_trace {
        let trace = packfs_remote::RemoteSource::record(&packs.remote_packs());
        write_trace(packs, to, trace.to_text()).with_context(|| format!("--record-trace {}", to.display()))?;
    }
    if let (Some(out), Some(ns)) = (&args.save, &namespace)
        && !save_within(&ns.table, out, &args, deadline.as_ref())?
    {
        return Ok(ExitCode::from(TIMED_OUT));
    }
    // Journals whose log outgrew their tree are checkpointed now, so that
    // the next run's open reads little. (A run that ends early leaves that
    // to the next open.)
    if let Some(ns) = namespace {
        ns.close()?;
    }
    // `Runner` gives the POSIX status: 0 to 255.
    Ok(ExitCode::from(status as u8))
}

/// MODULE and the guest's `argv` (MODULE as given, then its arguments).
fn command(args: &mut Args) -> Result<(PathBuf, Vec<String>)> {
    let mut command = std::mem::take(&mut args.command).into_iter();
    let module = PathBuf::from(command.next().context("no MODULE given")?);
    let mut argv = vec![utf8(module.clone().into_os_string(), "MODULE")?];
    for arg in command {
        argv.push(utf8(arg, "a guest argument")?);
    }
    if args.save.is_some() && args.mounts.is_empty() {
        bail!("--save needs a --mount: without one the guest has no filesystem to save");
    }
    Ok((module, argv))
}

/// Runs `guest` with `argv`, `--env`, this process's stdio and `root`
/// preopened at `/`.
fn run_guest(
    runner: &Runner,
    guest: &Prepared,
    component: bool,
    argv: &[String],
    args: &Args,
    root: Option<Arc<dyn FileSystem>>,
) -> Result<i32, RunError> {
    let mut sandbox = Sandbox::new().args(argv).inherit_stdio();
    for (k, v) in &args.env {
        sandbox = sandbox.env(k, v);
    }
    if let Some(root) = root {
        sandbox = sandbox.preopen("/", root, Access::ReadWrite);
    }
    let _backstop = args.timeout.filter(|_| component).map(|t| Backstop::arm(t, argv[0].clone()));
    runner.run_prepared(guest, sandbox)
}

/// A run that did not end with the guest's exit: said in one line, with
/// its own status.
fn failed(e: &RunError, shown: &str) -> Result<ExitCode> {
    let (msg, code) = match e {
        RunError::Timeout(_) => (e.to_string(), TIMED_OUT),
        RunError::MemoryLimit(_) => (e.to_string(), OUT_OF_MEMORY),
        RunError::Instantiate(_) | RunError::Sandbox(_) => bail!("{shown}: {}", one_line(&e.to_string())),
        RunError::Trap(t) => {
            let why = match t.downcast_ref::<wasmtime::Trap>() {
                Some(trap) => trap.to_string(),
                None => one_line(&format!("{t:?}")),
            };
            (format!("the guest trapped: {why}"), TRAPPED)
        }
        _ => (one_line(&e.to_string()), TRAPPED),
    };
    eprintln!("packfs: {shown}: {msg}");
    Ok(ExitCode::from(code))
}

/// `--save`: the namespace as the guest left it, written to `out` within
/// what is left of the run's `deadline` (an hour's worth of it, a sparse
/// file of 8 EiB say, must not hold the host past `--timeout` either).
/// False when the time ran out first, having said so.
fn save_within(table: &MountTable, out: &Path, args: &Args, deadline: Option<&Arc<Deadline>>) -> Result<bool> {
    let saved = match deadline {
        Some(d) => d.scope(|| save(table, out, &args.packing)),
        None => save(table, out, &args.packing),
    };
    if deadline.is_some_and(|d| d.passed()) && saved.is_err() {
        let limit = args.timeout.unwrap_or_default();
        eprintln!("packfs: saving to {}: not done within the time limit of {limit:?}; nothing saved", out.display());
        return Ok(false);
    }
    let stats = saved.with_context(|| format!("saving to {}", out.display()))?;
    eprintln!(
        "saved {}: {} entries, {} of file content, {} pack",
        out.display(),
        stats.dirents,
        bytes(stats.file_bytes),
        bytes(stats.pack_len)
    );
    Ok(true)
}

/// The cache of compiled guests bounded to `limit` bytes, unless
/// `--no-cache` or a limit of 0. One that cannot be used only costs time.
fn guest_cache(no_cache: bool, limit: u64) -> Option<GuestCache> {
    if no_cache || limit == 0 {
        return None;
    }
    match GuestCache::open_default()? {
        Ok(cache) => Some(cache.with_limit(limit)),
        Err(e) => {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                eprintln!("packfs: not caching compiled modules: {e}");
            }
            None
        }
    }
}

/// Raises the soft `RLIMIT_NOFILE` to the hard one, as servers do: the
/// low soft default (1024) protects programs using `select(2)`, which
/// packfs does not, and the `dir:` mounts' budget is sized from it. Left
/// as it is if that fails.
fn raise_nofile_limit() {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut nofile = getrlimit(Resource::Nofile);
    // An unlimited hard limit is more than Linux takes (`nr_open`).
    if nofile.maximum.is_some() && nofile.current != nofile.maximum {
        nofile.current = nofile.maximum;
        let _ = setrlimit(Resource::Nofile, nofile);
    }
}

/// A trace from a file or a URL.
fn read_trace(packs: &Packs, from: &Path) -> Result<Trace> {
    let text = match from.to_str().and_then(Location::parse) {
        Some(location) => packfs_remote::read_object(&location?, &packs.remote_options().net, MAX_TRACE_BYTES)?,
        None => {
            let file = std::fs::File::open(from)?;
            let mut text = Vec::new();
            std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_TRACE_BYTES + 1), &mut text)?;
            if text.len() as u64 > MAX_TRACE_BYTES {
                bail!("larger than a trace can be");
            }
            text
        }
    };
    Ok(Trace::parse(std::str::from_utf8(&text).context("not text")?)?)
}

/// Writes a trace to a file (atomically) or a URL.
fn write_trace(packs: &Packs, to: &Path, text: String) -> Result<()> {
    match to.to_str().and_then(Location::parse) {
        Some(location) => packfs_remote::write_object(&location?, &packs.remote_options().net, text.into_bytes())?,
        None => write_atomic(to, |f| std::io::Write::write_all(f, text.as_bytes()))?,
    }
    Ok(())
}

fn utf8(s: OsString, what: &str) -> Result<String> {
    s.into_string().map_err(|s| anyhow!("{}: {what} must be UTF-8", Path::new(&s).display()))
}

/// Writes the namespace as a pack to `out`, atomically.
fn save(table: &MountTable, out: &Path, packing: &Packing) -> Result<PackStats> {
    // The guest has exited: nothing changes the namespace while it is walked.
    Ok(write_atomic(out, |file| packing.options().write(&Timed(table as &dyn FileSystem), file))?)
}

/// A possibly multi-line message (wasmtime's) as one line.
fn one_line(s: &str) -> String {
    s.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_messages() {
        assert_eq!(
            one_line("error while executing:\n    0: f\n\nCaused by:\n  trap"),
            "error while executing:; 0: f; Caused by:; trap"
        );
    }
}
