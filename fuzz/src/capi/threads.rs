//! Threads and channels: `numagc_spawn` / `_spawn_on` with thread bodies
//! that send, receive, yield, exit or misbehave (no `numagc_next_*`, two, a
//! blocking receive inside a step, bad input, a return inside a section),
//! collector threads, and direct-style `numagc_send` / `_recv` / `_select`.
//!
//! Invariant: a blocking channel operation is made only when a counterpart
//! is sure to come ([`Chan::balance`]), so the program never waits for
//! ever by construction, and a hang is a finding.

use super::bad_input::BAD_INTS;
use super::check::{code, expect};
use super::hit;
use super::model::{Arg, Body, Chan, Shape, State};
use numagc_capi::numagc_dir::{NUMAGC_RECV, NUMAGC_SEND};
use numagc_capi::numagc_status::*;
use numagc_capi::*;
use std::ffi::{c_int, c_void};
use std::ptr::{null, null_mut};

impl Body {
    pub(super) fn spawn(&mut self, st: &mut State) {
        let inp = &mut st.inp;
        let n = inp.below(3);
        let args: Vec<Arg> = (0..n).map(|_| self.arg(inp)).collect();
        let env: Vec<numagc_value> = args.iter().map(|&a| self.value(a)).collect();
        let vprocs = st.rts[self.rt].as_ref().map_or(1, |r| r.vprocs);
        let on = if inp.one_in(8) {
            Some(vprocs + inp.below(2))
        } else if inp.bool() {
            Some(inp.below(vprocs))
        } else {
            None
        };
        // The thread's channel: one of this runtime's live channels.
        let mine: Vec<usize> = (0..st.chans.len())
            .filter(|&k| st.chans[k].rt == self.rt && st.chans[k].live)
            .collect();
        let mut kind = inp.below(THREAD_KINDS);
        let chan = if mine.is_empty() {
            None
        } else {
            Some(inp.pick(&mine))
        };
        if chan.is_none() && (kind == T_SEND || kind == T_RECV) {
            kind = T_EXIT;
        }
        let token = chan.map_or(0, |c| st.chans[c].token.addr());
        let data = std::ptr::without_provenance_mut::<c_void>(token | kind);
        let bad = args.iter().any(|&a| Self::is_bad(a));
        let null_body = inp.one_in(32);
        let body = if null_body {
            None
        } else {
            Some(thread_body as ThreadFn)
        };
        // SAFETY: our scope; an environment of `n` values; the body has the
        // thread signature; the userdata is an integer the body decodes.
        let rc = unsafe {
            match on {
                Some(v) => numagc_spawn_on(self.s, v, env.as_ptr(), n, body, data),
                None => numagc_spawn(self.s, env.as_ptr(), n, body, data),
            }
        };
        let want = if null_body {
            NUMAGC_ERR_NULL_ARGUMENT
        } else if bad {
            NUMAGC_ERR_BAD_VALUE
        } else if on.is_some_and(|v| v >= vprocs) {
            NUMAGC_ERR_MISUSE
        } else {
            NUMAGC_OK
        };
        expect(rc, &[want], "numagc_spawn");
        if rc == 0 {
            hit("spawn");
            if let Some(c) = chan {
                match kind {
                    T_SEND => st.chans[c].balance += 1,
                    T_RECV => st.chans[c].balance -= 1,
                    _ => {}
                }
            }
        }
    }

    /// Direct-style channel ops, made only when they cannot wait for ever.
    pub(super) fn channel(&mut self, st: &mut State) {
        let inp = &mut st.inp;
        let s = self.s;
        let pick = inp.u8() % 8;
        let k = if st.chans.is_empty() {
            None
        } else {
            Some(inp.below(st.chans.len()))
        };
        match (pick, k) {
            (0..=2, Some(k)) => {
                let c = st.chans[k];
                let mine = c.rt == self.rt;
                let recv = inp.bool();
                // Only what completes or is refused at once.
                let safe = !c.live || !mine || if recv { c.balance > 0 } else { c.balance < 0 };
                if !safe {
                    return;
                }
                let a = self.arg(inp);
                let mut out = 9;
                // SAFETY: our scope; channel tokens are never dereferenced.
                let rc = unsafe {
                    if recv {
                        numagc_recv(s, c.token, &mut out)
                    } else {
                        numagc_send(s, c.token, self.value(a))
                    }
                };
                let want = if !c.live {
                    NUMAGC_ERR_BAD_VALUE
                } else if !mine {
                    NUMAGC_ERR_MISUSE
                } else if !recv && Self::is_bad(a) {
                    NUMAGC_ERR_BAD_VALUE
                } else {
                    NUMAGC_OK
                };
                expect(
                    rc,
                    &[want],
                    if recv { "numagc_recv" } else { "numagc_send" },
                );
                if rc == 0 {
                    hit(if recv { "recv" } else { "send" });
                    st.chans[k].balance += if recv { -1 } else { 1 };
                    if recv {
                        self.made(out, Shape::Unknown);
                    }
                } else if recv {
                    assert_eq!(out, 0);
                }
            }
            (3, _) => {
                // A choice over some channels, made only if one case is
                // sure to complete, or if it is refused at once: a `dir`
                // out of range, a NULL, freed or foreign channel, a bad
                // value to send, no cases. Every case is checked, in
                // order, before anything waits; the first bad one decides.
                let n = inp.below(4);
                let mut cases = Vec::new();
                let mut idx = Vec::new();
                let mut refusal = if n == 0 {
                    Some(NUMAGC_ERR_MISUSE)
                } else {
                    None
                };
                for _ in 0..n {
                    let bad_dir = inp.one_in(12).then(|| inp.pick(BAD_INTS));
                    let (case, this) = if st.chans.is_empty() || inp.one_in(16) {
                        idx.push(None);
                        (
                            numagc_sel {
                                channel: null_mut(),
                                dir: NUMAGC_RECV as c_int,
                                value: 0,
                            },
                            Some(NUMAGC_ERR_NULL_ARGUMENT),
                        )
                    } else {
                        // Often a case that can complete: a channel with a
                        // counterpart to come, in the direction that meets it.
                        let ready: Vec<usize> = (0..st.chans.len())
                            .filter(|&j| st.chans[j].live && st.chans[j].balance != 0)
                            .collect();
                        let (j, recv) = if !ready.is_empty() && inp.bool() {
                            let j = inp.pick(&ready);
                            (j, st.chans[j].balance > 0)
                        } else {
                            (inp.below(st.chans.len()), inp.bool())
                        };
                        // A send's value: NIL, or any argument (a bad one is refused).
                        let a = if !recv && inp.one_in(4) {
                            self.arg(inp)
                        } else {
                            Arg::Int(0)
                        };
                        let value = if let Arg::Int(0) = a {
                            NUMAGC_NIL
                        } else {
                            self.value(a)
                        };
                        let c = st.chans[j];
                        let this = if !c.live {
                            Some(NUMAGC_ERR_BAD_VALUE)
                        } else if c.rt != self.rt {
                            Some(NUMAGC_ERR_MISUSE)
                        } else if !recv && Self::is_bad(a) {
                            Some(NUMAGC_ERR_BAD_VALUE)
                        } else {
                            None
                        };
                        idx.push(Some((j, recv)));
                        (
                            numagc_sel {
                                channel: c.token,
                                dir: if recv { NUMAGC_RECV } else { NUMAGC_SEND } as c_int,
                                value,
                            },
                            this,
                        )
                    };
                    let this = if bad_dir.is_some() {
                        Some(NUMAGC_ERR_INVALID_ARGUMENT)
                    } else {
                        this
                    };
                    refusal = refusal.or(this);
                    cases.push(numagc_sel {
                        dir: bad_dir.unwrap_or(case.dir),
                        ..case
                    });
                }
                if refusal.is_none() {
                    let completes = idx.iter().flatten().any(|&(j, recv)| {
                        let b = st.chans[j].balance;
                        if recv {
                            b > 0
                        } else {
                            b < 0
                        }
                    });
                    if !completes {
                        return;
                    }
                    // The same channel in two cases could complete twice over
                    // one balance: keep choices to distinct channels.
                    let mut seen: Vec<usize> = idx.iter().flatten().map(|&(j, _)| j).collect();
                    seen.sort_unstable();
                    seen.dedup();
                    if seen.len() != idx.iter().flatten().count() {
                        return;
                    }
                }
                let (mut i, mut out) = (7, 9);
                // SAFETY: our scope; an array of `n` cases; valid outputs.
                let rc = unsafe { numagc_select(s, cases.as_ptr(), n, &mut i, &mut out) };
                if let Some(e) = refusal {
                    expect(rc, &[e], "numagc_select (refused)");
                    assert_eq!(out, 0);
                    if e == NUMAGC_ERR_INVALID_ARGUMENT {
                        hit("bad int refused");
                    }
                } else {
                    expect(rc, &[NUMAGC_OK], "numagc_select");
                    hit("select");
                    // The completed case may be one without a certain
                    // counterpart: a thread queued to match another thread
                    // can be taken by the choice first; the balance keeps
                    // count of the one left unmatched.
                    let (j, recv) = idx[i].expect("a completed case names a channel");
                    st.chans[j].balance += if recv { -1 } else { 1 };
                    if recv {
                        self.made(out, Shape::Unknown);
                    } else {
                        assert_eq!(out, NUMAGC_NIL);
                    }
                }
            }
            (4, _) => {
                let mut ch = null_mut();
                let Some(rt) = st.rts[self.rt].as_ref().map(|r| r.rt) else {
                    return;
                };
                // SAFETY: a live runtime, a valid output.
                expect(
                    unsafe { numagc_channel_new(rt, &mut ch) },
                    &[NUMAGC_OK],
                    "numagc_channel_new from a callback",
                );
                st.chans.push(Chan {
                    token: ch,
                    rt: self.rt,
                    live: true,
                    balance: 0,
                });
            }
            (5, Some(k)) => {
                let c = st.chans[k];
                // Freeing a channel that a callback could still count on is
                // fine: later ops on it are refused at once.
                expect(
                    numagc_channel_free(c.token),
                    &[if c.live {
                        NUMAGC_OK
                    } else {
                        NUMAGC_ERR_BAD_VALUE
                    }],
                    "numagc_channel_free",
                );
                st.chans[k].live = false;
            }
            _ => {
                let mut out = 9;
                // SAFETY: our scope; NULL and forged channels are refused.
                let rc = unsafe { numagc_recv(s, null_mut(), &mut out) };
                expect(rc, &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_recv(NULL)");
                let forged =
                    std::ptr::without_provenance_mut::<numagc_channel>((inp.u64() as usize) | 1);
                // SAFETY: as above.
                let rc = unsafe { numagc_send(s, forged, NUMAGC_NIL) };
                expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_send (forged channel)");
                // SAFETY: no cases: NULL with n = 0 is allowed, and refused.
                let rc = unsafe { numagc_select(s, null(), 0, &mut 0, &mut out) };
                expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_select (no cases)");
            }
        }
    }
}

type ThreadFn = unsafe extern "C" fn(
    *mut numagc_scope,
    *const numagc_value,
    usize,
    numagc_value,
    *mut c_void,
    *mut numagc_next,
) -> c_int;

/// Thread behaviours, in the low 4 bits of a thread's userdata (the high
/// bits carry its channel's token, when it has one).
const THREAD_KINDS: usize = 11;
pub(super) const T_EXIT: usize = 0;
const T_SEND: usize = 1;
const T_RECV: usize = 2;
const T_YIELD: usize = 3;
const T_NOTHING: usize = 4;
const T_TWICE: usize = 5;
const T_FAIL: usize = 6;
const T_BLOCKING: usize = 7;
const T_OPEN_FRAME: usize = 8;
/// Bad input to `numagc_next_*` (a `dir` out of range, counts far beyond
/// their arrays), each refused without counting as the answer; then exits.
const T_BAD_INPUT: usize = 9;
/// Returns inside a blocking section (its `numagc_next_exit` there is
/// refused): the thread fails.
const T_IN_SECTION: usize = 10;
/// Forces a global collection and reports its status (high bits: its id
/// in `COLLECTED`); spawned only by [`Body::blocking_op`].
pub(super) const T_COLLECT: usize = 11;
/// The continuation after a send, a receive or a yield: exits.
const T_THEN_EXIT: usize = 15;

/// Ids of collector threads (`T_COLLECT`), never reused.
pub(super) static NEXT_COLLECTOR: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(1);
/// The status of each collector thread's collection, by id, until the body
/// that waits for it takes it.
static COLLECTED: std::sync::Mutex<std::collections::BTreeMap<usize, c_int>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

pub(super) fn lock_collected(
) -> std::sync::MutexGuard<'static, std::collections::BTreeMap<usize, c_int>> {
    COLLECTED.lock().unwrap_or_else(|p| p.into_inner())
}

pub(super) unsafe extern "C" fn thread_body(
    s: *mut numagc_scope,
    env: *const numagc_value,
    n: usize,
    _received: numagc_value,
    data: *mut c_void,
    next: *mut numagc_next,
) -> c_int {
    let (token, kind) = (data.addr() & !0xF, data.addr() & 0xF);
    let ch = std::ptr::without_provenance_mut::<numagc_channel>(token);
    let then = std::ptr::without_provenance_mut::<c_void>(T_THEN_EXIT);
    // SAFETY: `env` has `n` values, `next` is this body's token (the
    // thread-body contract); channel tokens are never dereferenced.
    unsafe {
        let env = if n == 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(env, n)
        };
        match kind {
            T_SEND => {
                let v = env.first().copied().unwrap_or(NUMAGC_NIL);
                // The channel may have been freed since the spawn: then the
                // thread fails, and the callbacks no longer block on it.
                let rc = numagc_next_send(next, ch, v, env.as_ptr(), n, Some(thread_body), then);
                expect(rc, &[NUMAGC_OK, NUMAGC_ERR_BAD_VALUE], "numagc_next_send");
                hit("thread sent");
                rc
            }
            T_RECV => {
                let rc = numagc_next_recv(next, ch, env.as_ptr(), n, Some(thread_body), then);
                expect(rc, &[NUMAGC_OK, NUMAGC_ERR_BAD_VALUE], "numagc_next_recv");
                hit("thread received");
                rc
            }
            T_YIELD => {
                expect(
                    numagc_next_yield(next, env.as_ptr(), n, Some(thread_body), then),
                    &[NUMAGC_OK],
                    "numagc_next_yield",
                );
                0
            }
            T_NOTHING => 0,
            T_TWICE => {
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit");
                expect(
                    numagc_next_exit(next),
                    &[NUMAGC_ERR_MISUSE],
                    "numagc_next_exit twice",
                );
                0
            }
            T_FAIL => {
                hit("thread failed on purpose");
                expect(
                    numagc_next_select(next, null(), 0, null(), 0),
                    &[NUMAGC_ERR_MISUSE],
                    "numagc_next_select (no cases)",
                );
                expect(
                    numagc_next_exit(null_mut()),
                    &[NUMAGC_ERR_NULL_ARGUMENT],
                    "numagc_next_exit(NULL)",
                );
                let fake = std::ptr::without_provenance_mut::<numagc_next>(s.addr());
                expect(
                    numagc_next_exit(fake),
                    &[NUMAGC_ERR_NOT_ON_VPROC],
                    "numagc_next_exit(scope token)",
                );
                code(NUMAGC_ERR_MISUSE)
            }
            T_BLOCKING => {
                let mut out = 0;
                let rc = numagc_recv(s, ch, &mut out);
                let allowed = if token == 0 {
                    NUMAGC_ERR_NULL_ARGUMENT
                } else {
                    NUMAGC_ERR_MISUSE
                };
                expect(
                    rc,
                    &[allowed, NUMAGC_ERR_BAD_VALUE],
                    "a blocking numagc_recv inside a thread step",
                );
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit");
                0
            }
            T_OPEN_FRAME => {
                let mut f = 0;
                expect(
                    numagc_frame_enter(s, &mut f),
                    &[NUMAGC_OK],
                    "numagc_frame_enter in a thread",
                );
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit");
                0
            }
            T_BAD_INPUT => {
                let invalid = [NUMAGC_ERR_INVALID_ARGUMENT];
                // The dir is checked before the channel (which may be NULL
                // or freed); the environment is the body's own.
                let dir = BAD_INTS[(s.addr() >> 4) % BAD_INTS.len()];
                let bad = numagc_case {
                    channel: ch,
                    dir,
                    value: NUMAGC_NIL,
                    k: Some(thread_body),
                    userdata: then,
                };
                expect(
                    numagc_next_select(next, env.as_ptr(), n, &bad, 1),
                    &invalid,
                    "numagc_next_select (dir out of range)",
                );
                let good = numagc_case {
                    dir: NUMAGC_RECV as c_int,
                    ..bad
                };
                // Counts far beyond their arrays, checked before them.
                expect(
                    numagc_next_select(next, env.as_ptr(), n, &good, usize::MAX),
                    &invalid,
                    "numagc_next_select (n_cases = SIZE_MAX)",
                );
                expect(
                    numagc_next_select(next, env.as_ptr(), n, null(), 1 << 40),
                    &invalid,
                    "numagc_next_select (n_cases = 2^40, NULL)",
                );
                expect(
                    numagc_next_select(next, env.as_ptr(), 1 << 40, &good, 1),
                    &invalid,
                    "numagc_next_select (n = 2^40)",
                );
                expect(
                    numagc_next_yield(next, env.as_ptr(), usize::MAX, Some(thread_body), then),
                    &invalid,
                    "numagc_next_yield (n = SIZE_MAX)",
                );
                expect(
                    numagc_next_send(
                        next,
                        ch,
                        NUMAGC_NIL,
                        env.as_ptr(),
                        1 << 40,
                        Some(thread_body),
                        then,
                    ),
                    &invalid,
                    "numagc_next_send (n = 2^40)",
                );
                expect(
                    numagc_next_recv(next, ch, env.as_ptr(), usize::MAX, Some(thread_body), then),
                    &invalid,
                    "numagc_next_recv (n = SIZE_MAX)",
                );
                hit("thread bad input refused");
                // None of them was the answer.
                expect(
                    numagc_next_exit(next),
                    &[NUMAGC_OK],
                    "numagc_next_exit after refused numagc_next_* calls",
                );
                0
            }
            T_IN_SECTION => {
                let rc = numagc_enter_blocking(s);
                expect(
                    rc,
                    &[NUMAGC_OK, NUMAGC_ERR_OS],
                    "numagc_enter_blocking in a thread",
                );
                // Refused inside the section (a scope call), so the step
                // also says nothing: it fails either way.
                let want = if rc == 0 {
                    NUMAGC_ERR_MISUSE
                } else {
                    NUMAGC_OK
                };
                expect(
                    numagc_next_exit(next),
                    &[want],
                    "numagc_next_exit in a section",
                );
                hit("thread returned inside a section");
                0
            }
            T_COLLECT => {
                let rc = numagc_collect_global(s);
                expect(
                    rc,
                    &[NUMAGC_OK, NUMAGC_ERR_SAFEPOINT_TIMEOUT],
                    "numagc_collect_global in a collector thread",
                );
                lock_collected().insert(token >> 4, rc);
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit");
                0
            }
            _ => {
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit");
                0
            }
        }
    }
}
