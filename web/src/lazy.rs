//! A pack whose bytes arrive piece by piece: [`LazyPack`].
//!
//! `packfs_core::pack::PackFs` reads a pack through a [`ByteSource`], one
//! contiguous slice of the whole pack. A pack opened by URL is not all here:
//! [`Sparse`] is a zeroed buffer of the pack's length (allocated zeroed, so
//! the pages nobody writes are never touched) into which the header, the
//! index region and the trailer are fetched before the pack is opened, and
//! each blob on its first read.
//!
//! [`LazyPack`] is the `FileSystem` over it. It knows which blobs are here;
//! a read of a file whose blob is not refuses with an `Io` error and records
//! the blob as *wanted*. The async layer ([`crate::fetch`]) then fetches the
//! wanted blobs and runs the operation again. That works through an overlay
//! too (its reads of the lower land here), so no layer above has to know
//! which lower inode backs which path.

// The pack's bytes arrive after it is opened: filling them is unsafe,
// each use argued where it stands.
#![allow(unsafe_code)]

use std::cell::UnsafeCell;
use std::collections::BTreeSet;
use std::sync::Mutex;

use packfs_core::pack::layout::TRAILER_LEN;
use packfs_core::pack::{ByteSource, Layout, PackFs, PackInfo, ReadOptions, VerifyReport};
use packfs_core::{DirEntry, Error, FileSystem, Ino, Metadata, OpenOptions, Result, SetTime};

/// A pack's bytes, some of which may not have arrived yet (they read as
/// zeros until [`Sparse::fill`] writes them).
pub struct Sparse {
    buf: UnsafeCell<Box<[u8]>>,
}

// SAFETY: `&Sparse` only ever reads the buffer (`bytes`), which any number
// of threads may do at once. The one way to write it, `fill`, is an
// `unsafe fn` whose caller promises that nothing else reads or writes the
// buffer meanwhile; that promise, not this impl, carries the exclusivity.
unsafe impl Sync for Sparse {}

impl Sparse {
    /// Bytes that are all here.
    pub fn complete(bytes: Vec<u8>) -> Self {
        Sparse { buf: UnsafeCell::new(bytes.into_boxed_slice()) }
    }

    /// `len` zero bytes; `NoSpace` when the memory cannot be had (rather
    /// than aborting), `FileTooLarge` when `len` does not fit the address
    /// space (a pack over 4 GiB on wasm32).
    pub fn zeroed(len: u64) -> Result<Self> {
        let n = usize::try_from(len).map_err(|_| Error::FileTooLarge)?;
        if n == 0 {
            return Ok(Sparse::complete(Vec::new()));
        }
        let layout = std::alloc::Layout::array::<u8>(n).map_err(|_| Error::FileTooLarge)?;
        // SAFETY: `layout` has a non-zero size (n > 0).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::NoSpace);
        }
        // SAFETY: `ptr` was just allocated by the global allocator with the
        // layout of `[u8; n]` and zero-filled, so it is `n` initialized bytes
        // that the box now owns and frees with that same layout.
        let slice = unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, n)) };
        Ok(Sparse { buf: UnsafeCell::new(slice) })
    }

    /// The whole buffer's length.
    pub fn len(&self) -> u64 {
        self.bytes().len() as u64
    }

    /// True for an empty buffer.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Copies `data` in at `offset`; `Invalid` if it does not fit.
    ///
    /// # Safety
    ///
    /// No slice returned by [`ByteSource::bytes`] on this buffer may be
    /// alive, and no other thread may use the buffer, until this returns.
    pub unsafe fn fill(&self, offset: u64, data: &[u8]) -> Result<()> {
        let start = usize::try_from(offset).map_err(|_| Error::Invalid)?;
        let end = start.checked_add(data.len()).ok_or(Error::Invalid)?;
        // SAFETY: the caller guarantees that no other reference into the
        // buffer exists while this one does.
        let buf = unsafe { &mut *self.buf.get() };
        buf.get_mut(start..end).ok_or(Error::Invalid)?.copy_from_slice(data);
        Ok(())
    }
}

impl ByteSource for Sparse {
    fn bytes(&self) -> &[u8] {
        // SAFETY: writes happen only in `fill`, whose caller guarantees that
        // no slice handed out here is alive meanwhile.
        unsafe { &*self.buf.get() }
    }
}

/// Which blobs are here: `None` once all are.
struct Present {
    bits: Option<Vec<u64>>,
    /// Blobs not here yet, so that noticing the last one costs nothing.
    missing: u64,
}

impl Present {
    /// None of `blobs` blobs here yet (all of none).
    fn missing_all(blobs: u64) -> Result<Self> {
        let words = usize::try_from(blobs.div_ceil(64)).map_err(|_| Error::FileTooLarge)?;
        Ok(Present { bits: (blobs > 0).then(|| vec![0; words]), missing: blobs })
    }

    fn get(&self, k: u64) -> bool {
        match &self.bits {
            None => true,
            Some(b) => usize::try_from(k / 64).ok().and_then(|w| b.get(w)).is_some_and(|w| w & (1 << (k % 64)) != 0),
        }
    }

    /// Marks blob `k` here; the bits go once every blob is.
    fn set(&mut self, k: u64) {
        if let Some(b) = &mut self.bits
            && let Some(w) = usize::try_from(k / 64).ok().and_then(|w| b.get_mut(w))
            && *w & (1 << (k % 64)) == 0
        {
            *w |= 1 << (k % 64);
            self.missing -= 1;
            if self.missing == 0 {
                self.bits = None;
            }
        }
    }
}

/// A range of the pack to fetch: blobs `first..=last`, bytes `start..end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Want {
    /// First blob.
    pub first: u64,
    /// Last blob.
    pub last: u64,
    /// First byte (absolute offset).
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// A read-only filesystem over a pack whose blobs may not all be here yet.
pub struct LazyPack {
    pack: PackFs<Sparse>,
    geo: Layout,
    present: Mutex<Present>,
    wanted: Mutex<BTreeSet<u64>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The error a read of content that has not arrived gives.
pub fn not_loaded() -> Error {
    Error::NotLoaded
}

impl LazyPack {
    /// Opens a pack that is all here.
    pub fn complete(bytes: Vec<u8>, options: ReadOptions) -> Result<Self> {
        let len = bytes.len() as u64;
        let geo = match len.checked_sub(TRAILER_LEN).and_then(|t| bytes.get(t as usize..)) {
            Some(t) => Layout::from_trailer(t).ok(),
            None => None,
        };
        let pack = PackFs::open_with(Sparse::complete(bytes), options)?;
        // The core accepted the pack, so the trailer parses.
        let geo = geo.ok_or_else(|| Error::Backend("trailer unreadable after open".into()))?;
        Ok(LazyPack {
            pack,
            geo,
            present: Mutex::new(Present { bits: None, missing: 0 }),
            wanted: Mutex::new(BTreeSet::new()),
        })
    }

    /// Opens a pack of which the header, index region and trailer are in
    /// `source`, and the bytes `here` too (the rest still zeros): blobs
    /// wholly inside `here` are not fetched again.
    pub fn partial(source: Sparse, geo: Layout, options: ReadOptions, here: (u64, u64)) -> Result<Self> {
        let pack = PackFs::open_with(source, options)?;
        let blobs = pack.info().blobs;
        let lazy = LazyPack {
            pack,
            geo,
            present: Mutex::new(Present::missing_all(blobs)?),
            wanted: Mutex::new(BTreeSet::new()),
        };
        {
            // An empty blob has no bytes to fetch: it is here from the start;
            // so is one the opening fetch brought.
            let mut present = lock(&lazy.present);
            let brought = |(s, e): (u64, u64)| s == e || (here.0 <= s && e <= here.1);
            for k in (0..blobs).filter(|&k| lazy.pack.blob_extent(k).is_some_and(brought)) {
                present.set(k);
            }
        }
        Ok(lazy)
    }

    /// What the pack holds.
    pub fn info(&self) -> PackInfo {
        self.pack.info()
    }

    /// Where the pack's sections lie.
    pub fn geometry(&self) -> Layout {
        self.geo
    }

    /// True once every blob is here.
    pub fn is_complete(&self) -> bool {
        lock(&self.present).bits.is_none()
    }

    /// Checks that `ino`'s content is here; if not, records its blob as
    /// wanted and returns the not-loaded error.
    fn need(&self, ino: Ino) -> Result<()> {
        let present = lock(&self.present);
        if present.bits.is_none() {
            return Ok(());
        }
        // Anything unexpected is left to the core, which reports it.
        let Some(k) = self.pack.blob_of(ino) else { return Ok(()) };
        if present.get(k) {
            return Ok(());
        }
        lock(&self.wanted).insert(k);
        Err(not_loaded())
    }

    /// True when a read asked for blobs that are not here.
    pub fn has_wanted(&self) -> bool {
        !lock(&self.wanted).is_empty()
    }

    /// The wanted blobs as ranges to fetch (adjacent blobs merged), and
    /// forgets them.
    pub fn take_wanted(&self) -> Vec<Want> {
        let ks: Vec<u64> = std::mem::take(&mut *lock(&self.wanted)).into_iter().collect();
        self.ranges(ks)
    }

    /// Every blob that is not here, as ranges (adjacent missing blobs
    /// merged): what loading the whole pack fetches.
    pub fn missing(&self) -> Vec<Want> {
        let present = lock(&self.present);
        if present.bits.is_none() {
            return Vec::new();
        }
        let ks: Vec<u64> = (0..self.pack.info().blobs).filter(|&k| !present.get(k)).collect();
        drop(present);
        self.ranges(ks)
    }

    fn ranges(&self, ks: Vec<u64>) -> Vec<Want> {
        let mut out: Vec<Want> = Vec::new();
        for k in ks {
            let Some((start, end)) = self.pack.blob_extent(k) else { continue };
            match out.last_mut() {
                // Blobs are in offset order and do not overlap: merge ranges
                // less than 4 KiB apart (the blobs between, wholly inside
                // the gap, come along and count as fetched).
                Some(w) if start >= w.end && start - w.end < 4096 => {
                    w.last = k;
                    w.end = end;
                }
                _ => out.push(Want { first: k, last: k, start, end }),
            }
        }
        out
    }

    /// Stores the fetched bytes of `want`'s blobs that are not here yet,
    /// leaving those already here (maybe checked) as they are, and marks
    /// them present.
    ///
    /// # Safety
    ///
    /// As [`Sparse::fill`]: no slice of the pack's bytes may be alive and no
    /// other thread may use this pack until this returns. In this crate,
    /// every other use of a `LazyPack` is a synchronous call on the one
    /// JavaScript thread that returns owned data.
    pub unsafe fn fill(&self, want: &Want, data: &[u8]) -> Result<()> {
        if data.len() as u64 != want.end - want.start {
            return Err(Error::Remote(format!(
                "fetched {} bytes for the range {}..{} of the pack",
                data.len(),
                want.start,
                want.end
            )));
        }
        let data_end = self.geo.data_offset.saturating_add(self.geo.data_len);
        if want.start < self.geo.data_offset || want.end > data_end {
            return Err(Error::Invalid);
        }
        // Only blobs not here yet: one here may have been checked already,
        // and stays as it was checked.
        let mut present = lock(&self.present);
        for k in want.first..=want.last {
            if present.get(k) {
                continue;
            }
            let (start, end) = self.pack.blob_extent(k).ok_or(Error::Invalid)?;
            if start < want.start || end > want.end {
                return Err(Error::Invalid);
            }
            let part = &data[(start - want.start) as usize..(end - want.start) as usize];
            // SAFETY: passed on to our caller.
            unsafe { self.pack.source().fill(start, part)? };
            present.set(k);
        }
        Ok(())
    }

    /// Checks every checksum; all blobs must be here (`Io` otherwise).
    pub fn verify(&self) -> Result<VerifyReport> {
        if !self.is_complete() {
            return Err(not_loaded());
        }
        self.pack.verify()
    }
}

impl FileSystem for LazyPack {
    fn root(&self) -> Ino {
        self.pack.root()
    }
    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        self.pack.lookup(dir, name)
    }
    fn metadata(&self, ino: Ino) -> Result<Metadata> {
        self.pack.metadata(ino)
    }
    fn parent(&self, dir: Ino) -> Result<Ino> {
        self.pack.parent(dir)
    }
    fn open(&self, dir: Ino, name: &str, opts: &OpenOptions) -> Result<Ino> {
        self.pack.open(dir, name, opts)
    }
    fn open_ino(&self, ino: Ino) -> Result<()> {
        self.pack.open_ino(ino)
    }
    fn close(&self, ino: Ino) {
        self.pack.close(ino)
    }
    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.need(ino)?;
        self.pack.read_at(ino, offset, buf)
    }
    fn write_at(&self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize> {
        self.pack.write_at(ino, offset, data)
    }
    fn append(&self, ino: Ino, data: &[u8]) -> Result<u64> {
        self.pack.append(ino, data)
    }
    fn set_len(&self, ino: Ino, len: u64) -> Result<()> {
        self.pack.set_len(ino, len)
    }
    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        self.pack.read_dir(dir, after, max)
    }
    fn mkdir(&self, dir: Ino, name: &str, mode: u32) -> Result<Ino> {
        self.pack.mkdir(dir, name, mode)
    }
    fn rmdir(&self, dir: Ino, name: &str) -> Result<()> {
        self.pack.rmdir(dir, name)
    }
    fn unlink(&self, dir: Ino, name: &str) -> Result<()> {
        self.pack.unlink(dir, name)
    }
    fn rename(&self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<()> {
        self.pack.rename(from_dir, from, to_dir, to)
    }
    fn symlink(&self, dir: Ino, name: &str, target: &str) -> Result<Ino> {
        self.pack.symlink(dir, name, target)
    }
    fn readlink(&self, ino: Ino) -> Result<String> {
        self.pack.readlink(ino)
    }
    fn link(&self, ino: Ino, dir: Ino, name: &str) -> Result<()> {
        self.pack.link(ino, dir, name)
    }
    fn set_times(&self, ino: Ino, atime: SetTime, mtime: SetTime) -> Result<()> {
        self.pack.set_times(ino, atime, mtime)
    }
    fn set_mode(&self, ino: Ino, mode: u32) -> Result<()> {
        self.pack.set_mode(ino, mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use packfs_core::pack::write_pack;
    use packfs_core::{MemFs, resolve};

    fn sample() -> Vec<u8> {
        let fs = MemFs::new();
        let root = fs.root();
        for (name, body) in [("a", &b"alpha"[..]), ("b", b""), ("c", &[7u8; 10_000][..]), ("d", b"delta")] {
            let f = fs.open(root, name, &OpenOptions::create()).unwrap();
            fs.write_at(f, 0, body).unwrap();
            fs.close(f);
        }
        let mut out = Vec::new();
        write_pack(&fs.snapshot(), &mut out).unwrap();
        out
    }

    /// A copy of `bytes` with only the header, index region and trailer.
    fn skeleton(bytes: &[u8]) -> (Sparse, Layout) {
        let geo = Layout::from_trailer(&bytes[bytes.len() - TRAILER_LEN as usize..]).unwrap();
        let sparse = Sparse::zeroed(bytes.len() as u64).unwrap();
        // SAFETY: `sparse` is not shared yet.
        unsafe {
            for (start, end) in geo.required() {
                sparse.fill(start, &bytes[start as usize..end as usize]).unwrap();
            }
        }
        (sparse, geo)
    }

    fn read(fs: &dyn FileSystem, name: &str) -> Result<Vec<u8>> {
        let ino = resolve::resolve(fs, fs.root(), name, true)?;
        let mut buf = vec![0; fs.metadata(ino)?.size as usize];
        let n = fs.read_at(ino, 0, &mut buf)?;
        buf.truncate(n);
        Ok(buf)
    }

    #[test]
    fn reads_wait_for_their_blob_and_nothing_else() {
        let bytes = sample();
        let (sparse, geo) = skeleton(&bytes);
        let pack = LazyPack::partial(sparse, geo, ReadOptions::new().verify_on_read(true), (0, 0)).unwrap();
        assert!(!pack.is_complete());
        // Metadata and listings need no content.
        assert_eq!(pack.read_dir(pack.root(), None, 10).unwrap().len(), 4);
        // The empty file needs nothing fetched.
        assert_eq!(read(&pack, "b").unwrap(), b"");
        assert!(!pack.has_wanted());
        assert_eq!(read(&pack, "c"), Err(not_loaded()));
        assert_eq!(read(&pack, "a"), Err(not_loaded()));
        let wants = pack.take_wanted();
        assert!(!pack.has_wanted());
        // "alpha" and the 10,000 sevens are close: one range.
        assert_eq!(wants.len(), 1, "{wants:?}");
        for w in &wants {
            // SAFETY: single-threaded test; no slices alive.
            unsafe { pack.fill(w, &bytes[w.start as usize..w.end as usize]).unwrap() };
        }
        assert_eq!(read(&pack, "a").unwrap(), b"alpha");
        assert_eq!(read(&pack, "c").unwrap(), vec![7u8; 10_000]);
        assert_eq!(read(&pack, "d"), Err(not_loaded()));
        assert_eq!(pack.verify(), Err(not_loaded()));
        let missing = pack.missing();
        assert_eq!(missing.len(), 1);
        // SAFETY: as above.
        unsafe { pack.fill(&missing[0], &bytes[missing[0].start as usize..missing[0].end as usize]).unwrap() };
        assert!(pack.is_complete());
        assert!(pack.verify().unwrap().is_ok());
        assert_eq!(read(&pack, "d").unwrap(), b"delta");
    }

    /// An empty blob has nothing to fetch: it never becomes a range (an
    /// empty HTTP range is invalid), and the pack completes without it.
    #[test]
    fn empty_blobs_are_here_from_the_start() {
        let fs = MemFs::new();
        for (name, body) in [("big", &[7u8; 10_000][..]), ("z", b"")] {
            let f = fs.open(fs.root(), name, &OpenOptions::create()).unwrap();
            fs.write_at(f, 0, body).unwrap();
            fs.close(f);
        }
        let mut bytes = Vec::new();
        write_pack(&fs.snapshot(), &mut bytes).unwrap();
        let (sparse, geo) = skeleton(&bytes);
        let pack = LazyPack::partial(sparse, geo, ReadOptions::new(), (0, 0)).unwrap();
        let missing = pack.missing();
        assert_eq!(missing.len(), 1, "{missing:?}");
        assert!(missing.iter().all(|w| w.end > w.start));
        // SAFETY: single-threaded test; no slices alive.
        unsafe { pack.fill(&missing[0], &bytes[missing[0].start as usize..missing[0].end as usize]).unwrap() };
        assert!(pack.is_complete());
        assert!(pack.verify().unwrap().is_ok());
        // Bytes fetched again (a merged range, or a changed pack) do not
        // overwrite blobs already here.
        // SAFETY: as above.
        unsafe { pack.fill(&missing[0], &vec![0; (missing[0].end - missing[0].start) as usize]).unwrap() };
        assert_eq!(read(&pack, "big").unwrap(), vec![7u8; 10_000]);

        // Blobs the opening fetch brought along are not fetched again.
        let (sparse, geo) = skeleton(&bytes);
        let (start, end) = (missing[0].start, missing[0].end);
        // SAFETY: `sparse` is not shared yet.
        unsafe { sparse.fill(start, &bytes[start as usize..end as usize]).unwrap() };
        let pack = LazyPack::partial(sparse, geo, ReadOptions::new(), (start, end)).unwrap();
        assert!(pack.is_complete());
        assert_eq!(read(&pack, "big").unwrap(), vec![7u8; 10_000]);
    }

    #[test]
    fn a_fill_must_match_its_range() {
        let bytes = sample();
        let (sparse, geo) = skeleton(&bytes);
        let pack = LazyPack::partial(sparse, geo, ReadOptions::new(), (0, 0)).unwrap();
        let w = pack.missing()[0];
        // SAFETY: single-threaded test; no slices alive.
        unsafe {
            assert!(pack.fill(&w, &[1, 2, 3]).is_err());
            let outside = Want { start: 0, end: 8, ..w };
            assert_eq!(pack.fill(&outside, &[0; 8]), Err(Error::Invalid));
        }
        assert!(!pack.is_complete());
    }

    #[test]
    fn a_complete_pack_needs_nothing() {
        let pack = LazyPack::complete(sample(), ReadOptions::new()).unwrap();
        assert!(pack.is_complete());
        assert!(pack.missing().is_empty());
        assert_eq!(read(&pack, "d").unwrap(), b"delta");
        assert!(pack.verify().unwrap().is_ok());
        assert!(Sparse::zeroed(u64::MAX).is_err());
    }
}
