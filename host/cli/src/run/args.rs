//! `packfs run`'s arguments, as clap takes them (what each SOURCE, size
//! and time says is parsed in `spec.rs`).

use std::ffi::OsString;
use std::path::PathBuf;

use crate::packing::Packing;
use crate::spec::{MountSpec, parse_bytes, parse_env, parse_seconds};

#[derive(Debug, clap::Args)]
#[command(after_help = "SOURCE is one of:\n  \
    PACK          a pack, read-only: a file, or an s3://BUCKET/KEY or http(s):// URL, read lazily\n  \
    PACK+mem      an in-memory overlay over a pack: reads from the pack, changes in memory\n  \
    mem           an empty in-memory tree\n  \
    mem:LIMITS, PACK+mem:LIMITS   as above, with LIMITS: max-bytes=N,max-inodes=N (suffixes k, M, G: \
    powers of 1024 for bytes, of 1000 for inodes); past one the guest gets EDQUOT\n  \
    dir:PATH      a host directory, read-write\n  \
    dir-ro:PATH   a host directory, read-only\n  \
    journal:DIR   an in-memory tree kept durable by a write-ahead log in DIR (created when missing)\n  \
    journal:DIR:LIMITS   as above, with mem's LIMITS on the tree in memory, and its log growing by at most 16 \
    times max-bytes (64M at least) between checkpoints; a log longer than its tree is checkpointed when the \
    run ends\n\
    PACK@blake3:HEX, PACK@blake3:HEX+mem   only the pack with that digest (packfs info prints it); \
    any other is refused, and every byte read is checked against it\n  \
    Prefix ./ to a pack file named like a keyword: ./mem, ./dir:x.\n\n\
    Without any --mount the guest has no preopens.\n\n\
    dir: and dir-ro: mounts together hold at most min(half the soft RLIMIT_NOFILE, 4096) host descriptors \
    for the guest's open files and directories (packfs first raises the soft limit to the hard one); an \
    open past them fails, and packfs and the other mounts go on.\n\n\
    What the limits bound, in all: the guest's linear memory (--max-memory); each mem mount's content, \
    names and inodes as the host memory they take (max-bytes, max-inodes); its descriptors (at most \
    65,536, each holding at most one name of a listing); its time, a host call it is blocked in included \
    (a sleep, stdin, a full stdout, a remote fetch: --timeout); its dir: mounts' host descriptors (above); \
    remote data: each chunk fetched once and kept for the run, the shared cache at most --cache-size.\n\n\
    Exit status: the guest's (a p1 module's exit code, modulo 256; a p2 component's 0 or 1 unless it \
    exits with wasi:cli/exit.exit-with-code); 134 if it traps; 124 past --timeout; 137 past \
    --max-memory; 2 if packfs fails (a bad argument, a missing file, a guest that cannot run here, a \
    failed --save).")]
pub(crate) struct Args {
    /// Mount SOURCE at GUEST_PATH (repeatable; mounts may nest). Without a
    /// mount at `/`, the root is an empty in-memory tree.
    #[arg(long = "mount", value_name = "GUEST_PATH=SOURCE")]
    pub(super) mounts: Vec<MountSpec>,
    /// Set a variable in the guest's environment (repeatable); the guest
    /// sees no other.
    #[arg(long = "env", value_name = "K=V", value_parser = parse_env)]
    pub(super) env: Vec<(String, String)>,
    /// When the guest exits (with any status), write the whole namespace as
    /// it left it to a pack at PATH, atomically. Not after a trap.
    #[arg(long, value_name = "PATH")]
    pub(super) save: Option<PathBuf>,
    /// How `--save` writes its pack.
    #[command(flatten)]
    pub(super) packing: Packing,
    /// Most bytes of linear memory the guest may grow to (suffixes k, M, G:
    /// powers of 1024).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub(super) max_memory: Option<u64>,
    /// Most wall-clock time the guest may run, in seconds (fractions
    /// allowed). The guest is compiled with interruption checks for it:
    /// a first run compiles slower (up to 1.4x), and it is cached apart.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub(super) timeout: Option<std::time::Duration>,
    /// Fetch ahead, while the guest runs, the chunks of remote packs that
    /// TRACE lists (a file, or an s3:// or http(s):// URL; written by
    /// --record-trace). What it does not list is fetched when read.
    #[arg(long, value_name = "TRACE", conflicts_with = "no_prefetch")]
    pub(super) prefetch: Option<PathBuf>,
    /// Without --prefetch, a remote pack's trace published beside it
    /// (PACK.trace, as --record-trace PACK.trace writes it) is asked for
    /// with the open's first request and prefetched when found; this turns
    /// that off.
    #[arg(long)]
    pub(super) no_prefetch: bool,
    /// When the guest exits, write to TRACE (a file, or an s3:// or
    /// http(s):// URL) which chunks of remote packs it read, in the order
    /// it first read them: what --prefetch fetches ahead on the next run.
    #[arg(long, value_name = "TRACE")]
    pub(super) record_trace: Option<PathBuf>,
    /// Compile the guest afresh instead of using the cache of compiled
    /// guests ($PACKFS_CACHE_DIR/guests, else $XDG_CACHE_HOME/packfs/guests,
    /// else ~/.cache/packfs/guests; least recently used out first).
    #[arg(long)]
    pub(super) no_cache: bool,
    /// Most bytes the cache of compiled guests holds (e.g. 512M, 4G); 0
    /// keeps nothing, as --no-cache. Applied after each store.
    #[arg(long, value_name = "BYTES", default_value = "2G", value_parser = parse_bytes)]
    pub(super) guest_cache_size: u64,
    /// The guest — a WASI p1 module or a p2 component — and its arguments.
    /// Everything after MODULE goes to the guest.
    #[arg(value_name = "MODULE.wasm [ARGS]", required = true, num_args = 1.., trailing_var_arg = true,
          allow_hyphen_values = true)]
    pub(super) command: Vec<OsString>,
}
