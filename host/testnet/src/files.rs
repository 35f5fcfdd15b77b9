//! A directory served over HTTP/1.1: `GET` (and `HEAD`) with one `Range`
//! (`bytes=A-B`, `A-`, `-N`), `ETag` (from the file's length and mtime)
//! with `If-Match`, and `PUT` (whole files, renamed into place).

use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::UNIX_EPOCH;

use crate::http::{self, Message};

/// A file server on 127.0.0.1; stops when dropped.
pub struct FileServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl FileServer {
    /// Serves `root` on a free port.
    pub fn start(root: &Path) -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("an address");
        let stop = Arc::new(AtomicBool::new(false));
        let (root, stopped) = (root.to_owned(), Arc::clone(&stop));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopped.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let root = root.clone();
                std::thread::spawn(move || serve(&root, conn));
            }
        });
        FileServer { addr, stop }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Its address on loopback.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so that it sees `stop`.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(root: &Path, conn: TcpStream) {
    let Ok(mut out) = conn.try_clone() else { return };
    let mut input = BufReader::new(conn);
    while let Ok(Some(req)) = http::read(&mut input, false) {
        let reply = answer(root, &req);
        // A reply to HEAD is a GET's head, its length, and no body.
        let sent = if req.start.starts_with("HEAD ") {
            out.write_all(&reply.head_bytes(Some(reply.body.len()))).and_then(|()| out.flush())
        } else {
            reply.write(&mut out)
        };
        if sent.is_err() {
            return;
        }
    }
}

/// The file a request's path names, never outside `root`.
fn file_of(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split('?').next()?;
    let decoded = percent_decode(path)?;
    let rel = Path::new(decoded.trim_start_matches('/'));
    rel.components().all(|c| matches!(c, Component::Normal(_))).then(|| root.join(rel))
}

fn percent_decode(s: &str) -> Option<String> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(u8::from_str_radix(s.get(i + 1..i + 3)?, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn answer(root: &Path, req: &Message) -> Message {
    let mut parts = req.start.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let Some(path) = file_of(root, target) else { return Message::response(400, "Bad Request") };
    if method == "PUT" {
        let tmp = path.with_extension("put-tmp");
        let ok = path.parent().is_some_and(|p| std::fs::create_dir_all(p).is_ok())
            && std::fs::write(&tmp, &req.body).is_ok()
            && std::fs::rename(&tmp, &path).is_ok();
        return if ok { Message::response(201, "Created") } else { Message::response(500, "Internal Server Error") };
    }
    if method != "GET" && method != "HEAD" {
        return Message::response(405, "Method Not Allowed");
    }
    let Ok(mut file) = std::fs::File::open(&path) else { return Message::response(404, "Not Found") };
    let Some(meta) = file.metadata().ok().filter(|m| m.is_file()) else { return Message::response(404, "Not Found") };
    let size = meta.len();
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    let etag = format!("\"{size:x}-{mtime:x}\"");
    if let Some(want) = req.header("if-match")
        && want != "*"
        && !want.split(',').any(|t| t.trim() == etag)
    {
        return Message::response(412, "Precondition Failed");
    }
    let range = match req.header("range") {
        None => None,
        Some(r) => match parse_range(r, size) {
            Some(r) => Some(r),
            None => {
                let mut m = Message::response(416, "Range Not Satisfiable");
                m.set_header("Content-Range", format!("bytes */{size}"));
                return m;
            }
        },
    };
    let (start, end) = range.unwrap_or((0, size));
    let mut m = if range.is_some() { Message::response(206, "Partial Content") } else { Message::response(200, "OK") };
    m.set_header("ETag", etag);
    m.set_header("Accept-Ranges", "bytes".into());
    m.set_header("Last-Modified", "Tue, 01 Dec 2026 00:00:00 GMT".into());
    if range.is_some() {
        m.set_header("Content-Range", format!("bytes {start}-{}/{size}", end - 1));
    }
    let mut body = vec![0; (end - start) as usize];
    if file.seek(SeekFrom::Start(start)).and_then(|_| file.read_exact(&mut body)).is_err() {
        return Message::response(500, "Internal Server Error");
    }
    m.body = body;
    m
}

/// `bytes=A-B` / `A-` / `-N` against a file of `size` bytes, as
/// `(start, end)`; `None` when unsatisfiable or not one range.
fn parse_range(value: &str, size: u64) -> Option<(u64, u64)> {
    let spec = value.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (start, end) = match (a.trim(), b.trim()) {
        ("", n) => {
            let n: u64 = n.parse().ok()?;
            (size.saturating_sub(n), size)
        }
        (a, "") => (a.parse().ok()?, size),
        (a, b) => (a.parse().ok()?, b.parse::<u64>().ok()?.saturating_add(1).min(size)),
    };
    (start < end).then_some((start, end))
}
