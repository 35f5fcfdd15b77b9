//! What tells filesystems and inodes apart for a guest: the device number
//! of each preopen ([`device_number`]) and `metadata-hash`.

use std::sync::Arc;

use crate::{FileSystem, Ino};

/// The device number of preopen `fs` among a guest's preopens `all`: one
/// per distinct filesystem, from 1, in the order they first appear.
pub fn device_number<'a>(mut all: impl Iterator<Item = &'a Arc<dyn FileSystem>>, fs: &Arc<dyn FileSystem>) -> u64 {
    let addr = |f: &Arc<dyn FileSystem>| Arc::as_ptr(f).cast::<()>();
    all.position(|f| addr(f) == addr(fs)).map_or(0, |i| i as u64 + 1)
}

/// `metadata-hash`: a bijective mix of the inode number keyed by the
/// device number, so no two inodes of one filesystem collide. The p1 adapter calls
/// it once per directory entry, so it must be cheap.
pub(super) fn metadata_hash(device: u64, ino: Ino) -> (u64, u64) {
    let lower = mix(ino ^ mix(device));
    (lower, mix(lower ^ 0x9e37_79b9_7f4a_7c15))
}

/// The splitmix64 finalizer: a bijection on u64.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_is_injective_per_device() {
        let mut seen = std::collections::HashSet::new();
        for ino in 0..10_000 {
            assert!(seen.insert(metadata_hash(7, ino).0));
        }
        assert_ne!(metadata_hash(1, 5), metadata_hash(2, 5));
    }
}
