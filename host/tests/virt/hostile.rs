//! What damaged input and a greedy guest make of a `packfs virt`
//! component: an error the guest sees, never a trap nor a host that grows.

use super::*;
use packfs_core::mem::Quota;
use packfs_core::pack::PackOptions;

const TEXT: &[u8] = b"hello from inside the component\n";

fn toolbox() -> Vec<u8> {
    std::fs::read(support::rust_guest("toolbox", "wasm32-wasip2")).unwrap()
}

/// A pack of `/a.txt` holding [`TEXT`].
fn pack(options: PackOptions) -> Vec<u8> {
    let fs = MemFs::new();
    packfs_core::write_file(&fs, "a.txt", TEXT).unwrap();
    let mut out = Vec::new();
    options.write(&fs.snapshot(), &mut out).unwrap();
    out
}

/// Runs `component` on wasmtime-wasi with `args`: its exit status (an
/// error if it trapped), stdout and stderr.
fn run(component: &[u8], args: &[&str]) -> (wasmtime::Result<i32>, String, String) {
    let (status, out, err) = run_raw(component, args);
    (status, String::from_utf8_lossy(&out).into_owned(), err)
}

/// [`run`], stdout as bytes.
fn run_raw(component: &[u8], args: &[&str]) -> (wasmtime::Result<i32>, Vec<u8>, String) {
    let component = Component::new(engine(), component).unwrap();
    let (stdout, stderr) = (MemoryOutputPipe::new(4 << 20), MemoryOutputPipe::new(1 << 20));
    let mut b = WasiCtx::builder();
    b.stdout(stdout.clone()).stderr(stderr.clone()).args(args);
    let status = oracle::P2::new(engine(), &component).and_then(|o| o.run(b.build()));
    (status, stdout.contents().to_vec(), String::from_utf8_lossy(&stderr.contents()).into_owned())
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    let at: Vec<usize> =
        haystack.windows(needle.len()).enumerate().filter(|(_, w)| *w == needle).map(|(i, _)| i).collect();
    assert_eq!(at.len(), 1, "found {} times", at.len());
    at[0]
}

#[test]
fn a_damaged_embedded_pack_is_an_error_the_guest_sees_never_a_trap() {
    let pack = pack(PackOptions::new());
    let good = Virt::new().mount("/", Source::Pack { bytes: pack.clone(), overlay: None }).build(&toolbox()).unwrap();
    let cat = ["toolbox", "cat", "/a.txt"];
    let (status, out, err) = run(&good, &cat);
    assert_eq!((status.unwrap(), out.as_bytes()), (0, TEXT), "{err}");

    // The index damaged (the trailer's last byte): the namespace does not
    // open, and the first call says so.
    let at = find(&good, &pack);
    let mut bad = good.clone();
    bad[at + pack.len() - 1] ^= 0x55;
    let (status, out, err) = run(&bad, &cat);
    assert_eq!(status.expect("an exit status, not a trap"), 1, "{err}");
    assert!(out.is_empty() && err.starts_with("toolbox: cat /a.txt: ") && err.contains("errno 29"), "{err}");

    // The file's bytes damaged: the pin's digest refuses them (EIO), and
    // the rest of the tree still answers.
    let mut bad = good.clone();
    bad[find(&good, TEXT)] ^= 0x01;
    let (status, out, err) = run(&bad, &["toolbox", "ls", "/", "cat", "/a.txt"]);
    assert_eq!(status.expect("an exit status, not a trap"), 1, "{err}");
    assert_eq!(out, "a.txt\n");
    assert!(err.starts_with("toolbox: cat /a.txt: ") && err.contains("errno 29"), "{err}");

    // A preview1 guest too: wasmtime's adapter asks each preopen's type
    // first, and traps if that fails.
    let p1 = std::fs::read(support::rust_guest("toolbox", "wasm32-wasip1")).unwrap();
    let good = Virt::new().mount("/", Source::Pack { bytes: pack.clone(), overlay: None }).build(&p1).unwrap();
    let mut bad = good.clone();
    let at = find(&good, &pack);
    bad[at + pack.len() - 1] ^= 0x55;
    let (status, out, err) = run(&bad, &cat);
    assert_eq!(status.expect("an exit status, not a trap"), 1, "{err}");
    assert!(out.is_empty() && err.starts_with("toolbox: cat /a.txt: ") && err.contains("errno 29"), "{err}");
}

#[test]
fn a_mount_holds_the_guests_writes_within_its_limits() {
    let limits = Quota { max_bytes: Some(256 << 10), max_inodes: Some(4) };
    let virt = Virt::new().mount("/tmp", Source::Mem(limits)).build(&toolbox()).unwrap();
    // 1 MiB into a mount of 256 KiB fails, after the small write took (a
    // failed stream write is EIO to wasi-libc, as on PackFS's own host).
    let (status, out, err) =
        run(&virt, &["toolbox", "write", "/tmp/small", "hi", "cat", "/tmp/small", "fill", "/tmp/big", "1"]);
    assert_eq!(status.unwrap(), 1, "{err}");
    assert_eq!(out, "hi");
    assert!(err.starts_with("toolbox: fill /tmp/big: Uncategorized (errno 29)"), "{err}");
    // A fifth inode: EDQUOT.
    let (status, _, err) = run(&virt, &["toolbox", "mkdir", "/tmp/a/b/c/d"]);
    assert_eq!(status.unwrap(), 1, "{err}");
    assert!(err.starts_with("toolbox: mkdir /tmp/a/b/c/d: QuotaExceeded"), "{err}");
    // The root, not the limited mount, takes the same write.
    let (status, _, err) = run(&virt, &["toolbox", "fill", "/big", "1"]);
    assert_eq!(status.unwrap(), 0, "{err}");
}

#[test]
fn what_packfs_virt_cannot_serve_is_refused_with_the_reason() {
    let no_digests = Virt::new()
        .mount("/", Source::Pack { bytes: pack(PackOptions::new().digests(false)), overlay: None })
        .build(&toolbox());
    assert!(format!("{:#}", no_digests.unwrap_err()).contains("no digest table"));
    let damaged =
        Virt::new().mount("/", Source::Pack { bytes: b"not a pack".to_vec(), overlay: None }).build(&toolbox());
    assert!(damaged.is_err());
    for bad in ["relative", "/a/../b", "/a//b", ""] {
        let e = Virt::new().mount(bad, Source::Mem(Quota::default())).build(&toolbox()).unwrap_err();
        assert!(format!("{e:#}").contains("not an absolute path"), "{bad}: {e:#}");
    }
    let twice = Virt::new().mount("/x", Source::Mem(Quota::default())).mount("/x", Source::Mem(Quota::default()));
    assert!(format!("{:#}", twice.build(&toolbox()).unwrap_err()).contains("mounted twice"));
    assert!(Virt::new().build(b"\0asm garbage").is_err());
    // A module that imports no WASI has no files to virtualize.
    let bare = wat::parse_str(r#"(module (memory (export "memory") 1) (func (export "_start")))"#).unwrap();
    let e = Virt::new().build(&bare).unwrap_err();
    assert!(format!("{e:#}").contains("no wasi:filesystem"), "{e:#}");
    // --save needs a run to save after.
    let reactor = wat::parse_str(
        r#"(module (import "wasi_snapshot_preview1" "fd_close" (func (param i32) (result i32)))
           (memory (export "memory") 1) (func (export "f")))"#,
    )
    .unwrap();
    let mem = || Source::Mem(Quota::default());
    let e = Virt::new().mount("/", mem()).save("/out/x.pack").build(&reactor).unwrap_err();
    assert!(format!("{e:#}").contains("needs a command"), "{e:#}");
    // It saves the namespace, which only mounts make.
    let e = Virt::new().preopen("/", mem()).save("/out/x.pack").build(&toolbox()).unwrap_err();
    assert!(format!("{e:#}").contains("needs a mount"), "{e:#}");
    // The namespace is preopened at `/`: no other preopen may be.
    let e = Virt::new().mount("/a", mem()).preopen("/", mem()).build(&toolbox()).unwrap_err();
    assert!(format!("{e:#}").contains("preopened twice"), "{e:#}");
}

#[test]
fn a_pack_whose_data_is_not_what_its_digest_table_says_is_refused() {
    // One incompressible file, stored raw; its bytes replaced and its
    // checksum (xxh3, in the index) made to match, the index resealed: the
    // pack opens and every checksum holds, but the digest table does not.
    let old: Vec<u8> = (0..128u32).map(|i| (i * 97 % 251) as u8).collect();
    let new: Vec<u8> = old.iter().map(|b| b ^ 0x20).collect();
    let fs = MemFs::new();
    packfs_core::write_file(&fs, "blob.bin", &old).unwrap();
    let mut pack = Vec::new();
    PackOptions::new().write(&fs.snapshot(), &mut pack).unwrap();
    let at = find(&pack, &old);
    pack[at..at + old.len()].copy_from_slice(&new);
    let sum = |b: &[u8]| xxhash_rust::xxh3::xxh3_64(b).to_le_bytes();
    let at = find(&pack, &sum(&old));
    pack[at..at + 8].copy_from_slice(&sum(&new));
    packfs_core::pack::fuzzing::reseal(&mut pack);
    let opened =
        packfs_core::pack::PackFs::open_with(pack.clone(), packfs_core::pack::ReadOptions::new().verify_on_read(true));
    let read = opened.map(|p| packfs_core::read_file(&p, "blob.bin"));
    assert_eq!(read.unwrap().unwrap(), new, "the checksums hold");
    let e = Virt::new().mount("/", Source::Pack { bytes: pack, overlay: None }).build(&toolbox()).unwrap_err();
    assert!(format!("{e:#}").contains("do not match its digest table"), "{e:#}");
}

#[test]
fn a_guest_cannot_reach_the_virtual_filesystems_own_interface_nor_the_hosts_files() {
    let component = |import: &str| wat::parse_str(format!(r#"(component (import "{import}" (instance)))"#)).unwrap();
    let e = Virt::new().build(&component("packfs:virt/control")).unwrap_err();
    assert!(format!("{e:#}").contains("the virtual filesystem's own interface"), "{e:#}");
    // A version the virtual filesystem cannot serve would be the host's.
    for import in ["wasi:filesystem/types@0.2.12-x", "wasi:filesystem/preopens@1.0.0", "wasi:filesystem/types"] {
        let e = Virt::new().build(&component(import)).unwrap_err();
        assert!(format!("{e:#}").contains("must serve and cannot in that version"), "{import}: {e:#}");
    }
    // 0.2's sockets hand out wasi:io resources: one the component cannot
    // serve would hand out the host's. (0.3's hand out none: the host's.)
    let two = |a: &str, b: &str| {
        wat::parse_str(format!(r#"(component (import "{a}" (instance)) (import "{b}" (instance)))"#)).unwrap()
    };
    for import in ["wasi:sockets/tcp@0.2.0-rc", "wasi:sockets/udp@0.2.12-rc", "wasi:sockets/ip-name-lookup"] {
        let e = Virt::new().build(&two("wasi:filesystem/types@0.2.0", import)).unwrap_err();
        assert!(format!("{e:#}").contains("must serve and cannot in that version"), "{import}: {e:#}");
    }
    // So do HTTP's bodies and futures.
    for import in ["wasi:http/types@0.2.0-rc-2023-11-10", "wasi:http/outgoing-handler@0.2.13-x", "wasi:http/types"] {
        let e = Virt::new().build(&two("wasi:filesystem/types@0.2.0", import)).unwrap_err();
        assert!(format!("{e:#}").contains("must serve and cannot in that version"), "{import}: {e:#}");
    }
    let e = Virt::new().build(&two("wasi:sockets/tcp@0.2.0", "wasi:http/types@0.2.0")).unwrap_err();
    assert!(format!("{e:#}").contains("does not serve both yet"), "{e:#}");
    let e = Virt::new().build(&component("packfs:virt/http-bridge")).unwrap_err();
    assert!(format!("{e:#}").contains("the virtual filesystem's own interface"), "{e:#}");
    // Both guests take the request and outparam types from wasi:http.
    let http_types = |version: &str| {
        format!(
            r#"(component
  (import "wasi:filesystem/types@0.2.0" (instance))
  (import "wasi:http/types@{version}" (instance $t
    (export "incoming-request" (type (sub resource)))
    (export "response-outparam" (type (sub resource)))))
  (alias export $t "incoming-request" (type $r))
  (alias export $t "response-outparam" (type $o))"#
        )
    };
    // A middleware (a guest calling the next incoming handler, its request
    // one of the component's own resources) is not served yet: refused,
    // not a panic while composing.
    let middleware = wat::parse_str(format!(
        r#"{}
  (import "wasi:http/incoming-handler@0.2.12" (instance
    (export "handle" (func (param "request" (own $r)) (param "response-out" (own $o)))))))"#,
        http_types("0.2.12")
    ))
    .unwrap();
    let e = Virt::new().build(&middleware).unwrap_err();
    assert!(format!("{e:#}").contains("does not serve a guest an incoming handler"), "{e:#}");
    // An incoming handler exporting more than `handle`: the bridge serves
    // `handle` alone, so the rest would be dropped without a word.
    let handler = wat::parse_str(format!(
        r#"{}
  (core module $m (func (export "h") (param i32 i32)) (func (export "x")))
  (core instance $i (instantiate $m))
  (func $h (param "request" (own $r)) (param "response-out" (own $o)) (canon lift (core func $i "h")))
  (func $x (canon lift (core func $i "x")))
  (instance $out (export "handle" (func $h)) (export "extra" (func $x)))
  (export "wasi:http/incoming-handler@0.2.0" (instance $out)))"#,
        http_types("0.2.0")
    ))
    .unwrap();
    let Err(e) = Virt::new().build(&handler) else { panic!("composed") };
    assert!(format!("{e:#}").contains("more than `handle`"), "{e:#}");
    // So is any import left to the host that names the component's own
    // types (a descriptor, a stream), however deep in its types.
    let takes_descriptor = wat::parse_str(
        r#"(component
  (import "wasi:filesystem/types@0.2.0" (instance $t (export "descriptor" (type (sub resource)))))
  (alias export $t "descriptor" (type $d))
  (type $deep (list (option (tuple u8 (own $d)))))
  (import "my:pkg/files" (instance (export "take" (func (param "d" $deep))))))"#,
    )
    .unwrap();
    let e = Virt::new().build(&takes_descriptor).unwrap_err();
    assert!(format!("{e:#}").contains("names resources of wasi:filesystem/types@0.2"), "{e:#}");
    // The component's `accept` (which takes the host's request) is never
    // plugged into a guest's import of that name: that stays the host's.
    let guest = wat::parse_str(
        r#"(component (import "wasi:filesystem/types@0.2.0" (instance)) (import "wasi:http/types@0.2.0" (instance))
             (import "accept" (func)))"#,
    )
    .unwrap();
    let virt = Virt::new().build(&guest).unwrap();
    let ty = Component::new(engine(), &virt).unwrap().component_type();
    let imports: Vec<String> = ty.imports(engine()).map(|(name, _)| name.to_string()).collect();
    assert!(imports.iter().any(|i| i == "accept"), "{imports:?}");
}

/// Imports a guest may leave to the host, each beside
/// `wasi:filesystem/types`: those that compose, and those refused with
/// the reason (each of these panicked in wac-graph, or composed wrongly).
#[test]
fn a_guests_own_imports_compose_or_are_refused_never_a_panic() {
    const FS: &str = r#"(import "wasi:filesystem/types@0.2.0" (instance $fs (export "descriptor" (type (sub resource)))))
  (alias export $fs "descriptor" (type $d))"#;
    const HOST_R: &str = r#"(import "my:pkg/t" (instance $t (export "r" (type (sub resource)))))
  (alias export $t "r" (type $r))"#;
    const WAC: &str = "wac-graph could not compose";
    let build = |body: &str| Virt::new().build(&wat::parse_str(format!("(component {FS} {body})")).unwrap());
    let composes = [
        // A host resource its instance exports, as WIT makes them.
        format!(
            r#"{HOST_R} (import "my:pkg/use" (instance (export "r" (type $r2 (eq $r))) (export "f" (func (param "x" (own $r2))))))"#
        ),
        // A value type of a plugged interface (matched by structure).
        r#"(import "wasi:clocks/monotonic-clock@0.2.0" (instance $c (type $u u64) (export "duration" (type (eq $u)))))
  (alias export $c "duration" (type $dur))
  (import "my:pkg/timer" (instance (export "duration" (type $d2 (eq $dur))) (export "sleep" (func (param "d" $d2)))))"#
            .to_string(),
        // A type import equal to a host instance's resource.
        format!(r#"{HOST_R} (import "r2" (type (eq $r)))"#),
        // A WIT `use` of a record holding a resource of another interface.
        r#"(import "my:pkg/a" (instance $a (export "r" (type $ar (sub resource)))
    (type $rr (record (field "x" (own $ar)))) (export "rec" (type (eq $rr)))))
  (alias export $a "rec" (type $rec))
  (import "my:pkg/b" (instance (export "rec" (type $r2 (eq $rec))) (export "f" (func (param "x" $r2)))))"#
            .to_string(),
        // A top-level resource, owned by a top-level function.
        r#"(import "r" (type $r (sub resource))) (import "f" (func (param "x" (own $r))))"#.to_string(),
    ];
    for body in &composes {
        assert!(build(body).is_ok(), "{body}: {:#}", build(body).unwrap_err());
    }
    let refused = [
        // The component's own resource, at any depth.
        (r#"(type $deep (list (option (tuple u8 (own $d))))) (import "my:pkg/files" (instance (export "take" (func (param "d" $deep)))))"#.to_string(), "names resources of wasi:filesystem/types"),
        (r#"(import "my:pkg/x" (instance (export "descriptor" (type $d2 (eq $d))) (type $rec (record (field "d" (own $d2)))) (export "rec" (type $r2 (eq $rec))) (export "f" (func (param "r" $r2)))))"#.to_string(), "names resources of wasi:filesystem/types"),
        (r#"(import "f" (func (param "x" (borrow $d))))"#.to_string(), "names resources of wasi:filesystem/types"),
        // Shapes wac-graph panics on (a host resource named outside the
        // scope that exports it, or before it; an instance type two
        // imports share): its panic, reported.
        (format!(r#"{HOST_R} (type $deep (list (own $r))) (import "my:pkg/files" (instance (export "take" (func (param "d" $deep)))))"#), WAC),
        (format!(r#"{HOST_R} (import "f" (func (param "x" (own $r))))"#), WAC),
        (r#"(import "r" (type $r (sub resource))) (import "f" (func (param "x" (borrow $r))))"#.to_string(), WAC),
        (r#"(import "my:pkg/x" (instance (export "r" (type $r (sub resource))) (export "i" (instance (export "f" (func (param "x" (own $r))))))))"#.to_string(), WAC),
        (format!(r#"{HOST_R} (import "my:pkg/x" (instance (export "f" (func (param "x" (own $r)))) (export "r" (type (eq $r)))))"#), WAC),
        (r#"(type $T (instance (export "r" (type (sub resource))) (type $u u32) (export "n" (type (eq $u)))))
  (import "a:b/x" (instance (type $T))) (import "a:b/y" (instance (type $T)))"#.to_string(), WAC),
        // A guest's own import typed as the host's exit, which would skip
        // the save that the component's exit makes first.
        (r#"(type $E (instance (export "exit" (func (param "status" (result))))))
  (import "wasi:cli/exit@0.2.0" (instance (type $E))) (import "my:pkg/e" (instance (type $E)))"#.to_string(), "cannot tell the two apart"),
    ];
    for (body, why) in &refused {
        let e = build(body).unwrap_err();
        assert!(format!("{e:#}").contains(why), "{body}: {e:#}");
    }
}

#[test]
fn an_exit_saves_first_and_a_save_writes_only_its_own_files() {
    let virt = Virt::new().mount("/", Source::Mem(Quota::default())).save(SAVE).build(&toolbox()).unwrap();
    let path = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(path.path(), &virt).unwrap();
    // Rust's `exit(3)` on WASI 0.2 is `exit(err)`: status 1, as natively.
    for (code, status) in [("0", 0), ("3", 1)] {
        let out = tempfile::tempdir().unwrap();
        // What an earlier save's temporary name was: never written nor removed.
        let bystander = out.path().join("after.pack.packfs-saving");
        std::fs::write(&bystander, "mine").unwrap();
        let (got, _, err) =
            wasmtime_wasi_args(path.path(), &["toolbox", "write", "/x", "hi", "exit", code], out.path());
        assert_eq!(got, status, "{err}");
        let tree = saved(out.path(), "exit");
        assert!(matches!(tree.get("/x"), Some(support::trees::Entry::File(b)) if b == b"hi"), "{tree:?}");
        assert_eq!(std::fs::read(&bystander).unwrap(), b"mine");
        let names: Vec<_> = std::fs::read_dir(out.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "only the pack saved and the bystander: {names:?}");
    }
}

#[test]
fn a_file_spliced_to_stdout_arrives_whole() {
    // 64 KiB splices from a file's stream to the host's stdout, which
    // takes at most 4 KiB a blocking write: 1 MiB arrives, byte for byte.
    let virt = Virt::new().mount("/", Source::Mem(Quota::default())).build(&toolbox()).unwrap();
    let (status, out, err) = run_raw(&virt, &["toolbox", "fill", "/big", "1", "splice", "/big"]);
    assert_eq!(status.expect("no trap"), 0, "{err}");
    let want: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    assert!(out == want, "{} bytes, not the file's", out.len());
}

#[test]
fn a_mount_layout_that_cannot_open_is_refused_when_the_component_is_made() {
    // `/new` cannot be made in a read-only pack, nor `/a.txt/x` under a
    // file: as `packfs run` refuses them, not a component whose every call
    // then fails.
    let pack = pack(PackOptions::new());
    let ro = Source::Pack { bytes: pack.clone(), overlay: None };
    let e = Virt::new().mount("/", ro).mount("/new/x", Source::Mem(Quota::default())).build(&toolbox()).unwrap_err();
    assert!(format!("{e:#}").contains("read-only"), "{e:#}");
    let rw = Source::Pack { bytes: pack, overlay: Some(Quota::default()) };
    let e = Virt::new().mount("/", rw).mount("/a.txt/x", Source::Mem(Quota::default())).build(&toolbox()).unwrap_err();
    assert!(format!("{e:#}").contains("not a directory"), "{e:#}");
}

/// Runs `component` on wasmtime-wasi with the directory `out` preopened
/// at `/out`: status, stdout, stderr.
fn run_with_out(component: &[u8], args: &[&str], out: &Path) -> (i32, String, String) {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), component).unwrap();
    wasmtime_wasi_args(file.path(), args, out)
}

#[test]
fn a_pack_in_the_hosts_file_is_the_pinned_one_or_an_error_the_guest_sees() {
    let good = pack(PackOptions::new());
    let other = {
        let fs = MemFs::new();
        packfs_core::write_file(&fs, "a.txt", b"another pack altogether\n").unwrap();
        let mut out = Vec::new();
        PackOptions::new().write(&fs.snapshot(), &mut out).unwrap();
        out
    };
    let host_pack = |overlay| Source::HostPack { host_path: "/out/app.pack".into(), digest: digest(&good), overlay };
    let virt = Virt::new().mount("/", host_pack(None)).build(&toolbox()).unwrap();
    let out = tempfile::tempdir().unwrap();
    let at = out.path().join("app.pack");
    let cat = ["toolbox", "ls", "/", "cat", "/a.txt"];

    std::fs::write(&at, &good).unwrap();
    let (status, stdout, err) = run_with_out(&virt, &cat, out.path());
    assert_eq!((status, stdout.as_bytes()), (0, [b"a.txt\n", TEXT].concat().as_slice()), "{err}");
    // Written over, with an overlay: the host's file is never written.
    let writable = Virt::new().mount("/", host_pack(Some(Quota::default()))).build(&toolbox()).unwrap();
    let (status, stdout, err) =
        run_with_out(&writable, &["toolbox", "write", "/a.txt", "mine", "cat", "/a.txt"], out.path());
    assert_eq!((status, stdout.as_str()), (0, "mine"), "{err}");
    assert_eq!(std::fs::read(&at).unwrap(), good);

    // Another pack at the path, none, a truncated one, a directory: the
    // namespace does not open, and the first call says so; no trap.
    let mut bad_bytes = good.clone();
    bad_bytes[find(&good, TEXT)] ^= 0x01;
    for (what, put) in [
        ("another pack", Some(other.clone())),
        ("no file", None),
        ("a truncated pack", Some(good[..good.len() - 1].to_vec())),
        ("an empty file", Some(Vec::new())),
    ] {
        let _ = std::fs::remove_file(&at);
        if let Some(bytes) = put {
            std::fs::write(&at, bytes).unwrap();
        }
        let (status, stdout, err) = run_with_out(&virt, &cat, out.path());
        assert_eq!(status, 1, "{what}: {err}");
        assert!(stdout.is_empty() && err.starts_with("toolbox: ls /: "), "{what}: {stdout:?} {err}");
    }
    std::fs::remove_file(&at).unwrap();
    std::fs::create_dir(&at).unwrap();
    let (status, _, err) = run_with_out(&virt, &cat, out.path());
    assert!(status == 1 && err.starts_with("toolbox: ls /: "), "a directory: {err}");
    std::fs::remove_dir(&at).unwrap();

    // The same index over other data: it opens, and the file whose bytes
    // differ from the digest table is EIO; the listing still answers.
    std::fs::write(&at, &bad_bytes).unwrap();
    let (status, stdout, err) = run_with_out(&virt, &cat, out.path());
    assert_eq!((status, stdout.as_str()), (1, "a.txt\n"), "{err}");
    assert!(err.starts_with("toolbox: cat /a.txt: ") && err.contains("errno 29"), "{err}");
}

#[test]
fn a_host_directory_passed_through_is_all_the_guest_reaches_of_the_hosts() {
    let out = tempfile::tempdir().unwrap();
    for d in ["rw", "ro"] {
        std::fs::create_dir(out.path().join(d)).unwrap();
        std::fs::write(out.path().join(d).join("file"), d).unwrap();
    }
    std::fs::write(out.path().join("secret"), "not yours").unwrap();
    let virt = Virt::new()
        .mount("/", Source::Mem(Quota::default()))
        .preopen("/rw", Source::HostDir { host_path: "/out/rw".into(), read_only: false })
        .preopen("/ro", Source::HostDir { host_path: "/out/ro/".into(), read_only: true })
        .build(&toolbox())
        .unwrap();
    let run = |args: &[&str]| run_with_out(&virt, &[&["toolbox"], args].concat(), out.path());

    // Read and written through, as the host serves them.
    let (status, stdout, err) = run(&["cat", "/ro/file", "write", "/rw/new", "hi", "cat", "/rw/new", "ls", "/rw"]);
    assert_eq!((status, stdout.as_str()), (0, "rohifile\nnew\n"), "{err}");
    assert_eq!(std::fs::read(out.path().join("rw/new")).unwrap(), b"hi");

    // Nothing beside them: the host's preopen they are in is not the guest's.
    for path in ["/rw/../secret", "/ro/../secret", "/out/secret", "/rw/../../secret"] {
        let (status, _, err) = run(&["cat", path]);
        assert_eq!(status, 1, "{path}: {err}");
    }
    // The read-only one refuses every change, and is left as it was.
    for change in [
        &["write", "/ro/file", "x"][..],
        &["write", "/ro/new", "x"],
        &["append", "/ro/file", "x"],
        &["mkdir", "/ro/d"],
        &["rm", "/ro/file"],
        &["mv", "/ro/file", "/ro/moved"],
        &["mv", "/rw/new", "/ro/moved"],
        &["mv", "/ro/file", "/rw/moved"],
    ] {
        let (status, _, err) = run(change);
        assert_eq!(status, 1, "{change:?}: {err}");
        assert!(err.contains("PermissionDenied") || err.contains("errno 63"), "{change:?}: {err}");
    }
    let names: Vec<_> = std::fs::read_dir(out.path().join("ro")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["file"]);
    assert_eq!(std::fs::read(out.path().join("ro/file")).unwrap(), b"ro");
    // Between PackFS's tree and the host's, a rename is across devices.
    let (status, _, err) = run(&["write", "/x", "mine", "mv", "/x", "/rw/x"]);
    assert_eq!(status, 1, "{err}");
    assert!(err.starts_with("toolbox: mv /x: CrossesDevices"), "{err}");
    // A host directory that is not there: its preopen answers with the error.
    let missing = Virt::new()
        .preopen("/m", Source::HostDir { host_path: "/out/missing".into(), read_only: false })
        .build(&toolbox())
        .unwrap();
    let (status, _, err) = run_with_out(&missing, &["toolbox", "ls", "/m"], out.path());
    assert!(status == 1 && err.starts_with("toolbox: ls /m: "), "{err}");
    // Only as a preopen of its own: it is not PackFS's, so not mounted.
    let e = Virt::new()
        .mount("/m", Source::HostDir { host_path: "/out/rw".into(), read_only: false })
        .build(&toolbox())
        .unwrap_err();
    assert!(format!("{e:#}").contains("preopened on its own"), "{e:#}");
}

/// `p2_script` ops on `/` (slot 0: `dir:/out/rw`) and `/ro` (slot 1:
/// `dir-ro:/out/ro`): every change to `/ro`, through its directory, a
/// subdirectory and a file opened from it (with the empty path too, which
/// jco's shim takes as the file itself), every open that could write;
/// then a file made in `/`.
pub(crate) const RO_ATTACK: &[&str] = &[
    // the preopen itself
    "times|1|1.0|1.0",
    "size|1|0",
    "write|1|0|5|7|5",
    "append|1|5|7|5",
    "mkdir|1|newdir",
    "rmdir|1|sub",
    "unlink|1|f.txt",
    "rename|1|f.txt|1|g.txt",
    "link|1|f.txt|1|h.txt",
    "symlink|1|f.txt|s",
    "timesat|1|f|f.txt|1.0|1.0",
    "timesat|1|n|f.txt|1.0|1.0",
    "timesat|1|f||1.0|1.0",
    "timesat|1|f|.|1.0|1.0",
    "timesat|1|f|sub|1.0|1.0",
    // opens with every flag that could write
    "open|2|1|f|c|r|new1",
    "open|2|1|f|t|r|f.txt",
    "open|2|1|f|e|r|f.txt",
    "open|2|1|f|ce|r|new2",
    "open|2|1|f||w|f.txt",
    "open|2|1|f||rw|f.txt",
    "open|2|1|f||m|sub",
    "open|2|1|f|d|m|sub",
    "open|2|1|f|d|rm|sub",
    "open|2|1|f|dt|r|sub",
    "open|2|1|f|dc|r|new3",
    "open|2|1|n|t|r|f.txt",
    "open|2|1|f|t||f.txt",
    // a file opened read-only, every change through it
    "open|3|1|f||r|f.txt",
    "write|3|0|5|7|5",
    "append|3|5|7|5",
    "size|3|0",
    "times|3|1.0|1.0",
    "timesat|3|f||1.0|1.0",
    "timesat|3|f|.|1.0|1.0",
    "unlink|3|",
    "unlink|3|.",
    "rmdir|3|",
    "mkdir|3|x",
    "symlink|3|x|",
    "rename|3||1|moved",
    "rename|1|f.txt|3|",
    "link|3||1|linked",
    "link|1|f.txt|3|",
    "open|4|3|f|t|r|",
    "open|4|3|f|c|r|",
    "open|4|3|f||m|",
    "sync|3",
    "syncdata|3",
    "advise|3",
    // a subdirectory opened with mutate-directory dropped
    "open|5|1|f|d|r|sub",
    "flags|5",
    "mkdir|5|x",
    "unlink|5|in.txt",
    "rename|5|in.txt|1|out.txt",
    "rename|1|f.txt|5|in2.txt",
    "link|5|in.txt|1|out2.txt",
    "timesat|5|f|in.txt|1.0|1.0",
    "times|5|1.0|1.0",
    "open|6|5|f|t|r|in.txt",
    "open|6|5|f||r|in.txt",
    "write|6|0|5|7|5",
    "size|6|0",
    "times|6|1.0|1.0",
    "flags|1",
    "flags|3",
    "sync|1",
    "syncdata|1",
    "list|1|100",
    "open|7|0|f|c|rw|made.txt",
    "write|7|0|5|7|5",
];

/// [`p2_script`](../../../guest-tests/src/bin/p2_script.rs) ops on the
/// `dir:` preopen (slot 0, the host's `out/rw`) that try to reach its
/// sibling `out/ro` with `..`, directly and through a symlink: each must
/// fail, on every host (the host's confinement is the passthrough's).
pub(crate) const ESCAPES: &[&str] = &[
    "open|8|0|f||r|../ro/f.txt",
    "open|8|0|f|d|r|..",
    "open|8|0|f|c|rw|../ro/planted",
    "statat|0|f|../ro/f.txt",
    "readlink|0|../ro/f.txt",
    "unlink|0|../ro/f.txt",
    "mkdir|0|../ro/evil",
    "rename|0|made.txt|0|../ro/moved",
    "symlink|0|../ro|escape",
    "open|8|0|f|d|r|escape",
    "open|8|0|f||r|escape/f.txt",
    "statat|0|f|escape/f.txt",
];

/// The one op of [`ESCAPES`] that succeeds: making the symlink, which
/// reaches nothing.
pub(crate) const MAKES_LINK: &str = "symlink|0|../ro|escape";

/// Each line of `stdout` that reports one of [`ESCAPES`] but
/// [`MAKES_LINK`] and is not an error.
pub(crate) fn escaped(stdout: &str) -> Vec<&str> {
    let op_of = |l: &str| l.split_once(' ').and_then(|(_, r)| r.split_once(": ")).map(|(op, _)| op.to_string());
    let report = |l: &&str| op_of(l).is_some_and(|op| ESCAPES.contains(&op.as_str()) && op != MAKES_LINK);
    stdout.lines().filter(report).filter(|l| !l.contains(": err ")).collect()
}

/// The directories [`RO_ATTACK`] runs on, under `out`.
pub(crate) fn ro_attack_dirs(out: &Path) {
    std::fs::create_dir(out.join("rw")).unwrap();
    std::fs::create_dir_all(out.join("ro/sub")).unwrap();
    std::fs::write(out.join("ro/f.txt"), "f").unwrap();
    std::fs::write(out.join("ro/sub/in.txt"), "in").unwrap();
}

/// Names, contents and times of a directory's entries.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>, std::time::SystemTime)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = std::fs::symlink_metadata(e.path()).unwrap();
            let bytes = if m.is_file() { std::fs::read(e.path()).unwrap() } else { Vec::new() };
            (e.file_name().into_string().unwrap(), bytes, m.modified().unwrap())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_read_only_host_directory_stays_as_it_was_whatever_the_guest_does() {
    let component = Virt::new()
        .preopen("/", Source::HostDir { host_path: "/out/rw".into(), read_only: false })
        .preopen("/ro", Source::HostDir { host_path: "/out/ro".into(), read_only: true })
        .build(&std::fs::read(support::rust_guest("p2_script", "wasm32-wasip2")).unwrap())
        .unwrap();
    let out = tempfile::tempdir().unwrap();
    ro_attack_dirs(out.path());
    let before = snapshot(&out.path().join("ro"));
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &component).unwrap();
    let args = [&["p2_script"][..], RO_ATTACK, ESCAPES].concat();
    let (status, stdout, err) = wasmtime_wasi_args(file.path(), &args, out.path());
    assert_eq!(status, 0, "{err}");
    assert_eq!(snapshot(&out.path().join("ro")), before, "the read-only directory changed:\n{stdout}");
    assert_eq!(std::fs::read(out.path().join("rw/made.txt")).unwrap().len(), 5, "{stdout}");
    let names: Vec<_> = snapshot(&out.path().join("rw")).into_iter().map(|e| e.0).collect();
    assert_eq!(names, ["escape", "made.txt"], "{stdout}");
    assert!(stdout.contains("|escape: ok") && stdout.ends_with("done\n"), "the script ran to its end: {stdout}");
    assert_eq!(escaped(&stdout), Vec::<&str>::new(), "reached past the dir: preopen");
    // The same on jco's stock shim (web/e2e/virt.test.mjs).
    let dir = support::guest_target_dir().join("virt/attack");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("dir-ro.wasm"), &component).unwrap();
    std::fs::write(dir.join("dir-ro.args"), [RO_ATTACK, ESCAPES].concat().join("\n")).unwrap();
    std::fs::write(dir.join("dir-ro.escapes"), ESCAPES.join("\n")).unwrap();
}
