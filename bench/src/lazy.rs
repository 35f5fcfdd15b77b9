//! What a lazy read of part of a tree fetches: the files of a tree in a
//! fixed shuffled order, and the bytes a lazily opened pack fetches to read
//! some of them whole (the compress benchmark's and the lazy probe's).

use std::path::{Path, PathBuf};

use packfs_core::FileSystem;
use packfs_core::pack::{LazyOpen, OpenStep, ReadOptions};

use crate::trees::Rng;

/// Every file under `root`, as paths from it, in a shuffled order fixed
/// by the seed (the same on every run and machine for the same tree).
pub fn files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(dir) = std::fs::read_dir(root.join(&rel)) else { continue };
        let mut names: Vec<_> = dir.filter_map(|e| e.ok()).collect();
        names.sort_by_key(|e| e.file_name());
        for e in names {
            let path = rel.join(e.file_name());
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(path),
                Ok(t) if t.is_file() => out.push(path.to_string_lossy().into_owned()),
                _ => {}
            }
        }
    }
    let mut rng = Rng::new(7);
    for i in (1..out.len()).rev() {
        out.swap(i, rng.below(i as u64 + 1) as usize);
    }
    out
}

/// The bytes a lazy open of `pack` and whole reads of `paths` fetch, as a
/// page reading a pack by URL fetches them (`LazyOpen`, then each read's
/// wanted extents, close ones merged), the open's included.
pub fn lazy_fetched(pack: &[u8], paths: &[String]) -> u64 {
    let slice = |r: &std::ops::Range<u64>| pack[r.start as usize..r.end as usize].to_vec();
    let size = pack.len() as u64;
    let mut fetched = 0;
    let mut plan = LazyOpen::new();
    loop {
        match plan.next() {
            OpenStep::Tail(len) => {
                let start = size - len.min(size);
                fetched += size - start;
                plan.accept_tail(start, slice(&(start..size)), size).unwrap();
            }
            OpenStep::Fetch(ranges) => {
                for r in &ranges {
                    fetched += r.end - r.start;
                    plan.accept(r.start, slice(r)).unwrap();
                }
            }
            OpenStep::Open => break,
        }
    }
    let p = plan.open(ReadOptions::new()).unwrap();
    for path in paths {
        let ino = packfs_core::resolve::resolve(&p, p.root(), path, true).unwrap();
        loop {
            match p.file_bytes(ino) {
                Ok(_) => break,
                Err(packfs_core::Error::NotLoaded) => {
                    for r in p.take_wanted() {
                        fetched += r.end - r.start;
                        p.store(r.start, &slice(&r)).unwrap();
                    }
                }
                Err(e) => panic!("{path}: {e}"),
            }
        }
    }
    fetched
}
