//! Callbacks: `numagc_run_on` runs one [`Body`] on one vproc with the
//! program's state; `numagc_run_each` runs one on every vproc at once, each
//! on its own reading of a copy of the program bytes.
//!
//! Invariant: `numagc_run_on`'s status follows from how its callback ended
//! (its own status, a return inside a blocking section, frames left open),
//! and a `run_each` callback always returns cleanly, without waiting for
//! another vproc's callback.

use super::check::{expect, last_error};
use super::hit;
use super::model::{Body, Desc, Rt, State};
use crate::Input;
use numagc_capi::numagc_status::*;
use numagc_capi::*;
use std::ffi::{c_int, c_void};
use std::ptr::null_mut;

/// What `numagc_run_on` hands its callback: the program's state.
struct Ctx<'s, 'a> {
    st: &'s mut State<'a>,
    rt: usize,
    /// The status the callback returns.
    ret: c_int,
    /// The callback's scope token (kept as stale afterwards).
    token: usize,
    /// Frames it leaves open on purpose.
    open: usize,
    /// It returns inside a blocking section on purpose.
    blocking: bool,
}

pub(super) fn run_on(st: &mut State) {
    let Some(k) = st.live_rt() else { return };
    let (rt, n) = {
        let r = st.rts[k].as_ref().unwrap();
        (r.rt, r.vprocs)
    };
    let vproc = if st.inp.one_in(8) {
        n + st.inp.below(3)
    } else {
        st.inp.below(n)
    };
    let mut ctx = Ctx {
        st,
        rt: k,
        ret: 0,
        token: 0,
        open: 0,
        blocking: false,
    };
    // SAFETY: a live runtime; `callback` has the callback signature and
    // `ctx` outlives the call, which waits for the callback to return.
    let rc = unsafe { numagc_run_on(rt, vproc, Some(callback), (&mut ctx as *mut Ctx).cast()) };
    if vproc >= n {
        expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_run_on (no such vproc)");
        return;
    }
    let (ret, open, token, blocking) = (ctx.ret, ctx.open, ctx.token, ctx.blocking);
    if token != 0 {
        st.stale_scopes.push(token);
    }
    if ret != 0 {
        assert_eq!(
            rc,
            ret,
            "numagc_run_on did not return the callback's status: {}",
            last_error()
        );
        hit("callback failed");
    } else if blocking {
        // Returning inside a section is misuse, before open frames.
        expect(
            rc,
            &[NUMAGC_ERR_MISUSE],
            "numagc_run_on (returned inside a blocking section)",
        );
        hit("returned inside a section");
    } else if open > 0 {
        expect(
            rc,
            &[NUMAGC_ERR_UNBALANCED_FRAME],
            "numagc_run_on (frames left open)",
        );
    } else {
        expect(rc, &[NUMAGC_OK], "numagc_run_on");
        hit("callback");
    }
    if blocking {
        // The section was left for it: the next callback on that vproc
        // is in none and may use its scope.
        // SAFETY: a live runtime; `after_section` has the callback signature.
        let rc = unsafe { numagc_run_on(rt, vproc, Some(after_section), null_mut()) };
        expect(
            rc,
            &[NUMAGC_OK],
            "numagc_run_on after a callback returned inside a section",
        );
    }
}

/// The callback after one that returned inside a blocking section: not in
/// a section, and its scope works.
unsafe extern "C" fn after_section(s: *mut numagc_scope, _: *mut c_void) -> c_int {
    // SAFETY: our scope and valid outputs.
    unsafe {
        expect(
            numagc_leave_blocking(s),
            &[NUMAGC_ERR_MISUSE],
            "numagc_leave_blocking in the next callback",
        );
        let mut f = 0;
        expect(
            numagc_frame_enter(s, &mut f),
            &[NUMAGC_OK],
            "numagc_frame_enter after a section left for its callback",
        );
        let mut v = 0;
        expect(
            numagc_alloc_vector(s, [numagc_int(3)].as_ptr(), 1, &mut v),
            &[NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT],
            "numagc_alloc_vector",
        );
        expect(
            numagc_collect_minor(s),
            &[NUMAGC_OK],
            "numagc_collect_minor",
        );
        expect(numagc_frame_leave(s, f), &[NUMAGC_OK], "numagc_frame_leave");
    }
    hit("section left for its callback");
    0
}

pub(super) unsafe extern "C" fn callback(s: *mut numagc_scope, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `Ctx` that `run_on` passed, alive and not used
    // by the waiting fuzzer thread until this callback returns.
    let ctx = unsafe { &mut *data.cast::<Ctx>() };
    ctx.token = s.addr();
    let mut b = Body::new(s, ctx.rt, false);
    b.program(ctx.st, 24);
    let (ret, open, blocking) = b.finish(ctx.st);
    ctx.ret = ret;
    ctx.open = open;
    ctx.blocking = blocking;
    ret
}

/// What every callback of `numagc_run_each` is handed: the program bytes
/// (read-only) and the runtime's descriptors.
struct EachCtx {
    ops: Vec<u8>,
    descs: Vec<Desc>,
    vprocs: usize,
    max_heap: usize,
}

pub(super) fn run_each(st: &mut State) {
    let Some(k) = st.live_rt() else { return };
    let (rt, vprocs, descs, max_heap) = {
        let r = st.rts[k].as_ref().unwrap();
        (r.rt, r.vprocs, r.descs.clone(), r.max_heap)
    };
    let ops = st.inp.bytes(48).to_vec();
    st.ops += ops.len() / 4;
    let ctx = EachCtx {
        ops,
        descs,
        vprocs,
        max_heap,
    };
    // SAFETY: a live runtime; `ctx` outlives the call and is only read.
    let rc = unsafe {
        numagc_run_each(
            rt,
            Some(each_callback),
            (&ctx as *const EachCtx).cast_mut().cast(),
        )
    };
    expect(rc, &[NUMAGC_OK], "numagc_run_each");
    hit("run_each");
}

/// A `numagc_run_each` callback: the same allocation, read and collection
/// calls as `numagc_run_on`'s, on every vproc at once, with nothing that
/// waits for another vproc's callback (no channel ops).
unsafe extern "C" fn each_callback(s: *mut numagc_scope, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `EachCtx` of `run_each`, alive and unchanged
    // until every callback has returned.
    let ctx = unsafe { &*data.cast::<EachCtx>() };
    let mut st = State {
        inp: Input::new(&ctx.ops),
        ops: 0,
        rts: Vec::new(),
        globals: Vec::new(),
        chans: Vec::new(),
        stale_scopes: Vec::new(),
        waited: Default::default(),
    };
    st.rts.push(Some(Rt {
        rt: null_mut(),
        vprocs: ctx.vprocs,
        descs: ctx.descs.clone(),
        max_heap: ctx.max_heap,
    }));
    let mut b = Body::new(s, 0, true);
    b.program(&mut st, 12);
    // A `run_each` callback must return cleanly: out of its section first.
    if b.blocking.is_some() {
        b.leave_section();
    }
    // Leave every frame: a `run_each` callback must return cleanly.
    while let Some(f) = b.frames.pop() {
        // SAFETY: our own scope and its innermost open frame.
        expect(
            unsafe { numagc_frame_leave(s, f) },
            &[NUMAGC_OK],
            "numagc_frame_leave",
        );
    }
    for (g, _, live) in st.globals {
        if live {
            expect(numagc_global_free(g), &[NUMAGC_OK], "numagc_global_free");
        }
    }
    0
}
