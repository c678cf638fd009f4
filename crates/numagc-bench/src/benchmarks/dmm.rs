//! DMM (`manticore-numa-gc.md` §4.1): dense-matrix × dense-matrix
//! multiplication of two n × n matrices of doubles (600 × 600 in the
//! paper), written as Manticore's `dense-matrix-multiply.pml`: a matrix is
//! a sequence of vectors, and the product maps over the rows of the first
//! matrix and, inside, over the vectors of the second, each entry the dot
//! product of two stored vectors.
//!
//! Representation: a matrix is a numagc sequence (a rope of vectors, built
//! with [`Scope::tabulate`]) of raw objects of n doubles. The first matrix
//! A is stored by rows; the second, B, by columns, which is what the PML
//! program's inner map over the vectors of its second argument reads (PML
//! computes `M · Nᵀ` of two row-stored matrices; storing B by columns makes
//! the same computation the ordinary product `A · B`). Entries are uniform
//! in [0, 1000) like PML's `randDouble (0.0, 1000.0)`, from a hash of
//! (seed, matrix, row, column) so that any vproc builds the same matrix.
//!
//! Parallelism: the inputs and the result are built with `tabulate` over
//! rows (columns for B) in pieces of `grain` rows, split with `par2` and
//! stolen by idle vprocs. A result row is computed while views of the
//! inputs are held (no allocation may happen then, since a collection
//! could move them), into a buffer of n doubles that is then copied into
//! the row's new raw object.
//!
//! Output: the sum of the entries of C and its trace. Check: a plain-Rust
//! triple loop over row-major `Vec`s (a different code path) computes C;
//! the sum, the trace, a weighted sum of all entries and a sample of
//! entries must agree within a relative tolerance.

use crate::mix;
use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{Handle, Result, Runtime, Scope};
use std::fmt::Write;

pub struct Dmm;

/// Entry (`row`, `col`) of input matrix `which` (0: A, 1: B), in [0, 1000).
fn entry(seed: u64, which: u64, row: usize, col: usize) -> f64 {
    let h = mix(mix(mix(seed ^ which) ^ row as u64) ^ col as u64);
    (h >> 11) as f64 / (1u64 << 53) as f64 * 1000.0
}

/// The weight of entry (i, j) in the check's weighted sum, in [0, 1).
fn weight(i: usize, j: usize) -> f64 {
    (mix((i as u64) << 32 | j as u64) >> 11) as f64 / (1u64 << 53) as f64
}

/// Entries compared one by one in the check.
fn samples(n: usize) -> Vec<(usize, usize)> {
    (0..8)
        .map(|k| (mix(k) as usize % n, mix(k + 100) as usize % n))
        .collect()
}

fn dot(a: &[u64], b: &[u64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| f64::from_bits(x) * f64::from_bits(y))
        .sum()
}

/// What the run reports about C.
struct Summary {
    sum: f64,
    trace: f64,
    weighted: f64,
    samples: Vec<f64>,
}

/// The product of the sequence of rows `a` and the sequence of columns
/// `b_cols`, as a sequence of rows built in parallel.
fn multiply<'s>(
    s: &mut Scope<'s>,
    a: Handle<'_>,
    b_cols: Handle<'_>,
    n: usize,
    grain: usize,
) -> Result<Handle<'s>> {
    s.tabulate(&[a, b_cols], 0, n, grain, move |s, env, i| {
        let row_handle = s.seq_get(env[0], i)?;
        let mut row = Vec::with_capacity(n);
        {
            let a_row = s
                .view(row_handle)
                .raw_words()
                .expect("a row of A is a raw object");
            s.seq_for_each(env[1], |col| {
                row.push(dot(
                    a_row,
                    col.raw_words().expect("a column of B is a raw object"),
                ))
            })?;
        }
        s.alloc_f64s(&row)
    })
}

/// A matrix of `entry(seed, which, ..)` as a sequence of `n` raw vectors:
/// vector `v` holds row `v` when `by_rows`, else column `v`.
fn matrix<'s>(
    s: &mut Scope<'s>,
    seed: u64,
    which: u64,
    n: usize,
    by_rows: bool,
    grain: usize,
) -> Result<Handle<'s>> {
    s.tabulate(&[], 0, n, grain, move |s, _, v| {
        s.alloc_raw_with(n, |words| {
            for (k, w) in words.iter_mut().enumerate() {
                let (row, col) = if by_rows { (v, k) } else { (k, v) };
                *w = entry(seed, which, row, col).to_bits();
            }
        })
    })
}

fn summarise(s: &Scope<'_>, c: Handle<'_>, n: usize) -> Result<Summary> {
    let (mut sum, mut trace, mut weighted, mut i) = (0.0, 0.0, 0.0, 0);
    s.seq_for_each(c, |row| {
        for j in 0..n {
            let x = row.f64(j);
            sum += x;
            weighted += weight(i, j) * x;
        }
        trace += row.f64(i);
        i += 1;
    })?;
    let mut picked = Vec::new();
    for (i, j) in samples(n) {
        let row = s.seq_get(c, i)?;
        picked.push(s.view(row).f64(j));
    }
    Ok(Summary {
        sum,
        trace,
        weighted,
        samples: picked,
    })
}

fn close(what: &str, got: f64, want: f64, tolerance: f64) -> std::result::Result<(), String> {
    if (got - want).abs() <= tolerance * want.abs().max(1.0) {
        Ok(())
    } else {
        Err(format!("{what}: got {got}, expected {want}"))
    }
}

impl Benchmark for Dmm {
    fn name(&self) -> &'static str {
        "dmm"
    }
    fn source(&self) -> &'static str {
        "manticore-numa-gc.md §4.1"
    }
    fn description(&self) -> &'static str {
        "dense n x n matrix product, rows of the result built in parallel, each entry a dot product"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "n",
                help: "rows and columns of each matrix",
                quick: 400,
                paper: 600,
                scale: 2_300,
                min: 1,
                max: 4000,
            },
            Param {
                name: "grain",
                help: "rows of the result per task",
                quick: 4,
                paper: 4,
                scale: 4,
                min: 1,
                max: 4000,
            },
            Param {
                name: "seed",
                help: "seed of the matrices' entries",
                quick: 1,
                paper: 1,
                scale: 1,
                min: 0,
                max: i64::MAX,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, grain, seed) = (p.usize("n"), p.usize("grain"), p.get("seed") as u64);
        let summary = rt
            .run_on(0, move |s| {
                let a = matrix(s, seed, 0, n, true, grain)?;
                let b_cols = matrix(s, seed, 1, n, false, grain)?;
                let c = multiply(s, a, b_cols, n, grain)?;
                summarise(s, c, n)
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let mut out = String::new();
        writeln!(
            out,
            "dmm {n}x{n}: sum {:.6e}, trace {:.6e}",
            summary.sum, summary.trace
        )
        .unwrap();

        Ok(Outcome::new(out, move || {
            // Row-major A, B and C = A · B by the textbook triple loop.
            let a: Vec<f64> = (0..n * n).map(|x| entry(seed, 0, x / n, x % n)).collect();
            let b: Vec<f64> = (0..n * n).map(|x| entry(seed, 1, x / n, x % n)).collect();
            let mut c = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    let mut acc = 0.0;
                    for k in 0..n {
                        acc += a[i * n + k] * b[k * n + j];
                    }
                    c[i * n + j] = acc;
                }
            }
            let sum: f64 = c.iter().sum();
            let trace: f64 = (0..n).map(|i| c[i * n + i]).sum();
            let weighted: f64 = (0..n * n).map(|x| weight(x / n, x % n) * c[x]).sum();
            close("sum", summary.sum, sum, 1e-10)?;
            close("trace", summary.trace, trace, 1e-10)?;
            close("weighted sum", summary.weighted, weighted, 1e-10)?;
            for ((i, j), got) in samples(n).into_iter().zip(&summary.samples) {
                close(&format!("C[{i}][{j}]"), *got, c[i * n + j], 1e-12)?;
            }
            Ok(())
        }))
    }
}
