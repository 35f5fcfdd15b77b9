//! BLAKE3 digests: one per extent in the digest table, and one of the
//! whole pack, by which a user pins it (`docs/pack-format.md` §18).
//!
//! ```text
//! digest table (compat flag DIGESTS; in the index region, at the first
//! multiple of 8 after the string pool; version 2: before the chunk table)
//! extent_count records of 32 bytes: BLAKE3 of extent k's stored bytes
//! ```
//!
//! The pack digest is the BLAKE3 of the header followed by the bytes from
//! `index_offset` to the end (the index region as stored, and the
//! trailer). The header and trailer name every table; the index region
//! holds the digest table; so the pack digest commits to every extent's
//! stored bytes. xxh3 stays for damage: a pack that is not pinned is read
//! as before, and a pinned one checks each extent against its digest
//! instead.

use std::fmt;
use std::ops::Range;

/// The compat flag of a pack with a digest table. A reader that does not
/// know it reads the pack as before (the table lies where readers ignore
/// bytes: between the string pool and what follows it).
pub(crate) const DIGESTS: u32 = 1;
/// A digest's size in bytes.
pub(crate) const DIGEST_LEN: usize = 32;

/// A BLAKE3-256 digest: of an extent's stored bytes, or of a pack (see
/// the module doc). Written `blake3:` and 64 lowercase hex digits.
///
/// ```
/// use packfs_core::pack::Digest;
///
/// let d = Digest::of(b"hello");
/// let text = d.to_string();
/// assert!(text.starts_with("blake3:") && text.len() == 7 + 64);
/// assert_eq!(text.parse::<Digest>(), Ok(d));
/// assert!("blake3:00".parse::<Digest>().is_err());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; DIGEST_LEN]);

/// The prefix of a digest's text form.
const PREFIX: &str = "blake3:";

impl Digest {
    /// The BLAKE3 of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(*blake3::hash(bytes).as_bytes())
    }

    /// The 64 hex digits, without the prefix.
    pub fn hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{PREFIX}{}", self.hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Text that is not `blake3:` and 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a digest: write blake3: and 64 hex digits (as `packfs info` prints it)")]
pub struct DigestError(pub String);

impl std::str::FromStr for Digest {
    type Err = DigestError;

    fn from_str(s: &str) -> Result<Digest, DigestError> {
        let bad = || DigestError(s.chars().take(80).collect());
        let hex = s
            .strip_prefix(PREFIX)
            .filter(|h| h.len() == 2 * DIGEST_LEN && h.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(bad)?;
        // Checked above: every byte is a hex digit.
        let digit = |b: u8| match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            _ => b.to_ascii_lowercase().wrapping_sub(b'a' - 10),
        };
        let mut out = [0u8; DIGEST_LEN];
        for (o, pair) in out.iter_mut().zip(hex.as_bytes().chunks_exact(2)) {
            *o = digit(pair[0]) << 4 | digit(pair[1]);
        }
        Ok(Digest(out))
    }
}

/// `PACK@blake3:HEX`, as a command line or a mount names a pinned pack:
/// the pack's name and its pin, or the text as it is and no pin when it
/// does not end so. A suffix that starts as a pin but is not one is an
/// error, never part of a file name.
///
/// ```
/// use packfs_core::pack::{Digest, split_pin};
///
/// let d = Digest::of(b"x");
/// assert_eq!(split_pin(&format!("a@b.pack@{d}")), Ok(("a@b.pack", Some(d))));
/// assert_eq!(split_pin("plain.pack"), Ok(("plain.pack", None)));
/// assert!(split_pin("p.pack@blake3:zz").is_err());
/// ```
pub fn split_pin(text: &str) -> Result<(&str, Option<Digest>), DigestError> {
    match text.rfind("@blake3:") {
        Some(at) => Ok((&text[..at], Some(text[at + 1..].parse()?))),
        None => Ok((text, None)),
    }
}

/// The pack digest of a pack whose header is `header` and whose bytes from
/// `index_offset` on are `tail` (index region and trailer).
pub(crate) fn pack_digest(header: &[u8], tail: &[u8]) -> Digest {
    let mut h = blake3::Hasher::new();
    h.update(header);
    h.update(tail);
    Digest(*h.finalize().as_bytes())
}

/// Where the digest table of `count` extents lies in an index region of
/// `len` bytes whose string pool ends at `strings_end` and whose next
/// structure (version 2's chunk table, else the region's end) starts at
/// `limit`: `None` when it does not fit.
pub(crate) fn table_span(strings_end: usize, limit: usize, count: u64) -> Option<Range<usize>> {
    let start = strings_end.checked_next_multiple_of(8)?;
    let len = usize::try_from(count).ok()?.checked_mul(DIGEST_LEN)?;
    let end = start.checked_add(len)?;
    (end <= limit).then_some(start..end)
}

/// Record `k` of the digest table `table`.
pub(crate) fn get(table: &[u8], k: u64) -> Option<Digest> {
    let k = usize::try_from(k).ok()?;
    let (records, _) = table.as_chunks::<DIGEST_LEN>();
    records.get(k).map(|d| Digest(*d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip_and_reject_near_misses() {
        let d = Digest::of(b"abc");
        // BLAKE3's published test vector for "abc".
        assert_eq!(d.hex(), "6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85");
        assert_eq!(d.to_string().parse::<Digest>(), Ok(d));
        assert_eq!(d.to_string().to_uppercase().replace("BLAKE3", "blake3").parse::<Digest>(), Ok(d));
        let text = d.to_string();
        let signed = format!("blake3:+{}", &d.hex()[1..]);
        for bad in [&text[..text.len() - 1], &format!("{text}0"), &text.replace("blake3", "sha256"), &signed] {
            assert!(bad.parse::<Digest>().is_err(), "{bad}");
        }
        let mut multibyte = text.clone();
        multibyte.replace_range(text.len() - 2.., "é");
        assert!(multibyte.parse::<Digest>().is_err());
    }

    proptest::proptest! {
        /// Any text is a digest, a pinned name or an error, never a panic;
        /// a digest's text and a pinned name read back as themselves.
        #[test]
        fn any_text_parses_or_is_refused(text in ".{0,90}", bytes in proptest::prelude::any::<[u8; 32]>()) {
            let _ = text.parse::<Digest>();
            let _ = split_pin(&text);
            let _ = split_pin(&format!("{text}@blake3:{text}"));
            let d = Digest(bytes);
            proptest::prop_assert_eq!(d.to_string().parse::<Digest>(), Ok(d));
            let pinned = format!("{text}@{d}");
            proptest::prop_assert_eq!(split_pin(&pinned), Ok((text.as_str(), Some(d))));
        }
    }

    #[test]
    fn the_table_lies_after_the_strings_within_its_limit() {
        assert_eq!(table_span(13, 16 + 64, 2), Some(16..80));
        assert_eq!(table_span(13, 79, 2), None);
        assert_eq!(table_span(usize::MAX - 3, usize::MAX, 1), None);
        assert_eq!(table_span(0, 100, u64::MAX), None);
    }
}
