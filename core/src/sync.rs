//! A mutex lock that shrugs off poisoning, for every PackFS crate.

use std::sync::{Mutex, MutexGuard};

/// `m`, locked, poisoned or not.
///
/// Every PackFS mutex guards state a panic cannot leave half-changed: a
/// change works on an unpublished copy, and a cache slot or a table entry
/// is set whole or not at all. Poisoning so carries no meaning, and a
/// panic in one guest's call must not fail every later call of others.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
