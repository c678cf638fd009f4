//! Plans: the heap designs numagc can run, chosen at run time (`--plan`).
//!
//! ## The boundary
//!
//! A plan owns everything of its design: its spaces and their state, its
//! collectors, its part of each vproc, its slow paths, barrier and
//! verifier. The rest of the runtime — the mutator API ([`crate::Scope`],
//! [`crate::Handle`], [`crate::View`]), the scheduler, the C ABI, the
//! harness and the torture tester — reaches a plan only through the
//! functions of this module, plus two plan-neutral mechanisms every design
//! of the papers shares: the per-vproc bump pointer and limit of
//! [`crate::vproc::Vproc`] (the allocation fast path, inlined), and the
//! stop-the-world machinery of `crate::gc` (handshake, blocking sections,
//! work queues) and the chunk spaces of `crate::heap`.
//!
//! What a plan provides (one arm of each function below):
//!
//! | function | when |
//! |---|---|
//! | [`alloc_slow`] | the bump region is exhausted (collect, then refill it) |
//! | [`alloc_global`] | an object that must be shared or is too large (mutable, large) |
//! | [`promote_words`] | values are about to be shared with another vproc |
//! | [`pre_store`] | the write barrier, before a store into a mutable object |
//! | [`remember_store`] | the write barrier, after a store into a mutable object |
//! | [`weak_read`] | a value was read out of an ephemeron (weak reference) |
//! | [`init_global`] | an object allocated by `alloc_global` was initialised |
//! | [`poll`], [`join_collection`] | a safepoint: join a pending collection, serve requests |
//! | [`collect_minor`], [`collect_major`], [`collect_global`], [`collect_global_young`], [`compact`] | explicit collections |
//! | [`idle_work`] | a vproc with nothing to run, before it sleeps |
//! | [`is_private`], [`private_bytes_in_use`], [`full_global_collections`] | queries of the API and the statistics |
//!
//! Weak references, ephemerons and finalisers: every collector of a plan
//! runs `crate::weak::process` (plan-neutral: the lists, the rounds, the
//! finaliser queues) through a `crate::weak::WeakTracer` of its own, when
//! `Shared::weak` is not empty (`plan/split/weak.rs` for the split plan).
//!
//! Its state: the plan-wide part lives in [`crate::vproc::Shared`] (the
//! split plan's `split: GlobalGc`, the shared plan's `shared_heap:
//! SharedHeapGc`, beside the chunk heap), the per-vproc part in
//! [`crate::vproc::Vproc`] (`split`, `shared_heap`), both built by the
//! plan's `setup` when a runtime starts; the parts of the plans a runtime
//! does not run are empty (no memory is reserved for them).
//!
//! The form, measured: the dispatch is a `match` on the configured
//! [`PlanKind`], on slow paths only, so each plan's code is inlined into
//! its arm and the fast paths (bump allocation, reads, the store) do not
//! see the boundary. Moving the split plan behind it cost nothing
//! measurable (`docs/results/plans.md`). To add a plan: a folder
//! `plan/<name>/` with its setup, mutator part, slow paths and collectors;
//! a `PlanKind` value (`config/choices.rs`); an arm in each function here;
//! its state beside the split plan's in `Shared` and `Vproc`.
//!
//! | plan | paper | status |
//! |---|---|---|
//! | `split` (`plan/split/`) | manticore-numa-gc.md §3: local heaps + chunked NUMA global heap | implemented |
//! | `shared` (`plan/shared_heap/`) | multicore-ocaml-gc.txt: minor heaps + shared mark-sweep major heap | implemented (issue 17), with compaction, ephemerons and finalisers |
//! | hybrid | gumsmp-shared-distributed-heaps.txt | not yet implemented (issue 19) |

pub(crate) mod shared_heap;
pub(crate) mod split;

use crate::config::{Config, PlanKind};
use crate::error::Result;
use crate::heap::global::GlobalHeap;
use crate::object::Obj;
use crate::topology::{Topology, VprocPlacement};
use crate::vproc::Vproc;

/// A vproc's part of its plan, as `setup` makes it.
pub(crate) enum VprocPart {
    Split(split::Mutator),
    SharedHeap(shared_heap::Mutator),
}

/// What a runtime starts with: the heap, both plans' plan-wide states
/// (the one not configured is empty) and each vproc's part.
pub(crate) struct Parts {
    pub heap: GlobalHeap,
    pub split: split::global::GlobalGc,
    pub shared_heap: shared_heap::SharedHeapGc,
    pub vprocs: Vec<VprocPart>,
}

/// Builds the configured plan. Fails with `ErrorKind::MapFailed` when the
/// system refuses the heap's memory; nothing is left behind.
pub(crate) fn setup(
    config: &Config,
    topology: &Topology,
    placements: &[VprocPlacement],
    faults: crate::fault::Hook,
) -> Result<Parts> {
    let n = placements.len();
    match config.plan {
        PlanKind::SplitHeap => {
            let p = split::setup::create(config, topology, placements, faults)?;
            Ok(Parts {
                heap: p.heap,
                split: p.gc,
                shared_heap: shared_heap::SharedHeapGc::unused(n),
                vprocs: p.mutators.into_iter().map(VprocPart::Split).collect(),
            })
        }
        PlanKind::SharedHeap => {
            let p = shared_heap::setup::create(config, topology, placements, faults)?;
            Ok(Parts {
                heap: p.heap,
                split: split::global::GlobalGc::new(topology.num_nodes(), 0),
                shared_heap: p.gc,
                vprocs: p.mutators.into_iter().map(VprocPart::SharedHeap).collect(),
            })
        }
    }
}

/// The nursery cannot hold `bytes` more: collect. `Ok(None)` means the
/// object must be allocated with [`alloc_global`].
#[inline(never)]
pub(crate) fn alloc_slow(v: &mut Vproc, bytes: usize) -> Result<Option<usize>> {
    match v.plan {
        PlanKind::SplitHeap => split::alloc_slow(v, bytes),
        PlanKind::SharedHeap => shared_heap::alloc_slow(v, bytes),
    }
}

/// Uninitialised room for an object of `bytes` in the shared part of the
/// heap (mutable objects, large objects); written before the next
/// safepoint, then announced with [`init_global`].
pub(crate) fn alloc_global(v: &mut Vproc, bytes: usize) -> Result<usize> {
    match v.plan {
        PlanKind::SplitHeap => split::alloc_global(v, bytes),
        PlanKind::SharedHeap => shared_heap::alloc_global(v, bytes),
    }
}

/// The object `o` from [`alloc_global`] is initialised.
#[inline]
pub(crate) fn init_global(v: &mut Vproc, o: Obj) {
    match v.plan {
        // Its values were promoted before they were written.
        PlanKind::SplitHeap => {}
        PlanKind::SharedHeap => shared_heap::init_global(v, o),
    }
}

/// Makes the values in `words` shareable with other vprocs (in place).
/// Never collects. `Err` (nothing changed) when the memory for the copies
/// cannot be obtained.
pub(crate) fn promote_words(v: &mut Vproc, words: &mut [u64]) -> Result<()> {
    match v.plan {
        PlanKind::SplitHeap => split::promote_words(v, words),
        // Every value is shareable as it is.
        PlanKind::SharedHeap => Ok(()),
    }
}

/// A value is about to be stored into field `i` of the mutable object `o`.
#[inline]
pub(crate) fn pre_store(v: &mut Vproc, o: Obj, i: usize) {
    match v.plan {
        PlanKind::SplitHeap => {}
        PlanKind::SharedHeap => shared_heap::pre_store(v, o, i),
    }
}

/// The mutator read `w` out of an ephemeron's key or data: it is now
/// reachable strongly, whatever the collector found so far.
#[inline]
pub(crate) fn weak_read(v: &mut Vproc, w: u64) {
    match v.plan {
        // A local or global collection decides with every root in view.
        PlanKind::SplitHeap => {}
        // Marking is concurrent: a value taken out of a weak field during
        // a cycle is darkened, or the cycle could end with it reachable
        // and unmarked (the snapshot saw it only weakly).
        PlanKind::SharedHeap => shared_heap::mark::barrier(v, w),
    }
}

/// A value was stored into field `i` of the mutable object `o`.
#[inline]
pub(crate) fn remember_store(v: &mut Vproc, o: Obj, i: usize) {
    match v.plan {
        PlanKind::SplitHeap => split::remember_store(v, o, i),
        PlanKind::SharedHeap => shared_heap::remember_store(v, o, i),
    }
}

/// Safepoint: joins a pending collection.
pub(crate) fn poll(v: &mut Vproc) {
    match v.plan {
        PlanKind::SplitHeap => split::poll(v),
        PlanKind::SharedHeap => shared_heap::poll(v),
    }
}

/// A vproc with nothing to run does some of its plan's concurrent work;
/// `true` when there was some.
pub(crate) fn idle_work(v: &mut Vproc) -> bool {
    match v.plan {
        PlanKind::SplitHeap => false,
        PlanKind::SharedHeap => shared_heap::idle_work(v),
    }
}

pub(crate) fn collect_minor(v: &mut Vproc) {
    match v.plan {
        PlanKind::SplitHeap => split::collect_minor(v),
        PlanKind::SharedHeap => shared_heap::collect_minor(v),
    }
}

pub(crate) fn collect_major(v: &mut Vproc) -> Result<()> {
    match v.plan {
        PlanKind::SplitHeap => split::collect_major(v),
        PlanKind::SharedHeap => shared_heap::collect_major(v),
    }
}

/// An explicit global collection: a full one. `Err` when it was called off.
pub(crate) fn collect_global(v: &mut Vproc) -> Result<()> {
    match v.plan {
        PlanKind::SplitHeap => split::collect_global_full(v),
        PlanKind::SharedHeap => shared_heap::collect_global(v),
    }
}

/// A full collection that leaves the heap compact and gives the memory
/// freed back to the system (OCaml's `Gc.compact`).
pub(crate) fn compact(v: &mut Vproc) -> Result<()> {
    match v.plan {
        PlanKind::SplitHeap => split::compact(v),
        PlanKind::SharedHeap => shared_heap::compact(v),
    }
}

/// An explicit global collection of the kind a trigger starts (young when
/// the plan has young collections and tenured data is within its limit;
/// the end of the current major cycle in the shared plan).
pub(crate) fn collect_global_young(v: &mut Vproc) -> Result<()> {
    match v.plan {
        PlanKind::SplitHeap => split::collect_global(v),
        PlanKind::SharedHeap => shared_heap::collect_major(v),
    }
}

/// An idle vproc was woken because a collection is pending.
pub(crate) fn join_collection(v: &mut Vproc) {
    poll(v)
}

/// Whether the object at `addr` is private to vproc `v` (in the split
/// plan: in its local heap), so that sharing it needs a promotion.
#[inline]
pub(crate) fn is_private(v: &Vproc, addr: usize) -> bool {
    match v.plan {
        PlanKind::SplitHeap => v.split.local.contains(addr),
        PlanKind::SharedHeap => false,
    }
}

/// Bytes of vproc `v`'s private heap in use (in the split plan: its local
/// heap's old data and nursery; in the shared plan: its minor heap).
pub(crate) fn private_bytes_in_use(v: &Vproc) -> usize {
    match v.plan {
        PlanKind::SplitHeap => {
            (v.split.local.old_top - v.split.local.base)
                + (v.alloc_ptr() - v.split.local.nursery_start)
        }
        PlanKind::SharedHeap => v.alloc_ptr() - v.shared_heap.minor_start,
    }
}

/// Global collections completed that were full ones (every chunk
/// evacuated; the split plan's young global collections are not); in the
/// shared plan, major cycles completed.
pub(crate) fn full_global_collections(shared: &crate::vproc::Shared) -> u64 {
    match shared.config.plan {
        PlanKind::SplitHeap => shared.split.full_collections(),
        PlanKind::SharedHeap => shared_heap::cycles(shared),
    }
}
