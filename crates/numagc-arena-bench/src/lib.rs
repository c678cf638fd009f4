//! The workloads of `numagc arena-bench` (issue 7, item 6),
//! one per run, each in a process of its own so that the allocator under
//! test is chosen by `LD_PRELOAD` (glibc's malloc when nothing is
//! preloaded; jemalloc, mimalloc, tcmalloc or numagc-malloc's
//! `libnumagc_malloc.so` otherwise). The workloads call `malloc`/`free`
//! (through `heap::Buf` or directly) and nothing else, so every allocator
//! runs the same machine code. With `--rich`, fig1, ft and mg call
//! numagc-arena's own interface instead (linked in, no `malloc`), as SAC's
//! generated code calls its heap manager.
//!
//! ```text
//! arena-workload fig1 --x X [--total 10000000] [--iterations 50] [--bound|--rich] [--threads K]
//! arena-workload ft --class S|W|A [--bound|--rich] [--threads K]
//! arena-workload mg --class S|W|A [--bound|--rich] [--threads K]
//! arena-workload larson [--slots N] [--steps N] [--epochs N] [--min B] [--max B] [--seed S] [--bound] [--threads K]
//! arena-workload xmalloc [--batches N] [--batch N] [--min B] [--max B] [--seed S] [--bound] [--threads K]
//! ```
//!
//! `--bound` runs the workload's no-allocation bound: the same work with no
//! allocator call in the timed loop (see each module), whose time an
//! allocator's overhead is measured against.
//!
//! Each checks its answer against an independent computation (see each
//! module) and prints one line starting with `ok`, ending with the
//! allocator's object (`malloc=`) and the workload's own time (`seconds=`); a wrong answer is
//! reported on standard error with exit status 2, bad arguments with 64.
//! `NUMAGC_ARENA_BENCH_FAULT=WORKLOAD` (or `all`) corrupts the computed
//! answer just before its check: the tests use it to see that the check,
//! and `numagc arena-bench` after it, fail.

mod fig1;
mod ft;
mod heap;
mod larson;
mod malloc_origin;
mod mg;
mod par;
mod rng;
mod tagged;
mod timing;
mod xmalloc;

pub use malloc_origin::malloc_origin;

use std::collections::HashMap;

/// What a workload run with `--rich` reports as its `malloc=`: its arrays
/// came from numagc-arena's own interface, linked in.
pub const RICH_ORIGIN: &str = "numagc-arena(rich)";

/// The command line of a workload.
pub const USAGE: &str =
    "usage: arena-workload fig1|ft|mg|larson|xmalloc [--KEY VALUE]... [--bound|--rich] [--threads K] [--waits (fig1)]";

/// How a workload run ended.
pub enum Outcome {
    /// The answer was right: the line to print (it starts with `ok`).
    Ok(String),
    /// The answer was wrong (exit status 2).
    Wrong(String),
    /// Bad arguments (exit status 64).
    Usage(String),
}

impl Outcome {
    /// Prints the outcome and gives the exit status.
    pub fn report(self) -> u8 {
        match self {
            Outcome::Ok(line) => {
                println!("{line}");
                0
            }
            Outcome::Wrong(e) => {
                eprintln!("arena-workload: WRONG ANSWER: {e}");
                2
            }
            Outcome::Usage(e) => {
                eprintln!("arena-workload: {e}");
                64
            }
        }
    }
}

struct Args {
    values: HashMap<String, String>,
    flags: Vec<String>,
}

impl Args {
    fn parse(rest: &[String]) -> Result<Args, String> {
        let mut values = HashMap::new();
        let mut flags = Vec::new();
        let mut i = 0;
        while i < rest.len() {
            let key = rest[i]
                .strip_prefix("--")
                .ok_or_else(|| format!("unexpected argument {:?}", rest[i]))?;
            if key == "bound" || key == "rich" || key == "waits" {
                flags.push(key.to_string());
                i += 1;
                continue;
            }
            let v = rest
                .get(i + 1)
                .ok_or_else(|| format!("--{key} needs a value"))?;
            values.insert(key.to_string(), v.clone());
            i += 2;
        }
        Ok(Args { values, flags })
    }

    fn num(&mut self, key: &str, default: Option<usize>) -> Result<usize, String> {
        match self.values.remove(key) {
            Some(v) => v
                .replace('_', "")
                .parse()
                .map_err(|_| format!("--{key} {v:?}: not a number")),
            None => default.ok_or_else(|| format!("--{key} is required")),
        }
    }

    fn class(&mut self) -> Result<char, String> {
        let v = self
            .values
            .remove("class")
            .ok_or("--class is required (S, W or A)")?;
        match v.as_str() {
            "S" | "s" => Ok('S'),
            "W" | "w" => Ok('W'),
            "A" | "a" => Ok('A'),
            _ => Err(format!("--class {v:?}: one of S, W, A")),
        }
    }

    fn done(self) -> Result<(), String> {
        match self.values.keys().next() {
            Some(k) => Err(format!("unknown option --{k}")),
            None => Ok(()),
        }
    }
}

/// Runs the workload `argv[0]` with the options after it; the answer is
/// checked, and `NUMAGC_ARENA_BENCH_FAULT` applied.
pub fn run(argv: &[String]) -> Outcome {
    let Some(workload) = argv.first().cloned() else {
        return Outcome::Usage(USAGE.into());
    };
    let fault =
        std::env::var("NUMAGC_ARENA_BENCH_FAULT").is_ok_and(|f| f == workload || f == "all");
    let mut rich = false;
    let outcome = Args::parse(&argv[1..]).and_then(|mut a| {
        let threads = a.num("threads", Some(1))?;
        if threads == 0 {
            return Err("--threads 0: at least 1".into());
        }
        let bound = a.flags.iter().any(|f| f == "bound");
        rich = a.flags.iter().any(|f| f == "rich");
        if bound && rich {
            return Err("--bound and --rich: one or the other".into());
        }
        if rich && !matches!(workload.as_str(), "fig1" | "ft" | "mg") {
            return Err(format!(
                "--rich: {workload} is a malloc pattern; the rich interface runs fig1, ft and mg"
            ));
        }
        let run = match workload.as_str() {
            "fig1" => {
                let x = a.num("x", None)?;
                let total = a.num("total", Some(10_000_000))?;
                let iters = a.num("iterations", Some(50))?;
                let waits = a.flags.iter().any(|f| f == "waits");
                a.done()?;
                let mode = match (bound, rich) {
                    (true, _) => fig1::Mode::Bound,
                    (_, true) => fig1::Mode::Rich,
                    _ => fig1::Mode::Malloc,
                };
                fig1::run(x, total, iters, threads, mode, fault, waits)
            }
            "ft" | "mg" => {
                let c = a.class()?;
                a.done()?;
                // The no-allocation bound: freed arrays are reused (heap.rs).
                heap::set_bound(bound);
                heap::set_rich(rich);
                if workload == "ft" {
                    ft::run(c, threads, fault)
                } else {
                    mg::run(c, threads, fault)
                }
            }
            "larson" => {
                let p = larson::Params {
                    threads,
                    slots: a.num("slots", Some(1000))?,
                    steps: a.num("steps", Some(100_000))?,
                    epochs: a.num("epochs", Some(10))?,
                    min: a.num("min", Some(16))?,
                    max: a.num("max", Some(1000))?,
                    seed: a.num("seed", Some(4141))? as u64,
                };
                a.done()?;
                larson::run(&p, bound, fault)
            }
            "xmalloc" => {
                let p = xmalloc::Params {
                    threads,
                    batches: a.num("batches", Some(10_000))?,
                    batch: a.num("batch", Some(100))?,
                    min: a.num("min", Some(16))?,
                    max: a.num("max", Some(512))?,
                    seed: a.num("seed", Some(4141))? as u64,
                };
                a.done()?;
                xmalloc::run(&p, bound, fault)
            }
            other => return Err(format!("no workload {other:?}; {USAGE}")),
        };
        Ok(run)
    });
    match outcome {
        Err(usage) => Outcome::Usage(usage),
        Ok(Err(wrong)) => Outcome::Wrong(wrong),
        Ok(Ok(line)) => match timing::seconds() {
            Some(s) => Outcome::Ok(format!(
                "ok {line} malloc={} seconds={s:.6}",
                if rich {
                    RICH_ORIGIN.to_string()
                } else {
                    malloc_origin()
                }
            )),
            None => Outcome::Wrong(format!("{workload}: its time was not measured")),
        },
    }
}
