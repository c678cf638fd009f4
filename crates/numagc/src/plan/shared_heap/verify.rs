//! The shared plan's heap verifier (setting `verify`): run after every
//! minor collection and at the end of every major cycle; a violation
//! panics with what was found (inside a collection, that aborts the
//! process: `gc::AbortOnUnwind`).
//!
//! * After a minor collection (every vproc stopped, nothing moved since):
//!   every object in a pool page or the large-object space has a valid
//!   header that fits its slot, and every value field is an immediate or
//!   points to an object (a slot that is not `FREE`, or a large object);
//!   no value anywhere — fields, root stacks, global roots — points into a
//!   minor heap (they were all emptied). Each vproc checks its own roots
//!   and its pages' free-slot counts.
//! * Before a minor collection: every major-heap field pointing into a
//!   minor heap is in a remembered set (the barrier missed nothing).
//! * At the end of a cycle, when marking is complete: every object
//!   reachable from the roots is marked (§3.2's invariant that the
//!   snapshot is preserved), checked by a traversal of its own from each
//!   vproc's roots and the global roots.

use super::mark::{colour_cell, place, Place};
use super::pages::{Page, FREE};
use crate::heap::space::ChunkKind;
use crate::object::for_each_value_field;
use crate::object::header::{Header, ID_EPHEMERON};
use crate::object::{is_pointer, Obj};
use crate::vproc::{Shared, Vproc};
use crate::weak::{CLEARED, EPH_DATA, EPH_KEY};
use std::collections::HashSet;
use std::sync::atomic::Ordering;

fn fail(when: &str, what: String) -> ! {
    panic!("heap verifier: after {when}: {what}")
}

/// Whether `w` is a value that may be stored anywhere after a minor
/// collection: an immediate, a pointer outside the heap (none are made),
/// or a pointer to a major-heap object.
fn check_value(shared: &Shared, w: u64, when: &str, whose: &dyn Fn() -> String) {
    let gc = &shared.shared_heap;
    let at = place(&shared.heap, gc.page_bytes, w);
    if gc.is_minor(w) != (at == Place::Minor) {
        fail(
            when,
            format!(
                "{}: the minor heaps' range and the chunk table disagree on {w:#x}",
                whose()
            ),
        );
    }
    match at {
        Place::Outside | Place::Large(_) => {}
        Place::Pool(p) => match p.index_of(w as usize) {
            Some(i) if p.colour(i).load(Ordering::Relaxed) != FREE => {}
            Some(_) => fail(when, format!("{} points to a free slot {w:#x}", whose())),
            None => fail(when, format!("{} points inside a slot, {w:#x}", whose())),
        },
        Place::Minor => fail(
            when,
            format!("{} points into a minor heap, {w:#x}", whose()),
        ),
        Place::Elsewhere => fail(
            when,
            format!("{} points outside every object, {w:#x}", whose()),
        ),
    }
}

fn check_object(shared: &Shared, a: usize, room: usize, when: &str) {
    // SAFETY: `a` is a slot that is not FREE, or a large object: it holds
    // an initialised object (pages' invariant), and everyone is stopped.
    let o = unsafe { Obj::at(a) };
    let Some(h) = Header::decode(o.header_word()) else {
        fail(
            when,
            format!("object {a:#x} has a forwarding pointer for a header"),
        )
    };
    if h.size_bytes() > room {
        fail(
            when,
            format!(
                "object {a:#x} of {} bytes in a slot of {room}",
                h.size_bytes()
            ),
        );
    }
    for_each_value_field(h, &shared.descs, |i| {
        let w = o.field_cell(i).load(Ordering::Relaxed);
        check_value(shared, w, when, &|| format!("field {i} of {a:#x}"));
    });
    if h.id() == ID_EPHEMERON {
        // Key and data are not traced, but hold values or are cleared.
        for i in [EPH_KEY, EPH_DATA] {
            let w = o.field(i);
            if w != CLEARED {
                check_value(shared, w, when, &|| {
                    format!("field {i} of ephemeron {a:#x}")
                });
            }
        }
    }
}

/// Every object of the major heap and the global roots (the leader, with
/// everyone stopped after a minor collection).
pub(crate) fn major_heap(shared: &Shared, when: &str) {
    let heap = &shared.heap;
    let gc = &shared.shared_heap;
    // Garbage not swept yet may point to slots freed before it.
    let garbage = gc.colours.roles().garbage;
    let pb = gc.page_bytes;
    for_each_major_object(shared, |a, room| {
        if Page::of(a, pb).colour_of(a).load(Ordering::Relaxed) != garbage {
            check_object(shared, a, room, when);
        }
    });
    heap.for_each_large(|a| check_object(shared, a, usize::MAX, when));
    shared
        .global_roots
        .for_each(|w| check_value(shared, w, when, &|| "a global root".into()));
}

/// Before a minor collection (the leader, everyone stopped, nothing moved
/// yet, the remembered sets joined): every field of the major heap that
/// points into a minor heap is in a remembered set — the write barrier
/// and `init_global` missed nothing (§4.3.4).
pub(crate) fn remembered_sets_complete(shared: &Shared, remembered: &[usize], when: &str) {
    let gc = &shared.shared_heap;
    let set: HashSet<usize> = remembered.iter().copied().collect();
    let check = |a: usize| {
        // SAFETY: a slot that is not FREE, or a large object (as in
        // `check_object`); everyone is stopped.
        let o = unsafe { Obj::at(a) };
        let Some(h) = o.header() else { return };
        for_each_value_field(h, &shared.descs, |i| {
            let w = o.field_cell(i).load(Ordering::Relaxed);
            if place(&shared.heap, gc.page_bytes, w) == Place::Minor
                && !set.contains(&(o.field_ptr(i) as usize))
            {
                fail(
                    when,
                    format!("field {i} of {a:#x} points into a minor heap ({w:#x}) and is not remembered"),
                );
            }
        });
    };
    for_each_major_object(shared, |a, _| check(a));
    shared.heap.for_each_large(check);
}

/// Calls `f(address, slot bytes)` for every object in a pool page.
fn for_each_major_object(shared: &Shared, mut f: impl FnMut(usize, usize)) {
    let heap = &shared.heap;
    let gc = &shared.shared_heap;
    let space = &heap.space;
    for c in 0..space.num_chunks() {
        if space.info(c).kind() != ChunkKind::Pool {
            continue;
        }
        let start = space.chunk_start(c);
        for base in (start..start + heap.chunk_size()).step_by(gc.page_bytes) {
            let p = Page::of(base, gc.page_bytes);
            for i in 0..p.slots() {
                if p.colour(i).load(Ordering::Relaxed) != FREE {
                    f(p.slot(i), p.slot_bytes());
                }
            }
        }
    }
}

/// This vproc's root stack (after a minor collection).
pub(crate) fn roots(v: &Vproc, when: &str) {
    let roots = v.roots.copy_range(0, v.roots.len());
    for (i, &w) in roots.iter().enumerate() {
        check_value(&v.shared, w, when, &|| {
            format!("root {i} of vproc {}", v.id)
        });
    }
}

/// Everything reachable from this vproc's roots (and, on vproc 0, the
/// global roots) is marked (end of a cycle, everyone stopped).
pub(crate) fn marked_from_roots(v: &Vproc, when: &str) {
    let shared = &*v.shared;
    let gc = &shared.shared_heap;
    let marked = gc.colours.roles().marked;
    // SAFETY: as in `roots`.
    let mut todo: Vec<u64> = v.roots.copy_range(0, v.roots.len());
    if v.id == 0 {
        shared.global_roots.for_each(|w| todo.push(w));
    }
    let mut seen = HashSet::new();
    while let Some(w) = todo.pop() {
        if !is_pointer(w) || !seen.insert(w) {
            continue;
        }
        let Some(cell) = colour_cell(&shared.heap, gc.page_bytes, w) else {
            continue;
        };
        let c = cell.load(Ordering::Relaxed);
        if c != marked {
            fail(
                when,
                format!("object {w:#x}, reachable from vproc {}, is not marked (colour {c}, marked is {marked})", v.id),
            );
        }
        // SAFETY: a reachable major-heap object.
        let o = unsafe { Obj::at(w as usize) };
        let h = o.header().expect("a major-heap object has a header");
        for_each_value_field(h, &shared.descs, |i| {
            todo.push(o.field_cell(i).load(Ordering::Relaxed))
        });
    }
}
