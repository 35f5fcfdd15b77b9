//! The tree `packfs pack` reads: a source [`FileSystem`] minus the entries
//! an `--exclude` rule matches, counting what is read for the progress bar.
//!
//! Excluded entries are hidden from `read_dir` and `lookup`, so the pack
//! writer never sees them (an excluded directory is skipped whole, never
//! walked). Memory is one path per entry met, like the writer's own index.

use std::collections::HashMap;
use std::sync::Mutex;

use globset::{GlobBuilder, GlobMatcher};
use indicatif::ProgressBar;
use packfs_core::sync::lock;
use packfs_core::{DirEntry, Error, FileSystem, FileType, Ino, Metadata, OpenOptions, Result};

use crate::common::join;

/// One `--exclude` pattern.
#[derive(Debug, Clone)]
pub(crate) struct Rule {
    glob: GlobMatcher,
    /// Matched against the path from the source root, not the name alone.
    rooted: bool,
    /// Matches directories only (the pattern ended in `/`).
    dir_only: bool,
}

impl Rule {
    /// Parses a pattern: without `/` it matches a name at any depth (`*.o`,
    /// `target`); with one it matches the path from the root (`docs/*.tmp`,
    /// `/build`); a trailing `/` restricts it to directories. `*` and `?`
    /// never match `/`; `**` does.
    pub(crate) fn parse(pattern: &str) -> std::result::Result<Rule, String> {
        let dir_only = pattern.ends_with('/');
        let trimmed = pattern.trim_end_matches('/');
        let rooted = trimmed.contains('/');
        let trimmed = trimmed.trim_start_matches('/');
        if trimmed.is_empty() {
            return Err(format!("{pattern:?} matches nothing: give a name or a path"));
        }
        let glob = GlobBuilder::new(trimmed).literal_separator(true).build().map_err(|e| e.to_string())?;
        Ok(Rule { glob: glob.compile_matcher(), rooted, dir_only })
    }

    /// A rule matching exactly `path` (from the root), whatever it holds.
    pub(crate) fn exact(path: &str) -> std::result::Result<Rule, String> {
        let glob =
            GlobBuilder::new(&globset::escape(path)).literal_separator(true).build().map_err(|e| e.to_string())?;
        Ok(Rule { glob: glob.compile_matcher(), rooted: true, dir_only: false })
    }

    fn matches(&self, path: &str, name: &str, kind: FileType) -> bool {
        (!self.dir_only || kind == FileType::Dir) && self.glob.is_match(if self.rooted { path } else { name })
    }
}

/// True when `rules` leave out the entry at `path`, of type `kind`.
pub(crate) fn excludes(rules: &[Rule], path: &str, kind: FileType) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    rules.iter().any(|r| r.matches(path, name, kind))
}

/// `inner` without the entries `rules` match.
pub(crate) struct Source<'a> {
    inner: &'a dyn FileSystem,
    rules: Vec<Rule>,
    /// The path from the root of every inode handed out.
    paths: Mutex<HashMap<Ino, String>>,
    /// The path of the first inode a read of `inner` failed on.
    failed: Mutex<Option<String>>,
    progress: ProgressBar,
    entries: Mutex<u64>,
}

impl<'a> Source<'a> {
    /// `inner` minus what `rules` match; reads advance `progress` (in bytes)
    /// and each entry met updates its message (a count).
    pub(crate) fn new(inner: &'a dyn FileSystem, rules: Vec<Rule>, progress: ProgressBar) -> Self {
        let paths = HashMap::from([(inner.root(), String::new())]);
        Source { inner, rules, paths: Mutex::new(paths), failed: Mutex::new(None), progress, entries: Mutex::new(0) }
    }

    /// The path of inode `ino`, if it was handed out.
    pub(crate) fn path_of(&self, ino: Ino) -> Option<String> {
        lock(&self.paths).get(&ino).cloned()
    }

    /// The path of the first inode whose read failed, if one did.
    pub(crate) fn failed_path(&self) -> Option<String> {
        lock(&self.failed).clone()
    }

    fn hidden(&self, path: &str, kind: FileType) -> bool {
        excludes(&self.rules, path, kind)
    }

    /// Passes `r` through, remembering the path of `ino` when it failed.
    fn note<T>(&self, ino: Ino, r: Result<T>) -> Result<T> {
        if r.is_err() {
            let mut failed = lock(&self.failed);
            if failed.is_none() {
                *failed = self.path_of(ino);
            }
        }
        r
    }
}

impl FileSystem for Source<'_> {
    fn root(&self) -> Ino {
        self.inner.root()
    }

    fn lookup(&self, dir: Ino, name: &str) -> Result<Ino> {
        let base = self.path_of(dir).ok_or(Error::NotFound)?;
        let ino = self.note(dir, self.inner.lookup(dir, name))?;
        let path = join(&base, name);
        if self.hidden(&path, self.inner.metadata(ino)?.kind) {
            return Err(Error::NotFound);
        }
        lock(&self.paths).insert(ino, path);
        Ok(ino)
    }

    fn metadata(&self, ino: Ino) -> Result<Metadata> {
        self.note(ino, self.inner.metadata(ino))
    }

    fn inode_count_hint(&self) -> Option<u64> {
        self.inner.inode_count_hint()
    }

    fn open(&self, _: Ino, _: &str, _: &OpenOptions) -> Result<Ino> {
        Err(Error::ReadOnly)
    }

    fn open_ino(&self, _: Ino) -> Result<()> {
        Err(Error::ReadOnly)
    }

    fn close(&self, _: Ino) {}

    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let n = self.note(ino, self.inner.read_at(ino, offset, buf))?;
        self.progress.inc(n as u64);
        Ok(n)
    }

    /// The next entries that are not excluded. A page whose entries are all
    /// excluded is skipped, not returned empty: empty means the end.
    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> Result<Vec<DirEntry>> {
        let base = self.path_of(dir).ok_or(Error::NotFound)?;
        let mut after = after.map(str::to_owned);
        loop {
            let page = self.note(dir, self.inner.read_dir(dir, after.as_deref(), max))?;
            let Some(last) = page.last() else { return Ok(page) };
            after = Some(last.name.to_string());
            let mut kept = Vec::with_capacity(page.len());
            let mut paths = lock(&self.paths);
            for e in page {
                let path = join(&base, &e.name);
                if !self.hidden(&path, e.kind) {
                    paths.insert(e.ino, path);
                    kept.push(e);
                }
            }
            drop(paths);
            if !kept.is_empty() {
                let mut n = lock(&self.entries);
                *n += kept.len() as u64;
                self.progress.set_message(n.to_string());
                return Ok(kept);
            }
        }
    }

    fn readlink(&self, ino: Ino) -> Result<String> {
        self.note(ino, self.inner.readlink(ino))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use packfs_core::MemFs;

    fn names(fs: &dyn FileSystem, dir: Ino) -> Vec<String> {
        crate::common::list(fs, dir).unwrap().iter().map(|e| e.name.to_string()).collect()
    }

    #[test]
    fn rules_match_names_paths_and_directories() {
        let r = Rule::parse("*.o").unwrap();
        assert!(r.matches("a/b/x.o", "x.o", FileType::File));
        assert!(!r.matches("a/x.o.txt", "x.o.txt", FileType::File));
        let r = Rule::parse("docs/*.tmp").unwrap();
        assert!(r.matches("docs/a.tmp", "a.tmp", FileType::File));
        assert!(!r.matches("docs/sub/a.tmp", "a.tmp", FileType::File), "* stops at /");
        assert!(!r.matches("x/docs/a.tmp", "a.tmp", FileType::File), "rooted");
        let r = Rule::parse("/build").unwrap();
        assert!(r.matches("build", "build", FileType::Dir));
        assert!(!r.matches("a/build", "build", FileType::Dir));
        let r = Rule::parse("cache/").unwrap();
        assert!(r.matches("a/cache", "cache", FileType::Dir));
        assert!(!r.matches("a/cache", "cache", FileType::File));
        assert!(Rule::parse("/").is_err());
        assert!(Rule::parse("a[").is_err());
        assert!(Rule::exact("out[1].pack").unwrap().matches("out[1].pack", "out[1].pack", FileType::File));
    }

    #[test]
    fn excluded_entries_are_hidden_and_pages_never_come_back_empty_early() {
        let fs = MemFs::new();
        let root = fs.root();
        for i in 0..10 {
            fs.mkdir(root, &format!("skip{i}"), 0o755).unwrap();
        }
        fs.mkdir(root, "z", 0o755).unwrap();
        let src = Source::new(&fs, vec![Rule::parse("skip*").unwrap()], ProgressBar::hidden());
        // One entry per page: the ten excluded pages are skipped.
        assert_eq!(src.read_dir(root, None, 1).unwrap().len(), 1);
        assert_eq!(names(&src, root), ["z"]);
        assert_eq!(src.lookup(root, "skip3"), Err(Error::NotFound));
        assert!(src.lookup(root, "z").is_ok());
    }
}
