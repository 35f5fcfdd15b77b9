//! Pinned packs (`docs/pack-format.md` §18): a pack opens pinned only if
//! it is the pinned one, and then serves only bytes that match their
//! digests; one re-sealed by whoever can write its bytes is refused.

use packfs_core::pack::{Compression, CorruptKind, Digest, PackFs, PackOptions, ReadOptions, fuzzing};
use packfs_core::{FileSystem, MemFs};

use crate::common::*;

/// Files of sizes around a 4 KiB chunk's boundaries, and a 300 KiB one
/// that compresses and one that does not (stored raw).
fn tree() -> MemFs {
    let fs = fixed_fs();
    let mut rng = Rng::new(7);
    for (i, len) in [0usize, 1, 4095, 4096, 4097, 8192, 12_289, 300_000].into_iter().enumerate() {
        let text: Vec<u8> = (0..len).map(|j| b"pinned bytes "[j % 13]).collect();
        write_file(&fs, fs.root(), &format!("text{i}"), &text);
        let noise: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        write_file(&fs, fs.root(), &format!("noise{i}"), &noise);
    }
    fs
}

/// The tree packed: version 1, or version 2 in 4 KiB chunks.
/// The writer says the digest the reader computes.
fn packs(fs: &MemFs) -> Vec<(&'static str, Vec<u8>)> {
    let v2 = PackOptions::new().compress(Some(Compression::zstd(3))).chunk_size(4096);
    [("v1", PackOptions::new()), ("v2", v2)]
        .into_iter()
        .map(|(name, options)| {
            let mut out = Vec::new();
            let stats = options.write(&fs.snapshot(), &mut out).unwrap();
            assert_eq!(stats.digest, PackFs::open(&out[..]).unwrap().digest(), "{name}");
            assert!(stats.digest.is_some());
            (name, out)
        })
        .collect()
}

fn pinned(bytes: Vec<u8>, pin: Digest) -> packfs_core::Result<PackFs<Vec<u8>>> {
    PackFs::open_with(bytes, ReadOptions::new().pin(Some(pin)))
}

#[test]
fn pack_pin_opens_the_pinned_pack_and_serves_its_bytes() {
    let fs = tree();
    for (name, bytes) in packs(&fs) {
        let digest = PackFs::open(&bytes[..]).unwrap().digest().expect("written with a digest table");
        let p = pinned(bytes.clone(), digest).unwrap();
        assert_eq!(p.pinned(), Some(digest), "{name}");
        assert_eq!(p.digest(), Some(digest));
        assert_same_tree(&fs, &p);
        assert!(p.verify().unwrap().is_ok(), "{name}");
        // Another pack's digest, or none to check by: refused at open.
        let other = Digest::of(b"another pack");
        let e = pinned(bytes.clone(), other).err().unwrap();
        assert_eq!(kind::<()>(Err(e.clone())), CorruptKind::Pinned { expected: other, actual: digest });
        assert!(e.to_string().contains("not the pinned pack"), "{e}");
        assert_eq!(e.errno_name(), "EIO");
    }
    let mut old = Vec::new();
    PackOptions::new().digests(false).write(&fs.snapshot(), &mut old).unwrap();
    let p = PackFs::open(&old[..]).unwrap();
    assert_eq!(p.digest(), None);
    assert_same_tree(&fs, &p);
    assert_eq!(kind(pinned(old, Digest::of(b"x"))), CorruptKind::NoDigests);
}

/// Data bytes changed under an intact index: the pack digest is the
/// same (it covers the index, not the data), and the pinned reader finds
/// the extent wrong by its digest, on every read; every other file reads.
#[test]
fn pack_pin_refuses_an_extent_that_does_not_match_its_digest() {
    let fs = tree();
    for (name, bytes) in packs(&fs) {
        let digest = PackFs::open(&bytes[..]).unwrap().digest().unwrap();
        for victim in ["text7", "noise7", "text2"] {
            let p = PackFs::open(&bytes[..]).unwrap();
            let ino = p.lookup(p.root(), victim).unwrap();
            let extents = p.extents_of(ino).unwrap();
            let (start, end) = p.extent(extents.start + (extents.end - extents.start) / 2).unwrap();
            let mut bad = bytes.clone();
            bad[((start + end) / 2) as usize] ^= 0x5a;
            let p = pinned(bad, digest).unwrap();
            let mut buf = vec![0u8; 300_000];
            for _ in 0..2 {
                let e = p.read_at(ino, 0, &mut buf).map(|_| ()).and_then(|()| {
                    // A read that did not reach the extent: read the rest.
                    let mut at = 0;
                    while let n @ 1.. = p.read_at(ino, at, &mut buf)? {
                        at += n as u64;
                    }
                    Ok(())
                });
                assert!(matches!(kind(e), CorruptKind::Digest { .. }), "{name} {victim}");
            }
            for other in ["text6", "noise6", "text0"] {
                let o = p.lookup(p.root(), other).unwrap();
                assert_eq!(read_all(&p, o), read_all(&fs, fs.lookup(fs.root(), other).unwrap()));
            }
        }
    }
}

/// Whoever can write a pack's bytes can change a file and seal the pack
/// again (checksums, digest table and all): it opens, unpinned, and reads
/// as changed; pinned, it is refused.
#[test]
fn pack_pin_refuses_a_resealed_pack() {
    let fs = tree();
    for (name, bytes) in packs(&fs) {
        let digest = PackFs::open(&bytes[..]).unwrap().digest().unwrap();
        let forged = {
            let f = fixed_fs();
            for e in walk(&fs) {
                let data = read_all(&fs, e.1);
                let data = if e.0 == "text3" { b"forged".repeat(700) } else { data };
                write_file(&f, f.root(), &e.0, &data);
            }
            let mut out = Vec::new();
            let options = match name {
                "v1" => PackOptions::new(),
                _ => PackOptions::new().compress(Some(Compression::zstd(3))).chunk_size(4096),
            };
            options.write(&f.snapshot(), &mut out).unwrap();
            out
        };
        let p = PackFs::open(&forged[..]).unwrap();
        assert!(p.verify().unwrap().is_ok(), "a consistent pack, unpinned");
        assert_eq!(read_all(&p, p.lookup(p.root(), "text3").unwrap()), b"forged".repeat(700));
        assert!(matches!(kind(pinned(forged, digest)), CorruptKind::Pinned { .. }), "{name}");
        // A single index byte changed and resealed: the same.
        let mut edited = fuzzing::plain_index(&bytes);
        let t = edited.len() - 128;
        edited[t - 20] ^= 1;
        fuzzing::reseal(&mut edited);
        assert!(matches!(kind(pinned(edited, digest)), CorruptKind::Pinned { .. }), "{name}");
    }
}
