//! One body's sub-program (a callback, a task, a `run_each` callback): each
//! operation's first byte decodes the scope call to make ([`Body::op`]),
//! the simple ones here and the others in the files of their concept;
//! [`Body::finish`] ends the body.
//!
//! Invariant: the bytes decode to calls in a fixed order, so the same input
//! makes the same calls; inside a blocking section every operation goes to
//! [`Body::blocked_op`].

use super::bad_input::{huge_count, BAD_INTS};
use super::callbacks::callback;
use super::check::{code, expect};
use super::hit;
use super::model::{Arg, Body, Desc, Shape, State};
use numagc_capi::numagc_status::*;
use numagc_capi::*;
use std::ffi::c_int;
use std::ptr::null_mut;

impl Body {
    /// A random sub-program of at most `n` calls.
    pub(super) fn program(&mut self, st: &mut State, n: usize) {
        for _ in 0..n {
            if !st.tick() {
                break;
            }
            self.op(st);
        }
    }

    /// Ends the body: leaves its blocking section (or returns inside it on
    /// purpose), leaves its frames (or some of them open on purpose) and
    /// says what it returns.
    pub(super) fn finish(&mut self, st: &mut State) -> (c_int, usize, bool) {
        let ret = if st.inp.one_in(16) {
            st.inp.pick(&[code(NUMAGC_ERR_MISUSE), 77, -1])
        } else {
            0
        };
        if self.blocking.is_some() && !st.inp.one_in(3) {
            self.leave_section();
        }
        if self.blocking.is_some() {
            // Frames cannot be left inside a section either.
            if let Some(&f) = self.frames.last() {
                // SAFETY: our own scope and its innermost open frame.
                expect(
                    unsafe { numagc_frame_leave(self.s, f) },
                    &[NUMAGC_ERR_MISUSE],
                    "numagc_frame_leave inside a section",
                );
            }
        } else if !st.inp.one_in(8) {
            while let Some(f) = self.frames.pop() {
                // SAFETY: our own scope and its innermost open frame.
                expect(
                    unsafe { numagc_frame_leave(self.s, f) },
                    &[NUMAGC_OK],
                    "numagc_frame_leave",
                );
            }
        }
        (ret, self.frames.len(), self.blocking.is_some())
    }

    fn op(&mut self, st: &mut State) {
        if self.blocking.is_some() {
            return self.blocked_op(st);
        }
        let s = self.s;
        let inp = &mut st.inp;
        match inp.u8() % 32 {
            0 | 1 => {
                let mut f = 0;
                // SAFETY: our scope; a valid output.
                expect(
                    unsafe { numagc_frame_enter(s, &mut f) },
                    &[NUMAGC_OK],
                    "numagc_frame_enter",
                );
                assert_ne!(f, 0);
                self.frames.push(f);
            }
            2 => {
                // Leave a frame: the innermost, another open one, or a bogus one.
                let (f, innermost) = match inp.u8() % 4 {
                    0 | 1 if !self.frames.is_empty() => (*self.frames.last().unwrap(), true),
                    2 if self.frames.len() > 1 => {
                        (self.frames[inp.below(self.frames.len() - 1)], false)
                    }
                    _ => (inp.u64(), false),
                };
                let innermost = innermost || self.frames.last() == Some(&f);
                // SAFETY: our scope; frames are ids, checked.
                let rc = unsafe { numagc_frame_leave(s, f) };
                if innermost {
                    expect(rc, &[NUMAGC_OK], "numagc_frame_leave (innermost)");
                    hit("frame left");
                    self.frames.pop();
                    self.leave_to(self.frames.len() + 1);
                } else {
                    expect(
                        rc,
                        &[NUMAGC_ERR_UNBALANCED_FRAME],
                        "numagc_frame_leave (not innermost)",
                    );
                    hit("frame out of order");
                }
            }
            3 if !self.frames.is_empty() => {
                let a = self.arg(inp);
                let f = *self.frames.last().unwrap();
                let mut out = 9;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_frame_return(s, f, self.value(a), &mut out) };
                if Self::is_bad(a) {
                    expect(
                        rc,
                        &[NUMAGC_ERR_BAD_VALUE],
                        "numagc_frame_return (bad value)",
                    );
                    assert_eq!(out, 0);
                } else {
                    expect(rc, &[NUMAGC_OK], "numagc_frame_return");
                    hit("frame_return");
                    let shape = match a {
                        Arg::Live(k) => self.hs[k].shape.clone(),
                        _ => Shape::Unknown,
                    };
                    self.frames.pop();
                    self.leave_to(self.frames.len() + 1);
                    self.made(out, shape);
                    if let Arg::Int(i) = a {
                        assert_eq!(out, numagc_int(i));
                    }
                }
            }
            4..=6 => self.alloc_mixed(st),
            7 => self.alloc_other(st),
            8..=10 => self.read(st),
            11 => self.store(st),
            12 => {
                let a = self.arg(inp);
                let mut out = 9;
                // SAFETY: our scope, a valid output.
                let rc = unsafe {
                    if inp.bool() {
                        numagc_promote(s, self.value(a), &mut out)
                    } else {
                        numagc_local(s, self.value(a), &mut out)
                    }
                };
                if Self::is_bad(a) {
                    expect(
                        rc,
                        &[NUMAGC_ERR_BAD_VALUE],
                        "numagc_promote/local (bad value)",
                    );
                    assert_eq!(out, 0);
                } else {
                    expect(rc, &[NUMAGC_OK], "numagc_promote/local");
                    let shape = if let Arg::Live(k) = a {
                        self.hs[k].shape.clone()
                    } else {
                        Shape::Unknown
                    };
                    if out & 1 == 0 {
                        self.made(out, shape);
                    }
                }
            }
            13 => {
                let (var, val) = (self.arg(inp), self.arg(inp));
                // SAFETY: our scope.
                let rc = unsafe { numagc_assign(s, self.value(var), self.value(val)) };
                match var {
                    Arg::Live(k) if !Self::is_bad(val) => {
                        expect(rc, &[NUMAGC_OK], "numagc_assign");
                        self.hs[k].shape = if let Arg::Live(j) = val {
                            self.hs[j].shape.clone()
                        } else {
                            Shape::Unknown
                        };
                    }
                    _ => expect(
                        rc,
                        &[NUMAGC_ERR_BAD_VALUE],
                        "numagc_assign (bad var or value)",
                    ),
                }
            }
            14 => {
                let mut b = false;
                let a = self.arg(inp);
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_is_local(s, self.value(a), &mut b) };
                expect(
                    rc,
                    &[if Self::is_bad(a) {
                        NUMAGC_ERR_BAD_VALUE
                    } else {
                        NUMAGC_OK
                    }],
                    "numagc_is_local",
                );
            }
            15 => {
                // SAFETY: our scope.
                let rc = unsafe {
                    match inp.u8() % 4 {
                        0 => numagc_collect_minor(s),
                        1 => numagc_collect_major(s),
                        2 => numagc_collect_global(s),
                        _ => numagc_poll(s),
                    }
                };
                expect(rc, &[NUMAGC_OK], "a collection");
                hit("collection");
            }
            16 | 17 => self.global(st),
            18 => {
                let (mut h, mut f, mut v) = (0, 0, 0);
                // SAFETY: our scope, valid or NULL outputs.
                unsafe {
                    expect(
                        numagc_scope_handles(s, &mut h, &mut f),
                        &[NUMAGC_OK],
                        "numagc_scope_handles",
                    );
                    assert_eq!(f, self.frames.len(), "open frames");
                    assert!(
                        h >= self.hs.iter().filter(|x| x.live).count(),
                        "live handles"
                    );
                    expect(
                        numagc_scope_handles(s, null_mut(), null_mut()),
                        &[NUMAGC_OK],
                        "numagc_scope_handles(NULL)",
                    );
                    expect(
                        numagc_scope_vproc(s, &mut v),
                        &[NUMAGC_OK],
                        "numagc_scope_vproc",
                    );
                    expect(
                        numagc_scope_vprocs(s, &mut h),
                        &[NUMAGC_OK],
                        "numagc_scope_vprocs",
                    );
                    assert!(v < h);
                    expect(
                        numagc_scope_vproc(s, null_mut()),
                        &[NUMAGC_ERR_NULL_ARGUMENT],
                        "numagc_scope_vproc(NULL)",
                    );
                    expect(
                        numagc_frame_enter(s, null_mut()),
                        &[NUMAGC_ERR_NULL_ARGUMENT],
                        "numagc_frame_enter(NULL)",
                    );
                }
            }
            19 | 20 => self.par2(st),
            21 | 22 if !self.concurrent => self.spawn(st),
            23 | 24 if !self.concurrent => self.channel(st),
            25 if !self.concurrent => {
                // Nested calls a callback may not make.
                let Some(rt) = st.rts[self.rt].as_ref().map(|r| r.rt) else {
                    return;
                };
                // SAFETY: a live runtime (it cannot be freed while this callback runs).
                unsafe {
                    expect(
                        numagc_run_on(rt, 0, Some(callback), null_mut()),
                        &[NUMAGC_ERR_MISUSE],
                        "numagc_run_on from a callback",
                    );
                    expect(
                        numagc_runtime_free(rt),
                        &[NUMAGC_ERR_MISUSE],
                        "numagc_runtime_free from a callback",
                    );
                    hit("nested run_on refused");
                }
            }
            26 => {
                // Our scope from another OS thread.
                let token = s.addr();
                let rc = std::thread::spawn(move || {
                    let s = std::ptr::without_provenance_mut::<numagc_scope>(token);
                    let mut f = 0;
                    // SAFETY: scope tokens are never dereferenced; a valid output.
                    unsafe { numagc_frame_enter(s, &mut f) }
                })
                .join()
                .expect("the helper thread returns");
                assert_eq!(
                    rc,
                    code(NUMAGC_ERR_NOT_ON_VPROC),
                    "a scope used from another thread"
                );
                hit("scope on another thread");
            }
            27 => {
                let Some(rt) = st
                    .rts
                    .get(self.rt)
                    .and_then(|r| r.as_ref())
                    .filter(|r| !r.rt.is_null())
                    .map(|r| r.rt)
                else {
                    return;
                };
                let mut d = 0;
                let size = 1 + inp.below(4);
                let mutable = inp.bool();
                // SAFETY: a live runtime; registering from a callback is allowed.
                let rc = unsafe {
                    numagc_register_mixed(
                        rt,
                        c"late".as_ptr(),
                        size,
                        [0usize].as_ptr(),
                        1,
                        c_int::from(mutable),
                        &mut d,
                    )
                };
                expect(rc, &[NUMAGC_OK], "numagc_register_mixed from a callback");
                let mut ptr = vec![false; size];
                ptr[0] = true;
                st.rts[self.rt].as_mut().unwrap().descs.push(Desc {
                    id: d,
                    size,
                    ptr,
                    mutable,
                });
                // The flag out of range, or a count beyond the array: refused, no descriptor.
                let (flag, n) = if inp.bool() {
                    (inp.pick(BAD_INTS), 1)
                } else {
                    (0, huge_count(inp))
                };
                let mut d = 9;
                // SAFETY: as above; the array is never read past its one element.
                let rc = unsafe {
                    numagc_register_mixed(
                        rt,
                        c"late".as_ptr(),
                        size,
                        [0usize].as_ptr(),
                        n,
                        flag,
                        &mut d,
                    )
                };
                let want = if flag != 0 {
                    NUMAGC_ERR_INVALID_ARGUMENT
                } else {
                    NUMAGC_ERR_INVALID_DESCRIPTOR
                };
                expect(
                    rc,
                    &[want],
                    "numagc_register_mixed from a callback (bad flag or count)",
                );
                assert_eq!(d, 0);
                hit(if flag != 0 {
                    "bad int refused"
                } else {
                    "huge count refused"
                });
            }
            28 => self.blocking_op(st),
            29 => self.huge(st),
            _ => self.alloc_mixed(st),
        }
    }
}
