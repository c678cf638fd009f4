//! Weak references, ephemerons and finalisers on the split plan, with the
//! heap verifier on (multicore-ocaml-gc.txt §5.1–5.2; `crate::weak`,
//! `plan::split::weak`): what each kind of collection clears and keeps,
//! ephemeron chains found through several rounds, ephemerons shared
//! between vprocs, and finalisers that resurrect, do not see, allocate and
//! run exactly once.

mod common;

use common::*;
use numagc::{Error, ErrorKind, GlobalRoot, Handle, Scope};
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
        assert_eq!(
            s.is_local(kept),
            split_plan(),
            "the weak reference itself stays local (split plan)"
        );
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
    if !split_plan() {
        return; // the split plan's local, major and global collections
    }
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
        assert!(
            !s.is_local(k),
            "the major collection moved the key to the global heap"
        );
        assert_eq!(target(s, kept), Some(1));
        assert_eq!(target(s, lost), None, "the major collection cleared it");
    })
    .unwrap();
}

#[test]
fn weak_ref_across_promotion_and_global_collection() {
    if !split_plan() {
        return; // the split plan's local, major and global collections
    }
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
    if !split_plan() {
        return; // the split plan's local, major and global collections
    }
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
        assert_eq!(
            target(s, e),
            Some(5),
            "a local collection keeps global keys"
        );
        s.collect_global().unwrap();
        assert_eq!(target(s, e), None);
    })
    .unwrap();
}

/// Each kind of collection: what makes the objects old enough for it
/// (after they are made, before any is cut loose), and the collection.
type Kind = (
    &'static str,
    fn(&mut Scope<'_>, Handle<'_>),
    fn(&mut Scope<'_>),
);

fn kinds() -> Vec<Kind> {
    if !split_plan() {
        // The shared plan: minor collections decide about the minor heaps,
        // the end of a major cycle about the major heap (a full collection
        // ends two, so objects made during the first are decided too).
        return vec![
            ("minor", |_, _| {}, |s| s.collect_minor()),
            (
                "major",
                |s, _| s.collect_minor(),
                |s| s.collect_global().unwrap(),
            ),
        ];
    }
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
            assert!(
                s.scope(|s| s.ephemeron_data(e).unwrap().is_none()),
                "{what}"
            );
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

#[test]
fn ephemerons_shared_between_vprocs_are_processed_in_rounds_across_their_lists() {
    let rt = runtime(2);
    // Vproc 0: e0 = (k0, k1) with k0 held by a global root; vproc 1:
    // e1 = (k1, d), with k1 reachable only as e0's data. Both ephemerons
    // are shared through global roots.
    let k0 = Arc::new(Mutex::new(None::<GlobalRoot>));
    let slot = k0.clone();
    let (e0, k1) = rt
        .run_on(0, move |s| {
            let k0 = key(s, 10);
            let k1 = key(s, 11);
            let e0 = s.ephemeron(k0, k1).unwrap();
            *slot.lock().unwrap() = Some(s.global_root(k0).unwrap());
            (s.global_root(e0).unwrap(), s.global_root(k1).unwrap())
        })
        .unwrap();
    let e1 = rt
        .run_on(1, move |s| {
            let k1 = s.get_global(&k1).unwrap();
            let d = key(s, 12);
            let e1 = s.ephemeron(k1, d).unwrap();
            s.global_root(e1).unwrap()
        })
        .unwrap(); // `k1`'s root is dropped with the job
    let e1 = Arc::new(e1);
    let e0 = Arc::new(e0);
    let check = move |expect: Option<(i64, i64, i64)>| {
        let (e0, e1) = (e0.clone(), e1.clone());
        rt.run_each(move |s| {
            s.collect_global().unwrap();
            let e0 = s.get_global(&e0).unwrap();
            let e1 = s.get_global(&e1).unwrap();
            let got = match (target(s, e0), target(s, e1), data_id(s, e1)) {
                (Some(a), Some(b), Some(c)) => Some((a, b, c)),
                (None, None, None) => None,
                other => panic!("vproc {}: half-cleared {other:?}", s.vproc()),
            };
            assert_eq!(got, expect, "vproc {}", s.vproc());
            assert_eq!(data_id(s, e0), expect.map(|e| e.1));
        })
        .unwrap();
    };
    check(Some((10, 11, 12)));
    check(Some((10, 11, 12)));
    *k0.lock().unwrap() = None;
    check(None);
}

#[test]
fn ephemeron_made_in_a_stolen_task_is_kept_by_its_key_on_the_joining_vproc() {
    let rt = runtime(2);
    let r = rt
        .run_on(0, |s| {
            let k = key(s, 7);
            let (e, _) = s
                .par2(
                    &[k],
                    |s, env| {
                        let d = key(s, 8);
                        s.ephemeron(env[0], d)
                    },
                    |s, env| {
                        let d = key(s, 9);
                        s.ephemeron(env[0], d)
                    },
                )
                .unwrap();
            let lost = s
                .scope_value(|s| {
                    let (a, b) = s.par2(
                        &[],
                        |s, _| {
                            let k = key(s, 1);
                            s.weak_ref(k)
                        },
                        |s, _| {
                            let k = key(s, 2);
                            s.weak_ref(k)
                        },
                    )?;
                    s.alloc_vector(&[a, b])
                })
                .unwrap();
            s.collect_global().unwrap();
            s.collect_global().unwrap();
            let a = s.field(lost, 0).unwrap();
            let b = s.field(lost, 1).unwrap();
            (
                target(s, e),
                data_id(s, e),
                target(s, a),
                target(s, b),
                key_id(s, k),
            )
        })
        .unwrap();
    assert_eq!(r, (Some(7), Some(8), None, None, 7));
}

/// Counts the calls of finalisers by id.
#[derive(Clone, Default)]
struct Calls(Arc<Mutex<Vec<i64>>>);

impl Calls {
    fn record(&self, id: i64) {
        self.0.lock().unwrap().push(id);
    }
    fn sorted(&self) -> Vec<i64> {
        let mut v = self.0.lock().unwrap().clone();
        v.sort();
        v
    }
}

#[test]
fn finalise_sees_its_value_and_may_resurrect_it() {
    let rt = no_survivor_promotion();
    let calls = Calls::default();
    let kept = Arc::new(Mutex::new(None::<GlobalRoot>));
    for (what, age, collect) in kinds() {
        let (calls, kept2) = (calls.clone(), kept.clone());
        rt.run_on(0, move |s| {
            let kept = kept2;
            calls.0.lock().unwrap().clear();
            let w = s
                .scope_value(|s| {
                    let v = key(s, 40);
                    let (calls, kept) = (calls.clone(), kept.clone());
                    s.finalise(v, move |s, v| {
                        calls.record(key_id(s, v));
                        *kept.lock().unwrap() = Some(s.global_root(v)?);
                        Ok(())
                    })?;
                    age(s, v);
                    s.weak_ref(v)
                })
                .unwrap();
            collect(s);
            assert_eq!(s.pending_finalisers(), 1, "{what}");
            assert_eq!(
                target(s, w),
                Some(40),
                "{what}: resurrected, so not cleared"
            );
            assert_eq!(s.run_finalisers(), 1);
            assert_eq!(calls.sorted(), vec![40], "{what}");
            // The resurrected value stays valid across every collection,
            // and its finaliser never runs again.
            for _ in 0..2 {
                s.collect_minor();
                s.collect_major().unwrap();
                s.collect_global().unwrap();
            }
            let v = s
                .get_global(kept.lock().unwrap().as_ref().unwrap())
                .unwrap();
            assert_eq!(key_id(s, v), 40, "{what}");
            assert_eq!(s.run_finalisers(), 0);
            assert_eq!(calls.sorted(), vec![40], "{what}: exactly once");
        })
        .unwrap();
        *kept.lock().unwrap() = None;
    }
}

#[test]
fn finalise_last_does_not_see_its_value_and_runs_after_it_is_collected() {
    let rt = no_survivor_promotion();
    for (what, age, collect) in kinds() {
        let calls = Calls::default();
        let c = calls.clone();
        rt.run_on(0, move |s| {
            let w = s
                .scope_value(|s| {
                    let v = key(s, 50);
                    let c = c.clone();
                    s.finalise_last(v, move |_| {
                        c.record(50);
                        Ok(())
                    })?;
                    age(s, v);
                    s.weak_ref(v)
                })
                .unwrap();
            s.collect_minor(); // a first minor collection may not decide
            collect(s);
            assert_eq!(target(s, w), None, "{what}: collected");
            assert_eq!(s.run_finalisers(), 1, "{what}");
            assert_eq!(c.sorted(), vec![50]);
        })
        .unwrap();
        // Nothing more runs later, at job ends or collections.
        rt.run_on(0, |s| {
            s.collect_global().unwrap();
            s.collect_minor();
        })
        .unwrap();
        assert_eq!(calls.sorted(), vec![50], "{what}: exactly once");
    }
}

#[test]
fn finalisers_may_allocate_and_run_at_the_end_of_the_job() {
    let rt = runtime(1);
    let sums = Arc::new(Mutex::new(Vec::new()));
    let s2 = sums.clone();
    rt.run_on(0, move |s| {
        for n in [1000i64, 20_000] {
            let sums = s2.clone();
            s.scope(|s| {
                let v = key(s, n);
                s.finalise(v, move |s, v| {
                    // Allocates enough to collect several times.
                    let n = key_id(s, v);
                    let mut list = s.nil();
                    for i in 0..n {
                        list = s.alloc_vector(&[Handle::int(i), list])?;
                    }
                    let mut sum = 0;
                    let mut l = s.view(list);
                    while l.is_object() {
                        sum += l.field(0).as_int().unwrap();
                        l = l.field(1);
                    }
                    sums.lock().unwrap().push(sum);
                    Ok(())
                })
                .unwrap();
            });
        }
        s.collect_minor();
        assert_eq!(s.pending_finalisers(), 2);
        // Not run yet: the job's end runs them.
    })
    .unwrap();
    let mut got = sums.lock().unwrap().clone();
    got.sort();
    assert_eq!(got, vec![499_500, 199_990_000]);
}

#[test]
fn finalisers_run_exactly_once_across_vprocs_and_collections() {
    let rt = runtime(2);
    let calls = Calls::default();
    let c = calls.clone();
    rt.run_each(move |s| {
        let base = 1000 * s.vproc() as i64;
        let keep = s.slot(Handle::NIL);
        for i in 0..200 {
            let c = c.clone();
            s.scope(|s| {
                let v = key(s, base + i);
                let v = if i % 3 == 0 { s.promote(v).unwrap() } else { v };
                if i % 2 == 0 {
                    s.finalise(v, move |s, v| {
                        c.record(key_id(s, v));
                        Ok(())
                    })
                    .unwrap();
                } else {
                    s.finalise_last(v, move |_| {
                        c.record(base + i);
                        Ok(())
                    })
                    .unwrap();
                }
                if i % 5 == 0 {
                    // A few stay reachable until the end of the job.
                    let l = s.alloc_vector(&[v, keep.get()]).unwrap();
                    s.assign(keep, l);
                }
            });
            match i % 7 {
                0 => s.collect_minor(),
                3 => s.collect_major().unwrap(),
                5 => s.collect_global().unwrap(),
                _ => {}
            }
        }
    })
    .unwrap();
    // What was still held at the end of the jobs dies now.
    rt.run_each(|s| {
        s.collect_global().unwrap();
        s.collect_global().unwrap();
    })
    .unwrap();
    rt.run_each(|s| {
        s.run_finalisers();
    })
    .unwrap();
    let expected: Vec<i64> = [0i64, 1000]
        .iter()
        .flat_map(|b| (0..200).map(move |i| b + i))
        .collect();
    assert_eq!(calls.sorted(), expected);
}

#[test]
fn immediates_and_non_ephemerons_are_refused() {
    let rt = runtime(1);
    rt.run_on(0, |s| {
        let e = s.finalise(Handle::int(3), |_, _| Ok(())).unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::Misuse(ref m) if m.contains("immediate")),
            "{e}"
        );
        let e = s.finalise_last(Handle::NIL, |_| Ok(())).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Misuse(_)), "{e}");
        let v = key(s, 1);
        assert!(matches!(
            s.ephemeron_key(v).map_err(Error::into_kind),
            Err(ErrorKind::Misuse(_))
        ));
        assert!(matches!(
            s.weak_get(Handle::int(1)).map_err(Error::into_kind),
            Err(ErrorKind::Misuse(_))
        ));
        assert!(!s.is_ephemeron(v));
        // An immediate key never dies.
        let w = s.weak_ref(Handle::int(9)).unwrap();
        assert!(s.is_ephemeron(w));
        s.collect_global().unwrap();
        assert_eq!(
            s.scope(|s| s.weak_get(w).unwrap().and_then(|k| s.as_int(k))),
            Some(9)
        );
    })
    .unwrap();
}

#[test]
fn a_failing_finaliser_is_recorded_and_the_others_run() {
    let rt = runtime(1);
    let calls = Calls::default();
    let c = calls.clone();
    rt.run_on(0, move |s| {
        s.scope(|s| {
            let a = key(s, 1);
            let b = key(s, 2);
            let c2 = c.clone();
            s.finalise_last(a, |_| Err(Error::misuse("finaliser failed")))
                .unwrap();
            s.finalise_last(b, move |_| {
                c2.record(2);
                Ok(())
            })
            .unwrap();
        });
        s.collect_minor();
        assert_eq!(s.run_finalisers(), 2);
    })
    .unwrap();
    assert_eq!(calls.sorted(), vec![2]);
    let errors = rt.take_thread_errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
}
