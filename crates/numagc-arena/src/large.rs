//! Very large chunks (rows `M .. N` of Fig. 4): "only very large chunks of
//! memory are directly allocated from the global heap" (paper §3), and the
//! paper gives them back to the system when freed; here they go back to the
//! global heap's cache of large mappings, which gives them to the system
//! beyond its bounds (see `global_heap.rs` for that deviation, its bounds
//! and the figures measured on NAS FT: the page faults of class W fell from
//! 72,961 to 9,442, the no-allocation bound's 9,338).
//!
//! Each is its own mapping, aligned to [`REGION_SIZE`](crate::REGION_SIZE), with a region header
//! in its first bytes and the data at `data_offset` (at least 64 bytes in, and
//! a multiple of the requested alignment, which is at most 1 MiB, so the data
//! starts in the first region). Requests of the local heaps' size classes
//! with alignments the local heaps do not give (above 16 bytes for medium
//! sizes) are served here too. A mapping taken from the cache may be up to
//! 1/8 longer than the request needs; the chunk's usable size is then that
//! much larger.
//!
//! Zeroing: a new mapping is zero, a reused one holds its last holder's
//! data; the header says which, so that [`zero`] (for `alloc_zeroed` and
//! `calloc`) writes only reused memory: writing a fresh mapping would only
//! make its pages resident. A reused mapping is cleared with a plain
//! memset rather than `MADV_DONTNEED`: its pages are resident, and writing
//! them runs at memory bandwidth, cheaper than taking a fault per page (and
//! the kernel's zeroing of each) again. Only the `size` bytes asked for are
//! written, not the slack of a longer mapping.
//!
//! Invariant: the region map has the mapping's first region registered
//! exactly while the chunk is live; any thread may free it (the global
//! heap's lock orders the cache; the header is written by the allocating
//! thread before the chunk is handed out, and read by the freeing one,
//! which got the chunk from it).

use crate::global_heap;
use crate::misuse::Misuse;
use crate::os;
use crate::region::{RegionHeader, RegionKind, REGION_MAGIC};
use crate::region_map;

#[repr(C)]
struct LargeHeader {
    hdr: RegionHeader,
    data_offset: usize,
    /// The pages were bound to `hdr.node` (placement on).
    bind: bool,
    /// The mapping came from the cache: its data is not zero.
    reused: bool,
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
    let Some(m) = global_heap::map_large(len, node, bind) else {
        return core::ptr::null_mut();
    };
    let (base, len) = (m.base, m.len);
    // SAFETY: `base` is a mapping of `len` bytes, larger than the header,
    // that nobody else refers to (new, or taken out of the cache).
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
            bind,
            reused: m.reused,
        });
    }
    if !region_map::insert(base as usize) {
        // SAFETY: never handed out or registered; the magic is cleared first.
        unsafe {
            (*base.cast::<LargeHeader>()).hdr.magic = 0;
            global_heap::free_large(base, len, node, bind);
        }
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
    let (offset, len, node, bind) =
        unsafe { ((*h).data_offset, (*h).hdr.map_len, (*h).hdr.node, (*h).bind) };
    if ptr as usize != base + offset {
        return Err(Misuse::NotAChunk { addr: ptr as usize });
    }
    // Out of the region map and without its magic before it is cached, so
    // that a later free or `owns` of a pointer into it is refused.
    region_map::remove(base);
    // SAFETY: the chunk is being freed by its holder; nobody else refers to it.
    unsafe {
        (*h).hdr.magic = 0;
        global_heap::free_large(base as *mut u8, len, node, bind);
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

/// Zeroes the first `size` bytes of the chunk at `ptr`, just allocated by
/// this thread for a request of the large arena: nothing to do for a new
/// mapping, a memset for a reused one, and for a chunk that is not a large
/// one (the bootstrap area serves large requests too while a thread sets
/// itself up) a memset as well.
///
/// # Safety
/// `ptr` is a live chunk of at least `size` bytes that the calling thread
/// has just allocated and not yet handed to anyone.
pub(crate) unsafe fn zero(ptr: *mut u8, size: usize) {
    let base = crate::region::base_of(ptr as usize);
    let fresh = region_map::contains(base) && {
        let h = base as *const LargeHeader;
        // SAFETY: a registered region is mapped and starts with its region
        // header; the rest of the large header is read only when the kind
        // says it is one, and it is this thread's own new chunk.
        unsafe {
            (*h).hdr.magic == REGION_MAGIC
                && (*h).hdr.kind == RegionKind::Large
                && base + (*h).data_offset == ptr as usize
                && !(*h).reused
        }
    };
    if !fresh {
        // SAFETY: `ptr` is a live chunk of at least `size` bytes (caller).
        unsafe { ptr.write_bytes(0, size) };
    }
}
