//! Opening packs wherever they are: a file on this host, mapped
//! (`packfs_os`); or a URL (`s3://`, `http://`, `https://`) read lazily
//! through the host-wide cache.
//!
//! [`Packs`] is the opener a program keeps: it holds how remote packs are
//! read and remembers those it opened, for their costs and their traces.
//! Every pack it opens has the one source type [`PackSource`], so a
//! namespace can mix mapped and remote packs.
//!
//! ```no_run
//! use packfs_core::FileSystem;
//! use packfs_core::pack::ReadOptions;
//! use packfs_remote::packs::Packs;
//!
//! let packs = Packs::local();
//! let pack = packs.open("app.pack".as_ref(), ReadOptions::new())?;
//! let _ = pack.root();
//! # Ok::<(), packfs_remote::packs::OpenError>(())
//! ```

use std::ops::Range;
use std::path::{Path, PathBuf};

use packfs_core::pack::{ByteSource, PackFs, ReadOptions, split_pin};
use packfs_os::mmap::MappedFile;

use crate::{Location, RemoteError, RemoteOptions, RemoteSource};

/// A pack's bytes: a mapped file, or an object in a store read lazily.
pub enum PackSource {
    /// A file on this host, mapped.
    Local(MappedFile),
    /// An object in a store or on a web server.
    Remote(RemoteSource),
}

impl ByteSource for PackSource {
    fn size(&self) -> u64 {
        match self {
            PackSource::Local(f) => f.size(),
            PackSource::Remote(r) => r.size(),
        }
    }

    fn get(&self, range: Range<u64>) -> Option<&[u8]> {
        match self {
            PackSource::Local(f) => f.get(range),
            PackSource::Remote(r) => r.get(range),
        }
    }

    fn extent(&self, k: u64, range: Range<u64>) -> Option<&[u8]> {
        match self {
            PackSource::Local(f) => f.extent(k, range),
            PackSource::Remote(r) => r.extent(k, range),
        }
    }

    fn at_hand(&self, k: u64, range: Range<u64>) -> bool {
        match self {
            PackSource::Local(f) => f.at_hand(k, range),
            PackSource::Remote(r) => r.at_hand(k, range),
        }
    }

    fn complete(&self) -> bool {
        match self {
            PackSource::Local(f) => f.complete(),
            PackSource::Remote(r) => r.complete(),
        }
    }

    fn checks_extents(&self) -> bool {
        match self {
            PackSource::Local(f) => f.checks_extents(),
            PackSource::Remote(r) => r.checks_extents(),
        }
    }

    fn changeable(&self) -> bool {
        match self {
            PackSource::Local(f) => f.changeable(),
            PackSource::Remote(r) => r.changeable(),
        }
    }
}

/// An open pack, wherever it is.
pub type Pack = PackFs<PackSource>;

/// Why a pack did not open.
///
/// The message is whole, on one line: the path and the cause. The cause
/// is a field, not also a `source()`, which an error report (anyhow's
/// `{:#}`) would print a second time.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The file could not be read.
    #[error("{}: {error}", path.display())]
    Io {
        /// The pack's path.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The bytes are no pack, or a damaged one.
    #[error("{}: {error}", path.display())]
    Damaged {
        /// The pack's path.
        path: PathBuf,
        /// What is wrong with it.
        error: packfs_core::Error,
    },
    /// A remote pack could not be opened ([`RemoteError::Pack`]: it is
    /// damaged).
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// A pin (`PACK@blake3:HEX`) that is no digest, or two that differ.
    #[error("{}: {detail}", path.display())]
    BadPin {
        /// The pack as named.
        path: PathBuf,
        /// What is wrong with the pin.
        detail: String,
    },
    /// A URL, given to an opener of local packs ([`Packs::local`]).
    #[error("{}: this opener opens packs on this host only", path.display())]
    NoRemote {
        /// The URL.
        path: PathBuf,
    },
}

impl OpenError {
    /// Whether the pack was read and found damaged (or no pack), rather
    /// than not read at all.
    pub fn is_damaged(&self) -> bool {
        matches!(self, OpenError::Damaged { .. } | OpenError::Remote(RemoteError::Pack { .. }))
    }
}

/// Opens packs, and keeps what remote ones need: their options, and the
/// packs opened so far.
pub struct Packs {
    remote: remote_state::State,
}

impl Packs {
    /// An opener of packs on this host only: a URL is refused.
    pub fn local() -> Self {
        Packs { remote: remote_state::State::refusing() }
    }

    /// An opener of local and remote packs, the latter read with the
    /// options `make` gives. They are made when the first remote pack is
    /// opened, so a program that opens none never touches the cache
    /// directory.
    pub fn with_remote(make: impl FnOnce() -> RemoteOptions + Send + 'static) -> Self {
        Packs { remote: remote_state::State::new(Box::new(make)) }
    }

    /// Opens the pack at `path`, to be read as `read` says: a file,
    /// mapped; or a URL, read lazily.
    ///
    /// A path ending in `@blake3:` and 64 hex digits (as `packfs pack` and
    /// `packfs info` print a pack's digest) names the pack it pins: it is
    /// opened as [`ReadOptions::pin`] says, and refused unless it is that
    /// pack. (So is a pin given in `read`.)
    ///
    /// ```no_run
    /// # use packfs_core::pack::{Digest, ReadOptions};
    /// # use packfs_remote::packs::Packs;
    /// let packs = Packs::local();
    /// let digest: Digest = "blake3:6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85".parse()?;
    /// let by_name = packs.open(format!("app.pack@{digest}").as_ref(), ReadOptions::new());
    /// let by_option = packs.open("app.pack".as_ref(), ReadOptions::new().pin(Some(digest)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(&self, path: &Path, read: ReadOptions) -> Result<Pack, OpenError> {
        let (path, read) = pinned(path, read)?;
        let path = path.as_path();
        // A path with a scheme (`s3://`, `http://`, anything `://`) is a
        // URL, refused when it is of no kind remote packs come from.
        if let Some(location) = path.to_str().and_then(Location::parse) {
            return self.remote.open(&location.map_err(RemoteError::from)?, read);
        }
        let file = MappedFile::open(path).map_err(|error| OpenError::Io { path: path.to_owned(), error })?;
        PackFs::open_with(PackSource::Local(file), read)
            .map_err(|error| OpenError::Damaged { path: path.to_owned(), error })
    }
}

/// `path` less a `@blake3:HEX` suffix, and `read` pinned to it.
fn pinned(path: &Path, read: ReadOptions) -> Result<(PathBuf, ReadOptions), OpenError> {
    let Some(text) = path.to_str() else { return Ok((path.to_owned(), read)) };
    let bad = |detail: String| OpenError::BadPin { path: path.to_owned(), detail };
    let (name, pin) = split_pin(text).map_err(|e| bad(e.to_string()))?;
    match (pin, read.pin_given()) {
        (Some(a), Some(b)) if a != b => Err(bad(format!("pinned twice, to {a} and to {b}"))),
        (Some(pin), _) => Ok((PathBuf::from(name), read.pin(Some(pin)))),
        (None, _) => Ok((path.to_owned(), read)),
    }
}

mod remote_state {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex, OnceLock};

    use crate::trace::Trace;
    use crate::{Cache, Location, RemoteOptions, RemoteSource};
    use packfs_core::pack::ReadOptions;
    use packfs_core::sync::lock;

    use super::{OpenError, Pack, PackSource, Packs};

    /// Makes the remote options, on the first remote pack.
    type Make = Box<dyn FnOnce() -> RemoteOptions + Send>;

    /// How remote packs are read, and those opened so far.
    pub(super) struct State {
        make: Mutex<Option<Make>>,
        options: OnceLock<RemoteOptions>,
        opened: Mutex<Vec<RemoteSource>>,
        prefetch: OnceLock<Arc<Trace>>,
        find_traces: AtomicBool,
        refuse: bool,
    }

    impl State {
        pub(super) fn new(make: Make) -> Self {
            State {
                make: Mutex::new(Some(make)),
                options: OnceLock::new(),
                opened: Mutex::new(Vec::new()),
                prefetch: OnceLock::new(),
                find_traces: AtomicBool::new(false),
                refuse: false,
            }
        }

        pub(super) fn refusing() -> Self {
            State { refuse: true, ..State::new(Box::new(RemoteOptions::default)) }
        }

        fn options(&self) -> &RemoteOptions {
            self.options.get_or_init(|| lock(&self.make).take().map_or_else(RemoteOptions::default, |make| make()))
        }

        pub(super) fn open(&self, location: &Location, read: ReadOptions) -> Result<Pack, OpenError> {
            if self.refuse {
                return Err(OpenError::NoRemote { path: location.to_string().into() });
            }
            let find_trace = self.options().find_trace || self.find_traces.load(Ordering::Relaxed);
            let options =
                RemoteOptions { read, prefetch: self.prefetch.get().cloned(), find_trace, ..self.options().clone() };
            Ok(crate::open_as(location, &options, |source| {
                lock(&self.opened).push(source.clone());
                PackSource::Remote(source)
            })?)
        }
    }

    impl Packs {
        /// Makes every remote pack opened from now on prefetch `trace`
        /// (each takes the entries that are its own). A second trace is
        /// ignored.
        pub fn prefetch(&self, trace: Trace) {
            let _ = self.remote.prefetch.set(Arc::new(trace));
        }

        /// Makes every remote pack opened from now on, unless given a
        /// trace, look for one published beside it (`PACK.trace`) and
        /// prefetch it ([`RemoteOptions::find_trace`]).
        pub fn find_traces(&self) {
            self.remote.find_traces.store(true, Ordering::Relaxed);
        }

        /// Every remote pack opened so far.
        pub fn remote_packs(&self) -> Vec<RemoteSource> {
            lock(&self.remote.opened).clone()
        }

        /// The remote options in use (their cache, their time bounds).
        pub fn remote_options(&self) -> &RemoteOptions {
            self.remote.options()
        }

        /// The cache remote packs used, if any was opened.
        pub fn remote_cache(&self) -> Option<&Cache> {
            self.remote.options.get()?.cache.as_deref()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pack's source answers every question as the source it wraps: a
    /// mapped file may change in place (so a pinned pack copies), holds
    /// every byte, and checks none itself.
    #[test]
    fn a_pack_source_answers_as_what_it_wraps() {
        type Answers = (u64, Option<Vec<u8>>, Option<Vec<u8>>, [bool; 4]);
        fn answers(s: &impl ByteSource) -> Answers {
            let flags = [s.complete(), s.checks_extents(), s.changeable(), s.at_hand(0, 0..4)];
            (s.size(), s.get(0..4).map(<[u8]>::to_vec), s.extent(0, 0..4).map(<[u8]>::to_vec), flags)
        }
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), b"some bytes").unwrap();
        let mapped = || MappedFile::open(file.path()).unwrap();
        let want = answers(&mapped());
        assert_eq!(want.3, [true, false, true, true]);
        assert_eq!(answers(&PackSource::Local(mapped())), want);
    }
}
