//! Parallel global collection (§3.4).
//!
//! Every vproc runs [`participate`]:
//!
//! 1. It runs its minor and major collections, so that everything its roots
//!    and local heap point to is in the local heap or in a global chunk, and
//!    hands its global chunks in as from-space. *Phase A*: once all vprocs
//!    have done so, the leader marks the from-space chunks (gathered per
//!    node) and resets the work queue.
//! 2. Each vproc takes a to-space chunk of its own node and forwards what its
//!    roots and young local data point to; the leader also forwards the
//!    registered global roots. A copy is published with a compare-and-swap
//!    on the original's header, so two vprocs reaching one object agree on
//!    one copy (the loser takes its own back).
//! 3. Each vproc scans its own to-space chunk; a full chunk with unscanned
//!    objects goes on its node's [`ScanQueue`], and idle vprocs take work
//!    from their node first, then from other nodes. Large objects are marked
//!    in place and queued for scanning.
//! 4. *Phase B*: when no work is left anywhere, the leader returns from-space
//!    chunks to their node's pool, frees unmarked large objects, retunes the
//!    trigger from the live size, verifies the heap (if asked) and ends the
//!    collection.
//!
//! Invariant after a global collection: no object, root or local heap points
//! into a chunk that was from-space.

use crate::gc::work_queue::ScanQueue;
use crate::gc::{major, minor, verify};
use crate::heap::cursor::ChunkCursor;
use crate::heap::global::GlobalHeap;
use crate::heap::space::ChunkKind;
use crate::object::descriptor::DescriptorTable;
use crate::object::header::Header;
use crate::object::{is_pointer, Obj};
use crate::gc::copy::Scan;
use crate::stats::VprocStats;
use crate::sync::{lock, Mutex};
use crate::vproc::Vproc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Work of the parallel scan.
pub(crate) enum ScanItem {
    /// Objects in `[start, end)` of a retired to-space chunk.
    Region { start: usize, end: usize },
    /// A marked large object.
    Large(usize),
}

/// Collection state shared by the vprocs.
pub(crate) struct GlobalGc {
    from_space: Mutex<Vec<usize>>,
    to_space: Mutex<Vec<usize>>,
    queue: ScanQueue<ScanItem>,
}

impl GlobalGc {
    pub fn new(nodes: usize) -> GlobalGc {
        GlobalGc { from_space: Mutex::new(Vec::new()), to_space: Mutex::new(Vec::new()), queue: ScanQueue::new(nodes) }
    }
}

/// The parallel copier of one vproc.
struct Evacuator<'a> {
    heap: &'a GlobalHeap,
    descs: &'a DescriptorTable,
    queue: &'a ScanQueue<ScanItem>,
    cursor: &'a mut ChunkCursor,
    node: usize,
    stats: &'a mut VprocStats,
    /// The only vproc of the runtime: forwarding needs no compare-and-swap.
    alone: bool,
}

impl Evacuator<'_> {
    #[inline]
    fn forward(&mut self, w: u64) -> u64 {
        if !is_pointer(w) {
            return w;
        }
        let a = w as usize;
        let Some(cid) = self.heap.space.chunk_of(a) else { return w };
        let info = self.heap.space.info(cid);
        match info.kind() {
            ChunkKind::FromSpace => self.evacuate(a, info.node.load(Ordering::Relaxed) as usize),
            ChunkKind::LargeHead => {
                if !info.mark.swap(true, Ordering::AcqRel) {
                    self.queue.push(info.node.load(Ordering::Relaxed) as usize, ScanItem::Large(a));
                }
                w
            }
            _ => w,
        }
    }

    /// Copies a from-space object, or returns the copy another vproc made.
    /// The copy is made first and published with one compare-and-swap on
    /// the original's header; the loser of a race takes its copy back (it is
    /// still the last thing in its chunk) and uses the winner's.
    fn evacuate(&mut self, a: usize, from_node: usize) -> u64 {
        // SAFETY: `a` is a pointer value into a from-space chunk, which holds
        // objects until this collection returns it to the pool.
        let o = unsafe { Obj::at(a) };
        let hw = o.header_word();
        let Some(h) = Header::decode(hw) else { return hw };
        let size = h.size_bytes();
        let dst = self.alloc(size);
        o.copy_to(h, dst);
        if self.alone {
            // No other vproc can race for this object.
            o.forward_to(dst);
        } else if !o.cas_header(hw, dst as u64) {
            self.cursor.top = dst;
            return o.header_word();
        }
        self.stats.bytes_copied_global += size as u64;
        if from_node == self.node {
            self.stats.copied_local_node += size as u64;
        } else {
            self.stats.copied_remote_node += size as u64;
        }
        dst as u64
    }

    fn alloc(&mut self, size: usize) -> usize {
        if let Some(p) = self.cursor.try_bump(size) {
            return p;
        }
        let retired = self.cursor.refill(self.heap, self.node, true).expect("address-space reservation exhausted");
        if let Some(r) = retired {
            if r.scan < r.top {
                let node = self.heap.space.info(r.chunk).node.load(Ordering::Relaxed) as usize;
                self.queue.push(node, ScanItem::Region { start: r.scan, end: r.top });
            }
        }
        self.cursor.try_bump(size).expect("object larger than a chunk")
    }

    /// Scans until no vproc has work left.
    fn drain(&mut self) {
        loop {
            while self.cursor.scan < self.cursor.top {
                // SAFETY: objects below the cursor's top are this
                // collection's copies, laid out one after another.
                let o = unsafe { Obj::at(self.cursor.scan) };
                let h = o.header().expect("copied object has a header");
                self.cursor.scan += h.size_bytes();
                self.scan_fields(o, h);
            }
            match self.queue.pop(self.node) {
                Some(ScanItem::Region { mut start, end }) => {
                    while start < end {
                        start += self.scan_object(start);
                    }
                }
                Some(ScanItem::Large(a)) => {
                    self.scan_object(a);
                }
                None => return,
            }
        }
    }
}

impl<'a> Scan<'a> for Evacuator<'a> {
    fn descs(&self) -> &'a DescriptorTable {
        self.descs
    }

    #[inline(always)]
    fn forward(&mut self, w: u64) -> u64 {
        Evacuator::forward(self, w)
    }
}

/// Takes part in the pending global collection. Every vproc calls this when
/// it sees the collection pending, at a safe point with all its values in
/// its root stack.
pub(crate) fn participate(v: &mut Vproc) {
    let t0 = Instant::now();
    let shared = v.shared.clone();
    let heap = &shared.heap;
    let gc = &shared.gc;
    let coord = &shared.coord;

    // 1. Local collections, then hand in the global chunks as from-space.
    minor::collect(v);
    major::collect(v, false);
    v.cursor.retire(heap);
    lock(&gc.from_space).append(&mut v.cursor.owned);
    coord.phase(v.id, || {
        for &c in lock(&gc.from_space).iter() {
            heap.space.info(c).set_kind(ChunkKind::FromSpace);
        }
        gc.queue.reset(coord.vprocs());
    });

    // 2. Roots, young local data and (leader) global roots.
    let is_leader = coord.leader() == Some(v.id);
    {
        let roots = v.roots.get_mut();
        let mut e = Evacuator {
            heap,
            descs: &shared.descs,
            queue: &gc.queue,
            cursor: &mut v.cursor,
            node: v.node,
            stats: &mut v.stats,
            alone: coord.vprocs() == 1,
        };
        e.cursor.begin_copy();
        for r in roots.iter_mut() {
            *r = e.forward(*r);
        }
        let mut s = v.local.base;
        while s < v.local.old_top {
            s += e.scan_object(s);
        }
        if is_leader {
            shared.global_roots.update(|w| e.forward(w));
        }
        // 3. Parallel scan.
        e.drain();
    }
    v.cursor.publish(heap);
    {
        let mut to = lock(&gc.to_space);
        to.extend(v.cursor.owned.iter().copied());
        to.extend(v.cursor.chunk);
    }

    // 4. Release from-space, sweep large objects, retune, verify.
    coord.phase(v.id, || {
        for c in lock(&gc.from_space).drain(..) {
            heap.release_chunk(c);
        }
        heap.sweep_large();
        let to = std::mem::take(&mut *lock(&gc.to_space));
        let live: usize = to
            .iter()
            .map(|&c| heap.space.info(c).top.load(Ordering::Acquire) - heap.space.chunk_start(c))
            .sum::<usize>()
            + heap.large_bytes();
        heap.retune_trigger(live);
        if shared.config.verify {
            verify::global_heap(&shared, &to);
        }
        coord.finish();
    });
    if shared.config.verify {
        verify::local_heap(v, "global collection");
    }
    v.record_pause(|s| &mut s.global, t0);
    v.publish_stats();
}
