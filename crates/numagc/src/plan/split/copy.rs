//! Copying local objects into the global heap: the engine shared by major
//! collections and promotion (§3.3: "Promotion is essentially a major
//! collection, where the root set is a pointer to the promoted object").
//!
//! [`ToGlobal`] evacuates objects of one local heap whose address lies in
//! `[from_lo, from_hi)` into the vproc's current chunk, leaving forwarding
//! pointers behind, and scans the copies Cheney-style until every object
//! reachable from them is global too. No other vproc can see these objects
//! yet, so nothing here synchronises except taking a fresh chunk.
//!
//! Invariant on exit: no object copied by this pass points into
//! `[from_lo, from_hi)`.
//!
//! A copy cannot stop half-way (originals are already forwarded), so it
//! never fails: when the heap cannot give it a chunk (the system refuses
//! memory) it takes one from the vproc's *copy reserve*, free chunks set
//! aside before the copy started. The caller makes sure the reserve holds
//! enough for the whole copy (`Vproc::ensure_copy_reserve`, `mutator`):
//! every object of a local heap is smaller than a quarter of a chunk, so a
//! chunk is retired only when more than three quarters of it are filled,
//! and a copy of at most `local-heap` bytes needs at most
//! `4 × local-heap / (3 × chunk) + 1` chunks.

use crate::heap::cursor::ChunkCursor;
use crate::heap::global::GlobalHeap;
use crate::object::descriptor::DescriptorTable;
use crate::object::header::Header;
use crate::object::{is_pointer, packed_pointer_mask, update_value_fields, Obj};

pub(crate) struct ToGlobal<'a> {
    pub heap: &'a GlobalHeap,
    pub descs: &'a DescriptorTable,
    pub cursor: &'a mut ChunkCursor,
    /// Free chunks to copy into when the heap cannot give one.
    reserve: &'a mut Vec<usize>,
    pub node: usize,
    /// Local addresses in this range are evacuated.
    pub from_lo: usize,
    pub from_hi: usize,
    /// The whole local heap: pointers elsewhere in it may be forwarded.
    pub local_lo: usize,
    pub local_hi: usize,
    pending: Vec<(usize, usize)>,
    /// Bytes and objects copied so far.
    pub copied: usize,
    pub objects: usize,
}

impl<'a> ToGlobal<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        heap: &'a GlobalHeap,
        descs: &'a DescriptorTable,
        cursor: &'a mut ChunkCursor,
        reserve: &'a mut Vec<usize>,
        node: usize,
        from: (usize, usize),
        local: (usize, usize),
    ) -> ToGlobal<'a> {
        cursor.begin_copy();
        ToGlobal {
            heap,
            descs,
            cursor,
            reserve,
            node,
            from_lo: from.0,
            from_hi: from.1,
            local_lo: local.0,
            local_hi: local.1,
            pending: Vec::new(),
            copied: 0,
            objects: 0,
        }
    }

    /// Returns the new value of a field or root holding `w`.
    #[inline]
    pub fn forward(&mut self, w: u64) -> u64 {
        if !is_pointer(w) {
            return w;
        }
        let a = w as usize;
        if a.wrapping_sub(self.local_lo) >= self.local_hi - self.local_lo {
            return w; // global already
        }
        // SAFETY: `a` is a pointer value inside this vproc's local heap, and
        // every pointer value the runtime stores targets an object header.
        let o = unsafe { Obj::at(a) };
        let hw = o.header_word();
        if hw & 1 == 0 {
            return hw; // forwarded earlier (promotion)
        }
        if a < self.from_lo || a >= self.from_hi {
            return w;
        }
        let h = Header::decode(hw).expect("header");
        let size = h.size_bytes();
        let dst = self.alloc(size);
        o.copy_to(h, dst);
        o.forward_to(dst);
        self.copied += size;
        self.objects += 1;
        dst as u64
    }

    /// Room for a copy of `size` bytes: the bump inline, a new chunk out
    /// of line.
    #[inline(always)]
    fn alloc(&mut self, size: usize) -> usize {
        match self.cursor.try_bump(size) {
            Some(p) => p,
            None => self.alloc_in_new_chunk(size),
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_in_new_chunk(&mut self, size: usize) -> usize {
        // Collector copies are forced past the heap limit; when the system
        // refuses a chunk, the copy reserve has one (see the module doc).
        let retired = match self.cursor.refill(self.heap, self.node, true) {
            Ok(r) => r,
            Err(_) => {
                let id = self
                    .reserve
                    .pop()
                    .expect("the copy reserve covers a whole local heap (ensure_copy_reserve)");
                let id = self.heap.adopt_spare(id);
                self.cursor.install(self.heap, id)
            }
        };
        if let Some(r) = retired {
            if r.scan < r.top {
                self.pending.push((r.scan, r.top));
            }
        }
        self.cursor
            .try_bump(size)
            .expect("object larger than a chunk")
    }

    /// Scans copies until none is left unscanned.
    pub fn finish(&mut self) {
        loop {
            if self.cursor.scan < self.cursor.top {
                // SAFETY: objects below the cursor's top are copies of this
                // pass, laid out one after another.
                let o = unsafe { Obj::at(self.cursor.scan) };
                let h = o.header().expect("copied object has a header");
                // Advance first: the chunk may be retired while scanning.
                self.cursor.scan += h.size_bytes();
                self.scan_fields(o, h);
            } else if let Some((mut s, e)) = self.pending.pop() {
                while s < e {
                    s += self.scan_object(s);
                }
            } else {
                break;
            }
        }
    }
}

impl<'a> Scan<'a> for ToGlobal<'a> {
    fn descs(&self) -> &'a DescriptorTable {
        self.descs
    }

    #[inline(always)]
    fn forward(&mut self, w: u64) -> u64 {
        ToGlobal::forward(self, w)
    }
}

/// The scan step shared by the copying collections: a collection supplies
/// `forward` (what a field's value becomes) and gets the object walk.
pub(crate) trait Scan<'a> {
    fn descs(&self) -> &'a DescriptorTable;

    fn forward(&mut self, w: u64) -> u64;

    /// [`Scan::forward`] as a call, for the general walk of fields.
    #[inline(never)]
    fn forward_outlined(&mut self, w: u64) -> u64 {
        self.forward(w)
    }

    /// Replaces every value field of `o` by its forwarded value: objects
    /// of a packed layout (most of a functional heap) in a loop where
    /// `forward` is inline, the rest through `update_value_fields` with
    /// `forward` a call (`packed_pointer_mask` says why).
    #[inline(always)]
    fn scan_fields(&mut self, o: Obj, h: Header) {
        let descs = self.descs();
        match packed_pointer_mask(h, descs) {
            // The loop of `update_packed_fields`, written out: through it,
            // the global evacuator's `forward` (`global.rs`) stayed a call
            // per field (callgrind, binarytrees 16 with 4 MiB global
            // collections: `Evacuator::drain` 205 -> 234 M instructions).
            Some(mut mask) => {
                while mask != 0 {
                    let i = mask.trailing_zeros() as usize;
                    mask &= mask - 1;
                    let w = o.field(i);
                    let n = self.forward(w);
                    if n != w {
                        o.set_field(i, n);
                    }
                }
            }
            None => update_value_fields(o, h, descs, |w| self.forward_outlined(w)),
        }
    }

    /// Scans the object at `addr`, which must have a header (a copy of
    /// this pass, a young local object or a large object); returns its size.
    #[inline]
    fn scan_object(&mut self, addr: usize) -> usize {
        // SAFETY: callers pass the address of an object with a header (see
        // above), in mapped memory that no other thread writes meanwhile.
        let o = unsafe { Obj::at(addr) };
        let h = o.header().expect("scanned object has a header");
        self.scan_fields(o, h);
        h.size_bytes()
    }
}

/// Size in bytes of the object at `addr`, which must have a header.
#[inline(always)]
pub(crate) fn header_size(addr: usize) -> usize {
    // SAFETY: callers pass addresses of objects in regions being walked
    // object by object (to-space copies), which all have headers.
    unsafe { Obj::at(addr) }
        .header()
        .expect("walked object has a header")
        .size_bytes()
}
