//! Plans: the heap designs numagc can run, chosen at run time (`--plan`).
//!
//! The mutator API ([`crate::Scope`], [`crate::Handle`], [`crate::View`])
//! reaches a plan only through the functions of this module — nursery
//! exhausted, allocation straight in the shared heap, promotion, safepoint
//! poll, explicit collections — plus the plan-neutral bump-pointer fast path
//! of [`crate::vproc::Vproc`]. Every design of the papers allocates by
//! bumping a per-vproc pointer, so a new plan adds an arm to each function
//! here and the same benchmark code runs on it. The dispatch is a `match` on
//! the configured [`PlanKind`]: it sits on slow paths only, and it lets the
//! compiler inline each plan's code.
//!
//! | plan | paper | status |
//! |---|---|---|
//! | `split` | manticore-numa-gc.md §3: local heaps + chunked NUMA global heap | implemented |
//! | shared heap | multicore-ocaml-gc.txt | not yet implemented |
//! | hybrid | gumsmp-shared-distributed-heaps.txt | not yet implemented |

pub(crate) mod split_heap;

use crate::config::PlanKind;
use crate::error::Result;
use crate::vproc::Vproc;

/// The nursery cannot hold `bytes` more: collect. `Ok(None)` means the
/// object must be allocated with [`alloc_global`].
#[inline(never)]
pub(crate) fn alloc_slow(v: &mut Vproc, bytes: usize) -> Result<Option<usize>> {
    match v.plan {
        PlanKind::SplitHeap => split_heap::alloc_slow(v, bytes),
    }
}

/// Uninitialised room for an object of `bytes` in the shared part of the
/// heap (mutable objects, large objects); written before the next safepoint.
pub(crate) fn alloc_global(v: &mut Vproc, bytes: usize) -> Result<usize> {
    match v.plan {
        PlanKind::SplitHeap => split_heap::alloc_global(v, bytes),
    }
}

/// Makes the values in `words` shareable with other vprocs (in place).
/// Never collects. `Err` (nothing changed) when the memory for the copies
/// cannot be obtained.
pub(crate) fn promote_words(v: &mut Vproc, words: &mut [u64]) -> Result<()> {
    match v.plan {
        PlanKind::SplitHeap => split_heap::promote_words(v, words),
    }
}

/// A value was stored into field `i` of the mutable object `o`.
#[inline]
pub(crate) fn remember_store(v: &mut Vproc, o: crate::object::Obj, i: usize) {
    match v.plan {
        PlanKind::SplitHeap => split_heap::remember_store(v, o, i),
    }
}

/// Safepoint: joins a pending collection.
pub(crate) fn poll(v: &mut Vproc) {
    match v.plan {
        PlanKind::SplitHeap => split_heap::poll(v),
    }
}

pub(crate) fn collect_minor(v: &mut Vproc) {
    match v.plan {
        PlanKind::SplitHeap => split_heap::collect_minor(v),
    }
}

pub(crate) fn collect_major(v: &mut Vproc) -> Result<()> {
    match v.plan {
        PlanKind::SplitHeap => split_heap::collect_major(v),
    }
}

/// An explicit global collection: a full one. `Err` when it was called off.
pub(crate) fn collect_global(v: &mut Vproc) -> Result<()> {
    match v.plan {
        PlanKind::SplitHeap => split_heap::collect_global_full(v),
    }
}

/// An explicit global collection of the kind a trigger starts (young when
/// the plan has young collections and tenured data is within its limit).
pub(crate) fn collect_global_young(v: &mut Vproc) -> Result<()> {
    match v.plan {
        PlanKind::SplitHeap => split_heap::collect_global(v),
    }
}

/// An idle vproc was woken because a collection is pending.
pub(crate) fn join_collection(v: &mut Vproc) {
    match v.plan {
        PlanKind::SplitHeap => split_heap::poll(v),
    }
}
