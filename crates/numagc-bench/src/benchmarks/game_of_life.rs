//! Conway's game of life (`multicore-ocaml-gc.txt` §6.2, Sandmark's
//! `game_of_life_multicore`): an N×N board run for a number of
//! generations. As in the original, cells outside the board count as dead
//! (the original catches the out-of-bounds exception; the board is not a
//! torus).
//!
//! The original swaps two mutable boards; here every generation allocates
//! a new immutable board: a sequence (built by `tabulate`, `grain` rows per
//! task, so the rows of a generation are computed in parallel as the
//! original's `parallel_for` over rows) of raw row objects. A cell is a
//! bit, 64 to a word (a row of N cells is N/64 words). The original's `int
//! array array` has a word per cell; with a new board per generation that
//! would be 64× the allocation, and on two vprocs nearly every board is
//! promoted once (it is the environment of the stolen tasks, and the
//! thief's rows are its result), so the copying would rival the
//! computation (a byte per cell was tried: 1 GB promoted at the paper size
//! against 150 MB with bits, and a speedup of 1.47 against 1.85 at the
//! quick size). The cells are still
//! computed one at a time, as in the original. A new row reads the old rows
//! above, at and below it, and is computed from column sums (a different
//! formulation from the check's).
//!
//! Initial board: each cell alive with probability `density`% from a
//! hash of (`seed`, row, column) (the original uses `Random.int 2`, i.e.
//! 50%), and a glider stamped into the top-left corner with a clear margin
//! around it. Output: the live cells after the last generation and an
//! FNV-1a hash of the board.
//!
//! Check: a plain-Rust sequential simulation on `Vec<Vec<u8>>` that counts
//! the eight neighbours of each cell with a bounds-checked lookup, as the
//! original does; live count and hash must be equal.

use crate::mix;
use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{Handle, Result, Runtime, Scope};

pub struct GameOfLife;

/// The glider's live cells (row, column), moving down and to the right.
const GLIDER: [(usize, usize); 5] = [(1, 2), (2, 3), (3, 1), (3, 2), (3, 3)];
/// The corner kept clear around the glider (rows and columns 0..5).
const GLIDER_MARGIN: usize = 5;

/// Whether cell (x, y) of an `n`×`n` board is alive initially.
fn initially_alive(seed: u64, density: u64, n: usize, x: usize, y: usize) -> bool {
    if x < GLIDER_MARGIN && y < GLIDER_MARGIN {
        return GLIDER.contains(&(x, y));
    }
    mix(seed.wrapping_mul(0x1000_0000_01B3) ^ (x * n + y) as u64) % 100 < density
}

/// FNV-1a over the cells in row-major order.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xCBF2_9CE4_8422_2325)
    }
    fn add(&mut self, cell: u64) {
        self.0 = (self.0 ^ cell).wrapping_mul(0x0000_0100_0000_01B3);
    }
}

/// Words of a row of `n` cells.
fn row_words(n: usize) -> usize {
    n.div_ceil(64)
}

/// Cell `y` of a row: bit `y % 64` of word `y / 64` (0 or 1).
#[inline(always)]
fn cell(row: &[u64], y: usize) -> u64 {
    (row[y / 64] >> (y % 64)) & 1
}

/// Sets cell `y` of a row (bit `y % 64` of word `y / 64`) when `alive`; the
/// row starts zeroed.
#[inline(always)]
fn set_cell(row: &mut [u64], y: usize, alive: bool) {
    row[y / 64] |= u64::from(alive) << (y % 64);
}

/// The next generation of the `n` cells of row `mid`, between `above` and
/// `below` (absent outside the board), into `out` (zeroed).
fn next_row(above: Option<&[u64]>, mid: &[u64], below: Option<&[u64]>, n: usize, out: &mut [u64]) {
    // Live cells in each column of the three rows.
    let column =
        |y: usize| above.map_or(0, |r| cell(r, y)) + cell(mid, y) + below.map_or(0, |r| cell(r, y));
    let (mut left, mut here) = (0, column(0));
    for y in 0..n {
        let right = if y + 1 < n { column(y + 1) } else { 0 };
        let me = cell(mid, y);
        let neighbours = left + here + right - me;
        set_cell(out, y, neighbours == 3 || (neighbours == 2 && me == 1));
        (left, here) = (here, right);
    }
}

/// The generation after `board`, its rows computed in parallel.
fn step<'s>(s: &mut Scope<'s>, board: Handle<'_>, n: usize, grain: usize) -> Result<Handle<'s>> {
    s.tabulate(&[board], 0, n, grain, move |s, env, x| {
        s.scope_value(|s| {
            let board = env[0];
            let above = if x > 0 {
                Some(s.seq_get(board, x - 1)?)
            } else {
                None
            };
            let mid = s.seq_get(board, x)?;
            let below = if x + 1 < n {
                Some(s.seq_get(board, x + 1)?)
            } else {
                None
            };
            // The new row, computed in a buffer of the loop, then copied into
            // its raw object (the views cannot live across the allocation).
            let mut row = vec![0u64; row_words(n)];
            let words = |h: Handle<'_>| s.view(h).raw_words().expect("a board row is a raw object");
            next_row(above.map(words), words(mid), below.map(words), n, &mut row);
            s.alloc_raw(&row)
        })
    })
}

/// Runs the board on the heap; returns (live cells, hash) of the last board.
fn simulate(
    s: &mut Scope<'_>,
    n: usize,
    generations: usize,
    grain: usize,
    seed: u64,
    density: u64,
) -> Result<(u64, u64)> {
    let first = s.tabulate(&[], 0, n, grain, move |s, _, x| {
        s.alloc_raw_with(row_words(n), |row| {
            for y in 0..n {
                set_cell(row, y, initially_alive(seed, density, n, x, y));
            }
        })
    })?;
    let board = s.slot(first);
    for _ in 0..generations {
        s.scope(|s| -> Result<()> {
            let next = step(s, board.get(), n, grain)?;
            s.assign(board, next);
            Ok(())
        })?;
    }
    let (mut live, mut hash) = (0, Fnv::new());
    s.seq_for_each(board.get(), |row| {
        let words = row.raw_words().expect("a board row is a raw object");
        for y in 0..n {
            live += cell(words, y);
            hash.add(cell(words, y));
        }
    })?;
    Ok((live, hash.0))
}

/// The sequential simulation on Rust vectors (the independent answer).
fn reference(n: usize, generations: usize, seed: u64, density: u64) -> (u64, u64) {
    let mut g: Vec<Vec<u8>> = (0..n)
        .map(|x| {
            (0..n)
                .map(|y| u8::from(initially_alive(seed, density, n, x, y)))
                .collect()
        })
        .collect();
    let get = |g: &Vec<Vec<u8>>, x: isize, y: isize| -> u8 {
        if x < 0 || y < 0 || x >= n as isize || y >= n as isize {
            0
        } else {
            g[x as usize][y as usize]
        }
    };
    for _ in 0..generations {
        let mut next = vec![vec![0u8; n]; n];
        for x in 0..n as isize {
            for y in 0..n as isize {
                let mut count = 0;
                for (dx, dy) in [
                    (-1, -1),
                    (-1, 0),
                    (-1, 1),
                    (0, -1),
                    (0, 1),
                    (1, -1),
                    (1, 0),
                    (1, 1),
                ] {
                    count += get(&g, x + dx, y + dy);
                }
                next[x as usize][y as usize] = match (g[x as usize][y as usize], count) {
                    (1, 2) | (1, 3) | (0, 3) => 1,
                    _ => 0,
                };
            }
        }
        g = next;
    }
    let mut hash = Fnv::new();
    g.iter().flatten().for_each(|&c| hash.add(u64::from(c)));
    (g.iter().flatten().map(|&c| u64::from(c)).sum(), hash.0)
}

impl Benchmark for GameOfLife {
    fn name(&self) -> &'static str {
        "game_of_life"
    }
    fn source(&self) -> &'static str {
        "multicore-ocaml-gc.txt §6.2"
    }
    fn description(&self) -> &'static str {
        "Conway's game of life; a new immutable board of raw rows each generation"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "size",
                help: "board side N (cells)",
                quick: 512,
                paper: 1024,
                scale: 1024,
                min: 1,
                max: 2048,
            },
            Param {
                name: "generations",
                help: "generations to run",
                quick: 80,
                paper: 1000,
                scale: 2_250,
                min: 0,
                max: 1_000_000,
            },
            Param {
                name: "grain",
                help: "rows per task",
                quick: 16,
                paper: 16,
                scale: 16,
                min: 1,
                max: 256,
            },
            Param {
                name: "density",
                help: "percentage of cells alive initially",
                quick: 50,
                paper: 50,
                scale: 50,
                min: 0,
                max: 100,
            },
            Param {
                name: "seed",
                help: "seed of the initial board",
                quick: 42,
                paper: 42,
                scale: 42,
                min: 0,
                max: i64::MAX,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, generations, grain) = (p.usize("size"), p.usize("generations"), p.usize("grain"));
        let (density, seed) = (p.get("density") as u64, p.get("seed") as u64);
        let (live, hash) = rt
            .run_on(0, move |s| {
                simulate(s, n, generations, grain, seed, density)
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let out =
            format!("{generations} generations on {n}x{n}: {live} live cells, hash {hash:016x}\n");
        Ok(Outcome::new(out, move || {
            let (want_live, want_hash) = reference(n, generations, seed, density);
            if (live, hash) == (want_live, want_hash) {
                Ok(())
            } else {
                Err(format!("{live} live cells, hash {hash:016x}; sequential simulation: {want_live}, {want_hash:016x}"))
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numagc::Config;

    /// A lone glider moves one cell down and right every 4 generations and
    /// keeps its 5 cells.
    #[test]
    fn a_lone_glider_travels() {
        let rt = Runtime::new(Config::builder().vprocs(2).verify(true).build().unwrap()).unwrap();
        let over = [
            ("size".into(), 40),
            ("generations".into(), 80),
            ("density".into(), 0),
            ("grain".into(), 3),
        ];
        let params = Params::new(&GameOfLife, crate::Size::Quick, &over).unwrap();
        let outcome = GameOfLife.run(&rt, &params).unwrap();
        (outcome.check)().unwrap();
        assert!(
            outcome.output.contains(": 5 live cells"),
            "{}",
            outcome.output
        );
        let mut hash = Fnv::new();
        for x in 0..40usize {
            for y in 0..40usize {
                hash.add(u64::from(
                    GLIDER.contains(&(x.wrapping_sub(20), y.wrapping_sub(20))),
                ));
            }
        }
        assert!(
            outcome.output.ends_with(&format!("hash {:016x}\n", hash.0)),
            "{}",
            outcome.output
        );
    }
}
