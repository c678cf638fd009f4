//! The shared-heap plan of multicore-ocaml-gc.txt (OCaml 5's collector):
//! `--plan shared`. This file holds the mutator's slow paths; the folder
//! holds the rest:
//!
//! | file | what | paper |
//! |---|---|---|
//! | `setup` | the reservation, a minor heap per vproc, page size, classes | §4 |
//! | `state` | plan-wide state, colours and their cycling; a vproc's part | §3.2.2 |
//! | `size_class`, `pages` | size-segmented pools, lazy sweeping by the owner | §3.3 |
//! | `mark` | darkening, the deletion barrier, slices | §3.1, §3.2 |
//! | `termination` | the count of vprocs with work left in a cycle | §3.2.1 |
//! | `minor` | parallel promotion of every minor heap | §4.4, §4.4.2 |
//! | `minor_size` | the minor heaps' size, adapted to their survival | (numagc) |
//! | `collection` | the stop-the-world handshake: minor collection, cycle end | §4.4.1, §3.2.2 |
//! | `compact` | compaction of the pools, memory given back (OCaml 5.2's) | |
//! | `weak` | ephemerons and finalisers | §5.1, §5.2 |
//! | `verify` | the heap verifier | |
//!
//! The design, against the split plan:
//!
//! * Every vproc bump-allocates in its own minor heap (the plan-neutral
//!   fast path of `Vproc`). Values are never private: any vproc may read
//!   any minor heap (§4.4), so nothing is promoted when values are shared
//!   (`promote_words` does nothing) and stolen tasks, channels and global
//!   roots carry values as they are.
//! * When a minor heap is full its vproc stops every vproc, and together
//!   they promote every live object of every minor heap into the major
//!   heap (`collection`, `minor`).
//! * The major heap does not move objects: mutable objects and objects too
//!   large for the minor heap are allocated there directly (mutable ones
//!   are never in a minor heap, so only stores into the major heap need a
//!   barrier). It is marked concurrently in slices and swept lazily.
//! * The write barrier: before a store into a mutable object the old value
//!   is darkened (§3.2's deletion barrier); after it, a minor-heap value
//!   stored into the major heap is remembered (§4.3.4). Objects allocated
//!   in the major heap are remembered likewise when their initial values
//!   are in a minor heap.
//! * Heap limit: a mutator's request that the major heap cannot hold
//!   within `max-heap` runs a full collection (two cycles ended, pages
//!   swept, empty chunks given back) and, if still refused, fails with
//!   [`ErrorKind::HeapLimit`]; collectors' own copies may pass the limit. A
//!   minor collection that leaves the heap over the limit makes the
//!   allocation that ran it fail the same way after a full collection.
//! * Ephemerons and finalisers (`weak`): decided by minor collections for
//!   minor-heap objects and at the end of each cycle for the major heap.
//! * Compaction (`compact`): on request, and at the end of a cycle when
//!   the heap holds more than `compact-overhead` % of free space over the
//!   live data, the objects of sparse pages move into dense ones and the
//!   memory freed goes back to the system.

mod collection;
pub(crate) mod compact;
pub(crate) mod mark;
mod minor;
pub(crate) mod minor_size;
pub(crate) mod pages;
pub(crate) mod setup;
pub(crate) mod size_class;
pub(crate) mod state;
pub(crate) mod termination;
mod verify;
mod weak;

pub(crate) use state::{Mutator, SharedHeapGc};

use crate::error::{Error, ErrorKind, Result};
use crate::gc::Joined;
use crate::object::{for_each_value_field, Obj};
use crate::vproc::Vproc;
use pages::PageSource;
use std::sync::atomic::Ordering;

/// Joins the pending collection at a safepoint; an error only when this
/// vproc asked for it and it was called off. Pays the slice work after.
fn join(v: &mut Vproc) -> Result<()> {
    let r = match collection::participate(v) {
        Joined::Abandoned {
            reason,
            requested: true,
        } => Err(reason.error()),
        _ => Ok(()),
    };
    v.install_limit();
    mark::pay(v);
    r
}

/// Requests a stop-the-world collection that ends `cycles` major cycles
/// (0: a minor collection only) and takes part in it.
fn collect(v: &mut Vproc, cycles: u32) -> Result<()> {
    if cycles > 0 {
        v.shared.shared_heap.force_cycles(cycles);
    }
    v.shared.coord.request(v.id);
    let r = match collection::participate(v) {
        Joined::Collected | Joined::NotPending => Ok(()),
        Joined::Abandoned { reason, .. } => Err(reason.error()),
    };
    v.install_limit();
    mark::pay(v);
    r
}

/// A full collection: everything unreachable now is freed and the chunks
/// left empty go back to the heap.
fn collect_full(v: &mut Vproc) -> Result<()> {
    collect(v, 2)
}

fn over_limit(v: &Vproc, requested: usize) -> Error {
    let heap = &v.shared.heap;
    Error::from(ErrorKind::HeapLimit {
        requested,
        in_use: heap.in_use(),
        limit: heap.limit(),
    })
}

/// The minor heap cannot hold `bytes` more: collect. `Ok(None)`: the
/// object is larger than a minor heap, allocate it with [`alloc_global`].
pub(crate) fn alloc_slow(v: &mut Vproc, bytes: usize) -> Result<Option<usize>> {
    if bytes > v.shared_heap.minor_end - v.shared_heap.minor_start {
        return Ok(None);
    }
    let mut full_done = false;
    loop {
        crate::sched::serve_mail(v);
        if v.shared.coord.pending() {
            join(v)?;
        } else if v.alloc_ptr() + bytes > v.shared_heap.minor_end {
            collect(v, 0)?;
        }
        let heap = &v.shared.heap;
        if heap.in_use() > heap.limit() {
            if full_done {
                return Err(over_limit(v, bytes));
            }
            collect_full(v)?;
            full_done = true;
            continue;
        }
        if v.install_limit() {
            continue; // a collection became pending meanwhile: join it
        }
        if let Some(p) = v.bump(bytes) {
            return Ok(Some(p));
        }
    }
}

/// Room for an object of `bytes` in the major heap (a pool slot, or the
/// large-object space), born marked; uninitialised, written by the caller
/// before its next safepoint.
pub(crate) fn alloc_global(v: &mut Vproc, bytes: usize) -> Result<usize> {
    if v.shared.coord.pending() {
        join(v)?;
    }
    if v.shared_heap.major_allocated > v.shared_heap.minor_end - v.shared_heap.minor_start {
        mark::pay(v);
    }
    let shared = v.shared.clone();
    let gc = &shared.shared_heap;
    let large = bytes >= gc.large_bytes;
    let mut attempt = 0;
    loop {
        let roles = gc.colours.roles();
        let got = if large {
            shared.heap.alloc_large(bytes, v.node, false).inspect(|&a| {
                let c = shared.heap.space.chunk_of(a).expect("a large object");
                shared
                    .heap
                    .space
                    .info(c)
                    .age
                    .store(roles.marked, Ordering::Relaxed);
            })
        } else {
            let class = gc.classes.class_of(bytes / 8);
            let slot = gc.classes.slot_words(class) * 8;
            let src = PageSource {
                slot_bytes: slot,
                garbage: roles.garbage,
                heap: &shared.heap,
                owner: v.id,
                node: v.node,
                force: false,
            };
            v.shared_heap.pools.alloc(class, roles.marked, src)
        };
        match got {
            Ok(p) => {
                v.stats.bytes_allocated += bytes as u64;
                v.stats.bytes_allocated_global += bytes as u64;
                // The heap grows by what was charged: a large object takes
                // a run of whole chunks, and the cycle's pacing must see
                // that, or large objects pile up between cycles.
                let charged = if large {
                    bytes.next_multiple_of(shared.heap.chunk_size())
                } else {
                    bytes
                };
                v.shared_heap.major_allocated += charged;
                mark::owe(v, charged);
                return Ok(p);
            }
            Err(_) if attempt == 0 => collect_full(v)?,
            Err(r) => {
                return Err(r.error(
                    bytes,
                    if large {
                        "a large object"
                    } else {
                        "a major-heap page"
                    },
                ))
            }
        }
        attempt += 1;
    }
}

/// Whether `w` points into a minor heap.
#[inline(always)]
fn is_minor(v: &Vproc, w: u64) -> bool {
    v.shared.shared_heap.is_minor(w)
}

/// The deletion barrier, before a store into field `i` of the mutable
/// (major-heap) object `o`.
#[inline]
pub(crate) fn pre_store(v: &mut Vproc, o: Obj, i: usize) {
    let old = o.field_cell(i).load(Ordering::Relaxed);
    mark::barrier(v, old);
}

/// After a store into field `i` of the major-heap object `o`: a value in
/// a minor heap is remembered.
#[inline]
pub(crate) fn remember_store(v: &mut Vproc, o: Obj, i: usize) {
    let w = o.field_cell(i).load(Ordering::Relaxed);
    if is_minor(v, w) {
        v.shared_heap.remembered.push(o.field_ptr(i) as usize);
    }
}

/// A major-heap object `o` was just initialised: its fields holding
/// minor-heap values are remembered.
pub(crate) fn init_global(v: &mut Vproc, o: Obj) {
    let h = o.header().expect("an initialised object");
    let shared = v.shared.clone();
    for_each_value_field(h, &shared.descs, |i| {
        if is_minor(v, o.field(i)) {
            v.shared_heap.remembered.push(o.field_ptr(i) as usize);
        }
    });
}

/// Safepoint for loops that do not allocate.
pub(crate) fn poll(v: &mut Vproc) {
    crate::sched::serve_mail(v);
    if v.shared.coord.pending() {
        // A poll has no error to return; a called-off collection that this
        // vproc asked for is asked for again by its next slow path.
        let _ = join(v);
    }
}

/// An idle vproc's turn: a slice of the cycle's work, if it has any.
/// `true` when there was work (the caller looks for other work first
/// before it sleeps).
pub(crate) fn idle_work(v: &mut Vproc) -> bool {
    if v.shared_heap.done {
        return false;
    }
    mark::slice(v, 64 << 10);
    true
}

/// A minor collection of every vproc.
pub(crate) fn collect_minor(v: &mut Vproc) {
    poll(v);
    let _ = collect(v, 0);
}

/// Completes the current major cycle (OCaml's `Gc.major`).
pub(crate) fn collect_major(v: &mut Vproc) -> Result<()> {
    poll(v);
    collect(v, 1)
}

/// A full collection (OCaml's `Gc.full_major`, and the memory of emptied
/// chunks given back as `Gc.compact` would).
pub(crate) fn collect_global(v: &mut Vproc) -> Result<()> {
    poll(v);
    collect_full(v)
}

/// A full collection, then a compaction of the major heap (OCaml's
/// `Gc.compact`). A compaction happens at the end of the first collection
/// that ends a cycle after the request; when another vproc's collection
/// ended before this one's request was seen, a second is run.
pub(crate) fn compact(v: &mut Vproc) -> Result<()> {
    poll(v);
    let before = v.shared.shared_heap.compactions.load(Ordering::Relaxed);
    for _ in 0..2 {
        v.shared
            .shared_heap
            .compact_requested
            .store(true, Ordering::Relaxed);
        collect_full(v)?;
        if v.shared.shared_heap.compactions.load(Ordering::Relaxed) != before {
            break;
        }
    }
    Ok(())
}

/// Major cycles completed.
pub(crate) fn cycles(shared: &crate::vproc::Shared) -> u64 {
    shared.shared_heap.cycles.load(Ordering::Relaxed)
}

#[cfg(all(test, not(loom)))]
mod tests;
