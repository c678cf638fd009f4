//! The shared plan's plan-wide state ([`SharedHeapGc`], in
//! `vproc::Shared`) and each vproc's part ([`Mutator`], in `Vproc`).
//!
//! ## Colours and their cycling (multicore-ocaml-gc.txt §3.2.2)
//!
//! A major-heap object has one of three colours besides `FREE`: *marked*,
//! *unmarked* and *garbage* are not fixed byte values but roles that the
//! values 1, 2, 3 take in turn. During a cycle, markers turn unmarked
//! objects marked, new objects are born marked, and sweepers turn garbage
//! into `FREE`. When marking and sweeping are both complete, no object is
//! garbage and every unmarked object is unreachable; the stop-the-world
//! barrier that ends the cycle then rotates the roles — unmarked becomes
//! garbage, marked becomes unmarked, and the (unused) garbage value becomes
//! marked — without touching a single object. The colours live in side
//! bytes (`pages`), not in the header, so the 48-bit length of the C ABI
//! keeps all its bits; a large object's colour is its chunk's `age` byte.

use super::minor_size::MinorSizer;
use super::pages::Pools;
use super::size_class::SizeClasses;
use super::termination::Termination;
use crate::sync::{lock, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// The current meaning of the three colour values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Roles {
    pub marked: u8,
    pub unmarked: u8,
    pub garbage: u8,
}

/// The rotating roles, packed in one word so that a reader sees one
/// consistent assignment (they change only while every vproc is stopped,
/// in the serial step of a `Coordinator::phase`, whose barrier orders the
/// change before every later relaxed read: `loom_models::shared_heap`).
pub(crate) struct Colours(crate::sync::AtomicU32);

impl Colours {
    pub(crate) fn new() -> Colours {
        Colours(crate::sync::AtomicU32::new(Self::pack(Roles {
            marked: 1,
            unmarked: 2,
            garbage: 3,
        })))
    }

    fn pack(r: Roles) -> u32 {
        r.marked as u32 | (r.unmarked as u32) << 8 | (r.garbage as u32) << 16
    }

    #[inline(always)]
    pub fn roles(&self) -> Roles {
        let w = self.0.load(crate::sync::Ordering::Relaxed);
        Roles {
            marked: w as u8,
            unmarked: (w >> 8) as u8,
            garbage: (w >> 16) as u8,
        }
    }

    /// The cycle's end (§3.2.2): unmarked → garbage, marked → unmarked,
    /// garbage → marked. Called only while every vproc is stopped.
    pub fn rotate(&self) {
        let r = self.roles();
        self.0.store(
            Self::pack(Roles {
                marked: r.garbage,
                unmarked: r.marked,
                garbage: r.unmarked,
            }),
            crate::sync::Ordering::Relaxed,
        );
    }
}

/// Whether the value `w` points into `[start, start + len)`: one range
/// check (values are immediates, odd, or object addresses, even).
#[inline(always)]
pub(crate) fn points_into(start: usize, len: usize, w: u64) -> bool {
    let a = w as usize;
    a & 1 == 0 && a.wrapping_sub(start) < len
}

/// State of the shared plan that every vproc sees.
pub(crate) struct SharedHeapGc {
    pub colours: Colours,
    pub classes: SizeClasses,
    /// Bytes of a pool page (a power of two, at most a chunk).
    pub page_bytes: usize,
    /// Objects of at least this many bytes go to the large-object space.
    pub large_bytes: usize,
    /// Vprocs that have not yet finished this cycle's marking and sweeping
    /// (§3.2.1, `termination`).
    pub termination: Termination,
    /// Cycles completed.
    pub cycles: AtomicU64,
    /// Bytes promoted into or allocated in the major heap since the cycle
    /// began: a cycle ends only once `min_cycle_bytes` were (see `mark`),
    /// so that a runtime that allocates nothing does not cycle for ever,
    /// and one with little live data does not cycle at every slice.
    pub allocated_in_cycle: AtomicUsize,
    /// When `allocated_in_cycle` passes this, the cycle is late (a vproc
    /// that got no CPU has not done its share): the next stop-the-world
    /// collection finishes it (see `mark::owe`). Set when a cycle begins.
    pub late_after: AtomicUsize,
    /// Bytes of objects traced by marking in this cycle: the live data the
    /// next cycle's lateness is measured against.
    pub traced_in_cycle: AtomicUsize,
    /// Cycles the next stop-the-world collection must complete whatever
    /// the counter says (1: `collect_major`, 2: a full collection).
    pub forced_cycles: AtomicU32,
    /// Whether the collection under way ends cycles (decided by its leader).
    pub ending: AtomicU32,
    /// A compaction was asked for (`Scope::compact`): the next collection
    /// that ends a cycle compacts.
    pub compact_requested: AtomicBool,
    /// Whether the collection under way compacts (decided by its leader
    /// when its last cycle ends; `compact`).
    pub compacting: AtomicBool,
    /// Bytes in use after the last compaction (`compact::due`).
    pub in_use_after_compaction: AtomicUsize,
    /// Compactions completed.
    pub compactions: AtomicU64,
    /// Every vproc's remembered set, handed in at a minor collection.
    pub handed_in: Box<[Mutex<Vec<usize>>]>,
    /// All of them, joined by the leader: each vproc forwards its share
    /// (static work sharing, §4.4).
    pub remembered: Mutex<Arc<Vec<usize>>>,
    /// Per vproc: bytes its minor heap holds at a minor collection (the
    /// leader sets to-space aside for all of them).
    pub minor_used: Box<[AtomicUsize]>,
    /// Every vproc's minor heap, one run of address space (`setup`), each
    /// reserved at its largest size.
    pub minor_heaps: std::ops::Range<usize>,
    /// The controller of the minor heaps' size (`minor_size`), used by
    /// the leader of each minor collection.
    pub minor_sizer: Mutex<MinorSizer>,
    /// The size of every minor heap now: set by the leader of a minor
    /// collection, read by each vproc when it empties its minor heap.
    pub minor_bytes: AtomicUsize,
    /// The largest `minor_bytes` has been.
    pub minor_peak: AtomicUsize,
    /// Bytes promoted by the minor collection under way, all vprocs.
    pub promoted_in_minor: AtomicUsize,
    /// A cycle ends no sooner than when the major heap has received this
    /// many bytes since it began (`global-gc-threshold` per vproc, at
    /// least a page; see `mark`).
    pub min_cycle_bytes: usize,
    /// What the cycle under way must receive before it ends: `heap-growth
    /// − 1` times the live data the previous cycle traced (OCaml's
    /// `space_overhead`), at least `min_cycle_bytes`. Set when a cycle
    /// begins.
    pub cycle_floor: AtomicUsize,
}

impl SharedHeapGc {
    pub fn new(
        vprocs: usize,
        classes: SizeClasses,
        page_bytes: usize,
        large_bytes: usize,
        first_late_after: usize,
    ) -> Self {
        SharedHeapGc {
            colours: Colours::new(),
            classes,
            page_bytes,
            large_bytes,
            termination: Termination::new(vprocs),
            cycles: AtomicU64::new(0),
            allocated_in_cycle: AtomicUsize::new(0),
            late_after: AtomicUsize::new(first_late_after),
            traced_in_cycle: AtomicUsize::new(0),
            forced_cycles: AtomicU32::new(0),
            ending: AtomicU32::new(0),
            compact_requested: AtomicBool::new(false),
            compacting: AtomicBool::new(false),
            in_use_after_compaction: AtomicUsize::new(0),
            compactions: AtomicU64::new(0),
            handed_in: (0..vprocs).map(|_| Mutex::new(Vec::new())).collect(),
            remembered: Mutex::new(Arc::new(Vec::new())),
            minor_used: (0..vprocs).map(|_| AtomicUsize::new(0)).collect(),
            minor_heaps: 0..0,
            minor_sizer: Mutex::new(MinorSizer::new(0, 0)),
            minor_bytes: AtomicUsize::new(0),
            minor_peak: AtomicUsize::new(0),
            promoted_in_minor: AtomicUsize::new(0),
            min_cycle_bytes: page_bytes,
            cycle_floor: AtomicUsize::new(page_bytes),
        }
    }

    /// Whether the value `w` points into a minor heap: one range check
    /// (values are immediates, odd, or object addresses, even).
    #[inline(always)]
    pub fn is_minor(&self, w: u64) -> bool {
        points_into(self.minor_heaps.start, self.minor_heaps.len(), w)
    }

    /// The state of a runtime on another plan.
    pub fn unused(vprocs: usize) -> Self {
        SharedHeapGc::new(vprocs, SizeClasses::new(1), 1 << 16, 0, usize::MAX)
    }

    /// Asks the next stop-the-world collection to complete `n` cycles.
    pub fn force_cycles(&self, n: u32) {
        self.forced_cycles.fetch_max(n, Ordering::Relaxed);
    }

    /// Whether the cycle may end: every vproc counted off, and the major
    /// heap got at least `cycle_floor` bytes of new data since it began.
    pub fn cycle_complete(&self) -> bool {
        self.termination.all_done()
            && self.allocated_in_cycle.load(Ordering::Relaxed)
                >= self.cycle_floor.load(Ordering::Relaxed)
    }

    /// Joins the handed-in remembered sets (leader, everyone stopped).
    pub fn join_remembered(&self) {
        let mut all = Vec::new();
        for h in self.handed_in.iter() {
            all.append(&mut lock(h));
        }
        *lock(&self.remembered) = Arc::new(all);
    }
}

/// The shared plan's part of a vproc: its minor heap, its pools, its mark
/// stack, its remembered set. Invariant: only the vproc (or its proxy,
/// `gc::blocking`) touches it.
pub(crate) struct Mutator {
    /// The minor heap `[minor_start, minor_end)`, bump-allocated; its end
    /// moves when the minor heaps are resized (`minor_size`).
    pub minor_start: usize,
    pub minor_end: usize,
    pub pools: Pools,
    /// Grey objects: marked, fields not yet scanned (§3.2).
    pub mark_stack: Vec<usize>,
    /// Field slots of major-heap objects that may point into a minor heap
    /// (§4.3.4): roots of the next minor collection.
    pub remembered: Vec<usize>,
    /// Counted off this cycle (`termination`).
    pub done: bool,
    /// Words of marking and sweeping owed (paid by slices).
    pub debt: usize,
    /// Bytes allocated in the major heap since the last slice.
    pub major_allocated: usize,
}

impl Mutator {
    pub fn new(minor_start: usize, minor_bytes: usize, pools: Pools) -> Mutator {
        Mutator {
            minor_start,
            minor_end: minor_start + minor_bytes,
            pools,
            mark_stack: Vec::new(),
            remembered: Vec::new(),
            done: false,
            debt: 0,
            major_allocated: 0,
        }
    }

    /// The part of a vproc of another plan: no minor heap, no pools.
    pub fn unused() -> Mutator {
        Mutator::new(0, 0, Pools::new(1 << 16, 1 << 16, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotation_cycles_each_value_through_the_three_roles() {
        let c = Colours::new();
        let r0 = c.roles();
        c.rotate();
        let r1 = c.roles();
        assert_eq!(r1.garbage, r0.unmarked);
        assert_eq!(r1.unmarked, r0.marked);
        assert_eq!(r1.marked, r0.garbage);
        c.rotate();
        c.rotate();
        assert_eq!(c.roles(), r0, "three rotations are the identity");
        for r in [r0, r1] {
            let mut v = [r.marked, r.unmarked, r.garbage];
            v.sort();
            assert_eq!(v, [1, 2, 3], "no role is FREE (0)");
        }
    }
}
