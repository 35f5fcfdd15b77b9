//! [`WriteError`]: why a pack could not be written, and what each cause
//! becomes as a filesystem [`Error`].

use std::io::ErrorKind;

use crate::{BackendFault, Error, Ino};

/// Why a pack could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// Reading the source filesystem failed. (The cause is in the message
    /// and not also a `source()`, which error reports would print twice.)
    #[error("reading the source: {0}")]
    Source(Error),
    /// Writing the output failed.
    #[error("writing the pack: {0}")]
    Output(std::io::Error),
    /// The source changed while it was packed: pack a snapshot.
    #[error("inode {ino} changed while it was packed (pack a snapshot)")]
    SourceChanged {
        /// The source inode that changed.
        ino: Ino,
    },
    /// The source is not a valid tree: what a well-behaved backend never
    /// returns (a directory reachable twice, a bad name or symlink target,
    /// a `read_dir` whose names are out of byte order or repeated, within
    /// a page or across pages).
    #[error("the source is not a valid tree at inode {ino}: {what}")]
    BadSource {
        /// The source inode at fault.
        ino: Ino,
        /// What is wrong.
        what: &'static str,
    },
    /// The chunk size asked for is not a power of two from 4 KiB to 1 MiB.
    #[error("chunk size {0} is not a power of two from 4096 to 1048576")]
    BadChunkSize(u64),
    /// The alignment asked for is not a power of two from 8 to 65536.
    #[error("blob alignment {0} is not a power of two from 8 to 65536")]
    BadAlignment(u64),
    /// More inodes, names or blobs than one pack holds (2^32 - 1 each).
    #[error("too many {0} for one pack")]
    TooMany(&'static str),
}

impl From<Error> for WriteError {
    fn from(e: Error) -> Self {
        WriteError::Source(e)
    }
}

impl From<std::io::Error> for WriteError {
    fn from(e: std::io::Error) -> Self {
        WriteError::Output(e)
    }
}

impl From<WriteError> for Error {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::Source(e) => e,
            WriteError::BadAlignment(_) | WriteError::BadChunkSize(_) => Error::Invalid,
            // No room for the pack: in memory (a buffer that could not
            // grow) or on disk.
            WriteError::Output(e) if matches!(e.kind(), ErrorKind::OutOfMemory | ErrorKind::StorageFull) => {
                Error::NoSpace
            }
            WriteError::Output(e) => Error::Os(crate::OsError::new("writing the pack", e)),
            e @ WriteError::TooMany(_) => Error::backend(BackendFault::Unrepresentable, e.to_string()),
            e => Error::backend(BackendFault::Contract, e.to_string()),
        }
    }
}
