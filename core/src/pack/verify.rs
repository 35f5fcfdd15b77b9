//! [`PackFs::verify`]: every check a pack has, blobs included, with a list
//! of the entries whose content is bad (the first [`VerifyReport::LISTED`],
//! the rest counted).

use std::collections::BTreeMap;

use xxhash_rust::xxh3::Xxh3Default;

use super::blob::BlobRecord;
use super::chunk::ChunkTable;
use super::index::Index;
use super::inode::Body;
use super::reader::{ByteSource, PackFs};
use crate::error::corrupt::{CorruptPack, Structure};
use crate::path::MAX_PATH;
use crate::{Error, Ino, Result};

/// What [`PackFs::verify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyReport {
    /// Blobs checked.
    pub blobs: u64,
    /// Bytes of blob content checked.
    pub bytes: u64,
    /// Entries whose content failed its checksum, in walk order (a bad blob
    /// shared by several names is reported under each): the first
    /// [`VerifyReport::LISTED`] of them.
    pub bad: Vec<BadEntry>,
    /// Bad entries past those listed in `bad`.
    pub unlisted: u64,
}

impl VerifyReport {
    /// Most bad entries listed: a small pack can name one bad blob a
    /// million times, and each entry holds a path of up to 4 KiB.
    pub const LISTED: usize = 1000;

    /// True when nothing is bad.
    pub fn is_ok(&self) -> bool {
        self.bad.is_empty()
    }

    /// Bad entries in all, listed or not.
    pub fn bad_count(&self) -> u64 {
        self.bad.len() as u64 + self.unlisted
    }

    fn push(&mut self, entry: impl FnOnce() -> BadEntry) {
        if self.bad.len() < Self::LISTED {
            self.bad.push(entry());
        } else {
            self.unlisted += 1;
        }
    }
}

/// A file whose content failed its checksum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadEntry {
    /// Its path from the root, `/`-separated, without a leading `/` (the
    /// last [`MAX_PATH`] bytes of it, after `…/`, if longer). Empty for a
    /// blob no entry names.
    pub path: String,
    /// Its inode number (`None` for a blob no entry names).
    pub ino: Option<Ino>,
    /// The failed check: [`CorruptKind::Checksum`](super::CorruptKind::Checksum)
    /// at the blob's offset.
    pub error: CorruptPack,
}

/// The last `MAX_PATH` bytes of `dir/name` (after `…/` if cut), cut at a
/// character boundary, in time independent of `dir`'s length: a pack's
/// directories can nest as deep as it likes.
fn tail(dir: &str, name: &str) -> String {
    // No more of `dir` than this can show.
    let from = dir.ceil_char_boundary(dir.len().saturating_sub(MAX_PATH));
    let path = if dir.is_empty() { name.to_owned() } else { format!("{}/{name}", &dir[from..]) };
    if from == 0 && path.len() <= MAX_PATH {
        return path;
    }
    format!("…/{}", &path[path.ceil_char_boundary(path.len().saturating_sub(MAX_PATH))..])
}

impl<S: ByteSource> PackFs<S> {
    /// Checks everything: the header, trailer, index checksum and structure
    /// again (an error there is returned as `Err`), then every extent
    /// against its BLAKE3 digest where the pack has a digest table, else
    /// its checksum (failures are listed in the report). Blobs that pass are
    /// remembered by [`verify_on_read`](super::ReadOptions::verify_on_read).
    /// Time O(pack size); memory O(entries) at most, and no recursion.
    pub fn verify(&self) -> Result<VerifyReport> {
        let (index, decoded) = Index::open(self.source(), self.lazy, self.pin)?;
        let pack = match &decoded {
            Some(d) => d,
            None => index.region_in(self.source())?,
        };
        let mut report = VerifyReport::default();
        let mut bad: Vec<(u64, CorruptPack)> = Vec::new();
        // Version 2: every chunk's stored bytes once (a chunk that passes is
        // remembered, as blobs are in version 1); then each blob's content.
        let mut bad_chunks = BTreeMap::new();
        if let Some(t) = &index.chunks {
            for c in 0..t.count {
                let r = t.get(pack, c)?;
                match index.check_extent(pack, c, self.extent_bytes(c, r.extent(), Structure::Chunk)?, true) {
                    Ok(()) => self.verified.iter().for_each(|v| v.set(c)),
                    Err(e) => {
                        bad_chunks.insert(c, e);
                    }
                }
            }
        }
        let mut buf = Vec::new();
        for k in 0..index.blob_count() {
            let b = index.blob(pack, k)?;
            report.blobs += 1;
            report.bytes += b.len;
            let checked = match &index.chunks {
                None => {
                    let checked =
                        index.check_extent(pack, k, self.extent_bytes(k, b.extent()?, Structure::Blob)?, true);
                    if checked.is_ok() {
                        self.verified.iter().for_each(|v| v.set(k));
                    }
                    checked
                }
                Some(t) => {
                    let range = b.extent()?;
                    match index.extents_of(pack, k, range.clone())?.find_map(|c| bad_chunks.get(&c)) {
                        Some(e) => Err(e.clone()),
                        None => self.check_content(t, &b, range, &mut buf)?,
                    }
                }
            };
            if let Err(e) = checked {
                bad.push((k, e));
            }
        }
        if !bad.is_empty() {
            self.name_bad_blobs(&index, pack, &bad, &mut report)?;
        }
        Ok(report)
    }

    /// Checks a version 2 blob's decoded content against its checksum, a
    /// chunk at a time through `buf`. A corrupt pack is the inner error;
    /// anything else (bytes not loaded) the outer.
    fn check_content(
        &self,
        t: &ChunkTable,
        b: &BlobRecord,
        range: std::ops::Range<u64>,
        buf: &mut Vec<u8>,
    ) -> Result<Result<(), CorruptPack>> {
        buf.resize(usize::try_from(t.chunk_size).unwrap_or(1 << 20), 0);
        let mut sum = Xxh3Default::new();
        let mut off = 0;
        while off < b.len {
            match self.read_content(0, range.clone(), off, buf) {
                Ok(0) => break,
                Ok(n) => {
                    sum.update(&buf[..n]);
                    off += n as u64;
                }
                Err(Error::Corrupt(c)) => return Ok(Err(c)),
                Err(e) => return Err(e),
            }
        }
        Ok(b.check_sum(sum.digest()))
    }

    /// Walks the tree depth-first with an explicit stack (depth is not
    /// bounded by anything but the pack) and one shared path buffer, and
    /// reports the names of files whose blob is in `bad` (sorted by blob),
    /// as many as the report lists.
    fn name_bad_blobs(
        &self,
        index: &Index,
        pack: &[u8],
        bad: &[(u64, CorruptPack)],
        report: &mut VerifyReport,
    ) -> Result<()> {
        let mut named = vec![false; bad.len()];
        let mut path = String::new();
        // (next dirent, end of run, path length to restore when done)
        let mut stack: Vec<(u64, u64, usize)> = Vec::new();
        if let Body::Dir { first, count, .. } = index.inode(pack, 0)?.body {
            stack.push((first, first.saturating_add(count.into()), 0));
        }
        while let Some(top) = stack.last_mut() {
            let (j, end, restore) = *top;
            if j >= end {
                path.truncate(restore);
                stack.pop();
                continue;
            }
            top.0 += 1;
            let d = index.dirent(pack, j)?;
            let name = index.name(pack, &d)?;
            let i = u64::from(d.inode);
            let len = path.len();
            match index.inode(pack, i)?.body {
                Body::Dir { first, count, .. } => {
                    if !path.is_empty() {
                        path.push('/');
                    }
                    path.push_str(name);
                    stack.push((first, first.saturating_add(count.into()), len));
                }
                Body::File { blob } => {
                    if let Ok(b) = bad.binary_search_by_key(&blob, |(k, _)| *k) {
                        let error = &bad[b].1;
                        report.push(|| BadEntry { path: tail(&path, name), ino: Some(i + 1), error: error.clone() });
                        named[b] = true;
                    }
                }
                Body::Symlink { .. } => {}
            }
        }
        for (b, (_, e)) in bad.iter().enumerate() {
            if !named[b] {
                report.push(|| BadEntry { path: String::new(), ino: None, error: e.clone() });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_paths_are_cut_at_char_boundaries() {
        assert_eq!(tail("a", "b"), "a/b");
        assert_eq!(tail("", "b"), "b");
        let long = "é".repeat(MAX_PATH);
        for (dir, name) in [(long.as_str(), "f"), ("a", long.as_str()), (&long[..MAX_PATH - 2], "xy")] {
            let t = tail(dir, name);
            assert!(t.starts_with("…/") && t.len() <= MAX_PATH + "…/".len(), "{t}");
            assert!(format!("{dir}/{name}").ends_with(t.trim_start_matches("…/")));
        }
        assert_eq!(tail(&"d".repeat(MAX_PATH - 2), "f").len(), MAX_PATH, "exactly MAX_PATH: not cut");
    }
}
