//! maze (`gumsmp-shared-distributed-heaps.txt` §3.1): "a nested
//! data-parallel AI application for finding the path through a fixed maze
//! using a parallelism threshold". The paper gives neither the maze nor
//! the program; this port keeps its shape as a Haskell program would have
//! it: a backtracking depth-first search over positions `(x, y)` (heap
//! pairs), whose paths are heap lists of positions; the moves from a
//! position are the heap list ``filter (`notElem` path) (neighbours pos)``
//! of new position pairs (`notElem` walks the path list), and the moves at
//! a branch point are searched in parallel while the search is above the
//! threshold.
//!
//! The maze: a `size`×`size` grid, a perfect maze carved by randomized
//! depth-first search from a fixed seed (xorshift), then `openings` extra
//! walls knocked down so that it has cycles and the search real work (the
//! number of simple paths grows about 1.7× per opening). It is built by
//! the program as a heap vector of rows, each row a raw object of the
//! cells' open-side bits, and promoted once so that every vproc reads the
//! same copy. Entrance: the top-left cell; exit: the bottom-right one.
//!
//! The search is exhaustive, so that the answer and the work do not
//! depend on the schedule: it enumerates every simple path from the
//! entrance to the exit and returns a heap record `(count, length, path)`
//! with the number of such paths and the shortest one (ties broken by
//! comparing the paths position by position from the exit), combined
//! pairwise as the alternatives return. Each step allocates the list of
//! its moves (a pair and a cons cell per move) and one cons cell of the
//! path; results are allocated where paths meet. Most of the time goes to
//! the `notElem` walks, reading the path lists.
//!
//! Parallelism: at a branch point (two or more open cells not on the
//! path), the first alternative runs here and the others are forked with
//! [`numagc::Scope::par2_export`] (`par2` on one runtime; on a PE group,
//! `--pes`, another PE may take them), at the first `threshold` branch
//! points of each path (threshold 12 gives some hundreds of tasks, the
//! largest about 2 % of the work). The environment of a fork is the maze,
//! the path so far and the list of moves (a PE that takes the fork gets
//! them packed: about 450 words).
//!
//! Sizes: a 20×20 maze (seed 1) with 16 extra openings at the quick size
//! (about 0.4 million search steps) and 21 at the paper size (about 4.3
//! million steps, a few seconds on one vproc); the maze size is kept and
//! the openings varied because the work grows exponentially with them.
//!
//! Check: a breadth-first search over a plain Rust grid gives the
//! shortest path's length, a backtracking count with a visited array the
//! number of paths, and the returned path is walked on the grid (it must
//! go from the entrance to the exit through open sides without repeating
//! a cell).

use crate::pe_support::ExportTable;
use crate::{register_as, rt_err, Benchmark, Outcome, Param, Params, PeProgram};
use numagc::pe::PeGroup;
use numagc::{DescId, Descriptor, Handle, Result, Runtime, Scope, View};
use std::collections::VecDeque;

pub struct Maze;

/// Sides of a cell: bit `d` of a cell is set when side `d` is open.
const DX: [i64; 4] = [1, 0, -1, 0];
const DY: [i64; 4] = [0, 1, 0, -1];

/// The maze as plain Rust data: the input the program is given.
struct Grid {
    size: usize,
    open: Vec<u64>,
}

impl Grid {
    fn neighbour(&self, cell: usize, d: usize) -> Option<usize> {
        let (x, y) = (
            (cell % self.size) as i64 + DX[d],
            (cell / self.size) as i64 + DY[d],
        );
        let n = self.size as i64;
        (x >= 0 && y >= 0 && x < n && y < n).then_some((y * n + x) as usize)
    }

    /// A perfect maze by randomized depth-first carving, plus `openings`
    /// extra passages.
    fn generate(size: usize, openings: usize, seed: u64) -> Grid {
        let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut next = move |bound: usize| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % bound as u64) as usize
        };
        let mut g = Grid {
            size,
            open: vec![0; size * size],
        };
        let mut carved = vec![false; size * size];
        let mut stack = vec![0];
        carved[0] = true;
        while let Some(&cell) = stack.last() {
            let fresh: Vec<usize> = (0..4)
                .filter(|&d| g.neighbour(cell, d).is_some_and(|n| !carved[n]))
                .collect();
            if fresh.is_empty() {
                stack.pop();
                continue;
            }
            let d = fresh[next(fresh.len())];
            let n = g.neighbour(cell, d).expect("a fresh neighbour");
            g.open[cell] |= 1 << d;
            g.open[n] |= 1 << ((d + 2) % 4);
            carved[n] = true;
            stack.push(n);
        }
        let mut added = 0;
        while added < openings.min(size * size) {
            let (cell, d) = (next(size * size), next(2));
            match g.neighbour(cell, d) {
                Some(n) if g.open[cell] & (1 << d) == 0 => {
                    g.open[cell] |= 1 << d;
                    g.open[n] |= 1 << ((d + 2) % 4);
                    added += 1;
                }
                _ => {}
            }
        }
        g
    }

    /// Length in cells of the shortest path from the first to the last cell (BFS).
    fn shortest(&self) -> Option<usize> {
        let goal = self.size * self.size - 1;
        let mut dist = vec![usize::MAX; self.size * self.size];
        dist[0] = 1;
        let mut queue = VecDeque::from([0]);
        while let Some(c) = queue.pop_front() {
            for d in (0..4).filter(|d| self.open[c] & (1 << d) != 0) {
                let n = self.neighbour(c, d).expect("open sides lead inside");
                if dist[n] == usize::MAX {
                    dist[n] = dist[c] + 1;
                    queue.push_back(n);
                }
            }
        }
        (dist[goal] != usize::MAX).then_some(dist[goal])
    }

    /// Number of simple paths from `cell` to the last cell.
    fn count_paths(&self, cell: usize, visited: &mut [bool]) -> u64 {
        if cell == self.size * self.size - 1 {
            return 1;
        }
        visited[cell] = true;
        let mut n = 0;
        for d in (0..4).filter(|d| self.open[cell] & (1 << d) != 0) {
            let next = self.neighbour(cell, d).expect("open sides lead inside");
            if !visited[next] {
                n += self.count_paths(next, visited);
            }
        }
        visited[cell] = false;
        n
    }
}

/// The descriptors and the maze's geometry, copied into every task.
#[derive(Clone, Copy)]
struct Search {
    /// `[head, tail]`; the empty list is NIL.
    cons: DescId,
    /// A position `(x, y)`, both immediates.
    pos: DescId,
    /// `[count, length, path]`; "no path" is NIL.
    found: DescId,
    size: usize,
}

/// The program's descriptors, the runtime's first three (`setup`).
const CONS: DescId = DescId::nth_registered(0);
const POS: DescId = DescId::nth_registered(1);
const FOUND: DescId = DescId::nth_registered(2);

/// What every runtime (every PE) registers before the program runs.
fn setup(rt: &Runtime) -> Result<()> {
    register_as(rt, CONS, Descriptor::mixed("list-cons", 2, &[0, 1])?)?;
    register_as(rt, POS, Descriptor::mixed("position", 2, &[0, 1])?)?;
    register_as(rt, FOUND, Descriptor::mixed("paths-found", 3, &[0, 1, 2])?)
}

/// The program's exportable function: the moves after the first at a
/// branch point.
static EXPORTS: ExportTable<1> = ExportTable::new([("maze.rest", rest_task)]);

/// `alternatives` of the moves after the first of `next`, from `args` =
/// `[maze, path, next, len, forks, size]`.
fn rest_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let [maze, path, next, len, forks, size] = args else {
        return Err(numagc::Error::misuse(
            "maze.rest: (maze, path, moves, length, forks, size) expected",
        ));
    };
    let int = |h: &Handle<'_>| {
        s.as_int(*h)
            .filter(|&i| i >= 0)
            .ok_or_else(|| numagc::Error::misuse("maze.rest: a count expected"))
    };
    let (len, forks, size) = (int(len)? as usize, int(forks)? as u32, int(size)? as usize);
    let sr = Search {
        cons: CONS,
        pos: POS,
        found: FOUND,
        size,
    };
    let rest = s.field(*next, 1)?;
    alternatives(s, sr, *maze, *path, rest, len, forks)
}

fn xy(pos: View<'_>) -> (i64, i64) {
    (
        pos.field(0).as_int().expect("an x"),
        pos.field(1).as_int().expect("a y"),
    )
}

/// `elem (x, y) path`: a walk of the path list.
fn on_path(mut path: View<'_>, x: i64, y: i64) -> bool {
    while path.is_object() {
        if xy(path.field(0)) == (x, y) {
            return true;
        }
        path = path.field(1);
    }
    false
}

/// ``filter (`notElem` path) (neighbours maze (head path))``: the positions
/// one step from the head of `path` that are not on it, a heap list of new
/// `(x, y)` pairs in side order.
fn moves<'s>(
    s: &mut Scope<'s>,
    sr: Search,
    maze: Handle<'_>,
    path: Handle<'_>,
) -> Result<Handle<'s>> {
    let (x, y) = xy(s.view(path).field(0));
    let open = s.view(maze).field(y as usize).raw(x as usize);
    let list = s.slot(Handle::NIL);
    for d in (0..4).rev().filter(|d| open & (1 << d) != 0) {
        let (nx, ny) = (x + DX[d], y + DY[d]);
        if on_path(s.view(path), nx, ny) {
            continue;
        }
        s.scope(|s| -> Result<()> {
            let pos = s.alloc_mixed(sr.pos, &[Handle::int(nx), Handle::int(ny)], &[])?;
            s.alloc_mixed_to(list, sr.cons, &[pos, list.get()], &[])
        })?;
    }
    Ok(list.get())
}

/// Every simple path from the head of `path` (of `len` cells) to the exit.
fn search<'s>(
    s: &mut Scope<'s>,
    sr: Search,
    maze: Handle<'_>,
    path: Handle<'_>,
    len: usize,
    forks: u32,
) -> Result<Handle<'s>> {
    let exit = sr.size as i64 - 1;
    if xy(s.view(path).field(0)) == (exit, exit) {
        return s.alloc_mixed(
            sr.found,
            &[Handle::int(1), Handle::int(len as i64), path],
            &[],
        );
    }
    s.scope_value(|s| {
        let next = moves(s, sr, maze, path)?;
        alternatives(s, sr, maze, path, next, len, forks)
    })
}

/// The results of the moves to the positions of the list `next`, combined.
/// At a branch point with `forks` left (forks happen at the first
/// `threshold` branch points of a path), the first move runs here and the
/// others are forked; else they run one after the other.
fn alternatives<'s>(
    s: &mut Scope<'s>,
    sr: Search,
    maze: Handle<'_>,
    path: Handle<'_>,
    next: Handle<'_>,
    len: usize,
    forks: u32,
) -> Result<Handle<'s>> {
    // A branch point: at least two moves.
    let v = s.view(next);
    let fork = v.is_object() && v.field(1).is_object() && forks > 0;
    let forks_below = if fork { forks - 1 } else { forks };
    s.scope_value(|s| {
        if fork {
            let (a, b) = s.par2_export(
                EXPORTS.export(0),
                &[
                    maze,
                    path,
                    next,
                    Handle::int(len as i64),
                    Handle::int(forks as i64),
                    Handle::int(sr.size as i64),
                ],
                move |s, env| {
                    let first = s.field(env[2], 0)?;
                    step(s, sr, env[0], env[1], first, len, forks_below)
                },
            )?;
            return combine(s, sr, a, b);
        }
        let (acc, rest) = (s.slot(Handle::NIL), s.slot(next));
        while s.view(rest.get()).is_object() {
            s.scope(|s| -> Result<()> {
                let pos = s.field(rest.get(), 0)?;
                let r = step(s, sr, maze, path, pos, len, forks_below)?;
                let c = combine(s, sr, acc.get(), r)?;
                s.assign(acc, c);
                let tail = s.field(rest.get(), 1)?;
                s.assign(rest, tail);
                Ok(())
            })?;
        }
        Ok(acc.get())
    })
}

/// Moves to `pos`: the path grows by one cons cell.
fn step<'s>(
    s: &mut Scope<'s>,
    sr: Search,
    maze: Handle<'_>,
    path: Handle<'_>,
    pos: Handle<'_>,
    len: usize,
    forks: u32,
) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let longer = s.alloc_mixed(sr.cons, &[pos, path], &[])?;
        search(s, sr, maze, longer, len + 1, forks)
    })
}

/// Two results as one: counts added, the better path kept.
fn combine<'s>(s: &mut Scope<'s>, sr: Search, a: Handle<'_>, b: Handle<'_>) -> Result<Handle<'s>> {
    let (va, vb) = (s.view(a), s.view(b));
    if va.is_int() {
        return Ok(s.handle(vb));
    }
    if vb.is_int() {
        return Ok(s.handle(va));
    }
    let count = va.field(0).as_int().expect("a count") + vb.field(0).as_int().expect("a count");
    let (la, lb) = (
        va.field(1).as_int().expect("a length"),
        vb.field(1).as_int().expect("a length"),
    );
    let a_better = la < lb || (la == lb && path_precedes(va.field(2), vb.field(2)));
    let (best, len) = if a_better {
        (s.handle(va.field(2)), la)
    } else {
        (s.handle(vb.field(2)), lb)
    };
    s.alloc_mixed(sr.found, &[Handle::int(count), Handle::int(len), best], &[])
}

/// Whether path `a` comes before path `b` of the same length, comparing
/// positions `(x, y)` from the heads.
fn path_precedes(mut a: View<'_>, mut b: View<'_>) -> bool {
    while a.is_object() && b.is_object() {
        let (p, q) = (xy(a.field(0)), xy(b.field(0)));
        if p != q {
            return p < q;
        }
        (a, b) = (a.field(1), b.field(1));
    }
    false
}

/// The maze on the heap: a vector of rows, each a raw object of cells.
fn maze_on_heap<'s>(s: &mut Scope<'s>, g: &Grid) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let mut rows = Vec::with_capacity(g.size);
        for row in g.open.chunks(g.size) {
            rows.push(s.alloc_raw(row)?);
        }
        let maze = s.alloc_vector(&rows)?;
        Ok(s.promote(maze).unwrap())
    })
}

impl Benchmark for Maze {
    fn name(&self) -> &'static str {
        "maze"
    }
    fn source(&self) -> &'static str {
        "gumsmp-shared-distributed-heaps.txt §3.1"
    }
    fn description(&self) -> &'static str {
        "every simple path through a fixed maze by backtracking on heap-list paths, branches forked above a threshold"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "size",
                help: "the maze is size × size cells",
                quick: 20,
                paper: 20,
                scale: 20,
                min: 2,
                max: 40,
            },
            Param {
                name: "openings",
                help: "walls knocked down after carving a perfect maze",
                quick: 16,
                paper: 21,
                scale: 22,
                min: 0,
                max: 200,
            },
            Param {
                name: "seed",
                help: "seed of the maze generator",
                quick: 1,
                paper: 1,
                scale: 1,
                min: 0,
                max: i64::MAX,
            },
            Param {
                name: "threshold",
                help: "fork at the first this many branch points of each path",
                quick: 12,
                paper: 12,
                scale: 12,
                min: 0,
                max: 64,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        setup(rt).map_err(rt_err)?;
        let (job, grid, out) = program(p);
        let (count, path) = rt.run_on(0, job).map_err(rt_err)?.map_err(rt_err)?;
        let out = out(count, &path);
        Ok(Outcome::new(out, move || check(&grid, count, &path)))
    }

    fn pe_program(&self) -> Option<PeProgram> {
        Some(EXPORTS.program(setup))
    }

    fn run_pes(&self, g: &PeGroup, p: &Params) -> std::result::Result<Outcome, String> {
        let (job, grid, out) = program(p);
        let (count, path) = g.run(job).map_err(rt_err)?.map_err(rt_err)?;
        let out = out(count, &path);
        Ok(Outcome::new(out, move || check(&grid, count, &path)))
    }
}

/// The paths found: their count, and the shortest as cell indices.
type Found = (u64, Vec<usize>);

/// The program for `p` (run on vproc 0 of a runtime or of PE 0), the
/// grid for the check, and the output line.
#[allow(clippy::type_complexity)]
fn program(
    p: &Params,
) -> (
    impl for<'s> FnOnce(&mut Scope<'s>) -> Result<Found> + Send + 'static,
    Grid,
    impl Fn(u64, &[usize]) -> String,
) {
    let (size, openings, seed) = (p.usize("size"), p.usize("openings"), p.get("seed") as u64);
    let threshold = p.get("threshold") as u32;
    let grid = Grid::generate(size, openings, seed);
    let sr = Search {
        cons: CONS,
        pos: POS,
        found: FOUND,
        size,
    };
    let grid_for_run = Grid {
        size,
        open: grid.open.clone(),
    };
    let job = move |s: &mut Scope<'_>| -> Result<Found> {
        let maze = maze_on_heap(s, &grid_for_run)?;
        let entrance = s.alloc_mixed(POS, &[Handle::int(0), Handle::int(0)], &[])?;
        let start = s.alloc_mixed(CONS, &[entrance, Handle::NIL], &[])?;
        let r = search(s, sr, maze, start, 1, threshold)?;
        let v = s.view(r);
        if v.is_int() {
            return Ok((0, Vec::new()));
        }
        let mut path = Vec::new();
        let mut c = v.field(2);
        while c.is_object() {
            let (x, y) = xy(c.field(0));
            path.push(y as usize * size + x as usize);
            c = c.field(1);
        }
        path.reverse();
        Ok((v.field(0).as_int().expect("a count") as u64, path))
    };
    let out = move |count: u64, path: &[usize]| {
        format!(
            "maze {size}x{size} (+{openings} openings, seed {seed}): {count} paths, shortest {} cells\n",
            path.len()
        )
    };
    (job, grid, out)
}

/// Compares the answer with a BFS and a visited-array count on the grid,
/// and walks the returned path.
fn check(grid: &Grid, count: u64, path: &[usize]) -> std::result::Result<(), String> {
    let want_count = grid.count_paths(0, &mut vec![false; grid.size * grid.size]);
    if count != want_count {
        return Err(format!("{count} paths, expected {want_count}"));
    }
    let want_len = grid.shortest().unwrap_or(0);
    if path.len() != want_len {
        return Err(format!(
            "shortest path of {} cells, expected {want_len}",
            path.len()
        ));
    }
    if path.is_empty() {
        return Ok(());
    }
    let mut seen = vec![false; grid.size * grid.size];
    for (i, &c) in path.iter().enumerate() {
        if std::mem::replace(&mut seen[c], true) {
            return Err(format!("the path visits cell {c} twice"));
        }
        if i > 0
            && !(0..4).any(|d| {
                grid.open[path[i - 1]] & (1 << d) != 0 && grid.neighbour(path[i - 1], d) == Some(c)
            })
        {
            return Err(format!(
                "the path steps from cell {} to {c} through a wall",
                path[i - 1]
            ));
        }
    }
    if path[0] != 0 || path[path.len() - 1] != grid.size * grid.size - 1 {
        return Err("the path does not lead from the entrance to the exit".into());
    }
    Ok(())
}
