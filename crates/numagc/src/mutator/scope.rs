//! Handle scopes and allocation.

use crate::error::{Error, ErrorKind, Result};
use crate::mutator::roots::GlobalRoot;
use crate::mutator::view::{resolve, View};
use crate::object::descriptor::{DescId, Descriptor, DescriptorTable, FastLayout, FastLayouts};
use crate::object::header::{Header, ID_ARRAY, ID_RAW, ID_VECTOR, MAX_LENGTH};
use crate::object::{int_value, is_mutable, is_pointer, Obj, NIL};
use crate::plan;
use crate::vproc::Vproc;
use std::marker::PhantomData;

/// A rooted value: an immediate, or a slot of the root stack of the scope
/// `'s` (or of an enclosing scope).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handle<'s> {
    /// Odd: the immediate itself. Even: the address of its root-stack
    /// slot (so that a typed handle's slot is a handle too, and a push
    /// computes no index).
    pub(super) bits: u64,
    pub(super) _scope: PhantomData<&'s ()>,
    pub(super) _not_send: PhantomData<*const ()>,
}

impl<'s> Handle<'s> {
    /// The handle of the root-stack slot at `slot`.
    #[inline(always)]
    pub(crate) fn at_slot(slot: *mut u64) -> Handle<'s> {
        Handle {
            bits: slot as u64,
            _scope: PhantomData,
            _not_send: PhantomData,
        }
    }

    /// Whether the handle is an immediate rather than a root slot.
    #[inline(always)]
    pub(crate) fn is_immediate(self) -> bool {
        self.bits & 1 == 1
    }
}

impl Handle<'static> {
    /// The unit / empty value (the integer 0).
    pub const NIL: Handle<'static> = Handle::int(0);

    /// An immediate 63-bit integer (the top bit of `i` is lost).
    pub const fn int(i: i64) -> Handle<'static> {
        Handle {
            bits: int_value(i),
            _scope: PhantomData,
            _not_send: PhantomData,
        }
    }
}

/// A reassignable root-stack slot: a variable of the mutator (in the
/// spirit of OCaml's `CAMLlocal`). Loops that rebind a value keep it in one
/// slot instead of pushing a handle per iteration. [`Slot::get`] gives a
/// handle that always reads the slot's current value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot<'s> {
    /// The slot's address.
    addr: u64,
    index: u32,
    _scope: PhantomData<&'s ()>,
    _not_send: PhantomData<*const ()>,
}

impl<'s> Slot<'s> {
    /// The slot's position in the vproc's root stack.
    pub fn index(self) -> usize {
        self.index as usize
    }

    /// A handle reading this slot.
    #[inline(always)]
    pub fn get(self) -> Handle<'s> {
        Handle {
            bits: self.addr,
            _scope: PhantomData,
            _not_send: PhantomData,
        }
    }
}

/// A region of the root stack. Handles created through a scope are popped
/// when it ends, and the borrow checker rejects a handle that outlives its
/// scope. Everything that can run a collection takes `&mut Scope`; a
/// [`View`] borrows the scope shared, so no collection can move the object
/// it reads.
pub struct Scope<'s> {
    pub(super) vp: &'s mut Vproc,
    /// The descriptor table's packed layouts, kept here so the allocation
    /// fast path reaches them with one load less.
    pub(super) layouts: FastLayouts,
    /// The vproc's mutator record, kept here so that a handle's root slot
    /// is one dependent load away (the record holds the root stack's top).
    pub(super) rec: *const crate::compiled::MutatorRecord,
    /// The root stack's top when the scope began: its first slot, popped
    /// from when a job's outermost scope ([`Scope::root`]) is dropped.
    /// Nested scopes are this scope reborrowed ([`Scope::enter`]).
    base: *mut u64,
    _not_send: PhantomData<*const ()>,
}

impl<'s> Scope<'s> {
    /// The outermost scope of a job (root stack empty).
    pub(crate) fn root(vp: &'s mut Vproc) -> Scope<'s> {
        // SAFETY: as in `roots`: the vproc's record outlives the scope.
        let base = crate::compiled::record::Roots(unsafe { &*vp.rec }).top();
        Scope {
            layouts: vp.layouts,
            rec: vp.rec,
            vp,
            base,
            _not_send: PhantomData,
        }
    }

    // ---- root stack -------------------------------------------------------

    /// The vproc's root stack. It is mutated through `&self` (pushes)
    /// and by collectors, which need `&mut Vproc` and so cannot run while
    /// `&self` is borrowed; `Scope` is neither Send nor Sync, so there is
    /// one thread.
    #[inline(always)]
    pub(crate) fn roots(&self) -> crate::compiled::record::Roots<'_> {
        // SAFETY: `rec` is the vproc's record, in the coordinator that the
        // vproc's `Arc<Shared>` keeps alive for longer than this scope.
        crate::compiled::record::Roots(unsafe { &*self.rec })
    }

    /// Roots `w` in this scope (immediates need no slot).
    #[inline(always)]
    pub(crate) fn push_root(&self, w: u64) -> Handle<'s> {
        if !is_pointer(w) {
            return Handle {
                bits: w,
                _scope: PhantomData,
                _not_send: PhantomData,
            };
        }
        self.push_pointer(w as usize)
    }

    /// Roots a pointer value: a new object, or a word known not to be an
    /// immediate (no test for one).
    #[inline(always)]
    fn push_pointer(&self, p: usize) -> Handle<'s> {
        let slot = self.roots().push_addr(p as u64);
        Handle {
            bits: slot.as_ptr() as u64,
            _scope: PhantomData,
            _not_send: PhantomData,
        }
    }

    /// The nursery bump alone, through the record this scope holds (one
    /// load less than through the vproc): `None` past the limit, where the
    /// caller takes its general path, which runs the slow allocation.
    /// With no call to come back from, the fast paths that use it need no
    /// stack frame.
    #[inline(always)]
    pub(super) fn bump(&self, bytes: usize) -> Option<usize> {
        // SAFETY: as in `roots`.
        unsafe { &*self.rec }.bump(bytes)
    }

    /// Pushes `w` (immediate or not) into a new slot of this scope.
    pub(crate) fn push_slot_word(&self, w: u64) {
        self.roots().push(w);
    }

    /// Promotes `h`'s value and returns the global word.
    pub(crate) fn promote_word(&mut self, h: Handle<'_>) -> Result<u64> {
        let mut w = [self.word(h)];
        plan::promote_words(self.vp, &mut w)?;
        Ok(w[0])
    }

    /// The state shared by the runtime's vprocs.
    pub(crate) fn shared(&self) -> std::sync::Arc<crate::vproc::Shared> {
        self.vp.shared.clone()
    }

    /// The current word of a handle.
    ///
    /// A handle's slot stays pushed for as long as the handle's scope
    /// lives: only the end of a scope pops slots, and only its own, and
    /// the borrow checker keeps a handle inside its scope (handles are
    /// neither `Send` nor `Sync`, so the slot is this vproc's). So the
    /// read is checked against the root stack's bounds in debug builds
    /// only (the tests), as a typed handle's is not checked at all
    /// (`typed`'s module doc): two loads and two branches less on every
    /// read of a handle.
    #[inline(always)]
    pub(crate) fn word(&self, h: Handle<'_>) -> u64 {
        if h.bits & 1 == 1 {
            return h.bits;
        }
        let slot = h.bits as *mut u64;
        if cfg!(debug_assertions) {
            return self.roots().get_at(slot);
        }
        // SAFETY: `slot` is a pushed slot of this vproc's root stack, in
        // its mapping and 8-aligned (above).
        unsafe { slot.read() }
    }

    /// The value word behind a handle (for code on the compiled-code
    /// interface, `crate::compiled`): valid until the next call that may
    /// collect.
    #[inline(always)]
    pub fn raw_word(&self, h: Handle<'_>) -> u64 {
        self.word(h)
    }

    /// Roots a value word from compiled code in this scope.
    ///
    /// # Safety
    /// `w` is an immediate or a live value of this runtime, read since the
    /// last call that may collect.
    #[inline(always)]
    pub unsafe fn root_word(&self, w: u64) -> Handle<'s> {
        self.push_root(w)
    }

    /// A new slot of this scope holding `h`'s value.
    pub fn slot(&self, h: Handle<'_>) -> Slot<'s> {
        let w = self.word(h);
        let roots = self.roots();
        let index = roots.push_slot(w);
        Slot {
            addr: roots.slot_addr(index) as u64,
            index: index as u32,
            _scope: PhantomData,
            _not_send: PhantomData,
        }
    }

    /// Stores `h`'s value into `slot`.
    #[inline(always)]
    pub fn assign(&self, slot: Slot<'_>, h: Handle<'_>) {
        let w = self.word(h);
        self.write_slot(slot, w);
    }

    #[inline(always)]
    fn write_slot(&self, slot: Slot<'_>, w: u64) {
        self.roots().set(slot.index as usize, w);
    }

    /// The vproc under this scope (the scheduler's waiting duties, tests
    /// of the collectors).
    /// Whether the object at `addr` is in this vproc's private heap (the
    /// split plan's local heap; never on the shared plan).
    pub(crate) fn is_private(&self, addr: u64) -> bool {
        crate::plan::is_private(self.vp, addr as usize)
    }

    pub(crate) fn vproc_mut(&mut self) -> &mut Vproc {
        self.vp
    }

    /// Number of root-stack slots in use (all scopes of this vproc).
    pub fn roots_in_use(&self) -> usize {
        self.roots().len()
    }

    /// Runs `f` in a nested scope; its handles are popped afterwards.
    #[inline]
    pub fn scope<R>(&mut self, f: impl for<'i> FnOnce(&mut Scope<'i>) -> R) -> R {
        let (inner, entry) = self.enter();
        let r = f(inner);
        entry.pop(self);
        r
    }

    /// This scope as a nested one: the same scope under a lifetime of the
    /// nested scope's own, which the caller's closure takes as a
    /// higher-ranked one, so that the handles made in it cannot outlive
    /// it; and the [`Entry`] that pops what was pushed since, when the
    /// caller has done (or when the closure unwinds).
    ///
    /// No copy of the scope is made: a copy on the stack per nested scope
    /// put a store and a dependent load (the copy's record pointer, then
    /// the record's fields) on the path of every call of a recursive
    /// program, which the calls waited on (issue 18: the copies were most
    /// of what the safe parfib lost, `docs/results/compiled.md`).
    #[inline(always)]
    pub(super) fn enter(&mut self) -> (&mut Scope<'_>, Entry) {
        let entry = Entry {
            rec: self.rec,
            base: self.roots().top(),
        };
        // SAFETY: the result is this scope with `'s` shortened to the
        // borrow's lifetime (a nested scope's own): its fields are what a
        // nested scope's would be but for `base`, which only the drop of
        // a scope reads (`Scope::root`'s), and a reference is not dropped.
        // The callers hand it to a closure generic over the lifetime, so
        // its handles cannot outlive the borrow; `Entry` pops them.
        let inner = unsafe { &mut *(self as *mut Scope<'s>).cast::<Scope<'_>>() };
        (inner, entry)
    }

    /// Runs `f` in a nested scope and keeps the handle it returns, which is
    /// re-rooted in this scope.
    #[inline]
    pub fn scope_value<E>(
        &mut self,
        f: impl for<'i> FnOnce(&mut Scope<'i>) -> std::result::Result<Handle<'i>, E>,
    ) -> std::result::Result<Handle<'s>, E> {
        let (inner, entry) = self.enter();
        let w = f(inner).map(|h| inner.word(h));
        // The nested scope's slots are popped and the result pushed into
        // the first of them, with one store of the top (`truncate_push`).
        let base = entry.keep();
        let roots = self.roots();
        w.map(|w| {
            if is_pointer(w) {
                let slot = roots.truncate_push_at(base, w);
                Handle {
                    bits: slot.as_ptr() as u64,
                    _scope: PhantomData,
                    _not_send: PhantomData,
                }
            } else {
                roots.truncate_at(base);
                Handle {
                    bits: w,
                    _scope: PhantomData,
                    _not_send: PhantomData,
                }
            }
        })
        .inspect_err(|_| roots.truncate_at(base))
    }

    // ---- reading ------------------------------------------------------------

    /// A view of a handle's value for reading without root-stack traffic.
    #[inline(always)]
    pub fn view(&self, h: Handle<'_>) -> View<'_> {
        View::new(self.word(h), &self.vp.shared.descs)
    }

    /// Roots a value found through a view.
    #[inline(always)]
    pub fn handle(&self, v: View<'_>) -> Handle<'s> {
        self.push_root(v.word())
    }

    /// Field `i` of an object, rooted. Errors name what was wrong.
    #[inline(always)]
    pub fn field(&self, h: Handle<'_>, i: usize) -> Result<Handle<'s>> {
        match self.view(h).field_here(i) {
            Some(v) => Ok(self.handle(v)),
            None => self.field_checked(h, i),
        }
    }

    /// [`Scope::field`] past its fast path: arrays, mutable and forwarded
    /// objects, and the errors.
    #[inline(never)]
    fn field_checked(&self, h: Handle<'_>, i: usize) -> Result<Handle<'s>> {
        let v = self.view(h).try_field(i)?;
        Ok(self.handle(v))
    }

    /// The integer in a handle, if it holds one.
    pub fn as_int(&self, h: Handle<'_>) -> Option<i64> {
        self.view(h).as_int()
    }

    /// Which vproc this scope runs on.
    pub fn vproc(&self) -> usize {
        self.vp.id
    }

    /// The topology node of this vproc.
    pub fn node(&self) -> usize {
        self.vp.node
    }

    /// Number of vprocs of the runtime.
    pub fn vprocs(&self) -> usize {
        self.vp.shared.coord.vprocs()
    }

    /// Whether a value lives in this vproc's local heap.
    pub fn is_local(&self, h: Handle<'_>) -> bool {
        let w = resolve(self.word(h));
        is_pointer(w) && plan::is_private(self.vp, w as usize)
    }

    // ---- allocation -----------------------------------------------------------

    /// Reserves an object of `words` fields; `Ok(None)` means "allocate it
    /// in the global heap".
    #[inline(always)]
    fn reserve(&mut self, words: usize) -> Result<Option<usize>> {
        let bytes = (words + 1) * 8;
        if bytes >= self.vp.large_object_size {
            return Ok(None);
        }
        if let Some(p) = self.bump(bytes) {
            return Ok(Some(p));
        }
        plan::alloc_slow(self.vp, bytes)
    }

    /// Places an object in the global heap and fills its fields with
    /// `fill(obj, promoted_words)`, where the words are those of `values`,
    /// promoted. The words are read only after the allocation, which may
    /// run a global collection that moves the values.
    fn global_object(
        &mut self,
        h: Header,
        values: &[Handle<'_>],
        fill: impl FnOnce(Obj, &[u64]),
    ) -> Result<Handle<'s>> {
        let addr = plan::alloc_global(self.vp, h.size_bytes())?;
        let mut words: Vec<u64> = values.iter().map(|&v| self.word(v)).collect();
        if let Err(e) = plan::promote_words(self.vp, &mut words) {
            // The reserved room must hold an object before the next
            // safepoint: fill it with immediates (garbage from now on).
            // SAFETY: `addr` was just reserved for this object.
            let o = unsafe { Obj::at(addr) };
            fill(o, &vec![NIL; words.len()]);
            o.init_header(h);
            return Err(e);
        }
        // SAFETY: `addr` was just reserved for this object in the global heap.
        let o = unsafe { Obj::at(addr) };
        fill(o, &words);
        o.init_header(h);
        plan::init_global(self.vp, o);
        Ok(self.push_root(addr as u64))
    }

    fn check_len(len: usize) -> Result<()> {
        if len as u64 > MAX_LENGTH {
            return Err(Error::misuse(format!(
                "object length {len} exceeds the 48-bit length field"
            )));
        }
        Ok(())
    }

    /// Allocates a mixed object of descriptor `d`: `values` fill its value
    /// fields and `raw` its raw fields, each in ascending field order.
    #[inline(always)]
    pub fn alloc_mixed(
        &mut self,
        d: DescId,
        values: &[Handle<'_>],
        raw: &[u64],
    ) -> Result<Handle<'s>> {
        match self.alloc_mixed_fast(d, values, raw) {
            Some(p) => Ok(self.push_pointer(p)),
            None => self.alloc_mixed_general(d, values, raw),
        }
    }

    /// [`Scope::alloc_mixed`] storing the new object into `slot` instead of
    /// a new handle (no root-stack growth).
    #[inline(always)]
    pub fn alloc_mixed_to(
        &mut self,
        slot: Slot<'_>,
        d: DescId,
        values: &[Handle<'_>],
        raw: &[u64],
    ) -> Result<()> {
        let w = match self.alloc_mixed_fast(d, values, raw) {
            Some(p) => p as u64,
            None => {
                let h = self.alloc_mixed_general(d, values, raw)?;
                self.word(h)
            }
        };
        self.write_slot(slot, w);
        Ok(())
    }

    /// The nursery fast path of mixed allocation: `None` when the object
    /// needs the general path (not small and immutable, or the nursery
    /// cannot hold it: the general path runs the slow allocation).
    #[inline(always)]
    pub(super) fn alloc_mixed_fast(
        &mut self,
        d: DescId,
        values: &[Handle<'_>],
        raw: &[u64],
    ) -> Option<usize> {
        let f = self.layouts.get(d.0);
        if !f.is_some() {
            return None;
        }
        self.alloc_small(d.0, f, values, raw)
    }

    /// The nursery fast path of an object of descriptor `id`, whose packed
    /// layout `f` the caller has read from this runtime's table (or
    /// compared with it: `mutator::typed`, where `f` is a constant and
    /// the tests below fold away). `None` when `values` and `raw` do not
    /// fit the layout or the nursery cannot hold the object.
    #[inline(always)]
    pub(super) fn alloc_small(
        &mut self,
        id: u16,
        f: FastLayout,
        values: &[Handle<'_>],
        raw: &[u64],
    ) -> Option<usize> {
        if f.fits(values.len(), raw.len()) {
            // A packed layout's object is below every allowed
            // large-object size (`FastLayout::MAX_SIZE`).
            if let Some(p) = self.bump((f.size() + 1) * 8) {
                // SAFETY: `p` is a fresh nursery reservation of the
                // object's size; the counts were checked above.
                unsafe { self.init_small(p, id, f, values, raw, None) };
                return Some(p);
            }
        }
        None
    }

    /// Writes the header and fields of a small object of descriptor `id`
    /// and packed layout `f` at `p`: `values` fill its value fields and
    /// `raw` its raw ones, in order; with `hold = Some((k, w))` the `k`th
    /// value field gets `w` instead of `values[k]`'s word (a combined
    /// allocation's inner object, `mutator::combined`).
    ///
    /// # Safety
    /// `p` is a fresh nursery reservation of `f.size()` fields; `values`
    /// and `raw` have `f`'s numbers of value and raw fields, and `k` is
    /// below `values.len()`; `w` is an object allocated since the last
    /// call that may collect.
    #[inline(always)]
    pub(super) unsafe fn init_small(
        &self,
        p: usize,
        id: u16,
        f: FastLayout,
        values: &[Handle<'_>],
        raw: &[u64],
        hold: Option<(usize, u64)>,
    ) {
        let size = f.size();
        let mask = f.pointer_mask();
        // SAFETY: the caller's contract.
        let o = unsafe { Obj::at(p) };
        let word = |k: usize, v: Handle<'_>| match hold {
            Some((at, w)) if at == k => w,
            _ => self.word(v),
        };
        if raw.is_empty() {
            // Every field is a value, in order: with a literal `values`
            // this loop unrolls and tests no mask bits. The handles are
            // read before the first store into the object, so the root
            // stack is loaded once.
            let mut words = [0u64; FastLayout::MAX_SIZE];
            for (k, (w, &v)) in words.iter_mut().zip(values).enumerate() {
                *w = word(k, v);
            }
            o.init_header(Header::new(id, size as u64));
            for (i, &w) in words[..values.len()].iter().enumerate() {
                o.set_field(i, w);
            }
            return;
        }
        o.init_header(Header::new(id, size as u64));
        let (mut vi, mut ri) = (0, 0);
        for i in 0..size {
            if (mask >> i) & 1 == 1 {
                o.set_field(i, word(vi, values[vi]));
                vi += 1;
            } else {
                o.set_field(i, raw[ri]);
                ri += 1;
            }
        }
    }

    /// `alloc_mixed` for large, mutable or global objects, and errors.
    #[inline(never)]
    fn alloc_mixed_general(
        &mut self,
        d: DescId,
        values: &[Handle<'_>],
        raw: &[u64],
    ) -> Result<Handle<'s>> {
        let descs: *const DescriptorTable = &self.vp.shared.descs;
        // SAFETY: the table lives in `Shared`, which the Arc in `self.vp`
        // keeps alive (and never replaces) for longer than this call;
        // registered descriptors are never changed or freed before it.
        let desc = unsafe { &*descs }
            .get(d.0)
            .ok_or_else(|| Error::from(ErrorKind::UnknownDescriptor(d.0)))?;
        if values.len() != desc.pointer_offsets().len() || raw.len() != desc.raw_offsets().len() {
            return Err(Self::field_count_error(desc, values.len(), raw.len()));
        }
        let h = Header::new(d.0, desc.size() as u64);
        if !desc.is_mutable() {
            if let Some(p) = self.reserve(desc.size())? {
                // SAFETY: `p` is a fresh nursery reservation of the object's size.
                let o = unsafe { Obj::at(p) };
                o.init_header(h);
                for (&off, &v) in desc.pointer_offsets().iter().zip(values) {
                    o.set_field(off as usize, self.word(v));
                }
                for (&off, &r) in desc.raw_offsets().iter().zip(raw) {
                    o.set_field(off as usize, r);
                }
                return Ok(self.push_root(p as u64));
            }
        }
        self.global_object(h, values, |o, w| {
            for (&off, &v) in desc.pointer_offsets().iter().zip(w) {
                o.field_cell(off as usize)
                    .store(v, std::sync::atomic::Ordering::Relaxed);
            }
            for (&off, &r) in desc.raw_offsets().iter().zip(raw) {
                o.set_field(off as usize, r);
            }
        })
    }

    #[cold]
    fn field_count_error(desc: &Descriptor, values: usize, raw: usize) -> Error {
        Error::misuse(format!(
            "descriptor `{}` has {} value and {} raw fields; got {values} and {raw}",
            desc.name(),
            desc.pointer_offsets().len(),
            desc.raw_offsets().len(),
        ))
    }

    /// Allocates an immutable vector holding `values`.
    pub fn alloc_vector(&mut self, values: &[Handle<'_>]) -> Result<Handle<'s>> {
        Self::check_len(values.len())?;
        let h = Header::new(ID_VECTOR, values.len() as u64);
        if let Some(p) = self.reserve(values.len())? {
            // SAFETY: fresh nursery reservation of the object's size.
            let o = unsafe { Obj::at(p) };
            o.init_header(h);
            for (i, &v) in values.iter().enumerate() {
                o.set_field(i, self.word(v));
            }
            return Ok(self.push_root(p as u64));
        }
        self.global_object(h, values, |o, w| {
            (0..w.len()).for_each(|i| o.set_field(i, w[i]))
        })
    }

    /// Allocates an immutable vector of `len` copies of `value`.
    pub fn alloc_vector_filled(&mut self, len: usize, value: Handle<'_>) -> Result<Handle<'s>> {
        Self::check_len(len)?;
        let h = Header::new(ID_VECTOR, len as u64);
        if let Some(p) = self.reserve(len)? {
            // SAFETY: fresh nursery reservation of the object's size.
            let o = unsafe { Obj::at(p) };
            o.init_header(h);
            let w = self.word(value);
            (0..len).for_each(|i| o.set_field(i, w));
            return Ok(self.push_root(p as u64));
        }
        self.global_object(h, &[value], |o, w| {
            (0..len).for_each(|i| o.set_field(i, w[0]))
        })
    }

    /// Allocates a raw-data object of `len` words filled by `init`.
    pub fn alloc_raw_with(
        &mut self,
        len: usize,
        init: impl FnOnce(&mut [u64]),
    ) -> Result<Handle<'s>> {
        Self::check_len(len)?;
        let h = Header::new(ID_RAW, len as u64);
        let fill = |o: Obj| {
            // SAFETY: the object's `len` fields were just reserved and no
            // one else can see them yet.
            let body = unsafe { std::slice::from_raw_parts_mut(o.field_ptr(0), len) };
            body.fill(0);
            init(body);
        };
        if let Some(p) = self.reserve(len)? {
            // SAFETY: fresh nursery reservation of the object's size.
            let o = unsafe { Obj::at(p) };
            o.init_header(h);
            fill(o);
            return Ok(self.push_root(p as u64));
        }
        self.global_object(h, &[], |o, _| fill(o))
    }

    /// Allocates a raw-data object holding `words`.
    pub fn alloc_raw(&mut self, words: &[u64]) -> Result<Handle<'s>> {
        self.alloc_raw_with(words.len(), |b| b.copy_from_slice(words))
    }

    /// Allocates a raw-data object holding `xs` as IEEE-754 bit patterns.
    pub fn alloc_f64s(&mut self, xs: &[f64]) -> Result<Handle<'s>> {
        self.alloc_raw_with(xs.len(), |b| {
            b.iter_mut().zip(xs).for_each(|(w, x)| *w = x.to_bits())
        })
    }

    /// Allocates a mutable array of `len` copies of `init`, in the global heap.
    pub fn alloc_array(&mut self, len: usize, init: Handle<'_>) -> Result<Handle<'s>> {
        Self::check_len(len)?;
        let h = Header::new(ID_ARRAY, len as u64);
        self.global_object(h, &[init], |o, w| {
            (0..len).for_each(|i| o.set_field(i, w[0]))
        })
    }

    // ---- mutation ---------------------------------------------------------------

    /// Stores `value` into field `i` of a mutable object. A local value is
    /// promoted first (the write barrier).
    pub fn set(&mut self, obj: Handle<'_>, i: usize, value: Handle<'_>) -> Result<()> {
        let o = self.mutable_target(obj, i, true)?;
        let mut w = [self.word(value)];
        plan::promote_words(self.vp, &mut w)?;
        plan::pre_store(self.vp, o, i);
        o.field_cell(i)
            .store(w[0], std::sync::atomic::Ordering::Release);
        plan::remember_store(self.vp, o, i);
        Ok(())
    }

    /// Stores a raw word into raw field `i` of a mutable mixed object.
    pub fn set_raw(&mut self, obj: Handle<'_>, i: usize, raw: u64) -> Result<()> {
        let o = self.mutable_target(obj, i, false)?;
        o.field_cell(i)
            .store(raw, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    fn mutable_target(&self, obj: Handle<'_>, i: usize, value_field: bool) -> Result<Obj> {
        let w = resolve(self.word(obj));
        if !is_pointer(w) {
            return Err(Error::misuse("store into an immediate, not an object"));
        }
        // SAFETY: a handle's pointer value targets a live object.
        let o = unsafe { Obj::at(w as usize) };
        let h = o.header().expect("resolved object has a header");
        let descs = &self.vp.shared.descs;
        if !is_mutable(h, descs) {
            return Err(Error::misuse(format!(
                "store into an immutable object (id {})",
                h.id()
            )));
        }
        if i >= h.len() {
            return Err(Error::misuse(format!(
                "field {i} out of range for an object of {} fields",
                h.len()
            )));
        }
        let is_value =
            h.id() == ID_ARRAY || descs.get(h.id()).is_some_and(|d| d.is_pointer_field(i));
        if is_value != value_field {
            return Err(Error::misuse(format!(
                "field {i} is a {} field",
                if is_value { "value" } else { "raw" }
            )));
        }
        Ok(o)
    }

    // ---- sharing, roots, collections ----------------------------------------------

    /// Promotes a value (and everything it reaches) to the global heap, so it
    /// may be shared with other vprocs. Returns the handle of the global copy.
    ///
    /// Errors: [`ErrorKind::MapFailed`] when the system refuses the memory for
    /// the copies (nothing is promoted then).
    pub fn promote(&mut self, h: Handle<'_>) -> Result<Handle<'s>> {
        let w = self.promote_word(h)?;
        Ok(self.push_root(w))
    }

    /// Registers a global root holding `h`'s value (promoted).
    ///
    /// Errors: [`ErrorKind::MapFailed`] like [`Scope::promote`] (no root is
    /// registered then).
    pub fn global_root(&mut self, h: Handle<'_>) -> Result<GlobalRoot> {
        let w = self.promote_word(h)?;
        let slot = self.vp.shared.global_roots.add(w);
        Ok(GlobalRoot {
            slot,
            shared: self.vp.shared.clone(),
        })
    }

    /// A global-root slot holding `h`'s value (promoted), which the caller
    /// frees (`GlobalRoots::remove`): for tables of the runtime's own that
    /// outlive scopes, as a PE's weight books do.
    pub(crate) fn global_root_slot(&mut self, h: Handle<'_>) -> Result<usize> {
        let w = self.promote_word(h)?;
        Ok(self.vp.shared.global_roots.add(w))
    }

    /// Checks that `r` was made by this runtime: a root's slot number means
    /// nothing in another runtime's table (it would name another value, or
    /// none).
    fn own_root(&self, r: &GlobalRoot, what: &str) -> Result<()> {
        if std::sync::Arc::ptr_eq(&r.shared, &self.vp.shared) {
            Ok(())
        } else {
            Err(Error::misuse(format!(
                "{what}: global root {} belongs to another runtime",
                r.slot
            )))
        }
    }

    /// Reads a global root.
    ///
    /// Errors: [`ErrorKind::Misuse`] when `r` belongs to another runtime.
    pub fn get_global(&self, r: &GlobalRoot) -> Result<Handle<'s>> {
        self.own_root(r, "get_global")?;
        Ok(self.push_root(self.vp.shared.global_roots.get(r.slot)))
    }

    /// Replaces a global root's value (promoted).
    ///
    /// Errors: [`ErrorKind::Misuse`] when `r` belongs to another runtime;
    /// [`ErrorKind::MapFailed`] like [`Scope::promote`]. The root keeps its
    /// value either way.
    pub fn set_global(&mut self, r: &GlobalRoot, h: Handle<'_>) -> Result<()> {
        self.own_root(r, "set_global")?;
        let w = self.promote_word(h)?;
        self.vp.shared.global_roots.set(r.slot, w);
        Ok(())
    }

    /// A safepoint for loops that do not allocate: joins a pending global
    /// collection.
    #[inline]
    pub fn poll(&mut self) {
        if self.vp.shared.coord.pending() || self.vp.shared.coord.signalled(self.vp.id) {
            plan::poll(self.vp);
        }
    }

    /// Forces a minor collection (which may trigger a major one). It
    /// cannot fail: a major collection it triggers is skipped when the
    /// system refuses its copy reserve, and the next allocation that needs
    /// one reports that.
    pub fn collect_minor(&mut self) {
        plan::collect_minor(self.vp);
    }

    /// Forces a minor and a major collection of this vproc's local heap.
    ///
    /// Errors: [`ErrorKind::MapFailed`] when the system refuses the major
    /// collection's copy reserve (the minor collection ran, the major one
    /// did not start; the heap is intact).
    pub fn collect_major(&mut self) -> Result<()> {
        plan::collect_major(self.vp)
    }

    /// Forces a global collection (every vproc takes part). It is a full
    /// one: every global chunk is evacuated.
    ///
    /// Errors, for a collection called off before anything moved (the heap
    /// is intact): [`ErrorKind::SafepointTimeout`] when a vproc did not reach a
    /// safepoint within `safepoint-timeout`, [`ErrorKind::MapFailed`] when the
    /// system refused its to-space.
    pub fn collect_global(&mut self) -> Result<()> {
        plan::collect_global(self.vp)
    }

    /// A full collection that leaves the heap compact and gives the
    /// memory it freed back to the system (OCaml's `Gc.compact`). On the
    /// shared plan, objects of sparsely used pages move into denser ones
    /// (`compact-overhead` also has the runtime do this by itself); on the
    /// split plan, the full global collection compacts by copying, and the
    /// free chunks it leaves are returned. Errors as
    /// [`Scope::collect_global`].
    pub fn compact(&mut self) -> Result<()> {
        plan::compact(self.vp)
    }

    /// Forces a global collection of the kind a trigger starts: with
    /// `young-global-gc` on, a young one (tenured data stays in place, the
    /// remembered stores are its roots) unless tenured data has outgrown its
    /// limit; otherwise a full one. Lets tests reach young collections at
    /// points of their choosing. Errors as [`Scope::collect_global`].
    pub fn collect_global_young(&mut self) -> Result<()> {
        plan::collect_global_young(self.vp)
    }

    /// Bytes of this vproc's local heap in use (old data + nursery).
    pub fn local_bytes_in_use(&self) -> usize {
        plan::private_bytes_in_use(self.vp)
    }

    /// The immediate NIL as a handle of this scope.
    pub fn nil(&self) -> Handle<'s> {
        Handle {
            bits: NIL,
            _scope: PhantomData,
            _not_send: PhantomData,
        }
    }
}

impl Drop for Scope<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.roots().truncate_at(self.base);
    }
}

/// The root stack's top where a nested scope began ([`Scope::enter`]):
/// the nested scope's slots are those from it up. Dropped (when the
/// nested scope's closure unwinds) it pops them; [`Entry::pop`] and
/// [`Entry::keep`] end it when the closure returns.
pub(super) struct Entry {
    rec: *const crate::compiled::MutatorRecord,
    base: *mut u64,
}

impl Entry {
    /// Pops the nested scope's slots.
    #[inline(always)]
    pub(super) fn pop(self, s: &Scope<'_>) {
        s.roots().truncate_at(self.keep());
    }

    /// The nested scope's first slot, its slots left for the caller to
    /// pop (or to pop with a push, `Roots::truncate_push_at`).
    #[inline(always)]
    pub(super) fn keep(self) -> *mut u64 {
        let base = self.base;
        std::mem::forget(self);
        base
    }
}

impl Drop for Entry {
    fn drop(&mut self) {
        // SAFETY: the record is the scope's, in the coordinator that the
        // vproc's `Arc<Shared>` keeps alive while the scope lives, which
        // is longer than the nested scope's closure.
        crate::compiled::record::Roots(unsafe { &*self.rec }).truncate_at(self.base);
    }
}
