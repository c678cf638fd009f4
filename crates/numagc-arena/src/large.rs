//! Very large chunks (rows `M .. N` of Fig. 4): "only very large chunks of
//! memory are directly allocated from the global heap" (paper §3), and they
//! go back to the system when freed.
//!
//! Each is its own mapping, aligned to [`REGION_SIZE`](crate::REGION_SIZE), with a region header
//! in its first bytes and the data at `data_offset` (at least 64 bytes in, and
//! a multiple of the requested alignment, which is at most 1 MiB, so the data
//! starts in the first region). Requests of the local heaps' size classes
//! with alignments the local heaps do not give (above 16 bytes for medium
//! sizes) are served here too.
//!
//! Invariant: the region map has the mapping's first region registered
//! exactly while the chunk is live; any thread may free it (the only
//! synchronisation is inside `munmap`).

use crate::global_heap;
use crate::misuse::Misuse;
use crate::os;
use crate::region::{RegionHeader, RegionKind, REGION_MAGIC};
use crate::region_map;

#[repr(C)]
struct LargeHeader {
    hdr: RegionHeader,
    data_offset: usize,
}

/// A large chunk of `size` bytes aligned to `align` (a power of two at most
/// 1 MiB), bound to `node`; null when the system refuses.
pub(crate) fn alloc(size: usize, align: usize, node: u32, bind: bool) -> *mut u8 {
    let page = os::page_size();
    let offset = core::mem::size_of::<LargeHeader>().next_multiple_of(align.max(16));
    let Some(len) = size
        .checked_add(offset)
        .and_then(|l| l.checked_next_multiple_of(page))
    else {
        return core::ptr::null_mut();
    };
    let Some(base) = global_heap::map_large(len, node, bind) else {
        return core::ptr::null_mut();
    };
    // SAFETY: `base` is a fresh mapping of `len` bytes, larger than the header.
    unsafe {
        base.cast::<LargeHeader>().write(LargeHeader {
            hdr: RegionHeader {
                magic: REGION_MAGIC,
                kind: RegionKind::Large,
                node,
                owner: core::ptr::null(),
                map_len: len,
                next: core::ptr::null_mut(),
            },
            data_offset: offset,
        });
    }
    if !region_map::insert(base as usize) {
        // SAFETY: never handed out.
        unsafe { global_heap::unmap_large(base, len) };
        return core::ptr::null_mut();
    }
    // SAFETY: offset < len.
    unsafe { base.add(offset) }
}

/// Frees the large chunk at `ptr`, whose region starts at `base`.
///
/// # Safety
/// `base` is a live large chunk's region (registered, magic checked).
pub(crate) unsafe fn free(base: usize, ptr: *mut u8) -> Result<(), Misuse> {
    let h = base as *mut LargeHeader;
    // SAFETY: the header of a live large chunk.
    let (offset, len) = unsafe { ((*h).data_offset, (*h).hdr.map_len) };
    if ptr as usize != base + offset {
        return Err(Misuse::NotAChunk { addr: ptr as usize });
    }
    region_map::remove(base);
    // SAFETY: the chunk is being freed by its holder; nobody else refers to it.
    unsafe {
        (*h).hdr.magic = 0;
        global_heap::unmap_large(base as *mut u8, len);
    }
    Ok(())
}

/// Usable bytes and data start of the large chunk at `base`.
///
/// # Safety
/// `base` is a live large chunk's region.
pub(crate) unsafe fn extent(base: usize) -> (usize, usize) {
    let h = base as *const LargeHeader;
    // SAFETY: the header of a live large chunk.
    let (offset, len) = unsafe { ((*h).data_offset, (*h).hdr.map_len) };
    (base + offset, len - offset)
}
