//! The `numagc` command: runtime information, benchmarks and torture testing.

mod arena_bench;
mod bench;
mod compare;
mod micro;
mod process;
mod runtime_args;
mod torture;

use clap::{Parser, Subcommand};
use runtime_args::RuntimeArgs;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "numagc",
    version,
    about = "numagc: a NUMA-aware memory-management runtime for parallel functional languages"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Topology, vproc placement and pinning, defaults, and memory placement applied or skipped.
    Info {
        #[command(flatten)]
        runtime: RuntimeArgs,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Run benchmarks of the papers' suite: a table of wall times, speedups, GC share and pauses; JSON, plots, traces.
    Bench(bench::BenchArgs),
    /// numagc against the Haskell, OCaml and Java peers (peers/): wall time, CPU time, peak RSS and answers, runs alternated.
    Compare(compare::CompareArgs),
    /// Microbenchmarks of single mechanisms (allocation rate, channel messages).
    Micro {
        #[command(subcommand)]
        micro: micro::Micro,
    },
    /// numagc-arena (as libnumagc_malloc.so) against glibc, jemalloc, mimalloc and tcmalloc: Fig. 1 of the SAC paper with
    /// its no-allocation bound, NAS FT and MG, larson and xmalloc-test, runs alternated; overheads, speedups, targets.
    ArenaBench(arena_bench::ArenaBenchArgs),
    /// Internal: one workload of arena-bench in this process (see crates/numagc-arena-bench).
    #[command(hide = true)]
    ArenaWorkload {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Random mutator programs against a shadow model, collections forced at random points, the heap verifier after each: prints collections by kind, objects checked and violations.
    Torture(torture::TortureArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Info { runtime, json } => info(&runtime, json),
        Command::Bench(args) => bench::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Micro { micro } => micro::run(micro),
        Command::Torture(args) => torture::run(args),
        Command::ArenaBench(args) => arena_bench::run(args),
        Command::ArenaWorkload { args } => {
            return ExitCode::from(numagc_arena_bench::run(&args).report())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("numagc: {e}");
            ExitCode::FAILURE
        }
    }
}

fn info(args: &RuntimeArgs, json: bool) -> Result<(), String> {
    let config = args.config()?;
    let rt = numagc::Runtime::new(config).map_err(|e| e.to_string())?;
    // Touch the global heap once per vproc so its placement shows up.
    rt.run_each(|s| {
        let v = s
            .alloc_vector_filled(4, numagc::Handle::int(1))
            .map(|h| s.promote(h).unwrap());
        v.is_ok()
    })
    .map_err(|e| e.to_string())?;
    let info = rt.info();
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&info).map_err(|e| e.to_string())?
        );
        return Ok(());
    }
    let c = &info.config;
    println!("numagc {}", env!("CARGO_PKG_VERSION"));
    println!();
    print!("{}", info.topology.describe());
    println!("\nvprocs: {}", c.vprocs);
    for (p, pin) in info.placements.iter().zip(&info.pins) {
        println!(
            "  vproc {:>3}  node {:>2}  cpu {:>3}  {pin}",
            p.vproc, p.node, p.cpu
        );
    }
    if !info.warnings.is_empty() {
        println!("\nwarnings:");
        for w in &info.warnings {
            println!("  {w}");
        }
    }
    println!("\nsettings (flag / environment variable / value):");
    for s in numagc::config::settings() {
        let v = c.value_text(s.name).unwrap_or_default();
        println!("  --{:<22} {:<28} {}", s.name, s.env, v);
    }
    println!(
        "\nmemory placement ({}): {} applied, {} skipped, {} failed",
        c.numa_policy.name(),
        info.bindings.applied,
        info.bindings.skipped,
        info.bindings.failed
    );
    for r in info.binding_log.iter().take(12) {
        let s = if r.chunks == 1 { "" } else { "s" };
        println!(
            "  chunk {:>6} ({} chunk{s}) for node {}: {} -> {}",
            r.chunk, r.chunks, r.node, r.request, r.outcome
        );
    }
    Ok(())
}
