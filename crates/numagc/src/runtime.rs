//! The runtime: vproc threads, jobs, statistics.
//!
//! [`Runtime::new`] detects (or builds) the topology, places the vprocs
//! sparsely across its nodes (§2.2), reserves the heap's address space,
//! carves a local heap per vproc and starts one pinned thread per vproc.
//! Work reaches the vprocs as jobs ([`Runtime::run_on`], [`Runtime::run_each`]);
//! an idle vproc waits in the [`Coordinator`](crate::gc::handshake), where a
//! global collection wakes it to take part, so idle vprocs never stall one.

use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::gc::handshake::Coordinator;
use crate::heap::global::BindRecord;
use crate::mutator::roots::GlobalRoots;
use crate::mutator::Scope;
use crate::object::descriptor::{DescId, Descriptor, DescriptorTable};
use crate::stats::{HeapReport, StatsReport, VprocStats};
use crate::sync::{lock, Mutex};
use crate::topology::{cpu_warnings, pin_current_thread, PinOutcome, Topology, VprocPlacement};
use crate::vproc::{Job, Shared, Vproc};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;

/// What `numagc info` reports about a running runtime.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RuntimeInfo {
    pub config: Config,
    pub topology: Topology,
    pub placements: Vec<VprocPlacement>,
    pub pins: Vec<PinOutcome>,
    pub bindings: crate::numa::BindingCounts,
    /// The binding of each local heap and of the first global chunks.
    pub binding_log: Vec<BindRecord>,
    /// What a person should be told, one sentence each: the configuration's
    /// notes and the OS CPUs shared by the topology or the vprocs
    /// ([`crate::topology::cpu_warnings`]). Never printed by the library.
    pub warnings: Vec<String>,
}

/// A numagc runtime with its vprocs.
pub struct Runtime {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

std::thread_local! {
    /// Set on vproc threads: a job that waits for another job would wait
    /// for work queued behind itself.
    static ON_VPROC: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn not_from_a_vproc(what: &str) -> Result<()> {
    if ON_VPROC.with(|c| c.get()) {
        return Err(Error::misuse(format!(
            "{what} called from a vproc thread: a job cannot wait for other jobs (it would deadlock)"
        )));
    }
    Ok(())
}

/// The error a job, task or thread ends with when its code unwound on
/// vproc `vproc`: the error itself when compiled code raised it
/// (`compiled::raise`), a [`ErrorKind::TaskPanicked`] otherwise.
pub(crate) fn panic_error(vproc: usize, p: Box<dyn std::any::Any + Send>) -> Error {
    match p.downcast::<crate::compiled::Raised>() {
        Ok(r) => r.0,
        Err(p) => Error::from(ErrorKind::TaskPanicked {
            vproc,
            message: panic_message(p),
        }),
    }
}

pub(crate) fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic with a non-string payload".into())
}

impl Runtime {
    /// Starts a runtime with `config`. Fails with [`ErrorKind::MapFailed`] when
    /// the system refuses the heap's memory, [`ErrorKind::Os`] when a vproc
    /// thread cannot be started; nothing is left behind either way.
    pub fn new(config: Config) -> Result<Runtime> {
        Self::start(config, crate::fault::Hook::default())
    }

    /// A runtime whose memory calls fail as `faults` says (feature
    /// `fault-injection`; see [`crate::fault`]). The plan may be armed and
    /// disarmed while the runtime runs.
    #[cfg(feature = "fault-injection")]
    pub fn with_faults(config: Config, faults: Arc<crate::fault::FaultPlan>) -> Result<Runtime> {
        Self::start(config, crate::fault::Hook::new(faults))
    }

    /// PE `pe` of a group of `pes` (`crate::pe`): a runtime whose vprocs
    /// sit where [`Topology::place_pe_vprocs`] puts them.
    pub(crate) fn new_pe(config: Config, pe: usize, pes: usize) -> Result<Runtime> {
        Self::start_placed(config, crate::fault::Hook::default(), Some((pe, pes)))
    }

    fn start(config: Config, faults: crate::fault::Hook) -> Result<Runtime> {
        Self::start_placed(config, faults, None)
    }

    fn start_placed(
        config: Config,
        faults: crate::fault::Hook,
        pe: Option<(usize, usize)>,
    ) -> Result<Runtime> {
        let topology = Topology::from_config(&config)?;
        let n = config.vprocs;
        let placements = match pe {
            Some((pe, pes)) => topology.place_pe_vprocs(pe, pes, n),
            None => topology.place_vprocs(n),
        };
        let crate::plan::Parts {
            heap,
            split,
            shared_heap,
            vprocs: parts,
        } = crate::plan::setup(&config, &topology, &placements, faults)?;
        let nodes: Vec<usize> = placements.iter().map(|p| p.node).collect();
        let (sched, workers) = crate::sched::Scheduler::new(&nodes);
        let shared = Arc::new(Shared {
            sched,
            heap,
            descs: DescriptorTable::new(),
            coord: Coordinator::with_safepoint_timeout(n, config.safepoint_timeout()),
            global_roots: GlobalRoots::new(),
            split,
            shared_heap,
            weak: crate::weak::WeakRegistry::new(n),
            stats: (0..n).map(|_| Mutex::new(VprocStats::default())).collect(),
            placements: placements.clone(),
            pins: Mutex::new(vec![PinOutcome::Disabled; n]),
            channels: Mutex::new(Vec::new()),
            thread_errors: Mutex::new(Vec::new()),
            epoch: std::time::Instant::now(),
            traces: (0..n).map(|_| Mutex::new((Vec::new(), 0))).collect(),
            running: std::sync::atomic::AtomicUsize::new(n),
            pe: std::sync::OnceLock::new(),
            config,
        });
        let mut stacks = Vec::with_capacity(n);
        for _ in 0..n {
            stacks.push(crate::compiled::record::RootStack::reserve(
                crate::compiled::record::ROOT_STACK_SLOTS,
            )?);
        }
        let (ready_tx, ready_rx) = mpsc::channel();
        let mut threads = Vec::with_capacity(n);
        for (((p, part), worker), roots) in placements.iter().zip(parts).zip(workers).zip(stacks) {
            let vshared = shared.clone();
            let ready = ready_tx.clone();
            let (id, node, cpu) = (p.vproc, p.node, p.cpu);
            let t = std::thread::Builder::new()
                .name(format!("numagc-vproc-{id}"))
                .stack_size(shared.config.vproc_stack)
                .spawn(move || {
                    ON_VPROC.with(|c| c.set(true));
                    let pin = if vshared.config.pin {
                        pin_current_thread(cpu)
                    } else {
                        PinOutcome::Disabled
                    };
                    lock(&vshared.pins)[id] = pin;
                    let mut vp = Vproc::new(vshared, id, node, part, worker, roots);
                    vp.publish_stats();
                    let _ = ready.send(());
                    drop(ready);
                    vproc_loop(&mut vp);
                    crate::sched::proxy::stop(&mut vp);
                    vp.shared.vproc_exited();
                })
                .map_err(|e| {
                    Error::from(ErrorKind::Os {
                        what: "starting a vproc thread",
                        source: e,
                    })
                });
            match t {
                Ok(t) => threads.push(t),
                Err(e) => {
                    shared.coord.shutdown();
                    // The threads never started count as exited.
                    for _ in threads.len()..n {
                        shared.vproc_exited();
                    }
                    for t in threads {
                        let _ = t.join();
                    }
                    return Err(e);
                }
            }
        }
        drop(ready_tx);
        for _ in 0..n {
            let _ = ready_rx.recv();
        }
        Ok(Runtime { shared, threads })
    }

    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    pub fn vprocs(&self) -> usize {
        self.shared.config.vprocs
    }

    /// The state the vprocs share (`crate::pe` attaches a PE to it).
    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Registers a mixed-object descriptor.
    pub fn register(&self, d: Descriptor) -> Result<DescId> {
        Ok(self.shared.descs.register(d)?)
    }

    /// Runs `f` on vproc `vproc` and waits for its result. A panic in `f`
    /// is returned as [`ErrorKind::TaskPanicked`]; the vproc carries on.
    pub fn run_on<R, F>(&self, vproc: usize, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: for<'s> FnOnce(&mut Scope<'s>) -> R + Send + 'static,
    {
        not_from_a_vproc("Runtime::run_on")?;
        if vproc >= self.vprocs() {
            return Err(Error::misuse(format!(
                "vproc {vproc} does not exist (the runtime has {})",
                self.vprocs()
            )));
        }
        let (tx, rx) = mpsc::channel();
        self.shared.coord.submit(vproc, job(f, tx));
        rx.recv().unwrap_or_else(|_| {
            Err(Error::from(ErrorKind::TaskPanicked {
                vproc,
                message: "vproc thread exited".into(),
            }))
        })
    }

    /// Runs `f` on every vproc at once and returns the results in vproc
    /// order. The first error (a panic) is returned after all have finished.
    pub fn run_each<R, F>(&self, f: F) -> Result<Vec<R>>
    where
        R: Send + 'static,
        F: for<'s> Fn(&mut Scope<'s>) -> R + Send + Sync + 'static,
    {
        not_from_a_vproc("Runtime::run_each")?;
        let f = Arc::new(f);
        let rxs: Vec<_> = (0..self.vprocs())
            .map(|v| {
                let (tx, rx) = mpsc::channel();
                let f = f.clone();
                self.shared
                    .coord
                    .submit(v, job(move |s: &mut Scope<'_>| f(s), tx));
                rx
            })
            .collect();
        let results: Vec<Result<R>> = rxs
            .into_iter()
            .enumerate()
            .map(|(v, rx)| {
                rx.recv().unwrap_or_else(|_| {
                    Err(Error::from(ErrorKind::TaskPanicked {
                        vproc: v,
                        message: "vproc thread exited".into(),
                    }))
                })
            })
            .collect();
        results.into_iter().collect()
    }

    /// Statistics per vproc and in total, as of the last finished job or
    /// global collection of each vproc.
    pub fn stats(&self) -> StatsReport {
        let vprocs: Vec<VprocStats> = self.shared.stats.iter().map(|m| lock(m).clone()).collect();
        let heap = &self.shared.heap;
        let gc = &self.shared.shared_heap;
        StatsReport::new(
            vprocs,
            HeapReport {
                global_bytes_per_node: heap.bytes_per_node(),
                large_object_bytes: heap.large_bytes() as u64,
                global_gc_trigger: heap.trigger() as u64,
                max_heap: self.shared.config.max_heap as u64,
                peak_global_bytes: heap.peak() as u64,
                minor_heap_bytes: gc.minor_bytes.load(std::sync::atomic::Ordering::Relaxed) as u64,
                peak_minor_heap_bytes: gc.minor_peak.load(std::sync::atomic::Ordering::Relaxed)
                    as u64,
                bindings: heap.binding_counts(),
            },
        )
    }

    /// Moves out the timeline recorded so far (with the `trace` setting
    /// on; empty otherwise): every vproc's spans, ordered by start time, and
    /// the number of spans dropped because a vproc reached
    /// [`trace::MAX_EVENTS`](crate::trace::MAX_EVENTS). Spans published after
    /// the call are returned by the next one.
    /// The instant the spans' times count from (`Span::start_ns`): the
    /// runtime's start. Runtimes of one process (the PEs of a group) put
    /// their timelines side by side by the differences of their epochs.
    pub fn trace_epoch(&self) -> std::time::Instant {
        self.shared.epoch
    }

    pub fn take_trace(&self) -> (Vec<crate::trace::Span>, u64) {
        let mut spans = Vec::new();
        let mut dropped = 0;
        for t in self.shared.traces.iter() {
            let mut t = lock(t);
            spans.append(&mut t.0);
            dropped += std::mem::take(&mut t.1);
        }
        spans.sort_by_key(|s| (s.start_ns, std::cmp::Reverse(s.dur_ns)));
        (spans, dropped)
    }

    /// Bytes of global chunks and large objects in use.
    pub fn global_heap_bytes(&self) -> usize {
        self.shared.heap.in_use()
    }

    /// Global heap bytes per topology node.
    pub fn global_heap_bytes_per_node(&self) -> Vec<u64> {
        self.shared.heap.bytes_per_node()
    }

    /// Free chunks pooled on `node`.
    pub fn pooled_chunks(&self, node: usize) -> usize {
        self.shared.heap.pooled_chunks(node)
    }

    /// Number of global collections completed.
    pub fn global_collections(&self) -> u64 {
        self.shared.coord.collections()
    }

    /// Number of global collections called off before anything was moved
    /// (a vproc missed the `safepoint-timeout` deadline, or the system
    /// refused their to-space).
    pub fn abandoned_global_collections(&self) -> u64 {
        self.shared.coord.collections_abandoned()
    }

    /// Number of those that were full (every chunk evacuated).
    pub fn full_global_collections(&self) -> u64 {
        crate::plan::full_global_collections(&self.shared)
    }

    /// Recent placement decisions (`mbind` requests and their outcomes).
    pub fn binding_log(&self) -> Vec<BindRecord> {
        self.shared.heap.binding_log()
    }

    /// A new synchronous channel (see [`Scope::spawn`] and [`crate::Next`]).
    pub fn channel(&self) -> crate::Channel {
        crate::Channel::new(&self.shared)
    }

    /// The errors of threads that failed since the last call (at most 64
    /// are kept; `stats().total.threads_failed` counts them all).
    pub fn take_thread_errors(&self) -> Vec<Error> {
        std::mem::take(&mut *lock(&self.shared.thread_errors))
    }

    /// Number of registered global roots.
    pub fn global_roots(&self) -> usize {
        self.shared.global_roots.len()
    }

    pub fn info(&self) -> RuntimeInfo {
        let config = &self.shared.config;
        let mut warnings = config.notes.clone();
        warnings.extend(cpu_warnings(
            &self.shared.heap.topology,
            &self.shared.placements,
            config.pin,
        ));
        RuntimeInfo {
            warnings,
            config: self.shared.config.clone(),
            topology: self.shared.heap.topology.clone(),
            placements: self.shared.placements.clone(),
            pins: lock(&self.shared.pins).clone(),
            bindings: self.shared.heap.binding_counts(),
            binding_log: self
                .shared
                .heap
                .binding_log()
                .into_iter()
                .take(64)
                .collect(),
        }
    }
}

/// The plan the unit tests run on: `NUMAGC_TEST_PLAN` (`split` when
/// unset), so that `scripts/test.sh` runs them on every plan.
#[cfg(all(test, not(loom)))]
pub(crate) fn test_plan() -> crate::PlanKind {
    match std::env::var("NUMAGC_TEST_PLAN") {
        Ok(p) => p.parse().expect("NUMAGC_TEST_PLAN names a plan"),
        Err(_) => crate::PlanKind::SplitHeap,
    }
}

/// A small runtime for the crate's unit tests: 256 KiB local heaps, 64 KiB
/// chunks, no pinning.
#[cfg(all(test, not(loom)))]
pub(crate) fn small_test_runtime(
    vprocs: usize,
    verify: bool,
    global_gc_threshold: usize,
) -> Runtime {
    small_test_runtime_on(test_plan(), vprocs, verify, global_gc_threshold)
}

/// [`small_test_runtime`] on `plan` (for tests of one plan's internals).
#[cfg(all(test, not(loom)))]
pub(crate) fn small_test_runtime_on(
    plan: crate::PlanKind,
    vprocs: usize,
    verify: bool,
    global_gc_threshold: usize,
) -> Runtime {
    let cfg = small_test_config(plan, vprocs, verify, global_gc_threshold)
        .build()
        .expect("the test configuration is valid");
    Runtime::new(cfg).expect("the test runtime starts")
}

/// The settings of [`small_test_runtime_on`] (a heap limit of 512 MiB),
/// for tests that change one of them.
#[cfg(all(test, not(loom)))]
pub(crate) fn small_test_config(
    plan: crate::PlanKind,
    vprocs: usize,
    verify: bool,
    global_gc_threshold: usize,
) -> crate::config::ConfigBuilder {
    Config::builder()
        .plan(plan)
        .vprocs(vprocs)
        .pin(false)
        .verify(verify)
        .local_heap_size(256 << 10)
        .chunk_size(64 << 10)
        .global_gc_threshold(global_gc_threshold)
        .max_heap(512 << 20)
}

fn job<R, F>(f: F, tx: mpsc::Sender<Result<R>>) -> Job
where
    R: Send + 'static,
    F: for<'s> FnOnce(&mut Scope<'s>) -> R + Send + 'static,
{
    Box::new(move |vp: &mut Vproc| {
        let id = vp.id;
        let t0 = vp.tracer.start();
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut s = Scope::root(vp);
            let r = f(&mut s);
            // Finalisers due run here, before the job's result is returned
            // (`crate::weak`).
            s.run_finalisers();
            r
        }));
        vp.roots.clear();
        vp.tracer.end(crate::trace::SpanKind::Job, t0);
        vp.publish_stats();
        let _ = tx.send(r.map_err(|p| panic_error(id, p)));
    })
}

/// Queues `f` on vproc `vproc` without waiting for it (`crate::pe`'s
/// service thread hands imported tasks to the vprocs so); what it returns,
/// a panic included, is dropped.
pub(crate) fn submit_detached<F>(shared: &Shared, vproc: usize, f: F)
where
    F: for<'s> FnOnce(&mut Scope<'s>) + Send + 'static,
{
    let (tx, _) = mpsc::channel();
    shared.coord.submit(vproc, job(f, tx));
}

fn vproc_loop(vp: &mut Vproc) {
    crate::sched::idle_loop(vp, |vp, j| j(vp));
}

impl Drop for Runtime {
    /// Stops the vprocs once their queued jobs are done. The threads of the
    /// language still waiting (ready or blocked on a channel) are dropped by
    /// the last vproc thread to exit (`Shared::vproc_exited`): when the
    /// last handle is dropped inside a job, that job's vproc goes on running
    /// it, and may still spawn or wake threads, after this returns.
    fn drop(&mut self) {
        self.shared.coord.shutdown();
        let me = std::thread::current().id();
        for t in self.threads.drain(..) {
            // The last handle may be dropped inside a job: that vproc's
            // thread exits by itself once the job returns.
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// A frame of 4 KiB, `depth` deep: about 8 MiB at depth 2000, past
    /// the 2 MiB that threads get when no stack size is given.
    #[inline(never)]
    fn deep(depth: usize) -> u64 {
        let mut frame = [0u8; 4096];
        frame[depth % 4096] = depth as u8;
        let frame = std::hint::black_box(frame);
        if depth == 0 {
            return frame[0] as u64;
        }
        let below = deep(depth - 1);
        std::hint::black_box(below + frame[depth % 4096] as u64)
    }

    /// The stack size the calling thread was started with.
    fn own_stack_size() -> usize {
        // SAFETY: `attr` is initialised by pthread_getattr_np before it is
        // read, and destroyed once; the calls only query the calling thread.
        unsafe {
            let mut attr: libc::pthread_attr_t = std::mem::zeroed();
            assert_eq!(libc::pthread_getattr_np(libc::pthread_self(), &mut attr), 0);
            let mut size = 0;
            assert_eq!(libc::pthread_attr_getstacksize(&attr, &mut size), 0);
            libc::pthread_attr_destroy(&mut attr);
            size
        }
    }

    /// Issue 16: vproc threads get `vproc-stack` bytes of stack (256 MiB
    /// by default), so a deep recursion inside a job does not overflow the
    /// 2 MiB a thread gets by default.
    #[test]
    fn a_deep_recursion_runs_on_a_vproc_with_the_default_stack() {
        let rt = small_test_runtime(1, false, 1 << 20);
        assert_eq!(rt.config().vproc_stack, crate::config::DEFAULT_VPROC_STACK);
        let sum = rt.run_on(0, |_| deep(2000)).unwrap();
        let expected: u64 = (0..=2000u64).map(|d| d % 256).sum();
        assert_eq!(sum, expected);
        let size = rt.run_on(0, |_| own_stack_size()).unwrap();
        assert!(size >= crate::config::DEFAULT_VPROC_STACK, "{size}");
    }

    #[test]
    fn vproc_stack_is_the_size_of_each_vproc_thread_stack() {
        let cfg = Config::builder()
            .vprocs(2)
            .pin(false)
            .local_heap_size(256 << 10)
            .chunk_size(64 << 10)
            .global_gc_threshold(1 << 20)
            .max_heap(64 << 20)
            .vproc_stack(3 << 20)
            .build()
            .unwrap();
        let rt = Runtime::new(cfg).unwrap();
        for size in rt.run_each(|_| own_stack_size()).unwrap() {
            assert!((3 << 20..4 << 20).contains(&size), "{size}");
        }
    }
}
