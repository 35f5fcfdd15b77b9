//! The cache directory's names and its two small records.
//!
//! ```text
//! CACHEDIR.TAG    marks the directory for backup tools
//! a-KEY           an artifact: exactly wasmtime's serialized bytes, 0400
//! p-KEY           its pin: one line, written by the store after the artifact
//! l-KEY           the lock a store of KEY holds (flock), empty
//! f-ID            a module file's identity and the SHA-256 of its content
//! t-PID-N         a file being written, renamed into place when whole
//! ```
//!
//! KEY is the hex SHA-256 of [`FORMAT`], the engine's compatibility hash
//! and the SHA-256 of the guest's bytes; ID is 32 hex digits of a SHA-256
//! of the file's device and inode. A pin's line is
//! `PIN_MAGIC KEY KIND DEV INO SIZE CTIME PINNED BOOT SHA256`: its key (so
//! that a pin renamed to another key's name does not vouch there), the
//! artifact's identity when it was stored (times in ns since the epoch), when the pin
//! was written, the boot it was written in (`-` for none) and the SHA-256
//! of the artifact's bytes. A file entry's line is
//! `FILE_MAGIC DEV INO SIZE MTIME CTIME SHA256`. Anything else in the
//! directory is not the cache's, and is neither read nor removed.

use std::hash::{Hash, Hasher};

use sha2::{Digest, Sha256};
use wasmtime::Engine;

use crate::load::guest::Form;
use crate::load::identity::{FileId, Stamp};

/// Bumped whenever what is cached, or how it is keyed, changes.
const FORMAT: &[u8] = b"packfs-guest-cache-v4";
const PIN_MAGIC: &str = "packfs-pin-1";
const FILE_MAGIC: &str = "packfs-file-1";
/// No record is longer; a longer file is not one.
pub(crate) const MAX_RECORD: usize = 512;

/// The tag file and its contents (<https://bford.info/cachedir/>).
pub(crate) const TAG: &str = "CACHEDIR.TAG";
pub(crate) const TAG_TEXT: &str =
    "Signature: 8a477f597d28d172789f06886806bc55\n# This file marks packfs's cache of compiled guests.\n";

/// A SHA-256.
pub(crate) type Digest32 = [u8; 32];

/// The cache key of `digest`'s guest compiled by `engine`.
pub(crate) fn key(engine: &Engine, digest: &Digest32) -> String {
    let mut h = Sha256::new();
    h.update(FORMAT);
    // The engine's settings decide the output as much as the input does.
    engine.precompile_compatibility_hash().hash(&mut ShaHasher(&mut h));
    h.update(digest);
    hex(&h.finalize())
}

pub(crate) fn artifact(key: &str) -> String {
    format!("a-{key}")
}

pub(crate) fn pin(key: &str) -> String {
    format!("p-{key}")
}

pub(crate) fn lock(key: &str) -> String {
    format!("l-{key}")
}

/// The entry name for the file at `dev`/`ino`.
pub(crate) fn file_entry(id: &FileId) -> String {
    let mut h = Sha256::new();
    h.update(FILE_MAGIC);
    h.update(id.dev.to_le_bytes());
    h.update(id.ino.to_le_bytes());
    format!("f-{}", &hex(&h.finalize())[..32])
}

/// A name of the cache's own, by form.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Name<'a> {
    Artifact(&'a str),
    Pin(&'a str),
    Lock(&'a str),
    FileEntry,
    Tmp,
}

impl Name<'_> {
    /// `name`'s form, or `None` when it is not the cache's.
    pub(crate) fn parse(name: &str) -> Option<Name<'_>> {
        let (prefix, rest) = name.split_once('-')?;
        let hex_of = |n| rest.len() == n && rest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        match prefix {
            "a" if hex_of(64) => Some(Name::Artifact(rest)),
            "p" if hex_of(64) => Some(Name::Pin(rest)),
            "l" if hex_of(64) => Some(Name::Lock(rest)),
            "f" if hex_of(32) => Some(Name::FileEntry),
            "t" if rest.split_once('-').is_some_and(|(p, n)| is_num(p) && is_num(n)) => Some(Name::Tmp),
            _ => None,
        }
    }
}

fn is_num(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

pub(crate) fn tmp(pid: u32, n: u64) -> String {
    format!("t-{pid}-{n}")
}

/// What a store recorded of an artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pin {
    pub(crate) key: String,
    pub(crate) kind: Form,
    pub(crate) dev: u64,
    pub(crate) ino: u64,
    pub(crate) size: u64,
    pub(crate) ctime: Stamp,
    /// When the pin was written.
    pub(crate) pinned: Stamp,
    pub(crate) boot: Option<String>,
    pub(crate) sha256: Digest32,
}

impl Pin {
    pub(crate) fn format(&self) -> String {
        let Pin { key, kind, dev, ino, size, ctime, pinned, boot, sha256 } = self;
        let boot = boot.as_deref().unwrap_or("-");
        format!("{PIN_MAGIC} {key} {} {dev} {ino} {size} {ctime} {pinned} {boot} {}\n", kind.tag(), hex(sha256))
    }

    pub(crate) fn parse(text: &str) -> Option<Pin> {
        let mut w = text.strip_suffix('\n')?.split(' ');
        (w.next()? == PIN_MAGIC).then_some(())?;
        let key = w.next()?;
        (Name::parse(&artifact(key)) == Some(Name::Artifact(key))).then_some(())?;
        let key = key.to_owned();
        let kind = Form::from_tag(w.next()?)?;
        let (dev, ino, size) = (w.next()?.parse().ok()?, w.next()?.parse().ok()?, w.next()?.parse().ok()?);
        let (ctime, pinned) = (w.next()?.parse().ok()?, w.next()?.parse().ok()?);
        let boot = match w.next()? {
            "-" => None,
            b => Some(b.to_owned()),
        };
        let sha256 = unhex(w.next()?)?;
        w.next().is_none().then_some(Pin { key, kind, dev, ino, size, ctime, pinned, boot, sha256 })
    }
}

/// A module file's identity and its content's SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileEntry {
    pub(crate) id: FileId,
    pub(crate) digest: Digest32,
}

impl FileEntry {
    pub(crate) fn format(&self) -> String {
        let FileId { dev, ino, size, mtime, ctime } = self.id;
        format!("{FILE_MAGIC} {dev} {ino} {size} {mtime} {ctime} {}\n", hex(&self.digest))
    }

    pub(crate) fn parse(text: &str) -> Option<FileEntry> {
        let mut w = text.strip_suffix('\n')?.split(' ');
        (w.next()? == FILE_MAGIC).then_some(())?;
        let (dev, ino, size) = (w.next()?.parse().ok()?, w.next()?.parse().ok()?, w.next()?.parse().ok()?);
        let (mtime, ctime) = (w.next()?.parse().ok()?, w.next()?.parse().ok()?);
        let digest = unhex(w.next()?)?;
        w.next().is_none().then_some(FileEntry { id: FileId { dev, ino, size, mtime, ctime }, digest })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Digest32> {
    let mut out = [0; 32];
    if s.len() != 64 {
        return None;
    }
    for (o, pair) in out.iter_mut().zip(s.as_bytes().chunks(2)) {
        *o = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
    }
    Some(out)
}

/// Feeds `Hash` output into a SHA-256.
struct ShaHasher<'a>(&'a mut Sha256);

impl Hasher for ShaHasher<'_> {
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    fn finish(&self) -> u64 {
        // Only `write` is used; the digest is taken from the SHA-256.
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_refuse_anything_else() {
        let pin = Pin {
            key: "0f".repeat(32),
            kind: Form::Component,
            dev: 2049,
            ino: 77,
            size: 4096,
            ctime: 1_700_000_000_123_456_789,
            pinned: 1_700_000_003_000_000_000,
            boot: Some("0b2c-77".into()),
            sha256: [0xab; 32],
        };
        assert_eq!(Pin::parse(&pin.format()), Some(pin.clone()));
        let unbooted = Pin { boot: None, ..pin.clone() };
        assert_eq!(Pin::parse(&unbooted.format()), Some(unbooted));
        let text = pin.format();
        assert_eq!(Pin::parse(text.trim_end()), None, "a torn line");
        assert_eq!(Pin::parse(&format!("{} x\n", text.trim_end())), None, "a word too many");
        assert_eq!(Pin::parse(&text.replacen(" c ", " x ", 1)), None);

        let id = FileId { dev: 1, ino: 2, size: 3, mtime: 4, ctime: -5 };
        let entry = FileEntry { id, digest: [7; 32] };
        assert_eq!(FileEntry::parse(&entry.format()), Some(entry.clone()));
        assert_eq!(Pin::parse(&entry.format()), None);
        assert!(entry.format().len() < MAX_RECORD && pin.format().len() < MAX_RECORD);
    }

    #[test]
    fn only_the_cache_s_own_forms_are_names() {
        let k = "0".repeat(64);
        assert_eq!(Name::parse(&artifact(&k)), Some(Name::Artifact(&k)));
        assert_eq!(Name::parse(&pin(&k)), Some(Name::Pin(&k)));
        assert_eq!(Name::parse(&lock(&k)), Some(Name::Lock(&k)));
        assert_eq!(Name::parse(&tmp(12, 3)), Some(Name::Tmp));
        let id = FileId { dev: 1, ino: 2, size: 0, mtime: 0, ctime: 0 };
        assert_eq!(Name::parse(&file_entry(&id)), Some(Name::FileEntry));
        for other in [TAG, "packs", "a-", "a-xyz", &format!("{k}.cwasm"), &format!("a-{k}.bak"), "t-1-", "t-a-1"] {
            assert_eq!(Name::parse(other), None, "{other}");
        }
    }
}
