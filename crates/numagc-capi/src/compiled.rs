//! The compiled-code interface in C (issue 18): the mutator record's C
//! layout and the slow paths that `include/numagc_inline.h`'s `static
//! inline` fast paths call (`numagc::compiled` is the Rust side, and its
//! module doc the contract).
//!
//! Nothing the C code wrote is trusted: every slow path first finds the C
//! body running on this thread (no scope argument is needed, and a thread
//! that runs none is refused), checks that the record it was given is that
//! body's vproc's (a pointer comparison, no read through it), then checks
//! the record's fields (`Mutator::check_record`: the bump pointer inside
//! the nursery, the root stack's top inside its reservation and above the
//! body's handles) before anything collects; a store's target is checked
//! to be a mutable object of this heap with the field in range.

use crate::activation::{with_active_state, with_state};
use crate::numagc_value;
use crate::scope::{numagc_scope, CallState};
use crate::status::numagc_status::*;
use crate::status::{guard, out, Fail, Res};
use numagc_rs::compiled::{
    Mutator, MutatorRecord, ALLOC_PREFETCH_DISTANCE, MAX_BLOCK_WORDS, MAX_SMALL_FIELDS,
};
use std::ffi::c_int;

/// The per-vproc mutator record of the compiled-code interface. Compiled
/// code bumps `alloc_ptr` up to `alloc_limit` (0 when a collection or a
/// request waits: then the allocation and the poll take their slow path),
/// pushes frames of root slots at `roots_top` (up to `roots_limit`),
/// and tests stored values against `[barrier_lo, barrier_lo +
/// barrier_len)` (`plan`: 0 split, 1 shared; `remember_all`: 1 when every
/// store takes the slow path). Obtained with `numagc_mutator_get`; the
/// inline functions of `numagc_inline.h` use it; only those should write
/// it. The layout is numagc's `MutatorRecord` (a test compares the
/// offsets).
#[repr(C)]
pub struct numagc_mutator {
    pub alloc_ptr: usize,
    pub alloc_limit: usize,
    pub roots_top: *mut u64,
    pub roots_limit: *mut u64,
    pub roots_base: *mut u64,
    pub barrier_lo: usize,
    pub barrier_len: usize,
    pub plan: u32,
    pub remember_all: u32,
}

// The C layout is the Rust record's.
const _: () = {
    let o = MutatorRecord::OFFSETS;
    assert!(std::mem::offset_of!(numagc_mutator, alloc_ptr) == o.alloc_ptr);
    assert!(std::mem::offset_of!(numagc_mutator, alloc_limit) == o.alloc_limit);
    assert!(std::mem::offset_of!(numagc_mutator, roots_top) == o.roots_top);
    assert!(std::mem::offset_of!(numagc_mutator, roots_limit) == o.roots_limit);
    assert!(std::mem::offset_of!(numagc_mutator, roots_base) == o.roots_base);
    assert!(std::mem::offset_of!(numagc_mutator, barrier_lo) == o.barrier_lo);
    assert!(std::mem::offset_of!(numagc_mutator, barrier_len) == o.barrier_len);
    assert!(std::mem::offset_of!(numagc_mutator, plan) == o.plan);
    assert!(std::mem::offset_of!(numagc_mutator, remember_all) == o.remember_all);
    assert!(std::mem::size_of::<numagc_mutator>() == o.size);
};

/// The largest object `numagc_inline_alloc` takes, in fields (larger ones:
/// `numagc_alloc_shared`).
pub const NUMAGC_MAX_SMALL_FIELDS: usize = 30;
const _: () = assert!(NUMAGC_MAX_SMALL_FIELDS == MAX_SMALL_FIELDS);
/// The most words `numagc_inline_alloc_block` reserves at once, headers
/// included.
pub const NUMAGC_MAX_BLOCK_WORDS: usize = 256;
const _: () = assert!(NUMAGC_MAX_BLOCK_WORDS == MAX_BLOCK_WORDS);
/// How far past the allocation pointer `numagc_inline_alloc` and
/// `numagc_inline_alloc_block` prefetch a line for writing, in bytes (the
/// Rust fast paths' distance).
pub const NUMAGC_ALLOC_PREFETCH_DISTANCE: usize = 512;
const _: () = assert!(NUMAGC_ALLOC_PREFETCH_DISTANCE == ALLOC_PREFETCH_DISTANCE);

/// Runs `f` with the body's compiled mutator after the checks of the
/// module doc.
fn with_mutator<R>(m: *mut numagc_mutator, f: impl FnOnce(&mut Mutator<'_>) -> Res<R>) -> Res<R> {
    if m.is_null() {
        return Err(Fail::null("mutator"));
    }
    with_active_state(|st: &mut CallState| {
        let needed = st.roots_needed();
        // SAFETY: only the slow paths below run on this mutator, and they
        // keep the interface's contract themselves (checked arguments).
        let mut mu = unsafe { st.sc().compiled() };
        if !std::ptr::eq(
            m as *const u8,
            mu.record() as *const MutatorRecord as *const u8,
        ) {
            return Err(Fail::new(
                NUMAGC_ERR_MISUSE,
                format!(
                    "mutator {m:p} is not the record of the vproc running this callback (numagc_mutator_get gives it)"
                ),
            ));
        }
        mu.check_record(needed)
            .map_err(|e| Fail::new(NUMAGC_ERR_MISUSE, format!("mutator record: {e}")))?;
        f(&mut mu)
    })
}

/// An entry point that answers one word through `out_ptr` (zeroed first,
/// so a failure leaves 0 there): `f` on the checked mutator.
fn word_out(
    m: *mut numagc_mutator,
    out_ptr: *mut u64,
    name: &'static str,
    f: impl FnOnce(&mut Mutator<'_>) -> Res<u64>,
) -> c_int {
    guard(|| {
        let o = out(out_ptr, name)?;
        *o = 0;
        *o = with_mutator(m, f)?;
        Ok(())
    })
}

/// The mutator record of the vproc running `scope`'s callback, for the
/// inline functions of `numagc_inline.h`. Valid until the callback
/// returns, on its thread only.
#[no_mangle]
pub unsafe extern "C" fn numagc_mutator_get(
    scope: *mut numagc_scope,
    out_mutator: *mut *mut numagc_mutator,
) -> c_int {
    guard(|| {
        let o = out(out_mutator, "out_mutator")?;
        *o = std::ptr::null_mut();
        with_state(scope, |st| {
            // SAFETY: only the record's address is taken.
            let mu = unsafe { st.sc().compiled() };
            *o = mu.record() as *const MutatorRecord as *mut numagc_mutator;
            Ok(())
        })
    })
}

/// The slow path of `numagc_inline_alloc`: the nursery is exhausted or a
/// collection waits. Collects as needed and allocates an object of
/// `fields` fields (at most `NUMAGC_MAX_SMALL_FIELDS`) with header word
/// `header`, its fields to be written before the next call that may
/// collect. `NUMAGC_ERR_HEAP_LIMIT` at the heap limit.
#[no_mangle]
pub unsafe extern "C" fn numagc_alloc_slow(
    m: *mut numagc_mutator,
    header: u64,
    fields: usize,
    out_obj: *mut u64,
) -> c_int {
    word_out(m, out_obj, "out_obj", |mu| {
        Ok(mu.alloc_out_of_line(header, fields)?)
    })
}

/// The slow path of `numagc_inline_alloc_block`: a fresh nursery block of
/// `words` words (2 ..= `NUMAGC_MAX_BLOCK_WORDS`) in `*out_obj`, its first
/// word `first_header`; the caller writes the other objects' headers
/// (`numagc_inline_place`) and every field before the next call that may
/// collect. `NUMAGC_ERR_HEAP_LIMIT` at the heap limit, `NUMAGC_ERR_MISUSE`
/// for a size out of range.
#[no_mangle]
pub unsafe extern "C" fn numagc_alloc_block_slow(
    m: *mut numagc_mutator,
    first_header: u64,
    words: usize,
    out_obj: *mut u64,
) -> c_int {
    word_out(m, out_obj, "out_obj", |mu| {
        Ok(mu.alloc_block_out_of_line(first_header, words)?)
    })
}

/// An object that must be shareable or is large (a mutable object or
/// array, or more than `NUMAGC_MAX_SMALL_FIELDS` fields), value fields
/// NIL and raw fields 0; its header word is checked (a registered
/// descriptor of that size, or a vector, array or raw object). Stores into
/// it go through `numagc_inline_store`. Never inline.
#[no_mangle]
pub unsafe extern "C" fn numagc_alloc_shared(
    m: *mut numagc_mutator,
    header: u64,
    out_obj: *mut u64,
) -> c_int {
    word_out(m, out_obj, "out_obj", |mu| Ok(mu.alloc_shared(header)?))
}

/// The slow path of `numagc_inline_poll`: joins the pending collection and
/// serves the requests waiting for this vproc.
#[no_mangle]
pub unsafe extern "C" fn numagc_poll_slow(m: *mut numagc_mutator) -> c_int {
    guard(|| {
        with_mutator(m, |mu| {
            mu.poll_out_of_line();
            Ok(())
        })
    })
}

/// The slow path of `numagc_inline_store`: the plan's whole write barrier, after
/// checking that `obj` is a mutable object of this heap and `i` a value
/// field within it.
#[no_mangle]
pub unsafe extern "C" fn numagc_store_slow(
    m: *mut numagc_mutator,
    obj: u64,
    i: usize,
    value: u64,
) -> c_int {
    guard(|| with_mutator(m, |mu| Ok(mu.store_checked(obj, i, value)?)))
}

/// What `numagc_inline_frame_push` calls when the root stack has no room for `n`
/// more slots: always `NUMAGC_ERR_INVALID_ARGUMENT`, with a message
/// naming the sizes (the push then returns NULL).
#[no_mangle]
pub unsafe extern "C" fn numagc_frame_overflow(m: *mut numagc_mutator, n: usize) -> c_int {
    guard(|| {
        with_mutator(m, |_| {
            Err(Fail::new(
                NUMAGC_ERR_INVALID_ARGUMENT,
                format!("root stack full: no room for a frame of {n} slots"),
            ))
        })
    })
}

/// The raw word of a value (an immediate, or the address of the object a
/// handle holds) for compiled code; valid until the next call that may
/// collect.
#[no_mangle]
pub unsafe extern "C" fn numagc_value_word(
    scope: *mut numagc_scope,
    value: numagc_value,
    out_word: *mut u64,
) -> c_int {
    guard(|| {
        let o = out(out_word, "out_word")?;
        *o = 0;
        with_state(scope, |st| {
            let h = st.handle(value)?;
            *o = st.sc().raw_word(h);
            Ok(())
        })
    })
}

/// A new handle (in the current frame) holding a raw word from compiled
/// code: an immediate, or a pointer to an object of this heap (checked:
/// 8-aligned, inside a chunk in use, with an object header there).
#[no_mangle]
pub unsafe extern "C" fn numagc_word_value(
    scope: *mut numagc_scope,
    word: u64,
    out_value: *mut numagc_value,
) -> c_int {
    guard(|| {
        let o = out(out_value, "out_value")?;
        *o = 0;
        with_state(scope, |st| {
            st.sc()
                .check_word(word)
                .map_err(|e| Fail::new(NUMAGC_ERR_BAD_VALUE, e))?;
            // SAFETY: checked above: an immediate or an object of this heap.
            let h = unsafe { st.sc().root_word(word) };
            *o = st.root(h)?;
            Ok(())
        })
    })
}
