//! `numagc bench`: the experiment harness over the papers' suite
//! (`numagc_bench`). It runs every configuration (benchmark × collector
//! plan × placement policy × vprocs) `--repeat` times, prints a summary
//! table, and writes JSON (`--json`), plots (`--plot`) and a Perfetto
//! timeline (`--trace`), each configuration named by its plan and policy
//! as well as its benchmark and vproc count. The plans, policies and vproc
//! counts are lists (`--plan split,shared`); each plan and policy is parsed
//! by the setting's own parser, so a refused value gives the setting's
//! message, and a value naming a plan or policy already listed (`split`,
//! `split-heap`) is dropped, so that no configuration runs twice.
//! Each benchmark checks its own answer; a wrong answer or a failed run
//! makes the command fail after every configuration has run. None
//! asserts a timing.

pub mod harness;
pub mod mpi;
pub mod params;
pub mod plot;
pub mod record;
pub mod table;
pub mod timeline;

use crate::runtime_args::HarnessRuntimeArgs;
use clap::Args;
use numagc::{NumaPolicy, PlanKind};
use numagc_bench::{Api, Params, Size};
use params::ParamArgs;
use std::path::PathBuf;
use std::str::FromStr;

#[derive(Args)]
pub struct BenchArgs {
    /// Benchmarks to run (default: the whole suite); see --list.
    names: Vec<String>,
    /// List the benchmarks with their parameters at the three sizes, and exit.
    #[arg(long)]
    list: bool,
    /// Sizes of the benchmarks: paper (the papers' sizes), quick (each under about a second) or scale (for speedup curves up to 16 vprocs: about 8 s on one core of the development machine, 16 s on one of the 16-core machine).
    #[arg(long, default_value = "paper")]
    suite: String,
    /// Vproc counts to run, comma-separated (default: the vprocs setting, NUMAGC_VPROCS or all CPUs).
    #[arg(long, value_delimiter = ',')]
    vprocs: Vec<usize>,
    /// Run each configuration on groups of this many PEs, comma-separated (`numagc::pe`, gumsmp-shared-distributed-heaps.txt): P runtimes of --vprocs vprocs each, sharing nothing but messages, work moving between them; for the benchmarks with a PE version (parfib, coins, maze, sumeuler, worpitzky, mandelbrot, blackscholes). Default: one runtime, no group.
    #[arg(long, value_delimiter = ',')]
    pes: Vec<usize>,
    /// With --pes (or over MPI): hold the total number of vprocs fixed at this, so each group of P PEs gets N / P vprocs per PE (Table 2's configurations, e.g. `--pes 1,2,4 --cores 4` runs 1 × 4, 2 × 2 and 4 × 1; `mpirun -n 4 ... --cores 16` runs 4 vprocs per rank); every P must divide N. Replaces --vprocs.
    #[arg(long, conflicts_with = "vprocs")]
    cores: Option<usize>,
    /// How the PEs of a group talk: inprocess (PEs as thread groups of this process) or mpi (one PE per MPI rank: run under `mpirun -n P`, each rank the same command; --pes must be P, and is P by default; needs a build with `--features mpi`).
    #[arg(long, default_value = "inprocess")]
    transport: String,
    /// Collector plans to run, comma-separated: the plan setting's names, e.g. split,shared (default: the plan setting, NUMAGC_PLAN).
    #[arg(long, value_delimiter = ',')]
    plan: Vec<String>,
    /// Interfaces the benchmark programs are written on, comma-separated: safe (handles and scopes), compiled (the compiled-code interface: inline allocation, frames, raw reads; the benchmarks that have such a version) and compiled-calls (coins and parfib on the compiled-code interface with the machine's calls and returns, where compiled returns through the shadow stack). Default: safe.
    #[arg(long, value_delimiter = ',')]
    api: Vec<String>,
    /// Placement policies to run, comma-separated: local, interleave, node0 (default: the numa-policy setting).
    #[arg(long = "numa-policy", value_delimiter = ',')]
    numa_policy: Vec<String>,
    /// Runs of each configuration.
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Print each run's per-vproc statistics (always when there is a single run).
    #[arg(long)]
    stats: bool,
    /// Do not print the benchmarks' own output.
    #[arg(long)]
    quiet: bool,
    /// Write every run and the summaries as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Write plots (SVG and PNG) into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Write a Chrome/Perfetto trace of every run (turns the trace setting on).
    #[arg(long)]
    trace: Option<PathBuf>,
    #[command(flatten)]
    params: ParamArgs,
    #[command(flatten)]
    runtime: HarnessRuntimeArgs,
}

fn list() {
    println!(
        "{:<22} {:<44} parameters (quick / paper / scale)",
        "benchmark", "source"
    );
    for b in numagc_bench::all() {
        let ps: Vec<String> = b
            .params()
            .iter()
            .map(|p| format!("{}={}/{}/{}", p.name, p.quick, p.paper, p.scale))
            .collect();
        println!("{:<22} {:<44} {}", b.name(), b.source(), ps.join(" "));
        println!("{:<22} {}", "", b.description());
    }
}

pub fn run(a: BenchArgs) -> Result<(), String> {
    let session = match a.transport.as_str() {
        "inprocess" => None,
        "mpi" => Some(mpi::MpiSession::init().map_err(|e| format!("--transport mpi: {e}"))?),
        t => return Err(format!("--transport {t:?}: inprocess or mpi")),
    };
    let result = run_on(a, session.as_ref());
    if let Some(m) = &session {
        if !m.lost_ranks().is_empty() {
            // MPI cannot finalise without the lost rank: report, and end
            // the job on every rank.
            if let Err(e) = &result {
                eprintln!("numagc: {e}");
            }
            m.abort(1);
        }
    }
    result
}

fn run_on(a: BenchArgs, session: Option<&mpi::MpiSession>) -> Result<(), String> {
    if a.list {
        list();
        return Ok(());
    }
    let size = Size::parse(&a.suite).map_err(|e| format!("--suite: {e}"))?;
    if a.repeat == 0 {
        return Err("--repeat 0: at least one run of each configuration".into());
    }
    let benches = if a.names.is_empty() {
        numagc_bench::all()
    } else {
        a.names
            .iter()
            .map(|n| {
                numagc_bench::find(n)
                    .ok_or_else(|| format!("no benchmark {n:?} (see numagc bench --list)"))
            })
            .collect::<Result<Vec<_>, _>>()?
    };
    for (name, _) in &a.params.values {
        if !benches
            .iter()
            .any(|b| b.params().iter().any(|p| p.name == *name))
        {
            return Err(format!(
                "--{name}: none of the selected benchmarks has this parameter"
            ));
        }
    }
    let benchmarks = benches
        .iter()
        .map(|&b| Params::new(b, size, &a.params.values).map(|p| (b, p)))
        .collect::<Result<Vec<_>, _>>()?;

    // Base configuration: defaults, NUMAGC_* variables, then flags; vprocs,
    // plans and placement from the lists, else from the settings.
    let runtime = a.runtime.0.clone();
    let base = move || runtime.builder();
    let defaults = base()?.build().map_err(|e| e.to_string())?;
    let vprocs = if a.vprocs.is_empty() {
        vec![defaults.vprocs]
    } else {
        a.vprocs.clone()
    };
    let plans = if a.plan.is_empty() {
        vec![defaults.plan]
    } else {
        parse_list::<PlanKind>("--plan", &a.plan)?
    };
    let apis = parse_apis(&a.api)?;
    for &api in apis.iter().filter(|&&api| api != Api::Safe) {
        let missing: Vec<&str> = benchmarks
            .iter()
            .filter(|(b, _)| !b.has_api(api))
            .map(|(b, _)| b.name())
            .collect();
        if !missing.is_empty() {
            let have: Vec<&str> = numagc_bench::all()
                .into_iter()
                .filter(|b| b.has_api(api))
                .map(|b| b.name())
                .collect();
            return Err(format!(
                "--api {}: no such version of {}; those with one: {}",
                api.name(),
                missing.join(", "),
                have.join(", ")
            ));
        }
    }
    let mut pes = a.pes.clone();
    if let Some(m) = session {
        if pes.is_empty() {
            pes = vec![m.size()];
        }
        if let Some(&p) = pes.iter().find(|&&p| p != m.size()) {
            return Err(format!(
                "--pes {p} with --transport mpi: one PE per MPI rank, and the job has {} ranks (mpirun -n {p} to run {p} PEs)",
                m.size()
            ));
        }
    }
    let vprocs = match a.cores {
        Some(cores) => per_pe_vprocs(cores, &pes)?,
        None => vprocs,
    };
    if !pes.is_empty() {
        check_pe_counts(&pes)?;
        let missing: Vec<&str> = benchmarks
            .iter()
            .filter(|(b, _)| b.pe_program().is_none())
            .map(|(b, _)| b.name())
            .collect();
        if !missing.is_empty() {
            let have: Vec<&str> = numagc_bench::all()
                .into_iter()
                .filter(|b| b.pe_program().is_some())
                .map(|b| b.name())
                .collect();
            return Err(format!(
                "--pes: no PE version of {}; those with one: {}",
                missing.join(", "),
                have.join(", ")
            ));
        }
        if apis.iter().any(|&api| api != Api::Safe) {
            return Err("--pes runs the safe programs only (--api safe)".into());
        }
    }
    let policies = if a.numa_policy.is_empty() {
        vec![defaults.numa_policy]
    } else {
        parse_list::<NumaPolicy>("--numa-policy", &a.numa_policy)?
    };
    // Validate every configuration before the first run.
    for &plan in &plans {
        for &policy in &policies {
            for &v in &vprocs {
                let config = base()?
                    .vprocs(v)
                    .plan(plan)
                    .numa_policy(policy)
                    .build()
                    .map_err(|e| e.to_string())?;
                crate::runtime_args::warn(&config);
            }
        }
    }
    let mut experiment = harness::Experiment {
        benchmarks,
        size,
        apis,
        plans,
        policies,
        vprocs,
        pes,
        cores: a.cores,
        mpi: session,
        repeat: a.repeat,
        base: &base,
        trace: a.trace.is_some(),
        echo_output: !a.quiet,
        stats: a.stats,
    };
    let single = experiment.run_count() == 1;
    experiment.stats |= single;
    let results = harness::run(&experiment)?;
    if session.is_some_and(|m| m.rank() != 0) {
        // Rank 0 reports; this rank says only whether it served well.
        let failed = results.runs.iter().filter(|r| r.error.is_some()).count();
        return if failed == 0 {
            Ok(())
        } else {
            Err(format!("{failed} run(s) failed on this rank (see above)"))
        };
    }
    let summaries = record::summarize(&results.runs);
    if !single || a.stats {
        println!();
    }
    print!("{}", table::render(&summaries));

    if let Some(path) = &a.json {
        let v = serde_json::json!({
            "suite": size.name(),
            "numagc": env!("CARGO_PKG_VERSION"),
            "config": defaults,
            "runs": results.runs,
            "summaries": summaries,
        });
        write_json(path, &v)?;
        println!("wrote {}", path.display());
    }
    if let Some(dir) = &a.plot {
        for p in plot::write_plots(dir, &summaries, &results.runs)? {
            println!("wrote {}", p.display());
        }
    }
    if let Some(path) = &a.trace {
        timeline::write(path, &results.timelines)?;
        println!(
            "wrote {} (open it in https://ui.perfetto.dev)",
            path.display()
        );
    }
    let failed: Vec<String> = results
        .runs
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.label())))
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} run(s) failed:\n  {}",
            failed.len(),
            failed.join("\n  ")
        ))
    }
}

/// Checks `--pes` counts: each a group size of 1 ..= `MAX_PES`.
/// `--cores N` with `--pes`: the vprocs per PE of each group size, N / P.
fn per_pe_vprocs(cores: usize, pes: &[usize]) -> Result<Vec<usize>, String> {
    if pes.is_empty() {
        return Err(
            "--cores N divides N vprocs among the PEs of each --pes group: give --pes".into(),
        );
    }
    pes.iter()
        .map(|&p| {
            if p == 0 || !cores.is_multiple_of(p) || cores / p == 0 {
                Err(format!(
                    "--cores {cores} --pes {p}: each group size must divide the cores"
                ))
            } else {
                Ok(cores / p)
            }
        })
        .collect()
}

pub(crate) fn check_pe_counts(pes: &[usize]) -> Result<(), String> {
    match pes
        .iter()
        .find(|&&p| !(1..=numagc::pe::MAX_PES).contains(&p))
    {
        Some(p) => Err(format!(
            "--pes {p}: a group has 1 ..= {} PEs",
            numagc::pe::MAX_PES
        )),
        None => Ok(()),
    }
}

/// The `--api` list (default: safe), each name once, in the order given.
pub fn parse_apis(values: &[String]) -> Result<Vec<Api>, String> {
    let mut out = Vec::new();
    for v in values {
        let api = Api::parse(v).map_err(|e| format!("--api {v}: {e}"))?;
        if !out.contains(&api) {
            out.push(api);
        }
    }
    if out.is_empty() {
        out.push(Api::Safe);
    }
    Ok(out)
}

/// The values of a list flag (`--plan`, `--numa-policy`), each parsed by
/// its setting's parser (a refused one gives the setting's message), in the
/// order given; a value naming one already listed (`split` and
/// `split-heap`, `local` and `LOCAL`) is dropped.
fn parse_list<T: FromStr<Err = numagc::ConfigError> + PartialEq>(
    flag: &str,
    values: &[String],
) -> Result<Vec<T>, String> {
    let mut out: Vec<T> = Vec::new();
    for v in values {
        let parsed = v.parse::<T>().map_err(|e| format!("{flag} {v}: {e}"))?;
        if !out.contains(&parsed) {
            out.push(parsed);
        }
    }
    Ok(out)
}

pub fn write_json(path: &PathBuf, value: &serde_json::Value) -> Result<(), String> {
    std::fs::write(
        path,
        serde_json::to_string_pretty(value).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("writing {}: {e}", path.display()))
}
