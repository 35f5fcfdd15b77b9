//! The last name a guest resolved, so that the `stat-at` or
//! `metadata-hash-at` asked right after the call that found the same name
//! does not walk its path again.
//!
//! A `stat` is both calls on the same path (`metadata-hash-at` for
//! `st_ino`): the p1 adapter's `path_filestat_get` asks `stat-at` first,
//! wasi-libc's p2 `stat` the other way round. wasi-libc's `readdir`, like the
//! adapter's `fd_readdir`, is `read-directory-entry` then
//! `metadata-hash-at` of the entry's name. Without this, every `stat`
//! resolves its path twice and every listed entry is looked up again in
//! the directory it was just listed from.
//!
//! A remembered inode answers one such call, for the same directory, path
//! and symlink following, and only while no call of this
//! guest has changed the namespace since it was found: every such call
//! bumps the epoch. Another store changing the same filesystem meanwhile is
//! not seen: the hash is then the one of the file `stat-at` just described,
//! or of the entry as its directory batch listed it — what one `fstatat`,
//! or the `d_ino` of `getdents`, would give.

use std::sync::Arc;

use packfs_core::{FileType, Ino};

/// A directory `*-at` paths start from: the filesystem's device number
/// (its address, kept alive by the preopen table for the store's life) and
/// the directory's inode.
pub(crate) use packfs_core::wasi::descriptor::At;

/// See the module documentation.
#[derive(Default)]
pub(crate) struct Recent {
    /// Bumped by every call that may change where a name leads.
    epoch: u64,
    last: Option<Resolved>,
}

struct Resolved {
    dir: At,
    path: Name,
    /// `None`: the same either way (not a symlink).
    follow: Option<bool>,
    ino: Ino,
}

/// The path as the call that resolved it had it, without copying.
enum Name {
    Path(String),
    Entry(Arc<str>),
}

impl Name {
    fn as_str(&self) -> &str {
        match self {
            Name::Path(p) => p,
            Name::Entry(n) => n,
        }
    }
}

impl Recent {
    /// The current epoch, for a directory batch to remember when it was read.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A call may have changed the namespace: forget.
    pub(crate) fn changed(&mut self) {
        self.epoch = self.epoch.wrapping_add(1);
        self.last = None;
    }

    /// `path` from `dir` led to `ino` (`stat-at`, `metadata-hash-at`),
    /// following a symlink at its end as `follow` says (`None`: there is
    /// none).
    pub(crate) fn resolved(&mut self, dir: At, path: String, follow: Option<bool>, ino: Ino) {
        self.last = Some(Resolved { dir, path: Name::Path(path), follow, ino });
    }

    /// A listing of `dir` read in the batch of epoch `batch` returned the
    /// entry `name` -> `ino` of type `kind`.
    pub(crate) fn listed(&mut self, dir: At, name: &Arc<str>, kind: FileType, ino: Ino, batch: u64) {
        self.last = (batch == self.epoch).then(|| Resolved {
            dir,
            path: Name::Entry(Arc::clone(name)),
            // Not following a name that is no symlink finds the same inode.
            follow: if kind == FileType::Symlink { Some(false) } else { None },
            ino,
        });
    }

    /// The inode `path` from `dir` leads to, if the last resolution was of
    /// it; forgets it either way.
    pub(crate) fn take(&mut self, dir: At, follow: bool, path: &str) -> Option<Ino> {
        let last = self.last.take()?;
        let same = last.dir == dir && last.follow.is_none_or(|f| f == follow) && last.path.as_str() == path;
        same.then_some(last.ino)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_once_for_the_same_question() {
        let mut r = Recent::default();
        r.resolved((1, 2), "a/b".into(), Some(true), 7);
        assert_eq!(r.take((1, 2), true, "a/b"), Some(7));
        assert_eq!(r.take((1, 2), true, "a/b"), None);
        for (dir, follow, path) in
            [((1, 3), true, "a/b"), ((2, 2), true, "a/b"), ((1, 2), false, "a/b"), ((1, 2), true, "a/b/")]
        {
            r.resolved((1, 2), "a/b".into(), Some(true), 7);
            assert_eq!(r.take(dir, follow, path), None);
        }
    }

    #[test]
    fn a_change_forgets() {
        let mut r = Recent::default();
        r.resolved((1, 2), "a".into(), None, 7);
        r.changed();
        assert_eq!(r.take((1, 2), false, "a"), None);
    }

    #[test]
    fn entries_of_a_stale_batch_are_not_remembered() {
        let mut r = Recent::default();
        let name: Arc<str> = "f".into();
        let batch = r.epoch();
        r.listed((1, 2), &name, FileType::File, 9, batch);
        assert_eq!(r.take((1, 2), true, "f"), Some(9), "a file is the same followed or not");
        r.listed((1, 2), &name, FileType::Symlink, 9, batch);
        assert_eq!(r.take((1, 2), true, "f"), None, "following a symlink leads elsewhere");
        r.changed();
        r.listed((1, 2), &name, FileType::File, 9, batch);
        assert_eq!(r.take((1, 2), false, "f"), None);
    }
}
