//! Memory the system refuses (issue 5, part 5), injected with
//! `numagc::fault::FaultPlan` (`cargo test -p numagc --features
//! fault-injection --test faults`): a runtime that cannot map its heap does
//! not start, and leaves nothing behind; a refused chunk is an error for the
//! allocation that asked; copies that meet a refusal half-way (a major
//! collection, a global collection on a node whose pool ran dry) complete
//! from memory set aside beforehand; a global collection whose to-space
//! cannot be set aside is called off before anything moves. Each test checks
//! the error, then the heap (verifier on, data against its model), that the
//! other vproc carried on, and that the runtime works once memory is given
//! again and drops cleanly; a watchdog turns any hang into a failure.

mod common;

use common::*;
use numagc::fault::FaultPlan;
use numagc::{Error, ErrorKind, Handle, Runtime};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn assert_map_failed(e: &Error, what: &str) {
    match e.kind() {
        ErrorKind::MapFailed {
            bytes,
            what: w,
            errno,
        } => {
            assert!(*bytes > 0, "{e}");
            assert_eq!(*errno, libc::ENOMEM, "{e}");
            assert!(w.contains(what), "expected a refusal for {what:?}, got {e}");
            let msg = e.to_string();
            assert!(
                msg.contains(&bytes.to_string()) && msg.contains("os error 12"),
                "the message names the size and errno: {msg}"
            );
        }
        other => panic!("expected MapFailed for {what}, got {other:?}"),
    }
}

#[test]
fn a_runtime_whose_memory_is_refused_does_not_start() {
    let _w = watchdog(120, "runtime creation with refused memory");
    let config = test_config(2).build().unwrap();
    let plan = FaultPlan::new();
    // The reservation itself.
    plan.fail_reservation();
    let e = Runtime::with_faults(config.clone(), plan.clone())
        .err()
        .expect("the reservation was refused");
    assert_map_failed(&e, "reservation");
    // Each run of chunks carved at start-up, in turn (all maps from the
    // k-th on refused): a local heap and the copy reserve of each vproc.
    // Every refusal is an error naming it.
    let mut refused = Vec::new();
    let rt = loop {
        let before = plan.injected();
        plan.fail_chunk_maps(refused.len(), usize::MAX);
        match Runtime::with_faults(config.clone(), plan.clone()) {
            Ok(rt) => break rt,
            Err(e) => {
                assert!(plan.injected() > before);
                match e.kind() {
                    ErrorKind::MapFailed { what, .. }
                        if what.contains("local heap") || what.contains("copy reserve") =>
                    {
                        assert_map_failed(&e, "")
                    }
                    other => panic!("map {}: {other:?}", refused.len()),
                }
                refused.push(e.to_string());
                assert!(refused.len() < 100, "the runtime never started");
            }
        }
    };
    let whats: Vec<&str> = refused
        .iter()
        .map(|m| {
            if m.contains("local heap") {
                "local heap"
            } else {
                "copy reserve"
            }
        })
        .collect();
    assert_eq!(
        whats,
        ["local heap", "copy reserve", "local heap", "copy reserve"],
        "{refused:#?}"
    );
    println!(
        "{} start-up maps refused in turn, e.g. {}",
        refused.len(),
        refused[0]
    );
    drop(rt);
    // Nothing is left armed: the same plan now starts a working runtime.
    plan.clear();
    plan.clear();
    let rt = Runtime::with_faults(config, plan).unwrap();
    let cons = register_cons(&rt);
    let n = rt
        .run_each(move |s| {
            let l = build_list(s, cons, 1, 1_000).unwrap();
            read_list(s.view(l), cons).unwrap().len()
        })
        .unwrap();
    assert_eq!(n, vec![1_000, 1_000]);
}

/// Refused chunks while vproc 0 allocates in the global heap and vproc 1
/// works on: each refusal is an error for the allocation that asked, the
/// data kept is intact, vproc 1 finishes its rounds (retrying a refusal of
/// its own), and everything works once the plan is cleared.
#[test]
fn a_refused_chunk_is_an_error_for_the_allocation_and_the_others_carry_on() {
    let _w = watchdog(300, "refused chunks");
    let plan = FaultPlan::new();
    let rt = Runtime::with_faults(test_config(2).build().unwrap(), plan.clone()).unwrap();
    let cons = register_cons(&rt);
    let armed = Arc::new(AtomicBool::new(false));
    let cleared = Arc::new(AtomicBool::new(false));
    let refused_1 = Arc::new(AtomicBool::new(false));
    let (p, a, c, r1) = (
        plan.clone(),
        armed.clone(),
        cleared.clone(),
        refused_1.clone(),
    );
    let out = rt
        .run_each(move |s| {
            if s.vproc() == 1 {
                while !a.load(Ordering::SeqCst) {
                    s.poll();
                }
                let (mut refusals, mut total) = (0usize, 0usize);
                for round in 0..30 {
                    loop {
                        match s.scope(|s| {
                            build_list(s, cons, round, 2_000)
                                .map(|l| read_list(s.view(l), cons).unwrap().len())
                        }) {
                            Ok(n) => {
                                total += n;
                                break;
                            }
                            Err(e) if matches!(e.kind(), ErrorKind::MapFailed { .. }) => {
                                assert_map_failed(&e, "");
                                r1.store(true, Ordering::SeqCst);
                                refusals += 1;
                                assert!(refusals < 10_000_000, "vproc 1 never got memory back");
                                s.poll();
                                std::thread::yield_now();
                            }
                            Err(e) => panic!("vproc 1: {e}"),
                        }
                    }
                }
                return Ok((total, refusals));
            }
            let kept = promoted_list(s, cons, 4, 3_000).unwrap();
            p.fail_chunk_maps(0, usize::MAX);
            a.store(true, Ordering::SeqCst);
            // Mutable arrays fill global chunks until a new one is needed;
            // a large one needs a run of its own.
            let mut errors = Vec::new();
            s.scope(|s| {
                for _ in 0..100_000 {
                    if let Err(e) = s.alloc_array(16, Handle::int(3)) {
                        errors.push(e);
                        break;
                    }
                }
                errors.push(
                    s.alloc_array(100_000, Handle::int(4))
                        .expect_err("a large object needs new memory"),
                );
            });
            check_list(
                s,
                kept,
                cons,
                &model_list(4, 3_000),
                "kept data after the refusals",
            );
            // Memory stays refused until vproc 1 has met a refusal too.
            let t0 = std::time::Instant::now();
            while !r1.load(Ordering::SeqCst) && t0.elapsed() < std::time::Duration::from_secs(20) {
                s.poll();
                std::thread::yield_now();
            }
            p.clear();
            c.store(true, Ordering::SeqCst);
            let big = s
                .alloc_array(100_000, Handle::int(5))
                .expect("memory is back");
            s.collect_global().expect("a collection with memory back");
            assert_eq!(s.view(big).field(99_999).as_int(), Some(5));
            check_list(
                s,
                kept,
                cons,
                &model_list(4, 3_000),
                "kept data after a collection",
            );
            Err(errors)
        })
        .unwrap();
    let errors = out[0].as_ref().expect_err("vproc 0 reports its refusals");
    assert_eq!(errors.len(), 2, "{errors:?}");
    for e in errors {
        // The allocation's own chunk, or the to-space of the collection it
        // ran to find room: a refusal either way, never a panic.
        assert!(matches!(e.kind(), ErrorKind::MapFailed { .. }), "{e:?}");
        println!("refused: {e}");
    }
    let (total, refusals) = *out[1].as_ref().unwrap();
    assert_eq!(total, 30 * 2_000);
    assert!(refusals > 0, "vproc 1 never met a refusal");
    println!(
        "vproc 1 finished its 30 rounds ({refusals} refusals retried); {} failures injected",
        plan.injected()
    );
    assert!(cleared.load(Ordering::SeqCst));
    assert!(plan.injected() >= 2);
    drop(rt);
}

/// A global collection whose to-space cannot be set aside is called off
/// before anything moves: the requester gets the refusal, the data is
/// intact, and the next collection (memory back) evacuates the chunks the
/// abandoned one had taken in, which the verifier checks.
#[test]
fn a_global_collection_without_to_space_is_called_off_before_anything_moves() {
    let _w = watchdog(120, "collection without to-space");
    let plan = FaultPlan::new();
    let rt = Runtime::with_faults(test_config(2).build().unwrap(), plan.clone()).unwrap();
    let cons = register_cons(&rt);
    let p = plan.clone();
    let e = rt
        .run_on(0, move |s| {
            // No collection yet: the pools are empty, so to-space must be
            // mapped.
            let kept = promoted_list(s, cons, 9, 4_000).unwrap();
            let local = build_list(s, cons, 10, 500).unwrap();
            p.fail_chunk_maps(0, usize::MAX);
            let e = s.collect_global().expect_err("no to-space");
            check_list(
                s,
                kept,
                cons,
                &model_list(9, 4_000),
                "global data after the abandoned collection",
            );
            check_list(
                s,
                local,
                cons,
                &model_list(10, 500),
                "local data after the abandoned collection",
            );
            p.clear();
            s.collect_global().expect("memory is back");
            check_list(
                s,
                kept,
                cons,
                &model_list(9, 4_000),
                "global data after the next collection",
            );
            check_list(
                s,
                local,
                cons,
                &model_list(10, 500),
                "local data after the next collection",
            );
            e
        })
        .unwrap();
    assert_map_failed(&e, "to-space");
    assert_eq!(rt.abandoned_global_collections(), 1);
    assert_eq!(rt.global_collections(), 1);
    // Vproc 1 took part in both and works.
    let n = rt
        .run_on(1, move |s| {
            let l = build_list(s, cons, 2, 2_000).unwrap();
            read_list(s.view(l), cons).unwrap().len()
        })
        .unwrap();
    assert_eq!(n, 2_000);
}

/// Chunks refused while copies are under way: a promotion that needs new
/// chunks completes from the vproc's copy reserve, and the refusal is
/// reported when the reserve cannot be topped up before the next copy; a
/// global collection whose vproc finds its node's pool empty takes chunks
/// from the other node's pool. The verifier checks the heap after each.
#[test]
fn refusals_in_the_middle_of_copies_are_absorbed_and_reported_afterwards() {
    let _w = watchdog(300, "refusals during copies");
    let plan = FaultPlan::new();
    // Two nodes, one vproc each: vproc 1's pool is its own.
    let rt = Runtime::with_faults(
        test_config(2).topology(Some("2x1".into())).build().unwrap(),
        plan.clone(),
    )
    .unwrap();
    let cons = register_cons(&rt);

    // A promotion of more than a chunk with every new chunk refused.
    let p = plan.clone();
    let (injected, later, major) = rt
        .run_on(0, move |s| {
            let live = build_list(s, cons, 21, 1_500).unwrap();
            assert!(s.is_local(live));
            p.fail_chunk_maps(0, usize::MAX);
            let before = p.injected();
            let g = s
                .promote(live)
                .expect("the copy reserve covers the promotion");
            let injected = p.injected() - before;
            check_list(
                s,
                g,
                cons,
                &model_list(21, 1_500),
                "promoted data copied into the reserve",
            );
            // The reserve is short now: the next copy does not start.
            let next = build_list(s, cons, 23, 100).unwrap();
            let later = s.promote(next).err();
            assert!(s.is_local(next), "nothing was promoted");
            check_list(
                s,
                next,
                cons,
                &model_list(23, 100),
                "local data after the refused promotion",
            );
            // An explicit major collection needs the same reserve: its
            // refusal is the error of `collect_major` (the minor one ran).
            let major = s.collect_major().err();
            check_list(
                s,
                next,
                cons,
                &model_list(23, 100),
                "local data after the refused major collection",
            );
            p.clear();
            let more = s.promote(next).expect("memory is back");
            s.collect_global().unwrap();
            check_list(
                s,
                g,
                cons,
                &model_list(21, 1_500),
                "promoted data after a global collection",
            );
            check_list(
                s,
                more,
                cons,
                &model_list(23, 100),
                "new data after a global collection",
            );
            (injected, later, major)
        })
        .unwrap();
    assert!(injected > 0, "the promotion met no refusal");
    assert_map_failed(
        &major.expect("the major collection without a copy reserve was refused"),
        "copy reserve",
    );
    assert_map_failed(
        &later.expect("the promotion after the reserve ran short was refused"),
        "copy reserve",
    );

    // A global collection: vproc 0 fills node 0's pool with freed chunks;
    // vproc 1 keeps data on node 1 until node 1's pool is empty, then every
    // new chunk is refused while it collects.
    rt.run_on(0, move |s| {
        for round in 0..6 {
            s.scope(|s| {
                promoted_list(s, cons, round, 3_000).unwrap();
            });
        }
        s.collect_global().unwrap();
    })
    .unwrap();
    let mut kept = Vec::new();
    while rt.pooled_chunks(1) > 0 {
        let seed = 40 + kept.len() as i64;
        kept.push((
            seed,
            rt.run_on(1, move |s| {
                let l = promoted_list(s, cons, seed, 1_000).unwrap();
                s.global_root(l).unwrap()
            })
            .unwrap(),
        ));
        assert!(kept.len() < 100, "node 1's pool never empties");
    }
    assert!(
        rt.pooled_chunks(0) > 8,
        "node 0's pool holds {} chunks",
        rt.pooled_chunks(0)
    );
    let before = plan.injected();
    let collections = rt.global_collections();
    let p = plan.clone();
    let kept = Arc::new(kept);
    let k = kept.clone();
    rt.run_on(1, move |s| {
        let local = build_list(s, cons, 32, 1_000).unwrap();
        p.fail_chunk_maps(0, usize::MAX);
        s.collect_global().expect("the pools hold the to-space");
        p.clear();
        for (seed, root) in k.iter() {
            let l = s.get_global(root).unwrap();
            check_list(
                s,
                l,
                cons,
                &model_list(*seed, 1_000),
                "node 1's data after the collection",
            );
        }
        check_list(
            s,
            local,
            cons,
            &model_list(32, 1_000),
            "local data after the collection",
        );
    })
    .unwrap();
    assert_eq!(rt.global_collections(), collections + 1);
    assert_eq!(rt.abandoned_global_collections(), 0);
    assert!(plan.injected() > before, "the collection met no refusal");
    println!(
        "copies: {injected} refusals absorbed by a promotion; {} by a global collection ({} lists on node 1)",
        plan.injected() - before,
        kept.len()
    );
}
