//! The timeline (`trace` setting, `Runtime::take_trace`): spans of jobs,
//! collections and stolen tasks per vproc, consistent with the statistics,
//! and nested properly; nothing recorded when the setting is off.

mod common;

use common::*;
use numagc::trace::{Span, SpanKind};
use numagc::{Handle, Result, Runtime, Scope};

/// Forks a tree of tasks that allocate lists (so collections happen inside
/// jobs and stolen tasks) and sums their lengths.
fn work<'s>(s: &mut Scope<'s>, cons: numagc::DescId, depth: u32) -> Result<Handle<'s>> {
    if depth == 0 {
        let l = build_list(s, cons, depth as i64, 2_000)?;
        let n = read_list(s.view(l), cons)
            .map_err(numagc::Error::misuse)?
            .len();
        return Ok(Handle::int(n as i64));
    }
    let (a, b) = s.par2(
        &[],
        move |s, _| work(s, cons, depth - 1),
        move |s, _| work(s, cons, depth - 1),
    )?;
    Ok(Handle::int(s.as_int(a).unwrap() + s.as_int(b).unwrap()))
}

fn run(trace: bool) -> (Runtime, Vec<Span>, u64) {
    let rt = Runtime::new(test_config(2).trace(trace).build().unwrap()).unwrap();
    let cons = register_cons(&rt);
    let n = rt
        .run_on(0, move |s| work(s, cons, 6).map(|h| s.as_int(h).unwrap()))
        .unwrap()
        .unwrap();
    assert_eq!(n, 64 * 2_000);
    rt.run_each(|s| s.collect_global().unwrap()).unwrap();
    // A vproc that joined the last collection while idle publishes its
    // spans and statistics when its part ends, which may be after the
    // leader's job has returned. A job on every vproc comes after that
    // publication, so the reads below see a quiet runtime.
    rt.run_each(|_| ()).unwrap();
    let (spans, dropped) = rt.take_trace();
    (rt, spans, dropped)
}

fn count(spans: &[Span], kind: SpanKind) -> u64 {
    spans.iter().filter(|s| s.kind == kind).count() as u64
}

#[test]
fn spans_match_the_statistics_and_nest() {
    let (rt, spans, dropped) = run(true);
    assert_eq!(dropped, 0);
    let t = rt.stats().total;
    assert!(t.minor.count > 0, "the workload collects");
    assert_eq!(count(&spans, SpanKind::Minor), t.minor.count);
    assert_eq!(count(&spans, SpanKind::Major), t.major.count);
    assert_eq!(count(&spans, SpanKind::Promotion), t.promotion.count);
    assert_eq!(count(&spans, SpanKind::Global), t.global.count);
    assert_eq!(count(&spans, SpanKind::StolenTask), t.tasks_stolen);
    // One job on vproc 0, then two per vproc.
    assert_eq!(count(&spans, SpanKind::Job), 5);
    // A global collection's span holds the vproc's minor and major
    // collections that start it; its phase counts only the rest.
    let global_ns: u64 = spans
        .iter()
        .filter(|s| s.kind == SpanKind::Global)
        .map(|s| s.dur_ns)
        .sum();
    assert!(global_ns >= t.global.total_ns);
    let top_gc_ns: u64 = spans
        .iter()
        .filter(|s| s.kind.is_gc())
        .filter(|m| {
            !spans.iter().any(|g| {
                g.kind == SpanKind::Global
                    && g.vproc == m.vproc
                    && g != *m
                    && g.start_ns <= m.start_ns
                    && m.start_ns < g.start_ns + g.dur_ns
            })
        })
        .map(|s| s.dur_ns)
        .sum();
    assert!(top_gc_ns >= t.gc_ns(), "{top_gc_ns} vs {}", t.gc_ns());

    // On each vproc, spans either nest or are disjoint (a proper timeline).
    for v in 0..2 {
        let mine: Vec<&Span> = spans.iter().filter(|s| s.vproc == v).collect();
        let mut open: Vec<(u64, SpanKind)> = Vec::new(); // ends of enclosing spans
        for s in mine {
            while open.last().is_some_and(|&(end, _)| end <= s.start_ns) {
                open.pop();
            }
            if let Some(&(end, outer)) = open.last() {
                assert!(
                    s.start_ns + s.dur_ns <= end,
                    "vproc {v}: {s:?} overlaps the end of an enclosing {outer:?}"
                );
            }
            open.push((s.start_ns + s.dur_ns, s.kind));
        }
    }
    // Collections of a job happen inside it: every minor collection of vproc 0
    // lies inside some job, stolen task or wait of vproc 0, or starts a
    // global collection that the idle vproc joined.
    for m in spans
        .iter()
        .filter(|s| s.vproc == 0 && s.kind == SpanKind::Minor)
    {
        assert!(
            spans.iter().any(|o| o.vproc == 0
                && matches!(
                    o.kind,
                    SpanKind::Job | SpanKind::StolenTask | SpanKind::Wait | SpanKind::Global
                )
                && o.start_ns <= m.start_ns
                && m.start_ns + m.dur_ns <= o.start_ns + o.dur_ns),
            "{m:?} outside: {:#?}",
            spans
                .iter()
                .filter(|o| o.vproc == 0
                    && o.start_ns + 2_000_000 > m.start_ns
                    && o.start_ns < m.start_ns + 2_000_000)
                .collect::<Vec<_>>()
        );
    }
    // Taking the trace empties it.
    assert!(rt.take_trace().0.is_empty());
}

#[test]
fn nothing_is_recorded_when_off() {
    let (rt, spans, dropped) = run(false);
    assert!(rt.stats().total.minor.count > 0);
    assert!(spans.is_empty());
    assert_eq!(dropped, 0);
}
