//! A durable tree in the browser: a [`MemFs`](packfs_core::MemFs) whose
//! every change is appended to a log in the Origin Private File System and
//! flushed before it is acknowledged, and replayed when the same name is
//! opened again: after a reload, a crash, or in another tab.
//!
//! The log is `packfs/journals/NAME.log`, in core's journal format
//! (`docs/journal-format.md`; generation 0, with no checkpoint pack): as
//! the host's journal, a torn tail is cut off when it is opened, and a log
//! damaged anywhere else is refused and left as it was. It holds every
//! change since it was made, so its growth is bounded as the host's is
//! between checkpoints: under a quota (`maxBytes`) by 16 times the quota
//! (64 MiB at least) from one open to the next, a change past that failing
//! with `Quota` (EDQUOT), and whatever the quota by [`MAX_LOG`], past which
//! it could not be opened again (`NoSpace`, ENOSPC). (There are no
//! checkpoints yet: a log held at its bound takes no more changes.) One
//! worker at a time has it open (OPFS locks the file): another, in this
//! tab or another, is refused with `busy`. Only a dedicated Worker may
//! open one.

use std::sync::{Arc, Mutex};

use packfs_core::journal::{HEADER_LEN, Header, Sink, replay};
use packfs_core::mem::{Quota, Tree};
use packfs_core::sync::lock;
use packfs_core::{BackendFault, Code, Error, MemFs, OsError};
use wasm_bindgen::JsValue;

use crate::clock::clock;
use crate::error::{js_error, to_js, type_error};
use crate::opfs::{OpfsError, SyncFile};

/// Most bytes of log replayed at open (all of it is read into memory), and
/// so the most it may grow to.
const MAX_LOG: u64 = 1 << 31;
/// Under a quota, a log may grow by this many times the quota from one
/// open to the next ...
const LOG_PER_QUOTA: u64 = 16;
/// ... and by at least this much (as the host's journal).
const LOG_MIN: u64 = 64 << 20;

/// The log file as a [`Sink`]: positional appends, each flushed before the
/// change is published.
struct OpfsLog {
    file: SyncFile,
    state: Mutex<State>,
}

struct State {
    len: u64,
    /// The most bytes the log may reach, and the error past it.
    limit: (u64, Error),
    seq: u64,
    /// Set when a failed append could not be undone, or a flush failed.
    closed: Option<&'static str>,
}

/// A failure of the log's file as core's error: the quota is
/// `insufficient-space`, the rest `io`.
fn failed(what: &'static str, e: OpfsError) -> Error {
    match e {
        OpfsError::NoSpace => Error::NoSpace,
        e => Error::Os(OsError::new(what, std::io::Error::other(e.to_string()))),
    }
}

impl Sink for OpfsLog {
    fn append(&self, record: &[u8]) -> packfs_core::Result<u64> {
        let mut st = lock(&self.state);
        if let Some(why) = st.closed {
            return Err(Error::backend(BackendFault::Closed, why));
        }
        if st.len.saturating_add(record.len() as u64) > st.limit.0 {
            return Err(st.limit.1.clone());
        }
        let mut written = self.file.write_all_at(st.len, record);
        // The origin's quota: fetched chunks kept for later loads give
        // their space back first, then the record is tried again.
        if matches!(written, Err(OpfsError::NoSpace))
            && self.file.truncate(st.len).is_ok()
            && crate::persist::give_back()
        {
            written = self.file.write_all_at(st.len, record);
        }
        if let Err(e) = written {
            // A record half in the log would end replay early and hide
            // every later one: take it back, or take no more.
            if self.file.truncate(st.len).is_err() {
                st.closed = Some("a failed journal append could not be undone: reopen the journal");
            }
            return Err(failed("journal append", e));
        }
        st.len += record.len() as u64;
        st.seq += 1;
        Ok(st.seq)
    }

    fn sync(&self, _seq: u64) -> packfs_core::Result<()> {
        let mut st = lock(&self.state);
        if let Some(why) = st.closed {
            return Err(Error::backend(BackendFault::Closed, why));
        }
        self.file.flush().map_err(|e| {
            // What the flush did not write may or may not be there after a
            // reload: no later flush can vouch for it.
            st.closed = Some("a journal flush failed: reopen the journal");
            failed("journal flush", e)
        })
    }

    fn durable_before_visible(&self) -> bool {
        true
    }
}

/// `name` as a journal's name: 1 to 128 letters, digits, `.`, `_` or `-`,
/// and not `.` or `..`.
fn check_name(name: &str) -> Result<(), String> {
    let ok = (1..=128).contains(&name.len())
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && name != "."
        && name != "..";
    if ok {
        Ok(())
    } else {
        Err(format!("a journal's name must be 1 to 128 letters, digits, '.', '_' or '-' (not . or ..), not {name:?}"))
    }
}

/// An OPFS failure opening journal `name`, for JavaScript.
fn open_error(name: &str, e: OpfsError) -> JsValue {
    let code = match e {
        OpfsError::Unsupported => Code::Unsupported,
        OpfsError::InUse => Code::Busy,
        OpfsError::NoSpace => Code::InsufficientSpace,
        OpfsError::Other(_) => Code::Io,
    };
    js_error(code, &format!("{}: journal {name:?}: {e}", code.name()))
}

/// Opens (creating when missing) journal `name` with quotas `limits`.
pub(crate) async fn open(name: &str, limits: Quota) -> Result<MemFs, JsValue> {
    check_name(name).map_err(|m| type_error(&m))?;
    let path = format!("packfs/journals/{name}.log");
    let file = SyncFile::open("journals", &format!("{name}.log")).await.map_err(|e| open_error(name, e))?;
    let io = |e| open_error(name, e);
    let size = file.size().map_err(io)?;
    let (tree, len) = if size == 0 {
        let header = Header { generation: 0, created: clock()(), image: false };
        file.write_all_at(0, &header.encode()).and_then(|()| file.flush()).map_err(io)?;
        (Tree::new(header.created, limits), HEADER_LEN as u64)
    } else {
        if size > MAX_LOG {
            return Err(js_error(Code::FileTooLarge, &format!("file-too-large: {path}: {size} bytes of log")));
        }
        let mut log = vec![0; usize::try_from(size).unwrap_or(usize::MAX)];
        let n = file.read_at(0, &mut log).map_err(io)?;
        log.truncate(n);
        let corrupt = |e: Error| to_js(&e, Some(&path));
        let header = Header::decode(&log).map_err(corrupt)?;
        if header.generation != 0 {
            let found = format!("a log of generation {}, not 0", header.generation);
            return Err(js_error(Code::Io, &format!("io: {path}: {found}")));
        }
        let mut tree = Tree::new(header.created, limits);
        let replayed = replay(&mut tree, &header, &log[HEADER_LEN..]).map_err(corrupt)?;
        let len = HEADER_LEN as u64 + replayed.valid_len;
        // Cut a torn tail: appends go right after the last good record.
        if len != size {
            file.truncate(len).and_then(|()| file.flush()).map_err(io)?;
        }
        (tree, len)
    };
    let log = OpfsLog { file, state: Mutex::new(State { len, limit: log_limit(len, limits), seq: 0, closed: None }) };
    Ok(MemFs::journaled(tree, Arc::new(log), clock()))
}

/// The most bytes a log of `len` bytes at open may reach under `limits`,
/// and the error for a change past it.
fn log_limit(len: u64, limits: Quota) -> (u64, Error) {
    let grown = limits.max_bytes.map(|q| len.saturating_add(q.saturating_mul(LOG_PER_QUOTA).max(LOG_MIN)));
    match grown {
        Some(g) if g < MAX_LOG => (g, Error::Quota),
        _ => (MAX_LOG, Error::NoSpace),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_grow_within_their_quota_and_never_past_what_opens() {
        let quota = |q| Quota { max_bytes: Some(q), max_inodes: None };
        assert_eq!(log_limit(100, quota(1 << 20)), (100 + LOG_MIN, Error::Quota));
        assert_eq!(log_limit(100, quota(16 << 20)), (100 + (256 << 20), Error::Quota));
        assert_eq!(log_limit(100, quota(1 << 30)), (MAX_LOG, Error::NoSpace));
        assert_eq!(log_limit(100, Quota::default()), (MAX_LOG, Error::NoSpace));
    }

    #[test]
    fn names() {
        for good in ["a", "notes", "v1.2_x-y", &"n".repeat(128)] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "é", &"n".repeat(129)] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }
}
