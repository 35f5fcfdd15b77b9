//! A pack opened with only some of its bytes (`PackFs::open_partial`):
//! reads of blobs not here are `NotLoaded` and say what to fetch; once
//! stored, the pack reads as the whole one does.

use std::ops::Range;

use packfs_core::pack::layout::TRAILER_LEN;
use packfs_core::pack::{Compression, Layout, PackFs, PackOptions, Partial, ReadOptions};
use packfs_core::{Error, FileSystem, FileType, MemFs, resolve};
use proptest::prelude::*;

use crate::common::{Rng, assert_same_tree, pack_bytes, random_tree, walk, write_file};

fn layout(bytes: &[u8]) -> Layout {
    Layout::from_trailer(&bytes[bytes.len() - TRAILER_LEN as usize..]).unwrap()
}

/// The pieces an open needs, and `extra` ranges besides.
fn pieces(bytes: &[u8], extra: &[(u64, u64)]) -> Vec<(u64, Vec<u8>)> {
    let required = layout(bytes).required();
    required.iter().chain(extra).map(|&(s, e)| (s, bytes[s as usize..e as usize].to_vec())).collect()
}

fn open(bytes: &[u8], extra: &[(u64, u64)], options: ReadOptions) -> PackFs<Partial> {
    PackFs::open_partial(bytes.len() as u64, pieces(bytes, extra), options).unwrap()
}

fn store(pack: &PackFs<Partial>, bytes: &[u8], ranges: &[Range<u64>]) -> u64 {
    ranges.iter().map(|r| pack.store(r.start, &bytes[r.start as usize..r.end as usize]).unwrap()).sum()
}

fn read(fs: &dyn FileSystem, path: &str) -> Result<Vec<u8>, Error> {
    let ino = resolve::resolve(fs, fs.root(), path, true)?;
    let mut buf = vec![0; fs.metadata(ino)?.size as usize];
    let n = fs.read_at(ino, 0, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

fn sample() -> Vec<u8> {
    pack_bytes(&sample_tree())
}

/// [`sample`] as version 2, in zstd chunks of 4 KiB.
fn sample_v2() -> Vec<u8> {
    let mut out = Vec::new();
    PackOptions::new().compress(Some(Compression::zstd(3))).chunk_size(4096).write(&sample_tree(), &mut out).unwrap();
    out
}

fn sample_tree() -> MemFs {
    let fs = MemFs::new();
    for (name, body) in [("a", &b"alpha"[..]), ("b", b""), ("c", &[7u8; 10_000][..]), ("d", b"delta")] {
        write_file(&fs, fs.root(), name, body);
    }
    let far = fs.mkdir(fs.root(), "far", 0o755).unwrap();
    write_file(&fs, far, "e", &[9u8; 20_000]);
    write_file(&fs, far, "f", b"foxtrot");
    fs
}

#[test]
fn pack_partial_reads_wait_for_their_blob_and_nothing_else() {
    let bytes = sample();
    let pack = open(&bytes, &[], ReadOptions::new().verify_on_read(true));
    assert!(!pack.is_complete());
    // Metadata, listings and links need no content; nor does an empty file.
    assert_eq!(pack.read_dir(pack.root(), None, 10).unwrap().len(), 5);
    assert_eq!(read(&pack, "b").unwrap(), b"");
    assert!(!pack.has_wanted());
    assert_eq!(read(&pack, "c"), Err(Error::NotLoaded));
    assert_eq!(read(&pack, "a"), Err(Error::NotLoaded));
    let c = pack.lookup(pack.root(), "c").unwrap();
    assert_eq!(pack.file_bytes(c), Err(Error::NotLoaded));
    assert!(pack.has_wanted());
    let wants = pack.take_wanted();
    assert!(!pack.has_wanted());
    // "alpha" and the 10,000 sevens lie close together: one range.
    assert_eq!(wants.len(), 1, "{wants:?}");
    assert_eq!(store(&pack, &bytes, &wants), 2);
    assert_eq!(read(&pack, "a").unwrap(), b"alpha");
    assert_eq!(read(&pack, "c").unwrap(), vec![7u8; 10_000]);
    assert_eq!(read(&pack, "d"), Err(Error::NotLoaded));
    assert_eq!(pack.verify(), Err(Error::NotLoaded));
    let missing = pack.missing();
    assert!(!missing.is_empty());
    store(&pack, &bytes, &missing);
    assert!(pack.is_complete());
    assert!(pack.missing().is_empty());
    assert!(pack.verify().unwrap().is_ok());
    assert_same_tree(&PackFs::open(&bytes[..]).unwrap(), &pack);
}

/// An empty blob has nothing to fetch: it never becomes a range (an empty
/// HTTP range is invalid), and the pack completes without it.
#[test]
fn pack_partial_empty_blobs_are_here_from_the_start() {
    let fs = MemFs::new();
    for (name, body) in [("big", &[7u8; 10_000][..]), ("z", b"")] {
        write_file(&fs, fs.root(), name, body);
    }
    let bytes = pack_bytes(&fs);
    let pack = open(&bytes, &[], ReadOptions::new());
    let missing = pack.missing();
    assert_eq!(missing.len(), 1, "{missing:?}");
    assert!(missing.iter().all(|w| w.end > w.start));
    assert_eq!(store(&pack, &bytes, &missing), 1);
    assert!(pack.is_complete());
    // Bytes fetched again (a merged range, or a changed pack) do not
    // overwrite blobs already here.
    assert_eq!(pack.store(missing[0].start, &vec![0; (missing[0].end - missing[0].start) as usize]), Ok(0));
    assert_eq!(read(&pack, "big").unwrap(), vec![7u8; 10_000]);
}

/// Blobs inside the pieces fetched before opening are here; pieces may
/// overlap and come in any order.
#[test]
fn pack_partial_pieces_given_at_open_count() {
    let bytes = sample();
    let geo = layout(&bytes);
    let all = pieces(&bytes, &[(geo.data_offset, geo.data_offset + geo.data_len)]);
    let pack = PackFs::open_partial(bytes.len() as u64, all.into_iter().rev().collect(), ReadOptions::new()).unwrap();
    assert!(pack.is_complete());
    assert_eq!(read(&pack, "far/e").unwrap(), vec![9u8; 20_000]);

    // Overlapping pieces: the tail of the data and the index region both.
    let half = geo.data_offset + geo.data_len / 2;
    let pack = open(&bytes, &[(half, geo.index_offset + 8), (0, 200)], ReadOptions::new());
    assert!(!pack.is_complete());
    assert_eq!(read(&pack, "far/f").unwrap(), b"foxtrot");
    assert!(!pack.has_wanted());
    assert_eq!(read(&pack, "a").unwrap(), b"alpha", "inside the first 200 bytes");

    // The whole pack as one piece.
    let pack = PackFs::open_partial(bytes.len() as u64, vec![(0, bytes.clone())], ReadOptions::new()).unwrap();
    assert!(pack.is_complete() && pack.missing().is_empty());
}

#[test]
fn pack_partial_refuses_what_does_not_fit() {
    let bytes = sample();
    let len = bytes.len() as u64;
    // Not enough to open: the index region is missing.
    let head = vec![(0, bytes[..64].to_vec())];
    assert_eq!(PackFs::open_partial(len, head, ReadOptions::new()).err(), Some(Error::NotLoaded));
    let tail = vec![(len - 128, bytes[bytes.len() - 128..].to_vec())];
    assert_eq!(PackFs::open_partial(len, tail, ReadOptions::new()).err(), Some(Error::NotLoaded));
    // A piece past the end.
    let mut past = pieces(&bytes, &[]);
    past.push((len - 4, vec![0; 8]));
    assert_eq!(PackFs::open_partial(len, past, ReadOptions::new()).err(), Some(Error::Invalid));
    // The pack's length is the size it was opened with: its trailer is not
    // where that size puts it, or says another length.
    assert_eq!(PackFs::open_partial(len + 8, pieces(&bytes, &[]), ReadOptions::new()).err(), Some(Error::NotLoaded));
    let mut moved = pieces(&bytes, &[]);
    moved.push((len - 120, bytes[bytes.len() - 128..].to_vec()));
    assert!(matches!(PackFs::open_partial(len + 8, moved, ReadOptions::new()), Err(Error::Corrupt(_))));

    let pack = open(&bytes, &[], ReadOptions::new());
    assert_eq!(pack.store(len - 4, &[0; 8]), Err(Error::Invalid));
    assert_eq!(pack.store(u64::MAX, &[0; 8]), Err(Error::Invalid));
    // Bytes that cover no whole blob (every blob here is 5 bytes or more)
    // store nothing.
    let at = pack.missing()[0].start as usize + 1;
    assert_eq!(pack.store(at as u64, &bytes[at..at + 3]), Ok(0));
    assert!(!pack.is_complete());
}

/// Extents are checked when they are stored: bytes that do not match are
/// `Corrupt` and never kept, so the extent stays wanted and the right
/// bytes can still come.
#[test]
fn pack_partial_refuses_stored_bytes_that_fail_their_checksum() {
    for v2 in [false, true] {
        let bytes = if v2 { sample_v2() } else { sample() };
        let pack = open(&bytes, &[], ReadOptions::new());
        assert_eq!(read(&pack, "d"), Err(Error::NotLoaded));
        let wants = pack.take_wanted();
        let w = &wants[0];
        let mut wrong = bytes[w.start as usize..w.end as usize].to_vec();
        let last = wrong.len() - 1;
        wrong[last] ^= 1;
        assert!(matches!(pack.store(w.start, &wrong), Err(Error::Corrupt(_))));
        assert_eq!(read(&pack, "d"), Err(Error::NotLoaded));
        assert!(pack.store(w.start, &bytes[w.start as usize..w.end as usize]).unwrap() >= 1);
        assert!(read(&pack, "d").is_ok());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random trees, random pieces held at open, random reads: each read
    /// either gives the whole pack's answer or is `NotLoaded` with its blob
    /// wanted; storing what was wanted makes it answer. At the end, the
    /// partial pack and the whole one are the same tree.
    #[test]
    fn pack_partial_answers_as_the_whole_pack(seed in any::<u64>(), extra in 0usize..4, v2 in any::<bool>()) {
        let tree = random_tree(seed, 60);
        let bytes = if v2 {
            let mut out = Vec::new();
            PackOptions::new().compress(Some(Compression::zstd(3))).chunk_size(4096).write(&tree, &mut out).unwrap();
            out
        } else {
            pack_bytes(&tree)
        };
        let whole = PackFs::open(&bytes[..]).unwrap();
        let mut rng = Rng::new(seed);
        let len = bytes.len() as u64;
        let extra: Vec<(u64, u64)> = (0..extra)
            .map(|_| {
                let s = rng.below(len);
                (s, (s + rng.below(20_000)).min(len))
            })
            .collect();
        let pack = open(&bytes, &extra, ReadOptions::new().verify_on_read(rng.chance(50)));
        let files: Vec<(String, u64)> = walk(&whole)
            .into_iter()
            .filter(|(_, ino)| whole.metadata(*ino).unwrap().kind == FileType::File)
            .collect();
        for _ in 0..files.len() * 2 {
            if files.is_empty() {
                break;
            }
            let (path, ino) = &files[rng.below(files.len() as u64) as usize];
            let expected = read(&whole, path).unwrap();
            match read(&pack, path) {
                Ok(got) => prop_assert_eq!(got, expected),
                Err(Error::NotLoaded) => {
                    // One round brings every extent the read needs.
                    prop_assert!(pack.has_wanted());
                    let wants = pack.take_wanted();
                    prop_assert!(!wants.is_empty());
                    prop_assert!(store(&pack, &bytes, &wants) >= 1);
                    prop_assert_eq!(read(&pack, path).unwrap(), expected);
                    prop_assert_eq!(pack.file_bytes(*ino).unwrap(), whole.file_bytes(*ino).unwrap());
                }
                Err(e) => prop_assert!(false, "{path}: {e:?}"),
            }
        }
        store(&pack, &bytes, &pack.missing());
        prop_assert!(pack.is_complete());
        assert_same_tree(&whole, &pack);
        prop_assert!(pack.verify().unwrap().is_ok());
    }
}

/// A lazy reader fetches the index region whole to open a pack: one that a
/// trailer claims is over `MAX_FETCHED_INDEX` is refused before anything
/// is fetched.
#[test]
fn pack_partial_index_regions_to_fetch_are_bounded() {
    use packfs_core::pack::layout::MAX_FETCHED_INDEX;
    let bytes = sample();
    let layout = Layout::from_trailer(&bytes[bytes.len() - 128..]).unwrap();
    assert_eq!(layout.required_to_fetch(), Ok(layout.required()));
    let huge = Layout { pack_len: MAX_FETCHED_INDEX + 4096, index_offset: 64, ..layout };
    assert_eq!(huge.required_to_fetch(), Err(MAX_FETCHED_INDEX + 4096 - 64));
    let edge = Layout { pack_len: MAX_FETCHED_INDEX + 64, index_offset: 64, ..layout };
    assert!(edge.required_to_fetch().is_ok());
}
