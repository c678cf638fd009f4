//! Objects allocated straight in the global heap while a global collection
//! is pending. Kept in its own test binary: on failure the heap verifier
//! aborts the process, which would hide the results of other tests.

mod common;

use common::*;
use numagc::{Descriptor, Handle, Scope};

/// Objects allocated directly in the global heap (large vectors, arrays,
/// mutable mixed objects) whose initial values are local, allocated while a
/// global collection is pending: the collection runs inside the allocation
/// and moves the local values, so the stored values must be read after it.
#[test]
fn global_allocation_with_pending_collection_keeps_values() {
    // A low trigger that does not grow with the live data, so that one
    // promotion of a few chunks puts the heap over it.
    let config = test_config(1)
        .global_gc_threshold(CHUNK)
        .heap_growth(1.0)
        .build()
        .unwrap();
    let rt = numagc::Runtime::new(config).unwrap();
    let cons = register_cons(&rt);
    let cell = rt
        .register(Descriptor::mixed("ref", 2, &[0]).unwrap().mutable())
        .unwrap();
    rt.run_on(0, move |s| {
        for what in ["vector", "filled", "array", "mutable"] {
            s.collect_global().unwrap();
            s.scope(|s| {
                // Some data that is old by the time the locals below are
                // collected: the major collection inside the global one
                // promotes it and slides the younger locals down.
                let older: Vec<Handle<'_>> = (0..64)
                    .map(|k| s.alloc_vector(&[Handle::int(k); 4]).unwrap())
                    .collect();
                s.collect_minor();
                // Local values, freshly allocated (in the nursery).
                let locals: Vec<Handle<'_>> = (0..8)
                    .map(|k| {
                        s.alloc_vector(&[Handle::int(100 + k), Handle::int(k)])
                            .unwrap()
                    })
                    .collect();
                assert!(locals.iter().all(|&h| s.is_local(h) == split_plan()));
                if what != "mutable" {
                    // Promoting a local value leaves the local copy forwarded
                    // to the global one; the handles still name the local copy.
                    for &h in &locals {
                        let _ = s.promote(h).unwrap();
                    }
                }
                // Push the global heap over its trigger without collecting:
                // promotion requests a global collection for the next safepoint.
                let big = promoted_list(s, cons, 6, 1_500).unwrap();
                let x = match what {
                    "vector" => {
                        let elems: Vec<Handle<'_>> = (0..4_000).map(|i| locals[i % 8]).collect();
                        s.alloc_vector(&elems).unwrap()
                    }
                    "filled" => s.alloc_vector_filled(4_000, locals[5]).unwrap(),
                    "array" => s.alloc_array(16, locals[5]).unwrap(),
                    _ => s.alloc_mixed(cell, &[locals[5]], &[7]).unwrap(),
                };
                let check = |s: &Scope<'_>, when: &str| {
                    let v = s.view(x);
                    let n = if what == "mutable" { 1 } else { v.len() };
                    for i in 0..n {
                        let k = if what == "vector" { (i % 8) as i64 } else { 5 };
                        let f = v.field(i);
                        assert_eq!(
                            (f.field(0).as_int(), f.field(1).as_int()),
                            (Some(100 + k), Some(k)),
                            "{what} {when}: field {i} of an object allocated in the global heap"
                        );
                    }
                };
                check(s, "after allocation");
                // Reuse the chunks freed by the collection, then collect again.
                for seed in 0..3 {
                    s.scope(|s| {
                        let _ = promoted_list(s, cons, seed, 1_500).unwrap();
                    });
                    s.collect_global().unwrap();
                    check(s, "after reusing freed chunks");
                }
                assert_eq!(read_list(s.view(big), cons).unwrap(), model_list(6, 1_500));
                for (k, &o) in older.iter().enumerate() {
                    assert_eq!(s.view(o).field(3).as_int(), Some(k as i64));
                }
            });
        }
    })
    .unwrap();
}
