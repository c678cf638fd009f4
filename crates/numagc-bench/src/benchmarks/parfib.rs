//! parfib (`gumsmp-shared-distributed-heaps.txt` §3.1): the naive doubly
//! recursive Fibonacci, forked with `Scope::par2` above a sequential
//! threshold. Every call returns its result boxed in a heap object, so the
//! parallel tasks allocate, collect, and (when stolen) promote their
//! results as a functional language's would. The answer is checked
//! against an iterative Fibonacci computed independently.

use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{DescId, Descriptor, Handle, Result, Runtime, Scope};

pub struct Parfib;

fn boxed<'s>(s: &mut Scope<'s>, cell: DescId, x: i64) -> Result<Handle<'s>> {
    s.alloc_mixed(cell, &[Handle::int(x)], &[])
}

fn unbox(s: &Scope<'_>, h: Handle<'_>) -> i64 {
    s.view(h).field(0).as_int().expect("a boxed integer")
}

fn pfib<'s>(s: &mut Scope<'s>, cell: DescId, n: i64, threshold: i64) -> Result<Handle<'s>> {
    if n < 2 {
        return boxed(s, cell, n);
    }
    let (x, y) = if n <= threshold {
        let x = s.scope_value(|s| pfib(s, cell, n - 1, threshold))?;
        let y = s.scope_value(|s| pfib(s, cell, n - 2, threshold))?;
        (x, y)
    } else {
        // The forked closures' environment: a heap record holding `n`, as a
        // functional language's closure would (lazy promotion copies it
        // only when the task is stolen).
        let env = boxed(s, cell, n)?;
        s.par2(
            &[env],
            move |s, env| {
                let n = unbox(s, env[0]);
                pfib(s, cell, n - 1, threshold)
            },
            move |s, env| {
                let n = unbox(s, env[0]);
                pfib(s, cell, n - 2, threshold)
            },
        )?
    };
    let sum = unbox(s, x) + unbox(s, y);
    boxed(s, cell, sum)
}

/// Iterative Fibonacci (the independent answer).
pub(crate) fn fib(n: i64) -> i64 {
    let (mut a, mut b) = (0i64, 1i64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

impl Benchmark for Parfib {
    fn name(&self) -> &'static str {
        "parfib"
    }
    fn source(&self) -> &'static str {
        "gumsmp-shared-distributed-heaps.txt §3.1"
    }
    fn description(&self) -> &'static str {
        "doubly recursive Fibonacci with boxed results, forked above a threshold"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "n",
                help: "which Fibonacci number",
                quick: 30,
                paper: 38,
                min: 0,
                max: 80,
            },
            Param {
                name: "threshold",
                help: "calls with n at most this run sequentially",
                quick: 15,
                paper: 20,
                min: 1,
                max: 80,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, threshold) = (p.get("n"), p.get("threshold"));
        let cell = rt
            .register(Descriptor::mixed("int-box", 1, &[0]).map_err(rt_err)?)
            .map_err(rt_err)?;
        let got = rt
            .run_on(0, move |s| pfib(s, cell, n, threshold).map(|h| unbox(s, h)))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(n, threshold, got))
    }

    fn has_compiled(&self) -> bool {
        true
    }

    fn run_compiled(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        crate::compiled::parfib::run(rt, p)
    }
}

/// The printed answer and its check against `fib`, shared by the safe and
/// the compiled versions.
pub(crate) fn outcome(n: i64, threshold: i64, got: i64) -> Outcome {
    Outcome::new(
        format!("parfib {n} (threshold {threshold}) = {got}\n"),
        move || {
            let want = fib(n);
            if got == want {
                Ok(())
            } else {
                Err(format!("parfib {n} = {got}, expected {want}"))
            }
        },
    )
}
