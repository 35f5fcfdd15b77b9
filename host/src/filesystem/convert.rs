//! The values every version converts alike: the error code, descriptor
//! flags, open flags, path flags, descriptor types, and stats. 0.2 and 0.3
//! generate their own types from WIT with the same names and shapes, so
//! one macro writes the conversions for both; only times differ (0.2's
//! `datetime` is unsigned, 0.3's `instant` signed), and each version says
//! how it converts one.

/// Writes, in a version's `types` adapter, for its bindings' `types`
/// module (in scope under that name):
/// `From<Code>` for its `ErrorCode` (`$would_block`: what
/// `Code::WouldBlock` becomes) and `From<ErrorCode>` for its `FsError`;
/// `follow`, `model_flags`, `descriptor_flags`, `model_open_flags`,
/// `descriptor_type`; and `stat`, with `$time` converting each timestamp.
macro_rules! conversions {
    (would_block: $would_block:ident, time: $time:ident) => {
        use packfs_core::Code;
        use packfs_core::wasi::descriptor::{Flags as ModelFlags, OpenFlags as ModelOpenFlags};
        use types as t;

        impl From<Code> for t::ErrorCode {
            fn from(code: Code) -> Self {
                use t::ErrorCode as E;
                match code {
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
                    Code::WouldBlock => E::$would_block,
                    Code::Io => E::Io,
                }
            }
        }

        impl From<t::ErrorCode> for $crate::filesystem::TrappableError<t::ErrorCode> {
            fn from(code: t::ErrorCode) -> Self {
                $crate::filesystem::TrappableError::Code(code)
            }
        }

        pub(super) fn follow(flags: t::PathFlags) -> bool {
            flags.contains(t::PathFlags::SYMLINK_FOLLOW)
        }

        pub(super) fn model_flags(f: t::DescriptorFlags) -> ModelFlags {
            use t::DescriptorFlags as D;
            ModelFlags {
                read: f.contains(D::READ),
                write: f.contains(D::WRITE),
                mutate_directory: f.contains(D::MUTATE_DIRECTORY),
                file_sync: f.contains(D::FILE_INTEGRITY_SYNC),
                data_sync: f.contains(D::DATA_INTEGRITY_SYNC),
                read_sync: f.contains(D::REQUESTED_WRITE_SYNC),
            }
        }

        pub(super) fn descriptor_flags(f: ModelFlags) -> t::DescriptorFlags {
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

        pub(super) fn model_open_flags(f: t::OpenFlags) -> ModelOpenFlags {
            use t::OpenFlags as O;
            ModelOpenFlags {
                create: f.contains(O::CREATE),
                directory: f.contains(O::DIRECTORY),
                exclusive: f.contains(O::EXCLUSIVE),
                truncate: f.contains(O::TRUNCATE),
            }
        }

        pub(super) fn descriptor_type(kind: packfs_core::FileType) -> t::DescriptorType {
            match kind {
                packfs_core::FileType::File => t::DescriptorType::RegularFile,
                packfs_core::FileType::Dir => t::DescriptorType::Directory,
                packfs_core::FileType::Symlink => t::DescriptorType::SymbolicLink,
            }
        }

        pub(super) fn stat(m: packfs_core::Metadata) -> t::DescriptorStat {
            t::DescriptorStat {
                type_: descriptor_type(m.kind),
                link_count: m.nlink,
                size: m.size,
                data_access_timestamp: Some($time(m.atime)),
                data_modification_timestamp: Some($time(m.mtime)),
                status_change_timestamp: Some($time(m.ctime)),
            }
        }
    };
}

pub(crate) use conversions;
