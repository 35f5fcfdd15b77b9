//! Loading guests ([`Runner::load`](crate::Runner::load)): a WASI p1 core
//! module or a component, its [`Kind`] found from its header and its
//! top-level imports and exports, compiled for the engine that kind runs
//! on, through an on-disk cache of compiled code ([`GuestCache`]).
//!
//! # The compiled-guest cache
//!
//! A guest is keyed by the SHA-256 of its bytes and the engine's
//! compatibility hash. A load from a file ([`Source::File`]) first looks
//! it up by its identity (device, inode, size, mtime, ctime): when a file
//! entry records that identity, its content's SHA-256 is taken from it and
//! the module is not read (only its import and export sections, for its
//! kind); otherwise it is read and hashed, and the entry
//! written unless the file changed within the racy window (2 s), where a
//! second write in the same timestamp tick would not show.
//!
//! An artifact is exactly wasmtime's serialized bytes. It is loaded with
//! `Module::deserialize_open_file` (a component through
//! `/proc/self/fd`): mapped, its pages come in lazily and are shared
//! through the page cache by every process running the guest. wasmtime
//! runs that code as it finds it, so the cache must vouch for it; instead
//! of hashing it on every load, a hit relies on:
//!
//! - (a) a private directory: this user's, `mode & 0o022 == 0`, not a
//!   symlink; every name in it opened from the directory's descriptor
//!   with `O_NOFOLLOW` (and `O_NONBLOCK`, so a FIFO does not hang a load);
//! - (b) write-once artifacts: written to a temporary file `0600`, then
//!   `0400`, published by a rename that replaces nothing, never opened for
//!   writing again; eviction only unlinks, so a mapped artifact (and the
//!   memory images wasmtime maps from it) stays whole after it is evicted.
//!   An artifact must be a regular file of this user's, `0400`, one link;
//! - (c) a pin, written by the store after publishing, recording the
//!   artifact's device, inode, size and ctime and the SHA-256 of the bytes
//!   written: a hit requires `fstat` to equal it. A write, truncation,
//!   chmod, rename over it or re-creation changes the ctime or the inode
//!   (ctime cannot be set from user space). A pin written within the racy
//!   window of the artifact's ctime is not enough alone: such a hit hashes
//!   the artifact and re-pins it once that window has passed;
//! - (d) the boot id: writes not yet written back may be lost in a crash,
//!   so a pin written in another boot makes the first load hash the
//!   artifact once, streamed, compare it with the pin and re-pin it (no
//!   `fsync` on the store's path; without a boot id the store syncs);
//! - (e) wasmtime's own check of the artifact's header against this
//!   version and engine configuration.
//!
//! An artifact that fails any of these is never run: it is removed,
//! recompiled and replaced ([`CacheStatus::Replaced`]). Not covered: a
//! process of this user writing into its own cache (it can already run
//! code as this user), and media corruption within one boot.
//!
//! The cache is bounded ([`GuestCache::with_limit`], 2 GiB by default):
//! after each store the least recently used keys go, by their pin's mtime,
//! which a hit touches. Only names of the cache's own forms are removed.

mod entry;
mod guest;
mod guest_cache;
mod identity;
mod version;

pub use entry::Source;
pub(crate) use entry::load;
pub use guest::{CacheStatus, Guest, Kind, LoadError};
pub use guest_cache::{DEFAULT_LIMIT, GuestCache};
