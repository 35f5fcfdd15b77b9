//! Opening a pack by URL with HTTP Range requests, and fetching its blobs
//! as reads ask for them.
//!
//! Opening is core's [`LazyOpen`] plan, driven by `fetch`: three requests
//! at most, none proportional to the data:
//!
//! 1. the last [`TAIL_LEN`](packfs_core::pack::TAIL_LEN) bytes
//!    (`Range: bytes=-65536`): the trailer, which says where the index
//!    region is, the pack's length (from `Content-Range`), and often the
//!    whole index of a small pack;
//! 2. the header (`bytes=0-63`) and
//! 3. whatever of the index region the first request did not cover,
//!
//! the last two at the same time. The plan checks each reply is the range
//! asked for; the core then checks the header, trailer and index as it
//! does for any pack. A blob is fetched on the first read
//! that needs it ([`Remote::run`]); adjacent wanted blobs are fetched in one
//! request. Every reply is read no further than the range asked for (a
//! server that sends more fails that request, and nothing it sent is
//! buffered past the range), with one exception: a server that ignores
//! `Range` answers the opening's tail request with `200` and the whole
//! pack, which is then complete; that reply is taken up to its
//! `Content-Length`, and at most [`MAX_WHOLE_PACK`] (1 GiB) in any case.
//! A `200` to any later request is refused: the server honoured `Range`
//! at the opening.
//!
//! A pack replaced on the server while it is read is noticed by its `ETag`
//! (else `Last-Modified`) when the server sends one: a reply that carries
//! another than the first is refused. A server that sends neither is not
//! checked.
//!
//! Fetched extents persist across page loads (`persist`), keyed by their
//! checksum and length under the pack's directory: in a dedicated Worker
//! in the Origin Private File System, which its blocking reads reach
//! synchronously, else in the Cache API (secure contexts). A later load
//! finds them there, checks them as it checks fetched bytes, and fetches
//! only the rest. Browsers do not cache `206` replies themselves.
//!
//! Where a thread has no synchronous `XMLHttpRequest` (Node, Deno, Bun),
//! a blocking read goes through the function `Pack.setBlockingGet`
//! installed ([`get_blocking`]); packfs-web's own JavaScript installs one
//! there, which reads a `file:` URL from disk and, in the runner's worker,
//! asks the runner's thread to fetch an `http(s)` one. A `file:` URL is
//! read only so, opening included: no `fetch` reads a range of a file.
//!
//! Cross-origin packs need CORS with `Range` allowed and `Content-Range`
//! exposed (`Access-Control-Expose-Headers: Content-Range`; add `ETag` for
//! the check above, where `Last-Modified` is readable without it).

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use js_sys::{Function, Promise, Reflect, Uint8Array};
use std::ops::Range;

use packfs_core::pack::layout::MAX_FETCHED_INDEX;
use packfs_core::pack::{LazyOpen, OpenStep, PackFs, Partial, ReadOptions, until_loaded, until_loaded_async};
use packfs_core::{Error, RemoteFailure, Result};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Headers, ReadableStream, ReadableStreamDefaultReader, Request, RequestInit, Response, XmlHttpRequest,
    XmlHttpRequestResponseType,
};

use crate::persist::Persist;

/// A pack whose blobs arrive as reads ask for them (core's [`Partial`]);
/// one opened from bytes is simply complete.
pub type LazyPack = PackFs<Partial>;

/// Opens the pack in `bytes`, all of it here.
pub fn complete(bytes: Vec<u8>, options: ReadOptions) -> Result<LazyPack> {
    PackFs::open_partial(bytes.len() as u64, vec![(0, bytes)], options)
}

#[wasm_bindgen]
extern "C" {
    /// The global `fetch`, in a window or a worker alike.
    #[wasm_bindgen(js_name = fetch)]
    fn global_fetch(request: &Request) -> Promise;
}

/// A pack at a URL, and what fetching it has cost so far.
pub struct Remote {
    /// The pack.
    pub pack: Arc<LazyPack>,
    url: String,
    /// The pack's `ETag` (else `Last-Modified`) when it was opened, if the
    /// server sends one (cross-origin: and exposes it): a later response
    /// with another is from a changed pack, refused.
    validator: Option<String>,
    fetched: Cell<u64>,
    requests: Cell<u32>,
    persist: Option<Persist>,
}

/// One response: status, `Content-Range` (start, end inclusive, total) for a
/// 206, body.
struct Reply {
    status: u16,
    range: Option<(u64, u64, u64)>,
    validator: Option<String>,
    body: Vec<u8>,
}

impl Reply {
    /// `Io` if this reply comes from another version of the pack than
    /// `validator` names.
    fn same_pack(&self, url: &str, validator: &Option<String>) -> Result<()> {
        match (validator, &self.validator) {
            (Some(a), Some(b)) if a != b => {
                Err(remote(url, RemoteFailure::Changed, "the pack changed on the server since it was opened"))
            }
            _ => Ok(()),
        }
    }
}

fn remote(url: &str, kind: RemoteFailure, detail: impl std::fmt::Display) -> Error {
    Error::Remote { url: url.to_owned(), kind, detail: detail.to_string() }
}

/// A JavaScript exception from making or finishing a request: a timeout
/// (a blocking request's `TimeoutError`), else the transport's failure.
fn thrown(url: &str, e: &JsValue) -> Error {
    let timeout = e.dyn_ref::<js_sys::Error>().is_some_and(|e| e.name() == "TimeoutError");
    remote(url, if timeout { RemoteFailure::Timeout } else { RemoteFailure::Transport }, js_text(e))
}

/// A reply of status `status` that answers no ranged request: a status
/// that is no answer, or a `200`/`206` with the wrong bytes.
fn unanswered(url: &str, status: u16, detail: impl std::fmt::Display) -> Error {
    let kind = match status {
        200 | 206 => RemoteFailure::BadReply,
        s => RemoteFailure::Status(s),
    };
    remote(url, kind, detail)
}

fn js_text(v: &JsValue) -> String {
    v.as_string()
        .or_else(|| v.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())))
        .unwrap_or_else(|| format!("{v:?}"))
}

/// `bytes A-B/TOTAL`.
fn parse_content_range(s: &str) -> Option<(u64, u64, u64)> {
    let rest = s.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (a, b) = span.split_once('-')?;
    let (a, b, total) = (a.trim().parse().ok()?, b.trim().parse().ok()?, total.trim().parse().ok()?);
    (a <= b && b < total).then_some((a, b, total))
}

/// The `Range` header for `w` (never empty: empty blobs are never wanted).
fn range(w: &Range<u64>) -> String {
    format!("bytes={}-{}", w.start, w.end - 1)
}

/// Most milliseconds one blocking request may take.
const BLOCKING_TIMEOUT_MS: u32 = 60_000;

thread_local! {
    /// This thread's blocking transport, if one is installed.
    static BLOCKING_GET: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Installs `get` as this thread's blocking transport (`None`: back to
/// `XMLHttpRequest`).
pub fn set_blocking_get(get: Option<Function>) {
    BLOCKING_GET.with(|g| *g.borrow_mut() = get);
}

/// Whether this thread is a page's (a window's), which has a `document`.
fn on_page() -> bool {
    Reflect::has(&js_sys::global(), &"document".into()).unwrap_or(false)
}

fn is_file(url: &str) -> bool {
    url.get(..5).is_some_and(|s| s.eq_ignore_ascii_case("file:"))
}

/// A GET of `url` with `range` as the `Range` header that blocks the
/// thread until it is answered: by the installed transport, else by a
/// synchronous `XMLHttpRequest` (allowed in workers only). `limit`: the
/// most body bytes worth receiving, the range's length (a transport may
/// fail past it; more is refused).
fn get_blocking(url: &str, range: &str, limit: Option<u64>) -> Result<Reply> {
    match BLOCKING_GET.with(|g| g.borrow().clone()) {
        Some(get) => get_by(&get, url, range, limit),
        None if is_file(url) => Err(remote(
            url,
            RemoteFailure::Transport,
            "a file: URL is read in Node, Deno and Bun, by packfs-web's init()",
        )),
        // A page's thread must not block (and a synchronous request there
        // may not even have a timeout).
        None if on_page() => Err(remote(
            url,
            RemoteFailure::Transport,
            "a read on a page's thread cannot wait for a pack's bytes: load them first, or run the guest in a worker",
        )),
        None => get_xhr(url, range),
    }
}

/// `get(url, range, limit)`'s answer, `{ status, contentRange, validator,
/// body }`, checked as any server's reply is.
fn get_by(get: &Function, url: &str, range: &str, limit: Option<u64>) -> Result<Reply> {
    let most = limit.map_or(JsValue::UNDEFINED, |n| JsValue::from(n as f64));
    let answer = get.call3(&JsValue::NULL, &url.into(), &range.into(), &most).map_err(|e| thrown(url, &e))?;
    let field = |name: &str| Reflect::get(&answer, &name.into()).unwrap_or(JsValue::UNDEFINED);
    let bad = |what: &str| remote(url, RemoteFailure::BadReply, format!("the blocking transport's {what}"));
    let status = field("status").as_f64().filter(|s| s.fract() == 0.0 && (0.0..1000.0).contains(s));
    let status = status.ok_or_else(|| bad("status is not an HTTP status"))? as u16;
    let body = field("body").dyn_into::<Uint8Array>().map_err(|_| bad("body is not a Uint8Array"))?;
    if limit.is_some_and(|l| u64::from(body.length()) > l) {
        return Err(bad("body is longer than the range asked for"));
    }
    let range = field("contentRange").as_string().as_deref().and_then(parse_content_range);
    Ok(Reply { status, range, validator: field("validator").as_string(), body: body.to_vec() })
}

/// [`get_blocking`] by a synchronous `XMLHttpRequest`.
fn get_xhr(url: &str, range: &str) -> Result<Reply> {
    let err = |e: JsValue| thrown(url, &e);
    let xhr = XmlHttpRequest::new().map_err(err)?;
    xhr.open_with_async("GET", url, false).map_err(err)?;
    // A server that stalls fails the read (EIO) rather than holding the
    // worker for ever (`runP1`'s own `timeout` ends the run sooner).
    xhr.set_timeout(BLOCKING_TIMEOUT_MS);
    xhr.set_request_header("Range", range).map_err(err)?;
    xhr.set_response_type(XmlHttpRequestResponseType::Arraybuffer);
    xhr.send().map_err(err)?;
    let header = |name| xhr.get_response_header(name).ok().flatten();
    let range = header("Content-Range").as_deref().and_then(parse_content_range);
    let validator = header("ETag").or_else(|| header("Last-Modified"));
    let body = Uint8Array::new(&xhr.response().map_err(err)?).to_vec();
    Ok(Reply { status: xhr.status().map_err(err)?, range, validator, body })
}

/// A request under way: by `fetch`, or (a `file:` URL) answered already.
enum Pending {
    Fetch(JsFuture),
    Answered(Result<Reply>),
}

/// Starts a GET of `url`, with `range` as the `Range` header; the future
/// runs once awaited, but the request is already on its way. A `file:`
/// URL is read at once, by the blocking transport.
fn start(url: &str, range: Option<&str>) -> Result<Pending> {
    if is_file(url) {
        return Ok(Pending::Answered(get_blocking(url, range.unwrap_or("bytes=0-"), None)));
    }
    let headers = Headers::new().map_err(|e| thrown(url, &e))?;
    if let Some(r) = range {
        headers.set("Range", r).map_err(|e| thrown(url, &e))?;
    }
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_headers(&headers);
    let req = Request::new_with_str_and_init(url, &init).map_err(|e| thrown(url, &e))?;
    Ok(Pending::Fetch(JsFuture::from(global_fetch(&req))))
}

/// The most of a pack the opening takes from a server that ignores
/// `Range` (a `200` to the tail request: the whole pack): 1 GiB, as much
/// as it takes of an index region from one that honours it
/// ([`MAX_FETCHED_INDEX`]). Without it a hostile server's endless body
/// would be buffered whole.
pub const MAX_WHOLE_PACK: u64 = MAX_FETCHED_INDEX;

/// How much of a reply's body is taken, by its status: at most `.0`
/// bytes, `.1` saying why in the error past it.
type Limit = fn(u16, u64) -> (u64, &'static str);

/// The range's length, whatever the status.
const ASKED: Limit = |_, len| (len, "asked for");

/// The opening's tail: a `206` the length asked for, a `200` the whole
/// pack, at most [`MAX_WHOLE_PACK`].
const TAIL: Limit =
    |status, len| if status == 200 { (MAX_WHOLE_PACK, "a pack served whole may be") } else { (len, "asked for") };

/// The reply to `pending`, its body at most what `limit` says for its
/// status and `len`, the length of the range asked for: a server that
/// sends more (or says it will, in `Content-Length`) fails the request as
/// soon as it has, rather than have it all buffered.
async fn finish(url: &str, pending: Pending, len: u64, limit: Limit) -> Result<Reply> {
    let pending = match pending {
        Pending::Fetch(f) => f,
        Pending::Answered(reply) => return reply,
    };
    let resp: Response = pending.await.map_err(|e| thrown(url, &e))?.unchecked_into();
    let status = resp.status();
    let header = |name| resp.headers().get(name).ok().flatten();
    let range = header("Content-Range").as_deref().and_then(parse_content_range);
    let validator = header("ETag").or_else(|| header("Last-Modified"));
    let (most, what) = limit(status, len);
    let longer = || remote(url, RemoteFailure::BadReply, format!("the body is longer than the {most} bytes {what}"));
    if header("Content-Length").and_then(|n| n.trim().parse::<u64>().ok()).is_some_and(|n| n > most) {
        if let Some(stream) = resp.body() {
            drop(stream.cancel());
        }
        return Err(longer());
    }
    let body = match resp.body() {
        Some(stream) => body_within(url, &stream, most, longer).await?,
        None => Vec::new(),
    };
    Ok(Reply { status, range, validator, body })
}

/// `stream`'s bytes, read a chunk at a time; past `limit` the rest is
/// cancelled, unread, and the reply refused (`longer()`).
async fn body_within(url: &str, stream: &ReadableStream, limit: u64, longer: impl Fn() -> Error) -> Result<Vec<u8>> {
    let reader: ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let mut body = Vec::new();
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(|e| thrown(url, &e))?;
        if Reflect::get(&chunk, &"done".into()).ok().and_then(|d| d.as_bool()).unwrap_or(true) {
            return Ok(body);
        }
        let value = Reflect::get(&chunk, &"value".into()).unwrap_or(JsValue::UNDEFINED);
        let bytes = value
            .dyn_into::<Uint8Array>()
            .map_err(|_| remote(url, RemoteFailure::BadReply, "a body chunk is not bytes"))?;
        if body.len() as u64 + u64::from(bytes.length()) > limit {
            drop(reader.cancel());
            return Err(longer());
        }
        let at = body.len();
        body.resize(at + bytes.length() as usize, 0);
        bytes.copy_to(&mut body[at..]);
    }
}

impl Remote {
    fn count(&self, reply: &Reply) {
        self.fetched.set(self.fetched.get() + reply.body.len() as u64);
        self.requests.set(self.requests.get() + 1);
    }

    /// Opens the pack at `url`, fetching its header, index and trailer as
    /// core's [`LazyOpen`] plan says.
    /// `persist`: keep fetched extents across page loads, in a store of
    /// at most that many bytes (see `persist`).
    pub async fn open(url: String, options: ReadOptions, persist: Option<u64>) -> Result<Remote> {
        // A file on this machine is kept nowhere else.
        let persist = match persist {
            Some(bound) if !is_file(&url) => Persist::open(&url, bound).await,
            _ => None,
        };
        let (mut fetched, mut requests) = (0u64, 0u32);
        let mut tally = |r: &Reply| {
            fetched += r.body.len() as u64;
            requests += 1;
        };
        let mut plan = LazyOpen::new();
        let mut validator = None;
        loop {
            match plan.next() {
                OpenStep::Tail(len) => {
                    let tail = finish(&url, start(&url, Some(&format!("bytes=-{len}")))?, len, TAIL).await?;
                    tally(&tail);
                    validator = tail.validator.clone();
                    match (tail.status, tail.range) {
                        // No Range support: this is the whole pack.
                        (200, _) => {
                            let size = tail.body.len() as u64;
                            plan.accept_tail(0, tail.body, size)?
                        }
                        (206, Some((a, _, total))) => plan.accept_tail(a, tail.body, total)?,
                        (206, _) => {
                            return Err(remote(
                                &url,
                                RemoteFailure::BadReply,
                                "partial response without a usable Content-Range (CORS must expose it)",
                            ));
                        }
                        (s, _) => return Err(unanswered(&url, s, format!("HTTP {s}"))),
                    }
                }
                OpenStep::Fetch(ranges) => {
                    let mut pending = Vec::with_capacity(ranges.len());
                    for r in ranges {
                        pending.push((r.start, r.end - r.start, start(&url, Some(&range(&r)))?));
                    }
                    for (at, len, pending) in pending {
                        let r = finish(&url, pending, len, ASKED).await?;
                        tally(&r);
                        r.same_pack(&url, &validator)?;
                        match (r.status, r.range) {
                            (206, Some((a, _, total))) if Some(total) == plan.size() => plan.accept(a, r.body)?,
                            (200, _) => plan.accept(0, r.body)?,
                            (s, _) => return Err(unanswered(&url, s, format!("HTTP {s} to a Range request at {at}"))),
                        }
                    }
                }
                OpenStep::Open => break,
            }
        }
        // Not a pack, or a damaged one: the core says what is wrong.
        let pack = plan.open(options)?;
        let (fetched, requests) = (Cell::new(fetched), Cell::new(requests));
        Ok(Remote { pack: Arc::new(pack), url, validator, fetched, requests, persist })
    }

    /// The pack's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A promise that resolves once what was fetched so far is in the
    /// persistent store, or failed to be (at once without one).
    pub fn persisted(&self) -> Promise {
        self.persist.as_ref().map_or_else(|| Promise::resolve(&JsValue::UNDEFINED), Persist::settled)
    }

    /// Body bytes received so far.
    pub fn bytes_fetched(&self) -> u64 {
        self.fetched.get()
    }

    /// Requests made so far.
    pub fn requests(&self) -> u32 {
        self.requests.get()
    }

    /// Stores the ranges `wants`: what the persistent store holds of them
    /// from there, the rest fetched (all at once), then kept there too.
    async fn fetch(&self, wants: Vec<Range<u64>>) -> Result<()> {
        let wants = match &self.persist {
            Some(p) => p.restore(&self.pack, wants).await,
            None => wants,
        };
        let mut pending = Vec::with_capacity(wants.len());
        for w in wants {
            let p = start(&self.url, Some(&range(&w)))?;
            pending.push((w, p));
        }
        for (w, p) in pending {
            let r = finish(&self.url, p, w.end - w.start, ASKED).await?;
            self.store(&w, &r)?;
        }
        Ok(())
    }

    /// Fetches the ranges `wants` one after the other with synchronous
    /// requests, which block the thread: for a Web Worker, whose guest
    /// must see a read wait, never fail, for bytes not here yet.
    /// What the persistent store holds (in OPFS: the Cache API has no
    /// synchronous form) comes from there.
    fn fetch_blocking(&self, wants: Vec<Range<u64>>) -> Result<()> {
        let wants = match &self.persist {
            Some(p) => p.restore_now(&self.pack, wants),
            None => wants,
        };
        // Bounded by what was asked, not by the pack's length, which the
        // server chose: a small read must not make a transport buffer (and
        // the runner's thread copy across) a large pack a server sends
        // whole.
        for w in wants {
            let r = get_blocking(&self.url, &range(&w), Some(w.end - w.start))?;
            self.store(&w, &r)?;
        }
        Ok(())
    }

    /// Checks a reply to the request for `w`, stores its blobs and keeps
    /// them in the persistent store.
    fn store(&self, w: &Range<u64>, r: &Reply) -> Result<()> {
        self.count(r);
        r.same_pack(&self.url, &self.validator)?;
        let total = self.pack.info().pack_len;
        let at = match (r.status, r.range) {
            (206, Some((a, b, t)))
                if a == w.start && b + 1 == w.end && t == total && r.body.len() as u64 == w.end - w.start =>
            {
                w.start
            }
            // A 200 (the whole pack) cannot be here: the body was cut at
            // the range's length, and a server that ignores ranges gave
            // the whole pack at the opening.
            (s, _) => return Err(unanswered(&self.url, s, format!("HTTP {s} to a Range request at {}", w.start))),
        };
        self.pack.store(at, &r.body)?;
        if let Some(persist) = &self.persist {
            persist.keep(&self.pack, at, &r.body);
        }
        Ok(())
    }

    /// Fetches, with blocking requests, the blobs the last operation
    /// wanted; true if there were any. For a Worker, where a guest's read
    /// must wait for its bytes.
    pub fn fetch_wanted_blocking(&self) -> Result<bool> {
        let wants = self.pack.take_wanted();
        if wants.is_empty() {
            return Ok(false);
        }
        self.fetch_blocking(wants)?;
        Ok(true)
    }

    /// Fetches, without blocking, the blobs the last operation wanted; true
    /// if there were any. For a caller that can await (a component
    /// transpiled for JSPI).
    pub async fn fetch_wanted(&self) -> Result<bool> {
        let wants = self.pack.take_wanted();
        if wants.is_empty() {
            return Ok(false);
        }
        self.fetch(wants).await?;
        Ok(true)
    }

    /// Runs `op`; while it fails for want of blobs, fetches them and runs it
    /// again ([`until_loaded_async`]). Each round fetches at least one new
    /// blob, so this ends.
    pub async fn run<T>(&self, op: impl FnMut() -> Result<T>) -> Result<T> {
        // What earlier operations wanted is not this one's to fetch.
        self.pack.take_wanted();
        until_loaded_async(op, Result::is_err, || self.fetch_wanted()).await?
    }

    /// [`run`](Self::run), fetching blocking ([`until_loaded`]): for a
    /// worker's synchronous calls.
    pub fn run_blocking<T>(&self, op: impl FnMut() -> Result<T>) -> Result<T> {
        self.pack.take_wanted();
        until_loaded(op, Result::is_err, || self.fetch_wanted_blocking())?
    }

    /// Fetches every blob not here yet (adjacent ones in one request).
    pub async fn load_all(&self) -> Result<()> {
        let missing = self.pack.missing();
        if missing.is_empty() {
            return Ok(());
        }
        self.fetch(missing).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_ranges_parse() {
        assert_eq!(parse_content_range("bytes 0-63/1000"), Some((0, 63, 1000)));
        assert_eq!(parse_content_range("bytes 936-999/1000"), Some((936, 999, 1000)));
        assert_eq!(parse_content_range("bytes 0-63/*"), None);
        assert_eq!(parse_content_range("bytes 9-3/10"), None);
        assert_eq!(parse_content_range("bytes 0-10/10"), None);
    }
}
