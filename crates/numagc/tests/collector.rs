//! Collector behaviour seen through the public API: data survives minor,
//! major and global collections unchanged, garbage is reclaimed, promotion
//! and the write barrier keep the heap invariants of §2.3, large objects stay
//! in place, statistics report every kind of collection.

mod common;

use common::*;
use numagc::{Descriptor, Error, ErrorKind, Handle, ObjectKind, Scope, View};

#[test]
fn survives_many_collections() {
    let rt = runtime(2);
    let cons = register_cons(&rt);
    const N: usize = 10_000;
    let rounds = rt
        .run_each(move |s| {
            let seed = s.vproc() as i64 + 1;
            let model = model_list(seed, N);
            let list = build_list(s, cons, seed, N).unwrap();
            // An unrelated vector and a raw f64 object, reachable only from handles.
            let vec = s
                .alloc_vector(&[Handle::int(7), list, Handle::int(-7)])
                .unwrap();
            let xs: Vec<f64> = (0..300).map(|i| i as f64 / 3.0).collect();
            let raw = s.alloc_f64s(&xs).unwrap();
            let check = |s: &Scope<'_>, what: &str| {
                check_list(s, list, cons, &model, what);
                let v = s.view(vec);
                assert_eq!(v.kind(), Some(ObjectKind::Vector));
                assert_eq!(
                    (v.len(), v.field(0).as_int(), v.field(2).as_int()),
                    (3, Some(7), Some(-7)),
                    "{what}"
                );
                let got = read_list(v.field(1), cons).unwrap();
                assert_eq!(got.len(), N, "{what}: list through the vector");
                let r = s.view(raw);
                assert_eq!(r.kind(), Some(ObjectKind::Raw));
                let got: Vec<f64> = (0..r.len()).map(|i| r.f64(i)).collect();
                assert_eq!(got, xs, "{what}: raw f64 object");
            };
            check(s, "after building");
            for round in 0..12 {
                garbage(s, cons, 3_000);
                match round % 3 {
                    0 => s.collect_minor(),
                    1 => s.collect_major().unwrap(),
                    _ => s.collect_global().unwrap(),
                }
                check(s, &format!("vproc {} round {round}", s.vproc()));
            }
            s.collect_global().unwrap();
            check(s, "after the last global collection");
            12
        })
        .unwrap();
    assert_eq!(rounds, vec![12, 12]);
    let st = rt.stats();
    for v in &st.vprocs {
        assert!(
            // (The shared plan's major work is done in slices, which a
            // vproc may not need between its collections.)
            v.minor.count > 0 && (v.major.count > 0 || !split_plan()) && v.global.count > 0,
            "vproc {}: {:?}",
            v.vproc,
            (v.minor.count, v.major.count, v.global.count)
        );
    }
    assert!(
        rt.global_collections() >= 4,
        "global collections: {}",
        rt.global_collections()
    );
}

#[test]
fn unreachable_data_is_reclaimed() {
    let rt = runtime(2);
    let cons = register_cons(&rt);
    rt.run_on(0, |s| s.collect_global().unwrap()).unwrap();
    let baseline = rt.global_heap_bytes();
    let pooled_before: usize = (0..rt.info().topology.nodes.len())
        .map(|n| rt.pooled_chunks(n))
        .sum();
    // About 20,000 cells + elements promoted to the global heap and kept
    // across a global collection, then dropped with the job's scope.
    let held = rt
        .run_on(0, move |s| {
            let a = promoted_list(s, cons, 3, 10_000).unwrap();
            let b = promoted_list(s, cons, 4, 10_000).unwrap();
            s.collect_global().unwrap();
            check_list(s, a, cons, &model_list(3, 10_000), "a");
            check_list(s, b, cons, &model_list(4, 10_000), "b");
            s.vproc()
        })
        .unwrap();
    assert_eq!(held, 0);
    let with_data = rt.global_heap_bytes();
    // 20,000 cells of 32 bytes at least.
    assert!(
        with_data >= baseline + 20_000 * 32,
        "global heap {with_data} after holding data, baseline {baseline}"
    );
    rt.run_on(1, |s| s.collect_global().unwrap()).unwrap();
    rt.run_on(0, |s| s.collect_global().unwrap()).unwrap();
    let after = rt.global_heap_bytes();
    // Tolerance: each vproc may keep its current to-space chunk (and one
    // more it retired), so at most 2 chunks per vproc above the baseline.
    let tolerance = 2 * 2 * CHUNK;
    assert!(
        after <= baseline + tolerance,
        "global heap {after} bytes after dropping everything; baseline {baseline}, tolerance {tolerance}, with data {with_data}"
    );
    let pooled_after: usize = (0..rt.info().topology.nodes.len())
        .map(|n| rt.pooled_chunks(n))
        .sum();
    assert!(
        pooled_after > pooled_before,
        "pooled chunks {pooled_before} -> {pooled_after}"
    );
    assert!(
        pooled_after * CHUNK >= 20_000 * 32 - tolerance,
        "{pooled_after} chunks pooled"
    );
}

#[test]
fn global_roots_survive_and_are_readable_from_other_vproc() {
    let rt = runtime(2);
    let cons = register_cons(&rt);
    let before = rt.global_roots();
    let root = rt
        .run_on(0, move |s| {
            let l = build_list(s, cons, 9, 2_000).unwrap();
            let r = s.global_root(l).unwrap();
            // The rooted value is global; reading it back gives the same list.
            let g = s.get_global(&r).unwrap();
            assert!(!s.is_local(g));
            check_list(s, g, cons, &model_list(9, 2_000), "on vproc 0");
            r
        })
        .unwrap();
    assert_eq!(rt.global_roots(), before + 1);
    let root = rt
        .run_on(1, move |s| {
            garbage(s, cons, 2_000);
            s.collect_global().unwrap();
            garbage(s, cons, 2_000);
            s.collect_global().unwrap();
            let g = s.get_global(&root).unwrap();
            check_list(s, g, cons, &model_list(9, 2_000), "on vproc 1");
            // Replace the root's value with a local one of vproc 1: it is promoted.
            let v = s.alloc_vector(&[Handle::int(5), g]).unwrap();
            s.set_global(&root, v).unwrap();
            root
        })
        .unwrap();
    rt.run_on(0, move |s| {
        s.collect_global().unwrap();
        let g = s.get_global(&root).unwrap();
        assert!(!s.is_local(g));
        let v = s.view(g);
        assert_eq!(v.field(0).as_int(), Some(5));
        assert_eq!(read_list(v.field(1), cons).unwrap(), model_list(9, 2_000));
        drop(root);
    })
    .unwrap();
    assert_eq!(rt.global_roots(), before);
}

/// Walks everything reachable from `v` (values only) and calls `f` on each object.
fn for_each_object<'a>(v: View<'a>, f: &mut impl FnMut(View<'a>)) {
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        if !v.is_object() {
            continue;
        }
        f(v);
        for i in 0..v.len() {
            if let Ok(c) = v.try_field(i) {
                stack.push(c);
            }
        }
    }
}

#[test]
fn promotion_copies_transitive_closure() {
    let rt = runtime(1);
    let cons = register_cons(&rt);
    let before = rt.stats().total;
    rt.run_on(0, move |s| {
        let l = build_list(s, cons, 5, 500).unwrap();
        let top = s.alloc_vector(&[l, Handle::int(1), l]).unwrap();
        assert_eq!(
            s.is_local(top) && s.is_local(l),
            split_plan(),
            "fresh data is local on the split plan"
        );
        let g = s.promote(top).unwrap();
        assert!(!s.is_local(g), "promoted handle is global");
        let mut objects = 0;
        let mut local = 0;
        for_each_object(s.view(g), &mut |v| {
            objects += 1;
            if s.is_local(s.handle(v)) {
                local += 1;
            }
        });
        assert!(objects > 500, "walked {objects} objects");
        assert_eq!(
            local, 0,
            "{local} of {objects} objects reachable from a promoted value are local"
        );
        let v = s.view(g);
        assert_eq!(v.field(1).as_int(), Some(1));
        assert_eq!(read_list(v.field(0), cons).unwrap(), model_list(5, 500));
        assert_eq!(read_list(v.field(2), cons).unwrap(), model_list(5, 500));
        // The original handle still reads the same contents.
        check_list(s, l, cons, &model_list(5, 500), "original handle");
        // Still intact after collections.
        s.collect_major().unwrap();
        s.collect_global().unwrap();
        assert_eq!(
            read_list(s.view(g).field(2), cons).unwrap(),
            model_list(5, 500)
        );
        check_list(
            s,
            l,
            cons,
            &model_list(5, 500),
            "original handle after collections",
        );
    })
    .unwrap();
    let after = rt.stats().total;
    assert!(
        after.bytes_promoted >= before.bytes_promoted + 500 * 32 || !split_plan(),
        "bytes promoted {}",
        after.bytes_promoted
    );
    assert!(
        after.promotion.count > before.promotion.count || !split_plan(),
        "promotion count {}",
        after.promotion.count
    );
    // The 500 cells of the list and the vector holding it, at least.
    assert!(
        after.objects_promoted >= before.objects_promoted + 501 || !split_plan(),
        "objects promoted {}",
        after.objects_promoted
    );
    if split_plan() {
        let c = rt.stats().promotion_cost().expect("promotions happened");
        assert!(c.ns_per_object > 0.0 && c.ns_per_kib > 0.0, "{c:?}");
    }
}

#[test]
fn write_barrier_promotes() {
    let rt = runtime(1);
    let cons = register_cons(&rt);
    let cell = rt
        .register(Descriptor::mixed("ref", 2, &[0]).unwrap().mutable())
        .unwrap();
    rt.run_on(0, move |s| {
        let arr = s.alloc_array(4, Handle::int(3)).unwrap();
        assert!(!s.is_local(arr), "arrays live in the global heap");
        let r = s.alloc_mixed(cell, &[Handle::NIL], &[11]).unwrap();
        assert!(
            !s.is_local(r),
            "mutable mixed objects live in the global heap"
        );
        assert_eq!(s.view(arr).kind(), Some(ObjectKind::Array));
        assert_eq!(
            (0..4)
                .map(|i| s.view(arr).field(i).as_int())
                .collect::<Vec<_>>(),
            vec![Some(3); 4]
        );

        let l = build_list(s, cons, 2, 100).unwrap();
        let v = s.alloc_vector(&[Handle::int(42), l]).unwrap();
        assert_eq!(s.is_local(l) && s.is_local(v), split_plan());
        s.set(arr, 1, l).unwrap();
        s.set(r, 0, v).unwrap();
        s.set_raw(r, 1, 99).unwrap();

        let check = |s: &Scope<'_>, what: &str| {
            let stored = s.handle(s.view(arr).field(1));
            assert!(
                !s.is_local(stored),
                "{what}: value stored into an array is global"
            );
            check_list(s, stored, cons, &model_list(2, 100), what);
            for_each_object(s.view(arr), &mut |o| {
                assert!(
                    !s.is_local(s.handle(o)),
                    "{what}: local object under the array"
                )
            });
            let sv = s.view(r).field(0);
            assert!(
                !s.is_local(s.handle(sv)),
                "{what}: value stored into a mutable mixed object is global"
            );
            assert_eq!(sv.field(0).as_int(), Some(42));
            assert_eq!(
                read_list(sv.field(1), cons).unwrap(),
                model_list(2, 100),
                "{what}"
            );
            for_each_object(s.view(r), &mut |o| {
                assert!(
                    !s.is_local(s.handle(o)),
                    "{what}: local object under the ref"
                )
            });
            assert_eq!(s.view(r).raw(1), 99);
            assert_eq!(s.view(arr).field(0).as_int(), Some(3));
        };
        check(s, "after the stores");
        garbage(s, cons, 5_000);
        s.collect_major().unwrap();
        check(s, "after a major collection");
        s.collect_global().unwrap();
        check(s, "after a global collection");

        // Misuse: stores into immutable objects, wrong field kinds, out of range.
        let imm = s
            .alloc_mixed(cons, &[Handle::NIL, Handle::NIL], &[1])
            .unwrap();
        assert!(
            matches!(
                s.set(imm, 0, Handle::int(1)).map_err(Error::into_kind),
                Err(ErrorKind::Misuse(_))
            ),
            "store into an immutable cons"
        );
        assert!(
            matches!(
                s.set(v, 0, Handle::int(1)).map_err(Error::into_kind),
                Err(ErrorKind::Misuse(_))
            ),
            "store into an immutable vector"
        );
        let raw = s.alloc_raw(&[1, 2]).unwrap();
        assert!(
            matches!(
                s.set_raw(raw, 0, 5).map_err(Error::into_kind),
                Err(ErrorKind::Misuse(_))
            ),
            "raw store into an immutable raw object"
        );
        assert!(
            matches!(
                s.set(r, 1, Handle::int(1)).map_err(Error::into_kind),
                Err(ErrorKind::Misuse(_))
            ),
            "value store into a raw field"
        );
        assert!(
            matches!(
                s.set_raw(r, 0, 1).map_err(Error::into_kind),
                Err(ErrorKind::Misuse(_))
            ),
            "raw store into a value field"
        );
        assert!(
            matches!(
                s.set_raw(arr, 0, 1).map_err(Error::into_kind),
                Err(ErrorKind::Misuse(_))
            ),
            "raw store into an array"
        );
        let e = s.set(arr, 4, Handle::int(1)).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Misuse(_)) && e.to_string().contains('4'),
            "{e}"
        );
        assert!(
            matches!(
                s.set(r, 2, Handle::int(1)).map_err(Error::into_kind),
                Err(ErrorKind::Misuse(_))
            ),
            "out of range in a mutable mixed object"
        );
        assert!(
            matches!(
                s.set(Handle::int(3), 0, Handle::int(1))
                    .map_err(Error::into_kind),
                Err(ErrorKind::Misuse(_))
            ),
            "store into an immediate"
        );
        // Refused stores changed nothing.
        check(s, "after refused stores");
    })
    .unwrap();
}

#[test]
fn large_objects_are_not_moved() {
    let rt = runtime(1);
    let cons = register_cons(&rt);
    const WORDS: usize = 100_000;
    let large_before = rt.stats().heap.large_object_bytes;
    rt.run_on(0, move |s| {
        let words: Vec<u64> = (0..WORDS as u64).map(|i| i * 3 + 1).collect();
        let raw = s.alloc_raw(&words).unwrap();
        assert!(!s.is_local(raw), "a large raw object is global");
        let where_raw = format!("{:?}", s.view(raw));
        // A large vector of local values: every element is promoted when the
        // vector is allocated (the write barrier at allocation).
        let locals: Vec<Handle<'_>> = (0..10)
            .map(|k| s.alloc_vector(&[Handle::int(k), Handle::int(-k)]).unwrap())
            .collect();
        assert!(locals.iter().all(|&h| s.is_local(h) == split_plan()));
        let elems: Vec<Handle<'_>> = (0..WORDS)
            .map(|i| {
                if i % 7 == 0 {
                    Handle::int(i as i64)
                } else {
                    locals[i % 10]
                }
            })
            .collect();
        let vec = s.alloc_vector(&elems).unwrap();
        assert!(!s.is_local(vec), "a large vector is global");
        let filled = s.alloc_vector_filled(WORDS, locals[3]).unwrap();
        assert!(!s.is_local(filled));
        let where_vec = format!("{:?}", s.view(vec));
        let check = |s: &Scope<'_>, what: &str| {
            assert_eq!(
                s.view(raw).raw_words().unwrap(),
                &words[..],
                "{what}: raw contents"
            );
            let v = s.view(vec);
            assert_eq!(v.len(), WORDS);
            for i in 0..WORDS {
                let f = v.field(i);
                if i % 7 == 0 {
                    assert_eq!(f.as_int(), Some(i as i64), "{what}: element {i}");
                } else {
                    let k = (i % 10) as i64;
                    assert_eq!(
                        (f.field(0).as_int(), f.field(1).as_int()),
                        (Some(k), Some(-k)),
                        "{what}: element {i}"
                    );
                    if i < 20 {
                        assert!(
                            !s.is_local(s.handle(f)),
                            "{what}: element {i} of a large vector is local"
                        );
                    }
                }
            }
            let f = s.view(filled);
            assert_eq!(
                (
                    f.field(0).field(0).as_int(),
                    f.field(WORDS - 1).field(1).as_int()
                ),
                (Some(3), Some(-3)),
                "{what}: filled large vector"
            );
            assert!(
                !s.is_local(s.handle(f.field(WORDS - 1))),
                "{what}: element of a filled large vector is local"
            );
            // The Debug form of a view shows the object's address: unchanged.
            assert_eq!(
                format!("{:?}", s.view(raw)),
                where_raw,
                "{what}: large raw object moved"
            );
            assert_eq!(
                format!("{:?}", s.view(vec)),
                where_vec,
                "{what}: large vector moved"
            );
        };
        check(s, "after allocation");
        garbage(s, cons, 5_000);
        s.collect_minor();
        s.collect_major().unwrap();
        s.collect_global().unwrap();
        check(s, "after collections");
        s.collect_global().unwrap();
        check(s, "after a second global collection");
    })
    .unwrap();
    let with_large = rt.stats().heap.large_object_bytes;
    // Three objects of 100,000 words + header.
    assert!(
        with_large >= large_before + 3 * (WORDS as u64 + 1) * 8,
        "large objects: {large_before} -> {with_large}"
    );
    rt.run_on(0, |s| s.collect_global().unwrap()).unwrap();
    let after = rt.stats().heap.large_object_bytes;
    assert_eq!(
        after, large_before,
        "large objects were not freed: {with_large} -> {after}"
    );
}

#[test]
fn nested_scopes_pop_roots() {
    let rt = runtime(1);
    let cons = register_cons(&rt);
    rt.run_on(0, move |s| {
        let r0 = s.roots_in_use();
        let a = s.alloc_vector(&[Handle::int(1)]).unwrap();
        let r1 = s.roots_in_use();
        assert_eq!(r1, r0 + 1, "a pointer handle takes one slot");
        let _ = Handle::int(5);
        assert_eq!(s.roots_in_use(), r1, "immediates take no slot");
        let n = s.scope(|s| {
            let l = build_list(s, cons, 1, 300).unwrap();
            let _x = s.alloc_raw(&[1, 2, 3]).unwrap();
            assert!(s.roots_in_use() > r1);
            read_list(s.view(l), cons).unwrap().len()
        });
        assert_eq!(n, 300);
        assert_eq!(s.roots_in_use(), r1, "scope pops its handles");
        let kept = s
            .scope_value(|s| {
                let l = build_list(s, cons, 8, 300)?;
                s.scope(|s| garbage(s, cons, 100));
                Ok::<_, Error>(l)
            })
            .unwrap();
        assert_eq!(
            s.roots_in_use(),
            r1 + 1,
            "scope_value keeps exactly one handle"
        );
        let failed = s.scope_value(|s| {
            let _ = s.alloc_vector(&[Handle::int(1)]).map_err(|_| "alloc")?;
            Err::<Handle<'_>, _>("nope")
        });
        assert_eq!(failed.unwrap_err(), "nope");
        assert_eq!(
            s.roots_in_use(),
            r1 + 1,
            "a failed scope_value pops everything"
        );
        // An outer handle's value, rooted inside and kept.
        let again = s
            .scope_value(|s| Ok::<_, Error>(s.handle(s.view(a))))
            .unwrap();
        assert_eq!(s.roots_in_use(), r1 + 2, "an outer handle kept again");
        assert!(s.view(again).same(s.view(a)));
        // An immediate takes no slot, and the inner slots are popped.
        let seven = s
            .scope_value(|s| {
                s.alloc_vector(&[Handle::int(1)])?;
                Ok::<_, Error>(Handle::int(7))
            })
            .unwrap();
        assert_eq!(s.as_int(seven), Some(7));
        assert_eq!(
            s.roots_in_use(),
            r1 + 2,
            "an immediate result takes no slot"
        );
        // A panic inside pops the inner slots on its way out.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.scope_value(|s| -> Result<Handle<'_>, Error> {
                s.alloc_vector(&[Handle::int(1)])?;
                panic!("inside a scope_value")
            })
        }));
        assert!(caught.is_err());
        assert_eq!(s.roots_in_use(), r1 + 2, "a panic pops the inner slots");
        garbage(s, cons, 10_000);
        s.collect_minor();
        s.collect_major().unwrap();
        s.collect_global().unwrap();
        check_list(
            s,
            kept,
            cons,
            &model_list(8, 300),
            "handle returned by scope_value",
        );
        assert_eq!(s.view(a).field(0).as_int(), Some(1));
        assert_eq!(s.view(again).field(0).as_int(), Some(1));
        assert_eq!(s.roots_in_use(), r1 + 2);
        // Field handles are rooted too.
        let f = s.field(kept, 2).unwrap();
        assert_eq!(s.roots_in_use(), r1 + 3);
        s.collect_global().unwrap();
        check_list(s, f, cons, &model_list(8, 299), "field handle");
        assert!(s.field(kept, 3).is_err());
        assert!(s.field(kept, 1).is_err(), "field 1 is raw");
    })
    .unwrap();
}

#[test]
fn stats_report_all_collection_kinds() {
    let rt = runtime(2);
    let cons = register_cons(&rt);
    rt.run_each(move |s| {
        let l = build_list(s, cons, 1, 3_000).unwrap();
        garbage(s, cons, 20_000);
        let _g = s.promote(l).unwrap();
        // `l` may be global already (survivor promotion); a fresh list is local.
        let fresh = build_list(s, cons, 2, 100).unwrap();
        assert_eq!(s.is_local(fresh), split_plan());
        let _f = s.promote(fresh).unwrap();
        s.collect_major().unwrap();
        s.collect_global().unwrap();
    })
    .unwrap();
    let st = rt.stats();
    let t = &st.total;
    assert!(t.minor.count > 0, "minor {:?}", t.minor);
    assert!(t.major.count > 0, "major {:?}", t.major);
    assert_eq!(
        t.promotion.count > 0,
        split_plan(),
        "promotion {:?}",
        t.promotion
    );
    assert!(t.global.count > 0, "global {:?}", t.global);
    assert!(
        t.bytes_allocated > 20_000 * 32,
        "allocated {}",
        t.bytes_allocated
    );
    assert_eq!(t.bytes_promoted > 0, split_plan());
    assert!(t.pauses.count() > 0);
    assert_eq!(st.vprocs.len(), 2);
    for (i, v) in st.vprocs.iter().enumerate() {
        assert_eq!(v.vproc, i);
        assert!(v.minor.count > 0 && v.global.count > 0, "vproc {i}");
        assert!(v.bytes_allocated_global <= v.bytes_allocated);
    }
    assert_eq!(
        t.minor.count,
        st.vprocs.iter().map(|v| v.minor.count).sum::<u64>()
    );
    let json = st.to_json();
    for key in ["minor", "major", "promotion", "global"] {
        assert!(
            json["total"][key]["count"].as_u64().unwrap() > 0
                || (key == "promotion" && !split_plan()),
            "json total.{key}.count: {}",
            json["total"][key]
        );
    }
    assert!(json["total"]["bytes_allocated"].as_u64().unwrap() > 0);
    assert!(json["total"]["pauses"]["count"].as_u64().unwrap() > 0);
    assert_eq!(json["vprocs"].as_array().unwrap().len(), 2);
    assert!(json["heap"].is_object());
    let table = st.table();
    let lines: Vec<&str> = table.lines().collect();
    for i in 0..2 {
        assert!(
            lines
                .iter()
                .any(|l| l.split_whitespace().next() == Some(&i.to_string())),
            "table has no row for vproc {i}:\n{table}"
        );
    }
    assert!(
        lines.iter().any(|l| l.trim_start().starts_with("total")),
        "{table}"
    );
}

fn make_tree<'s>(
    s: &mut Scope<'s>,
    node: numagc::DescId,
    item: i64,
    depth: u32,
) -> numagc::Result<Handle<'s>> {
    s.scope_value(|s| {
        if depth == 0 {
            return s.alloc_mixed(node, &[Handle::NIL, Handle::NIL], &[item as u64]);
        }
        let l = make_tree(s, node, 2 * item - 1, depth - 1)?;
        let r = make_tree(s, node, 2 * item, depth - 1)?;
        s.alloc_mixed(node, &[l, r], &[item as u64])
    })
}

/// (node count, item check) of a tree.
fn walk_tree(v: View<'_>) -> (u64, i64) {
    let item = v.raw(2) as i64;
    let (l, r) = (v.field(0), v.field(1));
    if l.is_int() {
        assert!(r.is_int());
        return (1, item);
    }
    let (nl, cl) = walk_tree(l);
    let (nr, cr) = walk_tree(r);
    (1 + nl + nr, item + cl - cr)
}

fn model_check(item: i64, depth: u32) -> i64 {
    if depth == 0 {
        item
    } else {
        item + model_check(2 * item - 1, depth - 1) - model_check(2 * item, depth - 1)
    }
}

#[test]
fn binarytrees_small_checksum() {
    let rt = runtime(2);
    let node = rt
        .register(Descriptor::mixed("tree", 3, &[0, 1]).unwrap())
        .unwrap();
    const DEPTH: u32 = 12;
    let results = rt
        .run_each(move |s| {
            let item = 1 + s.vproc() as i64;
            let long_lived = make_tree(s, node, item, DEPTH).unwrap();
            let mut out = Vec::new();
            for round in 0..4 {
                s.scope(|s| {
                    for k in 0..8 {
                        let t = make_tree(s, node, k, 8).unwrap();
                        assert_eq!(walk_tree(s.view(t)), ((1 << 9) - 1, model_check(k, 8)));
                    }
                });
                match round {
                    0 => s.collect_minor(),
                    1 => s.collect_major().unwrap(),
                    _ => s.collect_global().unwrap(),
                }
                out.push(walk_tree(s.view(long_lived)));
            }
            (item, out)
        })
        .unwrap();
    for (item, out) in results {
        for (round, r) in out.into_iter().enumerate() {
            assert_eq!(
                r,
                ((1u64 << (DEPTH + 1)) - 1, model_check(item, DEPTH)),
                "tree {item} round {round}"
            );
        }
    }
}

/// §3.1 (issue 2): "10-million-element arrays must not be copied around".
/// A 10,000,000-element vector and a raw array of as many doubles survive
/// global collections in place: the collections copy almost nothing, the
/// arrays keep their addresses and their contents.
#[test]
fn ten_million_element_arrays_are_never_copied() {
    const N: usize = 10_000_000;
    let rt = numagc::Runtime::new(test_config(1).max_heap(1 << 30).build().unwrap()).unwrap();
    let (roots, where_before) = rt
        .run_on(0, |s| {
            let vec = s.alloc_vector_filled(N, Handle::int(42)).unwrap();
            let raw = s
                .alloc_raw_with(N, |w| {
                    w.iter_mut()
                        .enumerate()
                        .for_each(|(i, x)| *x = (i as f64).to_bits())
                })
                .unwrap();
            let place = format!("{:?} {:?}", s.view(vec), s.view(raw));
            (
                (s.global_root(vec).unwrap(), s.global_root(raw).unwrap()),
                place,
            )
        })
        .unwrap();
    let copied_before = rt.stats().total.bytes_copied_global;
    rt.run_on(0, |s| {
        for _ in 0..3 {
            s.collect_global().unwrap();
        }
    })
    .unwrap();
    let copied = rt.stats().total.bytes_copied_global - copied_before;
    assert!(
        copied < (N as u64) * 8 / 100,
        "three global collections copied {copied} bytes"
    );
    let where_after = rt
        .run_on(0, move |s| {
            let (vec, raw) = (
                s.get_global(&roots.0).unwrap(),
                s.get_global(&roots.1).unwrap(),
            );
            let (v, r) = (s.view(vec), s.view(raw));
            assert_eq!(
                (v.len(), v.field(0).as_int(), v.field(N - 1).as_int()),
                (N, Some(42), Some(42))
            );
            assert_eq!((r.len(), r.f64(0), r.f64(N - 1)), (N, 0.0, (N - 1) as f64));
            format!("{v:?} {r:?}")
        })
        .unwrap();
    assert_eq!(where_before, where_after, "the arrays did not move");
    assert!(rt.stats().heap.large_object_bytes >= 2 * (N as u64) * 8);
}

/// Survivor promotion (split-heap plan): building a tree several times the
/// nursery's size makes the next local collections evacuate straight to the
/// global heap, so the minor collections copy less than with the setting
/// off; short-lived garbage never triggers it. The tree is intact either way
/// (verifier on).
#[test]
fn survivor_promotion_copies_large_structures_once() {
    if !split_plan() {
        return; // a setting of the split plan's local heaps
    }
    const DEPTH: u32 = 15; // 65,535 nodes of 32 bytes: 8 × the local heap
    let run = |percent: u32, big: bool| {
        let rt = numagc::Runtime::new(test_config(1).survivor_promotion(percent).build().unwrap())
            .unwrap();
        let node = rt
            .register(Descriptor::mixed("tree", 3, &[0, 1]).unwrap())
            .unwrap();
        rt.run_on(0, move |s| {
            for k in 0..2_000 {
                let t = s
                    .scope(|s| make_tree(s, node, k, 6).map(|t| walk_tree(s.view(t))))
                    .unwrap();
                assert_eq!(t, (127, model_check(k, 6)));
            }
            if big {
                let t = make_tree(s, node, 1, DEPTH).unwrap();
                assert_eq!(
                    walk_tree(s.view(t)),
                    ((1u64 << (DEPTH + 1)) - 1, model_check(1, DEPTH)),
                    "survivor-promotion {percent}"
                );
            }
        })
        .unwrap();
        rt.stats().total
    };
    let garbage_only = run(90, false);
    assert!(
        garbage_only.minor.count > 10,
        "{} minor collections",
        garbage_only.minor.count
    );
    assert_eq!(
        garbage_only.survivor_evacuations, 0,
        "short-lived data triggered survivor promotion"
    );
    let off = run(0, true);
    let on = run(90, true);
    assert_eq!(off.survivor_evacuations, 0);
    assert!(
        on.survivor_evacuations > 0,
        "no evacuation with survivor-promotion 90"
    );
    assert!(
        on.bytes_copied_minor * 2 < off.bytes_copied_minor,
        "minor copying: {} with survivor promotion, {} without",
        on.bytes_copied_minor,
        off.bytes_copied_minor
    );
}

/// `Scope::compact` on every plan: after the live data shrank, a
/// compaction keeps every value and leaves no more bytes in use than the
/// full collection alone did.
#[test]
fn compaction_keeps_every_value_and_gives_memory_back() {
    let rt = numagc::Runtime::new(test_config(2).compact_overhead(0).build().unwrap()).unwrap();
    let n = 20_000i64;
    // Each kept cell is allocated between 15 that die with the job.
    let root = rt
        .run_on(0, move |s| {
            let mut kept = s.nil();
            let mut junk = s.nil();
            for i in 0..n {
                kept = s.alloc_vector(&[Handle::int(i), kept]).unwrap();
                for _ in 0..15 {
                    junk = s.alloc_vector(&[Handle::int(-i), junk]).unwrap();
                }
            }
            s.collect_global().unwrap(); // all of it in the global heap
            s.global_root(kept).unwrap()
        })
        .unwrap();
    let heap_bytes =
        |rt: &numagc::Runtime| rt.stats().heap.global_bytes_per_node.iter().sum::<u64>();
    let check = move |s: &mut numagc::Scope<'_>, kept: Handle<'_>| {
        let mut v = s.view(kept);
        for i in (0..n).rev() {
            assert_eq!(v.field(0).as_int(), Some(i));
            v = v.field(1);
        }
        assert!(v.as_int().is_some(), "the list ends in nil");
    };
    rt.run_on(0, |s| s.collect_global().unwrap()).unwrap();
    let before = heap_bytes(&rt);
    let root = std::sync::Arc::new(root);
    let r = root.clone();
    rt.run_on(1, move |s| {
        let kept = s.get_global(&r).unwrap();
        s.compact().unwrap();
        check(s, kept);
    })
    .unwrap();
    let after = heap_bytes(&rt);
    assert!(
        after <= before,
        "{after} bytes in use after, {before} before"
    );
    rt.run_on(0, move |s| {
        // Allocation and collections go on.
        let kept = s.get_global(&root).unwrap();
        s.scope(|s| {
            let mut l = s.nil();
            for i in 0..10_000 {
                l = s.alloc_vector(&[Handle::int(i), l]).unwrap();
            }
            s.collect_global().unwrap();
            assert_eq!(s.view(l).field(0).as_int(), Some(9_999));
        });
        check(s, kept);
    })
    .unwrap();
}
