//! Where the image `packfs virt` embedded lies in this component's memory.
//!
//! `packfs virt` appends the image to the module's memory as a data
//! segment at the end of its initial pages (raising them to hold it), so
//! it lies above the stack and static data and below everything the
//! allocator takes (which grows memory from its initial size). It writes
//! the image's address and length into [`IMAGE_AT`], after the marker the
//! build leaves there, which it finds in the module's data.

/// The marker (`PFSVIMAT`), then the image's address and length: zero
/// until `packfs virt` fills them in.
#[used]
static IMAGE_AT: [u32; 4] = [u32::from_le_bytes(*b"PFSV"), u32::from_le_bytes(*b"IMAT"), 0, 0];

/// The image's bytes: empty if there is none (an adapter not yet made
/// into a component by `packfs virt`), or if its place is not wholly
/// within memory.
pub(crate) fn image() -> &'static [u8] {
    // SAFETY: a volatile read of a static's words, so that the compiler
    // reads what `packfs virt` wrote there rather than the zeros it built.
    let (base, len) = unsafe {
        let at = IMAGE_AT.as_ptr();
        (std::ptr::read_volatile(at.add(2)) as usize, std::ptr::read_volatile(at.add(3)) as usize)
    };
    let memory = core::arch::wasm32::memory_size(0) as u64 * 65536;
    match base.checked_add(len) {
        Some(end) if base != 0 && end as u64 <= memory => {
            // SAFETY: `base..end` lies within linear memory (checked just
            // above), where `packfs virt` put the image in a data segment
            // of its own. Nothing writes there: it is above the stack and
            // static data, and the allocator only takes memory it grows,
            // past the initial pages the image lies in. So the bytes
            // stay as they are for as long as the instance lives.
            unsafe { std::slice::from_raw_parts(base as *const u8, len) }
        }
        _ => &[],
    }
}
