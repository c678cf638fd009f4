//! coins on the compiled-code interface: the program of
//! `benchmarks/coins.rs` (version 7 of nofib's `coins`: a heap list of
//! `(value, quantity)` pairs, a new pair and cons cell for every coin
//! paid, the right branch forked while the depth is above 0), emitted
//! against the inline allocator. The tail of the coin list is kept in a
//! frame slot across the left branch's call, as a compiler keeps the `cs`
//! of `Coin c q : cs` live for the right branch.
//!
//! The sequential count is written twice ([`super::Returns`]): [`pay_n`]
//! returns through the shadow stack, its frames naming their
//! continuation, as GHC's code for `payN` does; [`pay_n_calls`] uses the
//! machine's calls and returns, as OCaml's and a C compiler's code does.
//! Both make the same calls, allocations and frames.

use super::Returns;
use crate::benchmarks::coins::{outcome, COINS};
use crate::{rt_err, Outcome, Params};
use numagc::compiled::{header, Ctx, Hp, Mutator, Sp};
use numagc::object::{int_value, is_pointer, value_int, NIL};
use numagc::{DescId, Descriptor, Result, Runtime};

/// The header word of a `(value, quantity)` pair: a constant, the
/// runtime's first descriptor (`super::register_nth` checks it).
const PAIR: u64 = header(DescId::nth_registered(0), 2);
/// The header word of a cons cell, the runtime's second descriptor.
const CONS: u64 = header(DescId::nth_registered(1), 2);

/// A two-field object holding `a` and `b`.
#[inline(always)]
fn alloc2(m: &mut Mutator<'_>, h: u64, a: u64, b: u64) -> Result<u64> {
    let o = m.alloc(h, 2)?;
    // SAFETY: `o` is fresh from `alloc`, with two value fields; `a` and
    // `b` are immediates or were read after the last call that may collect
    // (the callers below pass such words only when `alloc` cannot move
    // them: see `pay_one`).
    unsafe {
        m.init(o, 0, a);
        m.init(o, 1, b);
    }
    Ok(o)
}

/// The first coin of the list `coins` (not empty).
///
/// # Safety
/// `coins` is a live cons cell.
#[inline(always)]
unsafe fn head(m: Ctx<'_>, coins: u64) -> (i64, i64) {
    // SAFETY: the caller's contract; the head is a pair of immediates.
    unsafe {
        let pair = m.field(coins, 0);
        (value_int(m.field(pair, 0)), value_int(m.field(pair, 1)))
    }
}

/// The coins for the left branch: `(c, q-1) : rest`, or `rest` when the
/// last coin of value `c` was used. `rest`, the list's tail, is in slot 0
/// of the frame at `sp`, whose top is `top`. The pair and its cons cell are allocated
/// together (one bump, one limit test), as a compiler allocates
/// `(c, q - 1) :: rest`; past the limit, [`pay_one_slow`].
#[inline(always)]
fn pay_one(m: Ctx<'_>, hp: Hp, sp: Sp, top: Sp, c: i64, q: i64) -> (u64, Hp) {
    if q == 1 {
        // SAFETY: the frame at `sp` is live, its slot 0 set.
        return (unsafe { sp.get(0) }, hp);
    }
    match m.try_alloc_many_at(hp, [(PAIR, 2), (CONS, 2)]) {
        // SAFETY: both are fresh, with two value fields each; the tail is
        // in its slot.
        Some(([pair, cell], hp)) => (unsafe { init_pay_one(m, sp, pair, cell, c, q) }, hp),
        None => pay_one_slow(m, hp, sp, top, c, q),
    }
}

/// [`pay_one`] through the allocation's slow path.
#[cold]
#[inline(never)]
fn pay_one_slow(m: Ctx<'_>, hp: Hp, sp: Sp, top: Sp, c: i64, q: i64) -> (u64, Hp) {
    let ([pair, cell], hp) = m.alloc_many_at_slow(hp, top, [(PAIR, 2), (CONS, 2)]);
    // SAFETY: as in `pay_one`; the tail is reloaded from its slot after
    // the allocation.
    (unsafe { init_pay_one(m, sp, pair, cell, c, q) }, hp)
}

/// Writes the fields of `pair` and `cell`: `(c, q - 1) :: rest`, `rest`
/// in slot 0 of the frame at `sp`.
///
/// # Safety
/// `pair` and `cell` are fresh, with two value fields each.
#[inline(always)]
unsafe fn init_pay_one(m: Ctx<'_>, sp: Sp, pair: u64, cell: u64, c: i64, q: i64) -> u64 {
    // SAFETY: the caller's contract.
    unsafe {
        m.init(pair, 0, int_value(c));
        m.init(pair, 1, int_value(q - 1));
        m.init(cell, 0, pair);
        m.init(cell, 1, sp.get(0));
    }
    cell
}

/// The continuation of a frame of [`pay_n`] whose left call runs:
/// `[rest, val, AFTER_LEFT]`, the right call `payN val rest` to come.
/// Continuations are immediates, which the collector skips.
const AFTER_LEFT: u64 = int_value(0);
/// The continuation of a frame whose right call runs: `[left, _,
/// AFTER_RIGHT]`, `left` the left call's count (an immediate), to be
/// added to the right call's.
const AFTER_RIGHT: u64 = int_value(1);

/// `payN`: the sequential count, in register code (`numagc::compiled::Hp`,
/// `Sp`), returning through the shadow stack. Where the program calls
/// `payN (val - c) coins'` it pushes a frame `[rest, val, AFTER_LEFT]`
/// and goes on with the left call's arguments; where a call returns `r`
/// at once (nothing to pay, no coins left), it pops frames and runs
/// their continuations: an `AFTER_LEFT` frame becomes `[r, _,
/// AFTER_RIGHT]` and the right call `payN val rest` starts; an
/// `AFTER_RIGHT` frame adds its count to `r`, which returns on. The
/// count is done when no frame above `sp0` is left.
#[inline(never)]
fn pay_n(m: Ctx<'_>, hp: Hp, sp0: Sp, val: i64, coins: u64) -> (u64, Hp) {
    let (mut hp, mut sp, mut val, mut coins) = (hp, sp0, val, coins);
    loop {
        // Calls `payN val coins` until one returns `r` at once.
        let mut r = loop {
            if val == 0 {
                break 1;
            }
            if !is_pointer(coins) {
                break 0;
            }
            // SAFETY: `coins` is a live cons cell (just checked not NIL;
            // it was read or allocated since the last call that may
            // collect).
            let ((c, q), rest) = unsafe { (head(m, coins), m.field(coins, 1)) };
            if c > val {
                coins = rest;
                continue;
            }
            let top = m.push_at(sp, [rest, int_value(val), AFTER_LEFT]);
            let (left_coins, next_hp) = pay_one(m, hp, sp, top, c, q);
            (hp, sp, val, coins) = (next_hp, top, val - c, left_coins);
        };
        // Returns `r` to the continuations of the frames.
        loop {
            if sp == sp0 {
                return (r, hp);
            }
            // SAFETY: every frame above `sp0` was pushed by this loop with
            // three slots, and the frames above the last were popped.
            let f = unsafe { sp.pop(3) };
            // SAFETY: `f`'s frame is live (popped, and not passed since to
            // a call that may collect).
            if unsafe { f.get(2) } == AFTER_LEFT {
                // The right call, the left count kept in the frame; `rest`
                // is read from its slot (the left call may have moved it).
                // SAFETY: as above, for this and the next block.
                (coins, val) = unsafe { (f.get(0), value_int(f.get(1))) };
                // SAFETY: as above; the frame stays pushed for the right call.
                unsafe {
                    f.set(0, int_value(r as i64));
                    f.set(2, AFTER_RIGHT);
                }
                break;
            }
            // SAFETY: `f`'s frame is live until `sp` goes below it.
            r += value_int(unsafe { f.get(0) }) as u64;
            sp = f;
        }
    }
}

/// `payN` with the machine's calls and returns ([`super::Returns::Calls`]).
/// The cases that return at once, and the skipping of coins larger
/// than `val` (a tail call: a loop), run before anything is saved; the
/// two recursive calls go on in [`pay_n_both`] (a jump, not a call), as a
/// native code generator shrink-wraps them (`parfib.rs` says why it is
/// written by hand).
#[inline(never)]
fn pay_n_calls(m: Ctx<'_>, hp: Hp, sp: Sp, val: i64, mut coins: u64) -> (u64, Hp) {
    loop {
        if val == 0 {
            return (1, hp);
        }
        if !is_pointer(coins) {
            return (0, hp);
        }
        // SAFETY: `coins` is a live cons cell (just checked not NIL).
        let (c, _) = unsafe { head(m, coins) };
        if c <= val {
            return pay_n_both(m, hp, sp, val, coins);
        }
        // SAFETY: as above.
        coins = unsafe { m.field(coins, 1) };
    }
}

/// `payN val coins` when the first coin fits: the left branch pays it,
/// the right one drops its value; the list's tail in a frame slot across
/// both, as a compiler keeps the variable the pattern bound
/// (`(c, q) : rest`) rather than the cell it was read from, which the
/// left branch's allocation has long pushed out of the cache.
#[inline(never)]
fn pay_n_both(m: Ctx<'_>, hp: Hp, sp: Sp, val: i64, coins: u64) -> (u64, Hp) {
    // SAFETY: `coins` is a live cons cell (`pay_n_calls` checked it).
    let ((c, q), rest) = unsafe { (head(m, coins), m.field(coins, 1)) };
    let top = m.push_at(sp, [rest]);
    let (left_coins, hp) = pay_one(m, hp, sp, top, c, q);
    let (left, hp) = pay_n_calls(m, hp, top, val - c, left_coins);
    // SAFETY: the tail is reloaded from its slot (the left branch may
    // have moved it).
    let (right, hp) = pay_n_calls(m, hp, top, val, unsafe { sp.get(0) });
    (left + right, hp)
}

/// `payN_par`: forks the right branch while `depth > 0`.
fn pay_n_par(
    m: &mut Mutator<'_>,
    returns: Returns,
    depth: i64,
    val: i64,
    coins: u64,
) -> Result<u64> {
    if depth == 0 {
        return m.with_regs(|m, hp, sp| match returns {
            Returns::Stack => pay_n(m, hp, sp, val, coins),
            Returns::Calls => pay_n_calls(m, hp, sp, val, coins),
        });
    }
    if val == 0 {
        return Ok(1);
    }
    if !is_pointer(coins) {
        return Ok(0);
    }
    // SAFETY: `coins` is a live cons cell.
    let (c, q) = unsafe { head(m.ctx(), coins) };
    if c > val {
        // SAFETY: as above.
        return pay_n_par(m, returns, depth, val, unsafe { m.field(coins, 1) });
    }
    let left_depth = if q == 1 { depth - 1 } else { depth };
    let (left, right) = m.par2(
        &[coins],
        move |m, env| {
            let lc = m.with_regs(|m, hp, sp| {
                // SAFETY: `env[0]` is the live list.
                let top = m.push_at(sp, [unsafe { m.field(env[0], 1) }]);
                pay_one(m, hp, sp, top, c, q)
            })?;
            pay_n_par(m, returns, left_depth, val - c, lc).map(|n| int_value(n as i64))
        },
        move |m, env| {
            // SAFETY: `env[0]` is the live list.
            let rest = unsafe { m.field(env[0], 1) };
            pay_n_par(m, returns, depth - 1, val, rest).map(|n| int_value(n as i64))
        },
    )?;
    Ok((value_int(left) + value_int(right)) as u64)
}

/// The coin list on the heap, in `COINS` order.
fn coin_list(m: &mut Mutator<'_>) -> Result<u64> {
    let f = m.push_frame(1);
    f.set(0, NIL);
    for &(c, q) in COINS.iter().rev() {
        let pair = alloc2(m, PAIR, int_value(c), int_value(q))?;
        let g = m.push_frame(1);
        g.set(0, pair);
        let cell = m.alloc(CONS, 2)?;
        // SAFETY: `cell` is fresh; the pair and the list are in slots.
        unsafe {
            m.init(cell, 0, g.get(0));
            m.init(cell, 1, f.get(0));
        }
        m.pop_frame(g);
        f.set(0, cell);
    }
    let list = f.get(0);
    m.pop_frame(f);
    Ok(list)
}

pub fn run(rt: &Runtime, p: &Params, returns: Returns) -> std::result::Result<Outcome, String> {
    let (val, depth) = (p.get("value"), p.get("depth"));
    super::register_nth(
        rt,
        0,
        Descriptor::mixed("coin-pair", 2, &[0, 1]).map_err(rt_err)?,
    )?;
    super::register_nth(
        rt,
        1,
        Descriptor::mixed("coin-cons", 2, &[0, 1]).map_err(rt_err)?,
    )?;
    let got = rt
        .run_on(0, move |s| -> Result<i64> {
            // SAFETY: this module keeps the interface's contract.
            let mut m = unsafe { s.compiled() };
            let coins = coin_list(&mut m)?;
            Ok(pay_n_par(&mut m, returns, depth, val, coins)? as i64)
        })
        .map_err(rt_err)?
        .map_err(rt_err)?;
    Ok(outcome(val, depth, got))
}
