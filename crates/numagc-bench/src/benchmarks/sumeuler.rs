//! sumEuler (`gumsmp-shared-distributed-heaps.txt` §3.1): the sum of
//! Euler's totient φ(k) over the interval `[n, n-1 .. 0]`, in the shape of
//! the parallel Haskell program (GHC's nofib `parallel/sumeuler`, version
//! `sumEulerJFP_Final`):
//!
//! ```haskell
//! sum ([(sum . map euler) x | x <- splitAtN c [n,n-1..0]] `using` parList rnf)
//! euler k = length (filter (relprime k) [1..k-1])
//! ```
//!
//! The interval, cut into chunks of `chunk` numbers, is a heap sequence
//! of heap lists (one cons cell per number), built with
//! [`numagc::Scope::tabulate`]; [`numagc::Scope::par_map`] maps each chunk
//! to the sum of its totients (the `parList`), and
//! [`numagc::Scope::seq_reduce`] adds the chunk sums. φ(k) is the naive
//! count of the `j < k` with `gcd(j, k) = 1` (Euclid's `rem` loop, as the
//! original's `hcf`). As the GHC of the paper's time compiled the
//! original (its `length` was no good consumer for list fusion), each φ(k)
//! builds the heap list of the coprime `j` and takes its length, so the
//! program allocates about 0.3·n² short-lived cons cells.
//!
//! Parallelism: chunks are the tasks; the first chunks hold the largest
//! numbers and cost the most, and `par_map` splits the chunk vector in
//! halves, so the idle vproc first steals the half not yet started, and
//! stealing the remaining halves evens out the rest (the original relies
//! on many more chunks than processors in the same way).
//!
//! Sizes (the paper gives none; nofib's defaults are n = 5000, chunks of
//! 100): quick n = 5000, paper n = 20000 (a few seconds on one vproc),
//! chunks of 100 numbers at both sizes.
//!
//! On a PE group (`--pes`, `numagc::pe`), the chunks are the tasks of a
//! divide and conquer over the chunk numbers, its right halves forked
//! with [`numagc::Scope::par2_export`]; a task builds the lists of its
//! own chunks, as the original's chunks are thunks evaluated where their
//! spark runs (GUM ships the thunk, not the list). The work per number is
//! the same; the run on one runtime keeps the `tabulate`/`par_map` shape.
//!
//! Check: Σφ(k) from a totient sieve over a plain Rust array (φ(m) -=
//! φ(m)/p for every prime p dividing m), an independent method.

use crate::pe_support::{task_ints, ExportTable};
use crate::{register_as, rt_err, Benchmark, Outcome, Param, Params, PeProgram};
use numagc::pe::PeGroup;
use numagc::{DescId, Descriptor, Handle, Result, Runtime, Scope};

pub struct SumEuler;

/// `hcf` of the original: Euclid's algorithm with `rem`.
fn hcf(mut x: u64, mut y: u64) -> u64 {
    while y != 0 {
        (x, y) = (y, x % y);
    }
    x
}

/// `euler k = length (filter (relprime k) [1..k-1])`: the coprime `j` are
/// consed into a heap list (ascending), whose length is the answer.
fn euler(s: &mut Scope<'_>, cons: DescId, k: u64) -> Result<i64> {
    s.scope(|s| {
        let coprimes = s.slot(Handle::NIL);
        for j in (1..k).rev() {
            if hcf(k, j) == 1 {
                s.alloc_mixed_to(
                    coprimes,
                    cons,
                    &[Handle::int(j as i64), coprimes.get()],
                    &[],
                )?;
            }
        }
        Ok(list_length(s, coprimes.get()))
    })
}

fn list_length(s: &Scope<'_>, list: Handle<'_>) -> i64 {
    let mut cell = s.view(list);
    let mut n = 0;
    while cell.is_object() {
        n += 1;
        cell = cell.field(1);
    }
    n
}

/// Chunk `i` of `[n, n-1 .. 0]` cut into pieces of `chunk`: a heap list
/// of the numbers, in the interval's (descending) order.
fn chunk_list<'s>(
    s: &mut Scope<'s>,
    cons: DescId,
    n: u64,
    chunk: u64,
    i: u64,
) -> Result<Handle<'s>> {
    let first = n - i * chunk;
    let last = first.saturating_sub(chunk - 1);
    let list = s.slot(Handle::NIL);
    // Consing from the far end leaves the list in interval order.
    for k in last..=first {
        s.alloc_mixed_to(list, cons, &[Handle::int(k as i64), list.get()], &[])?;
    }
    Ok(list.get())
}

/// `(sum . map euler)` of one chunk list.
fn chunk_sum(s: &mut Scope<'_>, cons: DescId, chunk: Handle<'_>) -> Result<i64> {
    let mut sum = 0;
    let cell = s.slot(chunk);
    while s.view(cell.get()).is_object() {
        let k = s.view(cell.get()).field(0).as_int().expect("a number") as u64;
        sum += euler(s, cons, k)?;
        // The tail's handle is popped with the step's scope; `cell` keeps it.
        s.scope(|s| s.field(cell.get(), 1).map(|next| s.assign(cell, next)))?;
    }
    Ok(sum)
}

/// The cons descriptor of a PE group's runtimes: their first (`setup`).
const CONS: DescId = DescId::nth_registered(0);

/// What every PE registers before the program runs.
fn setup(rt: &Runtime) -> Result<()> {
    register_as(rt, CONS, Descriptor::mixed("int-cons", 2, &[0, 1])?)
}

/// The PE program's exportable function: the sum over a range of chunks.
static EXPORTS: ExportTable<1> = ExportTable::new([("sumeuler.chunks", chunks_task)]);

/// Σ φ over chunks `lo .. hi` of `[n, n-1 .. 0]` cut into pieces of
/// `chunk`: one chunk is built and summed here; more are halved, the
/// right half forked (the first chunks, the costliest, stay left).
fn chunks_sum(s: &mut Scope<'_>, n: u64, chunk: u64, lo: u64, hi: u64) -> Result<i64> {
    if hi - lo == 1 {
        return s.scope(|s| {
            let list = chunk_list(s, CONS, n, chunk, lo)?;
            chunk_sum(s, CONS, list)
        });
    }
    let mid = lo + (hi - lo) / 2;
    let args = [n, chunk, mid, hi].map(|x| Handle::int(x as i64));
    s.scope(|s| {
        let (a, b) = s.par2_export(EXPORTS.export(0), &args, move |s, _| {
            chunks_sum(s, n, chunk, lo, mid).map(Handle::int)
        })?;
        Ok(s.as_int(a).expect("a sum") + s.as_int(b).expect("a sum"))
    })
}

/// [`chunks_sum`] from `args` = `[n, chunk, lo, hi]`.
fn chunks_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let [n, chunk, lo, hi] = task_ints(s, args, "sumeuler.chunks: (n, chunk, lo, hi)")?;
    if chunk == 0 || lo >= hi || hi > (n + 1).div_ceil(chunk) {
        return Err(numagc::Error::misuse(format!(
            "sumeuler.chunks: chunks {lo}..{hi} of [0..{n}] by {chunk}"
        )));
    }
    chunks_sum(s, n, chunk, lo, hi).map(Handle::int)
}

/// The output line and the check of a run.
fn outcome(n: u64, chunk: u64, chunks: usize, got: i64) -> Outcome {
    let out = format!("sumEuler [0..{n}] = {got} ({chunks} chunks of {chunk})\n");
    Outcome::new(out, move || {
        let want = sum_phi_sieve(n as usize);
        if got as u64 == want {
            Ok(())
        } else {
            Err(format!("sumEuler [0..{n}] = {got}, expected {want}"))
        }
    })
}

/// Σ φ(k) for k in 0..=n from a totient sieve (the independent answer).
fn sum_phi_sieve(n: usize) -> u64 {
    let mut phi: Vec<u64> = (0..=n as u64).collect();
    for p in 2..=n {
        if phi[p] == p as u64 {
            for m in (p..=n).step_by(p) {
                phi[m] -= phi[m] / p as u64;
            }
        }
    }
    // φ(1) = 1 by the sieve, but `euler 1 = length []` = 0 in the original.
    phi.iter().skip(2).sum()
}

impl Benchmark for SumEuler {
    fn name(&self) -> &'static str {
        "sumeuler"
    }
    fn source(&self) -> &'static str {
        "gumsmp-shared-distributed-heaps.txt §3.1"
    }
    fn description(&self) -> &'static str {
        "sum of naive Euler totients over an interval cut into chunks of heap lists, mapped in parallel"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "n",
                help: "the interval is [n, n-1 .. 0]",
                quick: 5000,
                paper: 20000,
                scale: 24_000,
                min: 1,
                max: 1_000_000,
            },
            Param {
                name: "chunk",
                help: "numbers per chunk (one parallel task each)",
                quick: 100,
                paper: 100,
                scale: 100,
                min: 1,
                max: 1_000_000,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, chunk) = (p.get("n") as u64, p.get("chunk") as u64);
        let chunks = (n + 1).div_ceil(chunk) as usize;
        let cons = rt
            .register(Descriptor::mixed("int-cons", 2, &[0, 1]).map_err(rt_err)?)
            .map_err(rt_err)?;
        let got = rt
            .run_on(0, move |s| -> Result<i64> {
                let interval = s.tabulate(&[], 0, chunks, 1, move |s, _, i| {
                    chunk_list(s, cons, n, chunk, i as u64)
                })?;
                let sums = s.par_map(&[], interval, 1, move |s, _, c| {
                    chunk_sum(s, cons, c).map(Handle::int)
                })?;
                let total = s.seq_reduce(&[], sums, 16, Handle::int(0), |s, _, x, y| {
                    Ok(Handle::int(
                        s.as_int(x).expect("a sum") + s.as_int(y).expect("a sum"),
                    ))
                })?;
                Ok(s.as_int(total).expect("a sum"))
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(n, chunk, chunks, got))
    }

    fn pe_program(&self) -> Option<PeProgram> {
        Some(EXPORTS.program(setup))
    }

    fn run_pes(&self, g: &PeGroup, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, chunk) = (p.get("n") as u64, p.get("chunk") as u64);
        let chunks = (n + 1).div_ceil(chunk) as usize;
        let got = g
            .run(move |s| chunks_sum(s, n, chunk, 0, chunks as u64))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(n, chunk, chunks, got))
    }
}
