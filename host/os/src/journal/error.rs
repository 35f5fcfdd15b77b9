//! [`JournalError`]: why a journal directory could not be opened, read or
//! checkpointed.

use std::io;
use std::path::PathBuf;

use packfs_core::pack::WriteError;

/// Why a `Journal` call failed. Each variant names the file at fault; the
/// cause, where there is one, is its [`source`](std::error::Error::source),
/// not repeated in its message.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JournalError {
    /// A host call on the journal directory or one of its files failed.
    #[error("{doing} {}", path.display())]
    Io {
        /// What was being done ("reading", "locking", "syncing", ...).
        doing: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// Another journal of the directory is open, in this process or
    /// another: it holds `DIR/lock`.
    #[error("journal {} is in use", dir.display())]
    InUse {
        /// The journal directory.
        dir: PathBuf,
    },
    /// A file's bytes are not what a journal writes: the log's header, a
    /// damaged record with good ones after it, a record of a newer
    /// version, or a record that decodes but does not apply
    /// ([`Error::CorruptJournal`](packfs_core::Error::CorruptJournal), its
    /// offset in the log; the log is left as it was); or
    /// the checkpoint pack is corrupt or of a version this reader does
    /// not know ([`Error::Corrupt`](packfs_core::Error::Corrupt),
    /// [`Error::UnsupportedVersion`](packfs_core::Error::UnsupportedVersion)).
    #[error("bad contents in {}", path.display())]
    Corrupt {
        /// The log or the checkpoint pack.
        path: PathBuf,
        /// What the decoder found.
        #[source]
        source: packfs_core::Error,
    },
    /// The log continues another checkpoint than its name says: it is not
    /// this directory's log of that generation.
    #[error("{}: log of generation {found} where {expected} was expected", path.display())]
    WrongGeneration {
        /// The log.
        path: PathBuf,
        /// The generation of its name (the newest checkpoint's).
        expected: u64,
        /// The generation its header names.
        found: u64,
    },
    /// Writing the next checkpoint pack failed; the journal is closed,
    /// and the directory holds the old generation still.
    #[error("writing checkpoint {}", path.display())]
    Checkpoint {
        /// The checkpoint pack being written.
        path: PathBuf,
        /// What the pack writer said.
        #[source]
        source: WriteError,
    },
    /// The log was closed (after a failed sync) before a checkpoint could
    /// close it: reopen the journal.
    #[error("the journal was closed before its checkpoint")]
    Closed,
}

impl JournalError {
    /// `source`, met while `doing` `path`.
    pub(super) fn io(doing: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| JournalError::Io { doing, path, source }
    }
}
