//! Threads and synchronous channels (issue 3, item 4 and 5): rendezvous
//! between jobs and threads, choice over several channels, promotion of sent
//! values, threads waiting through global collections, parked and blocked
//! vprocs, and the errors. The verifier runs after every collection
//! (common::test_config).

mod common;

use common::*;
use numagc::{Case, Channel, Error, ErrorKind, Handle, Next, Result, Scope, Sel};
use std::time::{Duration, Instant};

/// Waits until `cond` holds (threads run on vproc threads); fails after 20 s.
fn eventually(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A thread that sends lists `first..n` (list i is `build_list(i, 12)`) on `ch`.
fn producer<'i>(
    s: &mut Scope<'i>,
    ch: Channel,
    cons: numagc::DescId,
    i: i64,
    n: i64,
) -> Result<Next<'i>> {
    if i == n {
        return Ok(Next::exit());
    }
    let list = build_list(s, cons, i, 12)?;
    let next = ch.clone();
    Ok(Next::send(&ch, list, &[], move |s, _| {
        producer(s, next, cons, i + 1, n)
    }))
}

#[test]
fn a_job_receives_from_a_thread_on_one_vproc() {
    // One vproc: the job's blocking recv must run the producer thread while
    // it waits, and the producer's loop must not grow the stack.
    let rt = runtime(1);
    let cons = register_cons(&rt);
    let ch = rt.channel();
    let n = 3_000;
    rt.run_on(0, move |s| {
        let c = ch.clone();
        s.spawn(&[], move |s, _| producer(s, c, cons, 0, n))
            .unwrap();
        for i in 0..n {
            s.scope(|s| {
                let l = s.recv(&ch).unwrap();
                assert!(!s.is_local(l), "a value received is global");
                check_list(s, l, cons, &model_list(i, 12), "received list");
            });
        }
    })
    .unwrap();
    eventually("the producer to exit", || {
        rt.stats().total.threads_finished == 1
    });
    let t = rt.stats().total;
    assert_eq!(t.threads_spawned, 1);
    assert!(t.minor.count > 0, "the producer's allocation collected");
    assert_eq!(rt.global_roots(), 0, "nothing stays parked");
}

#[test]
fn jobs_on_two_vprocs_rendezvous() {
    let rt = std::sync::Arc::new(runtime(2));
    let cons = register_cons(&rt);
    let ch = rt.channel();
    let (rt2, ch2) = (rt.clone(), ch.clone());
    let receiver = std::thread::spawn(move || {
        rt2.run_on(1, move |s| {
            for i in 0..50 {
                s.scope(|s| {
                    let l = s.recv(&ch2).unwrap();
                    check_list(s, l, cons, &model_list(i, 40), "list from vproc 0");
                    garbage(s, cons, 2_000);
                });
            }
        })
    });
    rt.run_on(0, move |s| {
        for i in 0..50 {
            s.scope(|s| {
                let l = build_list(s, cons, i, 40).unwrap();
                assert_eq!(s.is_local(l), split_plan());
                s.send(&ch, l).unwrap();
                check_list(
                    s,
                    l,
                    cons,
                    &model_list(i, 40),
                    "the sender's list after sending",
                );
            });
        }
    })
    .unwrap();
    receiver.join().unwrap().unwrap();
    let t = rt.stats().total;
    assert_eq!(t.rendezvous, 50, "each send met one receive");
    // Sent values are promoted on the split plan, shared as they are on the shared one.
    assert_eq!(t.bytes_promoted > 0, split_plan());
}

/// Ping-pong: the counter goes back and forth `rounds` times between two
/// threads; the last one reports to the job.
fn pinger<'i>(
    s: &mut Scope<'i>,
    env: &[Handle<'i>],
    to: Channel,
    from: Channel,
    done: Channel,
    left: i64,
) -> Result<Next<'i>> {
    let _ = (s, env);
    let f0 = from.clone();
    Ok(Next::recv(&f0, &[], move |s, _, v| {
        let x = s.as_int(v).expect("an int");
        if left == 0 {
            return Ok(Next::send(&done, Handle::int(x), &[], |_, _| {
                Ok(Next::exit())
            }));
        }
        let (t, f) = (to.clone(), from.clone());
        Ok(Next::send(&to, Handle::int(x + 1), &[], move |s, env| {
            pinger(s, env, t, f, done, left - 1)
        }))
    }))
}

#[test]
fn ping_pong_between_threads() {
    for vprocs in [1, 2] {
        let rt = runtime(vprocs);
        let (a, b, done) = (rt.channel(), rt.channel(), rt.channel());
        let rounds = 2_000;
        let total = rt
            .run_on(0, move |s| {
                let (a1, b1, d1) = (a.clone(), b.clone(), done.clone());
                s.spawn_on(0, &[], move |s, env| pinger(s, env, b1, a1, d1, rounds))
                    .unwrap();
                let (a2, b2, d2) = (a.clone(), b.clone(), done.clone());
                s.spawn_on(vprocs - 1, &[], move |s, env| {
                    pinger(s, env, a2, b2, d2, rounds)
                })
                .unwrap();
                s.send(&a, Handle::int(0)).unwrap();
                let x = s.recv(&done).unwrap();
                s.as_int(x).unwrap()
            })
            .unwrap();
        // The first thread to reach left == 0 has seen 2 * rounds increments.
        assert_eq!(total, 2 * rounds, "{vprocs} vprocs");
        assert!(rt.take_thread_errors().is_empty());
    }
}

/// A thread that takes `3 * per` values from a choice over three channels
/// and sends back, for each channel, the list of what came through it.
fn collector<'i>(
    s: &mut Scope<'i>,
    env: &[Handle<'i>],
    chans: [Channel; 3],
    out: Channel,
    got: Vec<Vec<i64>>,
    left: usize,
) -> Result<Next<'i>> {
    let _ = s;
    if left == 0 {
        return Ok(Next::send(&out, Handle::int(encode(&got)), env, |_, _| {
            Ok(Next::exit())
        }));
    }
    let cases = (0..3)
        .map(|k| {
            let (chans2, out2, mut got2) = (chans.clone(), out.clone(), got.clone());
            Case::recv(&chans[k], move |s, env, v| {
                got2[k].push(s.view(v).field(0).as_int().expect("a boxed int"));
                collector(s, env, chans2, out2, got2, left - 1)
            })
        })
        .collect();
    Ok(Next::select(env, cases))
}

/// A checksum of the per-channel sequences that depends on their order.
fn encode(got: &[Vec<i64>]) -> i64 {
    let mut h = 0i64;
    for (k, xs) in got.iter().enumerate() {
        for &x in xs {
            h = h.wrapping_mul(1_000_003).wrapping_add(x * 7 + k as i64);
        }
        h = h.wrapping_mul(31).wrapping_add(xs.len() as i64);
    }
    h >> 2 // fits an immediate (63 bits)
}

/// A thread that sends `per` boxed ints `base + i` on `ch`.
fn sender<'i>(s: &mut Scope<'i>, ch: Channel, base: i64, i: i64, per: i64) -> Result<Next<'i>> {
    if i == per {
        return Ok(Next::exit());
    }
    let boxed = s.alloc_vector(&[Handle::int(base + i)])?;
    let c = ch.clone();
    Ok(Next::send(&ch, boxed, &[], move |s, _| {
        sender(s, c, base, i + 1, per)
    }))
}

#[test]
fn a_choice_over_three_channels_takes_each_value_once_in_order() {
    for vprocs in [1, 2] {
        let rt = runtime(vprocs);
        let chans = [rt.channel(), rt.channel(), rt.channel()];
        let out = rt.channel();
        let per = 300i64;
        let got = rt
            .run_on(0, move |s| {
                let (c, o) = (chans.clone(), out.clone());
                s.spawn(&[], move |s, env| {
                    collector(s, env, c, o, vec![Vec::new(); 3], 3 * per as usize)
                })
                .unwrap();
                for (k, ch) in chans.iter().enumerate() {
                    let ch = ch.clone();
                    s.spawn_on(k % vprocs, &[], move |s, _| {
                        sender(s, ch, 1_000 * k as i64, 0, per)
                    })
                    .unwrap();
                }
                let h = s.recv(&out).unwrap();
                s.as_int(h).unwrap()
            })
            .unwrap();
        let expected: Vec<Vec<i64>> = (0..3)
            .map(|k| (0..per).map(|i| 1_000 * k + i).collect())
            .collect();
        assert_eq!(
            got,
            encode(&expected),
            "{vprocs} vprocs: each channel's values once, in order"
        );
        // The senders' last continuations (exit) may still be running.
        eventually("the collector and the three senders to finish", || {
            rt.stats().total.threads_finished == 4
        });
        assert_eq!(rt.stats().total.rendezvous, 3 * per as u64 + 1);
    }
}

#[test]
fn a_direct_select_completes_exactly_one_case() {
    let rt = runtime(2);
    let (a, b, report) = (rt.channel(), rt.channel(), rt.channel());
    let (a1, b1, r1) = (a.clone(), b.clone(), report.clone());
    let results = rt
        .run_on(0, move |s| {
            // A thread that waits to receive on `a` and reports what it got.
            let (a2, r2) = (a1.clone(), r1.clone());
            s.spawn_on(1, &[], move |_, _| {
                Ok(Next::recv(&a2, &[], move |_, _, v| {
                    Ok(Next::send(&r2, v, &[], |_, _| Ok(Next::exit())))
                }))
            })
            .unwrap();
            eventually_in(s, || a1.waiting() == 1);
            // Send on `a` or receive on `b`: only the send can complete.
            let v = s.alloc_vector(&[Handle::int(41)]).unwrap();
            let (case, got) = s.select(&[Sel::Recv(&b1), Sel::Send(&a1, v)]).unwrap();
            assert_eq!(case, 1);
            assert_eq!(s.as_int(got), Some(0), "a send case returns NIL");
            let echoed = s.recv(&r1).unwrap();
            let x = s.view(echoed).field(0).as_int().unwrap();
            // The receive case on `b` left a stale entry, not a live offer: a
            // sender on `b` must wait for a real receiver.
            Ok::<_, Error>((x, b1.waiting()))
        })
        .unwrap()
        .unwrap();
    assert_eq!(results.0, 41);
    assert_eq!(
        results.1, 0,
        "the select completed at once: nothing was queued on b"
    );
    // A sender on `b` now waits: nothing is there to take it.
    let b2 = b.clone();
    rt.run_on(1, move |s| {
        s.spawn(&[], move |_, _| {
            Ok(Next::send(
                &b2,
                Handle::int(5),
                &[],
                |_, _| Ok(Next::exit()),
            ))
        })
    })
    .unwrap()
    .unwrap();
    eventually("the sender to queue on b", || b.waiting() == 1);
    let x = rt
        .run_on(0, move |s| s.recv(&b).map(|h| s.as_int(h)))
        .unwrap()
        .unwrap();
    assert_eq!(x, Some(5));
    drop(report);
}

/// Polls `cond` from inside a job, keeping the vproc's duties.
fn eventually_in(s: &mut Scope<'_>, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out");
        s.poll();
        std::thread::yield_now();
    }
}

#[test]
fn blocked_threads_and_a_blocked_vproc_survive_global_collections() {
    // Vproc 1 blocks in a job's recv; threads wait on a channel with lists
    // in their environments; vproc 0 collects globally several times, then
    // releases them all. Everything must come through intact.
    let rt = std::sync::Arc::new(runtime(2));
    let cons = register_cons(&rt);
    let (ch, wake, back) = (rt.channel(), rt.channel(), rt.channel());
    let waiters = 6i64;
    // Threads on vproc 1, each holding list i in its environment.
    let (w1, b1) = (wake.clone(), back.clone());
    rt.run_on(1, move |s| {
        for i in 0..waiters {
            let (w, b) = (w1.clone(), b1.clone());
            let l = build_list(s, cons, 100 + i, 60).unwrap();
            s.spawn(&[l], move |_, env| {
                Ok(Next::recv(&w, env, move |s, env, v| {
                    // Return the list from the environment, tagged.
                    let tag = s.as_int(v).unwrap();
                    let pair = s.alloc_vector(&[Handle::int(tag), env[0]])?;
                    Ok(Next::send(&b, pair, &[], |_, _| Ok(Next::exit())))
                }))
            })
            .unwrap();
        }
    })
    .unwrap();
    eventually("the threads to block", || {
        wake.waiting() == waiters as usize
    });
    let (rt2, ch2) = (rt.clone(), ch.clone());
    let blocked = std::thread::spawn(move || {
        rt2.run_on(1, move |s| {
            let l = s.recv(&ch2).unwrap();
            check_list(
                s,
                l,
                cons,
                &model_list(7, 500),
                "received after collections",
            );
        })
    });
    eventually("vproc 1 to block in recv", || ch.waiting() == 1);
    let before = rt.global_collections();
    let ch3 = ch.clone();
    rt.run_on(0, move |s| {
        let keep = build_list(s, cons, 7, 500).unwrap();
        for _ in 0..3 {
            s.collect_global().unwrap();
            garbage(s, cons, 20_000);
        }
        s.send(&ch3, keep).unwrap();
    })
    .unwrap();
    blocked.join().unwrap().unwrap();
    assert!(
        rt.global_collections() >= before + 3,
        "global collections ran while vproc 1 was blocked"
    );
    // Wake the threads; their lists crossed the collections in global roots.
    let (w2, b2) = (wake.clone(), back.clone());
    let seen = rt
        .run_on(0, move |s| {
            let mut seen = Vec::new();
            for t in 0..waiters {
                s.send(&w2, Handle::int(t)).unwrap();
                s.scope(|s| {
                    let pair = s.recv(&b2).unwrap();
                    let v = s.view(pair);
                    let list = s.handle(v.field(1));
                    let got = read_list(s.view(list), cons).unwrap();
                    let seed = (100..100 + waiters)
                        .find(|&i| got == model_list(i, 60))
                        .expect("an intact list");
                    seen.push(seed);
                });
            }
            seen.sort();
            seen
        })
        .unwrap();
    assert_eq!(
        seen,
        (100..100 + waiters).collect::<Vec<_>>(),
        "each thread's list once"
    );
    eventually("the threads to exit", || {
        rt.stats().total.threads_finished == waiters as u64
    });
    assert_eq!(rt.global_roots(), 0);
}

#[test]
fn threads_use_fork_join_inside() {
    // A thread's body runs par2 (nested parallelism inside a thread).
    let rt = runtime(2);
    let cell = rt
        .register(numagc::Descriptor::mixed("cell", 1, &[0]).unwrap())
        .unwrap();
    let out = rt.channel();
    let o = out.clone();
    let r = rt
        .run_on(0, move |s| {
            for n in [18i64, 19, 20] {
                let o = o.clone();
                s.spawn(&[], move |s, _| {
                    let v = sum_range(s, cell, 0, n * 1000)?;
                    Ok(Next::send(&o, v, &[], |_, _| Ok(Next::exit())))
                })
                .unwrap();
            }
            let mut got: Vec<i64> = (0..3)
                .map(|_| {
                    s.scope(|s| {
                        s.recv(&out)
                            .map(|h| s.view(h).field(0).as_int().unwrap())
                            .unwrap()
                    })
                })
                .collect();
            got.sort();
            got
        })
        .unwrap();
    let expect: Vec<i64> = [18i64, 19, 20]
        .iter()
        .map(|n| (0..n * 1000).sum())
        .collect();
    assert_eq!(r, expect);
}

fn sum_range<'s>(s: &mut Scope<'s>, cell: numagc::DescId, lo: i64, hi: i64) -> Result<Handle<'s>> {
    if hi - lo <= 500 {
        return s.alloc_mixed(cell, &[Handle::int((lo..hi).sum())], &[]);
    }
    let mid = (lo + hi) / 2;
    let (x, y) = s.par2(
        &[],
        move |s, _| sum_range(s, cell, lo, mid),
        move |s, _| sum_range(s, cell, mid, hi),
    )?;
    let sum = s.view(x).field(0).as_int().unwrap() + s.view(y).field(0).as_int().unwrap();
    s.alloc_mixed(cell, &[Handle::int(sum)], &[])
}

#[test]
fn misuse_is_an_error_and_failing_threads_do_not_stop_others() {
    let rt = runtime(2);
    let other = runtime(1);
    let foreign = other.channel();
    let ch = rt.channel();
    let (c1, f1) = (ch.clone(), foreign.clone());
    let errs = rt
        .run_on(0, move |s| {
            let no_cases = s.select(&[]).unwrap_err();
            let foreign_recv = s.recv(&f1).unwrap_err();
            let bad_vproc = s.spawn_on(9, &[], |_, _| Ok(Next::exit())).unwrap_err();
            // A thread that blocks in direct style gets an error, one that
            // panics is caught; a third thread still runs.
            let c = c1.clone();
            s.spawn(&[], move |s, _| {
                s.recv(&c)?;
                Ok(Next::exit())
            })
            .unwrap();
            s.spawn(&[], |_, _| panic!("thread body panicked")).unwrap();
            let c = c1.clone();
            s.spawn(&[], move |_, _| {
                Ok(Next::send(&c, Handle::int(3), &[], |_, _| Ok(Next::exit())))
            })
            .unwrap();
            let x = s.recv(&c1).unwrap();
            (no_cases, foreign_recv, bad_vproc, s.as_int(x))
        })
        .unwrap();
    for (e, what) in [
        (&errs.0, "no cases"),
        (&errs.1, "another runtime"),
        (&errs.2, "does not exist"),
    ] {
        assert!(
            matches!(e.kind(), ErrorKind::Misuse(m) if m.contains(what)),
            "{e:?} should mention {what}"
        );
    }
    assert_eq!(errs.3, Some(3));
    eventually("two threads to fail", || {
        rt.stats().total.threads_failed == 2
    });
    let failures = rt.take_thread_errors();
    assert_eq!(failures.len(), 2);
    assert!(
        failures.iter().any(
            |e| matches!(e.kind(), ErrorKind::Misuse(m) if m.contains("inside a spawned thread"))
        ),
        "{failures:?}"
    );
    assert!(failures.iter().any(|e| matches!(e.kind(), ErrorKind::TaskPanicked { message, .. } if message.contains("thread body panicked"))));
    assert!(rt.take_thread_errors().is_empty(), "taken once");
    drop(foreign);
}

#[test]
fn dropping_a_channel_releases_the_threads_waiting_on_it() {
    let rt = runtime(1);
    let cons = register_cons(&rt);
    let ch = rt.channel();
    let c = ch.clone();
    rt.run_on(0, move |s| {
        for i in 0..10 {
            let l = build_list(s, cons, i, 20).unwrap();
            let c2 = c.clone();
            s.spawn(&[l], move |_, env| {
                Ok(Next::recv(&c2, env, |_, _, _| Ok(Next::exit())))
            })
            .unwrap();
        }
    })
    .unwrap();
    eventually("the threads to block", || ch.waiting() == 10);
    assert_eq!(
        rt.global_roots(),
        10,
        "each blocked thread's environment is parked"
    );
    // The test holds the last handle of the channel: dropping it frees the
    // queue, and with it the parked environments.
    drop(ch);
    eventually("the environments to be released", || rt.global_roots() == 0);
}
