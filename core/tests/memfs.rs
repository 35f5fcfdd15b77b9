//! Every MemFs operation and error path, through the `FileSystem` trait.

use packfs_core::mem::{ENTRY_BYTES, INODE_BYTES, Quota, ROOT, Usage};
use packfs_core::resolve::{resolve, resolve_parent};
use packfs_core::{Error, FileSystem, FileType, MemFs, OpenOptions, SetTime, Timestamp, system_clock};

fn file(fs: &MemFs, dir: u64, name: &str, data: &[u8]) -> u64 {
    let f = fs.open(dir, name, &OpenOptions::create()).unwrap();
    fs.write_at(f, 0, data).unwrap();
    fs.close(f);
    f
}

fn read(fs: &dyn FileSystem, ino: u64) -> Vec<u8> {
    let mut buf = vec![0; fs.metadata(ino).unwrap().size as usize];
    fs.read_at(ino, 0, &mut buf).unwrap();
    buf
}

fn names(fs: &dyn FileSystem, dir: u64) -> Vec<String> {
    fs.read_dir(dir, None, usize::MAX).unwrap().into_iter().map(|e| e.name.to_string()).collect()
}

#[test]
fn open_flags() {
    let fs = MemFs::new();
    assert_eq!(fs.open(ROOT, "f", &OpenOptions::read()), Err(Error::NotFound));
    let f = file(&fs, ROOT, "f", b"hello");
    assert_eq!(fs.open(ROOT, "f", &OpenOptions::create_new()), Err(Error::Exists));
    assert_eq!(fs.open(ROOT, "f", &OpenOptions::directory()), Err(Error::NotDir));
    // Plain write-open keeps content; truncate cuts it.
    let g = fs.open(ROOT, "f", &OpenOptions { write: true, ..OpenOptions::default() }).unwrap();
    assert_eq!(g, f);
    assert_eq!(read(&fs, f), b"hello");
    fs.close(g);
    fs.close(fs.open(ROOT, "f", &OpenOptions::create()).unwrap());
    assert_eq!(fs.metadata(f).unwrap().size, 0);

    let d = fs.mkdir(ROOT, "d", 0o755).unwrap();
    assert_eq!(fs.open(ROOT, "d", &OpenOptions::directory()), Ok(d));
    assert_eq!(fs.open(ROOT, "d", &OpenOptions::create()), Err(Error::IsDir));
    assert_eq!(
        fs.open(ROOT, "new", &OpenOptions { create: true, directory: true, ..OpenOptions::default() }),
        Err(Error::Invalid)
    );
    fs.symlink(ROOT, "l", "f").unwrap();
    assert_eq!(fs.open(ROOT, "l", &OpenOptions::read()), Err(Error::Loop));
    assert_eq!(fs.open(ROOT, "l", &OpenOptions::directory()), Err(Error::NotDir), "as Linux: O_DIRECTORY first");
    assert_eq!(fs.open(f, "x", &OpenOptions::read()), Err(Error::NotDir));
    // Created files take the requested mode.
    let m = fs.open(ROOT, "m", &OpenOptions { mode: 0o600, ..OpenOptions::create() }).unwrap();
    assert_eq!(fs.metadata(m).unwrap().mode, 0o600);
}

#[test]
fn names_are_validated() {
    let fs = MemFs::new();
    for bad in ["", ".", "..", "a/b", "nul\0"] {
        assert_eq!(fs.mkdir(ROOT, bad, 0o755), Err(Error::Invalid), "{bad:?}");
        assert_eq!(fs.lookup(ROOT, bad), Err(Error::Invalid), "{bad:?}");
    }
    assert_eq!(fs.mkdir(ROOT, &"n".repeat(256), 0o755), Err(Error::NameTooLong));
    assert!(fs.mkdir(ROOT, &"n".repeat(255), 0o755).is_ok());
    assert!(fs.mkdir(ROOT, "ünïcødé ✓", 0o755).is_ok());
}

#[test]
fn read_write_append_set_len() {
    let fs = MemFs::new();
    let f = fs.open(ROOT, "f", &OpenOptions::create()).unwrap();
    assert_eq!(fs.write_at(f, 3, b"abc"), Ok(3));
    assert_eq!(read(&fs, f), b"\0\0\0abc");
    assert_eq!(fs.append(f, b"de"), Ok(6));
    assert_eq!(read(&fs, f), b"\0\0\0abcde");
    let mut buf = [9u8; 4];
    assert_eq!(fs.read_at(f, 6, &mut buf), Ok(2));
    assert_eq!(&buf[..2], b"de");
    assert_eq!(fs.read_at(f, 100, &mut buf), Ok(0));
    fs.set_len(f, 2).unwrap();
    assert_eq!(read(&fs, f), b"\0\0");
    fs.set_len(f, 4).unwrap();
    assert_eq!(read(&fs, f), b"\0\0\0\0");
    assert_eq!(fs.write_at(f, u64::MAX - 1, b"xx"), Err(Error::FileTooLarge));
    assert_eq!(fs.set_len(f, u64::MAX), Err(Error::FileTooLarge));
    // Content operations on the wrong kind of inode.
    let d = fs.mkdir(ROOT, "d", 0o755).unwrap();
    assert_eq!(fs.write_at(d, 0, b"x"), Err(Error::IsDir));
    assert_eq!(fs.read_at(d, 0, &mut buf), Err(Error::IsDir));
    assert_eq!(fs.set_len(d, 0), Err(Error::IsDir));
    let l = fs.symlink(ROOT, "l", "f").unwrap();
    assert_eq!(fs.read_at(l, 0, &mut buf), Err(Error::Invalid));
    assert_eq!(fs.write_at(999, 0, b"x"), Err(Error::NotFound));
    fs.close(f);
}

#[test]
fn mkdir_rmdir_and_link_counts() {
    let fs = MemFs::new();
    let a = fs.mkdir(ROOT, "a", 0o700).unwrap();
    assert_eq!(fs.mkdir(ROOT, "a", 0o700), Err(Error::Exists));
    let md = fs.metadata(a).unwrap();
    assert_eq!((md.kind, md.mode, md.nlink, md.size), (FileType::Dir, 0o700, 2, 0));
    assert_eq!(fs.metadata(ROOT).unwrap().nlink, 3);
    let b = fs.mkdir(a, "b", 0o755).unwrap();
    assert_eq!(fs.metadata(a).unwrap().nlink, 3);
    assert_eq!(fs.rmdir(ROOT, "a"), Err(Error::NotEmpty));
    file(&fs, b, "f", b"");
    assert_eq!(fs.rmdir(b, "f"), Err(Error::NotDir));
    assert_eq!(fs.rmdir(b, "zz"), Err(Error::NotFound));
    fs.unlink(b, "f").unwrap();
    fs.rmdir(a, "b").unwrap();
    assert_eq!(fs.metadata(a).unwrap().nlink, 2);
    assert_eq!(fs.metadata(b), Err(Error::NotFound));
    fs.rmdir(ROOT, "a").unwrap();
    assert_eq!(fs.metadata(ROOT).unwrap().nlink, 2);
    assert_eq!(fs.mkdir(a, "x", 0o755), Err(Error::NotFound));
}

#[test]
fn unlink() {
    let fs = MemFs::new();
    file(&fs, ROOT, "f", b"x");
    fs.mkdir(ROOT, "d", 0o755).unwrap();
    assert_eq!(fs.unlink(ROOT, "d"), Err(Error::IsDir));
    assert_eq!(fs.unlink(ROOT, "nope"), Err(Error::NotFound));
    fs.unlink(ROOT, "f").unwrap();
    assert_eq!(names(&fs, ROOT), ["d"]);
    // The root and `d`, and `d`'s entry: `f` and its byte are gone.
    assert_eq!(fs.usage().bytes, 2 * INODE_BYTES + ENTRY_BYTES + 1);
}

#[test]
fn unlinked_file_lives_while_open() {
    let fs = MemFs::new();
    let f = file(&fs, ROOT, "f", b"keep");
    let h = fs.open(ROOT, "f", &OpenOptions { write: true, ..OpenOptions::default() }).unwrap();
    let h2 = fs.open(ROOT, "f", &OpenOptions::read()).unwrap();
    assert_eq!(h, f);
    fs.unlink(ROOT, "f").unwrap();
    assert_eq!(fs.lookup(ROOT, "f"), Err(Error::NotFound));
    fs.append(h, b" me").unwrap();
    assert_eq!(read(&fs, h), b"keep me");
    assert_eq!(fs.metadata(h).unwrap().nlink, 0);
    // An orphan cannot get a new name (POSIX linkat without O_TMPFILE).
    assert_eq!(fs.link(h, ROOT, "back"), Err(Error::NotFound));
    fs.close(h);
    assert_eq!(read(&fs, h2), b"keep me", "one handle still open");
    fs.close(h2);
    assert_eq!(fs.metadata(f), Err(Error::NotFound));
    assert_eq!(fs.usage().inodes, 1);
    // Closing what is not open does nothing.
    fs.close(f);
}

#[test]
fn replaced_by_rename_lives_while_open() {
    let fs = MemFs::new();
    let old = file(&fs, ROOT, "target", b"old");
    file(&fs, ROOT, "new", b"new");
    let h = fs.open(ROOT, "target", &OpenOptions::read()).unwrap();
    fs.rename(ROOT, "new", ROOT, "target").unwrap();
    assert_eq!(read(&fs, h), b"old");
    fs.close(h);
    assert_eq!(fs.metadata(old), Err(Error::NotFound));
    assert_eq!(read(&fs, fs.lookup(ROOT, "target").unwrap()), b"new");
}

#[test]
fn rename_follows_posix() {
    let fs = MemFs::new();
    let a = fs.mkdir(ROOT, "a", 0o755).unwrap();
    let b = fs.mkdir(ROOT, "b", 0o755).unwrap();
    let sub = fs.mkdir(a, "sub", 0o755).unwrap();
    let f = file(&fs, ROOT, "f", b"f");
    file(&fs, ROOT, "g", b"g");
    file(&fs, sub, "deep", b"deep");

    assert_eq!(fs.rename(ROOT, "missing", ROOT, "x"), Err(Error::NotFound));
    assert_eq!(fs.rename(ROOT, "a", ROOT, "f"), Err(Error::NotDir));
    assert_eq!(fs.rename(ROOT, "f", ROOT, "a"), Err(Error::IsDir));
    assert_eq!(fs.rename(ROOT, "b", ROOT, "a"), Err(Error::NotEmpty));
    assert_eq!(fs.rename(ROOT, "a", sub, "x"), Err(Error::Invalid));
    assert_eq!(fs.rename(ROOT, "a", a, "x"), Err(Error::Invalid));
    assert_eq!(fs.rename(f, "x", ROOT, "y"), Err(Error::NotDir));
    // Onto itself, and onto another name of the same inode: nothing happens.
    fs.rename(ROOT, "f", ROOT, "f").unwrap();
    fs.link(f, ROOT, "f2").unwrap();
    fs.rename(ROOT, "f", ROOT, "f2").unwrap();
    assert_eq!(names(&fs, ROOT), ["a", "b", "f", "f2", "g"]);
    // A file replaces a file.
    fs.rename(ROOT, "g", ROOT, "f").unwrap();
    assert_eq!(read(&fs, fs.lookup(ROOT, "f").unwrap()), b"g");
    assert_eq!(fs.metadata(f).unwrap().nlink, 1, "f2 still names the old inode");
    // A directory replaces an empty directory, moving its subtree in O(1).
    fs.rename(ROOT, "a", ROOT, "b").unwrap();
    assert_eq!(fs.metadata(b), Err(Error::NotFound));
    assert_eq!(fs.lookup(ROOT, "b"), Ok(a));
    assert_eq!(fs.metadata(ROOT).unwrap().nlink, 3);
    // Across directories: link counts and the parent pointer follow.
    let c = fs.mkdir(ROOT, "c", 0o755).unwrap();
    fs.rename(a, "sub", c, "moved").unwrap();
    assert_eq!((fs.metadata(a).unwrap().nlink, fs.metadata(c).unwrap().nlink), (2, 3));
    assert_eq!(resolve(&fs, ROOT, "c/moved/../moved/deep", true).map(|i| read(&fs, i)), Ok(b"deep".to_vec()));
    fs.snapshot().check_consistency().unwrap();
}

#[test]
fn hard_links() {
    let fs = MemFs::new();
    let f = file(&fs, ROOT, "f", b"shared");
    let d = fs.mkdir(ROOT, "d", 0o755).unwrap();
    fs.link(f, d, "g").unwrap();
    assert_eq!(fs.metadata(f).unwrap().nlink, 2);
    assert_eq!(fs.link(f, d, "g"), Err(Error::Exists));
    assert_eq!(fs.link(d, ROOT, "dl"), Err(Error::NotPermitted));
    assert_eq!(fs.link(999, ROOT, "x"), Err(Error::NotFound));
    let g = fs.lookup(d, "g").unwrap();
    fs.write_at(g, 0, b"SH").unwrap();
    assert_eq!(read(&fs, f), b"SHared");
    fs.unlink(ROOT, "f").unwrap();
    assert_eq!(read(&fs, g), b"SHared");
    assert_eq!(fs.metadata(g).unwrap().nlink, 1);
}

#[test]
fn symlinks() {
    let fs = MemFs::new();
    let l = fs.symlink(ROOT, "l", "some/where").unwrap();
    let md = fs.metadata(l).unwrap();
    assert_eq!((md.kind, md.size), (FileType::Symlink, 10));
    assert_eq!(fs.readlink(l).unwrap(), "some/where");
    assert_eq!(fs.readlink(ROOT), Err(Error::Invalid));
    assert_eq!(fs.symlink(ROOT, "l", "x"), Err(Error::Exists));
    assert_eq!(fs.symlink(ROOT, "e", ""), Err(Error::NotFound));
    assert_eq!(fs.symlink(ROOT, "n", "a\0b"), Err(Error::Invalid));
    assert_eq!(fs.symlink(ROOT, "long", &"x".repeat(4097)), Err(Error::NameTooLong));
}

#[test]
fn read_dir_is_ordered_and_resumable() {
    let fs = MemFs::new();
    let d = fs.mkdir(ROOT, "d", 0o755).unwrap();
    for name in ["b", "a", "é", "B", "c"] {
        file(&fs, d, name, b"");
    }
    fs.mkdir(d, "sub", 0o755).unwrap();
    assert_eq!(names(&fs, d), ["B", "a", "b", "c", "sub", "é"]);
    let page = fs.read_dir(d, Some("a"), 2).unwrap();
    assert_eq!(page.iter().map(|e| &*e.name).collect::<Vec<_>>(), ["b", "c"]);
    assert_eq!(page[0].kind, FileType::File);
    // Entries removed or added between pages neither repeat nor shift others.
    fs.unlink(d, "b").unwrap();
    file(&fs, d, "a2", b"");
    let rest = fs.read_dir(d, Some("c"), 10).unwrap();
    assert_eq!(rest.iter().map(|e| &*e.name).collect::<Vec<_>>(), ["sub", "é"]);
    assert_eq!(rest[0].kind, FileType::Dir);
    // A cookie that no longer exists still resumes at the right place.
    assert_eq!(fs.read_dir(d, Some("b"), 1).unwrap()[0].name.as_ref(), "c");
    assert_eq!(fs.read_dir(fs.lookup(d, "a").unwrap(), None, 1), Err(Error::NotDir));
}

#[test]
fn large_directory() {
    let fs = MemFs::new();
    let d = fs.mkdir(ROOT, "big", 0o755).unwrap();
    for i in 0..50_000 {
        fs.close(fs.open(d, &format!("f{i:06}"), &OpenOptions::create_new()).unwrap());
    }
    let mut seen = 0;
    let mut cookie: Option<String> = None;
    loop {
        let page = fs.read_dir(d, cookie.as_deref(), 1000).unwrap();
        let Some(last) = page.last() else { break };
        cookie = Some(last.name.to_string());
        seen += page.len();
    }
    assert_eq!(seen, 50_000);
    assert!(fs.lookup(d, "f049999").is_ok());
    assert_eq!(fs.rmdir(ROOT, "big"), Err(Error::NotEmpty));
}

#[test]
fn times_and_modes() {
    let fs = MemFs::new();
    let f = file(&fs, ROOT, "f", b"x");
    let t = Timestamp::new(1_000, 5);
    fs.set_times(f, SetTime::At(t), SetTime::Keep).unwrap();
    let md = fs.metadata(f).unwrap();
    assert_eq!(md.atime, t);
    assert_ne!(md.mtime, t);
    fs.set_times(f, SetTime::Keep, SetTime::At(t)).unwrap();
    assert_eq!(fs.metadata(f).unwrap().mtime, t);
    fs.set_times(f, SetTime::Now, SetTime::Now).unwrap();
    assert!(fs.metadata(f).unwrap().mtime > t);
    fs.set_mode(f, 0o100_640).unwrap();
    assert_eq!(fs.metadata(f).unwrap().mode, 0o640, "only permission bits are kept");
    assert_eq!(fs.set_mode(999, 0), Err(Error::NotFound));
    // A write moves mtime; creating an entry moves its directory's mtime.
    fs.set_times(f, SetTime::At(t), SetTime::At(t)).unwrap();
    fs.write_at(f, 0, b"y").unwrap();
    assert!(fs.metadata(f).unwrap().mtime > t);
    fs.set_times(ROOT, SetTime::At(t), SetTime::At(t)).unwrap();
    file(&fs, ROOT, "g", b"");
    assert!(fs.metadata(ROOT).unwrap().mtime > t);
}

#[test]
fn clock_is_pluggable() {
    let fixed = Timestamp::new(42, 0);
    let fs = MemFs::builder().clock(std::sync::Arc::new(move || fixed)).build();
    let f = file(&fs, ROOT, "f", b"x");
    assert_eq!(fs.metadata(f).unwrap().mtime, fixed);
    assert!(system_clock()().secs > 1_600_000_000);
}

/// Sizes are counted whole, holes included: three files of the largest
/// size overflow the count, which is `NoSpace`, not a wrapped total.
#[test]
fn huge_sparse_files_cannot_wrap_the_usage() {
    let fs = MemFs::new();
    let files: Vec<_> = (0..2).map(|i| file(&fs, ROOT, &format!("f{i}"), b"")).collect();
    let names = fs.usage().bytes;
    fs.set_len(files[0], packfs_core::MAX_FILE_SIZE).unwrap();
    // Two of the largest and their names pass u64::MAX.
    assert_eq!(fs.set_len(files[1], packfs_core::MAX_FILE_SIZE), Err(Error::NoSpace));
    assert_eq!(fs.usage().bytes, names + packfs_core::MAX_FILE_SIZE);
    fs.set_len(files[0], 0).unwrap();
    fs.set_len(files[1], packfs_core::MAX_FILE_SIZE).unwrap();
}

#[test]
fn quotas_fail_without_changing_anything() {
    // Room for the root, `f` and 100 bytes.
    let fixed = 2 * INODE_BYTES + ENTRY_BYTES + 1;
    let limits = Quota { max_bytes: Some(fixed + 100), max_inodes: None };
    let fs = MemFs::builder().quota(limits).build();
    let f = file(&fs, ROOT, "f", &[1; 60]);
    let before = fs.snapshot();
    assert_eq!(fs.write_at(f, 60, &[2; 41]), Err(Error::Quota));
    assert_eq!(fs.set_len(f, 101), Err(Error::Quota));
    assert_eq!(fs.symlink(ROOT, "l", "t"), Err(Error::Quota));
    assert_eq!(read(&fs, f), [1; 60]);
    assert_eq!(fs.usage().bytes, fixed + 60);
    fs.write_at(f, 60, &[2; 40]).unwrap();
    assert_eq!(fs.usage().bytes, fixed + 100);
    // Overwriting inside the file needs no new bytes; names and links do.
    fs.write_at(f, 0, &[3; 100]).unwrap();
    assert_eq!(fs.mkdir(ROOT, "d", 0o755), Err(Error::Quota));
    assert_eq!(fs.link(f, ROOT, "g"), Err(Error::Quota));
    assert_eq!(fs.rename(ROOT, "f", ROOT, "longer"), Err(Error::Quota));
    assert_eq!(names(&fs, ROOT), ["f"]);
    fs.rename(ROOT, "f", ROOT, "g").unwrap();
    // Freeing makes room again.
    fs.unlink(ROOT, "g").unwrap();
    assert_eq!(fs.usage(), Usage { bytes: INODE_BYTES, inodes: 1 });
    fs.mkdir(ROOT, "d", 0o755).unwrap();
    // The snapshot from before is untouched by all of it.
    assert_eq!(read(&before, f), [1; 60]);

    // Inodes: the root and three more.
    let fs = MemFs::builder().quota(Quota { max_bytes: None, max_inodes: Some(4) }).build();
    let f = file(&fs, ROOT, "f", b"");
    fs.mkdir(ROOT, "d", 0o755).unwrap();
    file(&fs, ROOT, "e", b"");
    assert_eq!(fs.usage().inodes, 4);
    assert_eq!(fs.mkdir(ROOT, "d2", 0o755), Err(Error::Quota));
    assert_eq!(fs.open(ROOT, "x", &OpenOptions::create()), Err(Error::Quota));
    // A link is a name, not an inode.
    fs.link(f, ROOT, "f2").unwrap();
    assert_eq!(names(&fs, ROOT), ["d", "e", "f", "f2"]);
    fs.unlink(ROOT, "e").unwrap();
    fs.mkdir(ROOT, "d2", 0o755).unwrap();
}

/// The hostile guest of the audit: with room for 1 KiB and two inodes,
/// 300,000 links with 248-byte names all succeeded, each holding about
/// 475 bytes of the host's memory while the mount reported 1 byte used.
#[test]
fn links_and_names_are_charged_as_the_memory_they_hold() {
    let fs = MemFs::builder().quota(Quota { max_bytes: Some(1024), max_inodes: Some(2) }).build();
    let f = file(&fs, ROOT, "f", b"x");
    let mut made = 0;
    let refused = (0..300_000).find(|i| {
        let ok = fs.link(f, ROOT, &format!("{i:0>248}")).is_ok();
        made += u64::from(ok);
        !ok
    });
    assert_eq!(refused, Some(made));
    assert!(made < 2, "{made} links of 248-byte names in 1 KiB");
    assert_eq!(fs.link(f, ROOT, &"n".repeat(248)), Err(Error::Quota));
    assert!(fs.usage().bytes <= 1024, "{:?}", fs.usage());
    // Symlinks are charged their names, records and targets.
    assert_eq!(fs.symlink(ROOT, "s", "t"), Err(Error::Quota));
}

#[test]
fn snapshots_and_forks() {
    let fs = MemFs::new();
    let f = file(&fs, ROOT, "f", b"one");
    let snap = fs.snapshot();
    fs.write_at(f, 0, b"two").unwrap();
    fs.unlink(ROOT, "f").unwrap();
    assert_eq!(read(&snap, f), b"one");
    assert_eq!(snap.lookup(ROOT, "f"), Ok(f));
    assert_eq!(snap.unlink(ROOT, "f"), Err(Error::ReadOnly));
    assert_eq!(snap.open(ROOT, "f", &OpenOptions::create()), Err(Error::ReadOnly));
    // A fork is writable and independent of both.
    let fork = MemFs::fork(&snap);
    fork.write_at(f, 0, b"ONE").unwrap();
    assert_eq!(read(&fork, f), b"ONE");
    assert_eq!(read(&snap, f), b"one");
    assert_eq!(fs.lookup(ROOT, "f"), Err(Error::NotFound));
}

/// The writer reuses the version a change replaced once nobody holds it:
/// snapshots taken at every step, some dropped early and some kept, and
/// failed changes in between, must each still read as they were, while the
/// filesystem reads as the last change left it.
#[test]
fn versions_are_reused_only_when_unobserved() {
    let fs = MemFs::new();
    let f = file(&fs, ROOT, "f", b"");
    let mut kept = Vec::new();
    for i in 0..200u32 {
        let snap = fs.snapshot();
        fs.write_at(f, u64::from(i) * 4, &i.to_le_bytes()).unwrap();
        // A failing change must undo what it did to the reused copy.
        assert_eq!(fs.mkdir(ROOT, "f", 0o755), Err(Error::Exists));
        assert_eq!(fs.write_at(ROOT, 0, b"x"), Err(Error::IsDir));
        let failed = fs.batch(|t, now| {
            t.mkdir(ROOT, "half", 0o755, now)?;
            t.write_at(f, 0, b"lost", now)?;
            Err::<(), _>(Error::Invalid)
        });
        assert_eq!(failed, Err(Error::Invalid));
        file(&fs, ROOT, &format!("n{i}"), &i.to_le_bytes());
        if i % 3 == 0 {
            kept.push((i, snap));
        }
    }
    let want: Vec<u8> = (0..200u32).flat_map(u32::to_le_bytes).collect();
    assert_eq!(read(&fs, f), want);
    assert_eq!(names(&fs, ROOT).len(), 201);
    assert_eq!(fs.lookup(ROOT, "half"), Err(Error::NotFound));
    for (i, snap) in &kept {
        let i = *i as usize;
        assert_eq!(read(snap, f), want[..i * 4], "snapshot before change {i}");
        assert_eq!(snap.read_dir(ROOT, None, usize::MAX).unwrap().len(), i + 1);
        snap.check_consistency().unwrap();
    }
    fs.snapshot().check_consistency().unwrap();
}

#[test]
fn fork_drops_open_orphans() {
    let fs = MemFs::new();
    file(&fs, ROOT, "f", b"x");
    let h = fs.open(ROOT, "f", &OpenOptions::read()).unwrap();
    fs.unlink(ROOT, "f").unwrap();
    let snap = fs.snapshot();
    assert_eq!(snap.orphans(), [h]);
    let fork = MemFs::fork(&snap);
    assert_eq!(fork.metadata(h), Err(Error::NotFound));
    assert_eq!(fork.usage().inodes, 1);
    fork.snapshot().check_consistency().unwrap();
    fs.close(h);
}

#[test]
fn batch_is_atomic() {
    let fs = MemFs::new();
    let r = fs.batch(|t, now| {
        t.mkdir(ROOT, "a", 0o755, now)?;
        t.mkdir(ROOT, "a", 0o755, now) // fails: the whole batch is discarded
    });
    assert_eq!(r, Err(Error::Exists));
    assert_eq!(fs.lookup(ROOT, "a"), Err(Error::NotFound));
    fs.batch(|t, now| {
        let a = t.mkdir(ROOT, "a", 0o755, now)?;
        t.mkdir(a, "b", 0o755, now)
    })
    .unwrap();
    assert_eq!(names(&fs, ROOT), ["a"]);
}

#[test]
fn path_resolution() {
    let fs = MemFs::new();
    let a = fs.mkdir(ROOT, "a", 0o755).unwrap();
    let b = fs.mkdir(a, "b", 0o755).unwrap();
    let f = file(&fs, b, "f", b"x");
    fs.symlink(ROOT, "to_b", "a/b").unwrap();
    fs.symlink(b, "up", "../..").unwrap();
    fs.symlink(ROOT, "out", "../etc").unwrap();
    fs.symlink(ROOT, "abs", "/etc/passwd").unwrap();
    fs.symlink(ROOT, "loop1", "loop2").unwrap();
    fs.symlink(ROOT, "loop2", "loop1").unwrap();
    fs.symlink(ROOT, "dangling", "nowhere").unwrap();

    assert_eq!(resolve(&fs, ROOT, "a/b/f", true), Ok(f));
    assert_eq!(resolve(&fs, ROOT, "./a//b/./f", true), Ok(f));
    assert_eq!(resolve(&fs, ROOT, "to_b/f", true), Ok(f));
    assert_eq!(resolve(&fs, ROOT, "to_b/up/a/b/f", true), Ok(f));
    assert_eq!(resolve(&fs, ROOT, "a/b/../../a/b/f", true), Ok(f));
    assert_eq!(resolve(&fs, ROOT, ".", true), Ok(ROOT));
    assert_eq!(resolve(&fs, ROOT, "to_b", false), fs.lookup(ROOT, "to_b"));
    assert_eq!(resolve(&fs, ROOT, "to_b/", false), Ok(b), "a trailing slash follows");
    assert_eq!(resolve(&fs, ROOT, "a/b/f/", true), Err(Error::NotDir));
    assert_eq!(resolve(&fs, ROOT, "a/b/f/x", true), Err(Error::NotDir));
    // Escapes: `..` past the root, absolute paths, symlinks pointing out.
    assert_eq!(resolve(&fs, ROOT, "..", true), Err(Error::NotPermitted));
    assert_eq!(resolve(&fs, ROOT, "a/../..", true), Err(Error::NotPermitted));
    assert_eq!(resolve(&fs, ROOT, "/a", true), Err(Error::NotPermitted));
    assert_eq!(resolve(&fs, ROOT, "out", true), Err(Error::NotPermitted));
    assert_eq!(resolve(&fs, ROOT, "abs", true), Err(Error::NotPermitted));
    // The walk's root is wherever it starts: `..` above `a` escapes `a`.
    assert_eq!(resolve(&fs, a, "..", true), Err(Error::NotPermitted));
    assert_eq!(resolve(&fs, b, "up", true), Err(Error::NotPermitted));
    assert_eq!(resolve(&fs, ROOT, "loop1", true), Err(Error::Loop));
    assert_eq!(resolve(&fs, ROOT, "dangling", true), Err(Error::NotFound));
    assert_eq!(resolve(&fs, ROOT, "", true), Err(Error::NotFound));
    assert_eq!(resolve(&fs, ROOT, "a\0", true), Err(Error::Invalid));

    let p = resolve_parent(&fs, ROOT, "to_b/new").unwrap();
    assert_eq!((p.dir, &*p.name), (b, "new"));
    let p = resolve_parent(&fs, ROOT, "loop1").unwrap();
    assert_eq!((p.dir, &*p.name), (ROOT, "loop1"), "the last component is not followed");
    assert_eq!(resolve_parent(&fs, ROOT, "a/..").map(|_| ()), Err(Error::Invalid));
    assert!(resolve_parent(&fs, ROOT, "a/b/").unwrap().trailing_slash);
}

#[test]
fn symlink_chain_limit() {
    let fs = MemFs::new();
    file(&fs, ROOT, "l0", b"end");
    for i in 1..=41 {
        fs.symlink(ROOT, &format!("l{i}"), &format!("l{}", i - 1)).unwrap();
    }
    assert!(resolve(&fs, ROOT, "l40", true).is_ok(), "40 hops are allowed");
    assert_eq!(resolve(&fs, ROOT, "l41", true), Err(Error::Loop));
}

/// `read_file` and `write_file` take whole files by path, byte for byte at
/// sizes around their 64 KiB piece, through symlinks at the end as std's do,
/// and refuse directories.
#[test]
fn whole_files_by_path() {
    use packfs_core::{read_file, write_file};
    let fs = MemFs::new();
    let d = fs.mkdir(fs.root(), "d", 0o755).unwrap();
    for (i, len) in [0usize, 1, 65_535, 65_536, 65_537, (3 << 20) + 7].into_iter().enumerate() {
        let data: Vec<u8> = (0..len).map(|k| (k * 31 + i) as u8).collect();
        let path = format!("d/f{i}");
        write_file(&fs, &path, &data).unwrap();
        assert!(read_file(&fs, &path).unwrap() == data, "{len} bytes");
        // Written again, shorter: truncated, not overwritten in place.
        write_file(&fs, &path, b"short").unwrap();
        assert_eq!(read_file(&fs, &format!("/{path}")).unwrap(), b"short");
    }
    // Through a symlink at the end, to a file it creates.
    fs.symlink(d, "link", "target").unwrap();
    write_file(&fs, "d/link", b"via").unwrap();
    assert_eq!(read_file(&fs, "d/target").unwrap(), b"via");
    assert_eq!(read_file(&fs, "d/link").unwrap(), b"via");
    assert_eq!(write_file(&fs, "d", b"x"), Err(Error::IsDir));
    assert_eq!(write_file(&fs, "d/new/", b"x"), Err(Error::IsDir));
    // A name ending in `/` is refused before it is looked up, as open(2)
    // with O_CREAT: a file, a symlink to one, or a loop, as well.
    fs.symlink(d, "loop", "loop").unwrap();
    for path in ["d/f0/", "d/link/", "d/loop/"] {
        assert_eq!(write_file(&fs, path, b"x"), Err(Error::IsDir), "{path}");
    }
    assert_eq!(read_file(&fs, "d/f0").unwrap(), b"short");
    assert_eq!(read_file(&fs, "d"), Err(Error::IsDir));
    assert_eq!(read_file(&fs, "d/none"), Err(Error::NotFound));
    assert_eq!(write_file(&fs, "none/f", b"x"), Err(Error::NotFound));
    assert_eq!(read_file(&fs, "../d/f1"), Err(Error::NotPermitted));
    fs.snapshot().check_consistency().unwrap();
}
