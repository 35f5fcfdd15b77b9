//! The two sides a guest runs on: PackFS (a `MemFs`) and wasmtime's
//! native preview1 on a temporary directory holding the same tree.

use crate::compare::*;
use packfs_core::wasi::p1::Wasi;
use packfs_core::{FileSystem, MemFs, OpenOptions};
use packfs_host::Access;
use packfs_host::p1::HostPlatform;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use wasmtime::{Engine, Instance, Linker, Module, Store};
use wasmtime_wasi::p1::WasiP1Ctx;
use wasmtime_wasi::{FsPerms, I32Exit, WasiCtx};

/// Symlinks of the seed that lead out of the preopen, named only by the
/// paths of [`LEAVING`].
pub(crate) const LEAVING_LINKS: &[(&str, &str)] =
    &[("up", ".."), ("esc", "../x"), ("abs", "/d"), ("chain", "up"), ("deep", "e/../..")];

/// The tree both sides start with, under `/`: `h` is a hard link to `d/f`;
/// the [`LEAVING_LINKS`] lead out.
pub(crate) fn seed(fs: &MemFs) {
    let d = fs.mkdir(fs.root(), "d", 0o755).unwrap();
    let f = fs.open(d, "f", &OpenOptions::create()).unwrap();
    fs.write_at(f, 0, b"hello").unwrap();
    fs.close(f);
    fs.link(f, fs.root(), "h").unwrap();
    let g = fs.open(fs.root(), "g", &OpenOptions::create()).unwrap();
    fs.close(g);
    fs.mkdir(fs.root(), "e", 0o755).unwrap();
    fs.symlink(fs.root(), "l", "g").unwrap();
    fs.symlink(fs.root(), "ld", "d").unwrap();
    fs.symlink(fs.root(), "loop", "loop").unwrap();
    fs.symlink(fs.root(), "dangling", "nowhere").unwrap();
    for (name, target) in LEAVING_LINKS {
        fs.symlink(fs.root(), name, target).unwrap();
    }
}

pub(crate) fn seed_dir(dir: &Path) {
    std::fs::create_dir(dir.join("d")).unwrap();
    std::fs::write(dir.join("d/f"), b"hello").unwrap();
    std::fs::hard_link(dir.join("d/f"), dir.join("h")).unwrap();
    std::fs::write(dir.join("g"), b"").unwrap();
    std::fs::create_dir(dir.join("e")).unwrap();
    std::os::unix::fs::symlink("g", dir.join("l")).unwrap();
    std::os::unix::fs::symlink("d", dir.join("ld")).unwrap();
    std::os::unix::fs::symlink("loop", dir.join("loop")).unwrap();
    std::os::unix::fs::symlink("nowhere", dir.join("dangling")).unwrap();
    for (name, target) in LEAVING_LINKS {
        std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
    }
}

pub(crate) fn engine() -> &'static Engine {
    static ENGINE: OnceLock<Engine> = OnceLock::new();
    ENGINE.get_or_init(Engine::default)
}

/// How `_start` ended.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum End {
    Returned,
    Exit(u32),
    Trap(String),
}

/// A run's memory, how it ended, and the tree at `diff.checkpoint`.
pub(crate) struct Ran {
    pub(crate) memory: Vec<u8>,
    pub(crate) end: End,
    pub(crate) checkpoint: Option<Final>,
}

pub(crate) fn ran<T: 'static>(store: &mut Store<T>, instance: &Instance, r: wasmtime::Result<()>, kept: &Kept) -> Ran {
    let memory = instance.get_memory(&mut *store, "memory").unwrap().data(&*store).to_vec();
    let end = match r {
        Ok(()) => End::Returned,
        Err(e) => match (packfs_host::p1::exit_status(&e), e.downcast_ref::<I32Exit>()) {
            (Some(code), _) => End::Exit(code),
            (None, Some(exit)) => End::Exit(exit.0 as u32),
            (None, None) => End::Trap(format!("{e:?}")),
        },
    };
    Ran { memory, end, checkpoint: kept.lock().unwrap().take() }
}

/// The tree `diff.checkpoint` kept.
pub(crate) type Kept = Arc<Mutex<Option<Final>>>;

/// The arguments and environment both sides give the guest.
pub(crate) const ARGS: &[&str] = &["guest", "a b", ""];
pub(crate) const ENV: &[(&str, &str)] = &[("K", "v"), ("EMPTY", "")];

pub(crate) fn run_packfs(module: &Module, fs: Arc<MemFs>, ro: Arc<MemFs>) -> Ran {
    struct S {
        wasi: Wasi,
    }
    let mut linker = Linker::<S>::new(engine());
    packfs_host::p1::add_to_linker(&mut linker, |s| &mut s.wasi).unwrap();
    let kept = Kept::default();
    let (k, tree) = (kept.clone(), fs.clone());
    linker.func_wrap("diff", "checkpoint", move || *k.lock().unwrap() = Some(final_of(&*tree))).unwrap();
    let mut b = Wasi::builder(Box::new(HostPlatform::default())).args(ARGS.iter().copied());
    for (k, v) in ENV {
        b = b.env(k, v);
    }
    let wasi = b.preopen("/", fs, Access::ReadWrite).preopen("/ro", ro, Access::ReadOnly).build().unwrap();
    let mut store = Store::new(engine(), S { wasi });
    let instance = linker.instantiate(&mut store, module).unwrap();
    let r = instance.get_typed_func::<(), ()>(&mut store, "_start").unwrap().call(&mut store, ());
    ran(&mut store, &instance, r, &kept)
}

pub(crate) fn run_native(module: &Module, root: &Path, ro: &Path) -> Ran {
    let mut linker = Linker::<WasiP1Ctx>::new(engine());
    wasmtime_wasi::p1::add_to_linker_sync(&mut linker, |s| s).unwrap();
    let kept = Kept::default();
    let (k, dir) = (kept.clone(), root.to_path_buf());
    linker.func_wrap("diff", "checkpoint", move || *k.lock().unwrap() = Some(final_of_dir(&dir))).unwrap();
    let mut b = WasiCtx::builder();
    b.args(ARGS).allow_blocking_current_thread(true);
    for (k, v) in ENV {
        b.env(k, v);
    }
    b.preopened_dir(root, "/", FsPerms::ReadWrite).unwrap();
    b.preopened_dir(ro, "/ro", FsPerms::ReadOnly).unwrap();
    let mut store = Store::new(engine(), b.build_p1());
    let instance = linker.instantiate(&mut store, module).unwrap();
    let r = instance.get_typed_func::<(), ()>(&mut store, "_start").unwrap().call(&mut store, ());
    if let Err(e) = &r
        && std::env::var_os("P1_DIFF_DEBUG").is_some()
    {
        eprintln!("native ended: {e:?}");
    }
    ran(&mut store, &instance, r, &kept)
}
