//! spectral-norm from the Computer Language Benchmarks Game
//! (`multicore-ocaml-gc.txt` §6.2, Sandmark's `spectralnorm2_multicore`):
//! the largest singular value of the infinite matrix A(i,j) =
//! 1/((i+j)(i+j+1)/2 + i + 1), truncated to N×N, by 10 rounds of the power
//! method on AᵀA (u ← AᵀA v, v ← AᵀA u, starting from u = 1), printed as
//! sqrt(uᵀv / vᵀv) with 9 decimals as the standard program prints it.
//!
//! Every vector is immutable and allocated through the runtime: a
//! sequence (built by `tabulate`) of raw objects of `chunk` f64s each. Each
//! matrix-vector product builds a new vector, its chunks computed in
//! parallel (`tabulate` over chunk indices, one chunk per task); each
//! element reads the whole input vector chunk by chunk. Where the original
//! program writes into preallocated arrays with `parallel_for`, this one
//! allocates 40 fresh vectors (2 products per AᵀA, 2 AᵀA per round); the
//! final dot products are sequential (O(N), negligible). The products
//! allocate only once per chunk, so they poll for a safepoint once per
//! element: a thief waits for its victim's next safepoint to receive the
//! stolen task's environment.
//!
//! Check: a plain-Rust sequential power method on `Vec<f64>`, written with
//! its own loops, must give the same norm and the same final vectors (the
//! run copies them out after the loop; the norm alone, a Rayleigh
//! quotient, would hide small errors in the vectors). Each element's sum
//! is accumulated in the same j order in both, so they agree to the last
//! bit; the tolerance is 1e-12. At N = 100 and N = 5500 the printed norm
//! must also be the Benchmarks Game's published output.

use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{Handle, Result, Runtime, Scope};

/// Rounds of the power method (u ← AᵀA v, v ← AᵀA u), as the original.
const ROUNDS: usize = 10;
/// The largest chunk: 256 f64s are 2 KiB, allocated in the nursery.
const MAX_CHUNK: usize = 256;
/// The Benchmarks Game's published outputs (N, printed norm).
const KNOWN: &[(usize, &str)] = &[(100, "1.274219991"), (5500, "1.274224153")];

pub struct SpectralNorm;

/// A(i,j), 0-based.
#[inline(always)]
fn a(i: usize, j: usize) -> f64 {
    1.0 / (((i + j) * (i + j + 1) / 2 + i + 1) as f64)
}

/// A·u, or Aᵀ·u when `transpose`: a new vector of `n` elements in chunks of
/// `chunk`, the chunks computed in parallel.
fn times<'s>(
    s: &mut Scope<'s>,
    u: Handle<'_>,
    n: usize,
    chunk: usize,
    transpose: bool,
) -> Result<Handle<'s>> {
    s.tabulate(&[u], 0, n.div_ceil(chunk), 1, move |s, env, c| {
        let (lo, hi) = (c * chunk, ((c + 1) * chunk).min(n));
        // The chunk's elements, in a local buffer of the loop that is copied
        // into the new raw object.
        let mut out = [0.0f64; MAX_CHUNK];
        for (k, out_i) in out[..hi - lo].iter_mut().enumerate() {
            // A safepoint per element (see the module docs).
            s.poll();
            let i = lo + k;
            let (mut sum, mut j0) = (0.0, 0);
            s.seq_for_each(env[0], |piece| {
                let words = piece.raw_words().expect("a vector chunk is a raw object");
                for (dj, &w) in words.iter().enumerate() {
                    let aij = if transpose {
                        a(j0 + dj, i)
                    } else {
                        a(i, j0 + dj)
                    };
                    sum += aij * f64::from_bits(w);
                }
                j0 += words.len();
            })?;
            *out_i = sum;
        }
        s.alloc_f64s(&out[..hi - lo])
    })
}

/// AᵀA·u.
fn times_ata<'s>(s: &mut Scope<'s>, u: Handle<'_>, n: usize, chunk: usize) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let au = times(s, u, n, chunk, false)?;
        times(s, au, n, chunk, true)
    })
}

/// The result of the power method: the norm and the final vectors, copied
/// out for the check (the norm, a Rayleigh quotient, is insensitive to small
/// errors in the vectors).
struct Answer {
    norm: f64,
    u: Vec<f64>,
    v: Vec<f64>,
}

/// The power method on the heap.
fn spectral_norm(s: &mut Scope<'_>, n: usize, chunk: usize) -> Result<Answer> {
    let ones = s.tabulate(&[], 0, n.div_ceil(chunk), 1, move |s, _, c| {
        let len = ((c + 1) * chunk).min(n) - c * chunk;
        s.alloc_f64s(&[1.0; MAX_CHUNK][..len])
    })?;
    let u = s.slot(ones);
    let v = s.slot(Handle::NIL);
    for _ in 0..ROUNDS {
        s.scope(|s| -> Result<()> {
            let new_v = times_ata(s, u.get(), n, chunk)?;
            s.assign(v, new_v);
            let new_u = times_ata(s, v.get(), n, chunk)?;
            s.assign(u, new_u);
            Ok(())
        })?;
    }
    // The dot products, chunk by chunk (both vectors have the same chunks).
    let (mut vbv, mut vv) = (0.0f64, 0.0f64);
    let (mut u_out, mut v_out) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for c in 0..s.seq_len(u.get())? {
        s.scope(|s| -> Result<()> {
            let (uc, vc) = (s.seq_get(u.get(), c)?, s.seq_get(v.get(), c)?);
            let (uw, vw) = (
                s.view(uc).raw_words().expect("raw chunk"),
                s.view(vc).raw_words().expect("raw chunk"),
            );
            for (&x, &y) in uw.iter().zip(vw) {
                let (x, y) = (f64::from_bits(x), f64::from_bits(y));
                vbv += x * y;
                vv += y * y;
                u_out.push(x);
                v_out.push(y);
            }
            Ok(())
        })?;
    }
    Ok(Answer {
        norm: (vbv / vv).sqrt(),
        u: u_out,
        v: v_out,
    })
}

/// The sequential power method on Rust vectors (the independent answer).
fn reference(n: usize) -> Answer {
    let mat = |i: usize, j: usize| 1.0 / ((i + j) * (i + j + 1) / 2 + i + 1) as f64;
    let mul = |x: &[f64], transpose: bool| -> Vec<f64> {
        (0..n)
            .map(|i| {
                let mut sum = 0.0;
                for (j, &xj) in x.iter().enumerate() {
                    sum += if transpose { mat(j, i) } else { mat(i, j) } * xj;
                }
                sum
            })
            .collect()
    };
    let (mut u, mut v) = (vec![1.0; n], vec![0.0; n]);
    for _ in 0..ROUNDS {
        v = mul(&mul(&u, false), true);
        u = mul(&mul(&v, false), true);
    }
    let vbv: f64 = u.iter().zip(&v).map(|(x, y)| x * y).sum();
    let vv: f64 = v.iter().map(|y| y * y).sum();
    Answer {
        norm: (vbv / vv).sqrt(),
        u,
        v,
    }
}

impl Benchmark for SpectralNorm {
    fn name(&self) -> &'static str {
        "spectralnorm"
    }
    fn source(&self) -> &'static str {
        "multicore-ocaml-gc.txt §6.2"
    }
    fn description(&self) -> &'static str {
        "power method for the spectral norm of an infinite matrix; immutable chunked vectors"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "n",
                help: "matrix size N",
                quick: 1500,
                paper: 5500,
                scale: 11_000,
                min: 1,
                max: 100_000,
            },
            Param {
                name: "chunk",
                help: "vector elements per raw object and per task",
                quick: 64,
                paper: 64,
                scale: 64,
                min: 1,
                max: MAX_CHUNK as i64,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, chunk) = (p.usize("n"), p.usize("chunk"));
        let got = rt
            .run_on(0, move |s| spectral_norm(s, n, chunk))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let printed = format!("{:.9}", got.norm);
        Ok(Outcome::new(format!("{printed}\n"), move || {
            let want = reference(n);
            let close = |x: f64, y: f64| (x - y).abs() <= 1e-12 * y.abs().max(1e-300);
            if !close(got.norm, want.norm) {
                return Err(format!(
                    "norm {:.15}, sequential recomputation {:.15}",
                    got.norm, want.norm
                ));
            }
            for (name, xs, ys) in [("u", &got.u, &want.u), ("v", &got.v, &want.v)] {
                if xs.len() != n {
                    return Err(format!("{name} has {} elements, expected {n}", xs.len()));
                }
                if let Some(i) = (0..n).find(|&i| !close(xs[i], ys[i])) {
                    return Err(format!(
                        "{name}[{i}] = {}, sequential recomputation {}",
                        xs[i], ys[i]
                    ));
                }
            }
            match KNOWN.iter().find(|&&(kn, _)| kn == n) {
                Some(&(_, known)) if printed != known => {
                    Err(format!("N = {n}: printed {printed}, published {known}"))
                }
                _ => Ok(()),
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numagc::Config;

    #[test]
    fn n_100_prints_the_published_value_on_two_vprocs() {
        let rt = Runtime::new(Config::builder().vprocs(2).verify(true).build().unwrap()).unwrap();
        let params = Params::new(
            &SpectralNorm,
            crate::Size::Quick,
            &[("n".into(), 100), ("chunk".into(), 7)],
        )
        .unwrap();
        let outcome = SpectralNorm.run(&rt, &params).unwrap();
        assert_eq!(outcome.output, "1.274219991\n");
        (outcome.check)().unwrap();
    }
}
