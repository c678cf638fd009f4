//! Read-only views of values.

use crate::error::{Error, ErrorKind, Result};
use crate::object::descriptor::{DescId, DescriptorTable, FastLayout};
use crate::object::header::{Header, FIRST_MIXED_ID, ID_ARRAY, ID_RAW, ID_VECTOR};
use crate::object::{is_pointer, value_int, Obj};
use std::marker::PhantomData;
use std::sync::atomic::Ordering;

/// What kind of object a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    Raw,
    Vector,
    Array,
    Mixed(DescId),
}

/// Follows the forwarding pointer of a promoted local object.
#[inline(always)]
pub(crate) fn resolve(w: u64) -> u64 {
    if !is_pointer(w) {
        return w;
    }
    // SAFETY: pointer values held by the mutator target object headers.
    let hw = unsafe { Obj::at(w as usize) }.header_word();
    if hw & 1 == 0 {
        hw
    } else {
        w
    }
}

/// A value read directly from the heap. It borrows its [`crate::Scope`]
/// shared, so no collection can move the object while the view exists.
///
/// The word it holds is the value as it was found (in a root slot or a
/// field), not yet resolved: on the split plan it may name a local object
/// that promotion has since copied to the global heap, whose header is a
/// forwarding pointer to the copy. A view follows that pointer when it
/// reads the header ([`View::obj`]), which every dereference does anyway,
/// so a read pays no separate resolution: reading an immediate field
/// touches no other object, and reading an object's fields reads its
/// header once. What compares or hands out the word ([`View::same`],
/// [`View::identity`], rooting it again) resolves it first.
#[derive(Clone, Copy)]
pub struct View<'a> {
    /// The value, possibly a forwarded object's old address.
    w: u64,
    descs: &'a DescriptorTable,
    _scope: PhantomData<&'a ()>,
}

impl<'a> View<'a> {
    #[inline(always)]
    pub(crate) fn new(w: u64, descs: &'a DescriptorTable) -> View<'a> {
        View {
            w,
            descs,
            _scope: PhantomData,
        }
    }

    /// The value as it was found, not resolved (a typed read's,
    /// `mutator::typed`).
    #[inline(always)]
    pub(super) fn found(self) -> u64 {
        self.w
    }

    /// The descriptor table the view reads layouts from.
    #[inline(always)]
    pub(super) fn descs(self) -> &'a DescriptorTable {
        self.descs
    }

    /// The value, resolved: a forwarded object's copy.
    #[inline(always)]
    pub(crate) fn word(self) -> u64 {
        resolve(self.w)
    }

    /// The object and its header, following a forwarding pointer: one
    /// load of the header word in the common case.
    #[inline(always)]
    fn obj(self) -> Option<(Obj, Header)> {
        if !is_pointer(self.w) {
            return None;
        }
        // SAFETY: pointer values held by the mutator target object headers
        // (no collection runs while `'a` lasts).
        let o = unsafe { Obj::at(self.w as usize) };
        match Header::decode(o.header_word()) {
            Some(h) => Some((o, h)),
            None => Some(Self::forwarded(o)),
        }
    }

    /// The object and its header when its header is here: `None` for an
    /// immediate and for a forwarded object, which the fast paths of
    /// [`View::field`] and [`View::raw`] leave to their slow paths (those
    /// follow the pointer). Their fast paths then make no call they must
    /// come back from, so they save no registers: a forwarded object
    /// followed inline cost every field read a stack frame (parfib's
    /// `unbox` pushed and popped three registers).
    #[inline(always)]
    fn obj_here(self) -> Option<(Obj, Header)> {
        if !is_pointer(self.w) {
            return None;
        }
        // SAFETY: as in `obj`.
        let o = unsafe { Obj::at(self.w as usize) };
        Header::decode(o.header_word()).map(|h| (o, h))
    }

    /// A promoted object's copy and its header.
    #[cold]
    #[inline(never)]
    fn forwarded(o: Obj) -> (Obj, Header) {
        // SAFETY: a forwarding pointer names the object's copy, which has a
        // header (promotion forwards once, to a global object).
        let copy = unsafe { Obj::at(o.header_word() as usize) };
        (
            copy,
            copy.header()
                .expect("a forwarded object's copy has a header"),
        )
    }

    /// Whether `self` and `other` are the same value: the same immediate,
    /// or the same object (identity, after following forwarding pointers).
    /// Two equal copies of an object are not the same; this lets a checker
    /// (the torture tester of issue 5) tell a shared object from one that a
    /// collection duplicated.
    ///
    /// ```
    /// use numagc::{Config, Handle, Runtime};
    /// let rt = Runtime::new(Config::builder().vprocs(1).build()?)?;
    /// rt.run_on(0, |s| -> numagc::Result<()> {
    ///     let a = s.alloc_vector(&[Handle::int(1)])?;
    ///     let b = s.alloc_vector(&[Handle::int(1)])?; // equal to `a`, not the same
    ///     let v = s.alloc_vector(&[a, a, b])?;
    ///     s.collect_major().unwrap(); // every object moves; sharing is kept
    ///     let v = s.view(v);
    ///     assert!(v.field(0).same(v.field(1)));
    ///     assert!(!v.field(0).same(v.field(2)));
    ///     Ok(())
    /// })??;
    /// # Ok::<(), numagc::Error>(())
    /// ```
    #[inline]
    pub fn same(self, other: View<'_>) -> bool {
        self.w == other.w || self.word() == other.word()
    }

    /// A key of this value's identity: two views of one scope have equal
    /// identities exactly when they are [`View::same`]. It lets a checker
    /// keep the objects it has visited in a hash map. The key is the
    /// object's address (or the immediate's word), so it is only meaningful
    /// while the views live: the next collection may move the object and
    /// give the address to another.
    #[inline]
    pub fn identity(self) -> u64 {
        self.word()
    }

    pub fn is_int(self) -> bool {
        !is_pointer(self.w)
    }

    pub fn is_object(self) -> bool {
        is_pointer(self.w)
    }

    /// The integer, for an immediate.
    #[inline(always)]
    pub fn as_int(self) -> Option<i64> {
        (!is_pointer(self.w)).then(|| value_int(self.w))
    }

    pub fn kind(self) -> Option<ObjectKind> {
        let (_, h) = self.obj()?;
        Some(match h.id() {
            ID_RAW => ObjectKind::Raw,
            ID_VECTOR => ObjectKind::Vector,
            ID_ARRAY => ObjectKind::Array,
            id => ObjectKind::Mixed(DescId(id)),
        })
    }

    /// Number of fields (0 for an immediate).
    pub fn len(self) -> usize {
        self.obj().map_or(0, |(_, h)| h.len())
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Value field `i`; `Err` when `i` is out of range or not a value field.
    #[inline]
    pub fn try_field(self, i: usize) -> Result<View<'a>> {
        let (o, h) = self
            .obj()
            .ok_or_else(|| Error::misuse("field of an immediate"))?;
        if i >= h.len() {
            return Err(Error::misuse(format!(
                "field {i} out of range for an object of {} fields",
                h.len()
            )));
        }
        let w = match h.id() {
            ID_VECTOR => o.field(i),
            ID_ARRAY => o.field_cell(i).load(Ordering::Acquire),
            ID_RAW => {
                return Err(Error::misuse(format!(
                    "field {i} of a raw object is not a value"
                )))
            }
            id => {
                let d = self
                    .descs
                    .get(id)
                    .ok_or_else(|| Error::from(ErrorKind::UnknownDescriptor(id)))?;
                if !d.is_pointer_field(i) {
                    return Err(Error::misuse(format!(
                        "field {i} of `{}` is a raw field",
                        d.name()
                    )));
                }
                if d.is_mutable() {
                    o.field_cell(i).load(Ordering::Acquire)
                } else {
                    o.field(i)
                }
            }
        };
        Ok(View::new(w, self.descs))
    }

    /// Value field `i`. Panics with a message on a bad index (like slice
    /// indexing); use [`View::try_field`] to get an error instead.
    #[inline]
    pub fn field(self, i: usize) -> View<'a> {
        match self.field_here(i) {
            Some(v) => v,
            None => self.field_slow(i),
        }
    }

    /// Value field `i` when the common case answers it without a look at
    /// the descriptor table: an object here (not forwarded) whose field
    /// `i` is a value, a vector's or an immutable mixed object's of a
    /// packed layout. `None` leaves the rest (arrays, mutable objects,
    /// forwarded objects, errors) to [`View::try_field`].
    ///
    /// A vector's field is in range below its length. Any other object's
    /// is tested against its packed layout alone, with no test of the ID
    /// or the length: a mixed object's length is its descriptor's size (a
    /// heap invariant: the collectors scan by the descriptor, and the
    /// verifier checks it), and a layout's mask has no bit at or past the
    /// size, so a set bit `i` says both that `i` is in range and that it is
    /// a value field; IDs without a packed layout (raw objects, arrays,
    /// mutable descriptors) have an empty mask.
    #[inline(always)]
    pub(crate) fn field_here(self, i: usize) -> Option<View<'a>> {
        let (o, h) = self.obj_here()?;
        let id = h.id();
        let here = if id == ID_VECTOR {
            i < h.len()
        } else {
            self.descs.fast(id).is_pointer_field_below_len(i)
        };
        here.then(|| View::new(o.field(i), self.descs))
    }

    #[cold]
    #[inline(never)]
    fn field_slow(self, i: usize) -> View<'a> {
        match self.try_field(i) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    /// Raw word `i` of a raw object or raw field `i` of a mixed object.
    pub fn try_raw(self, i: usize) -> Result<u64> {
        let (o, h) = self
            .obj()
            .ok_or_else(|| Error::misuse("raw field of an immediate"))?;
        if i >= h.len() {
            return Err(Error::misuse(format!(
                "field {i} out of range for an object of {} fields",
                h.len()
            )));
        }
        match h.id() {
            ID_RAW => Ok(o.field(i)),
            ID_VECTOR | ID_ARRAY => Err(Error::misuse(format!("field {i} of a vector is a value"))),
            id => {
                let d = self
                    .descs
                    .get(id)
                    .ok_or_else(|| Error::from(ErrorKind::UnknownDescriptor(id)))?;
                if d.is_pointer_field(i) {
                    return Err(Error::misuse(format!(
                        "field {i} of `{}` is a value field",
                        d.name()
                    )));
                }
                Ok(if d.is_mutable() {
                    o.field_cell(i).load(Ordering::Acquire)
                } else {
                    o.field(i)
                })
            }
        }
    }

    /// Raw word `i`; panics on a bad index (see [`View::try_raw`]).
    ///
    /// Fast path, as in [`View::field`]: a raw object, or a small immutable
    /// mixed object whose packed layout says field `i` is raw, is read with
    /// no descriptor lookup.
    #[inline]
    pub fn raw(self, i: usize) -> u64 {
        if let Some((o, h)) = self.obj_here() {
            if i < h.len() {
                let id = h.id();
                if id == ID_RAW {
                    return o.field(i);
                }
                if id >= FIRST_MIXED_ID {
                    let l = self.descs.fast(id);
                    if l.is_some() && i < l.size() && !l.is_pointer_field(i) {
                        return o.field(i);
                    }
                }
            }
        }
        self.raw_slow(i)
    }

    #[cold]
    #[inline(never)]
    fn raw_slow(self, i: usize) -> u64 {
        match self.try_raw(i) {
            Ok(w) => w,
            Err(e) => panic!("{e}"),
        }
    }

    /// The words of a raw object.
    pub fn raw_words(self) -> Option<&'a [u64]> {
        let (o, h) = self.obj()?;
        if h.id() != ID_RAW {
            return None;
        }
        // SAFETY: raw objects are immutable once allocated and cannot move
        // while `'a` lasts; their `len` words follow the header.
        Some(unsafe { std::slice::from_raw_parts(o.field_ptr(0), h.len()) })
    }

    /// The field words of an immutable object (raw, vector, or mixed of
    /// an immutable descriptor) as they lie in the heap: value fields
    /// unresolved (they may name a forwarded object: [`resolve`] them),
    /// raw fields as they are. `None` for an immediate or a mutable
    /// object, whose fields may change under the slice. For code of this
    /// crate that reads every field of many objects (the packer of
    /// `crate::pe`), without a header read and a layout check per field.
    pub(crate) fn immutable_words(self) -> Option<&'a [u64]> {
        let (o, h) = self.obj()?;
        match h.id() {
            ID_RAW | ID_VECTOR => {}
            id if id >= FIRST_MIXED_ID && self.descs.get(id).is_some_and(|d| !d.is_mutable()) => {}
            _ => return None,
        }
        // SAFETY: the object is immutable (checked above): no store
        // changes its fields after allocation, and it cannot move while
        // `'a` lasts (no collection runs); its `len` words follow the
        // header.
        Some(unsafe { std::slice::from_raw_parts(o.field_ptr(0), h.len()) })
    }

    /// The packer's fast case of [`Self::immutable_words`], from one read
    /// of the header and one load of the packed layout: the descriptor id,
    /// the packed layout and the field words of a mixed object of a small
    /// immutable descriptor (one with a [`FastLayout`]); `None` for any
    /// other value.
    #[inline(always)]
    pub(crate) fn small_immutable(self) -> Option<(u16, FastLayout, &'a [u64])> {
        let (o, h) = self.obj()?;
        let id = h.id();
        let layout = self.descs.fast(id);
        if !layout.is_some() {
            return None;
        }
        // SAFETY: only an immutable registered descriptor has a packed
        // layout (`FastLayout::of`), so no store changes the fields after
        // allocation; the object cannot move while `'a` lasts (no
        // collection runs); its `len` words follow the header.
        Some((id, layout, unsafe {
            std::slice::from_raw_parts(o.field_ptr(0), h.len())
        }))
    }

    /// Raw word `i` read as an `f64`.
    #[inline]
    pub fn f64(self, i: usize) -> f64 {
        f64::from_bits(self.raw(i))
    }
}

impl std::fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.as_int() {
            Some(i) => write!(f, "Int({i})"),
            None => write!(f, "{:?}@{:#x}[{}]", self.kind(), self.word(), self.len()),
        }
    }
}
