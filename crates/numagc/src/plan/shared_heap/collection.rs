//! The shared plan's stop-the-world collection: a minor collection of every
//! minor heap (`minor`), and, when the cycle's marking and sweeping are
//! complete or a caller forces it, the barrier that ends the major cycle
//! (multicore-ocaml-gc.txt §3.2.2) and begins the next.
//!
//! It runs on the handshake of `gc::handshake` like the split plan's
//! global collection, in phases that every vproc (or its proxy) attends:
//!
//! 1. *Gather*: each vproc hands in its remembered set and its minor
//!    heap's size; the leader joins the sets and sets to-space aside (or
//!    calls the collection off; nothing has moved).
//! 2. *Promote*: each vproc forwards its roots and its share of the
//!    remembered slots, the leader the global roots, then scans its
//!    copies. Phase barrier; the leader decides the minor heaps'
//!    ephemerons and finalisers with its promoter (`weak`), then whether
//!    cycles end (every vproc counted off and new data arrived, or one was
//!    forced) and, if not, ends the collection (verifying the heap first
//!    when asked).
//! 3. *End of cycle*, as many times as cycles are to end: each vproc
//!    finishes its marking and sweeping (mutators are stopped, so mark
//!    stacks only shrink); a barrier; the verifier checks that everything
//!    reachable is marked; a barrier whose serial step runs the major
//!    heap's ephemeron rounds and finalisers (`weak`), frees unmarked large
//!    objects, rotates the colours, resets the counter and the pacing, and
//!    darkens the global roots and due finalisers' values; then each vproc
//!    darkens its roots (the leader the global roots) and puts its pages up
//!    for sweeping: the next cycle has begun.
//!
//! 4. *Compaction* (`compact`), when the last cycle's end decided on it:
//!    each vproc sweeps all its pages, then the three phases of `compact`;
//!    the leader ends the collection in the last.
//!
//! Each vproc then empties its minor heap, and pays its share of the
//! cycle's work in a slice after leaving (`mark::pay`).

use super::compact;
use super::mark::{self, darken};
use super::minor::Promoter;
use super::minor_size::MinorOutcome;
use super::verify;
use crate::gc::Joined;
use crate::sync::lock;
use crate::vproc::Vproc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Takes part in the pending stop-the-world collection.
pub(crate) fn participate(v: &mut Vproc) -> Joined {
    let shared = v.shared.clone();
    let (heap, gc, coord) = (&shared.heap, &shared.shared_heap, &shared.coord);
    if let Err(j) = crate::gc::enter(coord, v.id) {
        return j;
    }
    let requested = coord.leader() == Some(v.id);
    let _guard = crate::gc::AbortOnUnwind("stop-the-world collection of the shared plan");
    let t0 = Instant::now();
    v.count_allocation();

    // 1. Gather.
    let used = v.alloc_ptr() - v.shared_heap.minor_start;
    gc.minor_used[v.id].store(used, Ordering::Relaxed);
    lock(&gc.handed_in[v.id]).append(&mut v.shared_heap.remembered);
    let gathered = coord.gather(
        v.id,
        || {
            let need = super::setup::to_space_chunks(&shared);
            heap.ensure_pooled(&need)
                .map_err(|m| crate::gc::handshake::Abandoned::NoToSpace {
                    bytes: m.bytes,
                    errno: m.errno,
                })?;
            gc.join_remembered();
            if shared.config.verify {
                let all = lock(&gc.remembered).clone();
                verify::remembered_sets_complete(&shared, &all, "the start of a minor collection");
            }
            Ok(())
        },
        || {},
    );
    if let Err(reason) = gathered {
        // Called off: the remembered set goes back where it was.
        v.shared_heap
            .remembered
            .append(&mut lock(&gc.handed_in[v.id]));
        v.record_pause(crate::trace::SpanKind::Minor, t0);
        v.publish_stats();
        return Joined::Abandoned { reason, requested };
    }

    // 2. Promote.
    let is_leader = coord.leader() == Some(v.id);
    let remembered = lock(&gc.remembered).clone();
    let n = coord.vprocs();
    let roles = gc.colours.roles();
    let id = v.id;
    let mut p = Promoter::new(
        heap,
        gc,
        &shared.descs,
        &mut v.shared_heap.pools,
        id,
        v.node,
        n == 1,
        roles,
    );
    for r in v.roots.as_mut_slice().iter_mut() {
        *r = p.forward(*r);
    }
    let share = remembered.len().div_ceil(n);
    for &slot in remembered.iter().skip(id * share).take(share) {
        p.forward_slot(slot);
    }
    if is_leader {
        shared.global_roots.update(|w| p.forward(w));
    }
    p.drain();
    drop(remembered);
    gc.promoted_in_minor
        .fetch_add(p.copied_bytes, Ordering::Relaxed);
    coord.phase(id, || {
        // Everything reachable is promoted: ephemerons and finalisers of
        // the minor heaps are decided with the leader's promoter.
        super::weak::after_minor(&shared, &mut p);
        *lock(&gc.remembered) = std::sync::Arc::new(Vec::new());
        let forced = gc.forced_cycles.swap(0, Ordering::Relaxed);
        let ready = gc.cycle_complete();
        let ending = forced.max(ready as u32);
        gc.ending.store(ending, Ordering::Relaxed);
        resize_minor_heaps(&shared, ending >= 2);
        if shared.config.verify {
            verify::major_heap(&shared, "a minor collection");
        }
        if ending == 0 {
            coord.finish();
        }
    });
    let copied = p.copied_bytes;
    drop(p);
    v.stats.bytes_copied_minor += copied as u64;
    mark::owe(v, copied);
    if shared.config.verify {
        verify::roots(v, "a minor collection");
    }
    let ending = gc.ending.load(Ordering::Relaxed);
    let t_cycle = Instant::now();
    for round in 0..ending {
        end_cycle(v, round + 1 == ending);
    }
    let compacting = ending > 0 && gc.compacting.load(Ordering::Relaxed);
    if ending >= 2 || compacting {
        // A full collection, or a compaction: what the last cycle's end
        // left unreachable is freed now.
        let garbage = gc.colours.roles().garbage;
        v.shared_heap.pools.sweep_some(garbage, usize::MAX, |_| {});
    }
    if compacting {
        super::compact::run(v);
    } else if ending >= 2 {
        // Chunks left empty go back to the heap.
        v.shared_heap.pools.release_empty_chunks(heap);
    }
    if ending > 0 && coord.blocking().is_proxied(v.id) {
        // Its thread is in a blocking section: its proxy does its share of
        // the new cycle now rather than hold the cycle up.
        mark::finish_all(v);
    }
    if ending > 0 {
        v.record_pause_from(crate::trace::SpanKind::Global, t0, t_cycle);
    }
    // Every minor heap is empty now. A value held across this collection
    // without a root is caught at its next use (`compiled`'s debug checks,
    // the verifier): every vproc has passed the phase above, so no one
    // reads this minor heap's forwarding headers any more.
    let start = v.shared_heap.minor_start;
    #[cfg(debug_assertions)]
    crate::compiled::poison(start, v.alloc_ptr());
    v.set_alloc_ptr(start);
    v.counted_ptr = start;
    // The size the leader decided (`minor_size`); the limit is installed
    // when this vproc leaves the collection.
    v.shared_heap.minor_end = start + gc.minor_bytes.load(Ordering::Relaxed);
    v.alloc_end = v.shared_heap.minor_end;
    if shared.config.verify {
        v.shared_heap
            .pools
            .check_free_slots()
            .unwrap_or_else(|e| panic!("heap verifier: after a minor collection: {e}"));
    }
    if ending == 0 {
        v.record_pause(crate::trace::SpanKind::Minor, t0);
    }
    v.publish_stats();
    Joined::Collected
}

/// Decides the size of the minor heaps after this collection from its
/// survival and the cost measured at each size (`minor_size`), charging
/// growth to the heap's budget and giving shrinkage back; `full`: the
/// collection is a full one. The leader, in the serial step after
/// promotion: no vproc allocates.
fn resize_minor_heaps(shared: &crate::vproc::Shared, full: bool) {
    let gc = &shared.shared_heap;
    let promoted = gc.promoted_in_minor.swap(0, Ordering::Relaxed);
    let (mut held, mut fullest) = (0, 0);
    for used in gc.minor_used.iter().map(|u| u.load(Ordering::Relaxed)) {
        held += used;
        fullest = fullest.max(used);
    }
    let heaps = gc.minor_used.len();
    let current = gc.minor_bytes.load(Ordering::Relaxed);
    let next = lock(&gc.minor_sizer).decide(MinorOutcome {
        current,
        fullest,
        held,
        promoted,
        full,
        now_ns: shared.epoch.elapsed().as_nanos() as u64,
    });
    let resized = match next.cmp(&current) {
        std::cmp::Ordering::Greater => shared.heap.charge_other((next - current) * heaps),
        std::cmp::Ordering::Less => {
            shared.heap.uncharge_other((current - next) * heaps);
            true
        }
        std::cmp::Ordering::Equal => false,
    };
    if resized {
        gc.minor_bytes.store(next, Ordering::Relaxed);
        gc.minor_peak.fetch_max(next, Ordering::Relaxed);
    }
}

/// One end of a cycle and the beginning of the next (phase 3 of the module
/// doc); `last`: the leader ends the collection in its final step.
fn end_cycle(v: &mut Vproc, last: bool) {
    let shared = v.shared.clone();
    let (heap, gc, coord) = (&shared.heap, &shared.shared_heap, &shared.coord);
    mark::finish_all(v);
    coord.phase(v.id, || {});
    if shared.config.verify {
        verify::marked_from_roots(v, "the end of a major cycle");
    }
    // Global roots are darkened while everyone is stopped: once a vproc
    // resumes, it may take a value out of them into its root stack.
    let mut grey_globals = Vec::new();
    let leader_stack = &mut v.shared_heap.mark_stack;
    coord.phase(v.id, || {
        // Marking is complete but for ephemerons and finalisers (§5.1,
        // §5.2): their rounds, with the leader's mark stack.
        super::weak::at_cycle_end(&shared, leader_stack);
        let unmarked = gc.colours.roles().unmarked;
        heap.sweep_large_if(|info| info.age.load(Ordering::Relaxed) == unmarked);
        gc.colours.rotate();
        gc.termination.reset(coord.vprocs());
        // Objects promoted or allocated in the cycle were born marked, not
        // traced: the live data is what was traced plus them.
        let born_marked = gc.allocated_in_cycle.swap(0, Ordering::Relaxed);
        let growth = (shared.config.heap_growth - 1.0).max(0.05);
        let traced = gc.traced_in_cycle.swap(0, Ordering::Relaxed);
        let late = (traced as f64 * 2.0 * growth) as usize;
        gc.late_after
            .store(late.max(heap.base_trigger()), Ordering::Relaxed);
        let floor = (traced as f64 * growth) as usize;
        gc.cycle_floor
            .store(floor.max(gc.min_cycle_bytes), Ordering::Relaxed);
        gc.cycles.fetch_add(1, Ordering::Relaxed);
        let roles = gc.colours.roles();
        shared.global_roots.for_each(|w| {
            darken(heap, gc.page_bytes, roles, &mut grey_globals, w);
        });
        // So are the values of finalisers due: a finaliser may store its
        // value anywhere once it runs.
        super::weak::darken_pending(&shared, &mut grey_globals);
        if last {
            let compact = gc.compact_requested.swap(false, Ordering::Relaxed)
                || compact::due(&shared, traced + born_marked);
            gc.compacting.store(compact, Ordering::Relaxed);
            if !compact {
                coord.finish();
            }
        }
    });
    // The next cycle: this vproc's pages are to be swept, its roots are grey.
    let roles = gc.colours.roles();
    let m = &mut v.shared_heap;
    m.done = false;
    // The new cycle's work starts with the slice paid after this
    // collection, not only once promotion or allocation owes some: a vproc
    // that allocates little would otherwise leave its grey roots for the
    // next stop-the-world collection.
    m.debt = m.debt.max(1024);
    m.pools.begin_sweep();
    m.mark_stack.append(&mut grey_globals);
    let stack = &mut m.mark_stack;
    for &r in v.roots.as_mut_slice().iter() {
        darken(heap, gc.page_bytes, roles, stack, r);
    }
}
