//! The mount table: dispatch, nesting, containment, listings, and changes
//! while readers walk.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use packfs_core::mount::{MountTable, Node};
use packfs_core::{Error, FileSystem, MemFs, OpenOptions};

fn put(node: &Node, name: &str, data: &[u8]) {
    let f = node.fs.open(node.ino, name, &OpenOptions::create()).unwrap();
    node.fs.write_at(f, 0, data).unwrap();
    node.fs.close(f);
}

fn get(t: &MountTable, path: &str) -> Result<Vec<u8>, Error> {
    let n = t.resolve(&t.root(), path, true)?;
    let mut buf = vec![0; n.fs.metadata(n.ino)?.size as usize];
    n.fs.read_at(n.ino, 0, &mut buf)?;
    Ok(buf)
}

fn names(t: &MountTable, path: &str) -> Vec<String> {
    let n = t.resolve(&t.root(), path, true).unwrap();
    t.read_dir(&n, None, usize::MAX).unwrap().iter().map(|e| e.name.to_string()).collect()
}

/// Root: a/ (with file "f" and dir "b/"), "z" file. Mounts: /a/b, /a/b/c, /tmp.
fn table() -> MountTable {
    let root = MemFs::new();
    let a = root.mkdir(root.root(), "a", 0o755).unwrap();
    root.mkdir(a, "b", 0o755).unwrap();
    let t = MountTable::new(Arc::new(root), false);
    put(&t.resolve(&t.root(), "a", true).unwrap(), "f", b"root:a/f");
    put(&t.root(), "z", b"root:z");
    t.mount("/a/b", Arc::new(MemFs::new()), false).unwrap();
    put(&t.resolve(&t.root(), "a/b", true).unwrap(), "g", b"ab:g");
    t.mount("/a/b/c", Arc::new(MemFs::new()), false).unwrap();
    put(&t.resolve(&t.root(), "a/b/c", true).unwrap(), "h", b"abc:h");
    t.mount("/tmp", Arc::new(MemFs::new()), true).unwrap();
    t
}

#[test]
fn dispatch_picks_the_deepest_mount() {
    let t = table();
    assert_eq!(get(&t, "a/f").unwrap(), b"root:a/f");
    assert_eq!(get(&t, "a/b/g").unwrap(), b"ab:g");
    assert_eq!(get(&t, "a/b/c/h").unwrap(), b"abc:h");
    assert_eq!(t.resolve(&t.root(), "a/b/c", true).unwrap().mount, 2);
    // `..` walks back out of a mount into its parent.
    assert_eq!(get(&t, "a/b/c/../../f").unwrap(), b"root:a/f");
    assert_eq!(get(&t, "a/b/c/../g").unwrap(), b"ab:g");
    assert_eq!(t.resolve(&t.root(), "a/b/c/../../../..", true).map(|_| ()), Err(Error::NotPermitted));
}

#[test]
fn mount_points_appear_in_listings() {
    let t = table();
    assert_eq!(names(&t, "."), ["a", "tmp", "z"], "tmp does not exist below, yet is listed");
    assert_eq!(names(&t, "a"), ["b", "f"], "b is listed once, as the mount");
    assert_eq!(names(&t, "a/b"), ["c", "g"]);
    // Paging through with a cookie merges the same way.
    let root = t.root();
    let mut all = Vec::new();
    loop {
        let page = t.read_dir(&root, all.last().map(|s: &String| s.as_str()), 1).unwrap();
        let Some(e) = page.first() else { break };
        all.push(e.name.to_string());
    }
    assert_eq!(all, ["a", "tmp", "z"]);
}

#[test]
fn symlinks_cross_mounts_but_never_the_root() {
    let t = table();
    let ab = t.resolve(&t.root(), "a/b", true).unwrap();
    ab.fs.symlink(ab.ino, "up", "../f").unwrap();
    ab.fs.symlink(ab.ino, "out", "../../..").unwrap();
    assert_eq!(get(&t, "a/b/up").unwrap(), b"root:a/f");
    assert_eq!(get(&t, "a/b/out").map(|_| ()), Err(Error::NotPermitted));
    // Walks started inside a mount are contained by where they start.
    assert_eq!(t.resolve(&ab, "up", true).map(|_| ()), Err(Error::NotPermitted));
    assert_eq!(t.resolve(&ab, "c/h", true).map(|n| n.mount), Ok(2));
}

#[test]
fn mount_errors() {
    let t = table();
    assert_eq!(t.mount("/a/b", Arc::new(MemFs::new()), false), Err(Error::Exists));
    assert_eq!(t.mount("/z", Arc::new(MemFs::new()), false), Err(Error::NotDir));
    assert_eq!(t.mount("/nope/x", Arc::new(MemFs::new()), false), Err(Error::NotFound));
    assert_eq!(t.mount("relative", Arc::new(MemFs::new()), false), Err(Error::Invalid));
    assert_eq!(t.mount("/", Arc::new(MemFs::new()), false), Err(Error::Invalid));
    assert_eq!(t.unmount("/a").map(|_| ()), Err(Error::Invalid), "not a mount point");
    assert_eq!(t.unmount("/a/b").map(|_| ()), Err(Error::Busy), "/a/b/c is inside");
    t.unmount("/a/b/c").unwrap();
    t.unmount("/a/b").unwrap();
    assert_eq!(names(&t, "a/b"), Vec::<String>::new(), "the directory below shows again");
    assert_eq!(t.len(), 2);
}

#[test]
fn changes_respect_mount_boundaries() {
    let t = table();
    let root = t.root();
    let a = t.resolve(&root, "a", true).unwrap();
    let ab = t.resolve(&root, "a/b", true).unwrap();
    let tmp = t.resolve(&root, "tmp", true).unwrap();
    assert_eq!(t.rename(&a, "f", &ab, "f"), Err(Error::CrossDevice));
    let f = t.resolve(&root, "a/f", true).unwrap();
    assert_eq!(t.link(&f, &ab, "f"), Err(Error::CrossDevice));
    assert_eq!(t.rename(&a, "b", &a, "b2"), Err(Error::Busy));
    assert_eq!(t.rmdir(&a, "b"), Err(Error::Busy));
    assert_eq!(t.unlink(&tmp, "x"), Err(Error::ReadOnly));
    t.rename(&a, "f", &root, "f2").unwrap();
    assert_eq!(get(&t, "f2").unwrap(), b"root:a/f");
    t.link(&f, &a, "again").unwrap();
    t.unlink(&a, "again").unwrap();
}

/// A directory that holds a mount point is not empty, whatever the
/// filesystem below says: removing or replacing it would strand the mount.
#[test]
fn mount_points_keep_their_directory() {
    let root = MemFs::new();
    root.mkdir(root.root(), "d", 0o755).unwrap();
    root.mkdir(root.root(), "other", 0o755).unwrap();
    let t = MountTable::new(Arc::new(root), false);
    t.mount("/d/m", Arc::new(MemFs::new()), false).unwrap(); // no d/m below
    let top = t.root();
    assert_eq!(names(&t, "d"), ["m"]);
    assert_eq!(t.rmdir(&top, "d"), Err(Error::NotEmpty));
    assert_eq!(t.rename(&top, "other", &top, "d"), Err(Error::NotEmpty));
    t.rename(&top, "d", &top, "d").unwrap(); // onto itself: nothing happens
    put(&top, "plain", b"p");
    assert_eq!(t.rename(&top, "plain", &top, "d"), Err(Error::IsDir), "a file onto a directory");
    let d = t.resolve(&top, "d", true).unwrap();
    put(&top, "file", b"x");
    let file = t.resolve(&top, "file", true).unwrap();
    assert_eq!(t.link(&file, &d, "m"), Err(Error::Exists), "the name is the mount's");
    t.rename(&top, "d", &top, "e").unwrap(); // moving it moves the mount
    assert_eq!(get(&t, "e/m").map(|_| ()), Err(Error::IsDir));
    t.unmount("/e/m").unwrap();
    t.rmdir(&top, "e").unwrap();
}

/// A mount with handles open through the table stays until they close:
/// closing one afterwards could not reach its filesystem.
#[test]
fn open_handles_keep_a_mount() {
    let t = MountTable::new(Arc::new(MemFs::new()), false);
    let inner = Arc::new(MemFs::new());
    t.mount("/m", inner.clone(), false).unwrap();
    let m = t.resolve(&t.root(), "m", true).unwrap();
    let top = t.root().ino;
    let f = FileSystem::open(&t, FileSystem::lookup(&t, top, "m").unwrap(), "f", &OpenOptions::create()).unwrap();
    let d = FileSystem::open(&t, top, "m", &OpenOptions::read()).unwrap(); // the mount point itself
    assert_eq!(t.unmount("/m").map(|_| ()), Err(Error::Busy));
    FileSystem::close(&t, f);
    assert_eq!(t.unmount("/m").map(|_| ()), Err(Error::Busy), "the mount point is still open");
    FileSystem::open_ino(&t, d).unwrap();
    FileSystem::close(&t, d);
    FileSystem::close(&t, d);
    // A failed open counts nothing.
    assert!(FileSystem::open(&t, FileSystem::lookup(&t, top, "m").unwrap(), "none", &OpenOptions::read()).is_err());
    assert!(t.unmount("/m").is_ok());
    assert_eq!(m.fs.lookup(m.ino, "f").map(|_| ()), Ok(()), "the unmounted filesystem keeps its files");
    assert_eq!(FileSystem::open_ino(&t, d), Err(Error::NotFound), "no handle opens into a mount that is gone");
}

#[test]
fn a_mount_follows_its_directory() {
    let root = MemFs::new();
    root.mkdir(root.root(), "d", 0o755).unwrap();
    let root = Arc::new(root);
    let t = MountTable::new(root.clone(), false);
    t.mount("/d/m", Arc::new(MemFs::new()), false).unwrap();
    root.rename(root.root(), "d", root.root(), "e").unwrap();
    assert_eq!(t.resolve(&t.root(), "e/m", true).unwrap().mount, 1);
    assert_eq!(t.resolve(&t.root(), "d/m", true).map(|_| ()), Err(Error::NotFound));
}

#[test]
fn readers_walk_while_mounts_change() {
    let t = Arc::new(table());
    let done = Arc::new(AtomicBool::new(false));
    let walked = Arc::new(AtomicU64::new(0));
    let reader = {
        let (t, done, walked) = (t.clone(), done.clone(), walked.clone());
        std::thread::spawn(move || {
            let mut walks = 0u64;
            while !done.load(Ordering::Relaxed) {
                // Either the mount is there (and holds "h") or it is not (and
                // the name is missing below): never anything in between.
                match get(&t, "a/b/c/h") {
                    Ok(data) => assert_eq!(data, b"abc:h"),
                    Err(e) => assert_eq!(e, Error::NotFound),
                }
                walks += 1;
                walked.store(walks, Ordering::Relaxed);
            }
            walks
        })
    };
    // Keep changing until the reader has walked a good while alongside.
    let mut changes = 0;
    while changes < 2_000 || walked.load(Ordering::Relaxed) < 2_000 {
        changes += 1;
        let fs: Arc<dyn FileSystem> = t.unmount("/a/b/c").unwrap();
        t.mount("/a/b/c", fs, false).unwrap();
    }
    done.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
}

/// The table as one `FileSystem`: paths resolve across mounts with the same
/// walker as any backend, inode numbers carry the mount, and the boundary
/// rules hold through the trait.
#[test]
fn the_table_is_a_filesystem() {
    use packfs_core::mount::INO_BITS;
    use packfs_core::resolve::resolve;
    let t = table();
    let fs: &dyn FileSystem = &t;
    let root = fs.root();
    let h = resolve(fs, root, "a/b/c/h", true).unwrap();
    assert_eq!(h >> INO_BITS, 2, "the mount id rides above the backend's number");
    let mut buf = [0; 5];
    assert_eq!(fs.read_at(h, 0, &mut buf), Ok(5));
    assert_eq!(&buf, b"abc:h");
    assert_eq!(fs.metadata(h).unwrap().ino, h);
    assert_eq!(resolve(fs, root, "a/b/c/../../f", true).map(|i| i >> INO_BITS), Ok(0));
    // Listings carry the right mount in every number.
    let a = resolve(fs, root, "a", true).unwrap();
    let entries = fs.read_dir(a, None, 10).unwrap();
    assert_eq!(entries.iter().map(|e| (&*e.name, e.ino >> INO_BITS)).collect::<Vec<_>>(), [("b", 1), ("f", 0)]);
    assert_eq!(entries[0].ino, resolve(fs, root, "a/b", true).unwrap());
    // Opening a mount point opens the mounted root; creating over it fails.
    assert_eq!(fs.open(a, "b", &OpenOptions::directory()), Ok(entries[0].ino));
    fs.close(entries[0].ino);
    assert_eq!(fs.open(a, "b", &OpenOptions::create_new()), Err(Error::Exists));
    assert_eq!(fs.mkdir(a, "b", 0o755), Err(Error::Exists));
    // Changes: across mounts, on read-only mounts, of mount points.
    let ab = entries[0].ino;
    assert_eq!(fs.rename(a, "f", ab, "f"), Err(Error::CrossDevice));
    let f = fs.lookup(a, "f").unwrap();
    assert_eq!(fs.link(f, ab, "f"), Err(Error::CrossDevice));
    assert_eq!(fs.rmdir(a, "b"), Err(Error::Busy));
    let tmp = fs.lookup(root, "tmp").unwrap();
    assert_eq!(fs.open(tmp, "x", &OpenOptions::create()), Err(Error::ReadOnly));
    assert_eq!(fs.mkdir(tmp, "x", 0o755), Err(Error::ReadOnly));
    // Ordinary changes inside a mount go through.
    let g = fs.open(ab, "new", &OpenOptions::create_new()).unwrap();
    fs.write_at(g, 0, b"via table").unwrap();
    fs.close(g);
    assert_eq!(get(&t, "a/b/new").unwrap(), b"via table");
    fs.rename(ab, "new", ab, "renamed").unwrap();
    assert!(resolve(fs, root, "a/b/renamed", true).is_ok());
}

/// A pack writer walking a table writes the namespace as the guest sees it.
#[test]
fn a_table_compacts_into_one_pack() {
    use packfs_core::pack::{PackFs, write_pack};
    let t = table();
    let mut bytes = Vec::new();
    write_pack(&t, &mut bytes).unwrap();
    let pack = PackFs::open(bytes).unwrap();
    let ino = packfs_core::resolve::resolve(&pack, pack.root(), "a/b/c/h", true).unwrap();
    let mut buf = [0; 5];
    pack.read_at(ino, 0, &mut buf).unwrap();
    assert_eq!(&buf, b"abc:h");
}
