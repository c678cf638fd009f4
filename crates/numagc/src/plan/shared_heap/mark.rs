//! Mostly-concurrent marking and lazy sweeping of the major heap, in slices
//! run by the vprocs themselves (multicore-ocaml-gc.txt §3.1, §3.2, §3.3).
//!
//! * **Darkening** an object turns its colour from unmarked to marked with
//!   a load and a store, as OCaml 5's `mark_slice_darken` does, and pushes
//!   it on the darkening vproc's own mark stack (§3.2 sets the mark bit
//!   with an atomic operation so that two vprocs never both scan an
//!   object; here two racing markers may both scan it, which changes
//!   nothing: [`darken`] says why, and what it saves). Marking does not
//!   prefetch the objects it pops, unlike OCaml 5.1's `mark_slice`: a
//!   ring of 8 prefetched objects between the stack and the scan made
//!   binarytrees' major slices slower (2.08 -> 2.20 s, 3 runs each), the
//!   minor collections lay a tree out in the order marking visits it, and
//!   the ring's delay broke that order.
//! * **Roots** are darkened when a cycle begins, at the stop-the-world
//!   barrier that ends the previous one, each vproc its own; the leader
//!   the registered global roots. Roots are not marked incrementally (the
//!   paper's §3.2.2 choice), so nothing a mutator does later to its roots
//!   needs a barrier.
//! * **The deletion barrier** (§3.2, snapshot at the beginning): before a
//!   store into a major-heap object, the value it overwrites is darkened.
//!   Objects allocated during a cycle are born marked, and the minor heaps
//!   are empty when a cycle begins, so every object reachable at the
//!   snapshot, or created since, ends the cycle marked.
//! * **Slices**: after each minor collection and each stretch of major
//!   allocation a vproc pays its *debt* of work, proportional to what it
//!   promoted or allocated in the major heap: `(g + 1) / (g − 1)` words of
//!   marking or sweeping per word allocated for a heap growth `g`, so that a
//!   cycle (marking the live data, sweeping the heap) finishes while the
//!   heap grows by `(g − 1) × live`, OCaml's pacing by `space_overhead`
//!   with `g = 1 + o/100`. Idle vprocs work off the rest before sleeping.
//!   A cycle still running when the major heap has received 2 × (g − 1)
//!   times the bytes the previous cycle traced (at least the heap's base
//!   trigger) is late, and the next stop-the-world collection finishes it:
//!   the heap stays bounded even when a vproc gets no CPU.
//! * **Termination** (§3.2.1, `termination`): a vproc whose mark stack is
//!   empty and whose pages are all swept counts itself off once per cycle; one
//!   that darkens something afterwards (the barrier) counts itself back on.
//!   When the counter reads zero and the major heap has received at least
//!   `heap-growth − 1` times the live data the previous cycle traced, and
//!   at least `global-gc-threshold` bytes per vproc, since the cycle began
//!   (a runtime that allocates nothing does not cycle for ever; one whose
//!   slices finish early, because little was left to sweep or the
//!   minimum slice did the work, does not run cycles more often than
//!   `heap-growth` says: binarytrees ran 18 cycles with a floor of 32 MiB
//!   where its live data was 100–140 MiB, and 9 with this one, its major
//!   slices' time halved; the split plan's global collections keep the
//!   same `global-gc-threshold` floor), the
//!   vproc that counted last asks for a stop-the-world collection, which —
//!   every vproc stopped — ends the cycle. Because the barrier may still have pushed
//!   work between the last count and the stop, each vproc first drains its
//!   own mark stack there: with the mutators stopped, the stacks only
//!   shrink, so when all are empty marking is complete (`loom_models`
//!   checks the counter and this final drain).
//!
//! A vproc in a blocking section has its proxy do its share at once, right
//! after the barrier that begins the cycle, so that the cycle never waits
//! for a thread that does not run.

use super::pages::Page;
use super::state::{Roles, SharedHeapGc};
use crate::heap::global::GlobalHeap;
use crate::heap::space::ChunkKind;
use crate::object::descriptor::DescriptorTable;
use crate::object::header::{ID_ARRAY, ID_RAW, ID_VECTOR};
use crate::object::{for_each_value_field, is_pointer, Obj};
use crate::vproc::Vproc;
use std::sync::atomic::{AtomicU8, Ordering};

/// Where a value points, as the shared plan's collectors see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// Not a pointer into the heap (an immediate, or outside the reservation).
    Outside,
    /// Into a vproc's minor heap.
    Minor,
    /// An object in a pool page.
    Pool(Page),
    /// A large object (the first chunk of its run).
    Large(usize),
    /// Somewhere else in the reservation (a bug if a value points there).
    Elsewhere,
}

#[inline(always)]
pub(crate) fn place(heap: &GlobalHeap, page_bytes: usize, w: u64) -> Place {
    if !is_pointer(w) {
        return Place::Outside;
    }
    let a = w as usize;
    let Some(c) = heap.space.chunk_of(a) else {
        return Place::Outside;
    };
    match heap.space.info(c).kind() {
        ChunkKind::Local => Place::Minor,
        ChunkKind::Pool => Place::Pool(Page::of(a, page_bytes)),
        ChunkKind::LargeHead if heap.space.chunk_start(c) == a => Place::Large(c),
        _ => Place::Elsewhere,
    }
}

/// The colour cell of the major-heap object `w`, if it is one.
#[inline(always)]
pub(crate) fn colour_cell(heap: &GlobalHeap, page_bytes: usize, w: u64) -> Option<&AtomicU8> {
    match place(heap, page_bytes, w) {
        Place::Pool(p) => Some(p.colour_of(w as usize)),
        Place::Large(c) => Some(&heap.space.info(c).age),
        _ => None,
    }
}

/// Darkens `w` if it is an unmarked major-heap object; `true` when this
/// call marked it (and pushed it on `stack`).
///
/// The colour is set with a load and a store, not a compare-and-swap, as
/// OCaml 5's `mark_slice_darken` does for every object but continuations:
/// two markers that race on one object may both mark it and both push
/// it, and it is then scanned twice, which changes nothing (its children
/// are marked by the first scan). No other transition can interleave:
/// during marking, only markers change an `unmarked` colour, and only to
/// `marked` (the sweeper frees the garbage colour, allocation takes
/// `FREE` slots, a compaction runs after a barrier with every vproc
/// stopped). Each of the two markers has the object on its stack when it
/// counts itself back on for termination, so `termination` holds too
/// (its loom model races two markers on one object). Measured on the
/// shared plan's binarytrees 21: the compare-and-swap was about half of
/// the marking time.
#[inline(always)]
pub(crate) fn darken(
    heap: &GlobalHeap,
    page_bytes: usize,
    roles: Roles,
    stack: &mut Vec<usize>,
    w: u64,
) -> bool {
    let Some(c) = colour_cell(heap, page_bytes, w) else {
        return false;
    };
    if c.load(Ordering::Relaxed) == roles.unmarked {
        c.store(roles.marked, Ordering::Release);
        stack.push(w as usize);
        true
    } else {
        false
    }
}

/// Scans grey objects of `stack` until about `budget` words were scanned;
/// returns the words scanned.
pub(crate) fn mark(
    heap: &GlobalHeap,
    gc: &SharedHeapGc,
    descs: &DescriptorTable,
    stack: &mut Vec<usize>,
    budget: usize,
) -> usize {
    let roles = gc.colours.roles();
    let pb = gc.page_bytes;
    let mut done = 0;
    while done < budget {
        let Some(a) = stack.pop() else { break };
        // SAFETY: only major-heap objects are pushed (by `darken`), and
        // they do not move or die while reachable.
        let o = unsafe { Obj::at(a) };
        let h = o.header().expect("a major-heap object has a header");
        // Fields are read atomically: mutators may store into mutable
        // objects while they are scanned.
        let pushed = stack.len();
        let mut darken_field = |i: usize| {
            let w = o.field_cell(i).load(Ordering::Acquire);
            darken(heap, pb, roles, stack, w);
        };
        // Small mixed objects (most of a functional heap) by their packed
        // layout in a loop of their own, where the darkening is inlined:
        // through `for_each_value_field`'s three loops it stayed a call
        // per field, an eighth of the marking time (binarytrees 21).
        let fast = match h.id() {
            ID_RAW | ID_VECTOR | ID_ARRAY => None,
            id => Some(descs.fast(id)).filter(|f| f.is_some()),
        };
        match fast {
            Some(f) => {
                // Last field first, so that the first is scanned first:
                // the order in which a minor collection lays promoted
                // objects out (`minor::Promoter::drain`).
                let mut mask = f.pointer_mask();
                while mask != 0 {
                    let i = 31 - mask.leading_zeros() as usize;
                    darken_field(i);
                    mask &= !(1u32 << i);
                }
            }
            None => {
                // The same order for the rest: the first field's child on
                // top of the stack.
                for_each_value_field(h, descs, darken_field);
                stack[pushed..].reverse();
            }
        }
        done += h.len() + 1;
    }
    if done > 0 {
        gc.traced_in_cycle.fetch_add(done * 8, Ordering::Relaxed);
    }
    done
}

/// The deletion barrier: `old` is about to be overwritten in a major-heap
/// object.
#[inline]
pub(crate) fn barrier(v: &mut Vproc, old: u64) {
    if !is_pointer(old) {
        return;
    }
    let shared = &*v.shared;
    let gc = &shared.shared_heap;
    let m = &mut v.shared_heap;
    if darken(
        &shared.heap,
        gc.page_bytes,
        gc.colours.roles(),
        &mut m.mark_stack,
        old,
    ) {
        gc.termination.count_on(&mut m.done);
    }
}

/// Words of slice work owed per byte promoted or allocated in the major
/// heap, times 8: `(g + 1) / (g − 1)` per word (see the module doc).
pub(crate) fn work_per_byte(heap_growth: f64) -> f64 {
    let g = heap_growth.max(1.05);
    ((g + 1.0) / (g - 1.0)).min(40.0) / 8.0
}

/// Adds work for `bytes` promoted or allocated in the major heap.
pub(crate) fn owe(v: &mut Vproc, bytes: usize) {
    let per = work_per_byte(v.shared.config.heap_growth);
    v.shared_heap.debt += (bytes as f64 * per) as usize;
    let shared = &*v.shared;
    let gc = &shared.shared_heap;
    let before = gc.allocated_in_cycle.fetch_add(bytes, Ordering::Relaxed);
    // Asked again at every payment below the floor, not only by the one
    // that reaches it: that one may be a collection's own promotion, when
    // a request cannot be made (one is pending), and the collection has
    // decided already.
    if before < gc.cycle_floor.load(Ordering::Relaxed) {
        end_cycle_if_complete(v);
    }
    let late = gc.late_after.load(Ordering::Relaxed);
    if before < late && before + bytes >= late && !shared.coord.pending() {
        // The heap grew by twice its headroom while the cycle ran:
        // its work cannot keep up (a vproc gets no CPU, or all of them
        // allocate faster than they mark). Finish it with everyone
        // stopped, so that the heap stays bounded whatever the scheduler.
        gc.force_cycles(1);
        shared.coord.request(v.id);
    }
}

/// Asks for the stop-the-world collection that ends the cycle when the
/// cycle is complete (rather than wait for the next minor collection,
/// which a program allocating only in the major heap may never need).
fn end_cycle_if_complete(v: &Vproc) {
    let shared = &*v.shared;
    if shared.shared_heap.cycle_complete() && !shared.coord.pending() {
        shared.coord.request(v.id);
    }
}

/// A slice: pays up to `budget` words of the debt by marking, then
/// sweeping; counts the vproc off when it has nothing left to do.
pub(crate) fn slice(v: &mut Vproc, budget: usize) {
    let shared = v.shared.clone();
    let gc = &shared.shared_heap;
    let m = &mut v.shared_heap;
    if m.done {
        m.debt = 0;
        return;
    }
    let t0 = std::time::Instant::now();
    let mut done = mark(&shared.heap, gc, &shared.descs, &mut m.mark_stack, budget);
    if done < budget {
        let garbage = gc.colours.roles().garbage;
        done += m.pools.sweep_some(garbage, budget - done, |_| {});
    }
    m.debt = m.debt.saturating_sub(done);
    if m.mark_stack.is_empty() && m.pools.all_swept() {
        m.debt = 0;
        if gc.termination.count_off(&mut m.done) {
            end_cycle_if_complete(v);
        }
    }
    if done > 0 {
        v.stats.bytes_marked += (done * 8) as u64;
        v.record_pause(crate::trace::SpanKind::Major, t0);
    }
}

/// Pays the debt (after a minor collection, or a stretch of major
/// allocation).
pub(crate) fn pay(v: &mut Vproc) {
    let debt = v.shared_heap.debt;
    if debt > 0 || v.shared_heap.major_allocated > 0 {
        v.shared_heap.major_allocated = 0;
        slice(v, debt.max(1024));
    }
}

/// Marks and sweeps everything this vproc has (at the end of a cycle,
/// everyone stopped, or for a proxy).
pub(crate) fn finish_all(v: &mut Vproc) {
    let shared = v.shared.clone();
    let gc = &shared.shared_heap;
    let m = &mut v.shared_heap;
    mark(
        &shared.heap,
        gc,
        &shared.descs,
        &mut m.mark_stack,
        usize::MAX,
    );
    let garbage = gc.colours.roles().garbage;
    m.pools.sweep_some(garbage, usize::MAX, |_| {});
    debug_assert!(m.mark_stack.is_empty() && m.pools.all_swept());
    gc.termination.count_off(&mut m.done);
    m.debt = 0;
}
