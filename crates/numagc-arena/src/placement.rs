//! NUMA placement of local heaps and large chunks: on the node of the thread
//! that owns them, with the same [`Topology`] and policies (`local`,
//! `interleave`, `node0`) as the rest of numagc (`numagc::topology`,
//! `numagc::numa::{request_for, apply}`).
//!
//! Settings are read once, with `getenv` (which does not allocate):
//! `NUMAGC_TOPOLOGY` (`NxM` or unset for the machine's), `NUMAGC_NUMA_POLICY`
//! (default `local`), and `NUMAGC_ARENA_NUMA=off` to bind nothing.
//!
//! The recursion problem and its solution: detecting the topology reads
//! `/sys` and builds `Vec`s and `String`s, and `numa::apply` builds a node
//! mask; when this crate is the process's allocator those allocations come
//! back into it, in the middle of a slow path. Every such call runs inside
//! `bootstrap::guarded`, which makes the calling thread's own
//! allocations and frees go to the bootstrap area, a small separate
//! allocator on raw `mmap` that needs neither topology nor a thread heap.
//! The topology is detected once, by the first thread that needs it; others
//! that need it meanwhile wait (detection never waits for another thread).
//! The thread's node is looked up by `sched_getcpu` when it takes a thread
//! heap, so a thread should be pinned before it first allocates (numagc's
//! vprocs are) for the placement to stay right.

use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

use numagc::numa::{self, BindOutcome};
use numagc::{NumaPolicy, Topology};

use crate::bootstrap;
use crate::os;

struct Placement {
    topology: Topology,
    /// Topology node of each OS CPU (index: OS CPU id).
    cpu_node: Vec<u32>,
    /// `None` when placement is switched off.
    policy: Option<NumaPolicy>,
}

const UNKNOWN: u8 = 0;
const DETECTING: u8 = 1;
const READY: u8 = 2;

static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);
static PLACEMENT: AtomicPtr<Placement> = AtomicPtr::new(core::ptr::null_mut());
static APPLIED: AtomicUsize = AtomicUsize::new(0);
static SKIPPED: AtomicUsize = AtomicUsize::new(0);
static FAILED: AtomicUsize = AtomicUsize::new(0);

fn env(name: &core::ffi::CStr) -> Option<&'static str> {
    // SAFETY: getenv reads the environment; the returned string lives as long
    // as the environment entry, which this process does not change.
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is a NUL-terminated string (see above).
    unsafe { core::ffi::CStr::from_ptr(p) }.to_str().ok()
}

fn detect() -> Placement {
    let policy = if env(c"NUMAGC_ARENA_NUMA") == Some("off") {
        None
    } else {
        Some(match env(c"NUMAGC_NUMA_POLICY") {
            None | Some("local") => NumaPolicy::Local,
            Some("interleave") => NumaPolicy::Interleave,
            Some("node0") => NumaPolicy::Node0,
            Some(other) => {
                os::write_stderr(format_args!(
                    "numagc-arena: NUMAGC_NUMA_POLICY={other:?} is not local, interleave or node0; using local"
                ));
                NumaPolicy::Local
            }
        })
    };
    let topology = match env(c"NUMAGC_TOPOLOGY") {
        Some(spec) if spec != "detect" => Topology::synthetic(spec).unwrap_or_else(|e| {
            os::write_stderr(format_args!(
                "numagc-arena: NUMAGC_TOPOLOGY: {e}; using the machine's"
            ));
            Topology::detect()
        }),
        _ => Topology::detect(),
    };
    let max_cpu = topology
        .nodes
        .iter()
        .flat_map(|n| n.cpus.iter().copied())
        .max()
        .unwrap_or(0);
    let mut cpu_node = vec![0u32; max_cpu + 1];
    // A synthetic topology may map several nodes onto one real CPU; the
    // first node listed for a CPU keeps it.
    for node in topology.nodes.iter().rev() {
        for &cpu in &node.cpus {
            cpu_node[cpu] = node.id as u32;
        }
    }
    Placement {
        topology,
        cpu_node,
        policy,
    }
}

fn get() -> &'static Placement {
    loop {
        match STATE.load(Ordering::Acquire) {
            READY => {
                // SAFETY: READY is stored (release) after PLACEMENT holds a
                // leaked, never-freed Placement.
                return unsafe { &*PLACEMENT.load(Ordering::Acquire) };
            }
            UNKNOWN
                if STATE
                    .compare_exchange(UNKNOWN, DETECTING, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok() =>
            {
                let p = bootstrap::guarded(|| Box::into_raw(Box::new(detect())));
                PLACEMENT.store(p, Ordering::Release);
                STATE.store(READY, Ordering::Release);
            }
            _ => std::thread::yield_now(),
        }
    }
}

/// `fork` prepare handler: lets a detection under way finish first, so that
/// the child does not inherit a detection no thread of it will finish.
pub(crate) fn fork_prepare() {
    while STATE.load(Ordering::Acquire) == DETECTING {
        std::thread::yield_now();
    }
}

/// `fork` child handler: a detection started after [`fork_prepare`] looked
/// belongs to a thread the child does not have; the child detects again.
pub(crate) fn fork_child() {
    if STATE.load(Ordering::Acquire) == DETECTING {
        STATE.store(UNKNOWN, Ordering::Release);
    }
}

/// The topology node of the CPU the calling thread runs on.
pub(crate) fn current_node() -> u32 {
    let p = get();
    os::current_cpu()
        .and_then(|cpu| p.cpu_node.get(cpu).copied())
        .unwrap_or(0)
}

/// Whether placement is on (it is unless `NUMAGC_ARENA_NUMA=off`).
pub(crate) fn enabled() -> bool {
    get().policy.is_some()
}

/// Sets the placement of `len` fresh bytes at `base` for a thread on `node`.
pub(crate) fn bind(base: *mut u8, len: usize, node: u32) {
    let p = get();
    let Some(policy) = p.policy else { return };
    let outcome = bootstrap::guarded(|| {
        let req = numa::request_for(policy, node as usize, &p.topology);
        match numa::apply(&req, &p.topology, base, len) {
            BindOutcome::Applied { .. } => &APPLIED,
            BindOutcome::Skipped { .. } => &SKIPPED,
            BindOutcome::Failed { .. } => &FAILED,
        }
    });
    outcome.fetch_add(1, Ordering::Relaxed);
}

/// How many bindings of local heaps and large chunks the kernel applied,
/// were skipped (no such node here) and failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlacementCounts {
    pub applied: usize,
    pub skipped: usize,
    pub failed: usize,
}

pub fn counts() -> PlacementCounts {
    PlacementCounts {
        applied: APPLIED.load(Ordering::Relaxed),
        skipped: SKIPPED.load(Ordering::Relaxed),
        failed: FAILED.load(Ordering::Relaxed),
    }
}

/// A description of the topology and policy in use (for reports).
pub fn describe() -> String {
    let p = get();
    format!(
        "{} node(s), policy {}",
        p.topology.num_nodes(),
        p.policy.map_or("off", |pol| pol.name())
    )
}
