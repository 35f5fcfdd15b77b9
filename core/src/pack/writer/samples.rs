//! The pass before the walk that trains a version 2 pack's zstd dictionary
//! ([`Writer::train`]): the small files, those that would share chunks,
//! are what it is trained on, and what it serves.

use std::collections::{HashSet, VecDeque};
use std::hash::BuildHasher;
use std::io::Write;

use super::error::WriteError;
use super::read::read_exact;
use super::walk::Writer;
use crate::pack::dictionary::Trained;
use crate::{FileType, Ino};

/// Samples read at most: zstd's trainer wants about 100 times the
/// dictionary, and takes time in proportion.
const SAMPLE_BUDGET: u64 = 8 << 20;
/// The longest dictionary trained: on trees of source files, 128 KiB
/// gained 1–3% of the pack's size over 64 KiB.
const MAX_DICT: u64 = 128 << 10;
/// A dictionary is at most this fraction of its samples: a lazy reader
/// fetches it whole (it is in the index) before any small file, so on a
/// small tree it must stay small beside the few files a read wants.
const DICT_FRACTION: u64 = 64;
/// Small files must hold at least this much for a dictionary: below it,
/// the dictionary would cost more than it saves.
const MIN_SAMPLES: u64 = 256 << 10;

impl<H: BuildHasher, W: Write> Writer<'_, H, W> {
    /// A dictionary for chunks of `chunk_size` at zstd `level`, trained
    /// on the files smaller than a chunk (every one, or an even spread of
    /// them up to the budget, in walk order); `None` when they hold too
    /// little, or the trainer finds too little to go on. The walk checks
    /// the tree; this pass skips what it would refuse.
    pub(super) fn train(&self, chunk_size: u64, level: i32) -> Result<Option<Trained>, WriteError> {
        let mut small: Vec<(Ino, u64)> = Vec::new();
        let mut total = 0u64;
        let mut seen = HashSet::with_hasher(self.tables);
        let mut queue = VecDeque::from([self.fs.root()]);
        seen.insert(self.fs.root());
        while let Some(dir) = queue.pop_front() {
            for e in self.entries(dir)? {
                if !seen.insert(e.ino) {
                    continue;
                }
                match e.kind {
                    FileType::Dir => queue.push_back(e.ino),
                    FileType::File => {
                        let size = self.fs.metadata(e.ino)?.size;
                        if size > 0 && size < chunk_size {
                            small.push((e.ino, size));
                            total += size;
                        }
                    }
                    FileType::Symlink => {}
                }
            }
        }
        if total < MIN_SAMPLES {
            return Ok(None);
        }
        let stride = total.div_ceil(SAMPLE_BUDGET).max(1);
        let (mut bytes, mut sizes) = (Vec::new(), Vec::new());
        for &(ino, size) in small.iter().step_by(usize::try_from(stride).unwrap_or(usize::MAX)) {
            // At most a chunk (1 MiB): it fits.
            let n = usize::try_from(size).map_err(|_| WriteError::BadSource { ino, what: "a size that changed" })?;
            let at = bytes.len();
            bytes.resize(at + n, 0);
            read_exact(self.fs, ino, 0, &mut bytes[at..])?;
            sizes.push(n);
        }
        let max_len = (total / DICT_FRACTION).min(MAX_DICT);
        Ok(Trained::train(&bytes, &sizes, usize::try_from(max_len).unwrap_or(0), level))
    }
}
