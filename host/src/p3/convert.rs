//! 0.3's values from PackFS's and back: what both versions convert alike
//! ([`conversions`](crate::filesystem::conversions)), and 0.3's times.

use packfs_core::{SetTime, Timestamp};
use wasmtime_wasi::p3::bindings::clocks::system_clock::Instant;

use super::FsError;
use super::bindings::types::{self, ErrorCode, NewTimestamp};
use crate::filesystem::conversions;

// 0.3 has no would-block (a call waits instead), and nothing on the host
// answers it (only the browser's synchronous reads): busy, if ever.
conversions!(would_block: Busy, time: instant);

pub(super) fn instant(t: Timestamp) -> Instant {
    Instant { seconds: i64::try_from(t.secs).unwrap_or(i64::MAX), nanoseconds: t.nanos }
}

/// A new time; PackFS keeps times from 1970 on, so an earlier one is
/// `invalid` (0.2's datetime could not name one).
pub(super) fn set_time(t: NewTimestamp) -> Result<SetTime, FsError> {
    Ok(match t {
        NewTimestamp::NoChange => SetTime::Keep,
        NewTimestamp::Now => SetTime::Now,
        NewTimestamp::Timestamp(t) => {
            let secs = u64::try_from(t.seconds).map_err(|_| ErrorCode::Invalid)?;
            // `Timestamp::new` carries whole seconds out of the nanoseconds.
            SetTime::At(Timestamp::new(secs, t.nanoseconds))
        }
    })
}
