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
//! `mmap` again; beyond that it is unmapped. Pages are placed on the
//! requesting thread's NUMA node ([`crate::placement`]) before first touch;
//! a cached region is re-bound when reused, since its pages were discarded.
//!
//! **Deviation from the paper: freed very large chunks are cached.** The
//! paper (§3) returns a very large chunk to the system when it is freed.
//! Done literally (one `mmap` per request, `munmap` on free), every array
//! above 1 MiB is faulted in page by page each time it is made, and a
//! program in the paper's style (a fresh array per whole-array operation,
//! freed at its last use) makes them all the time. So a freed large
//! mapping keeps its pages resident (no `MADV_DONTNEED`) in a small cache
//! here, under the same lock as the region cache (no other lock, so `fork`
//! still takes just this one), and a request of the same page-rounded
//! length, or up to 1/8 less ([`LARGE_FIT_SLACK`]: similar-size arrays
//! share), on the same node when placement binds (`bind` and `node` of the
//! request equal those the mapping was bound for), and placed as the
//! request's alignment needs (any mapping for alignments up to
//! [`REGION_SIZE`]; for larger ones, one whose second region is so
//! aligned), takes it back without a fault; the smallest that fits, the newest of equal ones. Memory still
//! goes back to the system, by three bounds:
//! * bytes: the cache holds at most what the program held live in large
//!   chunks in the last one to two seconds (two windows of
//!   [`LARGE_CACHE_DECAY_MS`]) beyond what it holds now, plus an eighth of
//!   that peak ([`LARGE_CACHE_PEAK_SLACK`]), so live and cached large
//!   memory together stay within 9/8 of the program's own recent peak; but
//!   always [`LARGE_CACHE_MIN_BYTES`] (64 MiB) and never more than
//!   [`LARGE_CACHE_MAX_BYTES`] (1 GiB). The oldest entries are unmapped
//!   first, and a mapping bigger than the bound is not kept. (A bound of
//!   `max(64 MiB, live / 2)`, tried first, was too little for NAS FT class
//!   A: by its arrays (128 MiB each, the twiddle 64 MiB) the live large
//!   memory swings between 192 and 576 MiB in each iteration, so the arrays
//!   freed at the low point were unmapped and faulted in again: 934,139
//!   faults against the 147,688 below. Without the eighth, NAS MG class A
//!   lost its smaller arrays (2.2 and 16.8 MiB, 76 MiB in all) whenever its
//!   live large memory reached the peak (786 MiB): the bound was the 64 MiB
//!   floor, so they were unmapped and faulted in again in every iteration,
//!   478,366 faults against the no-allocation bound's 319,476; with it,
//!   334,614 (commit `65171af`) and 319,497 (`2a87b23`, bound 319,464), at
//!   a peak RSS of 887 MB, the bound's 887 MB (was 861 MB; tcmalloc
//!   941 MB with 235,197 faults). `arena-workload mg --class A --threads
//!   1` under `/usr/bin/time -f '%R %M'`. The counts depend on the run's
//!   speed a little (the one-second decay and windows), not on the load.)
//! * entries: at most [`MAX_CACHED_LARGE`] (16); the oldest goes first;
//! * time: a mapping cached for longer than [`LARGE_CACHE_DECAY_MS`] (1 s)
//!   is not reused and is unmapped by the next large allocation or free of
//!   any thread. There is no background thread: a program that stops
//!   allocating large chunks keeps what is cached (at most the bound) until
//!   it calls [`release_cached_large`] or allocates a large chunk again.
//!
//! Measured on NAS FT (`arena-workload ft --class C --threads 1`, with
//! `LD_PRELOAD=libnumagc_malloc.so` for numagc, without for glibc, and
//! `--bound` without preload for the no-allocation bound; `/usr/bin/time
//! -f '%R %e %M %U %S'`; medians of 3 runs taken in turn). Minor page
//! faults do not depend on the machine's load; the times do (a shared
//! 2-core machine, load 3 to 4), so CPU times are given too.
//!
//! | class W (8 MiB arrays) | faults | FT s | user s | sys s | max RSS |
//! |------------------------|-------:|-----:|-------:|------:|--------:|
//! | numagc, unmap on free  | 72,961 | 0.73 |   0.38 |  0.10 |  40 MB  |
//! | numagc, large cache    |  9,442 | 0.57 |   0.36 |  0.01 |  40 MB  |
//! | glibc                  | 35,795 | 0.48 |   0.28 |  0.04 |  40 MB  |
//! | bound                  |  9,338 | 0.35 |   0.22 |  0.01 |  40 MB  |
//!
//! | class A (128 MiB arrays) | faults    | FT s  | user s | sys s | max RSS |
//! |--------------------------|----------:|------:|-------:|------:|--------:|
//! | numagc, unmap on free    | 1,163,524 | 13.21 |   7.04 |  1.93 | 593 MB  |
//! | numagc, large cache      |   147,688 |  9.17 |   6.85 |  0.25 | 593 MB  |
//! | glibc                    | 1,163,417 | 10.40 |   5.62 |  1.95 | 593 MB  |
//! | bound                    |   147,581 |  7.47 |   4.55 |  0.26 | 593 MB  |
//!
//! The cache takes numagc's faults and system time to the bound's (glibc's
//! mmap threshold stops at 32 MiB, so on class A it maps every array
//! afresh) without raising the peak RSS. What is left of the gap to the
//! bound is user time, which the large-chunk path (a few dozen calls per
//! run) cannot account for: FT's many small vectors of the recursive FFT
//! go through the small-chunk paths.
//!
//! Invariant: a region or large mapping in the cache has its bit cleared in
//! `region_map` and a zero magic, so no `free` or `owns` accepts a
//! pointer into it.

use core::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::os;
use crate::placement;
use crate::region::{RegionHeader, REGION_SIZE};

/// How many empty local heaps the global heap keeps mapped (pages discarded).
pub const MAX_CACHED_REGIONS: usize = 8;

/// How many freed large mappings the global heap keeps for reuse.
pub const MAX_CACHED_LARGE: usize = 16;
/// The large cache may always hold this many bytes (the module docs say how
/// its bound follows the live large memory).
pub const LARGE_CACHE_MIN_BYTES: usize = 64 << 20;
/// The large cache never holds more than this many bytes.
pub const LARGE_CACHE_MAX_BYTES: usize = 1 << 30;
/// Live and cached large memory together may exceed the recent peak of
/// live large memory by `1 / LARGE_CACHE_PEAK_SLACK` of it.
pub const LARGE_CACHE_PEAK_SLACK: usize = 8;
/// A cached large mapping not taken back within this many milliseconds is
/// unmapped at the next large allocation or free.
pub const LARGE_CACHE_DECAY_MS: u64 = 1000;
/// A request of `len` bytes may take a cached mapping of up to
/// `len + len / LARGE_FIT_SLACK` bytes (1/8 more).
pub const LARGE_FIT_SLACK: usize = 8;

/// A freed large mapping kept with its pages resident.
#[derive(Clone, Copy)]
struct CachedLarge {
    base: usize,
    len: usize,
    node: u32,
    bind: bool,
    /// `now_ms()` when it was cached.
    since: u64,
}

const NO_LARGE: CachedLarge = CachedLarge {
    base: 0,
    len: 0,
    node: 0,
    bind: false,
    since: 0,
};

struct Cache {
    regions: [usize; MAX_CACHED_REGIONS],
    len: usize,
    /// Cached large mappings, oldest first, in `large[..large_len]`.
    large: [CachedLarge; MAX_CACHED_LARGE],
    large_len: usize,
    large_bytes: usize,
    /// Bytes of large chunks handed out and not yet freed.
    large_live: usize,
    /// The most `large_live` was in the current window of
    /// [`LARGE_CACHE_DECAY_MS`], which began at `window_start`, and in the
    /// one before.
    peak_cur: usize,
    peak_prev: usize,
    window_start: u64,
}

/// Mappings taken out of the large cache under the lock, unmapped after it
/// is released (`munmap` is not done under the spin lock).
struct Victims {
    list: [(usize, usize); MAX_CACHED_LARGE + 1],
    n: usize,
}

impl Victims {
    const fn new() -> Victims {
        Victims {
            list: [(0, 0); MAX_CACHED_LARGE + 1],
            n: 0,
        }
    }

    fn push(&mut self, base: usize, len: usize) {
        self.list[self.n] = (base, len);
        self.n += 1;
    }

    /// Unmaps them all.
    ///
    /// # Safety
    /// Every entry is a large mapping from [`map_large`] that nobody refers
    /// to and that is in no cache.
    unsafe fn unmap(self) {
        for &(base, len) in &self.list[..self.n] {
            // SAFETY: guaranteed by the caller.
            unsafe { unmap_large(base as *mut u8, len) };
        }
    }
}

impl Cache {
    /// An empty cache.
    const fn new() -> Cache {
        Cache {
            regions: [0; MAX_CACHED_REGIONS],
            len: 0,
            large: [NO_LARGE; MAX_CACHED_LARGE],
            large_len: 0,
            large_bytes: 0,
            large_live: 0,
            peak_cur: 0,
            peak_prev: 0,
            window_start: 0,
        }
    }

    /// Sets `large_live` to `live` at `now`, and its recent peak.
    fn set_live(&mut self, live: usize, now: u64) {
        let old = self.large_live;
        let elapsed = now.saturating_sub(self.window_start);
        if elapsed >= LARGE_CACHE_DECAY_MS {
            // The current window is over and a new one begins now. When
            // more than one window passed, nothing changed in the last
            // whole one: `old` was live all through it.
            self.peak_prev = if elapsed < 2 * LARGE_CACHE_DECAY_MS {
                self.peak_cur
            } else {
                old
            };
            self.peak_cur = old;
            self.window_start = now;
        }
        self.large_live = live;
        self.peak_cur = self.peak_cur.max(live);
    }

    /// The large cache's byte bound now: what the program held live in
    /// large chunks lately beyond what it holds now, and an eighth of that
    /// peak, so that live and cached large memory together stay within 9/8
    /// of the recent peak (at least [`LARGE_CACHE_MIN_BYTES`], at most
    /// [`LARGE_CACHE_MAX_BYTES`]).
    fn large_cap(&self) -> usize {
        let peak = self.peak_cur.max(self.peak_prev);
        (peak.saturating_sub(self.large_live) + peak / LARGE_CACHE_PEAK_SLACK)
            .clamp(LARGE_CACHE_MIN_BYTES, LARGE_CACHE_MAX_BYTES)
    }

    fn remove_large(&mut self, i: usize) -> CachedLarge {
        let e = self.large[i];
        self.large.copy_within(i + 1..self.large_len, i);
        self.large_len -= 1;
        self.large_bytes -= e.len;
        e
    }

    /// Moves into `out` the entries older than the decay time and then the
    /// oldest ones until the cache holds at most `cap` bytes.
    fn trim_large(&mut self, now: u64, cap: usize, out: &mut Victims) {
        let mut i = 0;
        while i < self.large_len {
            if now.saturating_sub(self.large[i].since) > LARGE_CACHE_DECAY_MS {
                let e = self.remove_large(i);
                out.push(e.base, e.len);
            } else {
                i += 1;
            }
        }
        while self.large_bytes > cap {
            let e = self.remove_large(0);
            out.push(e.base, e.len);
        }
    }
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
    cache: UnsafeCell::new(Cache::new()),
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
static LARGE_REUSED: AtomicUsize = AtomicUsize::new(0);

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
    /// Large mappings made and unmapped (freed beyond the cache's bounds,
    /// decayed, or released).
    pub large_mapped: usize,
    pub large_unmapped: usize,
    /// Large chunks served from a cached mapping instead of a new one.
    pub large_reused: usize,
    /// Freed large mappings cached now, and their bytes.
    pub large_cached: usize,
    pub large_cached_bytes: usize,
    /// Bytes of large chunks live now (mapped, handed out, not freed).
    pub large_live_bytes: usize,
}

pub fn stats() -> GlobalHeapStats {
    let (large_cached, large_cached_bytes, large_live_bytes) = {
        let c = lock();
        (c.large_len, c.large_bytes, c.large_live)
    };
    GlobalHeapStats {
        mapped_bytes: MAPPED_BYTES.load(Ordering::Relaxed),
        regions_mapped: REGIONS_MAPPED.load(Ordering::Relaxed),
        regions_reused: REGIONS_REUSED.load(Ordering::Relaxed),
        regions_released: REGIONS_RELEASED.load(Ordering::Relaxed),
        large_mapped: LARGE_MAPPED.load(Ordering::Relaxed),
        large_unmapped: LARGE_UNMAPPED.load(Ordering::Relaxed),
        large_reused: LARGE_REUSED.load(Ordering::Relaxed),
        large_cached,
        large_cached_bytes,
        large_live_bytes,
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

/// Milliseconds of a monotonic clock (the coarse one: a few ms of
/// resolution is plenty for the decay, and it is the cheapest to read).
fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the current time into `ts`, a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Whether a request of `len` bytes may take a cached mapping of `have`.
fn fits(have: usize, len: usize) -> bool {
    have >= len && have - len <= len / LARGE_FIT_SLACK
}

/// Memory for a very large chunk of at least `len` bytes (a multiple of the
/// page size), aligned to [`REGION_SIZE`] (and as [`map_large`] was asked),
/// on `node` when `bind`.
pub(crate) struct LargeMapping {
    pub base: *mut u8,
    /// Bytes mapped: `len`, or up to 1/8 more for a reused mapping.
    pub len: usize,
    /// Taken from the cache: its contents are what the last holder left,
    /// not zero (a fresh mapping is zero).
    pub reused: bool,
}

/// A mapping for a very large chunk whose start plus `at` is a multiple of
/// `align` (a power of two, at least [`REGION_SIZE`]; `at` is 0 or
/// `REGION_SIZE`, so the start is aligned to `REGION_SIZE` either way): a
/// cached one of the same or a slightly larger length on the same node that
/// is so aligned (the smallest that fits, the newest of those), else a new
/// one, over-mapped by `align` and trimmed to `len`.
pub(crate) fn map_large(
    len: usize,
    align: usize,
    at: usize,
    node: u32,
    bind: bool,
) -> Option<LargeMapping> {
    debug_assert!(align.is_power_of_two() && align >= REGION_SIZE);
    debug_assert!(at == 0 || at == REGION_SIZE);
    let now = now_ms();
    let mut victims = Victims::new();
    let hit = {
        let mut c = lock();
        let mut best: Option<usize> = None;
        for i in 0..c.large_len {
            let e = &c.large[i];
            let same_place = e.bind == bind && (!bind || e.node == node);
            let fresh = now.saturating_sub(e.since) <= LARGE_CACHE_DECAY_MS;
            if same_place
                && fresh
                && (e.base + at).is_multiple_of(align)
                && fits(e.len, len)
                && best.is_none_or(|b| c.large[b].len >= e.len)
            {
                best = Some(i);
            }
        }
        let hit = best.map(|i| c.remove_large(i));
        // Counted live now; given back below if the system refuses.
        let live = c.large_live + hit.map_or(len, |e| e.len);
        c.set_live(live, now);
        let cap = c.large_cap();
        c.trim_large(now, cap, &mut victims);
        hit
    };
    // SAFETY: the victims were taken out of the cache above; cached mappings
    // are referred to by nobody.
    unsafe { victims.unmap() };
    if let Some(e) = hit {
        LARGE_REUSED.fetch_add(1, Ordering::Relaxed);
        // Its pages were bound to `node` when it was first mapped and were
        // never discarded.
        return Some(LargeMapping {
            base: e.base as *mut u8,
            len: e.len,
            reused: true,
        });
    }
    let Some(base) = os::map_aligned_at(len, align, at) else {
        lock().large_live -= len;
        return None;
    };
    MAPPED_BYTES.fetch_add(len, Ordering::Relaxed);
    LARGE_MAPPED.fetch_add(1, Ordering::Relaxed);
    if bind {
        placement::bind(base, len, node);
    }
    Some(LargeMapping {
        base,
        len,
        reused: false,
    })
}

/// Takes back a very large chunk's mapping: caches it with its pages
/// resident, or unmaps it when it is bigger than the cache's bound; then
/// unmaps what the bounds and the decay put out of the cache.
///
/// # Safety
/// `[base, base+len)` is a whole mapping from [`map_large`] (bound to
/// `node` when `bind`), removed from `region_map` with a zero magic, that
/// nobody refers to.
pub(crate) unsafe fn free_large(base: *mut u8, len: usize, node: u32, bind: bool) {
    let now = now_ms();
    let mut victims = Victims::new();
    {
        let mut c = lock();
        let live = c.large_live - len;
        c.set_live(live, now);
        let cap = c.large_cap();
        if len > cap {
            victims.push(base as usize, len);
        } else {
            if c.large_len == MAX_CACHED_LARGE {
                let e = c.remove_large(0);
                victims.push(e.base, e.len);
            }
            let i = c.large_len;
            c.large[i] = CachedLarge {
                base: base as usize,
                len,
                node,
                bind,
                since: now,
            };
            c.large_len += 1;
            c.large_bytes += len;
        }
        c.trim_large(now, cap, &mut victims);
    }
    // SAFETY: `base` (when not cached) is given up by the caller; the others
    // were taken out of the cache above.
    unsafe { victims.unmap() };
}

/// Unmaps every cached large mapping (as `malloc_trim` does for glibc's
/// free memory) and returns how many bytes went back to the system. The
/// recent peak of live large memory is forgotten too: from now on the cache
/// may hold only what is freed beyond the live bytes of this moment.
pub fn release_cached_large() -> usize {
    let now = now_ms();
    let mut victims = Victims::new();
    let mut bytes = 0;
    {
        let mut c = lock();
        c.peak_cur = c.large_live;
        c.peak_prev = c.large_live;
        c.window_start = now;
        while c.large_len > 0 {
            let e = c.remove_large(0);
            bytes += e.len;
            victims.push(e.base, e.len);
        }
    }
    // SAFETY: taken out of the cache above; cached mappings are referred to
    // by nobody.
    unsafe { victims.unmap() };
    bytes
}

/// Returns a very large chunk's memory to the system.
///
/// # Safety
/// `[base, base+len)` is a mapping from [`map_large`] that nobody refers to
/// and that is not in the cache.
unsafe fn unmap_large(base: *mut u8, len: usize) {
    MAPPED_BYTES.fetch_sub(len, Ordering::Relaxed);
    LARGE_UNMAPPED.fetch_add(1, Ordering::Relaxed);
    // SAFETY: guaranteed by the caller.
    unsafe { os::unmap(base, len) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cached large mapping is taken back only for the node (and binding)
    /// its pages were placed for. Node 5 is one no other test uses, so
    /// other tests running meanwhile neither take nor put such entries.
    #[test]
    fn cached_large_mappings_are_reused_only_on_their_node() {
        let len = (2 << 20) + 3 * os::page_size();
        let m = map_large(len, REGION_SIZE, 0, 5, false).unwrap();
        assert!(!m.reused);
        // SAFETY: a mapping from map_large, never registered (magic zero),
        // given up here; it is recorded as bound to node 5.
        unsafe { free_large(m.base, m.len, 5, true) };
        // Another node, or no binding: a new mapping.
        let other = map_large(len, REGION_SIZE, 0, 6, true).unwrap();
        assert!(!other.reused);
        assert_ne!(other.base, m.base);
        let unbound = map_large(len, REGION_SIZE, 0, 5, false).unwrap();
        assert!(!unbound.reused);
        assert_ne!(unbound.base, m.base);
        // Its own node: the cached one.
        let again = map_large(len, REGION_SIZE, 0, 5, true).unwrap();
        assert!(again.reused);
        assert_eq!((again.base, again.len), (m.base, m.len));
        // SAFETY: as above, each with the place it was mapped for.
        unsafe {
            free_large(other.base, other.len, 6, true);
            free_large(unbound.base, unbound.len, 5, false);
            free_large(again.base, again.len, 5, true);
        }
    }

    /// The byte bound is the recent peak of live large memory less what is
    /// live now, plus an eighth of the peak, and the peak is forgotten after
    /// one to two windows.
    #[test]
    fn the_byte_bound_follows_the_recent_peak_of_live_large_memory() {
        const MIB: usize = 1 << 20;
        const D: u64 = LARGE_CACHE_DECAY_MS;
        let mut c = Cache::new();
        let t0 = 10_000;
        c.set_live(500 * MIB, t0);
        c.set_live(100 * MIB, t0 + 10);
        assert_eq!(c.large_cap(), 400 * MIB + 500 * MIB / 8);
        // In the next window the last one's peak still counts.
        c.set_live(120 * MIB, t0 + D + 10);
        assert_eq!(c.large_cap(), 380 * MIB + 500 * MIB / 8);
        // Two windows on, only what was live since counts: the floor.
        c.set_live(100 * MIB, t0 + 3 * D + 20);
        assert_eq!(c.large_cap(), LARGE_CACHE_MIN_BYTES);
        // And the ceiling.
        c.set_live(3000 * MIB, t0 + 3 * D + 30);
        c.set_live(0, t0 + 3 * D + 40);
        assert_eq!(c.large_cap(), LARGE_CACHE_MAX_BYTES);
    }

    /// A mapping for a chunk aligned to more than a region starts where its
    /// second region is so aligned; a cached mapping is taken back for such
    /// a chunk only when it is placed that way. Node 7: see above.
    #[test]
    fn mappings_for_large_alignments_are_placed_for_them() {
        let len = (3 << 20) + REGION_SIZE;
        let align = 4 * REGION_SIZE;
        let m = map_large(len, align, REGION_SIZE, 7, false).unwrap();
        assert!(!m.reused);
        assert_eq!((m.base as usize + REGION_SIZE) % align, 0);
        assert_eq!(m.base as usize % REGION_SIZE, 0);
        // SAFETY: a mapping from map_large, never registered, given up here.
        unsafe { free_large(m.base, m.len, 7, true) };
        // Placed otherwise (the start, not the second region, aligned):
        // not this one.
        let other = map_large(len, align, 0, 7, true).unwrap();
        assert_eq!(other.base as usize % align, 0);
        assert!(!other.reused);
        // Its own placement, or a region's: the cached one.
        let again = map_large(len, align, REGION_SIZE, 7, true).unwrap();
        assert!(again.reused);
        assert_eq!(again.base, m.base);
        // SAFETY: as above.
        unsafe {
            free_large(again.base, again.len, 7, true);
            free_large(other.base, other.len, 7, true);
        }
        let plain = map_large(len, REGION_SIZE, 0, 7, true).unwrap();
        assert!(plain.reused);
        // SAFETY: as above.
        unsafe { free_large(plain.base, plain.len, 7, true) };
    }

    #[test]
    fn a_request_fits_a_mapping_up_to_an_eighth_larger() {
        let len = 8 << 20;
        assert!(fits(len, len));
        assert!(fits(len + len / 8, len));
        assert!(!fits(len + len / 8 + 4096, len));
        assert!(!fits(len - 4096, len));
    }
}
