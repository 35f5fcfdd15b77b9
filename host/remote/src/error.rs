//! [`RemoteError`]: what can go wrong reading a remote pack.

use crate::location::BadLocation;

/// What can go wrong reading a remote pack. Each names the URL.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// Not a URL PackFS reads.
    #[error(transparent)]
    Location(#[from] BadLocation),
    /// The store refused, failed, or could not be reached in time (after
    /// retries).
    #[error("{url}: {source}")]
    Store {
        url: String,
        #[source]
        source: object_store::Error,
    },
    /// The object is another than the one opened.
    #[error("{url}: the pack changed in the store since it was opened")]
    Changed { url: String },
    /// A reply that is not what was asked for.
    #[error("{url}: bad reply: {what}")]
    Reply { url: String, what: String },
    /// The bytes are no pack, or a damaged one.
    #[error("{url}: {source}")]
    Pack {
        url: String,
        #[source]
        source: packfs_core::Error,
    },
}
