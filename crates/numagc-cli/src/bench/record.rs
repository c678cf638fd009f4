//! The measurements of the harness: one [`RunRecord`] per run, and one
//! [`Summary`] per configuration (benchmark × collector plan × placement
//! policy × vprocs) over its repetitions. Both are written to `--json`
//! and feed the table and the plots.
//!
//! Choices: the wall time of a run is the benchmark's run alone (the
//! runtime is started before and the answer checked after); the GC share
//! is collection time summed over vprocs divided by wall time × vprocs
//! (the fraction of the machine's time spent collecting); the speedup of a
//! configuration is the median wall time at the smallest vproc count run
//! (1 when run) divided by its own median, same benchmark, plan and
//! policy. The plan and the policy are recorded by name, as `numagc info`
//! prints them (`"plan": "split"`, `"numa_policy": "local"`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One run of one benchmark in one configuration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRecord {
    pub benchmark: String,
    /// The interface the program is written on (`safe`, `compiled`).
    #[serde(default = "safe_api")]
    pub api: String,
    pub size: String,
    pub params: BTreeMap<String, i64>,
    pub vprocs: usize,
    /// The collector plan (`PlanKind::name`), and `/<P>pe` for a run on
    /// a group of P PEs (`--pes`).
    pub plan: String,
    /// PEs of the run's group; 0: one runtime, no group.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pes: usize,
    /// Each PE's traffic (runs on a group).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pe_stats: Vec<numagc::pe::PeStats>,
    pub numa_policy: String,
    /// 1-based.
    pub repetition: usize,
    pub wall_s: f64,
    /// Collection time summed over vprocs.
    pub gc_s: f64,
    /// `gc_s / (wall_s × vprocs)`.
    pub gc_share: f64,
    pub pause_count: u64,
    pub pause_p99_ms: f64,
    pub pause_max_ms: f64,
    /// The 99.9th percentile pause.
    #[serde(default)]
    pub pause_p999_ms: f64,
    /// Peak heap: the shared (global or major) heap's peak plus every
    /// vproc's private (local or minor) heap.
    #[serde(default)]
    pub peak_heap_bytes: u64,
    /// Distinct pause durations (ns) and their counts, for the histogram.
    pub pauses: Vec<(u64, u64)>,
    pub minor_collections: u64,
    pub major_collections: u64,
    pub promotions: u64,
    pub global_collections: u64,
    pub bytes_allocated: u64,
    pub bytes_promoted: u64,
    pub tasks_forked: u64,
    pub tasks_stolen: u64,
    /// Share of global-collection copying that read node-local chunks.
    pub numa_locality: Option<f64>,
    /// The balance of the global collections' parallel copy: per
    /// collection, the most bytes one vproc copied over the mean
    /// (`StatsReport::global_copy_imbalance`), its median and maximum over
    /// the run's collections; none without global collections or with one
    /// vproc.
    #[serde(default)]
    pub copy_imbalance_median: Option<f64>,
    #[serde(default)]
    pub copy_imbalance_max: Option<f64>,
    /// Microseconds a vproc waited for scan work in a global collection,
    /// mean over the vprocs (`StatsReport::global_scan_wait_us`): the
    /// median over the run's collections; none as above.
    #[serde(default)]
    pub scan_wait_median_us: Option<f64>,
    /// Promotion's cost over the run (`StatsReport::promotion_cost`):
    /// nanoseconds per object and per KiB promoted; none when nothing was
    /// promoted.
    #[serde(default)]
    pub promotion_ns_per_object: Option<f64>,
    #[serde(default)]
    pub promotion_ns_per_kib: Option<f64>,
    /// The answer passed its independent check.
    pub correct: bool,
    /// Why the run failed or its answer was wrong.
    pub error: Option<String>,
}

/// The repetitions of one configuration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    pub benchmark: String,
    /// See [`RunRecord::api`].
    #[serde(default = "safe_api")]
    pub api: String,
    pub size: String,
    pub vprocs: usize,
    /// The collector plan (`PlanKind::name`).
    pub plan: String,
    pub numa_policy: String,
    pub runs: usize,
    pub wall_median_s: f64,
    pub wall_min_s: f64,
    pub wall_max_s: f64,
    /// Over the smallest vproc count of the same benchmark, plan and policy.
    pub speedup: Option<f64>,
    /// The vproc count `speedup` is relative to.
    pub speedup_base_vprocs: Option<usize>,
    pub gc_share_median: f64,
    /// The largest p99 pause of the repetitions.
    pub pause_p99_ms: f64,
    pub pause_max_ms: f64,
    /// The largest p99.9 pause of the repetitions.
    #[serde(default)]
    pub pause_p999_ms: f64,
    /// The median peak heap of the repetitions (see `RunRecord`).
    #[serde(default)]
    pub peak_heap_median_bytes: f64,
    pub bytes_allocated_median: f64,
    pub bytes_promoted_median: f64,
    pub numa_locality_median: Option<f64>,
    pub all_correct: bool,
}

fn safe_api() -> String {
    "safe".into()
}

/// A benchmark's name in the table and labels: `binarytrees`, or
/// `binarytrees (compiled)` for a program on another interface than the
/// safe one.
pub fn bench_label(benchmark: &str, api: &str) -> String {
    if api == "safe" {
        benchmark.into()
    } else {
        format!("{benchmark} ({api})")
    }
}

/// The name of one run, in the progress line, its messages and the
/// trace: "binarytrees split local x2 #1".
pub fn run_label(
    benchmark: &str,
    plan: &str,
    numa_policy: &str,
    vprocs: usize,
    repetition: usize,
) -> String {
    format!("{benchmark} {plan} {numa_policy} x{vprocs} #{repetition}")
}

impl RunRecord {
    /// See [`run_label`].
    pub fn label(&self) -> String {
        run_label(
            &bench_label(&self.benchmark, &self.api),
            &self.plan,
            &self.numa_policy,
            self.vprocs,
            self.repetition,
        )
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Median of a sample (0 for an empty one).
/// The smallest and the largest of `xs` ((inf, 0) when empty).
pub fn min_max(xs: &[f64]) -> (f64, f64) {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(0.0, f64::max);
    (lo, hi)
}

pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// One summary per configuration, in the order the configurations first
/// appear in `runs`. Failed runs count in `runs` and `all_correct` but not
/// in the times.
pub fn summarize(runs: &[RunRecord]) -> Vec<Summary> {
    // (benchmark, plan, policy, vprocs, api)
    type Configuration = (String, String, String, usize, String);
    let mut order: Vec<Configuration> = Vec::new();
    let mut groups: BTreeMap<Configuration, Vec<&RunRecord>> = BTreeMap::new();
    for r in runs {
        let key = (
            r.benchmark.clone(),
            r.plan.clone(),
            r.numa_policy.clone(),
            r.vprocs,
            r.api.clone(),
        );
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(r);
    }
    let mut out: Vec<Summary> = order
        .iter()
        .map(|key| {
            let rs = &groups[key];
            let ok: Vec<&&RunRecord> = rs.iter().filter(|r| r.error.is_none()).collect();
            let walls: Vec<f64> = ok.iter().map(|r| r.wall_s).collect();
            let f = |g: fn(&RunRecord) -> f64| median(&ok.iter().map(|r| g(r)).collect::<Vec<_>>());
            let localities: Vec<f64> = ok.iter().filter_map(|r| r.numa_locality).collect();
            Summary {
                benchmark: key.0.clone(),
                api: key.4.clone(),
                size: rs[0].size.clone(),
                vprocs: key.3,
                plan: key.1.clone(),
                numa_policy: key.2.clone(),
                runs: rs.len(),
                wall_median_s: median(&walls),
                wall_min_s: walls.iter().copied().reduce(f64::min).unwrap_or(0.0),
                wall_max_s: walls.iter().copied().reduce(f64::max).unwrap_or(0.0),
                speedup: None,
                speedup_base_vprocs: None,
                gc_share_median: f(|r| r.gc_share),
                pause_p99_ms: ok.iter().map(|r| r.pause_p99_ms).fold(0.0, f64::max),
                pause_max_ms: ok.iter().map(|r| r.pause_max_ms).fold(0.0, f64::max),
                pause_p999_ms: ok.iter().map(|r| r.pause_p999_ms).fold(0.0, f64::max),
                peak_heap_median_bytes: f(|r| r.peak_heap_bytes as f64),
                bytes_allocated_median: f(|r| r.bytes_allocated as f64),
                bytes_promoted_median: f(|r| r.bytes_promoted as f64),
                numa_locality_median: (!localities.is_empty()).then(|| median(&localities)),
                all_correct: rs.iter().all(|r| r.correct),
            }
        })
        .collect();
    // Speedups against the smallest vproc count of the same benchmark, plan
    // and policy.
    let bases: Vec<Option<(usize, f64)>> = out
        .iter()
        .map(|s| {
            out.iter()
                .filter(|o| {
                    o.benchmark == s.benchmark
                        && o.api == s.api
                        && o.plan == s.plan
                        && o.numa_policy == s.numa_policy
                        && o.wall_median_s > 0.0
                })
                .min_by_key(|o| o.vprocs)
                .map(|o| (o.vprocs, o.wall_median_s))
        })
        .collect();
    for (s, base) in out.iter_mut().zip(bases) {
        if let Some((v, t)) = base {
            if s.wall_median_s > 0.0 {
                s.speedup = Some(t / s.wall_median_s);
                s.speedup_base_vprocs = Some(v);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(bench: &str, vprocs: usize, wall: f64, ok: bool) -> RunRecord {
        RunRecord {
            benchmark: bench.into(),
            api: "safe".into(),
            size: "quick".into(),
            params: BTreeMap::new(),
            vprocs,
            plan: "split".into(),
            pes: 0,
            pe_stats: Vec::new(),
            numa_policy: "local".into(),
            repetition: 1,
            wall_s: wall,
            gc_s: wall / 10.0,
            gc_share: 0.1,
            pause_count: 1,
            pause_p99_ms: wall,
            pause_max_ms: wall * 2.0,
            pause_p999_ms: 0.0,
            peak_heap_bytes: 0,
            pauses: vec![],
            minor_collections: 0,
            major_collections: 0,
            promotions: 0,
            global_collections: 0,
            bytes_allocated: 100,
            bytes_promoted: 10,
            tasks_forked: 0,
            tasks_stolen: 0,
            numa_locality: None,
            copy_imbalance_median: None,
            copy_imbalance_max: None,
            scan_wait_median_us: None,
            promotion_ns_per_object: None,
            promotion_ns_per_kib: None,
            correct: ok,
            error: (!ok).then(|| "wrong".into()),
        }
    }

    #[test]
    fn medians_and_speedups_per_configuration() {
        let runs = vec![
            run("a", 1, 4.0, true),
            run("a", 2, 2.5, true),
            run("a", 1, 6.0, true),
            run("a", 2, 1.5, true),
            run("a", 1, 5.0, true),
            run("a", 2, 2.0, true),
            run("b", 2, 1.0, false),
        ];
        let s = summarize(&runs);
        assert_eq!(s.len(), 3);
        assert_eq!(
            (
                s[0].vprocs,
                s[0].wall_median_s,
                s[0].wall_min_s,
                s[0].wall_max_s
            ),
            (1, 5.0, 4.0, 6.0)
        );
        assert_eq!(s[0].speedup, Some(1.0));
        assert_eq!(
            (s[1].vprocs, s[1].wall_median_s, s[1].speedup),
            (2, 2.0, Some(2.5))
        );
        assert_eq!(s[1].pause_max_ms, 5.0);
        assert!(s[1].all_correct);
        // A configuration whose only run failed has no times and no speedup.
        assert_eq!(
            (s[2].runs, s[2].all_correct, s[2].speedup),
            (1, false, None)
        );
    }

    #[test]
    fn plans_are_configurations_of_their_own_with_their_own_speedup_base() {
        let on = |plan: &str, r: RunRecord| RunRecord {
            plan: plan.into(),
            ..r
        };
        let runs = vec![
            on("split", run("a", 1, 4.0, true)),
            on("split", run("a", 2, 2.0, true)),
            on("other", run("a", 1, 8.0, true)),
            on("other", run("a", 2, 2.0, true)),
            // Run at 2 vprocs only: its base is itself.
            on("other", run("b", 2, 3.0, true)),
        ];
        let s = summarize(&runs);
        // "benchmark plan xvprocs: speedup over base vprocs"
        let got: Vec<String> = s
            .iter()
            .map(|s| {
                format!(
                    "{} {} x{}: {:?} over {:?}",
                    s.benchmark, s.plan, s.vprocs, s.speedup, s.speedup_base_vprocs
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                "a split x1: Some(1.0) over Some(1)",
                "a split x2: Some(2.0) over Some(1)",
                "a other x1: Some(1.0) over Some(1)",
                "a other x2: Some(4.0) over Some(1)",
                "b other x2: Some(1.0) over Some(2)",
            ]
        );
        assert_eq!(runs[2].label(), "a other local x1 #1");
    }

    #[test]
    fn median_of_even_and_odd_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(&[]), 0.0);
    }
}
