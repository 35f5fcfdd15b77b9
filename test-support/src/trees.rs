//! Trees by path, to compare what guests leave: through the `FileSystem`
//! API and on a host directory, in one representation.

use std::path::Path;

use packfs_core::FileSystem;

/// A tree by path: what each entry is and holds (file bytes, symlink
/// target), without times, modes or inode numbers, which differ between a
/// real directory and PackFS by design.
pub type Tree = std::collections::BTreeMap<String, Entry>;

/// One entry of a [`Tree`].
#[derive(Debug, PartialEq, Eq)]
pub enum Entry {
    /// A directory.
    Dir,
    /// A file and its bytes.
    File(Vec<u8>),
    /// A symlink and its target.
    Symlink(String),
}

/// `fs`'s tree under its root, through the `FileSystem` API.
pub fn tree_of(fs: &dyn FileSystem) -> Tree {
    let mut tree = Tree::new();
    let mut todo = vec![(fs.root(), String::new())];
    while let Some((dir, path)) = todo.pop() {
        let mut after: Option<String> = None;
        loop {
            let page = fs.read_dir(dir, after.as_deref(), 256).unwrap();
            let Some(last) = page.last() else { break };
            after = Some(last.name.to_string());
            for e in page {
                let p = format!("{path}/{}", e.name);
                let entry = match e.kind {
                    packfs_core::FileType::Dir => {
                        todo.push((e.ino, p.clone()));
                        Entry::Dir
                    }
                    packfs_core::FileType::File => {
                        let mut buf = vec![0; fs.metadata(e.ino).unwrap().size as usize];
                        let n = fs.read_at(e.ino, 0, &mut buf).unwrap();
                        buf.truncate(n);
                        Entry::File(buf)
                    }
                    packfs_core::FileType::Symlink => Entry::Symlink(fs.readlink(e.ino).unwrap()),
                };
                tree.insert(p, entry);
            }
        }
    }
    tree
}

/// The tree under host directory `root`.
pub fn tree_of_dir(root: &Path) -> Tree {
    let mut tree = Tree::new();
    let mut todo = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, path)) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let p = format!("{path}/{}", e.file_name().to_str().unwrap());
            let t = e.file_type().unwrap();
            let entry = if t.is_dir() {
                todo.push((e.path(), p.clone()));
                Entry::Dir
            } else if t.is_symlink() {
                Entry::Symlink(std::fs::read_link(e.path()).unwrap().to_str().unwrap().to_owned())
            } else {
                Entry::File(std::fs::read(e.path()).unwrap())
            };
            tree.insert(p, entry);
        }
    }
    tree
}
