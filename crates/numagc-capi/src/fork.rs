//! `numagc_fork`: fork-join for compiled C code, on words (issue 18, item
//! 4): the counterpart of the Rust `Mutator::par2`, which runs it.
//!
//! `numagc_par2` runs each side as a C body of its own (a scope token, a
//! handle table, an activation) and passes values as handles, so compiled
//! code converts words to handles and back around every fork. A task of
//! `numagc_fork` is compiled code: it gets the mutator record of the
//! vproc that runs it and the environment as words, and answers a word.
//! A side that runs here (the left one, and the right one unless a thief
//! took it) runs inside the body that forked, with no body of its own:
//!
//! - the body's state (`CallState`), lent to the fork, is put back in
//!   `ACTIVE` under its token while the task runs (`Reentry`), naming as
//!   its scope one the fork made for the task, so that the task's slow
//!   paths borrow the vproc through the fork's borrow;
//! - while a task runs, the state's `word_tasks` refuses the scope's own
//!   functions (the task's frames lie above the handle table), and its
//!   `floor` makes every slow path check that the task left the fork's
//!   root slots in use, so nothing collects while they are popped.
//!
//! A side that a thief runs is a C body of its own on the thief (its slow
//! paths need one), marked as a word task the same way.
//!
//! What a task leaves is checked when it returns: its status, the root
//! stack's top (put back where it was: `NUMAGC_ERR_UNBALANCED_FRAME`) and
//! its result word (an immediate or an object of this heap:
//! `NUMAGC_ERR_BAD_VALUE`). The environment's words are checked the same
//! way before anything is rooted.

use crate::activation::{with_active_entry, Reentry};
use crate::body::{run_body, BodyArgs, Ended, UserData};
use crate::compiled::numagc_mutator;
use crate::parallel::Failed;
use crate::runtime::{lock, RtShared};
use crate::scope::CallState;
use crate::status::numagc_status::*;
use crate::status::{
    count_arg, guard, last_error, out, restore_last_error, slice_arg, take_last_error, Fail, Res,
};
use crate::NUMAGC_MAX_ENV;
use numagc_rs::compiled::{Mutator, MutatorRecord};
use numagc_rs::{Error, Scope};
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::Arc;

/// A task of `numagc_fork`: compiled code run on some vproc with that
/// vproc's mutator record `m`, the fork's `n` environment words `env`
/// (valid until its first call that may collect) and its `userdata`. It
/// writes its result word to `*result` (an immediate or an object of this
/// heap, valid until the fork's caller's next call that may collect) and
/// returns 0; any other status fails the fork with that code. It leaves
/// the root stack's top where it found it. Inside a task only the
/// compiled interface may be used (the inline paths, the slow paths on
/// `m`, `numagc_fork`): the scope's functions refuse it.
pub type numagc_word_task_fn = Option<
    unsafe extern "C" fn(
        m: *mut numagc_mutator,
        env: *const u64,
        n: usize,
        userdata: *mut c_void,
        result: *mut u64,
    ) -> c_int,
>;

type WordTaskFn =
    unsafe extern "C" fn(*mut numagc_mutator, *const u64, usize, *mut c_void, *mut u64) -> c_int;

/// The forking body's state, for the side that runs here.
#[derive(Clone, Copy)]
struct Here {
    st: *mut CallState,
    token: usize,
    vproc: usize,
}

// SAFETY: `Here` is only dereferenced by a side that runs on the forking
// vproc, which is the forking thread (`word_task` compares the vproc
// first); a thief only carries it.
unsafe impl Send for Here {}

/// The forking body's runtime, by address (see `task_stolen`).
#[derive(Clone, Copy)]
struct Rt(*const RtShared);

// SAFETY: `RtShared` is shared between vproc threads (it is `Sync`, held
// in `Arc`s); a thief only makes an `Arc` of it (`task_stolen`).
unsafe impl Send for Rt {}

/// One side of a fork: its C function, its userdata and its name.
#[derive(Clone, Copy)]
struct Side {
    f: WordTaskFn,
    data: UserData,
    name: &'static str,
}

/// Runs tasks `a` and `b` in parallel on words, each with the `n` words of
/// `env`, and waits for both: `a` runs here at once with `m`, `b` is
/// offered to idle vprocs and runs here after `a` unless one took it (its
/// environment is then promoted, and it runs with that vproc's record).
/// `*out_a` and `*out_b` are their result words, valid until the next call
/// that may collect. The record must be current (`numagc_regs_store`
/// after register code) and its vproc's, as for every slow path; tasks may
/// fork again.
///
/// `userdata_a` and `userdata_b` are handed to the tasks untouched; `b`'s
/// may be used on another vproc thread, at the same time as `a` runs.
///
/// Errors: a word of `env` that is not a value of this heap is
/// `NUMAGC_ERR_BAD_VALUE` and no task runs, as is more than
/// `NUMAGC_MAX_ENV` words (`NUMAGC_ERR_INVALID_ARGUMENT`); a task's
/// nonzero status is returned with a message quoting its last error; a
/// task that moved the root stack's top gives
/// `NUMAGC_ERR_UNBALANCED_FRAME` (the top is put back), one whose result
/// is not a value `NUMAGC_ERR_BAD_VALUE`. When both fail, `a`'s error is
/// returned. Both tasks have finished when this returns, whatever
/// happened; outputs are 0 after a failure.
#[no_mangle]
pub unsafe extern "C" fn numagc_fork(
    m: *mut numagc_mutator,
    env: *const u64,
    n: usize,
    a: numagc_word_task_fn,
    userdata_a: *mut c_void,
    b: numagc_word_task_fn,
    userdata_b: *mut c_void,
    out_a: *mut u64,
    out_b: *mut u64,
) -> c_int {
    guard(|| {
        let oa = out(out_a, "out_a")?;
        let ob = out(out_b, "out_b")?;
        (*oa, *ob) = (0, 0);
        let fa = a.ok_or_else(|| Fail::null("a"))?;
        let fb = b.ok_or_else(|| Fail::null("b"))?;
        if m.is_null() {
            return Err(Fail::null("m"));
        }
        count_arg(n, NUMAGC_MAX_ENV, "n", "NUMAGC_MAX_ENV")?;
        let words = slice_arg(env, n, "env")?;
        let a = Side {
            f: fa,
            data: UserData(userdata_a),
            name: "numagc_fork task a",
        };
        let b = Side {
            f: fb,
            data: UserData(userdata_b),
            name: "numagc_fork task b",
        };
        let saved = take_last_error();
        let (x, y) = with_active_entry(|token, st| fork(token, st, m, words, a, b))?;
        restore_last_error(saved);
        (*oa, *ob) = (x, y);
        Ok(())
    })
}

/// The fork, with the forking body's state lent.
fn fork(
    token: usize,
    st: &mut CallState,
    m: *mut numagc_mutator,
    words: &[u64],
    a: Side,
    b: Side,
) -> Res<(u64, u64)> {
    let needed = st.roots_needed();
    let vproc = st.vproc;
    // The runtime, for a thief's body: its address only (no reference
    // count taken on the path that runs both sides here).
    let rt = Rt(Arc::as_ptr(&st.rt));
    for &w in words {
        st.sc()
            .check_word(w)
            .map_err(|e| Fail::new(NUMAGC_ERR_BAD_VALUE, format!("env word {w:#x}: {e}")))?;
    }
    let here = Here {
        st: &mut *st,
        token,
        vproc,
    };
    // From here on the state is reached only through `here.st` (the
    // tasks' slow paths borrow it through `Reentry`), never through `st`.
    // SAFETY: `here.st` is the lent state, live for this call; the
    // mutator borrows the vproc through the state's scope, and the
    // compiled code it runs (the tasks) keeps the interface's contract,
    // which the slow paths check.
    let mut mu = unsafe { (*here.st).sc().compiled() };
    if !std::ptr::eq(
        m as *const u8,
        mu.record() as *const MutatorRecord as *const u8,
    ) {
        return Err(Fail::new(
            NUMAGC_ERR_MISUSE,
            format!("mutator {m:p} is not the record of the vproc running this callback (numagc_mutator_get gives it)"),
        ));
    }
    mu.check_record(needed)
        .map_err(|e| Fail::new(NUMAGC_ERR_MISUSE, format!("mutator record: {e}")))?;
    let failed: [Failed; 2] = Default::default();
    let (fa, fb) = (&failed[0], &failed[1]);
    let r = mu.par2(
        words,
        move |m, env| word_task(m, env, a, here, rt, fa),
        move |m, env| word_task(m, env, b, here, rt, fb),
    );
    r.map_err(|e| {
        // A C failure kept aside, else the library's own error (a task
        // stolen by another vproc that panicked).
        lock(&failed[0])
            .take()
            .or_else(|| lock(&failed[1]).take())
            .unwrap_or_else(|| e.into())
    })
}

/// Runs one side on `m`'s vproc: here, inside the forking body, or on a
/// thief as a body of its own. A failure is kept in `failed` and the
/// fork gets a marker error.
fn word_task(
    m: &mut Mutator<'_>,
    env: &[u64],
    side: Side,
    here: Here,
    rt: Rt,
    failed: &Failed,
) -> numagc_rs::Result<u64> {
    let r = if m.vproc() == here.vproc {
        task_here(m, env, side, here)
    } else {
        task_stolen(m, env, side, rt)
    };
    r.map_err(|f| {
        let message = f.message.clone();
        *lock(failed) = Some(f);
        Error::misuse(message)
    })
}

/// The forking body's state while one of its tasks runs here: lending
/// the task's scope `s` (`CallState::swap_scope`), the task's `floor`, one
/// more running task, and the state back in `ACTIVE` (`Reentry`); all put
/// back when dropped, even on a panic. The task's last error starts empty,
/// so that a failing task's message is its own.
struct TaskEntry {
    st: *mut CallState,
    outer: *mut Scope<'static>,
    floor: usize,
    _active: Reentry,
}

impl TaskEntry {
    fn new(here: Here, s: &mut Scope<'_>, start: usize) -> TaskEntry {
        let scope = (s as *mut Scope<'_>).cast::<Scope<'static>>();
        // SAFETY: the fork holds no reference to the state while its
        // tasks run (`fork`); `s` outlives this entry, which puts the
        // fork's scope back.
        let outer = unsafe { CallState::swap_scope(here.st, scope) };
        // SAFETY: as above: no reference to the state is alive here.
        let floor = unsafe {
            let st = &mut *here.st;
            st.word_tasks += 1;
            std::mem::replace(&mut st.floor, start)
        };
        drop(take_last_error());
        TaskEntry {
            st: here.st,
            outer,
            floor,
            _active: Reentry::new(here.token, here.st),
        }
    }
}

impl Drop for TaskEntry {
    fn drop(&mut self) {
        // SAFETY: as in `new`; the task has returned, so none of its slow
        // paths holds the state.
        unsafe {
            let st = &mut *self.st;
            st.floor = self.floor;
            st.word_tasks -= 1;
            CallState::swap_scope(self.st, self.outer);
        }
    }
}

/// A side run by the forking vproc, inside the forking body.
fn task_here(m: &mut Mutator<'_>, env: &[u64], side: Side, here: Here) -> Res<u64> {
    let rec = m.record() as *const MutatorRecord as *mut numagc_mutator;
    let start = m.roots_len();
    let (rc, result, end) = m.scope(|s| {
        let result = Cell::new(0u64);
        let rc = {
            let _entry = TaskEntry::new(here, s, start);
            // SAFETY: `f` is the C function given to `numagc_fork` with
            // this signature; `rec` is this vproc's record, `env` has
            // `env.len()` words and `result` outlives the call; the
            // userdata is the caller's, handed back untouched. C code
            // cannot unwind into Rust.
            unsafe { (side.f)(rec, env.as_ptr(), env.len(), side.data.0, result.as_ptr()) }
        };
        (rc, result.get(), s.roots_in_use())
    });
    finish(m, side, rc, result, start, end, last_error)
}

/// A side run by a thief: a C body of its own, marked as a word task.
fn task_stolen(m: &mut Mutator<'_>, env: &[u64], side: Side, rt: Rt) -> Res<u64> {
    // SAFETY: `rt.0` is the forking body's runtime, which that body keeps
    // alive (its state holds an `Arc`) until the fork, which waits for
    // this task, returns; the count taken here is the `Arc` made from it.
    let rt = unsafe {
        Arc::increment_strong_count(rt.0);
        Arc::from_raw(rt.0)
    };
    let rec = m.record() as *const MutatorRecord as *mut numagc_mutator;
    let start = m.roots_len();
    let args = BodyArgs {
        env: &[],
        received: None,
        thread: false,
        word_task: true,
    };
    let result = Cell::new(0u64);
    let call = |_, _: &[_], _, _| {
        // SAFETY: as in `task_here`, with the thief's record.
        unsafe { (side.f)(rec, env.as_ptr(), env.len(), side.data.0, result.as_ptr()) }
    };
    let (ended, end) = m.scope(|s| {
        run_body(s, &rt, args, call, |st, ended| {
            (ended, st.sc().roots_in_use())
        })
    });
    let last = ended.last.clone();
    finish(m, side, ended.rc, result.get(), start, end, || last)
}

/// What a task left, checked: its status, the root stack's top (put back
/// at `start`) and its result word.
fn finish(
    m: &mut Mutator<'_>,
    side: Side,
    rc: c_int,
    result: u64,
    start: usize,
    end: usize,
    last: impl FnOnce() -> Option<String>,
) -> Res<u64> {
    if rc == NUMAGC_OK as c_int && end == start {
        // The common case: only the result is left to check.
        return check_result(m, side, result);
    }
    let vproc = m.vproc();
    if end != start {
        // SAFETY: `start` slots were in use when the task began; the slow
        // paths refused to collect while the top was below them (the
        // task's floor), so the slots it popped still hold their values.
        unsafe { m.reset_roots_len(start) };
    }
    let ended = Ended {
        rc,
        open: 0,
        blocking: false,
        last: if rc == NUMAGC_OK as c_int {
            None
        } else {
            last()
        },
    };
    if let Some(f) = ended.failure(&format_args!("the {} on vproc {vproc}", side.name)) {
        return Err(f);
    }
    if end != start {
        return Err(Fail::new(
            NUMAGC_ERR_UNBALANCED_FRAME,
            format!(
                "the {} on vproc {vproc} moved the root stack's top from {start} to {end} slots: a task pops every frame it pushes, and no other (the top was put back)",
                side.name
            ),
        ));
    }
    check_result(m, side, result)
}

/// A task's result word, checked to be a value of this heap.
fn check_result(m: &mut Mutator<'_>, side: Side, result: u64) -> Res<u64> {
    m.scope(|s| s.check_word(result)).map_err(|e| {
        Fail::new(
            NUMAGC_ERR_BAD_VALUE,
            format!(
                "the result {result:#x} of the {} on vproc {}: {e}",
                side.name,
                m.vproc()
            ),
        )
    })?;
    Ok(result)
}
