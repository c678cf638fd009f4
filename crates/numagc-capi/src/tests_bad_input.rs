//! Bad input read from C memory (issue 16): enum and flag fields with values
//! that are none of their constants, and counts far past any limit. Each is
//! refused with a status code and a message naming the field or the count
//! and what is accepted, before anything is read or sized by it; the
//! process never aborts, nothing is queued or leaked, and the runtime keeps
//! working afterwards (each test ends with good operations).

use crate::numagc_dir::*;
use crate::numagc_status::*;
use crate::tests::{
    alloc_mixed, build_list, check, enter, field, get_int, handles, last, leave, ok, sum_list, Rt,
    OK,
};
use crate::tests_parallel::*;
use crate::*;
use std::ffi::{c_int, c_void};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

/// Values of `dir` that are no `numagc_dir`.
const BAD_DIRS: [c_int; 5] = [7, -1, 2, c_int::MIN, c_int::MAX];

/// Counts far past every limit: a buffer of that many would abort the
/// process, a slice of `usize::MAX` elements is undefined behaviour.
const HUGE: [usize; 2] = [1 << 40, usize::MAX];

#[track_caller]
fn refused(rc: c_int, want: numagc_status, texts: &[&str]) {
    check(rc, want);
    let m = last();
    for t in texts {
        assert!(m.contains(t), "message {m:?} lacks {t:?}");
    }
}

/// The number of live handles and open frames of the running callback.
fn live(s: *mut numagc_scope) -> (usize, usize) {
    handles(s)
}

#[test]
fn a_select_case_with_a_dir_out_of_range_is_refused_and_queues_nothing() {
    let rt = Rt::new(1, &[]);
    let (ch, freed) = (channel(&rt), channel(&rt));
    ok(numagc_channel_free(freed.p()));
    ok(rt.run(0, |s| {
        let before = live(s);
        for dir in BAD_DIRS {
            let (mut i, mut v) = (9, 9);
            // The bad case comes first: it is refused before the freed
            // channel of the second case is looked at.
            let cases = [
                numagc_sel {
                    channel: ch.p(),
                    dir,
                    value: NUMAGC_NIL,
                },
                numagc_sel {
                    channel: freed.p(),
                    dir: NUMAGC_SEND as c_int,
                    value: NUMAGC_NIL,
                },
            ];
            // SAFETY: two cases and valid outputs.
            let rc = unsafe { numagc_select(s, cases.as_ptr(), 2, &mut i, &mut v) };
            refused(
                rc,
                NUMAGC_ERR_INVALID_ARGUMENT,
                &[
                    &format!("cases[0].dir = {dir}"),
                    "NUMAGC_RECV (0) or NUMAGC_SEND (1)",
                ],
            );
            assert_eq!(v, 0, "a failed select leaves 0 in its value output");
            // A bad case after good ones, and alone.
            let cases = [
                numagc_sel {
                    channel: ch.p(),
                    dir: NUMAGC_RECV as c_int,
                    value: 0,
                },
                numagc_sel {
                    channel: ch.p(),
                    dir,
                    value: NUMAGC_NIL,
                },
            ];
            // SAFETY: two cases and valid outputs.
            let rc = unsafe { numagc_select(s, cases.as_ptr(), 2, &mut i, &mut v) };
            refused(rc, NUMAGC_ERR_INVALID_ARGUMENT, &["cases[1].dir"]);
            // SAFETY: one case and valid outputs.
            let rc = unsafe { numagc_select(s, cases[1..].as_ptr(), 1, &mut i, &mut v) };
            refused(rc, NUMAGC_ERR_INVALID_ARGUMENT, &["cases[0].dir"]);
            assert_eq!(waiting(ch), 0, "a refused select queues nothing");
        }
        assert_eq!(live(s), before, "a refused select makes no handles");
        // Still working: a thread sends, a good select receives.
        spawn_on(s, 0, &[numagc_int(0)], sender(ch, 40, 1));
        let cases = [numagc_sel {
            channel: ch.p(),
            dir: NUMAGC_RECV as c_int,
            value: 0,
        }];
        let f = enter(s);
        let (mut i, mut v) = (9, 0);
        // SAFETY: one case and valid outputs.
        ok(unsafe { numagc_select(s, cases.as_ptr(), 1, &mut i, &mut v) });
        assert_eq!((i, unbox(s, v)), (0, 40));
        ok(leave(s, f));
        OK
    }));
    wait_stat(&rt, "threads_finished", 1);
    assert_eq!(take_errors(&rt), Vec::<String>::new());
    ok(numagc_channel_free(ch.p()));
    no_body_panics();
}

#[test]
fn a_thread_case_with_a_dir_out_of_range_is_refused() {
    let rt = Rt::new(1, &[]);
    let ch = channel(&rt);
    let results: Arc<Mutex<Vec<(c_int, String)>>> = Arc::default();
    let r = results.clone();
    let body = code(move |_, _, _, next, me| {
        for dir in BAD_DIRS {
            let case = numagc_case {
                channel: ch.p(),
                dir,
                value: NUMAGC_NIL,
                k: K,
                userdata: me,
            };
            // SAFETY: one case; no environment.
            let rc = unsafe { numagc_next_select(next, null(), 0, &case, 1) };
            r.lock().unwrap().push((rc, last()));
            let good = numagc_case {
                dir: NUMAGC_SEND as c_int,
                ..case
            };
            // SAFETY: two cases; no environment.
            let rc = unsafe { numagc_next_select(next, null(), 0, [good, case].as_ptr(), 2) };
            r.lock().unwrap().push((rc, last()));
        }
        // The refused calls recorded nothing: the body may still end.
        numagc_next_exit(next)
    });
    ok(rt.run(0, |s| {
        spawn_on(s, 0, &[], body);
        OK
    }));
    wait_stat(&rt, "threads_finished", 1);
    let results = results.lock().unwrap();
    assert_eq!(results.len(), 2 * BAD_DIRS.len());
    for (k, (rc, m)) in results.iter().enumerate() {
        let dir = BAD_DIRS[k / 2];
        assert_eq!(*rc, NUMAGC_ERR_INVALID_ARGUMENT as c_int, "dir {dir}: {m}");
        let field = format!("cases[{}].dir = {dir}", k % 2);
        assert!(m.contains(&field) && m.contains("NUMAGC_SEND (1)"), "{m}");
    }
    assert_eq!(take_errors(&rt), Vec::<String>::new());
    assert_eq!(waiting(ch), 0, "a refused case queues nothing");
    ok(numagc_channel_free(ch.p()));
    no_body_panics();
}

#[test]
fn register_mixed_refuses_a_flag_out_of_range_and_counts_past_the_size() {
    let rt = Rt::new(1, &[]);
    let mut d = 77;
    // SAFETY: a live runtime, NUL-terminated strings, arrays of at least
    // the lengths read (the counts past them are refused unread).
    unsafe {
        for flag in [2, -1, c_int::MIN, c_int::MAX] {
            let rc =
                numagc_register_mixed(rt.0, c"x".as_ptr(), 2, [1usize].as_ptr(), 1, flag, &mut d);
            refused(
                rc,
                NUMAGC_ERR_INVALID_ARGUMENT,
                &[&format!("`is_mutable` = {flag}"), "0 (false) or 1 (true)"],
            );
            assert_eq!(d, 0);
        }
        for n in HUGE.into_iter().chain([3, (1 << 20) + 1]) {
            let rc =
                numagc_register_mixed(rt.0, c"x".as_ptr(), 2, [0usize, 1].as_ptr(), n, 0, &mut d);
            refused(
                rc,
                NUMAGC_ERR_INVALID_DESCRIPTOR,
                &[&format!("n_offsets = {n}")],
            );
        }
    }
    // 0 and 1 still work, and mean what they say.
    let imm = rt.register("imm", 2, &[1], false);
    let mutable = rt.register("mut", 2, &[1], true);
    ok(rt.run(0, |s| {
        let f = enter(s);
        let a = alloc_mixed(s, imm, &[NUMAGC_NIL], &[5]).unwrap();
        let b = alloc_mixed(s, mutable, &[NUMAGC_NIL], &[5]).unwrap();
        // SAFETY: live handles.
        unsafe {
            check(numagc_set(s, a, 1, numagc_int(3)), NUMAGC_ERR_MISUSE);
            ok(numagc_set(s, b, 1, numagc_int(3)));
        }
        assert_eq!(get_int(field(s, b, 1).unwrap()), 3);
        ok(leave(s, f));
        OK
    }));
}

#[test]
fn enum_and_flag_outputs_are_written_whatever_the_variable_held() {
    let rt = Rt::new(1, &[]);
    ok(rt.run(0, |s| {
        // C variables that hold no valid numagc_kind / bool (uninitialised).
        let mut kind: c_int = 99;
        let mut local: u8 = 0xA5;
        let mut desc = 7;
        let v = boxed(s, 1);
        // SAFETY: outputs of the sizes and alignments of numagc_kind (an
        // int) and bool (a byte), written without being read.
        unsafe {
            ok(numagc_kind_of(
                s,
                v,
                (&mut kind as *mut c_int).cast(),
                &mut desc,
            ));
            ok(numagc_is_local(s, v, (&mut local as *mut u8).cast()));
            check(
                numagc_kind_of(s, v, null_mut(), &mut desc),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(numagc_is_local(s, v, null_mut()), NUMAGC_ERR_NULL_ARGUMENT);
        }
        assert_eq!((kind, desc), (numagc_kind::NUMAGC_KIND_VECTOR as c_int, 0));
        assert_eq!(local, crate::tests::split_plan() as u8);
        OK
    }));
}

#[test]
fn huge_counts_for_mixed_objects_are_refused_before_the_arrays_are_read() {
    let rt = Rt::new(1, &[]);
    let cons = rt.register("cons", 2, &[1], false);
    ok(rt.run(0, |s| {
        let before = live(s);
        let (vals, raws) = ([NUMAGC_NIL], [5u64]);
        for n in HUGE {
            for (nv, nr) in [(n, 1), (1, n), (n, n)] {
                let mut v = 9;
                // SAFETY: arrays of one element; the counts past them are
                // refused before anything is read.
                let rc = unsafe {
                    numagc_alloc_mixed(s, cons, vals.as_ptr(), nv, raws.as_ptr(), nr, &mut v)
                };
                refused(
                    rc,
                    NUMAGC_ERR_MISUSE,
                    &[
                        "descriptor `cons`",
                        "1 value and 1 raw fields",
                        &format!("n_values = {nv} and n_raw = {nr}"),
                    ],
                );
                assert_eq!(v, 0);
            }
        }
        assert_eq!(live(s), before);
        let l = build_list(s, cons, 100);
        assert_eq!(sum_list(s, l).1, 100);
        OK
    }));
}

#[test]
fn huge_lengths_of_new_objects_are_refused_before_anything_is_sized_by_them() {
    let rt = Rt::new(1, &[]);
    ok(rt.run(0, |s| {
        let before = live(s);
        let vals = [NUMAGC_NIL; 2];
        let words = [1u64; 2];
        let xs = [0.5f64; 2];
        for n in HUGE {
            // Past the 48-bit length field: an invalid argument; below it
            // but past the heap limit (64M here): the heap limit.
            let (want, text) = if n as u64 > (1 << 48) - 1 {
                (NUMAGC_ERR_INVALID_ARGUMENT, "the object length limit")
            } else {
                (
                    NUMAGC_ERR_HEAP_LIMIT,
                    "the heap limit (max-heap = 67108864 bytes)",
                )
            };
            let arg = |name: &str| format!("`{name}` = {n}");
            let mut v = 9;
            // SAFETY: arrays of two elements; the counts past them are
            // refused before anything is read.
            unsafe {
                let rc = numagc_alloc_vector(s, vals.as_ptr(), n, &mut v);
                refused(rc, want, &[&arg("n"), text]);
                assert_eq!(v, 0);
                let rc = numagc_alloc_raw(s, words.as_ptr(), n, &mut v);
                refused(rc, want, &[&arg("n"), text]);
                let rc = numagc_alloc_f64s(s, xs.as_ptr(), n, &mut v);
                refused(rc, want, &[&arg("n"), text]);
                let rc = numagc_alloc_vector_filled(s, n, NUMAGC_NIL, &mut v);
                refused(rc, want, &[&arg("len"), text]);
                let rc = numagc_alloc_array(s, n, NUMAGC_NIL, &mut v);
                refused(rc, want, &[&arg("len"), text]);
                assert_eq!(v, 0);
            }
        }
        // Reading more words than an object has, into a small buffer.
        let f = enter(s);
        let mut r = 0;
        // SAFETY: two words and a valid output.
        ok(unsafe { numagc_alloc_raw(s, words.as_ptr(), 2, &mut r) });
        let mut buf = [0u64; 2];
        let mut fbuf = [0f64; 2];
        for n in HUGE {
            // SAFETY: buffers of two; the counts past them are refused
            // before the buffers are formed.
            unsafe {
                let rc = numagc_read_raw(s, r, 0, buf.as_mut_ptr(), n);
                refused(rc, NUMAGC_ERR_MISUSE, &["out of range"]);
                let rc = numagc_read_f64s(s, r, 1, fbuf.as_mut_ptr(), n);
                refused(rc, NUMAGC_ERR_MISUSE, &["out of range"]);
            }
        }
        assert_eq!(buf, [0, 0], "nothing was written");
        ok(leave(s, f));
        assert_eq!(live(s), before);
        // Still working.
        let f = enter(s);
        let mut v = 0;
        let three = [numagc_int(1), numagc_int(2), numagc_int(3)];
        // SAFETY: three values and a valid output.
        ok(unsafe { numagc_alloc_vector(s, three.as_ptr(), 3, &mut v) });
        assert_eq!(get_int(field(s, v, 2).unwrap()), 3);
        ok(leave(s, f));
        OK
    }));
}

#[test]
fn a_huge_par2_environment_is_refused_and_no_task_runs() {
    let rt = Rt::new(2, &[]);
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = |r: &Arc<AtomicUsize>| {
        let r = r.clone();
        task(move |_, env, result| {
            r.fetch_add(1, SeqCst);
            *result = numagc_int(env.len() as i64);
            OK
        })
    };
    let (a, b) = (counted(&ran), counted(&ran));
    ok(rt.run(0, |s| {
        let before = live(s);
        let env = [NUMAGC_NIL];
        for n in HUGE.into_iter().chain([NUMAGC_MAX_ENV + 1]) {
            let (mut x, mut y) = (9, 9);
            // SAFETY: an array of one value; counts past it are refused
            // before it is read; the codes outlive the call.
            let rc = unsafe {
                numagc_par2(
                    s,
                    env.as_ptr(),
                    n,
                    Some(run_task_code),
                    a.ud(),
                    Some(run_task_code),
                    b.ud(),
                    &mut x,
                    &mut y,
                )
            };
            refused(
                rc,
                NUMAGC_ERR_INVALID_ARGUMENT,
                &[&format!("`n` = {n}"), "NUMAGC_MAX_ENV (65536)"],
            );
            assert_eq!((x, y), (0, 0));
        }
        assert_eq!(ran.load(SeqCst), 0, "no task ran");
        assert_eq!(live(s), before);
        // Still working.
        let f = enter(s);
        let (x, y) = par2(s, &[NUMAGC_NIL, NUMAGC_NIL], &a, &b).unwrap();
        assert_eq!((get_int(x), get_int(y)), (2, 2));
        ok(leave(s, f));
        OK
    }));
    assert_eq!(ran.load(SeqCst), 2);
    no_body_panics();
}

#[test]
fn a_huge_spawn_environment_is_refused_and_no_thread_starts() {
    let rt = Rt::new(1, &[]);
    let ran = Arc::new(AtomicUsize::new(0));
    let r = ran.clone();
    let body = code(move |_, env, _, next, _| {
        r.fetch_add(env.len(), SeqCst);
        numagc_next_exit(next)
    });
    ok(rt.run(0, |s| {
        let before = live(s);
        let env = [NUMAGC_NIL];
        for n in HUGE.into_iter().chain([NUMAGC_MAX_ENV + 1]) {
            // SAFETY: an array of one value; counts past it are refused
            // before it is read; `body` lives for ever.
            unsafe {
                let rc = numagc_spawn(s, env.as_ptr(), n, K, body);
                refused(
                    rc,
                    NUMAGC_ERR_INVALID_ARGUMENT,
                    &[&format!("`n` = {n}"), "NUMAGC_MAX_ENV"],
                );
                let rc = numagc_spawn_on(s, 0, env.as_ptr(), n, K, body);
                refused(
                    rc,
                    NUMAGC_ERR_INVALID_ARGUMENT,
                    &[&format!("`n` = {n}"), "NUMAGC_MAX_ENV"],
                );
            }
        }
        assert_eq!(live(s), before);
        // Still working.
        spawn_on(s, 0, &[NUMAGC_NIL, NUMAGC_NIL, NUMAGC_NIL], body);
        OK
    }));
    wait_stat(&rt, "threads_finished", 1);
    let stats = {
        let mut json = null_mut();
        // SAFETY: a valid output; the string is freed once.
        unsafe {
            ok(numagc_stats_json(rt.0, &mut json));
            let v: serde_json::Value =
                serde_json::from_str(std::ffi::CStr::from_ptr(json).to_str().unwrap()).unwrap();
            ok(numagc_string_free(json));
            v
        }
    };
    assert_eq!(
        stats["total"]["threads_finished"].as_u64(),
        Some(1),
        "only the good thread ran"
    );
    assert_eq!(ran.load(SeqCst), 3);
    assert_eq!(take_errors(&rt), Vec::<String>::new());
    no_body_panics();
}

#[test]
fn a_huge_direct_select_is_refused_and_queues_nothing() {
    let rt = Rt::new(1, &[]);
    let ch = channel(&rt);
    ok(rt.run(0, |s| {
        let before = live(s);
        let cases = [numagc_sel {
            channel: ch.p(),
            dir: NUMAGC_RECV as c_int,
            value: 0,
        }];
        for n in HUGE.into_iter().chain([NUMAGC_MAX_CASES + 1]) {
            let (mut i, mut v) = (9, 9);
            // SAFETY: an array of one case; counts past it are refused
            // before it is read.
            let rc = unsafe { numagc_select(s, cases.as_ptr(), n, &mut i, &mut v) };
            refused(
                rc,
                NUMAGC_ERR_INVALID_ARGUMENT,
                &[&format!("`n` = {n}"), "NUMAGC_MAX_CASES (65536)"],
            );
            assert_eq!(v, 0);
        }
        assert_eq!(waiting(ch), 0);
        assert_eq!(live(s), before);
        // Still working.
        spawn_on(s, 0, &[numagc_int(0)], sender(ch, 7, 1));
        let f = enter(s);
        assert_eq!(unbox(s, recv(s, ch)), 7);
        ok(leave(s, f));
        OK
    }));
    wait_stat(&rt, "threads_finished", 1);
    assert_eq!(take_errors(&rt), Vec::<String>::new());
    ok(numagc_channel_free(ch.p()));
    no_body_panics();
}

/// A refused call of a thread step: which, the count, its code and message.
type Refusal = (&'static str, usize, c_int, String);

#[test]
fn huge_counts_in_a_thread_step_are_refused_and_the_step_may_go_on() {
    let rt = Rt::new(1, &[]);
    let ch = channel(&rt);
    let results: Arc<Mutex<Vec<Refusal>>> = Arc::default();
    let r = results.clone();
    let done = Arc::new(AtomicI32::new(-1));
    let d = done.clone();
    let fin = code(move |_, env, _, next, _| {
        d.store(env.len() as i32, SeqCst);
        numagc_next_exit(next)
    });
    let fin_ud = fin as usize;
    let body = code(move |_, env, _, next, me| {
        let case = numagc_case {
            channel: ch.p(),
            dir: NUMAGC_RECV as c_int,
            value: 0,
            k: K,
            userdata: me,
        };
        for n in HUGE {
            // SAFETY: arrays of one element; counts past them are refused
            // before they are read.
            unsafe {
                let rc = numagc_next_yield(next, env.as_ptr(), n, K, me);
                r.lock().unwrap().push(("yield env", n, rc, last()));
                let rc = numagc_next_select(next, env.as_ptr(), 1, &case, n);
                r.lock().unwrap().push(("select cases", n, rc, last()));
                let rc = numagc_next_select(next, env.as_ptr(), n, &case, 1);
                r.lock().unwrap().push(("select env", n, rc, last()));
                let rc = numagc_next_recv(next, ch.p(), env.as_ptr(), n, K, me);
                r.lock().unwrap().push(("recv env", n, rc, last()));
            }
        }
        // Nothing was recorded: the step goes on with a good yield.
        // SAFETY: the environment of this step.
        unsafe { numagc_next_yield(next, env.as_ptr(), env.len(), K, fin_ud as *mut c_void) }
    });
    ok(rt.run(0, |s| {
        spawn_on(s, 0, &[NUMAGC_NIL], body);
        OK
    }));
    wait_stat(&rt, "threads_finished", 1);
    assert_eq!(done.load(SeqCst), 1, "the continuation got the environment");
    let results = results.lock().unwrap();
    assert_eq!(results.len(), 4 * HUGE.len());
    for (what, n, rc, m) in results.iter() {
        assert_eq!(*rc, NUMAGC_ERR_INVALID_ARGUMENT as c_int, "{what} {n}: {m}");
        let limit = if *what == "select cases" {
            "NUMAGC_MAX_CASES"
        } else {
            "NUMAGC_MAX_ENV"
        };
        assert!(
            m.contains(&format!("= {n}")) && m.contains(limit),
            "{what}: {m}"
        );
    }
    assert_eq!(take_errors(&rt), Vec::<String>::new());
    assert_eq!(waiting(ch), 0);
    ok(numagc_channel_free(ch.p()));
    no_body_panics();
}
