//! LU_decomposition (`multicore-ocaml-gc.txt` §6.2; Sandmark's
//! `LU_decomposition_multicore`): the Doolittle LU decomposition without
//! pivoting of an `n`×`n` float matrix, then the matrices L (unit lower
//! triangular) and U (upper triangular) built from it.
//!
//! Sandmark updates one flat array in place, one `parallel_for` over the
//! rows below `k` per step `k`. Here rows are immutable raw heap objects of
//! `n` f64, and the matrix is split into the finished rows (a list) and the
//! trailing rows `k..n` (a balanced tree of rows, [`row_tree`]). Step `k`
//! takes the pivot row `k` off the trailing rows and rebuilds every row
//! below it, in parallel ([`row_tree::map`], which forks with
//! [`Scope::par2`] above `grain` rows): the new row has its multiplier in
//! column `k` (the L part, stored in place as Sandmark does), columns
//! `k+1..` eliminated and columns `..k` copied. The program thus allocates
//! about n³/2 words, as the OCaml version's large GC numbers in the paper's
//! table 1 suggest, and most rows live for one step: they survive the
//! nursery. L and U are then built row by row from the finished rows, in
//! parallel the same way.
//!
//! The input: Sandmark's entries are uniform in [1, 101); here the diagonal
//! gets `101·n` added so that the matrix is diagonally dominant and the
//! decomposition without pivoting is stable. The paper's size is Sandmark's
//! customary order of magnitude (`n` = 1024; Sandmark's default is 1200),
//! about 0.7 s on one vproc of the 2-core development machine.
//!
//! Output: checksums (sums of all entries) of L and U. Check: a plain
//! in-place LU on a `Vec<f64>`, compared entry by entry with a relative
//! tolerance, and ‖L·U − A‖ on a sample of entries.

use super::row_tree;
use crate::mix;
use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{Descriptor, Handle, Runtime, Scope};
use std::cell::RefCell;

pub struct LuDecomposition;

/// Entry `(i, j)` of the input matrix A.
fn entry(seed: u64, n: usize, i: usize, j: usize) -> f64 {
    let unit = (mix(seed.wrapping_mul(0x1_0000_0001) ^ (i * n + j) as u64) >> 11) as f64
        / (1u64 << 53) as f64;
    let x = 1.0 + 100.0 * unit;
    if i == j {
        x + 101.0 * n as f64
    } else {
        x
    }
}

thread_local! {
    /// The row being computed: raw allocation cannot read other objects
    /// while it fills the new one, so a row is computed here and copied.
    static SCRATCH: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

/// A new row: the entries of `row`, changed by `change`, which also gets
/// the words of `other` (`NIL`: none). The row is computed in a per-thread
/// scratch buffer and copied, since raw allocation cannot read other
/// objects while it fills the new one.
fn derive_row<'s>(
    s: &mut Scope<'s>,
    row: Handle<'_>,
    other: Handle<'_>,
    change: impl FnOnce(&mut [f64], &[u64]),
) -> numagc::Result<Handle<'s>> {
    SCRATCH.with(|scratch| {
        let mut new = scratch.borrow_mut();
        new.clear();
        new.extend(
            s.view(row)
                .raw_words()
                .expect("a row is a raw object")
                .iter()
                .map(|&w| f64::from_bits(w)),
        );
        change(&mut new, s.view(other).raw_words().unwrap_or(&[]));
        s.alloc_f64s(&new)
    })
}

/// Row `row` after step `k` with pivot row `pivot`: the multiplier in
/// column `k`, the columns after `k` eliminated, those before kept.
fn eliminate<'s>(
    s: &mut Scope<'s>,
    row: Handle<'_>,
    pivot: Handle<'_>,
    k: usize,
) -> numagc::Result<Handle<'s>> {
    derive_row(s, row, pivot, |new, pivot| {
        let factor = new[k] / f64::from_bits(pivot[k]);
        new[k] = factor;
        for (x, &p) in new[k + 1..].iter_mut().zip(&pivot[k + 1..]) {
            *x -= factor * f64::from_bits(p);
        }
    })
}

/// Plain in-place Doolittle LU on a flat matrix (the independent answer):
/// L below the diagonal (unit diagonal implied), U on and above it.
fn reference(a: &[f64], n: usize) -> Vec<f64> {
    let mut lu = a.to_vec();
    for k in 0..n {
        for i in k + 1..n {
            let f = lu[i * n + k] / lu[k * n + k];
            lu[i * n + k] = f;
            for j in k + 1..n {
                lu[i * n + j] -= f * lu[k * n + j];
            }
        }
    }
    lu
}

/// Compares L and U with the reference decomposition and L·U with A.
fn check(seed: u64, n: usize, l: &[f64], u: &[f64]) -> Result<(), String> {
    if l.len() != n * n || u.len() != n * n {
        return Err(format!(
            "L has {} and U {} entries, expected {}",
            l.len(),
            u.len(),
            n * n
        ));
    }
    let a: Vec<f64> = (0..n * n).map(|x| entry(seed, n, x / n, x % n)).collect();
    let lu = reference(&a, n);
    let close = |got: f64, want: f64, scale: f64| (got - want).abs() <= 1e-9 * scale.max(1.0);
    for i in 0..n {
        for j in 0..n {
            let x = i * n + j;
            let want_l = if j < i {
                lu[x]
            } else if j == i {
                1.0
            } else {
                0.0
            };
            let want_u = if j >= i { lu[x] } else { 0.0 };
            if !close(l[x], want_l, want_l.abs()) {
                return Err(format!("L[{i}][{j}] = {}, expected {want_l}", l[x]));
            }
            if !close(u[x], want_u, want_u.abs()) {
                return Err(format!("U[{i}][{j}] = {}, expected {want_u}", u[x]));
            }
        }
    }
    // (L·U)[i][j] against A[i][j] on a sample of entries (all for small n).
    let mut state = seed ^ 0x1u64;
    for t in 0..(n * n).min(4096) {
        let (i, j) = if n * n <= 4096 {
            (t / n, t % n)
        } else {
            state = mix(state);
            (
                (state % n as u64) as usize,
                ((state >> 32) % n as u64) as usize,
            )
        };
        let terms = (0..n).map(|m| l[i * n + m] * u[m * n + j]);
        let scale: f64 = terms.clone().map(f64::abs).sum();
        let product: f64 = terms.sum();
        if !close(product, a[i * n + j], scale) {
            return Err(format!(
                "(L·U)[{i}][{j}] = {product}, A[{i}][{j}] = {}",
                a[i * n + j]
            ));
        }
    }
    Ok(())
}

impl Benchmark for LuDecomposition {
    fn name(&self) -> &'static str {
        "lu_decomposition"
    }
    fn source(&self) -> &'static str {
        "multicore-ocaml-gc.txt §6.2"
    }
    fn description(&self) -> &'static str {
        "LU decomposition without pivoting; each step rebuilds the trailing rows in parallel"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "n",
                help: "order of the matrix",
                quick: 576,
                paper: 1024,
                scale: 1_800,
                min: 2,
                max: 1800,
            },
            Param {
                name: "grain",
                help: "rows eliminated sequentially by one task",
                quick: 4,
                paper: 8,
                scale: 8,
                min: 1,
                max: 256,
            },
            Param {
                name: "seed",
                help: "seed of the random matrix",
                quick: 1,
                paper: 1,
                scale: 1,
                min: 0,
                max: i64::MAX,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> Result<Outcome, String> {
        let (n, grain, seed) = (p.usize("n"), p.usize("grain"), p.get("seed") as u64);
        let node = row_tree::register(rt)?;
        let cons = rt
            .register(Descriptor::mixed("row-list", 2, &[0, 1]).map_err(rt_err)?)
            .map_err(rt_err)?;
        let (l, u) = rt
            .run_on(0, move |s| -> numagc::Result<(Vec<f64>, Vec<f64>)> {
                let input_row = row_tree::make_fn(move |s, i| {
                    s.alloc_raw_with(n, |row| {
                        row.iter_mut()
                            .enumerate()
                            .for_each(|(j, w)| *w = entry(seed, n, i, j).to_bits())
                    })
                });
                let a = row_tree::build(s, node, 0, n, grain, &input_row)?;
                let trailing = s.slot(a);
                let finished = s.slot(Handle::NIL);
                // Row `i` of the trailing rows `k..n` at step `k`; the first
                // is the pivot, which leaves them.
                let step_row = row_tree::map_fn(|s, env, row, i| {
                    if i == 0 {
                        return Ok(Handle::NIL);
                    }
                    let k = s.as_int(env[1]).expect("the step number") as usize;
                    eliminate(s, row, env[0], k)
                });
                for k in 0..n {
                    s.scope(|s| -> numagc::Result<()> {
                        let pivot = row_tree::first_row(s, node, trailing.get());
                        let done = s.alloc_mixed(cons, &[pivot, finished.get()], &[])?;
                        s.assign(finished, done);
                        let next = row_tree::map(
                            s,
                            node,
                            trailing.get(),
                            &[pivot, Handle::int(k as i64)],
                            0,
                            grain,
                            &step_row,
                        )?;
                        s.assign(trailing, next);
                        Ok(())
                    })?;
                }
                // The finished rows come last first.
                let mut rows = Vec::with_capacity(n);
                let mut cell = s.view(finished.get());
                while cell.is_object() {
                    rows.push(s.handle(cell.field(0)));
                    cell = cell.field(1);
                }
                rows.reverse();
                let lu = row_tree::from_rows(s, node, &rows)?;
                let lower = row_tree::map_fn(|s, _, row, i| {
                    derive_row(s, row, Handle::NIL, |new, _| {
                        new[i] = 1.0;
                        new[i + 1..].fill(0.0);
                    })
                });
                let upper = row_tree::map_fn(|s, _, row, i| {
                    derive_row(s, row, Handle::NIL, |new, _| new[..i].fill(0.0))
                });
                let l = row_tree::map(s, node, lu, &[], 0, grain, &lower)?;
                let u = row_tree::map(s, node, lu, &[], 0, grain, &upper)?;
                let mut matrices = (Vec::with_capacity(n * n), Vec::with_capacity(n * n));
                row_tree::for_each_row(s.view(l), node, &mut |row| {
                    matrices.0.extend(row.iter().map(|&w| f64::from_bits(w)))
                });
                row_tree::for_each_row(s.view(u), node, &mut |row| {
                    matrices.1.extend(row.iter().map(|&w| f64::from_bits(w)))
                });
                Ok(matrices)
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let (l_sum, u_sum): (f64, f64) = (l.iter().sum(), u.iter().sum());
        let output = format!(
            "LU decomposition of a {n}x{n} matrix: checksum L {l_sum:.6e}, U {u_sum:.6e}\n"
        );
        Ok(Outcome::new(output, move || check(seed, n, &l, &u)))
    }
}
