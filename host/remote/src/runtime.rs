//! The one tokio runtime the store clients run on, and how a caller that
//! is not async waits for it.

use std::future::Future;
use std::sync::OnceLock;

/// The runtime the store clients run on: one for the process, its
/// threads apart from the callers', who wait on channels and so may be
/// anywhere, inside another runtime too.
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("packfs-fetch")
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// Runs `f` on the runtime and waits for it.
pub(crate) fn block_on<F>(f: F) -> F::Output
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime().spawn(async move {
        let _ = tx.send(f.await);
    });
    rx.recv().expect("the task sends before it ends")
}
