//! The host-directory backend: every operation, and a battery of escape
//! attempts — each must fail with its typed error and leave everything
//! outside the directory unread and unwritten.

use std::os::unix::fs::symlink;
use std::path::Path;

use packfs_core::resolve::{resolve, resolve_parent};
use packfs_core::{Error, FileSystem, FileType, OpenOptions, SetTime, Timestamp};
use packfs_os::dir::DirFs;

/// `outside/` holds a secret; `root/` is what the backend serves.
struct Fixture {
    _tmp: tempfile::TempDir,
    outside: std::path::PathBuf,
    root: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    let root = tmp.path().join("root");
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir(&root).unwrap();
    std::fs::write(outside.join("secret"), b"SECRET").unwrap();
    std::fs::create_dir(root.join("sub")).unwrap();
    std::fs::write(root.join("sub/inner"), b"inner").unwrap();
    Fixture { _tmp: tmp, outside, root }
}

/// The outside directory, exactly as the fixture made it.
fn assert_outside_untouched(f: &Fixture) {
    let mut names: Vec<_> = std::fs::read_dir(&f.outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    names.sort();
    assert_eq!(names, ["secret"]);
    assert_eq!(std::fs::read(f.outside.join("secret")).unwrap(), b"SECRET");
    let md = std::fs::metadata(f.outside.join("secret")).unwrap();
    assert_eq!(md.len(), 6);
}

fn read(fs: &dyn FileSystem, path: &str) -> Result<Vec<u8>, Error> {
    let ino = resolve(fs, fs.root(), path, true)?;
    let mut buf = vec![0; fs.metadata(ino)?.size as usize];
    let n = fs.read_at(ino, 0, &mut buf)?;
    buf.truncate(n);
    Ok(buf)
}

#[test]
fn operations() {
    let f = fixture();
    let fs = DirFs::open(&f.root, false).unwrap();
    let root = fs.root();
    let sub = fs.lookup(root, "sub").unwrap();
    assert_eq!(fs.metadata(sub).unwrap().kind, FileType::Dir);
    assert_eq!(read(&fs, "sub/inner").unwrap(), b"inner");

    let h = fs.open(root, "new", &OpenOptions::create_new()).unwrap();
    assert_eq!(fs.open(root, "new", &OpenOptions::create_new()), Err(Error::Exists));
    fs.write_at(h, 2, b"ab").unwrap();
    assert_eq!(fs.append(h, b"cd"), Ok(4));
    assert_eq!(std::fs::read(f.root.join("new")).unwrap(), b"\0\0abcd");
    fs.set_len(h, 3).unwrap();
    assert_eq!(fs.metadata(h).unwrap().size, 3);
    // Unlinked while open: still readable and writable through the handle.
    fs.unlink(root, "new").unwrap();
    fs.write_at(h, 0, b"Z").unwrap();
    let mut buf = [0; 3];
    assert_eq!(fs.read_at(h, 0, &mut buf), Ok(3));
    assert_eq!(&buf, b"Z\0a");
    fs.close(h);
    assert_eq!(fs.metadata(h), Err(Error::NotFound));

    let d = fs.mkdir(root, "d", 0o750).unwrap();
    assert_eq!(fs.metadata(d).unwrap().mode, 0o750);
    assert_eq!(fs.mkdir(root, "d", 0o755), Err(Error::Exists));
    fs.close(fs.open(d, "f", &OpenOptions::create()).unwrap());
    assert_eq!(fs.rmdir(root, "d"), Err(Error::NotEmpty));
    assert_eq!(fs.unlink(root, "d"), Err(Error::IsDir));
    let names: Vec<_> = fs.read_dir(root, None, 10).unwrap().into_iter().map(|e| e.name.to_string()).collect();
    assert_eq!(names, ["d", "sub"]);
    assert_eq!(fs.read_dir(root, Some("d"), 10).unwrap()[0].name.as_ref(), "sub");

    // Rename moves what the backend remembers: the old inode numbers still work.
    let inner = resolve(&fs, root, "sub/inner", true).unwrap();
    fs.rename(root, "sub", d, "moved").unwrap();
    assert_eq!(fs.read_at(inner, 0, &mut [0; 5]), Ok(5));
    assert_eq!(read(&fs, "d/moved/inner").unwrap(), b"inner");

    let l = fs.symlink(root, "l", "d/moved/inner").unwrap();
    assert_eq!(fs.readlink(l).unwrap(), "d/moved/inner");
    assert_eq!(read(&fs, "l").unwrap(), b"inner");
    assert_eq!(fs.open(root, "l", &OpenOptions::read()), Err(Error::Loop), "final symlinks are never followed");

    fs.link(inner, root, "hard").unwrap();
    assert_eq!(fs.metadata(inner).unwrap().nlink, 2);
    assert_eq!(fs.link(d, root, "dirlink"), Err(Error::NotPermitted));

    let t = Timestamp::new(1_000_000, 5);
    fs.set_times(inner, SetTime::At(t), SetTime::At(t)).unwrap();
    let md = fs.metadata(inner).unwrap();
    assert_eq!((md.atime, md.mtime), (t, t));
    fs.set_mode(inner, 0o600).unwrap();
    assert_eq!(fs.metadata(inner).unwrap().mode, 0o600);
    fs.set_times(l, SetTime::At(t), SetTime::Keep).unwrap();
    assert_eq!(fs.metadata(inner).unwrap().atime, t);
    fs.sync(inner).unwrap();
}

/// Reads go through an fd that can read, whatever other handles of the
/// inode hold (a write-only handle, a directory-style pin).
#[test]
fn reads_while_a_writer_is_open() {
    let f = fixture();
    let fs = DirFs::open(&f.root, false).unwrap();
    let root = fs.root();
    let w = fs
        .open(root, "log", &OpenOptions { read: false, write: true, create: true, ..OpenOptions::default() })
        .unwrap();
    fs.open_ino(w).unwrap();
    fs.write_at(w, 0, b"written").unwrap();
    let mut buf = [0; 7];
    assert_eq!(fs.read_at(w, 0, &mut buf), Ok(7));
    assert_eq!(&buf, b"written");
    let r = fs.open(root, "log", &OpenOptions::read()).unwrap();
    fs.unlink(root, "log").unwrap();
    assert_eq!(fs.read_at(r, 0, &mut buf), Ok(7), "an unlinked file reads through its open fds");
    fs.close(w);
    fs.close(w);
    fs.close(r);
    // A file whose mode forbids reading still opens write-only.
    std::fs::write(f.root.join("wo"), b"").unwrap();
    std::fs::set_permissions(f.root.join("wo"), std::os::unix::fs::PermissionsExt::from_mode(0o200)).unwrap();
    let wo = fs.open(root, "wo", &OpenOptions { read: false, write: true, ..OpenOptions::default() }).unwrap();
    fs.write_at(wo, 0, b"x").unwrap();
    fs.close(wo);
}

#[test]
fn read_only_refuses_every_change() {
    let f = fixture();
    let fs = DirFs::open(&f.root, true).unwrap();
    let root = fs.root();
    let inner = resolve(&fs, root, "sub/inner", true).unwrap();
    assert_eq!(read(&fs, "sub/inner").unwrap(), b"inner");
    assert_eq!(fs.open(root, "x", &OpenOptions::create()), Err(Error::ReadOnly));
    // O_CREAT of a file that exists opens it, as Linux does on a read-only
    // mount; with O_EXCL it exists.
    let read_create = OpenOptions { create: true, ..OpenOptions::read() };
    let h = fs.open(inner_dir(&fs), "inner", &read_create).unwrap();
    assert_eq!(h, inner);
    fs.close(h);
    let exclusive = OpenOptions { exclusive: true, ..read_create };
    assert_eq!(fs.open(inner_dir(&fs), "inner", &exclusive), Err(Error::Exists));
    assert_eq!(fs.open(root, "sub", &read_create), Err(Error::IsDir));
    fs.sync(root).unwrap(); // a directory syncs through its own fd
    assert_eq!(fs.open(root, "sub", &OpenOptions { write: true, ..OpenOptions::default() }), Err(Error::ReadOnly));
    assert_eq!(fs.write_at(inner, 0, b"x"), Err(Error::ReadOnly));
    assert_eq!(fs.set_len(inner, 0), Err(Error::ReadOnly));
    assert_eq!(fs.mkdir(root, "x", 0o755), Err(Error::ReadOnly));
    assert_eq!(fs.unlink(root, "sub"), Err(Error::ReadOnly));
    assert_eq!(fs.rename(root, "sub", root, "x"), Err(Error::ReadOnly));
    assert_eq!(fs.set_mode(inner, 0o777), Err(Error::ReadOnly));
    assert_eq!(std::fs::read(f.root.join("sub/inner")).unwrap(), b"inner");
}

fn inner_dir(fs: &DirFs) -> packfs_core::Ino {
    resolve(fs, fs.root(), "sub", true).unwrap()
}

/// Fifos and devices are not PackFS objects: refused before they could
/// block the host (a fifo's open waits for a writer) or take a terminal.
#[test]
fn fifos_are_refused_without_blocking() {
    let f = fixture();
    rustix::fs::mknodat(rustix::fs::CWD, f.root.join("fifo"), rustix::fs::FileType::Fifo, 0o644.into(), 0).unwrap();
    let fs = DirFs::open(&f.root, false).unwrap();
    let root = fs.root();
    assert_eq!(fs.open(root, "fifo", &OpenOptions::read()), Err(Error::Unsupported));
    assert_eq!(fs.open(root, "fifo", &OpenOptions { write: true, ..OpenOptions::default() }), Err(Error::Unsupported));
    let ino = fs.lookup(root, "fifo").unwrap();
    assert_eq!(fs.read_at(ino, 0, &mut [0; 4]), Err(Error::Unsupported));
    assert_eq!(fs.metadata(ino), Err(Error::Unsupported));
}

/// An open file that lost its name is still reached through its handle:
/// times, mode and sync included.
#[test]
fn an_unlinked_open_file_keeps_working() {
    let f = fixture();
    let fs = DirFs::open(&f.root, false).unwrap();
    let root = fs.root();
    let h = fs.open(root, "f", &OpenOptions::create()).unwrap();
    fs.write_at(h, 0, b"data").unwrap();
    fs.unlink(root, "f").unwrap();
    let t = Timestamp::new(1_000_000, 5);
    fs.set_times(h, SetTime::At(t), SetTime::At(t)).unwrap();
    fs.set_mode(h, 0o600).unwrap();
    fs.sync(h).unwrap();
    let md = fs.metadata(h).unwrap();
    assert_eq!((md.mtime, md.atime, md.mode, md.nlink), (t, t, 0o600, 0));
    assert_eq!(fs.append(h, b"+").unwrap(), 4);
    fs.close(h);
}

/// Appends through several handles at once never overwrite each other,
/// and each is told where its bytes went.
#[test]
fn concurrent_appends_keep_every_byte() {
    let f = fixture();
    let fs = std::sync::Arc::new(DirFs::open(&f.root, false).unwrap());
    let ino = fs.open(fs.root(), "log", &OpenOptions::create()).unwrap();
    let threads: Vec<_> = (0..4u8)
        .map(|t| {
            let fs = fs.clone();
            std::thread::spawn(move || {
                let h = fs.open(fs.root(), "log", &OpenOptions { append: true, ..OpenOptions::default() }).unwrap();
                let at: Vec<u64> = (0..200).map(|_| fs.append(h, &[b'a' + t; 8]).unwrap()).collect();
                fs.close(h);
                (t, at)
            })
        })
        .collect();
    let mut offsets = Vec::new();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let content = std::fs::read(f.root.join("log")).unwrap();
    assert_eq!(content.len(), 4 * 200 * 8);
    for (t, at) in results {
        for o in at {
            assert_eq!(&content[o as usize..o as usize + 8], &[b'a' + t; 8], "append at {o}");
            offsets.push(o);
        }
    }
    offsets.sort();
    offsets.dedup();
    assert_eq!(offsets.len(), 800);
    fs.close(ino);
}

#[test]
fn escape_attempts() {
    let f = fixture();
    symlink(f.outside.join("secret"), f.root.join("abs")).unwrap();
    symlink("../outside/secret", f.root.join("rel")).unwrap();
    symlink("../outside", f.root.join("reldir")).unwrap();
    symlink(&f.outside, f.root.join("absdir")).unwrap();
    symlink("../outside/new", f.root.join("dangling")).unwrap();
    symlink("loop2", f.root.join("loop1")).unwrap();
    symlink("loop1", f.root.join("loop2")).unwrap();
    // A hard link planted by the host to an outside file is that file: the
    // guest can read it (as with any host tool), but never make one.
    let fs = DirFs::open(&f.root, false).unwrap();
    let root = fs.root();

    for path in ["..", "../outside/secret", "sub/../../outside/secret", "abs", "rel", "reldir/secret", "absdir/secret"]
    {
        assert_eq!(read(&fs, path), Err(Error::NotPermitted), "{path}");
    }
    assert_eq!(read(&fs, "/etc/passwd"), Err(Error::NotPermitted));
    assert_eq!(read(&fs, "loop1"), Err(Error::Loop));
    // Opening a symlink itself never follows it, for reading or creating.
    for name in ["abs", "rel", "dangling"] {
        assert_eq!(fs.open(root, name, &OpenOptions::read()), Err(Error::Loop), "{name}");
        assert_eq!(fs.open(root, name, &OpenOptions::create()), Err(Error::Loop), "{name}");
    }
    assert_eq!(fs.open(root, "reldir", &OpenOptions::directory()), Err(Error::NotDir));
    // Creating through a directory symlink: refused before reaching the kernel.
    assert_eq!(resolve_parent(&fs, root, "reldir/x").map(|_| ()), Err(Error::NotPermitted));
    // Names the backend is handed directly are single components.
    for bad in ["..", ".", "a/b", "../outside", "x\0y"] {
        assert_eq!(fs.lookup(root, bad), Err(Error::Invalid), "{bad:?}");
        assert_eq!(fs.mkdir(root, bad, 0o755), Err(Error::Invalid), "{bad:?}");
    }
    assert_eq!(fs.mkdir(root, &"n".repeat(256), 0o755), Err(Error::NameTooLong));
    let deep = "d/".repeat(2100);
    assert_eq!(read(&fs, &deep), Err(Error::NameTooLong));
    // No absolute symlink may be planted for the host to trip over later.
    assert_eq!(fs.symlink(root, "evil", "/etc/passwd"), Err(Error::NotPermitted));
    // Hard links can only name inodes the guest already reached inside.
    assert_eq!(resolve(&fs, root, "rel", true), Err(Error::NotPermitted));
    assert_outside_untouched(&f);
}

#[test]
fn symlink_swapped_in_mid_walk() {
    let f = fixture();
    std::fs::create_dir(f.root.join("sub/deeper")).unwrap();
    std::fs::write(f.root.join("sub/deeper/file"), b"mine").unwrap();
    let fs = DirFs::open(&f.root, false).unwrap();
    let root = fs.root();
    // The guest holds directory handles and a file deep inside `sub`...
    let sub = fs.lookup(root, "sub").unwrap();
    let deeper = fs.lookup(sub, "deeper").unwrap();
    let file = fs.lookup(deeper, "file").unwrap();
    // ...when another process swaps `sub` for a symlink to the outside,
    // where a look-alike tree waits.
    std::fs::create_dir(f.outside.join("deeper")).unwrap();
    std::fs::write(f.outside.join("deeper/file"), b"SECRET").unwrap();
    std::fs::rename(f.root.join("sub"), f.root.join("sub.old")).unwrap();
    symlink("../outside", f.root.join("sub")).unwrap();
    // Walking through the swapped component is an escape the kernel stops.
    assert_eq!(fs.lookup(deeper, "file"), Err(Error::NotPermitted));
    assert_eq!(fs.read_dir(deeper, None, 10), Err(Error::NotPermitted));
    assert_eq!(fs.open(deeper, "file", &OpenOptions::read()), Err(Error::NotPermitted));
    assert_eq!(fs.open(deeper, "planted", &OpenOptions::create()), Err(Error::NotPermitted));
    assert_eq!(fs.mkdir(deeper, "planted", 0o755), Err(Error::NotPermitted));
    assert_eq!(fs.symlink(deeper, "planted", "x"), Err(Error::NotPermitted));
    assert_eq!(fs.unlink(deeper, "file"), Err(Error::NotPermitted));
    assert_eq!(fs.rename(root, "sub.old", deeper, "planted"), Err(Error::NotPermitted));
    assert_eq!(fs.read_at(file, 0, &mut [0; 8]), Err(Error::NotPermitted));
    assert_eq!(fs.write_at(file, 0, b"pwned"), Err(Error::NotPermitted));
    assert_eq!(fs.set_mode(file, 0o777), Err(Error::NotPermitted));
    // The swapped component itself is no longer the directory held: gone.
    assert_eq!(fs.lookup(sub, "deeper"), Err(Error::NotFound));
    assert_eq!(fs.mkdir(sub, "planted", 0o755), Err(Error::NotFound));
    // An absolute symlink swapped in fails the same way.
    std::fs::remove_file(f.root.join("sub")).unwrap();
    symlink(&f.outside, f.root.join("sub")).unwrap();
    assert_eq!(fs.lookup(deeper, "file"), Err(Error::NotPermitted));
    // A directory swapped for a look-alike is not the one the guest held.
    std::fs::remove_file(f.root.join("sub")).unwrap();
    std::fs::create_dir_all(f.root.join("sub/deeper")).unwrap();
    std::fs::write(f.root.join("sub/deeper/file"), b"impostor").unwrap();
    assert_eq!(fs.read_dir(deeper, None, 10), Err(Error::NotFound));
    assert_eq!(fs.read_at(file, 0, &mut [0; 8]), Err(Error::NotFound));
    // Outside, only what the other process put there, untouched.
    assert_eq!(std::fs::read(f.outside.join("deeper/file")).unwrap(), b"SECRET");
    let planted: Vec<_> = std::fs::read_dir(f.outside.join("deeper")).unwrap().collect();
    assert_eq!(planted.len(), 1);
    std::fs::remove_dir_all(f.outside.join("deeper")).unwrap();
    assert_outside_untouched(&f);
}

#[test]
fn cannot_start_outside() {
    assert!(DirFs::open(Path::new("/definitely/not/here"), false).is_err());
}

fn names(entries: &[packfs_core::DirEntry]) -> Vec<String> {
    entries.iter().map(|e| e.name.to_string()).collect()
}

/// Listing page by page while the directory changes: every name there
/// throughout comes exactly once, in order; none that never existed comes;
/// a new listing sees the directory as it is.
#[test]
fn paged_listing_while_the_directory_changes() {
    let f = fixture();
    let fs = DirFs::open(&f.root, false).unwrap();
    let d = fs.mkdir(fs.root(), "big", 0o755).unwrap();
    let name = |i: usize| format!("f{i:04}");
    for i in (0..1000).step_by(2) {
        std::fs::write(f.root.join("big").join(name(i)), b"").unwrap();
    }
    let mut seen: Vec<String> = Vec::new();
    let mut after: Option<String> = None;
    let mut round = 0;
    loop {
        let page = fs.read_dir(d, after.as_deref(), 7).unwrap();
        if page.is_empty() {
            break;
        }
        assert!(page.len() <= 7);
        seen.extend(names(&page));
        after = Some(seen.last().unwrap().clone());
        // Changes behind the backend's back and through it, on both
        // sides of the cursor.
        round += 1;
        std::fs::write(f.root.join("big").join(name(2 * round + 1)), b"").unwrap();
        std::fs::write(f.root.join("big").join(name(999 - 2 * round)), b"").unwrap();
        fs.close(fs.open(d, &format!("new{round}"), &OpenOptions::create()).unwrap());
        if round % 3 == 0 {
            fs.unlink(d, &name(2 * round)).unwrap(); // listed already, or soon
        }
    }
    let mut sorted = seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted, seen, "in order, each once");
    // Everything there from start to end: the even names never unlinked.
    for i in (0..1000).step_by(2).filter(|i| !(i % 6 == 0 && *i > 0 && i / 2 <= round)) {
        assert!(seen.contains(&name(i)), "{} missing", name(i));
    }
    for n in &seen {
        let made = match (n.strip_prefix('f'), n.strip_prefix("new")) {
            (Some(i), _) => i.parse::<usize>().is_ok_and(|i| i < 1000 && name(i) == *n),
            (_, Some(k)) => k.parse::<usize>().is_ok_and(|k| (1..=round).contains(&k)),
            _ => false,
        };
        assert!(made, "{n} never existed");
    }
    // A new listing reads the directory afresh.
    let mut now: Vec<String> =
        std::fs::read_dir(f.root.join("big")).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    now.sort();
    assert_eq!(names(&fs.read_dir(d, None, usize::MAX).unwrap()), now);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Random renames of files and directories (onto new names and onto
    /// existing files): every inode number handed out still names its own
    /// inode wherever it went, and a replaced file's number is `NotFound`.
    #[test]
    fn inode_numbers_follow_renames(moves in proptest::collection::vec((0..12usize, 0..12usize, 0..4usize), 1..40)) {
        let f = fixture();
        let fs = DirFs::open(&f.root, false).unwrap();
        let root = fs.root();
        // Three directories (a, a/b, c) and files in each.
        let a = fs.mkdir(root, "a", 0o755).unwrap();
        let b = fs.mkdir(a, "b", 0o755).unwrap();
        let c = fs.mkdir(root, "c", 0o755).unwrap();
        let dirs = [root, a, b, c];
        for (k, &dir) in dirs.iter().enumerate() {
            for j in 0..3 {
                let h = fs.open(dir, &format!("n{j}"), &OpenOptions::create()).unwrap();
                fs.write_at(h, 0, format!("{k}{j}").as_bytes()).unwrap();
                fs.close(h);
            }
        }
        // Every inode known by number, with its content (files) or kind.
        let mut known: Vec<(u64, Option<Vec<u8>>)> = vec![(a, None), (b, None), (c, None)];
        for &dir in &dirs {
            for e in fs.read_dir(dir, None, usize::MAX).unwrap() {
                if e.kind == FileType::File {
                    let mut buf = vec![0; 8];
                    let n = fs.read_at(e.ino, 0, &mut buf).unwrap();
                    buf.truncate(n);
                    known.push((e.ino, Some(buf)));
                }
            }
        }
        let mut gone = Vec::new();
        for (from, to, to_dir) in moves {
            let (from_dir, to_dir) = (dirs[from % 4], dirs[to_dir]);
            if gone.contains(&from_dir) || gone.contains(&to_dir) {
                continue; // an emptied directory another one replaced
            }
            let listed = fs.read_dir(from_dir, None, usize::MAX).unwrap();
            let Some(e) = listed.get(from / 4 % listed.len().max(1)).cloned() else { continue };
            let target = format!("n{}", to % 3 + 3 * (to / 3 % 2));
            let replaced = fs.lookup(to_dir, &target).ok().filter(|&ino| ino != e.ino);
            match fs.rename(from_dir, &e.name, to_dir, &target) {
                Ok(()) => gone.extend(replaced),
                // Into its own subtree, a directory onto a file or a
                // non-empty one: refused, nothing moved.
                Err(Error::Invalid | Error::NotDir | Error::IsDir | Error::NotEmpty | Error::Exists) => {}
                Err(other) => panic!("rename {} -> {target}: {other:?}", e.name),
            }
        }
        for (ino, content) in &known {
            if gone.contains(ino) {
                proptest::prop_assert_eq!(fs.metadata(*ino), Err(Error::NotFound));
                continue;
            }
            let md = fs.metadata(*ino).unwrap();
            proptest::prop_assert_eq!(md.ino, *ino);
            if let Some(content) = content {
                let mut buf = vec![0; 8];
                let n = fs.read_at(*ino, 0, &mut buf).unwrap();
                proptest::prop_assert_eq!(&buf[..n], &content[..]);
            } else {
                proptest::prop_assert_eq!(md.kind, FileType::Dir);
                fs.read_dir(*ino, None, usize::MAX).unwrap();
            }
        }
    }
}

/// Pages served from a listing read earlier do not put back where entries
/// were: an entry renamed (or unlinked) mid-listing is found where it went.
#[test]
fn later_pages_do_not_undo_renames() {
    let f = fixture();
    let fs = DirFs::open(&f.root, false).unwrap();
    let root = fs.root();
    let d = fs.mkdir(root, "d", 0o755).unwrap();
    let e = fs.mkdir(root, "e", 0o755).unwrap();
    for name in ["a", "b", "c"] {
        fs.close(fs.open(d, name, &OpenOptions::create()).unwrap());
    }
    let sub = fs.mkdir(d, "sub", 0o755).unwrap();
    fs.close(fs.open(sub, "inner", &OpenOptions::create()).unwrap());
    assert_eq!(names(&fs.read_dir(d, None, 2).unwrap()), ["a", "b"]);
    let c = fs.lookup(d, "c").unwrap();
    fs.rename(d, "c", e, "z").unwrap();
    fs.rename(d, "sub", e, "sub2").unwrap();
    // The rest of the listing, as it was read.
    assert_eq!(names(&fs.read_dir(d, Some("b"), 2).unwrap()), ["c", "sub"]);
    assert!(fs.read_dir(d, Some("sub"), 2).unwrap().is_empty());
    assert_eq!(fs.metadata(c).unwrap().ino, c);
    assert_eq!(fs.metadata(sub).unwrap().kind, FileType::Dir);
    assert_eq!(names(&fs.read_dir(sub, None, 10).unwrap()), ["inner"]);
    // And a new listing shows what is there now.
    assert_eq!(names(&fs.read_dir(d, None, 10).unwrap()), ["a", "b"]);
}

/// A host directory as an overlay's lower: changes deep in it stay in
/// memory, and the directory on disk is untouched.
#[test]
fn overlay_over_a_host_directory() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
    std::fs::write(tmp.path().join("a/b/c.txt"), b"disk").unwrap();
    let lower = std::sync::Arc::new(DirFs::open(tmp.path(), true).unwrap());
    let fs = packfs_core::MemFs::overlay(lower).unwrap();
    let b = resolve(&fs, fs.root(), "a/b", true).unwrap();
    assert_eq!(fs.parent(b), resolve(&fs, fs.root(), "a", true));
    let f = fs.open(b, "new.txt", &OpenOptions::create()).unwrap();
    fs.write_at(f, 0, b"memory").unwrap();
    fs.close(f);
    let c = resolve(&fs, fs.root(), "a/b/c.txt", true).unwrap();
    fs.write_at(c, 0, b"DISK").unwrap();
    let mut buf = [0; 4];
    fs.read_at(c, 0, &mut buf).unwrap();
    assert_eq!(&buf, b"DISK");
    fs.rename(b, "c.txt", fs.root(), "moved.txt").unwrap();
    assert_eq!(names(&fs.read_dir(b, None, 10).unwrap()), ["new.txt"]);
    fs.snapshot().check_consistency().unwrap();
    assert_eq!(std::fs::read(tmp.path().join("a/b/c.txt")).unwrap(), b"disk");
    assert!(!tmp.path().join("a/b/new.txt").exists());
}

/// Lookups racing renames in one process never leave a place behind that
/// the last rename moved: once both are done, the inode is where it is.
#[test]
fn lookups_racing_renames_keep_places_right() {
    let f = fixture();
    let fs = std::sync::Arc::new(DirFs::open(&f.root, false).unwrap());
    let root = fs.root();
    let d = fs.mkdir(root, "d", 0o755).unwrap();
    for _ in 0..100 {
        let mover = {
            let fs = fs.clone();
            std::thread::spawn(move || {
                for i in 0..20 {
                    let (from, to) = if i % 2 == 0 { ("d", "e") } else { ("e", "d") };
                    fs.rename(root, from, root, to).unwrap();
                }
            })
        };
        for _ in 0..40 {
            for name in ["d", "e"] {
                if let Ok(ino) = fs.lookup(root, name) {
                    assert_eq!(ino, d);
                }
            }
        }
        mover.join().unwrap();
        assert_eq!(fs.metadata(d).map(|m| m.ino), Ok(d), "d is found where it is");
    }
}
