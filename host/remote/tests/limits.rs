//! Remote packs that claim more than a lazily opened pack may have (core's
//! `pack::layout` limits): a compressed index that decodes past
//! `MAX_DECODED_INDEX`, a chunk table of more than `MAX_EXTENTS` chunks,
//! for which the source would build its 73-byte-per-extent table. Each is
//! refused at open, a typed `TooLarge` inside `RemoteError::Pack`, having
//! fetched a few MiB and allocated nothing near what the pack claims.
#![allow(unsafe_code, reason = "a counting global allocator over the system's")]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use common::*;
use packfs_core::pack::layout::{MAX_DECODED_INDEX, MAX_EXTENTS};
use packfs_core::pack::{Compression, CorruptKind, Limit, PackOptions, fuzzing};
use packfs_core::{Error, FileSystem, MemFs, OpenOptions};
use packfs_remote::{Location, RemoteError};
use packfs_testnet::FileServer;

/// The system allocator, keeping per thread the bytes live and the most
/// live at once, so that the fetching threads and other tests do not
/// count: an open checks and decodes on its caller's thread.
struct PerThread;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn track(delta: isize) {
    let _ = LIVE.try_with(|live| {
        live.set(live.get() + delta);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(live.get())));
    });
}

// SAFETY: every call goes unchanged to the system allocator; the counters
// are const-initialized thread locals, which never allocate.
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

/// A small version 2 pack with a compressed index.
fn v2() -> Vec<u8> {
    let fs = MemFs::new();
    for i in 0..20 {
        let f = fs.open(fs.root(), &format!("f{i:02}"), &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, format!("file {i} ").repeat(50 * i).as_bytes()).unwrap();
        fs.close(f);
    }
    let mut out = Vec::new();
    PackOptions::new().compress(Some(Compression::zstd(3))).chunk_size(4096).write(&fs, &mut out).unwrap();
    out
}

/// Serves `bytes` and opens it as a remote pack: the refusal's limit and
/// figures, and the most bytes the opening thread held at once.
fn refusal(bytes: &[u8]) -> ((Limit, u64, u64), usize) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.pack"), bytes).unwrap();
    let server = FileServer::start(dir.path());
    let location = Location::parse(&format!("{}/p.pack", server.url())).unwrap().unwrap();
    let options = options(None);
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let result = packfs_remote::open(&location, &options);
    let peak = (PEAK.with(Cell::get) - base) as usize;
    let refused = match &result {
        Err(RemoteError::Pack { error: Error::Corrupt(c), .. }) => match c.kind {
            CorruptKind::TooLarge { what, value, limit } => Some((what, value, limit)),
            _ => None,
        },
        _ => None,
    };
    let shown = result.as_ref().err().map(ToString::to_string);
    let refused = refused.unwrap_or_else(|| panic!("not refused as too large: {shown:?}"));
    assert!(shown.unwrap().contains("more than a lazily opened pack may have"));
    (refused, peak)
}

#[test]
fn a_remote_index_that_decodes_past_its_bound_is_refused_unallocated() {
    let over = u32::try_from(MAX_DECODED_INDEX + 8).unwrap();
    let stored = vec![0u8; (over as usize).div_ceil(256).next_multiple_of(8)];
    let bomb = fuzzing::with_index(&v2(), &stored, over);
    let (refused, peak) = refusal(&bomb);
    assert_eq!(refused, (Limit::DecodedIndex, over.into(), MAX_DECODED_INDEX));
    // What was fetched (4 MiB, on other threads) and copied into pieces.
    assert!(peak < 16 << 20, "the open held {peak} bytes");
}

#[test]
fn a_remote_pack_of_more_chunks_than_the_table_bound_is_refused() {
    let bomb = fuzzing::chunk_bomb(&v2(), MAX_EXTENTS + 1);
    assert!(bomb.len() < 4 << 20, "{} bytes", bomb.len());
    let (refused, peak) = refusal(&bomb);
    assert_eq!(refused, (Limit::Extents, MAX_EXTENTS + 1, MAX_EXTENTS));
    // The decoded index (512 MiB, within its bound), and nothing sized by
    // the chunk count: the table was never built.
    assert!(peak as u64 <= MAX_EXTENTS * 32 + (16 << 20), "the open held {peak} bytes");
}
