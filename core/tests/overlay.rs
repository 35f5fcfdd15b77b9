//! Overlay behaviour the model test cannot see: what reaches the lower, when
//! bytes are copied, and inode identity across adoption and copy-up.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use packfs_core::mem::{ENTRY_BYTES, INODE_BYTES, LOWER_TAG, Quota, ROOT};
use packfs_core::resolve::resolve;
use packfs_core::{
    BackendFault, DirEntry, Error, FileSystem, Ino, MemFs, Metadata, OpenOptions, Result, SetTime, Snapshot,
};

/// A lower filesystem that counts the bytes read from it and the entries
/// listed (read-only: the trait's defaults refuse every change).
struct Counting {
    inner: Snapshot,
    bytes_read: AtomicUsize,
    entries_listed: AtomicUsize,
    /// Report every directory with one link, as btrfs does.
    dirs_uncounted: bool,
    /// List from the start whatever `after` says: a broken lower.
    stuck: bool,
    /// List each page backwards: a broken lower.
    backwards: bool,
}

impl FileSystem for Counting {
    fn root(&self) -> Ino {
        self.inner.root()
    }
    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        self.inner.lookup(dir, name)
    }
    fn metadata(&self, ino: Ino) -> Result<Metadata> {
        let md = self.inner.metadata(ino)?;
        let uncounted = self.dirs_uncounted && md.kind == packfs_core::FileType::Dir;
        Ok(if uncounted { Metadata { nlink: 1, ..md } } else { md })
    }
    fn parent(&self, dir: Ino) -> Result<Ino> {
        self.inner.parent(dir)
    }
    fn open(&self, dir: Ino, name: &str, opts: &OpenOptions) -> Result<Ino> {
        self.inner.open(dir, name, opts)
    }
    fn open_ino(&self, ino: Ino) -> Result<()> {
        self.inner.open_ino(ino)
    }
    fn close(&self, ino: Ino) {
        self.inner.close(ino)
    }
    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let n = self.inner.read_at(ino, offset, buf)?;
        self.bytes_read.fetch_add(n, Ordering::Relaxed);
        Ok(n)
    }
    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        let mut page = self.inner.read_dir(dir, if self.stuck { None } else { after }, max)?;
        if self.backwards {
            page.reverse();
        }
        self.entries_listed.fetch_add(page.len(), Ordering::Relaxed);
        Ok(page)
    }
    fn readlink(&self, ino: Ino) -> Result<String> {
        self.inner.readlink(ino)
    }
}

fn put(fs: &dyn FileSystem, path: &str, data: &[u8]) {
    let (dir, name) =
        path.rsplit_once('/').map_or((fs.root(), path), |(d, n)| (resolve(fs, fs.root(), d, true).unwrap(), n));
    let f = fs.open(dir, name, &OpenOptions::create()).unwrap();
    fs.write_at(f, 0, data).unwrap();
    fs.close(f);
}

fn get(fs: &dyn FileSystem, path: &str) -> Result<Vec<u8>> {
    let ino = resolve(fs, fs.root(), path, true)?;
    let mut buf = vec![0; fs.metadata(ino)?.size as usize];
    fs.read_at(ino, 0, &mut buf)?;
    Ok(buf)
}

fn names(fs: &dyn FileSystem, path: &str) -> Vec<String> {
    let dir = resolve(fs, fs.root(), path, true).unwrap();
    fs.read_dir(dir, None, usize::MAX).unwrap().iter().map(|e| e.name.to_string()).collect()
}

/// A lower tree: big.bin (3 MiB), etc/{a,b}, src/deep/x, empty/.
fn lower() -> Arc<Counting> {
    let base = MemFs::new();
    put(&base, "big.bin", &vec![7; 3 << 20]);
    for d in ["etc", "src", "src/deep", "empty"] {
        let (parent, name) = d.rsplit_once('/').unwrap_or(("", d));
        let p = if parent.is_empty() { ROOT } else { resolve(&base, ROOT, parent, true).unwrap() };
        base.mkdir(p, name, 0o755).unwrap();
    }
    put(&base, "etc/a", b"lower a");
    put(&base, "etc/b", b"lower b");
    put(&base, "src/deep/x", b"x");
    counting(base.snapshot())
}

fn counting(inner: Snapshot) -> Arc<Counting> {
    Arc::new(Counting {
        inner,
        bytes_read: AtomicUsize::new(0),
        entries_listed: AtomicUsize::new(0),
        dirs_uncounted: false,
        stuck: false,
        backwards: false,
    })
}

/// Paging through a merged directory, whatever the page size, gives its
/// entries once each, in order: lower names hidden by whiteouts in runs
/// longer than the lower's pages, upper names between them.
#[test]
fn merged_listings_page_correctly() {
    let base = MemFs::new();
    let d = base.mkdir(ROOT, "d", 0o755).unwrap();
    for i in 0..2000 {
        put(&base, &format!("d/f{i:04}"), b"");
    }
    let fs = MemFs::overlay(counting(base.snapshot())).unwrap();
    let d = resolve(&fs, ROOT, "d", true).unwrap_or(d);
    let mut want: Vec<String> = (0..2000).map(|i| format!("f{i:04}")).collect();
    // A run of 600 removed (over two lower pages), every third after it,
    // and upper names in between.
    for i in (100..700).chain((700..2000).step_by(3)) {
        fs.unlink(d, &format!("f{i:04}")).unwrap();
        want.retain(|n| *n != format!("f{i:04}"));
    }
    for n in ["f0000x", "f0650", "f1500y", "g"] {
        put(&fs, &format!("d/{n}"), b"upper");
        want.push(n.to_owned());
    }
    want.sort();
    for page in [1, 7, 255, 256, 257, 5000] {
        let mut got: Vec<String> = Vec::new();
        loop {
            let last = got.last().cloned();
            let entries = fs.read_dir(d, last.as_deref(), page).unwrap();
            if entries.is_empty() {
                break;
            }
            assert!(entries.len() <= page);
            got.extend(entries.iter().map(|e| e.name.to_string()));
        }
        assert_eq!(got, want, "pages of {page}");
    }
    fs.snapshot().check_consistency().unwrap();
}

/// A removed merged directory, still open, lists nothing of the lower, and
/// nothing can be made in it.
#[test]
fn a_removed_merged_directory_is_empty_and_stays_so() {
    let fs = MemFs::overlay(lower()).unwrap();
    let etc = fs.open(ROOT, "etc", &OpenOptions { directory: true, ..OpenOptions::read() }).unwrap();
    for n in ["a", "b"] {
        fs.unlink(etc, n).unwrap();
    }
    fs.rmdir(ROOT, "etc").unwrap();
    assert_eq!(fs.read_dir(etc, None, 10).unwrap(), Vec::<DirEntry>::new());
    assert_eq!(fs.open(etc, "c", &OpenOptions::create()), Err(Error::NotFound));
    assert_eq!(fs.mkdir(etc, "d", 0o755), Err(Error::NotFound));
    fs.snapshot().check_consistency().unwrap();
    fs.close(etc);
    fs.snapshot().check_consistency().unwrap();
    // Replaced by a rename, the same.
    let src = fs.open(ROOT, "src", &OpenOptions { directory: true, ..OpenOptions::read() }).unwrap();
    assert_eq!(fs.rmdir(src, "deep"), Err(Error::NotEmpty));
    let deep = resolve(&fs, ROOT, "src/deep", true).unwrap();
    fs.unlink(deep, "x").unwrap();
    fs.rmdir(src, "deep").unwrap();
    fs.rename(ROOT, "empty", ROOT, "src").unwrap();
    assert_eq!(fs.read_dir(src, None, 10).unwrap(), Vec::<DirEntry>::new());
    fs.close(src);
    fs.snapshot().check_consistency().unwrap();
}

/// A lower that does not count its directories' links (btrfs reports 1):
/// the overlay counts them itself.
#[test]
fn uncounted_lower_directory_links_are_counted() {
    let base = MemFs::new();
    let d = base.mkdir(ROOT, "d", 0o755).unwrap();
    for n in ["a", "b", "c"] {
        base.mkdir(d, n, 0o755).unwrap();
    }
    let low = Arc::new(Counting { dirs_uncounted: true, ..Arc::into_inner(counting(base.snapshot())).unwrap() });
    let fs = MemFs::overlay(low).unwrap();
    let d = resolve(&fs, ROOT, "d", true).unwrap();
    fs.set_mode(d, 0o700).unwrap();
    assert_eq!(fs.metadata(d).unwrap().nlink, 5);
    for n in ["a", "b", "c"] {
        fs.rmdir(d, n).unwrap();
    }
    assert_eq!(fs.metadata(d).unwrap().nlink, 2);
    fs.snapshot().check_consistency().unwrap();
}

/// No operation copies a lower directory in: reading, changing a file
/// deep down, creating, removing and renaming entries of a directory of
/// thousands all leave the lower's listing unread; only listing the
/// directory reads it.
#[test]
fn no_change_copies_a_lower_directory() {
    let base = MemFs::new();
    let big = base.mkdir(ROOT, "big", 0o755).unwrap();
    base.mkdir(big, "deep", 0o755).unwrap();
    for i in 0..5000 {
        put(&base, &format!("big/f{i:04}"), b"lower");
    }
    put(&base, "big/deep/x", b"x");
    let low = counting(base.snapshot());
    let fs = MemFs::overlay(low.clone()).unwrap();
    let listed = || low.entries_listed.load(Ordering::Relaxed);
    assert_eq!(get(&fs, "big/f1234").unwrap(), b"lower");
    let x = resolve(&fs, ROOT, "big/deep/x", true).unwrap();
    fs.write_at(x, 0, b"X").unwrap();
    fs.set_mode(resolve(&fs, ROOT, "big/deep", true).unwrap(), 0o700).unwrap();
    put(&fs, "big/deep/y", b"y");
    put(&fs, "big/new", b"n");
    let big = resolve(&fs, ROOT, "big", true).unwrap();
    fs.unlink(big, "f0017").unwrap();
    let deep = resolve(&fs, ROOT, "big/deep", true).unwrap();
    fs.rename(big, "f0018", deep, "moved").unwrap();
    fs.mkdir(big, "sub", 0o755).unwrap();
    assert_eq!(listed(), 0, "a change read a lower directory's listing");
    assert_eq!(get(&fs, "big/deep/x").unwrap(), b"X");
    assert_eq!(get(&fs, "big/deep/moved").unwrap(), b"lower");
    assert_eq!(get(&fs, "big/f0017"), Err(Error::NotFound));
    assert_eq!(get(&fs, "big/f0018"), Err(Error::NotFound));
    assert_eq!(fs.metadata(deep).unwrap().mode, 0o700);
    assert_eq!(names(&fs, "big/deep"), ["moved", "x", "y"]);
    // 5000 files, less two, plus new; deep and sub.
    let listing = names(&fs, "big");
    assert_eq!(listing.len(), 5001);
    assert!(listing.windows(2).all(|w| w[0] < w[1]), "merged listing out of order or doubled");
    assert_eq!(fs.metadata(big).unwrap().nlink, 4);
    fs.snapshot().check_consistency().unwrap();
    assert_eq!(get(&*low, "big/deep/x").unwrap(), b"x", "the lower never changes");
    assert_eq!(names(&*low, "big").len(), 5001);
}

#[test]
fn copy_up_happens_once_per_file() {
    let low = lower();
    let fs = MemFs::overlay(low.clone()).unwrap();
    let big = resolve(&fs, ROOT, "big.bin", true).unwrap();
    assert_eq!(big & LOWER_TAG, LOWER_TAG);
    assert_eq!(low.bytes_read.load(Ordering::Relaxed), 0, "looking is free");
    for i in 0..100u64 {
        fs.write_at(big, i * 4096, b"upper").unwrap();
    }
    assert_eq!(low.bytes_read.load(Ordering::Relaxed), 3 << 20, "copied up exactly once");
    assert_eq!(resolve(&fs, ROOT, "big.bin", true), Ok(big), "identity survives copy-up");
    let mut buf = [0; 6];
    fs.read_at(big, 4096, &mut buf).unwrap();
    assert_eq!(&buf, b"upper\x07");
    assert_eq!(get(&*low, "big.bin").unwrap(), vec![7; 3 << 20], "the lower never changes");
    // Metadata-only changes need no copy-up.
    let a = resolve(&fs, ROOT, "etc/a", true).unwrap();
    let before = low.bytes_read.load(Ordering::Relaxed);
    fs.set_mode(a, 0o600).unwrap();
    assert_eq!(fs.metadata(a).unwrap().mode, 0o600);
    assert_eq!(low.bytes_read.load(Ordering::Relaxed), before);
}

#[test]
fn truncating_a_lower_file_reads_only_what_it_keeps() {
    let low = lower();
    let fs = MemFs::overlay(low.clone()).unwrap();
    let h = fs.open(ROOT, "big.bin", &OpenOptions::create()).unwrap();
    assert_eq!(low.bytes_read.load(Ordering::Relaxed), 0, "O_TRUNC copies nothing up");
    assert_eq!(fs.metadata(h).unwrap().size, 0);
    fs.close(h);
    let a = resolve(&fs, ROOT, "etc/a", true).unwrap();
    fs.set_len(a, 3).unwrap();
    assert_eq!(low.bytes_read.load(Ordering::Relaxed), 3);
    assert_eq!(get(&fs, "etc/a").unwrap(), b"low");
    fs.set_len(a, 5).unwrap();
    assert_eq!(get(&fs, "etc/a").unwrap(), b"low\0\0");
    assert_eq!(get(&*low, "big.bin").unwrap().len(), 3 << 20, "the lower never changes");
}

#[test]
fn listings_merge_without_duplicates() {
    let fs = MemFs::overlay(lower()).unwrap();
    put(&fs, "etc/c", b"upper c");
    put(&fs, "etc/a", b"upper a");
    assert_eq!(names(&fs, "etc"), ["a", "b", "c"]);
    assert_eq!(get(&fs, "etc/a").unwrap(), b"upper a");
    assert_eq!(get(&fs, "etc/b").unwrap(), b"lower b");
    fs.unlink(resolve(&fs, ROOT, "etc", true).unwrap(), "b").unwrap();
    assert_eq!(names(&fs, "etc"), ["a", "c"]);
    assert_eq!(names(&fs, "."), ["big.bin", "empty", "etc", "src"]);
}

#[test]
fn removed_lower_entries_stay_removed() {
    let fs = MemFs::overlay(lower()).unwrap();
    let etc = resolve(&fs, ROOT, "etc", true).unwrap();
    let a = fs.lookup(etc, "a").unwrap();
    fs.unlink(etc, "a").unwrap();
    assert_eq!(fs.lookup(etc, "a"), Err(Error::NotFound));
    assert_eq!(fs.metadata(a), Err(Error::NotFound), "a stale number must not reach the lower");
    assert_eq!(fs.read_at(a, 0, &mut [0; 4]), Err(Error::NotFound));
    let deep = resolve(&fs, ROOT, "src/deep", true).unwrap();
    fs.unlink(deep, "x").unwrap();
    fs.rmdir(resolve(&fs, ROOT, "src", true).unwrap(), "deep").unwrap();
    assert_eq!(fs.read_dir(deep, None, 10), Err(Error::NotFound));
}

#[test]
fn rmdir_sees_lower_entries() {
    let fs = MemFs::overlay(lower()).unwrap();
    assert_eq!(fs.rmdir(ROOT, "src"), Err(Error::NotEmpty));
    fs.rmdir(ROOT, "empty").unwrap();
    assert_eq!(names(&fs, "."), ["big.bin", "etc", "src"]);
}

#[test]
fn renaming_a_lower_directory_moves_its_subtree() {
    let fs = MemFs::overlay(lower()).unwrap();
    fs.rename(ROOT, "src", ROOT, "moved").unwrap();
    assert_eq!(get(&fs, "moved/deep/x").unwrap(), b"x");
    assert_eq!(get(&fs, "src/deep/x"), Err(Error::NotFound));
    // Onto an empty lower directory, and not into its own subtree.
    fs.rename(ROOT, "moved", ROOT, "empty").unwrap();
    assert_eq!(names(&fs, "empty"), ["deep"]);
    let deep = resolve(&fs, ROOT, "empty/deep", true).unwrap();
    assert_eq!(fs.rename(ROOT, "empty", deep, "loop"), Err(Error::Invalid));
    fs.snapshot().check_consistency().unwrap();
}

#[test]
fn open_lower_file_outlives_its_name() {
    let fs = MemFs::overlay(lower()).unwrap();
    let etc = resolve(&fs, ROOT, "etc", true).unwrap();
    let h = fs.open(etc, "a", &OpenOptions { write: true, ..OpenOptions::default() }).unwrap();
    fs.unlink(etc, "a").unwrap();
    fs.append(h, b"!").unwrap();
    let mut buf = [0; 8];
    assert_eq!(fs.read_at(h, 0, &mut buf), Ok(8));
    assert_eq!(&buf, b"lower a!");
    fs.close(h);
    assert_eq!(fs.metadata(h), Err(Error::NotFound));
}

/// A cut of a lower file copies up exactly what it keeps, and counts
/// exactly that, however the lower's bytes come in pieces.
#[test]
fn a_cut_lower_file_counts_what_it_keeps() {
    let low = lower();
    let limits = Quota { max_bytes: Some(10 << 20), max_inodes: None };
    let fs = MemFs::builder().lower(low.clone()).quota(limits).build().unwrap();
    let big = resolve(&fs, ROOT, "big.bin", true).unwrap();
    let keep = (1 << 20) + 1; // more than one piece of the copy
    fs.set_len(big, keep).unwrap();
    assert_eq!(low.bytes_read.load(Ordering::Relaxed), keep as usize);
    assert_eq!(fs.metadata(big).unwrap().size, keep);
    // The root's record, and the bytes kept (a lower inode's record is
    // the lower's, not charged).
    assert_eq!(fs.usage().bytes, INODE_BYTES + keep);
    assert_eq!(get(&fs, "big.bin").unwrap(), vec![7; keep as usize]);
    fs.unlink(ROOT, "big.bin").unwrap();
    let whiteout = ENTRY_BYTES + "big.bin".len() as u64;
    assert_eq!(fs.usage().bytes, INODE_BYTES + whiteout);
    put(&fs, "after", &[1; 4096]);
    assert_eq!(fs.usage().bytes, INODE_BYTES + whiteout + INODE_BYTES + ENTRY_BYTES + 5 + 4096);
}

/// A zero-length write changes nothing: no copy-up, no quota, no times.
#[test]
fn empty_writes_leave_a_lower_file_alone() {
    let low = lower();
    let limits = Quota { max_bytes: Some(1024), max_inodes: None };
    let fs = MemFs::builder().lower(low.clone()).quota(limits).build().unwrap();
    let big = resolve(&fs, ROOT, "big.bin", true).unwrap();
    let before = fs.metadata(big).unwrap();
    assert_eq!(fs.write_at(big, 5, b""), Ok(0));
    assert_eq!(fs.append(big, b""), Ok(3 << 20));
    fs.set_times(big, SetTime::Keep, SetTime::Keep).unwrap();
    assert_eq!(fs.metadata(big).unwrap(), before);
    assert_eq!(low.bytes_read.load(Ordering::Relaxed), 0);
    assert_eq!(fs.usage().bytes, INODE_BYTES, "the root's record alone");
    assert_eq!(fs.write_at(ROOT, 0, b""), Err(Error::IsDir));
    assert_eq!(fs.write_at(big, u64::MAX, b""), Err(Error::FileTooLarge));
    assert_eq!(fs.write_at(LOWER_TAG | 999_999, 0, b""), Err(Error::NotFound));
}

#[test]
fn quota_counts_only_the_upper() {
    let limits = Quota { max_bytes: Some(1 << 20), max_inodes: Some(3) };
    let fs = MemFs::builder().lower(lower()).quota(limits).build().unwrap();
    assert_eq!(names(&fs, "etc").len(), 2, "merging costs no quota");
    assert_eq!(fs.usage().inodes, 1);
    let big = resolve(&fs, ROOT, "big.bin", true).unwrap();
    assert_eq!(fs.write_at(big, 0, b"x"), Err(Error::Quota), "copy-up of 3 MiB exceeds 1 MiB");
    assert_eq!(get(&fs, "big.bin").unwrap()[0], 7);
    let a = resolve(&fs, ROOT, "etc/a", true).unwrap();
    fs.write_at(a, 0, b"A").unwrap();
    assert_eq!(fs.usage().bytes, INODE_BYTES + 7);
    put(&fs, "n1", b"");
    put(&fs, "n2", b"");
    assert_eq!(fs.mkdir(ROOT, "n3", 0o755), Err(Error::Quota));
}

#[test]
fn snapshots_and_forks_of_an_overlay() {
    let fs = MemFs::overlay(lower()).unwrap();
    put(&fs, "etc/a", b"v1");
    let snap = fs.snapshot();
    put(&fs, "etc/a", b"v2");
    assert_eq!(get(&snap, "etc/a").unwrap(), b"v1");
    // Parts the live tree never changed read through in the snapshot.
    assert_eq!(get(&snap, "src/deep/x").unwrap(), b"x");
    let fork = MemFs::fork(&snap);
    put(&fork, "src/deep/x", b"forked");
    assert_eq!(get(&fork, "src/deep/x").unwrap(), b"forked");
    assert_eq!(get(&fs, "src/deep/x").unwrap(), b"x");
    assert_eq!(get(&fork, "etc/a").unwrap(), b"v1");
}

/// A lower whose listing does not move past the name it is given is an
/// error, not a listing that never ends.
#[test]
fn a_stuck_lower_listing_is_an_error() {
    let base = MemFs::new();
    for i in 0..300 {
        put(&base, &format!("f{i:03}"), b"");
    }
    let low = Arc::new(Counting { stuck: true, ..Arc::into_inner(counting(base.snapshot())).unwrap() });
    let fs = MemFs::overlay(low).unwrap();
    assert!(matches!(fs.read_dir(ROOT, None, 1000), Err(Error::Backend { fault: BackendFault::Contract, .. })));
    // Nor when its subdirectories are counted (a lower that does not count
    // them itself): on a3db56c the count never ended.
    let base = MemFs::new();
    base.mkdir(ROOT, "d", 0o755).unwrap();
    let low = Counting { stuck: true, dirs_uncounted: true, ..Arc::into_inner(counting(base.snapshot())).unwrap() };
    assert!(matches!(MemFs::overlay(Arc::new(low)), Err(Error::Backend { fault: BackendFault::Contract, .. })));
    // Nor when only the end of its page goes back (each page listed
    // backwards, from the start): on the first fix the count never ended.
    put(&base, "z", b"");
    let low = Counting {
        stuck: true,
        backwards: true,
        dirs_uncounted: true,
        ..Arc::into_inner(counting(base.snapshot())).unwrap()
    };
    assert!(matches!(MemFs::overlay(Arc::new(low)), Err(Error::Backend { fault: BackendFault::Contract, .. })));
    let low = Counting { stuck: true, backwards: true, ..Arc::into_inner(counting(base.snapshot())).unwrap() };
    let fs = MemFs::overlay(Arc::new(low)).unwrap();
    assert!(matches!(fs.read_dir(ROOT, None, 1000), Err(Error::Backend { fault: BackendFault::Contract, .. })));
}
