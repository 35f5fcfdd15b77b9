//! Keeping the cache within its limit: the least recently used keys go
//! first, by their pin's mtime (a hit touches it).

use std::collections::HashMap;

use rustix::fs::AtFlags;

use super::dir::Inner;
use super::layout::Name;
use crate::load::identity::{self, FileId, Stamp};

/// A temporary file this old was left by a process that died.
const STALE_TMP: Stamp = 3600 * 1_000_000_000;

#[derive(Default)]
struct Group {
    bytes: u64,
    /// The pin's mtime, else the newest of the others'.
    used: Option<Stamp>,
    pinned: bool,
    names: Vec<String>,
}

/// Removes the least recently used keys (artifact, pin and lock, the
/// artifact first) and file entries until the cache is within its limit,
/// and temporary files left an hour ago. Only names of the cache's own
/// forms are looked at. A process that has an evicted artifact mapped
/// keeps running it: eviction only unlinks.
pub(super) fn evict(cache: &Inner) {
    let Ok(dir) = rustix::fs::Dir::read_from(&cache.root) else { return };
    let now = identity::now();
    let mut groups: HashMap<String, Group> = HashMap::new();
    let mut total = 0u64;
    for entry in dir.flatten() {
        let Ok(name) = entry.file_name().to_str() else { continue };
        let Some(form) = Name::parse(name) else { continue };
        let Ok(st) = rustix::fs::statat(&cache.root, name, AtFlags::SYMLINK_NOFOLLOW) else { continue };
        let id = FileId::of(&st);
        let (group, is_pin) = match form {
            Name::Artifact(key) | Name::Lock(key) => (key.to_owned(), false),
            Name::Pin(key) => (key.to_owned(), true),
            Name::FileEntry => (name.to_owned(), true),
            Name::Tmp if now - id.mtime > STALE_TMP => {
                cache.remove(name);
                continue;
            }
            // Being written: it counts, but is not the evictor's to remove.
            Name::Tmp => {
                total += id.size;
                continue;
            }
        };
        total += id.size;
        let g = groups.entry(group).or_default();
        g.bytes += id.size;
        g.names.push(name.to_owned());
        if is_pin {
            (g.used, g.pinned) = (Some(id.mtime), true);
        } else if !g.pinned {
            g.used = g.used.max(Some(id.mtime));
        }
    }
    let mut groups: Vec<Group> = groups.into_values().collect();
    groups.sort_by_key(|g| g.used);
    for mut g in groups {
        if total <= cache.limit {
            break;
        }
        // The artifact's name sorts first: a reader then finds no artifact
        // rather than one without its pin.
        g.names.sort();
        for name in &g.names {
            cache.remove(name);
        }
        total -= g.bytes;
    }
}
