//! Thread heaps: the per-thread owner of a column of arenas and its local
//! heaps (paper §3: "In multithreaded execution each thread is associated
//! with its individual local heap(s)"), how a thread finds its own, and the
//! dispatch of every request to an arena.
//!
//! The paper's runtime has a fixed set of threads created at start-up. A
//! general allocator does not, so (a choice, after mimalloc): thread heaps
//! are never freed. A thread takes one on its first allocation, either a
//! heap abandoned by a thread that exited (claimed by compare-and-swap on
//! its `state`) or a new one, mapped from the system and pushed on a global
//! registry; when the thread exits (a `pthread` key destructor) the heap
//! takes its remote frees and is abandoned, with its chunks, for the next
//! thread. The thread's heap pointer is a `const`-initialised thread-local
//! without destructor, so finding it never allocates (a Rust thread-local
//! with a destructor would call `calloc` to register it, which recurses when
//! this is the C library's `malloc`).
//!
//! Frees: a chunk of a local heap owned by the calling thread's heap is
//! freed in its arena, without a lock; any other goes on its owner's
//! remote-free list ([`crate::remote_free`]). Large chunks are given back
//! to the global heap (its cache of large mappings) by whichever thread
//! frees them.
//!
//! Finding the heap fast: the thread-local is the record, but a shared
//! object reaches thread-locals through `__tls_get_addr`, so `current()`
//! first looks in [`HEAPS`], a table indexed by a hash of the thread's
//! identity ([`crate::thread_id`]), and accepts the heap it finds there only
//! if the heap's `tid` is the caller's. A thread that misses (a collision)
//! reads its thread-local and puts its heap back in the table. The owner
//! check of `free` compares the region's owner heap's `tid` with the
//! caller's identity, also without a thread-local.
//!
//! Invariant: a heap whose `state` is `OWNED` is used by exactly one thread,
//! the one whose thread-local points at it; the `Acquire` claim and the
//! `Release` abandonment order one owner's work before the next's. A heap's
//! `tid` is the owner's identity while the owner may use it, and 0 otherwise
//! (before a claim, after the owner exits, and while the owner runs inside
//! [`bootstrap::guarded`], whose code must not touch the heap); only the
//! owner writes it, so a thread reads its own identity there only in a heap
//! it owns.

use core::cell::{Cell, UnsafeCell};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicPtr as StdAtomicPtr, AtomicU32, AtomicU8 as StdAtomicU8};

use crossbeam_utils::CachePadded;

use crate::arena::{LocalState, LocalStats};
use crate::bootstrap;
use crate::coalesce;
use crate::large;
use crate::local_heap;
use crate::misuse::Misuse;
use crate::os;
use crate::placement;
use crate::region::{base_of, RegionHeader, RegionKind, REGION_MAGIC};
use crate::region_map;
use crate::remote_free::{carried, FreedChunk, Link, RemoteFrees};
use crate::size_class::{choose, small_class, ArenaChoice, SMALL_CLASSES, SMALL_MAX};
use crate::subheap::{self, SubheapRegion};
use crate::sync::{AtomicU8, AtomicUsize, Ordering};
use crate::thread_id;

/// The current-heap value of a thread inside [`bootstrap::guarded`].
pub(crate) const BOOTSTRAPPING: *const ThreadHeap = core::ptr::without_provenance(1);

const FREE: u8 = 0;
const OWNED: u8 = 1;

pub struct ThreadHeap {
    /// Written by other threads; on its own cache line.
    remote: CachePadded<RemoteFrees>,
    state: AtomicU8,
    /// The owner's [`thread_id`] while it may use the heap, else 0.
    tid: AtomicUsize,
    /// Registry link; written before the heap is published, then fixed.
    next_heap: *const ThreadHeap,
    local: UnsafeCell<LocalState>,
}

thread_local! {
    static CURRENT: Cell<*const ThreadHeap> = const { Cell::new(core::ptr::null()) };
}

/// Heaps by a hash of their owner's identity (see the module doc).
const HEAP_SLOTS: usize = 1024;
static HEAPS: [StdAtomicPtr<ThreadHeap>; HEAP_SLOTS] =
    [const { StdAtomicPtr::new(core::ptr::null_mut()) }; HEAP_SLOTS];

#[inline(always)]
fn heap_slot(tid: usize) -> &'static StdAtomicPtr<ThreadHeap> {
    // Fibonacci hashing: thread control blocks sit at large, regular
    // strides (one per thread stack), which the multiply spreads.
    let i = tid.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (usize::BITS - HEAP_SLOTS.trailing_zeros());
    &HEAPS[i]
}

static REGISTRY: StdAtomicPtr<ThreadHeap> = StdAtomicPtr::new(core::ptr::null_mut());
static CREATED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many thread heaps exist (they are reused, never freed).
pub(crate) fn heaps_created() -> usize {
    CREATED.load(std::sync::atomic::Ordering::Relaxed)
}

/// The calling thread's heap, null before its first allocation, or
/// [`BOOTSTRAPPING`].
#[inline(always)]
pub(crate) fn current() -> *const ThreadHeap {
    let h = current_in_table();
    if !h.is_null() {
        return h;
    }
    current_slow(thread_id::current())
}

/// The calling thread's heap if the table has it and the thread may use it
/// now; null otherwise (then [`current`] knows more).
#[inline(always)]
fn current_in_table() -> *const ThreadHeap {
    let tid = thread_id::current();
    let h = heap_slot(tid).load(Relaxed);
    // SAFETY: heaps in the table are registered, never freed.
    if !h.is_null() && may_use(unsafe { &(*h).tid }, tid) {
        return h;
    }
    core::ptr::null()
}

#[cold]
fn current_slow(tid: usize) -> *const ThreadHeap {
    let h = CURRENT.with(|c| c.get());
    // SAFETY: a real current heap is registered, never freed.
    if h as usize > 1 && may_use(unsafe { &(*h).tid }, tid) {
        // Another thread's heap took the slot: take it back.
        heap_slot(tid).store(h.cast_mut(), Relaxed);
    }
    h
}

/// Whether the calling thread owns `h` and may use it now.
#[inline(always)]
fn owned_by_caller(h: *const ThreadHeap) -> bool {
    // SAFETY: `h` is a region's owner heap: registered, never freed.
    may_use(unsafe { &(*h).tid }, thread_id::current())
}

pub(crate) fn set_current(h: *const ThreadHeap) {
    let old = CURRENT.with(|c| c.replace(h));
    publish(old, h);
}

pub(crate) fn replace_current(h: *const ThreadHeap) -> *const ThreadHeap {
    let old = CURRENT.with(|c| c.replace(h));
    publish(old, h);
    old
}

/// Keeps `tid` and the table in step with the thread-local's change from
/// `old` to `new`.
fn publish(old: *const ThreadHeap, new: *const ThreadHeap) {
    if old as usize > 1 && old != new {
        // SAFETY: registered heaps are never freed; only their owner (this
        // thread) writes `tid`.
        leave(unsafe { &(*old).tid });
    }
    if new as usize > 1 {
        let tid = thread_id::current();
        // SAFETY: as above; this thread owns `new`.
        enter(unsafe { &(*new).tid }, tid);
        heap_slot(tid).store(new.cast_mut(), Relaxed);
    }
}

/// Marks the thread `tid` (its [`thread_id`]) as the one that may use the
/// heap whose `tid` cell this is; only the heap's owner calls it.
#[inline]
pub(crate) fn enter(cell: &AtomicUsize, tid: usize) {
    cell.store(tid, Ordering::Relaxed);
}

/// The owner stops using the heap (it exits, or runs bootstrap code).
#[inline]
pub(crate) fn leave(cell: &AtomicUsize) {
    cell.store(0, Ordering::Relaxed);
}

/// Whether thread `tid` may use the heap now. Relaxed is enough: only the
/// owner writes its own identity into the cell, and a thread always sees
/// its own last write, so `true` only ever answers the owner after its
/// `enter` and before its `leave`; any other thread reads some other value.
#[inline(always)]
pub(crate) fn may_use(cell: &AtomicUsize, tid: usize) -> bool {
    cell.load(Ordering::Relaxed) == tid
}

/// Takes an abandoned heap: `true` when this thread now owns it.
pub(crate) fn claim(state: &AtomicU8) -> bool {
    state
        .compare_exchange(FREE, OWNED, Ordering::Acquire, Ordering::Relaxed)
        .is_ok()
}

/// Abandons an owned heap, publishing everything its owner did to it.
pub(crate) fn abandon(state: &AtomicU8) {
    state.store(FREE, Ordering::Release);
}

/// The owner's state of heap `h`.
///
/// # Safety
/// The calling thread owns `h` (it is its current heap), so no other
/// reference to the state exists.
#[inline]
unsafe fn local<'a>(h: *const ThreadHeap) -> &'a mut LocalState {
    // SAFETY: guaranteed by the caller (ownership invariant).
    unsafe { &mut *(*h).local.get() }
}

fn create() -> Option<*const ThreadHeap> {
    let bytes = core::mem::size_of::<ThreadHeap>().next_multiple_of(os::page_size());
    let p = os::map(bytes)?.cast::<ThreadHeap>();
    // SAFETY: a fresh, page-aligned (so suitably aligned) mapping of enough bytes.
    unsafe {
        p.write(ThreadHeap {
            remote: CachePadded::new(RemoteFrees::new()),
            state: AtomicU8::new(OWNED),
            tid: AtomicUsize::new(0),
            next_heap: core::ptr::null(),
            local: UnsafeCell::new(LocalState::new(p)),
        });
    }
    let mut head = REGISTRY.load(std::sync::atomic::Ordering::Relaxed);
    loop {
        // SAFETY: `p` is not published yet; only this thread sees it.
        unsafe { (*p).next_heap = head };
        match REGISTRY.compare_exchange_weak(
            head,
            p,
            std::sync::atomic::Ordering::Release,
            std::sync::atomic::Ordering::Relaxed,
        ) {
            Ok(_) => {
                CREATED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                return Some(p);
            }
            Err(h) => head = h,
        }
    }
}

/// Gives the calling thread a heap (an abandoned one or a new one).
#[cold]
fn adopt() -> Option<*const ThreadHeap> {
    let node = placement::current_node();
    let bind = placement::enabled();
    let mut h = REGISTRY
        .load(std::sync::atomic::Ordering::Acquire)
        .cast_const();
    while !h.is_null() {
        // SAFETY: registered heaps are never freed.
        if claim(unsafe { &(*h).state }) {
            break;
        }
        // SAFETY: as above; `next_heap` is fixed once published.
        h = unsafe { (*h).next_heap };
    }
    if h.is_null() {
        h = create()?;
    }
    // SAFETY: this thread owns `h` now (claimed or created).
    let st = unsafe { local(h) };
    st.node = node;
    st.bind = bind;
    set_current(h);
    register_thread_exit(h);
    Some(h)
}

const KEY_UNSET: u8 = 0;
const KEY_MAKING: u8 = 1;
const KEY_SET: u8 = 2;
static KEY_STATE: StdAtomicU8 = StdAtomicU8::new(KEY_UNSET);
static KEY: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_thread_exit(p: *mut libc::c_void) {
    let h = p as *const ThreadHeap;
    if current() == h {
        // An exiting thread's free chunks go back to their subheaps, so
        // that empty ones are released while the heap waits for its next
        // thread.
        // SAFETY: still this thread's heap.
        unsafe { give_back_unused(h) };
        set_current(core::ptr::null());
    }
    // SAFETY: registered heaps are never freed.
    abandon(unsafe { &(*h).state });
}

// `fork` in a multithreaded process: the child has only the forking thread,
// so no lock may be held across the fork by another thread. The handlers
// let a topology detection finish and take the global heap's and the
// bootstrap area's locks (never held together anywhere else, so taking
// both cannot deadlock); both processes then release them. Thread heaps
// owned by threads the child lacks stay owned there: their chunks are
// still freed correctly (as remote frees), only their memory is not reused.
extern "C" fn before_fork() {
    placement::fork_prepare();
    crate::global_heap::fork_prepare();
    bootstrap::fork_prepare();
}

extern "C" fn after_fork_parent() {
    bootstrap::fork_release();
    crate::global_heap::fork_release();
}

extern "C" fn after_fork_child() {
    bootstrap::fork_release();
    crate::global_heap::fork_release();
    placement::fork_child();
}

fn register_thread_exit(h: *const ThreadHeap) {
    use std::sync::atomic::Ordering as O;
    loop {
        match KEY_STATE.load(O::Acquire) {
            KEY_SET => break,
            KEY_UNSET
                if KEY_STATE
                    .compare_exchange(KEY_UNSET, KEY_MAKING, O::AcqRel, O::Acquire)
                    .is_ok() =>
            {
                let mut key: libc::pthread_key_t = 0;
                // SAFETY: `key` is a valid out-pointer; the destructor is an
                // `extern "C"` function that lives for the whole process.
                let rc = unsafe { libc::pthread_key_create(&mut key, Some(on_thread_exit)) };
                if rc != 0 {
                    os::fatal(format_args!(
                        "numagc-arena: pthread_key_create failed ({rc}); thread exits cannot be tracked"
                    ));
                }
                KEY.store(key, O::Relaxed);
                // SAFETY: the handlers are `extern "C"` functions that live
                // for the whole process.
                unsafe {
                    libc::pthread_atfork(
                        Some(before_fork),
                        Some(after_fork_parent),
                        Some(after_fork_child),
                    )
                };
                KEY_STATE.store(KEY_SET, O::Release);
                break;
            }
            _ => core::hint::spin_loop(),
        }
    }
    // SAFETY: the key was created above; the value is only read back by the
    // destructor.
    unsafe { libc::pthread_setspecific(KEY.load(O::Relaxed), h.cast()) };
}

/// Frees the chunks other threads handed back.
///
/// # Safety
/// The calling thread owns `h` and `st` is its state.
unsafe fn take_remote_frees(h: *const ThreadHeap, st: &mut LocalState) {
    // SAFETY: registered heaps are never freed.
    let remote: &RemoteFrees = unsafe { &(*h).remote };
    let mut c = remote.carriers.take_all();
    while !c.is_null() {
        // SAFETY: take_all gave us every carrier of the list; read the link
        // before the carrier is freed.
        let next = unsafe { FreedChunk::next(c) };
        // SAFETY: a carrier taken by its owner.
        let chunks = unsafe { carried(c) };
        // Fetch them all before freeing them one by one: their misses
        // overlap instead of following one another.
        for &p in chunks {
            prefetch(p.cast());
        }
        for &p in chunks {
            // SAFETY: a chunk the carrier's pusher gave up.
            unsafe { take_one(st, p.cast()) };
        }
        // SAFETY: the carrier itself, its addresses read.
        unsafe { take_one(st, c.cast()) };
        st.stats.remote_carriers_taken += 1;
        c = next;
    }
    let mut n = remote.chains.take_all();
    while !n.is_null() {
        // SAFETY: take_all gave us every node of the list; read the link
        // before the free reuses the chunk's first word.
        let next = unsafe { FreedChunk::next(n) };
        // SAFETY: a chunk its pusher gave up.
        unsafe { take_one(st, n.cast()) };
        n = next;
    }
}

/// Frees one chunk another thread handed back.
///
/// # Safety
/// The calling thread owns the heap of `st`, and the chunk at `ptr` was
/// handed back to it (the pusher checked that it lies in a live local heap
/// of this heap: region kind and owner).
#[inline(always)]
unsafe fn take_one(st: &mut LocalState, ptr: *mut u8) {
    let base = base_of(ptr as usize);
    // SAFETY: the region has a live chunk (this one) and so stays ours.
    let r = unsafe {
        match (*(base as *const RegionHeader)).kind {
            RegionKind::Subheaps => subheap::free_taken(st, base as *mut SubheapRegion, ptr),
            _ => local_heap::free(st, ptr),
        }
    };
    if let Err(m) = r {
        os::fatal(format_args!(
            "{m} (found when its owner took back chunks freed by another thread)"
        ));
    }
    st.stats.remote_frees_taken += 1;
}

/// Asks the processor to fetch the cache line at `p` (a hint; nothing on
/// targets without one here).
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults, whatever the address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Allocates `size` bytes aligned to `align`; null when refused.
#[inline(always)]
pub(crate) fn alloc(size: usize, align: usize) -> *mut u8 {
    if size <= SMALL_MAX && align <= 16 && align.is_power_of_two() {
        return alloc_small(small_class(size));
    }
    alloc_other(size, align)
}

/// Every request but a small one with a small alignment (out of line, so
/// that `alloc`'s fast path needs no stack frame).
#[inline(never)]
fn alloc_other(size: usize, align: usize) -> *mut u8 {
    alloc_chosen(choose(size, align), size, align)
}

/// Allocates a chunk of small class `class`: the fast path of every
/// allocator interface (a pop from the current subheap of the arena).
#[inline(always)]
pub(crate) fn alloc_small(class: usize) -> *mut u8 {
    let h = current_in_table();
    if h.is_null() {
        return small_slow(class);
    }
    // SAFETY: `class` is a small class (from `small_class` or a choice);
    // `current_in_table` found `h` this thread's, usable now.
    unsafe { alloc_small_owned(h, class) }
}

/// Allocates with the arena already chosen (the rich interface).
#[inline]
pub(crate) fn alloc_chosen(choice: ArenaChoice, size: usize, align: usize) -> *mut u8 {
    match choice {
        ArenaChoice::Small(class) => alloc_small(class as usize),
        ArenaChoice::Medium(need) => {
            let h = current();
            if (h as usize) <= 1 {
                return alloc_cold(size, align);
            }
            // SAFETY: `h` is this thread's heap.
            medium(h, unsafe { local(h) }, need)
        }
        ArenaChoice::Large => alloc_large(size, align),
        ArenaChoice::Refused(_) => core::ptr::null_mut(),
    }
}

#[inline(never)]
fn alloc_large(size: usize, align: usize) -> *mut u8 {
    let h = current();
    if h == BOOTSTRAPPING {
        return bootstrap::alloc(size, align);
    }
    let (node, bind) = if h.is_null() {
        (placement::current_node(), placement::enabled())
    } else {
        // SAFETY: `h` is this thread's heap.
        let st = unsafe { local(h) };
        (st.node, st.bind)
    };
    large::alloc(size, align, node, bind)
}

#[cold]
fn alloc_cold(size: usize, align: usize) -> *mut u8 {
    if current() == BOOTSTRAPPING {
        return bootstrap::alloc(size, align);
    }
    match adopt() {
        Some(_) => alloc(size, align),
        None => core::ptr::null_mut(),
    }
}

/// The arena's current subheap is exhausted (or the thread has no heap
/// yet, or is bootstrapping).
#[cold]
fn small_slow(class: usize) -> *mut u8 {
    let h = current();
    if (h as usize) <= 1 {
        // A request with an alignment above 16 got a power-of-two class,
        // aligned to its size: ask the cold path for that alignment.
        let size = SMALL_CLASSES[class];
        return alloc_cold(size, 1 << size.trailing_zeros());
    }
    // SAFETY: `h` is this thread's heap.
    let st = unsafe { local(h) };
    if !subheap::refill(st, class, false) {
        // SAFETY: registered heaps are never freed.
        if !unsafe { (*h).remote.is_empty() } {
            // SAFETY: `h` is this thread's heap, `st` its state.
            unsafe { take_remote_frees(h, st) };
        }
        if !subheap::refill(st, class, true) {
            return core::ptr::null_mut();
        }
    }
    subheap::alloc_fast(&mut st.small[class])
}

fn medium(h: *const ThreadHeap, st: &mut LocalState, need: usize) -> *mut u8 {
    let p = local_heap::alloc_from_bins(&mut st.variable, need);
    if !p.is_null() {
        return p;
    }
    medium_slow(h, st, need)
}

#[cold]
fn medium_slow(h: *const ThreadHeap, st: &mut LocalState, need: usize) -> *mut u8 {
    let p = local_heap::alloc_from_top(&mut st.variable, need);
    if !p.is_null() {
        return p;
    }
    // SAFETY: registered heaps are never freed.
    if !unsafe { (*h).remote.is_empty() } {
        // SAFETY: `h` is this thread's heap, `st` its state.
        unsafe { take_remote_frees(h, st) };
        let p = local_heap::alloc_from_bins(&mut st.variable, need);
        if !p.is_null() {
            return p;
        }
    }
    // Deferred coalescing: only now that the request cannot be met.
    if st.variable.freed_since_sweep > 0 {
        let report = coalesce::sweep(st);
        st.stats.sweeps += 1;
        st.stats.merged += report.merged;
        st.stats.heaps_released += report.released;
        let p = local_heap::alloc_from_bins(&mut st.variable, need);
        if !p.is_null() {
            return p;
        }
        let p = local_heap::alloc_from_top(&mut st.variable, need);
        if !p.is_null() {
            return p;
        }
    }
    if !local_heap::grow(st) {
        return core::ptr::null_mut();
    }
    local_heap::alloc_from_top(&mut st.variable, need)
}

/// The live region header that describes the region `ptr` lies in (its
/// own, or for the data of a large chunk aligned to `REGION_SIZE` or more
/// the chunk's first region), or the misuse.
fn region_of(ptr: usize) -> Result<(usize, RegionKind), Misuse> {
    let Some(base) = region_map::header_of(ptr) else {
        return Err(Misuse::Foreign { addr: ptr });
    };
    // SAFETY: a registered region is mapped and starts with its header.
    let h = unsafe { &*(base as *const RegionHeader) };
    if h.magic != REGION_MAGIC {
        return Err(Misuse::Foreign { addr: ptr });
    }
    Ok((base, h.kind))
}

/// Frees `ptr` (null is ignored), or says how the call is wrong.
///
/// The fast path is a small chunk freed by its owner: the region map's bit,
/// the region header, the owner's identity, then the subheap's free.
///
/// # Safety
/// If `ptr` is a chunk of this heap manager, nobody uses it after this call.
#[inline(always)]
pub(crate) unsafe fn free(ptr: *mut u8) -> Result<(), Misuse> {
    let addr = ptr as usize;
    let base = base_of(addr);
    // Null lies in region 0, which is never ours: one test for both.
    if !region_map::contains(base) {
        return if ptr.is_null() {
            Ok(())
        } else {
            // SAFETY: passed on from the caller.
            unsafe { free_unregistered(ptr) }
        };
    }
    // SAFETY: a registered region is mapped and starts with its header.
    let h = unsafe { &*(base as *const RegionHeader) };
    // (The owner test is written out here rather than by calling
    // `free_small`: through it the compiler merges the two `free_other`
    // tails and the owner's free pays 4 more instructions, callgrind.)
    if h.magic == REGION_MAGIC && h.kind == RegionKind::Subheaps && owned_by_caller(h.owner) {
        // SAFETY: this thread owns the region's heap, and `ptr` lies in a
        // live region of it.
        return unsafe { subheap::free(local(h.owner), base as *mut SubheapRegion, ptr) };
    }
    // SAFETY: passed on from the caller.
    unsafe { free_other(base, ptr) }
}

/// The calling thread's heap, made (or adopted) if it has none; `None`
/// when the system refuses memory or the thread is bootstrapping.
pub(crate) fn current_or_adopt() -> Option<*const ThreadHeap> {
    let h = current();
    match h as usize {
        0 => adopt(),
        1 => None,
        _ => Some(h),
    }
}

/// A small chunk of `class` from heap `h`'s arena, else the general path.
///
/// # Safety
/// `class < NUM_SMALL`; the calling thread owns `h` and may use it now.
#[inline(always)]
pub(crate) unsafe fn alloc_small_owned(h: *const ThreadHeap, class: usize) -> *mut u8 {
    debug_assert!(class < crate::size_class::NUM_SMALL && owned_by_caller(h));
    // SAFETY: guaranteed by the caller.
    let p = subheap::alloc_fast(unsafe { local(h).small.get_unchecked_mut(class) });
    if !p.is_null() {
        return p;
    }
    small_slow(class)
}

/// Frees a small chunk, the caller's heap `h` at hand: when `h` owns the
/// chunk's region, straight into its arena.
///
/// # Safety
/// `ptr` is a chunk that the small arena of class `class` handed out, not
/// used after this call unless it returns an error; the calling thread owns
/// `h` and may use it now.
#[inline(always)]
pub(crate) unsafe fn free_small_owned(
    h: *const ThreadHeap,
    ptr: *mut u8,
    class: usize,
) -> Result<(), Misuse> {
    debug_assert!(owned_by_caller(h));
    let base = base_of(ptr as usize);
    // SAFETY: a small chunk lies in a live subheap region, which starts
    // with its header.
    let owner = unsafe { (*(base as *const RegionHeader)).owner };
    if core::ptr::eq(owner, h) {
        // SAFETY: this thread owns the region's heap.
        return unsafe { subheap::free_known(local(h), base as *mut SubheapRegion, ptr, class) };
    }
    // SAFETY: passed on from the caller.
    unsafe { free_other(base, ptr) }
}

/// Frees a small chunk of heap `h` on its arena's list, with no check.
///
/// # Safety
/// `ptr` is a live small chunk of class `class` that heap `h` handed out,
/// not on any list; the calling thread owns `h` and may use it now.
#[inline(always)]
pub(crate) unsafe fn free_small_own_unchecked(h: *const ThreadHeap, ptr: *mut u8, class: usize) {
    let base = base_of(ptr as usize);
    // SAFETY: guaranteed by the caller.
    unsafe { subheap::push_unchecked(local(h), base as *mut SubheapRegion, ptr as usize, class) }
}

/// Whether `ptr` lies in a local heap owned by heap `h` (the region map
/// says whether it is ours at all).
pub(crate) fn chunk_owned_by(ptr: *mut u8, h: *const ThreadHeap) -> bool {
    match region_of(ptr as usize) {
        Ok((base, RegionKind::Subheaps | RegionKind::Variable)) => {
            // SAFETY: a live local heap's header.
            core::ptr::eq(unsafe { (*(base as *const RegionHeader)).owner }, h)
        }
        _ => false,
    }
}

/// Frees a chunk known to be a small one of this heap manager (the rich
/// interface's free: no region map lookup).
///
/// # Safety
/// `ptr` is a chunk that a small arena handed out, not used after this call
/// unless it returns an error.
#[inline(always)]
pub(crate) unsafe fn free_small(ptr: *mut u8) -> Result<(), Misuse> {
    let base = base_of(ptr as usize);
    // SAFETY: a small chunk lies in a live subheap region, which starts
    // with its header.
    let owner = unsafe { (*(base as *const RegionHeader)).owner };
    if owned_by_caller(owner) {
        // SAFETY: this thread owns the region's heap.
        return unsafe { subheap::free(local(owner), base as *mut SubheapRegion, ptr) };
    }
    // SAFETY: passed on from the caller.
    unsafe { free_other(base, ptr) }
}

/// A free of a pointer whose region is not registered: the data of a large
/// chunk aligned to `REGION_SIZE` or more (its header is in the region
/// before), else a foreign pointer. Out of line, off `free`'s fast path.
///
/// # Safety
/// As for [`free`].
#[cold]
#[inline(never)]
unsafe fn free_unregistered(ptr: *mut u8) -> Result<(), Misuse> {
    let addr = ptr as usize;
    match region_map::aligned_data_header(base_of(addr)) {
        // SAFETY: passed on from the caller; `base` is registered and its
        // header describes `ptr`'s region.
        Some(base) => unsafe { free_other(base, ptr) },
        None => Err(Misuse::Foreign { addr }),
    }
}

/// Every free but a small chunk's by its owner.
///
/// # Safety
/// As for [`free`]; `base` is the region whose header describes `ptr`'s
/// region (`ptr`'s own, or the one before for aligned large data; see
/// [`region_map::header_of`]), registered in the region map.
#[inline(never)]
unsafe fn free_other(base: usize, ptr: *mut u8) -> Result<(), Misuse> {
    let addr = ptr as usize;
    // SAFETY: a registered region is mapped and starts with its header.
    let h = unsafe { &*(base as *const RegionHeader) };
    if h.magic != REGION_MAGIC {
        return Err(Misuse::Foreign { addr });
    }
    let kind = h.kind;
    match kind {
        RegionKind::Subheaps | RegionKind::Variable => {
            // `owner` is fixed while the region has live chunks.
            let owner = h.owner;
            if owned_by_caller(owner) {
                // Small chunks freed by their owner took `free_small`.
                debug_assert!(kind == RegionKind::Variable);
                // SAFETY: this thread owns the region's heap, and `ptr`
                // lies in a live variable region of it.
                unsafe { local_heap::free(local(owner), ptr) }
            } else {
                // Checks that need no owner-private state; the rest happen
                // when the owner takes the chunk back. `bytes`: the chunk's
                // size when it may carry others (a small chunk), else 0.
                let mut bytes = 0;
                if kind == RegionKind::Subheaps {
                    // SAFETY: a live subheap region.
                    bytes =
                        unsafe { subheap::check_remote_free(base as *mut SubheapRegion, addr)? };
                } else {
                    // SAFETY: a live variable region; a live chunk's header
                    // is not written by its owner.
                    let c = unsafe { local_heap::chunk_of(addr)? };
                    // SAFETY: `c` is a chunk start (its check word matched).
                    if !local_heap::in_use(unsafe { local_heap::size_word(c) }) {
                        return Err(Misuse::DoubleFree { addr });
                    }
                }
                // SAFETY: registered heaps are never freed, nor their lists.
                let list: *const RemoteFrees = unsafe { &*(*owner).remote };
                let me = current_in_table();
                if me.is_null() {
                    // No heap of its own (or bootstrapping): push it now.
                    // SAFETY: the caller gives the chunk up.
                    unsafe { (*list).chains.push(ptr.cast()) };
                } else {
                    // SAFETY: this thread owns `me` and may use it; the
                    // caller gives the chunk up.
                    unsafe { local(me).outbox.put(list, ptr.cast(), bytes) };
                }
                Ok(())
            }
        }
        // SAFETY: a live large chunk's region.
        RegionKind::Large => unsafe { large::free(base, ptr) },
        RegionKind::Bootstrap => {
            // SAFETY: `ptr` lies in a bootstrap region.
            if unsafe { bootstrap::free(ptr) } {
                Ok(())
            } else {
                Err(Misuse::NotAChunk { addr })
            }
        }
    }
}

/// Usable bytes of the chunk starting at `ptr`; `None` when `ptr` is not a
/// chunk start of this heap manager.
pub(crate) fn usable_size(ptr: *const u8) -> Option<usize> {
    let addr = ptr as usize;
    let (base, kind) = region_of(addr).ok()?;
    // SAFETY: `base` is a live region of the kind read from its header.
    unsafe {
        match kind {
            RegionKind::Subheaps => match subheap::chunk_info(base as *mut SubheapRegion, addr)? {
                (start, size) if start == addr => Some(size),
                _ => None,
            },
            RegionKind::Variable => local_heap::usable_size(addr),
            RegionKind::Large => match large::extent(base) {
                (start, len) if start == addr => Some(len),
                _ => None,
            },
            RegionKind::Bootstrap => Some(bootstrap::usable_size(ptr.cast_mut())),
        }
    }
}

/// Whether `ptr` lies in memory this heap manager handed out.
pub(crate) fn owns(ptr: *const u8) -> bool {
    region_of(ptr as usize).is_ok()
}

/// The kind of region `ptr` lies in, for the rich interface.
pub(crate) fn kind_of(ptr: usize) -> Option<(usize, RegionKind)> {
    region_of(ptr).ok()
}

/// The calling thread's heap counters (`None` before its first allocation).
pub(crate) fn stats() -> Option<(LocalStats, usize, usize)> {
    let h = current();
    if (h as usize) <= 1 {
        return None;
    }
    // SAFETY: `h` is this thread's heap.
    let st = unsafe { local(h) };
    let (subheaps, live) = subheap::count_live(st);
    Some((st.stats, subheaps, live))
}

/// Gives the arenas' lists back to the subheaps and takes back remote
/// frees, so that emptied subheaps and local heaps are released now.
pub(crate) fn trim() {
    let h = current();
    if (h as usize) > 1 {
        // SAFETY: `h` is this thread's heap.
        unsafe { give_back_unused(h) };
    }
}

/// Pushes the outbox, takes back remote frees, and gives the arenas' lists
/// back to their subheaps (so that empty ones are released).
///
/// # Safety
/// The calling thread owns `h`.
unsafe fn give_back_unused(h: *const ThreadHeap) {
    // SAFETY: guaranteed by the caller.
    unsafe {
        local(h).outbox.flush();
        take_remote_frees(h, local(h));
        subheap::give_back_lists(local(h));
    }
}

/// Takes back remote frees now (normally done when an arena runs short).
pub(crate) fn collect_remote_frees() {
    let h = current();
    if (h as usize) > 1 {
        // SAFETY: `h` is this thread's heap.
        unsafe { take_remote_frees(h, local(h)) };
    }
}

/// Grows the variable-size chunk at `ptr` in place to hold `new_size` bytes
/// aligned to `align`, when the calling thread owns it and the memory after
/// it is free; `false` otherwise (the caller moves it).
///
/// # Safety
/// `ptr` is a live chunk of this heap manager.
pub(crate) unsafe fn grow_in_place(ptr: *mut u8, new_size: usize, align: usize) -> bool {
    let ArenaChoice::Medium(need) = choose(new_size, align) else {
        return false;
    };
    let Ok((base, RegionKind::Variable)) = region_of(ptr as usize) else {
        return false;
    };
    // SAFETY: a live variable region's header; `owner` is fixed meanwhile.
    let owner = unsafe { (*(base as *const RegionHeader)).owner };
    if !owned_by_caller(owner) {
        return false;
    }
    // SAFETY: this thread owns the region's heap; `ptr` is a live chunk of it.
    unsafe { local_heap::grow_in_place(&mut local(owner).variable, ptr as usize, need) }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::global_heap;

    /// A thread holds the global heap's lock while another forks: the fork
    /// handlers must make the fork wait for it, so that the child can take
    /// the lock (without them the child would wait for ever).
    #[test]
    fn a_child_forked_while_the_global_lock_is_held_can_take_it() {
        // This thread's first allocation registers the handlers.
        let p = crate::alloc(64, 8);
        assert!(!p.is_null());
        let holder = std::thread::spawn(|| {
            global_heap::fork_prepare(); // takes the lock
            std::thread::sleep(Duration::from_millis(200));
            global_heap::fork_release();
        });
        std::thread::sleep(Duration::from_millis(50));
        // SAFETY: the child only maps, gives back a region and exits.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let ok = match global_heap::acquire_region(0, false) {
                // SAFETY: a fresh region, never handed out.
                Some(r) => unsafe {
                    global_heap::release_region(r);
                    true
                },
                None => false,
            };
            // SAFETY: ends the child without running the test harness.
            unsafe { libc::_exit(if ok { 0 } else { 3 }) };
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut status = 0;
        loop {
            // SAFETY: waits for our own child.
            let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
            if r == pid {
                break;
            }
            if Instant::now() > deadline {
                // SAFETY: kills and reaps our own child.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    libc::waitpid(pid, &mut status, 0);
                }
                panic!("the child hung on the global heap's lock");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        holder.join().unwrap();
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        // SAFETY: a live chunk of this thread.
        unsafe { crate::free(p) };
    }
}
