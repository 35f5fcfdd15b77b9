//! A guest's deadline, as the host calls it makes see it: everything a
//! host call waits for on the guest's behalf (a sleep, stdin, a lazy
//! pack's fetch) ends by then, and once it has passed no call's result
//! reaches the guest.
//!
//! Epoch interruption stops a guest only while its own code runs; a guest
//! blocked in a host call would sleep through it. So the embedder sets
//! the deadline for the thread that runs the guest ([`Deadline::scope`]),
//! its watchdog calls [`Deadline::expire`] when it passes, and each wait
//! asks [`remaining`] how long it may still last. A thread outside any
//! scope has no deadline: waits last as long as they would.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// One guest's deadline, shared by the thread running it and its watchdog.
#[derive(Debug)]
pub struct Deadline {
    at: Instant,
    expired: AtomicBool,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Deadline>>> = const { RefCell::new(None) };
}

impl Deadline {
    /// A deadline at `at`.
    pub fn new(at: Instant) -> Arc<Deadline> {
        Arc::new(Deadline { at, expired: AtomicBool::new(false) })
    }

    /// When it is.
    pub fn at(&self) -> Instant {
        self.at
    }

    /// Marks it passed, whatever the time (a watchdog's or a cancel's
    /// call): from now on [`expired`] is true on the guest's thread and
    /// waits end at once.
    pub fn expire(&self) {
        self.expired.store(true, Ordering::SeqCst);
    }

    /// Whether it has passed, or was expired early.
    pub fn passed(&self) -> bool {
        self.expired.load(Ordering::SeqCst) || Instant::now() >= self.at
    }

    /// Runs `f` (the guest) with this deadline on the current thread; the
    /// one before is back after.
    pub fn scope<R>(self: &Arc<Self>, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<Arc<Deadline>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| *c.borrow_mut() = self.0.take());
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.borrow_mut().replace(Arc::clone(self))));
        f()
    }
}

/// The current thread's deadline, to carry to another thread that waits
/// on the guest's behalf.
pub fn current() -> Option<Arc<Deadline>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// True once the current thread's deadline has passed, or was expired
/// early. Without a deadline it reads no clock.
pub fn expired() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(|d| d.passed()))
}

/// How long a wait on the current thread may last: `None` without a
/// deadline, else the time left (zero once it has passed).
pub fn remaining() -> Option<Duration> {
    CURRENT.with(|c| {
        c.borrow().as_ref().map(|d| {
            if d.expired.load(Ordering::SeqCst) {
                Duration::ZERO
            } else {
                d.at.saturating_duration_since(Instant::now())
            }
        })
    })
}

/// `wait`, cut to what the current thread's deadline leaves.
pub fn cut(wait: Duration) -> Duration {
    remaining().map_or(wait, |left| left.min(wait))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_sets_the_deadline_for_its_thread_only() {
        assert_eq!(remaining(), None);
        let d = Deadline::new(Instant::now() + Duration::from_secs(60));
        d.scope(|| {
            assert!(cut(Duration::from_secs(3600)) <= Duration::from_secs(60));
            assert_eq!(cut(Duration::from_millis(5)), Duration::from_millis(5));
            assert!(!expired());
            std::thread::spawn(|| assert_eq!(remaining(), None)).join().unwrap();
            d.expire();
            assert!(expired());
            let inner = Deadline::new(Instant::now());
            inner.scope(|| assert_eq!(remaining(), Some(Duration::ZERO)));
            assert!(expired(), "the outer deadline is back");
        });
        assert_eq!(remaining(), None);
        assert!(!expired());
    }
}
