//! `wasi:filesystem@0.3.0`, exported (feature `p3`): the same namespace
//! and descriptor model as 0.2's (`fs`), with the component model's own
//! streams and futures. A call that can wait is an async export and
//! starts the task that writes every stream (`pump`); the four that hand
//! out streams are sync, and queue their stream's work for it. Answers as
//! the host's own 0.3 adapter (host/src/p3) gives them: a file's stream
//! ends at its end or at an error, which its future then carries.
//!
//! Host directories passed through are 0.2's only (their streams are the
//! host's `wasi:io`): a 0.3 guest's preopens are PackFS's.

use std::cell::RefCell;
use std::sync::Arc;

use packfs_core::wasi::descriptor::{Descriptor, Listing, Node};
use packfs_core::{Code, Error, Metadata, SetTime, Timestamp};

use crate::Virt;
use crate::bindings::exports::wasi::filesystem::types as t2;
use crate::bindings::exports::wasi::filesystem3::{preopens, types as t};
use crate::bindings::generated::wasi::clocks0_3_0::system_clock::Instant;
use crate::bindings::{wit_future, wit_stream};
use crate::convert::{descriptor_flags, follow, model_flags, open_flags};
use crate::held::Held;
use crate::io::scratch;
use crate::{namespace, pump};
use wit_bindgen::rt::async_support::{FutureReader, StreamReader, StreamResult};

type E = t::ErrorCode;
type R<T> = Result<T, E>;
type Done = FutureReader<R<()>>;

/// Entries a listing's stream is given at a time.
const ENTRIES_PER_WRITE: usize = 64;

/// A 0.3 descriptor: PackFS's, or the error its preopen failed with.
pub(crate) enum Desc3 {
    Ours { d: Descriptor, _held: Held },
    Failed { error: Error, _held: Held },
}

impl Desc3 {
    fn d(&self) -> R<&Descriptor> {
        match self {
            Desc3::Ours { d, .. } => Ok(d),
            Desc3::Failed { error, .. } => Err(code(error)),
        }
    }

    fn of<'a>(b: &'a t::DescriptorBorrow<'_>) -> R<&'a Descriptor> {
        b.get::<Desc3>().d()
    }
}

/// PackFS's error as 0.3's: as 0.2's, but 0.3 has no `would-block` (a call
/// waits instead): `busy`, if ever.
fn code(e: &Error) -> E {
    match e.code() {
        Code::NoEntry => E::NoEntry,
        Code::Exist => E::Exist,
        Code::NotDirectory => E::NotDirectory,
        Code::IsDirectory => E::IsDirectory,
        Code::NotEmpty => E::NotEmpty,
        Code::Access => E::Access,
        Code::NotPermitted => E::NotPermitted,
        Code::ReadOnly => E::ReadOnly,
        Code::Loop => E::Loop,
        Code::NameTooLong => E::NameTooLong,
        Code::InsufficientSpace => E::InsufficientSpace,
        Code::Quota => E::Quota,
        Code::CrossDevice => E::CrossDevice,
        Code::Invalid => E::Invalid,
        Code::FileTooLarge => E::FileTooLarge,
        Code::BadDescriptor => E::BadDescriptor,
        Code::TooManyLinks => E::TooManyLinks,
        Code::Unsupported => E::Unsupported,
        Code::Busy | Code::WouldBlock => E::Busy,
        Code::Io => E::Io,
    }
}

fn ours<T>(r: packfs_core::Result<T>) -> R<T> {
    r.map_err(|e| code(&e))
}

fn instant(t: Timestamp) -> Instant {
    Instant { seconds: i64::try_from(t.secs).unwrap_or(i64::MAX), nanoseconds: t.nanos }
}

fn stat(m: Metadata) -> t::DescriptorStat {
    t::DescriptorStat {
        type_: kind(m.kind),
        link_count: m.nlink,
        size: m.size,
        data_access_timestamp: Some(instant(m.atime)),
        data_modification_timestamp: Some(instant(m.mtime)),
        status_change_timestamp: Some(instant(m.ctime)),
    }
}

fn kind(k: packfs_core::FileType) -> t::DescriptorType {
    match k {
        packfs_core::FileType::File => t::DescriptorType::RegularFile,
        packfs_core::FileType::Dir => t::DescriptorType::Directory,
        packfs_core::FileType::Symlink => t::DescriptorType::SymbolicLink,
    }
}

/// A new time; PackFS keeps times from 1970 on, so an earlier one is
/// `invalid`.
fn set_time(n: t::NewTimestamp) -> R<SetTime> {
    Ok(match n {
        t::NewTimestamp::NoChange => SetTime::Keep,
        t::NewTimestamp::Now => SetTime::Now,
        t::NewTimestamp::Timestamp(i) => {
            SetTime::At(Timestamp::new(u64::try_from(i.seconds).map_err(|_| E::Invalid)?, i.nanoseconds))
        }
    })
}

// 0.3's flags are 0.2's, bit for bit: 0.2's conversions serve.
fn flags2(f: t::DescriptorFlags) -> t2::DescriptorFlags {
    t2::DescriptorFlags::from_bits_retain(f.bits())
}

fn path_follow(f: t::PathFlags) -> bool {
    follow(t2::PathFlags::from_bits_retain(f.bits()))
}

/// A future settled with `r`, written by the pump (a write needs a task).
fn settled(r: R<()>) -> Done {
    let (tx, rx) = wit_future::new::<R<()>>(|| Err(E::Io));
    pump::submit(async move {
        let _ = tx.write(r).await;
    });
    rx
}

/// A stream that ends at once, and its future settled with `r`.
fn ended<T: crate::bindings::wit_stream::StreamPayload + 'static>(r: R<()>) -> (StreamReader<T>, Done) {
    let (tx, rx) = wit_stream::new::<T>();
    pump::submit(async move { drop(tx) });
    (rx, settled(r))
}

/// A place for one more descriptor or stream.
fn room() -> R<Held> {
    Held::open().ok_or(E::InsufficientMemory)
}

impl preopens::Guest for Virt {
    fn get_directories() -> Vec<(t::Descriptor, String)> {
        let into = |(path, d, held): (String, packfs_core::Result<Descriptor>, Held)| {
            let desc = match d {
                Ok(d) => Desc3::Ours { d, _held: held },
                Err(error) => Desc3::Failed { error, _held: held },
            };
            (t::Descriptor::new(desc), path)
        };
        namespace::preopens().into_iter().map(into).collect()
    }
}

impl t::Guest for Virt {
    type Descriptor = Desc3;
}

impl crate::bindings::exports::packfs::virt::pump::Guest for Virt {
    async fn start() {
        pump::start();
    }
}

/// Bytes a stream moves at a time: what a stream the guest holds and has
/// not read (or written) costs the component while it waits.
const PIECE: usize = 16 << 10;

/// Writes a file, from `at` or appended, from the guest's stream until it
/// ends or a write fails; the future then says how that went. (Bytes are
/// read from the guest before they can be written: a write that fails has
/// taken them, where the host's adapter takes none.)
fn consume(node: Arc<Node>, at: Option<u64>, sync: bool, mut data: StreamReader<u8>) -> Done {
    let Some(held) = Held::stream() else {
        drop(data);
        return settled(Err(E::InsufficientMemory));
    };
    let (tx, rx) = wit_future::new::<R<()>>(|| Err(E::Io));
    pump::submit(async move {
        let mut at = at;
        let done = loop {
            // A buffer only once the guest writes (a zero-length read waits
            // for it): a stream not written holds none.
            if let (StreamResult::Dropped | StreamResult::Cancelled, _) = data.read(Vec::new()).await {
                break Ok(());
            }
            let (status, buf) = data.read(Vec::with_capacity(PIECE)).await;
            match status {
                StreamResult::Complete(_) if !buf.is_empty() => {
                    if let Err(e) = node.write_to(at, &buf, sync) {
                        break Err(code(&e));
                    }
                    at = at.map(|p| p + buf.len() as u64);
                }
                StreamResult::Complete(_) => {}
                StreamResult::Dropped | StreamResult::Cancelled => break Ok(()),
            }
        };
        // The guest's writer is let go at once, and the place given back
        // with all the stream held.
        drop((data, held, node));
        let _ = tx.write(done).await;
    });
    rx
}

impl t::GuestDescriptor for Desc3 {
    fn read_via_stream(&self, offset: t::Filesize) -> (StreamReader<u8>, Done) {
        let node = match self.d().and_then(|d| ours(d.reader_at(offset))) {
            Ok(node) => Arc::clone(node),
            Err(e) => return ended(Err(e)),
        };
        let Some(held) = Held::stream() else { return ended(Err(E::InsufficientMemory)) };
        let (mut tx, rx) = wit_stream::new::<u8>();
        let (ftx, frx) = wit_future::new::<R<()>>(|| Err(E::Io));
        pump::submit(async move {
            let mut position = offset;
            let done = loop {
                // Read when the guest reads, as the host's adapter does:
                // nothing is held for a stream not read, and what comes is
                // what the file holds then. Of a piece the guest takes part
                // of, the rest is read again next time.
                if let (StreamResult::Dropped | StreamResult::Cancelled, _) = tx.write(Vec::new()).await {
                    break Ok(());
                }
                match scratch(PIECE, |buf| node.fs.read_at(node.ino, position, buf)) {
                    Ok(bytes) if bytes.is_empty() => break Ok(()),
                    Ok(bytes) => match tx.write(bytes).await {
                        (StreamResult::Complete(n), _) => position += n as u64,
                        _ => break Ok(()),
                    },
                    Err(e) => break Err(code(&e)),
                }
            };
            drop((tx, held, node));
            let _ = ftx.write(done).await;
        });
        (rx, frx)
    }

    fn write_via_stream(&self, data: StreamReader<u8>, offset: t::Filesize) -> Done {
        match self.d().and_then(|d| Ok((Arc::clone(ours(d.writer())?), d.syncs()))) {
            Ok((node, sync)) => consume(node, Some(offset), sync, data),
            Err(e) => settled(Err(e)),
        }
    }

    fn append_via_stream(&self, data: StreamReader<u8>) -> Done {
        match self.d().and_then(|d| Ok((Arc::clone(ours(d.writer())?), d.syncs()))) {
            Ok((node, sync)) => consume(node, None, sync, data),
            Err(e) => settled(Err(e)),
        }
    }

    fn read_directory(&self) -> (StreamReader<t::DirectoryEntry>, Done) {
        let node = match self.d().and_then(|d| ours(d.lister())) {
            Ok(node) => Arc::clone(node),
            Err(e) => return ended(Err(e)),
        };
        let Some(held) = Held::listing() else { return ended(Err(E::InsufficientMemory)) };
        let (mut tx, rx) = wit_stream::new::<t::DirectoryEntry>();
        let (ftx, frx) = wit_future::new::<R<()>>(|| Err(E::Io));
        pump::submit(async move {
            let listing = RefCell::new(Listing::new(node));
            let done = 'list: loop {
                let mut batch = Vec::new();
                while batch.len() < ENTRIES_PER_WRITE {
                    match listing.borrow_mut().next_entry() {
                        Ok(Some((e, _))) => {
                            batch.push(t::DirectoryEntry { type_: kind(e.kind), name: e.name.to_string() })
                        }
                        Ok(None) if batch.is_empty() => break 'list Ok(()),
                        Ok(None) => break,
                        Err(e) => break 'list Err(code(&e)),
                    }
                }
                if !tx.write_all(batch).await.is_empty() {
                    break Ok(());
                }
            };
            drop((tx, held, listing));
            let _ = ftx.write(done).await;
        });
        (rx, frx)
    }

    async fn advise(&self, _offset: t::Filesize, _len: t::Filesize, _advice: t::Advice) -> R<()> {
        pump::start();
        ours(self.d()?.advise())
    }

    async fn sync_data(&self) -> R<()> {
        pump::start();
        ours(self.d()?.sync())
    }

    async fn get_flags(&self) -> R<t::DescriptorFlags> {
        pump::start();
        Ok(t::DescriptorFlags::from_bits_retain(descriptor_flags(self.d()?.flags()).bits()))
    }

    async fn get_type(&self) -> R<t::DescriptorType> {
        pump::start();
        if let Desc3::Failed { .. } = self {
            return Ok(t::DescriptorType::Directory);
        }
        Ok(if self.d()?.is_dir() { t::DescriptorType::Directory } else { t::DescriptorType::RegularFile })
    }

    async fn set_size(&self, size: t::Filesize) -> R<()> {
        pump::start();
        ours(self.d()?.set_size(size))
    }

    async fn set_times(&self, atime: t::NewTimestamp, mtime: t::NewTimestamp) -> R<()> {
        pump::start();
        ours(self.d()?.set_times(set_time(atime)?, set_time(mtime)?))
    }

    async fn sync(&self) -> R<()> {
        pump::start();
        ours(self.d()?.sync())
    }

    async fn create_directory_at(&self, path: String) -> R<()> {
        pump::start();
        ours(self.d()?.create_directory_at(&path))
    }

    async fn stat(&self) -> R<t::DescriptorStat> {
        pump::start();
        Ok(stat(ours(self.d()?.stat())?))
    }

    async fn stat_at(&self, flags: t::PathFlags, path: String) -> R<t::DescriptorStat> {
        pump::start();
        Ok(stat(ours(self.d()?.stat_at(path_follow(flags), &path, None))?.1))
    }

    async fn set_times_at(&self, flags: t::PathFlags, path: String, a: t::NewTimestamp, m: t::NewTimestamp) -> R<()> {
        pump::start();
        ours(self.d()?.set_times_at(path_follow(flags), &path, set_time(a)?, set_time(m)?))
    }

    async fn link_at(&self, flags: t::PathFlags, old: String, new_dir: t::DescriptorBorrow<'_>, new: String) -> R<()> {
        pump::start();
        ours(self.d()?.link_at(path_follow(flags), &old, Desc3::of(&new_dir)?, &new))
    }

    async fn open_at(
        &self,
        flags: t::PathFlags,
        path: String,
        open: t::OpenFlags,
        f: t::DescriptorFlags,
    ) -> R<t::Descriptor> {
        pump::start();
        let held = room()?;
        let open = open_flags(t2::OpenFlags::from_bits_retain(open.bits()));
        let d = ours(self.d()?.open_at(path_follow(flags), &path, open, model_flags(flags2(f))))?;
        Ok(t::Descriptor::new(Desc3::Ours { d, _held: held }))
    }

    async fn readlink_at(&self, path: String) -> R<String> {
        pump::start();
        ours(self.d()?.readlink_at(&path))
    }

    async fn remove_directory_at(&self, path: String) -> R<()> {
        pump::start();
        ours(self.d()?.remove_directory_at(&path))
    }

    async fn rename_at(&self, old: String, new_dir: t::DescriptorBorrow<'_>, new: String) -> R<()> {
        pump::start();
        ours(self.d()?.rename_at(&old, Desc3::of(&new_dir)?, &new))
    }

    async fn symlink_at(&self, target: String, path: String) -> R<()> {
        pump::start();
        ours(self.d()?.symlink_at(&target, &path))
    }

    async fn unlink_file_at(&self, path: String) -> R<()> {
        pump::start();
        ours(self.d()?.unlink_file_at(&path))
    }

    async fn is_same_object(&self, other: t::DescriptorBorrow<'_>) -> bool {
        pump::start();
        match (self.d(), Desc3::of(&other)) {
            (Ok(a), Ok(b)) => a.is_same_object(b),
            _ => false,
        }
    }

    async fn metadata_hash(&self) -> R<t::MetadataHashValue> {
        pump::start();
        let (lower, upper) = self.d()?.metadata_hash();
        Ok(t::MetadataHashValue { lower, upper })
    }

    async fn metadata_hash_at(&self, flags: t::PathFlags, path: String) -> R<t::MetadataHashValue> {
        pump::start();
        let ((lower, upper), _, _) = ours(self.d()?.metadata_hash_at(path_follow(flags), &path, None))?;
        Ok(t::MetadataHashValue { lower, upper })
    }
}
