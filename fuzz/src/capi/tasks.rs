//! `numagc_par2` and its task function: one behaviour per kind (the low 4
//! bits of a task's userdata; the high bits carry the parent's scope token):
//! tasks that succeed, fail, leave frames open, leave their result unset,
//! use their parent's scope, fork again or enter blocking sections.
//!
//! Invariant: [`TASK_OUTCOME`] says what `numagc_par2` returns for each
//! kind, and the task of that kind does exactly that.

use super::check::{code, expect};
use super::hit;
use super::model::{Arg, Body, Shape, State};
use numagc_capi::numagc_status::{self, *};
use numagc_capi::*;
use std::ffi::{c_int, c_void};

impl Body {
    pub(super) fn par2(&mut self, st: &mut State) {
        let inp = &mut st.inp;
        let n = inp.below(4);
        let args: Vec<Arg> = (0..n).map(|_| self.arg(inp)).collect();
        let env: Vec<numagc_value> = args.iter().map(|&a| self.value(a)).collect();
        let (ka, kb) = (inp.below(TASK_KINDS), inp.below(TASK_KINDS));
        let parent = self.s.addr();
        let (da, db) = (task_data(parent, ka), task_data(parent, kb));
        let (mut oa, mut ob) = (9, 9);
        let null_b = inp.one_in(32);
        // SAFETY: our scope; an environment of `n` values; the task
        // functions have the task signature; the userdata are integers the
        // tasks decode, never pointers; valid outputs.
        let rc = unsafe {
            numagc_par2(
                self.s,
                env.as_ptr(),
                n,
                Some(task),
                da,
                if null_b { None } else { Some(task) },
                db,
                &mut oa,
                &mut ob,
            )
        };
        // A task that allocates (2, or 7's nested fork) may also hit the
        // heap limit, one that enters a blocking section (8, 9) find that
        // its proxy thread cannot be started; `a`'s failure comes first.
        let may_fail = |k: usize| match k {
            2 | 7 => Some(NUMAGC_ERR_HEAP_LIMIT),
            8 | 9 => Some(NUMAGC_ERR_OS),
            _ => None,
        };
        let want: Vec<numagc_status> = if null_b {
            vec![NUMAGC_ERR_NULL_ARGUMENT]
        } else if args.iter().any(|&a| Self::is_bad(a)) {
            vec![NUMAGC_ERR_BAD_VALUE]
        } else if let Some(e) = TASK_OUTCOME[ka] {
            vec![e].into_iter().chain(may_fail(ka)).collect()
        } else {
            let mut w = match TASK_OUTCOME[kb] {
                Some(e) => vec![e],
                None => vec![NUMAGC_OK],
            };
            w.extend(may_fail(ka));
            w.extend(may_fail(kb));
            w
        };
        expect(rc, &want, "numagc_par2");
        if rc == 0 {
            hit("par2");
            self.made(oa, Shape::Unknown);
            self.made(ob, Shape::Unknown);
        } else {
            hit("par2 failed");
            assert_eq!((oa, ob), (0, 0), "a failed par2 left its outputs set");
        }
    }
}

/// Task behaviours, chosen by the low 4 bits of a task's userdata (the
/// high bits carry the parent's scope token).
const TASK_KINDS: usize = 10;
/// What `numagc_par2` returns because of each behaviour (`None`: the task
/// succeeds).
const TASK_OUTCOME: [Option<numagc_status>; TASK_KINDS] = [
    None,                              // 0: returns an immediate
    None,                              // 1: returns its first env value (or NIL)
    None,                       // 2: allocates a vector of its env, returns it via frame_return
    Some(NUMAGC_ERR_BAD_VALUE), // 3: returns OK with *result unset
    Some(NUMAGC_ERR_UNBALANCED_FRAME), // 4: leaves a frame open
    Some(NUMAGC_ERR_NOT_ON_VPROC), // 5: uses its parent's scope, returns that status
    Some(NUMAGC_ERR_MISUSE),    // 6: returns a status of its own
    None,                       // 7: forks again (tasks of kind 0 and 1)
    Some(NUMAGC_ERR_MISUSE),    // 8: returns inside a blocking section
    None,                       // 9: a blocking section, refused calls in it, left
];

pub(super) fn task_data(parent: usize, kind: usize) -> *mut c_void {
    std::ptr::without_provenance_mut(parent | kind)
}

pub(super) unsafe extern "C" fn task(
    s: *mut numagc_scope,
    env: *const numagc_value,
    n: usize,
    data: *mut c_void,
    result: *mut numagc_value,
) -> c_int {
    let (parent, kind) = (data.addr() & !0xF, data.addr() & 0xF);
    // SAFETY: `env` has `n` values and `result` is writable (numagc_par2's
    // contract for task functions); the scope tokens are never dereferenced.
    unsafe {
        let env = if n == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(env, n)
        };
        match kind {
            0 => {
                *result = numagc_int(42);
                0
            }
            1 => {
                *result = env.first().copied().unwrap_or(NUMAGC_NIL);
                0
            }
            2 => {
                let mut f = 0;
                expect(
                    numagc_frame_enter(s, &mut f),
                    &[NUMAGC_OK],
                    "numagc_frame_enter in a task",
                );
                let mut v = 0;
                let rc = numagc_alloc_vector(s, env.as_ptr(), n, &mut v);
                expect(
                    rc,
                    &[NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT],
                    "numagc_alloc_vector in a task",
                );
                if rc != 0 {
                    expect(
                        numagc_frame_leave(s, f),
                        &[NUMAGC_OK],
                        "numagc_frame_leave in a task",
                    );
                    return rc;
                }
                expect(
                    numagc_frame_return(s, f, v, result),
                    &[NUMAGC_OK],
                    "numagc_frame_return in a task",
                );
                0
            }
            3 => 0,
            4 => {
                let mut f = 0;
                expect(
                    numagc_frame_enter(s, &mut f),
                    &[NUMAGC_OK],
                    "numagc_frame_enter in a task",
                );
                *result = numagc_int(1);
                0
            }
            5 => {
                let p = std::ptr::without_provenance_mut::<numagc_scope>(parent);
                let mut f = 0;
                let rc = numagc_frame_enter(p, &mut f);
                expect(
                    rc,
                    &[NUMAGC_ERR_NOT_ON_VPROC],
                    "the parent's scope inside a task",
                );
                rc
            }
            6 => code(NUMAGC_ERR_MISUSE),
            8 => {
                let rc = numagc_enter_blocking(s);
                expect(
                    rc,
                    &[NUMAGC_OK, NUMAGC_ERR_OS],
                    "numagc_enter_blocking in a task",
                );
                if rc != 0 {
                    return rc;
                }
                *result = numagc_int(8);
                0
            }
            9 => {
                let rc = numagc_enter_blocking(s);
                expect(
                    rc,
                    &[NUMAGC_OK, NUMAGC_ERR_OS],
                    "numagc_enter_blocking in a task",
                );
                if rc != 0 {
                    return rc;
                }
                let mut v = 9;
                let rc = numagc_alloc_vector(s, env.as_ptr(), n, &mut v);
                expect(
                    rc,
                    &[NUMAGC_ERR_MISUSE],
                    "numagc_alloc_vector in a task's section",
                );
                assert_eq!(v, 0);
                expect(
                    numagc_enter_blocking(s),
                    &[NUMAGC_ERR_MISUSE],
                    "numagc_enter_blocking twice in a task",
                );
                expect(
                    numagc_leave_blocking(s),
                    &[NUMAGC_OK],
                    "numagc_leave_blocking in a task",
                );
                expect(
                    numagc_leave_blocking(s),
                    &[NUMAGC_ERR_MISUSE],
                    "numagc_leave_blocking twice in a task",
                );
                *result = env.first().copied().unwrap_or(NUMAGC_NIL);
                hit("section in a task");
                0
            }
            _ => {
                let (mut a, mut b) = (0, 0);
                let rc = numagc_par2(
                    s,
                    env.as_ptr(),
                    n,
                    Some(task),
                    task_data(s.addr(), 0),
                    Some(task),
                    task_data(s.addr(), 1),
                    &mut a,
                    &mut b,
                );
                expect(
                    rc,
                    &[NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT],
                    "a nested numagc_par2",
                );
                hit("nested par2");
                *result = a;
                rc
            }
        }
    }
}
