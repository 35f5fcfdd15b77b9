//! `wasi:filesystem/types` and `preopens`, exported: each call looks its
//! descriptor up, calls the model (`packfs_core::wasi::descriptor`) and
//! converts values, as the host's own 0.2 adapter does (host/src/p2).

use std::cell::RefCell;
use std::sync::Arc;

use packfs_core::wasi::descriptor::{Descriptor, Listing};

use crate::Virt;
use crate::bindings::exports::wasi::filesystem::{preopens, types as t};
use crate::bindings::exports::wasi::io::error::ErrorBorrow;
use crate::bindings::exports::wasi::io::streams::{InputStream, OutputStream};
use crate::convert::{code, descriptor_flags, descriptor_type, follow, model_flags, open_flags, set_time, stat};
use crate::held::Held;
use crate::io::{FileReader, FileWriter, IoError, Reader, Writer, scratch};
use crate::namespace;
use crate::passthrough::{self, HostDesc};

/// The most bytes one `read` returns, as the host's adapter.
pub(crate) const MAX_IO_CHUNK: usize = 1 << 20;

type R<T> = Result<T, t::ErrorCode>;

/// A descriptor: PackFS's, the host's (a host directory passed through),
/// or the error its preopen failed to open with (the preopen then answers
/// every call with it).
pub(crate) enum Desc {
    Ours { d: Descriptor, _held: Held },
    Host { h: HostDesc, _held: Held },
    Failed { code: t::ErrorCode, _held: Held },
}

impl Desc {
    /// PackFS's descriptor; a host's is not (a call taking two descriptors
    /// across them is `cross-device`).
    fn d(&self) -> R<&Descriptor> {
        match self {
            Desc::Ours { d, .. } => Ok(d),
            Desc::Host { .. } => Err(t::ErrorCode::CrossDevice),
            Desc::Failed { code, .. } => Err(*code),
        }
    }

    fn of<'a>(b: &'a t::DescriptorBorrow<'_>) -> R<&'a Descriptor> {
        b.get::<Desc>().d()
    }
}

fn ours<T>(r: packfs_core::Result<T>) -> R<T> {
    r.map_err(|e| code(&e))
}

/// A place for one more descriptor or stream ([`held`](crate::held)).
fn room() -> R<Held> {
    Held::open().ok_or(t::ErrorCode::InsufficientMemory)
}

impl preopens::Guest for Virt {
    fn get_directories() -> Vec<(t::Descriptor, String)> {
        let mut out: Vec<_> = namespace::preopens()
            .into_iter()
            .map(|(path, d, held)| {
                let desc = match d {
                    Ok(d) => Desc::Ours { d, _held: held },
                    Err(error) => Desc::Failed { code: code(&error), _held: held },
                };
                (t::Descriptor::new(desc), path)
            })
            .collect();
        // Then the host directories passed through (0.2's only).
        let host_dirs = namespace::with(|ns| ns.map(|ns| ns.opened.host_dirs.clone()).unwrap_or_default());
        for dir in host_dirs {
            let Some(held) = Held::open() else { break };
            let desc = match passthrough::open_dir(&dir.host_path, dir.read_only) {
                Ok(h) => Desc::Host { h, _held: held },
                Err(code) => Desc::Failed { code, _held: held },
            };
            out.push((t::Descriptor::new(desc), dir.path));
        }
        out
    }
}

impl t::Guest for Virt {
    type Descriptor = Desc;
    type DirectoryEntryStream = DirList;

    fn filesystem_error_code(err: ErrorBorrow<'_>) -> Option<t::ErrorCode> {
        match err.get::<IoError>() {
            IoError::Fs(e) => Some(code(e)),
            IoError::Host(e) => passthrough::stream_error_code(e),
        }
    }
}

/// A host directory's descriptor answers as the host does (`passthrough`).
macro_rules! host_first {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {
        if let Desc::Host { h, .. } = $self {
            return h.$method($($arg),*);
        }
    };
}

impl t::GuestDescriptor for Desc {
    fn read_via_stream(&self, offset: t::Filesize) -> R<InputStream> {
        host_first!(self.read_via_stream(offset));
        let node = Arc::clone(ours(self.d()?.reader_at(offset))?);
        Ok(InputStream::new(Reader::File(FileReader::new(node, offset, room()?))))
    }

    fn write_via_stream(&self, offset: t::Filesize) -> R<OutputStream> {
        host_first!(self.write_via_stream(offset));
        let d = self.d()?;
        let node = Arc::clone(ours(d.writer())?);
        Ok(OutputStream::new(Writer::File(FileWriter::at(node, offset, d.syncs(), room()?))))
    }

    fn append_via_stream(&self) -> R<OutputStream> {
        host_first!(self.append_via_stream());
        let d = self.d()?;
        let node = Arc::clone(ours(d.writer())?);
        Ok(OutputStream::new(Writer::File(FileWriter::append(node, d.syncs(), room()?))))
    }

    fn advise(&self, _offset: t::Filesize, _len: t::Filesize, _advice: t::Advice) -> R<()> {
        host_first!(self.advise(_offset, _len, _advice));
        ours(self.d()?.advise())
    }

    fn sync_data(&self) -> R<()> {
        host_first!(self.sync_data());
        ours(self.d()?.sync())
    }

    fn get_flags(&self) -> R<t::DescriptorFlags> {
        host_first!(self.get_flags());
        Ok(descriptor_flags(self.d()?.flags()))
    }

    /// A failed preopen is still a directory: wasmtime's preview1 adapter
    /// asks each preopen's type before the guest's first call, and traps
    /// if that fails, where the guest must see the error.
    fn get_type(&self) -> R<t::DescriptorType> {
        host_first!(self.get_type());
        if let Desc::Failed { .. } = self {
            return Ok(t::DescriptorType::Directory);
        }
        Ok(if self.d()?.is_dir() { t::DescriptorType::Directory } else { t::DescriptorType::RegularFile })
    }

    fn set_size(&self, size: t::Filesize) -> R<()> {
        host_first!(self.set_size(size));
        ours(self.d()?.set_size(size))
    }

    fn set_times(&self, atime: t::NewTimestamp, mtime: t::NewTimestamp) -> R<()> {
        host_first!(self.set_times(atime, mtime));
        ours(self.d()?.set_times(set_time(atime), set_time(mtime)))
    }

    fn read(&self, len: t::Filesize, offset: t::Filesize) -> R<(Vec<u8>, bool)> {
        host_first!(self.read(len, offset));
        let len = usize::try_from(len).unwrap_or(usize::MAX).min(MAX_IO_CHUNK);
        let d = self.d()?;
        let data = ours(scratch(len, |buf| d.read_into(buf, offset)))?;
        // As wasmtime-wasi: end of file is reported when nothing was read.
        let eof = data.is_empty();
        Ok((data, eof))
    }

    fn write(&self, buf: Vec<u8>, offset: t::Filesize) -> R<t::Filesize> {
        host_first!(self.write(buf, offset));
        Ok(ours(self.d()?.write(&buf, offset))? as t::Filesize)
    }

    fn read_directory(&self) -> R<t::DirectoryEntryStream> {
        host_first!(self.read_directory());
        let node = Arc::clone(ours(self.d()?.lister())?);
        let held = Held::listing().ok_or(t::ErrorCode::InsufficientMemory)?;
        Ok(t::DirectoryEntryStream::new(DirList::Ours { listing: RefCell::new(Listing::new(node)), _held: held }))
    }

    fn sync(&self) -> R<()> {
        host_first!(self.sync());
        ours(self.d()?.sync())
    }

    fn create_directory_at(&self, path: String) -> R<()> {
        host_first!(self.create_directory_at(path));
        ours(self.d()?.create_directory_at(&path))
    }

    fn stat(&self) -> R<t::DescriptorStat> {
        host_first!(self.stat());
        Ok(stat(ours(self.d()?.stat())?))
    }

    fn stat_at(&self, flags: t::PathFlags, path: String) -> R<t::DescriptorStat> {
        host_first!(self.stat_at(flags, path));
        Ok(stat(ours(self.d()?.stat_at(follow(flags), &path, None))?.1))
    }

    fn set_times_at(&self, flags: t::PathFlags, path: String, atime: t::NewTimestamp, mtime: t::NewTimestamp) -> R<()> {
        host_first!(self.set_times_at(flags, path, atime, mtime));
        ours(self.d()?.set_times_at(follow(flags), &path, set_time(atime), set_time(mtime)))
    }

    fn link_at(
        &self,
        old_flags: t::PathFlags,
        old_path: String,
        new_dir: t::DescriptorBorrow<'_>,
        new_path: String,
    ) -> R<()> {
        host_first!(self.link_at(old_flags, old_path, new_dir, new_path));
        ours(self.d()?.link_at(follow(old_flags), &old_path, Desc::of(&new_dir)?, &new_path))
    }

    fn open_at(
        &self,
        path_flags: t::PathFlags,
        path: String,
        flags: t::OpenFlags,
        descriptor_flags: t::DescriptorFlags,
    ) -> R<t::Descriptor> {
        host_first!(self.open_at(path_flags, path, flags, descriptor_flags));
        let held = room()?;
        let opened =
            ours(self.d()?.open_at(follow(path_flags), &path, open_flags(flags), model_flags(descriptor_flags)))?;
        Ok(t::Descriptor::new(Desc::Ours { d: opened, _held: held }))
    }

    fn readlink_at(&self, path: String) -> R<String> {
        host_first!(self.readlink_at(path));
        ours(self.d()?.readlink_at(&path))
    }

    fn remove_directory_at(&self, path: String) -> R<()> {
        host_first!(self.remove_directory_at(path));
        ours(self.d()?.remove_directory_at(&path))
    }

    fn rename_at(&self, old_path: String, new_dir: t::DescriptorBorrow<'_>, new_path: String) -> R<()> {
        host_first!(self.rename_at(old_path, new_dir, new_path));
        ours(self.d()?.rename_at(&old_path, Desc::of(&new_dir)?, &new_path))
    }

    fn symlink_at(&self, target: String, path: String) -> R<()> {
        host_first!(self.symlink_at(target, path));
        ours(self.d()?.symlink_at(&target, &path))
    }

    fn unlink_file_at(&self, path: String) -> R<()> {
        host_first!(self.unlink_file_at(path));
        ours(self.d()?.unlink_file_at(&path))
    }

    fn is_same_object(&self, other: t::DescriptorBorrow<'_>) -> bool {
        host_first!(self.is_same_object(other));
        match (self.d(), Desc::of(&other)) {
            (Ok(a), Ok(b)) => a.is_same_object(b),
            _ => false,
        }
    }

    fn metadata_hash(&self) -> R<t::MetadataHashValue> {
        host_first!(self.metadata_hash());
        let (lower, upper) = self.d()?.metadata_hash();
        Ok(t::MetadataHashValue { lower, upper })
    }

    fn metadata_hash_at(&self, flags: t::PathFlags, path: String) -> R<t::MetadataHashValue> {
        host_first!(self.metadata_hash_at(flags, path));
        let ((lower, upper), _, _) = ours(self.d()?.metadata_hash_at(follow(flags), &path, None))?;
        Ok(t::MetadataHashValue { lower, upper })
    }
}

/// A directory's entries: PackFS's ([`Listing`]) or the host's, counted
/// among what the guest holds.
pub(crate) enum DirList {
    Ours { listing: RefCell<Listing>, _held: Held },
    Host { entries: crate::bindings::wasi::filesystem::types::DirectoryEntryStream, _held: Held },
}

impl t::GuestDirectoryEntryStream for DirList {
    fn read_directory_entry(&self) -> R<Option<t::DirectoryEntry>> {
        match self {
            DirList::Ours { listing, .. } => {
                let next = ours(listing.borrow_mut().next_entry())?;
                Ok(next.map(|(e, _)| t::DirectoryEntry { type_: descriptor_type(e.kind), name: e.name.to_string() }))
            }
            DirList::Host { entries, .. } => passthrough::next_entry(entries),
        }
    }
}
