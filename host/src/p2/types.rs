//! `wasi:filesystem/types` and `preopens`: the thin adapter. Each function
//! looks its resources up, calls the [model](packfs_core::wasi::descriptor)
//! and converts values. A missing resource traps (a host or adapter bug,
//! not a guest error).

use std::sync::Arc;

use wasmtime::component::Resource;
use wasmtime_wasi::p2::{DynInputStream, DynOutputStream};

use super::bindings::types::{
    self, Advice, DescriptorFlags, DescriptorStat, DescriptorType, DirectoryEntry, ErrorCode, Filesize,
    MetadataHashValue, NewTimestamp, OpenFlags, PathFlags,
};
use super::bindings::{FsError, preopens};
use super::convert::{descriptor_flags, descriptor_type, follow, model_flags, model_open_flags, set_time, stat};
use super::streams::{FileReader, FileWriter};
use crate::filesystem::{DirStream, MAX_IO_CHUNK, PackFsCtxView};
use packfs_core::wasi::descriptor::Descriptor;

type FsResult<T> = Result<T, FsError>;

impl preopens::Host for PackFsCtxView<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        PackFsCtxView::get_directories(self)
    }
}

impl types::Host for PackFsCtxView<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        err.into_code()
    }

    fn filesystem_error_code(&mut self, err: Resource<wasmtime::Error>) -> wasmtime::Result<Option<ErrorCode>> {
        let err = self.table.get(&err)?;
        Ok(err.downcast_ref::<packfs_core::Error>().map(|e| e.code().into()))
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
        self.changing();
        Ok(self.get(&fd)?.create_directory_at(&path)?)
    }

    fn stat(&mut self, fd: Resource<Descriptor>) -> FsResult<DescriptorStat> {
        Ok(stat(self.get(&fd)?.stat()?))
    }

    fn stat_at(&mut self, fd: Resource<Descriptor>, flags: PathFlags, path: String) -> FsResult<DescriptorStat> {
        Ok(stat(self.stat_at(&fd, follow(flags), path)?))
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
        self.changing();
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
        let open = model_open_flags(open_flags);
        if open.create {
            self.changing();
        }
        let opened = self.get(&fd)?.open_at(follow(path_flags), &path, open, model_flags(flags))?;
        Ok(self.table.push(opened)?)
    }

    fn readlink_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        Ok(self.get(&fd)?.readlink_at(&path)?)
    }

    fn remove_directory_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.changing();
        Ok(self.get(&fd)?.remove_directory_at(&path)?)
    }

    fn rename_at(
        &mut self,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        self.changing();
        let (old, new) = (self.get(&fd)?, self.get(&new_fd)?);
        Ok(old.rename_at(&old_path, new, &new_path)?)
    }

    fn symlink_at(&mut self, fd: Resource<Descriptor>, target: String, path: String) -> FsResult<()> {
        self.changing();
        Ok(self.get(&fd)?.symlink_at(&target, &path)?)
    }

    fn unlink_file_at(&mut self, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        self.changing();
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
        let (lower, upper) = self.metadata_hash_at(&fd, follow(flags), path)?;
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
