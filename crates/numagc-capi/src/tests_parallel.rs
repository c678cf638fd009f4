//! Rust-side tests of `numagc_par2`, channels and threads, called as C
//! would call them: tasks and thread bodies are Rust closures behind C
//! trampolines (`run_task_code`, `run_thread_code`).

use crate::numagc_dir::*;
use crate::numagc_status::*;
use crate::tests::*;
use crate::*;
use std::ffi::{c_int, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering::SeqCst};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Panics caught in C bodies written in Rust (they may not unwind into C).
static BODY_PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn caught(f: impl FnOnce() -> c_int) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(rc) => rc,
        Err(p) => {
            BODY_PANICS
                .lock()
                .unwrap()
                .push(crate::status::panic_message(&*p));
            PANICKED
        }
    }
}

pub(crate) fn no_body_panics() {
    let p = BODY_PANICS.lock().unwrap();
    assert!(p.is_empty(), "assertions failed inside C bodies: {p:?}");
}

fn env_slice<'a>(env: *const numagc_value, n: usize) -> &'a [numagc_value] {
    if n == 0 {
        return &[];
    }
    // SAFETY: the library passes `n` values that live during the body.
    unsafe { std::slice::from_raw_parts(env, n) }
}

// ---- tasks ---------------------------------------------------------------------

type TaskBody =
    dyn Fn(*mut numagc_scope, &[numagc_value], &mut numagc_value) -> c_int + Send + Sync;

/// A task's code; kept alive by the test while `numagc_par2` runs.
pub(crate) struct TaskCode(Box<TaskBody>);

pub(crate) fn task(
    f: impl Fn(*mut numagc_scope, &[numagc_value], &mut numagc_value) -> c_int + Send + Sync + 'static,
) -> TaskCode {
    TaskCode(Box::new(f))
}

impl TaskCode {
    pub(crate) fn ud(&self) -> *mut c_void {
        self as *const TaskCode as *mut c_void
    }
}

pub(crate) unsafe extern "C" fn run_task_code(
    s: *mut numagc_scope,
    env: *const numagc_value,
    n: usize,
    ud: *mut c_void,
    result: *mut numagc_value,
) -> c_int {
    // SAFETY: `ud` is a `TaskCode` that outlives the `numagc_par2` call.
    let code = unsafe { &*(ud as *const TaskCode) };
    // SAFETY: the library passes a valid result pointer.
    let result = unsafe { &mut *result };
    caught(|| (code.0)(s, env_slice(env, n), result))
}

pub(crate) fn par2(
    s: *mut numagc_scope,
    env: &[numagc_value],
    a: &TaskCode,
    b: &TaskCode,
) -> Result<(numagc_value, numagc_value), c_int> {
    let (mut x, mut y) = (0, 0);
    // SAFETY: `env` of its length, the codes outlive the call, valid outputs.
    let rc = unsafe {
        numagc_par2(
            s,
            env.as_ptr(),
            env.len(),
            Some(run_task_code),
            a.ud(),
            Some(run_task_code),
            b.ud(),
            &mut x,
            &mut y,
        )
    };
    if rc == OK {
        Ok((x, y))
    } else {
        assert_eq!((x, y), (0, 0), "a failed par2 leaves 0 in its outputs");
        Err(rc)
    }
}

pub(crate) fn boxed(s: *mut numagc_scope, i: i64) -> numagc_value {
    let mut v = 0;
    // SAFETY: one value and a valid output.
    ok(unsafe { numagc_alloc_vector(s, [numagc_int(i)].as_ptr(), 1, &mut v) });
    v
}

pub(crate) fn unbox(s: *mut numagc_scope, v: numagc_value) -> i64 {
    get_int(field(s, v, 0).expect("a boxed int"))
}

// ---- fib with nested forks -----------------------------------------------------

const FIB_CUTOFF: i64 = 10;
static DELTAS: [i64; 2] = [1, 2];
/// Tasks run per vproc (both must be nonzero when stealing happened).
static FIB_TASKS_ON: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];

/// fib(k), boxed, as a handle in the caller's frame: nested forks above
/// the cutoff, allocation (garbage) below it.
fn fib_value(s: *mut numagc_scope, k: i64) -> Result<numagc_value, c_int> {
    if k <= FIB_CUTOFF {
        let f = enter(s);
        for i in 0..k {
            boxed(s, i); // garbage
        }
        ok(leave(s, f));
        return Ok(boxed(s, fib_model(k)));
    }
    let f = enter(s);
    let (mut x, mut y) = (0, 0);
    // SAFETY: one value in `env`, static userdata, valid outputs.
    let rc = unsafe {
        numagc_par2(
            s,
            [numagc_int(k)].as_ptr(),
            1,
            Some(fib_task),
            &DELTAS[0] as *const i64 as *mut c_void,
            Some(fib_task),
            &DELTAS[1] as *const i64 as *mut c_void,
            &mut x,
            &mut y,
        )
    };
    if rc != OK {
        return Err(rc);
    }
    let sum = unbox(s, x) + unbox(s, y);
    ok(leave(s, f));
    Ok(boxed(s, sum))
}

/// A fib task: computes fib(env[0] - *userdata).
unsafe extern "C" fn fib_task(
    s: *mut numagc_scope,
    env: *const numagc_value,
    n: usize,
    ud: *mut c_void,
    result: *mut numagc_value,
) -> c_int {
    caught(|| {
        // SAFETY: `ud` is one of the static `DELTAS`.
        let delta = unsafe { *(ud as *const i64) };
        let env = env_slice(env, n);
        assert_eq!(env.len(), 1);
        let mut vproc = 0;
        // SAFETY: a valid output.
        ok(unsafe { numagc_scope_vproc(s, &mut vproc) });
        FIB_TASKS_ON[vproc.min(1)].fetch_add(1, SeqCst);
        match fib_value(s, get_int(env[0]) - delta) {
            Ok(v) => {
                // SAFETY: the library's result pointer.
                unsafe { *result = v };
                OK
            }
            Err(rc) => rc,
        }
    })
}

#[test]
fn par2_computes_fib_with_nested_forks_on_two_vprocs() {
    let rt = Rt::new(2, &[]);
    for k in [0, 1, 11, 20] {
        ok(rt.run(0, |s| {
            let v = fib_value(s, k).expect("fib");
            assert_eq!(unbox(s, v), fib_model(k), "fib({k})");
            assert_eq!(
                handles(s),
                (1, 0),
                "one handle left in the callback's frame"
            );
            OK
        }));
    }
    // Both vprocs fork at once (each may steal from the other).
    let total = AtomicI64::new(0);
    run_on_two_vprocs_at_once(&rt, |s| {
        let v = fib_value(s, 19).expect("fib");
        total.fetch_add(unbox(s, v), SeqCst);
        OK
    });
    assert_eq!(total.into_inner(), 2 * fib_model(19));
    no_body_panics();
    println!(
        "fib tasks per vproc: {:?}",
        FIB_TASKS_ON.each_ref().map(|a| a.load(SeqCst))
    );
}

#[test]
fn par2_results_and_environment_are_handles_of_each_scope() {
    let rt = Rt::new(2, &[]);
    let cons = rt.register("cons", 2, &[1], false);
    ok(rt.run(0, |s| {
        let list = build_list(s, cons, 300);
        let sum_env = move |s: *mut numagc_scope, env: &[numagc_value], out: &mut numagc_value| {
            assert_eq!(env.len(), 2);
            assert_eq!(get_int(env[1]), 7);
            // SAFETY: a live scope.
            ok(unsafe { numagc_collect_minor(s) });
            let (sum, n) = sum_list(s, env[0]);
            let cell = alloc_mixed(s, cons, &[env[0]], &[sum]).unwrap();
            assert_eq!(n, 300);
            *out = cell;
            OK
        };
        let (a, b) = (task(sum_env), task(sum_env));
        let (x, y) = par2(s, &[list, numagc_int(7)], &a, &b).unwrap();
        assert_eq!(
            (raw(s, x, 0), raw(s, y, 0)),
            (Ok(300 * 299 / 2), Ok(300 * 299 / 2))
        );
        assert_eq!(sum_list(s, field(s, x, 1).unwrap()), (300 * 299 / 2, 300));
        // Immediates come back as themselves; an environment handle is a result.
        let (a, b) = (
            task(|_, _, out| {
                *out = numagc_int(-3);
                OK
            }),
            task(|_, env, out| {
                *out = env[0];
                OK
            }),
        );
        let (x, y) = par2(s, &[list], &a, &b).unwrap();
        assert_eq!(x, numagc_int(-3));
        assert_eq!(sum_list(s, y).1, 300);
        OK
    }));
    no_body_panics();
}

#[test]
fn par2_failures_come_back_with_their_codes() {
    let rt = Rt::new(2, &[]);
    let rtp = rt.0 as usize;
    let fine = task(|_, _, out| {
        *out = NUMAGC_NIL;
        OK
    });
    let own_code = task(|_, _, _| 7777);
    let unknown_desc = task(|s, _, _| {
        let mut v = 0;
        // SAFETY: a valid output; descriptor 4000 is not registered.
        unsafe { numagc_alloc_mixed(s, 4000, null(), 0, null(), 0, &mut v) }
    });
    let open_frame = task(|s, _, out| {
        enter(s);
        *out = NUMAGC_NIL;
        OK
    });
    let unset = task(|_, _, _| OK);
    let kept = std::sync::Arc::new(AtomicUsize::new(0));
    let k2 = kept.clone();
    let keeps_scope = task(move |s, _, out| {
        k2.store(s as usize, SeqCst);
        *out = NUMAGC_NIL;
        OK
    });
    let parent = std::sync::Arc::new(AtomicUsize::new(0));
    let p2 = parent.clone();
    let uses_parent_scope = task(move |_, _, out| {
        let mut v = 0;
        // SAFETY: the token is checked, not dereferenced.
        let rc =
            unsafe { numagc_alloc_vector(p2.load(SeqCst) as *mut numagc_scope, null(), 0, &mut v) };
        check(rc, NUMAGC_ERR_NOT_ON_VPROC);
        assert!(
            last().contains("waiting for a nested one on this thread"),
            "{}",
            last()
        );
        *out = NUMAGC_NIL;
        rc
    });
    let runs_a_callback = task(move |_, _, _| {
        // SAFETY: a live runtime; refused before the callback is looked at.
        unsafe { numagc_run_on(rtp as *const numagc_runtime, 0, None, null_mut()) };
        // SAFETY: as above, with a callback.
        unsafe {
            numagc_run_on(
                rtp as *const numagc_runtime,
                0,
                Some(noop_callback),
                null_mut(),
            )
        }
    });
    let result_of_parent = std::sync::Arc::new(AtomicUsize::new(0));
    let r2 = result_of_parent.clone();
    let returns_parent_handle = task(move |_, _, out| {
        *out = r2.load(SeqCst) as numagc_value;
        OK
    });
    ok(rt.run(0, |s| {
        parent.store(s as usize, SeqCst);
        // A failure the callback had before: successful forks keep its message.
        check(field(s, NUMAGC_NIL, 0).unwrap_err(), NUMAGC_ERR_MISUSE);
        let before = last();
        par2(s, &[], &fine, &fine).unwrap();
        assert_eq!(last(), before, "a successful par2 leaves the message alone");

        for (a, b) in [(&own_code, &fine), (&fine, &own_code)] {
            assert_eq!(par2(s, &[], a, b), Err(7777));
            assert!(
                last().contains("returned 7777 (a code of the callback's own)"),
                "{}",
                last()
            );
        }
        assert!(last().contains("par2 task b on vproc"), "{}", last());
        check(
            par2(s, &[], &fine, &unknown_desc).unwrap_err(),
            NUMAGC_ERR_UNKNOWN_DESCRIPTOR,
        );
        assert!(
            last().contains("descriptor id 4000 is not registered"),
            "the task's own message is quoted: {}",
            last()
        );
        // Both fail: a's error wins.
        check(
            par2(s, &[], &unknown_desc, &own_code).unwrap_err(),
            NUMAGC_ERR_UNKNOWN_DESCRIPTOR,
        );
        assert!(last().contains("par2 task a"), "{}", last());
        check(
            par2(s, &[], &open_frame, &fine).unwrap_err(),
            NUMAGC_ERR_UNBALANCED_FRAME,
        );
        assert!(last().contains("1 root frame(s) still open"), "{}", last());
        check(
            par2(s, &[], &fine, &unset).unwrap_err(),
            NUMAGC_ERR_BAD_VALUE,
        );
        assert!(last().contains("left *result unset"), "{}", last());
        let mine = boxed(s, 5);
        result_of_parent.store(mine as usize, SeqCst);
        check(
            par2(s, &[], &returns_parent_handle, &fine).unwrap_err(),
            NUMAGC_ERR_BAD_VALUE,
        );
        assert!(
            last().contains("the result of the par2 task a"),
            "{}",
            last()
        );
        check(
            par2(s, &[], &uses_parent_scope, &fine).unwrap_err(),
            NUMAGC_ERR_NOT_ON_VPROC,
        );
        check(
            par2(s, &[], &runs_a_callback, &fine).unwrap_err(),
            NUMAGC_ERR_MISUSE,
        );
        par2(s, &[], &keeps_scope, &fine).unwrap();
        let stale = kept.load(SeqCst) as *mut numagc_scope;
        // SAFETY: the token is checked, not dereferenced.
        check(
            unsafe { numagc_collect_minor(stale) },
            NUMAGC_ERR_NOT_ON_VPROC,
        );
        assert!(last().contains("its callback has returned"), "{}", last());

        // Arguments.
        let (mut x, mut y) = (0, 0);
        let ud = fine.ud();
        // SAFETY: every pointer is NULL or valid.
        unsafe {
            check(
                numagc_par2(
                    s,
                    null(),
                    0,
                    None,
                    ud,
                    Some(run_task_code),
                    ud,
                    &mut x,
                    &mut y,
                ),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_par2(
                    s,
                    null(),
                    0,
                    Some(run_task_code),
                    ud,
                    None,
                    ud,
                    &mut x,
                    &mut y,
                ),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_par2(
                    s,
                    null(),
                    1,
                    Some(run_task_code),
                    ud,
                    Some(run_task_code),
                    ud,
                    &mut x,
                    &mut y,
                ),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_par2(
                    s,
                    null(),
                    0,
                    Some(run_task_code),
                    ud,
                    Some(run_task_code),
                    ud,
                    null_mut(),
                    &mut y,
                ),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_par2(
                    s,
                    null(),
                    0,
                    Some(run_task_code),
                    ud,
                    Some(run_task_code),
                    ud,
                    &mut x,
                    null_mut(),
                ),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_par2(
                    null_mut(),
                    null(),
                    0,
                    Some(run_task_code),
                    ud,
                    Some(run_task_code),
                    ud,
                    &mut x,
                    &mut y,
                ),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_par2(
                    s,
                    [0u64].as_ptr(),
                    1,
                    Some(run_task_code),
                    ud,
                    Some(run_task_code),
                    ud,
                    &mut x,
                    &mut y,
                ),
                NUMAGC_ERR_BAD_VALUE,
            );
        }
        // The callback's own handles are intact after all that.
        assert_eq!(unbox(s, mine), 5);
        assert_eq!(handles(s), (1, 0));
        OK
    }));
    // From a thread that runs no callback.
    let stale = parent.load(SeqCst) as *mut numagc_scope;
    let (mut x, mut y) = (0, 0);
    let ud = fine.ud();
    // SAFETY: the token is checked, not dereferenced.
    check(
        unsafe {
            numagc_par2(
                stale,
                null(),
                0,
                Some(run_task_code),
                ud,
                Some(run_task_code),
                ud,
                &mut x,
                &mut y,
            )
        },
        NUMAGC_ERR_NOT_ON_VPROC,
    );
    no_body_panics();
}

unsafe extern "C" fn noop_callback(_: *mut numagc_scope, _: *mut c_void) -> c_int {
    OK
}

#[test]
fn a_panic_on_the_rust_side_of_a_task_is_an_error_and_the_callback_carries_on() {
    let rt = Rt::new(1, &[]);
    let fine = task(|_, _, out| {
        *out = numagc_int(1);
        OK
    });
    ok(rt.run(0, |s| {
        let mine = boxed(s, 9);
        crate::body::INJECT_PANIC.with(|p| p.set(true));
        check(
            par2(s, &[mine], &fine, &fine).unwrap_err(),
            NUMAGC_ERR_INTERNAL,
        );
        assert!(last().contains("a panic injected by a test"), "{}", last());
        // The scope is active again and its handles are intact.
        assert_eq!(unbox(s, mine), 9);
        assert_eq!(
            par2(s, &[mine], &fine, &fine),
            Ok((numagc_int(1), numagc_int(1)))
        );
        OK
    }));
    no_body_panics();
}

// ---- threads -------------------------------------------------------------------

type ThreadBody = dyn Fn(*mut numagc_scope, &[numagc_value], numagc_value, *mut numagc_next, *mut c_void) -> c_int
    + Send
    + Sync;

struct ThreadCode(Box<ThreadBody>);

/// A thread body or continuation (leaked: threads may outlive the test's
/// frames). The closure gets its own userdata last, to continue with itself.
pub(crate) fn code(
    f: impl Fn(*mut numagc_scope, &[numagc_value], numagc_value, *mut numagc_next, *mut c_void) -> c_int
        + Send
        + Sync
        + 'static,
) -> *mut c_void {
    Box::leak(Box::new(ThreadCode(Box::new(f)))) as *mut ThreadCode as *mut c_void
}

unsafe extern "C" fn run_code(
    s: *mut numagc_scope,
    env: *const numagc_value,
    n: usize,
    received: numagc_value,
    ud: *mut c_void,
    next: *mut numagc_next,
) -> c_int {
    // SAFETY: `ud` was made by `code` and is never freed.
    let c = unsafe { &*(ud as *const ThreadCode) };
    caught(|| (c.0)(s, env_slice(env, n), received, next, ud))
}

pub(crate) const K: numagc_thread_fn = Some(run_code);

/// A channel pointer that closures may carry to vproc threads.
#[derive(Clone, Copy)]
pub(crate) struct Ch(usize);

impl Ch {
    pub(crate) fn p(self) -> *mut numagc_channel {
        self.0 as *mut numagc_channel
    }
}

pub(crate) fn channel(rt: &Rt) -> Ch {
    let mut ch = null_mut();
    // SAFETY: a live runtime and a valid output.
    ok(unsafe { numagc_channel_new(rt.0, &mut ch) });
    Ch(ch as usize)
}

pub(crate) fn recv(s: *mut numagc_scope, ch: Ch) -> numagc_value {
    let mut v = 0;
    // SAFETY: a valid output.
    ok(unsafe { numagc_recv(s, ch.p(), &mut v) });
    v
}

pub(crate) fn send(s: *mut numagc_scope, ch: Ch, v: numagc_value) {
    // SAFETY: no pointers besides checked tokens.
    ok(unsafe { numagc_send(s, ch.p(), v) });
}

pub(crate) fn spawn_on(s: *mut numagc_scope, vproc: usize, env: &[numagc_value], ud: *mut c_void) {
    // SAFETY: `env` of its length; `ud` made by `code`.
    ok(unsafe { numagc_spawn_on(s, vproc, env.as_ptr(), env.len(), K, ud) });
}

fn stats(rt: &Rt) -> serde_json::Value {
    let mut json = null_mut();
    // SAFETY: a valid output; the string is freed once.
    unsafe {
        ok(numagc_stats_json(rt.0, &mut json));
        let v = serde_json::from_str(CStr::from_ptr(json).to_str().unwrap()).unwrap();
        ok(numagc_string_free(json));
        v
    }
}

pub(crate) fn take_errors(rt: &Rt) -> Vec<String> {
    let mut json = null_mut();
    // SAFETY: a valid output; the string is freed once.
    unsafe {
        ok(numagc_take_thread_errors(rt.0, &mut json));
        let v: Vec<String> = serde_json::from_str(CStr::from_ptr(json).to_str().unwrap()).unwrap();
        ok(numagc_string_free(json));
        v
    }
}

/// Waits until `total[what]` of the statistics reaches `n` (threads run on
/// the vproc threads); fails after 20 s.
pub(crate) fn wait_stat(rt: &Rt, what: &str, n: u64) {
    let start = Instant::now();
    while stats(rt)["total"][what].as_u64().unwrap() < n {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what} to reach {n}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Waits, outside callbacks, until `cond` holds; fails after 20 s.
pub(crate) fn wait_until(cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Polls from inside a callback, keeping the vproc's duties.
fn wait_in(s: *mut numagc_scope, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < Duration::from_secs(20), "timed out");
        // SAFETY: a live scope.
        ok(unsafe { numagc_poll(s) });
        std::thread::yield_now();
    }
}

pub(crate) fn waiting(ch: Ch) -> usize {
    let mut n = 0;
    // SAFETY: a valid output.
    ok(unsafe { numagc_channel_waiting(ch.p(), &mut n) });
    n
}

#[test]
fn a_producer_thread_feeds_a_consumer_callback() {
    for vprocs in [1, 2] {
        let rt = Rt::new(vprocs, &[]);
        let cons = rt.register("cons", 2, &[1], false);
        let ch = channel(&rt);
        let n = 150i64;
        // env[0]: the next list to send; list i has 5 + i cells.
        let producer = code(move |s, env, received, next, me| {
            assert_eq!(received, NUMAGC_NIL);
            let i = get_int(env[0]);
            if i == n {
                return numagc_next_exit(next);
            }
            let list = build_list(s, cons, 5 + i as u64);
            // SAFETY: one value in the environment; `me` made by `code`.
            unsafe { numagc_next_send(next, ch.p(), list, [numagc_int(i + 1)].as_ptr(), 1, K, me) }
        });
        ok(rt.run(0, |s| {
            spawn_on(s, vprocs - 1, &[numagc_int(0)], producer);
            for i in 0..n as u64 {
                let f = enter(s);
                let list = recv(s, ch);
                let mut local = true;
                // SAFETY: a valid output.
                ok(unsafe { numagc_is_local(s, list, &mut local) });
                assert!(!local, "a value received is global");
                assert_eq!(
                    sum_list(s, list),
                    ((5 + i) * (4 + i) / 2, 5 + i),
                    "list {i}"
                );
                ok(leave(s, f));
            }
            OK
        }));
        wait_stat(&rt, "threads_finished", 1);
        assert_eq!(take_errors(&rt), Vec::<String>::new());
        let t = stats(&rt)["total"].clone();
        assert_eq!(t["threads_spawned"], 1);
        assert_eq!(t["rendezvous"], n);
        ok(numagc_channel_free(ch.p()));
    }
    no_body_panics();
}

/// A thread that sends `per` boxed ints `base + i` on `ch` (env[0] = i).
pub(crate) fn sender(ch: Ch, base: i64, per: i64) -> *mut c_void {
    code(move |s, env, _, next, me| {
        let i = get_int(env[0]);
        if i == per {
            return numagc_next_exit(next);
        }
        let v = boxed(s, base + i);
        // SAFETY: one value in the environment.
        unsafe { numagc_next_send(next, ch.p(), v, [numagc_int(i + 1)].as_ptr(), 1, K, me) }
    })
}

#[test]
fn a_direct_select_over_two_channels_takes_each_value_once_in_order() {
    for vprocs in [1, 2] {
        let rt = Rt::new(vprocs, &[]);
        let (a, b) = (channel(&rt), channel(&rt));
        let per = 120i64;
        let mut got = [Vec::new(), Vec::new()];
        ok(rt.run(0, |s| {
            spawn_on(s, 0, &[numagc_int(0)], sender(a, 0, per));
            spawn_on(s, vprocs - 1, &[numagc_int(0)], sender(b, 1000, per));
            let cases = [
                numagc_sel {
                    channel: a.p(),
                    dir: NUMAGC_RECV as c_int,
                    value: 0,
                },
                numagc_sel {
                    channel: b.p(),
                    dir: NUMAGC_RECV as c_int,
                    value: 0,
                },
            ];
            for _ in 0..2 * per {
                let f = enter(s);
                let (mut i, mut v) = (9, 0);
                // SAFETY: two cases and valid outputs.
                ok(unsafe { numagc_select(s, cases.as_ptr(), 2, &mut i, &mut v) });
                got[i].push(unbox(s, v));
                ok(leave(s, f));
            }
            OK
        }));
        assert_eq!(got[0], (0..per).collect::<Vec<_>>(), "{vprocs} vprocs");
        assert_eq!(
            got[1],
            (1000..1000 + per).collect::<Vec<_>>(),
            "{vprocs} vprocs"
        );
        wait_stat(&rt, "threads_finished", 2);
        assert_eq!(take_errors(&rt), Vec::<String>::new());
    }
    no_body_panics();
}

#[test]
fn a_thread_selects_and_a_direct_select_sends() {
    let rt = Rt::new(2, &[]);
    let (a, b, out, echo) = (channel(&rt), channel(&rt), channel(&rt), channel(&rt));
    // A thread that takes `left` values from a choice over a and b, adding
    // those from a and 1000 times those from b, then sends the sum on out.
    // env = [sum, left].
    let collector = std::sync::Arc::new(AtomicUsize::new(0));
    let c2 = collector.clone();
    let weights = [1i64, 1000];
    let conts: Vec<usize> = weights
        .iter()
        .map(|&w| {
            let c3 = c2.clone();
            code(move |_, env, received, next, _| {
                let (sum, left) = (get_int(env[0]), get_int(env[1]));
                let env = [
                    numagc_int(sum + w * get_int(received)),
                    numagc_int(left - 1),
                ];
                // Back to the collector's body, after letting others run.
                let body = c3.load(SeqCst) as *mut c_void;
                // SAFETY: two values in the environment; `body` made by `code`.
                unsafe { numagc_next_yield(next, env.as_ptr(), 2, K, body) }
            }) as usize
        })
        .collect();
    let body = code(move |_, env, _, next, _| {
        let (sum, left) = (get_int(env[0]), get_int(env[1]));
        if left == 0 {
            // SAFETY: a value and an empty environment.
            return unsafe {
                numagc_next_send(
                    next,
                    out.p(),
                    numagc_int(sum),
                    null(),
                    0,
                    K,
                    code(|_, _, _, next, _| numagc_next_exit(next)),
                )
            };
        }
        let cases = [
            numagc_case {
                channel: a.p(),
                dir: NUMAGC_RECV as c_int,
                value: 0,
                k: K,
                userdata: conts[0] as *mut c_void,
            },
            numagc_case {
                channel: b.p(),
                dir: NUMAGC_RECV as c_int,
                value: 0,
                k: K,
                userdata: conts[1] as *mut c_void,
            },
        ];
        // SAFETY: the environment and two cases.
        unsafe { numagc_next_select(next, env.as_ptr(), env.len(), cases.as_ptr(), 2) }
    });
    collector.store(body as usize, SeqCst);
    ok(rt.run(0, |s| {
        spawn_on(s, 1, &[numagc_int(0), numagc_int(15)], body);
        for i in 1..=10 {
            send(s, a, numagc_int(i));
            if i <= 5 {
                send(s, b, numagc_int(i));
            }
        }
        assert_eq!(get_int(recv(s, out)), 55 + 15_000);

        // A direct select whose send case completes: a thread waits on `a`.
        let echoer = code(move |_, _, _, next, _| {
            let then_echo = code(move |_, _, v, next, _| {
                // SAFETY: no environment.
                unsafe {
                    numagc_next_send(
                        next,
                        echo.p(),
                        v,
                        null(),
                        0,
                        K,
                        code(|_, _, _, next, _| numagc_next_exit(next)),
                    )
                }
            });
            // SAFETY: no environment.
            unsafe { numagc_next_recv(next, a.p(), null(), 0, K, then_echo) }
        });
        spawn_on(s, 1, &[], echoer);
        wait_in(s, || waiting(a) == 1);
        let v = boxed(s, 41);
        let cases = [
            numagc_sel {
                channel: b.p(),
                dir: NUMAGC_RECV as c_int,
                value: 0,
            },
            numagc_sel {
                channel: a.p(),
                dir: NUMAGC_SEND as c_int,
                value: v,
            },
        ];
        let (mut i, mut got) = (9, 0);
        // SAFETY: two cases and valid outputs.
        ok(unsafe { numagc_select(s, cases.as_ptr(), 2, &mut i, &mut got) });
        assert_eq!(
            (i, got),
            (1, NUMAGC_NIL),
            "the send case completed and gives NIL"
        );
        assert_eq!(unbox(s, recv(s, echo)), 41);
        OK
    }));
    wait_stat(&rt, "threads_finished", 2);
    assert_eq!(take_errors(&rt), Vec::<String>::new());
    no_body_panics();
}

#[test]
fn collections_run_while_threads_are_blocked() {
    for vprocs in [1, 2] {
        let rt = Rt::new(vprocs, &[]);
        let cons = rt.register("cons", 2, &[1], false);
        let (ch, out) = (channel(&rt), channel(&rt));
        let threads = 3u64;
        // Each thread builds a list of 100 + t cells, blocks on `ch` with the
        // list in its environment, then sends its sum plus what it received.
        for t in 0..threads {
            let then = code(move |s, env, received, next, _| {
                assert_eq!(env.len(), 2);
                let (sum, len) = sum_list(s, env[0]);
                assert_eq!(
                    len,
                    100 + get_int(env[1]) as u64,
                    "the list survived the collections"
                );
                let total = numagc_int(sum as i64 + get_int(received));
                // SAFETY: no environment.
                unsafe {
                    numagc_next_send(
                        next,
                        out.p(),
                        total,
                        null(),
                        0,
                        K,
                        code(|_, _, _, next, _| numagc_next_exit(next)),
                    )
                }
            }) as usize;
            let body = code(move |s, env, _, next, _| {
                let then = then as *mut c_void;
                let list = build_list(s, cons, 100 + t);
                let env = [list, env[0]];
                // SAFETY: two values in the environment.
                unsafe { numagc_next_recv(next, ch.p(), env.as_ptr(), 2, K, then) }
            });
            ok(rt.run(0, |s| {
                spawn_on(s, t as usize % vprocs, &[numagc_int(t as i64)], body);
                OK
            }));
        }
        let collections = stats(&rt)["total"]["minor"]["count"].as_u64().unwrap();
        // The threads run when their vproc is idle.
        wait_until(|| waiting(ch) == threads as usize);
        ok(rt.run(0, |s| {
            for round in 0..3 {
                let f = enter(s);
                build_list(s, cons, 5_000); // garbage
                ok(leave(s, f));
                // SAFETY: a live scope.
                unsafe {
                    ok(numagc_collect_minor(s));
                    ok(numagc_collect_major(s));
                    ok(numagc_collect_global(s));
                }
                assert_eq!(
                    waiting(ch),
                    threads as usize,
                    "round {round}: the threads still wait"
                );
            }
            let mut sums = Vec::new();
            for k in 0..threads {
                send(s, ch, numagc_int(1_000 * k as i64));
                sums.push(get_int(recv(s, out)) as u64);
            }
            sums.sort();
            // Totals: sum of list t (t cells 0..100+t) + 1000 k for the k-th
            // receive; the pairing depends on the order threads queued.
            let lists: Vec<u64> = (0..threads).map(|t| (100 + t) * (99 + t) / 2).collect();
            let mut any_pairing = false;
            for perm in permutations(threads as usize) {
                let mut want: Vec<u64> = perm
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| lists[t] + 1_000 * k as u64)
                    .collect();
                want.sort();
                any_pairing |= want == sums;
            }
            assert!(
                any_pairing,
                "sums {sums:?} are not lists {lists:?} plus 0, 1000, 2000"
            );
            OK
        }));
        assert!(stats(&rt)["total"]["minor"]["count"].as_u64().unwrap() > collections);
        wait_stat(&rt, "threads_finished", threads);
        assert_eq!(take_errors(&rt), Vec::<String>::new());
        assert!(
            stats(&rt)["total"]["sync_waits"].as_u64().unwrap() >= threads,
            "the threads blocked"
        );
    }
    no_body_panics();
}

fn permutations(n: usize) -> Vec<Vec<usize>> {
    if n == 0 {
        return vec![vec![]];
    }
    let mut all = Vec::new();
    for p in permutations(n - 1) {
        for i in 0..=p.len() {
            let mut q = p.clone();
            q.insert(i, n - 1);
            all.push(q);
        }
    }
    all
}

#[test]
fn misused_threads_fail_with_messages_and_the_vprocs_carry_on() {
    let rt = Rt::new(2, &[]);
    let ch = channel(&rt);
    let codes = std::sync::Arc::new(Mutex::new(Vec::<(String, c_int, String)>::new()));
    let record = {
        let codes = codes.clone();
        move |what: &str, rc: c_int| codes.lock().unwrap().push((what.to_string(), rc, last()))
    };
    let kept_next = std::sync::Arc::new(AtomicUsize::new(0));
    let exit_k = code(|_, _, _, next, _| numagc_next_exit(next)) as usize;

    let r = record.clone();
    let no_next = code(move |_, _, _, _, _| {
        r("no next", OK);
        OK
    });
    let r = record.clone();
    let two_nexts = code(move |_, _, _, next, _| {
        let exit_k = exit_k as *mut c_void;
        ok(numagc_next_exit(next));
        // SAFETY: no environment.
        r("second next", unsafe {
            numagc_next_yield(next, null(), 0, K, exit_k)
        });
        OK
    });
    let r = record.clone();
    let blocking_recv = code(move |s, _, _, next, _| {
        let mut v = 0;
        // SAFETY: a valid output.
        r("blocking recv", unsafe { numagc_recv(s, ch.p(), &mut v) });
        // SAFETY: as above.
        r("blocking send", unsafe {
            numagc_send(s, ch.p(), NUMAGC_NIL)
        });
        numagc_next_exit(next)
    });
    let own_code = code(|_, _, _, _, _| 4242);
    let open_frame = code(|s, _, _, next, _| {
        enter(s);
        numagc_next_exit(next)
    });
    let r = record.clone();
    let kn = kept_next.clone();
    let bad_nexts = code(move |s, _, _, next, _| {
        let exit_k = exit_k as *mut c_void;
        kn.store(next as usize, SeqCst);
        // SAFETY: every pointer is NULL or valid; tokens are checked.
        unsafe {
            r(
                "null k",
                numagc_next_recv(next, ch.p(), null(), 0, None, null_mut()),
            );
            r(
                "null ch",
                numagc_next_recv(next, null_mut(), null(), 0, K, exit_k),
            );
            r("null env", numagc_next_yield(next, null(), 2, K, exit_k));
            r(
                "bad value",
                numagc_next_send(next, ch.p(), 0, null(), 0, K, exit_k),
            );
            r("no cases", numagc_next_select(next, null(), 0, null(), 0));
            r("null next", numagc_next_exit(null_mut()));
            r("scope as next", numagc_next_exit(s as *mut numagc_next));
            r(
                "spawn null body",
                numagc_spawn(s, null(), 0, None, null_mut()),
            );
            r(
                "spawn on vproc 7",
                numagc_spawn_on(s, 7, null(), 0, K, exit_k),
            );
        }
        // Failed calls do not count: this thread goes on normally.
        numagc_next_exit(next)
    });
    let fails_a_next = code(move |_, _, _, next, _| {
        // SAFETY: no environment; `k` NULL is refused.
        unsafe { numagc_next_yield(next, null(), 0, None, null_mut()) };
        OK
    });
    let in_task_next = task(|s, _, out| {
        *out = NUMAGC_NIL;
        let forged = (s as usize | 8) as *mut numagc_next;
        numagc_next_exit(forged)
    });
    let r = record.clone();
    let tries_a_next_in_a_task = code(move |s, _, _, next, _| {
        let fine = task(|_, _, out| {
            *out = NUMAGC_NIL;
            OK
        });
        r(
            "next in a task",
            par2(s, &[], &in_task_next, &fine).unwrap_err(),
        );
        numagc_next_exit(next)
    });

    ok(rt.run(0, |s| {
        for body in [
            no_next,
            two_nexts,
            blocking_recv,
            own_code,
            open_frame,
            bad_nexts,
            fails_a_next,
            tries_a_next_in_a_task,
        ] {
            spawn_on(s, 1, &[], body);
        }
        OK
    }));
    // Threads that failed: no next, two nexts, own code, open frame, a failed next.
    wait_stat(&rt, "threads_failed", 5);
    wait_stat(&rt, "threads_finished", 3);
    let mut errors = take_errors(&rt);
    errors.sort();
    let has = |what: &str| errors.iter().any(|e| e.contains(what));
    assert!(
        has("returned NUMAGC_OK without saying what comes next"),
        "{errors:?}"
    );
    assert!(has("numagc_next_* was called twice"), "{errors:?}");
    assert!(
        has("returned 4242 (a code of the callback's own)"),
        "{errors:?}"
    );
    assert!(has("1 root frame(s) still open"), "{errors:?}");
    assert!(
        has("its last numagc_next_* call failed: argument `k` is NULL"),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .all(|e| e.contains("the C thread body on vproc ")),
        "{errors:?}"
    );
    assert_eq!(errors.len(), 5, "{errors:?}");
    assert_eq!(take_errors(&rt), Vec::<String>::new(), "taken once");

    let codes = codes.lock().unwrap().clone();
    let code_of = |what: &str| -> (c_int, String) {
        let (_, rc, m) = codes
            .iter()
            .find(|(w, _, _)| w == what)
            .unwrap_or_else(|| panic!("no {what} in {codes:?}"));
        (*rc, m.clone())
    };
    let expect = |what: &str, status: numagc_status, message: &str| {
        let (rc, m) = code_of(what);
        assert_eq!(rc, status as c_int, "{what}: {m}");
        assert!(m.contains(message), "{what}: {m}");
    };
    expect("second next", NUMAGC_ERR_MISUSE, "called twice");
    expect(
        "blocking recv",
        NUMAGC_ERR_MISUSE,
        "inside a spawned thread",
    );
    expect(
        "blocking send",
        NUMAGC_ERR_MISUSE,
        "inside a spawned thread",
    );
    expect("null k", NUMAGC_ERR_NULL_ARGUMENT, "`k`");
    expect("null ch", NUMAGC_ERR_NULL_ARGUMENT, "`ch`");
    expect("null env", NUMAGC_ERR_NULL_ARGUMENT, "`env`");
    expect("bad value", NUMAGC_ERR_BAD_VALUE, "value 0");
    expect("no cases", NUMAGC_ERR_MISUSE, "no cases");
    expect("null next", NUMAGC_ERR_NULL_ARGUMENT, "`next`");
    expect(
        "scope as next",
        NUMAGC_ERR_NOT_ON_VPROC,
        "not the numagc_next",
    );
    expect("spawn null body", NUMAGC_ERR_NULL_ARGUMENT, "`body`");
    expect(
        "spawn on vproc 7",
        NUMAGC_ERR_MISUSE,
        "vproc 7 does not exist",
    );
    expect(
        "next in a task",
        NUMAGC_ERR_MISUSE,
        "does not belong to a thread body",
    );

    // A next kept after its body returned.
    let stale = kept_next.load(SeqCst) as *mut numagc_next;
    check(numagc_next_exit(stale), NUMAGC_ERR_NOT_ON_VPROC);
    assert!(last().contains("is not live"), "{}", last());
    // The vprocs carry on.
    ok(rt.run(1, |s| {
        spawn_on(s, 0, &[numagc_int(0)], sender(ch, 7, 1));
        assert_eq!(unbox(s, recv(s, ch)), 7);
        OK
    }));
    // SAFETY: a NULL output is refused.
    check(
        unsafe { numagc_take_thread_errors(rt.0, null_mut()) },
        NUMAGC_ERR_NULL_ARGUMENT,
    );
    // SAFETY: a NULL runtime is refused.
    check(
        unsafe { numagc_take_thread_errors(null(), &mut null_mut()) },
        NUMAGC_ERR_NULL_ARGUMENT,
    );
    no_body_panics();
}

#[test]
fn a_panic_on_the_rust_side_of_a_thread_step_fails_the_thread() {
    let rt = Rt::new(1, &[]);
    let body = code(|_, _, _, next, _| numagc_next_exit(next));
    ok(rt.run(0, |s| {
        spawn_on(s, 0, &[], body);
        // The next C body on this vproc thread is the thread's.
        crate::body::INJECT_PANIC.with(|p| p.set(true));
        OK
    }));
    wait_stat(&rt, "threads_failed", 1);
    let errors = take_errors(&rt);
    assert!(
        errors.len() == 1 && errors[0].contains("a panic injected by a test"),
        "{errors:?}"
    );
    ok(rt.run(0, |s| {
        spawn_on(s, 0, &[], body);
        OK
    }));
    wait_stat(&rt, "threads_finished", 1);
}

#[test]
fn channels_are_checked() {
    let rt = Rt::new(1, &[]);
    let other = Rt::new(1, &[]);
    let (ch, theirs, freed) = (channel(&rt), channel(&other), channel(&rt));
    ok(numagc_channel_free(freed.p()));
    check(numagc_channel_free(freed.p()), NUMAGC_ERR_BAD_VALUE);
    ok(numagc_channel_free(null_mut()));
    let mut kept = 0usize;
    ok(rt.run(0, |s| {
        kept = s as usize;
        let mut v = 0;
        let (mut i, mut n) = (0, 0);
        // SAFETY: every pointer is NULL or valid; tokens are checked.
        unsafe {
            check(numagc_send(s, theirs.p(), NUMAGC_NIL), NUMAGC_ERR_MISUSE);
            assert!(last().contains("belongs to another runtime"), "{}", last());
            check(numagc_recv(s, theirs.p(), &mut v), NUMAGC_ERR_MISUSE);
            check(numagc_send(s, freed.p(), NUMAGC_NIL), NUMAGC_ERR_BAD_VALUE);
            assert!(last().contains("does not exist"), "{}", last());
            check(
                numagc_recv(s, 0x5550 as *mut numagc_channel, &mut v),
                NUMAGC_ERR_BAD_VALUE,
            );
            check(
                numagc_send(s, null_mut(), NUMAGC_NIL),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(numagc_send(s, ch.p(), 0), NUMAGC_ERR_BAD_VALUE);
            check(numagc_recv(s, ch.p(), null_mut()), NUMAGC_ERR_NULL_ARGUMENT);
            check(
                numagc_recv(null_mut(), ch.p(), &mut v),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_select(s, null(), 0, &mut i, &mut v),
                NUMAGC_ERR_MISUSE,
            );
            assert!(last().contains("no cases"), "{}", last());
            check(
                numagc_select(s, null(), 2, &mut i, &mut v),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_select(s, null(), 0, null_mut(), &mut v),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            let cases = [
                numagc_sel {
                    channel: ch.p(),
                    dir: NUMAGC_RECV as c_int,
                    value: 0,
                },
                numagc_sel {
                    channel: theirs.p(),
                    dir: NUMAGC_RECV as c_int,
                    value: 0,
                },
            ];
            check(
                numagc_select(s, cases.as_ptr(), 2, &mut i, &mut v),
                NUMAGC_ERR_MISUSE,
            );
            check(numagc_channel_waiting(ch.p(), &mut n), NUMAGC_OK);
            assert_eq!(n, 0, "a refused select queues nothing");
            check(
                numagc_channel_waiting(freed.p(), &mut n),
                NUMAGC_ERR_BAD_VALUE,
            );
        }
        OK
    }));
    // A thread's next on another runtime's channel is refused at the call.
    let r = std::sync::Arc::new(AtomicUsize::new(0));
    let r2 = r.clone();
    let body = code(move |_, _, _, next, _| {
        // SAFETY: no environment.
        let rc = unsafe { numagc_next_recv(next, theirs.p(), null(), 0, K, null_mut()) };
        r2.store(rc as usize, SeqCst);
        numagc_next_exit(next)
    });
    ok(rt.run(0, |s| {
        spawn_on(s, 0, &[], body);
        OK
    }));
    wait_until(|| r.load(SeqCst) != 0);
    assert_eq!(r.load(SeqCst), NUMAGC_ERR_MISUSE as usize);
    let stale = kept as *mut numagc_scope;
    let mut v = 0;
    // SAFETY: tokens are checked, not dereferenced.
    unsafe {
        check(
            numagc_send(stale, ch.p(), NUMAGC_NIL),
            NUMAGC_ERR_NOT_ON_VPROC,
        );
        check(numagc_recv(stale, ch.p(), &mut v), NUMAGC_ERR_NOT_ON_VPROC);
        check(
            numagc_spawn(stale, null(), 0, K, null_mut()),
            NUMAGC_ERR_NOT_ON_VPROC,
        );
        let mut c = null_mut();
        check(numagc_channel_new(null(), &mut c), NUMAGC_ERR_NULL_ARGUMENT);
        check(
            numagc_channel_new(rt.0, null_mut()),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
    }
    // Freeing a runtime frees its channels.
    drop(other);
    check(numagc_channel_free(theirs.p()), NUMAGC_ERR_BAD_VALUE);
    ok(numagc_channel_free(ch.p()));
    assert_eq!(take_errors(&rt), Vec::<String>::new());
    no_body_panics();
}
