//! The guest's load on a thread of its own (`packfs-compile`), so that a
//! cold compile runs while the mounts are set up; a spinner on a terminal
//! while `packfs run` waits for a long one; and what `--stats` says of it.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use packfs_host::Runner;
use packfs_host::load::{CacheStatus, Guest, LoadError};

/// How long a load may take before a terminal is shown that it is under
/// way: a warm start never shows it.
const QUIET_FOR: Duration = Duration::from_secs(1);
/// The load parses and compiles with the main thread's stack depth.
const STACK: usize = 8 << 20;

type Loaded = Result<Guest, LoadError>;

/// A load under way: [`start`] it, [`Loading::wait`] for it.
pub(super) struct Loading {
    handle: JoinHandle<()>,
    /// The load's result and how long it took, sent when it ends.
    done: mpsc::Receiver<(Loaded, Duration)>,
    began: Instant,
    /// The module as the user named it, and its size, for the spinner.
    name: String,
    size: u64,
}

/// How a guest was loaded, for `--stats`.
pub(super) struct Report {
    name: String,
    status: CacheStatus,
    /// The load's own time.
    took: Duration,
    /// How long the run waited for it, after all else was set up.
    waited: Duration,
}

/// What [`probe`] found of the module.
pub(super) struct Probe {
    pub(super) size: u64,
}

/// Checks up front what the load would find first, so that a missing or
/// non-wasm MODULE is said before any mount's error: that `path` opens,
/// is not a directory and, if a regular file, starts as WebAssembly does.
/// Its size, for the spinner.
pub(super) fn probe(path: &Path) -> anyhow::Result<Probe> {
    let mut file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(std::io::Error::from(rustix::io::Errno::ISDIR).into());
    }
    // A pipe is left whole for the load to read.
    if meta.is_file() {
        let mut magic = Vec::with_capacity(4);
        (&mut file).take(4).read_to_end(&mut magic)?;
        if magic != b"\0asm" {
            return Err(LoadError::NotWasm.into());
        }
    }
    Ok(Probe { size: meta.len() })
}

/// Starts loading the module at `path` (`name` as the user gave it,
/// `size` bytes) on `runner` (through its cache, for the engine the
/// guest's kind needs). A process that ends before
/// [`Loading::wait`] leaves it to die with it: a store cut short leaves at
/// most a temporary file, which the cache's eviction removes.
pub(super) fn start(runner: Arc<Runner>, path: PathBuf, name: String, size: u64) -> Loading {
    let (send, done) = mpsc::sync_channel(1);
    let began = Instant::now();
    let handle = std::thread::Builder::new()
        .name("packfs-compile".into())
        .stack_size(STACK)
        .spawn(move || {
            let loaded = runner.load(&path);
            // The receiver is gone only when the run ended without it.
            let _ = send.send((loaded, began.elapsed()));
        })
        .expect("spawning the compile thread");
    Loading { handle, done, began, name, size }
}

impl Loading {
    /// The guest, once loaded. Past [`QUIET_FOR`], a spinner on a terminal
    /// says the compile is under way (wasmtime says nothing of its
    /// progress, so it shows the time it has taken); it is cleared before
    /// this returns, so the guest's output never mixes with it.
    pub(super) fn wait(self) -> Result<(Guest, Report), LoadError> {
        let asked = Instant::now();
        let first = QUIET_FOR.saturating_sub(self.began.elapsed());
        let received = match self.done.recv_timeout(first) {
            Err(RecvTimeoutError::Timeout) if std::io::stderr().is_terminal() => self.with_spinner(),
            Err(RecvTimeoutError::Timeout) => self.done.recv().ok(),
            got => got.ok(),
        };
        let waited = asked.elapsed();
        let Some((loaded, took)) = received else {
            // The thread panicked before it sent: its panic is this one.
            match self.handle.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => unreachable!("the compile thread ended without sending its result"),
            }
        };
        let guest = loaded?;
        let status = guest.cache_status().clone();
        Ok((guest, Report { name: self.name, status, took, waited }))
    }

    fn with_spinner(&self) -> Option<(Loaded, Duration)> {
        let spinner = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        spinner.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("a valid template"));
        spinner.enable_steady_tick(Duration::from_millis(100));
        let what = format!("compiling {} ({})", self.name, indicatif::BinaryBytes(self.size));
        let received = loop {
            spinner.set_message(format!("{what}… {} s", self.began.elapsed().as_secs()));
            match self.done.recv_timeout(Duration::from_millis(250)) {
                Err(RecvTimeoutError::Timeout) => continue,
                got => break got.ok(),
            }
        };
        spinner.finish_and_clear();
        received
    }
}

impl Report {
    /// One line: whether the guest came from the cache or was compiled,
    /// in how long, and how much of that the run waited for.
    pub(super) fn line(&self) -> String {
        let took = self.took.as_millis();
        let how = match &self.status {
            CacheStatus::Hit => format!("from the cache in {took} ms"),
            CacheStatus::Off => format!("compiled in {took} ms (no cache)"),
            CacheStatus::Stored => format!("compiled in {took} ms (stored in the cache)"),
            CacheStatus::Replaced => format!("compiled in {took} ms (the cached copy was unusable: replaced)"),
            CacheStatus::StoreFailed(e) => format!("compiled in {took} ms (not stored in the cache: {e})"),
            other => format!("loaded in {took} ms ({other:?})"),
        };
        format!("packfs: guest {}: {how}; the start waited {} ms for it", self.name, self.waited.as_millis())
    }
}
