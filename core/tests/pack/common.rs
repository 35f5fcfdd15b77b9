//! Trees to pack, and a comparison of two filesystems.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use packfs_core::pack::{CorruptKind, PackFs, fuzzing, write_pack};
use packfs_core::{FileSystem, FileType, Ino, MemFs, OpenOptions, SetTime, Timestamp};
pub(crate) use packfs_test_support::Rng;

/// A MemFs whose clock always says the same time.
pub(crate) fn fixed_fs() -> MemFs {
    MemFs::builder().clock(Arc::new(|| Timestamp::new(1_700_000_000, 5))).build()
}

pub(crate) fn write_file(fs: &dyn FileSystem, dir: Ino, name: &str, data: &[u8]) -> Ino {
    let f = fs.open(dir, name, &OpenOptions::create()).unwrap();
    fs.write_at(f, 0, data).unwrap();
    fs.close(f);
    f
}

/// A random tree: nested directories, files (empty, small, over 64 KiB,
/// many with duplicated content), symlinks, hard links, varied modes and
/// mtimes. `size` scales the number of operations.
pub(crate) fn random_tree(seed: u64, size: u64) -> MemFs {
    random_tree_with(seed, size, true, true)
}

/// [`random_tree`], without files over 2 KB unless `big`, without hard
/// links unless `links`.
pub(crate) fn random_tree_with(seed: u64, size: u64, big: bool, links: bool) -> MemFs {
    let mut rng = Rng::new(seed);
    let fs = fixed_fs();
    let mut dirs = vec![fs.root()];
    let mut files: Vec<Ino> = Vec::new();
    let contents: Vec<Vec<u8>> = (0..6)
        .map(|i| match i {
            0 => Vec::new(),
            1 => b"same".to_vec(),
            2 => b"samf".to_vec(), // same length as "same", other bytes
            3 if big => (0..70_000u32).map(|j| (j % 251) as u8).collect(), // over one 64 KiB chunk
            _ => (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
        })
        .collect();
    let names = ["a", "b", "c", "dir", "Zed", "é", "file.txt", "x y", "..x", ".hidden", "日本", "z"];
    for step in 0..size {
        let dir = dirs[rng.below(dirs.len() as u64) as usize];
        let name = format!("{}{}", names[rng.below(names.len() as u64) as usize], rng.below(4));
        if fs.lookup(dir, &name).is_ok() {
            continue;
        }
        let ino = match rng.below(10) {
            0..=2 => {
                let d = fs.mkdir(dir, &name, [0o755, 0o700, 0o1777][rng.below(3) as usize]).unwrap();
                dirs.push(d);
                d
            }
            3..=6 => {
                let data = if rng.chance(60) {
                    contents[rng.below(contents.len() as u64) as usize].clone()
                } else {
                    let max = if big && rng.chance(5) { 200_000 } else { 2000 };
                    let len = rng.below(max);
                    (0..len).map(|_| rng.next() as u8).collect()
                };
                let f = write_file(&fs, dir, &name, &data);
                fs.set_mode(f, [0o644, 0o600, 0o755, 0o4755][rng.below(4) as usize]).unwrap();
                files.push(f);
                f
            }
            7 => {
                let target = ["a0", "../b1", "dir2/file.txt3", "nowhere", "é/日本"][rng.below(5) as usize];
                fs.symlink(dir, &name, target).unwrap()
            }
            8 if links && !files.is_empty() => {
                let f = files[rng.below(files.len() as u64) as usize];
                fs.link(f, dir, &name).unwrap();
                f
            }
            _ => {
                let f = write_file(&fs, dir, &name, format!("step {step}").as_bytes());
                files.push(f);
                f
            }
        };
        let mtime = Timestamp::new(rng.below(4_000_000_000), rng.below(1_000_000_000) as u32);
        fs.set_times(ino, SetTime::Keep, SetTime::At(mtime)).unwrap();
    }
    // Directory mtimes last: creating entries touched them.
    for &d in &dirs {
        fs.set_times(d, SetTime::Keep, SetTime::At(Timestamp::new(d * 1000, 7))).unwrap();
    }
    fs
}

pub(crate) fn pack_bytes(fs: &dyn FileSystem) -> Vec<u8> {
    let mut out = Vec::new();
    let stats = write_pack(fs, &mut out).unwrap();
    assert_eq!(stats.pack_len, out.len() as u64);
    out
}

pub(crate) fn open(bytes: Vec<u8>) -> PackFs<Vec<u8>> {
    PackFs::open(bytes).unwrap()
}

pub(crate) fn read_all(fs: &dyn FileSystem, ino: Ino) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0; 7919]; // A prime: reads straddle every boundary.
    loop {
        let n = fs.read_at(ino, out.len() as u64, &mut buf).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&buf[..n]);
    }
}

/// Every name in `fs`, breadth-first, as (path, inode), read in pages of 5.
pub(crate) fn walk(fs: &dyn FileSystem) -> Vec<(String, Ino)> {
    let mut out = Vec::new();
    let mut queue = VecDeque::from([(String::new(), fs.root())]);
    while let Some((path, dir)) = queue.pop_front() {
        let mut after: Option<Arc<str>> = None;
        loop {
            let page = fs.read_dir(dir, after.as_deref(), 5).unwrap();
            let Some(last) = page.last() else { break };
            after = Some(last.name.clone());
            for e in page {
                let p = if path.is_empty() { e.name.to_string() } else { format!("{path}/{}", e.name) };
                assert_eq!(fs.metadata(e.ino).unwrap().kind, e.kind);
                if e.kind == FileType::Dir {
                    queue.push_back((p.clone(), e.ino));
                }
                out.push((p, e.ino));
            }
        }
    }
    out
}

/// Asserts that `a` and `b` hold the same tree: names, kinds, contents,
/// modes, mtimes, sizes, link counts, symlink targets, and the same hard
/// links (two names share an inode in one exactly when they do in the other).
pub(crate) fn assert_same_tree(a: &dyn FileSystem, b: &dyn FileSystem) {
    let (wa, wb) = (walk(a), walk(b));
    let pa: Vec<&str> = wa.iter().map(|(p, _)| p.as_str()).collect();
    let pb: Vec<&str> = wb.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(pa, pb, "names differ");
    let mut inos: HashMap<Ino, Ino> = HashMap::new();
    let mut back: BTreeMap<Ino, Ino> = BTreeMap::new();
    for ((path, ia), (_, ib)) in wa.iter().zip(&wb) {
        assert_eq!(*inos.entry(*ia).or_insert(*ib), *ib, "{path}: hard links differ");
        assert_eq!(*back.entry(*ib).or_insert(*ia), *ia, "{path}: hard links differ");
        let (ma, mb) = (a.metadata(*ia).unwrap(), b.metadata(*ib).unwrap());
        assert_eq!(ma.kind, mb.kind, "{path}");
        assert_eq!(ma.mode, mb.mode, "{path}");
        assert_eq!(ma.mtime, mb.mtime, "{path}");
        assert_eq!(ma.size, mb.size, "{path}");
        assert_eq!(ma.nlink, mb.nlink, "{path}");
        match ma.kind {
            FileType::File => assert!(read_all(a, *ia) == read_all(b, *ib), "{path}: content differs"),
            FileType::Symlink => assert_eq!(a.readlink(*ia).unwrap(), b.readlink(*ib).unwrap(), "{path}"),
            FileType::Dir => {}
        }
    }
    let (ra, rb) = (a.metadata(a.root()).unwrap(), b.metadata(b.root()).unwrap());
    assert_eq!((ra.mode, ra.mtime, ra.nlink), (rb.mode, rb.mtime, rb.nlink), "root");
}

/// What a corrupt (or refused) pack's error says is wrong; anything else
/// fails the test.
pub(crate) fn kind<T>(r: packfs_core::Result<T>) -> packfs_core::pack::CorruptKind {
    match r {
        Err(packfs_core::Error::Corrupt(c)) => c.kind,
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("opened"),
    }
}

/// `good` edited by `edit`, resealed (checksums made right again, so the
/// edit reaches the structural checks), and opened.
pub(crate) fn open_edited(good: &[u8], edit: &dyn Fn(&mut Vec<u8>)) -> packfs_core::Result<PackFs<Vec<u8>>> {
    let mut b = good.to_vec();
    edit(&mut b);
    fuzzing::reseal(&mut b);
    PackFs::open(b)
}

/// The kind of corruption `r` was refused for; panics if it opened or
/// failed otherwise.
pub(crate) fn corrupt_kind(r: packfs_core::Result<PackFs<Vec<u8>>>) -> CorruptKind {
    match r {
        Err(packfs_core::Error::Corrupt(c)) => c.kind,
        other => panic!("{:?}", other.map(|p| p.info())),
    }
}
