//! `PackFs` as a `FileSystem`, and its integrity checks.

use std::sync::Arc;

use packfs_core::pack::{ByteSource, CorruptKind, CorruptPack, PackFs, ReadOptions, Structure, VerifyReport, fuzzing};
use packfs_core::{Error, FileSystem, FileType, OpenOptions, SetTime};

use crate::common::*;

fn sample() -> (packfs_core::MemFs, Vec<u8>) {
    let fs = fixed_fs();
    let d = fs.mkdir(fs.root(), "dir", 0o750).unwrap();
    write_file(&fs, d, "f", b"hello, pack");
    write_file(&fs, fs.root(), "g", b"second file");
    fs.symlink(fs.root(), "link", "dir/f").unwrap();
    let bytes = pack_bytes(&fs);
    (fs, bytes)
}

#[test]
fn pack_reader_lookup_and_open_follow_the_trait() {
    let (_, bytes) = sample();
    let p = open(bytes);
    let root = p.root();
    assert_eq!(root, 1);
    let dir = p.lookup(root, "dir").unwrap();
    let f = p.lookup(dir, "f").unwrap();
    let link = p.lookup(root, "link").unwrap();
    assert_eq!(p.lookup(root, "nope"), Err(Error::NotFound));
    assert_eq!(p.lookup(f, "x"), Err(Error::NotDir));
    assert_eq!(p.lookup(root, ""), Err(Error::Invalid));
    assert_eq!(p.lookup(root, "a/b"), Err(Error::Invalid));
    assert_eq!(p.lookup(root, &"n".repeat(256)), Err(Error::NameTooLong));
    assert_eq!(p.lookup(9999, "x"), Err(Error::NotFound));
    assert_eq!(p.metadata(0), Err(Error::NotFound));

    assert_eq!(p.open(dir, "f", &OpenOptions::read()), Ok(f));
    assert_eq!(p.open(root, "dir", &OpenOptions::directory()), Ok(dir));
    assert_eq!(p.open(dir, "f", &OpenOptions::directory()), Err(Error::NotDir));
    assert_eq!(p.open(root, "link", &OpenOptions::read()), Err(Error::Loop));
    assert_eq!(p.open(root, "nope", &OpenOptions::read()), Err(Error::NotFound));
    for opts in [OpenOptions::create(), OpenOptions::create_new(), OpenOptions { write: true, ..OpenOptions::read() }] {
        assert_eq!(p.open(dir, "f", &opts), Err(Error::ReadOnly));
    }
    assert_eq!(p.open_ino(f), Ok(()));
    assert_eq!(p.open_ino(1234), Err(Error::NotFound));
    p.close(f);

    assert_eq!(p.readlink(link).unwrap(), "dir/f");
    assert_eq!(p.readlink(f), Err(Error::Invalid));
    assert_eq!(packfs_core::resolve::resolve(&p, root, "link", true), Ok(f));

    let mut buf = [0u8; 5];
    assert_eq!(p.read_at(f, 7, &mut buf), Ok(4));
    assert_eq!(&buf[..4], b"pack");
    assert_eq!(p.read_at(f, 11, &mut buf), Ok(0));
    assert_eq!(p.read_at(f, u64::MAX, &mut buf), Ok(0));
    assert_eq!(p.read_at(dir, 0, &mut buf), Err(Error::IsDir));
    assert_eq!(p.read_at(link, 0, &mut buf), Err(Error::Invalid));
    assert_eq!(p.file_bytes(dir), Err(Error::IsDir));

    let m = p.metadata(dir).unwrap();
    assert_eq!((m.kind, m.mode, m.nlink, m.size), (FileType::Dir, 0o750, 2, 0));
    assert_eq!(p.metadata(root).unwrap().nlink, 3);
    assert_eq!(p.metadata(link).unwrap().size, 5);
}

#[test]
fn pack_reader_refuses_every_change() {
    let (_, bytes) = sample();
    let p = open(bytes);
    let f = p.lookup(p.lookup(1, "dir").unwrap(), "f").unwrap();
    assert_eq!(p.write_at(f, 0, b"x"), Err(Error::ReadOnly));
    assert_eq!(p.append(f, b"x"), Err(Error::ReadOnly));
    assert_eq!(p.set_len(f, 0), Err(Error::ReadOnly));
    assert_eq!(p.mkdir(1, "n", 0o755), Err(Error::ReadOnly));
    assert_eq!(p.rmdir(1, "dir"), Err(Error::ReadOnly));
    assert_eq!(p.unlink(1, "g"), Err(Error::ReadOnly));
    assert_eq!(p.rename(1, "g", 1, "h"), Err(Error::ReadOnly));
    assert_eq!(p.symlink(1, "s", "t"), Err(Error::ReadOnly));
    assert_eq!(p.link(f, 1, "l"), Err(Error::ReadOnly));
    assert_eq!(p.set_times(f, SetTime::Now, SetTime::Now), Err(Error::ReadOnly));
    assert_eq!(p.set_mode(f, 0), Err(Error::ReadOnly));
    assert_eq!(p.sync(f), Ok(()));
}

#[test]
fn pack_reader_read_dir_resumes_from_any_cookie() {
    let fs = fixed_fs();
    let names = ["a", "b", "bb", "c", "é", "日"];
    for n in names {
        write_file(&fs, fs.root(), n, n.as_bytes());
    }
    let p = open(pack_bytes(&fs));
    let all: Vec<String> = p.read_dir(1, None, 100).unwrap().iter().map(|e| e.name.to_string()).collect();
    assert_eq!(all, names);
    // A cookie that is not (or no longer) a name resumes at the next one.
    let after = |c| p.read_dir(1, Some(c), 2).unwrap().iter().map(|e| e.name.to_string()).collect::<Vec<_>>();
    assert_eq!(after("a"), ["b", "bb"]);
    assert_eq!(after("ba"), ["bb", "c"]);
    assert_eq!(after("0"), ["a", "b"]);
    assert_eq!(after("日"), Vec::<String>::new());
    assert_eq!(after("zzz"), ["é", "日"]);
    assert_eq!(after("\u{ffff}"), Vec::<String>::new());
    assert_eq!(p.read_dir(1, None, 0).unwrap(), vec![]);
    let f = p.lookup(1, "a").unwrap();
    assert_eq!(p.read_dir(f, None, 1), Err(Error::NotDir));
}

#[test]
fn pack_reader_works_over_every_byte_source() {
    let (fs, bytes) = sample();
    assert_same_tree(&fs, &PackFs::open(bytes.as_slice()).unwrap());
    assert_same_tree(&fs, &PackFs::open(Arc::<[u8]>::from(bytes.clone())).unwrap());
    assert_same_tree(&fs, &PackFs::open(bytes.clone().into_boxed_slice()).unwrap());
    let dynamic: Box<dyn ByteSource> = Box::new(bytes.clone());
    assert_same_tree(&fs, &PackFs::open(dynamic).unwrap());
    let fs_obj: Arc<dyn FileSystem> = Arc::new(PackFs::open(bytes).unwrap());
    assert_eq!(fs_obj.read_dir(fs_obj.root(), None, 10).unwrap().len(), 3);
}

/// The offset of `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).position(|w| w == needle).unwrap()
}

/// One bad blob named more often than a report lists: the first
/// `LISTED` names are listed, the rest counted.
#[test]
fn pack_verify_lists_a_bounded_number_of_entries() {
    let fs = fixed_fs();
    let n = VerifyReport::LISTED + 5;
    for i in 0..n {
        write_file(&fs, fs.root(), &format!("f{i:05}"), b"shared bytes");
    }
    let mut bytes = pack_bytes(&fs);
    let at = find(&bytes, b"shared");
    bytes[at] ^= 0x20;
    let report = PackFs::open(bytes).unwrap().verify().unwrap();
    assert_eq!((report.bad.len(), report.unlisted, report.bad_count()), (VerifyReport::LISTED, 5, n as u64));
    assert_eq!(report.bad[0].path, "f00000");
    assert!(!report.is_ok());
}

#[test]
fn pack_verify_names_the_files_of_a_bad_blob() {
    let fs = fixed_fs();
    let d = fs.mkdir(fs.root(), "dir", 0o755).unwrap();
    let f = write_file(&fs, d, "f", b"precious bytes");
    fs.link(f, fs.root(), "hard").unwrap();
    write_file(&fs, fs.root(), "copy", b"precious bytes");
    write_file(&fs, fs.root(), "fine", b"other bytes");
    let mut bytes = pack_bytes(&fs);
    let at = find(&bytes, b"precious");
    bytes[at] ^= 0x20;

    // Blobs are not read at open: it succeeds, and plain reads see the damage.
    let p = PackFs::open(bytes.clone()).unwrap();
    let pf = p.lookup(p.lookup(1, "dir").unwrap(), "f").unwrap();
    assert_eq!(*p.file_bytes(pf).unwrap(), *b"Precious bytes");
    let report = p.verify().unwrap();
    assert_eq!(report.blobs, 2);
    let paths: Vec<&str> = report.bad.iter().map(|b| b.path.as_str()).collect();
    assert_eq!(paths, ["copy", "dir/f", "hard"]);
    assert_eq!(report.bad[1].ino, Some(pf));
    // By digest, the pack having a digest table.
    assert!(matches!(report.bad[0].error.kind, CorruptKind::Digest { of: Structure::Blob, .. }));
    assert_eq!(report.bad[0].error.offset, at as u64);

    // With verify_on_read, every read of the bad blob fails; others pass.
    let p = PackFs::open_with(bytes, ReadOptions::new().verify_on_read(true)).unwrap();
    let mut buf = [0u8; 4];
    for _ in 0..2 {
        assert!(matches!(p.read_at(pf, 0, &mut buf), Err(Error::Corrupt(CorruptPack { .. }))));
        assert_eq!(p.read_at(pf, 0, &mut buf).unwrap_err().errno_name(), "EIO");
    }
    let fine = p.lookup(1, "fine").unwrap();
    assert_eq!(p.read_at(fine, 0, &mut buf), Ok(4));
    assert_eq!(*p.file_bytes(fine).unwrap(), *b"other bytes");
}

#[test]
fn pack_open_rejects_a_damaged_index_or_header() {
    let (_, bytes) = sample();
    let kind = |bytes: &[u8]| match PackFs::open(bytes) {
        Err(Error::Corrupt(c)) => c.kind,
        other => panic!("{:?}", other.map(|_| ())),
    };
    // A name in the string pool (the index): the index checksum catches it.
    let mut b = bytes.clone();
    let at = find(&b, b"link");
    b[at] = b'L';
    assert!(matches!(kind(&b), CorruptKind::Checksum { of: Structure::Index, .. }));
    // ...and with the checksums recomputed, the structure check does.
    fuzzing::reseal(&mut b);
    assert!(matches!(kind(&b), CorruptKind::Unsorted), "{:?}", kind(&b));
    let mut b = bytes.clone();
    b[1] = b'X';
    assert!(matches!(kind(&b), CorruptKind::BadMagic(Structure::Header)));
    let mut b = bytes.clone();
    b[60] ^= 1;
    assert!(matches!(kind(&b), CorruptKind::Checksum { of: Structure::Header, .. }));
    assert!(matches!(kind(&bytes[..bytes.len() - 1]), CorruptKind::BadMagic(Structure::Trailer)));
    assert!(matches!(kind(&bytes[..100]), CorruptKind::Truncated { .. }));
    assert!(matches!(kind(&[]), CorruptKind::Truncated { .. }));
    let mut b = bytes.clone();
    b.extend_from_slice(&bytes[bytes.len() - 128..]);
    assert!(matches!(kind(&b), CorruptKind::LengthMismatch { .. }));
}

#[test]
fn pack_open_refuses_unknown_versions_and_flags() {
    let (_, bytes) = sample();
    let mut b = bytes.clone();
    b[8] = 3;
    fuzzing::reseal(&mut b);
    assert_eq!(PackFs::open(b.as_slice()).err(), Some(Error::UnsupportedVersion { version: 3, incompat_flags: 0 }));
    let mut b = bytes.clone();
    b[12] = 1;
    fuzzing::reseal(&mut b);
    let err = PackFs::open(b.as_slice()).err().unwrap();
    assert_eq!(err, Error::UnsupportedVersion { version: 1, incompat_flags: 1 });
    assert_eq!(err.errno_name(), "ENOTSUP");
    // Unknown compatible flags are ignored.
    let mut b = bytes.clone();
    b[19] = 0x80;
    fuzzing::reseal(&mut b);
    assert!(PackFs::open(b.as_slice()).is_ok());
}

/// A pack holding only what `Layout::required` names opens, and
/// `extents_of`/`extent` say where each file's bytes lie: filled in,
/// they read back whole.
#[test]
fn a_partial_pack_opens_from_its_layout_and_finds_its_blobs() {
    use packfs_core::pack::Layout;
    use packfs_core::pack::layout::{HEADER_LEN, TRAILER_LEN};
    let (_, bytes) = sample();
    let layout = Layout::from_trailer(&bytes[bytes.len() - TRAILER_LEN as usize..]).unwrap();
    assert_eq!(layout.pack_len, bytes.len() as u64);
    assert_eq!(layout.trailer_offset(), bytes.len() as u64 - TRAILER_LEN);
    assert!(layout.data_offset >= HEADER_LEN && layout.data_offset + layout.data_len <= layout.index_offset);
    let mut partial = vec![0u8; bytes.len()];
    for (start, end) in layout.required() {
        partial[start as usize..end as usize].copy_from_slice(&bytes[start as usize..end as usize]);
    }
    let p = PackFs::open(partial.clone()).unwrap();
    let f = packfs_core::resolve::resolve(&p, p.root(), "dir/f", false).unwrap();
    let ks = p.extents_of(f).unwrap();
    assert_eq!(ks.end - ks.start, 1, "a version 1 file is one blob");
    assert_eq!(p.extents_of(p.root()), None, "a directory has no extent");
    assert_eq!(p.extents_of(9999), None);
    let (start, end) = p.extent(ks.start).unwrap();
    assert!(start >= layout.data_offset && end <= layout.data_offset + layout.data_len);
    assert_eq!(&bytes[start as usize..end as usize], b"hello, pack");
    assert_eq!(p.extent(u64::from(u32::MAX)), None);
    // Not a trailer: too short, or its magic or checksum wrong.
    assert!(Layout::from_trailer(&bytes[..10]).is_err());
    let mut bad = bytes[bytes.len() - TRAILER_LEN as usize..].to_vec();
    bad[20] ^= 1;
    assert!(Layout::from_trailer(&bad).is_err());
}
