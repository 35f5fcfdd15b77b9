//! [`Pieces`]: the parts of a pack a lazy reader fetched before opening it
//! (the header, the index region and the trailer), as disjoint runs.

use std::ops::Range;

use super::source::ByteSource;
use crate::{Error, Result};

/// Byte runs of a pack of known size, disjoint and sorted by offset.
#[derive(Debug)]
pub struct Pieces {
    size: u64,
    runs: Vec<(u64, Box<[u8]>)>,
}

impl Pieces {
    /// Sorts `pieces`, each `(offset, bytes)` of a pack of `size` bytes, and
    /// joins the overlapping or touching ones; `Invalid` for a piece past
    /// `size`.
    pub fn new(size: u64, mut pieces: Vec<(u64, Vec<u8>)>) -> Result<Pieces> {
        pieces.sort_by_key(|(at, _)| *at);
        let mut runs: Vec<(u64, Vec<u8>)> = Vec::with_capacity(pieces.len());
        for (at, bytes) in pieces {
            let end = at.checked_add(bytes.len() as u64).filter(|&e| e <= size).ok_or(Error::Invalid)?;
            match runs.last_mut() {
                Some((start, run)) if at <= *start + run.len() as u64 => {
                    // Both came from the same pack: the overlap is the same
                    // bytes; only what lies past the run is new.
                    let run_end = *start + run.len() as u64;
                    if end > run_end {
                        let more = cut(&bytes, at, run_end..end).ok_or(Error::Invalid)?;
                        // Exactly: a run may be most of a large index.
                        run.try_reserve_exact(more.len()).map_err(|_| Error::NoSpace)?;
                        run.extend_from_slice(more);
                    }
                }
                _ => runs.push((at, bytes)),
            }
        }
        let runs = runs.into_iter().map(|(at, bytes)| (at, bytes.into_boxed_slice())).collect();
        Ok(Pieces { size, runs })
    }

    /// The pack's whole length.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// `range`, when one run holds all of it.
    pub fn get(&self, range: &Range<u64>) -> Option<&[u8]> {
        let i = self.runs.partition_point(|(at, _)| *at <= range.start).checked_sub(1)?;
        let (at, bytes) = &self.runs[i];
        cut(bytes, *at, range.clone())
    }
}

impl ByteSource for Pieces {
    fn size(&self) -> u64 {
        self.size
    }

    fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        Pieces::get(self, &range)
    }
}

/// The bytes at `range` (offsets in the pack) of `bytes`, a piece of the
/// pack starting at offset `at`, if the piece holds them all: the one way
/// a piece is cut, on any pointer width.
pub(crate) fn cut(bytes: &[u8], at: u64, range: Range<u64>) -> Option<&[u8]> {
    let from_at = |x: u64| usize::try_from(x.checked_sub(at)?).ok();
    bytes.get(from_at(range.start)?..from_at(range.end)?)
}
