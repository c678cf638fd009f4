//! The timeline of a run: per vproc, spans of jobs, collections (minor,
//! major, promotion, global; §3.3–3.4), stolen tasks, thread runs, waits in
//! joins and idle sleeps, recorded when the `trace` setting is on and read
//! with `Runtime::trace` (the CLI writes them as a Chrome/Perfetto trace).
//!
//! Invariant: each vproc appends only to its own [`Tracer`], without
//! synchronisation, and moves its events to the runtime's shared buffer
//! when it publishes its statistics (after every job and stolen task), so
//! a finished run's trace holds every span that ended before its last job
//! did. Spans of one vproc nest properly (a collection inside a job inside
//! nothing): they are recorded when they end, with start times taken from
//! one monotonic clock shared by all vprocs (the runtime's epoch).
//!
//! Cost when off: one branch on a `bool` per recorded span (spans are
//! collections and scheduling events, never allocations). When on, a vproc
//! records at most [`MAX_EVENTS`] spans in the runtime's life; the rest are
//! counted as dropped.

use std::time::Instant;

/// What a span of a vproc's time was spent on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanKind {
    /// A job submitted by `Runtime::run_on` / `run_each` (mutator time,
    /// with the collections it ran nested inside).
    Job,
    /// A task stolen from another vproc's deque, run here.
    StolenTask,
    /// A run of a language thread's continuation.
    Thread,
    Minor,
    Major,
    Promotion,
    Global,
    /// Waiting for a stolen task's result or a rendezvous (with the work
    /// done meanwhile nested inside); inside a global collection, waiting
    /// for scan work (from 20 µs up).
    Wait,
    /// Asleep with nothing to do.
    Sleep,
}

impl SpanKind {
    pub fn name(self) -> &'static str {
        match self {
            SpanKind::Job => "job",
            SpanKind::StolenTask => "stolen task",
            SpanKind::Thread => "thread",
            SpanKind::Minor => "minor GC",
            SpanKind::Major => "major GC",
            SpanKind::Promotion => "promotion",
            SpanKind::Global => "global GC",
            SpanKind::Wait => "wait",
            SpanKind::Sleep => "sleep",
        }
    }

    /// Whether the span is collector time.
    pub fn is_gc(self) -> bool {
        matches!(
            self,
            SpanKind::Minor | SpanKind::Major | SpanKind::Promotion | SpanKind::Global
        )
    }
}

/// One span of one vproc's time, in nanoseconds since the runtime started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Span {
    pub vproc: usize,
    pub kind: SpanKind,
    pub start_ns: u64,
    pub dur_ns: u64,
}

/// Events a vproc keeps at most (24 MiB of spans); later ones are dropped and counted.
pub const MAX_EVENTS: usize = 1 << 20;

/// A vproc's span recorder.
pub(crate) struct Tracer {
    on: bool,
    vproc: usize,
    epoch: Instant,
    spans: Vec<Span>,
    kept: usize,
    pub dropped: u64,
}

impl Tracer {
    pub fn new(on: bool, vproc: usize, epoch: Instant) -> Tracer {
        Tracer {
            on,
            vproc,
            epoch,
            spans: Vec::new(),
            kept: 0,
            dropped: 0,
        }
    }

    /// The start of a span, when tracing is on.
    #[inline]
    pub fn start(&self) -> Option<Instant> {
        self.on.then(Instant::now)
    }

    /// Records a span of `kind` from `start` to now (nothing when `start`
    /// is `None`, i.e. tracing is off).
    #[inline]
    pub fn end(&mut self, kind: SpanKind, start: Option<Instant>) {
        if let Some(t0) = start {
            self.span(kind, t0, t0.elapsed());
        }
    }

    /// Records a span of `kind` that started at `t0` and lasted `d`.
    pub fn span(&mut self, kind: SpanKind, t0: Instant, d: std::time::Duration) {
        if !self.on {
            return;
        }
        if self.kept >= MAX_EVENTS {
            self.dropped += 1;
            return;
        }
        self.kept += 1;
        let start_ns =
            u64::try_from(t0.saturating_duration_since(self.epoch).as_nanos()).unwrap_or(u64::MAX);
        let dur_ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.spans.push(Span {
            vproc: self.vproc,
            kind,
            start_ns,
            dur_ns,
        });
    }

    /// Moves the recorded spans out (to the runtime's shared buffer).
    pub fn take(&mut self) -> Vec<Span> {
        std::mem::take(&mut self.spans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn off_records_nothing() {
        let mut t = Tracer::new(false, 0, Instant::now());
        assert!(t.start().is_none());
        t.span(SpanKind::Minor, Instant::now(), Duration::from_micros(5));
        assert!(t.take().is_empty());
    }

    #[test]
    fn spans_are_relative_to_the_epoch_and_capped() {
        let epoch = Instant::now();
        let mut t = Tracer::new(true, 3, epoch);
        t.span(
            SpanKind::Job,
            epoch + Duration::from_micros(10),
            Duration::from_micros(7),
        );
        let s = t.take();
        assert_eq!(
            s,
            vec![Span {
                vproc: 3,
                kind: SpanKind::Job,
                start_ns: 10_000,
                dur_ns: 7_000
            }]
        );
        t.kept = MAX_EVENTS;
        t.span(SpanKind::Job, epoch, Duration::ZERO);
        assert!(t.take().is_empty());
        assert_eq!(t.dropped, 1);
    }
}
