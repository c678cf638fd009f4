//! Weak references, ephemerons and finalisers for C: `Scope::ephemeron`,
//! `Scope::weak_ref`, `Scope::ephemeron_key` / `_data`,
//! `Scope::finalise`, `Scope::finalise_last` and `Scope::run_finalisers`
//! of the Rust API (multicore-ocaml-gc.txt §5.1–5.2).
//!
//! A C finaliser is a C body (`body::run_body`) like a `numagc_par2`
//! task: it gets a scope of its own, valid during the call on the vproc
//! thread that runs it, and for `numagc_finalise` the value as a handle of
//! that scope. It runs on the vproc that registered it, after the
//! collection that found the value unreachable: at the end of the callback
//! (before `numagc_run_on` returns), when an idle vproc has joined a
//! collection, or in `numagc_run_finalisers`. A nonzero status, frames left
//! open or a blocking section left open fail it; its message is kept for
//! `numagc_take_thread_errors`, and the other finalisers still run.

use crate::activation::with_state;
use crate::body::{run_body, BodyArgs, UserData};
use crate::numagc_value;
use crate::runtime::RtShared;
use crate::scope::numagc_scope;
use crate::status::{guard, out, Fail};
use numagc_rs::{Error, Handle, Scope};
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// A finaliser of `numagc_finalise`: gets its scope, the value (a handle
/// of that scope) and its `userdata`; returns 0 (`NUMAGC_OK`) or a status.
pub type numagc_finaliser_fn = Option<
    unsafe extern "C" fn(
        scope: *mut numagc_scope,
        value: numagc_value,
        userdata: *mut c_void,
    ) -> c_int,
>;

/// A finaliser of `numagc_finalise_last`: gets its scope and `userdata`.
pub type numagc_finaliser_last_fn =
    Option<unsafe extern "C" fn(scope: *mut numagc_scope, userdata: *mut c_void) -> c_int>;

/// A new ephemeron with `key` and `data` (OCaml's `Ephemeron.K1.make`):
/// `data` is kept alive while the ephemeron and `key` both are; once a
/// collection finds `key` unreachable, both are cleared. An immediate key
/// never dies. `*out` is a handle in the innermost frame. May collect.
/// `NUMAGC_ERR_BAD_VALUE` for a handle that is not live.
#[no_mangle]
pub unsafe extern "C" fn numagc_ephemeron(
    scope: *mut numagc_scope,
    key: numagc_value,
    data: numagc_value,
    out_value: *mut numagc_value,
) -> c_int {
    guard(|| {
        let o = out(out_value, "out")?;
        *o = 0;
        *o = with_state(scope, |st| {
            let (k, d) = (st.handle(key)?, st.handle(data)?);
            st.produce(|s, slot| {
                let e = s.ephemeron(k, d)?;
                s.assign(slot, e);
                Ok(())
            })
        })?;
        Ok(())
    })
}

/// A weak reference to `target`: an ephemeron whose data is `NUMAGC_NIL`.
#[no_mangle]
pub unsafe extern "C" fn numagc_weak_ref(
    scope: *mut numagc_scope,
    target: numagc_value,
    out_value: *mut numagc_value,
) -> c_int {
    // SAFETY: the caller's arguments, passed on under the same contract.
    unsafe { numagc_ephemeron(scope, target, crate::NUMAGC_NIL, out_value) }
}

/// Reads field `key` (else data) of ephemeron `e` into `*out_value`, and
/// whether it is still there into `*out_present`.
fn read(
    scope: *mut numagc_scope,
    e: numagc_value,
    key: bool,
    out_value: *mut numagc_value,
    out_present: *mut c_int,
) -> c_int {
    guard(|| {
        let o = out(out_value, "out")?;
        let present = out(out_present, "out_present")?;
        *o = 0;
        *present = 0;
        let (v, p) = with_state(scope, |st| {
            let h = st.handle(e)?;
            let mut found = false;
            let v = st.produce(|s, slot| {
                let field = if key {
                    s.ephemeron_key(h)?
                } else {
                    s.ephemeron_data(h)?
                };
                if let Some(f) = field {
                    s.assign(slot, f);
                    found = true;
                }
                Ok(())
            })?;
            Ok((v, found))
        })?;
        *o = v;
        *present = c_int::from(p);
        Ok(())
    })
}

/// An ephemeron's key (a weak reference's target): `*out_present` is 1 and
/// `*out` the key (a handle in the innermost frame, or an immediate), or
/// `*out_present` is 0 and `*out` is `NUMAGC_NIL` once a collection cleared
/// it. `NUMAGC_ERR_MISUSE` when `e` is not an ephemeron or weak reference.
#[no_mangle]
pub unsafe extern "C" fn numagc_ephemeron_key(
    scope: *mut numagc_scope,
    e: numagc_value,
    out_value: *mut numagc_value,
    out_present: *mut c_int,
) -> c_int {
    read(scope, e, true, out_value, out_present)
}

/// An ephemeron's data, like `numagc_ephemeron_key` (a weak reference's
/// data is `NUMAGC_NIL` while its target lives).
#[no_mangle]
pub unsafe extern "C" fn numagc_ephemeron_data(
    scope: *mut numagc_scope,
    e: numagc_value,
    out_value: *mut numagc_value,
    out_present: *mut c_int,
) -> c_int {
    read(scope, e, false, out_value, out_present)
}

/// The Rust error of a failed C finaliser (kept for
/// `numagc_take_thread_errors`).
fn finaliser_failed(vproc: usize, ended: crate::body::Ended) -> numagc_rs::Result<()> {
    match ended.failure(&format_args!("a finaliser on vproc {vproc}")) {
        None => Ok(()),
        Some(f) => Err(Error::misuse(f.message)),
    }
}

/// Runs C finaliser body `call` on `s` with `env`.
fn run_finaliser<'i>(
    s: &mut Scope<'i>,
    rt: &Arc<RtShared>,
    env: &[Handle<'i>],
    call: impl FnOnce(*mut numagc_scope, &[numagc_value]) -> c_int,
) -> numagc_rs::Result<()> {
    let vproc = s.vproc();
    let args = BodyArgs {
        env,
        received: None,
        thread: false,
        word_task: false,
    };
    run_body(
        s,
        rt,
        args,
        |scope, env, _, _| call(scope, env),
        |_, ended| finaliser_failed(vproc, ended),
    )
}

/// Registers `f` to run once with `value` when a collection first finds
/// `value` unreachable (OCaml's `Gc.finalise`): the value is kept for `f`,
/// which may make it reachable again (a global root). `f` runs later on
/// this vproc, outside the collection, with a scope of its own; it may
/// allocate. `userdata` is handed back untouched. `NUMAGC_ERR_MISUSE` for
/// an immediate (it is never collected), `NUMAGC_ERR_NULL_ARGUMENT` for a
/// NULL `f`, `NUMAGC_ERR_BAD_VALUE` for a handle that is not live.
#[no_mangle]
pub unsafe extern "C" fn numagc_finalise(
    scope: *mut numagc_scope,
    value: numagc_value,
    f: numagc_finaliser_fn,
    userdata: *mut c_void,
) -> c_int {
    guard(|| {
        let f = f.ok_or_else(|| Fail::null("f"))?;
        let data = UserData(userdata);
        with_state(scope, |st| {
            let h = st.handle(value)?;
            let rt = st.rt.clone();
            st.sc().finalise(h, move |s, v| {
                let data = data;
                run_finaliser(s, &rt, &[v], |scope, env| {
                    // SAFETY: `f` is the C function given to
                    // `numagc_finalise` with this signature; `env[0]` is the
                    // value rooted in the finaliser's scope; `data` is the
                    // caller's pointer, handed back untouched. C code cannot
                    // unwind into Rust.
                    unsafe { f(scope, env[0], data.0) }
                })
            })?;
            Ok(())
        })
    })
}

/// Registers `f` to run once after `value` has been found unreachable and
/// collected (OCaml's `Gc.finalise_last`): `f` does not get the value.
/// Errors as `numagc_finalise`.
#[no_mangle]
pub unsafe extern "C" fn numagc_finalise_last(
    scope: *mut numagc_scope,
    value: numagc_value,
    f: numagc_finaliser_last_fn,
    userdata: *mut c_void,
) -> c_int {
    guard(|| {
        let f = f.ok_or_else(|| Fail::null("f"))?;
        let data = UserData(userdata);
        with_state(scope, |st| {
            let h = st.handle(value)?;
            let rt = st.rt.clone();
            st.sc().finalise_last(h, move |s| {
                let data = data;
                run_finaliser(s, &rt, &[], |scope, _| {
                    // SAFETY: as in `numagc_finalise`, without the value.
                    unsafe { f(scope, data.0) }
                })
            })?;
            Ok(())
        })
    })
}

/// Runs this vproc's due finalisers now (each as a C body of its own);
/// `*out_ran` (may be NULL) gets how many ran. Finalisers also run at the
/// end of every callback.
#[no_mangle]
pub unsafe extern "C" fn numagc_run_finalisers(
    scope: *mut numagc_scope,
    out_ran: *mut usize,
) -> c_int {
    guard(|| {
        let ran = with_state(scope, |st| Ok(st.sc().run_finalisers()))?;
        if !out_ran.is_null() {
            // SAFETY: a non-NULL `out_ran` points to a writable `size_t`
            // (the safety contract of the header).
            unsafe { *out_ran = ran };
        }
        Ok(())
    })
}

/// Finalisers of this vproc that are due and have not run yet.
#[no_mangle]
pub unsafe extern "C" fn numagc_pending_finalisers(
    scope: *mut numagc_scope,
    out_count: *mut usize,
) -> c_int {
    guard(|| {
        let o = out(out_count, "out")?;
        *o = with_state(scope, |st| Ok(st.sc().pending_finalisers()))?;
        Ok(())
    })
}
