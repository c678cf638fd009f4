//! Weak references, ephemerons and finalisers on the split plan, with the
//! heap verifier on (multicore-ocaml-gc.txt §5.1–5.2; `crate::weak`,
//! `plan::split::weak`): what each kind of collection clears and keeps,
//! ephemeron chains found through several rounds, ephemerons shared
//! between vprocs, and finalisers that resurrect, do not see, allocate and
//! run exactly once.

mod common;

use common::*;
use numagc::{Error, GlobalRoot, Handle, Scope};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A fresh key: a vector `[id, id * 10]`.
fn key<'s>(s: &mut Scope<'s>, id: i64) -> Handle<'s> {
    s.alloc_vector(&[Handle::int(id), Handle::int(id * 10)])
        .unwrap()
}

/// The id of a key read through `h`, checking its second field.
fn key_id(s: &Scope<'_>, h: Handle<'_>) -> i64 {
    let v = s.view(h);
    let id = v.field(0).as_int().unwrap();
    assert_eq!(v.field(1).as_int(), Some(id * 10), "key {id} intact");
    id
}

/// The id of the target of weak reference / key of ephemeron `e` (read in
/// a nested scope, so the test holds no handle to it afterwards).
fn target(s: &mut Scope<'_>, e: Handle<'_>) -> Option<i64> {
    s.scope(|s| s.ephemeron_key(e).unwrap().map(|k| key_id(s, k)))
}

/// The id of the key held as data by ephemeron `e`.
fn data_id(s: &mut Scope<'_>, e: Handle<'_>) -> Option<i64> {
    s.scope(|s| s.ephemeron_data(e).unwrap().map(|k| key_id(s, k)))
}

/// A weak reference whose target only it references.
fn orphan<'s>(s: &mut Scope<'s>, id: i64) -> Handle<'s> {
    s.scope_value(|s| {
        let k = key(s, id);
        s.weak_ref(k)
    })
    .unwrap()
}

#[test]
fn weak_ref_is_cleared_by_a_minor_collection_once_its_target_dies() {
    let rt = runtime(1);
    rt.run_on(0, |s| {
        let k = key(s, 1);
        let kept = s.weak_ref(k).unwrap();
        let lost = orphan(s, 2);
        assert_eq!(target(s, lost), Some(2), "nothing collected yet");
        s.collect_minor();
        assert_eq!(target(s, kept), Some(1));
        assert!(s.is_local(kept), "the weak reference itself stays local");
        assert_eq!(target(s, lost), None);
        assert_eq!(data_id(s, lost), None);
        assert_eq!(
            s.ephemeron_data(kept).unwrap().and_then(|d| s.as_int(d)),
            Some(0),
            "a weak reference's data is NIL"
        );
        assert_eq!(key_id(s, k), 1);
    })
    .unwrap();
}

#[test]
fn weak_ref_across_major_collection() {
    // Survivor promotion would evacuate the tiny nursery to the global heap
    // at the second minor collection (promotion, not a major collection).
    let rt = numagc::Runtime::new(test_config(1).survivor_promotion(0).build().unwrap()).unwrap();
    rt.run_on(0, |s| {
        let k = key(s, 1);
        let kept = s.weak_ref(k).unwrap();
        let lost = orphan(s, 2);
        // Hold the orphan's target through two minor collections (into
        // the old data), then let it go.
        let held = s.slot(Handle::NIL);
        s.scope(|s| {
            let h = s.ephemeron_key(lost).unwrap().unwrap();
            s.assign(held, h);
        });
        s.collect_minor();
        s.collect_minor();
        assert_eq!(target(s, lost), Some(2));
        s.assign(held, Handle::NIL);
        s.collect_major().unwrap();
        assert!(!s.is_local(k), "the major collection moved the key to the global heap");
        assert_eq!(target(s, kept), Some(1));
        assert_eq!(target(s, lost), None, "the major collection cleared it");
    })
    .unwrap();
}

#[test]
fn weak_ref_across_promotion_and_global_collection() {
    let rt = runtime(1);
    rt.run_on(0, |s| {
        let k = key(s, 1);
        let kept = s.weak_ref(k).unwrap();
        let kept = s.promote(kept).unwrap();
        let lost = orphan(s, 2);
        let lost = s.promote(lost).unwrap();
        assert!(!s.is_local(lost));
        // Promotion is strong: the target came along and lives until a
        // global collection decides.
        s.collect_minor();
        s.collect_major().unwrap();
        assert_eq!(target(s, lost), Some(2));
        s.collect_global().unwrap();
        assert_eq!(target(s, lost), None, "the global collection cleared it");
        assert_eq!(target(s, kept), Some(1));
        s.collect_global_young().unwrap();
        s.collect_global_young().unwrap();
        s.collect_global_young().unwrap(); // tenured by now
        assert_eq!(target(s, kept), Some(1));
    })
    .unwrap();
}

#[test]
fn local_ephemeron_with_a_global_key_is_cleared_by_a_global_collection() {
    let rt = runtime(1);
    rt.run_on(0, |s| {
        let e = s
            .scope_value(|s| {
                let k = key(s, 5);
                let g = s.promote(k)?;
                s.weak_ref(g)
            })
            .unwrap();
        assert!(s.is_local(e));
        s.collect_minor();
        assert_eq!(target(s, e), Some(5), "a local collection keeps global keys");
        s.collect_global().unwrap();
        assert_eq!(target(s, e), None);
    })
    .unwrap();
}

/// Each kind of collection: what makes the objects old enough for it
/// (after they are made, before any is cut loose), and the collection.
type Kind = (&'static str, fn(&mut Scope<'_>, Handle<'_>), fn(&mut Scope<'_>));

fn kinds() -> Vec<Kind> {
    vec![
        ("minor", |_, _| {}, |s| s.collect_minor()),
        (
            "major",
            |s, _| {
                s.collect_minor();
                s.collect_minor();
            },
            |s| s.collect_major().unwrap(),
        ),
        (
            "global",
            |s, h| {
                let _ = s.promote(h).unwrap();
            },
            |s| s.collect_global().unwrap(),
        ),
    ]
}

fn no_survivor_promotion() -> numagc::Runtime {
    numagc::Runtime::new(test_config(1).survivor_promotion(0).build().unwrap()).unwrap()
}

#[test]
fn data_referring_to_its_own_key_does_not_keep_the_key_alive() {
    let rt = no_survivor_promotion();
    for (what, age, collect) in kinds() {
        rt.run_on(0, move |s| {
            let e = s
                .scope_value(|s| {
                    let k = key(s, 3);
                    let d = s.alloc_vector(&[k, Handle::int(33)])?;
                    s.ephemeron(k, d)
                })
                .unwrap();
            age(s, e);
            collect(s);
            assert_eq!(target(s, e), None, "{what}");
            assert!(s.scope(|s| s.ephemeron_data(e).unwrap().is_none()), "{what}");
        })
        .unwrap();
    }
}

/// `n` ephemerons `e_i = (k_i, k_{i+1})` in a vector, `k_1` in `k1` and
/// no other key held. They are made last to first, so each round of the
/// processing reaches one more key.
fn chain<'s>(s: &mut Scope<'s>, k1: numagc::Slot<'_>, n: i64) -> Handle<'s> {
    s.scope(|s| {
        let k = key(s, 1);
        s.assign(k1, k);
    });
    s.scope_value(|s| {
        let mut keys = vec![k1.get()];
        for i in 2..=n + 1 {
            keys.push(key(s, i));
        }
        let mut es = Vec::new();
        for i in (0..n as usize).rev() {
            es.push(s.ephemeron(keys[i], keys[i + 1])?);
        }
        es.reverse();
        s.alloc_vector(&es)
    })
    .unwrap()
}

#[test]
fn ephemeron_chain_lives_through_rounds_and_dies_with_its_first_key() {
    const N: i64 = 8;
    let rt = no_survivor_promotion();
    for (what, age, collect) in kinds() {
        rt.run_on(0, move |s| {
            let k1 = s.slot(Handle::NIL);
            let ephs = chain(s, k1, N);
            age(s, ephs);
            collect(s);
            collect(s);
            for i in 0..N as usize {
                let ei = s.field(ephs, i).unwrap();
                assert_eq!(target(s, ei), Some(i as i64 + 1), "{what}: key {i}");
                assert_eq!(data_id(s, ei), Some(i as i64 + 2), "{what}: data {i}");
            }
            // A second chain, cut loose at its first key.
            let ephs = chain(s, k1, N);
            age(s, ephs);
            s.assign(k1, Handle::NIL);
            collect(s);
            for i in 0..N as usize {
                let ei = s.field(ephs, i).unwrap();
                assert_eq!(target(s, ei), None, "{what}: key {i} after the cut");
                assert_eq!(data_id(s, ei), None, "{what}: data {i} after the cut");
            }
        })
        .unwrap();
    }
}
