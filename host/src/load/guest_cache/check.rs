//! Whether an artifact may be run: [`trusted`] holds it against its pin.

use std::fs::File;
use std::os::unix::fs::FileExt;

use sha2::{Digest, Sha256};

use super::dir::Inner;
use super::layout::{self, Digest32, Pin};
use crate::load::guest::Form;
use crate::load::identity::{self, FileId};

/// What the cache holds under a key.
pub(super) enum Trust {
    /// Neither an artifact nor a pin.
    Absent,
    /// Something that is not to be run: no pin, a pin it does not match,
    /// or bytes that are not the pinned ones.
    Untrusted,
    /// The artifact, opened, as its store wrote it.
    Trusted(File, Form),
}

/// Holds the artifact of `key` against its pin: it must be a regular
/// file of this user's, `0400`, with one link, and its device, inode,
/// size and ctime must be the pinned ones. Its bytes are hashed (once,
/// streamed) and compared with the pin's SHA-256 when the pin was
/// written in another boot (writeback may have been lost) or within the
/// racy window of the artifact's ctime (a write in the same timestamp
/// tick would not show); the pin is then rewritten, so the next hit is
/// O(1). A trusted hit touches the pin's mtime, the LRU clock.
pub(super) fn trusted(cache: &Inner, key: &str) -> Trust {
    let pin_name = layout::pin(key);
    let pin = cache.read_record(&pin_name).and_then(|(text, file)| Some((Pin::parse(&text)?, file)));
    let artifact = cache.open(&layout::artifact(key));
    let (file, st, pin, pin_file) = match (artifact, pin) {
        (Ok(None), None) => return Trust::Absent,
        (Ok(Some((file, st))), Some((pin, pin_file))) => (file, st, pin, pin_file),
        _ => return Trust::Untrusted,
    };
    let id = FileId::of(&st);
    let as_pinned = (id.dev, id.ino, id.size, id.ctime) == (pin.dev, pin.ino, pin.size, pin.ctime);
    if !Inner::is_own_file(&st) || st.st_mode & 0o7777 != 0o400 || !as_pinned || pin.key != key {
        return Trust::Untrusted;
    }
    let window = cache.racy_window.as_nanos() as identity::Stamp;
    let boot = identity::boot_id();
    let racy = pin.pinned - pin.ctime < window;
    let rebooted = boot.is_some() && pin.boot.as_deref() != boot;
    if racy || rebooted {
        if sha256(&file).ok() != Some(pin.sha256) {
            return Trust::Untrusted;
        }
        let now = identity::now();
        if !id.is_racy(now, cache.racy_window) {
            let repinned = Pin { pinned: now, boot: boot.map(str::to_owned), ..pin.clone() };
            // Failing, the next hit hashes again.
            let _ = cache.write_record(&pin_name, &repinned.format());
        }
    }
    // The LRU clock; a pin that cannot be touched is only evicted sooner.
    let _ = pin_file.set_modified(std::time::SystemTime::now());
    Trust::Trusted(file, pin.kind)
}

/// The SHA-256 of `file`'s bytes, read 1 MiB at a time.
pub(super) fn sha256(file: &File) -> std::io::Result<Digest32> {
    let mut h = Sha256::new();
    let mut buf = vec![0; 1 << 20];
    let mut at = 0;
    loop {
        match file.read_at(&mut buf, at)? {
            0 => return Ok(h.finalize().into()),
            n => {
                h.update(&buf[..n]);
                at += n as u64;
            }
        }
    }
}
