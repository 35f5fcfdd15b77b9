use packfs_core::{FileSystem, MemFs, OpenOptions};
use std::time::Instant;
fn main() {
    let piece = vec![7u8; 4096];
    let rounds: usize = std::env::args().nth(1).map_or(5, |s| s.parse().unwrap());
    for r in 0..rounds {
        let fs = MemFs::new();
        let f = fs.open(fs.root(), "big", &OpenOptions::create()).unwrap();
        let t = Instant::now();
        let mut off = 0u64;
        for _ in 0..16384 {
            fs.write_at(f, off, &piece).unwrap();
            off += 4096;
        }
        let w = t.elapsed();
        println!(
            "round {r}: 64 MiB in 4 KiB write_at: {:.2} ms ({:.0} ns/piece)",
            w.as_secs_f64() * 1e3,
            w.as_secs_f64() * 1e9 / 16384.0
        );
        fs.close(f);
    }
}
