//! `packfs run` under `--timeout`: what keeps the process itself within
//! the run's deadline where the guest's own waits cannot ([`Backstop`]),
//! and the reads of a `--save` ([`Timed`]).

use packfs_core::{BackendFault, Error, FileSystem};
use packfs_host::RunError;

/// Exit status when `--timeout` ends the guest, as `timeout(1)` gives.
pub(crate) const TIMED_OUT: u8 = 124;

/// Ends the process with [`TIMED_OUT`] a moment past a component's
/// `--timeout`, unless disarmed (dropped) first. A p1 guest blocked in a
/// host call stops at its deadline by itself (every wait PackFS's
/// preview1 makes ends there); a component may block in wasmtime-wasi's
/// own clocks or stdio, which know no deadline, so for those the process
/// ends instead, as `timeout(1)` would end it.
pub(crate) struct Backstop(Option<std::sync::mpsc::Sender<()>>);

impl Backstop {
    /// How long past the deadline the guest has to stop by itself.
    const GRACE: std::time::Duration = std::time::Duration::from_millis(500);

    pub(crate) fn arm(timeout: std::time::Duration, shown: String) -> Backstop {
        let (disarm, disarmed) = std::sync::mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = disarmed.recv_timeout(timeout + Self::GRACE) {
                eprintln!("packfs: {shown}: {}", RunError::Timeout(timeout));
                std::process::exit(i32::from(TIMED_OUT));
            }
        });
        Backstop(Some(disarm))
    }
}

impl Drop for Backstop {
    fn drop(&mut self) {
        // The watchdog's receive ends: disconnected or told.
        self.0.take();
    }
}

/// A filesystem read under the current thread's deadline, if any: past
/// it every read fails, so that a walk of it (a --save) ends there.
pub(crate) struct Timed<'a>(pub(crate) &'a dyn FileSystem);

impl Timed<'_> {
    fn check(&self) -> packfs_core::Result<()> {
        if packfs_core::deadline::expired() {
            return Err(Error::backend(BackendFault::Closed, "past the time limit"));
        }
        Ok(())
    }
}

impl FileSystem for Timed<'_> {
    fn root(&self) -> packfs_core::Ino {
        self.0.root()
    }
    fn lookup(&self, dir: packfs_core::Ino, name: &str) -> packfs_core::Result<packfs_core::Ino> {
        self.0.lookup(dir, name)
    }
    fn metadata(&self, ino: packfs_core::Ino) -> packfs_core::Result<packfs_core::Metadata> {
        self.0.metadata(ino)
    }
    fn inode_count_hint(&self) -> Option<u64> {
        self.0.inode_count_hint()
    }
    fn parent(&self, dir: packfs_core::Ino) -> packfs_core::Result<packfs_core::Ino> {
        self.0.parent(dir)
    }
    fn loaded(&self, ino: packfs_core::Ino, offset: u64, len: u64) -> packfs_core::Result<()> {
        self.check()?;
        self.0.loaded(ino, offset, len)
    }
    fn may_wait(&self, ino: packfs_core::Ino, offset: u64, len: u64) -> bool {
        self.0.may_wait(ino, offset, len)
    }
    fn open(
        &self,
        dir: packfs_core::Ino,
        name: &str,
        opts: &packfs_core::OpenOptions,
    ) -> packfs_core::Result<packfs_core::Ino> {
        self.0.open(dir, name, opts)
    }
    fn open_ino(&self, ino: packfs_core::Ino) -> packfs_core::Result<()> {
        self.0.open_ino(ino)
    }
    fn close(&self, ino: packfs_core::Ino) {
        self.0.close(ino)
    }
    fn read_at(&self, ino: packfs_core::Ino, offset: u64, buf: &mut [u8]) -> packfs_core::Result<usize> {
        self.check()?;
        self.0.read_at(ino, offset, buf)
    }
    fn read_dir(
        &self,
        dir: packfs_core::Ino,
        after: Option<&str>,
        max: usize,
    ) -> packfs_core::Result<Vec<packfs_core::DirEntry>> {
        self.check()?;
        self.0.read_dir(dir, after, max)
    }
    fn readlink(&self, ino: packfs_core::Ino) -> packfs_core::Result<String> {
        self.0.readlink(ino)
    }
}
