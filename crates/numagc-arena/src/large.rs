//! Very large chunks (rows `M .. N` of Fig. 4): "only very large chunks of
//! memory are directly allocated from the global heap" (paper §3), and the
//! paper gives them back to the system when freed; here they go back to the
//! global heap's cache of large mappings, which gives them to the system
//! beyond its bounds (see `global_heap.rs` for that deviation, its bounds
//! and the figures measured on NAS FT: the page faults of class W fell from
//! 72,961 to 9,442, the no-allocation bound's 9,338).
//!
//! Each is its own mapping, aligned to [`REGION_SIZE`], with a region header
//! in its first bytes and the data at `data_offset`:
//! * for an alignment below `REGION_SIZE` (4 MiB), at least 64 bytes in and a
//!   multiple of the alignment (at most 2 MiB in), so the data starts in
//!   the first region, whose bit in the region map finds the header;
//! * for an alignment of `REGION_SIZE` or more (up to
//!   [`MAX_ALIGN`](crate::size_class::MAX_ALIGN)), exactly `REGION_SIZE` in:
//!   the mapping is placed so that its second region starts at a multiple
//!   of the alignment (over-mapped by the alignment, head and tail given
//!   back, see [`os::map_aligned_at`]), and the data starts there. That
//!   region is marked in the region map's second map, which leads `free`,
//!   `usable_size` and `owns` to the header in the region before.
//!
//! The gap between the header's page and the data is address space only:
//! a new mapping's gap is never touched, and a reused one's is discarded
//! (`MADV_DONTNEED`) when the gap is longer than a page, so no memory is
//! held there. Requests of the local heaps' size classes with alignments
//! the local heaps do not give (above 16 bytes for medium sizes) are served
//! here too. A mapping taken from the cache may be up to 1/8 longer than
//! the request needs; the chunk's usable size is then that much larger.
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
//! exactly while the chunk is live, and, when `data_offset` is
//! `REGION_SIZE`, its second region in the aligned-data map (set after the
//! first, cleared before it); any thread may free it (the global
//! heap's lock orders the cache; the header is written by the allocating
//! thread before the chunk is handed out, and read by the freeing one,
//! which got the chunk from it).

use crate::global_heap;
use crate::misuse::Misuse;
use crate::os;
use crate::region::{RegionHeader, RegionKind, REGION_MAGIC, REGION_SIZE};
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

/// A large chunk of `size` bytes aligned to `align` (a power of two, at
/// most `MAX_ALIGN`), bound to `node`; null when the system refuses or the
/// lengths overflow.
pub(crate) fn alloc(size: usize, align: usize, node: u32, bind: bool) -> *mut u8 {
    let page = os::page_size();
    // (offset, alignment of the mapping's start plus `at`, at)
    let (offset, map_align, at) = if align >= REGION_SIZE {
        (REGION_SIZE, align, REGION_SIZE)
    } else {
        let offset = core::mem::size_of::<LargeHeader>().next_multiple_of(align.max(16));
        (offset, REGION_SIZE, 0)
    };
    let Some(len) = size
        .checked_add(offset)
        .and_then(|l| l.checked_next_multiple_of(page))
    else {
        return core::ptr::null_mut();
    };
    let Some(m) = global_heap::map_large(len, map_align, at, node, bind) else {
        return core::ptr::null_mut();
    };
    let (base, len) = (m.base, m.len);
    debug_assert!((base as usize + offset).is_multiple_of(align));
    if m.reused && offset > page {
        // The last holder may have written the gap between the header's
        // page and the data; nobody reads it now. `offset` is a multiple
        // of the page size here (an alignment above one page).
        // SAFETY: [base + page, base + offset) lies in the mapping, which
        // nobody else refers to, and holds no data of this chunk.
        unsafe { os::discard(base.add(page), offset - page) };
    }
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
    let registered = region_map::insert(base as usize);
    if !registered
        || (offset == REGION_SIZE && !region_map::insert_aligned_data(base as usize + offset))
    {
        if registered {
            region_map::remove(base as usize);
        }
        // SAFETY: never handed out, and no longer registered; the magic is
        // cleared first.
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
    if offset == REGION_SIZE {
        region_map::remove_aligned_data(base + offset);
    }
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
    let fresh = region_map::header_of(ptr as usize).is_some_and(|base| {
        let h = base as *const LargeHeader;
        // SAFETY: `header_of` names a registered region (the one `ptr` is
        // in, or the one before for aligned data), which is mapped and
        // starts with its region header; the rest of the large header is
        // read only when the kind says it is one, and it is this thread's
        // own new chunk.
        unsafe {
            (*h).hdr.magic == REGION_MAGIC
                && (*h).hdr.kind == RegionKind::Large
                && base + (*h).data_offset == ptr as usize
                && !(*h).reused
        }
    });
    if !fresh {
        // SAFETY: `ptr` is a live chunk of at least `size` bytes (caller).
        unsafe { ptr.write_bytes(0, size) };
    }
}
