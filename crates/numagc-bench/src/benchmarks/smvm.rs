//! SMVM (`manticore-numa-gc.md` §4.1): sparse-matrix × dense-vector
//! multiplication, after Manticore's `smvm.pml`: `smvm (sm, v) = map (fn
//! sv => dotp (sv, v)) sm`, where a sparse row `sv` is a sequence of
//! (column, value) pairs and `dotp` sums `x * v!i` over them. The paper's
//! matrix has 1,091,362 non-zeros and its vector 16,614 elements; it was
//! read from a Matrix Market file we do not have, so the matrix here is
//! generated with that shape: 16,614 × 16,614, row lengths that vary
//! around the mean of 65.7 and sum to exactly the requested count, and
//! pseudo-random columns. Values are uniform in [0, 1), the vector's in
//! [0, 10000) as in PML's driver. Everything comes from a hash of the seed
//! and the indices, so any vproc builds the same matrix.
//!
//! Representation: the matrix is a numagc sequence (a rope of vectors,
//! built in parallel with [`Scope::tabulate`]) of rows; a row is one raw
//! object holding its pairs unboxed, `[col0, val0, col1, val1, ...]` (PML
//! boxes each pair; a raw row keeps the benchmark about the sharing of
//! the matrix and vector, not about tuple boxing). The vector is one raw
//! object of doubles (a large object, in the global heap, read by every
//! vproc as in the paper). `dotp` is a fused map and sum over a row (no
//! intermediate sequence of products). The result is a sequence of boxed
//! doubles with the matrix's shape, made by [`Scope::par_map`] over the
//! rows in pieces of `grain` rows (at the paper size, 256: one piece per
//! rope leaf, 65 per product, which is parallelism enough and spares the
//! copying of a leaf's pieces into one vector).
//!
//! One product takes a few milliseconds here, so the run repeats it
//! `iterations` times (each a fresh result; the earlier ones become
//! garbage) and reports on the last one. Output: the sum of the result's
//! entries. Check: a plain-Rust CSR product on `Vec`s built from the same
//! generator; the sum, a weighted sum of all entries and a sample of
//! entries must agree within a relative tolerance.

use crate::mix;
use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{Handle, Result, Runtime, Scope};
use std::fmt::Write;

pub struct Smvm;

fn unit_float(h: u64) -> f64 {
    (h >> 11) as f64 / (1u64 << 53) as f64
}

/// The shape of the generated matrix.
#[derive(Clone, Copy)]
struct Shape {
    seed: u64,
    rows: usize,
    nonzeros: usize,
}

impl Shape {
    /// Non-zeros in rows `0..i`: the even share `i * nonzeros / rows`
    /// moved by a pseudo-random jitter of at most half the mean row
    /// length (none at both ends), so row lengths vary but sum exactly to
    /// `nonzeros` and are never negative.
    fn before_row(self, i: usize) -> usize {
        let even = (i as u128 * self.nonzeros as u128 / self.rows as u128) as usize;
        let reach = self.nonzeros / self.rows / 2;
        if i == 0 || i == self.rows || reach == 0 {
            return even;
        }
        let h = mix(mix(self.seed ^ 0x5eed) ^ i as u64);
        even + (h % (2 * reach as u64 + 1)) as usize - reach
    }

    fn row_len(self, i: usize) -> usize {
        self.before_row(i + 1) - self.before_row(i)
    }

    /// Column and value of the `k`th non-zero of row `i`.
    fn element(self, i: usize, k: usize) -> (usize, f64) {
        let h = mix(mix(mix(self.seed) ^ i as u64) ^ k as u64);
        ((h >> 32) as usize % self.rows, unit_float(mix(h)))
    }

    /// Element `j` of the dense vector.
    fn vector(self, j: usize) -> f64 {
        10000.0 * unit_float(mix(mix(self.seed ^ 0xdead) ^ j as u64))
    }
}

/// The weight of entry `i` in the check's weighted sum, in [0, 1).
fn weight(i: usize) -> f64 {
    unit_float(mix(i as u64 ^ 0xabcd))
}

/// Entries compared one by one in the check.
fn samples(rows: usize) -> Vec<usize> {
    (0..8).map(|k| mix(k) as usize % rows).collect()
}

/// What the run reports about the last product.
struct Summary {
    sum: f64,
    weighted: f64,
    samples: Vec<f64>,
}

/// The sparse matrix: a sequence of raw rows of (column, value) pairs.
fn matrix<'s>(s: &mut Scope<'s>, shape: Shape, grain: usize) -> Result<Handle<'s>> {
    s.tabulate(&[], 0, shape.rows, grain, move |s, _, i| {
        s.alloc_raw_with(2 * shape.row_len(i), |words| {
            for (k, pair) in words.chunks_exact_mut(2).enumerate() {
                let (col, value) = shape.element(i, k);
                pair[0] = col as u64;
                pair[1] = value.to_bits();
            }
        })
    })
}

/// `smvm (sm, v)`: the dot product of every row with `v`, in parallel.
fn smvm<'s>(
    s: &mut Scope<'s>,
    matrix: Handle<'_>,
    vector: Handle<'_>,
    grain: usize,
) -> Result<Handle<'s>> {
    s.par_map(&[vector], matrix, grain, |s, env, row| {
        let dot: f64 = {
            let v = s
                .view(env[0])
                .raw_words()
                .expect("the vector is a raw object");
            let pairs = s
                .view(row)
                .raw_words()
                .expect("a sparse row is a raw object");
            pairs
                .chunks_exact(2)
                .map(|p| f64::from_bits(p[1]) * f64::from_bits(v[p[0] as usize]))
                .sum()
        };
        s.alloc_f64s(&[dot])
    })
}

fn summarise(s: &Scope<'_>, result: Handle<'_>, rows: usize) -> Result<Summary> {
    let (mut sum, mut weighted, mut i) = (0.0, 0.0, 0);
    s.seq_for_each(result, |y| {
        sum += y.f64(0);
        weighted += weight(i) * y.f64(0);
        i += 1;
    })?;
    let mut picked = Vec::new();
    for i in samples(rows) {
        let y = s.seq_get(result, i)?;
        picked.push(s.view(y).f64(0));
    }
    Ok(Summary {
        sum,
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

impl Benchmark for Smvm {
    fn name(&self) -> &'static str {
        "smvm"
    }
    fn source(&self) -> &'static str {
        "manticore-numa-gc.md §4.1"
    }
    fn description(&self) -> &'static str {
        "sparse matrix (sequence of sparse rows) times dense vector, rows in parallel, repeated"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "rows",
                help: "rows and columns of the matrix, length of the vector",
                quick: 2000,
                paper: 16614,
                scale: 131_072,
                min: 1,
                max: 1 << 24,
            },
            Param {
                name: "nonzeros",
                help: "non-zero entries of the matrix",
                quick: 131_400,
                paper: 1_091_362,
                scale: 8_731_000,
                min: 0,
                max: 1 << 30,
            },
            Param {
                name: "iterations",
                help: "products computed (the last one is reported)",
                quick: 200,
                paper: 100,
                scale: 700,
                min: 1,
                max: 100_000,
            },
            Param {
                name: "grain",
                help: "rows per task",
                quick: 64,
                paper: 256,
                scale: 256,
                min: 1,
                max: 1 << 24,
            },
            Param {
                name: "seed",
                help: "seed of the matrix and vector",
                quick: 1,
                paper: 1,
                scale: 1,
                min: 0,
                max: i64::MAX,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let shape = Shape {
            seed: p.get("seed") as u64,
            rows: p.usize("rows"),
            nonzeros: p.usize("nonzeros"),
        };
        let (iterations, grain) = (p.usize("iterations"), p.usize("grain"));
        let summary = rt
            .run_on(0, move |s| -> Result<Summary> {
                let matrix = matrix(s, shape, grain)?;
                let vector = s.alloc_raw_with(shape.rows, |words| {
                    for (j, w) in words.iter_mut().enumerate() {
                        *w = shape.vector(j).to_bits();
                    }
                })?;
                let last = s.slot(Handle::NIL);
                for _ in 0..iterations {
                    s.scope(|s| -> Result<()> {
                        let y = smvm(s, matrix, vector, grain)?;
                        s.assign(last, y);
                        Ok(())
                    })?;
                }
                summarise(s, last.get(), shape.rows)
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let mut out = String::new();
        let (rows, nonzeros) = (shape.rows, shape.nonzeros);
        writeln!(out, "smvm {rows}x{rows}, {nonzeros} non-zeros, {iterations} products: sum of the result {:.9e}", summary.sum).unwrap();

        Ok(Outcome::new(out, move || {
            // Compressed sparse rows on plain vectors, then y = A v.
            let mut row_start = vec![0usize];
            let (mut cols, mut values) =
                (Vec::with_capacity(nonzeros), Vec::with_capacity(nonzeros));
            for i in 0..rows {
                for k in 0..shape.row_len(i) {
                    let (c, v) = shape.element(i, k);
                    cols.push(c);
                    values.push(v);
                }
                row_start.push(cols.len());
            }
            if cols.len() != nonzeros {
                return Err(format!(
                    "the generated matrix has {} non-zeros, expected {nonzeros}",
                    cols.len()
                ));
            }
            let v: Vec<f64> = (0..rows).map(|j| shape.vector(j)).collect();
            let y: Vec<f64> = (0..rows)
                .map(|i| {
                    let mut acc = 0.0;
                    for e in row_start[i]..row_start[i + 1] {
                        acc += values[e] * v[cols[e]];
                    }
                    acc
                })
                .collect();
            close("sum", summary.sum, y.iter().sum(), 1e-10)?;
            close(
                "weighted sum",
                summary.weighted,
                (0..rows).map(|i| weight(i) * y[i]).sum(),
                1e-10,
            )?;
            for (i, got) in samples(rows).into_iter().zip(&summary.samples) {
                close(&format!("y[{i}]"), *got, y[i], 1e-12)?;
            }
            Ok(())
        }))
    }
}
