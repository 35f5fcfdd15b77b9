//! [`FdBudget`]: how many host descriptors the [`DirFs`](super::DirFs)
//! instances sharing it hold for their open handles.
//!
//! Every open handle of a `DirFs` holds a host fd, and a guest may hold
//! far more descriptors (65,536 in preview1) than a host process may
//! open (its soft `RLIMIT_NOFILE`, often 1,024). Unbounded, one guest
//! fills the host's table, and then every open of the process fails:
//! the guest's, other guests' on their own host directories, the host's
//! own (publishing a pack, a journal's checkpoint). A budget refuses the
//! handle past its count instead, with the error a full host table gives
//! (see [`DirFs`](super::DirFs)), so that the host keeps the rest; a
//! handle closed gives its descriptor back.
//!
//! Counted are the fds that outlive a call: one per open handle. The
//! ones a call opens and closes before it returns (the `O_PATH` fd of the
//! directory it works in, a listing's) are a few per call in progress and
//! are not: a guest at its budget can still look up, stat and list, as
//! POSIX allows a process whose table is full.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rustix::process::{Resource, getrlimit};

/// Most descriptors [`FdBudget::default`] allows, however high the soft
/// limit: more open files than a guest needs, few enough that several
/// guests' budgets fit under a server's limit.
pub const MAX_DEFAULT_FDS: usize = 4096;

/// A count of host descriptors held for open handles, and its limit,
/// shared by the [`DirFs`](super::DirFs) instances given it (clones count
/// together).
///
/// Each `DirFs` has one of its own ([`FdBudget::default`]) unless given
/// one with [`DirFs::with_budget`](super::DirFs::with_budget): one
/// budget for all of a guest's host directories bounds what that guest
/// can make the host hold, and what one guest spends, another guest's
/// budget does not lose. Budgets do not see each other: those of one
/// process should add up to less than its soft `RLIMIT_NOFILE`.
#[derive(Clone)]
pub struct FdBudget(Arc<Count>);

struct Count {
    max: usize,
    held: AtomicUsize,
    refused: AtomicU64,
}

impl FdBudget {
    /// At most `max` descriptors held at once.
    pub fn new(max: usize) -> Self {
        FdBudget(Arc::new(Count { max, held: AtomicUsize::new(0), refused: AtomicU64::new(0) }))
    }

    /// Most descriptors held at once.
    pub fn max(&self) -> usize {
        self.0.max
    }

    /// Descriptors held now.
    pub fn held(&self) -> usize {
        self.0.held.load(Ordering::Acquire)
    }

    /// Handles refused so far because all `max` were held.
    pub fn refused(&self) -> u64 {
        self.0.refused.load(Ordering::Relaxed)
    }

    /// One descriptor more, given back when the [`Slot`] drops; `None`
    /// (and one refusal more) if all are held.
    pub(super) fn take(&self) -> Option<Slot> {
        let count = &self.0;
        match count.held.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < count.max).then_some(n + 1)) {
            Ok(_) => Some(Slot(self.clone())),
            Err(_) => {
                count.refused.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }
}

/// Half the process's soft `RLIMIT_NOFILE` as it is now, the host keeping
/// the other half, and at most [`MAX_DEFAULT_FDS`].
impl Default for FdBudget {
    fn default() -> Self {
        // No soft limit (`RLIM_INFINITY`): the cap alone.
        let soft = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
        FdBudget::new(usize::try_from(soft / 2).unwrap_or(usize::MAX).min(MAX_DEFAULT_FDS))
    }
}

impl std::fmt::Debug for FdBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FdBudget").field("max", &self.max()).field("held", &self.held()).finish()
    }
}

/// One descriptor of a budget, held until dropped.
pub(super) struct Slot(FdBudget);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.0.held.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_come_back() {
        let budget = FdBudget::new(2);
        let shared = budget.clone();
        let a = budget.take().unwrap();
        let _b = shared.take().unwrap();
        assert!(budget.take().is_none(), "clones count together");
        assert_eq!((budget.held(), budget.refused()), (2, 1));
        drop(a);
        assert!(shared.take().is_some());
        assert_eq!(FdBudget::new(0).take().map(|_| ()), None);
    }

    #[test]
    fn the_default_is_half_the_soft_limit() {
        let soft = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
        let want = usize::try_from(soft / 2).unwrap_or(usize::MAX).min(MAX_DEFAULT_FDS);
        assert_eq!(FdBudget::default().max(), want);
    }
}
