//! `wasi:filesystem/types@0.3.0` and `preopens`: the thin adapter, as
//! 0.2's (`crate::p2::types`). Each function looks its resources up, calls the
//! [model](packfs_core::wasi::descriptor) and converts values; the
//! `async` ones finish without waiting (PackFS never waits on the host),
//! and the four that return streams hand them to [`super::streams`]. A
//! missing resource traps (a host or adapter bug, not a guest error).

use std::sync::Arc;

use tokio::sync::oneshot;
use wasmtime::component::{Access, Accessor, FutureReader, Resource, StreamReader};

use super::bindings::types::{
    self, Advice, DescriptorFlags, DescriptorStat, DescriptorType, DirectoryEntry, ErrorCode, Filesize,
    MetadataHashValue, NewTimestamp, OpenFlags, PathFlags,
};
use super::bindings::{FsError, preopens};
use super::convert::{descriptor_flags, follow, model_flags, model_open_flags, set_time, stat};
use super::streams::{DirProducer, FileConsumer, FileProducer, Outcome, Place};
use crate::filesystem::{DirStream, PackFsCtxView, PackFsFilesystem};
use packfs_core::wasi::descriptor::Descriptor;

type FsResult<T> = Result<T, FsError>;

/// Runs `f` on the store's PackFS view: every call here is done at once.
fn with<U, R>(store: &Accessor<U, PackFsFilesystem>, f: impl FnOnce(PackFsCtxView<'_>) -> FsResult<R>) -> FsResult<R> {
    store.with(|mut s| f(s.get()))
}

/// As [`with`], for a call that changes the tree: the recent name is
/// forgotten first.
fn changing<U, R>(
    store: &Accessor<U, PackFsFilesystem>,
    f: impl FnOnce(&PackFsCtxView<'_>) -> FsResult<R>,
) -> FsResult<R> {
    with(store, |mut v| f(v.changing()))
}

/// A stream's outcome future, already holding `result`.
fn settled<U>(
    store: &mut Access<'_, U, PackFsFilesystem>,
    result: Result<(), ErrorCode>,
) -> wasmtime::Result<FutureReader<Result<(), ErrorCode>>> {
    FutureReader::new(store, async move { wasmtime::error::Ok(result) })
}

impl types::Host for PackFsCtxView<'_> {
    fn convert_error_code(&mut self, err: FsError) -> wasmtime::Result<ErrorCode> {
        err.into_code()
    }
}

impl preopens::Host for PackFsCtxView<'_> {
    fn get_directories(&mut self) -> wasmtime::Result<Vec<(Resource<Descriptor>, String)>> {
        PackFsCtxView::get_directories(self)
    }
}

impl types::HostDescriptor for PackFsCtxView<'_> {
    fn drop(&mut self, fd: Resource<Descriptor>) -> wasmtime::Result<()> {
        self.table.delete(fd)?;
        Ok(())
    }
}

impl<U> types::HostDescriptorWithStore<U> for PackFsFilesystem {
    fn read_via_stream(
        mut store: Access<'_, U, Self>,
        fd: Resource<Descriptor>,
        offset: Filesize,
    ) -> wasmtime::Result<(StreamReader<u8>, FutureReader<Result<(), ErrorCode>>)> {
        let view = store.get();
        let (node, waits) = (view.table.get(&fd)?.reader_at(offset).map(Arc::clone), view.ctx.waits.clone());
        let node = match node {
            Ok(node) => node,
            Err(e) => {
                let stream = StreamReader::new(&mut store, std::iter::empty())?;
                return Ok((stream, settled(&mut store, Err(e.code().into()))?));
            }
        };
        let (tx, rx) = oneshot::channel();
        let stream = StreamReader::new(&mut store, FileProducer::new(node, offset, Outcome::new(tx), waits))?;
        Ok((stream, FutureReader::new(&mut store, rx)?))
    }

    fn write_via_stream(
        store: Access<'_, U, Self>,
        fd: Resource<Descriptor>,
        data: StreamReader<u8>,
        offset: Filesize,
    ) -> wasmtime::Result<FutureReader<Result<(), ErrorCode>>> {
        consume(store, fd, data, Place::At(offset))
    }

    fn append_via_stream(
        store: Access<'_, U, Self>,
        fd: Resource<Descriptor>,
        data: StreamReader<u8>,
    ) -> wasmtime::Result<FutureReader<Result<(), ErrorCode>>> {
        consume(store, fd, data, Place::Append)
    }

    async fn advise(
        store: &Accessor<U, Self>,
        fd: Resource<Descriptor>,
        _offset: Filesize,
        _len: Filesize,
        _advice: Advice,
    ) -> FsResult<()> {
        with(store, |v| Ok(v.get(&fd)?.advise()?))
    }

    async fn sync_data(store: &Accessor<U, Self>, fd: Resource<Descriptor>) -> FsResult<()> {
        with(store, |v| Ok(v.get(&fd)?.sync()?))
    }

    async fn get_flags(store: &Accessor<U, Self>, fd: Resource<Descriptor>) -> FsResult<DescriptorFlags> {
        with(store, |v| Ok(descriptor_flags(v.get(&fd)?.flags())))
    }

    async fn get_type(store: &Accessor<U, Self>, fd: Resource<Descriptor>) -> FsResult<DescriptorType> {
        with(store, |v| Ok(if v.get(&fd)?.is_dir() { DescriptorType::Directory } else { DescriptorType::RegularFile }))
    }

    async fn set_size(store: &Accessor<U, Self>, fd: Resource<Descriptor>, size: Filesize) -> FsResult<()> {
        with(store, |v| Ok(v.get(&fd)?.set_size(size)?))
    }

    async fn set_times(
        store: &Accessor<U, Self>,
        fd: Resource<Descriptor>,
        atime: NewTimestamp,
        mtime: NewTimestamp,
    ) -> FsResult<()> {
        let (atime, mtime) = (set_time(atime)?, set_time(mtime)?);
        with(store, |v| Ok(v.get(&fd)?.set_times(atime, mtime)?))
    }

    fn read_directory(
        mut store: Access<'_, U, Self>,
        fd: Resource<Descriptor>,
    ) -> wasmtime::Result<(StreamReader<DirectoryEntry>, FutureReader<Result<(), ErrorCode>>)> {
        let opened = {
            let view = store.get();
            match view.table.get(&fd)?.lister() {
                Ok(node) => DirStream::new(Arc::clone(node), &view.ctx.streams).ok_or(ErrorCode::InsufficientMemory),
                Err(e) => Err(e.code().into()),
            }
        };
        let stream = match opened {
            Ok(stream) => stream,
            Err(code) => {
                let stream = StreamReader::new(&mut store, std::iter::empty())?;
                return Ok((stream, settled(&mut store, Err(code))?));
            }
        };
        let (tx, rx) = oneshot::channel();
        let stream = StreamReader::new(&mut store, DirProducer::new(stream, Outcome::new(tx)))?;
        Ok((stream, FutureReader::new(&mut store, rx)?))
    }

    async fn sync(store: &Accessor<U, Self>, fd: Resource<Descriptor>) -> FsResult<()> {
        with(store, |v| Ok(v.get(&fd)?.sync()?))
    }

    async fn create_directory_at(store: &Accessor<U, Self>, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        changing(store, |v| Ok(v.get(&fd)?.create_directory_at(&path)?))
    }

    async fn stat(store: &Accessor<U, Self>, fd: Resource<Descriptor>) -> FsResult<DescriptorStat> {
        with(store, |v| Ok(stat(v.get(&fd)?.stat()?)))
    }

    async fn stat_at(
        store: &Accessor<U, Self>,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        path: String,
    ) -> FsResult<DescriptorStat> {
        with(store, |mut v| Ok(stat(v.stat_at(&fd, follow(flags), path)?)))
    }

    async fn set_times_at(
        store: &Accessor<U, Self>,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        path: String,
        atime: NewTimestamp,
        mtime: NewTimestamp,
    ) -> FsResult<()> {
        let (atime, mtime) = (set_time(atime)?, set_time(mtime)?);
        with(store, |v| Ok(v.get(&fd)?.set_times_at(follow(flags), &path, atime, mtime)?))
    }

    async fn link_at(
        store: &Accessor<U, Self>,
        fd: Resource<Descriptor>,
        old_flags: PathFlags,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        changing(store, |v| Ok(v.get(&fd)?.link_at(follow(old_flags), &old_path, v.get(&new_fd)?, &new_path)?))
    }

    async fn open_at(
        store: &Accessor<U, Self>,
        fd: Resource<Descriptor>,
        path_flags: PathFlags,
        path: String,
        open_flags: OpenFlags,
        flags: DescriptorFlags,
    ) -> FsResult<Resource<Descriptor>> {
        let open = model_open_flags(open_flags);
        with(store, |mut v| {
            if open.create {
                v.changing();
            }
            let opened = v.get(&fd)?.open_at(follow(path_flags), &path, open, model_flags(flags))?;
            Ok(v.table.push(opened)?)
        })
    }

    async fn readlink_at(store: &Accessor<U, Self>, fd: Resource<Descriptor>, path: String) -> FsResult<String> {
        with(store, |v| Ok(v.get(&fd)?.readlink_at(&path)?))
    }

    async fn remove_directory_at(store: &Accessor<U, Self>, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        changing(store, |v| Ok(v.get(&fd)?.remove_directory_at(&path)?))
    }

    async fn rename_at(
        store: &Accessor<U, Self>,
        fd: Resource<Descriptor>,
        old_path: String,
        new_fd: Resource<Descriptor>,
        new_path: String,
    ) -> FsResult<()> {
        changing(store, |v| Ok(v.get(&fd)?.rename_at(&old_path, v.get(&new_fd)?, &new_path)?))
    }

    async fn symlink_at(
        store: &Accessor<U, Self>,
        fd: Resource<Descriptor>,
        target: String,
        path: String,
    ) -> FsResult<()> {
        changing(store, |v| Ok(v.get(&fd)?.symlink_at(&target, &path)?))
    }

    async fn unlink_file_at(store: &Accessor<U, Self>, fd: Resource<Descriptor>, path: String) -> FsResult<()> {
        changing(store, |v| Ok(v.get(&fd)?.unlink_file_at(&path)?))
    }

    async fn is_same_object(
        store: &Accessor<U, Self>,
        a: Resource<Descriptor>,
        b: Resource<Descriptor>,
    ) -> wasmtime::Result<bool> {
        store.with(|mut s| {
            let v = s.get();
            Ok(v.table.get(&a)?.is_same_object(v.table.get(&b)?))
        })
    }

    async fn metadata_hash(store: &Accessor<U, Self>, fd: Resource<Descriptor>) -> FsResult<MetadataHashValue> {
        with(store, |v| {
            let (lower, upper) = v.get(&fd)?.metadata_hash();
            Ok(MetadataHashValue { lower, upper })
        })
    }

    async fn metadata_hash_at(
        store: &Accessor<U, Self>,
        fd: Resource<Descriptor>,
        flags: PathFlags,
        path: String,
    ) -> FsResult<MetadataHashValue> {
        with(store, |mut v| {
            let (lower, upper) = v.metadata_hash_at(&fd, follow(flags), path)?;
            Ok(MetadataHashValue { lower, upper })
        })
    }
}

/// `write-via-stream` and `append-via-stream`: the guest's stream piped
/// into the file, or closed at once with the error if it cannot be written.
fn consume<U>(
    mut store: Access<'_, U, PackFsFilesystem>,
    fd: Resource<Descriptor>,
    mut data: StreamReader<u8>,
    place: Place,
) -> wasmtime::Result<FutureReader<Result<(), ErrorCode>>> {
    let (writer, waits) = {
        let view = store.get();
        let d = view.table.get(&fd)?;
        (d.writer().map(|node| (Arc::clone(node), d.syncs())), view.ctx.waits.clone())
    };
    match writer {
        Ok((node, sync)) => {
            let (tx, rx) = oneshot::channel();
            data.pipe(&mut store, FileConsumer::new(node, place, sync, Outcome::new(tx), waits))?;
            FutureReader::new(&mut store, rx)
        }
        Err(e) => {
            data.close(&mut store)?;
            settled(&mut store, Err(e.code().into()))
        }
    }
}
