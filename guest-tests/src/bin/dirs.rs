//! Directories: create, list (including 10,000 entries), remove, rename.

use std::fs;

use packfs_guests::{show, step};

/// A directory's names, sorted: listing order is the backend's own.
fn names(path: &str) -> std::io::Result<Vec<String>> {
    let mut v = fs::read_dir(path)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<std::io::Result<Vec<_>>>()?;
    v.sort();
    Ok(v)
}

/// Names with their types, sorted.
fn typed(path: &str) -> std::io::Result<Vec<(String, &'static str)>> {
    let mut v = Vec::new();
    for e in fs::read_dir(path)? {
        let e = e?;
        let t = e.file_type()?;
        let kind = if t.is_dir() {
            "dir"
        } else if t.is_symlink() {
            "symlink"
        } else {
            "file"
        };
        v.push((e.file_name().to_string_lossy().into_owned(), kind));
    }
    v.sort();
    Ok(v)
}

fn main() {
    step("mkdir /d", fs::create_dir("/d"));
    step("mkdir /d again", fs::create_dir("/d"));
    step("mkdir missing parent", fs::create_dir("/d/x/y"));
    step("mkdir -p", fs::create_dir_all("/d/x/y"));
    step("mkdir under file", fs::write("/d/file", "f").and_then(|_| fs::create_dir("/d/file/sub")));
    step("mkdir trailing slash", fs::create_dir("/d/t/"));
    show("list /d", typed("/d"));
    show("list empty", names("/d/x/y"));
    show("list file", names("/d/file"));
    show("list missing", names("/d/none"));
    show("metadata dir", fs::metadata("/d").map(|m| (m.is_dir(), m.is_file())));

    // removal
    step("rmdir nonempty", fs::remove_dir("/d/x"));
    step("rmdir file", fs::remove_dir("/d/file"));
    step("unlink dir", fs::remove_file("/d/x"));
    step("rmdir empty", fs::remove_dir("/d/x/y"));
    step("rmdir missing", fs::remove_dir("/d/x/y"));
    step("unlink missing", fs::remove_file("/d/nothing"));
    show("list after removal", typed("/d"));

    // rename
    fs::create_dir_all("/r/a/deep").unwrap();
    fs::write("/r/f1", "one").unwrap();
    fs::write("/r/f2", "two").unwrap();
    fs::create_dir("/r/empty").unwrap();
    fs::create_dir("/r/full").unwrap();
    fs::write("/r/full/x", "x").unwrap();
    step("rename file", fs::rename("/r/f1", "/r/g1"));
    show("renamed content", fs::read_to_string("/r/g1"));
    step("rename file over file", fs::rename("/r/g1", "/r/f2"));
    show("replaced content", fs::read_to_string("/r/f2"));
    show("old name gone", fs::metadata("/r/g1").map(|_| ()));
    step("rename dir over empty dir", fs::rename("/r/empty", "/r/e2"));
    fs::create_dir("/r/empty").unwrap();
    step("rename dir over empty dir 2", fs::rename("/r/e2", "/r/empty"));
    step("rename dir over full dir", fs::rename("/r/empty", "/r/full"));
    step("rename dir into itself", fs::rename("/r/a", "/r/a/deep/a"));
    step("rename dir onto child", fs::rename("/r/a", "/r/a/deep"));
    step("rename file over dir", fs::rename("/r/f2", "/r/full"));
    step("rename dir over file", fs::rename("/r/full", "/r/f2"));
    step("rename missing", fs::rename("/r/nope", "/r/nope2"));
    step("rename to missing parent", fs::rename("/r/f2", "/r/no/where"));
    step("rename to same name", fs::rename("/r/f2", "/r/f2"));
    step("rename dir across", fs::rename("/r/a", "/r/full/a"));
    show("moved subtree", typed("/r/full/a"));
    show("list /r", typed("/r"));

    // a big directory
    fs::create_dir("/big").unwrap();
    let mut made = 0;
    for i in 0..10_000 {
        if fs::write(format!("/big/f{i:05}"), i.to_string()).is_ok() {
            made += 1;
        }
    }
    println!("created: {made}");
    let r = names("/big").map(|v| {
        let expected: Vec<String> = (0..10_000).map(|i| format!("f{i:05}")).collect();
        (v.len(), v == expected)
    });
    show("list big", r);
    show("read one", fs::read_to_string("/big/f04321"));
    // Listing while removing: every entry is seen once.
    let r = (|| {
        let mut seen = 0;
        for e in fs::read_dir("/big")? {
            let e = e?;
            if seen % 2 == 0 {
                fs::remove_file(e.path())?;
            }
            seen += 1;
        }
        Ok((seen, names("/big")?.len()))
    })();
    show("list while removing", r);
    step("remove_dir_all big", fs::remove_dir_all("/big"));
    show("big gone", fs::metadata("/big").map(|_| ()));
    println!("done");
}
