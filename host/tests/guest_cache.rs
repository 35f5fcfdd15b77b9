//! The compiled-guest cache (`packfs_host::load::GuestCache`): hits that
//! read neither the module nor the artifact, and one test per safety
//! property of the module doc of `packfs_host::load` — a damaged or
//! planted artifact is recompiled and never run, a directory others could
//! write to is refused, concurrent writers store once, eviction keeps the
//! bound. Every guest is checked to run as its own code (its exit status).

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, SystemTime};

use packfs_host::load::{CacheStatus, Guest, GuestCache, LoadError, Source};
use packfs_host::{Runner, Sandbox};
use wasmtime::{Config, Engine};

/// A p1 command exiting `code` (one digit, so that every such module has
/// the same size).
fn module(code: u8) -> Vec<u8> {
    assert!(code < 10);
    wat::parse_str(format!(
        r#"(module
          (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))
          (memory (export "memory") 1)
          (data (i32.const 16) "some data for a memory image")
          (func (export "_start") (call $exit (i32.const {code}))))"#
    ))
    .unwrap()
}

/// A guest and the runner that loaded it, on which it runs.
struct Loaded {
    runner: Runner,
    guest: Guest,
}

impl Loaded {
    /// Runs the p1 guest, giving its exit status.
    fn run(&self) -> i32 {
        assert_eq!(self.guest.kind(), packfs_host::load::Kind::P1, "not a module");
        self.runner.run(&self.guest, Sandbox::new()).unwrap()
    }
}

/// Loads `source` on a runner of `config` caching in `cache`, if any.
fn load<'a>(
    config: &Config,
    source: impl Into<Source<'a>>,
    cache: Option<&GuestCache>,
) -> Result<(Loaded, CacheStatus), LoadError> {
    let mut builder = Runner::builder().config(config.clone());
    if let Some(cache) = cache {
        builder = builder.cache(cache.clone());
    }
    let runner = builder.build().unwrap();
    let guest = runner.load(source)?;
    let status = guest.cache_status().clone();
    Ok((Loaded { runner, guest }, status))
}

/// Loads `wasm` through `cache`, runs it, and gives its status and exit.
fn load_run(config: &Config, cache: &GuestCache, wasm: &[u8]) -> (CacheStatus, i32) {
    let (guest, status) = load(config, wasm, Some(cache)).unwrap();
    (status, guest.run())
}

/// The cache's files whose names start with `prefix`, sorted.
fn named(cache: &GuestCache, prefix: &str) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(cache.dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            // The cache's own forms: PREFIX then hex digits (t-: PID-N).
            name.strip_prefix(prefix).is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-'))
        })
        .collect();
    found.sort();
    found
}

/// The one artifact in `cache`.
fn artifact(cache: &GuestCache) -> PathBuf {
    let found = named(cache, "a-");
    assert_eq!(found.len(), 1, "{found:?}");
    found.into_iter().next().unwrap()
}

fn new_cache(dir: &Path) -> GuestCache {
    GuestCache::new(dir.join("guests")).unwrap()
}

fn is(status: &CacheStatus, want: &str) -> bool {
    format!("{status:?}") == want
}

#[track_caller]
fn assert_status(status: CacheStatus, exit: i32, want: (&str, i32)) {
    assert!(is(&status, want.0) && exit == want.1, "got {status:?} exiting {exit}, want {want:?}");
}

/// Writes into `path` in place, as a process of this user could.
fn write_in_place(path: &Path, at: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let mode = fs::metadata(path).unwrap().permissions();
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).unwrap();
    fs::OpenOptions::new().write(true).open(path).unwrap().write_all_at(bytes, at).unwrap();
    fs::set_permissions(path, mode).unwrap();
}

#[test]
fn stores_then_hits_and_each_engine_has_its_own_artifact() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path());
    assert_status(load_run(&config, &cache, &module(7)).0, 7, ("Stored", 7));
    let (status, exit) = load_run(&config, &cache, &module(7));
    assert_status(status, exit, ("Hit", 7));
    let art = artifact(&cache);
    assert_eq!(fs::metadata(&art).unwrap().mode() & 0o7777, 0o400);
    assert_eq!(fs::metadata(cache.dir()).unwrap().mode() & 0o777, 0o700);
    // Exactly wasmtime's bytes: it knows them for its own.
    assert_eq!(Engine::detect_precompiled_file(&art).unwrap(), Some(wasmtime::Precompiled::Module));

    let mut other = wasmtime::Config::new();
    other.cranelift_opt_level(wasmtime::OptLevel::None);
    let (status, exit) = load_run(&other, &cache, &module(7));
    assert_status(status, exit, ("Stored", 7));
    assert_eq!(named(&cache, "a-").len(), 2);
    assert_eq!(named(&cache, "p-").len(), 2);
    assert!(named(&cache, "t-").is_empty());
}

#[test]
fn a_component_is_stored_and_hit() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path());
    let wasm = wat::parse_str("(component (core module (func (export \"f\"))))").unwrap();
    let (guest, status) = load(&config, &wasm, Some(&cache)).unwrap();
    assert!(is(&status, "Stored") && guest.guest.kind() == packfs_host::load::Kind::P2, "{status:?}");
    let (guest, status) = load(&config, &wasm, Some(&cache)).unwrap();
    assert!(is(&status, "Hit") && guest.guest.kind() == packfs_host::load::Kind::P2, "{status:?}");
    assert_eq!(Engine::detect_precompiled_file(artifact(&cache)).unwrap(), Some(wasmtime::Precompiled::Component));
}

/// A file seen before (its identity recorded) is not read again: the
/// entry gives its content's digest. The identity of a file changed within
/// the racy window is not recorded.
#[test]
fn load_file_hits_by_the_file_s_identity() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path()).with_racy_window(Duration::from_millis(100));
    let path = dir.path().join("guest.wasm");
    fs::write(&path, module(7)).unwrap();
    let (guest, status) = load(&config, &path, Some(&cache)).unwrap();
    assert!(is(&status, "Stored") && guest.run() == 7, "{status:?}");
    assert!(named(&cache, "f-").is_empty(), "a file written just now is not recorded");

    std::thread::sleep(Duration::from_millis(200));
    let (guest, status) = load(&config, &path, Some(&cache)).unwrap();
    assert!(is(&status, "Hit") && guest.run() == 7, "{status:?}");
    let entry = named(&cache, "f-");
    assert_eq!(entry.len(), 1);
    // Now from the entry, without reading the module.
    let (guest, status) = load(&config, &path, Some(&cache)).unwrap();
    assert!(is(&status, "Hit") && guest.run() == 7, "{status:?}");

    // A pipe is read every time, its identity never recorded.
    let fifo = dir.path().join("fifo.wasm");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    std::thread::sleep(Duration::from_millis(200));
    for code in [7, 8] {
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || fs::write(fifo, module(code)).unwrap())
        };
        let (guest, _) = load(&config, &fifo, Some(&cache)).unwrap();
        writer.join().unwrap();
        assert_eq!(guest.run(), i32::from(code));
    }
    assert_eq!(named(&cache, "f-").len(), 1);

    // Without a cache, and on a missing file.
    let (guest, status) = load(&config, &path, None).unwrap();
    assert!(is(&status, "Off") && guest.run() == 7);
    let missing = load(&config, &dir.path().join("nope.wasm"), Some(&cache));
    assert!(matches!(missing, Err(LoadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound));
}

/// `cp` over a module, or a build writing the same size, with the old
/// mtime put back (`touch -d`): the ctime still changes, and the new
/// content is what runs.
#[test]
fn a_module_rewritten_with_its_old_mtime_is_recompiled() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path()).with_racy_window(Duration::from_millis(100));
    let path = dir.path().join("guest.wasm");
    fs::write(&path, module(7)).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (guest, status) = load(&config, &path, Some(&cache)).unwrap();
    assert!(is(&status, "Stored") && guest.run() == 7, "{status:?}");
    assert_eq!(named(&cache, "f-").len(), 1, "the identity is recorded");

    let before = fs::metadata(&path).unwrap();
    let (seven, eight) = (module(7), module(8));
    assert_eq!(seven.len(), eight.len());
    let at = seven.iter().zip(&eight).position(|(a, b)| a != b).unwrap() as u64;
    let file = fs::File::options().write(true).open(&path).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&file, &eight[at as usize..=at as usize], at).unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
    drop(file);
    let after = fs::metadata(&path).unwrap();
    assert_eq!(
        (after.ino(), after.len(), after.modified().unwrap()),
        (before.ino(), before.len(), before.modified().unwrap())
    );

    let (guest, status) = load(&config, &path, Some(&cache)).unwrap();
    assert!(is(&status, "Stored") && guest.run() == 8, "{status:?}");
}

/// A byte flipped in place after the racy window: the ctime no longer
/// matches the pin.
#[test]
fn a_byte_flipped_in_an_artifact_is_never_run() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path()).with_racy_window(Duration::ZERO);
    let wasm = module(7);
    assert!(is(&load_run(&config, &cache, &wasm).0, "Stored"));
    // Past the filesystem's timestamp tick.
    std::thread::sleep(Duration::from_millis(50));
    let art = artifact(&cache);
    let len = fs::metadata(&art).unwrap().len();
    let byte = fs::read(&art).unwrap()[len as usize / 2];
    write_in_place(&art, len / 2, &[byte ^ 0x55]);
    let (status, exit) = load_run(&config, &cache, &wasm);
    assert_status(status, exit, ("Replaced", 7));
    let (status, exit) = load_run(&config, &cache, &wasm);
    assert_status(status, exit, ("Hit", 7));
}

/// The same within the racy window, where the ctime may not have moved:
/// such a hit hashes the artifact.
#[test]
fn a_byte_flipped_just_after_the_store_is_never_run() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path());
    let wasm = module(7);
    assert!(is(&load_run(&config, &cache, &wasm).0, "Stored"));
    let art = artifact(&cache);
    let len = fs::metadata(&art).unwrap().len();
    // Every byte, a few, through the whole file: code, data, metadata.
    for at in [len / 3, len / 2, len - 1] {
        let byte = fs::read(&art).unwrap()[at as usize];
        write_in_place(&art, at, &[!byte]);
        let (status, exit) = load_run(&config, &cache, &wasm);
        assert_status(status, exit, ("Replaced", 7));
    }
}

#[test]
fn a_truncated_artifact_is_never_run() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path());
    let wasm = module(7);
    assert!(is(&load_run(&config, &cache, &wasm).0, "Stored"));
    for len in [1000, 0] {
        let art = artifact(&cache);
        fs::set_permissions(&art, fs::Permissions::from_mode(0o600)).unwrap();
        fs::OpenOptions::new().write(true).open(&art).unwrap().set_len(len).unwrap();
        fs::set_permissions(&art, fs::Permissions::from_mode(0o400)).unwrap();
        let (status, exit) = load_run(&config, &cache, &wasm);
        assert_status(status, exit, ("Replaced", 7));
    }
}

/// Another module's artifact renamed over this one's (another inode), with
/// or without its pin: A still runs as A.
#[test]
fn another_module_s_artifact_renamed_over_is_never_run() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path());
    let (seven, eight) = (module(7), module(8));
    assert!(is(&load_run(&config, &cache, &seven).0, "Stored"));
    let a = artifact(&cache);
    let pin_a = named(&cache, "p-").pop().unwrap();
    assert!(is(&load_run(&config, &cache, &eight).0, "Stored"));
    let b = named(&cache, "a-").into_iter().find(|p| *p != a).unwrap();
    let pin_b = named(&cache, "p-").into_iter().find(|p| *p != pin_a).unwrap();

    fs::rename(&b, &a).unwrap();
    let (status, exit) = load_run(&config, &cache, &seven);
    assert_status(status, exit, ("Replaced", 7));

    // Now the artifact and its pin together: the pin names its own key.
    // (B's pin was left without its artifact: B is replaced.)
    assert!(is(&load_run(&config, &cache, &eight).0, "Replaced"));
    let b = named(&cache, "a-").into_iter().find(|p| *p != a).unwrap();
    fs::rename(&b, &a).unwrap();
    fs::rename(&pin_b, &pin_a).unwrap();
    let (status, exit) = load_run(&config, &cache, &seven);
    assert_status(status, exit, ("Replaced", 7));
}

/// A file planted under an artifact's name has no pin (or the pin of
/// another file): it is never run. Nor is a symlink followed, or a FIFO
/// waited on.
#[test]
fn an_artifact_without_its_pin_is_never_run() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path());
    let (seven, eight) = (module(7), module(8));
    assert!(is(&load_run(&config, &cache, &eight).0, "Stored"));
    let compiled_eight = fs::read(artifact(&cache)).unwrap();
    assert!(is(&load_run(&config, &cache, &seven).0, "Stored"));
    let a = named(&cache, "a-").into_iter().find(|p| fs::read(p).unwrap() != compiled_eight).unwrap();
    let pin = a.with_file_name(a.file_name().unwrap().to_str().unwrap().replacen("a-", "p-", 1));

    // The pin removed: even its own artifact is not run.
    fs::remove_file(&pin).unwrap();
    let (status, exit) = load_run(&config, &cache, &seven);
    assert_status(status, exit, ("Replaced", 7));

    // A planted file with wasmtime's own bytes (of another module), 0400.
    fs::remove_file(&a).unwrap();
    fs::write(&a, &compiled_eight).unwrap();
    fs::set_permissions(&a, fs::Permissions::from_mode(0o400)).unwrap();
    let (status, exit) = load_run(&config, &cache, &seven);
    assert_status(status, exit, ("Replaced", 7));

    // A symlink to another artifact: not followed, its target left alone.
    let target = dir.path().join("elsewhere");
    fs::write(&target, &compiled_eight).unwrap();
    fs::remove_file(&a).unwrap();
    std::os::unix::fs::symlink(&target, &a).unwrap();
    let (status, exit) = load_run(&config, &cache, &seven);
    assert_status(status, exit, ("Replaced", 7));
    assert_eq!(fs::read(&target).unwrap(), compiled_eight);

    // A FIFO: the load neither hangs nor runs it.
    fs::remove_file(&a).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&a).status().unwrap();
    assert!(made.success());
    let (status, exit) = load_run(&config, &cache, &seven);
    assert_status(status, exit, ("Replaced", 7));
    assert!(fs::metadata(&a).unwrap().is_file());
}

/// Rewrites the pin of `cache`'s one artifact to the artifact's ctime
/// now, so that a change that moved it (chmod, chown, link) is the only
/// thing wrong.
fn repin(cache: &GuestCache) {
    let md = fs::metadata(artifact(cache)).unwrap();
    let pin = named(cache, "p-").pop().unwrap();
    let text = fs::read_to_string(&pin).unwrap();
    // Fields: magic key kind dev ino size ctime pinned boot sha256.
    let mut words: Vec<String> = text.trim_end().split(' ').map(str::to_owned).collect();
    words[6] = (i128::from(md.ctime()) * 1_000_000_000 + i128::from(md.ctime_nsec())).to_string();
    fs::remove_file(&pin).unwrap();
    fs::write(&pin, words.join(" ") + "\n").unwrap();
}

/// An artifact, or the directory, another user could have written is not
/// taken. Only root can give a file or directory to another user; any
/// user can make an artifact others may write to (its mode) or reach by
/// another name (a second link), and can meet a directory of another
/// user's (root's `/`). This test returned at once unless run as root,
/// so as a normal user it checked nothing.
#[test]
fn another_user_s_artifact_or_directory_is_refused() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path());
    let wasm = module(7);
    assert!(is(&load_run(&config, &cache, &wasm).0, "Stored"));

    // The pin rewritten after a chmod that changes nothing else is
    // trusted: what follows is refused for what it changes, not for that.
    let chmod = |mode: u32| fs::set_permissions(artifact(&cache), fs::Permissions::from_mode(mode)).unwrap();
    chmod(0o400);
    repin(&cache);
    let (status, exit) = load_run(&config, &cache, &wasm);
    assert_status(status, exit, ("Hit", 7));
    // Writable by its group or by others: not the file the cache wrote
    // (0400), and another user's process could change it.
    for mode in [0o666, 0o620, 0o602, 0o420, 0o402] {
        chmod(mode);
        repin(&cache);
        let (status, exit) = load_run(&config, &cache, &wasm);
        assert_status(status, exit, ("Replaced", 7));
        assert_eq!(fs::metadata(artifact(&cache)).unwrap().mode() & 0o7777, 0o400, "{mode:o} replaced by 0400");
    }
    // A second name, where another could write to it.
    let other = dir.path().join("other-name");
    fs::hard_link(artifact(&cache), &other).unwrap();
    repin(&cache);
    let (status, exit) = load_run(&config, &cache, &wasm);
    assert_status(status, exit, ("Replaced", 7));
    assert_eq!(fs::metadata(artifact(&cache)).unwrap().nlink(), 1);

    let euid = rustix::process::geteuid();
    if !euid.is_root() {
        // A directory of another user's that no one else may write to:
        // refused for its owner alone.
        let theirs = ["/", "/usr", "/etc"]
            .into_iter()
            .find(|d| fs::metadata(d).is_ok_and(|md| md.uid() != euid.as_raw() && md.mode() & 0o022 == 0))
            .expect("a directory of another user's, not writable by others");
        assert_eq!(GuestCache::new(theirs).unwrap_err().kind(), std::io::ErrorKind::PermissionDenied, "{theirs}");
        return;
    }

    let nobody = Some(rustix::fs::Uid::from_raw(65534));
    // chown keeps the inode, but moves the ctime: the pin is rewritten to
    // match, so that only the owner is wrong.
    rustix::fs::chown(artifact(&cache), nobody, None).unwrap();
    repin(&cache);
    let (status, exit) = load_run(&config, &cache, &wasm);
    assert_status(status, exit, ("Replaced", 7));
    assert_eq!(fs::metadata(artifact(&cache)).unwrap().uid(), 0);

    let theirs = dir.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    rustix::fs::chown(&theirs, nobody, None).unwrap();
    assert_eq!(GuestCache::new(&theirs).unwrap_err().kind(), std::io::ErrorKind::PermissionDenied);
}

/// A pin forged to match a damaged artifact, as if written in another
/// boot: the first load after a reboot hashes the artifact. An honest pin
/// of another boot is re-pinned to this one.
#[test]
fn a_pin_of_another_boot_is_checked_by_hash() {
    if !Path::new("/proc/sys/kernel/random/boot_id").exists() {
        return;
    }
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path()).with_racy_window(Duration::ZERO);
    let wasm = module(7);
    assert!(is(&load_run(&config, &cache, &wasm).0, "Stored"));
    let pin = named(&cache, "p-").pop().unwrap();
    let art = artifact(&cache);
    // Fields: magic key kind dev ino size ctime pinned boot sha256.
    let rewrite_pin = |boot: &str| {
        let md = fs::metadata(&art).unwrap();
        let text = fs::read_to_string(&pin).unwrap();
        let mut words: Vec<String> = text.trim_end().split(' ').map(str::to_owned).collect();
        words[3] = md.dev().to_string();
        words[4] = md.ino().to_string();
        words[5] = md.len().to_string();
        words[6] = (i128::from(md.ctime()) * 1_000_000_000 + i128::from(md.ctime_nsec())).to_string();
        words[8] = boot.to_owned();
        fs::remove_file(&pin).unwrap();
        fs::write(&pin, words.join(" ") + "\n").unwrap();
        fs::set_permissions(&pin, fs::Permissions::from_mode(0o400)).unwrap();
    };
    let boot_of = |pin: &Path| fs::read_to_string(pin).unwrap().split(' ').nth(8).unwrap().to_owned();
    let this_boot = boot_of(&pin);

    rewrite_pin("0000-another-boot");
    let (status, exit) = load_run(&config, &cache, &wasm);
    assert_status(status, exit, ("Hit", 7));
    assert_eq!(boot_of(&pin), this_boot, "re-pinned");

    std::thread::sleep(Duration::from_millis(50));
    let len = fs::metadata(&art).unwrap().len();
    write_in_place(&art, len / 2, &[0xff, 0x00, 0xff]);
    rewrite_pin("0000-another-boot");
    let (status, exit) = load_run(&config, &cache, &wasm);
    assert_status(status, exit, ("Replaced", 7));
}

#[test]
fn a_directory_others_can_write_to_or_a_symlink_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    fs::create_dir(&shared).unwrap();
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(GuestCache::new(&shared).unwrap_err().kind(), std::io::ErrorKind::PermissionDenied);
    fs::set_permissions(&shared, fs::Permissions::from_mode(0o775)).unwrap();
    assert_eq!(GuestCache::new(&shared).unwrap_err().kind(), std::io::ErrorKind::PermissionDenied);

    // A symlink to a private directory is not taken either: what it
    // points to can change.
    let private = dir.path().join("private");
    fs::create_dir(&private).unwrap();
    fs::set_permissions(&private, fs::Permissions::from_mode(0o755)).unwrap();
    assert!(GuestCache::new(&private).is_ok(), "others may read, not write");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&private, &link).unwrap();
    assert_eq!(GuestCache::new(&link).unwrap_err().kind(), std::io::ErrorKind::PermissionDenied);
}

/// Eight threads on two caches over one directory load one module at
/// once: one compiles and stores, the others wait for it and hit.
#[test]
fn concurrent_writers_store_once() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let caches = [new_cache(dir.path()), new_cache(dir.path())];
    let wasm = module(7);
    let barrier = Arc::new(Barrier::new(8));
    let statuses: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..8)
            .map(|i| {
                let (cache, barrier, config, wasm) = (&caches[i % 2], barrier.clone(), &config, &wasm);
                s.spawn(move || {
                    barrier.wait();
                    let (status, exit) = load_run(config, cache, wasm);
                    assert_eq!(exit, 7);
                    format!("{status:?}")
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(statuses.iter().filter(|s| *s == "Stored").count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| *s == "Hit").count(), 7, "{statuses:?}");
    assert_eq!(named(&caches[0], "a-").len(), 1);
    assert_eq!(named(&caches[0], "p-").len(), 1);
    assert!(named(&caches[0], "t-").is_empty());
}

/// Past its limit the cache drops the least recently used; a guest whose
/// artifact went keeps running; files not of the cache's forms stay.
#[test]
fn eviction_keeps_the_cache_within_its_limit() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let cache = new_cache(dir.path());
    let foreign = ["notes.txt", "0123abcd.cwasm", "a-not-a-key"].map(|n| cache.dir().join(n));
    for f in &foreign {
        fs::write(f, vec![0; 4096]).unwrap();
    }
    let (seven, _) = load(&config, &module(7), Some(&cache)).unwrap();
    let one = fs::metadata(artifact(&cache)).unwrap().len();
    // The first is used less recently than the second.
    let pin = named(&cache, "p-").pop().unwrap();
    fs::File::open(&pin).unwrap().set_modified(SystemTime::now() - Duration::from_secs(60)).unwrap();

    let cache = cache.with_limit(one * 3 / 2 + 4096);
    let (eight, status) = load(&config, &module(8), Some(&cache)).unwrap();
    assert!(is(&status, "Stored"));
    let kept = named(&cache, "a-");
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert!(!pin.exists(), "the older key went, pin and all");
    let own: u64 = fs::read_dir(cache.dir())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| ["a-", "p-", "l-", "f-", "t-"].iter().any(|p| e.file_name().to_str().unwrap().starts_with(p)))
        .filter(|e| !foreign.contains(&e.path()))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(own <= cache.limit(), "{own} > {}", cache.limit());
    assert_eq!(seven.run(), 7, "an evicted guest still runs");

    // With no room at all, every artifact goes, the one just stored too.
    let cache = cache.with_limit(0);
    let (nine, status) = load(&config, &module(9), Some(&cache)).unwrap();
    assert!(is(&status, "Stored"));
    assert!(named(&cache, "a-").iter().all(|p| foreign.contains(p)));
    assert!(named(&cache, "p-").is_empty());
    assert_eq!((eight.run(), nine.run()), (8, 9));
    for f in &foreign {
        assert!(f.exists(), "{} was removed", f.display());
    }

    // A temporary file a dead process left an hour ago goes; one being
    // written stays.
    let (stale, fresh) = (cache.dir().join("t-1-1"), cache.dir().join("t-2-2"));
    for t in [&stale, &fresh] {
        fs::write(t, b"half an artifact").unwrap();
    }
    fs::File::open(&stale).unwrap().set_modified(SystemTime::now() - Duration::from_secs(7200)).unwrap();
    load(&config, &module(1), Some(&cache)).unwrap();
    assert!(!stale.exists() && fresh.exists());
}

/// One thread loads a guest over and over while another stores others
/// with no room at all, evicting everything as it goes: every load runs
/// the right guest, whatever it finds half gone.
#[test]
fn loads_run_while_an_evictor_empties_the_cache() {
    let (config, dir) = (Config::new(), tempfile::tempdir().unwrap());
    let reader = new_cache(dir.path());
    let evictor = new_cache(dir.path()).with_limit(0);
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            for code in (0..30).map(|i| 1 + i % 6) {
                load(&config, &module(code), Some(&evictor)).unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let wasm = module(7);
        let mut loads = 0;
        while !done.load(std::sync::atomic::Ordering::Relaxed) || loads < 10 {
            let (status, exit) = load_run(&config, &reader, &wasm);
            assert_eq!(exit, 7, "{status:?}");
            assert!(!is(&status, "Off") && !format!("{status:?}").starts_with("StoreFailed"), "{status:?}");
            loads += 1;
        }
    });
}
