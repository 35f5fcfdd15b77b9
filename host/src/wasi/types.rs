//! `wasi:filesystem/types`: the thin adapter. Each function looks its
//! resources up, calls the [model](super::descriptor) and converts values.
//! A missing resource traps (a host or adapter bug, not a guest error).

use std::sync::Arc;

use packfs_core::{FileType, Metadata, SetTime, Timestamp};
use wasmtime::component::Resource;
use wasmtime_wasi::p2::bindings::clocks::wall_clock::Datetime;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream};

use super::bindings::types::{
    self, Advice, DescriptorFlags, DescriptorStat, DescriptorType, DirectoryEntry, ErrorCode, Filesize,
    MetadataHashValue, NewTimestamp, OpenFlags, PathFlags,
};
use super::streams::{DirStream, FileReader, FileWriter, MAX_IO_CHUNK};
use super::{FsError, PackFsCtxView, error_code};
use packfs_core::wasi::descriptor::{self, Descriptor, Flags};

type FsResult<T> = Result<T, FsError>;

impl PackFsCtxView<'_> {
    fn get(&self, fd: &Resource<Descriptor>) -> FsResult<&Descriptor> {
        Ok(self.table.get(fd)?)
    }
}

impl types::Host for PackFsCtxView<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        match err {
            FsError::Code(code) => Ok(code),
            FsError::Trap(e) => Err(e),
        }
    }

    fn filesystem_error_code(&mut self, err: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
        let err = self.table.get(&err)?;
        Ok(err.downcast_ref::<packfs_core::Error>().map(error_code))
    }
}

impl types::HostDescriptor for PackFsCtxView<'_> {
    fn read_via_stream(&mut self, fd: Resource<Descriptor>, offset: Filesize) -> FsResult<Resource<DynInputStream>> {
        let reader: DynInputStream = Box::new(FileReader::new(Arc::clone(self.get(&fd)?.reader_at(offset)?), offset));
        Ok(self.table.push(reader)?)
    }

    fn write_via_stream(&mut self, fd: Resource<Descriptor>, offset: Filesize) -> FsResult<Resource<DynOutputStream>> {
        let d = self.get(&fd)?;
        let writer: DynOutputStream = Box::new(FileWriter::at(Arc::clone(d.writer()?), offset, d.syncs()));
        Ok(self.table.push(writer)?)
    }

    fn append_via_stream(&mut self, fd: Resource<Descriptor>) -> FsResult<Resource<DynOutputStream>> {
        let d = self.get(&fd)?;
        let writer: DynOutputStream = Box::new(FileWriter::append(Arc::clone(d.writer()?), d.syncs()));
        Ok(self.table.push(writer)?)
    }

    fn advise(&mut self, fd: Resource<Descriptor>, _offset: Filesize, _len: Filesize, _advice: Advice) -> FsResult<()> {
        Ok(self.get(&fd)?.advise()?)
    }

    fn sync_data(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        Ok(self.get(&fd)?.sync()?)
    }

    fn get_flags(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorFlags> {
        Ok(descriptor_flags(self.get(&fd)?.flags()))
    }

    fn get_type(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorType> {
        let d = self.get(&fd)?;
        Ok(if d.is_dir() { DescriptorType::Directory } else { DescriptorType::RegularFile })
    }

    fn set_size(&mut self, fd: Resource<Descriptor>, size: Filesize) -> FsResult<()> {
        Ok(self.get(&fd)?.set_size(size)?)
    }

    fn set_times(&mut self, fd: Resource<Descriptor>, atime: NewTimestamp, mtime: NewTimestamp) -> FsResult<()> {
        Ok(self.get(&fd)?.set_times(set_time(atime), set_time(mtime))?)
    }

    fn read(&mut self, fd: Resource<Descriptor>, len: Filesize, offset: Filesize) -> FsResult<(Vec<u8>, bool)> {
        let len = usize::try_from(len).unwrap_or(usize::MAX).min(MAX_IO_CHUNK);
        let data = self.get(&fd)?.read(len, offset)?;
        // As wasmtime-wasi: end of file is reported when nothing was read.
        let eof = data.is_empty();
        Ok((data, eof))
    }

    fn write(&mut self, fd: Resource<Descriptor>, buf: Vec<u8>, offset: Filesize) -> FsResult<Filesize> {
        let n = self.get(&fd)?.write(&buf, offset)?;
        Ok(n as Filesize)
    }

    fn read_directory(&mut self, fd: Resource<Descriptor>) -> FsResult<Resource<DirStream>> {
        let node = Arc::clone(self.get(&fd)?.lister()?);
        let stream = DirStream::new(node, &self.ctx.streams).ok_or(ErrorCode::InsufficientMemory)?;
        Ok(self.table.push(stream)?)
    }

    fn sync(&mut self, fd: Resource<Descriptor>) -> FsResult<()> {
        Ok(self.get(&fd)?.sync()?)
    }

    fn create_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.ctx.recent.changed();
        Ok(self.get(&fd)?.create_directory_at(&path)?)
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorStat> {
        Ok(stat(self.get(&fd)?.stat()?))
    }

    fn stat_at(&mut self, fd: Resource<Descriptor>, flags: PathFlags, path: String) -> FsResult<DescriptorStat> {
        let d = self.table.get(&fd)?;
        let known = self.ctx.recent.take(d.at(), follow(flags), &path);
        let (ino, meta) = d.stat_at(follow(flags), &path, known)?;
        if known.is_none() {
            // Not following a name that is no symlink: following finds the same.
            let follows = (follow(flags) || meta.kind == FileType::Symlink).then_some(follow(flags));
            self.ctx.recent.resolved(d.at(), path, follows, ino);
        }
        Ok(stat(meta))
    }

    fn set_times_at(
        &mut self,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        path: String,
        atime: NewTimestamp,
        mtime: NewTimestamp,
    ) -> FsResult<()> {
        Ok(self.get(&fd)?.set_times_at(follow(flags), &path, set_time(atime), set_time(mtime))?)
    }

    fn link_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_flags: PathFlags,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        self.ctx.recent.changed();
        let (old, new) = (self.get(&fd)?, self.get(&new_fd)?);
        Ok(old.link_at(follow(old_flags), &old_path, new, &new_path)?)
    }

    fn open_at(
        &mut self,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        open_flags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let open = descriptor::OpenFlags {
            create: open_flags.contains(OpenFlags::CREATE),
            directory: open_flags.contains(OpenFlags::DIRECTORY),
            exclusive: open_flags.contains(OpenFlags::EXCLUSIVE),
            truncate: open_flags.contains(OpenFlags::TRUNCATE),
        };
        if open.create {
            self.ctx.recent.changed();
        }
        let opened = self.get(&fd)?.open_at(follow(path_flags), &path, open, model_flags(flags))?;
        Ok(self.table.push(opened)?)
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        Ok(self.get(&fd)?.readlink_at(&path)?)
    }

    fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.ctx.recent.changed();
        Ok(self.get(&fd)?.remove_directory_at(&path)?)
    }

    fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        self.ctx.recent.changed();
        let (old, new) = (self.get(&fd)?, self.get(&new_fd)?);
        Ok(old.rename_at(&old_path, new, &new_path)?)
    }

    fn symlink_at(&mut self, fd: Resource<Descriptor>, target: String, path: String) -> FsResult<()> {
        self.ctx.recent.changed();
        Ok(self.get(&fd)?.symlink_at(&target, &path)?)
    }

    fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.ctx.recent.changed();
        Ok(self.get(&fd)?.unlink_file_at(&path)?)
    }

    fn is_same_object(&mut self, a: Resource<Descriptor>, b: Resource<Descriptor>) -> wasmtime::Result<bool> {
        Ok(self.table.get(&a)?.is_same_object(self.table.get(&b)?))
    }

    fn metadata_hash(&mut self, fd: Resource<Descriptor>) -> FsResult<MetadataHashValue> {
        let (lower, upper) = self.get(&fd)?.metadata_hash();
        Ok(MetadataHashValue { lower, upper })
    }

    fn metadata_hash_at(
        &mut self,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        path: String,
    ) -> FsResult<MetadataHashValue> {
        let d = self.table.get(&fd)?;
        let known = self.ctx.recent.take(d.at(), follow(flags), &path);
        let ((lower, upper), ino, follows) = d.metadata_hash_at(follow(flags), &path, known)?;
        if known.is_none() {
            self.ctx.recent.resolved(d.at(), path, follows, ino);
        }
        Ok(MetadataHashValue { lower, upper })
    }

    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        self.table.delete(fd)?;
        Ok(())
    }
}

impl types::HostDirectoryEntryStream for PackFsCtxView<'_> {
    fn read_directory_entry(&mut self, stream: Resource<DirStream>) -> FsResult<Option<DirectoryEntry>> {
        let stream = self.table.get_mut(&stream)?;
        let Some((e, batch)) = stream.next_entry(self.ctx.recent.epoch())? else {
            return Ok(None);
        };
        self.ctx.recent.listed(stream.at(), &e.name, e.kind, e.ino, batch);
        Ok(Some(DirectoryEntry { type_: descriptor_type(e.kind), name: e.name.to_string() }))
    }

    fn drop(&mut self, stream: Resource<DirStream>) -> wasmtime::Result<()> {
        self.table.delete(stream)?;
        Ok(())
    }
}

fn follow(flags: PathFlags) -> bool {
    flags.contains(PathFlags::SYMLINK_FOLLOW)
}

fn model_flags(f: DescriptorFlags) -> Flags {
    Flags {
        read: f.contains(DescriptorFlags::READ),
        write: f.contains(DescriptorFlags::WRITE),
        mutate_directory: f.contains(DescriptorFlags::MUTATE_DIRECTORY),
        file_sync: f.contains(DescriptorFlags::FILE_INTEGRITY_SYNC),
        data_sync: f.contains(DescriptorFlags::DATA_INTEGRITY_SYNC),
        read_sync: f.contains(DescriptorFlags::REQUESTED_WRITE_SYNC),
    }
}

fn descriptor_flags(f: Flags) -> DescriptorFlags {
    let mut out = DescriptorFlags::empty();
    for (on, flag) in [
        (f.read, DescriptorFlags::READ),
        (f.write, DescriptorFlags::WRITE),
        (f.mutate_directory, DescriptorFlags::MUTATE_DIRECTORY),
        (f.file_sync, DescriptorFlags::FILE_INTEGRITY_SYNC),
        (f.data_sync, DescriptorFlags::DATA_INTEGRITY_SYNC),
        (f.read_sync, DescriptorFlags::REQUESTED_WRITE_SYNC),
    ] {
        if on {
            out |= flag;
        }
    }
    out
}

fn descriptor_type(kind: FileType) -> DescriptorType {
    match kind {
        FileType::File => DescriptorType::RegularFile,
        FileType::Dir => DescriptorType::Directory,
        FileType::Symlink => DescriptorType::SymbolicLink,
    }
}

fn datetime(t: Timestamp) -> Datetime {
    Datetime { seconds: t.secs, nanoseconds: t.nanos }
}

fn stat(m: Metadata) -> DescriptorStat {
    DescriptorStat {
        type_: descriptor_type(m.kind),
        link_count: m.nlink,
        size: m.size,
        data_access_timestamp: Some(datetime(m.atime)),
        data_modification_timestamp: Some(datetime(m.mtime)),
        status_change_timestamp: Some(datetime(m.ctime)),
    }
}

fn set_time(t: NewTimestamp) -> SetTime {
    match t {
        NewTimestamp::NoChange => SetTime::Keep,
        NewTimestamp::Now => SetTime::Now,
        // `Timestamp::new` carries whole seconds out of the nanoseconds.
        NewTimestamp::Timestamp(t) => SetTime::At(Timestamp::new(t.seconds, t.nanoseconds)),
    }
}
