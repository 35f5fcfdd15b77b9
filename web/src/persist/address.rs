//! Where a fetched extent is kept, and whether bytes found there are it.
//!
//! An extent of a pack without digests is kept under the pack's *scope*
//! (the directory of its URL) and its xxh3 checksum: xxh3 is not
//! collision-resistant, so no other site's pack may plant content under a
//! key this pack reads (see `host/remote/src/cache/`). An extent of a pack
//! with a digest table (`docs/pack-format.md` §18) is kept in one space for
//! every scope, under its BLAKE3 digest, and bytes found there count only
//! if they hash to that digest: no pack can plant bytes under another's.

use std::ops::Range;

use packfs_core::pack::Digest;

/// The pack whose extents are kept: the one a URL opens (`fetch.rs`).
type LazyPack = packfs_core::pack::PackFs<packfs_core::pack::Partial>;

/// The scope of the shared space: no directory's checksum is kept as it
/// (one that were would share only what passes its digest, as here).
pub(crate) const SHARED: u64 = u64::MAX;

/// Where one extent is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Address {
    /// The pack's scope, or [`SHARED`].
    pub(crate) scope: u64,
    /// The xxh3 checksum, or the digest's first eight bytes.
    pub(crate) sum: u64,
    pub(crate) len: u64,
    /// The digest, which found bytes must hash to.
    pub(crate) digest: Option<Digest>,
    /// The extent's number in its pack.
    extent: u64,
}

impl Address {
    /// Extent `k` of `pack`, whose scope is `scope`: where it lies in the
    /// pack, and where it is kept.
    pub(crate) fn of(pack: &LazyPack, k: u64, scope: u64) -> Option<(Range<u64>, Address)> {
        let (start, end) = pack.extent(k)?;
        let len = end - start;
        let address = match pack.extent_digest(k) {
            Some(d) => {
                let sum = u64::from_le_bytes(d.0[..8].try_into().ok()?);
                Address { scope: SHARED, sum, len, digest: Some(d), extent: k }
            }
            None => Address { scope, sum: pack.extent_checksum(k)?, len, digest: None, extent: k },
        };
        Some((start..end, address))
    }

    /// Whether `bytes` are the extent's in `pack`: by digest in the shared
    /// space, else by checksum ([`is_extent`](packfs_core::pack::PackFs::is_extent)).
    pub(crate) fn holds(&self, pack: &LazyPack, bytes: &[u8]) -> bool {
        pack.is_extent(self.extent, bytes)
    }

    /// The Cache API's name for it, under `root`.
    pub(crate) fn url(&self, root: &str) -> String {
        match self.digest {
            Some(d) => format!("{root}/blake3/{}-{}", d.hex(), self.len),
            None => format!("{root}/{:016x}/{:016x}-{}", self.scope, self.sum, self.len),
        }
    }
}
