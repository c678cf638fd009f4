//! Every failure a caller can provoke is an `Error` value with a message that
//! names what was wrong; the runtime keeps working afterwards.

mod common;

use common::*;
use numagc::{ConfigBuilder, Descriptor, DescriptorError, Error, ErrorKind, Handle, Runtime};

#[test]
fn heap_limit_returns_error_and_others_carry_on() {
    const MAX_HEAP: usize = 4 * MIB;
    let config = test_config(2).max_heap(MAX_HEAP).build().unwrap();
    let rt = Runtime::new(config).unwrap();
    let cons = register_cons(&rt);
    #[derive(Debug)]
    enum Outcome {
        Limit {
            error: String,
            cells: usize,
            requested: usize,
            in_use: usize,
            limit: usize,
            after: usize,
        },
        Sum(Vec<i64>),
    }
    let out = rt
        .run_each(move |s| {
            if s.vproc() == 0 {
                // Retain everything until the limit is reached (at most 2M cells = 64 MiB).
                let (error, cells) = s.scope(|s| {
                    let mut list = s.nil();
                    let mut cells = 0usize;
                    for batch in 0..20_000 {
                        let r = s.scope_value(|s| {
                            let mut l = s.alloc_vector(&[list])?;
                            for k in 0..100 {
                                l = s.alloc_mixed(cons, &[Handle::int(k), l], &[batch as u64])?;
                            }
                            Ok::<_, Error>(l)
                        });
                        match r {
                            Ok(l) => {
                                list = l;
                                cells += 100;
                            }
                            Err(e) => return (Some(e), cells),
                        }
                    }
                    (None, cells)
                });
                let error = error.expect("the heap limit was never reported");
                let ErrorKind::HeapLimit {
                    requested,
                    in_use,
                    limit,
                } = *error.kind()
                else {
                    panic!("expected ErrorKind::HeapLimit, got {error:?}");
                };
                // The retained data is dropped: allocation works again.
                s.collect_global().unwrap();
                let l = build_list(s, cons, 3, 5_000).expect("allocation after dropping the data");
                s.collect_global().unwrap();
                check_list(s, l, cons, &model_list(3, 5_000), "after the heap limit");
                Outcome::Limit {
                    error: error.to_string(),
                    cells,
                    requested,
                    in_use,
                    limit,
                    after: 5_000,
                }
            } else {
                // Garbage only, bounded: must finish every round with the
                // right result. The limit is the whole heap's: while vproc 0
                // holds it full, an allocation here may be refused too (its
                // major collections need global space). A refusal is a clean
                // error that loses nothing, so the round is retried until
                // vproc 0 lets go of its data.
                let mut sums = Vec::new();
                for round in 0..60 {
                    let mut refusals = 0;
                    let sum = loop {
                        let r = s.scope(|s| {
                            build_list(s, cons, round, 1_000).map(|l| {
                                read_list(s.view(l), cons)
                                    .unwrap()
                                    .iter()
                                    .map(|(_, p)| *p as i64)
                                    .fold(0i64, |a, b| a.wrapping_add(b))
                            })
                        });
                        match r {
                            Ok(sum) => break sum,
                            Err(e)
                                if matches!(e.kind(), ErrorKind::HeapLimit { .. })
                                    && refusals < 1_000_000 =>
                            {
                                refusals += 1;
                                s.poll();
                                std::thread::yield_now();
                            }
                            Err(e) => panic!("vproc 1, round {round}: {e}"),
                        }
                    };
                    sums.push(sum);
                }
                Outcome::Sum(sums)
            }
        })
        .unwrap();
    match &out[0] {
        Outcome::Limit {
            error,
            cells,
            requested,
            in_use,
            limit,
            after,
        } => {
            assert!(*cells > 1_000, "the limit came after only {cells} cells");
            assert!(
                *limit <= MAX_HEAP,
                "limit {limit} above max-heap {MAX_HEAP}"
            );
            assert!(in_use + requested > *limit || *in_use > *limit, "{error}");
            assert!(*requested > 0);
            assert!(
                error.contains("heap limit") && error.contains(&limit.to_string()),
                "message does not name the limit: {error}"
            );
            assert_eq!(*after, 5_000);
        }
        other => panic!("vproc 0: {other:?}"),
    }
    match &out[1] {
        Outcome::Sum(sums) => {
            let expected: Vec<i64> = (0..60)
                .map(|round| {
                    model_list(round, 1_000)
                        .iter()
                        .map(|(_, p)| *p as i64)
                        .fold(0i64, |a, b| a.wrapping_add(b))
                })
                .collect();
            assert_eq!(sums, &expected);
        }
        other => panic!("vproc 1: {other:?}"),
    }
    // The runtime still works on both vprocs.
    let n = rt
        .run_each(move |s| {
            let l = build_list(s, cons, 1, 2_000).unwrap();
            read_list(s.view(l), cons).unwrap().len()
        })
        .unwrap();
    assert_eq!(n, vec![2_000, 2_000]);
}

#[test]
fn bad_inputs_give_clear_errors() {
    // Descriptors.
    let e = Descriptor::mixed("empty", 0, &[]).unwrap_err();
    assert_eq!(
        e,
        DescriptorError::ZeroSize {
            name: "empty".into()
        }
    );
    assert!(e.to_string().contains("empty"), "{e}");
    let e = Descriptor::mixed("pair", 2, &[0, 5]).unwrap_err();
    assert_eq!(
        e,
        DescriptorError::OffsetOutOfRange {
            name: "pair".into(),
            offset: 5,
            size: 2
        }
    );
    let msg = e.to_string();
    assert!(
        msg.contains("pair") && msg.contains('5') && msg.contains('2'),
        "{msg}"
    );
    let err: Error = e.into();
    assert!(matches!(err.kind(), ErrorKind::Descriptor(_)));

    // Allocation with a descriptor the runtime does not know, or wrong field counts.
    let rt = runtime(2);
    let other = runtime(1);
    let _ = register_cons(&other);
    let _ = register_cons(&other);
    let foreign = register_cons(&other);
    let cons = register_cons(&rt);
    assert_ne!(foreign.id(), cons.id());
    rt.run_on(0, move |s| {
        let e = s
            .alloc_mixed(foreign, &[Handle::NIL, Handle::NIL], &[0])
            .unwrap_err();
        assert!(
            matches!(e.kind(), ErrorKind::UnknownDescriptor(id) if *id == foreign.id()),
            "{e:?}"
        );
        assert!(e.to_string().contains(&foreign.id().to_string()), "{e}");
        let e = s.alloc_mixed(cons, &[Handle::NIL], &[0]).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Misuse(_)), "{e:?}");
        assert!(
            e.to_string().contains("cons"),
            "message does not name the descriptor: {e}"
        );
        let e = s
            .alloc_mixed(cons, &[Handle::NIL, Handle::NIL], &[0, 1])
            .unwrap_err();
        assert!(e.to_string().contains("cons"), "{e}");
        // Reading fields wrongly is an error too.
        let c = s
            .alloc_mixed(cons, &[Handle::int(1), Handle::NIL], &[9])
            .unwrap();
        assert!(s.view(c).try_field(1).is_err());
        assert!(s.view(c).try_field(3).is_err());
        assert!(s.view(c).try_raw(0).is_err());
        assert_eq!(s.view(c).try_raw(1).unwrap(), 9);
        assert!(s.view(Handle::int(1)).try_field(0).is_err());
    })
    .unwrap();

    // Configuration: each message names the setting and the value as given.
    let bad: &[(&str, &str)] = &[
        ("vprocs", "many"),
        ("local-heap", "12Q"),
        ("chunk-size", "lots"),
        ("numa-policy", "far-away"),
        ("verify", "maybe"),
        ("topology", "4y1"),
        ("heap-growth", "fast"),
        ("max-heap", "-5"),
    ];
    for &(setting, value) in bad {
        let e = ConfigBuilder::new()
            .set(setting, value)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.setting, setting, "{e}");
        let msg = e.to_string();
        assert!(
            msg.contains(setting) && msg.contains(value),
            "`{setting}={value}`: {msg}"
        );
        assert!(!e.allowed.is_empty());
    }
    // Values that parse but are outside the setting's own range are
    // refused by set() (issue 16), with the same message build() gives.
    let out_of_range: &[(&str, &str)] = &[
        ("vprocs", "0"),
        ("local-heap", "66000"),
        ("chunk-size", "100K"),
        ("heap-growth", "0.5"),
        ("global-gc-threshold", "1K"),
        ("min-nursery", "1K"),
        ("max-heap", "1K"),
        ("vproc-stack", "4K"),
    ];
    for &(setting, value) in out_of_range {
        let e = ConfigBuilder::new()
            .set(setting, value)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(e.setting, setting, "`{setting}={value}`: {e}");
        let msg = e.to_string();
        assert!(
            msg.contains(setting) && msg.contains(value),
            "`{setting}={value}`: {msg}"
        );
    }
    // Values outside a range that depends on another setting are refused
    // by build().
    let cross: &[(&str, &str)] = &[
        ("large-object", "1M"),
        ("min-nursery", "8M"),
        ("global-gc-threshold", "512K"),
        ("max-heap", "256K"),
    ];
    for &(setting, value) in cross {
        let mut b = ConfigBuilder::new();
        b.set(setting, value)
            .unwrap_or_else(|e| panic!("`{setting}={value}` is in its own range: {e}"));
        let e = b.build().unwrap_err();
        assert_eq!(e.setting, setting, "`{setting}={value}`: {e}");
        let msg = e.to_string();
        assert!(
            msg.contains(setting) && msg.contains(value),
            "`{setting}={value}`: {msg}"
        );
    }
    let e = ConfigBuilder::new()
        .set("no-such-setting", "1")
        .map(|_| ())
        .unwrap_err();
    assert!(e.to_string().contains("no-such-setting"), "{e}");

    // Vprocs out of range.
    let e = rt.run_on(2, |_| ()).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Misuse(_)), "{e:?}");
    assert!(e.to_string().contains('2'), "{e}");

    // A panicking job is an error; the vproc and the runtime carry on.
    let e = rt
        .run_on(1, move |s| {
            let _l = build_list(s, cons, 1, 1_000).unwrap();
            panic!("deliberate failure in a job");
        })
        .unwrap_err();
    match e.kind() {
        ErrorKind::TaskPanicked { vproc, message } => {
            assert_eq!(*vproc, 1);
            assert!(message.contains("deliberate failure"), "{message}");
        }
        other => panic!("expected TaskPanicked, got {other:?}"),
    }
    assert!(e.to_string().contains("vproc 1"), "{e}");
    let e = rt
        .run_each(move |s| {
            if s.vproc() == 0 {
                panic!("only on 0")
            } else {
                1
            }
        })
        .unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::TaskPanicked { vproc: 0, .. }),
        "{e:?}"
    );
    let r = rt
        .run_each(move |s| {
            assert_eq!(s.roots_in_use(), 0, "roots of the failed job were cleared");
            let l = build_list(s, cons, 2, 3_000).unwrap();
            s.collect_global().unwrap();
            check_list(s, l, cons, &model_list(2, 3_000), "after a panic");
            s.vproc()
        })
        .unwrap();
    assert_eq!(r, vec![0, 1]);
}

/// A job that waits for jobs would deadlock (its vproc could not run the
/// job it waits for): the runtime refuses with an error naming the call.
#[test]
fn waiting_for_a_job_from_a_job_is_refused() {
    let rt = std::sync::Arc::new(runtime(2));
    let inner = rt.clone();
    let err = rt
        .run_on(0, move |_s| {
            inner
                .run_on(1, |s| s.vproc())
                .map(|_| ())
                .unwrap_err()
                .to_string()
        })
        .unwrap();
    assert!(
        err.contains("run_on") && err.contains("vproc thread"),
        "{err}"
    );
    let inner = rt.clone();
    let err = rt
        .run_on(1, move |_s| {
            inner.run_each(|s| s.vproc()).unwrap_err().to_string()
        })
        .unwrap();
    assert!(err.contains("run_each"), "{err}");
    // The runtime is still usable from outside.
    assert_eq!(rt.run_each(|s| s.vproc()).unwrap(), vec![0, 1]);
}

/// Handles to the runtime dropped while another thread's job runs (one of
/// them inside the job): the job finishes, and the runtime shuts down when
/// the last handle goes, without a deadlock.
#[test]
fn dropping_handles_while_a_job_runs_is_safe() {
    let rt = std::sync::Arc::new(runtime(2));
    let (tx, rx) = std::sync::mpsc::channel();
    let inner = rt.clone();
    // Submit a job that holds the last handle, then drop ours.
    std::thread::spawn(move || {
        let keep = inner.clone();
        let r = inner.run_on(0, move |s| {
            drop(keep);
            s.vproc()
        });
        tx.send(r.is_ok()).unwrap();
    });
    drop(rt);
    assert!(rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap());
}

/// With `heap-growth 1.0` the trigger after a global collection equals the
/// live bytes, while the chunks in use are more (chunk rounding): an
/// allocation must still make progress (one global collection per slow
/// path, a trigger above the heap in use), never collect in a loop.
#[test]
fn no_livelock_when_the_heap_stays_over_its_trigger() {
    let rt = numagc::Runtime::new(
        test_config(1)
            .heap_growth(1.0)
            .global_gc_threshold(CHUNK)
            .build()
            .unwrap(),
    )
    .unwrap();
    let cons = register_cons(&rt);
    let (tx, rx) = std::sync::mpsc::channel();
    let rt = std::sync::Arc::new(rt);
    let r = rt.clone();
    std::thread::spawn(move || {
        let out = r.run_on(0, move |s| -> numagc::Result<usize> {
            // About 3 MB of live global data, far above the 64 KiB threshold.
            let live = promoted_list(s, cons, 1, 20_000)?;
            for _ in 0..200 {
                garbage(s, cons, 2_000);
            }
            check_list(s, live, cons, &model_list(1, 20_000), "live list");
            Ok(s.vproc())
        });
        let _ = tx.send(out.map(|r| r.is_ok()));
    });
    let done = rx.recv_timeout(std::time::Duration::from_secs(60));
    assert!(
        matches!(done, Ok(Ok(true))),
        "the allocation loop did not finish: {done:?}"
    );
    assert!(
        rt.global_collections() < 5_000,
        "{} global collections",
        rt.global_collections()
    );
}

/// A global root names a slot of its own runtime's table: used in a job of
/// another runtime it is refused, and neither runtime's roots change.
#[test]
fn a_global_root_of_another_runtime_is_refused() {
    let a = runtime(1);
    let b = runtime(1);
    let ra = std::sync::Arc::new(
        a.run_on(0, |s| {
            let v = s.alloc_vector(&[Handle::int(11)]).unwrap();
            s.global_root(v).unwrap()
        })
        .unwrap(),
    );
    let rb = std::sync::Arc::new(
        b.run_on(0, |s| {
            let v = s.alloc_vector(&[Handle::int(22)]).unwrap();
            s.global_root(v).unwrap()
        })
        .unwrap(),
    );
    let (ra2, rb2) = (ra.clone(), rb.clone());
    let (get, set) = b
        .run_on(0, move |s| {
            let get = s.get_global(&ra2).map(|_| ()).unwrap_err();
            let set = s.set_global(&ra2, Handle::int(5)).unwrap_err();
            // b's own root is untouched.
            let mine = s.get_global(&rb2).unwrap();
            assert_eq!(s.view(mine).field(0).as_int(), Some(22));
            (get, set)
        })
        .unwrap();
    for (e, what) in [(get, "get_global"), (set, "set_global")] {
        assert!(
            matches!(e.kind(), ErrorKind::Misuse(m) if m.contains("another runtime") && m.contains(what)),
            "{e}"
        );
    }
    let ra3 = ra.clone();
    a.run_on(0, move |s| {
        let v = s.get_global(&ra3).unwrap();
        assert_eq!(s.view(v).field(0).as_int(), Some(11));
    })
    .unwrap();
}
