//! [`ByteSource`]: where a pack's bytes live, and the sources every
//! reader has (a slice, a vector, anything behind a pointer to one).
//!
//! The reader ([`PackFs`](super::PackFs)) and the index it opens both take
//! their bytes from here; this module depends on neither.

use std::ops::Range;
use std::sync::Arc;

/// Where a pack's bytes live: memory, a mapped file (the host), or a
/// source that holds only some of them ([`Partial`](super::Partial): blobs
/// fetched as reads ask for them). Reads borrow from it, zero-copy.
///
/// A source says which bytes are *here*; the reader checks what they
/// mean. Opening takes the header, the trailer and the index region (see
/// [`Layout::required`](super::Layout::required)) with [`get`](Self::get);
/// a file's bytes come by [`extent`](Self::extent), one stored piece at a
/// time.
pub trait ByteSource: Send + Sync {
    /// The whole pack's length in bytes.
    fn size(&self) -> u64;

    /// The bytes `range` of the pack; `None` when they are not all here
    /// (past the end, or not fetched yet).
    fn get(&self, range: Range<u64>) -> Option<&[u8]>;

    /// Extent `k`'s bytes, which lie at `range`; `None` when they are not
    /// here. An extent is what the index lists as one piece of stored
    /// data: a blob in version 1, a chunk in version 2
    /// ([`PackFs::extent`](super::PackFs::extent)). A source that keeps them apart (fetched one
    /// by one) finds them by `k`; the others need only [`get`](Self::get).
    fn extent(&self, k: u64, range: Range<u64>) -> Option<&[u8]> {
        let _ = k;
        self.get(range)
    }

    /// False while some extents are missing and arrive only when the
    /// caller fetches them (a [`Partial`](super::Partial)): reads that must
    /// not stop part-way then check first
    /// ([`FileSystem::loaded`](crate::FileSystem::loaded)). A source that
    /// holds every byte, or fetches what it lacks itself, is complete.
    fn complete(&self) -> bool {
        true
    }

    /// True when every extent this source hands out has passed the check
    /// the pack gives it — its digest where the pack has a digest table,
    /// else its checksum — so that the reader need not hash it again (a
    /// fetching source that checks each extent as it arrives). False for
    /// bytes merely held: the reader checks as its options say.
    fn checks_extents(&self) -> bool {
        false
    }

    /// True when the bytes it lends may change after they were read: a
    /// mapped file that another process may write in place. A pinned pack
    /// then serves only copies it checked ([`ReadOptions::pin`]), never the
    /// live bytes.
    ///
    /// [`ReadOptions::pin`]: super::ReadOptions::pin
    fn changeable(&self) -> bool {
        false
    }

    /// Whether extent `k` (at `range`) is here, so that
    /// [`extent`](Self::extent) answers without waiting. Only a source that
    /// fetches what it lacks itself (and so waits in `extent`) says false,
    /// for an extent it has not got yet.
    fn at_hand(&self, k: u64, range: Range<u64>) -> bool {
        let _ = (k, range);
        true
    }
}

/// `range` of bytes that are all here.
fn cut(bytes: &[u8], range: Range<u64>) -> Option<&[u8]> {
    bytes.get(usize::try_from(range.start).ok()?..usize::try_from(range.end).ok()?)
}

impl ByteSource for [u8] {
    fn size(&self) -> u64 {
        self.len() as u64
    }
    fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        cut(self, range)
    }
}

impl ByteSource for Vec<u8> {
    fn size(&self) -> u64 {
        self.len() as u64
    }
    fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        cut(self, range)
    }
}

/// A source behind a pointer is the source.
macro_rules! forward {
    ($($ptr:ty),*) => {$(
        impl<T: ByteSource + ?Sized> ByteSource for $ptr {
            fn size(&self) -> u64 {
                (**self).size()
            }
            fn get(&self, range: Range<u64>) -> Option<&[u8]> {
                (**self).get(range)
            }
            fn extent(&self, k: u64, range: Range<u64>) -> Option<&[u8]> {
                (**self).extent(k, range)
            }
            fn complete(&self) -> bool {
                (**self).complete()
            }
            fn checks_extents(&self) -> bool {
                (**self).checks_extents()
            }
            fn at_hand(&self, k: u64, range: Range<u64>) -> bool {
                (**self).at_hand(k, range)
            }
        }
    )*};
}

forward!(&T, Box<T>, Arc<T>);
