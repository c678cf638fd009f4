//! The object-descriptor table of §3.2.
//!
//! Mixed objects carry an ID that indexes this table. Each descriptor gives
//! the object's size and which fields hold values; the pointer offsets are
//! precomputed at registration so that scanning touches only pointer fields
//! (the paper generates a scanning function per descriptor; a precomputed
//! offset list is the run-time equivalent for an embedder without a code
//! generator).
//!
//! Invariant: an ID, once registered, maps to the same descriptor for the
//! life of the table, so collectors read entries without locking. Entries
//! are published with release stores and read with acquire loads.
//!
//! Three IDs are the runtime's own: [`ID_ROPE`], the last one, holds the
//! rope node of parallel sequences (`crate::mutator::tabulate`),
//! [`ID_EPHEMERON`], the one before, ephemerons and weak references
//! (`crate::weak`), and [`ID_FETCHME`], the one before that, a PE's
//! FetchMes: the local names of other PEs' objects (`crate::pe::global`). The table
//! registers them on creation and never hands them to an embedder.

use crate::error::DescriptorError;
use crate::object::header::{FIRST_MIXED_ID, ID_EPHEMERON, ID_FETCHME, ID_LIMIT, ID_ROPE};
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

/// The ID of a registered mixed-object descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct DescId(pub(crate) u16);

impl DescId {
    /// The raw 15-bit ID, as stored in headers.
    pub const fn id(self) -> u16 {
        self.0
    }

    /// The ID the `n`-th descriptor registered with a runtime gets,
    /// counting from 0: [`crate::Runtime::register`] hands out IDs in
    /// registration order. A compiler that registers its layouts in a
    /// fixed order at start-up knows their IDs, and so their header words
    /// (`compiled::header`), when it compiles; it checks every ID
    /// `register` returns against this one, as OCaml's and GHC's code
    /// carry their headers and info pointers as constants.
    pub const fn nth_registered(n: u16) -> DescId {
        DescId(FIRST_MIXED_ID.saturating_add(n))
    }
}

/// The largest mixed object, in fields: 2^20 (8 MiB). A descriptor keeps a
/// list of its value and raw field offsets (4 bytes per field, `u32`), so
/// its own size grows with the object's; bulk data belongs in vectors,
/// arrays and raw objects, whose length is only bounded by the header's
/// 48 bits and the heap limit. Without this bound a descriptor of 2^40
/// fields would try to build a list of a trillion offsets.
pub const MAX_MIXED_SIZE: usize = 1 << 20;

/// The layout of a mixed object: its size and which of its fields hold values
/// (pointers or immediates); the other fields hold raw 64-bit words.
#[derive(Clone, Debug)]
pub struct Descriptor {
    name: String,
    size: usize,
    pointer_offsets: Box<[u32]>,
    raw_offsets: Box<[u32]>,
    pointer_bitmap: Box<[u64]>,
    mutable: bool,
}

impl Descriptor {
    /// A descriptor for an immutable mixed object of `size` words whose fields
    /// at `pointer_offsets` hold values. `size` is 1 to [`MAX_MIXED_SIZE`];
    /// each offset is below `size` and listed once.
    pub fn mixed(
        name: impl Into<String>,
        size: usize,
        pointer_offsets: &[usize],
    ) -> Result<Descriptor, DescriptorError> {
        let name = name.into();
        if size == 0 {
            return Err(DescriptorError::ZeroSize { name });
        }
        if size > MAX_MIXED_SIZE {
            return Err(DescriptorError::TooLarge { name, size });
        }
        let mut bitmap = vec![0u64; size.div_ceil(64)];
        for &off in pointer_offsets {
            if off >= size {
                return Err(DescriptorError::OffsetOutOfRange {
                    name,
                    offset: off,
                    size,
                });
            }
            let (w, b) = (off / 64, off % 64);
            if bitmap[w] & (1 << b) != 0 {
                return Err(DescriptorError::DuplicateOffset { name, offset: off });
            }
            bitmap[w] |= 1 << b;
        }
        let is_ptr = |i: usize| bitmap[i / 64] & (1 << (i % 64)) != 0;
        let pointer_offsets: Box<[u32]> =
            (0..size).filter(|&i| is_ptr(i)).map(|i| i as u32).collect();
        let raw_offsets: Box<[u32]> = (0..size)
            .filter(|&i| !is_ptr(i))
            .map(|i| i as u32)
            .collect();
        Ok(Descriptor {
            name,
            size,
            pointer_offsets,
            raw_offsets,
            pointer_bitmap: bitmap.into_boxed_slice(),
            mutable: false,
        })
    }

    /// Marks objects of this descriptor as mutable: they are allocated in the
    /// global heap and stores into them go through the write barrier.
    pub fn mutable(mut self) -> Descriptor {
        self.mutable = true;
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Size in words, header not included.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Offsets of the value fields, ascending.
    pub fn pointer_offsets(&self) -> &[u32] {
        &self.pointer_offsets
    }

    /// Offsets of the raw fields, ascending.
    pub fn raw_offsets(&self) -> &[u32] {
        &self.raw_offsets
    }

    pub fn is_mutable(&self) -> bool {
        self.mutable
    }

    /// Whether field `i` holds a value.
    #[inline]
    pub fn is_pointer_field(&self, i: usize) -> bool {
        i < self.size && self.pointer_bitmap[i / 64] & (1 << (i % 64)) != 0
    }
}

/// Number of IDs available to embedder descriptors (all mixed IDs but the
/// reserved [`ID_FETCHME`], [`ID_EPHEMERON`] and [`ID_ROPE`]).
pub const DESCRIPTOR_CAPACITY: usize = ID_FETCHME as usize - FIRST_MIXED_ID as usize;

/// Field layout of a rope node ([`ID_ROPE`]): the number of elements below
/// it (raw), its depth (raw; a node over two leaves has depth 1), and its two
/// children (values: rope nodes or vectors).
pub(crate) const ROPE_LEN: usize = 0;
pub(crate) const ROPE_DEPTH: usize = 1;
pub(crate) const ROPE_LEFT: usize = 2;
pub(crate) const ROPE_RIGHT: usize = 3;
const ROPE_NODE_SIZE: usize = 4;

/// The built-in descriptor of rope nodes.
fn rope_descriptor() -> Descriptor {
    Descriptor::mixed("numagc.rope", ROPE_NODE_SIZE, &[ROPE_LEFT, ROPE_RIGHT])
        .expect("the rope layout is valid")
}

/// The table of registered descriptors, indexed by ID.
///
/// Besides the full descriptors it keeps one word per ID, [`FastLayout`],
/// that answers the questions of the allocation and field-read fast paths
/// for small immutable objects with a single load.
pub struct DescriptorTable {
    entries: Box<[AtomicPtr<Descriptor>]>,
    fast: Box<[AtomicU64]>,
    next: Mutex<u32>,
}

/// The packed layout of a small immutable descriptor: `0` when the ID has no
/// such layout (unregistered, mutable, or more than [`FastLayout::MAX_SIZE`]
/// fields), else bit 0 set, the size in bits 1..8, the number of value
/// fields in bits 8..16 and the pointer mask of fields 0..32 in bits 32..64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastLayout(u64);

/// A pointer to the 65,536 packed layouts of a [`DescriptorTable`], valid
/// while the table lives (its owner keeps the table alive longer).
#[derive(Clone, Copy)]
pub(crate) struct FastLayouts(*const AtomicU64);

impl FastLayouts {
    #[inline(always)]
    pub fn get(self, id: u16) -> FastLayout {
        // SAFETY: the table has an entry for every `u16` (see `new`) and
        // outlives this pointer (the holder keeps the table's owner alive).
        FastLayout(unsafe { &*self.0.add(id as usize) }.load(Ordering::Acquire))
    }
}

// Checked at compile time: see `FastLayout::MAX_SIZE`.
const _: () = assert!((FastLayout::MAX_SIZE + 1) * 8 < crate::config::LARGE_OBJECT_FLOOR);

impl FastLayout {
    /// Largest size (in fields) with a packed layout. Small enough that an
    /// object with a packed layout is below every allowed large-object size,
    /// so the allocation fast path need not compare with it.
    pub const MAX_SIZE: usize = 30;

    /// The packed layout of an immutable descriptor of `size` fields whose
    /// value fields are the bits of `values` below `size`; for a `size`
    /// past [`FastLayout::MAX_SIZE`], a layout no descriptor has (all bits
    /// set), so that nothing compares equal to it.
    #[inline(always)]
    pub const fn packed(size: usize, values: u32) -> FastLayout {
        if size > Self::MAX_SIZE {
            return FastLayout(u64::MAX);
        }
        let mask = values & ((1u32 << size) - 1);
        FastLayout(
            1 | ((size as u64) << 1) | ((mask.count_ones() as u64) << 8) | ((mask as u64) << 32),
        )
    }

    fn of(d: &Descriptor) -> FastLayout {
        if d.mutable || d.size > Self::MAX_SIZE {
            return FastLayout(0);
        }
        Self::packed(d.size, d.pointer_bitmap[0] as u32)
    }

    /// Whether `values` value fields and `raw` raw fields fill this
    /// layout (never for a layout that is not [`FastLayout::is_some`]).
    #[inline(always)]
    pub fn fits(self, values: usize, raw: usize) -> bool {
        values == self.values() && raw + values == self.size()
    }

    #[inline(always)]
    pub fn is_some(self) -> bool {
        self.0 & 1 == 1
    }

    #[inline(always)]
    pub fn size(self) -> usize {
        ((self.0 >> 1) & 0x7f) as usize
    }

    /// Number of value fields.
    #[inline(always)]
    pub fn values(self) -> usize {
        ((self.0 >> 8) & 0xff) as usize
    }

    /// Bit `i` set when field `i` holds a value.
    #[inline(always)]
    pub fn pointer_mask(self) -> u32 {
        (self.0 >> 32) as u32
    }

    #[inline(always)]
    pub fn is_pointer_field(self, i: usize) -> bool {
        i < self.size() && (self.pointer_mask() >> i) & 1 == 1
    }

    /// [`FastLayout::is_pointer_field`] for a field `i` known to be below
    /// the length of an object of this layout's descriptor: an object's
    /// length is its descriptor's size, so only the mask is tested (an ID
    /// without a packed layout has an empty mask).
    #[inline(always)]
    pub fn is_pointer_field_below_len(self, i: usize) -> bool {
        i < u32::BITS as usize && (self.pointer_mask() >> i) & 1 == 1
    }
}

impl DescriptorTable {
    /// An empty table, apart from the built-in rope descriptor.
    pub fn new() -> DescriptorTable {
        // Both tables start all zero and come from a zeroed allocation:
        // fresh pages the system hands out zeroed, so a runtime's start
        // neither writes nor touches their 768 KiB (it did, a third of
        // the instructions a short program's start took).
        let entries: Box<[std::mem::MaybeUninit<AtomicPtr<Descriptor>>]> =
            Box::new_zeroed_slice(ID_LIMIT as usize);
        // One entry per `u16`, so any ID indexes it without a check.
        let fast: Box<[std::mem::MaybeUninit<AtomicU64>]> =
            Box::new_zeroed_slice(u16::MAX as usize + 1);
        let table = DescriptorTable {
            // SAFETY: all-zero bytes are a valid `AtomicPtr` (null) and a
            // valid `AtomicU64` (0).
            entries: unsafe { entries.assume_init() },
            // SAFETY: as above.
            fast: unsafe { fast.assume_init() },
            next: Mutex::new(FIRST_MIXED_ID as u32),
        };
        table.publish(ID_ROPE, rope_descriptor());
        table.publish(ID_EPHEMERON, crate::weak::ephemeron_descriptor());
        table.publish(ID_FETCHME, crate::pe::fetchme_descriptor());
        table
    }

    /// Registers a descriptor and returns its ID; `Err` when the IDs left to
    /// embedders are exhausted.
    pub fn register(&self, d: Descriptor) -> Result<DescId, DescriptorError> {
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        if *next >= ID_FETCHME as u32 {
            return Err(DescriptorError::TableFull {
                capacity: DESCRIPTOR_CAPACITY,
            });
        }
        let id = *next as u16;
        self.publish(id, d);
        *next += 1;
        Ok(DescId(id))
    }

    /// Stores `d` under `id` (an ID no entry holds yet).
    fn publish(&self, id: u16, d: Descriptor) {
        self.fast[id as usize].store(FastLayout::of(&d).0, Ordering::Release);
        let ptr = Box::into_raw(Box::new(d));
        self.entries[id as usize].store(ptr, Ordering::Release);
    }

    /// The descriptor of a mixed-object ID, if registered.
    #[inline]
    pub fn get(&self, id: u16) -> Option<&Descriptor> {
        let p = self.entries.get(id as usize)?.load(Ordering::Acquire);
        // SAFETY: a non-null entry was published by `register` from a leaked
        // Box and is only freed in `drop`, which takes `&mut self`; so it is
        // valid for as long as `&self` is.
        unsafe { p.as_ref() }
    }

    /// The packed layout of `id` (see [`FastLayout`]).
    #[inline(always)]
    pub fn fast(&self, id: u16) -> FastLayout {
        self.fast_layouts().get(id)
    }

    /// The packed-layout table, for callers that keep it at hand (the
    /// allocation fast path): [`FastLayouts::get`] is one load.
    pub(crate) fn fast_layouts(&self) -> FastLayouts {
        FastLayouts(self.fast.as_ptr())
    }

    /// Number of descriptors registered by embedders (the built-in rope
    /// descriptor is not counted).
    pub fn len(&self) -> usize {
        (*self.next.lock().unwrap_or_else(|p| p.into_inner()) - FIRST_MIXED_ID as u32) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Default for DescriptorTable {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for DescriptorTable {
    /// Frees the registered descriptors and the runtime's own, visiting
    /// only the IDs `register` handed out and the built-in ones at the top:
    /// the 32,768 entries between were never written, and reading them all
    /// cost a short program's exit 230,000 instructions and the page faults
    /// of 256 KiB of untouched pages.
    fn drop(&mut self) {
        let next = *self.next.get_mut().unwrap_or_else(|p| p.into_inner()) as usize;
        let registered = FIRST_MIXED_ID as usize..next;
        let built_in = ID_FETCHME as usize..ID_LIMIT as usize;
        for id in registered.chain(built_in) {
            let p = std::mem::replace(self.entries[id].get_mut(), std::ptr::null_mut());
            if !p.is_null() {
                // SAFETY: `p` came from `Box::into_raw` in `publish`, and
                // the entry was nulled above, so it is freed once.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_precomputed() {
        let d = Descriptor::mixed("pair+tag", 3, &[2, 0]).unwrap();
        assert_eq!(d.pointer_offsets(), &[0, 2]);
        assert_eq!(d.raw_offsets(), &[1]);
        assert!(d.is_pointer_field(0) && !d.is_pointer_field(1) && !d.is_pointer_field(3));
        let t = DescriptorTable::new();
        let id = t.register(d).unwrap();
        let f = t.fast(id.id());
        assert!(f.is_some() && f.size() == 3 && f.values() == 2 && f.pointer_mask() == 0b101);
        assert!(f.is_pointer_field(2) && !f.is_pointer_field(1) && !f.is_pointer_field(3));
        let big = t
            .register(Descriptor::mixed("big", 40, &[39]).unwrap())
            .unwrap();
        let m = t
            .register(Descriptor::mixed("cell", 1, &[0]).unwrap().mutable())
            .unwrap();
        assert!(!t.fast(big.id()).is_some() && !t.fast(m.id()).is_some() && !t.fast(999).is_some());
        // `View::field_here` tests the packed layout before the ID: the
        // built-in kinds have none, and no layout has a mask bit at or
        // past its size.
        use crate::object::header::{ID_ARRAY, ID_RAW, ID_VECTOR};
        for kind in [ID_RAW, ID_VECTOR, ID_ARRAY] {
            assert_eq!(t.fast(kind).pointer_mask(), 0);
        }
        for size in 1..=FastLayout::MAX_SIZE {
            let all: Vec<usize> = (0..size).collect();
            let id = t
                .register(Descriptor::mixed("all", size, &all).unwrap())
                .unwrap();
            let f = t.fast(id.id());
            assert!((0..32).all(|i| f.is_pointer_field_below_len(i) == (i < size)));
        }
    }

    #[test]
    fn bad_descriptors_are_errors() {
        assert!(matches!(
            Descriptor::mixed("z", 0, &[]),
            Err(DescriptorError::ZeroSize { .. })
        ));
        assert!(matches!(
            Descriptor::mixed("o", 2, &[2]),
            Err(DescriptorError::OffsetOutOfRange {
                offset: 2,
                size: 2,
                ..
            })
        ));
        assert!(matches!(
            Descriptor::mixed("d", 2, &[1, 1]),
            Err(DescriptorError::DuplicateOffset { .. })
        ));
    }

    /// Found by fuzzing (`fuzz/`, target `descriptor`): a size up to the
    /// header's 48-bit length was accepted, and building the offset lists
    /// of a descriptor of 2^35 fields ran out of memory (2^28 took 3 s and
    /// 1 GiB). Sizes beyond `MAX_MIXED_SIZE` are refused at once.
    #[test]
    fn huge_sizes_are_refused_at_once() {
        let t = std::time::Instant::now();
        for size in [
            MAX_MIXED_SIZE + 1,
            1 << 35,
            (1 << 48) - 1,
            1 << 48,
            usize::MAX,
        ] {
            assert_eq!(
                Descriptor::mixed("huge", size, &[0]).unwrap_err(),
                DescriptorError::TooLarge {
                    name: "huge".into(),
                    size
                }
            );
        }
        assert!(
            t.elapsed() < std::time::Duration::from_secs(1),
            "refusing took {:?}",
            t.elapsed()
        );
        let e = Descriptor::mixed("huge", MAX_MIXED_SIZE + 1, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("1048576"), "{e}");
        let d = Descriptor::mixed("largest", MAX_MIXED_SIZE, &[0, MAX_MIXED_SIZE - 1]).unwrap();
        assert_eq!(
            (d.pointer_offsets().len(), d.raw_offsets().len()),
            (2, MAX_MIXED_SIZE - 2)
        );
    }

    #[test]
    fn table_fills_up_with_an_error() {
        let t = DescriptorTable::new();
        let d = Descriptor::mixed("cell", 1, &[0]).unwrap();
        for i in 0..DESCRIPTOR_CAPACITY {
            let id = t.register(d.clone()).unwrap();
            assert_eq!(id.id() as usize, FIRST_MIXED_ID as usize + i);
            assert_eq!(id, DescId::nth_registered(i as u16));
        }
        let e = t.register(d).unwrap_err();
        assert_eq!(
            e,
            DescriptorError::TableFull {
                capacity: DESCRIPTOR_CAPACITY
            }
        );
        assert!(e.to_string().contains("15-bit"));
        assert_eq!(t.get(FIRST_MIXED_ID).unwrap().name(), "cell");
        // The reserved rope ID kept its built-in descriptor.
        assert_eq!(t.get(ID_ROPE).unwrap().name(), "numagc.rope");
        assert_eq!(t.get(ID_EPHEMERON).unwrap().name(), "numagc.ephemeron");
        assert_eq!(t.get(ID_FETCHME).unwrap().name(), "numagc.fetchme");
        assert_eq!(t.len(), DESCRIPTOR_CAPACITY);
    }
}
