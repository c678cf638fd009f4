//! Virtual processors (§2.2): the per-thread state of the runtime.
//!
//! A [`Vproc`] is owned by its pinned thread and holds everything the
//! allocation fast path and the local collections touch — the nursery bump
//! pointer, the root stack, and its plan's part (`split`: the local heap,
//! the current global chunk) — so those run without synchronisation.
//! [`Shared`] is what all vprocs see.
//!
//! Invariant: only the owning thread touches a `Vproc`; other vprocs reach
//! it only through the allocation-limit cell in the [`Coordinator`]. The
//! one exception is the vproc's proxy, which owns it while the owner is in
//! a blocking section and the coordinator says so (`gc::blocking`).

use crate::compiled::record::{MutatorRecord, RootStack};
use crate::config::{Config, PlanKind};
use crate::error::Error;
use crate::gc::handshake::Coordinator;
use crate::heap::global::GlobalHeap;
use crate::mutator::roots::GlobalRoots;
use crate::object::descriptor::{DescriptorTable, FastLayouts};
use crate::sched::deque::Worker;
use crate::sched::thread::ChanCore;
use crate::sched::{Scheduler, TaskRef};
use crate::stats::{PhaseStats, VprocStats};
use crate::sync::Mutex;
use crate::topology::{PinOutcome, VprocPlacement};
use crate::trace::{Span, SpanKind, Tracer};
use std::sync::{Arc, Weak};

/// A job run on a vproc thread.
pub(crate) type Job = Box<dyn FnOnce(&mut Vproc) + Send>;

/// State shared by all vprocs of a runtime.
pub(crate) struct Shared {
    pub config: Config,
    pub heap: GlobalHeap,
    pub descs: DescriptorTable,
    pub coord: Coordinator<Job>,
    pub global_roots: GlobalRoots,
    /// The split plan's collection state (`plan::split::global`).
    pub split: crate::plan::split::global::GlobalGc,
    /// The shared plan's state (`plan::shared_heap`).
    pub shared_heap: crate::plan::shared_heap::SharedHeapGc,
    /// Every vproc's ephemerons and finalisers (`crate::weak`).
    pub weak: crate::weak::WeakRegistry,
    pub sched: Scheduler,
    /// Statistics each vproc publishes after every job and collection.
    pub stats: Box<[Mutex<VprocStats>]>,
    pub placements: Vec<VprocPlacement>,
    pub pins: Mutex<Vec<PinOutcome>>,
    /// Every channel created, so that shutdown can drop what waits on them
    /// (a blocked thread's continuation may hold its own channel).
    pub channels: Mutex<Vec<Weak<ChanCore>>>,
    /// Errors of threads that failed, oldest first (at most
    /// [`MAX_THREAD_ERRORS`]; `stats.threads_failed` counts them all).
    pub thread_errors: Mutex<Vec<Error>>,
    /// When the runtime started: time zero of the trace.
    pub epoch: std::time::Instant,
    /// Per vproc: the trace spans it published, and how many it dropped.
    pub traces: Box<[Mutex<PublishedSpans>]>,
    /// Vproc threads that have not exited yet.
    pub running: std::sync::atomic::AtomicUsize,
    /// The PE this runtime is, when it is one of a group (`crate::pe`).
    pub pe: std::sync::OnceLock<Arc<crate::pe::group::PeContext>>,
}

/// Trace spans a vproc published, and how many it dropped.
pub(crate) type PublishedSpans = (Vec<Span>, u64);

/// How many thread errors are kept for `Runtime::take_thread_errors`.
pub(crate) const MAX_THREAD_ERRORS: usize = 64;

impl Shared {
    pub fn register_channel(&self, c: &Arc<ChanCore>) {
        let mut cs = crate::sync::lock(&self.channels);
        if cs.len().is_power_of_two() {
            cs.retain(|w| w.strong_count() > 0);
        }
        cs.push(Arc::downgrade(c));
    }

    pub fn record_thread_error(&self, e: Error) {
        let mut es = crate::sync::lock(&self.thread_errors);
        if es.len() < MAX_THREAD_ERRORS {
            es.push(e);
        }
    }

    /// A vproc thread is exiting; the last one drops the threads of the
    /// language left over (no vproc can push one after that).
    pub fn vproc_exited(&self) {
        if self
            .running
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel)
            == 1
        {
            self.drop_threads();
        }
    }

    /// Drops the threads waiting in ready queues and on channels (after the
    /// vproc threads have stopped): what they hold is released, and the
    /// reference cycles a continuation can form with its channel — and a
    /// ready thread's global roots form with this state — are cut.
    pub fn drop_threads(&self) {
        self.sched.clear_ready();
        self.weak.clear();
        for c in crate::sync::lock(&self.channels).drain(..) {
            if let Some(c) = c.upgrade() {
                c.clear();
            }
        }
    }
}

pub(crate) struct Vproc {
    pub id: usize,
    pub node: usize,
    /// The heap design this vproc runs (see `crate::plan`).
    pub plan: PlanKind,
    /// Nursery bytes below this were counted in `stats.bytes_allocated`
    /// (counted per collection, not per allocation, to keep the fast path
    /// short).
    pub counted_ptr: usize,
    /// The end of the bump region: the allocation limit installed when no
    /// request waits (set by the plan when it resets the nursery).
    pub alloc_end: usize,
    /// This vproc's mutator record (`crate::compiled::record`): the
    /// nursery's bump pointer, the allocation limit (the leader of a
    /// global collection zeroes it), the root stack's top. It lives in
    /// `shared.coord`.
    pub rec: *const MutatorRecord,
    /// Root stack: values the mutator holds through handles, and compiled
    /// code's frames.
    pub roots: RootStack,
    /// The descriptor table's packed layouts (kept alive by `shared`).
    pub layouts: FastLayouts,
    /// Objects of at least this many bytes go to the large-object space
    /// (a copy of the setting, read on every allocation).
    pub large_object_size: usize,
    /// Whether forks promote their environments at once
    /// (`--task-promotion eager`; a copy of the setting, read at every
    /// fork).
    pub eager_promotion: bool,
    /// The split plan's part: local heap, current chunk, copy reserve,
    /// remembered stores (`plan::split::Mutator`); empty on other plans.
    pub split: crate::plan::split::Mutator,
    /// The shared plan's part: minor heap, pools, mark stack, remembered
    /// set (`plan::shared_heap::Mutator`); empty on other plans.
    pub shared_heap: crate::plan::shared_heap::Mutator,
    pub stats: VprocStats,
    /// This vproc's work-stealing deque (`crate::sched`).
    pub worker: Worker<TaskRef>,
    /// Depth of thread continuations running on this vproc (nested runs
    /// happen while a vproc waits); direct-style channel calls refuse to
    /// block inside one.
    pub in_thread: u32,
    /// This vproc's timeline (`crate::trace`), when the `trace` setting is on.
    pub tracer: Tracer,
    /// The thread that acts for this vproc while it is in a blocking
    /// section (`sched::proxy`), started by its first one.
    pub proxy: Option<crate::sched::proxy::Proxy>,
    /// The bounds of this vproc thread's stack (`crate::stack`), checked by
    /// every fork; zero when the system does not say.
    pub stack: crate::stack::StackBounds,
    pub shared: Arc<Shared>,
}

impl Vproc {
    pub fn new(
        shared: Arc<Shared>,
        id: usize,
        node: usize,
        part: crate::plan::VprocPart,
        worker: Worker<TaskRef>,
        mut roots: RootStack,
    ) -> Vproc {
        let cfg = &shared.config;
        let rec = shared.coord.record(id);
        let (split, shared_heap, start, end) = match part {
            crate::plan::VprocPart::Split(m) => {
                let (s, e) = (m.local.nursery_start, m.local.end);
                // Stores of local values promote them first (§2.3); with
                // young global collections every store may need
                // remembering, which the slow path decides.
                let barrier = (m.local.base, m.local.end - m.local.base);
                rec.set_plan(0, barrier, cfg.young_global_gc);
                (m, crate::plan::shared_heap::Mutator::unused(), s, e)
            }
            crate::plan::VprocPart::SharedHeap(m) => {
                let (s, e) = (m.minor_start, m.minor_end);
                let r = shared.shared_heap.minor_heaps.clone();
                rec.set_plan(1, (r.start, r.len()), false);
                (crate::plan::split::Mutator::unused(), m, s, e)
            }
        };
        rec.set_alloc_ptr(start);
        roots.attach(rec);
        let rec: *const MutatorRecord = rec;
        let stats = VprocStats {
            vproc: id,
            node,
            ..Default::default()
        };
        let mut v = Vproc {
            id,
            node,
            plan: cfg.plan,
            counted_ptr: start,
            alloc_end: end,
            rec,
            roots,
            large_object_size: cfg.large_object_size,
            eager_promotion: cfg.task_promotion == crate::config::TaskPromotion::Eager,
            layouts: shared.descs.fast_layouts(),
            split,
            shared_heap,
            stats,
            worker,
            in_thread: 0,
            tracer: Tracer::new(cfg.trace, id, shared.epoch),
            proxy: None,
            // `new` runs on the vproc's own thread.
            stack: crate::stack::StackBounds::of_current_thread().unwrap_or_default(),
            shared,
        };
        v.install_limit();
        v
    }

    /// This vproc's mutator record.
    #[inline(always)]
    pub fn rec(&self) -> &MutatorRecord {
        // SAFETY: `rec` points into `self.shared.coord`, which the Arc in
        // `self.shared` keeps alive for as long as this Vproc exists.
        unsafe { &*self.rec }
    }

    /// Next free byte of the nursery.
    #[inline(always)]
    pub fn alloc_ptr(&self) -> usize {
        self.rec().alloc_ptr()
    }

    /// Moves the nursery's bump pointer (the plans, after a collection).
    #[inline(always)]
    pub fn set_alloc_ptr(&mut self, p: usize) {
        self.rec().set_alloc_ptr(p)
    }

    /// Bump-allocates `bytes` in the nursery: the inlined fast path.
    #[inline(always)]
    pub fn bump(&mut self, bytes: usize) -> Option<usize> {
        self.rec().bump(bytes)
    }

    /// Installs the end of the bump region as allocation limit; `true`
    /// when a global collection is pending and must be joined first.
    pub fn install_limit(&mut self) -> bool {
        self.shared.coord.set_limit(self.id, self.alloc_end)
    }

    /// Adds the nursery bytes allocated since the last count to the
    /// statistics; collections call it before resetting the nursery.
    pub fn count_allocation(&mut self) {
        let p = self.alloc_ptr();
        self.stats.bytes_allocated += (p - self.counted_ptr) as u64;
        self.counted_ptr = p;
    }

    /// Records a collection pause (`kind` is one of the collector's span
    /// kinds) in the statistics and the trace.
    pub fn record_pause(&mut self, kind: SpanKind, since: std::time::Instant) {
        self.record_pause_from(kind, since, since);
    }

    /// Records a pause that began at `since` and whose own phase began at
    /// `phase_since`: a global collection starts with this vproc's minor
    /// and major collections (§3.4), which record themselves, so the
    /// global phase counts only the time after them. The pause histogram
    /// and the trace get the whole stop; the phase totals add up to the
    /// time spent collecting without counting anything twice.
    pub fn record_pause_from(
        &mut self,
        kind: SpanKind,
        since: std::time::Instant,
        phase_since: std::time::Instant,
    ) {
        let d = since.elapsed();
        let phase: &mut PhaseStats = match kind {
            SpanKind::Minor => &mut self.stats.minor,
            SpanKind::Major => &mut self.stats.major,
            SpanKind::Promotion => &mut self.stats.promotion,
            _ => &mut self.stats.global,
        };
        debug_assert!(kind.is_gc(), "record_pause of {kind:?}");
        phase.record(d.saturating_sub(phase_since.saturating_duration_since(since)));
        self.stats.pauses.record(d);
        self.tracer.span(kind, since, d);
    }

    /// Copies this vproc's statistics where `Runtime::stats` reads them,
    /// and moves its trace spans to the shared buffer.
    pub fn publish_stats(&mut self) {
        self.count_allocation();
        *crate::sync::lock(&self.shared.stats[self.id]) = self.stats.clone();
        let spans = self.tracer.take();
        if !spans.is_empty() || self.tracer.dropped > 0 {
            let mut t = crate::sync::lock(&self.shared.traces[self.id]);
            t.0.extend(spans);
            t.1 += std::mem::take(&mut self.tracer.dropped);
        }
    }
}
