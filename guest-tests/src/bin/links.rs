//! Symbolic and hard links, and the sandbox edge: `..` and symlink escapes.

use std::fs::{self, File, OpenOptions};
use std::io::Write;

use packfs_guests::{show, step, symlink};

fn kind(path: &str) -> std::io::Result<&'static str> {
    let t = fs::symlink_metadata(path)?.file_type();
    Ok(if t.is_symlink() {
        "symlink"
    } else if t.is_dir() {
        "dir"
    } else {
        "file"
    })
}

fn main() {
    fs::create_dir_all("/l/sub").unwrap();
    fs::write("/l/target.txt", "target").unwrap();

    // symlinks
    step("symlink", symlink("target.txt", "/l/link"));
    show("readlink", fs::read_link("/l/link"));
    show("read via link", fs::read_to_string("/l/link"));
    show("kind link", kind("/l/link"));
    show("metadata follows", fs::metadata("/l/link").map(|m| m.is_file()));
    show("symlink len", fs::symlink_metadata("/l/link").map(|m| m.len()));
    step("symlink exists", symlink("x", "/l/link"));
    step("symlink dir", symlink("sub", "/l/sublink"));
    step("write via dir link", fs::write("/l/sublink/in.txt", "in"));
    show("read through dir link", fs::read_to_string("/l/sub/in.txt"));
    step("symlink up", symlink("../target.txt", "/l/sub/up"));
    show("read via up link", fs::read_to_string("/l/sub/up"));
    step("dangling", symlink("nowhere", "/l/dangling"));
    show("metadata dangling", fs::metadata("/l/dangling").map(|_| ()));
    show("kind dangling", kind("/l/dangling"));
    step("create through dangling", fs::write("/l/dangling", "made"));
    show("dangling target made", fs::read_to_string("/l/nowhere"));
    step("create_new through link", OpenOptions::new().write(true).create_new(true).open("/l/link"));
    step("loop a", symlink("loop_b", "/l/loop_a"));
    step("loop b", symlink("loop_a", "/l/loop_b"));
    show("metadata loop", fs::metadata("/l/loop_a").map(|_| ()));
    step("open loop", File::open("/l/loop_a"));
    show("readlink file", fs::read_link("/l/target.txt"));
    show("readlink missing", fs::read_link("/l/missing"));
    step("unlink link", fs::remove_file("/l/link"));
    show("target survives", fs::read_to_string("/l/target.txt"));
    step("rmdir dir link", fs::remove_dir("/l/sublink"));
    step("unlink dir link", fs::remove_file("/l/sublink"));
    show("dir survives", fs::metadata("/l/sub").map(|m| m.is_dir()));
    step("symlink empty target", symlink("", "/l/empty"));
    step("symlink absolute", symlink("/l/target.txt", "/l/abs"));

    // hard links
    step("hard link", fs::hard_link("/l/target.txt", "/l/hard"));
    let r = (|| {
        let mut f = OpenOptions::new().append(true).open("/l/hard")?;
        f.write_all(b"+more")?;
        fs::read_to_string("/l/target.txt")
    })();
    show("write via hard link", r);
    step("hard link exists", fs::hard_link("/l/target.txt", "/l/hard"));
    step("hard link dir", fs::hard_link("/l/sub", "/l/subhard"));
    step("hard link missing", fs::hard_link("/l/missing", "/l/h2"));
    step("remove original", fs::remove_file("/l/target.txt"));
    show("hard link survives", fs::read_to_string("/l/hard"));
    step("hard link to symlink", fs::hard_link("/l/dangling", "/l/hard_sym"));
    show("kind hard_sym", kind("/l/hard_sym"));

    // the sandbox edge
    show("dotdot at root", fs::read_to_string("/../etc/passwd"));
    show("dotdot inside", fs::read_to_string("/l/sub/../../l/hard"));
    show("dotdot escape", fs::metadata("/l/../../x").map(|_| ()));
    step("escape link", symlink("../../..", "/l/sub/esc"));
    show("follow escape link", fs::metadata("/l/sub/esc").map(|_| ()));
    show("readlink escape link", fs::read_link("/l/sub/esc"));
    step("write via escape link", fs::write("/l/sub/esc/x", "x"));
    step("deep escape link", symlink("../sub/../../../", "/l/sub/esc2"));
    show("follow deep escape", fs::read_dir("/l/sub/esc2").map(|_| ()));
    step("mkdir escape", fs::create_dir("/l/../../evil"));
    println!("done");
}
