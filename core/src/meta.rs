//! Values that cross the [`FileSystem`](crate::FileSystem) trait: inode
//! numbers, metadata, open options, directory entries, times.

use std::sync::Arc;

/// An inode number, unique within one filesystem for its whole life: a
/// number is never reused, so a stale handle can only miss, never alias.
pub type Ino = u64;

/// What an inode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileType {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link.
    Symlink,
}

/// A point in time: seconds and nanoseconds since the Unix epoch (WASI
/// `datetime`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Timestamp {
    /// Whole seconds since 1970-01-01T00:00:00Z.
    pub secs: u64,
    /// Nanoseconds within the second, below 1,000,000,000.
    pub nanos: u32,
}

impl Timestamp {
    /// Builds a timestamp, carrying whole seconds out of `nanos`.
    pub fn new(secs: u64, nanos: u32) -> Self {
        Timestamp { secs: secs.saturating_add(u64::from(nanos / 1_000_000_000)), nanos: nanos % 1_000_000_000 }
    }

    /// The system clock's time where the target has one; the epoch where
    /// it has none (`wasm32-unknown-unknown`).
    pub fn now() -> Self {
        #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
        {
            let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            Timestamp::new(d.as_secs(), d.subsec_nanos())
        }
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        {
            Timestamp::default()
        }
    }
}

/// The source of "now" for timestamps. The core has no clock of its own on
/// `wasm32-unknown-unknown`; the embedder supplies one (the web build reads
/// `Date.now()`).
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The system clock where the target has one; the epoch where it has none.
pub fn system_clock() -> Clock {
    Arc::new(Timestamp::now)
}

/// How `set_times` changes one timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetTime {
    /// Leave it as it is.
    Keep,
    /// Set it to the filesystem's clock.
    Now,
    /// Set it to this time.
    At(Timestamp),
}

/// An inode's metadata (POSIX `stat`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// Inode number.
    pub ino: Ino,
    /// File, directory or symlink.
    pub kind: FileType,
    /// Length in bytes: file content, symlink target; 0 for directories.
    pub size: u64,
    /// Permission bits (`0o7777` mask).
    pub mode: u32,
    /// Hard links: names for a file; 2 + subdirectories for a directory.
    pub nlink: u64,
    /// Last access, changed only by `set_times` (PackFS reads are `noatime`).
    pub atime: Timestamp,
    /// Last content change.
    pub mtime: Timestamp,
    /// Last metadata change.
    pub ctime: Timestamp,
}

/// One directory entry as `read_dir` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name (never `.` or `..`).
    pub name: Arc<str>,
    /// The inode it names.
    pub ino: Ino,
    /// The inode's type.
    pub kind: FileType,
}

/// Flags for [`FileSystem::open`](crate::FileSystem::open), as POSIX
/// `open(2)` has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    /// Open for reading.
    pub read: bool,
    /// Open for writing.
    pub write: bool,
    /// Every write goes to the end of the file (implies `write`).
    pub append: bool,
    /// Create the file when missing (`O_CREAT`).
    pub create: bool,
    /// With `create`: fail with `Exists` when present (`O_EXCL`).
    pub exclusive: bool,
    /// Cut an existing file to length 0 (`O_TRUNC`, needs `write`).
    pub truncate: bool,
    /// Fail with `NotDir` unless the entry is a directory (`O_DIRECTORY`).
    pub directory: bool,
    /// Permission bits for a file this open creates.
    pub mode: u32,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            read: true,
            write: false,
            append: false,
            create: false,
            exclusive: false,
            truncate: false,
            directory: false,
            mode: 0o644,
        }
    }
}

impl OpenOptions {
    /// Read-only, the file must exist.
    pub fn read() -> Self {
        Self::default()
    }

    /// Read-write, create or truncate (`O_RDWR | O_CREAT | O_TRUNC`).
    pub fn create() -> Self {
        OpenOptions { write: true, create: true, truncate: true, ..Self::default() }
    }

    /// Read-write, create, fail when present (`O_RDWR | O_CREAT | O_EXCL`).
    pub fn create_new() -> Self {
        OpenOptions { write: true, create: true, exclusive: true, ..Self::default() }
    }

    /// A directory, for reading its entries (`O_DIRECTORY`).
    pub fn directory() -> Self {
        OpenOptions { directory: true, ..Self::default() }
    }

    /// True when the open may change the file.
    pub fn writes(&self) -> bool {
        self.write || self.append || self.truncate
    }
}
