//! Packs that claim more than a lazily opened pack may have (the limits of
//! `pack::layout`): a compressed index that decodes past
//! `MAX_DECODED_INDEX`, more extents than `MAX_EXTENTS`. Each is refused at
//! open with `CorruptKind::TooLarge` and its figures, before anything is
//! allocated for what it claims; opened whole, as a local file is, the
//! same bytes are held to the format's limits only.
//!
//! Before these limits a few MiB fetched made a lazy reader allocate (and
//! zero) a 1 to 4 GiB index region, then a 24-byte slot per chunk (73 in
//! the host's remote source) for up to 2^27 chunks.

use packfs_core::pack::layout::{HEADER_LEN, MAX_DECODED_INDEX, MAX_EXTENTS, TRAILER_LEN};
use packfs_core::pack::{Compression, CorruptKind, Layout, Limit, PackFs, PackOptions, ReadOptions, checksum, fuzzing};
use packfs_core::{Error, FileSystem, MemFs};

use crate::common::{kind, pack_bytes, write_file};
use crate::pack_stream::peak_during;

/// What `f` returns, and the most bytes this thread held at once while it
/// ran (beyond what it held before).
fn largest_allocation<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let mut out = None;
    let peak = peak_during(|| out = Some(f()));
    (out.expect("ran"), peak)
}

/// A small version 2 pack with a compressed index.
fn v2() -> Vec<u8> {
    let fs = MemFs::new();
    for i in 0..20 {
        write_file(&fs, fs.root(), &format!("f{i:02}"), format!("file {i} ").repeat(50 * i).as_bytes());
    }
    let mut out = Vec::new();
    // Without digests: the bombs below rewrite the chunk table alone.
    let options = PackOptions::new().compress(Some(Compression::zstd(3))).chunk_size(4096).digests(false);
    options.write(&fs, &mut out).unwrap();
    out
}

/// The pieces a lazy reader fetches before it opens (the header, the index
/// region and the trailer), as it finds them.
fn required(bytes: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let layout = Layout::from_trailer(&bytes[bytes.len() - TRAILER_LEN as usize..]).unwrap();
    let ranges = layout.required_to_fetch().expect("within MAX_FETCHED_INDEX");
    ranges.iter().map(|&(s, e)| (s, bytes[s as usize..e as usize].to_vec())).collect()
}

fn open_lazily(bytes: &[u8]) -> packfs_core::Result<PackFs<packfs_core::pack::Partial>> {
    PackFs::open_partial(bytes.len() as u64, required(bytes), ReadOptions::new())
}

/// The limit a refusal names, and its figures, if it is `TooLarge`.
fn too_large<T>(r: &packfs_core::Result<T>) -> Option<(Limit, u64, u64)> {
    match r {
        Err(Error::Corrupt(c)) => match c.kind {
            CorruptKind::TooLarge { what, value, limit } => Some((what, value, limit)),
            _ => None,
        },
        _ => None,
    }
}

/// A compressed index declared to decode past `MAX_DECODED_INDEX` (from
/// 4 MiB stored, within the format's 256 to 1) is refused on the trailer
/// alone: nothing near the declared size is allocated, nothing decoded.
/// At the limit it is taken (the frame then fails to decode); opened
/// whole, past it too.
#[test]
fn pack_limits_refuse_an_index_that_decodes_past_its_bound() {
    let base = v2();
    let over = u32::try_from(MAX_DECODED_INDEX + 8).unwrap();
    // Not even a frame: what it claims is all there is to it.
    let stored = vec![0u8; (over as usize).div_ceil(256).next_multiple_of(8)];
    let bomb = fuzzing::with_index(&base, &stored, over);
    let pieces = required(&bomb);
    let (lazy, largest) =
        largest_allocation(|| PackFs::open_partial(bomb.len() as u64, pieces, ReadOptions::new()).map(|_| ()));
    assert_eq!(too_large(&lazy), Some((Limit::DecodedIndex, over.into(), MAX_DECODED_INDEX)), "{lazy:?}");
    let shown = lazy.unwrap_err().to_string();
    assert!(shown.contains(&format!("decodes to {over} bytes, more than a lazily opened pack may have")), "{shown}");
    assert!(largest < 1 << 20, "the open asked for {largest} bytes");
    // `lazy` on any source is the same check.
    let (r, largest) = largest_allocation(|| PackFs::open_with(&bomb[..], ReadOptions::new().lazy(true)).map(|_| ()));
    assert_eq!(too_large(&r), Some((Limit::DecodedIndex, over.into(), MAX_DECODED_INDEX)));
    assert!(largest < 1 << 20, "the open asked for {largest} bytes");
    // A local file's open holds it to the format only: the frame is tried.
    assert_eq!(kind(PackFs::open(&bomb[..])), CorruptKind::Decode { chunk: u64::MAX });

    let at = u32::try_from(MAX_DECODED_INDEX).unwrap();
    let edge = fuzzing::with_index(&base, &stored, at);
    assert_eq!(kind(open_lazily(&edge)), CorruptKind::Decode { chunk: u64::MAX });
}

/// An index region of one zstd frame whose header declares more than the
/// region's `index_len`: a 2 TiB window, or a content size past it, over
/// 1 GiB of RLE blocks (33 KB stored). Refused on the header before the
/// region is set aside, local and lazy alike; on 65991d3 the pure-Rust
/// decoder kept the whole declared window, 1 GiB, before it yielded a
/// byte. A frame declaring a window it may have is decoded in memory
/// bounded by `index_len`, not by what it holds.
#[test]
fn pack_limits_refuse_an_index_frame_declaring_more_than_its_region() {
    use fuzzing::{Head, window_bomb};
    let base = v2();
    let honest = window_bomb(&base, Head::window(7 << 3), 1 << 30);
    let at = honest.len() - TRAILER_LEN as usize + 12; // the trailer's index_len
    let index_len = u32::from_le_bytes(honest[at..at + 4].try_into().unwrap());
    let past_content = Head::window(7 << 3).content(u64::from(index_len) + 1);
    for head in [Head::window(31 << 3 | 7), Head::window(21 << 3 | 7), Head::single(1 << 40), past_content] {
        let bomb = window_bomb(&base, head, 1 << 30);
        assert!(bomb.len() < 40_000, "{} bytes", bomb.len());
        let (r, largest) = largest_allocation(|| PackFs::open(&bomb[..]).map(|_| ()));
        assert_eq!(kind(r), CorruptKind::Decode { chunk: u64::MAX }, "{head:?}");
        assert!(largest < 1 << 20, "{head:?}: the open asked for {largest} bytes");
        let (r, largest) = largest_allocation(|| open_lazily(&bomb).map(|_| ()));
        assert_eq!(kind(r), CorruptKind::Decode { chunk: u64::MAX }, "{head:?} lazily");
        assert!(largest < 1 << 20, "{head:?}: the lazy open asked for {largest} bytes");
    }
    // Declaring a 128 KiB window, it is decoded until it yields more than
    // `index_len`: the region and a window, never the gigabyte.
    let (r, largest) = largest_allocation(|| PackFs::open(&honest[..]).map(|_| ()));
    assert_eq!(kind(r), CorruptKind::Decode { chunk: u64::MAX });
    assert!(largest < index_len as usize + (1 << 20), "the open asked for {largest} bytes");
}

/// The most a format allows, 4 GiB from 16 MiB, lazily: refused as
/// quickly, with nothing allocated for it.
#[test]
fn pack_limits_refuse_a_four_gib_index_without_allocating_it() {
    let base = v2();
    let stored = vec![0u8; (u32::MAX as usize).div_ceil(256).next_multiple_of(8)];
    let bomb = fuzzing::with_index(&base, &stored, u32::MAX - 7);
    let (r, largest) = largest_allocation(|| open_lazily(&bomb).map(|_| ()));
    assert_eq!(too_large(&r), Some((Limit::DecodedIndex, u64::from(u32::MAX - 7), MAX_DECODED_INDEX)), "{r:?}");
    // The pieces' copies (16 MiB) are made before the open; it adds none.
    assert!(largest <= stored.len() + 4096, "the open asked for {largest} bytes");
}

/// A chunk table claiming one chunk more than `MAX_EXTENTS`, from a 2 MiB
/// frame: refused on its footer, before a record is checked or a slot made
/// for one. At the limit the records are checked (and fail: they are
/// zeros); opened whole, past it too.
#[test]
fn pack_limits_refuse_more_chunks_than_their_bound() {
    let base = v2();
    let bomb = fuzzing::chunk_bomb(&base, MAX_EXTENTS + 1);
    assert!(bomb.len() < 4 << 20, "{} bytes", bomb.len());
    let (r, largest) = largest_allocation(|| open_lazily(&bomb).map(|_| ()));
    assert_eq!(too_large(&r), Some((Limit::Extents, MAX_EXTENTS + 1, MAX_EXTENTS)), "{r:?}");
    let shown = r.unwrap_err().to_string();
    assert!(shown.contains("more than a lazily opened pack may have (16777216)"), "{shown}");
    // The decoded index itself (512 MiB, within MAX_DECODED_INDEX) and no
    // more: nothing sized by the chunk count.
    assert!(largest as u64 <= MAX_DECODED_INDEX && largest as u64 >= MAX_EXTENTS * 32, "{largest}");
    let local = kind(PackFs::open(&bomb[..]));
    assert!(matches!(local, CorruptKind::BadField { field: "stored_len", .. }), "{local:?}");

    let edge = fuzzing::chunk_bomb(&base, MAX_EXTENTS);
    let at = kind(open_lazily(&edge));
    assert!(matches!(at, CorruptKind::BadField { field: "stored_len", .. }), "{at:?}");
}

/// A version 1 pack's extents are its blobs, which the trailer counts: one
/// more than `MAX_EXTENTS` is refused from the header and the trailer
/// alone, before the index region (here never fetched) is looked at.
#[test]
fn pack_limits_refuse_more_blobs_than_their_bound() {
    let fs = MemFs::new();
    write_file(&fs, fs.root(), "f", b"one blob");
    let base = pack_bytes(&fs);
    let t = base.len() - TRAILER_LEN as usize;
    let u64_at = |at: usize| u64::from_le_bytes(base[t + at..t + at + 8].try_into().unwrap());
    let (blobs_offset, strings_len) = (u64_at(88), u64_at(112));
    // The same index, its blob table grown to MAX_EXTENTS + 1 records:
    // a pack of some 400 MiB, of which only the ends are here.
    let blobs = MAX_EXTENTS + 1;
    let strings = blobs_offset + blobs * 24;
    let pack_len = (strings + strings_len).next_multiple_of(8) + TRAILER_LEN;
    let mut trailer = base[t..].to_vec();
    for (at, v) in [(16, pack_len), (96, blobs), (104, strings)] {
        trailer[at..at + 8].copy_from_slice(&u64::to_le_bytes(v));
    }
    let sum = checksum(&trailer[..120]);
    trailer[120..].copy_from_slice(&sum.to_le_bytes());
    let pieces = vec![(0, base[..HEADER_LEN as usize].to_vec()), (pack_len - TRAILER_LEN, trailer)];
    let r = PackFs::open_partial(pack_len, pieces, ReadOptions::new());
    assert_eq!(too_large(&r), Some((Limit::Extents, blobs, MAX_EXTENTS)), "{:?}", r.map(|_| ()));
}
