//! Helpers shared by the mutation test and the `fuzz/` targets. Not part
//! of the stable API.

use std::collections::VecDeque;

use super::blob::checksum;
use super::header::{self, HEADER_LEN};
use super::layout::Layout;
use super::reader::{PackFs, ReadOptions};
use super::trailer::{self, TRAILER_LEN};
use crate::{FileSystem, FileType};

fn put_u64(bytes: &mut [u8], at: usize, v: u64) {
    if let Some(dst) = bytes.get_mut(at..at + 8) {
        dst.copy_from_slice(&v.to_le_bytes());
    }
}

fn get_u64(bytes: &[u8], at: usize) -> Option<u64> {
    bytes.get(at..at + 8).map(|b| u64::from_le_bytes(b.try_into().unwrap_or_default()))
}

/// Rewrites the header checksum, the trailer's `pack_len`, the index
/// checksum (when the trailer's `index_offset` is in range) and the trailer
/// checksum of possibly mutated pack bytes, so that the mutation reaches
/// the structural checks behind them.
pub fn reseal(bytes: &mut [u8]) {
    let len = bytes.len();
    if len >= HEADER_LEN as usize {
        let sum = checksum(&bytes[..header::CHECKED_LEN]);
        put_u64(bytes, header::CHECKED_LEN, sum);
    }
    let Some(t) = len.checked_sub(TRAILER_LEN as usize).filter(|&t| t >= HEADER_LEN as usize) else { return };
    put_u64(bytes, t + trailer::PACK_LEN_AT, len as u64);
    if let Some(index) =
        get_u64(bytes, t + trailer::INDEX_OFFSET_AT).and_then(|o| usize::try_from(o).ok()).filter(|&o| o <= t)
    {
        let sum = checksum(&bytes[index..t]);
        put_u64(bytes, t + trailer::INDEX_CHECKSUM_AT, sum);
    }
    let sum = checksum(&bytes[t..t + trailer::CHECKED_LEN]);
    put_u64(bytes, t + trailer::CHECKED_LEN, sum);
}

/// The same pack with its index region stored as it is: a version 2
/// pack's compressed index decoded in place (the trailer's `index_len` set
/// to 0, the rest resealed), so that mutations and hand edits reach the
/// tables. Bytes that are not such a pack come back unchanged.
pub fn plain_index(bytes: &[u8]) -> Vec<u8> {
    let len = bytes.len();
    let Some(t) = len.checked_sub(TRAILER_LEN as usize).filter(|&t| t >= HEADER_LEN as usize) else {
        return bytes.to_vec();
    };
    let Ok(trailer) = trailer::Trailer::parse(&bytes[t..], t as u64) else { return bytes.to_vec() };
    let index = trailer.index_offset as usize;
    if trailer.index_len == 0 || index > t {
        return bytes.to_vec();
    }
    let Ok(plain) = super::index::decode_index(&bytes[index..t], trailer.index_len, index as u64) else {
        return bytes.to_vec();
    };
    let mut out = bytes[..index].to_vec();
    out.extend_from_slice(&plain);
    out.resize(out.len().next_multiple_of(8), 0);
    let mut tail = bytes[t..].to_vec();
    tail[trailer::INDEX_LEN_AT..trailer::INDEX_LEN_AT + 4].fill(0);
    out.extend_from_slice(&tail);
    reseal(&mut out);
    out
}

/// Opens `bytes` as a pack both ways (with and without checking blobs on
/// read) and, when it opens, walks every directory (in pages, resuming from
/// cookies), looks every name up again, reads every file (`read_at` in
/// pieces and `file_bytes`), reads every symlink and verifies. It panics
/// only if the reader contradicts itself on a pack that opened; any error
/// is fine. Returns whether the pack opened.
pub fn exercise(bytes: &[u8]) -> bool {
    exercise_partial(bytes);
    let mut opened = false;
    for opts in [ReadOptions::new(), ReadOptions::new().verify_on_read(true)] {
        let Ok(fs) = PackFs::open_with(bytes, opts) else { continue };
        opened = true;
        let mut queue = VecDeque::from([fs.root()]);
        let mut visited = 0u64;
        while let Some(dir) = queue.pop_front() {
            visited += 1;
            assert!(visited <= fs.info().inodes, "walk visits a directory twice");
            let mut after: Option<std::sync::Arc<str>> = None;
            while let Ok(page) = fs.read_dir(dir, after.as_deref(), 3) {
                let Some(last) = page.last() else { break };
                after = Some(last.name.clone());
                for e in page {
                    assert_eq!(fs.lookup(dir, &e.name), Ok(e.ino), "lookup disagrees with read_dir");
                    let Ok(meta) = fs.metadata(e.ino) else { continue };
                    assert_eq!(meta.kind, e.kind);
                    match e.kind {
                        FileType::Dir => queue.push_back(e.ino),
                        FileType::Symlink => {
                            if let Ok(t) = fs.readlink(e.ino) {
                                assert_eq!(t.len() as u64, meta.size);
                            }
                        }
                        FileType::File => read_file(&fs, e.ino, meta.size),
                    }
                }
            }
        }
        let _ = fs.verify();
    }
    opened
}

/// Opens `bytes` as a [`Partial`] pack holding only what an open needs
/// (found by [`Layout`], as a lazy reader finds it), reads every file at the
/// root, storing each blob a read wants, and checks that the answers agree
/// with the whole pack's.
fn exercise_partial(bytes: &[u8]) {
    let len = bytes.len() as u64;
    let Some(geo) = len.checked_sub(TRAILER_LEN).and_then(|t| Layout::from_trailer(&bytes[t as usize..]).ok()) else {
        return;
    };
    let pieces = geo.required().into_iter().filter_map(|(s, e)| Some((s, bytes.get(s as usize..e as usize)?.to_vec())));
    let (Ok(partial), Ok(whole)) =
        (PackFs::open_partial(len, pieces.collect(), ReadOptions::new()), PackFs::open(bytes))
    else {
        return;
    };
    let Ok(entries) = whole.read_dir(whole.root(), None, 64) else { return };
    for e in entries.iter().filter(|e| e.kind == FileType::File) {
        let mut got = partial.file_bytes(e.ino).map(|b| b.into_owned());
        let mut refused = false;
        // Each round stores at least the extent the read stopped at, or
        // finds it damaged.
        for _ in 0..=partial.extent_count() {
            if got != Err(crate::Error::NotLoaded) || refused {
                break;
            }
            for r in partial.take_wanted() {
                if let Some(piece) = bytes.get(r.start as usize..r.end as usize) {
                    refused |= partial.store(r.start, piece).is_err();
                }
            }
            got = partial.file_bytes(e.ino).map(|b| b.into_owned());
        }
        if refused && got == Err(crate::Error::NotLoaded) {
            // Bytes failing their checksum are never kept, so never read
            // (the whole pack, not checking on read, may serve them).
            continue;
        }
        assert_eq!(got, whole.file_bytes(e.ino).map(|b| b.into_owned()), "a partial pack disagrees with the whole");
    }
}

fn read_file(fs: &PackFs<&[u8]>, ino: u64, size: u64) {
    let whole = fs.file_bytes(ino);
    let mut buf = [0u8; 4096];
    let mut pos = 0u64;
    let mut read = Vec::new();
    while let Ok(n) = fs.read_at(ino, pos, &mut buf) {
        if n == 0 {
            break;
        }
        read.extend_from_slice(&buf[..n]);
        pos += n as u64;
    }
    if let Ok(whole) = whole {
        assert_eq!(whole.len() as u64, size);
        assert_eq!(read, *whole, "read_at disagrees with file_bytes");
    }
}

/// Decodes `stored` as one chunk of `codec` (its code: 0 raw, 1 zstd,
/// 2 lz4; others are refused) into `len` bytes, as a read of a version 2
/// pack does, and checks what a reader relies on: a success is exactly
/// `len` bytes. Returns whether it decoded.
pub fn decode_chunk(codec: u8, stored: &[u8], len: usize) -> bool {
    let Some(codec) = super::chunk::Codec::from_code(codec) else { return false };
    match super::chunk::decode(0, codec, stored, len) {
        Ok(out) => {
            assert_eq!(out.len(), len, "a decoded chunk is exactly its declared length");
            true
        }
        Err(_) => false,
    }
}
