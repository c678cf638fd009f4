//! The split-heap plan of manticore-numa-gc.md §3. This file holds the
//! slow paths of the mutator, tying together minor, major, promotion and
//! global collections; the folder holds the rest of the plan:
//!
//! | file | what |
//! |---|---|
//! | `setup` | the heap reserved, a local heap and copy reserve carved per vproc (§3.1) |
//! | `mutator` | the plan's part of a vproc: local heap, current chunk, copy reserve, remembered stores |
//! | `local_heap` | the layout of a local heap (§3.3, Appel's semi-generational scheme) |
//! | `minor`, `major`, `promote`, `copy` | the collections of one vproc and their copying engine (§3.3, §2.3) |
//! | `global` | the parallel global collection (§3.4) and its young variant |
//! | `verify` | the heap verifier |
//! | `weak` | ephemerons and finalisers in each collector (multicore-ocaml-gc.txt §5.1–5.2, through `crate::weak`) |
//!
//! * Nursery exhausted: minor collection; a major one when the new nursery
//!   is below its minimum (and, if the young data alone keeps it there, a
//!   major collection that takes the young data too); a global collection
//!   when the global heap is over its trigger or one is pending.
//! * Mutable objects, and objects too large for the nursery or the local
//!   heap, are allocated in the global heap: their initial values are
//!   promoted first, so the heap invariants of §2.3 hold.
//! * Heap limit: when the global heap is over `max_heap` after a full global
//!   collection, the allocation that asked fails with [`ErrorKind::HeapLimit`]
//!   and nothing else changes. The limit is the whole heap's: while one vproc
//!   holds it full, another vproc whose collections need global space may be
//!   refused as well; its state is intact and a retry succeeds once memory
//!   is freed. The vprocs carry on either way. A global collection itself
//!   is never stopped by the limit: its copies may take the heap past
//!   `max_heap` (a copy cannot stop half-way), and the limit is checked
//!   again when it is over.
//! * Memory the system refuses: a request of the mutator (a global chunk, a
//!   large object) fails with [`ErrorKind::MapFailed`]. Copies never meet the
//!   refusal half-way: a local copy (major collection, promotion) first
//!   tops up the vproc's copy reserve (`Vproc::ensure_copy_reserve`) and
//!   does not start if it cannot, which is the error of the operation that
//!   needed it; a global collection sets its to-space aside before anything
//!   moves, or is called off (`global`).
//! * A global collection called off (a vproc missed the `safepoint-timeout`
//!   deadline, or no to-space) is an error for the vproc that asked for it,
//!   returned by the operation during which it was called off: the
//!   allocation whose slow path requested or joined it, or an explicit
//!   [`crate::Scope::collect_global`] (a promotion asks for a collection
//!   at the next safepoint; a [`crate::Scope::poll`] has no error to return,
//!   and the next slow path asks again). The vprocs that were only stopped
//!   go back to their work. Nothing moved, so every heap is as it was; the
//!   heap is still over its trigger, so the next slow path asks again.

pub(crate) mod copy;
pub(crate) mod global;
pub(crate) mod local_heap;
pub(crate) mod major;
pub(crate) mod minor;
mod mutator;
pub(crate) mod promote;
pub(crate) mod setup;
pub(crate) mod verify;
pub(crate) mod weak;

pub(crate) use mutator::Mutator;

use crate::error::{Error, ErrorKind, Result};
use crate::heap::space::ChunkKind;
use crate::vproc::Vproc;
use global::{Joined, TENURED};

/// Runs the pending global collection, or requests one and runs it.
/// `Err` when the collection was called off.
pub(crate) fn collect_global(v: &mut Vproc) -> Result<()> {
    v.shared.coord.request(v.id);
    let r = match global::participate(v) {
        Joined::Collected | Joined::NotPending => Ok(()),
        Joined::Abandoned { reason, .. } => Err(reason.error()),
    };
    v.install_limit();
    r
}

/// A full global collection: explicit requests and the heap limit.
pub(crate) fn collect_global_full(v: &mut Vproc) -> Result<()> {
    v.shared.split.request_full();
    collect_global(v)
}

/// A full global collection (it evacuates every chunk, so the global heap
/// is compact), then every free chunk goes back to the system. Local heaps
/// are not given back: each vproc keeps its own for its whole life.
pub(crate) fn compact(v: &mut Vproc) -> Result<()> {
    // Chunks released by a collection wait in the chunk pools for reuse;
    // this one returns them, at its end, everyone stopped (the next
    // collection carves its to-space again when it starts).
    v.shared
        .split
        .trim_pools
        .store(true, std::sync::atomic::Ordering::Relaxed);
    collect_global_full(v)
}

/// Joins the pending collection at a safepoint. Called off, it is an error
/// only if this vproc asked for it (`promote_words` asks for the next
/// safepoint); a vproc that was only stopped goes back to work.
fn join(v: &mut Vproc) -> Result<()> {
    match global::participate(v) {
        Joined::Abandoned {
            reason,
            requested: true,
        } => Err(reason.error()),
        _ => Ok(()),
    }
}

/// The collections of the nursery-exhausted slow path.
///
/// Survivor promotion (a numagc extension of §3.3): when the last minor
/// collection found at least `survivor-promotion` % of the nursery live,
/// the program is building a structure larger than the nursery, whose every
/// object would be copied twice (nursery to old data, old data to the global
/// heap). Then the next collection evacuates the whole local heap to the
/// global heap in one pass, copying the survivors once. The mode lasts while
/// survival stays that high, measured on what each evacuation copies.
///
/// `Err` when a major collection was due but the system refused its copy
/// reserve: the minor collection ran, the major one did not start.
fn local_collections(v: &mut Vproc) -> Result<()> {
    let threshold = v.shared.config.survivor_promotion as usize;
    let survived =
        |copied: usize, used: usize| threshold > 0 && copied * 100 >= used.max(1) * threshold;
    let mut r = Ok(());
    if v.split.local.evacuate_next && v.ensure_copy_reserve().is_ok() {
        let used = (v.alloc_ptr() - v.split.local.nursery_start)
            + (v.split.local.old_top - v.split.local.base);
        let copied = major::evacuate_all(v);
        v.split.local.evacuate_next = survived(copied, used);
    } else {
        let used = v.alloc_ptr() - v.split.local.nursery_start;
        let copied = minor::collect(v);
        v.split.local.evacuate_next = survived(copied, used);
        if v.split.local.needs_major() {
            r = v.ensure_copy_reserve();
            if r.is_ok() {
                major::collect(v, false);
                if v.split.local.needs_major() {
                    r = v.ensure_copy_reserve();
                    if r.is_ok() {
                        major::collect(v, true);
                    }
                }
            }
        }
    }
    if v.shared.config.verify {
        verify::local_heap(v, "a local collection");
    }
    r
}

fn over_limit(v: &Vproc, requested: usize) -> Error {
    let heap = &v.shared.heap;
    Error::from(ErrorKind::HeapLimit {
        requested,
        in_use: heap.in_use(),
        limit: heap.limit(),
    })
}

/// The nursery cannot hold `bytes` more: collect. Returns the address of
/// `bytes` fresh nursery bytes, or `None` when the object must be allocated
/// in the global heap because it exceeds the nursery.
pub(crate) fn alloc_slow(v: &mut Vproc, bytes: usize) -> Result<Option<usize>> {
    let mut global_done = false;
    loop {
        // The limit may have been zeroed only to deliver a request (a thief
        // wants a task's environment): answer it, and collect only if the
        // nursery is really exhausted.
        crate::sched::serve_mail(v);
        if v.shared.coord.pending() {
            if let Err(e) = join(v) {
                v.install_limit();
                return Err(e);
            }
            global_done = true;
        } else {
            if v.alloc_ptr() + bytes > v.split.local.end {
                if let Err(e) = local_collections(v) {
                    v.install_limit();
                    return Err(e);
                }
            }
            let heap = &v.shared.heap;
            if heap.in_use() > heap.limit() {
                if global_done {
                    v.install_limit();
                    return Err(over_limit(v, bytes));
                }
                collect_global_full(v)?;
                global_done = true;
                continue;
            }
            // At most one global collection per slow path: right after one,
            // the heap may still be over the trigger (it is retuned above
            // the heap in use, but other vprocs allocate meanwhile).
            if heap.over_trigger() && !global_done {
                collect_global(v)?;
                global_done = true;
                continue;
            }
        }
        if v.install_limit() {
            continue; // a collection became pending meanwhile: join it
        }
        if let Some(p) = v.bump(bytes) {
            return Ok(Some(p));
        }
        if bytes > v.split.local.nursery_size() {
            return Ok(None);
        }
    }
}

/// Allocates `bytes` in the global heap (current chunk, or the large-object
/// space) for the mutator, collecting first if the heap is over its trigger.
/// The memory is uninitialised; the caller writes the object before its
/// next safepoint.
pub(crate) fn alloc_global(v: &mut Vproc, bytes: usize) -> Result<usize> {
    if v.shared.coord.pending() {
        let joined = join(v);
        v.install_limit();
        joined?;
    }
    if v.shared.heap.over_trigger() {
        collect_global(v)?;
    }
    let large = bytes >= v.shared.config.large_object_size;
    let what = if large {
        "a large object"
    } else {
        "a global-heap chunk"
    };
    let mut attempt = 0;
    loop {
        let shared = v.shared.clone();
        let got = if large {
            shared.heap.alloc_large(bytes, v.node, false)
        } else if let Some(p) = v.split.cursor.try_bump(bytes) {
            Ok(p)
        } else {
            v.split
                .cursor
                .refill(&shared.heap, v.node, false)
                .map(|_| v.split.cursor.try_bump(bytes).expect("fits a fresh chunk"))
        };
        match got {
            Ok(p) => {
                v.stats.bytes_allocated += bytes as u64;
                v.stats.bytes_allocated_global += bytes as u64;
                return Ok(p);
            }
            // A full collection frees chunks (into the pools, where a
            // refused map is not needed) and the heap room the limit wants.
            Err(_) if attempt == 0 => collect_global_full(v)?,
            Err(r) => return Err(r.error(bytes, what)),
        }
        attempt += 1;
    }
}

/// Promotes the values in `words` (in place). No collection runs here, so
/// the caller may hold unrooted words across it; if the global heap is now
/// over its trigger a collection is requested for the next safepoint.
/// `Err` (nothing promoted, `words` unchanged) when the system refuses the
/// copy reserve.
pub(crate) fn promote_words(v: &mut Vproc, words: &mut [u64]) -> Result<()> {
    if words.iter().any(|&w| promote::is_local(v, w)) {
        v.ensure_copy_reserve()?;
        promote::promote(v, words);
        if v.shared.heap.over_trigger() {
            v.shared.coord.request(v.id);
        }
    }
    Ok(())
}

/// The generational part of the write barrier: a store into an object
/// that young global collections leave in place (a tenured chunk, a large
/// object) is remembered, since it may now point to younger data.
#[inline]
pub(crate) fn remember_store(v: &mut Vproc, o: crate::object::Obj, i: usize) {
    if v.shared.config.young_global_gc {
        let space = &v.shared.heap.space;
        let Some(c) = space.chunk_of(o.addr()) else {
            return;
        };
        let info = space.info(c);
        let kind = info.kind();
        if kind == ChunkKind::LargeHead
            || (kind == ChunkKind::Global
                && info.age.load(std::sync::atomic::Ordering::Relaxed) == TENURED)
        {
            v.split.remembered.push(o.field_ptr(i) as usize);
        }
    }
}

/// Safepoint for loops that do not allocate.
pub(crate) fn poll(v: &mut Vproc) {
    crate::sched::serve_mail(v);
    if v.shared.coord.pending() {
        // A poll has no error to return: a collection this vproc asked for
        // and that was called off is asked for again by its next slow path.
        let _ = join(v);
        v.install_limit();
    }
}

/// Forces a minor collection (and whatever it triggers). A major collection
/// whose copy reserve the system refuses is skipped; the next allocation
/// that needs it reports the error.
pub(crate) fn collect_minor(v: &mut Vproc) {
    poll(v);
    let _ = local_collections(v);
    v.install_limit();
}

/// Forces a minor and a major collection; `Err` (after the minor one) when
/// the system refuses the major one's copy reserve.
pub(crate) fn collect_major(v: &mut Vproc) -> Result<()> {
    poll(v);
    minor::collect(v);
    let r = v.ensure_copy_reserve();
    if r.is_ok() {
        major::collect(v, false);
    }
    if v.shared.config.verify {
        verify::local_heap(v, "a major collection");
    }
    v.install_limit();
    r
}
