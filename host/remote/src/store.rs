//! Connecting to the store that holds a pack (and reading or writing a
//! whole object there, such as a trace): an S3-compatible object store
//! configured as the AWS tools are (environment, then profile files), or a
//! web server. Requests are bounded in time and retried with backoff by
//! `object_store`, which also checks every ranged reply (a `206` with the
//! `Content-Range` asked for).

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::http::HttpBuilder;
use object_store::path::Path;
use object_store::{BackoffConfig, ClientOptions, ObjectStore, ObjectStoreExt, RetryConfig};

use crate::error::RemoteError;
use crate::location::Location;
use crate::profile;
use crate::runtime::block_on;

/// How requests are bounded.
#[derive(Debug, Clone)]
pub struct NetOptions {
    /// One request, from sending it to the last byte of its reply.
    pub timeout: Duration,
    /// Setting up a connection.
    pub connect_timeout: Duration,
    /// Retries of a failed request (with exponential backoff).
    pub retries: usize,
    /// No retry starts later than this after the first try.
    pub retry_timeout: Duration,
    /// After a fetch failed (retries spent), reads of extents not being
    /// fetched fail at once for this long, rather than each waiting out a
    /// failure of its own: a whole-pack walk during an outage ends soon.
    pub fail_fast: Duration,
}

impl Default for NetOptions {
    fn default() -> Self {
        NetOptions {
            timeout: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(5),
            retries: 4,
            retry_timeout: Duration::from_secs(30),
            fail_fast: Duration::from_secs(2),
        }
    }
}

/// A connected store, the object's path in it, and the *origin*: what
/// names the store and bucket, so that the cache shares content only
/// between packs of one origin (see `extent_cache/`).
pub(crate) struct Store {
    pub store: Arc<dyn ObjectStore>,
    pub path: Path,
    pub origin: String,
}

pub(crate) fn connect(location: &Location, net: &NetOptions) -> Result<Store, RemoteError> {
    let url = location.to_string();
    let config = |e: object_store::Error| RemoteError::Store { url: url.clone(), error: e };
    let client = ClientOptions::new().with_timeout(net.timeout).with_connect_timeout(net.connect_timeout);
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(2),
            base: 2.0,
        },
        max_retries: net.retries,
        retry_timeout: net.retry_timeout,
    };
    match location {
        Location::S3 { bucket, key } => {
            let mut b = AmazonS3Builder::from_env().with_bucket_name(bucket);
            // The AWS tools' order: a variable set in the environment wins
            // over the profile's setting.
            for (k, v) in profile::settings() {
                let var = format!("AWS_{}", k.trim_start_matches("aws_").to_ascii_uppercase());
                if std::env::var_os(&var).is_none()
                    && let Ok(key) = k.parse::<AmazonS3ConfigKey>()
                {
                    b = b.with_config(key, v);
                }
            }
            let endpoint = b.get_config_value(&AmazonS3ConfigKey::Endpoint).unwrap_or_default();
            let region = b.get_config_value(&AmazonS3ConfigKey::Region).unwrap_or_default();
            let client = client.with_allow_http(endpoint.starts_with("http://"));
            let store = b.with_client_options(client).with_retry(retry).build().map_err(config)?;
            let path = Path::parse(key).map_err(|e| config(e.into()))?;
            Ok(Store { store: Arc::new(store), path, origin: format!("s3 {endpoint} {region} {bucket}") })
        }
        Location::Http { url } => {
            let (base, name) = url.rsplit_once('/').expect("a parsed URL has a path");
            let client = client.with_allow_http(url.starts_with("http://"));
            let store = HttpBuilder::new()
                .with_url(base)
                .with_client_options(client)
                .with_retry(retry)
                .build()
                .map_err(config)?;
            let path = Path::from_url_path(name).map_err(|e| config(e.into()))?;
            Ok(Store { store: Arc::new(store), path, origin: format!("http {base}") })
        }
    }
}

/// The whole object at `location` (a trace, say), if it is at most
/// `limit` bytes long.
pub fn read_object(location: &Location, net: &NetOptions, limit: u64) -> Result<Vec<u8>, RemoteError> {
    let url = location.to_string();
    let store = connect(location, net)?;
    block_on(async move {
        let failed = |error| RemoteError::Store { url: url.clone(), error };
        let reply = store.store.get(&store.path).await.map_err(failed)?;
        if reply.meta.size > limit {
            return Err(RemoteError::Reply {
                url: url.clone(),
                what: format!("{} bytes, more than {limit}", reply.meta.size),
            });
        }
        Ok(reply.bytes().await.map_err(failed)?.to_vec())
    })
}

/// The whole object at `location` written to `to` as it arrives, in
/// `parallel` ranged requests of at most `piece` bytes at a time (one
/// streamed `GET` when `parallel` is 1): what a download tool does.
/// Returns its length. Holds at most `parallel` pieces in memory.
pub fn download(
    location: &Location,
    net: &NetOptions,
    to: &std::fs::File,
    parallel: usize,
    piece: u64,
) -> Result<u64, RemoteError> {
    use futures::{StreamExt, TryStreamExt};
    use std::os::unix::fs::FileExt;
    let url = location.to_string();
    let store = connect(location, net)?;
    let piece = piece.max(1);
    // A descriptor of the task's own: `block_on` runs it on the runtime.
    let to = to.try_clone();
    block_on(async move {
        let failed = |error| RemoteError::Store { url: url.clone(), error };
        let written = |e: std::io::Error| RemoteError::Reply { url: url.clone(), what: format!("writing it: {e}") };
        let to = to.map_err(written)?;
        if parallel <= 1 {
            let mut stream = store.store.get(&store.path).await.map_err(failed)?.into_stream();
            let mut at = 0u64;
            while let Some(bytes) = stream.try_next().await.map_err(failed)? {
                to.write_all_at(&bytes, at).map_err(written)?;
                at += bytes.len() as u64;
            }
            return Ok(at);
        }
        let size = store.store.head(&store.path).await.map_err(failed)?.size;
        let pieces = (0..size.div_ceil(piece.max(1))).map(|i| i * piece..((i + 1) * piece).min(size));
        let mut replies = futures::stream::iter(pieces)
            .map(|r| {
                let store = &store;
                async move { store.store.get_range(&store.path, r.clone()).await.map(|b| (r.start, b)) }
            })
            .buffer_unordered(parallel);
        while let Some((at, bytes)) = replies.try_next().await.map_err(failed)? {
            to.write_all_at(&bytes, at).map_err(written)?;
        }
        Ok(size)
    })
}

/// Writes `bytes` as the object at `location`, whole.
pub fn write_object(location: &Location, net: &NetOptions, bytes: Vec<u8>) -> Result<(), RemoteError> {
    let url = location.to_string();
    let store = connect(location, net)?;
    block_on(async move {
        store.store.put(&store.path, bytes.into()).await.map_err(|error| RemoteError::Store { url, error })?;
        Ok(())
    })
}
