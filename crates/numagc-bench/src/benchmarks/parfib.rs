//! parfib (`gumsmp-shared-distributed-heaps.txt` §3.1): the naive doubly
//! recursive Fibonacci, forked above a sequential threshold with
//! `Scope::par2_export` (`par2` on one runtime; on a PE group, `--pes`,
//! another PE may take the right call). Every call returns its result boxed in a heap object, so the
//! parallel tasks allocate, collect, and (when stolen) promote their
//! results as a functional language's would. The boxes are held in
//! typed handles ([`numagc::Typed`]): the program knows their layout, so
//! reading one needs no check of its header. The answer is checked
//! against an iterative Fibonacci computed independently.

use crate::pe_support::ExportTable;
use crate::{register_as, rt_err, Benchmark, Outcome, Param, Params, PeProgram};
use numagc::pe::PeGroup;
use numagc::{DescId, Fresh, Handle, Layout, Registered, Result, Runtime, Scope, Typed};

pub struct Parfib;

/// The boxes' layout: one value field; the runtime's first descriptor
/// (`setup`).
struct Cell;

impl Layout for Cell {
    const NAME: &'static str = "int-box";
    const DESC: DescId = DescId::nth_registered(0);
    const SIZE: usize = 1;
    const VALUES: u32 = 0b1;
}

/// A box held in a typed handle.
type Boxed<'s> = Typed<'s, Cell>;

/// The proof that the runtime registered the boxes' layout, made once per
/// task (the job's, and each forked call's: `pfib_rooted`): the
/// allocations under it test nothing (`Scope::alloc_fresh_as`). Its
/// scope's lifetime is the task's, which outlives every call it is
/// passed to.
type Proof<'j> = Registered<'j, Cell>;

/// What every runtime (every PE) registers before the program runs.
fn setup(rt: &Runtime) -> Result<()> {
    register_as(rt, Cell::DESC, Cell::descriptor()?)
}

/// The program's exportable function: the right call of a fork.
static EXPORTS: ExportTable<1> = ExportTable::new([("parfib.right", right_task)]);

fn unbox(s: &Scope<'_>, b: Boxed<'_>) -> i64 {
    s.int(b, 0).expect("a boxed integer")
}

/// A box that came back untyped (through a fork), typed again: one look
/// at its header.
fn typed<'s>(s: &Scope<'s>, h: Handle<'_>) -> Boxed<'s> {
    s.typed::<Cell>(h).expect("a box")
}

/// `pfib n`, its box unrooted ([`Fresh`]) for the caller to keep: a leaf
/// boxes `n` where it is called (inlined: the test and the box are all a
/// leaf costs); an inner call is [`pfib_call`].
#[inline(always)]
fn pfib<'a>(
    s: &'a mut Scope<'_>,
    cell: Proof<'_>,
    n: i64,
    threshold: i64,
) -> Result<Fresh<'a, Cell>> {
    if n < 2 {
        return s.alloc_fresh_as(cell, &[Handle::int(n)], &[]);
    }
    pfib_call(s, cell, n, threshold)
}

/// `pfib n` in a typed handle of `s`.
fn pfib_rooted<'s>(s: &mut Scope<'s>, n: i64, threshold: i64) -> Result<Boxed<'s>> {
    let cell = s.registered::<Cell>()?;
    s.scope_fresh(|s| pfib(s, cell, n, threshold))
}

/// An inner call: a frame of one slot (OCaml's `CAMLlocal1`), which
/// keeps the first call's box across the second call (or the fork's
/// environment), reserved and popped with one store of the root stack's
/// top each; the second call's box is read where it is returned, with no
/// slot, as the compiled version reads it. The sum's box, allocated
/// last, goes back unrooted to the caller, who keeps it in its own frame
/// (`Scope::frame_fresh`).
#[inline(never)]
fn pfib_call<'a>(
    s: &'a mut Scope<'_>,
    cell: Proof<'_>,
    n: i64,
    threshold: i64,
) -> Result<Fresh<'a, Cell>> {
    s.frame_fresh(|s, [a]| {
        let sum = if n <= threshold {
            let x = a.keep(pfib(s, cell, n - 1, threshold)?);
            let y = pfib(s, cell, n - 2, threshold)?
                .int(0)
                .expect("a boxed integer");
            unbox(s, x) + y
        } else {
            // The forked closures' environment: a heap record holding `n`,
            // as a functional language's closure would (lazy promotion
            // copies it only when the task is stolen; another PE gets it
            // packed).
            let env = a.keep(s.alloc_fresh_as(cell, &[Handle::int(n)], &[])?);
            let (x, y) = s.par2_export(
                EXPORTS.export(0),
                &[env.untyped(), Handle::int(threshold)],
                move |s, env| {
                    let n = unbox(s, typed(s, env[0]));
                    pfib_rooted(s, n - 1, threshold).map(|b| b.untyped())
                },
            )?;
            unbox(s, typed(s, x)) + unbox(s, typed(s, y))
        };
        s.alloc_fresh_as(cell, &[Handle::int(sum)], &[])
    })
}

/// `pfib (n - 2)` of a fork, `n` boxed in `args[0]`, the threshold in
/// `args[1]`: the half another vproc or PE may run.
fn right_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let (env, threshold) = match args {
        [env, t] => (*env, s.as_int(*t)),
        _ => (Handle::NIL, None),
    };
    let threshold = threshold
        .ok_or_else(|| numagc::Error::misuse("parfib.right: (box, threshold) expected"))?;
    let n = match s.typed::<Cell>(env) {
        Some(b) => unbox(s, b),
        None => return Err(numagc::Error::misuse("parfib.right: a box expected")),
    };
    pfib_rooted(s, n - 2, threshold).map(|b| b.untyped())
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
                scale: 43,
                min: 0,
                max: 80,
            },
            Param {
                name: "threshold",
                help: "calls with n at most this run sequentially",
                quick: 15,
                paper: 20,
                scale: 22,
                min: 1,
                max: 80,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, threshold) = (p.get("n"), p.get("threshold"));
        setup(rt).map_err(rt_err)?;
        let got = rt
            .run_on(0, move |s| {
                pfib_rooted(s, n, threshold).map(|h| unbox(s, h))
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(n, threshold, got))
    }

    fn pe_program(&self) -> Option<PeProgram> {
        Some(EXPORTS.program(setup))
    }

    fn run_pes(&self, g: &PeGroup, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, threshold) = (p.get("n"), p.get("threshold"));
        let got = g
            .run(move |s| pfib_rooted(s, n, threshold).map(|h| unbox(s, h)))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(n, threshold, got))
    }

    fn has_compiled(&self) -> bool {
        true
    }

    fn run_compiled(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        crate::compiled::parfib::run(rt, p, crate::compiled::Returns::Stack)
    }

    fn has_compiled_calls(&self) -> bool {
        true
    }

    fn run_compiled_calls(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        crate::compiled::parfib::run(rt, p, crate::compiled::Returns::Calls)
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
