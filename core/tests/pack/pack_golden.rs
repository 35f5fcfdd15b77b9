//! Format stability: `core/tests/data/golden-v1.pack` was written by the
//! version-1 writer from `golden_tree()`. The reader must read it and the
//! writer must reproduce it byte for byte; a change to either is a format
//! change (a new version, and a new golden pack beside this one).
//!
//! A second, independent reader, written from `docs/pack-format.md` alone,
//! decodes the same pack, so the spec and the code cannot drift apart; so
//! for `golden-v2.pack` (the compressed version, §17), and for the two
//! packs with digest tables (§18), `golden-v1-digests.pack` and
//! `golden-v2-digests.pack`: the same trees, written as `packfs pack` now
//! writes them; and for `golden-v2-dictionary.pack`, a tree of small files
//! with a zstd dictionary (§19).
//!
//! To regenerate after a deliberate format change:
//! `PACKFS_BLESS=1 cargo test -p packfs-core pack_golden`.

use std::collections::BTreeMap;

use packfs_core::pack::{PackFs, PackOptions};
use packfs_core::{FileSystem, MemFs, SetTime, Timestamp};

use crate::common::*;

const GOLDEN: &[u8] = include_bytes!("../data/golden-v1.pack");

fn golden_tree() -> MemFs {
    let fs = fixed_fs();
    let t = |s| SetTime::At(Timestamp::new(s, 123_456_789));
    let docs = fs.mkdir(fs.root(), "docs", 0o755).unwrap();
    let readme = write_file(&fs, docs, "README", b"PackFS golden pack, version 1.\n");
    fs.set_mode(readme, 0o644).unwrap();
    fs.set_times(readme, SetTime::Keep, t(1_600_000_000)).unwrap();
    let copy = write_file(&fs, fs.root(), "copy", b"PackFS golden pack, version 1.\n");
    fs.set_times(copy, SetTime::Keep, t(1_600_000_001)).unwrap();
    let empty = write_file(&fs, fs.root(), "empty", b"");
    fs.set_times(empty, SetTime::Keep, t(2)).unwrap();
    let run = write_file(&fs, fs.root(), "run.sh", b"#!/bin/sh\necho hi\n");
    fs.set_mode(run, 0o755).unwrap();
    fs.set_times(run, SetTime::Keep, t(3)).unwrap();
    fs.link(run, docs, "run-link").unwrap();
    let link = fs.symlink(fs.root(), "latest", "docs/README").unwrap();
    fs.set_times(link, SetTime::Keep, t(4)).unwrap();
    fs.set_times(docs, SetTime::Keep, t(5)).unwrap();
    fs.set_times(fs.root(), SetTime::Keep, t(6)).unwrap();
    fs
}

fn golden_bytes() -> Vec<u8> {
    let mut out = Vec::new();
    PackOptions::new().align(16).digests(false).write(&golden_tree().snapshot(), &mut out).unwrap();
    out
}

#[test]
fn pack_golden_v1_writer_reproduces_it() {
    let bytes = golden_bytes();
    if std::env::var_os("PACKFS_BLESS").is_some() {
        std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/golden-v1.pack"), &bytes).unwrap();
    }
    assert!(bytes == GOLDEN, "the writer no longer writes the golden pack: the format changed");
}

#[test]
fn pack_golden_v1_reader_reads_it() {
    let p = PackFs::open(GOLDEN).unwrap();
    assert_same_tree(&golden_tree(), &p);
    assert!(p.verify().unwrap().is_ok());
    let info = p.info();
    assert_eq!((info.version, info.align, info.inodes, info.dirents, info.blobs), (1, 16, 7, 7, 3));
    let run = p.lookup(1, "run.sh").unwrap();
    let m = p.metadata(run).unwrap();
    assert_eq!((m.mode, m.nlink, m.mtime), (0o755, 2, Timestamp::new(3, 123_456_789)));
    assert_eq!(p.readlink(p.lookup(1, "latest").unwrap()).unwrap(), "docs/README");
}

// ---- a second reader, from the spec alone ------------------------------------

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[test]
fn pack_golden_v1_matches_the_spec() {
    let b = GOLDEN;
    let xxh = xxhash_rust::xxh3::xxh3_64;
    // Header.
    assert_eq!(&b[0..8], b"\x89PACKFS\n");
    assert_eq!(u32_at(b, 8), 1);
    assert_eq!(u64_at(b, 56), xxh(&b[..56]));
    let align = 1u64 << u32_at(b, 20);
    // Trailer.
    let t = b.len() - 128;
    assert_eq!(&b[t..t + 8], b"\x89PACKEND");
    assert_eq!(u64_at(b, t + 120), xxh(&b[t..t + 120]));
    assert_eq!(u64_at(b, t + 16), b.len() as u64);
    let index = u64_at(b, t + 40) as usize;
    assert_eq!(u64_at(b, t + 48), xxh(&b[index..t]));
    let field = |i: usize| u64_at(b, t + 56 + 8 * i) as usize;
    let (inodes, n_inodes, dirents, n_dirents, blobs, n_blobs, strings) =
        (field(0), field(1), field(2), field(3), field(4), field(5), field(6));
    let string = |off: u64, len: usize| std::str::from_utf8(&b[strings + off as usize..][..len]).unwrap();
    // Walk every path and collect (path -> (kind, mode, mtime, nlink, content or target)).
    let mut seen = BTreeMap::new();
    let mut stack = vec![(0usize, String::new())];
    while let Some((dir, path)) = stack.pop() {
        let r = inodes + 48 * dir;
        assert_eq!(b[r], 2);
        let (first, count) = (u64_at(b, r + 32) as usize, u32_at(b, r + 40) as usize);
        for j in first..first + count {
            let d = dirents + 16 * j;
            let name = string(u64_at(b, d), u16_at(b, d + 8).into());
            let ino = u32_at(b, d + 12) as usize;
            let r = inodes + 48 * ino;
            let p = if path.is_empty() { name.to_string() } else { format!("{path}/{name}") };
            let size = u64_at(b, r + 24);
            let body = match b[r] {
                1 => {
                    let k = blobs + 24 * u64_at(b, r + 32) as usize;
                    let (off, len) = (u64_at(b, k) as usize, u64_at(b, k + 8) as usize);
                    assert_eq!(off as u64 % align, 0);
                    assert_eq!(len as u64, size);
                    assert_eq!(u64_at(b, k + 16), xxh(&b[off..off + len]));
                    String::from_utf8(b[off..off + len].to_vec()).unwrap()
                }
                2 => {
                    assert_eq!(u32_at(b, r + 44) as usize, dir);
                    stack.push((ino, p.clone()));
                    String::new()
                }
                3 => string(u64_at(b, r + 32), size as usize).to_string(),
                k => panic!("kind {k}"),
            };
            let mtime = (u64_at(b, r + 8), u32_at(b, r + 16));
            seen.insert(p, (b[r], u32_at(b, r + 4), mtime, u32_at(b, r + 20), body));
        }
    }
    assert_eq!((n_inodes, n_dirents, n_blobs), (7, 7, 3));
    let m = 123_456_789;
    let readme = "PackFS golden pack, version 1.\n".to_string();
    let script = "#!/bin/sh\necho hi\n".to_string();
    let want = BTreeMap::from([
        ("copy".to_string(), (1, 0o644, (1_600_000_001, m), 1, readme.clone())),
        ("docs".to_string(), (2, 0o755, (5, m), 2, String::new())),
        ("docs/README".to_string(), (1, 0o644, (1_600_000_000, m), 1, readme)),
        ("docs/run-link".to_string(), (1, 0o755, (3, m), 2, script.clone())),
        ("empty".to_string(), (1, 0o644, (2, m), 1, String::new())),
        ("latest".to_string(), (3, 0o777, (4, m), 1, "docs/README".to_string())),
        ("run.sh".to_string(), (1, 0o755, (3, m), 2, script)),
    ]);
    assert_eq!(seen, want);
}

// ---- version 2 ----------------------------------------------------------------

const GOLDEN_V2: &[u8] = include_bytes!("../data/golden-v2.pack");

/// The golden tree as a version 2 pack: zstd chunks of 4 KiB, so that the
/// 5,000-byte file spans two, and the compressed index.
#[cfg(feature = "zstd-c")]
fn golden_v2_bytes(digests: bool) -> Vec<u8> {
    let fs = golden_tree();
    let big = write_file(&fs, fs.root(), "big.txt", &"golden ".repeat(5000 / 7 + 1).as_bytes()[..5000]);
    fs.set_times(big, SetTime::Keep, SetTime::At(Timestamp::new(7, 0))).unwrap();
    fs.set_times(fs.root(), SetTime::Keep, SetTime::At(Timestamp::new(6, 123_456_789))).unwrap();
    let mut out = Vec::new();
    let zstd = packfs_core::pack::Compression::zstd(3);
    let options = PackOptions::new().align(16).compress(Some(zstd)).chunk_size(4096).digests(digests);
    options.write(&fs.snapshot(), &mut out).unwrap();
    out
}

/// The bytes depend on the zstd encoder: the C library's (feature `zstd-c`,
/// which the workspace's test run enables) wrote the golden pack.
#[cfg(feature = "zstd-c")]
#[test]
fn pack_golden_v2_writer_reproduces_it() {
    let bytes = golden_v2_bytes(false);
    if std::env::var_os("PACKFS_BLESS").is_some() {
        std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/golden-v2.pack"), &bytes).unwrap();
    }
    assert!(bytes == GOLDEN_V2, "the writer no longer writes the golden v2 pack: the format changed");
}

#[test]
fn pack_golden_v2_reader_reads_it() {
    let p = PackFs::open(GOLDEN_V2).unwrap();
    let info = p.info();
    assert_eq!((info.version, info.chunk_size, info.inodes, info.blobs), (2, 4096, 8, 4));
    assert!(p.verify().unwrap().is_ok());
    let big = p.lookup(1, "big.txt").unwrap();
    assert_eq!(p.extents_of(big).map(|r| r.end - r.start), Some(2), "two chunks");
    let mut buf = [0u8; 14];
    assert_eq!(p.read_at(big, 4090, &mut buf), Ok(14));
    assert_eq!(&buf, &"golden ".repeat(800).as_bytes()[4090..4104]);
    let readme = p.lookup(p.lookup(1, "docs").unwrap(), "README").unwrap();
    assert_eq!(*p.file_bytes(readme).unwrap(), *b"PackFS golden pack, version 1.\n");
    // The same tree as written, in both versions.
    let v1 = PackFs::open(GOLDEN).unwrap();
    let v1_tree = walk(&v1).into_iter().map(|(path, _)| path).collect::<Vec<_>>();
    let v2_tree = walk(&p).into_iter().map(|(path, _)| path).filter(|path| path != "big.txt").collect::<Vec<_>>();
    assert_eq!(v1_tree, v2_tree);
}

/// The version 2 golden pack decoded from `docs/pack-format.md` §17 alone
/// (a second reader: the index frame, the chunk table, chunks decoded one
/// by one), giving every file's content.
#[test]
fn pack_golden_v2_matches_the_spec() {
    let b = GOLDEN_V2;
    let xxh = xxhash_rust::xxh3::xxh3_64;
    assert_eq!(u32_at(b, 8), 2);
    let chunk_size = 1usize << u32_at(b, 24);
    let t = b.len() - 128;
    let index_offset = u64_at(b, t + 40) as usize;
    let index_len = u32_at(b, t + 12) as usize;
    assert!(index_len > 0, "the golden index is compressed");
    assert_eq!(u64_at(b, t + 48), xxh(&b[index_offset..t]));
    // The decoded index region: one zstd frame, then zero padding.
    let mut region = vec![0u8; index_len];
    assert!(decode_padded(&b[index_offset..t], &mut region), "the index frame decodes to index_len bytes");
    let at = |abs: usize| abs - index_offset; // trailer offsets into the region
    let field = |i: usize| u64_at(b, t + 56 + 8 * i) as usize;
    let (inodes, dirents, blobs, strings) = (at(field(0)), at(field(2)), at(field(4)), at(field(6)));
    let r = &region[..];
    // The chunk table ends the region: records, then (count, content_len).
    let footer = r.len() - 16;
    let (count, content_len) = (u64_at(r, footer) as usize, u64_at(r, footer + 8) as usize);
    let table = footer - 32 * count;
    let mut content = Vec::new();
    for k in 0..count {
        let c = table + 32 * k;
        let (offset, stored_len, codec) = (u64_at(r, c) as usize, u32_at(r, c + 24) as usize, r[c + 28]);
        assert_eq!(u64_at(r, c + 8) as usize, content.len(), "chunks tile the content space");
        let stored = &b[offset..offset + stored_len];
        assert_eq!(u64_at(r, c + 16), xxh(stored));
        let end = if k + 1 < count { u64_at(r, c + 32 + 8) as usize } else { content_len };
        let mut chunk = vec![0u8; end - content.len()];
        assert!(chunk.len() <= chunk_size);
        match codec {
            0 => chunk.copy_from_slice(stored),
            1 => assert_eq!(ruzstd::decoding::FrameDecoder::new().decode_all(stored, &mut chunk).unwrap(), chunk.len()),
            c => panic!("codec {c}"),
        }
        content.extend_from_slice(&chunk);
    }
    assert_eq!(content.len(), content_len);
    // Files by name from the root's run: their blobs are ranges of the
    // content space.
    let name = |d: usize| {
        let (off, len) = (u64_at(r, d) as usize, u16_at(r, d + 8) as usize);
        std::str::from_utf8(&r[strings + off..strings + off + len]).unwrap().to_owned()
    };
    let (first, n) = (u64_at(r, inodes + 32) as usize, u32_at(r, inodes + 40) as usize);
    let mut files = BTreeMap::new();
    for j in first..first + n {
        let d = dirents + 16 * j;
        let i = inodes + 48 * u32_at(r, d + 12) as usize;
        if r[i] == 1 {
            let k = blobs + 24 * u64_at(r, i + 32) as usize;
            let (off, len) = (u64_at(r, k) as usize, u64_at(r, k + 8) as usize);
            assert_eq!(u64_at(r, k + 16), xxh(&content[off..off + len]), "the content checksum");
            files.insert(name(d), String::from_utf8(content[off..off + len].to_vec()).unwrap());
        }
    }
    let big: String = "golden ".repeat(5000 / 7 + 1)[..5000].to_owned();
    assert_eq!(files.get("big.txt"), Some(&big));
    assert_eq!(files.get("copy").map(String::as_str), Some("PackFS golden pack, version 1.\n"));
    assert_eq!(files.get("empty").map(String::as_str), Some(""));
    assert_eq!(files.get("run.sh").map(String::as_str), Some("#!/bin/sh\necho hi\n"));
}

/// Decodes a zstd frame followed by 0 to 7 zero bytes into exactly `out`:
/// the frame is the longest prefix, ending before some of the trailing
/// zeros, that decodes so (a frame may itself end in a zero byte).
fn decode_padded(stored: &[u8], out: &mut [u8]) -> bool {
    let zeros = stored.iter().rev().take(7).take_while(|&&b| b == 0).count();
    (0..=zeros).any(|pad| {
        let frame = &stored[..stored.len() - pad];
        ruzstd::decoding::FrameDecoder::new().decode_all(frame, out).is_ok_and(|n| n == out.len())
    })
}

// ---- digests (§18) --------------------------------------------------------------

const GOLDEN_V1_DIGESTS: &[u8] = include_bytes!("../data/golden-v1-digests.pack");
const GOLDEN_V2_DIGESTS: &[u8] = include_bytes!("../data/golden-v2-digests.pack");

#[test]
fn pack_golden_digests_writer_reproduces_them() {
    let mut v1 = Vec::new();
    PackOptions::new().align(16).write(&golden_tree().snapshot(), &mut v1).unwrap();
    #[allow(unused_mut, reason = "the version 2 pack needs the C encoder")]
    let mut packs = vec![("golden-v1-digests.pack", v1, GOLDEN_V1_DIGESTS)];
    #[cfg(feature = "zstd-c")]
    packs.push(("golden-v2-digests.pack", golden_v2_bytes(true), GOLDEN_V2_DIGESTS));
    for (name, bytes, golden) in packs {
        if std::env::var_os("PACKFS_BLESS").is_some() {
            std::fs::write(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR")), &bytes).unwrap();
        }
        assert!(bytes == golden, "the writer no longer writes {name}: the format changed");
    }
}

/// The digest table of `count` extents in the (decoded) index `region`,
/// whose string pool ends at `strings_end` and whose next structure starts
/// at `limit`, as §18 places it; and each extent's stored bytes' BLAKE3
/// checked against it.
fn spec_digests(region: &[u8], strings_end: usize, limit: usize, extents: &[&[u8]]) {
    let start = strings_end.next_multiple_of(8);
    assert!(start + 32 * extents.len() <= limit, "the table fits before what follows it");
    for (k, stored) in extents.iter().enumerate() {
        assert_eq!(&region[start + 32 * k..][..32], blake3::hash(stored).as_bytes(), "extent {k}");
    }
}

/// The pack digest as §18 defines it, in text form.
fn spec_pack_digest(b: &[u8]) -> String {
    let index = u64_at(b, b.len() - 128 + 40) as usize;
    let mut h = blake3::Hasher::new();
    h.update(&b[..64]).update(&b[index..]);
    format!("blake3:{}", h.finalize().to_hex())
}

#[test]
fn pack_golden_digests_match_the_spec() {
    // Version 1: the table after the string pool, to the trailer; one
    // digest per blob.
    let b = GOLDEN_V1_DIGESTS;
    assert_eq!((u32_at(b, 8), u32_at(b, 16)), (1, 1), "version 1, compat flag DIGESTS");
    let t = b.len() - 128;
    let index = u64_at(b, t + 40) as usize;
    let field = |i: usize| u64_at(b, t + 56 + 8 * i) as usize;
    let (blobs, n_blobs, strings, strings_len) = (field(4), field(5), field(6), field(7));
    let extents: Vec<&[u8]> = (0..n_blobs)
        .map(|k| {
            let r = blobs + 24 * k;
            &b[u64_at(b, r) as usize..][..u64_at(b, r + 8) as usize]
        })
        .collect();
    spec_digests(&b[index..t], strings + strings_len - index, t - index, &extents);
    let pack = PackFs::open(b).unwrap();
    assert_eq!(pack.digest().map(|d| d.to_string()), Some(spec_pack_digest(b)));
    assert_same_tree(&golden_tree(), &pack);

    // Version 2: the table between the string pool and the chunk table;
    // one digest per chunk, of its stored bytes.
    let b = GOLDEN_V2_DIGESTS;
    assert_eq!((u32_at(b, 8), u32_at(b, 16)), (2, 1), "version 2, compat flag DIGESTS");
    let t = b.len() - 128;
    let index = u64_at(b, t + 40) as usize;
    let mut region = vec![0u8; u32_at(b, t + 12) as usize];
    assert!(decode_padded(&b[index..t], &mut region));
    let footer = region.len() - 16;
    let count = u64_at(&region, footer) as usize;
    let table = footer - 32 * count;
    let extents: Vec<&[u8]> = (0..count)
        .map(|k| {
            let c = table + 32 * k;
            &b[u64_at(&region, c) as usize..][..u32_at(&region, c + 24) as usize]
        })
        .collect();
    let strings_end = u64_at(b, t + 104) as usize + u64_at(b, t + 112) as usize - index;
    spec_digests(&region, strings_end, table, &extents);
    let pack = PackFs::open(b).unwrap();
    assert_eq!(pack.digest().map(|d| d.to_string()), Some(spec_pack_digest(b)));
    // Readers that predate digests read the same tree: the table lies
    // where they ignore bytes.
    assert_eq!(walk(&pack), walk(&PackFs::open(GOLDEN_V2).unwrap()));
    assert_eq!(PackFs::open(GOLDEN_V2).unwrap().digest(), None, "no table, no digest");
}

// ---- the zstd dictionary (§19) ----------------------------------------------------

const GOLDEN_V2_DICTIONARY: &[u8] = include_bytes!("../data/golden-v2-dictionary.pack");

/// 100 small source-like files of 2,000 to 4,000 bytes in two directories
/// (enough for a dictionary), and one of 40,000: more than two chunks.
fn dictionary_tree() -> MemFs {
    let fs = fixed_fs();
    let mut rng = Rng::new(27);
    let words = ["def ", "return ", "self", "import ", "class ", "None", " = ", "(", "):\n", "    ", "\n", "x"];
    let mut text = |n: usize| {
        let mut out = Vec::new();
        while out.len() < n {
            out.extend_from_slice(words[rng.below(words.len() as u64) as usize].as_bytes());
        }
        out.truncate(n);
        out
    };
    let dirs = [fs.mkdir(fs.root(), "lib", 0o755).unwrap(), fs.mkdir(fs.root(), "pkg", 0o755).unwrap()];
    for i in 0..100 {
        let n = 2000 + (i * 20);
        let f = write_file(&fs, dirs[i % 2], &format!("m{i:03}.py"), &text(n));
        fs.set_times(f, SetTime::Keep, SetTime::At(Timestamp::new(i as u64, 0))).unwrap();
    }
    let f = write_file(&fs, fs.root(), "big.py", &text(40_000));
    fs.set_times(f, SetTime::Keep, SetTime::At(Timestamp::new(7, 0))).unwrap();
    for d in dirs {
        fs.set_times(d, SetTime::Keep, SetTime::At(Timestamp::new(8, 0))).unwrap();
    }
    fs.set_times(fs.root(), SetTime::Keep, SetTime::At(Timestamp::new(9, 0))).unwrap();
    fs
}

/// The dictionary golden pack: zstd:3, 16 KiB chunks, a digest table.
#[cfg(feature = "zstd-c")]
#[test]
fn pack_golden_dictionary_writer_reproduces_it() {
    let zstd = packfs_core::pack::Compression::zstd(3);
    let mut bytes = Vec::new();
    PackOptions::new()
        .align(16)
        .compress(Some(zstd))
        .chunk_size(16384)
        .write(&dictionary_tree().snapshot(), &mut bytes)
        .unwrap();
    if std::env::var_os("PACKFS_BLESS").is_some() {
        std::fs::write(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/golden-v2-dictionary.pack"), &bytes).unwrap();
    }
    assert!(
        bytes == GOLDEN_V2_DICTIONARY,
        "the writer no longer writes the dictionary golden pack: the format changed"
    );
}

#[test]
fn pack_golden_dictionary_reader_reads_it() {
    let p = PackFs::open(GOLDEN_V2_DICTIONARY).unwrap();
    assert!(p.info().dictionary > 0);
    assert!(p.verify().unwrap().is_ok());
    assert_same_tree(&dictionary_tree(), &p);
}

/// The dictionary golden pack decoded from §17–§19 alone, with the C
/// library's decoder: the flag and `dict_len` in the header, the
/// dictionary ending where the chunk table starts, the chunks of codec 3
/// (the small files') decoded with it and those of codec 1 (the large
/// file's) without, and the small files never straddling two chunks.
#[cfg(feature = "zstd-c")]
#[test]
fn pack_golden_dictionary_matches_the_spec() {
    let b = GOLDEN_V2_DICTIONARY;
    assert_eq!((u32_at(b, 8), u32_at(b, 12), u32_at(b, 16)), (2, 2, 1), "version 2, DICTIONARY, DIGESTS");
    let dict_len = u32_at(b, 28) as usize;
    let t = b.len() - 128;
    let index = u64_at(b, t + 40) as usize;
    let mut region = vec![0u8; u32_at(b, t + 12) as usize];
    assert!(decode_padded(&b[index..t], &mut region));
    let r = &region[..];
    let footer = r.len() - 16;
    let (count, content_len) = (u64_at(r, footer) as usize, u64_at(r, footer + 8) as usize);
    let table = footer - 32 * count;
    let dict = &r[table - dict_len..table];
    assert_eq!(&dict[..4], &[0x37, 0xa4, 0x30, 0xec], "zstd's dictionary magic");
    // The digest table ends at or before the dictionary's start.
    let strings_end = u64_at(b, t + 104) as usize + u64_at(b, t + 112) as usize - index;
    let extents: Vec<&[u8]> = (0..count)
        .map(|k| &b[u64_at(r, table + 32 * k) as usize..][..u32_at(r, table + 32 * k + 24) as usize])
        .collect();
    spec_digests(r, strings_end, table - dict_len, &extents);
    let mut with_dict = zstd::bulk::Decompressor::with_dictionary(dict).unwrap();
    let mut plain = zstd::bulk::Decompressor::new().unwrap();
    let mut codecs = std::collections::BTreeSet::new();
    let mut content = Vec::new();
    let mut starts = Vec::new();
    for (k, stored) in extents.iter().enumerate() {
        let c = table + 32 * k;
        let end = if k + 1 < count { u64_at(r, c + 32 + 8) as usize } else { content_len };
        starts.push(content.len());
        let mut chunk = vec![0u8; end - content.len()];
        match r[c + 28] {
            0 => chunk.copy_from_slice(stored),
            1 => assert_eq!(plain.decompress_to_buffer(stored, &mut chunk).unwrap(), chunk.len()),
            3 => assert_eq!(with_dict.decompress_to_buffer(stored, &mut chunk).unwrap(), chunk.len()),
            c => panic!("codec {c}"),
        }
        codecs.insert(r[c + 28]);
        content.extend_from_slice(&chunk);
    }
    starts.push(content_len);
    assert!(codecs.contains(&1) && codecs.contains(&3), "both kinds of zstd chunk: {codecs:?}");
    // Every blob's bytes are its file's; a small one lies in one chunk.
    let blobs = u64_at(b, t + 88) as usize - index;
    let n_blobs = u64_at(b, t + 96) as usize;
    let xxh = xxhash_rust::xxh3::xxh3_64;
    for k in 0..n_blobs {
        let (off, len) = (u64_at(r, blobs + 24 * k) as usize, u64_at(r, blobs + 24 * k + 8) as usize);
        assert_eq!(u64_at(r, blobs + 24 * k + 16), xxh(&content[off..off + len]), "blob {k}'s checksum");
        let chunk = starts.partition_point(|&s| s <= off) - 1;
        if len < 16384 {
            assert!(off + len <= starts[chunk + 1], "blob {k} straddles chunks");
        }
    }
}
