//! The names the cache makes, and nothing else: what it may touch is
//! decided by these forms, parsed exactly (a name is the cache's only if
//! formatting what it parses to gives it back).
//!
//! ```text
//! ROOT/CACHEDIR.TAG               the tag: this directory is a cache
//! ROOT/evict.lock                 one eviction at a time
//! ROOT/tmp/put-HHHHHHHHHHHHHHHH   an entry being written (16 hex digits)
//! ROOT/ORIGIN/FAN/SUM-LEN         an entry of a pack without digests
//! ROOT/ORIGIN/FAN/SUM-LEN.lock    its fetch lock, while someone holds it
//! ROOT/blake3/FAN/DIGEST-LEN      an entry of a pack with digests, shared
//! ROOT/blake3/FAN/DIGEST-LEN.lock its fetch lock
//! ```
//!
//! ORIGIN is 32 lowercase hex digits (the first half of the SHA-256 of
//! the origin), SUM the entry's xxh3 checksum in 16, DIGEST its BLAKE3
//! digest in 64, FAN the first two of either, LEN its length in decimal.

use packfs_core::pack::{Digest, checksum};
use sha2::{Digest as _, Sha256};

/// The tag's name, from the Cache Directory Tagging spec
/// (<https://bford.info/cachedir/>): backup tools skip what holds one.
pub(super) const TAG_NAME: &str = "CACHEDIR.TAG";

/// How a tag of this cache begins: the spec's signature, then a line
/// saying whose it is (another program's cache is not this one's).
pub(super) const TAG_HEAD: &str =
    "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by packfs.\n";

/// The whole tag the cache writes.
pub(super) const TAG: &str = concat!(
    "Signature: 8a477f597d28d172789f06886806bc55\n",
    "# This file is a cache directory tag created by packfs.\n",
    "# For information about cache directory tags, see https://bford.info/cachedir/\n",
);

pub(super) const TMP: &str = "tmp";
pub(super) const EVICT_LOCK: &str = "evict.lock";

/// The directory shared by every origin: entries addressed by digest.
pub(super) const SHARED: &str = "blake3";

/// An entry's address: what its bytes hash to, and their length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// The xxh3 checksum: not collision-resistant, so kept per origin.
    Sum { sum: u64, len: u64 },
    /// The BLAKE3 digest: kept once for every origin, since bytes that
    /// hash to it are the bytes every pack naming it wants.
    Digest { digest: Digest, len: u64 },
}

impl Key {
    pub(crate) fn len(self) -> u64 {
        match self {
            Key::Sum { len, .. } | Key::Digest { len, .. } => len,
        }
    }

    /// Whether it lives in [`SHARED`] rather than in its origin's directory.
    pub(super) fn shared(self) -> bool {
        matches!(self, Key::Digest { .. })
    }

    /// Whether `bytes` are the entry's: its length, and its hash.
    pub(super) fn matches(self, bytes: &[u8]) -> bool {
        bytes.len() as u64 == self.len()
            && match self {
                Key::Sum { sum, .. } => checksum(bytes) == sum,
                Key::Digest { digest, .. } => Digest::of(bytes) == digest,
            }
    }

    /// `SUM-LEN` or `DIGEST-LEN`.
    pub(super) fn name(self) -> String {
        match self {
            Key::Sum { sum, len } => format!("{sum:016x}-{len}"),
            Key::Digest { digest, len } => format!("{}-{len}", digest.hex()),
        }
    }

    /// `NAME.lock`.
    pub(super) fn lock_name(self) -> String {
        format!("{}.lock", self.name())
    }

    /// The fan directory: the hash's first byte.
    pub(super) fn fan(self) -> String {
        match self {
            Key::Sum { sum, .. } => format!("{:02x}", sum >> 56),
            Key::Digest { digest, .. } => format!("{:02x}", digest.0[0]),
        }
    }

    /// The key whose entry is `name` in an origin's directory (`shared`
    /// false) or in [`SHARED`], if `name` is exactly such an entry's name
    /// (no uppercase, no leading zeros, no sign).
    pub(super) fn parse(name: &str, shared: bool) -> Option<Key> {
        let (hash, len) = name.split_once('-')?;
        let len = len.parse().ok()?;
        let key = match shared {
            false => Key::Sum { sum: u64::from_str_radix(hash, 16).ok()?, len },
            true => Key::Digest { digest: format!("blake3:{hash}").parse().ok()?, len },
        };
        (key.name() == name).then_some(key)
    }
}

/// An origin's directory.
pub(super) fn origin(origin: &str) -> String {
    hex(&Sha256::digest(origin.as_bytes())[..16])
}

/// A temporary file's name, from a random number.
pub(super) fn tmp(n: u64) -> String {
    format!("put-{n:016x}")
}

pub(super) fn is_origin(name: &str) -> bool {
    is_hex(name, 32)
}

pub(super) fn is_fan(name: &str) -> bool {
    is_hex(name, 2)
}

pub(super) fn is_tmp(name: &str) -> bool {
    name.strip_prefix("put-").is_some_and(|n| is_hex(n, 16))
}

/// Whether `name` is `digits` lowercase hex digits.
fn is_hex(name: &str, digits: usize) -> bool {
    name.len() == digits && name.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_tag_begins_with_its_head() {
        assert!(TAG.starts_with(TAG_HEAD));
    }

    #[test]
    fn only_exact_names_are_entries() {
        let key = Key::Sum { sum: 0xab00_0000_0000_0001, len: 5 };
        assert_eq!((key.name().as_str(), key.fan().as_str()), ("ab00000000000001-5", "ab"));
        assert_eq!(Key::parse("ab00000000000001-5", false), Some(key));
        assert_eq!(Key::parse("ab00000000000001-5", true), None, "a checksum's name is no digest's");
        let digest = Key::Digest { digest: Digest::of(b"x"), len: 1 };
        assert_eq!(Key::parse(&digest.name(), true), Some(digest));
        assert_eq!(Key::parse(&digest.name(), false), None, "nor a digest's a checksum's");
        assert_eq!(Key::parse(&digest.name().to_uppercase(), true), None);
        assert!(digest.matches(b"x") && !digest.matches(b"y") && !digest.matches(b"xx"));
        let sum = Key::Sum { sum: checksum(b"x"), len: 1 };
        assert!(sum.matches(b"x") && !sum.matches(b"y"));
        for name in [
            "AB00000000000001-5",
            "ab00000000000001-05",
            "ab00000000000001-+5",
            "+b00000000000001-5",
            "b00000000000001-5",
            "ab00000000000001-5.lock",
            "ab00000000000001-5 ",
            "ab00000000000001-",
            "ab00000000000001-18446744073709551616",
            "main.lock",
            "",
        ] {
            assert_eq!(Key::parse(name, false), None, "{name:?}");
            assert_eq!(Key::parse(name, true), None, "{name:?}");
        }
        assert!(is_origin(&origin("http://example.com/packs")) && is_fan("0f") && is_tmp(&tmp(7)));
        assert!(!is_origin("0123456789ABCDEF0123456789ABCDEF") && !is_fan("0") && !is_tmp("put-0123"));
    }

    proptest! {
        /// Every key's name parses back to it; any name that parses is the
        /// name of what it parses to.
        #[test]
        fn names_round_trip(sum in any::<u64>(), len in any::<u64>(), digest in any::<[u8; 32]>(), name in "[0-9a-fA-F+-]{0,72}") {
            for key in [Key::Sum { sum, len }, Key::Digest { digest: Digest(digest), len }] {
                prop_assert_eq!(Key::parse(&key.name(), key.shared()), Some(key));
            }
            for shared in [false, true] {
                if let Some(k) = Key::parse(&name, shared) {
                    prop_assert_eq!(k.name(), name.clone());
                }
            }
        }
    }
}
