//! The clock of writable filesystems and of preview1 guests' wall clock.

use packfs_core::Clock;

/// `Date.now()` in the browser (the core has no clock on
/// wasm32-unknown-unknown), the system clock elsewhere.
pub(crate) fn clock() -> Clock {
    #[cfg(target_arch = "wasm32")]
    {
        std::sync::Arc::new(|| {
            // Whole milliseconds (Date.now() has no finer grain): integer
            // arithmetic, where `%` on a float is a software fmod in wasm.
            let ms = js_sys::Date::now().max(0.0) as u64;
            packfs_core::Timestamp::new(ms / 1000, (ms % 1000) as u32 * 1_000_000)
        })
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        packfs_core::system_clock()
    }
}
