//! Local subheaps: fixed-size chunk allocation for small requests (paper §3:
//! "Allocations of memory chunks below a certain size are again grouped
//! together in local subheaps, which in turn are allocated from local heaps
//! ... subheaps use a fixed-size chunk allocation scheme", rows `0 .. K` of
//! Fig. 4).
//!
//! Layout: a subheap local heap is a region of 64 slots of 64 KiB. Slot 0
//! holds the region header with the metadata of every slot; each other slot,
//! once taken by a size class, is one subheap: chunks of that class at
//! offsets `0, size, 2*size, ...`, handed out first from a bump offset and
//! then from the subheap's free list. A chunk's subheap is found from its
//! address alone (region mask, then slot index), so chunks carry no header.
//!
//! Each arena (class × thread) keeps its own list of free chunks (the
//! paper's "list of available, appropriately sized chunks"), its *current*
//! subheap and a stack of subheaps known to have free chunks. The owner's
//! free pushes the chunk on the arena's list, and its allocation pops it
//! from there first: an allocate-use-free loop touches nothing else. (A
//! first place kept in a field of the arena, apart from the list, was
//! tried: it saved 3 % on Fig. 1 through `malloc` and made larson, where
//! frees and allocations of each class come in random order, twice as slow
//! (0.255 s against 0.13 s): its branch went either way at random.) The
//! list holds at most [`ARENA_LIST_BYTES`] of chunks (at least 8); when a
//! free finds it full, every chunk on it goes back to its subheap's own
//! free list (a subheap that was full goes back on the stack, one that
//! empties gives its slot back). Then the current subheap serves: its free
//! list, then its bump offset.
//!
//! Choices: a subheap that empties (other than its arena's current one)
//! gives its slot back to its local heap at once, for any class to take; a
//! subheap local heap left with no subheap goes back to the global heap,
//! unless it is the thread's newest one (where new slots are looked for
//! first), so that a thread emptying and refilling does not map and unmap
//! each time.
//!
//! Misuse checks, kept to a few instructions because every free makes them
//! (after glibc's tcache key): a free chunk's second word holds a per-process
//! random key, [`free_key`] while it is on its subheap's free list and
//! `free_key() | 1` while it waits on its owner's remote-free list; `alloc`
//! clears the word. A free that finds the key there is a double free: one on
//! the remote list, or (confirmed by walking the subheap's free list, since
//! a program may have stored that value itself) one already on the free
//! list. A free whose offset is not a multiple of the chunk size is not a
//! chunk start. A thread freeing another thread's chunk makes the same
//! checks before it hands the chunk back; it cannot walk the owner's list,
//! so a key found there is taken as proof (the key is random and never
//! handed to the program, which would have to guess 63 bits).
//!
//! Invariant: for every taken slot, chunks below `bump` are either live or
//! on exactly one list (the subheap's free list or its arena's list, both
//! marked with the key, or the owner's remote-free list, marked with the
//! key `| 1`); `used` counts the ones not on the subheap's free list (so
//! those on the arena's list count as used until it gives them back), plus
//! one while the subheap is its arena's current one
//! (so that a free which empties the current subheap, the common case of
//! an allocate-use-free loop, sees a non-zero count and does nothing more). Only the owner thread touches a region's metadata.

use crate::arena::LocalState;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

use crate::global_heap;
use crate::misuse::Misuse;
use crate::region::{RegionHeader, RegionKind, REGION_MAGIC, REGION_SIZE};
use crate::region_map;
use crate::size_class::{NUM_SMALL, SMALL_CLASSES};

pub(crate) const SLOT_SHIFT: u32 = 16;
pub(crate) const SLOT_SIZE: usize = 1 << SLOT_SHIFT;
pub(crate) const SLOTS: usize = REGION_SIZE / SLOT_SIZE;

#[repr(C)]
pub(crate) struct SubheapMeta {
    /// First chunk of the free list (its first word links to the next).
    free: *mut usize,
    /// Address of the slot.
    base: usize,
    /// Offset of the first never-used chunk.
    bump: u32,
    /// Chunks start below this offset.
    limit: u32,
    /// Chunk size (0: slot not taken).
    size: u32,
    /// `2^32 / size + 1`: `(off * recip) >> 32 == off / size` for every
    /// offset in a slot (the error, below `off / 2^32 < 2^-16`, is smaller
    /// than the `1 / size >= 2^-12` a quotient needs to change), so a free
    /// finds its chunk index without a division.
    recip: u32,
    used: u32,
    class: u8,
    /// On its arena's stack or current: the arena will find its free chunks.
    listed: bool,
    /// Links of the arena's list of subheaps with free chunks (doubly
    /// linked, so that a subheap that empties can leave it at once).
    next_listed: *mut SubheapMeta,
    prev_listed: *mut SubheapMeta,
}

#[repr(C)]
pub(crate) struct SubheapRegion {
    hdr: RegionHeader,
    /// [`free_key`], copied here so that a free reads it next to the
    /// metadata it reads anyway.
    free_key: usize,
    /// Bit i set: slot i is not taken yet.
    free_slots: u64,
    metas: [SubheapMeta; SLOTS],
}

const _: () = assert!(core::mem::size_of::<SubheapRegion>() <= SLOT_SIZE);

/// The bytes of free chunks an arena's own list may hold (at least 8
/// chunks): enough that an allocate-use-free loop never reaches a subheap,
/// small enough that an idle thread keeps little (28 classes: at most
/// 448 KiB plus 8 chunks of each class above 2 KiB).
pub const ARENA_LIST_BYTES: usize = 16 << 10;

const fn list_room(class: usize) -> u32 {
    let n = ARENA_LIST_BYTES / SMALL_CLASSES[class];
    (if n < 8 { 8 } else { n }) as u32
}

/// The arena of one small class for one thread (an entry of Fig. 4).
pub(crate) struct SmallArena {
    /// The arena's list of free chunks (first word: the next one).
    list: *mut usize,
    /// How many more chunks the list may take.
    room: u32,
    current: *mut SubheapMeta,
    listed: *mut SubheapMeta,
}

impl SmallArena {
    const fn new(class: usize) -> Self {
        SmallArena {
            list: core::ptr::null_mut(),
            room: list_room(class),
            current: core::ptr::null_mut(),
            listed: core::ptr::null_mut(),
        }
    }

    /// The arenas of one thread, one per small class.
    pub(crate) const fn column() -> [SmallArena; NUM_SMALL] {
        let mut a = [const { SmallArena::new(0) }; NUM_SMALL];
        let mut c = 0;
        while c < NUM_SMALL {
            a[c] = SmallArena::new(c);
            c += 1;
        }
        a
    }
}

static FREE_KEY: AtomicUsize = AtomicUsize::new(0);

/// The key in a free chunk's second word (see the module doc); non-zero
/// once the first subheap exists, with its lowest bit clear.
#[inline(always)]
fn free_key() -> usize {
    FREE_KEY.load(Relaxed)
}

/// Makes the key, once, before the first small chunk is handed out.
fn init_free_key() {
    if free_key() != 0 {
        return;
    }
    let mut buf = [0u8; 8];
    // SAFETY: writes at most 8 bytes into `buf`.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), 8, libc::GRND_NONBLOCK) };
    let mut k = usize::from_ne_bytes(buf);
    if n != 8 {
        // No entropy yet (early boot): the address-space layout is random too.
        k = (&buf as *const _ as usize).rotate_left(29)
            ^ (init_free_key as *const () as usize)
            ^ 0x5ac0_f4ee;
    }
    k = (k | 2) & !1;
    // A race between two first threads is harmless: one key wins before
    // either hands out a chunk (both run this in `take_slot`).
    let _ = FREE_KEY.compare_exchange(0, k, Relaxed, Relaxed);
}

/// Takes a chunk from the arena's list, else from its current subheap;
/// null when neither has one.
#[inline(always)]
pub(crate) fn alloc_fast(arena: &mut SmallArena) -> *mut u8 {
    let c = arena.list;
    if !c.is_null() {
        // SAFETY: a chunk on the arena's list holds the next one in its
        // first word; it is now the caller's, its key word cleared.
        unsafe {
            arena.list = *c as *mut usize;
            c.add(1).write(0);
        }
        arena.room += 1;
        return c.cast();
    }
    let m = arena.current;
    if m.is_null() {
        return core::ptr::null_mut();
    }
    // SAFETY: `current` points at the metadata of a taken slot of a live
    // region of this thread (only the owner runs this).
    let m = unsafe { &mut *m };
    let chunk = if !m.free.is_null() {
        let c = m.free;
        // SAFETY: a chunk on the free list holds the next one in its first word.
        m.free = unsafe { *c as *mut usize };
        c
    } else if m.bump < m.limit {
        let c = (m.base + m.bump as usize) as *mut usize;
        m.bump += m.size;
        c
    } else {
        return core::ptr::null_mut();
    };
    // SAFETY: a chunk of at least 16 bytes, now the caller's: its key word
    // is cleared (a stale key would only cost a free a list walk).
    unsafe { chunk.add(1).write(0) };
    m.used += 1;
    chunk.cast()
}

fn has_room(m: &SubheapMeta) -> bool {
    !m.free.is_null() || m.bump < m.limit
}

/// Makes a listed subheap with free chunks current; with `grow`, takes a new
/// slot (and if needed a new local heap) when none is listed. `false` when
/// nothing could be found or the global heap refused memory.
pub(crate) fn refill(st: &mut LocalState, class: usize, grow: bool) -> bool {
    let arena = &mut st.small[class];
    if !arena.current.is_null() {
        // SAFETY: a current subheap is a live metadata entry of this thread.
        let cur = unsafe { &mut *arena.current };
        if has_room(cur) {
            return true;
        }
        // Full: it is listed again by the next free of one of its chunks.
        // (Full, so still at least one live chunk without the bias.)
        cur.used -= 1;
        cur.listed = false;
        arena.current = core::ptr::null_mut();
    }
    while !arena.listed.is_null() {
        // SAFETY: listed subheaps are live metadata entries of this thread.
        let m = unsafe { &mut *arena.listed };
        unlist(arena, m);
        if has_room(m) {
            // The current subheap counts as listed: frees do not list it.
            m.listed = true;
            m.used += 1;
            arena.current = m;
            return true;
        }
        m.listed = false;
    }
    if !grow {
        return false;
    }
    let Some(m) = take_slot(st, class) else {
        return false;
    };
    st.small[class].current = m;
    true
}

fn take_slot(st: &mut LocalState, class: usize) -> Option<*mut SubheapMeta> {
    init_free_key();
    let mut r = st.subheap_regions;
    while !r.is_null() {
        // SAFETY: the list holds live subheap regions of this thread.
        let region = unsafe { &mut *r };
        if region.free_slots != 0 {
            return Some(init_slot(region, class));
        }
        r = region.hdr.next.cast();
    }
    let base = global_heap::acquire_region(st.node, st.bind)?;
    let region = base.cast::<SubheapRegion>();
    // SAFETY: `base` is a fresh (zeroed) region of REGION_SIZE bytes that the
    // global heap gave to this thread; the header fits in slot 0.
    unsafe {
        (*region).hdr = RegionHeader {
            magic: REGION_MAGIC,
            kind: RegionKind::Subheaps,
            node: st.node,
            owner: st.owner,
            map_len: REGION_SIZE,
            next: st.subheap_regions.cast(),
        };
        (*region).free_slots = !1u64;
        (*region).free_key = free_key();
    }
    if !region_map::insert(base as usize) {
        // SAFETY: never handed out; empty.
        unsafe { global_heap::release_region(base) };
        return None;
    }
    st.subheap_regions = region;
    // SAFETY: just initialised above.
    Some(init_slot(unsafe { &mut *region }, class))
}

fn init_slot(region: &mut SubheapRegion, class: usize) -> *mut SubheapMeta {
    let slot = region.free_slots.trailing_zeros() as usize;
    region.free_slots &= !(1 << slot);
    let size = SMALL_CLASSES[class];
    let base = region as *mut SubheapRegion as usize + slot * SLOT_SIZE;
    let m = &mut region.metas[slot];
    m.free = core::ptr::null_mut();
    m.base = base;
    m.bump = 0;
    m.limit = ((SLOT_SIZE / size) * size) as u32;
    m.size = size as u32;
    m.recip = ((1u64 << 32) / size as u64 + 1) as u32;
    m.used = 1; // current from the start: the bias
    m.class = class as u8;
    m.listed = true;
    m.next_listed = core::ptr::null_mut();
    m.prev_listed = core::ptr::null_mut();
    m
}

/// The metadata of the taken slot `ptr` lies in, if any.
///
/// # Safety
/// `region` is a live subheap region.
unsafe fn meta_of(region: *mut SubheapRegion, ptr: usize) -> Option<*mut SubheapMeta> {
    // Slot 0 holds the region header; its metadata entry is never taken,
    // so its size stays 0 and the test below rejects it.
    let slot = (ptr - region as usize) >> SLOT_SHIFT;
    // SAFETY: slot < SLOTS because ptr lies in the region.
    let m = unsafe { core::ptr::addr_of_mut!((*region).metas[slot]) };
    // SAFETY: `m` is an entry of the live region's metadata.
    if unsafe { (*m).size } == 0 {
        return None;
    }
    Some(m)
}

/// Frees a small chunk (owner thread only).
///
/// # Safety
/// `region` is a live subheap region owned by the calling thread's heap,
/// `st` is that heap's state, and `ptr` lies in the region.
#[inline(always)]
pub(crate) unsafe fn free(
    st: &mut LocalState,
    region: *mut SubheapRegion,
    ptr: *mut u8,
) -> Result<(), Misuse> {
    let addr = ptr as usize;
    // SAFETY: guaranteed by the caller; this thread owns the metadata.
    let m = unsafe { &mut *chunk_start_meta(region, addr, true)? };
    // SAFETY: `addr` starts a chunk (of at least 16 bytes) of this subheap;
    // the region is live.
    let (key_word, key) = unsafe { (*(addr as *const usize).add(1), (*region).free_key) };
    let class = m.class as usize;
    if key_word & !1 == key {
        return free_suspect(st, m, addr, key_word, key);
    }
    // SAFETY: a live chunk of this thread's arena `class`.
    unsafe { push(st, class, addr, key) }
}

/// A free found the key in the chunk: a double free, or a program value
/// that happens to equal it.
#[cold]
#[inline(never)]
fn free_suspect(
    st: &mut LocalState,
    m: &SubheapMeta,
    addr: usize,
    key_word: usize,
    key: usize,
) -> Result<(), Misuse> {
    if is_double_free(st, m, addr, key_word) {
        return Err(Misuse::DoubleFree { addr });
    }
    // SAFETY: not on any list after all: a live chunk of this thread.
    unsafe { push(st, m.class as usize, addr, key) }
}

/// Puts the live chunk at `addr` of class `class` on its arena's list
/// (giving the list back to the subheaps first if it is full).
///
/// # Safety
/// `addr` starts a live chunk of class `class` of a subheap of this thread
/// (`st`), not on any list; `key` is the free key.
#[inline(always)]
unsafe fn push(st: &mut LocalState, class: usize, addr: usize, key: usize) -> Result<(), Misuse> {
    // SAFETY: `class` is a chunk's class, below NUM_SMALL.
    let arena = unsafe { st.small.get_unchecked_mut(class) };
    if arena.room == 0 {
        // SAFETY: passed on.
        return unsafe { push_to_full(st, class, addr, key) };
    }
    // SAFETY: the chunk is free now and ours; its first word takes the link,
    // its second the key.
    unsafe {
        *(addr as *mut usize) = arena.list as usize;
        *(addr as *mut usize).add(1) = key;
    }
    arena.list = addr as *mut usize;
    arena.room -= 1;
    Ok(())
}

/// [`push`] for the rich interface's unchecked free: the key comes from
/// the chunk's region.
///
/// # Safety
/// As for [`push`]; `region` is the chunk's (live) subheap region.
#[inline(always)]
pub(crate) unsafe fn push_unchecked(
    st: &mut LocalState,
    region: *mut SubheapRegion,
    addr: usize,
    class: usize,
) {
    // SAFETY: passed on; the region is live. (`push` itself never fails:
    // its result type is that of the frees that end with it.)
    let _ = unsafe { push(st, class, addr, (*region).free_key) };
}

/// [`push`] onto a full list: the list goes back to the subheaps first.
///
/// # Safety
/// As for [`push`].
#[cold]
#[inline(never)]
unsafe fn push_to_full(
    st: &mut LocalState,
    class: usize,
    addr: usize,
    key: usize,
) -> Result<(), Misuse> {
    give_back_list(st, class);
    // SAFETY: passed on; the list has room now.
    unsafe { push(st, class, addr, key) }
}

/// Gives every chunk on the arena's list back to its subheap.
#[cold]
#[inline(never)]
fn give_back_list(st: &mut LocalState, class: usize) {
    let mut c = core::mem::replace(&mut st.small[class].list, core::ptr::null_mut());
    st.small[class].room = list_room(class);
    while !c.is_null() {
        let addr = c as usize;
        // SAFETY: a chunk on the list links to the next in its first word;
        // read before `release` rewrites it.
        c = unsafe { *c as *mut usize };
        let region = crate::region::base_of(addr) as *mut SubheapRegion;
        // SAFETY: a chunk on this thread's arena list is a chunk start of a
        // taken slot of a live subheap region of this thread, counted as
        // used there.
        unsafe {
            let m = &mut *meta_of(region, addr).expect("a listed chunk's slot is taken");
            release(st, region, m, addr);
        }
    }
}

/// Gives every arena list of the thread back to the subheaps (so that
/// emptied subheaps release their slots now).
pub(crate) fn give_back_lists(st: &mut LocalState) {
    for class in 0..NUM_SMALL {
        if !st.small[class].list.is_null() {
            give_back_list(st, class);
        }
    }
}

/// Frees a chunk of class `class` that the rich interface knows to be a
/// chunk start of this heap manager (owner thread only): the chunk-index
/// and class checks are made in debug builds only; the double-free check
/// always.
///
/// # Safety
/// As for [`free`], and `ptr` is the start of a chunk that the arena of
/// class `class` handed out.
#[inline(always)]
pub(crate) unsafe fn free_known(
    st: &mut LocalState,
    region: *mut SubheapRegion,
    ptr: *mut u8,
    class: usize,
) -> Result<(), Misuse> {
    let addr = ptr as usize;
    if cfg!(debug_assertions) {
        // SAFETY: passed on from the caller.
        let m = unsafe { &*chunk_start_meta(region, addr, true)? };
        assert_eq!(
            m.class as usize, class,
            "numagc-arena: rich free of {addr:#x} with the handle of another size class"
        );
    }
    // SAFETY: `addr` starts a chunk (of at least 16 bytes) of this subheap;
    // the region is live.
    let (key_word, key) = unsafe { (*(addr as *const usize).add(1), (*region).free_key) };
    if key_word & !1 == key {
        // SAFETY: passed on.
        return unsafe { free_known_suspect(st, region, addr, key_word, key) };
    }
    // SAFETY: a live chunk of this thread's arena `class`.
    unsafe { push(st, class, addr, key) }
}

/// [`free_known`] found the key in the chunk.
///
/// # Safety
/// As for [`free_known`].
#[cold]
#[inline(never)]
unsafe fn free_known_suspect(
    st: &mut LocalState,
    region: *mut SubheapRegion,
    addr: usize,
    key_word: usize,
    key: usize,
) -> Result<(), Misuse> {
    // SAFETY: the chunk start lies in a taken slot of the live region.
    let m = unsafe { &*meta_of(region, addr).ok_or(Misuse::NotAChunk { addr })? };
    free_suspect(st, m, addr, key_word, key)
}

/// Frees a chunk that another thread handed back (its checks were made by
/// that thread; the owner takes it from its remote-free list).
///
/// # Safety
/// As for [`free`]; `ptr` was pushed on this heap's remote-free list after
/// [`check_remote_free`] accepted it.
pub(crate) unsafe fn free_taken(
    st: &mut LocalState,
    region: *mut SubheapRegion,
    ptr: *mut u8,
) -> Result<(), Misuse> {
    let addr = ptr as usize;
    // SAFETY: guaranteed by the caller; this thread owns the metadata.
    let m = unsafe { &mut *chunk_start_meta(region, addr, true)? };
    // SAFETY: a chunk of this thread's subheap `m`, taken off the remote list.
    unsafe { release(st, region, m, addr) };
    Ok(())
}

/// The metadata of the subheap whose chunk starts at `addr` (below its
/// bump offset when `owner`: only the owner may read that field), or the
/// misuse.
///
/// # Safety
/// `region` is a live subheap region and `addr` lies in it.
#[inline(always)]
unsafe fn chunk_start_meta(
    region: *mut SubheapRegion,
    addr: usize,
    owner: bool,
) -> Result<*mut SubheapMeta, Misuse> {
    let m = if owner {
        // The owner skips the taken-slot test: a slot never taken or given
        // back has `bump == 0` (and `size == 0`), which the tests below
        // reject for every offset.
        let slot = (addr - region as usize) >> SLOT_SHIFT;
        // SAFETY: slot < SLOTS because addr lies in the region.
        unsafe { core::ptr::addr_of_mut!((*region).metas[slot]) }
    } else {
        // SAFETY: guaranteed by the caller.
        match unsafe { meta_of(region, addr) } {
            Some(m) => m,
            None => return Err(Misuse::NotAChunk { addr }),
        }
    };
    // SAFETY: `m` is live metadata; `base`, `size` and `recip` are fixed
    // while the slot has a live chunk (and a misused pointer into a slot
    // being re-taken reads values that fail the check or name a chunk
    // start, never memory outside the region); `bump` is read only by the
    // owner.
    let (base, size, recip) = unsafe { ((*m).base, (*m).size, (*m).recip) };
    let off = addr - base;
    let index = (off as u64 * recip as u64) >> 32;
    if index as usize * size as usize != off || (owner && off >= unsafe { (*m).bump } as usize) {
        return Err(Misuse::NotAChunk { addr });
    }
    Ok(m)
}

/// A key word was found in the chunk at `addr`: is it really free?
#[cold]
fn is_double_free(st: &LocalState, m: &SubheapMeta, addr: usize, key_word: usize) -> bool {
    if key_word & 1 == 1 {
        return true; // on the owner's remote-free list
    }
    let on = |mut c: *mut usize| {
        while !c.is_null() {
            if c as usize == addr {
                return true;
            }
            // SAFETY: chunks on a free list link to the next in their first word.
            c = unsafe { *c as *mut usize };
        }
        false
    };
    let arena = &st.small[m.class as usize];
    on(arena.list) || on(m.free)
}

/// Puts the chunk at `addr` on `m`'s free list and does the bookkeeping.
///
/// # Safety
/// `addr` starts a chunk of `m`, a taken slot of `region` (a live subheap
/// region of this thread, `st` its heap's state), and is not on a list.
#[inline(always)]
unsafe fn release(
    st: &mut LocalState,
    region: *mut SubheapRegion,
    m: &mut SubheapMeta,
    addr: usize,
) {
    // SAFETY: the chunk is free now and ours; its first word takes the link,
    // its second the key.
    unsafe {
        *(addr as *mut usize) = m.free as usize;
        *(addr as *mut usize).add(1) = (*region).free_key;
    }
    m.free = addr as *mut usize;
    m.used -= 1;
    // Zero only when not current (the bias).
    if m.used == 0 || !m.listed {
        // SAFETY: passed on from the caller.
        unsafe { relist(st, region, m) };
    }
}

/// A free left `m` empty or unlisted: give its slot back, or list it.
///
/// # Safety
/// As for [`release`].
#[inline(never)]
unsafe fn relist(st: &mut LocalState, region: *mut SubheapRegion, m: &mut SubheapMeta) {
    let arena = &mut st.small[m.class as usize];
    if m.used == 0 {
        // Empty and not current: the slot goes back to its local heap, for
        // any class.
        if m.listed {
            unlist(arena, m);
        }
        // SAFETY: the slot has no live chunk and is on no list.
        unsafe { release_slot(st, region, m) };
    } else if !m.listed {
        m.listed = true;
        m.next_listed = arena.listed;
        m.prev_listed = core::ptr::null_mut();
        if !arena.listed.is_null() {
            // SAFETY: listed subheaps are live metadata entries of this thread.
            unsafe { (*arena.listed).prev_listed = m };
        }
        arena.listed = m;
    }
}

/// Takes `m` off its arena's list (it stays marked `listed`; callers decide).
fn unlist(arena: &mut SmallArena, m: &mut SubheapMeta) {
    // SAFETY: the neighbours on the list are live metadata entries of this thread.
    unsafe {
        if m.prev_listed.is_null() {
            arena.listed = m.next_listed;
        } else {
            (*m.prev_listed).next_listed = m.next_listed;
        }
        if !m.next_listed.is_null() {
            (*m.next_listed).prev_listed = m.prev_listed;
        }
    }
    m.next_listed = core::ptr::null_mut();
    m.prev_listed = core::ptr::null_mut();
    m.listed = false;
}

/// Gives an empty subheap's slot back to its local heap, and a local heap
/// with no subheap left back to the global heap (unless it is the one new
/// slots are taken from first, so a thread that empties and refills its
/// heap does not map and unmap every time).
///
/// # Safety
/// `m` is the metadata of a taken slot of `region`, a live subheap region of
/// this thread, with no live chunk and on no list.
unsafe fn release_slot(st: &mut LocalState, region: *mut SubheapRegion, m: &mut SubheapMeta) {
    let slot = (m.base - region as usize) >> SLOT_SHIFT;
    m.size = 0;
    m.bump = 0; // the owner's free rejects every offset of an untaken slot
    m.free = core::ptr::null_mut();
    st.stats.subheaps_released += 1;
    // Raw field accesses: `m` points into the same region.
    // SAFETY: guaranteed by the caller (a live region of this thread).
    let (free_slots, next) = unsafe {
        let fs = core::ptr::addr_of_mut!((*region).free_slots);
        *fs |= 1 << slot;
        (*fs, (*region).hdr.next)
    };
    if free_slots != !1u64 || core::ptr::eq(st.subheap_regions, region) {
        return;
    }
    // Unlink it from the thread's list of subheap regions.
    let mut link: *mut *mut SubheapRegion = &mut st.subheap_regions;
    // SAFETY: the list holds live subheap regions of this thread, and
    // `region` is on it.
    unsafe {
        while *link != region {
            link = core::ptr::addr_of_mut!((**link).hdr.next).cast();
        }
        *link = next.cast();
    }
    region_map::remove(region as usize);
    // SAFETY: no live chunk, off every list and the region map.
    unsafe { global_heap::release_region(region.cast()) };
    st.stats.subheap_heaps_released += 1;
}

/// Chunk size of a live small chunk; for `usable_size` and `origin`, which
/// any thread may call on a chunk it holds.
///
/// # Safety
/// `region` is a live subheap region and `ptr` lies in it.
pub(crate) unsafe fn chunk_info(region: *mut SubheapRegion, ptr: usize) -> Option<(usize, usize)> {
    // SAFETY: guaranteed by the caller; a taken slot's base and size do not
    // change while it has a live chunk.
    unsafe {
        let m = meta_of(region, ptr)?;
        let (base, size) = ((*m).base, (*m).size as usize);
        let start = base + (ptr - base) / size * size;
        Some((start, size))
    }
}

/// Small-chunk counts of one thread heap, for tests and reports.
pub(crate) fn count_live(st: &LocalState) -> (usize, usize) {
    let (mut subheaps, mut live) = (0, 0);
    let mut r = st.subheap_regions;
    while !r.is_null() {
        // SAFETY: the list holds live subheap regions of this thread.
        let region = unsafe { &*r };
        for m in &region.metas[1..] {
            if m.size != 0 {
                subheaps += 1;
                let current = core::ptr::eq(st.small[m.class as usize].current, m);
                live += m.used as usize - current as usize;
            }
        }
        r = region.hdr.next.cast();
    }
    // Chunks on the arenas' lists count as used in their subheaps.
    for (class, a) in st.small.iter().enumerate() {
        live -= (list_room(class) - a.room) as usize;
    }
    (subheaps, live)
}

/// The checks a thread other than the owner makes before handing a chunk
/// back (`ptr` starts a chunk of a taken slot, which is not free), then the
/// remote key that marks it as on its way back.
///
/// # Safety
/// `region` is a live subheap region and `ptr` lies in it; if the checks
/// pass, the caller pushes the chunk on its owner's remote-free list.
pub(crate) unsafe fn check_remote_free(
    region: *mut SubheapRegion,
    ptr: usize,
) -> Result<usize, Misuse> {
    // SAFETY: guaranteed by the caller. A legitimately freed chunk is live,
    // so its slot's base and size are not being rewritten.
    let m = unsafe { chunk_start_meta(region, ptr, false)? };
    // SAFETY: as above.
    let size = unsafe { (*m).size } as usize;
    // SAFETY: a chunk start of at least 16 bytes in a live slot; a live
    // chunk is the caller's to read and write. (If the program frees a
    // free chunk, the owner may be writing it now; the read then sees a key
    // or garbage, and only a misuse is affected.)
    unsafe {
        let key_word = (ptr as *mut usize).add(1);
        let key = (*region).free_key;
        if *key_word & !1 == key {
            return Err(Misuse::DoubleFree { addr: ptr });
        }
        *key_word = key | 1;
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reciprocal_gives_the_exact_chunk_index_for_every_offset_and_class() {
        for &size in &SMALL_CLASSES {
            let recip = ((1u64 << 32) / size as u64 + 1) as u32;
            for off in 0..SLOT_SIZE as u64 {
                assert_eq!(
                    (off * recip as u64) >> 32,
                    off / size as u64,
                    "size {size} offset {off}"
                );
            }
        }
    }
}
