//! A file's identity as `fstat` gives it, the clock it is compared with,
//! and the boot it was seen in.

use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::fs::Stat;

/// Nanoseconds since the Unix epoch, as file timestamps count them.
pub(crate) type Stamp = i128;

/// What names one version of a file's content without reading it: a write
/// changes its size, mtime or ctime (ctime cannot be set from user space,
/// so restoring an old mtime is still seen), a replacement its inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileId {
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    pub(crate) mtime: Stamp,
    pub(crate) ctime: Stamp,
}

impl FileId {
    pub(crate) fn of(st: &Stat) -> FileId {
        #[allow(clippy::unnecessary_cast, reason = "the stat fields' types differ between targets")]
        FileId {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime: stamp(st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime: stamp(st.st_ctime as i64, st.st_ctime_nsec as i64),
        }
    }

    /// Whether the file may still change without its timestamps showing
    /// it: a write within the filesystem's timestamp granularity of the
    /// last one leaves ctime as it was, so an identity younger than
    /// `window` at `now` is not trusted to name its content (git's "racy
    /// clean" rule).
    pub(crate) fn is_racy(&self, now: Stamp, window: std::time::Duration) -> bool {
        now - self.ctime.max(self.mtime) < window.as_nanos() as Stamp
    }
}

fn stamp(sec: i64, nsec: i64) -> Stamp {
    Stamp::from(sec) * 1_000_000_000 + Stamp::from(nsec)
}

/// The wall clock, as file timestamps are set from it.
pub(crate) fn now() -> Stamp {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as Stamp,
        Err(e) => -(e.duration().as_nanos() as Stamp),
    }
}

/// This boot's id (Linux: `/proc/sys/kernel/random/boot_id`), `None`
/// where there is none. Writes not yet written back when a machine went
/// down may be lost; a file pinned in another boot is read again.
pub(crate) fn boot_id() -> Option<&'static str> {
    static ID: OnceLock<Option<String>> = OnceLock::new();
    ID.get_or_init(|| {
        let id = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
        let id = id.trim();
        // It goes into a pin's one line of words.
        (!id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')).then(|| id.to_owned())
    })
    .as_deref()
}
