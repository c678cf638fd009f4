//! `numagc arena-bench`: the benchmark of the SAC private heap manager
//! (issue 7, item 6; *Efficient Heap Management for Declarative Data
//! Parallel Programming on Multicores*, §4, Fig. 5, 6 and 7): numagc-arena
//! against glibc's malloc, jemalloc, mimalloc and tcmalloc on the paper's
//! microbenchmark (Fig. 1, X = 1000, 250, 100, 25), NAS FT and MG in the
//! paper's style, and our larson and xmalloc-test (`crates/numagc-arena-bench`).
//!
//! **How a run is made.** Each run is a child process, `numagc
//! arena-workload WORKLOAD ...` (the workload library's command line),
//! with `LD_PRELOAD` naming the allocator's library (`allocators`), or
//! unset for glibc. Its time is the workload's own (`seconds=` on its
//! answer line: the work, without process start-up and exit and without
//! the answer's check, which for larson and xmalloc-test replays the run);
//! the child's wall time, CPU time and peak RSS (`process::measure`, as
//! `numagc compare`) are recorded too. The child checks its own
//! answer against an independent value and prints the object its `malloc`
//! came from; a wrong answer, a failed run or a `malloc` from the wrong
//! object is reported and makes the command fail at the end.
//!
//! **The bound.** For Fig. 1 every (X, threads) also runs the same loop
//! with the temporary vector allocated once per thread (`--bound`, no
//! allocation in the loop, nothing preloaded); FT and MG run with their
//! freed arrays reused from a per-thread cache (`--bound`, the workload
//! library's `heap`: no allocator work after a warm-up); larson and
//! xmalloc-test place their objects in slots allocated before the timing
//! (`--bound`, one slab per larson table and a ring of batch buffers per
//! xmalloc producer: the same draws, tag writes, checks and hand-offs
//! between threads, no allocator call). The bound runs with nothing
//! preloaded. An allocator's overhead is its median time minus the
//! bound's median, for every workload. xmalloc-test runs in batches of
//! 4096 objects, the original's batch (in batches of 100 its time is its
//! queue's hand-offs, where the bound is no lower bound: see that module).
//!
//! **Alternation.** The repetition is the outermost loop: each repetition
//! runs every case (workload, parameters, threads) and, within a case,
//! every allocator in turn, so that a drift of the machine spreads over all
//! of them.

mod allocators;
mod plot;
mod report;

use crate::bench::write_json;
use crate::process::measure;
use allocators::Allocator;
use clap::Args;
use serde::Serialize;
use std::path::PathBuf;
use std::process::Command;

const WORKLOADS: [&str; 5] = ["fig1", "ft", "mg", "larson", "xmalloc"];
/// Fig. 1's vector lengths (§2).
const XS: [usize; 4] = [1000, 250, 100, 25];

#[derive(Args)]
pub struct ArenaBenchArgs {
    /// Workloads to run (default all): fig1, ft, mg, larson, xmalloc.
    workloads: Vec<String>,
    /// test (Fig. 1 on 200,000 elements x 3 iterations, NAS class S, short larson and xmalloc) or paper
    /// (Fig. 1 on 10,000,000 x 50 as in §2, NAS class A as in §4, longer larson and xmalloc).
    #[arg(long, default_value = "paper")]
    size: String,
    /// Runs of each allocator in each case (repetition is the outer loop).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Thread counts, comma-separated (speedups are over the first).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    threads: Vec<usize>,
    /// Allocators, comma-separated, from glibc, jemalloc, mimalloc, tcmalloc, numagc (its malloc,
    /// preloaded), numagc-rich (its rich interface linked in: fig1, ft, mg).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "glibc,jemalloc,mimalloc,tcmalloc,numagc,numagc-rich"
    )]
    allocators: Vec<String>,
    /// Directories searched for the Debian allocators' libraries (repeatable; default the system's).
    #[arg(long = "lib-dir")]
    lib_dirs: Vec<PathBuf>,
    /// numagc-malloc's library (default: libnumagc_malloc.so next to this executable).
    #[arg(long = "numagc-malloc")]
    numagc_malloc: Option<PathBuf>,
    /// Write every run, the summaries and the targets as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the tables as Markdown.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Write the plots (like the paper's Fig. 5 and 6, and one of the other workloads) as SVG and PNG here.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// One configuration: a workload with its parameters and thread count.
#[derive(Clone)]
pub struct Case {
    pub workload: &'static str,
    /// Whether the workload has a no-allocation bound (all of them now).
    pub bound: bool,
    /// Fig. 1's X.
    pub x: Option<usize>,
    pub threads: usize,
    /// The workload's arguments, threads excepted.
    pub args: Vec<String>,
}

impl Case {
    pub fn label(&self) -> String {
        match self.x {
            Some(x) => format!("{} X={x}", self.workload),
            None => self.workload.to_string(),
        }
    }
}

/// One timed run.
#[derive(Serialize, Clone)]
pub struct Run {
    pub case: String,
    pub workload: String,
    pub x: Option<usize>,
    pub threads: usize,
    /// An allocator, or "bound" (the workload without allocator work).
    pub allocator: String,
    pub repetition: usize,
    /// The workload's own time (its `seconds=`): what the summaries use.
    pub seconds: Option<f64>,
    /// The child process's wall time.
    pub wall_s: f64,
    pub cpu_s: f64,
    pub max_rss_kib: u64,
    /// The object the workload's malloc came from.
    pub malloc: Option<String>,
    pub ok: bool,
    pub error: Option<String>,
}

fn cases(workloads: &[&'static str], paper: bool, threads: &[usize]) -> Vec<Case> {
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    let mut out = Vec::new();
    for &w in workloads {
        let variants: Vec<(Option<usize>, Vec<String>)> = match (w, paper) {
            ("fig1", _) => XS
                .iter()
                .map(|&x| {
                    let (total, iters) = if paper {
                        ("10000000", "50")
                    } else {
                        ("200000", "3")
                    };
                    (
                        Some(x),
                        s(&[
                            "--x",
                            &x.to_string(),
                            "--total",
                            total,
                            "--iterations",
                            iters,
                        ]),
                    )
                })
                .collect(),
            ("ft" | "mg", true) => vec![(None, s(&["--class", "A"]))],
            ("ft" | "mg", false) => vec![(None, s(&["--class", "S"]))],
            ("larson", true) => vec![(
                None,
                s(&["--slots", "1000", "--steps", "1000000", "--epochs", "10"]),
            )],
            ("larson", false) => vec![(
                None,
                s(&["--slots", "100", "--steps", "2000", "--epochs", "2"]),
            )],
            ("xmalloc", true) => vec![(None, s(&["--batches", "1221", "--batch", "4096"]))],
            _ => vec![(None, s(&["--batches", "100", "--batch", "20"]))],
        };
        for (x, args) in variants {
            for &k in threads {
                out.push(Case {
                    workload: w,
                    bound: matches!(w, "fig1" | "ft" | "mg" | "larson" | "xmalloc"),
                    x,
                    threads: k,
                    args: args.clone(),
                });
            }
        }
    }
    out
}

/// The child process of one run.
fn command(case: &Case, alloc: Option<&Allocator>) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding this executable: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("arena-workload")
        .arg(case.workload)
        .args(&case.args);
    cmd.args(["--threads", &case.threads.to_string()]);
    match alloc.and_then(|a| a.preload.as_ref()) {
        Some(so) => {
            cmd.env("LD_PRELOAD", so);
        }
        None => {
            cmd.env_remove("LD_PRELOAD");
        }
    }
    match alloc {
        None => {
            cmd.arg("--bound");
        }
        Some(a) if a.rich => {
            cmd.arg("--rich");
        }
        Some(_) => {}
    }
    Ok(cmd)
}

pub fn run(a: ArenaBenchArgs) -> Result<(), String> {
    let paper = match a.size.as_str() {
        "paper" => true,
        "test" => false,
        other => return Err(format!("--size {other:?}: test or paper")),
    };
    if a.repeat == 0 {
        return Err("--repeat 0: at least one run of each allocator".into());
    }
    if a.threads.is_empty() || a.threads.contains(&0) {
        return Err("--threads: counts of at least 1".into());
    }
    let mut workloads: Vec<&'static str> = Vec::new();
    for w in &a.workloads {
        let found = WORKLOADS
            .iter()
            .find(|n| **n == w.as_str())
            .ok_or_else(|| format!("no workload {w:?}; the workloads: {}", WORKLOADS.join(", ")))?;
        workloads.push(found);
    }
    if workloads.is_empty() {
        workloads = WORKLOADS.to_vec();
    }
    let lib_dirs = if a.lib_dirs.is_empty() {
        allocators::default_lib_dirs()
    } else {
        a.lib_dirs.clone()
    };
    let numagc_malloc = match &a.numagc_malloc {
        Some(p) => p.clone(),
        None => std::env::current_exe()
            .map_err(|e| format!("finding this executable: {e}"))?
            .with_file_name("libnumagc_malloc.so"),
    };
    let mut allocs = Vec::new();
    for name in &a.allocators {
        allocs.push(Allocator::find(name, &lib_dirs, &numagc_malloc)?);
    }
    println!("allocators:");
    for al in &allocs {
        match (&al.preload, &al.missing) {
            (_, Some(why)) => println!("  {:<11} {why}", al.name),
            (None, None) if al.rich => println!(
                "  {:<11} numagc-arena linked in, its rich interface (fig1, ft, mg)",
                al.name
            ),
            (Some(p), None) => println!("  {:<11} LD_PRELOAD={}", al.name, p.display()),
            (None, None) => println!(
                "  {:<11} the C library's malloc (nothing preloaded)",
                al.name
            ),
        }
    }
    let active: Vec<&Allocator> = allocs.iter().filter(|al| al.missing.is_none()).collect();
    let cases = cases(&workloads, paper, &a.threads);

    let mut runs: Vec<Run> = Vec::new();
    let mut wrong: Vec<String> = Vec::new();
    for rep in 0..a.repeat {
        for case in &cases {
            // The bound first, then each allocator.
            let mut who: Vec<Option<&Allocator>> = Vec::new();
            if case.bound {
                who.push(None);
            }
            // The rich interface is for arrays (fig1, ft, mg), not for the
            // malloc patterns (larson, xmalloc-test).
            who.extend(
                active
                    .iter()
                    .filter(|al| al.runs(case.workload))
                    .map(|al| Some(*al)),
            );
            for al in who {
                let name = al.map_or("bound".to_string(), |al| al.name.clone());
                let m = measure(command(case, al)?)?;
                let line = m.stdout.lines().find(|l| l.starts_with("ok "));
                let origin = line
                    .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("malloc=")))
                    .map(str::to_string);
                let seconds = line
                    .and_then(|l| {
                        l.split_whitespace()
                            .find_map(|w| w.strip_prefix("seconds="))
                    })
                    .and_then(|v| v.parse::<f64>().ok());
                let error = match (&m.exit, line, &origin) {
                    (Err(e), ..) => Some(e.clone()),
                    (Ok(()), None, _) => Some("no answer line (ok ...) printed".to_string()),
                    (Ok(()), Some(_), None) => Some("no malloc= in the answer line".to_string()),
                    (Ok(()), Some(_), Some(_)) if seconds.is_none() => {
                        Some("no seconds= in the answer line".to_string())
                    }
                    (Ok(()), Some(_), Some(o)) => match al {
                        Some(al) => al.origin_error(o),
                        None => Allocator::find("glibc", &[], &numagc_malloc)?.origin_error(o),
                    },
                };
                if let Some(e) = &error {
                    wrong.push(format!(
                        "{} x{} {name} #{rep}: {e}",
                        case.label(),
                        case.threads
                    ));
                }
                println!(
                    "  #{rep} {:<13} x{} {name:<11} {:>8.3} s {:>8.3} s wall {:>8.3} s CPU {:>8} KiB{}",
                    case.label(),
                    case.threads,
                    seconds.unwrap_or(f64::NAN),
                    m.wall_s,
                    m.cpu_s,
                    m.max_rss_kib,
                    if error.is_some() {
                        "  WRONG/FAILED"
                    } else {
                        ""
                    }
                );
                runs.push(Run {
                    case: case.label(),
                    workload: case.workload.to_string(),
                    x: case.x,
                    threads: case.threads,
                    allocator: name,
                    repetition: rep,
                    seconds,
                    wall_s: m.wall_s,
                    cpu_s: m.cpu_s,
                    max_rss_kib: m.max_rss_kib,
                    malloc: origin,
                    ok: error.is_none(),
                    error,
                });
            }
        }
    }

    let summaries = report::summarize(&cases, &allocs, &runs);
    let targets = report::targets(&summaries, &a.threads);
    println!();
    print!("{}", report::render_text(&summaries, &targets));
    if let Some(path) = &a.json {
        let v = serde_json::json!({
            "size": a.size,
            "repeat": a.repeat,
            "threads": a.threads,
            "allocators": allocs.iter().map(|al| serde_json::json!({
                "name": al.name,
                "preload": al.preload,
                "status": al.missing.clone().unwrap_or_else(|| "ran".into()),
            })).collect::<Vec<_>>(),
            "runs": runs,
            "summaries": summaries,
            "targets": targets,
        });
        write_json(path, &v)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &a.markdown {
        std::fs::write(path, report::render_markdown(&summaries, &targets))
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(dir) = &a.plot {
        for p in plot::write(dir, &summaries, &a.threads)? {
            println!("wrote {}", p.display());
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} run(s) failed or gave a wrong answer:\n  {}",
            wrong.len(),
            wrong.join("\n  ")
        ))
    }
}
