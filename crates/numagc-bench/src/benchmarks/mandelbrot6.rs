//! mandelbrot6 (`multicore-ocaml-gc.txt` §6.2, Sandmark's `mandelbrot6`):
//! the Computer Language Benchmarks Game's mandelbrot, which plots the
//! Mandelbrot set as an N × N portable bitmap (P4): pixel (x, y) is the
//! point c = (2x/N − 1.5) + (2y/N − 1)i of the window [−1.5, 0.5] × [−1, 1],
//! and its bit is set when |z| ≤ 2 after 50 iterations of z ← z² + c (the
//! OCaml program's test: `zr² + zi² <= 4`). Bits are packed eight pixels to a
//! byte, most significant first, each row padded to whole bytes.
//!
//! Parallelism: the bitmap is a sequence of rows built by `tabulate` over
//! the rows (pieces of `grain` rows, so that the costly rows through the
//! set's body spread over the vprocs). Each row is a raw heap object made by
//! `alloc_raw_with`, filled in place with the row's bytes (byte k of the row
//! in bits 8·(k mod 8) of word k/8). The program's output, the P4 file, is
//! replaced by its size, a 64-bit FNV-1a hash of the pixel bytes and the
//! number of set bits, computed by a sequential pass over the rows.
//!
//! As the Benchmarks Game's faster programs do, the eight pixels of one
//! byte are iterated together (independent chains the processor overlaps)
//! and a byte whose pixels have all escaped stops early. This gives exactly
//! the bits of the per-pixel loop: the same arithmetic runs on each pixel
//! until it escapes, and an escaped iterate only grows (to infinity or NaN,
//! both failing `<= 4`).
//!
//! Check: the hash and the set-bit count against a sequential plain-Rust
//! recomputation that runs the OCaml program's per-pixel loop (with its
//! early exit) and packs bytes into a `Vec<u8>`; for N = 200, also against
//! the bitmap whose MD5 the Benchmarks Game publishes (`KNOWN_200`).
//!
//! Sizes: paper N = 16000, the Benchmarks Game's customary size; quick
//! N = 4000.

use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{Handle, Result, Runtime, Scope};

const ITERATIONS: usize = 50;
const LIMIT: f64 = 4.0;
/// Iterations between two checks for a byte whose pixels have all escaped.
const ESCAPE_CHECK: usize = 5;
/// For N = 200 the Benchmarks Game publishes the MD5 of the whole output
/// (cc65e64bd553ed18896de1dfe7fae3e5, `P4\n200 200\n` and the bytes); the
/// bitmap with that MD5 has this FNV-1a hash and this many set bits
/// (computed outside, where an MD5 was at hand).
const KNOWN_200: (u64, u64) = (0x6b13_e76f_d41c_efd5, 15899);

pub struct Mandelbrot6;

/// The bits of the eight pixels `cr[0..8]` (imaginary part `ci`), first pixel
/// in the most significant bit.
fn eight_pixels(cr: &[f64; 8], ci: f64) -> u8 {
    let (mut zr, mut zi, mut trr, mut tii) = ([0.0f64; 8], [0.0f64; 8], [0.0f64; 8], [0.0f64; 8]);
    for _ in 0..ITERATIONS / ESCAPE_CHECK {
        for _ in 0..ESCAPE_CHECK {
            for k in 0..8 {
                zi[k] = 2.0 * zr[k] * zi[k] + ci;
                zr[k] = trr[k] - tii[k] + cr[k];
                trr[k] = zr[k] * zr[k];
                tii[k] = zi[k] * zi[k];
            }
        }
        // `!bounded` also holds for NaN, an iterate long escaped.
        if (0..8).all(|k| !bounded(trr[k] + tii[k])) {
            return 0;
        }
    }
    (0..8).fold(0u8, |byte, k| {
        (byte << 1) | u8::from(bounded(trr[k] + tii[k]))
    })
}

/// The OCaml program's test on |z|²: false for NaN.
fn bounded(modulus_squared: f64) -> bool {
    modulus_squared <= LIMIT
}

/// Fills `words` with the packed bits of row `y` of an `n`² bitmap.
fn fill_row(words: &mut [u64], n: usize, y: usize) {
    let half = n as f64 / 2.0;
    let ci = y as f64 / half - 1.0;
    for byte_index in 0..n.div_ceil(8) {
        // Pixels past the right edge are computed like the others and masked
        // off (the padding bits are zero).
        let cr: [f64; 8] = std::array::from_fn(|k| (8 * byte_index + k) as f64 / half - 1.5);
        let mut byte = eight_pixels(&cr, ci);
        let real = n - 8 * byte_index;
        if real < 8 {
            byte &= 0xffu8 << (8 - real);
        }
        words[byte_index / 8] |= (byte as u64) << (8 * (byte_index % 8));
    }
}

/// The bitmap: a sequence of rows, each a raw object of packed bits.
fn bitmap<'s>(s: &mut Scope<'s>, n: usize, grain: usize) -> Result<Handle<'s>> {
    let words_per_row = n.div_ceil(64);
    s.tabulate(&[], 0, n, grain, move |s, _, y| {
        s.alloc_raw_with(words_per_row, |words| fill_row(words, n, y))
    })
}

/// 64-bit FNV-1a.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn byte(&mut self, b: u8) {
        self.0 = (self.0 ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
}

impl Benchmark for Mandelbrot6 {
    fn name(&self) -> &'static str {
        "mandelbrot6"
    }
    fn source(&self) -> &'static str {
        "multicore-ocaml-gc.txt §6.2"
    }
    fn description(&self) -> &'static str {
        "Benchmarks Game mandelbrot: N×N bitmap of 50 iterations, rows as raw objects"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "n",
                help: "bitmap width and height in pixels",
                quick: 4000,
                paper: 16000,
                scale: 29_000,
                min: 1,
                max: 1 << 17,
            },
            Param {
                name: "grain",
                help: "rows per parallel piece",
                quick: 4,
                paper: 4,
                scale: 4,
                min: 1,
                max: 1 << 17,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, grain) = (p.usize("n"), p.usize("grain"));
        let row_bytes = n.div_ceil(8);
        let (hash, set_bits) = rt
            .run_on(0, move |s| -> Result<(u64, u64)> {
                let rows = bitmap(s, n, grain)?;
                let (mut fnv, mut set_bits) = (Fnv::new(), 0u64);
                s.seq_for_each(rows, |row| {
                    let words = row.raw_words().unwrap_or(&[]);
                    for k in 0..row_bytes {
                        let byte = words.get(k / 8).map_or(0, |w| (w >> (8 * (k % 8))) as u8);
                        fnv.byte(byte);
                        set_bits += byte.count_ones() as u64;
                    }
                })?;
                Ok((fnv.0, set_bits))
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let output = format!(
            "P4 {n}x{n} ({} bytes): FNV-1a {hash:#018x}, {set_bits} set bits\n",
            n * row_bytes
        );
        Ok(Outcome::new(output, move || {
            if n == 200 && (hash, set_bits) != KNOWN_200 {
                return Err(format!("N = 200: FNV-1a {hash:#018x} and {set_bits} set bits, expected {:#018x} and {}", KNOWN_200.0, KNOWN_200.1));
            }
            let (want_hash, want_bits) = reference(n);
            if set_bits != want_bits {
                return Err(format!("{set_bits} set bits, expected {want_bits}"));
            }
            if hash != want_hash {
                return Err(format!("FNV-1a {hash:#018x}, expected {want_hash:#018x}"));
            }
            Ok(())
        }))
    }
}

/// The OCaml program's loop, pixel by pixel, into a byte vector; returns
/// the FNV-1a hash of the bytes and the number of set bits.
fn reference(n: usize) -> (u64, u64) {
    let (fw, fh) = (n as f64 / 2.0, n as f64 / 2.0);
    let mut bytes = Vec::with_capacity(n * n.div_ceil(8));
    for y in 0..n {
        let ci = y as f64 / fh - 1.0;
        let mut byte = 0u8;
        for x in 0..n {
            let cr = x as f64 / fw - 1.5;
            let (mut zr, mut zi, mut trr, mut tii) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
            let mut i = 0;
            while i < ITERATIONS && trr + tii <= LIMIT {
                zi = 2.0 * zr * zi + ci;
                zr = trr - tii + cr;
                trr = zr * zr;
                tii = zi * zi;
                i += 1;
            }
            byte = (byte << 1) | u8::from(trr + tii <= LIMIT);
            if x % 8 == 7 {
                bytes.push(byte);
                byte = 0;
            }
        }
        if !n.is_multiple_of(8) {
            bytes.push(byte << (8 - n % 8));
        }
    }
    let mut fnv = Fnv::new();
    bytes.iter().for_each(|&b| fnv.byte(b));
    (fnv.0, bytes.iter().map(|b| b.count_ones() as u64).sum())
}
