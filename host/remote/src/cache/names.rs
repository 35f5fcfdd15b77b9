//! The names the cache makes, and nothing else: what it may touch is
//! decided by these forms, parsed exactly (a name is the cache's only if
//! formatting what it parses to gives it back).
//!
//! ```text
//! ROOT/CACHEDIR.TAG               the tag: this directory is a cache
//! ROOT/evict.lock                 one eviction at a time
//! ROOT/tmp/put-HHHHHHHHHHHHHHHH   an entry being written (16 hex digits)
//! ROOT/ORIGIN/FAN/SUM-LEN         an entry
//! ROOT/ORIGIN/FAN/SUM-LEN.lock    its fetch lock, while someone holds it
//! ```
//!
//! ORIGIN is 32 lowercase hex digits (the first half of the SHA-256 of
//! the origin), SUM the entry's checksum in 16, FAN SUM's first two, LEN
//! its length in decimal.

use sha2::{Digest, Sha256};

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

/// An entry's name: the checksum and length of its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub sum: u64,
    pub len: u64,
}

impl Key {
    /// `SUM-LEN`.
    pub(super) fn name(self) -> String {
        format!("{:016x}-{}", self.sum, self.len)
    }

    /// `SUM-LEN.lock`.
    pub(super) fn lock_name(self) -> String {
        format!("{}.lock", self.name())
    }

    /// The fan directory: the checksum's first byte.
    pub(super) fn fan(self) -> String {
        format!("{:02x}", self.sum >> 56)
    }

    /// The key whose entry is `name`, if `name` is exactly an entry's name
    /// (no uppercase, no leading zeros, no sign).
    pub(super) fn parse(name: &str) -> Option<Key> {
        let (sum, len) = name.split_once('-')?;
        let key = Key { sum: u64::from_str_radix(sum, 16).ok()?, len: len.parse().ok()? };
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
        let key = Key { sum: 0xab00_0000_0000_0001, len: 5 };
        assert_eq!((key.name().as_str(), key.fan().as_str()), ("ab00000000000001-5", "ab"));
        assert_eq!(Key::parse("ab00000000000001-5"), Some(key));
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
            assert_eq!(Key::parse(name), None, "{name:?}");
        }
        assert!(is_origin(&origin("http://example.com/packs")) && is_fan("0f") && is_tmp(&tmp(7)));
        assert!(!is_origin("0123456789ABCDEF0123456789ABCDEF") && !is_fan("0") && !is_tmp("put-0123"));
    }

    proptest! {
        /// Every key's name parses back to it; any name that parses is the
        /// name of what it parses to.
        #[test]
        fn names_round_trip(sum in any::<u64>(), len in any::<u64>(), name in "[0-9a-fA-F+-]{0,24}") {
            let key = Key { sum, len };
            prop_assert_eq!(Key::parse(&key.name()), Some(key));
            if let Some(k) = Key::parse(&name) {
                prop_assert_eq!(k.name(), name);
            }
        }
    }
}
