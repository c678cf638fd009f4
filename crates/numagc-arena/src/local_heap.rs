//! Local heaps of variable-size chunks: medium requests (rows `K .. M` of
//! Fig. 4), split from larger free chunks or from the unused top of the
//! thread's current local heap (paper §3: "a more expensive variable chunk
//! size scheme above a certain threshold size. This scheme keeps track of
//! chunk sizes and ... splits larger parts of contiguous memory into pieces
//! to accommodate allocation requests and coalesces adjacent free chunks").
//!
//! Layout: a region of [`REGION_SIZE`] whose first page is its header; chunks
//! follow from [`DATA_OFFSET`] up to `top`, the rest is untouched
//! ("wilderness"). A chunk has a 16-byte header: its size with an in-use bit,
//! and a check word (`CHUNK_MAGIC ^ address`) that lets `free` tell a chunk
//! start from anything else. A free chunk holds its bin links after the
//! header. Free chunks sit in the thread's bins, four per doubling of size
//! ([`crate::size_class::medium_bin`]); a freed chunk goes to the front of
//! its bin, so a request of the size just freed finds it first (the paper's
//! "locality of time" assumption).
//!
//! Free does not coalesce: coalescing is deferred to [`crate::coalesce`],
//! which runs only when a request cannot be met otherwise (paper §3).
//! `realloc` grows a chunk where it is ([`grow_in_place`]) when the chunk
//! after it is free or it is the last before the top.
//!
//! Invariant: chunks tile `[DATA_OFFSET, top)` of each region exactly; a
//! chunk is in exactly one bin iff its in-use bit is clear; `live` counts the
//! in-use chunks of the region. Only the owner thread touches them.

use crate::arena::LocalState;
use crate::global_heap;
use crate::misuse::Misuse;
use crate::region::{base_of, RegionHeader, RegionKind, REGION_MAGIC, REGION_SIZE};
use crate::region_map;
use crate::size_class::{medium_bin, MEDIUM_BINS, MEDIUM_HEADER};

/// Where the first chunk of a variable-size local heap starts.
pub(crate) const DATA_OFFSET: usize = 4096;
const CHUNK_MAGIC: usize = 0x7a71_ab1e_c4a2_0000;
const IN_USE: usize = 1;
/// A free chunk holds a header and two links.
const MIN_CHUNK: usize = 32;
/// A split leaves a remainder only when it is at least this large.
const MIN_SPLIT: usize = 64;

#[repr(C)]
pub(crate) struct VariableRegion {
    pub(crate) hdr: RegionHeader,
    pub(crate) top: usize,
    pub(crate) end: usize,
    pub(crate) live: usize,
}

/// The thread's arenas of rows `K .. M`: one bin (free list) per size range.
pub(crate) struct VariableArenas {
    bins: [usize; MEDIUM_BINS],
    nonempty: u64,
    pub(crate) regions: *mut VariableRegion,
    pub(crate) current: *mut VariableRegion,
    /// Chunks freed since the last coalescing sweep: a sweep with none can
    /// merge nothing new (the last one merged every free neighbour).
    pub(crate) freed_since_sweep: usize,
}

const _: () = assert!(MEDIUM_BINS <= 64);
const _: () = assert!(core::mem::size_of::<VariableRegion>() <= DATA_OFFSET);

impl VariableArenas {
    pub(crate) const fn new() -> Self {
        VariableArenas {
            bins: [0; MEDIUM_BINS],
            nonempty: 0,
            regions: core::ptr::null_mut(),
            current: core::ptr::null_mut(),
            freed_since_sweep: 0,
        }
    }
}

// Raw chunk words. Callers pass the address of a chunk
// of a live variable-size region of this thread (16-aligned, inside
// `[DATA_OFFSET, top)`), whose header and, for free chunks, links are ours.
#[inline]
pub(crate) unsafe fn size_word(c: usize) -> usize {
    // SAFETY: `c` is a chunk of a live region of this thread (see above).
    unsafe { *(c as *const usize) }
}
#[inline]
unsafe fn set_header(c: usize, size: usize, in_use: bool) {
    // SAFETY: `c` is a chunk of a live region of this thread (see above).
    unsafe {
        *(c as *mut usize) = size | in_use as usize;
        *((c + 8) as *mut usize) = CHUNK_MAGIC ^ c;
    }
}
#[inline]
unsafe fn link(c: usize) -> *mut [usize; 2] {
    (c + 16) as *mut [usize; 2]
}

#[inline]
pub(crate) fn chunk_size(word: usize) -> usize {
    word & !15
}
#[inline]
pub(crate) fn in_use(word: usize) -> bool {
    word & IN_USE != 0
}

/// Puts free chunk `c` at the front of its bin.
///
/// # Safety
/// `c` is a chunk of this thread's variable regions, not in any bin.
pub(crate) unsafe fn insert(v: &mut VariableArenas, c: usize, size: usize) {
    let b = medium_bin(size);
    let head = v.bins[b];
    // SAFETY: `c` and `head` are free chunks of this thread (caller; bins).
    unsafe {
        set_header(c, size, false);
        *link(c) = [head, 0];
        if head != 0 {
            (*link(head))[1] = c;
        }
    }
    v.bins[b] = c;
    v.nonempty |= 1 << b;
}

/// Takes free chunk `c` out of its bin.
///
/// # Safety
/// `c` is a free chunk in one of `v`'s bins.
pub(crate) unsafe fn unlink(v: &mut VariableArenas, c: usize) {
    // SAFETY: `c` is a free chunk in a bin; its neighbours are too.
    unsafe {
        let [next, prev] = *link(c);
        if prev != 0 {
            (*link(prev))[0] = next;
        } else {
            let b = medium_bin(chunk_size(size_word(c)));
            v.bins[b] = next;
            if next == 0 {
                v.nonempty &= !(1 << b);
            }
        }
        if next != 0 {
            (*link(next))[1] = prev;
        }
    }
}

/// Marks chunk `c` of `size` in use and returns its data pointer.
fn hand_out(c: usize, size: usize) -> *mut u8 {
    // SAFETY: `c` is a chunk of a live region of this thread, just taken
    // from a bin or carved from the top.
    unsafe {
        set_header(c, size, true);
        (*(base_of(c) as *mut VariableRegion)).live += 1;
    }
    (c + MEDIUM_HEADER) as *mut u8
}

/// A chunk of `need` bytes from the bins (first fit in the request's bin,
/// else the front of the next non-empty bin), split if much larger.
pub(crate) fn alloc_from_bins(v: &mut VariableArenas, need: usize) -> *mut u8 {
    let b = medium_bin(need);
    let mut found = 0;
    if v.nonempty & (1 << b) != 0 {
        let mut c = v.bins[b];
        while c != 0 {
            // SAFETY: chunks in bins are free chunks of this thread.
            if chunk_size(unsafe { size_word(c) }) >= need {
                found = c;
                break;
            }
            // SAFETY: as above.
            c = unsafe { (*link(c))[0] };
        }
    }
    if found == 0 {
        let above = v.nonempty & !((2u64 << b) - 1);
        if above == 0 {
            return core::ptr::null_mut();
        }
        // Every chunk of a higher bin is larger than `need`.
        found = v.bins[above.trailing_zeros() as usize];
    }
    // SAFETY: `found` is a free chunk in a bin.
    let size = unsafe {
        let size = chunk_size(size_word(found));
        unlink(v, found);
        size
    };
    if size - need >= MIN_SPLIT {
        // SAFETY: the remainder lies inside the chunk just taken.
        unsafe { insert(v, found + need, size - need) };
        hand_out(found, need)
    } else {
        hand_out(found, size)
    }
}

/// A chunk of `need` bytes from the top of the current local heap.
pub(crate) fn alloc_from_top(v: &mut VariableArenas, need: usize) -> *mut u8 {
    if v.current.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: `current` is a live region of this thread.
    let r = unsafe { &mut *v.current };
    if r.end - r.top < need {
        return core::ptr::null_mut();
    }
    let c = r.top;
    r.top += need;
    hand_out(c, need)
}

/// Takes a new local heap from the global heap and makes it current; the old
/// current heap's top becomes a free chunk. `false` when refused.
pub(crate) fn grow(st: &mut LocalState) -> bool {
    let Some(base) = global_heap::acquire_region(st.node, st.bind) else {
        return false;
    };
    let r = base.cast::<VariableRegion>();
    // SAFETY: a fresh region of REGION_SIZE bytes given to this thread.
    unsafe {
        r.write(VariableRegion {
            hdr: RegionHeader {
                magic: REGION_MAGIC,
                kind: RegionKind::Variable,
                node: st.node,
                owner: st.owner,
                map_len: REGION_SIZE,
                next: st.variable.regions.cast(),
            },
            top: base as usize + DATA_OFFSET,
            end: base as usize + REGION_SIZE,
            live: 0,
        });
    }
    if !region_map::insert(base as usize) {
        // SAFETY: never handed out.
        unsafe { global_heap::release_region(base) };
        return false;
    }
    retire_top(&mut st.variable);
    st.variable.regions = r;
    st.variable.current = r;
    true
}

/// Turns the current region's unused top into a free chunk.
pub(crate) fn retire_top(v: &mut VariableArenas) {
    if v.current.is_null() {
        return;
    }
    // SAFETY: `current` is a live region of this thread.
    let r = unsafe { &mut *v.current };
    let rest = r.end - r.top;
    if rest >= MIN_CHUNK {
        let c = r.top;
        r.top = r.end;
        // SAFETY: [c, end) is unused memory of the region.
        unsafe { insert(v, c, rest) };
    }
}

/// The chunk whose data starts at `ptr`, checked.
///
/// # Safety
/// `ptr` lies in a live variable-size region.
pub(crate) unsafe fn chunk_of(ptr: usize) -> Result<usize, Misuse> {
    let base = base_of(ptr);
    if !ptr.is_multiple_of(16) || ptr < base + DATA_OFFSET + MEDIUM_HEADER {
        return Err(Misuse::NotAChunk { addr: ptr });
    }
    let c = ptr - MEDIUM_HEADER;
    // SAFETY: c lies in the region's mapped data area (checked above).
    let magic = unsafe { *((c + 8) as *const usize) };
    if magic != CHUNK_MAGIC ^ c {
        return Err(Misuse::NotAChunk { addr: ptr });
    }
    Ok(c)
}

/// Frees a variable-size chunk (owner thread only). No coalescing here.
///
/// # Safety
/// `ptr` lies in a live variable-size region owned by the calling thread's
/// heap, whose state is `st`.
pub(crate) unsafe fn free(st: &mut LocalState, ptr: *mut u8) -> Result<(), Misuse> {
    let addr = ptr as usize;
    // SAFETY: guaranteed by the caller.
    let c = unsafe { chunk_of(addr)? };
    // SAFETY: `c` is a chunk start (its check word matched).
    let word = unsafe { size_word(c) };
    if !in_use(word) {
        return Err(Misuse::DoubleFree { addr });
    }
    // SAFETY: `c` is an in-use chunk of this thread; it goes to its bin.
    unsafe {
        (*(base_of(c) as *mut VariableRegion)).live -= 1;
        insert(&mut st.variable, c, chunk_size(word));
    }
    st.variable.freed_since_sweep += 1;
    Ok(())
}

/// Usable bytes of the live chunk at `ptr`.
///
/// # Safety
/// `ptr` lies in a live variable-size region.
pub(crate) unsafe fn usable_size(ptr: usize) -> Option<usize> {
    // SAFETY: guaranteed by the caller.
    let c = unsafe { chunk_of(ptr).ok()? };
    // SAFETY: `c` is a chunk start.
    Some(chunk_size(unsafe { size_word(c) }) - MEDIUM_HEADER)
}

/// Grows the live chunk at `ptr` to `need` bytes where it lies, from a free
/// chunk right after it or from the top of its local heap (owner thread
/// only); `false` when neither has room. Used by `realloc`.
///
/// # Safety
/// `ptr` is a live chunk of a variable-size region owned by the calling
/// thread's heap, whose state is `v`.
pub(crate) unsafe fn grow_in_place(v: &mut VariableArenas, ptr: usize, need: usize) -> bool {
    // SAFETY: guaranteed by the caller.
    let Ok(c) = (unsafe { chunk_of(ptr) }) else {
        return false;
    };
    // SAFETY: `c` is a live chunk start; its region is live and ours.
    let (size, r) = unsafe {
        (
            chunk_size(size_word(c)),
            &mut *(base_of(c) as *mut VariableRegion),
        )
    };
    if size >= need {
        return true;
    }
    let next = c + size;
    if next == r.top {
        if r.end - c < need {
            return false;
        }
        r.top = c + need;
        // SAFETY: [c, c + need) is the chunk and top space now in it.
        unsafe { set_header(c, need, true) };
        return true;
    }
    // SAFETY: `next` is a chunk start below top (tiling invariant).
    let next_word = unsafe { size_word(next) };
    if in_use(next_word) || size + chunk_size(next_word) < need {
        return false;
    }
    let merged = size + chunk_size(next_word);
    // SAFETY: `next` is a free chunk, in a bin; after the merge its memory
    // belongs to `c`, and a remainder becomes a free chunk of its own.
    unsafe {
        unlink(v, next);
        if merged - need >= MIN_SPLIT {
            insert(v, c + need, merged - need);
            set_header(c, need, true);
        } else {
            set_header(c, merged, true);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::LocalState;

    #[test]
    fn chunks_grow_in_place_into_a_free_neighbour_or_the_top() {
        let mut st = LocalState::new(core::ptr::null());
        assert!(grow(&mut st));
        let a = alloc_from_top(&mut st.variable, 8192) as usize;
        let b = alloc_from_top(&mut st.variable, 65536) as usize;
        let c = alloc_from_top(&mut st.variable, 8192) as usize;
        assert_eq!(b, a + 8192);
        // SAFETY: live chunks of this state's heap.
        unsafe {
            // The neighbour is in use: no room.
            assert!(!grow_in_place(&mut st.variable, a, 16384));
            free(&mut st, b as *mut u8).unwrap();
            // Into the free neighbour, leaving the rest as a free chunk.
            assert!(grow_in_place(&mut st.variable, a, 16384));
            assert_eq!(usable_size(a), Some(16384 - MEDIUM_HEADER));
            // (Data pointers are MEDIUM_HEADER past their chunk.)
            let rest = a - MEDIUM_HEADER + 16384;
            assert_eq!(
                size_word(rest),
                8192 + 65536 - 16384,
                "the remainder is free"
            );
            assert_eq!(
                alloc_from_bins(&mut st.variable, 8192 + 65536 - 16384) as usize,
                rest + MEDIUM_HEADER
            );
            // The last chunk grows into the top.
            assert!(grow_in_place(&mut st.variable, c, 100_000));
            assert_eq!(usable_size(c), Some(100_000 - MEDIUM_HEADER));
            let d = alloc_from_top(&mut st.variable, 4096) as usize;
            assert_eq!(d, c + 100_000, "the top moved past the grown chunk");
            // Not beyond the local heap.
            assert!(!grow_in_place(&mut st.variable, d, REGION_SIZE));
        }
    }
}
