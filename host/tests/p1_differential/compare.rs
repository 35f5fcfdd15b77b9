//! What a run left: each call's outputs as read back from memory, the
//! listings resumed by cookie, and the trees, compared.

use crate::script::*;
use packfs_core::{FileSystem, FileType};
use packfs_test_support as support;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

pub(crate) fn u32_at(m: &[u8], at: u32) -> u32 {
    u32::from_le_bytes(m[at as usize..at as usize + 4].try_into().unwrap())
}

pub(crate) fn u64_at(m: &[u8], at: u32) -> u64 {
    u64::from_le_bytes(m[at as usize..at as usize + 8].try_into().unwrap())
}

/// A filestat's type, links, a regular file's size, and its mtime if the
/// script set it (never its access time: Linux's `relatime` changes it
/// where PackFS's `noatime` does not).
pub(crate) fn filestat(m: &[u8], at: u32) -> String {
    let ty = m[at as usize + 16];
    let size = if ty == 4 { u64_at(m, at + 32) } else { 0 };
    let mtim = u64_at(m, at + 48);
    let mtime = explicit(mtim as i64 / 1_000_000_000, (mtim % 1_000_000_000) as u32);
    format!("type {ty} nlink {} size {size} mtime {mtime:?}", u64_at(m, at + 24))
}

/// What one call outputs that both sides must agree on (`fd_readdir`'s:
/// [`Listings`]).
pub(crate) fn output(call: &Call, i: usize, m: &[u8]) -> String {
    let out = outs(i);
    let bytes = |a: u32, n: u32| m[(out + a) as usize..(out + a + n) as usize].to_vec();
    match *call {
        Call::Open { .. } | Call::Tell { .. } | Call::Seek { .. } => format!("{:?}", bytes(0, 8)),
        Call::Write { .. } => format!("{}", u32_at(m, out)),
        Call::Read { .. } | Call::Readlink { .. } => {
            let n = u32_at(m, out);
            format!("{n} {:?}", String::from_utf8_lossy(&bytes(8, n.min(56))))
        }
        Call::Filestat { .. } | Call::PathStat { .. } => filestat(m, out),
        Call::Fdstat { .. } => format!("{:?}", bytes(0, 24)),
        Call::Prestat { .. } | Call::Sizes { .. } => format!("{:?}", bytes(0, 8)),
        Call::PrestatName { len, .. } => format!("{:?}", bytes(0, len)),
        Call::Strings { .. } => {
            let s = scratch(i) as usize;
            format!("{:?} {:?}", bytes(0, 16), String::from_utf8_lossy(&m[s..s + 64]))
        }
        Call::Random { len } => {
            let s = scratch(i) as usize;
            let written = m[s..s + len as usize].iter().any(|&b| b != 0);
            let past = m[s + len as usize..s + len as usize + 16].iter().any(|&b| b != 0);
            format!("written {written} past the end {past}")
        }
        Call::Poll { .. } => {
            let n = u32_at(m, out);
            let mut s = format!("{n} events:");
            for k in 0..n.min(4) {
                let e = scratch(i) + 256 + 32 * k;
                let (error, ty) = (u16::from_le_bytes([m[e as usize + 8], m[e as usize + 9]]), m[e as usize + 10]);
                let flags = u16::from_le_bytes([m[e as usize + 24], m[e as usize + 25]]);
                let _ = write!(
                    s,
                    " (userdata {} error {error} type {ty} nbytes {} flags {flags})",
                    u64_at(m, e),
                    u64_at(m, e + 16)
                );
            }
            s
        }
        _ => String::new(),
    }
}

/// The whole entries of the dirents at `buf`, `used` bytes: `d_next` and
/// `name:type`.
pub(crate) fn dirents(m: &[u8], buf: u32, used: u32) -> Vec<(u64, String)> {
    let (buf, used) = (buf as usize, used as usize);
    let mut entries = Vec::new();
    let mut at = 0usize;
    while at + 24 <= used {
        let namlen = u32_at(m, (buf + at + 16) as u32) as usize;
        if at + 24 + namlen > used {
            break;
        }
        let name = String::from_utf8_lossy(&m[buf + at + 24..buf + at + 24 + namlen]);
        entries.push((u64_at(m, (buf + at) as u32), format!("{name}:{}", m[buf + at + 20])));
        at += 24 + namlen;
    }
    entries
}

/// What each side has listed of one directory descriptor since the tree
/// last changed: the entry at each position, and where the listing ends.
#[derive(Debug, Default)]
pub(crate) struct Learned {
    pub(crate) at: BTreeMap<u64, String>,
    pub(crate) end: Option<u64>,
}

/// The `fd_readdir` comparison, fed every call in turn.
#[derive(Default)]
pub(crate) struct Listings {
    /// Bumped by every call that changed a directory's entries.
    pub(crate) epoch: u64,
    /// The epoch of each descriptor's last `fd_readdir` that listed one of
    /// its entries whole: PackFS resumes after the name that call ended
    /// with, which matches wasmtime's skipping only if nothing changed
    /// since.
    pub(crate) last: HashMap<u32, u64>,
    /// PackFS's, then wasmtime's.
    pub(crate) learned: [HashMap<u32, Learned>; 2],
}

pub(crate) const SIDES: [&str; 2] = ["PackFS", "wasmtime"];

impl Listings {
    pub(crate) fn forget(&mut self, fd: u32) {
        self.last.remove(&fd);
        for l in &mut self.learned {
            l.remove(&fd);
        }
    }

    pub(crate) fn changed(&mut self) {
        self.epoch += 1;
        for l in &mut self.learned {
            l.clear();
        }
    }

    /// Call `i` returned `errno` on both sides, leaving memories `mem`.
    pub(crate) fn after(&mut self, call: &Call, i: usize, errno: u32, mem: [&[u8]; 2]) -> Result<(), TestCaseError> {
        if errno != 0 {
            return Ok(());
        }
        match *call {
            Call::Open { oflags, .. } => {
                if oflags & 1 != 0 {
                    self.changed();
                }
                self.forget(u32_at(mem[0], outs(i)));
            }
            Call::Close { fd } => self.forget(fd),
            Call::Renumber { from, to } if from != to => {
                self.forget(to);
                if let Some(e) = self.last.remove(&from) {
                    self.last.insert(to, e);
                }
                for l in &mut self.learned {
                    if let Some(k) = l.remove(&from) {
                        l.insert(to, k);
                    }
                }
            }
            Call::Mkdir { .. }
            | Call::Rmdir { .. }
            | Call::Unlink { .. }
            | Call::Rename { .. }
            | Call::Link { .. }
            | Call::Symlink { .. } => self.changed(),
            Call::Readdir { fd, len, .. } => return self.readdir(fd, len, i, mem),
            _ => {}
        }
        Ok(())
    }

    pub(crate) fn readdir(&mut self, fd: u32, len: u32, i: usize, mem: [&[u8]; 2]) -> Result<(), TestCaseError> {
        let resumable = self.last.get(&fd).is_none_or(|&e| e == self.epoch);
        let mut seen = Vec::new();
        for (s, m) in mem.iter().enumerate() {
            let (cookie, used) = (u64_at(m, outs(i) + 8), u32_at(m, outs(i)));
            let entries = dirents(m, dirent_buf(i), used);
            let full = used == len;
            if cookie <= 2 || resumable {
                let learned = self.learned[s].entry(fd).or_default();
                for (k, (next, name)) in entries.iter().enumerate() {
                    prop_assert_eq!(
                        *next,
                        cookie + k as u64 + 1,
                        "{}: d_next of entry {} from {}",
                        SIDES[s],
                        k,
                        cookie
                    );
                    let pos = next - 1;
                    if pos < 2 {
                        prop_assert_eq!(name.as_str(), [".:3", "..:3"][pos as usize], "{}", SIDES[s]);
                    }
                    let other = learned.at.iter().find(|(p, n)| **p != pos && *n == name);
                    prop_assert!(other.is_none(), "{}: {} listed at {} and {:?}", SIDES[s], name, pos, other);
                    if let Some(old) = learned.at.insert(pos, name.clone()) {
                        prop_assert_eq!(&old, name, "{}: position {} of descriptor {} changed", SIDES[s], pos, fd);
                    }
                }
                if let (false, Some((next, _))) = (full, entries.last()) {
                    prop_assert!(
                        learned.end.is_none_or(|e| e == *next),
                        "{}: the listing ended at {:?}, now at {}",
                        SIDES[s],
                        learned.end,
                        next
                    );
                    learned.end = Some(*next);
                }
                if let Some(end) = learned.end {
                    prop_assert!(
                        learned.at.keys().all(|&p| p < end),
                        "{}: entries past the end {}: {:?}",
                        SIDES[s],
                        end,
                        learned.at
                    );
                }
            }
            seen.push((cookie, entries, full, used));
        }
        let ((c0, e0, f0, u0), (c1, e1, f1, u1)) = (&seen[0], &seen[1]);
        let set = |e: &[(u64, String)]| e.iter().map(|(_, n)| n.clone()).collect::<BTreeSet<_>>();
        if c0 == c1 && (*c0 <= 2 || resumable) {
            if *c0 <= 2 {
                // Every entry but the dots skipped: the same entries.
                prop_assert_eq!(f0, f1, "fd_readdir from {}: full on one side only", c0);
                if !f0 {
                    prop_assert_eq!(u0, u1, "fd_readdir from {}: bytes used", c0);
                    prop_assert_eq!(set(e0), set(e1), "fd_readdir from {}", c0);
                }
            } else if !f0 && !f1 {
                prop_assert_eq!(e0.len(), e1.len(), "fd_readdir from {}: entries to the end", c0);
            }
        }
        if let (Some(a), Some(b)) = (self.learned[0].get(&fd), self.learned[1].get(&fd))
            && let (Some(ea), Some(eb)) = (a.end, b.end)
        {
            prop_assert_eq!(ea, eb, "listing lengths");
            if a.at.len() as u64 == ea && b.at.len() as u64 == eb {
                let (sa, sb): (BTreeSet<_>, BTreeSet<_>) = (a.at.values().collect(), b.at.values().collect());
                prop_assert_eq!(sa, sb, "the whole listing of descriptor {}, in pieces", fd);
            }
        }
        // PackFS keeps where a call ended only if it wrote an entry of the
        // directory's own whole.
        if seen[0].1.iter().any(|(next, _)| *next > 2) {
            self.last.insert(fd, self.epoch);
        }
        Ok(())
    }
}

/// A time the script set (before 2000), or `None` for "now".
pub(crate) fn explicit(secs: i64, nanos: u32) -> Option<(i64, u32)> {
    (secs < EXPLICIT_BEFORE).then_some((secs, nanos))
}

/// A tree as the guest left it: what each path is and holds, what
/// preview1 lets a guest see of each inode beyond that, and which paths
/// are one inode.
pub(crate) type Final = support::trees::Final<Meta>;

/// Of an inode: the owner's permission bits (not a symlink's), links, and
/// the mtime the script set.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Meta {
    pub(crate) owner: Option<u32>,
    pub(crate) nlink: u64,
    pub(crate) mtime: Option<(i64, u32)>,
}

impl Meta {
    pub(crate) fn new(symlink: bool, mode: u32, nlink: u64, secs: i64, nanos: u32) -> Self {
        Meta { owner: (!symlink).then_some(mode & 0o700), nlink, mtime: explicit(secs, nanos) }
    }
}

/// `fs`'s tree, through the `FileSystem` API.
pub(crate) fn final_of(fs: &dyn FileSystem) -> Final {
    Final::of(fs, |md| Meta::new(md.kind == FileType::Symlink, md.mode, md.nlink, md.mtime.secs as i64, md.mtime.nanos))
}

/// The tree under host directory `root`.
pub(crate) fn final_of_dir(root: &Path) -> Final {
    Final::of_dir(root, |md| {
        Meta::new(md.file_type().is_symlink(), md.mode(), md.nlink(), md.mtime(), md.mtime_nsec() as u32)
    })
}

/// PackFS's tree `ours` is `reference`'s, the tree at `at`.
pub(crate) fn same_tree(ours: &Final, reference: &Final, at: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(&ours.tree, &reference.tree, "the tree at {}", at);
    prop_assert_eq!(&ours.links, &reference.links, "the hard links at {}", at);
    prop_assert_eq!(&ours.meta, &reference.meta, "the modes, links and set mtimes at {}", at);
    Ok(())
}
