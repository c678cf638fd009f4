//! parfib on the compiled-code interface: the program of
//! `benchmarks/parfib.rs` (every call returns its result boxed in a heap
//! cell; above the threshold the two calls are forked with the closure's
//! environment, a boxed `n`, as argument), emitted against the inline
//! allocator, with the first call's result in a frame slot across the
//! second call.

use super::{boxed, unbox};
use crate::benchmarks::parfib::outcome;
use crate::{rt_err, Outcome, Params};
use numagc::compiled::{header, Mutator};
use numagc::{Descriptor, Result, Runtime};

fn pfib(m: &mut Mutator<'_>, cell: u64, n: i64, threshold: i64) -> Result<u64> {
    if n < 2 {
        return boxed(m, cell, n);
    }
    let sum = if n <= threshold {
        let f = m.push_frame(1);
        let x = pfib(m, cell, n - 1, threshold);
        let r = x.and_then(|x| {
            f.set(0, x);
            let y = pfib(m, cell, n - 2, threshold)?;
            // SAFETY: `x` is reloaded from its slot, `y` was just returned.
            Ok(unsafe { unbox(m, f.get(0)) + unbox(m, y) })
        });
        m.pop_frame(f);
        r?
    } else {
        let env = boxed(m, cell, n)?;
        let (x, y) = m.par2(
            &[env],
            // SAFETY (both sides): `env[0]` is the live boxed `n`.
            move |m, env| pfib(m, cell, unsafe { unbox(m, env[0]) } - 1, threshold),
            move |m, env| pfib(m, cell, unsafe { unbox(m, env[0]) } - 2, threshold),
        )?;
        // SAFETY: both results were just returned by `par2`.
        unsafe { unbox(m, x) + unbox(m, y) }
    };
    boxed(m, cell, sum)
}

pub fn run(rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
    let (n, threshold) = (p.get("n"), p.get("threshold"));
    let desc = rt
        .register(Descriptor::mixed("int-box", 1, &[0]).map_err(rt_err)?)
        .map_err(rt_err)?;
    let cell = header(desc, 1);
    let got = rt
        .run_on(0, move |s| -> Result<i64> {
            // SAFETY: this module keeps the interface's contract.
            let mut m = unsafe { s.compiled() };
            let b = pfib(&mut m, cell, n, threshold)?;
            // SAFETY: `b` was just returned.
            Ok(unsafe { unbox(&m, b) })
        })
        .map_err(rt_err)?
        .map_err(rt_err)?;
    Ok(outcome(n, threshold, got))
}
