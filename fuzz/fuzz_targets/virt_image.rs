//! Arbitrary bytes as the image `packfs virt` embeds in a component (the
//! bytes a changed component would give the virtual filesystem): decode
//! it, open what it configures (each pack over its bytes, as the component
//! opens them, checked against its pin), and touch every preopen. Each
//! step must fail with an error or succeed, never panic, hang or allocate
//! what the bytes merely claim. A first byte of 1 starts the image with a
//! well-formed header and lines made of the rest (so that mutations reach
//! the lines' fields rather than the magic).
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use packfs_core::pack::{PackFs, ReadOptions};
use packfs_core::virt::{Image, MAGIC, PackAt};
use packfs_core::{Error, FileSystem, system_clock};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let bytes = if mode == 1 {
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&(rest.len() as u32).to_le_bytes());
        b.extend_from_slice(rest);
        b
    } else {
        rest.to_vec()
    };
    let Ok(image) = Image::decode(&bytes) else { return };
    let open_pack = |at: &PackAt, digest: &packfs_core::pack::Digest| -> packfs_core::Result<Arc<dyn FileSystem>> {
        // A host's pack is the host's to give: none here.
        let PackAt::Image { offset, len } = *at else { return Err(Error::Invalid) };
        let pack = PackFs::open_with(image.pack(offset, len)?.to_vec(), ReadOptions::new().verify_on_read(true))?;
        if pack.digest() != Some(*digest) {
            return Err(Error::Invalid);
        }
        Ok(Arc::new(pack))
    };
    let Ok(opened) = image.config.open(&system_clock(), &open_pack) else { return };
    for (_, fs, _) in &opened.preopens {
        let _ = fs.read_dir(fs.root(), None, 64);
    }
});
