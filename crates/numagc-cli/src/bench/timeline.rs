//! `--trace FILE`: the runs' timelines as a Chrome trace (the JSON "Trace
//! Event Format" that Perfetto and chrome://tracing open). Each run is a
//! process named after its configuration and repetition
//! (`record::run_label`: "binarytrees split local x2 #1", benchmark, plan,
//! policy, vprocs, repetition), each vproc a thread of it, and
//! each span (`numagc::trace::Span`) a complete event ("ph": "X") with its
//! category: `mutator` (jobs, stolen tasks, threads), `gc` (minor, major,
//! promotion, global) or `idle` (waits, sleeps). Times are microseconds
//! from the start of the run's runtime.

use numagc::trace::{Span, SpanKind};
use serde_json::{json, Value};
use std::path::Path;

/// The timeline of one run.
pub struct RunTimeline {
    /// The run's label (`record::run_label`), the process's name.
    pub name: String,
    pub vprocs: usize,
    /// The node of each vproc.
    pub nodes: Vec<usize>,
    pub spans: Vec<Span>,
    pub dropped: u64,
}

fn category(k: SpanKind) -> &'static str {
    match k {
        SpanKind::Job | SpanKind::StolenTask | SpanKind::Thread => "mutator",
        SpanKind::Wait | SpanKind::Sleep => "idle",
        _ => "gc",
    }
}

/// The trace events of `runs`, in the Trace Event Format's JSON object form.
pub fn to_json(runs: &[RunTimeline]) -> Value {
    let mut events = Vec::new();
    for (i, r) in runs.iter().enumerate() {
        let pid = i + 1;
        events
            .push(json!({"name": "process_name", "ph": "M", "pid": pid, "args": {"name": r.name}}));
        events.push(json!({"name": "process_sort_index", "ph": "M", "pid": pid, "args": {"sort_index": pid}}));
        for v in 0..r.vprocs {
            let node = r.nodes.get(v).copied().unwrap_or(0);
            events.push(json!({"name": "thread_name", "ph": "M", "pid": pid, "tid": v, "args": {"name": format!("vproc {v} (node {node})")}}));
        }
        for s in &r.spans {
            events.push(json!({
                "name": s.kind.name(),
                "cat": category(s.kind),
                "ph": "X",
                "ts": s.start_ns as f64 / 1e3,
                "dur": s.dur_ns as f64 / 1e3,
                "pid": pid,
                "tid": s.vproc,
            }));
        }
        if r.dropped > 0 {
            events.push(json!({"name": format!("{} spans dropped (limit per vproc reached)", r.dropped), "ph": "i", "s": "p", "ts": 0, "pid": pid, "tid": 0}));
        }
    }
    json!({"traceEvents": events, "displayTimeUnit": "ms"})
}

pub fn write(path: &Path, runs: &[RunTimeline]) -> Result<(), String> {
    let file =
        std::fs::File::create(path).map_err(|e| format!("writing {}: {e}", path.display()))?;
    serde_json::to_writer(std::io::BufWriter::new(file), &to_json(runs))
        .map_err(|e| format!("writing {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_become_processes_and_spans_complete_events() {
        let spans = vec![
            Span {
                vproc: 0,
                kind: SpanKind::Job,
                start_ns: 1_000,
                dur_ns: 9_000,
            },
            Span {
                vproc: 0,
                kind: SpanKind::Minor,
                start_ns: 2_000,
                dur_ns: 500,
            },
            Span {
                vproc: 1,
                kind: SpanKind::Sleep,
                start_ns: 0,
                dur_ns: 4_000,
            },
        ];
        let runs = [RunTimeline {
            name: "bt split local x2 #1".into(),
            vprocs: 2,
            nodes: vec![0, 1],
            spans,
            dropped: 0,
        }];
        let v = to_json(&runs);
        let ev = v["traceEvents"].as_array().unwrap();
        let names: Vec<&str> = ev
            .iter()
            .filter(|e| e["ph"] == "M")
            .map(|e| e["args"]["name"].as_str().unwrap_or(""))
            .collect();
        assert!(names.contains(&"bt split local x2 #1") && names.contains(&"vproc 1 (node 1)"));
        let x: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(x.len(), 3);
        assert_eq!(
            (x[1]["name"].as_str(), x[1]["cat"].as_str()),
            (Some("minor GC"), Some("gc"))
        );
        assert_eq!(
            (x[1]["ts"].as_f64(), x[1]["dur"].as_f64()),
            (Some(2.0), Some(0.5))
        );
        assert_eq!(x[2]["tid"], 1);
    }
}
