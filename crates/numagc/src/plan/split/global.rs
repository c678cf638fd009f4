//! Parallel global collection (§3.4).
//!
//! Every vproc runs [`participate`]:
//!
//! 1. It runs its minor and major collections, so that everything its roots
//!    and local heap point to is in the local heap or in a global chunk, and
//!    hands its global chunks in as from-space. *Phase A*: once all vprocs
//!    have done so, the leader decides between a young and a full
//!    collection, marks the from-space chunks (gathered per node) and resets
//!    the work queue.
//! 2. Each vproc takes to-space chunks of its own node and forwards what its
//!    roots and young local data point to; the leader also forwards the
//!    registered global roots. A copy is published with a compare-and-swap
//!    on the original's header, so two vprocs reaching one object agree on
//!    one copy (the loser takes its own back).
//! 3. Each vproc scans its own to-space chunks; a full chunk with unscanned
//!    objects goes on its node's [`ScanQueue`], and idle vprocs take work
//!    from their node first, then from other nodes. Large objects are marked
//!    in place and queued for scanning. Work is also shared on request
//!    (numagc's addition, issue 20): while another vproc waits with nothing
//!    queued for it, a vproc gives away the later half of its unscanned
//!    copies, halved by value fields (the scan's work) rather than bytes
//!    ([`split_point`]), whether they are in its current chunk or a run it
//!    took from the queue; and while some vproc has not begun to scan (with
//!    more vprocs than CPUs, a thread waiting for one), busy vprocs give up
//!    their CPU every [`PACE`] objects.
//!    With ephemerons or finalisers anywhere, the leader then runs their
//!    rounds serially over every vproc's lists, copying what they keep
//!    (`plan::split::weak`), while the others wait.
//! 4. *Phase B*: when no work is left anywhere, the leader returns from-space
//!    chunks to their node's pool, frees unmarked large objects, retunes the
//!    trigger, verifies the heap (if asked) and ends the collection.
//!
//! Invariant after a global collection: no object, root or local heap points
//! into a chunk that was from-space.
//!
//! ## Before anything moves: deadline and to-space
//!
//! A collection cannot stop once objects move, so everything that can make
//! it fail is settled in phase A, before the first copy
//! (`gc::handshake` has the protocol):
//!
//! * Every vproc must [enter](crate::gc::handshake::Coordinator::enter) within
//!   `safepoint-timeout` of the request, or the vprocs that did enter call
//!   the collection off.
//! * The leader makes sure to-space exists: copies fill each to-space chunk
//!   to more than three quarters (every object in a chunk is under a quarter
//!   of one), so `4 × from-space bytes / (3 × chunk) + 2 × vprocs` chunks
//!   (one open chunk per cursor) always suffice. The pools are filled up to
//!   that, node by node for the from-space bound to each node and its
//!   vprocs' cursors ([`GlobalHeap::ensure_pooled`]); a vproc whose node's
//!   pool runs dry and whose new chunk the system refuses takes one from
//!   another node's pool, so only the total matters for progress. If the
//!   pools cannot hold the total, the collection is called off.
//!
//! Called off, the collection leaves a clean state: the local collections
//! that ran are complete collections of their own, and the chunks handed in
//! as from-space go back to the survivor list (they keep their ages and are
//! evacuated by the next collection). The vproc whose request needed the
//! collection gets the reason as an error; the others go back to work.
//! Beyond that, a collection copies past `max-heap` if it must: the heap
//! limit is enforced on mutator requests after the collection
//! (`plan::split`).
//!
//! ## Young global collections (a numagc extension, `young-global-gc`)
//!
//! The paper evacuates every chunk at every global collection, so long-lived
//! data is copied again and again. With `young-global-gc` each global chunk
//! has an age: 0 for chunks filled since the last collection, 1 for the
//! survivors of one young collection, 2 for tenured data. A *young*
//! collection evacuates ages 0 and 1: objects from age 0 go to survivor
//! chunks, from age 1 to tenured chunks. Tenured chunks stay in place. A
//! *full* collection evacuates everything into tenured chunks (one
//! destination, as in the paper), and runs when the tenured data has grown past
//! `max(threshold, live × heap-growth)` since the last full one, when one is
//! asked for explicitly, and when the heap is at its limit.
//!
//! Why it is sound: an object can only point to objects that became global
//! no later than itself (the global heap never points into a local heap),
//! and every collection ages both alike, so a target is always at least as
//! old as the object pointing to it, and tenured objects point only to
//! tenured objects. The exception is a store into a mutable object: the
//! write barrier records the field slots of tenured (and large) objects it
//! stores into, and a young collection treats them as roots. Large objects
//! may hold young pointers too; a young collection scans them all and only
//! full collections sweep them. Survivors are copied once more before
//! tenure, so data that dies soon after a collection is never tenured.

use super::copy::Scan;
use super::{major, minor, verify};
use crate::gc::handshake::Abandoned;
use crate::gc::work_queue::ScanQueue;
use crate::heap::cursor::ChunkCursor;
use crate::heap::global::GlobalHeap;
use crate::heap::space::{ChunkIndex, ChunkKind};
use crate::object::descriptor::DescriptorTable;
use crate::object::header::Header;
use crate::object::{is_pointer, Obj};
use crate::stats::VprocStats;
use crate::sync::{lock, Mutex};
use crate::vproc::Vproc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Age of tenured chunks.
pub(crate) const TENURED: u8 = 2;

/// The fewest bytes of unscanned copies a vproc gives to one that waits
/// for work: below it, the push and the wake-up cost more than the scan.
const SHARE_FLOOR: usize = 512;

/// The shortest wait for scan work the trace shows as a span of its own.
const WAIT_SPAN_FLOOR: Duration = Duration::from_micros(20);

/// Objects a vproc scans between two looks at whether another has not
/// begun to scan yet (`Evacuator::pace`).
const PACE: u32 = 64;

/// Work of the parallel scan.
pub(crate) enum ScanItem {
    /// Objects in `[start, end)` of a retired to-space chunk.
    Region { start: usize, end: usize },
    /// A large object to scan.
    Large(usize),
}

/// Collection state shared by the vprocs.
pub(crate) struct GlobalGc {
    from_space: Mutex<Vec<usize>>,
    /// Chunks of survivors of one collection (age 1).
    survivors: Mutex<Vec<usize>>,
    /// Chunks of tenured data (age 2).
    tenured: Mutex<Vec<usize>>,
    /// Bytes in tenured chunks and large objects after the last collection.
    tenured_live: AtomicUsize,
    /// A full collection is due when `tenured_live` exceeds this.
    full_limit: AtomicUsize,
    /// The next collection must be full (explicit request, heap limit).
    force_full: AtomicBool,
    /// Whether the collection under way is full (set in phase A).
    full: AtomicBool,
    full_collections: AtomicU64,
    /// The chunk pools' free chunks go back to the system at the end of
    /// the next full collection (`split::compact`).
    pub trim_pools: AtomicBool,
    queue: ScanQueue<ScanItem>,
}

impl GlobalGc {
    pub fn new(nodes: usize, base_trigger: usize) -> GlobalGc {
        GlobalGc {
            from_space: Mutex::new(Vec::new()),
            survivors: Mutex::new(Vec::new()),
            tenured: Mutex::new(Vec::new()),
            tenured_live: AtomicUsize::new(0),
            full_limit: AtomicUsize::new(base_trigger),
            force_full: AtomicBool::new(false),
            full: AtomicBool::new(true),
            full_collections: AtomicU64::new(0),
            trim_pools: AtomicBool::new(false),
            queue: ScanQueue::new(nodes),
        }
    }

    /// Makes the next global collection a full one.
    pub fn request_full(&self) {
        self.force_full.store(true, Ordering::Relaxed);
    }

    /// Number of full global collections completed.
    pub fn full_collections(&self) -> u64 {
        self.full_collections.load(Ordering::Relaxed)
    }
}

/// The parallel copier of one vproc: survivors of young chunks go through
/// `survivor`, everything older through `tenured`.
pub(super) struct Evacuator<'a> {
    pub(super) heap: &'a GlobalHeap,
    /// `heap.space`'s address arithmetic, kept here for the scan loops.
    index: ChunkIndex<'a>,
    descs: &'a DescriptorTable,
    queue: &'a ScanQueue<ScanItem>,
    survivor: &'a mut ChunkCursor,
    tenured: &'a mut ChunkCursor,
    node: usize,
    stats: &'a mut VprocStats,
    /// The only vproc of the runtime: forwarding needs no compare-and-swap.
    alone: bool,
    /// A full collection: large objects are marked and swept.
    pub(super) full: bool,
    /// Young collections are on: tenured slots left pointing to survivors
    /// are remembered for the next collection.
    generational: bool,
    /// Those slots (the next collection's remembered set).
    remember: Vec<usize>,
    /// Objects scanned, for [`Evacuator::pace`].
    paced: u32,
    /// Time spent waiting for scan work in [`Evacuator::drain`].
    waited: Duration,
    /// The waits of at least [`WAIT_SPAN_FLOOR`], when tracing is on (for
    /// the trace's `wait` spans inside the collection's).
    waits: Option<Vec<(Instant, Duration)>>,
}

impl Evacuator<'_> {
    #[inline(always)]
    pub(super) fn forward(&mut self, w: u64) -> u64 {
        if !is_pointer(w) {
            return w;
        }
        let a = w as usize;
        let Some(info) = self.index.info_of(a) else {
            return w;
        };
        match info.kind() {
            ChunkKind::FromSpace => {
                let age = info.age.load(Ordering::Relaxed);
                self.evacuate(a, info.node.load(Ordering::Relaxed) as usize, age)
            }
            ChunkKind::LargeHead if self.full => {
                if !info.mark.swap(true, Ordering::AcqRel) {
                    self.queue.push(
                        info.node.load(Ordering::Relaxed) as usize,
                        ScanItem::Large(a),
                    );
                }
                w
            }
            _ => w,
        }
    }

    /// Copies a from-space object, or returns the copy another vproc made.
    /// The copy is made first and published with one compare-and-swap on
    /// the original's header; the loser of a race takes its copy back (it is
    /// still the last thing in its chunk) and uses the winner's. Inlined,
    /// with the tests before it (an immediate, a pointer outside
    /// from-space), in the scan loops: a call per field, saving the
    /// registers the copy needs, was a third of the scan.
    #[inline(always)]
    fn evacuate(&mut self, a: usize, from_node: usize, age: u8) -> u64 {
        // SAFETY: `a` is a pointer value into a from-space chunk, which holds
        // objects until this collection returns it to the pool.
        let o = unsafe { Obj::at(a) };
        let hw = o.header_word();
        let Some(h) = Header::decode(hw) else {
            return hw;
        };
        let size = h.size_bytes();
        // A full collection tenures everything (one destination, as in the
        // paper); a young one ages objects from young chunks first.
        let tenure = self.full || age >= 1;
        let dst = self.alloc(size, tenure);
        o.copy_to(h, dst);
        if self.alone {
            // No other vproc can race for this object.
            o.forward_to(dst);
        } else if !o.cas_header(hw, dst as u64) {
            self.cursor(tenure).top = dst;
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

    /// Whether `w` points to a survivor of this collection (a to-space
    /// chunk of age 1).
    #[inline]
    fn is_survivor(&self, w: u64) -> bool {
        if !is_pointer(w) {
            return false;
        }
        let Some(info) = self.index.info_of(w as usize) else {
            return false;
        };
        info.kind() == ChunkKind::Global && info.age.load(Ordering::Relaxed) == 1
    }

    /// Forwards a value field of a tenured object at `slot` and, with
    /// `remember` (a young collection with young collections on), remembers
    /// the slot if it now points to a survivor.
    #[inline(always)]
    fn forward_tenured_slot(&mut self, slot: *mut u64, remember: bool) {
        // SAFETY: `slot` is a value field of a tenured object (a to-space
        // copy this vproc scans, or a remembered slot of an object no young
        // collection moves); two vprocs may forward the same remembered
        // slot, and both store the same value, atomically.
        let cell = unsafe { &*(slot as *const std::sync::atomic::AtomicU64) };
        let w = cell.load(Ordering::Relaxed);
        let n = self.forward(w);
        if n != w {
            cell.store(n, Ordering::Relaxed);
        }
        if remember && self.is_survivor(n) {
            self.remember.push(slot as usize);
        }
    }

    /// Scans a copy made by this collection, in a tenured or a survivor
    /// chunk.
    #[inline(always)]
    fn scan_copy(&mut self, o: Obj, h: Header, tenured: bool) {
        if tenured {
            self.scan_tenured(o, h);
        } else {
            self.scan_fields(o, h);
        }
    }

    /// Scans an object of a tenured to-space chunk.
    #[inline(always)]
    fn scan_tenured(&mut self, o: Obj, h: Header) {
        let descs = self.descs;
        // A full collection tenures every copy: no survivor to remember,
        // and no chunk to look up for it.
        let remember = self.generational && !self.full;
        for i in crate::object::value_fields(h, descs) {
            self.forward_tenured_slot(o.field_ptr(i), remember);
        }
    }

    fn cursor(&mut self, tenure: bool) -> &mut ChunkCursor {
        if tenure {
            self.tenured
        } else {
            self.survivor
        }
    }

    /// Room for a copy of `size` bytes: the bump inline, a new chunk out
    /// of line.
    #[inline(always)]
    fn alloc(&mut self, size: usize, tenure: bool) -> usize {
        match self.cursor(tenure).try_bump(size) {
            Some(p) => p,
            None => self.alloc_in_new_chunk(size, tenure),
        }
    }

    #[cold]
    #[inline(never)]
    fn alloc_in_new_chunk(&mut self, size: usize, tenure: bool) -> usize {
        let (heap, node) = (self.heap, self.node);
        // Forced: past the heap limit, and to another node's pool when the
        // system refuses a chunk; phase A filled the pools with all that the
        // copies can need, so this cannot fail.
        let retired = self
            .cursor(tenure)
            .refill(heap, node, true)
            .expect("the pools hold the to-space that phase A set aside");
        if let Some(r) = retired {
            if r.scan < r.top {
                let node = heap.space.info(r.chunk).node.load(Ordering::Relaxed) as usize;
                self.queue.push(
                    node,
                    ScanItem::Region {
                        start: r.scan,
                        end: r.top,
                    },
                );
            }
        }
        self.cursor(tenure)
            .try_bump(size)
            .expect("object larger than a chunk")
    }

    /// Pushes `[start, end)`, objects of this collection's copies, on the
    /// queue of their chunk's node for another vproc to scan.
    fn share(&self, start: usize, end: usize) {
        let space = &self.heap.space;
        let node = space
            .info(space.chunk_of(start).expect("region in the heap"))
            .node
            .load(Ordering::Relaxed) as usize;
        self.queue.push(node, ScanItem::Region { start, end });
        // With more vprocs than CPUs, the vproc woken for it may wait for
        // this one's CPU; where each has its own, this returns at once.
        std::thread::yield_now();
    }

    /// Whether to give away `bytes` of unscanned copies now: another vproc
    /// waits for work and there are enough of them to be worth its while.
    #[inline]
    fn should_share(&self, bytes: usize) -> bool {
        bytes >= SHARE_FLOOR && !self.alone && self.queue.wants_work()
    }

    /// Scans the next unscanned object of one of this vproc's to-space
    /// chunks; `false` when both are scanned up to their tops. When another
    /// vproc waits for work, the unscanned copies go to the queue instead
    /// (and this vproc takes work from there like the others).
    fn scan_own(&mut self) -> bool {
        for tenure in [false, true] {
            let c = self.cursor(tenure);
            let (scan, top) = (c.scan, c.top);
            if scan == top {
                continue;
            }
            if self.should_share(top - scan) {
                // The run so far goes through `scan_region`, which gives
                // the later half of its scan work to the queue; this
                // vproc's own copies go on from `top`. A run found not
                // worth sharing is not walked again: the next try walks
                // only the copies made after it.
                self.cursor(tenure).scan = top;
                self.scan_region(scan, top, tenure);
                return true;
            }
            self.pace();
            // SAFETY: objects below a cursor's top are this collection's
            // copies, laid out one after another.
            let o = unsafe { Obj::at(scan) };
            let h = o.header().expect("copied object has a header");
            // Advance before scanning: the chunk may be retired meanwhile.
            self.cursor(tenure).scan = scan + h.size_bytes();
            self.scan_copy(o, h, tenure);
            return true;
        }
        false
    }

    /// Scans the copies in `[start, end)` (of a `tenured` chunk or not).
    /// When another vproc waits for work, the later half of what is left
    /// goes to the queue.
    fn scan_region(&mut self, mut start: usize, mut end: usize, tenured: bool) {
        // Past this address, a run with nothing worth sharing is not tried
        // again (each try walks the run).
        let mut retry = start;
        while start < end {
            if start >= retry && self.should_share(end - start) {
                let cut = split_point(self.descs, start, end);
                if cut < end {
                    self.share(cut, end);
                    end = cut;
                } else {
                    retry = end;
                }
            }
            self.pace();
            // SAFETY: a region holds this collection's copies, laid out one
            // after another.
            let o = unsafe { Obj::at(start) };
            let h = o.header().expect("copied object has a header");
            start += h.size_bytes();
            self.scan_copy(o, h, tenured);
        }
    }

    /// Counts a scanned object; every [`PACE`] objects, while some vproc
    /// has not begun to scan (a thread waiting for a CPU when vprocs
    /// outnumber CPUs), gives the CPU up so that it can take its share.
    #[inline(always)]
    fn pace(&mut self) {
        self.paced = self.paced.wrapping_add(1);
        if self.paced.is_multiple_of(PACE) && self.queue.someone_absent() {
            std::thread::yield_now();
        }
    }

    /// Scans until no vproc has work left (or, once the parallel scan has
    /// ended, until the work this vproc made since is done).
    pub(super) fn drain(&mut self) {
        loop {
            while self.scan_own() {}
            let t = Instant::now();
            let item = self.queue.pop(self.node);
            let d = t.elapsed();
            self.waited += d;
            if let Some(w) = self.waits.as_mut().filter(|_| d >= WAIT_SPAN_FLOOR) {
                w.push((t, d));
            }
            match item {
                Some(ScanItem::Region { start, end }) => {
                    let space = &self.heap.space;
                    let tenured = space
                        .info(space.chunk_of(start).expect("region in the heap"))
                        .age
                        .load(Ordering::Relaxed)
                        == TENURED;
                    self.scan_region(start, end, tenured);
                }
                Some(ScanItem::Large(a)) => {
                    self.scan_object(a);
                }
                None => return,
            }
        }
    }
}

/// Calls `f` with the header of each object of a run of copies
/// `[start, end)` until it returns `false`; returns the address of that
/// object, or `end`.
fn walk_copies(start: usize, end: usize, mut f: impl FnMut(Header) -> bool) -> usize {
    let mut p = start;
    while p < end {
        // SAFETY: `p` is an object boundary of a run of this collection's
        // copies, laid out one after another, below its end.
        let h = unsafe { Obj::at(p) }
            .header()
            .expect("copied object has a header");
        if !f(h) {
            return p;
        }
        p += h.size_bytes();
    }
    end
}

/// Where to cut a run of copies `[start, end)` in two for sharing: the
/// object boundary before which at most half of the run's value fields
/// lie (the scan work: a scan copies what value fields name; raw words
/// cost it nothing, so a cut by bytes would give away rows of numbers and
/// keep the nodes that name them). The first object always stays before
/// the cut, so both parts of a split are smaller than the run (no run is
/// passed on whole, between vprocs, for ever). `end` when the run has
/// fewer than two value fields, or all but the first object's are none.
fn split_point(descs: &DescriptorTable, start: usize, end: usize) -> usize {
    let mut total = 0;
    walk_copies(start, end, |h| {
        total += crate::object::value_field_count(h, descs);
        true
    });
    if total < 2 {
        return end;
    }
    let mut seen = 0;
    let mut first = true;
    walk_copies(start, end, |h| {
        seen += crate::object::value_field_count(h, descs);
        std::mem::take(&mut first) || seen <= total / 2
    })
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

/// Bytes of objects in `chunks` (up to each chunk's published top).
fn used_bytes(heap: &GlobalHeap, chunks: &[usize]) -> usize {
    chunks
        .iter()
        .map(|&c| heap.space.info(c).top.load(Ordering::Acquire) - heap.space.chunk_start(c))
        .sum()
}

pub(crate) use crate::gc::Joined;

/// Takes part in the pending global collection. Every vproc calls this when
/// it sees the collection pending, at a safe point with all its values in
/// its root stack.
pub(crate) fn participate(v: &mut Vproc) -> Joined {
    let shared = v.shared.clone();
    let heap = &shared.heap;
    let gc = &shared.split;
    let coord = &shared.coord;
    if let Err(j) = crate::gc::enter(coord, v.id) {
        return j;
    }
    // The leader is recorded by `request`, before the leader itself enters.
    let requested = coord.leader() == Some(v.id);
    let _guard = crate::gc::AbortOnUnwind("global collection");
    let t0 = Instant::now();

    // 1. Local collections, then hand in the chunks filled since the last
    //    collection as from-space. The major collection is skipped when the
    //    system refuses its copy reserve: the old local data then stays
    //    local, where step 2 scans it as roots like the young data.
    minor::collect(v);
    if v.ensure_copy_reserve().is_ok() {
        major::collect(v, false);
    }
    let t_global = Instant::now();
    let copied_before = v.stats.bytes_copied_global;
    v.split.cursor.retire(heap);
    lock(&gc.from_space).append(&mut v.split.cursor.owned);
    let gathered = coord.gather(
        v.id,
        || {
            let full = !shared.config.young_global_gc
                || gc.force_full.load(Ordering::Relaxed)
                || gc.tenured_live.load(Ordering::Relaxed) > gc.full_limit.load(Ordering::Relaxed)
                || heap.in_use() > heap.limit();
            let mut from = lock(&gc.from_space);
            let mut survivors = lock(&gc.survivors);
            let mut tenured = lock(&gc.tenured);
            // To-space first, before anything is marked or moved: per node,
            // for the from-space bound to it and the cursors of its vprocs.
            let nodes = heap.topology.num_nodes();
            let mut from_bytes = vec![0usize; nodes];
            let mut add = |chunks: &[usize]| {
                for &c in chunks {
                    let node = heap.space.info(c).node.load(Ordering::Relaxed) as usize;
                    from_bytes[node] += used_bytes(heap, &[c]);
                }
            };
            add(&from);
            add(&survivors);
            if full {
                add(&tenured);
            }
            let mut need: Vec<usize> = from_bytes
                .iter()
                .map(|b| (4 * b).div_ceil(3 * heap.chunk_size()))
                .collect();
            for p in shared.placements.iter() {
                need[p.node] += 2;
            }
            heap.ensure_pooled(&need)
                .map_err(|m| Abandoned::NoToSpace {
                    bytes: m.bytes,
                    errno: m.errno,
                })?;
            gc.force_full.store(false, Ordering::Relaxed);
            gc.full.store(full, Ordering::Relaxed);
            from.append(&mut survivors);
            if full {
                from.append(&mut tenured);
            }
            for &c in from.iter() {
                heap.space.info(c).set_kind(ChunkKind::FromSpace);
            }
            gc.queue.reset(coord.vprocs());
            Ok(())
        },
        || {
            // Called off: the chunks handed in go back, unmarked, with their
            // ages; the next collection evacuates them.
            let mut from = lock(&gc.from_space);
            lock(&gc.survivors).append(&mut from);
        },
    );
    if let Err(a) = gathered {
        if shared.config.verify {
            verify::local_heap(v, "an abandoned global collection");
        }
        v.record_pause_from(crate::trace::SpanKind::Global, t0, t_global);
        v.publish_stats();
        return Joined::Abandoned {
            reason: a,
            requested,
        };
    }
    let full = gc.full.load(Ordering::Relaxed);
    // Every vproc reads the same answer: entries are added outside
    // collections only, and removed by the weak phase below.
    let weak = !shared.weak.is_empty();

    // 2. Roots: the root stack and the young local data; in a young
    //    collection also the remembered slots; the leader adds the global
    //    roots and, in a young collection, every large object.
    let is_leader = coord.leader() == Some(v.id);
    let remembered = std::mem::take(&mut v.split.remembered);
    let mut tenured_cursor = ChunkCursor {
        age: TENURED,
        ..Default::default()
    };
    v.split.cursor.age = 1;
    let next_remembered;
    let waited;
    {
        let roots = v.roots.as_mut_slice();
        let mut e = Evacuator {
            heap,
            index: heap.space.index(),
            descs: &shared.descs,
            queue: &gc.queue,
            survivor: &mut v.split.cursor,
            tenured: &mut tenured_cursor,
            node: v.node,
            stats: &mut v.stats,
            alone: coord.vprocs() == 1,
            full,
            generational: shared.config.young_global_gc,
            remember: Vec::new(),
            paced: 0,
            waited: Duration::ZERO,
            waits: v.tracer.start().map(|_| Vec::new()),
        };
        e.survivor.begin_copy();
        for r in roots.iter_mut() {
            *r = e.forward(*r);
        }
        let mut s = v.split.local.base;
        while s < v.split.local.old_top {
            s += e.scan_object(s);
        }
        if !full {
            // Remembered slots belong to tenured or large objects, which a
            // young collection neither moves nor frees.
            let remember = e.generational;
            for &slot in &remembered {
                e.forward_tenured_slot(slot as *mut u64, remember);
            }
            if is_leader {
                heap.for_each_large(|a| {
                    let node = heap
                        .space
                        .info(heap.space.chunk_of(a).expect("large object"))
                        .node
                        .load(Ordering::Relaxed);
                    gc.queue.push(node as usize, ScanItem::Large(a));
                });
            }
        }
        if is_leader {
            shared.global_roots.update(|w| e.forward(w));
        }
        // 3. Parallel scan; then the leader processes every vproc's
        //    ephemerons and finalisers (`plan::split::weak`).
        gc.queue.arrive();
        e.drain();
        if weak {
            coord.phase(v.id, || super::weak::global(&shared, &mut e));
        }
        next_remembered = std::mem::take(&mut e.remember);
        waited = (e.waited, e.waits.take());
    }
    // Allocation starts in fresh chunks (of age 0).
    v.split.remembered = next_remembered;
    v.split.cursor.retire(heap);
    v.split.cursor.age = 0;
    tenured_cursor.retire(heap);
    lock(&gc.survivors).append(&mut v.split.cursor.owned);
    lock(&gc.tenured).append(&mut tenured_cursor.owned);

    // 4. Release from-space, sweep large objects (full), retune, verify.
    coord.phase(v.id, || {
        for c in lock(&gc.from_space).drain(..) {
            heap.release_chunk(c);
        }
        if full {
            heap.sweep_large();
            if gc.trim_pools.swap(false, Ordering::Relaxed) {
                heap.trim_pools();
            }
        }
        let survivors = lock(&gc.survivors);
        let tenured = lock(&gc.tenured);
        let tenured_live = used_bytes(heap, &tenured) + heap.large_bytes();
        let live = used_bytes(heap, &survivors) + tenured_live;
        gc.tenured_live.store(tenured_live, Ordering::Relaxed);
        if full {
            gc.full_limit
                .store(heap.grown_limit(tenured_live), Ordering::Relaxed);
            gc.full_collections.fetch_add(1, Ordering::Relaxed);
        }
        if shared.config.young_global_gc {
            // The next collection when the heap has grown by live × (growth
            // - 1), the paper's threshold at least: the spacing of full
            // collections at `live × growth`.
            heap.set_trigger(
                heap.in_use()
                    + heap
                        .grown_limit(live)
                        .saturating_sub(live)
                        .max(heap.base_trigger()),
            );
        } else {
            heap.set_trigger(heap.grown_limit(live));
        }
        if shared.config.verify {
            let all: Vec<usize> = survivors.iter().chain(tenured.iter()).copied().collect();
            verify::global_heap(&shared, &all);
        }
        drop((survivors, tenured));
        coord.finish();
    });
    if shared.config.verify {
        verify::local_heap(v, "global collection");
    }
    let copied = v.stats.bytes_copied_global - copied_before;
    v.stats.global_copied.push(copied);
    let (waited, waits) = waited;
    v.stats
        .global_waited_ns
        .push(u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX));
    for (t, d) in waits.into_iter().flatten() {
        v.tracer.span(crate::trace::SpanKind::Wait, t, d);
    }
    v.record_pause_from(crate::trace::SpanKind::Global, t0, t_global);
    v.publish_stats();
    Joined::Collected
}

#[cfg(all(test, not(loom)))]
#[path = "global_tests.rs"]
mod tests;
