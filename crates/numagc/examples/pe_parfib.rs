//! parfib on PE groups, side by side: `P PEs x K vprocs` configurations
//! alternated, each run checked against an iterative Fibonacci, with the
//! median, range and the PEs' traffic printed (until `numagc bench`
//! takes `--pes`, issue 19).
//!
//! `cargo run --release -p numagc --example pe_parfib -- N THRESHOLD ROUNDS PxK...`
//! e.g. `... -- 32 20 5 1x2 2x1`.

use numagc::pe::{Export, Exports, PeGroup};
use numagc::{Config, DescId, Descriptor, Handle, Result, Runtime, Scope};
use std::sync::OnceLock;
use std::time::Instant;

const CELL: DescId = DescId::nth_registered(0);
static PFIB: OnceLock<Export> = OnceLock::new();
static THRESHOLD: OnceLock<i64> = OnceLock::new();

fn setup(rt: &Runtime) -> Result<()> {
    rt.register(Descriptor::mixed("int-box", 1, &[0])?)?;
    Ok(())
}

fn boxed<'s>(s: &mut Scope<'s>, x: i64) -> Result<Handle<'s>> {
    s.alloc_mixed(CELL, &[Handle::int(x)], &[])
}

fn unbox(s: &Scope<'_>, h: Handle<'_>) -> i64 {
    s.view(h).field(0).as_int().expect("a boxed integer")
}

/// The suite's parfib (`numagc-bench`'s `benchmarks/parfib.rs`), its fork
/// an exportable task.
fn pfib<'s>(s: &mut Scope<'s>, n: i64) -> Result<Handle<'s>> {
    if n < 2 {
        return boxed(s, n);
    }
    let (x, y) = if n <= *THRESHOLD.get().unwrap() {
        let x = s.scope_value(|s| pfib(s, n - 1))?;
        let y = s.scope_value(|s| pfib(s, n - 2))?;
        (x, y)
    } else {
        let env = boxed(s, n - 2)?;
        s.par2_export(*PFIB.get().unwrap(), &[env], move |s, _| pfib(s, n - 1))?
    };
    let r = unbox(s, x) + unbox(s, y);
    boxed(s, r)
}

fn pfib_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let n = unbox(s, args[0]);
    pfib(s, n)
}

fn fib(n: i64) -> i64 {
    let (mut a, mut b) = (0i64, 1i64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: pe_parfib N THRESHOLD ROUNDS PxK...");
        std::process::exit(2);
    }
    let n: i64 = args[0].parse().expect("N");
    THRESHOLD.set(args[1].parse().expect("THRESHOLD")).unwrap();
    let rounds: usize = args[2].parse().expect("ROUNDS");
    let shapes: Vec<(usize, usize)> = args[3..]
        .iter()
        .map(|a| {
            let (p, k) = a.split_once('x').expect("PxK");
            (p.parse().expect("P"), k.parse().expect("K"))
        })
        .collect();
    let mut exports = Exports::new();
    PFIB.set(exports.register("pfib", pfib_task).unwrap())
        .unwrap();
    let mut times: Vec<Vec<f64>> = vec![vec![]; shapes.len()];
    let mut traffic = vec![String::new(); shapes.len()];
    for _ in 0..rounds {
        for (i, &(pes, vprocs)) in shapes.iter().enumerate() {
            let config = Config::builder().vprocs(vprocs).build().unwrap();
            let g = PeGroup::new(pes, config, exports.clone(), setup).unwrap();
            let t0 = Instant::now();
            let got = g
                .run(move |s| pfib(s, n).map(|h| unbox(s, h)))
                .unwrap()
                .unwrap();
            times[i].push(t0.elapsed().as_secs_f64());
            assert_eq!(got, fib(n), "{pes}x{vprocs}");
            let st = g.stats();
            traffic[i] = format!(
                "tasks exported {}, messages {}, bytes {}, remote wait {:.1} ms",
                st.iter().map(|s| s.tasks_exported).sum::<u64>(),
                st.iter().map(|s| s.messages_sent).sum::<u64>(),
                st.iter().map(|s| s.bytes_sent).sum::<u64>(),
                st.iter().map(|s| s.remote_wait_ms).sum::<f64>(),
            );
        }
    }
    let base = median(&times[0]);
    println!(
        "parfib {n} (threshold {}), {rounds} rounds alternated",
        THRESHOLD.get().unwrap()
    );
    println!(
        "| PEs x vprocs | median s | range s | / {}x{} | last run's traffic |",
        shapes[0].0, shapes[0].1
    );
    println!("|---|---|---|---|---|");
    for (i, &(p, k)) in shapes.iter().enumerate() {
        let t = &times[i];
        let lo = t.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = t.iter().cloned().fold(0.0, f64::max);
        println!(
            "| {p} x {k} | {:.3} | {lo:.3} .. {hi:.3} | {:.2} | {} |",
            median(t),
            median(t) / base,
            traffic[i]
        );
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}
