//! A pack in a file of the host's (`--mount /=host:/packs/app.pack`),
//! read through the host's `wasi:filesystem`: the open reads the header,
//! the index and the trailer (planned by `LazyOpen`, as a pack over HTTP
//! is opened) and refuses a pack that is not the one pinned; then each
//! extent is read on its first use, checked against the pack's digest
//! table (the pin), and kept. So only the index and the bytes read are
//! ever in the component's memory.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use packfs_core::pack::{ByteSource, Digest, LazyOpen, OpenStep, Pieces, ReadOptions};
use packfs_core::{Error, FileSystem, Result};

use crate::bindings::wasi::filesystem::types as host;
use crate::host::{error, place};

/// The most bytes asked of the host in one `read`.
const PIECE: u64 = 1 << 20;

/// An extent's bytes, once read.
type Slot = OnceLock<Box<[u8]>>;

/// The pack's bytes: what the open read, and each extent once read.
pub(crate) struct HostPack {
    /// The host's file.
    file: host::Descriptor,
    /// What a failed read says it was doing.
    what: String,
    opened: Pieces,
    /// One slot per extent, made once the pack is open.
    extents: OnceLock<Box<[Slot]>>,
}

impl HostPack {
    /// `range` of the file, read whole (a short file is `EIO`).
    fn read(&self, range: Range<u64>) -> Result<Vec<u8>> {
        read(&self.file, &self.what, range)
    }
}

fn read(file: &host::Descriptor, what: &str, range: Range<u64>) -> Result<Vec<u8>> {
    let len = usize::try_from(range.end - range.start).map_err(|_| Error::FileTooLarge)?;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let at = range.start + out.len() as u64;
        let want = (len - out.len()).min(PIECE as usize);
        let (bytes, _) = file.read(want as u64, at).map_err(|e| error(what, e))?;
        if bytes.is_empty() || bytes.len() > want {
            let detail = format!("{what}: the host gave {} bytes at {at} where {want} were asked", bytes.len());
            return Err(Error::Os(packfs_core::OsError::new(detail, std::io::Error::other("short read"))));
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

    /// Read on first use; the reader checks it against its digest (the
    /// pin) on that first read, and a failed read is tried again next time.
    fn extent(&self, k: u64, range: Range<u64>) -> Option<&[u8]> {
        if range.is_empty() {
            return Some(&[]);
        }
        let slot = self.extents.get()?.get(usize::try_from(k).ok()?)?;
        if slot.get().is_none() {
            let _ = slot.set(self.read(range).ok()?.into());
        }
        slot.get().map(|b| &b[..])
    }

    fn at_hand(&self, k: u64, range: Range<u64>) -> bool {
        let here = || Some(self.extents.get()?.get(usize::try_from(k).ok()?)?.get().is_some());
        range.is_empty() || here() == Some(true)
    }
}

/// Opens the pack in the host's file `host_path`, pinned to `digest`.
pub(crate) fn open(host_path: &str, digest: &Digest) -> Result<Arc<dyn FileSystem>> {
    let (dir, rest) = place(host_path).ok_or(Error::NotFound)?;
    if rest.is_empty() {
        return Err(Error::IsDir);
    }
    let what = format!("reading {host_path}");
    let flags = host::DescriptorFlags::READ;
    let file = dir.open_at(host::PathFlags::SYMLINK_FOLLOW, &rest, host::OpenFlags::empty(), flags);
    let file = file.map_err(|e| error(&what, e))?;
    let size = file.stat().map_err(|e| error(&what, e))?.size;
    let mut plan = LazyOpen::with_size(size)?;
    loop {
        match plan.next() {
            OpenStep::Fetch(ranges) => {
                for r in ranges {
                    plan.accept(r.start, read(&file, &what, r)?)?;
                }
            }
            OpenStep::Open => break,
            OpenStep::Tail(_) => return Err(Error::Invalid),
        }
    }
    let options = ReadOptions::new().pin(Some(*digest));
    let make = |opened| HostPack { file, what, opened, extents: OnceLock::new() };
    let (pack, _) = plan.open_as(options, make)?;
    let slots = (0..pack.extent_count()).map(|_| OnceLock::new()).collect();
    let _ = pack.source().extents.set(slots);
    Ok(Arc::new(pack))
}
