//! Blocking sections (issue 16, defect 5): a vproc whose thread blocks
//! outside the runtime inside `Scope::blocking` does not stall the other
//! vprocs' collections; its proxy collects its roots and local heap, and
//! its values are intact and moved when it comes back. The verifier runs
//! after every collection (common::test_config).

mod common;

use common::*;
use numagc::{ErrorKind, Runtime};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Short enough that a collection waiting for a blocked vproc is called
/// off long before the blocked vproc comes back.
const TIMEOUT: Duration = Duration::from_millis(300);

fn runtime_with_timeout(vprocs: usize) -> Runtime {
    Runtime::new(
        test_config(vprocs)
            .safepoint_timeout(TIMEOUT)
            .build()
            .unwrap(),
    )
    .unwrap()
}

/// Waits (sleeping) until `flag` is set, for at most 30 s.
fn wait_for(flag: &AtomicBool) {
    let t0 = Instant::now();
    while !flag.load(Ordering::SeqCst) {
        assert!(t0.elapsed() < Duration::from_secs(30), "gave up waiting");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Vproc 1 blocks for far longer than the safepoint timeout; vproc 0 runs
/// global collections meanwhile. Inside a blocking section every one
/// completes (the proxy takes part for vproc 1, whose local and promoted
/// data survive and move); the same wait outside a section gets the
/// collection called off with vproc 1 named late — the stall the section
/// removes.
#[test]
fn a_blocked_vproc_does_not_stall_the_collections_of_the_others() {
    let _w = watchdog(120, "blocking sections");
    let rt = runtime_with_timeout(2);
    let cons = register_cons(&rt);
    for in_section in [true, false] {
        let blocked = Arc::new(AtomicBool::new(false));
        let release = Arc::new(AtomicBool::new(false));
        let (b, r) = (blocked.clone(), release.clone());
        let took_part_before = rt.stats().vprocs[1].global.count;
        let out = rt
            .run_each(move |s| -> Result<Vec<Result<(), String>>, String> {
                if s.vproc() == 1 {
                    let local = build_list(s, cons, 1, 2_000).map_err(|e| e.to_string())?;
                    let global = promoted_list(s, cons, 2, 1_000).map_err(|e| e.to_string())?;
                    let wait = || {
                        b.store(true, Ordering::SeqCst);
                        wait_for(&r);
                    };
                    if in_section {
                        s.blocking(wait).map_err(|e| e.to_string())?;
                    } else {
                        wait();
                    }
                    check_list(
                        s,
                        local,
                        cons,
                        &model_list(1, 2_000),
                        "local data after the section",
                    );
                    check_list(
                        s,
                        global,
                        cons,
                        &model_list(2, 1_000),
                        "global data after the section",
                    );
                    return Ok(Vec::new());
                }
                wait_for(&b);
                let mut outcomes = Vec::new();
                for round in 0..4 {
                    s.scope(|s| {
                        // Garbage and live data of this vproc, then a
                        // collection. (On the shared plan allocation itself
                        // needs every vproc: its minor collections stop
                        // them all, so outside a section it fails too.)
                        let lists = build_list(s, cons, 10 + round, 1_000)
                            .and_then(|keep| build_list(s, cons, 20 + round, 1_000).map(|_| keep));
                        let keep = match lists {
                            Ok(keep) => keep,
                            Err(e) => return outcomes.push(Err(e.to_string())),
                        };
                        outcomes.push(s.collect_global().map_err(|e| e.to_string()));
                        check_list(
                            s,
                            keep,
                            cons,
                            &model_list(10 + round, 1_000),
                            "vproc 0's data",
                        );
                    });
                }
                r.store(true, Ordering::SeqCst);
                Ok(outcomes)
            })
            .unwrap();
        let outcomes = out[0].clone().unwrap();
        out[1].clone().unwrap();
        if in_section {
            assert_eq!(
                outcomes,
                vec![Ok(()); 4],
                "collections while vproc 1 is blocked"
            );
            // Its proxy took part in each for it (its local collections,
            // its roots), and recorded them in its statistics.
            let took_part = rt.stats().vprocs[1].global.count - took_part_before;
            assert!(
                took_part >= 4,
                "vproc 1 took part in {took_part} collections"
            );
        } else {
            assert!(
                outcomes
                    .iter()
                    .all(|o| matches!(o, Err(e) if e.contains("vproc 1"))),
                "without a section the collections wait for vproc 1: {outcomes:?}"
            );
        }
    }
    // Everything is in order afterwards.
    rt.run_each(|s| s.collect_global().unwrap()).unwrap();
}

/// A panic inside a section leaves it: the vproc's state is its own again,
/// the job reports the panic, and collections and the vproc carry on.
#[test]
fn a_panic_inside_a_blocking_section_leaves_it() {
    let rt = runtime_with_timeout(2);
    let cons = register_cons(&rt);
    let e = rt
        .run_on(1, move |s| {
            let l = build_list(s, cons, 3, 500).unwrap();
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = s.blocking(|| panic!("foreign code failed"));
            }));
            assert!(caught.is_err());
            // The vproc is out of the section: it allocates and collects.
            s.collect_global().unwrap();
            check_list(s, l, cons, &model_list(3, 500), "after the panic");
            s.blocking(|| panic!("uncaught"))
        })
        .unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::TaskPanicked { vproc: 1, .. }),
        "{e}"
    );
    rt.run_each(|s| s.collect_global().unwrap()).unwrap();
}

/// Many short sections against a stream of global collections: every
/// enter and leave races with a collection at some point; the verifier
/// checks the heap after each collection and the lists at the end.
#[test]
fn sections_racing_with_collections_keep_every_value() {
    let _w = watchdog(120, "racing sections");
    let rt = runtime_with_timeout(2);
    let cons = register_cons(&rt);
    let done = Arc::new(AtomicBool::new(false));
    let sections = Arc::new(AtomicUsize::new(0));
    let (d, n) = (done.clone(), sections.clone());
    rt.run_each(move |s| {
        if s.vproc() == 1 {
            let keep = build_list(s, cons, 5, 1_000).unwrap();
            for i in 0..400u64 {
                s.scope(|s| {
                    let l = build_list(s, cons, 6, 50).unwrap();
                    let spin = s
                        .blocking(|| {
                            // Foreign work of varying length.
                            let mut x = i;
                            for _ in 0..(i % 7) * 2_000 {
                                x = std::hint::black_box(x.wrapping_mul(6364136223846793005) + 1);
                            }
                            if i % 50 == 0 {
                                std::thread::sleep(Duration::from_millis(5));
                            }
                            x
                        })
                        .unwrap();
                    std::hint::black_box(spin);
                    check_list(s, l, cons, &model_list(6, 50), "data across a section");
                });
                n.fetch_add(1, Ordering::Relaxed);
            }
            check_list(s, keep, cons, &model_list(5, 1_000), "long-lived data");
            d.store(true, Ordering::SeqCst);
        } else {
            let keep = promoted_list(s, cons, 7, 500).unwrap();
            while !d.load(Ordering::SeqCst) {
                s.collect_global().unwrap();
            }
            check_list(s, keep, cons, &model_list(7, 500), "the collector's data");
        }
    })
    .unwrap();
    assert_eq!(sections.load(Ordering::Relaxed), 400);
    assert!(rt.global_collections() > 10, "{}", rt.global_collections());
}
