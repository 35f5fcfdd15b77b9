//! Traces: which extents a run read, in the order it first read them, so
//! that the next cold start can fetch them ahead while the guest runs.
//!
//! A trace is text: a `packfs-trace 2` line, then one line per extent,
//! `START LEN CHECKSUM [DIGEST]` (decimal, decimal, 16 hex digits, and
//! `blake3:` and 64 hex digits where the pack has a digest table: the
//! address the host cache knows the extent by, so that a trace's requests
//! at open skip what it holds). `packfs-trace 1`, whose lines have no
//! digest, still reads. A trace names no pack: on replay, an entry counts
//! for a pack when that pack has an extent at `START` of that length,
//! checksum and digest (if both have one). So one trace can cover
//! several packs, and a trace of an older version of a pack still
//! prefetches what the versions share and nothing else.
//!
//! This module is the format alone: a source records a trace
//! ([`RemoteSource::record`](crate::RemoteSource::record)) and prefetches
//! one ([`RemoteSource::prefetch`](crate::RemoteSource::prefetch)).

use std::fmt::Write as _;

use packfs_core::pack::Digest;

const MAGIC: &str = "packfs-trace 2";
/// The first version's, without digests.
const MAGIC_1: &str = "packfs-trace 1";

/// Traces longer than this are refused (at 128 KiB a chunk, this many
/// cover 256 GiB).
const MAX_ENTRIES: usize = 1 << 21;

/// The most bytes a trace's text takes (at most 132 a line).
pub const MAX_TRACE_BYTES: u64 = 132 << 21;

/// One extent a trace lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Where it lies in the pack.
    pub start: u64,
    /// Its length.
    pub len: u64,
    /// Its xxh3 checksum.
    pub sum: u64,
    /// Its BLAKE3 digest, where the pack has a digest table.
    pub digest: Option<Digest>,
}

/// A parsed trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    entries: Vec<Entry>,
}

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
#[error("trace line {line}: {what}")]
pub struct BadTrace {
    line: usize,
    what: &'static str,
}

impl Trace {
    /// How many extents it lists.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it lists none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Its entries, in order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Reads a trace's text.
    pub fn parse(text: &str) -> Result<Trace, BadTrace> {
        let mut lines = text.lines().enumerate();
        let digests = match lines.next().map(|(_, l)| l.trim()) {
            Some(MAGIC) => true,
            Some(MAGIC_1) => false,
            _ => return Err(BadTrace { line: 1, what: "not a packfs trace" }),
        };
        let mut entries = Vec::new();
        for (i, line) in lines {
            let bad = |what| BadTrace { line: i + 1, what };
            if line.trim().is_empty() {
                continue;
            }
            if entries.len() == MAX_ENTRIES {
                return Err(bad("too many entries"));
            }
            let mut f = line.split_ascii_whitespace();
            let (Some(start), Some(len), Some(sum), digest, None) = (f.next(), f.next(), f.next(), f.next(), f.next())
            else {
                return Err(bad("expected START LEN CHECKSUM [DIGEST]"));
            };
            let start = start.parse().map_err(|_| bad("bad START"))?;
            let len = len.parse().map_err(|_| bad("bad LEN"))?;
            let sum = u64::from_str_radix(sum, 16).map_err(|_| bad("bad CHECKSUM"))?;
            let digest = match digest {
                Some(d) if digests => Some(d.parse().map_err(|_| bad("bad DIGEST"))?),
                Some(_) => return Err(bad("a DIGEST in a trace of version 1")),
                None => None,
            };
            entries.push(Entry { start, len, sum, digest });
        }
        Ok(Trace { entries })
    }

    /// The trace's text.
    pub fn to_text(&self) -> String {
        let mut out = format!("{MAGIC}\n");
        for Entry { start, len, sum, digest } in &self.entries {
            let _ = match digest {
                Some(d) => writeln!(out, "{start} {len} {sum:016x} {d}"),
                None => writeln!(out, "{start} {len} {sum:016x}"),
            };
        }
        out
    }
}

impl FromIterator<Entry> for Trace {
    /// The trace of these entries, in order.
    fn from_iter<I: IntoIterator<Item = Entry>>(entries: I) -> Trace {
        Trace { entries: entries.into_iter().collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any text is a trace or an error, never a panic; a trace's text
        /// reads back as the same trace.
        #[test]
        fn traces_parse_whatever_they_are(
            text in ".{0,200}",
            entries in proptest::collection::vec(any::<(u64, u64, u64, Option<[u8; 32]>)>(), 0..50),
        ) {
            let _ = Trace::parse(&text);
            let _ = Trace::parse(&format!("{MAGIC}\n{text}"));
            let _ = Trace::parse(&format!("{MAGIC_1}\n{text}"));
            let t: Trace = entries
                .into_iter()
                .map(|(start, len, sum, d)| Entry { start, len, sum, digest: d.map(Digest) })
                .collect();
            prop_assert!(t.to_text().len() as u64 <= 15 + 132 * t.len() as u64);
            prop_assert_eq!(Trace::parse(&t.to_text()).unwrap(), t);
        }
    }

    #[test]
    fn a_first_version_trace_reads_without_digests() {
        let t = Trace::parse("packfs-trace 1\n0 10 00000000000000ff\n").unwrap();
        assert_eq!(t.entries(), [Entry { start: 0, len: 10, sum: 255, digest: None }]);
        let d = Digest::of(b"x");
        assert!(Trace::parse(&format!("packfs-trace 1\n0 10 00000000000000ff {d}\n")).is_err());
        assert!(Trace::parse("packfs-trace 2\n0 10 00000000000000ff blake3:00\n").is_err());
    }
}
