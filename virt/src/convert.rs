//! PackFS's values as the exported `wasi:filesystem` types, and back; the
//! same shapes as the host's own 0.2 adapter converts (host/src/filesystem/
//! convert.rs), written here for wit-bindgen's guest-side types.

use packfs_core::wasi::descriptor::{Flags, OpenFlags as ModelOpenFlags};
use packfs_core::{Code, Error, FileType, Metadata, SetTime, Timestamp};

use crate::bindings::exports::wasi::filesystem::types as t;
use crate::bindings::wasi::clocks::wall_clock::Datetime;

pub(crate) fn code(e: &Error) -> t::ErrorCode {
    use t::ErrorCode as E;
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
        Code::Busy => E::Busy,
        Code::WouldBlock => E::WouldBlock,
        Code::Io => E::Io,
    }
}

pub(crate) fn follow(flags: t::PathFlags) -> bool {
    flags.contains(t::PathFlags::SYMLINK_FOLLOW)
}

pub(crate) fn model_flags(f: t::DescriptorFlags) -> Flags {
    use t::DescriptorFlags as D;
    Flags {
        read: f.contains(D::READ),
        write: f.contains(D::WRITE),
        mutate_directory: f.contains(D::MUTATE_DIRECTORY),
        file_sync: f.contains(D::FILE_INTEGRITY_SYNC),
        data_sync: f.contains(D::DATA_INTEGRITY_SYNC),
        read_sync: f.contains(D::REQUESTED_WRITE_SYNC),
    }
}

pub(crate) fn descriptor_flags(f: Flags) -> t::DescriptorFlags {
    use t::DescriptorFlags as D;
    let mut out = D::empty();
    for (on, flag) in [
        (f.read, D::READ),
        (f.write, D::WRITE),
        (f.mutate_directory, D::MUTATE_DIRECTORY),
        (f.file_sync, D::FILE_INTEGRITY_SYNC),
        (f.data_sync, D::DATA_INTEGRITY_SYNC),
        (f.read_sync, D::REQUESTED_WRITE_SYNC),
    ] {
        if on {
            out |= flag;
        }
    }
    out
}

pub(crate) fn open_flags(f: t::OpenFlags) -> ModelOpenFlags {
    use t::OpenFlags as O;
    ModelOpenFlags {
        create: f.contains(O::CREATE),
        directory: f.contains(O::DIRECTORY),
        exclusive: f.contains(O::EXCLUSIVE),
        truncate: f.contains(O::TRUNCATE),
    }
}

pub(crate) fn descriptor_type(kind: FileType) -> t::DescriptorType {
    match kind {
        FileType::File => t::DescriptorType::RegularFile,
        FileType::Dir => t::DescriptorType::Directory,
        FileType::Symlink => t::DescriptorType::SymbolicLink,
    }
}

fn datetime(t: Timestamp) -> Datetime {
    Datetime { seconds: t.secs, nanoseconds: t.nanos }
}

pub(crate) fn stat(m: Metadata) -> t::DescriptorStat {
    t::DescriptorStat {
        type_: descriptor_type(m.kind),
        link_count: m.nlink,
        size: m.size,
        data_access_timestamp: Some(datetime(m.atime)),
        data_modification_timestamp: Some(datetime(m.mtime)),
        status_change_timestamp: Some(datetime(m.ctime)),
    }
}

pub(crate) fn set_time(t: t::NewTimestamp) -> SetTime {
    match t {
        t::NewTimestamp::NoChange => SetTime::Keep,
        t::NewTimestamp::Now => SetTime::Now,
        t::NewTimestamp::Timestamp(t) => SetTime::At(Timestamp::new(t.seconds, t.nanoseconds)),
    }
}
