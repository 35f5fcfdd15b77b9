//! A pack in a file of the host's (`--mount /=host:/packs/app.pack`),
//! read through the host's `wasi:filesystem`: the open reads the header,
//! the index and the trailer (planned by `LazyOpen`, as a pack over HTTP
//! is opened) and refuses a pack that is not the one pinned; then each
//! extent is read on its first use, checked against the pack's digest
//! table (which the pin commits to), and kept. So only the index and the
//! bytes read are ever in the component's memory, within two bounds: an
//! index of at most [`MAX_INDEX`] (read before the pin can refuse it) and
//! at most [`MAX_KEPT`] of extents kept (past it, an extent not read yet
//! is `EIO`: the component's memory is the guest's too).

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use packfs_core::pack::{ByteSource, CorruptKind, CorruptPack, Digest, LazyOpen, OpenStep, Pieces, ReadOptions};
use packfs_core::{Error, FileSystem, OsError, Result};

use crate::bindings::wasi::filesystem::types as host;
use crate::host::{error, place};

/// The most bytes asked of the host in one `read`.
const PIECE: u64 = 1 << 20;

/// The most bytes of a host pack's header, index and trailer read to open
/// it (about a million files; opening them takes up to twice as much
/// memory, briefly); a larger index is for an embedded pack.
pub(crate) const MAX_INDEX: u64 = 128 << 20;

/// The most bytes of a host pack's extents kept in the component.
pub(crate) const MAX_KEPT: u64 = 1 << 30;

/// What is known of the extents once the pack is open: each one's digest
/// (the pin commits to them) and its bytes, once read and checked.
struct Extents {
    digests: Box<[Digest]>,
    slots: Box<[OnceLock<Box<[u8]>>]>,
}

/// The pack's bytes: what the open read, and each extent once read.
pub(crate) struct HostPack {
    /// The host's file.
    file: host::Descriptor,
    /// What a failed read says it was doing.
    what: String,
    opened: Pieces,
    extents: OnceLock<Extents>,
    /// Bytes of extents kept.
    kept: AtomicU64,
}

fn failed(what: &str, detail: String, kind: std::io::ErrorKind) -> Error {
    Error::Os(OsError::new(format!("{what}: {detail}"), std::io::Error::from(kind)))
}

/// `range` of the file, read whole (a short file is `EIO`), into memory
/// taken without aborting (`EIO` where there is none).
fn read(file: &host::Descriptor, what: &str, range: Range<u64>) -> Result<Vec<u8>> {
    let len = usize::try_from(range.end - range.start).map_err(|_| Error::FileTooLarge)?;
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| failed(what, format!("no memory for {len} bytes"), std::io::ErrorKind::OutOfMemory))?;
    while out.len() < len {
        let at = range.start + out.len() as u64;
        let want = (len - out.len()).min(PIECE as usize);
        let (bytes, _) = file.read(want as u64, at).map_err(|e| error(what, e))?;
        if bytes.is_empty() || bytes.len() > want {
            let detail = format!("the host gave {} bytes at {at} where {want} were asked", bytes.len());
            return Err(failed(what, detail, std::io::ErrorKind::UnexpectedEof));
        }
        out.extend_from_slice(&bytes);
    }
    Ok(out)
}

impl ByteSource for HostPack {
    fn size(&self) -> u64 {
        self.opened.size()
    }

    fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        self.opened.get(&range)
    }

    /// Read on first use and kept once it matches its digest; bytes that
    /// do not (or a read that fails, or one past [`MAX_KEPT`]) are not
    /// kept, and the next read tries again.
    fn extent(&self, k: u64, range: Range<u64>) -> Option<&[u8]> {
        if range.is_empty() {
            return Some(&[]);
        }
        let extents = self.extents.get()?;
        let k = usize::try_from(k).ok()?;
        let slot = extents.slots.get(k)?;
        if slot.get().is_none() {
            let len = range.end - range.start;
            if self.kept.load(Ordering::Relaxed) + len > MAX_KEPT {
                return None;
            }
            let bytes = read(&self.file, &self.what, range).ok()?;
            if Digest::of(&bytes) != extents.digests[k] {
                return None;
            }
            self.kept.fetch_add(len, Ordering::Relaxed);
            let _ = slot.set(bytes.into());
        }
        slot.get().map(|b| &b[..])
    }

    /// Every extent it lends matched its digest (`extent`).
    fn checks_extents(&self) -> bool {
        true
    }

    fn at_hand(&self, k: u64, range: Range<u64>) -> bool {
        let here = || Some(self.extents.get()?.slots.get(usize::try_from(k).ok()?)?.get().is_some());
        range.is_empty() || here() == Some(true)
    }
}

/// Opens the pack in the host's file `host_path`, pinned to `digest`.
pub(crate) fn open(host_path: &str, digest: &Digest) -> Result<Arc<dyn FileSystem>> {
    let (dir, rest) = place(host_path).ok_or(Error::NotFound)?;
    let what = format!("reading {host_path}");
    let follow = host::PathFlags::SYMLINK_FOLLOW;
    // Only a regular file: opening a FIFO would wait for a writer.
    let kind = if rest.is_empty() { dir.get_type() } else { dir.stat_at(follow, &rest).map(|s| s.type_) };
    match kind.map_err(|e| error(&what, e))? {
        host::DescriptorType::RegularFile => {}
        host::DescriptorType::Directory => return Err(Error::IsDir),
        other => return Err(failed(&what, format!("a {other:?}, not a file"), std::io::ErrorKind::InvalidInput)),
    }
    let file = dir.open_at(follow, &rest, host::OpenFlags::empty(), host::DescriptorFlags::READ);
    let file = file.map_err(|e| error(&what, e))?;
    let size = file.stat().map_err(|e| error(&what, e))?.size;
    let mut plan = LazyOpen::with_size(size)?;
    let mut fetched = 0;
    loop {
        match plan.next() {
            OpenStep::Fetch(ranges) => {
                fetched += ranges.iter().map(|r| r.end - r.start).sum::<u64>();
                if fetched > MAX_INDEX {
                    let detail = format!(
                        "an index of {fetched} bytes, more than a host's pack may have ({MAX_INDEX}): embed it"
                    );
                    return Err(failed(&what, detail, std::io::ErrorKind::InvalidData));
                }
                for r in ranges {
                    plan.accept(r.start, read(&file, &what, r)?)?;
                }
            }
            OpenStep::Open => break,
            OpenStep::Tail(_) => return Err(Error::Invalid),
        }
    }
    let options = ReadOptions::new().pin(Some(*digest));
    let make = |opened| HostPack { file, what, opened, extents: OnceLock::new(), kept: AtomicU64::new(0) };
    let (pack, _) = plan.open_as(options, make)?;
    let n = pack.extent_count();
    let corrupt = || Error::Corrupt(CorruptPack { offset: 0, kind: CorruptKind::NoDigests });
    let digests = (0..n).map(|k| pack.extent_digest(k).ok_or_else(corrupt)).collect::<Result<_>>()?;
    let slots = (0..n).map(|_| OnceLock::new()).collect();
    let _ = pack.source().extents.set(Extents { digests, slots });
    Ok(Arc::new(pack))
}
