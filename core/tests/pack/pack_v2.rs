//! Version 2: compressed chunks. Round trips against the tree packed,
//! reads across chunk edges against the bytes written, raw storage of what
//! does not compress, and hostile chunk tables.

use packfs_core::pack::{Codec, Compression, CorruptKind, PackFs, PackOptions, ReadOptions, Structure, fuzzing};
use packfs_core::{Error, FileSystem, MemFs};
use proptest::prelude::*;

use crate::common::{Rng, assert_same_tree, corrupt_kind, open_edited, random_tree, write_file};

fn v2(fs: &dyn FileSystem, c: Compression, chunk: u64) -> Vec<u8> {
    let mut out = Vec::new();
    PackOptions::new().compress(Some(c)).chunk_size(chunk).write(fs, &mut out).unwrap();
    out
}

/// Compressible text that does not repeat within a chunk.
fn text(n: usize, seed: u64) -> Vec<u8> {
    let words = ["alpha ", "beta ", "gamma ", "delta\n", "epsilon ", "zeta ", "eta, ", "theta "];
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        out.extend_from_slice(words[rng.below(words.len() as u64) as usize].as_bytes());
    }
    out.truncate(n);
    out
}

fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.next() as u8).collect()
}

#[test]
fn pack_v2_round_trips_with_both_codecs() {
    for seed in 0..4 {
        let fs = random_tree(seed, 80);
        for c in [Compression::zstd(3), Compression::zstd(19), Compression::lz4()] {
            for chunk in [4096, 128 * 1024] {
                let bytes = v2(&fs, c, chunk);
                assert_eq!(bytes, v2(&fs, c, chunk), "reproducible");
                let pack = PackFs::open(&bytes[..]).unwrap();
                assert_eq!((pack.info().version, pack.info().chunk_size), (2, chunk));
                assert_same_tree(&fs, &pack);
                assert!(pack.verify().unwrap().is_ok(), "{c:?} {chunk}");
                assert!(fuzzing::exercise(&bytes));
            }
        }
    }
}

#[test]
fn pack_v2_reads_across_chunk_edges() {
    const CHUNK: u64 = 4096;
    let fs = MemFs::new();
    let big = text(5 * CHUNK as usize + 1234, 7);
    write_file(&fs, fs.root(), "small", b"a small file, sharing a chunk");
    write_file(&fs, fs.root(), "text", &big);
    let bytes = v2(&fs, Compression::zstd(3), CHUNK);
    let pack = PackFs::open(&bytes[..]).unwrap();
    let f = pack.lookup(pack.root(), "text").unwrap();
    let mut buf = vec![0u8; 3 * CHUNK as usize];
    for edge in (1..6).map(|k| k * CHUNK) {
        for offset in [edge - 1, edge, edge + 1, edge.saturating_sub(CHUNK + 1)] {
            for len in [1, 2, CHUNK as usize - 1, CHUNK as usize, CHUNK as usize + 1, 2 * CHUNK as usize + 3] {
                let n = pack.read_at(f, offset, &mut buf[..len]).unwrap();
                let want = &big[(offset as usize).min(big.len())..(offset as usize + len).min(big.len())];
                assert_eq!(&buf[..n], want, "offset {offset} len {len}");
            }
        }
    }
    assert_eq!(pack.read_at(f, big.len() as u64, &mut buf), Ok(0));
    assert_eq!(pack.read_at(f, u64::MAX, &mut buf), Ok(0));
    assert_eq!(*pack.file_bytes(f).unwrap(), big[..]);
}

/// A 4 KiB read in the middle of a large compressed file decodes the one
/// chunk that holds it (two if it straddles an edge), nothing else.
#[test]
fn pack_v2_a_small_read_decodes_only_its_chunk() {
    let fs = MemFs::new();
    let big = text(8 << 20, 3);
    write_file(&fs, fs.root(), "big", &big);
    let bytes = v2(&fs, Compression::lz4(), 128 * 1024);
    let pack = PackFs::open(&bytes[..]).unwrap();
    let f = pack.lookup(pack.root(), "big").unwrap();
    let mut buf = [0u8; 4096];
    let mid = (4 << 20) + 1000;
    assert_eq!(pack.read_at(f, mid, &mut buf), Ok(4096));
    assert_eq!(&buf[..], &big[mid as usize..mid as usize + 4096]);
    assert_eq!(pack.chunks_decoded(), 1);
    // The same chunk again comes from the cache.
    assert_eq!(pack.read_at(f, mid + 10, &mut buf), Ok(4096));
    assert_eq!(pack.chunks_decoded(), 1);
    let stats = pack.content_stats().unwrap();
    assert_eq!(stats.blob_bytes, big.len() as u64);
    assert!(stats.codecs.iter().any(|c| c.codec == Codec::Lz4 && c.stored * 2 < c.content), "{stats:?}");
}

/// A bounded cache still answers every read, decoding again what it let go.
#[test]
fn pack_v2_a_small_cache_still_reads_everything() {
    let fs = random_tree(11, 120);
    let bytes = v2(&fs, Compression::zstd(3), 4096);
    let pack = PackFs::open_with(&bytes[..], ReadOptions::new().cache_bytes(4096)).unwrap();
    assert_same_tree(&fs, &pack);
}

/// What does not compress is stored raw, aligned, and lent without a copy.
#[test]
fn pack_v2_stores_incompressible_files_raw_and_lends_them() {
    let fs = MemFs::new();
    let random = noise(300_000, 1);
    write_file(&fs, fs.root(), "random.bin", &random);
    write_file(&fs, fs.root(), "text", &text(300_000, 2));
    let mut bytes = Vec::new();
    PackOptions::new().compress(Some(Compression::zstd(3))).align(4096).write(&fs, &mut bytes).unwrap();
    let pack = PackFs::open(&bytes[..]).unwrap();
    let f = pack.lookup(pack.root(), "random.bin").unwrap();
    let lent = pack.file_bytes(f).unwrap();
    assert!(matches!(lent, std::borrow::Cow::Borrowed(_)), "a raw file is lent");
    assert_eq!(*lent, random[..]);
    assert_eq!((lent.as_ptr() as usize - bytes.as_ptr() as usize) % 4096, 0, "aligned");
    let t = pack.lookup(pack.root(), "text").unwrap();
    assert!(matches!(pack.file_bytes(t).unwrap(), std::borrow::Cow::Owned(_)), "compressed: decoded");
    let stats = pack.content_stats().unwrap();
    let raw = stats.codecs.iter().find(|c| c.codec == Codec::Raw).unwrap();
    assert!(raw.content >= random.len() as u64);
    assert!(bytes.len() < 300_000 + 300_000 / 2, "{}", bytes.len());
}

/// Chunk tables and chunks that lie: each a typed `CorruptPack`, at open
/// where the index says it, on read where the data does.
#[test]
fn pack_v2_refuses_hostile_chunks() {
    let fs = MemFs::new();
    write_file(&fs, fs.root(), "t", &text(20_000, 5));
    // The index decoded in place, to be edited.
    let good = fuzzing::plain_index(&v2(&fs, Compression::zstd(3), 4096));
    assert!(PackFs::open(&good[..]).unwrap().verify().unwrap().is_ok());
    let len = good.len();
    // The chunk footer is the 16 bytes before the 128-byte trailer; the
    // records (32 bytes each) come before it.
    let footer = len - 128 - 16;
    let count = u64::from_le_bytes(good[footer..footer + 8].try_into().unwrap()) as usize;
    assert!(count >= 2, "{count}");
    let record = |k: usize| footer - (count - k) * 32;
    let open = |edit: &dyn Fn(&mut Vec<u8>)| open_edited(&good, edit);
    let corrupt = corrupt_kind;
    let put =
        |b: &mut Vec<u8>, at: usize, v: u64, width: usize| b[at..at + width].copy_from_slice(&v.to_le_bytes()[..width]);
    // A count that does not fit, or claims the whole index.
    assert!(matches!(corrupt(open(&|b| put(b, footer, u64::MAX, 8))), CorruptKind::OutOfBounds { .. }));
    assert!(matches!(corrupt(open(&|b| put(b, footer, count as u64 + 100, 8))), CorruptKind::OutOfBounds { .. }));
    // A declared content length past what the chunks hold.
    assert!(matches!(corrupt(open(&|b| put(b, footer + 8, 1 << 40, 8))), CorruptKind::BadField { .. }));
    // An unknown codec; stored bytes outside the data section; contents
    // out of order; a chunk longer than the chunk size.
    let field = |f| move |k: CorruptKind| matches!(k, CorruptKind::BadField { of: Structure::ChunkRecord, field, .. } if field == f);
    assert!(field("codec")(corrupt(open(&|b| b[record(0) + 28] = 9))));
    assert!(matches!(corrupt(open(&|b| put(b, record(1), 1 << 50, 8))), CorruptKind::OutOfBounds { .. }));
    assert!(field("content_offset")(corrupt(open(&|b| put(b, record(1) + 8, 0, 8)))));
    assert!(field("content_offset")(corrupt(open(&|b| put(b, record(1) + 8, 4096 * 2, 8)))));
    assert!(field("stored_len")(corrupt(open(&|b| put(b, record(0) + 24, 0, 4)))));

    // A compressed index that claims to decode to far more than it could
    // (a bomb) is refused before anything is allocated for it; one whose
    // frame does not decode to its length is a decode error.
    let packed = v2(&fs, Compression::zstd(3), 4096);
    let bomb = |n: u32| {
        let mut b = packed.clone();
        let t = b.len() - 128;
        b[t + 12..t + 16].copy_from_slice(&n.to_le_bytes());
        fuzzing::reseal(&mut b);
        PackFs::open(b)
    };
    assert!(matches!(corrupt(bomb(u32::MAX)), CorruptKind::BadField { field: "index_len", .. }));
    let real = u32::from_le_bytes(packed[packed.len() - 116..packed.len() - 112].try_into().unwrap());
    assert!(real > 0, "the index is compressed");
    assert!(matches!(corrupt(bomb(real + 1)), CorruptKind::Decode { .. }));
    assert!(matches!(corrupt(bomb(real - 1)), CorruptKind::Decode { .. }));

    // Damaged stored bytes: the pack opens (the index is fine), a read of
    // the chunk is a checksum error before anything is decoded, and
    // verify names the file.
    let mut b = good.clone();
    let at = u64::from_le_bytes(b[record(1)..record(1) + 8].try_into().unwrap()) as usize;
    b[at + 3] ^= 0x40;
    let pack = PackFs::open(b).unwrap();
    let t = pack.lookup(pack.root(), "t").unwrap();
    let mut buf = vec![0u8; 20_000];
    match pack.read_at(t, 0, &mut buf) {
        Err(Error::Corrupt(c)) => assert!(matches!(c.kind, CorruptKind::Checksum { of: Structure::Chunk, .. })),
        other => panic!("{other:?}"),
    }
    assert_eq!(pack.chunks_decoded(), 1, "only the sound first chunk was decoded");
    let report = pack.verify().unwrap();
    assert_eq!(report.bad.len(), 1);
    assert_eq!(report.bad[0].path, "t");

    // Stored bytes that pass their checksum but do not decode (resealed
    // garbage, as a hostile writer makes): a decode error, never a panic.
    let mut b = good.clone();
    let (start, stored) = (at, u32::from_le_bytes(b[record(1) + 24..record(1) + 28].try_into().unwrap()) as usize);
    for x in &mut b[start..start + stored] {
        *x = 0x5a;
    }
    let sum = xxhash_rust::xxh3::xxh3_64(&b[start..start + stored]);
    put(&mut b, record(1) + 16, sum, 8);
    fuzzing::reseal(&mut b);
    let pack = PackFs::open(b).unwrap();
    match pack.read_at(t, 5000, &mut buf) {
        Err(Error::Corrupt(c)) => assert_eq!(c.kind, CorruptKind::Decode { chunk: 1 }),
        other => panic!("{other:?}"),
    }
}

/// Version 1 packs still read, and a pack of no files is fine in both.
#[test]
fn pack_v2_and_v1_side_by_side() {
    let fs = random_tree(5, 60);
    let mut v1 = Vec::new();
    PackOptions::new().write(&fs, &mut v1).unwrap();
    assert_eq!(PackFs::open(&v1[..]).unwrap().info().version, 1);
    let empty = MemFs::new();
    for c in [Compression::zstd(1), Compression::lz4()] {
        let p = v2(&empty, c, 65536);
        let pack = PackFs::open(&p[..]).unwrap();
        assert_eq!(pack.read_dir(pack.root(), None, 10).unwrap(), vec![]);
        assert!(pack.verify().unwrap().is_ok());
    }
    assert!(
        PackOptions::new().compress(Some(Compression::lz4())).chunk_size(1000).write(&fs, &mut Vec::new()).is_err()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random files, random reads: every read of a compressed pack gives the
    /// bytes written.
    #[test]
    fn pack_v2_random_reads_match(seed in any::<u64>(), lz4 in any::<bool>()) {
        let mut rng = Rng::new(seed);
        let fs = MemFs::new();
        let files: Vec<Vec<u8>> = (0..6)
            .map(|i| {
                let n = rng.below(40_000) as usize;
                if rng.chance(30) { noise(n, seed ^ i) } else { text(n, seed ^ i) }
            })
            .collect();
        for (i, f) in files.iter().enumerate() {
            write_file(&fs, fs.root(), &format!("f{i}"), f);
        }
        let c = if lz4 { Compression::lz4() } else { Compression::zstd(3) };
        let bytes = v2(&fs, c, 4096);
        let pack = PackFs::open_with(&bytes[..], ReadOptions::new().verify_on_read(rng.chance(50))).unwrap();
        let mut buf = vec![0u8; 20_000];
        for _ in 0..64 {
            let i = rng.below(files.len() as u64) as usize;
            let data = &files[i];
            let ino = pack.lookup(pack.root(), &format!("f{i}")).unwrap();
            let offset = rng.below(data.len() as u64 + 10);
            let len = rng.below(buf.len() as u64) as usize;
            let n = pack.read_at(ino, offset, &mut buf[..len]).unwrap();
            let from = (offset as usize).min(data.len());
            prop_assert_eq!(&buf[..n], &data[from..(from + len).min(data.len())]);
        }
    }
}

/// The chunk decoder on bytes that are not what they claim: garbage,
/// truncated frames, frames claiming more than their length, lengths
/// shorter than the frame. A decode gives exactly its length or fails.
#[test]
fn pack_v2_chunk_decoding_never_overruns() {
    let data = text(50_000, 9);
    let mut rng = Rng::new(4);
    for c in [Compression::zstd(3), Compression::lz4()] {
        let mut stored = Vec::new();
        c.compress(&data, &mut stored);
        let code = if c.codec() == Codec::Zstd { 1 } else { 2 };
        assert!(fuzzing::decode_chunk(code, &stored, data.len()));
        for _ in 0..300 {
            let mut s = stored.clone();
            match rng.below(3) {
                0 => s.truncate(rng.below(s.len() as u64) as usize),
                1 => {
                    let at = rng.below(s.len() as u64) as usize;
                    s[at] ^= 1 << rng.below(8);
                }
                _ => s.extend((0..rng.below(64)).map(|_| rng.next() as u8)),
            }
            let len = [data.len(), data.len() / 2, data.len() + 1, 0, 1 << 20][rng.below(5) as usize];
            fuzzing::decode_chunk(code, &s, len);
        }
    }
    assert!(!fuzzing::decode_chunk(7, b"x", 1), "an unknown codec");
}
