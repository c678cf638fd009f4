//! mandelbrot (`gumsmp-shared-distributed-heaps.txt` §3.1): the
//! data-parallel Mandelbrot set of the GUM benchmarks, "computing a
//! Mandelbrot set over a given window size, and number of iterations". As in
//! the parallel Haskell program, the picture is a list of rows evaluated in
//! parallel, each row the list of its pixels' iteration counts; the program
//! prints the sum of all counts.
//!
//! Parallelism: the picture is a sequence of rows built by `tabulate`, one
//! row per piece (the rows near the set's centre cost far more than the
//! others, so small pieces balance the load); each row is a `tabulate` of
//! immediate integers (pieces of at most 256 pixels, forked as well). The
//! per-row sums are a `par_map` over the rows and the total a `seq_reduce`
//! over those.
//!
//! On a PE group (`--pes`, `numagc::pe`) the rows are the tasks of a
//! divide and conquer forked with [`numagc::Scope::par2_export`]: a task
//! builds its rows (each the same `tabulate` of counts) and returns their
//! sums as a raw object, since the picture itself (4 Mi words at the
//! paper size) stays where it was computed, as in GUM, where only the
//! demanded values travel.
//!
//! Check: every row's sum and the total against a sequential plain-Rust
//! recomputation (a loop over the pixels keeping the squares of the
//! iterate, with no sequences or numagc).
//!
//! Choices where the paper is vague: the window is [-2, 1] × [-1.5, 1.5]
//! (the whole set), a pixel's count is the number of iterations
//! z ← z² + c from z = 0 before |z| > 2, at most the iteration limit; the
//! paper size is a 2048 × 2048 window with 1000 iterations (the paper gives
//! none; that is a few seconds on one core).

use crate::pe_support::{no_descriptors, task_ints, ExportTable};
use crate::{rt_err, Benchmark, Outcome, Param, Params, PeProgram};
use numagc::pe::PeGroup;
use numagc::{Handle, Result, Runtime, Scope};

/// The window of the complex plane: real part from `RE_MIN` (left), imaginary
/// part from `IM_MAX` (top row), both spans `SPAN`.
const RE_MIN: f64 = -2.0;
const IM_MAX: f64 = 1.5;
const SPAN: f64 = 3.0;

pub struct Mandelbrot;

/// The point of the complex plane at the top-left corner of pixel
/// (`row`, `col`) of a `size`² window (the input of both computations).
fn point(size: usize, row: usize, col: usize) -> (f64, f64) {
    let step = SPAN / size as f64;
    (RE_MIN + col as f64 * step, IM_MAX - row as f64 * step)
}

/// Iterations of z ← z² + c from 0 before |z| exceeds 2, at most `limit`.
fn iterations(c_re: f64, c_im: f64, limit: u32) -> u32 {
    let (mut re, mut im) = (0.0f64, 0.0f64);
    let mut n = 0;
    while n < limit && re * re + im * im <= 4.0 {
        let next_re = re * re - im * im + c_re;
        im = 2.0 * re * im + c_im;
        re = next_re;
        n += 1;
    }
    n
}

/// The picture: a sequence of rows, each a sequence of iteration counts.
fn picture<'s>(s: &mut Scope<'s>, size: usize, limit: u32) -> Result<Handle<'s>> {
    s.tabulate(&[], 0, size, 1, move |s, _, row| {
        s.tabulate(&[], 0, size, size, move |_, _, col| {
            let (re, im) = point(size, row, col);
            Ok(Handle::int(iterations(re, im, limit) as i64))
        })
    })
}

/// The sum of row `row`'s counts, the row built as in [`picture`].
fn row_sum(s: &mut Scope<'_>, size: usize, limit: u32, row: usize) -> Result<i64> {
    s.scope(|s| {
        let counts = s.tabulate(&[], 0, size, size, move |_, _, col| {
            let (re, im) = point(size, row, col);
            Ok(Handle::int(iterations(re, im, limit) as i64))
        })?;
        let mut sum = 0;
        s.seq_for_each(counts, |count| sum += count.as_int().unwrap_or(i64::MIN))?;
        Ok(sum)
    })
}

/// The sums of rows `lo .. hi`, as a raw object: one row here, more
/// halved with the upper half forked by `par2_export`.
fn row_sums<'s>(
    s: &mut Scope<'s>,
    size: usize,
    limit: u32,
    lo: usize,
    hi: usize,
) -> Result<Handle<'s>> {
    if hi - lo == 1 {
        let sum = row_sum(s, size, limit, lo)?;
        return s.alloc_raw(&[sum as u64]);
    }
    let mid = lo + (hi - lo) / 2;
    let args = [size, limit as usize, mid, hi].map(|x| Handle::int(x as i64));
    s.scope_value(|s| {
        let (a, b) = s.par2_export(EXPORTS.export(0), &args, move |s, _| {
            row_sums(s, size, limit, lo, mid)
        })?;
        let (va, vb) = (s.view(a), s.view(b));
        let both: Vec<u64> = va
            .raw_words()
            .into_iter()
            .chain(vb.raw_words())
            .flatten()
            .copied()
            .collect();
        s.alloc_raw(&both)
    })
}

/// [`row_sums`] from `args` = `[size, limit, lo, hi]`.
fn rows_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let [size, limit, lo, hi] =
        task_ints(s, args, "mandelbrot.rows: (size, iterations, lo, hi)")?.map(|i| i as usize);
    if lo >= hi || hi > size || limit > u32::MAX as usize {
        return Err(numagc::Error::misuse(format!(
            "mandelbrot.rows: rows {lo}..{hi} of {size}, {limit} iterations"
        )));
    }
    row_sums(s, size, limit as u32, lo, hi)
}

/// The PE program's exportable function: the sums of a range of rows.
static EXPORTS: ExportTable<1> = ExportTable::new([("mandelbrot.rows", rows_task)]);

fn int(s: &Scope<'_>, h: Handle<'_>) -> Result<i64> {
    s.as_int(h)
        .ok_or_else(|| numagc::Error::misuse("expected an integer"))
}

impl Benchmark for Mandelbrot {
    fn name(&self) -> &'static str {
        "mandelbrot"
    }
    fn source(&self) -> &'static str {
        "gumsmp-shared-distributed-heaps.txt §3.1"
    }
    fn description(&self) -> &'static str {
        "data-parallel Mandelbrot set: rows of iteration counts, summed"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "size",
                help: "window width and height in pixels",
                quick: 512,
                paper: 2048,
                scale: 4_800,
                min: 1,
                max: 1 << 16,
            },
            Param {
                name: "iterations",
                help: "iteration limit per pixel",
                quick: 1000,
                paper: 1000,
                scale: 1000,
                min: 1,
                max: 1 << 20,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (size, limit) = (p.usize("size"), p.get("iterations") as u32);
        let (row_sums, total) = rt
            .run_on(0, move |s| -> Result<(Vec<i64>, i64)> {
                let rows = picture(s, size, limit)?;
                let sums = s.par_map(&[], rows, 1, |s, _, row| {
                    let mut sum = 0;
                    s.seq_for_each(row, |count| sum += count.as_int().unwrap_or(i64::MIN))?;
                    Ok(Handle::int(sum))
                })?;
                let total = s.seq_reduce(&[], sums, 64, Handle::NIL, |s, _, a, b| {
                    Ok(Handle::int(int(s, a)? + int(s, b)?))
                })?;
                let mut row_sums = Vec::with_capacity(size);
                s.seq_for_each(sums, |sum| row_sums.push(sum.as_int().unwrap_or(i64::MIN)))?;
                Ok((row_sums, int(s, total)?))
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(size, limit, row_sums, total))
    }

    fn pe_program(&self) -> Option<PeProgram> {
        Some(EXPORTS.program(no_descriptors))
    }

    fn run_pes(&self, g: &PeGroup, p: &Params) -> std::result::Result<Outcome, String> {
        let (size, limit) = (p.usize("size"), p.get("iterations") as u32);
        let row_sums = g
            .run(move |s| -> Result<Vec<i64>> {
                let sums = row_sums(s, size, limit, 0, size)?;
                let words = s.view(sums).raw_words().unwrap_or(&[]).to_vec();
                Ok(words.into_iter().map(|w| w as i64).collect())
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let total = row_sums.iter().sum();
        Ok(outcome(size, limit, row_sums, total))
    }
}

/// The output line, and the check of the row sums and the total.
fn outcome(size: usize, limit: u32, row_sums: Vec<i64>, total: i64) -> Outcome {
    let output =
        format!("mandelbrot {size}x{size}, {limit} iterations: sum of iteration counts {total}\n");
    Outcome::new(output, move || {
        let want = reference_row_sums(size, limit);
        if row_sums.len() != size {
            return Err(format!("{} row sums, expected {size}", row_sums.len()));
        }
        if let Some(row) = (0..size).find(|&r| row_sums[r] != want[r]) {
            return Err(format!(
                "row {row}: sum {}, expected {}",
                row_sums[row], want[row]
            ));
        }
        let want_total: i64 = want.iter().sum();
        if total != want_total {
            return Err(format!("total {total}, expected {want_total}"));
        }
        Ok(())
    })
}

/// The rows' sums computed sequentially, keeping the squares of the
/// iterate (the same arithmetic, in another arrangement).
fn reference_row_sums(size: usize, limit: u32) -> Vec<i64> {
    (0..size)
        .map(|row| {
            (0..size)
                .map(|col| {
                    let (cr, ci) = point(size, row, col);
                    let (mut x, mut y, mut xx, mut yy) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
                    let mut n = 0i64;
                    while n < limit as i64 && xx + yy <= 4.0 {
                        y = x * y * 2.0 + ci;
                        x = xx - yy + cr;
                        xx = x * x;
                        yy = y * y;
                        n += 1;
                    }
                    n
                })
                .sum()
        })
        .collect()
}
