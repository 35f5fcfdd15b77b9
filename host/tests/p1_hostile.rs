//! A hostile guest: every preview1 function called with pointers outside
//! memory, lengths and counts of 2^32 - 1, the largest 64-bit values, on a
//! real descriptor (the preopen) and on none. Each call must come back with
//! an errno — `EFAULT` wherever a pointer is read or written — and the
//! guest run to its end, the host's memory untouched by it.

use std::fmt::Write as _;
use std::sync::Arc;

use packfs_core::wasi::p1::Wasi;
use packfs_core::wasi::p1::calls::{FUNCTIONS, ValType};
use packfs_core::{FileSystem, MemFs};
use packfs_host::Access;
use packfs_host::Runner;
use packfs_host::p1::HostPlatform;

/// Where the guest stores each call's errno (one page of memory).
const ERRNOS: u32 = 1024;

/// The guest: each function (but `proc_exit`) called with `fd` as its
/// first argument, every other 32-bit argument `v32` and every 64-bit one
/// `v64`, errnos stored in order.
fn guest(fd: u32, v32: u32, v64: u64) -> String {
    let mut w = String::from("(module\n");
    let calls: Vec<_> = FUNCTIONS.iter().filter(|(name, _)| *name != "proc_exit").collect();
    for (name, params) in &calls {
        let ps: Vec<&str> = params.iter().map(|t| if *t == ValType::I64 { "i64" } else { "i32" }).collect();
        let _ = writeln!(
            w,
            "  (import \"wasi_snapshot_preview1\" \"{name}\" (func ${name} (param {}) (result i32)))",
            ps.join(" ")
        );
    }
    w.push_str("  (memory (export \"memory\") 1)\n  (func (export \"_start\")\n");
    for (i, (name, params)) in calls.iter().enumerate() {
        let args: Vec<String> = params
            .iter()
            .enumerate()
            .map(|(k, t)| match (k, t) {
                (0, ValType::I32)
                    if name.starts_with("fd_") || name.starts_with("path_") || name.starts_with("sock_") =>
                {
                    format!("(i32.const {})", fd as i32)
                }
                (_, ValType::I32) => format!("(i32.const {})", v32 as i32),
                (_, ValType::I64) => format!("(i64.const {})", v64 as i64),
            })
            .collect();
        let _ = writeln!(w, "    (i32.store (i32.const {}) (call ${name} {}))", ERRNOS + 4 * i as u32, args.join(" "));
    }
    w.push_str("  ))\n");
    w
}

#[test]
fn every_function_answers_a_hostile_guest_with_errnos() {
    let runner = Runner::builder().build().unwrap();
    let calls = FUNCTIONS.len() - 1;
    for (fd, v32, v64) in [
        (3, u32::MAX, u64::MAX),
        (3, 0xffff_fff0, i64::MAX as u64),
        (3, 65_530, 1 << 40),
        (u32::MAX, u32::MAX, 0),
        (0, 65_536, u64::MAX),
    ] {
        let fs = Arc::new(MemFs::new());
        let wasm = wat::parse_str(guest(fd, v32, v64)).unwrap();
        let guest = runner.load(&wasm).unwrap();
        let module = guest.module().expect("a module");
        let wasi = Wasi::builder(Box::new(HostPlatform::default()))
            .arg("hostile")
            .preopen("/", fs.clone(), Access::ReadWrite)
            .build()
            .unwrap();
        // The run must end normally: no trap, no exit.
        let mut store = wasmtime::Store::new(module.engine(), State { wasi });
        let mut linker = wasmtime::Linker::new(module.engine());
        packfs_host::p1::add_to_linker(&mut linker, |s: &mut State| &mut s.wasi).unwrap();
        let instance = linker.instantiate(&mut store, module).unwrap();
        instance.get_typed_func::<(), ()>(&mut store, "_start").unwrap().call(&mut store, ()).unwrap();
        let memory = instance.get_memory(&mut store, "memory").unwrap();
        let data = memory.data(&store);
        let names: Vec<&str> = FUNCTIONS.iter().map(|(n, _)| *n).filter(|n| *n != "proc_exit").collect();
        for (i, name) in names.iter().enumerate().take(calls) {
            let at = (ERRNOS + 4 * i as u32) as usize;
            let errno = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
            assert!(errno <= 76, "{name} ({fd}, {v32:#x}, {v64:#x}): {errno} is no errno");
            // Nothing was made from what the guest passed.
            assert!(fs.read_dir(fs.root(), None, 10).unwrap().is_empty(), "{name} changed the tree");
        }
        // A pointer outside memory is EFAULT where a call reads one first.
        if v32 >= 65_536 && fd == 3 {
            for name in ["fd_write", "fd_read", "path_open", "path_filestat_get", "args_get", "random_get"] {
                let i = names.iter().position(|n| *n == name).unwrap();
                let at = (ERRNOS + 4 * i as u32) as usize;
                let errno = u32::from_le_bytes(data[at..at + 4].try_into().unwrap());
                assert!(errno == 21 || errno == 28 || errno == 61, "{name} with pointers at {v32:#x}: errno {errno}");
            }
        }
    }
}

struct State {
    wasi: Wasi,
}
