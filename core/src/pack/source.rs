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

/// A source behind a pointer is the source, in every answer it gives:
/// a method left to its default here would answer for the pointer, not
/// for what it points at (a mapped file shared through an `Arc` taken for
/// one that cannot change). The test below calls each through each.
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
            fn changeable(&self) -> bool {
                (**self).changeable()
            }
            fn at_hand(&self, k: u64, range: Range<u64>) -> bool {
                (**self).at_hand(k, range)
            }
        }
    )*};
}

forward!(&T, Box<T>, Arc<T>);

#[cfg(test)]
mod tests {
    use super::*;

    /// A source whose every answer differs from the trait's default.
    struct Odd;

    impl ByteSource for Odd {
        fn size(&self) -> u64 {
            7
        }
        fn get(&self, _: Range<u64>) -> Option<&[u8]> {
            Some(b"get")
        }
        fn extent(&self, _: u64, _: Range<u64>) -> Option<&[u8]> {
            Some(b"extent")
        }
        fn complete(&self) -> bool {
            false
        }
        fn checks_extents(&self) -> bool {
            true
        }
        fn changeable(&self) -> bool {
            true
        }
        fn at_hand(&self, _: u64, _: Range<u64>) -> bool {
            false
        }
    }

    type Answers<'a> = (u64, Option<&'a [u8]>, Option<&'a [u8]>, bool, bool, bool, bool);

    fn answers<S: ByteSource + ?Sized>(s: &S) -> Answers<'_> {
        (s.size(), s.get(0..1), s.extent(0, 0..1), s.complete(), s.checks_extents(), s.changeable(), s.at_hand(0, 0..1))
    }

    /// Every pointer answers every question as what it points at does
    /// (on a3db56c, `changeable` answered for the pointer: false).
    #[test]
    fn a_pointer_answers_as_what_it_points_at() {
        let want = answers(&Odd);
        assert_eq!(want, (7, Some(&b"get"[..]), Some(&b"extent"[..]), false, true, true, false));
        let arc = Arc::new(Odd);
        let dynamic: Arc<dyn ByteSource> = Arc::new(Odd);
        let boxed: Box<dyn ByteSource> = Box::new(Odd);
        assert_eq!(answers(&&Odd), want, "&");
        assert_eq!(answers(&Box::new(Odd)), want, "Box");
        assert_eq!(answers(&arc), want, "Arc");
        assert_eq!(answers(&dynamic), want, "Arc<dyn>");
        assert_eq!(answers(&boxed), want, "Box<dyn>");
        assert_eq!(answers(&Box::new(arc.clone())), want, "Box<Arc>");
    }
}
