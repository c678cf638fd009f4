//! `numagc compare`: numagc against the peer implementations in `peers/`
//! (Haskell, OCaml, Java) on the benchmarks that have them.
//!
//! **What it measures.** Every run, numagc's included, is a child process:
//! numagc as `<this exe> compare --run-output --suite S --vprocs K NAME`
//! (the benchmark alone, with the `NUMAGC_*` settings; a non-zero exit is
//! a failed run), each peer from the peers directory (`peers/build/`) with the
//! benchmark's parameters of the chosen size, positional in the order of
//! its `params()`. The child is reaped with `wait4`, which gives per run
//! the wall time (an `Instant` around spawn..wait, so process start-up,
//! the JVM's and GHC's RTS's included), the CPU time (user + system of the
//! child's `rusage`) and the peak resident set (`ru_maxrss`, KiB). Each
//! run's standard output, numagc's and the peers' alike, must equal the
//! reference output: numagc's for the same parameters, computed once per
//! benchmark on 1 vproc with the benchmark's own independent answer check
//! (`--print-output`, untimed). A differing answer is reported and makes
//! the command fail at the end. The timed numagc runs leave the check out:
//! it recomputes the answer, often sequentially, work the peers do not do.
//!
//! **Alternation.** For each benchmark and vproc count the runtimes run in
//! turn, repetition being the outer loop (numagc, Haskell, OCaml, Java
//! ParallelGC, Java G1, numagc, Haskell, ...), so that a slow drift of the
//! machine (thermal, other load) spreads over all of them instead of
//! landing on one.
//!
//! **Tuning of each peer.**
//! - Haskell (GHC): `+RTS -N{K} -A32m -RTS`: K capabilities, and a 32 MB
//!   allocation area per capability, the nursery size GHC's user guide
//!   recommends for parallel programs (the default 4 MB nursery makes
//!   parallel GHC programs collect far too often). No other RTS flag.
//!   `haskell-default` runs the same program with GHC's default allocation
//!   area (`+RTS -N{K} -RTS`; 1 MB in GHC 9.0), which fits the cache and
//!   was the faster of the two on coins at K = 1 on the development
//!   machine (0.79 × `-A32m`'s time, alternated in one run,
//!   `docs/results/compiled.md`): the best peer is the faster of both.
//! - OCaml (4.x, one domain): sequential; run at K = 1 only, shown as
//!   "sequential" at larger counts.
//! - OCaml 5 (`ocaml5`, built by `peers/install-ocaml5.sh`): K domains (the
//!   peer's worker count), default GC settings, run under
//!   `peers/build/ocaml5/gcpauses`, which turns OCaml's `Runtime_events` on
//!   and reads the GC pauses from it while the peer runs (see `pauses`).
//!   Its wall time and CPU time include that wrapper (its start, a 5 ms
//!   poll) and the runtime's event writing.
//! - Java: `-XX:+UseParallelGC` (the throughput collector, closest to a
//!   parallel stop-the-world generational collector) and `-XX:+UseG1GC`
//!   (the JVM default), K as the worker count of the program's
//!   `ForkJoinPool`; heap sizes left at the JVM's defaults.
//! - numagc: its defaults (`NUMAGC_*` variables apply, as for `numagc bench`).
//! - numagc on PE groups (`--pes P`, `numagc::pe`, as `numagc bench --pes`):
//!   at K workers, P PEs of K/P vprocs each, shown as `numagc PLAN/Ppe`
//!   (the plan of the `NUMAGC_*` settings); the benchmarks with a PE version
//!   only, at the K that P divides (the others are listed as skipped, with
//!   why). K counts every PE's vprocs, so that a row's runtimes all use K
//!   workers.
//! - C (`c-arena`, binarytrees only): `peers/c/binarytrees.c`, bump arenas
//!   reset after each tree, K threads; a reference point of what allocation
//!   can cost, never counted as the best peer.
//! - numagc from C (`numagc-c`, parfib, binarytrees, coins and gcbench):
//!   `examples/c/{parfib,binarytrees,coins,gcbench}.c`, the benchmarks in C on
//!   `numagc_inline.h`'s register code, built by
//!   `peers/build.sh` against `libnumagc.a` into `numagc-c/`; K vprocs,
//!   numagc's defaults (`NUMAGC_*` apply). Not a peer either: numagc's
//!   interface from C beside the Rust programs.
//!
//! **Pauses.** numagc and OCaml 5 report their GC pauses in every timed run
//! (see `pauses`); the tables give, per runtime, the largest p99.9 and the
//! largest maximum pause over its runs.

use crate::bench::plot::{register_fonts, FONT};
mod breakdown;
mod markdown;
mod pauses;

use crate::bench::record::median;
use crate::bench::write_json;
use crate::process::{measure, Measured};
use clap::Args;
use numagc::ConfigBuilder;
use numagc_bench::{Api, Benchmark, Params, Size};
use plotters::prelude::*;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The benchmarks with peers, and the Java class of each.
const PEERED: [(&str, &str); 8] = [
    ("binarytrees", "BinaryTrees"),
    ("gcbench", "GCBench"),
    ("parfib", "Parfib"),
    ("coins", "Coins"),
    ("sumeuler", "SumEuler"),
    ("mandelbrot", "Mandelbrot"),
    ("nbody", "NBody"),
    ("quicksort", "Quicksort"),
];

/// The peers compared, in the order they run (after numagc's programs).
const PEERS: [&str; 8] = [
    "haskell",
    "haskell-default",
    "ocaml",
    "ocaml5",
    "java-parallelgc",
    "java-g1",
    "c-arena",
    "numagc-c",
];

/// Runtimes that are reference points, not peers: never the "best peer".
/// `c-arena` is binarytrees in C with bump arenas reset after each tree
/// (`peers/c/`), the lower bound of what allocation can cost (issue 18).
/// `numagc-c` is numagc itself, from C (`examples/c/`).
const REFERENCES: [&str; 2] = ["c-arena", "numagc-c"];

const NO_C_PROGRAM: &str = "no C program for this benchmark (peers/c/ has binarytrees only)";
const NO_NUMAGC_C_PROGRAM: &str =
    "no C program on numagc for this benchmark (examples/c/ has parfib, binarytrees, coins, gcbench)";
const NOT_BUILT_NUMAGC_C: &str =
    "not built (peers/build.sh builds examples/c/parfib.c, binarytrees.c, coins.c and gcbench.c)";

/// The benchmarks `examples/c/` has in C on numagc (`numagc-c`).
const NUMAGC_C_PROGRAMS: [&str; 4] = ["parfib", "binarytrees", "coins", "gcbench"];

/// The name of numagc's runtime for the programs on `api` (`numagc` for the
/// safe API, `numagc-compiled` for the compiled-code interface,
/// `numagc-compiled-calls` for its programs with machine calls).
fn numagc_runtime(api: Api) -> &'static str {
    match api {
        Api::Safe => "numagc",
        Api::Compiled => "numagc-compiled",
        Api::CompiledCalls => "numagc-compiled-calls",
    }
}

/// Whether `runtime` is one of numagc's (its PE groups' included).
fn is_numagc(runtime: &str) -> bool {
    runtime == "numagc" || runtime.starts_with("numagc-compiled") || runtime.starts_with("numagc ")
}

/// The name of numagc on groups of `pes` PEs of `plan` (`--pes`).
fn numagc_pe_runtime(plan: &str, pes: usize) -> String {
    format!("numagc {}", crate::bench::harness::plan_label(plan, pes))
}

const NO_PE_VERSION: &str = "no PE version of this benchmark (--pes)";
const NO_COMPILED_CALLS: &str =
    "no compiled-calls version of this benchmark (coins and parfib have one)";
const PES_DO_NOT_DIVIDE: &str = "the PE count does not divide the vprocs (K = PEs x vprocs per PE)";

/// numagc's runtimes for `apis` (the first is the one the ratio column
/// divides by), its PE groups (`pe_runtimes`), then the peers.
fn runtimes<'a>(apis: &[Api], pe_runtimes: &'a [(String, usize)]) -> Vec<&'a str> {
    apis.iter()
        .map(|&a| numagc_runtime(a))
        .chain(pe_runtimes.iter().map(|(name, _)| name.as_str()))
        .chain(PEERS)
        .collect()
}

const NOT_INSTALLED: &str = "not installed (run peers/install.sh)";
const NOT_INSTALLED_OCAML5: &str =
    "OCaml 5 not installed (run peers/install-ocaml5.sh, then peers/build.sh)";
const SEQUENTIAL: &str = "sequential (runs at vprocs 1 only)";

#[derive(Args)]
pub struct CompareArgs {
    /// Benchmarks to compare (default: the 8 with peers: binarytrees, gcbench, parfib, coins, sumeuler, mandelbrot, nbody, quicksort).
    names: Vec<String>,
    /// Sizes of the benchmarks: paper, quick or scale (see `numagc bench --help`).
    #[arg(long, default_value = "paper")]
    suite: String,
    /// Vproc (worker) counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    vprocs: Vec<usize>,
    /// numagc on groups of this many PEs too, comma-separated (`numagc::pe`, as numagc bench --pes): at K workers, P PEs of K/P vprocs each, runtime `numagc PLAN/Ppe`, the safe programs; the benchmarks without a PE version, and K that P does not divide, are skipped with a note. 1: one runtime (`numagc`).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    pes: Vec<usize>,
    /// numagc's programs to run, comma-separated: safe (the handle API), compiled (the compiled-code interface, runtime `numagc-compiled`) and compiled-calls (coins and parfib on it with the machine's calls and returns instead of returns through the shadow stack, `numagc-compiled-calls`); the first is the one the numagc/ ratios divide by. Default: safe.
    #[arg(long, value_delimiter = ',')]
    api: Vec<String>,
    /// Runs of each runtime per benchmark and vproc count (alternated).
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Where the built peers are (haskell/, ocaml/, ocaml5/, java/ below it).
    #[arg(long = "peers-dir", default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../../peers/build"))]
    peers_dir: PathBuf,
    /// Write every run and the summaries as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write the tables (results, best peers, breakdown) as Markdown.
    #[arg(long)]
    markdown: Option<PathBuf>,
    /// Write the plot of numagc/peer wall-time ratios (SVG and PNG) into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Internal: print numagc's output of the one benchmark named (1 vproc, answer checked) and exit.
    #[arg(long, hide = true)]
    print_output: bool,
    /// Internal: the timed numagc run: the one benchmark named on the one
    /// vproc count given, its output printed, its answer not checked here
    /// (the caller compares the output with the checked one).
    #[arg(long, hide = true)]
    run_output: bool,
    /// Internal, with --run-output: print numagc's own account (`--breakdown`) on standard error.
    #[arg(long, hide = true)]
    account: bool,
    /// After the timed runs, one more run of each runtime with its collector's own accounting on
    /// (GHC +RTS -s, Java -Xlog:gc, OCaml v=0x400, OCaml 5 also its pauses, numagc's statistics): collection time, its
    /// share of the run, bytes allocated. Reported apart; not in the medians.
    #[arg(long)]
    breakdown: bool,
}

/// One timed run of one runtime.
#[derive(Serialize, Clone)]
pub struct Run {
    pub benchmark: String,
    pub vprocs: usize,
    pub runtime: String,
    pub repetition: usize,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub max_rss_kib: u64,
    /// numagc: exited successfully (its harness checks the answer); peers:
    /// exited successfully and printed numagc's output.
    pub ok: bool,
    pub error: Option<String>,
    /// numagc and OCaml 5: the GC pauses the run reported.
    pub pauses: Option<pauses::Pauses>,
}

/// The run of one runtime with its own accounting on (`--breakdown`).
#[derive(Serialize, Clone)]
pub struct AccountedRun {
    pub benchmark: String,
    pub vprocs: usize,
    pub runtime: String,
    pub wall_s: f64,
    pub ok: bool,
    pub accounting: breakdown::Accounting,
}

impl AccountedRun {
    /// The cells of its row in the breakdown tables: benchmark, K, runtime,
    /// wall s, GC s, GC %, mutator s, allocated MB, and "failed" when the
    /// run failed or printed another answer.
    fn cells(&self) -> [String; 9] {
        let a = &self.accounting;
        use crate::bench::table::opt;
        [
            self.benchmark.clone(),
            self.vprocs.to_string(),
            self.runtime.clone(),
            format!("{:.3}", self.wall_s),
            opt(a.gc_s, 3),
            opt(a.gc_share.map(|x| x * 100.0), 1),
            opt(a.gc_share.map(|x| self.wall_s * (1.0 - x)), 3),
            opt(a.allocated_bytes.map(|b| b as f64 / 1e6), 1),
            if self.ok {
                String::new()
            } else {
                "failed".into()
            },
        ]
    }
}

/// Why a run does not count: it failed, or printed another answer than
/// the checked reference output.
fn answer_error(m: &Measured, want: &str) -> Option<String> {
    match &m.exit {
        Err(e) => Some(format!("failed: {e}")),
        Ok(()) if m.stdout != want => Some(format!(
            "different answer: printed {:?}, numagc {:?}",
            m.stdout, want
        )),
        Ok(()) => None,
    }
}

/// The `--breakdown` table: each accounted run's collection time, its
/// share, the mutator time that remains, and the bytes allocated.
fn render_breakdown(accounts: &[AccountedRun]) -> String {
    use std::fmt::Write;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<12} {:>2} {:<21} {:>8} {:>8} {:>7} {:>10} {:>12}",
        "benchmark", "K", "runtime", "wall s", "GC s", "GC %", "mutator s", "alloc MB"
    );
    for r in accounts {
        let [b, k, rt, wall, gc, share, mutator, alloc, flag] = r.cells();
        let _ = writeln!(
            t,
            "{b:<12} {k:>2} {rt:<21} {wall:>8} {gc:>8} {share:>7} {mutator:>10} {alloc:>12}{}",
            if flag.is_empty() {
                ""
            } else {
                "  WRONG/FAILED"
            }
        );
    }
    let _ = writeln!(
        t,
        "GC s: numagc's collection time summed over its vprocs; GHC's GC elapsed time (+RTS -s); Java's pauses summed\n\
         (-Xlog:gc); OCaml 5's pauses summed over its domains (Runtime_events). GC %: numagc and OCaml 5 GC s / (wall × K),\n\
         the others GC s / wall. mutator s: wall × (1 − GC %).\n\
         alloc MB: numagc's statistics, GHC's \"bytes allocated in the heap\", OCaml's allocated_words × 8."
    );
    t
}

/// One benchmark × vprocs × runtime.
#[derive(Serialize, Clone)]
pub struct Summary {
    pub benchmark: String,
    pub vprocs: usize,
    pub runtime: String,
    /// "ran", or why not ("not installed (run peers/install.sh)", "sequential ...").
    pub status: String,
    pub runs: usize,
    pub wall_median_s: Option<f64>,
    pub wall_min_s: Option<f64>,
    pub wall_max_s: Option<f64>,
    pub cpu_median_s: Option<f64>,
    pub max_rss_median_kib: Option<u64>,
    pub answers_ok: Option<bool>,
    /// numagc's median wall time over this runtime's (below 1: numagc faster).
    pub numagc_over_this: Option<f64>,
    /// The largest p99.9 pause over the runs (ms), where the runtime reports pauses.
    pub pause_p999_ms: Option<f64>,
    /// The largest pause over the runs (ms).
    pub pause_max_ms: Option<f64>,
    /// Some run lost runtime events (OCaml 5): its pause figures are incomplete.
    pub pauses_lost_events: bool,
}

/// The fastest peer of one benchmark × vprocs.
#[derive(Serialize, Clone)]
pub struct Best {
    pub benchmark: String,
    pub vprocs: usize,
    pub best_peer: Option<String>,
    pub numagc_over_best: Option<f64>,
}

/// How to start one runtime, or why it does not run.
enum Launch {
    Run(Command),
    Skip(&'static str),
}

/// The command of one run of `runtime`; with `accounted`, with the
/// runtime's own accounting on (`--breakdown`).
#[allow(clippy::too_many_arguments)]
fn launch(
    runtime: &str,
    bench: &str,
    class: &str,
    args: &[String],
    k: usize,
    pes: usize,
    size: Size,
    dir: &Path,
    accounted: bool,
) -> Result<Launch, String> {
    let exe = |p: PathBuf| is_executable(&p).then_some(p);
    let mut launch = match runtime {
        "numagc-compiled-calls"
            if numagc_bench::find(bench).is_none_or(|b| !b.has_compiled_calls()) =>
        {
            Launch::Skip(NO_COMPILED_CALLS)
        }
        "numagc" | "numagc-compiled" | "numagc-compiled-calls" => {
            let api = match runtime {
                "numagc" => "safe",
                "numagc-compiled" => "compiled",
                _ => "compiled-calls",
            };
            Launch::Run(numagc_run(bench, size, k, &["--api", api])?)
        }
        // numagc on a PE group (`numagc_pe_runtime`): K vprocs in all.
        _ if pes > 1 => {
            if numagc_bench::find(bench).is_none_or(|b| b.pe_program().is_none()) {
                Launch::Skip(NO_PE_VERSION)
            } else if !k.is_multiple_of(pes) {
                Launch::Skip(PES_DO_NOT_DIVIDE)
            } else {
                Launch::Run(numagc_run(
                    bench,
                    size,
                    k / pes,
                    &["--pes", &pes.to_string()],
                )?)
            }
        }
        "haskell" | "haskell-default" => match exe(dir.join("haskell").join(bench)) {
            Some(p) => {
                let mut c = Command::new(p);
                c.args(args).args(["+RTS", &format!("-N{k}")]);
                if runtime == "haskell" {
                    c.arg("-A32m");
                }
                c.arg("-RTS");
                Launch::Run(c)
            }
            None => Launch::Skip(NOT_INSTALLED),
        },
        "ocaml5" => {
            let (wrapper, peer) = (dir.join("ocaml5/gcpauses"), dir.join("ocaml5").join(bench));
            if is_executable(&wrapper) && is_executable(&peer) {
                let mut c = Command::new(wrapper);
                c.arg(peer).args(args).arg(k.to_string());
                Launch::Run(c)
            } else {
                Launch::Skip(NOT_INSTALLED_OCAML5)
            }
        }
        "ocaml" => match exe(dir.join("ocaml").join(bench)) {
            Some(_) if k != 1 => Launch::Skip(SEQUENTIAL),
            Some(p) => {
                let mut c = Command::new(p);
                c.args(args);
                Launch::Run(c)
            }
            None => Launch::Skip(NOT_INSTALLED),
        },
        "java-parallelgc" | "java-g1" => {
            let java_dir = dir.join("java");
            if !java_dir.join(format!("{class}.class")).is_file() || !on_path("java") {
                Launch::Skip(NOT_INSTALLED)
            } else {
                let gc = if runtime == "java-g1" {
                    "-XX:+UseG1GC"
                } else {
                    "-XX:+UseParallelGC"
                };
                let mut c = Command::new("java");
                if accounted {
                    c.arg(breakdown::JAVA_GC_LOG);
                }
                c.arg(gc)
                    .arg("-cp")
                    .arg(&java_dir)
                    .arg(class)
                    .args(args)
                    .arg(k.to_string());
                Launch::Run(c)
            }
        }
        "c-arena" => match exe(dir.join("c").join(bench)) {
            Some(p) => {
                let mut c = Command::new(p);
                c.args(args).arg(k.to_string());
                Launch::Run(c)
            }
            None if bench == "binarytrees" => Launch::Skip(NOT_INSTALLED),
            None => Launch::Skip(NO_C_PROGRAM),
        },
        "numagc-c" => match exe(dir.join("numagc-c").join(bench)) {
            Some(p) => {
                let mut c = Command::new(p);
                c.args(args).arg(k.to_string());
                Launch::Run(c)
            }
            None if NUMAGC_C_PROGRAMS.contains(&bench) => Launch::Skip(NOT_BUILT_NUMAGC_C),
            None => Launch::Skip(NO_NUMAGC_C_PROGRAM),
        },
        _ => unreachable!("runtime {runtime}"),
    };
    if let (true, Launch::Run(c)) = (accounted, &mut launch) {
        breakdown::account(runtime, c);
    }
    Ok(launch)
}

/// The command of a timed numagc run (`--run-output`) of `bench` at
/// `size` on `vprocs` vprocs, with `options` (its API, its PE count).
fn numagc_run(bench: &str, size: Size, vprocs: usize, options: &[&str]) -> Result<Command, String> {
    let me = std::env::current_exe().map_err(|e| format!("finding the numagc executable: {e}"))?;
    let mut c = Command::new(me);
    c.args(["compare", "--run-output", "--suite", size.name()])
        .args(["--vprocs", &vprocs.to_string()])
        .args(options)
        .arg(bench);
    Ok(c)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn on_path(prog: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|d| is_executable(&d.join(prog))))
}

/// numagc's output for `bench` at `size`, from one run on 1 vproc (its
/// answer checked) in a child process (`--print-output`): run in this
/// process, its heap would raise this process's peak RSS, which Linux
/// carries into every child's `ru_maxrss` (the memory of the process
/// image replaced by `exec` counts).
fn expected_output(bench: &dyn Benchmark, size: Size) -> Result<String, String> {
    let me = std::env::current_exe().map_err(|e| format!("finding the numagc executable: {e}"))?;
    let mut c = Command::new(me);
    c.args([
        "compare",
        "--print-output",
        "--suite",
        size.name(),
        bench.name(),
    ]);
    let m = measure(c)?;
    m.exit
        .map_err(|e| format!("{}: numagc's reference run failed: {e}", bench.name()))?;
    Ok(m.stdout)
}

/// Runs `bench` on `vprocs` vprocs (the `NUMAGC_*` settings apply) and
/// prints its output; its own answer check only when `check` (the
/// reference run). The timed runs skip it: the check recomputes the answer
/// independently, often sequentially (mandelbrot, nbody, coins), and would
/// be timed as numagc's work while the peers do no such thing. Their output
/// is compared with the checked one instead, as the peers' is.
#[allow(clippy::too_many_arguments)]
fn print_output(
    bench: &dyn Benchmark,
    api: Api,
    params: &Params,
    vprocs: usize,
    pes: usize,
    check: bool,
    account: bool,
) -> Result<(), String> {
    let config = ConfigBuilder::from_env()
        .map_err(|e| e.to_string())?
        .vprocs(vprocs)
        .build()
        .map_err(|e| e.to_string())?;
    crate::runtime_args::warn(&config);
    // One runtime, or a group of `pes` PEs of `vprocs` each (`--pes`).
    let target = crate::bench::harness::start(bench, config, if pes > 1 { pes } else { 0 }, None)?;
    let outcome = target.run(bench, params, api)?;
    if check {
        (outcome.check)()
            .map_err(|e| format!("{}: numagc's own answer is wrong: {e}", bench.name()))?;
    }
    print!("{}", outcome.output);
    if !check {
        // The timed run: its pauses. A job on every vproc first: one that
        // joined the last collection while idle has published its
        // statistics by the time it runs this.
        for rt in target.runtimes() {
            rt.run_each(|_| ()).map_err(|e| e.to_string())?;
        }
        let t = target.stats().total;
        eprintln!("{}", pauses::numagc_line(&t.pauses));
        if account {
            eprintln!("{}", breakdown::numagc_line(t.gc_ns(), t.bytes_allocated));
        }
    }
    Ok(())
}

pub fn run(a: CompareArgs) -> Result<(), String> {
    let size = Size::parse(&a.suite).map_err(|e| format!("--suite: {e}"))?;
    if a.repeat == 0 {
        return Err("--repeat 0: at least one run of each runtime".into());
    }
    if a.vprocs.is_empty() || a.vprocs.contains(&0) {
        return Err("--vprocs: counts of at least 1".into());
    }
    let apis = crate::bench::parse_apis(&a.api)?;
    crate::bench::check_pe_counts(&a.pes)?;
    // numagc's PE groups, by name, with their PE counts; the plan in their
    // names is the one the runs get from the `NUMAGC_*` settings.
    let plan = ConfigBuilder::from_env()
        .and_then(|b| b.build())
        .map_err(|e| e.to_string())?
        .plan;
    let mut pe_runtimes: Vec<(String, usize)> = Vec::new();
    for &p in a.pes.iter().filter(|&&p| p > 1) {
        if !pe_runtimes.iter().any(|&(_, q)| q == p) {
            pe_runtimes.push((numagc_pe_runtime(plan.name(), p), p));
        }
    }
    let pes_of = |rt: &str| {
        pe_runtimes
            .iter()
            .find(|(name, _)| name == rt)
            .map_or(1, |&(_, p)| p)
    };
    let runtimes = runtimes(&apis, &pe_runtimes);
    let names: Vec<String> = if a.names.is_empty() {
        PEERED.iter().map(|(n, _)| n.to_string()).collect()
    } else {
        a.names.clone()
    };
    let mut benches = Vec::new();
    for n in &names {
        let b = numagc_bench::find(n)
            .ok_or_else(|| format!("no benchmark {n:?} (see numagc bench --list)"))?;
        let class = PEERED
            .iter()
            .find(|(p, _)| *p == b.name())
            .map(|(_, c)| *c)
            .ok_or_else(|| {
                let with: Vec<&str> = PEERED.iter().map(|(p, _)| *p).collect();
                format!(
                    "{n} has no peer implementations to compare with; those with peers: {}",
                    with.join(", ")
                )
            })?;
        // A program with machine calls exists for coins and parfib only:
        // the others show it as skipped, so that one table holds them all.
        if let Some(api) = apis
            .iter()
            .find(|&&api| api != Api::CompiledCalls && !b.has_api(api))
        {
            return Err(format!(
                "--api {}: {} has no such version (see numagc bench --api)",
                api.name(),
                b.name()
            ));
        }
        let params = Params::new(b, size, &[])?;
        let args: Vec<String> = b
            .params()
            .iter()
            .map(|p| params.get(p.name).to_string())
            .collect();
        benches.push((b, class, params, args));
    }
    if a.print_output || a.run_output {
        let (vprocs, pes) = match (a.run_output, &a.vprocs[..], &a.pes[..]) {
            (false, _, _) => (1, 1),
            (true, [k], [p]) => (*k, *p),
            (true, _, _) => {
                return Err("--run-output: exactly one vproc count and one PE count".into())
            }
        };
        return match &benches[..] {
            [(b, _, params, _)] => {
                print_output(*b, apis[0], params, vprocs, pes, a.print_output, a.account)
            }
            _ => Err("--print-output, --run-output: exactly one benchmark".into()),
        };
    }

    let mut runs: Vec<Run> = Vec::new();
    let mut skipped: Vec<(String, usize, String, &'static str)> = Vec::new();
    let mut wrong: Vec<String> = Vec::new();
    let mut accounts: Vec<AccountedRun> = Vec::new();
    for (b, class, _, args) in &benches {
        let name = b.name();
        println!(
            "{name} ({size}: {}): numagc's output (1 vproc) ...",
            args.join(" ")
        );
        let want = expected_output(*b, size)?;
        for &k in &a.vprocs {
            // How `rt` runs here (with its own accounting when `accounted`).
            let launch_here = |rt: &str, accounted: bool| {
                let pes = pes_of(rt);
                launch(rt, name, class, args, k, pes, size, &a.peers_dir, accounted)
            };
            // One run of `rt` and why it does not count, if it does not.
            let run_checked =
                |rt: &str, accounted: bool| -> Result<(Measured, Option<String>), String> {
                    let Launch::Run(cmd) = launch_here(rt, accounted)? else {
                        unreachable!("{rt} was found runnable")
                    };
                    let m = measure(cmd)?;
                    let error = answer_error(&m, &want);
                    Ok((m, error))
                };
            // Which runtimes run here.
            let mut active = Vec::new();
            for &rt in &runtimes {
                match launch_here(rt, false)? {
                    Launch::Run(_) => active.push(rt),
                    Launch::Skip(why) => skipped.push((name.to_string(), k, rt.to_string(), why)),
                }
            }
            for rep in 0..a.repeat {
                for &rt in &active {
                    let (m, error) = run_checked(rt, false)?;
                    if let Some(e) = &error {
                        wrong.push(format!("{name} x{k} {rt} #{rep}: {e}"));
                    }
                    let p = pauses::parse(&m.stderr);
                    println!(
                        "  x{k} {rt:<21} #{rep}: {:>8.3} s wall, {:>8.3} s CPU, {:>8} KiB peak RSS{}{}",
                        m.wall_s,
                        m.cpu_s,
                        m.max_rss_kib,
                        p.map_or(String::new(), |p| format!(
                            ", {} pauses, p99.9 {:.3} ms, max {:.3} ms{}",
                            p.count,
                            p.p999_ns as f64 / 1e6,
                            p.max_ns as f64 / 1e6,
                            if p.lost_events > 0 { " (events lost)" } else { "" }
                        )),
                        if error.is_some() { "  WRONG/FAILED" } else { "" }
                    );
                    runs.push(Run {
                        benchmark: name.to_string(),
                        vprocs: k,
                        runtime: rt.to_string(),
                        repetition: rep,
                        wall_s: m.wall_s,
                        cpu_s: m.cpu_s,
                        max_rss_kib: m.max_rss_kib,
                        ok: error.is_none(),
                        error,
                        pauses: p,
                    });
                }
            }
            if a.breakdown {
                for &rt in &active {
                    let (m, error) = run_checked(rt, true)?;
                    if let Some(e) = &error {
                        wrong.push(format!("{name} x{k} {rt} (accounted run): {e}"));
                    }
                    let acc = breakdown::parse(rt, &m.stderr, m.wall_s, k);
                    println!(
                        "  x{k} {rt:<21} accounted: {:>8.3} s wall, GC {}, allocated {}",
                        m.wall_s,
                        acc.gc_s.map_or("-".into(), |g| format!("{g:.3} s")),
                        acc.allocated_bytes
                            .map_or("-".into(), |b| format!("{:.1} MB", b as f64 / 1e6)),
                    );
                    accounts.push(AccountedRun {
                        benchmark: name.to_string(),
                        vprocs: k,
                        runtime: rt.to_string(),
                        wall_s: m.wall_s,
                        ok: error.is_none(),
                        accounting: acc,
                    });
                }
            }
        }
    }

    let (summaries, bests) = summarize(
        &benches.iter().map(|(b, ..)| b.name()).collect::<Vec<_>>(),
        &a.vprocs,
        &runtimes,
        &runs,
        &skipped,
    );
    // SAFETY: rusage is plain data; getrusage fills it.
    let mut me: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut me) };
    let self_rss_kib = me.ru_maxrss.max(0) as u64;
    println!();
    print!("{}", render(&summaries, &bests, runtimes[0]));
    if a.breakdown {
        println!();
        print!("{}", render_breakdown(&accounts));
    }
    println!(
        "Peak RSS: ru_maxrss of each child; Linux counts the memory of the process image an exec replaces, so each\n\
         includes at least this process's own peak ({:.1} MiB).",
        self_rss_kib as f64 / 1024.0
    );

    if let Some(path) = &a.json {
        let v = serde_json::json!({
            "suite": size.name(),
            "numagc": env!("CARGO_PKG_VERSION"),
            "peers_dir": a.peers_dir,
            "tuning": {
                "haskell": "+RTS -N{K} -A32m -RTS",
                "haskell-default": "+RTS -N{K} -RTS (GHC's default allocation area)",
                "ocaml": "sequential, vprocs 1 only",
                "ocaml5": "OCaml 5.3, K domains, default GC settings, under gcpauses (Runtime_events on)",
                "java-parallelgc": "-XX:+UseParallelGC, K workers, default heap",
                "java-g1": "-XX:+UseG1GC, K workers, default heap",
                "c-arena": "peers/c/binarytrees.c, bump arenas, K threads (a reference point, not a peer)",
                "numagc-c": "examples/c/<benchmark>.c on numagc_inline.h's register code, K vprocs, numagc's defaults (numagc from C, not a peer)",
            },
            "compare_process_max_rss_kib": self_rss_kib,
            "runs": runs,
            "summaries": summaries,
            "best": bests,
            "breakdown": accounts,
        });
        write_json(path, &v)?;
        println!("wrote {}", path.display());
    }
    if let Some(path) = &a.markdown {
        std::fs::write(
            path,
            markdown::render(&summaries, &bests, &accounts, runtimes[0]),
        )
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if let Some(dir) = &a.plot {
        for p in plot(dir, &summaries)? {
            println!("wrote {}", p.display());
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} run(s) failed or gave a different answer:\n  {}",
            wrong.len(),
            wrong.join("\n  ")
        ))
    }
}

/// Per benchmark and vproc count: each runtime's summary, its ratio
/// `primary / it` where `primary` is `runtimes[0]` (numagc's first
/// program), and the best peer.
fn summarize(
    names: &[&str],
    vprocs: &[usize],
    runtimes: &[&str],
    runs: &[Run],
    skipped: &[(String, usize, String, &'static str)],
) -> (Vec<Summary>, Vec<Best>) {
    let mut out = Vec::new();
    let mut bests = Vec::new();
    for &name in names {
        for &k in vprocs {
            let mut numagc_wall = None;
            let mut group = Vec::new();
            for &rt in runtimes {
                let rs: Vec<&Run> = runs
                    .iter()
                    .filter(|r| r.benchmark == name && r.vprocs == k && r.runtime == rt)
                    .collect();
                let mut s = Summary {
                    benchmark: name.to_string(),
                    vprocs: k,
                    runtime: rt.to_string(),
                    status: "ran".into(),
                    runs: rs.len(),
                    wall_median_s: None,
                    wall_min_s: None,
                    wall_max_s: None,
                    cpu_median_s: None,
                    max_rss_median_kib: None,
                    answers_ok: None,
                    numagc_over_this: None,
                    pause_p999_ms: None,
                    pause_max_ms: None,
                    pauses_lost_events: false,
                };
                if let Some((.., why)) = skipped
                    .iter()
                    .find(|(n, v, r, _)| n == name && *v == k && r == rt)
                {
                    s.status = why.to_string();
                } else if !rs.is_empty() {
                    let walls: Vec<f64> = rs.iter().map(|r| r.wall_s).collect();
                    s.wall_median_s = Some(median(&walls));
                    s.wall_min_s = walls.iter().copied().reduce(f64::min);
                    s.wall_max_s = walls.iter().copied().reduce(f64::max);
                    s.cpu_median_s = Some(median(&rs.iter().map(|r| r.cpu_s).collect::<Vec<_>>()));
                    s.max_rss_median_kib = Some(median(
                        &rs.iter().map(|r| r.max_rss_kib as f64).collect::<Vec<_>>(),
                    ) as u64);
                    s.answers_ok = Some(rs.iter().all(|r| r.ok));
                    let ps: Vec<_> = rs.iter().map(|r| r.pauses).collect();
                    if let Some((p999, max, lost)) = pauses::worst(&ps) {
                        (s.pause_p999_ms, s.pause_max_ms) = (Some(p999), Some(max));
                        s.pauses_lost_events = lost;
                    }
                    if rt == runtimes[0] {
                        numagc_wall = s.wall_median_s;
                    }
                }
                group.push(s);
            }
            for s in &mut group {
                if let (Some(n), Some(w)) = (numagc_wall, s.wall_median_s) {
                    s.numagc_over_this = Some(n / w);
                }
            }
            let best = group
                .iter()
                .filter(|s| {
                    !is_numagc(&s.runtime)
                        && !REFERENCES.contains(&s.runtime.as_str())
                        && s.answers_ok == Some(true)
                })
                .filter_map(|s| s.wall_median_s.map(|w| (s, w)))
                .min_by(|a, b| a.1.total_cmp(&b.1));
            bests.push(Best {
                benchmark: name.to_string(),
                vprocs: k,
                best_peer: best.map(|(s, _)| s.runtime.clone()),
                numagc_over_best: best.and_then(|(s, _)| s.numagc_over_this),
            });
            out.extend(group);
        }
    }
    (out, bests)
}

fn render(summaries: &[Summary], bests: &[Best], primary: &str) -> String {
    use std::fmt::Write;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<12} {:>2} {:<21} {:>28} {:>9} {:>10} {:>6} {:>8} {:>17}",
        "benchmark",
        "K",
        "runtime",
        "wall s median [min, max]",
        "CPU s",
        "RSS MiB",
        "answer",
        "numagc/",
        "pause ms p99.9/max"
    );
    for s in summaries {
        let head = format!("{:<12} {:>2} {:<21}", s.benchmark, s.vprocs, s.runtime);
        match (s.wall_median_s, s.wall_min_s, s.wall_max_s) {
            (Some(m), Some(lo), Some(hi)) => {
                let _ = writeln!(
                    t,
                    "{head} {:>28} {:>9.3} {:>10.1} {:>6} {:>8} {:>17}",
                    format!("{m:.3} [{lo:.3}, {hi:.3}]"),
                    s.cpu_median_s.unwrap_or(0.0),
                    s.max_rss_median_kib.unwrap_or(0) as f64 / 1024.0,
                    if s.answers_ok == Some(true) {
                        "ok"
                    } else {
                        "WRONG"
                    },
                    if s.runtime == primary {
                        "-".to_string()
                    } else {
                        s.numagc_over_this.map_or("-".into(), |r| format!("{r:.2}"))
                    },
                    pause_cell(s)
                );
            }
            _ => {
                let _ = writeln!(
                    t,
                    "{head} {}",
                    if s.status == "ran" {
                        "no runs"
                    } else {
                        &s.status
                    }
                );
            }
        }
    }
    let _ = writeln!(
        t,
        "\nbest peer (fastest median wall time with the right answer):"
    );
    for b in bests {
        match (&b.best_peer, b.numagc_over_best) {
            (Some(p), Some(r)) => {
                let _ = writeln!(
                    t,
                    "{:<12} {:>2} {:<21} numagc/best {r:.2}",
                    b.benchmark, b.vprocs, p
                );
            }
            _ => {
                let _ = writeln!(t, "{:<12} {:>2} no peer ran", b.benchmark, b.vprocs);
            }
        }
    }
    let _ = writeln!(
        t,
        "\nnumagc/ = numagc's median wall time over the runtime's (below 1: numagc faster). Tuning: Haskell +RTS -N<K> -A32m\n\
         (GHC's recommended nursery for parallel programs), haskell-default +RTS -N<K>; Java K ForkJoin workers, default heap; OCaml 4 sequential;\n\
         OCaml 5 K domains, default GC settings. Pauses (numagc, OCaml 5 from Runtime_events): the largest p99.9 and the\n\
         largest maximum over the runs; \"*\": some run lost events, so its figures miss pauses."
    );
    t
}

/// "p99.9/max" pause in ms, "*" when some run lost events; "-" without pauses.
fn pause_cell(s: &Summary) -> String {
    match (s.pause_p999_ms, s.pause_max_ms) {
        (Some(p), Some(m)) => format!(
            "{p:.3}/{m:.3}{}",
            if s.pauses_lost_events { "*" } else { "" }
        ),
        _ => "-".into(),
    }
}

/// One grouped bar chart: numagc/peer wall-time ratio per benchmark × vprocs, a bar per peer.
fn plot(dir: &Path, summaries: &[Summary]) -> Result<Vec<PathBuf>, String> {
    register_fonts()?;
    std::fs::create_dir_all(dir)
        .map_err(|e| format!("creating plot directory {}: {e}", dir.display()))?;
    let mut groups: Vec<(String, usize)> = Vec::new();
    for s in summaries {
        if !groups
            .iter()
            .any(|(b, k)| *b == s.benchmark && *k == s.vprocs)
        {
            groups.push((s.benchmark.clone(), s.vprocs));
        }
    }
    let peers: Vec<&str> = PEERS.to_vec();
    let ratio = |g: &(String, usize), p: &str| {
        summaries
            .iter()
            .find(|s| s.benchmark == g.0 && s.vprocs == g.1 && s.runtime == p)
            .and_then(|s| s.numagc_over_this)
    };
    let max = groups
        .iter()
        .flat_map(|g| peers.iter().filter_map(move |p| ratio(g, p)))
        .fold(1.0f64, f64::max)
        * 1.15;
    let mut written = Vec::new();
    let size = ((110 * groups.len() as u32 + 300).max(900), 700);
    let svg = dir.join("compare.svg");
    draw(
        SVGBackend::new(&svg, size).into_drawing_area(),
        &groups,
        &peers,
        &ratio,
        max,
    )
    .map_err(|e| format!("writing {}: {e}", svg.display()))?;
    written.push(svg);
    let png = dir.join("compare.png");
    draw(
        BitMapBackend::new(&png, size).into_drawing_area(),
        &groups,
        &peers,
        &ratio,
        max,
    )
    .map_err(|e| format!("writing {}: {e}", png.display()))?;
    written.push(png);
    Ok(written)
}

/// The numagc/peer ratio of a (benchmark, vprocs) group and a peer.
type RatioOf<'a> = dyn Fn(&(String, usize), &str) -> Option<f64> + 'a;

const COLORS: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
];

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    groups: &[(String, usize)],
    peers: &[&str],
    ratio: &RatioOf,
    max: f64,
) -> Result<(), Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let n = groups.len() as f64;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "numagc wall time / peer wall time (below 1: numagc faster)",
            (FONT, 28),
        )
        .margin(20)
        .x_label_area_size(60)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..n, 0.0..max)?;
    let labels: Vec<String> = groups.iter().map(|(b, k)| format!("{b} x{k}")).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 1e-6 && i < labels.len() {
                labels[i].clone()
            } else {
                String::new()
            }
        })
        .y_desc("numagc / peer")
        .label_style((FONT, 18))
        .axis_desc_style((FONT, 20))
        .draw()?;
    let w = 0.8 / peers.len() as f64;
    for (pi, p) in peers.iter().enumerate() {
        let c = COLORS[pi % COLORS.len()];
        let bars: Vec<Rectangle<(f64, f64)>> = groups
            .iter()
            .enumerate()
            .filter_map(|(gi, g)| {
                ratio(g, p).map(|r| {
                    let x0 = gi as f64 + 0.1 + pi as f64 * w;
                    Rectangle::new([(x0, 0.0), (x0 + w * 0.9, r)], c.filled())
                })
            })
            .collect();
        chart
            .draw_series(bars)?
            .label(*p)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 14, y + 6)], c.filled()));
    }
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(0.0, 1.0), (n, 1.0)],
        BLACK.stroke_width(2),
    )))?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 18))
        .position(SeriesLabelPosition::UpperRight)
        .draw()?;
    root.present()?;
    Ok(())
}
