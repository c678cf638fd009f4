//! The packer's side table of visited objects (`super::pack`): object
//! address → packet index, by the page of heap the object lies in.
//!
//! Invariant: an object has a bit set exactly when it is in the packer's
//! list of met objects, and once [`AddressIndex`] keeps numbers, every
//! object with its bit set has its number (its place in that list) plus
//! one in its entry.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The hash of [`AddressIndex`]'s pages: page numbers are distinct words,
/// so one multiply by an odd constant, its high bits folded down, spreads
/// them (SipHash, the default, cost a large share of the packing time).
#[derive(Default)]
pub(super) struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, w: u64) {
        let h = (self.0 ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 32);
    }
}

/// Words of the heap one page of an [`AddressIndex`] covers.
const PAGE_WORDS: usize = 512;

/// What an [`AddressIndex`] keeps of one page of heap: a bit per word
/// (an object starts there and is met), and once the index has numbers,
/// the slot of the page's numbers in [`AddressIndex::numbers`].
struct Page {
    met: [u64; PAGE_WORDS / 64],
    numbers: u32,
}

/// [`Page::numbers`] of a page without numbers.
const NO_NUMBERS: u32 = u32::MAX;

/// Object address → packet index, the packer's side table, found by the
/// page of heap (`PAGE_WORDS` words) the object lies in.
///
/// Most graphs that travel are trees, where no object is met twice and
/// no index is ever asked for: the table then keeps one bit per heap word
/// (a cache line per 4 KiB page of heap) and the indices are only the
/// order of the packer's list of met objects. The first object met twice makes it number
/// every object met so far from that list and keep a `u32` per heap word
/// from then on (the index plus one, 0 when absent). A graph laid out in
/// order (as allocation and copying collections lay it out) walks its
/// pages in order, so the table's accesses stay in cache (a hash map of
/// one entry per object missed the cache on every access of a large
/// graph), and the page of the last look-up is kept at hand: most
/// objects lie in the page of the object met before them. Objects are
/// 8-byte aligned: an address's word number names its bit and entry.
pub(super) struct AddressIndex {
    slots: HashMap<u64, u32, BuildHasherDefault<AddressHasher>>,
    pages: Vec<Page>,
    numbers: Vec<[u32; PAGE_WORDS]>,
    /// Whether every met object has its number in `numbers`.
    numbered: bool,
    /// The page number and slot of the last look-up (`u64::MAX`: none;
    /// page numbers are below 2^61).
    last: (u64, u32),
}

impl AddressIndex {
    pub(super) fn new() -> AddressIndex {
        AddressIndex {
            slots: HashMap::default(),
            pages: Vec::new(),
            numbers: Vec::new(),
            numbered: false,
            last: (u64::MAX, 0),
        }
    }

    #[inline(always)]
    fn split(addr: u64) -> (u64, usize) {
        let word = addr >> 3;
        (
            word / PAGE_WORDS as u64,
            (word % PAGE_WORDS as u64) as usize,
        )
    }

    /// The slot of page `page`, made if new, when it is not the last
    /// page looked up.
    #[cold]
    #[inline(never)]
    fn slot_of(&mut self, page: u64) -> u32 {
        let next = self.pages.len() as u32;
        let slot = *self.slots.entry(page).or_insert(next);
        if slot == next {
            self.pages.push(Page {
                met: [0; PAGE_WORDS / 64],
                numbers: NO_NUMBERS,
            });
        }
        self.last = (page, slot);
        slot
    }

    #[inline(always)]
    fn slot(&mut self, page: u64) -> u32 {
        if self.last.0 == page {
            self.last.1
        } else {
            self.slot_of(page)
        }
    }

    /// The numbers of the page in `slot`, made if it has none.
    #[inline]
    fn numbers_of(&mut self, slot: u32) -> &mut [u32; PAGE_WORDS] {
        let page = &mut self.pages[slot as usize];
        if page.numbers == NO_NUMBERS {
            page.numbers = self.numbers.len() as u32;
            self.numbers.push([0; PAGE_WORDS]);
        }
        &mut self.numbers[page.numbers as usize]
    }

    /// The index of the object at `addr`, or `None` when it had none: it
    /// has `next` now. `met` lists the objects met so far by index;
    /// `next` is below `u32::MAX` (a packet has fewer objects than words,
    /// and at most `MAX_ANSWER_WORDS`).
    #[inline(always)]
    pub(super) fn index_or(&mut self, addr: u64, next: u64, met: &[u64]) -> Option<u64> {
        let (page, at) = Self::split(addr);
        let slot = self.slot(page);
        let bits = &mut self.pages[slot as usize].met[at / 64];
        let bit = 1u64 << (at % 64);
        if *bits & bit == 0 {
            *bits |= bit;
            if self.numbered {
                self.numbers_of(slot)[at] = next as u32 + 1;
            }
            return None;
        }
        if !self.numbered {
            self.number(met);
        }
        Some(u64::from(self.numbers_of(slot)[at] - 1))
    }

    /// Numbers every object of `met`, at the first object met twice.
    #[cold]
    #[inline(never)]
    fn number(&mut self, met: &[u64]) {
        self.numbered = true;
        for (k, &addr) in met.iter().enumerate() {
            let (page, at) = Self::split(addr);
            let slot = self.slot(page);
            self.numbers_of(slot)[at] = k as u32 + 1;
        }
    }
}
