//! A read-only preopen at /ro (holding hello.txt and sub/inner.txt): reads
//! work, every change is refused.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::time::SystemTime;

use packfs_guests::{show, step, symlink};

fn main() {
    show("read", fs::read_to_string("/ro/hello.txt"));
    show("read inner", fs::read_to_string("/ro/sub/inner.txt"));
    let mut names: Vec<String> = match fs::read_dir("/ro") {
        Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect(),
        Err(e) => vec![format!("error {e}")],
    };
    names.sort();
    println!("list: {names:?}");
    show("stat", fs::metadata("/ro/hello.txt").map(|m| m.len()));
    step("create", fs::write("/ro/new.txt", "x"));
    step("open write", OpenOptions::new().write(true).open("/ro/hello.txt"));
    step("open append", OpenOptions::new().append(true).open("/ro/hello.txt"));
    step("truncate", OpenOptions::new().write(true).truncate(true).open("/ro/hello.txt"));
    show("write read handle", File::open("/ro/hello.txt").and_then(|mut f| f.write(b"x")));
    step("set_len", File::open("/ro/hello.txt").and_then(|f| f.set_len(0)));
    step("set_modified", File::open("/ro/hello.txt").and_then(|f| f.set_modified(SystemTime::UNIX_EPOCH)));
    step("mkdir", fs::create_dir("/ro/d"));
    step("rmdir", fs::remove_dir("/ro/sub"));
    step("unlink", fs::remove_file("/ro/hello.txt"));
    step("rename", fs::rename("/ro/hello.txt", "/ro/bye.txt"));
    step("symlink", symlink("hello.txt", "/ro/l"));
    step("hard link", fs::hard_link("/ro/hello.txt", "/ro/h"));
    show("still there", fs::read_to_string("/ro/hello.txt"));
    // The writable root next to it still works.
    step("write rw", fs::write("/rw.txt", "rw"));
    show("read rw", fs::read_to_string("/rw.txt"));
    println!("done");
}
