//! matrix_multiplication (`multicore-ocaml-gc.txt` §6.2; Sandmark's
//! `multicore-numerical/matrix_multiplication_multicore.ml`): the product
//! of two n × n matrices of integers in [0, 100) (`Random.int 100`), with
//! n = 1024 as in Sandmark, into a result matrix made with
//! `Array.make_matrix n n 0` whose rows the workers fill in place, each
//! worker a range of rows, each entry `res.(i).(j) <- Σ_k x.(i).(k) *
//! y.(k).(j)`, summed over k in order as in the original.
//!
//! The original's matrices are OCaml `int array array`s, not float arrays:
//! the result is kept as they are, a mutable array (`alloc_array`, in the
//! global heap) of mutable rows of immediate integers, filled with `set`.
//! The inputs are only read, so they are immutable sequences (built with
//! `tabulate`) of raw objects of integer words, the flat layout an OCaml
//! int array has. Entries come from a hash of (seed, matrix, row, column)
//! in place of OCaml's `Random`, so any vproc builds the same matrices.
//!
//! Parallelism: `par_reduce` over the rows in ranges of `grain` rows (the
//! original splits the rows among its domains; work stealing balances
//! them here). A task computes its rows together, column by column, where
//! the original finishes one row before the next: each entry is the same
//! sum, but the column of y that an entry reads (one word from each of n
//! rows) is then reused by the task's other rows while it is in cache.
//! Row by row, every row streams all of y (8 MiB at n = 1024) through the
//! caches; two vprocs doing so contend for the shared L3, and their CPU
//! time grew by 30 % over one vproc's (measured; tiled, it does not grow).
//! The entries are computed while views of the inputs are held, into a
//! buffer, then stored into the result rows (a store may promote, so it
//! cannot run while a view is held).
//!
//! Output: the sum and the trace of the result, and an order-dependent
//! checksum of all its entries (`acc * 1000003 + x`, wrapping). Check: a
//! plain-Rust product over row-major `Vec`s in i, k, j order (a different
//! code path), compared exactly on the sum, the trace, the checksum and a
//! sample of entries.

use crate::mix;
use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{Handle, Result, Runtime, Scope};
use std::fmt::Write;

pub struct MatrixMultiplication;

/// Entry (`row`, `col`) of input matrix `which` (0: x, 1: y), in [0, 100).
fn entry(seed: u64, which: u64, row: usize, col: usize) -> i64 {
    (mix(mix(mix(seed ^ which) ^ row as u64) ^ col as u64) % 100) as i64
}

/// Entries compared one by one in the check.
fn samples(n: usize) -> Vec<(usize, usize)> {
    (0..8)
        .map(|k| (mix(k) as usize % n, mix(k + 100) as usize % n))
        .collect()
}

/// What the run reports about the result.
#[derive(Debug, PartialEq)]
struct Summary {
    sum: i64,
    trace: i64,
    checksum: i64,
    samples: Vec<i64>,
}

fn summary_of(entry: impl Fn(usize, usize) -> i64, n: usize) -> Summary {
    let (mut sum, mut trace, mut checksum) = (0i64, 0i64, 0i64);
    for i in 0..n {
        for j in 0..n {
            let x = entry(i, j);
            sum += x;
            checksum = checksum.wrapping_mul(1_000_003).wrapping_add(x);
        }
        trace += entry(i, i);
    }
    Summary {
        sum,
        trace,
        checksum,
        samples: samples(n).into_iter().map(|(i, j)| entry(i, j)).collect(),
    }
}

/// An input matrix as a sequence of `n` raw rows of integer words.
fn input<'s>(
    s: &mut Scope<'s>,
    seed: u64,
    which: u64,
    n: usize,
    grain: usize,
) -> Result<Handle<'s>> {
    s.tabulate(&[], 0, n, grain, move |s, _, i| {
        s.alloc_raw_with(n, |words| {
            for (j, w) in words.iter_mut().enumerate() {
                *w = entry(seed, which, i, j) as u64;
            }
        })
    })
}

/// Fills rows `lo..hi` of the mutable result `env[2]` with the products
/// of those rows of `env[0]` and the matrix `env[1]`.
fn fill_rows(s: &mut Scope<'_>, env: &[Handle<'_>], lo: usize, hi: usize, n: usize) -> Result<()> {
    // The task's entries, row-major, computed while views are held.
    let mut entries = vec![0i64; (hi - lo) * n];
    s.scope(|s| -> Result<()> {
        let x_handles = (lo..hi)
            .map(|i| s.seq_get(env[0], i))
            .collect::<Result<Vec<_>>>()?;
        let x_rows: Vec<&[u64]> = x_handles
            .iter()
            .map(|&h| s.view(h).raw_words().expect("a row of x is a raw object"))
            .collect();
        let mut y_rows = Vec::with_capacity(n);
        s.seq_for_each(env[1], |r| {
            y_rows.push(r.raw_words().expect("a row of y is a raw object"))
        })?;
        for j in 0..n {
            for (r, x_row) in x_rows.iter().enumerate() {
                let mut w = 0i64;
                for (&x, y_row) in x_row.iter().zip(&y_rows) {
                    w += x as i64 * y_row[j] as i64;
                }
                entries[r * n + j] = w;
            }
        }
        Ok(())
    })?;
    for (i, row) in (lo..hi).zip(entries.chunks_exact(n)) {
        s.scope(|s| -> Result<()> {
            let res_row = s.field(env[2], i)?;
            for (j, &w) in row.iter().enumerate() {
                s.set(res_row, j, Handle::int(w))?;
            }
            Ok(())
        })?;
    }
    Ok(())
}

impl Benchmark for MatrixMultiplication {
    fn name(&self) -> &'static str {
        "matrix_multiplication"
    }
    fn source(&self) -> &'static str {
        "multicore-ocaml-gc.txt §6.2"
    }
    fn description(&self) -> &'static str {
        "integer n x n matrix product into a mutable matrix whose rows are filled in parallel"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "n",
                help: "rows and columns of each matrix",
                quick: 400,
                paper: 1024,
                scale: 1_600,
                min: 1,
                max: 4096,
            },
            Param {
                name: "grain",
                help: "rows of the result per task",
                quick: 4,
                paper: 8,
                scale: 8,
                min: 1,
                max: 4096,
            },
            Param {
                name: "seed",
                help: "seed of the matrices' entries",
                quick: 42,
                paper: 42,
                scale: 42,
                min: 0,
                max: i64::MAX,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, grain, seed) = (p.usize("n"), p.usize("grain"), p.get("seed") as u64);
        let got = rt
            .run_on(0, move |s| -> Result<Summary> {
                let x = input(s, seed, 0, n, grain)?;
                let y = input(s, seed, 1, n, grain)?;
                // Array.make_matrix n n 0: a fresh mutable row per index.
                let res = s.alloc_array(n, Handle::NIL)?;
                for i in 0..n {
                    s.scope(|s| {
                        let row = s.alloc_array(n, Handle::int(0))?;
                        s.set(res, i, row)
                    })?;
                }
                s.par_reduce(
                    &[x, y, res],
                    0,
                    n,
                    grain,
                    move |s, env, lo, hi| fill_rows(s, env, lo, hi, n).map(|()| Handle::NIL),
                    |_, _, _, _| Ok(Handle::NIL),
                )?;
                let res = s.view(res);
                Ok(summary_of(
                    |i, j| res.field(i).field(j).as_int().expect("an integer entry"),
                    n,
                ))
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let mut out = String::new();
        writeln!(
            out,
            "matrix_multiplication {n}: sum {}, trace {}, checksum {}",
            got.sum, got.trace, got.checksum
        )
        .unwrap();

        Ok(Outcome::new(out, move || {
            let x: Vec<i64> = (0..n * n).map(|v| entry(seed, 0, v / n, v % n)).collect();
            let y: Vec<i64> = (0..n * n).map(|v| entry(seed, 1, v / n, v % n)).collect();
            let mut z = vec![0i64; n * n];
            for i in 0..n {
                for k in 0..n {
                    let xik = x[i * n + k];
                    for j in 0..n {
                        z[i * n + j] += xik * y[k * n + j];
                    }
                }
            }
            let want = summary_of(|i, j| z[i * n + j], n);
            if got == want {
                Ok(())
            } else {
                Err(format!("got {got:?}, expected {want:?}"))
            }
        }))
    }
}
