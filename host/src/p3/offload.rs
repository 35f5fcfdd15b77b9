//! Stream work that may wait on the network, done on tokio's blocking pool
//! ([`Offload`]), at most [`MAX_WAITING`] pieces of one guest's at once
//! ([`Waits`]).
//!
//! Each piece holds a buffer (a read's [`HOST_READ`](super::streams)
//! bytes, a write's up to 1 MiB) until it is done, and a guest may hold
//! tens of thousands of streams: without the bound, one guest could make
//! the host hold a buffer for each. A piece past it waits its turn, its
//! stream pending.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

/// Most pieces of one guest's stream work waiting on the network at once.
pub(crate) const MAX_WAITING: usize = 16;

/// A guest's turns at waiting work, shared by its streams.
#[derive(Clone)]
pub(crate) struct Waits(Arc<Semaphore>);

impl Default for Waits {
    fn default() -> Self {
        Waits(Arc::new(Semaphore::new(MAX_WAITING)))
    }
}

type Turn = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;
type Work<T> = Box<dyn FnOnce() -> T + Send>;

/// One stream's piece of waiting work: none, waiting its turn, or running.
enum State<T> {
    Idle,
    Queued(Turn, Work<T>),
    Running(JoinHandle<T>),
}

/// One stream's waiting work, one piece at a time.
pub(crate) struct Offload<T> {
    waits: Waits,
    state: State<T>,
}

impl<T: Send + 'static> Offload<T> {
    pub(crate) fn new(waits: Waits) -> Self {
        Offload { waits, state: State::Idle }
    }

    /// A piece is under way: the stream must poll it to its end.
    pub(crate) fn busy(&self) -> bool {
        !matches!(self.state, State::Idle)
    }

    /// Queues `work`, to run on the blocking pool under the guest's
    /// deadline (the thread calling this is the guest's) once it has a
    /// turn. Call [`poll`](Self::poll) next.
    pub(crate) fn start(&mut self, work: impl FnOnce() -> T + Send + 'static) {
        debug_assert!(!self.busy(), "one piece at a time");
        let deadline = packfs_core::wasi::deadline::current();
        let work: Work<T> = Box::new(move || match deadline {
            Some(d) => d.scope(work),
            None => work(),
        });
        self.state = State::Queued(Box::pin(Arc::clone(&self.waits.0).acquire_owned()), work);
    }

    /// Drops a piece still waiting its turn (nothing of it has run):
    /// whether there was one.
    pub(crate) fn cancel(&mut self) -> bool {
        let queued = matches!(self.state, State::Queued(..));
        if queued {
            self.state = State::Idle;
        }
        queued
    }

    /// The piece's result once it is done; the stream is woken then.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<wasmtime::Result<T>> {
        loop {
            match &mut self.state {
                State::Idle => return Poll::Ready(Err(wasmtime::Error::msg("no stream work under way"))),
                State::Queued(turn, _) => {
                    let permit = ready!(turn.as_mut().poll(cx)).map_err(wasmtime::Error::new)?;
                    let State::Queued(_, work) = std::mem::replace(&mut self.state, State::Idle) else {
                        unreachable!("matched above")
                    };
                    // The turn is held by the work itself, so that it goes
                    // back when the work is done, even if the stream is
                    // dropped first.
                    self.state = State::Running(tokio::task::spawn_blocking(move || {
                        let _turn = permit;
                        work()
                    }));
                }
                State::Running(task) => {
                    let joined = ready!(Pin::new(task).poll(cx));
                    self.state = State::Idle;
                    return Poll::Ready(joined.map_err(|e| wasmtime::Error::msg(format!("stream work failed: {e}"))));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().build().unwrap()
    }

    /// Polls every offload to its end: the results, in order.
    async fn all<T: Send + 'static>(offloads: &mut [Offload<T>]) -> Vec<T> {
        let mut results: Vec<Option<T>> = offloads.iter().map(|_| None).collect();
        std::future::poll_fn(|cx| {
            for (o, r) in offloads.iter_mut().zip(&mut results) {
                if r.is_none()
                    && let Poll::Ready(v) = o.poll(cx)
                {
                    *r = Some(v.unwrap());
                }
            }
            if results.iter().all(Option::is_some) { Poll::Ready(()) } else { Poll::Pending }
        })
        .await;
        results.into_iter().map(Option::unwrap).collect()
    }

    #[test]
    fn no_more_than_max_waiting_pieces_of_a_guest_run_at_once() {
        let (now, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let waits = Waits::default();
        let mut offloads: Vec<Offload<usize>> = (0..4 * MAX_WAITING).map(|_| Offload::new(waits.clone())).collect();
        for (i, o) in offloads.iter_mut().enumerate() {
            let (now, peak) = (Arc::clone(&now), Arc::clone(&peak));
            o.start(move || {
                peak.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
                now.fetch_sub(1, Ordering::SeqCst);
                i
            });
        }
        let results = runtime().block_on(all(&mut offloads));
        assert_eq!(results, (0..4 * MAX_WAITING).collect::<Vec<_>>());
        let peak = peak.load(Ordering::SeqCst);
        assert!((2..=MAX_WAITING).contains(&peak), "{peak} pieces ran at once");
        assert!(offloads.iter().all(|o| !o.busy()));
    }

    #[test]
    fn a_piece_keeps_its_turn_until_done_though_its_stream_is_gone() {
        let waits = Waits::default();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (started, running) = std::sync::mpsc::channel::<()>();
        let mut o = Offload::new(waits.clone());
        o.start(move || {
            started.send(()).unwrap();
            wait.recv().unwrap();
        });
        let rt = runtime();
        // Polled until it runs, then dropped with it under way.
        rt.block_on(std::future::poll_fn(|cx| {
            let _ = o.poll(cx);
            Poll::Ready(())
        }));
        running.recv().unwrap();
        drop(o);
        assert_eq!(waits.0.available_permits(), MAX_WAITING - 1);
        release.send(()).unwrap();
        // The work ends on the blocking pool, and its turn comes back.
        while waits.0.available_permits() < MAX_WAITING {
            std::thread::yield_now();
        }
        // A queued piece cancelled gives back nothing it did not take.
        let mut queued: Vec<Offload<()>> = (0..=MAX_WAITING).map(|_| Offload::new(waits.clone())).collect();
        for o in &mut queued {
            o.start(|| std::thread::sleep(Duration::from_millis(10)));
        }
        rt.block_on(std::future::poll_fn(|cx| {
            queued.iter_mut().for_each(|o| {
                let _ = o.poll(cx);
            });
            Poll::Ready(())
        }));
        assert!(queued.last_mut().unwrap().cancel(), "the last waits its turn");
        assert!(!queued[0].cancel(), "the first runs");
        queued.pop();
        rt.block_on(all(&mut queued));
        assert_eq!(waits.0.available_permits(), MAX_WAITING);
    }
}
