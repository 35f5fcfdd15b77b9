//! Just enough HTTP/1.1 for the servers here: a message's head, then a
//! body by `Content-Length` or chunked.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// Heads longer than this are refused.
const MAX_HEAD: usize = 64 * 1024;

/// A request or a response.
#[derive(Debug, Clone, Default)]
pub(crate) struct Message {
    /// `GET /x HTTP/1.1`, or `HTTP/1.1 206 Partial Content`.
    pub start: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Message {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub(crate) fn set_header(&mut self, name: &str, value: String) {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value));
    }

    pub(crate) fn remove_header(&mut self, name: &str) {
        self.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    }

    /// A response's status code.
    pub(crate) fn status(&self) -> u16 {
        self.start.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
    }

    pub(crate) fn response(status: u16, reason: &str) -> Message {
        Message { start: format!("HTTP/1.1 {status} {reason}"), ..Message::default() }
    }

    /// The head, with `Content-Length` as given (which may lie).
    pub(crate) fn head_bytes(&self, content_length: Option<usize>) -> Vec<u8> {
        let mut out = format!("{}\r\n", self.start);
        for (k, v) in &self.headers {
            if !k.eq_ignore_ascii_case("content-length") && !k.eq_ignore_ascii_case("transfer-encoding") {
                out.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        if let Some(n) = content_length {
            out.push_str(&format!("Content-Length: {n}\r\n"));
        }
        out.push_str("\r\n");
        out.into_bytes()
    }

    pub(crate) fn write(&self, w: &mut impl Write) -> io::Result<()> {
        let mut bytes = self.head_bytes(Some(self.body.len()));
        bytes.extend_from_slice(&self.body);
        w.write_all(&bytes)?;
        w.flush()
    }
}

/// Reads one message; `None` at a clean end of the stream. `head_only`:
/// a reply to `HEAD`, whose `Content-Length` has no body.
pub(crate) fn read(r: &mut BufReader<TcpStream>, head_only: bool) -> io::Result<Option<Message>> {
    let Some(mut m) = read_head(r)? else { return Ok(None) };
    if !head_only {
        read_body(r, &mut m)?;
    }
    Ok(Some(m))
}

/// The body's length by `Content-Length`, if it gives one and the body is
/// not chunked.
pub(crate) fn content_length(m: &Message) -> Option<u64> {
    if m.header("transfer-encoding").is_some() {
        return None;
    }
    m.header("content-length")?.parse().ok()
}

/// Reads a message's head only.
pub(crate) fn read_head(r: &mut BufReader<TcpStream>) -> io::Result<Option<Message>> {
    let mut start = String::new();
    if r.read_line(&mut start)? == 0 {
        return Ok(None);
    }
    let mut m = Message { start: start.trim_end().to_owned(), ..Message::default() };
    let mut size = start.len();
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line)?;
        size += n;
        if n == 0 || size > MAX_HEAD {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "bad or long head"));
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad header"))?;
        m.headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    Ok(Some(m))
}

/// Reads the body of the message whose head is `m`.
pub(crate) fn read_body(r: &mut BufReader<TcpStream>, m: &mut Message) -> io::Result<()> {
    if m.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut line = String::new();
            r.read_line(&mut line)?;
            let n = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            m.body.extend_from_slice(&chunk[..n]);
        }
        m.remove_header("transfer-encoding");
    } else if let Some(n) = m.header("content-length") {
        let n: usize = n.parse().map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad length"))?;
        m.body = vec![0; n];
        r.read_exact(&mut m.body)?;
    }
    Ok(())
}

/// One request to `addr` on a new connection, and its reply.
pub(crate) fn request(addr: std::net::SocketAddr, method: &str, target: &str, body: &[u8]) -> io::Result<Message> {
    let conn = TcpStream::connect(addr)?;
    conn.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
    let mut out = conn.try_clone()?;
    let mut m = Message { start: format!("{method} {target} HTTP/1.1"), body: body.to_vec(), ..Message::default() };
    m.set_header("Host", addr.to_string());
    m.set_header("Connection", "close".into());
    m.write(&mut out)?;
    read(&mut BufReader::new(conn), method == "HEAD")?
        .ok_or_else(|| io::Error::new(io::ErrorKind::UnexpectedEof, "no reply"))
}
