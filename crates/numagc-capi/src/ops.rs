//! What a callback does with its scope: immediates, allocation, reads,
//! stores, promotion, global roots, collections.

use crate::activation::with_state;
use crate::registry::Registry;
use crate::scope::{int_word, numagc_scope, CallState};
use crate::status::numagc_status::*;
use crate::status::{
    array_not_null, count_arg, guard, out, slice_arg, slice_out, write_out, Fail, Res,
};
use crate::{numagc_desc, numagc_global, numagc_value};
use numagc_rs::object::header::MAX_LENGTH;
use numagc_rs::{GlobalRoot, ObjectKind, Scope};
use std::ffi::c_int;
use std::sync::Arc;

// ---- immediates -----------------------------------------------------------------

/// The immediate integer `i` as a value. Immediates need no scope, are not
/// rooted, and stay valid everywhere. Integers have 63 bits: the top bit of
/// `i` is lost.
#[no_mangle]
pub extern "C" fn numagc_int(i: i64) -> numagc_value {
    int_word(i)
}

/// Whether `v` is an immediate integer (and not a handle).
#[no_mangle]
pub extern "C" fn numagc_is_int(v: numagc_value) -> bool {
    v & 1 == 1
}

/// The integer of an immediate; `NUMAGC_ERR_BAD_VALUE` for a handle.
#[no_mangle]
pub unsafe extern "C" fn numagc_get_int(v: numagc_value, out_int: *mut i64) -> c_int {
    guard(|| {
        let o = out(out_int, "out")?;
        if v & 1 == 0 {
            return Err(Fail::new(
                NUMAGC_ERR_BAD_VALUE,
                format!("value {v:#x} is a handle, not an immediate integer"),
            ));
        }
        *o = (v as i64) >> 1;
        Ok(())
    })
}

/// The common shape of scope functions that produce a value: checks the
/// output, writes 0 to it, then runs `f` on the callback's state.
fn produce_into(
    scope: *mut numagc_scope,
    out_value: *mut numagc_value,
    f: impl FnOnce(&mut CallState) -> Res<numagc_value>,
) -> c_int {
    guard(|| {
        let o = out(out_value, "out")?;
        *o = 0;
        *o = with_state(scope, f)?;
        Ok(())
    })
}

// ---- allocation --------------------------------------------------------------

/// Checks the length `n` (in words) of a new object, read from C as
/// argument `what`, before anything is sized by it or an array of that many
/// is formed: over the object length limit (2^48 - 1 words, the header's
/// length field) is `NUMAGC_ERR_INVALID_ARGUMENT`; an object larger than
/// the heap limit (`max-heap`) could never be allocated and is
/// `NUMAGC_ERR_HEAP_LIMIT`. Both messages name the count and the limit.
fn check_object_len(st: &CallState, n: usize, what: &str) -> Res {
    count_arg(
        n,
        usize::try_from(MAX_LENGTH).unwrap_or(usize::MAX),
        what,
        "the object length limit of 2^48 - 1 words",
    )?;
    // The object's bytes with its header; no overflow below 2^48 words.
    let bytes = (n as u128 + 1) * 8;
    let max_heap = st.rt.max_heap;
    if bytes > max_heap as u128 {
        return Err(Fail::new(
            NUMAGC_ERR_HEAP_LIMIT,
            format!(
                "argument `{what}` = {n}: an object of {n} words needs {bytes} bytes, more than the heap limit (max-heap = {max_heap} bytes)"
            ),
        ));
    }
    Ok(())
}

/// Allocates a mixed object of descriptor `desc`: `values` (`n_values` of
/// them) fill its value fields and `raw` (`n_raw`) its raw fields, each in
/// ascending field order. `*out` is a handle in the innermost frame.
/// May collect; every handle stays valid. `NUMAGC_ERR_UNKNOWN_DESCRIPTOR`,
/// `NUMAGC_ERR_MISUSE` for field counts other than the descriptor's
/// (checked before `values` and `raw` are read), `NUMAGC_ERR_HEAP_LIMIT`.
#[no_mangle]
pub unsafe extern "C" fn numagc_alloc_mixed(
    scope: *mut numagc_scope,
    desc: numagc_desc,
    values: *const numagc_value,
    n_values: usize,
    raw: *const u64,
    n_raw: usize,
    out_value: *mut numagc_value,
) -> c_int {
    produce_into(scope, out_value, |st| {
        array_not_null(values, n_values, "values")?;
        array_not_null(raw, n_raw, "raw")?;
        let d = st.desc(desc)?;
        // Before `values` and `raw` are read, or a buffer is sized by them.
        if n_values != d.values || n_raw != d.raw {
            return Err(Fail::new(
                NUMAGC_ERR_MISUSE,
                format!(
                    "descriptor `{}` (id {desc}) has {} value and {} raw fields; got n_values = {n_values} and n_raw = {n_raw}",
                    d.name, d.values, d.raw
                ),
            ));
        }
        let raw = slice_arg(raw, n_raw, "raw")?;
        let hs = st.handles_arg(values, n_values, "values")?;
        st.produce(|s, slot| s.alloc_mixed_to(slot, d.id, hs.as_slice(), raw))
    })
}

/// Allocates an immutable vector of the `n` values of `values`. `n` is
/// checked before `values` is read: over the object length limit (2^48 - 1)
/// is `NUMAGC_ERR_INVALID_ARGUMENT`, a vector larger than the heap limit
/// `NUMAGC_ERR_HEAP_LIMIT` (as for the other allocations of `n` words).
#[no_mangle]
pub unsafe extern "C" fn numagc_alloc_vector(
    scope: *mut numagc_scope,
    values: *const numagc_value,
    n: usize,
    out_value: *mut numagc_value,
) -> c_int {
    produce_into(scope, out_value, |st| {
        check_object_len(st, n, "n")?;
        let hs = st.handles_arg(values, n, "values")?;
        st.produce(|s, slot| {
            let h = s.alloc_vector(hs.as_slice())?;
            s.assign(slot, h);
            Ok(())
        })
    })
}

/// Allocates an immutable vector of `len` copies of `value`. `len` over
/// the object length limit (2^48 - 1) is `NUMAGC_ERR_INVALID_ARGUMENT`, a
/// vector larger than the heap limit `NUMAGC_ERR_HEAP_LIMIT`.
#[no_mangle]
pub unsafe extern "C" fn numagc_alloc_vector_filled(
    scope: *mut numagc_scope,
    len: usize,
    value: numagc_value,
    out_value: *mut numagc_value,
) -> c_int {
    produce_into(scope, out_value, |st| {
        let h = st.handle(value)?;
        check_object_len(st, len, "len")?;
        st.produce(|s, slot| {
            let v = s.alloc_vector_filled(len, h)?;
            s.assign(slot, v);
            Ok(())
        })
    })
}

/// Allocates a raw-data object holding the `n` words of `words` (`n` is
/// checked as for `numagc_alloc_vector`, before `words` is read).
#[no_mangle]
pub unsafe extern "C" fn numagc_alloc_raw(
    scope: *mut numagc_scope,
    words: *const u64,
    n: usize,
    out_value: *mut numagc_value,
) -> c_int {
    produce_into(scope, out_value, |st| {
        check_object_len(st, n, "n")?;
        let words = slice_arg(words, n, "words")?;
        st.produce(|s, slot| {
            let h = s.alloc_raw(words)?;
            s.assign(slot, h);
            Ok(())
        })
    })
}

/// Allocates a raw-data object holding the `n` doubles of `xs` (an f64
/// array; read back with `numagc_f64` / `numagc_read_f64s`). `n` is
/// checked as for `numagc_alloc_vector`, before `xs` is read.
#[no_mangle]
pub unsafe extern "C" fn numagc_alloc_f64s(
    scope: *mut numagc_scope,
    xs: *const f64,
    n: usize,
    out_value: *mut numagc_value,
) -> c_int {
    produce_into(scope, out_value, |st| {
        check_object_len(st, n, "n")?;
        let xs = slice_arg(xs, n, "xs")?;
        st.produce(|s, slot| {
            let h = s.alloc_f64s(xs)?;
            s.assign(slot, h);
            Ok(())
        })
    })
}

/// Allocates a mutable array of `len` copies of `init`, in the global heap
/// (`init` is promoted). Store into it with `numagc_set`. `len` is checked
/// as for `numagc_alloc_vector_filled`.
#[no_mangle]
pub unsafe extern "C" fn numagc_alloc_array(
    scope: *mut numagc_scope,
    len: usize,
    init: numagc_value,
    out_value: *mut numagc_value,
) -> c_int {
    produce_into(scope, out_value, |st| {
        let h = st.handle(init)?;
        check_object_len(st, len, "len")?;
        st.produce(|s, slot| {
            let a = s.alloc_array(len, h)?;
            s.assign(slot, a);
            Ok(())
        })
    })
}

// ---- reading -------------------------------------------------------------------

/// What a value is.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum numagc_kind {
    /// An immediate integer.
    NUMAGC_KIND_INT = 0,
    /// A raw-data object (`numagc_alloc_raw`, `numagc_alloc_f64s`).
    NUMAGC_KIND_RAW = 1,
    /// An immutable vector.
    NUMAGC_KIND_VECTOR = 2,
    /// A mutable array.
    NUMAGC_KIND_ARRAY = 3,
    /// A mixed object of a registered descriptor.
    NUMAGC_KIND_MIXED = 4,
}

/// The kind of `v`, and for a mixed object its descriptor (`out_desc` may
/// be NULL; it is set to 0 for other kinds).
#[no_mangle]
pub unsafe extern "C" fn numagc_kind_of(
    scope: *mut numagc_scope,
    v: numagc_value,
    out_kind: *mut numagc_kind,
    out_desc: *mut numagc_desc,
) -> c_int {
    guard(|| {
        if out_kind.is_null() {
            return Err(Fail::null("out_kind"));
        }
        let d = if out_desc.is_null() {
            None
        } else {
            Some(out(out_desc, "out_desc")?)
        };
        let (kind, desc) = with_state(scope, |st| {
            let h = st.handle(v)?;
            #[allow(unreachable_patterns)] // kept for kinds added later
            Ok(match st.sc().view(h).kind() {
                None => (numagc_kind::NUMAGC_KIND_INT, 0),
                Some(ObjectKind::Raw) => (numagc_kind::NUMAGC_KIND_RAW, 0),
                Some(ObjectKind::Vector) => (numagc_kind::NUMAGC_KIND_VECTOR, 0),
                Some(ObjectKind::Array) => (numagc_kind::NUMAGC_KIND_ARRAY, 0),
                Some(ObjectKind::Mixed(d)) => {
                    (numagc_kind::NUMAGC_KIND_MIXED, d.id() as numagc_desc)
                }
                Some(k) => {
                    return Err(Fail::new(
                        NUMAGC_ERR_INTERNAL,
                        format!("object kind {k:?} has no C name"),
                    ))
                }
            })
        })?;
        write_out(out_kind, kind, "out_kind")?;
        if let Some(d) = d {
            *d = desc;
        }
        Ok(())
    })
}

/// The number of fields (words) of an object; 0 for an immediate.
#[no_mangle]
pub unsafe extern "C" fn numagc_length(
    scope: *mut numagc_scope,
    v: numagc_value,
    out_len: *mut usize,
) -> c_int {
    guard(|| {
        let o = out(out_len, "out")?;
        *o = with_state(scope, |st| {
            let h = st.handle(v)?;
            Ok(st.sc().view(h).len())
        })?;
        Ok(())
    })
}

/// Value field `i` of a vector, array or mixed object: an immediate, or a
/// new handle in the innermost frame. `NUMAGC_ERR_MISUSE` for an index out
/// of range or a raw field.
#[no_mangle]
pub unsafe extern "C" fn numagc_field(
    scope: *mut numagc_scope,
    v: numagc_value,
    i: usize,
    out_value: *mut numagc_value,
) -> c_int {
    produce_into(scope, out_value, |st| {
        let h = st.handle(v)?;
        st.produce(|s, slot| {
            let f = s.field(h, i)?;
            s.assign(slot, f);
            Ok(())
        })
    })
}

/// Raw field `i` of a mixed object, or word `i` of a raw object.
#[no_mangle]
pub unsafe extern "C" fn numagc_raw(
    scope: *mut numagc_scope,
    v: numagc_value,
    i: usize,
    out_word: *mut u64,
) -> c_int {
    guard(|| {
        let o = out(out_word, "out")?;
        *o = with_state(scope, |st| {
            let h = st.handle(v)?;
            Ok(st.sc().view(h).try_raw(i)?)
        })?;
        Ok(())
    })
}

/// `numagc_raw` read as a double.
#[no_mangle]
pub unsafe extern "C" fn numagc_f64(
    scope: *mut numagc_scope,
    v: numagc_value,
    i: usize,
    out_f64: *mut f64,
) -> c_int {
    guard(|| {
        let o = out(out_f64, "out")?;
        *o = with_state(scope, |st| {
            let h = st.handle(v)?;
            Ok(f64::from_bits(st.sc().view(h).try_raw(i)?))
        })?;
        Ok(())
    })
}

/// Copies words `start .. start + n` of a raw object into `buf`, an array
/// of `n` elements formed only once the range is checked against the
/// object (so a huge `n` is `NUMAGC_ERR_MISUSE`, never a slice past memory).
fn read_raw_words<T>(
    scope: *mut numagc_scope,
    v: numagc_value,
    start: usize,
    buf: *mut T,
    n: usize,
    put: impl Fn(u64) -> T,
) -> Res {
    array_not_null(buf, n, "buf")?;
    with_state(scope, |st| {
        let h = st.handle(v)?;
        let view = st.sc().view(h);
        let words = view.raw_words().ok_or_else(|| {
            Fail::new(
                NUMAGC_ERR_MISUSE,
                format!("value {v:#x} is not a raw object ({view:?})"),
            )
        })?;
        let end = start
            .checked_add(n)
            .filter(|&e| e <= words.len())
            .ok_or_else(|| {
                Fail::new(
                    NUMAGC_ERR_MISUSE,
                    format!(
                        "words {start}..{start}+{n} are out of range for a raw object of {}",
                        words.len()
                    ),
                )
            })?;
        let buf = slice_out(buf, n, "buf")?;
        for (b, &w) in buf.iter_mut().zip(&words[start..end]) {
            *b = put(w);
        }
        Ok(())
    })
}

/// Copies words `start .. start + n` of a raw object into `buf`.
#[no_mangle]
pub unsafe extern "C" fn numagc_read_raw(
    scope: *mut numagc_scope,
    v: numagc_value,
    start: usize,
    buf: *mut u64,
    n: usize,
) -> c_int {
    guard(|| read_raw_words(scope, v, start, buf, n, |w| w))
}

/// Copies doubles `start .. start + n` of a raw object into `buf`.
#[no_mangle]
pub unsafe extern "C" fn numagc_read_f64s(
    scope: *mut numagc_scope,
    v: numagc_value,
    start: usize,
    buf: *mut f64,
    n: usize,
) -> c_int {
    guard(|| read_raw_words(scope, v, start, buf, n, f64::from_bits))
}

// ---- mutation and sharing ------------------------------------------------------

/// Stores `value` into value field `i` of a mutable object (an array, or a
/// mixed object of a mutable descriptor). A local value is promoted first
/// (the write barrier). `NUMAGC_ERR_MISUSE` for an immutable object, an
/// index out of range or a raw field.
#[no_mangle]
pub unsafe extern "C" fn numagc_set(
    scope: *mut numagc_scope,
    obj: numagc_value,
    i: usize,
    value: numagc_value,
) -> c_int {
    guard(|| {
        with_state(scope, |st| {
            let (o, v) = (st.handle(obj)?, st.handle(value)?);
            Ok(st.sc().set(o, i, v)?)
        })
    })
}

/// Stores a raw word into raw field `i` of a mutable mixed object.
#[no_mangle]
pub unsafe extern "C" fn numagc_set_raw(
    scope: *mut numagc_scope,
    obj: numagc_value,
    i: usize,
    word: u64,
) -> c_int {
    guard(|| {
        with_state(scope, |st| {
            let o = st.handle(obj)?;
            Ok(st.sc().set_raw(o, i, word)?)
        })
    })
}

/// Promotes `v` and everything it reaches to the global heap, so that other
/// vprocs may see it; `*out` is a handle to the global copy.
#[no_mangle]
pub unsafe extern "C" fn numagc_promote(
    scope: *mut numagc_scope,
    v: numagc_value,
    out_value: *mut numagc_value,
) -> c_int {
    produce_into(scope, out_value, |st| {
        let h = st.handle(v)?;
        st.produce(|s, slot| {
            let p = s.promote(h)?;
            s.assign(slot, p);
            Ok(())
        })
    })
}

/// Whether `v` lives in this vproc's local heap (false for immediates and
/// for global objects).
#[no_mangle]
pub unsafe extern "C" fn numagc_is_local(
    scope: *mut numagc_scope,
    v: numagc_value,
    out_local: *mut bool,
) -> c_int {
    guard(|| {
        if out_local.is_null() {
            return Err(Fail::null("out"));
        }
        let local = with_state(scope, |st| {
            let h = st.handle(v)?;
            Ok(st.sc().is_local(h))
        })?;
        write_out(out_local, local, "out")
    })
}

// ---- global roots --------------------------------------------------------------

/// Global roots by id (`numagc_global`).
pub(crate) static GLOBALS: Registry<Arc<GlobalRoot>> = Registry::new();

/// The global root `g`, which must belong to this callback's runtime. The
/// registry's lock is not held afterwards: reading or setting a root may
/// collect, and another vproc may be waiting for the lock meanwhile.
fn global_root(st: &CallState, g: numagc_global) -> Res<Arc<GlobalRoot>> {
    let (runtime, root) = GLOBALS.get(g).ok_or_else(|| {
        Fail::new(
            NUMAGC_ERR_BAD_VALUE,
            format!("global root {g} does not exist (never made, or freed)"),
        )
    })?;
    if runtime != st.rt.id {
        return Err(Fail::new(
            NUMAGC_ERR_BAD_VALUE,
            format!("global root {g} belongs to another runtime"),
        ));
    }
    Ok(root)
}

/// Registers a global root holding `v` (promoted): it keeps the value alive
/// across callbacks and vprocs until `numagc_global_free` or the runtime's
/// end. `*out` is its id.
#[no_mangle]
pub unsafe extern "C" fn numagc_global_new(
    scope: *mut numagc_scope,
    v: numagc_value,
    out_global: *mut numagc_global,
) -> c_int {
    guard(|| {
        let o = out(out_global, "out")?;
        *o = 0;
        let (runtime, root) = with_state(scope, |st| {
            let h = st.handle(v)?;
            let root = st.sc().global_root(h)?;
            Ok((st.rt.id, root))
        })?;
        *o = GLOBALS.insert(runtime, Arc::new(root));
        Ok(())
    })
}

/// The value of a global root, as a new handle in the innermost frame (or
/// an immediate).
#[no_mangle]
pub unsafe extern "C" fn numagc_global_get(
    scope: *mut numagc_scope,
    g: numagc_global,
    out_value: *mut numagc_value,
) -> c_int {
    produce_into(scope, out_value, |st| {
        let root = global_root(st, g)?;
        st.produce(|s, slot| {
            let h = s.get_global(&root)?;
            s.assign(slot, h);
            Ok(())
        })
    })
}

/// Replaces a global root's value (promoted).
#[no_mangle]
pub unsafe extern "C" fn numagc_global_set(
    scope: *mut numagc_scope,
    g: numagc_global,
    v: numagc_value,
) -> c_int {
    guard(|| {
        with_state(scope, |st| {
            let root = global_root(st, g)?;
            let h = st.handle(v)?;
            st.sc().set_global(&root, h)?;
            Ok(())
        })
    })
}

/// Frees a global root; callable from any thread. 0 is ignored;
/// `NUMAGC_ERR_BAD_VALUE` for an id that is not live (freed twice, or its
/// runtime was freed).
#[no_mangle]
pub extern "C" fn numagc_global_free(g: numagc_global) -> c_int {
    guard(|| {
        if g == 0 {
            return Ok(());
        }
        match GLOBALS.remove(g) {
            Some(root) => {
                drop(root);
                Ok(())
            }
            None => Err(Fail::new(
                NUMAGC_ERR_BAD_VALUE,
                format!("global root {g} does not exist (freed twice, or its runtime was freed)"),
            )),
        }
    })
}

// ---- collections ---------------------------------------------------------------

fn on_scope(
    scope: *mut numagc_scope,
    f: impl FnOnce(&mut Scope<'static>) -> numagc_rs::Result<()>,
) -> c_int {
    guard(|| with_state(scope, |st| Ok(f(st.sc())?)))
}

/// Forces a minor collection of this vproc's local heap (which may run a
/// major one). Every handle stays valid.
#[no_mangle]
pub unsafe extern "C" fn numagc_collect_minor(scope: *mut numagc_scope) -> c_int {
    on_scope(scope, |s| {
        s.collect_minor();
        Ok(())
    })
}

/// Forces a minor and a major collection of this vproc's local heap.
/// `NUMAGC_ERR_OS` when the system refused the major collection's copy
/// reserve (the minor collection ran; the heap is intact).
#[no_mangle]
pub unsafe extern "C" fn numagc_collect_major(scope: *mut numagc_scope) -> c_int {
    on_scope(scope, |s| s.collect_major())
}

/// Forces a global collection; every vproc takes part.
/// `NUMAGC_ERR_SAFEPOINT_TIMEOUT` or `NUMAGC_ERR_OS` when it was called off
/// before anything moved (a vproc did not reach a safepoint in time, or the
/// system refused its to-space); the heap is intact.
#[no_mangle]
pub unsafe extern "C" fn numagc_collect_global(scope: *mut numagc_scope) -> c_int {
    on_scope(scope, |s| s.collect_global())
}

/// A full collection that leaves the heap compact and gives the memory it
/// freed back to the system (OCaml's `Gc.compact`); every vproc takes part.
/// Errors as `numagc_collect_global`.
#[no_mangle]
pub unsafe extern "C" fn numagc_compact(scope: *mut numagc_scope) -> c_int {
    on_scope(scope, |s| s.compact())
}

/// A safepoint for long loops that do not allocate: joins a pending global
/// collection.
#[no_mangle]
pub unsafe extern "C" fn numagc_poll(scope: *mut numagc_scope) -> c_int {
    on_scope(scope, |s| {
        s.poll();
        Ok(())
    })
}
