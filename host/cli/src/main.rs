//! `packfs`: build, inspect, verify, unpack and compare PackFS packs;
//! compact a journal into one; run a WASI guest on a namespace of mounts.
//!
//! One module per subcommand, each with its `Args` (clap) and its `run`;
//! adding a subcommand is one module, one [`Command`] variant and one arm in
//! [`main`]. What the modules share is in [`common`]; `pack` reads its
//! source through the `--exclude` filter in [`exclude`].
//!
//! Exit status: 0 on success; 1 when the answer is "no" (`verify` found
//! damage, `diff` found differences); 2 for an error (a missing file, a
//! corrupt pack, a wrong argument), printed as one line on stderr,
//! `packfs: <context>: <cause>`. `run` exits with the guest's status.

/// `println!` that returns its error (`?`) instead of panicking, so that
/// a reader going away (`packfs cat x f | head -1`) ends the command
/// quietly, as [`main`] treats a broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {
        std::io::Write::write_fmt(&mut std::io::stdout().lock(), format_args!("{}\n", format_args!($($arg)*)))?
    };
}

mod cat;
mod common;
mod compact;
mod diff;
mod exclude;
mod info;
mod ls;
mod pack;
mod packing;
mod run;
mod spec;
mod stat;
mod timeout;
mod unpack;
mod verify;
mod virt;

use std::process::ExitCode;

use packfs_remote::packs::Packs;

use clap::error::ErrorKind;
use clap::{Parser, Subcommand};

/// Build, inspect, verify, unpack and compare PackFS packs; run WASI guests on them.
#[derive(Debug, Parser)]
#[command(name = "packfs", version, propagate_version = true)]
#[command(after_help = "Exit status: 0 success, 1 damage or differences found (verify, diff), 2 error; \
    `run` exits with the guest's status.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    remote: RemoteArgs,
}

/// How packs given as URLs are read (by every subcommand).
#[derive(Debug, Clone, clap::Args)]
struct RemoteArgs {
    /// The cache of remote packs' chunks, shared by every packfs process
    /// on the host [default: $PACKFS_CACHE_DIR/packs, else
    /// $XDG_CACHE_HOME/packfs/packs, else ~/.cache/packfs/packs].
    #[arg(long, global = true, value_name = "DIR")]
    cache: Option<std::path::PathBuf>,
    /// Most bytes that cache holds; past it the least recently used go
    /// (suffixes k, M, G: powers of 1024; 0: no cache) [default: 4G].
    #[arg(long, global = true, value_name = "BYTES", value_parser = spec::parse_bytes)]
    cache_size: Option<u64>,
    /// Say on stderr, at the end, what each remote pack cost: requests,
    /// bytes fetched, chunks from the cache; and how `run` loaded its
    /// guest: compiled or from the cache, in how long.
    #[arg(long, global = true)]
    stats: bool,
}

impl RemoteArgs {
    /// The options remote packs are opened with; a cache that cannot be
    /// opened is said and done without.
    fn options(&self) -> packfs_remote::RemoteOptions {
        let size = self.cache_size.unwrap_or(packfs_remote::DEFAULT_CACHE_BYTES);
        let dir = self.cache.clone().or_else(|| packfs_host::load::GuestCache::default_dir().map(|d| d.join("packs")));
        let cache = match dir {
            Some(dir) if size > 0 => match packfs_remote::Cache::open(&dir, size) {
                Ok(c) => Some(std::sync::Arc::new(c)),
                Err(e) => {
                    // `e` names the directory.
                    eprintln!("packfs: not caching remote packs: {e}");
                    None
                }
            },
            _ => None,
        };
        packfs_remote::RemoteOptions { cache, ..Default::default() }
    }

    /// What remote packs cost, on stderr.
    fn report(&self, packs: &Packs) {
        for p in packs.remote_packs() {
            let s = p.stats();
            let pin = p.pin().map_or_else(|| "unpinned".to_owned(), |d| format!("pinned {d}"));
            let pin = match p.published_trace() {
                Some(n) => format!("{pin}; a published trace prefetched {n} chunks"),
                None => pin,
            };
            eprintln!(
                "packfs: {}: {} requests, {} fetched, {} chunks fetched after the open and {} with it, {} from the cache; {pin}",
                p.url(),
                s.requests,
                common::bytes(s.bytes),
                s.fetched - s.opened,
                s.opened,
                s.from_cache
            );
        }
        if let Some(c) = packs.remote_cache() {
            let s = c.stats();
            eprintln!(
                "packfs: cache {}: {} hits ({}), {} misses, {} stored ({}), {} evicted, {} damaged",
                c.dir().display(),
                s.hits,
                common::bytes(s.hit_bytes),
                s.misses,
                s.stored,
                common::bytes(s.stored_bytes),
                s.evicted,
                s.damaged
            );
        }
    }
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build a pack from a host directory.
    Pack(pack::Args),
    /// List a directory of a pack.
    Ls(ls::Args),
    /// Write files of a pack to stdout.
    Cat(cat::Args),
    /// Show an entry's metadata.
    Stat(stat::Args),
    /// Show a pack's header, counts, sizes and dedup ratio.
    Info(info::Args),
    /// Check every checksum of a pack.
    Verify(verify::Args),
    /// Extract a pack into a host directory.
    Unpack(unpack::Args),
    /// List the paths added, removed and changed from one pack to another.
    Diff(diff::Args),
    /// Write the tree a journal directory holds as a pack.
    Compact(compact::Args),
    /// Run a WASI guest on packs, in-memory trees, host directories and journals.
    Run(run::Args),
    /// Make a guest a component that carries PackFS as its filesystem, for any WASI host.
    Virt(virt::Args),
}

/// Exit status of an error (clap uses it for argument errors too).
const ERROR: u8 = 2;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() && e.kind() != ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            eprintln!("packfs: {}", one_line(&e));
            return ExitCode::from(ERROR);
        }
        Err(e) => e.exit(), // --help, --version
    };
    let remote = cli.remote.clone();
    let packs = Packs::with_remote(move || remote.options());
    let result = match cli.command {
        Command::Pack(args) => pack::run(args),
        Command::Ls(args) => ls::run(args, &packs),
        Command::Cat(args) => cat::run(args, &packs),
        Command::Stat(args) => stat::run(args, &packs),
        Command::Info(args) => info::run(args, &packs),
        Command::Verify(args) => verify::run(args, &packs),
        Command::Unpack(args) => unpack::run(args, &packs),
        Command::Diff(args) => diff::run(args, &packs),
        Command::Compact(args) => compact::run(args),
        Command::Run(args) => run::run(args, &packs, cli.remote.stats),
        Command::Virt(args) => virt::run(args),
    };
    if cli.remote.stats {
        cli.remote.report(&packs);
    }
    match result {
        Ok(code) => code,
        // A reader that went away (`packfs cat x | head`) is not an error.
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("packfs: {e:#}");
            // The cause behind an I/O error from a remote pack.
            for p in packs.remote_packs() {
                if let Some(why) = p.last_error() {
                    eprintln!("packfs: {why}");
                }
            }
            ExitCode::from(ERROR)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// A usage error as one line: clap's message up to its blank line (which
/// starts the usage and the hint to try `--help`), without its `error: `.
fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let message = text.split("\n\n").next().unwrap_or_default();
    let words: Vec<&str> = message.split_whitespace().collect();
    let line = words.join(" ");
    format!("{} (see --help)", line.strip_prefix("error: ").unwrap_or(&line))
}
