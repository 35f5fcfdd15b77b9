//! Version 2 with a zstd dictionary (`docs/pack-format.md` §19): small
//! files in small chunks, never straddling two, each chunk decoded with
//! the dictionary trained on the small files; files read back to the byte at sizes around every
//! boundary (the 64 KiB read piece, the chunk); what gets no dictionary;
//! hostile dictionaries refused at open. The writer trains one only with
//! the C library's encoder.
#![cfg(feature = "zstd-c")]

use packfs_core::pack::{Compression, CorruptKind, PackFs, PackOptions, Structure, fuzzing};
use packfs_core::{Error, FileSystem, MemFs};
use xxhash_rust::xxh3::xxh3_64;

use crate::common::{Rng, corrupt_kind, open_edited, write_file};

const CHUNK: u64 = 128 * 1024;

/// Source-like text: lines of words a dictionary learns, in an order it
/// cannot.
fn source(n: usize, rng: &mut Rng) -> Vec<u8> {
    let words = [
        "def ", "return ", "self", ".value", "import ", "from ", "class ", "None", "if ", "else:", "    ", "(", ")",
        ", ", "for ", " in ", "raise ", "Error", "_name", "\n", "# ", "len(", "\"\"\"", "True", "False",
    ];
    let mut out = Vec::with_capacity(n + 16);
    while out.len() < n {
        out.extend_from_slice(words[rng.below(words.len() as u64) as usize].as_bytes());
        if rng.below(9) == 0 {
            out.extend_from_slice(format!("x{}", rng.below(1000)).as_bytes());
        }
    }
    out.truncate(n);
    out
}

/// Many small files (the dictionary's samples) in a few directories, and
/// files at every boundary: empty, one byte, around the 64 KiB piece and
/// the chunk, and a few chunks long.
fn tree() -> (MemFs, Vec<(String, Vec<u8>)>) {
    let fs = MemFs::new();
    let mut rng = Rng::new(19);
    let mut files = Vec::new();
    let dirs: Vec<_> = (0..4).map(|d| fs.mkdir(fs.root(), &format!("d{d}"), 0o755).unwrap()).collect();
    for i in 0..320 {
        let n = 200 + rng.below(3000) as usize;
        files.push((format!("d{}/m{i}.py", i % 4), source(n, &mut rng)));
    }
    for n in
        [0, 1, 65_535, 65_536, 65_537, CHUNK as usize - 1, CHUNK as usize, CHUNK as usize + 1, 3 * CHUNK as usize + 7]
    {
        files.push((format!("edge{n}"), source(n, &mut rng)));
    }
    for (path, bytes) in &files {
        let (dir, name) = match path.split_once('/') {
            Some((d, name)) => (dirs[d[1..].parse::<usize>().unwrap()], name),
            None => (fs.root(), path.as_str()),
        };
        write_file(&fs, dir, name, bytes);
    }
    (fs, files)
}

fn pack(fs: &MemFs, options: PackOptions) -> Vec<u8> {
    let mut out = Vec::new();
    options.write(&fs.snapshot(), &mut out).unwrap();
    out
}

fn zstd() -> PackOptions {
    PackOptions::new().compress(Some(Compression::zstd(15))).chunk_size(CHUNK)
}

fn lookup(p: &PackFs<&[u8]>, path: &str) -> u64 {
    packfs_core::resolve::resolve(p, p.root(), path, true).unwrap()
}

#[test]
fn a_dictionary_keeps_small_files_in_small_chunks() {
    let (fs, files) = tree();
    let bytes = pack(&fs, zstd());
    assert_eq!(bytes, pack(&fs, zstd()), "reproducible");
    let p = PackFs::open(&bytes[..]).unwrap();
    let info = p.info();
    assert!((1..=128 << 10).contains(&info.dictionary), "{info:?}");
    for (path, content) in &files {
        let ino = lookup(&p, path);
        let whole = p.file_bytes(ino).unwrap();
        assert_eq!(xxh3_64(&whole), xxh3_64(content), "{path}");
        // A small file in one chunk; a larger one in chunks of its own.
        let chunks = p.extents_of(ino).map_or(0, |r| r.end - r.start);
        assert_eq!(chunks, (content.len() as u64).div_ceil(CHUNK), "{path}");
        // A read across the piece and chunk edges, at an odd offset.
        if content.len() > 70_000 {
            let mut buf = vec![0u8; content.len() - 3];
            assert_eq!(p.read_at(ino, 3, &mut buf), Ok(content.len() - 3));
            assert_eq!(xxh3_64(&buf), xxh3_64(&content[3..]), "{path} from 3");
        }
    }
    assert!(p.verify().unwrap().is_ok());
    assert!(fuzzing::exercise(&bytes));

    // Reading one small file decodes its one chunk, nothing else.
    let fresh = PackFs::open(&bytes[..]).unwrap();
    let ino = lookup(&fresh, "d2/m6.py");
    assert_eq!(*fresh.file_bytes(ino).unwrap(), *files[6].1);
    assert_eq!(fresh.chunks_decoded(), 1);

    // No two small files of 1 KiB or more share a chunk (one may share
    // with smaller files before it, under 1 KiB in all): a lazy read of
    // one fetches little beside it.
    let sizes: Vec<(u64, std::ops::Range<u64>)> = files
        .iter()
        .filter(|(path, c)| path.contains('/') && c.len() >= 1024)
        .map(|(path, c)| (c.len() as u64, p.extents_of(lookup(&p, path)).unwrap()))
        .collect();
    for (i, (_, a)) in sizes.iter().enumerate() {
        assert!(sizes[i + 1..].iter().all(|(_, b)| b != a), "a small file shares its chunk");
    }

    // And the pack is a few percent larger than with shared chunks and no
    // dictionary (on real trees 0.6–4%).
    let shared = pack(&fs, zstd().dictionary(false));
    let q = PackFs::open(&shared[..]).unwrap();
    assert_eq!(q.info().dictionary, 0);
    let small = lookup(&q, "d0/m0.py");
    let neighbours = q.extents_of(lookup(&q, "d0/m100.py")).unwrap();
    assert_eq!(q.extents_of(small).unwrap(), neighbours, "without one, small files share a chunk");
    // (Random words: real source files, with more in common, gain more.)
    assert!(
        bytes.len() * 100 < shared.len() * 108,
        "{} bytes with a dictionary, {} without",
        bytes.len(),
        shared.len()
    );
}

/// A file of a chunk or more is compressed without the dictionary: its
/// chunks are the same bytes in two packs whose small files, and so
/// dictionaries, differ (what a cache addressed by content shares).
#[test]
fn large_files_chunks_do_not_depend_on_the_dictionary() {
    let (a, files) = tree();
    let b = MemFs::new();
    let mut rng = Rng::new(91);
    for i in 0..320 {
        write_file(&b, b.root(), &format!("other{i}.py"), &source(200 + rng.below(3000) as usize, &mut rng));
    }
    let large = &files.iter().find(|(p, _)| p == "edge393223").unwrap().1;
    write_file(&b, b.root(), "edge393223", large);
    let (pa, pb) = (pack(&a, zstd()), pack(&b, zstd()));
    let (qa, qb) = (PackFs::open(&pa[..]).unwrap(), PackFs::open(&pb[..]).unwrap());
    assert!(qa.info().dictionary > 0 && qb.info().dictionary > 0);
    let stored = |q: &PackFs<&[u8]>, bytes: &[u8]| -> Vec<Vec<u8>> {
        let ks = q.extents_of(lookup(q, "edge393223")).unwrap();
        ks.map(|k| {
            let (s, e) = q.extent(k).unwrap();
            bytes[s as usize..e as usize].to_vec()
        })
        .collect()
    };
    let (sa, sb) = (stored(&qa, &pa), stored(&qb, &pb));
    assert_eq!(sa.len(), 4);
    assert_eq!(sa, sb, "the large file's stored chunks");
    assert!(sa.iter().any(|s| s.len() < CHUNK as usize / 2), "compressed");
    // The small files' chunks, compressed with different dictionaries, are not.
    let small = |q: &PackFs<&[u8]>, bytes: &[u8], path: &str| {
        let k = q.extents_of(lookup(q, path)).unwrap().start;
        let (s, e) = q.extent(k).unwrap();
        bytes[s as usize..e as usize].to_vec()
    };
    write_file(&b, b.root(), "same.py", &files[0].1);
    let pb = pack(&b, zstd());
    let qb = PackFs::open(&pb[..]).unwrap();
    assert_ne!(small(&qa, &pa, &files[0].0), small(&qb, &pb, "same.py"));
}

/// lz4, too few small files, and `dictionary(false)`: no dictionary, the
/// packs as before (which older readers read).
#[test]
fn what_gets_no_dictionary() {
    let (fs, _) = tree();
    for options in [PackOptions::new().compress(Some(Compression::lz4())), zstd().dictionary(false), PackOptions::new()]
    {
        let bytes = pack(&fs, options);
        assert_eq!(u32::from_le_bytes(bytes[12..16].try_into().unwrap()), 0, "no incompat flag");
        assert_eq!(PackFs::open(&bytes[..]).unwrap().info().dictionary, 0);
    }
    let few = MemFs::new();
    let mut rng = Rng::new(4);
    for i in 0..20 {
        write_file(&few, few.root(), &format!("f{i}"), &source(5000, &mut rng));
    }
    assert_eq!(PackFs::open(&pack(&few, zstd())[..]).unwrap().info().dictionary, 0);
}

#[test]
fn hostile_dictionaries_are_refused_at_open() {
    let (fs, _) = tree();
    let good = fuzzing::plain_index(&pack(&fs, zstd()));
    let dict_len = u32::from_le_bytes(good[28..32].try_into().unwrap()) as usize;
    assert!(dict_len > 0);
    let len = good.len();
    let footer = len - 128 - 16;
    let count = u64::from_le_bytes(good[footer..footer + 8].try_into().unwrap()) as usize;
    // The dictionary ends where the chunk table starts.
    let dict = footer - count * 32 - dict_len;
    assert_eq!(&good[dict..dict + 4], &[0x37, 0xa4, 0x30, 0xec], "zstd's dictionary magic");
    let open = |edit: &dyn Fn(&mut Vec<u8>)| open_edited(&good, edit);
    let kind = corrupt_kind;
    let set_len = |b: &mut Vec<u8>, n: u32| b[28..32].copy_from_slice(&n.to_le_bytes());
    assert_eq!(kind(open(&|b| b[dict] ^= 1)), CorruptKind::BadDictionary);
    // Its length: longer than the room before the chunk table, moved into
    // the digest table, cut short, past the format's bound.
    assert!(matches!(
        kind(open(&|b| set_len(b, (footer - count * 32) as u32))),
        CorruptKind::OutOfBounds { of: Structure::Dictionary, .. }
    ));
    assert_eq!(kind(open(&|b| set_len(b, dict_len as u32 + 8))), CorruptKind::BadDictionary);
    assert_eq!(kind(open(&|b| set_len(b, 20))), CorruptKind::BadDictionary);
    assert!(matches!(kind(open(&|b| set_len(b, (1 << 20) + 1))), CorruptKind::BadField { field: "dict_len", .. }));
    // The tables parse but are cut short by the content's start: damaged
    // anywhere in the first 200 bytes, refused or loaded, never a panic;
    // one that loads reads each file or fails it as corrupt.
    for at in 4..200 {
        if let Ok(p) = open(&|b| b[dict + at] ^= 0x81) {
            let ino = packfs_core::resolve::resolve(&p, p.root(), "d1/m1.py", true).unwrap();
            match p.file_bytes(ino) {
                Ok(_) | Err(Error::Corrupt(_)) => {}
                Err(e) => panic!("{e:?}"),
            }
        }
    }
    // Without the flag, the chunks of codec 3 name a dictionary the pack
    // does not have: refused at open. With §19's draft bit instead, the
    // pack is of a format this reader does not know.
    assert!(matches!(kind(open(&|b| b[12] = 0)), CorruptKind::BadField { field: "codec", .. }));
    assert!(matches!(open(&|b| b[12] = 1), Err(Error::UnsupportedVersion { version: 2, incompat_flags: 1 })));
}
