//! The §11 invariants (`docs/pack-format.md`), checked in one pass over
//! the tables when a pack opens ([`Index::check_structure`]) — time and
//! memory proportional to the index (entries), never to the data:
//!
//! - every blob record lies inside the data section, aligned, in order,
//!   without overlap (version 2: inside the content space its chunks tile);
//! - every file names an existing blob of exactly its size; every symlink
//!   target lies in the string pool and is valid;
//! - the directories' entry runs tile the dirent table in inode order, each
//!   run's names valid and strictly increasing;
//! - every entry names an inode other than the root; a directory is named by
//!   exactly one entry, of a directory *before* it, which is its `parent`
//!   (so following parents strictly decreases the index and ends at the
//!   root: no cycle can exist, and every inode is reachable);
//! - every inode other than the root is named at least once; link counts
//!   agree with the entries.

use super::{Index, at};
use crate::error::corrupt::{CorruptKind, CorruptPack, Structure};
use crate::pack::blob;
use crate::pack::cursor::{bad_field, range};
use crate::pack::dirent;
use crate::pack::inode::{self, Body};
use crate::path::validate_name;

impl Index {
    /// The one structural pass described in the module doc.
    pub(super) fn check_structure(&self, region: &[u8]) -> Result<(), CorruptPack> {
        let t = &self.trailer;
        // Cannot overflow: Trailer::decode checked it.
        let data_end = t.data_offset.saturating_add(t.data_len);
        // Version 1's blobs lie in the data section, aligned; version 2's
        // in the content space, which its chunks tile.
        let (align, mut prev_end, end) = match &self.chunks {
            None => (self.header.align(), t.data_offset, data_end),
            Some(c) => {
                c.check(region, t.data_offset..data_end, self.dictionary.is_some())?;
                (1, 0, c.content_len)
            }
        };
        for k in 0..t.blobs.count {
            let b = self.blob(region, k)?;
            let at = at(t.blobs, blob::RECORD_LEN, k);
            if !b.offset.is_multiple_of(align) {
                return Err(bad_field(at, Structure::BlobRecord, "offset", b.offset));
            }
            prev_end = range(Structure::BlobRecord, "offset", b.offset, b.len, prev_end, end, at)?;
        }

        // Names per inode. Bounded by the pack's size: each inode is 48 bytes of it.
        let count = usize::try_from(t.inodes.count)
            .map_err(|_| bad_field(0, Structure::Trailer, "inode_count", t.inodes.count))?;
        let mut names = vec![0u32; count];
        let mut next_run = 0u64;
        for i in 0..t.inodes.count {
            let at = at(t.inodes, inode::RECORD_LEN, i);
            let r = self.inode(region, i)?;
            if i == 0 && r.kind() != crate::FileType::Dir {
                return Err(CorruptPack::new(at, CorruptKind::BadTree { inode: 0 }));
            }
            match r.body {
                Body::File { blob } => {
                    if blob >= t.blobs.count {
                        return Err(bad_field(at, Structure::Inode, "data", blob));
                    }
                    if self.blob(region, blob)?.len != r.size {
                        return Err(bad_field(at, Structure::Inode, "size", r.size));
                    }
                }
                Body::Symlink { .. } => {
                    let target = self.target(region, &r)?.unwrap_or_default();
                    if target.contains('\0') {
                        return Err(CorruptPack::new(at, CorruptKind::BadName));
                    }
                }
                Body::Dir { first, count, parent } => {
                    // The root is its own parent; any other directory's comes before it.
                    let parent_ok = if i == 0 { parent == 0 } else { u64::from(parent) < i };
                    if !parent_ok {
                        return Err(CorruptPack::new(at, CorruptKind::BadTree { inode: i }));
                    }
                    if first != next_run {
                        return Err(CorruptPack::new(at, CorruptKind::BadRun { expected: next_run, actual: first }));
                    }
                    next_run = range(Structure::Inode, "data", first, count.into(), 0, t.dirents.count, at)?;
                    let subdirs = self.check_run(region, i, first, count.into(), &mut names)?;
                    let want = subdirs.saturating_add(2);
                    if u64::from(r.nlink) != want {
                        let kind = CorruptKind::LinkCount { inode: i, expected: r.nlink.into(), actual: want };
                        return Err(CorruptPack::new(at, kind));
                    }
                }
            }
        }
        if next_run != t.dirents.count {
            return Err(CorruptPack::new(
                t.dirents.offset,
                CorruptKind::BadRun { expected: t.dirents.count, actual: next_run },
            ));
        }
        for (i, &n) in names.iter().enumerate().skip(1) {
            let i = i as u64;
            let at = at(t.inodes, inode::RECORD_LEN, i);
            if n == 0 {
                return Err(CorruptPack::new(at, CorruptKind::BadTree { inode: i }));
            }
            let r = self.inode(region, i)?;
            if r.kind() != crate::FileType::Dir && r.nlink != n {
                let kind = CorruptKind::LinkCount { inode: i, expected: r.nlink.into(), actual: n.into() };
                return Err(CorruptPack::new(at, kind));
            }
        }
        Ok(())
    }

    /// Checks directory `dir`'s run of entries; counts names per inode in
    /// `names`; returns the number of subdirectories.
    fn check_run(
        &self,
        region: &[u8],
        dir: u64,
        first: u64,
        count: u64,
        names: &mut [u32],
    ) -> Result<u64, CorruptPack> {
        let t = &self.trailer;
        let mut prev: Option<&str> = None;
        let mut subdirs = 0u64;
        for j in first..first.saturating_add(count) {
            let at = at(t.dirents, dirent::RECORD_LEN, j);
            let d = self.dirent(region, j)?;
            let name = self.name(region, &d).map_err(|e| CorruptPack::new(at, e.kind))?;
            if validate_name(name).is_err() {
                return Err(CorruptPack::new(at, CorruptKind::BadName));
            }
            if prev.is_some_and(|p| p.as_bytes() >= name.as_bytes()) {
                return Err(CorruptPack::new(at, CorruptKind::Unsorted));
            }
            prev = Some(name);
            let target = u64::from(d.inode);
            let slot = usize::try_from(d.inode).ok().filter(|_| target != 0).and_then(|n| names.get_mut(n));
            let Some(slot) = slot else { return Err(bad_field(at, Structure::Dirent, "inode", target)) };
            *slot = slot.saturating_add(1);
            let named = *slot;
            if let Body::Dir { parent, .. } = self.inode(region, target)?.body {
                if target <= dir || named > 1 || u64::from(parent) != dir {
                    return Err(CorruptPack::new(at, CorruptKind::BadTree { inode: target }));
                }
                subdirs += 1;
            }
        }
        Ok(subdirs)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{region, sample};
    use super::*;
    use crate::Error;

    /// Opens `sample()` with `(table, record, field offset, value, width)`
    /// written over it, checksums recomputed.
    fn kind_after(edits: &[(char, u64, usize, u64, usize)]) -> CorruptKind {
        let mut b = sample();
        let (index, _) = Index::open(&b, false, None).unwrap();
        let t = index.trailer;
        for &(table, i, field, value, width) in edits {
            let (base, len) = match table {
                'i' => (t.inodes.offset, inode::RECORD_LEN),
                'd' => (t.dirents.offset, dirent::RECORD_LEN),
                _ => (t.blobs.offset, blob::RECORD_LEN),
            };
            let at = usize::try_from(base + i * len).unwrap() + field;
            b[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
        }
        crate::pack::fuzzing::reseal(&mut b);
        match Index::open(&b, false, None) {
            Err(Error::Corrupt(c)) => c.kind,
            other => panic!("{edits:?} gave {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn index_rejects_a_malformed_tree() {
        let tree = |i| CorruptKind::BadTree { inode: i };
        // Directory `a` named twice (by `a` and by `b`).
        assert_eq!(kind_after(&[('d', 1, 12, 1, 4)]), tree(1));
        // A parent that does not come first: the start of a possible cycle.
        assert_eq!(kind_after(&[('i', 1, 44, 2, 4)]), tree(1));
        assert_eq!(kind_after(&[('i', 1, 44, 1, 4)]), tree(1));
        // The root's parent is itself.
        assert_eq!(kind_after(&[('i', 0, 44, 3, 4)]), tree(0));
        // The root named by an entry, an inode past the table.
        let bad_inode = |v| CorruptKind::BadField { of: Structure::Dirent, field: "inode", value: v };
        assert_eq!(kind_after(&[('d', 2, 12, 0, 4)]), bad_inode(0));
        assert_eq!(kind_after(&[('d', 3, 12, 99, 4)]), bad_inode(99));
        // The symlink left unnamed (its name points at the file, whose link
        // count is raised to match).
        assert_eq!(kind_after(&[('d', 3, 12, 3, 4), ('i', 3, 20, 3, 4)]), tree(4));
        // The root is not a directory.
        assert_eq!(kind_after(&[('i', 0, 0, 1, 1)]), tree(0));
    }

    #[test]
    fn index_rejects_bad_runs_names_and_counts() {
        // Names out of order: `a` and `b` swapped.
        let b_name = {
            let b = sample();
            let (index, _) = Index::open(&b, false, None).unwrap();
            index.dirent(region(&b, &index), 1).unwrap().name_offset
        };
        assert_eq!(kind_after(&[('d', 0, 0, b_name, 8)]), CorruptKind::Unsorted);
        // A name that is not a valid name.
        assert_eq!(kind_after(&[('d', 0, 8, 0, 2)]), CorruptKind::BadName);
        assert!(matches!(kind_after(&[('d', 0, 0, u64::MAX, 8)]), CorruptKind::OutOfBounds { .. }));
        // Runs that do not tile the table.
        assert_eq!(kind_after(&[('i', 1, 32, 0, 8)]), CorruptKind::BadRun { expected: 4, actual: 0 });
        assert_eq!(kind_after(&[('i', 0, 40, 3, 4)]), CorruptKind::BadRun { expected: 3, actual: 4 });
        assert_eq!(kind_after(&[('i', 0, 40, 5, 4)]), CorruptKind::Unsorted);
        assert!(matches!(kind_after(&[('i', 2, 40, 1, 4)]), CorruptKind::OutOfBounds { .. }));
        // Link counts.
        let links = |i, e, a| CorruptKind::LinkCount { inode: i, expected: e, actual: a };
        assert_eq!(kind_after(&[('i', 3, 20, 1, 4)]), links(3, 1, 2));
        assert_eq!(kind_after(&[('i', 0, 20, 5, 4)]), links(0, 5, 4));
    }

    #[test]
    fn index_rejects_bad_blobs_and_targets() {
        let field = |of, field, value| CorruptKind::BadField { of, field, value };
        assert_eq!(kind_after(&[('i', 3, 32, 50, 8)]), field(Structure::Inode, "data", 50));
        assert_eq!(kind_after(&[('i', 3, 24, 999, 8)]), field(Structure::Inode, "size", 999));
        assert!(matches!(kind_after(&[('i', 4, 32, 1 << 40, 8)]), CorruptKind::OutOfBounds { .. }));
        assert_eq!(kind_after(&[('b', 0, 0, 65, 8)]), field(Structure::BlobRecord, "offset", 65));
        assert!(matches!(kind_after(&[('b', 0, 8, 1 << 20, 8)]), CorruptKind::OutOfBounds { .. }));
        assert!(matches!(kind_after(&[('b', 0, 0, 0, 8)]), CorruptKind::OutOfBounds { .. }));
    }
}
