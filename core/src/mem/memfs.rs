//! [`MemFs`], its builder, and [`Snapshot`]: shown at the crate's root.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwap;

use super::tree::{Quota, ROOT, Touch, Tree, Usage};
use super::{Log, Op};
use crate::fold::FoldState;
use crate::meta::system_clock;
use crate::sync::lock;
use crate::{Clock, DirEntry, Error, FileSystem, FileType, Ino, Metadata, OpenOptions, Result, SetTime, Timestamp};

/// Open handles per inode. Only orphans (inodes with no name left) consult
/// it: an orphan lives while it has pins.
type Pins = HashMap<Ino, Pin, FoldState>;

/// The open handles of one inode, and whether it has lost its last name
/// (set by the publication that made it an orphan), so that the last close
/// knows to free it without looking.
#[derive(Default)]
struct Pin {
    count: u32,
    orphan: bool,
}

/// A writable in-memory filesystem.
///
/// ```
/// use packfs_core::{FileSystem, MemFs, OpenOptions, mem::ROOT};
///
/// let fs = MemFs::new();
/// let dir = fs.mkdir(ROOT, "docs", 0o755)?;
/// let f = fs.open(dir, "a.txt", &OpenOptions::create())?;
/// fs.write_at(f, 0, b"hello")?;
/// let before = fs.snapshot(); // O(1), readable forever
/// fs.write_at(f, 0, b"HELLO")?;
/// fs.close(f);
///
/// let mut buf = [0; 5];
/// before.read_at(f, 0, &mut buf)?;
/// assert_eq!(&buf, b"hello");
/// # Ok::<(), packfs_core::Error>(())
/// ```
pub struct MemFs {
    current: ArcSwap<Tree>,
    /// The writer lock, and what it guards: the writer's spare version.
    writer: Mutex<Spare>,
    pins: Mutex<Pins>,
    clock: Clock,
    journal: Option<Arc<dyn Log>>,
    /// Changes refused for passing a [`Quota`] cap.
    quota_refusals: std::sync::atomic::AtomicU64,
}

/// How a [`MemFs`] is made ([`MemFs::builder`]): `L` is its lower layer,
/// once [`lower`](MemFsBuilder::lower) gives one (an overlay's `build`
/// reads the lower's root, and so can fail; a plain one's cannot).
#[must_use]
pub struct MemFsBuilder<L = ()> {
    quota: Quota,
    clock: Option<Clock>,
    lower: L,
}

impl<L> MemFsBuilder<L> {
    /// Caps its bytes and inodes (an overlay's: those of the upper, its
    /// own); none by default.
    pub fn quota(mut self, quota: Quota) -> Self {
        self.quota = quota;
        self
    }

    /// Where its timestamps come from: the system clock by default (the
    /// web build gives `Date.now()`).
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    fn clock_or_system(&self) -> Clock {
        self.clock.clone().unwrap_or_else(system_clock)
    }
}

impl MemFsBuilder {
    /// Makes it an overlay: a writable upper over the read-only `lower`.
    /// Reads see the lower until an entry is changed; changes stay here. A
    /// lower directory is merged with the changes to it (a removed lower
    /// name leaves a whiteout), and a lower file's bytes are copied up on
    /// its first write.
    pub fn lower(self, lower: Arc<dyn FileSystem>) -> MemFsBuilder<Arc<dyn FileSystem>> {
        MemFsBuilder { quota: self.quota, clock: self.clock, lower }
    }

    /// The filesystem, empty.
    pub fn build(self) -> MemFs {
        let clock = self.clock_or_system();
        MemFs::from_tree(Tree::new(now(&clock), self.quota), clock)
    }
}

impl MemFsBuilder<Arc<dyn FileSystem>> {
    /// The overlay; fails when the lower's root cannot be read.
    pub fn build(self) -> Result<MemFs> {
        let clock = self.clock_or_system();
        let tree = Tree::overlay(self.lower, now(&clock), self.quota)?;
        Ok(MemFs::from_tree(tree, clock))
    }
}

/// A frozen version of a [`MemFs`]: a value that reads the same forever,
/// whatever happens to the filesystem it came from. Cloning is O(1).
#[derive(Clone)]
pub struct Snapshot(Arc<Tree>);

/// The most keys a spare catches up on; see [`Spare::copy_of`].
const CATCH_UP_MAX: usize = 256;

/// The version before the current one, taken back at publication, and the
/// keys the current version changed since.
///
/// Every change needs a private copy of the current version. Cloning it is
/// O(1), but then the change copies every node on its search paths that
/// the current version shares (~20 per path at 20,000 entries), and
/// publishing frees as many. When nobody holds the previous version any
/// more — no snapshot, no reader mid-operation (`ArcSwap::swap` accounts
/// for every reader before it returns the old version, so "unique" is
/// exact) — it is ours alone: the next change brings it up to date by
/// re-setting the few keys the current version changed, then changes it
/// in place, copying only nodes still shared with another version. The
/// price is memory: the writer keeps a second set of index nodes (inodes
/// and entries, never file bytes, which the two versions share).
#[derive(Default)]
struct Spare {
    tree: Option<Arc<Tree>>,
    behind: Vec<Touch>,
}

impl Spare {
    /// A private copy of `current` (the spare brought up to date, or a
    /// clone), recording the keys its change touches.
    fn copy_of(&mut self, current: &Arc<Tree>) -> Arc<Tree> {
        // One still held by a reader or a snapshot is let go, and so is one
        // behind by a big change (a batch): its keys one by one would cost
        // more than the paths a clone copies.
        let behind = self.behind.len();
        let mut next = match self.tree.take().filter(|spare| Arc::strong_count(spare) == 1 && behind <= CATCH_UP_MAX) {
            Some(mut spare) => {
                Arc::get_mut(&mut spare).expect("only the writer holds it").catch_up(current, &self.behind);
                spare
            }
            None => Arc::new(Tree::clone(current)),
        };
        // The list of keys it was behind by records the new change.
        Arc::get_mut(&mut next).expect("a private copy").start_log(std::mem::take(&mut self.behind));
        next
    }

    /// Keeps `old`, the version just replaced, and `behind`, the keys its
    /// replacement changed. A reader may still hold it; by the next change
    /// it has usually let go.
    fn keep(&mut self, old: Arc<Tree>, behind: Vec<Touch>) {
        self.tree = Some(old);
        self.behind = behind;
    }
}

/// The time `clock` gives, its nanoseconds past a second (from an
/// embedder's clock) carried into the seconds, as anywhere else.
fn now(clock: &Clock) -> Timestamp {
    let t = clock();
    Timestamp::new(t.secs, t.nanos)
}

impl Default for MemFs {
    fn default() -> Self {
        Self::new()
    }
}

impl MemFs {
    /// An empty filesystem without a quota, timestamps from the system
    /// clock; [`MemFs::builder`] makes one with a quota, a clock, or over
    /// a lower layer.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A filesystem made to order: a quota, a clock, a lower layer.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use packfs_core::mem::Quota;
    /// use packfs_core::{FileSystem, MemFs, read_file, write_file};
    ///
    /// let base = MemFs::new();
    /// write_file(&base, "a.txt", b"from the base")?;
    /// let fork = MemFs::builder()
    ///     .lower(Arc::new(base.snapshot()))
    ///     .quota(Quota { max_bytes: Some(1 << 20), ..Quota::default() })
    ///     .build()?;
    /// write_file(&fork, "a.txt", b"changed in the fork")?;
    /// assert_eq!(read_file(&base, "a.txt")?, b"from the base");
    /// # Ok::<(), packfs_core::Error>(())
    /// ```
    pub fn builder() -> MemFsBuilder {
        MemFsBuilder { quota: Quota::default(), clock: None, lower: () }
    }

    /// A writable filesystem starting from `snapshot`'s contents, in O(1)
    /// (plus the reaping of inodes that were open-but-unlinked there).
    pub fn fork(snapshot: &Snapshot) -> Self {
        let mut tree = Tree::clone(&snapshot.0);
        tree.reap_all();
        Self::from_tree(tree, system_clock())
    }

    /// An overlay: a writable, empty upper over the read-only `lower`, in
    /// O(1); [`MemFsBuilder::lower`] with a quota or a clock.
    pub fn overlay(lower: Arc<dyn FileSystem>) -> Result<Self> {
        Self::builder().lower(lower).build()
    }

    fn from_tree(tree: Tree, clock: Clock) -> Self {
        MemFs {
            current: ArcSwap::from_pointee(tree),
            writer: Mutex::new(Spare::default()),
            pins: Mutex::new(Pins::default()),
            clock,
            journal: None,
            quota_refusals: Default::default(),
        }
    }

    /// A filesystem holding `tree` (typically replayed from a journal) whose
    /// every change is recorded in `sink` before it is acknowledged (any
    /// [`journal::Sink`](crate::journal::Sink) is a [`Log`]).
    #[doc(hidden)]
    pub fn journaled(tree: Tree, sink: Arc<dyn Log>, clock: Clock) -> Self {
        MemFs { journal: Some(sink), ..Self::from_tree(tree, clock) }
    }

    /// The current version, in O(1). It never changes.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot(self.current.load_full())
    }

    /// Runs `f` on the current version while no change is under way, so
    /// that every change either is in the tree `f` sees or begins after
    /// `f` returns. A journal rewrites its log so, and closes its log
    /// before a checkpoint so: no change can be recorded in the old log
    /// and missing from the pack.
    pub fn settled<T>(&self, f: impl FnOnce(&Tree) -> T) -> T {
        // A change holds the writer lock from its record to its publication.
        let _writer = lock(&self.writer);
        f(&self.current.load())
    }

    /// Current usage.
    pub fn usage(&self) -> Usage {
        self.current.load().usage()
    }

    /// The quota set on it.
    pub fn quota(&self) -> Quota {
        self.current.load().quota()
    }

    /// How many changes were refused with [`Error::Quota`] so far.
    pub fn quota_refusals(&self) -> u64 {
        self.quota_refusals.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Changes the quota; see [`Tree::set_quota`]. Quotas are settings,
    /// not data: a journal does not record them.
    pub fn set_quota(&self, quota: Quota) {
        // Cannot fail.
        let _ = self.commit(
            |t, _| {
                t.set_quota(quota);
                Ok(())
            },
            |_, _| {},
        );
    }

    /// Applies `f` to the tree as one atomic change: readers see all of it
    /// or none of it, and an error discards all of it. A journaled
    /// filesystem records single operations only: `Unsupported` there.
    pub fn batch<T>(&self, f: impl FnOnce(&mut Tree, Timestamp) -> Result<T>) -> Result<T> {
        if self.journal.is_some() {
            return Err(Error::Unsupported);
        }
        self.commit(
            |tree, now| {
                let before = tree.usage();
                let out = f(tree, now)?;
                tree.check_growth(before)?;
                Ok(out)
            },
            |_, _| {},
        )
    }

    /// The write path of every `FileSystem` change: apply `op`, journal it,
    /// publish (pinning the result inode when `pin`), and, with group commit,
    /// wait for durability before acknowledging.
    fn apply(&self, op: Op<'_>, pin: bool) -> Result<u64> {
        let mut pending = None;
        let out = self.commit(
            |tree, now| {
                let out = op.apply(tree, now)?;
                if let Some(sink) = &self.journal {
                    let seq = sink.record(&op, now)?;
                    if sink.durable_before_visible() {
                        sink.durable(seq)?;
                    } else {
                        pending = Some((sink, seq));
                    }
                }
                Ok(out)
            },
            |&out, pins| {
                if pin {
                    pins.entry(out).or_default().count += 1;
                }
            },
        )?;
        if let Some((sink, seq)) = pending {
            sink.durable(seq)?;
        }
        Ok(out)
    }

    /// The one write path: change a private copy of the current version,
    /// reap unpinned orphans, publish. `pin` runs under the pin lock before
    /// publication, so nothing can reap what it pins. A failed change
    /// publishes nothing.
    fn commit<T>(
        &self,
        change: impl FnOnce(&mut Tree, Timestamp) -> Result<T>,
        pin: impl FnOnce(&T, &mut Pins),
    ) -> Result<T> {
        let mut spare = lock(&self.writer);
        let current = self.current.load_full();
        let mut next = spare.copy_of(&current);
        let tree = Arc::get_mut(&mut next).expect("a private copy");
        let out = match change(tree, now(&self.clock)) {
            Ok(out) => out,
            Err(e) => {
                if e == Error::Quota {
                    self.quota_refusals.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                // Undo: set the touched keys back. The copy then equals
                // `current`, behind by nothing.
                let mut touched = tree.take_log();
                tree.catch_up(&current, &touched);
                touched.clear();
                spare.keep(next, touched);
                return Err(e);
            }
        };
        let mut pins = lock(&self.pins);
        pin(&out, &mut pins);
        // A pinned orphan stays, its pin told so that its last close frees it.
        tree.reap_unless(|ino| pins.get_mut(&ino).map(|pin| pin.orphan = true).is_some());
        let touched = tree.take_log();
        let old = self.current.swap(next);
        drop(pins);
        drop(current);
        if let Some(log) = &self.journal {
            log.published(&self.current.load());
        }
        spare.keep(old, touched);
        Ok(out)
    }
}

impl FileSystem for MemFs {
    fn root(&self) -> Ino {
        ROOT
    }

    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        self.current.load().lookup(dir, name)
    }

    fn lookup_kind(&self, dir: Ino, name: &str) -> Result<(Ino, FileType)> {
        self.current.load().lookup_kind(dir, name)
    }

    fn metadata(&self, ino: Ino) -> Result<Metadata> {
        self.current.load().metadata(ino)
    }

    fn parent(&self, dir: Ino) -> Result<Ino> {
        self.current.load().parent(dir)
    }

    fn inode_count_hint(&self) -> Option<u64> {
        self.current.load().inode_count_hint()
    }

    fn open(&self, dir: Ino, name: &str, opts: &OpenOptions) -> Result<Ino> {
        if opts.create || opts.truncate {
            return self.apply(Op::Open { dir, name, opts: *opts }, true);
        }
        // Under the pin lock nothing can publish, so the inode found here
        // cannot be reaped before it is pinned.
        let mut pins = lock(&self.pins);
        let ino = self.current.load().open_existing(dir, name, opts)?.ok_or(Error::NotFound)?;
        pins.entry(ino).or_default().count += 1;
        Ok(ino)
    }

    fn open_ino(&self, ino: Ino) -> Result<()> {
        let mut pins = lock(&self.pins);
        self.current.load().metadata(ino)?;
        pins.entry(ino).or_default().count += 1;
        Ok(())
    }

    fn close(&self, ino: Ino) {
        let orphan = {
            let mut pins = lock(&self.pins);
            let Some(pin) = pins.get_mut(&ino) else { return };
            pin.count -= 1;
            if pin.count > 0 {
                return;
            }
            pins.remove(&ino).is_some_and(|pin| pin.orphan)
        };
        if orphan {
            // The commit reaps it unless someone pinned it again meanwhile.
            let reap = |tree: &mut Tree, _| {
                tree.reconsider(ino);
                Ok(())
            };
            let _ = self.commit(reap, |_, _| {});
        }
    }

    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.current.load().read_at(ino, offset, buf)
    }

    fn loaded(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        self.current.load().loaded(ino, offset, len)
    }

    fn may_wait(&self, ino: Ino, offset: u64, len: u64) -> bool {
        self.current.load().may_wait(ino, offset, len)
    }

    fn write_at(&self, ino: Ino, offset: u64, data: &[u8]) -> Result<usize> {
        self.apply(Op::WriteAt { ino, offset, data }, false).map(|n| n as usize)
    }

    fn append(&self, ino: Ino, data: &[u8]) -> Result<u64> {
        self.apply(Op::Append { ino, data }, false)
    }

    fn set_len(&self, ino: Ino, len: u64) -> Result<()> {
        self.apply(Op::SetLen { ino, len }, false).map(|_| ())
    }

    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        self.current.load().read_dir(dir, after, max)
    }

    fn mkdir(&self, dir: Ino, name: &str, mode: u32) -> Result<Ino> {
        self.apply(Op::Mkdir { dir, name, mode }, false)
    }

    fn rmdir(&self, dir: Ino, name: &str) -> Result<()> {
        self.apply(Op::Rmdir { dir, name }, false).map(|_| ())
    }

    fn unlink(&self, dir: Ino, name: &str) -> Result<()> {
        self.apply(Op::Unlink { dir, name }, false).map(|_| ())
    }

    fn rename(&self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<()> {
        self.apply(Op::Rename { from_dir, from, to_dir, to }, false).map(|_| ())
    }

    fn symlink(&self, dir: Ino, name: &str, target: &str) -> Result<Ino> {
        self.apply(Op::Symlink { dir, name, target }, false)
    }

    fn readlink(&self, ino: Ino) -> Result<String> {
        self.current.load().readlink(ino)
    }

    fn link(&self, ino: Ino, dir: Ino, name: &str) -> Result<()> {
        self.apply(Op::Link { ino, dir, name }, false).map(|_| ())
    }

    fn set_times(&self, ino: Ino, atime: SetTime, mtime: SetTime) -> Result<()> {
        self.apply(Op::SetTimes { ino, atime, mtime }, false).map(|_| ())
    }

    fn set_mode(&self, ino: Ino, mode: u32) -> Result<()> {
        self.apply(Op::SetMode { ino, mode }, false).map(|_| ())
    }
}

impl From<Tree> for Snapshot {
    fn from(tree: Tree) -> Self {
        Snapshot(Arc::new(tree))
    }
}

impl std::ops::Deref for Snapshot {
    type Target = Tree;

    fn deref(&self) -> &Tree {
        &self.0
    }
}

/// A snapshot is a read-only filesystem: every change is `ReadOnly`, and
/// pins are unnecessary because nothing in it ever goes away.
impl FileSystem for Snapshot {
    fn root(&self) -> Ino {
        ROOT
    }

    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        self.0.lookup(dir, name)
    }

    fn lookup_kind(&self, dir: Ino, name: &str) -> Result<(Ino, FileType)> {
        self.0.lookup_kind(dir, name)
    }

    fn metadata(&self, ino: Ino) -> Result<Metadata> {
        self.0.metadata(ino)
    }

    fn parent(&self, dir: Ino) -> Result<Ino> {
        self.0.parent(dir)
    }

    fn inode_count_hint(&self) -> Option<u64> {
        self.0.inode_count_hint()
    }

    fn open(&self, dir: Ino, name: &str, opts: &OpenOptions) -> Result<Ino> {
        if opts.writes() || opts.create {
            return Err(Error::ReadOnly);
        }
        self.0.open_existing(dir, name, opts)?.ok_or(Error::NotFound)
    }

    fn open_ino(&self, ino: Ino) -> Result<()> {
        self.0.metadata(ino).map(|_| ())
    }

    fn close(&self, _ino: Ino) {}

    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        self.0.read_at(ino, offset, buf)
    }

    fn loaded(&self, ino: Ino, offset: u64, len: u64) -> Result<()> {
        self.0.loaded(ino, offset, len)
    }

    fn may_wait(&self, ino: Ino, offset: u64, len: u64) -> bool {
        self.0.may_wait(ino, offset, len)
    }

    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        self.0.read_dir(dir, after, max)
    }

    fn readlink(&self, ino: Ino) -> Result<String> {
        self.0.readlink(ino)
    }
}
