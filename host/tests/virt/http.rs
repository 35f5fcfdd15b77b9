//! Guests using `wasi:http` beside their files (WASI 0.2), composed with
//! the virtual filesystem, whose `wasi:http` then wraps the host's (its
//! requests, responses and bodies hand out `wasi:io` resources, which are
//! the component's). On the `wasmtime` command, the host here with
//! `wasi:http` (wasmtime-py has none, and wasmtime-wasi's embedders add it
//! with a crate of its own; jco is `web/e2e/virt.test.mjs`), each must do
//! what the same guest does unvirtualized over a host directory holding
//! the same tree:
//!
//! - `http_fetch` (`wasmtime run -S http`, outgoing): a file of the pack
//!   posted to a loopback server, its reply written to a file and read
//!   back, a GET, and a refused connection's error;
//! - `http_serve` (`wasmtime serve`, incoming, through the bridge): files
//!   of the pack served, a request's body written to a `mem` mount and
//!   answered back, a missing file's error.

use super::*;
use packfs_core::mem::Quota;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// Sizes around the boundaries a body crosses: a stream's 4 KiB writes,
/// the virtual filesystem's 64 KiB pieces.
const POSTED: usize = (64 << 10) * 3 + 4097;
const PAGE: usize = (4 << 10) * 5 - 1;

/// `len` bytes of every value, starting at `seed`.
fn bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// The tree both runs see: `/request.txt`, `/site/index.html`,
/// `/site/empty`.
fn files() -> Vec<(&'static str, Vec<u8>)> {
    vec![("request.txt", bytes(POSTED, 7)), ("site/index.html", bytes(PAGE, 9)), ("site/empty", Vec::new())]
}

fn write_tree(dir: &Path) {
    for (name, data) in files() {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, data).unwrap();
    }
}

fn pack_of_tree() -> Vec<u8> {
    let fs = MemFs::new();
    fs.mkdir(fs.root(), "site", 0o755).unwrap();
    for (name, data) in files() {
        packfs_core::write_file(&fs, &format!("/{name}"), &data).unwrap();
    }
    let mut out = Vec::new();
    write_pack(&fs, &mut out).unwrap();
    out
}

/// An HTTP/1.1 request: its first line, headers (names in lower case)
/// and body.
struct Request {
    line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn read(conn: &mut BufReader<TcpStream>) -> Option<Request> {
        let mut line = String::new();
        conn.read_line(&mut line).ok().filter(|&n| n > 0)?;
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            conn.read_line(&mut h).ok()?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':')?;
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
        let mut request = Request { line: line.trim_end().to_string(), headers, body: Vec::new() };
        request.body.resize(request.header("content-length").parse().unwrap_or(0), 0);
        conn.read_exact(&mut request.body).ok()?;
        Some(request)
    }

    fn header(&self, name: &str) -> &str {
        self.headers.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
    }
}

/// A server on loopback for the rest of the process: a POST is answered
/// with its body in capitals and `x-echo` naming its `x-packfs` header and
/// length; anything else with a greeting.
fn server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = BufReader::new(conn);
                while let Some(r) = Request::read(&mut conn) {
                    let (echo, reply) = match r.line.starts_with("POST ") {
                        true => (format!("{};{}", r.header("x-packfs"), r.body.len()), r.body.to_ascii_uppercase()),
                        false => (format!("{};get", r.header("x-packfs")), b"hello from the server".to_vec()),
                    };
                    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\nx-echo: {echo}\r\n\r\n", reply.len());
                    let out = conn.get_mut();
                    if out.write_all(head.as_bytes()).and_then(|()| out.write_all(&reply)).is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// A loopback address nothing listens on (a port free when asked: only
/// something else on this machine taking it in the moment between could
/// make it answer).
fn refused() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().to_string()
}

/// The `wasmtime` command, which this test needs; `None` (and a warning)
/// where the test command did not install it and did not require it.
fn wasmtime_command() -> Option<std::ffi::OsString> {
    let cli = std::env::var_os("PACKFS_WASMTIME");
    if cli.is_none() {
        let required = std::env::var("PACKFS_VIRT_HOSTS").is_ok_and(|v| v == "all");
        assert!(!required, "PACKFS_WASMTIME is not set: the wasmtime command is the host of wasi:http here");
        eprintln!("warning: PACKFS_WASMTIME is not set: wasi:http guests not run (./test.sh installs it)");
    }
    cli
}

/// The guest composed with the tree's pack at `/` (under an overlay, which
/// takes its writes) and a `mem` mount at `/tmp`.
fn virtualized_http(name: &str) -> Vec<u8> {
    let guest = std::fs::read(support::rust_guest(name, "wasm32-wasip2")).unwrap();
    Virt::new()
        .mount("/", Source::Pack { bytes: pack_of_tree(), overlay: Some(Quota::default()) })
        .mount("/tmp", Source::Mem(Quota { max_bytes: Some(1 << 20), max_inodes: None }))
        .build(&guest)
        .unwrap()
}

#[test]
fn a_guest_keeps_its_outgoing_http_through_the_virtual_filesystem() {
    let Some(cli) = wasmtime_command() else { return };
    let (url, refused) = (format!("http://{}/echo", server()), format!("http://{}/", refused()));
    let run = |component: &Path, dir: Option<&Path>| {
        let mut c = Command::new(&cli);
        c.args(["run", "-S", "http"]);
        if let Some(dir) = dir {
            c.arg("--dir").arg(format!("{}::/", dir.display()));
        }
        c.arg(component).args([&url, &refused]);
        command(c)
    };
    let native = tempfile::tempdir().unwrap();
    write_tree(native.path());
    let (status, want, err) = run(&support::rust_guest("http_fetch", "wasm32-wasip2"), Some(native.path()));
    assert_eq!(status, 0, "unvirtualized: {err}");
    let sent = bytes(POSTED, 7);
    let posted = format!("post: ok status 200 echo [\"yes;{POSTED}\"] trailers 0 sent {POSTED} ");
    assert!(want.starts_with(&posted), "unvirtualized, the premise:\n{want}");
    // A poll reports the host's ready response beside a stream of the
    // tree's (which the component answers itself).
    assert!(
        want.contains("get: ok status 200 hello from the server\npoll: ok response reported true\nrefused: err "),
        "{want}"
    );
    assert_eq!(std::fs::read(native.path().join("reply.txt")).unwrap(), sent.to_ascii_uppercase());

    let virt = virtualized_http("http_fetch");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &virt).unwrap();
    let (status, got, err) = run(file.path(), None);
    assert_eq!((status, got.as_str()), (0, want.as_str()), "virtualized, on the wasmtime command: {err}");

    // For web/e2e/virt.test.mjs: jco's run against a server of its own
    // that answers as this one does.
    let dir = support::guest_target_dir().join("virt-http");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("http_fetch.wasm"), &virt).unwrap();
    std::fs::write(dir.join("http_fetch.txt"), &want).unwrap();
}

/// A `wasmtime serve` of `component`, killed when dropped.
struct Serve {
    child: std::process::Child,
    addr: String,
}

impl Serve {
    fn start(cli: &std::ffi::OsStr, component: &Path, dir: Option<&Path>) -> Serve {
        let mut c = Command::new(cli);
        // Port 0: it binds a free one itself, and says which.
        c.args(["serve", "-S", "cli", "--addr", "127.0.0.1:0"]);
        if let Some(dir) = dir {
            c.arg("--dir").arg(format!("{}::/", dir.display()));
        }
        let mut child = c.arg(component).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        // Nothing outlives a test that hangs.
        support::kill_after(child.id(), Duration::from_secs(600));
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let addr = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "wasmtime serve ended before it listened");
            if let Some(at) = line.trim_end().strip_prefix("Serving HTTP on http://") {
                break at.trim_end_matches('/').to_string();
            }
        };
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Serve { child, addr }
    }

    /// The status line and body of `method path` with `body`.
    fn ask(&self, method: &str, path: &str, body: &[u8]) -> (String, Vec<u8>) {
        let mut conn = TcpStream::connect(&self.addr).unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nhost: {}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            self.addr,
            body.len()
        );
        conn.write_all(head.as_bytes()).unwrap();
        conn.write_all(body).unwrap();
        let mut reply = Vec::new();
        conn.read_to_end(&mut reply).unwrap();
        let split = reply.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
        let head = String::from_utf8_lossy(&reply[..split]).into_owned();
        let status = head.lines().next().unwrap().to_string();
        let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
        let body = &reply[split + 4..];
        (status, if chunked { dechunk(body) } else { body.to_vec() })
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A chunked body's bytes.
fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n").expect("a chunk size");
        let size = usize::from_str_radix(std::str::from_utf8(&body[..line_end]).unwrap().trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[line_end + 2..line_end + 2 + size]);
        body = &body[line_end + 2 + size + 2..];
    }
}

#[test]
fn a_guest_serves_http_from_the_virtual_filesystem() {
    let Some(cli) = wasmtime_command() else { return };
    let native = tempfile::tempdir().unwrap();
    write_tree(native.path());
    std::fs::create_dir(native.path().join("tmp")).unwrap();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), virtualized_http("http_serve")).unwrap();
    let unvirtualized = Serve::start(&cli, &support::rust_guest("http_serve", "wasm32-wasip2"), Some(native.path()));
    let virtualized = Serve::start(&cli, file.path(), None);
    let upload = bytes(POSTED, 3);
    let asks: [(&str, &str, &[u8]); 5] = [
        ("GET", "/file/site/index.html", b""),
        ("GET", "/file/site/empty", b""),
        ("GET", "/file/site/missing", b""),
        ("POST", "/save/upload.bin", &upload),
        ("GET", "/elsewhere", b""),
    ];
    // For web/e2e/virt.test.mjs: jco's serve must answer the same.
    let dir = support::guest_target_dir().join("virt-http");
    std::fs::create_dir_all(&dir).unwrap();
    let mut listing = String::new();
    for (i, (method, path, body)) in asks.into_iter().enumerate() {
        let want = unvirtualized.ask(method, path, body);
        let got = virtualized.ask(method, path, body);
        assert!(
            got == want,
            "{method} {path}: {} {} bytes, unvirtualized {} {} bytes",
            got.0,
            got.1.len(),
            want.0,
            want.1.len()
        );
        let code = want.0.split(' ').nth(1).unwrap();
        listing += &format!("{method} {path} {code}\n");
        std::fs::write(dir.join(format!("ask-{i}.in")), body).unwrap();
        std::fs::write(dir.join(format!("ask-{i}.out")), &want.1).unwrap();
    }
    std::fs::copy(file.path(), dir.join("http_serve.wasm")).unwrap();
    std::fs::write(dir.join("http_serve.txt"), listing).unwrap();
    // The premise: each answered as its route says.
    assert_eq!(unvirtualized.ask("GET", "/file/site/index.html", b""), ("HTTP/1.1 200 OK".into(), bytes(PAGE, 9)));
    assert_eq!(unvirtualized.ask("POST", "/save/upload.bin", &upload).1, upload.to_ascii_uppercase());
    assert!(unvirtualized.ask("GET", "/file/site/missing", b"").0.starts_with("HTTP/1.1 404"));
}
