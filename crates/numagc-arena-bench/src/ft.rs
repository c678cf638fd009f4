//! NAS FT (NPB 2.4 report, the paper's ref. [25]; SAC version: the paper's
//! ref. [21], measured in §4, Fig. 7) in the paper's style: every
//! whole-array operation creates a fresh array and every temporary is freed
//! at its last use. The 3-D arrays are allocated by the main thread; the
//! 1-D FFTs run in parallel over the lines, and each is the recursive
//! Danielson-Lanczos algorithm of §4, which "explicitly create[s] 2 (4)
//! vectors of length 64, 4 (8) vectors of length 32, etc.": a line of
//! length n is split into fresh even and odd vectors of length n/2, each
//! transformed into a fresh vector, and combined into a fresh vector of n,
//! down to length 2. All those allocations happen inside the parallel
//! section, as in the paper.
//!
//! The kernel is NPB 3's: `u0` is filled with NPB's generator (seed
//! 314159265, real and imaginary parts in turn, x fastest), transformed
//! forward once; each of the 6 iterations multiplies it by
//! `exp(-4 pi^2 alpha (i'^2 + j'^2 + k'^2))` (alpha = 1e-6, i' the index
//! folded into -n/2..n/2) and transforms the product back; the checksum is
//! the sum of 1024 elements `u(j mod nx, 3j mod ny, 5j mod nz)`, j = 1..1024,
//! divided by the number of points. It must match NPB's reference
//! checksums for the class to a relative 1e-12, as NPB's `verify` requires.
//! Classes: S 64x64x64, W 128x128x32, A 256x256x128, 6 iterations each.
//! The transforms are unnormalised in both directions, as NPB's; the
//! checksum does not depend on the sign convention, as the multiplier is
//! even in each index.

use crate::heap::Buf;
use crate::par::for_chunks;
use crate::rng::{Npb, NPB_SEED};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct C {
    re: f64,
    im: f64,
}

impl C {
    fn add(self, o: C) -> C {
        C {
            re: self.re + o.re,
            im: self.im + o.im,
        }
    }
    fn sub(self, o: C) -> C {
        C {
            re: self.re - o.re,
            im: self.im - o.im,
        }
    }
    fn mul(self, o: C) -> C {
        C {
            re: self.re * o.re - self.im * o.im,
            im: self.re * o.im + self.im * o.re,
        }
    }
}

/// NPB's reference checksums (ft.f `verify`), per class, iterations 1..6.
const REF_S: [(f64, f64); 6] = [
    (5.546087004964e+02, 4.845363331978e+02),
    (5.546385409189e+02, 4.865304269511e+02),
    (5.546148406171e+02, 4.883910722336e+02),
    (5.545423607415e+02, 4.901273169046e+02),
    (5.544255039624e+02, 4.917475857993e+02),
    (5.542683411902e+02, 4.932597244941e+02),
];
const REF_W: [(f64, f64); 6] = [
    (5.673612178944e+02, 5.293246849175e+02),
    (5.631436885271e+02, 5.282149986629e+02),
    (5.594024089970e+02, 5.270996558037e+02),
    (5.560698047020e+02, 5.260027904925e+02),
    (5.530898991250e+02, 5.249400845633e+02),
    (5.504159734538e+02, 5.239212247086e+02),
];
const REF_A: [(f64, f64); 6] = [
    (5.046735008193e+02, 5.114047905510e+02),
    (5.059412319734e+02, 5.098809666433e+02),
    (5.069376896287e+02, 5.098144042213e+02),
    (5.077892868474e+02, 5.101336130759e+02),
    (5.085233095391e+02, 5.104914655194e+02),
    (5.091487099959e+02, 5.107917842803e+02),
];
const ALPHA: f64 = 1.0e-6;

/// Roots of unity `exp(sign * 2 pi i k / n)` for k < n/2, per length.
struct Roots {
    n: usize,
    w: Vec<C>,
}

impl Roots {
    fn new(n: usize) -> Roots {
        let w = (0..n / 2)
            .map(|k| {
                let a = -2.0 * std::f64::consts::PI * k as f64 / n as f64;
                C {
                    re: a.cos(),
                    im: a.sin(),
                }
            })
            .collect();
        Roots { n, w }
    }
    /// `exp(sign * 2 pi i k / len)`, sign -1 forward, +1 inverse.
    fn get(&self, k: usize, len: usize, inverse: bool) -> C {
        let c = self.w[k * (self.n / len)];
        if inverse {
            C {
                re: c.re,
                im: -c.im,
            }
        } else {
            c
        }
    }
}

/// Danielson-Lanczos: a fresh transformed vector; fresh halves on the way.
fn fft1(v: &[C], roots: &Roots, inverse: bool) -> Buf<C> {
    let n = v.len();
    if n == 1 {
        return Buf::from_fn(1, |_| v[0]);
    }
    if n == 2 {
        return Buf::from_fn(2, |k| {
            if k == 0 {
                v[0].add(v[1])
            } else {
                v[0].sub(v[1])
            }
        });
    }
    let even = Buf::from_fn(n / 2, |i| v[2 * i]);
    let odd = Buf::from_fn(n / 2, |i| v[2 * i + 1]);
    let fe = fft1(&even, roots, inverse);
    let fo = fft1(&odd, roots, inverse);
    drop(even);
    drop(odd);
    let mut out = Buf::uninit(n);
    for k in 0..n / 2 {
        let t = roots.get(k, n, inverse).mul(fo[k]);
        out[k] = fe[k].add(t);
        out[k + n / 2] = fe[k].sub(t);
    }
    out
}

struct Grid {
    nx: usize,
    ny: usize,
    nz: usize,
}

/// The 1-D transforms along one axis: a fresh 3-D array.
fn fft_axis(
    u: &[C],
    g: &Grid,
    axis: usize,
    roots: &Roots,
    inverse: bool,
    threads: usize,
) -> Buf<C> {
    let (nx, ny, nz) = (g.nx, g.ny, g.nz);
    let mut out = Buf::uninit(u.len());
    match axis {
        0 => for_chunks(threads, &mut out, nx, |first, block| {
            for (l, line) in block.chunks_mut(nx).enumerate() {
                let s = first + l * nx;
                let v = Buf::from_fn(nx, |i| u[s + i]);
                line.copy_from_slice(&fft1(&v, roots, inverse));
            }
        }),
        1 => for_chunks(threads, &mut out, nx * ny, |first, block| {
            for (p, plane) in block.chunks_mut(nx * ny).enumerate() {
                let base = first + p * nx * ny;
                for i in 0..nx {
                    let v = Buf::from_fn(ny, |j| u[base + i + nx * j]);
                    let f = fft1(&v, roots, inverse);
                    for j in 0..ny {
                        plane[i + nx * j] = f[j];
                    }
                }
            }
        }),
        _ => {
            // Lines along z into a fresh array with the lines contiguous,
            // then back into place (both in parallel).
            let mut t: Buf<C> = Buf::uninit(u.len());
            for_chunks(threads, &mut t, nz, |first, block| {
                for (l, line) in block.chunks_mut(nz).enumerate() {
                    let ij = first / nz + l;
                    let v = Buf::from_fn(nz, |k| u[ij + nx * ny * k]);
                    line.copy_from_slice(&fft1(&v, roots, inverse));
                }
            });
            let t = &t;
            for_chunks(threads, &mut out, nx * ny, |first, block| {
                for (p, plane) in block.chunks_mut(nx * ny).enumerate() {
                    let k = first / (nx * ny) + p;
                    for (ij, e) in plane.iter_mut().enumerate() {
                        *e = t[ij * nz + k];
                    }
                }
            });
        }
    }
    out
}

fn fft3(u: &[C], g: &Grid, roots: &Roots, inverse: bool, threads: usize) -> Buf<C> {
    let a = fft_axis(u, g, 0, roots, inverse, threads);
    let b = fft_axis(&a, g, 1, roots, inverse, threads);
    drop(a);
    fft_axis(&b, g, 2, roots, inverse, threads)
}

pub fn run(class: char, threads: usize, fault: bool) -> Result<String, String> {
    let (g, reference) = match class {
        'S' => (
            Grid {
                nx: 64,
                ny: 64,
                nz: 64,
            },
            REF_S,
        ),
        'W' => (
            Grid {
                nx: 128,
                ny: 128,
                nz: 32,
            },
            REF_W,
        ),
        _ => (
            Grid {
                nx: 256,
                ny: 256,
                nz: 128,
            },
            REF_A,
        ),
    };
    crate::timing::start();
    let n = g.nx * g.ny * g.nz;
    let roots = Roots::new(g.nx.max(g.ny).max(g.nz));
    let mut rng = Npb::new(NPB_SEED);
    let u0 = Buf::from_fn(n, |_| {
        let re = rng.next_f64();
        C {
            re,
            im: rng.next_f64(),
        }
    });
    let fold = |i: usize, m: usize| ((i + m / 2) % m) as f64 - (m / 2) as f64;
    let ap = -4.0 * ALPHA * std::f64::consts::PI * std::f64::consts::PI;
    let twiddle = Buf::from_fn(n, |idx| {
        let (i, j, k) = (idx % g.nx, (idx / g.nx) % g.ny, idx / (g.nx * g.ny));
        let (a, b, c) = (fold(i, g.nx), fold(j, g.ny), fold(k, g.nz));
        (ap * (a * a + b * b + c * c)).exp()
    });
    let mut u = fft3(&u0, &g, &roots, false, threads);
    drop(u0);
    let mut sums = Vec::new();
    for _ in 0..reference.len() {
        // u = u * twiddle: a fresh array (the with-loop), in parallel.
        let mut next: Buf<C> = Buf::uninit(n);
        {
            let (u, tw) = (&u, &twiddle);
            for_chunks(threads, &mut next, g.nx, |first, block| {
                for (o, e) in block.iter_mut().enumerate() {
                    let w = tw[first + o];
                    let v = u[first + o];
                    *e = C {
                        re: v.re * w,
                        im: v.im * w,
                    };
                }
            });
        }
        u = next;
        let x = fft3(&u, &g, &roots, true, threads);
        let mut chk = C { re: 0.0, im: 0.0 };
        for j in 1..=1024 {
            let (q, r, s) = (j % g.nx, (3 * j) % g.ny, (5 * j) % g.nz);
            chk = chk.add(x[q + g.nx * (r + g.ny * s)]);
        }
        sums.push((chk.re / n as f64, chk.im / n as f64));
    }
    crate::timing::stop();
    if fault {
        sums[0].0 += 1e-6;
    }
    for (it, (got, want)) in sums.iter().zip(reference.iter()).enumerate() {
        let err_re = ((got.0 - want.0) / want.0).abs();
        let err_im = ((got.1 - want.1) / want.1).abs();
        if err_re > 1e-12 || err_im > 1e-12 {
            return Err(format!(
                "ft class {class}: iteration {} checksum ({:.12e}, {:.12e}), NPB's reference ({:.12e}, {:.12e})",
                it + 1,
                got.0,
                got.1,
                want.0,
                want.1
            ));
        }
    }
    Ok(format!(
        "ft class={class} grid={}x{}x{} iterations={} threads={threads} checksum6=({:.12e}, {:.12e}) verified",
        g.nx,
        g.ny,
        g.nz,
        sums.len(),
        sums[5].0,
        sums[5].1
    ))
}
