//! The task that writes the WASI 0.3 streams this component hands out.
//! `read-via-stream`, `write-via-stream`, `append-via-stream` and
//! `read-directory` are sync functions returning streams: they are lifted
//! sync, so no task of theirs is left once they return to write the
//! stream. The first async call of the guest (`open-at`, `stat`, …)
//! starts one task of this component's own that outlives its call, and
//! runs every stream's work from then on, woken across tasks (wit-bindgen's
//! `inter-task-wakeup`) when a sync call queues some. A guest's `run` is
//! wrapped so that `packfs:virt/pump.start` comes first (host/src/virt/
//! compose.rs): then even a first call that is sync (`read-directory` on a
//! preopen) finds the task running. (A 0.3 reactor's first sync call
//! would wait until an async one starts it.)

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::{Poll, Waker};

type Job = Pin<Box<dyn Future<Output = ()>>>;

thread_local! {
    static JOBS: RefCell<VecDeque<Job>> = const { RefCell::new(VecDeque::new()) };
    static WAKER: RefCell<Option<Waker>> = const { RefCell::new(None) };
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// Starts the pump, once, in the task of the async call making this one.
pub(crate) fn start() {
    if RUNNING.replace(true) {
        return;
    }
    wit_bindgen::spawn_local(async {
        loop {
            let job = poll_fn(|cx| match JOBS.with_borrow_mut(VecDeque::pop_front) {
                Some(job) => Poll::Ready(job),
                None => {
                    WAKER.with_borrow_mut(|w| *w = Some(cx.waker().clone()));
                    Poll::Pending
                }
            })
            .await;
            wit_bindgen::spawn_local(job);
        }
    });
}

/// Queues `job` for the pump, and wakes it.
pub(crate) fn submit(job: impl Future<Output = ()> + 'static) {
    JOBS.with_borrow_mut(|jobs| jobs.push_back(Box::pin(job)));
    if let Some(waker) = WAKER.with_borrow_mut(Option::take) {
        waker.wake();
    }
}
