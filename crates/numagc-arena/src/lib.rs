//! numagc-arena: the SAC private heap manager of Grelck & Scholz,
//! *Efficient Heap Management for Declarative Data Parallel Programming on
//! Multicores* (`../shared/papers/sac-private-heap-manager.txt`), as a Rust
//! allocator for reference-counted arrays and as a general-purpose one.
//!
//! The hierarchy of paper §3 (Fig. 3) and where each level lives:
//! * the **global heap** ([`global_heap`]): the address
//!   space, taken from and given back to the system; the only lock;
//! * per-thread **local heaps** of a fixed size (4 MiB, [`REGION_SIZE`]),
//!   carved from it, a new one when a thread's are exhausted
//!   (`thread_heap.rs`, `region.rs`);
//! * **local subheaps** of fixed-size chunks for small requests
//!   (`subheap.rs`), and **variable-size chunks** with splitting
//!   (`local_heap.rs`) and **deferred coalescing** (`coalesce.rs`);
//! * **very large chunks** straight from the global heap (`large.rs`);
//! * the **matrix of allocation arenas** of Fig. 4 (`arena.rs`,
//!   `size_class.rs`).
//!
//! Beyond the paper: frees from other threads (`remote_free.rs`), NUMA
//! placement of local heaps (`placement.rs`), the allocator's own memory
//! (`bootstrap.rs`), and checks that report misuse (`misuse.rs`).
//!
//! The interfaces: the plain one ([`alloc`], [`free`], [`realloc`], ...),
//! the rich one of §3 ([`rich`]: arenas chosen at compile time, a thread's
//! arena held in registers across a loop with the SAC runtime's same-thread
//! free, descriptor and data in one chunk, [`owns`]), reference-counted
//! arrays ([`RcArray`]), and [`ArenaAlloc`], a `GlobalAlloc`.
//!
//! The fast paths, and what each costs (callgrind, Fig. 1 at X = 25, per
//! allocation and free): `malloc`/`free` of `libnumagc_malloc.so` about 116
//! instructions (the thread found by its thread pointer, the arena's own
//! free list, every free checked); the rich interface's [`rich::Arena`]
//! about 19, and its loop within 2 % of the same loop without allocation
//! on one thread (`docs/results/arena.md`).

mod arena;
mod bootstrap;
mod coalesce;
mod global_alloc;
pub mod global_heap;
mod large;
mod local_heap;
mod misuse;
mod os;
pub mod placement;
mod rc_array;
mod region;
mod region_map;
mod remote_free;
pub mod rich;
pub mod size_class;
mod subheap;
mod sync;
mod thread_heap;
mod thread_id;

#[cfg(all(test, loom))]
mod loom_models;

pub use arena::LocalStats;
pub use global_alloc::ArenaAlloc;
pub use misuse::{AllocError, Misuse};
pub use rc_array::{RcArray, MAX_RANK};
pub use region::REGION_SIZE;
pub use size_class::ArenaChoice;

/// Allocates `size` bytes aligned to `align` (a power of two, at most
/// [`size_class::MAX_ALIGN`]: huge-page (2 MiB) and 1 GiB alignments are
/// served, by a mapping of their own); null when the request is impossible
/// or the system refuses memory ([`try_alloc`] says which).
#[inline]
pub fn alloc(size: usize, align: usize) -> *mut u8 {
    thread_heap::alloc(size, align)
}

/// Like [`alloc`], with the reason for a refusal.
pub fn try_alloc(size: usize, align: usize) -> Result<core::ptr::NonNull<u8>, AllocError> {
    if let ArenaChoice::Refused(reason) = size_class::choose(size, align) {
        return Err(AllocError::Invalid {
            size,
            align,
            reason,
        });
    }
    core::ptr::NonNull::new(alloc(size, align)).ok_or(AllocError::OutOfMemory { size })
}

/// Allocates `size` zeroed bytes aligned to `align`.
pub fn alloc_zeroed(size: usize, align: usize) -> *mut u8 {
    let p = alloc(size, align);
    if p.is_null() {
        return p;
    }
    if size_class::choose(size, align) == ArenaChoice::Large {
        // A new mapping is zero already (writing it would only make every
        // page resident); a cached one that was reused is not.
        // SAFETY: `p` is this thread's new chunk of at least `size` bytes.
        unsafe { large::zero(p, size) };
    } else {
        // SAFETY: `p` is a fresh chunk of at least `size` bytes.
        unsafe { p.write_bytes(0, size) };
    }
    p
}

/// Frees `ptr` (null is ignored), or returns the misuse: a foreign pointer,
/// a pointer inside a chunk, or a chunk already free. Every free is checked.
///
/// # Safety
/// If `ptr` is a live chunk, nobody uses it after this call.
#[inline(always)]
pub unsafe fn try_free(ptr: *mut u8) -> Result<(), Misuse> {
    // SAFETY: passed on from the caller.
    unsafe { thread_heap::free(ptr) }
}

/// Frees `ptr` (null is ignored).
///
/// # Panics
/// With the [`Misuse`]'s message when `ptr` is foreign, not a chunk start,
/// or already free.
///
/// # Safety
/// If `ptr` is a live chunk, nobody uses it after this call.
pub unsafe fn free(ptr: *mut u8) {
    // SAFETY: passed on from the caller.
    if let Err(m) = unsafe { thread_heap::free(ptr) } {
        panic!("{m}");
    }
}

/// Resizes the chunk at `ptr` to `new_size` bytes aligned to `align`, keeping
/// its contents up to the smaller size; null (with `ptr` untouched) when the
/// new chunk cannot be had. A null `ptr` allocates.
///
/// # Safety
/// `ptr` is null or a live chunk of this heap manager, not used after the
/// call unless the call returned null.
pub unsafe fn realloc(ptr: *mut u8, new_size: usize, align: usize) -> Result<*mut u8, Misuse> {
    if ptr.is_null() {
        return Ok(alloc(new_size, align));
    }
    let Some(old) = thread_heap::usable_size(ptr) else {
        return Err(match thread_heap::kind_of(ptr as usize) {
            None => Misuse::Foreign { addr: ptr as usize },
            Some(_) => Misuse::NotAChunk { addr: ptr as usize },
        });
    };
    // Keep the chunk when the new size fits and does not waste most of it,
    // or when it can grow where it is.
    if new_size <= old && new_size >= old / 2 && (ptr as usize).is_multiple_of(align) {
        return Ok(ptr);
    }
    // SAFETY: `ptr` is a live chunk of ours (usable_size found it).
    if new_size > old && unsafe { thread_heap::grow_in_place(ptr, new_size, align) } {
        return Ok(ptr);
    }
    let new = alloc(new_size, align);
    if new.is_null() {
        return Ok(new);
    }
    // SAFETY: both chunks are live, distinct, and at least that long.
    unsafe {
        core::ptr::copy_nonoverlapping(ptr, new, old.min(new_size));
        thread_heap::free(ptr)?;
    }
    Ok(new)
}

/// Usable bytes of the chunk starting at `ptr` (at least what was asked),
/// `None` when `ptr` is not the start of a live chunk of this heap manager.
pub fn usable_size(ptr: *const u8) -> Option<usize> {
    thread_heap::usable_size(ptr)
}

/// Whether `ptr` lies in memory this heap manager handed out (a local heap,
/// the first 4 MiB of a large chunk (of its data, for an alignment of 4 MiB
/// or more), or its bootstrap area); paper §3: the
/// private heap manager makes this decidable.
pub fn owns(ptr: *const u8) -> bool {
    thread_heap::owns(ptr)
}

/// The calling thread's heap counters and its subheap count and live small
/// chunks (`None` before its first allocation).
pub fn thread_stats() -> Option<(LocalStats, usize, usize)> {
    thread_heap::stats()
}

/// Gives back what the calling thread's heap holds without use: the free
/// chunks kept on its arenas' lists go back to their subheaps (empty
/// subheaps and local heaps are released), and the chunks other threads
/// freed into it are taken back. (`malloc_trim` of numagc-malloc.)
pub fn trim() {
    thread_heap::trim()
}

/// Frees now the chunks that other threads freed into this thread's heap
/// (otherwise done when one of its arenas runs short).
pub fn collect_remote_frees() {
    thread_heap::collect_remote_frees()
}

/// How many thread heaps have been made: a thread that exits abandons its
/// heap and the next new thread takes it, so this stays near the largest
/// number of threads alive at once.
pub fn thread_heaps_created() -> usize {
    thread_heap::heaps_created()
}
