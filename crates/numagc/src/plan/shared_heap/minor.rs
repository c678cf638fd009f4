//! The parallel stop-the-world minor collection (multicore-ocaml-gc.txt
//! §4.4): every vproc stops, and together they promote everything live in
//! every minor heap into the major heap's pools.
//!
//! Each vproc forwards what its root stack points to, its share of all the
//! remembered sets (the sets are joined by the leader and split in equal
//! contiguous parts: §4.4's static work sharing), and the leader the
//! registered global roots; then it scans the copies it made (a stack of
//! grey copies, since pool slots are not contiguous). A value in a minor
//! heap may be reached by several vprocs at once (minor heaps point into
//! each other, §4.4); each copies it into its own pool and publishes the
//! copy with one compare-and-swap on the original's header. The paper
//! needs an intermediate header state here because OCaml writes the
//! forwarding address into the first field; numagc's forwarding address
//! *is* the header word, written only once the copy is complete, so a
//! reader never sees a half-made forward. The loser gives its slot back.
//! With one vproc no one can race, and the store is plain.
//!
//! Copies are born marked (§3.2: allocation during a cycle is black).
//! To-space cannot run out half-way: before anything moves, the leader has
//! the chunk pools hold more than every minor heap's bytes in pages of the
//! worst class mix could need (`setup::to_space_chunks`), or calls the
//! collection off.

use super::pages::Pools;
use super::state::SharedHeapGc;
use crate::heap::global::GlobalHeap;
use crate::object::descriptor::DescriptorTable;
use crate::object::header::Header;
use crate::object::{update_value_fields, Obj};
use std::sync::atomic::{AtomicU64, Ordering};

/// The promoting copier of one vproc.
pub(crate) struct Promoter<'a> {
    pub heap: &'a GlobalHeap,
    pub gc: &'a SharedHeapGc,
    pub descs: &'a DescriptorTable,
    pub pools: &'a mut Pools,
    pub owner: usize,
    pub node: usize,
    /// The only vproc: no compare-and-swap needed.
    pub alone: bool,
    pub marked: u8,
    pub garbage: u8,
    /// Copies whose fields are not forwarded yet.
    pub grey: Vec<usize>,
    pub copied_bytes: usize,
}

impl Promoter<'_> {
    /// The value `w` with a minor-heap object replaced by its major copy.
    #[inline]
    pub fn forward(&mut self, w: u64) -> u64 {
        if !self.gc.is_minor(w) {
            return w;
        }
        // SAFETY: a pointer value into a minor heap targets an object
        // header or the forwarding address left in its place.
        let o = unsafe { Obj::at(w as usize) };
        let hw = o.header_word();
        let Some(h) = Header::decode(hw) else {
            return hw; // promoted already, by this vproc or another
        };
        let words = h.len() + 1;
        let class = self.gc.classes.class_of(words);
        let slot = self.gc.classes.slot_words(class) * 8;
        let dst = self
            .pools
            .alloc(
                class,
                slot,
                self.marked,
                self.garbage,
                self.heap,
                self.owner,
                self.node,
                true,
            )
            .expect("the pools hold the to-space the leader set aside");
        o.copy_to(h, dst);
        if self.alone {
            o.forward_to(dst);
        } else if !o.cas_header(hw, dst as u64) {
            self.pools.unalloc(class, dst);
            return o.header_word();
        }
        self.copied_bytes += h.size_bytes();
        self.grey.push(dst);
        dst as u64
    }

    /// Forwards a field slot of a major-heap object (a remembered slot;
    /// two vprocs may hold the same one, and store the same value).
    pub fn forward_slot(&mut self, slot: usize) {
        // SAFETY: remembered slots are value fields of major-heap objects
        // that stay allocated until the remembered set is emptied here (a
        // cycle ends only at a minor collection, after this).
        let cell = unsafe { &*(slot as *const AtomicU64) };
        let w = cell.load(Ordering::Relaxed);
        let n = self.forward(w);
        if n != w {
            cell.store(n, Ordering::Relaxed);
        }
    }

    /// Scans the copies until none is left.
    pub fn drain(&mut self) {
        while let Some(a) = self.grey.pop() {
            // SAFETY: `a` is a copy this vproc made in this collection.
            let o = unsafe { Obj::at(a) };
            let h = o.header().expect("a copy has a header");
            let descs = self.descs;
            // The copies this object's fields made are scanned first
            // field first: a tree is laid out with each left child near
            // its parent, the order in which marking (`mark::mark`, which
            // darkens the last field first) and a program's left-first
            // walks visit it. Measured on binarytrees 21 (shared plan,
            // 1 vproc), together with marking's order: major slices
            // 2.38 -> 2.17 s, the whole run 8.4 -> 7.8 s; with the layout
            // turned and not marking's, major slices took twice as long.
            let mark = self.grey.len();
            update_value_fields(o, h, descs, |w| self.forward(w));
            self.grey[mark..].reverse();
        }
    }
}
