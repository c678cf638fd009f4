//! The harness's summary table: one row per configuration, named by its
//! benchmark, plan, policy and vproc count (the first four columns).

use super::record::Summary;

/// `x` with `digits` decimals, or "-" when there is none: the cell of a
/// figure that a run may lack (the harness's, `compare`'s and
/// `arena-bench`'s tables).
pub fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.digits$}"))
}

const COLUMNS: usize = 14;

/// The leading columns that are text (left-aligned); the others are
/// figures (right-aligned).
const TEXT_COLUMNS: usize = 3;

const HEADER: [&str; COLUMNS] = [
    "benchmark",
    "plan",
    "policy",
    "vprocs",
    "runs",
    "median s",
    "min..max s",
    "speedup",
    "GC %",
    "pause p99 ms",
    "pause max ms",
    "promoted MB",
    "NUMA local",
    "answer",
];

fn row(s: &Summary) -> [String; COLUMNS] {
    [
        super::record::bench_label(&s.benchmark, &s.api),
        s.plan.clone(),
        s.numa_policy.clone(),
        s.vprocs.to_string(),
        s.runs.to_string(),
        format!("{:.3}", s.wall_median_s),
        format!("{:.3}..{:.3}", s.wall_min_s, s.wall_max_s),
        s.speedup.map_or("-".into(), |x| format!("{x:.2}")),
        format!("{:.1}", s.gc_share_median * 100.0),
        format!("{:.2}", s.pause_p99_ms),
        format!("{:.2}", s.pause_max_ms),
        format!("{:.1}", s.bytes_promoted_median / 1e6),
        s.numa_locality_median
            .map_or("-".into(), |l| format!("{:.0}%", l * 100.0)),
        if s.all_correct {
            "ok".into()
        } else {
            "WRONG".into()
        },
    ]
}

/// Aligned columns: text left, numbers right.
pub fn render(summaries: &[Summary]) -> String {
    let rows: Vec<[String; COLUMNS]> = summaries.iter().map(row).collect();
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.len()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let parts: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i < TEXT_COLUMNS {
                    format!("{c:<w$}", w = widths[i])
                } else {
                    format!("{c:>w$}", w = widths[i])
                }
            })
            .collect();
        out.push_str(parts.join("  ").trim_end());
        out.push('\n');
    };
    line(HEADER.to_vec(), &mut out);
    for r in &rows {
        line(r.iter().map(|s| s.as_str()).collect(), &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(plan: &str, vprocs: usize) -> Summary {
        Summary {
            benchmark: "binarytrees".into(),
            api: "safe".into(),
            size: "quick".into(),
            vprocs,
            plan: plan.into(),
            numa_policy: "interleave".into(),
            runs: 3,
            wall_median_s: 1.5,
            wall_min_s: 1.25,
            wall_max_s: 2.0,
            speedup: Some(1.0),
            speedup_base_vprocs: Some(1),
            gc_share_median: 0.125,
            pause_p99_ms: 0.5,
            pause_max_ms: 1.0,
            pause_p999_ms: 0.0,
            peak_heap_median_bytes: 0.0,
            bytes_allocated_median: 1e9,
            bytes_promoted_median: 2e6,
            numa_locality_median: None,
            all_correct: true,
        }
    }

    #[test]
    fn rows_are_named_by_benchmark_plan_policy_and_vprocs() {
        let table = render(&[summary("split", 1), summary("split", 16)]);
        let lines: Vec<&str> = table.lines().collect();
        let cells = |l: &str| l.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
        assert_eq!(cells(lines[0]), "benchmark plan policy vprocs");
        assert_eq!(cells(lines[1]), "binarytrees split interleave 1");
        // Text left-aligned, figures right-aligned.
        assert!(
            lines[0].starts_with("benchmark    plan   policy      vprocs"),
            "{table}"
        );
        assert!(lines[1].contains("interleave       1"), "{table}");
        assert!(lines[2].contains("interleave      16"), "{table}");
    }
}
