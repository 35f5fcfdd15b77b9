//! What a reader that holds only part of a pack needs of its layout: which
//! bytes must be here before it opens ([`Layout::required`]: the header,
//! and the index region with the trailer), and once it is open, where each
//! file's bytes lie ([`PackFs::blob_of`], [`PackFs::blob_extent`]). A lazy
//! reader (the browser's, over HTTP Range requests) fetches by these and
//! leaves every other check to the open.

use super::corrupt::{CorruptPack, Structure};
use super::inode;
use super::reader::{ByteSource, PackFs};
use super::trailer::Trailer;
use crate::{FileType, Ino};

pub use super::header::HEADER_LEN;
pub use super::trailer::TRAILER_LEN;

/// Where a pack's sections lie, from its trailer alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The whole pack's length.
    pub pack_len: u64,
    /// Where the data section (the blobs) starts.
    pub data_offset: u64,
    /// The data section's length.
    pub data_len: u64,
    /// Where the index region starts; it runs to the trailer.
    pub index_offset: u64,
}

impl Layout {
    /// From a pack's last [`TRAILER_LEN`] bytes, their magic and checksum
    /// checked. The fields are trusted only to say what to fetch: the open
    /// checks them against the rest.
    pub fn from_trailer(bytes: &[u8]) -> Result<Layout, CorruptPack> {
        let bytes = super::cursor::slice(bytes, Structure::Trailer, "trailer", 0, TRAILER_LEN, 0)?;
        let t = Trailer::parse(bytes, 0)?;
        Ok(Layout {
            pack_len: t.pack_len,
            data_offset: t.data_offset,
            data_len: t.data_len,
            index_offset: t.index_offset,
        })
    }

    /// Where the trailer starts.
    pub fn trailer_offset(&self) -> u64 {
        self.pack_len.saturating_sub(TRAILER_LEN)
    }

    /// The byte ranges an open reads, `(start, end)`: the header, and the
    /// index region with the trailer.
    pub fn required(&self) -> [(u64, u64); 2] {
        [(0, HEADER_LEN.min(self.pack_len)), (self.index_offset.min(self.pack_len), self.pack_len)]
    }
}

impl<S: ByteSource> PackFs<S> {
    /// The blob holding file `ino`'s bytes; `None` for another kind, or a
    /// number the pack does not have.
    pub fn blob_of(&self, ino: Ino) -> Option<u64> {
        let (rec, at) = self.raw(ino).ok()?;
        (inode::kind(rec, at).ok()? == FileType::File).then(|| inode::data(rec))
    }

    /// Where blob `k`'s bytes lie in the pack, `(start, end)`.
    pub fn blob_extent(&self, k: u64) -> Option<(u64, u64)> {
        let b = self.index.blob(self.region().ok()?, k).ok()?;
        Some((b.offset, b.offset.checked_add(b.len)?))
    }
}
