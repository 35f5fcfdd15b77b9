//! The `wasi:filesystem/types` functions called directly, as a guest's
//! bindings would, for behaviour `std::fs` guests cannot reach: exact error
//! codes, flags, hashes, stream end and error reporting, batching.

use std::sync::Arc;

use bytes::Bytes;
use packfs_core::mem::Quota;
use packfs_core::{FileSystem, Ino, MemFs};
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream, StreamError};

use packfs_host::Access;
use packfs_host::filesystem::{Descriptor, MAX_DIR_STREAMS, PackFsCtx, PackFsCtxView};
use packfs_host::p2::FsError;
use packfs_host::p2::bindings::preopens::Host as _;
use packfs_host::p2::bindings::types::{
    DescriptorFlags as DF, DescriptorType, ErrorCode, Host as _, HostDescriptor as D, HostDirectoryEntryStream as _,
    NewTimestamp, OpenFlags as OF, PathFlags as PF,
};

struct Guest {
    ctx: PackFsCtx,
    table: ResourceTable,
}

impl Guest {
    fn new(ctx: PackFsCtx) -> Self {
        Guest { ctx, table: ResourceTable::new() }
    }

    fn view(&mut self) -> PackFsCtxView<'_> {
        PackFsCtxView { ctx: &mut self.ctx, table: &mut self.table }
    }

    /// The preopens, as borrowed handles.
    fn preopens(&mut self) -> Vec<Resource<Descriptor>> {
        self.view().get_directories().unwrap().into_iter().map(|(d, _)| d).collect()
    }
}

/// A second handle to the same resource (the bindings pass handles by value).
fn b<T: 'static>(r: &Resource<T>) -> Resource<T> {
    Resource::new_borrow(r.rep())
}

/// A metadata hash as a comparable pair.
fn hash(h: packfs_host::p2::bindings::types::MetadataHashValue) -> (u64, u64) {
    (h.lower, h.upper)
}

fn code<T: std::fmt::Debug>(r: Result<T, FsError>) -> ErrorCode {
    match r {
        Err(FsError::Code(c)) => c,
        other => panic!("expected an error code, got {other:?}"),
    }
}

fn rw(fs: Arc<dyn FileSystem>) -> Guest {
    Guest::new(PackFsCtx::builder().preopen("/", fs, Access::ReadWrite).build())
}

const CREATE: OF = OF::CREATE;

fn open(g: &mut Guest, dir: &Resource<Descriptor>, path: &str, o: OF, f: DF) -> Result<Resource<Descriptor>, FsError> {
    g.view().open_at(b(dir), PF::empty(), path.into(), o, f)
}

fn write_file(g: &mut Guest, dir: &Resource<Descriptor>, path: &str, data: &[u8]) {
    let fd = open(g, dir, path, CREATE | OF::TRUNCATE, DF::WRITE).unwrap();
    assert_eq!(g.view().write(b(&fd), data.to_vec(), 0).unwrap(), data.len() as u64);
}

#[test]
fn preopen_flags_follow_access() {
    let fs: Arc<dyn FileSystem> = Arc::new(MemFs::new());
    let mut g = Guest::new(
        PackFsCtx::builder().preopen("/rw", fs.clone(), Access::ReadWrite).preopen("/ro", fs, Access::ReadOnly).build(),
    );
    let dirs = g.view().get_directories().unwrap();
    assert_eq!(dirs.iter().map(|(_, p)| p.as_str()).collect::<Vec<_>>(), ["/rw", "/ro"]);
    let (rw, ro) = (b(&dirs[0].0), b(&dirs[1].0));
    assert_eq!(g.view().get_flags(b(&rw)).unwrap(), DF::READ | DF::MUTATE_DIRECTORY);
    assert_eq!(g.view().get_flags(b(&ro)).unwrap(), DF::READ);
    assert_eq!(g.view().get_type(b(&ro)).unwrap(), DescriptorType::Directory);
    // Same filesystem at two paths: the same objects.
    assert!(g.view().is_same_object(b(&rw), b(&ro)).unwrap());
    assert_eq!(code(open(&mut g, &ro, "x", CREATE, DF::WRITE)), ErrorCode::NotPermitted);
    assert_eq!(code(g.view().create_directory_at(b(&ro), "d".into())), ErrorCode::NotPermitted);
    write_file(&mut g, &rw, "f", b"data");
    let f = open(&mut g, &ro, "f", OF::empty(), DF::READ).unwrap();
    assert_eq!(g.view().read(b(&f), 10, 0).unwrap(), (b"data".to_vec(), false));
    assert_eq!(code(g.view().set_times(b(&f), NewTimestamp::Now, NewTimestamp::NoChange)), ErrorCode::NotPermitted);
}

#[test]
fn open_flags() {
    let mut g = rw(Arc::new(MemFs::new()));
    let root = g.preopens().remove(0);
    write_file(&mut g, &root, "f", b"hello");
    g.view().create_directory_at(b(&root), "d".into()).unwrap();
    let o = |g: &mut Guest, p: &str, o: OF, f: DF| open(g, &root, p, o, f).map(|_| ());
    assert_eq!(code(o(&mut g, "d", OF::DIRECTORY | CREATE, DF::READ)), ErrorCode::Invalid);
    assert_eq!(code(o(&mut g, "d", OF::DIRECTORY | OF::TRUNCATE, DF::READ)), ErrorCode::Invalid);
    assert_eq!(code(o(&mut g, "f", CREATE | OF::EXCLUSIVE, DF::WRITE)), ErrorCode::Exist);
    assert_eq!(code(o(&mut g, "f", OF::DIRECTORY, DF::READ)), ErrorCode::NotDirectory);
    assert_eq!(code(o(&mut g, "d", OF::empty(), DF::WRITE)), ErrorCode::IsDirectory);
    assert_eq!(code(o(&mut g, "d", CREATE, DF::READ)), ErrorCode::IsDirectory);
    assert_eq!(code(o(&mut g, ".", CREATE, DF::READ)), ErrorCode::IsDirectory);
    assert_eq!(code(o(&mut g, "missing", OF::empty(), DF::READ)), ErrorCode::NoEntry);
    assert_eq!(code(o(&mut g, "f/", OF::empty(), DF::READ)), ErrorCode::NotDirectory);
    assert_eq!(code(o(&mut g, "new/", CREATE, DF::WRITE)), ErrorCode::IsDirectory);
    assert_eq!(code(o(&mut g, "", OF::empty(), DF::READ)), ErrorCode::NoEntry);
    assert_eq!(code(o(&mut g, "a\0b", OF::empty(), DF::READ)), ErrorCode::Invalid);
    assert_eq!(code(o(&mut g, &"n".repeat(256), CREATE, DF::WRITE)), ErrorCode::NameTooLong);
    // `create` and `truncate` imply write access; neither read nor write reads.
    let f = open(&mut g, &root, "f", OF::TRUNCATE, DF::READ).unwrap();
    assert_eq!(g.view().get_flags(b(&f)).unwrap(), DF::READ | DF::WRITE);
    let f = open(&mut g, &root, "f", OF::empty(), DF::empty()).unwrap();
    assert_eq!(g.view().get_flags(b(&f)).unwrap(), DF::READ);
    assert_eq!(g.view().get_type(b(&f)).unwrap(), DescriptorType::RegularFile);
    // Sync requests are honoured (PackFS syncs after each write) and reported.
    let f = open(&mut g, &root, "s", CREATE, DF::WRITE | DF::FILE_INTEGRITY_SYNC).unwrap();
    assert_eq!(g.view().get_flags(b(&f)).unwrap(), DF::WRITE | DF::FILE_INTEGRITY_SYNC);
    assert_eq!(g.view().write(b(&f), b"x".to_vec(), 0).unwrap(), 1);
    // A directory opened through the preopen may mutate only if it asked.
    let d = open(&mut g, &root, "d", OF::DIRECTORY, DF::READ | DF::MUTATE_DIRECTORY).unwrap();
    assert_eq!(g.view().get_flags(b(&d)).unwrap(), DF::READ | DF::MUTATE_DIRECTORY);
}

#[test]
fn symlinks_and_containment() {
    let mut g = rw(Arc::new(MemFs::new()));
    let root = g.preopens().remove(0);
    g.view().create_directory_at(b(&root), "sub".into()).unwrap();
    write_file(&mut g, &root, "sub/f", b"in sub");
    g.view().symlink_at(b(&root), "sub/f".into(), "l".into()).unwrap();
    g.view().symlink_at(b(&root), "missing".into(), "dangling".into()).unwrap();
    assert_eq!(code(g.view().symlink_at(b(&root), "/etc".into(), "abs".into())), ErrorCode::NotPermitted);
    assert_eq!(g.view().readlink_at(b(&root), "l".into()).unwrap(), "sub/f");
    assert_eq!(code(g.view().readlink_at(b(&root), "sub".into())), ErrorCode::Invalid);

    // Without symlink-follow the last component is not followed.
    assert_eq!(code(open(&mut g, &root, "l", OF::empty(), DF::READ)), ErrorCode::Loop);
    let st = g.view().stat_at(b(&root), PF::empty(), "l".into()).unwrap();
    assert_eq!((st.type_, st.size), (DescriptorType::SymbolicLink, 5));
    let f = g.view().open_at(b(&root), PF::SYMLINK_FOLLOW, "l".into(), OF::empty(), DF::READ).unwrap();
    assert_eq!(g.view().read(b(&f), 100, 0).unwrap().0, b"in sub");
    // Creating through a dangling symlink creates its target, as open(2) does.
    let f = g.view().open_at(b(&root), PF::SYMLINK_FOLLOW, "dangling".into(), CREATE, DF::WRITE).unwrap();
    g.view().write(b(&f), b"made".to_vec(), 0).unwrap();
    assert_eq!(g.view().stat_at(b(&root), PF::empty(), "missing".into()).unwrap().size, 4);
    let excl = g.view().open_at(b(&root), PF::SYMLINK_FOLLOW, "dangling".into(), CREATE | OF::EXCLUSIVE, DF::WRITE);
    assert_eq!(code(excl), ErrorCode::Exist);

    // Every descriptor is its own sandbox root.
    let sub = open(&mut g, &root, "sub", OF::DIRECTORY, DF::READ).unwrap();
    assert_eq!(code(open(&mut g, &sub, "../l", OF::empty(), DF::READ)), ErrorCode::NotPermitted);
    assert_eq!(code(open(&mut g, &root, "../x", OF::empty(), DF::READ)), ErrorCode::NotPermitted);
    assert_eq!(code(open(&mut g, &root, "/sub/f", OF::empty(), DF::READ)), ErrorCode::NotPermitted);
    g.view().symlink_at(b(&sub), "../sub/f".into(), "up".into()).unwrap();
    let up = g.view().open_at(b(&sub), PF::SYMLINK_FOLLOW, "up".into(), OF::empty(), DF::READ);
    assert_eq!(code(up), ErrorCode::NotPermitted);
    let up = g.view().open_at(b(&root), PF::SYMLINK_FOLLOW, "sub/up".into(), OF::empty(), DF::READ);
    assert!(up.is_ok(), "from the root, sub/../sub/f stays inside");

    // `*-at` on a file descriptor.
    let f = open(&mut g, &root, "sub/f", OF::empty(), DF::READ).unwrap();
    assert_eq!(code(g.view().stat_at(b(&f), PF::empty(), "x".into())), ErrorCode::NotDirectory);
    // A loop.
    g.view().symlink_at(b(&root), "b".into(), "a".into()).unwrap();
    g.view().symlink_at(b(&root), "a".into(), "b".into()).unwrap();
    assert_eq!(
        code(g.view().open_at(b(&root), PF::SYMLINK_FOLLOW, "a".into(), OF::empty(), DF::READ)),
        ErrorCode::Loop
    );
}

/// A path ending in `/` through a symlink that leads out of the preopen
/// (issue 38, item 5) names what lies outside: every call taking a path
/// refuses it as leaving (`not-permitted`), whatever it would say of the
/// symlink itself. `remove-directory-at("parent/")` answered
/// `not-directory`, `create-directory-at`, `symlink-at` and `link-at`'s new
/// name `exist`, `rename-at` `not-directory`, an exclusive `open-at`
/// `exist`, and `set-times-at` changing neither time succeeded; wasmtime
/// answers `not-permitted` to most (`exist`, `not-directory` and
/// `is-directory` for the rest, as it looks at the `/` first).
#[test]
fn a_slash_through_a_symlink_out_of_the_preopen_is_refused_as_leaving() {
    let mut g = rw(Arc::new(MemFs::new()));
    let root = g.preopens().remove(0);
    g.view().create_directory_at(b(&root), "e".into()).unwrap();
    write_file(&mut g, &root, "g", b"");
    for (target, name) in [("..", "parent"), ("../x", "esc"), ("parent", "chain"), ("e/../..", "deep")] {
        g.view().symlink_at(b(&root), target.into(), name.into()).unwrap();
    }
    let np = ErrorCode::NotPermitted;
    let keep = || NewTimestamp::NoChange;
    for path in ["parent/", "esc/", "chain/", "deep/", "parent//", "e/../parent/"] {
        let p = || path.to_owned();
        let mut v = g.view();
        assert_eq!(code(v.remove_directory_at(b(&root), p())), np, "rmdir {path}");
        assert_eq!(code(v.create_directory_at(b(&root), p())), np, "mkdir {path}");
        assert_eq!(code(v.unlink_file_at(b(&root), p())), np, "unlink {path}");
        assert_eq!(code(v.symlink_at(b(&root), "g".into(), p())), np, "symlink {path}");
        assert_eq!(code(v.readlink_at(b(&root), p())), np, "readlink {path}");
        assert_eq!(code(v.rename_at(b(&root), p(), b(&root), "r".into())), np, "rename from {path}");
        assert_eq!(code(v.rename_at(b(&root), "g".into(), b(&root), p())), np, "rename to {path}");
        assert_eq!(code(v.rename_at(b(&root), "e".into(), b(&root), p())), np, "rename a directory to {path}");
        assert_eq!(code(v.link_at(b(&root), PF::empty(), p(), b(&root), "n".into())), np, "link from {path}");
        assert_eq!(code(v.link_at(b(&root), PF::empty(), "g".into(), b(&root), p())), np, "link to {path}");
        for f in [PF::empty(), PF::SYMLINK_FOLLOW] {
            assert_eq!(code(v.stat_at(b(&root), f, p())), np, "stat {path} {f:?}");
            assert_eq!(code(v.metadata_hash_at(b(&root), f, p())), np, "hash {path} {f:?}");
            assert_eq!(code(v.set_times_at(b(&root), f, p(), keep(), keep())), np, "times {path} {f:?}");
            let now = || NewTimestamp::Now;
            assert_eq!(code(v.set_times_at(b(&root), f, p(), now(), now())), np, "times {path} {f:?}");
            for o in [OF::empty(), OF::DIRECTORY, CREATE, CREATE | OF::EXCLUSIVE, OF::TRUNCATE] {
                for d in [DF::READ, DF::READ | DF::WRITE] {
                    assert_eq!(code(v.open_at(b(&root), f, p(), o, d)), np, "open {path} {f:?} {o:?} {d:?}");
                }
            }
        }
    }
    // Followed, the symlink without the `/` leaves too, even where nothing
    // would change.
    let times = g.view().set_times_at(b(&root), PF::SYMLINK_FOLLOW, "parent".into(), keep(), keep());
    assert_eq!(code(times), np);
    assert!(g.view().set_times_at(b(&root), PF::empty(), "parent".into(), keep(), keep()).is_ok());
    // Nothing changed.
    let mut names: Vec<String> = Vec::new();
    let list = g.view().read_directory(b(&root)).unwrap();
    while let Some(e) = g.view().read_directory_entry(b(&list)).unwrap() {
        names.push(e.name);
    }
    names.sort();
    assert_eq!(names, ["chain", "deep", "e", "esc", "g", "parent"]);
}

/// One open-at follows at most 40 symlinks in all, as on Linux: those in
/// the path's directories count once, however many symlinks follow in the
/// last component.
#[test]
fn symlink_hops_are_counted_once_per_open() {
    let mut g = rw(Arc::new(MemFs::new()));
    let root = g.preopens().remove(0);
    write_file(&mut g, &root, "f", b"end");
    g.view().symlink_at(b(&root), ".".into(), "x".into()).unwrap();
    // l0 -> l1 -> ... -> l20 -> f: 21 hops in the last component.
    for i in 0..21 {
        let target = if i == 20 { "f".to_owned() } else { format!("l{}", i + 1) };
        g.view().symlink_at(b(&root), target, format!("l{i}")).unwrap();
    }
    let open =
        |g: &mut Guest, path: String| g.view().open_at(b(&root), PF::SYMLINK_FOLLOW, path, OF::empty(), DF::READ);
    // 19 through `x`, then 21: 40.
    let f = open(&mut g, format!("{}l0", "x/".repeat(19))).unwrap();
    assert_eq!(g.view().read(b(&f), 10, 0).unwrap().0, b"end");
    assert_eq!(code(open(&mut g, format!("{}l0", "x/".repeat(20)))), ErrorCode::Loop);
    // A target ending in `/` must be a directory.
    g.view().symlink_at(b(&root), "f/".into(), "fslash".into()).unwrap();
    assert_eq!(code(open(&mut g, "fslash".into())), ErrorCode::NotDirectory);
}

#[test]
fn access_modes() {
    let mut g = rw(Arc::new(MemFs::new()));
    let root = g.preopens().remove(0);
    write_file(&mut g, &root, "f", b"12345");
    let wo = open(&mut g, &root, "f", OF::empty(), DF::WRITE).unwrap();
    let ro = open(&mut g, &root, "f", OF::empty(), DF::READ).unwrap();
    assert_eq!(code(g.view().read(b(&wo), 1, 0)), ErrorCode::BadDescriptor);
    assert_eq!(code(g.view().read_via_stream(b(&wo), 0)), ErrorCode::BadDescriptor);
    assert_eq!(code(g.view().write(b(&ro), vec![1], 0)), ErrorCode::BadDescriptor);
    assert_eq!(code(g.view().write_via_stream(b(&ro), 0)), ErrorCode::BadDescriptor);
    assert_eq!(code(g.view().append_via_stream(b(&ro))), ErrorCode::BadDescriptor);
    assert_eq!(code(g.view().set_size(b(&ro), 0)), ErrorCode::Invalid);
    g.view().set_size(b(&wo), 2).unwrap();
    assert_eq!(g.view().stat(b(&ro)).unwrap().size, 2);
    // File-only operations on a directory.
    assert_eq!(code(g.view().read(b(&root), 1, 0)), ErrorCode::BadDescriptor);
    assert_eq!(code(g.view().read_via_stream(b(&root), 0)), ErrorCode::IsDirectory);
    assert_eq!(code(g.view().set_size(b(&root), 0)), ErrorCode::BadDescriptor);
    assert_eq!(code(g.view().read_directory(b(&ro))), ErrorCode::NotDirectory);
}

#[test]
fn streams_end_and_fail_as_wasi_io_says() {
    // Room for the root, `f` and 10 bytes of it.
    let room = 2 * packfs_core::mem::INODE_BYTES + packfs_core::mem::ENTRY_BYTES + 1 + 10;
    let fs = Arc::new(MemFs::builder().quota(Quota { max_bytes: Some(room), max_inodes: None }).build());
    let mut g = rw(fs);
    let root = g.preopens().remove(0);
    let f = open(&mut g, &root, "f", CREATE, DF::READ | DF::WRITE).unwrap();

    let w = g.view().write_via_stream(b(&f), 2).unwrap();
    let out: &mut DynOutputStream = g.table.get_mut(&w).unwrap();
    assert!(out.check_write().unwrap() > 0);
    out.write(Bytes::from_static(b"abc")).unwrap();
    out.write(Bytes::from_static(b"de")).unwrap();
    let a = g.view().append_via_stream(b(&f)).unwrap();
    g.table.get_mut(&a).unwrap().write(Bytes::from_static(b"!")).unwrap();
    assert_eq!(g.view().read(b(&f), 100, 0).unwrap(), (b"\0\0abcde!".to_vec(), false));
    assert_eq!(g.view().read(b(&f), 100, 8).unwrap(), (vec![], true));

    let r = g.view().read_via_stream(b(&f), 5).unwrap();
    let input: &mut DynInputStream = g.table.get_mut(&r).unwrap();
    assert_eq!(&input.read(2).unwrap()[..], b"de");
    assert_eq!(&input.read(0).unwrap()[..], b"");
    assert_eq!(&input.read(100).unwrap()[..], b"!");
    assert!(matches!(input.read(100), Err(StreamError::Closed)));

    // Over the quota: the write fails, the stream closes, and the error
    // resource tells which error-code it was.
    let out: &mut DynOutputStream = g.table.get_mut(&w).unwrap();
    let err = match out.write(Bytes::from_static(b"0123456789")) {
        Err(StreamError::LastOperationFailed(e)) => e,
        other => panic!("{other:?}"),
    };
    assert!(matches!(out.check_write(), Err(StreamError::Closed)));
    let err = g.table.push(err).unwrap();
    assert_eq!(g.view().filesystem_error_code(err).unwrap(), Some(ErrorCode::Quota));
    let other = g.table.push(wasmtime::Error::msg("not a filesystem error")).unwrap();
    assert_eq!(g.view().filesystem_error_code(other).unwrap(), None);
}

#[test]
fn directory_listing_batches_and_resumes_by_name() {
    let mut g = rw(Arc::new(MemFs::new()));
    let root = g.preopens().remove(0);
    g.view().create_directory_at(b(&root), "d".into()).unwrap();
    for i in 0..600 {
        write_file(&mut g, &root, &format!("d/f{i:03}"), b"");
    }
    g.view().create_directory_at(b(&root), "d/sub".into()).unwrap();
    let d = open(&mut g, &root, "d", OF::DIRECTORY, DF::READ).unwrap();
    let s = g.view().read_directory(b(&d)).unwrap();
    let mut names = Vec::new();
    while let Some(e) = g.view().read_directory_entry(b(&s)).unwrap() {
        // Removing what was already listed shifts nothing still to come.
        if names.len() % 3 == 0 && e.type_ == DescriptorType::RegularFile {
            g.view().unlink_file_at(b(&d), e.name.clone()).unwrap();
        }
        names.push((e.name, e.type_));
    }
    assert_eq!(names.len(), 601);
    assert!(names.windows(2).all(|w| w[0].0 < w[1].0), "stable byte order");
    assert_eq!(names[600], ("sub".to_string(), DescriptorType::Directory));
    assert!(g.view().read_directory_entry(b(&s)).unwrap().is_none());
}

/// A read-only view of a snapshot whose listings come in pages of at most
/// three entries, whatever was asked: short pages that are not the last.
struct ShortPages(packfs_core::Snapshot);

impl FileSystem for ShortPages {
    fn root(&self) -> Ino {
        self.0.root()
    }
    fn lookup(&self, dir: Ino, name: &str) -> packfs_core::Result<Ino> {
        self.0.lookup(dir, name)
    }
    fn metadata(&self, ino: Ino) -> packfs_core::Result<packfs_core::Metadata> {
        self.0.metadata(ino)
    }
    fn open(&self, dir: Ino, name: &str, opts: &packfs_core::OpenOptions) -> packfs_core::Result<Ino> {
        self.0.open(dir, name, opts)
    }
    fn open_ino(&self, ino: Ino) -> packfs_core::Result<()> {
        self.0.open_ino(ino)
    }
    fn close(&self, ino: Ino) {
        self.0.close(ino)
    }
    fn read_at(&self, ino: Ino, offset: u64, buf: &mut [u8]) -> packfs_core::Result<usize> {
        self.0.read_at(ino, offset, buf)
    }
    fn read_dir(&self, dir: Ino, after: Option<&str>, max: usize) -> packfs_core::Result<Vec<packfs_core::DirEntry>> {
        self.0.read_dir(dir, after, max.min(3))
    }
    fn readlink(&self, ino: Ino) -> packfs_core::Result<String> {
        self.0.readlink(ino)
    }
}

/// A page shorter than asked for is not the end of a listing: only an
/// empty one is (the trait promises up to `max` entries, no more).
#[test]
fn short_pages_do_not_end_a_listing() {
    let fs = MemFs::new();
    for i in 0..10 {
        fs.close(fs.open(fs.root(), &format!("f{i}"), &packfs_core::OpenOptions::create()).unwrap());
    }
    let mut g = rw(Arc::new(ShortPages(fs.snapshot())));
    let root = g.preopens().remove(0);
    let s = g.view().read_directory(b(&root)).unwrap();
    let mut n = 0;
    while g.view().read_directory_entry(b(&s)).unwrap().is_some() {
        n += 1;
    }
    assert_eq!(n, 10);
}

#[test]
fn hashes_identify_objects() {
    let mut g = rw(Arc::new(MemFs::new()));
    let root = g.preopens().remove(0);
    write_file(&mut g, &root, "a", b"");
    write_file(&mut g, &root, "b", b"");
    g.view().link_at(b(&root), PF::empty(), "a".into(), b(&root), "a2".into()).unwrap();
    let a = open(&mut g, &root, "a", OF::empty(), DF::READ).unwrap();
    let ha = hash(g.view().metadata_hash(b(&a)).unwrap());
    let at = |g: &mut Guest, p: &str| hash(g.view().metadata_hash_at(b(&root), PF::empty(), p.into()).unwrap());
    assert_eq!(at(&mut g, "a"), ha);
    assert_eq!(at(&mut g, "a2"), ha);
    assert_ne!(at(&mut g, "b"), ha);
    assert_eq!(at(&mut g, "."), hash(g.view().metadata_hash(b(&root)).unwrap()));
    let a2 = open(&mut g, &root, "a2", OF::empty(), DF::READ).unwrap();
    assert!(g.view().is_same_object(b(&a), b(&a2)).unwrap());
    assert!(!g.view().is_same_object(b(&a), b(&root)).unwrap());
    assert_eq!(g.view().stat(b(&a)).unwrap().link_count, 2);
}

/// `metadata-hash-at` right after `stat-at` or a listed entry answers from
/// that resolution, unless a change came between (see `recent.rs`).
#[test]
fn hash_after_stat_or_listing_sees_changes_in_between() {
    let mut g = rw(Arc::new(MemFs::new()));
    let root = g.preopens().remove(0);
    write_file(&mut g, &root, "a", b"");
    write_file(&mut g, &root, "b", b"");
    g.view().symlink_at(b(&root), "a".into(), "l".into()).unwrap();
    let fd_hash = |g: &mut Guest, p: &str| {
        let f = open(g, &root, p, OF::empty(), DF::READ).unwrap();
        hash(g.view().metadata_hash(b(&f)).unwrap())
    };
    let (ha, hb) = (fd_hash(&mut g, "a"), fd_hash(&mut g, "b"));
    let at = |g: &mut Guest, f: PF, p: &str| hash(g.view().metadata_hash_at(b(&root), f, p.into()).unwrap());
    let stat = |g: &mut Guest, f: PF, p: &str| g.view().stat_at(b(&root), f, p.into()).unwrap();

    stat(&mut g, PF::SYMLINK_FOLLOW, "l");
    assert_eq!(at(&mut g, PF::SYMLINK_FOLLOW, "l"), ha);
    stat(&mut g, PF::SYMLINK_FOLLOW, "l");
    assert_ne!(at(&mut g, PF::empty(), "l"), ha, "not following is another question");
    // wasi-libc's p2 order: the hash not following, then the stat following.
    assert_ne!(at(&mut g, PF::empty(), "l"), ha);
    assert_eq!(stat(&mut g, PF::SYMLINK_FOLLOW, "l").type_, DescriptorType::RegularFile);
    assert_eq!(at(&mut g, PF::empty(), "a"), ha);
    assert_eq!(stat(&mut g, PF::SYMLINK_FOLLOW, "a").type_, DescriptorType::RegularFile);
    stat(&mut g, PF::empty(), "a");
    g.view().rename_at(b(&root), "b".into(), b(&root), "a".into()).unwrap();
    assert_eq!(at(&mut g, PF::empty(), "a"), hb, "a rename in between is seen");
    stat(&mut g, PF::empty(), "a");
    g.view().unlink_file_at(b(&root), "a".into()).unwrap();
    assert_eq!(code(g.view().metadata_hash_at(b(&root), PF::empty(), "a".into())), ErrorCode::NoEntry);

    // Listing: each entry's hash without a second look, and an entry
    // removed after its batch was read is not answered from the batch.
    for i in 0..300 {
        write_file(&mut g, &root, &format!("f{i:03}"), b"");
    }
    let s = g.view().read_directory(b(&root)).unwrap();
    let mut seen = 0;
    while let Some(e) = g.view().read_directory_entry(b(&s)).unwrap() {
        if e.name == "f010" {
            g.view().unlink_file_at(b(&root), "f011".into()).unwrap();
        } else if e.name == "f011" {
            let r = g.view().metadata_hash_at(b(&root), PF::empty(), e.name.clone());
            assert_eq!(code(r), ErrorCode::NoEntry);
            continue;
        }
        let listed = at(&mut g, PF::empty(), &e.name);
        stat(&mut g, PF::empty(), "."); // the next look walks again
        assert_eq!(listed, at(&mut g, PF::empty(), &e.name), "{}", e.name);
        seen += 1;
    }
    assert_eq!(seen, 300, "299 files and the symlink");
}

#[test]
fn links_renames_and_removal() {
    let (x, y): (Arc<dyn FileSystem>, Arc<dyn FileSystem>) = (Arc::new(MemFs::new()), Arc::new(MemFs::new()));
    let mut g = Guest::new(
        PackFsCtx::builder().preopen("/x", x, Access::ReadWrite).preopen("/y", y, Access::ReadWrite).build(),
    );
    let p = g.preopens();
    let (x, y) = (&p[0], &p[1]);
    write_file(&mut g, x, "f", b"f");
    g.view().symlink_at(b(x), "f".into(), "l".into()).unwrap();
    // Across filesystems.
    assert_eq!(code(g.view().rename_at(b(x), "f".into(), b(y), "f".into())), ErrorCode::CrossDevice);
    assert_eq!(code(g.view().link_at(b(x), PF::empty(), "f".into(), b(y), "f".into())), ErrorCode::CrossDevice);
    // link-at follows a symlink when asked (wasmtime-wasi: invalid).
    g.view().link_at(b(x), PF::SYMLINK_FOLLOW, "l".into(), b(x), "hard".into()).unwrap();
    assert_eq!(g.view().stat_at(b(x), PF::empty(), "hard".into()).unwrap().type_, DescriptorType::RegularFile);
    g.view().link_at(b(x), PF::empty(), "l".into(), b(x), "hardlink".into()).unwrap();
    assert_eq!(g.view().stat_at(b(x), PF::empty(), "hardlink".into()).unwrap().type_, DescriptorType::SymbolicLink);
    // `.` and trailing slashes.
    assert_eq!(code(g.view().create_directory_at(b(x), ".".into())), ErrorCode::Exist);
    assert_eq!(code(g.view().unlink_file_at(b(x), ".".into())), ErrorCode::IsDirectory);
    assert_eq!(code(g.view().remove_directory_at(b(x), ".".into())), ErrorCode::Invalid);
    assert_eq!(code(g.view().unlink_file_at(b(x), "f/".into())), ErrorCode::NotDirectory);
    assert_eq!(code(g.view().rename_at(b(x), "f/".into(), b(x), "g".into())), ErrorCode::NotDirectory);
    assert_eq!(code(g.view().symlink_at(b(x), "t".into(), "f/".into())), ErrorCode::Exist);
    assert_eq!(code(g.view().symlink_at(b(x), "t".into(), "n/".into())), ErrorCode::NoEntry);
    g.view().create_directory_at(b(x), "d/".into()).unwrap();
    assert_eq!(code(g.view().unlink_file_at(b(x), "d/".into())), ErrorCode::IsDirectory);
    g.view().rename_at(b(x), "d/".into(), b(x), "e/".into()).unwrap();
    g.view().remove_directory_at(b(x), "e/".into()).unwrap();
    assert_eq!(code(g.view().link_at(b(x), PF::empty(), ".".into(), b(x), "dirlink".into())), ErrorCode::NotPermitted);
}

#[test]
fn unlinked_file_lives_until_its_last_handle() {
    let fs = Arc::new(MemFs::new());
    let mut g = rw(fs.clone());
    let root = g.preopens().remove(0);
    let base = fs.usage().inodes;
    let f = open(&mut g, &root, "f", CREATE, DF::READ | DF::WRITE).unwrap();
    let r = g.view().read_via_stream(b(&f), 0).unwrap();
    g.view().write(b(&f), b"kept".to_vec(), 0).unwrap();
    g.view().unlink_file_at(b(&root), "f".into()).unwrap();
    assert_eq!(fs.usage().inodes, base + 1);
    D::drop(&mut g.view(), f).unwrap();
    // The stream still pins it.
    assert_eq!(&g.table.get_mut(&r).unwrap().read(10).unwrap()[..], b"kept");
    g.table.delete(r).unwrap();
    assert_eq!(fs.usage().inodes, base);
}

#[test]
fn snapshot_preopen_is_read_only_by_nature() {
    let fs = MemFs::new();
    let f = fs.open(fs.root(), "f", &packfs_core::OpenOptions::create()).unwrap();
    fs.close(f);
    let mut g = rw(Arc::new(fs.snapshot()));
    let root = g.preopens().remove(0);
    assert_eq!(code(open(&mut g, &root, "f", OF::empty(), DF::WRITE)), ErrorCode::ReadOnly);
    assert_eq!(code(g.view().create_directory_at(b(&root), "d".into())), ErrorCode::ReadOnly);
    assert!(open(&mut g, &root, "f", OF::empty(), DF::READ).is_ok());
}

/// A hostile guest opening directory streams without end: each holds a
/// batch of names, so past [`MAX_DIR_STREAMS`] the next is refused with
/// `insufficient-memory`, and dropping one makes room.
#[test]
fn a_guest_holds_a_bounded_number_of_directory_streams() {
    let fs = Arc::new(MemFs::new());
    for i in 0..300 {
        fs.mkdir(fs.root(), &format!("entry-{i:03}"), 0o755).unwrap();
    }
    let mut g = rw(fs);
    let root = g.preopens().remove(0);
    let mut streams = Vec::new();
    for _ in 0..MAX_DIR_STREAMS {
        let s = g.view().read_directory(b(&root)).unwrap();
        // Each fills its first batch.
        assert!(g.view().read_directory_entry(b(&s)).unwrap().is_some());
        streams.push(s);
    }
    assert_eq!(code(g.view().read_directory(b(&root))), ErrorCode::InsufficientMemory);
    let gone = streams.pop().unwrap();
    packfs_host::p2::bindings::types::HostDirectoryEntryStream::drop(&mut g.view(), gone).unwrap();
    let s = g.view().read_directory(b(&root)).unwrap();
    assert!(g.view().read_directory_entry(b(&s)).unwrap().is_some());
    // Another guest given a clone of the same table has a bound of its own.
    let mut other = Guest::new(g.ctx.clone());
    let root = other.preopens().remove(0);
    let s = other.view().read_directory(b(&root)).unwrap();
    assert!(other.view().read_directory_entry(b(&s)).unwrap().is_some());
}
