//! parfib (gumsmp-shared-distributed-heaps.txt §3.1): the naive doubly
//! recursive Fibonacci, forked with `Scope::par2` above a sequential
//! threshold, on the numagc heap: every call returns its result boxed in a
//! heap object, so the parallel tasks allocate, collect, and (when stolen)
//! promote their results as a functional language's would. The answer is
//! checked against an iterative Fibonacci computed independently.
//!
//! Figures: wall time, tasks forked / run inline / stolen, bytes promoted,
//! collections. Run it with `--task-promotion lazy` and `eager` to compare
//! the two promotion policies.

use crate::runtime_args::RuntimeArgs;
use numagc::{DescId, Descriptor, Handle, Result, Runtime, Scope};
use std::path::PathBuf;
use std::time::Instant;

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
        // only when the task is stolen; eager promotion at every fork).
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

fn fib(n: i64) -> i64 {
    let (mut a, mut b) = (0i64, 1i64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

pub fn run(n: i64, threshold: i64, json: Option<PathBuf>, args: &RuntimeArgs) -> std::result::Result<(), String> {
    if !(0..=80).contains(&n) {
        return Err(format!("--n {n}: allowed 0 ..= 80"));
    }
    let config = args.config()?;
    let vprocs = config.vprocs;
    let promotion = config.task_promotion;
    let rt = Runtime::new(config).map_err(|e| e.to_string())?;
    let cell = rt.register(Descriptor::mixed("int-box", 1, &[0]).unwrap()).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    let got = rt
        .run_on(0, move |s| pfib(s, cell, n, threshold).map(|h| unbox(s, h)))
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let wall = t0.elapsed().as_secs_f64();
    let expected = fib(n);
    println!("parfib {n} (threshold {threshold}) = {got}");
    let stats = rt.stats();
    let t = &stats.total;
    println!(
        "parfib on {vprocs} vproc(s), {promotion:?} promotion: wall {wall:.3} s, tasks {} forked / {} inline / {} stolen, promoted {} bytes, {} global collections",
        t.tasks_forked, t.tasks_inline, t.tasks_stolen, t.bytes_promoted, rt.global_collections()
    );
    print!("{}", stats.table());
    if let Some(path) = json {
        let v = serde_json::json!({
            "benchmark": "parfib",
            "n": n,
            "threshold": threshold,
            "vprocs": vprocs,
            "task_promotion": promotion,
            "wall_s": wall,
            "result": got,
            "correct": got == expected,
            "tasks_forked": t.tasks_forked,
            "tasks_inline": t.tasks_inline,
            "tasks_stolen": t.tasks_stolen,
            "bytes_promoted": t.bytes_promoted,
            "global_collections": rt.global_collections(),
            "stats": stats.to_json(),
        });
        crate::bench::write_json(&path, &v)?;
    }
    if got != expected {
        return Err(format!("wrong answer: parfib {n} = {got}, expected {expected}"));
    }
    Ok(())
}
