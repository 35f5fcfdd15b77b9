//! The JavaScript-facing API, run in headless Chromium by
//! wasm-bindgen-test (see web/test.sh). Every value crossing into or out of
//! the API is a real JS value; errors are checked by their `code`.

#![cfg(target_arch = "wasm32")]

use js_sys::{Array, Reflect, Uint8Array};
use packfs_core::mem::{ENTRY_BYTES, INODE_BYTES};
use packfs_web::{MemFs, Overlay, Pack};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use wasm_bindgen_test::*;

wasm_bindgen_test_configure!(run_in_browser);

fn get(v: &JsValue, k: &str) -> JsValue {
    Reflect::get(v, &k.into()).unwrap()
}

fn code(err: JsValue) -> String {
    assert!(err.is_instance_of::<js_sys::Error>(), "not an Error: {err:?}");
    get(&err, "code").as_string().unwrap()
}

async fn wait(p: js_sys::Promise) -> Result<JsValue, JsValue> {
    JsFuture::from(p).await
}

async fn read(fs_read: js_sys::Promise) -> Vec<u8> {
    wait(fs_read).await.unwrap().unchecked_into::<Uint8Array>().to_vec()
}

fn opts(pairs: &[(&str, JsValue)]) -> Option<JsValue> {
    let o = js_sys::Object::new();
    for (k, v) in pairs {
        Reflect::set(&o, &(*k).into(), v).unwrap();
    }
    Some(o.into())
}

fn names(list: Array) -> Vec<String> {
    list.iter().map(|e| get(&e, "name").as_string().unwrap()).collect()
}

/// A small tree: docs/readme.md, docs/big.bin (100 KB), link -> docs/readme.md.
async fn sample() -> Vec<u8> {
    let fs = MemFs::new(None).unwrap();
    fs.mkdir("docs".into(), None).unwrap();
    fs.write_file_sync("docs/readme.md".into(), "# hello".into()).unwrap();
    let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    fs.write_file_sync("docs/big.bin".into(), Uint8Array::from(&big[..]).into()).unwrap();
    fs.symlink("docs/readme.md".into(), "link".into()).unwrap();
    read(fs.compact(None)).await
}

#[wasm_bindgen_test]
async fn memfs_paths_and_errors() {
    let fs = MemFs::new(None).unwrap();
    fs.mkdir("/a/b/c".into(), opts(&[("recursive", true.into())])).unwrap();
    wait(fs.write_file("/a/b/file.txt".into(), "héllo".into())).await.unwrap();
    assert_eq!(read(fs.read_file("a/b/file.txt".into())).await, "héllo".as_bytes());
    assert_eq!(fs.read_file_sync("a/b/file.txt".into()).unwrap(), "héllo".as_bytes());
    let list = fs.readdir("a/b".into()).unwrap();
    assert_eq!(names(list.clone()), ["c", "file.txt"]);
    assert_eq!(get(&list.get(0), "kind").as_string().unwrap(), "dir");
    assert_eq!(get(&list.get(1), "size").as_f64().unwrap(), 6.0);
    let st = fs.stat("a/b/file.txt".into()).unwrap();
    assert_eq!(get(&st, "kind").as_string().unwrap(), "file");
    assert_eq!(get(&st, "mode").as_f64().unwrap(), f64::from(0o644));
    // The clock is Date.now(), not the epoch.
    assert!(get(&st, "mtimeMs").as_f64().unwrap() > 1.6e12);
    fs.symlink("b/file.txt".into(), "a/l".into()).unwrap();
    assert_eq!(fs.readlink("a/l".into()).unwrap(), "b/file.txt");
    assert_eq!(get(&fs.lstat("a/l".into()).unwrap(), "kind").as_string().unwrap(), "symlink");
    assert!(fs.exists("a/l".into()).unwrap() && !fs.exists("a/nope".into()).unwrap());
    fs.rename("a/b/file.txt".into(), "a/moved".into()).unwrap();
    wait(fs.truncate("a/moved".into(), JsValue::from(1.0))).await.unwrap();
    fs.truncate_sync("a/moved".into(), JsValue::from(3.0)).unwrap();
    assert_eq!(fs.read_file_sync("a/moved".into()).unwrap(), b"h\0\0");
    assert_eq!(code(fs.truncate_sync("a/moved".into(), JsValue::from(-1.0)).unwrap_err()), "invalid");

    assert_eq!(code(wait(fs.read_file("a/b/file.txt".into())).await.unwrap_err()), "no-entry");
    assert_eq!(code(fs.read_file_sync("a/nope".into()).unwrap_err()), "no-entry");
    assert_eq!(code(fs.mkdir("a".into(), None).unwrap_err()), "exist");
    assert_eq!(code(fs.readdir("a/moved".into()).unwrap_err()), "not-directory");
    assert_eq!(code(fs.rmdir("a/b".into()).unwrap_err()), "not-empty");
    assert_eq!(code(fs.unlink("a/b".into()).unwrap_err()), "is-directory");
    // A name ending in `/` is refused for what it is itself, as unlink(2):
    // a symlink to a directory is not followed.
    fs.symlink("b".into(), "a/lb".into()).unwrap();
    assert_eq!(code(fs.unlink("a/b/".into()).unwrap_err()), "is-directory");
    assert_eq!(code(fs.unlink("a/lb/".into()).unwrap_err()), "not-directory");
    fs.unlink("a/lb".into()).unwrap();
    assert_eq!(code(fs.read_file_sync("../x".into()).unwrap_err()), "not-permitted");
    assert_eq!(code(fs.write_file_sync("a/b".into(), "x".into()).unwrap_err()), "is-directory");
    assert_eq!(code(fs.write_file_sync("a/x".into(), JsValue::from(5)).unwrap_err()), "invalid");
    // Any ArrayBufferView, by its bytes: a Uint16Array and a DataView over
    // part of a buffer.
    let words = js_sys::Uint16Array::from(&[0x0201u16, 0x0403][..]);
    fs.write_file_sync("a/words".into(), words.into()).unwrap();
    assert_eq!(fs.read_file_sync("a/words".into()).unwrap(), [1, 2, 3, 4]);
    let buffer = Uint8Array::from(&[9u8, 8, 7, 6, 5][..]).buffer();
    fs.write_file_sync("a/view".into(), js_sys::DataView::new(&buffer, 1, 3).into()).unwrap();
    assert_eq!(fs.read_file_sync("a/view".into()).unwrap(), [8, 7, 6]);
    assert_eq!(code(fs.mkdir("x/y".into(), opts(&[("recursive", "yes".into())])).unwrap_err()), "invalid");
    let err = fs.read_file_sync("a/nope".into()).unwrap_err();
    assert_eq!(get(&err, "errno").as_string().unwrap(), "ENOENT");
    let msg = String::from(err.unchecked_into::<js_sys::Error>().message());
    assert!(msg.contains("a/nope"), "{msg}");
    assert_eq!(code(MemFs::new(opts(&[("maxBytes", (-1).into())])).err().unwrap()), "invalid");
}

#[wasm_bindgen_test]
async fn quotas_refuse_and_keep_the_old_content() {
    // Room for the root, `a`, `d` and 10 bytes of content; three inodes.
    let named = 2 * (ENTRY_BYTES + 1);
    let room = 3 * INODE_BYTES + named + 10;
    let fs = MemFs::new(opts(&[("maxBytes", (room as f64).into()), ("maxInodes", 3.into())])).unwrap();
    fs.write_file_sync("a".into(), "12345".into()).unwrap();
    fs.mkdir("d".into(), None).unwrap();
    assert_eq!(code(wait(fs.write_file("a".into(), "this is too long".into())).await.unwrap_err()), "quota");
    assert_eq!(fs.read_file_sync("a".into()).unwrap(), b"12345");
    assert_eq!(code(fs.mkdir("e".into(), None).unwrap_err()), "quota");
    let u = fs.usage();
    let bytes = (3 * INODE_BYTES + named + 5) as f64;
    assert_eq!((get(&u, "bytes").as_f64(), get(&u, "inodes").as_f64()), (Some(bytes), Some(3.0)));
}

#[wasm_bindgen_test]
async fn packs_from_bytes_read_verify_and_refuse_writes() {
    let bytes = sample().await;
    let pack = Pack::from_bytes(Uint8Array::from(&bytes[..]).into(), None).unwrap();
    assert_eq!(names(pack.readdir("/".into()).unwrap()), ["docs", "link"]);
    assert_eq!(read(pack.read_file("link".into())).await, b"# hello");
    assert_eq!(pack.read_file_sync("docs/big.bin".into()).unwrap().len(), 100_000);
    assert_eq!(code(pack.write_file_sync("docs/readme.md".into(), "x".into()).unwrap_err()), "read-only");
    assert_eq!(code(pack.mkdir("x".into(), None).unwrap_err()), "read-only");
    assert_eq!(code(pack.unlink("link".into()).unwrap_err()), "read-only");
    let info = pack.info();
    assert_eq!(get(&info, "packLen").as_f64().unwrap(), bytes.len() as f64);
    assert_eq!(get(&info, "inodes").as_f64().unwrap(), 5.0);
    let report = wait(pack.verify()).await.unwrap();
    assert_eq!(get(&report, "ok"), JsValue::TRUE);
    assert_eq!(get(&report, "blobs").as_f64().unwrap(), 2.0);
    // Compacting a pack gives the same bytes back (the writer is deterministic).
    assert_eq!(read(pack.compact(None)).await, bytes);
    assert!(pack.is_complete());
    assert_eq!(pack.bytes_fetched(), 0.0);
}

#[wasm_bindgen_test]
async fn corrupt_packs_are_errors_not_crashes() {
    let bytes = sample().await;
    // Not a pack at all, an empty one, a truncated one.
    for bad in [&b"hello, world"[..], &[], &bytes[..bytes.len() - 1]] {
        assert_eq!(code(Pack::from_bytes(Uint8Array::from(bad).into(), None).err().unwrap()), "io");
    }
    // A flipped index byte: the index checksum catches it at open.
    let mut index_flip = bytes.clone();
    let n = index_flip.len();
    index_flip[n - 200] ^= 0x40;
    let err = Pack::from_bytes(Uint8Array::from(&index_flip[..]).into(), None).err().unwrap();
    let msg = String::from(err.clone().unchecked_into::<js_sys::Error>().message());
    assert_eq!(code(err), "io", "{msg}");
    // A flipped content byte: open succeeds, verify names the file, and a
    // checked read refuses it.
    let mut data_flip = bytes.clone();
    let at = bytes.windows(7).position(|w| w == b"# hello").unwrap();
    data_flip[at] = b'!';
    let pack = Pack::from_bytes(Uint8Array::from(&data_flip[..]).into(), None).unwrap();
    let report = wait(pack.verify()).await.unwrap();
    assert_eq!(get(&report, "ok"), JsValue::FALSE);
    let bad: Array = get(&report, "bad").unchecked_into();
    assert_eq!(get(&bad.get(0), "path").as_string().unwrap(), "docs/readme.md");
    let checked =
        Pack::from_bytes(Uint8Array::from(&data_flip[..]).into(), opts(&[("verifyOnRead", true.into())])).unwrap();
    assert_eq!(code(wait(checked.read_file("docs/readme.md".into())).await.unwrap_err()), "io");
    assert_eq!(read(checked.read_file("docs/big.bin".into())).await.len(), 100_000);
}

#[wasm_bindgen_test]
async fn overlays_change_memory_never_the_pack() {
    let bytes = sample().await;
    let pack = Pack::from_bytes(Uint8Array::from(&bytes[..]).into(), None).unwrap();
    let fs = Overlay::new(pack.clone().into(), opts(&[("maxBytes", 4000.into())])).unwrap();
    wait(fs.write_file("docs/readme.md".into(), "# changed".into())).await.unwrap();
    fs.write_file_sync("new.txt".into(), "new".into()).unwrap();
    fs.unlink("link".into()).unwrap();
    fs.rename("docs/big.bin".into(), "big.bin".into()).unwrap();
    assert_eq!(names(fs.readdir("".into()).unwrap()), ["big.bin", "docs", "new.txt"]);
    assert_eq!(read(fs.read_file("docs/readme.md".into())).await, b"# changed");
    assert_eq!(read(pack.read_file("link".into())).await, b"# hello");
    // The quota counts the upper's bytes only: 100 KB of pack content is
    // free. Here: the root and new.txt's records, four entries (new.txt,
    // the whiteouts of link and docs/big.bin, big.bin), 12 bytes of content.
    assert_eq!(code(fs.write_file_sync("x".into(), Uint8Array::new_with_length(2000).into()).unwrap_err()), "quota");
    let named = ("new.txt".len() + "link".len() + 2 * "big.bin".len()) as u64;
    let upper = 2 * INODE_BYTES + 4 * ENTRY_BYTES + named + 12;
    assert_eq!(get(&fs.usage(), "bytes").as_f64().unwrap(), upper as f64);
    assert_eq!(get(&wait(fs.verify()).await.unwrap(), "ok"), JsValue::TRUE);
    let out = read(fs.compact(None)).await;
    let back = Pack::from_bytes(Uint8Array::from(&out[..]).into(), None).unwrap();
    assert_eq!(names(back.readdir("/".into()).unwrap()), ["big.bin", "docs", "new.txt"]);
    assert_eq!(read(back.read_file("docs/readme.md".into())).await, b"# changed");
    assert_eq!(read(back.read_file("big.bin".into())).await.len(), 100_000);
}

/// `err` is a `TypeError` whose message starts with `what`.
fn type_error(err: JsValue, what: &str) {
    assert!(err.is_instance_of::<js_sys::TypeError>(), "not a TypeError: {err:?}");
    let msg = String::from(err.clone().unchecked_into::<js_sys::Error>().message());
    assert!(msg.starts_with(what), "{msg}");
    assert_eq!(code(err), "invalid");
}

#[wasm_bindgen_test]
async fn arguments_of_the_wrong_type_are_type_errors_naming_them() {
    // (web/e2e/args.test.mjs calls every entry point through the generated
    // JavaScript; these are the Rust side's own.)
    let fs = MemFs::new(None).unwrap();
    fs.write_file_sync("f".into(), "x".into()).unwrap();
    for wrong in [JsValue::from(5), js_sys::Object::new().into(), JsValue::UNDEFINED, JsValue::NULL] {
        type_error(fs.readdir(wrong.clone()).unwrap_err(), "path must be a string");
        type_error(fs.rename("f".into(), wrong.clone()).unwrap_err(), "to must be a string");
        type_error(fs.symlink(wrong.clone(), "l".into()).unwrap_err(), "target must be a string");
        if wrong.as_f64().is_none() {
            type_error(fs.truncate_sync("f".into(), wrong.clone()).unwrap_err(), "len must be a number");
        }
        type_error(fs.write_file_sync("f".into(), wrong.clone()).unwrap_err(), "data must be");
        type_error(wait(fs.read_file(wrong.clone())).await.unwrap_err(), "path must be a string");
        type_error(Pack::from_bytes(wrong.clone(), None).err().unwrap(), "bytes must be");
        type_error(Overlay::new(wrong.clone(), None).err().unwrap(), "lower must be a Pack");
        type_error(wait(Pack::from_url(wrong.clone(), None)).await.unwrap_err(), "url must be a string");
    }
    type_error(Overlay::new(JsValue::from(MemFs::new(None).unwrap()), None).err().unwrap(), "lower must be a Pack");
    type_error(fs.truncate_sync("f".into(), "1".into()).unwrap_err(), "len must be a number");
    type_error(MemFs::new(Some("big".into())).err().unwrap(), "options must be an object");
    type_error(fs.mkdir("d".into(), opts(&[("recursive", 1.into())])).unwrap_err(), "options.recursive");
    type_error(wait(fs.compact(opts(&[("compress", 5.into())]))).await.unwrap_err(), "options.compress");
    assert_eq!(fs.read_file_sync("f".into()).unwrap(), b"x", "nothing changed");
}

/// Packs whose index is one zstd frame declaring a 2 TiB or 3.75 GiB
/// window, or a 3 GiB content size, over 1 GiB and 64 GiB of RLE blocks
/// (33 KB and 2 MB): refused as `io`, from bytes and by URL, the module's
/// memory grown by less than 64 MiB, and the module goes on working. The browser's decoder is the pure-Rust one, which kept the
/// whole declared window: on 65991d3 these trapped the module (its 4 GiB
/// of memory) or took a gigabyte.
#[wasm_bindgen_test]
async fn frames_declaring_huge_windows_are_refused() {
    use packfs_core::pack::fuzzing::{Head, window_bomb};
    let fs = MemFs::new(None).unwrap();
    fs.write_file_sync("a.txt".into(), "text ".repeat(1000).into()).unwrap();
    let base = read(fs.compact(opts(&[("compress", "zstd".into())]))).await;
    // A module's memory never shrinks: what a decode took, it keeps.
    let memory = || {
        let m: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
        m.buffer().unchecked_into::<js_sys::ArrayBuffer>().byte_length()
    };
    let before = memory();
    // 3.75 GiB and 3 GiB, as well as past 4 GiB: a 32-bit decoder takes a
    // window modulo 4 GiB.
    let (huge, wide) = (Head::window(31 << 3 | 7), Head::window(21 << 3 | 7));
    let heads = [(huge, 1 << 30), (wide, 1 << 30), (Head::single(3 << 30), 1 << 30), (wide, 64 << 30)];
    for (head, zeros) in heads {
        let bomb = window_bomb(&base, head, zeros);
        assert!(bomb.len() < 3 << 20, "{} bytes", bomb.len());
        let err = Pack::from_bytes(Uint8Array::from(&bomb[..]).into(), None).err().unwrap();
        let msg = String::from(err.clone().unchecked_into::<js_sys::Error>().message());
        assert_eq!(code(err), "io", "{head:?}: {msg}");
        assert!(msg.contains("corrupt pack"), "{head:?}: {msg}");
        let by_url = wait(Pack::from_url(blob_url(&bomb).into(), None)).await.unwrap_err();
        assert_eq!(code(by_url), "io", "{head:?} by URL");
    }
    let grown = memory() - before;
    assert!(grown < 64 << 20, "the module's memory grew by {} MiB", grown >> 20);
    // Still whole: a pack opens and reads after them.
    let bytes = sample().await;
    let pack = Pack::from_bytes(Uint8Array::from(&bytes[..]).into(), None).unwrap();
    assert_eq!(read(pack.read_file("docs/big.bin".into())).await.len(), 100_000);
}

/// A blob: URL for `bytes`; Chromium answers Range requests on those.
fn blob_url(bytes: &[u8]) -> String {
    let parts = Array::of1(&Uint8Array::from(bytes));
    let blob = web_sys::Blob::new_with_u8_array_sequence(&parts).unwrap();
    web_sys::Url::create_object_url_with_blob(&blob).unwrap()
}

#[wasm_bindgen_test]
async fn packs_from_urls_fetch_content_on_demand() {
    // Over 64 KiB, so the first request does not cover the whole pack.
    let bytes = sample().await;
    assert!(bytes.len() > 100_000);
    let url = blob_url(&bytes);
    let pack: Pack = wait(Pack::from_url(url.clone().into(), None)).await.unwrap().unchecked_into_pack();
    assert!(!pack.is_complete());
    let opened = pack.bytes_fetched();
    assert!(opened < 70_000.0, "opening fetched {opened} bytes");
    assert_eq!(pack.url().unwrap(), url);
    assert_eq!(names(pack.readdir("docs".into()).unwrap()), ["big.bin", "readme.md"]);
    // Not here yet: the sync read says so; the async one fetches it.
    assert_eq!(code(pack.read_file_sync("docs/big.bin".into()).unwrap_err()), "would-block");
    let before = pack.requests();
    assert_eq!(read(pack.read_file("docs/big.bin".into())).await.len(), 100_000);
    assert_eq!(pack.requests(), before + 1);
    assert_eq!(pack.read_file_sync("docs/big.bin".into()).unwrap().len(), 100_000);
    // An overlay over it fetches through the pack.
    let fs = Overlay::new(pack.clone().into(), None).unwrap();
    assert_eq!(read(fs.read_file("link".into())).await, b"# hello");
    assert_eq!(get(&wait(pack.verify()).await.unwrap(), "ok"), JsValue::TRUE);
    assert!(pack.is_complete());
    assert_eq!(read(pack.compact(None)).await, bytes);
    // A URL that is not a pack is an error.
    let junk = blob_url(&[0u8; 300]);
    assert_eq!(code(wait(Pack::from_url(junk.into(), None)).await.unwrap_err()), "io");
    assert_eq!(code(wait(Pack::from_url("http://127.0.0.1:9/none.pack".into(), None)).await.unwrap_err()), "io");
}

trait IntoPack {
    fn unchecked_into_pack(self) -> Pack;
}

impl IntoPack for JsValue {
    /// A `Pack` handed back through a promise arrives as its JS wrapper.
    fn unchecked_into_pack(self) -> Pack {
        use wasm_bindgen::convert::TryFromJsValue;
        Pack::try_from_js_value(self).unwrap()
    }
}
