//! parfib on the compiled-code interface: the program of
//! `benchmarks/parfib.rs` (every call returns its result boxed in a heap
//! cell; above the threshold the two calls are forked with the closure's
//! environment, a boxed `n`, as argument), emitted against the inline
//! allocator.
//!
//! The sequential part is register code (`numagc::compiled::Hp`, `Sp`):
//! the allocation pointer and the shadow stack's top are arguments and
//! the allocation pointer a result, as GHC's `Hp` and `Sp` and OCaml's
//! `r15` are registers, and the first call's result lies in a frame slot
//! across the second call. It is written twice ([`super::Returns`]):
//! [`seq`] returns through the shadow stack, its frames naming their
//! continuation, as GHC's code does; [`seq_calls`] makes every call of the
//! program a machine call, as OCaml's and a C compiler's code does. Both
//! make the same allocations and frames.

use super::{boxed, unbox, Returns};
use crate::benchmarks::parfib::outcome;
use crate::{rt_err, Outcome, Params};
use numagc::compiled::{header, Ctx, Hp, Mutator, Sp};
use numagc::object::int_value;
use numagc::{DescId, Descriptor, Result, Runtime};

/// The header word of the boxes: a constant, the runtime's first
/// descriptor (`super::register_nth` checks it).
const CELL: u64 = header(DescId::nth_registered(0), 1);

/// `pfib n` above the sequential part: at or below the threshold the
/// call is [`seq`]'s, register code (`Mutator::with_regs`); above it the two calls are forked (the
/// structure of the OCaml 5 peer, whose `seq` takes no threshold either).
#[inline(never)]
fn pfib(m: &mut Mutator<'_>, returns: Returns, n: i64, threshold: i64) -> Result<u64> {
    if n <= threshold {
        return m.with_regs(|m, hp, sp| match returns {
            Returns::Stack => seq(m, hp, sp, n),
            Returns::Calls => seq_calls(m, hp, sp, int_value(n)),
        });
    }
    pfib_fork(m, returns, n, threshold)
}

/// A box holding the immediate `x` at `hp`: the inline fast path, past
/// the limit a tail call of [`boxed_at_slow`] (so that `x` needs no
/// register saved across a call).
#[inline(always)]
fn boxed_at(m: Ctx<'_>, hp: Hp, sp: Sp, x: u64) -> (u64, Hp) {
    match m.try_alloc_at(hp, CELL, 1) {
        Some((b, hp)) => {
            // SAFETY: `b` is fresh, with one field.
            unsafe { m.init(b, 0, x) };
            (b, hp)
        }
        None => boxed_at_slow(m, hp, sp, x),
    }
}

/// [`boxed_at`] through the allocation's slow path (which raises the
/// heap's errors).
#[cold]
#[inline(never)]
fn boxed_at_slow(m: Ctx<'_>, hp: Hp, sp: Sp, x: u64) -> (u64, Hp) {
    let (b, hp) = m.alloc_at_slow(hp, sp, CELL, 1);
    // SAFETY: `b` is fresh, with one field.
    unsafe { m.init(b, 0, x) };
    (b, hp)
}

/// The continuation of a frame of [`seq`] whose first call runs: `[n,
/// AFTER_FIRST]`, the second call `seq (n - 2)` to come. Continuations
/// are immediates, which the collector skips.
const AFTER_FIRST: u64 = int_value(0);
/// The continuation of a frame whose second call runs: `[x,
/// AFTER_SECOND]`, `x` the first call's box, whose value is to be added to
/// the second's and the sum boxed.
const AFTER_SECOND: u64 = int_value(1);

/// `seq n`, returning through the shadow stack. Where the program calls
/// `seq (n - 1)` it pushes a frame `[n, AFTER_FIRST]` and goes on with
/// `n - 1`; a leaf boxes its `n` into `r` and pops frames, running their
/// continuations: an `AFTER_FIRST` frame becomes `[r, AFTER_SECOND]` and
/// the second call `seq (n - 2)` starts; an `AFTER_SECOND` frame boxes
/// the sum of its box and `r` into `r`, which returns on. The call is
/// done when no frame above `sp0` is left.
///
/// `n` is kept tagged (`2n + 1`), as OCaml's code keeps its integers:
/// `n - 1` is the word less 2, `n >= 2` a signed compare with the tagged
/// 2, and the word goes into frames and boxes as it is, with no shift.
#[inline(never)]
fn seq(m: Ctx<'_>, hp: Hp, sp0: Sp, n: i64) -> (u64, Hp) {
    let (mut hp, mut sp, mut w) = (hp, sp0, int_value(n));
    loop {
        while w as i64 >= TWO as i64 {
            sp = m.push_at(sp, [w, AFTER_FIRST]);
            w -= 2;
        }
        let (mut r, next_hp) = boxed_at(m, hp, sp, w);
        hp = next_hp;
        loop {
            if sp == sp0 {
                return (r, hp);
            }
            // SAFETY: every frame above `sp0` was pushed by this loop with
            // two slots, and the frames above the last were popped.
            let f = unsafe { sp.pop(2) };
            // SAFETY: `f`'s frame is live (popped, and not passed since to
            // a call that may collect).
            if unsafe { f.get(1) } == AFTER_FIRST {
                // The second call, the first's box kept in the frame.
                // SAFETY: as above.
                w = unsafe { f.get(0) } - 4;
                // SAFETY: as above; the frame stays pushed for the call.
                unsafe {
                    f.set(0, r);
                    f.set(1, AFTER_SECOND);
                }
                break;
            }
            // The sum of two immediates `2a + 1` and `2b + 1` is their
            // words' sum less one, as a compiler adds tagged integers.
            // SAFETY: the first box is reloaded from its slot, `r` was
            // just allocated; both are read before the frame is popped.
            let sum = unsafe { m.field(f.get(0), 0).wrapping_add(m.field(r, 0)) - 1 };
            sp = f;
            (r, hp) = boxed_at(m, hp, sp, sum);
        }
    }
}

/// The tagged 2: a tagged `n` is at least this exactly when `n >= 2`
/// (compared signed).
const TWO: u64 = int_value(2);

/// `seq n` with the machine's calls ([`super::Returns::Calls`]): every
/// call of the program is one machine call of [`pfib`] or [`seq_calls`].
/// A leaf returns its boxed `n` at once; an inner call goes on
/// in [`seq_inner`] (a jump, not a call). The split is the
/// shrink-wrapping a native code generator does: a leaf saves none of the
/// registers an inner call needs. (LLVM does not do it on its own here: it
/// merges the leaf's boxing with the inner call's, and the merged tail
/// needs them.) `n` is passed tagged, as in [`seq`].
#[inline(never)]
fn seq_calls(m: Ctx<'_>, hp: Hp, sp: Sp, n: u64) -> (u64, Hp) {
    if (n as i64) < TWO as i64 {
        return boxed_at(m, hp, sp, n);
    }
    seq_inner(m, hp, sp, n)
}

/// An inner sequential call, with the first result in a frame slot
/// across the second call.
#[inline(never)]
fn seq_inner(m: Ctx<'_>, hp: Hp, sp: Sp, n: u64) -> (u64, Hp) {
    let (x, hp) = seq_calls(m, hp, sp, n - 2);
    let top = m.push_at(sp, [x]);
    let (y, hp) = seq_calls(m, hp, top, n - 4);
    // The sum of two immediates `2a + 1` and `2b + 1` is their words'
    // sum less one, as a compiler adds tagged integers.
    // SAFETY: `x` is reloaded from its slot, `y` was just returned.
    let r = unsafe { m.field(sp.get(0), 0).wrapping_add(m.field(y, 0)) - 1 };
    boxed_at(m, hp, sp, r)
}

/// A call above the threshold: the two calls forked with the closure's
/// environment, a boxed `n`.
#[inline(never)]
fn pfib_fork(m: &mut Mutator<'_>, returns: Returns, n: i64, threshold: i64) -> Result<u64> {
    let env = boxed(m, CELL, n)?;
    let (x, y) = m.par2(
        &[env],
        // SAFETY (both sides): `env[0]` is the live boxed `n`.
        move |m, env| pfib(m, returns, unsafe { unbox(m, env[0]) } - 1, threshold),
        move |m, env| pfib(m, returns, unsafe { unbox(m, env[0]) } - 2, threshold),
    )?;
    // SAFETY: both results were just returned by `par2`.
    boxed(m, CELL, unsafe { unbox(m, x) + unbox(m, y) })
}

pub fn run(rt: &Runtime, p: &Params, returns: Returns) -> std::result::Result<Outcome, String> {
    let (n, threshold) = (p.get("n"), p.get("threshold"));
    super::register_nth(
        rt,
        0,
        Descriptor::mixed("int-box", 1, &[0]).map_err(rt_err)?,
    )?;
    let got = rt
        .run_on(0, move |s| -> Result<i64> {
            // SAFETY: this module keeps the interface's contract.
            let mut m = unsafe { s.compiled() };
            let b = pfib(&mut m, returns, n, threshold)?;
            // SAFETY: `b` was just returned.
            Ok(unsafe { unbox(&m, b) })
        })
        .map_err(rt_err)?
        .map_err(rt_err)?;
    Ok(outcome(n, threshold, got))
}
