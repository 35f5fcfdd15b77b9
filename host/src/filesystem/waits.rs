//! A guest's turns at stream work that waits on the network ([`Waits`]):
//! at most [`MAX_WAITING`] pieces at once, shared by all its streams.
//! Held with its preopens, as its other bounds are; WASI 0.3's streams
//! take them (`p3::offload`).

use std::sync::Arc;

use tokio::sync::Semaphore;

/// Most pieces of one guest's stream work waiting on the network at once.
pub(crate) const MAX_WAITING: usize = 16;

/// A guest's turns at waiting work, shared by its streams.
#[derive(Clone)]
pub(crate) struct Waits(pub(crate) Arc<Semaphore>);

impl Default for Waits {
    fn default() -> Self {
        Waits(Arc::new(Semaphore::new(MAX_WAITING)))
    }
}
