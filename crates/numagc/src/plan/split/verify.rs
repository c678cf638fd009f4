//! The heap verifier.
//!
//! Checks, after a collection, that the heap is well formed:
//! * every object has a header whose ID is known and whose length fits;
//! * every pointer targets the start of a live object;
//! * §2.3 invariant 1: a vproc's roots and local objects point only into its
//!   own local heap or the global heap;
//! * §2.3 invariant 2: global objects never point into a local heap;
//! * no object points into a chunk that a global collection evacuated
//!   (from-space chunks are free afterwards, so this is "no pointer into a
//!   free chunk");
//! * ephemerons (`crate::weak`): their key and data, which no collector
//!   traces as fields, are cleared or valid values under the same rules;
//!   every listed ephemeron is an ephemeron of the heap its list says, and
//!   finalised and pending values are valid objects.
//!
//! Local heaps are checked by a walk from the roots (promoted objects leave
//! forwarding headers behind, so a local heap cannot be walked linearly);
//! after a global collection the to-space chunks are walked object by object.
//! A violation is a collector bug: the verifier prints a report and aborts.

use super::copy::header_size;
use crate::heap::space::ChunkKind;
use crate::object::header::{Header, FIRST_MIXED_ID, ID_ARRAY, ID_EPHEMERON, ID_RAW, ID_VECTOR};
use crate::object::{for_each_value_field, is_pointer, Obj};
use crate::vproc::{Shared, Vproc};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;

fn check_header(shared: &Shared, hw: u64) -> Result<Header, String> {
    let h = Header::decode(hw).ok_or_else(|| format!("header word {hw:#x} has bit 0 clear"))?;
    match h.id() {
        ID_RAW | ID_VECTOR | ID_ARRAY => Ok(h),
        id if id >= FIRST_MIXED_ID => {
            let d = shared
                .descs
                .get(id)
                .ok_or_else(|| format!("unknown descriptor id {id}"))?;
            if d.size() != h.len() {
                return Err(format!(
                    "descriptor {} has {} words, header says {}",
                    d.name(),
                    d.size(),
                    h.len()
                ));
            }
            Ok(h)
        }
        id => Err(format!("reserved id {id}")),
    }
}

/// Checks a pointer into the global heap; `starts` (when given) holds the
/// object starts of every global chunk.
fn check_global_target(
    shared: &Shared,
    a: usize,
    starts: Option<&HashMap<usize, Vec<u64>>>,
) -> Result<(), String> {
    let space = &shared.heap.space;
    let Some(cid) = space.chunk_of(a) else {
        return Err(format!("pointer {a:#x} outside the heap"));
    };
    match space.info(cid).kind() {
        ChunkKind::Global => {
            let start = space.chunk_start(cid);
            if let Some(starts) = starts {
                let bits = starts
                    .get(&cid)
                    .ok_or_else(|| format!("pointer {a:#x} into an unlisted chunk"))?;
                let i = (a - start) / 8;
                if bits[i / 64] & (1 << (i % 64)) == 0 {
                    return Err(format!("pointer {a:#x} is not an object start"));
                }
            }
            // SAFETY: `a` lies in a global chunk in use.
            let h = check_header(shared, unsafe { Obj::at(a) }.header_word())?;
            if a + h.size_bytes() > start + space.chunk_size() {
                return Err(format!("object at {a:#x} runs past its chunk"));
            }
            Ok(())
        }
        ChunkKind::LargeHead if a == space.chunk_start(cid) => {
            // SAFETY: the first word of a large-object run is its header.
            check_header(shared, unsafe { Obj::at(a) }.header_word()).map(|_| ())
        }
        ChunkKind::FromSpace | ChunkKind::Free => {
            Err(format!("pointer {a:#x} into a free or from-space chunk"))
        }
        ChunkKind::Local => Err(format!("pointer {a:#x} into a local heap")),
        k => Err(format!("pointer {a:#x} into a {k:?} chunk")),
    }
}

/// The key and data of ephemeron `o` that are not cleared and not
/// immediates: what they must point to is checked like a value field.
fn ephemeron_fields(o: Obj) -> impl Iterator<Item = u64> {
    use crate::weak::{CLEARED, EPH_DATA, EPH_KEY};
    [o.field(EPH_KEY), o.field(EPH_DATA)]
        .into_iter()
        .filter(|&w| w != CLEARED && is_pointer(w))
}

/// Checks that `e`, listed as a shared ephemeron, is one in the global heap.
fn check_ephemeron_start(
    shared: &Shared,
    e: u64,
    starts: Option<&HashMap<usize, Vec<u64>>>,
) -> Result<(), String> {
    check_global_target(shared, e as usize, starts)?;
    // SAFETY: `e` is an object start in the global heap (checked above).
    match unsafe { Obj::at(e as usize) }.header() {
        Some(h) if h.id() == ID_EPHEMERON => Ok(()),
        _ => Err(format!("{e:#x} is not an ephemeron")),
    }
}

/// A violation means the heap is corrupt: report and abort, since carrying
/// on (or unwinding out of a collection other vprocs wait in) would hide it.
fn fail(what: &str, errors: &[String]) -> ! {
    let shown: Vec<&String> = errors.iter().take(10).collect();
    eprintln!(
        "numagc: heap verification failed after {what}: {} violation(s): {shown:#?}",
        errors.len()
    );
    std::process::abort();
}

/// Verifies vproc `v`'s roots and the local objects reachable from them;
/// aborts with a report on a violation.
pub(crate) fn local_heap(v: &mut Vproc, what: &str) {
    if let Err(errors) = check_local_heap(v) {
        fail(what, &errors);
    }
}

/// Checks vproc `v`'s roots and the local objects reachable from them.
/// Returns the number of local objects checked, or the violations.
pub(crate) fn check_local_heap(v: &mut Vproc) -> Result<usize, Vec<String>> {
    let shared = v.shared.clone();
    let lh = v.split.local.clone();
    let alloc_ptr = v.alloc_ptr();
    let mut errors = Vec::new();
    let mut seen = HashSet::new();
    let mut stack: Vec<u64> = v.roots.as_mut_slice().to_vec();
    if !shared.weak.is_empty() {
        let w = shared.weak.lock(v.id);
        for &e in &w.eph_private {
            // SAFETY: a listed private ephemeron is in the local heap.
            match (lh.contains(e as usize), unsafe { Obj::at(e as usize) }.header()) {
                (true, Some(h)) if h.id() == ID_EPHEMERON => stack.push(e),
                _ => errors.push(format!("vproc {}: listed private ephemeron {e:#x} is not an ephemeron of its local heap", v.id)),
            }
        }
        for &e in &w.eph_shared {
            if let Err(m) = check_ephemeron_start(&shared, e, None) {
                errors.push(format!("vproc {}: listed shared ephemeron: {m}", v.id));
            }
        }
        stack.extend(w.fin_private.iter().map(|f| f.value));
        stack.extend(w.fin_shared.iter().map(|f| f.value));
        stack.extend(w.pending.iter().map(|f| f.value));
    }
    let live =
        |a: usize| (a >= lh.base && a < lh.old_top) || (a >= lh.nursery_start && a < alloc_ptr);
    while let Some(w) = stack.pop() {
        if !is_pointer(w) {
            continue;
        }
        let a = w as usize;
        if !lh.contains(a) {
            let space = &shared.heap.space;
            if space.kind_of(a) == ChunkKind::Local {
                errors.push(format!(
                    "vproc {}: pointer {a:#x} into another vproc's local heap",
                    v.id
                ));
            } else if let Err(e) = check_global_target(&shared, a, None) {
                errors.push(e);
            }
            continue;
        }
        if !live(a) {
            errors.push(format!(
                "vproc {}: pointer {a:#x} into the free part of the local heap",
                v.id
            ));
            continue;
        }
        if !seen.insert(a) {
            continue;
        }
        // SAFETY: `a` is in the occupied part of the local heap.
        let o = unsafe { Obj::at(a) };
        let hw = o.header_word();
        if hw & 1 == 0 {
            // promoted: the forwarding pointer must be global
            stack.push(hw);
            if lh.contains(hw as usize) {
                errors.push(format!(
                    "local object {a:#x} forwarded inside the local heap"
                ));
            }
            continue;
        }
        match check_header(&shared, hw) {
            Ok(h) => {
                for_each_value_field(h, &shared.descs, |i| stack.push(o.field(i)));
                if h.id() == ID_EPHEMERON {
                    stack.extend(ephemeron_fields(o));
                }
            }
            Err(e) => errors.push(format!("local object {a:#x}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(seen.len())
    } else {
        Err(errors)
    }
}

/// Verifies the whole global heap after a global collection: `to_space`
/// lists every global chunk in use. Runs while all vprocs are stopped;
/// aborts with a report on a violation.
pub(crate) fn global_heap(shared: &Shared, to_space: &[usize]) {
    if let Err(errors) = check_global_heap(shared, to_space) {
        fail("global collection", &errors);
    }
}

/// Checks every object of the global chunks `to_space` and of the
/// large-object space, and the global roots. Returns the number of objects
/// checked, or the violations.
pub(crate) fn check_global_heap(shared: &Shared, to_space: &[usize]) -> Result<usize, Vec<String>> {
    let space = &shared.heap.space;
    let words = space.chunk_size() / 8;
    let mut errors = Vec::new();
    let mut starts: HashMap<usize, Vec<u64>> = HashMap::new();
    for &c in to_space {
        if space.info(c).kind() != ChunkKind::Global {
            errors.push(format!("to-space chunk {c} is {:?}", space.info(c).kind()));
            continue;
        }
        let mut bits = vec![0u64; words.div_ceil(64)];
        let (mut s, top) = (
            space.chunk_start(c),
            space.info(c).top.load(Ordering::Acquire),
        );
        while s < top {
            let i = (s - space.chunk_start(c)) / 8;
            bits[i / 64] |= 1 << (i % 64);
            // SAFETY: to-space chunks hold objects one after another up to top.
            match check_header(shared, unsafe { Obj::at(s) }.header_word()) {
                Ok(_) => s += header_size(s),
                Err(e) => {
                    errors.push(format!("chunk {c} at {s:#x}: {e}"));
                    break;
                }
            }
        }
        starts.insert(c, bits);
    }
    let mut objects = Vec::new();
    for &c in to_space {
        let (mut s, top) = (
            space.chunk_start(c),
            space.info(c).top.load(Ordering::Acquire),
        );
        while s < top && errors.is_empty() {
            objects.push(s);
            s += header_size(s);
        }
    }
    shared.heap.for_each_large(|a| objects.push(a));
    let checked = objects.len();
    for a in objects {
        // SAFETY: every address listed above is an object start.
        let o = unsafe { Obj::at(a) };
        let Ok(h) = check_header(shared, o.header_word()) else {
            errors.push(format!("large object {a:#x} has a bad header"));
            continue;
        };
        for_each_value_field(h, &shared.descs, |i| {
            let w = o.field(i);
            if is_pointer(w) {
                if let Err(e) = check_global_target(shared, w as usize, Some(&starts)) {
                    errors.push(format!("global object {a:#x} field {i}: {e}"));
                }
            }
        });
        if h.id() == ID_EPHEMERON {
            for w in ephemeron_fields(o) {
                if let Err(e) = check_global_target(shared, w as usize, Some(&starts)) {
                    errors.push(format!("global ephemeron {a:#x}: {e}"));
                }
            }
        }
    }
    if !shared.weak.is_empty() {
        for (v, w) in shared.weak.lock_all().iter().enumerate() {
            for &e in &w.eph_shared {
                if let Err(m) = check_ephemeron_start(shared, e, Some(&starts)) {
                    errors.push(format!("vproc {v}: listed shared ephemeron: {m}"));
                }
            }
            let values = w.fin_shared.iter().chain(w.pending.iter()).map(|f| f.value);
            for x in values.filter(|&x| is_pointer(x)) {
                if space.kind_of(x as usize) == ChunkKind::Local {
                    continue; // a local pending value: checked with its local heap
                }
                if let Err(m) = check_global_target(shared, x as usize, Some(&starts)) {
                    errors.push(format!("vproc {v}: finalised value: {m}"));
                }
            }
        }
    }
    shared.global_roots.for_each(|w| {
        if is_pointer(w) {
            if let Err(e) = check_global_target(shared, w as usize, Some(&starts)) {
                errors.push(format!("global root: {e}"));
            }
        }
    });
    if errors.is_empty() {
        Ok(checked)
    } else {
        Err(errors)
    }
}

/// The verifier is the oracle of every collector test, so it is tested
/// itself: each test damages a well-formed heap in one way and expects the
/// matching report.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::object::header::ID_VECTOR;
    use crate::{Handle, Runtime};

    fn runtime(vprocs: usize) -> Runtime {
        crate::runtime::small_test_runtime_on(crate::PlanKind::SplitHeap, vprocs, false, 1 << 20)
    }

    fn object(s: &crate::Scope<'_>, h: Handle<'_>) -> Obj {
        // SAFETY: `h` holds a freshly allocated object of this scope.
        unsafe { Obj::at(s.word(h) as usize) }
    }

    fn global_chunks(v: &mut Vproc) -> Vec<usize> {
        v.split.cursor.publish(&v.shared.heap);
        v.split
            .cursor
            .owned
            .iter()
            .copied()
            .chain(v.split.cursor.chunk)
            .collect()
    }

    #[test]
    fn well_formed_heaps_pass() {
        let rt = runtime(1);
        let checked = rt
            .run_on(0, |s| {
                let mut list = s.nil();
                for i in 0..500 {
                    list = s.alloc_vector(&[Handle::int(i), list]).unwrap();
                }
                let g = s.promote(list).unwrap();
                let local = s.alloc_vector(&[g, Handle::int(7)]).unwrap();
                let _ = local;
                let v = s.vproc_mut();
                let n_local = check_local_heap(v).unwrap();
                let chunks = global_chunks(v);
                let n_global = check_global_heap(&v.shared.clone(), &chunks).unwrap();
                (n_local, n_global)
            })
            .unwrap();
        assert!(checked.0 >= 1 && checked.1 >= 500, "{checked:?}");
    }

    #[test]
    fn pointer_into_free_local_space_is_reported() {
        let rt = runtime(1);
        let errors = rt
            .run_on(0, |s| {
                let inner = s.alloc_vector(&[Handle::int(3)]).unwrap();
                let outer = s.alloc_vector(&[inner]).unwrap();
                let free = s.vproc_mut().split.local.end - 64;
                object(s, outer).set_field(0, free as u64);
                check_local_heap(s.vproc_mut()).unwrap_err()
            })
            .unwrap();
        assert!(
            errors
                .iter()
                .any(|e| e.contains("free part of the local heap")),
            "{errors:?}"
        );
    }

    #[test]
    fn pointer_into_another_vprocs_local_heap_is_reported() {
        let rt = runtime(2);
        let errors = rt
            .run_on(0, |s| {
                let outer = s.alloc_vector(&[Handle::int(1)]).unwrap();
                let shared = s.vproc_mut().shared.clone();
                let space = &shared.heap.space;
                let other = (0..)
                    .map(|c| space.info(c))
                    .position(|i| {
                        i.kind() == ChunkKind::Local && i.owner.load(Ordering::Relaxed) == 1
                    })
                    .unwrap();
                object(s, outer).set_field(0, space.chunk_start(other) as u64);
                check_local_heap(s.vproc_mut()).unwrap_err()
            })
            .unwrap();
        assert!(
            errors
                .iter()
                .any(|e| e.contains("another vproc's local heap")),
            "{errors:?}"
        );
    }

    #[test]
    fn global_object_pointing_into_a_local_heap_is_reported() {
        let rt = runtime(1);
        let errors = rt
            .run_on(0, |s| {
                let v = s.alloc_vector(&[Handle::int(1), Handle::int(2)]).unwrap();
                let g = s.promote(v).unwrap();
                let local = s.alloc_vector(&[Handle::int(3)]).unwrap();
                // Bypass the write barrier: a global object now points into
                // the local heap (invariant 2 of §2.3 broken).
                let w = s.word(local);
                object(s, g).set_field(0, w);
                let vp = s.vproc_mut();
                let chunks = global_chunks(vp);
                check_global_heap(&vp.shared.clone(), &chunks).unwrap_err()
            })
            .unwrap();
        assert!(
            errors.iter().any(|e| e.contains("into a local heap")),
            "{errors:?}"
        );
    }

    #[test]
    fn pointer_into_the_middle_of_a_global_object_is_reported() {
        let rt = runtime(1);
        let errors = rt
            .run_on(0, |s| {
                let a = s.alloc_vector(&[Handle::int(1), Handle::int(2)]).unwrap();
                let b = s.alloc_vector(&[a]).unwrap();
                let b = s.promote(b).unwrap();
                let a = s.field(b, 0).unwrap();
                let inside = s.word(a) + 8;
                object(s, b).set_field(0, inside);
                let vp = s.vproc_mut();
                let chunks = global_chunks(vp);
                check_global_heap(&vp.shared.clone(), &chunks).unwrap_err()
            })
            .unwrap();
        assert!(
            errors.iter().any(|e| e.contains("not an object start")),
            "{errors:?}"
        );
    }

    #[test]
    fn unknown_descriptor_in_a_header_is_reported() {
        let rt = runtime(1);
        let errors = rt
            .run_on(0, |s| {
                let v = s.alloc_vector(&[Handle::int(1), Handle::int(2)]).unwrap();
                let o = object(s, v);
                o.init_header(Header::new(777, 2));
                let r = check_local_heap(s.vproc_mut());
                o.init_header(Header::new(ID_VECTOR, 2));
                r.unwrap_err()
            })
            .unwrap();
        assert!(
            errors
                .iter()
                .any(|e| e.contains("unknown descriptor id 777")),
            "{errors:?}"
        );
    }
}
