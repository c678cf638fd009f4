//! Runs one benchmark of the suite a few times on each vproc count and
//! prints the median wall time and the speedup over the first count: the
//! quick loop for working on one benchmark (the full harness is `numagc
//! bench`).
//!
//! `cargo run --release -p numagc-bench --example run -- NAME [quick|paper] [VPROCS,...] [REPEAT]`

use numagc::{Config, Runtime};
use numagc_bench::{find, Params, Size};
use std::time::Instant;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args
        .first()
        .ok_or("usage: run NAME [quick|paper] [VPROCS,...] [REPEAT]")?;
    let bench = find(name).ok_or_else(|| format!("no benchmark {name:?}"))?;
    let size = Size::parse(args.get(1).map_or("quick", |s| s.as_str()))?;
    let counts: Vec<usize> = args
        .get(2)
        .map_or("1,2", |s| s.as_str())
        .split(',')
        .map(|v| v.parse().map_err(|e| format!("vprocs {v:?}: {e}")))
        .collect::<Result<_, _>>()?;
    let repeat: usize = args
        .get(3)
        .map_or(Ok(3), |s| s.parse())
        .map_err(|e| format!("repeat: {e}"))?;
    let params = Params::new(bench, size, &[])?;
    println!("{name} ({size}: {params})");
    let mut base = None;
    for &v in &counts {
        let mut times = Vec::new();
        for i in 0..repeat {
            let rt = Runtime::new(
                Config::builder()
                    .vprocs(v)
                    .build()
                    .map_err(|e| e.to_string())?,
            )
            .map_err(|e| e.to_string())?;
            let t0 = Instant::now();
            let outcome = bench.run(&rt, &params)?;
            times.push(t0.elapsed().as_secs_f64());
            (outcome.check)().map_err(|e| format!("wrong answer: {e}"))?;
            if i == 0 && v == counts[0] {
                print!("{}", outcome.output);
            }
            let s = rt.stats();
            if i == 0 {
                let gc = s.total.minor.total_ns
                    + s.total.major.total_ns
                    + s.total.promotion.total_ns
                    + s.total.global.total_ns;
                println!(
                    "  vprocs {v}: allocated {:.1} MB, promoted {:.1} MB, GC {:.1} ms, {} steals",
                    s.total.bytes_allocated as f64 / 1e6,
                    s.total.bytes_promoted as f64 / 1e6,
                    gc as f64 / 1e6,
                    s.total.tasks_stolen
                );
            }
        }
        times.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let med = times[times.len() / 2];
        let b = *base.get_or_insert(med);
        println!(
            "  vprocs {v}: median {med:.3} s (min {:.3}, max {:.3}), speedup {:.2}",
            times[0],
            times[times.len() - 1],
            b / med
        );
    }
    Ok(())
}
