//! Rust-side tests of the C API: every entry point is called as C would
//! call it, with callbacks that are Rust closures behind a C trampoline.

use crate::numagc_kind::*;
use crate::numagc_status::*;
use crate::*;
use std::ffi::{c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::{null, null_mut};

pub(crate) const OK: c_int = NUMAGC_OK as c_int;

pub(crate) fn code(s: numagc_status) -> c_int {
    s as c_int
}

pub(crate) fn last() -> String {
    // SAFETY: numagc_last_error returns a NUL-terminated string owned by
    // this thread's record, valid until the next failing call.
    unsafe { CStr::from_ptr(numagc_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Asserts a call's status, showing the last error otherwise.
#[track_caller]
pub(crate) fn check(rc: c_int, want: numagc_status) {
    assert_eq!(rc, code(want), "expected {want:?}, got {rc}: {}", last());
}

#[track_caller]
pub(crate) fn ok(rc: c_int) {
    check(rc, NUMAGC_OK);
}

pub(crate) fn cstr(s: &str) -> CString {
    CString::new(s).unwrap()
}

/// Whether the tests run on the split plan (values private to their vproc
/// until promoted; nothing is private on the shared plan).
pub(crate) fn split_plan() -> bool {
    std::env::var("NUMAGC_TEST_PLAN").map_or(true, |p| p == "split")
}

pub(crate) fn config(settings: &[(&str, &str)]) -> *mut numagc_config {
    let cfg = numagc_config_new();
    // The plan the tests run on: `NUMAGC_TEST_PLAN` (`scripts/test.sh`
    // runs them on every plan), else the default.
    let plan = std::env::var("NUMAGC_TEST_PLAN").unwrap_or_else(|_| "split".into());
    let base = [
        ("plan", plan.as_str()),
        ("pin", "false"),
        ("verify", "true"),
        ("local-heap", "256K"),
        ("chunk-size", "64K"),
        ("global-gc-threshold", "1M"),
        ("max-heap", "64M"),
    ];
    for (name, value) in base.iter().chain(settings) {
        // SAFETY: a live configuration and NUL-terminated strings.
        ok(unsafe { numagc_config_set(cfg, cstr(name).as_ptr(), cstr(value).as_ptr()) });
    }
    cfg
}

/// A runtime with small verified heaps.
pub(crate) struct Rt(pub(crate) *mut numagc_runtime);

impl Rt {
    pub(crate) fn new(vprocs: usize, settings: &[(&str, &str)]) -> Rt {
        let v = vprocs.to_string();
        let mut s = vec![("vprocs", v.as_str())];
        s.extend_from_slice(settings);
        let cfg = config(&s);
        let mut rt = null_mut();
        // SAFETY: a live configuration and a valid output pointer.
        ok(unsafe { numagc_runtime_new(cfg, &mut rt) });
        // SAFETY: made by numagc_config_new, freed once.
        ok(unsafe { numagc_config_free(cfg) });
        Rt(rt)
    }

    pub(crate) fn register(
        &self,
        name: &str,
        size: usize,
        offsets: &[usize],
        mutable: bool,
    ) -> numagc_desc {
        let mut d = 0;
        // SAFETY: a live runtime, a string, `offsets` of the given length.
        ok(unsafe {
            numagc_register_mixed(
                self.0,
                cstr(name).as_ptr(),
                size,
                offsets.as_ptr(),
                offsets.len(),
                c_int::from(mutable),
                &mut d,
            )
        });
        d
    }

    /// Runs `f` as a C callback on `vproc`; an assertion failing inside is
    /// re-raised here.
    pub(crate) fn run<F: FnMut(*mut numagc_scope) -> c_int>(&self, vproc: usize, f: F) -> c_int {
        let mut t = Trampoline { f, panic: None };
        // SAFETY: a live runtime; `t` outlives the call, which waits for the callback.
        let rc = unsafe {
            numagc_run_on(
                self.0,
                vproc,
                Some(trampoline::<F>),
                &mut t as *mut Trampoline<F> as *mut c_void,
            )
        };
        if let Some(p) = t.panic {
            resume_unwind(p);
        }
        rc
    }
}

impl Drop for Rt {
    fn drop(&mut self) {
        // SAFETY: made by numagc_runtime_new, freed once.
        ok(unsafe { numagc_runtime_free(self.0) });
    }
}

struct Trampoline<F> {
    f: F,
    panic: Option<Box<dyn std::any::Any + Send>>,
}

pub(crate) const PANICKED: c_int = -777;

unsafe extern "C" fn trampoline<F: FnMut(*mut numagc_scope) -> c_int>(
    s: *mut numagc_scope,
    d: *mut c_void,
) -> c_int {
    // SAFETY: `d` is the `Trampoline<F>` that `Rt::run` passed, alive while
    // it waits for this callback.
    let t = unsafe { &mut *(d as *mut Trampoline<F>) };
    match catch_unwind(AssertUnwindSafe(|| (t.f)(s))) {
        Ok(rc) => rc,
        Err(p) => {
            t.panic = Some(p);
            PANICKED
        }
    }
}

// Thin wrappers: the tests read like C.

pub(crate) fn alloc_mixed(
    s: *mut numagc_scope,
    d: numagc_desc,
    values: &[numagc_value],
    raw: &[u64],
) -> Result<numagc_value, c_int> {
    let mut v = 0;
    // SAFETY: slices of the given lengths and a valid output.
    let rc = unsafe {
        numagc_alloc_mixed(
            s,
            d,
            values.as_ptr(),
            values.len(),
            raw.as_ptr(),
            raw.len(),
            &mut v,
        )
    };
    if rc == OK {
        Ok(v)
    } else {
        assert_eq!(v, 0, "a failed call leaves 0 in its output");
        Err(rc)
    }
}

pub(crate) fn field(
    s: *mut numagc_scope,
    v: numagc_value,
    i: usize,
) -> Result<numagc_value, c_int> {
    let mut f = 0;
    // SAFETY: a valid output pointer.
    let rc = unsafe { numagc_field(s, v, i, &mut f) };
    if rc == OK {
        Ok(f)
    } else {
        Err(rc)
    }
}

pub(crate) fn raw(s: *mut numagc_scope, v: numagc_value, i: usize) -> Result<u64, c_int> {
    let mut w = 0;
    // SAFETY: a valid output pointer.
    let rc = unsafe { numagc_raw(s, v, i, &mut w) };
    if rc == OK {
        Ok(w)
    } else {
        Err(rc)
    }
}

pub(crate) fn get_int(v: numagc_value) -> i64 {
    let mut i = 0;
    // SAFETY: a valid output pointer.
    ok(unsafe { numagc_get_int(v, &mut i) });
    i
}

pub(crate) fn enter(s: *mut numagc_scope) -> numagc_frame {
    let mut f = 0;
    // SAFETY: a valid output pointer.
    ok(unsafe { numagc_frame_enter(s, &mut f) });
    f
}

pub(crate) fn leave(s: *mut numagc_scope, f: numagc_frame) -> c_int {
    // SAFETY: no pointers besides the checked scope token.
    unsafe { numagc_frame_leave(s, f) }
}

pub(crate) fn handles(s: *mut numagc_scope) -> (usize, usize) {
    let (mut h, mut f) = (0, 0);
    // SAFETY: valid output pointers.
    ok(unsafe { numagc_scope_handles(s, &mut h, &mut f) });
    (h, f)
}

/// A list of `n` cons cells (field 0 raw payload `i`, field 1 the tail),
/// built in a frame with a variable and returned to the caller's frame.
pub(crate) fn build_list(s: *mut numagc_scope, cons: numagc_desc, n: u64) -> numagc_value {
    let f = enter(s);
    let list = local(s, NUMAGC_NIL);
    for i in 0..n {
        let g = enter(s);
        let cell = alloc_mixed(s, cons, &[list], &[i]).expect("allocation");
        assign(s, list, cell);
        ok(leave(s, g));
    }
    let mut out = 0;
    // SAFETY: a valid output pointer.
    ok(unsafe { numagc_frame_return(s, f, list, &mut out) });
    out
}

pub(crate) fn local(s: *mut numagc_scope, v: numagc_value) -> numagc_value {
    let mut var = 0;
    // SAFETY: a valid output pointer.
    ok(unsafe { numagc_local(s, v, &mut var) });
    var
}

pub(crate) fn assign(s: *mut numagc_scope, var: numagc_value, v: numagc_value) {
    // SAFETY: no pointers besides the checked scope token.
    ok(unsafe { numagc_assign(s, var, v) });
}

/// Sum of payloads and length of a list.
pub(crate) fn sum_list(s: *mut numagc_scope, list: numagc_value) -> (u64, u64) {
    let f = enter(s);
    let (mut sum, mut n, mut v) = (0, 0, list);
    while !numagc_is_int(v) {
        sum += raw(s, v, 0).unwrap();
        n += 1;
        v = field(s, v, 1).unwrap();
    }
    ok(leave(s, f));
    (sum, n)
}

#[test]
fn lists_survive_every_kind_of_collection() {
    let rt = Rt::new(2, &[]);
    let cons = rt.register("cons", 2, &[1], false);
    ok(rt.run(1, |s| {
        let list = build_list(s, cons, 20_000);
        assert_eq!(
            handles(s),
            (1, 0),
            "frames returned one handle, left no frame"
        );
        // SAFETY: a scope token only; it is checked.
        unsafe {
            ok(numagc_collect_minor(s));
            ok(numagc_collect_major(s));
            ok(numagc_collect_global(s));
            ok(numagc_poll(s));
        }
        assert_eq!(sum_list(s, list), (20_000 * 19_999 / 2, 20_000));
        let mut vproc = 9;
        // SAFETY: a valid output pointer.
        ok(unsafe { numagc_scope_vproc(s, &mut vproc) });
        assert_eq!(vproc, 1);
        OK
    }));
}

#[test]
fn handles_are_reused_after_frames_are_left() {
    let rt = Rt::new(1, &[]);
    let cons = rt.register("cons", 2, &[1], false);
    ok(rt.run(0, |s| {
        for round in 0..50u64 {
            let f = enter(s);
            for i in 0..1000 {
                alloc_mixed(s, cons, &[NUMAGC_NIL], &[i + round]).unwrap();
            }
            assert_eq!(handles(s), (1000, 1));
            ok(leave(s, f));
            assert_eq!(handles(s), (0, 0));
        }
        OK
    }));
}

#[test]
fn every_kind_of_object_reads_back() {
    let rt = Rt::new(1, &[]);
    let pair = rt.register("pair", 3, &[0, 2], false);
    let cell = rt.register("cell", 2, &[0], true);
    ok(rt.run(0, |s| {
        let x = alloc_mixed(s, pair, &[numagc_int(-5), numagc_int(7)], &[99]).unwrap();
        assert_eq!(get_int(field(s, x, 0).unwrap()), -5);
        assert_eq!(get_int(field(s, x, 2).unwrap()), 7);
        assert_eq!(raw(s, x, 1), Ok(99));
        check(field(s, x, 1).unwrap_err(), NUMAGC_ERR_MISUSE);
        check(field(s, x, 3).unwrap_err(), NUMAGC_ERR_MISUSE);
        check(raw(s, x, 0).unwrap_err(), NUMAGC_ERR_MISUSE);
        check(
            alloc_mixed(s, pair, &[NUMAGC_NIL], &[1]).unwrap_err(),
            NUMAGC_ERR_MISUSE,
        );

        let (mut kind, mut desc, mut len) = (NUMAGC_KIND_INT, 77, 0);
        // SAFETY: valid output pointers and arrays of the given lengths.
        unsafe {
            ok(numagc_kind_of(s, x, &mut kind, &mut desc));
            assert_eq!((kind, desc), (NUMAGC_KIND_MIXED, pair));
            ok(numagc_kind_of(s, numagc_int(3), &mut kind, null_mut()));
            assert_eq!(kind, NUMAGC_KIND_INT);
            ok(numagc_length(s, x, &mut len));
            assert_eq!(len, 3);

            let mut v = 0;
            ok(numagc_alloc_vector(
                s,
                [x, numagc_int(1)].as_ptr(),
                2,
                &mut v,
            ));
            ok(numagc_kind_of(s, v, &mut kind, &mut desc));
            assert_eq!((kind, desc), (NUMAGC_KIND_VECTOR, 0));
            assert_eq!(field(s, v, 0).map(|f| raw(s, f, 1)), Ok(Ok(99)));
            ok(numagc_alloc_vector_filled(s, 40, numagc_int(8), &mut v));
            ok(numagc_length(s, v, &mut len));
            assert_eq!((len, get_int(field(s, v, 39).unwrap())), (40, 8));

            let words = [1u64, 2, 3, u64::MAX];
            ok(numagc_alloc_raw(s, words.as_ptr(), 4, &mut v));
            let mut back = [0u64; 3];
            ok(numagc_read_raw(s, v, 1, back.as_mut_ptr(), 3));
            assert_eq!(back, [2, 3, u64::MAX]);
            check(
                numagc_read_raw(s, v, 2, back.as_mut_ptr(), 3),
                NUMAGC_ERR_MISUSE,
            );
            check(
                numagc_alloc_raw(s, null(), 4, &mut v),
                NUMAGC_ERR_NULL_ARGUMENT,
            );

            let xs = [0.5f64, -2.25, 1e300];
            ok(numagc_alloc_f64s(s, xs.as_ptr(), 3, &mut v));
            ok(numagc_kind_of(s, v, &mut kind, null_mut()));
            assert_eq!(kind, NUMAGC_KIND_RAW);
            let mut d = 0.0;
            ok(numagc_f64(s, v, 1, &mut d));
            assert_eq!(d, -2.25);
            let mut ds = [0.0; 3];
            ok(numagc_read_f64s(s, v, 0, ds.as_mut_ptr(), 3));
            assert_eq!(ds, xs);

            // Mutable objects: arrays and mutable mixed objects.
            let mut a = 0;
            ok(numagc_alloc_array(s, 3, NUMAGC_NIL, &mut a));
            ok(numagc_kind_of(s, a, &mut kind, null_mut()));
            assert_eq!(kind, NUMAGC_KIND_ARRAY);
            let mut local = true;
            ok(numagc_is_local(s, x, &mut local));
            assert_eq!(
                local,
                split_plan(),
                "a fresh small object is in the local heap (split plan)"
            );
            ok(numagc_set(s, a, 2, x));
            let stored = field(s, a, 2).unwrap();
            ok(numagc_is_local(s, stored, &mut local));
            assert!(!local, "the write barrier promoted the stored value");
            assert_eq!(raw(s, stored, 1), Ok(99));
            check(numagc_set(s, a, 3, x), NUMAGC_ERR_MISUSE);
            check(numagc_set(s, x, 0, x), NUMAGC_ERR_MISUSE);

            let c = alloc_mixed(s, cell, &[NUMAGC_NIL], &[5]).unwrap();
            ok(numagc_set(s, c, 0, numagc_int(42)));
            ok(numagc_set_raw(s, c, 1, 6));
            check(numagc_set_raw(s, c, 0, 6), NUMAGC_ERR_MISUSE);
            assert_eq!(
                (get_int(field(s, c, 0).unwrap()), raw(s, c, 1)),
                (42, Ok(6))
            );

            let mut p = 0;
            ok(numagc_promote(s, x, &mut p));
            ok(numagc_is_local(s, p, &mut local));
            assert!(!local);
            ok(numagc_promote(s, numagc_int(4), &mut p));
            assert_eq!(p, numagc_int(4));
        }
        OK
    }));
}

#[test]
fn immediates_round_trip() {
    for i in [0i64, 1, -1, 42, (1 << 62) - 1, -(1 << 62)] {
        let v = numagc_int(i);
        assert!(numagc_is_int(v));
        assert_eq!(get_int(v), i);
    }
    assert_eq!(numagc_int(0), NUMAGC_NIL);
    let mut i = 0;
    // SAFETY: a valid output pointer.
    check(
        unsafe { numagc_get_int(2 << 32, &mut i) },
        NUMAGC_ERR_BAD_VALUE,
    );
}

#[test]
fn unbalanced_frames_are_refused_and_change_nothing() {
    let rt = Rt::new(1, &[]);
    let cons = rt.register("cons", 2, &[1], false);
    ok(rt.run(0, |s| {
        let outer = enter(s);
        let a = alloc_mixed(s, cons, &[NUMAGC_NIL], &[1]).unwrap();
        let inner = enter(s);
        let b = alloc_mixed(s, cons, &[a], &[2]).unwrap();
        check(leave(s, outer), NUMAGC_ERR_UNBALANCED_FRAME);
        assert!(last().contains("not the innermost"), "{}", last());
        assert_eq!(handles(s), (2, 2), "nothing was left");
        assert_eq!(raw(s, b, 0), Ok(2));
        ok(leave(s, inner));
        check(raw(s, b, 0).unwrap_err(), NUMAGC_ERR_BAD_VALUE);
        check(leave(s, inner), NUMAGC_ERR_UNBALANCED_FRAME);
        check(leave(s, 0), NUMAGC_ERR_UNBALANCED_FRAME);
        assert_eq!(raw(s, a, 0), Ok(1));
        ok(leave(s, outer));
        check(raw(s, a, 0).unwrap_err(), NUMAGC_ERR_BAD_VALUE);
        // A reused table entry does not revive an old handle.
        let c = alloc_mixed(s, cons, &[NUMAGC_NIL], &[3]).unwrap();
        assert_ne!(c, a);
        check(raw(s, a, 0).unwrap_err(), NUMAGC_ERR_BAD_VALUE);
        check(raw(s, 0, 0).unwrap_err(), NUMAGC_ERR_BAD_VALUE);
        OK
    }));
    // Returning with a frame open.
    check(
        rt.run(0, |s| {
            enter(s);
            enter(s);
            OK
        }),
        NUMAGC_ERR_UNBALANCED_FRAME,
    );
    assert!(last().contains("2 root frame(s) still open"), "{}", last());
    // The vproc carries on.
    ok(rt.run(0, |s| {
        assert_eq!(handles(s), (0, 0));
        OK
    }));
}

#[test]
fn frame_return_keeps_outer_values_and_immediates() {
    let rt = Rt::new(1, &[]);
    let cons = rt.register("cons", 2, &[1], false);
    ok(rt.run(0, |s| {
        let a = alloc_mixed(s, cons, &[NUMAGC_NIL], &[1]).unwrap();
        let mut out = 0;
        let f = enter(s);
        // SAFETY: a valid output pointer.
        ok(unsafe { numagc_frame_return(s, f, a, &mut out) });
        assert_eq!(raw(s, out, 0), Ok(1));
        assert_eq!(handles(s), (2, 0));
        let f = enter(s);
        alloc_mixed(s, cons, &[NUMAGC_NIL], &[2]).unwrap();
        // SAFETY: a valid output pointer.
        ok(unsafe { numagc_frame_return(s, f, numagc_int(9), &mut out) });
        assert_eq!((out, handles(s)), (numagc_int(9), (2, 0)));
        // Variables.
        let var = local(s, numagc_int(3));
        assert!(!numagc_is_int(var));
        assert_eq!(field(s, var, 0).unwrap_err(), code(NUMAGC_ERR_MISUSE));
        assign(s, var, a);
        assert_eq!(raw(s, var, 0), Ok(1));
        // SAFETY: no pointers besides the scope token.
        check(
            unsafe { numagc_assign(s, numagc_int(1), a) },
            NUMAGC_ERR_BAD_VALUE,
        );
        // SAFETY: as above.
        check(unsafe { numagc_assign(s, var, 0) }, NUMAGC_ERR_BAD_VALUE);
        OK
    }));
}

#[test]
fn callback_codes_come_back_with_the_vprocs_message() {
    let rt = Rt::new(2, &[]);
    check(
        rt.run(1, |s| {
            let mut v = 0;
            // SAFETY: a valid output pointer; the descriptor is not registered.
            let rc = unsafe { numagc_alloc_mixed(s, 4000, null(), 0, null(), 0, &mut v) };
            check(rc, NUMAGC_ERR_UNKNOWN_DESCRIPTOR);
            rc
        }),
        NUMAGC_ERR_UNKNOWN_DESCRIPTOR,
    );
    let m = last();
    assert!(
        m.contains("vproc 1") && m.contains("descriptor id 4000 is not registered"),
        "{m}"
    );
    assert_eq!(rt.run(0, |_| 12345), 12345);
    assert!(
        last().contains("a code of the callback's own"),
        "{}",
        last()
    );
}

unsafe extern "C" fn keep_scope(s: *mut numagc_scope, d: *mut c_void) -> c_int {
    // SAFETY: `d` points at the caller's `usize`.
    unsafe { *(d as *mut usize) = s as usize };
    OK
}

#[test]
fn scopes_are_refused_after_their_callback_and_on_other_threads() {
    let rt = Rt::new(2, &[]);
    let mut kept: usize = 0;
    // SAFETY: `kept` outlives the call.
    ok(unsafe {
        numagc_run_on(
            rt.0,
            0,
            Some(keep_scope),
            &mut kept as *mut usize as *mut c_void,
        )
    });
    let stale = kept as *mut numagc_scope;
    let mut v = 0;
    // SAFETY: the scope token is checked, not dereferenced.
    check(
        unsafe { numagc_alloc_vector(stale, null(), 0, &mut v) },
        NUMAGC_ERR_NOT_ON_VPROC,
    );
    assert!(last().contains("its callback has returned"), "{}", last());
    // Used inside a later callback on the same vproc: still refused.
    ok(rt.run(0, |s| {
        assert_ne!(s, stale);
        // SAFETY: as above.
        check(
            unsafe { numagc_collect_minor(stale) },
            NUMAGC_ERR_NOT_ON_VPROC,
        );
        OK
    }));
    // From another thread while the callback runs.
    ok(rt.run(1, |s| {
        let token = s as usize;
        let (rc, message) = std::thread::spawn(move || {
            let mut v = 0;
            // SAFETY: the token is checked, not dereferenced.
            let rc = unsafe { numagc_alloc_vector(token as *mut numagc_scope, null(), 0, &mut v) };
            (rc, last())
        })
        .join()
        .unwrap();
        check(rc, NUMAGC_ERR_NOT_ON_VPROC);
        assert!(message.contains("used from another thread"), "{message}");
        OK
    }));
    // Garbage is just another dead token.
    // SAFETY: as above.
    check(
        unsafe { numagc_poll(0x1234 as *mut numagc_scope) },
        NUMAGC_ERR_NOT_ON_VPROC,
    );
}

#[test]
fn null_arguments_are_refused() {
    let rt = Rt::new(1, &[]);
    let mut n = 0;
    let mut v = 0;
    // SAFETY: every pointer is NULL or valid.
    unsafe {
        check(
            numagc_runtime_vprocs(null(), &mut n),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        check(
            numagc_runtime_vprocs(rt.0, null_mut()),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        ok(numagc_runtime_vprocs(rt.0, &mut n));
        assert_eq!(n, 1);
        check(
            numagc_run_on(null(), 0, Some(keep_scope), null_mut()),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        check(
            numagc_run_on(rt.0, 0, None, null_mut()),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        check(
            numagc_run_each(null(), Some(keep_scope), null_mut()),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        check(
            numagc_alloc_vector(null_mut(), null(), 0, &mut v),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        check(
            numagc_frame_enter(null_mut(), null_mut()),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        check(
            numagc_runtime_new(null(), &mut null_mut()),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        check(
            numagc_stats_json(rt.0, null_mut()),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        check(
            numagc_config_set(null_mut(), c"vprocs".as_ptr(), c"1".as_ptr()),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        let d = rt.register("x", 1, &[], false);
        check(
            numagc_register_mixed(rt.0, null(), 1, null(), 0, 0, &mut 0),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        check(
            numagc_register_mixed(rt.0, c"x".as_ptr(), 2, null(), 1, 0, &mut 0),
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        ok(numagc_runtime_free(null_mut()));
        ok(numagc_config_free(null_mut()));
        ok(numagc_string_free(null_mut()));
        ok(rt.run(0, |s| {
            check(numagc_frame_enter(s, null_mut()), NUMAGC_ERR_NULL_ARGUMENT);
            check(
                numagc_alloc_mixed(s, d, null(), 0, null(), 1, &mut v),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_alloc_mixed(s, d, null(), 0, [1u64].as_ptr(), 1, null_mut()),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_field(s, NUMAGC_NIL, 0, null_mut()),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            check(
                numagc_kind_of(s, NUMAGC_NIL, null_mut(), null_mut()),
                NUMAGC_ERR_NULL_ARGUMENT,
            );
            ok(numagc_scope_handles(s, null_mut(), null_mut()));
            OK
        }));
    }
}

#[test]
fn configuration_errors_name_the_setting() {
    let cfg = numagc_config_new();
    // SAFETY: a live configuration and NUL-terminated strings.
    unsafe {
        check(
            numagc_config_set(cfg, c"local-heap".as_ptr(), c"12 parsecs".as_ptr()),
            NUMAGC_ERR_INVALID_CONFIG,
        );
        assert!(
            last().contains("local-heap") && last().contains("12 parsecs"),
            "{}",
            last()
        );
        check(
            numagc_config_set(cfg, c"nursery".as_ptr(), c"1M".as_ptr()),
            NUMAGC_ERR_INVALID_CONFIG,
        );
        assert!(
            last().contains("min-nursery"),
            "the message lists the names: {}",
            last()
        );
        check(
            numagc_config_set(cfg, c"vprocs".as_ptr(), c"\xff".as_ptr()),
            NUMAGC_ERR_INVALID_ARGUMENT,
        );
        // Ranges that depend on other settings are checked at the start.
        ok(numagc_config_set(cfg, c"vprocs".as_ptr(), c"2".as_ptr()));
        ok(numagc_config_set(
            cfg,
            c"local-heap".as_ptr(),
            c"1M".as_ptr(),
        ));
        ok(numagc_config_set(cfg, c"max-heap".as_ptr(), c"2M".as_ptr()));
        let mut rt = std::ptr::dangling_mut::<numagc_runtime>();
        check(numagc_runtime_new(cfg, &mut rt), NUMAGC_ERR_INVALID_CONFIG);
        assert!(rt.is_null());
        assert!(last().contains("max-heap"), "{}", last());
        ok(numagc_config_free(cfg));
    }
}

/// Issue 16, defect 8: `numagc_config_set` refuses a value outside the
/// setting's own range at once (not only `numagc_runtime_new`), with the
/// message the CLI and the environment give, and the configuration keeps
/// its previous value.
#[test]
fn config_set_refuses_out_of_range_values_and_keeps_the_previous_one() {
    let cfg = numagc_config_new();
    // SAFETY: a live configuration and NUL-terminated strings.
    unsafe {
        ok(numagc_config_set(cfg, c"vprocs".as_ptr(), c"1".as_ptr()));
        for (name, value) in [
            ("vprocs", "0"),
            ("heap-growth", "nan"),
            ("heap-growth", "-3"),
            ("chunk-size", "3"),
            ("max-heap", "1"),
            ("survivor-promotion", "1000"),
            ("vproc-stack", "1K"),
        ] {
            check(
                numagc_config_set(cfg, cstr(name).as_ptr(), cstr(value).as_ptr()),
                NUMAGC_ERR_INVALID_CONFIG,
            );
            let expected = numagc_rs::ConfigBuilder::new()
                .set(name, value)
                .map(|_| ())
                .expect_err("refused by the library too")
                .to_string();
            assert_eq!(last(), expected);
            assert!(
                last().contains(name) && last().contains("allowed"),
                "{}",
                last()
            );
        }
        // Enumerated values in any case, as on the command line.
        ok(numagc_config_set(
            cfg,
            c"task-promotion".as_ptr(),
            c"EAGER".as_ptr(),
        ));
        for (name, value) in [
            ("pin", "false"),
            ("local-heap", "256K"),
            ("chunk-size", "64K"),
            ("global-gc-threshold", "1M"),
            ("max-heap", "64M"),
        ] {
            ok(numagc_config_set(
                cfg,
                cstr(name).as_ptr(),
                cstr(value).as_ptr(),
            ));
        }
        let mut rt = null_mut();
        ok(numagc_runtime_new(cfg, &mut rt));
        let mut n = 0;
        ok(numagc_runtime_vprocs(rt, &mut n));
        assert_eq!(n, 1, "vprocs kept its value 1");
        ok(numagc_runtime_free(rt));
        ok(numagc_config_free(cfg));
    }
}

#[test]
fn descriptors_are_checked() {
    let rt = Rt::new(1, &[]);
    let mut d = 0;
    // SAFETY: a live runtime, strings, arrays of the given lengths.
    unsafe {
        check(
            numagc_register_mixed(rt.0, c"empty".as_ptr(), 0, null(), 0, 0, &mut d),
            NUMAGC_ERR_INVALID_DESCRIPTOR,
        );
        check(
            numagc_register_mixed(rt.0, c"far".as_ptr(), 2, [2usize].as_ptr(), 1, 0, &mut d),
            NUMAGC_ERR_INVALID_DESCRIPTOR,
        );
        check(
            numagc_register_mixed(
                rt.0,
                c"twice".as_ptr(),
                2,
                [1usize, 1].as_ptr(),
                2,
                0,
                &mut d,
            ),
            NUMAGC_ERR_INVALID_DESCRIPTOR,
        );
        // Found by fuzzing: a huge size was accepted and building the
        // descriptor ran the process out of memory. Refused at once now.
        check(
            numagc_register_mixed(rt.0, c"huge".as_ptr(), 1 << 40, null(), 0, 1, &mut d),
            NUMAGC_ERR_INVALID_DESCRIPTOR,
        );
        assert!(last().contains("largest mixed object"), "{}", last());
    }
    ok(rt.run(0, |s| {
        check(
            alloc_mixed(s, 9999, &[], &[]).unwrap_err(),
            NUMAGC_ERR_UNKNOWN_DESCRIPTOR,
        );
        // Registered while the callback runs: found on a miss.
        let late = rt.register("late", 1, &[0], false);
        let x = alloc_mixed(s, late, &[numagc_int(1)], &[]).unwrap();
        assert_eq!(field(s, x, 0), Ok(numagc_int(1)));
        OK
    }));
    // Descriptors belong to their runtime: ids registered elsewhere are unknown.
    let other = Rt::new(1, &[]);
    let ids: Vec<numagc_desc> = (0..5)
        .map(|k| other.register(&format!("d{k}"), 1, &[], false))
        .collect();
    ok(rt.run(0, |s| {
        check(
            alloc_mixed(s, ids[4], &[], &[0]).unwrap_err(),
            NUMAGC_ERR_UNKNOWN_DESCRIPTOR,
        );
        OK
    }));
}

#[test]
fn heap_limit_is_an_error_and_the_heap_recovers() {
    let rt = Rt::new(1, &[("max-heap", "2M")]);
    let cons = rt.register("cons", 2, &[1], false);
    ok(rt.run(0, |s| {
        let f = enter(s);
        let list = local(s, NUMAGC_NIL);
        let mut cells = 0u64;
        let rc = loop {
            let g = enter(s);
            let r = alloc_mixed(s, cons, &[list], &[cells]);
            if let Ok(cell) = r {
                assign(s, list, cell);
                cells += 1;
            }
            ok(leave(s, g));
            if let Err(rc) = r {
                break rc;
            }
            assert!(cells < 10_000_000, "no heap limit");
        };
        check(rc, NUMAGC_ERR_HEAP_LIMIT);
        assert!(last().contains("heap limit"), "{}", last());
        assert!(cells > 1000, "only {cells} cells");
        ok(leave(s, f));
        // SAFETY: a live scope.
        ok(unsafe { numagc_collect_global(s) });
        let l = build_list(s, cons, 1000);
        assert_eq!(sum_list(s, l).1, 1000);
        OK
    }));
}

#[test]
fn global_roots_live_across_callbacks_and_die_with_their_runtime() {
    let rt = Rt::new(2, &[]);
    let cons = rt.register("cons", 2, &[1], false);
    let mut g = 0;
    ok(rt.run(0, |s| {
        let l = build_list(s, cons, 100);
        // SAFETY: a valid output pointer.
        ok(unsafe { numagc_global_new(s, l, &mut g) });
        OK
    }));
    ok(rt.run(1, |s| {
        let mut v = 0;
        // SAFETY: valid output pointers.
        unsafe {
            ok(numagc_collect_global(s));
            ok(numagc_global_get(s, g, &mut v));
            assert_eq!(sum_list(s, v), (4950, 100));
            ok(numagc_global_set(s, g, numagc_int(5)));
            ok(numagc_global_get(s, g, &mut v));
            assert_eq!(v, numagc_int(5));
            check(numagc_global_get(s, g + 1000, &mut v), NUMAGC_ERR_BAD_VALUE);
        }
        OK
    }));
    ok(numagc_global_free(g));
    check(numagc_global_free(g), NUMAGC_ERR_BAD_VALUE);
    ok(numagc_global_free(0));
    // A root of another runtime.
    let other = Rt::new(1, &[]);
    let mut h = 0;
    ok(other.run(0, |s| {
        // SAFETY: a valid output pointer.
        ok(unsafe { numagc_global_new(s, numagc_int(1), &mut h) });
        OK
    }));
    ok(rt.run(0, |s| {
        let mut v = 0;
        // SAFETY: a valid output pointer.
        check(
            unsafe { numagc_global_get(s, h, &mut v) },
            NUMAGC_ERR_BAD_VALUE,
        );
        assert!(last().contains("another runtime"), "{}", last());
        OK
    }));
    drop(other);
    check(numagc_global_free(h), NUMAGC_ERR_BAD_VALUE);
}

#[test]
fn callbacks_cannot_wait_for_callbacks_or_free_their_runtime() {
    let rt = Rt::new(1, &[]);
    let p = rt.0;
    ok(rt.run(0, |_| {
        // SAFETY: a live runtime.
        unsafe {
            check(
                numagc_run_on(p, 0, Some(keep_scope), null_mut()),
                NUMAGC_ERR_MISUSE,
            );
            check(numagc_runtime_free(p), NUMAGC_ERR_MISUSE);
        }
        OK
    }));
    // SAFETY: a live runtime.
    check(
        unsafe { numagc_run_on(p, 5, Some(keep_scope), null_mut()) },
        NUMAGC_ERR_MISUSE,
    );
}

unsafe extern "C" fn count_vprocs(s: *mut numagc_scope, d: *mut c_void) -> c_int {
    let mut v = 0;
    // SAFETY: a valid output pointer.
    let rc = unsafe { numagc_scope_vproc(s, &mut v) };
    // SAFETY: `d` is the test's array of atomics, one per vproc.
    let seen = unsafe { &*(d as *const [std::sync::atomic::AtomicUsize; 2]) };
    seen[v].fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    if v == 1 {
        // SAFETY: a live scope.
        let _ = unsafe { numagc_frame_enter(s, &mut 0) };
    }
    rc
}

#[test]
fn run_each_runs_everywhere_and_reports_the_first_failure() {
    let rt = Rt::new(2, &[]);
    let seen: [std::sync::atomic::AtomicUsize; 2] = Default::default();
    // SAFETY: `seen` outlives the call and is only used atomically.
    let rc = unsafe { numagc_run_each(rt.0, Some(count_vprocs), &seen as *const _ as *mut c_void) };
    check(rc, NUMAGC_ERR_UNBALANCED_FRAME);
    assert!(last().contains("vproc 1"), "{}", last());
    assert_eq!(seen.map(|a| a.into_inner()), [1, 1]);
}

#[test]
fn stats_are_json_and_names_are_known() {
    let rt = Rt::new(1, &[]);
    let cons = rt.register("cons", 2, &[1], false);
    ok(rt.run(0, |s| {
        build_list(s, cons, 5000);
        // SAFETY: a live scope.
        ok(unsafe { numagc_collect_minor(s) });
        OK
    }));
    let mut json = null_mut();
    // SAFETY: valid output pointers; the string is freed once.
    unsafe {
        ok(numagc_stats_json(rt.0, &mut json));
        let text = CStr::from_ptr(json).to_str().unwrap().to_string();
        ok(numagc_string_free(json));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(
            v["total"]["bytes_allocated"].as_u64().unwrap() >= 5000 * 24,
            "{text}"
        );
        let name = |c| CStr::from_ptr(numagc_status_name(c)).to_str().unwrap();
        assert_eq!(name(code(NUMAGC_ERR_HEAP_LIMIT)), "NUMAGC_ERR_HEAP_LIMIT");
        assert_eq!(name(0), "NUMAGC_OK");
        assert_eq!(name(-3), "unknown status");
    }
}

#[test]
fn compaction_keeps_the_values_of_global_roots() {
    let rt = Rt::new(2, &[]);
    let cons = rt.register("cons", 2, &[1], false);
    let mut g = 0;
    ok(rt.run(0, |s| {
        let l = build_list(s, cons, 2000);
        // SAFETY: a valid output pointer.
        ok(unsafe { numagc_global_new(s, l, &mut g) });
        build_list(s, cons, 20_000); // garbage
        OK
    }));
    ok(rt.run(1, |s| {
        let mut v = 0;
        // SAFETY: a live scope and a valid output pointer.
        unsafe {
            ok(numagc_compact(s));
            ok(numagc_global_get(s, g, &mut v));
        }
        assert_eq!(sum_list(s, v), (1999 * 2000 / 2, 2000));
        OK
    }));
    // A NULL scope is refused, not trusted.
    // SAFETY: a null scope is checked by the call.
    check(
        unsafe { numagc_compact(std::ptr::null_mut()) },
        NUMAGC_ERR_NULL_ARGUMENT,
    );
    ok(numagc_global_free(g));
}

/// The k-th Fibonacci number, recursively (the fork tests' model).
pub(crate) fn fib_model(k: i64) -> i64 {
    if k < 2 {
        k
    } else {
        fib_model(k - 1) + fib_model(k - 2)
    }
}

/// Runs `f` as a callback on vprocs 0 and 1 of `rt` at the same time (each
/// may steal the other's forks) and checks that both return `NUMAGC_OK`.
pub(crate) fn run_on_two_vprocs_at_once(rt: &Rt, f: impl Fn(*mut numagc_scope) -> c_int + Sync) {
    let rtp = rt.0 as usize;
    std::thread::scope(|t| {
        for vproc in 0..2 {
            let f = &f;
            t.spawn(move || {
                let rt = Rt(rtp as *mut numagc_runtime);
                let rc = rt.run(vproc, f);
                std::mem::forget(rt); // the caller's `rt` frees it
                ok(rc);
            });
        }
    });
}
