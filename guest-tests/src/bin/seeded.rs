//! A writable root that starts with a tree, /seed, which on the overlay
//! and pack backends lies in the read-only lower: reading, appending,
//! overwriting, truncating, renaming, unlinking, hard-linking and removing
//! what was there before, and what shows through afterwards.

use std::fs::{self, OpenOptions};
use std::io::{Seek, SeekFrom, Write};

use packfs_guests::{digest, show, step};

/// The names in `dir`, sorted (listing order is the backend's).
fn list(dir: &str) -> Vec<String> {
    let mut names: Vec<String> = match fs::read_dir(dir) {
        Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(e) => vec![format!("error {}", packfs_guests::describe(&e))],
    };
    names.sort();
    names
}

fn main() {
    println!("list: {:?}", list("/seed"));
    show("read a", fs::read_to_string("/seed/a.txt"));
    show("stat big", fs::metadata("/seed/big.bin").map(|m| m.len()));
    show("digest big", fs::read("/seed/big.bin").map(|d| digest(&d)));

    // Changes to files that were there: copied up on the way.
    let append = OpenOptions::new().append(true).open("/seed/a.txt");
    step("append a", append.and_then(|mut f| f.write_all(b"+more\n")));
    show("read a again", fs::read_to_string("/seed/a.txt"));
    let overwrite = OpenOptions::new().write(true).open("/seed/big.bin").and_then(|mut f| {
        f.seek(SeekFrom::Start(1000))?;
        f.write_all(b"XYZ")
    });
    step("overwrite inside big", overwrite);
    show("digest big again", fs::read("/seed/big.bin").map(|d| digest(&d)));
    step("truncate big", OpenOptions::new().write(true).open("/seed/big.bin").and_then(|f| f.set_len(10)));
    show("read big cut", fs::read("/seed/big.bin"));

    // Names that were there: moved, removed, made again, linked.
    step("rename b into sub", fs::rename("/seed/b.txt", "/seed/sub/b2.txt"));
    show("read b2", fs::read_to_string("/seed/sub/b2.txt"));
    show("read b gone", fs::read_to_string("/seed/b.txt"));
    step("unlink c", fs::remove_file("/seed/c.txt"));
    show("stat c gone", fs::metadata("/seed/c.txt").map(|m| m.len()));
    step("make c again", fs::write("/seed/c.txt", "new c\n"));
    show("read new c", fs::read_to_string("/seed/c.txt"));
    step("hard link d", fs::hard_link("/seed/sub/d.txt", "/seed/d-link"));
    step("write through the link", fs::write("/seed/d-link", "changed d\n"));
    show("read d", fs::read_to_string("/seed/sub/d.txt"));
    step("unlink d", fs::remove_file("/seed/sub/d.txt"));
    show("read the link", fs::read_to_string("/seed/d-link"));

    // Directories that were there.
    step("rmdir empty", fs::remove_dir("/seed/empty"));
    step("mkdir empty again", fs::create_dir("/seed/empty"));
    println!("list empty: {:?}", list("/seed/empty"));
    step("rmdir sub, not empty", fs::remove_dir("/seed/sub"));
    step("rename sub", fs::rename("/seed/sub", "/seed/moved"));
    println!("list moved: {:?}", list("/seed/moved"));
    show("read through moved", fs::read_to_string("/seed/moved/b2.txt"));
    step("rename into its own subtree", fs::rename("/seed/moved", "/seed/moved/inside"));

    // A directory of 100 names that were there: half removed, listed, the
    // rest removed, the directory removed.
    let even = (0..100).step_by(2).try_for_each(|i| fs::remove_file(format!("/seed/many/f{i:03}")));
    step("remove the even ones", even);
    let left = list("/seed/many");
    println!("list many: {} from {:?} to {:?}", left.len(), left.first(), left.last());
    step("rmdir many, not empty", fs::remove_dir("/seed/many"));
    let odd = (1..100).step_by(2).try_for_each(|i| fs::remove_file(format!("/seed/many/f{i:03}")));
    step("remove the odd ones", odd);
    println!("list many empty: {:?}", list("/seed/many"));
    step("rmdir many", fs::remove_dir("/seed/many"));

    // Replacing what was there by what is new, and removing a whole tree.
    step("rename c over a", fs::rename("/seed/c.txt", "/seed/a.txt"));
    show("read a replaced", fs::read_to_string("/seed/a.txt"));
    step("remove moved whole", fs::remove_dir_all("/seed/moved"));
    println!("list end: {:?}", list("/seed"));
    println!("done");
}
