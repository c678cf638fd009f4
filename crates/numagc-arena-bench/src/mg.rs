//! NAS MG (NPB 2.4 report, the paper's ref. [25]; SAC version: the paper's
//! ref. [20], measured in §4, Fig. 7) in the paper's style: a V-cycle
//! multigrid solver of the 3-D Poisson equation with periodic boundaries,
//! whose every operation (residual, smoother, restriction, interpolation)
//! creates a fresh array: arrays shrink by 2 per dimension down to 2x2x2
//! (4x4x4 with the boundary layer) and grow again, "a substantial number
//! of allocations over a wide range of chunk sizes" (§4). Allocation is
//! done by the main thread; the operations run in parallel over planes,
//! so that, as the paper says of MG, no allocation happens during a
//! data-parallel operation.
//!
//! The kernel is NPB 3's `mg.f`: the right-hand side `v` is 0 except +1 at
//! the 10 largest and -1 at the 10 smallest of n^3 values of NPB's
//! generator (seed 314159265, x fastest; `zran3`); `u = 0`; then `nit`
//! times `u = mg3P(u, v, r); r = v - A u`, and the answer is
//! `rnm2 = sqrt(sum r^2 / n^3)`, which must match NPB's reference value for
//! the class to a relative 1e-8, as NPB's `verify` requires. Operators:
//! `A` with coefficients (-8/3, 0, 1/6, 1/12) for the centre, 6 faces,
//! 12 edges and 8 corners; the smoother `psinv` with (-3/8, 1/32, -1/64, 0);
//! restriction `rprj3` with weights (1/2, 1/4, 1/8, 1/16); trilinear
//! interpolation `interp`. Classes: S 32^3, W 128^3, A 256^3, 4 iterations
//! each. NPB's untimed warm-up iteration is left out (it is undone before
//! the timed part, so the answer does not depend on it).

use crate::heap::Buf;
use crate::par::for_chunks;
use crate::rng::{Npb, NPB_SEED};

const A: [f64; 4] = [-8.0 / 3.0, 0.0, 1.0 / 6.0, 1.0 / 12.0];
const C: [f64; 4] = [-3.0 / 8.0, 1.0 / 32.0, -1.0 / 64.0, 0.0];

/// A cube of n^3 points with a periodic boundary layer: side m = n + 2.
struct Grid {
    n: usize,
    data: Buf<f64>,
}

impl Grid {
    fn m(&self) -> usize {
        self.n + 2
    }
    fn zeros(n: usize) -> Grid {
        Grid {
            n,
            data: Buf::filled((n + 2).pow(3), 0.0),
        }
    }
    /// Fills the boundary layer from the opposite faces (NPB's `comm3`).
    fn comm3(&mut self) {
        let (n, m) = (self.n, self.m());
        let d = &mut self.data;
        let at = |i: usize, j: usize, k: usize| i + m * (j + m * k);
        for k in 1..=n {
            for j in 1..=n {
                d[at(0, j, k)] = d[at(n, j, k)];
                d[at(n + 1, j, k)] = d[at(1, j, k)];
            }
        }
        for k in 1..=n {
            for i in 0..m {
                d[at(i, 0, k)] = d[at(i, n, k)];
                d[at(i, n + 1, k)] = d[at(i, 1, k)];
            }
        }
        for j in 0..m {
            for i in 0..m {
                d[at(i, j, 0)] = d[at(i, j, n)];
                d[at(i, j, n + 1)] = d[at(i, j, 1)];
            }
        }
    }
}

/// The 27-point sums around (i, j, k): centre, faces, edges, corners.
#[inline(always)]
fn sums(d: &[f64], m: usize, i: usize, j: usize, k: usize) -> [f64; 4] {
    let mut s = [0.0; 4];
    for dk in 0..3 {
        for dj in 0..3 {
            for di in 0..3 {
                let far = (di != 1) as usize + (dj != 1) as usize + (dk != 1) as usize;
                s[far] += d[(i + di - 1) + m * ((j + dj - 1) + m * (k + dk - 1))];
            }
        }
    }
    s
}

/// A fresh grid whose interior is `f(i, j, k)`, computed in parallel over
/// planes, boundary layer then filled.
fn interior(n: usize, threads: usize, f: impl Fn(usize, usize, usize) -> f64 + Sync) -> Grid {
    let m = n + 2;
    let mut g = Grid {
        n,
        data: Buf::uninit(m * m * m),
    };
    for_chunks(threads, &mut g.data, m * m, |first, block| {
        for (p, plane) in block.chunks_mut(m * m).enumerate() {
            let k = first / (m * m) + p;
            if k == 0 || k == n + 1 {
                continue;
            }
            for j in 1..=n {
                for i in 1..=n {
                    plane[i + m * j] = f(i, j, k);
                }
            }
        }
    });
    g.comm3();
    g
}

/// r = v - A u.
fn resid(u: &Grid, v: &Grid, threads: usize) -> Grid {
    let (m, ud, vd) = (u.m(), &u.data, &v.data);
    interior(u.n, threads, |i, j, k| {
        let s = sums(ud, m, i, j, k);
        vd[i + m * (j + m * k)] - (A[0] * s[0] + A[1] * s[1] + A[2] * s[2] + A[3] * s[3])
    })
}

/// u + C r (the smoother).
fn psinv(r: &Grid, u: &Grid, threads: usize) -> Grid {
    let (m, rd, ud) = (u.m(), &r.data, &u.data);
    interior(u.n, threads, |i, j, k| {
        let s = sums(rd, m, i, j, k);
        ud[i + m * (j + m * k)] + C[0] * s[0] + C[1] * s[1] + C[2] * s[2] + C[3] * s[3]
    })
}

/// Restriction to the grid of half the side: coarse (i, j, k) sits on fine (2i, 2j, 2k).
fn rprj3(r: &Grid, threads: usize) -> Grid {
    let (mf, rd) = (r.m(), &r.data);
    interior(r.n / 2, threads, |i, j, k| {
        let s = sums(rd, mf, 2 * i, 2 * j, 2 * k);
        0.5 * s[0] + 0.25 * s[1] + 0.125 * s[2] + 0.0625 * s[3]
    })
}

/// u + trilinear interpolation of the coarse z (over every point, boundary layer included, as NPB's `interp`).
fn interp(z: &Grid, u: &Grid, threads: usize) -> Grid {
    let (mc, mf, zd, ud) = (z.m(), u.m(), &z.data, &u.data);
    let mut out = Grid {
        n: u.n,
        data: Buf::uninit(mf * mf * mf),
    };
    // Coarse neighbours of a fine index and their weights.
    let w = |f: usize| -> [(usize, f64); 2] {
        if f.is_multiple_of(2) {
            [(f / 2, 1.0), (f / 2, 0.0)]
        } else {
            [((f - 1) / 2, 0.5), (f.div_ceil(2), 0.5)]
        }
    };
    for_chunks(threads, &mut out.data, mf * mf, |first, block| {
        for (p, plane) in block.chunks_mut(mf * mf).enumerate() {
            let k = first / (mf * mf) + p;
            let wk = w(k);
            for j in 0..mf {
                let wj = w(j);
                for i in 0..mf {
                    let wi = w(i);
                    let mut s = 0.0;
                    for &(ck, a) in &wk {
                        for &(cj, b) in &wj {
                            for &(ci, c) in &wi {
                                if a * b * c != 0.0 {
                                    s += a * b * c * zd[ci + mc * (cj + mc * ck)];
                                }
                            }
                        }
                    }
                    plane[i + mf * j] = ud[i + mf * (j + mf * k)] + s;
                }
            }
        }
    });
    out
}

/// NPB's `zran3`: +1 at the 10 largest, -1 at the 10 smallest random values.
fn zran3(n: usize) -> Grid {
    let mut rng = Npb::new(NPB_SEED);
    let mut vals: Vec<(f64, usize)> = Vec::with_capacity(n * n * n);
    let m = n + 2;
    for k in 1..=n {
        for j in 1..=n {
            for i in 1..=n {
                vals.push((rng.next_f64(), i + m * (j + m * k)));
            }
        }
    }
    vals.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut g = Grid::zeros(n);
    for &(_, at) in &vals[..10] {
        g.data[at] = -1.0;
    }
    for &(_, at) in &vals[vals.len() - 10..] {
        g.data[at] = 1.0;
    }
    g.comm3();
    g
}

/// One V-cycle (NPB's `mg3P`): the new u.
fn mg3p(u: &Grid, v: &Grid, r: Grid, threads: usize) -> Grid {
    // Down: restrict the residual to every coarser level.
    let mut rs = vec![r];
    while rs.last().expect("a level").n > 2 {
        let next = rprj3(rs.last().expect("a level"), threads);
        rs.push(next);
    }
    // Bottom (2^3): smooth from zero.
    let bottom = rs.pop().expect("the coarsest level");
    let mut uk = psinv(&bottom, &Grid::zeros(bottom.n), threads);
    drop(bottom);
    // Up, below the top: interpolate, correct the residual, smooth.
    while rs.len() > 1 {
        let rk = rs.pop().expect("a level");
        let zero = Grid::zeros(rk.n);
        let up = interp(&uk, &zero, threads);
        drop(zero);
        let rk = resid(&up, &rk, threads);
        uk = psinv(&rk, &up, threads);
    }
    // Top.
    let u = interp(&uk, u, threads);
    drop(uk);
    let r = resid(&u, v, threads);
    psinv(&r, &u, threads)
}

pub fn run(class: char, threads: usize, fault: bool) -> Result<String, String> {
    let (n, nit, want) = match class {
        'S' => (32, 4, 0.5307707005734e-04),
        'W' => (128, 4, 0.6467329375339e-05),
        _ => (256, 4, 0.2433365309069e-05),
    };
    crate::timing::start();
    let v = zran3(n);
    let mut u = Grid::zeros(n);
    let mut r = resid(&u, &v, threads);
    for _ in 0..nit {
        u = mg3p(&u, &v, r, threads);
        r = resid(&u, &v, threads);
    }
    let m = n + 2;
    let mut ss = 0.0;
    for k in 1..=n {
        for j in 1..=n {
            for i in 1..=n {
                let x = r.data[i + m * (j + m * k)];
                ss += x * x;
            }
        }
    }
    let mut rnm2 = (ss / (n * n * n) as f64).sqrt();
    crate::timing::stop();
    if fault {
        rnm2 *= 1.0 + 1e-6;
    }
    let err = ((rnm2 - want) / want).abs();
    if err > 1e-8 {
        return Err(format!("mg class {class}: rnm2 = {rnm2:.13e}, NPB's reference {want:.13e} (relative error {err:.2e})"));
    }
    Ok(format!(
        "mg class={class} grid={n}^3 iterations={nit} threads={threads} rnm2={rnm2:.13e} verified"
    ))
}
