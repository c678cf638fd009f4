//! Building the split plan for a runtime (§3.1, §3.3): one address-space
//! reservation for the global heap, a local heap and a copy reserve per
//! vproc carved from it on the vproc's node, and the global collection's
//! state.

use super::global::GlobalGc;
use super::mutator::{copy_reserve_chunks, Mutator};
use crate::config::Config;
use crate::error::Result;
use crate::heap::global::GlobalHeap;
use crate::topology::{Topology, VprocPlacement};

/// What a runtime on the split plan starts with.
pub(crate) struct Parts {
    pub heap: GlobalHeap,
    pub gc: GlobalGc,
    /// Per vproc, in placement order.
    pub mutators: Vec<Mutator>,
}

/// Reserves and carves the heap. Fails with `ErrorKind::MapFailed` when the
/// system refuses the memory; nothing is left behind (the reservation is
/// released when `AddressSpace` is dropped).
pub(crate) fn create(
    config: &Config,
    topology: &Topology,
    placements: &[VprocPlacement],
    faults: crate::fault::Hook,
) -> Result<Parts> {
    let n = placements.len();
    let cs = config.chunk_size;
    let local_rounded = config.local_heap_size.div_ceil(cs) * cs;
    let locals = n * local_rounded;
    let limit = config.max_heap.saturating_sub(locals).max(cs);
    // Collector copies may exceed the limit (see heap::global): during a
    // global collection from-space holds up to the limit plus what
    // forced major collections pushed past it (a local heap per vproc),
    // and the to-space set aside for it as much again plus the tail of
    // each chunk that a next object did not fit in (up to a quarter of
    // a chunk) and an open chunk per cursor. Each vproc also keeps a
    // copy reserve. Address space is only reserved, not committed, so
    // be generous.
    let spare = copy_reserve_chunks(config.local_heap_size, cs);
    let reserve = 3 * limit + 3 * locals + (n * (spare + 4) + 64) * cs;
    let heap = GlobalHeap::reserve(config, topology, n, limit, reserve, faults)?;
    let mut mutators = Vec::with_capacity(n);
    for p in placements {
        let base = heap
            .carve_local(config.local_heap_size, p.vproc, p.node)
            .map_err(|m| m.error("a local heap"))?;
        let reserve = heap
            .spare_chunks(p.node, spare)
            .map_err(|m| m.error("the copy reserve of a vproc"))?;
        mutators.push(Mutator::new(config, base, reserve));
    }
    let gc = GlobalGc::new(
        topology.num_nodes(),
        n.saturating_mul(config.global_gc_threshold),
    );
    Ok(Parts { heap, gc, mutators })
}
