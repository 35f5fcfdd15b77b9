//! Host directories passed through (`--preopen /data=dir:/srv/data`):
//! each call on one of their descriptors is the host's own, its values
//! converted between the host's `wasi:filesystem` types (imported) and the
//! guest's (exported: the same shapes), its streams wrapped as the
//! guest's (`io`). A read-only one (`dir-ro:`) answers every change here,
//! never passing it to the host (hosts differ on what a directory's call
//! on a file does: jco's shim takes the empty path as the file itself):
//! `not-permitted`, as wasmtime's read-only preopen does, or, for a call
//! on the wrong kind of descriptor, the error wasmtime gives first
//! (`bad-descriptor` for a file's call on a directory, `not-directory` for
//! a directory's on a file). What it opens is opened without write access,
//! and read-only too.

use crate::bindings::exports::wasi::filesystem::types as t;
use crate::bindings::exports::wasi::io::streams::{InputStream, OutputStream};
use crate::bindings::wasi::filesystem::types as host;
use crate::fs::{Desc, DirList};
use crate::held::Held;
use crate::io::{Reader, Writer};

type R<T> = Result<T, t::ErrorCode>;

/// One of the host's descriptors.
pub(crate) struct HostDesc {
    pub(crate) d: host::Descriptor,
    pub(crate) read_only: bool,
}

same_enum!(code, _code_back: host::ErrorCode => t::ErrorCode {
    Access, WouldBlock, Already, BadDescriptor, Busy, Deadlock, Quota, Exist, FileTooLarge,
    IllegalByteSequence, InProgress, Interrupted, Invalid, Io, IsDirectory, Loop, TooManyLinks,
    MessageSize, NameTooLong, NoDevice, NoEntry, NoLock, InsufficientMemory, InsufficientSpace,
    NotDirectory, NotEmpty, NotRecoverable, Unsupported, NoTty, NoSuchDevice, Overflow,
    NotPermitted, Pipe, ReadOnly, InvalidSeek, TextFileBusy, CrossDevice,
});

same_enum!(kind, _kind_back: host::DescriptorType => t::DescriptorType {
    Unknown, BlockDevice, CharacterDevice, Directory, Fifo, SymbolicLink, RegularFile, Socket,
});

same_enum!(_advice_to, advice: host::Advice => t::Advice {
    Normal, Sequential, Random, WillNeed, DontNeed, NoReuse,
});

fn path_flags(f: t::PathFlags) -> host::PathFlags {
    host::PathFlags::from_bits_retain(f.bits())
}

fn open_flags(f: t::OpenFlags) -> host::OpenFlags {
    host::OpenFlags::from_bits_retain(f.bits())
}

fn time(t: t::NewTimestamp) -> host::NewTimestamp {
    match t {
        t::NewTimestamp::NoChange => host::NewTimestamp::NoChange,
        t::NewTimestamp::Now => host::NewTimestamp::Now,
        t::NewTimestamp::Timestamp(t) => host::NewTimestamp::Timestamp(t),
    }
}

fn stat(s: host::DescriptorStat) -> t::DescriptorStat {
    t::DescriptorStat {
        type_: kind(s.type_),
        link_count: s.link_count,
        size: s.size,
        data_access_timestamp: s.data_access_timestamp,
        data_modification_timestamp: s.data_modification_timestamp,
        status_change_timestamp: s.status_change_timestamp,
    }
}

fn hash(h: host::MetadataHashValue) -> t::MetadataHashValue {
    t::MetadataHashValue { lower: h.lower, upper: h.upper }
}

fn host<T>(r: Result<T, host::ErrorCode>) -> R<T> {
    r.map_err(code)
}

/// A place for one more descriptor or stream.
fn room() -> R<Held> {
    Held::open().ok_or(t::ErrorCode::InsufficientMemory)
}

/// The host descriptor behind `b`: `cross-device` for one of PackFS's.
fn other<'a>(b: &'a t::DescriptorBorrow<'_>) -> R<&'a HostDesc> {
    match b.get::<Desc>() {
        Desc::Host { h, .. } => Ok(h),
        _ => Err(t::ErrorCode::CrossDevice),
    }
}

impl HostDesc {
    /// A change through this descriptor, of a file (`file`) or of a
    /// directory: always refused if read-only, with the error wasmtime
    /// would give (see the module doc); one whose kind the host cannot say
    /// is refused too.
    fn change(&self, file: bool) -> R<()> {
        if !self.read_only {
            return Ok(());
        }
        Err(match (self.d.get_type(), file) {
            (Ok(host::DescriptorType::Directory), true) => t::ErrorCode::BadDescriptor,
            (Ok(host::DescriptorType::Directory), false) | (Err(_), _) => t::ErrorCode::NotPermitted,
            (Ok(_), true) => t::ErrorCode::NotPermitted,
            (Ok(_), false) => t::ErrorCode::NotDirectory,
        })
    }

    /// `not-directory` unless this is a directory (wasmtime's first check
    /// of a directory's call).
    fn is_dir(&self) -> R<()> {
        match self.d.get_type() {
            Ok(host::DescriptorType::Directory) => Ok(()),
            Ok(_) => Err(t::ErrorCode::NotDirectory),
            Err(e) => Err(code(e)),
        }
    }

    /// A change of a directory's entries naming `to` too (link, rename):
    /// where either is read-only, both must be directories first, as
    /// wasmtime checks, then neither may be read-only.
    fn change_between(&self, to: &HostDesc) -> R<()> {
        if self.read_only || to.read_only {
            self.is_dir()?;
            to.is_dir()?;
        }
        self.dir_change()?;
        to.dir_change()
    }

    fn file_change(&self) -> R<()> {
        self.change(true)
    }

    fn dir_change(&self) -> R<()> {
        self.change(false)
    }
}

impl t::GuestDescriptor for HostDesc {
    fn read_via_stream(&self, offset: t::Filesize) -> R<InputStream> {
        let held = room()?;
        Ok(InputStream::new(Reader::Host { s: host(self.d.read_via_stream(offset))?, _held: Some(held) }))
    }

    fn write_via_stream(&self, offset: t::Filesize) -> R<OutputStream> {
        self.file_change()?;
        let held = room()?;
        Ok(OutputStream::new(Writer::Host { s: host(self.d.write_via_stream(offset))?, _held: Some(held) }))
    }

    fn append_via_stream(&self) -> R<OutputStream> {
        self.file_change()?;
        let held = room()?;
        Ok(OutputStream::new(Writer::Host { s: host(self.d.append_via_stream())?, _held: Some(held) }))
    }

    fn advise(&self, offset: t::Filesize, len: t::Filesize, a: t::Advice) -> R<()> {
        host(self.d.advise(offset, len, advice(a)))
    }

    fn sync_data(&self) -> R<()> {
        host(self.d.sync_data())
    }

    fn get_flags(&self) -> R<t::DescriptorFlags> {
        let mut flags = t::DescriptorFlags::from_bits_retain(host(self.d.get_flags())?.bits());
        if self.read_only {
            flags.remove(t::DescriptorFlags::WRITE | t::DescriptorFlags::MUTATE_DIRECTORY);
        }
        Ok(flags)
    }

    fn get_type(&self) -> R<t::DescriptorType> {
        host(self.d.get_type()).map(kind)
    }

    fn set_size(&self, size: t::Filesize) -> R<()> {
        self.file_change()?;
        host(self.d.set_size(size))
    }

    fn set_times(&self, atime: t::NewTimestamp, mtime: t::NewTimestamp) -> R<()> {
        if self.read_only {
            return Err(t::ErrorCode::NotPermitted);
        }
        host(self.d.set_times(time(atime), time(mtime)))
    }

    fn read(&self, len: t::Filesize, offset: t::Filesize) -> R<(Vec<u8>, bool)> {
        host(self.d.read(len, offset))
    }

    fn write(&self, buf: Vec<u8>, offset: t::Filesize) -> R<t::Filesize> {
        self.file_change()?;
        host(self.d.write(&buf, offset))
    }

    fn read_directory(&self) -> R<t::DirectoryEntryStream> {
        let held = Held::listing().ok_or(t::ErrorCode::InsufficientMemory)?;
        let entries = host(self.d.read_directory())?;
        Ok(t::DirectoryEntryStream::new(DirList::Host { entries, _held: held }))
    }

    fn sync(&self) -> R<()> {
        host(self.d.sync())
    }

    fn create_directory_at(&self, path: String) -> R<()> {
        self.dir_change()?;
        host(self.d.create_directory_at(&path))
    }

    fn stat(&self) -> R<t::DescriptorStat> {
        host(self.d.stat()).map(stat)
    }

    fn stat_at(&self, flags: t::PathFlags, path: String) -> R<t::DescriptorStat> {
        host(self.d.stat_at(path_flags(flags), &path)).map(stat)
    }

    fn set_times_at(&self, flags: t::PathFlags, path: String, atime: t::NewTimestamp, mtime: t::NewTimestamp) -> R<()> {
        self.dir_change()?;
        host(self.d.set_times_at(path_flags(flags), &path, time(atime), time(mtime)))
    }

    fn link_at(&self, old_flags: t::PathFlags, old: String, new_dir: t::DescriptorBorrow<'_>, new: String) -> R<()> {
        let to = other(&new_dir)?;
        self.change_between(to)?;
        host(self.d.link_at(path_flags(old_flags), &old, &to.d, &new))
    }

    fn open_at(
        &self,
        flags: t::PathFlags,
        path: String,
        open: t::OpenFlags,
        mut descriptor_flags: t::DescriptorFlags,
    ) -> R<t::Descriptor> {
        if self.read_only {
            use t::DescriptorFlags as D;
            use t::OpenFlags as O;
            // What wasmtime checks before its permissions, in its order.
            let refused = if descriptor_flags
                .intersects(D::FILE_INTEGRITY_SYNC | D::DATA_INTEGRITY_SYNC | D::REQUESTED_WRITE_SYNC)
            {
                Some(t::ErrorCode::Unsupported)
            } else if open.contains(O::DIRECTORY) && open.intersects(O::CREATE | O::EXCLUSIVE | O::TRUNCATE) {
                Some(t::ErrorCode::Invalid)
            } else if open.intersects(O::CREATE | O::TRUNCATE) || descriptor_flags.contains(D::WRITE) {
                Some(t::ErrorCode::NotPermitted)
            } else {
                None
            };
            if let Some(code) = refused {
                self.is_dir()?;
                return Err(code);
            }
            descriptor_flags.remove(D::MUTATE_DIRECTORY);
        }
        let held = room()?;
        let flags_out = host::DescriptorFlags::from_bits_retain(descriptor_flags.bits());
        let d = host(self.d.open_at(path_flags(flags), &path, open_flags(open), flags_out))?;
        Ok(t::Descriptor::new(Desc::Host { h: HostDesc { d, read_only: self.read_only }, _held: held }))
    }

    fn readlink_at(&self, path: String) -> R<String> {
        host(self.d.readlink_at(&path))
    }

    fn remove_directory_at(&self, path: String) -> R<()> {
        self.dir_change()?;
        host(self.d.remove_directory_at(&path))
    }

    fn rename_at(&self, old: String, new_dir: t::DescriptorBorrow<'_>, new: String) -> R<()> {
        let to = other(&new_dir)?;
        self.change_between(to)?;
        host(self.d.rename_at(&old, &to.d, &new))
    }

    fn symlink_at(&self, target: String, path: String) -> R<()> {
        self.dir_change()?;
        host(self.d.symlink_at(&target, &path))
    }

    fn unlink_file_at(&self, path: String) -> R<()> {
        self.dir_change()?;
        host(self.d.unlink_file_at(&path))
    }

    fn is_same_object(&self, other_desc: t::DescriptorBorrow<'_>) -> bool {
        other(&other_desc).is_ok_and(|o| self.d.is_same_object(&o.d))
    }

    fn metadata_hash(&self) -> R<t::MetadataHashValue> {
        host(self.d.metadata_hash()).map(hash)
    }

    fn metadata_hash_at(&self, flags: t::PathFlags, path: String) -> R<t::MetadataHashValue> {
        host(self.d.metadata_hash_at(path_flags(flags), &path)).map(hash)
    }
}

/// The next entry of the host's listing.
pub(crate) fn next_entry(entries: &host::DirectoryEntryStream) -> R<Option<t::DirectoryEntry>> {
    let next = host(entries.read_directory_entry())?;
    Ok(next.map(|e| t::DirectoryEntry { type_: kind(e.type_), name: e.name }))
}

/// The host's error code of a stream's error, as the guest's.
pub(crate) fn stream_error_code(e: &crate::bindings::wasi::io::error::Error) -> Option<t::ErrorCode> {
    host::filesystem_error_code(e).map(code)
}

/// Opens the host directory at `host_path` for a preopen: read-write if
/// the host allows it (jco's shim refuses `mutate-directory` as
/// unsupported, and mutates all the same; wasmtime judges by the preopen,
/// not the flag), else as the host allows.
pub(crate) fn open_dir(host_path: &str, read_only: bool) -> R<HostDesc> {
    let (dir, rest) = crate::host::place(host_path).ok_or(t::ErrorCode::NoEntry)?;
    if rest.is_empty() {
        return Ok(HostDesc { d: dir, read_only });
    }
    let open = |flags| dir.open_at(host::PathFlags::SYMLINK_FOLLOW, &rest, host::OpenFlags::DIRECTORY, flags);
    let read = host::DescriptorFlags::READ;
    let d = match read_only {
        true => open(read),
        false => open(read | host::DescriptorFlags::MUTATE_DIRECTORY).or_else(|e| match e {
            host::ErrorCode::Unsupported => open(read),
            e => Err(e),
        }),
    };
    Ok(HostDesc { d: host(d)?, read_only })
}
