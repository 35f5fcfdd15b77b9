//! The writer streams: what it allocates while packing grows with the
//! index, not with the bytes it copies.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use packfs_core::pack::PackOptions;
use packfs_core::{FileSystem, MemFs};

use crate::common::write_file;

/// The system allocator, keeping per thread the bytes live and the most
/// live at once (see [`peak_during`]), so that tests running in other
/// threads do not count.
struct PerThread;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn track(delta: isize) {
    // `try_with`: a thread being torn down has no counters left to keep.
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + delta);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

// SAFETY: every call goes unchanged to the system allocator; the counters
// are const-initialized thread locals, which never allocate.
#[allow(unsafe_code, reason = "a counting allocator is a GlobalAlloc")]
unsafe impl GlobalAlloc for PerThread {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        track(layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        track(-(layout.size() as isize));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        track(new_size as isize - layout.size() as isize);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: PerThread = PerThread;

/// The most bytes this thread had allocated at once while `f` ran, beyond
/// what it held when `f` started.
pub(crate) fn peak_during(f: impl FnOnce()) -> usize {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    f();
    (PEAK.with(Cell::get) - base) as usize
}

#[test]
fn pack_writer_memory_follows_the_index_not_the_data() {
    // Two trees with the same index: 200 files of 1 KiB, or of 320 KiB
    // (64 MiB), all distinct.
    let peak_for = |size: usize| {
        let fs = MemFs::new();
        let dir = fs.mkdir(fs.root(), "d", 0o755).unwrap();
        for i in 0..200u32 {
            let data: Vec<u8> = (0..size).map(|j| (j as u32).wrapping_mul(31).wrapping_add(i) as u8).collect();
            write_file(&fs, dir, &format!("f{i:03}"), &data);
        }
        let snap = fs.snapshot();
        let mut written = 0;
        let peak = peak_during(|| {
            written = PackOptions::new().write(&snap, std::io::sink()).unwrap().blobs;
        });
        assert_eq!(written, 200);
        peak
    };
    let (small, big) = (peak_for(1 << 10), peak_for(320 << 10));
    // The writer's fixed buffers (a few chunks of 64 KiB) and its tables,
    // whatever the data: 320x the bytes may not cost more than 64 KiB more.
    assert!(small < 1 << 20, "packing 200 KiB peaked at {small} bytes");
    assert!(big < small + (64 << 10), "packing 64 MiB peaked at {big} bytes, 200 KiB at {small}");
}
