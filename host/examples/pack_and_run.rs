//! What a plugin host writes first: pack a directory, then run guests on
//! it, each on an overlay of its own under a quota, with a memory and time
//! limit, its stdout captured, and read back what it wrote.
//!
//!     cargo run -p packfs-host --example pack_and_run -- DIR GUEST.wasm...
//!
//! Each guest (a p1 module, a 0.2 or a 0.3 component: the runner tells
//! them apart, and makes the engine a 0.3 component needs at the first
//! one) is run as `GUEST /data /data/report.txt`, the README demo
//! (`guest-tests/src/bin/demo.rs`, and `guest-tests/p3/src/bin/p3_demo.rs`
//! for WASI 0.3), which counts the words of `/data`'s text files and
//! writes its report there; the host prints what it printed and what it
//! left in its overlay. The test command runs it with the demo built the
//! three ways.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use packfs_core::mem::Quota;
use packfs_core::pack::PackOptions;
use packfs_core::{MemFs, read_file};
use packfs_host::{Access, Capture};
use packfs_host::{Limits, Runner, Sandbox};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, guests @ ..] = &args[..] else {
        return Err("usage: pack_and_run DIR GUEST.wasm...".into());
    };

    // The directory as a pack, as `packfs pack` makes one, mapped.
    let scratch = tempfile::tempdir()?;
    let pack = scratch.path().join("data.pack");
    packfs_os::pack::pack_dir(dir.as_ref(), &pack, &PackOptions::new())?;
    let base = Arc::new(packfs_os::mmap::open_pack(&pack)?);

    let limits = Limits { max_memory: Some(64 << 20), timeout: Some(Duration::from_secs(30)) };
    let runner = Runner::builder().limits(limits).build()?;
    for path in guests {
        let guest = runner.load(Path::new(path))?;
        // The pack at /data under an overlay of the guest's own: its
        // writes stay there, at most 1 MiB of them; the pack never changes.
        let quota = Quota { max_bytes: Some(1 << 20), ..Quota::default() };
        let fork = Arc::new(MemFs::builder().lower(base.clone()).quota(quota).build()?);
        let stdout = Capture::new(64 << 10);
        let sandbox = Sandbox::new().args(["demo", "/data", "/data/report.txt"]).stdout(stdout.clone()).preopen(
            "/data",
            fork.clone(),
            Access::ReadWrite,
        );
        let status = runner.run(&guest, sandbox)?;
        let report = read_file(&*fork, "report.txt")?;
        println!("{path}: exit {status}, printed {} bytes, wrote report.txt:", stdout.contents().len());
        print!("{}", String::from_utf8_lossy(&report));
        if status != 0 || !stdout.contents().starts_with(&report) {
            return Err(format!("{path}: exit {status}, or its stdout does not start with its report").into());
        }
        if read_file(&*base, "report.txt").is_ok() {
            return Err("the pack changed".into());
        }
    }
    Ok(())
}
