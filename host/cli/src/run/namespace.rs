//! The guest's namespace: each `--mount`'s source opened, and all of them
//! in one mount table.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use packfs_core::mem::Quota;
use packfs_core::mount::MountTable;
use packfs_core::pack::ReadOptions;
use packfs_core::{FileSystem, MemFs};
use packfs_os::dir::{DirFs, FdBudget};
use packfs_os::journal::{Journal, SyncPolicy};

use crate::common::{Packs, bytes, open_pack};
use crate::spec::{LimitsShown, MountSpec, Source};

/// An opened mount: its filesystem, and what must live as long as it.
struct Opened {
    fs: Arc<dyn FileSystem>,
    read_only: bool,
    /// The in-memory tree behind a mount with limits, to report on.
    limited: Option<Arc<MemFs>>,
    /// The journal writing `fs`'s changes to disk.
    journal: Option<Journal>,
}

/// How a guest's packs are read: at random and again, so with the core's
/// chunk cache; every read checked.
fn guest_reads() -> ReadOptions {
    ReadOptions::new().verify_on_read(true)
}

/// `dir_fds`: what the fds of a host directory's open handles count
/// against.
fn open_source(source: &Source, packs: &Packs, dir_fds: &FdBudget) -> Result<Opened> {
    let plain = |fs: Arc<dyn FileSystem>, read_only| Opened { fs, read_only, limited: None, journal: None };
    let limited = |fs: MemFs| {
        let fs = Arc::new(fs);
        let has_limits = fs.quota() != Quota::default();
        Opened { fs: fs.clone(), read_only: false, limited: has_limits.then_some(fs), journal: None }
    };
    Ok(match source {
        Source::Mem(limits) => limited(MemFs::builder().quota(*limits).build()),
        Source::Pack(path) => plain(Arc::new(open_pack(packs, path, guest_reads())?), true),
        Source::PackOverlay(path, limits) => {
            let pack = Arc::new(open_pack(packs, path, guest_reads())?);
            let overlay = MemFs::builder()
                .lower(pack)
                .quota(*limits)
                .build()
                .with_context(|| format!("{}: mounting an overlay", path.display()))?;
            limited(overlay)
        }
        Source::Dir { path, read_only } => {
            let shown = path.display();
            let meta = std::fs::metadata(path).with_context(|| format!("{shown}"))?;
            if !meta.is_dir() {
                bail!("{shown}: not a directory");
            }
            let fs = DirFs::open(path, *read_only).with_context(|| format!("{shown}"))?;
            plain(Arc::new(fs.with_budget(dir_fds.clone())), *read_only)
        }
        Source::Host(path, _) => {
            bail!("host:{}: a pack read through the component's host is for packfs virt", path.display())
        }
        Source::Journal(dir, limits) => {
            let journal = Journal::open(dir, SyncPolicy::EveryOp, *limits)
                .with_context(|| format!("journal {}", dir.display()))?;
            let limited = (*limits != Quota::default()).then(|| journal.fs().clone());
            Opened { fs: journal.fs().clone(), read_only: false, limited, journal: Some(journal) }
        }
    })
}

/// The guest's namespace: every mount in one table.
pub(super) struct Namespace {
    pub(super) table: Arc<MountTable>,
    /// Each mount's guest path and what was opened for it.
    opened: Vec<(String, Opened)>,
    /// Shared by every host directory mounted: one guest's open files.
    dir_fds: FdBudget,
}

impl Namespace {
    pub(super) fn build(specs: &[MountSpec], packs: &Packs) -> Result<Namespace> {
        let mut specs: Vec<&MountSpec> = specs.iter().collect();
        // Shallowest first, so that a mount's parent is in place before it
        // (and a path given twice is found next to itself).
        specs.sort_by(|a, b| (a.depth(), &a.guest_path).cmp(&(b.depth(), &b.guest_path)));
        if let Some(w) = specs.windows(2).find(|w| w[0].guest_path == w[1].guest_path) {
            bail!("--mount {}: mounted twice", w[0].guest_path);
        }
        let root_spec = MountSpec { guest_path: "/".into(), source: Source::Mem(Quota::default()) };
        let (root_spec, rest) = match specs.split_first() {
            Some((first, rest)) if first.depth() == 0 => (*first, rest),
            _ => (&root_spec, &specs[..]),
        };
        let context = |s: &MountSpec| format!("--mount {}={}", s.guest_path, s.source);
        let dir_fds = FdBudget::default();
        let root = open_source(&root_spec.source, packs, &dir_fds).with_context(|| context(root_spec))?;
        let table = Arc::new(MountTable::new(root.fs.clone(), root.read_only));
        let mut opened = vec![(root_spec.guest_path.clone(), root)];
        for spec in rest {
            let mount = open_source(&spec.source, packs, &dir_fds).with_context(|| context(spec))?;
            table
                .make_parents(&spec.guest_path)
                .with_context(|| format!("{}: making the directories above it", context(spec)))?;
            table.mount(&spec.guest_path, mount.fs.clone(), mount.read_only).with_context(|| context(spec))?;
            opened.push((spec.guest_path.clone(), mount));
        }
        Ok(Namespace { table, opened, dir_fds })
    }

    /// Closes the journals mounted ([`Journal::close`]: a checkpoint of a
    /// log that outgrew its tree).
    pub(super) fn close(self) -> Result<()> {
        for (path, mount) in self.opened {
            if let Some(journal) = mount.journal {
                journal.close().with_context(|| format!("--mount {path}: closing the journal"))?;
            }
        }
        Ok(())
    }

    /// Says on stderr which mounts refused the guest a change for their
    /// limits (the guest saw `EDQUOT`), and how many opens the `dir:`
    /// mounts' budget refused.
    pub(super) fn report_limits(&self) {
        for (path, mount) in &self.opened {
            let Some(fs) = &mount.limited else { continue };
            let refused = fs.quota_refusals();
            if refused > 0 {
                let (l, u) = (fs.quota(), fs.usage());
                let mut held = vec![bytes(u.bytes)];
                held.push(format!("{} inodes", u.inodes));
                eprintln!(
                    "packfs: --mount {path}: full: {refused} change(s) refused for its limits{} (it holds {})",
                    LimitsShown(&l),
                    held.join(", ")
                );
                if let Some(j) = mount.journal.as_ref().filter(|j| j.log_full(1 << 20)) {
                    eprintln!(
                        "packfs: --mount {path}: its journal's log is full ({}, {} times the quota at most between \
                         checkpoints); it is checkpointed when the run ends",
                        bytes(j.log_len()),
                        packfs_os::journal::LOG_PER_QUOTA
                    );
                }
            }
        }
        let refused = self.dir_fds.refused();
        if refused > 0 {
            let max = self.dir_fds.max();
            eprintln!("packfs: dir: mounts: full: {refused} open(s) refused for their limit of {max} host descriptors");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use packfs_core::resolve;

    fn names(table: &MountTable, path: &str) -> Vec<String> {
        let fs: &dyn FileSystem = table;
        let dir = if path.is_empty() { fs.root() } else { resolve::resolve(fs, fs.root(), path, true).unwrap() };
        fs.read_dir(dir, None, 100).unwrap().into_iter().map(|e| e.name.to_string()).collect()
    }

    #[test]
    fn nested_mounts_in_any_order() {
        let specs: Vec<MountSpec> = ["/a/b/c=mem", "/a=mem", "/x/y=mem"].iter().map(|s| s.parse().unwrap()).collect();
        let ns = Namespace::build(&specs, &Packs::local()).unwrap();
        assert_eq!(ns.table.len(), 4);
        assert_eq!(names(&ns.table, ""), ["a", "x"]); // /a mounted, /x made in the default root
        assert_eq!(names(&ns.table, "a"), ["b"]); // made inside the /a mount
        assert_eq!(names(&ns.table, "a/b"), ["c"]);
    }

    /// The host directories mounted count their open handles' fds
    /// against one budget: the guest's.
    #[test]
    fn dir_mounts_share_one_budget() {
        let tmp = tempfile::tempdir().unwrap();
        for d in ["x", "y"] {
            std::fs::create_dir(tmp.path().join(d)).unwrap();
            std::fs::write(tmp.path().join(d).join("f"), "f").unwrap();
        }
        let at = |d: &str| tmp.path().join(d).display().to_string();
        let specs: Vec<MountSpec> = [format!("/x=dir:{}", at("x")), format!("/y=dir-ro:{}", at("y"))]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let ns = Namespace::build(&specs, &Packs::local()).unwrap();
        let fs: &dyn FileSystem = &*ns.table;
        let mut held = Vec::new();
        for d in ["x", "y"] {
            let dir = resolve::resolve(fs, fs.root(), d, true).unwrap();
            held.push(fs.open(dir, "f", &packfs_core::OpenOptions::read()).unwrap());
        }
        assert_eq!((ns.dir_fds.held(), ns.dir_fds.max()), (2, FdBudget::default().max()));
        for h in held {
            fs.close(h);
        }
        assert_eq!(ns.dir_fds.held(), 0);
    }

    #[test]
    fn a_mount_twice_is_refused() {
        let specs: Vec<MountSpec> = ["/t=mem", "/u=mem", "/t/=mem"].iter().map(|s| s.parse().unwrap()).collect();
        let e = Namespace::build(&specs, &Packs::local()).err().unwrap();
        assert_eq!(e.to_string(), "--mount /t: mounted twice");
    }
}
