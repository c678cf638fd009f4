//! coins (`gumsmp-shared-distributed-heaps.txt` §3.1): the number of ways
//! to pay a value from a fixed set of coins, each coin value available in
//! a limited quantity. This is version 7 (`payN_par`) of the parallel
//! Haskell `coins` program (GHC's nofib `parallel/coins`): the coins are a
//! heap list of `(value, quantity)` pairs, largest value first, and each
//! step either pays one coin of the first value (the *left* branch, on the
//! list whose head pair has one coin less: a new pair and a new cons cell,
//! as `(c,q-1) : coins` allocates) or drops that value (the *right* branch,
//! on the tail). The paper names coins as the GUM program with the highest
//! allocation rate; here, as in the original, almost every left step
//! allocates a pair and a cons cell that die young.
//!
//! Parallelism is the original's depth threshold: while `depth > 0` the
//! right branch is forked with [`numagc::Scope::par2_export`]
//! (`` right `par` left ``; `par2` on one runtime, and on a PE group,
//! `--pes`, another PE may take it), its depth one less; the left branch keeps its
//! depth unless it used the last coin of a value. Below depth 0 the
//! sequential `payN` runs. The forked closure's environment is the coin
//! list, so a stolen task promotes the (short) list it needs. Counts are returned as
//! immediate integers (GHC's worker returns an unboxed `Int#`).
//!
//! Sizes and choices (the paper gives no input): the coin values and the
//! "large setup" quantities are the original's (`[250, 100, 25, 10, 5, 1]`
//! with `[55, 88, 88, 99, 122, 177]`), and so is the depth, 4; nofib runs
//! value 863. The paper size pays 1100 (about 230 million calls, a few
//! seconds on one vproc; about 19,000 forks, the largest sequential task
//! under 0.1 % of the calls), the quick size 600 (16 million calls). A
//! depth of 5 would fork 30 times as often for no better balance.
//!
//! The sequential `payN` holds its lists in typed handles
//! ([`numagc::Typed`]): it knows the layouts of its cells and pairs, so
//! its reads need no check of their headers, as a compiled program's
//! would not; the forking part above it stays on untyped handles.
//!
//! Check: a dynamic-programming count over plain Rust arrays (bounded
//! knapsack: for each coin value, ways of paying `v` with `0..=q` coins of
//! it), an independent code path.

use crate::pe_support::ExportTable;
use crate::{register_as, rt_err, Benchmark, Outcome, Param, Params, PeProgram};
use numagc::pe::PeGroup;
use numagc::{DescId, FrameSlot, Handle, Layout, Result, Runtime, Scope, Typed};

/// Coin values, largest first, and how many coins of each there are
/// (the original's "large setup").
pub(crate) const COINS: [(i64, i64); 6] =
    [(250, 55), (100, 88), (25, 88), (10, 99), (5, 122), (1, 177)];

pub struct Coins;

/// `(value, quantity)`, both immediates: the runtime's first descriptor.
struct Pair;

impl Layout for Pair {
    const NAME: &'static str = "coin-pair";
    const DESC: DescId = DescId::nth_registered(0);
    const SIZE: usize = 2;
    const VALUES: u32 = 0b11;
}

/// A cell of the coin list, `[head, tail]` (the empty list is NIL): the
/// runtime's second descriptor.
struct Cons;

impl Layout for Cons {
    const NAME: &'static str = "coin-cons";
    const DESC: DescId = DescId::nth_registered(1);
    const SIZE: usize = 2;
    const VALUES: u32 = 0b11;
}

/// What every runtime (every PE) registers before the program runs.
fn setup(rt: &Runtime) -> Result<()> {
    register_as(rt, Pair::DESC, Pair::descriptor()?)?;
    register_as(rt, Cons::DESC, Cons::descriptor()?)
}

/// A coin list held typed: its first cell, or `None` for the empty list.
type List<'s> = Option<Typed<'s, Cons>>;

/// The program's exportable function: the right branch of a fork.
static EXPORTS: ExportTable<1> = ExportTable::new([("coins.right", right_task)]);

/// The right branch of a fork: `payN_par (depth - 1) val (tail coins)`,
/// from `args` = `[coins, depth, val]`.
fn right_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let (coins, depth, val) = match args {
        [coins, d, v] => (*coins, s.as_int(*d), s.as_int(*v)),
        _ => (Handle::NIL, None, None),
    };
    let (Some(depth), Some(val)) = (depth, val) else {
        return Err(numagc::Error::misuse(
            "coins.right: (coins, depth, value) expected",
        ));
    };
    let rest = s.field(coins, 1)?;
    pay_n_par(s, depth - 1, val, rest)
}

/// The first coin of a non-empty list: `(value, quantity)`.
fn head_coin(s: &Scope<'_>, coins: Handle<'_>) -> Option<(i64, i64)> {
    let v = s.view(coins);
    if v.is_int() {
        return None;
    }
    let pair = v.field(0);
    Some((
        pair.field(0).as_int().expect("coin value"),
        pair.field(1).as_int().expect("coin quantity"),
    ))
}

/// [`pay_one`] on untyped lists, for the forking part (typing its list
/// for the typed `pay_one` costs a header check and a push per fork).
fn pay_one_untyped<'s>(s: &mut Scope<'s>, rest: Handle<'s>, c: i64, q: i64) -> Result<Handle<'s>> {
    if q == 1 {
        return Ok(rest);
    }
    let pair = s.alloc_mixed(Pair::DESC, &[Handle::int(c), Handle::int(q - 1)], &[])?;
    s.alloc_mixed(Cons::DESC, &[pair, rest], &[])
}

/// `payN`: the sequential count, on typed lists. A call that pays holds
/// two values across what may collect, in a frame of two slots
/// (`Scope::frame`, reserved and popped with one store of the root
/// stack's top each, as compiled code's frame): the list's tail, held
/// across both branches as a compiler holds the variable its pattern
/// bound, and the left branch's list.
///
/// The calls that return at once (nothing left to pay, no coins left),
/// about half of them, return where they are called ([`pay_n`] is
/// inlined), before anything is saved; the others are [`pay_n_frame`]'s
/// (the shrink-wrapping a native code generator does, and the compiled
/// version's `pay_n_calls`).
#[inline(always)]
fn pay_n(s: &mut Scope<'_>, val: i64, coins: List<'_>) -> Result<u64> {
    if val == 0 {
        return Ok(1);
    }
    match coins {
        Some(cell) => pay_n_frame(s, val, cell),
        None => Ok(0),
    }
}

/// `payN val (cell)`, `val > 0`: a call that may pay.
#[inline(never)]
fn pay_n_frame(s: &mut Scope<'_>, val: i64, cell: Typed<'_, Cons>) -> Result<u64> {
    s.frame(|s, [rest, left_cell]| {
        // Coins larger than `val` are dropped in a loop (the original's
        // tail call `payN val rest`), reading the cells in place.
        let mut r = s.record(cell);
        let (c, q, tail) = loop {
            let Some(pair) = r.get(0).record::<Pair>() else {
                not_a_coin_list()
            };
            let (Some(c), Some(q)) = (pair.int(0), pair.int(1)) else {
                not_a_coin_list()
            };
            let tail = r.get(1);
            if c <= val {
                break (c, q, tail);
            }
            if tail.is_int() {
                return Ok(0);
            }
            let Some(next) = tail.record::<Cons>() else {
                not_a_coin_list()
            };
            r = next;
        };
        let rest = match tail.is_int() {
            true => None,
            false => match tail.record::<Cons>() {
                Some(t) => Some(rest.keep_record(t)),
                None => not_a_coin_list(),
            },
        };
        let left_coins = pay_one(s, rest, c, q, left_cell)?;
        let left = pay_n(s, val - c, left_coins)?;
        let right = pay_n(s, val, rest)?;
        Ok(left + right)
    })
}

/// The panic of a list that is not one of `(value, quantity)` pairs, out
/// of line (its message's address is then not loaded on every call).
#[cold]
#[inline(never)]
fn not_a_coin_list() -> ! {
    panic!("coins: not a list of (value, quantity) pairs")
}

/// An untyped list as a typed one (one look at its first cell's header).
fn typed_list<'s>(s: &Scope<'s>, coins: Handle<'_>) -> List<'s> {
    if s.view(coins).is_int() {
        return None;
    }
    Some(s.typed::<Cons>(coins).expect("a list cell"))
}

/// The coins for the left branch: `(c, q-1) : rest`, or `rest` when the
/// last coin of value `c` was used; the pair and its cell allocated
/// together (`Scope::alloc_fresh_holding`: one bump, as a compiler
/// allocates them), the cell kept in the caller's frame slot `cell`.
fn pay_one<'i>(
    s: &mut Scope<'i>,
    rest: List<'i>,
    c: i64,
    q: i64,
    cell: FrameSlot<'i>,
) -> Result<List<'i>> {
    if q == 1 {
        return Ok(rest);
    }
    let rest = rest.map_or(Handle::NIL, |r| r.untyped());
    let pair = [Handle::int(c), Handle::int(q - 1)];
    let new = s.alloc_fresh_holding::<Pair, Cons>(&pair, &[], &[Handle::NIL, rest], &[], 0)?;
    Ok(Some(cell.keep(new)))
}

/// `payN_par`: forks the right branch while `depth > 0`; returns the count
/// as an immediate.
fn pay_n_par<'s>(s: &mut Scope<'s>, depth: i64, val: i64, coins: Handle<'_>) -> Result<Handle<'s>> {
    if depth == 0 {
        let n = s.scope(|s| {
            let coins = typed_list(s, coins);
            pay_n(s, val, coins)
        })?;
        return Ok(count(n));
    }
    if val == 0 {
        return Ok(count(1));
    }
    let Some((c, q)) = head_coin(s, coins) else {
        return Ok(count(0));
    };
    s.scope_value(|s| {
        if c > val {
            let rest = s.field(coins, 1)?;
            return pay_n_par(s, depth, val, rest);
        }
        let left_depth = if q == 1 { depth - 1 } else { depth };
        let (left, right) = s.par2_export(
            EXPORTS.export(0),
            &[coins, Handle::int(depth), Handle::int(val)],
            move |s, env| {
                let rest = s.field(env[0], 1)?;
                let left_coins = pay_one_untyped(s, rest, c, q)?;
                pay_n_par(s, left_depth, val - c, left_coins)
            },
        )?;
        let sum = s.as_int(left).expect("a count") + s.as_int(right).expect("a count");
        Ok(count(sum as u64))
    })
}

/// A count as an immediate integer (no allocation, no root slot).
fn count<'s>(n: u64) -> Handle<'s> {
    Handle::int(i64::try_from(n).expect("count fits in 63 bits"))
}

/// The coin list `[(value, quantity)]` on the heap, in `COINS` order.
fn coin_list<'s>(s: &mut Scope<'s>) -> Result<Handle<'s>> {
    let list = s.slot(Handle::NIL);
    for &(c, q) in COINS.iter().rev() {
        s.scope(|s| -> Result<()> {
            let pair = s.alloc_mixed(Pair::DESC, &[Handle::int(c), Handle::int(q)], &[])?;
            s.alloc_mixed_to(list, Cons::DESC, &[pair, list.get()], &[])
        })?;
    }
    Ok(list.get())
}

/// The program: the coin list, then `payN_par`.
fn count_ways(s: &mut Scope<'_>, depth: i64, val: i64) -> Result<i64> {
    let coins = coin_list(s)?;
    let n = pay_n_par(s, depth, val, coins)?;
    Ok(s.as_int(n).expect("a count"))
}

/// Ways to pay `val` with at most `q` coins of each value `c` (the
/// independent answer): bounded-knapsack counting over a Rust array.
pub(crate) fn ways_dp(val: usize) -> u64 {
    let mut ways = vec![0u64; val + 1];
    ways[0] = 1;
    for &(c, q) in &COINS {
        let (c, q) = (c as usize, q as usize);
        let mut next = vec![0u64; val + 1];
        for (v, slot) in next.iter_mut().enumerate() {
            *slot = (0..=q)
                .take_while(|t| t * c <= v)
                .map(|t| ways[v - t * c])
                .sum();
        }
        ways = next;
    }
    ways[val]
}

impl Benchmark for Coins {
    fn name(&self) -> &'static str {
        "coins"
    }
    fn source(&self) -> &'static str {
        "gumsmp-shared-distributed-heaps.txt §3.1"
    }
    fn description(&self) -> &'static str {
        "ways to pay a value from limited coins; heap coin lists, right branches forked above a depth"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "value",
                help: "the amount to pay",
                quick: 600,
                paper: 1100,
                scale: 1_350,
                min: 0,
                max: 5000,
            },
            Param {
                name: "depth",
                help: "fork the right branch while the depth is above 0",
                quick: 4,
                paper: 4,
                scale: 4,
                min: 0,
                max: 30,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (val, depth) = (p.get("value"), p.get("depth"));
        setup(rt).map_err(rt_err)?;
        let got = rt
            .run_on(0, move |s| count_ways(s, depth, val))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(val, depth, got))
    }

    fn pe_program(&self) -> Option<PeProgram> {
        Some(EXPORTS.program(setup))
    }

    fn run_pes(&self, g: &PeGroup, p: &Params) -> std::result::Result<Outcome, String> {
        let (val, depth) = (p.get("value"), p.get("depth"));
        let got = g
            .run(move |s| count_ways(s, depth, val))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(val, depth, got))
    }

    fn has_compiled(&self) -> bool {
        true
    }

    fn run_compiled(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        crate::compiled::coins::run(rt, p, crate::compiled::Returns::Stack)
    }

    fn has_compiled_calls(&self) -> bool {
        true
    }

    fn run_compiled_calls(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        crate::compiled::coins::run(rt, p, crate::compiled::Returns::Calls)
    }
}

/// The printed answer and its check against the dynamic-programming count
/// (`ways_dp`), shared by the safe and the compiled versions.
pub(crate) fn outcome(val: i64, depth: i64, got: i64) -> Outcome {
    let out = format!("coins: ways to pay {val} (depth {depth}) = {got}\n");
    Outcome::new(out, move || {
        let want = ways_dp(val as usize);
        if got as u64 == want {
            Ok(())
        } else {
            Err(format!("{got} ways to pay {val}, expected {want}"))
        }
    })
}
