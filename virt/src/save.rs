//! `packfs:virt/control.save`, which `packfs virt --save` calls after the
//! guest's run returns: the namespace written as a pack (uncompressed) to
//! a file under one of the host's preopens, through the host's own
//! `wasi:filesystem`. The pack is written beside its name and renamed
//! over it, so the name holds a whole pack or what it held before.

use std::io::Write;

use packfs_core::pack::write_pack;

use crate::Virt;
use crate::bindings::exports::packfs::virt::control;
use crate::bindings::wasi::cli::stderr;
use crate::bindings::wasi::filesystem::{preopens, types as host};
use crate::namespace;

impl control::Guest for Virt {
    fn save() -> Result<(), ()> {
        let saved = namespace::with(|ns| match ns {
            Ok(ns) => match (&ns.save, &ns.opened.table) {
                (Some(to), Some(table)) => save(&**table, to).map_err(|e| format!("saving to {to}: {e}")),
                _ => Ok(()),
            },
            Err(failed) => Err(format!("the namespace did not open: {}", failed.error)),
        });
        match saved {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = stderr::get_stderr().blocking_write_and_flush(format!("packfs virt: {e}\n").as_bytes());
                Err(())
            }
        }
    }
}

/// The host's preopen holding `path` (the longest that does) and the rest
/// of `path` below it.
fn place(path: &str) -> Result<(host::Descriptor, String), String> {
    let mut best: Option<(host::Descriptor, String, usize)> = None;
    for (dir, name) in preopens::get_directories() {
        let name = name.trim_end_matches('/');
        let Some(rest) = path.strip_prefix(name).and_then(|r| r.strip_prefix('/')) else { continue };
        if !rest.is_empty() && best.as_ref().is_none_or(|b| name.len() > b.2) {
            best = Some((dir, rest.to_string(), name.len()));
        }
    }
    best.map(|(d, rest, _)| (d, rest)).ok_or_else(|| "no preopen of the host's holds it".to_string())
}

/// Writes into a host file from its start.
struct HostFile {
    file: host::Descriptor,
    at: u64,
}

impl Write for HostFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let piece = &buf[..buf.len().min(1 << 20)];
        let n = self.file.write(piece, self.at).map_err(|e| std::io::Error::other(format!("{e:?}")))?;
        self.at += n;
        Ok(n as usize)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn save(fs: &dyn packfs_core::FileSystem, to: &str) -> Result<(), String> {
    let (dir, rest) = place(to)?;
    let temp = format!("{rest}.packfs-saving");
    let open = host::OpenFlags::CREATE | host::OpenFlags::TRUNCATE;
    let file = dir
        .open_at(host::PathFlags::empty(), &temp, open, host::DescriptorFlags::WRITE)
        .map_err(|e| format!("{e:?}"))?;
    let mut out = HostFile { file, at: 0 };
    let written = write_pack(fs, &mut out).map_err(|e| e.to_string());
    let synced = written.and_then(|_| out.file.sync().map_err(|e| format!("{e:?}")));
    drop(out);
    let renamed = synced.and_then(|()| dir.rename_at(&temp, &dir, &rest).map_err(|e| format!("{e:?}")));
    if renamed.is_err() {
        let _ = dir.unlink_file_at(&temp);
    }
    renamed
}
