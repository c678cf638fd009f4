//! Rust-side tests of the C API's weak references, ephemerons and
//! finalisers (`weak.rs`), called as C would call them, verifier on.

use crate::numagc_status::*;
use crate::tests::*;
use crate::*;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

/// A fresh vector `[id]` in the innermost frame.
fn key(s: *mut numagc_scope, id: i64) -> numagc_value {
    let mut v = 0;
    let vals = [numagc_int(id)];
    // SAFETY: a live scope, an array of one value, a valid output.
    ok(unsafe { numagc_alloc_vector(s, vals.as_ptr(), 1, &mut v) });
    v
}

/// The key of `e` as its first field's integer, or `None` once cleared
/// (read in a frame of its own, so no handle to the key is left).
fn target(s: *mut numagc_scope, e: numagc_value) -> Option<i64> {
    let f = enter(s);
    let (mut k, mut present) = (0, -1);
    // SAFETY: a live scope and valid outputs.
    ok(unsafe { numagc_ephemeron_key(s, e, &mut k, &mut present) });
    let r = match present {
        1 => Some(get_int(field(s, k, 0).unwrap())),
        0 => {
            assert_eq!(k, NUMAGC_NIL);
            None
        }
        p => panic!("present = {p}"),
    };
    ok(leave(s, f));
    r
}

#[test]
fn weak_refs_and_ephemerons_are_cleared_when_their_key_dies() {
    let rt = Rt::new(1, &[]);
    ok(rt.run(0, |s| {
        let k = key(s, 1);
        let mut kept = 0;
        // SAFETY: live scope, live handles, valid outputs.
        ok(unsafe { numagc_weak_ref(s, k, &mut kept) });
        let f = enter(s);
        let k2 = key(s, 2);
        let d = key(s, 20);
        let mut e_inner = 0;
        // SAFETY: as above.
        ok(unsafe { numagc_ephemeron(s, k2, d, &mut e_inner) });
        let mut out = 0;
        // SAFETY: as above.
        ok(unsafe { numagc_frame_return(s, f, e_inner, &mut out) });
        let e = out;
        assert_eq!(target(s, e), Some(2));
        // SAFETY: a live scope.
        ok(unsafe { numagc_collect_minor(s) });
        assert_eq!(target(s, kept), Some(1));
        assert_eq!(target(s, e), None);
        let (mut v, mut present) = (0, -1);
        // SAFETY: as above.
        ok(unsafe { numagc_ephemeron_data(s, e, &mut v, &mut present) });
        assert_eq!((v, present), (NUMAGC_NIL, 0));
        // SAFETY: as above.
        ok(unsafe { numagc_ephemeron_data(s, kept, &mut v, &mut present) });
        assert_eq!(
            (v, present),
            (NUMAGC_NIL, 1),
            "a weak reference's data is NIL"
        );
        // A non-ephemeron and a bad handle are refused.
        // SAFETY: as above.
        check(
            unsafe { numagc_ephemeron_key(s, k, &mut v, &mut present) },
            NUMAGC_ERR_MISUSE,
        );
        // SAFETY: as above.
        check(
            unsafe { numagc_ephemeron_key(s, 0, &mut v, &mut present) },
            NUMAGC_ERR_BAD_VALUE,
        );
        // SAFETY: NULL outputs are refused, not written.
        check(
            unsafe { numagc_ephemeron_key(s, kept, &mut v, std::ptr::null_mut()) },
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        OK
    }));
}

static SEEN: AtomicI64 = AtomicI64::new(0);
static LAST_RAN: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn resurrect(s: *mut numagc_scope, v: numagc_value, data: *mut c_void) -> c_int {
    SEEN.store(get_int(field(s, v, 0).unwrap()), Ordering::SeqCst);
    // A finaliser may allocate, and keep its value in a global root.
    let _ = key(s, 99);
    // SAFETY: `data` is the `numagc_global` the test passed.
    unsafe { numagc_global_new(s, v, data as *mut numagc_global) }
}

unsafe extern "C" fn count_last(_s: *mut numagc_scope, _data: *mut c_void) -> c_int {
    LAST_RAN.fetch_add(1, Ordering::SeqCst);
    OK
}

unsafe extern "C" fn fail_last(_s: *mut numagc_scope, _data: *mut c_void) -> c_int {
    code(NUMAGC_ERR_INVALID_ARGUMENT)
}

#[test]
fn finalisers_resurrect_or_not_and_run_once() {
    let rt = Rt::new(1, &[]);
    let mut global: numagc_global = 0;
    let gp = &mut global as *mut numagc_global as *mut c_void;
    ok(rt.run(0, |s| {
        let f = enter(s);
        let a = key(s, 7);
        let b = key(s, 8);
        // SAFETY: live scope and handles, C functions of the right types.
        ok(unsafe { numagc_finalise(s, a, Some(resurrect), gp) });
        // SAFETY: as above.
        ok(unsafe { numagc_finalise_last(s, b, Some(count_last), std::ptr::null_mut()) });
        // SAFETY: as above; immediates and NULL functions are refused.
        check(
            unsafe { numagc_finalise(s, numagc_int(3), Some(resurrect), gp) },
            NUMAGC_ERR_MISUSE,
        );
        // SAFETY: as above.
        check(
            unsafe { numagc_finalise_last(s, b, None, gp) },
            NUMAGC_ERR_NULL_ARGUMENT,
        );
        ok(leave(s, f));
        // SAFETY: a live scope.
        ok(unsafe { numagc_collect_minor(s) });
        let mut n = 0;
        // SAFETY: a live scope and a valid output.
        ok(unsafe { numagc_pending_finalisers(s, &mut n) });
        assert_eq!(n, 2);
        OK // the callback's end runs them
    }));
    assert_eq!(SEEN.load(Ordering::SeqCst), 7);
    assert_eq!(LAST_RAN.load(Ordering::SeqCst), 1);
    assert_ne!(global, 0, "the finaliser made a global root");
    ok(rt.run(0, |s| {
        // SAFETY: a live scope.
        ok(unsafe { numagc_collect_global(s) });
        let mut v = 0;
        // SAFETY: a live scope, a live root, a valid output.
        ok(unsafe { numagc_global_get(s, global, &mut v) });
        assert_eq!(
            get_int(field(s, v, 0).unwrap()),
            7,
            "the resurrected value is intact"
        );
        let mut ran = 7;
        // SAFETY: a live scope and a valid output.
        ok(unsafe { numagc_run_finalisers(s, &mut ran) });
        assert_eq!(ran, 0, "each finaliser runs once");
        // A failing finaliser is kept for numagc_take_thread_errors.
        let f = enter(s);
        let c = key(s, 9);
        // SAFETY: as above.
        ok(unsafe { numagc_finalise_last(s, c, Some(fail_last), std::ptr::null_mut()) });
        ok(leave(s, f));
        // SAFETY: a live scope.
        ok(unsafe { numagc_collect_minor(s) });
        // SAFETY: NULL `out_ran` is allowed.
        ok(unsafe { numagc_run_finalisers(s, std::ptr::null_mut()) });
        OK
    }));
    let mut json = std::ptr::null_mut();
    // SAFETY: a live runtime and a valid output.
    ok(unsafe { numagc_take_thread_errors(rt.0, &mut json) });
    // SAFETY: a string returned by the library.
    let text = unsafe { std::ffi::CStr::from_ptr(json) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: returned by the library, freed once.
    unsafe { numagc_string_free(json) };
    assert!(text.contains("finaliser"), "{text}");
    assert_eq!(LAST_RAN.load(Ordering::SeqCst), 1);
    // SAFETY: a live root, freed once.
    ok(numagc_global_free(global));
}

#[test]
fn weak_calls_are_refused_inside_a_blocking_section() {
    let rt = Rt::new(1, &[]);
    ok(rt.run(0, |s| {
        let k = key(s, 1);
        // SAFETY: a live scope.
        ok(unsafe { numagc_enter_blocking(s) });
        let mut e = 0;
        // SAFETY: as above; refused while blocking.
        check(unsafe { numagc_weak_ref(s, k, &mut e) }, NUMAGC_ERR_MISUSE);
        // SAFETY: as above.
        check(
            unsafe { numagc_finalise_last(s, k, Some(count_last), std::ptr::null_mut()) },
            NUMAGC_ERR_MISUSE,
        );
        // SAFETY: a live scope in a section.
        ok(unsafe { numagc_leave_blocking(s) });
        OK
    }));
}
