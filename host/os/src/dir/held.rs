//! [`Open`]: the fds that serve open handles, per pinned inode, each with
//! what it may do and its place in the budget.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};

use packfs_core::Ino;
use packfs_core::sync::lock;

use super::budget::Slot;

/// An fd held for an open handle, what it may do, and its place in the
/// budget.
pub(super) struct Pinned {
    pub(super) fd: Arc<OwnedFd>,
    pub(super) read: bool,
    pub(super) write: bool,
    pub(super) _slot: Slot,
}

/// The open handles of one inode and the fds that serve them. `close`
/// does not say which handle closes, so an fd goes early only when the
/// others can do all it could; the rest go with the last handle.
#[derive(Default)]
struct Held {
    handles: usize,
    fds: Vec<Pinned>,
}

impl Held {
    fn pin(&mut self, p: Pinned) {
        self.handles += 1;
        self.fds.push(p);
    }

    /// One handle closed; true when it was the last.
    fn unpin(&mut self) -> bool {
        self.handles -= 1;
        if self.handles == 0 {
            return true;
        }
        let covered = |i: usize| {
            let others = || self.fds.iter().enumerate().filter(move |&(j, _)| j != i).map(|(_, p)| p);
            (!self.fds[i].read || others().any(|p| p.read)) && (!self.fds[i].write || others().any(|p| p.write))
        };
        if let Some(i) = (0..self.fds.len()).find(|&i| covered(i)) {
            self.fds.remove(i);
        }
        false
    }

    /// An fd that reads, or writes, or either (`None`).
    fn fd(&self, write: Option<bool>) -> Option<Arc<OwnedFd>> {
        let fits = |p: &&Pinned| match write {
            Some(true) => p.write,
            Some(false) => p.read,
            None => p.read || p.write,
        };
        self.fds.iter().find(fits).map(|p| p.fd.clone())
    }
}

/// The pinned inodes: their open handles and the fds serving them.
#[derive(Default)]
pub(super) struct Open(Mutex<HashMap<Ino, Held>>);

impl Open {
    /// One more open handle of `ino`, served by `p`.
    pub(super) fn pin(&self, ino: Ino, p: Pinned) {
        lock(&self.0).entry(ino).or_default().pin(p);
    }

    /// One open handle of `ino` closed (see [`Held`]).
    pub(super) fn close(&self, ino: Ino) {
        let mut open = lock(&self.0);
        if open.get_mut(&ino).is_some_and(Held::unpin) {
            open.remove(&ino);
        }
    }

    /// An fd an open handle of `ino` holds that reads, or writes, or
    /// either (`None`; never an `O_PATH` one).
    pub(super) fn fd(&self, ino: Ino, write: Option<bool>) -> Option<Arc<OwnedFd>> {
        lock(&self.0).get(&ino).and_then(|h| h.fd(write))
    }

    /// Any fd an open handle of `ino` holds, `O_PATH` ones too: enough to
    /// `fstat` it.
    pub(super) fn any_fd(&self, ino: Ino) -> Option<Arc<OwnedFd>> {
        lock(&self.0).get(&ino).and_then(|h| h.fds.first().map(|p| p.fd.clone()))
    }
}

#[cfg(test)]
mod tests {
    use rustix::fs::{Mode, OFlags};

    use super::super::budget::FdBudget;
    use super::*;

    /// `close` does not say which handle closes: an fd goes only when the
    /// others can do all it could, and the rest with the last handle.
    #[test]
    fn closing_keeps_what_other_handles_need() {
        let fd = || Arc::new(rustix::fs::open("/dev/null", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).unwrap());
        let (r, w, rw) = ((true, false), (false, true), (true, true));
        let budget = FdBudget::new(3);
        let held = |kinds: &[(bool, bool)]| {
            let mut h = Held::default();
            for &(read, write) in kinds {
                h.pin(Pinned { fd: fd(), read, write, _slot: budget.take().unwrap() });
            }
            h
        };
        let kinds = |h: &Held| h.fds.iter().map(|p| (p.read, p.write)).collect::<Vec<_>>();
        // A reader and a writer: neither can stand in for the other.
        let mut h = held(&[r, w]);
        assert!(!h.unpin());
        assert_eq!(kinds(&h), [r, w]);
        assert!(h.unpin(), "the last handle");
        drop(h);
        assert_eq!(budget.held(), 0, "each fd's slot goes with it");
        // A read-write fd covers a reader.
        let mut h = held(&[r, rw, w]);
        assert!(!h.unpin());
        assert_eq!(kinds(&h), [rw, w]);
        assert!(!h.unpin());
        assert_eq!(kinds(&h), [rw]);
        assert!(h.fd(Some(false)).is_some() && h.fd(Some(true)).is_some());
        assert_eq!(budget.held(), 1);
    }
}
