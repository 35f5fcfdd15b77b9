//! A proxy on loopback between a client and a server: adds a fixed delay
//! to every request (a round trip), can share a link of a set bandwidth
//! among all replies, counts requests and reply bytes, and spoils the
//! replies to the next ranged `GET`s as told.

use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::http::{self, Message};

/// What to do to one reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Nothing: forward it as it is (to spoil a later one).
    Pass,
    /// Close the connection without replying.
    Drop,
    /// Hold the request this long, then close without replying.
    Stall(Duration),
    /// Send the head and half the body, then close.
    Truncate,
    /// Send the head and half the body, hold the rest this long (counted
    /// by [`Proxy::stalls`] once the half is sent), then close.
    StallBody(Duration),
    /// Flip a byte in the middle of the body.
    Corrupt,
    /// Answer `200 OK` without `Content-Range` (a server that ignores
    /// `Range`, as far as the client can tell).
    Whole,
    /// Shift `Content-Range` by one byte.
    WrongRange,
    /// Claim ten more bytes in `Content-Length` than are sent, then close.
    LongLength,
    /// Claim a terabyte in `Content-Length` and send the body, then zeros,
    /// for as long as the client reads, up to 256 MiB (counted in
    /// [`ProxyStats::bytes`]), then close.
    Flood,
    /// Answer with this status and an empty body.
    Status(u16),
}

/// What went through the proxy.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ProxyStats {
    /// Requests.
    pub requests: u64,
    /// The `GET`s among them with a `Range`.
    pub ranged: u64,
    /// Body bytes of the replies.
    pub bytes: u64,
}

#[derive(Default)]
struct Shared {
    faults: Mutex<VecDeque<Fault>>,
    /// Bytes replaced in every reply, and what replaces them.
    swap: Mutex<Option<(Vec<u8>, Vec<u8>)>>,
    delay: Mutex<Duration>,
    /// The link's bandwidth in bytes a second, and when it is next free:
    /// every reply's body queues for it, in the order it comes.
    link: Mutex<Option<(u64, Instant)>>,
    requests: AtomicU64,
    ranged: AtomicU64,
    bytes: AtomicU64,
    /// Replies that reached their hold mid-body.
    stalls: AtomicU64,
    stop: AtomicBool,
}

/// The proxy; stops when dropped.
pub struct Proxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Forwards to `upstream`.
    pub fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("an address");
        let shared = Arc::new(Shared::default());
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = Arc::clone(&s);
                std::thread::spawn(move || relay(&s, conn, upstream));
            }
        });
        Proxy { addr, shared }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Adds `d` before each request goes on.
    pub fn set_delay(&self, d: Duration) {
        *self.shared.delay.lock().unwrap() = d;
    }

    /// Sends every reply body over one link of `bytes_per_sec` shared by
    /// all connections (`None`: as fast as loopback goes).
    pub fn set_bandwidth(&self, bytes_per_sec: Option<u64>) {
        *self.shared.link.lock().unwrap() = bytes_per_sec.map(|b| (b.max(1), Instant::now()));
    }

    /// Spoils the replies to the next ranged `GET`s, one fault each.
    pub fn inject(&self, faults: &[Fault]) {
        self.shared.faults.lock().unwrap().extend(faults);
    }

    /// From now on, wherever a reply's body holds the bytes `from`, sends
    /// `to` instead (of the same length): one stored piece of a pack served
    /// in place of another, as by a hostile cache or middlebox.
    /// An empty `from` ends the swapping.
    pub fn swap(&self, from: &[u8], to: &[u8]) {
        assert_eq!(from.len(), to.len(), "a swap keeps the reply's length");
        *self.shared.swap.lock().unwrap() = (!from.is_empty()).then(|| (from.to_vec(), to.to_vec()));
    }

    /// Faults not yet used.
    pub fn pending(&self) -> usize {
        self.shared.faults.lock().unwrap().len()
    }

    /// What went through it so far.
    pub fn stats(&self) -> ProxyStats {
        let s = &self.shared;
        ProxyStats {
            requests: s.requests.load(Ordering::Relaxed),
            ranged: s.ranged.load(Ordering::Relaxed),
            bytes: s.bytes.load(Ordering::Relaxed),
        }
    }

    /// How many replies have been held mid-body ([`Fault::StallBody`]):
    /// each has sent half its body and holds the rest.
    pub fn stalls(&self) -> u64 {
        self.shared.stalls.load(Ordering::SeqCst)
    }

    /// Counts from zero again.
    pub fn reset_stats(&self) {
        let s = &self.shared;
        for c in [&s.requests, &s.ranged, &s.bytes] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}

/// A writer that adds what it is given to `bytes` before writing it, at
/// the link's pace when it has one.
struct Counted<'a> {
    out: &'a mut TcpStream,
    bytes: &'a AtomicU64,
    link: &'a Mutex<Option<(u64, Instant)>>,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // Pieces of at most 16 KiB take their turn on the link.
        let buf = &buf[..buf.len().min(16 << 10)];
        let turn = {
            let mut link = self.link.lock().unwrap();
            link.as_mut().map(|(rate, free)| {
                let start = (*free).max(Instant::now());
                *free = start + Duration::from_secs_f64(buf.len() as f64 / *rate as f64);
                *free
            })
        };
        if let Some(done) = turn {
            std::thread::sleep(done.saturating_duration_since(Instant::now()));
        }
        self.bytes.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.out.write_all(buf).map(|()| buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn relay(s: &Shared, client: TcpStream, upstream: SocketAddr) {
    let _ = client.set_nodelay(true);
    let Ok(mut out) = client.try_clone() else { return };
    let mut input = BufReader::new(client);
    let mut server: Option<(TcpStream, BufReader<TcpStream>)> = None;
    while let Ok(Some(req)) = http::read(&mut input, false) {
        s.requests.fetch_add(1, Ordering::Relaxed);
        let ranged = req.start.starts_with("GET ") && req.header("range").is_some();
        let fault = if ranged {
            s.ranged.fetch_add(1, Ordering::Relaxed);
            s.faults.lock().unwrap().pop_front().filter(|f| *f != Fault::Pass)
        } else {
            None
        };
        let delay = *s.delay.lock().unwrap();
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        match fault {
            Some(Fault::Drop) => return drop(out.shutdown(Shutdown::Both)),
            Some(Fault::Stall(d)) => {
                std::thread::sleep(d);
                return drop(out.shutdown(Shutdown::Both));
            }
            _ => {}
        }
        if server.is_none() {
            let Ok(up) = TcpStream::connect(upstream) else { return };
            let _ = up.set_nodelay(true);
            let Ok(reader) = up.try_clone() else { return };
            server = Some((up, BufReader::new(reader)));
        }
        let (up, up_in) = server.as_mut().expect("connected above");
        let head_only = req.start.starts_with("HEAD ");
        let mut forwarded = req.head_bytes(Some(req.body.len()));
        forwarded.extend_from_slice(&req.body);
        let head = up.write_all(&forwarded).and_then(|()| http::read_head(up_in));
        let Ok(Some(mut reply)) = head else { return };
        // Unspoiled bodies stream through as they come, as a real proxy's.
        let declared = http::content_length(&reply);
        let length = if head_only { Some(0) } else { declared };
        let swap = s.swap.lock().unwrap().clone();
        if let (None, None, Some(len)) = (fault, &swap, length) {
            // A reply to HEAD says the object's length, and has no body.
            let said = if head_only { declared.unwrap_or(0) } else { len };
            if out.write_all(&reply.head_bytes(Some(said as usize))).is_err() {
                return;
            }
            // Counted before each piece is written: a client that has its
            // reply must find it in the stats.
            let mut counted = Counted { out: &mut out, bytes: &s.bytes, link: &s.link };
            match std::io::copy(&mut std::io::Read::take(&mut *up_in, len), &mut counted) {
                Ok(n) if n == len => continue,
                _ => return drop(out.shutdown(Shutdown::Both)),
            }
        }
        if !head_only && http::read_body(up_in, &mut reply).is_err() {
            return;
        }
        s.bytes.fetch_add(reply.body.len() as u64, Ordering::Relaxed);
        if let Some((from, to)) = swap {
            let mut at = 0;
            while let Some(i) = reply.body[at..].windows(from.len()).position(|w| w == from) {
                reply.body[at + i..at + i + to.len()].copy_from_slice(&to);
                at += i + to.len();
            }
        }
        let sent = match fault {
            Some(Fault::Truncate) => {
                let head = reply.head_bytes(Some(reply.body.len()));
                let half = reply.body.len() / 2;
                let _ = out.write_all(&head).and_then(|()| out.write_all(&reply.body[..half]));
                return drop(out.shutdown(Shutdown::Both));
            }
            Some(Fault::StallBody(d)) => {
                let head = reply.head_bytes(Some(reply.body.len()));
                let half = reply.body.len() / 2;
                if out.write_all(&head).and_then(|()| out.write_all(&reply.body[..half])).is_ok() {
                    s.stalls.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(d);
                }
                return drop(out.shutdown(Shutdown::Both));
            }
            Some(Fault::Flood) => {
                let head = reply.head_bytes(Some(1 << 40));
                let mut sent = 0u64;
                if out.write_all(&head).and_then(|()| out.write_all(&reply.body)).is_ok() {
                    let zeros = vec![0u8; 1 << 16];
                    while sent < 256 << 20 && out.write_all(&zeros).is_ok() {
                        sent += zeros.len() as u64;
                    }
                }
                s.bytes.fetch_add(sent, Ordering::Relaxed);
                return drop(out.shutdown(Shutdown::Both));
            }
            Some(Fault::LongLength) => {
                let head = reply.head_bytes(Some(reply.body.len() + 10));
                let _ = out.write_all(&head).and_then(|()| out.write_all(&reply.body));
                return drop(out.shutdown(Shutdown::Both));
            }
            Some(Fault::Corrupt) => {
                let mid = reply.body.len() / 2;
                if let Some(b) = reply.body.get_mut(mid) {
                    *b ^= 0x5a;
                }
                reply.write(&mut out)
            }
            Some(Fault::Whole) => {
                reply.start = "HTTP/1.1 200 OK".into();
                reply.remove_header("content-range");
                reply.write(&mut out)
            }
            Some(Fault::WrongRange) => {
                if let Some(cr) = reply.header("content-range").map(str::to_owned) {
                    reply.set_header("Content-Range", shift(&cr));
                }
                reply.write(&mut out)
            }
            Some(Fault::Status(code)) => Message::response(code, "Injected").write(&mut out),
            _ => reply.write(&mut out),
        };
        if sent.is_err() {
            return;
        }
    }
}

/// `bytes A-B/T` as `bytes A+1-B+1/T` (or `A-1-B-1` at the end).
fn shift(cr: &str) -> String {
    let parse = || {
        let rest = cr.strip_prefix("bytes ")?;
        let (span, total) = rest.split_once('/')?;
        let (a, b) = span.split_once('-')?;
        Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?, total.parse::<u64>().ok()?))
    };
    match parse() {
        Some((a, b, t)) if b + 1 < t => format!("bytes {}-{}/{t}", a + 1, b + 1),
        Some((a, b, t)) if a > 0 => format!("bytes {}-{}/{t}", a - 1, b - 1),
        _ => cr.to_owned(),
    }
}
