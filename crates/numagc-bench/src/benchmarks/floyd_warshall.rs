//! floyd_warshall (`multicore-ocaml-gc.txt` §6.2; Sandmark's
//! `floyd_warshall_multicore`): all-pairs shortest paths on a dense
//! weighted digraph of `n` vertices. Sandmark updates the distance matrix
//! in place, one `parallel_for` over the rows per intermediate vertex `k`;
//! here the matrix is immutable, a balanced tree of rows ([`row_tree`]),
//! and each step builds a new matrix from the previous one, its rows in
//! parallel ([`row_tree::map`], which forks with [`Scope::par2`] above
//! `grain` rows). A row whose distance to `k` is infinite cannot improve,
//! so it is shared with the new matrix instead of rebuilt (Sandmark skips
//! it too). Each step allocates a matrix, n³ words in all, and the rows
//! live for one step, so most of them survive the nursery.
//!
//! A row is a raw heap object of `n` distances (i64), "no path" being
//! [`INFINITY`]. The graph, as in Sandmark, has each edge with probability
//! 1/2, with a weight in 1..=100 (Sandmark's 0..100 shifted by one: with
//! hundreds of edges per vertex, zero-weight edges would make almost every
//! distance 0); in addition every vertex whose hash is 0 modulo 32 has no
//! incoming edge, so some pairs are unreachable. Sandmark's sizes are
//! arbitrary; the paper's size here is `n` = 1024 (about 1.6 s on one
//! vproc of the 2-core development machine; `--n 1290` doubles the work).
//!
//! Output: the sum of the finite distances and the number of unreachable
//! pairs. Check: a plain sequential Floyd-Warshall on a `Vec<i64>`, every
//! distance compared exactly.

use super::row_tree;
use crate::mix;
use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{Handle, Runtime, Scope};
use std::cell::RefCell;

/// "No path": large, and twice it does not overflow.
const INFINITY: i64 = i64::MAX / 4;

pub struct FloydWarshall;

/// The weight of edge `i -> j` of the input graph, `INFINITY` when absent.
fn edge(seed: u64, n: usize, i: usize, j: usize) -> i64 {
    if i == j {
        return 0;
    }
    if mix(seed ^ 0x5eed_0000 ^ j as u64).is_multiple_of(32) {
        return INFINITY; // a vertex nobody reaches
    }
    let r = mix(seed.wrapping_mul(0x1_0000_0001) ^ (i * n + j) as u64);
    if r & 1 == 0 {
        INFINITY
    } else {
        1 + ((r >> 1) % 100) as i64
    }
}

thread_local! {
    /// The row being computed: raw allocation cannot read other objects
    /// while it fills the new one, so a row is computed here and copied.
    static SCRATCH: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// `row` relaxed through vertex `k` (whose row is `pivot`): a new row,
/// or `row` itself when `k` is unreachable from `i`.
fn relax<'s>(
    s: &mut Scope<'s>,
    row: Handle<'s>,
    pivot: Handle<'_>,
    k: usize,
) -> numagc::Result<Handle<'s>> {
    SCRATCH.with(|scratch| {
        let mut new = scratch.borrow_mut();
        {
            let old = s.view(row).raw_words().expect("a row is a raw object");
            let through = old[k] as i64;
            if through >= INFINITY {
                return Ok(row);
            }
            let via = s.view(pivot).raw_words().expect("a row is a raw object");
            new.clear();
            new.extend(
                old.iter()
                    .zip(via)
                    .map(|(&d, &dk)| (d as i64).min(through + dk as i64) as u64),
            );
        }
        s.alloc_raw(&new)
    })
}

/// Sequential Floyd-Warshall on a flat matrix (the independent answer).
fn reference(seed: u64, n: usize) -> Vec<i64> {
    let mut d: Vec<i64> = (0..n * n).map(|x| edge(seed, n, x / n, x % n)).collect();
    for k in 0..n {
        for i in 0..n {
            let dik = d[i * n + k];
            if dik == INFINITY {
                continue;
            }
            for j in 0..n {
                let alt = dik + d[k * n + j];
                if alt < d[i * n + j] {
                    d[i * n + j] = alt;
                }
            }
        }
    }
    d
}

fn summary(distances: impl Iterator<Item = i64>) -> (i64, u64) {
    let (mut sum, mut unreachable) = (0i64, 0u64);
    for d in distances {
        if d >= INFINITY {
            unreachable += 1;
        } else {
            sum += d;
        }
    }
    (sum, unreachable)
}

impl Benchmark for FloydWarshall {
    fn name(&self) -> &'static str {
        "floyd_warshall"
    }
    fn source(&self) -> &'static str {
        "multicore-ocaml-gc.txt §6.2"
    }
    fn description(&self) -> &'static str {
        "all-pairs shortest paths; each step builds a new matrix of rows in parallel"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "n",
                help: "number of vertices",
                quick: 448,
                paper: 1024,
                scale: 1_600,
                min: 2,
                max: 1800,
            },
            Param {
                name: "grain",
                help: "rows relaxed sequentially by one task",
                quick: 4,
                paper: 8,
                scale: 8,
                min: 1,
                max: 256,
            },
            Param {
                name: "seed",
                help: "seed of the random graph",
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
        let distances = rt
            .run_on(0, move |s| -> numagc::Result<Vec<i64>> {
                let input_row = row_tree::make_fn(move |s, i| {
                    s.alloc_raw_with(n, |row| {
                        row.iter_mut()
                            .enumerate()
                            .for_each(|(j, w)| *w = edge(seed, n, i, j) as u64)
                    })
                });
                let graph = row_tree::build(s, node, 0, n, grain, &input_row)?;
                let matrix = s.slot(graph);
                let relax_row = row_tree::map_fn(|s, env, row, _| {
                    let k = s.as_int(env[1]).expect("k") as usize;
                    relax(s, row, env[0], k)
                });
                for k in 0..n {
                    s.scope(|s| -> numagc::Result<()> {
                        let pivot = row_tree::nth_row(s, node, matrix.get(), k);
                        let next = row_tree::map(
                            s,
                            node,
                            matrix.get(),
                            &[pivot, Handle::int(k as i64)],
                            0,
                            grain,
                            &relax_row,
                        )?;
                        s.assign(matrix, next);
                        Ok(())
                    })?;
                }
                let mut flat = Vec::with_capacity(n * n);
                row_tree::for_each_row(s.view(matrix.get()), node, &mut |row| {
                    flat.extend(row.iter().map(|&w| w as i64))
                });
                Ok(flat)
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let (sum, unreachable) = summary(distances.iter().copied());
        let output = format!("floyd_warshall {n} vertices: sum of distances {sum}, unreachable pairs {unreachable}\n");
        Ok(Outcome::new(output, move || {
            let want = reference(seed, n);
            if distances.len() != want.len() {
                return Err(format!(
                    "{} distances, expected {}",
                    distances.len(),
                    want.len()
                ));
            }
            if let Some(x) = (0..want.len()).find(|&x| distances[x] != want[x]) {
                return Err(format!(
                    "distance {} -> {}: {}, expected {}",
                    x / n,
                    x % n,
                    distances[x],
                    want[x]
                ));
            }
            let (want_sum, want_unreachable) = summary(want.iter().copied());
            if (sum, unreachable) != (want_sum, want_unreachable) {
                return Err(format!(
                    "summary ({sum}, {unreachable}), expected ({want_sum}, {want_unreachable})"
                ));
            }
            Ok(())
        }))
    }
}
