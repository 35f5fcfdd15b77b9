//! Writer → reader round trips, determinism and dedup.

use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};

use packfs_core::pack::{PackFs, PackOptions, WriteError, write_pack};
use packfs_core::{
    BackendFault, DirEntry, Error, FileSystem, Ino, MemFs, Metadata, OpenOptions, Result, SetTime, Timestamp,
};

use crate::common::*;

#[test]
fn pack_round_trip_random_trees() {
    for seed in 0..40 {
        let fs = random_tree(seed, 10 + seed * 4);
        let snap = fs.snapshot();
        let pack = open(pack_bytes(&snap));
        assert_same_tree(&snap, &pack);
        assert!(pack.verify().unwrap().is_ok());
    }
}

#[test]
fn pack_round_trip_empty_tree() {
    let fs = fixed_fs();
    let pack = open(pack_bytes(&fs));
    assert_same_tree(&fs, &pack);
    assert_eq!(pack.info().inodes, 1);
    assert_eq!(pack.read_dir(pack.root(), None, 10).unwrap(), vec![]);
}

#[test]
fn pack_is_deterministic() {
    // The same tree, built in two different orders.
    let build = |reverse: bool| {
        let fs = fixed_fs();
        let mut names: Vec<&str> = vec!["b", "a", "c", "dir", "é"];
        if reverse {
            names.reverse();
        }
        for n in &names {
            if *n == "dir" {
                let d = fs.mkdir(fs.root(), n, 0o755).unwrap();
                write_file(&fs, d, "inner", b"x");
                fs.set_times(d, SetTime::Keep, SetTime::At(Timestamp::new(5, 5))).unwrap();
            } else {
                write_file(&fs, fs.root(), n, n.as_bytes());
            }
        }
        fs.set_times(fs.root(), SetTime::Keep, SetTime::At(Timestamp::new(9, 9))).unwrap();
        pack_bytes(&fs.snapshot())
    };
    assert_eq!(build(false), build(true));
    let fs = random_tree(7, 80);
    assert_eq!(pack_bytes(&fs), pack_bytes(&fs.snapshot()));
}

/// The same tree from different sources gives the same bytes: a pack
/// re-packed, an overlay over it with nothing changed, and a fork of it
/// copied into a `MemFs` all reproduce the original pack.
#[test]
fn pack_is_deterministic_across_sources() {
    for seed in 0..8 {
        let fs = random_tree_with(seed, 60, seed % 2 == 0, true);
        let first = pack_bytes(&fs.snapshot());
        let pack = std::sync::Arc::new(open(first.clone()));
        assert_eq!(pack_bytes(&*pack), first, "seed {seed}: pack of the pack");
        let overlay = MemFs::overlay(pack.clone()).unwrap();
        assert_eq!(pack_bytes(&overlay), first, "seed {seed}: pack of an untouched overlay");
        assert_eq!(pack_bytes(&overlay.snapshot()), first, "seed {seed}: pack of its snapshot");
    }
}

/// Compacting snapshots of a filesystem that writer threads keep changing:
/// each pack holds exactly its snapshot, whatever the writers did since.
#[test]
fn pack_compacts_snapshots_while_writers_go_on() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::AtomicU64;
    let fs = Arc::new(random_tree(11, 200));
    let stop = Arc::new(AtomicBool::new(false));
    // Changes made by each writer: compaction goes on until both have
    // made some, however the threads are scheduled.
    let made: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    let writers: Vec<_> = (0..2u8)
        .map(|t| {
            let (fs, stop, made) = (fs.clone(), stop.clone(), made.clone());
            std::thread::spawn(move || {
                let dir = fs.mkdir(fs.root(), &format!("w{t}"), 0o755).unwrap();
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let name = format!("f{}", i % 64);
                    write_file(&*fs, dir, &name, &i.to_le_bytes().repeat(1 + (i % 7) as usize));
                    if i.is_multiple_of(3) {
                        fs.unlink(dir, &format!("f{}", (i + 32) % 64))
                            .or_else(|e| match e {
                                Error::NotFound => Ok(()),
                                e => Err(e),
                            })
                            .unwrap();
                    }
                    i += 1;
                    made[usize::from(t)].store(i, Ordering::Relaxed);
                }
                i
            })
        })
        .collect();
    let mut rounds = 0;
    while rounds < 20 || made.iter().any(|m| m.load(Ordering::Relaxed) < 50) {
        let snap = fs.snapshot();
        let pack = open(pack_bytes(&snap));
        assert_same_tree(&snap, &pack);
        assert!(pack.verify().unwrap().is_ok());
        rounds += 1;
        std::thread::yield_now();
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        assert!(w.join().unwrap() > 0);
    }
}

#[test]
fn pack_dedups_identical_content_only() {
    let fs = fixed_fs();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7) as u8).collect();
    let mut big2 = big.clone();
    big2[150_000] ^= 1; // differs only in its third chunk
    for (name, data) in [("a", &b"same"[..]), ("b", b"same"), ("c", b"samf"), ("d", b""), ("e", b"")] {
        write_file(&fs, fs.root(), name, data);
    }
    write_file(&fs, fs.root(), "big1", &big);
    write_file(&fs, fs.root(), "big2", &big);
    write_file(&fs, fs.root(), "big3", &big2);
    let mut out = Vec::new();
    let stats = write_pack(&fs, &mut out).unwrap();
    // Blobs: "same", "samf", "", big, big2.
    assert_eq!(stats.blobs, 5);
    assert_eq!(stats.blob_bytes, 4 + 4 + 2 * 200_000);
    assert_eq!(stats.file_bytes, 4 * 3 + 3 * 200_000);
    let pack = open(out);
    assert_same_tree(&fs, &pack);
    let root = pack.root();
    let bytes = |n| pack.file_bytes(pack.lookup(root, n).unwrap()).unwrap().as_ptr();
    assert_eq!(bytes("a"), bytes("b"));
    assert_ne!(bytes("a"), bytes("c"));
    assert_eq!(bytes("big1"), bytes("big2"));
    assert_ne!(bytes("big1"), bytes("big3"));
}

#[test]
fn pack_dedups_across_many_distinct_contents() {
    // More distinct contents than the writer keeps in its recent table; each
    // again in reverse order; then, under a hasher that ignores the last
    // byte, a different content with each early key, and a copy of that:
    // every copy shares its original's blob, wherever its key is kept by
    // then, and no two different contents share one.
    let fs = fixed_fs();
    let base = |i: u32| format!("content {i} {}", "x".repeat((i % 40) as usize));
    let dirs = ["a", "b", "c", "d"].map(|d| fs.mkdir(fs.root(), d, 0o755).unwrap());
    let n = 3000;
    for i in 0..n {
        write_file(&fs, dirs[0], &format!("{i:05}"), format!("{}A", base(i)).as_bytes());
        write_file(&fs, dirs[1], &format!("{:05}", n - 1 - i), format!("{}A", base(i)).as_bytes());
    }
    for i in 0..n {
        write_file(&fs, dirs[2], &format!("{i:05}"), format!("{}B", base(i)).as_bytes());
        write_file(&fs, dirs[3], &format!("{i:05}"), format!("{}B", base(i)).as_bytes());
    }
    for hasher in ["xxh3", "all but the last byte"] {
        let mut out = Vec::new();
        let stats = match hasher {
            "xxh3" => write_pack(&fs, &mut out),
            _ => PackOptions::new().dedup_hasher(BuildHasherDefault::<ButLast>::default()).write(&fs, &mut out),
        }
        .unwrap();
        assert_eq!(stats.blobs, 2 * u64::from(n), "{hasher}");
        let pack = open(out);
        assert_same_tree(&fs, &pack);
        let dir = |d: &str| pack.lookup(pack.root(), d).unwrap();
        let blob =
            |d: &str, i: u32| pack.file_bytes(pack.lookup(dir(d), &format!("{i:05}")).unwrap()).unwrap().as_ptr();
        for i in [0, 1, 255, 256, 257, 1000, n - 1] {
            assert_eq!(blob("a", i), blob("b", n - 1 - i), "{hasher}: file {i}");
            assert_eq!(blob("c", i), blob("d", i), "{hasher}: file {i}");
            assert_ne!(blob("a", i), blob("c", i), "{hasher}: file {i}");
        }
    }
}

/// A hasher that ignores the last byte written: contents that differ only
/// there collide.
#[derive(Default)]
struct ButLast(u64);

impl Hasher for ButLast {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in &bytes[..bytes.len().saturating_sub(1)] {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// A hasher under which every content collides.
#[derive(Default)]
struct Collide;

impl Hasher for Collide {
    fn finish(&self) -> u64 {
        0
    }

    fn write(&mut self, _: &[u8]) {}
}

#[test]
fn pack_colliding_hasher_never_merges_different_content() {
    for seed in 0..10 {
        let fs = random_tree(seed, 60);
        let plain = pack_bytes(&fs);
        let mut collided = Vec::new();
        PackOptions::new().dedup_hasher(BuildHasherDefault::<Collide>::default()).write(&fs, &mut collided).unwrap();
        // The hash only picks candidates: the same blobs are shared, so the
        // packs are identical, and the tree survives.
        assert_eq!(plain, collided, "seed {seed}");
        assert_same_tree(&fs, &open(collided));
    }
}

#[test]
fn pack_hard_links_share_one_inode() {
    let fs = fixed_fs();
    let f = write_file(&fs, fs.root(), "one", b"linked");
    let d = fs.mkdir(fs.root(), "d", 0o755).unwrap();
    fs.link(f, d, "two").unwrap();
    write_file(&fs, fs.root(), "copy", b"linked");
    let s = fs.symlink(fs.root(), "s", "one").unwrap();
    fs.link(s, d, "s2").unwrap();
    let pack = open(pack_bytes(&fs));
    assert_same_tree(&fs, &pack);
    let one = pack.lookup(pack.root(), "one").unwrap();
    let pd = pack.lookup(pack.root(), "d").unwrap();
    assert_eq!(pack.lookup(pd, "two"), Ok(one));
    assert_eq!(pack.metadata(one).unwrap().nlink, 2);
    let copy = pack.lookup(pack.root(), "copy").unwrap();
    assert_ne!(copy, one);
    assert_eq!(pack.metadata(copy).unwrap().nlink, 1);
    assert_eq!(pack.lookup(pd, "s2"), pack.lookup(pack.root(), "s"));
}

#[test]
fn pack_of_a_snapshot_ignores_later_writes() {
    let fs = fixed_fs();
    let f = write_file(&fs, fs.root(), "f", b"before");
    let snap = fs.snapshot();
    fs.write_at(f, 0, b"AFTER!").unwrap();
    fs.mkdir(fs.root(), "new", 0o755).unwrap();
    let pack = open(pack_bytes(&snap));
    assert_same_tree(&snap, &pack);
    assert_eq!(*pack.file_bytes(pack.lookup(1, "f").unwrap()).unwrap(), *b"before");
}

#[test]
fn pack_alignment_is_honoured() {
    let fs = random_tree(3, 60);
    for align in [8, 64, 4096, 65536] {
        let mut out = Vec::new();
        PackOptions::new().align(align).write(&fs, &mut out).unwrap();
        let pack = open(out);
        assert_eq!(pack.info().align, align);
        assert_same_tree(&fs, &pack);
        let base = pack.source().as_ptr() as usize;
        for (_, ino) in walk(&pack) {
            if let Ok(b) = pack.file_bytes(ino) {
                assert_eq!((b.as_ptr() as usize - base) as u64 % align, 0);
            }
        }
    }
    for bad in [0, 4, 12, 1 << 17] {
        let r = PackOptions::new().align(bad).write(&fs, Vec::new());
        assert!(matches!(r, Err(WriteError::BadAlignment(b)) if b == bad));
    }
}

#[test]
fn pack_deep_and_wide_trees() {
    let fs = fixed_fs();
    let mut d = fs.root();
    for _ in 0..300 {
        d = fs.mkdir(d, "deeper", 0o755).unwrap();
    }
    write_file(&fs, d, "bottom", b"!");
    let wide = fs.mkdir(fs.root(), "wide", 0o755).unwrap();
    for i in 0..3000 {
        write_file(&fs, wide, &format!("f{i:05}"), &[]);
    }
    let pack = open(pack_bytes(&fs));
    assert_same_tree(&fs, &pack);
    let w = pack.lookup(1, "wide").unwrap();
    assert_eq!(pack.read_dir(w, Some("f02998"), 10).unwrap().len(), 1);
    assert!(pack.lookup(w, "f01234").is_ok());
}

// ---- sources that misbehave ------------------------------------------------

/// Wraps a MemFs and breaks one thing about it.
struct Liar {
    inner: MemFs,
    /// `read_at` of file `ino` returns other bytes after this many calls.
    change_after: Option<(Ino, usize)>,
    /// `read_dir` of the root also lists the root's first subdirectory again.
    dir_twice: bool,
    /// `read_dir` of the root lists everything, last name first, whatever
    /// the cookie: a listing that never ends if only page starts are
    /// checked.
    reversed: bool,
    /// The inode count it gives, right or wrong, instead of the true one.
    hint: Option<Option<u64>>,
    reads: AtomicUsize,
}

impl Liar {
    fn new(inner: MemFs) -> Self {
        Liar { inner, change_after: None, dir_twice: false, reversed: false, hint: None, reads: AtomicUsize::new(0) }
    }
}

impl FileSystem for Liar {
    fn root(&self) -> Ino {
        self.inner.root()
    }
    fn lookup(&self, d: Ino, n: &str) -> Result<Ino> {
        self.inner.lookup(d, n)
    }
    fn metadata(&self, i: Ino) -> Result<Metadata> {
        self.inner.metadata(i)
    }
    fn parent(&self, d: Ino) -> Result<Ino> {
        self.inner.parent(d)
    }
    fn inode_count_hint(&self) -> Option<u64> {
        self.hint.unwrap_or_else(|| self.inner.inode_count_hint())
    }
    fn open(&self, d: Ino, n: &str, o: &OpenOptions) -> Result<Ino> {
        self.inner.open(d, n, o)
    }
    fn open_ino(&self, i: Ino) -> Result<()> {
        self.inner.open_ino(i)
    }
    fn close(&self, i: Ino) {
        self.inner.close(i)
    }
    fn read_at(&self, i: Ino, o: u64, b: &mut [u8]) -> Result<usize> {
        let n = self.inner.read_at(i, o, b)?;
        if let Some((ino, after)) = self.change_after
            && ino == i
            && self.reads.fetch_add(1, Ordering::SeqCst) >= after
        {
            b[..n].fill(b'?');
        }
        Ok(n)
    }
    fn write_at(&self, i: Ino, o: u64, d: &[u8]) -> Result<usize> {
        self.inner.write_at(i, o, d)
    }
    fn append(&self, i: Ino, d: &[u8]) -> Result<u64> {
        self.inner.append(i, d)
    }
    fn set_len(&self, i: Ino, l: u64) -> Result<()> {
        self.inner.set_len(i, l)
    }
    fn read_dir(&self, d: Ino, a: Option<&str>, m: usize) -> Result<Vec<DirEntry>> {
        if self.reversed && d == self.root() {
            let mut all = self.inner.read_dir(d, None, usize::MAX)?;
            all.reverse();
            return Ok(all);
        }
        let mut v = self.inner.read_dir(d, a, m)?;
        if self.dir_twice && d == self.root() && a.is_none() {
            let sub = v.iter().find(|e| e.kind == packfs_core::FileType::Dir).cloned().unwrap();
            v.push(DirEntry { name: "zz-again".into(), ..sub });
        }
        Ok(v)
    }
    fn mkdir(&self, d: Ino, n: &str, m: u32) -> Result<Ino> {
        self.inner.mkdir(d, n, m)
    }
    fn rmdir(&self, d: Ino, n: &str) -> Result<()> {
        self.inner.rmdir(d, n)
    }
    fn unlink(&self, d: Ino, n: &str) -> Result<()> {
        self.inner.unlink(d, n)
    }
    fn rename(&self, a: Ino, b: &str, c: Ino, d: &str) -> Result<()> {
        self.inner.rename(a, b, c, d)
    }
    fn symlink(&self, d: Ino, n: &str, t: &str) -> Result<Ino> {
        self.inner.symlink(d, n, t)
    }
    fn readlink(&self, i: Ino) -> Result<String> {
        self.inner.readlink(i)
    }
    fn link(&self, i: Ino, d: Ino, n: &str) -> Result<()> {
        self.inner.link(i, d, n)
    }
    fn set_times(&self, i: Ino, a: SetTime, m: SetTime) -> Result<()> {
        self.inner.set_times(i, a, m)
    }
    fn set_mode(&self, i: Ino, m: u32) -> Result<()> {
        self.inner.set_mode(i, m)
    }
}

/// An output with no room left (memory that cannot grow, a full disk) is
/// `NoSpace`; other output errors are `Io`.
#[test]
fn pack_writer_reports_a_full_output_as_no_space() {
    struct Full(std::io::ErrorKind);
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(self.0.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let fs = fixed_fs();
    write_file(&fs, fs.root(), "a", b"a");
    for (kind, want) in
        [(std::io::ErrorKind::OutOfMemory, Error::NoSpace), (std::io::ErrorKind::StorageFull, Error::NoSpace)]
    {
        assert_eq!(Error::from(write_pack(&fs, Full(kind)).unwrap_err()), want);
    }
    let other = Error::from(write_pack(&fs, Full(std::io::ErrorKind::BrokenPipe)).unwrap_err());
    assert!(matches!(&other, Error::Os(e) if e.source().kind() == std::io::ErrorKind::BrokenPipe), "{other:?}");
}

#[test]
fn pack_writer_refuses_a_listing_out_of_order() {
    let fs = fixed_fs();
    write_file(&fs, fs.root(), "a", b"a");
    write_file(&fs, fs.root(), "m", b"m");
    let liar = Liar { reversed: true, ..Liar::new(fs) };
    assert!(matches!(write_pack(&liar, Vec::new()), Err(WriteError::BadSource { .. })));
}

#[test]
fn pack_writer_notices_a_changing_source() {
    // A big file whose bytes change between the hashing read and the
    // writing read.
    let fs = fixed_fs();
    let big = write_file(&fs, fs.root(), "big", &vec![1u8; 100_000]);
    let liar = Liar { change_after: Some((big, 2)), ..Liar::new(fs) };
    assert!(matches!(write_pack(&liar, Vec::new()), Err(WriteError::SourceChanged { ino }) if ino == big));

    // A file that changes after it was written into the very bytes of a
    // later candidate: the byte comparison passes, the checksum of what
    // was re-read does not match what was written.
    let fs = fixed_fs();
    let a = write_file(&fs, fs.root(), "a", b"abc");
    write_file(&fs, fs.root(), "b", b"???");
    let liar = Liar { change_after: Some((a, 1)), ..Liar::new(fs) };
    let collide = PackOptions::new().dedup_hasher(BuildHasherDefault::<Collide>::default());
    assert!(matches!(collide.write(&liar, Vec::new()), Err(WriteError::SourceChanged { ino }) if ino == a));
}

#[test]
fn pack_writer_refuses_a_directory_reachable_twice() {
    let fs = fixed_fs();
    fs.mkdir(fs.root(), "d", 0o755).unwrap();
    let liar = Liar { dir_twice: true, ..Liar::new(fs) };
    let err = write_pack(&liar, Vec::new()).unwrap_err();
    assert!(matches!(err, WriteError::BadSource { .. }), "{err}");
    assert!(matches!(Error::from(err), Error::Backend { fault: BackendFault::Contract, .. }));
}

#[test]
fn pack_writer_reports_output_errors() {
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let fs = random_tree(1, 30);
    assert!(matches!(write_pack(&fs, Full), Err(WriteError::Output(_))));
    let _ = PackFs::open(Vec::new()).unwrap_err();
}

#[test]
fn pack_compacts_an_overlay_over_a_pack() {
    // The compaction cycle: pack -> PackFs -> writable overlay -> changes ->
    // snapshot -> new pack, which holds the overlay's view.
    for seed in [5, 6] {
        let base = random_tree_with(seed, 60, true, true);
        let lower: std::sync::Arc<dyn FileSystem> = std::sync::Arc::new(open(pack_bytes(&base)));
        let over = MemFs::overlay(lower).unwrap();
        let root = over.root();
        write_file(&over, root, "added", b"new in the upper");
        let d = over.mkdir(root, "added-dir", 0o700).unwrap();
        write_file(&over, d, "inner", b"same as a lower file? no");
        for e in over.read_dir(root, None, 3).unwrap() {
            match e.kind {
                packfs_core::FileType::Dir => {}
                _ => over.unlink(root, &e.name).unwrap(),
            }
        }
        let snap = over.snapshot();
        let compacted = open(pack_bytes(&snap));
        assert_same_tree(&snap, &compacted);
        assert!(compacted.verify().unwrap().is_ok());
    }
}

#[test]
fn pack_inode_count_hints_are_exact_and_only_hints() {
    for seed in 0..6 {
        let fs = random_tree_with(seed, 80, seed % 2 == 0, true);
        let snap = fs.snapshot();
        let inodes = fs.usage().inodes;
        assert_eq!(fs.inode_count_hint(), Some(inodes));
        assert_eq!(snap.inode_count_hint(), Some(inodes));
        let bytes = pack_bytes(&snap);
        let pack = open(bytes.clone());
        assert_eq!(pack.inode_count_hint(), Some(pack.info().inodes));
        // An overlay counts its own inodes and its lower's.
        let lower: std::sync::Arc<dyn FileSystem> = std::sync::Arc::new(open(bytes.clone()));
        let over = MemFs::overlay(lower).unwrap();
        write_file(&over, over.root(), "upper-only", b"x");
        assert_eq!(over.inode_count_hint(), Some(over.usage().inodes + pack.info().inodes));
        let liar: std::sync::Arc<dyn FileSystem> =
            std::sync::Arc::new(Liar { hint: Some(Some(u64::MAX)), ..Liar::new(MemFs::fork(&snap)) });
        assert_eq!(MemFs::overlay(liar).unwrap().inode_count_hint(), Some(u64::MAX));
        // The hint sizes the writer's tables, nothing else: no hint, a low
        // one and a high one give the same pack.
        for hint in [None, Some(0), Some(1), Some(inodes * 10), Some(u64::MAX)] {
            let liar = Liar { hint: Some(hint), ..Liar::new(MemFs::fork(&snap)) };
            assert_eq!(pack_bytes(&liar), bytes, "seed {seed}, hint {hint:?}");
        }
    }
}
