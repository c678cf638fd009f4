//! Registers: the allocation pointer and the shadow stack's top held by
//! compiled code in machine registers between calls that may collect, as
//! GHC keeps `Hp` and `Sp` and OCaml keeps its young pointer in `r15`.
//!
//! The record's `alloc_ptr` and `roots_top` ([`super::MutatorRecord`])
//! are the collector's view of them. Code on the record alone
//! ([`Mutator::alloc`], [`Mutator::push_frame_with`]) loads and stores
//! them at every allocation and frame, so each allocation waits for the
//! store of the one before it to be forwarded from memory: in parfib,
//! where every call allocates, that chain is the program's critical path
//! (with the registers of this module parfib took 0.64 × the time of the
//! code on the record, side by side: `docs/results/compiled.md`). Here the compiled code holds them in
//! locals ([`Hp`], [`Sp`]) passed to and returned from its functions;
//! the record is brought up to date only where the collector looks:
//!
//! - **The slow paths of this module** ([`Ctx::alloc_at`] past the
//!   limit, [`Ctx::poll_at`] when a collection waits, [`Ctx::store_at`]
//!   when the plan's barrier needs its slow path) store both registers
//!   into the record before they can collect, and return the allocation
//!   pointer reloaded after it.
//! - **Everything else that may collect or read the record** (the `&mut`
//!   calls of [`Mutator`]: `alloc`, `push_frame`, `store`, `par2`, …, and
//!   dropping the mutator) expects the record current: compiled code
//!   calls [`Mutator::set_regs`] before it and [`Mutator::regs`] after.
//!
//! Register code is handed a [`Ctx`]: the record's address alone, which
//! the compiler keeps in a register (OCaml's `r14`, the domain state), so
//! the fast paths read the limit with one load from it; the slow paths
//! find the vproc beside the record (`record::RecordSlot`). A `Ctx` comes
//! from [`Mutator::with_regs`] or [`Mutator::ctx`], and borrows the
//! mutator, whose `&mut` calls therefore wait until it is gone.
//!
//! **Frames** in register code are slots written at `sp` with
//! [`Ctx::push_at`], which returns the new top; a callee gets the new
//! top and the caller keeps its own, so a frame is popped by using the old
//! top again, without a store. The collector scans `[roots_base,
//! roots_top)`, where `roots_top` is the `sp` of the slow path that
//! collects: every frame of every caller of it, which is every frame
//! live.
//!
//! **Returns through the shadow stack.** A compiler need not use the
//! machine's calls for the program's: as GHC does, it may keep each
//! pending call's continuation in a frame of the shadow stack (the
//! values it needs, and which code runs next as an immediate, which the
//! collector skips) and run the program as a loop that pushes a frame
//! where it would call and pops one ([`Sp::pop`]) where it would return.
//! The collector sees the same frames either way. On the development
//! machine, coins (recursion hundreds of calls deep) written so ran in
//! 0.38–0.47 × the time of the same program with machine calls and
//! returns; parfib (20 deep) gained nothing clear, its runs within the
//! machine's noise of each other (`docs/results/compiled.md`, "Returns
//! through the shadow stack").
//!
//! **Errors** of the slow paths (the heap limit, a collection called off)
//! cannot come back through a register-sized result: they are raised,
//! as OCaml raises `Out_of_memory` and Java throws `OutOfMemoryError`:
//! the slow path unwinds with the error ([`raise`]), and [`catch`] (or
//! the runtime's job, `Runtime::run_on`, and the forks) turns it back into
//! the `Err` the other APIs return. The record is current when it unwinds
//! (the slow path stored it), so the code that catches it may go on
//! allocating; frames pushed in register code between the catch and the
//! raise are abandoned with the stack above `sp`.
//!
//! The contract (on top of the module's, `super`): an [`Hp`] is valid
//! until the next call that may collect other than the `_at` call it
//! came from, and register code holds at most one at a time; an [`Sp`] is
//! the top of the frames pushed so far by the code's callers and itself,
//! never below the top when the code got it from [`Mutator::regs`].

use super::record::{MutatorRecord, RecordSlot};
use super::{slow, Mutator, MAX_BLOCK_WORDS, MAX_SMALL_FIELDS};
use crate::error::{Error, Result};
use crate::heap::prefetch;
use crate::object::Obj;
use crate::vproc::Vproc;
use std::marker::PhantomData;

/// The allocation pointer, held in a register: the next free byte of the
/// nursery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Hp(usize);

/// The top of the shadow stack, held in a register: slots below it are
/// frames pushed and live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Sp(*mut u64);

impl Sp {
    /// The value in slot `i` of the frame pushed at this top (with
    /// [`Ctx::push_at`]), reloaded after the calls made since.
    ///
    /// # Safety
    /// A frame of more than `i` slots was pushed at this top, and the top
    /// it returned (or a higher one) is what the code's calls since got.
    #[inline(always)]
    pub unsafe fn get(self, i: usize) -> u64 {
        // SAFETY: the caller's contract: the slot is inside a live frame.
        unsafe { self.0.add(i).read() }
    }

    /// The top below the last frame, of `n` slots: the `sp` that
    /// [`Ctx::push_at`] got for it. For code that returns through the
    /// shadow stack (the module doc): the frame's slots are then read
    /// with [`Sp::get`] of the returned top, and are dropped (no longer
    /// scanned) once the code passes that top to a call that may collect.
    ///
    /// # Safety
    /// `self` is the top `push_at` returned for a frame of `n` slots (or
    /// the top after popping the frames pushed above it since).
    #[inline(always)]
    pub unsafe fn pop(self, n: usize) -> Sp {
        Sp(self.0.wrapping_sub(n))
    }

    /// Stores `w` into slot `i` of the frame pushed at this top.
    ///
    /// # Safety
    /// As [`Sp::get`]; `w` is a value.
    #[inline(always)]
    pub unsafe fn set(self, i: usize, w: u64) {
        // SAFETY: as in `get`.
        unsafe { self.0.add(i).write(w) }
    }
}

/// The payload of an error raised by a slow path of register code
/// ([`raise`]); [`catch`] and the runtime's jobs turn it back into the
/// error.
pub(crate) struct Raised(pub(crate) Error);

/// Raises `e` out of register code: unwinds to the nearest [`catch`] (or
/// the job, fork or thread that runs the code, which returns it as its
/// `Err`). The panic hook does not run: this is an error of the program's
/// run, not a bug.
#[cold]
pub fn raise(e: Error) -> ! {
    std::panic::resume_unwind(Box::new(Raised(e)))
}

/// Runs `f`, turning an error [`raise`]d inside it into `Err`. Other
/// panics go on unwinding.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(t) => Ok(t),
        Err(p) => match p.downcast::<Raised>() {
            Ok(r) => Err(r.0),
            Err(p) => std::panic::resume_unwind(p),
        },
    }
}

/// The objects of a fresh block at `p`, their header words written.
#[inline(always)]
fn place<const N: usize>(p: u64, objects: [(u64, usize); N]) -> [u64; N] {
    let mut at = p;
    objects.map(|(header, fields)| {
        let o = at;
        // SAFETY: `o` is inside the fresh block (the caller's reservation of
        // every object's words), at the start of this object's `fields + 1`
        // words.
        unsafe { (o as *mut u64).write(header) };
        at += (fields as u64 + 1) * 8;
        o
    })
}

impl Mutator<'_> {
    /// Runs register code: `f` gets the context and the registers loaded
    /// from the record, and returns its result with the allocation
    /// pointer, which is stored back (the stack's top is the one `f` got:
    /// its frames are gone). An error raised inside (a slow path's,
    /// [`raise`]) comes back as `Err`, with the record current and the
    /// stack's top reset.
    pub fn with_regs<T>(&mut self, f: impl FnOnce(Ctx<'_>, Hp, Sp) -> (T, Hp)) -> Result<T> {
        let (hp, sp) = self.regs();
        let c = self.ctx();
        match catch(|| f(c, hp, sp)) {
            Ok((t, hp)) => {
                self.set_regs(hp, sp);
                Ok(t)
            }
            Err(e) => {
                // The slow path that raised stored the allocation pointer;
                // its stack top was that of a frame that is gone.
                self.rec().set_roots_top(sp.0);
                Err(e)
            }
        }
    }

    /// The context of register code on this mutator (what
    /// [`Mutator::with_regs`] passes), for code that loads and stores the
    /// registers itself ([`Mutator::regs`], [`Mutator::set_regs`]) and
    /// catches the slow paths' errors where it chooses ([`catch`]).
    #[inline(always)]
    pub fn ctx(&self) -> Ctx<'_> {
        let slot = RecordSlot::of(self.rec());
        slot.set_vproc(self.vp);
        Ctx {
            slot,
            _not_send: PhantomData,
        }
    }

    /// The registers, loaded from the record (entering register code, or
    /// after a call that is not an `_at` one).
    #[inline(always)]
    pub fn regs(&self) -> (Hp, Sp) {
        let rec = self.rec();
        (Hp(rec.alloc_ptr()), Sp(rec.roots_top()))
    }

    /// Stores the registers into the record (before a call that is not an
    /// `_at` one, and before the mutator is dropped).
    #[inline(always)]
    pub fn set_regs(&self, hp: Hp, sp: Sp) {
        self.ctx().set_regs(hp, sp)
    }
}

/// The context of register code: the address of the vproc's mutator
/// record, which compiled code keeps in a register. `Copy`, one word,
/// passed to the program's functions beside [`Hp`] and [`Sp`]; neither
/// `Send` nor `Sync`.
#[derive(Clone, Copy)]
pub struct Ctx<'m> {
    slot: &'m RecordSlot,
    _not_send: PhantomData<*const ()>,
}

impl<'m> Ctx<'m> {
    #[inline(always)]
    fn rec(self) -> &'m MutatorRecord {
        self.slot.record()
    }

    /// The vproc, for the slow paths. No other reference to it is live
    /// while one of them runs: the `Mutator` this context borrows holds
    /// the scope's `&mut` borrow of it and makes no other call while the
    /// context lives; the context is neither `Send` nor `Sync` (a fork's
    /// closures cannot capture it), and the slow paths call no code of
    /// the program.
    #[allow(clippy::mut_from_ref)]
    pub(super) fn vproc(self) -> &'m mut Vproc {
        // SAFETY: see above; `Mutator::ctx` set the pointer to the
        // mutator's vproc, which outlives `'m`.
        unsafe { &mut *self.slot.vproc() }
    }

    /// Stores the registers into the record.
    #[inline(always)]
    pub fn set_regs(self, hp: Hp, sp: Sp) {
        #[cfg(debug_assertions)]
        slow::check_regs(self.vproc(), hp.0, sp.0);
        let rec = self.rec();
        rec.set_alloc_ptr(hp.0);
        rec.set_roots_top(sp.0);
    }

    /// Allocates an object of `fields` fields (at most
    /// [`MAX_SMALL_FIELDS`]) with header word `header` at `hp`: the
    /// object and the new allocation pointer. The fast path is a bump and
    /// one compare with the record's limit; past it, [`Ctx::alloc_at_slow`].
    /// Its fields are written with [`Ctx::init`] before the next call that
    /// may collect.
    #[inline(always)]
    pub fn alloc_at(self, hp: Hp, sp: Sp, header: u64, fields: usize) -> (u64, Hp) {
        match self.try_alloc_at(hp, header, fields) {
            Some(r) => r,
            None => self.alloc_at_slow(hp, sp, header, fields),
        }
    }

    /// The fast path of [`Ctx::alloc_at`] alone: `None` past the limit,
    /// where the caller takes [`Ctx::alloc_at_slow`] in code of its own (a
    /// tail call, say).
    #[inline(always)]
    pub fn try_alloc_at(self, hp: Hp, header: u64, fields: usize) -> Option<(u64, Hp)> {
        debug_assert!(fields <= MAX_SMALL_FIELDS, "alloc_at of {fields} fields");
        #[cfg(debug_assertions)]
        slow::check_alloc(self.vproc(), header, fields);
        let next = hp.0 + (fields + 1) * 8;
        if next > self.rec().limit() {
            return None;
        }
        prefetch::for_write(next + prefetch::DISTANCE);
        // SAFETY: `[hp, next)` is below the limit, so inside the nursery
        // and not handed out yet (the register contract: `hp` is the
        // current allocation pointer).
        unsafe { (hp.0 as *mut u64).write(header) };
        Some((hp.0 as u64, Hp(next)))
    }

    /// The slow path of [`Ctx::alloc_at`]: stores the registers, runs the
    /// plan's allocation slow path (which may collect: every frame below
    /// `sp` is a root), and returns the object and the allocation pointer
    /// reloaded. Errors are [`raise`]d.
    #[cold]
    #[inline(never)]
    pub fn alloc_at_slow(self, hp: Hp, sp: Sp, header: u64, fields: usize) -> (u64, Hp) {
        self.set_regs(hp, sp);
        match slow::alloc_small(self.vproc(), header, fields) {
            Ok(p) => (p, Hp(self.rec().alloc_ptr())),
            Err(e) => raise(e),
        }
    }

    /// [`Mutator::alloc_many`] at `hp`: the `N` objects of `objects`
    /// with one bump and one limit test, and the new allocation pointer.
    #[inline(always)]
    pub fn alloc_many_at<const N: usize>(
        self,
        hp: Hp,
        sp: Sp,
        objects: [(u64, usize); N],
    ) -> ([u64; N], Hp) {
        match self.try_alloc_many_at(hp, objects) {
            Some(r) => r,
            None => self.alloc_many_at_slow(hp, sp, objects),
        }
    }

    /// The fast path of [`Ctx::alloc_many_at`] alone: `None` past the
    /// limit, where the caller takes [`Ctx::alloc_many_at_slow`] in code
    /// of its own.
    #[inline(always)]
    pub fn try_alloc_many_at<const N: usize>(
        self,
        hp: Hp,
        objects: [(u64, usize); N],
    ) -> Option<([u64; N], Hp)> {
        let bytes = self.block_bytes(&objects);
        if hp.0 + bytes > self.rec().limit() {
            return None;
        }
        prefetch::for_write(hp.0 + bytes + prefetch::DISTANCE);
        Some((place(hp.0 as u64, objects), Hp(hp.0 + bytes)))
    }

    /// The slow path of [`Ctx::alloc_many_at`] (as [`Ctx::alloc_at_slow`]).
    #[cold]
    #[inline(never)]
    pub fn alloc_many_at_slow<const N: usize>(
        self,
        hp: Hp,
        sp: Sp,
        objects: [(u64, usize); N],
    ) -> ([u64; N], Hp) {
        let bytes = self.block_bytes(&objects);
        let (p, hp) = self.alloc_block_at_slow(hp, sp, objects[0].0, bytes);
        (place(p, objects), hp)
    }

    /// The bytes of a block of `objects` (checked in debug builds).
    #[inline(always)]
    fn block_bytes<const N: usize>(self, objects: &[(u64, usize); N]) -> usize {
        const { assert!(N > 0, "alloc_many_at of no object") };
        let mut bytes = 0;
        for &(_header, fields) in objects {
            debug_assert!(
                fields <= MAX_SMALL_FIELDS,
                "alloc_many_at of {fields} fields"
            );
            #[cfg(debug_assertions)]
            slow::check_alloc(self.vproc(), _header, fields);
            bytes += (fields + 1) * 8;
        }
        debug_assert!(
            bytes <= MAX_BLOCK_WORDS * 8,
            "alloc_many_at of {bytes} bytes"
        );
        bytes
    }

    #[cold]
    #[inline(never)]
    fn alloc_block_at_slow(self, hp: Hp, sp: Sp, header: u64, bytes: usize) -> (u64, Hp) {
        self.set_regs(hp, sp);
        match slow::alloc_block(self.vproc(), header, bytes / 8) {
            Ok(p) => (p, Hp(self.rec().alloc_ptr())),
            Err(e) => raise(e),
        }
    }

    /// A safepoint in register code: one load and one compare; when a
    /// collection or a request waits, the registers are stored, the
    /// safepoint runs (it may collect) and the allocation pointer is
    /// returned reloaded.
    #[inline(always)]
    pub fn poll_at(self, hp: Hp, sp: Sp) -> Hp {
        if self.rec().limit() == 0 {
            return self.poll_at_slow(hp, sp);
        }
        hp
    }

    #[cold]
    #[inline(never)]
    fn poll_at_slow(self, hp: Hp, sp: Sp) -> Hp {
        self.set_regs(hp, sp);
        slow::poll(self.vproc());
        Hp(self.rec().alloc_ptr())
    }

    /// Stores value `w` into value field `i` of the mutable object `obj`
    /// through the plan's barrier (as [`Mutator::store`]): the inline
    /// test, and past it the registers stored, the slow path run (it may
    /// promote `w` and collect) and the allocation pointer returned
    /// reloaded. Errors are [`raise`]d.
    ///
    /// # Safety
    /// As [`Mutator::store`].
    #[inline(always)]
    pub unsafe fn store_at(self, hp: Hp, sp: Sp, obj: u64, i: usize, w: u64) -> Hp {
        // SAFETY: the caller's contract.
        let cell = unsafe { Obj::at(obj as usize) }.field_cell(i);
        if super::store_needs_slow_path(self.rec(), cell, w) {
            return self.store_at_slow(hp, sp, obj, i, w);
        }
        cell.store(w, std::sync::atomic::Ordering::Release);
        hp
    }

    #[cold]
    #[inline(never)]
    fn store_at_slow(self, hp: Hp, sp: Sp, obj: u64, i: usize, w: u64) -> Hp {
        self.set_regs(hp, sp);
        if let Err(e) = slow::store(self.vproc(), obj, i, w, true) {
            raise(e)
        }
        Hp(self.rec().alloc_ptr())
    }

    /// Field `i` of a mutable object, which other vprocs may write (as
    /// [`Mutator::field_shared`]).
    ///
    /// # Safety
    /// As [`Mutator::field`].
    #[inline(always)]
    pub unsafe fn field_shared(self, obj: u64, i: usize) -> u64 {
        // SAFETY: the caller's contract.
        unsafe { Obj::at(obj as usize) }
            .field_cell(i)
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Pushes a frame of `N` slots holding `words` at `sp` and returns the
    /// top above it, for the calls made while the frame is live; the
    /// slots are [`Sp::get`] of `sp`. No store pops it: the code goes on
    /// with `sp`.
    ///
    /// Panics when the root stack is full (like a stack overflow).
    #[inline(always)]
    pub fn push_at<const N: usize>(self, sp: Sp, words: [u64; N]) -> Sp {
        // Only an address: compared with the limit before any write.
        let top = sp.0.wrapping_add(N);
        if top > self.rec().roots_limit() {
            slow::frame_overflow(N);
        }
        // SAFETY: `[sp, top)` is inside the root stack (checked), above
        // every live frame (the register contract).
        unsafe { sp.0.cast::<[u64; N]>().write_unaligned(words) };
        Sp(top)
    }

    /// Writes field `i` of an object just allocated (as
    /// [`Mutator::init`]).
    ///
    /// # Safety
    /// As [`Mutator::init`].
    #[inline(always)]
    pub unsafe fn init(self, obj: u64, i: usize, w: u64) {
        #[cfg(debug_assertions)]
        slow::check_field(self.vproc(), obj, i, "init");
        // SAFETY: the caller's contract.
        unsafe { Obj::at(obj as usize).set_field(i, w) }
    }

    /// Field `i` of `obj`: one load (as [`Mutator::field`]).
    ///
    /// # Safety
    /// As [`Mutator::field`].
    #[inline(always)]
    pub unsafe fn field(self, obj: u64, i: usize) -> u64 {
        #[cfg(debug_assertions)]
        slow::check_field(self.vproc(), obj, i, "field");
        // SAFETY: the caller's contract.
        unsafe { Obj::at(obj as usize).field(i) }
    }
}
