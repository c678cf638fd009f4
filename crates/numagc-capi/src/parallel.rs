//! Fork-join for C: `numagc_par2`, the Rust `Scope::par2` with C tasks.
//!
//! Each side is a C function with an explicit environment, run as a C body
//! of its own (`body::run_body`): a fresh scope token and handle table on
//! whichever vproc runs it, so the thread rule and the frame checks apply
//! to tasks exactly as to callbacks. A task's failure (a nonzero status,
//! frames left open, a bad result) is kept aside as the C code and message
//! it is; the Rust task returns a marker error, and `numagc_par2` returns
//! the kept failure of `a`, else of `b` (`Scope::par2`'s order).

use crate::activation::with_state;
use crate::body::{run_body, BodyArgs, Ended, UserData};
use crate::runtime::{lock, RtShared};
use crate::scope::{numagc_scope, CallState};
use crate::status::numagc_status::*;
use crate::status::{count_arg, guard, out, Fail, Res};
use crate::{numagc_value, NUMAGC_MAX_ENV};
use numagc_rs::{Error, Handle, Scope};
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

/// A task of `numagc_par2`: runs on some vproc with a scope of its own
/// (valid only during the call, on that thread), the fork's environment as
/// `n` handles of that scope (`env`), and its `userdata`. It writes its
/// result to `*result`, a value of its scope (a handle outside any frame —
/// use `numagc_frame_return` — an environment handle, or an immediate), and
/// returns 0; any other status fails the fork with that code. Leaving
/// `*result` unset (0) or frames open is an error too.
pub type numagc_task_fn = Option<
    unsafe extern "C" fn(
        scope: *mut numagc_scope,
        env: *const numagc_value,
        n: usize,
        userdata: *mut c_void,
        result: *mut numagc_value,
    ) -> c_int,
>;

pub(crate) type TaskFn = unsafe extern "C" fn(
    *mut numagc_scope,
    *const numagc_value,
    usize,
    *mut c_void,
    *mut numagc_value,
) -> c_int;

/// Where a side's failure waits for `numagc_par2`: a local of the fork,
/// which both sides borrow (`par2` returns only after both ended).
pub(crate) type Failed = Mutex<Option<Fail>>;

/// Runs `what` (side "a" or "b" of a fork, an exported function) as a C
/// body on `s`.
pub(crate) fn run_task<'i>(
    s: &mut Scope<'i>,
    env: &[Handle<'i>],
    f: TaskFn,
    data: UserData,
    rt: &Arc<RtShared>,
    what: &str,
    failed: &Failed,
) -> numagc_rs::Result<Handle<'i>> {
    let vproc = s.vproc();
    let result = Cell::new(0 as numagc_value);
    let args = BodyArgs {
        env,
        received: None,
        thread: false,
        word_task: false,
    };
    let call = |scope, env: &[numagc_value], _, _| {
        // SAFETY: `f` is the C function given to `numagc_par2` with this
        // signature; `env` has `env.len()` values and `result` is a local
        // that outlives the call; `data` is the caller's pointer, handed
        // back untouched (the caller vouched that it may be used from any
        // vproc thread). C code cannot unwind into Rust.
        unsafe { f(scope, env.as_ptr(), env.len(), data.0, result.as_ptr()) }
    };
    // The body's name, formatted only into a failure's message.
    let what = format_args!("{what} on vproc {vproc}");
    let r = run_body(
        s,
        rt,
        args,
        call,
        |st: &mut CallState, ended: Ended| -> Res<Handle<'static>> {
            if let Some(f) = ended.failure(&format_args!("the {what}")) {
                return Err(f);
            }
            let result = result.get();
            if result == 0 {
                return Err(Fail::new(
                    NUMAGC_ERR_BAD_VALUE,
                    format!("the {what} returned NUMAGC_OK but left *result unset (0)"),
                ));
            }
            st.handle(result).map_err(|f| Fail {
                code: f.code,
                message: format!("the result of the {what}: {}", f.message),
            })
        },
    );
    match r {
        // The handle names a root slot of `s` (or is an immediate): valid
        // in `'i`, where `par2` reads it.
        Ok(h) => Ok(h),
        Err(f) => {
            let message = f.message.clone();
            *lock(failed) = Some(f);
            Err(Error::misuse(message))
        }
    }
}

/// Runs tasks `a` and `b` in parallel, each with the `n` values of `env`,
/// and waits for both: `a` runs here at once, `b` is offered to idle vprocs
/// and runs here after `a` unless one took it (its environment is then
/// promoted). `*out_a` and `*out_b` are their results, as handles in the
/// caller's innermost frame or immediates. Tasks may fork again.
///
/// `userdata_a` and `userdata_b` are handed to the tasks untouched; `b`'s
/// may be used on another vproc thread, at the same time as `a` runs, so
/// what they point to must allow that (and stay valid until this returns).
///
/// Errors: a task's nonzero status is returned with a message quoting its
/// last error; a task that returned with frames open gives
/// `NUMAGC_ERR_UNBALANCED_FRAME`, one that left `*result` unset or not a
/// live value of its scope `NUMAGC_ERR_BAD_VALUE`; more than
/// `NUMAGC_MAX_ENV` values in `env` is `NUMAGC_ERR_INVALID_ARGUMENT`, and
/// no task runs. When both fail, `a`'s
/// error is returned. Both tasks have finished when this returns, whatever
/// happened; outputs are 0 after a failure.
#[no_mangle]
pub unsafe extern "C" fn numagc_par2(
    scope: *mut numagc_scope,
    env: *const numagc_value,
    n: usize,
    a: numagc_task_fn,
    userdata_a: *mut c_void,
    b: numagc_task_fn,
    userdata_b: *mut c_void,
    out_a: *mut numagc_value,
    out_b: *mut numagc_value,
) -> c_int {
    guard(|| {
        let oa = out(out_a, "out_a")?;
        let ob = out(out_b, "out_b")?;
        (*oa, *ob) = (0, 0);
        let fa: TaskFn = a.ok_or_else(|| Fail::null("a"))?;
        let fb: TaskFn = b.ok_or_else(|| Fail::null("b"))?;
        count_arg(n, NUMAGC_MAX_ENV, "n", "NUMAGC_MAX_ENV")?;
        let (da, db) = (UserData(userdata_a), UserData(userdata_b));
        let [va, vb] = with_state(scope, |st| {
            let hs = st.handles_arg(env, n, "env")?;
            let rt = st.rt.clone();
            let (failed_a, failed_b): (Failed, Failed) = Default::default();
            let (rt_a, rt_b, fail_a, fail_b) = (&rt, &rt, &failed_a, &failed_b);
            st.produce_n(|s, [slot_a, slot_b]| {
                let r = s.par2(
                    hs.as_slice(),
                    move |s, env| run_task(s, env, fa, da, rt_a, "par2 task a", fail_a),
                    move |s, env| run_task(s, env, fb, db, rt_b, "par2 task b", fail_b),
                );
                match r {
                    Ok((x, y)) => {
                        s.assign(slot_a, x);
                        s.assign(slot_b, y);
                        Ok(())
                    }
                    // A C failure kept aside, else the library's own error
                    // (a task stolen by another vproc that panicked).
                    Err(e) => Err(lock(&failed_a)
                        .take()
                        .or_else(|| lock(&failed_b).take())
                        .unwrap_or_else(|| e.into())),
                }
            })
        })?;
        (*oa, *ob) = (va, vb);
        Ok(())
    })
}
