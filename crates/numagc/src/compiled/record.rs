//! The mutator record: the per-vproc words that compiled code reads and
//! writes directly (issue 18), with a layout that is part of the ABI.
//!
//! | offset | field | written by |
//! |---|---|---|
//! | 0 | `alloc_ptr` | the mutator (the bump), the plan after a collection |
//! | 8 | `alloc_limit` | the plan (end of the bump region), the leader of a collection or a signaller (zero: §3.4's limit trick) |
//! | 16 | `roots_top` | the mutator (push and pop of frames) |
//! | 24 | `roots_limit` | the runtime (end of the root stack's reservation) |
//! | 32 | `roots_base` | the runtime |
//! | 40 | `barrier_lo` | the plan at set-up |
//! | 48 | `barrier_len` | the plan at set-up |
//! | 56 | `plan` | the runtime (0 split, 1 shared) |
//! | 60 | `remember_all` | the plan: 1 when every store into a mutable object takes the slow path |
//!
//! The record is one cache line (64 bytes); it lives in the coordinator
//! (`gc::handshake`), cache-padded per vproc, so the leader of a collection
//! can zero a vproc's limit without touching anything else of it.
//!
//! Invariant: `alloc_limit` is the only field another thread writes; it is
//! atomic and keeps the fenced store/load pair of `Coordinator::set_limit`
//! (its loom model covers it). Every other field is written by the owning
//! vproc's thread only — or by its proxy while the vproc is in a blocking
//! section, or by a collector while every vproc is stopped, both of which
//! the handshake orders with the owner — so they are plain cells.
//!
//! The root stack is a fixed reservation (`MAP_NORESERVE`, committed as it
//! is touched) that never moves: compiled code holds raw pointers to its
//! frames, so the stack cannot be reallocated under it. Overflowing it is
//! an error of the program, like overflowing a thread's stack.

use crate::sync::{AtomicUsize, Ordering};
use std::cell::UnsafeCell;

/// The per-vproc record of the compiled-code interface (`#[repr(C)]`; the
/// offsets are [`MutatorRecord::OFFSETS`] and `numagc_inline.h`'s).
#[repr(C)]
pub struct MutatorRecord {
    alloc_ptr: UnsafeCell<usize>,
    pub(crate) alloc_limit: AtomicUsize,
    roots_top: UnsafeCell<*mut u64>,
    roots_limit: UnsafeCell<*mut u64>,
    roots_base: UnsafeCell<*mut u64>,
    barrier_lo: UnsafeCell<usize>,
    barrier_len: UnsafeCell<usize>,
    plan: UnsafeCell<u32>,
    remember_all: UnsafeCell<u32>,
}

// SAFETY: `alloc_limit` is atomic; every other field is touched by one
// thread at a time, ordered by the handshake (see the module doc).
unsafe impl Sync for MutatorRecord {}
// SAFETY: as for `Sync`; the raw pointers name the root stack's mapping,
// which belongs to the vproc, not to a thread.
unsafe impl Send for MutatorRecord {}

/// Field offsets, for code generators and the C header's layout test.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordOffsets {
    pub alloc_ptr: usize,
    pub alloc_limit: usize,
    pub roots_top: usize,
    pub roots_limit: usize,
    pub roots_base: usize,
    pub barrier_lo: usize,
    pub barrier_len: usize,
    pub plan: usize,
    pub remember_all: usize,
    pub size: usize,
}

impl MutatorRecord {
    /// The offsets of the record's fields.
    #[cfg(not(loom))]
    pub const OFFSETS: RecordOffsets = RecordOffsets {
        alloc_ptr: std::mem::offset_of!(MutatorRecord, alloc_ptr),
        alloc_limit: std::mem::offset_of!(MutatorRecord, alloc_limit),
        roots_top: std::mem::offset_of!(MutatorRecord, roots_top),
        roots_limit: std::mem::offset_of!(MutatorRecord, roots_limit),
        roots_base: std::mem::offset_of!(MutatorRecord, roots_base),
        barrier_lo: std::mem::offset_of!(MutatorRecord, barrier_lo),
        barrier_len: std::mem::offset_of!(MutatorRecord, barrier_len),
        plan: std::mem::offset_of!(MutatorRecord, plan),
        remember_all: std::mem::offset_of!(MutatorRecord, remember_all),
        size: std::mem::size_of::<MutatorRecord>(),
    };

    fn new() -> MutatorRecord {
        MutatorRecord {
            alloc_ptr: UnsafeCell::new(0),
            alloc_limit: AtomicUsize::new(0),
            roots_top: UnsafeCell::new(std::ptr::null_mut()),
            roots_limit: UnsafeCell::new(std::ptr::null_mut()),
            roots_base: UnsafeCell::new(std::ptr::null_mut()),
            barrier_lo: UnsafeCell::new(0),
            barrier_len: UnsafeCell::new(0),
            plan: UnsafeCell::new(0),
            remember_all: UnsafeCell::new(0),
        }
    }

    // The accessors below are for the owning thread (module invariant).
    // SAFETY (all of them): plain loads and stores of cells that no other
    // thread touches while the owner runs; no reference into a cell is
    // ever handed out.

    #[inline(always)]
    pub(crate) fn alloc_ptr(&self) -> usize {
        // SAFETY: see above.
        unsafe { *self.alloc_ptr.get() }
    }
    #[inline(always)]
    pub(crate) fn set_alloc_ptr(&self, p: usize) {
        // SAFETY: see above.
        unsafe { *self.alloc_ptr.get() = p }
    }
    #[inline(always)]
    pub(crate) fn limit(&self) -> usize {
        self.alloc_limit.load(Ordering::Relaxed)
    }

    /// The nursery bump every inline allocation makes (the compiled
    /// fast paths, the safe API's, the vproc's): the address of `bytes`
    /// fresh bytes with the allocation pointer moved past them and the
    /// line ahead prefetched (`heap::prefetch`), or `None` past the limit,
    /// where the caller takes its slow path.
    #[inline(always)]
    pub(crate) fn bump(&self, bytes: usize) -> Option<usize> {
        let p = self.alloc_ptr();
        let next = p + bytes;
        if next > self.limit() {
            return None;
        }
        self.set_alloc_ptr(next);
        crate::heap::prefetch::for_write(next + crate::heap::prefetch::DISTANCE);
        Some(p)
    }
    #[inline(always)]
    pub(crate) fn roots_top(&self) -> *mut u64 {
        // SAFETY: see above.
        unsafe { *self.roots_top.get() }
    }
    #[inline(always)]
    pub(crate) fn set_roots_top(&self, p: *mut u64) {
        // SAFETY: see above.
        unsafe { *self.roots_top.get() = p }
    }
    #[inline(always)]
    pub(crate) fn roots_base(&self) -> *mut u64 {
        // SAFETY: see above.
        unsafe { *self.roots_base.get() }
    }
    #[inline(always)]
    pub(crate) fn roots_limit(&self) -> *mut u64 {
        // SAFETY: see above.
        unsafe { *self.roots_limit.get() }
    }
    #[inline(always)]
    pub(crate) fn barrier(&self) -> (usize, usize) {
        // SAFETY: see above.
        unsafe { (*self.barrier_lo.get(), *self.barrier_len.get()) }
    }
    #[inline(always)]
    pub(crate) fn plan(&self) -> u32 {
        // SAFETY: see above.
        unsafe { *self.plan.get() }
    }
    #[inline(always)]
    pub(crate) fn remember_all(&self) -> bool {
        // SAFETY: see above.
        unsafe { *self.remember_all.get() != 0 }
    }
    /// Sets the fields the plan decides (at vproc start).
    pub(crate) fn set_plan(&self, plan: u32, barrier: (usize, usize), remember_all: bool) {
        // SAFETY: see above.
        unsafe {
            *self.plan.get() = plan;
            *self.barrier_lo.get() = barrier.0;
            *self.barrier_len.get() = barrier.1;
            *self.remember_all.get() = remember_all as u32;
        }
    }

    /// Points the record at a root stack (at vproc start).
    fn set_roots(&self, base: *mut u64, limit: *mut u64) {
        // SAFETY: see above.
        unsafe {
            *self.roots_base.get() = base;
            *self.roots_top.get() = base;
            *self.roots_limit.get() = limit;
        }
    }
}

/// A mutator record and, beside it, what the slow paths of register code
/// (`super::registers`) need and compiled code never reads: the vproc
/// that runs the register code. Every record lives in one of these (in
/// the coordinator, one per vproc), so register code is handed the
/// record's address alone (`Ctx`), as OCaml's native code keeps only the
/// domain state's address in a register. Not part of the ABI: the C
/// record is the first 64 bytes.
#[repr(C)]
pub(crate) struct RecordSlot {
    rec: MutatorRecord,
    /// The vproc that runs register code on this record, set by
    /// `Mutator::ctx` (which holds the scope's `&mut` borrow of it) before
    /// the code gets the record; read by its slow paths, on that vproc's
    /// thread.
    vproc: UnsafeCell<*mut crate::vproc::Vproc>,
}

// SAFETY: the record is `Sync` (its module invariant); `vproc` is written
// and read only by the thread running the vproc's register code.
unsafe impl Sync for RecordSlot {}
// SAFETY: as for `Sync`.
unsafe impl Send for RecordSlot {}

impl RecordSlot {
    pub(crate) fn new() -> RecordSlot {
        RecordSlot {
            rec: MutatorRecord::new(),
            vproc: UnsafeCell::new(std::ptr::null_mut()),
        }
    }

    pub(crate) fn record(&self) -> &MutatorRecord {
        &self.rec
    }

    /// The slot that holds `rec` (every record is the first field of one).
    #[inline(always)]
    pub(crate) fn of(rec: &MutatorRecord) -> &RecordSlot {
        // SAFETY: `MutatorRecord::new` is private to this module and
        // called only by `RecordSlot::new`, so every record is the first
        // field of a `#[repr(C)]` slot, at the slot's address; the slot
        // lives as long as the record.
        unsafe { &*(rec as *const MutatorRecord as *const RecordSlot) }
    }

    /// Records `v` as the vproc running register code on this record.
    #[inline(always)]
    pub(crate) fn set_vproc(&self, v: *mut crate::vproc::Vproc) {
        // SAFETY: only the owning thread touches the cell (see the field).
        unsafe { *self.vproc.get() = v }
    }

    #[inline(always)]
    pub(crate) fn vproc(&self) -> *mut crate::vproc::Vproc {
        // SAFETY: as in `set_vproc`.
        unsafe { *self.vproc.get() }
    }
}

/// Slots of a root stack's reservation (8 bytes each): 2^25 = 32 Mi slots,
/// 256 MiB of address space per vproc, committed only as it is touched
/// (the same bound as the default `vproc-stack`).
pub(crate) const ROOT_STACK_SLOTS: usize = 1 << 25;

/// A vproc's root stack: a reservation that never moves, whose bounds and
/// top are in the vproc's [`MutatorRecord`]. Slots `[base, top)` are roots;
/// the collectors scan and update them.
///
/// Invariant: `base <= top <= limit`, all 8-aligned, inside the mapping;
/// only the owning vproc's thread (or a collector or proxy acting for it,
/// see the record's invariant) touches the stack.
pub(crate) struct RootStack {
    rec: *const MutatorRecord,
    mapping: usize,
    bytes: usize,
}

// SAFETY: the stack owns its mapping; `rec` points into the coordinator,
// which outlives every vproc (both are kept by `Shared`); the owning-thread
// invariant is kept by the vproc that holds the stack.
unsafe impl Send for RootStack {}

/// The slot a root push could not get: the root stack is full.
#[cold]
#[inline(never)]
fn overflow(slots: usize) -> ! {
    panic!(
        "root stack overflow: {slots} root slots in use on this vproc (the \
         limit is {ROOT_STACK_SLOTS}); a scope or frame is not popped, or a \
         recursion is unbounded"
    )
}

impl RootStack {
    /// Reserves a root stack of `slots` slots (not yet attached to a record).
    pub(crate) fn reserve(slots: usize) -> crate::Result<RootStack> {
        let bytes = slots * 8;
        let p =
            crate::heap::space::map_reserved(bytes).map_err(|f| f.error("a vproc's root stack"))?;
        Ok(RootStack {
            rec: std::ptr::null(),
            mapping: p,
            bytes,
        })
    }

    /// Attaches the stack to its vproc's record (empty).
    pub(crate) fn attach(&mut self, rec: &MutatorRecord) {
        let base = self.mapping as *mut u64;
        rec.set_roots(base, (self.mapping + self.bytes) as *mut u64);
        self.rec = rec;
    }

    #[inline(always)]
    fn rec(&self) -> &MutatorRecord {
        // SAFETY: set by `attach` before the vproc runs anything; the
        // coordinator that holds the record outlives the vproc.
        unsafe { &*self.rec }
    }

    /// The root-stack operations on this stack's record.
    #[inline(always)]
    pub(crate) fn ops(&self) -> Roots<'_> {
        Roots(self.rec())
    }

    /// Slots in use.
    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.ops().len()
    }

    /// Pops every slot from `n` up (no-op when fewer are in use).
    #[inline(always)]
    pub(crate) fn truncate(&self, n: usize) {
        self.ops().truncate(n)
    }

    pub(crate) fn clear(&self) {
        self.truncate(0)
    }

    /// The slots in use, for collectors and the verifier (`&mut self`: no
    /// push can happen while the slice lives).
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u64] {
        let len = self.len();
        // SAFETY: `[base, base + len)` is inside the mapping, initialised
        // (every slot below the top was written by a push or a frame), and
        // `&mut self` excludes every other access for the slice's life.
        unsafe { std::slice::from_raw_parts_mut(self.rec().roots_base(), len) }
    }

    /// A copy of slots `[from, to)`.
    pub(crate) fn copy_range(&self, from: usize, to: usize) -> Vec<u64> {
        self.ops().copy_range(from, to)
    }

    /// Gives back the memory of the slots above the top (the mapping stays).
    pub(crate) fn shrink(&self) {
        let page = 4096usize;
        let top = (self.rec().roots_top() as usize).next_multiple_of(page);
        let end = self.mapping + self.bytes;
        if top < end {
            // SAFETY: `[top, end)` is inside our mapping and above every
            // slot in use; its contents are not needed (pushes rewrite
            // what they use).
            unsafe {
                libc::madvise(top as *mut libc::c_void, end - top, libc::MADV_DONTNEED);
            }
        }
    }
}

/// The root-stack operations, on the fields of a record (what handles and
/// frames use: [`RootStack`] for the vproc, and the safe API's scopes,
/// which keep the record's address so that a handle is one dependent load
/// away, as it was when the root stack was a `Vec` in the vproc).
#[derive(Clone, Copy)]
pub(crate) struct Roots<'a>(pub(crate) &'a MutatorRecord);

impl Roots<'_> {
    /// Slots in use.
    #[inline(always)]
    pub(crate) fn len(self) -> usize {
        let r = self.0;
        (r.roots_top() as usize - r.roots_base() as usize) / 8
    }

    /// Pushes `w` into a new slot.
    #[inline(always)]
    pub(crate) fn push(self, w: u64) {
        self.push_slot(w);
    }

    /// Pushes `w` into a new slot and returns the slot's index (the top
    /// is loaded once for both: a handle's push is on every allocation of
    /// the safe API).
    #[inline(always)]
    pub(crate) fn push_slot(self, w: u64) -> usize {
        self.index_of(self.push_addr(w).as_ptr())
    }

    /// Pushes `w` into a new slot and returns the slot's address (a typed
    /// handle's, `mutator::typed`).
    #[inline(always)]
    pub(crate) fn push_addr(self, w: u64) -> std::ptr::NonNull<u64> {
        let r = self.0;
        let top = r.roots_top();
        if top == r.roots_limit() {
            overflow(self.len());
        }
        // SAFETY: `top` is below the limit, inside the mapping (so not
        // null).
        unsafe {
            top.write(w);
            r.set_roots_top(top.add(1));
            std::ptr::NonNull::new_unchecked(top)
        }
    }

    /// Pushes `N` slots holding `NIL` at once (a frame of the safe API,
    /// `mutator::frame`) and returns the first one's address: one store
    /// of the top for all of them.
    #[inline(always)]
    pub(crate) fn push_nil<const N: usize>(self) -> std::ptr::NonNull<u64> {
        let r = self.0;
        let top = r.roots_top();
        if (r.roots_limit() as usize - top as usize) / 8 < N {
            overflow(self.len());
        }
        // SAFETY: `N` slots from `top` are below the limit, inside the
        // mapping (so not null).
        unsafe {
            for i in 0..N {
                top.add(i).write(crate::object::NIL);
            }
            r.set_roots_top(top.add(N));
            std::ptr::NonNull::new_unchecked(top)
        }
    }

    /// The index of the slot at `p`, an address inside the root stack.
    #[inline(always)]
    pub(crate) fn index_of(self, p: *mut u64) -> usize {
        (p as usize).wrapping_sub(self.0.roots_base() as usize) / 8
    }

    /// Pops every slot from `n` up (no-op when fewer are in use).
    #[inline(always)]
    pub(crate) fn truncate(self, n: usize) {
        let r = self.0;
        // Compared as addresses (no length computed); `wrapping_add` so
        // that an `n` past the mapping is just "not below the top".
        let p = r.roots_base().wrapping_add(n);
        if p < r.roots_top() {
            r.set_roots_top(p);
        }
    }

    /// The top of the stack: the address the next push writes (a scope's
    /// base, `mutator::scope`).
    #[inline(always)]
    pub(crate) fn top(self) -> *mut u64 {
        self.0.roots_top()
    }

    /// Pops every slot from the address `p` up (no-op when `p` is at or
    /// above the top): [`Roots::truncate`] for a scope's base.
    #[inline(always)]
    pub(crate) fn truncate_at(self, p: *mut u64) {
        let r = self.0;
        if p < r.roots_top() {
            r.set_roots_top(p);
        }
    }

    /// Pops every slot from the address `p` up and pushes `w` into the
    /// slot at `p` (a nested scope's result kept in the scope around it: one store of the
    /// top where a truncation and a push would make two; `p` a scope's base, which is
    /// at most the top); returns `p`.
    #[inline(always)]
    pub(crate) fn truncate_push_at(self, p: *mut u64, w: u64) -> std::ptr::NonNull<u64> {
        let r = self.0;
        debug_assert!(
            p >= r.roots_base() && p <= r.roots_top(),
            "a scope's base is outside the stack"
        );
        if p >= r.roots_limit() {
            overflow(self.index_of(p));
        }
        // SAFETY: `p` is a scope's base, in `[base, top]`, and below the
        // limit (checked): a slot inside the mapping (so not null).
        unsafe {
            p.write(w);
            r.set_roots_top(p.add(1));
            std::ptr::NonNull::new_unchecked(p)
        }
    }

    /// The address of slot `i`, checked to be below the top.
    #[inline(always)]
    fn slot(self, i: usize) -> *mut u64 {
        let r = self.0;
        let base = r.roots_base();
        let p = base.wrapping_add(i);
        // Both bounds: an `i` so large that the address wraps would
        // otherwise pass as below the top.
        if p < base || p >= r.roots_top() {
            slot_not_in_use(i);
        }
        p
    }

    /// The address of slot `i` (not checked).
    #[inline(always)]
    pub(crate) fn slot_addr(self, i: usize) -> *mut u64 {
        self.0.roots_base().wrapping_add(i)
    }

    /// The value of the slot at `p`, checked to be a slot in use: at or
    /// above the base and below the top (a handle's, `mutator::scope`).
    #[inline(always)]
    pub(crate) fn get_at(self, p: *mut u64) -> u64 {
        let r = self.0;
        if p < r.roots_base() || p >= r.roots_top() {
            slot_not_in_use(self.index_of(p));
        }
        // SAFETY: `p` is in `[base, top)`, inside the mapping; handles'
        // slot addresses are 8-aligned (made from the stack's slots).
        unsafe { p.read() }
    }

    /// Slot `i`'s value.
    #[inline(always)]
    pub(crate) fn get(self, i: usize) -> u64 {
        // SAFETY: `slot` checked the address is in `[base, top)`, inside
        // the mapping.
        unsafe { self.slot(i).read() }
    }

    /// Stores `w` into slot `i`.
    #[inline(always)]
    pub(crate) fn set(self, i: usize, w: u64) {
        // SAFETY: as in `get`.
        unsafe { self.slot(i).write(w) }
    }

    /// A copy of slots `[from, to)`.
    pub(crate) fn copy_range(self, from: usize, to: usize) -> Vec<u64> {
        (from..to).map(|i| self.get(i)).collect()
    }
}

/// The panic of a handle whose slot is not in use, out of line: with the
/// message's formatting inline, every function that reads a handle kept
/// a stack frame for it (and a store of the index) on its fast path.
#[cold]
#[inline(never)]
fn slot_not_in_use(i: usize) -> ! {
    panic!("root slot {i} is not in use")
}

impl Drop for RootStack {
    fn drop(&mut self) {
        // SAFETY: the mapping was made by `reserve` with this length; the
        // vproc that used it has exited (the stack is dropped with it).
        unsafe {
            libc::munmap(self.mapping as *mut libc::c_void, self.bytes);
        }
    }
}
