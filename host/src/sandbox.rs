//! What one guest run sees, whatever the guest's kind: its arguments,
//! environment, stdio and preopens, and the embedder's own data for the
//! host functions it links ([`Runner::run`](crate::Runner::run)).
//!
//! A p1 module gets it as PackFS's preview1 state
//! (`packfs_core`'s `Wasi`), a component as wasmtime-wasi's
//! `WasiCtx` beside PackFS's [`PackFsCtx`](crate::filesystem::PackFsCtx): those
//! stay reachable for a host that builds its own stores.

use std::sync::Arc;

use packfs_core::FileSystem;
use packfs_core::wasi::p1::{Wasi, io};

// Core's, whose WASI model is plumbing: shown here, their one path.
#[doc(inline)]
pub use packfs_core::wasi::Access;
#[doc(inline)]
pub use packfs_core::wasi::p1::io::Capture;

use crate::p1::{HostPlatform, Inherit};

/// Where a guest's stdin comes from.
#[derive(Debug, Clone, Default)]
pub enum Stdin {
    /// Nothing: the guest reads end of file.
    #[default]
    Empty,
    /// This process's stdin.
    Inherit,
    /// These bytes, then end of file.
    Bytes(Vec<u8>),
}

/// Where a guest's stdout or stderr goes.
#[derive(Debug, Clone, Default)]
pub enum Output {
    /// Nowhere.
    #[default]
    Discard,
    /// This process's stdout (or stderr).
    Inherit,
    /// Into memory, up to the capture's limit (past it, a write fails).
    Capture(Capture),
}

impl From<Capture> for Output {
    fn from(capture: Capture) -> Self {
        Output::Capture(capture)
    }
}

/// One guest run's world. `T` is the embedder's data, which the store
/// holds beside the guest's WASI state, for the host functions it links
/// ([`Runner::linker_mut`](crate::Runner::linker_mut)).
///
/// ```
/// use std::sync::Arc;
/// use packfs_core::MemFs;
/// use packfs_host::{Access, Capture, Sandbox};
///
/// let out = Capture::new(1 << 20);
/// let sandbox = Sandbox::new()
///     .args(["tool", "--fast"])
///     .env("LANG", "C")
///     .stdout(out.clone())
///     .preopen("/data", Arc::new(MemFs::new()), Access::ReadOnly);
/// ```
pub struct Sandbox<T = ()> {
    pub(crate) args: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) stdin: Stdin,
    pub(crate) stdout: Output,
    pub(crate) stderr: Output,
    pub(crate) preopens: Vec<(String, Arc<dyn FileSystem>, Access)>,
    pub(crate) data: T,
}

impl Sandbox<()> {
    /// A sandbox with no arguments, no environment, an empty stdin, its
    /// output discarded and no preopens.
    pub fn new() -> Self {
        Sandbox::with_data(())
    }
}

impl Default for Sandbox<()> {
    fn default() -> Self {
        Sandbox::new()
    }
}

impl<T> Sandbox<T> {
    /// As [`Sandbox::new`], with the embedder's `data` in the store.
    pub fn with_data(data: T) -> Self {
        Sandbox {
            args: Vec::new(),
            env: Vec::new(),
            stdin: Stdin::Empty,
            stdout: Output::Discard,
            stderr: Output::Discard,
            preopens: Vec::new(),
            data,
        }
    }

    /// Appends an argument (the first is the guest's `argv[0]`).
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<S: Into<String>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable (nothing of the host's is passed).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Where stdin comes from.
    pub fn stdin(mut self, stdin: Stdin) -> Self {
        self.stdin = stdin;
        self
    }

    /// Where stdout goes: an [`Output`], or a [`Capture`] to read it back.
    pub fn stdout(mut self, stdout: impl Into<Output>) -> Self {
        self.stdout = stdout.into();
        self
    }

    /// Where stderr goes: an [`Output`], or a [`Capture`] to read it back.
    pub fn stderr(mut self, stderr: impl Into<Output>) -> Self {
        self.stderr = stderr.into();
        self
    }

    /// This process's stdin, stdout and stderr.
    pub fn inherit_stdio(self) -> Self {
        self.stdin(Stdin::Inherit).stdout(Output::Inherit).stderr(Output::Inherit)
    }

    /// Preopens `fs` at `guest_path`, read-write or read-only.
    pub fn preopen(mut self, guest_path: impl Into<String>, fs: Arc<dyn FileSystem>, access: Access) -> Self {
        self.preopens.push((guest_path.into(), fs, access));
        self
    }

    /// The embedder's data.
    pub fn data(&self) -> &T {
        &self.data
    }

    /// A p1 module's preview1 state, and the data.
    pub(crate) fn p1(self) -> packfs_core::Result<(Wasi, T)> {
        let output = |o: Output, inherit: Inherit| -> Box<dyn io::Output> {
            match o {
                Output::Discard => Box::new(io::Discard),
                Output::Inherit => Box::new(inherit),
                Output::Capture(c) => Box::new(c),
            }
        };
        let stdin: Box<dyn io::Input> = match self.stdin {
            Stdin::Empty => Box::new(io::Empty),
            Stdin::Inherit => Box::new(Inherit::Stdin),
            Stdin::Bytes(b) => Box::new(io::Bytes::new(b)),
        };
        let mut wasi = Wasi::builder(Box::new(HostPlatform::default()))
            .args(self.args)
            .stdin(stdin)
            .stdout(output(self.stdout, Inherit::Stdout))
            .stderr(output(self.stderr, Inherit::Stderr));
        for (k, v) in &self.env {
            wasi = wasi.env(k, v);
        }
        for (path, fs, access) in self.preopens {
            wasi = wasi.preopen(path, fs, access);
        }
        Ok((wasi.build()?, self.data))
    }

    /// A component's wasmtime-wasi context and PackFS's, and the data.
    #[cfg(feature = "p2")]
    pub(crate) fn p2(self) -> (wasmtime_wasi::WasiCtx, crate::filesystem::PackFsCtx, T) {
        let mut wasi = wasmtime_wasi::WasiCtx::builder();
        wasi.args(&self.args).envs(&self.env);
        match self.stdin {
            Stdin::Empty => {}
            Stdin::Inherit => {
                wasi.inherit_stdin();
            }
            Stdin::Bytes(b) => {
                wasi.stdin(wasmtime_wasi::p2::pipe::MemoryInputPipe::new(b));
            }
        }
        match self.stdout {
            Output::Discard => {}
            Output::Inherit => {
                wasi.inherit_stdout();
            }
            Output::Capture(c) => {
                wasi.stdout(capture::Stream(c));
            }
        }
        match self.stderr {
            Output::Discard => {}
            Output::Inherit => {
                wasi.inherit_stderr();
            }
            Output::Capture(c) => {
                wasi.stderr(capture::Stream(c));
            }
        }
        let mut fs = crate::filesystem::PackFsCtx::builder();
        for (path, tree, access) in self.preopens {
            fs.preopen(path, tree, access);
        }
        (wasi.build(), fs.build(), self.data)
    }
}

/// A [`Capture`] as a component's stdout or stderr.
#[cfg(feature = "p2")]
mod capture {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use packfs_core::wasi::p1::io::Output as _;
    use tokio::io::AsyncWrite;
    use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

    use super::Capture;

    pub(super) struct Stream(pub(super) Capture);

    impl IsTerminal for Stream {
        fn is_terminal(&self) -> bool {
            false
        }
    }

    impl StdoutStream for Stream {
        fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
            Box::new(Writer(self.0.clone()))
        }
    }

    struct Writer(Capture);

    impl AsyncWrite for Writer {
        fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
            Poll::Ready(match self.get_mut().0.write(buf) {
                Ok(()) => Ok(buf.len()),
                Err(_) => Err(std::io::Error::other("the capture is full")),
            })
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }
}
