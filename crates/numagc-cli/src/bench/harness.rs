//! The experiment loop: every configuration (benchmark × API × collector plan ×
//! placement policy × PE count × vproc count) run `repeat` times, each on a
//! fresh runtime, or a fresh PE group (`--pes`: `numagc::pe`, vprocs per PE).
//!
//! Order: repetitions are the outer loop, so the runs of one
//! configuration are spread over the whole experiment and drift in the
//! machine's speed (frequency, other load) hits every configuration alike
//! — the side-by-side rule for comparing timings. A failed run (runtime
//! error, wrong answer) is recorded with its error and the others go on.

use super::mpi::MpiSession;
use super::record::{bench_label, run_label, RunRecord};
use super::timeline::RunTimeline;
use indicatif::{ProgressBar, ProgressStyle};
use numagc::pe::PeGroup;
use numagc::{ConfigBuilder, NumaPolicy, PlanKind, Runtime};
use numagc_bench::{Api, Benchmark, Params, Size};
use std::time::Instant;

/// What to run: every benchmark on every plan, policy and vproc count.
pub struct Experiment<'a> {
    pub benchmarks: Vec<(&'static dyn Benchmark, Params)>,
    pub size: Size,
    /// The interfaces the programs are written on (`--api`).
    pub apis: Vec<Api>,
    pub plans: Vec<PlanKind>,
    pub policies: Vec<NumaPolicy>,
    pub vprocs: Vec<usize>,
    /// PE group sizes (`--pes`); empty: one runtime per run.
    pub pes: Vec<usize>,
    /// `--cores`: `vprocs[i]` goes with `pes[i]` alone (the total held
    /// fixed) instead of every vproc count with every group size.
    pub cores: Option<usize>,
    /// The groups are made over MPI, one PE per rank (`--transport
    /// mpi`); rank 0 runs the programs, the other ranks serve them.
    pub mpi: Option<&'a MpiSession>,
    pub repeat: usize,
    /// Settings other than plan, placement policy and vprocs.
    pub base: &'a dyn Fn() -> Result<ConfigBuilder, String>,
    pub trace: bool,
    /// Print each benchmark's output (first run) and, with `stats`, each
    /// run's per-vproc statistics table.
    pub echo_output: bool,
    pub stats: bool,
}

impl Experiment<'_> {
    /// Runs in all: configurations × repetitions.
    pub fn run_count(&self) -> usize {
        self.repeat
            * self.benchmarks.len()
            * self.apis.len()
            * self.plans.len()
            * self.policies.len()
            * self.pe_vprocs().len()
    }

    /// The (PE count, vprocs) pairs to run; a PE count of 0 stands for a
    /// plain runtime.
    fn pe_vprocs(&self) -> Vec<(usize, usize)> {
        if self.cores.is_some() {
            return self
                .pes
                .iter()
                .copied()
                .zip(self.vprocs.iter().copied())
                .collect();
        }
        let pes = if self.pes.is_empty() {
            vec![0]
        } else {
            self.pes.clone()
        };
        pes.into_iter()
            .flat_map(|p| self.vprocs.iter().map(move |&v| (p, v)))
            .collect()
    }
}

pub struct Results {
    pub runs: Vec<RunRecord>,
    pub timelines: Vec<RunTimeline>,
}

pub fn run(experiment: &Experiment<'_>) -> Result<Results, String> {
    // Ranks other than 0 serve rank 0's runs and print nothing.
    let serving = experiment.mpi.is_some_and(|m| m.rank() != 0);
    let bar = if serving {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(experiment.run_count() as u64)
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{bar:30} {pos}/{len} runs, {elapsed} elapsed, ~{eta} left  {msg}",
        )
        .map_err(|e| e.to_string())?,
    );
    let mut results = Results {
        runs: Vec::new(),
        timelines: Vec::new(),
    };
    let mut echoed = std::collections::HashSet::new();
    for rep in 1..=experiment.repeat {
        for (bench, params) in &experiment.benchmarks {
            for &api in &experiment.apis {
                for &plan in &experiment.plans {
                    for &policy in &experiment.policies {
                        for (pes, vprocs) in experiment.pe_vprocs() {
                            let label = run_label(
                                &bench_label(bench.name(), api.name()),
                                &plan_label(plan.name(), pes),
                                policy.name(),
                                vprocs,
                                rep,
                            );
                            bar.set_message(label.clone());
                            let mut builder = (experiment.base)()?
                                .vprocs(vprocs)
                                .plan(plan)
                                .numa_policy(policy);
                            if experiment.trace {
                                builder = builder.trace(true);
                            }
                            let config = builder.build().map_err(|e| e.to_string())?;
                            let (record, timelines, output) =
                                run_one(*bench, api, params, experiment, config, pes, rep);
                            // Over MPI, a rank lost ends the job: no
                            // later group could start.
                            let lost = experiment.mpi.map(|m| m.lost_ranks()).unwrap_or_default();
                            if !lost.is_empty() {
                                bar.finish_and_clear();
                                return Err(format!(
                                    "{label}: {}; MPI rank(s) {lost:?} lost: the job ends",
                                    record.error.as_deref().unwrap_or("no error on this rank")
                                ));
                            }
                            if serving {
                                if let Some(e) = &record.error {
                                    eprintln!("numagc: {label}: {e}");
                                }
                                results.runs.push(record);
                                continue;
                            }
                            if experiment.echo_output && echoed.insert(bench.name()) {
                                bar.suspend(|| print!("{}", output.0));
                            }
                            if experiment.stats {
                                bar.suspend(|| {
                                    println!(
                                        "{label}: wall {:.3} s, {} tasks stolen",
                                        record.wall_s, record.tasks_stolen
                                    );
                                    if let Some(stats) = &output.1 {
                                        print!("{}", stats.table());
                                    }
                                    for p in &record.pe_stats {
                                        println!("{}", pe_line(p, record.wall_s));
                                    }
                                });
                            }
                            if let Some(e) = &record.error {
                                bar.suspend(|| eprintln!("numagc: {label}: {e}"));
                            }
                            results.runs.push(record);
                            if experiment.trace {
                                for t in timelines {
                                    results.timelines.push(RunTimeline {
                                        name: format!("{label}{}", t.name),
                                        ..t
                                    });
                                }
                            }
                            bar.inc(1);
                        }
                    }
                }
            }
        }
    }
    bar.finish_and_clear();
    Ok(results)
}

/// One run: (record, timelines (one per runtime of this process, named
/// by a suffix: "" or " PE p"), (program output, statistics; their table
/// is made only when printed)).
fn run_one(
    bench: &dyn Benchmark,
    api: Api,
    params: &Params,
    experiment: &Experiment<'_>,
    config: numagc::Config,
    pes: usize,
    rep: usize,
) -> (
    RunRecord,
    Vec<RunTimeline>,
    (String, Option<numagc::StatsReport>),
) {
    let vprocs = config.vprocs;
    let runtimes = pes.max(1);
    let private_heaps = (runtimes * config.vprocs * config.local_heap_size) as u64;
    let mut record = RunRecord {
        benchmark: bench.name().into(),
        api: api.name().into(),
        size: experiment.size.name().into(),
        params: params.iter().map(|(k, v)| (k.to_string(), v)).collect(),
        vprocs,
        plan: plan_label(config.plan.name(), pes),
        pes,
        pe_stats: Vec::new(),
        numa_policy: config.numa_policy.name().into(),
        repetition: rep,
        wall_s: 0.0,
        gc_s: 0.0,
        gc_share: 0.0,
        pause_count: 0,
        pause_p99_ms: 0.0,
        pause_max_ms: 0.0,
        pause_p999_ms: 0.0,
        peak_heap_bytes: 0,
        pauses: Vec::new(),
        minor_collections: 0,
        major_collections: 0,
        promotions: 0,
        global_collections: 0,
        bytes_allocated: 0,
        bytes_promoted: 0,
        tasks_forked: 0,
        tasks_stolen: 0,
        numa_locality: None,
        copy_imbalance_median: None,
        copy_imbalance_max: None,
        scan_wait_median_us: None,
        promotion_ns_per_object: None,
        promotion_ns_per_kib: None,
        correct: false,
        error: None,
    };
    let mut target = match start(bench, config, pes, experiment.mpi) {
        Ok(t) => t,
        Err(e) => {
            record.error = Some(e);
            return (record, Vec::new(), (String::new(), None));
        }
    };
    if let Target::Group(g) = &mut target {
        if !g.runs_program() {
            // A rank other than 0: it serves the run, and its record says
            // only whether that went well.
            let t0 = Instant::now();
            match g.serve() {
                Ok(()) => record.correct = true,
                Err(e) => record.error = Some(e.to_string()),
            }
            record.wall_s = t0.elapsed().as_secs_f64();
            return (record, Vec::new(), (String::new(), None));
        }
    }
    let t0 = Instant::now();
    let outcome = target.run(bench, params, api);
    record.wall_s = t0.elapsed().as_secs_f64();
    let output = match outcome {
        Ok(o) => {
            match (o.check)() {
                Ok(()) => record.correct = true,
                Err(e) => record.error = Some(format!("wrong answer: {e}")),
            }
            o.output
        }
        Err(e) => {
            record.error = Some(e);
            String::new()
        }
    };
    let runtimes = target.runtimes();
    let mut thread_errors: Vec<String> = runtimes
        .iter()
        .flat_map(|rt| rt.take_thread_errors())
        .map(|e| e.to_string())
        .collect();
    if let Target::Group(g) = &target {
        thread_errors.extend(g.take_errors().iter().map(|e| format!("PE service: {e}")));
        if g.tasks_in_flight() != 0 {
            thread_errors.push(format!(
                "{} exported tasks still in flight after the run",
                g.tasks_in_flight()
            ));
        }
    }
    if record.error.is_none() && !thread_errors.is_empty() {
        record.correct = false;
        record.error = Some(format!("thread errors: {}", thread_errors.join("; ")));
    }
    let stats = target.stats();
    let t = &stats.total;
    record.gc_s = t.gc_ns() as f64 / 1e9;
    record.gc_share = if record.wall_s > 0.0 {
        record.gc_s / (record.wall_s * (vprocs * runtimes.len()) as f64)
    } else {
        0.0
    };
    record.pause_count = t.pauses.count();
    record.pause_p99_ms = t.pauses.percentile_ns(99.0) as f64 / 1e6;
    record.pause_max_ms = t.pauses.max_ns() as f64 / 1e6;
    record.pause_p999_ms = t.pauses.percentile_ns(99.9) as f64 / 1e6;
    record.peak_heap_bytes = stats.heap.peak_global_bytes + private_heaps;
    record.pauses = t.pauses.recorded();
    record.minor_collections = t.minor.count;
    record.major_collections = t.major.count;
    record.promotions = t.promotion.count;
    record.global_collections = runtimes.iter().map(|rt| rt.global_collections()).sum();
    record.bytes_allocated = t.bytes_allocated;
    record.bytes_promoted = t.bytes_promoted;
    record.tasks_forked = t.tasks_forked;
    record.tasks_stolen = t.tasks_stolen;
    record.numa_locality = t.numa_locality();
    // Per runtime: a collection's index means the same collection only
    // among one runtime's vprocs.
    let median_and_max = |per_collection: fn(&numagc::StatsReport) -> Vec<f64>| {
        let mut xs: Vec<f64> = runtimes
            .iter()
            .flat_map(|rt| per_collection(&rt.stats()))
            .collect();
        numagc::stats::median_and_max(&mut xs)
    };
    let imbalance = median_and_max(numagc::StatsReport::global_copy_imbalance);
    record.copy_imbalance_median = imbalance.map(|(median, _)| median);
    record.copy_imbalance_max = imbalance.map(|(_, max)| max);
    record.scan_wait_median_us =
        median_and_max(numagc::StatsReport::global_scan_wait_us).map(|(median, _)| median);
    if let Some(c) = stats.promotion_cost() {
        record.promotion_ns_per_object = Some(c.ns_per_object);
        record.promotion_ns_per_kib = Some(c.ns_per_kib);
    }
    // One timeline per runtime of this process (a group's PEs: a process
    // each in the viewer), on PE 0's clock.
    let epoch0 = runtimes[0].trace_epoch();
    let mut timelines = Vec::with_capacity(runtimes.len());
    for (rt, pe) in runtimes.iter().zip(target.local_pes()) {
        let (mut spans, dropped) = rt.take_trace();
        let shift = rt
            .trace_epoch()
            .saturating_duration_since(epoch0)
            .as_nanos() as u64;
        for s in &mut spans {
            s.start_ns += shift;
        }
        timelines.push(RunTimeline {
            name: pe.map(|p| format!(" PE {p}")).unwrap_or_default(),
            vprocs,
            nodes: rt.info().placements.iter().map(|p| p.node).collect(),
            spans,
            dropped,
        });
    }
    // The group ends here: over MPI, with the other ranks' figures.
    if let Target::Group(g) = target {
        record.pe_stats = g.finish();
        // The weight books' check (issue 19): every global address's
        // weight back, every GIT entry gone. An error in debug builds;
        // the figures are in `--stats` and the JSON either way.
        let left: Vec<String> = record
            .pe_stats
            .iter()
            .filter(|p| p.git_entries + p.imports > 0)
            .map(|p| {
                format!(
                    "PE {}: {} GIT entries, {} imports",
                    p.pe, p.git_entries, p.imports
                )
            })
            .collect();
        if cfg!(debug_assertions) && !left.is_empty() && record.error.is_none() {
            record.error = Some(format!(
                "weight books not settled after the run: {}",
                left.join("; ")
            ));
        }
    }
    (record, timelines, (output, Some(stats)))
}

/// What a run runs on.
pub(crate) enum Target {
    Runtime(Runtime),
    Group(PeGroup),
}

impl Target {
    /// The PE of each of its runtimes (`runtimes`' order): `None` for a
    /// lone runtime.
    fn local_pes(&self) -> Vec<Option<usize>> {
        match self {
            Target::Runtime(_) => vec![None],
            Target::Group(g) => g.local_pes().map(Some).collect(),
        }
    }

    /// Runs `bench` on it: through `api` on a runtime, its PE version on a
    /// group.
    pub(crate) fn run(
        &self,
        bench: &dyn Benchmark,
        params: &Params,
        api: Api,
    ) -> Result<numagc_bench::Outcome, String> {
        match self {
            Target::Runtime(rt) => bench.run_api(rt, params, api),
            Target::Group(g) => bench.run_pes(g, params),
        }
    }

    /// Its runtimes: the one, or the group's PEs in this process, in PE
    /// order.
    pub(crate) fn runtimes(&self) -> Vec<&Runtime> {
        match self {
            Target::Runtime(rt) => vec![rt],
            Target::Group(g) => g.local_pes().map(|p| g.runtime(p)).collect(),
        }
    }

    /// Its statistics: a group's are its PEs' merged (pauses, counts,
    /// bytes), the heap figures added up.
    pub(crate) fn stats(&self) -> numagc::StatsReport {
        let reports: Vec<numagc::StatsReport> =
            self.runtimes().iter().map(|rt| rt.stats()).collect();
        let mut stats = reports[0].clone();
        for r in &reports[1..] {
            stats.vprocs.extend(r.vprocs.iter().cloned());
            stats.total.merge(&r.total);
            stats.heap.peak_global_bytes += r.heap.peak_global_bytes;
        }
        stats
    }
}

/// A fresh runtime (`pes` 0), or a fresh group of `pes` PEs of `config`
/// (this rank's PE of it, over MPI).
pub(crate) fn start(
    bench: &dyn Benchmark,
    config: numagc::Config,
    pes: usize,
    mpi: Option<&MpiSession>,
) -> Result<Target, String> {
    if pes == 0 {
        return Runtime::new(config)
            .map(Target::Runtime)
            .map_err(|e| format!("starting the runtime: {e}"));
    }
    let program = bench
        .pe_program()
        .ok_or_else(|| format!("{} has no PE version (--pes)", bench.name()))?;
    match mpi {
        Some(m) => m.group(pes, config, program.exports.clone(), program.setup),
        None => PeGroup::new(pes, config, program.exports.clone(), program.setup),
    }
    .map(Target::Group)
    .map_err(|e| format!("starting {pes} PEs: {e}"))
}

/// The plan column of a run: the plan, and the PE count of a group.
pub fn plan_label(plan: &str, pes: usize) -> String {
    if pes == 0 {
        plan.to_string()
    } else {
        format!("{plan}/{pes}pe")
    }
}

/// One line of a PE's traffic (`--stats`); `wall_s` is the run's time,
/// for the PE's collection share.
fn pe_line(p: &numagc::pe::PeStats, wall_s: f64) -> String {
    format!(
        "PE {}: {} messages, {} bytes sent; {} work requests ({} answered no work); tasks exported {}, imported {}; packing {:.1} ms, unpacking {:.1} ms, waiting for remote results {:.1} ms; {} messages refused; {} remote accesses ({:.1} ms waiting), {} served; {} weight returns; left: {} GIT entries, {} imports; collections {:.1} ms ({:.1} % of the run, summed over its vprocs)",
        p.pe,
        p.messages_sent,
        p.bytes_sent,
        p.fish_sent,
        p.no_work,
        p.tasks_exported,
        p.tasks_imported,
        p.pack_ms,
        p.unpack_ms,
        p.remote_wait_ms,
        p.refused_messages,
        p.accesses,
        p.access_wait_ms,
        p.accesses_served,
        p.weight_returns,
        p.git_entries,
        p.imports,
        p.gc_ms,
        if wall_s > 0.0 { p.gc_ms / (wall_s * 10.0) } else { 0.0 }
    )
}
