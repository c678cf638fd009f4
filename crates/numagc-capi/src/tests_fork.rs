//! Rust-side tests of `numagc_fork`, the fork of compiled code on words,
//! called as C would call it: tasks are `extern "C"` functions of this
//! file on the mutator record, allocating through the slow path.

use crate::numagc_status::*;
use crate::tests::*;
use crate::*;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicI64, Ordering::SeqCst};

/// The header word of a box of descriptor `d` (`numagc_inline_header`).
fn box_header(d: numagc_desc) -> u64 {
    (1 << 16) | ((d as u64) << 1) | 1
}

/// Tasks' shared parameters (userdata): the box header and `n`'s delta.
struct Fib {
    header: u64,
    delta: i64,
}

const CUTOFF: i64 = 8;

/// A task and its userdata.
type Side = (numagc_word_task_fn, *mut c_void);

/// `numagc_fork(m, env, a, b)` as a status and the two outputs.
fn fork_raw(m: *mut numagc_mutator, env: &[u64], a: Side, b: Side) -> (c_int, u64, u64) {
    let (mut x, mut y) = (7, 7);
    // SAFETY: `env` of its length, userdata that outlives the call (the
    // callers'), valid outputs.
    let rc = unsafe {
        numagc_fork(
            m,
            env.as_ptr(),
            env.len(),
            a.0,
            a.1,
            b.0,
            b.1,
            &mut x,
            &mut y,
        )
    };
    (rc, x, y)
}

/// A box holding `x` (the slow path allocates; garbage boxes make
/// collections happen).
fn boxed(m: *mut numagc_mutator, header: u64, x: i64) -> Result<u64, c_int> {
    let mut b = 0;
    // SAFETY: a valid output; the record is the running vproc's.
    let rc = unsafe { numagc_alloc_slow(m, header, 1, &mut b) };
    if rc != OK {
        return Err(rc);
    }
    // SAFETY: `b` is a fresh box with one field.
    unsafe { *((b + 8) as *mut u64) = ((x as u64) << 1) | 1 };
    Ok(b)
}

fn unbox(b: u64) -> i64 {
    // SAFETY: `b` is a box read since the last call that may collect.
    (unsafe { *((b + 8) as *const u64) } as i64) >> 1
}

/// fib(k) boxed, by forks on words above the cutoff.
fn fib_word(m: *mut numagc_mutator, header: u64, k: i64) -> Result<u64, c_int> {
    if k <= CUTOFF {
        for i in 0..k {
            boxed(m, header, i)?; // garbage
        }
        return boxed(m, header, fib_model(k));
    }
    let env = boxed(m, header, k)?;
    let (a, b) = (Fib { header, delta: 1 }, Fib { header, delta: 2 });
    let ud = |f: &Fib| f as *const Fib as *mut c_void;
    let (rc, x, y) = fork_raw(
        m,
        &[env],
        (Some(fib_task), ud(&a)),
        (Some(fib_task), ud(&b)),
    );
    if rc != OK {
        return Err(rc);
    }
    let sum = unbox(x) + unbox(y);
    boxed(m, header, sum)
}

/// fib(unbox(env[0]) - delta), boxed.
unsafe extern "C" fn fib_task(
    m: *mut numagc_mutator,
    env: *const u64,
    n: usize,
    ud: *mut c_void,
    result: *mut u64,
) -> c_int {
    // SAFETY: `ud` is a `Fib` of the forking frame; `env` has `n` words.
    let (p, env) = unsafe { (&*(ud as *const Fib), std::slice::from_raw_parts(env, n)) };
    if n != 1 {
        return 99;
    }
    match fib_word(m, p.header, unbox(env[0]) - p.delta) {
        Ok(b) => {
            // SAFETY: the library's result pointer.
            unsafe { *result = b };
            OK
        }
        Err(rc) => rc,
    }
}

fn mutator(s: *mut numagc_scope) -> *mut numagc_mutator {
    let mut m = null_mut();
    // SAFETY: a valid output.
    ok(unsafe { numagc_mutator_get(s, &mut m) });
    m
}

#[test]
fn fork_computes_fib_on_words_with_nested_forks_on_two_vprocs() {
    let rt = Rt::new(2, &[]);
    let header = box_header(rt.register("box", 1, &[0], false));
    for k in [0, 1, 9, 18] {
        ok(rt.run(0, |s| {
            let m = mutator(s);
            let b = fib_word(m, header, k).expect("fib");
            assert_eq!(unbox(b), fib_model(k), "fib({k})");
            OK
        }));
    }
    // Both vprocs fork at once (each may steal from the other).
    let total = AtomicI64::new(0);
    run_on_two_vprocs_at_once(&rt, |s| {
        let b = fib_word(mutator(s), header, 19).expect("fib");
        total.fetch_add(unbox(b), SeqCst);
        OK
    });
    assert_eq!(total.into_inner(), 2 * fib_model(19));
}

/// What a misbehaving task does (its userdata).
#[derive(Clone, Copy)]
enum Misdeed {
    Status(c_int),
    LeavesAFrame,
    PopsTheForksSlots,
    PopsThenCallsASlowPath,
    BadResult(u64),
    UsesTheScope(usize),
    Fine,
}

unsafe extern "C" fn misbehaving_task(
    m: *mut numagc_mutator,
    env: *const u64,
    n: usize,
    ud: *mut c_void,
    result: *mut u64,
) -> c_int {
    // SAFETY: `ud` is a `Misdeed` of the test's frame; valid pointers.
    unsafe {
        let _ = (env, n);
        *result = 1; // the immediate 0
        match *(ud as *const Misdeed) {
            Misdeed::Status(rc) => rc,
            Misdeed::LeavesAFrame => {
                *(*m).roots_top = 1;
                (*m).roots_top = (*m).roots_top.add(1);
                OK
            }
            Misdeed::PopsTheForksSlots => {
                (*m).roots_top = (*m).roots_top.sub(1);
                OK
            }
            Misdeed::PopsThenCallsASlowPath => {
                (*m).roots_top = (*m).roots_top.sub(1);
                let rc = numagc_poll_slow(m);
                (*m).roots_top = (*m).roots_top.add(1);
                rc
            }
            Misdeed::BadResult(w) => {
                *result = w;
                OK
            }
            Misdeed::UsesTheScope(s) => {
                let mut v = 0;
                numagc_scope_vproc(s as *mut numagc_scope, &mut v)
            }
            Misdeed::Fine => OK,
        }
    }
}

fn fork_with(m: *mut numagc_mutator, env: &[u64], a: &Misdeed, b: &Misdeed) -> (c_int, u64, u64) {
    let ud = |d: &Misdeed| d as *const Misdeed as *mut c_void;
    fork_raw(
        m,
        env,
        (Some(misbehaving_task), ud(a)),
        (Some(misbehaving_task), ud(b)),
    )
}

#[test]
fn fork_failures_come_back_with_their_codes_and_the_callback_carries_on() {
    let rt = Rt::new(1, &[]);
    let header = box_header(rt.register("box", 1, &[0], false));
    ok(rt.run(0, |s| {
        let m = mutator(s);
        // Kept in a local: nothing below allocates, so nothing collects.
        let env = boxed(m, header, 5).unwrap();
        // SAFETY: the record's top, read only.
        let top = || unsafe { (*m).roots_top };
        let before = top();
        let fine = Misdeed::Fine;
        let cases: Vec<(Misdeed, numagc_status, &str)> = vec![
            (Misdeed::Status(42), NUMAGC_ERR_INTERNAL, "returned 42"),
            (
                Misdeed::LeavesAFrame,
                NUMAGC_ERR_UNBALANCED_FRAME,
                "moved the root stack's top",
            ),
            (
                Misdeed::PopsTheForksSlots,
                NUMAGC_ERR_UNBALANCED_FRAME,
                "moved the root stack's top",
            ),
            (
                Misdeed::PopsThenCallsASlowPath,
                NUMAGC_ERR_MISUSE,
                "popped below live handles",
            ),
            (
                Misdeed::BadResult(0x10),
                NUMAGC_ERR_BAD_VALUE,
                "is not an object",
            ),
            (
                Misdeed::BadResult(0),
                NUMAGC_ERR_BAD_VALUE,
                "is not an object",
            ),
            (
                Misdeed::UsesTheScope(s as usize),
                NUMAGC_ERR_MISUSE,
                "inside a numagc_fork task",
            ),
        ];
        for (bad, want, says) in cases {
            for (a, b) in [(&bad, &fine), (&fine, &bad)] {
                let (rc, x, y) = fork_with(m, &[env], a, b);
                if let Misdeed::Status(code) = bad {
                    assert_eq!(rc, code);
                } else {
                    check(rc, want);
                }
                let msg = last();
                assert!(msg.contains(says), "{msg}");
                let side = if std::ptr::eq(a, &bad) {
                    "task a"
                } else {
                    "task b"
                };
                assert!(msg.contains(side), "{msg}");
                assert_eq!((x, y), (0, 0), "outputs are 0 after a failure");
                assert_eq!(top(), before, "the fork leaves the top where it was");
            }
        }
        // Arguments refused before any task runs.
        let (rc, ..) = fork_with(m, &[0x18], &fine, &fine);
        check(rc, NUMAGC_ERR_BAD_VALUE);
        assert!(last().contains("env word 0x18"));
        let (rc, ..) = fork_with(m.wrapping_add(1), &[env], &fine, &fine);
        check(rc, NUMAGC_ERR_MISUSE);
        // NULL tasks and an absurd count are refused unread.
        let task: Side = (Some(misbehaving_task), null_mut());
        check(
            fork_raw(m, &[env], (None, null_mut()), task).0,
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        let (mut x, mut y) = (0, 0);
        // SAFETY: the count is refused before `env` is read.
        let rc = unsafe {
            numagc_fork(
                m,
                &env,
                usize::MAX,
                task.0,
                null_mut(),
                task.0,
                null_mut(),
                &mut x,
                &mut y,
            )
        };
        check(rc, NUMAGC_ERR_INVALID_ARGUMENT);
        // The callback carries on: the scope and the fork work again.
        let (rc, x, y) = fork_with(m, &[env], &fine, &fine);
        ok(rc);
        assert_eq!((x, y), (1, 1));
        assert_eq!(unbox(env), 5, "the environment survived");
        assert_eq!(handles(s).1, 0);
        OK
    }));
    // Not on a thread that runs a callback.
    let mut rec = 0u64;
    let (rc, ..) = fork_with(
        &mut rec as *mut u64 as *mut numagc_mutator,
        &[],
        &Misdeed::Fine,
        &Misdeed::Fine,
    );
    check(rc, NUMAGC_ERR_NOT_ON_VPROC);
}

/// Set by [`stolen_side`] when it runs; [`waiting_side`] waits for it.
static STOLEN_RAN: AtomicI64 = AtomicI64::new(0);

/// Task a: waits (up to 10 s) until task b has run, which only a thief can
/// make happen meanwhile, then answers 1. It polls while it waits: the
/// thief's request for the environment is served at a safepoint.
unsafe extern "C" fn waiting_side(
    m: *mut numagc_mutator,
    _: *const u64,
    _: usize,
    _: *mut c_void,
    result: *mut u64,
) -> c_int {
    let t = std::time::Instant::now();
    while STOLEN_RAN.load(SeqCst) == 0 {
        if t.elapsed().as_secs() > 10 {
            return 55;
        }
        // SAFETY: the running vproc's record.
        let rc = unsafe { numagc_poll_slow(m) };
        if rc != OK {
            return rc;
        }
        std::thread::yield_now();
    }
    // SAFETY: the library's result pointer.
    unsafe { *result = (1 << 1) | 1 };
    OK
}

/// Task b: on the thief, with the thief's record: allocates through the
/// slow path (its body is the thief's) and answers a box of the
/// environment's value plus one.
unsafe extern "C" fn stolen_side(
    m: *mut numagc_mutator,
    env: *const u64,
    n: usize,
    ud: *mut c_void,
    result: *mut u64,
) -> c_int {
    // SAFETY: `ud` is the forker's record; `env` has `n` words.
    let (forker, env) = unsafe {
        (
            ud as *mut numagc_mutator,
            std::slice::from_raw_parts(env, n),
        )
    };
    if m == forker {
        return 66; // not stolen
    }
    // SAFETY: `env[0]` is the live box (nothing collected since entry).
    let header = unsafe { *(env[0] as *const u64) };
    let b = match boxed(m, header, unbox(env[0]) + 1) {
        Ok(b) => b,
        Err(rc) => return rc,
    };
    STOLEN_RAN.store(1, SeqCst);
    // SAFETY: the library's result pointer.
    unsafe { *result = b };
    OK
}

#[test]
fn a_stolen_task_runs_with_the_thiefs_record_and_its_result_comes_back() {
    let rt = Rt::new(2, &[]);
    let header = box_header(rt.register("box", 1, &[0], false));
    ok(rt.run(0, |s| {
        let m = mutator(s);
        let env = boxed(m, header, 41).unwrap();
        let (rc, x, y) = fork_raw(
            m,
            &[env],
            (Some(waiting_side), null_mut()),
            (Some(stolen_side), m as *mut c_void),
        );
        ok(rc);
        assert_eq!(x, 3);
        assert_eq!(unbox(y), 42, "the thief's box, promoted to the forker");
        OK
    }));
}
