//! The harness's summary table: one row per configuration.

use super::record::Summary;

/// `x` with `digits` decimals, or "-" when there is none: the cell of a
/// figure that a run may lack (the harness's, `compare`'s and
/// `arena-bench`'s tables).
pub fn opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |v| format!("{v:.digits$}"))
}

const HEADER: [&str; 13] = [
    "benchmark",
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

fn row(s: &Summary) -> [String; 13] {
    [
        s.benchmark.clone(),
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
    let rows: Vec<[String; 13]> = summaries.iter().map(row).collect();
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
                if i < 2 {
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
