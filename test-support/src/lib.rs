//! What PackFS's test files and benchmarks share.
//!
//! - [`Rng`]: a seeded generator, with no dependencies (packfs-core's own
//!   tests use it with `default-features = false`);
//! - feature `guests`: building the guest programs of `guest-tests/` once
//!   per test process, [`kill_after`], a guard on a child process, and
//!   `wait_peak_rss`, what one held at most;
//! - feature `trees`: [`trees`], trees by path, to start guests from and to
//!   compare what they leave;
//! - feature `oracle`: [`oracle`], guests on wasmtime-wasi's own WASI over
//!   real directories, the reference PackFS is measured against.

mod rng;
pub use rng::Rng;

#[cfg(feature = "guests")]
mod guard;
#[cfg(feature = "guests")]
mod guests;
#[cfg(feature = "guests")]
pub use guard::kill_after;
#[cfg(all(feature = "guests", target_os = "linux", target_pointer_width = "64"))]
pub use guard::wait_peak_rss;
#[cfg(feature = "guests")]
pub use guests::{
    build_c_guests, build_p3_guests, build_rust_guests, c_guest, guest_cache_dir, guest_target_dir, p3_guest,
    rust_guest, workspace,
};

#[cfg(feature = "oracle")]
pub mod oracle;
#[cfg(feature = "trees")]
pub mod trees;
