//! Blocking sections: `numagc_enter_blocking` / `_leave_blocking`, entered
//! twice or left without entering, every scope call refused inside, calls
//! that take no scope allowed inside, and a global collection forced by a
//! thread on another vproc while the body waits inside its section.
//!
//! Invariant: inside a section every scope call is `NUMAGC_ERR_MISUSE` with
//! zeroed outputs; on leaving, the handles and frames are those at its
//! start and every word the model knows reads back unchanged.

use super::bad_input::BAD_INTS;
use super::check::expect;
use super::hit;
use super::model::{Body, Desc, Shape, State, Word};
use super::tasks::{task, task_data};
use super::threads::{lock_collected, thread_body, NEXT_COLLECTOR, T_COLLECT, T_EXIT};
use numagc_capi::numagc_dir::NUMAGC_SEND;
use numagc_capi::numagc_kind::*;
use numagc_capi::numagc_status::*;
use numagc_capi::*;
use std::ffi::{c_int, c_void};
use std::ptr::{null, null_mut};

impl Body {
    /// Outside a section: enters one (sometimes with a global collection
    /// forced from another vproc while inside), or leaves without having
    /// entered (`NUMAGC_ERR_MISUSE`, nothing changes).
    pub(super) fn blocking_op(&mut self, st: &mut State) {
        let s = self.s;
        if st.inp.one_in(4) {
            // SAFETY: our scope.
            expect(
                unsafe { numagc_leave_blocking(s) },
                &[NUMAGC_ERR_MISUSE],
                "numagc_leave_blocking without a section",
            );
            hit("blocking misuse refused");
            return;
        }
        let (mut h, mut f) = (0, 0);
        // SAFETY: our scope, valid outputs.
        expect(
            unsafe { numagc_scope_handles(s, &mut h, &mut f) },
            &[NUMAGC_OK],
            "numagc_scope_handles",
        );
        // A thread on another vproc that forces a global collection, which
        // must complete while this vproc is inside its section (its proxy
        // takes part for it); spawned just before the section starts.
        let vprocs = st
            .rts
            .get(self.rt)
            .and_then(|r| r.as_ref())
            .map_or(1, |r| r.vprocs);
        let budget = st.waited < std::time::Duration::from_secs(2);
        let collector = if !self.concurrent && vprocs > 1 && budget && st.inp.bool() {
            let mut me = 0;
            // SAFETY: our scope, a valid output.
            expect(
                unsafe { numagc_scope_vproc(s, &mut me) },
                &[NUMAGC_OK],
                "numagc_scope_vproc",
            );
            let other = (me + 1 + st.inp.below(vprocs - 1)) % vprocs;
            let id = NEXT_COLLECTOR.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let data = std::ptr::without_provenance_mut::<c_void>(id << 4 | T_COLLECT);
            // SAFETY: our scope; no environment; the body has the thread
            // signature and decodes its userdata, an integer.
            let rc = unsafe { numagc_spawn_on(s, other, null(), 0, Some(thread_body), data) };
            expect(rc, &[NUMAGC_OK], "numagc_spawn_on (a collector thread)");
            Some(id)
        } else {
            None
        };
        // SAFETY: our scope.
        let rc = unsafe { numagc_enter_blocking(s) };
        // NUMAGC_ERR_OS: the proxy thread could not be started; no section.
        expect(rc, &[NUMAGC_OK, NUMAGC_ERR_OS], "numagc_enter_blocking");
        if rc != 0 {
            return;
        }
        hit("blocking section");
        self.blocking = Some((h, f));
        if let Some(id) = collector {
            let start = std::time::Instant::now();
            let limit = std::time::Duration::from_secs(1);
            let done = loop {
                if let Some(rc) = lock_collected().remove(&id) {
                    break Some(rc);
                }
                if start.elapsed() > limit {
                    break None;
                }
                std::thread::sleep(std::time::Duration::from_micros(50));
            };
            st.waited += start.elapsed();
            // The thread may be late (the other vproc busy with another
            // thread): then it collects after the section, which is fine.
            if let Some(rc) = done {
                expect(
                    rc,
                    &[NUMAGC_OK],
                    "a global collection from another vproc while this one is in a section",
                );
                hit("collection during a section");
            }
        }
    }

    /// Inside a section: leave it, or make a call that is refused there.
    pub(super) fn blocked_op(&mut self, st: &mut State) {
        let s = self.s;
        match st.inp.u8() % 8 {
            0 | 1 => self.leave_section(),
            2 => {
                // SAFETY: our scope.
                expect(
                    unsafe { numagc_enter_blocking(s) },
                    &[NUMAGC_ERR_MISUSE],
                    "numagc_enter_blocking twice",
                );
                hit("blocking misuse refused");
            }
            3 => {
                // Calls that take no scope still work: the runtime's.
                if let Some(k) =
                    (0..st.chans.len()).find(|&k| st.chans[k].live && st.chans[k].rt == self.rt)
                {
                    let mut n = 99;
                    // SAFETY: a live channel token and a valid output.
                    expect(
                        unsafe { numagc_channel_waiting(st.chans[k].token, &mut n) },
                        &[NUMAGC_OK],
                        "numagc_channel_waiting inside a section",
                    );
                }
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
                // SAFETY: a live runtime, one offset, a valid output.
                let rc = unsafe {
                    numagc_register_mixed(
                        rt,
                        c"blocking".as_ptr(),
                        2,
                        [1usize].as_ptr(),
                        1,
                        0,
                        &mut d,
                    )
                };
                expect(rc, &[NUMAGC_OK], "numagc_register_mixed inside a section");
                st.rts[self.rt].as_mut().unwrap().descs.push(Desc {
                    id: d,
                    size: 2,
                    ptr: vec![false, true],
                    mutable: false,
                });
            }
            _ => self.refused_in_section(st),
        }
    }

    /// A scope call inside a section: `NUMAGC_ERR_MISUSE`, whatever its
    /// (well-formed) arguments, with outputs zeroed and nothing changed.
    fn refused_in_section(&mut self, st: &mut State) {
        let s = self.s;
        let a = self.arg(&mut st.inp);
        let v = self.value(a);
        let inp = &mut st.inp;
        let (mut out, mut f, mut n) = (9, 9, 9usize);
        let misuse = [NUMAGC_ERR_MISUSE];
        // SAFETY: our scope; valid outputs, arrays of the announced lengths;
        // channel tokens are never dereferenced; the task and thread
        // functions have their signatures (they are not run).
        unsafe {
            match inp.u8() % 16 {
                0 => {
                    expect(
                        numagc_frame_enter(s, &mut f),
                        &misuse,
                        "numagc_frame_enter in a section",
                    );
                    assert!(f == 0 || f == 9);
                }
                1 => {
                    let f = self.frames.last().copied().unwrap_or(inp.u64());
                    expect(
                        numagc_frame_leave(s, f),
                        &misuse,
                        "numagc_frame_leave in a section",
                    );
                }
                2 => {
                    let f = self.frames.last().copied().unwrap_or(inp.u64());
                    expect(
                        numagc_frame_return(s, f, v, &mut out),
                        &misuse,
                        "numagc_frame_return in a section",
                    );
                    assert_eq!(out, 0);
                }
                3 => {
                    expect(
                        numagc_alloc_vector(s, [v, v].as_ptr(), 2, &mut out),
                        &misuse,
                        "numagc_alloc_vector in a section",
                    );
                    assert_eq!(out, 0);
                }
                4 => {
                    let ws = [inp.u64(); 3];
                    expect(
                        numagc_alloc_raw(s, ws.as_ptr(), 3, &mut out),
                        &misuse,
                        "numagc_alloc_raw in a section",
                    );
                    assert_eq!(out, 0);
                }
                5 => {
                    expect(
                        numagc_field(s, v, inp.below(4), &mut out),
                        &misuse,
                        "numagc_field in a section",
                    );
                    assert_eq!(out, 0);
                    let mut w = 9;
                    expect(
                        numagc_raw(s, v, 0, &mut w),
                        &misuse,
                        "numagc_raw in a section",
                    );
                    expect(
                        numagc_length(s, v, &mut n),
                        &misuse,
                        "numagc_length in a section",
                    );
                    let mut k = NUMAGC_KIND_INT;
                    expect(
                        numagc_kind_of(s, v, &mut k, null_mut()),
                        &misuse,
                        "numagc_kind_of in a section",
                    );
                }
                6 => {
                    expect(
                        numagc_set(s, v, 0, numagc_int(1)),
                        &misuse,
                        "numagc_set in a section",
                    );
                    expect(
                        numagc_set_raw(s, v, 0, 1),
                        &misuse,
                        "numagc_set_raw in a section",
                    );
                }
                7 => {
                    expect(
                        numagc_promote(s, v, &mut out),
                        &misuse,
                        "numagc_promote in a section",
                    );
                    assert_eq!(out, 0);
                    expect(
                        numagc_local(s, v, &mut out),
                        &misuse,
                        "numagc_local in a section",
                    );
                    expect(
                        numagc_assign(s, v, v),
                        &misuse,
                        "numagc_assign in a section",
                    );
                    let mut b = false;
                    expect(
                        numagc_is_local(s, v, &mut b),
                        &misuse,
                        "numagc_is_local in a section",
                    );
                }
                8 => {
                    let rc = match inp.u8() % 4 {
                        0 => numagc_collect_minor(s),
                        1 => numagc_collect_major(s),
                        2 => numagc_collect_global(s),
                        _ => numagc_poll(s),
                    };
                    expect(rc, &misuse, "a collection in a section");
                }
                9 => {
                    let mut g = 9;
                    expect(
                        numagc_global_new(s, v, &mut g),
                        &misuse,
                        "numagc_global_new in a section",
                    );
                    assert_eq!(g, 0);
                    if let Some(&(g, _, _)) = st.globals.first() {
                        expect(
                            numagc_global_get(s, g, &mut out),
                            &misuse,
                            "numagc_global_get in a section",
                        );
                        assert_eq!(out, 0);
                        expect(
                            numagc_global_set(s, g, v),
                            &misuse,
                            "numagc_global_set in a section",
                        );
                    }
                }
                10 => {
                    expect(
                        numagc_scope_vproc(s, &mut n),
                        &misuse,
                        "numagc_scope_vproc in a section",
                    );
                    expect(
                        numagc_scope_vprocs(s, &mut n),
                        &misuse,
                        "numagc_scope_vprocs in a section",
                    );
                    expect(
                        numagc_scope_handles(s, &mut n, null_mut()),
                        &misuse,
                        "numagc_scope_handles in a section",
                    );
                }
                11 => {
                    let (mut x, mut y) = (9, 9);
                    let env = [v];
                    let rc = numagc_par2(
                        s,
                        env.as_ptr(),
                        1,
                        Some(task),
                        task_data(s.addr(), 0),
                        Some(task),
                        task_data(s.addr(), 0),
                        &mut x,
                        &mut y,
                    );
                    expect(rc, &misuse, "numagc_par2 in a section");
                    assert_eq!((x, y), (0, 0));
                }
                12 => {
                    let data = std::ptr::without_provenance_mut::<c_void>(T_EXIT);
                    expect(
                        numagc_spawn(s, [v].as_ptr(), 1, Some(thread_body), data),
                        &misuse,
                        "numagc_spawn in a section",
                    );
                    expect(
                        numagc_spawn_on(s, 0, null(), 0, Some(thread_body), data),
                        &misuse,
                        "numagc_spawn_on in a section",
                    );
                }
                13 if !st.chans.is_empty() => {
                    // Any channel, any direction, even a `dir` out of range:
                    // refused before the channel or the cases are looked at,
                    // so nothing waits and nothing is offered. (The offers
                    // queued are not compared: threads on other vprocs may
                    // queue theirs meanwhile.)
                    let c = st.chans[inp.below(st.chans.len())];
                    expect(
                        numagc_send(s, c.token, v),
                        &misuse,
                        "numagc_send in a section",
                    );
                    expect(
                        numagc_recv(s, c.token, &mut out),
                        &misuse,
                        "numagc_recv in a section",
                    );
                    assert_eq!(out, 0);
                    let dir = if inp.bool() {
                        inp.pick(BAD_INTS)
                    } else {
                        NUMAGC_SEND as c_int
                    };
                    let cases = [numagc_sel {
                        channel: c.token,
                        dir,
                        value: v,
                    }];
                    let mut i = 9;
                    expect(
                        numagc_select(s, cases.as_ptr(), 1, &mut i, &mut out),
                        &misuse,
                        "numagc_select in a section",
                    );
                    assert_eq!(out, 0);
                }
                _ => {
                    let mut buf = [0u64; 2];
                    expect(
                        numagc_read_raw(s, v, 0, buf.as_mut_ptr(), 2),
                        &misuse,
                        "numagc_read_raw in a section",
                    );
                    expect(
                        numagc_read_f64s(s, v, 0, buf.as_mut_ptr().cast(), 2),
                        &misuse,
                        "numagc_read_f64s in a section",
                    );
                }
            }
        }
        hit("refused in a section");
    }

    /// Leaves the section: the handles and frames are those it started
    /// with, and every object still reads back what the model says
    /// (collections may have moved them meanwhile).
    pub(super) fn leave_section(&mut self) {
        let s = self.s;
        let (h0, f0) = self.blocking.take().expect("in a section");
        // SAFETY: our scope, valid outputs.
        unsafe {
            expect(
                numagc_leave_blocking(s),
                &[NUMAGC_OK],
                "numagc_leave_blocking",
            );
            let (mut h, mut f) = (0, 0);
            expect(
                numagc_scope_handles(s, &mut h, &mut f),
                &[NUMAGC_OK],
                "numagc_scope_handles after a section",
            );
            assert_eq!(
                (h, f),
                (h0, f0),
                "a blocking section changed the handles or frames"
            );
            assert_eq!(f, self.frames.len());
        }
        self.check_values();
        hit("blocking section left");
    }

    /// Reads back every word the model knows of the body's live objects
    /// (up to 64 words each), inside a frame of its own.
    fn check_values(&self) {
        let s = self.s;
        // SAFETY: our scope; valid outputs; a buffer of the announced length.
        unsafe {
            let mut f = 0;
            expect(
                numagc_frame_enter(s, &mut f),
                &[NUMAGC_OK],
                "numagc_frame_enter",
            );
            for h in self.hs.iter().filter(|h| h.live) {
                match &h.shape {
                    Shape::Raw(ws) if ws.len() <= 64 => {
                        let mut buf = vec![0u64; ws.len()];
                        expect(
                            numagc_read_raw(s, h.v, 0, buf.as_mut_ptr(), ws.len()),
                            &[NUMAGC_OK],
                            "numagc_read_raw (check)",
                        );
                        assert_eq!(&buf, ws, "a raw object changed");
                    }
                    Shape::Vector(ws) | Shape::Array(ws) | Shape::Mixed { words: ws, .. }
                        if ws.len() <= 64 =>
                    {
                        for (i, w) in ws.iter().enumerate() {
                            match *w {
                                Word::Int(x) => {
                                    let mut out = 0;
                                    expect(
                                        numagc_field(s, h.v, i, &mut out),
                                        &[NUMAGC_OK],
                                        "numagc_field (check)",
                                    );
                                    assert_eq!(
                                        out,
                                        numagc_int(x),
                                        "field {i} of {:?} changed",
                                        h.shape
                                    );
                                }
                                Word::Raw(x) => {
                                    let mut out = 0;
                                    expect(
                                        numagc_raw(s, h.v, i, &mut out),
                                        &[NUMAGC_OK],
                                        "numagc_raw (check)",
                                    );
                                    assert_eq!(out, x, "raw field {i} of {:?} changed", h.shape);
                                }
                                Word::Unknown => {}
                            }
                        }
                    }
                    _ => {}
                }
            }
            expect(numagc_frame_leave(s, f), &[NUMAGC_OK], "numagc_frame_leave");
        }
    }
}
