//! The program's calls from the fuzzer's own thread, which is no vproc:
//! freeing runtimes, registering descriptors, freeing global roots,
//! channels (`_new`, `_free` twice, `_waiting`), scope calls with stale or
//! forged tokens, reports (`numagc_stats_json`, `_take_thread_errors`),
//! immediates and NULL arguments.
//!
//! Invariant: the model in [`State`] follows each call: a freed runtime's
//! global roots and channels are dead, a descriptor is recorded exactly as
//! the library accepted it, and a refused call leaves its outputs zero.

use super::bad_input::{huge_count, BAD_INTS};
use super::callbacks::callback;
use super::check::{c_string, expect};
use super::hit;
use super::model::{Chan, Desc, State};
use numagc_capi::numagc_status::*;
use numagc_capi::*;
use std::ffi::{c_int, CStr};
use std::ptr::{null, null_mut};

pub(super) fn free_runtime(st: &mut State) {
    let Some(k) = st.live_rt() else { return };
    let rt = st.rts[k].take().unwrap();
    // SAFETY: a live runtime, freed once.
    expect(
        unsafe { numagc_runtime_free(rt.rt) },
        &[NUMAGC_OK],
        "numagc_runtime_free",
    );
    // Its global roots and channels are gone with it.
    for g in st.globals.iter_mut().filter(|g| g.1 == k) {
        g.2 = false;
    }
    for c in st.chans.iter_mut().filter(|c| c.rt == k) {
        c.live = false;
    }
}

pub(super) fn register(st: &mut State) {
    let Some(k) = st.live_rt() else { return };
    let inp = &mut st.inp;
    let size = match inp.u8() % 8 {
        0 => inp.u64() as usize,
        1 => inp.pick(&[0, 64, 65, 1 << 20, (1 << 20) + 1, 1 << 40, usize::MAX]),
        _ => inp.below(12),
    };
    let len = inp.below(6);
    let mut offsets: Vec<usize> = (0..len)
        .map(|_| {
            if inp.one_in(8) {
                inp.u64() as usize
            } else {
                inp.below(size.clamp(1, 16))
            }
        })
        .collect();
    // Now and then a count far beyond the array (which must not be read).
    let n = if inp.one_in(16) { huge_count(inp) } else { len };
    let mutable = inp.bool();
    // Now and then a flag that is neither false nor true (an int in C).
    let flag: c_int = if inp.one_in(16) {
        inp.pick(BAD_INTS)
    } else {
        c_int::from(mutable)
    };
    let name = c_string(inp.bytes(8));
    let null_name = inp.one_in(16);
    let null_offsets = n > 0 && inp.one_in(16);
    let mut d = 7;
    let rt = st.rts[k].as_ref().unwrap().rt;
    // SAFETY: a live runtime, a C string or NULL, an array of `n` offsets
    // or NULL, a valid output.
    let rc = unsafe {
        numagc_register_mixed(
            rt,
            if null_name { null() } else { name.as_ptr() },
            size,
            if null_offsets {
                null()
            } else {
                offsets.as_ptr()
            },
            n,
            flag,
            &mut d,
        )
    };
    let mut distinct = offsets.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let valid = (1..=1 << 20).contains(&size)
        && n == len
        && distinct.len() == n
        && offsets.iter().all(|&o| o < size);
    // In the order the arguments are checked: name, flag, offsets, layout.
    let want = if null_name {
        NUMAGC_ERR_NULL_ARGUMENT
    } else if name.to_str().is_err() || !(0..=1).contains(&flag) {
        if !(0..=1).contains(&flag) {
            hit("bad int refused");
        }
        NUMAGC_ERR_INVALID_ARGUMENT
    } else if null_offsets {
        NUMAGC_ERR_NULL_ARGUMENT
    } else if n > size.min(1 << 20) {
        // More offsets than fields: refused before the array is read.
        if n != len {
            hit("huge count refused");
        }
        NUMAGC_ERR_INVALID_DESCRIPTOR
    } else if valid {
        NUMAGC_OK
    } else {
        NUMAGC_ERR_INVALID_DESCRIPTOR
    };
    expect(rc, &[want], "numagc_register_mixed");
    if rc == 0 {
        hit("descriptor");
        offsets.sort_unstable();
        let mut ptr = vec![false; size];
        for &o in &offsets {
            ptr[o] = true;
        }
        st.rts[k].as_mut().unwrap().descs.push(Desc {
            id: d,
            size,
            ptr,
            mutable,
        });
    } else {
        assert_eq!(d, 0, "a refused descriptor left its output set");
        hit("descriptor refused");
    }
}

pub(super) fn free_global(st: &mut State) {
    let g = if st.globals.is_empty() || st.inp.one_in(8) {
        (st.inp.u64(), usize::MAX, false)
    } else {
        let k = st.inp.below(st.globals.len());
        let g = st.globals[k];
        st.globals[k].2 = false;
        g
    };
    let rc = numagc_global_free(g.0);
    if g.2 {
        expect(rc, &[NUMAGC_OK], "numagc_global_free (live)");
    } else if g.0 == 0 {
        expect(rc, &[NUMAGC_OK], "numagc_global_free(0)");
    } else if g.1 != usize::MAX {
        expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_global_free (freed)");
        hit("global freed twice");
    } else {
        // A forged id may happen to name a live root of this program.
        expect(
            rc,
            &[NUMAGC_OK, NUMAGC_ERR_BAD_VALUE],
            "numagc_global_free (forged)",
        );
        if rc == 0 {
            for x in st.globals.iter_mut().filter(|x| x.0 == g.0) {
                x.2 = false;
            }
        }
    }
}

pub(super) fn channel_op(st: &mut State) {
    match st.inp.u8() % 4 {
        0 | 1 => {
            let Some(k) = st.live_rt() else { return };
            let mut ch = null_mut();
            // SAFETY: a live runtime and a valid output.
            let rc = unsafe { numagc_channel_new(st.rts[k].as_ref().unwrap().rt, &mut ch) };
            expect(rc, &[NUMAGC_OK], "numagc_channel_new");
            st.chans.push(Chan {
                token: ch,
                rt: k,
                live: true,
                balance: 0,
            });
        }
        2 if !st.chans.is_empty() => {
            let k = st.inp.below(st.chans.len());
            let c = st.chans[k];
            let rc = numagc_channel_free(c.token);
            expect(
                rc,
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
            let (token, live) = if st.chans.is_empty() || st.inp.one_in(4) {
                (
                    std::ptr::without_provenance_mut::<numagc_channel>(st.inp.u64() as usize),
                    None,
                )
            } else {
                let c = st.chans[st.inp.below(st.chans.len())];
                (c.token, Some(c.live))
            };
            let mut n = 99;
            // SAFETY: `token` is never dereferenced by the library (a
            // channel is an id); `n` is a valid output.
            let rc = unsafe { numagc_channel_waiting(token, &mut n) };
            match live {
                Some(true) => expect(rc, &[NUMAGC_OK], "numagc_channel_waiting"),
                Some(false) => expect(
                    rc,
                    &[NUMAGC_ERR_BAD_VALUE],
                    "numagc_channel_waiting (freed)",
                ),
                None if token.is_null() => expect(
                    rc,
                    &[NUMAGC_ERR_NULL_ARGUMENT],
                    "numagc_channel_waiting(NULL)",
                ),
                None => expect(
                    rc,
                    &[NUMAGC_OK, NUMAGC_ERR_BAD_VALUE],
                    "numagc_channel_waiting (forged)",
                ),
            }
            if rc != 0 {
                assert_eq!(n, 0);
            }
        }
    }
}

/// Scope calls from the fuzzer's own thread, which runs no callback: with
/// the token of a callback that returned, a forged one, or NULL.
pub(super) fn stale_scope_call(st: &mut State) {
    let token = match st.inp.u8() % 4 {
        0 => 0,
        1 => st.inp.u64() as usize,
        _ if !st.stale_scopes.is_empty() => st.stale_scopes[st.inp.below(st.stale_scopes.len())],
        _ => st.inp.u64() as usize | 16,
    };
    let s = std::ptr::without_provenance_mut::<numagc_scope>(token);
    let want = if token == 0 {
        NUMAGC_ERR_NULL_ARGUMENT
    } else {
        NUMAGC_ERR_NOT_ON_VPROC
    };
    let mut v = 5;
    let mut f = 5;
    // SAFETY: scope tokens are never dereferenced; the outputs are valid.
    let rc = unsafe {
        match st.inp.u8() % 8 {
            0 => numagc_frame_enter(s, &mut f),
            1 => numagc_alloc_vector(s, null(), 0, &mut v),
            2 => numagc_collect_global(s),
            3 => numagc_field(s, numagc_int(1), 0, &mut v),
            4 => numagc_local(s, NUMAGC_NIL, &mut v),
            5 => numagc_enter_blocking(s),
            6 => numagc_leave_blocking(s),
            _ => numagc_frame_leave(s, st.inp.u64()),
        }
    };
    expect(
        rc,
        &[want],
        "a scope call from a thread that runs no callback",
    );
    hit("stale scope");
    assert!(v == 0 || v == 5, "an output was set by a refused call");
    assert!(f == 0 || f == 5);
}

pub(super) fn reports(st: &mut State) {
    let Some(k) = st.live_rt() else { return };
    let rt = st.rts[k].as_ref().unwrap().rt;
    let mut s = null_mut();
    // SAFETY: a live runtime, a valid output; the string is freed once.
    unsafe {
        if st.inp.bool() {
            expect(
                numagc_stats_json(rt, &mut s),
                &[NUMAGC_OK],
                "numagc_stats_json",
            );
        } else {
            expect(
                numagc_take_thread_errors(rt, &mut s),
                &[NUMAGC_OK],
                "numagc_take_thread_errors",
            );
        }
        assert!(!s.is_null());
        let text = CStr::from_ptr(s).to_str().expect("JSON is UTF-8");
        assert!(text.starts_with('{') || text.starts_with('['), "{text}");
        expect(numagc_string_free(s), &[NUMAGC_OK], "numagc_string_free");
    }
}

/// NULL arguments, immediates, status names.
pub(super) fn misc(st: &mut State) {
    let x = st.inp.u64() as i64 >> 1;
    let v = numagc_int(x);
    assert!(numagc_is_int(v));
    let mut back = 0;
    // SAFETY: valid outputs, or NULL where NULL is the point; NULL
    // runtimes, configurations and strings are refused, never read.
    unsafe {
        expect(numagc_get_int(v, &mut back), &[NUMAGC_OK], "numagc_get_int");
        assert_eq!(back, x);
        let h = st.inp.u64() & !1;
        expect(
            numagc_get_int(h, &mut back),
            &[NUMAGC_ERR_BAD_VALUE],
            "numagc_get_int(handle)",
        );
        expect(
            numagc_get_int(v, null_mut()),
            &[NUMAGC_ERR_NULL_ARGUMENT],
            "numagc_get_int(NULL)",
        );
        let _ = CStr::from_ptr(numagc_status_name(st.inp.u32() as c_int));
        let mut n = 0;
        expect(
            numagc_runtime_vprocs(null(), &mut n),
            &[NUMAGC_ERR_NULL_ARGUMENT],
            "numagc_runtime_vprocs(NULL)",
        );
        expect(
            numagc_run_on(null(), 0, Some(callback), null_mut()),
            &[NUMAGC_ERR_NULL_ARGUMENT],
            "numagc_run_on(NULL)",
        );
        let mut rt = null_mut();
        expect(
            numagc_runtime_new(null(), &mut rt),
            &[NUMAGC_ERR_NULL_ARGUMENT],
            "numagc_runtime_new(NULL)",
        );
        expect(
            numagc_config_set(null_mut(), c"vprocs".as_ptr(), c"1".as_ptr()),
            &[NUMAGC_ERR_NULL_ARGUMENT],
            "numagc_config_set(NULL)",
        );
        expect(
            numagc_config_free(null_mut()),
            &[NUMAGC_OK],
            "numagc_config_free(NULL)",
        );
        expect(
            numagc_runtime_free(null_mut()),
            &[NUMAGC_OK],
            "numagc_runtime_free(NULL)",
        );
        expect(
            numagc_string_free(null_mut()),
            &[NUMAGC_OK],
            "numagc_string_free(NULL)",
        );
        expect(
            numagc_channel_free(null_mut()),
            &[NUMAGC_OK],
            "numagc_channel_free(NULL)",
        );
        expect(numagc_global_free(0), &[NUMAGC_OK], "numagc_global_free(0)");
        if let Some(k) = st.live_rt() {
            let rt = st.rts[k].as_ref().unwrap().rt;
            expect(
                numagc_run_on(rt, 0, None, null_mut()),
                &[NUMAGC_ERR_NULL_ARGUMENT],
                "numagc_run_on(callback NULL)",
            );
            expect(
                numagc_run_each(rt, None, null_mut()),
                &[NUMAGC_ERR_NULL_ARGUMENT],
                "numagc_run_each(callback NULL)",
            );
            expect(
                numagc_channel_new(rt, null_mut()),
                &[NUMAGC_ERR_NULL_ARGUMENT],
                "numagc_channel_new(out NULL)",
            );
            let mut d = 0;
            expect(
                numagc_register_mixed(rt, c"x".as_ptr(), 1, null(), 0, 0, null_mut()),
                &[NUMAGC_ERR_NULL_ARGUMENT],
                "numagc_register_mixed(out NULL)",
            );
            expect(
                numagc_register_mixed(null(), c"x".as_ptr(), 1, null(), 0, 0, &mut d),
                &[NUMAGC_ERR_NULL_ARGUMENT],
                "numagc_register_mixed(rt NULL)",
            );
        }
    }
}
