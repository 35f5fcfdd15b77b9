//! `--save`: the namespace written as a pack (uncompressed) to a file
//! under one of the host's preopens, through the host's own
//! `wasi:filesystem`, when the guest's run returns
//! (`packfs:virt/control.save`, which a wrapper of the guest's `run`
//! calls) or when it exits (`wasi:cli/exit`, served here for that). The
//! pack is written to a new file of a random name beside its own (created
//! exclusively: nothing else is ever written or removed) and renamed over
//! it, so the name holds a whole pack or what it held before, whoever else
//! saves there.

use std::io::Write;

use packfs_core::pack::write_pack;

use crate::Virt;
use crate::bindings::exports::packfs::virt::control;
use crate::bindings::exports::wasi::cli::exit;
use crate::bindings::wasi::cli::exit as host_exit;
use crate::bindings::wasi::cli::stderr;
use crate::bindings::wasi::filesystem::types as host;
use crate::bindings::wasi::random::random;
use crate::host::place;
use crate::namespace;

impl control::Guest for Virt {
    fn save() -> Result<(), ()> {
        save_now()
    }
}

impl exit::Guest for Virt {
    fn exit(status: Result<(), ()>) {
        let saved = save_now();
        host_exit::exit(status.and(saved));
    }

    fn exit_with_code(code: u8) {
        let saved = save_now();
        host_exit::exit_with_code(if saved.is_err() && code == 0 { 1 } else { code });
    }
}

/// Saves the namespace if the image says so, once: a second call (an exit
/// from a wrapper's save, a run that exits after) does nothing.
fn save_now() -> Result<(), ()> {
    if SAVED.replace(true) {
        return Ok(());
    }
    let saved = namespace::with(|ns| match ns {
        Ok(ns) => match (&ns.save, &ns.opened.table) {
            (Some(to), Some(table)) => save(&**table, to).map_err(|e| format!("saving to {to}: {e}")),
            _ => Ok(()),
        },
        Err(failed) if failed.save => Err(format!("nothing saved: the namespace did not open: {}", failed.error)),
        Err(_) => Ok(()),
    });
    saved.map_err(|e| {
        for piece in format!("packfs virt: {e}\n").as_bytes().chunks(4096) {
            let _ = stderr::get_stderr().blocking_write_and_flush(piece);
        }
    })
}

thread_local! {
    static SAVED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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

/// A new file beside `rest` in `dir`, of a random name, created
/// exclusively: its name and the open descriptor.
fn create_beside(dir: &host::Descriptor, rest: &str) -> Result<(String, host::Descriptor), String> {
    let open = host::OpenFlags::CREATE | host::OpenFlags::EXCLUSIVE;
    let mut last = None;
    for _ in 0..8 {
        let temp = format!("{rest}.packfs-{:016x}", random::get_random_u64());
        match dir.open_at(host::PathFlags::empty(), &temp, open, host::DescriptorFlags::WRITE) {
            Ok(file) => return Ok((temp, file)),
            Err(e) if e == host::ErrorCode::Exist => last = Some(e),
            Err(e) => return Err(format!("creating {temp}: {e:?}")),
        }
    }
    Err(format!("no new name beside it: {last:?}"))
}

fn save(fs: &dyn packfs_core::FileSystem, to: &str) -> Result<(), String> {
    let (dir, rest) = place(to).filter(|(_, rest)| !rest.is_empty()).ok_or("no preopen of the host's holds it")?;
    let (temp, file) = create_beside(&dir, &rest)?;
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
