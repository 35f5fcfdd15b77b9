//! Hostile packs made to order, for the mutation test, the `fuzz/`
//! targets and other crates' tests (feature `fuzzing`). Not part of the
//! stable API.

use std::collections::VecDeque;

use super::blob::checksum;
use super::cursor::width;
use super::header::{self, HEADER_LEN};
use super::layout::Layout;
use super::pieces::cut;
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
    if len >= width(HEADER_LEN) {
        let sum = checksum(&bytes[..header::CHECKED_LEN]);
        put_u64(bytes, header::CHECKED_LEN, sum);
    }
    let Some(t) = len.checked_sub(width(TRAILER_LEN)).filter(|&t| t >= width(HEADER_LEN)) else { return };
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
    let Some(t) = len.checked_sub(width(TRAILER_LEN)).filter(|&t| t >= width(HEADER_LEN)) else {
        return bytes.to_vec();
    };
    let Ok(trailer) = trailer::Trailer::parse(&bytes[t..], t as u64) else { return bytes.to_vec() };
    let index = usize::try_from(trailer.index_offset).unwrap_or(usize::MAX);
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

/// A piece of a zstd frame made by hand ([`zstd_frame`]).
#[derive(Debug, Clone, Copy)]
pub enum FramePart<'a> {
    /// These bytes, in raw blocks.
    Bytes(&'a [u8]),
    /// This many zero bytes, in RLE blocks: 4 bytes of frame per 128 KiB.
    Zeros(usize),
}

/// What a frame made by [`zstd_frame_declaring`] declares in its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    /// The window descriptor byte (a window of 2^(10 + w >> 3) times
    /// (1 + (w & 7) / 8)); `None`: a single segment, whose window is the
    /// content size.
    pub window: Option<u8>,
    /// The content size the header declares, if any (a single segment
    /// must declare one).
    pub content: Option<u64>,
}

impl Head {
    /// A window of descriptor `w`, no content size.
    pub fn window(w: u8) -> Head {
        Head { window: Some(w), content: None }
    }

    /// A single segment of `content` bytes.
    pub fn single(content: u64) -> Head {
        Head { window: None, content: Some(content) }
    }

    /// This head declaring a content size of `n`.
    pub fn content(self, n: u64) -> Head {
        Head { content: Some(n), ..self }
    }
}

/// One zstd frame that decodes to `parts` in order, written without a
/// compressor (raw and RLE blocks, a 128 KiB window, no checksum): what
/// lets a test make an index of hundreds of MiB from a few.
pub fn zstd_frame(parts: &[FramePart<'_>]) -> Vec<u8> {
    zstd_frame_declaring(Head::window(7 << 3), parts)
}

/// [`zstd_frame`] with the header `head`, whatever the blocks hold: what
/// lets a test or a fuzzer make a frame that claims a huge window or a
/// content size other than its own.
pub fn zstd_frame_declaring(head: Head, parts: &[FramePart<'_>]) -> Vec<u8> {
    const BLOCK: usize = 128 << 10;
    const ZERO: &[u8] = &[0];
    // (block type: 0 raw, 1 RLE; decoded size; the block's content)
    let mut blocks: Vec<(u32, usize, &[u8])> = Vec::new();
    for part in parts {
        match *part {
            FramePart::Bytes(b) => blocks.extend(b.chunks(BLOCK).map(|c| (0, c.len(), c))),
            FramePart::Zeros(n) => {
                blocks.extend((0..n.div_ceil(BLOCK)).map(|i| (1, (n - i * BLOCK).min(BLOCK), ZERO)));
            }
        }
    }
    if blocks.is_empty() {
        blocks.push((0, 0, &[]));
    }
    // The content size field: as narrow as the value and the segment allow
    // (a 2-byte field holds the size less 256; a 1-byte one only in a
    // single segment).
    let single = head.window.is_none();
    let (flag, field): (u8, Vec<u8>) = match head.content {
        None => (0, vec![]),
        Some(n) if single && n < 256 => (0, vec![n.to_le_bytes()[0]]),
        Some(n) if (256..65_536 + 256).contains(&n) => (1, (n - 256).to_le_bytes()[..2].to_vec()),
        Some(n) => match u32::try_from(n) {
            Ok(n) => (2, n.to_le_bytes().to_vec()),
            Err(_) => (3, n.to_le_bytes().to_vec()),
        },
    };
    let mut out = vec![0x28, 0xb5, 0x2f, 0xfd, flag << 6 | u8::from(single) << 5];
    out.extend(head.window);
    out.extend(field);
    let last = blocks.len() - 1;
    for (i, (kind, size, body)) in blocks.into_iter().enumerate() {
        #[allow(clippy::cast_possible_truncation, reason = "a block holds at most BLOCK (128 KiB) bytes")]
        let size = size as u32;
        let header = u32::from(i == last) | kind << 1 | size << 3;
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(body);
    }
    out
}

/// A fuzzer's bytes as a frame made by hand ([`zstd_frame_declaring`]),
/// so that it tries what headers declare rather than meet a valid one by
/// chance: byte 0 is the window descriptor (255: a single segment), bytes
/// 1..9 the declared content size (all 255: none), bytes 9..12 a count of
/// zero bytes in RLE blocks (to 16 MiB), then 2 bytes the length of the
/// raw bytes that follow them. Returns the frame and the bytes after it.
pub fn frame_from(input: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let (head, rest) = input.split_first_chunk::<14>()?;
    let content = u64::from_le_bytes(head[1..9].try_into().ok()?);
    let head = Head { window: Some(head[0]).filter(|&w| w != 255), content: Some(content).filter(|&n| n != u64::MAX) };
    let zeros = usize::from(input[9]) | usize::from(input[10]) << 8 | usize::from(input[11]) << 16;
    let raw = usize::from(u16::from_le_bytes([input[12], input[13]])).min(rest.len());
    let (raw, rest) = rest.split_at(raw);
    Some((zstd_frame_declaring(head, &[FramePart::Zeros(zeros), FramePart::Bytes(raw)]), rest))
}

/// `pack` with its index region replaced by `stored` (then zero padding to
/// a multiple of 8), which the trailer declares to decode to `index_len`
/// bytes; the other trailer fields as they were, the checksums resealed.
/// `pack` as it is if it has no trailer to edit.
pub fn with_index(pack: &[u8], stored: &[u8], index_len: u32) -> Vec<u8> {
    let Some(t) = pack.len().checked_sub(width(TRAILER_LEN)).filter(|&t| t >= width(HEADER_LEN)) else {
        return pack.to_vec();
    };
    let Ok(trailer) = trailer::Trailer::parse(&pack[t..], t as u64) else { return pack.to_vec() };
    let Some(head) = usize::try_from(trailer.index_offset).ok().and_then(|i| pack.get(..i)) else {
        return pack.to_vec();
    };
    let mut out = head.to_vec();
    out.extend_from_slice(stored);
    out.resize(out.len().next_multiple_of(8), 0);
    let mut tail = pack[t..].to_vec();
    tail[trailer::INDEX_LEN_AT..trailer::INDEX_LEN_AT + 4].copy_from_slice(&index_len.to_le_bytes());
    out.extend_from_slice(&tail);
    reseal(&mut out);
    out
}

/// A version 2 pack that claims `chunks` chunks from a few MiB: `pack`'s
/// own tables (its index as [`plain_index`] decodes it, up to the end of
/// the string pool), zero filler, `chunks` chunk records of zeros and a
/// footer saying `chunks`, stored as one [`zstd_frame`] (the records in RLE
/// blocks) that decodes to all of it. The filler is raw, just enough for
/// the stored frame to be a 256th of what it decodes to, as the format
/// requires. The records are not valid: an open that gets as far as
/// checking them refuses the pack. `pack` as it is if it is not a
/// version 2 pack, or the region would pass 4 GiB.
pub fn chunk_bomb(pack: &[u8], chunks: u64) -> Vec<u8> {
    let plain = plain_index(pack);
    let Some(t) = plain.len().checked_sub(width(TRAILER_LEN)).filter(|&t| t >= width(HEADER_LEN)) else {
        return pack.to_vec();
    };
    let Ok(trailer) = trailer::Trailer::parse(&plain[t..], t as u64) else { return pack.to_vec() };
    let tables = trailer.strings_offset.saturating_add(trailer.strings_len);
    let (Ok(index), Ok(tables)) = (usize::try_from(trailer.index_offset), usize::try_from(tables)) else {
        return pack.to_vec();
    };
    let records = usize::try_from(chunks).ok().and_then(|n| n.checked_mul(32));
    let (Some(head), Some(records)) = (plain.get(index..tables), records) else { return pack.to_vec() };
    if trailer.version < 2 {
        return pack.to_vec();
    }
    let pad = vec![0u8; head.len().next_multiple_of(8) - head.len()];
    let filler = vec![0u8; (records / 255 + 4096).next_multiple_of(8)];
    let mut footer = [0u8; 16];
    footer[..8].copy_from_slice(&chunks.to_le_bytes());
    let decoded = head.len() + pad.len() + filler.len() + records + footer.len();
    let Ok(index_len) = u32::try_from(decoded) else { return pack.to_vec() };
    let frame = zstd_frame(&[
        FramePart::Bytes(head),
        FramePart::Bytes(&pad),
        FramePart::Bytes(&filler),
        FramePart::Zeros(records),
        FramePart::Bytes(&footer),
    ]);
    with_index(&plain, &frame, index_len)
}

/// `pack` with its index region replaced by one zstd frame of `zeros`
/// zero bytes in RLE blocks (4 bytes stored per 128 KiB) whose header
/// declares `head`, said to decode to as much as the format lets a region
/// of its size (256 times it): a few KB that claim a window or content
/// size of the header's choosing. 1 GiB of zeros under a 2 TiB window
/// made a reader hold 1 GiB before it gave up.
pub fn window_bomb(pack: &[u8], head: Head, zeros: usize) -> Vec<u8> {
    let frame = zstd_frame_declaring(head, &[FramePart::Zeros(zeros)]);
    let index_len = u32::try_from(frame.len().next_multiple_of(8) * 256).unwrap_or(u32::MAX);
    with_index(pack, &frame, index_len)
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
    // Pinned too: to its own digest (a pack with a digest table opens
    // pinned exactly when it opens), and to another (never opens).
    let digest = PackFs::open(bytes).ok().and_then(|p| p.digest());
    if let Ok(p) = PackFs::open_with(bytes, ReadOptions::new().pin(Some(crate::digest::Digest::of(bytes)))) {
        assert!(
            p.digest() == Some(crate::digest::Digest::of(bytes)),
            "a pack opened pinned to a digest it does not have"
        );
    }
    let pinned = digest.map(|d| ReadOptions::new().pin(Some(d)));
    for opts in [ReadOptions::new(), ReadOptions::new().verify_on_read(true)].into_iter().chain(pinned) {
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
    let Some(geo) = bytes.len().checked_sub(width(TRAILER_LEN)).and_then(|t| Layout::from_trailer(&bytes[t..]).ok())
    else {
        return;
    };
    let pieces = geo.required().into_iter().filter_map(|(s, e)| Some((s, cut(bytes, 0, s..e)?.to_vec())));
    let (partial, whole) = (PackFs::open_partial(len, pieces.collect(), ReadOptions::new()), PackFs::open(bytes));
    // The pieces an open needs are all here: only a lazily opened pack's
    // limits may refuse what opens whole.
    if let (Err(e), Ok(_)) = (&partial, &whole) {
        let too_large = matches!(e, crate::Error::Corrupt(c) if matches!(c.kind, super::CorruptKind::TooLarge { .. }));
        assert!(too_large, "a pack that opens whole is refused lazily: {e}");
    }
    let (Ok(partial), Ok(whole)) = (partial, whole) else { return };
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
                if let Some(piece) = cut(bytes, 0, r.clone()) {
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
    match super::chunk::decode(0, codec, stored, len, None) {
        Ok(out) => {
            assert_eq!(out.len(), len, "a decoded chunk is exactly its declared length");
            true
        }
        Err(_) => false,
    }
}

/// Loads `bytes` as a pack's zstd dictionary and, if it loads, decodes
/// `stored` with it into `len` bytes with the decoder this build reads
/// chunks with: neither may panic, and a success is exactly `len` bytes.
/// Returns whether it loaded.
pub fn load_dictionary(bytes: &[u8], stored: &[u8], len: usize) -> bool {
    let Some(dict) = super::dictionary::Dictionary::load(bytes) else { return false };
    if let Ok(out) = super::chunk::decode(0, super::chunk::Codec::Zstd, stored, len, Some(&dict)) {
        assert_eq!(out.len(), len, "a decoded chunk is exactly its declared length");
    }
    true
}
