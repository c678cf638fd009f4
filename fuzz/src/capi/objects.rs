//! Objects: allocation of every kind (mixed by descriptor, vectors, arrays,
//! raw and float objects) with sizes small, medium and absurd, field and
//! raw reads and stores in and out of range, and global roots.
//!
//! Invariant: every successful allocation or store updates the shape the
//! model keeps of the object, and every read is checked against it.

use super::bad_input::huge_count;
use super::check::expect;
use super::hit;
use super::model::{Arg, Body, Shape, State, Word};
use numagc_capi::numagc_kind::*;
use numagc_capi::numagc_status::{self, *};
use numagc_capi::*;
use std::ffi::c_int;
use std::ptr::{null, null_mut};

impl Body {
    pub(super) fn alloc_mixed(&mut self, st: &mut State) {
        let (id, desc) = self.desc_arg(st);
        let inp = &mut st.inp;
        let (np, nr) = desc.as_ref().map_or((inp.below(3), inp.below(3)), |d| {
            let p = d.ptr.iter().filter(|&&b| b).count();
            (p, d.size - p)
        });
        let skew = inp.u8() % 16;
        let (nv, nraw) = match skew {
            0 => (np + 1, nr),
            1 => (np, nr + 1),
            2 if np > 0 => (np - 1, nr),
            _ => (np, nr),
        };
        let args: Vec<Arg> = (0..nv).map(|_| self.arg(inp)).collect();
        let values: Vec<numagc_value> = args.iter().map(|&a| self.value(a)).collect();
        let raws: Vec<u64> = (0..nraw).map(|_| inp.u64()).collect();
        // Now and then a count far beyond its array (which must not be read).
        let (nv_arg, nraw_arg) = match skew {
            3 => (huge_count(inp), nraw),
            4 => (nv, huge_count(inp)),
            _ => (nv, nraw),
        };
        let null_values = nv_arg > 0 && inp.one_in(32);
        let mut out = 9;
        // SAFETY: our scope; arrays of the announced lengths (or NULL); a valid output.
        let rc = unsafe {
            numagc_alloc_mixed(
                self.s,
                id,
                if null_values { null() } else { values.as_ptr() },
                nv_arg,
                raws.as_ptr(),
                nraw_arg,
                &mut out,
            )
        };
        let want: &[numagc_status] = if null_values {
            &[NUMAGC_ERR_NULL_ARGUMENT]
        } else if desc.is_none() {
            &[NUMAGC_ERR_UNKNOWN_DESCRIPTOR]
        } else if (nv_arg, nraw_arg) != (np, nr) {
            // The counts are checked before the values are read.
            if (nv_arg, nraw_arg) != (nv, nraw) {
                hit("huge count refused");
            }
            &[NUMAGC_ERR_MISUSE]
        } else if args.iter().any(|&a| Self::is_bad(a)) {
            &[NUMAGC_ERR_BAD_VALUE]
        } else {
            &[NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT]
        };
        expect(rc, want, "numagc_alloc_mixed");
        if want.len() == 1
            && want[0] == NUMAGC_ERR_BAD_VALUE
            && args
                .iter()
                .any(|a| matches!(a, Arg::Bad(v) if *v != 0 && self.hs.iter().any(|h| h.v == *v)))
        {
            hit("stale handle refused");
        }
        if rc != 0 {
            assert_eq!(out, 0, "a failed allocation left its output set");
            hit("mixed refused");
            return;
        }
        hit("mixed");
        let d = desc.unwrap();
        let (mut vi, mut ri) = (0, 0);
        let words: Vec<Word> = d
            .ptr
            .iter()
            .map(|&p| {
                if p {
                    vi += 1;
                    self.word(args[vi - 1])
                } else {
                    ri += 1;
                    Word::Raw(raws[ri - 1])
                }
            })
            .collect();
        let di = self.descs(st).iter().position(|x| x.id == d.id).unwrap();
        // Long objects are not modelled word by word.
        let shape = if words.len() > 4096 {
            Shape::Unknown
        } else {
            Shape::Mixed { desc: di, words }
        };
        self.made(out, shape);
    }

    pub(super) fn alloc_other(&mut self, st: &mut State) {
        let max_heap = self.max_heap(st);
        let inp = &mut st.inp;
        let s = self.s;
        let mut out = 9;
        let kind = inp.u8() % 5;
        let (rc, want, shape): (c_int, Vec<numagc_status>, Shape) = match kind {
            0 => {
                let n = inp.below(10);
                let args: Vec<Arg> = (0..n).map(|_| self.arg(inp)).collect();
                let vs: Vec<numagc_value> = args.iter().map(|&a| self.value(a)).collect();
                // SAFETY: our scope, an array of `n` values, a valid output.
                let rc = unsafe { numagc_alloc_vector(s, vs.as_ptr(), n, &mut out) };
                let bad = args.iter().any(|&a| Self::is_bad(a));
                let want = if bad {
                    vec![NUMAGC_ERR_BAD_VALUE]
                } else {
                    vec![NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT]
                };
                (
                    rc,
                    want,
                    Shape::Vector(args.iter().map(|&a| self.word(a)).collect()),
                )
            }
            1 | 2 => {
                let len = Self::len_arg(inp);
                let a = self.arg(inp);
                // SAFETY: our scope, a valid output.
                let rc = unsafe {
                    if kind == 1 {
                        numagc_alloc_vector_filled(s, len, self.value(a), &mut out)
                    } else {
                        numagc_alloc_array(s, len, self.value(a), &mut out)
                    }
                };
                let want = if Self::is_bad(a) {
                    vec![NUMAGC_ERR_BAD_VALUE]
                } else if let Some(e) = Self::len_refusal(len, max_heap) {
                    vec![e]
                } else {
                    vec![NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT]
                };
                // Long objects are not modelled word by word.
                let shape = if len > 4096 {
                    Shape::Unknown
                } else if kind == 1 {
                    Shape::Vector(vec![self.word(a); len])
                } else {
                    Shape::Array(vec![self.word(a); len])
                };
                (rc, want, shape)
            }
            _ => {
                let n = inp.below(12);
                let words: Vec<u64> = (0..n).map(|_| inp.u64()).collect();
                // SAFETY: our scope, an array of `n` words (u64 and f64 have
                // the same size), a valid output.
                let rc = unsafe {
                    if kind == 3 {
                        numagc_alloc_raw(s, words.as_ptr(), n, &mut out)
                    } else {
                        numagc_alloc_f64s(s, words.as_ptr().cast(), n, &mut out)
                    }
                };
                (
                    rc,
                    vec![NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT],
                    Shape::Raw(words),
                )
            }
        };
        expect(rc, &want, "an allocation");
        if rc == 0 {
            hit("object");
            self.made(out, shape);
        } else {
            assert_eq!(out, 0, "a failed allocation left its output set");
        }
    }

    /// Reads fields back and checks them against what was stored.
    pub(super) fn read(&mut self, st: &mut State) {
        let s = self.s;
        let a = self.arg(&mut st.inp);
        let shape = if let Arg::Live(k) = a {
            self.hs[k].shape.clone()
        } else {
            Shape::Unknown
        };
        let v = self.value(a);
        // The layout of a mixed object's descriptor, if that is what it is.
        let layout: Option<(numagc_desc, Vec<bool>)> = match &shape {
            Shape::Mixed { desc, .. } => {
                Some((self.descs(st)[*desc].id, self.descs(st)[*desc].ptr.clone()))
            }
            _ => None,
        };
        let inp = &mut st.inp;
        let len = match &shape {
            Shape::Raw(w) => Some(w.len()),
            Shape::Vector(w) | Shape::Array(w) => Some(w.len()),
            Shape::Mixed { words, .. } => Some(words.len()),
            Shape::Unknown => None,
        };
        let i = match len {
            Some(n) if !inp.one_in(4) => inp.below(n.max(1)),
            _ => inp.below(8) + if inp.bool() { len.unwrap_or(0) } else { 0 },
        };
        let is_int = matches!(a, Arg::Int(_));
        let bad = Self::is_bad(a);
        match inp.u8() % 5 {
            0 => {
                let mut n = 7;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_length(s, v, &mut n) };
                expect(
                    rc,
                    &[if bad { NUMAGC_ERR_BAD_VALUE } else { NUMAGC_OK }],
                    "numagc_length",
                );
                if rc == 0 {
                    assert_eq!(
                        n,
                        if is_int { 0 } else { len.unwrap_or(n) },
                        "length of {shape:?}"
                    );
                }
                let (mut k, mut d) = (NUMAGC_KIND_INT, 5);
                // SAFETY: our scope, valid outputs.
                let rc = unsafe {
                    numagc_kind_of(s, v, &mut k, if inp.bool() { &mut d } else { null_mut() })
                };
                expect(
                    rc,
                    &[if bad { NUMAGC_ERR_BAD_VALUE } else { NUMAGC_OK }],
                    "numagc_kind_of",
                );
                if rc == 0 {
                    let want = match &shape {
                        Shape::Raw(_) => Some(NUMAGC_KIND_RAW),
                        Shape::Vector(_) => Some(NUMAGC_KIND_VECTOR),
                        Shape::Array(_) => Some(NUMAGC_KIND_ARRAY),
                        Shape::Mixed { .. } => Some(NUMAGC_KIND_MIXED),
                        Shape::Unknown if is_int => Some(NUMAGC_KIND_INT),
                        Shape::Unknown => None,
                    };
                    if let Some(w) = want {
                        assert_eq!(k, w, "kind of {shape:?}");
                    }
                    if let (Some((id, _)), true) = (&layout, d != 5) {
                        assert_eq!(d, *id);
                    }
                }
            }
            1 | 2 => {
                let mut out = 9;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_field(s, v, i, &mut out) };
                let expected = match &shape {
                    Shape::Vector(w) | Shape::Array(w) if i < w.len() => Some(Ok(w[i])),
                    Shape::Mixed { words, .. }
                        if i < words.len() && layout.as_ref().is_some_and(|l| l.1[i]) =>
                    {
                        Some(Ok(words[i]))
                    }
                    Shape::Unknown => None,
                    _ => Some(Err(())),
                };
                if bad {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_field (bad value)");
                } else if is_int {
                    expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_field of an immediate");
                } else {
                    match expected {
                        Some(Ok(w)) => {
                            expect(rc, &[NUMAGC_OK], "numagc_field");
                            hit("field read");
                            if let Word::Int(x) = w {
                                assert_eq!(out, numagc_int(x), "field {i} of {shape:?}");
                            }
                        }
                        Some(Err(())) => expect(
                            rc,
                            &[NUMAGC_ERR_MISUSE],
                            "numagc_field (out of range or raw)",
                        ),
                        None => expect(rc, &[NUMAGC_OK, NUMAGC_ERR_MISUSE], "numagc_field"),
                    }
                }
                if rc == 0 {
                    self.made(out, Shape::Unknown);
                } else {
                    assert_eq!(out, 0);
                }
            }
            3 => {
                let mut w = 0u64;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_raw(s, v, i, &mut w) };
                let expected = match &shape {
                    Shape::Raw(ws) if i < ws.len() => Some(Some(ws[i])),
                    Shape::Mixed { words, .. } if i < words.len() => match words[i] {
                        Word::Raw(x) => Some(Some(x)),
                        _ => Some(None),
                    },
                    Shape::Unknown => None,
                    _ => Some(None),
                };
                if bad {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_raw (bad value)");
                } else if is_int {
                    expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_raw of an immediate");
                } else {
                    match expected {
                        Some(Some(x)) => {
                            expect(rc, &[NUMAGC_OK], "numagc_raw");
                            hit("raw read");
                            assert_eq!(w, x, "raw {i} of {shape:?}");
                        }
                        Some(None) => expect(
                            rc,
                            &[NUMAGC_ERR_MISUSE],
                            "numagc_raw (out of range or a value)",
                        ),
                        None => expect(rc, &[NUMAGC_OK, NUMAGC_ERR_MISUSE], "numagc_raw"),
                    }
                }
            }
            _ => {
                let n = inp.below(6);
                let start = if inp.one_in(8) {
                    usize::MAX - inp.below(3)
                } else {
                    inp.below(8)
                };
                let mut buf = vec![0u64; n];
                // SAFETY: our scope, a buffer of `n` words (or NULL with n = 0).
                let rc = unsafe {
                    if inp.bool() {
                        numagc_read_raw(s, v, start, buf.as_mut_ptr(), n)
                    } else {
                        numagc_read_f64s(s, v, start, buf.as_mut_ptr().cast(), n)
                    }
                };
                if bad {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_read_raw (bad value)");
                } else {
                    match &shape {
                        Shape::Raw(ws) if start.checked_add(n).is_some_and(|e| e <= ws.len()) => {
                            expect(rc, &[NUMAGC_OK], "numagc_read_raw");
                            assert_eq!(&buf[..], &ws[start..start + n]);
                        }
                        Shape::Unknown if !is_int => {
                            expect(rc, &[NUMAGC_OK, NUMAGC_ERR_MISUSE], "numagc_read_raw")
                        }
                        _ => expect(
                            rc,
                            &[NUMAGC_ERR_MISUSE],
                            "numagc_read_raw (not raw, or out of range)",
                        ),
                    }
                }
            }
        }
    }

    pub(super) fn store(&mut self, st: &mut State) {
        let target = self.arg(&mut st.inp);
        let (shape, k) = match target {
            Arg::Live(k) => (self.hs[k].shape.clone(), Some(k)),
            _ => (Shape::Unknown, None),
        };
        let layout: Option<(bool, Vec<bool>)> = match &shape {
            Shape::Mixed { desc, .. } => Some((
                self.descs(st)[*desc].mutable,
                self.descs(st)[*desc].ptr.clone(),
            )),
            _ => None,
        };
        let inp = &mut st.inp;
        let len = match &shape {
            Shape::Array(w) | Shape::Vector(w) => w.len(),
            Shape::Mixed { words, .. } => words.len(),
            Shape::Raw(w) => w.len(),
            Shape::Unknown => 4,
        };
        let i = if inp.one_in(4) {
            len + inp.below(3)
        } else {
            inp.below(len.max(1))
        };
        let raw = inp.one_in(3);
        let val = self.arg(inp);
        let word = inp.u64();
        // SAFETY: our scope.
        let rc = unsafe {
            if raw {
                numagc_set_raw(self.s, self.value(target), i, word)
            } else {
                numagc_set(self.s, self.value(target), i, self.value(val))
            }
        };
        let ok = match &shape {
            Shape::Array(w) => !raw && i < w.len(),
            Shape::Mixed { words, .. } => {
                let (mutable, ptr) = layout.as_ref().expect("a mixed shape has its layout");
                *mutable && i < words.len() && ptr[i] != raw
            }
            Shape::Vector(_) | Shape::Raw(_) => false,
            Shape::Unknown => {
                if Self::is_bad(target) || (!raw && Self::is_bad(val)) {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_set (bad value)");
                } else {
                    expect(rc, &[NUMAGC_OK, NUMAGC_ERR_MISUSE], "numagc_set");
                }
                if rc == 0 {
                    // The target may be any mutable object this body knows
                    // (read from a field, a global root, a channel, a task):
                    // forget what they hold.
                    for h in self.hs.iter_mut() {
                        if let Shape::Array(_) | Shape::Mixed { .. } = h.shape {
                            h.shape = Shape::Unknown;
                        }
                    }
                }
                return;
            }
        };
        if !raw && Self::is_bad(val) {
            expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_set (bad value)");
            return;
        }
        if !ok {
            expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_set(_raw) refused");
            hit("store refused");
            return;
        }
        expect(rc, &[NUMAGC_OK], "numagc_set(_raw)");
        hit("store");
        let w = if raw { Word::Raw(word) } else { self.word(val) };
        let k = k.unwrap();
        match &mut self.hs[k].shape {
            Shape::Array(ws) | Shape::Mixed { words: ws, .. } => ws[i] = w,
            _ => unreachable!(),
        }
        // Copies of the same object (other handles) are not tracked: they
        // might now read the new value, so forget what they knew.
        let v = self.hs[k].v;
        for (j, h) in self.hs.iter_mut().enumerate() {
            if j != k && h.v != v {
                if let Shape::Array(_) | Shape::Mixed { .. } = h.shape {
                    h.shape = Shape::Unknown;
                }
            }
        }
    }

    pub(super) fn global(&mut self, st: &mut State) {
        let s = self.s;
        let my_rt = self.rt;
        match st.inp.u8() % 4 {
            0 | 1 => {
                let a = self.arg(&mut st.inp);
                let mut g = 9;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_global_new(s, self.value(a), &mut g) };
                if Self::is_bad(a) {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_global_new (bad value)");
                    assert_eq!(g, 0);
                } else {
                    expect(rc, &[NUMAGC_OK], "numagc_global_new");
                    hit("global");
                    assert_ne!(g, 0);
                    st.globals.push((g, my_rt, true));
                }
            }
            2 => {
                let (g, rt, live) = if st.globals.is_empty() || st.inp.one_in(8) {
                    (st.inp.u64(), usize::MAX, false)
                } else {
                    st.globals[st.inp.below(st.globals.len())]
                };
                let mut out = 9;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_global_get(s, g, &mut out) };
                if live && rt == my_rt {
                    expect(rc, &[NUMAGC_OK], "numagc_global_get");
                    hit("global read");
                    self.made(out, Shape::Unknown);
                } else if rt == usize::MAX {
                    expect(
                        rc,
                        &[NUMAGC_OK, NUMAGC_ERR_BAD_VALUE],
                        "numagc_global_get (forged)",
                    );
                    if rc == 0 {
                        self.made(out, Shape::Unknown);
                    }
                } else {
                    expect(
                        rc,
                        &[NUMAGC_ERR_BAD_VALUE],
                        "numagc_global_get (freed or of another runtime)",
                    );
                    assert_eq!(out, 0);
                }
            }
            _ => {
                if st.globals.is_empty() {
                    return;
                }
                let (g, rt, live) = st.globals[st.inp.below(st.globals.len())];
                let a = self.arg(&mut st.inp);
                // SAFETY: our scope.
                let rc = unsafe { numagc_global_set(s, g, self.value(a)) };
                if !(live && rt == my_rt) || Self::is_bad(a) {
                    expect(
                        rc,
                        &[NUMAGC_ERR_BAD_VALUE],
                        "numagc_global_set (bad root or value)",
                    );
                } else {
                    expect(rc, &[NUMAGC_OK], "numagc_global_set");
                }
            }
        }
    }
}
