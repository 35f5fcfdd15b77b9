//! File entries: a module file's identity standing for its content's
//! SHA-256, so that a warm load does not read the module.

use super::dir::GuestCache;
use super::layout::{self, Digest32, FileEntry};
use crate::load::identity::{self, FileId};

/// The SHA-256 of the content of the file whose identity is `id`, when an
/// entry records that identity.
pub(crate) fn digest_of(cache: &GuestCache, id: &FileId) -> Option<Digest32> {
    let (text, file) = cache.inner.read_record(&layout::file_entry(id))?;
    let entry = FileEntry::parse(&text).filter(|e| e.id == *id)?;
    // The LRU clock, as for a pin.
    let _ = file.set_modified(std::time::SystemTime::now());
    Some(entry.digest)
}

/// Records that the file `id` holds content of SHA-256 `digest`, unless
/// it is too recent to tell (see [`FileId::is_racy`]).
pub(crate) fn record(cache: &GuestCache, id: &FileId, digest: &Digest32) {
    if id.is_racy(identity::now(), cache.inner.racy_window) {
        return;
    }
    let entry = FileEntry { id: *id, digest: *digest };
    // Failing, the next load hashes the module again.
    let _ = cache.inner.write_record(&layout::file_entry(id), &entry.format());
}
