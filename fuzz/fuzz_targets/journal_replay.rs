//! Arbitrary bytes as a journal: decoded as a header, and replayed whole as
//! records onto an empty tree, which must come out consistent whenever the
//! replay succeeds. The first byte picks the form of the rest: bit 0 set,
//! payloads separated by 0xA5 bytes, each framed with its length and
//! checksum (so that mutations reach the record decoder and the tree
//! behind them); clear, a raw log (the framing and checksums themselves).
//! Bit 1: a version-2 log, which opens with an image of the tree.
#![no_main]

use libfuzzer_sys::fuzz_target;
use packfs_core::journal::{Header, frame, replay};
use packfs_core::mem::{Limits, Tree};
use packfs_core::{Snapshot, Timestamp};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let _ = Header::decode(rest);
    let log = if mode & 1 == 1 {
        let mut log = Vec::new();
        for payload in rest.split(|&b| b == 0xA5) {
            frame(payload, &mut log);
        }
        log
    } else {
        rest.to_vec()
    };
    let created = Timestamp::new(1_600_000_000, 0);
    let header = Header { generation: 0, created, image: mode & 2 != 0 };
    let mut tree = Tree::new(created, Limits::default());
    if replay(&mut tree, &header, &log).is_ok() {
        let snapshot = Snapshot::from(tree);
        if let Err(e) = snapshot.check_consistency() {
            panic!("a replayed tree is inconsistent: {e}");
        }
    }
});
