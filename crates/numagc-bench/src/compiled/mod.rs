//! The benchmarks written as a compiler would emit them, on numagc's
//! compiled-code interface (`numagc::compiled`, issue 18): allocation by
//! an inline bump against the limit, values live across a call that may
//! collect kept in frame slots of the shadow stack, fields read by one
//! load. Each does the same work as its safe version
//! (`crate::benchmarks`), prints the same output and is checked by the
//! same independent computation; `numagc bench --api safe,compiled` runs
//! both side by side.
//!
//! Each function here keeps the interface's contract (the module doc of
//! `numagc::compiled`): the comments at the `unsafe` blocks say which value
//! is fresh or reloaded from a slot.

/// How the recursive part of a compiled program returns from its calls
/// (the module doc of `numagc::compiled::registers`, "Returns through
/// the shadow stack"). coins and parfib are written both ways.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Returns {
    /// A loop over frames of the shadow stack that name their
    /// continuation, as GHC's code returns (`--api compiled`).
    Stack,
    /// The machine's calls and returns, as OCaml's and C compilers' code
    /// does (`--api compiled-calls`).
    Calls,
}

pub mod binarytrees;
pub mod coins;
pub mod gcbench;
pub mod parfib;

use numagc::compiled::Mutator;
use numagc::{DescId, Descriptor, Result, Runtime};

/// Registers `d` as the runtime's `n`-th descriptor (from 0), whose
/// header words the program has as constants
/// (`DescId::nth_registered`); see [`check_nth`].
pub(crate) fn register_nth(
    rt: &Runtime,
    n: u16,
    d: Descriptor,
) -> std::result::Result<DescId, String> {
    let id = rt.register(d).map_err(crate::rt_err)?;
    check_nth(id, n)?;
    Ok(id)
}

/// An error when the runtime gave `id` to what the program was compiled
/// to find as its `n`-th descriptor, i.e. when something else was
/// registered first.
pub(crate) fn check_nth(id: DescId, n: u16) -> std::result::Result<(), String> {
    if id != DescId::nth_registered(n) {
        return Err(format!(
            "descriptor registered as {id:?}, the program was compiled for {:?}",
            DescId::nth_registered(n)
        ));
    }
    Ok(())
}

/// A boxed integer's value (field 0 of a one-field object).
///
/// # Safety
/// `b` is a live object whose field 0 is an immediate.
#[inline(always)]
pub(crate) unsafe fn unbox(m: &Mutator<'_>, b: u64) -> i64 {
    // SAFETY: the caller's contract.
    numagc::object::value_int(unsafe { m.field(b, 0) })
}

/// A new one-field object holding the immediate `x`: the inline fast
/// path, and past the limit a tail call of [`boxed_slow`].
#[inline(always)]
pub(crate) fn boxed(m: &mut Mutator<'_>, header: u64, x: i64) -> Result<u64> {
    match m.try_alloc(header, 1) {
        Some(b) => {
            // SAFETY: `b` is fresh from `try_alloc`, with one field.
            unsafe { m.init(b, 0, numagc::object::int_value(x)) };
            Ok(b)
        }
        None => boxed_slow(m, header, x),
    }
}

/// [`boxed`] through the allocation's slow path.
#[cold]
#[inline(never)]
fn boxed_slow(m: &mut Mutator<'_>, header: u64, x: i64) -> Result<u64> {
    let b = m.alloc_out_of_line(header, 1)?;
    // SAFETY: `b` is fresh from the slow path, with one field.
    unsafe { m.init(b, 0, numagc::object::int_value(x)) };
    Ok(b)
}
