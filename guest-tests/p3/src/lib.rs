//! Bindings to WASI 0.3 (`wasi:cli/command@0.3.0`) and transcript helpers
//! for the p3 guests: one line per operation, its value or its
//! `error-code`, so two runs can be compared line by line. Nothing printed
//! may depend on the backend (no inode numbers, hashes' values, wall-clock
//! times or directory order).

wit_bindgen::generate!({
    path: "wit",
    world: "packfs:guests/p3",
    default_bindings_module: "packfs_guests_p3",
    pub_export_macro: true,
    additional_derives: [PartialEq, Eq, Clone],
    generate_all,
});

use std::fmt::Debug;

pub use wasi::filesystem::types::{
    Descriptor, DescriptorFlags, DescriptorType, DirectoryEntry, ErrorCode, NewTimestamp, OpenFlags, PathFlags,
};
use wit_bindgen::{StreamReader, StreamResult};

/// Prints `label: ok <value>` or `label: err <code>`.
pub fn show<T: Debug>(label: &str, r: Result<T, ErrorCode>) {
    match r {
        Ok(v) => println!("{label}: ok {v:?}"),
        Err(e) => println!("{label}: err {e:?}"),
    }
}

/// Prints `label: ok` or the error, dropping the success value.
pub fn step<T>(label: &str, r: Result<T, ErrorCode>) {
    show(label, r.map(|_| ()));
}

/// The preopen at `path`.
pub fn preopen(path: &str) -> Descriptor {
    let (d, _) = wasi::filesystem::preopens::get_directories()
        .into_iter()
        .find(|(_, p)| p == path)
        .unwrap_or_else(|| panic!("no preopen {path}"));
    d
}

/// Opens `path` under `dir` with `open` and `flags`.
pub async fn open(dir: &Descriptor, path: &str, open: OpenFlags, flags: DescriptorFlags) -> Result<Descriptor, ErrorCode> {
    dir.open_at(PathFlags::empty(), path.to_owned(), open, flags).await
}

/// Reads `fd` from `offset` to its end through `read-via-stream`, in
/// reads of `piece` bytes; then its future.
pub async fn read_from(fd: &Descriptor, offset: u64, piece: usize) -> Result<Vec<u8>, ErrorCode> {
    let (mut rx, done) = fd.read_via_stream(offset);
    let (data, _) = drain(&mut rx, 0, piece).await;
    drop(rx);
    done.await.map(|()| data)
}

/// Reads `rx` in reads of `piece` items, to its end or until `limit`
/// items came (0: no limit); whether it stopped at the limit.
pub async fn drain<T: 'static>(rx: &mut StreamReader<T>, limit: usize, piece: usize) -> (Vec<T>, bool) {
    let mut items = Vec::new();
    loop {
        items.reserve(piece.max(1));
        let (result, back) = rx.read(items).await;
        items = back;
        if limit > 0 && items.len() >= limit {
            items.truncate(limit);
            return (items, true);
        }
        match result {
            StreamResult::Complete(_) => {}
            StreamResult::Dropped => return (items, false),
            StreamResult::Cancelled => panic!("nobody cancels this read"),
        }
    }
}

/// Writes `data` at `offset` through `write-via-stream` (or appends it,
/// with `None`), in writes of `piece` bytes; the future's outcome and the
/// bytes the host took.
pub async fn write_at(fd: &Descriptor, offset: Option<u64>, data: &[u8], piece: usize) -> Result<usize, ErrorCode> {
    let (taken, result) = write_counted(fd, offset, data, piece).await;
    result.map(|()| taken)
}

/// [`write_at`], the bytes the host took counted whatever the outcome.
pub async fn write_counted(fd: &Descriptor, offset: Option<u64>, data: &[u8], piece: usize) -> (usize, Result<(), ErrorCode>) {
    let (mut tx, rx) = wit_stream::new();
    let done = match offset {
        Some(at) => fd.write_via_stream(rx, at),
        None => fd.append_via_stream(rx),
    };
    let send = async {
        let mut taken = 0;
        for chunk in data.chunks(piece.max(1)) {
            let rest = tx.write_all(chunk.to_vec()).await;
            taken += chunk.len() - rest.len();
            if !rest.is_empty() {
                break;
            }
        }
        drop(tx);
        taken
    };
    futures::join!(send, async { done.await })
}

/// The names and types in `dir`, sorted by name.
pub async fn list(dir: &Descriptor) -> Result<Vec<(String, DescriptorType)>, ErrorCode> {
    let (rx, done) = dir.read_directory();
    let entries: Vec<DirectoryEntry> = rx.collect().await;
    done.await?;
    let mut out: Vec<_> = entries.into_iter().map(|e| (e.name, e.type_)).collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// A deterministic byte pattern for large-file checks.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3] ^ seed).collect()
}

/// FNV-1a, to print a short digest of large contents.
pub fn digest(data: &[u8]) -> String {
    let h = data.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    format!("{:016x}/{}", h, data.len())
}
