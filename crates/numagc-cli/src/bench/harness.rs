//! The experiment loop: every configuration (benchmark × API × collector plan ×
//! placement policy × vproc count) run `repeat` times, each on a fresh
//! runtime.
//!
//! Order: repetitions are the outer loop, so the runs of one
//! configuration are spread over the whole experiment and drift in the
//! machine's speed (frequency, other load) hits every configuration alike
//! — the side-by-side rule for comparing timings. A failed run (runtime
//! error, wrong answer) is recorded with its error and the others go on.

use super::record::{bench_label, run_label, RunRecord};
use super::timeline::RunTimeline;
use indicatif::{ProgressBar, ProgressStyle};
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
            * self.vprocs.len()
    }
}

pub struct Results {
    pub runs: Vec<RunRecord>,
    pub timelines: Vec<RunTimeline>,
}

pub fn run(experiment: &Experiment<'_>) -> Result<Results, String> {
    let bar = ProgressBar::new(experiment.run_count() as u64);
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
                        for &vprocs in &experiment.vprocs {
                            let label = run_label(
                                &bench_label(bench.name(), api.name()),
                                plan.name(),
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
                            let (record, timeline, output) =
                                run_one(*bench, api, params, experiment.size, config, rep);
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
                                });
                            }
                            if let Some(e) = &record.error {
                                bar.suspend(|| eprintln!("numagc: {label}: {e}"));
                            }
                            results.runs.push(record);
                            if experiment.trace {
                                results.timelines.push(RunTimeline {
                                    name: label,
                                    ..timeline
                                });
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

/// One run: (record, timeline, (program output, statistics; their table
/// is made only when printed)).
fn run_one(
    bench: &dyn Benchmark,
    api: Api,
    params: &Params,
    size: Size,
    config: numagc::Config,
    rep: usize,
) -> (
    RunRecord,
    RunTimeline,
    (String, Option<numagc::StatsReport>),
) {
    let vprocs = config.vprocs;
    let private_heaps = (config.vprocs * config.local_heap_size) as u64;
    let mut record = RunRecord {
        benchmark: bench.name().into(),
        api: api.name().into(),
        size: size.name().into(),
        params: params.iter().map(|(k, v)| (k.to_string(), v)).collect(),
        vprocs,
        plan: config.plan.name().into(),
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
        correct: false,
        error: None,
    };
    let mut timeline = RunTimeline {
        name: String::new(),
        vprocs,
        nodes: Vec::new(),
        spans: Vec::new(),
        dropped: 0,
    };
    let rt = match Runtime::new(config) {
        Ok(rt) => rt,
        Err(e) => {
            record.error = Some(format!("starting the runtime: {e}"));
            return (record, timeline, (String::new(), None));
        }
    };
    let t0 = Instant::now();
    let outcome = bench.run_api(&rt, params, api);
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
    let thread_errors = rt.take_thread_errors();
    if record.error.is_none() && !thread_errors.is_empty() {
        record.correct = false;
        record.error = Some(format!(
            "thread errors: {}",
            thread_errors
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let stats = rt.stats();
    let t = &stats.total;
    record.gc_s = t.gc_ns() as f64 / 1e9;
    record.gc_share = if record.wall_s > 0.0 {
        record.gc_s / (record.wall_s * vprocs as f64)
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
    record.global_collections = rt.global_collections();
    record.bytes_allocated = t.bytes_allocated;
    record.bytes_promoted = t.bytes_promoted;
    record.tasks_forked = t.tasks_forked;
    record.tasks_stolen = t.tasks_stolen;
    record.numa_locality = t.numa_locality();
    let (spans, dropped) = rt.take_trace();
    timeline.spans = spans;
    timeline.dropped = dropped;
    timeline.nodes = rt.info().placements.iter().map(|p| p.node).collect();
    (record, timeline, (output, Some(stats)))
}
