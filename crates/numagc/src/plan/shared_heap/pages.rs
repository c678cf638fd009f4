//! The major heap's pools (multicore-ocaml-gc.txt §3.3): pages of one size
//! class each, owned by one vproc, non-moving.
//!
//! A page is a power-of-two run of bytes (`page_bytes`, at least 64 KiB and
//! at most a chunk) inside a chunk of kind [`ChunkKind::Pool`], so the page
//! of any object is its address with the low bits cleared. It starts with a
//! header that is written once, when the page is taken for a class, and
//! only read afterwards (by any vproc):
//!
//! ```text
//! | slot bytes | slots | first slot | class | reciprocal | - | colour byte per slot ... | slot 0 | slot 1 | ...
//! ```
//!
//! The colour bytes are the mark state of §3.2 (see `colours`): [`FREE`]
//! for a slot that holds no object, else one of the three rotating colours.
//! Markers on any vproc change a colour with a compare-and-swap; everything
//! else of a page — how many slots are free, and where allocation looks
//! for the next one — belongs to the owning vproc alone ([`Pools`]), as in
//! OCaml 5's `shared_heap.c`, where a domain allocates and sweeps its own
//! pools without synchronisation.
//!
//! Free slots are found through the colour bytes, not a free list: a page
//! has an allocation cursor, every `FREE` slot lies at or after it, and an
//! allocation takes the first `FREE` slot from the cursor on. (OCaml 5
//! threads a free list through the free slots when it sweeps or lays out a
//! pool; measured here, those writes, one cache line per free slot, were
//! a tenth of the shared plan's time on binarytrees, and the first
//! allocation from each slot read the line again for its link. The colour
//! bytes are contiguous, and a sweep now writes only the colours it
//! frees.)
//!
//! A minor collection's copies take whole **runs** of consecutive free
//! slots ([`Run`], [`Pools::claim_run`]): each copy is then a pointer bump
//! and a colour store, as copying into a semispace is, where a slot taken
//! through the page's cursor costs a walk from the class to its page and
//! the page's header (the promoting copy, `minor`, took about 150
//! instructions an object with its scan, most of them there). While a run is claimed its
//! slots not taken yet are `FREE` but counted taken and below the cursor;
//! [`Pools::return_run`] gives them back. The promoter that claims runs
//! holds `&mut Pools` and returns its runs before it lets go of them, so
//! nothing else sees a page in that state.
//!
//! Invariants: a slot whose colour is not `FREE` holds an initialised
//! object (its header is written before any pointer to it is published);
//! only the owner changes a colour to or from `FREE`; a page is reused for
//! another class only when all its slots are `FREE`.

use crate::heap::global::{GlobalHeap, Refused};
use crate::heap::space::ChunkKind;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// The colour of a slot that holds no object.
pub(crate) const FREE: u8 = 0;

/// Bytes of a page's fixed header (six `u32`s: slot bytes, slots, first
/// slot, class, the slot bytes' reciprocal, unused).
const HEADER_BYTES: usize = 24;

/// A page: the address of its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Page(usize);

impl Page {
    /// The page holding `addr`, which must be in a chunk of kind `Pool`.
    #[inline(always)]
    pub fn of(addr: usize, page_bytes: usize) -> Page {
        Page(addr & !(page_bytes - 1))
    }

    pub fn base(self) -> usize {
        self.0
    }

    #[inline(always)]
    fn word(self, i: usize) -> &'static AtomicU32 {
        debug_assert!(i < HEADER_BYTES / 4);
        // SAFETY: `Page` values are made only for pages inside `Pool`
        // chunks, which stay mapped for the runtime's life (the address
        // space is released when the runtime is dropped, after every
        // vproc stopped); the header is 24 aligned bytes at the page start.
        unsafe { &*((self.0 + 4 * i) as *const AtomicU32) }
    }

    #[inline(always)]
    pub fn slot_bytes(self) -> usize {
        self.word(0).load(Ordering::Relaxed) as usize
    }

    #[inline(always)]
    pub fn slots(self) -> usize {
        self.word(1).load(Ordering::Relaxed) as usize
    }

    #[inline(always)]
    fn first(self) -> usize {
        self.0 + self.word(2).load(Ordering::Relaxed) as usize
    }

    pub fn class(self) -> usize {
        self.word(3).load(Ordering::Relaxed) as usize
    }

    /// `ceil(2^32 / slot bytes)`: `(offset × it) >> 32` is the index of the
    /// slot starting at `offset` without a division (exact for offsets of
    /// slot starts below 2^32, which pages are).
    #[inline(always)]
    fn reciprocal(self) -> u64 {
        self.word(4).load(Ordering::Relaxed) as u64
    }

    /// The colour byte of slot `i` (`i < slots`).
    #[inline(always)]
    pub fn colour(self, i: usize) -> &'static AtomicU8 {
        debug_assert!(i < self.slots());
        // SAFETY: the colour bytes follow the header, one per slot, inside
        // the page (see `init`); mapped as in `word`.
        unsafe { &*((self.0 + HEADER_BYTES + i) as *const AtomicU8) }
    }

    #[inline(always)]
    pub fn slot(self, i: usize) -> usize {
        self.first() + i * self.slot_bytes()
    }

    /// The index of the slot that starts at `addr`; `None` when `addr` is
    /// not the start of a slot of this page.
    #[inline(always)]
    pub fn index_of(self, addr: usize) -> Option<usize> {
        let (first, sb) = (self.first(), self.slot_bytes());
        if addr < first || sb == 0 {
            return None;
        }
        let off = addr - first;
        let i = off / sb;
        (off.is_multiple_of(sb) && i < self.slots()).then_some(i)
    }

    /// The colour byte of the object at `addr` in this page, which the
    /// caller knows to be the start of a slot (a pointer value).
    #[inline(always)]
    pub fn colour_of(self, addr: usize) -> &'static AtomicU8 {
        let off = (addr - self.first()) as u64;
        let i = ((off * self.reciprocal()) >> 32) as usize;
        debug_assert_eq!(Some(i), self.index_of(addr), "{addr:#x} starts a slot");
        self.colour(i)
    }

    /// Marks the page at `base` as holding no slots (a page of a fresh
    /// chunk, before it is handed out).
    fn init_unused(base: usize) {
        let p = Page(base);
        for i in 0..HEADER_BYTES / 4 {
            p.word(i).store(0, Ordering::Relaxed);
        }
    }

    /// Lays out a page of `page_bytes` at `base` for slots of `slot_bytes`,
    /// every one `FREE`. Only the owner calls it, on a page no one else
    /// can reach (fresh, or all its slots free).
    fn init(base: usize, page_bytes: usize, class: usize, slot_bytes: usize) -> Page {
        // n slots need HEADER + n colour bytes (rounded to 8) + n × slot.
        let mut slots = (page_bytes - HEADER_BYTES) / (slot_bytes + 1);
        while (HEADER_BYTES + slots).next_multiple_of(8) + slots * slot_bytes > page_bytes {
            slots -= 1;
        }
        let first = (HEADER_BYTES + slots).next_multiple_of(8);
        let p = Page(base);
        p.word(0).store(slot_bytes as u32, Ordering::Relaxed);
        p.word(1).store(slots as u32, Ordering::Relaxed);
        p.word(2).store(first as u32, Ordering::Relaxed);
        p.word(3).store(class as u32, Ordering::Relaxed);
        let reciprocal = (1u64 << 32).div_ceil(slot_bytes as u64);
        p.word(4).store(reciprocal as u32, Ordering::Relaxed);
        for i in 0..slots {
            p.colour(i).store(FREE, Ordering::Relaxed);
        }
        p
    }
}

/// A page of a class as its owner sees it: its allocation cursor and
/// the number of its free slots.
///
/// Invariant: no slot below `next` is `FREE`, and `nfree` is the number
/// of `FREE` slots (all at or after `next`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PageState {
    pub page: Page,
    next: u32,
    pub(super) nfree: u32,
}

impl PageState {
    /// A page just laid out: every slot free.
    fn fresh(page: Page) -> PageState {
        PageState {
            page,
            next: 0,
            nfree: page.slots() as u32,
        }
    }

    /// Takes the first free slot from the cursor on and colours it
    /// `colour`; `None` when the page has none.
    #[inline(always)]
    pub(super) fn take(&mut self, colour: u8) -> Option<usize> {
        let i = self.next_free()?;
        self.page.colour(i).store(colour, Ordering::Relaxed);
        Some(self.page.slot(i))
    }

    /// Takes the first free slot from the cursor on, leaving its colour
    /// `FREE` for the caller to set (a compaction's copy).
    pub(super) fn pop(&mut self) -> Option<usize> {
        let i = self.next_free()?;
        Some(self.page.slot(i))
    }

    /// The index of the first `FREE` slot from the cursor on, the cursor
    /// moved past it and the slot counted as taken.
    #[inline(always)]
    fn next_free(&mut self) -> Option<usize> {
        if self.nfree == 0 {
            return None;
        }
        let p = self.page;
        let n = p.slots();
        let mut i = self.next as usize;
        // The invariant puts `nfree > 0` free slots at or after `next`.
        while i < n && p.colour(i).load(Ordering::Relaxed) != FREE {
            i += 1;
        }
        assert!(
            i < n,
            "page {:#x} counts {} free slots and has none from slot {}",
            p.base(),
            self.nfree,
            self.next
        );
        self.next = (i + 1) as u32;
        self.nfree -= 1;
        Some(i)
    }

    /// Claims the run of `FREE` slots that starts at the first one from
    /// the cursor on and ends at the next slot that is not `FREE` (or the
    /// page's end); the cursor moves past it and its slots count as taken.
    /// `None` when the page has no free slot.
    fn claim_run(&mut self) -> Option<Run> {
        let p = self.page;
        let n = p.slots();
        // Every slot from the cursor on is free when the free slots, all
        // at or after it, are as many as those slots (a page just laid
        // out, or one whose tail is free): no colour needs reading.
        let all_free = self.nfree as usize == n - self.next as usize;
        let first = self.next_free()?;
        let mut end = if all_free { n } else { first + 1 };
        while end < n && p.colour(end).load(Ordering::Relaxed) == FREE {
            end += 1;
        }
        // `next_free` counted the first slot; the rest are counted here.
        self.next = end as u32;
        self.nfree -= (end - first - 1) as u32;
        let slot_bytes = p.slot_bytes();
        Some(Run {
            next: p.slot(first),
            end: p.slot(first) + (end - first) * slot_bytes,
            colour: p.colour(first) as *const AtomicU8 as usize,
            slot_bytes,
        })
    }

    /// Frees the slots coloured `garbage` and puts the cursor back at the
    /// first slot; returns the number of slots still holding objects.
    fn sweep(&mut self, garbage: u8, mut on_free: impl FnMut(usize)) -> usize {
        let p = self.page;
        let n = p.slots();
        let mut live = 0;
        for i in 0..n {
            let c = p.colour(i);
            let colour = c.load(Ordering::Relaxed);
            if colour == garbage {
                on_free(p.slot(i));
                c.store(FREE, Ordering::Relaxed);
            } else if colour != FREE {
                live += 1;
            }
        }
        self.next = 0;
        self.nfree = (n - live) as u32;
        live
    }
}

/// Consecutive free slots of one page claimed for copies
/// ([`Pools::claim_run`]): `[next, end)` is what is left, `colour` the
/// colour byte of the slot at `next`.
///
/// Invariant: every slot in `[next, end)` is `FREE` and counted taken by
/// its page; the slots below `next` that the run started with were taken
/// through [`Run::take`] (coloured).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    next: usize,
    end: usize,
    colour: usize,
    slot_bytes: usize,
}

impl Run {
    /// A run of no slots (its first [`Run::take`] fails).
    pub const EMPTY: Run = Run {
        next: 0,
        end: 0,
        colour: 0,
        slot_bytes: 0,
    };

    /// The run's next slot, coloured `colour`; `None` when it is used up.
    #[inline(always)]
    pub fn take(&mut self, colour: u8) -> Option<usize> {
        if self.next >= self.end {
            return None;
        }
        let a = self.next;
        self.next += self.slot_bytes;
        // SAFETY: `colour` is the colour byte of the slot at `a` (the run
        // invariant: the two advance together), inside a pool page, which
        // stays mapped for the runtime's life (as in `Page::word`).
        unsafe { &*(self.colour as *const AtomicU8) }.store(colour, Ordering::Relaxed);
        self.colour += 1;
        Some(a)
    }

    /// Gives back the slot `a` that the last [`Run::take`] returned (a copy
    /// that lost the race to publish, §4.4.2).
    pub fn untake(&mut self, a: usize) {
        assert_eq!(a + self.slot_bytes, self.next, "not the run's last slot");
        self.next = a;
        self.colour -= 1;
        // SAFETY: as in `take`: the colour byte of the slot at `a`.
        unsafe { &*(self.colour as *const AtomicU8) }.store(FREE, Ordering::Relaxed);
    }

    /// The slots left.
    fn left(&self) -> usize {
        if self.next >= self.end {
            0
        } else {
            (self.end - self.next) / self.slot_bytes
        }
    }
}

/// Where a class's pages come from when its current one has no free slot
/// left ([`Pools::alloc`], [`Pools::claim_run`]).
#[derive(Clone, Copy)]
pub(crate) struct PageSource<'h> {
    /// The class's slot size, for a page laid out new.
    pub slot_bytes: usize,
    /// The colour of garbage, for a page swept.
    pub garbage: u8,
    pub heap: &'h GlobalHeap,
    /// The vproc that takes a new chunk, and its node.
    pub owner: usize,
    pub node: usize,
    /// A collector's request, past the heap limit (see `GlobalHeap`).
    pub force: bool,
}

/// The pages of one class.
#[derive(Default)]
pub(super) struct ClassPages {
    /// Pages with free slots; allocation takes from the last.
    pub avail: Vec<PageState>,
    /// Swept pages without free slots.
    pub full: Vec<PageState>,
    /// Pages not swept since the colours last rotated.
    pub unswept: Vec<PageState>,
}

/// What one vproc owns of the major heap's pools.
pub(crate) struct Pools {
    pub(super) page_bytes: usize,
    chunk_bytes: usize,
    pub(super) classes: Vec<ClassPages>,
    /// Pages with no object, ready for any class.
    pub(super) empty: Vec<Page>,
    /// Pages whose objects a compaction moved out, holding forwarding
    /// addresses until it has updated every pointer (`compact`).
    pub(super) evacuated: Vec<Page>,
    /// Pages of the newest chunk not handed out yet: `[fresh, fresh_end)`.
    fresh: usize,
    fresh_end: usize,
    /// The chunks these pages come from.
    chunks: Vec<usize>,
}

impl Pools {
    pub fn new(page_bytes: usize, chunk_bytes: usize, classes: usize) -> Pools {
        Pools {
            page_bytes,
            chunk_bytes,
            classes: (0..classes).map(|_| ClassPages::default()).collect(),
            empty: Vec::new(),
            evacuated: Vec::new(),
            fresh: 0,
            fresh_end: 0,
            chunks: Vec::new(),
        }
    }

    /// A slot of class `class` coloured `colour`: from the current page,
    /// else by sweeping a page of the class not swept yet (lazy sweeping,
    /// §3.3), else in a new page (`src`).
    #[inline(always)]
    pub fn alloc(
        &mut self,
        class: usize,
        colour: u8,
        src: PageSource<'_>,
    ) -> Result<usize, Refused> {
        self.take_from_current_page(class, src, |ps| ps.take(colour))
    }

    /// A run of free slots of class `class`, the first coloured by no one
    /// yet ([`Run`]): from the current page, else as [`Pools::alloc`]
    /// finds a page. Until [`Pools::return_run`] gives back what is left,
    /// the caller allocates this class only from the run.
    pub fn claim_run(&mut self, class: usize, src: PageSource<'_>) -> Result<Run, Refused> {
        self.take_from_current_page(class, src, PageState::claim_run)
    }

    /// `take` of class `class`'s current page, refilled until it answers.
    #[inline(always)]
    fn take_from_current_page<T>(
        &mut self,
        class: usize,
        src: PageSource<'_>,
        mut take: impl FnMut(&mut PageState) -> Option<T>,
    ) -> Result<T, Refused> {
        loop {
            // The fast path: the current page.
            if let Some(ps) = self.classes[class].avail.last_mut() {
                if let Some(x) = take(ps) {
                    return Ok(x);
                }
            }
            self.refill(class, src)?;
        }
    }

    /// Gives back the slots `run` (claimed for `class`, the last thing
    /// done to the class since) did not take: its page's cursor goes back
    /// to the first of them.
    pub fn return_run(&mut self, class: usize, run: Run) {
        let left = run.left();
        if left == 0 {
            return;
        }
        let ps = self.classes[class]
            .avail
            .last_mut()
            .expect("a run's page is its class's current page");
        debug_assert_eq!(Page::of(run.next, self.page_bytes), ps.page);
        let i = ps
            .page
            .index_of(run.next)
            .expect("a run's slots are slots of its page");
        debug_assert_eq!(i + left, ps.next as usize, "the run ends at the cursor");
        ps.next = i as u32;
        ps.nfree += left as u32;
    }

    /// Gives class `class` a current page with a free slot, or takes a
    /// step towards one: retires the exhausted current page, sweeps an
    /// unswept page of the class, or lays out a new page.
    #[inline(never)]
    fn refill(&mut self, class: usize, src: PageSource<'_>) -> Result<(), Refused> {
        let cp = &mut self.classes[class];
        if let Some(ps) = cp.avail.pop_if(|ps| ps.nfree == 0) {
            cp.full.push(ps);
            return Ok(());
        }
        if !cp.avail.is_empty() {
            return Ok(());
        }
        if let Some(mut ps) = cp.unswept.pop() {
            let live = ps.sweep(src.garbage, |_| {});
            self.file(ps, live);
            return Ok(());
        }
        let base = self.new_page(src.heap, src.owner, src.node, src.force)?;
        let page = Page::init(base, self.page_bytes, class, src.slot_bytes);
        self.classes[class].avail.push(PageState::fresh(page));
        Ok(())
    }

    /// Files a page after a sweep left `live` objects in it.
    pub(super) fn file(&mut self, ps: PageState, live: usize) {
        if live == 0 {
            self.empty.push(ps.page);
        } else if ps.nfree > 0 {
            self.classes[ps.page.class()].avail.push(ps);
        } else {
            self.classes[ps.page.class()].full.push(ps);
        }
    }

    fn new_page(
        &mut self,
        heap: &GlobalHeap,
        owner: usize,
        node: usize,
        force: bool,
    ) -> Result<usize, Refused> {
        if let Some(p) = self.empty.pop() {
            return Ok(p.base());
        }
        if self.fresh == self.fresh_end {
            let id = heap.acquire_chunk(node, force)?;
            let info = heap.space.info(id);
            info.owner.store(owner as u32, Ordering::Relaxed);
            info.set_kind(ChunkKind::Pool);
            self.chunks.push(id);
            self.fresh = heap.space.chunk_start(id);
            self.fresh_end = self.fresh + self.chunk_bytes;
            // Pages not handed out yet read as pages of no slots, so that
            // heap walks (the verifier) may visit every page of the chunk.
            for base in (self.fresh..self.fresh_end).step_by(self.page_bytes) {
                Page::init_unused(base);
            }
        }
        let p = self.fresh;
        self.fresh += self.page_bytes;
        Ok(p)
    }

    /// The colours rotated: every page must be swept again.
    pub fn begin_sweep(&mut self) {
        for cp in &mut self.classes {
            let ClassPages {
                avail,
                full,
                unswept,
            } = cp;
            debug_assert!(unswept.is_empty(), "sweeping finished before the rotation");
            unswept.append(avail);
            unswept.append(full);
        }
    }

    /// Sweeps unswept pages until about `budget` words of slots were
    /// looked at; returns the words looked at. Words, not slots: the
    /// pacing of `mark` counts marking in words, and a cycle's work is
    /// meant to be the live data marked plus the heap swept, in one unit
    /// (counted in slots, a heap of 3-word objects was a third of its
    /// size, and cycles ran about twice as often as `heap-growth` says).
    /// `on_free` sees each object freed.
    pub fn sweep_some(
        &mut self,
        garbage: u8,
        budget: usize,
        mut on_free: impl FnMut(usize),
    ) -> usize {
        let mut done = 0;
        for c in 0..self.classes.len() {
            while done < budget {
                let Some(mut ps) = self.classes[c].unswept.pop() else {
                    break;
                };
                done += ps.page.slots() * ps.page.slot_bytes() / 8;
                let live = ps.sweep(garbage, &mut on_free);
                self.file(ps, live);
            }
        }
        done
    }

    pub fn all_swept(&self) -> bool {
        self.classes.iter().all(|c| c.unswept.is_empty())
    }

    /// Returns to the heap every chunk all of whose pages are empty
    /// (after a full collection, `Gc.compact`'s "memory given back" when
    /// no object has to move).
    pub fn release_empty_chunks(&mut self, heap: &GlobalHeap) -> usize {
        let per_chunk = self.chunk_bytes / self.page_bytes;
        let mut empty_in = std::collections::HashMap::<usize, usize>::new();
        for p in &self.empty {
            *empty_in
                .entry(heap.space.chunk_of(p.base()).expect("a pool page"))
                .or_default() += 1;
        }
        let fresh_chunk = (self.fresh < self.fresh_end)
            .then(|| heap.space.chunk_of(self.fresh).expect("a pool chunk"));
        if let Some(c) = fresh_chunk {
            *empty_in.entry(c).or_default() += (self.fresh_end - self.fresh) / self.page_bytes;
        }
        let gone: Vec<usize> = empty_in
            .into_iter()
            .filter(|&(_, n)| n == per_chunk)
            .map(|(c, _)| c)
            .collect();
        if gone.is_empty() {
            return 0;
        }
        self.empty
            .retain(|p| !gone.contains(&heap.space.chunk_of(p.base()).expect("a pool page")));
        self.chunks.retain(|c| !gone.contains(c));
        if fresh_chunk.is_some_and(|c| gone.contains(&c)) {
            self.fresh = 0;
            self.fresh_end = 0;
        }
        for &c in &gone {
            heap.release_chunk(c);
        }
        gone.len()
    }

    /// Empties the pages a compaction evacuated (every slot `FREE`), once
    /// no pointer to them is left.
    pub(super) fn free_evacuated(&mut self) {
        for p in std::mem::take(&mut self.evacuated) {
            for i in 0..p.slots() {
                p.colour(i).store(FREE, Ordering::Relaxed);
            }
            self.empty.push(p);
        }
    }

    /// Gives the memory of every empty page back to the system (after a
    /// compaction): the page reads as zero, a page of no slots, until
    /// [`Pools::new_page`] lays it out again.
    pub(super) fn discard_empty_pages(&self, heap: &GlobalHeap) {
        for p in &self.empty {
            heap.space.discard(p.base(), self.page_bytes);
        }
    }

    /// Checks the owner's bookkeeping of each page against its colours:
    /// no `FREE` slot below the cursor, and as many `FREE` slots as
    /// counted (verifier).
    pub fn check_free_slots(&self) -> Result<(), String> {
        for cp in &self.classes {
            for ps in cp.avail.iter().chain(&cp.full) {
                let p = ps.page;
                let free = |i: usize| p.colour(i).load(Ordering::Relaxed) == FREE;
                let next = ps.next as usize;
                if let Some(i) = (0..next.min(p.slots())).find(|&i| free(i)) {
                    return Err(format!(
                        "page {:#x}: slot {i} is free, below the allocation cursor {next}",
                        p.base()
                    ));
                }
                let n = (0..p.slots()).filter(|&i| free(i)).count();
                if n != ps.nfree as usize {
                    return Err(format!(
                        "page {:#x}: {n} free slots, {} counted",
                        p.base(),
                        ps.nfree
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: usize = 64 << 10;
    const SLOT: usize = 24;

    /// A page laid out in memory of the test's own, aligned as pool pages
    /// are, filed as the current page of class 0 of `pools`, with the
    /// slots `live` coloured as objects (their contents are not read).
    fn page_with(pools: &mut Pools, live: &[usize]) -> (Page, std::alloc::Layout, *mut u8) {
        let layout = std::alloc::Layout::from_size_align(PAGE, PAGE).unwrap();
        // SAFETY: the layout has a non-zero size.
        let mem = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!mem.is_null());
        let page = Page::init(mem as usize, PAGE, 0, SLOT);
        for &i in live {
            page.colour(i).store(3, Ordering::Relaxed);
        }
        let mut ps = PageState::fresh(page);
        ps.nfree -= live.len() as u32;
        pools.classes[0].avail.push(ps);
        (page, layout, mem)
    }

    /// A run claimed from class 0's current page.
    fn claim(pools: &mut Pools) -> Option<Run> {
        pools.classes[0].avail.last_mut().unwrap().claim_run()
    }

    fn index(p: Page, a: usize) -> usize {
        p.index_of(a).expect("a slot of the page")
    }

    #[test]
    fn runs_take_the_free_slots_between_objects_and_give_back_what_they_did_not_take() {
        let mut pools = Pools::new(PAGE, 1 << 20, 1);
        let (p, layout, mem) = page_with(&mut pools, &[0, 1, 5]);
        let n = p.slots();
        let cursor = |pools: &Pools| {
            let ps = pools.classes[0].avail.last().unwrap();
            (ps.next as usize, ps.nfree as usize)
        };

        // The first run: the free slots 2, 3 and 4, up to the object in 5.
        let mut run = claim(&mut pools).unwrap();
        let a = run.take(7).unwrap();
        let b = run.take(7).unwrap();
        assert_eq!((index(p, a), index(p, b)), (2, 3));
        assert_eq!(p.colour(3).load(Ordering::Relaxed), 7);
        // A copy that lost its race gives its slot back.
        run.untake(b);
        assert_eq!(p.colour(3).load(Ordering::Relaxed), FREE);
        assert_eq!(
            cursor(&pools),
            (5, n - 3 - 3),
            "a claimed run counts as taken"
        );
        pools.return_run(0, run);
        assert_eq!(
            cursor(&pools),
            (3, n - 3 - 1),
            "slots 3 and 4 are free again"
        );
        pools.check_free_slots().unwrap();

        // Again from slot 3: to the object in slot 5, then (every slot
        // from the cursor on free) the rest of the page in one run.
        let mut run = claim(&mut pools).unwrap();
        assert_eq!(index(p, run.take(1).unwrap()), 3);
        assert_eq!(index(p, run.take(1).unwrap()), 4);
        assert_eq!(run.take(1), None, "the run ends at the object in slot 5");
        let mut run = claim(&mut pools).unwrap();
        assert_eq!(run.left(), n - 6);
        assert_eq!(index(p, run.take(1).unwrap()), 6);
        pools.return_run(0, run);
        assert_eq!(cursor(&pools), (7, n - 7));
        pools.check_free_slots().unwrap();

        // A run used up gives nothing back, and the page has no run left.
        let mut run = claim(&mut pools).unwrap();
        while run.take(1).is_some() {}
        pools.return_run(0, run);
        assert_eq!(cursor(&pools), (n, 0));
        assert!(claim(&mut pools).is_none());
        pools.check_free_slots().unwrap();
        // SAFETY: `mem` came from `alloc_zeroed` with `layout`; no page
        // state refers to it after this test.
        unsafe { std::alloc::dealloc(mem, layout) };
    }
}
