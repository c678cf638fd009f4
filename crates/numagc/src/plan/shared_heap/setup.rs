//! Building the shared plan for a runtime: one address-space reservation,
//! a minor heap per vproc carved from it on the vproc's node (bound by the
//! `numa-policy` like the split plan's local heaps), and the size classes
//! and page size of the pools.
//!
//! Settings: `local-heap` is each vproc's minor heap (OCaml's
//! `minor_heap_size`) at start, `max-minor-heap` the largest it may grow
//! to (`minor_size`; its address space is reserved here), `heap-growth`
//! the pacing of major cycles (OCaml's `space_overhead` is
//! `100 × (growth − 1)`), `large-object` the smallest
//! object of the large-object space, `max-heap` the limit of the major
//! heap plus the minor heaps.

use super::minor_size::MinorSizer;
use super::pages::Pools;
use super::size_class::SizeClasses;
use super::state::{Mutator, SharedHeapGc};
use crate::config::Config;
use crate::error::Result;
use crate::heap::global::GlobalHeap;
use crate::topology::{Topology, VprocPlacement};
use crate::vproc::Shared;
use std::sync::atomic::Ordering;

/// Smallest pool page.
const MIN_PAGE: usize = 64 << 10;

/// What a runtime on the shared plan starts with.
pub(crate) struct Parts {
    pub heap: GlobalHeap,
    pub gc: SharedHeapGc,
    /// Per vproc, in placement order.
    pub mutators: Vec<Mutator>,
}

/// The page size for `config`: a power of two holding at least four of
/// the largest pooled objects, at least 64 KiB, at most a chunk.
pub(crate) fn page_bytes(config: &Config) -> usize {
    (4 * config.large_object_size)
        .next_power_of_two()
        .max(MIN_PAGE)
        .min(config.chunk_size)
}

pub(crate) fn create(
    config: &Config,
    topology: &Topology,
    placements: &[VprocPlacement],
    faults: crate::fault::Hook,
) -> Result<Parts> {
    let n = placements.len();
    let cs = config.chunk_size;
    let minor_rounded = config.max_minor_heap_size.div_ceil(cs) * cs;
    let minors = n * minor_rounded;
    // The minor heaps count against `max-heap` at their starting size;
    // their growth is charged to the budget as it happens (`minor_size`).
    let limit = config
        .max_heap
        .saturating_sub(n * config.local_heap_size)
        .max(cs);
    let page = page_bytes(config);
    // Objects below `large-object` bytes are allocated in the minor heap
    // and promoted into pools: the largest class holds them.
    let max_words = (config.large_object_size / 8 - 1).min(page / 4 / 8);
    let classes = SizeClasses::new(max_words);
    // A minor collection may copy past the limit (it cannot stop half-way),
    // by at most every minor heap plus a partly used page per class per
    // vproc; address space is only reserved, so be generous.
    let spare = n * (classes.count() + 2) * page;
    let reserve = 2 * limit + 3 * minors + 2 * spare + 64 * cs;
    let heap = GlobalHeap::reserve(config, topology, n, limit, reserve, faults)?;
    // The minor heaps are one run, in placement order: "is this value in
    // a minor heap" is then one range check (`SharedHeapGc::is_minor`).
    let owners: Vec<(usize, usize)> = placements.iter().map(|p| (p.vproc, p.node)).collect();
    let start = heap
        .carve_locals(config.max_minor_heap_size, &owners)
        .map_err(|m| m.error("the minor heaps"))?;
    let mutators = (0..n)
        .map(|i| {
            Mutator::new(
                start + i * minor_rounded,
                config.local_heap_size,
                Pools::new(page, cs, classes.count()),
            )
        })
        .collect();
    let mut gc = SharedHeapGc::new(n, classes, page, (max_words + 1) * 8, heap.base_trigger());
    gc.minor_heaps = start..start + minors;
    gc.minor_sizer = crate::sync::Mutex::new(MinorSizer::new(
        config.local_heap_size,
        config.max_minor_heap_size,
    ));
    gc.minor_bytes
        .store(config.local_heap_size, Ordering::Relaxed);
    gc.minor_peak
        .store(config.local_heap_size, Ordering::Relaxed);
    gc.min_cycle_bytes = heap.base_trigger().max(page);
    gc.cycle_floor.store(gc.min_cycle_bytes, Ordering::Relaxed);
    Ok(Parts { heap, gc, mutators })
}

/// Free chunks each node's pool must hold before a minor collection moves
/// anything: room for every byte of every minor heap in the worst slot
/// fit (a slot wastes under a fifth of it; colour bytes an eighth of a
/// page at most), plus a partly filled page per class per vproc, plus a
/// chunk per vproc whose pages are split among classes.
pub(crate) fn to_space_chunks(shared: &Shared) -> Vec<usize> {
    let gc = &shared.shared_heap;
    let heap = &shared.heap;
    let cs = heap.chunk_size();
    let mut need = vec![0usize; heap.topology.num_nodes()];
    for p in &shared.placements {
        let used = gc.minor_used[p.vproc].load(Ordering::Relaxed);
        let bytes = used * 3 / 2 + (gc.classes.count() + 1) * gc.page_bytes;
        need[p.node] += bytes.div_ceil(cs) + 1;
    }
    need
}
