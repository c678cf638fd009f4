//! The address space of the heap and its chunk table (§3.1).
//!
//! At start-up the runtime reserves one large virtual range with `mmap`
//! (`MAP_NORESERVE`: nothing is committed until touched) and carves every
//! chunk of the global heap, every large-object run and every local heap out
//! of it. Because the range is contiguous and chunk-aligned, the chunk that
//! holds any address is `(addr - base) >> chunk_shift`, and the table of
//! [`ChunkInfo`] answers "which space is this pointer in?" with one load —
//! the question every collector asks of every pointer it meets.
//!
//! New memory is carved under one global lock (the paper's "global
//! synchronisation when a new chunk is requested from the system"); freed
//! runs are coalesced and given back to the system with `MADV_DONTNEED`.
//!
//! Failures: the reservation's `mmap` and the carving of a run are the two
//! places where the system can refuse memory (a run fails when the
//! reservation is exhausted). Both are [`crate::fault`] injection points, and
//! both return a [`MapFailure`] naming the bytes and the errno, which the
//! callers turn into [`crate::ErrorKind::MapFailed`] for whoever asked.
//!
//! Invariant: a chunk's `kind` changes only while its owner holds it
//! exclusively (allocation, release) or inside a global collection when all
//! vprocs are stopped; readers on other threads only ever see chunks that
//! were published to them through a lock or the collection's barriers.

use crate::fault::{Hook, Point};
use crate::sync::{lock, Mutex};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU8, AtomicUsize, Ordering};

/// What a chunk is used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum ChunkKind {
    Free = 0,
    /// A global-heap chunk objects are bump-allocated into.
    Global = 1,
    /// A global chunk being evacuated by the current global collection.
    FromSpace = 2,
    /// First chunk of a large object.
    LargeHead = 3,
    /// A following chunk of a large object.
    LargeTail = 4,
    /// Part of a vproc's local heap (split plan) or minor heap (shared plan).
    Local = 5,
    /// A chunk of size-class pages of the shared plan's major heap
    /// (`plan::shared_heap::pages`).
    Pool = 6,
}

impl ChunkKind {
    fn from_u8(v: u8) -> ChunkKind {
        match v {
            1 => ChunkKind::Global,
            2 => ChunkKind::FromSpace,
            3 => ChunkKind::LargeHead,
            4 => ChunkKind::LargeTail,
            5 => ChunkKind::Local,
            6 => ChunkKind::Pool,
            _ => ChunkKind::Free,
        }
    }
}

/// Metadata of one chunk. All-zero bytes are a valid `ChunkInfo` (every
/// field is an atomic integer or flag, zero meaning `Free`, node 0, ...):
/// the table lives in zero-filled pages (see [`ChunkTable`]).
#[derive(Default)]
pub(crate) struct ChunkInfo {
    kind: AtomicU8,
    /// Topology node the chunk is bound to.
    pub node: AtomicU32,
    /// Owning vproc of a local chunk; run length (chunks) of a large head.
    pub owner: AtomicU32,
    /// End of the allocated objects of a global chunk, published when the
    /// chunk is retired or a global collection starts.
    pub top: AtomicUsize,
    /// Mark bit of a large object during a global collection.
    pub mark: AtomicBool,
    /// Age of a global chunk: 0 = filled since the last global collection,
    /// 1 = survivors of one young collection, 2 = tenured (see `plan::split::global`).
    pub age: AtomicU8,
}

impl ChunkInfo {
    #[inline(always)]
    pub fn kind(&self) -> ChunkKind {
        ChunkKind::from_u8(self.kind.load(Ordering::Acquire))
    }
    pub fn set_kind(&self, k: ChunkKind) {
        self.kind.store(k as u8, Ordering::Release)
    }
}

/// The system refused `bytes` of memory with `errno`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MapFailure {
    pub bytes: usize,
    pub errno: i32,
}

impl MapFailure {
    /// The error for the mutator, naming what the memory was for.
    pub fn error(self, what: &'static str) -> crate::Error {
        crate::Error::from(crate::ErrorKind::MapFailed {
            bytes: self.bytes,
            what,
            errno: self.errno,
        })
    }
}

struct Runs {
    /// Next never-used chunk.
    bump: usize,
    /// Free runs: start chunk -> length in chunks (coalesced).
    free: BTreeMap<usize, usize>,
}

/// The chunk table: one [`ChunkInfo`] per chunk of the reservation, in an
/// anonymous mapping of its own. The kernel hands out its pages zero-filled
/// and only when first touched, so the table costs memory in proportion to
/// the chunks in use, not to the reservation: a heap limit of 16 TiB with
/// 64 KiB chunks reserves 48 TiB of address space, whose table of 800
/// million entries used to be built eagerly (19 GB, found by fuzzing).
struct ChunkTable {
    ptr: std::ptr::NonNull<ChunkInfo>,
    len: usize,
    bytes: usize,
}

// SAFETY: the table owns its mapping exclusively, like a `Box<[ChunkInfo]>`;
// `ChunkInfo` is all atomics, so shared access from any thread is sound.
unsafe impl Send for ChunkTable {}
// SAFETY: as for `Send`.
unsafe impl Sync for ChunkTable {}

/// Maps `bytes` of zero-filled, readable and writable anonymous memory,
/// reserved but not committed (`MAP_NORESERVE`: pages take memory when first
/// touched); returns its address.
pub(crate) fn map_reserved(bytes: usize) -> Result<usize, MapFailure> {
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing aliases nothing; the result is checked below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        let errno = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::ENOMEM);
        return Err(MapFailure { bytes, errno });
    }
    Ok(p as usize)
}

impl ChunkTable {
    fn new(len: usize) -> Result<ChunkTable, MapFailure> {
        let too_big = || MapFailure {
            bytes: usize::MAX,
            errno: libc::ENOMEM,
        };
        let bytes = len
            .checked_mul(std::mem::size_of::<ChunkInfo>())
            .ok_or_else(too_big)?
            .max(1);
        let p = map_reserved(bytes)?;
        let ptr = std::ptr::NonNull::new(p as *mut ChunkInfo).ok_or_else(too_big)?;
        Ok(ChunkTable { ptr, len, bytes })
    }
}

impl std::ops::Deref for ChunkTable {
    type Target = [ChunkInfo];
    fn deref(&self) -> &[ChunkInfo] {
        // SAFETY: the mapping holds `len` entries, is page-aligned (so
        // aligned for `ChunkInfo`), zero-filled (a valid `ChunkInfo`, see
        // its docs) and lives until `drop`; entries are only ever accessed
        // through their atomics, never through `&mut`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for ChunkTable {
    fn drop(&mut self) {
        // SAFETY: the mapping was created in `new` with this length, and no
        // reference into it outlives the table (`Deref` borrows it).
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.bytes);
        }
    }
}

/// What the address arithmetic of an [`AddressSpace`] needs, in a value of
/// its own: the base, the chunk size and the chunk table, none of which
/// changes while the space lives. A collector's scan loop keeps it in
/// registers (`AddressSpace::index`), where reading it through the space
/// was reloaded after every store into the heap (the compiler cannot tell
/// such a store from a write to the space).
#[derive(Clone, Copy)]
pub(crate) struct ChunkIndex<'a> {
    base: usize,
    shift: u32,
    chunks: &'a [ChunkInfo],
}

impl<'a> ChunkIndex<'a> {
    /// The chunk holding `addr`, if it is inside the reservation
    /// ([`AddressSpace::chunk_of`] and [`AddressSpace::info`] in one).
    #[inline(always)]
    pub fn info_of(self, addr: usize) -> Option<&'a ChunkInfo> {
        self.chunks.get(addr.wrapping_sub(self.base) >> self.shift)
    }
}

/// The reserved range and its chunk table.
pub(crate) struct AddressSpace {
    base: usize,
    mapping: usize,
    mapping_len: usize,
    chunk_shift: u32,
    chunks: ChunkTable,
    runs: Mutex<Runs>,
    faults: Hook,
}

impl AddressSpace {
    /// Reserves `bytes` (rounded up to chunks) of address space.
    pub fn reserve(
        bytes: usize,
        chunk_size: usize,
        faults: Hook,
    ) -> Result<AddressSpace, MapFailure> {
        assert!(chunk_size.is_power_of_two());
        let n = bytes.div_ceil(chunk_size).max(1);
        let mapping_len = (n + 1) * chunk_size;
        if faults.fails(Point::Reserve) {
            return Err(MapFailure {
                bytes: mapping_len,
                errno: libc::ENOMEM,
            });
        }
        let chunks = ChunkTable::new(n)?;
        let mapping = map_reserved(mapping_len)?;
        let base = (mapping + chunk_size - 1) & !(chunk_size - 1);
        Ok(AddressSpace {
            base,
            mapping,
            mapping_len,
            chunk_shift: chunk_size.trailing_zeros(),
            chunks,
            runs: Mutex::new(Runs {
                bump: 0,
                free: BTreeMap::new(),
            }),
            faults,
        })
    }

    #[inline(always)]
    pub fn chunk_size(&self) -> usize {
        1 << self.chunk_shift
    }

    #[inline(always)]
    pub fn chunk_start(&self, id: usize) -> usize {
        self.base + (id << self.chunk_shift)
    }

    /// Number of chunks the reservation holds (ids are below it).
    pub fn num_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// The space's address arithmetic as a value (see [`ChunkIndex`]).
    #[inline(always)]
    pub fn index(&self) -> ChunkIndex<'_> {
        ChunkIndex {
            base: self.base,
            shift: self.chunk_shift,
            chunks: &self.chunks,
        }
    }

    /// The chunk holding `addr`, if it is inside the reservation.
    #[inline(always)]
    pub fn chunk_of(&self, addr: usize) -> Option<usize> {
        let off = addr.wrapping_sub(self.base);
        let id = off >> self.chunk_shift;
        (id < self.chunks.len()).then_some(id)
    }

    #[inline(always)]
    pub fn info(&self, id: usize) -> &ChunkInfo {
        &self.chunks[id]
    }

    /// The kind of the chunk holding `addr` (`Free` outside the reservation).
    #[inline(always)]
    pub fn kind_of(&self, addr: usize) -> ChunkKind {
        match self.chunk_of(addr) {
            Some(id) => self.chunks[id].kind(),
            None => ChunkKind::Free,
        }
    }

    /// Takes `n` contiguous chunks: first fit among freed runs, else new
    /// address space. Fails (`ENOMEM`) when the reservation is exhausted, or
    /// when a failure is injected.
    pub fn carve(&self, n: usize) -> Result<usize, MapFailure> {
        let refused = MapFailure {
            bytes: n << self.chunk_shift,
            errno: libc::ENOMEM,
        };
        if self.faults.fails(Point::MapChunks) {
            return Err(refused);
        }
        let mut runs = lock(&self.runs);
        let fit = runs
            .free
            .iter()
            .find(|&(_, &len)| len >= n)
            .map(|(&s, &l)| (s, l));
        if let Some((start, len)) = fit {
            runs.free.remove(&start);
            if len > n {
                runs.free.insert(start + n, len - n);
            }
            return Ok(start);
        }
        if runs.bump + n > self.chunks.len() {
            return Err(refused);
        }
        let start = runs.bump;
        runs.bump += n;
        Ok(start)
    }

    /// Gives the memory of `[addr, addr + len)` back to the system; it
    /// reads as zero afterwards. `addr` and `len` are multiples of the
    /// system page size inside the mapping, and the caller owns the range
    /// exclusively (no object in it is reachable).
    pub fn discard(&self, addr: usize, len: usize) {
        debug_assert!(addr.is_multiple_of(4096) && len.is_multiple_of(4096));
        debug_assert!(self.chunk_of(addr).is_some() && self.chunk_of(addr + len - 1).is_some());
        // SAFETY: the range lies inside our private anonymous mapping and
        // nothing reachable lives in it (caller); MADV_DONTNEED only drops
        // its pages, which read as zero when touched again.
        unsafe {
            libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED);
        }
    }

    /// Asks the system to commit the pages of `[addr, addr + len)` now,
    /// in one call (`MADV_POPULATE_WRITE`, Linux 5.14), rather than one
    /// fault at a time as they are first written: for memory the caller is
    /// about to write whole (a new large object, `GlobalHeap::alloc_large`).
    /// Where the system lacks it, or refuses, the pages fault in as before
    /// (the memory is the same either way). The range lies inside the
    /// mapping; `addr` and `len` need not be page-aligned.
    pub fn populate(&self, addr: usize, len: usize) {
        debug_assert!(self.chunk_of(addr).is_some() && self.chunk_of(addr + len - 1).is_some());
        let start = addr & !4095;
        let end = (addr + len).next_multiple_of(4096);
        // SAFETY: the range lies inside our private anonymous mapping
        // (caller, rounded out to its pages, which are inside too: the
        // mapping is chunk-aligned); MADV_POPULATE_WRITE only faults its
        // pages in, writable, changing no byte of them.
        unsafe {
            libc::madvise(
                start as *mut libc::c_void,
                end - start,
                libc::MADV_POPULATE_WRITE,
            );
        }
    }

    /// Gives `n` chunks starting at `start` back: their pages are released
    /// to the system and the run joins the free runs.
    pub fn release(&self, start: usize, n: usize) {
        for id in start..start + n {
            self.chunks[id].set_kind(ChunkKind::Free);
        }
        // SAFETY: the run lies inside our mapping and the caller owns it
        // exclusively (nothing points into it any more); MADV_DONTNEED on a
        // private anonymous mapping just drops the pages.
        unsafe {
            libc::madvise(
                self.chunk_start(start) as *mut libc::c_void,
                n << self.chunk_shift,
                libc::MADV_DONTNEED,
            );
        }
        let mut runs = lock(&self.runs);
        let (mut s, mut len) = (start, n);
        if let Some((&ps, &pl)) = runs.free.range(..s).next_back() {
            if ps + pl == s {
                runs.free.remove(&ps);
                s = ps;
                len += pl;
            }
        }
        if let Some(&nl) = runs.free.get(&(start + n)) {
            runs.free.remove(&(start + n));
            len += nl;
        }
        runs.free.insert(s, len);
    }
}

impl Drop for AddressSpace {
    fn drop(&mut self) {
        // SAFETY: the mapping was created in `reserve` with this length and
        // the runtime that owns this space no longer runs any vproc.
        unsafe {
            libc::munmap(self.mapping as *mut libc::c_void, self.mapping_len);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn carve_release_coalesce() {
        let s = AddressSpace::reserve(16 << 16, 1 << 16, Hook::default()).unwrap();
        assert_eq!(s.chunk_start(0) % (1 << 16), 0);
        let a = s.carve(4).unwrap();
        let b = s.carve(4).unwrap();
        let c = s.carve(4).unwrap();
        assert_eq!((a, b, c), (0, 4, 8));
        s.release(a, 4);
        s.release(b, 4);
        // a and b coalesced into one run of 8
        assert_eq!(s.carve(8), Ok(0));
        assert_eq!(
            s.carve(8),
            Err(MapFailure {
                bytes: 8 << 16,
                errno: libc::ENOMEM
            }),
            "only 4 chunks left after c"
        );
        assert_eq!(s.carve(4), Ok(12));
        assert_eq!(s.chunk_of(s.chunk_start(3) + 100), Some(3));
        assert_eq!(s.chunk_of(0), None);
        // memory is usable
        let p = s.chunk_start(12) as *mut u64;
        // SAFETY: chunk 12 was carved above and lies in the live mapping.
        unsafe { p.write(7) };
        // SAFETY: as above; the word was just written.
        assert_eq!(unsafe { p.read() }, 7);
    }

    /// The table starts as all `ChunkInfo::default()`, from zero pages.
    #[test]
    fn a_fresh_table_reads_as_defaults() {
        let s = AddressSpace::reserve(64 << 16, 1 << 16, Hook::default()).unwrap();
        for id in [0, 1, 63] {
            let i = s.info(id);
            assert_eq!(i.kind(), ChunkKind::Free);
            let d = ChunkInfo::default();
            assert_eq!(
                i.node.load(Ordering::Relaxed),
                d.node.load(Ordering::Relaxed)
            );
            assert_eq!(
                i.owner.load(Ordering::Relaxed),
                d.owner.load(Ordering::Relaxed)
            );
            assert_eq!(i.top.load(Ordering::Relaxed), d.top.load(Ordering::Relaxed));
            assert_eq!(
                i.mark.load(Ordering::Relaxed),
                d.mark.load(Ordering::Relaxed)
            );
            assert_eq!(i.age.load(Ordering::Relaxed), d.age.load(Ordering::Relaxed));
        }
        s.info(63).set_kind(ChunkKind::Local);
        assert_eq!(s.kind_of(s.chunk_start(63)), ChunkKind::Local);
    }

    /// Found by fuzzing (`fuzz/`, target `capi`): `max-heap=16T` with
    /// `chunk-size=64K` is a valid configuration; its runtime reserves
    /// 48 TiB of address space, and the chunk table for it (800 million
    /// entries) was built eagerly: 19 GB and 47 s, or the OOM killer. The
    /// table is now committed only where touched.
    #[test]
    fn a_huge_reservation_costs_no_memory_up_front() {
        let rss = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        };
        let before = rss();
        let t = std::time::Instant::now();
        let Ok(s) = AddressSpace::reserve(48 << 40, 1 << 16, Hook::default()) else {
            return; // a kernel that refuses 48 TiB of address space: nothing to check
        };
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "reserving took {:?}",
            t.elapsed()
        );
        assert_eq!(s.carve(2), Ok(0));
        assert_eq!(s.info((48 << 24) - 1).kind(), ChunkKind::Free);
        if let (Some(a), Some(b)) = (before, rss()) {
            assert!(
                b.saturating_sub(a) < 64 << 10,
                "the reservation made the process grow by {} kB",
                b - a
            );
        }
    }
}

/// Asks the C allocator to give the free memory it holds back to the
/// system (a compaction: the collectors' stacks, freed, may be held in a
/// thread's arena otherwise). glibc only; elsewhere a no-op.
pub(crate) fn trim_malloc() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases free memory of the allocator's
    // arenas; it takes the arenas' locks itself and touches no live block.
    unsafe {
        libc::malloc_trim(0);
    }
}
