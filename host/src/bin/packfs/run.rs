//! `packfs run [--mount GUEST_PATH=SOURCE]... [--env K=V]... [--save PATH]
//! MODULE.wasm [ARGS]...`: run a WASI command guest on a namespace of
//! PackFS mounts.
//!
//! Each `--mount` puts a filesystem ([`Source`]) at a guest path. The
//! mounts form one [`MountTable`] — the `/` mount its root (an empty
//! in-memory tree when none is given), the others mounted shallowest first,
//! so they may nest — preopened at `/` for the guest. Mount points need not
//! exist: missing directories on the way to one are created, as `mkdir -p`
//! would, where the mount holding them is writable.
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
//! Limits: `--max-memory` bounds the guest's linear memory, `--timeout`
//! its wall-clock time; `mem` and `PACK+mem` mounts take `:max-bytes=N`
//! and `:max-inodes=N` (the guest then sees `EDQUOT`); the `dir:` and
//! `dir-ro:` mounts share one [`FdBudget`] of host descriptors for the
//! guest's open files, sized after the soft `RLIMIT_NOFILE` is raised to
//! the hard one, so that packfs keeps descriptors of its own. Each limit
//! hit is said on stderr; the first two end the run with their own
//! status.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use packfs_core::mem::Limits;
use packfs_core::mount::MountTable;
use packfs_core::pack::{PackStats, ReadOptions};
use packfs_core::wasi::Access;
use packfs_core::wasi::deadline::Deadline;
use packfs_core::wasi::p1::Wasi;
use packfs_core::{Error, FileSystem, FileType, MemFs, resolve};
use packfs_host::load::{Guest, GuestCache};
use packfs_host::p1::{HostPlatform, Inherit};
use packfs_host::wasi::PackFsCtx;
use packfs_host::{Limits as RunLimits, RunError, Runner};
use packfs_os::dir::{DirFs, FdBudget};
use packfs_os::journal::{Journal, SyncPolicy};
use packfs_os::publish::write_atomic;
use packfs_remote::Location;
use packfs_remote::trace::{MAX_TRACE_BYTES, Trace};

use crate::common::{bytes, open_pack, remote_options, remote_packs, set_prefetch};
use crate::deadline::{Backstop, Timed};
use crate::packing::Packing;
use crate::spec::{LimitsShown, MountSpec, Source, parse_bytes, parse_env, parse_seconds};

/// Exit status when the guest traps, as wasmtime's own command gives
/// (128 + SIGABRT).
const TRAPPED: u8 = 134;
/// Exit status when `--timeout` ends the guest, as `timeout(1)` gives.
pub(crate) const TIMED_OUT: u8 = 124;
/// Exit status when the guest outgrows `--max-memory` (128 + SIGKILL, as
/// a process the kernel's OOM killer ends).
const OUT_OF_MEMORY: u8 = 137;

#[derive(Debug, clap::Args)]
#[command(after_help = "SOURCE is one of:\n  \
    PACK          a pack, read-only: a file, or an s3://BUCKET/KEY or http(s):// URL, read lazily\n  \
    PACK+mem      an in-memory overlay over a pack: reads from the pack, changes in memory\n  \
    mem           an empty in-memory tree\n  \
    mem:LIMITS, PACK+mem:LIMITS   as above, with LIMITS: max-bytes=N,max-inodes=N (suffixes k, M, G: \
    powers of 1024 for bytes, of 1000 for inodes); past one the guest gets EDQUOT\n  \
    dir:PATH      a host directory, read-write\n  \
    dir-ro:PATH   a host directory, read-only\n  \
    journal:DIR   an in-memory tree kept durable by a write-ahead log in DIR (created when missing)\n  \
    journal:DIR:LIMITS   as above, with mem's LIMITS on the tree in memory\n\
    Prefix ./ to a pack file named like a keyword: ./mem, ./dir:x.\n\n\
    Without any --mount the guest has no preopens.\n\n\
    dir: and dir-ro: mounts together hold at most min(half the soft RLIMIT_NOFILE, 4096) host descriptors \
    for the guest's open files and directories (packfs first raises the soft limit to the hard one); an \
    open past them fails, and packfs and the other mounts go on.\n\n\
    What the limits bound, in all: the guest's linear memory (--max-memory); each mem mount's content, \
    names and inodes as the host memory they take (max-bytes, max-inodes); its descriptors (at most \
    65,536, each holding at most one name of a listing); its time, a host call it is blocked in included \
    (a sleep, stdin, a full stdout, a remote fetch: --timeout); its dir: mounts' host descriptors (above); \
    remote data: each chunk fetched once and kept for the run, the shared cache at most --cache-size.\n\n\
    Exit status: the guest's (a p1 module's exit code, modulo 256; a p2 component's 0 or 1 unless it \
    exits with wasi:cli/exit.exit-with-code); 134 if it traps; 124 past --timeout; 137 past \
    --max-memory; 2 if packfs fails (a bad argument, a missing file, a guest that cannot run here, a \
    failed --save).")]
pub(crate) struct Args {
    /// Mount SOURCE at GUEST_PATH (repeatable; mounts may nest). Without a
    /// mount at `/`, the root is an empty in-memory tree.
    #[arg(long = "mount", value_name = "GUEST_PATH=SOURCE")]
    mounts: Vec<MountSpec>,
    /// Set a variable in the guest's environment (repeatable); the guest
    /// sees no other.
    #[arg(long = "env", value_name = "K=V", value_parser = parse_env)]
    env: Vec<(String, String)>,
    /// When the guest exits (with any status), write the whole namespace as
    /// it left it to a pack at PATH, atomically. Not after a trap.
    #[arg(long, value_name = "PATH")]
    save: Option<PathBuf>,
    /// How `--save` writes its pack.
    #[command(flatten)]
    packing: Packing,
    /// Most bytes of linear memory the guest may grow to (suffixes k, M, G:
    /// powers of 1024).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    max_memory: Option<u64>,
    /// Most wall-clock time the guest may run, in seconds (fractions
    /// allowed).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    timeout: Option<std::time::Duration>,
    /// Fetch ahead, while the guest runs, the chunks of remote packs that
    /// TRACE lists (a file, or an s3:// or http(s):// URL; written by
    /// --record-trace). What it does not list is fetched when read.
    #[arg(long, value_name = "TRACE")]
    prefetch: Option<PathBuf>,
    /// When the guest exits, write to TRACE (a file, or an s3:// or
    /// http(s):// URL) which chunks of remote packs it read, in the order
    /// it first read them: what --prefetch fetches ahead on the next run.
    #[arg(long, value_name = "TRACE")]
    record_trace: Option<PathBuf>,
    /// Compile the guest afresh instead of using the cache of compiled
    /// guests ($PACKFS_CACHE_DIR, else $XDG_CACHE_HOME/packfs, else
    /// ~/.cache/packfs).
    #[arg(long)]
    no_cache: bool,
    /// The guest — a WASI p1 module or a p2 component — and its arguments.
    /// Everything after MODULE goes to the guest.
    #[arg(value_name = "MODULE.wasm [ARGS]", required = true, num_args = 1.., trailing_var_arg = true,
          allow_hyphen_values = true)]
    command: Vec<OsString>,
}

/// An opened mount: its filesystem, and what must live as long as it.
struct Opened {
    fs: Arc<dyn FileSystem>,
    read_only: bool,
    /// The in-memory tree behind a mount with limits, to report on.
    limited: Option<Arc<MemFs>>,
    /// The journal writing `fs`'s changes to disk.
    _journal: Option<Journal>,
}

/// How a guest's packs are read: at random and again, so with the core's
/// chunk cache; every read checked.
fn guest_reads() -> ReadOptions {
    ReadOptions::new().verify_on_read(true)
}

/// `dir_fds`: what the fds of a host directory's open handles count
/// against.
fn open_source(source: &Source, dir_fds: &FdBudget) -> Result<Opened> {
    let plain = |fs: Arc<dyn FileSystem>, read_only| Opened { fs, read_only, limited: None, _journal: None };
    let limited = |fs: MemFs| {
        let fs = Arc::new(fs);
        let has_limits = fs.limits() != Limits::default();
        Opened { fs: fs.clone(), read_only: false, limited: has_limits.then_some(fs), _journal: None }
    };
    Ok(match source {
        Source::Mem(limits) => limited(MemFs::with_options(*limits, packfs_core::system_clock())),
        Source::Pack(path) => plain(Arc::new(open_pack(path, guest_reads())?), true),
        Source::PackOverlay(path, limits) => {
            let pack = Arc::new(open_pack(path, guest_reads())?);
            let overlay = MemFs::overlay_with_options(pack, *limits, packfs_core::system_clock())
                .with_context(|| format!("{}: mounting an overlay", path.display()))?;
            limited(overlay)
        }
        Source::Dir { path, read_only } => {
            let shown = path.display();
            let meta = std::fs::metadata(path).with_context(|| format!("{shown}"))?;
            if !meta.is_dir() {
                bail!("{shown}: not a directory");
            }
            let fs = DirFs::open(path, *read_only).with_context(|| format!("{shown}"))?;
            plain(Arc::new(fs.with_budget(dir_fds.clone())), *read_only)
        }
        Source::Journal(dir, limits) => {
            let journal = Journal::open(dir, SyncPolicy::EveryOp, *limits)
                .with_context(|| format!("journal {}", dir.display()))?;
            let limited = (*limits != Limits::default()).then(|| journal.fs().clone());
            Opened { fs: journal.fs().clone(), read_only: false, limited, _journal: Some(journal) }
        }
    })
}

/// The guest's namespace: every mount in one table.
struct Namespace {
    table: Arc<MountTable>,
    /// Each mount's guest path and what was opened for it.
    opened: Vec<(String, Opened)>,
    /// Shared by every host directory mounted: one guest's open files.
    dir_fds: FdBudget,
}

impl Namespace {
    fn build(specs: &[MountSpec]) -> Result<Namespace> {
        let mut specs: Vec<&MountSpec> = specs.iter().collect();
        // Shallowest first, so that a mount's parent is in place before it
        // (and a path given twice is found next to itself).
        specs.sort_by(|a, b| (a.depth(), &a.guest_path).cmp(&(b.depth(), &b.guest_path)));
        if let Some(w) = specs.windows(2).find(|w| w[0].guest_path == w[1].guest_path) {
            bail!("--mount {}: mounted twice", w[0].guest_path);
        }
        let root_spec = MountSpec { guest_path: "/".into(), source: Source::Mem(Limits::default()) };
        let (root_spec, rest) = match specs.split_first() {
            Some((first, rest)) if first.depth() == 0 => (*first, rest),
            _ => (&root_spec, &specs[..]),
        };
        let context = |s: &MountSpec| format!("--mount {}={}", s.guest_path, s.source);
        let dir_fds = FdBudget::default();
        let root = open_source(&root_spec.source, &dir_fds).with_context(|| context(root_spec))?;
        let table = Arc::new(MountTable::new(root.fs.clone(), root.read_only));
        let mut opened = vec![(root_spec.guest_path.clone(), root)];
        for spec in rest {
            let mount = open_source(&spec.source, &dir_fds).with_context(|| context(spec))?;
            make_parents(&table, &spec.guest_path).with_context(|| context(spec))?;
            table.mount(&spec.guest_path, mount.fs.clone(), mount.read_only).with_context(|| context(spec))?;
            opened.push((spec.guest_path.clone(), mount));
        }
        Ok(Namespace { table, opened, dir_fds })
    }

    /// Says on stderr which mounts refused the guest a change for their
    /// limits (the guest saw `EDQUOT`), and how many opens the `dir:`
    /// mounts' budget refused.
    fn report_limits(&self) {
        for (path, mount) in &self.opened {
            let Some(fs) = &mount.limited else { continue };
            let refused = fs.quota_refusals();
            if refused > 0 {
                let (l, u) = (fs.limits(), fs.usage());
                let mut held = vec![bytes(u.bytes)];
                held.push(format!("{} inodes", u.inodes));
                eprintln!(
                    "packfs: --mount {path}: full: {refused} change(s) refused for its limits{} (it holds {})",
                    LimitsShown(&l),
                    held.join(", ")
                );
            }
        }
        let refused = self.dir_fds.refused();
        if refused > 0 {
            let max = self.dir_fds.max();
            eprintln!("packfs: dir: mounts: full: {refused} open(s) refused for their limit of {max} host descriptors");
        }
    }
}

/// Creates the missing directories above mount point `path`, as `mkdir -p`.
fn make_parents(table: &MountTable, path: &str) -> Result<()> {
    let fs: &dyn FileSystem = table;
    let names: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    for i in 1..names.len() {
        let above = names[..i].join("/");
        match resolve::resolve(fs, fs.root(), &above, true) {
            Ok(ino) if fs.metadata(ino)?.kind == FileType::Dir => {}
            Ok(_) => bail!("/{above}: {}", Error::NotDir),
            Err(Error::NotFound) => {
                let parent = resolve::resolve_parent(fs, fs.root(), &above)?;
                fs.mkdir(parent.dir, &parent.name, 0o755).with_context(|| format!("creating /{above}"))?;
            }
            Err(e) => return Err(e).with_context(|| format!("/{above}")),
        }
    }
    Ok(())
}

pub(crate) fn run(args: Args) -> Result<ExitCode> {
    raise_nofile_limit();
    let mut command = args.command.into_iter();
    let module = PathBuf::from(command.next().context("no MODULE given")?);
    let mut argv = vec![utf8(module.clone().into_os_string(), "MODULE")?];
    for arg in command {
        argv.push(utf8(arg, "a guest argument")?);
    }
    if args.save.is_some() && args.mounts.is_empty() {
        bail!("--save needs a --mount: without one the guest has no filesystem to save");
    }
    let shown = module.display();
    let wasm = std::fs::read(&module).with_context(|| format!("{shown}"))?;
    if let Some(from) = &args.prefetch {
        // Before the mounts open: each asks for its traced chunks at once.
        set_prefetch(read_trace(from).with_context(|| format!("--prefetch {}", from.display()))?);
    }
    // No mounts, no preopens (as `wasmtime run` without `--dir`).
    let namespace = if args.mounts.is_empty() { None } else { Some(Namespace::build(&args.mounts)?) };

    let max_memory = match args.max_memory {
        Some(n) => Some(usize::try_from(n).context("--max-memory is larger than this machine's address space")?),
        None => None,
    };
    let limits = RunLimits { max_memory, timeout: args.timeout };
    let engine =
        wasmtime::Engine::new(&Runner::config_for(&limits)).map_err(|e| anyhow!("setting up wasmtime: {e}"))?;
    let mut runner = Runner::new(&engine).map_err(|e| anyhow!("setting up wasmtime: {e}"))?.with_limits(limits);
    if !args.no_cache {
        // A cache that cannot be used only costs time.
        match GuestCache::default_dir().map(GuestCache::new) {
            Some(Ok(cache)) => runner = runner.with_cache(cache),
            Some(Err(e)) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                eprintln!("packfs: not caching compiled modules: {e}");
            }
            _ => {}
        }
    }
    let guest = runner.load(&wasm).map_err(|e| anyhow!("{}", one_line(&e.to_string())).context(shown.to_string()))?;
    runner
        .check(&guest)
        .map_err(|e| anyhow!("cannot run it here: {}", one_line(&format!("{e:#}"))).context(shown.to_string()))?;

    let root = namespace.as_ref().map(|ns| ns.table.clone() as Arc<dyn FileSystem>);
    // The run's deadline: the guest's, and then its --save's.
    let deadline = args.timeout.map(|t| Deadline::new(std::time::Instant::now() + t));
    let outcome = match &guest {
        Guest::Module(module) => {
            let mut wasi = Wasi::builder(Box::new(HostPlatform::default()))
                .args(&argv)
                .stdin(Box::new(Inherit::Stdin))
                .stdout(Box::new(Inherit::Stdout))
                .stderr(Box::new(Inherit::Stderr));
            for (k, v) in &args.env {
                wasi = wasi.env(k, v);
            }
            if let Some(root) = root {
                wasi = wasi.preopen("/", root, Access::ReadWrite);
            }
            let wasi = wasi.build().context("opening the guest's preopens")?;
            runner.run_module(module, wasi)
        }
        Guest::Component(component) => {
            let mut wasi = wasmtime_wasi::WasiCtx::builder();
            wasi.inherit_stdio().args(&argv).envs(&args.env);
            let mut fs = PackFsCtx::builder();
            if let Some(root) = root {
                fs.preopen("/", root);
            }
            let _backstop = args.timeout.map(|t| Backstop::arm(t, shown.to_string()));
            runner.run(component, wasi.build(), fs.build())
        }
    };
    if let Some(ns) = &namespace {
        ns.report_limits();
    }
    let status = match outcome {
        Ok(status) => status,
        Err(e) => {
            let (msg, code) = match &e {
                RunError::Timeout(_) => (e.to_string(), TIMED_OUT),
                RunError::MemoryLimit(_) => (e.to_string(), OUT_OF_MEMORY),
                RunError::Instantiate(_) => bail!("{shown}: {}", one_line(&e.to_string())),
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
            return Ok(ExitCode::from(code));
        }
    };
    if let Some(to) = &args.record_trace {
        let trace = packfs_remote::trace::record(&remote_packs());
        write_trace(to, trace.to_text()).with_context(|| format!("--record-trace {}", to.display()))?;
    }
    if let (Some(out), Some(ns)) = (&args.save, &namespace) {
        // What the guest left is saved within its time: an hour's worth
        // of it (a sparse file of 8 EiB, say) must not hold the host past
        // --timeout either.
        let saved = match &deadline {
            Some(d) => d.scope(|| save(&ns.table, out, &args.packing)),
            None => save(&ns.table, out, &args.packing),
        };
        if deadline.as_ref().is_some_and(|d| d.passed()) && saved.is_err() {
            let limit = args.timeout.unwrap_or_default();
            eprintln!(
                "packfs: saving to {}: not done within the time limit of {limit:?}; nothing saved",
                out.display()
            );
            return Ok(ExitCode::from(TIMED_OUT));
        }
        let stats = saved.with_context(|| format!("saving to {}", out.display()))?;
        eprintln!(
            "saved {}: {} entries, {} of file content, {} pack",
            out.display(),
            stats.dirents,
            bytes(stats.file_bytes),
            bytes(stats.pack_len)
        );
    }
    // `Runner` gives the POSIX status: 0 to 255.
    Ok(ExitCode::from(status as u8))
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
fn read_trace(from: &Path) -> Result<Trace> {
    let text = match from.to_str().and_then(Location::parse) {
        Some(location) => packfs_remote::read_object(&location?, &remote_options().net, MAX_TRACE_BYTES)?,
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
fn write_trace(to: &Path, text: String) -> Result<()> {
    match to.to_str().and_then(Location::parse) {
        Some(location) => packfs_remote::write_object(&location?, &remote_options().net, text.into_bytes())?,
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

    fn names(table: &MountTable, path: &str) -> Vec<String> {
        let fs: &dyn FileSystem = table;
        let dir = if path.is_empty() { fs.root() } else { resolve::resolve(fs, fs.root(), path, true).unwrap() };
        fs.read_dir(dir, None, 100).unwrap().into_iter().map(|e| e.name.to_string()).collect()
    }

    #[test]
    fn nested_mounts_in_any_order() {
        let specs: Vec<MountSpec> = ["/a/b/c=mem", "/a=mem", "/x/y=mem"].iter().map(|s| s.parse().unwrap()).collect();
        let ns = Namespace::build(&specs).unwrap();
        assert_eq!(ns.table.len(), 4);
        assert_eq!(names(&ns.table, ""), ["a", "x"]); // /a mounted, /x made in the default root
        assert_eq!(names(&ns.table, "a"), ["b"]); // made inside the /a mount
        assert_eq!(names(&ns.table, "a/b"), ["c"]);
    }

    /// The host directories mounted count their open handles' fds
    /// against one budget: the guest's.
    #[test]
    fn dir_mounts_share_one_budget() {
        let tmp = tempfile::tempdir().unwrap();
        for d in ["x", "y"] {
            std::fs::create_dir(tmp.path().join(d)).unwrap();
            std::fs::write(tmp.path().join(d).join("f"), "f").unwrap();
        }
        let at = |d: &str| tmp.path().join(d).display().to_string();
        let specs: Vec<MountSpec> = [format!("/x=dir:{}", at("x")), format!("/y=dir-ro:{}", at("y"))]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let ns = Namespace::build(&specs).unwrap();
        let fs: &dyn FileSystem = &*ns.table;
        let mut held = Vec::new();
        for d in ["x", "y"] {
            let dir = resolve::resolve(fs, fs.root(), d, true).unwrap();
            held.push(fs.open(dir, "f", &packfs_core::OpenOptions::read()).unwrap());
        }
        assert_eq!((ns.dir_fds.held(), ns.dir_fds.max()), (2, FdBudget::default().max()));
        for h in held {
            fs.close(h);
        }
        assert_eq!(ns.dir_fds.held(), 0);
    }

    #[test]
    fn a_mount_twice_is_refused() {
        let specs: Vec<MountSpec> = ["/t=mem", "/u=mem", "/t/=mem"].iter().map(|s| s.parse().unwrap()).collect();
        let e = Namespace::build(&specs).err().unwrap();
        assert_eq!(e.to_string(), "--mount /t: mounted twice");
    }
}
