//! Typed handles: reads of layouts the program knows, without checks.
//!
//! An untyped [`Handle`] may name any value, so every read through it
//! ([`Scope::view`], [`View::field`]) loads the object's header, follows a
//! forwarding pointer, looks the descriptor's layout up and tests the
//! field against it: about 20 instructions around the one load that
//! matters. A program that knows its layouts at compile time (a record
//! type of the language, a cons cell, a box) says so once, with a
//! [`Layout`], and holds its objects in a [`Typed`] handle: a read is then
//! two loads, the root slot and the field, as compiled code's is, and the
//! field's index is checked against the layout's constants, which the
//! compiler folds away when the index is a constant (issue 18, item 3:
//! "fewer checks where the layout is known").
//!
//! Why no check is needed at the read (the invariant this module keeps):
//! a `Typed<'s, T>` is made only by this module and by frames (`frame`),
//! in one of these ways, each of which checks once that the object's
//! descriptor is `T::DESC` and that the runtime registered it with `T`'s
//! layout (immutable, `T::SIZE` fields, value fields `T::VALUES`):
//! [`Scope::alloc_typed`] allocates the object, [`Scope::typed`] tests an
//! untyped value's header (as [`View::record`] does for a [`Record`], the
//! unrooted reader), [`Scope::scope_typed`] keeps a typed result of a
//! nested scope, [`Scope::scope_fresh`] roots a [`Fresh`] object,
//! allocated as `alloc_typed` allocates (or by a combined allocation,
//! `combined`) and not yet rooted, which borrows its scope mutably so that
//! nothing that may collect runs before it is rooted, and a frame's slot
//! keeps a `Fresh` object or a `Record` ([`FrameSlot::keep`],
//! [`FrameSlot::keep_record`]; a slot is written once, its token
//! consumed). Each gives the handle a **fresh root slot of its own**,
//! which no safe API
//! writes afterwards ([`Slot`](super::Slot)s, the one kind of slot a
//! program reassigns, are other slots), and which stays pushed while the
//! scope `'s` lives (only the end of a scope pops slots, and only its
//! own). The collectors update the slot when they move the object, and
//! never store another value in it. So the slot holds, for all of `'s`,
//! the object it was made with (moved or not), whose layout is `T`'s.
//!
//! The handle holds the slot's address, not its index: a read loads the
//! slot and the field, with no test of the root stack's bounds. The
//! address is valid while `'s` lives because a vproc's root stack is one
//! mapping that never moves (`compiled::record`), and handles are neither
//! `Send` nor `Sync`, so the slot is read on its own vproc's thread.
//!
//! Forwarding: on the split plan a promotion copies a local object to the
//! global heap and leaves a forwarding pointer in the original's header,
//! and the slot may keep the original's address until the next local
//! collection. A typed read does not look at the header: it reads the
//! original's field, which promotion leaves as it was (`plan::split::copy`
//! writes only the header). That is the field's value because `T` is
//! immutable (a mutable layout has no packed layout, so no `Layout` can
//! match one): no store can have gone to the copy alone. A field read
//! this way may itself name a forwarded original; [`View`] follows it
//! when it reads that object.
//!
//! In debug builds every read checks the object's header against
//! `T::DESC` (the heap verifier's kind of check, at the read).

use super::scope::{Handle, Scope};
use super::view::View;
#[cfg(doc)]
use super::FrameSlot;
use crate::error::{Error, Result};
use crate::object::descriptor::{DescId, Descriptor, DescriptorTable, FastLayout};
use crate::object::header::Header;
use crate::object::{is_pointer, Obj};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// An immutable mixed layout known to the program at compile time: the
/// descriptor registered as [`Layout::DESC`] in every runtime the program
/// runs on, with [`Layout::SIZE`] fields of which those whose bit is set
/// in [`Layout::VALUES`] hold values and the others raw words.
/// [`Layout::descriptor`] builds the descriptor to register.
///
/// Nothing here needs `unsafe`: a layout that does not match the runtime's
/// registration is refused when a typed handle would be made
/// ([`Scope::alloc_typed`], [`Scope::typed`]), never trusted.
///
/// ```
/// use numagc::{Config, DescId, Handle, Layout, Runtime};
/// /// A cons cell: head and tail, both values.
/// struct Cons;
/// impl Layout for Cons {
///     const NAME: &'static str = "cons";
///     const DESC: DescId = DescId::nth_registered(0);
///     const SIZE: usize = 2;
///     const VALUES: u32 = 0b11;
/// }
/// let rt = Runtime::new(Config::builder().vprocs(1).build()?)?;
/// assert_eq!(rt.register(Cons::descriptor()?)?, Cons::DESC);
/// let sum = rt.run_on(0, |s| -> numagc::Result<i64> {
///     let mut list = s.nil();
///     for i in 1..=3 {
///         list = s.alloc_typed::<Cons>(&[Handle::int(i), list], &[])?.untyped();
///     }
///     let mut sum = 0;
///     let mut cell = s.typed::<Cons>(list);
///     while let Some(c) = cell {
///         sum += s.int(c, 0).expect("an integer head");
///         let tail = s.handle(s.get(c, 1));
///         cell = s.typed::<Cons>(tail);
///     }
///     Ok(sum)
/// })??;
/// assert_eq!(sum, 6);
/// # Ok::<(), numagc::Error>(())
/// ```
pub trait Layout: 'static {
    /// The descriptor's name (for errors and `numagc info`).
    const NAME: &'static str;
    /// The ID the descriptor has in every runtime the program runs on
    /// (usually [`DescId::nth_registered`]).
    const DESC: DescId;
    /// Number of fields, 1 ..= 30 (the packed layouts' largest,
    /// `FastLayout::MAX_SIZE`; a larger one is refused when used).
    const SIZE: usize;
    /// Bit `i` set: field `i` holds a value; clear: a raw word.
    const VALUES: u32;

    /// The immutable descriptor of this layout, to register.
    fn descriptor() -> Result<Descriptor> {
        let offsets: Vec<usize> = (0..Self::SIZE)
            .filter(|&i| i < 32 && (Self::VALUES >> i) & 1 == 1)
            .collect();
        Ok(Descriptor::mixed(Self::NAME, Self::SIZE, &offsets)?)
    }
}

/// The packed layout (`FastLayout`) a runtime holds for `T`'s descriptor
/// when it was registered with `T`'s layout.
#[inline(always)]
pub(super) fn packed<T: Layout>() -> FastLayout {
    FastLayout::packed(T::SIZE, T::VALUES)
}

/// A root slot holding an object of layout `T`, of the scope `'s`: reads
/// of its fields need no check (module doc). Made by
/// [`Scope::alloc_typed`], [`Scope::typed`] and [`Scope::scope_typed`].
pub struct Typed<'s, T> {
    slot: NonNull<u64>,
    _scope: PhantomData<&'s ()>,
    _layout: PhantomData<fn() -> T>,
    _not_send: PhantomData<*const ()>,
}

impl<T> Clone for Typed<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Typed<'_, T> {}

impl<T> std::fmt::Debug for Typed<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Typed({:p})", self.slot)
    }
}

impl<'s, T: Layout> Typed<'s, T> {
    /// A typed handle of the slot at `slot`.
    ///
    /// # Safety
    /// `slot` is a root slot of a scope that lives for `'s`, which holds
    /// an object of layout `T` and which no safe API writes while `'s`
    /// lives (the module doc's invariant).
    #[inline(always)]
    pub(super) unsafe fn at(slot: NonNull<u64>) -> Typed<'s, T> {
        Typed {
            slot,
            _scope: PhantomData,
            _layout: PhantomData,
            _not_send: PhantomData,
        }
    }

    /// The object's current address (the slot's word).
    #[inline(always)]
    fn word(self) -> u64 {
        // SAFETY: the slot is a pushed root slot of a scope that lives for
        // `'s` (module doc), inside the root stack's mapping, and read on
        // its vproc's thread (`Typed` is neither `Send` nor `Sync`).
        unsafe { self.slot.as_ptr().read() }
    }

    /// The same value as an untyped handle (the same slot).
    #[inline(always)]
    pub fn untyped(self) -> Handle<'s> {
        Handle::at_slot(self.slot.as_ptr())
    }
}

impl<'s> Scope<'s> {
    /// A typed handle on a fresh slot holding `p`, an object of layout
    /// `T` (the caller checked it).
    #[inline(always)]
    fn push_typed<T: Layout>(&self, p: u64) -> Typed<'s, T> {
        Typed {
            slot: self.roots().push_addr(p),
            _scope: PhantomData,
            _layout: PhantomData,
            _not_send: PhantomData,
        }
    }

    /// Whether the runtime registered `T::DESC` with `T`'s layout.
    #[inline(always)]
    pub(super) fn registered_as<T: Layout>(&self) -> bool {
        self.layouts.get(T::DESC.id()) == packed::<T>()
    }

    /// Allocates an object of layout `T` (as [`Scope::alloc_mixed`] with
    /// `T::DESC`): `values` fill its value fields and `raw` its raw
    /// fields, each in ascending field order. An error when the runtime
    /// registered `T::DESC` with another layout (or not at all).
    ///
    /// The fast path takes the object's size and the order of its fields
    /// from `T`'s constants, once the runtime's layout was compared with
    /// them (`Scope::alloc_small`, the untyped path's, with a constant
    /// layout): with literal `values` and `raw` the field stores unroll
    /// and test nothing.
    #[inline(always)]
    pub fn alloc_typed<T: Layout>(
        &mut self,
        values: &[Handle<'_>],
        raw: &[u64],
    ) -> Result<Typed<'s, T>> {
        let w = self.alloc_typed_word::<T>(values, raw)?;
        Ok(self.push_typed(w))
    }

    /// Allocates an object of layout `T` as [`Scope::alloc_typed`] does,
    /// without rooting it: the [`Fresh`] object borrows this scope, so it
    /// is used before anything else may collect. For the last allocation
    /// of a nested scope, whose result [`Scope::scope_fresh`] roots in the
    /// scope around it: one push less than a typed handle.
    #[inline(always)]
    pub fn alloc_fresh<T: Layout>(
        &mut self,
        values: &[Handle<'_>],
        raw: &[u64],
    ) -> Result<Fresh<'_, T>> {
        let word = self.alloc_typed_word::<T>(values, raw)?;
        Ok(Fresh::new(word))
    }

    /// The allocation of [`Scope::alloc_typed`] and [`Scope::alloc_fresh`]:
    /// the new object's word, valid until the next call that may collect.
    #[inline(always)]
    pub(super) fn alloc_typed_word<T: Layout>(
        &mut self,
        values: &[Handle<'_>],
        raw: &[u64],
    ) -> Result<u64> {
        // One test of the registration on the fast path; its failure is
        // the general path's to report.
        if self.registered_as::<T>() {
            if let Some(p) = self.alloc_small(T::DESC.id(), packed::<T>(), values, raw) {
                return Ok(p as u64);
            }
        }
        self.alloc_typed_general::<T>(values, raw)
    }

    /// [`Scope::alloc_typed`] past the nursery's fast path.
    #[inline(never)]
    pub(super) fn alloc_typed_general<T: Layout>(
        &mut self,
        values: &[Handle<'_>],
        raw: &[u64],
    ) -> Result<u64> {
        if !self.registered_as::<T>() {
            return Err(self.layout_error::<T>());
        }
        // The object's handle is a slot of this scope until it ends.
        let h = self.alloc_mixed(T::DESC, values, raw)?;
        Ok(self.word(h))
    }

    #[cold]
    #[inline(never)]
    pub(super) fn layout_error<T: Layout>(&self) -> Error {
        Error::misuse(format!(
            "layout `{}`: descriptor {} is not registered with its layout \
             (immutable, {} fields, value fields {:#b})",
            T::NAME,
            T::DESC.id(),
            T::SIZE,
            T::VALUES
        ))
    }

    /// `h` as a typed handle of layout `T`, on a fresh slot of this scope:
    /// `None` when `h` is not an object of descriptor `T::DESC`, or the
    /// runtime registered `T::DESC` with another layout (as
    /// [`View::record`]). One look at the object's header; the reads
    /// through the result need none.
    #[inline]
    pub fn typed<T: Layout>(&self, h: Handle<'_>) -> Option<Typed<'s, T>> {
        let r = self.view(h).record::<T>()?;
        Some(self.root_record(r))
    }

    /// Runs `f` in a nested scope and keeps the typed handle it returns,
    /// re-rooted in this scope (as [`Scope::scope_value`]).
    #[inline]
    pub fn scope_typed<T: Layout, E>(
        &mut self,
        f: impl for<'i> FnOnce(&mut Scope<'i>) -> std::result::Result<Typed<'i, T>, E>,
    ) -> std::result::Result<Typed<'s, T>, E> {
        let (inner, entry) = self.enter();
        let w = f(inner).map(|t| t.word());
        // As in `scope_value`: the nested scope's slots are popped and the
        // result pushed into the first of them with one store of the top;
        // it is a fresh slot of this scope, holding the object `f` typed.
        let base = entry.keep();
        let roots = self.roots();
        w.map(|w| Typed {
            slot: roots.truncate_push_at(base, w),
            _scope: PhantomData,
            _layout: PhantomData,
            _not_send: PhantomData,
        })
        .inspect_err(|_| roots.truncate_at(base))
    }

    /// Runs `f` in a nested scope and roots the object it allocated last,
    /// [`Fresh`], in this scope (as [`Scope::scope_typed`], with the
    /// result written straight into the slot the nested scope began at).
    #[inline]
    pub fn scope_fresh<T: Layout, E>(
        &mut self,
        f: impl for<'a, 'i> FnOnce(&'a mut Scope<'i>) -> std::result::Result<Fresh<'a, T>, E>,
    ) -> std::result::Result<Typed<'s, T>, E> {
        let (inner, entry) = self.enter();
        // The fresh object's borrow of the nested scope ends with `f`:
        // nothing has run since its allocation that may collect.
        let w = f(inner).map(|fresh| fresh.word);
        let base = entry.keep();
        let roots = self.roots();
        w.map(|w| Typed {
            slot: roots.truncate_push_at(base, w),
            _scope: PhantomData,
            _layout: PhantomData,
            _not_send: PhantomData,
        })
        .inspect_err(|_| roots.truncate_at(base))
    }

    /// The object behind `t`, to read without checks: one load of the
    /// slot. Checked against `T::DESC` in debug builds.
    #[inline(always)]
    pub fn record<T: Layout>(&self, t: Typed<'_, T>) -> Record<'_, T> {
        Record::new(t.word(), &self.vp.shared.descs)
    }

    /// Value field `i` of `t`'s object (as [`Record::get`]).
    #[inline(always)]
    pub fn get<T: Layout>(&self, t: Typed<'_, T>, i: usize) -> View<'_> {
        self.record(t).get(i)
    }

    /// The integer in value field `i` of `t`'s object (as [`Record::int`]).
    #[inline(always)]
    pub fn int<T: Layout>(&self, t: Typed<'_, T>, i: usize) -> Option<i64> {
        self.record(t).int(i)
    }

    /// Raw field `i` of `t`'s object (as [`Record::raw`]).
    #[inline(always)]
    pub fn raw_of<T: Layout>(&self, t: Typed<'_, T>, i: usize) -> u64 {
        self.record(t).raw(i)
    }

    /// Roots the object `r` reads, on a fresh slot of this scope.
    #[inline(always)]
    pub fn root_record<T: Layout>(&self, r: Record<'_, T>) -> Typed<'s, T> {
        self.push_typed(r.word)
    }
}

/// An object of layout `T` just allocated and not rooted
/// ([`Scope::alloc_fresh`]): it borrows its scope mutably, so no other
/// call on the scope, and so no collection, can come between its
/// allocation and its rooting by [`Scope::scope_fresh`].
///
/// Holding one across another allocation does not compile:
///
/// ```compile_fail
/// # use numagc::{Config, DescId, Handle, Layout, Runtime};
/// # struct Cons;
/// # impl Layout for Cons {
/// #     const NAME: &'static str = "cons";
/// #     const DESC: DescId = DescId::nth_registered(0);
/// #     const SIZE: usize = 2;
/// #     const VALUES: u32 = 0b11;
/// # }
/// # let rt = Runtime::new(Config::builder().vprocs(1).build().unwrap()).unwrap();
/// rt.run_on(0, |s| -> numagc::Result<()> {
///     let a = s.alloc_fresh::<Cons>(&[Handle::NIL, Handle::NIL], &[])?;
///     let b = s.alloc_fresh::<Cons>(&[Handle::NIL, Handle::NIL], &[])?; // may collect
///     drop((a, b));
///     Ok(())
/// });
/// ```
pub struct Fresh<'a, T> {
    pub(super) word: u64,
    _scope: PhantomData<&'a mut ()>,
    _layout: PhantomData<fn() -> T>,
    // A fresh object is rooted on its own vproc's thread only.
    _not_send: PhantomData<*const ()>,
}

impl<T> Fresh<'_, T> {
    /// A fresh object at `word`, allocated with layout `T` since the last
    /// call that may collect (the caller's duty).
    #[inline(always)]
    pub(super) fn new(word: u64) -> Self {
        Fresh {
            word,
            _scope: PhantomData,
            _layout: PhantomData,
            _not_send: PhantomData,
        }
    }
}

impl<T: Layout> Fresh<'_, T> {
    /// The integer in value field `i`, if it holds one: a result read
    /// where it is returned, with no slot (compiled code reads a call's
    /// result in its register so). Panics when field `i` of `T` is not a
    /// value field (as [`Record::int`]).
    #[inline(always)]
    pub fn int(&self, i: usize) -> Option<i64> {
        assert!(
            i < T::SIZE && i < 32 && (T::VALUES >> i) & 1 == 1,
            "field {i} of `{}` is not a value field",
            T::NAME
        );
        #[cfg(debug_assertions)]
        check_layout::<T>(self.word);
        // SAFETY: `word` is an object of layout `T`, allocated with
        // nothing that may collect since (it borrows its scope mutably),
        // so neither moved nor forwarded; `i` is one of its fields.
        let w = unsafe { Obj::at(self.word as usize) }.field(i);
        (!is_pointer(w)).then(|| crate::object::value_int(w))
    }
}

/// An object of layout `T` read in place, as a [`View`] reads one: it
/// borrows its scope shared, so no collection moves the object while it
/// lives, and its reads need no check. Made from a typed handle
/// ([`Scope::record`], no check) or from a view ([`View::record`], one
/// check of the header).
pub struct Record<'a, T> {
    /// The object's address, or its forwarded original's (module doc).
    word: u64,
    descs: &'a DescriptorTable,
    _layout: PhantomData<fn() -> T>,
}

impl<T> Clone for Record<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Record<'_, T> {}

impl<'a, T: Layout> Record<'a, T> {
    /// The object's address (or its forwarded original's).
    #[inline(always)]
    pub(super) fn word(self) -> u64 {
        self.word
    }

    /// A record of `word`, an object of layout `T` (or its forwarded
    /// original): the caller has checked it, or holds it in a typed slot.
    #[inline(always)]
    fn new(word: u64, descs: &'a DescriptorTable) -> Record<'a, T> {
        #[cfg(debug_assertions)]
        check_layout::<T>(word);
        Record {
            word,
            descs,
            _layout: PhantomData,
        }
    }

    #[inline(always)]
    fn obj(self) -> Obj {
        // SAFETY: `word` names an object of layout `T` or its forwarded
        // original (`Record::new`'s callers, module doc), which no
        // collection moves while the scope is borrowed for `'a`.
        unsafe { Obj::at(self.word as usize) }
    }

    /// Value field `i`. Panics when field `i` of `T` is not a value field
    /// (like a slice index; a constant `i` is checked when the program
    /// compiles).
    #[inline(always)]
    pub fn get(self, i: usize) -> View<'a> {
        assert!(
            i < T::SIZE && i < 32 && (T::VALUES >> i) & 1 == 1,
            "field {i} of `{}` is not a value field",
            T::NAME
        );
        View::new(self.obj().field(i), self.descs)
    }

    /// The integer in value field `i`, if it holds one. Panics as
    /// [`Record::get`].
    #[inline(always)]
    pub fn int(self, i: usize) -> Option<i64> {
        self.get(i).as_int()
    }

    /// Raw field `i`. Panics when field `i` of `T` is not a raw field.
    #[inline(always)]
    pub fn raw(self, i: usize) -> u64 {
        assert!(
            i < T::SIZE && (i >= 32 || (T::VALUES >> i) & 1 == 0),
            "field {i} of `{}` is not a raw field",
            T::NAME
        );
        self.obj().field(i)
    }
}

impl<'a> View<'a> {
    /// This value as an object of layout `T`: `None` when it is not an
    /// object of descriptor `T::DESC`, or the runtime registered `T::DESC`
    /// with another layout. One look at the header; the record's reads
    /// need none.
    #[inline]
    pub fn record<T: Layout>(self) -> Option<Record<'a, T>> {
        let descs = self.descs();
        let w = self.found();
        if !is_pointer(w) || descs.fast(T::DESC.id()) != packed::<T>() {
            return None;
        }
        // SAFETY: a pointer value the mutator holds targets an object
        // header (no collection runs while `'a` lasts).
        let hw = unsafe { Obj::at(w as usize) }.header_word();
        let id = match Header::decode(hw) {
            Some(h) => h.id(),
            // A forwarded original: its copy's header says what it is.
            None => {
                // SAFETY: a forwarding pointer names the object's copy.
                let copy = unsafe { Obj::at(hw as usize) };
                copy.header()?.id()
            }
        };
        (id == T::DESC.id()).then(|| Record::new(w, descs))
    }
}

/// The debug check of a typed read: the object (followed if forwarded)
/// has descriptor `T::DESC`.
#[cfg(debug_assertions)]
fn check_layout<T: Layout>(w: u64) {
    let r = crate::mutator::resolve(w);
    // SAFETY: as in `Record::obj`.
    let h = unsafe { Obj::at(r as usize) }.header();
    assert!(
        matches!(h, Some(h) if h.id() == T::DESC.id()),
        "typed handle of `{}` names an object of another descriptor ({h:?})",
        T::NAME
    );
}

#[cfg(test)]
mod tests {
    use super::super::test_layouts::{runtime, Impostor, Mixed, Pair, PLANS};
    use super::*;
    use crate::PlanKind;

    /// Checks that `head` is the list `n, n - 1, .., 0` of pairs, read
    /// through typed handles.
    fn assert_list(s: &Scope<'_>, head: Typed<'_, Pair>, n: i64) {
        let (mut cell, mut n) = (Some(head), n);
        while let Some(c) = cell {
            assert_eq!(s.int(c, 0), Some(n));
            let tail = s.handle(s.get(c, 1));
            cell = s.typed::<Pair>(tail);
            n -= 1;
        }
        assert_eq!(n, -1);
    }

    #[test]
    fn typed_reads_survive_collections_on_every_plan() {
        for plan in PLANS {
            let rt = runtime(plan);
            rt.run_on(0, |s| -> Result<()> {
                // A list of 2,000 pairs built through typed handles, with
                // enough garbage between them for many collections.
                let mut list = s.nil();
                for i in 0..2_000 {
                    let cell = s.alloc_typed::<Pair>(&[Handle::int(i), list], &[])?;
                    for _ in 0..20 {
                        s.alloc_typed::<Mixed>(&[Handle::int(1), Handle::int(2)], &[7])?;
                    }
                    list = cell.untyped();
                }
                s.collect_major()?;
                let head = s.typed::<Pair>(list).expect("a pair");
                assert_list(s, head, 1_999);
                Ok(())
            })
            .unwrap()
            .unwrap();
        }
    }

    #[test]
    fn a_typed_handle_keeps_its_object_across_collections() {
        for plan in PLANS {
            let rt = runtime(plan);
            rt.run_on(0, |s| -> Result<()> {
                let m = s.alloc_typed::<Mixed>(&[Handle::int(5), Handle::int(9)], &[42])?;
                s.collect_minor();
                s.collect_major()?;
                assert_eq!(s.int(m, 0), Some(5));
                assert_eq!(s.raw_of(m, 1), 42);
                assert_eq!(s.int(m, 2), Some(9));
                // The untyped handle names the same object.
                let h = m.untyped();
                assert_eq!(s.view(h).field(2).as_int(), Some(9));
                Ok(())
            })
            .unwrap()
            .unwrap();
        }
    }

    #[test]
    fn a_promoted_object_reads_the_same_through_its_original() {
        // The split plan's promotion leaves the slot naming the local
        // original, whose header is now a forwarding pointer.
        let rt = runtime(PlanKind::SplitHeap);
        rt.run_on(0, |s| -> Result<()> {
            let inner = s.alloc_typed::<Pair>(&[Handle::int(2), Handle::int(3)], &[])?;
            let inner = inner.untyped();
            let outer = s.alloc_typed::<Pair>(&[Handle::int(1), inner], &[])?;
            let local = outer.word();
            let global = s.promote_word(outer.untyped())?;
            assert_ne!(global, local, "promotion copied the pair");
            assert_eq!(outer.word(), local, "the slot still names the original");
            assert_eq!(s.int(outer, 0), Some(1));
            assert_eq!(s.get(outer, 1).field(1).as_int(), Some(3));
            // The inner pair's original is forwarded too: a record of it
            // checks the copy's header and reads the original.
            let inner_record = s.get(outer, 1).record::<Pair>().expect("a pair");
            assert_eq!(inner_record.int(0), Some(2));
            assert!(s.get(outer, 1).record::<Mixed>().is_none());
            let inner_again = s.handle(s.get(outer, 1));
            let inner_typed = s.typed::<Pair>(inner_again).expect("the inner pair");
            assert_eq!(s.int(inner_typed, 0), Some(2));
            s.collect_minor();
            assert_eq!(outer.word(), global, "the collection updated the slot");
            assert_eq!(s.int(outer, 0), Some(1));
            assert_eq!(s.int(inner_typed, 1), Some(3));
            Ok(())
        })
        .unwrap()
        .unwrap();
    }

    #[test]
    fn typed_refuses_what_is_not_of_the_layout() {
        let rt = runtime(PlanKind::SplitHeap);
        rt.run_on(0, |s| -> Result<()> {
            let pair = s.alloc_typed::<Pair>(&[Handle::int(1), Handle::int(2)], &[])?;
            let pair = pair.untyped();
            assert!(s.typed::<Mixed>(pair).is_none(), "another descriptor");
            assert!(s.typed::<Pair>(Handle::int(3)).is_none(), "an immediate");
            let v = s.alloc_vector(&[Handle::int(1), Handle::int(2)])?;
            assert!(s.typed::<Pair>(v).is_none(), "a vector");
            // A layout whose descriptor was registered with another one
            // is refused both ways.
            assert!(s.typed::<Impostor>(pair).is_none());
            let e = s
                .alloc_typed::<Impostor>(&[Handle::int(1); 3], &[])
                .unwrap_err();
            assert!(e.to_string().contains("impostor"), "{e}");
            // The wrong number of fields is an error, not a bad object.
            assert!(s.alloc_typed::<Pair>(&[Handle::int(1)], &[]).is_err());
            Ok(())
        })
        .unwrap()
        .unwrap();
    }

    /// Wider than any packed layout: registered, but never typed.
    struct Wide;
    impl Layout for Wide {
        const NAME: &'static str = "wide";
        const DESC: DescId = DescId::nth_registered(2);
        const SIZE: usize = 40;
        const VALUES: u32 = u32::MAX;
    }

    /// No fields at all.
    struct Empty;
    impl Layout for Empty {
        const NAME: &'static str = "empty";
        const DESC: DescId = DescId::nth_registered(3);
        const SIZE: usize = 0;
        const VALUES: u32 = 0;
    }

    #[test]
    fn layouts_without_a_packed_form_are_refused_not_trusted() {
        let rt = runtime(PlanKind::SplitHeap);
        assert_eq!(
            rt.register(Wide::descriptor().unwrap()).unwrap(),
            Wide::DESC
        );
        // A descriptor of no fields is refused where it is made.
        assert!(Empty::descriptor().is_err());
        rt.run_on(0, |s| -> Result<()> {
            let values = [Handle::int(1); 32];
            let e = s.alloc_typed::<Wide>(&values, &[0; 8]).unwrap_err();
            assert!(e.to_string().contains("`wide`"), "{e}");
            // Its ID is not registered: refused too.
            let e = s.alloc_typed::<Empty>(&[], &[]).unwrap_err();
            assert!(e.to_string().contains("`empty`"), "{e}");
            // The untyped API allocates the wide one; it cannot be typed.
            let w = s.alloc_mixed(Wide::DESC, &values, &[0; 8])?;
            assert!(s.typed::<Wide>(w).is_none());
            assert!(s.typed::<Empty>(w).is_none());
            Ok(())
        })
        .unwrap()
        .unwrap();
    }

    #[test]
    fn a_nested_scope_returns_a_typed_handle() {
        for plan in PLANS {
            let rt = runtime(plan);
            rt.run_on(0, |s| -> Result<()> {
                let before = s.roots_in_use();
                let t = s.scope_typed(|s| -> Result<Typed<'_, Pair>> {
                    for _ in 0..100 {
                        s.alloc_typed::<Pair>(&[Handle::int(0), Handle::int(0)], &[])?;
                    }
                    s.alloc_typed::<Pair>(&[Handle::int(4), Handle::int(5)], &[])
                })?;
                assert_eq!(s.roots_in_use(), before + 1, "the inner slots popped");
                s.collect_major()?;
                assert_eq!((s.int(t, 0), s.int(t, 1)), (Some(4), Some(5)));
                let e =
                    s.scope_typed(|_| -> std::result::Result<Typed<'_, Pair>, &str> { Err("no") });
                assert_eq!(e.unwrap_err(), "no");
                assert_eq!(s.roots_in_use(), before + 1);
                Ok(())
            })
            .unwrap()
            .unwrap();
        }
    }

    /// A list built by recursion whose every call roots its result through
    /// `scope_fresh`, with collections inside the calls.
    fn fresh_list<'a>(s: &'a mut Scope<'_>, n: i64) -> Result<Fresh<'a, Pair>> {
        let tail = if n == 0 {
            s.nil()
        } else {
            s.scope_fresh(|s| fresh_list(s, n - 1))?.untyped()
        };
        if n % 16 == 0 {
            s.collect_minor();
        }
        for _ in 0..8 {
            s.alloc_typed::<Mixed>(&[Handle::int(0), Handle::int(0)], &[0])?;
        }
        s.alloc_fresh::<Pair>(&[Handle::int(n), tail], &[])
    }

    #[test]
    fn a_nested_scope_roots_its_fresh_object() {
        for plan in PLANS {
            let rt = runtime(plan);
            rt.run_on(0, |s| -> Result<()> {
                let before = s.roots_in_use();
                let list = s.scope_fresh(|s| fresh_list(s, 200))?;
                assert_eq!(s.roots_in_use(), before + 1, "the inner slots popped");
                s.collect_major()?;
                assert_list(s, list, 200);
                Ok(())
            })
            .unwrap()
            .unwrap();
        }
    }

    #[test]
    fn a_raw_field_is_not_read_as_a_value() {
        let rt = runtime(PlanKind::SplitHeap);
        let r = rt.run_on(0, |s| -> Result<Option<i64>> {
            let m = s.alloc_typed::<Mixed>(&[Handle::int(5), Handle::int(9)], &[42])?;
            Ok(s.int(m, 1))
        });
        // The panic is the job's error; the vproc carries on.
        let e = r.unwrap_err().to_string();
        assert!(e.contains("field 1 of `mixed` is not a value field"), "{e}");
        let after = rt.run_on(0, |s| -> Result<Option<i64>> {
            let m = s.alloc_typed::<Mixed>(&[Handle::int(5), Handle::int(9)], &[42])?;
            Ok(s.int(m, 2))
        });
        assert_eq!(after.unwrap().unwrap(), Some(9));
    }
}
