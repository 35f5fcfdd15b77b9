//! Trees by path: a [`Layout`] to start a guest from, written into PackFS
//! and into a host directory alike, and a [`Tree`] to compare what it
//! leaves, read through the `FileSystem` API or from a host directory.

use std::path::Path;

use std::collections::{BTreeMap, BTreeSet};

use packfs_core::{DirEntry, FileSystem, FileType, Ino, MemFs, Metadata, OpenOptions};

/// A tree to start from, by path: its directories (parents first), its
/// files and their bytes, its symlinks and their targets.
pub struct Layout {
    /// Directories, each after its parent.
    pub dirs: &'static [&'static str],
    /// Files and their bytes.
    pub files: Vec<(String, Vec<u8>)>,
    /// Symlinks and their targets.
    pub links: &'static [(&'static str, &'static str)],
}

impl Layout {
    /// A `MemFs` holding the tree: directories, then files, then symlinks.
    pub fn in_memory(&self) -> MemFs {
        let fs = MemFs::new();
        self.write_into(&fs);
        fs
    }

    /// Writes the tree into the writable, empty `fs`, in the same order.
    pub fn write_into(&self, fs: &dyn FileSystem) {
        let parent = |path: &str| -> (Ino, String) {
            match path.rsplit_once('/') {
                Some((dir, name)) => {
                    (packfs_core::resolve::resolve(fs, fs.root(), dir, true).unwrap(), name.to_owned())
                }
                None => (fs.root(), path.to_owned()),
            }
        };
        for d in self.dirs {
            let (dir, name) = parent(d);
            fs.mkdir(dir, &name, 0o755).unwrap();
        }
        for (path, data) in &self.files {
            let (dir, name) = parent(path);
            let ino = fs.open(dir, &name, &OpenOptions::create()).unwrap();
            fs.write_at(ino, 0, data).unwrap();
            fs.close(ino);
        }
        for (path, target) in self.links {
            let (dir, name) = parent(path);
            fs.symlink(dir, &name, target).unwrap();
        }
    }

    /// Writes the tree into host directory `dir`, in the same order.
    pub fn write_to(&self, dir: &Path) {
        for d in self.dirs {
            std::fs::create_dir(dir.join(d)).unwrap();
        }
        for (path, data) in &self.files {
            std::fs::write(dir.join(path), data).unwrap();
        }
        for (path, target) in self.links {
            std::os::unix::fs::symlink(target, dir.join(path)).unwrap();
        }
    }
}

/// What each guest test (`host/tests/guests.rs`, `virt`) expects to find
/// at `/ro`: two files.
pub fn ro_layout() -> Layout {
    let files = [("hello.txt", "hello from ro\n"), ("sub/inner.txt", "inner\n")];
    Layout { dirs: &["sub"], files: files.map(|(p, d)| (p.to_owned(), d.as_bytes().to_vec())).into(), links: &[] }
}

/// What the writable root starts with, under `seed/`: on the overlay and
/// pack backends it lies in the lower, so the `seeded` guest changes what
/// is below (copy-up, whiteouts, merged listings). The other guests leave
/// it alone.
pub fn seed_layout() -> Layout {
    let mut files = vec![
        ("seed/a.txt".to_owned(), b"a\n".to_vec()),
        ("seed/b.txt".to_owned(), b"b\n".to_vec()),
        ("seed/c.txt".to_owned(), b"c\n".to_vec()),
        ("seed/sub/d.txt".to_owned(), b"d\n".to_vec()),
        ("seed/big.bin".to_owned(), (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect()),
    ];
    files.extend((0..100).map(|i| (format!("seed/many/f{i:03}"), format!("{i}\n").into_bytes())));
    Layout { dirs: &["seed", "seed/sub", "seed/empty", "seed/many"], files, links: &[] }
}

/// A tree by path: what each entry is and holds (file bytes, symlink
/// target), without times, modes or inode numbers, which differ between a
/// real directory and PackFS by design.
pub type Tree = std::collections::BTreeMap<String, Entry>;

/// One entry of a [`Tree`].
#[derive(Debug, PartialEq, Eq)]
pub enum Entry {
    /// A directory.
    Dir,
    /// A file and its bytes.
    File(Vec<u8>),
    /// A symlink and its target.
    Symlink(String),
}

/// Every entry under `fs`'s root, each directory's before what it holds:
/// its path (`/a/b`) and its entry.
pub fn walk(fs: &dyn FileSystem, mut visit: impl FnMut(&str, &DirEntry)) {
    let mut todo = vec![(fs.root(), String::new())];
    while let Some((dir, path)) = todo.pop() {
        let mut after: Option<String> = None;
        loop {
            let page = fs.read_dir(dir, after.as_deref(), 256).unwrap();
            let Some(last) = page.last() else { break };
            after = Some(last.name.to_string());
            for e in page {
                let p = format!("{path}/{}", e.name);
                if e.kind == FileType::Dir {
                    todo.push((e.ino, p.clone()));
                }
                visit(&p, &e);
            }
        }
    }
}

/// Every entry under host directory `root`, as [`walk`]: its path, its
/// host path and its metadata (of a symlink, not its target).
pub fn walk_dir(root: &Path, mut visit: impl FnMut(&str, &Path, &std::fs::Metadata)) {
    let mut todo = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, path)) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let p = format!("{path}/{}", e.file_name().to_str().unwrap());
            let md = std::fs::symlink_metadata(e.path()).unwrap();
            if md.is_dir() {
                todo.push((e.path(), p.clone()));
            }
            visit(&p, &e.path(), &md);
        }
    }
}

/// `fs`'s tree under its root, through the `FileSystem` API.
pub fn tree_of(fs: &dyn FileSystem) -> Tree {
    let mut tree = Tree::new();
    walk(fs, |p, e| {
        let entry = match e.kind {
            FileType::Dir => Entry::Dir,
            FileType::File => {
                let mut buf = vec![0; fs.metadata(e.ino).unwrap().size as usize];
                let n = fs.read_at(e.ino, 0, &mut buf).unwrap();
                buf.truncate(n);
                Entry::File(buf)
            }
            FileType::Symlink => Entry::Symlink(fs.readlink(e.ino).unwrap()),
        };
        tree.insert(p.to_owned(), entry);
    });
    tree
}

/// The tree under host directory `root`.
pub fn tree_of_dir(root: &Path) -> Tree {
    let mut tree = Tree::new();
    walk_dir(root, |p, host, md| {
        let entry = if md.is_dir() {
            Entry::Dir
        } else if md.is_symlink() {
            Entry::Symlink(std::fs::read_link(host).unwrap().to_str().unwrap().to_owned())
        } else {
            Entry::File(std::fs::read(host).unwrap())
        };
        tree.insert(p.to_owned(), entry);
    });
    tree
}

/// A tree as a guest left it, for the differential tests: what each path
/// is and holds, what `M` says of each path's inode (the root's at `/`),
/// and which paths are one inode.
#[derive(Debug)]
pub struct Final<M> {
    /// What each path is and holds.
    pub tree: Tree,
    /// Each path's inode, as the test reads it.
    pub meta: BTreeMap<String, M>,
    /// The paths of each inode with more than one, sorted.
    pub links: BTreeSet<Vec<String>>,
}

impl<M> Final<M> {
    /// `fs`'s, each inode read by `of`.
    pub fn of(fs: &dyn FileSystem, of: impl Fn(&Metadata) -> M) -> Self {
        let read = |ino| of(&fs.metadata(ino).unwrap());
        let mut meta = BTreeMap::from([("/".to_owned(), read(fs.root()))]);
        let mut inodes = BTreeMap::<Ino, Vec<String>>::new();
        walk(fs, |p, e| {
            if e.kind != FileType::Dir {
                inodes.entry(e.ino).or_default().push(p.to_owned());
            }
            meta.insert(p.to_owned(), read(e.ino));
        });
        Final { tree: tree_of(fs), meta, links: links(inodes) }
    }

    /// The tree under host directory `root`'s, each inode read by `of`.
    pub fn of_dir(root: &Path, of: impl Fn(&std::fs::Metadata) -> M) -> Self {
        use std::os::unix::fs::MetadataExt;
        let mut meta = BTreeMap::from([("/".to_owned(), of(&std::fs::symlink_metadata(root).unwrap()))]);
        let mut inodes = BTreeMap::<(u64, u64), Vec<String>>::new();
        walk_dir(root, |p, _, md| {
            if !md.is_dir() {
                inodes.entry((md.dev(), md.ino())).or_default().push(p.to_owned());
            }
            meta.insert(p.to_owned(), of(md));
        });
        Final { tree: tree_of_dir(root), meta, links: links(inodes) }
    }
}

/// The paths of each inode that has more than one, each list sorted.
fn links<K>(inodes: BTreeMap<K, Vec<String>>) -> BTreeSet<Vec<String>> {
    inodes
        .into_values()
        .filter(|paths| paths.len() > 1)
        .map(|mut paths| {
            paths.sort();
            paths
        })
        .collect()
}

/// `tree` as the JavaScript tests read one: a line per path, its kind, a
/// file by the SHA-256 of its bytes, a symlink with its target.
pub fn hashed(tree: &Tree) -> String {
    use sha2::Digest;
    tree.iter()
        .map(|(path, entry)| match entry {
            Entry::File(bytes) => format!("{path} file {:x}\n", sha2::Sha256::digest(bytes)),
            other => format!("{path} {other:?}\n"),
        })
        .collect()
}
