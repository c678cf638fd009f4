//! The global heap (§3.1): chunks with node affinity, placement policies
//! (§4.3), the large-object space, and the size accounting that triggers
//! global collections (§3.4).
//!
//! * A vproc takes a chunk from its node's [`ChunkPool`] (node-local lock);
//!   only when that is empty is new address space carved (global lock) and
//!   bound to a node with `mbind`, following the placement policy: `local`
//!   binds to the requesting vproc's node, `interleave` spreads pages over all
//!   nodes, `node0` binds everything to node 0. A chunk keeps the node it was
//!   bound to for its whole life, so reuse keeps affinity.
//! * Objects of at least `large_object_size` bytes get a run of chunks of
//!   their own in the large-object space. They never move: a global
//!   collection marks them and frees unmarked runs. A freed run is kept,
//!   its pages still committed, for the next large object of its length
//!   and node, up to `WARM_LARGE_BYTES` in all (the oldest given back
//!   first): a program that allocates and drops large objects of one size
//!   (a PE's fetch of a megabyte, `numagc micro fetch`) would otherwise
//!   fault every page of each one in again. A compaction gives them all
//!   back, as it gives the chunk pools' chunks ([`GlobalHeap::trim_pools`]).
//! * `in_use` counts bytes of global chunks and large runs. A global
//!   collection is due when it exceeds the trigger, which starts at
//!   vprocs × `global_gc_threshold` (the paper's footnote 2) and afterwards is
//!   `max(that, live × heap_growth)` — the paper's fixed threshold would
//!   re-copy a large live heap every 32 MiB per vproc, so we grow it with the
//!   live data, as generational collectors do (measured in docs/results).
//! * The heap limit refuses mutator requests that would take `in_use` above
//!   `max_heap` minus the local heaps, checked and charged in one atomic
//!   step ([`HeapBudget`](crate::heap::budget::HeapBudget)). Collector-internal requests (`force`)
//!   may go over it: a copying collection cannot stop half-way, and the
//!   reservation is sized well above the limit so they find room.
//! * Memory the system refuses (a run that cannot be carved, see
//!   `heap::space`) is [`Refused::Map`]. A copy must never meet it half-way,
//!   so copies obtain their to-space before they move anything: a global
//!   collection has [`GlobalHeap::ensure_pooled`] fill the pools with what
//!   its from-space could need, and falls back to other nodes' pools when
//!   its own node's is empty (`force`); a vproc's local copies (major
//!   collection, promotion) draw on its copy reserve ([`GlobalHeap::spare_chunk`],
//!   `plan::split`). Free chunks set aside this way are not counted in
//!   `in_use` until they are used.

use crate::config::NumaPolicy;
use crate::heap::budget::{HeapBudget, OverLimit};
use crate::heap::chunk_pool::ChunkPool;
use crate::heap::space::{AddressSpace, ChunkInfo, ChunkKind, MapFailure};
use crate::numa::{self, BindOutcome, BindRequest, BindingCounts};
use crate::sync::{lock, Mutex};
use crate::topology::Topology;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Records kept of recent `mbind` requests (for `numagc info` and the tests).
const BIND_LOG_CAPACITY: usize = 4096;

/// One placement decision: which chunk run, what was asked, what happened.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BindRecord {
    pub chunk: usize,
    pub chunks: usize,
    pub node: usize,
    pub request: BindRequest,
    pub outcome: BindOutcome,
}

#[derive(Default)]
struct BindLog {
    counts: BindingCounts,
    recent: VecDeque<BindRecord>,
}

/// Why a request for global memory was refused.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Refused {
    /// The heap limit (mutator requests only).
    OverLimit(OverLimit),
    /// The system refused the memory.
    Map(MapFailure),
}

impl Refused {
    /// The error for the mutator that asked for `requested` bytes of `what`.
    pub fn error(self, requested: usize, what: &'static str) -> crate::Error {
        match self {
            Refused::OverLimit(o) => crate::Error::from(crate::ErrorKind::HeapLimit {
                requested,
                in_use: o.in_use,
                limit: o.limit,
            }),
            Refused::Map(m) => m.error(what),
        }
    }
}

pub(crate) struct GlobalHeap {
    pub space: AddressSpace,
    pool: ChunkPool,
    pub topology: Topology,
    policy: NumaPolicy,
    budget: HeapBudget,
    trigger: AtomicUsize,
    base_trigger: usize,
    growth: f64,
    per_node: Box<[AtomicUsize]>,
    large: Mutex<Vec<usize>>,
    large_bytes: AtomicUsize,
    /// Freed large runs kept for reuse, oldest first: (first chunk,
    /// chunks, node).
    warm_large: Mutex<std::collections::VecDeque<(usize, usize, usize)>>,
    bindings: Mutex<BindLog>,
}

/// The most bytes of freed large runs kept committed for reuse (see the
/// module doc): a few large objects' worth, little beside a heap that
/// allocates them.
const WARM_LARGE_BYTES: usize = 16 << 20;

impl GlobalHeap {
    pub fn new(
        space: AddressSpace,
        topology: Topology,
        policy: NumaPolicy,
        limit: usize,
        base_trigger: usize,
        growth: f64,
    ) -> GlobalHeap {
        let nodes = topology.num_nodes();
        GlobalHeap {
            space,
            pool: ChunkPool::new(nodes),
            topology,
            policy,
            budget: HeapBudget::new(limit),
            trigger: AtomicUsize::new(base_trigger),
            base_trigger,
            growth,
            per_node: (0..nodes).map(|_| AtomicUsize::new(0)).collect(),
            large: Mutex::new(Vec::new()),
            large_bytes: AtomicUsize::new(0),
            warm_large: Mutex::new(std::collections::VecDeque::new()),
            bindings: Mutex::new(BindLog::default()),
        }
    }

    /// Reserves `reserve` bytes of address space (nothing committed) for a
    /// heap of `config` whose mutator requests stop at `limit` bytes, and
    /// builds it: what every plan's setup starts with. Fails with
    /// `ErrorKind::MapFailed` when the system refuses the reservation.
    pub fn reserve(
        config: &crate::config::Config,
        topology: &Topology,
        vprocs: usize,
        limit: usize,
        reserve: usize,
        faults: crate::fault::Hook,
    ) -> crate::error::Result<GlobalHeap> {
        let space = AddressSpace::reserve(reserve, config.chunk_size, faults)
            .map_err(|m| m.error("the heap's address-space reservation"))?;
        Ok(GlobalHeap::new(
            space,
            topology.clone(),
            config.numa_policy,
            limit,
            vprocs.saturating_mul(config.global_gc_threshold),
            config.heap_growth,
        ))
    }

    #[inline(always)]
    pub fn chunk_size(&self) -> usize {
        self.space.chunk_size()
    }

    /// The node whose pool serves a vproc on `node` under the policy.
    fn home_node(&self, node: usize) -> usize {
        match self.policy {
            NumaPolicy::Node0 => 0,
            NumaPolicy::Local | NumaPolicy::Interleave => node,
        }
    }

    fn bind(&self, start: usize, chunks: usize, node: usize) {
        let req = numa::request_for(self.policy, node, &self.topology);
        let addr = self.space.chunk_start(start) as *mut u8;
        let outcome = numa::apply(&req, &self.topology, addr, chunks * self.chunk_size());
        let mut log = lock(&self.bindings);
        log.counts.record(&outcome);
        if log.recent.len() == BIND_LOG_CAPACITY {
            log.recent.pop_front();
        }
        log.recent.push_back(BindRecord {
            chunk: start,
            chunks,
            node,
            request: req,
            outcome,
        });
    }

    /// Counts `bytes` charged to the budget on `node`.
    fn account_node(&self, bytes: usize, node: usize) {
        self.per_node[node].fetch_add(bytes, Ordering::Relaxed);
    }

    /// A free chunk with `home`'s placement: from the node's pool, else new
    /// address space bound to it. Not counted in `in_use`.
    fn free_chunk(&self, home: usize) -> Result<usize, MapFailure> {
        if let Some(id) = self.pool.take(home) {
            return Ok(id as usize);
        }
        let id = self.space.carve(1)?;
        self.bind(id, 1, home);
        self.space
            .info(id)
            .node
            .store(home as u32, Ordering::Relaxed);
        Ok(id)
    }

    /// Makes the free chunk `id` a global chunk in use (of age 0, on the
    /// node it is bound to).
    fn adopt(&self, id: usize) -> usize {
        let info = self.space.info(id);
        info.top
            .store(self.space.chunk_start(id), Ordering::Relaxed);
        info.age.store(0, Ordering::Relaxed);
        info.set_kind(ChunkKind::Global);
        self.account_node(
            self.chunk_size(),
            info.node.load(Ordering::Relaxed) as usize,
        );
        id
    }

    /// Takes a chunk for a vproc on `node`; `force` for collector copies,
    /// which ignore the limit and, if the system refuses a new chunk, take
    /// one from another node's pool (see [`GlobalHeap::ensure_pooled`]).
    pub fn acquire_chunk(&self, node: usize, force: bool) -> Result<usize, Refused> {
        let cs = self.chunk_size();
        self.budget.charge(cs, force).map_err(Refused::OverLimit)?;
        let id = match self.free_chunk(self.home_node(node)) {
            Ok(id) => Ok(id),
            Err(e) if force => self
                .pool
                .take_any()
                .map(|id| id as usize)
                .ok_or(Refused::Map(e)),
            Err(e) => Err(Refused::Map(e)),
        };
        match id {
            Ok(id) => Ok(self.adopt(id)),
            Err(e) => {
                self.budget.uncharge(cs);
                Err(e)
            }
        }
    }

    /// A free chunk for the copy reserve of a vproc on `node` (not counted
    /// in `in_use` until [`GlobalHeap::adopt_spare`]).
    pub fn spare_chunk(&self, node: usize) -> Result<usize, MapFailure> {
        self.free_chunk(self.home_node(node))
    }

    /// `n` free chunks for a new vproc's copy reserve: one run bound once
    /// when the address space has it, else chunk by chunk.
    pub fn spare_chunks(&self, node: usize, n: usize) -> Result<Vec<usize>, MapFailure> {
        let home = self.home_node(node);
        if let Ok(start) = self.space.carve(n) {
            self.bind(start, n, home);
            for id in start..start + n {
                self.space
                    .info(id)
                    .node
                    .store(home as u32, Ordering::Relaxed);
            }
            return Ok((start..start + n).collect());
        }
        (0..n).map(|_| self.free_chunk(home)).collect()
    }

    /// Puts a chunk of a copy reserve into use.
    pub fn adopt_spare(&self, id: usize) -> usize {
        let charged = self.budget.charge(self.chunk_size(), true);
        debug_assert!(charged.is_ok(), "a forced charge is never refused");
        self.adopt(id)
    }

    /// Makes sure the pools hold at least `need[k]` free chunks in all,
    /// carving what node `k`'s pool lacks of `need[k]` on node `k` (the
    /// copies of a vproc take to-space from its own node first): a global
    /// collection calls it before it moves anything, so that its copies
    /// cannot run out. When the system refuses a chunk, carving stops, and
    /// the pools of all nodes together must hold the total (a copier whose
    /// node's pool runs dry takes from another, see `acquire_chunk`); if they
    /// do not, the refusal is returned. The chunks carved stay pooled either
    /// way. Call only while no one else takes chunks (all vprocs stopped).
    pub fn ensure_pooled(&self, need: &[usize]) -> Result<(), MapFailure> {
        // Under `node0` every node's chunks come from node 0's pool.
        let mut want = vec![0; need.len()];
        for (node, &n) in need.iter().enumerate() {
            want[self.home_node(node)] += n;
        }
        let mut refused = None;
        'nodes: for (home, &want) in want.iter().enumerate() {
            let mut short = want.saturating_sub(self.pool.len(home));
            while short > 0 {
                // One run (one `mbind`) when the address space has it,
                // else chunk by chunk.
                let run = match self.space.carve(short) {
                    Ok(start) => (start, short),
                    Err(_) if short > 1 => match self.space.carve(1) {
                        Ok(start) => (start, 1),
                        Err(e) => {
                            refused = Some(e);
                            break 'nodes;
                        }
                    },
                    Err(e) => {
                        refused = Some(e);
                        break 'nodes;
                    }
                };
                self.bind(run.0, run.1, home);
                for id in run.0..run.0 + run.1 {
                    self.space
                        .info(id)
                        .node
                        .store(home as u32, Ordering::Relaxed);
                    self.pool.put(home, id as u32);
                }
                short -= run.1;
            }
        }
        let pooled: usize = (0..self.topology.num_nodes())
            .map(|n| self.pool.len(n))
            .sum();
        match refused {
            Some(e) if pooled < need.iter().sum::<usize>() => Err(e),
            _ => Ok(()),
        }
    }

    /// Returns a global chunk to its node's pool.
    pub fn release_chunk(&self, id: usize) {
        let info = self.space.info(id);
        let node = info.node.load(Ordering::Relaxed) as usize;
        info.set_kind(ChunkKind::Free);
        self.budget.uncharge(self.chunk_size());
        self.per_node[node].fetch_sub(self.chunk_size(), Ordering::Relaxed);
        self.pool.put(node, id as u32);
    }

    /// Gives every chunk in the chunk pools, and every freed large run kept
    /// for reuse, back to the system (a compaction: memory freed is
    /// returned, not kept for reuse). Call only while no one else takes
    /// chunks (all vprocs stopped). Returns the chunks given back.
    pub fn trim_pools(&self) -> usize {
        let mut n = self.trim_warm_large();
        for node in 0..self.topology.num_nodes() {
            while let Some(id) = self.pool.take(node) {
                self.space.release(id as usize, 1);
                n += 1;
            }
        }
        n
    }

    /// Carves the local heaps of `vprocs` (each `(vproc, node)`), `bytes`
    /// each, as one run in that order, each bound by the policy like
    /// [`GlobalHeap::carve_local`]; returns the run's start. One run, so
    /// that a plan can tell a local-heap address by one range check.
    pub fn carve_locals(
        &self,
        bytes: usize,
        vprocs: &[(usize, usize)],
    ) -> Result<usize, MapFailure> {
        let n = bytes.div_ceil(self.chunk_size());
        let start = self.space.carve(n * vprocs.len())?;
        for (i, &(vproc, node)) in vprocs.iter().enumerate() {
            let first = start + i * n;
            self.bind(first, n, self.home_node(node));
            for id in first..first + n {
                let info = self.space.info(id);
                info.owner.store(vproc as u32, Ordering::Relaxed);
                info.node.store(node as u32, Ordering::Relaxed);
                info.set_kind(ChunkKind::Local);
            }
        }
        Ok(self.space.chunk_start(start))
    }

    /// Carves the chunks of a vproc's local heap, bound by the policy.
    pub fn carve_local(
        &self,
        bytes: usize,
        vproc: usize,
        node: usize,
    ) -> Result<usize, MapFailure> {
        self.carve_locals(bytes, &[(vproc, node)])
    }

    /// Allocates a run of chunks for one large object of `bytes` bytes and
    /// returns its address: a freed run of that length and node kept warm,
    /// else a new one. The memory is not zeroed (a warm run holds what its
    /// last object left); the caller writes every word of the object.
    pub fn alloc_large(&self, bytes: usize, node: usize, force: bool) -> Result<usize, Refused> {
        let n = bytes.div_ceil(self.chunk_size());
        let run = n * self.chunk_size();
        self.budget.charge(run, force).map_err(Refused::OverLimit)?;
        let home = self.home_node(node);
        let warm = {
            let mut w = lock(&self.warm_large);
            let at = w.iter().position(|&(_, len, nd)| len == n && nd == home);
            at.and_then(|i| w.remove(i)).map(|(start, _, _)| start)
        };
        let start = match warm {
            Some(start) => start,
            None => match self.space.carve(n) {
                Ok(start) => {
                    self.bind(start, n, home);
                    // The caller writes every word at once: commit the
                    // pages in one call instead of a fault per page.
                    self.space.populate(self.space.chunk_start(start), bytes);
                    start
                }
                Err(e) => {
                    self.budget.uncharge(run);
                    return Err(Refused::Map(e));
                }
            },
        };
        for id in start..start + n {
            let info = self.space.info(id);
            info.node.store(home as u32, Ordering::Relaxed);
            info.mark.store(false, Ordering::Relaxed);
            info.set_kind(if id == start {
                ChunkKind::LargeHead
            } else {
                ChunkKind::LargeTail
            });
        }
        self.space
            .info(start)
            .owner
            .store(n as u32, Ordering::Relaxed);
        lock(&self.large).push(start);
        self.large_bytes.fetch_add(run, Ordering::Relaxed);
        self.account_node(run, home);
        Ok(self.space.chunk_start(start))
    }

    /// Frees every large object that the global collection did not mark and
    /// clears the marks of the others. Runs while all vprocs are stopped.
    pub fn sweep_large(&self) -> usize {
        self.sweep_large_if(|info| !info.mark.swap(false, Ordering::AcqRel))
    }

    /// Frees every large object whose head chunk's metadata `dead` says
    /// is garbage. Runs while all vprocs are stopped.
    pub fn sweep_large_if(&self, mut dead: impl FnMut(&ChunkInfo) -> bool) -> usize {
        let mut large = lock(&self.large);
        let mut freed = 0;
        large.retain(|&head| {
            let info = self.space.info(head);
            if !dead(info) {
                return true;
            }
            let n = info.owner.load(Ordering::Relaxed) as usize;
            let node = info.node.load(Ordering::Relaxed) as usize;
            let run = n * self.chunk_size();
            self.budget.uncharge(run);
            self.per_node[node].fetch_sub(run, Ordering::Relaxed);
            self.large_bytes.fetch_sub(run, Ordering::Relaxed);
            self.keep_warm(head, n, node);
            freed += run;
            false
        });
        freed
    }

    /// Keeps a freed large run for reuse (`alloc_large`), giving back the
    /// oldest runs past `WARM_LARGE_BYTES`. A run larger than that is given
    /// back at once.
    fn keep_warm(&self, head: usize, n: usize, node: usize) {
        if n * self.chunk_size() > WARM_LARGE_BYTES {
            self.space.release(head, n);
            return;
        }
        for id in head..head + n {
            self.space.info(id).set_kind(ChunkKind::Free);
        }
        let mut w = lock(&self.warm_large);
        w.push_back((head, n, node));
        let mut kept: usize = w.iter().map(|&(_, len, _)| len).sum::<usize>() * self.chunk_size();
        while kept > WARM_LARGE_BYTES {
            let (start, len, _) = w.pop_front().expect("runs are kept");
            self.space.release(start, len);
            kept -= len * self.chunk_size();
        }
    }

    /// Gives every freed large run kept for reuse back to the system.
    pub(crate) fn trim_warm_large(&self) -> usize {
        let mut w = lock(&self.warm_large);
        let mut n = 0;
        while let Some((start, len, _)) = w.pop_front() {
            self.space.release(start, len);
            n += len;
        }
        n
    }

    /// Calls `f` with the address of every large object.
    pub fn for_each_large(&self, mut f: impl FnMut(usize)) {
        for &head in lock(&self.large).iter() {
            f(self.space.chunk_start(head));
        }
    }

    /// Charges `bytes` that are not chunks (the growth of the shared
    /// plan's minor heaps) to the budget; `false`, and nothing charged,
    /// when the limit would be passed.
    pub fn charge_other(&self, bytes: usize) -> bool {
        self.budget.charge(bytes, false).is_ok()
    }

    /// Gives back bytes charged by [`GlobalHeap::charge_other`].
    pub fn uncharge_other(&self, bytes: usize) {
        self.budget.uncharge(bytes);
    }

    pub fn in_use(&self) -> usize {
        self.budget.in_use()
    }

    pub fn limit(&self) -> usize {
        self.budget.limit()
    }

    pub fn over_trigger(&self) -> bool {
        self.budget.in_use() > self.trigger.load(Ordering::Relaxed)
    }

    pub fn trigger(&self) -> usize {
        self.trigger.load(Ordering::Relaxed)
    }

    /// The base threshold: vprocs × `global_gc_threshold`.
    pub fn base_trigger(&self) -> usize {
        self.base_trigger
    }

    /// `max(base threshold, live × heap growth)`.
    pub fn grown_limit(&self, live: usize) -> usize {
        ((live as f64 * self.growth) as usize).max(self.base_trigger)
    }

    /// Sets the next trigger after a global collection: `next`, but at
    /// least a chunk above the bytes in use (chunks are counted whole, live
    /// bytes are not), so that a collection is never due right after one.
    pub fn set_trigger(&self, next: usize) {
        let floor = self.in_use() + self.chunk_size();
        self.trigger.store(next.max(floor), Ordering::Relaxed);
    }

    pub fn peak(&self) -> usize {
        self.budget.peak()
    }

    pub fn bytes_per_node(&self) -> Vec<u64> {
        self.per_node
            .iter()
            .map(|a| a.load(Ordering::Relaxed) as u64)
            .collect()
    }

    pub fn large_bytes(&self) -> usize {
        self.large_bytes.load(Ordering::Relaxed)
    }

    pub fn pooled_chunks(&self, node: usize) -> usize {
        self.pool.len(node)
    }

    pub fn binding_counts(&self) -> BindingCounts {
        lock(&self.bindings).counts.clone()
    }

    pub fn binding_log(&self) -> Vec<BindRecord> {
        lock(&self.bindings).recent.iter().cloned().collect()
    }
}
