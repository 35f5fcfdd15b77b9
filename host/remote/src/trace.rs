//! Traces: which extents a run read, in the order it first read them, so
//! that the next cold start can fetch them ahead while the guest runs.
//!
//! A trace is text: a `packfs-trace 1` line, then one line per extent,
//! `START LEN CHECKSUM` (decimal, decimal, 16 hex digits). It names no
//! pack: on replay, an entry counts for a pack when that pack has an
//! extent at `START` of that length and checksum. So one trace can cover
//! several packs, and a trace of an older version of a pack still
//! prefetches what the versions share and nothing else.
//!
//! This module is the format alone: a source records a trace
//! ([`RemoteSource::record`](crate::RemoteSource::record)) and prefetches
//! one ([`RemoteSource::prefetch`](crate::RemoteSource::prefetch)).

use std::fmt::Write as _;

const MAGIC: &str = "packfs-trace 1";

/// Traces longer than this are refused (at 128 KiB a chunk, this many
/// cover 256 GiB).
const MAX_ENTRIES: usize = 1 << 21;

/// The most bytes a trace's text takes (at most 48 a line).
pub const MAX_TRACE_BYTES: u64 = 48 << 21;

/// A parsed trace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    entries: Vec<(u64, u64, u64)>,
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

    /// Its entries, `(start, len, checksum)`, in order.
    pub fn entries(&self) -> &[(u64, u64, u64)] {
        &self.entries
    }

    /// Reads a trace's text.
    pub fn parse(text: &str) -> Result<Trace, BadTrace> {
        let mut lines = text.lines().enumerate();
        if lines.next().map(|(_, l)| l.trim()) != Some(MAGIC) {
            return Err(BadTrace { line: 1, what: "not a packfs trace" });
        }
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
            let (Some(start), Some(len), Some(sum), None) = (f.next(), f.next(), f.next(), f.next()) else {
                return Err(bad("expected START LEN CHECKSUM"));
            };
            let start = start.parse().map_err(|_| bad("bad START"))?;
            let len = len.parse().map_err(|_| bad("bad LEN"))?;
            let sum = u64::from_str_radix(sum, 16).map_err(|_| bad("bad CHECKSUM"))?;
            entries.push((start, len, sum));
        }
        Ok(Trace { entries })
    }

    /// The trace's text.
    pub fn to_text(&self) -> String {
        let mut out = format!("{MAGIC}\n");
        for (start, len, sum) in &self.entries {
            let _ = writeln!(out, "{start} {len} {sum:016x}");
        }
        out
    }
}

impl FromIterator<(u64, u64, u64)> for Trace {
    /// The trace of these entries, `(start, len, checksum)`, in order.
    fn from_iter<I: IntoIterator<Item = (u64, u64, u64)>>(entries: I) -> Trace {
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
        fn traces_parse_whatever_they_are(text in ".{0,200}", entries in proptest::collection::vec(any::<(u64, u64, u64)>(), 0..50)) {
            let _ = Trace::parse(&text);
            let _ = Trace::parse(&format!("{MAGIC}\n{text}"));
            let t = Trace { entries };
            prop_assert_eq!(Trace::parse(&t.to_text()).unwrap(), t);
        }
    }
}
