//! The stores the core benchmark compares — `MemFs`, a `BTreeMap`, vfs's
//! `MemoryFS`, `std::fs` on a temp dir and on tmpfs — behind one face
//! ([`Backend`]), and the list of them in report order.

use super::*;
pub(crate) fn names(prefix: &str, n: usize) -> Arc<Vec<String>> {
    Arc::new((0..n).map(|i| format!("{prefix}{i:07}")).collect())
}

/// A storage backend of the single-threaded phases. A `Work` is one working
/// directory, prepared for one list of names.
pub(crate) trait Store {
    type Work;
    fn label(&self) -> &'static str;
    /// A new, empty working directory (untimed).
    fn open_work(&mut self, names: &Arc<Vec<String>>) -> Self::Work;
    /// Disposes of a working directory (untimed).
    fn close_work(&mut self, _w: Self::Work) {}
    /// Create, write `data`, close — per name.
    fn create_files(w: &mut Self::Work, data: &[u8]);
    /// Open, read to end of file, close — per name. Returns bytes read.
    fn read_files(w: &mut Self::Work, buf: &mut [u8]) -> u64;
    /// Metadata by name — per name. Returns the sum of the sizes.
    fn stat_files(w: &mut Self::Work) -> u64;
    /// Lists the working directory whole. Returns the entry count.
    fn list_dir(w: &mut Self::Work) -> usize;
    fn unlink_files(w: &mut Self::Work);
    fn mkdirs(w: &mut Self::Work);
    fn rmdirs(w: &mut Self::Work);
    /// Creates the first name and writes `chunk` to it `count` times.
    fn write_seq(w: &mut Self::Work, chunk: &[u8], count: usize);
    /// Reads the first name whole, `buf.len()` bytes per read.
    fn read_seq(w: &mut Self::Work, buf: &mut [u8]) -> u64;
}

// ---- packfs MemFs -----------------------------------------------------------

pub(crate) struct Mem;

pub(crate) struct MemWork {
    pub(crate) fs: MemFs,
    pub(crate) dir: Ino,
    pub(crate) names: Arc<Vec<String>>,
}

pub(crate) fn mem_read_whole(fs: &MemFs, f: Ino, buf: &mut [u8]) -> u64 {
    let mut off = 0u64;
    loop {
        let k = fs.read_at(f, off, buf).expect("read");
        if k == 0 {
            return off;
        }
        black_box(&buf[..k]);
        off += k as u64;
    }
}

impl Store for Mem {
    type Work = MemWork;

    fn label(&self) -> &'static str {
        "packfs_mem"
    }

    fn open_work(&mut self, names: &Arc<Vec<String>>) -> MemWork {
        let fs = MemFs::new();
        let dir = fs.mkdir(fs.root(), "bench", 0o755).expect("mkdir");
        MemWork { fs, dir, names: names.clone() }
    }

    fn create_files(w: &mut MemWork, data: &[u8]) {
        let opts = OpenOptions::create();
        for n in w.names.iter() {
            let f = w.fs.open(w.dir, n, &opts).expect("create");
            w.fs.write_at(f, 0, data).expect("write");
            w.fs.close(f);
        }
    }

    fn read_files(w: &mut MemWork, buf: &mut [u8]) -> u64 {
        let opts = OpenOptions::read();
        let mut total = 0;
        for n in w.names.iter() {
            let f = w.fs.open(w.dir, n, &opts).expect("open");
            total += mem_read_whole(&w.fs, f, buf);
            w.fs.close(f);
        }
        total
    }

    fn stat_files(w: &mut MemWork) -> u64 {
        let mut sum = 0;
        for n in w.names.iter() {
            let ino = w.fs.lookup(w.dir, n).expect("lookup");
            sum += w.fs.metadata(ino).expect("metadata").size;
        }
        sum
    }

    fn list_dir(w: &mut MemWork) -> usize {
        let entries = w.fs.read_dir(w.dir, None, usize::MAX).expect("read_dir");
        black_box(&entries);
        entries.len()
    }

    fn unlink_files(w: &mut MemWork) {
        for n in w.names.iter() {
            w.fs.unlink(w.dir, n).expect("unlink");
        }
    }

    fn mkdirs(w: &mut MemWork) {
        for n in w.names.iter() {
            w.fs.mkdir(w.dir, n, 0o755).expect("mkdir");
        }
    }

    fn rmdirs(w: &mut MemWork) {
        for n in w.names.iter() {
            w.fs.rmdir(w.dir, n).expect("rmdir");
        }
    }

    fn write_seq(w: &mut MemWork, chunk: &[u8], count: usize) {
        let f = w.fs.open(w.dir, &w.names[0], &OpenOptions::create()).expect("create");
        let mut off = 0u64;
        for _ in 0..count {
            off += w.fs.write_at(f, off, chunk).expect("write") as u64;
        }
        w.fs.close(f);
    }

    fn read_seq(w: &mut MemWork, buf: &mut [u8]) -> u64 {
        let f = w.fs.open(w.dir, &w.names[0], &OpenOptions::read()).expect("open");
        let n = mem_read_whole(&w.fs, f, buf);
        w.fs.close(f);
        n
    }
}

// ---- BTreeMap<String, Vec<u8>> ---------------------------------------------

/// Full paths (`/bench/<name>`) and directory keys (the same plus `/`),
/// shared by every working map made for one list of names.
pub(crate) struct MapKeys {
    pub(crate) names: Arc<Vec<String>>,
    pub(crate) paths: Vec<String>,
    pub(crate) dir_keys: Vec<String>,
}

#[derive(Default)]
pub(crate) struct Map {
    pub(crate) keys: Option<Arc<MapKeys>>,
}

pub(crate) struct MapWork {
    pub(crate) map: BTreeMap<String, Vec<u8>>,
    pub(crate) keys: Arc<MapKeys>,
}

pub(crate) const MAP_DIR: &str = "/bench/";

impl Store for Map {
    type Work = MapWork;

    fn label(&self) -> &'static str {
        "btreemap"
    }

    fn open_work(&mut self, names: &Arc<Vec<String>>) -> MapWork {
        let keys = match &self.keys {
            Some(k) if Arc::ptr_eq(&k.names, names) => k.clone(),
            _ => {
                let k = Arc::new(MapKeys {
                    names: names.clone(),
                    paths: names.iter().map(|n| format!("{MAP_DIR}{n}")).collect(),
                    dir_keys: names.iter().map(|n| format!("{MAP_DIR}{n}/")).collect(),
                });
                self.keys = Some(k.clone());
                k
            }
        };
        let mut map = BTreeMap::new();
        map.insert(MAP_DIR.to_string(), Vec::new());
        MapWork { map, keys }
    }

    fn create_files(w: &mut MapWork, data: &[u8]) {
        for p in &w.keys.paths {
            w.map.insert(p.clone(), data.to_vec());
        }
    }

    fn read_files(w: &mut MapWork, buf: &mut [u8]) -> u64 {
        let mut total = 0;
        for p in &w.keys.paths {
            let v = w.map.get(p).expect("get");
            buf[..v.len()].copy_from_slice(v);
            black_box(&buf[..v.len()]);
            total += v.len() as u64;
        }
        total
    }

    fn stat_files(w: &mut MapWork) -> u64 {
        w.keys.paths.iter().map(|p| w.map.get(p).expect("get").len() as u64).sum()
    }

    fn list_dir(w: &mut MapWork) -> usize {
        let names: Vec<&str> = w
            .map
            .range::<str, _>((Bound::Excluded(MAP_DIR), Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(MAP_DIR))
            .map(|(k, _)| &k[MAP_DIR.len()..])
            .collect();
        black_box(&names);
        names.len()
    }

    fn unlink_files(w: &mut MapWork) {
        for p in &w.keys.paths {
            w.map.remove(p).expect("remove");
        }
    }

    fn mkdirs(w: &mut MapWork) {
        for k in &w.keys.dir_keys {
            w.map.insert(k.clone(), Vec::new());
        }
    }

    fn rmdirs(w: &mut MapWork) {
        for k in &w.keys.dir_keys {
            let empty = w
                .map
                .range::<str, _>((Bound::Excluded(k.as_str()), Bound::Unbounded))
                .next()
                .is_none_or(|(next, _)| !next.starts_with(k.as_str()));
            assert!(empty, "directory not empty");
            w.map.remove(k).expect("remove");
        }
    }

    fn write_seq(w: &mut MapWork, chunk: &[u8], count: usize) {
        let p = &w.keys.paths[0];
        w.map.insert(p.clone(), Vec::new());
        for _ in 0..count {
            w.map.get_mut(p).expect("get").extend_from_slice(chunk);
        }
    }

    fn read_seq(w: &mut MapWork, buf: &mut [u8]) -> u64 {
        let v = w.map.get(&w.keys.paths[0]).expect("get");
        for part in v.chunks(buf.len()) {
            buf[..part.len()].copy_from_slice(part);
            black_box(&buf[..part.len()]);
        }
        v.len() as u64
    }
}

// ---- vfs MemoryFS -----------------------------------------------------------

pub(crate) struct Vfs;

pub(crate) struct VfsWork {
    pub(crate) fs: vfs::MemoryFS,
    pub(crate) paths: Vec<String>,
}

pub(crate) fn read_to_end(r: &mut impl Read, buf: &mut [u8]) -> u64 {
    let mut total = 0u64;
    loop {
        let k = r.read(buf).expect("read");
        if k == 0 {
            return total;
        }
        black_box(&buf[..k]);
        total += k as u64;
    }
}

impl Store for Vfs {
    type Work = VfsWork;

    fn label(&self) -> &'static str {
        "vfs_memoryfs"
    }

    fn open_work(&mut self, names: &Arc<Vec<String>>) -> VfsWork {
        let fs = vfs::MemoryFS::new();
        fs.create_dir("/bench").expect("create_dir");
        VfsWork { fs, paths: names.iter().map(|n| format!("/bench/{n}")).collect() }
    }

    fn create_files(w: &mut VfsWork, data: &[u8]) {
        for p in &w.paths {
            let mut f = w.fs.create_file(p).expect("create");
            f.write_all(data).expect("write");
        }
    }

    fn read_files(w: &mut VfsWork, buf: &mut [u8]) -> u64 {
        let mut total = 0;
        for p in &w.paths {
            let mut f = w.fs.open_file(p).expect("open");
            total += read_to_end(&mut f, buf);
        }
        total
    }

    fn stat_files(w: &mut VfsWork) -> u64 {
        w.paths.iter().map(|p| w.fs.metadata(p).expect("metadata").len).sum()
    }

    fn list_dir(w: &mut VfsWork) -> usize {
        let names: Vec<String> = w.fs.read_dir("/bench").expect("read_dir").collect();
        black_box(&names);
        names.len()
    }

    fn unlink_files(w: &mut VfsWork) {
        for p in &w.paths {
            w.fs.remove_file(p).expect("remove_file");
        }
    }

    fn mkdirs(w: &mut VfsWork) {
        for p in &w.paths {
            w.fs.create_dir(p).expect("create_dir");
        }
    }

    fn rmdirs(w: &mut VfsWork) {
        for p in &w.paths {
            w.fs.remove_dir(p).expect("remove_dir");
        }
    }

    fn write_seq(w: &mut VfsWork, chunk: &[u8], count: usize) {
        let mut f = w.fs.create_file(&w.paths[0]).expect("create");
        for _ in 0..count {
            f.write_all(chunk).expect("write");
        }
    }

    fn read_seq(w: &mut VfsWork, buf: &mut [u8]) -> u64 {
        let mut f = w.fs.open_file(&w.paths[0]).expect("open");
        read_to_end(&mut f, buf)
    }
}

// ---- std::fs ----------------------------------------------------------------

pub(crate) struct Host {
    pub(crate) label: &'static str,
    pub(crate) root: tempfile::TempDir,
    pub(crate) counter: u64,
}

pub(crate) struct HostWork {
    pub(crate) dir: PathBuf,
    pub(crate) paths: Vec<PathBuf>,
}

impl Host {
    fn new(label: &'static str, parent: &Path) -> Self {
        let root = tempfile::Builder::new().prefix("packfs-bench-").tempdir_in(parent).expect("tempdir");
        Host { label, root, counter: 0 }
    }
}

impl Store for Host {
    type Work = HostWork;

    fn label(&self) -> &'static str {
        self.label
    }

    fn open_work(&mut self, names: &Arc<Vec<String>>) -> HostWork {
        self.counter += 1;
        let dir = self.root.path().join(format!("r{}", self.counter));
        fs::create_dir(&dir).expect("create_dir");
        let paths = names.iter().map(|n| dir.join(n)).collect();
        HostWork { dir, paths }
    }

    fn close_work(&mut self, w: HostWork) {
        fs::remove_dir_all(w.dir).expect("remove_dir_all");
    }

    fn create_files(w: &mut HostWork, data: &[u8]) {
        for p in &w.paths {
            let mut f = File::create(p).expect("create");
            f.write_all(data).expect("write");
        }
    }

    fn read_files(w: &mut HostWork, buf: &mut [u8]) -> u64 {
        let mut total = 0;
        for p in &w.paths {
            let mut f = File::open(p).expect("open");
            total += read_to_end(&mut f, buf);
        }
        total
    }

    fn stat_files(w: &mut HostWork) -> u64 {
        w.paths.iter().map(|p| fs::metadata(p).expect("metadata").len()).sum()
    }

    fn list_dir(w: &mut HostWork) -> usize {
        let names: Vec<_> = fs::read_dir(&w.dir).expect("read_dir").map(|e| e.expect("entry").file_name()).collect();
        black_box(&names);
        names.len()
    }

    fn unlink_files(w: &mut HostWork) {
        for p in &w.paths {
            fs::remove_file(p).expect("remove_file");
        }
    }

    fn mkdirs(w: &mut HostWork) {
        for p in &w.paths {
            fs::create_dir(p).expect("create_dir");
        }
    }

    fn rmdirs(w: &mut HostWork) {
        for p in &w.paths {
            fs::remove_dir(p).expect("remove_dir");
        }
    }

    fn write_seq(w: &mut HostWork, chunk: &[u8], count: usize) {
        let mut f = File::create(&w.paths[0]).expect("create");
        for _ in 0..count {
            f.write_all(chunk).expect("write");
        }
    }

    fn read_seq(w: &mut HostWork, buf: &mut [u8]) -> u64 {
        let mut f = File::open(&w.paths[0]).expect("open");
        read_to_end(&mut f, buf)
    }
}

// ---- one object-safe face for every store --------------------------------------

/// A store with its current working directory.
pub(crate) trait Backend {
    fn label(&self) -> &'static str;
    /// Makes a new, empty working directory current (disposing of the old).
    fn reset(&mut self, names: &Arc<Vec<String>>);
    /// True when there is a current working directory.
    fn ready(&self) -> bool;
    /// Disposes of the current working directory.
    fn clear(&mut self);
    fn create_files(&mut self, data: &[u8]);
    fn read_files(&mut self, buf: &mut [u8]) -> u64;
    fn stat_files(&mut self) -> u64;
    fn list_dir(&mut self) -> usize;
    fn unlink_files(&mut self);
    fn mkdirs(&mut self);
    fn rmdirs(&mut self);
    fn write_seq(&mut self, chunk: &[u8], count: usize);
    fn read_seq(&mut self, buf: &mut [u8]) -> u64;
}

pub(crate) struct Slot<S: Store> {
    pub(crate) store: S,
    pub(crate) cur: Option<S::Work>,
}

impl<S: Store> Slot<S> {
    fn new(store: S) -> Self {
        Slot { store, cur: None }
    }

    fn work(&mut self) -> &mut S::Work {
        self.cur.as_mut().expect("no working directory")
    }
}

impl<S: Store> Drop for Slot<S> {
    fn drop(&mut self) {
        self.clear();
    }
}

impl<S: Store> Backend for Slot<S> {
    fn label(&self) -> &'static str {
        self.store.label()
    }

    fn reset(&mut self, names: &Arc<Vec<String>>) {
        self.clear();
        self.cur = Some(self.store.open_work(names));
    }

    fn ready(&self) -> bool {
        self.cur.is_some()
    }

    fn clear(&mut self) {
        if let Some(w) = self.cur.take() {
            self.store.close_work(w);
        }
    }

    fn create_files(&mut self, data: &[u8]) {
        S::create_files(self.work(), data)
    }

    fn read_files(&mut self, buf: &mut [u8]) -> u64 {
        S::read_files(self.work(), buf)
    }

    fn stat_files(&mut self) -> u64 {
        S::stat_files(self.work())
    }

    fn list_dir(&mut self) -> usize {
        S::list_dir(self.work())
    }

    fn unlink_files(&mut self) {
        S::unlink_files(self.work())
    }

    fn mkdirs(&mut self) {
        S::mkdirs(self.work())
    }

    fn rmdirs(&mut self) {
        S::rmdirs(self.work())
    }

    fn write_seq(&mut self, chunk: &[u8], count: usize) {
        S::write_seq(self.work(), chunk, count)
    }

    fn read_seq(&mut self, buf: &mut [u8]) -> u64 {
        S::read_seq(self.work(), buf)
    }
}

/// What the phase closures see (`Box<dyn Backend>` holds `'static` ones).
pub(crate) type Dyn = dyn Backend + 'static;

/// Whether to measure the disk baseline (`PACKFS_BENCH_DISK=0`: no).
pub(crate) fn disk_wanted() -> bool {
    std::env::var("PACKFS_BENCH_DISK").as_deref() != Ok("0")
}

/// The backends of the single-threaded phases, in report order.
pub(crate) fn backends(with_disk: bool) -> Vec<Box<dyn Backend>> {
    let with_disk = with_disk && disk_wanted();
    let mut v: Vec<Box<dyn Backend>> =
        vec![Box::new(Slot::new(Mem)), Box::new(Slot::new(Map::default())), Box::new(Slot::new(Vfs))];
    if with_disk {
        v.push(Box::new(Slot::new(Host::new("std_tmp", &std::env::temp_dir()))));
    }
    v.push(Box::new(Slot::new(Host::new("std_shm", Path::new("/dev/shm")))));
    v
}
