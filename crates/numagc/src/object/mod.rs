//! Values and heap objects (§3.2).
//!
//! A *value* is one 64-bit word: a pointer to an object's header (8-aligned,
//! so bit 0 is 0) or an immediate with bit 0 set (a 63-bit integer shifted
//! left by one). An *object* is a header word followed by `len` fields.
//!
//! This module owns the raw loads and stores on object memory. `Obj` is a
//! pointer to a header; creating one is `unsafe` because the caller asserts
//! that the address holds an object (or a forwarded object) and stays mapped
//! while the `Obj` is used. Its accessors are then safe.

pub mod descriptor;
pub mod header;

use crate::object::descriptor::DescriptorTable;
use crate::object::header::{Header, ID_ARRAY, ID_RAW, ID_VECTOR};
use std::sync::atomic::{AtomicU64, Ordering};

/// The immediate that stands for "no value" (the integer 0).
pub const NIL: u64 = 1;

/// Whether a value word is a pointer (bit 0 clear).
#[inline(always)]
pub const fn is_pointer(w: u64) -> bool {
    w & 1 == 0
}

/// Encodes a 63-bit integer as an immediate value.
#[inline(always)]
pub const fn int_value(i: i64) -> u64 {
    ((i as u64) << 1) | 1
}

/// Decodes an immediate value as an integer.
#[inline(always)]
pub const fn value_int(w: u64) -> i64 {
    (w as i64) >> 1
}

/// A pointer to an object's header word.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Obj(usize);

impl Obj {
    /// # Safety
    /// `addr` must be the address of an object header (or of a forwarded
    /// object's header slot) in memory that stays mapped while this `Obj` and
    /// its copies are used.
    #[inline(always)]
    pub(crate) unsafe fn at(addr: usize) -> Obj {
        debug_assert!(
            addr != 0 && addr.is_multiple_of(8),
            "object address {addr:#x}"
        );
        Obj(addr)
    }

    #[inline(always)]
    pub(crate) fn addr(self) -> usize {
        self.0
    }

    #[inline(always)]
    fn header_cell(self) -> &'static AtomicU64 {
        // SAFETY: `Obj::at` guarantees the address is a mapped, 8-aligned
        // header slot; headers are accessed atomically because a parallel
        // global collection forwards them with compare-and-swap.
        unsafe { &*(self.0 as *const AtomicU64) }
    }

    /// The word in header position: a header, or a forwarding pointer.
    #[inline(always)]
    pub(crate) fn header_word(self) -> u64 {
        self.header_cell().load(Ordering::Acquire)
    }

    #[inline(always)]
    pub(crate) fn header(self) -> Option<Header> {
        Header::decode(self.header_word())
    }

    /// Writes a header (object initialisation).
    #[inline(always)]
    pub(crate) fn init_header(self, h: Header) {
        self.header_cell().store(h.bits(), Ordering::Relaxed);
    }

    /// Replaces the header with a forwarding pointer to `to`.
    #[inline(always)]
    pub(crate) fn forward_to(self, to: usize) {
        debug_assert!(to.is_multiple_of(8));
        self.header_cell().store(to as u64, Ordering::Release);
    }

    /// Compare-and-swap on the header word (parallel forwarding).
    #[inline(always)]
    pub(crate) fn cas_header(self, old: u64, new: u64) -> bool {
        self.header_cell()
            .compare_exchange(old, new, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    #[inline(always)]
    pub(crate) fn field_ptr(self, i: usize) -> *mut u64 {
        (self.0 + 8 + i * 8) as *mut u64
    }

    /// Reads field `i` of an object that no other thread writes.
    /// The caller keeps `i` within the object's length.
    #[inline(always)]
    pub(crate) fn field(self, i: usize) -> u64 {
        // SAFETY: field `i` lies inside the object (caller's bound) in mapped
        // memory (`Obj::at`); fields of immutable objects are written only
        // before the object is published.
        unsafe { *self.field_ptr(i) }
    }

    #[inline(always)]
    pub(crate) fn set_field(self, i: usize, w: u64) {
        // SAFETY: as in `field`; the caller is the only writer (initialisation
        // or a collector that owns this object while scanning it).
        unsafe { *self.field_ptr(i) = w }
    }

    /// Field `i` as an atomic cell, for mutable objects that several vprocs
    /// may read and write.
    #[inline(always)]
    pub(crate) fn field_cell(self, i: usize) -> &'static AtomicU64 {
        // SAFETY: in-bounds (caller) and 8-aligned mapped memory (`Obj::at`).
        unsafe { &*(self.field_ptr(i) as *const AtomicU64) }
    }

    /// Copies this object (header `h`, which the caller read from it) to
    /// `dst`, which must have room for `h.size_bytes()` bytes and must not
    /// overlap the source.
    ///
    /// Every copying collection copies mostly objects of a few words, so
    /// fields up to 8 words go with at most four 16-byte moves, the first
    /// and the last ones overlapping where the length is not a multiple of
    /// 16 bytes (no loop, no call; the way `memcpy` itself copies a short
    /// block); longer objects with `memcpy`. The header is written from
    /// `h`, never read again: another vproc may be forwarding the original
    /// meanwhile (a parallel global collection's race, settled by the
    /// caller's compare-and-swap).
    #[inline(always)]
    pub(crate) fn copy_to(self, h: Header, dst: usize) -> Obj {
        let words = h.len();
        // SAFETY: the destination was reserved by a bump allocation of
        // `h.size_bytes()` bytes in a different region (caller), the source
        // spans `words` fields after its header (`Obj::at` + header length);
        // every move below reads and writes inside those fields (the last
        // move of a pair ends at the last field). Unaligned 16-byte moves
        // need no alignment beyond the words' 8.
        unsafe {
            *(dst as *mut u64) = h.bits();
            let (src, to) = (self.field_ptr(0) as *const u8, (dst + 8) as *mut u8);
            let bytes = words * 8;
            type Pair = [u64; 2];
            let mv = |at: usize| {
                to.add(at)
                    .cast::<Pair>()
                    .write_unaligned(src.add(at).cast::<Pair>().read_unaligned())
            };
            match words {
                0 => {}
                1 => *to.cast::<u64>() = *src.cast::<u64>(),
                2..=4 => {
                    mv(0);
                    mv(bytes - 16);
                }
                5..=8 => {
                    mv(0);
                    mv(16);
                    mv(bytes - 32);
                    mv(bytes - 16);
                }
                _ => std::ptr::copy_nonoverlapping(src, to, bytes),
            }
            Obj::at(dst)
        }
    }
}

/// Calls `f` with the index of every field of `obj` that holds a value,
/// using the descriptor's precomputed offsets for mixed objects.
#[inline(always)]
pub(crate) fn for_each_value_field(h: Header, descs: &DescriptorTable, mut f: impl FnMut(usize)) {
    match h.id() {
        ID_RAW => {}
        ID_VECTOR | ID_ARRAY => (0..h.len()).for_each(&mut f),
        id => {
            let fast = descs.fast(id);
            if fast.is_some() {
                let mut mask = fast.pointer_mask();
                while mask != 0 {
                    f(mask.trailing_zeros() as usize);
                    mask &= mask - 1;
                }
            } else if let Some(d) = descs.get(id) {
                for &off in d.pointer_offsets() {
                    f(off as usize)
                }
            }
        }
    }
}

/// The pointer mask of `h`'s packed layout (bit `i`: field `i` holds a
/// value), for a mixed object that has one; `None` for raw objects,
/// vectors, arrays and layouts without a packed form. Collectors scan the
/// objects with a mask in a loop of their own, where their `forward` is
/// inline, and leave the rest to [`update_value_fields`] with `forward` a
/// call: a closure inlined into that function's three loops was too big to
/// inline and stayed a call per field with its prologue (the shared
/// plan's promoter: see `plan/shared_heap/minor.rs`).
#[inline(always)]
pub(crate) fn packed_pointer_mask(h: Header, descs: &DescriptorTable) -> Option<u32> {
    match h.id() {
        ID_RAW | ID_VECTOR | ID_ARRAY => None,
        id => {
            let fast = descs.fast(id);
            fast.is_some().then(|| fast.pointer_mask())
        }
    }
}

/// Replaces each value field of `o` that `mask` names (a packed layout's
/// [`packed_pointer_mask`]) by `f` of its value, storing only the fields
/// that change. Inline, with its one call of `f`: a collector's `forward`
/// is inlined into it.
#[inline(always)]
pub(crate) fn update_packed_fields(o: Obj, mut mask: u32, mut f: impl FnMut(u64) -> u64) {
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        let w = o.field(i);
        let n = f(w);
        if n != w {
            o.set_field(i, n);
        }
    }
}

/// The indices of the fields of an object that hold values, in ascending
/// order: [`for_each_value_field`] as an iterator, for the global scan,
/// where the closure called per field was left a call (with the registers
/// it saves). The two stay separate: [`for_each_value_field`] written over
/// this iterator made the split plan's minor collections 4 % more
/// instructions (binarytrees depth 16 on the compiled interface, 704.9 M
/// → 733.0 M, callgrind), its three loops needing no dispatch per field.
#[derive(Clone)]
pub(crate) enum ValueFields<'a> {
    /// Every field from `.0` below `.1` (vectors and arrays).
    Range(usize, usize),
    /// The set bits of a packed layout's pointer mask.
    Mask(u64),
    /// A descriptor's offsets (layouts without a packed form).
    Offsets(std::slice::Iter<'a, u32>),
}

impl Iterator for ValueFields<'_> {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        match self {
            ValueFields::Range(i, end) => (*i < *end).then(|| {
                *i += 1;
                *i - 1
            }),
            ValueFields::Mask(mask) => (*mask != 0).then(|| {
                let i = mask.trailing_zeros() as usize;
                *mask &= *mask - 1;
                i
            }),
            ValueFields::Offsets(it) => it.next().map(|&o| o as usize),
        }
    }
}

/// The value fields of an object with header `h` (see [`ValueFields`]).
#[inline(always)]
pub(crate) fn value_fields(h: Header, descs: &DescriptorTable) -> ValueFields<'_> {
    match h.id() {
        ID_RAW => ValueFields::Mask(0),
        ID_VECTOR | ID_ARRAY => ValueFields::Range(0, h.len()),
        id => {
            let fast = descs.fast(id);
            if fast.is_some() {
                ValueFields::Mask(u64::from(fast.pointer_mask()))
            } else {
                match descs.get(id) {
                    Some(d) => ValueFields::Offsets(d.pointer_offsets().iter()),
                    None => ValueFields::Mask(0),
                }
            }
        }
    }
}

/// How many fields of an object with header `h` hold values: what a scan
/// of it may have to forward.
#[inline]
pub(crate) fn value_field_count(h: Header, descs: &DescriptorTable) -> usize {
    match h.id() {
        ID_RAW => 0,
        ID_VECTOR | ID_ARRAY => h.len(),
        id => {
            let fast = descs.fast(id);
            if fast.is_some() {
                fast.values()
            } else {
                descs.get(id).map_or(0, |d| d.pointer_offsets().len())
            }
        }
    }
}

/// Replaces every value field `w` of `o` (header `h`) by `f(w)`: the scan
/// step of every copying collection. Writes only fields that change.
#[inline(always)]
pub(crate) fn update_value_fields(
    o: Obj,
    h: Header,
    descs: &DescriptorTable,
    mut f: impl FnMut(u64) -> u64,
) {
    for_each_value_field(h, descs, |i| {
        let w = o.field(i);
        let n = f(w);
        if n != w {
            o.set_field(i, n);
        }
    });
}

/// Whether objects with this header are mutable (live in the global heap).
pub(crate) fn is_mutable(h: Header, descs: &DescriptorTable) -> bool {
    match h.id() {
        ID_RAW | ID_VECTOR => false,
        ID_ARRAY => true,
        id => descs.get(id).is_some_and(|d| d.is_mutable()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn immediates_round_trip() {
        for i in [0i64, 1, -1, 42, (1 << 62) - 1, -(1 << 62)] {
            let w = int_value(i);
            assert!(!is_pointer(w));
            assert_eq!(value_int(w), i);
        }
        assert_eq!(NIL, int_value(0));
    }

    /// `copy_to` copies every field of objects of every length its cases
    /// cover (and past them), and writes nothing outside the copy.
    #[test]
    fn copy_to_copies_every_length_exactly() {
        const GUARD: u64 = 0xdead_beef_dead_beef;
        for words in 0..=20usize {
            let header = Header::new(ID_RAW, words as u64);
            let src: Vec<u64> = std::iter::once(header.bits())
                .chain((0..words as u64).map(|i| i * 0x0101_0101 + 7))
                .collect();
            // Guard words before and after the destination.
            let mut dst = vec![GUARD; words + 3];
            // SAFETY: `src` holds a header and `words` fields; the
            // destination has room for them between its guard words.
            let o = unsafe { Obj::at(src.as_ptr() as usize) };
            o.copy_to(header, dst.as_mut_ptr() as usize + 8);
            assert_eq!(dst[0], GUARD, "{words} words: written before the copy");
            assert_eq!(&dst[1..words + 2], &src[..], "{words} words");
            assert_eq!(
                dst[words + 2],
                GUARD,
                "{words} words: written past the copy"
            );
        }
    }
}
