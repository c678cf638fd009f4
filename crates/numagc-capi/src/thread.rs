//! Threads of the language for C: `numagc_spawn`, and how a C thread body
//! says what it does next (`numagc_next_*`), the Rust `Scope::spawn` and
//! `Next`.
//!
//! A thread is in continuation-passing style. Its body, and every
//! continuation after it, is a C function of type `numagc_thread_fn` that
//! runs as a C body of its own (`body::run_body`: a fresh scope token and
//! handle table on whichever vproc runs it) and is given a `numagc_next*`.
//! Before returning 0 it calls exactly one `numagc_next_*` function, which
//! records the step — exit, yield, send, receive, or a choice — with the
//! environment (values of its scope) and the C continuation to run next.
//! When the body returns, the recorded step becomes the Rust `Next`: its
//! continuations are Rust closures that run the C continuation as the next
//! C body. Like a scope, a `numagc_next*` is a token (the scope's token
//! with bit 3 set), checked on every use and dead once its body returned.

use crate::activation::with_state;
use crate::body::{run_body, BodyArgs, UserData, NEXT_BIT};
use crate::channel::{channel_of, numagc_channel, numagc_dir};
use crate::runtime::{runtime_ref, RtShared};
use crate::scope::{numagc_scope, CallState};
use crate::status::numagc_status::*;
use crate::status::{count_arg, guard, out, slice_arg, Fail, Res};
use crate::{numagc_runtime, numagc_value, NUMAGC_MAX_CASES, NUMAGC_MAX_ENV};
use numagc_rs::{Case, Channel, Error, Handle, Next, Scope};
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::Arc;

/// What a C thread body is given to say what it does next: call exactly
/// one `numagc_next_*` function on it before returning 0. Valid only during
/// the body, on its thread (an opaque token, checked like a scope).
pub struct numagc_next {
    _private: [u8; 0],
}

/// A thread's body or continuation. It runs on some vproc with a scope of
/// its own (valid during the call, on that thread), its environment as `n`
/// handles of that scope, the value `received` by the receive it continues
/// (`NUMAGC_NIL` for a body, or after a yield or a send), and its
/// `userdata`. It says what comes next by calling exactly one
/// `numagc_next_*` on `next`, and returns 0. A nonzero status, no
/// `numagc_next_*` call, two of them, or frames left open end the thread
/// with an error (`numagc_take_thread_errors`); the vproc carries on.
pub type numagc_thread_fn = Option<
    unsafe extern "C" fn(
        scope: *mut numagc_scope,
        env: *const numagc_value,
        n: usize,
        received: numagc_value,
        userdata: *mut c_void,
        next: *mut numagc_next,
    ) -> c_int,
>;

type ThreadFn = unsafe extern "C" fn(
    *mut numagc_scope,
    *const numagc_value,
    usize,
    numagc_value,
    *mut c_void,
    *mut numagc_next,
) -> c_int;

/// One case of a thread's choice (`numagc_next_select`): receive from
/// `channel`, or send `value` on it, then run `k(…, userdata, …)` with the
/// choice's environment (and the value received).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct numagc_case {
    pub channel: *mut numagc_channel,
    /// A `numagc_dir`: `NUMAGC_RECV` or `NUMAGC_SEND`; any other value is
    /// `NUMAGC_ERR_INVALID_ARGUMENT`.
    pub dir: c_int,
    pub value: numagc_value,
    pub k: numagc_thread_fn,
    pub userdata: *mut c_void,
}

/// What a thread step said about its next step, read when it returns.
#[derive(Default)]
pub(crate) struct NextSlot {
    spec: Option<NextSpec>,
    /// A second `numagc_next_*` call: the step fails whatever it returns.
    twice: Option<String>,
    /// The message of the last `numagc_next_*` call that failed.
    failed: Option<String>,
}

enum NextSpec {
    Exit,
    Yield {
        env: Vec<Handle<'static>>,
        k: ThreadFn,
        data: UserData,
    },
    Select {
        env: Vec<Handle<'static>>,
        cases: Vec<CaseSpec>,
    },
}

struct CaseSpec {
    chan: Channel,
    /// The value to send; `None` for a receive.
    value: Option<Handle<'static>>,
    k: ThreadFn,
    data: UserData,
}

/// Runs one step of a C thread on `s` and turns what it said into a `Next`
/// whose continuations run the next C steps.
fn step<'i>(
    s: &mut Scope<'i>,
    env: &[Handle<'i>],
    received: Option<Handle<'i>>,
    f: ThreadFn,
    data: UserData,
    rt: &Arc<RtShared>,
) -> numagc_rs::Result<Next<'i>> {
    let vproc = s.vproc();
    let args = BodyArgs {
        env,
        received,
        thread: true,
        word_task: false,
    };
    let call = |scope, env: &[numagc_value], received, next| {
        // SAFETY: `f` is a C function given to `numagc_spawn` or a
        // `numagc_next_*` with this signature; `env` has `env.len()` values;
        // `next` is this body's token; `data` is the caller's pointer, handed
        // back untouched (the caller vouched that any vproc thread may use
        // it). C code cannot unwind into Rust.
        unsafe { f(scope, env.as_ptr(), env.len(), received, data.0, next) }
    };
    let spec = run_body(s, rt, args, call, |st: &mut CallState, ended| -> Res<NextSpec> {
        let what = format_args!("the C thread body on vproc {vproc}");
        if let Some(fail) = ended.failure(&what) {
            return Err(fail);
        }
        let slot = st.next.take().unwrap_or_default();
        if let Some(m) = slot.twice {
            return Err(Fail::new(NUMAGC_ERR_MISUSE, format!("{what}: {m}")));
        }
        slot.spec.ok_or_else(|| {
            let failed = slot.failed.map_or(String::new(), |m| format!(" (its last numagc_next_* call failed: {m})"));
            Fail::new(
                NUMAGC_ERR_MISUSE,
                format!("{what} returned NUMAGC_OK without saying what comes next: call exactly one numagc_next_* function before returning{failed}"),
            )
        })
    })
    .map_err(|f| Error::misuse(f.message))?;
    Ok(match spec {
        NextSpec::Exit => Next::exit(),
        NextSpec::Yield { env, k, data } => {
            let rt = rt.clone();
            Next::yield_now(&env, move |s, env| step(s, env, None, k, data, &rt))
        }
        NextSpec::Select { env, cases } => {
            let cases = cases
                .into_iter()
                .map(
                    |CaseSpec {
                         chan,
                         value,
                         k,
                         data,
                     }| {
                        let rt = rt.clone();
                        match value {
                            Some(v) => {
                                Case::send(&chan, v, move |s, env| step(s, env, None, k, data, &rt))
                            }
                            None => Case::recv(&chan, move |s, env, v| {
                                step(s, env, Some(v), k, data, &rt)
                            }),
                        }
                    },
                )
                .collect();
            Next::select(&env, cases)
        }
    })
}

fn spawn(
    scope: *mut numagc_scope,
    vproc: Option<usize>,
    env: *const numagc_value,
    n: usize,
    body: numagc_thread_fn,
    userdata: *mut c_void,
) -> c_int {
    guard(|| {
        let f: ThreadFn = body.ok_or_else(|| Fail::null("body"))?;
        count_arg(n, NUMAGC_MAX_ENV, "n", "NUMAGC_MAX_ENV")?;
        let data = UserData(userdata);
        with_state(scope, |st| {
            let hs = st.handles_arg(env, n, "env")?;
            let rt = st.rt.clone();
            let on = vproc.unwrap_or(st.vproc);
            st.sc().spawn_on(on, hs.as_slice(), move |s, env| {
                step(s, env, None, f, data, &rt)
            })?;
            Ok(())
        })
    })
}

/// Starts a thread whose body is `body`, with the `n` values of `env`
/// (promoted: the thread may run on any vproc) and `userdata`, on this
/// vproc's ready queue; an idle vproc may steal it. Returns at once. The
/// thread's `userdata`, and that of its continuations, may be used on any
/// vproc thread, and must stay valid until the thread has ended; numagc
/// never frees it. A thread still blocked when the runtime is freed is
/// dropped without running again. More than `NUMAGC_MAX_ENV` values in
/// `env` is `NUMAGC_ERR_INVALID_ARGUMENT`, refused before `env` is read.
#[no_mangle]
pub unsafe extern "C" fn numagc_spawn(
    scope: *mut numagc_scope,
    env: *const numagc_value,
    n: usize,
    body: numagc_thread_fn,
    userdata: *mut c_void,
) -> c_int {
    spawn(scope, None, env, n, body, userdata)
}

/// `numagc_spawn` onto vproc `vproc`'s ready queue (`NUMAGC_ERR_MISUSE` if
/// there is no such vproc).
#[no_mangle]
pub unsafe extern "C" fn numagc_spawn_on(
    scope: *mut numagc_scope,
    vproc: usize,
    env: *const numagc_value,
    n: usize,
    body: numagc_thread_fn,
    userdata: *mut c_void,
) -> c_int {
    spawn(scope, Some(vproc), env, n, body, userdata)
}

/// Records the step that `build` makes as the answer of the thread body
/// that owns `next`.
fn set_next(next: *mut numagc_next, build: impl FnOnce(&mut CallState) -> Res<NextSpec>) -> c_int {
    guard(|| {
        if next.is_null() {
            return Err(Fail::null("next"));
        }
        let token = next.addr();
        if token & 0xF != NEXT_BIT {
            return Err(Fail::new(
                NUMAGC_ERR_NOT_ON_VPROC,
                format!("next {token:#x} is not the numagc_next of a running thread body"),
            ));
        }
        let scope = std::ptr::without_provenance_mut::<numagc_scope>(token & !0xF);
        with_state(scope, |st| {
            let Some(slot) = st.next.as_ref() else {
                return Err(Fail::new(
                    NUMAGC_ERR_MISUSE,
                    format!("next {token:#x} does not belong to a thread body (callbacks and par2 tasks have none)"),
                ));
            };
            if slot.spec.is_some() {
                let m = "numagc_next_* was called twice: a thread body says what comes next exactly once";
                st.next.get_or_insert_with(Default::default).twice = Some(m.to_string());
                return Err(Fail::new(NUMAGC_ERR_MISUSE, m));
            }
            match build(st) {
                Ok(spec) => {
                    st.next.get_or_insert_with(Default::default).spec = Some(spec);
                    Ok(())
                }
                Err(fail) => {
                    st.next.get_or_insert_with(Default::default).failed =
                        Some(fail.message.clone());
                    Err(fail)
                }
            }
        })
    })
}

/// The environment of a continuation: `n` values of the body's scope, at
/// most `NUMAGC_MAX_ENV` (`NUMAGC_ERR_INVALID_ARGUMENT` before `env` is read).
fn env_of(st: &CallState, env: *const numagc_value, n: usize) -> Res<Vec<Handle<'static>>> {
    count_arg(n, NUMAGC_MAX_ENV, "n", "NUMAGC_MAX_ENV")?;
    Ok(st.handles_arg(env, n, "env")?.as_slice().to_vec())
}

/// The thread ends.
#[no_mangle]
pub extern "C" fn numagc_next_exit(next: *mut numagc_next) -> c_int {
    set_next(next, |_| Ok(NextSpec::Exit))
}

/// The thread lets other threads run, then continues with
/// `k(…, env, n, NUMAGC_NIL, userdata, …)` (on this vproc's ready queue).
#[no_mangle]
pub unsafe extern "C" fn numagc_next_yield(
    next: *mut numagc_next,
    env: *const numagc_value,
    n: usize,
    k: numagc_thread_fn,
    userdata: *mut c_void,
) -> c_int {
    set_next(next, |st| {
        let k = k.ok_or_else(|| Fail::null("k"))?;
        Ok(NextSpec::Yield {
            env: env_of(st, env, n)?,
            k,
            data: UserData(userdata),
        })
    })
}

/// The thread sends `value` on `ch` (it is promoted) and, once a receiver
/// has taken it, continues with `k(…, env, n, NUMAGC_NIL, userdata, …)`.
/// It blocks without holding its vproc.
#[no_mangle]
pub unsafe extern "C" fn numagc_next_send(
    next: *mut numagc_next,
    ch: *mut numagc_channel,
    value: numagc_value,
    env: *const numagc_value,
    n: usize,
    k: numagc_thread_fn,
    userdata: *mut c_void,
) -> c_int {
    let case = numagc_case {
        channel: ch,
        dir: numagc_dir::NUMAGC_SEND as c_int,
        value,
        k,
        userdata,
    };
    // SAFETY: one case, from a local that outlives the call.
    unsafe { numagc_next_select(next, env, n, &case, 1) }
}

/// The thread receives a value from `ch` and continues with
/// `k(…, env, n, value, userdata, …)`. It blocks without holding its vproc.
#[no_mangle]
pub unsafe extern "C" fn numagc_next_recv(
    next: *mut numagc_next,
    ch: *mut numagc_channel,
    env: *const numagc_value,
    n: usize,
    k: numagc_thread_fn,
    userdata: *mut c_void,
) -> c_int {
    let case = numagc_case {
        channel: ch,
        dir: numagc_dir::NUMAGC_RECV as c_int,
        value: 0,
        k,
        userdata,
    };
    // SAFETY: one case, from a local that outlives the call.
    unsafe { numagc_next_select(next, env, n, &case, 1) }
}

/// The thread waits until one of the `n_cases` cases can complete,
/// completes it alone (the first in order when several can), and continues
/// with that case's `k` and `userdata`, the environment `env`, and the value
/// received (`NUMAGC_NIL` after a send). No cases is `NUMAGC_ERR_MISUSE`
/// (call `numagc_next_exit`); more than `NUMAGC_MAX_CASES` cases or
/// `NUMAGC_MAX_ENV` values, or a `dir` that is not a `numagc_dir`, is
/// `NUMAGC_ERR_INVALID_ARGUMENT`.
#[no_mangle]
pub unsafe extern "C" fn numagc_next_select(
    next: *mut numagc_next,
    env: *const numagc_value,
    n: usize,
    cases: *const numagc_case,
    n_cases: usize,
) -> c_int {
    set_next(next, |st| {
        count_arg(n_cases, NUMAGC_MAX_CASES, "n_cases", "NUMAGC_MAX_CASES")?;
        let cases = slice_arg(cases, n_cases, "cases")?;
        if cases.is_empty() {
            return Err(Fail::new(
                NUMAGC_ERR_MISUSE,
                "a choice of no cases would wait for ever: call numagc_next_exit to end the thread",
            ));
        }
        let env = env_of(st, env, n)?;
        let mut specs = Vec::with_capacity(cases.len());
        for (i, c) in cases.iter().enumerate() {
            let dir = numagc_dir::from_c(c.dir, &format!("cases[{i}].dir"))?;
            let k =
                c.k.ok_or_else(|| Fail::null(if n_cases == 1 { "k" } else { "cases[].k" }))?;
            let chan = channel_of(
                c.channel,
                st.rt.id,
                if n_cases == 1 {
                    "ch"
                } else {
                    "cases[].channel"
                },
            )
            .map_err(|f| {
                if n_cases == 1 {
                    f
                } else {
                    Fail {
                        code: f.code,
                        message: format!("case {i}: {}", f.message),
                    }
                }
            })?;
            let value = match dir {
                numagc_dir::NUMAGC_SEND => Some(st.handle(c.value)?),
                numagc_dir::NUMAGC_RECV => None,
            };
            specs.push(CaseSpec {
                chan,
                value,
                k,
                data: UserData(c.userdata),
            });
        }
        Ok(NextSpec::Select { env, cases: specs })
    })
}

/// The errors of threads that failed since the last call, as a JSON array
/// of messages, oldest first (at most 64 are kept; the statistics' total
/// `threads_failed` counts them all). Free `*out` with `numagc_string_free`.
#[no_mangle]
pub unsafe extern "C" fn numagc_take_thread_errors(
    rt: *const numagc_runtime,
    out_json: *mut *mut c_char,
) -> c_int {
    guard(|| {
        let o = out(out_json, "out")?;
        *o = std::ptr::null_mut();
        let errors: Vec<String> = runtime_ref(rt)?
            .rt
            .take_thread_errors()
            .iter()
            .map(|e| e.to_string())
            .collect();
        let json = serde_json::Value::from(errors).to_string();
        let c = CString::new(json)
            .map_err(|_| Fail::new(NUMAGC_ERR_INTERNAL, "thread errors contain a NUL byte"))?;
        *o = c.into_raw();
        Ok(())
    })
}
