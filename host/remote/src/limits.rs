//! How much a remote pack fetches, and how many requests it has under way:
//! the bounds the source's readahead, its fetches and the trace's early
//! requests share.

use std::time::Duration;

/// A miss that does not continue the last fetch brings at most this much.
pub const FIRST_WINDOW: u64 = 4 << 20;
/// The readahead window grows up to this.
pub const MAX_WINDOW: u64 = 64 << 20;
/// And starts from this.
pub(crate) const STREAM_START: u64 = 128 << 10;
/// One request brings at most this many bytes (more go out in parallel).
pub const REQUEST_MAX: u64 = 4 << 20;
/// Requests for reads under way at once, per pack.
pub const DEMAND_PARALLEL: usize = 8;
/// Requests for a trace's prefetch under way at once, per pack: a trace
/// lists scattered files, a request each, best all in one round trip.
pub const PREFETCH_PARALLEL: usize = 32;
/// How long a fetch waits for another process fetching the same extent
/// before it fetches the extent itself.
pub(crate) const LOCK_WAIT: Duration = Duration::from_secs(10);
