//! Issue 23, item 4: the host-wide cache deleted files that were not its
//! own. `packfs --cache DIR --cache-size 64k cat URL big.bin`, run on a
//! directory that held a user's files, deleted `photos/2019/img1.jpg`,
//! `projects/app/main.c` and `main.lock` ("4 evicted"): eviction took every
//! `DIR/*/*/*` for an entry, entered fan directories that were symlinks,
//! and deleted `name.lock` beside each victim.
//!
//! Now the cache takes only a root it made (empty, or holding its
//! `CACHEDIR.TAG`), touches only names of the exact form it makes, never
//! follows a symlink below the root (the root's own link is followed once,
//! at open), and skips a directory that is another user's or writable by
//! others. Each test plants what the cache must leave alone, runs with a
//! size limit small enough that every store evicts, and checks that every
//! planted file is intact and nothing outside the root was read or removed.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use common::*;
use packfs_remote::{Cache, CacheStats, RemoteOptions};
use packfs_testnet::FileServer;
use sha2::{Digest, Sha256};

/// A limit that makes every store evict.
const TINY: u64 = 64 << 10;

/// A pack served over HTTP, and its files.
struct Served {
    _dir: tempfile::TempDir,
    _server: FileServer,
    url: String,
    files: Vec<(String, Vec<u8>)>,
}

/// A pack with a digest table (its extents cached in the shared
/// `blake3/`), or without (in its origin's directory).
fn served(digests: bool) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let (fs, files) = tree(23, &[]);
    fs::write(dir.path().join("p.pack"), pack_with(&fs, true, digests)).unwrap();
    let server = FileServer::start(dir.path());
    let url = format!("{}/p.pack", server.url());
    Served { _dir: dir, _server: server, url, files }
}

impl Served {
    /// Opens the pack through `cache` and reads the files whose paths
    /// start with `prefix`; returns what the cache did.
    fn read(&self, cache: Cache, prefix: &str) -> CacheStats {
        self.read_with(Arc::new(cache), prefix)
    }

    fn read_with(&self, cache: Arc<Cache>, prefix: &str) -> CacheStats {
        let opts = RemoteOptions { cache: Some(Arc::clone(&cache)), ..options(None) };
        let p = open(&self.url, &opts);
        for (path, want) in self.files.iter().filter(|(p, _)| p.starts_with(prefix)) {
            assert!(read(&p, path, 65536).unwrap() == *want, "{path}");
        }
        cache.stats()
    }
}

/// A time long past: planted files are the least recently used of all,
/// so an eviction that took them for entries would take them first.
fn long_ago() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000)
}

/// Writes each file (its path as its bytes), long ago.
fn plant(root: &Path, files: &[&str]) {
    for f in files {
        let path = root.join(f);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, format!("the user's {f}\n")).unwrap();
        fs::File::options().write(true).open(&path).unwrap().set_modified(long_ago()).unwrap();
    }
}

/// Every name below `dir`, not following symlinks: a file's SHA-256, a
/// symlink's target, a directory's mode. (A name that goes while it is
/// read, as a lock file does, is left out.)
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
        for e in fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let Ok(meta) = fs::symlink_metadata(&path) else { continue };
            let what = if meta.is_symlink() {
                format!("-> {}", fs::read_link(&path).unwrap().display())
            } else if meta.is_dir() {
                walk(root, &path, out);
                format!("dir {:o}", meta.permissions().mode())
            } else {
                let Ok(bytes) = fs::read(&path) else { continue };
                format!("{:x}", Sha256::digest(bytes))
            };
            out.insert(path.strip_prefix(root).unwrap().to_owned(), what);
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The planted files' hashes.
fn hashes(root: &Path, files: &[&str]) -> Vec<(String, String)> {
    let hash =
        |f: &str| fs::read(root.join(f)).map_or_else(|e| format!("gone: {e}"), |b| format!("{:x}", Sha256::digest(b)));
    files.iter().map(|f| (f.to_string(), hash(f))).collect()
}

/// The cache's entry directories — origins' (32 hex digits) and the shared
/// `blake3` — and, in each, its fan directories (2), as the cache made them.
fn origins(root: &Path) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    for e in fs::read_dir(root).unwrap().flatten() {
        let name = e.file_name().into_string().unwrap();
        if (name.len() == 32 || name == "blake3") && e.file_type().unwrap().is_dir() {
            let mut fans: Vec<String> = fs::read_dir(e.path())
                .unwrap()
                .flatten()
                .filter(|f| f.file_type().unwrap().is_dir())
                .map(|f| f.file_name().into_string().unwrap())
                .collect();
            fans.sort();
            out.push((name, fans));
        }
    }
    out
}

/// A user's files: nested, named like lock files, and in directories
/// shaped like the cache's but named otherwise (uppercase, too long, a
/// stray character), holding names shaped like entries.
const USERS: &[&str] = &[
    "photos/2019/img1.jpg",
    "projects/app/main.c",
    "projects/app/main.lock",
    "main.lock",
    "notes/ab/00000000000000ab-5",
    "0123456789ABCDEF0123456789ABCDEF/ab/ab00000000000000-5",
    "0123456789abcdef0123456789abcdef0/ab/ab00000000000000-5",
    "0123456789abcdef0123456789abcdeg/ab/ab00000000000000-5",
    "BLAKE3/ab/ab00000000000000000000000000000000000000000000000000000000000000-5",
    "blake3x/ab/ab00000000000000000000000000000000000000000000000000000000000000-5",
];

#[test]
fn a_root_holding_a_users_files_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    plant(dir.path(), USERS);
    let before = snapshot(dir.path());
    let err = Cache::open(dir.path(), TINY).err().expect("a directory of someone's files is no cache");
    let said = err.to_string();
    assert!(said.contains(&dir.path().display().to_string()) && said.contains("CACHEDIR.TAG"), "{said}");
    assert_eq!(snapshot(dir.path()), before, "nothing made, nothing removed");

    // An empty directory, or a new one, is taken and tagged; a tagged one
    // is taken again, full.
    let s = served(true);
    for root in [dir.path().join("empty"), dir.path().join("new/cache")] {
        if root.ends_with("empty") {
            fs::create_dir(&root).unwrap();
        }
        let stats = s.read(Cache::open(&root, 1 << 30).unwrap(), "mid0");
        assert!(stats.stored > 0, "{stats:?}");
        let tag = fs::read_to_string(root.join("CACHEDIR.TAG")).unwrap();
        assert!(tag.starts_with("Signature: 8a477f597d28d172789f06886806bc55\n"), "{tag}");
        assert!(s.read(Cache::open(&root, 1 << 30).unwrap(), "mid0").hits > 0);
    }

    // Another program's cache is not this one's.
    let cargo = dir.path().join("cargo");
    plant(&cargo, &["CACHEDIR.TAG"]);
    fs::write(cargo.join("CACHEDIR.TAG"), "Signature: 8a477f597d28d172789f06886806bc55\n# cargo\n").unwrap();
    let said = Cache::open(&cargo, TINY).err().expect("another program's cache").to_string();
    assert!(said.contains("CACHEDIR.TAG"), "{said}");

    // A root others may write to is refused: they could plant entries.
    let open = dir.path().join("open");
    fs::create_dir(&open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o777)).unwrap();
    let said = Cache::open(&open, TINY).err().expect("a root writable by others").to_string();
    assert!(said.contains("writable"), "{said}");
}

#[test]
fn eviction_takes_only_the_caches_own_entries() {
    for digests in [true, false] {
        eviction_takes_only_the_caches_own_entries_of(digests);
    }
}

fn eviction_takes_only_the_caches_own_entries_of(digests: bool) {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let s = served(digests);
    s.read(Cache::open(root, 1 << 30).unwrap(), "big");
    let [(origin, fans)] = &origins(root)[..] else { panic!("one origin: {:?}", origins(root)) };
    assert_eq!(origin == "blake3", digests, "a pack with digests is cached in the shared directory");
    let fan = &fans[0];
    let zeros = "0".repeat(62);
    // In a real fan directory: names that are not entries of that fan.
    let near = |name: &str| format!("{origin}/{fan}/{name}");
    let wrong_fan = if fan == "00" { "01" } else { "00" };
    let mut planted: Vec<String> = USERS.iter().map(|f| f.to_string()).collect();
    planted.extend([
        "tmp/draft.txt".to_owned(),
        format!("{origin}/notes.txt"),
        format!("{origin}/AB/ab00000000000000-5"),
        format!("{origin}/abc/abc0000000000000-5"),
        near("main.lock"),
        near("notes.txt"),
        near(&format!("{fan}00000000000000-5.bak")),
        near(&format!("{fan}00000000000000-05")),
        near(&format!("{fan}00000000000000-5.LOCK")),
        near(&format!("{fan}0000000000000A-5")),
        near(&format!("{wrong_fan}00000000000000-5")),
        near(&format!("{fan}11111111111111-6/inside")),
        // Shaped as a digest's entry, nearly.
        near(&format!("{fan}{zeros}-05")),
        near(&format!("{fan}{}-5", zeros.to_uppercase().replace('0', "A"))),
        near(&format!("{fan}{zeros}0-5")),
        near(&format!("{wrong_fan}{zeros}-5")),
        near(&format!("{fan}{zeros}-5.bak")),
    ]);
    let planted: Vec<&str> = planted.iter().map(String::as_str).collect();
    plant(root, &planted);
    let before = hashes(root, &planted);

    // Files the first run did not read: stores, and each evicts.
    let stats = s.read(Cache::open(root, TINY).unwrap(), "mid");
    assert!(stats.evicted > 0, "{stats:?}");
    assert_eq!(hashes(root, &planted), before, "every planted file intact");
}

#[test]
fn symlinks_below_the_root_are_never_followed() {
    let (root, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (root, outside) = (root.path(), outside.path());
    let s = served(true);
    s.read(Cache::open(root, 1 << 30).unwrap(), "big");
    let [(origin, fans)] = &origins(root)[..] else { panic!("one origin") };
    assert!(fans.len() > 4);
    // Every other fan directory moves out, damaged and old, and a link to
    // it takes its place: reading an entry there would find it damaged,
    // evicting would take it first.
    for fan in fans.iter().step_by(2) {
        let away = outside.join(fan);
        fs::rename(root.join(origin).join(fan), &away).unwrap();
        for e in fs::read_dir(&away).unwrap().flatten() {
            let mut bytes = fs::read(e.path()).unwrap();
            if let Some(b) = bytes.first_mut() {
                *b ^= 1;
            }
            fs::write(e.path(), bytes).unwrap();
            fs::File::options().write(true).open(e.path()).unwrap().set_modified(long_ago()).unwrap();
        }
        symlink(&away, root.join(origin).join(fan)).unwrap();
    }
    // An origin directory that is a link, to entries of the exact form.
    plant(outside, &["elsewhere/ab/ab00000000000000-5", "elsewhere/ab/ab00000000000000-5.lock"]);
    symlink(outside.join("elsewhere"), root.join("ffffffffffffffffffffffffffffffff")).unwrap();
    let before = snapshot(outside);
    let links = snapshot(root).into_iter().filter(|(_, v)| v.starts_with("->")).collect::<Vec<_>>();

    let stats = s.read(Cache::open(root, TINY).unwrap(), "");
    assert!(stats.evicted > 0, "{stats:?}");
    assert_eq!(stats.damaged, 0, "nothing outside the root was read: {stats:?}");
    assert_eq!(snapshot(outside), before, "nothing outside the root was made or removed");
    let after = snapshot(root);
    for (link, target) in links {
        assert_eq!(after.get(&link), Some(&target), "{} left as it was", link.display());
    }
}

#[test]
fn a_tmp_directory_that_is_a_symlink_is_never_entered() {
    let (root, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (root, outside) = (root.path(), outside.path());
    let s = served(true);
    s.read(Cache::open(root, 1 << 30).unwrap(), "big");
    // Old files, in the shape of the temporary files a dead process leaves.
    plant(outside, &["put-0123456789abcdef", "putABCDEF", "draft.txt"]);
    fs::remove_dir(root.join("tmp")).unwrap();
    symlink(outside, root.join("tmp")).unwrap();
    let before = snapshot(outside);
    // The cache may refuse to open (saying why), or open and store
    // nothing: either way it does not go through the link.
    match Cache::open(root, TINY) {
        Ok(cache) => drop(s.read(cache, "mid")),
        Err(e) => assert!(e.to_string().contains("tmp"), "{e}"),
    }
    assert_eq!(snapshot(outside), before, "nothing outside the root was made or removed");
}

#[test]
fn a_symlinked_root_is_resolved_once_at_open() {
    let (place, target, user) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let link = place.path().join("cache");
    let s = served(true);

    // A link to a user's files is refused like the files themselves.
    plant(user.path(), USERS);
    plant(user.path(), &["tmp/draft.txt"]);
    let before = snapshot(user.path());
    symlink(user.path(), &link).unwrap();
    assert!(Cache::open(&link, TINY).is_err(), "the target is checked as a root is");
    assert_eq!(snapshot(user.path()), before);

    // A link to an empty directory is taken; turning the link to the
    // user's files afterwards redirects nothing.
    fs::remove_file(&link).unwrap();
    symlink(target.path(), &link).unwrap();
    let cache = Arc::new(Cache::open(&link, TINY).unwrap());
    fs::remove_file(&link).unwrap();
    symlink(user.path(), &link).unwrap();
    let stats = s.read_with(Arc::clone(&cache), "");
    assert!(stats.evicted > 0, "{stats:?}");
    assert_eq!(snapshot(user.path()), before, "the user's files intact, nothing made among them");
    assert!(target.path().join("CACHEDIR.TAG").exists());
    assert!(!origins(target.path()).is_empty(), "the entries went where the link pointed at open");
}

#[test]
fn a_fan_directory_writable_by_others_is_left_alone() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let s = served(true);
    s.read(Cache::open(root, 1 << 30).unwrap(), "big");
    let [(origin, fans)] = &origins(root)[..] else { panic!("one origin") };
    for fan in fans.iter().step_by(2) {
        fs::set_permissions(root.join(origin).join(fan), fs::Permissions::from_mode(0o777)).unwrap();
    }
    let open: Vec<_> = fans.iter().step_by(2).map(|fan| (fan, snapshot(&root.join(origin).join(fan)))).collect();
    let stats = s.read(Cache::open(root, TINY).unwrap(), "mid");
    assert!(stats.evicted > 0, "{stats:?}");
    for (fan, before) in open {
        assert_eq!(snapshot(&root.join(origin).join(fan)), before, "{fan}: not the cache's to touch");
    }
}

#[test]
fn a_hostile_trace_leaves_no_lock_files_and_no_names_out_of_form() {
    for digests in [true, false] {
        a_hostile_trace_leaves_no_lock_files_and_no_names_out_of_form_of(digests);
    }
}

fn a_hostile_trace_leaves_no_lock_files_and_no_names_out_of_form_of(digests: bool) {
    let root = tempfile::tempdir().unwrap();
    let root = root.path();
    let s = served(digests);
    // What a run read, and then entries that match nothing: far off, too
    // long, of length zero, at the edges of the numbers.
    let mut text = String::from("packfs-trace 2\n");
    {
        let p = open(&s.url, &options(None));
        read(&p, "mid2.bin", 65536).unwrap();
        let real = packfs_remote::RemoteSource::record([p.source()]).to_text();
        text.extend(real.lines().skip(1).map(|l| format!("{l}\n")));
    }
    for i in 0..300u64 {
        let sum = i.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        text.push_str(&format!("{} {} {sum:016x}\n", i * 4096, 1 + i * 977));
    }
    text.push_str(&format!("0 0 {:016x}\n{} 5 {:016x}\n5 {} 0000000000000001\n", 7, u64::MAX - 2, u64::MAX, u64::MAX));
    let trace = Arc::new(packfs_remote::trace::Trace::parse(&text).unwrap());

    let cache = Arc::new(Cache::open(root, 1 << 30).unwrap());
    let mut opts = RemoteOptions { cache: Some(Arc::clone(&cache)), ..options(None) };
    opts.prefetch = Some(trace);
    let p = open(&s.url, &opts);
    let (_, mid2) = s.files.iter().find(|(p, _)| p == "mid2.bin").unwrap();
    assert!(read(&p, "mid2.bin", 65536).unwrap() == *mid2);
    drop(p);

    // Locks are let go as their replies land: wait for them.
    let deadline = Instant::now() + Duration::from_secs(10);
    let strays = loop {
        let strays: Vec<_> =
            snapshot(root).into_keys().filter(|p| p.extension().is_some_and(|e| e == "lock")).collect();
        let strays: Vec<_> = strays.into_iter().filter(|p| p != Path::new("evict.lock")).collect();
        if strays.is_empty() || Instant::now() > deadline {
            break strays;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(strays.is_empty(), "{} stray lock files: {:?}…", strays.len(), &strays[..strays.len().min(3)]);
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    for path in snapshot(root).into_keys() {
        let parts: Vec<&str> = path.iter().map(|p| p.to_str().unwrap()).collect();
        let ok = match parts[..] {
            ["CACHEDIR.TAG" | "evict.lock" | "tmp"] => true,
            ["tmp", name] => name.strip_prefix("put-").is_some_and(|r| hex(r, 16)),
            [origin] => hex(origin, 32) || origin == "blake3",
            [origin, fan] => (hex(origin, 32) || origin == "blake3") && hex(fan, 2),
            [origin, fan, entry] => {
                let digits = if origin == "blake3" { 64 } else { 16 };
                (hex(origin, 32) || origin == "blake3")
                    && entry.split_once('-').is_some_and(|(sum, len)| {
                        hex(sum, digits)
                            && sum.starts_with(fan)
                            && len.parse::<u64>().is_ok_and(|n| n.to_string() == len)
                    })
            }
            _ => false,
        };
        assert!(ok, "{} is not a name the cache makes", path.display());
    }
}
