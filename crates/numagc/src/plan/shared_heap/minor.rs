//! The parallel stop-the-world minor collection (multicore-ocaml-gc.txt
//! §4.4): every vproc stops, and together they promote everything live in
//! every minor heap into the major heap's pools.
//!
//! Each vproc forwards what its root stack points to, its share of all the
//! remembered sets (the sets are joined by the leader and split in equal
//! contiguous parts: §4.4's static work sharing), and the leader the
//! registered global roots; then it scans the copies it made (a stack of
//! grey copies: a class's copies are contiguous only within a run of
//! free slots). Each size class copies into a run of consecutive free
//! slots of one of its pages (`pages::Run`, a numagc choice where the
//! paper allocates each copy from the pool): a copy is a pointer bump and
//! a colour store, and what the runs did not take goes back to the pools
//! when the promoter drains or is dropped. A value in a minor
//! heap may be reached by several vprocs at once (minor heaps point into
//! each other, §4.4); each copies it into its own pool and publishes the
//! copy with one compare-and-swap on the original's header. The paper
//! needs an intermediate header state here because OCaml writes the
//! forwarding address into the first field; numagc's forwarding address
//! *is* the header word, written only once the copy is complete, so a
//! reader never sees a half-made forward. The loser gives its slot back
//! to its run.
//! With one vproc no one can race, and the store is plain.
//!
//! Copies are born marked (§3.2: allocation during a cycle is black).
//! To-space cannot run out half-way: before anything moves, the leader has
//! the chunk pools hold more than every minor heap's bytes in pages of the
//! worst class mix could need (`setup::to_space_chunks`), or calls the
//! collection off.

use super::pages::{PageSource, Pools, Run};
use super::state::{points_into, Roles, SharedHeapGc};
use crate::heap::global::GlobalHeap;
use crate::object::descriptor::DescriptorTable;
use crate::object::header::Header;
use crate::object::{packed_pointer_mask, update_packed_fields, update_value_fields, Obj};
use std::sync::atomic::{AtomicU64, Ordering};

/// Objects of at most this many fields are copied inline
/// ([`Promoter::forward`]): two 16-byte moves (`Obj::copy_to`).
const SMALL_FIELDS: usize = 4;

/// The promoting copier of one vproc.
///
/// Copies go into runs of free slots (`pages::Run`), one per size class:
/// [`Run::EMPTY`] until the class's first copy, given back to the pools at
/// the end of every [`Promoter::drain`] and when the promoter is dropped.
pub(crate) struct Promoter<'a> {
    heap: &'a GlobalHeap,
    gc: &'a SharedHeapGc,
    descs: &'a DescriptorTable,
    pools: &'a mut Pools,
    owner: usize,
    node: usize,
    /// The only vproc: no compare-and-swap needed.
    alone: bool,
    marked: u8,
    garbage: u8,
    /// The minor heaps' addresses, `[minor_start, minor_start + minor_len)`
    /// (`SharedHeapGc::minor_heaps`, kept here nearer the scan loop).
    minor_start: usize,
    minor_len: usize,
    /// Copies whose fields are not forwarded yet.
    grey: Vec<usize>,
    pub copied_bytes: usize,
    /// The runs of the objects of `0..=SMALL_FIELDS` fields, by their
    /// number of fields (every size up to 8 words is a class of its own,
    /// `size_class`, so no two share a run).
    small_runs: [Run; SMALL_FIELDS + 1],
    /// The runs of the other classes, by class.
    runs: Vec<Run>,
}

impl<'a> Promoter<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        heap: &'a GlobalHeap,
        gc: &'a SharedHeapGc,
        descs: &'a DescriptorTable,
        pools: &'a mut Pools,
        owner: usize,
        node: usize,
        alone: bool,
        roles: Roles,
    ) -> Promoter<'a> {
        assert!(
            (0..SMALL_FIELDS)
                .all(|len| gc.classes.class_of(len + 1) < gc.classes.class_of(len + 2)),
            "the small objects' sizes have classes of their own"
        );
        Promoter {
            heap,
            gc,
            descs,
            pools,
            owner,
            node,
            alone,
            marked: roles.marked,
            garbage: roles.garbage,
            minor_start: gc.minor_heaps.start,
            minor_len: gc.minor_heaps.len(),
            grey: Vec::new(),
            copied_bytes: 0,
            small_runs: [Run::EMPTY; SMALL_FIELDS + 1],
            runs: vec![Run::EMPTY; gc.classes.count()],
        }
    }

    /// Whether `w` points into a minor heap (`SharedHeapGc::is_minor`,
    /// from the promoter's copy of the range).
    #[inline(always)]
    pub fn is_minor(&self, w: u64) -> bool {
        points_into(self.minor_start, self.minor_len, w)
    }

    /// The value `w` with a minor-heap object replaced by its major copy.
    ///
    /// The common case is inline, in the loop of [`Promoter::drain`]: the
    /// test of a word, and the copy of a small object into its run (a
    /// pointer bump and a colour store). The rest (larger objects, a run
    /// used up) is a call. Made one call per field, the whole function
    /// paid its prologue for every word, an immediate's too, and found its
    /// slot through the class's current page (about 150 instructions per
    /// object promoted on binarytrees, depth 16, with the scan; see `pages`).
    #[inline(always)]
    pub fn forward(&mut self, w: u64) -> u64 {
        if !self.is_minor(w) {
            return w;
        }
        // SAFETY: a pointer value into a minor heap targets an object
        // header or the forwarding address left in its place.
        let o = unsafe { Obj::at(w as usize) };
        let hw = o.header_word();
        let Some(h) = Header::decode(hw) else {
            return hw; // promoted already, by this vproc or another
        };
        if h.len() <= SMALL_FIELDS {
            if let Some(dst) = self.small_runs[h.len()].take(self.marked) {
                o.copy_to(h, dst);
                return self.publish(o, hw, h, dst);
            }
        }
        self.promote(o, hw, h)
    }

    /// [`Promoter::forward`] as a call (the general walk of fields).
    #[inline(never)]
    fn forward_outlined(&mut self, w: u64) -> u64 {
        self.forward(w)
    }

    /// The run that objects with header `h` are copied into.
    #[inline(always)]
    fn run_of(&mut self, h: Header) -> &mut Run {
        match self.small_runs.get_mut(h.len()) {
            Some(run) => run,
            None => &mut self.runs[self.gc.classes.class_of(h.len() + 1)],
        }
    }

    /// [`Promoter::forward`] past its inline case: a larger object, or a
    /// run used up.
    #[inline(never)]
    fn promote(&mut self, o: Obj, hw: u64, h: Header) -> u64 {
        let marked = self.marked;
        let dst = match self.run_of(h).take(marked) {
            Some(a) => a,
            None => self.take_from_new_run(h),
        };
        o.copy_to(h, dst);
        self.publish(o, hw, h, dst)
    }

    /// Makes the copy `dst` of `o` (header word `hw`) the object's, or,
    /// when another vproc's copy won, gives `dst` back and returns that one.
    #[inline(always)]
    fn publish(&mut self, o: Obj, hw: u64, h: Header, dst: usize) -> u64 {
        if self.alone {
            o.forward_to(dst);
        } else if !o.cas_header(hw, dst as u64) {
            self.run_of(h).untake(dst);
            return o.header_word();
        }
        self.copied_bytes += h.size_bytes();
        self.grey.push(dst);
        dst as u64
    }

    /// A slot for an object with header `h` from a new run, its run being
    /// used up.
    #[cold]
    #[inline(never)]
    fn take_from_new_run(&mut self, h: Header) -> usize {
        let class = self.gc.classes.class_of(h.len() + 1);
        let slot = self.gc.classes.slot_words(class) * 8;
        let src = PageSource {
            slot_bytes: slot,
            garbage: self.garbage,
            heap: self.heap,
            owner: self.owner,
            node: self.node,
            force: true,
        };
        let mut run = self
            .pools
            .claim_run(class, src)
            .expect("the pools hold the to-space the leader set aside");
        let a = run.take(self.marked).expect("a claimed run has a slot");
        *self.run_of(h) = run;
        a
    }

    /// Gives the slots the runs did not take back to the pools.
    fn return_runs(&mut self) {
        for (len, run) in self.small_runs.iter_mut().enumerate() {
            if *run != Run::EMPTY {
                let run = std::mem::replace(run, Run::EMPTY);
                self.pools
                    .return_run(self.gc.classes.class_of(len + 1), run);
            }
        }
        for (class, run) in self.runs.iter_mut().enumerate() {
            if *run != Run::EMPTY {
                self.pools
                    .return_run(class, std::mem::replace(run, Run::EMPTY));
            }
        }
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
        let mut next = self.grey.pop();
        while let Some(a) = next {
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
            // Small mixed objects (most of a functional heap) by their
            // packed layout, in this loop, where `forward` is inline; the
            // rest through the general walk, a call per field.
            match packed_pointer_mask(h, descs) {
                Some(mask) => update_packed_fields(o, mask, |w| self.forward(w)),
                None => update_value_fields(o, h, descs, |w| self.forward_outlined(w)),
            }
            // Two children (a tree's node): the first is scanned next
            // and the second takes its place on the stack, without
            // `reverse`'s general loop (about 10 instructions less per
            // object promoted: callgrind, binarytrees 16 with 2 MiB minor
            // heaps, 26 M of the run's 0.94 G). Not `swap`: LLVM makes it
            // one 16-byte load of the two entries just pushed by 8-byte
            // stores, which the store buffer cannot forward: that load
            // had a fifth of this loop's samples (`perf record -e
            // cpu-clock`, binarytrees 20, 1 vproc), and the loop's share
            // of the run went from 23 % to 18 % without it (one run each;
            // wall time alternated 9 rounds: 0.96 [0.72, 1.18] × before,
            // within this VM's spread).
            next = match self.grey.len() - mark {
                2 => {
                    let first = self.grey[mark];
                    self.grey[mark] = self.grey[mark + 1];
                    self.grey.truncate(mark + 1);
                    Some(first)
                }
                0 | 1 => self.grey.pop(),
                _ => {
                    self.grey[mark..].reverse();
                    self.grey.pop()
                }
            };
        }
        // Nothing is left to copy: the pools get their free slots back
        // (a later `forward`, of ephemerons' data, claims runs again and
        // drains again).
        self.return_runs();
    }
}

impl Drop for Promoter<'_> {
    /// The runs go back to the pools on every path, unwinding included:
    /// the pools' counts of free slots are whole again before anyone else
    /// may use them (the borrow of `pools` ends here).
    fn drop(&mut self) {
        self.return_runs();
    }
}
