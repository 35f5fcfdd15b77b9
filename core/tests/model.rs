//! Randomized operation sequences against MemFs and a reference model: a
//! `BTreeMap` from paths to node ids. Every result (value or error) and the
//! final tree must agree, and every snapshot taken along the way must still
//! equal the model as it was then.

use std::collections::{BTreeMap, HashMap};

use packfs_core::{DirEntry, Error, FileSystem, FileType, Ino, MemFs, OpenOptions, Result};
use proptest::prelude::*;

// ---- the reference model ----------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
enum Node {
    File(Vec<u8>),
    Dir,
    Symlink(String),
}

#[derive(Clone, Default)]
struct Model {
    /// Path ("a/b", "" is the root) -> node id.
    paths: BTreeMap<String, u64>,
    nodes: HashMap<u64, Node>,
    next: u64,
}

fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() { name.to_string() } else { format!("{dir}/{name}") }
}

impl Model {
    fn new() -> Self {
        let mut m = Model::default();
        m.add("", Node::Dir);
        m
    }

    fn add(&mut self, path: &str, node: Node) {
        self.next += 1;
        self.paths.insert(path.to_string(), self.next);
        self.nodes.insert(self.next, node);
    }

    fn node(&self, path: &str) -> Option<&Node> {
        self.paths.get(path).map(|id| &self.nodes[id])
    }

    /// The parent directory of `path` must exist and be a directory, every
    /// component of the way (symlinks are not followed by these ops).
    fn parent_ok(&self, path: &str) -> Result<()> {
        let (dir, _) = split(path);
        let mut cur = String::new();
        for part in dir.split('/').filter(|p| !p.is_empty()) {
            cur = join(&cur, part);
            match self.node(&cur) {
                None => return Err(Error::NotFound),
                Some(Node::Dir) => {}
                Some(_) => return Err(Error::NotDir),
            }
        }
        Ok(())
    }

    fn children(&self, dir: &str) -> Vec<(String, FileType)> {
        let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
        self.paths
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .filter(|(p, _)| !p.is_empty() && !p[prefix.len()..].contains('/'))
            .map(|(p, id)| (p[prefix.len()..].to_string(), kind(&self.nodes[id])))
            .collect()
    }

    fn nlink(&self, path: &str) -> u64 {
        let id = self.paths[path];
        match self.nodes[&id] {
            Node::Dir => 2 + self.children(path).iter().filter(|(_, k)| *k == FileType::Dir).count() as u64,
            _ => self.paths.values().filter(|&&v| v == id).count() as u64,
        }
    }

    fn gc(&mut self) {
        let live: std::collections::HashSet<u64> = self.paths.values().copied().collect();
        self.nodes.retain(|id, _| live.contains(id));
    }

    fn open_file(&self, path: &str) -> Result<u64> {
        self.parent_ok(path)?;
        match self.node(path) {
            None => Err(Error::NotFound),
            Some(Node::Dir) => Err(Error::IsDir),
            Some(Node::Symlink(_)) => Err(Error::Loop),
            Some(Node::File(_)) => Ok(self.paths[path]),
        }
    }

    fn file_mut(&mut self, id: u64) -> &mut Vec<u8> {
        match self.nodes.get_mut(&id) {
            Some(Node::File(data)) => data,
            _ => unreachable!(),
        }
    }

    fn apply(&mut self, op: &Op) -> Result<Outcome> {
        match op {
            Op::Create { path, exclusive } => {
                self.parent_ok(path)?;
                match self.node(path) {
                    Some(_) if *exclusive => Err(Error::Exists),
                    Some(Node::Dir) => Err(Error::IsDir),
                    Some(Node::Symlink(_)) => Err(Error::Loop),
                    Some(Node::File(_)) => {
                        let id = self.paths[path.as_str()];
                        self.file_mut(id).clear();
                        Ok(Outcome::Unit)
                    }
                    None => {
                        self.add(path, Node::File(Vec::new()));
                        Ok(Outcome::Unit)
                    }
                }
            }
            Op::Write { path, offset, data } => {
                let id = self.open_file(path)?;
                let f = self.file_mut(id);
                let (off, end) = (*offset as usize, *offset as usize + data.len());
                if !data.is_empty() {
                    if f.len() < end {
                        f.resize(end, 0);
                    }
                    f[off..end].copy_from_slice(data);
                }
                Ok(Outcome::Unit)
            }
            Op::Append { path, data } => {
                let id = self.open_file(path)?;
                let f = self.file_mut(id);
                let at = f.len() as u64;
                f.extend_from_slice(data);
                Ok(Outcome::Offset(at))
            }
            Op::Truncate { path, len } => {
                let id = self.open_file(path)?;
                self.file_mut(id).resize(*len as usize, 0);
                Ok(Outcome::Unit)
            }
            Op::Read { path } => {
                self.parent_ok(path)?;
                match self.node(path) {
                    None => Err(Error::NotFound),
                    Some(Node::Symlink(_)) => Err(Error::Loop),
                    Some(Node::Dir) => Err(Error::IsDir),
                    Some(Node::File(d)) => Ok(Outcome::Bytes(d.clone())),
                }
            }
            Op::Mkdir { path } => {
                self.parent_ok(path)?;
                if self.node(path).is_some() {
                    return Err(Error::Exists);
                }
                self.add(path, Node::Dir);
                Ok(Outcome::Unit)
            }
            Op::Rmdir { path } => {
                self.parent_ok(path)?;
                match self.node(path) {
                    None => Err(Error::NotFound),
                    Some(Node::Dir) if !self.children(path).is_empty() => Err(Error::NotEmpty),
                    Some(Node::Dir) => {
                        self.paths.remove(path.as_str());
                        self.gc();
                        Ok(Outcome::Unit)
                    }
                    Some(_) => Err(Error::NotDir),
                }
            }
            Op::Unlink { path } => {
                self.parent_ok(path)?;
                match self.node(path) {
                    None => Err(Error::NotFound),
                    Some(Node::Dir) => Err(Error::IsDir),
                    Some(_) => {
                        self.paths.remove(path.as_str());
                        self.gc();
                        Ok(Outcome::Unit)
                    }
                }
            }
            Op::Symlink { path, target } => {
                self.parent_ok(path)?;
                if self.node(path).is_some() {
                    return Err(Error::Exists);
                }
                self.add(path, Node::Symlink(target.clone()));
                Ok(Outcome::Unit)
            }
            Op::Link { from, to } => {
                self.parent_ok(from)?;
                let id = *self.paths.get(from.as_str()).ok_or(Error::NotFound)?;
                self.parent_ok(to)?;
                if self.nodes[&id] == Node::Dir {
                    return Err(Error::NotPermitted);
                }
                if self.node(to).is_some() {
                    return Err(Error::Exists);
                }
                self.paths.insert(to.clone(), id);
                Ok(Outcome::Unit)
            }
            Op::Rename { from, to } => self.rename(from, to),
            Op::Stat { path } => {
                self.parent_ok(path)?;
                let node = self.node(path).ok_or(Error::NotFound)?;
                let size = match node {
                    Node::File(d) => d.len() as u64,
                    Node::Dir => 0,
                    Node::Symlink(t) => t.len() as u64,
                };
                Ok(Outcome::Stat(kind(node), size, self.nlink(path)))
            }
            Op::ReadDir { path } => {
                if !path.is_empty() {
                    self.parent_ok(path)?;
                    match self.node(path) {
                        None => return Err(Error::NotFound),
                        Some(Node::Dir) => {}
                        Some(_) => return Err(Error::NotDir),
                    }
                }
                Ok(Outcome::Entries(self.children(path)))
            }
            Op::OpenUnlinkWrite { path, data } => {
                let id = self.open_file(path)?;
                let mut content = match &self.nodes[&id] {
                    Node::File(d) => d.clone(),
                    _ => unreachable!(),
                };
                self.paths.remove(path.as_str());
                // Through the handle the (maybe orphaned) inode takes the write.
                content.extend_from_slice(data);
                let still_named = self.paths.values().any(|&v| v == id);
                if still_named {
                    *self.file_mut(id) = content.clone();
                }
                self.gc();
                Ok(Outcome::Bytes(content))
            }
        }
    }

    fn rename(&mut self, from: &str, to: &str) -> Result<Outcome> {
        self.parent_ok(from)?;
        self.parent_ok(to)?;
        let src = *self.paths.get(from).ok_or(Error::NotFound)?;
        let src_dir = self.nodes[&src] == Node::Dir;
        // Linux's order: a directory moved beneath itself, a name moved
        // onto a directory above it, before what the names are.
        let under = |path: &str, dir: &str| path == dir || path.starts_with(&format!("{dir}/"));
        let ((to_parent, _), (from_parent, _)) = (split(to), split(from));
        if src_dir && under(to_parent, from) {
            return Err(Error::Invalid);
        }
        if self.paths.get(to).is_some_and(|dst| self.nodes[dst] == Node::Dir) && under(from_parent, to) {
            return Err(Error::NotEmpty);
        }
        if let Some(&dst) = self.paths.get(to) {
            if dst == src {
                return Ok(Outcome::Unit);
            }
            let dst_dir = self.nodes[&dst] == Node::Dir;
            match (src_dir, dst_dir) {
                (true, false) => return Err(Error::NotDir),
                (false, true) => return Err(Error::IsDir),
                (true, true) if !self.children(to).is_empty() => return Err(Error::NotEmpty),
                _ => {}
            }
        }
        self.paths.remove(to);
        let moved: Vec<(String, u64)> = self
            .paths
            .iter()
            .filter(|(p, _)| *p == from || p.starts_with(&format!("{from}/")))
            .map(|(p, &id)| (p.clone(), id))
            .collect();
        for (p, id) in moved {
            self.paths.remove(&p);
            self.paths.insert(format!("{to}{}", &p[from.len()..]), id);
        }
        self.gc();
        Ok(Outcome::Unit)
    }
}

fn kind(n: &Node) -> FileType {
    match n {
        Node::File(_) => FileType::File,
        Node::Dir => FileType::Dir,
        Node::Symlink(_) => FileType::Symlink,
    }
}

// ---- operations ---------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Create { path: String, exclusive: bool },
    Write { path: String, offset: u16, data: Vec<u8> },
    Append { path: String, data: Vec<u8> },
    Truncate { path: String, len: u16 },
    Read { path: String },
    Mkdir { path: String },
    Rmdir { path: String },
    Unlink { path: String },
    Symlink { path: String, target: String },
    Link { from: String, to: String },
    Rename { from: String, to: String },
    Stat { path: String },
    ReadDir { path: String },
    OpenUnlinkWrite { path: String, data: Vec<u8> },
}

#[derive(Debug, PartialEq)]
enum Outcome {
    Unit,
    Offset(u64),
    Bytes(Vec<u8>),
    Stat(FileType, u64, u64),
    Entries(Vec<(String, FileType)>),
}

fn path() -> impl Strategy<Value = String> {
    // Three names, up to three deep: 39 paths, so operations collide often.
    proptest::collection::vec(prop_oneof![Just("a"), Just("b"), Just("c")], 1..=3).prop_map(|v| v.join("/"))
}

fn data() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..300)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (path(), any::<bool>()).prop_map(|(path, exclusive)| Op::Create { path, exclusive }),
        3 => (path(), 0u16..2000, data()).prop_map(|(path, offset, data)| Op::Write { path, offset, data }),
        2 => (path(), data()).prop_map(|(path, data)| Op::Append { path, data }),
        1 => (path(), 0u16..3000).prop_map(|(path, len)| Op::Truncate { path, len }),
        2 => path().prop_map(|path| Op::Read { path }),
        3 => path().prop_map(|path| Op::Mkdir { path }),
        2 => path().prop_map(|path| Op::Rmdir { path }),
        2 => path().prop_map(|path| Op::Unlink { path }),
        1 => (path(), "[a-z./]{1,8}").prop_map(|(path, target)| Op::Symlink { path, target }),
        1 => (path(), path()).prop_map(|(from, to)| Op::Link { from, to }),
        3 => (path(), path()).prop_map(|(from, to)| Op::Rename { from, to }),
        2 => path().prop_map(|path| Op::Stat { path }),
        1 => prop_oneof![Just(String::new()), path()].prop_map(|path| Op::ReadDir { path }),
        1 => (path(), data()).prop_map(|(path, data)| Op::OpenUnlinkWrite { path, data }),
    ]
}

// ---- driving a FileSystem -------------------------------------------------------

/// The directory holding `path`'s last name, walking only through
/// directories (the model does not follow symlinks either).
fn parent<'p>(fs: &dyn FileSystem, path: &'p str) -> Result<(Ino, &'p str)> {
    let (dir, name) = split(path);
    let mut ino = fs.root();
    for part in dir.split('/').filter(|p| !p.is_empty()) {
        ino = fs.lookup(ino, part)?;
        if fs.metadata(ino)?.kind != FileType::Dir {
            return Err(Error::NotDir);
        }
    }
    Ok((ino, name))
}

fn with_file<T>(fs: &dyn FileSystem, path: &str, f: impl FnOnce(Ino) -> Result<T>) -> Result<T> {
    let (dir, name) = parent(fs, path)?;
    let ino = fs.open(dir, name, &OpenOptions { write: true, ..OpenOptions::default() })?;
    let out = f(ino);
    fs.close(ino);
    out
}

fn read_all(fs: &dyn FileSystem, ino: Ino) -> Result<Vec<u8>> {
    let mut out = vec![0; fs.metadata(ino)?.size as usize];
    let n = fs.read_at(ino, 0, &mut out)?;
    assert_eq!(n, out.len());
    Ok(out)
}

fn list(fs: &dyn FileSystem, dir: Ino) -> Result<Vec<DirEntry>> {
    // Page through in small steps to exercise the cookie.
    let mut all: Vec<DirEntry> = Vec::new();
    loop {
        let page = fs.read_dir(dir, all.last().map(|e| &*e.name), 2)?;
        if page.is_empty() {
            return Ok(all);
        }
        all.extend(page);
    }
}

fn apply(fs: &dyn FileSystem, op: &Op) -> Result<Outcome> {
    match op {
        Op::Create { path, exclusive } => {
            let (dir, name) = parent(fs, path)?;
            let opts = if *exclusive { OpenOptions::create_new() } else { OpenOptions::create() };
            let ino = fs.open(dir, name, &opts)?;
            fs.close(ino);
            Ok(Outcome::Unit)
        }
        Op::Write { path, offset, data } => with_file(fs, path, |ino| {
            assert_eq!(fs.write_at(ino, *offset as u64, data)?, data.len());
            Ok(Outcome::Unit)
        }),
        Op::Append { path, data } => with_file(fs, path, |ino| fs.append(ino, data).map(Outcome::Offset)),
        Op::Truncate { path, len } => with_file(fs, path, |ino| fs.set_len(ino, *len as u64).map(|_| Outcome::Unit)),
        Op::Read { path } => {
            let (dir, name) = parent(fs, path)?;
            let ino = fs.open(dir, name, &OpenOptions::read())?;
            let out = read_all(fs, ino);
            fs.close(ino);
            out.map(Outcome::Bytes)
        }
        Op::Mkdir { path } => {
            let (dir, name) = parent(fs, path)?;
            fs.mkdir(dir, name, 0o755).map(|_| Outcome::Unit)
        }
        Op::Rmdir { path } => {
            let (dir, name) = parent(fs, path)?;
            fs.rmdir(dir, name).map(|_| Outcome::Unit)
        }
        Op::Unlink { path } => {
            let (dir, name) = parent(fs, path)?;
            fs.unlink(dir, name).map(|_| Outcome::Unit)
        }
        Op::Symlink { path, target } => {
            let (dir, name) = parent(fs, path)?;
            fs.symlink(dir, name, target).map(|_| Outcome::Unit)
        }
        Op::Link { from, to } => {
            let (fdir, fname) = parent(fs, from)?;
            let ino = fs.lookup(fdir, fname)?;
            let (tdir, tname) = parent(fs, to)?;
            fs.link(ino, tdir, tname).map(|_| Outcome::Unit)
        }
        Op::Rename { from, to } => {
            let (fdir, fname) = parent(fs, from)?;
            let (tdir, tname) = parent(fs, to)?;
            fs.rename(fdir, fname, tdir, tname).map(|_| Outcome::Unit)
        }
        Op::Stat { path } => {
            let (dir, name) = parent(fs, path)?;
            let md = fs.metadata(fs.lookup(dir, name)?)?;
            Ok(Outcome::Stat(md.kind, md.size, md.nlink))
        }
        Op::ReadDir { path } => {
            let dir = if path.is_empty() {
                fs.root()
            } else {
                let (dir, name) = parent(fs, path)?;
                fs.lookup(dir, name)?
            };
            let entries = list(fs, dir)?;
            Ok(Outcome::Entries(entries.into_iter().map(|e| (e.name.to_string(), e.kind)).collect()))
        }
        Op::OpenUnlinkWrite { path, data } => {
            let (dir, name) = parent(fs, path)?;
            let ino = fs.open(dir, name, &OpenOptions { write: true, ..OpenOptions::default() })?;
            let out = (|| {
                fs.unlink(dir, name)?;
                fs.append(ino, data)?;
                read_all(fs, ino)
            })();
            fs.close(ino);
            out.map(Outcome::Bytes)
        }
    }
}

/// Walks the whole filesystem and the model and compares them.
fn assert_same_tree(fs: &dyn FileSystem, model: &Model) {
    fn walk(fs: &dyn FileSystem, dir: Ino, prefix: &str, out: &mut BTreeMap<String, (Node, u64)>) {
        for e in list(fs, dir).unwrap() {
            let path = join(prefix, &e.name);
            let md = fs.metadata(e.ino).unwrap();
            assert_eq!(md.kind, e.kind, "{path}: entry type");
            let node = match e.kind {
                FileType::File => Node::File(read_all(fs, e.ino).unwrap()),
                FileType::Dir => {
                    walk(fs, e.ino, &path, out);
                    Node::Dir
                }
                FileType::Symlink => Node::Symlink(fs.readlink(e.ino).unwrap()),
            };
            out.insert(path, (node, md.nlink));
        }
    }
    let mut got = BTreeMap::new();
    walk(fs, fs.root(), "", &mut got);
    let want: BTreeMap<String, (Node, u64)> = model
        .paths
        .iter()
        .filter(|(p, _)| !p.is_empty())
        .map(|(p, id)| (p.clone(), (model.nodes[id].clone(), model.nlink(p))))
        .collect();
    assert_eq!(got, want);
}

/// Runs `ops` on `fs` and the model side by side, comparing every result,
/// the tree's invariants after each step, the final tree, and snapshots.
fn run(fs: &MemFs, model: &mut Model, ops: &[Op]) -> std::result::Result<(), TestCaseError> {
    let mut snaps = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let want = model.apply(op);
        let got = apply(fs, op);
        prop_assert_eq!(&got, &want, "op #{}: {:?}", i, op);
        if i % 50 == 0 {
            snaps.push((fs.snapshot(), model.clone()));
        }
        fs.snapshot().check_consistency().map_err(TestCaseError::fail)?;
    }
    assert_same_tree(fs, model);
    for (snap, m) in &snaps {
        assert_same_tree(snap, m);
    }
    // Every handle was closed, so no orphan may survive.
    prop_assert!(fs.snapshot().orphans().is_empty());
    Ok(())
}

/// Every inode reachable from the root: path -> (metadata, content or
/// target). Inode numbers and timestamps included, so equal dumps mean
/// equal trees, exactly.
fn dump(fs: &dyn FileSystem) -> Dump {
    fn walk(fs: &dyn FileSystem, dir: Ino, prefix: &str, out: &mut BTreeMap<String, (packfs_core::Metadata, Vec<u8>)>) {
        for e in list(fs, dir).unwrap() {
            let path = join(prefix, &e.name);
            let md = fs.metadata(e.ino).unwrap();
            let data = match e.kind {
                FileType::File => read_all(fs, e.ino).unwrap(),
                FileType::Dir => {
                    walk(fs, e.ino, &path, out);
                    Vec::new()
                }
                FileType::Symlink => fs.readlink(e.ino).unwrap().into_bytes(),
            };
            out.insert(path, (md, data));
        }
    }
    let mut out = BTreeMap::new();
    out.insert(String::new(), (fs.metadata(fs.root()).unwrap(), Vec::new()));
    walk(fs, fs.root(), "", &mut out);
    out
}

type Dump = BTreeMap<String, (packfs_core::Metadata, Vec<u8>)>;

/// A journal kept in memory. It also records the filesystem as it was
/// before each record — the state after the records before it — so that a
/// log cut after `n` records can be checked against exactly that state.
#[derive(Default)]
struct VecSink {
    log: std::sync::Mutex<Vec<u8>>,
    fs: std::sync::OnceLock<std::sync::Weak<MemFs>>,
    states: std::sync::Mutex<Vec<Dump>>,
}

impl packfs_core::journal::Sink for VecSink {
    fn append(&self, record: &[u8]) -> Result<u64> {
        // Called before the change is published: the snapshot is the state
        // the previous records made.
        if let Some(fs) = self.fs.get().and_then(std::sync::Weak::upgrade) {
            self.states.lock().unwrap().push(dump(&fs.snapshot()));
        }
        let mut log = self.log.lock().unwrap();
        log.extend_from_slice(record);
        Ok(log.len() as u64)
    }
    fn sync(&self, _: u64) -> Result<()> {
        Ok(())
    }
    fn durable_before_visible(&self) -> bool {
        true
    }
}

/// A clock that ticks one microsecond per reading, so every change has its
/// own time and a replay that mixed them up would show.
fn ticking_clock() -> packfs_core::Clock {
    let t = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    std::sync::Arc::new(move || {
        let us = t.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        packfs_core::Timestamp::new(1_700_000_000 + us / 1_000_000, (us % 1_000_000) as u32 * 1000)
    })
}

/// A filesystem and its model after `pre`: an overlay's lower.
fn lower_tree(pre: &[Op]) -> std::result::Result<(MemFs, Model), TestCaseError> {
    let base = MemFs::new();
    let mut model = Model::new();
    for op in pre {
        prop_assert_eq!(apply(&base, op), model.apply(op));
    }
    Ok((base, model))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Replaying a journal rebuilds the exact tree: same inodes, contents,
    /// link counts and timestamps; and a log cut anywhere replays to the
    /// tree as it was after the last whole record.
    #[test]
    fn journal_replays_exactly(ops in proptest::collection::vec(op(), 1..200), cut in any::<proptest::sample::Index>()) {
        use packfs_core::journal::{replay, Header, Records};
        use packfs_core::mem::{Quota, Tree};
        let start = packfs_core::Timestamp::new(1_600_000_000, 0);
        let header = Header { generation: 0, created: start, image: false };
        let sink = std::sync::Arc::new(VecSink::default());
        let fs = std::sync::Arc::new(MemFs::journaled(Tree::new(start, Quota::default()), sink.clone(), ticking_clock()));
        sink.fs.set(std::sync::Arc::downgrade(&fs)).unwrap();
        let mut model = Model::new();
        for op in &ops {
            prop_assert_eq!(apply(&*fs, op), model.apply(op));
        }
        let log = sink.log.lock().unwrap().clone();
        let mut states = sink.states.lock().unwrap().clone();
        states.push(dump(&*fs));
        let mut tree = Tree::new(start, Quota::default());
        let r = replay(&mut tree, &header, &log).unwrap();
        prop_assert!(r.clean);
        prop_assert_eq!(r.valid_len, log.len() as u64);
        let replayed = packfs_core::Snapshot::from(tree);
        prop_assert_eq!(dump(&replayed), dump(&*fs));
        replayed.check_consistency().map_err(TestCaseError::fail)?;

        // Cut the log at an arbitrary byte: the records before the cut are
        // replayed, the torn one is not.
        let at = cut.index(log.len() + 1);
        let whole = Records::new(&log[..at]).count();
        let mut tree = Tree::new(start, Quota::default());
        let r = replay(&mut tree, &header, &log[..at]).unwrap();
        prop_assert_eq!(r.records as usize, whole);
        // Exactly the state the filesystem was in after those records.
        prop_assert_eq!(dump(&packfs_core::Snapshot::from(tree)), states[whole].clone());
    }

    /// A log rewritten mid-run as the tree's image, then the changes after
    /// it, replays to the exact tree (inode numbers, times, whiteouts,
    /// contents), on an empty tree and over a lower alike: a journal can
    /// rewrite its log while every handle stays open.
    #[test]
    fn journal_image_then_changes_replays_exactly(
        pre in proptest::collection::vec(op(), 0..100),
        ops in proptest::collection::vec(op(), 1..200),
        mid in any::<proptest::sample::Index>(),
    ) {
        use packfs_core::journal::{encode_part, replay, Header};
        use packfs_core::mem::{Quota, Tree};
        let start = packfs_core::Timestamp::new(1_600_000_000, 0);
        let (base, mut model) = lower_tree(&pre)?;
        let lower: Option<std::sync::Arc<dyn FileSystem>> =
            (!pre.is_empty()).then(|| std::sync::Arc::new(base.snapshot()) as _);
        let fresh = || match &lower {
            Some(lower) => Tree::overlay(lower.clone(), start, Quota::default()).unwrap(),
            None => Tree::new(start, Quota::default()),
        };
        let sink = std::sync::Arc::new(VecSink::default());
        let fs = MemFs::journaled(fresh(), sink.clone(), ticking_clock());
        let mid = mid.index(ops.len() + 1);
        for op in &ops[..mid] {
            prop_assert_eq!(apply(&fs, op), model.apply(op));
        }
        let mut body = Vec::new();
        let now = packfs_core::Timestamp::new(1_800_000_000, 0);
        fs.settled(|tree| tree.image(|part| {
            encode_part(&part, now, &mut body);
            Ok::<(), ()>(())
        })).unwrap();
        let from = sink.log.lock().unwrap().len();
        for op in &ops[mid..] {
            prop_assert_eq!(apply(&fs, op), model.apply(op));
        }
        body.extend_from_slice(&sink.log.lock().unwrap()[from..]);
        let mut tree = fresh();
        let header = Header { generation: 0, created: start, image: true };
        let r = replay(&mut tree, &header, &body).unwrap();
        prop_assert!(r.clean);
        let replayed = packfs_core::Snapshot::from(tree);
        prop_assert_eq!(dump(&replayed), dump(&fs));
        replayed.check_consistency().map_err(TestCaseError::fail)?;
    }

    #[test]
    fn memfs_matches_model(ops in proptest::collection::vec(op(), 1..400)) {
        run(&MemFs::new(), &mut Model::new(), &ops)?;
    }

    /// The same, on an overlay over a tree built by `pre`: lower entries are
    /// read, changed (copy-up), renamed and removed through the upper, and
    /// the lower never changes.
    #[test]
    fn overlay_matches_model(
        pre in proptest::collection::vec(op(), 1..200),
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        let (base, mut model) = lower_tree(&pre)?;
        let lower_model = model.clone();
        let lower: std::sync::Arc<dyn FileSystem> = std::sync::Arc::new(base.snapshot());
        let fs = MemFs::overlay(lower.clone()).unwrap();
        // A snapshot taken before any change reads through.
        assert_same_tree(&fs.snapshot(), &lower_model);
        run(&fs, &mut model, &ops)?;
        assert_same_tree(&*lower, &lower_model);
    }

    /// An overlay over a pack: random changes, then the overlay compacted
    /// into a new pack, which must hold exactly the model's tree; the lower
    /// pack is unchanged.
    #[test]
    fn overlay_over_pack_compacts_to_model(
        pre in proptest::collection::vec(op(), 1..200),
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        use packfs_core::pack::{PackFs, PackOptions};
        let (base, mut model) = lower_tree(&pre)?;
        let lower_model = model.clone();
        let mut bytes = Vec::new();
        PackOptions::new().write(&base.snapshot(), &mut bytes).unwrap();
        let lower: std::sync::Arc<dyn FileSystem> = std::sync::Arc::new(PackFs::open(bytes).unwrap());
        let fs = MemFs::overlay(lower.clone()).unwrap();
        run(&fs, &mut model, &ops)?;
        let mut compacted = Vec::new();
        PackOptions::new().write(&fs.snapshot(), &mut compacted).unwrap();
        let pack = PackFs::open(compacted).unwrap();
        prop_assert!(pack.verify().unwrap().is_ok());
        assert_same_tree(&pack, &model);
        assert_same_tree(&*lower, &lower_model);
    }
}
