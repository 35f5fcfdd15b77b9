//! [`RemoteError`]: what can go wrong reading a remote pack.

use crate::location::BadLocation;

/// What can go wrong reading a remote pack, split by who is at fault: the
/// URL, the store, or the pack. Each names the URL.
///
/// The message is whole, on one line, each cause in it once; no variant
/// has a `source()`, which an error report (anyhow's `{:#}`) would print
/// a second time.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RemoteError {
    /// Not a URL PackFS reads.
    #[error(transparent)]
    Location(#[from] BadLocation),
    /// The store refused, failed, or could not be reached in time (after
    /// retries).
    #[error("{url}: {}", causes(error))]
    Store {
        /// The pack's (or object's) URL.
        url: String,
        /// What the store's client says.
        error: object_store::Error,
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
    #[error("{url}: {error}")]
    Pack {
        /// The pack's URL.
        url: String,
        /// What core says is wrong.
        error: packfs_core::Error,
    },
}

/// `e` and the chain of errors under it, joined by `: `, leaving out each
/// one whose message an error above it already holds. `object_store`'s
/// errors put their source's message in their own and return it from
/// `source()` too (`Generic HTTP error: Error performing GET …: HTTP
/// error: error sending request`, then each of those again); the cause
/// at the bottom (`Connection refused`) is only in the chain.
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let said = cause.to_string();
        if !said.is_empty() && !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        next = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An HTTP client's error, as reqwest's: its cause only in `source()`.
    #[derive(Debug)]
    struct Sending(std::io::Error);

    impl std::fmt::Display for Sending {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("error sending request")
        }
    }

    impl std::error::Error for Sending {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    /// A cause is said once, however many errors of the chain say it, and
    /// one said only by `source()` is said too.
    #[test]
    fn a_store_error_says_each_cause_once() {
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        let error = object_store::Error::Generic { store: "HTTP", source: Box::new(Sending(refused)) };
        let e = RemoteError::Store { url: "http://h/p.pack".into(), error };
        assert_eq!(e.to_string(), "http://h/p.pack: Generic HTTP error: error sending request: Connection refused");
        assert!(std::error::Error::source(&e).is_none());
        let e = RemoteError::Pack { url: "http://h/p.pack".into(), error: packfs_core::Error::NotFound };
        assert_eq!(e.to_string(), "http://h/p.pack: no such file or directory");
        assert!(std::error::Error::source(&e).is_none());
    }
}
