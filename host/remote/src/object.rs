//! One object in a store, read by byte range at the version first seen:
//! every request after the first carries its S3 version id or, failing
//! that, its ETag (`If-Match`), so that bytes of a replaced object are
//! never mixed with the old one's. A store that gives neither is not
//! checked; the extents' checksums still are.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, GetResult, ObjectStore};

use crate::error::RemoteError;

pub(crate) struct Object {
    pub url: String,
    store: Arc<dyn ObjectStore>,
    path: Path,
    version: Option<String>,
    etag: Option<String>,
    /// Set once a request found the object changed: all later ones fail.
    changed: AtomicBool,
    pub requests: AtomicU64,
    pub bytes: AtomicU64,
}

/// A reply's body, refused once it passes the `most` bytes asked for:
/// object_store checks a reply's `Content-Range`, not that its
/// `Content-Length` agrees, and a server claiming a terabyte would have the
/// host buffer it all.
pub(crate) async fn body(reply: GetResult, most: u64) -> Result<Bytes, object_store::Error> {
    let mut stream = reply.into_stream();
    let mut out = BytesMut::with_capacity(usize::try_from(most).unwrap_or(0).min(MAX_BODY));
    while let Some(piece) = stream.next().await {
        let piece = piece?;
        if (out.len() + piece.len()) as u64 > most {
            let source = format!("a reply longer than the {most} bytes asked for").into();
            return Err(object_store::Error::Generic { store: "packfs", source });
        }
        out.extend_from_slice(&piece);
    }
    Ok(out.freeze())
}

/// Most bytes set aside for a body before it arrives (requests are smaller).
const MAX_BODY: usize = 64 << 20;

impl Object {
    /// The object at `path`: its last `tail` bytes (all of it when
    /// shorter), where the reply says they start, and its length. This
    /// first reply pins the version read from then on.
    pub(crate) async fn open(
        url: String,
        store: Arc<dyn ObjectStore>,
        path: Path,
        tail: u64,
    ) -> Result<(Object, u64, Bytes, u64), RemoteError> {
        let options = GetOptions { range: Some(GetRange::Suffix(tail)), ..GetOptions::default() };
        let failed = |error| RemoteError::Store { url: url.clone(), error };
        let reply = store.get_opts(&path, options).await.map_err(failed)?;
        let (meta, range) = (reply.meta.clone(), reply.range.clone());
        // Whether these are the bytes asked for is for the caller to check.
        let body = body(reply, tail).await.map_err(failed)?;
        let object = Object {
            url,
            store,
            path,
            version: meta.version,
            etag: meta.e_tag,
            changed: AtomicBool::new(false),
            requests: AtomicU64::new(1),
            bytes: AtomicU64::new(body.len() as u64),
        };
        Ok((object, range.start, body, meta.size))
    }

    /// Bytes `range` of the version opened: at most that many (the caller
    /// checks they are all).
    pub(crate) async fn get(&self, range: Range<u64>) -> Result<Bytes, RemoteError> {
        if self.changed.load(Ordering::Relaxed) {
            return Err(RemoteError::Changed { url: self.url.clone() });
        }
        let options = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            version: self.version.clone(),
            if_match: if self.version.is_none() { self.etag.clone() } else { None },
            ..GetOptions::default()
        };
        self.requests.fetch_add(1, Ordering::Relaxed);
        let body = match self.store.get_opts(&self.path, options).await {
            // A store that ignores If-Match still names the version it sent.
            Ok(r) if self.etag.is_some() && r.meta.e_tag.is_some() && r.meta.e_tag != self.etag => {
                Err(object_store::Error::Precondition { path: self.path.to_string(), source: "another ETag".into() })
            }
            Ok(r) => body(r, range.end - range.start).await,
            Err(e) => Err(e),
        };
        let body = body.map_err(|e| {
            if matches!(e, object_store::Error::Precondition { .. }) {
                self.changed.store(true, Ordering::Relaxed);
                return RemoteError::Changed { url: self.url.clone() };
            }
            RemoteError::Store { url: self.url.clone(), error: e }
        })?;
        self.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
        Ok(body)
    }

    /// The ETag of the version opened, if the store gave one.
    pub(crate) fn etag(&self) -> Option<&str> {
        self.etag.as_deref()
    }

    pub(crate) fn changed(&self) -> bool {
        self.changed.load(Ordering::Relaxed)
    }
}
