//! worpitzky (`gumsmp-shared-distributed-heaps.txt` §3.1): checks
//! Worpitzky's identity
//!
//! ```text
//! x^n = Σ_{k=0}^{n-1} A(n,k) · C(x+k, n)
//! ```
//!
//! for one `n` and one big `x` with arbitrary-precision naturals, as the
//! parallel Haskell program does with `Integer`. The paper says only that
//! the program "checks the Worpitzky property over Stirling numbers"; this
//! port uses the identity's Eulerian-number form, each Eulerian number
//! computed from its explicit sum
//! `A(n,k) = Σ_{j=0}^{k} (-1)^j C(n+1, j) (k+1-j)^n`, and multiplies both
//! sides by `n!` so that no big division is needed:
//! `n!·x^n = Σ_k A(n,k) · (x+k)(x+k-1)…(x+k-n+1)`.
//!
//! Naturals are heap objects: raw objects of 64-bit limbs (least
//! significant first, no leading zero limbs), immutable, one fresh object
//! per arithmetic result, as GHC's `integer-gmp` allocates a fresh
//! `ByteArray#` per `Integer` result. Each operation computes its limbs
//! into a small reusable Rust buffer from views of its operands, then
//! copies them into the new heap object (the buffer is working space, like
//! GMP's scratch; it never holds a value between operations).
//!
//! `x` is a pseudo-random natural of `x-limbs` limbs (xorshift, fixed
//! seed), so that most of the work is the falling factorials: each is a
//! balanced product tree of `n` big factors, schoolbook-multiplied, whose
//! top products cost O(m²) limb operations for O(m) words allocated. This
//! is the choice that gives the program the paper's character, the GUM
//! program with the lowest allocation rate (with a small `x` the Eulerian
//! sums dominate, and they allocate a full-size sum and product per small
//! power).
//!
//! Parallelism: the terms `k = 0..n` are a divide-and-conquer reduction
//! ([`numagc::Scope::par_reduce`], split in halves with `par2`, one term
//! per leaf, results added). The row `C(n+1, j)` and `x` are heap values
//! built first and shared by every task (promoted when a task is stolen).
//! On a PE group (`--pes`) the same halving is written with
//! [`numagc::Scope::par2_export`] ([`terms`]), so another PE may take a
//! half, with the row and `x` packed.
//! The left side `n!·x^n` (a power by squaring, a small part of the work)
//! is computed afterwards on the vproc that started the run.
//!
//! Sizes (the paper gives none): paper n = 300 with a 16-limb (1024-bit)
//! `x` (a few seconds on one vproc), quick n = 150 with a 12-limb `x`.
//!
//! Check: the program prints `true` when its two sides are equal; the
//! check also reduces the heap sum modulo three 61–63-bit moduli and
//! compares each residue with `n! · x^n` computed by plain modular
//! arithmetic in `u128` from `x`'s limbs (no big integers), an
//! independent code path.

use crate::pe_support::{no_descriptors, ExportTable};
use crate::{rt_err, Benchmark, Outcome, Param, Params, PeProgram};
use numagc::pe::PeGroup;
use numagc::{Handle, Result, Runtime, Scope};

pub struct Worpitzky;

/// Moduli of the check (any moduli will do; these are large and odd).
const CHECK_MODULI: [u64; 3] = [(1 << 61) - 1, (1 << 62) - 57, (1 << 63) - 25];

/// Working space of one task's arithmetic: the limbs of the result being
/// computed, before they are copied into their heap object.
type Scratch = Vec<u64>;

/// The limbs of a natural.
fn limbs<'a>(s: &'a Scope<'_>, a: Handle<'_>) -> &'a [u64] {
    s.view(a).raw_words().expect("a natural is a raw object")
}

/// A natural holding the limbs of `sc`, without leading zero limbs (zero
/// keeps one limb).
fn alloc_nat<'s>(s: &mut Scope<'s>, sc: &mut Scratch) -> Result<Handle<'s>> {
    while sc.len() > 1 && sc.last() == Some(&0) {
        sc.pop();
    }
    s.alloc_raw(sc)
}

fn small<'s>(s: &mut Scope<'s>, v: u64) -> Result<Handle<'s>> {
    s.alloc_raw(&[v])
}

fn add<'s>(
    s: &mut Scope<'s>,
    sc: &mut Scratch,
    a: Handle<'_>,
    b: Handle<'_>,
) -> Result<Handle<'s>> {
    {
        let (mut x, mut y) = (limbs(s, a), limbs(s, b));
        if x.len() < y.len() {
            (x, y) = (y, x);
        }
        sc.clear();
        let mut carry = 0u64;
        for (i, &xi) in x.iter().enumerate() {
            let (t, c1) = xi.overflowing_add(y.get(i).copied().unwrap_or(0));
            let (t, c2) = t.overflowing_add(carry);
            sc.push(t);
            carry = (c1 | c2) as u64;
        }
        sc.push(carry);
    }
    alloc_nat(s, sc)
}

/// `a - b` for `a >= b`.
fn sub<'s>(
    s: &mut Scope<'s>,
    sc: &mut Scratch,
    a: Handle<'_>,
    b: Handle<'_>,
) -> Result<Handle<'s>> {
    {
        let (x, y) = (limbs(s, a), limbs(s, b));
        sc.clear();
        let mut borrow = 0u64;
        for (i, &xi) in x.iter().enumerate() {
            let (t, b1) = xi.overflowing_sub(y.get(i).copied().unwrap_or(0));
            let (t, b2) = t.overflowing_sub(borrow);
            sc.push(t);
            borrow = (b1 | b2) as u64;
        }
        assert!(
            borrow == 0 && y.len() <= x.len().max(1),
            "natural subtraction below zero"
        );
    }
    alloc_nat(s, sc)
}

/// Rows of a product computed between two safepoints.
const ROWS_PER_POLL: usize = 32;

/// Schoolbook product. A product of big factors runs for milliseconds
/// without allocating, so it polls between blocks of rows: a global
/// collection or a thief waiting for this vproc is not held up by it.
fn mul<'s>(
    s: &mut Scope<'s>,
    sc: &mut Scratch,
    a: Handle<'_>,
    b: Handle<'_>,
) -> Result<Handle<'s>> {
    let (x_len, y_len) = (limbs(s, a).len(), limbs(s, b).len());
    sc.clear();
    sc.resize(x_len + y_len, 0);
    for first in (0..x_len).step_by(ROWS_PER_POLL) {
        {
            // Views again after each poll: a collection may have moved `a` and `b`.
            let (x, y) = (limbs(s, a), limbs(s, b));
            for (i, &xi) in x.iter().enumerate().skip(first).take(ROWS_PER_POLL) {
                let mut carry = 0u128;
                for (j, &yj) in y.iter().enumerate() {
                    let t = xi as u128 * yj as u128 + sc[i + j] as u128 + carry;
                    sc[i + j] = t as u64;
                    carry = t >> 64;
                }
                sc[i + y.len()] = carry as u64;
            }
        }
        s.poll();
    }
    alloc_nat(s, sc)
}

fn mul_small<'s>(s: &mut Scope<'s>, sc: &mut Scratch, a: Handle<'_>, m: u64) -> Result<Handle<'s>> {
    {
        let x = limbs(s, a);
        sc.clear();
        let mut carry = 0u128;
        for &xi in x {
            let t = xi as u128 * m as u128 + carry;
            sc.push(t as u64);
            carry = t >> 64;
        }
        sc.push(carry as u64);
    }
    alloc_nat(s, sc)
}

/// `a / d` for a `d` that divides `a`.
fn div_exact_small<'s>(
    s: &mut Scope<'s>,
    sc: &mut Scratch,
    a: Handle<'_>,
    d: u64,
) -> Result<Handle<'s>> {
    {
        let x = limbs(s, a);
        sc.clear();
        sc.resize(x.len(), 0);
        let mut rem = 0u128;
        for i in (0..x.len()).rev() {
            let t = (rem << 64) | x[i] as u128;
            sc[i] = (t / d as u128) as u64;
            rem = t % d as u128;
        }
        assert_eq!(rem, 0, "inexact division");
    }
    alloc_nat(s, sc)
}

/// `base^e` by repeated squaring.
fn pow<'s>(s: &mut Scope<'s>, sc: &mut Scratch, base: Handle<'_>, e: u64) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let one = small(s, 1)?;
        let acc = s.slot(one);
        for bit in (0..u64::BITS - e.leading_zeros()).rev() {
            s.scope(|s| -> Result<()> {
                let sq = mul(s, sc, acc.get(), acc.get())?;
                s.assign(acc, sq);
                if e >> bit & 1 == 1 {
                    let m = mul(s, sc, acc.get(), base)?;
                    s.assign(acc, m);
                }
                Ok(())
            })?;
        }
        Ok(acc.get())
    })
}

/// `factor(lo) · factor(lo+1) · … · factor(hi)` as a balanced product tree.
fn product<'s, F>(
    s: &mut Scope<'s>,
    sc: &mut Scratch,
    lo: u64,
    hi: u64,
    factor: &F,
) -> Result<Handle<'s>>
where
    F: for<'i> Fn(&mut Scope<'i>, &mut Scratch, u64) -> Result<Handle<'i>>,
{
    if lo == hi {
        return factor(s, sc, lo);
    }
    let mid = lo + (hi - lo) / 2;
    s.scope_value(|s| {
        let a = product(s, sc, lo, mid, factor)?;
        let b = product(s, sc, mid + 1, hi, factor)?;
        mul(s, sc, a, b)
    })
}

/// `x + d` for a signed `d` with `x + d >= 0`.
fn offset<'s>(s: &mut Scope<'s>, sc: &mut Scratch, x: Handle<'_>, d: i64) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let magnitude = small(s, d.unsigned_abs())?;
        if d >= 0 {
            add(s, sc, x, magnitude)
        } else {
            sub(s, sc, x, magnitude)
        }
    })
}

/// The row `C(n+1, j)` for `j = 0..=n+1`, as a heap vector of naturals.
fn binomial_row<'s>(s: &mut Scope<'s>, sc: &mut Scratch, n: u64) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let mut row = vec![small(s, 1)?];
        for j in 0..=n {
            let prev = *row.last().expect("the row starts with C(n+1, 0)");
            let m = mul_small(s, sc, prev, n + 1 - j)?;
            row.push(div_exact_small(s, sc, m, j + 1)?);
        }
        s.alloc_vector(&row)
    })
}

/// `A(n,k) = Σ_{j=0}^{k} (-1)^j C(n+1, j) (k+1-j)^n`, the even and odd
/// terms summed apart.
fn eulerian<'s>(
    s: &mut Scope<'s>,
    sc: &mut Scratch,
    row: Handle<'_>,
    n: u64,
    k: u64,
) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let zero = small(s, 0)?;
        let (even, odd) = (s.slot(zero), s.slot(zero));
        for j in 0..=k {
            s.scope(|s| -> Result<()> {
                let base = small(s, k + 1 - j)?;
                let power = pow(s, sc, base, n)?;
                let c = s.field(row, j as usize)?;
                let t = mul(s, sc, c, power)?;
                let sum = if j % 2 == 0 { even } else { odd };
                let r = add(s, sc, sum.get(), t)?;
                s.assign(sum, r);
                Ok(())
            })?;
        }
        sub(s, sc, even.get(), odd.get())
    })
}

/// Term `k` of the right side: `A(n,k) · (x+k)(x+k-1)…(x+k-n+1)`
/// (`x > n`, so every factor is positive).
fn term<'s>(
    s: &mut Scope<'s>,
    row: Handle<'_>,
    x: Handle<'_>,
    n: u64,
    k: u64,
) -> Result<Handle<'s>> {
    let mut sc = Scratch::new();
    s.scope_value(|s| {
        let a = eulerian(s, &mut sc, row, n, k)?;
        let falling = {
            // The factors read `x` through a slot of this scope.
            let x = s.slot(x);
            product(
                s,
                &mut sc,
                0,
                n - 1,
                &move |s: &mut Scope<'_>, sc: &mut Scratch, i: u64| {
                    offset(s, sc, x.get(), k as i64 - i as i64)
                },
            )?
        };
        mul(s, &mut sc, a, falling)
    })
}

/// The terms `lo .. hi` of the right side, added: one term is computed
/// here, more are halved and the right half forked with `par2_export`
/// (the PE version of `both_sides`' `par_reduce`, same leaves and sums).
fn terms<'s>(
    s: &mut Scope<'s>,
    row: Handle<'_>,
    x: Handle<'_>,
    n: u64,
    lo: u64,
    hi: u64,
) -> Result<Handle<'s>> {
    if hi - lo == 1 {
        return term(s, row, x, n, lo);
    }
    let mid = lo + (hi - lo) / 2;
    let args = [
        row,
        x,
        Handle::int(n as i64),
        Handle::int(mid as i64),
        Handle::int(hi as i64),
    ];
    s.scope_value(|s| {
        let (a, b) = s.par2_export(EXPORTS.export(0), &args, move |s, env| {
            terms(s, env[0], env[1], n, lo, mid)
        })?;
        add(s, &mut Scratch::new(), a, b)
    })
}

/// The PE program's exportable function: [`terms`] from `args` =
/// `[row, x, n, lo, hi]`.
fn terms_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let [row, x, n, lo, hi] = args else {
        return Err(numagc::Error::misuse(
            "worpitzky.terms: (row, x, n, lo, hi) expected",
        ));
    };
    let int = |h: &Handle<'_>| s.as_int(*h).filter(|&i| i >= 0).map(|i| i as u64);
    match (int(n), int(lo), int(hi)) {
        (Some(n), Some(lo), Some(hi)) if lo < hi && hi <= n => terms(s, *row, *x, n, lo, hi),
        _ => Err(numagc::Error::misuse(
            "worpitzky.terms: counts 0 <= lo < hi <= n expected",
        )),
    }
}

/// The PE program's exportable function: a range of the right side's
/// terms. (The program registers no descriptors: bignums are raw objects.)
static EXPORTS: ExportTable<1> = ExportTable::new([("worpitzky.terms", terms_task)]);

/// Both sides of `n!·x^n = Σ_k A(n,k)·(x+k)_n`; the right side's limbs are
/// returned for the check. `on_pes`: the right side's terms are forked
/// with `par2_export` ([`terms`]) instead of `par_reduce`.
fn both_sides(
    s: &mut Scope<'_>,
    n: u64,
    x_limbs: &[u64],
    on_pes: bool,
) -> Result<(bool, Vec<u64>)> {
    let mut sc = Scratch::new();
    let x = s.alloc_raw(x_limbs)?;
    let row = binomial_row(s, &mut sc, n)?;
    let right = if on_pes {
        terms(s, row, x, n, 0, n)?
    } else {
        right_side(s, row, x, n)?
    };
    let factorial = product(
        s,
        &mut sc,
        1,
        n,
        &|s: &mut Scope<'_>, _: &mut Scratch, i: u64| small(s, i),
    )?;
    let power = pow(s, &mut sc, x, n)?;
    let left = mul(s, &mut sc, factorial, power)?;
    Ok((limbs(s, left) == limbs(s, right), limbs(s, right).to_vec()))
}

/// `Σ_k A(n,k)·(x+k)_n` by `par_reduce`, one term per leaf.
fn right_side<'s>(s: &mut Scope<'s>, row: Handle<'_>, x: Handle<'_>, n: u64) -> Result<Handle<'s>> {
    s.par_reduce(
        &[row, x],
        0,
        n as usize,
        1,
        move |s, env, lo, hi| {
            let mut sc = Scratch::new();
            s.scope_value(|s| {
                let zero = small(s, 0)?;
                let acc = s.slot(zero);
                for k in lo..hi {
                    s.scope(|s| -> Result<()> {
                        let t = term(s, env[0], env[1], n, k as u64)?;
                        let r = add(s, &mut sc, acc.get(), t)?;
                        s.assign(acc, r);
                        Ok(())
                    })?;
                }
                Ok(acc.get())
            })
        },
        |s, _, a, b| add(s, &mut Scratch::new(), a, b),
    )
}

/// `x`: `count` pseudo-random limbs (xorshift), the top one with its high
/// bit set so that `x > n`.
fn x_limbs(count: usize) -> Vec<u64> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut limbs: Vec<u64> = (0..count)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        })
        .collect();
    if let Some(top) = limbs.last_mut() {
        *top |= 1 << 63;
    }
    limbs
}

/// `limbs mod m` (little-endian limbs).
fn residue(limbs: &[u64], m: u64) -> u64 {
    limbs
        .iter()
        .rev()
        .fold(0u128, |r, &l| ((r << 64) | l as u128) % m as u128) as u64
}

/// `n! · x^n mod m` by modular arithmetic (the independent answer).
fn expected_residue(n: u64, x: &[u64], m: u64) -> u64 {
    let m = m as u128;
    let factorial = (1..=n as u128).fold(1u128, |f, i| f * (i % m) % m);
    let x = residue(x, m as u64) as u128;
    let power = (0..n).fold(1u128, |p, _| p * x % m);
    (factorial * power % m) as u64
}

impl Benchmark for Worpitzky {
    fn name(&self) -> &'static str {
        "worpitzky"
    }
    fn source(&self) -> &'static str {
        "gumsmp-shared-distributed-heaps.txt §3.1"
    }
    fn description(&self) -> &'static str {
        "Worpitzky's identity x^n = Σ A(n,k)·C(x+k,n) with heap bignums, terms reduced in parallel"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "n",
                help: "the exponent (and the number of terms)",
                quick: 150,
                paper: 300,
                scale: 420,
                min: 1,
                max: 5000,
            },
            Param {
                name: "x-limbs",
                help: "size of the base x in 64-bit limbs",
                quick: 12,
                paper: 16,
                scale: 16,
                min: 1,
                max: 4096,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, x) = (p.get("n") as u64, x_limbs(p.usize("x-limbs")));
        let x_for_run = x.clone();
        let (holds, right) = rt
            .run_on(0, move |s| both_sides(s, n, &x_for_run, false))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(n, x, holds, right))
    }

    fn pe_program(&self) -> Option<PeProgram> {
        Some(EXPORTS.program(no_descriptors))
    }

    fn run_pes(&self, g: &PeGroup, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, x) = (p.get("n") as u64, x_limbs(p.usize("x-limbs")));
        let x_for_run = x.clone();
        let (holds, right) = g
            .run(move |s| both_sides(s, n, &x_for_run, true))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(n, x, holds, right))
    }
}

/// The output line and the check.
fn outcome(n: u64, x: Vec<u64>, holds: bool, right: Vec<u64>) -> Outcome {
    let bits = right.len() as u64 * 64 - right.last().map_or(64, |l| l.leading_zeros() as u64);
    let out = format!(
            "worpitzky n={n}, x of {} bits: n!·x^n = Σ A(n,k)·(x+k)_n holds: {holds} ({bits}-bit value, top limb {:#018x})\n",
            x.len() * 64,
            right.last().unwrap_or(&0)
        );
    Outcome::new(out, move || {
        if !holds {
            return Err(format!("the two sides differ for n={n}"));
        }
        for m in CHECK_MODULI {
            let (got, want) = (residue(&right, m), expected_residue(n, &x, m));
            if got != want {
                return Err(format!(
                    "Σ A(n,k)·(x+k)_n mod {m} = {got}, expected n!·x^n mod {m} = {want}"
                ));
            }
        }
        Ok(())
    })
}
