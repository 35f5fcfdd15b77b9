//! The image `packfs virt` embeds in the component it makes: what the
//! virtual filesystem inside the guest mounts where, and the packs it
//! carries. The host writes it ([`Config::encode`]); the component reads it
//! ([`Image::decode`]) when the guest first calls it. A component may have
//! been changed since it was made, so the reader checks every field: a
//! typed error, never a panic, whatever the bytes say.
//!
//! ```text
//! "PACKFSV1"  u32 LE: n  n bytes of UTF-8 lines  the packs' bytes
//! ```
//!
//! Each line is one entry, its fields separated by tabs:
//!
//! | line | meaning |
//! |---|---|
//! | `WHERE mem PATH MAX_BYTES MAX_INODES` | an empty in-memory tree at `PATH` |
//! | `WHERE pack PATH OFFSET LEN DIGEST OVERLAY MAX_BYTES MAX_INODES` | the embedded pack at `OFFSET..OFFSET+LEN` of the image (from its start), pinned to `DIGEST`; `OVERLAY` 1: under an in-memory overlay |
//! | `WHERE hostpack PATH HOST_PATH DIGEST OVERLAY MAX_BYTES MAX_INODES` | the pack in the host's file `HOST_PATH`, read through the host's filesystem as reads need it, pinned to `DIGEST` |
//! | `preopen hostdir PATH HOST_PATH READ_ONLY` | the host's directory `HOST_PATH` passed through (`READ_ONLY` 1: every change refused) |
//! | `save HOST_PATH` | after the guest's run, the namespace is written as a pack to `HOST_PATH` |
//!
//! A `HOST_PATH` is a path under one of the preopens the host gives the
//! component (by the preopen's name: `/out/x.pack` under `/out`).
//!
//! `WHERE` is `mount` (in the namespace preopened at `/`) or `preopen` (a
//! preopen of its own at `PATH`, as `wasmtime run --dir` gives). A limit
//! of 0 is none. Paths are absolute, `/`-separated, without `.`, `..` or
//! empty names.

use std::sync::Arc;

use crate::mem::Quota;
use crate::mount::MountTable;
use crate::pack::Digest;
use crate::wasi::descriptor::Access;
use crate::{Clock, Error, FileSystem, MemFs, Result};

/// The image's first bytes.
pub const MAGIC: &[u8; 8] = b"PACKFSV1";

/// Most bytes of lines an image may have: far more than any mount table,
/// and bounded before the lines are read.
pub const MAX_CONFIG: u32 = 1 << 20;

/// Most mounts an image may have.
pub const MAX_MOUNTS: usize = 256;

/// What a mount holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An empty in-memory tree.
    Mem(Quota),
    /// A pack, pinned to `digest`; with `Some(quota)`, under an in-memory
    /// overlay.
    Pack {
        /// Where its bytes are.
        at: PackAt,
        /// Its digest: nothing else opens.
        digest: Digest,
        /// The overlay's limits, if it has one.
        overlay: Option<Quota>,
    },
    /// A directory of the host's, passed through as the host serves it
    /// (a preopen only: it is not PackFS's, so it cannot be mounted).
    HostDir {
        /// Where the host has it.
        host_path: String,
        /// Every change refused.
        read_only: bool,
    },
}

/// Where a pack's bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PackAt {
    /// In the image, at `offset..offset + len`.
    Image {
        /// Where in the image.
        offset: u64,
        /// How long.
        len: u64,
    },
    /// In the host's file at this host path.
    Host(String),
}

/// One mount: the guest path and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Absolute, normalized.
    pub path: String,
    /// What is there.
    pub source: Source,
    /// A preopen of its own, not a mount in the namespace at `/`.
    pub preopen: bool,
}

/// What the virtual filesystem mounts, and what it does after the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The mounts, in any order.
    pub mounts: Vec<Mount>,
    /// Where the namespace is saved as a pack after the run.
    pub save: Option<String>,
}

/// A decoded image: its configuration and the bytes the packs lie in.
#[derive(Debug)]
pub struct Image<'a> {
    /// What to mount.
    pub config: Config,
    /// The whole image, which the packs' offsets count from.
    pub bytes: &'a [u8],
}

/// An absolute path with only real names (the root is `/`), and no
/// control character: one would not read back as itself from the lines
/// (a tab starts a field, a line break a line).
pub fn check_path(path: &str) -> Result<()> {
    if path.chars().any(char::is_control) {
        return Err(Error::Invalid);
    }
    let rest = path.strip_prefix('/').ok_or(Error::Invalid)?;
    if rest.is_empty() {
        return Ok(());
    }
    for name in rest.split('/') {
        crate::path::validate_name(name)?;
        if name == "." || name == ".." {
            return Err(Error::Invalid);
        }
    }
    Ok(())
}

/// A host path as a line can hold it: not empty, no control character.
pub fn check_host_path(path: &str) -> Result<()> {
    if path.is_empty() || path.chars().any(char::is_control) { Err(Error::Invalid) } else { Ok(()) }
}

fn limit(v: Option<u64>) -> u64 {
    v.unwrap_or(0)
}

fn quota_line(q: &Quota) -> String {
    format!("{}\t{}", limit(q.max_bytes), limit(q.max_inodes))
}

impl Config {
    /// The image: this configuration's lines, then `packs` (each mount's
    /// offset must already say where its pack lies in it, counted from
    /// the image's start: use [`Config::header_len`]).
    pub fn encode(&self, packs: &[u8]) -> Result<Vec<u8>> {
        let lines = self.lines()?;
        let mut out = Vec::with_capacity(12 + lines.len() + packs.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&u32::try_from(lines.len()).map_err(|_| Error::Invalid)?.to_le_bytes());
        out.extend_from_slice(lines.as_bytes());
        out.extend_from_slice(packs);
        Ok(out)
    }

    /// How many bytes precede the packs in this configuration's image.
    /// The offsets are written as fixed-width numbers, so the length does
    /// not depend on them.
    pub fn header_len(&self) -> Result<u64> {
        Ok(12 + self.lines()?.len() as u64)
    }

    fn lines(&self) -> Result<String> {
        if self.mounts.len() > MAX_MOUNTS {
            return Err(Error::Invalid);
        }
        let mut s = String::new();
        for m in &self.mounts {
            check_path(&m.path)?;
            s += if m.preopen { "preopen\t" } else { "mount\t" };
            match &m.source {
                Source::Mem(q) => s += &format!("mem\t{}\t{}\n", m.path, quota_line(q)),
                Source::Pack { at, digest, overlay } => {
                    let (on, q) = match overlay {
                        Some(q) => (1, *q),
                        None => (0, Quota::default()),
                    };
                    let (path, q) = (&m.path, quota_line(&q));
                    s += &match at {
                        PackAt::Image { offset, len } => {
                            format!("pack\t{path}\t{offset:020}\t{len:020}\t{digest}\t{on}\t{q}\n")
                        }
                        PackAt::Host(host) => {
                            check_host_path(host)?;
                            format!("hostpack\t{path}\t{host}\t{digest}\t{on}\t{q}\n")
                        }
                    };
                }
                Source::HostDir { host_path, read_only } => {
                    check_host_path(host_path)?;
                    if !m.preopen {
                        return Err(Error::Invalid);
                    }
                    s += &format!("hostdir\t{}\t{host_path}\t{}\n", m.path, u8::from(*read_only));
                }
            }
        }
        if let Some(save) = &self.save {
            check_host_path(save)?;
            s += &format!("save\t{save}\n");
        }
        if s.len() > MAX_CONFIG as usize {
            return Err(Error::Invalid);
        }
        Ok(s)
    }
}

/// A preopen: its path, its filesystem and what it may do.
pub type Preopen = (String, Arc<dyn FileSystem>, Access);

/// How [`Config::open`] opens a pack mount's pack, from where it is,
/// pinned to its digest.
pub type OpenPack<'a> = &'a dyn Fn(&PackAt, &Digest) -> Result<Arc<dyn FileSystem>>;

/// A host directory passed through: the guest path it is preopened at,
/// the host path, and whether every change is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostDir {
    /// Where the guest has it.
    pub path: String,
    /// Where the host has it.
    pub host_path: String,
    /// Every change refused.
    pub read_only: bool,
}

/// What a configuration opens to: the namespace (every mount in one
/// mount table, preopened at `/`), if anything is mounted, each preopen
/// of PackFS's, the namespace's first, and each host directory passed
/// through, preopened after them.
pub struct Opened {
    /// The namespace.
    pub table: Option<Arc<MountTable>>,
    /// Every preopen of PackFS's, in order.
    pub preopens: Vec<Preopen>,
    /// Every host directory, in order.
    pub host_dirs: Vec<HostDir>,
}

fn depth(m: &Mount) -> usize {
    m.path.split('/').filter(|c| !c.is_empty()).count()
}

impl Config {
    /// The preopens' paths, in the order [`Opened`] has them: `/` for the
    /// namespace if anything is mounted, each preopen of PackFS's, then
    /// each host directory's.
    pub fn preopen_paths(&self) -> Vec<String> {
        let namespace = self.mounts.iter().any(|m| !m.preopen).then(|| "/".to_string());
        let host = |m: &&Mount| matches!(m.source, Source::HostDir { .. });
        let ours = self.mounts.iter().filter(|m| m.preopen && !host(m));
        let hosts = self.mounts.iter().filter(|m| m.preopen && host(m));
        namespace.into_iter().chain(ours.chain(hosts).map(|m| m.path.clone())).collect()
    }

    /// Opens every mount: `mem` trees (and overlays) keep time by `clock`,
    /// and `pack` opens the pack a pack mount names, pinned to its digest,
    /// as the caller reaches its bytes. Host directories are listed, not
    /// opened: they are the caller's to reach. Mounts
    /// nest as `packfs run`'s: shallowest first; without a `/` mount the
    /// root is an empty `mem`; missing directories above a mount point are
    /// made. `Invalid` for a path mounted or preopened twice, a host
    /// directory mounted in the namespace, or a save with nothing mounted.
    pub fn open(&self, clock: &Clock, pack: OpenPack<'_>) -> Result<Opened> {
        let source = |s: &Source| -> Result<(Arc<dyn FileSystem>, bool)> {
            Ok(match s {
                Source::Mem(q) => (Arc::new(MemFs::builder().quota(*q).clock(clock.clone()).build()), false),
                Source::Pack { at, digest, overlay } => {
                    let lower = pack(at, digest)?;
                    match overlay {
                        None => (lower, true),
                        Some(q) => {
                            (Arc::new(MemFs::builder().lower(lower).quota(*q).clock(clock.clone()).build()?), false)
                        }
                    }
                }
                Source::HostDir { .. } => return Err(Error::Invalid),
            })
        };
        let mut paths = self.preopen_paths();
        paths.sort();
        let (mut mounts, preopens): (Vec<&Mount>, Vec<&Mount>) = self.mounts.iter().partition(|m| !m.preopen);
        if paths.windows(2).any(|w| w[0] == w[1]) || (self.save.is_some() && mounts.is_empty()) {
            return Err(Error::Invalid);
        }
        let mut out = Opened { table: None, preopens: Vec::new(), host_dirs: Vec::new() };
        if !mounts.is_empty() {
            // Shallowest first, so that a mount's parent is in place before it.
            mounts.sort_by(|a, b| (depth(a), &a.path).cmp(&(depth(b), &b.path)));
            if mounts.windows(2).any(|w| w[0].path == w[1].path) {
                return Err(Error::Invalid);
            }
            let (root, rest) = match mounts.split_first() {
                Some((first, rest)) if first.path == "/" => (source(&first.source)?, rest),
                _ => (
                    (Arc::new(MemFs::builder().clock(clock.clone()).build()) as Arc<dyn FileSystem>, false),
                    &mounts[..],
                ),
            };
            let table = Arc::new(MountTable::new(root.0, root.1));
            for m in rest {
                let (fs, read_only) = source(&m.source)?;
                table.make_parents(&m.path)?;
                table.mount(&m.path, fs, read_only)?;
            }
            out.preopens.push(("/".into(), table.clone(), Access::ReadWrite));
            out.table = Some(table);
        }
        for m in preopens {
            if let Source::HostDir { host_path, read_only } = &m.source {
                let (path, host_path) = (m.path.clone(), host_path.clone());
                out.host_dirs.push(HostDir { path, host_path, read_only: *read_only });
                continue;
            }
            let (fs, read_only) = source(&m.source)?;
            out.preopens.push((m.path.clone(), fs, if read_only { Access::ReadOnly } else { Access::ReadWrite }));
        }
        Ok(out)
    }
}

impl<'a> Image<'a> {
    /// Reads an image, checking every field and that each pack lies within
    /// it; `Invalid` for anything else.
    pub fn decode(bytes: &'a [u8]) -> Result<Image<'a>> {
        let head = bytes.get(..12).ok_or(Error::Invalid)?;
        if &head[..8] != MAGIC {
            return Err(Error::Invalid);
        }
        let n = u32::from_le_bytes(head[8..12].try_into().map_err(|_| Error::Invalid)?);
        if n > MAX_CONFIG {
            return Err(Error::Invalid);
        }
        let lines = bytes.get(12..12 + n as usize).ok_or(Error::Invalid)?;
        let lines = std::str::from_utf8(lines).map_err(|_| Error::Invalid)?;
        let mut config = Config::default();
        for line in lines.lines() {
            let all: Vec<&str> = line.split('\t').collect();
            // A mount's line says where it goes first; `save`'s does not.
            let (preopen, f) = match all.split_first() {
                Some((&"mount", rest)) => (Some(false), rest),
                Some((&"preopen", rest)) => (Some(true), rest),
                _ => (None, &all[..]),
            };
            let num = |s: &str| s.parse::<u64>().map_err(|_| Error::Invalid);
            let quota = |b: &str, i: &str| -> Result<Quota> {
                let some = |v: u64| (v != 0).then_some(v);
                Ok(Quota { max_bytes: some(num(b)?), max_inodes: some(num(i)?) })
            };
            let overlay = |on: &str, b: &str, i: &str| match on {
                "0" => Ok(None),
                "1" => quota(b, i).map(Some),
                _ => Err(Error::Invalid),
            };
            match (preopen, f) {
                (Some(preopen), ["mem", path, b, i]) => {
                    check_path(path)?;
                    config.mounts.push(Mount { path: (*path).into(), source: Source::Mem(quota(b, i)?), preopen });
                }
                (Some(preopen), ["pack", path, offset, len, digest, on, b, i]) => {
                    check_path(path)?;
                    let (offset, len) = (num(offset)?, num(len)?);
                    let end = offset.checked_add(len).ok_or(Error::Invalid)?;
                    if end > bytes.len() as u64 {
                        return Err(Error::Invalid);
                    }
                    let (digest, overlay) = (digest.parse().map_err(|_| Error::Invalid)?, overlay(on, b, i)?);
                    let at = PackAt::Image { offset, len };
                    config.mounts.push(Mount {
                        path: (*path).into(),
                        source: Source::Pack { at, digest, overlay },
                        preopen,
                    });
                }
                (Some(preopen), ["hostpack", path, host, digest, on, b, i]) => {
                    check_path(path)?;
                    check_host_path(host)?;
                    let (digest, overlay) = (digest.parse().map_err(|_| Error::Invalid)?, overlay(on, b, i)?);
                    let at = PackAt::Host((*host).into());
                    config.mounts.push(Mount {
                        path: (*path).into(),
                        source: Source::Pack { at, digest, overlay },
                        preopen,
                    });
                }
                (Some(true), ["hostdir", path, host, ro]) => {
                    check_path(path)?;
                    check_host_path(host)?;
                    let read_only = match *ro {
                        "0" => false,
                        "1" => true,
                        _ => return Err(Error::Invalid),
                    };
                    let source = Source::HostDir { host_path: (*host).into(), read_only };
                    config.mounts.push(Mount { path: (*path).into(), source, preopen: true });
                }
                (None, ["save", path]) if config.save.is_none() => {
                    check_host_path(path)?;
                    config.save = Some((*path).into())
                }
                _ => return Err(Error::Invalid),
            }
            if config.mounts.len() > MAX_MOUNTS {
                return Err(Error::Invalid);
            }
        }
        Ok(Image { config, bytes })
    }

    /// The bytes of a pack mount's pack.
    pub fn pack(&self, offset: u64, len: u64) -> Result<&'a [u8]> {
        let start = usize::try_from(offset).map_err(|_| Error::Invalid)?;
        let end = usize::try_from(offset.checked_add(len).ok_or(Error::Invalid)?).map_err(|_| Error::Invalid)?;
        self.bytes.get(start..end).ok_or(Error::Invalid)
    }
}

#[cfg(test)]
mod tests;
