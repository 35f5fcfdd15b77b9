//! A scriptable guest for `packfs run`'s tests: its arguments are a list of
//! commands, run in order. The first failure prints `toolbox: COMMAND:
//! ERROR` on stderr and exits 1, as a shell under `set -e` would.
//!
//! ```text
//! cat PATH          the file's contents to stdout
//! write PATH TEXT   create or replace a file
//! append PATH TEXT  append to a file (created when missing)
//! mkdir PATH        create a directory and its missing parents
//! rm PATH           remove a file
//! mv FROM TO        rename
//! ls PATH           the directory's names, sorted, one a line
//! echo WORD         WORD and a newline to stdout
//! argv0             the program name the guest was given
//! env NAME          the variable's value, or `<unset>`
//! stdin PATH        copy stdin into a file
//! lines             each line of stdin as `> LINE` on stdout, as it comes
//! tick PATH N       append lines `0` to `N-1` to a file, each written
//!                   (one write) before its number goes to stdout
//! fill PATH N       write N MiB (bytes `i % 251`) to a new file, in one write
//! rewrite PATH N    write a file of 1 MiB over itself N times (round `r`
//!                   all bytes `r % 251`, one write at offset 0), until
//!                   one fails; prints how many were done
//! splice PATH       the file to stdout by `wasi:io`'s `blocking-splice`
//!                   from its `read-via-stream` (WASI 0.2 only), in
//!                   splices of 64 KiB
//! stderr TEXT       TEXT and a newline to stderr
//! exit N            exit with status N at once
//! trap              hit an `unreachable` instruction
//! ```
//!
//! Not compared with the oracle (`host/tests/guests.rs` lists it as a tool).

use std::io::{self, Read, Write};
use std::{env, fs, process};

use packfs_guests::describe;

fn main() {
    let args: Vec<String> = env::args().collect();
    let mut rest = &args[1.min(args.len())..];
    while let Some((cmd, tail)) = rest.split_first() {
        let arity = match cmd.as_str() {
            "argv0" | "trap" | "lines" => 0,
            "write" | "append" | "tick" | "rewrite" | "fill" | "mv" => 2,
            _ => 1,
        };
        if tail.len() < arity {
            fail(cmd, "missing argument");
        }
        let (operands, next) = tail.split_at(arity);
        if let Err(e) = command(cmd, operands, &args[0]) {
            let shown = std::iter::once(cmd.as_str()).chain(operands.first().map(String::as_str));
            fail(&shown.collect::<Vec<_>>().join(" "), &describe(&e));
        }
        rest = next;
    }
}

fn command(cmd: &str, a: &[String], argv0: &str) -> io::Result<()> {
    let mut out = io::stdout().lock();
    match cmd {
        "cat" => out.write_all(&fs::read(&a[0])?),
        "write" => fs::write(&a[0], &a[1]),
        "append" => fs::OpenOptions::new().append(true).create(true).open(&a[0])?.write_all(a[1].as_bytes()),
        "mkdir" => fs::create_dir_all(&a[0]),
        "rm" => fs::remove_file(&a[0]),
        "mv" => fs::rename(&a[0], &a[1]),
        "ls" => {
            let mut names = fs::read_dir(&a[0])?
                .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect::<io::Result<Vec<_>>>()?;
            names.sort();
            names.iter().try_for_each(|n| writeln!(out, "{n}"))
        }
        "echo" => writeln!(out, "{}", a[0]),
        "argv0" => writeln!(out, "{argv0}"),
        "env" => writeln!(out, "{}", env::var(&a[0]).unwrap_or_else(|_| "<unset>".into())),
        "stdin" => {
            let mut data = Vec::new();
            io::stdin().read_to_end(&mut data)?;
            fs::write(&a[0], data)
        }
        "lines" => io::stdin().lines().try_for_each(|line| {
            writeln!(out, "> {}", line?)?;
            out.flush()
        }),
        "tick" => {
            let n: u64 = a[1].parse().unwrap_or_else(|_| fail("tick", "not a number"));
            let mut f = fs::OpenOptions::new().append(true).create(true).open(&a[0])?;
            (0..n).try_for_each(|i| {
                f.write_all(format!("{i}\n").as_bytes())?;
                writeln!(out, "{i}")?;
                out.flush()
            })
        }
        "fill" => {
            let n: usize = a[1].parse().unwrap_or_else(|_| fail("fill", "not a number"));
            let data: Vec<u8> = (0..n << 20).map(|i| (i % 251) as u8).collect();
            // One write call for all of it: std's write_all makes one
            // fd_write, which PackFS takes whole.
            fs::File::create(&a[0])?.write_all(&data)
        }
        "rewrite" => {
            use std::io::{Seek, SeekFrom};
            let n: u64 = a[1].parse().unwrap_or_else(|_| fail("rewrite", "not a number"));
            let mut f = fs::OpenOptions::new().write(true).create(true).truncate(false).open(&a[0])?;
            let mut done = 0;
            let result = (0..n).try_for_each(|r| {
                f.seek(SeekFrom::Start(0))?;
                f.write_all(&vec![(r % 251) as u8; 1 << 20])?;
                done += 1;
                Ok(())
            });
            writeln!(out, "rewrote {done}")?;
            out.flush()?;
            result
        }
        "splice" => {
            out.flush()?;
            splice(&a[0])
        }
        "stderr" => writeln!(io::stderr(), "{}", a[0]),
        "exit" => {
            out.flush()?;
            process::exit(a[0].parse().unwrap_or_else(|_| fail("exit", "not a number")))
        }
        "trap" => {
            out.flush()?;
            trap()
        }
        _ => fail(cmd, "unknown command"),
    }
}

/// `splice`: the file at absolute `path` (under the preopen `/`) to stdout.
#[cfg(target_env = "p2")]
fn splice(path: &str) -> io::Result<()> {
    use wasi::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
    use wasi::io::streams::StreamError;
    let failed = |e: String| io::Error::other(e);
    let root = wasi::filesystem::preopens::get_directories()
        .into_iter()
        .find(|(_, p)| p == "/")
        .ok_or_else(|| failed("no preopen /".into()))?
        .0;
    let path = path.trim_start_matches('/');
    let file = root
        .open_at(PathFlags::empty(), path, OpenFlags::empty(), DescriptorFlags::READ)
        .map_err(|e| failed(format!("{e:?}")))?;
    let from = file.read_via_stream(0).map_err(|e| failed(format!("{e:?}")))?;
    let stdout = wasi::cli::stdout::get_stdout();
    loop {
        match stdout.blocking_splice(&from, 64 << 10) {
            Ok(_) => {}
            Err(StreamError::Closed) => return Ok(()),
            Err(StreamError::LastOperationFailed(e)) => return Err(failed(e.to_debug_string())),
        }
    }
}

#[cfg(not(target_env = "p2"))]
fn splice(_: &str) -> io::Result<()> {
    Err(io::Error::other("splice is WASI 0.2's"))
}

#[cfg(target_family = "wasm")]
fn trap() -> ! {
    core::arch::wasm32::unreachable()
}

#[cfg(not(target_family = "wasm"))]
fn trap() -> ! {
    process::abort()
}

fn fail(what: &str, why: &str) -> ! {
    eprintln!("toolbox: {what}: {why}");
    process::exit(1)
}
