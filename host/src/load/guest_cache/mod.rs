//! The compiled-guest cache: a private directory of artifacts, each
//! vouched for by its pin (the argument is in [`crate::load`]'s doc).

mod check;
mod code;
mod dir;
mod evict;
mod files;
mod layout;
mod lookup;
mod store;

pub use dir::{DEFAULT_LIMIT, GuestCache};
pub(crate) use files::{digest_of, record};
pub(crate) use layout::Digest32;
pub(crate) use layout::key;
pub(crate) use lookup::{get_or_store, hit};
