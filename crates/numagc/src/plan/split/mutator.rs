//! The split plan's part of a vproc (manticore-numa-gc.md §3.3): its local
//! heap, its current chunk of the global heap, the copy reserve its local
//! copies draw on, and the stores its next young global collection must
//! treat as roots. The plan-neutral part of a vproc (the bump pointer and
//! limit, the root stack, statistics) is `crate::vproc::Vproc`, which holds
//! this as `split`.
//!
//! Invariant: only the vproc that owns it (or its proxy, `gc::blocking`)
//! touches it; the copy reserve holds `copy_reserve_target` chunks whenever
//! a local copy starts (`Vproc::ensure_copy_reserve`).

use super::local_heap::LocalHeap;
use crate::config::Config;
use crate::error::Error;
use crate::heap::cursor::ChunkCursor;
use crate::vproc::Vproc;

/// Chunks a copy reserve holds: enough for a copy of a whole local heap of
/// `local_heap` bytes into chunks of `chunk` bytes, where every object is
/// under a quarter of a chunk, so each chunk is retired more than three
/// quarters full (see `copy`).
pub(crate) fn copy_reserve_chunks(local_heap: usize, chunk: usize) -> usize {
    (4 * local_heap).div_ceil(3 * chunk) + 1
}

pub(crate) struct Mutator {
    pub local: LocalHeap,
    /// The vproc's current global chunk: mutable and large-enough objects
    /// and promoted copies are bump-allocated in it.
    pub cursor: ChunkCursor,
    /// Free chunks set aside for this vproc's local copies (major
    /// collections, promotion) when the system refuses memory (`copy`).
    pub copy_reserve: Vec<usize>,
    /// How many chunks the copy reserve must hold before a copy starts.
    pub copy_reserve_target: usize,
    /// Field slots of tenured and large objects this vproc stored into
    /// since the last global collection: roots of the next young one.
    pub remembered: Vec<usize>,
}

impl Mutator {
    /// The state of a vproc whose local heap starts at `local_base`, with
    /// the chunks of its copy reserve.
    pub fn new(cfg: &Config, local_base: usize, copy_reserve: Vec<usize>) -> Mutator {
        Mutator {
            local: LocalHeap::new(local_base, cfg.local_heap_size, cfg.min_nursery_size),
            cursor: ChunkCursor::default(),
            copy_reserve,
            copy_reserve_target: copy_reserve_chunks(cfg.local_heap_size, cfg.chunk_size),
            remembered: Vec::new(),
        }
    }
}

impl Mutator {
    /// The part of a vproc of another plan: no local heap, no chunks.
    pub fn unused() -> Mutator {
        Mutator {
            local: LocalHeap::new(0, 0, 0),
            cursor: ChunkCursor::default(),
            copy_reserve: Vec::new(),
            copy_reserve_target: 0,
            remembered: Vec::new(),
        }
    }
}

impl Vproc {
    /// Tops the copy reserve up before a local copy (major collection,
    /// promotion), which may then draw on it and cannot fail. `Err` when the
    /// system refuses the memory: the copy must not start.
    pub fn ensure_copy_reserve(&mut self) -> Result<(), Error> {
        while self.split.copy_reserve.len() < self.split.copy_reserve_target {
            let id = self
                .shared
                .heap
                .spare_chunk(self.node)
                .map_err(|m| m.error("the copy reserve of a major collection or promotion"))?;
            self.split.copy_reserve.push(id);
        }
        Ok(())
    }

    /// Makes the upper half of the local heap's free space the nursery and
    /// allocates from its start (after a minor or major collection).
    pub fn reset_nursery(&mut self) {
        self.split.local.reset_nursery();
        let start = self.split.local.nursery_start;
        self.set_alloc_ptr(start);
        self.counted_ptr = start;
        self.alloc_end = self.split.local.end;
    }
}
