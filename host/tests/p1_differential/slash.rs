//! Paths ending in `/`, against Linux.

use crate::{compare::*, encode::*, script::*, sides::*};
use packfs_core::MemFs;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use wasmtime::Module;

pub(crate) fn slash_path() -> impl Strategy<Value = &'static str> {
    prop_oneof![3 => pooled(SLASH_POOL), 2 => pooled(SLASH_PLAIN)]
}

/// Path calls on the root preopen (descriptor 3), most of their paths
/// ending in `/`. The plain ones between are those where PackFS, wasmtime
/// and Linux agree: not `path_filestat_set_times` changing neither time
/// (Linux does not look the path up, wasmtime does, PackFS walks to the
/// parent), nor a last component `..` (`rmdir("d/..")`: Linux
/// `ENOTEMPTY`, wasmtime and PackFS `EINVAL`).
pub(crate) fn slash_call() -> impl Strategy<Value = Call> {
    let p = slash_path;
    // No O_DIRECTORY with O_CREAT or O_TRUNC: preview1 refuses them
    // (`EINVAL`, as wasmtime), and Linux's answers to those are its own.
    let oflags = prop_oneof![Just(0u16), Just(1), Just(2), Just(5), Just(8)];
    let rights = prop_oneof![Just(2u64), Just(64), Just(66)];
    prop_oneof![
        3 => (any::<bool>(), p(), oflags, rights).prop_map(|(follow, path, oflags, rights)| Call::Open { dir: 3, follow, path, oflags, rights, fdflags: 0 }),
        2 => p().prop_map(|path| Call::Mkdir { fd: 3, path }),
        2 => p().prop_map(|path| Call::Rmdir { fd: 3, path }),
        2 => p().prop_map(|path| Call::Unlink { fd: 3, path }),
        3 => (any::<bool>(), p()).prop_map(|(follow, path)| Call::PathStat { fd: 3, follow, path }),
        2 => (p(), p()).prop_map(|(path, to)| Call::Rename { fd: 3, path, to_fd: 3, to }),
        1 => (p(), p()).prop_map(|(path, to)| Call::Link { fd: 3, path, to_fd: 3, to }),
        1 => (p(), p()).prop_map(|(target, path)| Call::Symlink { target, fd: 3, path }),
        1 => (p(), 0u32..12).prop_map(|(path, len)| Call::Readlink { fd: 3, path, len }),
        1 => (any::<bool>(), p(), 1u16..16, 0..TIMES.len()).prop_map(|(follow, path, fst, times)| Call::PathSetTimes { fd: 3, follow, path, fst, times }),
    ]
}

/// The WASI errno for a Linux one.
pub(crate) fn wasi_errno(e: rustix::io::Errno) -> u32 {
    use rustix::io::Errno as E;
    match e {
        E::ACCESS => 2,
        E::BUSY => 10,
        E::EXIST => 20,
        E::INVAL => 28,
        E::ISDIR => 31,
        E::LOOP => 32,
        E::NOENT => 44,
        E::NOTDIR => 54,
        E::NOTEMPTY => 55,
        E::PERM => 63,
        E::XDEV => 75,
        e => panic!("no WASI errno for {e:?}"),
    }
}

/// The WASI filetype of a Linux `st_mode`.
pub(crate) fn wasi_type(mode: u32) -> u8 {
    match rustix::fs::FileType::from_raw_mode(mode) {
        rustix::fs::FileType::Directory => 3,
        rustix::fs::FileType::RegularFile => 4,
        rustix::fs::FileType::Symlink => 7,
        t => panic!("no such file in the tree: {t:?}"),
    }
}

/// What PackFS answered to a call of [`slash_call`]: its errno, and what
/// [`linux`] answers too.
pub(crate) fn slash_answer(call: &Call, i: usize, m: &[u8]) -> (u32, String) {
    let errno = u32_at(m, ERRNOS + 4 * i as u32);
    if errno != 0 {
        return (errno, String::new());
    }
    let out = match *call {
        Call::Open { .. } => format!("type {}", m[scratch(i) as usize + 16]),
        Call::PathStat { .. } => {
            let at = outs(i);
            let ty = m[at as usize + 16];
            let size = if ty == 4 { u64_at(m, at + 32) } else { 0 };
            format!("type {ty} nlink {} size {size}", u64_at(m, at + 24))
        }
        Call::Readlink { .. } => {
            let n = u32_at(m, outs(i));
            format!("{n} {:?}", String::from_utf8_lossy(&m[(outs(i) + 8) as usize..(outs(i) + 8 + n) as usize]))
        }
        _ => String::new(),
    };
    (errno, out)
}

/// What Linux answers to `call` on directory `root`: the `*at` system call
/// preview1 stands for, with its arguments as PackFS reads them.
pub(crate) fn linux(call: &Call, root: &OwnedFd) -> (u32, String) {
    use rustix::fs::{self, AtFlags, Mode, OFlags, Timespec, Timestamps, UTIME_NOW, UTIME_OMIT};
    let nofollow = |follow: bool| if follow { AtFlags::empty() } else { AtFlags::SYMLINK_NOFOLLOW };
    let r: rustix::io::Result<String> = match *call {
        Call::Open { follow, path, oflags, rights, .. } => {
            // As PackFS and wasmtime read `rights`: O_CREAT and O_TRUNC
            // write, and a descriptor that does not write reads.
            let write = oflags & (1 | 8) != 0 || rights & 64 != 0;
            let read = rights & 2 != 0 || !write;
            let mut flags = match (read, write) {
                (true, true) => OFlags::RDWR,
                (false, true) => OFlags::WRONLY,
                _ => OFlags::RDONLY,
            } | OFlags::CLOEXEC;
            for (bit, flag) in [(1, OFlags::CREATE), (2, OFlags::DIRECTORY), (4, OFlags::EXCL), (8, OFlags::TRUNC)] {
                if oflags & bit != 0 {
                    flags |= flag;
                }
            }
            if !follow {
                flags |= OFlags::NOFOLLOW;
            }
            fs::openat(root, path, flags, Mode::from_raw_mode(0o644))
                .and_then(|fd| fs::fstat(&fd))
                .map(|st| format!("type {}", wasi_type(st.st_mode)))
        }
        Call::Mkdir { path, .. } => fs::mkdirat(root, path, Mode::from_raw_mode(0o755)).map(|()| String::new()),
        Call::Rmdir { path, .. } => fs::unlinkat(root, path, AtFlags::REMOVEDIR).map(|()| String::new()),
        Call::Unlink { path, .. } => fs::unlinkat(root, path, AtFlags::empty()).map(|()| String::new()),
        Call::PathStat { follow, path, .. } => fs::statat(root, path, nofollow(follow)).map(|st| {
            let ty = wasi_type(st.st_mode);
            let size = if ty == 4 { st.st_size as u64 } else { 0 };
            format!("type {ty} nlink {} size {size}", st.st_nlink)
        }),
        Call::Rename { path, to, .. } => fs::renameat(root, path, root, to).map(|()| String::new()),
        Call::Link { path, to, .. } => fs::linkat(root, path, root, to, AtFlags::empty()).map(|()| String::new()),
        Call::Symlink { target, path, .. } => fs::symlinkat(target, root, path).map(|()| String::new()),
        Call::Readlink { path, len, .. } => fs::readlinkat(root, path, Vec::new()).map(|target| {
            let bytes = &target.as_bytes()[..target.as_bytes().len().min(len as usize)];
            format!("{} {:?}", bytes.len(), String::from_utf8_lossy(bytes))
        }),
        Call::PathSetTimes { follow, path, fst, times, .. } => {
            // ATIM with ATIM_NOW, or MTIM with MTIM_NOW: preview1's own
            // refusal.
            if fst & 3 == 3 || fst & 12 == 12 {
                return (28, String::new());
            }
            let (atim, mtim) = TIMES[times];
            let spec = |set: bool, now: bool, t: u64| match (set, now) {
                (true, _) => Timespec { tv_sec: (t / 1_000_000_000) as i64, tv_nsec: (t % 1_000_000_000) as _ },
                (_, true) => Timespec { tv_sec: 0, tv_nsec: UTIME_NOW },
                _ => Timespec { tv_sec: 0, tv_nsec: UTIME_OMIT },
            };
            let ts = Timestamps {
                last_access: spec(fst & 1 != 0, fst & 2 != 0, atim),
                last_modification: spec(fst & 4 != 0, fst & 8 != 0, mtim),
            };
            fs::utimensat(root, path, &ts, nofollow(follow)).map(|()| String::new())
        }
        _ => unreachable!("not a call of slash_call: {call:?}"),
    };
    match r {
        Ok(out) => (0, out),
        Err(e) => (wasi_errno(e), String::new()),
    }
}

/// Runs `calls` (of [`slash_call`]) on PackFS and through Linux's system
/// calls, and compares.
pub(crate) fn against_linux(calls: &[Call]) -> Result<(), TestCaseError> {
    let calls: Vec<(Call, Bad)> = calls.iter().map(|c| (c.clone(), Bad::No)).collect();
    let module = Module::new(engine(), wat::parse_str(guest(&calls, Side::Linux)).unwrap()).unwrap();
    let fs = Arc::new(MemFs::new());
    seed(&fs);
    let ours = run_packfs(&module, fs.clone(), Arc::new(MemFs::new()));
    prop_assert_eq!(&ours.end, &End::Returned);
    let dir = tempfile::tempdir().unwrap();
    seed_dir(dir.path());
    let root = rustix::fs::open(
        dir.path(),
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    for (i, (call, _)) in calls.iter().enumerate() {
        let (a, b) = (slash_answer(call, i, &ours.memory), linux(call, &root));
        prop_assert_eq!(a, b, "call {} {:?}", i, call);
    }
    same_tree(&final_of(&*fs), &final_of_dir(dir.path()), "/")?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(64), ..ProptestConfig::default() })]

    /// The reference for paths ending in `/` is Linux (the module doc of
    /// `packfs_core::wasi::p1`: "Paths answer as Linux does where wasmtime
    /// (cap-std) does not").
    #[test]
    fn paths_ending_in_slash_answer_as_linux(calls in proptest::collection::vec(slash_call(), 1..30)) {
        survey(against_linux(&calls))?;
    }
}
