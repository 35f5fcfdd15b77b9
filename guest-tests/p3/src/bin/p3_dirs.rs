//! Directories and links through WASI 0.3: making and removing, listing
//! with `read-directory` (a listing stopped early, one of many entries),
//! rename, hard and symbolic links, and their errors.

use packfs_guests_p3::exports::wasi::cli::run::Guest;
use packfs_guests_p3::{Descriptor, DescriptorFlags as F, OpenFlags as O, PathFlags, list, open, preopen, show, step};

struct Run;
packfs_guests_p3::export!(Run);

const RW: F = F::READ.union(F::WRITE);

/// Entries of the large directory.
const MANY: usize = 100_000;

impl Guest for Run {
    async fn run() -> Result<(), ()> {
        let root = preopen("/");
        step("mkdir d", root.create_directory_at("d".into()).await);
        let d = open(&root, "d", O::DIRECTORY, F::READ | F::MUTATE_DIRECTORY).await.unwrap();
        tree(&d).await;
        renames(&d).await;
        links(&d).await;
        many(&d).await;
        show("seed", list(&open(&root, "seed", O::DIRECTORY, F::READ).await.unwrap()).await.map(|l| l.len()));
        show("seed/many", list(&open(&root, "seed/many", O::DIRECTORY, F::READ).await.unwrap()).await.map(|l| l.len()));
        show("ro", list(&preopen("/ro")).await);
        println!("done");
        Ok(())
    }
}

async fn tree(d: &Descriptor) {
    show("empty", list(d).await);
    step("mkdir a", d.create_directory_at("a".into()).await);
    step("mkdir a/b", d.create_directory_at("a/b".into()).await);
    step("mkdir again", d.create_directory_at("a".into()).await);
    step("mkdir under missing", d.create_directory_at("x/y".into()).await);
    step("create a/f", open(d, "a/f", O::CREATE, RW).await);
    show("list a", list(&open(d, "a", O::DIRECTORY, F::READ).await.unwrap()).await);
    step("rmdir non-empty", d.remove_directory_at("a".into()).await);
    step("rmdir a file", d.remove_directory_at("a/f".into()).await);
    step("unlink a directory", d.unlink_file_at("a/b".into()).await);
    step("rmdir a/b", d.remove_directory_at("a/b".into()).await);
    step("unlink a/f", d.unlink_file_at("a/f".into()).await);
    step("rmdir a", d.remove_directory_at("a".into()).await);
    step("rmdir missing", d.remove_directory_at("a".into()).await);
    show("empty again", list(d).await);
    let f = open(d, "file", O::CREATE, RW).await.unwrap();
    let (_, done) = f.read_directory();
    show("list a file", done.await);
    step("unlink file", d.unlink_file_at("file".into()).await);
}

async fn renames(d: &Descriptor) {
    step("create r1", open(d, "r1", O::CREATE, RW).await);
    step("rename r1 r2", d.rename_at("r1".into(), d, "r2".into()).await);
    step("rename missing", d.rename_at("r1".into(), d, "r3".into()).await);
    step("mkdir rd", d.create_directory_at("rd".into()).await);
    step("rename file into dir", d.rename_at("r2".into(), d, "rd/r2".into()).await);
    step("mkdir rd2", d.create_directory_at("rd2".into()).await);
    step("rename dir over empty dir", d.rename_at("rd2".into(), d, "rd3".into()).await);
    step("rename dir into itself", d.rename_at("rd".into(), d, "rd/sub".into()).await);
    step("rename dir over file", d.rename_at("rd3".into(), d, "rd/r2".into()).await);
    step("rename file over dir", d.rename_at("rd/r2".into(), d, "rd3".into()).await);
    let rd = open(d, "rd", O::DIRECTORY, F::READ | F::MUTATE_DIRECTORY).await.unwrap();
    step("rename across descriptors", rd.rename_at("r2".into(), d, "back".into()).await);
    show("after renames", list(d).await);
}

async fn links(d: &Descriptor) {
    let f = open(d, "target", O::CREATE, RW).await.unwrap();
    step("link", d.link_at(PathFlags::empty(), "target".into(), d, "hard".into()).await);
    show("link-count", f.stat().await.map(|s| s.link_count));
    step("link over existing", d.link_at(PathFlags::empty(), "target".into(), d, "back".into()).await);
    step("link a directory", d.link_at(PathFlags::empty(), "rd".into(), d, "rdl".into()).await);
    step("symlink", d.symlink_at("target".into(), "soft".into()).await);
    step("symlink dangling", d.symlink_at("nowhere".into(), "dangling".into()).await);
    step("symlink escaping", d.symlink_at("../../etc".into(), "out".into()).await);
    show("readlink", d.readlink_at("soft".into()).await);
    show("readlink a file", d.readlink_at("target".into()).await);
    show("stat-at soft", d.stat_at(PathFlags::empty(), "soft".into()).await.map(|s| (s.type_, s.size)));
    show("stat-at soft follow", d.stat_at(PathFlags::SYMLINK_FOLLOW, "soft".into()).await.map(|s| s.type_));
    show("stat-at dangling follow", d.stat_at(PathFlags::SYMLINK_FOLLOW, "dangling".into()).await.map(|s| s.type_));
    step("open through escaping", open(d, "out/passwd", O::empty(), F::READ).await);
    step("open soft", open(d, "soft", O::empty(), F::READ).await);
    step(
        "open soft nofollow",
        d.open_at(PathFlags::empty(), "soft".into(), O::empty(), F::READ).await,
    );
    step("link through symlink", d.link_at(PathFlags::SYMLINK_FOLLOW, "soft".into(), d, "hard2".into()).await);
    show("links", list(d).await);
    for name in ["hard", "hard2", "soft", "dangling", "out", "target", "back"] {
        step(&format!("unlink {name}"), d.unlink_file_at(name.into()).await);
    }
}

/// A directory of [`MANY`] entries listed whole, and a listing dropped
/// after its first read.
async fn many(d: &Descriptor) {
    step("mkdir many", d.create_directory_at("many".into()).await);
    let m = open(d, "many", O::DIRECTORY, F::READ | F::MUTATE_DIRECTORY).await.unwrap();
    for i in 0..MANY {
        if let Err(e) = open(&m, &format!("e{i:06}"), O::CREATE | O::EXCLUSIVE, RW).await {
            println!("create e{i:06}: err {e:?}");
        }
    }
    let listed = list(&m).await.unwrap();
    let expected = (0..MANY).map(|i| format!("e{i:06}"));
    println!("many: {} listed, all there: {}", listed.len(), listed.iter().map(|(n, _)| n.clone()).eq(expected));
    let (mut rx, done) = m.read_directory();
    let (_, first) = rx.read(Vec::with_capacity(10)).await;
    println!("first read: some {}", !first.is_empty());
    drop(rx);
    show("future after drop", done.await);
    for i in 0..MANY {
        if let Err(e) = m.unlink_file_at(format!("e{i:06}")).await {
            println!("unlink e{i:06}: err {e:?}");
        }
    }
    show("many emptied", list(&m).await);
    step("rmdir many", d.remove_directory_at("many".into()).await);
}

/// The work is `run`, which `wasi:cli/run@0.3.0` exports; the standard
/// library still wants a `main`.
fn main() {
    unreachable!("run through wasi:cli/run@0.3.0")
}
