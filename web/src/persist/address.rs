//! Where a fetched extent is kept, and whether bytes found there are it.
//!
//! An extent of a pack without digests is kept under the pack's *scope*
//! (the directory of its URL) and its xxh3 checksum: xxh3 is not
//! collision-resistant, so no other site's pack may plant content under a
//! key this pack reads (see `host/remote/src/extent_cache/`). The scope names the
//! directory by 128 bits of its BLAKE3 hash, so no other directory has it
//! either (it was the directory's xxh3, which another site could match).
//! An extent of a pack
//! with a digest table (`docs/pack-format.md` §18) is kept in one space for
//! every scope, under its BLAKE3 digest, and bytes found there count only
//! if they hash to that digest: no pack can plant bytes under another's.

use std::ops::Range;

use packfs_core::pack::Digest;

/// The pack whose extents are kept: the one a URL opens (`fetch.rs`).
type LazyPack = packfs_core::pack::PackFs<packfs_core::pack::Partial>;

/// Which packs share the extents kept under it: those of one directory.
pub(crate) type Scope = u128;

/// The scope of the shared space: no directory's hash is kept as it
/// (one that were would share only what passes its digest, as here).
pub(crate) const SHARED: Scope = u128::MAX;

/// The scope of the pack at `url`: the first 16 bytes of the BLAKE3 hash
/// of its directory (the URL up to its last `/`), as the host names an
/// origin's directory by 16 bytes of a cryptographic hash. A site that
/// could publish a directory of the same scope could plant extents whose
/// xxh3 checksums match this pack's; finding one takes 2^64 tries.
pub(crate) fn scope(url: &str) -> Scope {
    let dir = url.rsplit_once('/').map_or(url, |(d, _)| d);
    let mut first = [0; 16];
    first.copy_from_slice(&Digest::of(dir.as_bytes()).0[..16]);
    u128::from_le_bytes(first)
}

/// Where one extent is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Address {
    /// The pack's scope, or [`SHARED`].
    pub(crate) scope: Scope,
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
    pub(crate) fn of(pack: &LazyPack, k: u64, scope: Scope) -> Option<(Range<u64>, Address)> {
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
            None => format!("{root}/{:032x}/{:016x}-{}", self.scope, self.sum, self.len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xxhash_rust::xxh3::xxh3_64;

    /// Two directories of 420 bytes whose xxh3 is the same, differing in
    /// two bytes. Past 240 bytes, xxh3 adds each 8-byte lane of a 64-byte
    /// stripe into an accumulator, and multiplies the halves of the lane
    /// XORed with 8 bytes of its secret into the neighbouring one: a lane
    /// whose high half is the secret's multiplies to 0, and lane 2 of
    /// stripes 1 and 5 land in one accumulator, so adding 1 to the one and
    /// taking 1 from the other leaves the sum. The secret's halves there
    /// are UTF-8 after a lead byte (`e2`, `c3`), so the directories are
    /// text, as URLs are.
    fn colliding_directories() -> (String, String) {
        // xxh3's default secret, bytes 28..32 and 60..64.
        let (key1, key5) = ([0xb7, 0xb3, 0x67, 0x1f], [0x81, 0x3a, 0x26, 0x4c]);
        let mut dir = b"https://a.example/".to_vec();
        dir.resize(420, b'x');
        (dir[83], dir[339]) = (0xe2, 0xc3);
        dir[84..88].copy_from_slice(&key1);
        dir[340..344].copy_from_slice(&key5);
        let (mut a, mut b) = (dir.clone(), dir);
        (a[80], a[336]) = (b'A', b'B');
        (b[80], b[336]) = (b'B', b'A');
        (String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap())
    }

    #[test]
    fn directories_whose_xxh3_collide_have_scopes_of_their_own() {
        let (a, b) = colliding_directories();
        assert_ne!(a, b);
        assert_eq!(xxh3_64(a.as_bytes()), xxh3_64(b.as_bytes()), "a collision");
        let (pack_a, pack_b) = (format!("{a}/p.pack"), format!("{b}/p.pack"));
        assert_ne!(scope(&pack_a), scope(&pack_b));
        // One directory, one scope, whatever the pack; the shared one is
        // no directory's.
        assert_eq!(scope(&pack_a), scope(&format!("{a}/q.pack")));
        assert_ne!(scope("https://a.example/p.pack"), scope("https://b.example/p.pack"));
        assert_ne!(scope(&pack_a), SHARED);
    }
}
