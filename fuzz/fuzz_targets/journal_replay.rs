//! Arbitrary bytes as a journal: decoded as a header, and replayed whole as
//! records onto an empty tree, which must come out consistent whenever the
//! replay succeeds. The first byte picks the form of the rest: odd, payloads
//! separated by 0xA5 bytes, each framed with its length and checksum (so
//! that mutations reach the record decoder and the tree behind them);
//! even, a raw log (the framing and checksums themselves).
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
    let mut tree = Tree::new(Timestamp::new(1_600_000_000, 0), Limits::default());
    if replay(&mut tree, &log).is_ok() {
        let snapshot = Snapshot::from(tree);
        if let Err(e) = snapshot.check_consistency() {
            panic!("a replayed tree is inconsistent: {e}");
        }
    }
});
