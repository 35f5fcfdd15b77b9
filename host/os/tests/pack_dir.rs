//! `pack::pack_dir`: a host directory to a pack, as `packfs pack` makes
//! one: every kind of entry it can hold, byte for byte; an entry it cannot
//! hold, or an output inside the directory, refused with `out` untouched.

use std::os::unix::fs::{PermissionsExt, symlink};

use packfs_core::pack::PackOptions;
use packfs_core::resolve::resolve;
use packfs_core::{FileSystem, FileType, read_file};
use packfs_os::mmap::open_pack;
use packfs_os::pack::{PackDirError, pack_dir};

#[test]
fn a_directory_packs_whole_and_reads_back_byte_for_byte() {
    let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = src.path();
    std::fs::create_dir_all(root.join("sub/empty")).unwrap();
    // Sizes around the writer's chunk (128 KiB) and copy piece (1 MiB).
    let sizes = [0usize, 1, 131_071, 131_072, 131_073, (1 << 20) + 1];
    for (i, len) in sizes.into_iter().enumerate() {
        let data: Vec<u8> = (0..len).map(|k| (k * 7 + i) as u8).collect();
        std::fs::write(root.join(format!("sub/f{i}")), data).unwrap();
    }
    std::fs::set_permissions(root.join("sub/f1"), std::fs::Permissions::from_mode(0o751)).unwrap();
    symlink("sub/f2", root.join("link")).unwrap();
    std::fs::hard_link(root.join("sub/f3"), root.join("hard")).unwrap();

    let out = dst.path().join("tree.pack");
    let stats = pack_dir(root, &out, &PackOptions::new()).unwrap();
    // A hard link's content counts once.
    assert_eq!(stats.file_bytes, sizes.iter().map(|&n| n as u64).sum::<u64>());
    let pack = open_pack(&out).unwrap();
    for (i, len) in sizes.into_iter().enumerate() {
        let data: Vec<u8> = (0..len).map(|k| (k * 7 + i) as u8).collect();
        assert!(read_file(&pack, &format!("sub/f{i}")).unwrap() == data, "{len} bytes");
    }
    let f1 = resolve(&pack, pack.root(), "sub/f1", false).unwrap();
    assert_eq!(pack.metadata(f1).unwrap().mode & 0o777, 0o751);
    let link = resolve(&pack, pack.root(), "link", false).unwrap();
    assert_eq!(pack.metadata(link).unwrap().kind, FileType::Symlink);
    assert_eq!(pack.readlink(link).unwrap(), "sub/f2");
    let (hard, f3) =
        (resolve(&pack, pack.root(), "hard", false).unwrap(), resolve(&pack, pack.root(), "sub/f3", false).unwrap());
    assert_eq!(hard, f3, "a hard link stays one inode");
    let empty = resolve(&pack, pack.root(), "sub/empty", false).unwrap();
    assert!(pack.read_dir(empty, None, 10).unwrap().is_empty());

    // The same tree gives the same bytes.
    let again = dst.path().join("again.pack");
    pack_dir(root, &again, &PackOptions::new()).unwrap();
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&again).unwrap());
}

#[test]
fn what_a_pack_cannot_hold_is_refused_and_out_kept() {
    let (src, dst) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(src.path().join("a"), "a").unwrap();
    rustix::fs::mknodat(rustix::fs::CWD, src.path().join("fifo"), rustix::fs::FileType::Fifo, 0o644.into(), 0).unwrap();
    let out = dst.path().join("tree.pack");
    std::fs::write(&out, "old").unwrap();
    assert!(matches!(pack_dir(src.path(), &out, &PackOptions::new()), Err(PackDirError::Write(_))));
    assert_eq!(std::fs::read(&out).unwrap(), b"old");

    // Inside the directory it packs, directly or through a symlink.
    std::fs::remove_file(src.path().join("fifo")).unwrap();
    let inside = src.path().join("self.pack");
    assert!(matches!(pack_dir(src.path(), &inside, &PackOptions::new()), Err(PackDirError::InsideSource)));
    assert!(!inside.exists());
    symlink(src.path().join("elsewhere.pack"), dst.path().join("via")).unwrap();
    let via = dst.path().join("via");
    assert!(matches!(pack_dir(src.path(), &via, &PackOptions::new()), Err(PackDirError::InsideSource)));
    // Not a directory.
    assert!(matches!(pack_dir(&out, &dst.path().join("x.pack"), &PackOptions::new()), Err(PackDirError::Open(_))));
}
