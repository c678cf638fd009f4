//! The compiled-code interface (issue 18): what a compiler emits against
//! numagc, in place of the safe [`crate::Scope`] API.
//!
//! A language implementation does not call a collector through handles
//! and `Result`s for every cons cell: its compiler emits the allocation
//! inline against a limit, tells the collector where its roots are, and
//! reads known layouts directly. This module is that interface, the same
//! for every plan, in the manner of OCaml's young pointer and limit, MMTk
//! bindings' inlined bump allocator and Whippet's `gc-inline.h`:
//!
//! - **The mutator record** ([`MutatorRecord`], `record.rs`): one
//!   `#[repr(C)]` record per vproc whose layout is part of the ABI
//!   (`include/numagc_inline.h` mirrors it; a test compares the offsets).
//! - **Allocation** ([`Mutator::alloc`]): a bump of `alloc_ptr` and one
//!   compare with `alloc_limit`; past the limit, [`Mutator::alloc`] calls
//!   the plan's slow path out of line (it joins a pending collection,
//!   collects, refills the nursery).
//!   The header word of each allocation site is [`header`] of the
//!   layout's descriptor; a compiler that registers its layouts first,
//!   in a fixed order, knows their IDs when it compiles
//!   ([`crate::DescId::nth_registered`], checked against what
//!   [`crate::Runtime::register`] returns) and emits the header words as
//!   constants, as OCaml's headers and GHC's info pointers are.
//! - **Safepoints** ([`Mutator::poll`]): one load and one compare. The
//!   leader of a collection and a vproc asking for a task's environment
//!   zero the limit (§3.4's limit trick), so the poll and the allocation
//!   test are the same test.
//! - **Roots** ([`Frame`]): a shadow stack of frames of N slots, which is
//!   the vproc's root stack itself: the collectors scan and update it. A
//!   compiler keeps every value that is live across a call that may
//!   collect (an allocation, a poll, a store's slow path, a fork) in a
//!   frame slot, and reloads it afterwards. Stack maps (Cranelift's user
//!   stack maps, LLVM statepoints) would be a second root source beside
//!   the root stack, enumerated where the plans enumerate it today.
//! - **The store barrier** ([`Mutator::store`]): per plan, an inline test
//!   and an out-of-line slow path. Split plan: a value in the vproc's local
//!   heap is promoted before it is stored into a global object (§2.3),
//!   and with `young-global-gc` every store goes to the slow path to be
//!   remembered. Shared plan: the deletion barrier when the overwritten
//!   value is in the major heap, and the remembered set when the stored
//!   value is in a minor heap.
//! - **Reads** ([`Mutator::field`]): field `i` is the word at
//!   `obj + 8 + 8 i`, read without a check in release builds.
//! - **Register code** ([`Ctx`], [`Hp`], [`Sp`], [`Mutator::with_regs`],
//!   `registers.rs`): the allocation pointer and the stack's top held in
//!   locals that the program's functions pass and return, written to the
//!   record only by the slow paths that may collect, as GHC's `Hp`/`Sp`
//!   and OCaml's `r15`; its slow paths raise their errors ([`raise`],
//!   [`catch`]). The forms above, on the record, are for code that
//!   cannot thread them (C callbacks, loops around calls of the safe API).
//!
//! ## The contract (why [`crate::Scope::compiled`] is `unsafe`)
//!
//! 1. A value word held in a local variable is valid only until the next
//!    call that may collect: [`Mutator::alloc`], [`Mutator::alloc_shared`],
//!    [`Mutator::init_shared`], [`Mutator::poll`], [`Mutator::store`],
//!    [`Mutator::par2`], [`Mutator::collect_minor`] (and the `_out_of_line`
//!    and `_checked` forms of the C ABI). Values live across such a call
//!    are kept in frame slots. The words a [`Mutator::par2`] side receives
//!    follow the same rule: they are valid until that side's first such
//!    call, so a side keeps what it needs after one in a frame of its own.
//! 2. Every value field of an object from [`Mutator::alloc`] is written
//!    (with [`Mutator::init`]) before the next such call. `alloc` returns
//!    an object in the nursery, so the initialising stores need no
//!    barrier; stores into objects that may be shared (mutable ones, from
//!    [`Mutator::alloc_shared`]) go through [`Mutator::store`].
//! 3. Reads name live objects and fields within their length; stores go
//!    to fields of the right kind (values into value fields).
//! 4. Frames are popped in the reverse order of their pushes; a frame's
//!    slots are used only while it is pushed.
//!
//! Reads of immutable objects need no forwarding resolution, on either
//! plan: the split plan's promotion replaces only the *header* of the
//! local copy with the forwarding address and leaves its fields, which
//! hold the same values as the global copy's (its children, promoted too,
//! keep theirs) until the next local collection redirects every root; the
//! shared plan moves objects only inside collections, which update every
//! root. What a compiled read can see is therefore the same value, though
//! possibly at two addresses for a while (the physical identity of a
//! promoted immutable value is not kept, as in OCaml where `==` on
//! immutable values is unspecified). [`Mutator::header`] resolves the
//! forwarding, since a promoted object's header word is the forwarding
//! address.
//!
//! In debug builds the reads, the initialising stores and the frame
//! accessors check their arguments (the object's header, the field's
//! bound, the frame's size), and a minor collection fills the nursery it
//! emptied with a poison header, so a value held across a collection
//! without a frame slot is caught at its next use (`tests` in this
//! module, and the torture tester's compiled programs) — as long as the
//! nursery memory has not been allocated again since; after that, the
//! verifier may still find the value where it was stored.

mod fork;
pub(crate) mod record;
mod registers;
mod slow;
#[cfg(all(test, not(loom)))]
mod tests;

pub use record::{MutatorRecord, RecordOffsets};
pub(crate) use registers::Raised;
pub use registers::{catch, raise, Ctx, Hp, Sp};
#[cfg(debug_assertions)]
pub(crate) use slow::poison;

use crate::error::{Error, Result};
use crate::heap::prefetch;
use crate::mutator::Scope;
use crate::object::descriptor::DescId;
use crate::object::header::Header;
use crate::object::{is_pointer, Obj, NIL};
use crate::vproc::Vproc;
use std::marker::PhantomData;

/// The largest object [`Mutator::alloc`] takes, in fields: every smaller
/// object is below the smallest allowed `large-object` size (256 bytes),
/// so it always belongs in the nursery. Larger ones, and mutable ones, are
/// allocated by [`Mutator::alloc_shared`].
pub const MAX_SMALL_FIELDS: usize = 30;

/// The most words [`Mutator::alloc_many`] (the C ABI's
/// `numagc_inline_alloc_block`) reserves at once, headers included: 2 KiB,
/// far below the smallest nursery (64 KiB), so a block always fits one.
pub const MAX_BLOCK_WORDS: usize = 256;

/// How far past the allocation pointer the inline allocations prefetch a
/// line for writing, in bytes (`crate::heap::prefetch`; the C header's
/// `NUMAGC_ALLOC_PREFETCH_DISTANCE`).
pub const ALLOC_PREFETCH_DISTANCE: usize = prefetch::DISTANCE;

/// The header word of an object of descriptor `d` with `fields` fields
/// (mixed objects: the descriptor's size; vectors and raw data: any
/// length). Compilers compute it once per allocation site.
#[inline(always)]
pub const fn header(d: DescId, fields: usize) -> u64 {
    Header::new(d.0, fields as u64).bits()
}

/// The descriptor id of the built-in immutable vector (fields are values).
pub const VECTOR: DescId = DescId(crate::object::header::ID_VECTOR);
/// The descriptor id of raw data (fields are not values).
pub const RAW: DescId = DescId(crate::object::header::ID_RAW);
/// The descriptor id of the built-in mutable array (fields are values;
/// allocated with [`Mutator::alloc_shared`]).
pub const ARRAY: DescId = DescId(crate::object::header::ID_ARRAY);

/// A frame of the shadow stack: `len` root slots, valid while pushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    base: *mut u64,
    len: usize,
}

impl Frame {
    /// The value in slot `i`.
    #[inline(always)]
    pub fn get(self, i: usize) -> u64 {
        debug_assert!(i < self.len, "frame slot {i} of a frame of {}", self.len);
        // SAFETY: the frame is pushed (contract 4) and `i` within it.
        unsafe { self.base.add(i).read() }
    }

    /// Stores `w` into slot `i`.
    #[inline(always)]
    pub fn set(self, i: usize, w: u64) {
        debug_assert!(i < self.len, "frame slot {i} of a frame of {}", self.len);
        // SAFETY: as in `get`.
        unsafe { self.base.add(i).write(w) }
    }

    pub fn len(self) -> usize {
        self.len
    }

    pub fn is_empty(self) -> bool {
        self.len == 0
    }
}

/// The compiled-code view of a vproc, from [`crate::Scope::compiled`].
/// Frames still pushed when it is dropped are popped.
pub struct Mutator<'a> {
    rec: *const MutatorRecord,
    vp: *mut Vproc,
    /// The root stack's length when this mutator was made.
    base: usize,
    _scope: PhantomData<&'a mut ()>,
    _not_send: PhantomData<*const ()>,
}

impl<'s> Scope<'s> {
    /// The compiled-code interface of this scope's vproc (module
    /// [`crate::compiled`]). Handles of this scope stay valid; frames the
    /// mutator leaves pushed are popped when it is dropped.
    ///
    /// # Safety
    /// The caller keeps the contract of [`crate::compiled`]: values in
    /// locals only up to the next call that may collect, objects
    /// initialised before it, reads and stores of live objects within
    /// their layouts, frames popped in order.
    pub unsafe fn compiled(&mut self) -> Mutator<'_> {
        let vp: *mut Vproc = self.vproc_mut();
        // SAFETY: `vp` is this scope's vproc, borrowed for `'_`.
        let v = unsafe { &*vp };
        Mutator {
            rec: v.rec,
            vp,
            base: v.roots.len(),
            _scope: PhantomData,
            _not_send: PhantomData,
        }
    }
}

impl Scope<'_> {
    /// Checks a word from code that is not trusted before it is rooted
    /// (the C ABI's `numagc_word_value`): an immediate, or an object of
    /// this runtime's heap (8-aligned, in a chunk in use, with a header).
    pub fn check_word(&mut self, w: u64) -> std::result::Result<(), String> {
        if !is_pointer(w) {
            return Ok(());
        }
        slow::check_object(self.vproc_mut(), w).map(|_| ())
    }
}

impl<'a> Mutator<'a> {
    #[inline(always)]
    fn rec(&self) -> &MutatorRecord {
        // SAFETY: the record lives in the coordinator, which outlives the
        // vproc this mutator borrows.
        unsafe { &*self.rec }
    }

    #[inline(always)]
    /// A mutator of `v` whose frames are those pushed from now on.
    pub(super) fn on(v: &mut Vproc) -> Mutator<'_> {
        Mutator {
            rec: v.rec,
            base: v.roots.len(),
            vp: v,
            _scope: PhantomData,
            _not_send: PhantomData,
        }
    }

    /// The vproc, read-only (debug checks).
    #[cfg(debug_assertions)]
    fn vproc_ref(&self) -> &Vproc {
        // SAFETY: as in `vp`; the reference is only read.
        unsafe { &*self.vp }
    }

    fn vp(&mut self) -> &mut Vproc {
        // SAFETY: the mutator holds the scope's `&mut` borrow of the vproc.
        unsafe { &mut *self.vp }
    }

    /// The mutator record (its address is what compiled code keeps in a
    /// register).
    pub fn record(&self) -> &MutatorRecord {
        self.rec()
    }

    /// Checks the fields compiled code writes, before anything trusts
    /// them (the C ABI calls this on every slow path): the bump pointer
    /// inside the vproc's nursery and 8-aligned, the root stack's top
    /// inside its reservation and 8-aligned, and at least `min_roots`
    /// slots in use. Nothing is repaired; the message says what is wrong.
    pub fn check_record(&self, min_roots: usize) -> std::result::Result<(), String> {
        // SAFETY: as in `vp`; the check only reads.
        let v = unsafe { &*self.vp };
        let rec = self.rec();
        let p = rec.alloc_ptr();
        if !p.is_multiple_of(8) || p < v.counted_ptr || p > v.alloc_end {
            return Err(format!(
                "alloc_ptr {p:#x} is outside the nursery [{:#x}, {:#x}] or unaligned",
                v.counted_ptr, v.alloc_end
            ));
        }
        let (top, base, limit) = (
            rec.roots_top() as usize,
            rec.roots_base() as usize,
            rec.roots_limit() as usize,
        );
        if top % 8 != 0 || top < base || top > limit {
            return Err(format!(
                "roots_top {top:#x} is outside the root stack [{base:#x}, {limit:#x}] or unaligned"
            ));
        }
        if (top - base) / 8 < min_roots {
            return Err(format!(
                "roots_top was popped below live handles ({} slots in use, handles need {min_roots}): a compiled frame was popped after handles were made above it",
                (top - base) / 8
            ));
        }
        Ok(())
    }

    /// The allocation slow path on its own (the C ABI's
    /// `numagc_alloc_slow`): what `alloc` calls past the limit.
    pub fn alloc_out_of_line(&mut self, header: u64, fields: usize) -> Result<u64> {
        slow::alloc_small(self.vp(), header, fields)
    }

    /// The slow path of a combined allocation on its own (the C ABI's
    /// `numagc_alloc_block_slow`): `words` words in all, at most
    /// [`MAX_BLOCK_WORDS`], the first object's header `header`; the caller
    /// writes the others.
    pub fn alloc_block_out_of_line(&mut self, header: u64, words: usize) -> Result<u64> {
        slow::alloc_block(self.vp(), header, words)
    }

    /// The safepoint's slow path on its own (the C ABI's `numagc_poll_slow`).
    pub fn poll_out_of_line(&mut self) {
        self.poll_slow()
    }

    /// The store barrier's slow path for code that is not trusted (the C
    /// ABI's `numagc_store_slow`): the target is checked first (a mutable
    /// object of this heap, `i` a value field within it), then the plan's
    /// whole barrier runs. `w` must be a value of this runtime.
    pub fn store_checked(&mut self, obj: u64, i: usize, w: u64) -> Result<()> {
        slow::check_store(self.vp(), obj, i, true)?;
        // `obj` is a mutable object of this heap and `i` a value field.
        slow::store(self.vp(), crate::mutator::resolve(obj), i, w, true)
    }

    /// Root-stack slots in use: the shadow stack's top as a count (what
    /// a caller compares before and after code it does not trust, such as
    /// a C task of `numagc_fork`).
    #[inline(always)]
    pub fn roots_len(&self) -> usize {
        record::Roots(self.rec()).len()
    }

    /// Puts the shadow stack's top back at `len` slots after code that is
    /// not trusted moved it (a C task that left frames pushed, or popped
    /// more than it pushed). Slots above `len` are popped; slots between
    /// the top found and `len` come back with the words they hold.
    ///
    /// # Safety
    /// `len` is at most the root stack's capacity, and the slots between
    /// the top found and `len` hold values: no collection ran since they
    /// were popped (the C ABI makes sure of it: its slow paths refuse to
    /// run, and so to collect, with the top below a task's first slot), and
    /// whatever was pushed there since holds values, as every frame slot
    /// must.
    pub unsafe fn reset_roots_len(&mut self, len: usize) {
        let rec = self.rec();
        debug_assert!(len <= (rec.roots_limit() as usize - rec.roots_base() as usize) / 8);
        rec.set_roots_top(rec.roots_base().wrapping_add(len));
    }

    /// Runs `f` with a scope on this mutator's vproc (handles made in it
    /// are popped when it returns, frames pushed under it too): what the C
    /// ABI gives a task of `numagc_fork` as the scope of its calls.
    pub fn scope<R>(&mut self, f: impl for<'i> FnOnce(&mut Scope<'i>) -> R) -> R {
        f(&mut Scope::root(self.vp()))
    }

    /// Which vproc this is.
    pub fn vproc(&self) -> usize {
        // SAFETY: as in `vp`.
        unsafe { (*self.vp).id }
    }

    /// Number of vprocs of the runtime.
    pub fn vprocs(&self) -> usize {
        // SAFETY: as in `vp`; the check only reads.
        let v: &Vproc = unsafe { &*self.vp };
        v.shared.coord.vprocs()
    }

    // ---- allocation -----------------------------------------------------

    /// Allocates an object of `fields` fields (at most
    /// [`MAX_SMALL_FIELDS`]) with header word `header` in the nursery and
    /// returns it; its fields are written with [`Mutator::init`] before
    /// the next call that may collect. Errors (heap limit, a collection
    /// called off) come from the slow path.
    #[inline(always)]
    pub fn alloc(&mut self, header: u64, fields: usize) -> Result<u64> {
        debug_assert!(fields <= MAX_SMALL_FIELDS, "alloc of {fields} fields");
        #[cfg(debug_assertions)]
        slow::check_alloc(self.vp(), header, fields);
        let p = self.bump(header, (fields + 1) * 8)?;
        // SAFETY: `p` is the start of a fresh reservation of `fields + 1`
        // words.
        unsafe { (p as *mut u64).write(header) };
        Ok(p)
    }

    /// The fast path of [`Mutator::alloc`] alone: the object, its header
    /// written, or `None` past the limit, where the caller takes the slow
    /// path ([`Mutator::alloc_out_of_line`]) in code of its own (Whippet's
    /// `gc_allocate_small_fast`). A compiler emits this where the slow
    /// path is best a tail call, so that the fast path needs no register
    /// saved for it.
    #[inline(always)]
    pub fn try_alloc(&mut self, header: u64, fields: usize) -> Option<u64> {
        debug_assert!(fields <= MAX_SMALL_FIELDS, "alloc of {fields} fields");
        #[cfg(debug_assertions)]
        slow::check_alloc(self.vp(), header, fields);
        let p = self.rec().bump((fields + 1) * 8)?;
        // SAFETY: `p` starts a fresh nursery reservation of `fields + 1` words.
        unsafe { (p as *mut u64).write(header) };
        Some(p as u64)
    }

    /// Allocates the `N` objects of `objects` (header word, fields; each
    /// at most [`MAX_SMALL_FIELDS`] fields) with one bump and one limit
    /// test, as a compiler allocates every object of a basic block at once
    /// (OCaml's combined allocations, GHC's one heap check per block).
    /// The objects lie one after the other; every one's fields are written
    /// with [`Mutator::init`] before the next call that may collect
    /// (contract 2), and none is a root until then, so they may point to
    /// one another in any order.
    #[inline(always)]
    pub fn alloc_many<const N: usize>(&mut self, objects: [(u64, usize); N]) -> Result<[u64; N]> {
        const { assert!(N > 0, "alloc_many of no object") };
        let mut bytes = 0;
        for &(_header, fields) in &objects {
            debug_assert!(fields <= MAX_SMALL_FIELDS, "alloc_many of {fields} fields");
            #[cfg(debug_assertions)]
            slow::check_alloc(self.vp(), _header, fields);
            bytes += (fields + 1) * 8;
        }
        debug_assert!(bytes <= MAX_BLOCK_WORDS * 8, "alloc_many of {bytes} bytes");
        let p = self.bump(objects[0].0, bytes)?;
        let mut at = p;
        Ok(objects.map(|(header, fields)| {
            let o = at;
            // SAFETY: `o` is inside the fresh reservation `[p, p + bytes)`,
            // at the start of this object's `fields + 1` words.
            unsafe { (o as *mut u64).write(header) };
            at += (fields as u64 + 1) * 8;
            o
        }))
    }

    /// A fresh nursery reservation of `bytes`, whose headers the caller
    /// writes (`header` is the first one, for the slow path): the bump and
    /// the limit test, the slow path out of line. The slow path's error
    /// leaves by its own exit, so that the caller's code after the fast
    /// path tests no `Result` it knows to be `Ok`.
    #[inline(always)]
    fn bump(&mut self, header: u64, bytes: usize) -> Result<u64> {
        match self.rec().bump(bytes) {
            Some(p) => Ok(p as u64),
            None => self.alloc_slow(header, bytes),
        }
    }

    #[inline(never)]
    #[cold]
    fn alloc_slow(&mut self, header: u64, bytes: usize) -> Result<u64> {
        slow::alloc(self.vp(), header, bytes)
    }

    /// Allocates an object that must be shareable or is large: a mutable
    /// mixed object or array, or an object of more than
    /// [`MAX_SMALL_FIELDS`] fields. Its value fields start as NIL (raw
    /// fields as 0) and are written with [`Mutator::store`] (mutable) or
    /// [`Mutator::init_shared`] (immutable, before the next call that may
    /// collect). Out of line; checks the header like the safe API.
    pub fn alloc_shared(&mut self, header: u64) -> Result<u64> {
        slow::alloc_shared(self.vp(), header)
    }

    /// Writes field `i` of an object just returned by [`Mutator::alloc`].
    ///
    /// # Safety
    /// `obj` came from `alloc` since the last call that may collect, and
    /// `i` is within its length.
    #[inline(always)]
    pub unsafe fn init(&self, obj: u64, i: usize, w: u64) {
        #[cfg(debug_assertions)]
        slow::check_field(self.vproc_ref(), obj, i, "init");
        // SAFETY: the caller's contract.
        unsafe { Obj::at(obj as usize).set_field(i, w) }
    }

    /// Writes field `i` of an immutable object from
    /// [`Mutator::alloc_shared`] (a large vector, say): the value is made
    /// shareable first (the split plan promotes a local one), and the
    /// plans' remembered sets learn of it. Out of line.
    ///
    /// # Safety
    /// `obj` came from `alloc_shared` since the last call that may
    /// collect, and `i` is a value field within its length.
    pub unsafe fn init_shared(&mut self, obj: u64, i: usize, w: u64) -> Result<()> {
        slow::store(self.vp(), obj, i, w, false)
    }

    // ---- safepoints ---------------------------------------------------------

    /// A safepoint: one load and one compare; out of line when a collection
    /// or a request waits.
    #[inline(always)]
    pub fn poll(&mut self) {
        if self.rec().limit() == 0 {
            self.poll_slow();
        }
    }

    #[inline(never)]
    #[cold]
    fn poll_slow(&mut self) {
        slow::poll(self.vp());
    }

    /// Forces a minor collection (out of line; OCaml's
    /// `caml_minor_collection`).
    pub fn collect_minor(&mut self) {
        crate::plan::collect_minor(self.vp());
    }

    // ---- frames ---------------------------------------------------------------

    /// Pushes a frame of `len` slots, each NIL.
    ///
    /// Panics when the root stack is full (like a stack overflow).
    #[inline(always)]
    pub fn push_frame(&mut self, len: usize) -> Frame {
        let rec = self.rec();
        let base = rec.roots_top();
        if (rec.roots_limit() as usize - base as usize) / 8 < len {
            slow::frame_overflow(len);
        }
        // SAFETY: `[base, base + len)` is inside the root stack (checked).
        unsafe {
            for i in 0..len {
                base.add(i).write(NIL);
            }
            rec.set_roots_top(base.add(len));
        }
        Frame { base, len }
    }

    /// Pushes a frame of `N` slots holding `words` (values read since the
    /// last call that may collect): [`Mutator::push_frame`] and a `set` of
    /// each slot, without the NIL stores.
    ///
    /// Panics when the root stack is full (like a stack overflow).
    #[inline(always)]
    pub fn push_frame_with<const N: usize>(&mut self, words: [u64; N]) -> Frame {
        let rec = self.rec();
        let base = rec.roots_top();
        if (rec.roots_limit() as usize - base as usize) / 8 < N {
            slow::frame_overflow(N);
        }
        // SAFETY: `[base, base + N)` is inside the root stack (checked).
        unsafe {
            base.cast::<[u64; N]>().write_unaligned(words);
            rec.set_roots_top(base.add(N));
        }
        Frame { base, len: N }
    }

    /// Pops `frame` and every frame pushed after it (contract 4; checked
    /// in debug builds).
    #[inline(always)]
    pub fn pop_frame(&mut self, frame: Frame) {
        let rec = self.rec();
        debug_assert!(
            frame.base >= rec.roots_base() && frame.base <= rec.roots_top(),
            "pop of a frame that is not pushed"
        );
        rec.set_roots_top(frame.base);
    }

    // ---- reads ------------------------------------------------------------------

    /// Field `i` of `obj`: one load.
    ///
    /// # Safety
    /// `obj` is a live object (a value from a frame slot, or read since the
    /// last call that may collect) and `i` within its length.
    #[inline(always)]
    pub unsafe fn field(&self, obj: u64, i: usize) -> u64 {
        #[cfg(debug_assertions)]
        slow::check_field(
            // SAFETY: as in `vp`; the check only reads.
            unsafe { &*self.vp },
            obj,
            i,
            "field",
        );
        // SAFETY: the caller's contract.
        unsafe { Obj::at(obj as usize).field(i) }
    }

    /// Field `i` of a mutable object, which other vprocs may write.
    ///
    /// # Safety
    /// As [`Mutator::field`].
    #[inline(always)]
    pub unsafe fn field_shared(&self, obj: u64, i: usize) -> u64 {
        // SAFETY: the caller's contract.
        unsafe { Obj::at(obj as usize) }
            .field_cell(i)
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether two values are the same (the same immediate, or the same
    /// object through the forwarding address of a promoted copy: compiled
    /// reads may see a promoted immutable object at either address until
    /// the next local collection).
    ///
    /// # Safety
    /// Both are immediates or live objects.
    #[inline]
    pub unsafe fn same(&self, a: u64, b: u64) -> bool {
        a == b || crate::mutator::resolve(a) == crate::mutator::resolve(b)
    }

    /// The header of `obj` (its descriptor and length), through the
    /// forwarding address of a promoted or moved object.
    ///
    /// # Safety
    /// `obj` is a live object.
    #[inline(always)]
    pub unsafe fn header(&self, obj: u64) -> Header {
        let w = crate::mutator::resolve(obj);
        // SAFETY: the caller's contract; `resolve` follows forwarding.
        match unsafe { Obj::at(w as usize) }.header() {
            Some(h) => h,
            None => slow::bad_header(obj),
        }
    }

    // ---- stores ---------------------------------------------------------------------

    /// Stores value `w` into value field `i` of the mutable object `obj`,
    /// through the plan's barrier: inline tests, the slow path out of line.
    ///
    /// # Safety
    /// `obj` is a live mutable object and `i` a value field within it.
    #[inline(always)]
    pub unsafe fn store(&mut self, obj: u64, i: usize, w: u64) -> Result<()> {
        // SAFETY: the caller's contract.
        let cell = unsafe { Obj::at(obj as usize) }.field_cell(i);
        if store_needs_slow_path(self.rec(), cell, w) {
            return slow::store(self.vp(), obj, i, w, true);
        }
        cell.store(w, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// Stores raw word `w` into raw field `i` of a mutable object, or of
    /// an object from [`Mutator::alloc_shared`] being initialised (raw data
    /// over [`MAX_SMALL_FIELDS`] words, say). No barrier: raw words are not
    /// values.
    ///
    /// # Safety
    /// `obj` is a live object of one of those two kinds and `i` a raw
    /// field within it.
    #[inline(always)]
    pub unsafe fn store_raw(&mut self, obj: u64, i: usize, w: u64) {
        // SAFETY: the caller's contract.
        unsafe { Obj::at(obj as usize) }
            .field_cell(i)
            .store(w, std::sync::atomic::Ordering::Release);
    }

    // ---- fork-join --------------------------------------------------------------------

    /// Forks: runs `left` and `right` in parallel (another vproc may steal
    /// one), each with its own mutator and the values of `env` (copies of
    /// the given words, made shareable when stolen), and returns their
    /// results. The words of `env` are read from the caller's frames
    /// before the fork, like any call that may collect.
    pub fn par2<L, R>(&mut self, env: &[u64], left: L, right: R) -> Result<(u64, u64)>
    where
        L: for<'m> FnOnce(&mut Mutator<'m>, &[u64]) -> Result<u64> + Send,
        R: for<'m> FnOnce(&mut Mutator<'m>, &[u64]) -> Result<u64> + Send,
    {
        fork::par2(self, env, left, right)
    }

    /// The error of a call the compiled code refuses itself (an answer
    /// that does not fit, say), as the safe API words it.
    pub fn misuse(&self, what: impl Into<String>) -> Error {
        Error::misuse(what.into())
    }
}

/// The inline test of each plan's store barrier (`Mutator::store`,
/// `Ctx::store_at`): whether storing `w` into `cell` needs the slow path.
#[inline(always)]
pub(super) fn store_needs_slow_path(
    rec: &MutatorRecord,
    cell: &std::sync::atomic::AtomicU64,
    w: u64,
) -> bool {
    let (lo, len) = rec.barrier();
    if rec.plan() == 0 {
        // Split: a local value is promoted first; with young global
        // collections the slow path remembers the store.
        w.wrapping_sub(lo as u64) < len as u64 || rec.remember_all()
    } else {
        // Shared: the deletion barrier for an overwritten major value, the
        // remembered set for a stored minor one.
        let old = cell.load(std::sync::atomic::Ordering::Relaxed);
        (is_pointer(old) && old.wrapping_sub(lo as u64) >= len as u64)
            || w.wrapping_sub(lo as u64) < len as u64
    }
}

impl Drop for Mutator<'_> {
    fn drop(&mut self) {
        let base = self.base;
        self.vp().roots.truncate(base);
    }
}
