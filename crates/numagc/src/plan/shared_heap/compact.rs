//! Compaction of the major heap: objects of sparse pages move into the free
//! slots of dense pages of their class, and the memory freed goes back to
//! the system.
//!
//! multicore-ocaml-gc.txt's major heap never moves objects, and OCaml 5.0
//! and 5.1 had no compaction: a program whose live data shrank kept every
//! page it had ever used. OCaml 5.2 brought it back (`Gc.compact`,
//! `runtime/compact.c`) as a stop-the-world step after a full major cycle;
//! this is the same design on numagc's pools. OCaml 5 compacts only when
//! asked; numagc also compacts at the end of a cycle when the heap holds
//! far more than the live data (the `compact-overhead` setting, whose
//! default is OCaml 4's `max_overhead`, 500 %).
//!
//! ## When
//!
//! * On request: [`crate::Scope::compact`] (C: `numagc_compact`) runs a
//!   full collection (two cycles ended, so everything unreachable at the
//!   call is freed) and compacts at its end.
//! * Automatically ([`due`]), at the end of a cycle: the bytes in use
//!   (pool and large-object chunks) exceed what pacing lets the heap hold
//!   (the live data — the bytes the cycle traced and those born marked in
//!   it — plus a cycle's growth, `heap-growth`, or the cycle's floor of
//!   `global-gc-threshold` per vproc if larger) by more than
//!   `compact-overhead` % of the live data, and the heap
//!   has at least doubled since the last compaction (so that a heap that
//!   compaction cannot shrink, such as one of half-full pages of many
//!   classes, is not compacted at every cycle: the work is at most once
//!   per doubling).
//!
//! ## How
//!
//! It runs at the end of the stop-the-world collection that ended the
//! cycle (`collection`), every vproc stopped, after each vproc has swept
//! all its pages: every slot that is not `FREE` then holds an object that
//! was reachable when the cycle ended. A barrier first, so that no vproc
//! still darkens its roots for the new cycle while another moves objects
//! (a mark could land on an old slot after its copy was made). Then three
//! phases, a barrier after each:
//!
//! 1. **Evacuate** ([`evacuate`], each vproc its own pools, which only it
//!    may change): per class, the pages are ranked densest first, by the
//!    live bytes of their chunk and then by their own (so that the pages
//!    kept crowd into few chunks, and whole chunks empty); the shortest
//!    prefix whose free slots can hold every object of the remaining pages
//!    is kept, and the objects of the rest are copied into those free
//!    slots. An object that moved has its old slot coloured [`MOVED`] and
//!    its header replaced by its new address (the forwarding word that
//!    minor collections use).
//! 2. **Update** ([`update_own`], [`update_shared`]): every value that
//!    points to a `MOVED` slot is replaced by the address in its header:
//!    each vproc in the objects of its own pages, its root stack and its
//!    mark stack (grey objects of the cycle that has begun); the leader in
//!    the global roots, the large objects, and the weak lists (ephemerons'
//!    addresses and their untraced key and data fields, finalisers'
//!    values). These are every place a pointer to a major-heap object may
//!    be: the same roots a minor collection forwards, which must be
//!    complete for moving already, plus the mark stacks.
//! 3. **Release** ([`release`]): evacuated pages become empty; chunks all
//!    of whose pages are empty go back to the heap; empty pages of the
//!    chunks kept are given back to the system (`MADV_DONTNEED`: they read
//!    as pages of no slots until used again); the leader gives every chunk
//!    in the chunk pools back to the system too. A minor collection
//!    carves what it needs again.
//!
//! Each vproc also shrinks its mark stack, remembered set and root stack
//! to what they hold, and the leader asks the C allocator to return the
//! free memory of its arenas (`malloc_trim`), so that the capacity one
//! large collection needed is not kept for the process's life.
//!
//! Large objects do not move: each is a run of whole chunks, freed whole.
//! Pages move within their vproc's pools, so placement (`--numa-policy`)
//! is kept. Cost: a copy of each moved object, and a scan of every live
//! object and root; `bytes_compacted` and `compactions` in the statistics.

use super::mark::{place, Place};
use super::pages::{Page, PageState, Pools, FREE};
use super::verify;
use crate::heap::global::GlobalHeap;
use crate::object::descriptor::DescriptorTable;
use crate::object::{is_pointer, update_value_fields, Obj};
use crate::vproc::{Shared, Vproc};
use crate::weak::{EPH_DATA, EPH_KEY};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// The colour of a slot whose object a compaction moved; its header holds
/// the new address. Only during a compaction: no other code sees it.
pub(crate) const MOVED: u8 = 4;

/// Phases 1 to 3 on vproc `v` (each vproc, or its proxy, at the end of
/// the collection whose last cycle end decided to compact; its pages all
/// swept). The leader ends the collection in the last phase.
pub(super) fn run(v: &mut Vproc) {
    let shared = v.shared.clone();
    let (heap, gc, coord) = (&shared.heap, &shared.shared_heap, &shared.coord);
    // Every vproc has darkened its roots for the cycle that has begun
    // before any object moves. Without this barrier a vproc still
    // darkening could mark an object's old slot while its owner copies it
    // (the copy keeps the unmarked colour, the old slot becomes MOVED),
    // and the cycle would end with a root unmarked (torture, shared plan).
    coord.phase(v.id, || {});
    let moved = evacuate(&mut v.shared_heap.pools, heap);
    v.stats.bytes_compacted += moved as u64;
    coord.phase(v.id, || {});
    update_own(v);
    let is_leader = coord.leader() == Some(v.id);
    if is_leader {
        update_shared(&shared);
        v.stats.compactions += 1;
    }
    coord.phase(v.id, || {});
    release(&mut v.shared_heap.pools, heap);
    // The stacks of this vproc's collectors keep the capacity their
    // largest collection needed; a compaction gives it back too.
    let m = &mut v.shared_heap;
    m.mark_stack.shrink_to(m.mark_stack.len().max(1024));
    m.remembered.shrink_to(1024);
    v.roots.shrink();
    coord.phase(v.id, || {
        heap.trim_pools();
        crate::heap::space::trim_malloc();
        gc.in_use_after_compaction
            .store(heap.in_use(), Ordering::Relaxed);
        gc.compactions.fetch_add(1, Ordering::Relaxed);
        gc.compacting.store(false, Ordering::Relaxed);
        if shared.config.verify {
            verify::major_heap(&shared, "a compaction");
        }
        coord.finish();
    });
    if shared.config.verify {
        verify::roots(v, "a compaction");
    }
}

/// Whether the end of the cycle that found `live` bytes of objects (traced,
/// or born marked) should compact (see the module doc); called by the
/// leader, everyone stopped.
pub(super) fn due(shared: &Shared, live: usize) -> bool {
    let overhead = shared.config.compact_overhead as u128;
    if overhead == 0 {
        return false;
    }
    let heap = &shared.heap;
    let gc = &shared.shared_heap;
    let in_use = heap.in_use() as u128;
    let growth = ((shared.config.heap_growth - 1.0).max(0.0) * live as f64) as u128;
    let live = live as u128;
    // What pacing lets the heap hold: the live data, the growth of a
    // cycle (`heap-growth`), at least the cycle's floor.
    let paced = live + growth.max(gc.min_cycle_bytes as u128);
    let last = gc.in_use_after_compaction.load(Ordering::Relaxed) as u128;
    in_use * 100 > paced * 100 + overhead * live && in_use > 2 * last
}

/// `w`, or the new address of the object it points to if that moved.
#[inline]
pub(super) fn forwarded(heap: &GlobalHeap, page_bytes: usize, w: u64) -> u64 {
    if let Place::Pool(p) = place(heap, page_bytes, w) {
        if p.colour_of(w as usize).load(Ordering::Relaxed) == MOVED {
            // SAFETY: `w` points to a slot of a page in a `Pool` chunk
            // whose object this compaction moved: its first word is the
            // forwarding address written by `evacuate`.
            return unsafe { Obj::at(w as usize) }.header_word();
        }
    }
    w
}

/// Phase 1 on one vproc's pools (all swept): moves the objects of the
/// sparse pages of each class into the free slots of its dense pages.
/// Returns the bytes of the objects moved; the pages emptied are kept in
/// `pools.evacuated` until [`release`].
pub(super) fn evacuate(pools: &mut Pools, heap: &GlobalHeap) -> usize {
    debug_assert!(pools.all_swept(), "compaction needs every page swept");
    debug_assert!(pools.evacuated.is_empty());
    // Live bytes per chunk, over every class: kept pages crowd into the
    // densest chunks.
    let chunk = |p: Page| heap.space.chunk_of(p.base()).expect("a pool page");
    let mut chunk_live = HashMap::<usize, usize>::new();
    for cp in &pools.classes {
        for ps in cp.avail.iter().chain(&cp.full) {
            *chunk_live.entry(chunk(ps.page)).or_default() += live_bytes(ps);
        }
    }
    let mut moved = 0;
    for c in 0..pools.classes.len() {
        let cp = &mut pools.classes[c];
        let mut pages: Vec<PageState> = cp.avail.drain(..).chain(cp.full.drain(..)).collect();
        pages.sort_by_key(|ps| {
            (
                std::cmp::Reverse(chunk_live[&chunk(ps.page)]),
                std::cmp::Reverse(live(ps)),
                ps.page.base(),
            )
        });
        let keep = kept_prefix(&pages);
        let (kept, rest) = pages.split_at_mut(keep);
        let mut dst = 0;
        for ps in rest.iter() {
            let p = ps.page;
            for i in 0..p.slots() {
                let colour = p.colour(i).load(Ordering::Relaxed);
                if colour == FREE {
                    continue;
                }
                while kept[dst].nfree == 0 {
                    dst += 1;
                }
                let to = kept[dst].pop().expect("a page with free slots");
                let from = p.slot(i);
                // SAFETY: `from` is a slot that is not FREE: it holds an
                // initialised object (pages' invariant), and no mutator
                // runs. `to` is a free slot of a page of the same class,
                // as large as `from`'s, in another page.
                let o = unsafe { Obj::at(from) };
                let h = o.header().expect("a live object has a header");
                o.copy_to(h, to);
                Page::of(to, pools.page_bytes)
                    .colour_of(to)
                    .store(colour, Ordering::Relaxed);
                o.forward_to(to);
                p.colour(i).store(MOVED, Ordering::Relaxed);
                moved += h.size_bytes();
            }
            pools.evacuated.push(p);
        }
        pages.truncate(keep);
        for ps in pages {
            pools.file(ps, live(&ps));
        }
    }
    moved
}

/// Slots of a page that hold objects.
fn live(ps: &PageState) -> usize {
    ps.page.slots() - ps.nfree as usize
}

fn live_bytes(ps: &PageState) -> usize {
    live(ps) * ps.page.slot_bytes()
}

/// The length of the shortest prefix of `pages` whose free slots can hold
/// every object of the pages after it.
fn kept_prefix(pages: &[PageState]) -> usize {
    let mut rest_live: usize = pages.iter().map(live).sum();
    let mut free = 0;
    let mut k = 0;
    while k < pages.len() && free < rest_live {
        free += pages[k].nfree as usize;
        rest_live -= live(&pages[k]);
        k += 1;
    }
    k
}

/// Phase 2 for what vproc `v` owns: the objects of its pages, its root
/// stack, its mark stack.
pub(super) fn update_own(v: &mut Vproc) {
    let shared = v.shared.clone();
    let (heap, descs) = (&shared.heap, &shared.descs);
    let pb = shared.shared_heap.page_bytes;
    let fwd = |w: u64| forwarded(heap, pb, w);
    debug_assert!(
        v.shared_heap.remembered.is_empty(),
        "a minor collection emptied the remembered sets"
    );
    for cp in &v.shared_heap.pools.classes {
        for ps in cp.avail.iter().chain(&cp.full) {
            let p = ps.page;
            for i in 0..p.slots() {
                if p.colour(i).load(Ordering::Relaxed) != FREE {
                    update_object(p.slot(i), descs, fwd);
                }
            }
        }
    }
    for r in v.roots.as_mut_slice().iter_mut() {
        *r = fwd(*r);
    }
    for g in v.shared_heap.mark_stack.iter_mut() {
        *g = fwd(*g as u64) as usize;
    }
}

/// Phase 2 for what no vproc owns (the leader): the global roots, the
/// large objects, the weak lists.
pub(super) fn update_shared(shared: &Shared) {
    let (heap, descs) = (&shared.heap, &shared.descs);
    let pb = shared.shared_heap.page_bytes;
    let fwd = |w: u64| forwarded(heap, pb, w);
    shared.global_roots.update(fwd);
    heap.for_each_large(|a| update_object(a, descs, fwd));
    if shared.weak.is_empty() {
        return;
    }
    for mut l in shared.weak.lock_all() {
        let l = &mut *l;
        for e in l.eph_private.iter_mut().chain(l.eph_shared.iter_mut()) {
            *e = fwd(*e);
            // SAFETY: a listed ephemeron is a live object (the lists drop
            // dead ones at the end of each cycle), now at `*e`; its key
            // and data are raw fields that only weak processing and this
            // update read, everyone stopped.
            let o = unsafe { Obj::at(*e as usize) };
            for f in [EPH_KEY, EPH_DATA] {
                let w = o.field(f);
                if is_pointer(w) {
                    o.set_field(f, fwd(w));
                }
            }
        }
        let fins = l.fin_private.iter_mut().chain(l.fin_shared.iter_mut());
        for f in fins.chain(l.pending.iter_mut()) {
            f.value = fwd(f.value);
        }
    }
}

/// Updates the value fields of the object at `a`.
fn update_object(a: usize, descs: &DescriptorTable, fwd: impl Fn(u64) -> u64) {
    // SAFETY: `a` is a slot that is not FREE or a large object: an
    // initialised object, and no mutator runs.
    let o = unsafe { Obj::at(a) };
    let h = o.header().expect("a live object has a header");
    update_value_fields(o, h, descs, fwd);
}

/// Phase 3 on one vproc's pools: evacuated pages become empty, chunks
/// left empty go back to the heap, and the empty pages of the others to
/// the system. Returns the chunks given back.
pub(super) fn release(pools: &mut Pools, heap: &GlobalHeap) -> usize {
    pools.free_evacuated();
    let chunks = pools.release_empty_chunks(heap);
    pools.discard_empty_pages(heap);
    chunks
}
