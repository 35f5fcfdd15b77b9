//! [`DirKey`]: a directory entry's key in the entry treap, and the
//! [`Probe`] a search compares keys with.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::Ino;

/// A directory entry's key, ordered as `(dir, name bytes)`. The name's first
/// 16 bytes, kept as two integers, settle most comparisons without reading
/// the name; the name is shared with the listings that return it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct DirKey {
    pub(super) dir: Ino,
    head: Head,
    pub(super) name: Arc<str>,
}

/// The first 16 bytes of a name, zero-padded, as two big-endian integers
/// (not one `u128`: its 16-byte alignment makes every treap node an
/// aligned allocation, which wasm32's allocator serves slowly). If two
/// heads differ they order as their names do (padding sorts a name before
/// every longer name it begins); equal heads leave it to the rest.
type Head = (u64, u64);

fn head(name: &str) -> Head {
    let mut bytes = [0; 16];
    let n = name.len().min(16);
    bytes[..n].copy_from_slice(&name.as_bytes()[..n]);
    let (hi, lo) = bytes.split_at(8);
    (u64::from_be_bytes(hi.try_into().unwrap_or_default()), u64::from_be_bytes(lo.try_into().unwrap_or_default()))
}

/// A position among directory entries, its head computed once per search.
#[derive(Clone, Copy)]
pub(super) struct Probe<'a> {
    dir: Ino,
    head: Head,
    name: &'a str,
}

impl<'a> Probe<'a> {
    pub(super) fn new(dir: Ino, name: &'a str) -> Self {
        Probe { dir, head: head(name), name }
    }
}

impl DirKey {
    pub(super) fn new(dir: Ino, name: Arc<str>) -> Self {
        DirKey { dir, head: head(&name), name }
    }

    pub(super) fn cmp_to(&self, at: &Probe<'_>) -> Ordering {
        self.dir.cmp(&at.dir).then(self.head.cmp(&at.head)).then_with(|| {
            // Equal heads: names of up to 16 bytes are all in them, so they
            // differ only in trailing NULs, and length orders them — read
            // from the key itself, without loading the name.
            if self.name.len() <= 16 && at.name.len() <= 16 {
                self.name.len().cmp(&at.name.len())
            } else {
                (*self.name).cmp(at.name)
            }
        })
    }
}

impl Ord for DirKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_to(&Probe { dir: other.dir, head: other.head, name: &other.name })
    }
}

impl PartialOrd for DirKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn name() -> impl Strategy<Value = String> {
        // Short and long names over a tiny alphabet (NUL included, though
        // real names never hold one), so that shared heads, prefixes and
        // equal lengths are common.
        proptest::collection::vec(prop_oneof![Just('a'), Just('b'), Just('\0'), Just('é')], 0..40)
            .prop_map(|cs| cs.into_iter().collect())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

        /// Keys order exactly as `(dir, name bytes)`, whatever the names.
        #[test]
        fn keys_order_as_dir_then_name(a in name(), cut in 0usize..40, tail in name(), da in 0u64..2, db in 0u64..2) {
            // `b` shares a prefix of `a`: equal heads are common.
            let b: String = a.chars().take(cut).chain(tail.chars().take(cut % 5)).collect();
            let (ka, kb) = (DirKey::new(da, a.as_str().into()), DirKey::new(db, b.as_str().into()));
            prop_assert_eq!(ka.cmp(&kb), (da, a.as_bytes()).cmp(&(db, b.as_bytes())));
            prop_assert_eq!(ka.cmp_to(&Probe::new(db, &b)), ka.cmp(&kb));
        }
    }
}
