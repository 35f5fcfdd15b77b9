//! Regular files: open flags, read, write, seek, append, truncate, access
//! modes, large files.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};

use packfs_guests::{digest, pattern, show, step};

fn read_all(path: &str) -> std::io::Result<String> {
    fs::read_to_string(path)
}

fn main() {
    step("mkdir /f", fs::create_dir("/f"));
    step("write a.txt", fs::write("/f/a.txt", "hello world"));
    show("read a.txt", read_all("/f/a.txt"));
    show("len a.txt", fs::metadata("/f/a.txt").map(|m| m.len()));

    // create / create_new / must-exist
    step("create_new existing", OpenOptions::new().write(true).create_new(true).open("/f/a.txt"));
    step("create_new fresh", OpenOptions::new().write(true).create_new(true).open("/f/b.txt"));
    show("len b.txt", fs::metadata("/f/b.txt").map(|m| m.len()));
    step("open missing", File::open("/f/missing"));
    step("open missing write", OpenOptions::new().write(true).open("/f/missing"));
    step("create keeps content", OpenOptions::new().write(true).create(true).open("/f/a.txt"));
    show("read a.txt after create", read_all("/f/a.txt"));
    step("truncate", OpenOptions::new().write(true).truncate(true).open("/f/a.txt"));
    show("len after truncate", fs::metadata("/f/a.txt").map(|m| m.len()));

    // append
    let r = (|| {
        let mut f = OpenOptions::new().append(true).create(true).open("/f/log")?;
        f.write_all(b"one\n")?;
        f.write_all(b"two\n")?;
        drop(f);
        let mut f = OpenOptions::new().append(true).open("/f/log")?;
        f.write_all(b"three\n")?;
        Ok(())
    })();
    step("append three lines", r);
    show("read log", read_all("/f/log"));
    // An appending handle writes at the end whatever its position.
    let r = (|| {
        let mut f = OpenOptions::new().read(true).append(true).open("/f/log")?;
        f.seek(SeekFrom::Start(0))?;
        f.write_all(b"four\n")?;
        let mut s = String::new();
        f.seek(SeekFrom::Start(0))?;
        f.read_to_string(&mut s)?;
        Ok(s)
    })();
    show("append after seek", r);

    // seek, overwrite, gaps
    let r = (|| {
        let mut f = OpenOptions::new().read(true).write(true).create(true).open("/f/s.txt")?;
        f.write_all(b"hello world")?;
        f.seek(SeekFrom::Start(6))?;
        f.write_all(b"WORLD")?;
        let end = f.seek(SeekFrom::End(-5))?;
        let mut buf = [0; 5];
        f.read_exact(&mut buf)?;
        let cur = f.seek(SeekFrom::Current(-2))?;
        Ok((end, String::from_utf8_lossy(&buf).into_owned(), cur))
    })();
    show("seek overwrite", r);
    show("seek before start", File::open("/f/s.txt").and_then(|mut f| f.seek(SeekFrom::Current(-1))));
    let r = (|| {
        let mut f = OpenOptions::new().write(true).open("/f/s.txt")?;
        f.seek(SeekFrom::Start(20))?;
        f.write_all(b"!")?;
        fs::read("/f/s.txt")
    })();
    show("write past end leaves zeros", r);
    let r = (|| {
        let mut f = File::open("/f/s.txt")?;
        f.seek(SeekFrom::End(10))?;
        let mut buf = Vec::new();
        f.read_to_end(&mut buf)?;
        Ok(buf.len())
    })();
    show("read past end", r);

    // set_len
    let r = (|| {
        let f = OpenOptions::new().write(true).open("/f/s.txt")?;
        f.set_len(3)?;
        let shrunk = fs::read("/f/s.txt")?;
        f.set_len(6)?;
        Ok((shrunk, fs::read("/f/s.txt")?))
    })();
    show("set_len shrink grow", r);

    // access modes
    show("read write-only", OpenOptions::new().write(true).open("/f/s.txt").and_then(|mut f| f.read(&mut [0; 4])));
    show("write read-only", File::open("/f/s.txt").and_then(|mut f| f.write(b"x")));
    step("set_len read-only", File::open("/f/s.txt").and_then(|f| f.set_len(0)));
    show("read after failures", fs::read("/f/s.txt"));

    // directories are not files
    step("open dir for write", OpenOptions::new().write(true).open("/f"));
    step("create over dir", OpenOptions::new().write(true).create(true).open("/f"));
    show("read dir as file", File::open("/f").and_then(|mut f| f.read(&mut [0; 4])));
    show("read_to_string dir", fs::read_to_string("/f"));
    step("write under file", fs::write("/f/a.txt/x", "x"));
    step("write in missing dir", fs::write("/f/nope/x", "x"));

    // large files: 3 MiB in one write, then read back in odd chunks
    let big = pattern(3 << 20, 7);
    step("write big", fs::write("/f/big", &big));
    show("digest big", fs::read("/f/big").map(|d| digest(&d)));
    let r = (|| {
        let mut f = File::open("/f/big")?;
        let mut out = Vec::new();
        let mut buf = vec![0; 7777];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        Ok(digest(&out))
    })();
    show("digest big chunked", r);
    let r = (|| {
        let mut f = OpenOptions::new().write(true).open("/f/big")?;
        f.seek(SeekFrom::Start(1 << 20))?;
        f.write_all(b"PATCH")?;
        let mut f = File::open("/f/big")?;
        f.seek(SeekFrom::Start((1 << 20) - 2))?;
        let mut buf = [0; 9];
        f.read_exact(&mut buf)?;
        Ok(buf)
    })();
    show("patch big", r);

    // an unlinked file stays usable through its handle
    let r = (|| {
        let mut f = OpenOptions::new().read(true).write(true).create(true).open("/f/tmp")?;
        fs::remove_file("/f/tmp")?;
        f.write_all(b"ghost")?;
        f.seek(SeekFrom::Start(0))?;
        let mut s = String::new();
        f.read_to_string(&mut s)?;
        Ok((s, f.metadata()?.len(), fs::metadata("/f/tmp").is_err()))
    })();
    show("unlinked but open", r);
    println!("done");
}
