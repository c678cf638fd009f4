//! The C interface of PE groups (`pe.rs`) under bad input and misuse: NULL
//! pointers, counts past their limits, unknown export ids, PEs outside
//! the group, stale scopes. Each is refused with a status and a message,
//! nothing aborts, and the group works afterwards.

use crate::numagc_status::*;
use crate::tests::{check, config, cstr, last, ok};
use crate::*;
use std::ffi::{c_int, c_void};
use std::ptr::{null, null_mut};

#[track_caller]
fn refused(rc: c_int, want: numagc_status, text: &str) {
    check(rc, want);
    let m = last();
    assert!(m.contains(text), "message {m:?} lacks {text:?}");
}

/// `echo(x)`: returns its argument.
unsafe extern "C" fn echo(
    _: *mut numagc_scope,
    args: *const numagc_value,
    n: usize,
    _: *mut c_void,
    result: *mut numagc_value,
) -> c_int {
    // SAFETY: the runtime passes `n` arguments and a result cell.
    unsafe { *result = if n > 0 { *args } else { NUMAGC_NIL } };
    NUMAGC_OK as c_int
}

/// A group of 2 PEs running `echo` (export id 0).
struct Group(*mut numagc_pe_group);

impl Group {
    fn new() -> Group {
        let mut ex = null_mut();
        // SAFETY: valid out-pointers and NUL-terminated names throughout.
        unsafe {
            ok(numagc_exports_new(&mut ex));
            let mut id = 9;
            ok(numagc_exports_register(
                ex,
                cstr("echo").as_ptr(),
                Some(echo),
                null_mut(),
                &mut id,
            ));
            assert_eq!(id, 0);
            let cfg = config(&[("vprocs", "1")]);
            let mut g = null_mut();
            ok(numagc_pe_group_new(2, cfg, ex, &mut g));
            ok(numagc_config_free(cfg));
            Group(g)
        }
    }

    /// Runs `f` as the group's program on PE 0.
    fn run<F: FnMut(*mut numagc_scope) -> c_int>(&self, mut f: F) -> c_int {
        unsafe extern "C" fn tramp<F: FnMut(*mut numagc_scope) -> c_int>(
            s: *mut numagc_scope,
            d: *mut c_void,
        ) -> c_int {
            // SAFETY: `d` is the closure `run` passed, alive while it waits.
            unsafe { (*(d as *mut F))(s) }
        }
        // SAFETY: a live group; `f` outlives the call, which waits for it.
        unsafe { numagc_pe_group_run(self.0, Some(tramp::<F>), &mut f as *mut F as *mut c_void) }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // SAFETY: made by numagc_pe_group_new, freed once.
        ok(unsafe { numagc_pe_group_free(self.0) });
    }
}

#[test]
fn exports_and_groups_refuse_null_and_out_of_range_arguments() {
    // SAFETY: every pointer is NULL, a valid out-pointer, or a live object.
    unsafe {
        let mut id = 0;
        refused(
            numagc_exports_register(
                null_mut(),
                cstr("x").as_ptr(),
                Some(echo),
                null_mut(),
                &mut id,
            ),
            NUMAGC_ERR_NULL_ARGUMENT,
            "exports",
        );
        let mut ex = null_mut();
        ok(numagc_exports_new(&mut ex));
        refused(
            numagc_exports_register(ex, null(), Some(echo), null_mut(), &mut id),
            NUMAGC_ERR_NULL_ARGUMENT,
            "name",
        );
        refused(
            numagc_exports_register(ex, cstr("x").as_ptr(), None, null_mut(), &mut id),
            NUMAGC_ERR_NULL_ARGUMENT,
            "f",
        );
        ok(numagc_exports_register(
            ex,
            cstr("x").as_ptr(),
            Some(echo),
            null_mut(),
            &mut id,
        ));
        refused(
            numagc_exports_register(ex, cstr("x").as_ptr(), Some(echo), null_mut(), &mut id),
            NUMAGC_ERR_MISUSE,
            "registered twice",
        );
        let mut g = null_mut();
        refused(
            numagc_pe_group_new(2, null(), null_mut(), &mut g),
            NUMAGC_ERR_NULL_ARGUMENT,
            "exports",
        );
        // The group takes the table whatever the outcome: a new one each.
        refused(
            numagc_pe_group_new(2, null(), ex, &mut g),
            NUMAGC_ERR_NULL_ARGUMENT,
            "cfg",
        );
        let cfg = config(&[]);
        for pes in [0, 1025, usize::MAX] {
            let mut ex = null_mut();
            ok(numagc_exports_new(&mut ex));
            refused(
                numagc_pe_group_new(pes, cfg, ex, &mut g),
                NUMAGC_ERR_INVALID_CONFIG,
                "pes",
            );
            assert!(g.is_null());
        }
        ok(numagc_config_free(cfg));
        ok(numagc_exports_free(null_mut()));
        ok(numagc_pe_group_free(null_mut()));
        refused(
            numagc_pe_group_run(null(), None, null_mut()),
            NUMAGC_ERR_NULL_ARGUMENT,
            "group",
        );
        let (mut a, mut b) = (0, 0);
        refused(
            numagc_pe_group_settle(null(), &mut a, &mut b),
            NUMAGC_ERR_NULL_ARGUMENT,
            "group",
        );
    }
}

#[test]
fn a_groups_calls_refuse_bad_ids_pes_counts_and_values_and_go_on() {
    let g = Group::new();
    // SAFETY: a live group.
    unsafe {
        refused(
            numagc_pe_group_run(g.0, None, null_mut()),
            NUMAGC_ERR_NULL_ARGUMENT,
            "callback",
        );
        let mut d = 0;
        // An offset out of range, then a good descriptor on both PEs.
        refused(
            numagc_pe_group_register_mixed(
                g.0,
                cstr("bad").as_ptr(),
                1,
                [3usize].as_ptr(),
                1,
                0,
                &mut d,
            ),
            NUMAGC_ERR_INVALID_DESCRIPTOR,
            "bad",
        );
        ok(numagc_pe_group_register_mixed(
            g.0,
            cstr("cell").as_ptr(),
            1,
            [0usize].as_ptr(),
            1,
            0,
            &mut d,
        ));
    }
    let mut stale: *mut numagc_scope = null_mut();
    let rc = g.run(|s| {
        stale = s;
        // SAFETY: `s` is this callback's scope; out-pointers are locals.
        unsafe {
            let mut v = 0;
            let args = [numagc_int(5)];
            refused(
                numagc_call_on(s, 1, 7, args.as_ptr(), 1, &mut v),
                NUMAGC_ERR_INVALID_ARGUMENT,
                "export id 7",
            );
            refused(
                numagc_call_on(s, 2, 0, args.as_ptr(), 1, &mut v),
                NUMAGC_ERR_MISUSE,
                "the group has 2 PEs",
            );
            refused(
                numagc_call_on(s, 1, 0, null(), 1, &mut v),
                NUMAGC_ERR_NULL_ARGUMENT,
                "args",
            );
            refused(
                numagc_call_on(s, 1, 0, args.as_ptr(), usize::MAX, &mut v),
                NUMAGC_ERR_INVALID_ARGUMENT,
                "NUMAGC_MAX_ENV",
            );
            refused(
                numagc_call_on(s, 1, 0, [0x1234_0000u64].as_ptr(), 1, &mut v),
                NUMAGC_ERR_BAD_VALUE,
                "",
            );
            let (mut a, mut b) = (0, 0);
            refused(
                numagc_par2_export(s, 3, args.as_ptr(), 1, None, null_mut(), &mut a, &mut b),
                NUMAGC_ERR_NULL_ARGUMENT,
                "a",
            );
            // Good calls: echo on PE 1, and here.
            ok(numagc_call_on(s, 1, 0, args.as_ptr(), 1, &mut v));
            assert_eq!(v, numagc_int(5));
            ok(numagc_call_on(s, 0, 0, args.as_ptr(), 1, &mut v));
            assert_eq!(v, numagc_int(5));
            // The remote calls on local values are the local operations.
            let mut arr = 0;
            ok(numagc_alloc_array(s, 2, numagc_int(1), &mut arr));
            ok(numagc_remote_set(s, arr, 1, numagc_int(9)));
            ok(numagc_remote_get(s, arr, 1, &mut v));
            assert_eq!(v, numagc_int(9));
            refused(numagc_remote_get(s, arr, 2, &mut v), NUMAGC_ERR_MISUSE, "");
            let (mut remote, mut len) = (7, 0);
            ok(numagc_remote_info(s, arr, &mut remote, &mut len));
            assert_eq!((remote, len), (0, 2));
            ok(numagc_remote_info(s, arr, &mut remote, null_mut()));
            ok(numagc_resolve(s, numagc_int(3), &mut v));
            assert_eq!(v, numagc_int(3));
            let mut vec = 0;
            ok(numagc_alloc_vector(
                s,
                [numagc_int(1)].as_ptr(),
                1,
                &mut vec,
            ));
            refused(
                numagc_remote_set(s, vec, 0, numagc_int(2)),
                NUMAGC_ERR_MISUSE,
                "",
            );
        }
        NUMAGC_OK as c_int
    });
    ok(rc);
    // A scope kept after its callback: refused, not undefined.
    let mut v = 0;
    // SAFETY: `stale` is never dereferenced by the library (a token).
    refused(
        unsafe { numagc_call_on(stale, 1, 0, [numagc_int(1)].as_ptr(), 1, &mut v) },
        NUMAGC_ERR_NOT_ON_VPROC,
        "",
    );
    let (mut git, mut imports) = (9, 9);
    // SAFETY: a live group and local out-pointers.
    ok(unsafe { numagc_pe_group_settle(g.0, &mut git, &mut imports) });
    assert_eq!((git, imports), (0, 0));
}

#[test]
fn a_runtime_outside_a_group_has_no_exportable_functions() {
    let rt = crate::tests::Rt::new(1, &[]);
    ok(rt.run(0, |s| {
        let mut v = 0;
        // SAFETY: this callback's scope and local out-pointers.
        unsafe {
            refused(
                numagc_call_on(s, 0, 0, [numagc_int(1)].as_ptr(), 1, &mut v),
                NUMAGC_ERR_INVALID_ARGUMENT,
                "no exportable function",
            );
        }
        NUMAGC_OK as c_int
    }));
}
