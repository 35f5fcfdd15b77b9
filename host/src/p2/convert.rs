//! 0.2's values from PackFS's and back: what both versions convert alike
//! ([`conversions`](crate::filesystem::conversions)), and 0.2's times.

use packfs_core::{SetTime, Timestamp};
use wasmtime_wasi::p2::bindings::clocks::wall_clock::Datetime;

use super::bindings::types::{self, NewTimestamp};
use crate::filesystem::conversions;

conversions!(would_block: WouldBlock, time: datetime);

pub(super) fn datetime(t: Timestamp) -> Datetime {
    Datetime { seconds: t.secs, nanoseconds: t.nanos }
}

pub(super) fn set_time(t: NewTimestamp) -> SetTime {
    match t {
        NewTimestamp::NoChange => SetTime::Keep,
        NewTimestamp::Now => SetTime::Now,
        // `Timestamp::new` carries whole seconds out of the nanoseconds.
        NewTimestamp::Timestamp(t) => SetTime::At(Timestamp::new(t.seconds, t.nanoseconds)),
    }
}
