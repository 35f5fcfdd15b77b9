//! Metadata: stat and fstat, types and sizes, times set and read back.

use std::fs::{self, File, FileTimes, OpenOptions};
use std::io::Write;
use std::time::{Duration, SystemTime};

use packfs_guests::{show, step, symlink};

fn at(secs: u64, nanos: u32) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::new(secs, nanos)
}

fn main() {
    fs::create_dir("/m").unwrap();
    fs::write("/m/f", "12345").unwrap();
    show("stat file", fs::metadata("/m/f").map(|m| (m.is_file(), m.is_dir(), m.len())));
    show("stat dir", fs::metadata("/m").map(|m| (m.is_file(), m.is_dir())));
    show("fstat", File::open("/m/f").and_then(|f| f.metadata()).map(|m| (m.is_file(), m.len())));
    show("fstat dir", File::open("/m").and_then(|f| f.metadata()).map(|m| m.is_dir()));
    show("stat missing", fs::metadata("/m/none").map(|_| ()));
    show("stat under file", fs::metadata("/m/f/x").map(|_| ()));
    show("stat trailing slash file", fs::metadata("/m/f/").map(|_| ()));
    show("stat trailing slash dir", fs::metadata("/m/").map(|m| m.is_dir()));

    // times
    let t1 = at(1_000_000_000, 123_456_789);
    let t2 = at(1_500_000_000, 0);
    let r = (|| {
        let f = OpenOptions::new().write(true).open("/m/f")?;
        f.set_times(FileTimes::new().set_accessed(t1).set_modified(t2))?;
        let m = fs::metadata("/m/f")?;
        Ok((m.accessed()? == t1, m.modified()? == t2))
    })();
    show("set_times", r);
    let r = (|| {
        let f = File::open("/m/f")?;
        f.set_modified(t1)?;
        let m = f.metadata()?;
        Ok((m.modified()? == t1, m.accessed()? == t1))
    })();
    show("set_modified on read handle", r);
    let r = (|| {
        let mut f = OpenOptions::new().append(true).open("/m/f")?;
        f.write_all(b"6")?;
        let m = fs::metadata("/m/f")?;
        Ok((m.modified()? > t2, m.len()))
    })();
    show("write moves mtime", r);
    let r = (|| {
        let f = File::open("/m")?;
        f.set_modified(t2)?;
        Ok(fs::metadata("/m")?.modified()? == t2)
    })();
    show("set dir mtime", r);
    let r = (|| {
        let before = fs::metadata("/m")?.modified()?;
        fs::write("/m/new", "")?;
        Ok(fs::metadata("/m")?.modified()? > before)
    })();
    show("create moves dir mtime", r);
    show("now is recent", fs::metadata("/m/new").and_then(|m| m.modified()).map(|t| t > at(1_700_000_000, 0)));

    // symlink metadata
    step("symlink", symlink("f", "/m/l"));
    show("lstat", fs::symlink_metadata("/m/l").map(|m| (m.file_type().is_symlink(), m.len())));
    show("stat via link", fs::metadata("/m/l").map(|m| (m.file_type().is_symlink(), m.len())));
    println!("done");
}
