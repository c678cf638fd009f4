//! The thread-local activation: which C body runs on this thread (`ACTIVE`:
//! its scope token and its `CallState`), and lending that state to the
//! scope functions (`with_state`, `with_any_state`).
//!
//! Invariant: a body's state is reached only on the thread running the
//! body, only while it runs, and through one `&mut` at a time: `ACTIVE` is
//! empty while the state is lent (`Lend`), and a nested body's activation
//! puts back the enclosing body's entry when it ends (`Activation`), both
//! even on a panic. Each thread's `BODIES` holds the tokens of the bodies
//! running or waiting on it, for error messages only.

use crate::runtime::lock;
use crate::scope::{numagc_scope, CallState};
use crate::status::numagc_status::*;
use crate::status::{Fail, Res};
use std::cell::Cell;
use std::sync::{Arc, Mutex, Weak};
use std::thread::ThreadId;

/// The live tokens of one thread's bodies with their vprocs, innermost
/// last (bodies nest on a thread). One list per thread, so that starting
/// and ending a body (two per fork) locks only its own thread's list,
/// uncontended, where one list of the process made every vproc's forks
/// take the same lock; only the message of a misused scope reads the
/// others' lists (`THREADS`).
type Bodies = Mutex<Vec<(usize, usize)>>;

/// Every thread's `BODIES`, for the messages (dead threads' entries are
/// dropped when a thread registers).
static THREADS: Mutex<Vec<(ThreadId, Weak<Bodies>)>> = Mutex::new(Vec::new());

thread_local! {
    /// The callback running on this thread: its token and its state.
    static ACTIVE: Cell<Option<(usize, *mut CallState)>> = const { Cell::new(None) };

    /// This thread's live tokens (see `Bodies`).
    static BODIES: Arc<Bodies> = {
        let mine = Arc::new(Mutex::new(Vec::new()));
        let mut threads = lock(&THREADS);
        threads.retain(|(_, w)| w.strong_count() > 0);
        threads.push((std::thread::current().id(), Arc::downgrade(&mine)));
        mine
    };
}

/// The vproc and thread of the body whose token is `token`, if it is live.
fn owner_of(token: usize) -> Option<(usize, ThreadId)> {
    let find = |b: &Bodies| lock(b).iter().find(|e| e.0 == token).map(|e| e.1);
    let here = std::thread::current().id();
    if let Some(v) = BODIES.try_with(|b| find(b)).ok().flatten() {
        return Some((v, here));
    }
    let threads: Vec<_> = lock(&THREADS).clone();
    threads
        .into_iter()
        .filter(|(t, _)| *t != here)
        .find_map(|(t, w)| w.upgrade().and_then(|b| find(&b)).map(|v| (v, t)))
}

/// Whether a callback is running on this thread.
pub(crate) fn on_callback_thread() -> bool {
    ACTIVE.with(|a| a.get().is_some())
}

/// Lends the state of the callback that `scope` names, if it runs on this
/// thread; else `NUMAGC_ERR_NOT_ON_VPROC`.
pub(crate) fn with_state<R>(
    scope: *mut numagc_scope,
    f: impl FnOnce(&mut CallState) -> Res<R>,
) -> Res<R> {
    with_any_state(scope, |st| {
        not_blocking(st)?;
        if st.word_tasks > 0 {
            return Err(Fail::new(
                NUMAGC_ERR_MISUSE,
                "the scope was used inside a numagc_fork task: a task uses the mutator record it was given (the compiled interface); the scope's functions wait until it returns",
            ));
        }
        f(st)
    })
}

/// Refuses a state in a blocking section.
fn not_blocking(st: &CallState) -> Res<()> {
    if st.blocking.is_some() {
        return Err(Fail::new(
            NUMAGC_ERR_MISUSE,
            "the scope is in a blocking section (numagc_enter_blocking): the heap cannot be used until numagc_leave_blocking",
        ));
    }
    Ok(())
}

/// Lends the state of the C body running on this thread, whichever it is
/// (the compiled-code slow paths, which are given the mutator record and
/// not a scope: the record must then be that body's vproc's, which the
/// caller checks). `NUMAGC_ERR_NOT_ON_VPROC` when no body runs here;
/// `NUMAGC_ERR_MISUSE` in a blocking section.
///
/// Unlike the scope's functions, the compiled interface stays open inside
/// a `numagc_fork` task.
pub(crate) fn with_active_state<R>(f: impl FnOnce(&mut CallState) -> Res<R>) -> Res<R> {
    with_active_entry(|_, st| f(st))
}

/// [`with_active_state`] that also gives the body's token (`numagc_fork`
/// puts the state back under it for its tasks: [`Reentry`]).
pub(crate) fn with_active_entry<R>(f: impl FnOnce(usize, &mut CallState) -> Res<R>) -> Res<R> {
    match ACTIVE.with(|a| a.get()) {
        Some((token, _)) => with_any_state(token as *mut numagc_scope, |st| {
            not_blocking(st)?;
            f(token, st)
        }),
        None => Err(Fail::new(
            NUMAGC_ERR_NOT_ON_VPROC,
            "a compiled-code slow path was called on a thread that runs no numagc callback",
        )),
    }
}

/// Puts a lent state back in `ACTIVE`, under its own token, while a
/// `numagc_fork` task runs in the body that lent it, and empties `ACTIVE`
/// again when dropped (even on a panic). The fork that lent the state
/// holds no reference to it while the task runs (only the pointer it gives
/// here), so the task's slow paths borrow it as the only `&mut`.
pub(crate) struct Reentry(Option<(usize, *mut CallState)>);

impl Reentry {
    pub fn new(token: usize, st: *mut CallState) -> Reentry {
        Reentry(ACTIVE.with(|a| a.replace(Some((token, st)))))
    }
}

impl Drop for Reentry {
    fn drop(&mut self) {
        let previous = self.0;
        let _ = ACTIVE.try_with(|a| a.set(previous));
    }
}

/// [`with_state`] whether or not the body is in a blocking section (for
/// `numagc_leave_blocking`, which touches nothing but the section).
pub(crate) fn with_any_state<R>(
    scope: *mut numagc_scope,
    f: impl FnOnce(&mut CallState) -> Res<R>,
) -> Res<R> {
    if scope.is_null() {
        return Err(Fail::null("scope"));
    }
    let token = scope.addr();
    match ACTIVE.with(|a| a.get()) {
        Some((t, st)) if t == token => {
            // Lent out: a nested call (none exists) would find no state
            // instead of a second `&mut`.
            let _lent = Lend::new((t, st));
            // SAFETY: `st` was stored by `body::run_body` on this thread
            // and stays valid until it clears `ACTIVE` after the body (a
            // callback, a task, a thread step) returns; we are inside that
            // body (same thread, same token). `ACTIVE` is empty while the reference lives, so
            // it is the only one.
            f(unsafe { &mut *st })
        }
        active => Err(not_on_vproc(token, active.map(|(t, _)| t))),
    }
}

/// Empties `ACTIVE` and puts the entry back on drop (even on a panic).
struct Lend((usize, *mut CallState));

impl Lend {
    fn new(entry: (usize, *mut CallState)) -> Lend {
        ACTIVE.with(|a| a.set(None));
        Lend(entry)
    }
}

impl Drop for Lend {
    fn drop(&mut self) {
        let entry = self.0;
        let _ = ACTIVE.try_with(|a| a.set(Some(entry)));
    }
}

fn not_on_vproc(token: usize, here: Option<usize>) -> Fail {
    let owner = owner_of(token);
    let what = match owner {
        Some((v, thread)) if thread == std::thread::current().id() => format!(
            "scope {token:#x} belongs to the callback on vproc {v} that is waiting for a nested one on this thread (a par2 task or a thread body): inside it, use the scope it was given"
        ),
        Some((v, _)) => format!(
            "scope {token:#x} belongs to the callback running on vproc {v} and was used from another thread; a scope may only be used on the thread running its callback"
        ),
        None => format!("scope {token:#x} is not live: its callback has returned (a scope is valid only during its callback)"),
    };
    let here = match here {
        Some(t) => format!(" (this thread runs the callback of scope {t:#x})"),
        None => " (no callback runs on this thread)".to_string(),
    };
    Fail::new(NUMAGC_ERR_NOT_ON_VPROC, what + &here)
}

/// Sets `ACTIVE` for one C body and, on drop (even on a panic), puts back
/// what was there before (nothing, or the entry a waiting `with_state` will
/// restore) and removes the token from this thread's `BODIES`.
pub(crate) struct Activation {
    token: usize,
    previous: Option<(usize, *mut CallState)>,
}

impl Activation {
    pub fn new(token: usize, vproc: usize, st: *mut CallState) -> Activation {
        let _ = BODIES.try_with(|b| lock(b).push((token, vproc)));
        let previous = ACTIVE.with(|a| a.replace(Some((token, st))));
        Activation { token, previous }
    }
}

impl Drop for Activation {
    fn drop(&mut self) {
        let previous = self.previous;
        let _ = ACTIVE.try_with(|a| a.set(previous));
        let token = self.token;
        let _ = BODIES.try_with(|b| {
            let mut b = lock(b);
            if let Some(i) = b.iter().rposition(|e| e.0 == token) {
                b.remove(i);
            }
        });
    }
}
