//! Bad input (issue 16): checked `int` fields out of range ([`BAD_INTS`])
//! and counts far beyond their arrays ([`huge_count`], [`Body::huge`]).
//!
//! Invariant: such a count is passed only where the library must refuse it
//! before reading the array; an object length the heap limit would let
//! through is never passed with a short array.

use super::check::expect;
use super::hit;
use super::model::{Body, State};
use super::tasks::{task, task_data};
use super::threads::{thread_body, T_EXIT};
use crate::Input;
use numagc_capi::numagc_dir::NUMAGC_RECV;
use numagc_capi::numagc_status::*;
use numagc_capi::*;
use std::ffi::{c_int, c_void};
use std::ptr::{null, null_mut};

/// Values of C `int` fields that are checked enums or flags (`dir`,
/// `is_mutable`) but hold none of the accepted values: an uninitialised
/// field, a C `bool` cast wrong, a sign bit.
pub(super) const BAD_INTS: &[c_int] = &[2, 7, -1, 256, c_int::MIN, c_int::MAX];

/// A count far beyond any array the program passes with it: the library
/// must refuse it before reading the array or sizing anything by it.
pub(super) fn huge_count(inp: &mut Input) -> usize {
    inp.pick(&[1usize << 40, usize::MAX, (1 << 40) + 1, usize::MAX / 8 + 1])
}

impl Body {
    /// A pointer+count entry point with a count far beyond its (short)
    /// array: refused with the documented code before the array is read.
    /// Object lengths the heap limit would let through are not made (the
    /// library would read the whole array, as C asked).
    pub(super) fn huge(&mut self, st: &mut State) {
        let s = self.s;
        let max_heap = self.max_heap(st);
        let vprocs = st
            .rts
            .get(self.rt)
            .and_then(|r| r.as_ref())
            .map_or(1, |r| r.vprocs);
        let n = huge_count(&mut st.inp);
        let a = self.arg(&mut st.inp);
        let v = self.value(a);
        let inp = &mut st.inp;
        let vs = [v, v];
        let ws = [inp.u64(); 2];
        let mut out = 9;
        let invalid = NUMAGC_ERR_INVALID_ARGUMENT;
        // SAFETY: our scope; arrays shorter than announced, which the
        // library must not read (it refuses the count first); valid outputs.
        unsafe {
            match inp.u8() % 8 {
                k @ 0..=2 => {
                    let Some(want) = Self::len_refusal(n, max_heap) else {
                        return;
                    };
                    let rc = match k {
                        0 => numagc_alloc_vector(s, vs.as_ptr(), n, &mut out),
                        1 => numagc_alloc_raw(s, ws.as_ptr(), n, &mut out),
                        _ => numagc_alloc_f64s(s, ws.as_ptr().cast(), n, &mut out),
                    };
                    expect(rc, &[want], "an allocation of a count far beyond its array");
                    assert_eq!(out, 0);
                }
                k @ 3..=4 => {
                    let Some(len) = Self::len_refusal(n, max_heap) else {
                        return;
                    };
                    let want = if Self::is_bad(a) {
                        NUMAGC_ERR_BAD_VALUE
                    } else {
                        len
                    };
                    let rc = if k == 3 {
                        numagc_alloc_vector_filled(s, n, v, &mut out)
                    } else {
                        numagc_alloc_array(s, n, v, &mut out)
                    };
                    expect(
                        rc,
                        &[want],
                        "numagc_alloc_vector_filled / _array of a huge length",
                    );
                    assert_eq!(out, 0);
                }
                5 => {
                    let (mut x, mut y) = (9, 9);
                    let rc = numagc_par2(
                        s,
                        vs.as_ptr(),
                        n,
                        Some(task),
                        task_data(s.addr(), 0),
                        Some(task),
                        task_data(s.addr(), 0),
                        &mut x,
                        &mut y,
                    );
                    expect(rc, &[invalid], "numagc_par2 with n far beyond env");
                    assert_eq!((x, y), (0, 0));
                }
                6 => {
                    let data = std::ptr::without_provenance_mut::<c_void>(T_EXIT);
                    let rc = if inp.bool() {
                        numagc_spawn(s, vs.as_ptr(), n, Some(thread_body), data)
                    } else {
                        // The count is checked before the vproc.
                        numagc_spawn_on(
                            s,
                            inp.below(vprocs + 2),
                            vs.as_ptr(),
                            n,
                            Some(thread_body),
                            data,
                        )
                    };
                    expect(rc, &[invalid], "numagc_spawn with n far beyond env");
                }
                _ => {
                    let cases = [numagc_sel {
                        channel: null_mut(),
                        dir: NUMAGC_RECV as c_int,
                        value: 0,
                    }];
                    let mut i = 9;
                    let p = if inp.bool() { cases.as_ptr() } else { null() };
                    let rc = numagc_select(s, p, n, &mut i, &mut out);
                    expect(rc, &[invalid], "numagc_select with n far beyond cases");
                    assert_eq!(out, 0);
                    let mut buf = [0u64; 2];
                    let rc = numagc_read_raw(s, v, inp.below(4), buf.as_mut_ptr(), n);
                    let want = if Self::is_bad(a) {
                        NUMAGC_ERR_BAD_VALUE
                    } else {
                        NUMAGC_ERR_MISUSE
                    };
                    expect(rc, &[want], "numagc_read_raw with n far beyond buf");
                }
            }
        }
        hit("huge count refused");
    }
}
