//! [`RemoteError`]: what can go wrong reading a remote pack.

use crate::location::BadLocation;

/// What can go wrong reading a remote pack, split by who is at fault: the
/// URL, the store, or the pack. Each names the URL.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// Not a URL PackFS reads.
    #[error(transparent)]
    Location(#[from] BadLocation),
    /// The store refused, failed, or could not be reached in time (after
    /// retries).
    #[error("{url}: {source}")]
    Store {
        /// The pack's (or object's) URL.
        url: String,
        /// What the store's client says.
        #[source]
        source: object_store::Error,
    },
    /// The object is another than the one opened.
    #[error("{url}: the pack changed in the store since it was opened")]
    Changed {
        /// The pack's URL.
        url: String,
    },
    /// A reply that is not what was asked for, after the open (a fetched
    /// extent that fails its checksum, an object past the size asked for).
    #[error("{url}: bad reply: {what}")]
    Reply {
        /// The pack's (or object's) URL.
        url: String,
        /// What was wrong with it.
        what: String,
    },
    /// The bytes are no pack, or a damaged one, or one a lazy reader
    /// refuses (`CorruptKind::TooLarge`); replies to the open's requests
    /// that are not what was asked for (short, elsewhere, a trailer cut
    /// short) are this too, as core's lazy-open plan judges them.
    #[error("{url}: {source}")]
    Pack {
        /// The pack's URL.
        url: String,
        /// What core says is wrong.
        #[source]
        source: packfs_core::Error,
    },
}
