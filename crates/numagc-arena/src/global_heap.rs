//! The global heap (paper §3, Fig. 3): the top of the hierarchy, which
//! "controls the entire address space of the process" and grows and shrinks
//! it. It hands out local heaps (regions of [`REGION_SIZE`], aligned to it)
//! and the memory of very large chunks, and takes both back.
//!
//! "In our allocator design only accesses to the global heap may require
//! synchronisation": this is the one lock of the heap manager, held only
//! for a push or pop of its cache, never on an allocation that a thread's
//! local heaps can serve. `fork` takes it around the fork (see
//! `thread_heap.rs`).
//!
//! Choices: a local heap given back keeps its address range in a small cache
//! (at most [`MAX_CACHED_REGIONS`]) after `madvise(MADV_DONTNEED)` returns its
//! pages to the system, so a thread that frees and re-grows does not pay
//! `mmap` again; beyond that it is unmapped. Large chunks are unmapped on
//! free (the paper returns them to the system). Pages are placed on the
//! requesting thread's NUMA node ([`crate::placement`]) before first touch;
//! a cached region is re-bound when reused, since its pages were discarded.
//!
//! Invariant: a region in the cache has its bit cleared in
//! `region_map` and a zero magic, so no `free` or `owns` accepts a
//! pointer into it.

use core::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::os;
use crate::placement;
use crate::region::{RegionHeader, REGION_SIZE};

/// How many empty local heaps the global heap keeps mapped (pages discarded).
pub const MAX_CACHED_REGIONS: usize = 8;

struct Cache {
    regions: [usize; MAX_CACHED_REGIONS],
    len: usize,
}

/// A spin lock rather than a `Mutex`, so that `fork` can take it in its
/// prepare handler and release it in both processes (see [`fork_prepare`]).
struct CacheLock {
    held: AtomicBool,
    cache: UnsafeCell<Cache>,
}

// SAFETY: `cache` is touched only while `held` is owned (see `lock`).
unsafe impl Sync for CacheLock {}

static CACHE: CacheLock = CacheLock {
    held: AtomicBool::new(false),
    cache: UnsafeCell::new(Cache {
        regions: [0; MAX_CACHED_REGIONS],
        len: 0,
    }),
};

struct CacheGuard;

impl core::ops::Deref for CacheGuard {
    type Target = Cache;
    fn deref(&self) -> &Cache {
        // SAFETY: the guard owns the lock.
        unsafe { &*CACHE.cache.get() }
    }
}

impl core::ops::DerefMut for CacheGuard {
    fn deref_mut(&mut self) -> &mut Cache {
        // SAFETY: the guard owns the lock.
        unsafe { &mut *CACHE.cache.get() }
    }
}

impl Drop for CacheGuard {
    fn drop(&mut self) {
        CACHE.held.store(false, Ordering::Release);
    }
}

fn acquire() {
    let mut spins = 0u32;
    while CACHE
        .held
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        spins += 1;
        if spins < 64 {
            core::hint::spin_loop();
        } else {
            // The holder may be in a system call (mmap, munmap).
            std::thread::yield_now();
        }
    }
}

fn lock() -> CacheGuard {
    acquire();
    CacheGuard
}

/// `fork` prepare handler: holds the lock across the fork, so that the
/// child does not inherit it held by a thread that does not exist there.
pub(crate) fn fork_prepare() {
    acquire();
}

/// `fork` parent and child handler: releases what [`fork_prepare`] took.
pub(crate) fn fork_release() {
    CACHE.held.store(false, Ordering::Release);
}

static MAPPED_BYTES: AtomicUsize = AtomicUsize::new(0);
static REGIONS_MAPPED: AtomicUsize = AtomicUsize::new(0);
static REGIONS_REUSED: AtomicUsize = AtomicUsize::new(0);
static REGIONS_RELEASED: AtomicUsize = AtomicUsize::new(0);
static LARGE_MAPPED: AtomicUsize = AtomicUsize::new(0);
static LARGE_UNMAPPED: AtomicUsize = AtomicUsize::new(0);

/// Counters of the global heap since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GlobalHeapStats {
    /// Bytes currently mapped from the system (local heaps, cached or not, and
    /// large chunks).
    pub mapped_bytes: usize,
    /// Local heaps mapped fresh from the system.
    pub regions_mapped: usize,
    /// Local heaps handed out again from the cache.
    pub regions_reused: usize,
    /// Local heaps given back by their threads.
    pub regions_released: usize,
    /// Large chunks mapped and unmapped.
    pub large_mapped: usize,
    pub large_unmapped: usize,
}

pub fn stats() -> GlobalHeapStats {
    GlobalHeapStats {
        mapped_bytes: MAPPED_BYTES.load(Ordering::Relaxed),
        regions_mapped: REGIONS_MAPPED.load(Ordering::Relaxed),
        regions_reused: REGIONS_REUSED.load(Ordering::Relaxed),
        regions_released: REGIONS_RELEASED.load(Ordering::Relaxed),
        large_mapped: LARGE_MAPPED.load(Ordering::Relaxed),
        large_unmapped: LARGE_UNMAPPED.load(Ordering::Relaxed),
    }
}

/// A local heap: [`REGION_SIZE`] bytes aligned to [`REGION_SIZE`], zeroed,
/// bound to `node` (when `bind`). The caller writes its header and registers it.
pub(crate) fn acquire_region(node: u32, bind: bool) -> Option<*mut u8> {
    let cached = {
        let mut c = lock();
        if c.len > 0 {
            c.len -= 1;
            Some(c.regions[c.len])
        } else {
            None
        }
    };
    let base = match cached {
        Some(b) => {
            REGIONS_REUSED.fetch_add(1, Ordering::Relaxed);
            b as *mut u8
        }
        None => {
            let b = os::map_aligned(REGION_SIZE, REGION_SIZE)?;
            MAPPED_BYTES.fetch_add(REGION_SIZE, Ordering::Relaxed);
            REGIONS_MAPPED.fetch_add(1, Ordering::Relaxed);
            b
        }
    };
    if bind {
        placement::bind(base, REGION_SIZE, node);
    }
    Some(base)
}

/// Takes back an empty local heap.
///
/// # Safety
/// `base` is a region from [`acquire_region`] with no live chunk, already
/// removed from `region_map`, that nobody will touch again.
pub(crate) unsafe fn release_region(base: *mut u8) {
    REGIONS_RELEASED.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the caller guarantees the region is ours and dead.
    unsafe {
        (*base.cast::<RegionHeader>()).magic = 0;
        os::discard(base, REGION_SIZE);
    }
    let mut c = lock();
    if c.len < MAX_CACHED_REGIONS {
        let i = c.len;
        c.regions[i] = base as usize;
        c.len += 1;
    } else {
        drop(c);
        MAPPED_BYTES.fetch_sub(REGION_SIZE, Ordering::Relaxed);
        // SAFETY: as above; the region is not in the cache.
        unsafe { os::unmap(base, REGION_SIZE) };
    }
}

/// Maps `len` bytes (a multiple of the page size) for a very large chunk,
/// aligned to [`REGION_SIZE`] and bound to `node`.
pub(crate) fn map_large(len: usize, node: u32, bind: bool) -> Option<*mut u8> {
    let base = os::map_aligned(len, REGION_SIZE)?;
    MAPPED_BYTES.fetch_add(len, Ordering::Relaxed);
    LARGE_MAPPED.fetch_add(1, Ordering::Relaxed);
    if bind {
        placement::bind(base, len, node);
    }
    Some(base)
}

/// Returns a very large chunk's memory to the system.
///
/// # Safety
/// `[base, base+len)` is a mapping from [`map_large`] that nobody refers to.
pub(crate) unsafe fn unmap_large(base: *mut u8, len: usize) {
    MAPPED_BYTES.fetch_sub(len, Ordering::Relaxed);
    LARGE_UNMAPPED.fetch_add(1, Ordering::Relaxed);
    // SAFETY: guaranteed by the caller.
    unsafe { os::unmap(base, len) };
}
