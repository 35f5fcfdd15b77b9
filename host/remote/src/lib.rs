#![doc = include_str!("../README.md")]
//!
//! ## What is where
//!
//! [`open`] drives core's lazy-open plan
//! ([`LazyOpen`](packfs_core::pack::LazyOpen)): two or three ranged
//! requests in two round trips (the last
//! [`TAIL_LEN`](packfs_core::pack::TAIL_LEN) bytes; then the header and
//! what of the index region the tail did not hold, at once), and no file
//! data but what lies in that tail, kept once checked. From then on each
//! extent (a version 1 blob, a version 2 chunk) is fetched on its first
//! read, checked against the index's checksum before any byte of it is
//! served, and kept in the host-wide [`Cache`], which is shared by every
//! process on the host and addressed by content.
//!
//! ```text
//!  lib.rs      this table of contents
//!  open        the open: the plan, driven by object_store requests
//!  source/     RemoteSource: extents fetched as reads need them
//!    table       what is known of each extent, and its check
//!    flight      what a miss fetches (readahead), as which requests
//!    fetch       from the cache, else the store
//!  packs       Packs: opening packs wherever they are, mapped or by URL
//!  early       a trace's extents asked for with the open's first request
//!  object      one object, read at the version first seen
//!  store       connecting (S3, HTTP); whole objects read and written
//!  extent_cache/ the host-wide cache of extents
//!  trace       the trace's text format
//!  limits      how much is fetched, how many requests at once
//!  runtime     the tokio runtime the clients run on
//!  error       RemoteError
//! ```
//!
//! What a pack in a store can make the host hold is bounded by core's
//! limits for lazily opened packs (`packfs_core::pack::layout`): an index
//! region of at most 1 GiB fetched (`MAX_FETCHED_INDEX`, refused before
//! it is fetched) and 1 GiB decoded (`MAX_DECODED_INDEX`), at most 2^24
//! extents (`MAX_EXTENTS`), each with about 73 bytes of the source's own
//! table. A pack past one is [`RemoteError::Pack`] with
//! `CorruptKind::TooLarge`, before anything is allocated for it.

mod early;
mod error;
pub mod extent_cache;
mod limits;
mod location;
mod object;
mod open;
pub mod packs;
mod profile;
mod runtime;
mod source;
mod store;
pub mod trace;

pub use error::RemoteError;
pub use extent_cache::{Cache, CacheStats, DEFAULT_CACHE_BYTES};
pub use limits::{DEMAND_PARALLEL, FIRST_WINDOW, MAX_WINDOW, PREFETCH_PARALLEL, REQUEST_MAX};
pub use location::{BadLocation, Location};
pub use open::{RemoteOptions, RemotePack, open, open_as};
pub use source::{FetchStats, RemoteSource};
pub use store::{NetOptions, download, read_object, write_object};
