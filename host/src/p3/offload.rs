//! Stream work that may wait on the network, done on tokio's blocking pool
//! ([`Offload`]), at most `MAX_WAITING` pieces of one guest's at once
//! (its [`Waits`]).
//!
//! Each piece holds a buffer (a read's [`HOST_READ`](super::streams)
//! bytes, a write's up to 1 MiB) until it is done, and a guest may hold
//! tens of thousands of streams: without the bound, one guest could make
//! the host hold a buffer for each. A piece past it waits its turn, its
//! stream pending, and is made only when its turn comes: what waits holds
//! no buffer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tokio::sync::{AcquireError, OwnedSemaphorePermit};
use tokio::task::JoinHandle;

use crate::filesystem::waits::Waits;

type Turn = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

/// One stream's piece of waiting work: none, waiting its turn, holding it
/// (the work not yet given), or running.
enum State<T> {
    Idle,
    Queued(Turn),
    Turned(OwnedSemaphorePermit),
    Running(JoinHandle<T>),
}

/// One stream's waiting work, one piece at a time. A piece takes its turn
/// ([`poll_turn`](Self::poll_turn)) before it is made
/// ([`run`](Self::run)), so a piece waiting its turn holds nothing: a
/// write copies the guest's bytes only once it may go.
pub(crate) struct Offload<T> {
    waits: Waits,
    state: State<T>,
}

impl<T: Send + 'static> Offload<T> {
    pub(crate) fn new(waits: Waits) -> Self {
        Offload { waits, state: State::Idle }
    }

    /// A piece is running: the stream must poll it to its end.
    pub(crate) fn running(&self) -> bool {
        matches!(self.state, State::Running(_))
    }

    /// Waits for a turn (asked for on the first call), which the stream
    /// then holds until it gives [`run`](Self::run) its work or
    /// [`cancel`](Self::cancel)s.
    pub(crate) fn poll_turn(&mut self, cx: &mut Context<'_>) -> Poll<wasmtime::Result<()>> {
        loop {
            match &mut self.state {
                State::Idle => self.state = State::Queued(Box::pin(Arc::clone(&self.waits.0).acquire_owned())),
                State::Queued(turn) => {
                    let permit = ready!(turn.as_mut().poll(cx)).map_err(wasmtime::Error::new)?;
                    self.state = State::Turned(permit);
                }
                State::Turned(_) => return Poll::Ready(Ok(())),
                State::Running(_) => return Poll::Ready(Err(wasmtime::Error::msg("stream work already under way"))),
            }
        }
    }

    /// Runs `work` on the blocking pool, under the guest's deadline (the
    /// thread calling this is the guest's), with the turn
    /// [`poll_turn`](Self::poll_turn) gave. Call [`poll`](Self::poll)
    /// next.
    pub(crate) fn run(&mut self, work: impl FnOnce() -> T + Send + 'static) {
        let State::Turned(permit) = std::mem::replace(&mut self.state, State::Idle) else {
            debug_assert!(false, "run without a turn");
            return;
        };
        let deadline = packfs_core::deadline::current();
        // The turn is held by the work itself, so that it goes back when
        // the work is done, even if the stream is dropped first.
        self.state = State::Running(tokio::task::spawn_blocking(move || {
            let _turn = permit;
            match deadline {
                Some(d) => d.scope(work),
                None => work(),
            }
        }));
    }

    /// Gives back a turn waited for or held (no work of it has run):
    /// whether there was one.
    pub(crate) fn cancel(&mut self) -> bool {
        let turn = matches!(self.state, State::Queued(_) | State::Turned(_));
        if turn {
            self.state = State::Idle;
        }
        turn
    }

    /// The running piece's result once it is done; the stream is woken
    /// then.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<wasmtime::Result<T>> {
        let State::Running(task) = &mut self.state else {
            return Poll::Ready(Err(wasmtime::Error::msg("no stream work under way")));
        };
        let joined = ready!(Pin::new(task).poll(cx));
        self.state = State::Idle;
        Poll::Ready(joined.map_err(|e| wasmtime::Error::msg(format!("stream work failed: {e}"))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filesystem::waits::MAX_WAITING;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().build().unwrap()
    }

    type Work<T> = Box<dyn FnOnce() -> T + Send>;

    /// A stream's piece as the streams drive one: a turn, then the work
    /// made (`make`, called only then), then its result.
    struct Piece<T> {
        offload: Offload<T>,
        make: Option<Box<dyn FnOnce() -> Work<T> + Send>>,
    }

    impl<T: Send + 'static> Piece<T> {
        fn new(waits: &Waits, make: impl FnOnce() -> Work<T> + Send + 'static) -> Self {
            Piece { offload: Offload::new(waits.clone()), make: Some(Box::new(make)) }
        }

        fn poll(&mut self, cx: &mut Context<'_>) -> Poll<T> {
            if let Some(make) = self.make.take_if(|_| !self.offload.running()) {
                if self.offload.poll_turn(cx).is_pending() {
                    self.make = Some(make);
                    return Poll::Pending;
                }
                self.offload.run(make());
            }
            self.offload.poll(cx).map(Result::unwrap)
        }
    }

    /// Polls every piece to its end: the results, in order.
    async fn all<T: Send + 'static>(pieces: &mut [Piece<T>]) -> Vec<T> {
        let mut results: Vec<Option<T>> = pieces.iter().map(|_| None).collect();
        std::future::poll_fn(|cx| {
            for (p, r) in pieces.iter_mut().zip(&mut results) {
                if r.is_none()
                    && let Poll::Ready(v) = p.poll(cx)
                {
                    *r = Some(v);
                }
            }
            if results.iter().all(Option::is_some) { Poll::Ready(()) } else { Poll::Pending }
        })
        .await;
        results.into_iter().map(Option::unwrap).collect()
    }

    /// At most `MAX_WAITING` pieces run at once, and no more are made: a
    /// piece waiting its turn has not made its work (a write, its copy of
    /// the guest's bytes).
    #[test]
    fn no_more_than_max_waiting_pieces_of_a_guest_are_made_or_run_at_once() {
        let (now, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (made, peak_made) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let waits = Waits::default();
        let mut pieces: Vec<Piece<usize>> = (0..4 * MAX_WAITING)
            .map(|i| {
                let (now, peak, made, peak_made) =
                    (Arc::clone(&now), Arc::clone(&peak), Arc::clone(&made), Arc::clone(&peak_made));
                Piece::new(&waits, move || {
                    peak_made.fetch_max(made.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                    Box::new(move || {
                        peak.fetch_max(now.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(20));
                        now.fetch_sub(1, Ordering::SeqCst);
                        made.fetch_sub(1, Ordering::SeqCst);
                        i
                    })
                })
            })
            .collect();
        let results = runtime().block_on(all(&mut pieces));
        assert_eq!(results, (0..4 * MAX_WAITING).collect::<Vec<_>>());
        let peak = peak.load(Ordering::SeqCst);
        assert!((2..=MAX_WAITING).contains(&peak), "{peak} pieces ran at once");
        let made = peak_made.load(Ordering::SeqCst);
        assert!((2..=MAX_WAITING).contains(&made), "{made} pieces made at once");
        assert!(pieces.iter().all(|p| !p.offload.running()));
    }

    #[test]
    fn a_piece_keeps_its_turn_until_done_though_its_stream_is_gone() {
        let waits = Waits::default();
        let (release, wait) = std::sync::mpsc::channel::<()>();
        let (started, running) = std::sync::mpsc::channel::<()>();
        let mut p = Piece::new(&waits, move || {
            Box::new(move || {
                started.send(()).unwrap();
                wait.recv().unwrap();
            })
        });
        let rt = runtime();
        // Polled until it runs, then dropped with it under way.
        rt.block_on(std::future::poll_fn(|cx| {
            let _ = p.poll(cx);
            Poll::Ready(())
        }));
        running.recv().unwrap();
        drop(p);
        assert_eq!(waits.0.available_permits(), MAX_WAITING - 1);
        release.send(()).unwrap();
        // The work ends on the blocking pool, and its turn comes back.
        while waits.0.available_permits() < MAX_WAITING {
            std::thread::yield_now();
        }
        // A piece waiting its turn cancelled gives back nothing it did not
        // take; one holding its turn gives it back.
        let sleep = || -> Box<dyn FnOnce() + Send> { Box::new(|| std::thread::sleep(Duration::from_millis(10))) };
        let mut queued: Vec<Piece<()>> = (0..=MAX_WAITING).map(|_| Piece::new(&waits, sleep)).collect();
        rt.block_on(std::future::poll_fn(|cx| {
            queued.iter_mut().for_each(|p| {
                let _ = p.poll(cx);
            });
            Poll::Ready(())
        }));
        let last = queued.last_mut().unwrap();
        assert!(last.make.is_some() && last.offload.cancel(), "the last waits its turn, its work not made");
        assert!(!queued[0].offload.cancel(), "the first runs");
        queued.pop();
        rt.block_on(all(&mut queued));
        assert_eq!(waits.0.available_permits(), MAX_WAITING);
        let mut held = Offload::<()>::new(waits.clone());
        rt.block_on(std::future::poll_fn(|cx| held.poll_turn(cx))).unwrap();
        assert_eq!(waits.0.available_permits(), MAX_WAITING - 1);
        assert!(held.cancel());
        assert_eq!(waits.0.available_permits(), MAX_WAITING);
    }
}
