//! The image's reader, writer and opener, against what each must refuse.

use super::*;

fn digest() -> Digest {
    Digest([7; 32])
}

#[test]
fn an_image_reads_back_as_written() {
    let mut config = Config {
        mounts: vec![
            Mount {
                path: "/".into(),
                source: Source::Pack {
                    at: PackAt::Image { offset: 0, len: 3 },
                    digest: digest(),
                    overlay: Some(Quota { max_bytes: Some(9), max_inodes: None }),
                },
                preopen: false,
            },
            Mount {
                path: "/tmp/x".into(),
                source: Source::Mem(Quota { max_bytes: None, max_inodes: Some(5) }),
                preopen: true,
            },
            Mount {
                path: "/lib".into(),
                source: Source::Pack { at: PackAt::Host("/packs/lib.pack".into()), digest: digest(), overlay: None },
                preopen: false,
            },
            Mount {
                path: "/data".into(),
                source: Source::HostDir { host_path: "/srv/data".into(), read_only: true },
                preopen: true,
            },
        ],
        save: Some("/out/after.pack".into()),
    };
    let at = config.header_len().unwrap();
    if let Source::Pack { at: PackAt::Image { offset, .. }, .. } = &mut config.mounts[0].source {
        *offset = at;
    }
    let image = config.encode(b"abc").unwrap();
    let read = Image::decode(&image).unwrap();
    assert_eq!(read.config, config);
    assert_eq!(read.pack(at, 3).unwrap(), b"abc");
}

#[test]
fn images_no_writer_makes_are_refused() {
    let good = Config {
        mounts: vec![Mount { path: "/".into(), source: Source::Mem(Quota::default()), preopen: false }],
        save: None,
    };
    let image = good.encode(&[]).unwrap();
    assert!(Image::decode(&image).is_ok());
    let lines = |s: &str| {
        let mut v = MAGIC.to_vec();
        v.extend_from_slice(&(s.len() as u32).to_le_bytes());
        v.extend_from_slice(s.as_bytes());
        v
    };
    let d = digest();
    for bad in [
        "mount\tmem\trel\t0\t0",
        "mount\tmem\t/a/../b\t0\t0",
        "mount\tmem\t/a//b\t0\t0",
        "mount\tmem\t/\t-1\t0",
        "mount\tmem\t/\t0",
        "mem\t/\t0\t0",
        "preopen\tsave\t/x",
        "mount\tmount\tmem\t/\t0\t0",
        &format!("mount\tpack\t/\t0\t100000\t{d}\t0\t0\t0"),
        &format!("preopen\tpack\t/\t18446744073709551615\t2\t{d}\t0\t0\t0"),
        "mount\tpack\t/\t0\t0\tblake3:zz\t0\t0\t0",
        &format!("mount\tpack\t/\t0\t0\t{d}\t2\t0\t0"),
        "save\t",
        "save\t/a\nsave\t/b",
        "mount\t/",
        "mount\tmem\t/a\rb\t0\t0",
        "mount\thostdir\t/a\t/srv\t0",
        "preopen\thostdir\t/a\t\t0",
        "preopen\thostdir\t/a\t/srv\t2",
        &format!("mount\thostpack\t/\t\t{d}\t0\t0\t0"),
        &format!("mount\thostpack\t/\t/p\x01\t{d}\t0\t0\t0"),
        "mount\thostpack\t/\t/p\tblake3:00\t0\t0\t0",
    ] {
        assert!(Image::decode(&lines(bad)).is_err(), "{bad:?}");
    }
    // A length past the bytes, a wrong magic, too short.
    let mut long = image.clone();
    long[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
    assert!(Image::decode(&long).is_err());
    assert!(Image::decode(b"PACKFSV2\0\0\0\0").is_err());
    assert!(Image::decode(b"PACK").is_err());
    let many = "mount\tmem\t/\t0\t0\n".repeat(MAX_MOUNTS + 1);
    assert!(Image::decode(&lines(&many)).is_err());
}

fn mount(path: &str, preopen: bool) -> Mount {
    Mount { path: path.into(), source: Source::Mem(Quota::default()), preopen }
}

fn open(mounts: Vec<Mount>, save: Option<&str>) -> Result<Opened> {
    let config = Config { mounts, save: save.map(Into::into) };
    let no_pack = |_: &PackAt, _: &Digest| -> Result<Arc<dyn FileSystem>> { Err(Error::Invalid) };
    config.open(&crate::system_clock(), &no_pack)
}

#[test]
fn mounts_nest_and_preopens_stand_apart() {
    let opened =
        open(vec![mount("/a/b/c", false), mount("/", false), mount("/x", true), mount("/a", false)], None).unwrap();
    let paths: Vec<&str> = opened.preopens.iter().map(|p| p.0.as_str()).collect();
    assert_eq!(paths, ["/", "/x"]);
    let table = opened.table.unwrap();
    let fs: &dyn FileSystem = &*table;
    // `/a/b` was made in `/a`'s mount, and `/a/b/c` is a mount point.
    assert!(crate::resolve::resolve(fs, fs.root(), "a/b/c", true).is_ok());
    assert_eq!(table.mounts().len(), 2, "two mounted over the root");
    // Only preopens: no namespace.
    let opened = open(vec![mount("/ro", true)], None).unwrap();
    assert!(opened.table.is_none());
    assert_eq!(opened.preopens.len(), 1);
}

#[test]
fn a_configuration_no_writer_makes_does_not_open() {
    for (mounts, save) in [
        (vec![mount("/a", false), mount("/a", false)], None),
        (vec![mount("/a", true), mount("/a", true)], None),
        (vec![mount("/a", false), mount("/", true)], None),
        (vec![mount("/a", true)], Some("/out/x")),
    ] {
        assert_eq!(open(mounts, save).err(), Some(Error::Invalid));
    }
    // A pack that does not open is the error.
    let pack = Mount {
        path: "/".into(),
        source: Source::Pack { at: PackAt::Image { offset: 0, len: 0 }, digest: digest(), overlay: None },
        preopen: false,
    };
    assert_eq!(open(vec![pack], None).err(), Some(Error::Invalid));
    // A host directory is not PackFS's: it cannot be in the namespace.
    let dir = |preopen| Mount {
        path: "/d".into(),
        source: Source::HostDir { host_path: "/srv".into(), read_only: false },
        preopen,
    };
    assert_eq!(open(vec![dir(false)], None).err(), Some(Error::Invalid));
    let config = Config { mounts: vec![dir(false)], save: None };
    assert_eq!(config.encode(&[]).err(), Some(Error::Invalid));
    // Preopened, it is listed after PackFS's preopens, and twice is refused.
    let opened = open(vec![dir(true), mount("/x", true)], None).unwrap();
    assert_eq!(opened.preopens.iter().map(|p| p.0.as_str()).collect::<Vec<_>>(), ["/x"]);
    let want = HostDir { path: "/d".into(), host_path: "/srv".into(), read_only: false };
    assert_eq!(opened.host_dirs, [want]);
    let config = Config { mounts: vec![dir(true), mount("/x", true)], save: None };
    assert_eq!(config.preopen_paths(), ["/x", "/d"]);
    assert_eq!(open(vec![dir(true), mount("/d", true)], None).err(), Some(Error::Invalid));
}

#[test]
fn a_path_that_would_not_read_back_as_itself_is_refused() {
    // A tab or a line break in a path or a save would start another
    // field or line: another mount, a save nobody asked for.
    for path in ["/a\t0\t0\nsave\t/out/x.pack\nmount\tmem\t/b", "/x\ty", "/a\rb", "/a\u{7f}"] {
        let config = Config { mounts: vec![mount(path, false)], save: None };
        assert_eq!(config.encode(&[]).err(), Some(Error::Invalid), "{path:?}");
    }
    let config = Config { mounts: vec![mount("/", false)], save: Some("/out/x\r".into()) };
    assert_eq!(config.encode(&[]).err(), Some(Error::Invalid));
    for host in ["/packs/a\tb", "/packs/a\nsave\t/x", ""] {
        let pack = Source::Pack { at: PackAt::Host(host.into()), digest: digest(), overlay: None };
        let config = Config { mounts: vec![Mount { path: "/".into(), source: pack, preopen: false }], save: None };
        assert_eq!(config.encode(&[]).err(), Some(Error::Invalid), "{host:?}");
        let dir = Source::HostDir { host_path: host.into(), read_only: false };
        let config = Config { mounts: vec![Mount { path: "/d".into(), source: dir, preopen: true }], save: None };
        assert_eq!(config.encode(&[]).err(), Some(Error::Invalid), "{host:?}");
    }
}
