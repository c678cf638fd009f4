//! Tests of the split plan's global collection (`global`): tenuring of
//! young global collections, remembered stores, large objects, full
//! collections.

use super::*;
use crate::plan::split;
use crate::{Handle, Runtime};

fn runtime(vprocs: usize) -> Runtime {
    crate::runtime::small_test_runtime_on(crate::PlanKind::SplitHeap, vprocs, true, 8 << 20)
}

fn age(s: &mut crate::Scope<'_>, h: Handle<'_>) -> u8 {
    let w = s.word(h);
    age_of(s.vproc_mut(), w)
}

fn age_of(v: &Vproc, w: u64) -> u8 {
    let space = &v.shared.heap.space;
    space
        .info(space.chunk_of(w as usize).unwrap())
        .age
        .load(Ordering::Relaxed)
}

/// A young collection, as the heap's trigger would start it.
fn young(s: &mut crate::Scope<'_>) {
    let v = s.vproc_mut();
    let full = v.shared.split.full_collections();
    split::collect_global(v).expect("the collection completes");
    assert_eq!(
        v.shared.split.full_collections(),
        full,
        "the collection was young"
    );
}

#[test]
fn data_is_tenured_after_two_collections_and_then_stays_in_place() {
    let rt = runtime(1);
    rt.run_on(0, |s| {
        let v = s.alloc_vector(&[Handle::int(1), Handle::int(2)]).unwrap();
        let g = s.promote(v).unwrap();
        assert_eq!(age(s, g), 0);
        young(s);
        assert_eq!(age(s, g), 1, "a survivor");
        young(s);
        let tenured_at = s.word(g);
        assert_eq!(age_of(s.vproc_mut(), tenured_at), TENURED);
        young(s);
        young(s);
        assert_eq!(
            s.word(g),
            tenured_at,
            "young collections leave tenured data in place"
        );
        let v = s.view(g);
        assert_eq!(
            (v.field(0).as_int(), v.field(1).as_int()),
            (Some(1), Some(2))
        );
        s.collect_global().unwrap(); // full: everything moves
        assert_ne!(s.word(g), tenured_at);
    })
    .unwrap();
    assert!(rt.full_global_collections() >= 1);
}

#[test]
fn a_store_into_tenured_data_is_a_root_of_young_collections() {
    let rt = runtime(2);
    rt.run_on(0, |s| {
        let arr = s.alloc_array(4, Handle::NIL).unwrap();
        young(s);
        young(s);
        assert_eq!(age(s, arr), TENURED);
        // A young value stored into the tenured array: the barrier
        // promotes it (age 0) and remembers the slot.
        let v = s.alloc_vector(&[Handle::int(7), Handle::int(8)]).unwrap();
        s.set(arr, 2, v).unwrap();
        assert_eq!(s.vproc_mut().split.remembered.len(), 1);
        // Without the remembered slot the array would now point into
        // evacuated from-space, and the verifier would abort.
        young(s);
        young(s);
        let e = s.field(arr, 2).unwrap();
        let w = s.word(e);
        assert_eq!(
            age_of(s.vproc_mut(), w),
            TENURED,
            "followed the array into tenure"
        );
        let ev = s.view(e);
        assert_eq!(
            (ev.field(0).as_int(), ev.field(1).as_int()),
            (Some(7), Some(8))
        );
    })
    .unwrap();
}

#[test]
fn a_mutated_survivor_is_tenured_with_its_young_pointer_remembered() {
    let rt = runtime(1);
    rt.run_on(0, |s| {
        let arr = s.alloc_array(2, Handle::NIL).unwrap();
        young(s);
        assert_eq!(age(s, arr), 1, "the array is a survivor");
        // A store into a survivor is not remembered: the next young
        // collection scans all survivors anyway...
        let v = s.alloc_vector(&[Handle::int(5)]).unwrap();
        s.set(arr, 0, v).unwrap();
        assert!(s.vproc_mut().split.remembered.is_empty());
        // ...which tenures the array while its element becomes a
        // survivor: that tenured slot must be remembered.
        young(s);
        assert_eq!(age(s, arr), TENURED);
        let e = s.field(arr, 0).unwrap();
        assert_eq!(age(s, e), 1);
        assert_eq!(s.vproc_mut().split.remembered.len(), 1);
        young(s);
        let e = s.field(arr, 0).unwrap();
        assert_eq!(age(s, e), TENURED);
        assert_eq!(s.view(e).field(0).as_int(), Some(5));
        assert!(
            s.vproc_mut().split.remembered.is_empty(),
            "nothing young is left to remember"
        );
    })
    .unwrap();
}

#[test]
fn large_objects_are_roots_of_young_collections_and_swept_by_full_ones() {
    let rt = runtime(1);
    rt.run_on(0, |s| {
        let elems: Vec<Handle<'_>> = (0..5000)
            .map(|i| s.alloc_vector(&[Handle::int(i)]).unwrap())
            .collect();
        let big = s.alloc_vector(&elems).unwrap(); // large: its elements are promoted (age 0)
        young(s);
        young(s);
        let b = s.view(big);
        assert_eq!(b.field(4999).field(0).as_int(), Some(4999));
        let large = s.vproc_mut().shared.heap.large_bytes();
        assert!(large > 0);
        drop(elems);
    })
    .unwrap();
    // The job's handles are gone: a full collection frees the large object.
    rt.run_on(0, |s| s.collect_global().unwrap()).unwrap();
    assert_eq!(rt.stats().heap.large_object_bytes, 0);
}

#[test]
fn a_freed_large_run_is_reused_warm_by_the_next_of_its_length_and_trimmed_by_compaction() {
    let rt = runtime(1);
    // A large raw object (1 MiB of words), dropped and swept; the next of
    // its length takes the same run, with its own contents.
    let words = 1 << 17;
    let first = rt
        .run_on(0, move |s| {
            let h = s.alloc_raw_with(words, |b| b.fill(7)).unwrap();
            s.view(h).identity()
        })
        .unwrap();
    rt.run_on(0, |s| s.collect_global().unwrap()).unwrap();
    assert_eq!(rt.stats().heap.large_object_bytes, 0);
    let (second, ok) = rt
        .run_on(0, move |s| {
            let h = s
                .alloc_raw_with(words, |b| {
                    for (i, w) in b.iter_mut().enumerate() {
                        *w = i as u64;
                    }
                })
                .unwrap();
            let v = s.view(h);
            let ok = v
                .raw_words()
                .unwrap()
                .iter()
                .enumerate()
                .all(|(i, &w)| w == i as u64);
            (v.identity(), ok)
        })
        .unwrap();
    assert_eq!(second, first, "the warm run is reused");
    assert!(ok, "the new object has its own words");
    // Swept again, it is kept warm until a trim gives it back.
    rt.run_on(0, |s| s.collect_global().unwrap()).unwrap();
    let shared = rt.run_on(0, |s| s.vproc_mut().shared.clone()).unwrap();
    let chunks = (words * 8 + 8).div_ceil(shared.heap.chunk_size());
    assert_eq!(shared.heap.trim_warm_large(), chunks);
    assert_eq!(shared.heap.trim_warm_large(), 0);
}

#[test]
fn every_vproc_records_what_it_copied_in_each_global_collection() {
    let rt = runtime(2);
    rt.run_on(0, |s| {
        let keep: Vec<Handle<'_>> = (0..2000)
            .map(|i| s.alloc_vector(&[Handle::int(i)]).unwrap())
            .collect();
        let list = s.alloc_vector(&keep).unwrap();
        let list = s.promote(list).unwrap();
        s.collect_global().unwrap();
        s.collect_global().unwrap();
        assert_eq!(s.view(list).field(1999).field(0).as_int(), Some(1999));
    })
    .unwrap();
    // Vproc 1 finishes the last collection's tail (and publishes its
    // figures) before it runs a job.
    rt.run_on(1, |_| ()).unwrap();
    let stats = rt.stats();
    let collections = rt.global_collections() as usize;
    assert!(collections >= 2);
    for v in &stats.vprocs {
        assert_eq!(v.global_copied.len(), collections, "vproc {}", v.vproc);
        assert_eq!(v.global_copied.iter().sum::<u64>(), v.bytes_copied_global);
    }
    assert!(
        stats.total.global_copied.iter().sum::<u64>() > 0,
        "something was copied"
    );
}

#[test]
fn tenured_garbage_is_reclaimed_by_a_full_collection() {
    let rt = runtime(1);
    let before = rt.run_on(0, |s| {
        s.collect_global().unwrap();
        s.vproc_mut().shared.heap.in_use()
    });
    let tenured = rt
        .run_on(0, |s| {
            let mut list = s.nil();
            for i in 0..20_000 {
                list = s.alloc_vector(&[Handle::int(i), list]).unwrap();
            }
            let _g = s.promote(list).unwrap();
            young(s);
            young(s);
            s.vproc_mut().shared.heap.in_use()
        })
        .unwrap();
    let after = rt
        .run_on(0, |s| {
            s.collect_global().unwrap();
            s.vproc_mut().shared.heap.in_use()
        })
        .unwrap();
    assert!(
        tenured > before.unwrap() + (200 << 10),
        "the list was tenured: {tenured}"
    );
    assert!(
        after < tenured / 2,
        "a full collection reclaimed the tenured garbage: {after} of {tenured}"
    );
}

/// A run of copies laid out in `words`: vectors of `n` value fields for
/// `Some(n)`, raw objects of 100 words for `None`. Returns each object's
/// address, and the run's end.
fn run_of(words: &mut Vec<u64>, objects: &[Option<u64>]) -> (Vec<usize>, usize) {
    use crate::object::header::{ID_RAW, ID_VECTOR};
    words.clear();
    let mut offsets = Vec::new();
    for &o in objects {
        offsets.push(words.len());
        let h = match o {
            Some(n) => Header::new(ID_VECTOR, n),
            None => Header::new(ID_RAW, 100),
        };
        words.push(h.bits());
        words.extend(std::iter::repeat_n(1u64, h.len()));
    }
    let base = words.as_ptr() as usize;
    let end = base + words.len() * 8;
    (offsets.into_iter().map(|o| base + o * 8).collect(), end)
}

/// The cut of a run for sharing weighs value fields, not bytes: raw rows
/// after the nodes that name them go with the later half of the nodes.
#[test]
fn a_run_is_shared_by_its_value_fields() {
    let descs = DescriptorTable::new();
    let mut words = Vec::new();
    // Four nodes of 2 value fields, then four raw rows of 100 words: by
    // bytes the middle is among the rows, by value fields after node 2.
    let (at, end) = run_of(
        &mut words,
        &[Some(2), Some(2), Some(2), Some(2), None, None, None, None],
    );
    assert_eq!(split_point(&descs, at[0], end), at[2]);
    // Raw objects only, or one value field: nothing to share.
    let (at, end) = run_of(&mut words, &[None, None, None]);
    assert_eq!(split_point(&descs, at[0], end), end);
    let (at, end) = run_of(&mut words, &[None, Some(1), None]);
    assert_eq!(split_point(&descs, at[0], end), end);
    // One heavy object first: it stays, the rest goes (a run is never
    // passed on whole).
    let (at, end) = run_of(&mut words, &[Some(50), Some(1), Some(1)]);
    assert_eq!(split_point(&descs, at[0], end), at[1]);
    // A heavy object alone: nothing to cut.
    let (at, end) = run_of(&mut words, &[Some(50)]);
    assert_eq!(split_point(&descs, at[0], end), end);
    // Heavy last: the cut is before it.
    let (at, end) = run_of(&mut words, &[Some(1), Some(1), Some(50)]);
    assert_eq!(split_point(&descs, at[0], end), at[2]);
}
